"""Correction stage 2 as a background job: the doubtful spans stage 1 recorded go to the LLM (real `openai`
client, fake server); verified fixes revise L1's text, the raw text stays, and changed windows are re-embedded."""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest

from memory import jobs
from memory.jobs import queue, stage2
from memory.models import Correction, EntityIn, EntityType, Entry
from memory.providers.embeddings import MiniLMEmbedder
from memory.providers.llm import LLMUnavailable, OpenAILLM
from memory.recorder import SessionRecorder, Utterance, Word
from memory.store import CampaignMemory, Memory
from tests.fakes.openai_server import ChatReply, FakeHTTPError, FakeOpenAI

TEXT = "We met Kwellow at the cistern."  # Quelloth misheard: a sound from it, not near enough for stage 1


def utterance(seq: int) -> Utterance:
    confidences = {"We": 0.95, "met": 0.9, "Kwellow": 0.2, "at": 0.97, "the": 0.98, "cistern.": 0.9}
    return Utterance(
        speaker="DM", text=TEXT, seq=seq, words=[Word(word=w, confidence=c) for w, c in confidences.items()]
    )


async def test_stage2_job_revises_text_from_the_recorded_suspects(
    memory: Memory, campaign: CampaignMemory, fake_openai: FakeOpenAI
) -> None:
    quelloth = await campaign.graph.add_entity(EntityIn(name="Quelloth", type=EntityType.npc))
    rec = await SessionRecorder.start(campaign, "S1", stage2=True)
    await rec.add_many([utterance(1), utterance(2)])
    await rec.flush()
    first, second = await campaign.log.session_entries(rec.session.id)
    assert first.text == TEXT and first.suspects == [(7, 14)]  # "Kwellow": low confidence, stage 1 unsure

    corrections_asked: list[dict] = []

    def answer(request: dict) -> str:
        if request["response_format"]["json_schema"]["name"] != "LLMCorrection":
            return json.dumps({"entities": [], "facts": []})  # the extraction job asks too: nothing found
        corrections_asked.append(request)
        if len(corrections_asked) == 1:
            return json.dumps(
                {
                    "text": "We met Quelloth at the cistern.",
                    "substitutions": [{"heard": "Kwellow", "entity": "Quelloth"}],
                }
            )
        # the second line: rewrites other words and declares a non-entity; all of it must be dropped
        return json.dumps(
            {"text": "You met Kwellows in a tavern.", "substitutions": [{"heard": "Kwellow", "entity": "Kwellows"}]}
        )

    fake_openai.chat_handler = answer
    llm = OpenAILLM(fake_openai.base_url, fake_openai.api_key, "fake-model", max_retries=0)
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model="all-MiniLM-L6-v2", llm=llm)
    try:
        await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    finally:
        await llm.aclose()
    assert await jobs.failed_jobs(memory.pool) == 0

    first, second = await campaign.log.session_entries(rec.session.id)
    assert first.raw_text == TEXT and first.text == "We met Quelloth at the cistern."
    [c] = first.corrections
    assert (c.span, c.replacement, c.entity_id, c.stage, c.start, c.end) == (
        "Kwellow",
        "Quelloth",
        quelloth.id,
        2,
        7,
        14,
    )
    assert second.text == TEXT and second.corrections == []  # nothing verified: unchanged
    # the revised line is searchable and its window was re-embedded with the new text
    assert [h.id for h in await campaign.log.search("Quelloth")] == [first.id]
    chunks = await campaign.semantic.session_chunks(rec.session.id)
    assert chunks and "Quelloth" in chunks[0].text
    assert len(corrections_asked) == 2  # each doubtful line asked once; a re-run asks nothing more
    await jobs.enqueue_session_work(memory.pool, campaign.campaign_id, rec.session.id, 2, stage2=True)
    llm2 = OpenAILLM(fake_openai.base_url, fake_openai.api_key, "fake-model", max_retries=0)
    try:
        await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx.__class__(**{**ctx.__dict__, "llm": llm2}))
    finally:
        await llm2.aclose()
    assert len(corrections_asked) == 2


