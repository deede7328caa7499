"""The hot context benchmark's campaign (bench/context.py) against the real schema, and the round trips a hot
context takes: the builder cannot drift from the schema unnoticed, nor the snapshot grow back into many queries."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import asyncpg
import pytest

from bench.context import TYPES, UNINDEXED, Statements, build
from memory.context import hot_context
from memory.db import create_pool
from memory.models import EntityType
from memory.store import CampaignMemory, Memory


@pytest.fixture
async def counted(fresh_dsn: str) -> AsyncIterator[tuple[asyncpg.Pool, Statements]]:
    statements = Statements()
    pool = await create_pool(fresh_dsn, max_size=4, on_connect=statements.watch)
    yield pool, statements
    await pool.close()


async def test_the_bench_campaign_builds_and_its_hot_context_takes_three_statements(
    counted: tuple[asyncpg.Pool, Statements],
) -> None:
    pool, statements = counted
    memory = Memory(pool)
    mem: CampaignMemory = memory.campaign((await memory.campaigns().create("bench", activate=False)).id)
    names = await build(pool, mem, 60, 2000)
    assert {EntityType(t) for t in TYPES} >= {EntityType.npc, EntityType.location}
    assert await pool.fetchval("SELECT count(DISTINCT type) FROM entities WHERE campaign_id = $1", mem.campaign_id) == 6

    # The live session's newest lines are not indexed; where an entity was last said is found all the same.
    newest = await pool.fetchrow(
        "SELECT se.id, se.text FROM session_entries se JOIN sessions s ON s.id = se.session_id"
        " WHERE s.campaign_id = $1 AND s.ended_at IS NULL ORDER BY se.seq DESC LIMIT 1",
        mem.campaign_id,
    )
    assert not await pool.fetchval("SELECT count(*) FROM entity_mentions WHERE entry_id = $1", newest["id"])
    said = next(n for i, n in enumerate(names) if re.search(rf"\b{n}\b", newest["text"], re.I) and i % 20 != 7)
    _, last = await mem.graph.identity(said)
    assert last is not None and last.text == newest["text"]

    await hot_context(mem, said, dm=False)  # the names and the players' mask, learnt once
    for dm in (True, False):
        before = statements.sent
        _, last = await mem.graph.identity(said, include_secret=dm)
        assert statements.sent - before == 1  # the snapshot and its last mention: one statement
        before = statements.sent
        ctx = await hot_context(mem, said, dm=dm, minutes=5)
        # the identity, the window of L1 (with the names' fingerprint), the scene's entities
        assert statements.sent - before == 3
        assert ctx.entity.last_mentioned is not None and newest["text"] in ctx.entity.last_mentioned
        assert len(ctx.lines) > UNINDEXED
