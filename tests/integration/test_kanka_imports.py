"""Kanka imports through the CLI: what the DM wrote in Kanka reaches the campaign, whatever the export's shape."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

Lk = Callable[..., CompletedProcess[str]]


def corvin(**changes: Any) -> dict[str, Any]:
    return {
        "id": 11,
        "entity_id": 101,
        "name": "Corvin Ashgrove",
        "entry": "<p>Friend of [character:102]. Lives in [location:201]. Hates [character:999].</p>",
        "entity": {"id": 101, "type_id": 1},
        **changes,
    }


MIRELLE = {"id": 12, "entity_id": 102, "name": "Mirelle O'Shea", "entry": "<p>Smuggler.</p>"}
HARROWGATE = {"id": 21, "entity_id": 201, "name": "Harrowgate", "entry": "<p>A fort on the cliffs.</p>"}


def write(folder: Path, **modules: list[dict[str, Any]]) -> list[str]:
    folder.mkdir(exist_ok=True)
    for module, records in modules.items():
        (folder / f"{module}.json").write_text(json.dumps({"data": records}))
    return [str(folder / f"{module}.json") for module in modules]


def ok(run: CompletedProcess[str]) -> str:
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_a_single_entity_names_its_mentions_by_the_campaigns_kanka_ids(lk: Lk, tmp_path: Path) -> None:
    """One character fetched from the API (`{"data": {...}}`) mentions entities the campaign imported before: their
    names, not empty text; an entity Kanka's files never had is said as unknown."""
    ok(lk("campaign", "create", "Capewrath"))
    ok(
        lk(
            "campaign",
            "import",
            "--accept",
            *write(tmp_path / "v1", characters=[corvin(), MIRELLE], locations=[HARROWGATE]),
        )
    )
    single = tmp_path / "corvin.json"
    single.write_text(json.dumps({"data": corvin(entry="<p>Friend of [character:102], in [location:201].</p>")}))
    card = ok(lk("campaign", "import", "--accept", str(single)))
    assert "Friend of Mirelle O'Shea, in Harrowgate." in card
    shown = ok(lk("entity", "show", "Corvin Ashgrove"))
    assert "Friend of Mirelle O'Shea, in Harrowgate." in shown
    ok(lk("campaign", "import", "--accept", *write(tmp_path / "v2", characters=[corvin()])))
    assert "Hates [unknown character 999]." in ok(lk("entity", "show", "Corvin Ashgrove"))


def test_kanka_posts_join_the_description_and_gm_only_posts_the_gm_notes(lk: Lk, tmp_path: Path) -> None:
    posts = [
        {"id": 1, "name": "Backstory", "entry": "<p>Grew up in Cape Wrath.</p>", "visibility_id": 1},
        {"id": 2, "name": "GM secret", "entry": "<p>He is the Widow's son.</p>", "visibility_id": 2},
        {"id": 3, "name": "Old note", "entry": "<p>Owes [character:102] money.</p>", "is_private": True},
    ]
    ok(lk("campaign", "create", "Capewrath"))
    entity = {"id": 101, "type_id": 1, "posts": posts}
    ok(lk("campaign", "import", "--accept", *write(tmp_path, characters=[corvin(entity=entity), MIRELLE])))
    player = ok(lk("entity", "show", "Corvin Ashgrove", "--as-player"))
    assert "Backstory\n\nGrew up in Cape Wrath." in player.replace("  ", "")
    assert "Widow" not in player and "money" not in player
    dm = ok(lk("entity", "show", "Corvin Ashgrove"))
    assert "GM secret" in dm and "He is the Widow's son." in dm and "Owes" in dm


def test_a_character_and_a_location_of_one_name_are_two_entities(lk: Lk, tmp_path: Path) -> None:
    """Kanka's fort "Harrowgate" and an old soldier "Harrowgate" (two records, two entity ids): two entities, the
    second named by its type and the card saying so, not one npc holding both texts."""
    ok(lk("campaign", "create", "Capewrath"))
    soldier = {"id": 14, "entity_id": 104, "name": "Harrowgate", "entry": "<p>An old soldier of [location:201].</p>"}
    card = ok(lk("campaign", "import", "--accept", *write(tmp_path, locations=[HARROWGATE], characters=[soldier])))
    # the first by Kanka's entity id keeps the name, whatever the files' order
    assert "assumed: named by its type, another record (npc) having its name: Harrowgate (location)" in card
    soldier_shown = ok(lk("entity", "show", "Harrowgate"))
    assert soldier_shown.startswith("Harrowgate (npc)\n  An old soldier of Harrowgate (location).")  # the fort
    assert "fort" not in soldier_shown
    assert ok(lk("entity", "show", "Harrowgate (location)")).startswith("Harrowgate (location) (location)\n  A fort")


