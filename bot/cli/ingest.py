"""`lorekeeper ingest`: import a transcript (.jsonl, .txt, CRD3 .json) into a campaign's memory."""

from __future__ import annotations

from pathlib import Path

import click

from bot.cli import cli
from bot.cli.common import CliError, async_command, campaign_memory, campaign_option, open_memory, settings_from, table
from memory import jobs
from memory.ingest import ingest_file
from memory.store import CampaignMemory
from memory.transcripts import TranscriptError


@cli.command()
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@campaign_option
@click.option("--session", "session_title", metavar="TITLE", help="Session title (default: the file name).")
@click.option("--wait", is_flag=True, help="Run the background jobs here until done, then print what was stored.")
@click.pass_context
@async_command
async def ingest(ctx: click.Context, path: Path, campaign: str | None, session_title: str | None, wait: bool) -> None:
    """Import a transcript; bad lines are skipped and named, importing the same file again changes nothing.

    \b
    .jsonl  {"speaker", "text", "start", "end", "words": [{"word", "confidence"}], "ref", "session"}
    .txt    Speaker: text
    .json   CRD3 episode {"TURNS": [{"NAMES": [...], "UTTERANCES": [...], "NUMBER": n}]}"""
    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        mem, name = await campaign_memory(memory, settings, campaign)
        try:
            report = await ingest_file(
                mem,
                path,
                session_title=session_title,
                stage2=settings.llm_enabled,
                on_skip=lambda message: click.echo(f"warning: {message}", err=True),
            )
        except TranscriptError as exc:
            raise CliError(str(exc)) from None
        click.echo(
            f"{path.name} → {name}: {report.lines} utterances read, {report.written} new, "
            f"{report.corrections} names corrected, {len(report.skipped)} lines skipped "
            f"(session{'s' if len(report.sessions) != 1 else ''}: {', '.join(report.sessions) or '-'})"
        )
        if wait:
            await jobs.run_workers(memory.pool, settings, drain=True)
            await print_counts(mem, memory.pool)
        else:
            pending = await jobs.pending_jobs(memory.pool, mem.campaign_id)
            click.echo(f"{pending} background jobs queued: run `lorekeeper worker` (or ingest with --wait)")


async def print_counts(mem: CampaignMemory, pool: object) -> None:
    row = await mem.db.fetchrow(
        """
        SELECT (SELECT count(*) FROM session_entries WHERE campaign_id = $1) AS entries,
               (SELECT count(*) FROM chunks WHERE campaign_id = $1) AS chunks,
               (SELECT count(*) FROM entities WHERE campaign_id = $1 AND status = 'accepted') AS entities,
               (SELECT count(*) FROM entities WHERE campaign_id = $1 AND status = 'pending') AS pending_entities,
               (SELECT count(*) FROM relationships WHERE campaign_id = $1 AND status = 'pending') AS pending_facts
        """,
        mem.campaign_id,
    )
    names = list(row.keys())
    table([[row[k] for k in names]], [k.replace("_", " ") for k in names])
    failed = await jobs.failed_jobs(mem.db)
    if failed:
        click.echo(f"warning: {failed} background jobs failed (see the worker log)", err=True)
