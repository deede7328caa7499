"""The entities a recall query names, with what the graph knows of them now, on the real embedded PostgreSQL."""

from __future__ import annotations

import pytest

from memory import recall
from memory.models import Entity, EntityIn, EntityType, RelationshipIn, ReviewStatus, Visibility
from memory.recall import KnownFact, named_entities
from memory.store import CampaignMemory, Memory

# its type as stored for machines (--json, MCP), its words for the DM (/recall, `lorekeeper recall`)
PIPS_KEY = KnownFact(text="Ember Key —owned_by→ Pip", words="Ember Key is owned by Pip", secret=False)


async def ember_key(campaign: CampaignMemory) -> None:
    """Night 1: Thrennick has the Ember Key; later Pip does. A secret patron, and an NPC still in review."""
    g = campaign.graph
    await g.add_entity(EntityIn(name="Ember", type=EntityType.place, description="a mining town"))
    key = await g.add_entity(
        EntityIn(name="Ember Key", type=EntityType.item, description="Opens the Vaskerrin vault", aliases=["the key"])
    )
    thrennick = await g.add_entity(EntityIn(name="Thrennick", type=EntityType.npc, aliases=["the fence"]))
    pip = await g.add_entity(EntityIn(name="Pip", type=EntityType.npc, description="a halfling thief"))
    holt = await g.add_entity(EntityIn(name="Vaskerrin Holt", type=EntityType.npc, visibility=Visibility.secret))
    await g.add_entity(EntityIn(name="Mira", type=EntityType.npc, status=ReviewStatus.pending))
    await g.add_relationship(RelationshipIn(source_id=key.id, type="owned_by", target_id=thrennick.id))
    await g.add_relationship(RelationshipIn(source_id=key.id, type="owned_by", target_id=pip.id))  # closes it
    await g.add_relationship(
        RelationshipIn(source_id=pip.id, type="works_for", target_id=holt.id, visibility=Visibility.secret)
    )
    await g.add_relationship(RelationshipIn(source_id=pip.id, type="status", value="hiding", visibility="secret"))


async def test_a_question_names_entities_anywhere_and_gets_their_current_facts(campaign: CampaignMemory) -> None:
    await ember_key(campaign)
    (key,) = await named_entities(campaign, "who has the Ember Key now?", dm=False)  # not the town of Ember
    assert (key.name, key.description) == ("Ember Key", "Opens the [secret] vault")  # the secret name masked
    assert key.facts == [PIPS_KEY]  # Thrennick's is history

    # an alias and a possessive, in the order the question names them, each entity once
    named = await named_entities(campaign, "Did the fence sell THE KEY to Pip's friends? The fence!", dm=False)
    assert [n.name for n in named] == ["Thrennick", "Ember Key", "Pip"]
    assert named[2].description == "a halfling thief" and named[2].facts == [PIPS_KEY]
    assert [n.name for n in await named_entities(campaign, "what of the Ember Key's history", dm=False)] == [
        "Ember Key"
    ]
    assert await named_entities(campaign, "the embers of Pipkin", dm=False) == []  # whole words only


async def test_players_see_no_secret_or_unreviewed_entity_and_no_secret_fact(campaign: CampaignMemory) -> None:
    await ember_key(campaign)
    question = "Is Pip working for Vaskerrin Holt, or for Mira?"
    (pip,) = await named_entities(campaign, question, dm=False)
    assert pip.facts == [PIPS_KEY] and not pip.secret

    pip, holt = await named_entities(campaign, question, dm=True)  # Mira is still waiting for review
    assert [f.text for f in pip.facts if f.secret] == ["Pip —status→ hiding", "Pip —works_for→ Vaskerrin Holt"]
    assert (
        holt.secret
        and holt.heading() == "Vaskerrin Holt 🔒"
        and holt.fact_lines() == ["Pip works for Vaskerrin Holt 🔒"]
    )


async def test_the_dm_reads_a_public_fact_about_a_secret_entity_marked_as_players_miss_it(
    campaign: CampaignMemory,
) -> None:
    """The fact "Pip —allied_with→ Vaskerrin Holt" is public, but players do not read it (Holt is the DM's): the DM's
    answer showed it unmarked, as if it were told at the table."""
    await ember_key(campaign)
    g = campaign.graph
    pip, holt = await g.get_entity("Pip"), await g.get_entity("Vaskerrin Holt")
    await g.add_relationship(RelationshipIn(source_id=pip.id, type="allied_with", target_id=holt.id))
    question = "who is Pip allied with?"
    (players,) = await named_entities(campaign, question, dm=False)
    assert all("Vaskerrin" not in f.text for f in players.facts)
    (dms,) = await named_entities(campaign, question, dm=True)
    assert [(f.text, f.secret) for f in dms.facts] == [
        ("Pip —allied_with→ Vaskerrin Holt", True),
        ("Ember Key —owned_by→ Pip", False),
        ("Pip —status→ hiding", True),
        ("Pip —works_for→ Vaskerrin Holt", True),
    ]
    card = await g.neighbourhood("Pip", include_secret=True)
    assert [f.describe() for f in card.relationships if card.hidden_from_players(f)] == [
        "Pip —allied_with→ Vaskerrin Holt",
        "Pip —status→ hiding",
        "Pip —works_for→ Vaskerrin Holt",
    ]