def test_the_same_export_read_in_another_file_order_is_unchanged(lk: Lk, tmp_path: Path) -> None:
    """A zip reads locations.json first, a shell glob characters.json: the records of one name join in Kanka's
    entity order, so importing the export again in the other order changes nothing."""
    ok(lk("campaign", "create", "Capewrath"))
    journal = {"id": 5, "entity_id": 501, "name": "Mirelle O'Shea", "entry": "<p>Rumours of her.</p>"}
    paths = write(tmp_path, journals=[journal], characters=[MIRELLE])
    ok(lk("campaign", "import", "--accept", *paths))
    card = ok(lk("campaign", "import", *reversed(paths)))
    assert "1 entity (0 new, 0 updated, 1 unchanged)" in card and "(unchanged): Smuggler." in card, card


def test_an_empty_module_file_is_left_out_not_an_unknown_format(lk: Lk, tmp_path: Path) -> None:
    ok(lk("campaign", "create", "Capewrath"))
    write(tmp_path / "export", characters=[MIRELLE], events=[])
    card = ok(lk("campaign", "import", str(tmp_path / "export")))
    assert "1 entity (1 new, 0 updated)" in card
    assert "left out: 1 record (e.g. " in card and "events.json: no records" in card


def test_an_export_zips_campaign_json_is_left_out(lk: Lk, tmp_path: Path) -> None:
    """Kanka's export zip holds the campaign's own settings (campaign.json, an `entry` but no module) beside the
    entities' files: left out and said, not an error stopping the import."""
    ok(lk("campaign", "create", "Capewrath"))
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("campaign.json", json.dumps({"id": 7, "name": "Capewrath", "entry": "<p>Our world.</p>"}))
        zipped.writestr("characters/12.json", json.dumps(MIRELLE))
    card = ok(lk("campaign", "import", str(archive)))
    assert "1 entity (1 new, 0 updated)" in card and "campaign.json: the campaign's own" in card


def test_a_relation_deleted_in_kanka_is_ended_when_imported_again(lk: Lk, tmp_path: Path) -> None:
    """The Pale Widow's record lists all her relations: "Employs" Mirelle gone from it is ended (kept in history),
    while one she still has, and a record that lists no relations, keep theirs."""
    ok(lk("campaign", "create", "Capewrath"))
    employs = {"id": 805, "owner_id": 103, "target_id": 102, "relation": "Employs"}
    fears = {"id": 806, "owner_id": 103, "target_id": 101, "relation": "Fears"}

    def widow(*relations: dict[str, Any]) -> dict[str, Any]:
        entity = {"id": 103, "type_id": 1, "relations": list(relations)}
        return {"id": 13, "entity_id": 103, "name": "The Pale Widow", "entry": "<p>Veiled.</p>", "entity": entity}

    ok(
        lk(
            "campaign",
            "import",
            "--accept",
            *write(tmp_path / "v1", characters=[corvin(), MIRELLE, widow(employs, fears)]),
        )
    )
    assert "The Pale Widow employs Mirelle O'Shea" in ok(lk("entity", "show", "Mirelle O'Shea"))
    card = ok(lk("campaign", "import", *write(tmp_path / "v2", characters=[corvin(), MIRELLE, widow(fears)])))
    ended = "- The Pale Widow: fact employs Mirelle O'Shea: ended (deleted in the tool)"
    assert f"relations deleted in the tool, that it ends (kept in their history):\n{ended}\n" in card, card
    assert ended[2:] in ok(lk("review", "accept", "b2"))
    shown = ok(lk("entity", "show", "The Pale Widow"))
    assert "employs" not in shown and "The Pale Widow fears Corvin Ashgrove" in shown
    history = ok(lk("entity", "show", "The Pale Widow", "--history"))
    assert "- The Pale Widow employs Mirelle O'Shea (" in history and " → " in history  # ended, kept


def test_a_wrong_format_says_what_the_file_is(lk: Lk, tmp_path: Path) -> None:
    ok(lk("campaign", "create", "Capewrath"))
    [characters] = write(tmp_path, characters=[MIRELLE])
    wrong = lk("campaign", "import", "--format", "roll20", characters)
    assert wrong.returncode == 1
    assert f"error: {characters}: a Kanka export, not Roll20: import it without --format" in wrong.stderr
    assert "record None" not in wrong.stderr


def test_the_card_counts_the_entities_it_makes_dm_only(lk: Lk, tmp_path: Path) -> None:
    ok(lk("campaign", "create", "Capewrath"))
    widow = {"id": 13, "entity_id": 103, "name": "The Pale Widow", "is_private": True, "entry": "<p>Veiled.</p>"}
    card = ok(lk("campaign", "import", *write(tmp_path, characters=[corvin(), MIRELLE, widow])))
    assert "3 entities (3 new, 0 updated)" in card and "\n1 new entity DM-only: players will not see them\n" in card


