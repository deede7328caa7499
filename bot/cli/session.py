"""`lorekeeper session …`: the campaign's sessions, recorded or imported: list them, delete a mistaken one, see
what name correction changed in one."""

from __future__ import annotations

import re

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
from memory.name_report import NameChange, names_changed
from memory.replies import deleted_session_said
from memory.text import counted


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
    click.echo(deleted_session_said(deleted))


def _sh(word: str) -> str:
    """``word`` as one shell word, in double quotes when it needs any ("manta ray")."""
    if re.fullmatch(r"[\w.,:@%+/=-]+", word):
        return word
    return '"' + re.sub(r'([\\"$`])', r"\\\1", word) + '"'


def undo_command(change: NameChange) -> str:
    """What makes stage 1 and 2 leave ``change.heard`` alone from now on, when it is not the name: a phrase the
    DM taught is dropped from the entity's heard-as phrases, anything else is said never to be the name."""
    if change.removed:
        return "(its entity was removed)"
    if change.respelled:
        return "(a spelling of its name or an alias)"
    name = _sh(change.name)
    if "heard-as" in change.how:
        kept = [h for h in change.heard_as if h.casefold() != change.heard]
        phrases = " ".join(f"--heard-as {_sh(h)}" for h in kept) or "--heard-as -"
        return f"lorekeeper entity edit {name} {phrases}"
    phrases = " ".join(f"--not-heard-as {_sh(p)}" for p in [*change.not_heard_as, change.heard])  # replaces them
    return f"lorekeeper entity edit {name} {phrases}"


@session.command("names")
@click.argument("title", required=False)
@campaign_option
@json_option
@click.pass_context
@async_command
async def names(ctx: click.Context, title: str | None, campaign: str | None, as_json: bool) -> None:
    """What name correction changed in session TITLE (default: the latest): each phrase heard, the name it became
    and how often, most frequent first, with the command that stops a wrong one."""
    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        mem, name = await campaign_memory(memory, settings, campaign)
        report = await names_changed(mem, title)
    if as_json:
        emit_json(
            {
                "session": report.session.title,
                "lines": report.lines,
                "changes": [{**c.model_dump(), "undo": undo_command(c)} for c in report.changes],
            }
        )
        return
    if not report.changes:
        click.echo(f"no names corrected in session {report.session.title!r} of {name}")
        return
    click.echo(
        f"session {report.session.title!r} of {name}: {counted(len(report.changes), 'phrase')} corrected in "
        f"{counted(report.lines, 'line')}"
    )
    table(
        [[c.heard, "→", c.name, f"×{c.count:,}", ", ".join(c.how), undo_command(c)] for c in report.changes],
        ["heard", "", "name", "times", "how", "if it is wrong"],
    )
