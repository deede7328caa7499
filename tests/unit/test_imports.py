"""Imports from Foundry VTT, Roll20, Kanka and CSV: real-format fixtures read into campaign-file entries, formats told
from content, and every bad file refused once, naming file, record and field."""

from __future__ import annotations

import codecs
import io
import json
import sys
import zipfile
from pathlib import Path

import pytest

from campaigns.imports import MAX_IMPORT_BYTES, ImportedWorld, ImportFileError, detect_format, foundry, read_import
from campaigns.imports.common import html_to_text, js_unescape
from campaigns.schema import EntitySpec
from memory.models import EntityType
from tests.integration import foundry_v11

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "imports"


def imported(*paths: str, format: str | None = None) -> ImportedWorld:
    files = [FIXTURES / p for p in paths]
    return read_import([(p.name, p.read_bytes()) for p in files], format)  # type: ignore[arg-type]


def entity(world: ImportedWorld, name: str) -> EntitySpec:
    return next(e for e in world.entities if e.name == name)


def facts(world: ImportedWorld) -> set[tuple[str, str, str | None, bool]]:
    return {(r.source, r.type, r.target or r.value, r.secret) for r in world.relationships}


def refused(files: list[tuple[str, bytes]], format: str | None = None) -> str:
    with pytest.raises(ImportFileError) as caught:
        read_import(files, format)  # type: ignore[arg-type]
    return str(caught.value)


# ------------------------------------------------------------------------------------------------ Foundry


def test_foundry_v10_actor_with_its_notable_items_and_secret_block() -> None:
    world = imported("foundry_dnd5e_npc_v10.json")
    assert world.format == "foundry"
    vask = entity(world, "Vask the Ashen")
    assert vask.type is EntityType.npc and not vask.secret
    # HTML to plain text; the secret block is not in the public description
    assert vask.description == "A soot-stained smith of Cindergate who sells blades to anyone."
    assert vask.attributes["creature_type"] == "humanoid" and vask.attributes["challenge"] == "2"
    # the magic sword is an item it owns; the mundane longsword, the feat and the spell stay on the sheet
    assert [e.name for e in world.entities] == ["Vask the Ashen", "Emberbrand"]
    assert facts(world) == {
        ("Vask the Ashen", "owns", "Emberbrand", False),
        ("Vask the Ashen", "dm_notes", "Secretly forges weapons for the Red Hand.", True),
    }
    assert any("3 mundane items" in s for s in world.skipped)


def test_a_dnd5e_public_biography_is_what_players_read_of_an_npc() -> None:
    """dnd5e's ``biography.public`` is the text shown to players who do not own the actor: an NPC's description,
    its full ``biography.value`` GM notes; alone, it still arrives. A player's own sheet is read whole."""

    def actor(kind: str, value: str) -> ImportedWorld:
        bio = {"value": value, "public": "<p>A cloaked stranger.</p>"}
        doc = {"name": "Hooded Figure", "type": kind, "system": {"details": {"biography": bio}}, "prototypeToken": {}}
        return read_import([("a.json", json.dumps(doc).encode())])

    alone = actor("npc", "")
    assert entity(alone, "Hooded Figure").description == "A cloaked stranger." and alone.relationships == []
    both = actor("npc", "<p>The lich's spy.</p>")
    assert entity(both, "Hooded Figure").description == "A cloaked stranger."
    assert facts(both) == {("Hooded Figure", "dm_notes", "The lich's spy.", True)}
    player = actor("character", "<p>Raised by wolves.</p>")
    assert entity(player, "Hooded Figure").description == "Raised by wolves." and player.relationships == []


def test_an_unidentified_dnd5e_item_is_what_players_know_of_it() -> None:
    """dnd5e's ``identified: false``: players see the unidentified name and text; the true name, rarity and text
    are GM notes. Without an unidentified name there is nothing players may call it: the item is DM-only."""
    ring = {
        "name": "Ring of Spite",
        "type": "equipment",
        "system": {
            "identified": False,
            "unidentified": {"name": "Plain Ring", "description": "<p>A plain iron ring.</p>"},
            "description": {"value": "<p>Cursed: the wearer betrays friends.</p>"},
            "rarity": "rare",
        },
    }
    world = read_import([("ring.json", json.dumps(ring).encode())])
    [plain] = world.entities
    assert (plain.name, plain.description, plain.secret, plain.attributes) == (
        "Plain Ring",
        "A plain iron ring.",
        False,
        {"foundry_type": "equipment"},
    )
    assert facts(world) == {
        ("Plain Ring", "dm_notes", "Identified: Ring of Spite\nrarity: rare\nCursed: the wearer betrays friends.", True)
    }
    ring["system"]["unidentified"] = {"name": "", "description": ""}  # type: ignore[index]
    [unnamed] = read_import([("ring.json", json.dumps(ring).encode())]).entities
    assert (unnamed.name, unnamed.secret) == ("Ring of Spite", True)


