"""MiniLM embedding throughput for ~100-word texts at several batch sizes.

    python bench/embeddings.py [--texts N] [--threads T]

Texts are 100-word windows of a real Critical Role transcript (../shared/data/crd3, CC BY-SA 4.0); without
that data, generated 100-word texts are used and the table says so. Each figure is the median of --runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import time
from pathlib import Path

from memory.providers.embeddings import MiniLMEmbedder

EPISODE = Path(__file__).resolve().parents[2] / "shared" / "data" / "crd3" / "episodes" / "C1E001.json"
WORDS_PER_TEXT = 100
BATCH_SIZES = (1, 8, 16, 32, 64)


def load_texts(count: int) -> tuple[list[str], str]:
    if EPISODE.exists():
        turns = json.loads(EPISODE.read_text(encoding="utf-8"))["TURNS"]
        words = " ".join(u for turn in turns for u in turn["UTTERANCES"]).split()
        source = f"CRD3 {EPISODE.stem}"
    else:
        rng = random.Random(7)
        vocab = ["the", "party", "dragon", "sword", "tavern", "whispers", "north", "knight", "rolls", "spell"]
        words = [rng.choice(vocab) for _ in range(WORDS_PER_TEXT * count)]
        source = "generated words (CRD3 data not found)"
    starts = range(0, len(words) - WORDS_PER_TEXT + 1, WORDS_PER_TEXT)
    return [" ".join(words[i : i + WORDS_PER_TEXT]) for i in starts][:count], source


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=192, help="texts embedded per batch size")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per batch size (median shown)")
    parser.add_argument("--threads", type=int, default=None, help="onnxruntime intra-op threads")
    args = parser.parse_args()

    texts, source = load_texts(args.texts)
    embedder = MiniLMEmbedder(threads=args.threads)
    started = time.perf_counter()
    await embedder.embed(["warm up: load the model and tokenizer"])
    load_s = time.perf_counter() - started
    tokenizer = embedder._load()[1]
    tokens = [len(e.ids) for e in tokenizer.encode_batch(texts)]

    print(f"MiniLM {embedder.model_name} int8 ONNX, {os.cpu_count()} CPUs, {platform.machine()}")
    print(f"{len(texts)} texts of {WORDS_PER_TEXT} words from {source}")
    print(f"tokens per text: mean {statistics.mean(tokens):.0f}, max {max(tokens)}; model load {load_s:.2f} s")
    print()
    timings: dict[int, list[float]] = {size: [] for size in BATCH_SIZES}
    # Round-robin over batch sizes, so a burst of load from another process hits every size alike.
    for _ in range(args.runs):
        for size in BATCH_SIZES:
            embedder.batch_size = size
            started = time.perf_counter()
            await embedder.embed(texts)
            timings[size].append(time.perf_counter() - started)

    print(f"{'batch':>5}  {'embeddings/s':>12}  {'ms/text':>8}  {'total s':>8}")
    for size in BATCH_SIZES:
        elapsed = statistics.median(timings[size])
        rate, ms = len(texts) / elapsed, 1000 * elapsed / len(texts)
        print(f"{size:>5}  {rate:>12.1f}  {ms:>8.1f}  {elapsed:>8.2f}")


if __name__ == "__main__":
    asyncio.run(main())
