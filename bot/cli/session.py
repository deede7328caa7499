"""`lorekeeper session …`: the campaign's sessions, recorded or imported: list them, delete a mistaken one."""

from __future__ import annotations

import click

from bot.cli import cli
from bot.cli.common import (
    async_command,
    campaign_memory,
    campaign_option,
    emit_json,
    json_option,
    open_memory,
    settings_from,
    table,
)
from memory.errors import quoted
from memory.models import counted


@cli.group()
def session() -> None:
    """Sessions: what was recorded or imported."""


@session.command("list")
@campaign_option
@json_option
@click.pass_context
@async_command
async def list_(ctx: click.Context, campaign: str | None, as_json: bool) -> None:
    """The sessions as played, oldest first: when, how many lines, whether ended and recapped."""
    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        mem, name = await campaign_memory(memory, settings, campaign)
        sessions = await mem.log.listed()
    if as_json:
        emit_json(sessions)
        return
    if not sessions:
        click.echo(f"no sessions in {name} yet: `lorekeeper ingest FILE` imports one")
        return
    table(
        [
            [
                s.title,
                f"{s.started_at.astimezone():%Y-%m-%d %H:%M %Z}",  # this machine's time, and which zone that is
                f"{s.lines:,}",
                "live" if s.ended_at is None else "ended",
                "yes" if s.summary else "" if s.ended_at is None else "not yet",
            ]
            for s in sessions
        ],
        ["title", "started", "lines", "status", "recap"],
    )


@session.command("delete")
@click.argument("title")
@campaign_option
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option(
    "--even-if-live", is_flag=True, help="Delete a session that never ended (its recording or import was cut off)."
)
@click.pass_context
@async_command
async def delete(ctx: click.Context, title: str, campaign: str | None, yes: bool, even_if_live: bool) -> None:
    """Delete a session (a mistaken import): its lines, passages, recap and the review items only it proposed.

    Facts and entities you accepted or rejected stay."""
    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        mem, name = await campaign_memory(memory, settings, campaign)
        target = await mem.log.deletable(title, even_if_live=even_if_live)
        if not yes:
            click.confirm(
                f"delete session {quoted(target.title)} of {name} with its {counted(target.lines, 'line')}, recap "
                "and the review items only it proposed? This cannot be undone",
                abort=True,
                err=True,
            )
        deleted = await mem.delete_session(target.title, even_if_live=even_if_live)
    click.echo(deleted.said())
