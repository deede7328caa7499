"""Switching embedding models: refused with a message at start, done by `lorekeeper db reembed`."""

from __future__ import annotations

import asyncio
import io
import itertools
import os
import re
import sys
from pathlib import Path

import asyncpg

from bot.cli.progress import StageProgress
from bot.cli.worker import drained_showing
from memory.db import create_pool
from memory.jobs.queue import enqueue_session_work
from memory.models import ChunkIn, EntryIn
from memory.store import CampaignMemory, Memory
from tests.fakes.openai_server import FakeOpenAI


async def lorekeeper(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    # asyncio subprocess: the fake OpenAI server answers on this test's event loop meanwhile
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "from bot.cli import main; main()", *args,
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 180)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_reembed_switches_model_and_rebuilds_chunks(
    fresh_dsn: str, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    pool = await create_pool(fresh_dsn)
    memory = Memory(pool)
    camp = await memory.campaigns().create("C")
    mem = memory.campaign(camp.id)
    session = await mem.log.start_session("S1")
    entries = await mem.log.write_many(
        session.id, [EntryIn(speaker="DM", text=f"The dragon speaks, line {i}.", start_s=i * 5.0) for i in range(12)]
    )
    await mem.semantic.upsert(
        [
            ChunkIn(
                key="old", session_id=session.id, text="old", embedding=[1.0] + [0.0] * 383, entry_ids=[entries[0].id]
            )
        ]
    )
    await pool.close()

    env = {
        **os.environ,
        "DATABASE_URL": fresh_dsn,
        "LOREKEEPER_DATA_DIR": str(tmp_path),
        "LOREKEEPER_EMBEDDING_PROVIDER": "openai",
        "LOREKEEPER_EMBEDDING_MODEL": "fake-embed",
        "LOREKEEPER_EMBEDDING_DIM": "8",
        "OPENAI_BASE_URL": fake_openai.base_url,
        "OPENAI_API_KEY": "sk-fake-key",
    }
    code, _, err = await lorekeeper(env, "entity", "list", "--campaign", "C")
    assert code == 1 and "all-MiniLM-L6-v2 (384 dimensions)" in err and "lorekeeper db reembed" in err

    code, out, err = await lorekeeper(env, "db", "reembed", "--yes")
    assert code == 0, err
    assert "dropped 1 chunks; re-embedding 1 sessions with fake-embed" in out

    conn = await asyncpg.connect(fresh_dsn)
    try:
        assert tuple(await conn.fetchrow("SELECT model, dim FROM embedding_config")) == ("fake-embed", 8)
        rows = await conn.fetch("SELECT key, entry_ids FROM chunks")
        # the vectors are the lines' (windows are no longer embedded), in the new model's dimension
        dims = await conn.fetch("SELECT vector_dims(embedding) AS dim FROM line_vectors WHERE embedding IS NOT NULL")
        assert dims and all(r["dim"] == 8 for r in dims)
        assert "old" not in {r["key"] for r in rows}
        assert {i for r in rows for i in r["entry_ids"]} == {e.id for e in entries}
    finally:
        await conn.close()
    assert fake_openai.embedding_requests  # the new vectors came from the configured endpoint

    code, out, err = await lorekeeper(env, "entity", "list", "--campaign", "C")
    assert code == 0, err


async def test_reembed_with_a_model_that_cannot_run_changes_nothing(
    fresh_dsn: str, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    pool = await create_pool(fresh_dsn)
    memory = Memory(pool)
    mem = memory.campaign((await memory.campaigns().create("C")).id)
    session = await mem.log.start_session("S1")
    (entry,) = await mem.log.write_many(session.id, [EntryIn(speaker="DM", text="The dragon speaks.")])
    old = ChunkIn(key="old", session_id=session.id, text="old", embedding=[1.0] + [0.0] * 383, entry_ids=[entry.id])
    await mem.semantic.upsert([old])

    env = {**os.environ, "DATABASE_URL": fresh_dsn, "LOREKEEPER_DATA_DIR": str(tmp_path)}
    offline_nomic = {**env, "LOREKEEPER_EMBEDDING_MODEL": "nomic-embed-text"}  # the provider stays minilm
    wrong_dim = {  # the endpoint's model gives 8 dimensions
        **env,
        "LOREKEEPER_EMBEDDING_PROVIDER": "openai",
        "LOREKEEPER_EMBEDDING_MODEL": "fake-embed",
        "LOREKEEPER_EMBEDDING_DIM": "16",
        "OPENAI_BASE_URL": fake_openai.base_url,
        "OPENAI_API_KEY": "sk-fake-key",
    }
    for bad, problem in [
        (offline_nomic, "the minilm provider only runs all-MiniLM-L6-v2, not 'nomic-embed-text'"),
        (wrong_dim, "fake-embed returned 8-d vectors, configured for 16"),
    ]:
        code, out, err = await lorekeeper(bad, "db", "reembed", "--yes")
        assert code == 1 and problem in err and "Nothing was changed" in err and "Traceback" not in err, err
        assert "dropped" not in out
        assert tuple(await pool.fetchrow("SELECT model, dim FROM embedding_config")) == ("all-MiniLM-L6-v2", 384)
        assert [r["key"] for r in await pool.fetch("SELECT key FROM chunks")] == ["old"]
    await pool.close()

    code, _, err = await lorekeeper(env, "entity", "list", "--campaign", "C")  # the default settings still start
    assert code == 0, err


async def test_the_drain_of_a_reembed_says_how_many_jobs_are_done_in_a_log(
    pool: asyncpg.Pool, campaign: CampaignMemory
) -> None:
    for title in ("S1", "S2"):
        session = await campaign.log.start_session(title)
        await campaign.log.write_many(session.id, [EntryIn(speaker="DM", text="The bell rings.", start_s=0.0)])
        await enqueue_session_work(pool, campaign.campaign_id, session.id, 1)  # a chunk and an extract job each

    async def workers() -> object:  # the workers, taking one job at a time
        for _ in range(4):
            await asyncio.sleep(0.3)
            await pool.execute("DELETE FROM pgqueuer WHERE id = (SELECT min(id) FROM pgqueuer)")
        return "drained"

    log, ticks = io.StringIO(), itertools.count()
    # a clock five seconds on at every look: a line at every look, as in a long re-embed's log
    shown = StageProgress(log, terminal=False, clock=lambda: 5.0 * next(ticks))
    assert await drained_showing(pool, workers(), shown, interval=0.05) == "drained"  # type: ignore[arg-type]
    lines = log.getvalue().splitlines()
    said = [
        re.fullmatch(r"background jobs: jobs done (\d) of 4 jobs( \(about \d+:\d\d left\))?", line) for line in lines
    ]
    assert lines[0] == "background jobs: jobs done 0 of 4 jobs" and all(said), lines
    done = [int(m[1]) for m in said if m]
    assert done == sorted(done) and done[-1] >= 2, lines
    assert lines[-1] == "background jobs: jobs done 4 of 4 jobs"  # where it ended, not where it was last looked at
