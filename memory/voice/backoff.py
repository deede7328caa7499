"""Exponential backoff with an injectable clock, for voice reconnects and database retries.

The policy is plain data and :func:`retry` takes its ``sleep`` as a parameter, so tests drive it with a fake
clock instead of waiting minutes of real time.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delays ``initial``, ``initial*factor``, … capped at ``maximum``; ``tries`` attempts in all (None: forever).

    The defaults are the voice reconnect policy: 1 s doubling to 30 s, 10 tries (about 3 minutes of trying,
    long enough for a Discord voice server move, short enough that the DM is told while still at the table).
    """

    initial: float = 1.0
    factor: float = 2.0
    maximum: float = 30.0
    tries: int | None = 10

    def __post_init__(self) -> None:
        if self.initial <= 0 or self.factor < 1 or self.maximum < self.initial:
            raise ValueError("backoff needs initial > 0, factor >= 1 and maximum >= initial")
        if self.tries is not None and self.tries < 1:
            raise ValueError("backoff needs at least one try")

    def delay(self, failures: int) -> float:
        """The wait after the ``failures``-th consecutive failure (1-based)."""
        # Capping the exponent keeps a retry loop that runs for days from overflowing a float.
        return min(self.maximum, self.initial * self.factor ** min(failures - 1, 64))

    def delays(self) -> Iterator[float]:
        """The waits between tries: one fewer than ``tries`` (endless when ``tries`` is None)."""
        failures = 1
        while self.tries is None or failures < self.tries:
            yield self.delay(failures)
            failures += 1


class GaveUp(Exception):
    """Every try failed; ``__cause__`` is the last error."""

    def __init__(self, tries: int, last: BaseException) -> None:
        super().__init__(f"gave up after {tries} tries: {last}")
        self.tries = tries
        self.last = last


async def retry(
    attempt: Callable[[], Awaitable[T]],
    policy: Backoff = Backoff(),
    *,
    retry_on: tuple[type[BaseException], ...] = (Exception,),
    sleep: Sleep = asyncio.sleep,
    on_failure: Callable[[int, BaseException, float], None] | None = None,
    on_give_up: Callable[[GaveUp], Awaitable[None] | None] | None = None,
) -> T:
    """Await ``attempt()`` until it succeeds, waiting ``policy``'s delays between failures.

    ``on_failure(try_number, error, next_delay)`` is told of each failure that will be retried;
    ``on_give_up`` (sync or async) is called once when the tries run out, then :class:`GaveUp` is raised.
    Errors outside ``retry_on`` and cancellation propagate at once.
    """
    delays = policy.delays()
    tries = 0
    while True:
        tries += 1
        try:
            return await attempt()
        except retry_on as exc:
            wait = next(delays, None)
            if wait is None:
                gave_up = GaveUp(tries, exc)
                if on_give_up is not None:
                    result = on_give_up(gave_up)
                    if result is not None:
                        await result
                raise gave_up from exc
            if on_failure is not None:
                on_failure(tries, exc, wait)
            else:
                log.warning("try %d failed (%s); retrying in %.1f s", tries, exc, wait)
            await sleep(wait)
