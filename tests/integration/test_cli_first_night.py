"""A DM's first night with the command line, from README: load a world, import a session, ask what was said."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest


def today() -> str:
    """The date of a session started now, as a citation says it beside the session's title."""
    return f"{datetime.now(UTC):%Y-%m-%d}"


SESSION = """\
[00:00:05] DM: Welcome back. You stand in the mud of Brackenmoor, rain on the stilts.
[00:00:12] Kestrel: I go find the reeve, Thessaly Vantrim.
[00:00:20] DM: The grey widow is on her porch. She says the Lantern Court has been asking about the old chapel.
[00:00:31] Kestrel: What's at Old Wend?
[00:00:40] DM: She says nobody goes to Old Wend since the flood. She gives you the Moonwell Key.
[00:00:55] Kestrel: I pocket the key. Who sells lanterns here?
[00:01:03] DM: Harrow Venn is the blacksmith of Brackenmoor. He owes Thessaly twelve silver.
[00:01:10] Pip: I want to buy a lantern from Harrow Venn.
"""


@pytest.fixture
def session_file(lk, tmp_path: Path) -> Path:
    assert lk("campaign", "create", "Brackenmoor").returncode == 0
    path = tmp_path / "night1.txt"
    path.write_text(SESSION)
    return path


def test_recall_shows_every_line_of_a_passage(lk, session_file: Path) -> None:
    assert lk("ingest", str(session_file), "--wait").returncode == 0
    res = lk("recall", "who sells lanterns")
    assert res.returncode == 0, res.stderr
    # the eight lines are one passage; its last two answer the question
    assert "DM: Harrow Venn is the blacksmith of Brackenmoor." in res.stdout
    assert "Pip: I want to buy a lantern from Harrow Venn." in res.stdout


def test_recall_of_what_a_character_said_shows_its_players_lines(lk, session_file: Path) -> None:
    assert lk("entity", "add", "Wren", "player", "--attr", "played_by=Pip").returncode == 0
    assert lk("ingest", str(session_file), "--wait").returncode == 0
    res = lk("recall", "what did Wren say about lanterns")
    assert res.returncode == 0, res.stderr
    answers = [line for line in res.stdout.splitlines() if line.startswith("   › ")]
    # the DM and Kestrel say "lantern" too, but they are not Wren
    assert answers == ["   › Pip (Wren): I want to buy a lantern from Harrow Venn."]


def test_ingest_without_wait_names_a_worker_that_finishes(lk, session_file: Path) -> None:
    res = lk("ingest", str(session_file))
    assert res.returncode == 0, res.stderr
    # plain `lorekeeper worker` waits for more work forever: the hint must be the one that returns
    assert "background jobs queued: the bot runs them if it is running, else `lorekeeper worker --drain`" in res.stdout
    assert lk("worker", "--drain", timeout=60).returncode == 0
    assert lk("entity", "add", "Eldrinax", "npc").returncode == 0
    (session_file.parent / "night2.txt").write_text("DM: elder nacks wakes.\n")
    one = lk("ingest", str(session_file.parent / "night2.txt"))
    assert one.stdout.splitlines()[0] == (
        "night2.txt → Brackenmoor: 1 line read, 1 new, 1 name corrected, 0 lines skipped (session: night2)"
    )


def test_recap_prints_a_sessions_summary(lk, session_file: Path) -> None:
    none_yet = lk("recap")
    assert none_yet.returncode == 1
    assert none_yet.stderr == "error: no sessions in Brackenmoor yet: `lorekeeper ingest FILE` imports one\n"
    assert lk("ingest", str(session_file), "--session", "Night 1").returncode == 0
    queued = lk("recap")
    assert queued.returncode == 0, queued.stderr
    assert "no summary yet" in queued.stdout and "`lorekeeper worker --drain`" in queued.stdout
    assert lk("worker", "--drain", timeout=60).returncode == 0

    latest = lk("recap")
    assert latest.returncode == 0, latest.stderr
    assert latest.stdout.startswith("Recap: Night 1 (started ")
    assert "Harrow Venn is the blacksmith of Brackenmoor" in latest.stdout
    assert lk("recap", "night 1").stdout == latest.stdout  # titles as /recap takes them: any case
    as_json = json.loads(lk("recap", "--json").stdout)
    assert as_json["title"] == "Night 1" and "Harrow Venn" in as_json["summary"]
    missing = lk("recap", "Night 9")
    assert missing.returncode == 1 and missing.stderr == "error: no session titled 'Night 9'; recent ones: 'Night 1'\n"


def test_entity_show_says_which_facts_players_cannot_see(lk, tmp_path: Path) -> None:
    world = tmp_path / "world.yaml"
    world.write_text(
        "campaign: {name: Fen}\n"
        "entities:\n"
        "  - {name: Thessaly Vantrim, type: npc, attributes: {alive: true, titles: [Reeve, Keeper of Keys]}}\n"
        "  - {name: Old Wend, type: place}\n"
        "relationships:\n"
        "  - {source: Thessaly Vantrim, type: hides_in, target: Old Wend, secret: true}\n"
        "  - {source: Thessaly Vantrim, type: lives_near, target: Old Wend}\n"
    )
    assert lk("campaign", "load", str(world)).returncode == 0
    shown = lk("entity", "show", "Thessaly Vantrim")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert "  - Thessaly Vantrim hides in Old Wend (secret)" in lines
    assert "  - Thessaly Vantrim lives near Old Wend" in lines
    # values as a campaign file or --attr writes them, not as Python prints them (True, ['Reeve', …])
    assert "  alive: true" in lines and '  titles: ["Reeve", "Keeper of Keys"]' in lines


