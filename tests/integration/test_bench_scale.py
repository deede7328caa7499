"""The two-year campaign's builder (bench/campaign_scale.py) against the real schema: it writes what ingest's jobs
write, or its "where was X said" figures time a full-text scan of every session that a real campaign never does."""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator

import asyncpg
import pytest

from bench import campaign_scale
from memory import jobs
from memory.db import create_pool
from memory.gazetteer import of_mentions
from memory.store import CampaignMemory, Memory

SAID = [
    ("Travis", "Grog Strongjaw swings at the goblin."),
    ("Matt", "The goblin falls. Keyleth, you see a door."),
    ("Marisha", "I open it."),
    ("Liam", "Vax'ildan and Keyleth go through the door, and Grog follows them in."),
]


@pytest.fixture
async def pool(fresh_dsn: str) -> AsyncIterator[asyncpg.Pool]:
    pool = await create_pool(fresh_dsn, max_size=4)
    yield pool
    await pool.close()


async def test_the_scale_campaign_has_the_mention_index_and_the_progress_ingest_writes(
    pool: asyncpg.Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its progress steps were named `chunk`, not `lk_chunk`, and it wrote no `entity_mentions` rows: `entity show`
    read every line of every session for the last mention (210 ms at 100 sessions, against 28 ms for ingest's)."""
    monkeypatch.setattr(campaign_scale, "crd3_lines", lambda: SAID)
    memory = Memory(pool)
    mem: CampaignMemory = memory.campaign((await memory.campaigns().create("bench", activate=False)).id)
    args = argparse.Namespace(sessions=2, lines=12, entities=20, facts=300, pending=3)
    await campaign_scale.build(mem, args)

    steps = await pool.fetch("SELECT DISTINCT step FROM ingest_progress WHERE campaign_id = $1", mem.campaign_id)
    assert {r["step"] for r in steps} == {jobs.CHUNK, jobs.EXTRACT, jobs.SUMMARY}
    # who each line names, as the chunk job's gazetteer reads it
    gazetteer = of_mentions(await mem.graph.list_entities(status=None))
    expected = {
        (entity_id, e.id)
        for s in await mem.log.sessions()
        for e in await mem.log.session_entries(s.id)
        for entity_id in gazetteer.mentioned_ids(e)
    }
    rows = await pool.fetch("SELECT entity_id, entry_id FROM entity_mentions WHERE campaign_id = $1", mem.campaign_id)
    assert {(r["entity_id"], r["entry_id"]) for r in rows} == expected
    grog = await mem.graph.find_entity("Grog Strongjaw")
    # 2 of the 4 lines name him, 12 lines a session, 2 sessions
    assert grog is not None and sum(entity_id == grog.id for entity_id, _ in expected) == 2 * 6
