"""The memory of one campaign: L1 log, L2 semantic index, L3 graph and the review queue, on one pool.

Every repository here is bound to a campaign id when it is built and puts it into every query, so code that
holds a :class:`CampaignMemory` cannot reach another campaign's rows.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg

from memory.campaigns import Campaigns
from memory.db import Executor, transaction
from memory.graph import KnowledgeGraph
from memory.models import DEFAULT_ACCEPT_THRESHOLD
from memory.review import ReviewQueue
from memory.semantic import SemanticIndex
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
