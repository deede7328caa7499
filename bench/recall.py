"""Recall quality on LongMemEval: do the hits for a question cover the turns that hold its answer?

    python bench/recall.py [--questions 60] [--seed 0]

A sample of LongMemEval questions (../shared/data/longmemeval/longmemeval_oracle.json) shares one campaign: the
evidence sessions of every sampled question go into it through the real pipeline (recorder, chunk + MiniLM
embed), so each question is asked against all of them. A question is a hit at k when one of the first k results
covers a turn marked ``has_answer``. Reported for full text only, vector only and both (reciprocal-rank fusion),
overall and per question type.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from memory import jobs
from memory.db import EmbeddedPostgres, EmbeddingSpec, create_pool, migrate
from memory.providers.embeddings import MiniLMEmbedder
from memory.recall import recall
from memory.recorder import SessionRecorder, Utterance
from memory.store import Memory

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "longmemeval" / "longmemeval_oracle.json"
MODES = ("fulltext", "vector", "both")


def sample(questions: list[dict], n: int, seed: int) -> list[dict]:
    """An even share of every question type (abstention questions have no evidence turns: left out)."""
    by_type: dict[str, list[dict]] = defaultdict(list)
    for q in questions:
        if not q["question_id"].endswith("_abs"):
            by_type[q["question_type"]].append(q)
    rng = random.Random(seed)
    picked: list[dict] = []
    per_type = max(1, n // len(by_type))
    for qs in by_type.values():
        picked += rng.sample(qs, min(per_type, len(qs)))
    return picked


async def main(args: argparse.Namespace) -> None:
    if not DATA.exists():
        print(f"skipped: data not found ({DATA})")
        return
    questions = sample(json.loads(DATA.read_text()), args.questions, args.seed)
    root = Path(tempfile.mkdtemp(prefix="lk-bench-recall-", dir="/tmp"))
    server = EmbeddedPostgres(root)
    dsn = server.start()
    embedder = MiniLMEmbedder()
    try:
        pool = await create_pool(dsn)
        await migrate(pool, EmbeddingSpec(embedder.model_name, embedder.dim))
        memory = Memory(pool)
        mem = memory.campaign((await memory.campaigns().create("LongMemEval")).id)
        gold: dict[str, set[str]] = {}
        turns = 0
        t0 = time.perf_counter()
        for q in questions:
            gold[q["question_id"]] = set()
            for sid, session in zip(q["haystack_session_ids"], q["haystack_sessions"], strict=True):
                rec = await SessionRecorder.start(mem, f"{q['question_id']}/{sid}", batch_size=500)
                for i, turn in enumerate(session):
                    ref = f"{q['question_id']}/{sid}/{i}"
                    await rec.add(Utterance(speaker=turn["role"], text=turn["content"], seq=i + 1, ref=ref))
                    if turn.get("has_answer"):
                        gold[q["question_id"]].add(ref)
                    turns += 1
                await rec.end()
        ctx = jobs.JobContext(memory=memory, embedder=embedder, embedding_model=embedder.model_name)
        await jobs.run_workers(pool, None, drain=True, ctx=ctx)
        ingest_s = time.perf_counter() - t0

        hits: dict[str, dict[str, list[tuple[bool, bool]]]] = {m: defaultdict(list) for m in MODES}
        vectors = await embedder.embed([q["question"] for q in questions])
        for q, v in zip(questions, vectors, strict=True):
            for mode in MODES:
                found = await recall(mem, embedder, q["question"], limit=10, mode=mode, embedding=v)  # type: ignore[arg-type]
                covered = [bool(gold[q["question_id"]] & set(h.refs)) for h in found]
                hits[mode][q["question_type"]].append((any(covered[:5]), any(covered[:10])))
        await pool.close()
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)

    print(f"\nLongMemEval oracle: {len(questions)} questions, {turns} turns in one campaign "
          f"(ingested and embedded in {ingest_s:.0f} s); recall@5 / recall@10 of the has_answer turns\n")  # fmt: skip
    types = sorted(hits["both"])
    print(f"| {'question type':<27} | {'n':>3} | " + " | ".join(f"{m:^11}" for m in MODES) + " |")
    print(f"|{'-' * 29}|{'-' * 5}|" + "|".join("-" * 13 for _ in MODES) + "|")
    for t in [*types, "all"]:
        cells = []
        for m in MODES:
            rows = [r for tt in types for r in hits[m][tt]] if t == "all" else hits[m][t]
            cells.append(f"{sum(a for a, _ in rows) / len(rows):.2f} / {sum(b for _, b in rows) / len(rows):.2f}")
        n = sum(len(hits["both"][tt]) for tt in types) if t == "all" else len(hits["both"][t])
        print(f"| {t:<27} | {n:>3} | " + " | ".join(f"{c:^11}" for c in cells) + " |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    asyncio.run(main(parser.parse_args()))