async def test_a_line_revised_after_later_lines_were_chunked_is_embedded_again(
    memory: Memory, campaign: CampaignMemory, fake_openai: FakeOpenAI
) -> None:
    """Chunk jobs window only what new lines can change: a revision far back must tell them to look again."""
    await campaign.graph.add_entity(EntityIn(name="Quelloth", type=EntityType.npc))
    rec = await SessionRecorder.start(campaign, "S1", stage2=True)
    later = [Utterance(speaker="Ana", text=f"I count the coins, {n} of them.", seq=n) for n in range(2, 30)]
    await rec.add_many([utterance(1), *later])
    await rec.flush()
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model="all-MiniLM-L6-v2")
    await jobs.chunk_session(ctx, campaign.campaign_id, rec.session.id)  # before stage 2 got to the lines
    fake_openai.chat_handler = lambda request: json.dumps(
        {"text": "We met Quelloth at the cistern.", "substitutions": [{"heard": "Kwellow", "entity": "Quelloth"}]}
    )
    llm = OpenAILLM(fake_openai.base_url, fake_openai.api_key, "fake-model", max_retries=0)
    try:
        await jobs.correct_stage2(dataclasses.replace(ctx, llm=llm), campaign.campaign_id, rec.session.id)
    finally:
        await llm.aclose()
    await jobs.chunk_session(ctx, campaign.campaign_id, rec.session.id)
    first = (await campaign.semantic.session_chunks(rec.session.id))[0]
    assert first.text.startswith("DM: We met Quelloth at the cistern.\n"), first.text


async def test_lines_waiting_for_stage2_are_extracted_by_a_worker_without_an_llm(
    memory: Memory, campaign: CampaignMemory
) -> None:
    await campaign.graph.add_entity(EntityIn(name="Quelloth", type=EntityType.npc))
    await campaign.graph.add_entity(EntityIn(name="Saltmere", type=EntityType.place))
    rec = await SessionRecorder.start(campaign, "S1", stage2=True)
    line = "Quelloth lives in Saltmere, said Bob."
    words = [Word(word=w, confidence=0.2 if w == "Bob." else 0.95) for w in line.split()]
    await rec.add(Utterance(speaker="DM", text=line, seq=1, words=words))
    await rec.flush()
    [entry] = await campaign.log.session_entries(rec.session.id)
    assert entry.suspects  # waits for stage 2
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model="all-MiniLM-L6-v2", llm=None)
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    assert await jobs.failed_jobs(memory.pool) == 0
    # the line was extracted (from its stage-1 text): the rule extractor's fact waits for the DM
    assert "Quelloth lives in Saltmere" in [i.describe() for i in await campaign.review.pending()]


async def test_an_llm_outage_leaves_the_lines_for_a_later_run(
    memory: Memory, campaign: CampaignMemory, fake_openai: FakeOpenAI
) -> None:
    """No answer at all (HTTP 503, the endpoint down): stage 2 and extraction fail their job, which is retried,
    instead of marking the lines done without them."""
    brom = await campaign.graph.add_entity(EntityIn(name="Quelloth", type=EntityType.npc))
    rec = await SessionRecorder.start(campaign, "S1", stage2=True)
    await rec.add(utterance(1))
    await rec.flush()
    session_id = rec.session.id
    fake_openai.chat_handler = lambda request: FakeHTTPError(503, "overloaded")
    llm = OpenAILLM(fake_openai.base_url, fake_openai.api_key, "fake-model", max_retries=0)
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model="all-MiniLM-L6-v2", llm=llm)
    try:
        with pytest.raises(LLMUnavailable):
            await jobs.correct_stage2(ctx, campaign.campaign_id, session_id)
        assert await queue.progress(memory.pool, campaign, session_id, jobs.CORRECT2) == 0

        # back: stage 2 corrects the line; extraction then fails on the next outage and keeps its place
        def back(request: dict) -> str:
            assert request["response_format"]["json_schema"]["name"] == "LLMCorrection"
            return json.dumps(
                {
                    "text": "We met Quelloth at the cistern.",
                    "substitutions": [{"heard": "Kwellow", "entity": "Quelloth"}],
                }
            )

        fake_openai.chat_handler = back
        await jobs.correct_stage2(ctx, campaign.campaign_id, session_id)
        fake_openai.chat_handler = lambda request: FakeHTTPError(503, "overloaded")
        with pytest.raises(LLMUnavailable):
            await jobs.extract_session(ctx, campaign.campaign_id, session_id)
        assert await queue.progress(memory.pool, campaign, session_id, jobs.EXTRACT) == 0

        # back again: the line's fact is filed
        fact = {"source": "Quelloth", "type": "location", "target": None, "value": "the cistern",
                "confidence": 0.9, "basis": "stated", "entry_ids": []}  # fmt: skip
        fake_openai.chat_handler = lambda request: json.dumps({"entities": [], "facts": [fact]})
        await jobs.extract_session(ctx, campaign.campaign_id, session_id)
    finally:
        await llm.aclose()
    assert await queue.progress(memory.pool, campaign, session_id, jobs.EXTRACT) == 1
    assert [(r.type, r.value) for r in await campaign.graph.relationships_of(brom.id)] == [("location", "the cistern")]