async def test_a_players_guess_of_a_secret_inside_a_public_name_is_not_confirmed(campaign: CampaignMemory) -> None:
    """A recap's entity is named after its session's title, which players read masked: naming it by the secret
    it holds must not find it, nor may its heading show that name."""
    g = campaign.graph
    await g.add_entity(EntityIn(name="Queen Mab", type=EntityType.npc, visibility=Visibility.secret))
    await g.add_entity(
        EntityIn(name="Session: Queen Mab unmasked", type=EntityType.event, aliases=["the night of Queen Mab"])
    )
    assert await named_entities(campaign, "session queen mab unmasked", dm=False) == []
    assert await named_entities(campaign, "what happened on the night of Queen Mab?", dm=False) == []
    (recap,) = await named_entities(campaign, "Session: [secret] unmasked", dm=False)  # its name as players read it
    assert recap.heading() == "Session: [secret] unmasked"
    (recap,) = await named_entities(campaign, "session queen mab unmasked", dm=True)
    assert recap.heading() == "Session: Queen Mab unmasked"


async def test_at_most_three_entities_and_only_this_campaigns(campaign: CampaignMemory, memory: Memory) -> None:
    await ember_key(campaign)
    other = memory.campaign((await memory.campaigns().create("Other")).id)
    await other.graph.add_entity(EntityIn(name="Thrennick", type=EntityType.npc, description="another one"))
    named = await named_entities(campaign, "Thrennick, Pip, the Ember Key and Vaskerrin Holt", dm=True)
    assert [n.name for n in named] == ["Thrennick", "Pip", "Ember Key"]
    assert [n.description for n in await named_entities(other, "Thrennick and Pip", dm=True)] == ["another one"]


async def test_a_long_description_is_shortened_so_the_current_facts_follow_it(campaign: CampaignMemory) -> None:
    await ember_key(campaign)
    await campaign.graph.update_entity("Pip", description="A halfling thief who " + "talks and talks " * 100)
    (pip,) = await named_entities(campaign, "where is Pip?", dm=True)
    assert len(pip.description) <= 300 and pip.description.startswith("A halfling thief who talks")
    assert pip.description.endswith("…") and len(pip.facts) == 3


async def test_a_long_description_is_cut_between_words(campaign: CampaignMemory) -> None:
    await ember_key(campaign)
    # the 300th character falls inside a word: the cut goes back to the space before it
    await campaign.graph.update_entity("Pip", description="A halfling thief who " + "talkative, " * 40)
    (pip,) = await named_entities(campaign, "where is Pip?", dm=True)
    assert pip.description == "A halfling thief who " + ", ".join(["talkative"] * 25) + "…"


async def grog_with_his_axe(campaign: CampaignMemory, *, nights: int) -> Entity:
    """Grog, the owner of Craven Edge, who took part in ``nights`` sessions."""
    g = campaign.graph
    grog = await g.add_entity(EntityIn(name="Grog", type=EntityType.player))
    axe = await g.add_entity(EntityIn(name="Craven Edge", type=EntityType.item))
    await g.add_relationship(RelationshipIn(source_id=axe.id, type="owned_by", target_id=grog.id))
    for n in range(1, nights + 1):
        night = await g.add_entity(EntityIn(name=f"Session: Night {n}", type=EntityType.event))
        await g.add_relationship(RelationshipIn(source_id=grog.id, type="took_part_in", target_id=night.id))
    return grog


async def test_the_sessions_an_entity_took_part_in_are_one_fact(campaign: CampaignMemory) -> None:
    """As its card says them: a player of a long campaign took part in a hundred sessions, and a recall naming
    them listed a '—took_part_in→' fact for each before any passage."""
    g = campaign.graph
    grog = await grog_with_his_axe(campaign, nights=5)
    death = await g.add_entity(EntityIn(name="Death of Jazna", type=EntityType.event))  # of the story: a fact
    await g.add_relationship(RelationshipIn(source_id=grog.id, type="took_part_in", target_id=death.id))
    await g.add_relationship(RelationshipIn(source_id=grog.id, type="took_part_in", value="Session: the heist"))
    (named,) = await named_entities(campaign, "what did Grog do?", dm=False)
    assert named.fact_lines() == [
        "Craven Edge is owned by Grog",
        "Grog took part in Death of Jazna",
        "Grog — took part in: Session: the heist",  # a value, no session's event: a fact
        "took part in 5 sessions: Night 5, Night 4, Night 3 and 2 earlier",
    ]
    (night,) = await named_entities(campaign, "what happened in Session: Night 2?", dm=True)
    assert night.fact_lines() == ["Grog took part in Session: Night 2"]  # the session's own card lists who did


