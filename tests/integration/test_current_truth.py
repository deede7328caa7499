"""The graph says what is true now: one holder of an item and one ruler of a place, whichever end a fact was stated
from (tester report ud)."""

from __future__ import annotations

import pytest

from memory.errors import NotFoundError
from memory.extraction import RuleExtractor, extract_into_graph
from memory.models import EntityIn, EntityType, EntryIn, Provenance, RelationshipIn, ReviewItem, ReviewStatus, Source
from memory.store import CampaignMemory


async def test_an_item_passed_hand_to_hand_and_a_place_changing_ruler_have_one_current_holder_and_ruler(
    campaign: CampaignMemory,
) -> None:
    g = campaign.graph
    for name, kind in [("Sunblade", EntityType.item), ("Greywatch", EntityType.place)]:
        await g.add_entity(EntityIn(name=name, type=kind))
    for name in ("Thalia", "Mira", "Korrin", "Serah", "Balcor", "Greta"):
        await g.add_entity(EntityIn(name=name, type=EntityType.npc))
    await g.link("Sunblade", "owned_by", "Thalia")
    await g.link("Greywatch", "ruled_by", "Serah")
    night = await campaign.log.start_session("Night 2")

    async def heard(source: str, type: str, target: str, at: float) -> str:
        said = Provenance(source=Source.stated, confidence=0.5, session_id=night.id, timestamp=at)
        fact, _ = await g.ensure_relationship(
            RelationshipIn(
                source_id=(await g.get_entity(source)).id,
                type=type,
                target_id=(await g.get_entity(target)).id,
                provenance=said,
            )
        )
        return (await campaign.review.accept(f"f{fact.id}")).settled()

    # what the extractor files: the verb it read, the holder as the source
    assert await heard("Mira", "has", "Sunblade", 1.0) == "closed: Sunblade is owned by Thalia"
    assert await heard("Korrin", "carried", "Sunblade", 2.0) == "closed: Mira has Sunblade"
    assert await heard("Balcor", "leader_of", "Greywatch", 3.0) == "closed: Greywatch is ruled by Serah"
    sunblade, greywatch = await g.get_entity("Sunblade"), await g.get_entity("Greywatch")
    assert [r.describe() for r in await g.relationships_of(sunblade.id)] == ["Korrin —carried→ Sunblade"]
    assert [r.describe() for r in await g.relationships_of(greywatch.id)] == ["Balcor —leader_of→ Greywatch"]

    # the DM's word from the other end: the same fact again, or a new holder and ruler closing the old
    assert (await g.link("Sunblade", "owned_by", "Korrin")).outcome == "already linked"
    linked = await g.link("Sunblade", "owned_by", "Mira")
    assert [r.describe() for r in linked.closed] == ["Korrin —carried→ Sunblade"]
    linked = await g.link("Greywatch", "ruled_by", "Greta")
    assert [r.describe() for r in linked.closed] == ["Balcor —leader_of→ Greywatch"]
    assert [r.describe() for r in await g.relationships_of(greywatch.id)] == ["Greywatch —ruled_by→ Greta"]
    # one may lead a city and a guild: only the place has one ruler at a time
    guild = await g.add_entity(EntityIn(name="The Iron Circle", type=EntityType.faction))
    assert (await g.link("Greta", "leader_of", guild.name)).closed == []


async def test_unlink_undoes_only_the_current_fact_and_keeps_history_and_rejections(campaign: CampaignMemory) -> None:
    """ "entity unlink" deleted every record of the value: the history of a death, and a fact rejected in review,
    which the next session then proposed again (tester report ud, item 3)."""
    g = campaign.graph
    bram = await g.add_entity(EntityIn(name="Bram", type=EntityType.npc))
    await g.link("Bram", "status", value="dead")
    await g.link("Bram", "status", value="alive")
    with pytest.raises(NotFoundError, match=r"^Bram has no current 'status' fact of dead: unlink undoes a current"):
        await g.unlink("Bram", "status", "dead")  # what was true before
    assert [r.describe() for r in await g.history(bram.id)] == ["Bram —status→ dead"]

    async def night(title: str) -> list[ReviewItem]:
        session = await campaign.log.start_session(title)
        said = await campaign.log.write_many(session.id, [EntryIn(speaker="DM", text="Bram is dead.")])
        await extract_into_graph(campaign, session_id=session.id, entries=said, extractor=RuleExtractor())
        return [i for i in await campaign.review.pending() if i.fact is not None and i.fact.type == "status"]

    (heard,) = await night("Night 1")  # it waits: it would end the DM's "alive"
    await campaign.review.reject(f"f{heard.id}")
    with pytest.raises(NotFoundError, match="no current 'status' fact of dead"):
        await g.unlink("Bram", "status", "dead")
    # the DM records the death, then undoes it as a mistake: "alive" comes back, and neither the mistake nor the
    # rejection is proposed again
    await g.link("Bram", "status", value="dead")
    undone = await g.unlink("Bram", "status", "dead")
    assert undone.describe() == "Unlinked Bram is dead; current again: Bram is alive"
    assert (await campaign.review.get(f"f{heard.id}")).fact.status == ReviewStatus.rejected  # type: ignore[union-attr]
    assert await night("Night 2") == []
    assert [r.describe() for r in await g.history(bram.id)] == ["Bram —status→ dead"]
    assert [r.describe() for r in await g.relationships_of(bram.id)] == ["Bram —status→ alive"]


