"""The database goes away under a running bot: a command tells the user so, not that something went wrong.

The bot here runs on its own embedded server under /tmp (the shared test server must never be stopped)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.app import LorekeeperBot
from memory.db import EmbeddedPostgres, create_pool, migrate
from memory.store import Memory
from tests.conftest import TEST_EMBEDDING
from tests.e2e.conftest import BotRunner
from tests.e2e.fake_discord import FakeDiscord, FakeGuild, FakeMember
from tests.e2e.helpers import make_bot

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


@pytest.fixture
async def own_memory() -> AsyncIterator[tuple[EmbeddedPostgres, Memory]]:
    root = Path(tempfile.mkdtemp(prefix="lorekeeper-outage-", dir="/tmp"))
    server = EmbeddedPostgres(root)
    pool = await create_pool(server.start(), max_size=3)
    await migrate(pool, TEST_EMBEDDING)
    try:
        yield server, Memory(pool)
    finally:
        await pool.close()
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


async def test_a_command_while_the_database_is_away_says_so_and_to_try_again(
    fake_discord: FakeDiscord,
    bot_runner: BotRunner,
    own_memory: tuple[EmbeddedPostgres, Memory],
    guild: FakeGuild,
    dm: FakeMember,
    tmp_path: Path,
) -> None:
    server, memory = own_memory
    bot = await bot_runner.start(make_bot(fake_discord, memory, tmp_path))
    assert isinstance(bot, LorekeeperBot)
    await bot.tree.sync()
    created = await fake_discord.invoke("campaign create", {"name": "Sunken Crown"}, user_id=dm)
    assert created.texts()[0].startswith("Created"), created.texts()
    server.stop()
    try:
        info = await fake_discord.invoke("campaign info", user_id=dm)
        assert info.ephemeral
        (said,) = info.texts()
        assert said == (
            "The database stopped or cannot be reached: try again in a minute. A session being recorded goes on: "
            "what is said is kept."
        )
    finally:
        await bot_runner.stop(bot)
        server.start()
