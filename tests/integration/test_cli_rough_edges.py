"""A DM's first night on the command line: imports that store nothing fail, `--wait` sums up this import, campaign
names are suggested, `-c` says where a campaign file goes, and `campaign info` says what a campaign holds."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import asyncpg

from memory import jobs

Lk = Callable[..., subprocess.CompletedProcess[str]]


def test_an_import_that_stores_nothing_exits_1_and_says_why(lk: Lk, tmp_path: Path) -> None:
    assert lk("campaign", "create", "Saltmere").returncode == 0
    (empty := tmp_path / "empty.txt").write_text("\n\n")
    done = lk("ingest", str(empty))
    assert done.returncode == 1
    assert done.stderr == "error: nothing imported: empty.txt has no lines\n"
    (export := tmp_path / "export.jsonl").write_text(
        '{"speaker": "Ana", "text": ""}\n{"speaker": "Ben", "start": "later", "text": "Hi."}\n'
    )
    done = lk("ingest", str(export))
    assert done.returncode == 1
    assert done.stderr.endswith(
        "\nerror: nothing imported: every line of export.jsonl was skipped (2; the first: missing or empty 'text')\n"
    )
    assert "0 lines read" in done.stdout
    assert json.loads(lk("session", "list", "--json").stdout) == []  # no empty session left behind


def test_wait_sums_up_this_import_then_the_campaign_and_a_reimport_queues_nothing(lk: Lk, tmp_path: Path) -> None:
    assert lk("campaign", "create", "Saltmere").returncode == 0
    (first := tmp_path / "first.txt").write_text("DM: The bell rings.\nAna: I count the ropes.\nBen: Three.\n")
    assert lk("ingest", str(first), "--wait").returncode == 0
    (second := tmp_path / "second.txt").write_text("DM: The tide turns.\nAna: Vord sails at dawn.\n")
    done = lk("ingest", str(second), "--wait")
    assert done.returncode == 0, done.stderr
    # not a terminal: no bars; a line every 5 s, if the machine is slow
    assert all(line.startswith("background jobs: ") for line in done.stderr.splitlines()), done.stderr
    out = done.stdout.splitlines()
    mine = out.index("session 'second' in all (this import: 2 new lines):")
    assert out[mine + 1].split()[:2] == ["session", "lines"]
    assert out[mine + 3].split()[0] == "2" and out[mine + 3].split()[-1] == "1"  # 2 lines, 1 recap
    theirs = out.index("campaign Saltmere:")
    # in the words of this import's table: not the database's "entries" and "chunks"
    assert out[theirs + 1].split()[:3] == ["session", "lines", "passages"] and out[theirs + 3].split()[0] == "5"

    again = lk("ingest", str(second))
    assert again.returncode == 0, again.stderr
    assert "2 lines read, 0 new" in again.stdout
    assert "0 background jobs queued" in again.stdout  # no summary job to write the same recap again
    # with --wait, the table is the session's: said as such, not as if this import brought its lines
    waited = lk("ingest", str(second), "--wait").stdout.splitlines()
    mine = waited.index("session 'second' in all (this import: 0 new lines):")
    assert waited[mine + 3].split()[0] == "2"


def test_campaign_names_are_suggested_and_info_says_what_one_holds(lk: Lk, tmp_path: Path) -> None:
    assert lk("campaign", "create", "Vox Machina", "--system", "D&D 5e").returncode == 0
    assert lk("campaign", "create", "Mighty Nein").returncode == 0
    wrong = lk("entity", "list", "-c", "Vox")
    assert wrong.returncode == 1
    assert wrong.stderr == (
        "error: no campaign named 'Vox' (did you mean 'Vox Machina'?): `lorekeeper campaign list` shows them\n"
    )

    # -c wins over the file's own campaign, as its help says; the file's description stays with its campaign
    assert "default: the file's `campaign: name`" in " ".join(lk("campaign", "load", "--help").stdout.split())
    (file := tmp_path / "cr.yaml").write_text(
        "campaign: {name: Critical Role, description: From the wiki.}\n"
        "entities:\n  - {name: Grog Strongjaw, type: npc, aliases: [Grog]}\n"
    )
    loaded = lk("campaign", "load", str(file), "-c", "Vox Machina")
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.startswith("Vox Machina: ")
    assert "(the file is for the campaign 'Critical Role'; loaded into 'Vox Machina')" in loaded.stdout
    assert [c["name"] for c in json.loads(lk("campaign", "list", "--json").stdout)] == ["Mighty Nein", "Vox Machina"]

    info = lk("campaign", "info", "vox machina")
    assert info.returncode == 0, info.stderr
    lines = info.stdout.splitlines()
    assert lines[0] == "Vox Machina (active)"
    assert "  system:          D&D 5e" in lines and "  entities:        1" in lines
    assert "description" not in info.stdout  # none given: not said (and not the file's, for another campaign)
    as_json = json.loads(lk("campaign", "info", "--json").stdout)  # the active one
    assert (as_json["name"], as_json["entities"], as_json["sessions"], as_json["pending"]) == ("Vox Machina", 1, 0, 0)
    missing = lk("campaign", "info", "nein")
    assert missing.returncode == 1 and "(did you mean 'Mighty Nein'?)" in missing.stderr


def test_wait_says_one_new_line_in_the_singular(lk: Lk, tmp_path: Path) -> None:
    """A clip of one sentence (an `unheard/` WAV, a one-line note) ended its import with "this import (1 new
    lines):", where the line above says "1 line read"."""
    assert lk("campaign", "create", "Saltmere").returncode == 0
    (one := tmp_path / "one.txt").write_text("DM: The bell rings once.\n")
    done = lk("ingest", str(one), "--wait")
    assert done.returncode == 0, done.stderr
    assert "1 line read, 1 new" in done.stdout
    assert "session 'one' in all (this import: 1 new line):" in done.stdout.splitlines()


