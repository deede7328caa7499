"""Spools a crash (or a stop during a database outage) left behind are stored when the bot starts."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.app import LorekeeperBot
from memory.recorder import SessionRecorder, Utterance
from memory.store import CampaignMemory, Memory
from memory.voice.guard import Spool, end_marker_path, spool_path
from tests.e2e.conftest import BotRunner
from tests.e2e.fake_discord import FakeDiscord, FakeGuild
from tests.e2e.helpers import make_bot

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


async def rows(mem: CampaignMemory, session_id: int) -> list[int]:
    found = await mem.db.fetch(
        "SELECT seq FROM session_entries WHERE campaign_id = $1 AND session_id = $2 ORDER BY seq",
        mem.campaign_id,
        session_id,
    )
    return [r["seq"] for r in found]


async def test_leftover_spools_are_replayed_at_start_and_asked_ends_done(
    fake_discord: FakeDiscord, bot_runner: BotRunner, memory: Memory, guild: FakeGuild, tmp_path: Path
) -> None:
    campaign = await memory.campaigns(guild.id).create("Ashes")
    mem = memory.campaign(campaign.id)
    stopped = (await SessionRecorder.start(mem, "Stopped in the outage")).session
    crashed = (await SessionRecorder.start(mem, "Crashed mid-session")).session
    for session in (stopped, crashed):
        lines = [Utterance(speaker="Ana", text=f"line {i}", seq=i) for i in (1, 2, 3)]
        Spool(spool_path(tmp_path, mem.campaign_id, session.id)).append(lines)
    end_marker_path(tmp_path, mem.campaign_id, stopped.id).touch()  # /session stop raised SpoolPending

    bot = await bot_runner.start(make_bot(fake_discord, memory, tmp_path))
    assert isinstance(bot, LorekeeperBot)
    recovery = bot.get_cog("Sessions")._recovery
    await asyncio.wait_for(asyncio.shield(recovery), 30)

    assert await rows(mem, stopped.id) == [1, 2, 3] and await rows(mem, crashed.id) == [1, 2, 3]
    assert list((tmp_path / "spool").iterdir()) == []
    assert (await mem.log.session(stopped.id)).ended_at is not None
    assert (await mem.log.session(crashed.id)).ended_at is None  # never asked to end: /session start resumes it

    await bot_runner.stop(bot)
    assert recovery.done() and not recovery.cancelled()
