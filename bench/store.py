"""Store benchmark: bulk-load 10k entities, 100k L1 entries and 100k chunks, then time the memory API's queries.

    python bench/store.py [--entities 10000] [--facts 30000] [--entries 100000] [--chunks 100000] [--queries 300]

Runs on a throw-away embedded PostgreSQL under /tmp. L1 text comes from the real Critical Role transcripts in
../shared/data/crd3 when present (synthetic sentences otherwise); vectors are clustered synthetic 384-d unit
vectors (real embeddings cluster by topic; uniform random vectors would flatter nothing and mislead HNSW).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import numpy as np

from memory.db import EmbeddedPostgres, EmbeddingSpec, create_pool, migrate
from memory.store import Memory

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "crd3" / "episodes"
TYPES = ["npc", "place", "item", "faction", "quest", "event", "concept", "player"]
SYLLABLES = ["el", "drin", "ax", "kor", "vash", "iron", "hold", "mir", "ath", "zen", "tal", "gor", "ul", "wyn"]


def real_lines() -> list[tuple[str, str]]:
    lines = []
    for path in sorted(DATA.glob("*.json")):
        for turn in json.loads(path.read_text())["TURNS"]:
            text = " ".join(turn["UTTERANCES"]).strip()
            if text:
                lines.append((turn["NAMES"][0].title(), text))
    return lines


def synthetic_lines(n: int, rng: random.Random) -> list[tuple[str, str]]:
    words = "the dragon tavern sword gold castle night road king goblin spell door map ship storm".split()
    return [("Player", " ".join(rng.choices(words, k=15))) for _ in range(n)]


def clustered_vectors(n: int, dim: int, rng: np.random.Generator, clusters: int = 500) -> np.ndarray:
    centroids = rng.standard_normal((clusters, dim)).astype(np.float32)
    v = centroids[rng.integers(0, clusters, n)] + 0.6 * rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


async def timed(label: str, fn: Callable[[], Awaitable[object]], n: int) -> tuple[str, float, float, float]:
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - t) * 1000)
    samples.sort()
    p95 = samples[int(0.95 * (len(samples) - 1))]
    return label, statistics.median(samples), p95, samples[-1]


async def main(args: argparse.Namespace) -> None:
    root = Path(tempfile.mkdtemp(prefix="lk-bench-store-", dir="/tmp"))
    server = EmbeddedPostgres(root)
    dsn = server.start()
    rng = random.Random(7)
    nrng = np.random.default_rng(7)
    try:
        pool = await create_pool(dsn, max_size=4)
        await migrate(pool, EmbeddingSpec("all-MiniLM-L6-v2", 384))
        memory = Memory(pool)
        camp = await memory.campaigns().create("Bench")
        mem = memory.campaign(camp.id)
        await memory.campaigns(99).create("Other guild")  # a second campaign, as in a shared deployment

        loads: list[tuple[str, int, float]] = []
        # entities + relationships ------------------------------------------------------------------------
        t = time.perf_counter()
        names = sorted(
            {"".join(rng.choices(SYLLABLES, k=rng.randint(2, 4))).title() + f" {i}" for i in range(args.entities)}
        )
        async with pool.acquire() as conn:
            await conn.copy_records_to_table(
                "entities",
                columns=["campaign_id", "type", "name"],
                records=[(camp.id, TYPES[i % len(TYPES)], n) for i, n in enumerate(names)],
            )
            ids = [r[0] for r in await conn.fetch("SELECT id FROM entities WHERE campaign_id = $1", camp.id)]
            await conn.copy_records_to_table(
                "entity_aliases",
                columns=["campaign_id", "entity_id", "alias"],
                records=[(camp.id, eid, f"alias {eid}") for eid in ids[::3]],
            )
            rels = {
                (rng.choice(ids), rng.choice(["knows", "ally_of", "located_in", "owns"]), rng.choice(ids))
                for _ in range(args.facts or args.entities * 3)
            }
            await conn.copy_records_to_table(
                "relationships",
                columns=["campaign_id", "source_id", "type", "target_id"],
                records=[(camp.id, a, ty, b) for a, ty, b in rels if a != b],
            )
            # what players must not see, and history: one fact in 20 secret, one in 10 closed by the next one
            await conn.execute(
                "UPDATE relationships SET visibility = 'secret' WHERE campaign_id = $1 AND id % 20 = 0", camp.id
            )
            await conn.execute(
                """
                UPDATE relationships r SET valid_to = now(), superseded_by = n.id FROM relationships n
                WHERE r.campaign_id = $1 AND r.id % 10 = 1 AND n.campaign_id = $1 AND n.id = r.id + 1
                """,
                camp.id,
            )
        loads.append(
            ("entities + aliases + relationships", len(ids) + len(ids[::3]) + len(rels), time.perf_counter() - t)
        )

        # L1 ------------------------------------------------------------------------------------------------
        lines = real_lines() if DATA.exists() else []
        source = "CRD3 transcripts" if lines else "synthetic (data not found)"
        if not lines:
            lines = synthetic_lines(5000, rng)
        n_sessions = max(1, args.entries // 1000)
        sessions = [(await mem.log.start_session(f"Session {i + 1}")).id for i in range(n_sessions)]
        t = time.perf_counter()
        async with pool.acquire() as conn:
            records = []
            for i in range(args.entries):
                speaker, text = lines[i % len(lines)]
                sid = sessions[i % n_sessions]
                seq = i // n_sessions + 1
                records.append((camp.id, sid, seq, speaker, text, text, seq * 4.0, seq * 4.0 + 3.5))
            await conn.copy_records_to_table(
                "session_entries",
                columns=["campaign_id", "session_id", "seq", "speaker", "raw_text", "text", "start_s", "end_s"],
                records=records,
            )
        loads.append((f"L1 entries ({source})", args.entries, time.perf_counter() - t))

        # L2 ------------------------------------------------------------------------------------------------
        vectors = clustered_vectors(args.chunks, 384, nrng)
        t = time.perf_counter()
        async with pool.acquire() as conn:
            await conn.execute("DROP INDEX chunks_embedding")  # bulk load first, then build the HNSW graph once
            await conn.copy_records_to_table(
                "chunks",
                columns=[
                    "campaign_id",
                    "session_id",
                    "key",
                    "text",
                    "content_hash",
                    "embedding",
                    "speakers",
                    "entity_ids",
                    "start_s",
                    "end_s",
                ],
                records=[
                    (
                        camp.id,
                        sessions[i % n_sessions],
                        f"k{i}",
                        lines[i % len(lines)][1][:500],
                        f"h{i}",
                        vectors[i],
                        [lines[i % len(lines)][0]],
                        [ids[i % len(ids)]],
                        i * 1.0,
                        i * 1.0 + 30,
                    )
                    for i in range(args.chunks)
                ],
            )
            copied = time.perf_counter() - t
            await conn.execute("SET maintenance_work_mem = '1GB'")
            await conn.execute("CREATE INDEX chunks_embedding ON chunks USING hnsw (embedding vector_cosine_ops)")
            await conn.execute("ANALYZE")
        loads.append(("L2 chunks (COPY)", args.chunks, copied))
        loads.append(("L2 HNSW index build", args.chunks, time.perf_counter() - t - copied))

        # queries -------------------------------------------------------------------------------------------
        words = ["dragon", "tavern", "sword", "gold", "castle", "Vex", "Grog", "Pike", "beer", "door", "arrow"]
        queries = clustered_vectors(args.queries, 384, np.random.default_rng(11))
        qi = iter(range(10**9))
        n = args.queries
        results = [
            await timed("entity lookup by name", lambda: mem.graph.find_entity(rng.choice(names).lower()), n),
            await timed("entity lookup by alias", lambda: mem.graph.find_entity(f"ALIAS {rng.choice(ids[::3])}"), n),
            await timed("L1 recent window (5 min)", lambda: mem.log.recent(rng.choice(sessions), 300), n),
            await timed("L1 full-text search", lambda: mem.log.search(rng.choice(words), limit=10), n),
            await timed(
                "L1 full-text, session filter",
                lambda: mem.log.search(rng.choice(words), session_id=rng.choice(sessions)),
                n,
            ),
            await timed("L2 top-10 vector", lambda: mem.semantic.nearest(queries[next(qi) % n], k=10), n),
            await timed(
                "L2 top-10 vector, session filter",
                lambda: mem.semantic.nearest(queries[next(qi) % n], k=10, session_id=rng.choice(sessions)),
                n,
            ),
            await timed("L3 3-hop traversal, players", lambda: mem.graph.traverse(rng.choice(ids), max_depth=3), n),
            await timed(
                "L3 3-hop traversal, DM",
                lambda: mem.graph.traverse(rng.choice(ids), max_depth=3, include_secret=True),
                n,
            ),
            await timed("L3 identity snapshot, players", lambda: mem.graph.snapshot(rng.choice(names)), n),
        ]
        size = await pool.fetchval("SELECT pg_size_pretty(pg_database_size(current_database()))")
        await pool.close()
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)

    print(
        f"\nLoad ({args.entities} entities, {len(rels)} facts, {args.entries} entries, {args.chunks} chunks; "
        f"database {size})"
    )
    print(f"| {'what':<44} | {'rows':>8} | {'seconds':>8} | {'rows/s':>9} |")
    print(f"|{'-' * 46}|{'-' * 10}|{'-' * 10}|{'-' * 11}|")
    for label, rows, secs in loads:
        print(f"| {label:<44} | {rows:>8} | {secs:>8.2f} | {rows / secs:>9.0f} |")
    print(f"\nQueries ({n} each, through the memory API; target p95 <= 20 ms)")
    print(f"| {'query':<36} | {'p50 ms':>7} | {'p95 ms':>7} | {'max ms':>7} |")
    print(f"|{'-' * 38}|{'-' * 9}|{'-' * 9}|{'-' * 9}|")
    for label, p50, p95, worst in results:
        print(f"| {label:<36} | {p50:>7.2f} | {p95:>7.2f} | {worst:>7.2f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--facts", type=int, default=None, help="relationships drawn (default: 3 per entity)")
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    asyncio.run(main(parser.parse_args()))
