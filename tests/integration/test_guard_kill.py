"""kill -9 of the process writing a live session, at random points over 500 utterances: after restarts, every
utterance acknowledged is stored once (the journal holds what waited in memory for its batch)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from memory.store import CampaignMemory
from memory.voice.guard import journal_path
from tests.integration.processes import ROOT

TOTAL = 500


def _writer(dsn: str, data_dir: Path, campaign_id: int, first: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.integration.guard_writer", dsn, str(data_dir), str(campaign_id), str(first),
         str(TOTAL)],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


async def test_kill_9_at_random_points_loses_and_duplicates_nothing_acknowledged(
    fresh_dsn: str, campaign: CampaignMemory, tmp_path: Path
) -> None:
    rng = random.Random(32)
    acked = 0
    kills = 0
    deadline = time.monotonic() + 240
    while acked < TOTAL:
        assert time.monotonic() < deadline, f"stuck at {acked} acknowledged after {kills} kills"
        writer = _writer(fresh_dsn, tmp_path, campaign.campaign_id, acked + 1)
        assert writer.stdout is not None
        assert writer.stdout.readline() == "ready\n", writer.stderr.read() if writer.stderr else ""
        # killed after a random number of lines, often with some waiting in memory for their batch
        stop_after = rng.randint(5, 90)
        seen = 0
        finished = False
        while True:
            line = writer.stdout.readline()
            if line.startswith("ack "):
                acked = int(line.split()[1])
                seen += 1
                if seen == stop_after and acked < TOTAL:
                    time.sleep(rng.uniform(0, 0.01))  # noqa: ASYNC251  # at times mid-append, mid-write
                    os.kill(writer.pid, signal.SIGKILL)
                    kills += 1
                    writer.wait(10)
                    # lines acknowledged after the last read are acknowledged too
                    acked = max([acked, *(int(x.split()[1]) for x in writer.stdout if x.startswith("ack "))])
                    break
            elif line == "done\n":
                finished = True
                writer.wait(30)
                break
            else:
                writer.wait(10)
                raise AssertionError(f"writer ended: {line!r} {writer.stderr.read() if writer.stderr else ''}")
        writer.stdout.close()
        if writer.stderr:
            writer.stderr.close()
        if finished:
            break
    assert kills >= 5
    rows = await campaign.db.fetch(
        "SELECT ref, count(*) AS n FROM session_entries WHERE campaign_id = $1 GROUP BY ref", campaign.campaign_id
    )
    counts = {r["ref"]: r["n"] for r in rows}
    lost = [n for n in range(1, TOTAL + 1) if f"u{n}" not in counts]
    duplicated = [ref for ref, n in counts.items() if n > 1]
    assert (lost, duplicated, len(counts)) == ([], [], TOTAL)
    session_id = await campaign.db.fetchval("SELECT id FROM sessions WHERE campaign_id = $1", campaign.campaign_id)
    assert not journal_path(tmp_path, campaign.campaign_id, session_id).exists()  # ended: nothing left over
