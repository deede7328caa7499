"""A heard-as phrase taken away undoes what it did ("card" taught for The Stormlord by mistake): the stored lines it
was corrected in get their phrase back, as stage 1 alone would have left them, by a background job, on the real
embedded PostgreSQL."""

from __future__ import annotations

import pytest

from campaigns.files import parse_campaign_file
from campaigns.load import apply_campaign_file
from memory import jobs
from memory.correction.edits import apply_corrections, merge_corrections
from memory.jobs import heard_as
from memory.models import Correction, EntityIn, EntityType, Entry
from memory.providers.embeddings import MiniLMEmbedder
from memory.recorder import CorrectionIndexCache, SessionRecorder, Utterance
from memory.replies import heard_as_removed_said
from memory.store import CampaignMemory, Memory

LINES = [
    "And from skin jumps on the table.",
    "Keyleth's owl and from skin's tail.",
    "Key lith waves at from skin.",
    "From skin sees the pick by the door.",
    "We come from. Skin the rabbit.",
]


async def _stored(mem: CampaignMemory, title: str = "Night 1") -> list[Entry]:
    return await mem.log.session_entries((await mem.log.session_by_title(title)).id)


async def _chunks(mem: CampaignMemory) -> list[str]:
    rows = await mem.db.fetch("SELECT text FROM chunks WHERE campaign_id = $1 ORDER BY id", mem.campaign_id)
    return [r["text"] for r in rows]


async def _two_nights(memory: Memory, camp: CampaignMemory) -> jobs.JobContext:
    """Keyleth, and two nights Liam spoke in, their jobs run: Night 1 says only "from skin", Night 2 Frumpkin too."""
    await camp.graph.add_entity(EntityIn(name="Keyleth", type=EntityType.player))
    nights = [("Night 1", "And from skin jumps on Keyleth's table."), ("Night 2", "Frumpkin purrs; from skin naps.")]
    for title, said in nights:
        rec = await SessionRecorder.start(camp, title, index_cache=CorrectionIndexCache())
        await rec.add(Utterance(speaker="Liam", text=said))
        await rec.end()
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model="all-MiniLM-L6-v2")
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    return ctx


async def _took_part(camp: CampaignMemory, name: str) -> list[str]:
    entity = await camp.graph.get_entity(name)
    facts = await camp.graph.relationships_of(entity.id, include_secret=True)
    return sorted(r.target_name for r in facts if r.type == "took_part_in")


async def test_a_phrase_cleared_restores_the_lines_it_corrected_to_what_stage_1_alone_gives(memory: Memory) -> None:
    camp = memory.campaign((await memory.campaigns().create("Ours")).id)
    await camp.graph.add_entity(EntityIn(name="Frumpkin", type=EntityType.npc))
    await camp.graph.add_entity(EntityIn(name="Keyleth", type=EntityType.player))
    pike = await camp.graph.add_entity(EntityIn(name="Pike", type=EntityType.player))
    rec = await SessionRecorder.start(camp, "Night 1", index_cache=CorrectionIndexCache())
    await rec.add_many([Utterance(speaker="Liam", text=t) for t in LINES])
    await rec.end()
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model="all-MiniLM-L6-v2")
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    stage1 = await _stored(camp)
    assert stage1[2].text == "Keyleth waves at from skin."  # corrected by sound when it was said

    await camp.graph.update_entity("Frumpkin", heard_as=["from skin"])
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    taught = await _stored(camp)
    assert [e.text for e in taught][:4] == [
        "And Frumpkin jumps on the table.",
        "Keyleth's owl and Frumpkin's tail.",
        "Keyleth waves at Frumpkin.",
        "Frumpkin sees the pick by the door.",
    ]
    # stage 2 then heard "pick" as Pike in a line the phrase was corrected in: that correction is not the phrase's
    line = taught[3]
    at = line.raw_text.index("pick")
    by_llm = Correction(span="pick", replacement="Pike", start=at, end=at + 4, entity_id=pike.id, score=0.9, stage=2)
    async with camp.transaction() as tx:
        merged = merge_corrections(line.corrections, [by_llm])
        await tx.log.revise(line.id, apply_corrections(line.raw_text, merged), merged)
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    assert any("Frumpkin jumps" in c for c in await _chunks(camp))

    before = await camp.graph.get_entity("Frumpkin")
    restored = await camp.log.count_corrected(before.id, ["from skin"], [before.name])
    after = await camp.graph.update_entity("Frumpkin", heard_as=[])
    assert restored == 4
    assert heard_as_removed_said(before, after, restored) == (
        "“from skin” is no longer written Frumpkin; it is restored in 4 lines already stored, in the background."
    )
    queued = await memory.pool.fetch("SELECT entrypoint FROM pgqueuer WHERE status = 'queued'")
    assert [r["entrypoint"] for r in queued] == [jobs.UNHEARD]  # one per session, in the edit's transaction
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    assert await jobs.failed_jobs(memory.pool) == 0
    now = await _stored(camp)
    # each line as stage 1 alone left it, but for stage 2's Pike, which stays
    assert [(e.text, e.corrections) for e in now[:3]] == [(e.text, e.corrections) for e in stage1[:3]]
    assert now[3].corrections == merge_corrections(stage1[3].corrections, [by_llm])
    assert now[3].text == "From skin sees the Pike by the door."
    assert [e.raw_text for e in now] == LINES
    # the passages were embedded again from the restored text
    chunks = await _chunks(camp)
    assert chunks and not any("Frumpkin" in c for c in chunks)
    assert any("from skin jumps" in c for c in chunks)
    # done once: running it again changes nothing, and no line is left to count
    session = await camp.log.session_by_title("Night 1")
    assert await jobs.restore_heard_as_lines(camp, session.id, before.id, ["from skin"]) == 0
    assert [(e.text, e.corrections) for e in await _stored(camp)] == [(e.text, e.corrections) for e in now]
    assert await camp.log.count_corrected(before.id, ["from skin"], [before.name]) == 0


