"""Writers that check before they write, at the same time: each waits for the other's commit, then sees it.

Each test holds the first writer's transaction open, starts the second on another connection, waits until it
is blocked on a lock, then commits the first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

import asyncpg
import pytest

from memory.errors import AlreadyDecidedError, AlreadyExistsError
from memory.models import EntityIn, EntityType, Provenance, RelationshipIn, ReviewStatus, Source
from memory.store import CampaignMemory, Memory


async def _second_waits(pool: asyncpg.Pool, second: Awaitable[Any]) -> asyncio.Task[Any]:
    task = asyncio.ensure_future(second)
    for _ in range(200):
        if await pool.fetchval("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"):
            return task
        assert not task.done(), f"the second writer did not wait: {task.result()!r}"
        await asyncio.sleep(0.025)
    raise AssertionError("the second writer never waited for the first")


async def test_two_decisions_on_one_review_item_the_second_is_refused(
    pool: asyncpg.Pool, campaign: CampaignMemory
) -> None:
    g = campaign.graph
    brom = await g.add_entity(EntityIn(name="Brom", type=EntityType.npc))
    alive = await g.add_relationship(RelationshipIn(source_id=brom.id, type="status", value="alive"))
    guess = Provenance(source=Source.stated, confidence=0.5)
    dead = await g.add_relationship(RelationshipIn(source_id=brom.id, type="status", value="dead", provenance=guess))
    assert dead.status == ReviewStatus.pending
    async with pool.acquire() as conn:
        first = conn.transaction()
        await first.start()
        await CampaignMemory(conn, campaign.campaign_id).review.accept(f"f{dead.id}")  # a click on Accept
        second = await _second_waits(pool, campaign.review.reject(f"f{dead.id}"))  # and one on Reject
        await first.commit()
    with pytest.raises(AlreadyDecidedError):
        await second
    assert (await g.get_relationship(dead.id)).status == ReviewStatus.accepted
    assert (await g.get_relationship(alive.id)).valid_to is not None
    assert [r.value for r in await g.relationships_of(brom.id) if r.type == "status"] == ["dead"]


async def test_contradicting_values_accepted_at_once_leave_one_current(
    pool: asyncpg.Pool, campaign: CampaignMemory
) -> None:
    brom = await campaign.graph.add_entity(EntityIn(name="Brom", type=EntityType.npc))
    sure = Provenance(source=Source.stated, confidence=0.9)
    async with pool.acquire() as conn:
        first = conn.transaction()
        await first.start()
        extraction = CampaignMemory(conn, campaign.campaign_id).graph
        await extraction.add_relationship(
            RelationshipIn(source_id=brom.id, type="status", value="dead", provenance=sure)
        )
        dm = await _second_waits(
            pool, campaign.graph.add_relationship(RelationshipIn(source_id=brom.id, type="status", value="alive"))
        )
        await first.commit()
    await dm
    current = [r.value for r in await campaign.graph.relationships_of(brom.id) if r.type == "status"]
    assert len(current) == 1, current


async def test_a_name_taken_meanwhile_is_refused(pool: asyncpg.Pool, campaign: CampaignMemory) -> None:
    async with pool.acquire() as conn:
        first = conn.transaction()
        await first.start()
        dm = CampaignMemory(conn, campaign.campaign_id).graph
        await dm.add_entity(EntityIn(name="Brom", type=EntityType.npc, aliases=["Bram"]))
        extraction = await _second_waits(
            pool, campaign.graph.add_entity(EntityIn(name="Bram", type=EntityType.npc, status=ReviewStatus.pending))
        )
        await first.commit()
    with pytest.raises(AlreadyExistsError):
        await extraction
    assert (await campaign.graph.find_entity("Bram")).name == "Brom"  # type: ignore[union-attr]


async def test_writers_of_several_entities_in_opposite_orders_take_turns(
    pool: asyncpg.Pool, campaign: CampaignMemory
) -> None:
    """Extraction, a recap and a campaign load each write facts of several entities in one transaction, each in
    its own order: one lock per campaign, so the second waits for the first instead of a deadlock."""
    g = campaign.graph
    brom = await g.add_entity(EntityIn(name="Brom", type=EntityType.npc))
    ilsa = await g.add_entity(EntityIn(name="Ilsa", type=EntityType.npc))
    async with pool.acquire() as conn:
        first = conn.transaction()
        await first.start()
        one = CampaignMemory(conn, campaign.campaign_id).graph
        await one.add_relationship(RelationshipIn(source_id=brom.id, type="lives_in", value="Ironhold"))

        async def other_order() -> None:
            async with campaign.transaction() as tx:
                await tx.graph.add_relationship(RelationshipIn(source_id=ilsa.id, type="lives_in", value="Saltmere"))
                await tx.graph.add_relationship(RelationshipIn(source_id=brom.id, type="knows", target_id=ilsa.id))

        second = await _second_waits(pool, other_order())
        await one.add_relationship(RelationshipIn(source_id=ilsa.id, type="knows", target_id=brom.id))
        await first.commit()
    await asyncio.wait_for(second, 10)
    assert len(await g.relationships_of(brom.id)) == 3


async def test_a_guilds_first_campaigns_created_at_once_are_all_created_one_active(pool: asyncpg.Pool) -> None:
    # each create saw no active campaign and took the active place; all but one failed as "already exists"
    for guild in range(987654321987654321, 987654321987654321 + 20):  # the race is narrow: give it many chances
        campaigns = Memory(pool).campaigns(guild_id=guild)
        created = await asyncio.gather(*(campaigns.create(f"Campaign {i}") for i in range(4)), return_exceptions=True)
        assert sorted(str(c.name) if not isinstance(c, Exception) else repr(c) for c in created) == [
            f"Campaign {i}" for i in range(4)
        ]
        assert sum(c.active for c in await campaigns.list()) == 1


async def test_a_heard_as_edit_during_a_campaign_load_waits_for_it(
    pool: asyncpg.Pool, campaign: CampaignMemory
) -> None:
    """The DM edits Frumpkin's heard-as phrases while a campaign load, which holds the graph's lock, has yet to
    write Frumpkin: the edit waits for the load before writing anything, where it had written Frumpkin's rows and
    then waited for the lock, and the load, waiting for those rows, deadlocked with it."""
    g = campaign.graph
    await g.add_entity(EntityIn(name="Frumpkin", type=EntityType.npc, heard_as=["from skin"]))
    await g.add_entity(EntityIn(name="Keyleth", type=EntityType.player))
    async with pool.acquire() as conn:
        first = conn.transaction()
        await first.start()
        load = CampaignMemory(conn, campaign.campaign_id).graph
        await load.lock()  # as ``apply_campaign_file`` does, before any write
        await load.upsert_entity(EntityIn(name="Keyleth", type=EntityType.player, description="A druid."))
        edit = await _second_waits(pool, g.update_entity("Frumpkin", heard_as=["frump kin"]))
        await load.upsert_entity(
            EntityIn(name="Frumpkin", type=EntityType.npc, description="A cat.", heard_as=["from skin"])
        )
        await first.commit()
    await asyncio.wait_for(edit, 10)
    frumpkin = await g.get_entity("Frumpkin")
    assert (frumpkin.description, frumpkin.heard_as) == ("A cat.", ["frump kin"])
