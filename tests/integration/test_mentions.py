"""The mention index (memory.mentions): the chunk job records the lines naming each entity; the read API, the CLI
and a merge see them; names said together propose nothing for review."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import asyncpg
import pytest

from memory import jobs
from memory.gazetteer import Gazetteer
from memory.graph.took_part import link_to_recaps
from memory.jobs import chunk
from memory.jobs.queue import enqueue_stale_mentions
from memory.mentions import MENTION_RULES, index_lines, latest, mentions, said_lines
from memory.models import Correction, Entity, EntityIn, EntityType, Entry, EntryIn
from memory.providers.embeddings import MiniLMEmbedder
from memory.store import CampaignMemory, Memory


def today() -> str:
    """The date of a session started now, as a citation says it beside the session's title."""
    return f"{datetime.now(UTC):%Y-%m-%d}"


LINES = [
    ("DM", "Brom waits at the gates of Ironhold."),
    ("Grog", "I wave at Brom."),
    ("Vex", "What time is it?"),
    ("DM", "The old smith, Brom, nods. Ironhold sleeps."),
    ("Vex", "Let's find Korvash."),  # not known yet
]


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


async def _run(memory: Memory, embedder: MiniLMEmbedder, *, reindex: bool | None = None) -> None:
    ctx = jobs.JobContext(memory=memory, embedder=embedder, embedding_model=MiniLMEmbedder.model_name)
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx, reindex=reindex)
    assert await jobs.failed_jobs(memory.pool) == 0


async def _session(mem: CampaignMemory, title: str) -> int:
    session = await mem.log.start_session(title)
    await mem.log.write_many(
        session.id, [EntryIn(speaker=s, text=t, start_s=5.0 * i) for i, (s, t) in enumerate(LINES)]
    )
    async with mem.transaction() as tx:
        await jobs.enqueue_session_work(tx.db, mem.campaign_id, session.id, len(LINES))
    return session.id


async def _played(mem: CampaignMemory, memory: Memory, embedder: MiniLMEmbedder, said: list[tuple[str, str]]) -> int:
    """A night of ``said`` (speaker, line) played, ended and through the jobs (the index, the recap)."""
    session = await mem.log.start_session("Night 1")
    await mem.log.write_many(session.id, [EntryIn(speaker=s, text=t, start_s=5.0 * i) for i, (s, t) in enumerate(said)])
    await mem.log.end_session(session.id)
    async with mem.transaction() as tx:
        await jobs.enqueue_session_work(tx.db, mem.campaign_id, session.id, len(said))
        await jobs.enqueue_summary(tx.db, mem.campaign_id, session.id)
    await _run(memory, embedder)
    return session.id


async def _lines(mem: CampaignMemory, entity_id: int) -> list[str]:
    """The lines the index holds for an entity, in the order said."""
    return [m.text for m in (await mentions(mem.db, mem.campaign_id, entity_id)).lines][::-1]


async def test_the_chunk_job_indexes_the_lines_naming_each_entity(
    campaign: CampaignMemory, memory: Memory, embedder: MiniLMEmbedder, pool: asyncpg.Pool
) -> None:
    brom = await campaign.graph.add_entity(EntityIn(name="Brom", type=EntityType.npc, aliases=["the old smith"]))
    hold = await campaign.graph.add_entity(EntityIn(name="Ironhold", type=EntityType.place))
    first = await _session(campaign, "Night 1")
    await _run(memory, embedder)

    said = await mentions(campaign.db, campaign.campaign_id, brom.id, limit=2)
    assert said.total == 3 and [(s.title, s.lines) for s in said.sessions] == [("Night 1", 3)]
    # newest first, cut at the limit, each with where it was said
    assert [(m.seq, m.speaker, m.text) for m in said.lines] == [
        (4, "DM", "The old smith, Brom, nods. Ironhold sleeps."),
        (2, "Grog", "I wave at Brom."),
    ]
    assert said.lines[0].session_id == first and said.lines[0].where() == f"Night 1, {today()} at 0:15"
    assert (await mentions(campaign.db, campaign.campaign_id, hold.id)).total == 2

    # Named together in two lines: no "mentioned_with" item waits for the DM.
    types = await pool.fetch("SELECT type FROM relationships WHERE campaign_id = $1", campaign.campaign_id)
    assert "mentioned_with" not in {r["type"] for r in types}

    # Another campaign's entity of the same name sees none of these lines.
    other = memory.campaign((await memory.campaigns().create("Other")).id)
    their_brom = await other.graph.add_entity(EntityIn(name="Brom", type=EntityType.npc))
    assert (await mentions(other.db, other.campaign_id, their_brom.id)).total == 0
    assert (await mentions(other.db, other.campaign_id, brom.id)).total == 0