def test_an_unidentified_pf2e_item_is_what_players_know_of_it() -> None:
    """pf2e keeps the same idea in ``identification``: ``status: "unidentified"``, and what players see in
    ``unidentified.name`` and ``unidentified.data.description``. Public only as that, its true name, rarity and text
    GM notes, on its own or on an actor's sheet; identified, it is itself; with no unidentified name, DM-only."""
    band = {
        "_id": "pf2eit0000000002",
        "name": "Band of the Drowned Oath",
        "type": "equipment",
        "img": "icons/equipment/finger/ring-band-thin-gold.webp",
        "system": {
            "description": {"value": "<p>The wearer cannot lie to the tide's priests.</p>", "gm": ""},
            "rules": [],
            "slug": "band-of-the-drowned-oath",
            "traits": {"rarity": "uncommon", "value": ["invested", "magical"], "otherTags": []},
            "level": {"value": 6},
            "quantity": 1,
            "price": {"value": {"gp": 230}},
            "equipped": {"carryType": "worn", "invested": None},
            "usage": {"value": "worn-ring"},
            "identification": {
                "status": "unidentified",
                "unidentified": {
                    "name": "Green Copper Band",
                    "img": "systems/pf2e/icons/unidentified_item_icons/adventuring_gear.webp",
                    "data": {"description": {"value": "<p>A band green with verdigris.</p>"}},
                },
                "misidentified": {},
            },
        },
    }
    world = read_import([("band.json", json.dumps(band).encode())])
    [green] = world.entities
    assert (green.name, green.description, green.secret, green.attributes) == (
        "Green Copper Band",
        "A band green with verdigris.",
        False,
        {"foundry_type": "equipment"},
    )
    true = "Identified: Band of the Drowned Oath\nrarity: uncommon\nThe wearer cannot lie to the tide's priests."
    assert facts(world) == {("Green Copper Band", "dm_notes", true, True)}

    actor = json.loads((FIXTURES / "foundry_pf2e_npc.json").read_text())
    actor["items"].append(band)
    owned = read_import([("npc.json", json.dumps(actor).encode())])
    assert ("Band of the Drowned Oath" not in {e.name for e in owned.entities}) and entity(owned, "Green Copper Band")
    assert (actor["name"], "owns", "Green Copper Band", False) in facts(owned)

    band["system"]["identification"]["status"] = "identified"  # type: ignore[index]
    [known] = read_import([("band.json", json.dumps(band).encode())]).entities
    assert (known.name, known.attributes["rarity"], known.secret) == ("Band of the Drowned Oath", "uncommon", False)
    band["system"]["identification"] = {"status": "unidentified", "unidentified": {"name": ""}}  # type: ignore[index]
    [unnamed] = read_import([("band.json", json.dumps(band).encode())]).entities
    assert (unnamed.name, unnamed.secret) == ("Band of the Drowned Oath", True)


def test_foundry_v9_data_layout_item() -> None:
    world = imported("foundry_v9_item.json")
    lantern = entity(world, "Lantern of Whispers")
    assert lantern.type is EntityType.item and lantern.description == "Its flame bends toward lies."
    assert lantern.attributes["rarity"] == "uncommon"


def test_pf2e_private_notes_and_gm_descriptions_stay_dm_only() -> None:
    world = imported("foundry_pf2e_npc.json")
    oriel = entity(world, "Magistrate Oriel")
    assert oriel.description == "Keeps order in Saltmere with a velvet glove."
    assert "bribes" not in oriel.description and oriel.attributes["level"] == "4"
    assert facts(world) == {
        ("Magistrate Oriel", "dm_notes", "Takes bribes from the smugglers' guild.", True),
        ("Signet of Saltmere", "dm_notes", "Opens the vault.", True),
        ("Magistrate Oriel", "owns", "Signet of Saltmere", False),  # invested/magical: notable; the dagger is not
    }


def test_foundry_world_nedb_files_folders_and_manifest() -> None:
    world = imported(
        *(f"foundry_world/{n}" for n in ("actors.db", "folders.db", "journal.db", "scenes.db", "world.json"))
    )
    kinds = {e.name: e.type for e in world.entities}
    assert kinds == {
        "Captain Ilse": EntityType.player,
        "Brother Hale": EntityType.npc,  # the later line of its _id renamed "Old Name"
        "The Drowned Ship": EntityType.item,  # a vehicle
        "The Pact of Tides": EntityType.concept,
        "Hale's Confession": EntityType.concept,
        "A Map Page": EntityType.concept,
        "Saltmere Docks": EntityType.location,
    }  # no folder, no deleted goblin, no manifest
    assert "The sea takes one ship a year." in entity(world, "The Pact of Tides").description
    assert "broken" not in entity(world, "The Pact of Tides").description  # a GM-only page
    assert entity(world, "Hale's Confession").secret  # players cannot see the entry
    assert entity(world, "Saltmere Docks").aliases == ["The Docks"]
    assert any("manifest" in s for s in world.skipped)
    assert world.sources == ["actors.db", "journal.db", "scenes.db"]  # no folder, no manifest


def test_compendium_sources_skip_folders() -> None:
    world = imported("packs/_source/_folder.json", "packs/_source/whispering-lantern.json")
    assert [e.name for e in world.entities] == ["Lantern of Whispers"]


def test_compendium_sources_written_as_yaml() -> None:
    world = imported("packs/_source/tide-priest.yml")
    assert world.format == "foundry"
    assert [(e.name, e.type) for e in world.entities] == [("Tide Priest", "npc"), ("Conch of Calling", "item")]
    assert [(r.source, r.type, r.target) for r in world.relationships] == [("Tide Priest", "owns", "Conch of Calling")]


def leveldb(folder: Path, entries: dict[str, dict[str, object]]) -> list[tuple[str, bytes]]:
    """A LevelDB folder as Foundry v11+ writes one (``!actors!<id>``, JSON values), and the files an import reads."""
    foundry_v11.leveldb(folder, entries)
    return [(str(p), p.read_bytes()) for p in sorted(folder.iterdir()) if p.name not in ("LOCK", "LOG")]


