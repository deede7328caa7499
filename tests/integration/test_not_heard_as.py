"""What the recogniser writes that is never a name, as the DM says ("manta ray" is never Mentiri): stored per
entity, refused where it contradicts the entity's names, honoured by stage 1 in new lines and undone in the lines
stored before by a background job, on the real embedded PostgreSQL."""

from __future__ import annotations

import json

import pytest

from memory import jobs
from memory.errors import InvalidInputError
from memory.models import EntityIn, EntityType
from memory.providers.embeddings import MiniLMEmbedder
from memory.providers.llm import OpenAILLM
from memory.recorder import CorrectionIndexCache, SessionRecorder, Utterance, Word
from memory.store import CampaignMemory, Memory
from tests.fakes.openai_server import FakeOpenAI


async def test_not_heard_as_phrases_are_stored_checked_and_moved_by_a_merge(campaign: CampaignMemory) -> None:
    g = campaign.graph
    added = await g.add_entity(
        EntityIn(name="Mentiri", type=EntityType.npc, aliases=["the Ferryman"], not_heard_as=["manta ray", "the"])
    )
    assert added.not_heard_as == ["manta ray", "the"]  # everyday words are what it protects: not refused
    assert added.heard_as == [] and added.aliases == ["the Ferryman"]
    # a contradiction: its own name (spacing aside), an alias, a heard-as phrase
    for phrase, said in [
        ("men tiri", "'men tiri' (read as 'Mentiri') is the name of 'Mentiri'"),
        ("The ferryman", "'The ferryman' is an alias of 'Mentiri'"),
    ]:
        with pytest.raises(InvalidInputError) as refused:
            await g.update_entity("Mentiri", not_heard_as=[phrase])
        assert str(refused.value) == (
            f"not heard as: {said}: it cannot also be what is never its name; take it out of one of them"
        )
    await g.update_entity("Mentiri", heard_as=["meant to reach"])
    with pytest.raises(InvalidInputError, match="'meant to reach' is what the recogniser writes for 'Mentiri'"):
        await g.update_entity("Mentiri", not_heard_as=["meant to reach"])
    with pytest.raises(InvalidInputError, match="'manta ray' is what the recogniser writes for 'Mentiri'"):
        await g.update_entity("Mentiri", heard_as=["manta ray"])  # the other way round too
    with pytest.raises(InvalidInputError, match="'manta ray' is the name of 'Manta Ray'"):
        await g.update_entity("Mentiri", new_name="Manta Ray")
    assert (await g.get_entity("Mentiri")).not_heard_as == ["manta ray", "the"]  # nothing changed
    # another entity may have it as a name, and be refused it too
    await g.add_entity(EntityIn(name="Manteray", type=EntityType.npc, not_heard_as=["manta ray", "manta rays"]))
    with pytest.raises(InvalidInputError, match="not heard as: 51 phrases, more than the 50 allowed"):
        await g.update_entity("Manteray", not_heard_as=[f"word{i}" for i in range(51)])
    merged = await g.merge_entities("Manteray", "Mentiri")
    assert merged.entity.not_heard_as == ["manta ray", "manta rays", "the"]
    await g.update_entity("Mentiri", not_heard_as=[f"word{i}" for i in range(50)])
    await g.add_entity(EntityIn(name="Orca", type=EntityType.npc, not_heard_as=["orcas"]))
    with pytest.raises(InvalidInputError, match="51 not-heard-as phrases"):
        await g.merge_entities("Orca", "Mentiri")
    await g.remove_entity("Mentiri")
    assert not await campaign.db.fetchval(
        "SELECT count(*) FROM entity_not_heard_as WHERE campaign_id = $1 AND phrase LIKE 'word%'",
        campaign.campaign_id,
    )


async def test_a_phrase_said_never_the_name_is_restored_in_stored_lines_and_left_in_new_ones(memory: Memory) -> None:
    camp = memory.campaign((await memory.campaigns().create("Ours")).id)
    bittersolt = await camp.graph.add_entity(EntityIn(name="Bittersolt", type=EntityType.npc))
    lines = ["A bitter salt wind blows past bitter soult.", "Two bitter salt bites.", "Nothing here."]
    rec = await SessionRecorder.start(camp, "Night 1", index_cache=CorrectionIndexCache())
    await rec.add_many([Utterance(speaker="DM", text=t) for t in lines])
    await rec.end()
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model="all-MiniLM-L6-v2")
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    session = await camp.log.session_by_title("Night 1")
    stored = await camp.log.session_entries(session.id)
    assert [e.text for e in stored] == [
        "A Bittersolt wind blows past Bittersolt.",
        "Two Bittersolt bites.",
        "Nothing here.",
    ]

    await camp.graph.update_entity("Bittersolt", not_heard_as=["bitter salt"])
    queued = await memory.pool.fetch("SELECT entrypoint FROM pgqueuer WHERE status = 'queued'")
    assert [r["entrypoint"] for r in queued] == [jobs.UNHEARD]
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    assert await jobs.failed_jobs(memory.pool) == 0
    now = await camp.log.session_entries(session.id)
    assert [e.text for e in now] == [
        "A bitter salt wind blows past Bittersolt.",
        "Two bitter salt bites.",
        "Nothing here.",
    ]
    assert [(c.span, c.entity_id) for c in now[0].corrections] == [("bitter soult", bittersolt.id)]
    chunks = await camp.db.fetch("SELECT text FROM chunks WHERE campaign_id = $1", camp.campaign_id)
    assert chunks and all("Bittersolt wind" not in r["text"] for r in chunks)  # embedded again
    assert await jobs.restore_heard_as_lines(camp, session.id, bittersolt.id, ["bitter salt"], any_stage=True) == 0
    # a line said from now on keeps it
    rec = await SessionRecorder.start(camp, "Night 2", index_cache=CorrectionIndexCache())
    await rec.add(Utterance(speaker="DM", text="The bitter salt returns."))
    await rec.end()
    [line] = await camp.log.session_entries(rec.session.id)
    assert line.text == "The bitter salt returns."


