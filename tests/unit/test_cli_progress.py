"""What a command waiting on background jobs shows: bars at a terminal, a line every few seconds otherwise."""

from __future__ import annotations

import asyncio
import io

from bot.cli.common import table, wrapped
from bot.cli.progress import Stage, StageProgress, clock, eta, stages_line, watch


def stages(embedded: int, extracted: int, recapped: int) -> list[Stage]:
    return [
        Stage("embedded", embedded, 400, "lines"),
        Stage("extracted", extracted, 400, "lines"),
        Stage("recapped", recapped, 1, "sessions"),
    ]


def test_eta_is_the_rate_so_far_applied_to_what_is_left() -> None:
    assert eta((0.0, 0), (10.0, 100), 400) == 30.0
    assert eta((0.0, 50), (10.0, 50), 400) is None  # not moved yet: no rate to tell
    assert eta((0.0, 0), (10.0, 400), 400) == 0.0
    assert clock(31) == "0:31" and clock(3723.4) == "1:02:03"


def test_without_a_terminal_a_line_every_few_seconds_with_what_is_left() -> None:
    now = [0.0]
    log = io.StringIO()
    shown = StageProgress(log, every=5.0, clock=lambda: now[0])
    assert not shown.terminal
    for second, (embedded, extracted) in enumerate([(0, 0), (0, 100), (40, 200), (80, 300), (120, 400), (160, 400)]):
        now[0] = float(second * 2)
        shown.show(stages(embedded, extracted, 0))
    lines = log.getvalue().splitlines()
    assert len(lines) == 1  # at 6 s: a quick wait says nothing, then one line per 5 s
    assert lines[0] == (
        "background jobs: embedded 80 of 400 lines, extracted 300 of 400 lines, recapped 0 of 1 sessions"
    )  # the recap has not moved: no time left can be told
    shown.show([Stage("embedded", 400, 400, "lines")])
    assert log.getvalue().splitlines() == lines  # 10 s: too soon after the last line
    now[0] = 16.0
    shown.show([Stage("embedded", 280, 400, "lines")])
    assert log.getvalue().splitlines()[-1] == (
        "background jobs: embedded 280 of 400 lines (about 0:07 left)"  # 280 lines in 16 s: 120 more in 7 s
    )
    shown.close()


def test_without_a_terminal_counts_that_did_not_move_are_not_said_again_for_a_minute() -> None:
    now = [0.0]
    log = io.StringIO()
    shown = StageProgress(log, every=5.0, clock=lambda: now[0])
    for second in range(0, 130, 5):  # two minutes of a step that does not move the counts
        now[0] = float(second)
        shown.show(stages(400, 400, 0))
    said = "background jobs: embedded 400 of 400 lines, extracted 400 of 400 lines, recapped 0 of 1 sessions"
    assert log.getvalue().splitlines() == [said] * 3  # at 5 s, 65 s and 125 s: a sign of life, not a flood
    now[0] = 130.0
    shown.show(stages(400, 400, 1))
    assert log.getvalue().splitlines()[-1].endswith("recapped 1 of 1 sessions")  # moved: said at once


def test_without_a_terminal_the_wait_ends_on_the_last_counts_with_no_time_left() -> None:
    """`ingest --wait` said "recapped 0 of 1 sessions (about 0:03 left)", then a table with 1 recap."""
    now = [0.0]
    log = io.StringIO()
    shown = StageProgress(log, every=5.0, clock=lambda: now[0])
    for second, extracted in [(0, 0), (5, 200)]:
        now[0] = float(second)
        shown.show([Stage("extracted", extracted, 400, "lines")])
    shown.close(stages(400, 400, 1))
    assert log.getvalue().splitlines() == [
        "background jobs: extracted 200 of 400 lines (about 0:05 left)",
        "background jobs: embedded 400 of 400 lines, extracted 400 of 400 lines, recapped 1 of 1 sessions",
    ]
    # a quick wait says nothing, nor do counts said already
    for said in ([], [stages(400, 400, 1)]):
        quiet = io.StringIO()
        now[0] = 0.0
        shown = StageProgress(quiet, every=5.0, clock=lambda: now[0])
        shown.show(stages(0, 0, 0))
        now[0] = 10.0
        for counts in said:
            shown.show(counts)
        shown.close(stages(400, 400, 1))
        assert len(quiet.getvalue().splitlines()) == len(said)


def test_at_a_terminal_a_bar_per_stage_once_the_wait_is_two_seconds_old() -> None:
    now = [0.0]
    screen = io.StringIO()
    shown = StageProgress(screen, terminal=True, clock=lambda: now[0])
    shown.show(stages(0, 0, 0))
    now[0] = 1.0
    shown.show(stages(10, 100, 0))
    assert screen.getvalue() == ""  # a quick wait draws nothing
    now[0] = 2.5
    shown.show(stages(40, 200, 0))
    drawn = screen.getvalue()
    assert "embedded " in drawn and "40/400" in drawn and "200/400" in drawn and "0/1" in drawn
    shown.close(stages(400, 400, 1))
    assert "400/400" in screen.getvalue() and "1/1" in screen.getvalue()

    quick = io.StringIO()
    done = StageProgress(quick, terminal=True, clock=lambda: 0.0)
    done.show(stages(400, 400, 1))
    done.close(stages(400, 400, 1))
    assert quick.getvalue() == ""


def test_stages_line_and_watch() -> None:
    assert stages_line([Stage("recapped", 1, 2, "sessions")], None) == "background jobs: recapped 1 of 2 sessions"

    async def run() -> list[str]:
        seen: list[str] = []

        class Recorder(StageProgress):
            def show(self, stages: list[Stage]) -> None:  # type: ignore[override]
                seen.append(stages[0].label)

        async def poll() -> list[Stage]:
            return [Stage("embedded", len(seen), 3, "lines")]

        task = asyncio.create_task(watch(poll, Recorder(io.StringIO()), interval=0.01))
        await asyncio.sleep(0.1)
        task.cancel()
        return seen

    assert len(asyncio.run(run())) >= 3


def test_long_lines_wrap_between_words_never_cut(capsys) -> None:
    said = "Korvash runs to the Cinder Cup every night after the bells of the old chapel have rung twice."
    assert " ".join(wrapped(said, indent=5, width=40)) == said
    assert all(len(part) <= 35 for part in wrapped(said, indent=5, width=40))
    assert wrapped("Unbreakable-" * 5, width=40) == ["Unbreakable-" * 5]  # no word cut, however long
    table([["e1", said, "0.55"]], ["id", "said", "confidence"], wrap={1}, width=60)
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["id", "said", "confidence"]
    column = out[0].index("said")
    assert " ".join(line[column : column + 44].strip() for line in out[2:]) == said
    assert out[2].endswith("0.55") and all(len(line) <= 60 for line in out)