async def test_a_merge_keeps_the_lines_and_a_later_entity_gets_its_lines_from_the_recaps(
    campaign: CampaignMemory, memory: Memory, embedder: MiniLMEmbedder
) -> None:
    brom = await campaign.graph.add_entity(EntityIn(name="Brom", type=EntityType.npc))
    smith = await campaign.graph.add_entity(EntityIn(name="the old smith", type=EntityType.npc))
    session_id = await _session(campaign, "Night 1")
    await campaign.log.end_session(session_id)
    async with campaign.transaction() as tx:
        await jobs.enqueue_summary(tx.db, campaign.campaign_id, session_id)
    await _run(memory, embedder)
    assert (await mentions(campaign.db, campaign.campaign_id, smith.id)).total == 1

    await campaign.graph.merge_entities("the old smith", "Brom")
    said = await mentions(campaign.db, campaign.campaign_id, brom.id)
    assert said.total == 3  # line 4 names both: one row

    # Korvash is added after the session was chunked and recapped: its lines are found as its took-part links are.
    korvash = await campaign.add_entity(EntityIn(name="Korvash", type=EntityType.npc))
    assert [m.text for m in (await mentions(campaign.db, campaign.campaign_id, korvash.id)).lines] == [
        "Let's find Korvash."
    ]
    assert await link_to_recaps(campaign.graph, [korvash.id]) == 0  # again: nothing new, no duplicate row
    assert (await mentions(campaign.db, campaign.campaign_id, korvash.id)).total == 1