async def test_a_stage2_run_retried_after_its_progress_still_hands_the_lines_on(
    memory: Memory, campaign: CampaignMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Progress committed, then the connection lost before the follow-up jobs were queued: the retry finds the
    lines done and must still queue their extraction."""
    await campaign.graph.add_entity(EntityIn(name="Quelloth", type=EntityType.npc))
    rec = await SessionRecorder.start(campaign, "S1", stage2=True)
    await rec.add(utterance(1))
    await rec.flush()
    session_id = rec.session.id
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model="all-MiniLM-L6-v2", llm=None)
    await memory.pool.execute("DELETE FROM pgqueuer")  # the batch's own jobs ran: extraction stopped at line 1
    real = jobs.enqueue_session_work

    async def lost(*args: object, **kwargs: object) -> None:
        raise ConnectionResetError("connection lost")

    monkeypatch.setattr(stage2, "enqueue_session_work", lost)
    with pytest.raises(ConnectionResetError):
        await jobs.correct_stage2(ctx, campaign.campaign_id, session_id)
    monkeypatch.setattr(stage2, "enqueue_session_work", real)
    await jobs.correct_stage2(ctx, campaign.campaign_id, session_id)  # the queue's retry
    queued = await memory.pool.fetch("SELECT entrypoint FROM pgqueuer WHERE status = 'queued'")
    assert sorted(r["entrypoint"] for r in queued) == sorted([jobs.CHUNK, jobs.EXTRACT])
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    assert await queue.progress(memory.pool, campaign, session_id, jobs.EXTRACT) == 1
    assert await jobs.failed_jobs(memory.pool) == 0


async def test_the_recap_waits_for_the_sessions_other_jobs(
    memory: Memory, campaign: CampaignMemory, fake_openai: FakeOpenAI
) -> None:
    quelloth = await campaign.graph.add_entity(EntityIn(name="Quelloth", type=EntityType.npc))
    rec = await SessionRecorder.start(campaign, "S1", stage2=True)
    await rec.add(utterance(1))
    await rec.end()  # its summary is queued with its chunk, extract and stage-2 jobs

    def answer(request: dict) -> ChatReply | FakeHTTPError | str:
        kind = request["response_format"]["json_schema"]["name"]
        if kind == "LLMCorrection":  # a slow answer: the summary must not run meanwhile
            fixed = {
                "text": "We met Quelloth at the cistern.",
                "substitutions": [{"heard": "Kwellow", "entity": "Quelloth"}],
            }
            return ChatReply(content=json.dumps(fixed), delay=1.5)
        if kind == "Recap":
            return FakeHTTPError(400, "no recap today")  # the extractive one, with its "Involved:" line
        return json.dumps({"entities": [], "facts": []})

    fake_openai.chat_handler = answer
    llm = OpenAILLM(fake_openai.base_url, fake_openai.api_key, "fake-model", max_retries=0)
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model="all-MiniLM-L6-v2", llm=llm)
    try:
        await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    finally:
        await llm.aclose()
    assert await jobs.failed_jobs(memory.pool) == 0
    session = await campaign.log.session(rec.session.id)
    assert session.summary is not None and "Involved: Quelloth" in session.summary.splitlines()
    event = await campaign.graph.find_entity("Session: S1")
    assert event is not None
    links = await memory.pool.fetch(
        "SELECT source_id FROM relationships WHERE type = 'took_part_in' AND target_id = $1", event.id
    )
    assert [r["source_id"] for r in links] == [quelloth.id]


class _HeldEmbedder(MiniLMEmbedder):
    """Embeds only when released: a chunk job caught in the middle of its work."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()

    async def embed(self, texts: list[str]) -> list[list[float]]:
        await self.release.wait()
        return await super().embed(texts)


async def test_a_session_ended_again_while_its_recap_waits_gets_one_recap(
    memory: Memory, campaign: CampaignMemory, fake_openai: FakeOpenAI
) -> None:
    """Ended again with the same lines while its summary job is put off (a chunk job still embedding), and once
    more after the recap is written: one summary job waits, and the model writes one recap, which stays."""
    rec = await SessionRecorder.start(campaign, "S1")
    await rec.add(Utterance(speaker="DM", text="Quelloth waits for you at the old cistern tonight.", seq=1))
    await rec.end()
    recaps: list[dict] = []

    def answer(request: dict) -> str:
        if request["response_format"]["json_schema"]["name"] != "Recap":
            return json.dumps({"entities": [], "facts": []})
        recaps.append(request)
        return json.dumps({"recap": f"Quelloth waits at the cistern, recap {len(recaps)}."})

    fake_openai.chat_handler = answer
    embedder = _HeldEmbedder()
    llm = OpenAILLM(fake_openai.base_url, fake_openai.api_key, "fake-model", max_retries=0)
    ctx = jobs.JobContext(memory=memory, embedder=embedder, embedding_model="all-MiniLM-L6-v2", llm=llm)

    async def put_off() -> bool:  # one summary job is left, waiting
        statuses = await memory.pool.fetch("SELECT status, payload FROM pgqueuer WHERE entrypoint = $1", jobs.SUMMARY)
        return [(r["status"], b"waiting_since" in r["payload"]) for r in statuses] == [("queued", True)]

    async def until_put_off(what: str) -> None:
        deadline = asyncio.get_running_loop().time() + 30
        while not await put_off():
            assert asyncio.get_running_loop().time() < deadline, what
            await asyncio.sleep(0.05)

    try:
        worker = asyncio.create_task(jobs.run_workers(memory.pool, None, drain=True, ctx=ctx))
        try:
            await until_put_off("the summary job was never put off")
            await (await SessionRecorder.start(campaign, "S1")).end()  # the DM resumes it and stops at once
            await until_put_off("the two summary jobs of the session go on waiting side by side")
        finally:
            embedder.release.set()  # a failed wait must not leave the drain held for ever
            await asyncio.wait([worker])
        worker.result()
        await (await SessionRecorder.start(campaign, "S1")).end()
        await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    finally:
        await llm.aclose()
    assert await jobs.failed_jobs(memory.pool) == 0
    assert len(recaps) == 1
    assert (await campaign.log.session(rec.session.id)).summary == "Quelloth waits at the cistern, recap 1."


async def test_a_recap_the_database_cannot_keep_falls_back_to_the_extractive_one(
    memory: Memory, campaign: CampaignMemory, fake_openai: FakeOpenAI
) -> None:
    """A lone surrogate in the model's recap would fail the summary job at every try."""
    await campaign.graph.add_entity(EntityIn(name="Quelloth", type=EntityType.npc))
    rec = await SessionRecorder.start(campaign, "S1")
    await rec.add(Utterance(speaker="DM", text="Quelloth waits for you at the old cistern tonight.", seq=1))
    await rec.flush()
    fake_openai.chat_handler = lambda request: '{"recap": "Quelloth \\ud800 waits."}'
    llm = OpenAILLM(fake_openai.base_url, fake_openai.api_key, "fake-model", max_retries=0)
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model="all-MiniLM-L6-v2", llm=llm)
    try:
        summary = await jobs.summarize_session(ctx, campaign.campaign_id, rec.session.id)
    finally:
        await llm.aclose()
    assert summary == "DM: Quelloth waits for you at the old cistern tonight.\nInvolved: Quelloth"
    assert (await campaign.log.session(rec.session.id)).summary == summary


