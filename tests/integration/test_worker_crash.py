"""kill -9 a `lorekeeper worker` in the middle of a session's jobs; a restarted worker finishes every job
and no row is duplicated."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from campaigns.files import read_campaign_file
from campaigns.load import apply_campaign_file
from memory import jobs
from memory.chunking import windows
from memory.db import EmbeddedPostgres
from memory.ingest import ingest_file
from memory.jobs import admin
from memory.jobs import worker as job_worker
from memory.models import EntityIn, EntityType, EntryIn
from memory.providers.embeddings import MiniLMEmbedder
from memory.providers.llm import OpenAILLM
from memory.store import CampaignMemory, Memory
from tests.fakes.openai_server import ChatReply, FakeHTTPError, FakeOpenAI
from tests.integration.processes import long_session

EXAMPLES = Path(__file__).resolve().parents[2] / "campaigns" / "examples"
OUTAGE_SAID = "the database stopped or cannot be reached"


def start_worker(dsn: str, tmp_path: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "DATABASE_URL": dsn, "LOREKEEPER_DATA_DIR": str(tmp_path / "unused")}
    return subprocess.Popen(
        [sys.executable, "-c", "from bot.cli import main; main()", "worker", "--heartbeat-timeout", "3"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "worker.log", "ab"),
    )


async def wait_for(pool: asyncpg.Pool, sql: str, *args: object, within_s: float = 120) -> None:
    """Until ``sql`` is true: the progress of another process can only be observed in the database."""
    deadline = time.monotonic() + within_s
    while not await pool.fetchval(sql, *args):
        if time.monotonic() > deadline:
            raise TimeoutError(sql)
        await asyncio.sleep(0.05)


async def test_kill_9_mid_way_then_restart_finishes_without_duplicates(
    campaign: CampaignMemory, pool: asyncpg.Pool, fresh_dsn: str, tmp_path: Path
) -> None:
    await apply_campaign_file(campaign, read_campaign_file(EXAMPLES / "sunken_crown.yaml"))
    big = long_session(tmp_path)  # enough windows that the worker is still busy when killed
    report = await ingest_file(campaign, big, session_title="Long night", batch_size=100)
    session_id = (await campaign.log.session_by_title("Long night")).id  # type: ignore[union-attr]

    worker = start_worker(fresh_dsn, tmp_path)
    try:
        # Mid-way: some chunks stored, jobs still picked.
        await wait_for(pool, "SELECT count(*) >= 10 FROM chunks WHERE session_id = $1", session_id)
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
        assert await jobs.pending_jobs(pool) > 0, "the worker finished before it could be killed"
        assert await pool.fetchval("SELECT count(*) FROM pgqueuer WHERE status = 'picked'") > 0

        worker = start_worker(fresh_dsn, tmp_path)
        await jobs.wait_until_idle(pool, deadline_s=240)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)

    assert await jobs.failed_jobs(pool) == 0
    entries = await campaign.log.session_entries(session_id)
    assert len(entries) == report.lines == 720
    chunk_keys = [r[0] for r in await pool.fetch("SELECT key FROM chunks WHERE session_id = $1", session_id)]
    assert sorted(chunk_keys) == sorted(w.key for w in windows(entries))  # every window, once
    progress = await pool.fetchval(
        "SELECT last_seq FROM ingest_progress WHERE session_id = $1 AND step = $2", session_id, jobs.EXTRACT
    )
    assert progress == entries[-1].seq
    dup_entities = await pool.fetchval(
        "SELECT count(*) FROM (SELECT lower(name) FROM entities GROUP BY 1 HAVING count(*) > 1) d"
    )
    dup_facts = await pool.fetchval(
        """SELECT count(*) FROM (SELECT source_id, type, target_id, value FROM relationships
           WHERE valid_to IS NULL GROUP BY 1, 2, 3, 4 HAVING count(*) > 1) d"""
    )
    assert (dup_entities, dup_facts) == (0, 0)
    session = await campaign.log.session(session_id)
    assert session.summary
    assert await campaign.graph.find_entity("Session: Long night") is not None


async def test_a_worker_rides_out_a_database_restart(
    pg_server: tuple[EmbeddedPostgres, str],
    memory: Memory,
    campaign: CampaignMemory,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, dsn = pg_server
    await apply_campaign_file(campaign, read_campaign_file(EXAMPLES / "sunken_crown.yaml"))
    before = await ingest_file(campaign, long_session(tmp_path), session_title="Before", batch_size=100)
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model=MiniLMEmbedder.model_name)
    stop = asyncio.Event()
    with caplog.at_level(logging.WARNING, logger=jobs.__name__):
        worker = asyncio.create_task(
            jobs.run_workers(memory.pool, None, stop, heartbeat_timeout=timedelta(seconds=2), ctx=ctx)
        )
        try:
            await wait_for(memory.pool, "SELECT count(*) > 0 FROM chunks")  # busy with the first session
            await asyncio.to_thread(server.stop)  # terminates every connection; then none is accepted
            deadline = time.monotonic() + 60  # down until the worker has met the outage, however slow it is
            while not any(r.getMessage().startswith(OUTAGE_SAID) for r in caplog.records):
                assert time.monotonic() < deadline, "the worker never noticed the database stop"
                await asyncio.sleep(0.05)
            assert await asyncio.to_thread(server.start) == dsn
            after = await ingest_file(campaign, EXAMPLES / "sunken_crown_session1.jsonl", session_title="After")
            await jobs.wait_until_idle(memory.pool, deadline_s=240)
            assert not worker.done(), "the worker ended with the database restart"
        finally:
            stop.set()
            await asyncio.wait_for(worker, 60)

    assert await jobs.failed_jobs(memory.pool) == 0
    for title, report in (("Before", before), ("After", after)):
        session = await campaign.log.session_by_title(title)
        assert session is not None and session.summary, title
        entries = await campaign.log.session_entries(session.id)
        assert len(entries) == report.lines
        chunk_keys = [r[0] for r in await memory.pool.fetch("SELECT key FROM chunks WHERE session_id = $1", session.id)]
        assert sorted(chunk_keys) == sorted(w.key for w in windows(entries))
    said = [r.getMessage() for r in caplog.records]
    assert len([m for m in said if m.startswith(OUTAGE_SAID)]) == 1, said
    assert "the database is back: background jobs go on" in said


async def test_failed_jobs_run_again_at_the_next_worker_start(pool: asyncpg.Pool, campaign: CampaignMemory) -> None:
    session = await campaign.log.start_session("S")
    await jobs.enqueue_session_work(pool, campaign.campaign_id, session.id, 5)  # a chunk and an extract job
    await pool.execute("UPDATE pgqueuer SET status = 'failed'")  # both ran out of tries
    await jobs.enqueue_session_work(pool, campaign.campaign_id, session.id, 5)  # the same work again
    # the extract job of that second round failed too; the chunk job waits
    await pool.execute(
        "UPDATE pgqueuer SET status = 'failed' WHERE status = 'queued' AND entrypoint = $1", jobs.EXTRACT
    )
    assert await jobs.failed_jobs(pool) == 3
    assert await jobs.requeue_failed(pool) == 1  # one of the two extract jobs; the chunk job already waits
    rows = await pool.fetch("SELECT entrypoint, status FROM pgqueuer ORDER BY entrypoint")
    assert [(r["entrypoint"], r["status"]) for r in rows] == [(jobs.CHUNK, "queued"), (jobs.EXTRACT, "queued")]
    assert await jobs.failed_jobs(pool) == 0 and await jobs.requeue_failed(pool) == 0


async def _drain_asking(memory: Memory, fake_openai: FakeOpenAI, **client: Any) -> None:
    """Run the queue's jobs until none is left, with the real client asking the fake LLM server."""
    llm = OpenAILLM(fake_openai.base_url, fake_openai.api_key, "fake-model", **client)
    ctx = jobs.JobContext(memory=memory, embedder=None, embedding_model="x", llm=llm)  # type: ignore[arg-type]
    try:
        await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    finally:
        await llm.aclose()


