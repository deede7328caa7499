"""Fixtures that run the real discord.py client against the local fake Discord server, and the ones the bot's
tests share: a guild with its DM and a player, the bot itself, a campaign "Ashes", a private review channel."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import discord
import pytest
import yarl

from bot.app import LorekeeperBot
from memory.store import CampaignMemory, Memory
from tests.e2e.fake_discord import FakeChannel, FakeDiscord, FakeGuild, FakeMember
from tests.e2e.helpers import active, make_bot

READY_TIMEOUT = 10.0


class _CollectErrors(logging.Handler):
    def __init__(self, fake: FakeDiscord) -> None:
        super().__init__(logging.ERROR)
        self.fake = fake

    def emit(self, record: logging.LogRecord) -> None:
        self.fake.client_errors.append(self.format(record))


@pytest.fixture
async def fake_discord() -> AsyncIterator[FakeDiscord]:
    """A started fake server; discord.py's REST base and gateway URL point at it until the test ends.

    Errors discord.py logs (an exception in a view callback, say) land in ``fake.client_errors`` and in the
    message of a test that times out waiting for an answer.
    """
    fake = FakeDiscord()
    await fake.start()
    saved = discord.http.Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
    discord.http.Route.BASE = fake.api_base
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(fake.gateway_url)
    handler = _CollectErrors(fake)
    logging.getLogger("discord").addHandler(handler)
    try:
        yield fake
    finally:
        logging.getLogger("discord").removeHandler(handler)
        discord.http.Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = saved
        await fake.close()


class BotRunner:
    """Starts clients against the fake (login, connect, wait for READY) and stops them again.

    Build clients with ``guild_ready_timeout=0.05``: discord.py otherwise waits 2 s after the last
    GUILD_CREATE before it reports ready.
    """

    def __init__(self, fake: FakeDiscord) -> None:
        self.fake = fake
        self._tasks: dict[discord.Client, asyncio.Task[None]] = {}

    async def start(self, client: discord.Client, *, token: str | None = None) -> discord.Client:
        try:
            await client.login(token or self.fake.token)
        except BaseException:
            await client.close()
            raise
        task = asyncio.create_task(client.connect(reconnect=False))
        self._tasks[client] = task
        ready = asyncio.create_task(client.wait_until_ready())
        done, _ = await asyncio.wait({task, ready}, timeout=READY_TIMEOUT, return_when=asyncio.FIRST_COMPLETED)
        if ready not in done:
            ready.cancel()
            await self.stop(client)
            if task in done and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
            raise TimeoutError(f"client not ready after {READY_TIMEOUT}s:\n{self.fake.format_transcript()}")
        return client

    async def stop(self, client: discord.Client) -> None:
        """Close the client as a shutdown would; the fake keeps every message, so a new client can take over."""
        await client.close()
        task = self._tasks.pop(client, None)
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)

    async def stop_all(self) -> None:
        for client in list(self._tasks):
            await self.stop(client)


@pytest.fixture
async def bot_runner(fake_discord: FakeDiscord) -> AsyncIterator[BotRunner]:
    runner = BotRunner(fake_discord)
    try:
        yield runner
    finally:
        await runner.stop_all()


@pytest.fixture
async def pool(pool: asyncpg.Pool, bot_runner: BotRunner) -> AsyncIterator[asyncpg.Pool]:
    """The root fixture's pool; the bots stop before it closes, as ``lorekeeper run`` stops them: a review post
    waiting out its settle would find it closed (whichever fixture started them first)."""
    yield pool
    await bot_runner.stop_all()


@pytest.fixture
def guild(fake_discord: FakeDiscord) -> FakeGuild:
    return fake_discord.add_guild("Ashes of Ironhold")


@pytest.fixture
def dm(guild: FakeGuild) -> FakeMember:
    return guild.add_member("dm", roles=[guild.add_role("Game Master", discord.Permissions(manage_guild=True))])


@pytest.fixture
def player(guild: FakeGuild) -> FakeMember:
    return guild.add_member("player")


@pytest.fixture
async def bot(
    fake_discord: FakeDiscord, bot_runner: BotRunner, memory: Memory, guild: FakeGuild, tmp_path: Path
) -> LorekeeperBot:
    started = await bot_runner.start(make_bot(fake_discord, memory, tmp_path))
    assert isinstance(started, LorekeeperBot)
    await started.tree.sync()  # globally, so every guild of a test sees the commands
    return started


@pytest.fixture
async def ashes(
    bot: LorekeeperBot, fake_discord: FakeDiscord, memory: Memory, guild: FakeGuild, dm: FakeMember
) -> CampaignMemory:
    """The guild's campaign "Ashes", created by the DM's command."""
    await fake_discord.invoke("campaign create", {"name": "Ashes", "system": "D&D 5e"}, user_id=dm)
    return await active(memory, guild)


@pytest.fixture
def review_channel(guild: FakeGuild) -> FakeChannel:
    return guild.add_channel("dm-review", private=True)
