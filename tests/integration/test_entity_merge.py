"""Merging two entities that are one (the offline extractor's "Gorrim" and "Gorrim Ashfoot") on the real embedded
PostgreSQL: every fact, name and mention ends on the one kept; nothing of another campaign moves."""

from __future__ import annotations

import numpy as np
import pytest

from memory.errors import InvalidInputError, NotFoundError
from memory.models import (
    ChunkIn,
    Correction,
    EntityIn,
    EntityType,
    EntryIn,
    Provenance,
    RelationshipIn,
    ReviewStatus,
    Visibility,
)
from memory.store import CampaignMemory, Memory

HEARD = Provenance(source="inferred", confidence=0.4)


def vec(hot: int, dim: int = 384) -> list[float]:
    v = np.zeros(dim, dtype=np.float32)
    v[hot] = 1.0
    return v.tolist()


async def test_merge_moves_every_fact_and_mention_and_keeps_pending_ones_for_review(campaign: CampaignMemory) -> None:
    g, q = campaign.graph, campaign.review
    full = await g.add_entity(
        EntityIn(name="Gorrim Ashfoot", type=EntityType.npc, status=ReviewStatus.pending, provenance=HEARD)
    )
    short = await g.add_entity(
        EntityIn(
            name="Gorrim",
            type=EntityType.npc,
            aliases=["Old Gor"],
            description="A smith",
            attributes={"race": "dwarf"},
            status=ReviewStatus.pending,
            provenance=HEARD,
        )
    )
    keep = await g.add_entity(EntityIn(name="Caddo Keep", type=EntityType.place))
    mira = await g.add_entity(EntityIn(name="Mira", type=EntityType.npc))
    lives = await g.add_relationship(
        RelationshipIn(source_id=short.id, type="lives_in", target_id=keep.id, provenance=HEARD)
    )
    knows = await g.add_relationship(RelationshipIn(source_id=mira.id, type="knows", target_id=short.id))
    # the same fact on both: the DM's accepted copy stays, the guess waiting for review goes
    sure = await g.add_relationship(RelationshipIn(source_id=short.id, type="occupation", value="smith"))
    guess = await g.add_relationship(
        RelationshipIn(source_id=full.id, type="occupation", value="smith", provenance=HEARD)
    )
    loop = await g.add_relationship(RelationshipIn(source_id=short.id, type="kin_of", target_id=full.id))
    session = await campaign.log.start_session("S1")
    fix = Correction(span="gorum", replacement="Gorrim", start=0, end=5, entity_id=short.id, score=0.9)
    await campaign.log.write(session.id, EntryIn(speaker="DM", text="Gorrim waves.", corrections=[fix]))
    await campaign.semantic.upsert(
        [ChunkIn(key="k", session_id=session.id, text="Gorrim waves.", embedding=vec(1), entity_ids=[short.id])]
    )

    result = await g.merge_entities("old gor", "Gorrim Ashfoot")

    assert (result.facts_moved, result.duplicates_dropped, result.self_loops_dropped) == (2, 1, 1)
    assert result.aliases_added == ["Gorrim", "Old Gor"] and result.names_withheld == []
    merged = result.entity
    assert merged.id == full.id and merged.aliases == ["Gorrim", "Old Gor"]
    assert merged.description == "A smith" and merged.attributes == {"race": "dwarf"}
    assert result.description_dropped == "" and "description" not in result.describe()
    assert merged.status == ReviewStatus.pending  # both were guesses: still the DM's to accept
    assert (await g.get_entity("Gorrim")).id == full.id
    with pytest.raises(NotFoundError):
        await g.get_entity_by_id(short.id)
    moved = await g.get_relationship(lives.id)
    assert moved.describe() == "Gorrim Ashfoot —lives_in→ Caddo Keep" and moved.status == ReviewStatus.pending
    assert (await g.get_relationship(knows.id)).describe() == "Mira —knows→ Gorrim Ashfoot"
    kept = await g.get_relationship(sure.id)
    assert kept.describe() == "Gorrim Ashfoot —occupation→ smith" and kept.status == ReviewStatus.accepted
    assert [m["id"] for m in kept.provenance.model_dump()["merged"]] == [guess.id]
    for gone in (guess.id, loop.id):
        with pytest.raises(NotFoundError):
            await g.get_relationship(gone)
    assert {i.ref for i in await q.pending()} == {f"e{full.id}", f"f{lives.id}"}
    (entry,) = await campaign.log.session_entries(session.id)
    assert [c.entity_id for c in entry.corrections] == [full.id]
    assert [c.key for c in await campaign.semantic.nearest(vec(1), entity_id=full.id)] == ["k"]


