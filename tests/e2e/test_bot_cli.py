"""`lorekeeper run` / `lorekeeper sync` as a user runs them: a real subprocess, pointed at the fake Discord.

discord.py takes its REST base and gateway URL from class attributes, so a three-line wrapper sets them and
calls the real ``bot.cli.main`` — nothing else in the process is patched.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

import pytest

from tests.e2e.fake_discord import FakeDiscord

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

WRAPPER = """
import sys, discord, yarl
discord.http.Route.BASE, url = sys.argv.pop(1), sys.argv.pop(1)
discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(url)
from bot.cli import main
sys.argv[0] = "lorekeeper"
main()
"""


def env_for(dsn: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DISCORD_TOKEN", "LOREKEEPER_DISCORD_TOKEN")}
    return env | {"DATABASE_URL": dsn} | extra


async def lorekeeper(fake: FakeDiscord, env: dict[str, str], *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        WRAPPER,
        fake.api_base,
        fake.gateway_url,
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def finish(proc: asyncio.subprocess.Process, seconds: float = 60) -> tuple[int, str, str]:
    out, err = await asyncio.wait_for(proc.communicate(), seconds)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@pytest.mark.parametrize("command", ["run", "sync"])
async def test_missing_token_exits_2_with_one_line(fake_discord: FakeDiscord, fresh_dsn: str, command: str) -> None:
    code, out, err = await finish(await lorekeeper(fake_discord, env_for(fresh_dsn), command))
    assert code == 2 and out == ""
    assert err == "error: DISCORD_TOKEN is not set: put the bot token from the Discord developer portal in it\n"


async def test_rejected_token_exits_2_with_one_line(fake_discord: FakeDiscord, fresh_dsn: str) -> None:
    code, _, err = await finish(await lorekeeper(fake_discord, env_for(fresh_dsn, DISCORD_TOKEN="wrong"), "run"))
    assert code == 2
    assert err == "error: Discord rejected DISCORD_TOKEN (401): check or regenerate the bot token\n"
    assert "GET /api/v10/users/@me: 401, wrong token" in fake_discord.format_transcript()


async def test_sync_registers_commands_without_a_gateway_session(fake_discord: FakeDiscord, fresh_dsn: str) -> None:
    guild = fake_discord.add_guild("Table")
    env = env_for(fresh_dsn, DISCORD_TOKEN=fake_discord.token)
    code, out, err = await finish(await lorekeeper(fake_discord, env, "sync", "--guild", str(guild.id)))
    assert code == 0, err
    assert out == f"synced 7 commands guild {guild.id}: campaign, entity, lorekeeper, recall, recap, review, session\n"
    ((scope, sent),) = fake_discord.sync_calls
    assert scope == guild.id and len(sent) == 7
    assert not any("IDENTIFY" in line for _, line in fake_discord.transcript)


async def test_run_connects_answers_and_stops_on_sigterm(fake_discord: FakeDiscord, fresh_dsn: str) -> None:
    guild = fake_discord.add_guild("Table")
    env = env_for(fresh_dsn, DISCORD_TOKEN=fake_discord.token, LOREKEEPER_DEV_GUILD_ID=str(guild.id))
    proc = await lorekeeper(fake_discord, env, "run")
    try:
        async with asyncio.timeout(60):
            while not fake_discord.sync_calls or not any("GUILD_CREATE" in s for _, s in fake_discord.transcript):
                assert proc.returncode is None, (await proc.stderr.read()).decode()  # type: ignore[union-attr]
                await asyncio.sleep(0.1)
        record = await fake_discord.invoke("campaign list")
        assert record.texts() == ["No campaigns yet: run /campaign create first."]
    finally:
        proc.send_signal(signal.SIGTERM)
        code, _, err = await finish(proc)
    assert code == 0, err
    assert "Traceback" not in err
    assert "INFO lorekeeper: logged in as " in err and "; database: DATABASE_URL postgresql://postgres@" in err


async def test_debug_log_holds_no_interaction_token_nor_what_was_typed(
    fake_discord: FakeDiscord, fresh_dsn: str
) -> None:
    """`lorekeeper -vv run` for a bug report: discord.py's own debug lines would print every event and request,
    interaction tokens (good for 15 minutes of answering as the bot) and what the DM typed or was sent (secrets)."""
    guild = fake_discord.add_guild("Table")
    env = env_for(fresh_dsn, DISCORD_TOKEN=fake_discord.token, LOREKEEPER_DEV_GUILD_ID=str(guild.id))
    proc = await lorekeeper(fake_discord, env, "-vv", "run")
    try:
        async with asyncio.timeout(60):
            while not fake_discord.sync_calls or not any("GUILD_CREATE" in s for _, s in fake_discord.transcript):
                assert proc.returncode is None, (await proc.stderr.read()).decode()  # type: ignore[union-attr]
                await asyncio.sleep(0.1)
        record = await fake_discord.invoke("campaign create", {"name": "Vaskerrin Holt Lives"})
        assert "Vaskerrin Holt Lives" in " ".join(record.texts())
    finally:
        proc.send_signal(signal.SIGTERM)
        code, _, err = await finish(proc)
    assert code == 0, err
    assert "DEBUG " in err  # -vv did turn on debug logging
    assert record.token not in err
    assert "Vaskerrin" not in err