PACK = {
    "!actors!tidepriest000001": {
        "_id": "tidepriest000001",
        "name": "Tide Priest",
        "type": "npc",
        "system": {"details": {"biography": {"value": "<p>Keeps the bell.</p>"}}},
        "items": ["conch00000000001", "mace000000000001"],
        "prototypeToken": {"name": "Tide Priest"},
    },
    "!actors.items!tidepriest000001.conch00000000001": {
        "_id": "conch00000000001",
        "name": "Conch of Calling",
        "type": "equipment",
        "system": {"rarity": "rare", "description": {"value": "<p>Calls the tide.</p>"}},
    },
    "!actors.items!tidepriest000001.mace000000000001": {"_id": "mace000000000001", "name": "Mace", "type": "weapon"},
    "!folders!folder0000000001": {"_id": "folder0000000001", "name": "Priests", "type": "Actor"},
}


def test_a_leveldb_pack_is_read_with_its_embedded_documents(tmp_path: Path) -> None:
    """A v11+ compendium pack: the actor's items are stored apart (``!actors.items!<actor>.<item>``), the actor
    listing their ids; read together, as the ``.db`` file held them, every rule of the Foundry mapping applies."""
    world = read_import(leveldb(tmp_path / "packs" / "priests", PACK))
    assert world.format == "foundry" and world.sources == [str(tmp_path / "packs" / "priests")]
    assert [(e.name, e.type, e.description) for e in world.entities] == [
        ("Tide Priest", "npc", "Keeps the bell."),
        ("Conch of Calling", "item", "Calls the tide."),  # the mace is mundane: left on the sheet
    ]
    assert facts(world) == {("Tide Priest", "owns", "Conch of Calling", False)}
    assert world.source_ids["Conch of Calling"] == {"Actor.tidepriest000001.Item.conch00000000001": "Conch of Calling"}
    assert any("1 folders (not entities)" in s for s in world.skipped)


def test_the_nedb_file_foundry_migrated_and_kept_is_left_out(tmp_path: Path) -> None:
    """Foundry v11+ migrates ``packs/priests.db`` to the LevelDB folder ``packs/priests/`` and keeps the old file
    beside it: read too, its stale names would come back as second entities of the same ids."""
    stale = {**PACK["!actors!tidepriest000001"], "name": "Priest of the Tide", "items": []}
    old = (str(tmp_path / "packs" / "priests.db"), json.dumps(stale).encode() + b"\n")
    world = read_import([old, *leveldb(tmp_path / "packs" / "priests", PACK)])
    assert [e.name for e in world.entities] == ["Tide Priest", "Conch of Calling"]
    assert f"{old[0]}: the NeDB file Foundry migrated to priests/ (read instead)" in world.skipped
    assert world.sources == [str(tmp_path / "packs" / "priests")]


def test_the_sources_are_the_files_and_folders_that_gave_something(tmp_path: Path) -> None:
    """A world's folders DB (or manifest) gives no entity: the card and each fact's history name only what did,
    not a folder that pushes the journal, which gave the most, past the card's clipped list."""
    data = tmp_path / "data"
    actors = leveldb(data / "actors", {"!actors!tidepriest000001": PACK["!actors!tidepriest000001"]})
    folders = leveldb(data / "folders", {"!folders!folder0000000001": PACK["!folders!folder0000000001"]})
    journal = leveldb(
        data / "journal",
        {"!journal!pact000000000001": {"_id": "pact000000000001", "name": "The Pact of Tides", "pages": []}},
    )
    world = read_import([*actors, *folders, *journal])
    assert [e.name for e in world.entities] == ["Tide Priest", "The Pact of Tides"]
    assert world.sources == [str(data / "actors"), str(data / "journal")]
    assert any("1 folders (not entities)" in s for s in world.skipped)  # said apart
    only = read_import(folders)  # nothing read at all: still said where it came from
    assert only.sources == [str(data / "folders")] and not only.entities


