"""Deleting a session's rows (a mistaken import): its recap, the guesses only its lines made, its waiting jobs and
the session itself (its lines, chunks and progress cascade). What the DM accepted or rejected stays.

The caller holds the graph's lock in a transaction (see ``CampaignMemory.delete_session``): every step here runs
on that one connection.
"""

from __future__ import annotations

from pydantic import BaseModel

from memory.db import Executor
from memory.jobs.queue import delete_campaign_jobs
from memory.session_log import ListedSession

#: The session's own rows in the graph: ``$1`` campaign, ``$2`` session id (as text, as provenance holds it).
_OF_SESSION = "campaign_id = $1 AND provenance ->> 'session_id' = $2"


class DeletedSession(BaseModel):
    """What deleting a session removed, and what the DM had decided that stays."""

    title: str
    lines: int
    chunks: int
    pending_entities: int  # guesses from its lines, waiting for review
    pending_facts: int
    recap: bool  # its event entity ("Session: …") and the links of who took part
    recap_links: int
    kept_recap: str | None = None  # its event entity, kept for the facts the DM accepted about it (its links go)
    kept_recap_facts: int = 0
    jobs: int  # background work on it that had not run
    kept_entities: int  # accepted or rejected by the DM: they stay, no longer pointing at the session
    kept_facts: int


class _Recap(BaseModel):
    """The session's recap event entities: those deleted, and the one kept for facts the DM accepted about it."""

    gone: list[int]
    kept: list[tuple[int, str, int]]  # id, name, accepted facts
    links: int  # its took-part links deleted


async def delete_session_rows(db: Executor, campaign_id: int, session: ListedSession) -> DeletedSession:
    """Delete ``session`` (found and locked by ``SessionLog.deletable``) and what only it stands for; report it."""
    sid = str(session.id)
    chunks = await db.fetchval(
        "SELECT count(*) FROM chunks WHERE campaign_id = $1 AND session_id = $2", campaign_id, session.id
    )
    recap = await _delete_recap(db, campaign_id, sid)
    facts = await _delete_pending_facts(db, campaign_id, sid)
    entities = await _delete_pending_entities(db, campaign_id, sid, session.id)
    jobs = await delete_campaign_jobs(db, campaign_id, session.id)
    await db.execute("DELETE FROM sessions WHERE campaign_id = $1 AND id = $2", campaign_id, session.id)
    kept = await db.fetchrow(
        f"""
        SELECT (SELECT count(*) FROM entities WHERE {_OF_SESSION} AND status <> 'pending'
                AND id <> ALL($3::bigint[])) AS entities,
               (SELECT count(*) FROM relationships WHERE {_OF_SESSION} AND status <> 'pending') AS facts
        """,
        campaign_id,
        sid,
        [r[0] for r in recap.kept],
    )
    return DeletedSession(
        title=session.title,
        lines=session.lines,
        chunks=chunks,
        pending_entities=entities,
        pending_facts=facts,
        recap=bool(recap.gone),
        recap_links=recap.links,
        kept_recap=recap.kept[0][1] if recap.kept else None,
        kept_recap_facts=sum(r[2] for r in recap.kept),
        jobs=jobs,
        kept_entities=kept["entities"],
        kept_facts=kept["facts"],
    )


async def _delete_recap(db: Executor, campaign_id: int, sid: str) -> _Recap:
    """Its recap: the summary job's event entity and its links of who took part. One the DM has given facts of
    their own since ("happened_in Ironhold") stays with them: only its links from these lines go."""
    recap = await db.fetch(
        f"""
        SELECT e.id, e.name, (
            SELECT count(*) FROM relationships r
            WHERE r.campaign_id = $1 AND e.id IN (r.source_id, r.target_id)
              AND r.type <> 'took_part_in' AND r.status = 'accepted'
        ) AS facts
        FROM entities e WHERE {_OF_SESSION} AND type = 'event' AND provenance ->> 'source' = 'inferred'
        """,
        campaign_id,
        sid,
    )
    gone = [r["id"] for r in recap if not r["facts"]]
    links = await db.fetchval(
        f"""
        WITH gone AS (
            DELETE FROM relationships WHERE {_OF_SESSION} AND type = 'took_part_in'
            AND target_id = ANY($3::bigint[]) RETURNING 1
        ) SELECT count(*) FROM gone
        """,
        campaign_id,
        sid,
        [r["id"] for r in recap],
    )
    await db.execute("DELETE FROM entities WHERE campaign_id = $1 AND id = ANY($2::bigint[])", campaign_id, gone)
    return _Recap(gone=gone, kept=[(r["id"], r["name"], r["facts"]) for r in recap if r["facts"]], links=links)


async def _delete_pending_facts(db: Executor, campaign_id: int, sid: str) -> int:
    """Guesses only its lines made (a fact copy merged from elsewhere names other sessions too)."""
    return await db.fetchval(
        f"""
        WITH gone AS (
            DELETE FROM relationships WHERE {_OF_SESSION} AND status = 'pending' AND NOT provenance ? 'merged'
            RETURNING 1
        ) SELECT count(*) FROM gone
        """,
        campaign_id,
        sid,
    )


async def _delete_pending_entities(db: Executor, campaign_id: int, sid: str, session_id: int) -> int:
    """A proposed entity stays while something else stands on it: a fact the DM accepted, a guess from another
    session, or another session's passages that name it. Rejected facts about it go with it."""
    return await db.fetchval(
        f"""
        WITH gone AS (
            DELETE FROM entities e WHERE {_OF_SESSION} AND status = 'pending'
            AND NOT EXISTS (
                SELECT 1 FROM relationships r
                WHERE r.campaign_id = $1 AND e.id IN (r.source_id, r.target_id) AND r.status <> 'rejected')
            AND NOT EXISTS (
                SELECT 1 FROM chunks c
                WHERE c.campaign_id = $1 AND c.session_id <> $3 AND c.entity_ids @> ARRAY[e.id])
            RETURNING 1
        ) SELECT count(*) FROM gone
        """,
        campaign_id,
        sid,
        session_id,
    )
