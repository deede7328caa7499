"""A live session's writer as its own process, for tests that kill -9 it: utterances u<from>..u<total> through a
:class:`MemoryGuard` (batches of 8 or 2 s, as live voice), printing ``ack N`` once ``add`` returned each.

    python -m tests.integration.guard_writer DSN DATA_DIR CAMPAIGN_ID FROM TOTAL

The source resumes after the last line acknowledged (``FROM``); one stored but not yet acknowledged when the
writer died is not said again (its ref is in the session already), as a recogniser would not repeat it.
"""

from __future__ import annotations

import asyncio
import random
import sys
from pathlib import Path

from memory.db import create_pool
from memory.recorder import Utterance
from memory.store import Memory
from memory.voice.guard import MemoryGuard


async def main(dsn: str, data_dir: Path, campaign_id: int, first: int, total: int) -> None:
    pool = await create_pool(dsn, max_size=2)
    try:
        mem = Memory(pool).campaign(campaign_id)
        guard = await MemoryGuard.start(mem, "Live", data_dir, batch_size=8, max_delay_s=2.0)
        stored = {
            r["ref"]
            for r in await mem.db.fetch(
                "SELECT ref FROM session_entries WHERE campaign_id = $1 AND session_id = $2",
                campaign_id,
                guard.session.id,
            )
        }
        print("ready", flush=True)
        rng = random.Random(first)
        for n in range(first, total + 1):
            if f"u{n}" not in stored:
                await guard.add(Utterance(speaker="Ana", text=f"line number {n}", start_s=float(n), ref=f"u{n}"))
            print(f"ack {n}", flush=True)
            await asyncio.sleep(rng.uniform(0, 0.004))  # speech arrives over time: the timer flushes too
        await guard.end()
        await guard.close()
        print("done", flush=True)
    finally:
        await pool.close()


if __name__ == "__main__":
    dsn, data, campaign, first, total = sys.argv[1:6]
    asyncio.run(main(dsn, Path(data), int(campaign), int(first), int(total)))
