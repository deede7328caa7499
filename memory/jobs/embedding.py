"""The embedding cache, keyed by (model, content hash)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from memory.db import Executor
from memory.semantic import content_hash

if TYPE_CHECKING:
    from memory.providers.embeddings import Embedder


@dataclass(slots=True)
class EmbedStats:
    requested: int = 0
    cache_hits: int = 0
    computed: int = 0


async def embed_cached(
    db: Executor, embedder: Embedder, model: str, texts: Sequence[str], stats: EmbedStats | None = None
) -> list[list[float]]:
    """Embeddings of ``texts``, computing only those not cached under (model, content hash)."""
    hashes = [content_hash(t) for t in texts]
    rows = await db.fetch(
        "SELECT content_hash, embedding FROM embedding_cache WHERE model = $1 AND content_hash = ANY($2::text[])",
        model,
        list(set(hashes)),
    )
    found: dict[str, Any] = {r["content_hash"]: r["embedding"] for r in rows}
    missing = list(dict.fromkeys(h for h in hashes if h not in found))
    if missing:
        text_of = dict(zip(hashes, texts, strict=True))
        vectors = await embedder.embed([text_of[h] for h in missing])
        await db.executemany(
            "INSERT INTO embedding_cache (model, content_hash, embedding) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            [(model, h, np.asarray(v, dtype=np.float32)) for h, v in zip(missing, vectors, strict=True)],
        )
        found.update(zip(missing, vectors, strict=True))
    if stats is not None:
        stats.requested += len(texts)
        stats.cache_hits += len(texts) - len(missing)
        stats.computed += len(missing)
    return [_as_list(found[h]) for h in hashes]


def _as_list(vector: Any) -> list[float]:
    # pgvector's codec yields ``Vector`` objects (newer) or numpy arrays (older); embedders yield lists.
    if hasattr(vector, "to_list"):
        return vector.to_list()
    return np.asarray(vector, dtype=np.float32).tolist()