def test_a_zipped_leveldb_folder_is_read(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for file, data in leveldb(tmp_path / "priests", PACK):
            archive.writestr(f"priests/{Path(file).name}", data)
        archive.writestr("priests/LOCK", b"")  # Foundry's lock: not read
    world = read_import([("world.zip", buffer.getvalue())])
    assert [e.name for e in world.entities] == ["Tide Priest", "Conch of Calling"]
    assert world.sources == ["world.zip/priests"]


def test_a_leveldb_folder_not_foundrys_or_damaged_is_refused_naming_it(tmp_path: Path) -> None:
    other = leveldb(tmp_path / "other", {"user:1": {"name": "Ana"}})  # another program's, in JSON too
    assert refused(other).startswith(f"{tmp_path / 'other'}: a LevelDB folder, but not Foundry's: its entry b'user:1'")
    damaged = [(f, b"garbage" if "MANIFEST" in f else data) for f, data in leveldb(tmp_path / "pack", PACK)]
    assert refused(damaged).startswith(f"{tmp_path / 'pack'}: a damaged LevelDB folder (Corruption:")
    assert "import the whole folder" in refused([("000005.ldb", b"\x00\x01\x02binary")])
    assert "a Foundry v11+ LevelDB folder, not csv" in refused(leveldb(tmp_path / "csv", PACK), "csv")


def test_a_leveldb_folder_without_plyvel_says_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """plyvel has wheels for x86-64 Linux only: elsewhere it may be missing, and the DM is told what to do."""
    files = leveldb(tmp_path / "pack", PACK)
    monkeypatch.setitem(sys.modules, "plyvel", None)
    message = refused(files)
    assert message.startswith(f"{tmp_path / 'pack'}: a Foundry v11+ LevelDB folder, which needs the plyvel package")


def test_a_journal_page_inheriting_its_entrys_ownership_is_public() -> None:
    """Foundry writes ``"ownership": {"default": -1}`` (INHERIT) on every page it exports: a page players may read
    through its entry, whose text is the entity's description, not DM notes."""
    page = {"_id": "p1", "name": "Bell", "type": "text", "ownership": {"default": -1}}
    pages = [
        {**page, "text": {"format": 1, "content": "<p>It rings at low tide.</p>"}},
        {
            **page,
            "_id": "p2",
            "name": "GM",
            "text": {"content": "<p>It wakes the drowned.</p>"},
            "ownership": {"default": 0},
        },
    ]
    doc = {"_id": "j1", "name": "The Sunken Bell", "pages": pages, "ownership": {"default": 2}, "folder": None}
    world = read_import([("bell.json", json.dumps(doc).encode())])
    bell = entity(world, "The Sunken Bell")
    assert "It rings at low tide." in bell.description and not bell.secret
    assert facts(world) == {("The Sunken Bell", "dm_notes_journal", "GM\nIt wakes the drowned.", True)}


def test_a_single_page_journals_page_title_is_not_a_line_of_its_description() -> None:
    """A journal of one page got that page's title as a bare first line ("x\nZoë & Łukasz …", the card showing
    ": x"): one page is the entry, whatever it is titled. Several pages keep their titles, each over its text."""
    page = {"_id": "p3", "name": "x", "type": "text", "text": {"content": "<p>Zoë &amp; Łukasz meet here.</p>"}}
    doc = {"_id": "j2", "name": "Café Ünïcødé 東京", "pages": [page], "ownership": {"default": 2}}
    world = read_import([("cafe.json", json.dumps(doc).encode())])
    assert entity(world, "Café Ünïcødé 東京").description == "Zoë & Łukasz meet here."
    second = {**page, "_id": "p4", "name": "Menu", "text": {"content": "<p>Tea.</p>"}}
    world = read_import([("cafe.json", json.dumps({**doc, "pages": [page, second]}).encode())])
    assert entity(world, "Café Ünïcødé 東京").description == "x\nZoë & Łukasz meet here.\n\nMenu\nTea."


def test_a_journal_exported_without_ownership_is_dm_only_and_the_card_says_so() -> None:
    """Foundry's "Export Data" drops ``ownership`` (and ``_id``): nothing says players may read the journal, and
    Foundry's own default is NONE, so it is secret, and the import says what it assumed."""
    page = {"name": "Secret", "type": "text", "text": {"content": "<p>Vask is Szass Tam.</p>"}, "ownership": {}}
    doc = {"name": "The Lich's True Name", "pages": [page], "flags": {"exportSource": {"coreVersion": "12.331"}}}
    world = read_import([("lich.json", json.dumps(doc).encode())])
    lich = entity(world, "The Lich's True Name")
    assert lich.secret and "Vask is Szass Tam." in lich.description
    assert world.assumed[foundry.NO_OWNERSHIP] == ["The Lich's True Name"]
    shared = read_import([("lich.json", json.dumps({**doc, "ownership": {"default": 2}}).encode())])
    assert not entity(shared, "The Lich's True Name").secret and foundry.NO_OWNERSHIP not in shared.assumed


def test_a_document_exported_without_its_id_says_a_rename_will_make_a_new_entity() -> None:
    """ "Export Data" drops ``_id``: a rename in Foundry cannot be followed, and the card says so; a world's .db
    documents have their ids and say nothing."""
    actor = {"name": "Brother Hale", "type": "npc", "system": {}, "prototypeToken": {}, "items": []}
    world = read_import([("hale.json", json.dumps(actor).encode())])
    assert world.assumed == {foundry.NO_ID: ["Brother Hale"]}
    assert imported("foundry_world/actors.db", "foundry_world/journal.db").assumed == {}


def test_foundry_links_and_inline_rolls_read_as_foundry_shows_them() -> None:
    """A journal written in Foundry links documents (@UUID[…]{label}) and rolls inline ([[/r 2d6]]): the entity's
    text says what Foundry shows, not the markup."""
    content = (
        "<p>Ask @UUID[Actor.wact000000000002]{Brother Hale} about @UUID[JournalEntry.Ab3dEf6hIj9kLm0n]. "
        "The trap deals [[/r 2d6]]{2d6 fire} damage for [[1d4]] rounds; see &amp;Reference[prone].</p>"
        '<section class="secret"><p>@UUID[Actor.wact000000000009]{Vaskerrin} rang it.</p></section>'
    )
    page = {"_id": "p1", "name": "Bell", "type": "text", "text": {"content": content}}
    doc = {"_id": "j1", "name": "The Sunken Bell", "pages": [page], "ownership": {"default": 2}}
    world = read_import([("bell.json", json.dumps(doc).encode())])
    assert entity(world, "The Sunken Bell").description == (
        "Ask Brother Hale about. The trap deals 2d6 fire damage for 1d4 rounds; see prone."
    )
    assert facts(world) == {("The Sunken Bell", "dm_notes_journal", "Vaskerrin rang it.", True)}


def test_a_gm_only_journal_named_like_a_public_actor_stays_gm_only() -> None:
    """A world often holds an NPC's actor and the GM's journal of the same name: one entity, public as the actor
    is, and the journal's text GM notes, never its description (whichever file is read first); both records'
    GM notes are kept, the second's after the first's."""
    actor = {
        "_id": "a1",
        "name": "Brother Hale",
        "type": "npc",
        "system": {
            "details": {"biography": {"value": '<p>A monk.</p><section class="secret"><p>A liar.</p></section>'}}
        },
        "items": [],
    }
    page = {"_id": "p1", "name": "Brother Hale", "type": "text", "text": {"content": "<p>He sank the first ship.</p>"}}
    journal = {"_id": "j1", "name": "Brother Hale", "pages": [page], "ownership": {"default": 0}}
    for order in ([actor, journal], [journal, actor]):
        world = read_import([(f"{d['_id']}.json", json.dumps(d).encode()) for d in order])
        hale = entity(world, "Brother Hale")
        assert (len(world.entities), hale.type, hale.description, hale.secret) == (1, "npc", "A monk.", False), order
        notes = [r.value or "" for r in world.relationships if r.type.startswith("dm_notes") and r.secret]
        assert "A liar." in " ".join(notes) and "He sank the first ship." in " ".join(notes), order
        assert len(notes) == len(world.relationships)  # dm_notes_2 after dm_notes: neither dropped


# ------------------------------------------------------------------------------------------------ Roll20


def test_roll20_vttes_character() -> None:
    world = imported("roll20_vttes_character.json")
    assert world.format == "roll20"
    pip = entity(world, "Pip Thistledown")
    assert pip.type is EntityType.npc  # nobody controls it
    assert pip.description == "A halfling fence who’s always smiling. Café regular."  # %u2019 and %E9 unescaped
    assert pip.aliases == ["Pip"]  # the token's name, from the JSON inside a string
    assert pip.attributes["tags"] == ["fence", "cindergate"] and pip.attributes["class"] == "Rogue"
    assert facts(world) == {
        ("Pip Thistledown", "dm_notes", "Informant for the city watch.", True),
        ("Pip Thistledown", "owns", "Cloak of Elvenkind", False),
        ("Pip Thistledown", "owns", "Dagger +1", False),
    }  # thieves' tools are mundane


def test_a_roll20_mundane_shield_is_not_notable_for_its_ac_bonus() -> None:
    """The 5e OGL sheet writes a plain shield's modifiers as "AC +2": a bonus counts in the item's name only."""
    rows = {"-Ma_itemname": "Shield", "-Ma_itemmodifiers": "Item Type: Shield, AC +2", "-Mb_itemname": "Mace +1"}
    attribs = [{"name": f"repeating_inventory_{k}", "current": v, "max": "", "id": k} for k, v in rows.items()]
    doc = {"schema_version": 3, "name": "Brannoc", "bio": "", "controlledby": "-Mp1", "attribs": attribs}
    world = read_import([("brannoc.json", json.dumps(doc).encode())])
    assert facts(world) == {("Brannoc", "owns", "Mace +1", False)}


def test_a_record_named_by_another_records_alias_is_that_entity() -> None:
    """Roll20 makes a token's name an alias ("Vex" of Vex'ahlia); a handout titled "Vex" is then her, not a second
    entity the campaign file refuses; an alias that is another record's name stays that record's."""
    token = json.dumps({"name": "Vex"})
    campaign = {
        "characters": [{"name": "Vex'ahlia", "bio": "<p>A ranger.</p>", "controlledby": "p1", "defaulttoken": token}],
        "handouts": [
            {
                "name": "Vex",
                "notes": "<p>Her bounty notice.</p>",
                "gmnotes": "<p>Wanted alive.</p>",
                "inplayerjournals": "all",
            },
            {"name": "Trinket", "notes": "", "inplayerjournals": "all"},
        ],
        "pages": [{"name": "Whitestone"}],
    }
    world = read_import([("vm.json", json.dumps(campaign).encode())])
    world.campaign_file()  # loads: one name, one entity
    assert [(e.name, e.aliases, e.description) for e in world.entities[:2]] == [
        ("Vex'ahlia", ["Vex"], "A ranger.\n\nHer bounty notice."),  # the handout's text after hers
        ("Trinket", [], ""),
    ]
    assert ("Vex'ahlia", "dm_notes_handout", "Wanted alive.", True) in facts(world)
    rows = "name,type,aliases\nVexx,npc,\nVexxahlia,npc,Vexx\n"
    world = read_import([("twins.csv", rows.encode())])
    assert [(e.name, e.aliases) for e in world.entities] == [("Vexx", []), ("Vexxahlia", [])]
    assert "twins.csv: Vexxahlia: alias 'Vexx' left out, another's name" in world.skipped


def test_roll20_campaign_export_and_handouts() -> None:
    world = imported("roll20_campaign.json")
    assert entity(world, "Brannoc").type is EntityType.player  # a player controls it
    letter = entity(world, "Letter from the Duke")
    assert letter.type is EntityType.concept and letter.secret  # in no player's journal
    assert not entity(world, "Map of Cindergate").secret
    assert entity(world, "Cindergate Streets").type is EntityType.location
    assert ("Letter from the Duke", "dm_notes_handout", "The Duke is dead; this is forged.", True) in facts(world)
    assert "NPCs" not in {e.name for e in world.entities}  # journal folders are not entities


# ------------------------------------------------------------------------------------------------ Kanka


def test_kanka_entities_links_and_relations() -> None:
    world = imported(*(f"kanka_{n}.json" for n in ("characters", "locations", "organisations", "items", "relations")))
    assert world.format == "kanka"
    kinds = {e.name: (e.type, e.secret) for e in world.entities}
    assert kinds == {
        "Jonah Greave": (EntityType.npc, False),
        "Sister Maud": (EntityType.npc, True),  # is_private
        "Greave Marsh": (EntityType.location, False),
        "Kingdom of Vel": (EntityType.location, False),
        "The Lantern Guild": (EntityType.faction, False),
        "Ferry Bell": (EntityType.item, False),
    }
    # mentions read as their text, or the entity's name
    assert entity(world, "Jonah Greave").description == "A ferryman of the Marsh. Friend of Sister Maud."
    found = {(r.source, r.type, r.target, r.secret, r.attributes.get("attitude")) for r in world.relationships}
    assert found == {
        ("Jonah Greave", "located_in", "Greave Marsh", False, None),
        ("Greave Marsh", "located_in", "Kingdom of Vel", False, None),
        ("The Lantern Guild", "located_in", "Kingdom of Vel", False, None),
        ("Jonah Greave", "owns", "Ferry Bell", False, None),
        ("Jonah Greave", "old_friend", "Sister Maud", True, 60),  # a private record's: secret, as Kanka hides it
        ("Jonah Greave", "member_of", "The Lantern Guild", True, 10),  # admin-only visibility
        ("Sister Maud", "rival_of", "The Lantern Guild", True, -40),
        ("The Lantern Guild", "rival_of", "Sister Maud", True, -40),  # its mirror, not in the file
    }
    assert any("Owes money to" in s for s in world.skipped)  # to an entity not imported


# ------------------------------------------------------------------------------------------------ CSV


def test_csv_with_bom_quotes_line_breaks_and_alias_separators() -> None:
    world = imported("world.csv")
    assert world.format == "csv"
    eldrinax = entity(world, "Eldrinax")
    assert eldrinax.aliases == ["The Ember Wyrm", "Old Red", "Eldri"]
    assert eldrinax.description == "A red dragon, ancient\nand patient"
    assert eldrinax.attributes == {"faction": "Red Hand"}
    assert entity(world, "Ironhold").description == 'Dwarven hold, "the deep city"'
    assert entity(world, "Ironhold").type is EntityType.location
    assert world.campaign_file().find_entity("old red") == eldrinax


def test_csv_accepts_place_and_explains_a_wrong_type() -> None:
    good = imported_text("name,type\nSaltmere,place\n")
    assert good.entities[0].type is EntityType.location
    message = refused([("bad.csv", b"name,type,description\nOk,npc,\nThe Red Hand,Organisation,Cult\n")])
    assert message == (
        "bad.csv: line 3 ('The Red Hand'): field 'type': 'Organisation' is not one of npc, location, item, faction, "
        "quest, event, concept, player; did you mean 'faction'?"
    )


def test_csv_from_a_spreadsheet_that_writes_semicolons() -> None:
    world = imported_text('name;type;aliases;description\nEldrinax;npc;"Old Red;Eldri";A red dragon, old\n')
    assert [(e.name, e.aliases, e.description) for e in world.entities] == [
        ("Eldrinax", ["Old Red", "Eldri"], "A red dragon, old")
    ]


def test_a_zip_stands_for_the_files_in_it() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in ("characters", "locations", "organisations", "items", "relations"):
            archive.write(FIXTURES / f"kanka_{name}.json", f"export/{name}.json")
        archive.writestr("export/images/face.png", b"\x89PNG")  # not read
    world = read_import([("kanka-export.zip", buffer.getvalue())])
    assert world.format == "kanka" and len(world.entities) == 6 and len(world.relationships) == 8
    assert world.sources[0] == "kanka-export.zip/export/characters.json"
    assert "a damaged zip" in refused([("broken.zip", b"PK\x03\x04 not really")])


def test_a_kanka_character_typed_pc_is_a_player() -> None:
    chars = {"data": [{"id": 1, "name": "Brannoc", "entry": "", "entity_id": 5, "type": "PC", "sex": ""}]}
    assert read_import([("characters.json", json.dumps(chars).encode())]).entities[0].type is EntityType.player


def test_a_dnd5e_race_kept_as_an_item_id_is_not_an_attribute() -> None:
    doc = {"_id": "x", "name": "Ilse", "type": "character", "system": {"details": {"race": "Ej3hX9qL2mN8pR4t"}}}
    assert "race" not in read_import([("ilse.json", json.dumps({**doc, "items": []}).encode())]).entities[0].attributes


def imported_text(text: str, name: str = "x.csv") -> ImportedWorld:
    return read_import([(name, text.encode())])


# ------------------------------------------------------------------------------------------------ all formats


@pytest.mark.parametrize(
    ("files", "wanted"),
    [
        ([("a.csv", b"name,type\n,npc\n")], None),  # a nameless row is left out, said
        ([("big.json", b" " * (MAX_IMPORT_BYTES + 1))], "MB an import reads"),
        ([("latin1.csv", "name,type\nCaf\xe9,npc\n".encode("latin-1"))], "not UTF-8"),
        ([("x.txt", b"hello there")], "pass --format"),
        ([("x.json", b'{"hello": 1}')], "not a Foundry VTT, Roll20 or Kanka export"),
        ([("a.db", b'{"_id":"1","name":"A","type":"npc","system":{},"items":[]}\n{"_id": broken\n')], "line 2"),
        ([("n.csv", b"type,description\nnpc,x\n")], "no 'name' column"),
        (  # where the quote opened, not the file's last line the lenient reader ran to
            [("q.csv", b'name,type,description\nA,npc,"two\nlines"\n"Quote, unclosed,npc,x\nNext,npc,y\n')],
            "q.csv: line 4: a quoted field opens on this line and is never closed",
        ),
        (
            [("one.csv", b"name,type\nA,npc\n"), ("two.json", b'{"_id":"x","name":"B","type":"npc","system":{}}')],
            "import one tool's files at a time",
        ),
    ],
)
def test_bad_files_are_one_clear_error(files: list[tuple[str, bytes]], wanted: str | None) -> None:
    if wanted is None:
        assert read_import(files).entities == []
        return
    message = refused(files)
    assert message.startswith(files[-1][0] if "one tool" in wanted else files[0][0]) and wanted in message, message


def test_a_json_export_cut_short_is_said_so_not_sent_to_format() -> None:
    """A download cut short is JSON that does not parse: passing --format would not help, so the error says where
    it breaks; an empty file is said to be empty."""
    cut = b'{\n "characters": [\n  {"name": "Grog", "bio": "<p>A goliath</p>",\n'
    for format in (None, "roll20"):
        message = refused([("campaign.json", cut)], format)
        assert "broken JSON at line 4" in message and "cut short" in message and "--format" not in message, message
    assert refused([("empty.json", b"  \n")]) == "empty.json: an empty file"


def test_utf16_text_with_its_byte_order_mark_is_read_not_called_binary() -> None:
    """Excel's "Unicode text" (tab-separated) and Notepad's "Unicode" are UTF-16 with a byte-order mark: their
    zero bytes are text, not a Foundry LevelDB pack."""
    sheet = "name\ttype\tdescription\nCafé Noir\tlocation\tUn café\n".encode("utf-16")
    assert [(e.name, e.description) for e in read_import([("places.txt", sheet)]).entities] == [
        ("Café Noir", "Un café")
    ]
    handout = json.dumps({"name": "Letter", "notes": "<p>Meet me.</p>", "inplayerjournals": "all"}).encode("utf-16-be")
    world = read_import([("letter.json", codecs.BOM_UTF16_BE + handout)])
    assert world.format == "roll20" and world.entities[0].description == "Meet me."


def test_a_bad_name_names_file_record_and_field() -> None:
    doc = {"_id": "x", "name": "V\u0430x", "type": "npc", "system": {}, "items": []}  # a Cyrillic а
    message = refused([("vax.json", json.dumps(doc).encode())])
    assert message.startswith("vax.json: record ('Vаx'): field 'name': ") and "mixes scripts" in message


def test_format_can_be_forced_and_is_told_from_content_not_name() -> None:
    text = (FIXTURES / "roll20_handout.json").read_text()
    assert detect_format("handout.csv", text) == "roll20"
    assert read_import([("h.txt", text.encode())], "roll20").entities[0].name == "Letter from the Duke"


def test_long_gm_text_is_kept_whole_in_parts() -> None:
    long = " ".join(["The sea remembers."] * 60)  # 1,139 characters
    doc = {"_id": "x", "name": "Hale", "type": "npc", "system": {"details": {"privateNotes": long}}, "items": []}
    world = read_import([("hale.json", json.dumps(doc).encode())])
    parts = [r for r in world.relationships if r.type.startswith("dm_notes")]
    assert [r.type for r in parts] == ["dm_notes", "dm_notes_2", "dm_notes_3"] and all(r.secret for r in parts)
    assert " ".join(r.value or "" for r in parts) == long


def test_html_lists_keep_their_bullets_and_numbers() -> None:
    """A list reads as the editor shows it: one line an item, "- " or "1. ", even as ProseMirror writes it
    (``<li><p>…</p></li>``), not items run together as paragraphs."""
    assert html_to_text("<p>Clues:</p><ol><li>The mayor lies</li><li>The well is poisoned</li></ol><p>Then</p>") == (
        "Clues:\n1. The mayor lies\n2. The well is poisoned\n\nThen",
        "",
    )
    assert html_to_text("<ul>\n <li><p>Rope</p></li>\n <li><p>Lantern</p></li>\n</ul>") == ("- Rope\n- Lantern", "")


def test_html_and_javascript_escapes() -> None:
    assert html_to_text("<p>One<br>two &amp; <b>three</b></p><script>x()</script><p>four</p>") == (
        "One\ntwo & three\n\nfour",
        "",
    )
    assert html_to_text('<div>open <section class="secret">hid<p>den</p></section> shut</div>') == (
        "open\n\nshut",
        "hid\nden",
    )
    assert js_unescape("%3Cp%3Ecaf%E9 %u2019%3C/p%3E") == "<p>café ’</p>"
    table = "<table><tr><th>Name</th><th>HP</th></tr><tr><td>Goblin</td><td>7</td></tr></table>a<hr>b"
    assert html_to_text(table) == ("Name | HP\n\nGoblin | 7\n\na\nb", "")  # cells and rules apart, not "Goblin7"


def test_duplicates_fold_and_symmetric_facts_are_one() -> None:
    rels = {
        "data": [
            {"id": 1, "owner_id": 1, "target_id": 2, "relation": "Allied with", "visibility_id": 1, "mirror_id": 2},
            {"id": 2, "owner_id": 2, "target_id": 1, "relation": "allied_with", "visibility_id": 1, "mirror_id": 1},
        ]
    }
    chars = {
        "data": [
            {"id": 1, "name": "A", "entry": "", "entity_id": 1, "sex": ""},
            {"id": 2, "name": "B", "entry": "", "entity_id": 2, "sex": ""},
            {"id": 3, "name": "a", "entry": "<p>Same as A.</p>", "entity_id": 3, "sex": ""},
        ]
    }
    world = read_import(
        [("characters.json", json.dumps(chars).encode()), ("relations.json", json.dumps(rels).encode())]
    )
    assert [(e.name, e.description) for e in world.entities] == [("A", "Same as A."), ("B", "")]
    assert [(r.source, r.type, r.target) for r in world.relationships] == [("A", "allied_with", "B")]
    world.campaign_file()  # and it is a valid campaign file


def test_an_import_keeps_one_ruler_stated_from_either_end() -> None:
    """A world whose relations give Greywatch two rulers, one as "ruled_by" and one as "leader_of", kept both, and
    so made a campaign file its own check refuses: the second is said and left out."""
    rels = {
        "data": [
            {"id": 1, "owner_id": 1, "target_id": 2, "relation": "ruled_by", "visibility_id": 1},
            {"id": 2, "owner_id": 3, "target_id": 1, "relation": "leader_of", "visibility_id": 1},
            {"id": 3, "owner_id": 2, "target_id": 1, "relation": "leader_of", "visibility_id": 1},
        ]
    }
    chars = {
        "data": [
            {"id": i, "name": name, "entry": "", "entity_id": i, "sex": ""}
            for i, name in [(1, "Greywatch"), (2, "Serah"), (3, "Balcor")]
        ]
    }
    world = read_import(
        [("characters.json", json.dumps(chars).encode()), ("relations.json", json.dumps(rels).encode())]
    )
    assert [(r.source, r.type, r.target) for r in world.relationships] == [("Greywatch", "ruled_by", "Serah")]
    assert [s for s in world.skipped if "ruled_by" in s] == [
        "fact Balcor -[leader_of]-> Greywatch: Greywatch has one 'ruled_by' already"
    ]
    world.campaign_file()  # and it is a valid campaign file


def test_a_second_record_of_a_name_adds_its_text_not_drops_it() -> None:
    """Two journals "Ironhold" in one world make one entity: the second's text follows the first's, and a copy
    that says nothing new (an actor and its compendium twin) adds nothing."""
    docs = [
        {"_id": "j1", "name": "Ironhold", "content": "<p>Dwarven hold.</p>", "ownership": {"default": 2}},
        {"_id": "j2", "name": "Ironhold", "content": "<p>Second Ironhold journal.</p>", "ownership": {"default": 2}},
        {"_id": "j3", "name": "Ironhold", "content": "<p>Dwarven hold.</p>", "ownership": {"default": 2}},
    ]
    world = read_import([("journal.db", "\n".join(json.dumps(d) for d in docs).encode())])
    assert [e.description for e in world.entities] == ["Dwarven hold.\n\nSecond Ironhold journal."]


def test_each_tool_s_own_ids_are_kept_with_the_record_s_name() -> None:
    """What a re-import finds an entity by: Foundry's document ids as its UUIDs write them (an owned item's within its
    actor), Roll20's ids by kind, Kanka's entity and module ids."""
    vask = imported("foundry_dnd5e_npc_v10.json").source_ids
    assert vask == {
        "Vask the Ashen": {"Actor.aB3dE5gH7jK9mN1p": "Vask the Ashen"},
        "Emberbrand": {"Actor.aB3dE5gH7jK9mN1p.Item.it000000000000a1": "Emberbrand"},
    }
    pip = imported("roll20_campaign.json").source_ids
    assert pip["Pip Thistledown"] == {"character:-Mchar0001": "Pip Thistledown"}
    assert pip["Dagger +1"] == {"character:-Mchar0001/inventory:-MinvC": "Dagger +1"}
    jonah = imported("kanka_characters.json").source_ids["Jonah Greave"]
    assert jonah == {"entity:11": "Jonah Greave", "character:1": "Jonah Greave"}
    assert imported("world.csv").source_ids == {}  # a CSV has no ids: matched by name only


def test_records_with_a_place_for_gm_notes_say_all_of_them() -> None:
    """An entity whose record has a field for GM notes, empty or not, has no others: notes it had before and lacks
    now were deleted in the tool. A map, an inventory row or a CSV without a ``dm_notes`` column says nothing."""
    assert imported("foundry_dnd5e_npc_v10.json").notes_stated == ["Vask the Ashen", "Emberbrand"]
    roll20 = imported("roll20_campaign.json")
    assert {"Pip Thistledown", "Brannoc"} <= set(roll20.notes_stated)
    assert not {"Cindergate Streets", "Dagger +1"} & set(roll20.notes_stated)
    assert imported("world.csv").notes_stated == []
    with_column = read_import([("w.csv", b"name,type,dm_notes\nIronhold,location,\nVel,npc,Hides.\n")])
    assert with_column.notes_stated == ["Ironhold", "Vel"]


def test_gm_notes_of_a_big_world_are_read_in_time_linear_in_its_records(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each journal's GM page finds its free dm_notes part without comparing against every fact read before: a
    world of thousands of GM-noted journals reads in seconds, not minutes."""
    from campaigns.imports import common

    compared = 0
    key = common.name_key

    def counted(name: str) -> str:
        nonlocal compared
        compared += 1
        return key(name)

    monkeypatch.setattr(common, "name_key", counted)

    def read(count: int) -> int:
        nonlocal compared
        gm = {
            "_id": "gm",
            "name": "GM",
            "type": "text",
            "text": {"content": "<p>Secret.</p>"},
            "ownership": {"default": 0},
        }
        lines = [
            json.dumps({"_id": f"wjnl{i:012d}", "name": f"Lore {i}", "pages": [gm], "ownership": {"default": 2}})
            for i in range(count)
        ]
        compared = 0
        world = read_import([("journal.db", "\n".join(lines).encode())])
        assert len([r for r in world.relationships if r.type == "dm_notes_journal"]) == count
        return compared

    assert read(400) < 2.5 * read(200)
