"""`lorekeeper recall`: what was said about something — the lines that answer it (BM25 over lines, vectors, the
graph), whole, with a line of context and their sources, after the current facts of the entities the query names;
`lorekeeper recap`: a session's summary."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable

import click

import memory.recall as recall_core
from bot.cli import cli
from bot.cli.common import (
    CliError,
    async_command,
    campaign_memory,
    campaign_option,
    emit_json,
    json_option,
    open_memory,
    player_option,
    player_text_only,
    settings_from,
    to_jsonable,
    wrapped,
)
from memory.context import reader_mask
from memory.errors import quoted
from memory.graph import SecretMask
from memory.jobs import make_job_context
from memory.models import Session
from memory.recap import recap_for_players, session_titled
from memory.replies import no_lines_yet


@cli.command()
@click.argument("query", required=False)
@click.option("--limit", "-k", default=5, type=click.IntRange(min=1), show_default=True, help="Passages to show.")
@click.option(
    "--mode",
    type=click.Choice(["both", "vector", "fulltext"]),
    default="both",
    show_default=True,
    help="How lines are found: both by their words and by meaning; fulltext by the words only (no embedding model "
    "to load: quicker); vector by meaning only.",
)
@click.option(
    "--as",
    "asker",
    metavar="SPEAKER",
    help="Who asks, as the session's lines name them: a question in the first person prefers their lines.",
)
@player_option
@campaign_option
@json_option
@click.pass_context
@async_command
async def recall(
    ctx: click.Context,
    query: str | None,
    limit: int,
    mode: recall_core.Mode,
    asker: str | None,
    as_player: bool,
    campaign: str | None,
    as_json: bool,
) -> None:
    """Recall QUERY: what the campaign's graph knows of the entities it names, then the passages said in play
    that match it best, each with where it was said, its score and its line references. "What happened last
    session?" ("in session N", "recap two sessions ago") is answered by that session's recap.

    Without QUERY, read one query per stdin line and print one JSON array of passages per line ([] for a blank
    line)."""
    if query is not None and not query.strip():  # `recall ""`: the nearest passages to nothing, any at all
        raise click.UsageError("QUERY is empty: give words to look for (or none, to read queries from stdin)")
    if as_player and query is None:  # queries from stdin are answered in JSON, the DM's
        raise click.UsageError("--as-player shows the text a player reads: give it a QUERY, not queries on stdin")
    player_text_only(as_player, as_json)
    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        mem, name = await campaign_memory(memory, settings, campaign, as_player=as_player)
        if asker is not None:
            await mem.log.check_speaker(asker)
        embedder = make_job_context(memory, settings).embedder  # loaded once for every query
        if query is None:
            for line in sys.stdin:
                hits = []  # a blank line is answered too: a script zips its questions with the answers line by line
                if line.strip():
                    hits = await recall_core.recall(mem, embedder, line.strip(), limit=limit, mode=mode, asker=asker)
                sys.stdout.write(json.dumps(to_jsonable(hits), ensure_ascii=False) + "\n")
                sys.stdout.flush()
            return
        dm = not as_player  # the DM's: secrets shown, marked; a player's as /recall answers them
        hits = await recall_core.recall(mem, embedder, query, limit=limit, mode=mode, asker=asker, dm=dm)
        named = await recall_core.named_entities(mem, query, dm=dm)
        recap = await recall_core.recap_asked(mem, query)  # "what happened last session?": its recap first
        mask = await reader_mask(mem, dm)
        players_mask = None if dm else await mem.graph.player_mask()
        empty = not hits and not await mem.log.has_lines()
    if as_json:
        emit_json({"recap": recap, "entities": named, "hits": hits})
    else:
        if recap is not None:
            print_recap(recap, players_mask)
            click.echo()
        print_named(named)
        if hits or recap is None:  # under a recap, "nothing found" would say it found nothing
            print_hits(hits, mask)
        if empty:  # "nothing found" alone would say the words were wrong
            click.echo(no_lines_yet(name))


@cli.command()
@click.argument("session", required=False)
@player_option
@campaign_option
@json_option
@click.pass_context
@async_command
async def recap(ctx: click.Context, session: str | None, as_player: bool, campaign: str | None, as_json: bool) -> None:
    """The summary of SESSION (its title; default: the latest), as /recap shows it to the DM."""
    player_text_only(as_player, as_json)
    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        mem, name = await campaign_memory(memory, settings, campaign, as_player=as_player)
        sessions = await mem.log.sessions()
        if not sessions:
            raise CliError(f"no sessions in {name} yet: `lorekeeper ingest FILE` imports one")
        players_mask = await mem.graph.player_mask() if as_player else None
        shown: Callable[[str], str] = players_mask or str
        if session and players_mask:  # as /recap: by the title a player reads
            chosen = session_titled(sessions, session, shown)
        else:
            chosen = await mem.log.session_by_title(session) if session else sessions[-1]
        if chosen is None:  # only a title asked for can be missing
            raise CliError(
                f"no session titled {quoted(session or '')}; "
                f"recent ones: {', '.join(quoted(shown(s.title)) for s in sessions[-5:])}"
            )
    if as_json:
        emit_json(chosen)
        return
    print_recap(chosen, players_mask)


def print_recap(chosen: Session, players_mask: SecretMask | None) -> None:
    """A session's summary as /recap shows it (``players_mask``: to a player), or why it has none yet."""
    shown: Callable[[str], str] = players_mask or str
    click.echo(f"Recap: {shown(chosen.title)} (started {chosen.started('%Y-%m-%d %H:%M')})")
    if chosen.summary:
        click.echo(recap_for_players(chosen.summary, players_mask) if players_mask else chosen.summary)
    elif chosen.ended_at is None:
        click.echo("still running: its recap is written when it ends")
    else:
        click.echo("no summary yet: `lorekeeper worker --drain` writes it if the bot is not running")


def print_named(named: list[recall_core.NamedEntity]) -> None:
    """What the graph knows now of each entity named, before the passages that say what was true then."""
    for known in named:
        click.echo(f"{known.heading()} ({known.type.value})")
        for line in [*known.description.splitlines(), *known.fact_lines()]:
            click.echo(f"     {line}")


def print_hits(hits: list[recall_core.RecallHit], mask: Callable[[str], str] = str) -> None:
    """``mask`` hides what the reader may not see (secret names, for a player), as /recall's passages do."""
    if not hits:
        click.echo("nothing found")
    for n, h in enumerate(hits, 1):
        refs = ", ".join(h.refs[:3]) + (" …" if len(h.refs) > 3 else "")
        click.echo(f"{n}. [{mask(h.where())}] score {h.score:.4f} ({'+'.join(h.matched)})  refs: {refs}")
        for line in h.lines:  # the lines that answer (›), whole: the answer may be their last words; context previewed
            for i, part in enumerate(wrapped(f"{line.who(mask)}: {line.shown(mask)}", indent=5)):
                click.echo(f"   › {part}" if line.matched and i == 0 else f"     {part}")