async def test_a_recap_cut_off_at_its_cap_falls_back_to_the_extractive_one(
    memory: Memory, campaign: CampaignMemory, fake_openai: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    await campaign.graph.add_entity(EntityIn(name="Quelloth", type=EntityType.npc))
    rec = await SessionRecorder.start(campaign, "S1")
    await rec.add(Utterance(speaker="DM", text="Quelloth waits for you at the old cistern tonight.", seq=1))
    await rec.flush()
    fake_openai.queue_chat(ChatReply(content='{"recap": "Quelloth waits, and waits, and', finish_reason="length"))
    llm = OpenAILLM(fake_openai.base_url, fake_openai.api_key, "fake-model", max_retries=0)
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model="all-MiniLM-L6-v2", llm=llm)
    try:
        summary = await jobs.summarize_session(ctx, campaign.campaign_id, rec.session.id)
    finally:
        await llm.aclose()
    assert summary == "DM: Quelloth waits for you at the old cistern tonight.\nInvolved: Quelloth"
    [request] = fake_openai.chat_requests
    assert request["max_tokens"] == jobs.RECAP_MAX_TOKENS
    assert "LLM recap failed (LLM answer was cut off at its cap of 800 tokens" in caplog.text


HEARD_TEXT = "We met Kwellow at the cistern with from skin."


