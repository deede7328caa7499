"""L2, the semantic index: embedded windows and lines of the session log, searched by cosine similarity (pgvector)."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import asyncpg

from memory.db import Executor
from memory.models import Chunk, ChunkHit, ChunkIn

_CHUNK_COLUMNS = "id, campaign_id, session_id, key, text, entry_ids, speakers, entity_ids, topics, start_s, end_s"


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _chunk(row: asyncpg.Record, cls: type[Chunk] = Chunk) -> Chunk:
    return cls(**{k: row[k] for k in cls.model_fields})


class SemanticIndex:
    def __init__(self, db: Executor, campaign_id: int) -> None:
        self.db = db
        self.campaign_id = campaign_id

    async def upsert(self, chunks: Sequence[ChunkIn]) -> None:
        """Insert or replace chunks by key; a chunk whose text and metadata are unchanged is left alone. A chunk
        without an embedding (windows since lines have vectors) is kept for its lines, speakers and mentions."""
        if not chunks:
            return
        import numpy as np  # 0.1 s to import: only where vectors are written or searched

        await self.db.executemany(
            """
            INSERT INTO chunks AS c (campaign_id, session_id, key, text, content_hash, embedding, entry_ids,
                                     speakers, entity_ids, topics, start_s, end_s)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
            ON CONFLICT (campaign_id, key) DO UPDATE SET
                session_id = EXCLUDED.session_id, text = EXCLUDED.text, content_hash = EXCLUDED.content_hash,
                embedding = EXCLUDED.embedding, entry_ids = EXCLUDED.entry_ids, speakers = EXCLUDED.speakers,
                entity_ids = EXCLUDED.entity_ids, topics = EXCLUDED.topics, start_s = EXCLUDED.start_s,
                end_s = EXCLUDED.end_s
            WHERE (c.content_hash, c.entry_ids, c.speakers, c.entity_ids, c.topics)
                IS DISTINCT FROM (EXCLUDED.content_hash, EXCLUDED.entry_ids, EXCLUDED.speakers,
                                  EXCLUDED.entity_ids, EXCLUDED.topics)
            """,
            [
                (
                    self.campaign_id,
                    c.session_id,
                    c.key,
                    c.text,
                    content_hash(c.text),
                    None if c.embedding is None else np.asarray(c.embedding, dtype=np.float32),
                    c.entry_ids,
                    c.speakers,
                    c.entity_ids,
                    c.topics,
                    c.start_s,
                    c.end_s,
                )
                for c in chunks
            ],
        )

    async def hashes(self, keys: Sequence[str]) -> dict[str, str]:
        """Content hashes of stored chunks by key, so callers can skip re-embedding unchanged text."""
        rows = await self.db.fetch(
            "SELECT key, content_hash FROM chunks WHERE campaign_id = $1 AND key = ANY($2::text[])",
            self.campaign_id,
            list(keys),
        )
        return {r["key"]: r["content_hash"] for r in rows}

    async def session_chunks(self, session_id: int) -> list[Chunk]:
        rows = await self.db.fetch(
            f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE campaign_id = $1 AND session_id = $2 ORDER BY start_s, id",
            self.campaign_id,
            session_id,
        )
        return [_chunk(r) for r in rows]

    async def drop(self, session_id: int, keys: Sequence[str]) -> int:
        """Delete the session's chunks of these keys (windows that no longer exist); returns how many went."""
        if not keys:
            return 0
        status = await self.db.execute(
            "DELETE FROM chunks WHERE campaign_id = $1 AND session_id = $2 AND key = ANY($3::text[])",
            self.campaign_id,
            session_id,
            list(keys),
        )
        return int(status.split()[-1])

    async def nearest(
        self,
        embedding: Sequence[float],
        *,
        k: int = 10,
        session_id: int | None = None,
        speakers: Sequence[str] | None = None,
        excluded: Collection[tuple[str, int]] = (),
        entity_id: int | None = None,
        start_s: float | None = None,
        end_s: float | None = None,
    ) -> list[ChunkHit]:
        """The ``k`` chunks closest by cosine, filters applied in SQL (``speakers``: windows where any of them
        speaks, any case, but for those ``excluded``, (speaker lowercased, session id) pairs, in that session).

        The HNSW scan is iterative (``hnsw.iterative_scan`` set on every connection), so a selective filter
        still fills ``k`` results; the outer ORDER BY restores exact order after the relaxed scan."""
        import numpy as np  # see upsert

        rows = await self.db.fetch(
            f"""
            SELECT * FROM (
                SELECT {_CHUNK_COLUMNS}, embedding <=> $2 AS distance FROM chunks
                WHERE campaign_id = $1 AND embedding IS NOT NULL
                  AND ($3::bigint IS NULL OR session_id = $3)
                  AND ($4::text[] IS NULL OR EXISTS (
                      SELECT FROM unnest(speakers) s WHERE lower(s) = ANY($4) AND NOT EXISTS (
                          SELECT FROM unnest($9::text[], $10::bigint[]) AS x(speaker, session_id)
                          WHERE x.session_id = chunks.session_id AND x.speaker = lower(s))))
                  AND ($5::bigint IS NULL OR entity_ids @> ARRAY[$5::bigint])
                  AND ($6::float8 IS NULL OR end_s >= $6)
                  AND ($7::float8 IS NULL OR start_s <= $7)
                ORDER BY distance LIMIT $8
            ) hits ORDER BY distance
            """,
            self.campaign_id,
            np.asarray(embedding, dtype=np.float32),
            session_id,
            None if speakers is None else [s.lower() for s in speakers],
            entity_id,
            start_s,
            end_s,
            k,
            [speaker for speaker, _ in excluded],
            [session for _, session in excluded],
        )
        return [ChunkHit(**{k_: r[k_] for k_ in Chunk.model_fields}, score=1.0 - float(r["distance"])) for r in rows]

    # line vectors -------------------------------------------------------------------------------------------------

    async def line_hashes(self, entry_ids: Sequence[int]) -> dict[int, str]:
        """Content hashes of the line vectors stored for these lines (a line too short to embed has one too)."""
        rows = await self.db.fetch(
            "SELECT entry_id, content_hash FROM line_vectors WHERE campaign_id = $1 AND entry_id = ANY($2::bigint[])",
            self.campaign_id,
            list(entry_ids),
        )
        return {r["entry_id"]: r["content_hash"] for r in rows}

    async def upsert_lines(self, lines: Sequence[LineVectorIn]) -> None:
        """Insert or replace lines' vectors (``None``: a line too short to embed alone, recorded as chunked)."""
        if not lines:
            return
        import numpy as np  # see upsert

        await self.db.executemany(
            """
            INSERT INTO line_vectors (campaign_id, entry_id, session_id, content_hash, embedding)
            VALUES ($1, $2, $3, $4, $5::vector::halfvec)
            ON CONFLICT (campaign_id, entry_id) DO UPDATE SET
                content_hash = EXCLUDED.content_hash, embedding = EXCLUDED.embedding
            """,
            [
                (
                    self.campaign_id,
                    line.entry_id,
                    line.session_id,
                    line.content_hash,
                    None if line.embedding is None else np.asarray(line.embedding, dtype=np.float32),
                )
                for line in lines
            ],
        )

    async def mark_talk(self, session_id: int, talk: Mapping[int, str]) -> None:
        """Set which of the session's lines are in its pre-show, a break or its after-show (``talk``: entry id to
        kind), clearing the others; only rows that change are written."""
        await self.db.execute(
            """
            UPDATE line_vectors l SET talk = t.talk FROM (
                SELECT v.entry_id, x.talk FROM line_vectors v
                LEFT JOIN unnest($3::bigint[], $4::text[]) AS x(entry_id, talk) ON x.entry_id = v.entry_id
                WHERE v.campaign_id = $1 AND v.session_id = $2
            ) t
            WHERE l.campaign_id = $1 AND l.entry_id = t.entry_id AND l.talk IS DISTINCT FROM t.talk
            """,
            self.campaign_id,
            session_id,
            list(talk),
            list(talk.values()),
        )

    async def nearest_lines(
        self,
        embedding: Sequence[float],
        *,
        k: int = 10,
        session_id: int | None = None,
        speakers: Sequence[str] | None = None,
        excluded: Collection[tuple[str, int]] = (),
    ) -> list[LineHit]:
        """The ``k`` lines closest by cosine, of session ``session_id`` and of ``speakers`` (any case) when given,
        but for a speaker's lines of a session ``excluded`` names ((speaker lowercased, session id) pairs); empty
        when the campaign's lines have no vectors yet (chunked before there were any: the caller falls back to
        windows). Lines a filter keeps are read whole when they are few (:data:`EXACT_SCAN_LINES`), else found by
        the iterative HNSW scan (as :meth:`nearest`)."""
        import numpy as np  # see upsert

        vector = np.asarray(embedding, dtype=np.float32)
        if session_id is None and speakers is None:
            rows = await self.db.fetch(_NEAREST_LINES, self.campaign_id, vector, k)
        else:
            rows = await self.db.fetch(
                _NEAREST_KEPT_LINES,
                self.campaign_id,
                vector,
                session_id,
                None if speakers is None else [s.lower() for s in speakers],
                k,
                [speaker for speaker, _ in excluded],
                [session for _, session in excluded],
                EXACT_SCAN_LINES,
            )
        return [LineHit(r["entry_id"], r["session_id"], 1.0 - float(r["distance"])) for r in rows]


