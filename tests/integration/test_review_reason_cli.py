"""`lorekeeper review list` says why a sure extracted fact waits: its lines do not say it."""

from __future__ import annotations

import json

from memory.db import create_pool
from memory.models import EntityIn, EntityType, Provenance, RelationshipIn, Source
from memory.store import Memory


async def test_review_list_says_why_a_sure_fact_waits(lk, fresh_dsn: str) -> None:
    assert lk("campaign", "create", "Main").returncode == 0
    assert "waits because" not in lk("review", "list").stdout  # nothing waits: no such column
    pool = await create_pool(fresh_dsn, max_size=2)
    try:
        memory = Memory(pool)
        [campaign] = await memory.campaigns().list()
        graph = memory.campaign(campaign.id).graph
        taliesin = await graph.add_entity(EntityIn(name="Taliesin", type=EntityType.player))
        sarenrae = await graph.add_entity(EntityIn(name="Sarenrae", type=EntityType.npc))
        why = "the cited line does not name Taliesin or Sarenrae"
        sure = Provenance(source=Source.stated, confidence=0.99, review_reason=why)
        await graph.add_relationship(
            RelationshipIn(
                source_id=taliesin.id, type="killed_by", target_id=sarenrae.id, provenance=sure, status="pending"
            )
        )
    finally:
        await pool.close()
    listed = lk("review", "list")
    assert listed.returncode == 0, listed.stderr
    header, _, *rows = listed.stdout.splitlines()
    assert header.split()[-2:] == ["waits", "because"]
    # the last column, wrapped between words over the row's lines as the others are
    at = header.index("waits because")
    assert " ".join(line[at:].strip() for line in rows if line[at:].strip()) == why
    [item] = json.loads(lk("review", "list", "--json").stdout)
    assert item["fact"]["provenance"]["review_reason"] == why
