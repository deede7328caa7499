"""The queue's plumbing on the database only: enqueueing inside the caller's transaction, the per-session progress
of each step, and forgetting a deleted campaign's jobs. The graph and the store import it at module level.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import asyncpg

from memory.db import Executor

if TYPE_CHECKING:
    from pgqueuer.adapters.persistence.queries import Queries


class Scoped(Protocol):
    """What the progress functions need of a campaign's memory (``CampaignMemory`` is one): its database and
    campaign id. A protocol, so this module stays below the store."""

    db: Executor
    campaign_id: int


CHUNK = "lk_chunk"
EXTRACT = "lk_extract"
CORRECT2 = "lk_correct2"
SUMMARY = "lk_summary"
HEARD = "lk_heard"
UNHEARD = "lk_unheard"
MENTIONS = "lk_mentions"
ENTRYPOINTS = (CHUNK, EXTRACT, CORRECT2, SUMMARY, HEARD, UNHEARD, MENTIONS)
QUEUE_CHANNEL = "ch_pgqueuer"


# enqueueing (inside the caller's transaction) ------------------------------------------------------------------


def job_payload(campaign_id: int, session_id: int, **extra: Any) -> bytes:
    return json.dumps({"campaign_id": campaign_id, "session_id": session_id, **extra}).encode()


async def enqueue_session_work(
    conn: Executor, campaign_id: int, session_id: int, upto_seq: int, *, stage2: bool = False, after: str = ""
) -> None:
    """Enqueue the jobs owed on a session's entries up to ``upto_seq``, on ``conn`` (the L1 transaction).

    A job processes everything new in its session when it runs, so one per batch is plenty; the dedupe key
    makes replaying a batch whose jobs still wait a no-op."""
    kinds = [CHUNK, EXTRACT] + ([CORRECT2] if stage2 else [])
    await queries_on(conn).enqueue(
        kinds,
        [job_payload(campaign_id, session_id, upto_seq=upto_seq)] * len(kinds),
        # Stage 2 first (it rewrites text), then chunks (recall), then extraction.
        [{CORRECT2: 30, CHUNK: 20, EXTRACT: 10}[k] for k in kinds],
        # ``after`` names a later round over the same lines (e.g. after stage 2): a job of the first round that
        # is running right now must not swallow it.
        dedupe_key=[f"{k}:{session_id}:{upto_seq}{after}" for k in kinds],
        on_conflict="skip",
    )


async def enqueue_recorrection(conn: Executor, campaign_id: int, phrases: Sequence[str]) -> int:
    """Have the campaign's stored lines that hold one of ``phrases`` (heard-as phrases just added) corrected
    again, one job per session (see :func:`correct_heard_as`), on ``conn`` (the transaction adding them);
    returns how many sessions. A campaign of two years holds a million lines: the DM is not kept waiting."""
    sessions = [
        r["id"] for r in await conn.fetch("SELECT id FROM sessions WHERE campaign_id = $1 ORDER BY id", campaign_id)
    ]
    if sessions:
        said = hashlib.sha256("\n".join(sorted(p.casefold() for p in phrases)).encode()).hexdigest()[:16]
        await queries_on(conn).enqueue(
            [HEARD] * len(sessions),
            [job_payload(campaign_id, s) for s in sessions],
            [25] * len(sessions),  # after stage 2, before chunking: the chunk job it enqueues embeds the new text
            # phrases added again while their jobs still wait add none; other phrases, a round of their own
            dedupe_key=[f"{HEARD}:{s}:{said}" for s in sessions],
            on_conflict="skip",
        )
    return len(sessions)


async def enqueue_restoration(
    conn: Executor, campaign_id: int, entity_id: int, phrases: Sequence[str], *, any_stage: bool = False
) -> int:
    """Have the campaign's stored lines where ``phrases`` (heard-as phrases the entity ``entity_id`` just lost, or
    with ``any_stage`` phrases it is never heard as) were corrected to it restored, one job per session (see
    :func:`restore_heard_as_lines`), on ``conn`` (the transaction making the change); returns how many sessions."""
    sessions = [
        r["id"] for r in await conn.fetch("SELECT id FROM sessions WHERE campaign_id = $1 ORDER BY id", campaign_id)
    ]
    if sessions and phrases:
        said = hashlib.sha256("\n".join(sorted(p.casefold() for p in phrases)).encode()).hexdigest()[:16]
        await queries_on(conn).enqueue(
            [UNHEARD] * len(sessions),
            [
                job_payload(campaign_id, s, entity_id=entity_id, phrases=list(phrases), any_stage=any_stage)
                for s in sessions
            ],
            [25] * len(sessions),  # as the heard-as job: after stage 2, before chunking
            dedupe_key=[f"{UNHEARD}:{s}:{entity_id}:{said}:{int(any_stage)}" for s in sessions],
            on_conflict="skip",
        )
    return len(sessions) if phrases else 0


async def enqueue_every_session(db: Executor) -> int:
    """Have every session of every campaign chunked and embedded again (a new embedding model: L2 was dropped);
    returns how many sessions. The chunk job re-windows a whole session and embeds every window missing."""
    sessions = await db.fetch("SELECT campaign_id, session_id, max(seq) AS last FROM session_entries GROUP BY 1, 2")
    for row in sessions:
        await enqueue_session_work(db, row["campaign_id"], row["session_id"], row["last"])
    return len(sessions)


async def enqueue_sessions_without_line_vectors(db: Executor) -> int:
    """Have every session whose last line has no line vector chunked again (chunked before lines were embedded
    one by one: the chunk job then embeds its lines); returns how many sessions."""
    sessions = await db.fetch(
        """
        SELECT e.campaign_id, e.session_id, e.id, e.seq FROM (
            SELECT DISTINCT ON (campaign_id, session_id) campaign_id, session_id, id, seq FROM session_entries
            ORDER BY campaign_id, session_id, seq DESC
        ) e
        WHERE NOT EXISTS (SELECT 1 FROM line_vectors l WHERE l.campaign_id = e.campaign_id AND l.entry_id = e.id)
        """
    )
    for row in sessions:
        await enqueue_session_work(db, row["campaign_id"], row["session_id"], row["seq"], after=":lines")
    return len(sessions)


async def stale_mentions(db: Executor, version: int) -> int:
    """How many sessions' lines were indexed under name rules older than ``version``: what the next worker reads
    again (:func:`enqueue_stale_mentions`)."""
    return await db.fetchval("SELECT count(*) FROM sessions WHERE mention_rules < $1", version)


async def enqueue_stale_mentions(db: Executor, version: int) -> int:
    """Have every session whose lines were indexed under name rules older than ``version`` indexed again (see
    :func:`memory.jobs.chunk.reindex_mentions`), one job each, lowest priority; returns how many sessions. Run at
    each worker start: a job already queued for a session and version adds none."""
    sessions = await db.fetch(
        "SELECT campaign_id, id FROM sessions WHERE mention_rules < $1 ORDER BY campaign_id, id", version
    )
    if sessions:
        await queries_on(db).enqueue(
            [MENTIONS] * len(sessions),
            [job_payload(r["campaign_id"], r["id"]) for r in sessions],
            [0] * len(sessions),  # after the work of sessions being played: old lines can wait
            dedupe_key=[f"{MENTIONS}:{r['id']}:{version}" for r in sessions],
            on_conflict="skip",
        )
    return len(sessions)


async def enqueue_summary(conn: Executor, campaign_id: int, session_id: int) -> None:
    """Enqueue the session's summary. The dedupe key counts the session's lines: ending it again with the same
    lines adds no job, but a session resumed (or a late line imported) and ended again while its first summary
    job runs, which read the lines before, gets another."""
    lines = await conn.fetchval(
        "SELECT count(*) FROM session_entries WHERE campaign_id = $1 AND session_id = $2",
        campaign_id,
        session_id,
    )
    await queries_on(conn).enqueue(
        [SUMMARY],
        [job_payload(campaign_id, session_id)],
        [0],
        dedupe_key=[f"{SUMMARY}:{session_id}:{lines}"],
        on_conflict="skip",
    )


def queries_on(conn: Executor) -> Queries:
    """pgqueuer's queries on ``conn``. pgqueuer is imported here, not with the module: the store imports this
    module, and the everyday commands that only read must start fast."""
    from pgqueuer.adapters.persistence.queries import Queries

    if isinstance(conn, asyncpg.Pool):
        return Queries.from_asyncpg_pool(conn)
    return Queries.from_asyncpg_connection(conn)


# each step's progress through a session (how far it got, by line seq) -----------------------------------------


async def progress(db: Executor, mem: Scoped, session_id: int, step: str) -> int:
    value = await db.fetchval(
        "SELECT last_seq FROM ingest_progress WHERE campaign_id = $1 AND session_id = $2 AND step = $3",
        mem.campaign_id,
        session_id,
        step,
    )
    return int(value or 0)


async def set_progress(db: Executor, mem: Scoped, session_id: int, step: str, seq: int) -> None:
    await db.execute(
        """
        INSERT INTO ingest_progress (campaign_id, session_id, step, last_seq) VALUES ($1, $2, $3, $4)
        ON CONFLICT (campaign_id, session_id, step)
        DO UPDATE SET last_seq = greatest(ingest_progress.last_seq, $4), updated_at = now()
        """,
        mem.campaign_id,
        session_id,
        step,
        seq,
    )


async def claim_progress(db: Executor, mem: Scoped, session_id: int, step: str, seq: int) -> bool:
    """In a transaction: lock ``step``'s progress row and tell whether it still stands at ``seq``."""
    await db.execute(
        """
        INSERT INTO ingest_progress (campaign_id, session_id, step, last_seq) VALUES ($1, $2, $3, 0)
        ON CONFLICT (campaign_id, session_id, step) DO NOTHING
        """,
        mem.campaign_id,
        session_id,
        step,
    )
    value = await db.fetchval(
        "SELECT last_seq FROM ingest_progress WHERE campaign_id = $1 AND session_id = $2 AND step = $3 FOR UPDATE",
        mem.campaign_id,
        session_id,
        step,
    )
    return int(value) == seq


