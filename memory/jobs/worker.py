"""The worker: pgqueuer's queue manager with our jobs registered, retries for outages, and the loop that waits
for a database that went away.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
from datetime import timedelta
from typing import Any

import asyncpg
from pgqueuer.adapters.drivers.asyncpg import AsyncpgPoolDriver
from pgqueuer.adapters.persistence.queries import Queries
from pgqueuer.core.executors import DatabaseRetryEntrypointExecutor, EntrypointExecutorParameters
from pgqueuer.core.qm import QueueManager
from pgqueuer.domain import errors as pgq_errors
from pgqueuer.domain import models as pgq_models
from pgqueuer.domain.types import QueueExecutionMode

from memory.db import Executor
from memory.jobs.admin import prune_job_log, requeue_failed
from memory.jobs.chunk import chunk_session, reindex_log, reindex_mentions
from memory.jobs.context import JobContext, make_job_context
from memory.jobs.extract import extract_session
from memory.jobs.heard_as import correct_heard_as, restore_heard_as
from memory.jobs.queue import (
    CHUNK,
    CORRECT2,
    EXTRACT,
    HEARD,
    MENTIONS,
    SUMMARY,
    UNHEARD,
    BadJobError,
    enqueue_stale_mentions,
    job_payload,
    queries_on,
)
from memory.jobs.stage2 import correct_stage2
from memory.jobs.summary import summarize_session
from memory.mentions import MENTION_RULES
from memory.outage import is_outage, outage_said, short_reason
from memory.providers.llm import LLMTimeout
from memory.store import Memory
from memory.text import counted
from memory.voice.backoff import Backoff

log = logging.getLogger(__name__)


def _job_args(job: pgq_models.Job) -> tuple[int, int]:
    data = json.loads(job.payload or b"{}")
    return int(data["campaign_id"]), int(data["session_id"])


def _restoration_args(job: pgq_models.Job) -> dict[str, Any]:
    """The entity and phrases of a :data:`UNHEARD` job."""
    data = json.loads(job.payload or b"{}")
    phrases = data["phrases"]
    if not isinstance(phrases, list) or not all(isinstance(p, str) for p in phrases):
        raise ValueError("phrases: a list of text expected")
    return {"entity_id": int(data["entity_id"]), "phrases": phrases, "any_stage": bool(data.get("any_stage"))}


async def _session_exists(db: Executor, campaign_id: int, session_id: int) -> bool:
    return bool(
        await db.fetchval(
            "SELECT EXISTS (SELECT 1 FROM sessions WHERE campaign_id = $1 AND id = $2)", campaign_id, session_id
        )
    )


#: A session's summary waits for the session's extract, stage-2 and heard-as jobs (the names stage 2 and heard-as
#: phrases restore and the links extraction files belong in the recap), looking again every few seconds, but for
#: half an hour at most: then it summarises what is there. Not for the chunk job: the recap reads no vector, and
#: embedding a long session's lines takes most of an import's time (bench/recap.py --timing).
_SUMMARY_WAITS_FOR = (EXTRACT, CORRECT2, HEARD, UNHEARD)
_SUMMARY_RECHECK = timedelta(seconds=3)
_SUMMARY_MAX_WAIT = timedelta(minutes=30)


_OF_SESSION = """
        convert_from(payload, 'UTF8')::jsonb ->> 'campaign_id' = $2::bigint::text
        AND convert_from(payload, 'UTF8')::jsonb ->> 'session_id' = $3::bigint::text"""

#: The jobs that do all the work owed on their session when they run, whatever else their payload says.
_SESSION_WIDE = (CHUNK, EXTRACT, CORRECT2)


async def _another_queued(pool: asyncpg.Pool, job: pgq_models.Job, campaign_id: int, session_id: int) -> bool:
    """Whether another job of ``job``'s kind and session is queued: it will do ``job``'s work."""
    return bool(
        await pool.fetchval(
            f"SELECT EXISTS (SELECT 1 FROM pgqueuer WHERE entrypoint = $1 AND status = 'queued' AND id <> $4 AND "
            f"{_OF_SESSION})",
            job.entrypoint,
            campaign_id,
            session_id,
            job.id,
        )
    )


async def _summary_put_off(pool: asyncpg.Pool, job: pgq_models.Job, campaign_id: int, session_id: int) -> bool:
    """Whether the summary ``job`` is put off: another summary job of its session is queued (it reads every line
    when it runs), or its session still has work queued or running, so a summary job a few seconds later takes
    its place (no worker slot is held while it waits)."""
    since = json.loads(job.payload or b"{}").get("waiting_since") or job.created.isoformat()
    if await pool.fetchval(
        f"SELECT EXISTS (SELECT 1 FROM pgqueuer WHERE entrypoint = $1 AND status = 'queued' AND {_OF_SESSION})",
        SUMMARY,
        campaign_id,
        session_id,
    ):
        return True
    waiting = await pool.fetchval(
        f"""
        SELECT now() - $4::text::timestamptz < $5::interval AND EXISTS (
            SELECT 1 FROM pgqueuer WHERE entrypoint = ANY($1::text[]) AND status IN ('queued', 'picked')
              AND {_OF_SESSION})
        """,
        list(_SUMMARY_WAITS_FOR),
        campaign_id,
        session_id,
        since,
        _SUMMARY_MAX_WAIT,
    )
    if waiting:
        await queries_on(pool).enqueue(
            [SUMMARY],
            [job_payload(campaign_id, session_id, waiting_since=since)],
            [0],
            execute_after=[_SUMMARY_RECHECK],
            dedupe_key=[f"{SUMMARY}:{session_id}:after:{job.id}"],  # this job run again adds no second one
            on_conflict="skip",
        )
    return bool(waiting)


#: Six tries over about a minute ride out a restarting database or LLM.
_MAX_ATTEMPTS = 6
_RETRY_DELAYS = (timedelta(seconds=2), timedelta(seconds=30))  # the first and the longest


@dataclasses.dataclass
class _RetryOutages(DatabaseRetryEntrypointExecutor):
    """pgqueuer's retries with backoff, for outages only: a :class:`BadJobError` would fail the same way every
    time, so it is held at once instead of delaying a drain by a minute of tries. ``ctx`` counts the jobs held."""

    ctx: JobContext | None = None

    async def execute(self, job: pgq_models.Job, context: pgq_models.Context) -> None:
        try:
            await super().execute(job, context)
        except pgq_errors.RetryRequested as retry:
            # the base class turns every error into a retry; a slow LLM was asked three times already by the
            # client: the job is held (run again at the next worker start or `jobs retry`), not asked 15 times more
            if isinstance(retry.__cause__, BadJobError | LLMTimeout):
                self._held()
                raise retry.__cause__ from retry.__cause__.__cause__
            raise
        except Exception:
            self._held()  # its last try
            raise

    def _held(self) -> None:
        if self.ctx is not None:
            self.ctx.jobs_failed += 1


def build_queue_manager(pool: asyncpg.Pool, ctx: JobContext) -> QueueManager:
    qm = QueueManager(Queries(AsyncpgPoolDriver(pool)))

    def register(name: str, fn: Any) -> None:
        async def run(job: pgq_models.Job) -> None:
            try:
                campaign_id, session_id = _job_args(job)
                extra = _restoration_args(job) if name == UNHEARD else {}
            except (ValueError, KeyError, TypeError) as exc:
                raise BadJobError(f"unreadable payload {job.payload!r}") from exc
            try:
                if await _session_exists(pool, campaign_id, session_id):
                    if name == SUMMARY and await _summary_put_off(pool, job, campaign_id, session_id):
                        return  # the one queued in its place is counted
                    await fn(ctx, campaign_id, session_id, **extra)
                    ctx.jobs_done += 1
                    return
            except Exception as exc:
                if is_outage(exc):
                    if name in _SESSION_WIDE and await _another_queued(pool, job, campaign_id, session_id):
                        # Two rounds of one session (the import's, the one after stage 2) retried in turn asked a
                        # failing LLM twice each time: the one queued does this one's work, and is retried alone.
                        log.info("%s job %s: %s; another queued does its work", name, job.id, short_reason(exc))
                        return
                    raise
                if await _session_exists(pool, campaign_id, session_id):
                    raise BadJobError(f"{type(exc).__name__}: {exc}") from exc
            # Its campaign (or the session, one nothing was said in) was deleted before or while it ran.
            ctx.jobs_done += 1
            log.info(
                "%s job %s skipped: session %d of campaign %d no longer exists", name, job.id, session_id, campaign_id
            )

        # One job per kind at a time across all workers: jobs of a kind on the same session would only redo
        # each other's work, and extraction must not race itself creating the same new entity.
        # Outages retry with backoff, then stay visible as 'failed' instead of vanishing; one held after an
        # outage runs again at the next worker start (``requeue_failed``).
        qm.register_executor(
            name,
            _RetryOutages(
                EntrypointExecutorParameters(concurrency_limit=1, func=run, on_failure="hold"),
                max_attempts=_MAX_ATTEMPTS,
                initial_delay=_RETRY_DELAYS[0],
                max_delay=_RETRY_DELAYS[1],
                ctx=ctx,
            ),
        )

    register(CHUNK, chunk_session)
    register(EXTRACT, extract_session)
    register(CORRECT2, correct_stage2)
    register(SUMMARY, summarize_session)
    register(HEARD, correct_heard_as)
    register(UNHEARD, restore_heard_as)
    register(MENTIONS, reindex_mentions)
    return qm


#: A worker waits for a database that went away (a restart, a failover) as long as it takes, trying again at
#: most every 30 s.
_RECONNECT = Backoff(initial=1.0, maximum=30.0, tries=None)


async def run_workers(
    pool: asyncpg.Pool,
    settings: Any,
    stop_event: asyncio.Event | None = None,
    *,
    drain: bool = False,
    heartbeat_timeout: timedelta = timedelta(seconds=30),
    ctx: JobContext | None = None,
    reindex: bool | None = None,
) -> JobContext:
    """Process jobs in this process until ``stop_event`` is set (or, with ``drain``, until the queue is empty).

    A job picked by a worker that died is picked again once its heartbeat is ``heartbeat_timeout`` old. When the
    database goes away, a worker that runs until stopped waits for it and carries on (the pool reconnects); a
    drain raises the error, for its caller to say "run it again" (no job is lost either way). At its start (and
    daily, one that runs until stopped) it prunes the queue's log: :func:`prune_job_log`. ``reindex`` (default: not
    a drain) first queues the sessions of every campaign indexed under older name rules
    (:func:`enqueue_stale_mentions`): the worker's work, not that of an ``ingest --wait`` into one campaign."""
    ctx = ctx or make_job_context(Memory(pool, accept_threshold=settings.accept_threshold), settings)
    stop = stop_event or asyncio.Event()
    reindex = not drain if reindex is None else reindex
    failures = 0
    while not stop.is_set():
        try:
            if requeued := await requeue_failed(pool):
                log.warning("%d background jobs that had failed run again", requeued)
            if reindex and (stale := await enqueue_stale_mentions(pool, MENTION_RULES)):
                reindex_log.info(
                    "this version reads who a line names otherwise: the lines of %s are read again, one job each "
                    'in the background ("where was X said" answers as before for those not done yet)',
                    counted(stale, "session"),
                )
            await _prune_job_log_quietly(pool)
            if failures:
                log.warning("the database is back: background jobs go on")
                failures = 0
            await _run_queue(pool, build_queue_manager(pool, ctx), stop, drain, heartbeat_timeout)
            break
        except Exception as exc:
            if drain or not is_outage(exc):
                raise
            if stop.is_set():
                break
            if not failures:
                log.warning("%s (%s): background jobs wait for it", outage_said(exc)[0], short_reason(exc))
            failures += 1
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), _RECONNECT.delay(failures))
    return ctx


async def _run_queue(
    pool: asyncpg.Pool, qm: QueueManager, stop: asyncio.Event, drain: bool, heartbeat_timeout: timedelta
) -> None:
    async def stop_when_told() -> None:
        await stop.wait()
        qm.shutdown.set()

    async def prune_daily() -> None:  # the bot's worker runs for months
        while True:
            await asyncio.sleep(_PRUNE_EVERY.total_seconds())
            await _prune_job_log_quietly(pool)

    helpers = [asyncio.create_task(stop_when_told())] + ([] if drain else [asyncio.create_task(prune_daily())])
    try:
        await qm.run(
            mode=QueueExecutionMode.drain if drain else QueueExecutionMode.continuous,
            batch_size=4,
            heartbeat_timeout=heartbeat_timeout,
            dequeue_timeout=timedelta(seconds=5),
        )
    finally:
        for helper in helpers:
            helper.cancel()


_PRUNE_EVERY = timedelta(days=1)


async def _prune_job_log_quietly(pool: asyncpg.Pool) -> None:
    """Housekeeping never stops the jobs: a prune that failed is said, and the next one catches up."""
    try:
        await prune_job_log(pool)
    except Exception as exc:
        log.warning("could not prune the job log (%s)", short_reason(exc))