async def _line_with_both(campaign: CampaignMemory) -> tuple[int, int]:
    """A line where stage 2 has a doubtful "Kwellow" to ask about, and "from skin" is what the recogniser writes
    for Frumpkin (the DM is about to say so): its session and id."""
    await campaign.graph.add_entity(EntityIn(name="Quelloth", type=EntityType.npc))
    await campaign.graph.add_entity(EntityIn(name="Frumpkin", type=EntityType.npc))
    rec = await SessionRecorder.start(campaign, "S1", stage2=True)
    sure = {"We": 0.95, "met": 0.9, "Kwellow": 0.2, "at": 0.97, "the": 0.98, "cistern": 0.9, "with": 0.95}
    words = [Word(word=w, confidence=sure.get(w, 0.95)) for w in HEARD_TEXT.rstrip(".").split()]
    await rec.add(Utterance(speaker="DM", text=HEARD_TEXT, seq=1, words=words))
    await rec.flush()
    [line] = await campaign.log.session_entries(rec.session.id)
    assert line.text == HEARD_TEXT and line.suspects == [(7, 14)]
    return rec.session.id, line.id


def _both_kept(line: Entry) -> None:
    assert line.raw_text == HEARD_TEXT
    assert line.text == "We met Quelloth at the cistern with Frumpkin."
    assert [(c.span, c.replacement, c.stage) for c in line.corrections] == [
        ("Kwellow", "Quelloth", 2),
        ("from skin", "Frumpkin", 1),
    ]


async def test_stage2_keeps_the_heard_as_correction_made_while_it_asked_the_llm(
    memory: Memory, campaign: CampaignMemory, fake_openai: FakeOpenAI
) -> None:
    """The DM teaches a heard-as phrase while stage 2 waits for the LLM on the same line, and the heard-as job
    corrects the line: stage 2 then writes its own correction beside it, not over it."""
    session_id, _ = await _line_with_both(campaign)
    asked, release = asyncio.Event(), asyncio.Event()

    async def answer(request: dict) -> str:
        asked.set()
        await release.wait()
        fixed = HEARD_TEXT.replace("Kwellow", "Quelloth")
        return json.dumps({"text": fixed, "substitutions": [{"heard": "Kwellow", "entity": "Quelloth"}]})

    fake_openai.chat_handler = answer
    llm = OpenAILLM(fake_openai.base_url, fake_openai.api_key, "fake-model", max_retries=0)
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model="all-MiniLM-L6-v2", llm=llm)
    stage2 = asyncio.create_task(jobs.correct_stage2(ctx, campaign.campaign_id, session_id))
    try:
        await asked.wait()  # stage 2 has read the line and waits for the model
        await campaign.graph.update_entity("Frumpkin", heard_as=["from skin"])
        assert await jobs.correct_heard_as_lines(campaign, session_id) == 1
    finally:
        release.set()
        await stage2
        await llm.aclose()
    [line] = await campaign.log.session_entries(session_id)
    _both_kept(line)


