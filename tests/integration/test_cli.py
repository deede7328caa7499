"""The `lorekeeper` command line, run as a real process against a fresh test database."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import re
import select
import stat
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import asyncpg

from memory.db import create_pool
from memory.mentions import index_lines
from memory.models import EntityIn, EntityType, EntryIn, Provenance, RelationshipIn, ReviewStatus, Source, Visibility
from memory.store import CampaignMemory, Memory


def today() -> str:
    """The date of a session started now, as a citation says it beside the session's title."""
    return f"{datetime.now(UTC):%Y-%m-%d}"


ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "campaigns" / "examples" / "sunken_crown.yaml"


def test_campaign_entity_review_search_flow(lk, tmp_path: Path) -> None:
    assert lk("campaign", "create", "Sunken Crown").returncode == 0
    loaded = lk("campaign", "load", str(EXAMPLE), "--campaign", "Sunken Crown", "--json")
    assert loaded.returncode == 0, loaded.stderr
    report = json.loads(loaded.stdout)
    assert report["entities_created"] > 10 and report["relationships_created"] > 10
    again = json.loads(lk("campaign", "load", str(EXAMPLE), "--campaign", "Sunken Crown", "--json").stdout)
    assert again["entities_created"] == 0 and again["relationships_created"] == 0
    # an entry named like another entity's alias: refused where it is written, nothing changed
    (tmp_path / "ob.yaml").write_text("entities:\n  - {name: Old Bronze, type: item}\n")
    taken = lk("campaign", "load", str(tmp_path / "ob.yaml"))
    assert taken.returncode == 1 and taken.stderr.endswith(
        f"\nerror: {tmp_path / 'ob.yaml'}:2: entity #1 'Old Bronze': 'Old Bronze' is already an alias of 'Eldrinax'; "
        "to rename an entity, give this entry `renamed_from:` its current name\n"
    )
    assert json.loads(lk("entity", "show", "Old Bronze", "--json").stdout)["entity"]["name"] == "Eldrinax"

    added = lk(
        "entity", "add", "Korvash", "npc", "--alias", "Korv", "--attr", "age=212", "--attr", "role=smith", "--json"
    )
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["attributes"] == {"age": 212, "role": "smith"}
    shown = json.loads(lk("entity", "show", "korv", "--json").stdout)
    assert shown["entity"]["name"] == "Korvash"
    listed = json.loads(lk("entity", "list", "--type", "npc", "--json").stdout)
    assert "Korvash" in {e["name"] for e in listed} and all(e["type"] == "npc" for e in listed)
    dup = lk("entity", "add", "korvash", "npc")
    assert dup.returncode == 1
    assert (
        dup.stderr == "error: an entity named 'Korvash' already exists: see it with `lorekeeper entity show Korvash`\n"
    )
    taken = lk("entity", "add", "Korv Smith", "npc", "--alias", "korv")
    assert (
        taken.stderr == "error: 'Korv' is already an alias of 'Korvash': see it with `lorekeeper entity show Korvash`\n"
    )
    # a secret name players read anyway, spelled like a public one: added, with a warning
    hidden = lk("entity", "add", "The Korvash", "npc", "--secret")
    assert hidden.returncode == 0 and hidden.stderr == (
        "warning: The secret name “The Korvash” is spelled like “Korvash”, which players may read: it cannot be "
        "hidden from them; give one of the two a name of its own.\n"
    ), hidden.stderr
    assert lk("entity", "edit", "The Korvash", "--new-name", "Korvash the Grey").stderr == ""
    # a secret name of English words masks them wherever players read them: the DM is told which, once
    told = "Players will read [secret] for every “the exile” said, in any sense (as it hides the secret name)."
    assert lk("entity", "add", "The Exile", "npc", "--secret").stdout.splitlines()[1:] == [told]
    assert lk("entity", "edit", "The Exile", "--description", "banished").stdout.splitlines()[1:] == []
    assert lk("entity", "add", "Holt", "npc").stdout.splitlines()[1:] == []
    assert lk("entity", "edit", "Holt", "--secret").stdout.splitlines()[1:] == [told.replace("the exile", "holt")]
    # a name an edit gives, spelled like another entity's: told as `entity add` tells it
    assert lk("entity", "add", "Dûn Kaldor", "location").returncode == 0
    assert lk("entity", "add", "Tamsin Reed", "location").returncode == 0
    renamed = lk("entity", "edit", "Tamsin Reed", "--new-name", "Dun Kaldor")
    assert renamed.returncode == 0 and renamed.stderr.startswith("warning: “Dun Kaldor” is spelled like “Dûn Kaldor”")
    assert lk("entity", "edit", "Dun Kaldor", "--description", "a keep").stderr == ""  # told once
    assert lk("entity", "remove", "Korvash", "--yes").returncode == 0
    missing = lk("entity", "show", "Korvash")
    assert missing.returncode == 1 and "no entity named 'Korvash'" in missing.stderr

    assert json.loads(lk("review", "list", "--json").stdout) == []
    bad = lk("review", "accept", "zz9")
    assert bad.returncode == 1 and "not a review item id" in bad.stderr
    assert lk("search", "dragon", "--json").stdout.strip() == "[]"


def test_exit_codes_and_messages(lk, tmp_path: Path) -> None:
    usage = lk("entity", "add", "OnlyName")
    assert usage.returncode == 2 and "Missing argument" in usage.stderr
    bad_type = lk("entity", "add", "X", "dragon")
    assert bad_type.returncode == 2 and "Invalid value for 'TYPE': 'dragon' is not one of" in bad_type.stderr
    assert "entity add [OPTIONS] NAME TYPE\n" in lk("entity", "add", "--help").stdout  # no choices split mid-word
    # a first run has no campaign to pass or `campaign use`: the error says how to make one
    first = (
        "error: no active campaign: there is none yet: `lorekeeper campaign create NAME` or `lorekeeper campaign "
        "load FILE` makes one\n"
    )
    for command in (("entity", "list"), ("campaign", "info")):
        none_yet = lk(*command)
        assert none_yet.returncode == 1 and none_yet.stderr == first, none_yet.stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text("entities:\n  - {name: A, type: npc}\n  - {name: B, type: npc\n")
    assert lk("campaign", "create", "C").returncode == 0
    res = lk("campaign", "load", str(broken), "--campaign", "C")
    assert res.returncode == 1 and "broken.yaml:" in res.stderr and "Traceback" not in res.stderr
    assert json.loads(lk("entity", "list", "--json").stdout) == []  # nothing loaded
    # a file of the user's that cannot be written is said as such, not as the database gone
    nowhere = lk("campaign", "export", "-o", str(tmp_path / "missing" / "c.yaml"))
    assert (
        nowhere.returncode == 1
        and nowhere.stderr == f"error: {tmp_path / 'missing' / 'c.yaml'}: No such file or directory\n"
    )
    # an export holds the secrets: a new file is readable by its owner alone, whatever the umask
    exported = tmp_path / "world.yaml"
    assert lk("campaign", "export", "-o", str(exported)).returncode == 0
    assert stat.S_IMODE(exported.stat().st_mode) == 0o600
    # a clash only the database finds ("İstanbul" is "istanbul" to it): the campaign the file named is not made
    clash = tmp_path / "clash.yaml"
    clash.write_text(
        "campaign: {name: Fresh}\nentities:\n  - {name: Vell, type: npc, aliases: [İstanbul]}\n"
        "  - {name: istanbul, type: place}\n"
    )
    res = lk("campaign", "load", str(clash))
    assert res.returncode == 1 and "clash.yaml:4:" in res.stderr and "Traceback" not in res.stderr
    assert [c["name"] for c in json.loads(lk("campaign", "list", "--json").stdout)] == ["C"]
    # more entities than one load may hold the campaign for: refused whole, before anything is written
    huge = tmp_path / "huge.yaml"
    huge.write_text(
        "campaign: {name: Huge}\nentities:\n" + "".join(f"  - {{name: E{i}, type: npc}}\n" for i in range(20_001))
    )
    res = lk("campaign", "load", str(huge))
    assert res.returncode == 1 and res.stderr == (
        f"error: {huge}:3: entities: lists 20,001; the limit is 20,000 entities in one file, as play waits while one "
        "loads: split it into several files and load them one after another\n"
    )
    assert [c["name"] for c in json.loads(lk("campaign", "list", "--json").stdout)] == ["C"]
    # values out of range are one line each, not a traceback
    assert "not in the range x>=1" in lk("search", "x", "--limit", "-1").stderr
    assert (
        lk("review", "accept", "f99999999999999999999").stderr
        == "error: no review item f99999999999999999999 in campaign 'C': "
        "`lorekeeper review list` shows those waiting\n"
    )


async def test_an_export_larger_than_one_load_is_written_with_a_warning_to_split_it(
    lk, fresh_dsn: str, tmp_path: Path
) -> None:
    """Load refuses a file of more than 20,000 entities, so an export of more could not be loaded back unawares."""
    assert lk("campaign", "create", "Vast").returncode == 0
    conn = await asyncpg.connect(fresh_dsn)
    try:  # 20,001 rows as add_entity writes an entity with no aliases, at once (loading them takes a minute)
        await conn.execute(
            """
            INSERT INTO entities (campaign_id, type, name)
            SELECT c.id, 'npc', 'E' || i FROM campaigns c, generate_series(0, 20000) i WHERE c.name = 'Vast'
            """
        )
    finally:
        await conn.close()
    out = tmp_path / "vast.yaml"
    exported = lk("campaign", "export", "-c", "Vast", "-o", str(out), timeout=600)
    assert exported.returncode == 0, exported.stderr
    assert exported.stderr == (
        f"wrote 20001 entities to {out}\n"
        "warning: the file has 20,001 entities (at most 20,000), more than one `lorekeeper campaign load` takes: to "
        "load it back, split it into smaller files (a relationship goes in a file with both its entities; one loaded "
        "before may be listed again by name and type alone) and load them one after another\n"
    )
    assert out.read_text().count("\n- name: E") == 20_001  # all of it, though one load cannot take it back
    assert "limit is 20,000 entities" in lk("campaign", "load", str(out)).stderr


def test_entity_show_gives_an_attribute_way_to_the_current_fact_of_its_name(lk) -> None:
    """An attribute "status: alive" (no history) beside "—status→ dead" (the fact) contradicted each other on the
    card: the current fact is shown alone, for the DM and players; other attributes stay."""
    assert lk("campaign", "create", "Ashfall").returncode == 0
    assert lk("entity", "add", "Thalia", "player", "--attr", "played_by=Ana").returncode == 0
    assert lk("entity", "link", "Thalia", "status", "--value", "dead").returncode == 0
    assert lk("entity", "edit", "Thalia", "--attr", "Status=alive", "--attr", "played_by=Ana").returncode == 0
    for view in ([], ["--as-player"]):
        shown = lk("entity", "show", "Thalia", *view).stdout
        assert "played_by: Ana" in shown and "- Thalia is dead" in shown and "alive" not in shown


def test_entity_add_and_edit_warn_of_a_public_description_that_names_a_secret(lk) -> None:
    assert lk("campaign", "create", "Greywatch").returncode == 0
    assert lk("entity", "add", "Vaskerrin Holt", "npc", "--secret").returncode == 0
    warned = (
        "warning: “Greywatch” is public but its description says “vaskerrin holt”, a secret name: players will "
        "read [secret] there, which tells them a secret is there; reword it, or make the entity secret.\n"
    )
    added = lk("entity", "add", "Greywatch", "location", "--description", "vaskerrin holt's keep")
    assert added.returncode == 0 and added.stderr == warned, added.stderr
    # an edit that leaves the description as it was says nothing; one that writes the name says so
    assert lk("entity", "edit", "Greywatch", "--alias", "the keep").stderr == ""
    edited = lk("entity", "edit", "Greywatch", "--description", "where vaskerrin holt hid")
    assert edited.returncode == 0 and edited.stderr == warned
    assert lk("entity", "edit", "Greywatch", "--description", "an old keep").stderr == ""


def test_campaign_name_over_100_characters_is_one_line(lk) -> None:
    long = lk("campaign", "create", "L" * 101)
    assert long.returncode == 1
    assert (
        long.stderr == f"error: a campaign name is at most 100 characters; {'L' * 40}… has 101: choose a shorter one\n"
    )


def test_deleting_the_active_campaign_makes_the_newest_left_active(lk) -> None:
    for name in ("A", "B", "C"):
        assert lk("campaign", "create", name).returncode == 0
    assert lk("campaign", "delete", "C", "--yes").stdout == "deleted campaign 'C'\n"  # not the active one
    assert lk("campaign", "delete", "A", "--yes").stdout == "deleted campaign 'A'\nactive campaign: B\n"
    assert json.loads(lk("campaign", "list", "--json").stdout)[0]["active"] is True


def test_campaign_switch_is_campaign_use_as_discord_names_it(lk) -> None:
    for name in ("A", "B"):
        assert lk("campaign", "create", name).returncode == 0
    switched = lk("campaign", "switch", "b")
    assert switched.returncode == 0 and switched.stdout == "active campaign: B\n"
    assert lk("campaign", "use", "A").stdout == "active campaign: A\n"
    listed = lk("campaign", "--help").stdout
    assert "  use " in listed and "switch NAME" in listed and "  switch " not in listed  # listed once


def test_a_guild_id_with_no_campaigns_says_others_have_some(lk) -> None:
    """An operator with the wrong LOREKEEPER_GUILD_ID is told so, with counts only: never another guild's names."""
    for name in ("Ashfall", "Sunken"):
        assert lk("campaign", "create", name).returncode == 0
    assert lk("campaign", "create", "Elsewhere", env={"LOREKEEPER_GUILD_ID": "7"}).returncode == 0
    other = {"LOREKEEPER_GUILD_ID": "123"}
    hint = (
        "guild id 123 has no campaigns, but 3 campaigns are stored under 2 other guild ids: set LOREKEEPER_GUILD_ID "
        "to your Discord server's id (0: campaigns made on the command line)"
    )
    listed = lk("campaign", "list", env=other)
    assert listed.returncode == 0 and listed.stdout == hint + "\n"
    review = lk("review", "list", env=other)
    assert review.returncode == 1 and review.stderr == f"error: no active campaign: {hint}\n"
    assert "Ashfall" not in listed.stdout + review.stderr
    # guild 7 has a campaign of its own: the usual listing, and none of guild 0's
    assert lk("campaign", "list", env={"LOREKEEPER_GUILD_ID": "7"}).stdout.splitlines()[2].split() == ["*", "Elsewhere"]


async def test_with_the_wrong_campaign_active_an_error_names_it_and_the_one_that_has_it(
    lk, fresh_dsn: str, tmp_path: Path
) -> None:
    """The walkthrough's DM: "no review item e33 in this campaign" said neither which campaign nor where e33 is."""
    for name in ("Ashfall Reach", "Goblin Oneshot", "Third"):
        assert lk("campaign", "create", name).returncode == 0
    assert lk("campaign", "create", "Far Away", env={"LOREKEEPER_GUILD_ID": "7"}).returncode == 0
    pool = await create_pool(fresh_dsn)
    try:
        memory = Memory(pool)
        ashfall = memory.campaign((await memory.campaigns().get("Ashfall Reach")).id)
        guess = Provenance(source=Source.inferred, confidence=0.3)
        item = await ashfall.graph.add_entity(
            EntityIn(name="Korvash", type=EntityType.npc, status="pending", provenance=guess)
        )
        await ashfall.graph.add_entity(EntityIn(name="Ironhold", type=EntityType.place, aliases=["The Hold"]))
        far = memory.campaign((await memory.campaigns(7).get("Far Away")).id)
        await far.graph.add_entity(EntityIn(name="Skyreach", type=EntityType.place))
    finally:
        await pool.close()
    night = tmp_path / "night1.txt"
    night.write_text("DM: The bell tolls.\n")
    assert lk("ingest", str(night), "--session", "Night 1", "-c", "Ashfall Reach").returncode == 0
    assert lk("campaign", "use", "Goblin Oneshot").returncode == 0

    use = "`lorekeeper campaign use 'Ashfall Reach'` or pass `--campaign 'Ashfall Reach'`"
    accept = lk("review", "accept", f"e{item.id}")
    assert (accept.returncode, accept.stderr) == (
        1,
        f"error: no review item e{item.id} in campaign 'Goblin Oneshot'; e{item.id} is in campaign 'Ashfall Reach': "
        f"{use}\n",
    )
    assert lk("review", "accept", f"e{item.id}", "-c", "Ashfall Reach").returncode == 0
    shown = lk("entity", "show", "the hold")
    assert shown.stderr == (
        f"error: no entity named 'the hold' in campaign 'Goblin Oneshot'; 'the hold' is in campaign 'Ashfall Reach': "
        f"{use}\n"
    )
    deleted = lk("session", "delete", "night 1", "--yes")
    assert deleted.stderr == (
        f"error: no session titled 'night 1' in campaign 'Goblin Oneshot'; 'night 1' is in campaign 'Ashfall Reach': "
        f"{use}\n"
    )
    # in two other campaigns: both named; in none, or only in another guild's: the usual next step
    assert lk("entity", "add", "Ironhold", "place", "-c", "Third").returncode == 0
    both = lk("entity", "show", "Ironhold")
    assert both.stderr == (
        "error: no entity named 'Ironhold' in campaign 'Goblin Oneshot'; 'Ironhold' is in campaigns "
        "'Ashfall Reach', 'Third': pass `--campaign NAME` with one of them\n"
    )
    assert lk("entity", "show", "Skyreach").stderr == "error: no entity named 'Skyreach' in campaign 'Goblin Oneshot'\n"
    assert lk("review", "reject", "f999999").stderr == (
        "error: no review item f999999 in campaign 'Goblin Oneshot': `lorekeeper review list` shows those waiting\n"
    )


def test_a_players_view_names_no_other_campaign_holding_a_name_it_cannot_find(lk) -> None:
    """`entity show "Devo'ssa" --as-player` said "'Devo'ssa' is in campaigns 'RT', 'Scratch'": a secret's exact
    name confirmed to whoever guessed it. The DM's own view keeps the hint."""
    for name in ("Reeds", "Ashes"):
        assert lk("campaign", "create", name).returncode == 0
    assert lk("entity", "add", "Devo'ssa", "npc", "--secret", "-c", "Ashes").returncode == 0
    assert lk("campaign", "use", "Reeds").returncode == 0
    shown = lk("entity", "show", "Devo'ssa", "--as-player")
    assert (shown.returncode, shown.stderr) == (1, "error: no entity named \"Devo'ssa\" in campaign 'Reeds'\n")
    dm = lk("entity", "show", "Devo'ssa")
    assert dm.returncode == 1 and "is in campaign 'Ashes'" in dm.stderr