async def test_a_merge_settles_two_facts_that_disagree_and_says_which_is_history(campaign: CampaignMemory) -> None:
    """A merge brought a dead NPC back to life without a word (tester report ud, item 4): the newer fact stands,
    whichever entity had it, and the preview and the result name the one that is history now."""
    g = campaign.graph
    await g.add_entity(EntityIn(name="Osric", type=EntityType.npc))
    pell = await g.add_entity(EntityIn(name="Osric Pell", type=EntityType.npc))
    await g.link("Osric", "status", value="alive")
    await g.link("Osric Pell", "status", value="dead")  # the newer
    preview = await g.merge_entities("Osric", "Osric Pell", preview=True)
    assert preview.history_now() == "now history, as a newer fact says otherwise: Osric Pell is alive"
    assert await g.find_entity("Osric") is not None  # nothing changed
    merged = await g.merge_entities("Osric", "Osric Pell")
    assert merged.describe() == (
        "Merged Osric into Osric Pell: 1 fact moved; new aliases: Osric; now history, as a newer fact says "
        "otherwise: Osric Pell is alive."
    )
    assert [r.describe() for r in await g.relationships_of(pell.id)] == ["Osric Pell —status→ dead"]


async def test_a_family_tie_said_from_the_other_side_is_the_same_fact(campaign: CampaignMemory) -> None:
    """ "Serah Dunmore, the sister of Ilsa Varn" after "Ilsa Varn —sibling_of→ Serah Dunmore" was a second current
    fact (tester report ud, item 9)."""
    g = campaign.graph
    ilsa = await g.add_entity(EntityIn(name="Ilsa Varn", type=EntityType.npc))
    serah = await g.add_entity(EntityIn(name="Serah Dunmore", type=EntityType.npc))
    await g.link("Ilsa Varn", "sibling_of", "Serah Dunmore")
    heard = Provenance(source=Source.stated, confidence=0.5)
    fact, created = await g.ensure_relationship(
        RelationshipIn(source_id=serah.id, type="sibling_of", target_id=ilsa.id, provenance=heard)
    )
    assert not created and fact.describe() == "Ilsa Varn —sibling_of→ Serah Dunmore"  # nothing to review
    assert (await g.link("Serah Dunmore", "spouse_of", "Ilsa Varn")).outcome == "linked"
    assert (await g.link("Ilsa Varn", "spouse_of", "Serah Dunmore")).outcome == "already linked"
    assert [r.describe() for r in await g.relationships_of(serah.id)] == [
        "Ilsa Varn —sibling_of→ Serah Dunmore",
        "Serah Dunmore —spouse_of→ Ilsa Varn",
    ]


async def test_players_read_a_new_holder_stated_from_either_end_as_closing_the_one_a_secret_fact_replaced(
    campaign: CampaignMemory,
) -> None:
    """A secret fact closes the public one only for the DM: players read that one until a fact they see closes it,
    by the DM's rule, inverses too. "Vex has the Bow" after "the Bow owned_by Keyleth" and a secret holder left
    players two current holders."""
    g = campaign.graph
    for name, kind in [("Bow", EntityType.item), ("Greywatch", EntityType.place)]:
        await g.add_entity(EntityIn(name=name, type=kind))
    for name in ("Keyleth", "Percy", "Vex", "Serah", "Balcor", "Greta"):
        await g.add_entity(EntityIn(name=name, type=EntityType.npc))
    bow, greywatch = await g.get_entity("Bow"), await g.get_entity("Greywatch")

    async def players_read(entity_id: int) -> list[str]:
        return [r.describe() for r in await g.relationships_of(entity_id)]

    await g.link("Bow", "owned_by", "Keyleth")
    await g.link("Bow", "owned_by", "Percy", secret=True)
    assert await players_read(bow.id) == ["Bow —owned_by→ Keyleth"]  # they never learned of Percy
    await g.link("Vex", "has", "Bow")
    assert await players_read(bow.id) == ["Vex —has→ Bow"]
    # and the other way round: a ruler stated as leader_of, closed for players by a ruled_by
    await g.link("Serah", "leader_of", "Greywatch")
    await g.link("Greywatch", "ruled_by", "Balcor", secret=True)
    assert await players_read(greywatch.id) == ["Serah —leader_of→ Greywatch"]
    await g.link("Greywatch", "ruled_by", "Greta")
    assert await players_read(greywatch.id) == ["Greywatch —ruled_by→ Greta"]
    past = await g.relationships_of(greywatch.id, include_history=True)
    assert [(r.describe(), r.valid_to is None) for r in past if r.source_id != greywatch.id] == [
        ("Serah —leader_of→ Greywatch", False)
    ]
    # Vex may hold other things: a holder of another item closes nothing for players either
    await g.add_entity(EntityIn(name="Dagger", type=EntityType.item))
    await g.link("Vex", "has", "Dagger")
    assert await players_read(bow.id) == ["Vex —has→ Bow"]