async def test_a_speaker_s_name_said_at_the_table_is_never_corrected_into_an_entity(memory: Memory) -> None:
    """CRD3's players call each other by name: "marisha" sounds like Mariya but is the player MARISHA."""
    camp = memory.campaign((await memory.campaigns().create("Ours")).id)
    await camp.graph.add_entity(EntityIn(name="Mariya Darrington", type=EntityType.npc, aliases=["Mariya"]))
    rec = await SessionRecorder.start(camp, "Night 1", index_cache=CorrectionIndexCache())
    said = [("MATT", "marisha, what do you do?"), ("MARISHA", "I look for marisha's sister.")]
    await rec.add_many([Utterance(speaker=who, text=t) for who, t in said])
    await rec.add(Utterance(speaker="MATT", text="Then marisha hears the door."))
    await rec.end()
    stored = await camp.log.session_entries(rec.session.id)
    assert [e.text for e in stored] == [t for _, t in said] + ["Then marisha hears the door."]
    # a name no one at the table has is still corrected
    rec = await SessionRecorder.start(camp, "Night 2", index_cache=CorrectionIndexCache())
    await rec.add(Utterance(speaker="MATT", text="marisha, what do you do?"))
    await rec.end()
    [line] = await camp.log.session_entries(rec.session.id)
    assert line.text == "Mariya Darrington, what do you do?"


async def test_a_merge_giving_an_entity_a_not_heard_as_phrase_restores_its_lines(memory: Memory) -> None:
    """Bittersolt recorded twice, the copy with "bitter salt" said never to be it: merged, Bittersolt is never heard
    there either, in the lines already stored too."""
    camp = memory.campaign((await memory.campaigns().create("Ours")).id)
    await camp.graph.add_entity(EntityIn(name="Bittersolt", type=EntityType.npc))
    rec = await SessionRecorder.start(camp, "Night 1", index_cache=CorrectionIndexCache())
    await rec.add(Utterance(speaker="DM", text="A bitter salt wind blows by."))
    await rec.end()
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model="all-MiniLM-L6-v2")
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    assert [e.text for e in await camp.log.session_entries(rec.session.id)] == ["A Bittersolt wind blows by."]
    await camp.graph.add_entity(
        EntityIn(name="Bittersolt the Ferryman", type=EntityType.npc, not_heard_as=["bitter salt"])
    )
    merged = await camp.graph.merge_entities("Bittersolt the Ferryman", "Bittersolt")
    assert merged.entity.not_heard_as == ["bitter salt"]
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    assert await jobs.failed_jobs(memory.pool) == 0
    assert [e.text for e in await camp.log.session_entries(rec.session.id)] == ["A bitter salt wind blows by."]


async def test_a_restoration_puts_back_only_what_the_entity_still_is_never_or_no_longer_heard_as(
    memory: Memory,
) -> None:
    """The DM says "kwellow" is never Quelloth and takes it back (a slip) before the restoration job runs; and takes
    "from skin" from Frumpkin and gives it back: the jobs, run then, leave the lines as they are. What an edit asked
    is judged against the entity as it is when its lines are locked, not as it was when the job was queued."""
    from memory.correction.edits import apply_corrections, merge_corrections
    from memory.models import Correction

    camp = memory.campaign((await memory.campaigns().create("Ours")).id)
    quelloth = await camp.graph.add_entity(EntityIn(name="Quelloth", type=EntityType.npc))
    await camp.graph.add_entity(EntityIn(name="Frumpkin", type=EntityType.npc, heard_as=["from skin"]))
    rec = await SessionRecorder.start(camp, "Night 1", index_cache=CorrectionIndexCache())
    await rec.add_many([Utterance(speaker="DM", text=t) for t in ["We met Kwellow.", "And from skin jumps."]])
    await rec.end()
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model="all-MiniLM-L6-v2")
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    session = await camp.log.session_by_title("Night 1")
    line = (await camp.log.session_entries(session.id))[0]
    at = line.raw_text.index("Kwellow")
    by_llm = Correction(
        span="Kwellow", replacement="Quelloth", start=at, end=at + 7, entity_id=quelloth.id, score=0.9, stage=2
    )
    async with camp.transaction() as tx:  # as stage 2 wrote it
        merged = merge_corrections(line.corrections, [by_llm])
        await tx.log.revise(line.id, apply_corrections(line.raw_text, merged), merged)
    before = [(e.text, e.corrections) for e in await camp.log.session_entries(session.id)]
    assert [text for text, _ in before] == ["We met Quelloth.", "And Frumpkin jumps."]

    await camp.graph.update_entity("Quelloth", not_heard_as=["kwellow"])
    await camp.graph.update_entity("Quelloth", not_heard_as=[])
    await camp.graph.update_entity("Frumpkin", heard_as=[])
    await camp.graph.update_entity("Frumpkin", heard_as=["from skin"])
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    assert await jobs.failed_jobs(memory.pool) == 0
    assert [(e.text, e.corrections) for e in await camp.log.session_entries(session.id)] == before


