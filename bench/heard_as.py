"""Heard-as re-correction: what teaching a heard-as phrase costs on a campaign's stored lines.

    python bench/heard_as.py [--sessions 20] [--lines 5000] [--every 200]
    python bench/heard_as.py --million          # 200 sessions of 5,000 lines

Runs on a throw-away embedded PostgreSQL under /tmp. The lines are Critical Role turns from ../shared/data/crd3
(synthetic sentences when absent), bulk-loaded as stored lines; one in ``--every`` ends with "And from skin jumps
on the table." Then, as `/entity edit Frumpkin heard_as: from skin` does: the reply's count of the lines saying it
(through the full-text index), the edit (its jobs queued, one a session), the jobs themselves (each session's
lines found and corrected again; the first builds the campaign's name index), and the jobs run again, with nothing
left to change. The re-embedding that follows is the chunk jobs' usual work (bench/ingest.py).
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
from pathlib import Path

from memory import jobs
from memory.db import EmbeddedPostgres, EmbeddingSpec, create_pool, migrate
from memory.models import EntityIn, EntityType
from memory.store import Memory

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "crd3" / "episodes"
NAMES = ["Vax'ildan", "Keyleth", "Grog Strongjaw", "Scanlan Shorthalt", "Pike Trickfoot", "Percy", "Vex'ahlia"]
SAID = " And from skin jumps on the table."


def lines() -> list[tuple[str, str]]:
    found = []
    for path in sorted(DATA.glob("*.json")):
        for turn in json.loads(path.read_text())["TURNS"]:
            if text := " ".join(turn["UTTERANCES"]).strip():
                found.append((turn["NAMES"][0].title(), text))
    if found:
        return found
    rng = random.Random(7)
    words = "the dragon tavern sword gold castle night road king goblin spell door map ship storm".split()
    return [("Player", " ".join(rng.choices(words, k=15))) for _ in range(10_000)]


async def main(args: argparse.Namespace) -> None:
    source = lines()
    root = Path(tempfile.mkdtemp(prefix="lk-bench-heard-", dir="/tmp"))
    server = EmbeddedPostgres(root)
    dsn = server.start()
    rows: list[tuple[str, str, float]] = []
    try:
        pool = await create_pool(dsn, max_size=4)
        await migrate(pool, EmbeddingSpec("all-MiniLM-L6-v2", 384))
        memory = Memory(pool)
        camp = await memory.campaigns().create("Bench")
        mem = memory.campaign(camp.id)
        for name in NAMES:
            await mem.graph.add_entity(EntityIn(name=name, type=EntityType.player))
        await mem.graph.add_entity(EntityIn(name="Frumpkin", type=EntityType.npc))
        sessions = [(await mem.log.start_session(f"Session {i + 1}")).id for i in range(args.sessions)]

        t = time.perf_counter()
        saying = 0
        async with pool.acquire() as conn:
            for sid in sessions:
                records = []
                for seq in range(1, args.lines + 1):
                    speaker, text = source[(sid * args.lines + seq) % len(source)]
                    if seq % args.every == 0:
                        text += SAID
                        saying += 1
                    records.append((camp.id, sid, seq, speaker, text, text, seq * 4.0, seq * 4.0 + 3.5))
                await conn.copy_records_to_table(
                    "session_entries",
                    columns=["campaign_id", "session_id", "seq", "speaker", "raw_text", "text", "start_s", "end_s"],
                    records=records,
                )
            await conn.execute("ANALYZE")
        total = args.sessions * args.lines
        rows.append(("load the lines (COPY)", f"{total:,} lines", time.perf_counter() - t))

        t = time.perf_counter()
        counted = await mem.log.count_heard(["from skin"])
        rows.append(("count the lines saying it, for the reply", f"{counted:,} lines", time.perf_counter() - t))

        t = time.perf_counter()
        await mem.graph.update_entity("Frumpkin", heard_as=["from skin"])
        rows.append(("the edit, its jobs queued", f"{len(sessions):,} jobs", time.perf_counter() - t))

        per: list[float] = []
        changed = 0
        t = time.perf_counter()
        for sid in sessions:
            s0 = time.perf_counter()
            changed += await jobs.correct_heard_as_lines(mem, sid)
            per.append(time.perf_counter() - s0)
        rows.append(("the jobs: lines corrected again", f"{changed:,} lines", time.perf_counter() - t))
        first, rest = per[0], per[1:] or per
        rows.append(("  the first job (builds the name index)", "1 session", first))
        rows.append(("  a job, median of the others", "1 session", statistics.median(rest)))
        rows.append(("  a job, slowest of the others", "1 session", max(rest)))

        t = time.perf_counter()
        again = sum([await jobs.correct_heard_as_lines(mem, sid) for sid in sessions])
        rows.append(("the jobs again, nothing left to change", f"{again:,} lines", time.perf_counter() - t))
        assert changed == saying and again == 0, (changed, saying, again)
        await pool.close()
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)

    print(
        f"\nHeard-as re-correction: {args.sessions} sessions of {args.lines:,} lines, {saying:,} saying "
        f"'from skin' (one in {args.every})"
    )
    print(f"| {'what':<42} | {'of':>16} | {'seconds':>8} |")
    print(f"|{'-' * 44}|{'-' * 18}|{'-' * 10}|")
    for label, of, secs in rows:
        print(f"| {label:<42} | {of:>16} | {secs:>8.2f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--lines", type=int, default=5000, help="lines a session")
    parser.add_argument("--every", type=int, default=200, help="one line in EVERY says the phrase")
    parser.add_argument("--million", action="store_true", help="200 sessions of 5,000 lines: 1,000,000 lines")
    parsed = parser.parse_args()
    if parsed.million:
        parsed.sessions, parsed.lines = 200, 5000
    asyncio.run(main(parsed))