def test_wait_says_its_counts_in_one_number_format(lk: Lk, tmp_path: Path) -> None:
    """The tables under "this import (2,532 new lines):" said 2532: one number, two formats."""
    assert lk("campaign", "create", "Saltmere").returncode == 0
    (night := tmp_path / "night.txt").write_text("".join(f"Ana: I count rope {n}.\n" for n in range(1000)))
    done = lk("ingest", str(night), "--wait", timeout=300)
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    mine = out.index("session 'night' in all (this import: 1,000 new lines):")
    assert out[mine + 3].split()[0] == "1,000", out
    theirs = out.index("campaign Saltmere:")
    assert out[theirs + 3].split()[0] == "1,000", out
    info = lk("campaign", "info")  # and what the campaign holds, said the same way
    assert "  lines:           1,000" in info.stdout.splitlines(), info.stdout


def test_wait_counts_the_campaigns_facts_as_it_counts_this_imports(lk: Lk, tmp_path: Path) -> None:
    """The first table said "facts 45" of the import; the campaign's below it had no facts column at all, where
    `campaign info` says how many the campaign holds."""
    assert lk("campaign", "create", "Saltmere").returncode == 0
    (world := tmp_path / "world.yaml").write_text(
        "entities:\n  - {name: Vord, type: npc}\n  - {name: Saltmere, type: location}\n"
        "relationships:\n  - {source: Vord, type: lives_in, target: Saltmere}\n"
    )
    assert lk("campaign", "load", str(world)).returncode == 0, "load"
    (night := tmp_path / "night.txt").write_text("DM: Vord rings the bell of Saltmere.\nAna: I count the ropes.\n")
    done = lk("ingest", str(night), "--wait")
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    theirs = out.index("campaign Saltmere:")
    headers = re.split(r"\s{2,}", out[theirs + 1].strip())
    row = dict(zip(headers, out[theirs + 3].split(), strict=True))
    facts = json.loads(lk("campaign", "info", "--json").stdout)["facts"]
    assert facts >= 1 and row["facts"] == str(facts), out


def test_a_file_imported_again_says_it_corrected_no_name(lk: Lk, tmp_path: Path) -> None:
    """Imported again, C2E006 said "2,532 lines read, 0 new, 2 names corrected": the lines stored the first time
    keep their text, and nothing was corrected."""
    assert lk("campaign", "create", "Saltmere").returncode == 0
    assert lk("entity", "add", "Eldrinax", "npc").returncode == 0
    (night := tmp_path / "night.txt").write_text("DM: The fishermen blame elder nacks.\nAna: Who?\n")
    first = lk("ingest", str(night))
    assert first.returncode == 0, first.stderr
    assert "2 lines read, 2 new, 1 name corrected" in first.stdout
    again = lk("ingest", str(night))
    assert again.returncode == 0, again.stderr
    assert "2 lines read, 0 new, 0 names corrected" in again.stdout


