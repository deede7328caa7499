"""The memory guard against a real PostgreSQL that goes away: spool while it is down, replay exactly once.

These tests run their own embedded server under /tmp (the shared test server must never be stopped).
"""

from __future__ import annotations

import asyncio
import json
import resource
import shutil
import signal
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from memory.db import EmbeddedPostgres, create_pool, migrate
from memory.models import EntityIn, EntityType
from memory.recorder import Utterance, Word
from memory.store import CampaignMemory, Memory
from memory.voice.backoff import Backoff
from memory.voice.guard import (
    GuardState,
    MemoryGuard,
    Spool,
    SpoolPending,
    journal_path,
    recover_leftover_spools,
    spool_dir,
    spool_path,
)
from tests.conftest import TEST_EMBEDDING

#: Fast retries so recovery is noticed quickly; recovery itself is awaited as an event, never slept for.
FAST = Backoff(initial=0.05, factor=2.0, maximum=0.4, tries=None)
RECOVERY_TIMEOUT = 60.0


@pytest.fixture
def own_server() -> Iterator[tuple[EmbeddedPostgres, str, Path]]:
    root = Path(tempfile.mkdtemp(prefix="lorekeeper-guard-", dir="/tmp"))
    server = EmbeddedPostgres(root)
    dsn = server.start()
    try:
        yield server, dsn, root
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
async def own_campaign(own_server: tuple[EmbeddedPostgres, str, Path]) -> AsyncIterator[CampaignMemory]:
    _, dsn, _ = own_server
    pool = await create_pool(dsn, max_size=3)
    await migrate(pool, TEST_EMBEDDING)
    memory = Memory(pool)
    created = await memory.campaigns().create("Sunken Crown")
    try:
        yield memory.campaign(created.id)
    finally:
        await pool.close()


def said(i: int) -> Utterance:
    return Utterance(
        speaker="Ana",
        speaker_id="111",
        text=f"line {i} about Eldrinax",
        start_s=float(i),
        end_s=i + 0.8,
        words=[Word(word="line", confidence=0.9), Word(word=str(i), confidence=0.8)],
        ref=f"voice:111:{i * 1000}",
    )


async def stored(mem: CampaignMemory, session_id: int) -> list[tuple[int, str]]:
    rows = await mem.db.fetch(
        "SELECT seq, raw_text FROM session_entries WHERE campaign_id = $1 AND session_id = $2 ORDER BY seq, id",
        mem.campaign_id,
        session_id,
    )
    return [(r["seq"], r["raw_text"]) for r in rows]


async def test_database_stops_mid_session_and_every_utterance_is_stored_once_in_order(
    own_server: tuple[EmbeddedPostgres, str, Path], own_campaign: CampaignMemory
) -> None:
    server, _, data_dir = own_server
    guard = await MemoryGuard.start(own_campaign, "Night one", data_dir, batch_size=1, backoff=FAST)
    for i in range(1, 4):
        await guard.add(said(i))
    assert guard.status().state == GuardState.healthy
    assert guard.status().stored == 3

    server.stop()
    sizes = []
    for i in range(4, 9):
        await guard.add(said(i))
        sizes.append(guard.spool.path.stat().st_size)
        assert guard.state == GuardState.degraded
    status = guard.status()
    assert status.spooled == 5 and status.stored == 3 and status.last_error
    assert sizes == sorted(sizes) and len(set(sizes)) == 5  # the spool grows with every utterance
    assert [u.seq for u in Spool(guard.spool.path)] == [4, 5, 6, 7, 8]

    server.start()
    await asyncio.wait_for(guard.wait_healthy(), RECOVERY_TIMEOUT)
    await guard.add(said(9))  # after recovery, straight to the database again

    expected = [(i, f"line {i} about Eldrinax") for i in range(1, 10)]
    assert await stored(own_campaign, guard.session.id) == expected
    assert not guard.spool.path.exists()
    status = guard.status()
    assert (status.state, status.stored, status.spooled, status.last_error) == (GuardState.healthy, 9, 0, None)
    session = await guard.end()
    assert session.ended_at is not None
    await guard.close()