async def test_merging_an_accepted_entity_into_a_pending_one_accepts_it_and_keeps_what_it_has(
    campaign: CampaignMemory,
) -> None:
    g = campaign.graph
    await g.add_entity(
        EntityIn(
            name="Gorrim Ashfoot",
            type=EntityType.npc,
            description="The smith of Caddo Keep",
            attributes={"race": "dwarf"},
            status=ReviewStatus.pending,
            provenance=HEARD,
        )
    )
    await g.add_entity(
        EntityIn(name="Gorrim", type=EntityType.npc, description="A smith", attributes={"race": "elf", "age": 90})
    )
    result = await g.merge_entities("Gorrim", "Gorrim Ashfoot")
    assert result.entity.status == ReviewStatus.accepted
    assert result.entity.description == "The smith of Caddo Keep"
    assert result.entity.attributes == {"race": "dwarf", "age": 90}
    assert result.description_dropped == "A smith"  # kept's own stays; the DM is told what went
    assert result.attributes_dropped == {"race": "elf"}
    assert result.describe() == (
        "Merged Gorrim into Gorrim Ashfoot: 0 facts moved; new aliases: Gorrim; Gorrim's description was dropped, "
        "as Gorrim Ashfoot has its own: 'A smith'; Gorrim's race: elf was dropped, as Gorrim Ashfoot has race: dwarf."
    )


async def test_a_secret_entity_merged_into_a_public_one_gives_it_no_names_and_its_facts_stay_secret(
    campaign: CampaignMemory,
) -> None:
    g = campaign.graph
    dragon = await g.add_entity(EntityIn(name="Eldrinax", type=EntityType.npc))
    mab = await g.add_entity(
        EntityIn(
            name="Queen Mab",
            type=EntityType.npc,
            aliases=["The Veiled Queen"],
            description="Eldrinax in disguise",
            visibility=Visibility.secret,
        )
    )
    court = await g.add_entity(EntityIn(name="Fey Court", type=EntityType.faction))
    rules = await g.add_relationship(RelationshipIn(source_id=mab.id, type="rules", target_id=court.id))
    result = await g.merge_entities("Queen Mab", "Eldrinax")
    assert result.aliases_added == [] and result.names_withheld == ["Queen Mab", "The Veiled Queen"]
    assert result.facts_made_secret == 1
    assert result.entity.aliases == [] and result.entity.description == ""
    assert (await g.get_relationship(rules.id)).visibility == Visibility.secret
    assert await g.relationships_of(dragon.id) == []  # players see nothing new
    assert [r.id for r in await g.relationships_of(dragon.id, include_secret=True)] == [rules.id]
    assert await g.find_entity("Queen Mab") is None


async def test_a_public_entity_merged_into_a_secret_one_is_no_name_players_read_now(campaign: CampaignMemory) -> None:
    """Players read a secret entity's aliases: the merged one's name becomes one, hidden as if it had been made
    secret; its aliases stay as readable as they were."""
    g = campaign.graph
    await g.add_entity(EntityIn(name="Vaskerrin Holt", type=EntityType.npc, visibility=Visibility.secret))
    await g.add_entity(EntityIn(name="Old Tom", type=EntityType.npc, aliases=["the old man"]))
    result = await g.merge_entities("Old Tom", "Vaskerrin Holt")
    assert result.describe() == (
        "Merged Old Tom into Vaskerrin Holt: 0 facts moved; new aliases: Old Tom, the old man (Old Tom hidden from "
        "players, as Vaskerrin Holt is secret)."
    )
    assert (await g.player_mask())("Old Tom, the old man, waits.") == "[secret], the old man, waits."


