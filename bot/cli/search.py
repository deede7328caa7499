"""`lorekeeper search`: full-text search over the session log (L1)."""

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
from memory import recall_rank as rank
from memory.errors import quoted
from memory.models import where_said
from memory.replies import no_lines_yet


@cli.command()
@click.argument("text")
@click.option(
    "--speaker", help="Only what this speaker said: a speaker, a character (its player), DM (each session's narrator)."
)
@click.option(
    "--session",
    "session_title",
    help="Only this session: its title, or 'last session', 'two sessions ago', 'session N'.",
)
@click.option("--limit", default=10, type=click.IntRange(min=1), show_default=True, help="Matching lines to show.")
@click.option("--full", is_flag=True, help="Each line whole, not a long one's sentences around the words found.")
@campaign_option
@json_option
@click.pass_context
@async_command
async def search(
    ctx: click.Context,
    text: str,
    speaker: str | None,
    session_title: str | None,
    limit: int,
    full: bool,
    campaign: str | None,
    as_json: bool,
) -> None:
    """Search what was said (web-search syntax: "a phrase", -word, or)."""
    if not text.strip():  # `search ""` said "no matches", as if the words were wrong: refused as `recall ""` is
        raise click.UsageError("TEXT is empty: give words to look for")
    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        mem, name = await campaign_memory(memory, settings, campaign)
        session_id = None
        if session_title:
            session = await mem.log.session_by_title(session_title)
            # else as recall names one: "last session", "session 3"
            played = [(s.id, s.title, s.ended_at is not None) for s in await mem.log.sessions()]
            session_id = session.id if session else rank.session_said(session_title, played)
            if session_id is None:
                recent = ", ".join(quoted(title) for _, title, _ in played[-5:]) or "none yet"
                raise click.BadParameter(
                    f"no session titled {quoted(session_title)} (or named as 'last session', 'session N');"
                    f" recent ones: {recent}",
                    param_hint="--session",
                )
        speakers, excluded = await mem.log.speakers_called(speaker) if speaker is not None else (None, set())
        hits = await mem.log.search(text, session_id=session_id, speakers=speakers, excluded=excluded, limit=limit)
        by_id = {s.id: s for s in await mem.log.sessions()}
        empty = not hits and not await mem.log.has_lines()
        said_at = await mem.log.said_at(text, [h.id for h in hits])
    # a long line by the sentences where it says the words, as recall shows one ("…" where it goes on)
    spans = {h.id: rank.search_span(h.text, said_at.get(h.id, [])) for h in hits}
    if as_json:  # each line whole, and the characters shown
        emit_json([{**h.model_dump(mode="json"), "passage": spans[h.id]} for h in hits])
    elif not hits:
        click.echo(no_lines_yet(name) if empty else "no matches")  # "no matches" alone says the words were wrong
    else:
        table(  # where as recall and review say it: a line of an untimed transcript is its turn, not "0s"
            [
                [
                    where_said(by_id[h.session_id].title, h.start_s, h.ref, by_id[h.session_id].started_at),
                    h.speaker,
                    h.text if full or (span := spans[h.id]) is None else rank.shown_passage(h.text, span),
                    h.ref or "",
                ]
                for h in hits
            ],
            ["where", "speaker", "text", "ref"],
            wrap={2},  # what is shown, whole
        )
