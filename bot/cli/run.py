"""`lorekeeper run` (the bot) and `lorekeeper sync` (register the slash commands, then leave)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

import aiohttp
import click
import discord

from bot.app import LorekeeperBot, create_bot
from bot.cli import cli
from bot.cli.common import (
    CliError,
    async_command,
    database_of,
    freeze_start_up,
    log_progress,
    open_memory,
    settings_from,
)
from bot.settings import Settings
from memory.jobs import make_job_context, run_workers

log = logging.getLogger("lorekeeper")


class TokenError(CliError):
    """The token is missing or Discord refused it: a configuration problem, so exit 2 like a usage error."""

    exit_code = 2


def token_of(settings: Settings) -> str:
    token = settings.discord_token.get_secret_value().strip() if settings.discord_token else ""
    if not token:
        raise TokenError("DISCORD_TOKEN is not set: put the bot token from the Discord developer portal in it")
    return token


async def login(bot: LorekeeperBot, token: str) -> None:
    try:
        await bot.login(token)
    except discord.LoginFailure:
        raise TokenError("Discord rejected DISCORD_TOKEN (401): check or regenerate the bot token") from None
    except (aiohttp.ClientError, OSError) as exc:  # no network, DNS, a proxy in the way
        raise CliError(f"cannot reach Discord ({type(exc).__name__}: {exc}); check the network") from None


async def sync_commands(bot: LorekeeperBot, guild_id: int | None) -> list[str]:
    """Sync the tree (to one guild when given: instant; globally: may take an hour to show everywhere)."""
    if guild_id:
        guild = discord.Object(guild_id)
        bot.tree.copy_global_to(guild=guild)
        synced = await bot.tree.sync(guild=guild)
    else:
        synced = await bot.tree.sync()
    return [c.name for c in synced]


async def serve(settings: Settings) -> None:
    token = token_of(settings)  # before the database starts: a missing token should fail at once
    async with open_memory(settings, keep_running=True) as memory:
        bot = create_bot(settings, memory)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            # a normal exit on SIGTERM too, so the pool closes and the embedded PostgreSQL is stopped
            loop.add_signal_handler(signum, stop.set)
        async with bot:
            await login(bot, token)  # before the embedding model loads: a bad token fails fast
            log.info("logged in as %s; database: %s; the campaigns of every server", bot.user, database_of(settings))
            # one job context for the workers and /recall, so the embedding model is loaded once
            jobs = make_job_context(memory, settings)
            bot.embedder = jobs.embedder
            freeze_start_up(tables=True)  # cogs are loaded (login ran setup_hook): the bot records voice
            tasks = {
                asyncio.create_task(bot.connect(), name="gateway"),
                asyncio.create_task(run_workers(memory.pool, settings, stop, ctx=jobs), name="workers"),
            }
            stopper = asyncio.create_task(stop.wait(), name="signal")
            done, _ = await asyncio.wait(tasks | {stopper}, return_when=asyncio.FIRST_COMPLETED)
            log.info("shutting down")
            stop.set()
            await bot.close()
            # the workers see ``stop`` and finish the job in hand; the gateway task ends with the close
            results = await asyncio.gather(*tasks, return_exceptions=True)
            stopper.cancel()
            for task, result in zip(tasks, results, strict=True):
                if isinstance(result, discord.LoginFailure):
                    raise TokenError("Discord rejected DISCORD_TOKEN: check or regenerate the bot token")
                if isinstance(result, Exception) and task in done:
                    raise result
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(Exception):
                loop.remove_signal_handler(signum)


@cli.command("run")
@click.pass_context
@async_command
async def run(ctx: click.Context) -> None:
    """Start the bot (token from DISCORD_TOKEN); Ctrl-C or SIGTERM stops it cleanly."""
    settings = settings_from(ctx)
    log_progress()
    await serve(settings)


@cli.command("sync")
@click.option("--guild", "guild_id", type=int, help="Sync to this guild only (instant); default: globally.")
@click.pass_context
@async_command
async def sync(ctx: click.Context, guild_id: int | None) -> None:
    """Register the slash commands with Discord without starting the gateway session."""
    settings = settings_from(ctx)
    token = token_of(settings)
    async with open_memory(settings, run_migrations=False) as memory:
        bot = create_bot(settings, memory, sync_on_start=False)
        async with bot:
            await login(bot, token)
            names = await sync_commands(bot, guild_id)
    where = f"guild {guild_id}" if guild_id else "globally (may take up to an hour to appear)"
    click.echo(f"synced {len(names)} commands {where}: {', '.join(sorted(names))}")