#: A filter keeping at most this many lines has them read whole: exact, a few ms a thousand lines. Above, the HNSW
#: walk finds k of them sooner; below, it can walk most of the graph (bench/campaign_scale.py, 60 sessions, 4
#: queries: the last session 248 → 23 ms; the most-spoken speaker 34 → 100 ms, the cost of deciding).
EXACT_SCAN_LINES = 5_000

_NEAREST_LINES = """
    SELECT * FROM (
        SELECT l.entry_id, l.session_id, l.embedding <=> $2::vector::halfvec AS distance FROM line_vectors l
        WHERE l.campaign_id = $1 AND l.embedding IS NOT NULL
        ORDER BY distance LIMIT $3
    ) hits ORDER BY distance
"""
# The lines the filters keep, up to $8 + 1 of them: at most $8, they are scored one by one; more, the HNSW scan
# filters as it walks. Each branch runs only under its one-time test of "few".
_NEAREST_KEPT_LINES = """
    WITH kept AS MATERIALIZED (
        SELECT e.id FROM session_entries e
        WHERE e.campaign_id = $1 AND ($3::bigint IS NULL OR e.session_id = $3)
          AND ($4::text[] IS NULL OR lower(e.speaker) = ANY($4))
          AND (cardinality($6::text[]) = 0 OR NOT EXISTS (
              SELECT FROM unnest($6::text[], $7::bigint[]) AS x(speaker, session_id)
              WHERE x.session_id = e.session_id AND x.speaker = lower(e.speaker)))
        LIMIT $8::int + 1
    ), few AS (SELECT count(*) <= $8::int AS yes, array_agg(id) AS ids FROM kept)
    SELECT * FROM (
        (SELECT l.entry_id, l.session_id, l.embedding <=> $2::vector::halfvec AS distance FROM line_vectors l
         WHERE (SELECT yes FROM few) AND l.campaign_id = $1 AND l.entry_id = ANY((SELECT ids FROM few)::bigint[])
           AND l.embedding IS NOT NULL
         ORDER BY distance LIMIT $5)
        UNION ALL
        (SELECT l.entry_id, l.session_id, l.embedding <=> $2::vector::halfvec AS distance FROM line_vectors l
         WHERE NOT (SELECT yes FROM few) AND l.campaign_id = $1 AND l.embedding IS NOT NULL
           AND ($3::bigint IS NULL OR l.session_id = $3)
           AND EXISTS (
               SELECT 1 FROM session_entries e
               WHERE e.campaign_id = $1 AND e.id = l.entry_id AND ($4::text[] IS NULL OR lower(e.speaker) = ANY($4))
                 AND NOT EXISTS (
                     SELECT FROM unnest($6::text[], $7::bigint[]) AS x(speaker, session_id)
                     WHERE x.session_id = l.session_id AND x.speaker = lower(e.speaker)))
         ORDER BY distance LIMIT $5)
    ) hits ORDER BY distance
"""


@dataclass(frozen=True, slots=True)
class LineVectorIn:
    """A line's vector as the chunk job writes it: ``content_hash`` of the text embedded (or judged too short)."""

    entry_id: int
    session_id: int
    content_hash: str
    embedding: Sequence[float] | None


@dataclass(frozen=True, slots=True)
class LineHit:
    entry_id: int
    session_id: int
    score: float  # cosine similarity
