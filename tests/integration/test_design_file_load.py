"""The design's campaign file in the database: location, located_at, symmetric alliances, and the place migration."""

from __future__ import annotations

import pytest

from campaigns.files import dump_campaign_file, parse_campaign_file
from campaigns.load import apply_campaign_file, export_campaign_file
from memory import db
from memory.db import EmbeddingSpec, create_pool, migrate, migration_files
from memory.models import EntityIn, EntityType
from memory.store import CampaignMemory
from tests.unit.test_design_file import DESIGN_FILE


async def test_the_design_file_loads_and_exports_unchanged(campaign: CampaignMemory) -> None:
    report = await apply_campaign_file(campaign, parse_campaign_file(DESIGN_FILE, "design.yaml"))
    assert (report.entities_created, report.relationships_created) == (2, 1)
    ironhold = await campaign.graph.get_entity("Ironhold")
    assert ironhold.type is EntityType.location
    exported = await export_campaign_file(campaign)
    text = dump_campaign_file(exported)
    assert "type: location" in text and "type: located_at" in text
    # loaded back, nothing changes: the export is the canonical form of what was loaded
    again = await apply_campaign_file(campaign, parse_campaign_file(text, "export.yaml"))
    assert not again.changed
    assert parse_campaign_file(text, "export.yaml") == exported


async def test_located_at_moves_rather_than_piles_up(campaign: CampaignMemory) -> None:
    await apply_campaign_file(campaign, parse_campaign_file(DESIGN_FILE, "design.yaml"))
    moved = DESIGN_FILE.replace("relationships:", "  - {name: Saltmere, type: place}\nrelationships:")
    moved = moved.replace("target: Ironhold, type: LOCATED_AT", "target: Saltmere, type: located_at")
    report = await apply_campaign_file(campaign, parse_campaign_file(moved, "moved.yaml"))
    assert any("located_at: Ironhold → Saltmere" in c.change for c in report.changes)
    eldrinax = await campaign.graph.get_entity("Eldrinax")
    current = [r.describe() for r in await campaign.graph.relationships_of(eldrinax.id)]
    assert current == ["Eldrinax —located_at→ Saltmere"]


async def test_an_alliance_is_one_fact_shown_from_either_end(campaign: CampaignMemory) -> None:
    both = DESIGN_FILE + (
        "  - {source: Eldrinax, target: Ironhold, type: ALLIED_WITH}\n"
        "  - {source: Ironhold, target: Eldrinax, type: allied_with}\n"
    )
    report = await apply_campaign_file(campaign, parse_campaign_file(both, "both.yaml"))
    assert report.relationships_created == 2  # located_at and one alliance
    rows = await campaign.db.fetch(
        "SELECT type FROM relationships WHERE campaign_id = $1 AND type = 'allied_with'", campaign.campaign_id
    )
    assert len(rows) == 1
    card = await campaign.graph.snapshot("Ironhold")
    facts, _ = card.facts_and_sessions()
    assert "Ironhold —allied_with→ Eldrinax" in [r.describe() for r in facts]
    assert "Eldrinax —located_at→ Ironhold" in [r.describe() for r in facts]  # one-way: as stated
    other = await campaign.graph.snapshot("Eldrinax")
    assert "Eldrinax —allied_with→ Ironhold" in [r.describe() for r in other.facts_and_sessions()[0]]
    # exported once, and unlinked from the end it was not stated from
    exported = await export_campaign_file(campaign)
    assert [r.type for r in exported.relationships].count("allied_with") == 1
    removed = await campaign.graph.unlink("Ironhold", "allied with", "Eldrinax")
    assert len(removed.removed) == 1


async def test_stored_places_become_locations(empty_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    before = [m for m in migration_files() if m[0] < 15]
    monkeypatch.setattr(db, "migration_files", lambda: before)
    pool = await create_pool(empty_dsn)
    try:
        spec = EmbeddingSpec("all-MiniLM-L6-v2", 384)
        await migrate(pool, spec)
        campaign = await pool.fetchval("INSERT INTO campaigns (name) VALUES ('Old') RETURNING id")
        await pool.execute(
            "INSERT INTO entities (campaign_id, name, type) VALUES ($1, 'Ironhold', 'place'), ($1, 'Mira', 'npc')",
            campaign,
        )
        monkeypatch.undo()
        applied = await migrate(pool, spec)
        assert [name for name in applied if name.startswith("0015")] == ["0015_location_and_imports.sql"]
        rows = await pool.fetch("SELECT name, type FROM entities ORDER BY name")
        assert [tuple(r) for r in rows] == [("Ironhold", "location"), ("Mira", "npc")]
        with pytest.raises(Exception, match="entities_type_check"):
            await pool.execute("INSERT INTO entities (campaign_id, name, type) VALUES ($1, 'X', 'place')", campaign)
        mem = CampaignMemory(pool, campaign)
        assert (await mem.graph.add_entity(EntityIn(name="Saltmere", type="place"))).type is EntityType.location
    finally:
        await pool.close()
