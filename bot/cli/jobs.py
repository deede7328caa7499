"""`lorekeeper jobs …`: the background jobs held after their last try, and running them again."""

from __future__ import annotations

from typing import NamedTuple

import click

from bot.cli import cli
from bot.cli.common import (
    CliError,
    async_command,
    campaign_memory,
    campaign_option,
    emit_json,
    json_option,
    open_memory,
    settings_from,
    table,
)
from memory import jobs as queue
from memory.store import Memory

all_option = click.option(
    "--all",
    "all_campaigns",
    is_flag=True,
    help="Every campaign's jobs of this guild (LOREKEEPER_GUILD_ID), not one campaign's.",
)


@cli.group()
def jobs() -> None:
    """Background jobs held after failing (the worker log says why)."""


class Scope(NamedTuple):
    campaign_id: int | None
    guild_id: int | None
    name: str


async def _scope(ctx: click.Context, memory: Memory, campaign: str | None, all_campaigns: bool) -> Scope:
    """One campaign, or with --all every campaign of the CLI's guild: another guild's jobs name its campaigns,
    sessions and errors, which this guild's DM must neither see nor re-run."""
    settings = settings_from(ctx)
    if all_campaigns:
        if campaign:
            raise CliError("give --campaign NAME or --all, not both")
        return Scope(None, settings.guild_id, f"all campaigns of guild {settings.guild_id}")
    mem, name = await campaign_memory(memory, settings, campaign)
    return Scope(mem.campaign_id, None, name)


@jobs.command("list")
@campaign_option
@all_option
@json_option
@click.pass_context
@async_command
async def list_(ctx: click.Context, campaign: str | None, all_campaigns: bool, as_json: bool) -> None:
    """Held jobs, oldest first: what they were doing and their last error."""
    async with open_memory(settings_from(ctx)) as memory:
        scope = await _scope(ctx, memory, campaign, all_campaigns)
        held = await queue.held_jobs(memory.pool, scope.campaign_id, guild_id=scope.guild_id)
    name = scope.name
    if as_json:
        emit_json(held)
        return
    if not held:
        click.echo(f"no held jobs ({name})")
        return
    rows = [
        [
            j.id,
            j.kind,
            j.campaign,
            j.session or "-",
            f"{j.failed_at:%Y-%m-%d %H:%M}",
            "its data" if j.on_its_data else "an outage",
            j.error[:100],
        ]
        for j in held
    ]
    table(rows, ["id", "kind", "campaign", "session", "held since", "failed on", "last error"])
    click.echo("`lorekeeper jobs retry` runs them again (those failed on an outage also run at the next worker start)")


@jobs.command()
@campaign_option
@all_option
@click.pass_context
@async_command
async def retry(ctx: click.Context, campaign: str | None, all_campaigns: bool) -> None:
    """Queue held jobs again, those failed on their data too (after a fix); a worker or the bot runs them."""
    async with open_memory(settings_from(ctx)) as memory:
        scope = await _scope(ctx, memory, campaign, all_campaigns)
        requeued = await queue.requeue_failed(memory.pool, scope.campaign_id, bad_data=True, guild_id=scope.guild_id)
    name = scope.name
    click.echo(
        f"{requeued} held jobs queued again ({name}): `lorekeeper worker --drain` runs them if the bot is not running"
    )
