"""Imports into a campaign: one batch waiting for review, matched by name and alias, accepted or rejected whole."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import asyncpg
import pytest

from campaigns import batches
from campaigns.files import parse_campaign_file
from campaigns.imports import read_import
from campaigns.load import LoadReport, apply_campaign_file
from campaigns.schema import CampaignFile
from memory.errors import AlreadyDecidedError, AlreadyExistsError
from memory.mcp_tools import CampaignTools
from memory.models import EntityIn, EntityType, Provenance, Relationship, RelationshipIn, Source, Visibility
from memory.store import CampaignMemory, Memory
from tests.integration.foundry_v11 import leveldb, v11_world

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "imports"
WORLD = [FIXTURES / "foundry_world" / n for n in ("actors.db", "folders.db", "journal.db", "scenes.db", "world.json")]


def files(paths: list[Path]) -> list[tuple[str, bytes]]:
    return [(p.name, p.read_bytes()) for p in paths]


async def count(mem: CampaignMemory, table: str) -> int:
    return await mem.db.fetchval(f"SELECT count(*) FROM {table} WHERE campaign_id = $1", mem.campaign_id)


async def test_an_import_waits_as_one_batch_then_is_accepted_whole(campaign: CampaignMemory) -> None:
    batch = await batches.stage(campaign, read_import(files(WORLD)))
    assert batch.status == "pending" and batch.ref == "b" + str(batch.id)
    assert (await count(campaign, "entities"), await count(campaign, "relationships")) == (0, 0)  # nothing yet
    card = batch.card()
    assert card.startswith(f"Import {batch.ref} (foundry: actors.db, journal.db, scenes.db)")  # what gave something
    assert "7 entities (7 new, 0 updated), 1 fact, 1 of them DM-only" in card
    assert "- Captain Ilse (player): Our fearless captain." in card
    assert [b.id for b in await batches.pending(campaign)] == [batch.id]

    accepted, report = await batches.accept(campaign, batch.ref)
    assert accepted.status == "accepted" and accepted.decided_at is not None
    assert (report.entities_created, report.relationships_created) == (7, 1)
    confession = await campaign.graph.get_entity("Hale's Confession")
    assert confession.visibility == Visibility.secret and confession.type is EntityType.concept
    pact = await campaign.graph.get_entity("The Pact of Tides")
    [notes] = await campaign.graph.relationships_of(pact.id, include_secret=True)
    assert notes.type == "dm_notes_journal" and notes.visibility == Visibility.secret  # the journal's GM notes
    assert await campaign.graph.relationships_of(pact.id) == []  # players never read the GM's page
    assert await batches.pending(campaign) == []
    with pytest.raises(AlreadyDecidedError, match=f"{batch.ref} was already accepted: the import of ") as decided:
        await batches.accept(campaign, batch.ref)
    # its card's button says it in words, as an item's does
    assert decided.value.in_words() == f"Already accepted: the import of {', '.join(batch.sources)}."


async def test_a_name_or_alias_the_campaign_has_is_an_update_not_a_duplicate(campaign: CampaignMemory) -> None:
    await campaign.add_entity(
        EntityIn(
            name="Eldrinax",
            type=EntityType.npc,
            aliases=["The Ember Wyrm"],
            description="Old words.",
            attributes={"age": 900},
            visibility=Visibility.secret,
        )
    )
    csv = (
        b"name,type,aliases,description,lair\n"
        b"the ember wyrm,location,Old Red,A red dragon,Ashen Peak\nIronhold,place,,,\n"
    )
    batch = await batches.stage(campaign, read_import([("world.csv", csv)]))
    assert batch.updates == ["Eldrinax"]
    assert "2 entities (1 new, 1 updated)" in batch.card()
    await batches.accept(campaign, batch.ref)
    assert await count(campaign, "entities") == 2
    eldrinax = await campaign.graph.get_entity("Eldrinax")
    assert eldrinax.description == "A red dragon"  # the import's word
    assert sorted(eldrinax.aliases) == ["Old Red", "The Ember Wyrm"]  # added to, not replaced
    assert eldrinax.attributes == {"age": 900, "lair": "Ashen Peak"}
    assert eldrinax.type is EntityType.npc and eldrinax.visibility == Visibility.secret  # as the DM set them
    assert (await campaign.graph.get_entity("Ironhold")).type is EntityType.location


async def test_two_records_naming_one_entity_update_it_once(campaign: CampaignMemory) -> None:
    """A Roll20 character "Pike Trickfoot" and a handout "Pike" (the campaign's alias of her) both update her: one
    entry, not two the load refuses as one name twice; the card says whom the alias updates."""
    await campaign.add_entity(EntityIn(name="Pike Trickfoot", type=EntityType.player, aliases=["Pike"]))
    csv = b"name,type,aliases,description,deity\nPike,npc,Pikey,A gnome cleric,Sarenrae\nPike Trickfoot,npc,,,\n"
    batch = await batches.stage(campaign, read_import([("party.csv", csv)]))
    assert batch.updates == ["Pike Trickfoot"]
    card = batch.card()
    assert "1 entity (0 new, 1 updated)" in card and "- Pike (player) (updates Pike Trickfoot): A gnome cleric" in card
    await batches.accept(campaign, batch.ref)
    pike = await campaign.graph.get_entity("Pike Trickfoot")
    assert await count(campaign, "entities") == 1 and pike.type is EntityType.player
    assert (pike.description, sorted(pike.aliases), pike.attributes) == (
        "A gnome cleric",
        ["Pike", "Pikey"],
        {"deity": "Sarenrae"},
    )


async def test_a_scene_and_its_lore_journal_are_a_location_whatever_the_file_order(campaign: CampaignMemory) -> None:
    """A scene and a journal entry of one name (a place and its lore page) make one entity: the scene's type wins
    over the journal's concept, read first or last, and the journal's text is its description."""
    scene = {"_id": "s1", "name": "Port Venmark", "navName": "The Harbour", "ownership": {"default": 0}}
    page = {"_id": "p1", "name": "Overview", "type": "text", "text": {"content": "<p>A salt-trading city.</p>"}}
    journal = {"_id": "j1", "name": "Port Venmark", "pages": [page], "ownership": {"default": 2}}
    scenes = ("scenes.db", json.dumps(scene).encode() + b"\n")
    journals = ("journal.db", json.dumps(journal).encode() + b"\n")
    for order in ([journals, scenes], [scenes, journals]):
        world = read_import(order)
        [entry] = world.entities
        assert (entry.type, entry.description) == (EntityType.location, "A salt-trading city."), order
    batch = await batches.stage(campaign, read_import([journals, scenes]))
    assert "- Port Venmark (location): A salt-trading city." in batch.card()
    await batches.accept(campaign, batch.ref)
    venmark = await campaign.graph.get_entity("Port Venmark")
    assert (venmark.type, venmark.aliases) == (EntityType.location, ["The Harbour"])


async def test_a_secret_record_never_makes_a_public_entity_say_its_text(campaign: CampaignMemory) -> None:
    """A GM-only journal named like a public NPC updates the NPC: its text becomes the NPC's secret GM notes, not
    the description players read."""
    await campaign.add_entity(EntityIn(name="Brother Hale", type=EntityType.npc, description="A monk of the tide."))
    page = {"_id": "p1", "name": "Hale", "type": "text", "text": {"content": "<p>He serves the lich.</p>"}}
    journal = {"_id": "j1", "name": "Brother Hale", "pages": [page], "ownership": {"default": 0}}
    batch = await batches.stage(campaign, read_import([("hale.json", json.dumps(journal).encode())]))
    await batches.accept(campaign, batch.ref)
    hale = await campaign.graph.get_entity("Brother Hale")
    assert (hale.description, hale.visibility, hale.type) == ("A monk of the tide.", Visibility.public, EntityType.npc)
    [notes] = await campaign.graph.relationships_of(hale.id, include_secret=True)
    assert (notes.type, notes.value, notes.visibility) == ("dm_notes_journal", "He serves the lich.", Visibility.secret)
    assert await campaign.graph.relationships_of(hale.id) == []  # players read none of it


async def test_a_journal_exported_without_ownership_never_replaces_a_public_description(
    campaign: CampaignMemory,
) -> None:
    """A GM-only journal saved with "Export Data" has no ownership: it is taken as DM-only (Foundry's default),
    so its text is the public NPC's GM notes, not the description players read, and the card says why."""
    await campaign.add_entity(EntityIn(name="Vask Emberhand", type=EntityType.npc, description="A smith."))
    page = {"name": "Vask Emberhand", "type": "text", "text": {"format": 1, "content": "<p>He poisoned the king.</p>"}}
    journal = {"name": "Vask Emberhand", "pages": [page], "flags": {"exportSource": {"coreVersion": "12.331"}}}
    batch = await batches.stage(campaign, read_import([("vask-gm.json", json.dumps(journal).encode())]))
    assert "assumed: no ownership in the export" in batch.card() and "DM-only" in batch.card()
    await batches.accept(campaign, batch.ref)
    vask = await campaign.graph.get_entity("Vask Emberhand")
    assert (vask.description, vask.visibility) == ("A smith.", Visibility.public)
    [notes] = await campaign.graph.relationships_of(vask.id, include_secret=True)
    assert (notes.value, notes.visibility) == ("He poisoned the king.", Visibility.secret)


async def test_the_card_counts_dm_only_facts_not_entities(campaign: CampaignMemory) -> None:
    """The card's "N facts, M of them DM-only" counts facts alone: a secret entity is not a fact, and the GM notes
    a secret record gives a public entity of its name are one."""
    await campaign.add_entity(EntityIn(name="Brother Hale", type=EntityType.npc))
    journals = [
        {"_id": "j1", "name": "Brother Hale", "content": "<p>He serves the lich.</p>"},
        {"_id": "j2", "name": "The Drowned Pact", "content": "<p>Sworn in the deep.</p>"},
    ]
    world = "\n".join(json.dumps({**j, "ownership": {"default": 0}}) for j in journals)
    batch = await batches.stage(campaign, read_import([("journal.db", world.encode())]))
    # the journal's text is GM notes (a fact): Brother Hale himself is left as he was
    assert "2 entities (1 new, 0 updated, 1 unchanged), 1 fact, 1 of them DM-only" in batch.card()


async def test_the_card_tells_unchanged_entities_from_updated_ones(campaign: CampaignMemory) -> None:
    """An unchanged world imported again: the card said "7 updated", and accepting it "0 updated, 7 unchanged". The
    card counts what accepting does, and an update shows the type its entity keeps, not the record's."""
    await _import(campaign, files(WORLD))
    batch = await batches.stage(campaign, read_import(files(WORLD)))
    card = batch.card()
    assert "7 entities (0 new, 0 updated, 7 unchanged)" in card and "(updates" not in card
    assert "- Captain Ilse (player) (unchanged): Our fearless captain." in card
    _, report = await batches.accept(campaign, batch.ref)
    assert (report.entities_updated, report.entities_unchanged) == (0, 7)

    csv = b"name,type,description\nCaptain Ilse,concept,Our captain now.\n"  # a record of another kind, new text
    card = (await batches.stage(campaign, read_import([("ilse.csv", csv)]))).card()
    assert "1 entity (0 new, 1 updated), 0 facts" in card and "by type: 1 player" in card
    assert "- Captain Ilse (player) (updates the entity of that name): Our captain now." in card

    async with campaign.transaction() as tx:  # `campaign import --accept`: not tried first, its card says the load
        staged = await batches.stage(tx, read_import(files(WORLD)), trial=False)
        await batches.accept(tx, staged.ref)
    assert "7 entities (0 new, 0 updated, 7 unchanged)" in (await batches.get(campaign, staged.ref)).card()


async def test_a_batch_waiting_is_planned_again_when_another_is_accepted(campaign: CampaignMemory) -> None:
    """Two batches wait, both planned against the campaign before either was accepted. Accepting one plans the
    other again: its card no longer says "7 new" of entities the first made, nor a rename the first did, and says
    why it changed."""
    first = await batches.stage(campaign, read_import(files(WORLD)))
    second = await batches.stage(campaign, read_import(files(WORLD)))
    assert "7 entities (7 new, 0 updated)" in second.card()
    await batches.accept(campaign, first.ref)
    card = (await batches.get(campaign, second.ref)).card()
    assert "7 entities (0 new, 0 updated, 7 unchanged), 1 fact, 1 of them DM-only" in card
    assert f"planned again after {first.ref} was accepted, against the campaign as it is now" in card
    await batches.reject(campaign, second.ref)

    await _import(campaign, _vask("Owes the Red Hand."))
    renamed = read_import(_vask("Owes the Red Hand.", name="Vask Emberhand"))
    one, two = await batches.stage(campaign, renamed), await batches.stage(campaign, renamed)
    assert "(renames Vask the Ashen)" in two.card()
    await batches.accept(campaign, one.ref)
    card = (await batches.get(campaign, two.ref)).card()
    assert "renames" not in card and "- Vask Emberhand (npc) (unchanged)" in card
    _, report = await batches.accept(campaign, two.ref)
    assert not report.changed  # as its card now says: nothing left to do
    assert "planned again" not in (await batches.get(campaign, two.ref)).card()  # said only while it waits


async def test_accepting_a_batch_never_fails_for_another_waiting(
    campaign: CampaignMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Accepting one batch plans the others again: one that could no longer load, for a clash the first made (an
    alias) or any other failure of its load (a query failing in the database), keeps its old plan, marked so, and
    the accept goes on; that batch's own accept says what is wrong with it."""
    one = await batches.stage(campaign, read_import([("a.csv", b"name,type,aliases\nEldrinax,npc,Eldri\n")]))
    clash = await batches.stage(campaign, read_import([("b.csv", b"name,type,aliases\nIronhold,location,Eldri\n")]))
    broken = await batches.stage(campaign, read_import(files(WORLD)))
    load = batches.apply_campaign_file

    async def failing(tx: CampaignMemory, file: CampaignFile, **options: Any) -> LoadReport:
        if options.get("imported_from") == "foundry":
            await tx.db.execute("SELECT 1 / 0")  # a failure that is no ValueError, in the accept's transaction
        return await load(tx, file, **options)

    monkeypatch.setattr(batches, "apply_campaign_file", failing)
    accepted, report = await batches.accept(campaign, one.ref)
    assert accepted.status == "accepted" and report.entities_created == 1
    for other in (clash, broken):
        card = (await batches.get(campaign, other.ref)).card()
        assert f"{one.ref} was accepted since: these counts are from before it" in card
    with pytest.raises(AlreadyExistsError, match="'Eldri' is already an alias of 'Eldrinax'"):
        await batches.accept(campaign, clash.ref)
    monkeypatch.undo()
    _, report = await batches.accept(campaign, broken.ref)
    assert report.entities_created == 7


async def test_staging_and_accepting_a_batch_say_how_far_the_load_is(campaign: CampaignMemory) -> None:
    """A world of thousands of actors took half a minute to stage and as long to accept, silently: both tell a
    progress callback how far their load is, as a campaign file's load does."""
    said: list[tuple[int, int]] = []
    batch = await batches.stage(campaign, read_import(files(WORLD)), progress=lambda *done: said.append(done))
    assert said and said[-1] == (8, 8)  # 7 entities and a fact
    said.clear()
    await batches.accept(campaign, batch.ref, progress=lambda *done: said.append(done))
    assert said[-1] == (8, 8)


async def test_a_rejected_batch_writes_nothing(campaign: CampaignMemory) -> None:
    batch = await batches.stage(campaign, read_import(files([FIXTURES / "roll20_campaign.json"])))
    rejected = await batches.reject(campaign, batch.ref)
    assert rejected.status == "rejected"
    assert await count(campaign, "entities") == 0
    with pytest.raises(AlreadyDecidedError, match="was already rejected"):
        await batches.accept(campaign, batch.ref)


async def test_a_batch_that_could_not_load_is_refused_when_staged(campaign: CampaignMemory) -> None:
    await campaign.add_entity(EntityIn(name="Eldrinax", type=EntityType.npc, aliases=["Eldri"]))
    csv = b"name,type,aliases\nIronhold,location,Eldri\n"  # an alias another entity holds
    with pytest.raises(AlreadyExistsError, match="Ironhold"):
        await batches.stage(campaign, read_import([("clash.csv", csv)]))
    assert await count(campaign, "import_batches") == 0 and await count(campaign, "entities") == 1


def test_the_cli_imports_for_review_and_with_accept(lk: Callable[..., CompletedProcess[str]]) -> None:
    assert lk("campaign", "create", "Tides").returncode == 0
    kanka = [
        str(FIXTURES / f"kanka_{n}.json") for n in ("characters", "locations", "organisations", "items", "relations")
    ]
    staged = lk("campaign", "import", *kanka)
    assert staged.returncode == 0, staged.stderr
    assert "6 entities (6 new, 0 updated), 8 facts" in staged.stdout
    assert "`lorekeeper review accept b1`" in staged.stdout
    assert "trying 6 entities" in staged.stderr  # a progress bar on stderr, as `campaign load` shows
    listed = lk("review", "list")
    assert "Import b1 (kanka:" in listed.stdout and "nothing else to review" in listed.stdout
    assert lk("entity", "show", "Jonah Greave").returncode != 0  # not in the graph before the DM accepts
    accepted = lk("review", "accept", "b1")
    assert accepted.returncode == 0 and "accepted b1: entities: 6 new" in accepted.stdout, accepted.stderr
    assert "accepting b1" in accepted.stderr
    shown = lk("entity", "show", "Greave Marsh")
    assert "Jonah Greave is located in Greave Marsh" in shown.stdout

    csv = FIXTURES / "world.csv"
    direct = lk("campaign", "import", str(csv), "--accept")
    assert direct.returncode == 0 and "accepted into Tides: entities: 3 new" in direct.stdout, direct.stderr
    # a folder stands for the files in it: a Foundry world's data folder
    world = lk("campaign", "import", str(FIXTURES / "foundry_world"), "--json")
    assert world.returncode == 0 and json.loads(world.stdout)["status"] == "pending", world.stderr
    # place, as older versions called it, is still taken on the command line; a misspelling gets a suggestion
    assert lk("entity", "add", "Saltmere", "place").stdout.startswith("added location 'Saltmere'")
    typo = lk("entity", "add", "Vel", "locaton")
    assert typo.returncode == 2 and "did you mean 'location'?" in typo.stderr
    bad = lk("campaign", "import", str(FIXTURES / "roll20_handout.json"), "--format", "csv")
    assert bad.returncode != 0 and "roll20_handout.json" in bad.stderr


def test_a_batch_that_can_no_longer_load_is_refused_naming_it(
    lk: Callable[..., CompletedProcess[str]], tmp_path: Path
) -> None:
    """Both staged before either was accepted: the first's alias is the second's clash, said of the second alone."""
    assert lk("campaign", "create", "Tides").returncode == 0
    (tmp_path / "a.csv").write_text("name,type,aliases\nEldrinax,npc,Eldri\n")
    (tmp_path / "b.csv").write_text("name,type,aliases\nIronhold,location,Eldri\n")
    assert lk("campaign", "import", str(tmp_path / "a.csv")).returncode == 0
    assert lk("campaign", "import", str(tmp_path / "b.csv")).returncode == 0
    accepted = lk("review", "accept", "b1")
    assert accepted.returncode == 0 and "accepted b1: entities: 1 new" in accepted.stdout, accepted.stderr
    refused = lk("review", "accept", "b2")
    assert refused.returncode == 1
    assert "error: nothing of b2 was imported: " in refused.stderr, refused.stderr
    assert "'Eldri' is already an alias of 'Eldrinax'" in refused.stderr


def test_an_import_accepted_at_once_that_could_not_load_keeps_nothing(
    lk: Callable[..., CompletedProcess[str]], tmp_path: Path
) -> None:
    """`--accept` loads the batch once, in the transaction that stages it: a batch that could not load is refused
    naming the entry, and neither the batch nor any entity of it is kept."""
    assert lk("campaign", "create", "Tides").returncode == 0
    assert lk("entity", "add", "Eldrinax", "npc", "--alias", "Eldri").returncode == 0
    (tmp_path / "clash.csv").write_text("name,type,aliases\nSaltmere,location,\nIronhold,location,Eldri\n")
    refused = lk("campaign", "import", str(tmp_path / "clash.csv"), "--accept")
    assert refused.returncode != 0 and "Ironhold" in refused.stderr and "nothing was imported" in refused.stderr
    assert "Import b" not in lk("review", "list").stdout
    assert lk("entity", "show", "Saltmere").returncode != 0
    # the CSV's line, not a campaign file's "entity #1" and its renamed_from: a CSV has no such column
    (tmp_path / "alias.csv").write_text("name,type,aliases\nVexy,npc,Eldri\n")
    clash = lk("campaign", "import", str(tmp_path / "alias.csv"))
    assert f"error: {tmp_path / 'alias.csv'}: line 2 ('Vexy'): 'Eldri' is already an alias of" in clash.stderr
    assert "entity #" not in clash.stderr and "renamed_from" not in clash.stderr


def test_a_foundry_v11_world_folder_imports_its_leveldb_data(
    lk: Callable[..., CompletedProcess[str]], tmp_path: Path
) -> None:
    """Foundry v11+ keeps a world's documents as LevelDB folders: the world folder imports as its .db files did,
    embedded items and pages with their documents, every rule of the Foundry mapping as it was; a folder Foundry
    holds open (its LOCK taken) is read from a copy."""
    plyvel = pytest.importorskip("plyvel")
    assert lk("campaign", "create", "Tides").returncode == 0
    world = v11_world(tmp_path / "Data" / "worlds")
    running = plyvel.DB(str(world / "data" / "actors"))  # Foundry running: another process holds the lock
    try:
        imported = lk("campaign", "import", str(world), "--accept")
    finally:
        running.close()
    assert imported.returncode == 0, imported.stderr
    assert "accepted into Tides: entities: 6 new" in imported.stdout
    assert "importing 6 entities" in imported.stderr  # the progress bar, as the other imports show
    vask = json.loads(lk("entity", "show", "Vask the Ashen", "--json").stdout)
    assert vask["entity"]["description"] == "A smith."
    facts = {(r["type"], r.get("target_name") or r.get("value"), r["visibility"]) for r in vask["relationships"]}
    assert facts == {
        ("owns", "Ember Blade", "public"),
        ("owns", "Black Ring", "public"),  # not yet identified: what players know of it
        ("dm_notes", "A spy.", "secret"),
    }
    ring = lk("entity", "show", "Black Ring").stdout
    assert "Identified: Ring of Spite" in ring and "(secret)" in ring
    assert lk("entity", "show", "Dagger").returncode != 0  # mundane: left on the sheet
    pact = json.loads(lk("entity", "show", "The Pact of Tides", "--json").stdout)
    assert pact["entity"]["description"] == "Terms\nThe sea takes one ship a year."  # under its title, as from .db
    [notes] = pact["relationships"]
    assert (notes["type"], notes["value"], notes["visibility"]) == (
        "dm_notes_journal",
        "Price\nThe captain is the price.",
        "secret",
    )
    assert "aliases: The Docks" in lk("entity", "show", "Saltmere Docks").stdout
    assert lk("entity", "show", "Tide Priest").returncode == 0  # the world's own compendium pack
    assert lk("entity", "show", "Vask").returncode != 0  # not the migrated actors.db's stale Vask

    # a week of prep later: Vask renamed in Foundry; importing data/ again finds him by his id
    leveldb(
        world / "data" / "actors",
        {
            "!actors!vask000000000001": {
                "_id": "vask000000000001",
                "name": "Vask Emberhand",
                "type": "npc",
                "system": {},
                "items": [],
                "prototypeToken": {},
            }
        },
    )
    again = lk("campaign", "import", str(world / "data"))
    assert again.returncode == 0 and "- Vask Emberhand (npc) (renames Vask the Ashen)" in again.stdout, again.stderr


def test_a_damaged_leveldb_folder_is_refused_naming_it(
    lk: Callable[..., CompletedProcess[str]], tmp_path: Path
) -> None:
    assert lk("campaign", "create", "Tides").returncode == 0
    world = v11_world(tmp_path)
    for table in (world / "data" / "journal").glob("*.log"):
        data = table.read_bytes()
        table.write_bytes(data[:20] + b"\xff" * 40 + data[60:])  # a record's checksum no longer matches
    refused = lk("campaign", "import", str(world), "--accept")
    assert refused.returncode != 0
    assert f"error: {world / 'data' / 'journal'}: a damaged LevelDB folder (Corruption:" in refused.stderr, (
        refused.stderr
    )
    assert "Import b" not in lk("review", "list").stdout
    assert lk("entity", "show", "Vask the Ashen").returncode != 0  # nothing of the world kept


def _vask(secret_notes: str, **changes: str) -> list[tuple[str, bytes]]:
    """The Foundry NPC fixture, its GM-only block (and any top-level field) as given: what the DM exports again."""
    actor = json.loads((FIXTURES / "foundry_dnd5e_npc_v10.json").read_text())
    actor["system"]["details"]["biography"]["value"] = (
        f'<p>A smith.</p><section class="secret"><p>{secret_notes}</p></section>'
    )
    return [("vask.json", json.dumps({**actor, **changes}).encode())]


async def _import(campaign: CampaignMemory, files: list[tuple[str, bytes]]) -> tuple[batches.ImportBatch, str]:
    """As `lorekeeper campaign import --accept` does: staged and accepted in one transaction; the batch's card and
    what the load said of the changes."""
    async with campaign.transaction() as tx:
        batch = await batches.stage(tx, read_import(files))
        _, report = await batches.accept(tx, batch.ref)
    return batch, report.said()


async def test_an_imported_facts_history_says_the_tool_and_files_it_came_from(
    memory: Memory, campaign: CampaignMemory
) -> None:
    """An imported fact's history said "from the campaign file": it came from a Foundry import. Where a fact's
    provenance is shown (its history, a current fact's source, the MCP tools), it names the tool and its files."""
    await _import(campaign, _vask("Owes the Red Hand."))
    await campaign.add_entity(EntityIn(name="Doran Ives", type=EntityType.npc))
    await campaign.graph.link("Doran Ives", "owns", "Emberbrand")  # a hand-over in play closes the sheet's
    sword = await campaign.graph.get_entity("Emberbrand")
    [owned] = await campaign.graph.history(sword.id)
    assert owned.describe_past().endswith(", imported from Foundry VTT (vask.json))"), owned.describe_past()
    vask = await campaign.graph.get_entity("Vask the Ashen")
    [notes] = [
        p
        for p in await campaign.graph.heard_where(await campaign.graph.relationships_of(vask.id, include_secret=True))
        if p.type == "dm_notes"
    ]
    assert notes.since().endswith("imported from Foundry VTT (vask.json)")
    tools = CampaignTools(campaign, await memory.campaigns().get("Test Campaign"), dm=True)
    facts = await tools.entity_facts("Emberbrand", history=True)
    assert [p.heard for p in facts.history] == ["imported from Foundry VTT (vask.json)"]
    # a campaign file the DM loads is still one
    pip = b"entities:\n  - {name: Pip, type: npc}\nrelationships:\n  - {source: Pip, type: status, value: alive}\n"
    await apply_campaign_file(campaign, parse_campaign_file(pip, "world.yaml"))
    await campaign.graph.link("Pip", "status", value="dead")
    [alive] = await campaign.graph.history((await campaign.graph.get_entity("Pip")).id)
    assert alive.heard() == "from the campaign file"


async def test_an_import_warns_of_a_secret_name_spelled_like_a_public_one_it_brings(campaign: CampaignMemory) -> None:
    """An import loads as a campaign file does: a public "Ironhold" beside the campaign's secret "The Ironhold"
    makes the secret name one players read, and accepting it warns the DM."""
    await campaign.add_entity(EntityIn(name="The Ironhold", type=EntityType.location, visibility=Visibility.secret))
    _, said = await _import(campaign, [("world.csv", b"name,type\nIronhold,location\nSaltmere,location\n")])
    assert said == (
        "warning: The secret name “The Ironhold” is spelled like “Ironhold”, which players may read: it cannot be "
        "hidden from them; give one of the two a name of its own."
    )


async def test_an_import_warns_of_a_public_description_that_names_a_secret(campaign: CampaignMemory) -> None:
    """An import's public description saying the campaign's secret name shows players "[secret]": the DM is told."""
    await campaign.add_entity(EntityIn(name="Vaskerrin Holt", type=EntityType.npc, visibility=Visibility.secret))
    _, said = await _import(campaign, [("world.csv", b"name,type,description\nIronhold,location,vaskerrin's keep\n")])
    assert said == (
        "warning: “Ironhold” is public but its description says “vaskerrin”, a secret name: players will read "
        "[secret] there, which tells them a secret is there; reword it, or make the entity secret."
    )


async def test_gm_notes_that_got_shorter_end_their_old_parts(campaign: CampaignMemory) -> None:
    """GM notes of three parts imported again as one: the old ``dm_notes_2`` and ``_3`` are ended, not left current
    beside the new text; players read none of it either way."""
    debt = " ".join(["The smith owes the Red Hand a debt of blood."] * 30)
    await _import(campaign, _vask(debt))
    vask = await campaign.graph.get_entity("Vask the Ashen")
    notes = await campaign.graph.relationships_of(vask.id, include_secret=True)
    assert sorted(r.type for r in notes if r.type.startswith("dm_notes")) == ["dm_notes", "dm_notes_2", "dm_notes_3"]

    _, said = await _import(campaign, _vask("Paid the debt."))
    notes = await campaign.graph.relationships_of(vask.id, include_secret=True)
    assert [(r.type, r.value) for r in notes if r.type.startswith("dm_notes")] == [("dm_notes", "Paid the debt.")]
    assert "- Vask the Ashen: fact dm_notes_2: ended (the GM notes are shorter now)" in said
    ended = await campaign.db.fetch(
        "SELECT type, valid_to, superseded_by FROM relationships WHERE campaign_id = $1 AND type LIKE 'dm_notes_%'",
        campaign.campaign_id,
    )
    assert len(ended) == 2 and all(r["valid_to"] is not None and r["superseded_by"] for r in ended)  # kept, closed
    assert [r.type for r in await campaign.graph.relationships_of(vask.id)] == ["owns"]  # players: no notes

    # an import that carries no GM notes of it leaves the ones it has alone
    await _import(campaign, [("world.csv", b"name,type,description\nVask the Ashen,npc,A smith.\n")])
    notes = await campaign.graph.relationships_of(vask.id, include_secret=True)
    assert [r.type for r in notes if r.type.startswith("dm_notes")] == ["dm_notes"]


async def test_gm_notes_deleted_in_the_tool_are_ended(campaign: CampaignMemory) -> None:
    """The DM deletes an NPC's GM notes in Foundry: imported again, every part is ended (kept in its history),
    not left current. A CSV with a ``dm_notes`` column says so by an empty cell; notes the DM wrote here stay."""
    debt = " ".join(["The smith owes the Red Hand a debt of blood."] * 30)
    await _import(campaign, _vask(debt))
    vask = await campaign.graph.get_entity("Vask the Ashen")

    def notes(facts: list[Relationship]) -> list[str]:
        return sorted(r.type for r in facts if r.type.startswith("dm_notes"))

    actor = json.loads(_vask("")[0][1])
    actor["system"]["details"]["biography"]["value"] = "<p>A smith.</p>"
    _, said = await _import(campaign, [("vask.json", json.dumps(actor).encode())])
    assert notes(await campaign.graph.relationships_of(vask.id, include_secret=True)) == []
    assert notes(await campaign.graph.history(vask.id, include_secret=True)) == ["dm_notes", "dm_notes_2", "dm_notes_3"]
    assert "- Vask the Ashen: fact dm_notes: ended (the GM notes were deleted)" in said

    await _import(campaign, [("w.csv", b"name,type,dm_notes\nIronhold,location,Hides the crown.\n")])
    ironhold = await campaign.graph.get_entity("Ironhold")
    await campaign.graph.add_relationship(
        RelationshipIn(source_id=ironhold.id, type="dm_notes_9", value="The DM's own.", visibility=Visibility.secret)
    )
    await _import(campaign, [("w.csv", b"name,type,dm_notes\nIronhold,location,\n")])
    current = await campaign.graph.relationships_of(ironhold.id, include_secret=True)
    assert [(r.type, r.value) for r in current] == [("dm_notes_9", "The DM's own.")]


async def test_only_the_record_that_gave_gm_notes_ends_them_and_the_card_says_so(campaign: CampaignMemory) -> None:
    """GM notes end only when the record (or tool) that gave them has none now: a Foundry journal without an id
    that shares the NPC's name, or a CSV row of a place a Foundry journal described, is another record. The card
    of a batch lists the notes accepting it ends."""
    await _import(campaign, _vask("He is a spy."))
    page = {"name": "Vask the Ashen", "type": "text", "text": {"content": "<p>A smith of Cindergate.</p>"}}
    journal = {"name": "Vask the Ashen", "pages": [page], "ownership": {"default": 2}}
    _, said = await _import(campaign, [("vask-journal.json", json.dumps(journal).encode())])
    vask = await campaign.graph.get_entity("Vask the Ashen")
    current = await campaign.graph.relationships_of(vask.id, include_secret=True)
    assert [(r.type, r.value) for r in current if r.type == "dm_notes"] == [("dm_notes", "He is a spy.")], said

    content = '<p>A hold.</p><section class="secret">Dead king.</section>'
    ironhold = {"_id": "j9", "name": "Ironhold", "content": content}
    await _import(campaign, [("journal.db", json.dumps({**ironhold, "ownership": {"default": 2}}).encode())])
    await _import(campaign, [("w.csv", b"name,type,description,dm_notes\nIronhold,location,Dwarven hold,\n")])
    hold = await campaign.graph.get_entity("Ironhold")
    current = await campaign.graph.relationships_of(hold.id, include_secret=True)
    assert [(r.type, r.value) for r in current] == [("dm_notes_journal", "Dead king.")]

    actor = json.loads(_vask("")[0][1])
    actor["system"]["details"]["biography"]["value"] = "<p>A smith.</p>"
    batch = await batches.stage(campaign, read_import([("vask.json", json.dumps(actor).encode())]))
    assert "GM notes it ends or replaces (kept in their history):\n- Vask the Ashen: fact dm_notes: ended" in (
        batch.card()
    )


async def test_a_csv_row_shorter_than_its_header_has_empty_gm_notes(campaign: CampaignMemory) -> None:
    """A spreadsheet drops a row's trailing empty cells: ``Vel,npc`` under ``name,type,dm_notes`` is an empty
    ``dm_notes`` cell, so notes deleted there are ended as a full row's empty cell ends them."""
    await _import(campaign, [("w.csv", b"name,type,dm_notes\nVel,npc,Hides.\nIronhold,location,Holds the crown.\n")])
    _, said = await _import(campaign, [("w.csv", b"name,type,dm_notes\nVel,npc\nIronhold,location,Holds the crown.\n")])
    vel = await campaign.graph.get_entity("Vel")
    assert [r.type for r in await campaign.graph.relationships_of(vel.id, include_secret=True)] == []
    assert "- Vel: fact dm_notes: ended (the GM notes were deleted)" in said


async def test_a_first_import_without_gm_notes_keeps_the_notes_the_campaign_file_gave(campaign: CampaignMemory) -> None:
    """The DM's own campaign file gave Vask GM notes; the Foundry actor of his name, imported for the first time,
    has none: nothing was deleted in the tool, so his notes stay current."""
    await apply_campaign_file(
        campaign,
        parse_campaign_file(
            b"entities:\n  - {name: Vask the Ashen, type: npc}\nrelationships:\n"
            b"  - {source: Vask the Ashen, type: dm_notes, value: Owes the Red Hand., secret: true}\n",
            "world.yaml",
        ),
    )
    actor = json.loads(_vask("")[0][1])
    actor["system"]["details"]["biography"]["value"] = "<p>A smith.</p>"
    await _import(campaign, [("vask.json", json.dumps(actor).encode())])
    vask = await campaign.graph.get_entity("Vask the Ashen")
    current = await campaign.graph.relationships_of(vask.id, include_secret=True)
    assert [(r.type, r.value) for r in current if r.type.startswith("dm_notes")] == [("dm_notes", "Owes the Red Hand.")]


async def test_a_record_renamed_in_the_tool_renames_its_entity(campaign: CampaignMemory) -> None:
    """Foundry keeps an actor's ``_id`` through a rename: the import finds the entity by it, renames it (the old
    name an alias) and says so on the card, instead of adding a second Vask beside the first."""
    await _import(campaign, _vask("Owes the Red Hand."))
    vask = await campaign.graph.get_entity("Vask the Ashen")
    async with campaign.transaction() as tx:
        batch = await batches.stage(tx, read_import(_vask("Owes the Red Hand.", name="Vask Emberhand")))
        card = batch.card()
        _, report = await batches.accept(tx, batch.ref)
    assert (
        "2 entities (0 new, 1 updated, 1 unchanged)" in card
        and "- Vask Emberhand (npc) (renames Vask the Ashen): A smith" in card
    )
    assert "- Vask Emberhand: renamed from Vask the Ashen" in report.said()
    renamed = await campaign.graph.get_entity("Vask Emberhand")
    assert (renamed.id, renamed.aliases) == (vask.id, ["Vask the Ashen"])
    assert await count(campaign, "entities") == 2  # Vask and his sword
    assert [r.target_name for r in await campaign.graph.relationships_of(vask.id)] == ["Emberbrand"]
    # exported again as it is: nothing to rename, nothing new
    batch, _ = await _import(campaign, _vask("Owes the Red Hand.", name="Vask Emberhand"))
    assert "(0 new, 0 updated, 2 unchanged)" in batch.card() and "renames" not in batch.card()
    assert await count(campaign, "entities") == 2


@pytest.mark.parametrize("new_first", [False, True])
async def test_a_rename_and_a_new_record_of_the_old_name_make_two_entities(
    campaign: CampaignMemory, new_first: bool
) -> None:
    """Renamed in Foundry, and a new actor given the old name: the file the import made was refused ("renamed_from
    'Vask the Ashen' is entity #3 'Vask the Ashen' of this file"). The id tells the rename: the entity is renamed
    (its old name no alias, as another has it now) and the new actor is a new entity, whichever comes first."""

    def actors(*named: tuple[int, str]) -> list[tuple[str, bytes]]:
        docs = [{"_id": f"wact{i:012d}", "name": name, "type": "npc", "system": {}, "items": []} for i, name in named]
        return [("actors.db", "\n".join(json.dumps(d) for d in docs).encode())]

    await _import(campaign, actors((1, "Vask the Ashen"), (2, "Ilse")))
    vask = await campaign.graph.get_entity("Vask the Ashen")
    now = [(1, "Vask Emberhand"), (2, "Ilse"), (3, "Vask the Ashen")]
    batch, said = await _import(campaign, actors(*(now[::-1] if new_first else now)))
    card = batch.card()
    assert "3 entities (1 new, 1 updated, 1 unchanged)" in card
    assert "- Vask Emberhand (npc) (renames Vask the Ashen)" in card
    assert "- Vask the Ashen (npc)\n" in card + "\n"  # new: not "updates the entity of that name"
    assert "- Vask Emberhand: renamed from Vask the Ashen" in said
    renamed, new = await campaign.graph.get_entity("Vask Emberhand"), await campaign.graph.get_entity("Vask the Ashen")
    assert (renamed.id, renamed.aliases) == (vask.id, []) and new.id != vask.id
    assert await count(campaign, "entities") == 3
    # exported again as it is: each record finds its own entity by its id
    batch, _ = await _import(campaign, actors(*now))
    assert "(0 new, 0 updated, 3 unchanged)" in batch.card() and "renames" not in batch.card()
    assert await count(campaign, "entities") == 3


async def test_an_id_matches_only_the_tool_and_the_entities_it_made(campaign: CampaignMemory) -> None:
    """A Foundry id never matches a record of another tool; and an entity the DM made is never matched by an id,
    even once an import updated it by its name."""
    await _import(campaign, _vask("Owes the Red Hand."))
    foundry = read_import(_vask("", name="Vask Emberhand"))
    kanka = foundry.model_copy(update={"format": "kanka"})  # the same ids, said to be Kanka's
    batch = await batches.stage(campaign, kanka)
    assert "- Vask Emberhand (npc): A smith" in batch.card()  # new, not a rename
    await batches.reject(campaign, batch.ref)

    await campaign.add_entity(EntityIn(name="Ilse", type=EntityType.npc, description="The DM's own captain."))
    actor = {"_id": "wact000000000009", "name": "Ilse", "type": "npc", "system": {}, "items": []}
    await _import(campaign, [("ilse.json", json.dumps(actor).encode())])  # updates her by name
    renamed = {**actor, "name": "Captain Ilse"}
    batch, _ = await _import(campaign, [("ilse.json", json.dumps(renamed).encode())])
    assert "- Captain Ilse (npc)\n" in batch.card() + "\n" and "renames" not in batch.card()
    assert (await campaign.graph.get_entity("Ilse")).description == "The DM's own captain."

    # renamed to the name of an entity the DM made: updated under its own name, not refused nor a third entity
    await campaign.add_entity(EntityIn(name="Vask Emberhand", type=EntityType.npc))
    batch, _ = await _import(campaign, _vask("", name="Vask Emberhand"))
    # his GM notes deleted in the tool, ended: updated, not unchanged
    assert "- Vask Emberhand (npc) (updates Vask the Ashen): A smith" in batch.card()
    assert (await campaign.graph.get_entity("Vask the Ashen")).description == "A smith."


async def test_a_name_the_dm_gave_stays_and_a_secret_record_never_renames_a_public_entity(
    campaign: CampaignMemory,
) -> None:
    """Matched by its id, a record the tool did not rename updates the entity under the name the DM gave it here
    (no duplicate, the old name not brought back); a GM-only journal renamed in Foundry, whose entity the DM made
    public, gives it neither its new name nor an alias: its text stays GM notes."""
    await _import(campaign, _vask("Owes the Red Hand."))
    await campaign.graph.update_entity("Vask the Ashen", new_name="Vask", aliases=[], visibility=Visibility.secret)
    batch, _ = await _import(campaign, _vask("Owes the Red Hand."))
    assert "- Vask the Ashen (npc) (DM-only) (Vask, unchanged): A smith" in batch.card()
    vask = await campaign.graph.get_entity("Vask")
    assert (vask.name, vask.aliases, await count(campaign, "entities")) == ("Vask", [], 2)

    page = {"_id": "p1", "name": "Page", "type": "text", "text": {"content": "<p>He serves the lich.</p>"}}
    journal = {"_id": "wjnl00000000000c", "name": "The Tide Pact", "pages": [page], "ownership": {"default": 0}}
    await _import(campaign, [("j.json", json.dumps(journal).encode())])
    await campaign.graph.update_entity("The Tide Pact", visibility=Visibility.public)
    secret_name = {**journal, "name": "Hale Serves the Lich"}
    batch, _ = await _import(campaign, [("j.json", json.dumps(secret_name).encode())])
    assert "renames" not in batch.card()
    pact = await campaign.graph.get_entity("The Tide Pact")
    assert (pact.aliases, pact.visibility) == ([], Visibility.public)
    assert await campaign.graph.find_entity("Hale Serves the Lich") is None
    assert all(
        r.visibility == Visibility.secret for r in await campaign.graph.relationships_of(pact.id, include_secret=True)
    )


async def test_a_rename_withheld_while_the_record_was_secret_comes_when_it_may(campaign: CampaignMemory) -> None:
    """A journal renamed in Foundry and made GM-only in one export makes its entity secret under the new name (the
    import set who may see it). Shown to players here by the DM while Foundry keeps it GM-only, a rename does not
    come; exported again shared with the players, or once the DM made the entity secret here, the rename comes
    then, instead of the new name being taken as already seen."""
    page = {"_id": "p1", "name": "Page", "type": "text", "text": {"content": "<p>An old pact.</p>"}}

    def journal(name: str, default: int) -> list[tuple[str, bytes]]:
        doc = {"_id": "wjnl00000000000c", "name": name, "pages": [page], "ownership": {"default": default}}
        return [("j.json", json.dumps(doc).encode())]

    await _import(campaign, journal("The Tide Pact", 2))
    batch, _ = await _import(campaign, journal("Hale's Pact", 0))
    assert "- Hale's Pact (concept) (DM-only from now: made private in foundry) (renames The Tide Pact)" in batch.card()
    assert (await campaign.graph.get_entity("Hale's Pact")).visibility == Visibility.secret
    await campaign.graph.update_entity("Hale's Pact", visibility=Visibility.public)  # the DM shows it here
    batch, _ = await _import(campaign, journal("The Sea Oath", 0))
    assert "renames" not in batch.card() and await campaign.graph.find_entity("The Sea Oath") is None
    batch, _ = await _import(campaign, journal("The Sea Oath", 0))  # still secret: still withheld
    assert "renames" not in batch.card() and await campaign.graph.find_entity("The Sea Oath") is None
    batch, _ = await _import(campaign, journal("The Sea Oath", 2))
    assert "- The Sea Oath (concept) (renames Hale's Pact)" in batch.card()
    assert (await campaign.graph.get_entity("The Sea Oath")).aliases == ["Hale's Pact", "The Tide Pact"]

    await campaign.graph.update_entity("The Sea Oath", visibility=Visibility.secret)  # hidden here, shared there
    await _import(campaign, journal("The Deep Oath", 0))  # the entity already secret: renamed
    assert (await campaign.graph.get_entity("The Deep Oath")).visibility == Visibility.secret


async def test_a_secret_records_notes_go_to_its_entity_as_another_record_renames_it(campaign: CampaignMemory) -> None:
    """A GM-only journal folded into Vask's actor, both renamed in Foundry: the actor renames the entity, the
    journal's rename is withheld, and its text is GM notes on the entity under the name it now has, after the
    actor's own notes, not on the old name (no longer the entity's, or another record's)."""

    def world(actor_name: str, journal_name: str) -> list[tuple[str, bytes]]:
        [(_, actor)] = _vask("Owes the Red Hand.", name=actor_name)
        page = {"_id": "p1", "name": "Page", "type": "text", "text": {"content": "<p>He serves the lich.</p>"}}
        journal = {"_id": "wjnl00000000000v", "name": journal_name, "pages": [page], "ownership": {"default": 0}}
        return [("world.db", actor + b"\n" + json.dumps(journal).encode() + b"\n")]

    def notes(relationships: list[Relationship]) -> list[tuple[str, str | None]]:
        return [(r.type, r.value) for r in relationships if r.type.startswith("dm_notes")]

    await _import(campaign, world("Vask the Ashen", "Vask the Ashen"))
    vask = await campaign.graph.get_entity("Vask the Ashen")
    expected = [("dm_notes", "Owes the Red Hand."), ("dm_notes_journal", "He serves the lich.")]
    assert notes(await campaign.graph.relationships_of(vask.id, include_secret=True)) == expected
    batch, _ = await _import(campaign, world("Vask Emberhand", "Vask's Debts"))
    assert "- Vask Emberhand (npc) (renames Vask the Ashen)" in batch.card()
    assert (await campaign.graph.get_entity("Vask Emberhand")).id == vask.id
    assert notes(await campaign.graph.relationships_of(vask.id, include_secret=True)) == expected
    # the journal now has the name the entity had: still its GM notes, on the entity as the actor renames it
    await _import(campaign, world("Vask Cinderhand", "Vask Emberhand"))
    assert (await campaign.graph.get_entity("Vask Cinderhand")).id == vask.id
    assert notes(await campaign.graph.relationships_of(vask.id, include_secret=True)) == expected
    assert await count(campaign, "entities") == 2  # Vask and his sword


async def test_an_actor_and_a_gm_journal_of_one_name_each_keep_their_own_gm_notes(campaign: CampaignMemory) -> None:
    """Vask's actor has GM notes and so does a GM-only journal of his name (one entity): both are kept, apart,
    whichever file is imported again; each record updates or ends only its own notes, an unchanged export changes
    nothing, and players read none of it."""

    def world(actor_notes: str, journal_notes: str) -> tuple[tuple[str, bytes], tuple[str, bytes]]:
        [(_, actor)] = _vask(actor_notes)
        content = f'<p>{journal_notes}</p><section class="secret"><p>Fears fire.</p></section>'
        page = {"_id": "p1", "name": "Page", "type": "text", "text": {"content": content}}
        journal = {"_id": "wjnl00000000000v", "name": "Vask the Ashen", "pages": [page], "ownership": {"default": 0}}
        return ("actors.db", actor + b"\n"), ("journal.db", json.dumps(journal).encode() + b"\n")

    async def notes() -> list[tuple[str, str | None]]:
        facts = await campaign.graph.relationships_of(vask.id, include_secret=True)
        return sorted((r.type, r.value) for r in facts if r.type.startswith("dm_notes"))

    actors, journal = world("Owes the Red Hand.", "He serves the lich.")
    await _import(campaign, [actors, journal])
    vask = await campaign.graph.get_entity("Vask the Ashen")
    lich = [("dm_notes_journal", "Fears fire."), ("dm_notes_journal_2", "He serves the lich.")]
    both = [("dm_notes", "Owes the Red Hand."), *lich]
    assert await notes() == both
    assert [r.type for r in await campaign.graph.relationships_of(vask.id)] == ["owns"]  # players: no notes

    for files in ([actors, journal], [actors], [journal], [journal, actors]):  # the same records, in any way
        batch, said = await _import(campaign, files)
        assert await notes() == both and said == "" and "GM notes it ends" not in batch.card()

    actors, journal = world("Paid the debt.", "He betrayed the lich.")
    await _import(campaign, [journal])  # only the journal's notes change
    betrayed = [("dm_notes_journal", "Fears fire."), ("dm_notes_journal_2", "He betrayed the lich.")]
    assert await notes() == [("dm_notes", "Owes the Red Hand."), *betrayed]
    await _import(campaign, [actors])
    assert await notes() == [("dm_notes", "Paid the debt."), *betrayed]

    actor = json.loads(actors[1])
    actor["system"]["details"]["biography"]["value"] = "<p>A smith.</p>"  # the actor's notes deleted in Foundry
    _, said = await _import(campaign, [("actors.db", json.dumps(actor).encode() + b"\n"), journal])
    assert await notes() == betrayed
    assert "- Vask the Ashen: fact dm_notes: ended (the GM notes were deleted)" in said
    assert [r.type for r in await campaign.graph.relationships_of(vask.id)] == ["owns"]


def test_the_cli_renames_an_entity_whose_record_was_renamed(
    lk: Callable[..., CompletedProcess[str]], tmp_path: Path
) -> None:
    assert lk("campaign", "create", "Tides").returncode == 0
    first = lk("campaign", "import", str(FIXTURES / "foundry_dnd5e_npc_v10.json"), "--accept")
    assert first.returncode == 0, first.stderr
    actor = json.loads((FIXTURES / "foundry_dnd5e_npc_v10.json").read_text())
    (tmp_path / "vask.json").write_text(json.dumps({**actor, "name": "Vask Emberhand"}))
    staged = lk("campaign", "import", str(tmp_path / "vask.json"))
    assert "- Vask Emberhand (npc) (renames Vask the Ashen)" in staged.stdout, staged.stderr
    accepted = lk("review", "accept", "b2")
    assert "- Vask Emberhand: renamed from Vask the Ashen" in accepted.stdout, accepted.stderr
    shown = lk("entity", "show", "Vask the Ashen")  # the old name finds it, as an alias
    assert shown.returncode == 0 and shown.stdout.startswith("Vask Emberhand (npc)"), shown.stderr
    listed = lk("entity", "list")
    assert listed.stdout.count("Vask") == 2  # one row: its name and the old one as its alias


async def test_a_merged_entity_keeps_the_records_it_was_imported_from(campaign: CampaignMemory) -> None:
    """The DM merges an imported entity into another: the tool's ids go with it, so the record renamed later renames
    the entity it is part of now, not a new one."""
    await _import(campaign, _vask("Owes the Red Hand."))
    await _import(campaign, [("party.csv", b"name,type\nVask Emberhand,npc\n")])
    await campaign.graph.merge_entities("Vask the Ashen", "Vask Emberhand")
    batch, _ = await _import(campaign, _vask("Owes the Red Hand.", name="Vask the Red"))
    assert "- Vask the Red (npc) (renames Vask Emberhand)" in batch.card()
    assert sorted((await campaign.graph.get_entity("Vask the Red")).aliases) == ["Vask Emberhand", "Vask the Ashen"]


async def test_a_world_imported_before_ids_were_kept_gets_them_when_imported_again(campaign: CampaignMemory) -> None:
    """A world imported by a version that kept no ids: imported again unchanged, the entities its batch made take
    their records' ids (not one the batch only updated), so a rename after that renames."""
    await campaign.add_entity(EntityIn(name="Emberbrand", type=EntityType.item, description="The DM's own sword."))
    await _import(campaign, _vask("Owes the Red Hand."))
    await campaign.db.execute("DELETE FROM entity_source_ids WHERE campaign_id = $1", campaign.campaign_id)
    await _import(campaign, _vask("Owes the Red Hand."))
    kept = await campaign.db.fetch("SELECT name FROM entity_source_ids WHERE campaign_id = $1", campaign.campaign_id)
    assert [r["name"] for r in kept] == ["Vask the Ashen"]  # Emberbrand was the DM's: never matched by an id
    batch, _ = await _import(campaign, _vask("Owes the Red Hand.", name="Vask Emberhand"))
    assert "- Vask Emberhand (npc) (renames Vask the Ashen)" in batch.card()


def _actors(count: int, renamed: int = 0) -> list[tuple[str, bytes]]:
    """A Foundry world's actors.db of ``count`` NPCs, the first ``renamed`` of them renamed in Foundry since."""
    lines = [
        json.dumps(
            {
                "_id": f"wact{i:012d}",
                "name": f"Sailor {i}" + (" the Bold" if i < renamed else ""),
                "type": "npc",
                "system": {},
                "items": [],
            }
        )
        for i in range(count)
    ]
    return [("actors.db", "\n".join(lines).encode())]


async def test_a_big_world_is_matched_in_as_many_queries_as_a_small_one(campaign: CampaignMemory) -> None:
    """Matching records to entities by their ids, and telling which entities an import made, take the same few
    queries for 40 records as for 4: a world of thousands re-imported in seconds, not one query a record."""

    async def queries(world: list[tuple[str, bytes]]) -> tuple[int, batches.Resolved]:
        async with campaign.transaction() as tx:
            sent: list[str] = []
            tx.db.add_query_logger(lambda record: sent.append(record.query))
            resolved = await batches.resolve(tx, read_import(world))
            return len([q for q in sent if "entity_source_ids" in q or "import_batches" in q]), resolved

    await _import(campaign, _actors(40))
    small, _ = await queries(_actors(4, renamed=2))
    big, resolved = await queries(_actors(40, renamed=20))
    assert small == big and len(resolved.renames) == 20
    assert resolved.renames["sailor 3 the bold"] == "Sailor 3" and "sailor 30" not in resolved.renames
    # a world imported before ids were kept: its entities told apart from the DM's in one scan of its batches
    await campaign.db.execute("DELETE FROM entity_source_ids WHERE campaign_id = $1", campaign.campaign_id)
    small, _ = await queries(_actors(4))
    big, resolved = await queries(_actors(40))
    assert small == big and len([s for s in resolved.sourced if s[2] is not None]) == 40


async def test_a_new_world_is_staged_in_a_few_queries_a_record(campaign: CampaignMemory) -> None:
    """Staging tries the load, and a big first import waited on its round trips (4,000 entities and their facts:
    about 25 s): each record's name is looked up once for the whole import, and a new entity or fact is written
    without reading it back or clearing names it never had."""

    def world(count: int) -> list[tuple[str, bytes]]:
        blade = {"_id": "m1", "name": "Blade", "type": "weapon", "system": {"rarity": "rare", "properties": ["mgc"]}}
        bio = "<p>A sailor.</p><section class='secret'><p>A spy.</p></section>"
        actors = [
            {
                "_id": f"wact{i:012d}",
                "name": f"Sailor {i}",
                "type": "npc",
                "system": {"details": {"biography": {"value": bio}}},
                "items": [{**blade, "name": f"Blade {i}"}],
            }
            for i in range(count)
        ]
        return [("actors.db", "\n".join(map(json.dumps, actors)).encode())]

    async def queries(count: int) -> int:
        async with campaign.transaction() as tx:
            sent: list[str] = []
            tx.db.add_query_logger(lambda record: sent.append(record.query))
            batch = await batches.stage(tx, read_import(world(count)))
            assert (batch.entities, batch.relationships) == (2 * count, 2 * count)  # each its blade and notes
            return len(sent)

    small, big = await queries(10), await queries(20)
    # an actor: two entities, two facts, its item's holder checked as any holder is (42 when each was read back)
    assert (big - small) / 10 <= 28


def _crew(trident: str, *others: str) -> list[tuple[str, bytes]]:
    """A Foundry world's actors.db: Ilse and Hale, the magic trident on ``trident``'s sheet; ``others`` more NPCs,
    each with a trident of their own."""
    item = {"_id": "itm1", "name": "Tidecaller Trident", "type": "weapon", "system": {"rarity": "rare"}}
    actors = [(f"wact00000000000{i}", name) for i, name in enumerate(("Captain Ilse", "Abbot Hale", *others))]
    lines = [
        json.dumps(
            {"_id": i, "name": n, "type": "npc", "system": {}, "items": [item] if n in (trident, *others) else []}
        )
        for i, n in actors
    ]
    return [("actors.db", "\n".join(lines).encode())]


async def test_an_item_moved_to_another_actor_is_no_longer_the_first_ones(campaign: CampaignMemory) -> None:
    """The DM moves the trident from Ilse's sheet to Hale's in Foundry: imported again, Hale owns it and Ilse no
    longer does (kept in her history), instead of both owning it. An owner the import does not read, and what the
    DM said by hand, stay."""
    await _import(campaign, _crew("Captain Ilse"))
    ilse, hale = await campaign.graph.get_entity("Captain Ilse"), await campaign.graph.get_entity("Abbot Hale")
    trident = await campaign.graph.get_entity("Tidecaller Trident")
    await campaign.graph.add_relationship(RelationshipIn(source_id=hale.id, type="wields", target_id=trident.id))

    def owners(facts: list[Relationship]) -> list[str]:
        return sorted(f.source_name for f in facts if f.type == "owns")

    _, said = await _import(campaign, _crew("Abbot Hale"))
    assert owners(await campaign.graph.relationships_of(trident.id)) == ["Abbot Hale"]
    assert owners(await campaign.graph.history(ilse.id)) == ["Captain Ilse"]
    assert "- Tidecaller Trident: fact owned_by: Captain Ilse → Abbot Hale" in said
    assert [r.type for r in await campaign.graph.relationships_of(hale.id)] == ["owns", "wields"]  # the DM's stays

    # only Ilse's sheet exported, without the trident: nothing says who has it now, Hale keeps it
    await _import(
        campaign,
        [
            (
                "ilse.json",
                json.dumps(
                    {"_id": "wact000000000000", "name": "Captain Ilse", "type": "npc", "system": {}, "items": []}
                ).encode(),
            )
        ],
    )
    assert owners(await campaign.graph.relationships_of(trident.id)) == ["Abbot Hale"]
    # a trident on two sheets: a kind many hold, each sheet's; Hale, whose sheet has none now, no longer owns one
    _, said = await _import(campaign, _crew("Captain Ilse", "Mara"))
    assert owners(await campaign.graph.relationships_of(trident.id)) == ["Captain Ilse", "Mara"]
    assert "- Abbot Hale: fact owns Tidecaller Trident: ended (another owns it now)" in said


async def test_an_item_on_several_sheets_of_one_import_is_each_ones(campaign: CampaignMemory) -> None:
    """Three sheets each with a "Longsword +1" (one entity of that name): a kind of item many hold, so all three own
    it, and a holder told in play adds to them instead of taking it from one. A sheet that drops it, imported again,
    no longer owns one."""
    batch, _ = await _import(campaign, _crew("Captain Ilse", "Mara", "Ser Tam"))
    assert not [s for s in batch.world.skipped if "Tidecaller" in s]
    g = campaign.graph
    trident, hale = await g.get_entity("Tidecaller Trident"), await g.get_entity("Abbot Hale")
    assert trident.attributes["held_by_many"] is True
    holders = [
        "Captain Ilse —owns→ Tidecaller Trident",
        "Mara —owns→ Tidecaller Trident",
        "Ser Tam —owns→ Tidecaller Trident",
    ]
    assert sorted(r.describe() for r in await g.relationships_of(trident.id)) == holders
    said = Provenance(source=Source.stated, confidence=0.5)
    fact, _ = await g.ensure_relationship(
        RelationshipIn(source_id=hale.id, type="has", target_id=trident.id, provenance=said)
    )
    assert (await campaign.review.accept(f"f{fact.id}")).settled() == ""
    assert len(await g.relationships_of(trident.id)) == 4
    tam = {"_id": "wact000000000003", "name": "Ser Tam", "type": "npc", "system": {}, "items": []}
    _, said = await _import(campaign, [*_crew("Captain Ilse", "Mara"), ("tam.json", json.dumps(tam).encode())])
    assert "- Ser Tam: fact owns Tidecaller Trident: ended (another owns it now)" in said
    now = sorted(r.describe() for r in await g.relationships_of(trident.id))
    assert now == ["Abbot Hale —has→ Tidecaller Trident", *holders[:2]]


async def test_an_item_the_dm_marks_held_by_many_keeps_each_holder_whatever_the_case(campaign: CampaignMemory) -> None:
    """``--attr held_by_many=True`` typed by hand: the graph's SQL compared 'true' exactly, so linking Vex to the
    dagger closed Grog's, though the rule in Python read it as held by many."""
    g = campaign.graph
    dagger = await campaign.add_entity(
        EntityIn(name="Silvered Dagger", type=EntityType.item, attributes={"held_by_many": "True"})
    )
    grog = await campaign.add_entity(EntityIn(name="Grog", type=EntityType.player))
    vex = await campaign.add_entity(EntityIn(name="Vex", type=EntityType.player))
    for holder in (grog, vex):
        await g.add_relationship(RelationshipIn(source_id=holder.id, type="has", target_id=dagger.id))
    assert sorted(r.describe() for r in await g.relationships_of(dagger.id)) == [
        "Grog —has→ Silvered Dagger",
        "Vex —has→ Silvered Dagger",
    ]


async def test_a_holder_told_in_play_closes_the_one_a_sheet_gave(campaign: CampaignMemory) -> None:
    """A sheet's "Captain Ilse owns the Tidecaller Trident", then "Abbot Hale has the Tidecaller Trident" heard and
    accepted: one current holder, Hale (``owns`` reads as ``has``), instead of two."""
    await _import(campaign, _crew("Captain Ilse"))
    g = campaign.graph
    hale, trident = await g.get_entity("Abbot Hale"), await g.get_entity("Tidecaller Trident")
    said = Provenance(source=Source.stated, confidence=0.5)
    fact, _ = await g.ensure_relationship(
        RelationshipIn(source_id=hale.id, type="has", target_id=trident.id, provenance=said)
    )
    assert (await campaign.review.accept(f"f{fact.id}")).settled() == "closed: Captain Ilse owns Tidecaller Trident"
    assert [r.describe() for r in await g.relationships_of(trident.id)] == ["Abbot Hale —has→ Tidecaller Trident"]


async def test_a_record_merged_into_an_entity_never_replaces_what_the_merge_kept(campaign: CampaignMemory) -> None:
    """The DM merges the actor "The Smith" into "Vask" (one NPC in Foundry twice), keeping Vask's words. The world
    imported again has both records, "The Smith" first: Vask keeps his own record's description and attributes."""

    def actor(i: int, name: str, bio: str, kind: str) -> str:
        details = {"biography": {"value": f"<p>{bio}</p>"}, "alignment": kind}
        return json.dumps(
            {"_id": f"wact00000000000{i}", "name": name, "type": "npc", "system": {"details": details}, "items": []}
        )

    smith, vask = actor(0, "The Smith", "Works the forge.", "Neutral"), actor(1, "Vask", "A smith.", "Lawful Evil")
    world = [("actors.db", f"{smith}\n{vask}".encode())]
    await _import(campaign, world)
    await campaign.graph.merge_entities("The Smith", "Vask")
    batch, _ = await _import(campaign, world)
    merged = await campaign.graph.get_entity("Vask")
    assert (merged.description, merged.attributes["alignment"]) == ("A smith.", "Lawful Evil")
    assert "- The Smith (npc) (Vask, unchanged): Works the forge." in batch.card()
    assert await count(campaign, "entities") == 1


async def test_an_accept_plans_against_the_campaign_as_it_is_once_it_may_write(
    pool: asyncpg.Pool, campaign: CampaignMemory
) -> None:
    """The DM adds "Vask Emberhand" by hand while a batch renaming Vask the Ashen to it is being accepted: the
    accept waits for the edit, then plans against it (Vask updated under his own name), instead of acting on what
    it read before and renaming him onto a name taken meanwhile."""
    await _import(campaign, _vask("Owes the Red Hand."))
    batch = await batches.stage(campaign, read_import(_vask("Owes the Red Hand.", name="Vask Emberhand")))
    assert "(renames Vask the Ashen)" in batch.card()
    async with pool.acquire() as conn:
        edit = conn.transaction()
        await edit.start()
        dm = CampaignMemory(conn, campaign.campaign_id)
        await dm.graph.lock()
        await dm.add_entity(EntityIn(name="Vask Emberhand", type=EntityType.npc, description="The DM's own."))
        accepting = asyncio.ensure_future(batches.accept(campaign, batch.ref))
        for _ in range(200):  # until the accept waits for the edit's lock
            if await pool.fetchval("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"):
                break
            assert not accepting.done(), accepting.result()
            await asyncio.sleep(0.025)
        await edit.commit()
    await accepting
    assert (await campaign.graph.get_entity("Vask the Ashen")).description == "A smith."
    assert (await campaign.graph.get_entity("Vask Emberhand")).description == "The DM's own."


def test_roll20_records_no_player_or_only_some_players_may_read_stay_the_dms(
    lk: Callable[..., CompletedProcess[str]], tmp_path: Path
) -> None:
    """A Roll20 NPC in no player's journal (the GM's hidden villain) reached players whole, and a handout shared
    with one player was everyone's: both are DM-only, the second said on the card (no per-player visibility)."""
    assert lk("campaign", "create", "Gullwake").returncode == 0
    campaign = {
        "characters": [
            {
                "id": "-C1",
                "name": "Morrow Thane",
                "inplayerjournals": "",
                "controlledby": "",
                "bio": "<p>The hidden lich beneath the Tithe Barrow.</p>",
                "gmnotes": "<p>He wants the bell.</p>",
            },
            {"id": "-C2", "name": "Quenna Vollard", "inplayerjournals": "all", "controlledby": "", "bio": "A baker."},
            {"id": "-C3", "name": "Brother Kessick", "controlledby": "", "bio": "A monk."},  # the field absent
            {"id": "-C4", "name": "Ysolde", "inplayerjournals": "-Plr1", "controlledby": "-Plr1", "bio": "A PC."},
        ],
        "handouts": [
            {"id": "-H1", "name": "Letter to Ysolde", "inplayerjournals": "-Plr1,-Plr2", "notes": "<p>She lives.</p>"},
        ],
    }
    (tmp_path / "r20.json").write_text(json.dumps(campaign))
    staged = lk("campaign", "import", str(tmp_path / "r20.json"))
    assert "- Morrow Thane (npc) (DM-only): The hidden lich" in staged.stdout, staged.stderr
    assert "assumed: DM-only, in some players' journals only" in staged.stdout
    assert "Letter to Ysolde" in staged.stdout.split("assumed: DM-only, in some players' journals only")[1]
    assert lk("review", "accept", "b1").returncode == 0
    for hidden in ("Morrow Thane", "Brother Kessick", "Letter to Ysolde"):
        shown = lk("entity", "show", hidden, "--as-player")
        assert shown.returncode != 0 and "lich" not in shown.stdout and "lives" not in shown.stdout, shown.stdout
        assert lk("entity", "show", hidden).returncode == 0  # the DM reads it
    for public in ("Quenna Vollard", "Ysolde"):  # in every journal, and a player's own character
        assert lk("entity", "show", public, "--as-player").returncode == 0


def test_a_hidden_roll20_npcs_magic_items_stay_the_dms(
    lk: Callable[..., CompletedProcess[str]], tmp_path: Path
) -> None:
    """A Roll20 NPC in no player's journal was DM-only, but the magic items of its inventory, their text and its
    ``owns`` facts were every player's: they are the DM's too, said on the card; an item a public sheet also holds
    stays public."""

    def sheet(name: str, journals: str, items: dict[str, str]) -> dict[str, Any]:
        attribs = []
        for row, (item, content) in enumerate(items.items()):
            attribs += [
                {"name": f"repeating_inventory_-R{row}_itemname", "current": item},
                {"name": f"repeating_inventory_-R{row}_itemcontent", "current": content},
            ]
        return {
            "id": f"-{name[:3]}",
            "name": name,
            "inplayerjournals": journals,
            "controlledby": "",
            "attribs": attribs,
        }

    assert lk("campaign", "create", "Gullwake").returncode == 0
    crown = "Requires attunement. Holds the soul of the hidden lich; he plans to betray the duke."
    characters = [
        sheet("Vorgath", "", {"Phylactery Crown": crown, "Dagger +1": "A keen blade."}),
        sheet("Quenna Vollard", "all", {"Dagger +1": "A keen blade."}),
    ]
    (tmp_path / "r20.json").write_text(json.dumps({"characters": characters}))
    staged = lk("campaign", "import", str(tmp_path / "r20.json"))
    assert "- Phylactery Crown (item) (DM-only)" in staged.stdout, staged.stdout
    assert "Phylactery Crown" in staged.stdout.split("assumed: DM-only with the NPC in no player's journal")[1]
    assert lk("review", "accept", "b1").returncode == 0
    shown = lk("entity", "show", "Phylactery Crown", "--as-player")
    assert shown.returncode != 0 and "lich" not in shown.stdout, shown.stdout
    assert "lich" in lk("entity", "show", "Phylactery Crown").stdout  # the DM reads it
    dagger = lk("entity", "show", "Dagger +1", "--as-player")
    assert dagger.returncode == 0 and "Vorgath" not in dagger.stdout, dagger.stdout  # public, its hidden owner not
    recalled = lk("recall", "phylactery crown soul of the lich", "--as-player")
    assert "lich" not in recalled.stdout and "Vorgath" not in recalled.stdout, recalled.stdout


async def test_a_private_kanka_records_links_stay_secret_merged_into_a_public_entity(campaign: CampaignMemory) -> None:
    """A private Kanka character and a public journal of her name make one public entity (the rumour players know),
    but the private record's relations and links were public facts: "Lady Nightshade leads The Thorn Circle"."""
    nightshade = {
        "id": 91,
        "entity_id": 901,
        "name": "Lady Nightshade",
        "entry": "<p>The poisoner.</p>",
        "is_private": True,
        "location_id": 5,
        "entity": {
            "id": 901,
            "relations": [{"id": 950, "owner_id": 901, "target_id": 902, "relation": "Leader of", "visibility_id": 1}],
        },
    }
    rumour = {"id": 92, "entity_id": 903, "name": "Lady Nightshade", "entry": "<p>A masked lady.</p>"}
    circle = {"id": 93, "entity_id": 902, "name": "The Thorn Circle", "entry": "<p>A secret society.</p>"}
    docks = {"id": 5, "entity_id": 905, "name": "The Docks", "entry": "<p>Wet.</p>"}
    batch, _ = await _import(
        campaign,
        [
            (f"{module}.json", json.dumps({"data": [record]}).encode())
            for module, record in (
                ("characters", nightshade),
                ("journals", rumour),
                ("organisations", circle),
                ("locations", docks),
            )
        ],
    )
    assert "3 facts, 3 of them DM-only" in batch.card()  # the leader_of, located_in and her GM notes
    lady = await campaign.graph.get_entity("Lady Nightshade")
    assert lady.visibility == Visibility.public and lady.description == "A masked lady."
    for name in ("Lady Nightshade", "The Thorn Circle", "The Docks"):
        entity = await campaign.graph.get_entity(name)
        assert await campaign.graph.relationships_of(entity.id) == [], name  # what players read
    secret = await campaign.graph.relationships_of(lady.id, include_secret=True)
    assert {r.type for r in secret} >= {"leader_of", "located_in"}


def _kanka(private: bool) -> list[tuple[str, bytes]]:
    mirelle = {"id": 1, "entity_id": 101, "name": "Mirelle", "entry": "<p>Smuggler.</p>", "is_private": private}
    return [("characters.json", json.dumps({"data": [mirelle]}).encode())]


async def test_a_record_made_private_in_the_tool_makes_its_entity_secret_and_public_again(
    campaign: CampaignMemory,
) -> None:
    """Mirelle made private in Kanka and imported again: the card said "(DM-only) (unchanged)", and accepting left
    her whole description public (copied into secret GM notes besides). The entity follows the record when the
    import set its visibility; shared again, it is public once the DM accepts what the card says."""
    await _import(campaign, _kanka(private=False))
    async with campaign.transaction() as tx:
        batch = await batches.stage(tx, read_import(_kanka(private=True)))
    card = batch.card()
    assert "1 entity (0 new, 1 updated)" in card and "- Mirelle (npc) (DM-only from now: made private in kanka)" in card
    _, report = await batches.accept(campaign, batch.ref)
    mirelle = await campaign.graph.get_entity("Mirelle")
    assert mirelle.visibility == Visibility.secret and report.entities_updated == 1
    assert await campaign.graph.relationships_of(mirelle.id, include_secret=True) == []  # no copy as GM notes

    batch, _ = await _import(campaign, _kanka(private=False))
    assert "- Mirelle (npc) (public once accepted: shared again in kanka)" in batch.card()
    assert (await campaign.graph.get_entity("Mirelle")).visibility == Visibility.public

    # hidden here by the DM, the record public as it was: who may see it stays as the DM set it
    await campaign.graph.update_entity("Mirelle", visibility=Visibility.secret)
    batch, _ = await _import(campaign, _kanka(private=False))
    assert "- Mirelle (npc) (DM-only) (unchanged)" in batch.card()
    assert (await campaign.graph.get_entity("Mirelle")).visibility == Visibility.secret


async def test_an_entity_whose_gm_notes_an_import_ends_is_updated_not_unchanged(campaign: CampaignMemory) -> None:
    """GM notes deleted in the tool: the card said `(0 new, 0 updated, 2 unchanged)` and `Vask the Ashen (npc)
    (unchanged)` just above the notes it ends."""
    await _import(campaign, _vask("Owes the Red Hand."))
    batch, _ = await _import(campaign, _vask(""))
    card = batch.card()
    assert "2 entities (0 new, 1 updated, 1 unchanged)" in card, card
    assert "- Vask the Ashen (npc) (updates the entity of that name)" in card
    assert "Vask the Ashen: fact dm_notes: ended (the GM notes were deleted)" in card


def test_a_number_in_a_secret_name_is_not_masked_alone(
    lk: Callable[..., CompletedProcess[str]], tmp_path: Path
) -> None:
    """Private villagers "Villager 1900 of Brackwater" hid every "1900" players read (a year, a price), and the
    accept warned "Players will read [secret] for every “1900” said": a number names no one alone."""
    assert lk("campaign", "create", "Bigworld").returncode == 0
    rows = (
        "name,type,secret,description\nVillager 1900 of Brackwater,npc,true,A spy.\n"
        'Market Price List,concept,false,"The ferry was built in 1900; a cloak costs 1910 gold."\n'
        "Villager 1910 of Brackwater,npc,true,Another spy.\n"
    )
    (tmp_path / "world.csv").write_text(rows)
    accepted = lk("campaign", "import", str(tmp_path / "world.csv"), "--accept")
    assert accepted.returncode == 0 and "“1900”" not in accepted.stdout + accepted.stderr, accepted.stdout
    shown = lk("entity", "show", "Market Price List", "--as-player")
    assert "The ferry was built in 1900; a cloak costs 1910 gold." in shown.stdout, shown.stdout
    assert lk("entity", "show", "Villager 1900 of Brackwater", "--as-player").returncode != 0


def test_only_a_secret_persons_first_and_last_names_are_masked_alone(
    lk: Callable[..., CompletedProcess[str]], tmp_path: Path
) -> None:
    """A secret handout "Lich Dossier" hid every "lich" players read, a place "Tithe Barrow" every "barrow", a
    faction "Ember Covenant" every "covenant" and "embers": only a person is called by a word of the name alone
    (players guess "Holt"), as the mention index reads names; any other secret name is hidden whole."""
    assert lk("campaign", "create", "Reeds").returncode == 0
    said = "The hidden lich sleeps in a barrow by the tithe stone; a covenant of embers meets at the Tithe Barrow."
    rows = (
        "name,type,secret,description\nVaskerrin Holt,npc,true,A spy.\nLich Dossier,concept,true,The DM's notes.\n"
        "Tithe Barrow,location,true,A crypt.\nEmber Covenant,faction,true,A cult.\n"
        f'Notice Board,item,false,"{said} Holt was seen, and Vaskerrin too."\n'
    )
    (tmp_path / "world.csv").write_text(rows)
    accepted = lk("campaign", "import", str(tmp_path / "world.csv"), "--accept")
    warned = [line for line in accepted.stdout.splitlines() if "Players will read [secret]" in line]
    assert accepted.returncode == 0 and warned == [
        "Players will read [secret] for every “holt” said, in any sense (as it hides the secret name)."
    ], accepted.stdout
    shown = lk("entity", "show", "Notice Board", "--as-player").stdout
    player = said.replace("the Tithe Barrow", "the [secret]") + " [secret] was seen, and [secret] too."
    assert player in shown, shown
    (tmp_path / "night.txt").write_text("DM: A lich stirs in the barrow, and Holt flees the covenant.\n")
    assert lk("ingest", str(tmp_path / "night.txt"), "--session", "Night 1", "--wait").returncode == 0
    found = lk("recall", "lich stirs", "--mode", "fulltext", "--as-player").stdout
    assert "A lich stirs in the barrow, and [secret] flees the covenant." in found, found
    assert "nothing found" in lk("recall", "Holt", "--mode", "fulltext", "--as-player").stdout
