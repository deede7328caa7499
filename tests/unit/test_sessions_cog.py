"""Sessions.cog_unload: every live session is stopped and its guard closed, even when one of them fails."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from cogs.sessions import Sessions
from memory.voice.guard import SpoolPending


class StubGuard:
    def __init__(self, session_id: int) -> None:
        self.session = SimpleNamespace(id=session_id)
        self.closed = False

    async def close(self) -> None:
        self.closed = True


class StubSession:
    def __init__(self, session_id: int, error: Exception | None = None) -> None:
        self.guard = StubGuard(session_id)
        self.error = error
        self.stopped = False

    async def stop(self) -> None:
        self.stopped = True
        if self.error is not None:
            raise self.error


async def test_unload_stops_every_session_even_if_one_raises(caplog: pytest.LogCaptureFixture) -> None:
    cog = Sessions(SimpleNamespace())  # type: ignore[arg-type]
    sessions = [
        StubSession(1, RuntimeError("voice broke")),
        StubSession(2, SpoolPending(1, Path("spool/1-2.jsonl"))),
        StubSession(3),
    ]
    cog.live = {guild: s for guild, s in enumerate(sessions, start=10)}
    await cog.cog_unload()
    assert all(s.stopped and s.guard.closed for s in sessions)
    assert cog.live == {}
    assert "stopping the session of guild 10 failed" in caplog.text and "safe in spool/1-2.jsonl" in caplog.text