async def test_merge_refuses_one_entity_and_stays_in_its_campaign(memory: Memory) -> None:
    a = memory.campaign((await memory.campaigns(1).create("A")).id)
    b = memory.campaign((await memory.campaigns(1).create("B")).id)
    for mem in (a, b):
        await mem.graph.add_entity(EntityIn(name="Gorrim Ashfoot", type=EntityType.npc, aliases=["Ashfoot"]))
        await mem.graph.add_entity(EntityIn(name="Gorrim", type=EntityType.npc, description=mem.campaign_id * "x"))
    other = await b.graph.add_entity(EntityIn(name="Only In B", type=EntityType.npc))
    with pytest.raises(InvalidInputError, match="'Ashfoot' and 'gorrim ashfoot' both name 'Gorrim Ashfoot'"):
        await a.graph.merge_entities("Ashfoot", "gorrim ashfoot")
    with pytest.raises(NotFoundError, match="no entity named 'Only In B'"):
        await a.graph.merge_entities(other.name, "Gorrim")

    await a.graph.merge_entities("Gorrim", "Gorrim Ashfoot")

    assert (await a.graph.get_entity("Gorrim")).name == "Gorrim Ashfoot"
    untouched = await b.graph.get_entity("Gorrim")
    assert untouched.name == "Gorrim" and untouched.description == b.campaign_id * "x"
    assert (await b.graph.get_entity("Gorrim Ashfoot")).aliases == ["Ashfoot"]


async def test_a_merge_that_would_pass_the_heard_as_cap_is_refused_before_anything_changes(
    campaign: CampaignMemory,
) -> None:
    """The phrases move with the merge: over the cap, the entity could not be edited but to drop some."""
    g = campaign.graph
    full = await g.add_entity(
        EntityIn(name="Gorrim Ashfoot", type=EntityType.npc, heard_as=[f"gore m {i}" for i in range(45)])
    )
    short = await g.add_entity(
        EntityIn(name="Gorrim", type=EntityType.npc, heard_as=[f"gore rim {i}" for i in range(6)])
    )
    with pytest.raises(InvalidInputError) as refused:
        await g.merge_entities("Gorrim", "Gorrim Ashfoot")
    assert str(refused.value) == (
        "merged, Gorrim Ashfoot would have 51 heard-as phrases (45 of its own, 6 from Gorrim), more than the 50 "
        "allowed: edit those of either down to what the recogniser writes, then merge again"
    )
    assert (await g.get_entity("Gorrim")).heard_as == short.heard_as  # nothing changed
    assert (await g.get_entity_by_id(full.id)).heard_as == full.heard_as

    await g.update_entity("Gorrim", heard_as=short.heard_as[:5])
    merged = (await g.merge_entities("Gorrim", "Gorrim Ashfoot")).entity
    assert len(merged.heard_as) == 50


async def test_a_merge_that_would_pass_the_alias_cap_is_refused_before_anything_changes(
    campaign: CampaignMemory,
) -> None:
    """The cap held for every write but a merge: the entity left with 51 aliases could not even be renamed."""
    g = campaign.graph
    full = await g.add_entity(
        EntityIn(name="Gorrim Ashfoot", type=EntityType.npc, aliases=[f"Smith {i}" for i in range(45)])
    )
    short = await g.add_entity(
        EntityIn(name="Gorrim", type=EntityType.npc, aliases=["Old Gor", "Gor", "Ashfoot", "The Smith", "Goz"])
    )
    keep = await g.add_entity(EntityIn(name="Caddo Keep", type=EntityType.place))
    lives = await g.add_relationship(RelationshipIn(source_id=short.id, type="lives_in", target_id=keep.id))
    with pytest.raises(InvalidInputError) as refused:
        await g.merge_entities("Gorrim", "Gorrim Ashfoot")
    assert str(refused.value) == (
        "merged, Gorrim Ashfoot would have 51 aliases (45 of its own, 6 from Gorrim), more than the 50 allowed: "
        "edit the aliases of either down to the names the table uses, then merge again"
    )
    assert (await g.get_entity("Gorrim")).aliases == short.aliases
    assert len((await g.get_entity_by_id(full.id)).aliases) == 45
    assert (await g.get_relationship(lives.id)).source_id == short.id

    await g.update_entity("Gorrim", aliases=["Old Gor", "Gor", "Ashfoot", "The Smith"])
    merged = (await g.merge_entities("Gorrim", "Gorrim Ashfoot")).entity
    assert len(merged.aliases) == 50
    # a secret one's names are withheld from a public entity (aliases are public): nothing to count
    await g.add_entity(EntityIn(name="The Veiled Smith", type=EntityType.npc, aliases=["Veil"], visibility="secret"))
    hidden = await g.merge_entities("The Veiled Smith", "Gorrim Ashfoot")
    assert hidden.names_withheld == ["The Veiled Smith", "Veil"] and len(hidden.entity.aliases) == 50
