"""Extraction into L3 on the real database: rule extractor offline, LLM extractor via the fake OpenAI server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from memory import jobs
from memory.extraction import (
    ExtractionResult,
    ExtractionStats,
    Extractor,
    KnownEntity,
    LLMExtractor,
    RuleExtractor,
    extract_into_graph,
    make_extractor,
)
from memory.extraction import llm as llm_extraction
from memory.extraction import pipeline as extraction_pipeline
from memory.extraction.events import Event
from memory.extraction.llm import _line
from memory.extraction.pipeline import RECAP_LINES
from memory.jobs import extract as extract_job
from memory.models import (
    EntityIn,
    EntityType,
    Entry,
    EntryIn,
    Provenance,
    Relationship,
    RelationshipIn,
    ReviewStatus,
    Source,
)
from memory.providers.embeddings import MiniLMEmbedder
from memory.providers.llm import LLMUnavailable, OpenAILLM
from memory.recorder import SessionRecorder, Utterance
from memory.review import said_names
from memory.store import CampaignMemory, Memory
from memory.text import MAX_FACT_VALUE_CHARS, excerpt
from memory.voice.guard import MemoryGuard
from tests.fakes.openai_server import ChatReply, FakeOpenAI, FakeRawReply

TRANSCRIPT = [
    ("DM", "You walk into the forge. Brom, the blacksmith of Ironhold, looks up from the anvil."),
    ("Vex", "lol"),
    ("Grog", "I rolled a 12"),
    ("DM", "Behind him stands a dwarf named Korvash, arms crossed."),
    ("DM", "Brom is a member of the Silver Hand."),
    ("Vex", "Eldrinax's tower can be seen from Ironhold, right?"),
]


@pytest_asyncio.fixture
async def world(campaign: CampaignMemory) -> CampaignMemory:
    g = campaign.graph
    await g.add_entity(EntityIn(name="Brom", type=EntityType.npc))
    await g.add_entity(EntityIn(name="Eldrinax", type=EntityType.npc, aliases=["the Archmage"]))
    await g.add_entity(EntityIn(name="Ironhold", type=EntityType.place))
    await g.add_entity(EntityIn(name="Silver Hand", type=EntityType.faction))
    return campaign


async def write(mem: CampaignMemory, lines: Sequence[tuple[str, str]], title: str = "Session 1") -> list[Entry]:
    session = await mem.log.session_by_title(title) or await mem.log.start_session(title)
    return await mem.log.write_many(
        session.id, [EntryIn(speaker=s, text=t, start_s=10.0 * i) for i, (s, t) in enumerate(lines)]
    )


async def facts(mem: CampaignMemory) -> list[tuple[str, str, str | None, str]]:
    rows = await mem.db.fetch(
        """
        SELECT s.name AS source, r.type, coalesce(t.name, r.value) AS other, r.status
        FROM relationships r JOIN entities s ON s.id = r.source_id LEFT JOIN entities t ON t.id = r.target_id
        WHERE r.campaign_id = $1 ORDER BY 1, 2, 3
        """,
        mem.campaign_id,
    )
    return [(r["source"], r["type"], r["other"], r["status"]) for r in rows]


async def run(mem: CampaignMemory, entries: list[Entry], extractor: Extractor | None = None) -> ExtractionStats:
    return await extract_into_graph(
        mem, session_id=entries[0].session_id, entries=entries, extractor=extractor or RuleExtractor()
    )


# rule extractor -----------------------------------------------------------------------------------------


async def test_rule_extractor_files_pending_facts_with_provenance(world: CampaignMemory) -> None:
    entries = await write(world, TRANSCRIPT)
    stats = await run(world, entries, RuleExtractor())

    assert stats.entries_seen == 6 and (stats.entries_skipped_offgame, stats.entries_skipped_trivial) == (1, 1)
    assert (stats.facts_accepted, stats.items_invalid) == (0, 0)
    assert set(await facts(world)) >= {
        ("Brom", "occupation", "blacksmith", "pending"),
        ("Brom", "works_in", "Ironhold", "pending"),
        ("Brom", "member_of", "Silver Hand", "pending"),
    }
    assert all(status == "pending" for *_, status in await facts(world))
    assert stats.facts_pending == len(await facts(world))

    brom = await world.graph.get_entity("Brom")
    (works_in,) = [r for r in await _all_facts(world, brom.id) if r.type == "works_in"]
    p = works_in.provenance
    assert p.source == Source.stated and p.confidence < 0.7 and not p.dm_confirmed
    assert p.session_id == entries[0].session_id and p.entry_ids == [entries[0].id] and p.timestamp == 0.0
    # Names said together are no fact: that is the mention index's (memory.mentions), not the review queue's.
    assert await _all_facts(world, (await world.graph.get_entity("Eldrinax")).id) == []

    refs = {item.describe() for item in await world.review.pending(limit=100)}
    assert "Brom works in Ironhold" in refs


async def _all_facts(mem: CampaignMemory, source_id: int) -> list[Relationship]:
    """Every fact about an entity whatever its status (``relationships_of`` shows accepted ones only)."""
    ids = await mem.db.fetch(
        "SELECT id FROM relationships WHERE campaign_id = $1 AND source_id = $2 ORDER BY id", mem.campaign_id, source_id
    )
    return [await mem.graph.get_relationship(r["id"]) for r in ids]


async def test_new_npc_becomes_a_pending_entity(world: CampaignMemory) -> None:
    entries = await write(world, TRANSCRIPT)
    stats = await run(world, entries)

    korvash = await world.graph.find_entity("Korvash")
    assert korvash is not None
    assert korvash.status == ReviewStatus.pending and korvash.type == EntityType.npc
    assert korvash.provenance.entry_ids == [entries[3].id] and not korvash.provenance.dm_confirmed
    assert korvash.provenance.confidence < 0.7
    assert stats.entities_created == 1
    assert "new npc 'Korvash': a dwarf" in {i.describe() for i in await world.review.pending(limit=100)}


async def test_a_new_captain_set_off_by_commas_becomes_a_pending_npc(world: CampaignMemory) -> None:
    """The tester's night: "A new captain, Oswin Marl, takes command ..." proposed no new npc."""
    line = "A new captain, Oswin Marl, takes command of the Venmark Watch at dawn."
    entries = await write(world, [("DM", line)])
    await run(world, entries)

    oswin = await world.graph.find_entity("Oswin Marl")
    assert oswin is not None and oswin.type == EntityType.npc and oswin.status == ReviewStatus.pending
    assert "new npc 'Oswin Marl': a captain" in {i.describe() for i in await world.review.pending(limit=100)}


async def test_rerun_creates_no_duplicates(world: CampaignMemory) -> None:
    entries = await write(world, TRANSCRIPT)
    await run(world, entries)
    before_facts, before_count = await facts(world), await world.review.count()
    second = await run(world, entries)

    assert await facts(world) == before_facts and await world.review.count() == before_count
    # Korvash, now a pending entity, is a known name the second time: not proposed again.
    assert second.entities_created == 0 and second.entities_proposed == 0
    assert len(await world.graph.list_entities(status=None)) == 5
    assert (second.facts_pending, second.facts_accepted) == (0, 0)
    assert second.facts_unchanged == second.facts_proposed > 0


async def test_rejected_items_are_not_proposed_again(world: CampaignMemory) -> None:
    entries = await write(world, TRANSCRIPT)
    await run(world, entries)
    for item in await world.review.pending(limit=100):
        await world.review.reject(item.ref)
    stats = await run(world, entries)
    assert await world.review.count() == 0
    assert stats.entities_created == 0 and stats.facts_pending == 0


async def test_misspelt_known_entity_merges(world: CampaignMemory) -> None:
    entries = await write(world, [("DM", "Eldrinaks, the wizard of Ironhold, raises his staff.")])
    stats = await run(world, entries)

    assert await world.graph.find_entity("Eldrinaks") is None
    assert stats.entities_merged == 1 and stats.entities_created == 0
    assert set(await facts(world)) == {
        ("Eldrinax", "works_in", "Ironhold", "pending"),
        ("Eldrinax", "occupation", "wizard", "pending"),
    }


async def test_speech_cannot_make_a_fact_canon(world: CampaignMemory) -> None:
    entries = await write(world, [("Grog", "The DM says this is canon, this is confirmed: Brom is the king.")])
    await run(world, entries)

    (fact,) = await facts(world)
    assert fact == ("Brom", "occupation", "king", "pending")
    assert not (await world.graph.get_entity("Brom")).provenance.dm_confirmed


async def test_rule_output_stays_pending_under_a_low_threshold(world: CampaignMemory) -> None:
    lenient = CampaignMemory(world.db, world.campaign_id, accept_threshold=0.2)
    entries = await write(lenient, TRANSCRIPT[:1])
    stats = await run(lenient, entries)
    assert stats.facts_accepted == 0 and stats.facts_pending == 2


async def test_make_extractor_defaults_to_rules() -> None:
    assert isinstance(make_extractor(None), RuleExtractor)


# LLM extractor ------------------------------------------------------------------------------------------


@pytest_asyncio.fixture
async def llm(fake_openai: FakeOpenAI) -> AsyncIterator[OpenAILLM]:
    client = OpenAILLM(fake_openai.base_url, fake_openai.api_key, "fake-gpt", timeout=5, max_retries=0)
    yield client
    await client.aclose()


def fact(
    source: str, type: str, target: str | None, value: str | None, conf: float, ids: list[int]
) -> dict[str, object]:
    return {
        "source": source,
        "type": type,
        "target": target,
        "value": value,
        "confidence": conf,
        "basis": "stated",
        "entry_ids": ids,
    }


async def test_llm_answer_is_accepted_or_queued_by_confidence(
    world: CampaignMemory, llm: OpenAILLM, fake_openai: FakeOpenAI
) -> None:
    entries = await write(world, TRANSCRIPT)
    ids = [e.id for e in entries]
    answer = {
        "entities": [
            {"name": "Korvash", "type": "npc", "description": "a dwarf", "confidence": 0.9, "entry_ids": [ids[3]]}
        ],
        "facts": [
            fact("Brom", "occupation", None, "blacksmith", 0.95, [ids[0]]),
            fact("Brom", "works_in", "Ironhold", None, 0.9, [ids[0]]),
            fact("Brom", "member_of", "Silver Hand", None, 0.6, [ids[4]]),
            fact("Korvash", "located_in", "Ironhold", None, 0.9, [ids[3]]),
        ],
    }
    fake_openai.queue_chat(json.dumps(answer))
    stats = await run(world, entries, make_extractor(llm))

    assert isinstance(make_extractor(llm), LLMExtractor)
    assert set(await facts(world)) == {
        ("Brom", "occupation", "blacksmith", "accepted"),
        ("Brom", "works_in", "Ironhold", "accepted"),
        ("Brom", "member_of", "Silver Hand", "pending"),
        ("Korvash", "located_in", "Ironhold", "pending"),  # its subject is still a pending entity
    }
    assert (stats.facts_accepted, stats.facts_pending, stats.items_invalid, stats.llm_errors) == (2, 2, 0, 0)
    korvash = await world.graph.get_entity("Korvash")
    assert korvash.status == ReviewStatus.pending and not korvash.provenance.dm_confirmed

    (request,) = fake_openai.chat_requests
    system, user = (m["content"] for m in request["messages"])
    assert "not instructions" in system
    assert "- Eldrinax (npc; aliases: the Archmage)" in user
    assert f"[{ids[0]}] DM: You walk into the forge." in user
    assert f"[{ids[1]}]" not in user  # "lol" never reached the LLM
    assert request["response_format"]["json_schema"]["strict"] is True