def test_entity_attributes_keep_to_what_a_campaign_file_holds(lk) -> None:
    assert lk("campaign", "create", "C").returncode == 0
    nested = lk("entity", "add", "Golem", "npc", "--attr", 'stats={"str":18}')
    assert nested.returncode == 2 and "Traceback" not in nested.stderr
    assert (
        "Invalid value for --attr: attribute 'stats' must be text, a number, true/false or empty, "
        "or a list of those, not a mapping" in nested.stderr
    )
    assert lk("entity", "show", "Golem").returncode == 1  # nothing added
    assert lk("entity", "add", "Golem", "npc", "--attr", 'stats=[18, "str"]').returncode == 0
    exported = lk("campaign", "export")
    assert exported.returncode == 0 and "Golem" in exported.stdout, exported.stderr


def test_a_name_pasted_with_a_look_alike_letter_is_refused_saying_which_and_changes_nothing(lk, tmp_path: Path) -> None:
    """A pasted "Vаx" with a Cyrillic а (U+0430) would be a second Vax the DM cannot tell from the first."""
    assert lk("campaign", "create", "C").returncode == 0
    assert lk("entity", "add", "Vax", "npc").returncode == 0
    said = "'V\u0430x' mixes scripts: '\u0430' (U+0430 CYRILLIC SMALL LETTER A) looks like Latin 'a'; type it as 'Vax'"
    world = tmp_path / "world.yaml"
    world.write_text(
        "entities:\n  - {name: Ironhold, type: place}\n  - {name: V\u0430x, type: npc}\n",
        encoding="utf-8",
    )
    loaded = lk("campaign", "load", str(world))
    assert loaded.returncode == 1
    assert loaded.stderr == f"error: {world}:3: entity #2 'V\u0430x': name {said}\n"
    assert [e["name"] for e in json.loads(lk("entity", "list", "--json").stdout)] == ["Vax"]  # all or nothing
    # the same rule where the CLI (and /entity, which shares its code) adds a name or an alias
    added = lk("entity", "add", "V\u0430x", "npc")
    assert (added.returncode, added.stderr) == (1, f"error: name: {said}\n")
    alias = lk("entity", "add", "Vex", "npc", "--alias", "V\u0430x")
    assert (alias.returncode, alias.stderr) == (1, f"error: aliases: {said}\n")
    assert [e["name"] for e in json.loads(lk("entity", "list", "--json").stdout)] == ["Vax"]
    # a name wholly in another script, or Latin with accents and apostrophes, is a name of its own
    for name in ("\u0412\u0430\u0445", "Zo\u00eb", "Yug'Voril"):
        assert lk("entity", "add", name, "npc").returncode == 0, name


def test_text_that_is_not_utf8_on_the_command_line_is_a_clear_error(lk, tmp_path: Path) -> None:
    assert lk("campaign", "create", "C").returncode == 0
    not_text = "which is not a character (half of a UTF-16 surrogate pair, or a byte that is not UTF-8)"
    # a byte that is not UTF-8 reaches Python as a lone surrogate (U+DCFF for 0xFF)
    attr = lk("entity", "add", "Golem", "npc", "--attr", "k=v\udcff")
    assert attr.returncode == 2 and "Traceback" not in attr.stderr
    assert f"Invalid value for --attr: attribute 'k' contains U+DCFF at position 2, {not_text}" in attr.stderr
    (tmp_path / "night.txt").write_text("DM: Roll.\n")
    titled = lk("ingest", str(tmp_path / "night.txt"), "--session", "a\udcffb")
    assert titled.returncode == 1
    assert titled.stderr == f"error: session title contains U+DCFF at position 2, {not_text} and cannot be stored\n"


def test_a_transcript_not_in_utf8_is_refused_with_a_non_zero_exit(lk, tmp_path: Path) -> None:
    assert lk("campaign", "create", "C").returncode == 0
    path = tmp_path / "latin1.txt"
    path.write_bytes("".join(f"DM: Café {i}\n" for i in range(9)).encode("latin-1"))
    res = lk("ingest", str(path))
    assert (res.returncode, res.stdout) == (1, "")
    assert res.stderr == (
        "error: latin1.txt is not UTF-8 text (it looks like Latin-1: 9 of 9 lines are not UTF-8): save it as UTF-8\n"
    )


def test_ingest_help_says_which_session_a_line_goes_to(lk, tmp_path: Path) -> None:
    """`--session` said "Session title (default: the file name)": the default is the name without its extension,
    and a .jsonl line naming its session goes to that one whatever --session says."""
    assert lk("campaign", "create", "T").returncode == 0
    (tmp_path / "week_one.txt").write_text("DM: Hello there.\n")
    assert "(session: week_one)" in lk("ingest", str(tmp_path / "week_one.txt")).stdout
    (tmp_path / "export.jsonl").write_text(
        '{"speaker": "DM", "text": "Hi again.", "session": "Night 10"}\n{"speaker": "DM", "text": "No title."}\n'
    )
    assert "(sessions: Night 10, Foo)" in lk("ingest", str(tmp_path / "export.jsonl"), "--session", "Foo").stdout
    shown = " ".join(lk("ingest", "--help").stdout.split())
    assert (
        "--session TITLE Session title (default: the file's name without its extension); a .jsonl line naming "
        'its "session" goes to that one instead.'
    ) in shown


def test_a_transcript_refused_for_a_session_of_another_says_how_to_give_it_its_own(lk, tmp_path: Path) -> None:
    """Two weeks each saved as transcript.txt: the second goes into the first's session by its file name."""
    assert lk("campaign", "create", "C").returncode == 0
    week1, week2 = tmp_path / "week1", tmp_path / "week2"
    for folder, said in ((week1, "The gate is shut."), (week2, "The key opens the gate.")):
        folder.mkdir()
        (folder / "transcript.txt").write_text(f"DM: {said}\n")
    assert lk("ingest", str(week1 / "transcript.txt")).returncode == 0
    res = lk("ingest", str(week2 / "transcript.txt"))
    assert res.returncode == 1
    assert res.stderr == (
        "error: line 1 of this session already says 'The gate is shut.' (DM), not 'The key opens the gate.' (DM): "
        "a different transcript needs a session of its own: give it one with `--session TITLE`\n"
    )
    assert lk("ingest", str(week2 / "transcript.txt"), "--session", "Week 2").returncode == 0


async def test_a_transcript_stored_as_another_session_is_refused_naming_it(lk, fresh_dsn: str, tmp_path: Path) -> None:
    """Imported with --session, then again without it: the copy would be a second session of the same lines (its
    own recap and event, and "last mentioned" pointing at it)."""
    assert lk("campaign", "create", "C").returncode == 0
    said = [f"DM: The bell tolls {n} times." for n in range(1, 15)] + ["Ana: We run."]
    night = tmp_path / "night1.txt"
    night.write_text("".join(f"{line}\n" for line in said))
    assert lk("ingest", str(night), "--session", "Night 1").returncode == 0
    conn = await asyncpg.connect(fresh_dsn)
    try:

        async def stored() -> list[tuple[str, str, int]]:
            rows = await conn.fetch(
                "SELECT c.name, s.title, count(e.id) AS n FROM sessions s JOIN campaigns c ON c.id = s.campaign_id"
                " LEFT JOIN session_entries e ON e.session_id = s.id GROUP BY c.name, s.id ORDER BY s.id"
            )
            return [tuple(r) for r in rows]

        refused = (
            "is already imported as session 'Night 1' (15 lines): `--session 'Night 1'` imports it into that "
            "session again (with `--started DATE` to correct its date); `--again` imports it as a new session anyway\n"
        )
        jobs = await conn.fetchval("SELECT count(*) FROM pgqueuer")
        res = lk("ingest", str(night))
        assert (res.returncode, res.stdout, res.stderr) == (1, "", f"error: night1.txt {refused}")
        fixed = tmp_path / "night1-fixed.txt"  # one line edited: still the same night
        fixed.write_text("".join(f"{line}\n" for line in said).replace("Ana: We run.", "Ana: We flee."))
        res = lk("ingest", str(fixed), "--session", "Night 2")
        assert (res.returncode, res.stderr) == (1, f"error: night1-fixed.txt {refused}")
        assert await stored() == [("C", "Night 1", 15)]  # nothing written, no session made
        assert await conn.fetchval("SELECT count(*) FROM pgqueuer") == jobs

        same = lk("ingest", str(night), "--session", "night 1")  # its own session: a re-run changes nothing
        assert same.returncode == 0 and ", 0 new," in same.stdout
        assert lk("ingest", str(night), "--again").returncode == 0
        assert lk("campaign", "create", "D").returncode == 0
        other = lk("ingest", str(night), "--campaign", "D")  # another campaign's copy is its own
        assert other.returncode == 0, other.stderr
        assert await stored() == [("C", "Night 1", 15), ("C", "night1", 15), ("D", "night1", 15)]
    finally:
        await conn.close()


async def test_session_list_says_when_each_was_played_its_lines_and_whether_it_is_recapped(
    lk, fresh_dsn: str, tmp_path: Path
) -> None:
    berlin = {"TZ": "Europe/Berlin"}  # the machine's time zone: what --started means and what the list shows
    assert lk("campaign", "create", "C").returncode == 0
    assert lk("session", "list").stdout == "no sessions in C yet: `lorekeeper ingest FILE` imports one\n"
    (tmp_path / "night1.txt").write_text("DM: The bell tolls.\nAna: We run.\n")
    (tmp_path / "night2.txt").write_text("DM: The gate opens.\n")
    assert lk("ingest", str(tmp_path / "night2.txt"), "--started", "2024-03-09 19:30", env=berlin).returncode == 0
    night1 = lk("ingest", str(tmp_path / "night1.txt"), "--session", "Night 1", "--started", "2024-03-02", env=berlin)
    assert night1.returncode == 0
    conn = await asyncpg.connect(fresh_dsn)
    try:
        await conn.execute("UPDATE sessions SET summary = 'The bell tolled.' WHERE title = 'Night 1'")
        await conn.execute(  # being recorded: not ended
            "INSERT INTO sessions (campaign_id, title, started_at) SELECT id, 'Tonight', '2024-03-16 18:00Z'"
            " FROM campaigns"
        )
    finally:
        await conn.close()
    assert lk("session", "list", env=berlin).stdout == (
        "title    started               lines  status  recap\n"
        "-------  --------------------  -----  ------  -------\n"
        "Night 1  2024-03-02            2      ended   yes\n"  # a day alone: that day, as given, in every zone
        "night2   2024-03-09 19:30 CET  1      ended   not yet\n"
        "Tonight  2024-03-16 19:00 CET  0      live\n"
    )
    listed = json.loads(lk("session", "list", "--json").stdout)
    assert [(s["title"], s["lines"], s["ended_at"] is None, s["summary"]) for s in listed] == [
        ("Night 1", 2, False, "The bell tolled."),
        ("night2", 1, False, None),
        ("Tonight", 0, True, None),
    ]
    assert lk("campaign", "create", "D").returncode == 0
    assert lk("session", "list", "--campaign", "D", "--json").stdout == "[]\n"


def test_a_session_given_only_its_day_keeps_that_day_in_every_time_zone(lk, tmp_path: Path) -> None:
    """`--started 2026-03-14` was stored at noon UTC, which is 02:00 on the 15th at UTC+14: the session list and the
    recap showed the next day there. A day alone is shown as given, in the list, the recap and a citation."""
    assert lk("campaign", "create", "C").returncode == 0
    (tmp_path / "night.txt").write_text("DM: The bell tolls.\nAna: We run.\n")
    far_east, far_west = {"TZ": "Pacific/Kiritimati"}, {"TZ": "America/Adak"}
    night = lk("ingest", str(tmp_path / "night.txt"), "--session", "Night 1", "--started", "2026-03-14", env=far_east)
    assert night.returncode == 0, night.stderr
    for zone in (far_east, far_west):
        assert lk("session", "list", env=zone).stdout.splitlines()[2].split()[:3] == ["Night", "1", "2026-03-14"]
        assert lk("recap", "Night 1", env=zone).stdout.splitlines()[0] == "Recap: Night 1 (started 2026-03-14)"
        assert "Night 1, 2026-03-14" in lk("search", "bell", env=zone).stdout


def test_a_session_played_from_noon_utc_keeps_its_time(lk, tmp_path: Path) -> None:
    """A day alone is stored at noon UTC; a session given the time 12:00 UTC was shown as a bare day too."""
    assert lk("campaign", "create", "C").returncode == 0
    (tmp_path / "night.txt").write_text("DM: The bell tolls.\nAna: We run.\n")
    utc = {"TZ": "UTC"}
    night = lk("ingest", str(tmp_path / "night.txt"), "--session", "Noon", "--started", "2026-03-14 12:00", env=utc)
    assert night.returncode == 0, night.stderr
    assert lk("session", "list", env=utc).stdout.splitlines()[2].split()[:4] == ["Noon", "2026-03-14", "12:00", "UTC"]
    assert lk("recap", "Noon", env=utc).stdout.splitlines()[0] == "Recap: Noon (started 2026-03-14 12:00)"


async def test_session_delete_undoes_an_import_under_the_wrong_title(lk, fresh_dsn: str, tmp_path: Path) -> None:
    """The walk-through's mistake: a transcript imported twice (the second time without --session)."""
    assert lk("campaign", "create", "C").returncode == 0
    night = tmp_path / "night1.txt"
    night.write_text("DM: The bell tolls.\nAna: We run.\n")
    assert lk("ingest", str(night), "--session", "Night 1").returncode == 0
    assert lk("ingest", str(night), "--again").returncode == 0
    conn = await asyncpg.connect(fresh_dsn)
    try:
        await conn.execute(  # being recorded: not ended
            "INSERT INTO sessions (campaign_id, title) SELECT id, 'Tonight' FROM campaigns"
        )
        res = lk("session", "delete", "nigth1")
        assert (res.returncode, res.stderr) == (
            1,
            "error: no session titled 'nigth1' in campaign 'C' (did you mean 'night1'?): "
            "`lorekeeper session list` shows them\n",
        )
        declined = lk("session", "delete", "night1", input="n\n")
        assert declined.returncode == 1
        assert "delete session 'night1' of C with its 2 lines, recap and the review items only it proposed?" in (
            declined.stderr
        )
        live = lk("session", "delete", "Tonight", "--yes")
        assert live.returncode == 1
        assert live.stderr.startswith("error: session 'Tonight' has not ended (it may be being recorded or imported")
        assert "`lorekeeper session delete Tonight --even-if-live` deletes it" in live.stderr
        titles = "SELECT title FROM sessions ORDER BY id"
        assert [r[0] for r in await conn.fetch(titles)] == ["Night 1", "night1", "Tonight"]

        res = lk("session", "delete", "NIGHT1", input="y\n")
        assert res.returncode == 0, res.stderr
        assert res.stdout == "Deleted session 'night1': 2 lines, 0 passages, 3 waiting background jobs.\n"
        assert [r[0] for r in await conn.fetch(titles)] == ["Night 1", "Tonight"]
        assert await conn.fetchval("SELECT count(*) FROM session_entries") == 2
        assert lk("session", "delete", "Tonight", "--yes", "--even-if-live").returncode == 0
    finally:
        await conn.close()


async def test_review_accept_decides_every_id_it_can_and_says_which_it_could_not(lk, fresh_dsn: str) -> None:
    """A DM months in: `review accept … f153 f154 e914 …` stopped at "f154 was already rejected" (rejected with its
    entity by an earlier command) and left the six ids after it waiting, without saying so."""
    assert lk("campaign", "create", "C").returncode == 0
    pool = await create_pool(fresh_dsn)
    try:
        memory = Memory(pool)
        mem = memory.campaign((await memory.campaigns().get("C")).id)
        guess = Provenance(source=Source.inferred, confidence=0.3)
        a, b, c = [
            await mem.graph.add_entity(EntityIn(name=n, type=EntityType.npc, status="pending", provenance=guess))
            for n in ("Korvash", "Mirelle", "Tobin")
        ]
        assert lk("review", "reject", f"e{c.id}").returncode == 0
        res = lk("review", "accept", f"e{a.id}", "e999999", f"e{c.id}", f"e{b.id}")
        assert res.returncode == 1
        assert res.stdout == f"accepted e{a.id}: new npc 'Korvash'\naccepted e{b.id}: new npc 'Mirelle'\n"
        assert res.stderr.splitlines() == [
            "error: no review item e999999 in campaign 'C': `lorekeeper review list` shows those waiting",
            f"error: e{c.id} was already rejected: new npc 'Tobin'",
            f"error: e999999, e{c.id} not accepted (said above); the others were",
        ]
        statuses = {e.name: e.status for e in await mem.graph.list_entities(status=None)}
        assert statuses == {"Korvash": "accepted", "Mirelle": "accepted", "Tobin": "rejected"}

        res = lk("review", "reject", f"e{b.id}", "--json")
        assert res.returncode == 1 and res.stderr == f"error: e{b.id} was already accepted: new npc 'Mirelle'\n"
        assert json.loads(res.stdout) == []
    finally:
        await pool.close()


async def test_review_accept_and_reject_name_the_items_decided_with_it(lk, fresh_dsn: str) -> None:
    """A DM's first evening: four items waited (an event, its link, a quest, its link); `accept f1` and `reject
    e1800` each named one item, and `review list` then said "nothing to review"."""
    assert lk("campaign", "create", "C").returncode == 0
    pool = await create_pool(fresh_dsn)
    try:
        memory = Memory(pool)
        mem = memory.campaign((await memory.campaigns().get("C")).id)
        guess = Provenance(source=Source.inferred, confidence=0.55)
        alfield = await mem.graph.add_entity(EntityIn(name="Alfield", type=EntityType.location))
        arrival, quest = [
            await mem.graph.add_entity(
                EntityIn(name=n, type=EntityType.event, description=d, status="pending", provenance=guess)
            )
            for n, d in (("Arrival at Alfield", "an arrival"), ("Quest from Bryce", "a quest taken"))
        ]
        located = await mem.graph.add_relationship(
            RelationshipIn(
                source_id=arrival.id, type="located_in", target_id=alfield.id, status="pending", provenance=guess
            )
        )
        took = await mem.graph.add_relationship(
            RelationshipIn(
                source_id=alfield.id, type="took_part_in", target_id=quest.id, status="pending", provenance=guess
            )
        )
        res = lk("review", "accept", f"f{located.id}")
        assert res.returncode == 0, res.stderr
        assert res.stdout == (
            f"accepted f{located.id}: Arrival at Alfield is located in Alfield; "
            f"with it e{arrival.id}: new event 'Arrival at Alfield': an arrival\n"
        )
        res = lk("review", "reject", f"e{quest.id}")
        assert res.returncode == 0, res.stderr
        assert res.stdout == (
            f"rejected e{quest.id}: new event 'Quest from Bryce': a quest taken; "
            f"with it f{took.id}: Alfield took part in Quest from Bryce\n"
        )
        assert lk("review", "list").stdout == "nothing to review in C\n"
    finally:
        await pool.close()


