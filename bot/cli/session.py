"""`lorekeeper session …`: the campaign's sessions, recorded or imported: list them, delete a mistaken one, see
what name correction changed in one, hear again the lines speech-to-text failed on."""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING

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
from memory.errors import NotFoundError, quoted
from memory.name_report import NameChange, names_changed
from memory.replies import deleted_session_said
from memory.text import counted

if TYPE_CHECKING:
    from memory.recorder import Utterance


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
                s.started(),  # this machine's time, and which zone that is; a day alone as given
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
    # that phrase alone added or taken away: the phrases it has stay, so hints followed one after another each
    # change only their own (a list replacing all, as of this report, undid the hint followed before it)
    name = _sh(change.name)
    if "heard-as" in change.how:
        return f"lorekeeper entity edit {name} --heard-as {_sh('-' + change.heard)}"
    return f"lorekeeper entity edit {name} --not-heard-as {_sh('+' + change.heard)}"


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


@session.command("unheard")
@click.argument("title", required=False)
@campaign_option
@click.option(
    "--model",
    metavar="MODEL",
    help="Whisper model (tiny.en, base, auto, a model directory); default: LOREKEEPER_STT_MODEL, else auto.",
)
@click.option("--list", "only_list", is_flag=True, help="Only say which sessions have unheard lines.")
@click.pass_context
@async_command
async def unheard(
    ctx: click.Context, title: str | None, campaign: str | None, model: str | None, only_list: bool
) -> None:
    """Hear again the lines speech-to-text failed on in play (their audio waits in the data folder's unheard/):
    each goes into its session, under its speaker's name and at its time, and its audio is deleted once stored.
    TITLE: only that session (default: every one with unheard lines)."""
    # heavy (Whisper, FFmpeg): only for this command, not for `session list`
    from memory.providers.stt import STTError, WhisperSTT
    from memory.voice.audio_files import AudioFileError
    from memory.voice.unheard import hear_again, unheard_dir, unheard_sessions

    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        mem, name = await campaign_memory(memory, settings, campaign)
        waiting = unheard_sessions(settings.data_dir, mem.campaign_id)
        if title is not None:
            chosen = await mem.log.session_by_title(title)
            if chosen is None:
                raise CliError(f"no session titled {quoted(title)} in {name}")
            waiting = {chosen.id: waiting[chosen.id]} if chosen.id in waiting else {}
        if not waiting:
            click.echo(f"no unheard lines in {f'session {quoted(title)}' if title else name}")
            return
        found = []
        for session_id, files in waiting.items():
            try:
                found.append((await mem.log.session(session_id), files))
            except NotFoundError:  # deleted since: its audio is no line of any session now
                where = unheard_dir(settings.data_dir, mem.campaign_id, session_id)
                click.echo(f"{where}: {counted(len(files), 'unheard line')} of a deleted session, left there")
        for session_, files in found:
            click.echo(f"session {quoted(session_.title)}: {counted(len(files), 'unheard line')}")
        if only_list or not found:
            return
        stt = WhisperSTT(model or settings.stt_model)
        added = 0

        def heard(u: Utterance) -> None:
            nonlocal added
            added += 1
            click.echo(f"  {u.start_s:8.1f}s {u.speaker}: {u.text}")

        try:
            if any(s.ended_at is not None for s, _ in found):  # some session's lines can be heard now
                # loaded before any file is read, as by `ingest`: a wrong --model on silent files said nothing of it
                await asyncio.to_thread(stt.load)
                click.echo(f"speech-to-text: Whisper {stt.loaded}", err=True)
            for session_, files in found:
                if session_.ended_at is None:  # its lines are being written by the bot
                    click.echo(
                        f"session {quoted(session_.title)} is still being recorded: run this again after /session stop"
                    )
                    continue
                done = await hear_again(mem, session_, files, stt, on_line=heard)
                click.echo(
                    f"session {quoted(session_.title)}: {counted(len(done.written), 'line')} added, "
                    f"{done.corrections} name{'s' * (done.corrections != 1)} corrected"
                    + (f", {done.known} already there" if done.known else "")
                )
                for path in done.silent:
                    click.echo(f"  no speech heard in {path}: kept", err=True)
                for why in done.unreadable:
                    click.echo(f"  {why}: kept", err=True)
        except (AudioFileError, STTError) as exc:
            raise CliError(str(exc)) from None
        finally:
            stt.close()
        if added:
            click.echo("their sessions' recaps are written again by the bot or `lorekeeper worker --drain`")
