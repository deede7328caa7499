"""The review queue's "Same as…" decision on the real embedded PostgreSQL: a proposed entity that is one already
known ("the old man" is Vaskerrin Holt) is merged into it and leaves the queue; nothing of another campaign moves,
and a refused decision changes nothing."""

from __future__ import annotations

import json

import pytest

from memory.db import create_pool
from memory.errors import AlreadyDecidedError, InvalidInputError, NotFoundError
from memory.models import EntityIn, EntityType, Provenance, RelationshipIn, ReviewStatus, Source, Visibility
from memory.replies import describe_same_as
from memory.store import CampaignMemory, Memory

HEARD = Provenance(source=Source.inferred, confidence=0.4)


async def _table(mem: CampaignMemory) -> tuple[int, int, int]:
    """A proposed "the old man" with a fact of his own and one about him, beside the known Vaskerrin Holt."""
    g = mem.graph
    holt = await g.add_entity(EntityIn(name="Vaskerrin Holt", type=EntityType.npc, aliases=["Vaskerrin"]))
    keep = await g.add_entity(EntityIn(name="Caddo Keep", type=EntityType.place))
    old = await g.add_entity(
        EntityIn(name="the old man", type=EntityType.npc, status=ReviewStatus.pending, provenance=HEARD)
    )
    await g.add_relationship(RelationshipIn(source_id=old.id, type="lives_in", target_id=keep.id, provenance=HEARD))
    await g.add_relationship(RelationshipIn(source_id=keep.id, type="shelters", target_id=old.id, provenance=HEARD))
    return holt.id, old.id, keep.id


async def test_same_as_merges_the_proposed_entity_into_the_known_one(memory: Memory) -> None:
    mem = memory.campaign((await memory.campaigns(1).create("A")).id)
    other = memory.campaign((await memory.campaigns(1).create("B")).id)
    holt_id, old_id, _ = await _table(mem)
    other_ids = await _table(other)  # the same names in another campaign
    assert await mem.review.count() == 3

    result = await mem.review.same_as(f" E{old_id} ", "vaskerrin")  # an alias, in any case

    assert (result.entity.id, result.merged.id, result.facts_moved) == (holt_id, old_id, 2)
    assert result.aliases_added == ["the old man"] and set(result.entity.aliases) == {"Vaskerrin", "the old man"}
    assert result.entity.status == ReviewStatus.accepted
    assert (await mem.graph.get_entity("The Old Man")).id == holt_id
    with pytest.raises(NotFoundError):
        await mem.review.get(f"e{old_id}")
    # the entity left the queue; its facts, now Vaskerrin Holt's, still wait for the DM
    facts = [f.describe() for f in await mem.review.pending()]
    assert sorted(facts) == ["Caddo Keep shelters Vaskerrin Holt", "Vaskerrin Holt lives in Caddo Keep"]
    assert await mem.review.count() == 2

    # nothing of the other campaign moved
    assert await other.review.count() == 3
    assert (await other.graph.get_entity_by_id(other_ids[1])).status == ReviewStatus.pending
    assert (await other.graph.get_entity("Vaskerrin Holt")).aliases == ["Vaskerrin"]
    with pytest.raises(NotFoundError):
        await other.review.same_as(f"e{old_id}", "Vaskerrin Holt")  # A's item, through B: unknown there


async def test_same_as_says_which_facts_it_dropped(campaign: CampaignMemory) -> None:
    """A fact between the two would be about one entity and itself; one the known entity has is a copy."""
    g = campaign.graph
    holt_id, old_id, keep_id = await _table(campaign)
    await g.add_relationship(RelationshipIn(source_id=old_id, type="father_of", target_id=holt_id, provenance=HEARD))
    await g.add_relationship(RelationshipIn(source_id=holt_id, type="lives_in", target_id=keep_id))

    said = describe_same_as(await campaign.review.same_as(f"e{old_id}", "Vaskerrin Holt"))

    assert said == (
        "Same as Vaskerrin Holt: 'the old man' kept as an alias, 1 fact moved, 1 fact Vaskerrin Holt already had "
        "dropped, 1 fact between the old man and Vaskerrin Holt dropped."
    )


async def test_same_as_says_the_proposed_description_was_dropped(campaign: CampaignMemory) -> None:
    """The known entity keeps its own description; the proposal's, maybe edited by the DM, is not lost unsaid."""
    g = campaign.graph
    holt_id, old_id, _ = await _table(campaign)
    await g.update_entity("Vaskerrin Holt", description="The harbourmaster")
    await g.update_entity("the old man", description="Sells   maps\nat the docks")

    said = describe_same_as(await campaign.review.same_as(f"e{old_id}", "Vaskerrin Holt"))

    assert said == (
        "Same as Vaskerrin Holt: 'the old man' kept as an alias, 2 facts moved. the old man's description was "
        "dropped, as Vaskerrin Holt has its own: 'Sells maps at the docks'."
    )
    assert (await g.get_entity_by_id(holt_id)).description == "The harbourmaster"