async def test_a_busy_entity_shows_its_facts_learned_last_and_counts_the_rest(campaign: CampaignMemory) -> None:
    """A player of a long campaign has thousands of facts: the answer shows the last learned, as many as a field
    holds, and says how many more its card has; players count none they cannot see."""
    g = campaign.graph
    grog = await grog_with_his_axe(campaign, nights=4)
    for n in range(1, 16):  # an edge to each: a value of one type would close the one before
        friend = await g.add_entity(EntityIn(name=f"Friend {n}", type=EntityType.npc))
        await g.add_relationship(RelationshipIn(source_id=grog.id, type="knows", target_id=friend.id))
    await g.add_relationship(RelationshipIn(source_id=grog.id, type="fears", value="books", visibility="secret"))

    (seen,) = await named_entities(campaign, "what did Grog do?", dm=False)
    assert seen.fact_lines() == [
        *(f"Grog knows Friend {n}" for n in range(4, 16)),  # the 12 learned last; the axe is older
        "took part in 4 sessions: Night 4, Night 3, Night 2 and 1 earlier",
        "… and 4 earlier facts on its card",
    ]
    (known,) = await named_entities(campaign, "what did Grog do?", dm=True)
    assert known.more_facts == 5 and known.fact_lines()[0] == "Grog — fears: books 🔒"


async def test_a_person_is_named_by_a_first_or_last_name_that_is_theirs_alone(campaign: CampaignMemory) -> None:
    """A table says "Jazna", "Yennen", "Vedmire": the example campaign has no such aliases, and "who killed
    Jazna?" showed no card and no fact of Jazna Grebin."""
    g = campaign.graph
    jazna = await g.add_entity(EntityIn(name="Jazna Grebin", type=EntityType.npc))
    grog = await g.add_entity(EntityIn(name="Grog Strongjaw", type=EntityType.player))
    await g.add_relationship(RelationshipIn(source_id=grog.id, type="killed", target_id=jazna.id))
    for name in ("Keeper Yennen", "Sylas Briarwood", "Delilah Briarwood"):
        await g.add_entity(EntityIn(name=name, type=EntityType.npc))
    await g.add_entity(EntityIn(name="Whitestone Castle", type=EntityType.place))

    async def named(query: str) -> list[str]:
        return [n.name for n in await named_entities(campaign, query, dm=True)]

    (card,) = await named_entities(campaign, "who killed Jazna?", dm=False)
    assert card.name == "Jazna Grebin" and card.facts[0].text == "Grog Strongjaw —killed→ Jazna Grebin"
    assert await named("where is Yennen now? Grebin's guards?") == ["Keeper Yennen", "Jazna Grebin"]
    assert await named("what did Sylas say to Grog?") == ["Sylas Briarwood", "Grog Strongjaw"]
    assert await named("what did Briarwood do?") == []  # two people's: neither
    assert await named("where is the Keeper?") == await named("where is Keeper?") == []  # an everyday word
    assert await named("who killed jazna?") == []  # written as a name only
    assert await named("is Whitestone safe?") == []  # a place's first word is no name of it


async def test_a_question_calls_someone_alone_as_a_line_does(campaign: CampaignMemory) -> None:
    """The one word a line names someone by (the gazetteer's short names) is the one a question does: a first
    name past the title ("Ilse" of Captain Ilse Reyes: recall read "Captain" as her first name), no place's word
    after "of" ("Vord" of Kima of Vord); a question's guard stays its own: one in lower case names no one."""
    g = campaign.graph
    for name, kind in [
        ("Captain Ilse Reyes", EntityType.npc),
        ("Kima of Vord", EntityType.npc),
        ("Ysolde Varn", EntityType.npc),
    ]:
        await g.add_entity(EntityIn(name=name, type=kind))

    async def named(query: str) -> list[str]:
        return [n.name for n in await named_entities(campaign, query, dm=True)]

    assert await named("what did Ilse say?") == ["Captain Ilse Reyes"]
    assert await named("who rules Vord?") == []
    assert await named("what did ysolde say") == []
    assert await named("what did Ysolde say") == ["Ysolde Varn"]


async def test_who_is_called_by_a_name_alone_is_the_one_list_of_person_types(
    campaign: CampaignMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recall reads who is a person from ``memory.models.PERSON_TYPES``, as extraction and correction do, not its own
    list: a type added there is called by a first name alone here too."""
    await campaign.graph.add_entity(EntityIn(name="Grog Strongjaw", type=EntityType.player))
    await campaign.graph.add_entity(EntityIn(name="Kessa Vorn", type=EntityType.npc))
    query = "what did Grog say to Kessa?"
    assert [n.name for n in await named_entities(campaign, query, dm=True)] == ["Grog Strongjaw", "Kessa Vorn"]
    monkeypatch.setattr(recall, "PERSON_TYPES", frozenset({EntityType.npc}))
    assert [n.name for n in await named_entities(campaign, query, dm=True)] == ["Kessa Vorn"]
