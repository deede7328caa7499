"""The memory of one campaign: L1 log, L2 semantic index, L3 graph and the review queue, on one pool.

Every repository here is bound to a campaign id when it is built and puts it into every query, so code that
holds a :class:`CampaignMemory` cannot reach another campaign's rows.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
from pydantic import BaseModel

from memory.campaigns import Campaigns
from memory.db import Executor, transaction
from memory.errors import quoted
from memory.graph import KnowledgeGraph
from memory.jobs.queue import delete_campaign_jobs
from memory.models import DEFAULT_ACCEPT_THRESHOLD, Entity, EntityIn, counted
from memory.review import ReviewQueue
from memory.semantic import SemanticIndex
from memory.session_log import SessionLog
from memory.took_part import link_to_recaps


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

    def said(self) -> str:
        """What was removed and what stayed, in a sentence or two for the DM."""
        removed = [counted(self.lines, "line"), counted(self.chunks, "passage")]
        if self.pending_entities or self.pending_facts:
            removed.append(
                f"{counted(self.pending_entities, 'entity', 'entities')} and {counted(self.pending_facts, 'fact')}"
                " waiting for review"
            )
        if self.recap:
            removed.append(f"its recap entity with {counted(self.recap_links, 'link')} to who took part")
        elif self.recap_links:
            removed.append(f"{counted(self.recap_links, 'link')} of its recap to who took part")
        if self.jobs:
            removed.append(counted(self.jobs, "waiting background job"))
        text = f"Deleted session {quoted(self.title)}: {', '.join(removed)}."
        if self.kept_entities or self.kept_facts:
            text += (
                f" Kept {counted(self.kept_entities, 'entity', 'entities')} and {counted(self.kept_facts, 'fact')}"
                " heard in it that were accepted or rejected."
            )
        if self.kept_recap:
            n = self.kept_recap_facts
            text += (
                f" Kept its recap entity {self.kept_recap!r}: {counted(n, 'fact')} you accepted"
                f" {'is' if n == 1 else 'are'} about it (remove it as any entity if it should go too)."
            )
        return text


#: The session's own rows in the graph: ``$1`` campaign, ``$2`` session id (as text, as provenance holds it).
_OF_SESSION = "campaign_id = $1 AND provenance ->> 'session_id' = $2"


class CampaignMemory:
    def __init__(self, db: Executor, campaign_id: int, *, accept_threshold: float = DEFAULT_ACCEPT_THRESHOLD) -> None:
        self.db = db
        self.campaign_id = campaign_id
        self.accept_threshold = accept_threshold
        self.log = SessionLog(db, campaign_id)
        self.semantic = SemanticIndex(db, campaign_id)
        self.graph = KnowledgeGraph(db, campaign_id, accept_threshold=accept_threshold)
        self.review = ReviewQueue(self.graph)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[CampaignMemory]:
        """The same memory on one connection inside a transaction: all or nothing."""
        async with transaction(self.db) as conn:
            yield (
                self
                if conn is self.db
                else CampaignMemory(conn, self.campaign_id, accept_threshold=self.accept_threshold)
            )

    async def add_entity(self, entity: EntityIn) -> Entity:
        """The DM's new entity, with the recapped sessions that named it before it was added (see
        :func:`memory.took_part.link_to_recaps`): all or nothing."""
        async with self.transaction() as tx:
            await tx.graph.lock()  # before any write: see ``KnowledgeGraph.lock``
            added = await tx.graph.add_entity(entity)
            await link_to_recaps(tx.graph, [added.id])
        return added

    async def delete_session(self, title: str | int, *, even_if_live: bool = False) -> DeletedSession:
        """Delete a session (a mistaken import): its lines, chunks and progress (they cascade), its recap entity
        and links, the review items only its lines proposed, and its waiting jobs, in one transaction. What the
        DM accepted or rejected stays. A session not ended may be being recorded: refused unless
        ``even_if_live`` (one cut off by a crash never ends by itself)."""
        for _ in range(2):
            with contextlib.suppress(asyncpg.DeadlockDetectedError):
                return await self._delete_session(title, even_if_live)
        return await self._delete_session(title, even_if_live)

    async def _delete_session(self, title: str | int, even_if_live: bool) -> DeletedSession:
        async with self.transaction() as tx:
            # Every graph writer takes this first, so none files a guess from these lines meanwhile. An extraction
            # job takes its progress row before it, which the delete cascades to: a deadlock, which a retry ends.
            await tx.graph.lock()
            return await tx._delete_session_locked(title, even_if_live)

    async def _delete_session_locked(self, title: str | int, even_if_live: bool) -> DeletedSession:
        db, campaign_id = self.db, self.campaign_id
        session = await self.log.deletable(title, even_if_live=even_if_live)
        session_id, sid = session.id, str(session.id)
        chunks = await db.fetchval(
            "SELECT count(*) FROM chunks WHERE campaign_id = $1 AND session_id = $2", campaign_id, session_id
        )
        # Its recap: the summary job's event entity and its links of who took part. One the DM has given facts of
        # their own since ("happened_in Ironhold") stays with them: only its links from these lines go.
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
        recap_ids = [r["id"] for r in recap if not r["facts"]]
        kept_recap = [r for r in recap if r["facts"]]
        recap_links = await db.fetchval(
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
        await db.execute(
            "DELETE FROM entities WHERE campaign_id = $1 AND id = ANY($2::bigint[])", campaign_id, recap_ids
        )
        # Guesses only its lines made (a fact copy merged from elsewhere names other sessions too).
        facts = await db.fetchval(
            f"""
            WITH gone AS (
                DELETE FROM relationships WHERE {_OF_SESSION} AND status = 'pending' AND NOT provenance ? 'merged'
                RETURNING 1
            ) SELECT count(*) FROM gone
            """,
            campaign_id,
            sid,
        )
        # A proposed entity stays while something else stands on it: a fact the DM accepted, a guess from another
        # session, or another session's passages that name it. Rejected facts about it go with it.
        entities = await db.fetchval(
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
        jobs = await delete_campaign_jobs(db, campaign_id, session_id)
        await db.execute("DELETE FROM sessions WHERE campaign_id = $1 AND id = $2", campaign_id, session_id)
        kept = await db.fetchrow(
            f"""
            SELECT (SELECT count(*) FROM entities WHERE {_OF_SESSION} AND status <> 'pending'
                    AND id <> ALL($3::bigint[])) AS entities,
                   (SELECT count(*) FROM relationships WHERE {_OF_SESSION} AND status <> 'pending') AS facts
            """,
            campaign_id,
            sid,
            [r["id"] for r in kept_recap],
        )
        return DeletedSession(
            title=session.title,
            lines=session.lines,
            chunks=chunks,
            pending_entities=entities,
            pending_facts=facts,
            recap=bool(recap_ids),
            recap_links=recap_links,
            kept_recap=kept_recap[0]["name"] if kept_recap else None,
            kept_recap_facts=sum(r["facts"] for r in kept_recap),
            jobs=jobs,
            kept_entities=kept["entities"],
            kept_facts=kept["facts"],
        )


class Memory:
    """Entry point: the pool, the guild's campaigns, and a :class:`CampaignMemory` per campaign."""

    def __init__(self, pool: asyncpg.Pool, *, accept_threshold: float = DEFAULT_ACCEPT_THRESHOLD) -> None:
        self.pool = pool
        self.accept_threshold = accept_threshold

    def campaigns(self, guild_id: int = 0) -> Campaigns:
        return Campaigns(self.pool, guild_id)

    def campaign(self, campaign_id: int) -> CampaignMemory:
        return CampaignMemory(self.pool, campaign_id, accept_threshold=self.accept_threshold)

    async def guild_of(self, campaign_id: int) -> int | None:
        """The guild a campaign belongs to (0: made on the command line), or None if there is no such campaign."""
        return await self.pool.fetchval("SELECT guild_id FROM campaigns WHERE id = $1", campaign_id)