async def test_a_span_stage_1_corrects_by_sound_stays_corrected(memory: Memory) -> None:
    """ "key lith" taught for Keyleth, which stage 1 hears by sound anyway: cleared, the line stays Keyleth, its
    correction as stage 1 made it."""
    camp = memory.campaign((await memory.campaigns().create("Ours")).id)
    await camp.graph.add_entity(EntityIn(name="Keyleth", type=EntityType.player))
    rec = await SessionRecorder.start(camp, "Night 1", index_cache=CorrectionIndexCache())
    await rec.add(Utterance(speaker="Liam", text="Key lith waves."))
    await rec.end()
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model="all-MiniLM-L6-v2")
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    [stage1] = await _stored(camp)
    await camp.graph.update_entity("Keyleth", heard_as=["key lith"])
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    [taught] = await _stored(camp)
    assert taught.corrections != stage1.corrections  # the DM's word took the span (score 1)
    await camp.graph.update_entity("Keyleth", heard_as=[])
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    [now] = await _stored(camp)
    assert (now.text, now.corrections) == ("Keyleth waves.", stage1.corrections)


@pytest.mark.parametrize("drained_between", [True, False], ids=["restored-first", "both-queued"])
async def test_a_phrase_moved_to_another_entity_ends_written_as_that_one(memory: Memory, drained_between: bool) -> None:
    """ "card" taught for The Stormlord by mistake, then for Cardinal Vex: the lines say Cardinal Vex, whether the
    lines were restored before the second edit or both jobs wait together."""
    camp = memory.campaign((await memory.campaigns().create("Ours")).id)
    await camp.graph.add_entity(EntityIn(name="The Stormlord", type=EntityType.npc, heard_as=["card"]))
    vex = await camp.graph.add_entity(EntityIn(name="Cardinal Vex", type=EntityType.npc))
    rec = await SessionRecorder.start(camp, "Night 1", index_cache=CorrectionIndexCache())
    await rec.add_many([Utterance(speaker="DM", text=t) for t in ["The card speaks.", "Nothing here."]])
    await rec.end()
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model="all-MiniLM-L6-v2")
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    assert (await _stored(camp))[0].text == "The The Stormlord speaks."
    await camp.graph.update_entity("The Stormlord", heard_as=[])
    if drained_between:
        await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
        assert [(e.text, e.corrections) for e in await _stored(camp)] == [
            ("The card speaks.", []),
            ("Nothing here.", []),
        ]
    await camp.graph.update_entity("Cardinal Vex", heard_as=["card"])
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    assert await jobs.failed_jobs(memory.pool) == 0
    [line, _] = await _stored(camp)
    assert line.text == "The Cardinal Vex speaks."
    assert [(c.span, c.entity_id) for c in line.corrections] == [("card", vex.id)]