async def test_a_leader_or_a_killer_in_other_words_is_the_same_relation(campaign: CampaignMemory) -> None:
    """ "led_by" is "ruled_by" in other words, so the other end of "leader_of": a new leader stated any of the three
    ways closes the old, and the same one again is "already linked"; "killed" and "killed_by", kin and allies stated
    from either end or in other words are one fact."""
    g = campaign.graph
    await g.add_entity(EntityIn(name="The Iron Circle", type=EntityType.faction))
    for name in ("Greta", "Balcor", "Serah", "Jazna", "Grog", "Ilsa"):
        await g.add_entity(EntityIn(name=name, type=EntityType.npc))
    circle = await g.get_entity("The Iron Circle")
    await g.link("The Iron Circle", "led_by", "Greta")
    assert (await g.link("Greta", "leader_of", "The Iron Circle")).outcome == "already linked"
    assert (await g.link("The Iron Circle", "ruled_by", "Greta")).outcome == "already linked"
    linked = await g.link("Balcor", "leader_of", "The Iron Circle")
    assert [r.describe() for r in linked.closed] == ["The Iron Circle —led_by→ Greta"]
    linked = await g.link("The Iron Circle", "led_by", "Serah")
    assert [r.describe() for r in linked.closed] == ["Balcor —leader_of→ The Iron Circle"]
    assert [r.describe() for r in await g.relationships_of(circle.id)] == ["The Iron Circle —led_by→ Serah"]

    await g.link("Grog", "killed", "Jazna")
    assert (await g.link("Jazna", "killed_by", "Grog")).outcome == "already linked"
    await g.link("Ilsa", "parent_of", "Serah")
    assert (await g.link("Serah", "child_of", "Ilsa")).outcome == "already linked"
    await g.link("Ilsa", "ally_of", "Greta")
    assert (await g.link("Greta", "allied_with", "Ilsa")).outcome == "already linked"
    assert (await g.link("Ilsa", "allied_with", "Greta")).outcome == "already linked"
    # one may have several children and allies
    assert (await g.link("Ilsa", "parent_of", "Jazna")).closed == []
    assert (await g.link("Ilsa", "ally_of", "Grog")).closed == []


async def test_unlink_finds_a_fact_stated_from_its_other_end_or_in_other_words(campaign: CampaignMemory) -> None:
    """ "entity unlink Bow owned_by Vex" after "Vex has Bow" said Bow had no such fact, though the graph reads the
    two as one; so did "ruled_by" for "led_by". What the mistake closed comes back."""
    g = campaign.graph
    bow = await g.add_entity(EntityIn(name="Bow", type=EntityType.item))
    await g.add_entity(EntityIn(name="The Circle", type=EntityType.faction))
    for name in ("Keyleth", "Vex"):
        await g.add_entity(EntityIn(name=name, type=EntityType.npc))
    await g.link("Bow", "owned_by", "Keyleth")
    await g.link("Vex", "has", "Bow")
    undone = await g.unlink("Bow", "owned_by", "Vex")
    assert undone.describe() == "Unlinked Vex has Bow; current again: Bow is owned by Keyleth"
    assert [r.describe() for r in await g.relationships_of(bow.id)] == ["Bow —owned_by→ Keyleth"]
    await g.link("Keyleth", "leader_of", "The Circle")
    await g.link("The Circle", "led_by", "Vex")
    undone = await g.unlink("The Circle", "ruled_by", "Vex")
    assert undone.describe() == "Unlinked The Circle is led by Vex; current again: Keyleth leads The Circle"
