"""How far the background jobs are while a command waits for them: progress bars at a terminal, a plain line every
few seconds otherwise (a log, CI), on stderr (stdout may be a script's)."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO


@dataclass(frozen=True, slots=True)
class Stage:
    """One kind of background work: ``done`` of ``total`` ``unit``."""

    label: str
    done: int
    total: int
    unit: str


def eta(first: tuple[float, int], now: tuple[float, int], total: int) -> float | None:
    """Seconds left for a stage seen at ``first`` = (time, done) and ``now``, at the rate between them; None
    before it has moved (no rate yet) and 0 when it is done."""
    (t0, done0), (t1, done1) = first, now
    if done1 >= total:
        return 0.0
    if done1 <= done0 or t1 <= t0:
        return None
    return (total - done1) * (t1 - t0) / (done1 - done0)


def clock(seconds: float) -> str:
    """1:02:03 or 2:03."""
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02}:{secs:02}" if hours else f"{minutes}:{secs:02}"


def stages_line(stages: Sequence[Stage], left: float | None) -> str:
    """``background jobs: embedded 1,200 of 2,076 lines, … (about 0:31 left)``."""
    said = ", ".join(f"{s.label} {s.done:,} of {s.total:,} {s.unit}" for s in stages)
    return f"background jobs: {said}" + (f" (about {clock(left)} left)" if left else "")


class StageProgress:
    """Shows a list of :class:`Stage` as it changes. At a terminal: one tqdm bar per stage (count, rate, ETA),
    drawn once the wait is ``delay`` seconds old (tqdm's own delay waits for a count to change, which a step
    that loads a model first does not for a while); else a line every ``every`` seconds, the first after ``every``
    seconds, so a quick wait says nothing, and the same counts said again only after ``quiet`` seconds (a log
    reads as what changed, with a sign of life through a long step)."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        terminal: bool | None = None,
        every: float = 5.0,
        delay: float = 2.0,
        quiet: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        if terminal is None:
            try:
                terminal = self.stream.isatty()
            except (AttributeError, ValueError):  # a closed or stand-in stream
                terminal = False
        self.terminal = terminal
        self.every = every
        self.delay = delay
        self.quiet = quiet
        self.clock = clock
        self._said: list[tuple[str, int, int]] | None = None  # the counts of the last line written
        self._started = self._last = clock()
        self._first: dict[str, tuple[float, int]] = {}
        self._bars: dict[str, Any] = {}

    def show(self, stages: Sequence[Stage]) -> None:
        now = self.clock()
        for stage in stages:
            if stage.done < stage.total:  # the rate counts from when the stage was first seen unfinished
                self._first.setdefault(stage.label, (now, stage.done))
        if self.terminal:
            if now - self._started >= self.delay:  # a quick wait draws nothing
                self._draw(stages)
        elif now - self._last >= self.every and (
            [(s.label, s.done, s.total) for s in stages] != self._said or now - self._last >= self.quiet
        ):
            lefts = [eta(self._first.get(s.label, (now, s.done)), (now, s.done), s.total) for s in stages]
            known = [left for left in lefts if left is not None]
            left = max(known) if known and len(known) == len(lefts) else None
            self.stream.write(stages_line(stages, left) + "\n")
            self.stream.flush()
            self._last = now
            self._said = [(s.label, s.done, s.total) for s in stages]

    def _draw(self, stages: Sequence[Stage]) -> None:
        from tqdm import tqdm  # only at a terminal, waiting

        width = max(len(s.label) for s in stages)
        sized = self._sized()
        for position, stage in enumerate(stages):
            bar = self._bars.get(stage.label)
            if bar is None:
                bar = self._bars[stage.label] = tqdm(
                    desc=stage.label.ljust(width),
                    total=stage.total,
                    initial=stage.done,  # what was done before the bar: no rate of it
                    unit=f" {stage.unit}",
                    position=position,
                    leave=True,
                    file=self.stream,
                    # a terminal of unknown size (a bare pty) reads as 0 by 0, where tqdm draws nothing
                    ncols=None if sized else 80,
                    nrows=None if sized else 24,
                    dynamic_ncols=sized,
                )
            if bar.total != stage.total:
                bar.total = stage.total
            if stage.done != bar.n:
                bar.update(stage.done - bar.n)
            bar.refresh()  # its elapsed time moves on while the count waits for a slow step

    def _sized(self) -> bool:
        try:
            return os.get_terminal_size(self.stream.fileno()).columns > 0
        except (AttributeError, OSError, ValueError):
            return False

    def close(self, stages: Sequence[Stage] | None = None) -> None:
        """The last counts, then the bars closed (left on screen); none if none was drawn (a quick wait). Without
        a terminal, the last counts as a line if they moved since the last one said, with no time left: the
        wait is over, and a summary after it must not read "recapped 0 of 1" above a table that says 1."""
        if stages is not None and self._bars:
            self._draw(stages)
        if stages is not None and self._said is not None and [(s.label, s.done, s.total) for s in stages] != self._said:
            self.stream.write(stages_line(stages, None) + "\n")
            self.stream.flush()
        for bar in self._bars.values():
            bar.close()
        self._bars.clear()


async def watch(
    poll: Callable[[], Awaitable[Sequence[Stage]]], progress: StageProgress, *, interval: float = 1.0
) -> None:
    """Show ``poll()`` every ``interval`` seconds until cancelled."""
    while True:
        progress.show(await poll())
        await asyncio.sleep(interval)