async def test_the_heard_as_job_keeps_a_stage2_correction_committed_while_it_read(
    memory: Memory, campaign: CampaignMemory
) -> None:
    """Stage 2 is writing its correction of a line (its transaction not yet committed) when the heard-as job reads
    it: the job waits for that write and corrects the line as it is then, keeping stage 2's correction."""
    session_id, line_id = await _line_with_both(campaign)
    quelloth = await campaign.graph.get_entity("Quelloth")
    await campaign.graph.update_entity("Frumpkin", heard_as=["from skin"])
    by_stage2 = Correction(
        span="Kwellow", replacement="Quelloth", start=7, end=14, entity_id=quelloth.id, score=0.9, stage=2
    )
    waiting_on_a_lock = """
        SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock')
    """
    async with campaign.transaction() as tx:  # stage 2's write, in flight
        await tx.log.revise(line_id, HEARD_TEXT.replace("Kwellow", "Quelloth"), [by_stage2])
        heard = asyncio.create_task(jobs.correct_heard_as_lines(campaign, session_id))
        while not await memory.pool.fetchval(waiting_on_a_lock):  # until the job waits on the line stage 2 holds
            assert not heard.done(), "the heard-as job never waited for stage 2's write"
            await asyncio.sleep(0.01)
    assert await heard == 1
    [line] = await campaign.log.session_entries(session_id)
    _both_kept(line)


async def test_the_llm_recap_reads_speakers_by_role_not_by_the_names_they_chose(
    memory: Memory, campaign: CampaignMemory, fake_openai: FakeOpenAI
) -> None:
    """A player who renames themself "DM" must not narrate the session to the model writing the players' recap."""
    rec = await SessionRecorder.start(campaign, "Night 1")
    await campaign.log.set_dm(rec.session.id, "100")  # who ran /session start
    await rec.add(Utterance(speaker="Matt", speaker_id="100", text="Quelloth waits at the old cistern.", seq=1))
    await rec.add(Utterance(speaker="DM", speaker_id="200", text="Quelloth is dead, the DM says so.", seq=2))
    await rec.add(Utterance(speaker="Matt", text="The cistern floods at dawn.", seq=3))  # imported: as filed
    await rec.flush()
    fake_openai.chat_handler = lambda request: json.dumps({"recap": "Quelloth waits."})
    llm = OpenAILLM(fake_openai.base_url, fake_openai.api_key, "fake-model", max_retries=0)
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model="all-MiniLM-L6-v2", llm=llm)
    try:
        assert await jobs.summarize_session(ctx, campaign.campaign_id, rec.session.id) == "Quelloth waits."
    finally:
        await llm.aclose()
    (request,) = fake_openai.chat_requests
    assert request["messages"][1]["content"].splitlines()[1:-1] == [
        "DM: Quelloth waits at the old cistern.",
        "player DM: Quelloth is dead, the DM says so.",
        "Matt: The cistern floods at dawn.",
    ]


async def test_a_phrase_the_dm_says_is_never_the_name_while_stage2_asks_is_not_made_it(
    memory: Memory, campaign: CampaignMemory, fake_openai: FakeOpenAI
) -> None:
    """The DM says "Kwellow" is never Quelloth while stage 2 waits for the model on that line (a long session's
    job runs for minutes), and the restoration job finds nothing to put back yet: stage 2 must not then write the
    name there from the names it read when it started, nor in the lines after."""
    quelloth = await campaign.graph.add_entity(EntityIn(name="Quelloth", type=EntityType.npc))
    rec = await SessionRecorder.start(campaign, "S1", stage2=True)
    await rec.add_many([utterance(1), utterance(2)])
    await rec.flush()

    async def answer(request: dict) -> str:
        if request["response_format"]["json_schema"]["name"] != "LLMCorrection":
            return json.dumps({"entities": [], "facts": []})
        if not (await campaign.graph.get_entity("Quelloth")).not_heard_as:
            await campaign.graph.update_entity("Quelloth", not_heard_as=["kwellow"])
            # the restoration job (another kind: it runs meanwhile) finds no line corrected to put back
            assert await jobs.restore_heard_as_lines(campaign, rec.session.id, quelloth.id, ["kwellow"]) == 0
        return json.dumps(
            {"text": "We met Quelloth at the cistern.", "substitutions": [{"heard": "Kwellow", "entity": "Quelloth"}]}
        )

    fake_openai.chat_handler = answer
    llm = OpenAILLM(fake_openai.base_url, fake_openai.api_key, "fake-model", max_retries=0)
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model="all-MiniLM-L6-v2", llm=llm)
    try:
        await jobs.correct_stage2(ctx, campaign.campaign_id, rec.session.id)
    finally:
        await llm.aclose()
    lines = await campaign.log.session_entries(rec.session.id)
    assert [(e.text, e.corrections) for e in lines] == [(TEXT, []), (TEXT, [])]


