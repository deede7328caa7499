"""Campaign-file loading: parse, first load and reload of the real example file and of generated larger ones.

    python bench/campaign_load.py [--sizes 1000,6000,20000]

Runs on a throw-away embedded PostgreSQL under /tmp. The real file is campaigns/examples/critical_role.yaml
(900 entities); a generated file of N entities gives each an alias, an attribute and a description, with N/2
relationships. A load holds the campaign's graph lock, so its time is how long play waits to write facts.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
from pathlib import Path

from campaigns.files import parse_campaign_file
from campaigns.load import apply_campaign_file
from memory.db import EmbeddedPostgres, EmbeddingSpec, create_pool, migrate
from memory.store import Memory

EXAMPLE = Path(__file__).resolve().parents[1] / "campaigns" / "examples" / "critical_role.yaml"


def generated(n: int) -> str:
    lines = ["entities:"]
    lines += [
        f"  - {{name: Entity {i:05d}, type: npc, aliases: [Alias {i:05d}], attributes: {{age: {i}}}, "
        f"description: Someone number {i}}}"
        for i in range(n)
    ]
    lines.append("relationships:")
    lines += [f"  - {{source: Entity {i:05d}, type: knows, target: Entity {i + 1:05d}}}" for i in range(0, n - 1, 2)]
    return "\n".join(lines) + "\n"


async def run(sizes: list[int]) -> None:
    files = [("critical_role.yaml", EXAMPLE.read_text())] + [(f"generated {n:,}", generated(n)) for n in sizes]
    root = Path(tempfile.mkdtemp(prefix="lk-bench-load-"))
    server = EmbeddedPostgres(root)
    try:
        pool = await create_pool(server.start(), max_size=2)
        await migrate(pool, EmbeddingSpec("all-MiniLM-L6-v2", 384))
        memory = Memory(pool)
        print(f"{'file':<20} {'entities':>8} {'KB':>6} {'parse s':>8} {'first load s':>13} {'reload s':>9}")
        for label, text in files:
            mem = memory.campaign((await memory.campaigns().create(label)).id)
            started = time.perf_counter()
            parsed = parse_campaign_file(text, label)
            parse_s = time.perf_counter() - started
            started = time.perf_counter()
            await apply_campaign_file(mem, parsed)
            first_s = time.perf_counter() - started
            started = time.perf_counter()
            again = await apply_campaign_file(mem, parsed)
            reload_s = time.perf_counter() - started
            assert not again.changed, again.summary()
            # A database in use has statistics (autovacuum): the next campaign is new to them, as in real life.
            await pool.execute("ANALYZE")
            print(
                f"{label:<20} {len(parsed.entities):>8,} {len(text.encode()) // 1024:>6,} {parse_s:>8.2f} "
                f"{first_s:>13.2f} {reload_s:>9.2f}"
            )
        await pool.close()
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,6000,20000", help="generated file sizes, entities (comma-separated)")
    args = parser.parse_args()
    asyncio.run(run([int(s) for s in args.sizes.split(",") if s]))


if __name__ == "__main__":
    main()
