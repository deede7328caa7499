"""`lorekeeper worker`: run the background jobs (chunk+embed, extract, correct, summarise) in this process."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Awaitable
from datetime import timedelta

import asyncpg
import click

from bot.cli import cli
from bot.cli.common import async_command, database_of, freeze_start_up, log, log_progress, open_memory, settings_from
from bot.cli.progress import Stage, StageProgress, clock, watch
from memory import jobs
from memory.text import counted


@cli.command()
@click.option("--drain", is_flag=True, help="Exit once the queue is empty instead of waiting for more.")
@click.option(
    "--heartbeat-timeout",
    default=30,
    type=click.IntRange(1, 86_400),
    show_default=True,
    metavar="SECONDS",
    help="A job whose worker has been silent this long (it crashed) is picked up again.",
)
@click.pass_context
@async_command
async def worker(ctx: click.Context, drain: bool, heartbeat_timeout: int) -> None:
    """Process background jobs until interrupted; run several for more throughput."""
    settings = settings_from(ctx)
    log_progress()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        # Finish the jobs in hand and leave: the embedded server is then stopped cleanly too.
        loop.add_signal_handler(sig, stop.set)
    async with open_memory(settings, keep_running=not drain) as memory:
        freeze_start_up(tables=settings.llm_enabled)  # stage 2 needs the campaign's correction index
        click.echo("worker started", err=True)
        started = time.monotonic()
        log.info("database: %s; the jobs of every campaign", database_of(settings))
        work = jobs.run_workers(
            memory.pool,
            settings,
            stop,
            drain=drain,
            heartbeat_timeout=timedelta(seconds=heartbeat_timeout),
            reindex=True,  # the jobs of every campaign: sessions indexed under older name rules too
        )
        ctx_ = await (drained_showing(memory.pool, work) if drain else work)
    click.echo(stopped_line(ctx_, time.monotonic() - started), err=True)


def stopped_line(ctx: jobs.JobContext, seconds: float) -> str:
    """What a worker did, said as it stops: the last line a drain prints, under its progress bar."""
    held = " (`lorekeeper jobs list` says why)" if ctx.jobs_failed else ""
    return (
        f"worker stopped: {counted(ctx.jobs_done + ctx.jobs_failed, 'job')} run, {ctx.jobs_failed} failed{held}, "
        f"in {clock(seconds)}; {counted(ctx.chunks_written, 'chunk')} written"
    )


async def drained_showing(
    pool: asyncpg.Pool,
    work: Awaitable[jobs.JobContext],
    shown: StageProgress | None = None,
    *,
    interval: float = 1.0,
) -> jobs.JobContext:
    """Await a drain, showing how many of the jobs seen queued are done (a queue of hours of audio takes long);
    ``shown``: where (stderr by default), looked at every ``interval`` seconds."""
    done, before = 0, None

    async def poll() -> list[Stage]:
        nonlocal done, before
        left = await jobs.pending_jobs(pool)
        # jobs enqueue others (a recap after its session's lines): what went away is done, the total may grow
        done += max((before if before is not None else left) - left, 0)
        before = left
        return [Stage("jobs done", done, done + left, "jobs")]

    shown = shown or StageProgress()
    watcher = asyncio.create_task(watch(poll, shown, interval=interval))
    ended = False
    try:
        result = await work
        ended = True
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
        # the bar ends at what was done, not where its last look left it ("2 of 3" above "worker stopped")
        shown.close(await poll() if ended else None)
    return result