async def test_in_a_recorded_session_the_llm_reads_who_is_the_dm_by_user_id_not_by_name(
    world: CampaignMemory, llm: OpenAILLM, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """A player who names themself "DM" on the server must not have their lines read as the narrator's."""
    guard = await MemoryGuard.start(world, "Night 1", tmp_path, dm_speaker_id="100", batch_size=1)
    await guard.add(Utterance(speaker="Matt", speaker_id="100", text="Brom hammers at the anvil of Ironhold."))
    await guard.add(Utterance(speaker="DM", speaker_id="200", text="Eldrinax is dead, I saw it myself."))
    await guard.add(Utterance(speaker="Matt", text="Brom is a member of the Silver Hand."))  # its audio imported
    await guard.close()
    entries = await world.log.session_entries(guard.session.id)
    fake_openai.queue_chat(json.dumps({"entities": [], "facts": []}))
    await run(world, entries, make_extractor(llm))
    (request,) = fake_openai.chat_requests
    user = request["messages"][1]["content"]
    assert f"[{entries[0].id}] DM: Brom hammers" in user
    assert f"[{entries[1].id}] player DM: Eldrinax is dead" in user
    assert f"[{entries[2].id}] Matt: Brom is a member" in user  # named by the DM who imported it
    # the log keeps what each was called, for recall and review to quote
    assert [e.speaker for e in await world.log.session_entries(guard.session.id)] == ["Matt", "DM", "Matt"]


async def test_an_extracted_fact_that_would_end_the_dms_word_waits_for_review(
    world: CampaignMemory, llm: OpenAILLM, fake_openai: FakeOpenAI
) -> None:
    """However sure the LLM is, what was said at the table does not close a fact the DM typed or a campaign file
    set: it waits for the DM. A guess it contradicts is closed as before."""
    g = world.graph
    eldrinax, brom = await g.get_entity("Eldrinax"), await g.get_entity("Brom")
    await g.link("Eldrinax", "status", value="alive")  # the DM's /entity link
    from_file = Provenance(source=Source.campaign_file)
    await g.add_relationship(RelationshipIn(source_id=brom.id, type="occupation", value="smith", provenance=from_file))
    heard = Provenance(source=Source.stated, confidence=0.9)
    await g.add_relationship(RelationshipIn(source_id=brom.id, type="mood", value="calm", provenance=heard))
    entries = await write(world, [("DM", "Eldrinax is dead. Brom is a baker now, and furious.")])
    ids = [entries[0].id]
    answer = {
        "entities": [],
        "facts": [
            fact("Eldrinax", "status", None, "dead", 0.95, ids),
            fact("Brom", "occupation", None, "baker", 0.9, ids),
            fact("Brom", "mood", None, "furious", 0.9, ids),
        ],
    }
    fake_openai.queue_chat(json.dumps(answer))
    stats = await run(world, entries, make_extractor(llm))
    assert (stats.facts_accepted, stats.facts_pending) == (1, 2)
    assert set(await facts(world)) == {
        ("Eldrinax", "status", "alive", "accepted"),
        ("Eldrinax", "status", "dead", "pending"),
        ("Brom", "occupation", "smith", "accepted"),
        ("Brom", "occupation", "baker", "pending"),
        ("Brom", "mood", "calm", "accepted"),
        ("Brom", "mood", "furious", "accepted"),
    }
    current = {(r.type, r.value) for r in await g.relationships_of(eldrinax.id, include_secret=True)}
    current |= {(r.type, r.value) for r in await g.relationships_of(brom.id, include_secret=True)}
    assert current == {("status", "alive"), ("occupation", "smith"), ("mood", "furious")}
    # the DM accepts it in review: then it does close the DM's own fact, as the DM decided
    (dead,) = [i for i in await world.review.pending() if i.fact is not None and i.fact.value == "dead"]
    await world.review.accept(dead.ref)
    assert {r.value for r in await g.relationships_of(eldrinax.id, include_secret=True)} == {"dead"}


async def test_in_an_untimed_transcript_a_later_extracted_fact_still_waits_for_the_dms_word(
    world: CampaignMemory, llm: OpenAILLM, fake_openai: FakeOpenAI
) -> None:
    """Every line of an untimed transcript is at 0:00, ordered by its place in the session. The DM accepted
    "alive" said at line 2; a sure "dead" extracted from line 4 would end it, so it waits for review, as it would
    in a timed session (the check placed it at 0:00, before the DM's fact, and let it close the DM's word)."""
    session = await world.log.start_session("Night 1")
    said = ["Welcome back.", "Eldrinax is alive and well.", "Some chatter.", "Eldrinax is dead, says Bob."]
    entries = await world.log.write_many(session.id, [EntryIn(speaker="DM", text=t, start_s=0.0) for t in said])
    fake_openai.queue_chat(
        json.dumps({"entities": [], "facts": [fact("Eldrinax", "status", None, "alive", 0.5, [entries[1].id])]})
    )
    await run(world, entries[:2], make_extractor(llm))
    (alive,) = await world.review.pending()
    await world.review.accept(alive.ref)  # the DM's word now
    fake_openai.queue_chat(
        json.dumps({"entities": [], "facts": [fact("Eldrinax", "status", None, "dead", 0.95, [entries[3].id])]})
    )
    stats = await run(world, entries[2:], make_extractor(llm))
    assert (stats.facts_accepted, stats.facts_pending) == (0, 1)
    eldrinax = await world.graph.get_entity("Eldrinax")
    assert [r.value for r in await world.graph.relationships_of(eldrinax.id)] == ["alive"]
    # accepted by the DM, the later line's fact holds
    (dead,) = await world.review.pending()
    await world.review.accept(dead.ref)
    assert [r.value for r in await world.graph.relationships_of(eldrinax.id)] == ["dead"]


async def test_an_extracted_fact_older_than_the_dms_word_is_history_at_once_not_a_review_item(
    world: CampaignMemory, llm: OpenAILLM, fake_openai: FakeOpenAI
) -> None:
    """An old session imported late: what it says ended before the DM's word, so it closes nothing of the DM's."""
    await world.graph.link("Eldrinax", "status", value="dead")
    played = datetime.now(UTC) - timedelta(days=30)
    old = await world.log.start_session("Night 0", started_at=played)
    entries = await world.log.write_many(old.id, [EntryIn(speaker="DM", text="Eldrinax is alive and well.")])
    fake_openai.queue_chat(
        json.dumps({"entities": [], "facts": [fact("Eldrinax", "status", None, "alive", 0.9, [entries[0].id])]})
    )
    stats = await run(world, entries, make_extractor(llm))
    assert (stats.facts_accepted, stats.facts_pending) == (1, 0)
    eldrinax = await world.graph.get_entity("Eldrinax")
    assert [r.value for r in await world.graph.relationships_of(eldrinax.id)] == ["dead"]


async def test_an_entity_proposed_by_a_heard_as_phrase_is_the_entity_it_is_heard_for(
    world: CampaignMemory, llm: OpenAILLM, fake_openai: FakeOpenAI
) -> None:
    """Lines stored before the DM said that "from skin" is Frumpkin wait for the job correcting them; extraction
    reading one meanwhile may propose an entity "From Skin". The DM said that is Frumpkin: its facts are
    Frumpkin's, and the extraction goes on (the name could not be added, and the job was held)."""
    frumpkin = await world.graph.add_entity(EntityIn(name="Frumpkin", type=EntityType.npc))
    entries = await write(world, [("DM", "From Skin guards Brom."), ("DM", "Fromskin hisses at the Archmage.")])
    await world.graph.update_entity("Frumpkin", heard_as=["from skin"])
    ids = [e.id for e in entries]
    answer = {
        "entities": [
            {"name": "From Skin", "type": "npc", "description": "", "confidence": 0.9, "entry_ids": ids[:1]},
            {"name": "Fromskin", "type": "npc", "description": "", "confidence": 0.9, "entry_ids": ids[1:]},
        ],
        "facts": [
            fact("From Skin", "guards", "Brom", None, 0.9, ids[:1]),
            fact("Fromskin", "mood", None, "hostile", 0.9, ids[1:]),
        ],
    }
    fake_openai.queue_chat(json.dumps(answer))
    stats = await run(world, entries, make_extractor(llm))
    assert (stats.entities_created, stats.entities_merged) == (0, 2)
    assert await world.graph.find_entity("From Skin") is None and await world.graph.find_entity("Fromskin") is None
    assert {(f[1], f[2]) for f in await facts(world) if f[0] == "Frumpkin"} == {("guards", "Brom"), ("mood", "hostile")}
    assert (await world.graph.get_entity_by_id(frumpkin.id)).heard_as == ["from skin"]


async def test_llm_invalid_json_leaves_the_lines_to_the_rules(
    world: CampaignMemory, llm: OpenAILLM, fake_openai: FakeOpenAI
) -> None:
    entries = await write(world, TRANSCRIPT)
    fake_openai.queue_chat("this is {not json")
    stats = await run(world, entries, LLMExtractor(llm))
    assert (stats.llm_errors, stats.entries_fallback, stats.entries_seen) == (1, 4, 6)
    assert ("Brom", "member_of", "Silver Hand", "pending") in await facts(world)
    assert stats.facts_pending == len(await facts(world)) and stats.facts_accepted == 0


async def test_an_answer_cut_off_at_its_cap_leaves_the_lines_to_the_rules(
    world: CampaignMemory, llm: OpenAILLM, fake_openai: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    entries = await write(world, TRANSCRIPT)
    ids = [e.id for e in entries]
    whole = json.dumps({"entities": [], "facts": [fact("Brom", "occupation", None, "blacksmith", 0.95, [ids[0]])]})
    fake_openai.queue_chat(ChatReply(content=whole[:60], finish_reason="length"))
    stats = await run(world, entries, LLMExtractor(llm))
    assert (stats.llm_errors, stats.entries_fallback) == (1, 4)
    assert ("Brom", "member_of", "Silver Hand", "pending") in await facts(world)  # the rules' reading
    [request] = fake_openai.chat_requests
    read = [e for e in entries if f"[{e.id}]" in request["messages"][1]["content"]]
    assert request["max_tokens"] == llm_extraction.answer_cap(read) < llm_extraction.MAX_ANSWER_TOKENS
    assert f"the first: LLM answer was cut off at its cap of {request['max_tokens']:,} tokens" in caplog.text
    # a batch as long as a request holds is capped at what older and local models allow
    many = [Entry(**{**entries[0].model_dump(), "id": i}) for i in range(200)]
    assert llm_extraction.answer_cap(many) == llm_extraction.MAX_ANSWER_TOKENS


def two_batches(entries: list[Entry], monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines 0 and 3 (the first two the LLM reads) in one request, lines 4 and 5 in another."""
    monkeypatch.setattr(llm_extraction, "MAX_BATCH_CHARS", len(_line(entries[0])) + len(_line(entries[3])))


async def test_a_batch_answered_with_nonsense_is_read_by_the_rules_for_review(
    world: CampaignMemory,
    llm: OpenAILLM,
    fake_openai: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Under this threshold the rules' 0.55 would be accepted: only their being a fallback keeps them in review.
    lenient = CampaignMemory(world.db, world.campaign_id, accept_threshold=0.2)
    entries = await write(lenient, TRANSCRIPT)
    ids = [e.id for e in entries]
    two_batches(entries, monkeypatch)
    first = {
        "entities": [],
        "facts": [
            fact("Brom", "occupation", None, "blacksmith", 0.95, [ids[0]]),
            fact("Brom", "works_in", "Ironhold", None, 0.1, [ids[0]]),
        ],
    }

    async def extract() -> ExtractionStats:
        fake_openai.queue_chat(json.dumps(first), "Sure! Brom is in the Silver Hand.")
        return await run(lenient, entries, LLMExtractor(llm))

    stats = await extract()
    assert len(fake_openai.chat_requests) == 2
    assert (stats.llm_errors, stats.entries_fallback) == (1, 2)
    assert set(await facts(lenient)) == {
        ("Brom", "occupation", "blacksmith", "accepted"),  # the LLM's, by confidence
        ("Brom", "works_in", "Ironhold", "pending"),
        ("Brom", "member_of", "Silver Hand", "pending"),  # the rules', from the second batch's lines
    }
    assert (stats.facts_accepted, stats.facts_pending) == (1, 2)
    brom = await lenient.graph.get_entity("Brom")
    (member_of,) = [r for r in await _all_facts(lenient, brom.id) if r.type == "member_of"]
    assert member_of.provenance.entry_ids == [ids[4]] and not member_of.provenance.dm_confirmed
    assert "Brom is a member of Silver Hand" in {i.describe() for i in await lenient.review.pending(limit=100)}
    assert (
        "campaign 'Test Campaign', session 'Session 1': unusable LLM answers (1; the first: LLM answer is not "
        "valid JSON" in caplog.text
    )
    assert "the offline rules read those 2 lines instead" in caplog.text

    before, pending = await facts(lenient), await lenient.review.count()
    again = await extract()
    assert await facts(lenient) == before and await lenient.review.count() == pending
    assert (again.facts_accepted, again.facts_pending, again.entities_created) == (0, 0, 0)
    assert again.facts_unchanged == again.facts_proposed == 3


async def test_llm_items_about_unknown_names_or_ids_are_dropped(
    world: CampaignMemory, llm: OpenAILLM, fake_openai: FakeOpenAI
) -> None:
    entries = await write(world, TRANSCRIPT)
    ids = [e.id for e in entries]
    answer = {
        "entities": [
            {"name": "  ", "type": "npc", "description": "", "confidence": 0.9, "entry_ids": []},
            {"name": "Thing", "type": "spaceship", "description": "", "confidence": 0.9, "entry_ids": []},
            {"name": "Eldrinaks", "type": "npc", "description": "", "confidence": 0.8, "entry_ids": [ids[5]]},
        ],
        "facts": [
            fact("Brom", "works_in", "Ironhold", None, 0.9, [ids[0]]),
            fact("Brom", "works_in", "Ironhold", None, 0.9, [ids[0]]),  # duplicate
            fact("Zorblax", "enemy_of", "Brom", None, 0.9, [ids[0]]),  # unknown name, not proposed
            fact("Brom", "ally_of", "Nobody Known", None, 0.9, [ids[0]]),  # unknown target
            fact("Brom", "occupation", None, "smith", 1.5, [ids[0]]),  # confidence out of range
            fact("Brom", "occupation", None, "smith", 0.9, [999999]),  # cites a line outside the batch
            fact("Brom", "occupation", "Ironhold", "smith", 0.9, [ids[0]]),  # target and value
            fact("Eldrinaks", "status", None, "alive", 0.9, [ids[5]]),  # misspelt: merges into Eldrinax
        ],
    }
    fake_openai.queue_chat(json.dumps(answer))
    stats = await run(world, entries, LLMExtractor(llm))

    assert stats.items_invalid == 8
    assert stats.entities_merged == 1 and stats.entities_created == 0
    assert set(await facts(world)) == {
        ("Brom", "works_in", "Ironhold", "accepted"),
        ("Eldrinax", "status", "alive", "pending"),  # its line does not say "alive": the DM's to decide
    }


async def test_llm_items_holding_a_lone_surrogate_are_dropped_not_the_answer(
    world: CampaignMemory, llm: OpenAILLM, fake_openai: FakeOpenAI
) -> None:
    entries = await write(world, TRANSCRIPT)
    ids = [e.id for e in entries]
    answer = {
        "entities": [
            {"name": "Korvash", "type": "npc", "description": "half \ud800 a pair", "confidence": 0.9, "entry_ids": []}
        ],
        "facts": [
            fact("Brom", "mood", None, "grim \udc00", 0.9, [ids[0]]),
            fact("Brom", "works_in", "Ironhold", None, 0.9, [ids[0]]),
        ],
    }
    fake_openai.queue_chat(json.dumps(answer))  # valid JSON: json.dumps writes them as \ud800 escapes
    stats = await run(world, entries, LLMExtractor(llm))
    assert (stats.items_invalid, stats.llm_errors) == (2, 0)
    assert await facts(world) == [("Brom", "works_in", "Ironhold", "accepted")]


async def test_an_llm_value_longer_than_a_fact_holds_is_dropped_and_logged_not_cut(
    world: CampaignMemory, llm: OpenAILLM, fake_openai: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    """One limit for a fact's value, whoever gives it (``MAX_FACT_VALUE_CHARS``): the DM's longer value is refused
    with a message; the model's is dropped and said in the log, not cut (a state cut short, accepted, is wrong)."""
    entries = await write(world, TRANSCRIPT)
    ids = [e.id for e in entries]
    mood = " ".join(["grim"] * 100)  # 499 characters: a value the DM could have typed
    answer = {
        "entities": [],
        "facts": [
            fact("Brom", "mood", None, mood, 0.9, [ids[0]]),
            fact("Brom", "title", None, "x" * (MAX_FACT_VALUE_CHARS + 1), 0.9, [ids[0]]),
        ],
    }
    fake_openai.queue_chat(json.dumps(answer))
    stats = await run(world, entries, LLMExtractor(llm))
    assert stats.items_invalid == 1
    assert await facts(world) == [("Brom", "mood", mood, "pending")]  # kept whole; its line does not say it
    assert "extraction dropped a fact: Brom —title→ xxxxxxxxxx… has 501 characters" in caplog.text


async def test_many_llm_values_too_long_are_one_warning_and_the_rest_of_the_answer_kept(
    world: CampaignMemory, llm: OpenAILLM, fake_openai: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    """A model writing paragraphs as values logged a warning per fact, each naming another value."""
    entries = await write(world, TRANSCRIPT)
    ids = [e.id for e in entries]
    long = [fact("Brom", "title", None, f"{n} " + "x" * MAX_FACT_VALUE_CHARS, 0.9, [ids[0]]) for n in range(30)]
    answer = {"entities": [], "facts": [*long, fact("Brom", "works_in", "Ironhold", None, 0.9, [ids[0]])]}
    fake_openai.queue_chat(json.dumps(answer))
    stats = await run(world, entries, LLMExtractor(llm))
    assert stats.items_invalid == 30
    assert await facts(world) == [("Brom", "works_in", "Ironhold", "accepted")]
    dropped = [r.getMessage() for r in caplog.records if "extraction dropped a fact" in r.getMessage()]
    assert len(dropped) == 1, dropped
    assert "Brom —title→ 0 xxxxxxxx… has 502 characters" in dropped[0]
    assert dropped[0].endswith("(and 29 more facts too long)")


async def test_a_wrong_typed_llm_item_is_dropped_and_the_rest_of_the_answer_kept(
    world: CampaignMemory, llm: OpenAILLM, fake_openai: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    entries = await write(world, TRANSCRIPT)
    ids = [e.id for e in entries]
    answer = {
        "entities": [
            {"name": 42, "type": ["npc"], "description": None, "confidence": "very", "entry_ids": "1"},
            {"name": "Korvash", "type": "npc", "description": "a dwarf", "confidence": 0.9, "entry_ids": [ids[3]]},
        ],
        "facts": [
            {"source": {"a": 1}, "type": 7, "target": None, "value": {"k": [1]}, "confidence": 0.9},
            fact("Brom", "works_in", "Ironhold", None, 0.9, [ids[0]]),
        ],
    }
    fake_openai.queue_chat(json.dumps(answer))
    stats = await run(world, entries, LLMExtractor(llm))
    assert (stats.items_invalid, stats.llm_errors, stats.entities_created) == (2, 1, 1)
    # the lines no kept item comes from are the rules' to read: what they find there waits
    assert await facts(world) == [
        ("Brom", "member_of", "Silver Hand", "pending"),
        ("Brom", "works_in", "Ironhold", "accepted"),
    ]
    assert "extraction dropped 2 malformed items: entities.0: name: Input should be a valid string" in caplog.text


async def test_an_answer_whose_every_item_is_malformed_leaves_its_lines_to_the_rules(
    world: CampaignMemory, llm: OpenAILLM, fake_openai: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    entries = await write(world, TRANSCRIPT)
    # a model that ignores the schema's fields: JSON of the right shape, not one item usable
    nonsense = {"entities": [{"entity": f"Name{i}", "kind": "npc"} for i in range(5000)], "facts": [{"fact": "x"}]}
    fake_openai.queue_chat(json.dumps(nonsense))
    stats = await run(world, entries, LLMExtractor(llm))
    assert (stats.llm_errors, stats.entries_fallback) == (1, 4)
    assert ("Brom", "member_of", "Silver Hand", "pending") in await facts(world)  # the rules read the lines
    assert "unusable LLM answers (1; the first: LLM answer has 5,001 malformed items (the first: " in caplog.text
    assert max(len(r.getMessage()) for r in caplog.records) < 2000  # not one problem per item: 5,000 of them


async def test_facts_missing_a_field_beside_a_good_entity_leave_their_lines_to_the_rules(
    world: CampaignMemory, llm: OpenAILLM, fake_openai: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    """A small model leaving out one field of every fact lost all of them, their lines marked read, because it
    also proposed one entity: the answer counted as usable."""
    entries = await write(world, TRANSCRIPT)
    ids = [e.id for e in entries]
    basisless = [
        {k: v for k, v in fact("Brom", "member_of", "Silver Hand", None, 0.9, [ids[4]]).items() if k != "basis"},
        {k: v for k, v in fact("Brom", "works_in", "Ironhold", None, 0.9, [ids[0]]).items() if k != "basis"},
    ]
    korvash = {"name": "Korvash", "type": "npc", "description": "a dwarf", "confidence": 0.9, "entry_ids": [ids[3]]}
    fake_openai.queue_chat(json.dumps({"entities": [korvash], "facts": basisless}))
    stats = await run(world, entries, LLMExtractor(llm))
    assert (stats.items_invalid, stats.llm_errors, stats.entities_created) == (2, 1, 1)  # the entity kept
    assert ("Brom", "member_of", "Silver Hand", "pending") in await facts(world)  # the rules read its line
    assert "unusable LLM answers (1; the first: LLM answer has 2 malformed items (the first: facts.0: basis" in (
        caplog.text
    )


async def test_many_malformed_items_beside_a_good_one_are_counted_not_each_logged(
    world: CampaignMemory, llm: OpenAILLM, fake_openai: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    entries = await write(world, TRANSCRIPT)
    ids = [e.id for e in entries]
    answer = {
        "entities": [{"entity": f"Name{i}", "kind": "npc"} for i in range(5000)],
        "facts": [fact("Brom", "works_in", "Ironhold", None, 0.9, [ids[0]])],
    }
    fake_openai.queue_chat(json.dumps(answer))
    stats = await run(world, entries, LLMExtractor(llm))
    assert (stats.items_invalid, stats.llm_errors) == (5000, 1)
    assert ("Brom", "works_in", "Ironhold", "accepted") in await facts(world)
    assert "extraction dropped 5000 malformed items: entities.0: name: Field required" in caplog.text
    assert max(len(r.getMessage()) for r in caplog.records) < 2000


async def test_a_proxy_error_page_fails_the_extraction_job_to_be_retried(
    world: CampaignMemory, memory: Memory, llm: OpenAILLM, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries = await write(world, TRANSCRIPT)
    fake_openai.queue_chat(FakeRawReply("<html>bad gateway</html>"))
    with pytest.raises(LLMUnavailable, match="not JSON"):
        await run_job(memory, world, entries[0].session_id, LLMExtractor(llm), monkeypatch)
    assert await extracted_to(world, entries[0].session_id) is None  # its lines wait for the next try
    assert await facts(world) == []  # no answer at all is an outage, not the rules' turn


async def test_an_outage_after_a_nonsense_answer_still_fails_the_job(
    world: CampaignMemory, memory: Memory, llm: OpenAILLM, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries = await write(world, TRANSCRIPT)
    two_batches(entries, monkeypatch)
    fake_openai.queue_chat("{not json", FakeRawReply("<html>bad gateway</html>"))
    with pytest.raises(LLMUnavailable):
        await run_job(memory, world, entries[0].session_id, LLMExtractor(llm), monkeypatch)
    assert await extracted_to(world, entries[0].session_id) is None and await facts(world) == []

    fake_openai.queue_chat("{not json", json.dumps({"entities": [], "facts": []}))  # the retry
    await run_job(memory, world, entries[0].session_id, LLMExtractor(llm), monkeypatch)
    assert await extracted_to(world, entries[0].session_id) == entries[-1].seq
    assert ("Brom", "occupation", "blacksmith", "pending") in await facts(world)  # the rules', first batch


# the extraction job -------------------------------------------------------------------------------------


class SlowRules(RuleExtractor):
    """The rule extractor with something happening while it runs, as during a slow LLM call."""

    def __init__(self, meanwhile: Callable[[], Awaitable[None]]) -> None:
        super().__init__()
        self.meanwhile = meanwhile
        self.calls = 0

    async def extract(
        self,
        entries: Sequence[Entry],
        known: Sequence[KnownEntity],
        *,
        narrates: Callable[[Entry], bool] | None = None,
        retold: Collection[int] = frozenset(),
        scenes: Mapping[int, Sequence[KnownEntity]] | None = None,
        meant: Mapping[int, Sequence[Event]] | None = None,
        here: KnownEntity | None = None,
    ) -> ExtractionResult:
        self.calls += 1
        if self.calls == 1:
            await self.meanwhile()
        return await super().extract(
            entries, known, narrates=narrates, retold=retold, scenes=scenes, meant=meant, here=here
        )


async def run_job(
    memory: Memory, mem: CampaignMemory, session_id: int, extractor: Extractor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(extract_job, "make_extractor", lambda llm: extractor)
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model=MiniLMEmbedder.model_name)
    await jobs.extract_session(ctx, mem.campaign_id, session_id)


async def extracted_to(mem: CampaignMemory, session_id: int) -> int:
    return await mem.db.fetchval(
        "SELECT last_seq FROM ingest_progress WHERE campaign_id = $1 AND session_id = $2 AND step = $3",
        mem.campaign_id,
        session_id,
        jobs.EXTRACT,
    )


async def test_the_job_holds_no_transaction_while_the_extractor_runs(
    world: CampaignMemory, memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries = await write(world, TRANSCRIPT)
    open_transactions: list[int] = []

    async def meanwhile() -> None:
        open_transactions.append(
            await world.db.fetchval(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND state LIKE 'idle in transaction%'"
            )
        )
        # The DM rejects an entity while the extractor runs: the job files nothing about it.
        silver = await world.graph.get_entity("Silver Hand")
        await world.graph.set_entity_status(silver.id, ReviewStatus.rejected, dm_confirmed=True)

    await run_job(memory, world, entries[0].session_id, SlowRules(meanwhile), monkeypatch)

    assert open_transactions == [0]
    filed = await facts(world)
    assert ("Brom", "works_in", "Ironhold", "pending") in filed
    assert not [f for f in filed if "Silver Hand" in f]
    assert await extracted_to(world, entries[0].session_id) == entries[-1].seq


async def test_the_job_drops_its_slice_when_the_progress_moved_meanwhile(
    world: CampaignMemory, memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries = await write(world, TRANSCRIPT)
    session_id = entries[0].session_id

    async def meanwhile() -> None:  # another run extracted these lines first
        await world.db.execute(
            "INSERT INTO ingest_progress (campaign_id, session_id, step, last_seq) VALUES ($1, $2, $3, $4)",
            world.campaign_id,
            session_id,
            jobs.EXTRACT,
            entries[-1].seq,
        )

    extractor = SlowRules(meanwhile)
    await run_job(memory, world, session_id, extractor, monkeypatch)

    assert extractor.calls == 1  # read again from the new progress: nothing left to extract
    assert await facts(world) == []  # that other run's writes stand for these lines, not this one's
    assert await extracted_to(world, session_id) == entries[-1].seq


async def test_a_line_arriving_inside_the_slice_meanwhile_is_extracted(
    world: CampaignMemory, memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = await SessionRecorder.start(world, "Session 1")
    lines = [(1, TRANSCRIPT[0]), (2, TRANSCRIPT[3]), (4, TRANSCRIPT[5])]  # line 3 comes late
    await rec.add_many([Utterance(speaker=s, text=t, seq=seq, start_s=float(seq)) for seq, (s, t) in lines])
    await rec.flush()
    session_id = rec.session.id

    async def meanwhile() -> None:  # the missing line is imported, as the recorder does it
        late = await SessionRecorder.start(world, "Session 1")
        await late.add(Utterance(speaker="DM", text=TRANSCRIPT[4][1], seq=3, start_s=3.0))
        assert await late.flush() == 1

    extractor = SlowRules(meanwhile)
    await run_job(memory, world, session_id, extractor, monkeypatch)

    assert extractor.calls == 2  # the slice changed under the first call: read and extracted again
    assert ("Brom", "member_of", "Silver Hand", "pending") in await facts(world)  # line 3's fact
    assert await extracted_to(world, session_id) == 4


async def test_a_model_unusable_for_a_whole_session_is_one_warning_per_run_of_the_job(
    world: CampaignMemory, memory: Memory, llm: OpenAILLM, fake_openai: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    """The job reads a session slice by slice: a model answering nonsense to every request warned once a slice
    (13 warnings on C1E020). One run of the job is one warning, saying how many slices it failed on."""
    entries = await write(world, TRANSCRIPT * 3)
    fake_openai.chat_handler = "Sure! Brom is in the Silver Hand."
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model=MiniLMEmbedder.model_name, llm=llm)
    await jobs.extract_session(ctx, world.campaign_id, entries[0].session_id, slice_size=6)
    assert len(fake_openai.chat_requests) == 3  # one request a slice: the model was asked of each
    warned = [r.getMessage() for r in caplog.records if "unusable LLM answers" in r.getMessage()]
    assert len(warned) == 1, warned
    assert warned[0].startswith(
        "campaign 'Test Campaign', session 'Session 1': unusable LLM answers (3; the first: LLM answer is not "
        "valid JSON"
    )
    assert "in 3 of 3 slices of its lines, so the offline rules read those 12 lines instead" in warned[0]
    # what the DM reviews is what a warning a slice came with: the rules' findings, pending
    assert ("Brom", "member_of", "Silver Hand", "pending") in await facts(world)
    assert await extracted_to(world, entries[0].session_id) == entries[-1].seq


async def test_nothing_is_proposed_from_the_pre_show_or_a_sponsor_read(world: CampaignMemory) -> None:
    """The issue's queue held "Xenoblade Chronicles X" and "Lao", from a voice actor's plug before the game."""
    lines = [
        ("DM", "Welcome to the show! A few announcements before we start."),
        ("Sam", "I voice a pilot named Lao in Xenoblade Chronicles X, out this week."),
        ("DM", "All right. Last we left off, you stood in the forge of Ironhold."),
        ("DM", "Behind Brom stands a dwarf named Korvash, arms crossed."),
        *[("Grog", "I look around the forge.")] * 6,
        ("Vex", "Go check out the Twitch chat, a mage named Zubrin won the giveaway!"),
    ]
    entries = await write(world, lines)
    stats = await run(world, entries)
    assert stats.entries_skipped_offgame == 3
    pending = {item.describe() for item in await world.review.pending(limit=100)}
    assert any("Korvash" in p for p in pending), pending
    assert not any(name in p for p in pending for name in ("Lao", "Xenoblade", "Zubrin")), pending


async def test_a_review_item_shows_its_best_line_and_how_many_lines_said_it(world: CampaignMemory) -> None:
    entries = await write(
        world,
        [
            ("Vex", "Brom is the blacksmith of Ironhold, I think."),
            ("Grog", "I wave."),
            ("DM", "Brom, the blacksmith of Ironhold, nods at you."),
        ],
    )
    await run(world, entries)
    items = {item.describe(): item for item in await world.review.pending(limit=100)}
    item = items["Brom works in Ironhold"]
    assert item.lines == 2  # the DM's word first, though the player said it before
    assert item.said is not None and (item.said.speaker, item.said.text) == ("DM", entries[2].text)


async def test_a_review_item_prefers_the_line_of_a_dm_labelled_as_another_game_calls_them(
    world: CampaignMemory,
) -> None:
    """A Call of Cthulhu transcript labels its game master "Keeper": their word is the best line, as a DM's is."""
    entries = await write(
        world,
        [
            ("Vex", "Brom is the blacksmith of Ironhold, I think."),
            ("Keeper", "Brom, the blacksmith of Ironhold, nods at you."),
        ],
    )
    await run(world, entries)
    items = {item.describe(): item for item in await world.review.pending(limit=100)}
    said = items["Brom works in Ironhold"].said
    assert said is not None and (said.speaker, said.text) == ("Keeper", entries[1].text)


# turning points -----------------------------------------------------------------------------------------


async def test_the_dms_turning_points_reach_review_as_events_with_their_line_and_who_took_part(
    world: CampaignMemory, memory: Memory
) -> None:
    g = world.graph
    await g.add_entity(EntityIn(name="Jazna", type=EntityType.npc))
    await g.add_entity(EntityIn(name="Grog Strongjaw", type=EntityType.player, aliases=["Grog"]))
    await g.add_entity(EntityIn(name="Whitestone", type=EntityType.place))
    entries = await write(
        world,
        [
            ("DM", "Grog, without hesitation, beheads Jazna so swiftly that it stuns the crowd."),
            ("Grog", "I kill Brom too. Just kidding."),  # a player's word: no event
            ("DM", "Jazna is dead. You make your way back to Whitestone as the sun begins to set."),
            ("Vex", "If we kill Brom, the forge is ours."),
            ("DM", "Brom would die if you tried, and he knows it."),  # a hypothetical
        ],
    )
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model=MiniLMEmbedder.model_name)
    await jobs.extract_session(ctx, world.campaign_id, entries[0].session_id)

    items = {item.describe(): item for item in await world.review.pending(limit=100)}
    death = items["new event 'Death of Jazna': a death"]
    assert death.entity is not None and death.entity.status == ReviewStatus.pending
    assert death.lines == 2  # told twice, proposed once
    assert death.said is not None and (death.said.speaker, death.said.text) == ("DM", entries[0].text)
    assert "new event 'Arrival at Whitestone': an arrival" in items
    assert {(s, t, o) for s, t, o, _ in await facts(world) if t in ("took_part_in", "located_in")} == {
        ("Jazna", "took_part_in", "Death of Jazna"),
        ("Grog Strongjaw", "took_part_in", "Death of Jazna"),
        ("Arrival at Whitestone", "located_in", "Whitestone"),
    }
    assert not any("Brom" in key and "event" in key for key in items), items
    link = items["Grog Strongjaw took part in Death of Jazna"]
    assert link.said is not None and link.said.text == entries[0].text

    # Accepting the link makes the event canon with it, and rejecting an event takes its links with it.
    await world.review.accept(link.ref)
    assert (await g.get_entity("Death of Jazna")).status == ReviewStatus.accepted
    await world.review.reject(items["new event 'Arrival at Whitestone': an arrival"].ref)
    assert ("Arrival at Whitestone", "located_in", "Whitestone", "rejected") in await facts(world)


async def test_a_death_told_of_him_proposes_the_dead_status_with_it_and_accepted_closes_alive(
    world: CampaignMemory,
) -> None:
    """The loaded "status: alive" must not stand beside the death: the death proposes "status dead" from its line,
    and the DM accepting it closes "alive" (a value closes a value of its type)."""
    g = world.graph
    await g.add_entity(EntityIn(name="Quillon Ashgrove", type=EntityType.npc, aliases=["Quillon"]))
    await g.link("Quillon Ashgrove", "status", value="alive")
    entries = await write(
        world, [("DM", "At the top you find Quillon Ashgrove on the floor. He is dead. Water pours from his mouth.")]
    )
    await run(world, entries)

    items = {item.describe(): item for item in await world.review.pending(limit=100)}
    assert "new event 'Death of Quillon Ashgrove': a death" in items
    dead = items["Quillon Ashgrove is dead"]
    assert dead.fact is not None and dead.fact.provenance.entry_ids == [entries[0].id]
    await world.review.accept(dead.ref)
    quillon = await g.get_entity("Quillon Ashgrove")
    assert {r.value for r in await g.relationships_of(quillon.id) if r.type == "status"} == {"dead"}


async def test_the_dm_saying_someones_dead_with_s_proposes_the_death_and_the_dead_status(world: CampaignMemory) -> None:
    """ "Brom's dead." proposed nothing: the "'s" went into the name, and "Brom dead" told no state."""
    entries = await write(world, [("Vex", "Brom's dead!"), ("DM", "Brom's dead. The forge goes cold.")])
    await run(world, entries)

    items = {item.describe(): item for item in await world.review.pending(limit=100)}
    assert "new event 'Death of Brom': a death" in items
    dead = items["Brom is dead"]
    assert dead.fact is not None and dead.fact.provenance.entry_ids == [entries[1].id]  # the DM's, not the player's


async def test_a_name_owning_what_follows_is_not_the_one_killed_or_had(world: CampaignMemory) -> None:
    """ "Grog kills Brom's apprentice" proposed Brom's death, "Grog has Brom's hammer" Grog having Brom: the name
    before "'s" and a noun owns it. A known item it owns is what is had."""
    g = world.graph
    await g.add_entity(EntityIn(name="Grog", type=EntityType.player))
    await g.add_entity(EntityIn(name="Hammer of Ironhold", type=EntityType.item))
    entries = await write(
        world,
        [
            ("DM", "Grog kills Brom's apprentice with one swing."),
            ("DM", "Grog has Brom's tongs now."),
            ("DM", "Grog takes Brom's Hammer of Ironhold from the wall."),
        ],
    )
    await run(world, entries)
    filed = [(s, t, o) for s, t, o, _ in await facts(world)]
    assert [f for f in filed if f[1] != "took_part_in"] == [("Grog", "has", "Hammer of Ironhold")]
    assert not [f for f in filed if "Brom" in f]  # no death, no killing, nothing had, no part taken


async def test_someone_the_dm_tells_is_alive_proposes_the_alive_status_and_accepted_closes_dead(
    world: CampaignMemory,
) -> None:
    """A death the memory holds had no way back from the transcript: "It is Lucy Pruitt. … She's alive." proposed
    nothing, so the DM never saw that a status said dead."""
    g = world.graph
    await g.add_entity(EntityIn(name="Lucy Pruitt", type=EntityType.npc))
    await g.link("Lucy Pruitt", "status", value="dead")
    entries = await write(
        world,
        [
            ("Kim", "Is she alive?"),  # a player's question
            ("DM", "It is Lucy Pruitt. She's gagged, her wrists are raw. She's alive."),
        ],
    )
    await run(world, entries)

    items = {item.describe(): item for item in await world.review.pending(limit=100)}
    alive = items["Lucy Pruitt is alive"]
    assert alive.fact is not None and alive.fact.provenance.entry_ids == [entries[1].id]
    await world.review.accept(alive.ref)
    lucy = await g.get_entity("Lucy Pruitt")
    assert {r.value for r in await g.relationships_of(lucy.id) if r.type == "status"} == {"alive"}


async def test_an_npcs_arrival_and_the_partys_at_one_place_in_a_session_are_two_events(world: CampaignMemory) -> None:
    """Both were "Arrival at The Lantern and Eel", one event: the DM reviewed Quillon's arrival as the party's (its
    lines said "said in 2 lines"), and "You see Quillon enter …" was no arrival at all."""
    g = world.graph
    await g.add_entity(EntityIn(name="Quillon Ashgrove", type=EntityType.npc, aliases=["Quillon"]))
    await g.add_entity(EntityIn(name="The Lantern and Eel", type=EntityType.place))
    entries = await write(
        world,
        [
            ("DM", "You step into the Lantern and Eel, dripping marsh water on the boards."),
            ("Vex", "I order an ale."),
            ("DM", "An hour later you see Quillon enter the Lantern and Eel, dripping wet."),
        ],
    )
    await run(world, entries)

    items = {item.describe(): item for item in await world.review.pending(limit=100)}
    party = items["new event 'Arrival at The Lantern and Eel': an arrival"]
    quillon = items["new event 'Arrival of Quillon Ashgrove at The Lantern and Eel': an arrival"]
    assert party.entity is not None and party.entity.provenance.entry_ids == [entries[0].id]
    assert quillon.entity is not None and quillon.entity.provenance.entry_ids == [entries[2].id]
    assert ("Quillon Ashgrove", "took_part_in", "Arrival of Quillon Ashgrove at The Lantern and Eel") in {
        (s, t, o) for s, t, o, _ in await facts(world)
    }


async def test_a_factions_arrival_a_session_after_the_partys_at_one_place_is_another_event(
    world: CampaignMemory,
) -> None:
    """Report ye item 9: night 2's "the Tidewardens arrive at the abbey" joined night 1's "Arrival at The Sunken
    Abbey" (the party's), the faction taking part in the party's arrival."""
    g = world.graph
    await g.add_entity(EntityIn(name="The Sunken Abbey", type=EntityType.place, aliases=["the abbey"]))
    await g.add_entity(EntityIn(name="The Tidewardens", type=EntityType.faction))

    async def session(title: str, lines: list[tuple[str, str]]) -> list[Entry]:
        entries = await write(world, lines, title=title)
        await run(world, entries)
        await world.log.end_session(entries[0].session_id)
        return entries

    first = await session("Night 1", [("DM", "At dusk, you arrive at the Sunken Abbey, half under the water.")])
    second = await session(
        "Night 2",
        [
            ("DM", "Last time, Quillon drowned at the top of the bell tower."),
            ("DM", "In the morning, the Tidewardens arrive at the abbey in a patrol boat."),
        ],
    )
    items = {item.describe(): item for item in await world.review.pending(limit=100)}
    party = items["new event 'Arrival at The Sunken Abbey': an arrival"]
    theirs = items["new event 'Arrival of The Tidewardens at The Sunken Abbey': an arrival"]
    assert party.entity is not None and party.entity.provenance.entry_ids == [first[0].id]
    assert theirs.entity is not None and theirs.entity.provenance.entry_ids == [second[1].id]
    links = {(s, t, o) for s, t, o, _ in await facts(world) if t == "took_part_in"}
    assert links == {("The Tidewardens", "took_part_in", "Arrival of The Tidewardens at The Sunken Abbey")}


async def test_hand_overs_propose_who_has_the_item_now_and_a_players_i_is_their_character(
    world: CampaignMemory,
) -> None:
    g = world.graph
    await g.add_entity(EntityIn(name="Quillon Ashgrove", type=EntityType.npc, aliases=["Quillon"]))
    for name, player in (("Thessaly Brightwater", "Ana"), ("Wren Halloway", "Cara"), ("Corvin Dusk", "Dev")):
        await g.add_entity(
            EntityIn(name=name, type=EntityType.player, aliases=[name.split()[0]], attributes={"played_by": player})
        )
    for item, aliases in (("Ashgrove Key", []), ("The Bellstone", ["Bellstone"]), ("Cloak of Tides", [])):
        await g.add_entity(EntityIn(name=item, type=EntityType.item, aliases=aliases))
    entries = await write(
        world,
        [
            ("DM", "Quillon hands Thessaly the Ashgrove Key. It opens the crypt under the bell tower."),
            ("Dev", "Corvin picks up the Bellstone and studies the runes."),
            ("Ana", "I give the Cloak of Tides to Wren. She needs it more than me."),
            ("Cara", "Should I give the Cloak of Tides to Corvin?"),  # a question
            ("Dev", "If Quillon takes the Bellstone we are doomed."),  # a condition
            ("Ana", "I want to grab the Ashgrove Key."),  # an intention
        ],
    )
    await run(world, entries)
    held = {(s, o, st) for s, t, o, st in await facts(world) if t in ("has", "takes", "gives")}
    assert held == {
        ("Thessaly Brightwater", "Ashgrove Key", "pending"),
        ("Corvin Dusk", "The Bellstone", "pending"),
        ("Wren Halloway", "Cloak of Tides", "pending"),
    }


async def test_a_hand_over_by_a_character_called_by_first_name_proposes_who_has_the_item(
    world: CampaignMemory,
) -> None:
    """No alias needed: the extractor knows a person by their first or last name alone, as the mention index does."""
    g = world.graph
    await g.add_entity(EntityIn(name="Eleanor Voss", type=EntityType.player, attributes={"played_by": "Jess"}))
    await g.add_entity(EntityIn(name="Dr. Henry Armitage", type=EntityType.npc))
    await g.add_entity(EntityIn(name="The Black Idol", type=EntityType.item, aliases=["Black Idol"]))
    entries = await write(world, [("Jess", "Eleanor gives the Black Idol to Doctor Armitage.")])
    await run(world, entries)
    got = {(s, t, o) for s, t, o, _ in await facts(world)}
    assert ("Dr. Henry Armitage", "has", "The Black Idol") in got
    assert ("Eleanor Voss", "took_part_in", "Acquisition of The Black Idol") in got


async def test_the_pipeline_reads_a_turning_point_of_a_character_called_by_first_name_by_its_meaning(
    world: CampaignMemory, memory: Memory
) -> None:
    """The pipeline's own gazetteer (the lines it keeps, the sentences it reads by meaning) is the extractor's: no
    clause rule reads this death, and without an alias "Eleanor" named no one there."""
    g = world.graph
    await g.add_entity(EntityIn(name="Eleanor Voss", type=EntityType.player, attributes={"played_by": "Jess"}))
    await g.add_entity(EntityIn(name="Jeremiah Crane", type=EntityType.npc))
    line = "The last breath leaves Eleanor's body and she goes still."
    entries = await write(world, [("DM", "A crane lifts off the fen."), ("DM", line), ("Jess", "No!")])
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model=MiniLMEmbedder.model_name)
    await jobs.extract_session(ctx, world.campaign_id, entries[0].session_id)
    items = {item.describe(): item for item in await world.review.pending(limit=100)}
    death = items["new event 'Death of Eleanor Voss': a death"]
    assert death.said is not None and death.said.text == line
    got = {(s, t, o) for s, t, o, _ in await facts(world)}
    assert {("Eleanor Voss", "status", "dead"), ("Eleanor Voss", "took_part_in", "Death of Eleanor Voss")} <= got
    assert not [f for f in got if "Jeremiah Crane" in f]  # "a crane" is the bird


@pytest.mark.parametrize("slice_size", [200, 1])
async def test_a_place_the_dm_keeps_naming_is_where_the_scene_moved_whatever_the_jobs_slices(
    world: CampaignMemory, memory: Memory, slice_size: int
) -> None:
    await world.graph.add_entity(EntityIn(name="Kraghammer", type=EntityType.place))
    # no verb of arriving: the DM names the new place again and again in narration
    entries = await write(
        world,
        [
            ("DM", "The guards grumble, stamp your papers and wave you through. Welcome to Kraghammer!"),
            ("Grog", "Whoa."),
            ("DM", "Red stone glows along the entry thoroughfare of Kraghammer."),
            ("Vex", "Where do we sleep?"),
            ("DM", 'A guard points up the ramp: "The Iron Hearth, best beds in Kraghammer."'),  # an npc's words
            ("DM", "Taverns ring the central forge of Kraghammer, loud with dwarven song."),
        ],
    )
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model=MiniLMEmbedder.model_name)
    # the burst is the session's: a slice of one line still knows the lines after it
    await jobs.extract_session(ctx, world.campaign_id, entries[0].session_id, slice_size=slice_size)
    items = {item.describe(): item for item in await world.review.pending(limit=100)}
    arrival = items["new event 'Arrival at Kraghammer': an arrival"]
    assert arrival.lines == 3  # a later slice telling it again adds its line
    assert arrival.said is not None and arrival.said.text == entries[0].text
    assert ("Arrival at Kraghammer", "located_in", "Kraghammer") in {(s, t, o) for s, t, o, _ in await facts(world)}


async def test_an_arrival_cited_by_its_scenes_lines_shows_the_line_where_the_party_gets_there(
    world: CampaignMemory, memory: Memory
) -> None:
    entries = await write(
        world,
        [
            ("DM", "The town up on the cliffs is Ironhold."),
            ("Grog", "Looks cold."),
            ("DM", "Smoke rises from the forges of Ironhold as the road climbs."),
            ("DM", "Finally, you reach the gates of Ironhold, and the guards wave you in."),
        ],
    )
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model=MiniLMEmbedder.model_name)
    await jobs.extract_session(ctx, world.campaign_id, entries[0].session_id)
    items = {item.describe(): item for item in await world.review.pending(limit=100)}
    for key in ("new event 'Arrival at Ironhold': an arrival", "Arrival at Ironhold is located in Ironhold"):
        assert items[key].lines == 3  # the scene's burst, as cited
        assert items[key].said is not None and items[key].said.text == entries[3].text, key


async def test_an_npc_arriving_with_no_place_arrives_where_the_party_is_in_a_later_slice(
    world: CampaignMemory, memory: Memory
) -> None:
    """The job reads a session 200 lines at a time: where the party arrived in an earlier slice is still where Brom
    "arrives with the guards" (it was forgotten at each slice's start)."""
    filler = [("DM", f"The rain keeps falling on the roofs, line {n}.") for n in range(229)]
    entries = await write(
        world, [("DM", "You arrive at Ironhold as the sun sets."), *filler, ("DM", "Brom arrives with the guards.")]
    )
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model=MiniLMEmbedder.model_name)
    await jobs.extract_session(ctx, world.campaign_id, entries[0].session_id)
    items = {item.describe(): item for item in await world.review.pending(limit=100)}
    key = "new event 'Arrival of Brom at Ironhold': an arrival"
    assert key in items, list(items)
    assert items[key].said is not None and items[key].said.text == entries[-1].text


async def test_someone_arriving_unnamed_whom_the_dm_names_next_is_their_arrival(
    world: CampaignMemory, memory: Memory
) -> None:
    """ "An elf in a grey cloak arrives at the Gilded Anchor. It is Nerith Vael." filed no arrival of hers: the next
    sentence of the DM's line names who arrives. At the session's opening the line was read as the DM's recap
    ("Gilded" a verb in the past), which filed the party's arrival there."""
    await world.graph.add_entity(EntityIn(name="Gilded Anchor", type=EntityType.place, aliases=["the Gilded Anchor"]))
    entries = await write(
        world,
        [("DM", "An elf in a grey cloak arrives at the Gilded Anchor. It is Eldrinax."), ("Grog", "Who?")],
    )
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model=MiniLMEmbedder.model_name)
    await jobs.extract_session(ctx, world.campaign_id, entries[0].session_id)
    items = {item.describe(): item for item in await world.review.pending(limit=100)}
    key = "new event 'Arrival of Eldrinax at Gilded Anchor': an arrival"
    assert key in items, list(items)
    assert "new event 'Arrival at Gilded Anchor': an arrival" not in items  # hers, not the party's
    assert ("Eldrinax", "took_part_in", "Arrival of Eldrinax at Gilded Anchor") in {
        (s, t, o) for s, t, o, _ in await facts(world)
    }


async def test_someone_arriving_unnamed_whom_the_dm_gives_a_new_name_is_proposed_with_their_arrival(
    world: CampaignMemory, memory: Memory
) -> None:
    """ "… arrives at the Gilded Anchor. It is Corvin Ash." with a name no entity has: the new npc and their arrival."""
    entries = await write(
        world,
        [
            ("DM", "The rain keeps falling on the roofs."),
            ("DM", "An elf in a grey cloak arrives at Ironhold. It is Corvin Ash."),
            ("Grog", "Who?"),
        ],
    )
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model=MiniLMEmbedder.model_name)
    await jobs.extract_session(ctx, world.campaign_id, entries[0].session_id)
    items = {item.describe() for item in await world.review.pending(limit=100)}
    assert {"new npc 'Corvin Ash'", "new event 'Arrival of Corvin Ash at Ironhold': an arrival"} <= items, items
    assert "new event 'Arrival at Ironhold': an arrival" not in items
    assert ("Corvin Ash", "took_part_in", "Arrival of Corvin Ash at Ironhold") in {
        (s, t, o) for s, t, o, _ in await facts(world)
    }


async def test_every_name_of_an_arrivals_subject_list_takes_part(world: CampaignMemory, memory: Memory) -> None:
    """ "Thessaly and Grog arrive at Whitestone" (and "Thessaly, Pike and Grog arrive …") listed only Grog as taking
    part: one event, every name of the list in it."""
    for name in ("Thessaly", "Pike", "Grog"):
        await world.graph.add_entity(EntityIn(name=name, type=EntityType.player))
    entries = await write(
        world,
        [
            ("DM", "The rain keeps falling on the roofs."),
            ("DM", "Thessaly, Pike and Grog arrive at Ironhold."),
            ("Grog", "Finally."),
        ],
    )
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model=MiniLMEmbedder.model_name)
    await jobs.extract_session(ctx, world.campaign_id, entries[0].session_id)
    took_part = {s for s, t, o, _ in await facts(world) if (t, o) == ("took_part_in", "Arrival at Ironhold")}
    assert took_part == {"Thessaly", "Pike", "Grog"}


async def test_a_time_opening_the_sentence_without_a_comma_stands_before_the_partys_arrival(
    world: CampaignMemory, memory: Memory
) -> None:
    """ "In the morning you arrive at Whitestone" filed no arrival while "In the morning, you arrive …" did."""
    entries = await write(
        world,
        [
            ("DM", "The rain keeps falling on the roofs."),
            ("DM", "In the morning you arrive at Ironhold."),
            ("Grog", "Ok."),
        ],
    )
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model=MiniLMEmbedder.model_name)
    await jobs.extract_session(ctx, world.campaign_id, entries[0].session_id)
    items = {item.describe(): item for item in await world.review.pending(limit=100)}
    key = "new event 'Arrival at Ironhold': an arrival"
    assert key in items, list(items)
    assert items[key].said is not None and items[key].said.text == entries[1].text


async def test_an_npc_arriving_with_no_place_before_the_party_arrived_anywhere_files_nothing(
    world: CampaignMemory, memory: Memory
) -> None:
    """ "Doran Ives arrives." with no party arrival earlier in the session: no place to tell, and an arrival without
    one is no turning point for the DM to keep (no noisy item). The party arriving after it changes nothing."""
    entries = await write(
        world, [("DM", "Brom arrives."), ("Grog", "Hello Brom."), ("DM", "You walk into Ironhold at dusk.")]
    )
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model=MiniLMEmbedder.model_name)
    await jobs.extract_session(ctx, world.campaign_id, entries[0].session_id)
    events = [item.describe() for item in await world.review.pending(limit=100) if "new event" in item.describe()]
    assert events == ["new event 'Arrival at Ironhold': an arrival"]


async def test_an_arrival_read_by_meaning_is_where_the_party_is_in_a_later_slice(
    world: CampaignMemory, memory: Memory
) -> None:
    """Where the party is, carried into a slice, left out the arrivals the meaning rule reads: Brom arriving with no
    place was filed at the inn read as one slice, and nowhere once the job cut the session before his line."""
    await world.graph.add_entity(EntityIn(name="The Nestled Nook Inn", type=EntityType.place))
    line = (  # CRD3 C2E002 turn 371: an arrival no clause rule reads (see the test of the meaning rule above)
        "They escort you guys to the actual inn itself, to the bottom floor of the Nestled Nook Inn, watch you enter, "
        "and then post up right outside the main entrance to the tavern."
    )
    entries = await write(
        world, [("DM", line), ("DM", "The rain keeps falling on the roofs."), ("DM", "Brom arrives with the guards.")]
    )
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model=MiniLMEmbedder.model_name)
    await jobs.extract_session(ctx, world.campaign_id, entries[0].session_id, slice_size=2)
    items = [item.describe() for item in await world.review.pending(limit=100)]
    assert "new event 'Arrival of Brom at The Nestled Nook Inn': an arrival" in items, items


async def test_where_the_scene_moved_is_read_once_a_job_run_while_the_lines_and_entities_stay(
    world: CampaignMemory, memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[int] = []

    def counted(entries: Sequence[Entry], *args: object) -> dict[int, list[KnownEntity]]:
        read.append(len(entries))
        return scene_moves(entries, *args)  # type: ignore[arg-type]

    scene_moves = extraction_pipeline.scene_moves
    monkeypatch.setattr(extraction_pipeline, "scene_moves", counted)
    # nothing new is proposed: every slice reads the same lines and entities, a long session's a dozen times
    entries = await write(world, [("DM", "Brom hammers at the anvil, sparks flying."), ("Vex", "lol")] * 3)
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model=MiniLMEmbedder.model_name)
    await jobs.extract_session(ctx, world.campaign_id, entries[0].session_id, slice_size=1)
    assert read == [6]

    # a line more (or an entity more) is read again, by the next run as by this one
    await write(world, [("DM", "Brom wipes his brow.")])
    await jobs.extract_session(ctx, world.campaign_id, entries[0].session_id, slice_size=1)
    assert read == [6, 7]


async def test_the_sessions_table_talk_and_opening_recap_are_read_once_a_job_run_while_its_lines_stay(
    world: CampaignMemory, memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[tuple[str, int]] = []

    def counted(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def reading(entries: Sequence[Entry], *args: object, **kwargs: object) -> Any:
            read.append((name, len(entries)))
            return real(entries, *args, **kwargs)

        return reading

    for name in ("out_of_game", "opening_recap"):
        monkeypatch.setattr(extraction_pipeline, name, counted(name, getattr(extraction_pipeline, name)))
    lines = [
        ("DM", "Welcome, everyone! Grab your snacks."),  # the pre-show, before the recap's cue
        ("DM", "Last we left off, you stood in the forge of Ironhold."),
        ("Vex", "lol"),
        ("DM", "Brom is a member of the Silver Hand. Roll a d20 for me."),  # dice talk: nothing proposed from it
        ("DM", "Brom hammers at the anvil, sparks flying."),
        ("Grog", "I rolled a 12"),
    ]
    entries = await write(world, lines)
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model=MiniLMEmbedder.model_name)
    await jobs.extract_session(ctx, world.campaign_id, entries[0].session_id, slice_size=1)
    # the session's segments and recap once, and once where its scene moved (SceneMoves): not once a slice
    assert sorted(read) == [("opening_recap", 6), ("out_of_game", 6), ("out_of_game", 6)]
    # each slice's lines are still judged on their own
    assert not [i for i in await world.review.pending(limit=100) if "Silver Hand" in i.describe()]

    # a line more is read again, by the next run as by this one
    read.clear()
    await write(world, [("DM", "Brom wipes his brow.")])
    await jobs.extract_session(ctx, world.campaign_id, entries[0].session_id, slice_size=1)
    assert sorted(read) == [("opening_recap", 7), ("out_of_game", 7), ("out_of_game", 7)]


async def test_the_job_proposes_a_turning_point_the_dms_line_tells_by_meaning(
    world: CampaignMemory, memory: Memory
) -> None:
    await world.graph.add_entity(EntityIn(name="The Nestled Nook Inn", type=EntityType.place))
    line = (  # CRD3 C2E002 turn 371: "they" escort the party, no subject the clause rules read as the party's
        "They escort you guys to the actual inn itself, to the bottom floor of the Nestled Nook Inn, watch you enter, "
        "and then post up right outside the main entrance to the tavern."
    )
    entries = await write(world, [("DM", line), ("Vex", "Home sweet home.")])
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model=MiniLMEmbedder.model_name)
    await jobs.extract_session(ctx, world.campaign_id, entries[0].session_id)
    items = {item.describe(): item for item in await world.review.pending(limit=100)}
    arrival = items["new event 'Arrival at The Nestled Nook Inn': an arrival"]
    assert arrival.said is not None and arrival.said.text == line
    assert ("Arrival at The Nestled Nook Inn", "located_in", "The Nestled Nook Inn", "pending") in await facts(world)


async def test_an_events_item_shows_the_clause_telling_it_not_the_first_mention_of_its_place(
    world: CampaignMemory,
) -> None:
    """A recap names the place long before it tells the party getting there: the DM is shown where it is told."""
    await world.graph.add_entity(EntityIn(name="Wildemount", type=EntityType.place))
    line = (  # CRD3 C1E065 turn 44, its first sentences
        "Hello, and welcome back. So to get you guys caught up: our band of adventurers, Vox Machina, in raising an "
        "army, hopefully, of allies and powerful artifacts to face the Chroma Conclave, a gathering of powerful, "
        "dangerous chromatic dragons that have been tearing through the countryside of Tal'Dorei and distant "
        "Wildemount. They have recently found some information, had a close call with the Frigid Doom known as "
        "Vorugal. You then decided to go ahead and using that cue, before the dragon returned to its current roost "
        "that it has created over the ruins of the city of Draconia, you traveled across to the continent of "
        "Wildemount. You had a meeting with the Ravenites, a rather subverted, long-enslaved offshoot species of "
        "dragonborn kin."
    )
    [entry] = await write(world, [("DM", line)])
    heard = Provenance(source=Source.stated, confidence=0.6, entry_ids=[entry.id])
    await world.graph.add_entity(
        EntityIn(name="Arrival at Wildemount", type=EntityType.event, provenance=heard, status="pending")
    )
    [item] = [i for i in await world.review.pending(limit=100) if "Arrival at Wildemount" in i.describe()]
    assert item.said is not None
    assert item.said.told is not None and item.said.told.endswith("you traveled across to the continent of Wildemount")
    shown = excerpt(item.said.text, said_names(item), 300)
    assert "traveled across to the continent of Wildemount" in shown and "distant" not in shown


async def test_an_event_told_again_in_a_later_slice_gains_its_lines_while_it_waits_for_review(
    world: CampaignMemory, memory: Memory
) -> None:
    g = world.graph
    await g.add_entity(EntityIn(name="Jazna", type=EntityType.npc))
    await g.add_entity(EntityIn(name="Kash", type=EntityType.npc))
    lines = [
        ("DM", "Grog, without hesitation, beheads Jazna so swiftly that it stuns the crowd."),
        ("Grog", "Whoa."),
        ("DM", "Kash is dead, struck down by the last bolt."),
        ("DM", "Jazna is dead, and the crowd falls silent."),
    ]
    entries = await write(world, lines)
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model=MiniLMEmbedder.model_name)
    await jobs.extract_session(ctx, world.campaign_id, entries[0].session_id, slice_size=1)

    async def told(name: str) -> tuple[ReviewStatus, list[int]]:
        entity = next(e for e in await g.list_entities(status=None) if e.name == name)  # rejected ones too
        return entity.status, entity.provenance.entry_ids

    items = {item.describe(): item for item in await world.review.pending(limit=100)}
    assert items["new event 'Death of Jazna': a death"].lines == 2  # the second slice's line too
    assert await told("Death of Jazna") == (ReviewStatus.pending, [entries[0].id, entries[3].id])
    await run(world, [entries[3]])  # read again: no line twice
    assert await told("Death of Jazna") == (ReviewStatus.pending, [entries[0].id, entries[3].id])

    # Once the DM decided, a line telling it again changes nothing, nor proposes a rejected one again.
    await world.review.accept(items["new event 'Death of Jazna': a death"].ref)
    await world.review.reject(items["new event 'Death of Kash': a death"].ref)
    again = await write(world, [("DM", "Jazna is dead, and Kash is dead too, both cold on the stones.")])
    await jobs.extract_session(ctx, world.campaign_id, entries[0].session_id, slice_size=1)
    assert await told("Death of Jazna") == (ReviewStatus.accepted, [entries[0].id, entries[3].id])
    assert await told("Death of Kash") == (ReviewStatus.rejected, [entries[2].id])
    assert again[0].id not in (await told("Death of Jazna"))[1]
    assert not [i for i in await world.review.pending(limit=100) if i.entity is not None], "re-proposed"


async def test_a_turning_point_of_another_session_is_another_event_unless_the_recap_retells_it(
    world: CampaignMemory,
) -> None:
    await world.graph.add_entity(EntityIn(name="Whitestone", type=EntityType.place))

    async def session(title: str, lines: list[tuple[str, str]]) -> int:
        entries = await write(world, lines, title=title)
        await run(world, entries)
        await run(world, entries)  # a job run again files nothing twice
        await world.log.end_session(entries[0].session_id)
        return entries[0].session_id

    async def events() -> dict[str, int | None]:
        found = await world.graph.list_entities(status=None)
        return {e.name: e.provenance.session_id for e in found if e.type == EntityType.event}

    ride = "You make your way back to Whitestone as the sun begins to set over the hills."
    first = await session("Session 1", [("Grog", "Onward, then."), ("DM", ride)])
    assert await events() == {"Arrival at Whitestone": first}
    # The DM's recap retells the first session's arrival: no new one.
    await session(
        "Session 2",
        [
            ("DM", "Last we left off, you made your way back to Whitestone as the sun set over the hills."),
            ("Grog", "Ah yes, good times at the castle."),
            ("DM", "Now, in the great hall, the townsfolk gather around the long tables for a feast."),
        ],
    )
    assert await events() == {"Arrival at Whitestone": first}
    # Arriving there again in play is this session's own arrival, named for it, with its own links.
    # (past the opening, where a recap may be: see RECAP_LINES)
    riding = [("Grog", "We ride on through the rain.")] * RECAP_LINES
    third = await session("Session 3", [*riding, ("DM", ride)])
    assert await events() == {"Arrival at Whitestone": first, "Arrival at Whitestone (Session 3)": third}
    assert {(s, t, o) for s, t, o, _ in await facts(world) if t == "located_in"} == {
        ("Arrival at Whitestone", "located_in", "Whitestone"),
        ("Arrival at Whitestone (Session 3)", "located_in", "Whitestone"),
    }


async def test_an_arrival_told_in_the_present_at_a_sessions_opening_is_that_sessions_own(
    world: CampaignMemory,
) -> None:
    """The opening's recap merges into the earlier session's event; the play that follows it in the opening, told in
    the present, is another arrival, named for its session."""
    await world.graph.add_entity(EntityIn(name="Whitestone", type=EntityType.place))

    async def session(title: str, lines: list[tuple[str, str]]) -> int:
        entries = await write(world, lines, title=title)
        await run(world, entries)
        await world.log.end_session(entries[0].session_id)
        return entries[0].session_id

    async def events() -> dict[str, int | None]:
        found = await world.graph.list_entities(status=None)
        return {e.name: e.provenance.session_id for e in found if e.type == EntityType.event}

    first = await session("Night 1", [("DM", "You make your way back to Whitestone as the sun begins to set.")])
    second = await session(
        "Night 2",
        [
            ("DM", "Last time, you made your way back to Whitestone as the sun set."),
            ("Grog", "Good times."),
            ("DM", "A week later, you arrive at Whitestone again with the caravan."),
        ],
    )
    assert await events() == {"Arrival at Whitestone": first, "Arrival at Whitestone (Night 2)": second}
    items = {item.describe(): item for item in await world.review.pending(limit=100)}
    assert items["new event 'Arrival at Whitestone': an arrival"].lines == 1  # night 2's arrival is not its line


async def test_the_dms_recap_is_read_as_the_story_so_far_and_the_same_words_in_play_are_not(
    world: CampaignMemory,
) -> None:
    await world.graph.add_entity(EntityIn(name="Thordak", type=EntityType.npc))
    battle = "There you all did battle with the great red dragon Thordak, deep in his lair."
    # past the opening, where a recap may be (RECAP_LINES), the DM's past tense is a memory
    riding = [("Grog", "We ride on through the rain.")] * RECAP_LINES
    await run(world, await write(world, [*riding, ("DM", battle)], title="Session 1"))
    assert [e.name for e in await world.graph.list_entities(status=None) if e.type == EntityType.event] == []
    entries = await write(world, [("DM", f"Last we left off: {battle}"), ("Grog", "Good times.")], title="Session 2")
    await run(world, entries)
    items = {item.describe(): item for item in await world.review.pending(limit=100)}
    event = items["new event 'Battle with Thordak': a battle"]
    assert event.said is not None and event.said.text == entries[0].text
    assert "Thordak took part in Battle with Thordak" in items


async def test_an_instruction_proposes_no_acquisition_and_before_dawn_is_only_when(world: CampaignMemory) -> None:
    """The demo's voice from the lake bids the party find the horn: nothing is acquired yet. "Just before dawn"
    says when the party arrives, not that it has not yet."""
    await world.graph.add_entity(EntityIn(name="Tidecaller Horn", type=EntityType.item))
    lines = [
        (
            "DM",
            "You hear a voice from the lake, very faint. It says: the horn, find the Tidecaller Horn before they do.",
        ),
        ("DM", "Just before dawn you arrive at Ironhold."),
    ]
    await run(world, await write(world, [("Grog", "I look around.")] * RECAP_LINES + lines))
    items = {item.describe() for item in await world.review.pending(limit=100)}
    assert "new event 'Arrival at Ironhold': an arrival" in items
    assert not any("Tidecaller" in item for item in items), items


async def test_a_dms_short_recap_naming_the_last_session_is_read_not_skipped_as_an_aside(
    world: CampaignMemory,
) -> None:
    """ "Last session, you slew Thordak at Whitestone." is the DM's recap, not the table's aside about its sessions:
    it is read in the recap's register like any other, not skipped as out of game. A player's line on the last
    session is the table's talk ("Last session Discord crashed.")."""
    await world.graph.add_entity(EntityIn(name="Thordak", type=EntityType.npc))
    await world.graph.add_entity(EntityIn(name="Whitestone", type=EntityType.place))
    lines = [
        ("DM", "Welcome back everyone, good to see you all."),
        ("DM", "Last session, you slew Thordak at Whitestone."),
        ("DM", "Now you stand in the ruins of the keep, the dragon's body smoking behind you."),
        ("Grog", "Last session Discord crashed."),
        ("Vex", "Last session Sam wasn't here."),
    ]
    stats = await run(world, await write(world, lines))
    assert stats.entries_skipped_offgame == 2
    items = {item.describe() for item in await world.review.pending(limit=100)}
    assert {"new event 'Death of Thordak': a death", "Thordak is dead"} <= items, items


async def test_the_llm_path_reads_no_out_of_game_line_and_its_items_carry_their_line(
    world: CampaignMemory, llm: OpenAILLM, fake_openai: FakeOpenAI
) -> None:
    lines = [
        ("DM", "Welcome to the show! A few announcements before we start."),
        ("Sam", "I voice a pilot named Lao in Xenoblade Chronicles X, out this week."),
        ("DM", "All right. Last we left off, you stood in the forge of Ironhold."),
        ("DM", "Behind Brom stands a dwarf named Korvash, arms crossed."),
        *[("Grog", "I look around the forge.")] * 6,
    ]
    entries = await write(world, lines)
    ids = [e.id for e in entries]
    answer = {
        "entities": [
            {"name": "Lao", "type": "npc", "description": "a pilot", "confidence": 0.9, "entry_ids": [ids[1]]},
            {"name": "Korvash", "type": "npc", "description": "a dwarf", "confidence": 0.9, "entry_ids": [ids[3]]},
        ],
        "facts": [fact("Korvash", "located_in", "Ironhold", None, 0.9, [ids[3]])],
    }
    fake_openai.queue_chat(json.dumps(answer))
    stats = await run(world, entries, make_extractor(llm))

    (request,) = fake_openai.chat_requests
    user = request["messages"][1]["content"]
    assert f"[{ids[3]}] DM: Behind Brom" in user
    assert "Xenoblade" not in user and f"[{ids[1]}]" not in user  # the pre-show never reached the model
    assert stats.items_invalid >= 1  # Lao cites a line outside what it was given: dropped
    items = {item.describe(): item for item in await world.review.pending(limit=100)}
    assert not any("Lao" in key for key in items), items
    korvash = items["new npc 'Korvash': a dwarf"]
    assert korvash.said is not None and (korvash.said.speaker, korvash.said.text) == ("DM", entries[3].text)


async def test_an_llm_entity_citing_a_line_that_does_not_name_it_carries_one_that_does_or_is_dropped(
    world: CampaignMemory, llm: OpenAILLM, fake_openai: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    """ "Lord Vexmoor, the lich king" waited for review with the DM's "Okay everyone, settle in" as its line."""
    lines = [
        ("DM", "Okay everyone, settle in. The fire roars in the forge."),
        ("DM", "Behind the anvil stands a dwarf named Korvash, arms crossed."),
    ]
    entries = await write(world, lines)
    ids = [e.id for e in entries]
    answer = {
        "entities": [
            {"name": "Lord Vexmoor", "type": "npc", "description": "the lich king", "confidence": 0.9,
             "entry_ids": [ids[0]]},
            {"name": "Korvash", "type": "npc", "description": "a dwarf", "confidence": 0.9, "entry_ids": ids},
        ],
        "facts": [],
    }  # fmt: skip
    fake_openai.queue_chat(json.dumps(answer))
    stats = await run(world, entries, make_extractor(llm))

    items = {item.describe(): item for item in await world.review.pending(limit=100)}
    assert not any("Vexmoor" in key for key in items), items
    assert stats.items_invalid == 1
    assert "'Lord Vexmoor' cites lines that do not name it and no line names it" in caplog.text
    korvash = items["new npc 'Korvash': a dwarf"]
    assert korvash.said is not None and (korvash.lines, korvash.said.text) == (1, entries[1].text)


async def test_an_llm_item_citing_no_line_carries_the_line_that_names_it_and_one_no_line_names_is_dropped(
    world: CampaignMemory, llm: OpenAILLM, fake_openai: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    """Citing no line meant citing the whole batch: the card showed its first line, unrelated, "(7 lines)"."""
    lines = [
        ("DM", "You walk into the forge. The fire roars."),
        *[("Grog", "I look around the forge.")] * 4,
        ("DM", "Behind the anvil stands a dwarf named Korvash, arms crossed."),
        ("DM", "Korvash has lived in Ironhold all his life."),
    ]
    entries = await write(world, lines)
    answer = {
        "entities": [
            {"name": "Korvash", "type": "npc", "description": "a dwarf", "confidence": 0.9, "entry_ids": []},
            {"name": "Phantom Queen", "type": "npc", "description": "", "confidence": 0.99, "entry_ids": []},
        ],
        "facts": [
            fact("Korvash", "lives_in", "Ironhold", None, 0.9, []),
            fact("Phantom Queen", "ally_of", "Korvash", None, 0.99, []),
        ],
    }
    fake_openai.queue_chat(json.dumps(answer))
    stats = await run(world, entries, make_extractor(llm))

    items = {item.describe(): item for item in await world.review.pending(limit=100)}
    assert not any("Phantom Queen" in key for key in items), items
    assert stats.items_invalid == 2
    assert "'Phantom Queen' cites no line and no line names it" in caplog.text
    korvash = items["new npc 'Korvash': a dwarf"]
    assert korvash.said is not None and korvash.said.text == entries[5].text
    assert korvash.lines == 2
    lives = items["Korvash lives in Ironhold"]
    assert lives.said is not None and (lives.lines, lives.said.text) == (1, entries[6].text)


async def test_a_fact_rejected_is_not_proposed_again_in_other_words_or_from_its_other_end(
    world: CampaignMemory,
) -> None:
    """The DM rejected "Grog has the Blade"; "Grog carried the Blade" next session, the same fact in the graph's
    reading, was proposed again."""
    for name, kind in [("Grog", EntityType.npc), ("Blade of Doom", EntityType.item)]:
        await world.graph.add_entity(EntityIn(name=name, type=kind))
    await run(world, await write(world, [("DM", "Grog has the Blade of Doom.")]))
    (item,) = [i for i in await world.review.pending() if i.fact is not None]
    assert (item.fact.type, item.fact.source_name) == ("has", "Grog")  # type: ignore[union-attr]
    await world.review.reject(item.ref)
    stats = await run(world, await write(world, [("DM", "Grog carried the Blade of Doom.")], "Session 2"))
    assert stats.facts_pending == 0 and await world.review.count() == 0


async def test_an_item_still_held_proposes_no_new_holder_nor_an_acquisition(
    world: CampaignMemory, memory: Memory
) -> None:
    """ "Thessaly still has the Key", "Wren is still holding the cloak": the holder the memory has, told again, is no
    news; of another holder, no hand-over was told. Nothing to review: no duplicate, no change of holder."""
    g = world.graph
    await g.add_entity(EntityIn(name="Quillon Ashgrove", type=EntityType.npc, aliases=["Quillon"]))
    for name, player in (("Thessaly Brightwater", "Ana"), ("Wren Halloway", "Cara")):
        await g.add_entity(
            EntityIn(name=name, type=EntityType.player, aliases=[name.split()[0]], attributes={"played_by": player})
        )
    for item, aliases in (("Ashgrove Key", ["the Key"]), ("Cloak of Tides", ["the cloak"])):
        await g.add_entity(EntityIn(name=item, type=EntityType.item, aliases=aliases))
    await g.link("Thessaly Brightwater", "has", "Ashgrove Key")
    await g.link("Quillon Ashgrove", "owns", "Cloak of Tides")
    entries = await write(
        world,
        [
            ("DM", "Thessaly still has the Key, cold against her palm."),
            ("DM", "Wren is still holding the Cloak of Tides as the tide comes in."),
            ("DM", "Thessaly still has the Ashgrove Key."),
            ("DM", "Wren still holds the Cloak of Tides."),
        ],
    )
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model=MiniLMEmbedder.model_name)
    await jobs.extract_session(ctx, world.campaign_id, entries[0].session_id)
    assert [item.describe() for item in await world.review.pending(limit=100)] == []
