"""Recall as it was before issue 30, frozen: full text + vectors over windows fused by RRF (k = 60), each list read
4 x limit deep; a hit is a chunk. A copy of ``memory.recall.recall`` (main at ef263a3) with its own SQL, so the
benchmark keeps measuring the old behaviour while the product's recall changes. Not used by the product.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

RRF_K = 60
QUERY_CHARS = 1000


@dataclass(frozen=True, slots=True)
class V1Hit:
    session_id: int
    entry_ids: list[int]  # the chunk's lines in order (or the one line not chunked yet)
    score: float
    matched: list[str]


def _clipped(query: str) -> str:
    if len(query) <= QUERY_CHARS:
        return query
    head = query[: QUERY_CHARS + 1]
    return head[: head.rfind(" ")] if " " in head else head[:QUERY_CHARS]


async def recall_v1(
    db: Any, campaign_id: int, query: str, embedding: Sequence[float], *, limit: int = 5
) -> list[V1Hit]:
    """The ``limit`` best hits for ``query`` in the campaign, as today's recall ranked them (mode "both")."""
    query = _clipped(query)
    depth = max(limit * 4, 20)
    scores: dict[str, float] = defaultdict(float)
    matched: dict[str, list[str]] = defaultdict(list)
    units: dict[str, tuple[int, list[int]]] = {}  # key -> (session id, entry ids)

    near = await db.fetch(
        """
        SELECT id, session_id, entry_ids FROM (
            SELECT id, session_id, entry_ids, embedding <=> $2 AS distance FROM chunks
            WHERE campaign_id = $1 ORDER BY distance LIMIT $3
        ) hits ORDER BY distance
        """,
        campaign_id,
        np.asarray(embedding, dtype=np.float32),
        depth,
    )
    for rank, r in enumerate(near):
        key = f"c{r['id']}"
        units[key] = (r["session_id"], list(r["entry_ids"]))
        scores[key] += 1 / (RRF_K + rank + 1)
        matched[key].append("vector")

    found = await db.fetch(
        """
        WITH q AS (
            SELECT nullif(replace(plainto_tsquery('english', searchable($2))::text, '&', '|'), '')::tsquery AS q
        )
        SELECT e.id, e.session_id FROM session_entries e, q
        WHERE e.campaign_id = $1 AND q.q IS NOT NULL AND e.tsv @@ q.q
        ORDER BY ts_rank_cd(e.tsv, q.q) DESC, e.session_id, e.seq
        LIMIT $3
        """,
        campaign_id,
        query,
        depth,
    )
    covering = await db.fetch(
        """
        SELECT DISTINCT ON (eid) eid, c.id, c.session_id, c.entry_ids
        FROM unnest($2::bigint[]) AS eid
        JOIN chunks c ON c.campaign_id = $1 AND c.entry_ids @> ARRAY[eid]
        ORDER BY eid, c.start_s, c.id
        """,
        campaign_id,
        [r["id"] for r in found],
    )
    chunk_of = {r["eid"]: r for r in covering}
    seen: set[str] = set()
    for rank, r in enumerate(found):
        chunk = chunk_of.get(r["id"])
        key = f"c{chunk['id']}" if chunk else f"e{r['id']}"
        if key in seen:
            continue
        seen.add(key)
        units.setdefault(
            key, (chunk["session_id"], list(chunk["entry_ids"])) if chunk else (r["session_id"], [r["id"]])
        )
        scores[key] += 1 / (RRF_K + rank + 1)
        matched[key].append("fulltext")

    best = sorted(scores, key=lambda k: scores[k], reverse=True)[:limit]
    # what the old recall read besides ranking (refs and session titles for display), so its latency is whole
    await db.fetch(
        "SELECT id, ref FROM session_entries WHERE campaign_id = $1 AND id = ANY($2::bigint[])"
        " ORDER BY session_id, seq",
        campaign_id,
        sorted({i for k in best for i in units[k][1]}),
    )
    await db.fetch("SELECT id, title FROM sessions WHERE campaign_id = $1", campaign_id)
    return [V1Hit(units[k][0], units[k][1], round(scores[k], 6), matched[k]) for k in best]