async def test_a_merge_bringing_lines_corrected_to_the_copy_restores_those_into_is_never_heard_as(
    memory: Memory,
) -> None:
    """The other way round: "bitter salt" is never Bittersolt, but lines were corrected to its copy Bittersolte before
    the DM merged it. Merged, they would say Bittersolt where the DM said it is never heard: they are put back too."""
    camp = memory.campaign((await memory.campaigns().create("Ours")).id)
    copy = await camp.graph.add_entity(EntityIn(name="Bittersolt", type=EntityType.npc))
    rec = await SessionRecorder.start(camp, "Night 1", index_cache=CorrectionIndexCache())
    await rec.add(Utterance(speaker="DM", text="A bitter salt wind blows by."))
    await rec.end()
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model="all-MiniLM-L6-v2")
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    [line] = await camp.log.session_entries(rec.session.id)
    assert [(c.span, c.entity_id) for c in line.corrections] == [("bitter salt", copy.id)]
    await camp.graph.update_entity(
        "Bittersolt", new_name="Bittersolte", aliases=[]
    )  # the copy, as the extractor named it
    await camp.graph.add_entity(EntityIn(name="Bittersolt", type=EntityType.npc, not_heard_as=["bitter salt"]))
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    merged = await camp.graph.merge_entities("Bittersolte", "Bittersolt")
    assert merged.entity.not_heard_as == ["bitter salt"]
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    assert await jobs.failed_jobs(memory.pool) == 0
    [line] = await camp.log.session_entries(rec.session.id)
    assert line.text == "A bitter salt wind blows by." and line.corrections == []


async def test_a_plural_stage_2_made_the_name_is_restored_when_its_singular_is_said_never_the_name(
    memory: Memory, fake_openai: FakeOpenAI
) -> None:
    """Stage 2 (the model, on a doubtful span) made "Kwellows" Quelloth; the DM then says "kwellow" is never Quelloth.
    Stage 2 would refuse the plural from then on (as it does "manta rays" for "manta ray"): the line stored before
    is put back too, and the edit's count of lines to restore counts it."""
    camp = memory.campaign((await memory.campaigns().create("Ours")).id)
    quelloth = await camp.graph.add_entity(EntityIn(name="Quelloth", type=EntityType.npc))
    said = "We met the Kwellows at the cistern."
    confidences = {"We": 0.95, "met": 0.9, "the": 0.98, "Kwellows": 0.2, "at": 0.97, "cistern.": 0.9}
    rec = await SessionRecorder.start(camp, "Night 1", stage2=True, index_cache=CorrectionIndexCache())
    await rec.add(
        Utterance(speaker="DM", text=said, words=[Word(word=w, confidence=c) for w, c in confidences.items()])
    )
    await rec.flush()

    def answer(request: dict) -> str:
        if request["response_format"]["json_schema"]["name"] != "LLMCorrection":
            return json.dumps({"entities": [], "facts": []})  # the extraction job asks too: nothing found
        return json.dumps(
            {
                "text": "We met the Quelloth at the cistern.",
                "substitutions": [{"heard": "Kwellows", "entity": "Quelloth"}],
            }
        )

    fake_openai.chat_handler = answer
    llm = OpenAILLM(fake_openai.base_url, fake_openai.api_key, "fake-model", max_retries=0)
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model="all-MiniLM-L6-v2", llm=llm)
    try:
        await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
        [line] = await camp.log.session_entries(rec.session.id)
        assert line.text == "We met the Quelloth at the cistern."
        assert [(c.span, c.entity_id, c.stage) for c in line.corrections] == [("Kwellows", quelloth.id, 2)]
        assert await camp.log.count_corrected(quelloth.id, ["kwellow"], ["Quelloth"], any_stage=True) == 1

        await camp.graph.update_entity("Quelloth", not_heard_as=["kwellow"])
        await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    finally:
        await llm.aclose()
    assert await jobs.failed_jobs(memory.pool) == 0
    [line] = await camp.log.session_entries(rec.session.id)
    assert (line.text, line.corrections) == (said, [])
    assert await jobs.restore_heard_as_lines(camp, rec.session.id, quelloth.id, ["kwellow"], any_stage=True) == 0
    assert await camp.log.count_corrected(quelloth.id, ["kwellow"], ["Quelloth"], any_stage=True) == 0
