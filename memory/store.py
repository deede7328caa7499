"""The memory of one campaign: L1 log, L2 semantic index, L3 graph and the review queue, on one pool.

Every repository here is bound to a campaign id when it is built and puts it into every query, so code that
holds a :class:`CampaignMemory` cannot reach another campaign's rows.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg

from memory.campaigns import Campaigns
from memory.db import Executor, transaction
from memory.graph import KnowledgeGraph
from memory.graph.took_part import link_to_recaps
from memory.models import DEFAULT_ACCEPT_THRESHOLD, Entity, EntityIn
from memory.review import ReviewQueue
from memory.semantic import SemanticIndex
from memory.session_delete import DeletedSession, delete_session_rows
from memory.session_log import SessionLog


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
        :func:`memory.graph.took_part.link_to_recaps`): all or nothing."""
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
        session = await self.log.deletable(title, even_if_live=even_if_live)
        return await delete_session_rows(self.db, self.campaign_id, session)

    async def totals(self) -> dict[str, int]:
        """What the campaign holds, as an import's end shows it: lines, passages, accepted entities and current
        facts (as `campaign info` counts them), and the entities and facts waiting for review."""
        row = await self.db.fetchrow(
            """
            SELECT (SELECT count(*) FROM session_entries WHERE campaign_id = $1) AS entries,
                   (SELECT count(*) FROM chunks WHERE campaign_id = $1) AS chunks,
                   (SELECT count(*) FROM entities WHERE campaign_id = $1 AND status = 'accepted') AS entities,
                   (SELECT count(*) FROM entities WHERE campaign_id = $1 AND status = 'pending') AS pending_entities,
                   (SELECT count(*) FROM relationships
                     WHERE campaign_id = $1 AND status = 'accepted' AND valid_to IS NULL) AS facts,
                   (SELECT count(*) FROM relationships WHERE campaign_id = $1 AND status = 'pending') AS pending_facts
            """,
            self.campaign_id,
        )
        return dict(row)


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