async def test_stop_during_outage_keeps_the_spool_and_closes_the_session_when_back(
    own_server: tuple[EmbeddedPostgres, str, Path], own_campaign: CampaignMemory
) -> None:
    server, _, data_dir = own_server
    guard = await MemoryGuard.start(own_campaign, "Night two", data_dir, batch_size=1, backoff=FAST)
    await guard.add(said(1))
    server.stop()
    await guard.add(said(2))
    with pytest.raises(SpoolPending):
        await guard.end()
    assert guard.end_marker.exists()  # a restart before the database is back still ends the session
    server.start()
    await asyncio.wait_for(guard.wait_healthy(), RECOVERY_TIMEOUT)
    assert guard._retry_task is not None
    await asyncio.wait_for(guard._retry_task, RECOVERY_TIMEOUT)  # it closes the session after the replay
    assert [s for s, _ in await stored(own_campaign, guard.session.id)] == [1, 2]
    session = await own_campaign.log.session(guard.session.id)
    assert session.ended_at is not None
    assert not guard.end_marker.exists()
    await guard.close()


async def test_leftover_spool_from_a_crash_is_replayed_first_exactly_once(
    own_server: tuple[EmbeddedPostgres, str, Path], own_campaign: CampaignMemory
) -> None:
    _, _, data_dir = own_server
    # A previous run stored lines 1-2, crashed while the database was away, and left 2-5 in its spool (line 2
    # was written just before the outage was noticed: it is in both places).
    first = await MemoryGuard.start(own_campaign, "Night three", data_dir, batch_size=1, backoff=FAST)
    await first.add(said(1))
    await first.add(said(2))
    session_id = first.session.id
    Spool(spool_path(data_dir, own_campaign.campaign_id, session_id)).append(
        [said(i).model_copy(update={"seq": i}) for i in range(2, 6)]
    )
    # A torn last line (the crash hit mid-write) is ignored, not fatal.
    with spool_path(data_dir, own_campaign.campaign_id, session_id).open("ab") as f:
        f.write(b'{"speaker": "Ana", "te')

    guard = await MemoryGuard.start(own_campaign, "Night three", data_dir, batch_size=1, backoff=FAST)
    assert guard.session.id == session_id
    assert guard.state == GuardState.healthy
    assert not spool_path(data_dir, own_campaign.campaign_id, session_id).exists()
    added = await guard.add(said(6))
    assert added.seq == 6
    assert await stored(own_campaign, session_id) == [(i, f"line {i} about Eldrinax") for i in range(1, 7)]
    # jobs were enqueued for the replayed lines too (same transaction as the L1 write)
    jobs = await own_campaign.db.fetchval("SELECT count(*) FROM pgqueuer")
    assert jobs >= 1


async def test_a_full_disk_during_an_outage_keeps_the_lines_in_memory_until_one_is_back(
    own_server: tuple[EmbeddedPostgres, str, Path], own_campaign: CampaignMemory
) -> None:
    server, _, data_dir = own_server
    guard = await MemoryGuard.start(own_campaign, "Night of full disks", data_dir, batch_size=1, backoff=FAST)
    try:
        await guard.add(said(1))
        server.stop()
        # The spool cannot be written either (it lives beside the database, often on its disk): here a file
        # stands where its folder should be.
        spool_dir(data_dir).write_text("")
        for i in range(2, 5):
            added = await guard.add(said(i))  # never raises: the table plays on
            assert added.seq == i
        status = guard.status()
        assert status.state == GuardState.degraded and status.spooled == 3
        assert status.last_error is not None and "spool" in status.last_error
        spool_dir(data_dir).unlink()  # space again: what waited in memory goes to the spool first, in order
        await guard.add(said(5))
        assert [u.seq for u in Spool(guard.spool.path)] == [2, 3, 4, 5]
    finally:
        server.start()
    await asyncio.wait_for(guard.wait_healthy(), RECOVERY_TIMEOUT)
    await guard.close()
    assert await stored(own_campaign, guard.session.id) == [(i, f"line {i} about Eldrinax") for i in range(1, 6)]


