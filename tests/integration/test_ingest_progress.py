"""`lorekeeper ingest` says how far it is, on stderr, only to someone at a terminal."""

from __future__ import annotations

import io
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from bot.cli.common import Progress
from bot.cli.ingest import ingest_transcript
from memory.store import CampaignMemory


class Terminal(io.StringIO):
    """stderr as a terminal: what is written to it stays readable."""

    def isatty(self) -> bool:
        return True


def night(tmp_path: Path, lines: int) -> Path:
    path = tmp_path / "night.txt"
    path.write_text("".join(f"DM: The bell of Saltmere rings for the {n}th time.\n" for n in range(1, lines + 1)))
    return path


def test_a_line_at_most_every_couple_of_seconds_and_only_at_a_terminal() -> None:
    now = [0.0]
    terminal = Terminal()
    progress = Progress(terminal, clock=lambda: now[0])
    for step in range(1, 11):  # half a second a step: a line after 2 s, then 2 s after the last
        now[0] = step / 2
        progress(lambda step=step: f"step {step}")
    assert terminal.getvalue() == "step 4\nstep 8\n"
    progress.touch()  # something else showed how far it is: the next line waits 2 s from now
    now[0] += 1.5
    progress(lambda: "too soon")
    assert terminal.getvalue().endswith("step 8\n")

    pipe = io.StringIO()
    silent = Progress(pipe, every=0)
    silent(lambda: "nobody reads this")
    assert not silent.enabled and pipe.getvalue() == ""


def test_a_real_terminal_is_told_from_a_pipe() -> None:
    leader, follower = os.openpty()
    read_end, write_end = os.pipe()
    with os.fdopen(follower, "w") as tty, os.fdopen(write_end, "w") as pipe:
        assert Progress(tty).enabled
        assert not Progress(pipe).enabled
    os.close(leader)
    os.close(read_end)


async def test_storing_a_transcript_counts_its_lines_on_a_terminal(campaign: CampaignMemory, tmp_path: Path) -> None:
    terminal = Terminal()
    report = await ingest_transcript(
        campaign, night(tmp_path, 3), None, False, None, False, progress=Progress(terminal, every=0)
    )
    assert report.written == 3
    assert terminal.getvalue() == "stored 1 of 3 lines\nstored 2 of 3 lines\nstored 3 of 3 lines\n"
    # imported again (--again: no first pass to refuse a copy), the count is still known
    terminal = Terminal()
    await ingest_transcript(
        campaign, night(tmp_path, 2), "Again", False, None, True, progress=Progress(terminal, every=0)
    )
    assert terminal.getvalue() == "stored 1 of 2 lines\nstored 2 of 2 lines\n"


def test_a_script_reading_ingest_gets_no_progress(
    lk: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    assert lk("campaign", "create", "C").returncode == 0
    done = lk("ingest", str(night(tmp_path, 1200)), "--session", "Night 1")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # stderr is a pipe here: no progress lines, however long it took
    assert done.stdout.startswith("night.txt → C: 1200 utterances read, 1200 new,")