def test_entity_mentions_on_the_cli(lk, tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert lk("campaign", "create", "C").returncode == 0
    assert lk("entity", "add", "Korvash", "npc").returncode == 0
    (tmp_path / "night.txt").write_text("DM: Korvash waits at the gate.\nVex: Hi.\nGrog: I punch Korvash.\n")
    assert lk("ingest", str(tmp_path / "night.txt"), "--session", "Night", "--wait").returncode == 0
    shown = lk("entity", "mentions", "Korvash", "--limit", "1")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == (
        "Korvash: named in 2 lines of 1 session\n"
        f"  Night, {today()} (night.txt:3), Grog: I punch Korvash.\n"
        "  … and 1 more (--limit)\n"
    )
    missing = lk("entity", "mentions", "Nobody")
    assert missing.returncode != 0 and "Nobody" in missing.stderr


def test_entity_mentions_lists_lines_imported_before_the_jobs_ran(lk, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Imported without --wait (no bot running), `entity show` named the last line saying Korvash and `search`
    found both, while `entity mentions` said "no line names it yet"."""
    assert lk("campaign", "create", "C").returncode == 0
    assert lk("entity", "add", "Korvash", "npc").returncode == 0
    (tmp_path / "night.txt").write_text("DM: Korvash slams the door.\nVex: Hi.\nAna: We should ask Korvash.\n")
    assert lk("ingest", str(tmp_path / "night.txt"), "--session", "Night").returncode == 0
    shown = lk("entity", "mentions", "Korvash")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == (
        "Korvash: named in 2 lines of 1 session\n"
        f"  Night, {today()} (night.txt:3), Ana: We should ask Korvash.\n"
        f"  Night, {today()} (night.txt:1), DM: Korvash slams the door.\n"
    )
    assert f"last mentioned in Night, {today()} (night.txt:3) by Ana" in lk("entity", "show", "Korvash").stdout


async def test_where_said_reads_the_index_and_the_lines_it_does_not_hold_yet(
    campaign: CampaignMemory, memory: Memory, embedder: MiniLMEmbedder, pool: asyncpg.Pool
) -> None:
    """An alias or a heard-as phrase corrected to the name counts as a mention; so do lines the chunk job has not read
    yet, and lines naming an entity added after it read them, until the recap job indexes those."""
    brom = await campaign.graph.add_entity(EntityIn(name="Brom", type=EntityType.npc, aliases=["the old smith"]))
    session = await campaign.log.start_session("Night 1")
    heard = Correction(span="brom bee", replacement="Brom", start=8, end=16, entity_id=brom.id, score=0.9)
    await campaign.log.write_many(
        session.id,
        [
            EntryIn(speaker="DM", text="The old smith nods.", start_s=0),
            EntryIn(speaker="Pip", text="Thanks, Brom!", raw_text="Thanks, brom bee!", corrections=[heard], start_s=5),
            EntryIn(speaker="Vex", text="Korvash laughs.", start_s=10),
        ],
    )
    async with campaign.transaction() as tx:
        await jobs.enqueue_session_work(tx.db, campaign.campaign_id, session.id, 3)
    await _run(memory, embedder)

    async def indexed(entity_id: int) -> list[str]:
        rows = await pool.fetch(
            "SELECT se.text FROM entity_mentions m JOIN session_entries se ON se.id = m.entry_id"
            " WHERE m.campaign_id = $1 AND m.entity_id = $2 ORDER BY se.seq",
            campaign.campaign_id,
            entity_id,
        )
        return [r["text"] for r in rows]

    async def said(entity_id: int) -> list[str]:
        return [m.text for m in await latest(campaign.db, campaign.campaign_id, entity_id)]

    assert await indexed(brom.id) == ["The old smith nods.", "Thanks, Brom!"]
    # The alias taken away: the index still says the line named Brom (full text over its names would not).
    brom = await campaign.graph.update_entity("Brom", aliases=[])
    assert await said(brom.id) == ["Thanks, Brom!", "The old smith nods."]  # newest first
    last = await campaign.graph.last_mention(brom)
    assert last is not None and (last.speaker, last.text) == ("Pip", "Thanks, Brom!")

    # A line the chunk job has not read yet is found all the same.
    await campaign.log.write(session.id, EntryIn(speaker="DM", text="Brom returns with Korvash.", start_s=20))
    assert "Brom returns with Korvash." not in await indexed(brom.id)
    assert (await said(brom.id))[0] == "Brom returns with Korvash."

    # Korvash is added once the chunk job has read its lines: found in the live session, then in the index once the
    # recap job has read them; in a recapped session only the lines the chunk job has not read are read in full.
    korvash = await campaign.graph.add_entity(EntityIn(name="Korvash", type=EntityType.npc))
    assert await indexed(korvash.id) == []
    assert await said(korvash.id) == ["Brom returns with Korvash.", "Korvash laughs."]
    await campaign.log.end_session(session.id)
    async with campaign.transaction() as tx:
        await jobs.enqueue_summary(tx.db, campaign.campaign_id, session.id)
    await _run(memory, embedder)
    assert await indexed(korvash.id) == ["Korvash laughs.", "Brom returns with Korvash."]
    assert await said(korvash.id) == ["Brom returns with Korvash.", "Korvash laughs."]
    await pool.execute("DELETE FROM entity_mentions WHERE entity_id = $1", korvash.id)
    assert await said(korvash.id) == ["Brom returns with Korvash."]


async def test_an_accepted_event_is_mentioned_by_the_lines_it_was_told_in(campaign: CampaignMemory) -> None:
    """An event is told ("you make your way into Vasselheim"), never said by its name: accepted, its card and
    `entity mentions` had no line and no session for it, at the command line, in MCP and in the hot context."""
    from memory.models import Provenance, Source

    await campaign.graph.add_entity(EntityIn(name="Vasselheim", type=EntityType.location))
    session = await campaign.log.start_session("Night 4")
    talk = [("TRAVIS", f"Are we there yet? Day {n}.") for n in range(6)]
    told = ("MATT", "The great gates open, and you make your way into Vasselheim, the Dawn City.")
    lines = await campaign.log.write_many(
        session.id, [EntryIn(speaker=s, text=t, start_s=60.0 * i) for i, (s, t) in enumerate([*talk, told])]
    )
    line = lines[-1]
    said = Provenance(source=Source.stated, confidence=0.55, session_id=session.id, entry_ids=[line.id])
    event = await campaign.graph.add_entity(
        EntityIn(name="Arrival at Vasselheim", type=EntityType.event, status="pending", provenance=said)
    )
    assert (await mentions(campaign.db, campaign.campaign_id, event.id)).total == 0  # pending: not canon yet
    await campaign.review.accept(f"e{event.id}")

    said_in = await mentions(campaign.db, campaign.campaign_id, event.id)
    assert said_in.total == 1 and [(m.entry_id, m.where()) for m in said_in.lines] == [
        (line.id, f"Night 4, {today()} at 6:00")
    ]
    _, last = await campaign.graph.identity("Arrival at Vasselheim", include_secret=True)
    assert last is not None and last.text == told[1]

    # the line read again (its text revised) keeps it: the gazetteer never finds the event's name in it
    await index_lines(campaign.db, campaign.campaign_id, session.id, {line.id: []})
    assert [m.entry_id for m in (await mentions(campaign.db, campaign.campaign_id, event.id)).lines] == [line.id]
    # and another entity's rows on a revised line still go
    await index_lines(campaign.db, campaign.campaign_id, session.id, {lines[0].id: [event.id]}, replace=False)
    await index_lines(campaign.db, campaign.campaign_id, session.id, {lines[0].id: []})
    assert (await mentions(campaign.db, campaign.campaign_id, event.id)).total == 1


async def test_an_event_merged_into_another_keeps_the_lines_it_was_told_in(campaign: CampaignMemory) -> None:
    """Two accepted events the DM merges are one told in both lines: the merged one's line, read again (its text
    revised), was dropped from the index, since only ``into``'s own provenance was asked."""
    from memory.mentions import Mentions
    from memory.models import Provenance, Source

    await campaign.graph.add_entity(EntityIn(name="Vasselheim", type=EntityType.location))
    session = await campaign.log.start_session("Night 4")
    lines = await campaign.log.write_many(
        session.id,
        [
            EntryIn(speaker="MATT", text="You make your way into Vasselheim, the Dawn City."),
            EntryIn(speaker="MATT", text="The great gates of Vasselheim open before you."),
        ],
    )
    events = []
    for name, line in zip(["Arrival at Vasselheim", "Entry into Vasselheim"], lines, strict=True):
        said = Provenance(source=Source.stated, confidence=0.55, session_id=session.id, entry_ids=[line.id])
        event = await campaign.graph.add_entity(
            EntityIn(name=name, type=EntityType.event, status="pending", provenance=said)
        )
        await campaign.review.accept(f"e{event.id}")
        events.append(event)
    await campaign.graph.merge_entities(events[1].id, events[0].id)

    def told(m: Mentions) -> list[int]:
        return sorted(x.entry_id for x in m.lines)

    assert told(await mentions(campaign.db, campaign.campaign_id, events[0].id)) == [lines[0].id, lines[1].id]
    await index_lines(campaign.db, campaign.campaign_id, session.id, {lines[1].id: []})
    assert told(await mentions(campaign.db, campaign.campaign_id, events[0].id)) == [lines[0].id, lines[1].id]


async def test_a_person_called_by_first_name_is_mentioned_and_a_pc_played_takes_part(
    campaign: CampaignMemory, memory: Memory, embedder: MiniLMEmbedder, pool: asyncpg.Pool
) -> None:
    """A home table calls characters by their first name ("Quillon", for Quillon Ashgrove), and "Wren" is also an
    English word ("Wren bows."): none of those lines named them, nor did a PC whose player spoke but was never named
    take part. The longest name at a place wins: "the Order of the Pale Lantern" names the order, not the item."""
    graph = campaign.graph
    quillon = await graph.add_entity(EntityIn(name="Quillon Ashgrove", type=EntityType.npc))
    wren = await graph.add_entity(
        EntityIn(name="Wren Halloway", type=EntityType.player, attributes={"played_by": "Priya"})
    )
    kes = await graph.add_entity(
        EntityIn(name="Kestrel Vane", type=EntityType.player, attributes={"played_by": "jules"})
    )
    absent = await graph.add_entity(
        EntityIn(name="Dana Quorn", type=EntityType.player, attributes={"played_by": "Dee"})
    )
    lantern = await graph.add_entity(EntityIn(name="The Pale Lantern", type=EntityType.item))
    order = await graph.add_entity(EntityIn(name="Order of the Pale Lantern", type=EntityType.faction))
    sister = await graph.add_entity(EntityIn(name="Sister Ottilie Brand", type=EntityType.npc))
    said = [
        ("DM", "You meet Quillon at the docks. He hands Wren the Pale Lantern."),
        ("Priya", "Wren bows."),  # an English word at a sentence's start, doing something: the name
        ("Priya", "Wren is a bird, right?"),  # at a sentence's start, nothing done: the word as often as the name
        ("DM", "The Order of the Pale Lantern guards the fen. Sister waits."),  # "Sister" is a title
        ("JULES", "I pick the lock."),
        ("DM", "the wren sings. quillon"),  # no capital: no name
    ]
    session = await _played(campaign, memory, embedder, said)
    assert await _lines(campaign, quillon.id) == [said[0][1]]
    assert await _lines(campaign, wren.id) == [said[0][1], said[1][1]]
    assert await _lines(campaign, sister.id) == []
    assert await _lines(campaign, lantern.id) == [said[0][1]]  # not "the Order of the Pale Lantern"
    assert await _lines(campaign, order.id) == [said[3][1]]
    took_part = {
        r["source_id"]
        for r in await pool.fetch(
            "SELECT source_id FROM relationships WHERE campaign_id = $1 AND type = 'took_part_in'", campaign.campaign_id
        )
    }
    assert {quillon.id, wren.id, kes.id} <= took_part and absent.id not in took_part
    # a summary's Involved list names them as the index does
    summary = (await campaign.log.session(session)).summary or ""
    assert "Quillon Ashgrove" in summary.splitlines()[-1]


async def test_a_person_called_by_last_name_is_mentioned_as_the_lines_write_it(
    campaign: CampaignMemory, memory: Memory, embedder: MiniLMEmbedder
) -> None:
    """A 1920s table calls people by surname ("Mister Whitlock", "Crane"): those lines named nobody, for the index
    or for an entity added after the session was recapped."""
    whitlock = await campaign.graph.add_entity(EntityIn(name="Edgar Whitlock", type=EntityType.npc))
    said = [
        ("DM", "The bookseller smiles. Mister Whitlock, at your service."),
        ("Jess", "I follow Crane to the pier."),  # an English word inside a sentence
        ("DM", "Crane is a bird, and whitlock a finger's sore."),  # at a sentence's start, nothing done; no capital
    ]
    await _played(campaign, memory, embedder, said)
    assert await _lines(campaign, whitlock.id) == [said[0][1]]
    crane = await campaign.add_entity(EntityIn(name="Jeremiah Crane", type=EntityType.npc))  # after the recap
    assert await _lines(campaign, crane.id) == [said[1][1]]


async def test_sessions_indexed_under_older_name_rules_are_indexed_again_by_the_worker(
    campaign: CampaignMemory, memory: Memory, embedder: MiniLMEmbedder, pool: asyncpg.Pool
) -> None:
    """The chunk job indexes a line once, under the name rules of then: after an upgrade that changes who a line
    names, a session read under older rules is read again by the worker, once, and records the rules it was read
    under."""
    brom = await campaign.graph.add_entity(EntityIn(name="Brom", type=EntityType.npc))
    night = await _session(campaign, "Night 1")
    await _run(memory, embedder)

    async def indexed() -> list[str]:
        rows = await pool.fetch(
            "SELECT se.text FROM entity_mentions m JOIN session_entries se ON se.id = m.entry_id"
            " WHERE m.campaign_id = $1 AND m.entity_id = $2 ORDER BY se.seq",
            campaign.campaign_id,
            brom.id,
        )
        return [r["text"] for r in rows]

    said = [LINES[0][1], LINES[1][1], LINES[3][1]]
    assert await indexed() == said
    # as older rules left it: one line naming Brom missed, one naming nobody taken for him
    await pool.execute("DELETE FROM entity_mentions WHERE campaign_id = $1", campaign.campaign_id)
    await index_lines(pool, campaign.campaign_id, night, {(await campaign.log.session_entries(night))[2].id: [brom.id]})
    await pool.execute("UPDATE sessions SET mention_rules = $2 WHERE id = $1", night, MENTION_RULES - 1)
    await _run(memory, embedder)  # a drain (`ingest --wait` into any campaign) leaves that to the worker
    assert await indexed() == [LINES[2][1]]
    await _run(memory, embedder, reindex=True)  # `lorekeeper worker`, the bot's
    assert await indexed() == said
    assert await pool.fetchval("SELECT mention_rules FROM sessions WHERE id = $1", night) == MENTION_RULES
    # read under the rules of now, it is not read again
    assert await enqueue_stale_mentions(pool, MENTION_RULES) == 0


async def test_a_line_revised_while_the_session_is_indexed_again_keeps_the_index_of_its_new_text(
    campaign: CampaignMemory,
    memory: Memory,
    embedder: MiniLMEmbedder,
    pool: asyncpg.Pool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Stage 2 or a heard-as phrase revises a line (and the chunk job indexes its new text) between the re-index
    job's read and its write: the job's mentions of the old text do not replace those of the new. The names are
    looked for off the event loop."""
    brom = await campaign.graph.add_entity(EntityIn(name="Brom", type=EntityType.npc))
    night = await _session(campaign, "Night 1")
    await _run(memory, embedder)
    await pool.execute("UPDATE sessions SET mention_rules = $2 WHERE id = $1", night, MENTION_RULES - 1)
    line = (await campaign.log.session_entries(night))[2]  # "What time is it?"
    threads: set[str] = set()
    gazetteer_of, mentioned_ids = chunk._gazetteer, Gazetteer.mentioned_ids

    async def revised_meanwhile(mem: CampaignMemory) -> Gazetteer[Entity]:
        await campaign.log.revise(line.id, "Brom, what time is it?", [])
        await index_lines(pool, campaign.campaign_id, night, {line.id: [brom.id]})  # as the chunk job does
        return await gazetteer_of(mem)

    def noted(self: Gazetteer[Entity], entry: Entry) -> list[int]:
        threads.add(threading.current_thread().name)
        return mentioned_ids(self, entry)

    monkeypatch.setattr(chunk, "_gazetteer", revised_meanwhile)
    monkeypatch.setattr(Gazetteer, "mentioned_ids", noted)
    ctx = jobs.JobContext(memory=memory, embedder=embedder, embedding_model=MiniLMEmbedder.model_name)
    assert await chunk.reindex_mentions(ctx, campaign.campaign_id, night) == len(LINES)
    said = await pool.fetch(
        "SELECT entry_id FROM entity_mentions WHERE campaign_id = $1 AND entity_id = $2", campaign.campaign_id, brom.id
    )
    assert line.id in {r["entry_id"] for r in said}
    assert await pool.fetchval("SELECT mention_rules FROM sessions WHERE id = $1", night) == MENTION_RULES
    assert threading.main_thread().name not in threads


async def test_the_lines_the_index_does_not_hold_yet_are_matched_against_one_query(
    campaign: CampaignMemory, pool: asyncpg.Pool
) -> None:
    """A live session's lines naming an entity are found by full text: the query of its names is built once (a
    subquery, its own InitPlan), not again for each line the index matched (120 ms for a busy character)."""
    brom = await campaign.graph.add_entity(EntityIn(name="Brom", type=EntityType.npc, aliases=["the old smith"]))
    session = await campaign.log.start_session("Night 1")
    await campaign.log.write_many(
        session.id, [EntryIn(speaker="DM", text=f"Brom nods, {n} times.", start_s=n) for n in range(300)]
    )
    await pool.execute("ANALYZE session_entries")
    sql = said_lines("$2::bigint", "12")
    assert len(await pool.fetch(sql, campaign.campaign_id, brom.id)) == 12
    plan = "\n".join(r[0] for r in await pool.fetch("EXPLAIN " + sql, campaign.campaign_id, brom.id))
    matched = [line for line in plan.splitlines() if "tsv @@" in line]
    assert matched and all("websearch_to_tsquery" not in line for line in matched), plan