def test_search_names_the_session_by_the_title_it_takes(lk, session_file: Path) -> None:
    assert lk("ingest", str(session_file), "--session", "Night 1").returncode == 0
    res = lk("search", "lantern")
    assert res.returncode == 0, res.stderr
    rows = [row for row in res.stdout.splitlines()[2:] if not row.startswith(" ")]  # a long line wraps, whole
    played = f"Night 1, {today()}"  # the session's date beside its title, as every citation says it
    assert len(rows) == 3 and all(row.startswith(f"{played} at ") for row in rows)  # what --session takes
    assert rows[0].startswith(f"{played} at 0:20  DM ")
    assert lk("search", "lantern", "--session", "Night 1").stdout == res.stdout
    missing = lk("search", "lantern", "--session", "Night 9")
    assert (
        missing.returncode == 2
        and "no session titled 'Night 9' (or named as 'last session', 'session N'); recent ones: 'Night 1'"
        in missing.stderr
    )


def test_search_says_where_a_line_of_an_untimed_transcript_is_as_recall_does(lk, tmp_path: Path) -> None:
    """A CRD3 episode or a .txt without times has no time to show: every line said "0s"; recall says "(turn 3)"."""
    assert lk("campaign", "create", "Exandria").returncode == 0
    episode = tmp_path / "C1E001.json"
    turns = [{"NAMES": ["MATT"], "UTTERANCES": [f"Line {n}."], "NUMBER": n} for n in range(3)]
    turns.append({"NAMES": ["SAM"], "UTTERANCES": ["A lantern for the road."], "NUMBER": 3})
    episode.write_text(json.dumps({"TURNS": turns}))
    (night := tmp_path / "night.txt").write_text("DM: The bell tolls.\nPip: I light a lantern.\n")
    for path in (episode, night):
        assert lk("ingest", str(path)).returncode == 0
    rows = lk("search", "lantern").stdout.splitlines()
    day = today()
    assert sorted(row.split("  ")[0] for row in rows[2:]) == [
        f"C1E001, {day} (turn 3)",
        f"night, {day} (night.txt:2)",
    ]
    assert "0s" not in "".join(rows) and rows[0].split() == ["where", "speaker", "text", "ref"]


def test_a_mistyped_config_key_names_the_file_and_the_setting_meant(lk, tmp_path: Path) -> None:
    config = tmp_path / "lorekeeper.yaml"
    config.write_text("accept_treshold: 0.5\n")
    res = lk("--config", str(config), "campaign", "list")
    assert res.returncode == 1
    assert res.stderr == (
        f"error: {config}: unknown setting 'accept_treshold' (did you mean 'accept_threshold'?): "
        "the keys are the environment variables in lower case, without LOREKEEPER_\n"
    )
    config.write_text("database_url: postgresql://nowhere\nopenai_api_key: sk-x\n")  # no prefix of their own
    assert "unknown setting" not in lk("--config", str(config), "campaign", "list").stderr


def test_a_mistyped_variable_is_named_with_the_setting_meant(lk) -> None:
    res = lk("campaign", "list", env={"LOREKEEPER_ACCEPT_TRESHOLD": "0.5"})
    assert res.returncode == 0
    assert "LOREKEEPER_ACCEPT_TRESHOLD is not a setting (did you mean LOREKEEPER_ACCEPT_THRESHOLD?)" in res.stderr
    assert "not a setting" not in lk("campaign", "list").stderr  # LOREKEEPER_DATA_DIR and the rest are settings


def test_recall_of_what_happened_last_session_shows_its_recap_first(lk, session_file: Path) -> None:
    assert lk("ingest", str(session_file), "--session", "Night 1", "--wait").returncode == 0
    recap = lk("recap").stdout
    asked = lk("recall", "what happened last session?", "--mode", "fulltext")
    assert asked.returncode == 0, asked.stderr
    assert asked.stdout.startswith(recap + "\n")  # the recap as `recap` prints it, then the lines
    assert json.loads(lk("recall", "recap last session", "--json").stdout)["recap"]["title"] == "Night 1"
    assert json.loads(lk("recall", "who sells lanterns", "--json").stdout)["recap"] is None


def test_recall_of_a_recap_shows_it_alone_and_names_a_missing_session(lk, session_file: Path) -> None:
    assert lk("ingest", str(session_file), "--session", "Night 1", "--wait").returncode == 0
    recap = lk("recap").stdout
    # its words ("happened") would find only lines saying them, and "nothing found" under it would deny it
    for question in ("recap last session", "what happened in the first session?", "last session"):
        asked = lk("recall", question, "--mode", "fulltext")
        assert asked.returncode == 0, asked.stderr
        assert asked.stdout.rstrip("\n") == recap.rstrip("\n"), question
        assert json.loads(lk("recall", question, "--json").stdout)["hits"] == []
    missing = lk("recall", "what happened two sessions ago")
    assert missing.returncode == 1
    assert "no session two sessions ago in campaign" in missing.stderr and "'Night 1'" in missing.stderr
    assert "no session 9 in campaign" in lk("recall", "what did we find in session 9").stderr