async def _run_a_bad_job_and_one_during_an_outage(
    memory: Memory, campaign: CampaignMemory, fake_openai: FakeOpenAI
) -> None:
    """A summary job that fails on its payload (no session) and a stage-2 job on an LLM outage, run to the end."""
    session = await campaign.log.start_session("S")
    insert = "INSERT INTO pgqueuer (priority, status, entrypoint, payload) VALUES (0, 'queued', $1, $2)"
    await memory.pool.execute(insert, jobs.SUMMARY, json.dumps({"campaign_id": campaign.campaign_id}).encode())
    await memory.pool.execute(
        insert, jobs.CORRECT2, json.dumps({"campaign_id": campaign.campaign_id, "session_id": session.id}).encode()
    )
    await campaign.graph.add_entity(EntityIn(name="Quelloth", type=EntityType.npc))
    await campaign.log.write(session.id, EntryIn(speaker="DM", text="We met Bob.", suspects=[(7, 10)]))
    fake_openai.chat_handler = lambda request: FakeHTTPError(503, "overloaded")
    await _drain_asking(memory, fake_openai, max_retries=0)


async def test_a_job_failed_on_its_data_is_not_run_again_at_every_start(
    memory: Memory, campaign: CampaignMemory, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(job_worker, "_MAX_ATTEMPTS", 1)
    monkeypatch.setattr(job_worker, "_RETRY_DELAYS", (timedelta(milliseconds=10), timedelta(milliseconds=10)))
    await _run_a_bad_job_and_one_during_an_outage(memory, campaign, fake_openai)
    held = {r["entrypoint"]: r["status"] for r in await memory.pool.fetch("SELECT entrypoint, status FROM pgqueuer")}
    assert held == {jobs.SUMMARY: "failed", jobs.CORRECT2: "failed"}

    assert await jobs.requeue_failed(memory.pool) == 1  # the outage's job; the other would only fail again
    rows = await memory.pool.fetch("SELECT entrypoint, status FROM pgqueuer ORDER BY entrypoint")
    assert [(r["entrypoint"], r["status"]) for r in rows] == [(jobs.CORRECT2, "queued"), (jobs.SUMMARY, "failed")]
    assert await jobs.failed_jobs(memory.pool) == 1  # still there for whoever looks
    [held] = await jobs.held_jobs(memory.pool, campaign.campaign_id)
    assert (held.kind, held.campaign, held.session, held.on_its_data) == ("summary", "Test Campaign", None, True)
    assert held.error.startswith("unreadable payload")
    # after a fix, the operator runs it again (`lorekeeper jobs retry`)
    other = await memory.campaigns().create("Other")
    assert await jobs.requeue_failed(memory.pool, other.id, bad_data=True) == 0
    assert await jobs.requeue_failed(memory.pool, campaign.campaign_id, bad_data=True) == 1
    assert await jobs.failed_jobs(memory.pool) == 0 and await jobs.held_jobs(memory.pool) == []


async def test_a_job_failed_on_its_data_is_held_at_once_while_an_outage_is_tried_again(
    memory: Memory, campaign: CampaignMemory, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(job_worker, "_MAX_ATTEMPTS", 2)  # each retry waits for the queue's next poll: seconds
    monkeypatch.setattr(job_worker, "_RETRY_DELAYS", (timedelta(milliseconds=1), timedelta(milliseconds=1)))
    await _run_a_bad_job_and_one_during_an_outage(memory, campaign, fake_openai)
    rows = await memory.pool.fetch("SELECT entrypoint, status, attempts FROM pgqueuer ORDER BY entrypoint")
    assert [tuple(r) for r in rows] == [(jobs.CORRECT2, "failed", 2), (jobs.SUMMARY, "failed", 0)]
    tries = await memory.pool.fetchval("SELECT count(*) FROM pgqueuer_log WHERE entrypoint = $1", jobs.SUMMARY)
    assert tries == 2  # queued, failed: never retried
    assert await jobs.requeue_failed(memory.pool) == 1  # held as failed on its data: the outage's job only


async def test_a_job_whose_llm_timed_out_is_held_at_once_not_tried_six_times_more(
    memory: Memory, campaign: CampaignMemory, fake_openai: FakeOpenAI
) -> None:
    """The client asked the slow server already (``max_retries``); the queue's six tries more would keep a drain
    waiting for many minutes, and a local server generates every abandoned request. Held, it runs again at the
    next worker start."""
    session = await campaign.log.start_session("S")
    await campaign.graph.add_entity(EntityIn(name="Quelloth", type=EntityType.npc))
    await campaign.log.write(session.id, EntryIn(speaker="DM", text="We met Bob.", suspects=[(7, 10)]))
    await memory.pool.execute(
        "INSERT INTO pgqueuer (priority, status, entrypoint, payload) VALUES (0, 'queued', $1, $2)",
        jobs.CORRECT2,
        json.dumps({"campaign_id": campaign.campaign_id, "session_id": session.id}).encode(),
    )
    fake_openai.chat_handler = ChatReply(content="{}", delay=2.0)
    await _drain_asking(memory, fake_openai, timeout=0.2, max_retries=0)
    assert len(fake_openai.chat_requests) == 1
    [held] = await jobs.held_jobs(memory.pool, campaign.campaign_id)
    assert not held.on_its_data and "timed out after 0.2 s (1 try) at http://127.0.0.1:" in held.error, held.error
    assert "raise LOREKEEPER_LLM_TIMEOUT" in held.error


async def test_two_extract_jobs_of_a_session_do_not_both_retry_a_failing_llm(
    memory: Memory, campaign: CampaignMemory, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The import's extract job and the one stage 2 queued after it asked a failing LLM in turn, each retried:
    twice the requests on a server answering 429, and two jobs held. The one queued does the other's work."""
    monkeypatch.setattr(job_worker, "_MAX_ATTEMPTS", 2)  # each retry waits for the queue's next poll: seconds
    monkeypatch.setattr(job_worker, "_RETRY_DELAYS", (timedelta(milliseconds=1), timedelta(milliseconds=1)))
    session = await campaign.log.start_session("S1")
    await campaign.log.write_many(session.id, [EntryIn(speaker="DM", text="Brom the blacksmith waves.")])
    payload = job_worker.job_payload(campaign.campaign_id, session.id, upto_seq=1)
    await job_worker.queries_on(memory.pool).enqueue(
        [jobs.EXTRACT] * 2, [payload] * 2, [10] * 2, dedupe_key=[f"x:{session.id}:1", f"x:{session.id}:1:2"]
    )
    fake_openai.chat_handler = lambda request: FakeHTTPError(429, "too many requests")
    await _drain_asking(memory, fake_openai, max_retries=0)
    rows = await memory.pool.fetch("SELECT entrypoint, status, attempts FROM pgqueuer")
    assert [tuple(r) for r in rows] == [(jobs.EXTRACT, "failed", 2)]  # one held
    assert len(fake_openai.chat_requests) == 1 + 3  # the other's one try, then this one's first and two retries


def test_a_query_on_a_connection_whose_server_just_left_is_an_outage() -> None:
    """What asyncpg raises for a query on a pooled connection whose server's goodbye it has read but whose
    closed socket it has not yet seen (the voice guard met it at a database stop): the job is tried again
    later, not held as failed on its data."""
    seen = asyncpg.InternalClientError("cannot switch to state 11; another operation (2) is in progress")
    assert jobs.is_outage(seen)
    assert not jobs.is_outage(RuntimeError("chunking failed"))


async def test_a_job_whose_session_or_campaign_is_gone_does_nothing(
    memory: Memory, campaign: CampaignMemory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(job_worker, "_MAX_ATTEMPTS", 1)
    empty = await campaign.log.start_session("Nothing said")
    await jobs.enqueue_summary(memory.pool, campaign.campaign_id, empty.id)
    assert await campaign.log.discard_if_empty(empty.id)  # before its summary job runs
    other = await memory.campaigns().create("Deleted while its job runs")
    session = await memory.campaign(other.id).log.start_session("S")
    await jobs.enqueue_summary(memory.pool, other.id, session.id)
    real_summary = jobs.summarize_session

    async def delete_first(ctx: jobs.JobContext, campaign_id: int, session_id: int) -> str:
        if campaign_id == other.id:
            await memory.pool.execute("DELETE FROM campaigns WHERE id = $1", campaign_id)
        return await real_summary(ctx, campaign_id, session_id)  # fails: no such session

    monkeypatch.setattr(job_worker, "summarize_session", delete_first)
    ctx = jobs.JobContext(memory=memory, embedder=None, embedding_model="x")  # type: ignore[arg-type]
    with caplog.at_level(logging.INFO, logger=jobs.__name__):
        await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    assert await memory.pool.fetch("SELECT * FROM pgqueuer") == []  # none held as failed
    skipped = [r for r in caplog.records if "no longer exists" in r.getMessage()]
    assert [r.levelno for r in skipped] == [logging.INFO, logging.INFO]


async def test_deleting_a_campaign_deletes_its_waiting_and_held_jobs(memory: Memory, campaign: CampaignMemory) -> None:
    doomed = await memory.campaigns().create("Doomed")
    for c in (campaign.campaign_id, doomed.id):
        session = await memory.campaign(c).log.start_session("S")
        await jobs.enqueue_session_work(memory.pool, c, session.id, 5)
        await jobs.enqueue_summary(memory.pool, c, session.id)
    await memory.pool.execute("UPDATE pgqueuer SET status = 'failed' WHERE entrypoint = $1", jobs.SUMMARY)
    assert (await jobs.failed_jobs(memory.pool, doomed.id), await jobs.pending_jobs(memory.pool, doomed.id)) == (1, 2)

    await memory.campaigns().delete("Doomed")
    assert (await jobs.failed_jobs(memory.pool, doomed.id), await jobs.pending_jobs(memory.pool, doomed.id)) == (0, 0)
    kept = (await jobs.failed_jobs(memory.pool, campaign.campaign_id), await jobs.pending_jobs(memory.pool))
    assert kept == (1, 2)  # the other campaign's, untouched


async def test_a_worker_prunes_the_queue_log_of_jobs_long_gone(
    memory: Memory, campaign: CampaignMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pgqueuer logs every job queued, finished or failed and deletes none of it: over two years of sessions
    the log grew without bound. A worker prunes what is older than a month, but not a held job's last error."""
    monkeypatch.setattr(admin, "_PRUNE_BATCH", 1)  # a prune of years of rows goes in batches
    ctx = jobs.JobContext(memory=memory, embedder=None, embedding_model="x")  # type: ignore[arg-type]
    session = await campaign.log.start_session("Nothing said")
    await jobs.enqueue_summary(memory.pool, campaign.campaign_id, session.id)
    await campaign.log.discard_if_empty(session.id)  # the job finds nothing to do, and is logged
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    done = await memory.pool.fetchval("SELECT count(*) FROM pgqueuer_log")
    assert done >= 2  # queued, successful
    await memory.pool.execute(
        """
        WITH j AS (INSERT INTO pgqueuer (priority, status, entrypoint, payload)
                   VALUES (0, 'failed', 'lk_extract', $1) RETURNING id)
        INSERT INTO pgqueuer_log (job_id, status, priority, entrypoint, traceback)
        SELECT id, 'failed', 0, 'lk_extract', '{"exception_type": "BadJobError", "exception_message": "bad"}' FROM j
        """,
        json.dumps({"campaign_id": campaign.campaign_id, "session_id": session.id}).encode(),
    )
    await memory.pool.execute("UPDATE pgqueuer_log SET created = created - interval '31 days'")
    await memory.pool.execute(  # a job of yesterday's session, done
        "INSERT INTO pgqueuer_log (job_id, status, priority, entrypoint, created) "
        "VALUES (-1, 'successful', 0, 'lk_chunk', now() - interval '1 day')"
    )
    await memory.pool.execute(
        "INSERT INTO pgqueuer_statistics (count, priority, status, entrypoint, created) VALUES "
        "(1, 0, 'successful', 'lk_chunk', now() - interval '31 days'), (1, 0, 'successful', 'lk_chunk', now())"
    )

    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)  # a worker starts

    left = await memory.pool.fetch("SELECT job_id, status FROM pgqueuer_log ORDER BY created")
    assert [r["status"] for r in left] == ["failed", "successful"]
    assert left[1]["job_id"] == -1
    assert await memory.pool.fetchval("SELECT count(*) FROM pgqueuer_statistics") == 1
    [held] = await jobs.held_jobs(memory.pool)
    assert held.on_its_data and held.error == "bad"  # still known as failed on its data: not run at every start
    assert await jobs.requeue_failed(memory.pool) == 0


async def test_an_llm_outage_is_no_raw_queue_error_and_the_held_jobs_name_the_llms_setting(
    memory: Memory, campaign: CampaignMemory, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ingest --wait` with the LLM away printed "ERROR pgqueuer: Exception while processing entrypoint/job-id:
    lk_extract/14 (LLMUnavailable: …)" at each try (the queue's job ids, nothing to do), and its end named no
    setting. The tries are left to -v; the end says which URL did not answer."""
    from bot.cli.common import BriefOutages, CliError
    from bot.cli.ingest import refuse_held
    from bot.settings import Settings

    monkeypatch.setattr(job_worker, "_MAX_ATTEMPTS", 2)  # each retry waits for the queue's next poll: seconds
    monkeypatch.setattr(job_worker, "_RETRY_DELAYS", (timedelta(milliseconds=1), timedelta(milliseconds=1)))
    shown: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = shown.append  # type: ignore[method-assign]
    handler.addFilter(BriefOutages())  # as the command line's log handler has it without -v
    logging.getLogger().addHandler(handler)
    try:
        await _run_a_bad_job_and_one_during_an_outage(memory, campaign, fake_openai)
    finally:
        logging.getLogger().removeHandler(handler)
    said = [r.getMessage() for r in shown if r.name.startswith("pgqueuer")]
    assert not [s for s in said if "lk_correct2" in s or "LLMUnavailable" in s], said
    assert any("lk_summary" in s for s in said), said  # a job failing on its data (a bug) still shows
    settings = Settings(openai_base_url=fake_openai.base_url)
    with pytest.raises(CliError) as held:
        await refuse_held(campaign, settings)
    assert held.value.format_message().endswith(
        f"; the LLM (OPENAI_BASE_URL={fake_openai.base_url}) did not answer: start it or fix the setting, then "
        "`lorekeeper jobs retry` runs them again (`lorekeeper jobs list` shows them)"
    )
