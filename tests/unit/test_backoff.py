"""The reconnect backoff, driven by a fake clock: the delays, the number of tries, giving up."""

from __future__ import annotations

import pytest

from memory.voice.backoff import Backoff, GaveUp, retry


class FakeClock:
    """Records every sleep and advances virtual time instead of waiting."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_delays_double_from_one_second_to_thirty() -> None:
    assert list(Backoff().delays()) == [1, 2, 4, 8, 16, 30, 30, 30, 30]  # 10 tries → 9 waits
    assert Backoff(tries=None).delay(1000) == 30


def test_bad_policy_is_refused() -> None:
    with pytest.raises(ValueError):
        Backoff(initial=0)
    with pytest.raises(ValueError):
        Backoff(tries=0)


async def test_gives_up_after_ten_tries_and_tells_the_callback() -> None:
    clock = FakeClock()
    tried_at: list[float] = []
    told: list[GaveUp] = []

    async def connect() -> None:
        tried_at.append(clock.now)
        raise ConnectionError("voice server gone")

    async def give_up(error: GaveUp) -> None:
        told.append(error)

    with pytest.raises(GaveUp) as caught:
        await retry(connect, Backoff(), sleep=clock.sleep, on_give_up=give_up)
    assert tried_at == [0, 1, 3, 7, 15, 31, 61, 91, 121, 151]
    assert clock.sleeps == [1, 2, 4, 8, 16, 30, 30, 30, 30]
    assert told == [caught.value] and caught.value.tries == 10
    assert isinstance(caught.value.__cause__, ConnectionError)


async def test_success_after_failures_stops_retrying() -> None:
    clock = FakeClock()
    failures: list[tuple[int, float]] = []
    calls = 0

    async def connect() -> str:
        nonlocal calls
        calls += 1
        if calls < 4:
            raise OSError("no route")
        return "connected"

    result = await retry(connect, sleep=clock.sleep, on_failure=lambda n, exc, wait: failures.append((n, wait)))
    assert result == "connected"
    assert failures == [(1, 1), (2, 2), (3, 4)]
    assert clock.now == 7


async def test_errors_not_listed_propagate_at_once() -> None:
    clock = FakeClock()

    async def broken() -> None:
        raise KeyError("bug")

    with pytest.raises(KeyError):
        await retry(broken, retry_on=(OSError,), sleep=clock.sleep)
    assert clock.sleeps == []