def test_a_facts_history_names_the_file_of_its_record(lk: Lk, tmp_path: Path) -> None:
    """Not every file of the import ("locations.json, characters.json, items.json…", in the zip's order): the one
    whose record gave the fact."""
    ok(lk("campaign", "create", "Capewrath"))
    located = {"id": 12, "entity_id": 102, "name": "Mirelle O'Shea", "location_id": 21}
    enemy = {"id": 804, "owner_id": 102, "target_id": 201, "relation": "Enemy"}
    ok(
        lk(
            "campaign",
            "import",
            "--accept",
            *write(tmp_path, locations=[HARROWGATE], characters=[located], relations=[enemy]),
        )
    )
    shown = ok(lk("entity", "show", "Mirelle O'Shea", "--history"))
    assert "- Mirelle O'Shea is located in Harrowgate (since " in shown
    assert "imported from Kanka (characters.json))" in shown and "imported from Kanka (relations.json))" in shown, shown


def test_what_an_import_cannot_keep_is_said_and_what_it_can_is_kept(lk: Lk, tmp_path: Path) -> None:
    """Kanka's tags (ids alone) are said on the card; a picture's alt text and a Roll20 item's properties are kept."""
    ok(lk("campaign", "create", "Capewrath"))
    pictured = {**MIRELLE, "entry": '<p>Smuggler.</p><img src="m.png" alt="a scarred woman">', "tags": [5]}
    card = ok(lk("campaign", "import", "--accept", *write(tmp_path, characters=[pictured])))
    assert "left out: 1 record (e.g. the tags of 1 record: Kanka's files give their ids alone)" in card
    assert "[image: a scarred woman]" in ok(lk("entity", "show", "Mirelle O'Shea"))
    roll20 = Path(__file__).resolve().parents[1] / "fixtures" / "imports" / "roll20_campaign.json"
    ok(lk("campaign", "import", "--accept", str(roll20)))
    assert "properties: Finesse, Light, Thrown" in ok(lk("entity", "show", "Dagger +1"))


def test_a_private_records_mentions_never_make_a_public_entitys_text(lk: Lk, tmp_path: Path) -> None:
    """A private character and a public journal of one name make one public entity: the character's text, its
    mentions named, is GM notes; players read the journal's alone (it was replaced by the private text once its
    mentions were named)."""
    ok(lk("campaign", "create", "Capewrath"))
    villain = {"id": 13, "entity_id": 103, "name": "Lady Nightshade", "is_private": True}
    villain["entry"] = "<p>The real villain, who pays [character:102].</p>"
    rumour = {"id": 5, "entity_id": 501, "name": "Lady Nightshade", "entry": "<p>A rumour in the docks.</p>"}
    ok(lk("campaign", "import", "--accept", *write(tmp_path, characters=[villain, MIRELLE], journals=[rumour])))
    player = ok(lk("entity", "show", "Lady Nightshade", "--as-player"))
    assert "A rumour in the docks." in player and "villain" not in player
    assert "The real villain, who pays Mirelle O'Shea." in ok(lk("entity", "show", "Lady Nightshade"))


def test_a_secret_pictures_alt_text_is_the_dms_and_a_skipped_ones_nobodys(lk: Lk, tmp_path: Path) -> None:
    """An image's alt text was written public before its own ``class="secret"`` was counted, and inside a
    ``<template>`` whose text is skipped: players read "[image: Iska is the smuggler queen's daughter]"."""
    ok(lk("campaign", "create", "Capewrath"))
    iska = {"id": 1, "entity_id": 301, "name": "Captain Iska", "is_private": False}
    iska["entry"] = (
        '<p>Harbour captain.</p><img src="c.png" alt="a tall woman">'
        '<img class="secret" src="x.png" alt="Iska is the smuggler queen\'s daughter">'
        '<template><img alt="template alt: spy ledger"></template>'
    )
    ok(lk("campaign", "import", "--accept", *write(tmp_path, characters=[iska])))
    player = ok(lk("entity", "show", "Captain Iska", "--as-player"))
    assert "[image: a tall woman]" in player and "smuggler" not in player and "ledger" not in player, player
    recalled = lk("recall", "smuggler queen daughter spy ledger", "--as-player").stdout
    assert "smuggler" not in recalled and "ledger" not in recalled, recalled
    dm = ok(lk("entity", "show", "Captain Iska"))
    assert "[image: Iska is the smuggler queen's daughter]" in dm and "ledger" not in dm, dm  # GM notes