async def test_a_campaign_file_taking_a_phrase_away_restores_its_lines(memory: Memory) -> None:
    """A load is the DM's word as `/entity edit` is: a file whose entity no longer lists "card" undoes it; one that
    leaves `heard_as` out keeps the phrases the entity has."""
    camp = memory.campaign((await memory.campaigns().create("Ours")).id)
    taught = "entities:\n  - {name: The Stormlord, type: npc, heard_as: [card, storm lored]}\n"
    await apply_campaign_file(camp, parse_campaign_file(taught, "taught.yaml"))
    rec = await SessionRecorder.start(camp, "Night 1", index_cache=CorrectionIndexCache())
    await rec.add_many([Utterance(speaker="DM", text=t) for t in ["The card speaks.", "storm lored rises."]])
    await rec.end()
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model="all-MiniLM-L6-v2")
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    assert [e.text for e in await _stored(camp)] == ["The The Stormlord speaks.", "The Stormlord rises."]
    left_out = "entities:\n  - {name: The Stormlord, type: npc}\n"
    await apply_campaign_file(camp, parse_campaign_file(left_out, "left_out.yaml"))
    assert not await memory.pool.fetchval("SELECT count(*) FROM pgqueuer WHERE entrypoint = $1", jobs.UNHEARD)
    fixed = taught.replace("[card, storm lored]", "[storm lored]")
    report = await apply_campaign_file(camp, parse_campaign_file(fixed, "fixed.yaml"))
    assert [c.change for c in report.changes] == ["heard as removed: card"]
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    assert await jobs.failed_jobs(memory.pool) == 0
    assert [e.text for e in await _stored(camp)] == ["The card speaks.", "The Stormlord rises."]


async def test_a_phrase_taken_away_takes_away_the_sessions_only_it_made_the_entity_take_part_in(memory: Memory) -> None:
    """Taught "from skin", Frumpkin took part in Night 1, which said only the phrase; taken away, the lines say the
    phrase again and Night 1 no longer names Frumpkin: the link goes. Night 2 names Frumpkin itself: it stays."""
    camp = memory.campaign((await memory.campaigns().create("Ours")).id)
    await camp.graph.add_entity(EntityIn(name="Frumpkin", type=EntityType.npc))
    ctx = await _two_nights(memory, camp)

    await camp.graph.update_entity("Frumpkin", heard_as=["from skin"])
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    assert await _took_part(camp, "Frumpkin") == ["Session: Night 1", "Session: Night 2"]
    await camp.graph.update_entity("Frumpkin", heard_as=[])
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    assert await jobs.failed_jobs(memory.pool) == 0
    assert [e.text for e in await _stored(camp)] == ["And from skin jumps on Keyleth's table."]
    assert await _took_part(camp, "Frumpkin") == ["Session: Night 2"]
    assert await _took_part(camp, "Keyleth") == ["Session: Night 1"]