async def test_review_reject_of_an_entity_and_its_fact_goes_on_to_the_next_ids(lk, fresh_dsn: str) -> None:
    """A DM months in rejected an event and its link as the list showed them, then the next event: `review reject
    e904 f58 e905 f59` stopped at "f58 was already rejected" (rejected with e904) and left e905 and f59 waiting."""
    assert lk("campaign", "create", "C").returncode == 0
    pool = await create_pool(fresh_dsn)
    try:
        memory = Memory(pool)
        mem = memory.campaign((await memory.campaigns().get("C")).id)
        guess = Provenance(source=Source.inferred, confidence=0.55)
        grog = await mem.graph.add_entity(EntityIn(name="Grog", type=EntityType.player))

        async def proposed(name: str) -> tuple[int, int]:
            """A pending event and Grog's pending link to it, as the review queue lists them: (e id, f id)."""
            event = await mem.graph.add_entity(
                EntityIn(name=name, type=EntityType.event, status="pending", provenance=guess)
            )
            link = RelationshipIn(
                source_id=grog.id, type="took_part_in", target_id=event.id, status="pending", provenance=guess
            )
            return event.id, (await mem.graph.add_relationship(link)).id

        (e1, f1), (e2, f2) = [await proposed(n) for n in ("Death of Grog", "Arrival at Westruun")]
        res = lk("review", "reject", f"e{e1}", f"f{f1}", f"e{e2}", f"f{f2}")
        assert res.returncode == 0, res.stderr
        assert f"rejected f{f1}: with e{e1} above\n" in res.stdout
        assert f"rejected f{f2}: with e{e2} above\n" in res.stdout
        assert lk("review", "list").stdout == "nothing to review in C\n"

        # accepting a fact accepts its entity: the entity named after it is no error either
        e3, f3 = await proposed("Arrival at Emon")
        res = lk("review", "accept", f"F{f3}", f" E{e3}")
        assert res.returncode == 0, res.stderr
        assert res.stdout.endswith(f"accepted e{e3}: with f{f3} above\n")
        assert lk("review", "list").stdout == "nothing to review in C\n"

        e4, f4 = await proposed("Arrival at Kymal")
        res = lk("review", "accept", f"f{f4}", f"e{e4}", "--json")
        assert res.returncode == 0, res.stderr
        assert [i["ref"] for i in json.loads(res.stdout)] == [f"f{f4}"]
    finally:
        await pool.close()


async def _korvash_heard(mem: CampaignMemory, said: str) -> int:
    """Korvash's id, waiting for review, read at 0:06 of "Night one" from Ana's line ``said``."""
    night = await mem.log.start_session("Night one")
    line = await mem.log.write(night.id, EntryIn(speaker="Ana", text=said, start_s=6.0))
    unsure = Provenance(source=Source.stated, confidence=0.55, session_id=night.id, entry_ids=[line.id])
    korvash = EntityIn(name="Korvash", type=EntityType.npc, status="pending", provenance=unsure)
    return (await mem.graph.add_entity(korvash)).id


async def test_review_list_shows_where_and_what_was_said(lk, fresh_dsn: str) -> None:
    """The DM checks what the table said before accepting: the session's title, the time and the line."""
    assert lk("campaign", "create", "C").returncode == 0
    pool = await create_pool(fresh_dsn)
    try:
        memory = Memory(pool)
        mem = memory.campaign((await memory.campaigns().get("C")).id)
        said = "Korvash runs to the Cinder Cup every night after the bells of the old chapel have rung twice."
        await _korvash_heard(mem, said)
        await mem.graph.add_entity(EntityIn(name="Mirelle", type=EntityType.npc, status="pending"))
        shown = lk("review", "list", env={"COLUMNS": "100"}).stdout
        listed = shown.splitlines()
        assert listed[0].split() == ["id", "kind", "item", "confidence", "said"]
        # the line said is whole, wrapped between words in its column (it was cut at 80 characters, mid-word)
        column = listed[0].index("said")
        said_lines = [line[column:] for line in listed[2:-1]]
        assert " ".join(said_lines) == f"Night one, {today()} at 0:06: Ana: “{said}”"
        assert all(len(line) <= 100 for line in listed)
        assert listed[-1].endswith("1.00")  # no line behind it: nothing to show
        [item, _] = json.loads(lk("review", "list", "--json").stdout)
        assert item["entity"]["name"] == "Korvash" and item["said"]["text"] == said
    finally:
        await pool.close()


async def test_review_show_shows_an_item_with_its_lines_whole(lk, fresh_dsn: str) -> None:
    """`review show f7` said "'f7' is a review item, not an import batch": the DM expects the item itself."""
    assert lk("campaign", "create", "C").returncode == 0
    pool = await create_pool(fresh_dsn)
    try:
        memory = Memory(pool)
        mem = memory.campaign((await memory.campaigns().get("C")).id)
        said = "Korvash runs to the Cinder Cup every night after the bells of the old chapel have rung twice. " * 3
        e = await _korvash_heard(mem, said.strip())
        shown = lk("review", "show", f"e{e}", env={"COLUMNS": "100"})
        assert shown.returncode == 0, shown.stderr
        rows = shown.stdout.splitlines()
        assert rows[:3] == [f"e{e} (entity, pending): new npc 'Korvash'", "  confidence 0.55", "  said in:"]
        assert all(len(row) <= 100 for row in rows)
        assert (
            " ".join(row.strip() for row in rows[3:-3]) == f"Night one, {today()} at 0:06: Ana: “{said.strip()}”"
        )  # whole
        assert f"`lorekeeper review accept e{e}`, `lorekeeper review reject e{e}`" in rows[-3]
        assert f"`lorekeeper review same e{e} ENTITY`" in rows[-1]
        assert lk("review", "accept", f"e{e}").returncode == 0
        decided = lk("review", "show", f"e{e}").stdout.splitlines()
        assert decided[0] == f"e{e} (entity, accepted): new npc 'Korvash'"
        assert not any("review accept" in row for row in decided)  # decided: nothing left to do
        missing = lk("review", "show", "f999")
        assert missing.returncode == 1 and missing.stderr.startswith("error: no review item f999 in campaign 'C'")
    finally:
        await pool.close()


#: A narrator's paragraph that names its entity late, as a DM's long descriptions (CRD3's run to 400 words) do.
NARRATION = (
    "At this point, as you're running, you're rushing forward through the undercroft, past the broken shackles and "
    "the torches you left burning. To the left of your ear, you hear a thud and you glance over your shoulder. "
    "And there, face down on the ground, is Korvash, sprawled out in the dirt with a single dagger sticking out "
    "of the center of his back. Blood begins to pour out from the wound as the others catch up with you, and for "
    "a long moment nobody says anything at all while the bells of the old chapel ring twice in the distance, "
    "and the rain begins again over the broken rooftops of the city."
)


async def test_long_lines_show_their_part_naming_the_entity(lk, fresh_dsn: str) -> None:
    """`review list`, `entity mentions` and `entity show` showed a long line whole (a screen for one review item)
    or cut at a fixed width, mid-word and before the name it was listed for."""
    assert lk("campaign", "create", "C").returncode == 0
    pool = await create_pool(fresh_dsn)
    try:
        memory = Memory(pool)
        mem = memory.campaign((await memory.campaigns().get("C")).id)
        night = await mem.log.start_session("Night one")
        line = await mem.log.write(night.id, EntryIn(speaker="DM", text=NARRATION, start_s=6.0))
        unsure = Provenance(source=Source.stated, confidence=0.55, session_id=night.id, entry_ids=[line.id])
        await mem.graph.add_entity(EntityIn(name="Korvash", type=EntityType.npc, status="pending", provenance=unsure))
        listed = lk("review", "list", env={"COLUMNS": "100"}).stdout.splitlines()
        column = listed[0].index("said")
        said = " ".join(row[column:].strip() for row in listed[2:])
        assert "is Korvash, sprawled out" in said and said.endswith("…”") and len(said) < len(NARRATION)
        [item] = json.loads(lk("review", "list", "--json").stdout)
        assert item["said"]["text"] == NARRATION  # a script still reads it whole
        assert lk("review", "accept", item["ref"]).returncode == 0
        await index_lines(mem.db, mem.campaign_id, night.id, {line.id: [int(item["ref"][1:])]})  # as the chunk job

        mentioned = lk("entity", "mentions", "Korvash")
        assert mentioned.returncode == 0, mentioned.stderr
        [shown] = [row for row in mentioned.stdout.splitlines() if row.startswith("  Night one")]
        quote = shown.split(", DM: ", 1)[1]
        assert "is Korvash, sprawled out" in quote and quote.startswith("…") and quote.endswith("…")
        assert f" {quote.strip('…')} " in f" {NARRATION} "  # cut between words
        [last] = [row for row in lk("entity", "show", "Korvash").stdout.splitlines() if "last mentioned" in row]
        assert "is Korvash," in last and last.endswith("…")
    finally:
        await pool.close()


async def test_review_edit_corrects_an_item_and_accepts_it_as_the_edit_button_does(lk, fresh_dsn: str) -> None:
    """A CLI-only DM could accept or reject what the bot misheard, not correct it (`review same` on a fact even
    told them to edit it)."""
    assert lk("campaign", "create", "C").returncode == 0
    pool = await create_pool(fresh_dsn)
    try:
        memory = Memory(pool)
        mem = memory.campaign((await memory.campaigns().get("C")).id)
        guess = Provenance(source=Source.inferred, confidence=0.3)
        await mem.graph.add_entity(EntityIn(name="Ironhold", type=EntityType.place))
        mira = await mem.graph.add_entity(
            EntityIn(name="Mira", type=EntityType.npc, status="pending", provenance=guess)
        )
        korvash = await mem.graph.add_entity(EntityIn(name="Korvash", type=EntityType.npc))
        fact = await mem.graph.add_relationship(
            RelationshipIn(source_id=korvash.id, type="lives_in", value="Ironhld", status="pending", provenance=guess)
        )
        e, f = f"e{mira.id}", f"f{fact.id}"

        # refused, each in one line that says what to give instead, and the item still waits
        for args, said in [
            (
                (e, "--type", "dragon"),
                "'dragon' is not an entity type; use one of npc, location, item, faction, quest, event, concept, "
                "player",
            ),
            ((f, "--target", "Ironhld"), "no entity named 'Ironhld' in campaign 'C'"),
            (
                (f, "--name", "Ironhold"),
                f"{f} is a fact: it takes --type (its relation), --target or --value, not --name",
            ),
            (
                (e,),
                f"nothing to change: give --name, --type, --description or --alias; `lorekeeper review accept {e}` "
                "accepts it as it is",
            ),
        ]:
            refused = lk("review", "edit", *args)
            assert refused.returncode == 1 and refused.stderr.startswith(f"error: {said}"), refused.stderr
        assert await mem.review.count() == 2

        renamed = lk("review", "edit", e, "--name", "Mira Tolvanek", "--type", "NPC", "-d", "a smith")
        assert renamed.returncode == 0, renamed.stderr
        assert renamed.stdout == (
            f"edited and accepted {e}: new npc 'Mira Tolvanek': a smith\n"
            "its old name 'Mira' stays as an alias (`lorekeeper entity edit 'Mira Tolvanek' --alias -` clears it)\n"
        )
        moved = json.loads(lk("review", "edit", f, "--target", "Ironhold", "--json").stdout)
        assert (moved["ref"], moved["fact"]["target_name"], moved["fact"]["value"]) == (f, "Ironhold", None)
        assert moved["fact"]["status"] == "accepted"
        assert (await mem.graph.get_entity("Mira")).model_dump(include={"name", "aliases", "status"}) == {
            "name": "Mira Tolvanek",
            "aliases": ["Mira"],
            "status": ReviewStatus.accepted,
        }
        again = lk("review", "edit", e, "--name", "Mira")
        assert again.returncode == 1 and again.stderr.startswith(f"error: {e} was already accepted")
    finally:
        await pool.close()


async def test_entity_show_says_the_sessions_it_took_part_in_in_one_line(lk, fresh_dsn: str) -> None:
    """As /entity show does: a player of a two-year campaign took part in a hundred sessions, one line each."""
    assert lk("campaign", "create", "C").returncode == 0
    pool = await create_pool(fresh_dsn)
    try:
        memory = Memory(pool)
        mem = memory.campaign((await memory.campaigns().get("C")).id)
        grog = await mem.graph.add_entity(EntityIn(name="Grog", type=EntityType.player))
        for n in range(1, 6):
            night = await mem.graph.add_entity(EntityIn(name=f"Session: Night {n}", type=EntityType.event))
            await mem.graph.add_relationship(RelationshipIn(source_id=grog.id, type="took_part_in", target_id=night.id))
        # an event of the story (extraction reads "Grog beheads Jazna" so) is a fact, not a session
        death = await mem.graph.add_entity(EntityIn(name="Death of Jazna", type=EntityType.event))
        await mem.graph.add_relationship(RelationshipIn(source_id=grog.id, type="took_part_in", target_id=death.id))
    finally:
        await pool.close()
    shown = lk("entity", "show", "Grog")
    assert shown.stdout == (
        "Grog (player)\n  - Grog took part in Death of Jazna\n"
        "  took part in 5 sessions: Night 5, Night 4, Night 3 and 2 earlier\n"
    )
    night = lk("entity", "show", "Session: Night 1").stdout  # the session's own card still lists who took part
    assert "  - Grog took part in Session: Night 1\n" in night


async def test_entity_show_says_who_took_part_in_an_event_in_one_line(lk, fresh_dsn: str) -> None:
    """The recap's event of a battle showed one "X —took_part_in→ it" line for each of 18 who took part."""
    assert lk("campaign", "create", "C").returncode == 0
    pool = await create_pool(fresh_dsn)
    try:
        mem = Memory(pool).campaign((await Memory(pool).campaigns().get("C")).id)
        death = await mem.graph.add_entity(EntityIn(name="Death of Sylas Briarwood", type=EntityType.event))
        for name, secret in (("Vex'ahlia", False), ("Percy", False), ("The Raven Queen", True)):
            visibility = Visibility.secret if secret else Visibility.public
            who = await mem.graph.add_entity(EntityIn(name=name, type=EntityType.npc, visibility=visibility))
            await mem.graph.add_relationship(RelationshipIn(source_id=who.id, type="took_part_in", target_id=death.id))
    finally:
        await pool.close()
    shown = lk("entity", "show", "Death of Sylas Briarwood")
    assert shown.stdout == (
        "Death of Sylas Briarwood (event)\n  - who took part (3): Vex'ahlia, Percy, The Raven Queen (secret)\n"
    ), shown.stdout


def test_an_entity_added_after_the_recaps_that_named_it_took_part_in_those_sessions(lk, tmp_path: Path) -> None:
    """The recaps were written before the DM added Vell Sorrowmere (secret; the table knows her as the Grey Widow):
    the two sessions that named her are on her card, the one that did not is not; an entity no session named took
    part in none."""
    assert lk("campaign", "create", "C").returncode == 0
    nights = [
        "DM: Vell Sorrowmere sings in the harbour tavern.\nAna: We listen from the door.\n",
        "DM: The road north is quiet.\nBen: We make camp by the river.\n",
        "DM: The Grey Widow's song drifts over the water.\nAna: That voice again.\n",
    ]
    for n, text in enumerate(nights, start=1):
        (tmp_path / f"night{n}.txt").write_text(text)
        ingested = lk(
            "ingest", str(tmp_path / f"night{n}.txt"), "--session", f"Night {n}", "--started", f"2024-03-0{n}"
        )
        assert ingested.returncode == 0, ingested.stderr
    assert lk("worker", "--drain").returncode == 0  # the recaps
    added = lk("entity", "add", "Vell Sorrowmere", "npc", "--alias", "The Grey Widow", "--secret")
    assert added.returncode == 0, added.stderr
    shown = lk("entity", "show", "Vell Sorrowmere").stdout
    assert "  took part in 2 sessions: Night 3, Night 1\n" in shown, shown
    assert lk("entity", "add", "Mira Quell", "npc").returncode == 0
    assert lk("entity", "show", "Mira Quell").stdout == "Mira Quell (npc)\n"