async def test_lines_neither_the_database_nor_the_disk_took_are_stored_when_the_database_is_back(
    own_server: tuple[EmbeddedPostgres, str, Path], own_campaign: CampaignMemory
) -> None:
    server, _, data_dir = own_server
    guard = await MemoryGuard.start(own_campaign, "Night of no disk", data_dir, batch_size=1, backoff=FAST)
    spool_dir(data_dir).write_text("")  # no spool can be written all night
    try:
        await guard.add(said(1))
        server.stop()
        for i in range(2, 4):
            await guard.add(said(i))
        assert guard.status().spooled == 2
    finally:
        server.start()
    await asyncio.wait_for(guard.wait_healthy(), RECOVERY_TIMEOUT)
    await guard.add(said(4))
    assert await stored(own_campaign, guard.session.id) == [(i, f"line {i} about Eldrinax") for i in range(1, 5)]
    status = guard.status()
    assert (status.state, status.stored, status.spooled, status.last_error) == (GuardState.healthy, 4, 0, None)
    await guard.end()
    await guard.close()


async def test_lines_no_one_took_by_the_time_the_bot_stops_are_written_to_its_log(
    own_server: tuple[EmbeddedPostgres, str, Path], own_campaign: CampaignMemory, caplog: pytest.LogCaptureFixture
) -> None:
    server, _, data_dir = own_server
    guard = await MemoryGuard.start(own_campaign, "Night of no return", data_dir, batch_size=1, backoff=FAST)
    spool_dir(data_dir).write_text("")
    try:
        server.stop()
        await guard.add(said(1))
        await guard.close()
    finally:
        server.start()
    logged = [r.getMessage() for r in caplog.records if "neither the database nor the disk took" in r.getMessage()]
    assert len(logged) == 1
    lines = [json.loads(line) for line in logged[0].splitlines()[1:]]
    assert lines == [
        {"speaker": "Ana", "text": "line 1 about Eldrinax", "start": 1.0, "end": 1.8, "ref": "voice:111:1000"}
    ]


def test_a_spool_append_the_disk_cuts_short_leaves_no_torn_line(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "1-1.jsonl")
    spool.append([said(1).model_copy(update={"seq": 1})])
    size = spool.path.stat().st_size
    # The disk fills up part way through a batch: the kernel writes what fits and refuses the rest.
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size + 40, hard))
    try:
        with pytest.raises(OSError):
            spool.append([said(i).model_copy(update={"seq": i}) for i in (2, 3)])
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)
    assert spool.path.stat().st_size == size  # the part that fitted is cut off again
    # so what is appended once there is room again is read back whole, after the line before
    spool.append([said(i).model_copy(update={"seq": i}) for i in (2, 3)])
    assert [u.seq for u in spool] == [1, 2, 3]


