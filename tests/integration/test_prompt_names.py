"""The names the speech recogniser's prompt holds, chosen from the graph and what was said (memory.voice.prompt)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.models import ChunkIn, EntityIn, EntityType, EntryIn, RelationshipIn
from memory.providers.stt import Transcript, Word
from memory.recorder import CorrectionIndexCache, SessionRecorder, Utterance
from memory.store import CampaignMemory
from memory.voice.prompt import RECENT_WINDOW_S, CampaignNames

pytestmark = pytest.mark.integration


def vec() -> list[float]:
    return [1.0] + [0.0] * 383


@pytest.fixture
async def table(campaign: CampaignMemory) -> CampaignMemory:
    """A cast of two, lore with facts between them, a villain, places of past sessions."""
    g = campaign.graph
    await g.add_entity(EntityIn(name="Vex'ahlia", type=EntityType.player, aliases=["Vex"]))
    await g.add_entity(EntityIn(name="Grog Strongjaw", type=EntityType.player, aliases=["Grog"]))
    hub = await g.add_entity(EntityIn(name="Exandria", type=EntityType.place))
    for i in range(5):
        lore = await g.add_entity(EntityIn(name=f"Lore{i}", type=EntityType.concept, aliases=[f"L{i}"]))
        await g.add_relationship(RelationshipIn(source_id=lore.id, type="located_in", target_id=hub.id))
    await g.add_entity(EntityIn(name="Sylas Briarwood", type=EntityType.npc, aliases=["Sylas", "Lord Briarwood"]))
    for name in ("Whitestone", "Kraghammer", "Emon"):
        await g.add_entity(EntityIn(name=name, type=EntityType.place))
    return campaign


async def test_cast_then_said_lately_then_said_in_last_sessions_then_the_connected(table: CampaignMemory) -> None:
    g = table.graph
    now = datetime.now(UTC)
    old = await table.log.start_session("Long ago", started_at=now - timedelta(days=400))
    last = [await table.log.start_session(f"Week {i}", started_at=now - timedelta(days=7 * i)) for i in range(1, 6)]
    whitestone, kraghammer, emon = [await g.get_entity(n) for n in ("Whitestone", "Kraghammer", "Emon")]
    chunks = [(last[0], whitestone), (last[1], whitestone), (last[4], kraghammer), (old, emon), (old, emon)]
    await table.semantic.upsert(
        [
            ChunkIn(key=f"k{n}", session_id=s.id, text=e.name, embedding=vec(), entity_ids=[e.id])
            for n, (s, e) in enumerate(chunks)
        ]
    )
    names = CampaignNames(table)
    start = await names.names(0.0)
    # Emon was said only in a session older than the last five: not "said lately", so among the unconnected
    assert start == [
        "Grog Strongjaw", "Grog", "Vex'ahlia", "Vex", "Whitestone", "Kraghammer",
        "Exandria", "Lore0", "Lore1", "Lore2", "Lore3", "Lore4", "Emon", "Sylas Briarwood",
        "L0", "L1", "L2", "L3", "L4", "Lord Briarwood", "Sylas",
    ]  # fmt: skip

    names.heard("Is that lore3's daughter?", 90.0)
    names.heard("I walk up to Sylas and tell him about her.", 100.0)
    lately = await names.names(130.0)
    assert lately[4:7] == ["Sylas Briarwood", "Sylas", "Lore3"]  # the latest first; the alias said with its name
    assert await names.names(131.0) is lately  # nothing changed: the same list, so the same prompt
    assert await names.names(100.0 + RECENT_WINDOW_S + 1) == start


async def test_a_pinned_or_new_entity_is_in_the_next_names(table: CampaignMemory) -> None:
    names = CampaignNames(table, refresh_s=0.0)
    before = await names.names()
    await table.graph.set_pinned(await table.graph.get_entity("Lore4"), True)
    # in a fact, it goes before the cast who are in none
    assert (await names.names())[:6] == ["Lore4", "L4", "Grog Strongjaw", "Grog", "Vex'ahlia", "Vex"]
    await table.graph.add_entity(EntityIn(name="Orthax", type=EntityType.npc))
    assert "Orthax" in await names.names() and "Orthax" not in before


async def test_the_cast_is_the_players_named_last_session_or_in_this_one(table: CampaignMemory) -> None:
    g = table.graph
    for name in ("Jester Lavorre", "Caleb Widogast", "Fjord"):  # a second table's party in the same campaign
        await g.add_entity(EntityIn(name=name, type=EntityType.player))
    assert (await CampaignNames(table).names())[:2] == ["Caleb Widogast", "Fjord"]  # no session yet: all players
    last = await table.log.start_session("Last week", started_at=datetime.now(UTC) - timedelta(days=7))
    await table.log.write(last.id, EntryIn(speaker="DM", text="Jester Lavorre and Fjord reach Whitestone."))
    names = CampaignNames(table)
    start = await names.names(0.0)
    assert start[:2] == ["Fjord", "Jester Lavorre"]
    # said in the last session's lines (no passages written yet), then the other players, before unsaid lore
    assert start[2] == "Whitestone"
    assert set(start[3:8]) == {"Caleb Widogast", "Grog Strongjaw", "Grog", "Vex'ahlia", "Vex"}
    assert start[8] == "Exandria"
    names.heard("Caleb Widogast casts a spell.", 50.0)
    assert (await names.names(60.0))[:3] == ["Caleb Widogast", "Fjord", "Jester Lavorre"]
    assert await names.names(40.0) == start  # another track, earlier: Caleb is not named yet
    every_player = await CampaignNames(table, session_cast=False).names(0.0)
    assert every_player[:7] == [
        "Fjord",
        "Jester Lavorre",
        "Caleb Widogast",
        "Grog Strongjaw",
        "Grog",
        "Vex'ahlia",
        "Vex",
    ]


async def test_a_name_misheard_and_mended_by_stage_1_counts_as_said(table: CampaignMemory) -> None:
    names = CampaignNames(table)
    start = await names.names(0.0)
    names.heard("We ride back to Krag hammer tonight.", 10.0)  # what the recogniser wrote, not the name
    assert (await names.names(20.0))[4] == "Kraghammer" != start[4]
    names.heard("The cart rolls on.", 30.0)  # no name, nothing mended
    assert (await names.names(40.0))[4] == "Kraghammer"


async def test_stage_1_writes_the_cast_member_a_written_name_sounds_like(table: CampaignMemory) -> None:
    """The recorder asks the prompt's names for the cast of each line: "Rex" said to the table is Vex when she is
    the cast (a phone off), not when another table's party is."""
    g = table.graph
    await g.add_entity(EntityIn(name="Jester Lavorre", type=EntityType.player, aliases=["Jester"]))
    last = await table.log.start_session("Last week", started_at=datetime.now(UTC) - timedelta(days=7))
    await table.log.write(last.id, EntryIn(speaker="DM", text="Jester and Grog reach Whitestone."))
    names = CampaignNames(table)
    await names.names(0.0)
    jester, grog, vex = [(await g.get_entity(n)).id for n in ("Jester Lavorre", "Grog Strongjaw", "Vex'ahlia")]
    assert names.cast(0.0) == {jester, grog}
    names.heard("Vex runs in.", 50.0)
    assert names.cast(60.0) == {jester, grog, vex}
    rec = await SessionRecorder.start(table, "Tonight", index_cache=CorrectionIndexCache(), cast=names.cast)
    said = ["Then Chester walks over.", "Wait, Rex, what was my role?", "Later, Rex, what was my role?"]
    for at, text in zip([10.0, 20.0, 70.0], said, strict=True):
        await rec.add(Utterance(speaker="Sam", text=text, start_s=at))
    await rec.flush()
    lines = await table.log.session_entries(rec.session.id)
    assert [line.text for line in lines] == [
        "Then Jester Lavorre walks over.",
        "Wait, Rex, what was my role?",  # Vex is not the cast yet: a name of her sound stays as written
        "Later, Vex'ahlia, what was my role?",
    ]
    assert [line.raw_text for line in lines] == said