def test_settings_out_of_range_are_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "LOREKEEPER_DATA_DIR": str(tmp_path)}
    env.pop("LOREKEEPER_CONFIG", None)
    for key, value, expected in [
        ("LOREKEEPER_GUILD_ID", "99999999999999999999", "error: LOREKEEPER_GUILD_ID: Input should be less than"),
        ("LOREKEEPER_GUILD_ID", "abc", "error: LOREKEEPER_GUILD_ID: Input should be a valid integer"),
        ("LOREKEEPER_EMBEDDING_DIM", "-3", "error: LOREKEEPER_EMBEDDING_DIM: Input should be greater than 0"),
        ("LOREKEEPER_OWNER_IDS", "1,2", "error: LOREKEEPER_OWNER_IDS: cannot be read (a list is written as JSON"),
        ("LOREKEEPER_LLM_TIMEOUT", "0", "error: LOREKEEPER_LLM_TIMEOUT: Input should be greater than 0"),
    ]:
        res = subprocess.run(
            [sys.executable, "-c", "from bot.cli import main; main()", "campaign", "list"],
            env={**env, key: value},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert res.returncode == 1 and res.stderr.startswith(expected) and "Traceback" not in res.stderr, res.stderr


def test_db_status_and_migrate(lk) -> None:
    status = json.loads(lk("db", "status", "--json").stdout)
    assert status["pending"] == [] and status["embedding_model"] == "all-MiniLM-L6-v2"
    assert json.loads(lk("db", "migrate", "--json").stdout) == {"applied": []}


def test_db_status_of_a_new_database_says_no_model_yet(tmp_path: Path) -> None:
    # it said "embedding: None (None dimensions)"
    env = {**os.environ, "LOREKEEPER_DATA_DIR": str(tmp_path / "new")}
    env.pop("LOREKEEPER_CONFIG", None)
    env.pop("DATABASE_URL", None)
    res = subprocess.run(
        [sys.executable, "-c", "from bot.cli import main; main()", "db", "status"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[1] == "applied:   -" and lines[2].startswith("pending:   0001_init.sql")
    assert lines[3] == "embedding: - (chosen when the migrations are applied: all-MiniLM-L6-v2, 384 dimensions)"


def test_an_embedder_no_provider_runs_is_one_line_naming_the_variables(lk) -> None:
    # the openai provider with the default model (MiniLM, a size it does not know): recall and the worker made
    # the embedder and died on a ValueError's traceback
    assert lk("campaign", "create", "C").returncode == 0
    for args in (["recall", "dragon"], ["worker", "--drain"]):
        res = lk(*args, env={"LOREKEEPER_EMBEDDING_PROVIDER": "openai", "OPENAI_API_KEY": "sk-test"})
        assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
        assert res.stderr.splitlines()[-1] == (
            "error: the dimension of embedding model 'all-MiniLM-L6-v2' is unknown: set LOREKEEPER_EMBEDDING_DIM "
            "(check LOREKEEPER_EMBEDDING_PROVIDER, LOREKEEPER_EMBEDDING_MODEL and LOREKEEPER_EMBEDDING_DIM)"
        )


def test_config_file_and_env(lk, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("accept_threshold: 7\n")
    res = lk("--config", str(bad), "campaign", "list")
    assert res.returncode == 1 and "accept_threshold" in res.stderr and "Traceback" not in res.stderr
    # a mistyped key says which key, never the value under it: it may be the bot's token
    bad.write_text("discord_tokn: MTIzNDU2.secret-token-value\n")
    res = lk("--config", str(bad), "campaign", "list")
    assert res.returncode == 1 and res.stderr.startswith(f"error: {bad}: unknown setting 'discord_tokn' (did you mean")
    assert "secret-token-value" not in res.stderr
    # names the store cannot tell apart or show are refused, one line each
    assert lk("campaign", "create", "C").returncode == 0
    assert lk("entity", "add", "Cafe\u0301", "npc").returncode == 0  # decomposed: stored composed
    assert lk("entity", "show", "Cafe\u0301").returncode == 0  # and found as typed
    twin = lk("entity", "add", "Café", "npc")
    assert twin.returncode == 1  # the name quoted as a shell takes it
    assert twin.stderr == "error: an entity named 'Café' already exists: see it with `lorekeeper entity show 'Café'`\n"
    hidden = lk("entity", "add", "Zed\u200dx", "npc")
    assert hidden.returncode == 1 and "contains U+200D ZERO WIDTH JOINER at position 4" in hidden.stderr


SAMPLE = ROOT / "campaigns" / "examples" / "sunken_crown_session1.jsonl"


def test_ingest_wait_recall_and_batch_recall(lk, tmp_path: Path) -> None:
    assert lk("campaign", "load", str(EXAMPLE)).returncode == 0
    first = lk("ingest", str(SAMPLE), "--session", "Session 1", "--wait")
    assert first.returncode == 0, first.stderr
    assert "60 new" in first.stdout
    for what in ("session lines", "passages", "entities", "pending"):
        assert what in first.stdout
    again = lk("ingest", str(SAMPLE), "--session", "Session 1", "--wait")
    assert again.returncode == 0 and "0 new" in again.stdout

    asked = json.loads(lk("recall", "who is the blacksmith of Ironhold", "--json", "--limit", "3").stdout)
    assert [e["name"] for e in asked["entities"]] == ["Ironhold"]
    hits = asked["hits"]
    assert 1 <= len(hits) <= 3
    assert any("blacksmith" in h["text"] for h in hits)
    assert all(h["refs"] and h["refs"][0].startswith("s1:L") for h in hits)
    batch = lk("recall", "--limit", "2", input="the harbour master\n\nthe Sunken Crown\n")
    assert batch.returncode == 0, batch.stderr
    lines = [json.loads(line) for line in batch.stdout.splitlines()]
    assert [len(hits) >= 1 for hits in lines] == [True, False, True]  # a blank line answers [], in its place
    assert all(len(hits) <= 2 for hits in lines)

    poisoned = tmp_path / "poisoned.jsonl"
    poisoned.write_bytes(
        b'{"speaker": "DM", "text": "The gates of Ironhold open."}\n'
        + b"\xff\xfe\x00binary junk\n"
        + b'{"speaker": "DM", "text": "'
        + b"x" * 1_100_000
        + b'"}\n'
        + b'{"speaker": "Ana", "text": "We go in."}\n'
    )
    res = lk("ingest", str(poisoned), "--session", "Session 2")
    assert res.returncode == 0, res.stderr
    assert "poisoned.jsonl:2" in res.stderr and "poisoned.jsonl:3" in res.stderr
    assert "2 new" in res.stdout


def test_a_campaign_named_with_an_emoji_is_said_as_typed_so_the_dm_can_copy_it_back(lk, tmp_path: Path) -> None:
    """ "🧙‍♂️" is a wizard, a zero-width joiner and a man: quoted by ``repr``, every message wrote the joiner as
    "\\u200d" ('🧙\\u200d♂️ Wizard night'), and a name copied from "did you mean" named no campaign."""
    wizard = "🧙\u200d♂️ Wizard night"
    created = lk("campaign", "create", wizard)
    assert created.returncode == 0 and created.stdout == f"created campaign '{wizard}' (active)\n"
    guess = lk("campaign", "use", "🧙 Wizard night")
    assert guess.returncode == 1 and f"(did you mean '{wizard}'?)" in guess.stderr
    missing = lk("entity", "show", "Nobody")
    assert missing.stderr == f"error: no entity named 'Nobody' in campaign '{wizard}'\n"
    (tmp_path / "night.txt").write_text("DM: The tower is dark.\n")
    assert lk("ingest", str(tmp_path / "night.txt"), "--session", "🧝‍♀️ Elf night").returncode == 0
    twice = lk("ingest", str(tmp_path / "night.txt"))
    assert twice.stderr.startswith("error: night.txt is already imported as session '🧝\u200d♀️ Elf night' (1 line):")
    unknown = lk("recap", "Elf night")
    assert unknown.returncode == 1 and "'🧝\u200d♀️ Elf night'" in unknown.stderr
    deleted = lk("session", "delete", "🧝\u200d♀️ Elf night", "--yes")
    assert deleted.stdout.startswith("Deleted session '🧝\u200d♀️ Elf night': 1 line")
    for said in (created, guess, missing, twice, unknown, deleted):
        assert "\\u200d" not in said.stdout + said.stderr
    gone = lk("campaign", "delete", wizard, "--yes")
    assert gone.stdout == f"deleted campaign '{wizard}'\n"


def test_a_worker_says_which_sessions_an_upgrade_reads_again_without_v(lk, fresh_dsn: str, tmp_path: Path) -> None:
    """After an upgrade the worker said only "WARNING …: 2 sessions read under older name rules are read again", and
    which sessions only with -v, by ids ("session 1 of campaign 2"): routine work, said by title for the DM."""
    assert lk("campaign", "create", "Reeds").returncode == 0
    (tmp_path / "night.txt").write_text("DM: Mira poles the ferry.\nAna: Mira says Brom paid her in silver.\n")
    assert lk("ingest", str(tmp_path / "night.txt"), "--session", "Night 1", "--wait").returncode == 0

    async def older_rules() -> int:
        conn = await asyncpg.connect(fresh_dsn)
        try:
            return await conn.fetchval("UPDATE sessions SET mention_rules = mention_rules - 1 RETURNING id")
        finally:
            await conn.close()

    night = asyncio.run(older_rules())
    # `db migrate` says the work to come too
    assert lk("db", "migrate").stdout.splitlines()[1:] == [
        "this version reads who a line names otherwise: the next worker to start (the bot's, or `lorekeeper worker`) "
        "reads the lines of 1 session again, in the background"
    ]
    drained = lk("worker", "--drain")
    assert drained.returncode == 0, drained.stderr
    said = drained.stderr.splitlines()
    assert (
        "INFO lorekeeper.reindex: this version reads who a line names otherwise: the lines of 1 session are read "
        'again, one job each in the background ("where was X said" answers as before for those not done yet)'
    ) in said
    assert f"INFO lorekeeper.reindex: Night 1 (session {night}): read again for who each line names (2 lines)" in said
    assert "WARNING" not in drained.stderr


def test_as_player_previews_recall_entity_show_and_recap_as_a_player_reads_them(lk, tmp_path: Path) -> None:
    """The DM could not see what a player would read without a player's Discord account: `--as-player` shows
    recall, an entity's card and a recap as /recall, /entity show and /recap show them to a player."""
    assert lk("campaign", "create", "Reeds").returncode == 0
    assert lk("entity", "add", "Vaskerrin", "npc", "--secret").returncode == 0
    assert lk("entity", "add", "Mira", "npc", "--description", "She owes Vaskerrin a debt.").returncode == 0
    assert lk("entity", "link", "Mira", "ally_of", "Vaskerrin").returncode == 0
    (tmp_path / "night.txt").write_text("DM: Mira poles the ferry.\nAna: Mira says Vaskerrin paid her in silver.\n")
    assert lk("ingest", str(tmp_path / "night.txt"), "--session", "Night 1", "--wait").returncode == 0
    for args in (["recall", "Mira silver", "--mode", "fulltext"], ["entity", "show", "Mira"], ["recap"]):
        dm, player = lk(*args), lk(*args, "--as-player")
        assert dm.returncode == player.returncode == 0, player.stderr
        assert "Mira says Vaskerrin paid her in silver." in dm.stdout, args
        assert "Mira says [secret] paid her in silver." in player.stdout and "Vaskerrin" not in player.stdout, args
    assert "Mira is an ally of Vaskerrin (secret)" in lk("entity", "show", "Mira").stdout
    assert "She owes [secret] a debt." in lk("entity", "show", "Mira", "--as-player").stdout
    hidden = lk("entity", "show", "Vaskerrin", "--as-player")
    assert hidden.returncode == 1 and hidden.stderr == "error: no entity named 'Vaskerrin' in campaign 'Reeds'\n"
    assert lk("entity", "show", "Vaskerrin").stdout.startswith("Vaskerrin (npc, secret)")
    data = lk("recap", "--as-player", "--json")
    assert data.returncode == 2 and "--as-player shows the text a player reads: give it without --json" in data.stderr
    batch = lk("recall", "--as-player", input="Mira\n")
    assert batch.returncode == 2 and "give it a QUERY, not queries on stdin" in batch.stderr
    # a line spoken under the secret name: the speaker is masked as the text is
    (tmp_path / "night2.txt").write_text("Vaskerrin: Mira, bring the silver.\n")
    assert lk("ingest", str(tmp_path / "night2.txt"), "--session", "Night 2", "--wait").returncode == 0
    card = lk("entity", "show", "Mira", "--as-player").stdout
    assert "by [secret]: Mira, bring the silver." in card and "Vaskerrin" not in card, card
    found = lk("recall", "bring the silver", "--mode", "fulltext", "--as-player").stdout
    assert "[secret]: Mira, bring the silver." in found and "Vaskerrin" not in found, found


def test_a_removed_secret_persons_first_and_last_names_stay_hidden_from_players(lk, tmp_path: Path) -> None:
    """A secret person's first and last names were hidden alone while the entity existed; once the DM removed it,
    its name was kept without its type, and "Holt" alone showed again."""
    assert lk("campaign", "create", "Reeds").returncode == 0
    assert lk("entity", "add", "Vaskerrin Holt", "npc", "--secret").returncode == 0
    (tmp_path / "night.txt").write_text("DM: Holt pays the ferryman in silver.\nAna: Vaskerrin Holt owes us silver.\n")
    assert lk("ingest", str(tmp_path / "night.txt"), "--session", "Night 1", "--wait").returncode == 0
    for removed in (False, True):
        if removed:
            assert lk("entity", "remove", "Vaskerrin Holt", "--yes").returncode == 0
        found = lk("recall", "ferryman silver", "--mode", "fulltext", "--as-player").stdout
        assert "[secret] pays the ferryman" in found and "Holt" not in found, (removed, found)
        guess = lk("recall", "Holt", "--mode", "fulltext", "--as-player").stdout
        assert "Holt" not in guess and "ferryman" not in guess, (removed, guess)


def test_recap_as_player_finds_and_lists_sessions_by_the_titles_a_player_reads(lk, tmp_path: Path) -> None:
    """`recap --as-player` listed the recent sessions by their secret titles, which /recap masks for a player, and
    did not find one by the masked title a player picks."""
    assert lk("campaign", "create", "Reeds").returncode == 0
    assert lk("entity", "add", "Vaskerrin", "npc", "--secret").returncode == 0
    (tmp_path / "night.txt").write_text("DM: Mira poles the ferry.\n")
    assert lk("ingest", str(tmp_path / "night.txt"), "--session", "Night of Vaskerrin").returncode == 0
    missing = lk("recap", "Night 2", "--as-player")
    assert missing.returncode == 1 and "recent ones: 'Night of [secret]'" in missing.stderr, missing.stderr
    masked = lk("recap", "Night of [secret]", "--as-player")
    assert masked.returncode == 0 and masked.stdout.startswith("Recap: Night of [secret] ("), masked.stderr
    guessed = lk("recap", "Night of Vaskerrin", "--as-player")
    assert guessed.returncode == 1 and "Vaskerrin" not in guessed.stderr.replace("'Night of Vaskerrin';", "")


def test_recall_of_nothing_is_a_usage_error(lk) -> None:
    """`lorekeeper recall ""` (or a variable left empty) answered with five arbitrary passages, the nearest
    vectors to an empty text, as if they were what the memory knows."""
    assert lk("campaign", "load", str(EXAMPLE)).returncode == 0
    assert lk("ingest", str(SAMPLE), "--session", "Session 1").returncode == 0
    for query in ("", "   "):
        empty = lk("recall", query)
        assert empty.returncode == 2 and empty.stdout == ""
        assert "QUERY is empty: give words to look for" in empty.stderr


def test_search_for_nothing_is_a_usage_error_as_recall_is(lk, tmp_path: Path) -> None:
    """`lorekeeper search ""` said "no matches", as if the words were wrong, where `recall ""` refuses."""
    assert lk("campaign", "create", "Reeds").returncode == 0
    (tmp_path / "night.txt").write_text("DM: Mira poles the ferry.\n")
    assert lk("ingest", str(tmp_path / "night.txt"), "--session", "Night 1").returncode == 0
    for text in ("", "   "):
        empty = lk("search", text)
        assert empty.returncode == 2 and empty.stdout == ""
        assert "TEXT is empty: give words to look for" in empty.stderr
    assert "Mira poles the ferry." in lk("search", "ferry").stdout


def test_search_shows_a_long_line_by_the_sentences_that_say_the_words(lk, tmp_path: Path) -> None:
    """A DM's 400-word recap printed whole for each hit: 10 hits were 522 lines. Shown as recall shows a long line,
    by the sentences around the words found (stemmed), with "…" where it goes on; `--full` and `--json` whole."""
    assert lk("campaign", "create", "Reeds").returncode == 0
    opening = "Welcome back, everyone, and thank you all for coming out tonight to the table once again."
    found = "Far to the north, three wyverns circle the broken tower, their shadows sweeping the snow."
    rest = " ".join(f"The road bends past farm number {n} where nobody has seen anything strange." for n in range(4))
    recap = f"{opening} {rest} {found} The party rests at the inn before the long climb ahead."
    (tmp_path / "night.txt").write_text(f"DM: {recap}\nSam: A wyvern!\n")
    assert lk("ingest", str(tmp_path / "night.txt"), "--session", "Night 1").returncode == 0
    shown = " ".join(lk("search", "wyvern", env={"COLUMNS": "200"}).stdout.split())
    assert f"…{found}…" in shown and "Welcome back" not in shown
    assert "A wyvern!" in shown  # a short line, whole
    assert opening in " ".join(lk("search", "wyvern", "--full", env={"COLUMNS": "200"}).stdout.split())
    hits = json.loads(lk("search", "wyvern", "--json").stdout)
    long = next(h for h in hits if h["speaker"] == "DM")
    assert long["text"] == recap and recap[slice(*long["passage"])].startswith(found)
    assert next(h for h in hits if h["speaker"] == "Sam")["passage"] is None


def test_a_speaker_no_line_was_said_by_is_one_error_not_an_empty_answer(lk, tmp_path: Path) -> None:
    """`recall --as Marsha` (for Marisha) answered as if no one asked, and `search --speaker Marsha` said "no
    matches": the DM could not tell a typo from a question the memory cannot answer."""
    assert lk("campaign", "create", "Whitestone").returncode == 0
    empty = lk("recall", "--as", "Zed", "--mode", "fulltext", "what did I say")
    assert empty.returncode == 0 and "has no lines yet" in empty.stdout  # no speakers to check against: the news
    nothing = lk("search", "--speaker", "Zed", "morning")
    assert nothing.returncode == 0 and nothing.stdout.startswith("'Whitestone' has no lines yet: import")
    (tmp_path / "night.txt").write_text(
        "DM: The Sun Tree stirs.\nMarisha: Good morning, old friend.\nMarisha: It is evening.\nSam: Hello.\n"
    )
    assert lk("ingest", str(tmp_path / "night.txt"), "--session", "Night 1").returncode == 0
    typo = lk("recall", "--as", "Marsha", "--mode", "fulltext", "what did I say to the tree")
    assert typo.returncode == 1 and typo.stdout == ""
    assert typo.stderr == "error: no line was said by 'Marsha' (did you mean 'Marisha'?)\n"
    unknown = lk("search", "--speaker", "Zed", "morning")
    assert unknown.returncode == 1
    assert unknown.stderr == "error: no line was said by 'Zed' (the speakers: 'Marisha', 'DM', 'Sam')\n"
    asked = lk("recall", "--as", "marisha", "--mode", "fulltext", "what did I say about the morning")
    assert asked.returncode == 0 and "Good morning, old friend." in asked.stdout
    assert "Good morning, old friend." in lk("search", "--speaker", "MARISHA", "morning").stdout


def test_search_takes_the_session_and_the_speaker_as_recall_names_them(lk, tmp_path: Path) -> None:
    """`search Kern --session "last session"` was "no session titled", and `--speaker Grog` an error telling who
    plays him, where recall reads both; `--speaker GM` listed the speakers."""
    assert lk("campaign", "create", "Reeds").returncode == 0
    assert lk("entity", "add", "Grog", "player", "--attr", "played_by=Travis").returncode == 0
    (tmp_path / "one.txt").write_text("DM: The bell rings. Kern waits.\nTravis: Kern again.\nMarcus: A bell!\n")
    (tmp_path / "two.txt").write_text("Marcus: The bell cracks in two. Kern runs off.\nTravis: Kern, wait.\n")
    for n, name in ((1, "one"), (2, "two")):
        assert lk("ingest", str(tmp_path / f"{name}.txt"), "--session", f"Night {n}").returncode == 0

    def said(*args: str) -> list[str]:
        found = lk("search", *args, "--json")
        assert found.returncode == 0, found.stderr
        return [hit["text"] for hit in json.loads(found.stdout)]

    assert said("kern", "--session", "last session") == [
        "The bell cracks in two. Kern runs off.",
        "Kern, wait.",
    ]
    assert sorted(said("kern", "--speaker", "Grog")) == ["Kern again.", "Kern, wait."]
    # the DM is each night's narrator: Marcus the player of Night 1 is left out
    assert sorted(said("bell", "--speaker", "GM")) == [
        "The bell cracks in two. Kern runs off.",
        "The bell rings. Kern waits.",
    ]


async def test_a_deleted_campaign_leaves_no_job_and_ingest_warns_of_its_own_failures_only(lk, fresh_dsn: str) -> None:
    assert lk("campaign", "create", "Old").returncode == 0
    assert "background jobs queued" in lk("ingest", str(SAMPLE), "--campaign", "Old").stdout
    assert lk("campaign", "delete", "Old", "--yes").returncode == 0
    assert lk("campaign", "create", "Other").returncode == 0
    conn = await asyncpg.connect(fresh_dsn)
    try:
        other = await conn.fetchval("SELECT id FROM campaigns WHERE name = 'Other'")
        # Another campaign's job held after failing on its data: the worker leaves it be.
        await conn.execute(
            """
            WITH j AS (INSERT INTO pgqueuer (priority, status, entrypoint, payload)
                       VALUES (0, 'failed', 'lk_extract', $1) RETURNING id)
            INSERT INTO pgqueuer_log (job_id, status, priority, entrypoint, traceback)
            SELECT id, 'failed', 0, 'lk_extract', '{"exception_type": "BadJobError"}' FROM j
            """,
            json.dumps({"campaign_id": other, "session_id": 1}).encode(),
        )
        assert lk("campaign", "create", "New").returncode == 0
        res = lk("ingest", str(SAMPLE), "--campaign", "New", "--wait")
        # no traceback, no warning of Other's job (a wait of over 5 s says how far it is, off a terminal too)
        said = [line for line in res.stderr.splitlines() if not line.startswith("background jobs: ")]
        assert res.returncode == 0 and said == [], res.stderr
        left = await conn.fetch("SELECT convert_from(payload, 'UTF8')::jsonb ->> 'campaign_id' AS c FROM pgqueuer")
        assert [int(r["c"]) for r in left] == [other]
    finally:
        await conn.close()


async def test_ingest_wait_fails_naming_the_jobs_held_at_its_end(lk, fresh_dsn: str) -> None:
    assert lk("campaign", "create", "Main").returncode == 0
    conn = await asyncpg.connect(fresh_dsn)
    try:
        main = await conn.fetchval("SELECT id FROM campaigns")
        night = await conn.fetchval(
            "INSERT INTO sessions (campaign_id, title) VALUES ($1, 'Night zero') RETURNING id", main
        )
        # held on its data, so the drain's worker start leaves it held: as after an LLM outage that outlasted
        # every try, or a job a bug fails
        held_id = await conn.fetchval(
            """
            WITH j AS (INSERT INTO pgqueuer (priority, status, entrypoint, payload)
                       VALUES (0, 'failed', 'lk_extract', $1) RETURNING id)
            INSERT INTO pgqueuer_log (job_id, status, priority, entrypoint, traceback)
            SELECT id, 'failed', 0, 'lk_extract', $2::jsonb FROM j RETURNING job_id
            """,
            json.dumps({"campaign_id": main, "session_id": night}).encode(),
            json.dumps({"exception_type": "BadJobError", "exception_message": "LLMError: LLM refused: no"}),
        )
        res = lk("ingest", str(SAMPLE), "--wait")
        assert res.returncode == 1, res.stderr
        assert "session lines" in res.stdout  # what was stored is still said
        *progress, error = res.stderr.splitlines()  # a wait of over 5 s (a loaded machine) prints progress first
        assert error == (
            f"error: 1 background job held: #{held_id} extract of 'Night zero' (failed on its data): "
            "LLMError: LLM refused: no; `lorekeeper jobs list` shows them, `lorekeeper jobs retry` runs them again"
        )
        assert all(line.startswith("background jobs: ") for line in progress), progress
        await conn.execute("DELETE FROM pgqueuer WHERE status = 'failed'")  # nothing of ours held: success
        assert lk("ingest", str(SAMPLE), "--wait").returncode == 0
    finally:
        await conn.close()


async def test_jobs_list_and_retry_the_held_jobs_of_one_campaign(lk, fresh_dsn: str) -> None:
    assert lk("campaign", "create", "Main").returncode == 0 and lk("campaign", "create", "Other").returncode == 0
    empty = lk("jobs", "list")
    assert empty.stdout == "no held jobs (Main)\n", empty.stderr
    conn = await asyncpg.connect(fresh_dsn)
    try:
        ids = {r["name"]: r["id"] for r in await conn.fetch("SELECT id, name FROM campaigns")}
        night = await conn.fetchval(
            "INSERT INTO sessions (campaign_id, title) VALUES ($1, 'Night one') RETURNING id", ids["Main"]
        )

        async def hold(campaign: str, entrypoint: str, error: str, message: str) -> None:
            await conn.execute(
                """
                WITH j AS (INSERT INTO pgqueuer (priority, status, entrypoint, payload, dedupe_key)
                           VALUES (0, 'failed', $1, $2, $1 || ':' || $3::bigint) RETURNING id)
                INSERT INTO pgqueuer_log (job_id, status, priority, entrypoint, traceback)
                SELECT id, 'failed', 0, $1, $4::jsonb FROM j
                """,
                entrypoint,
                json.dumps({"campaign_id": ids[campaign], "session_id": night}).encode(),
                night,
                json.dumps({"exception_type": error, "exception_message": message}),
            )

        await hold("Main", "lk_extract", "BadJobError", "KeyError: 'who'")
        await hold("Main", "lk_chunk", "LLMUnavailable", "LLM request failed: HTTP 503")
        await hold("Other", "lk_summary", "BadJobError", "ValueError: no recap")

        held = json.loads(lk("jobs", "list", "--json").stdout)
        assert [(j["kind"], j["campaign"], j["session"], j["error"], j["on_its_data"]) for j in held] == [
            ("extract", "Main", "Night one", "KeyError: 'who'", True),
            ("chunk", "Main", "Night one", "LLMUnavailable: LLM request failed: HTTP 503", False),
        ]
        text = lk("jobs", "list").stdout
        assert "Night one" in text and "its data" in text and "KeyError: 'who'" in text

        both = lk("jobs", "retry", "--all", "--campaign", "Main")
        assert (both.returncode, both.stderr) == (1, "error: give --campaign NAME or --all, not both\n")
        retried = lk("jobs", "retry")
        assert retried.returncode == 0 and retried.stdout.startswith("2 held jobs queued again (Main)")
        left = await conn.fetch("SELECT entrypoint, status FROM pgqueuer ORDER BY entrypoint")
        assert [tuple(r) for r in left] == [("lk_chunk", "queued"), ("lk_extract", "queued"), ("lk_summary", "failed")]
        assert [j["campaign"] for j in json.loads(lk("jobs", "list", "--all", "--json").stdout)] == ["Other"]
    finally:
        await conn.close()


async def test_jobs_all_is_every_campaign_of_this_guild_only(lk, fresh_dsn: str) -> None:
    assert lk("campaign", "create", "Ours").returncode == 0  # guild 0: the command line's
    conn = await asyncpg.connect(fresh_dsn)
    try:
        ours = await conn.fetchval("SELECT id FROM campaigns")
        theirs = await conn.fetchval(
            "INSERT INTO campaigns (guild_id, name, active) VALUES (777, 'Their Secret War', true) RETURNING id"
        )
        for campaign in (ours, theirs):
            await conn.execute(
                """
                WITH j AS (INSERT INTO pgqueuer (priority, status, entrypoint, payload, dedupe_key)
                           VALUES (0, 'failed', 'lk_extract', $1, 'lk_extract:' || $2::bigint) RETURNING id)
                INSERT INTO pgqueuer_log (job_id, status, priority, entrypoint, traceback)
                SELECT id, 'failed', 0, 'lk_extract', $3::jsonb FROM j
                """,
                json.dumps({"campaign_id": campaign, "session_id": 1}).encode(),
                campaign,
                json.dumps({"exception_type": "BadJobError", "exception_message": "the lich's name leaked"}),
            )
        listed = lk("jobs", "list", "--all")
        assert listed.returncode == 0 and "Ours" in listed.stdout, listed.stderr
        assert "Their Secret War" not in listed.stdout and "777" not in listed.stdout.replace("guild 0", "")
        retried = lk("jobs", "retry", "--all")
        assert retried.stdout.startswith("1 held jobs queued again (all campaigns of guild 0)"), retried.stderr
        status = {r["c"]: r["status"] for r in await conn.fetch(
            "SELECT (convert_from(payload, 'UTF8')::jsonb ->> 'campaign_id')::bigint AS c, status FROM pgqueuer"
        )}  # fmt: skip
        assert status == {ours: "queued", theirs: "failed"}
        # that guild's own DM (its guild id) sees and re-runs its own
        theirs_env = {"LOREKEEPER_GUILD_ID": "777"}
        held = json.loads(lk("jobs", "list", "--all", "--json", env=theirs_env).stdout)
        assert [j["campaign"] for j in held] == ["Their Secret War"]
        assert lk("jobs", "retry", "--all", env=theirs_env).stdout.startswith("1 held jobs queued again")
    finally:
        await conn.close()


async def test_ingest_started_says_when_the_session_was_played(lk, fresh_dsn: str, tmp_path: Path) -> None:
    assert lk("campaign", "create", "Dated").returncode == 0
    old = tmp_path / "old.txt"
    old.write_text("DM: Eldrinax sleeps.\n")
    bad = lk("ingest", str(old), "--started", "last tuesday")
    assert bad.returncode == 2 and "'last tuesday' does not match the formats" in bad.stderr
    assert lk("ingest", str(old)).returncode == 0  # imported before anyone said when it was played
    assert lk("ingest", str(old), "--started", "2024-03-02 19:30").returncode == 0  # corrects it
    conn = await asyncpg.connect(fresh_dsn)
    try:
        started = await conn.fetch("SELECT title, started_at FROM sessions")
    finally:
        await conn.close()
    assert [(r["title"], r["started_at"].astimezone().strftime("%Y-%m-%d %H:%M")) for r in started] == [
        ("old", "2024-03-02 19:30")
    ]


def test_ingest_started_on_a_day_alone_is_that_day_for_a_dm_east_of_utc(lk, tmp_path: Path) -> None:
    """A DM in Tokyo imported Night 2 with `--started 2026-11-28`: local midnight, 2026-11-27 15:00 UTC, so every
    citation (they say the day in UTC) said the night was played on the 27th."""
    tokyo = {"TZ": "Asia/Tokyo"}
    assert lk("campaign", "create", "T").returncode == 0
    for name, kind in [("Corvin", "npc"), ("Varrowmere", "place")]:
        assert lk("entity", "add", name, kind).returncode == 0
    (tmp_path / "night2.txt").write_text("[00:00:10] DM: Corvin lives in Varrowmere.\n")
    night = ("ingest", str(tmp_path / "night2.txt"), "--session", "Night 2", "--started", "2026-11-28", "--wait")
    done = lk(*night, env=tokyo)
    assert done.returncode == 0, done.stderr
    [fact] = [i for i in json.loads(lk("review", "list", "--json").stdout) if i["kind"] == "fact"]
    assert "Night 2, 2026-11-28 at 0:10: DM: “Corvin lives in Varrowmere.”" in lk("review", "show", fact["ref"]).stdout
    listed = lk("session", "list", env=tokyo).stdout
    assert "Night 2  2026-11-28  " in listed and "JST" not in listed  # the day alone, as given
    # so is a day given west of UTC
    assert lk(*night, env={"TZ": "America/Los_Angeles"}).returncode == 0
    assert "Night 2  2026-11-28  " in lk("session", "list", env={"TZ": "America/Los_Angeles"}).stdout


def test_ingest_says_whom_it_took_for_the_dm_when_no_label_said_it(lk, tmp_path: Path) -> None:
    """A home table's most talkative player may out-talk the DM: the guess is said, with how to put it right; a
    label beside the DM's name is no guess, and the DM's lines tell the story (an arrival), not the player's."""
    assert lk("campaign", "create", "Home").returncode == 0
    assert lk("entity", "add", "Greywater", "location").returncode == 0
    plan = "Rob: Okay so my plan, and hear me out, is that Oz walks into the tavern and talks to everybody there.\n"
    guessed = tmp_path / "guessed.txt"
    guessed.write_text(plan + "Marcus: You arrive at Greywater.\n")
    out = lk("ingest", str(guessed), "--wait")
    assert out.returncode == 0, out.stderr
    assert "the DM of 'guessed' taken to be 'Rob', who said the most" in out.stdout
    assert "`lorekeeper session delete 'guessed'` and import it again" in out.stdout
    assert "Arrival at Greywater" not in lk("review", "list").stdout  # Marcus taken for a player
    labelled = tmp_path / "labelled.txt"
    labelled.write_text(plan + "Marcus (DM): You arrive at Greywater.\n")
    out = lk("ingest", str(labelled), "--wait")
    assert out.returncode == 0, out.stderr
    assert "taken to be" not in out.stdout
    assert "Arrival at Greywater" in lk("review", "list").stdout


def _demo(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env["LOREKEEPER_DATA_DIR"] = str(tmp_path / "real")  # the DM's own, exported in their shell: left alone
    env["COLUMNS"] = "80"  # a narrow terminal: every line wrapped
    return subprocess.run(
        [sys.executable, "-c", "from bot.cli import main; main()", "demo", *args],
        env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip


def test_demo_runs_offline(tmp_path: Path) -> None:
    res = _demo(tmp_path, "--data-dir", str(tmp_path / "demo"))
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "demo" / "pg").is_dir() and not (tmp_path / "real").exists()
    out = res.stdout
    flat = " ".join(out.split())  # the text as read, whatever the wrapping
    for heading in ("load the campaign file", "hear a session", "the review queue", "the recap", "ask the memory"):
        assert heading in out
    assert "heard 'elder nacks', written Eldrinax" in flat
    # each layer said in a DM's words, no raw ranking score
    for layer in ("(L1: what was said", "(L2)", "(L3, the knowledge graph)"):
        assert layer in flat
    assert "score" not in out and "vector+fulltext" not in out
    # how to accept what waits for review, with the items' own ids
    waiting = re.findall(r"^  (f\d+|e\d+): ", out, re.M)
    assert waiting and f"lorekeeper review accept {' '.join(waiting[:2])}" in flat
    assert "/review" in out
    assert "Involved:" in out  # the recap, written by the jobs the demo ran
    # the world grew by more than waits for review: where the rest came from (27 facts loaded, 49 after it)
    assert "(L3: those you loaded, the session itself and who took part in it)" in flat
    # wrapped at words, never cut: a whole line of the sample session reads whole, and no line is too wide
    assert "DM: You do. Mira Tolvanek is the blacksmith of Ironhold. She made your first holy symbol." in flat
    assert max(len(line) for line in out.splitlines() if str(tmp_path) not in line) <= 80  # a path is not cut
    # kept where asked, and said so
    assert f"kept in {tmp_path / 'demo'}" in flat and f"rm -rf {tmp_path / 'demo'}" in flat
    # stderr holds only how far its waits are (a slow machine's): stdout reads as the demo's story
    progress = re.compile(r"background jobs: .*|  stored \d+ of 60 lines")
    assert all(progress.fullmatch(line) for line in res.stderr.splitlines()), res.stderr


def test_demo_deletes_its_throwaway_database(tmp_path: Path) -> None:
    res = _demo(tmp_path)
    assert res.returncode == 0, res.stderr
    where = re.search(r"throw-away database in (\S+):", res.stdout)
    assert where and where[1].startswith("/tmp/lorekeeper-demo-")
    assert not Path(where[1]).exists(), "the demo left its database behind"
    assert "has been deleted" in res.stdout and not (tmp_path / "real").exists()


def test_correct_with_campaign_entities(lk) -> None:
    assert lk("campaign", "load", str(EXAMPLE)).returncode == 0
    out = lk("correct", "-c", "The Sunken Crown", input="We ride to iron hold at dawn.\n")  # as other commands
    assert out.returncode == 0, out.stderr
    line = json.loads(out.stdout)
    assert line["text"] == "We ride to Ironhold at dawn." and line["raw_text"] == "We ride to iron hold at dawn."
    assert [c["replacement"] for c in line["corrections"]] == ["Ironhold"]
    missing = lk("correct", "--campaign", "Nope", input="x\n")
    assert missing.returncode == 1 and "no campaign named 'Nope'" in missing.stderr


def test_correct_mends_a_surname_misheard_after_its_title(lk, tmp_path: Path) -> None:
    """A 1920s table's names are everyday English ("Armitage", "Reyes"), and so is what the recogniser writes for
    them ("army tage", "race"): after the title the campaign gives the name, they are that name."""
    world = tmp_path / "arkham.yaml"
    world.write_text(
        "campaign: {name: The Arkham Cipher}\n"
        "entities:\n"
        "  - {name: Dr. Henry Armitage, type: npc, aliases: [Armitage]}\n"
        "  - {name: Captain Ilse Reyes, type: npc, aliases: [Reyes]}\n"
    )
    assert lk("campaign", "load", str(world)).returncode == 0
    said = (
        'Waiting behind a desk is Doctor Army tage.\nCaptain race says, "Same as you."\nThe captain races off.\n'
        "Captain raise your sword\n"  # the title called, its comma unheard: "raise" is the sentence's own
    )
    out = lk("correct", "-c", "The Arkham Cipher", input=said)
    assert out.returncode == 0, out.stderr
    assert [json.loads(line)["text"] for line in out.stdout.splitlines()] == [
        "Waiting behind a desk is Dr. Henry Armitage.",
        'Captain Ilse Reyes says, "Same as you."',
        "The captain races off.",
        "Captain raise your sword",
    ]


def test_an_unknown_campaign_says_where_the_names_are_and_which_one_is_close(lk) -> None:
    assert lk("campaign", "create", "The Sunken Crown").returncode == 0
    nope = lk("entity", "list", "--campaign", "Nope")
    assert (
        nope.returncode == 1
        and nope.stderr == "error: no campaign named 'Nope': `lorekeeper campaign list` shows them\n"
    )
    close = lk("campaign", "use", "the sunken crwn")
    assert close.stderr == (
        "error: no campaign named 'the sunken crwn' (did you mean 'The Sunken Crown'?): "
        "`lorekeeper campaign list` shows them\n"
    )
    again = lk("campaign", "create", "The Sunken Crown")
    assert again.stderr == (
        "error: a campaign named 'The Sunken Crown' already exists: "
        "`lorekeeper campaign use 'The Sunken Crown'` makes it the active one\n"
    )


def test_a_malformed_database_url_is_one_line_without_the_password(tmp_path: Path) -> None:
    env = {**os.environ, "DATABASE_URL": "postgresql://user:s3cret@localhost:abc/db"}
    res = subprocess.run(
        [sys.executable, "-c", "from bot.cli import main; main()", "campaign", "list"],
        env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert res.returncode == 1 and "Traceback" not in res.stderr and "s3cret" not in res.stderr
    assert "DATABASE_URL is not a valid PostgreSQL URL" in res.stderr


def test_correct_at_a_terminal_answers_each_line_as_it_comes(tmp_path: Path) -> None:
    names = tmp_path / "names.txt"
    names.write_text("Eldrinax\n")
    pid, fd = pty.fork()
    if pid == 0:  # the child: lorekeeper correct on a terminal
        os.execv(
            sys.executable,
            [sys.executable, "-c", "from bot.cli import main; main()", "correct", "--entities", str(names)],
        )
    try:
        os.write(fd, b"we met elder nacks\n")
        out, deadline = b"", time.monotonic() + 60
        while b"Eldrinax" not in out and time.monotonic() < deadline:
            if select.select([fd], [], [], 0.5)[0]:
                out += os.read(fd, 4096)
        assert b'"text": "we met Eldrinax"' in out  # before the input ends
    finally:
        os.write(fd, b"\x04")
        os.waitpid(pid, 0)
        os.close(fd)


async def test_entity_show_says_what_waits_for_review(lk, fresh_dsn: str, tmp_path: Path) -> None:
    assert lk("campaign", "create", "C").returncode == 0
    assert lk("entity", "add", "Korvash", "npc").returncode == 0
    (tmp_path / "night.txt").write_text("DM: Korvash waits at the gate.\n")
    assert lk("ingest", str(tmp_path / "night.txt"), "--session", "Night").returncode == 0
    shown = lk("entity", "show", "Korvash")
    assert shown.returncode == 0, shown.stderr
    said = f"Night, {today()} (night.txt:1) by DM: Korvash waits at the gate."
    assert shown.stdout == f"Korvash (npc)\n  last mentioned in {said}\n"

    pool = await create_pool(fresh_dsn)
    try:
        memory = Memory(pool)
        mem = memory.campaign((await memory.campaigns().get("C")).id)
        guess = Provenance(source=Source.inferred, confidence=0.3)
        await mem.graph.add_entity(EntityIn(name="Mirelle", type=EntityType.npc, status="pending", provenance=guess))
    finally:
        await pool.close()
    assert lk("entity", "show", "Mirelle").stdout == "Mirelle (npc, waiting for review)\n"


async def test_entity_merge_asks_then_says_what_moved(lk, fresh_dsn: str) -> None:
    """The offline extractor's two entities for one NPC ("Gorrim", "Gorrim Ashfoot") become one."""
    assert lk("campaign", "create", "C").returncode == 0
    pool = await create_pool(fresh_dsn)
    try:
        memory = Memory(pool)
        mem = memory.campaign((await memory.campaigns().get("C")).id)
        await mem.graph.add_entity(EntityIn(name="Gorrim Ashfoot", type=EntityType.npc))
        gorrim = await mem.graph.add_entity(EntityIn(name="Gorrim", type=EntityType.npc, aliases=["Old Gor"]))
        keep = await mem.graph.add_entity(EntityIn(name="Caddo Keep", type=EntityType.place))
        await mem.graph.add_relationship(RelationshipIn(source_id=gorrim.id, type="lives_in", target_id=keep.id))
        # the two disagree: the newer stands, and the question and the reply say which is history now
        await mem.graph.link("Gorrim Ashfoot", "status", value="dead")
        await mem.graph.link("Gorrim", "status", value="alive")
    finally:
        await pool.close()
    ended = "now history, as a newer fact says otherwise: Gorrim Ashfoot is dead"
    declined = lk("entity", "merge", "Gorrim", "Gorrim Ashfoot", input="n\n")
    assert declined.returncode == 1 and f"merge npc 'Gorrim' into npc 'Gorrim Ashfoot' ({ended})?" in declined.stderr
    assert json.loads(lk("entity", "show", "Gorrim", "--json").stdout)["entity"]["name"] == "Gorrim"
    assert "Gorrim Ashfoot is dead" in lk("entity", "show", "Gorrim Ashfoot").stdout  # the question changed nothing

    merged = lk("entity", "merge", "old gor", "Gorrim Ashfoot", input="y\n")
    assert merged.returncode == 0, merged.stderr
    assert (
        merged.stdout == f"Merged Gorrim into Gorrim Ashfoot: 2 facts moved; new aliases: Gorrim, Old Gor; {ended}.\n"
    )
    assert lk("entity", "show", "Gorrim").stdout == (
        "Gorrim Ashfoot (npc)\n  aliases: Gorrim, Old Gor\n  - Gorrim Ashfoot lives in Caddo Keep\n"
        "  - Gorrim Ashfoot is alive\n"
    )
    same = lk("entity", "merge", "Gorrim", "Gorrim Ashfoot", "--yes")
    assert same.returncode == 1
    assert same.stderr == "error: 'Gorrim' and 'Gorrim Ashfoot' both name 'Gorrim Ashfoot': nothing to merge\n"


def test_entity_edit_changes_what_it_is_given_and_says_the_old_name_stays(lk) -> None:
    """/entity edit from the command line: a CLI-only DM could fix an entity only through a campaign file."""
    assert lk("campaign", "create", "C").returncode == 0
    assert lk("entity", "add", "Korvash", "npc", "--alias", "Korv", "--attr", "role=smith").returncode == 0
    renamed = lk("entity", "edit", "korv", "--new-name", "Korvash the Smith", "--attr", "age=212")
    assert renamed.returncode == 0, renamed.stderr
    assert renamed.stdout == (
        "updated npc 'Korvash the Smith'\nits old name 'Korvash' stays as an alias (`--alias -` clears it)\n"
    )
    shown = json.loads(lk("entity", "show", "Korvash", "--json").stdout)["entity"]
    assert (shown["name"], shown["aliases"]) == ("Korvash the Smith", ["Korv", "Korvash"])
    assert shown["attributes"] == {"role": "smith", "age": 212}
    hidden = lk("entity", "edit", "Korvash the Smith", "--alias", "-", "--secret", "-d", "A liar", "--json")
    assert hidden.returncode == 0, hidden.stderr
    edited = json.loads(hidden.stdout)
    assert (edited["aliases"], edited["visibility"], edited["description"]) == ([], "secret", "A liar")
    nothing = lk("entity", "edit", "Korvash the Smith")
    assert nothing.returncode == 1 and nothing.stderr == (
        "error: nothing to change: give at least one of --new-name, --type, --description, --alias, --add-alias, "
        "--drop-alias, --attr, --heard-as, --not-heard-as, --secret/--public\n"
    )
    missing = lk("entity", "edit", "Korvosh", "--type", "place")
    assert missing.returncode == 1 and missing.stderr.startswith("error: no entity named 'Korvosh' in campaign 'C'")
    mixed = lk("entity", "edit", "Korvash the Smith", "--alias", "-", "--alias", "Korv")  # "-" is no alias
    assert mixed.returncode == 1 and "--alias - clears the aliases: give it alone" in mixed.stderr


def test_entity_edit_adds_or_drops_one_alias_and_says_which_a_replacement_took_away(lk) -> None:
    """Replacing the aliases to add one lost the name the table used, and the next session proposed it as a new
    npc: one alias is added or dropped alone, and a replacement names what it took away."""
    assert lk("campaign", "create", "C").returncode == 0
    assert lk("entity", "add", "Korrin the Red", "npc", "--alias", "Korrin Vale").returncode == 0
    added = lk("entity", "edit", "Korrin the Red", "--add-alias", "The Red Captain", "--add-alias", "korrin vale")
    assert added.returncode == 0 and added.stdout == "updated npc 'Korrin the Red'\n", added.stderr
    aliases = json.loads(lk("entity", "show", "Korrin the Red", "--json").stdout)["entity"]["aliases"]
    assert aliases == ["Korrin Vale", "The Red Captain"]  # one kept as it was, none twice
    dropped = lk("entity", "edit", "Korrin the Red", "--drop-alias", "the red captain")
    assert dropped.returncode == 0, dropped.stderr
    assert "no longer its alias: 'The Red Captain'" in dropped.stdout
    unknown = lk("entity", "edit", "Korrin the Red", "--drop-alias", "Red")
    assert unknown.returncode == 1 and "'Red' is no alias of 'Korrin the Red' (its aliases: 'Korrin Vale')" in (
        unknown.stderr
    )
    replaced = lk("entity", "edit", "Korrin the Red", "--alias", "The Red")
    assert replaced.returncode == 0, replaced.stderr
    assert "no longer its alias: 'Korrin Vale' (`--add-alias` gives one back)" in replaced.stdout
    both = lk("entity", "edit", "Korrin the Red", "--alias", "A", "--add-alias", "B")
    assert both.returncode == 1 and "not both" in both.stderr


def test_entity_list_is_one_row_per_entity_whatever_its_description_holds(lk) -> None:
    """A session's event entity has a description of several lines ("Session: …"), which broke the table."""
    assert lk("campaign", "create", "C").returncode == 0
    told = "Session: the heist\n- Korvash lied\r\n- the\tgate fell"
    assert lk("entity", "add", "Heist", "event", "-d", told).returncode == 0
    assert lk("entity", "add", "Korvash", "npc", "-d", "A smith", "--secret").returncode == 0
    long = "Harbour master of New Saltmere; collects debts and rumours in equal measure, and forgets neither."
    assert lk("entity", "add", "Brannoch", "npc", "-d", long).returncode == 0
    listed = lk("entity", "list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[0].split() == ["name", "type", "aliases", "secret", "description"]
    assert listed.stdout.splitlines()[2:] == [
        # cut between words, and said to be cut (it was cut at 60 characters, mid-word: "rumours i")
        "Brannoch  npc                     Harbour master of New Saltmere; collects debts and rumours…",
        "Heist     event                   Session: the heist - Korvash lied - the gate fell",
        "Korvash   npc             yes     A smith",
    ]
    # on its card, each line of the description under the name, as the recap of a session's event has them
    assert lk("entity", "show", "Heist").stdout.splitlines()[:4] == [
        "Heist (event)",
        "  Session: the heist",
        "  - Korvash lied",
        "  - the\tgate fell",
    ]


def test_entity_list_fits_the_terminal_wrapping_long_names_and_aliases(lk) -> None:
    """A 60-character name and a long alias list padded every row to 238 columns in a 120-column terminal."""
    assert lk("campaign", "create", "C").returncode == 0
    name = "The Abandoned Research Facility Beneath the Ziggurat of Whitestone"
    aliases = ["Countess of the Ziggurat", "Lady Delilah Briarwood of Whitestone", "the Mistress of the Undercroft"]
    assert lk("entity", "add", name, "location", *[a for x in aliases for a in ("--alias", x)]).returncode == 0
    assert lk("entity", "add", "Korvash", "npc", "-d", "A smith").returncode == 0
    listed = lk("entity", "list", env={"COLUMNS": "90"}).stdout.splitlines()
    assert listed[0].split() == ["name", "type", "aliases", "secret", "description"]
    assert all(len(line) <= 90 for line in listed), max(map(len, listed))
    alias_column = listed[0].index("aliases")
    assert listed[2].split() == ["Korvash", "npc", "A", "smith"]
    assert " ".join(line[: listed[0].index("type")].strip() for line in listed[3:]).strip() == name  # wrapped
    assert " ".join(line[alias_column:].split("  ")[0] for line in listed[3:]).strip() == ", ".join(aliases)


def test_entity_list_shows_the_first_by_name_and_says_how_many_more(lk, tmp_path: Path) -> None:
    """A two-year campaign's 1,600 entities printed 3,232 lines, with no count: listed as `review list` lists."""
    from bot.cli.entity import LIST_LIMIT

    assert lk("campaign", "create", "C").returncode == 0
    many = LIST_LIMIT + 5
    (tmp_path / "w.yaml").write_text(
        "entities:\n"
        + "".join(f"  - {{name: Npc {n:03}, type: npc}}\n" for n in range(many))
        + "  - {name: Ironhold, type: location}\n"
    )
    assert lk("campaign", "load", str(tmp_path / "w.yaml")).returncode == 0
    listed = lk("entity", "list").stdout.splitlines()
    assert [row.split()[:2] for row in listed[2:-1]] == [["Ironhold", "location"]] + [
        ["Npc", f"{n:03}"] for n in range(LIST_LIMIT - 1)
    ]
    assert listed[-1] == f"… and 6 more of {many + 1} (--limit N or --all shows them, --type one kind)"
    assert lk("entity", "list", "--limit", "2").stdout.splitlines()[-1].startswith(f"… and {many - 1} more of")
    assert len(lk("entity", "list", "--all").stdout.splitlines()) == 2 + many + 1
    npcs = lk("entity", "list", "--type", "npc").stdout.splitlines()
    assert npcs[-1] == f"… and 5 more of {many} (--limit N or --all shows them)"
    assert len(json.loads(lk("entity", "list", "--json").stdout)) == many + 1  # a script's, whole
    assert len(json.loads(lk("entity", "list", "--json", "--limit", "3").stdout)) == 3
    both = lk("entity", "list", "--all", "--limit", "3")
    assert both.returncode == 2 and "--limit or --all, not both" in both.stderr


def test_entity_link_sets_visibility_only_when_asked(lk) -> None:
    assert lk("campaign", "create", "C").returncode == 0
    for name, kind in (("Eldrinax", "npc"), ("Ironhold", "place")):
        assert lk("entity", "add", name, kind).returncode == 0
    linked = lk("entity", "link", "eldrinax", "Ally Of", "Ironhold")
    assert linked.returncode == 0, linked.stderr
    assert linked.stdout == "Linked Eldrinax is an ally of Ironhold\n"
    assert lk("entity", "link", "Eldrinax", "ally_of", "Ironhold", "--secret").stdout == (
        "Now secret: Eldrinax is an ally of Ironhold (secret)\n"
    )
    again = json.loads(lk("entity", "link", "Eldrinax", "ally_of", "Ironhold", "--json").stdout)
    assert (again["outcome"], again["relationship"]["visibility"]) == ("already linked", "secret")
    unknown = lk("entity", "link", "Eldrinax", "ally_of", "Nowhere")
    assert unknown.returncode == 1 and unknown.stderr.startswith("error: no entity named 'Nowhere'")
    declined = lk("entity", "remove", "Ironhold", input="n\n")
    assert declined.returncode == 1 and "remove location 'Ironhold' with its 1 relationship?" in declined.stderr
    assert lk("entity", "remove", "Ironhold", "--yes").stdout == "removed 'Ironhold' with 1 relationship\n"


async def test_entity_remove_says_the_history_and_review_items_it_deletes(lk, fresh_dsn: str) -> None:
    """Removing Greywatch deletes Osric's past "lives_in Greywatch" and a fact about it waiting for review too: the
    prompt and the reply counted only the current facts."""
    assert lk("campaign", "create", "C").returncode == 0
    for name, kind in (("Greywatch", "place"), ("Osric Pell", "npc"), ("The Mill", "place"), ("Pike", "npc")):
        assert lk("entity", "add", name, kind).returncode == 0
    assert lk("entity", "link", "Osric Pell", "lives_in", "Greywatch").returncode == 0
    assert lk("entity", "link", "Osric Pell", "lives_in", "The Mill").returncode == 0
    assert lk("entity", "link", "Pike", "ally_of", "Greywatch").returncode == 0
    pool = await create_pool(fresh_dsn)
    try:
        mem = Memory(pool).campaign((await Memory(pool).campaigns().get("C")).id)
        pike, grey = await mem.graph.get_entity("Pike"), await mem.graph.get_entity("Greywatch")
        heard = Provenance(source=Source.stated, confidence=0.4)
        guess = RelationshipIn(source_id=pike.id, type="leader_of", target_id=grey.id, provenance=heard)
        assert (await mem.graph.add_relationship(guess)).status == ReviewStatus.pending
    finally:
        await pool.close()
    said = "1 relationship, 1 past fact and 1 fact waiting for review"
    declined = lk("entity", "remove", "Greywatch", input="n\n")
    assert f"remove location 'Greywatch' with its {said}?" in declined.stderr
    assert lk("entity", "remove", "Greywatch", "--yes").stdout == f"removed 'Greywatch' with {said}\n"


def test_entity_link_refuses_a_type_a_campaign_file_could_not_hold(lk) -> None:
    """A type with a control character used to be stored, and `campaign export` then failed whole on it; one
    over 100 characters failed in the database as 'needs either a target entity or a value, not both'."""
    assert lk("campaign", "create", "C").returncode == 0
    for name in ("Eldrinax", "Ironhold"):
        assert lk("entity", "add", name, "npc").returncode == 0
    hidden = lk("entity", "link", "Eldrinax", "ally\x01of", "Ironhold")
    assert (hidden.returncode, hidden.stderr) == (
        1,
        "error: type: contains U+0001, an invisible control character; remove it\n",
    )
    long = lk("entity", "link", "Eldrinax", "r" * 101, "Ironhold")
    assert (long.returncode, long.stderr) == (
        1,
        "error: type: has 101 characters; a relationship type has at most 100\n",
    )
    assert lk("entity", "link", "Eldrinax", "r" * 100, "Ironhold").returncode == 0
    exported = lk("campaign", "export")
    assert exported.returncode == 0, exported.stderr
    assert f"type: {'r' * 100}" in exported.stdout


def test_entity_link_value_records_a_change_and_says_what_it_closed(lk) -> None:
    """README promised `link` records a change in the world, but it only took a target entity: "no entity named
    'angry'". The value is asked for by name (--value), so a mistyped name still fails rather than become one."""
    assert lk("campaign", "create", "C").returncode == 0
    assert lk("entity", "add", "Xethrilaun", "npc").returncode == 0
    assert lk("entity", "link", "Xethrilaun", "mood", "--value", "calm").stdout == "Linked Xethrilaun — mood: calm\n"
    angry = lk("entity", "link", "xethrilaun", "Mood", "--value", "angry", "--secret")
    assert angry.returncode == 0, angry.stderr
    assert angry.stdout == "Linked Xethrilaun — mood: angry (secret); closed: Xethrilaun — mood: calm\n"
    assert lk("entity", "show", "Xethrilaun").stdout == "Xethrilaun (npc)\n  - Xethrilaun — mood: angry (secret)\n"
    typo = lk("entity", "link", "Xethrilaun", "mood", "angry")
    assert (typo.returncode, typo.stderr) == (
        1,
        "error: no entity named 'angry' in campaign 'C'; a state (status dead) is given as a value\n",
    )
    both = lk("entity", "link", "Xethrilaun", "mood", "Xethrilaun", "--value", "angry")
    assert both.returncode == 2 and both.stderr.endswith(
        "Error: give TARGET (another entity) or --value (a state, e.g. status --value dead), not both\n"
    )
    neither = lk("entity", "link", "Xethrilaun", "mood")
    assert neither.returncode == 2 and neither.stderr.endswith(
        "Error: give TARGET (another entity) or --value (a state, e.g. status --value dead)\n"
    )
    empty = lk("entity", "link", "Xethrilaun", "mood", "--value", " ")
    assert (empty.returncode, empty.stderr) == (1, "error: value: must not be empty\n")
    too_long = lk("entity", "link", "Xethrilaun", "mood", "--value", "x" * 501)  # as /entity link refuses it
    assert too_long.returncode == 1 and too_long.stderr.startswith(
        "error: value has 501 characters; a fact's value has at most 500"
    )
    undone = lk("entity", "unlink", "Xethrilaun", "mood", "angry")
    assert undone.stdout == "Unlinked Xethrilaun — mood: angry; current again: Xethrilaun — mood: calm\n"


async def test_entity_unlink_undoes_a_fact_accepted_by_mistake(lk, fresh_dsn: str) -> None:
    assert lk("campaign", "create", "C").returncode == 0
    pool = await create_pool(fresh_dsn)
    try:
        memory = Memory(pool)
        mem = memory.campaign((await memory.campaigns().get("C")).id)
        tom = await mem.graph.add_entity(EntityIn(name="Old Tom", type=EntityType.npc))
        heard = Provenance(source=Source.stated, confidence=0.9)  # the DM's own "alive" it would not have closed
        for value in ("alive", "dead"):
            await mem.graph.add_relationship(
                RelationshipIn(source_id=tom.id, type="status", value=value, provenance=heard)
            )
    finally:
        await pool.close()
    undone = lk("entity", "unlink", "Old Tom", "status", "Dead")
    assert undone.returncode == 0, undone.stderr
    assert undone.stdout == "Unlinked Old Tom is dead; current again: Old Tom is alive\n"
    assert lk("entity", "show", "Old Tom").stdout == "Old Tom (npc)\n  - Old Tom is alive\n"
    gone = json.loads(lk("entity", "unlink", "Old Tom", "status", "alive", "--json").stdout)
    assert [r["value"] for r in gone["removed"]] == ["alive"] and gone["reopened"] == []
    again = lk("entity", "unlink", "Old Tom", "status", "alive")
    assert again.returncode == 1
    assert again.stderr == (
        "error: Old Tom has no current 'status' fact of alive: unlink undoes a current fact; what is history or was "
        "rejected stays\n"
    )
    never = lk("entity", "unlink", "Old Tom", "status", "asleep")
    assert never.stderr == (
        "error: no entity named 'asleep' in campaign 'C', and Old Tom has no 'status' fact of that value\n"
    )


def test_a_campaign_made_under_guild_0_says_no_discord_server_sees_it(lk, tmp_path: Path) -> None:
    """A DM who made the campaign with /campaign create and loaded the world here without LOREKEEPER_GUILD_ID got a
    second campaign no server shows, and nothing said so."""
    only_here = (
        "note: 'Mine' was made for the command line only: no Discord server sees it (set LOREKEEPER_GUILD_ID to your "
        "server's id)\n"
    )
    assert lk("campaign", "create", "Mine").stderr == only_here
    (tmp_path / "w.yaml").write_text("campaign: {name: My World}\nentities:\n  - {name: Korv, type: npc}\n")
    assert "note:" not in lk("campaign", "load", str(tmp_path / "w.yaml"), "--dry-run").stderr  # nothing made
    loaded = lk("campaign", "load", str(tmp_path / "w.yaml"))
    assert loaded.returncode == 0 and loaded.stderr.endswith(only_here.replace("'Mine'", "'My World'"))
    assert "note:" not in lk("campaign", "load", str(tmp_path / "w.yaml")).stderr  # made before: said once
    server = {"LOREKEEPER_GUILD_ID": "77"}
    assert lk("campaign", "create", "Theirs", env=server).stderr == ""
    assert "note:" not in lk("campaign", "load", str(tmp_path / "w.yaml"), env=server).stderr


def test_loading_into_a_campaign_not_made_yet_says_how_to_go_on(lk, tmp_path: Path) -> None:
    """`-c "Brand New"` of no campaign said only that none is named so: the DM is told the two ways on."""
    (tmp_path / "w.yaml").write_text("campaign: {name: The Sunken Crown}\nentities:\n  - {name: Korv, type: npc}\n")
    missing = lk("campaign", "load", str(tmp_path / "w.yaml"), "-c", "Brand New")
    assert missing.returncode == 1 and missing.stderr == (
        "error: no campaign named 'Brand New': create it with `lorekeeper campaign create 'Brand New'`, or leave out "
        "-c to load into the file's campaign 'The Sunken Crown'\n"
    )
    (tmp_path / "bare.yaml").write_text("entities:\n  - {name: Korv, type: npc}\n")
    bare = lk("campaign", "load", str(tmp_path / "bare.yaml"), "-c", "Brand New")
    assert bare.stderr.endswith("or leave out -c to load into the active campaign\n"), bare.stderr


def test_a_file_naming_a_new_campaign_says_it_is_not_the_active_one(lk, tmp_path: Path) -> None:
    """The file's `campaign:` is created for it, but the active campaign stays: the next `entity list` used to
    show the other campaign, and nothing had said so."""
    assert lk("campaign", "create", "Sunken Crown").returncode == 0
    (tmp_path / "ash.yaml").write_text("campaign: {name: Ashfall Reach}\nentities:\n  - {name: Korv, type: npc}\n")
    loaded = lk("campaign", "load", str(tmp_path / "ash.yaml"))
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.splitlines()[-1] == (
        "created the campaign 'Ashfall Reach', not the active one: `lorekeeper campaign use` to switch"
    )
    again = lk("campaign", "load", str(tmp_path / "ash.yaml"))  # known now: nothing more to say
    assert again.returncode == 0 and "not the active one" not in again.stdout
    (tmp_path / "first.yaml").write_text("campaign: {name: First}\nentities:\n  - {name: Ana, type: npc}\n")
    first = lk("campaign", "load", str(tmp_path / "first.yaml"), env={"LOREKEEPER_GUILD_ID": "77"})
    assert first.returncode == 0 and "not the active one" not in first.stdout  # a guild's first is its active one


def test_entity_edit_heard_as_is_shown_and_counts_the_lines_to_correct(lk, tmp_path: Path) -> None:
    assert lk("campaign", "create", "Cats").returncode == 0
    assert lk("entity", "add", "Frumpkin", "npc").returncode == 0
    night = tmp_path / "night.txt"
    night.write_text("Liam: from skin jumps on the table\nLiam: and from skin's tail\nSam: nothing here\n")
    assert lk("ingest", str(night), "--session", "Night 1").returncode == 0
    taught = lk("entity", "edit", "Frumpkin", "--heard-as", "from skin", "--heard-as", "frump kin")
    assert taught.returncode == 0, taught.stderr
    assert taught.stdout.splitlines() == [
        "updated npc 'Frumpkin'",
        "From now on “from skin”, “frump kin” are written Frumpkin; 2 lines already stored say it: they are "
        "corrected again in the background. “from skin” is everyday English: every “from skin” said from now on "
        "is written Frumpkin.",
        # the command line runs no job: without the bot or a worker running, nothing would be corrected
        "4 background jobs queued: the bot runs them if it is running, else `lorekeeper worker --drain`",
    ]
    shown = lk("entity", "show", "Frumpkin")
    assert "  heard as: from skin, frump kin" in shown.stdout.splitlines()
    assert json.loads(lk("entity", "show", "Frumpkin", "--json").stdout)["entity"]["heard_as"] == [
        "from skin",
        "frump kin",
    ]
    mixed = lk("entity", "edit", "Frumpkin", "--heard-as", "-", "--heard-as", "x")
    assert mixed.returncode == 1 and "--heard-as - clears the phrases" in mixed.stderr
    # a night ingested since says it: stage 1 wrote the name, which clearing the phrases undoes in the background
    (tmp_path / "night2.txt").write_text("Liam: from skin naps\nSam: and frump kin purrs\nSam: nothing here\n")
    assert lk("ingest", str(tmp_path / "night2.txt"), "--session", "Night 2").returncode == 0
    cleared = lk("entity", "edit", "Frumpkin", "--heard-as", "-")
    assert cleared.returncode == 0, cleared.stderr
    assert cleared.stdout.splitlines() == [
        "updated npc 'Frumpkin'",
        "“from skin”, “frump kin” are no longer written Frumpkin; they are restored in 2 lines already stored, in "
        "the background.",
        "9 background jobs queued: the bot runs them if it is running, else `lorekeeper worker --drain`",
    ]
    assert "heard as" not in lk("entity", "show", "Frumpkin").stdout


def test_entity_not_heard_as_is_set_shown_checked_and_counts_the_lines_to_restore(lk, tmp_path: Path) -> None:
    assert lk("campaign", "create", "Sea").returncode == 0
    added = lk("entity", "add", "Bittersolt", "npc", "--not-heard-as", "bitter salts")
    assert added.returncode == 0, added.stderr
    assert added.stdout.splitlines()[1:] == ["From now on “bitter salts” is never written Bittersolt."]
    night = tmp_path / "night.txt"
    night.write_text("DM: A bitter salt wind blows by.\nDM: Two bitter salt bites.\nSam: nothing here\n")
    assert lk("ingest", str(night), "--session", "Night 1").returncode == 0
    # stage 1 wrote the name in both lines: the edit counts them, a job restores them
    taught = lk("entity", "edit", "Bittersolt", "--not-heard-as", "bitter salt", "--not-heard-as", "bitter salts")
    assert taught.returncode == 0, taught.stderr
    assert taught.stdout.splitlines() == [
        "updated npc 'Bittersolt'",
        "From now on “bitter salt” is never written Bittersolt; it is restored in 2 lines already stored, in the "
        "background.",
        "4 background jobs queued: the bot runs them if it is running, else `lorekeeper worker --drain`",
    ]
    assert "  never heard as: bitter salt, bitter salts" in lk("entity", "show", "Bittersolt").stdout.splitlines()
    shown = json.loads(lk("entity", "show", "Bittersolt", "--json").stdout)["entity"]
    assert shown["not_heard_as"] == ["bitter salt", "bitter salts"]
    mixed = lk("entity", "edit", "Bittersolt", "--not-heard-as", "-", "--not-heard-as", "x")
    assert mixed.returncode == 1 and "--not-heard-as - clears the phrases" in mixed.stderr
    own = lk("entity", "edit", "Bittersolt", "--not-heard-as", "bitter solt")
    assert own.returncode == 1
    assert "not heard as: 'bitter solt' (read as 'Bittersolt') is the name of 'Bittersolt'" in own.stderr
    # "+" adds, as /entity edit's "+" and `session names` hints it: the phrases it had stay, the "+" is no word
    assert lk("entity", "edit", "Bittersolt", "--not-heard-as", "+elder nacks").returncode == 0
    assert lk("entity", "edit", "Bittersolt", "--not-heard-as", "+bitter salt").returncode == 0
    shown = lk("entity", "show", "Bittersolt").stdout.splitlines()
    assert "  never heard as: bitter salt, bitter salts, elder nacks" in shown, shown
    assert lk("entity", "edit", "Bittersolt", "--not-heard-as", "-").returncode == 0
    assert "never heard as" not in lk("entity", "show", "Bittersolt").stdout


def test_entity_add_heard_as_is_checked_and_said_as_entity_edit_says_it(lk, tmp_path: Path) -> None:
    assert lk("campaign", "create", "Storms").returncode == 0
    night = tmp_path / "night.txt"
    night.write_text("Liam: I play a card\nSam: storm lored rises\n")
    assert lk("ingest", str(night), "--session", "Night 1").returncode == 0
    added = lk("entity", "add", "The Stormlord", "npc", "--heard-as", "storm lored", "--heard-as", "card")
    assert added.returncode == 0, added.stderr
    assert added.stdout.splitlines()[1:] == [
        "From now on “card”, “storm lored” are written The Stormlord; 2 lines already stored say it: they are "
        "corrected again in the background. “card” is everyday English: every “card” said from now on is written "
        "The Stormlord.",
        "4 background jobs queued: the bot runs them if it is running, else `lorekeeper worker --drain`",
    ]
    assert "  heard as: card, storm lored" in lk("entity", "show", "The Stormlord").stdout.splitlines()
    # refused as entity edit refuses them, and nothing is added
    for phrases, message in [
        (["from, skin"], "error: heard as: 'from, skin' has ',' inside"),
        (["card"], "error: heard as: 'card' is already what the recogniser writes for 'The Stormlord'"),
        (["Frumpkin"], "error: heard as: 'Frumpkin' is the name of 'Frumpkin'"),
    ]:
        refused = lk("entity", "add", "Frumpkin", "npc", *(a for p in phrases for a in ("--heard-as", p)))
        assert refused.returncode == 1 and refused.stderr.startswith(message), refused.stderr
    assert lk("entity", "show", "Frumpkin").returncode == 1


def test_campaign_load_says_what_it_replaced_and_a_dry_run_says_the_same_writing_nothing(lk, tmp_path: Path) -> None:
    """A DM's walkthrough: reloading the prep file after play put back an alias, an attribute and a fact, and said
    only "1 updated". It now says what it replaced; `--dry-run` says so first, and writes nothing."""
    prep = tmp_path / "prep.yaml"
    prep.write_text(
        "campaign: {name: Saltmarsh}\nentities:\n"
        "  - {name: Vaskerrin Holt, type: npc, aliases: [Vaskerrin], attributes: {mood: restless}}\n"
        "  - {name: Brannagh, type: npc}\n"
        "relationships:\n  - {source: Brannagh, type: status, value: alive}\n"
    )
    new = lk("campaign", "load", str(prep), "--dry-run")
    assert new.stdout == (
        "Saltmarsh: entities: 2 new, 0 updated, 0 unchanged; relationships: 1 new, 0 updated, 0 unchanged\n"
        "dry run: nothing was written; the campaign 'Saltmarsh' would be created\n"
    )
    assert json.loads(lk("campaign", "list", "--json").stdout) == []
    assert lk("campaign", "load", str(prep)).returncode == 0
    # play
    assert lk("entity", "edit", "Vaskerrin Holt", "--alias", "Vaskerrin", "--alias", "the old man").returncode == 0
    (tmp_path / "update1.yaml").write_text(
        "entities:\n  - {name: Vaskerrin Holt, type: npc, attributes: {mood: angry}}\n"
    )
    assert lk("campaign", "load", str(tmp_path / "update1.yaml")).stdout.endswith(
        '\n- Vaskerrin Holt: attribute mood: "restless" → "angry"\n'
    )
    assert lk("entity", "link", "Brannagh", "status", "--value", "dead").returncode == 0
    played = lk("campaign", "export").stdout
    # the prep file brings her back: a value it changed is the DM's newer word (one it did not is not)
    prep.write_text(prep.read_text().replace("value: alive", "value: undead"))

    dry = lk("campaign", "load", str(prep), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert lk("campaign", "export").stdout == played
    dry_json = json.loads(lk("campaign", "load", str(prep), "--dry-run", "--json").stdout)
    assert lk("campaign", "export").stdout == played
    loaded = lk("campaign", "load", str(prep))
    assert loaded.stdout == (
        "Saltmarsh: entities: 0 new, 1 updated, 1 unchanged; relationships: 1 new, 0 updated, 0 unchanged\n"
        "Changes to what the campaign had:\n"
        "- Vaskerrin Holt: alias removed: the old man\n"
        '- Vaskerrin Holt: attribute mood: "angry" → "restless"\n'
        "- Brannagh: fact status: dead → undead\n"
    )
    assert dry.stdout == loaded.stdout + "dry run: nothing was written\n"
    assert dry_json["dry_run"] and dry_json["changes"] == [
        {"entity": "Vaskerrin Holt", "change": "alias removed: the old man"},
        {"entity": "Vaskerrin Holt", "change": 'attribute mood: "angry" → "restless"'},
        {"entity": "Brannagh", "change": "fact status: dead → undead"},
    ]
    again = lk("campaign", "load", str(prep))
    assert again.stdout == (
        "Saltmarsh: entities: 0 new, 0 updated, 2 unchanged; relationships: 0 new, 0 updated, 1 unchanged\n"
    )
    assert json.loads(lk("campaign", "load", str(prep), "--json").stdout)["changes"] == []


def test_a_fact_from_an_older_session_imported_late_is_accepted_as_history_and_says_so(lk, tmp_path: Path) -> None:
    """A DM's walkthrough: the prologue, played last year, imported after the DM recorded that Corvin moved to the
    Marsh. Accepting its "Corvin lives in Varrowmere" put him back in Varrowmere, and the reply said nothing."""
    assert lk("campaign", "create", "T").returncode == 0
    for name, kind in [("Corvin", "npc"), ("Varrowmere", "place"), ("Marsh", "place")]:
        assert lk("entity", "add", name, kind).returncode == 0
    assert lk("entity", "link", "Corvin", "lives_in", "Marsh").returncode == 0
    (tmp_path / "old.txt").write_text("[00:00:10] DM: Corvin lives in Varrowmere.\n")
    done = lk("ingest", str(tmp_path / "old.txt"), "--started", "2025-01-01", "--wait")
    assert done.returncode == 0, done.stderr
    [fact] = [i for i in json.loads(lk("review", "list", "--json").stdout) if i["kind"] == "fact"]
    accepted = lk("review", "accept", fact["ref"])
    assert accepted.returncode == 0, accepted.stderr
    assert accepted.stdout == (
        f"accepted {fact['ref']}: Corvin lives in Varrowmere; kept as history, as a later fact stands: "
        "Corvin lives in Marsh\n"
    )
    shown = json.loads(lk("entity", "show", "Corvin", "--json").stdout)
    assert [r["target_name"] for r in shown["relationships"] if r["type"] == "lives_in"] == ["Marsh"]


def test_a_death_heard_in_a_night_imported_after_the_campaign_file_stands_and_a_reload_keeps_it(
    lk, tmp_path: Path
) -> None:
    """A DM's walkthrough: the world file loaded (Ottilie alive), Night 2 imported with `--started` as the guide
    says, its "Ottilie is dead" accepted: "kept as history, as a later fact stands: … alive", the file's fact
    being dated at the load. The memory learned of the death after the file: it stands, and loading the file
    again (or with one NPC added) revives no one nor gives back what the DM linked since. Only a value the file
    changes is the DM's newer word."""
    world = tmp_path / "world.yaml"
    entries = ["{name: Ottilie Brand, type: npc}", "{name: Thalia, type: npc}", "{name: Mira, type: npc}"]
    entries.append("{name: Sunblade, type: item}")

    def write(status: str, *more: str) -> None:
        world.write_text(
            "campaign: {name: Choir}\nentities:\n"
            + "".join(f"  - {e}\n" for e in [*entries, *more])
            + "relationships:\n"
            f"  - {{source: Ottilie Brand, type: status, value: {status}}}\n"
            "  - {source: Sunblade, type: owned_by, target: Thalia}\n"
        )

    def statuses() -> list[str]:
        return [
            line
            for line in lk("entity", "show", "Ottilie Brand", "--history").stdout.splitlines()
            if line.startswith("  - Ottilie Brand is ")
        ]

    write("alive")
    assert lk("campaign", "load", str(world)).returncode == 0
    (tmp_path / "night2.txt").write_text("[00:00:10] DM: Ottilie Brand is dead.\n")
    done = lk("ingest", str(tmp_path / "night2.txt"), "--session", "Night 2", "--started", "2026-11-13", "--wait")
    assert done.returncode == 0, done.stderr
    [fact] = [
        i
        for i in json.loads(lk("review", "list", "--json").stdout)
        if i["kind"] == "fact" and i["fact"]["type"] == "status"
    ]
    accepted = lk("review", "accept", fact["ref"])
    said = f"accepted {fact['ref']}: Ottilie Brand is dead; closed: Ottilie Brand is alive\n"
    assert accepted.stdout == said, accepted.stderr
    dead = [
        "  - Ottilie Brand is dead (since 2026-11-13, heard in Night 2 at 0:10)",
        "  - Ottilie Brand is alive (until 2026-11-13, from the campaign file)",
    ]
    assert statuses() == dead
    assert lk("entity", "link", "Sunblade", "owned_by", "Mira").returncode == 0
    # the same file, then with one NPC added: the file did not change what play did
    for more in [(), ("{name: Fenwick, type: npc}",)]:
        write("alive", *more)
        again = lk("campaign", "load", str(world))
        assert again.stdout.endswith("relationships: 0 new, 0 updated, 2 unchanged\n"), again.stdout
        assert statuses() == dead
        assert "  - Sunblade is owned by Mira" in lk("entity", "show", "Sunblade").stdout.splitlines()
    # the DM writes the death into the file, then brings her back: a changed value is the DM's newer word
    write("dead")
    assert lk("campaign", "load", str(world)).stdout.endswith("relationships: 0 new, 0 updated, 2 unchanged\n")
    write("alive")
    revived = lk("campaign", "load", str(world))
    assert revived.stdout.endswith("\nChanges to what the campaign had:\n- Ottilie Brand: fact status: dead → alive\n")
    now, *past = statuses()
    assert now.startswith("  - Ottilie Brand is alive (since ") and now.endswith(", from the campaign file)")
    assert past[0].startswith("  - Ottilie Brand is dead (2026-11-13 → ")
    assert past[0].endswith("in Night 2 at 0:10)")


async def test_recall_says_what_the_graph_knows_now_before_what_was_said_then(lk, fresh_dsn: str) -> None:
    """A DM's walkthrough: "who has the Ember Key now" put Night 1's "Thrennick has the Ember Key" first, and
    nothing said that Pip has had it since."""
    assert lk("campaign", "create", "C").returncode == 0
    pool = await create_pool(fresh_dsn)
    try:
        memory = Memory(pool)
        mem = memory.campaign((await memory.campaigns().get("C")).id)
        key = await mem.graph.add_entity(EntityIn(name="Ember Key", type=EntityType.item, description="Opens a vault"))
        thrennick = await mem.graph.add_entity(EntityIn(name="Thrennick", type=EntityType.npc))
        pip = await mem.graph.add_entity(EntityIn(name="Pip", type=EntityType.npc))
        holt = await mem.graph.add_entity(
            EntityIn(name="Vaskerrin Holt", type=EntityType.npc, visibility=Visibility.secret)
        )
        for owner in (thrennick, pip):  # Pip's closes Thrennick's
            await mem.graph.add_relationship(RelationshipIn(source_id=key.id, type="owned_by", target_id=owner.id))
        await mem.graph.add_relationship(
            RelationshipIn(source_id=pip.id, type="works_for", target_id=holt.id, visibility=Visibility.secret)
        )
        night = await mem.log.start_session("Night 1")
        await mem.log.write_many(night.id, [EntryIn(speaker="DM", text="Thrennick has the Ember Key.", ref="l1")])
    finally:
        await pool.close()
    asked = lk("recall", "who has the Ember Key now, Pip?", "--mode", "fulltext")
    assert asked.returncode == 0, asked.stderr
    assert asked.stdout.startswith(
        "Ember Key (item)\n     Opens a vault\n     Ember Key is owned by Pip\n"
        "Pip (npc)\n     Ember Key is owned by Pip\n     Pip works for Vaskerrin Holt 🔒\n"
        f"1. [Night 1, {today()} (l1)] "
    ), asked.stdout
    as_json = json.loads(lk("recall", "who has the Ember Key now, Pip?", "--mode", "fulltext", "--json").stdout)
    assert [(e["name"], [f["text"] for f in e["facts"]]) for e in as_json["entities"]] == [
        ("Ember Key", ["Ember Key —owned_by→ Pip"]),
        ("Pip", ["Ember Key —owned_by→ Pip", "Pip —works_for→ Vaskerrin Holt"]),
    ]
    assert [f["secret"] for f in as_json["entities"][1]["facts"]] == [False, True]
    assert as_json["entities"][0]["facts"][0]["words"] == "Ember Key is owned by Pip"  # as the text reads it
    assert [h["text"] for h in as_json["hits"]] == ["DM: Thrennick has the Ember Key."]


def test_a_worker_says_which_database_it_works_on_without_its_password(lk, fresh_dsn: str) -> None:
    """A data dir other than meant (a relative path, another user's default) is a new, empty database: the start
    line is where the DM sees it."""
    with_password = fresh_dsn.replace("postgres:@", "postgres:hunter2@", 1)  # local connections are trusted
    res = lk("worker", "--drain", env={"DATABASE_URL": with_password})
    assert res.returncode == 0, res.stderr
    database = fresh_dsn.replace("postgres:@", "postgres@", 1)
    assert f"INFO lorekeeper: database: DATABASE_URL {database} (data dir " in res.stderr
    assert "hunter2" not in res.stderr


async def test_a_full_disk_under_an_import_is_said_to_need_space_not_a_rerun(
    lk, fresh_dsn: str, tmp_path: Path
) -> None:
    assert lk("campaign", "create", "Sunken Crown").returncode == 0
    # PostgreSQL's own answer when it cannot extend a table's file, raised where an import writes its lines
    conn = await asyncpg.connect(fresh_dsn)
    await conn.execute(
        """
        CREATE FUNCTION disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'could not extend file "base/5/17144": No space left on device' USING ERRCODE = '53100';
        END $$;
        CREATE TRIGGER disk_full BEFORE INSERT ON session_entries FOR EACH STATEMENT EXECUTE FUNCTION disk_full();
        """
    )
    await conn.close()
    (tmp_path / "night.txt").write_text("DM: You reach Ironhold.\n")
    imported = lk("ingest", str(tmp_path / "night.txt"))
    assert imported.returncode == 1
    assert imported.stderr == (
        'error: the database\'s disk is full (DiskFullError: could not extend file "base/5/17144": No space left on '
        "device): free some space on it, then run the command again\n"
    )


def test_session_names_says_what_correction_changed_and_how_to_stop_a_wrong_one(lk, tmp_path: Path) -> None:
    assert lk("campaign", "create", "Exandria").returncode == 0
    for name in ("Eldrinax", "Vex'ahlia"):
        assert lk("entity", "add", name, "npc").returncode == 0
    assert lk("entity", "add", "Frumpkin", "npc", "--heard-as", "from skin", "--heard-as", "frump kin").returncode == 0
    none = lk("session", "names")
    assert none.returncode == 1 and none.stderr == "error: no sessions in campaign 'Exandria' yet\n"
    night = tmp_path / "night1.txt"
    night.write_text(
        "DM: The elder nacks wakes.\nLiam: From skin, go!\nDM: and the elder nacks roars\nLaura: vexahlia runs.\n"
        "DM: Nothing here.\n"
    )
    assert lk("ingest", str(night), "--session", "Night 1").returncode == 0
    (tmp_path / "night2.txt").write_text("DM: A quiet night.\n")
    assert lk("ingest", str(tmp_path / "night2.txt"), "--session", "Night 2").returncode == 0
    assert lk("session", "names").stdout == "no names corrected in session 'Night 2' of Exandria\n"  # the latest

    shown = lk("session", "names", "night 1")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == [
        "session 'Night 1' of Exandria: 3 phrases corrected in 4 lines",
        "heard           name       times  how       if it is wrong",
        "-----------  -  ---------  -----  --------  -------------------------------------------------------------",
        'elder nacks  →  Eldrinax   ×2     sound     lorekeeper entity edit Eldrinax --not-heard-as "+elder nacks"',
        'from skin    →  Frumpkin   ×1     heard-as  lorekeeper entity edit Frumpkin --heard-as "-from skin"',
        "vexahlia     →  Vex'ahlia  ×1     sound     (a spelling of its name or an alias)",
    ]
    as_json = json.loads(lk("session", "names", "Night 1", "--json").stdout)
    assert as_json["session"] == "Night 1" and as_json["lines"] == 4
    assert as_json["changes"][1] == {
        "heard": "from skin",
        "name": "Frumpkin",
        "entity_id": as_json["changes"][1]["entity_id"],
        "count": 1,
        "how": ["heard-as"],
        "heard_as": ["from skin", "frump kin"],
        "not_heard_as": [],
        "respelled": False,
        "removed": False,
        "undo": 'lorekeeper entity edit Frumpkin --heard-as "-from skin"',
    }
    # the hint takes that one phrase away: one added since stays (a list to replace all with, as of the report,
    # took it away too), and so does each hint followed after another
    assert lk("entity", "edit", "Frumpkin", "--heard-as", "+frum pin").returncode == 0
    assert lk("entity", "edit", "Frumpkin", "--heard-as", "-from skin").returncode == 0
    assert "  heard as: frum pin, frump kin\n" in lk("entity", "show", "Frumpkin").stdout
    assert lk("entity", "edit", "Frumpkin", "--heard-as", "-FRUMP KIN").returncode == 0
    assert "  heard as: frum pin\n" in lk("entity", "show", "Frumpkin").stdout
    gone = lk("entity", "edit", "Frumpkin", "--heard-as", "-from skin")
    assert gone.returncode == 1 and "'from skin' is not one of its phrases (they are: 'frum pin')" in gone.stderr
    missing = lk("session", "names", "Nigth 1")
    assert missing.returncode == 1
    assert missing.stderr == (
        "error: no session titled 'Nigth 1' in campaign 'Exandria' (did you mean 'Night 1'?): "
        "`lorekeeper session list` shows them\n"
    )


def test_a_bidi_override_is_refused_where_a_dm_or_a_file_gives_it(lk, tmp_path: Path) -> None:
    """U+202E stored in a name or a description showed 'Gorrim' reversed in Discord (or as another name in the
    review queue). A campaign file holding one is refused at its line with nothing written; the commands say the
    field and the character; right-to-left names are names."""
    said = "contains U+202E RIGHT-TO-LEFT OVERRIDE at position 4, an invisible control character; remove it"
    assert lk("campaign", "create", "C").returncode == 0
    spoofed = tmp_path / "spoofed.yaml"
    spoofed.write_text(
        'campaign: {name: Fresh}\nentities:\n  - {name: Ironhold, type: place}\n  - {name: "Gor\u202erim", type: npc}\n'
        'relationships:\n  - {source: Ironhold, type: ruled by, target: "Gor\u202erim"}\n',
        encoding="utf-8",
    )
    res = lk("campaign", "load", str(spoofed))
    assert (res.returncode, res.stderr) == (
        1,
        f"error: {spoofed}:4: entity #2 'Gor\\u202erim': name 'Gor\\u202erim' {said}\n"
        # the relationship is named with the override escaped, or it would reverse the rest of the line
        f"{spoofed}:6: relationship #1 (Ironhold -[ruled by]-> Gor\\u202erim): target 'Gor\\u202erim' {said}\n",
    )
    assert [c["name"] for c in json.loads(lk("campaign", "list", "--json").stdout)] == ["C"]  # Fresh not made
    res = lk("campaign", "load", str(spoofed), "--campaign", "C")
    assert (
        res.returncode == 1 and f"spoofed.yaml:4: entity #2 'Gor\\u202erim': name 'Gor\\u202erim' {said}" in res.stderr
    )
    assert json.loads(lk("entity", "list", "--json").stdout) == []  # not even Ironhold, on line 3

    added = lk("entity", "add", "Gor\u202erim", "npc")
    assert (added.returncode, added.stderr) == (1, f"error: name: 'Gor\\u202erim' {said}\n")
    described = lk("entity", "add", "Gorrim", "npc", "-d", "A d\u202ewarf")
    assert (described.returncode, described.stderr) == (1, f"error: description: {said}\n")
    assert json.loads(lk("entity", "list", "--json").stdout) == []
    assert lk("entity", "add", "غوريم", "npc", "-d", "גורים 🧙\u200d\u2642\ufe0f\nof Ironhold").returncode == 0
    edited = lk("entity", "edit", "غوريم", "-d", "A d\u202ewarf")
    assert (edited.returncode, edited.stderr) == (1, f"error: description {said}\n")
    campaign = lk("campaign", "create", "Ash", "--description", "Fir\u202ee and ash")
    assert (campaign.returncode, campaign.stderr) == (1, f"error: description {said}\n")
    shown = json.loads(lk("entity", "show", "غوريم", "--json").stdout)
    assert shown["entity"]["description"] == "גורים 🧙\u200d\u2642\ufe0f\nof Ironhold"


def test_session_names_says_one_phrase_in_one_line_in_the_singular(lk, tmp_path: Path) -> None:
    """A short recording with one name mended ("white stone" → Whitestone) said "1 phrases corrected in 1 lines"."""
    assert lk("campaign", "create", "Exandria").returncode == 0
    assert lk("entity", "add", "Eldrinax", "npc").returncode == 0
    (night := tmp_path / "night1.txt").write_text("DM: The elder nacks wakes.\nDM: Nothing here.\n")
    assert lk("ingest", str(night), "--session", "Night 1").returncode == 0
    shown = lk("session", "names", "Night 1")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0] == "session 'Night 1' of Exandria: 1 phrase corrected in 1 line"


def test_entity_show_of_a_proposed_event_says_the_line_it_was_told_in(lk, tmp_path: Path) -> None:
    """A proposed event is told, never named: its card at the command line said no line, so the DM could not see
    what it was drawn from before deciding on it (the Discord card could)."""
    assert lk("campaign", "create", "Reeds").returncode == 0
    assert lk("entity", "add", "Kraghammer", "location").returncode == 0
    (tmp_path / "night.txt").write_text("DM: The road bends north.\nDM: You make your way to Kraghammer at dusk.\n")
    assert lk("ingest", str(tmp_path / "night.txt"), "--session", "Night 1", "--wait").returncode == 0
    assert "new event 'Arrival at Kraghammer'" in lk("review", "list").stdout
    card = lk("entity", "show", "Arrival at Kraghammer")
    assert card.returncode == 0, card.stderr
    assert "waiting for review" in card.stdout
    assert "by DM: You make your way to Kraghammer at dusk." in card.stdout, card.stdout


def test_entity_mentions_of_a_proposed_event_names_the_line_entity_show_does(lk, tmp_path: Path) -> None:
    """`entity show` named the line a proposed event was drawn from; `entity mentions` of it said only "no line
    names it yet", as if the two disagreed."""
    assert lk("campaign", "create", "Reeds").returncode == 0
    assert lk("entity", "add", "Kraghammer", "location").returncode == 0
    (tmp_path / "night.txt").write_text("DM: The road bends north.\nDM: You make your way to Kraghammer at dusk.\n")
    assert lk("ingest", str(tmp_path / "night.txt"), "--session", "Night 1", "--wait").returncode == 0
    said = lk("entity", "mentions", "Arrival at Kraghammer")
    assert said.returncode == 0, said.stderr
    assert said.stdout == (
        f"Arrival at Kraghammer: no line names it yet; it waits for review, drawn from Night 1, {today()} (night.txt:2)"
        " by DM\n"
    )
    assert lk("entity", "mentions", "Kraghammer").stdout.startswith("Kraghammer: named in 1 line of 1 session\n")


def test_entity_pin_says_when_the_names_are_in_the_prompt_pinned_or_not(lk) -> None:
    """In a small campaign the prompt holds every name: pinning changes nothing, and the DM
    is told so, with where to look for a name Whisper still mishears."""
    assert lk("campaign", "create", "Drowned Bells").returncode == 0
    assert lk("entity", "add", "Ysolde Varrow", "npc", "--alias", "Ysolde").returncode == 0
    pinned = lk("entity", "pin", "Ysolde Varrow")
    assert pinned.returncode == 0, pinned.stderr
    said = "pinned 'Ysolde Varrow'\n  its names are in the voice recogniser's prompt pinned or not"
    assert pinned.stdout.startswith(said)
    assert "voice-names.md" in pinned.stdout
    assert lk("entity", "pin", "--off", "Ysolde Varrow").stdout == "unpinned 'Ysolde Varrow'\n"


def test_entity_pin_prompt_shows_the_names_whisper_is_given_and_those_left_out(lk, tmp_path: Path) -> None:
    """QA: a DM who pins names had no way to read the prompt (`entity pin` only says when everything fits)."""
    lore = "".join(f"  - {{name: Harbourfolk Number{n:02d}, type: npc}}\n" for n in range(60))  # more than fit
    (tmp_path / "salt.yaml").write_text(f"entities:\n  - {{name: Port Venmark, type: location}}\n{lore}")
    assert lk("campaign", "create", "Salt Road").returncode == 0
    assert lk("campaign", "load", str(tmp_path / "salt.yaml")).returncode == 0
    shown = lk("entity", "pin", "Harbourfolk Number59", "--prompt")
    assert shown.returncode == 0, shown.stderr
    head, *listed, left = shown.stdout.splitlines()[1:]
    assert head.startswith("the prompt at the next session's start (") and " of 61 names fit):" in head
    assert listed[:2] == ["  1. Harbourfolk Number59", "  2. Harbourfolk Number00"]  # the pinned first
    assert left.startswith(f"left out ({61 - len(listed)}): ") and left.endswith(", Port Venmark")