async def until(predicate: Callable[[], Awaitable[bool]], within_s: float) -> None:
    """Poll ``predicate`` until it is true; TimeoutError after ``within_s`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    while not await predicate():
        if loop.time() > deadline:
            raise TimeoutError(f"not true after {within_s} s")
        await asyncio.sleep(0.05)


async def test_the_last_utterance_is_flushed_on_time_without_another_add(
    campaign: CampaignMemory, tmp_path: Path
) -> None:
    guard = await MemoryGuard.start(campaign, "Quiet table", tmp_path, batch_size=8, max_delay_s=0.5)
    try:
        started = asyncio.get_running_loop().time()
        await guard.add(said(1))
        assert await stored(campaign, guard.session.id) == []  # batched: waits for more or for max_delay_s

        async def in_l1() -> bool:
            return await stored(campaign, guard.session.id) == [(1, "line 1 about Eldrinax")]

        await until(in_l1, within_s=2.0)
        assert asyncio.get_running_loop().time() - started >= 0.5  # not before its time
        assert guard.status().stored == 1
    finally:
        await guard.close()
    assert guard._flush_task is not None and guard._flush_task.done()


@pytest.mark.parametrize(
    "max_delay_s",
    [
        0.3,
        # Due the moment the loop runs again after the stop (which blocks it far longer): asyncpg has read the
        # server's goodbye on its idle connections but not yet the closed socket, and the write fails with
        # InternalClientError.
        0.001,
    ],
)
async def test_timed_flush_during_an_outage_goes_to_the_spool(
    own_server: tuple[EmbeddedPostgres, str, Path], own_campaign: CampaignMemory, max_delay_s: float
) -> None:
    server, _, data_dir = own_server
    guard = await MemoryGuard.start(
        own_campaign, "Dark night", data_dir, batch_size=8, max_delay_s=max_delay_s, backoff=FAST
    )
    try:
        await guard.add(said(1))
        server.stop()

        async def spooled() -> bool:
            return guard.status().spooled == 1

        await until(spooled, within_s=10.0)
        assert [u.seq for u in Spool(guard.spool.path)] == [1] and guard.state == GuardState.degraded
    finally:
        await guard.close()
        server.start()
    again = await MemoryGuard.start(own_campaign, "Dark night", data_dir)  # replays the spool
    await again.close()
    assert await stored(own_campaign, guard.session.id) == [(1, "line 1 about Eldrinax")]


async def test_close_writes_what_still_waits_and_leaves_no_task(campaign: CampaignMemory, tmp_path: Path) -> None:
    guard = await MemoryGuard.start(campaign, "Short night", tmp_path, batch_size=8, max_delay_s=60.0)
    await guard.add(said(1))
    await guard.close()
    assert await stored(campaign, guard.session.id) == [(1, "line 1 about Eldrinax")]
    assert guard._flush_task is not None and guard._flush_task.done()


async def test_abandoning_a_session_nobody_spoke_in_deletes_it(campaign: CampaignMemory, tmp_path: Path) -> None:
    guard = await MemoryGuard.start(campaign, "Voice would not join", tmp_path)
    await guard.abandon()
    assert await campaign.log.session_by_title("Voice would not join") is None
    assert guard._flush_task is not None and guard._flush_task.done()
    # a resumed session that already holds words is kept
    first = await MemoryGuard.start(campaign, "Night two", tmp_path)
    await first.add(said(1))
    await first.close()
    again = await MemoryGuard.start(campaign, "Night two", tmp_path)
    await again.abandon()
    kept = await campaign.log.session_by_title("Night two")
    assert kept is not None and await stored(campaign, kept.id) == [(1, "line 1 about Eldrinax")]
    # an ended one resumed is live until the recording stops, and ended as it was if voice never joined
    ended = await campaign.log.end_session(kept.id)
    resumed = await MemoryGuard.start(campaign, "Night two", tmp_path)
    assert resumed.session.ended_at is None and (await campaign.log.session(kept.id)).ended_at is None
    await resumed.abandon()
    assert (await campaign.log.session(kept.id)).ended_at == ended.ended_at


async def _crashed_with_a_doubted_line(campaign: CampaignMemory, data_dir: Path) -> int:
    """A session whose writer was killed with "the cracks game" in its journal, "cracks" doubted; its id."""
    await campaign.graph.add_entity(EntityIn(name="Krix", type=EntityType.npc))
    first = await MemoryGuard.start(campaign, "Crashed night", data_dir, stage2=True)
    await first.close()
    heard = [("the", 0.9), ("cracks", 0.2), ("game", 0.9)]
    doubted = Utterance(
        speaker="DM", text="the cracks game", seq=1, words=[Word(word=w, confidence=c) for w, c in heard]
    )
    Spool(journal_path(data_dir, campaign.campaign_id, first.session.id)).append([doubted])  # then kill -9
    return first.session.id


async def test_a_line_replayed_from_the_journal_keeps_the_recognisers_doubt(
    campaign: CampaignMemory, tmp_path: Path
) -> None:
    """The journal keeps the recogniser's words: a doubted line a crash left there reaches the stage-2 job with its
    word confidences, as if written live."""
    await _crashed_with_a_doubted_line(campaign, tmp_path)
    guard = await MemoryGuard.start(campaign, "Crashed night", tmp_path, stage2=True)
    try:
        [line] = await campaign.log.session_entries(guard.session.id)
    finally:
        await guard.close()
    assert line.raw_text == "the cracks game" and line.suspects == [(4, 10)]
    assert line.confidences == pytest.approx([0.9, 0.2, 0.9])


async def test_the_start_up_recovery_keeps_the_recognisers_doubt_when_an_llm_is_configured(
    campaign: CampaignMemory, memory: Memory, tmp_path: Path
) -> None:
    """The bot's start replays every campaign's leftovers: with stage 2 on, a doubted line keeps its doubt."""
    session_id = await _crashed_with_a_doubted_line(campaign, tmp_path)
    replayed, _ = await recover_leftover_spools(memory, tmp_path, stage2=True)
    [line] = await campaign.log.session_entries(session_id)
    assert replayed == 1 and line.suspects == [(4, 10)]
    assert line.confidences == pytest.approx([0.9, 0.2, 0.9])