async def test_a_line_asks_for_the_campaign_s_names_it_nearly_says_that_the_prompt_left_out(
    table: CampaignMemory,
) -> None:
    """The second pass's names (``CampaignNames.nearly_heard``): of the campaign's, those sounding near uncommon
    or doubted words and not in the prompt; none with ``second_pass=False``."""
    await table.graph.add_entity(EntityIn(name="J'mon Sa Ord", type=EntityType.npc))
    names = CampaignNames(table)
    ranked = await names.names(0.0)
    assert "J'mon Sa Ord" in ranked  # a small campaign: every name is ranked; the provider cuts the prompt
    line = "Jamon Sword, as you know."
    words = [Word(word=w, start=0, end=0, confidence=0.9) for w in line.split()]
    heard = Transcript(text=line, words=words, duration=1)
    assert names.nearly_heard(heard, ["Grog Strongjaw", "Vex'ahlia"]) == ["J'mon Sa Ord"]
    assert names.nearly_heard(heard, ranked) == []  # in the prompt already: heard once
    sure = Transcript(text="Sure, as you know.", words=[Word(word="Sure,", start=0, end=0, confidence=1)], duration=1)
    assert names.nearly_heard(sure, []) == []
    assert (names.lines, names.second_passes) == (3, 1)

    once = CampaignNames(table, second_pass=False)
    await once.names(0.0)
    assert once.nearly_heard(heard, []) == [] and once.lines == 0


async def test_only_facts_between_two_entities_rank_the_unsaid(campaign: CampaignMemory) -> None:
    """QA: an imported NPC's GM notes (a secret ``dm_notes`` attribute fact) counted as a connection, so every NPC
    with notes went before the places and the faction, which fell out of a full prompt."""
    g = campaign.graph
    port = await g.add_entity(EntityIn(name="Port Venmark", type=EntityType.place))
    choir = await g.add_entity(EntityIn(name="The Ashen Choir", type=EntityType.faction))
    await g.add_relationship(RelationshipIn(source_id=choir.id, type="located_in", target_id=port.id))
    for name in ("Aldous Pryne", "Edric Salt"):
        npc = await g.add_entity(EntityIn(name=name, type=EntityType.npc))
        notes = RelationshipIn(source_id=npc.id, type="dm_notes", value="Owes the Choir.", visibility="secret")
        await g.add_relationship(notes)
        await g.add_relationship(RelationshipIn(source_id=npc.id, type="status", value="dead"))
        await g.add_relationship(  # a fact the DM rejected is no connection
            RelationshipIn(source_id=npc.id, type="member_of", target_id=choir.id, status="rejected")
        )
    degrees = {e.name: e.degree for e in await g.prompt_entities(recent_sessions=5)}
    assert degrees == {"Port Venmark": 1, "The Ashen Choir": 1, "Aldous Pryne": 0, "Edric Salt": 0}
    assert await CampaignNames(campaign).names() == ["Port Venmark", "The Ashen Choir", "Aldous Pryne", "Edric Salt"]