async def rewind_progress(db: Executor, campaign_id: int, session_id: int, step: str, seq: int) -> None:
    """Make ``step`` process the session again from line ``seq`` on (if it had got past it).

    The row is locked either way, so a job claiming its progress (:func:`claim_progress`) either waits for this
    transaction and then sees its line, or commits first and is rewound here."""
    await db.execute(
        """
        INSERT INTO ingest_progress (campaign_id, session_id, step, last_seq) VALUES ($1, $2, $3, 0)
        ON CONFLICT (campaign_id, session_id, step) DO UPDATE
        SET last_seq = least(ingest_progress.last_seq, $4 - 1),
            updated_at = CASE WHEN ingest_progress.last_seq >= $4 THEN now() ELSE ingest_progress.updated_at END
        """,
        campaign_id,
        session_id,
        step,
        seq,
    )


async def last_seq(mem: Scoped, session_id: int) -> int:
    """The seq of the session's last line (0: none yet)."""
    return int(
        await mem.db.fetchval(
            "SELECT coalesce(max(seq), 0) FROM session_entries WHERE campaign_id = $1 AND session_id = $2",
            mem.campaign_id,
            session_id,
        )
    )


async def lines_not_extracted(db: Executor, campaign_id: int) -> int:
    """The campaign's lines the extraction step has not read yet: what may still propose review items."""
    return int(
        await db.fetchval(
            """
            SELECT coalesce(sum((
                       -- per session, past its progress only: a campaign of two years holds a million lines
                       SELECT count(*) FROM session_entries se
                       WHERE se.campaign_id = $1 AND se.session_id = s.id AND se.seq > coalesce(p.last_seq, 0))), 0)
            FROM sessions s
            LEFT JOIN ingest_progress p ON p.campaign_id = s.campaign_id AND p.session_id = s.id AND p.step = $2
            WHERE s.campaign_id = $1
            """,
            campaign_id,
            EXTRACT,
        )
    )


