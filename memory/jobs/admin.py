"""Queue administration: held jobs listed and run again, counts, and pruning the queue's own log."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

import asyncpg
from pgqueuer.adapters.persistence.queries import Queries
from pydantic import BaseModel

from memory.db import Executor
from memory.jobs.queue import ENTRYPOINTS, OF_CAMPAIGN, BadJobError
from memory.providers.llm import LLMTimeout, LLMUnavailable

log = logging.getLogger(__name__)

#: How long the queue's own log is kept: ``pgqueuer_log`` (a row each time a job is queued, finished or
#: failed: thousands a session, never deleted by pgqueuer) and the per-second counts pgqueuer folds it into
#: (``pgqueuer_statistics``). Nothing of ours reads them but the last error of a held job, kept while it is held.
JOB_LOG_KEPT = timedelta(days=30)
_PRUNE_BATCH = 10_000


async def prune_job_log(db: Executor, older_than: timedelta = JOB_LOG_KEPT) -> int:
    """Delete the queue's log rows and counts older than ``older_than``, but not the log of a job still in the
    queue (waiting, running or held); returns how many log rows went. In batches on the log's index of
    ``created``: the first prune of a database that ran for years holds no long transaction."""
    pruned = 0
    while True:
        status = await db.execute(
            """
            DELETE FROM pgqueuer_log WHERE id IN (
                SELECT l.id FROM pgqueuer_log l
                WHERE l.created < now() - $1::interval
                  AND NOT EXISTS (SELECT 1 FROM pgqueuer j WHERE j.id = l.job_id)
                LIMIT $2
            )
            """,
            older_than,
            _PRUNE_BATCH,
        )
        deleted = int(status.split()[-1])
        pruned += deleted
        if deleted < _PRUNE_BATCH:
            break
    await db.execute("DELETE FROM pgqueuer_statistics WHERE created < now() - $1::interval", older_than)
    if pruned:
        log.info("pruned %d rows of the job log older than %d days", pruned, older_than.days)
    return pruned


#: ... and of a guild's campaigns only (``$3``; NULL: every guild's). An admin command of one guild must not see or
#: touch another guild's jobs, whose payload, title and error text name that guild's campaign.
_OF_GUILD = """AND ($3::bigint IS NULL OR convert_from(payload, 'UTF8')::jsonb ->> 'campaign_id' IN (
    SELECT g.id::text FROM campaigns g WHERE g.guild_id = $3))"""


#: The last failure pgqueuer logged for the held job ``f``. It logs the error as JSON text, which our pool's jsonb
#: codec encodes once more: a string.
_LAST_FAILURE = """
    SELECT CASE jsonb_typeof(l.traceback) WHEN 'string' THEN (l.traceback #>> '{}')::jsonb ELSE l.traceback END
    FROM pgqueuer_log l WHERE l.job_id = f.id AND l.status = 'failed'
    ORDER BY l.created DESC, l.id DESC LIMIT 1
"""


async def requeue_failed(
    pool: asyncpg.Pool, campaign_id: int | None = None, *, bad_data: bool = False, guild_id: int | None = None
) -> int:
    """Put held jobs (of one campaign when given) back in the queue; returns how many. Every job resumes from its
    session's progress, so running one again does no harm. Of such jobs with the same dedupe key, or one already
    waiting, one runs. Only jobs held after an outage (their tries ran out while the database or the LLM was
    away) unless ``bad_data``: one whose last failure was a :class:`BadJobError` would only fail again, at every
    worker start, until the code or the data is fixed (the operator's ``lorekeeper jobs retry``). ``guild_id``
    limits them to that guild's campaigns."""
    held = f"""
        SELECT f.id, f.dedupe_key FROM pgqueuer f
        WHERE f.entrypoint = ANY($1::text[]) AND f.status = 'failed' {OF_CAMPAIGN} {_OF_GUILD}
          AND ($4::text IS NULL OR ({_LAST_FAILURE}) ->> 'exception_type' IS DISTINCT FROM $4)
    """
    args = (list(ENTRYPOINTS), campaign_id, guild_id, None if bad_data else BadJobError.__name__)
    async with pool.acquire() as conn, conn.transaction():
        ids = [
            row["id"]
            for row in await conn.fetch(
                f"""
                SELECT DISTINCT ON (coalesce(f.dedupe_key, f.id::text)) f.id FROM ({held}) f
                WHERE NOT EXISTS (
                    SELECT 1 FROM pgqueuer w WHERE w.dedupe_key = f.dedupe_key AND w.status IN ('queued', 'picked'))
                ORDER BY coalesce(f.dedupe_key, f.id::text), f.id DESC
                """,
                *args,
            )
        ]
        await conn.execute(
            f"DELETE FROM pgqueuer WHERE id IN (SELECT id FROM ({held}) f) AND NOT id = ANY($5)", *args, ids
        )
        if ids:
            await Queries.from_asyncpg_connection(conn).requeue_jobs(ids)
    return len(ids)


class HeldJob(BaseModel):
    """A job held after its last try, as ``lorekeeper jobs list`` shows it."""

    id: int
    kind: str
    campaign_id: int | None
    campaign: str | None
    session_id: int | None
    session: str | None
    failed_at: datetime
    error: str
    on_its_data: bool  # held at once, and not run again at a worker start

    @property
    def llm_away(self) -> bool:
        """Held because the LLM gave no answer at all (unreachable, overloaded, too slow): a setting or a server to
        check, not the job's data."""
        return self.error.startswith(tuple(f"{kind.__name__}:" for kind in (LLMUnavailable, LLMTimeout)))


async def held_jobs(db: Executor, campaign_id: int | None = None, *, guild_id: int | None = None) -> list[HeldJob]:
    """Jobs of ours held after their last try (of one campaign, or of one guild's campaigns, when given), oldest
    first, with their last error."""
    rows = await db.fetch(
        f"""
        SELECT f.id, f.entrypoint, f.updated, c.id AS campaign_id, c.name AS campaign,
               s.id AS session_id, s.title AS session, ({_LAST_FAILURE}) AS failure
        FROM pgqueuer f
        CROSS JOIN LATERAL (SELECT convert_from(f.payload, 'UTF8')::jsonb AS p) j
        LEFT JOIN campaigns c ON c.id::text = j.p ->> 'campaign_id'
        LEFT JOIN sessions s ON s.campaign_id = c.id AND s.id::text = j.p ->> 'session_id'
        WHERE f.entrypoint = ANY($1::text[]) AND f.status = 'failed' {OF_CAMPAIGN} {_OF_GUILD}
        ORDER BY f.id
        """,
        list(ENTRYPOINTS),
        campaign_id,
        guild_id,
    )
    held = []
    for r in rows:
        failure = r["failure"] or {}
        kind, message = failure.get("exception_type", "unknown error"), failure.get("exception_message", "")
        held.append(
            HeldJob(
                id=r["id"],
                kind=r["entrypoint"].removeprefix("lk_"),
                campaign_id=r["campaign_id"],
                campaign=r["campaign"],
                session_id=r["session_id"],
                session=r["session"],
                failed_at=r["updated"],
                # A BadJobError's message already names the error it wraps.
                error=message if kind == BadJobError.__name__ else f"{kind}: {message}",
                on_its_data=kind == BadJobError.__name__,
            )
        )
    return held


async def failed_jobs(db: Executor, campaign_id: int | None = None) -> int:
    """Jobs of ours held after their last try (of one campaign when given)."""
    return int(
        await db.fetchval(
            f"SELECT count(*) FROM pgqueuer WHERE entrypoint = ANY($1::text[]) AND status = 'failed' {OF_CAMPAIGN}",
            list(ENTRYPOINTS),
            campaign_id,
        )
    )