async def test_same_as_a_secret_entity_keeps_the_proposals_name_hidden_from_players(campaign: CampaignMemory) -> None:
    """The extractor files "Vaskerrin", said alone, and the DM says it is the secret Vaskerrin Holt: the name is
    kept as an alias, to be found and corrected towards, but players read a secret entity's aliases, and this one
    they never could."""
    g = campaign.graph
    await g.add_entity(
        EntityIn(name="Vaskerrin Holt", type=EntityType.npc, visibility=Visibility.secret, aliases=["Pale Magister"])
    )
    proposal = await g.add_entity(
        EntityIn(name="Vaskerrin", type=EntityType.npc, status=ReviewStatus.pending, provenance=HEARD)
    )
    said = "Vaskerrin smiled at the Pale Magister."
    assert (await g.player_mask())(said) == "[secret] smiled at the Pale Magister."

    result = await campaign.review.same_as(f"e{proposal.id}", "Vaskerrin Holt")
    assert result.entity.aliases == ["Pale Magister", "Vaskerrin"]
    assert (await g.get_entity("vaskerrin")).id == result.entity.id
    assert (await g.player_mask())(said) == "[secret] smiled at the Pale Magister."
    assert describe_same_as(result) == (
        "Same as Vaskerrin Holt: 'Vaskerrin' kept as an alias (hidden from players, as Vaskerrin Holt is secret), "
        "0 facts moved."
    )

    await g.update_entity("Vaskerrin Holt", visibility=Visibility.public)  # no secret now
    assert (await g.player_mask())(said) == said


async def test_same_as_refuses_what_it_cannot_merge_and_changes_nothing(campaign: CampaignMemory) -> None:
    g, q = campaign.graph, campaign.review
    holt_id, old_id, keep_id = await _table(campaign)
    fact = (await q.pending())[1].ref
    grog = await g.add_entity(EntityIn(name="Grog", type=EntityType.npc, status=ReviewStatus.pending, provenance=HEARD))
    arrival = await g.add_entity(
        EntityIn(name="Arrival at Caddo Keep", type=EntityType.event, status=ReviewStatus.pending, provenance=HEARD)
    )
    await g.add_entity(EntityIn(name="The Siege", type=EntityType.event))
    before = [i.model_dump() for i in await q.pending()]

    refusals: list[tuple[str, str, type[Exception], str]] = [
        (fact, "Vaskerrin Holt", InvalidInputError, f"{fact} is a fact: only a proposed entity"),
        (f"e{old_id}", "Vaskerin", NotFoundError, "no entity named 'Vaskerin' in this campaign (did you mean"),
        (f"e{old_id}", "The Old Man", InvalidInputError, f"'The Old Man' is e{old_id} itself"),
        (f"e{old_id}", "grog", InvalidInputError, f"'Grog' is waiting for review too (e{grog.id}): accept it first"),
        (f"e{holt_id}", "Caddo Keep", AlreadyDecidedError, f"e{holt_id} was already accepted"),
        ("e999999", "Vaskerrin Holt", NotFoundError, "no review item e999999 in this campaign"),
        ("x1", "Vaskerrin Holt", InvalidInputError, "'x1' is not a review item id"),
        # an event is never a place (merged, the place answered to "Arrival at Caddo Keep"), nor a place an event
        (
            f"e{arrival.id}",
            "Caddo Keep",
            InvalidInputError,
            f"e{arrival.id} 'Arrival at Caddo Keep' is an event and 'Caddo Keep' a location: an event is only ever "
            f"the same as another event. Accept or reject e{arrival.id}; if it is Caddo Keep after all, give it that "
            f"type first (Edit, or `lorekeeper review edit e{arrival.id} --type location`), then merge the two "
            "(/entity merge, or `lorekeeper entity merge 'Arrival at Caddo Keep' 'Caddo Keep'`)",
        ),
        (f"e{old_id}", "The Siege", InvalidInputError, f"e{old_id} 'the old man' is an npc and 'The Siege' an event"),
    ]
    for ref, name, error, message in refusals:
        with pytest.raises(error) as raised:
            await q.same_as(ref, name)
        assert str(raised.value).startswith(message), (ref, name, str(raised.value))
    assert [i.model_dump() for i in await q.pending()] == before

    # over the alias cap: refused by the merge itself, before anything changes
    crowded = await g.add_entity(
        EntityIn(name="Crowded", type=EntityType.npc, aliases=[f"Name {i}" for i in range(50)])
    )
    with pytest.raises(InvalidInputError, match="more than the 50 allowed"):
        await q.same_as(f"e{old_id}", crowded.name)
    assert [i.model_dump() for i in await q.pending()] == before
    assert (await g.get_entity_by_id(keep_id)).status == ReviewStatus.accepted


async def test_review_same_on_the_command_line(lk, fresh_dsn: str) -> None:
    assert lk("campaign", "create", "C").returncode == 0
    pool = await create_pool(fresh_dsn)
    try:
        memory = Memory(pool)
        mem = memory.campaign((await memory.campaigns().get("C")).id)
        holt_id, old_id, _ = await _table(mem)
        grog = await mem.graph.add_entity(
            EntityIn(name="Grog", type=EntityType.npc, status=ReviewStatus.pending, provenance=HEARD)
        )

        res = lk("review", "same", f"e{old_id}", "Vaskerin")
        assert res.returncode == 1 and res.stdout == ""
        assert res.stderr == "error: no entity named 'Vaskerin' in campaign 'C' (did you mean 'Vaskerrin Holt'?)\n"

        res = lk("review", "same", f"e{old_id}", "Vaskerrin")
        assert res.returncode == 0, res.stderr
        assert res.stdout == "Same as Vaskerrin Holt: 'the old man' kept as an alias, 2 facts moved.\n"
        assert (await mem.graph.get_entity("the old man")).id == holt_id

        res = lk("review", "same", f"e{grog.id}", "Vaskerrin Holt", "--json")
        assert res.returncode == 0, res.stderr
        done = json.loads(res.stdout)
        assert (done["ref"], done["entity"]["name"], done["aliases_added"]) == (
            f"e{grog.id}",
            "Vaskerrin Holt",
            ["Grog"],
        )

        res = lk("review", "same", f"e{old_id}", "Vaskerrin Holt")
        assert res.returncode == 1
        assert res.stderr.startswith(f"error: no review item e{old_id} in campaign 'C': `lorekeeper review list`")
    finally:
        await pool.close()