def test_campaign_delete_asks_in_the_singular_for_one(lk: Lk) -> None:
    """A campaign of one entity asked "delete 'T' with 0 sessions, 0 log entries and 1 entities?"."""
    assert lk("campaign", "create", "T").returncode == 0
    assert lk("entity", "add", "Korvash", "npc").returncode == 0
    asked = lk("campaign", "delete", "T", input="n\n")
    assert asked.returncode == 1
    assert "delete 'T' with 0 sessions, 0 log entries and 1 entity? This cannot be undone" in asked.stderr


def test_worker_drain_ends_saying_what_it_did(lk: Lk, tmp_path: Path, fresh_dsn: str) -> None:
    """`lorekeeper worker --drain` ended under its last look at the queue ("jobs done 2 of 3 jobs (about 0:03
    left)") with "worker stopped: 1 chunks written": not how many jobs ran or failed, nor how long it took."""
    assert lk("campaign", "create", "T").returncode == 0
    (night := tmp_path / "night.txt").write_text("DM: Korvash slams the door.\nAna: We should ask Korvash.\n")
    assert lk("ingest", str(night)).returncode == 0  # a chunk, an extract and a summary job

    async def queue_a_bad_job() -> None:  # a summary job of no session: held at once
        conn = await asyncpg.connect(fresh_dsn)
        try:
            await conn.execute(
                "INSERT INTO pgqueuer (priority, status, entrypoint, payload) VALUES (0, 'queued', $1, $2)",
                jobs.SUMMARY,
                json.dumps({"campaign_id": 1}).encode(),
            )
        finally:
            await conn.close()

    asyncio.run(queue_a_bad_job())
    done = lk("worker", "--drain")
    assert done.returncode == 0, done.stderr
    last = done.stderr.splitlines()[-1]
    said = r"worker stopped: 4 jobs run, 1 failed \(`lorekeeper jobs list` says why\), in 0:\d\d; 1 chunk written"
    assert re.fullmatch(said, last), done.stderr


def test_campaign_info_counts_an_import_waiting_for_review(lk: Lk, tmp_path: Path) -> None:
    """A CSV import waited in `review list` as one card while `campaign info` said "awaiting review: 0"."""
    assert lk("campaign", "create", "T").returncode == 0
    (world := tmp_path / "world.csv").write_text("name,type,description\nKosh,npc,Starosta of Alfield\n")
    assert lk("campaign", "import", str(world)).returncode == 0
    assert "lorekeeper review accept b1" in lk("review", "list").stdout
    info = lk("campaign", "info")
    assert info.returncode == 0, info.stderr
    assert "  awaiting review: 0 items and 1 import" in info.stdout.splitlines(), info.stdout
    assert json.loads(lk("campaign", "info", "--json").stdout)["pending_imports"] == 1
    assert lk("review", "accept", "b1").returncode == 0
    assert "  awaiting review: 0" in lk("campaign", "info").stdout.splitlines()


def test_review_list_says_when_lines_are_still_to_be_read(lk: Lk, tmp_path: Path) -> None:
    """Imported without --wait and no bot running, `review list` said "nothing to review", as if the session had
    proposed nothing; `recap` said its summary was not written yet."""
    assert lk("campaign", "create", "T").returncode == 0
    (night := tmp_path / "night.txt").write_text("DM: A dwarf named Korvash waits at the gate.\nAna: Hi.\n")
    assert lk("ingest", str(night)).returncode == 0
    listed = lk("review", "list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout == (
        "nothing to review in T yet: 2 lines still to be read for entities and facts (the bot reads them if it is "
        "running, else `lorekeeper worker --drain`)\n"
    )
    assert lk("worker", "--drain").returncode == 0
    assert "still to be read" not in lk("review", "list").stdout


def test_a_file_of_no_type_ingest_reads_is_refused_naming_both_kinds_it_reads(lk: Lk, tmp_path: Path) -> None:
    """`ingest clip.wma` said "unknown transcript format", and with --speaker that the file was no audio."""
    assert lk("campaign", "create", "Saltmere").returncode == 0
    (odd := tmp_path / "night.mka").write_bytes(b"\0" * 64)
    said = (
        "error: night.mka: unsupported file type '.mka': audio is .aac .aif .aiff .flac .m4a .mp3 .oga .ogg .opus "
        ".wav .webm .wma; a transcript is .jsonl, .txt, CRD3 .json, or subtitles .srt or .vtt\n"
    )
    for args in ([], ["--speaker", "DM"]):
        done = lk("ingest", str(odd), *args)
        assert (done.returncode, done.stderr) == (1, said)
