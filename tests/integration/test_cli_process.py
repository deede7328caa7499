"""The `lorekeeper` process as a supervisor or a script sees it: signals, exit codes, options out of range."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from pathlib import Path

import asyncpg
import pytest

from tests.integration.processes import EXAMPLES, long_session, lorekeeper


def cli(dsn: str, tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    return lorekeeper(*args, env={"DATABASE_URL": dsn, "LOREKEEPER_DATA_DIR": str(tmp_path)})


async def test_sigterm_during_ingest_wait_stops_after_the_job_in_hand(
    fresh_dsn: str, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    load = cli(fresh_dsn, tmp_path, "campaign", "load", str(EXAMPLES / "sunken_crown.yaml"))
    assert load.wait(timeout=120) == 0
    big = long_session(tmp_path)  # jobs that take long enough to be interrupted
    proc = cli(fresh_dsn, tmp_path, "ingest", str(big), "--wait")
    deadline = time.monotonic() + 120
    while not await pool.fetchval("SELECT count(*) > 0 FROM chunks"):  # the jobs are running
        assert proc.poll() is None and time.monotonic() < deadline
        await asyncio.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)

    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "error: stopped by SIGTERM: " in err and "run `lorekeeper worker --drain` to finish them" in err
    assert "Traceback" not in err and "Task was destroyed" not in err
    assert await pool.fetchval("SELECT count(*) FROM session_entries") == 720  # the log was written before
    assert await pool.fetchval("SELECT count(*) FROM pgqueuer WHERE status = 'picked'") == 0  # none left half-done


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_worker_heartbeat_timeout_out_of_range_is_a_usage_error(fresh_dsn: str, tmp_path: Path, value: str) -> None:
    worker = cli(fresh_dsn, tmp_path, "worker", "--heartbeat-timeout", value)
    _, stderr = worker.communicate(timeout=30)
    assert worker.returncode == 2, stderr
    assert "Invalid value for '--heartbeat-timeout'" in stderr and "Traceback" not in stderr
