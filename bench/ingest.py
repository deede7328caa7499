"""Ingestion benchmark: real Critical Role episodes through the whole pipeline, offline.

    python bench/ingest.py [--episodes 1,4] [--recall-queries 200]
    python bench/ingest.py --chunk-jobs 2000,20000,100000

For each episode on a throw-away embedded PostgreSQL under /tmp: the L1 path (stage-1 correction against the
campaign's wiki entities + write + enqueue), then the jobs (chunk + MiniLM embed, offline extraction, summary)
in-process; prints utterances/s, chunks/s, wall time and database size. Then recall@5/@10 of the CRD3
summary-aligned turns for full text only, vector only and both.

``--chunk-jobs`` instead times one chunk job after a 500-line batch (as a file import flushes) in sessions of
the given lengths, made of real turns, with a stand-in for the model: what a job costs besides embedding.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import shutil
import tempfile
import time
from pathlib import Path

from memory import jobs
from memory.db import EmbeddedPostgres, EmbeddingSpec, create_pool, migrate
from memory.errors import MemoryError_
from memory.ingest import ingest_file
from memory.models import EntityIn, EntityType, EntryIn
from memory.providers.embeddings import MiniLMEmbedder
from memory.recall import recall
from memory.recorder import Utterance
from memory.store import CampaignMemory, Memory
from memory.transcripts import Line, read_transcript

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "crd3"


def table(rows: list[list[object]], headers: list[str]) -> None:
    cells = [headers, *[[str(c) for c in r] for r in rows]]
    widths = [max(len(str(r[i])) for r in cells) for i in range(len(headers))]
    for n, row in enumerate(cells):
        print("  ".join(str(c).rjust(w) for c, w in zip(row, widths, strict=True)))
        if n == 0:
            print("  ".join("-" * w for w in widths))


async def load_wiki_entities(mem: CampaignMemory, limit: int = 300) -> None:
    wiki = json.loads((DATA / "crd3_wiki_entities.json").read_text())
    wiki.sort(key=lambda e: -e.get("mentions", 0))
    seen: set[str] = set()
    for e in wiki[:limit]:
        name = e["canonical"].strip()
        if name.lower() in seen or not name:
            continue
        seen.add(name.lower())
        # A name clashing with another entity's alias is just skipped.
        with contextlib.suppress(MemoryError_):
            await mem.graph.add_entity(EntityIn(name=name, type=EntityType.concept))


async def bench_episode(path: Path, embedder: MiniLMEmbedder, recall_queries: int) -> tuple[list[object], dict]:
    root = Path(tempfile.mkdtemp(prefix="lk-bench-ingest-", dir="/tmp"))
    server = EmbeddedPostgres(root)
    dsn = server.start()
    try:
        pool = await create_pool(dsn)
        await migrate(pool, EmbeddingSpec("all-MiniLM-L6-v2", 384))
        memory = Memory(pool)
        campaign = await memory.campaigns().create("Critical Role")
        mem = memory.campaign(campaign.id)
        await load_wiki_entities(mem)
        started = time.perf_counter()
        report = await ingest_file(mem, path, batch_size=500)
        ctx = jobs.JobContext(memory=memory, embedder=embedder, embedding_model=MiniLMEmbedder.model_name)
        t_jobs = time.perf_counter()
        await jobs.run_workers(pool, None, drain=True, ctx=ctx)
        jobs_s = time.perf_counter() - t_jobs
        wall = time.perf_counter() - started
        size = await pool.fetchval("SELECT pg_size_pretty(pg_database_size(current_database()))")
        row = [
            path.stem,
            report.lines,
            f"{report.lines / report.l1_seconds:,.0f}",
            report.corrections,
            ctx.chunks_written,
            f"{ctx.chunks_written / jobs_s:.1f}",
            f"{wall:.1f}",
            size,
        ]
        quality = await recall_quality(mem, path.stem, embedder, recall_queries)
        await pool.close()
        return row, quality
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


async def recall_quality(mem: CampaignMemory, episode: str, embedder: MiniLMEmbedder, n: int) -> dict:
    """recall@k: a hit counts when one of its entries is a turn the summary sentence was aligned to."""
    golds = []
    with (DATA / "aligned_index.dev.jsonl").open() as fh:
        for line in fh:
            obj = json.loads(line)
            if obj["episode"] == episode and obj["score"] > 0 and obj["turn_end"] - obj["turn_start"] <= 30:
                golds.append(obj)
    random.Random(0).shuffle(golds)
    golds = golds[:n]
    if not golds:
        return {}
    session = (await mem.log.sessions())[0]
    by_seq = {e.id: e.seq - 1 for e in await mem.log.session_entries(session.id)}  # seq 1 = turn index 0
    vectors = await embedder.embed([g["summary"] for g in golds])
    out: dict[str, tuple[float, float]] = {}
    for mode in ("fulltext", "vector", "both"):
        at5 = at10 = 0
        for g, v in zip(golds, vectors, strict=True):
            hits = await recall(mem, embedder, g["summary"], limit=10, mode=mode, embedding=v)  # type: ignore[arg-type]
            gold = set(range(g["turn_start"], g["turn_end"] + 1))
            found = [bool(gold & {by_seq.get(i, -1) for i in h.entry_ids}) for h in hits]
            at5 += any(found[:5])
            at10 += any(found[:10])
        out[mode] = (at5 / len(golds), at10 / len(golds))
    out["n"] = len(golds)  # type: ignore[assignment]
    return out


class _NoInference:
    """Stands in for the model: one vector for every text."""

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [[1.0] + [0.0] * 383 for _ in texts]


async def _append(mem: CampaignMemory, session_id: int, turns: list[Utterance], start: int, count: int) -> None:
    """Lines ``start`` to ``start + count`` of a long session made of ``turns`` over and over, 4 s apart."""
    lines = [turns[(start + i) % len(turns)] for i in range(count)]
    await mem.log.write_many(
        session_id, [EntryIn(speaker=u.speaker, text=u.text, start_s=4.0 * (start + i)) for i, u in enumerate(lines)]
    )


async def bench_chunk_jobs(sizes: list[int], batch: int = 500) -> None:
    turns = [
        item.utterance
        for path in sorted((DATA / "episodes").glob("*.json"))[:40]
        for item in read_transcript(path)
        if isinstance(item, Line)
    ]
    root = Path(tempfile.mkdtemp(prefix="lk-bench-chunks-", dir="/tmp"))
    server = EmbeddedPostgres(root)
    try:
        pool = await create_pool(server.start())
        await migrate(pool, EmbeddingSpec("all-MiniLM-L6-v2", 384))
        memory = Memory(pool)
        ctx = jobs.JobContext(memory=memory, embedder=_NoInference(), embedding_model="none")  # type: ignore[arg-type]
        rows = []
        for size in sizes:
            mem = memory.campaign((await memory.campaigns().create(f"{size} lines")).id)
            await load_wiki_entities(mem)
            session = await mem.log.start_session("Long")

            for start in range(0, size, 5000):
                await _append(mem, session.id, turns, start, min(5000, size - start))
            started = time.perf_counter()
            await jobs.chunk_session(ctx, mem.campaign_id, session.id)
            first_s = time.perf_counter() - started
            times = []
            for n in range(3):
                await _append(mem, session.id, turns, size + n * batch, batch)
                started = time.perf_counter()
                await jobs.chunk_session(ctx, mem.campaign_id, session.id)
                times.append(time.perf_counter() - started)
            rows.append([f"{size:,}", f"{first_s:.1f}", " / ".join(f"{t:.2f}" for t in times)])
        await pool.close()
        table(rows, ["session lines", "first job s (all lines)", f"next three jobs s ({batch} new lines each)"])
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", default="1,4", help="how many episodes per run, e.g. 1,4")
    parser.add_argument("--recall-queries", type=int, default=100)
    parser.add_argument("--chunk-jobs", help="time chunk jobs in sessions of these lengths instead, e.g. 2000,20000")
    args = parser.parse_args()
    if args.chunk_jobs:
        await bench_chunk_jobs([int(x) for x in args.chunk_jobs.split(",")])
        return
    episodes = sorted((DATA / "episodes").glob("*.json"))
    if not episodes:
        print("skipped: data not found")
        return
    embedder = MiniLMEmbedder()
    rows, quality_rows = [], []
    for count in (int(x) for x in args.episodes.split(",")):
        for path in episodes[:count]:
            row, quality = await bench_episode(path, embedder, args.recall_queries)
            rows.append([count, *row])
            if quality:
                quality_rows.append(
                    [path.stem, quality["n"]]
                    + [f"{quality[m][0]:.2f} / {quality[m][1]:.2f}" for m in ("fulltext", "vector", "both")]
                )
        print()
    headers = ["run", "episode", "turns", "L1 utt/s", "corrected", "chunks", "chunks/s", "wall s", "db size"]
    table(rows, headers)
    print()
    table(quality_rows, ["episode", "queries", "full text @5/@10", "vector @5/@10", "both @5/@10"])


if __name__ == "__main__":
    asyncio.run(main())
