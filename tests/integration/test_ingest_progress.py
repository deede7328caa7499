"""`lorekeeper ingest` says how far it is, on stderr: every 2 s at a terminal, every 5 s in a log."""

from __future__ import annotations

import io
import itertools
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

from bot.cli.common import Progress
from bot.cli.ingest import ingest_transcript
from memory import jobs
from memory.ingest import import_counts, ingest_file
from memory.store import CampaignMemory, Memory


class Terminal(io.StringIO):
    """stderr as a terminal: what is written to it stays readable."""

    def isatty(self) -> bool:
        return True


def night(tmp_path: Path, lines: int) -> Path:
    path = tmp_path / "night.txt"
    path.write_text("".join(f"DM: The bell of Saltmere rings for the {n}th time.\n" for n in range(1, lines + 1)))
    return path


def test_a_line_at_most_every_couple_of_seconds_at_a_terminal_and_every_five_in_a_log() -> None:
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

    now[0] = 0.0
    log = io.StringIO()  # not a terminal: a log or CI, read later
    progress = Progress(log, clock=lambda: now[0])
    for step in range(1, 25):
        now[0] = step / 2
        progress(lambda step=step: f"step {step}")
    assert not progress.terminal and log.getvalue() == "step 10\nstep 20\n"


def test_a_real_terminal_is_told_from_a_pipe() -> None:
    leader, follower = os.openpty()
    read_end, write_end = os.pipe()
    with os.fdopen(follower, "w") as tty, os.fdopen(write_end, "w") as pipe:
        assert Progress(tty).terminal and Progress(tty).every == 2
        assert not Progress(pipe).terminal and Progress(pipe).every == 5
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


async def test_storing_a_long_transcript_says_how_far_in_a_log(campaign: CampaignMemory, tmp_path: Path) -> None:
    log, ticks = io.StringIO(), itertools.count()
    # each look at the clock a second later: a long import, made so without waiting for one
    await ingest_transcript(
        campaign, night(tmp_path, 40), None, False, None, False, progress=Progress(log, clock=lambda: next(ticks))
    )
    lines = log.getvalue().splitlines()
    said = [re.fullmatch(r"stored (\d+) of 40 lines", line) for line in lines]
    assert len(lines) >= 3 and all(said), lines
    counts = [int(m[1]) for m in said if m]
    assert counts == sorted(counts) and counts[-1] > counts[0]


def test_a_script_reading_ingest_gets_its_output_on_stdout_and_only_progress_on_stderr(
    lk: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    assert lk("campaign", "create", "C").returncode == 0
    done = lk("ingest", str(night(tmp_path, 1200)), "--session", "Night 1")
    assert done.returncode == 0, done.stderr
    # stderr is a pipe here: a line every 5 s, if it took that long on a busy machine, and nothing else
    assert all(re.fullmatch(r"stored [\d,]+ of 1,200 lines", line) for line in done.stderr.splitlines()), done.stderr
    assert done.stdout.startswith("night.txt → C: 1,200 lines read, 1,200 new,")


class CountingEmbedder:
    """A stand-in for the model that reads, as each slice is embedded, how far the import's counts say it is."""

    def __init__(self, campaign: CampaignMemory, session_id: int) -> None:
        self.campaign, self.session_id = campaign, session_id
        self.seen: list[int] = []

    async def embed(self, texts: list[str]) -> list[list[float]]:
        self.seen.append((await import_counts(self.campaign, [self.session_id])).embedded)
        return [[1.0] + [0.0] * 383 for _ in texts]


async def test_embedded_counts_lines_as_their_vectors_are_written(
    memory: Memory, campaign: CampaignMemory, tmp_path: Path
) -> None:
    """The chunk job writes every window first, then embeds the lines slice by slice: "embedded" moves with the
    lines' vectors, not with the windows (which said "2,076 of 2,076" while the lines were still being embedded)."""
    await ingest_file(campaign, night(tmp_path, 200))
    session = (await campaign.log.sessions())[0]
    embedder = CountingEmbedder(campaign, session.id)
    ctx = jobs.JobContext(memory=memory, embedder=embedder, embedding_model="stand-in")  # type: ignore[arg-type]
    await jobs.chunk_session(ctx, campaign.campaign_id, session.id, slice_size=64)
    assert embedder.seen == [0, 64, 128, 192]  # before each slice of 64: what the slices before it wrote
    assert (await import_counts(campaign, [session.id])).embedded == 200