# the queue's rows ----------------------------------------------------------------------------------------------


class BadJobError(Exception):
    """A job failed for a reason other than an outage (its data, a bug): running it again fails the same way,
    so it is not run again at a worker start. The original error is its cause, in the job's logged traceback."""


#: A job's campaign is in its payload (``$2``; NULL: every campaign's).
OF_CAMPAIGN = "AND ($2::bigint IS NULL OR convert_from(payload, 'UTF8')::jsonb ->> 'campaign_id' = $2::text)"


async def pending_jobs(db: Executor, campaign_id: int | None = None) -> int:
    """Jobs of ours still queued or running (of one campaign when given)."""
    return int(
        await db.fetchval(
            f"""
            SELECT count(*) FROM pgqueuer
            WHERE entrypoint = ANY($1::text[]) AND status IN ('queued', 'picked') {OF_CAMPAIGN}
            """,
            list(ENTRYPOINTS),
            campaign_id,
        )
    )


async def delete_campaign_jobs(conn: Executor, campaign_id: int, session_id: int | None = None) -> int:
    """Forget a deleted campaign's (or session's) waiting and held jobs, in its delete's transaction; returns how
    many. A job running now is left to its worker, which finds the session gone and skips it."""
    status = await conn.execute(
        """
        DELETE FROM pgqueuer WHERE entrypoint = ANY($1::text[]) AND status IN ('queued', 'failed')
          AND convert_from(payload, 'UTF8')::jsonb ->> 'campaign_id' = $2::bigint::text
          AND ($3::bigint IS NULL OR convert_from(payload, 'UTF8')::jsonb ->> 'session_id' = $3::bigint::text)
        """,
        list(ENTRYPOINTS),
        campaign_id,
        session_id,
    )
    return int(status.split()[-1])


async def wait_until_idle(
    pool: asyncpg.Pool, *, campaign_id: int | None = None, deadline_s: float | None = None
) -> None:
    """Return once no job of ours is queued or running, woken by the queue's own NOTIFYs (a slow re-check
    covers a missed one); raises ``TimeoutError`` after ``deadline_s`` seconds."""
    changed = asyncio.Event()

    def wake(*_: object) -> None:
        changed.set()

    async with asyncio.timeout(deadline_s), pool.acquire() as conn:
        await conn.add_listener(QUEUE_CHANNEL, wake)
        try:
            while await pending_jobs(conn, campaign_id):
                changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), 2.0)
        finally:
            await conn.remove_listener(QUEUE_CHANNEL, wake)