async def _record_and_correct(
    memory: Memory, campaign: CampaignMemory, fake_openai: FakeOpenAI, doubt: float | None
) -> tuple[Entry, int]:
    """Record "in vassal high mm the cracks game" ("cracks" heard at ``doubt``, None: a transcript without word
    confidences), run the stage-2 job with a model that answers Krix for "cracks"; the line and the times the model
    was asked."""
    await campaign.graph.add_entity(EntityIn(name="Vasselheim", type=EntityType.place))
    await campaign.graph.add_entity(EntityIn(name="Krix", type=EntityType.npc))
    rec = await SessionRecorder.start(campaign, "S1", stage2=True)
    said = [("in", 0.9), ("vassal", 0.9), ("high", 0.9), ("mm", 0.9), ("the", 0.9), ("cracks", doubt), ("game", 0.9)]
    text = " ".join(w for w, _ in said)
    words = [Word(word=w, confidence=c) for w, c in said] if doubt is not None else None
    await rec.add(Utterance(speaker="DM", text=text, seq=1, words=words))
    await rec.flush()
    [line] = await campaign.log.session_entries(rec.session.id)
    assert line.text == "in Vasselheim the cracks game"  # stage 1 made three words one: the doubt must follow
    if line.suspects and doubt is not None:
        assert line.confidences == pytest.approx([c for _, c in said])
    else:
        assert line.confidences is None  # kept only for the lines stage 2 will read
    asked: list[dict] = []

    def answer(request: dict) -> str:
        if request["response_format"]["json_schema"]["name"] != "LLMCorrection":
            return json.dumps({"entities": [], "facts": []})
        asked.append(request)
        return json.dumps(
            {"text": "in Vasselheim the Krix game", "substitutions": [{"heard": "cracks", "entity": "Krix"}]}
        )

    fake_openai.chat_handler = answer
    llm = OpenAILLM(fake_openai.base_url, fake_openai.api_key, "fake-model", max_retries=0)
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model="all-MiniLM-L6-v2", llm=llm)
    try:
        await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    finally:
        await llm.aclose()
    assert await jobs.failed_jobs(memory.pool) == 0
    [line] = await campaign.log.session_entries(rec.session.id)
    return line, len(asked)


async def test_stage2_job_lets_a_name_stand_for_a_word_the_recogniser_doubted(
    memory: Memory, campaign: CampaignMemory, fake_openai: FakeOpenAI
) -> None:
    """ "cracks" → Krix renames an ordinary word one sound off a 5-phone name: it stands only when the recogniser
    doubted the word, as inline (``Pipeline.correct``), so the job must have the recorder's confidences."""
    line, asked = await _record_and_correct(memory, campaign, fake_openai, 0.2)
    assert asked == 1
    assert line.text == "in Vasselheim the Krix game"
    assert [(c.span, c.replacement, c.stage) for c in line.corrections] == [
        ("vassal high mm", "Vasselheim", 1),
        ("cracks", "Krix", 2),
    ]


async def test_stage2_job_leaves_a_word_the_recogniser_heard_confidently(
    memory: Memory, campaign: CampaignMemory, fake_openai: FakeOpenAI
) -> None:
    line, asked = await _record_and_correct(memory, campaign, fake_openai, 0.6)
    assert (line.text, asked) == ("in Vasselheim the cracks game", 0)  # not doubtful: the model is not asked


async def test_stage2_job_refuses_the_rename_in_a_transcript_without_confidences(
    memory: Memory, campaign: CampaignMemory, fake_openai: FakeOpenAI
) -> None:
    """An imported line has its doubtful spans by sound alone: the model is asked, and the strict rule reverts it."""
    line, asked = await _record_and_correct(memory, campaign, fake_openai, None)
    assert asked == 1
    assert line.text == "in Vasselheim the cracks game"
    assert [c.stage for c in line.corrections] == [1]
