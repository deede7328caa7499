"""What every part of the graph holds: the database, the campaign, the accept threshold, and the one lock."""

from __future__ import annotations

from typing import Self

from memory.db import Executor
from memory.models import (
    DEFAULT_ACCEPT_THRESHOLD,
)

#: The advisory transaction lock (namespace + campaign id, as ``session_log``'s appends) that writers of a
#: campaign's graph hold when they check before they write. One lock, so no two writers can take locks in
#: opposite orders and deadlock.
_GRAPH_LOCK = 2 << 48


class GraphBase:
    """The database, campaign and accept threshold every part of :class:`memory.graph.KnowledgeGraph` works on."""

    def __init__(self, db: Executor, campaign_id: int, *, accept_threshold: float = DEFAULT_ACCEPT_THRESHOLD) -> None:
        self.db = db
        self.campaign_id = campaign_id
        self.accept_threshold = accept_threshold

    def bound_to(self, conn: Executor) -> Self:
        """The same graph on ``conn`` (a connection inside a transaction)."""
        return self if conn is self.db else type(self)(conn, self.campaign_id, accept_threshold=self.accept_threshold)

    async def lock(self) -> None:
        """Hold, until the transaction ends, the right to write this campaign's graph after checking it (names
        free, facts contradicted, a review item still pending). Take it first in a transaction that writes
        several things: a row written before it could be one another holder waits for."""
        await self.db.execute("SELECT pg_advisory_xact_lock($1::bigint)", _GRAPH_LOCK + self.campaign_id)

    async def refresh_statistics(self) -> None:
        """Let the planner count the rows this transaction wrote. It knows a campaign's size only from the last
        ANALYZE: to a long load into a new campaign the campaign looks empty, so each name check scanned all of
        it (quadratic: 20k entities had not loaded after 20 minutes). ANALYZE inside the transaction counts its
        own rows."""
        await self.db.execute("ANALYZE entities, entity_aliases, relationships")