async def test_a_restoration_cut_off_before_the_link_goes_takes_it_away_when_tried_again(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The connection is lost after the restoration job put Night 1's lines back and before it took away the
    took-part link only the phrase made: the job's retry must not find the lines done and leave the link, nor lose
    the lines' restored text or their passages embedded again."""
    camp = memory.campaign((await memory.campaigns().create("Ours")).id)
    await camp.graph.add_entity(EntityIn(name="Frumpkin", type=EntityType.npc, heard_as=["from skin"]))
    ctx = await _two_nights(memory, camp)
    night1 = await camp.log.session_by_title("Night 1")

    assert await _took_part(camp, "Frumpkin") == ["Session: Night 1", "Session: Night 2"]
    assert any("Frumpkin jumps" in c for c in await _chunks(camp))
    unlink = heard_as.unlink_unnamed
    cut_off: list[int] = []

    async def connection_lost_once(graph: object, entity_id: int, session_id: int) -> int:
        if session_id == night1.id and not cut_off:
            cut_off.append(session_id)
            raise ConnectionResetError("connection lost")  # an outage: the worker tries the job again
        return await unlink(graph, entity_id, session_id)  # type: ignore[arg-type]

    monkeypatch.setattr(heard_as, "unlink_unnamed", connection_lost_once)
    await camp.graph.update_entity("Frumpkin", heard_as=[])
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    assert cut_off == [night1.id] and await jobs.failed_jobs(memory.pool) == 0
    assert [e.text for e in await _stored(camp)] == ["And from skin jumps on Keyleth's table."]
    assert [e.text for e in await _stored(camp, "Night 2")] == ["Frumpkin purrs; from skin naps."]
    assert await _took_part(camp, "Frumpkin") == ["Session: Night 2"]  # no link left that only the phrase made
    assert await _took_part(camp, "Keyleth") == ["Session: Night 1"]
    chunks = await _chunks(camp)
    assert not any("Frumpkin jumps" in c for c in chunks) and any("from skin jumps" in c for c in chunks)


async def test_a_phrase_taken_away_while_the_heard_as_job_runs_is_not_written_after(memory: Memory) -> None:
    """The heard-as job corrects a session slice by slice. The DM takes the phrase away while it waits for a line
    (a merge moving its corrections holds it): the job must not then correct the rest by the phrase it read when it
    started (had the restoration job listed the lines before, nothing would put them back)."""
    import asyncio

    camp = memory.campaign((await memory.campaigns().create("Ours")).id)
    frumpkin = await camp.graph.add_entity(EntityIn(name="Frumpkin", type=EntityType.npc))
    rec = await SessionRecorder.start(camp, "Night 1", index_cache=CorrectionIndexCache())
    await rec.add_many([Utterance(speaker="Liam", text=t) for t in ["From skin hops.", "From skin naps."]])
    await rec.end()
    session = await camp.log.session_by_title("Night 1")
    first, second = await camp.log.session_entries(session.id)
    await camp.db.execute("INSERT INTO entity_heard_as (campaign_id, entity_id, phrase) VALUES ($1, $2, 'from skin')",
                          camp.campaign_id, frumpkin.id)  # fmt: skip  # taught without its job: run below
    async with memory.pool.acquire() as holder:
        held = holder.transaction()
        await held.start()
        await holder.execute("SELECT 1 FROM session_entries WHERE id = $1 FOR UPDATE", second.id)
        job = asyncio.create_task(jobs.correct_heard_as_lines(camp, session.id, slice_size=1))
        for _ in range(200):  # the first line corrected, the job waits for the second
            if (await camp.log.entries([first.id]))[0].text == "Frumpkin hops.":
                break
            await asyncio.sleep(0.05)
        await camp.graph.update_entity("Frumpkin", heard_as=[])
        await held.rollback()
    assert await job == 1  # the first line only
    assert await jobs.restore_heard_as_lines(camp, session.id, frumpkin.id, ["from skin"]) == 1
    assert [e.text for e in await camp.log.session_entries(session.id)] == ["From skin hops.", "From skin naps."]


async def test_the_restoration_waits_for_a_correction_of_the_phrase_being_written(memory: Memory) -> None:
    """A writer (the heard-as job, stage 2) read the phrase before the DM took it away and is writing it into a line
    when the restoration job lists the lines to undo: the job waits for it, and restores that line too."""
    import asyncio

    camp = memory.campaign((await memory.campaigns().create("Ours")).id)
    frumpkin = await camp.graph.add_entity(EntityIn(name="Frumpkin", type=EntityType.npc, heard_as=["from skin"]))
    rec = await SessionRecorder.start(camp, "Night 1", index_cache=CorrectionIndexCache())
    await rec.add(Utterance(speaker="Liam", text="From skin hops."))
    await rec.end()
    session = await camp.log.session_by_title("Night 1")
    [line] = await camp.log.session_entries(session.id)
    raw = line.raw_text
    corrected = line.corrections
    assert line.text == "Frumpkin hops."
    async with camp.transaction() as tx:  # as stored before the phrase was taught: the heard-as job writes it
        await tx.log.revise(line.id, raw, [])
    async with camp.transaction() as writer:
        [now] = await writer.log.entries([line.id], for_update=True)
        await writer.log.revise(now.id, apply_corrections(raw, corrected), corrected)
        await camp.graph.update_entity("Frumpkin", heard_as=[])  # the DM, meanwhile
        restoring = asyncio.create_task(jobs.restore_heard_as_lines(camp, session.id, frumpkin.id, ["from skin"]))
        await asyncio.sleep(0.5)
    assert await restoring == 1
    assert [e.text for e in await camp.log.session_entries(session.id)] == ["From skin hops."]
