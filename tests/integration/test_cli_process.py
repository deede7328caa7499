"""The `lorekeeper` process as a supervisor or a script sees it: signals, exit codes, options out of range."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import asyncpg
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "campaigns" / "examples"


def lorekeeper(dsn: str, tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    """The CLI of this checkout (cwd is first on its sys.path) on the test's database."""
    env = {**os.environ, "DATABASE_URL": dsn, "LOREKEEPER_DATA_DIR": str(tmp_path)}
    env.pop("LOREKEEPER_CONFIG", None)
    return subprocess.Popen(
        [sys.executable, "-c", "from bot.cli import main; main()", *args],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def test_sigterm_during_ingest_wait_stops_after_the_job_in_hand(
    fresh_dsn: str, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    load = lorekeeper(fresh_dsn, tmp_path, "campaign", "load", str(EXAMPLES / "sunken_crown.yaml"))
    assert load.wait(timeout=120) == 0
    # Twelve variants of the sample session: the jobs take long enough to be interrupted.
    lines = (EXAMPLES / "sunken_crown_session1.jsonl").read_text().splitlines()
    big = tmp_path / "long.jsonl"
    with big.open("w") as fh:
        for part in range(12):
            for n, line in enumerate(lines):
                obj = json.loads(line)
                obj.update(text=f"{obj['text']} (part {part})", start=obj["start"] + part * 400, ref=f"p{part}:{n}")
                fh.write(json.dumps(obj) + "\n")

    proc = lorekeeper(fresh_dsn, tmp_path, "ingest", str(big), "--wait")
    deadline = time.monotonic() + 120
    while not await pool.fetchval("SELECT count(*) > 0 FROM chunks"):  # the jobs are running
        assert proc.poll() is None and time.monotonic() < deadline
        await asyncio.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)

    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "error: stopped by SIGTERM: " in err and "run `lorekeeper worker` to finish them" in err
    assert "Traceback" not in err and "Task was destroyed" not in err
    assert await pool.fetchval("SELECT count(*) FROM session_entries") == 720  # the log was written before
    assert await pool.fetchval("SELECT count(*) FROM pgqueuer WHERE status = 'picked'") == 0  # none left half-done


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_worker_heartbeat_timeout_out_of_range_is_a_usage_error(fresh_dsn: str, tmp_path: Path, value: str) -> None:
    env = {**os.environ, "DATABASE_URL": fresh_dsn, "LOREKEEPER_DATA_DIR": str(tmp_path)}
    worker = [sys.executable, "-c", "from bot.cli import main; main()", "worker", "--heartbeat-timeout", value]
    res = subprocess.run(worker, env=env, cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert res.returncode == 2, res.stderr
    assert "Invalid value for '--heartbeat-timeout'" in res.stderr and "Traceback" not in res.stderr
