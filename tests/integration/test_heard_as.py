"""What the recogniser writes for a name, as the DM taught it ("from skin" is Frumpkin): stored per campaign,
corrected in new lines at once and in the lines stored before by a background job, on the real embedded
PostgreSQL."""

from __future__ import annotations

import pytest

from memory import jobs
from memory.errors import AlreadyExistsError, InvalidInputError
from memory.jobs import heard_as, worker
from memory.models import EntityIn, EntityType, EntryIn, Visibility
from memory.providers.embeddings import MiniLMEmbedder
from memory.recorder import CorrectionIndexCache, SessionRecorder, Utterance
from memory.replies import heard_as_said
from memory.store import CampaignMemory, Memory


async def test_heard_as_phrases_are_stored_checked_and_no_alias(campaign: CampaignMemory) -> None:
    await campaign.graph.add_entity(EntityIn(name="Frumpkin", type=EntityType.npc, aliases=["the cat"]))
    await campaign.graph.add_entity(EntityIn(name="Keyleth", type=EntityType.player))
    cat = await campaign.graph.update_entity("Frumpkin", heard_as=["from skin", " From  Skin ", "frump kin"])
    assert cat.heard_as == ["from skin", "frump kin"]  # once each, case aside, trimmed
    assert (await campaign.graph.get_entity("Frumpkin")).heard_as == cat.heard_as
    assert await campaign.graph.find_entity("from skin") is None  # not a name players may look it up by
    refused = {
        "Keyleth": "'Keyleth' is the name of 'Keyleth'",
        "The Cat": "'the cat' is an alias of 'Frumpkin'",
        "frumpkin": "'Frumpkin' is the name of 'Frumpkin'",
    }
    for phrase, message in refused.items():
        with pytest.raises(AlreadyExistsError, match=message):
            await campaign.graph.update_entity("Frumpkin", heard_as=[phrase])
    with pytest.raises(AlreadyExistsError, match="'from skin' is already what the recogniser writes for 'Frumpkin'"):
        await campaign.graph.update_entity("Keyleth", heard_as=["From skin"])
    # a name or alias may not be a phrase the recogniser writes for another either
    with pytest.raises(AlreadyExistsError, match="'from skin' is what the recogniser writes for 'Frumpkin'"):
        await campaign.graph.add_entity(EntityIn(name="From Skin", type=EntityType.item))
    with pytest.raises(AlreadyExistsError, match="'frump kin' is what the recogniser writes for 'Frumpkin'"):
        await campaign.graph.update_entity("Keyleth", aliases=["Frump Kin"])
    for phrases, message in [
        ([f"word {i}" for i in range(51)], "51 phrases, more than the 50"),
        (["from, skin"], "has ',' inside"),
        (["a b c d e f g h"], "more than 7 words"),
        (["x" * 201], "longer than 200 characters"),
    ]:
        with pytest.raises(InvalidInputError, match=message):
            await campaign.graph.update_entity("Keyleth", heard_as=phrases)
    assert (await campaign.graph.get_entity("Frumpkin")).heard_as == cat.heard_as  # refusals changed nothing
    cleared = await campaign.graph.update_entity("Frumpkin", heard_as=[])
    assert cleared.heard_as == [] and cleared.aliases == ["the cat"]


async def test_a_phrase_of_words_said_all_the_time_is_refused_and_rewrites_no_line(campaign: CampaignMemory) -> None:
    """A DM who taught "the" as Eldrinax had every "the" of the campaign's lines rewritten to the name, and
    clearing the phrase restored none: such a phrase is refused, one with a word of its own is not."""
    await campaign.graph.add_entity(EntityIn(name="Eldrinax", type=EntityType.npc))
    rec = await SessionRecorder.start(campaign, "Night 1", index_cache=CorrectionIndexCache())
    await rec.add(Utterance(speaker="DM", text="The dragon is not under the old man's house."))
    await rec.flush()
    for phrase in ["the", "Not", "old man", "and it is"]:
        with pytest.raises(InvalidInputError, match=f"{phrase!r} is only words said all the time"):
            await campaign.graph.update_entity("Eldrinax", heard_as=["elder nacks", phrase])
    assert (await campaign.graph.get_entity("Eldrinax")).heard_as == []
    assert await jobs.correct_heard_as_lines(campaign, rec.session.id) == 0
    (line,) = await campaign.log.session_entries(rec.session.id)
    assert line.text == "The dragon is not under the old man's house."
    # a phrase with a word not said all the time is the DM's to teach, however ordinary
    dragon = await campaign.graph.update_entity("Eldrinax", heard_as=["the dragon", "terry"])
    assert dragon.heard_as == ["terry", "the dragon"]


async def test_new_lines_are_corrected_as_soon_as_a_phrase_is_taught(campaign: CampaignMemory) -> None:
    await campaign.graph.add_entity(EntityIn(name="Frumpkin", type=EntityType.npc))
    cache = CorrectionIndexCache()  # one recorder's cache, kept across the edits: it must see them
    rec = await SessionRecorder.start(campaign, "Night 1", index_cache=cache)

    async def said(text: str) -> str:
        await rec.add(Utterance(speaker="Liam", text=text))
        await rec.flush()
        return (await campaign.log.session_entries(rec.session.id))[-1].text

    assert await said("from skin jumps up") == "from skin jumps up"
    await campaign.graph.update_entity("Frumpkin", heard_as=["from skin"])
    assert await said("from skin jumps up") == "Frumpkin jumps up"
    # a list replaced by one as long is a change too
    await campaign.graph.update_entity("Frumpkin", heard_as=["frump kin"])
    assert await said("from skin and frump kin") == "from skin and Frumpkin"


async def test_a_phrase_of_everyday_english_is_taught_with_a_warning_that_it_becomes_the_name_wherever_said(
    campaign: CampaignMemory,
) -> None:
    """The DM decides ("card" may be what the recogniser writes for Kord), but must know that every "card" said at
    the table, a player's card too, is then written the name."""
    was = await campaign.graph.add_entity(EntityIn(name="The Stormlord", type=EntityType.npc))
    now = await campaign.graph.update_entity("The Stormlord", heard_as=["card", "storm lored"])
    assert now.heard_as == ["card", "storm lored"]  # allowed
    assert heard_as_said(was, now, 0) == (
        "From now on “card”, “storm lored” are written The Stormlord; no line stored so far says it. “card” is "
        "everyday English: every “card” said from now on is written The Stormlord."
    )
    again = await campaign.graph.update_entity("The Stormlord", heard_as=["card", "storm lored", "The Road", "red"])
    assert heard_as_said(now, again, None) == (  # only what is new is said, each everyday phrase once
        "From now on “red”, “The Road” are written The Stormlord; the lines already stored that say it are "
        "corrected again in the background. “red”, “The Road” are everyday English: each said from now on is "
        "written The Stormlord."
    )
    # a phrase with a word English does not know is no warning ("elder nacks"), nor is a name already taught
    rare = await campaign.graph.update_entity("The Stormlord", heard_as=["card", "elder nacks"])
    assert (
        heard_as_said(again, rare, 0)
        == "From now on “elder nacks” is written The Stormlord; no line stored so far says it."
    )
    # one stored line says it; more say it
    renamed = await campaign.graph.update_entity("The Stormlord", heard_as=["card", "elder nacks", "storm lored"])
    assert heard_as_said(rare, renamed, 1) == (
        "From now on “storm lored” is written The Stormlord; 1 line already stored says it: it is corrected again "
        "in the background."
    )
    assert heard_as_said(rare, renamed, 3).endswith(
        "; 3 lines already stored say it: they are corrected again in the background."
    )
    # an entity added with phrases (``before`` None) is told the same
    added = await campaign.graph.add_entity(EntityIn(name="Frumpkin", type=EntityType.npc, heard_as=["pumpkin"]))
    assert heard_as_said(None, added, 0).endswith(
        "“pumpkin” is everyday English: every “pumpkin” said from now on is written Frumpkin."
    )


async def test_a_secret_entity_heard_as_is_written_by_its_name_which_players_read_masked(
    campaign: CampaignMemory,
) -> None:
    await campaign.graph.add_entity(
        EntityIn(name="Vaskerrin Holt", type=EntityType.npc, visibility=Visibility.secret, aliases=["the old man"])
    )
    await campaign.graph.update_entity("Vaskerrin Holt", heard_as=["vast carrion"])
    rec = await SessionRecorder.start(campaign, "Night 1", index_cache=CorrectionIndexCache())
    await rec.add(Utterance(speaker="DM", text="Vast carrion smiles at the old man."))
    await rec.flush()
    [line] = await campaign.log.session_entries(rec.session.id)
    assert line.text == "Vaskerrin Holt smiles at the old man."
    mask = await campaign.graph.player_mask()
    assert mask(line.text) == "[secret] smiles at the old man."
    assert mask("Crows on the carrion.") == "Crows on the carrion."  # its words are no name players know it by


async def test_what_the_recogniser_writes_for_a_secret_name_is_masked_where_it_stayed(
    campaign: CampaignMemory, memory: Memory
) -> None:
    """A recap written before the DM taught "vast carrion" for a secret name, and a line its job has yet to correct,
    still held the phrase, which players read as it was (half masked if a word of the name was in it): it is the
    secret name said, hidden whole as the name is."""
    from memory.mcp_tools import CampaignTools

    g = campaign.graph
    await g.add_entity(EntityIn(name="Vaskerrin Holt", type=EntityType.npc, visibility=Visibility.secret))
    session = await campaign.log.start_session("Night 1")
    await campaign.log.write(session.id, EntryIn(speaker="DM", text="Vast carrion holt smiles at Pip."))
    await campaign.log.end_session(session.id)
    await campaign.log.set_summary(session.id, "Vast carrion holt smiled at Pip, who ate carrion.")
    tools = CampaignTools(campaign, await memory.campaigns().get("Test Campaign"), dm=False)
    assert (await tools.session_recap()).summary == "Vast carrion [secret] smiled at Pip, who ate carrion."
    await g.update_entity("Vaskerrin Holt", heard_as=["vast carrion holt"])  # its job is queued, not run
    assert (await tools.session_recap()).summary == "[secret] smiled at Pip, who ate carrion."
    assert [line.text for line in (await tools.recent_log(60, "Night 1")).lines] == ["[secret] smiles at Pip."]


async def test_lines_stored_before_are_corrected_again_by_a_background_job(memory: Memory) -> None:
    camp = memory.campaign((await memory.campaigns().create("Ours")).id)
    elsewhere = memory.campaign((await memory.campaigns().create("Theirs")).id)
    lines = [
        "And from skin jumps on the table.",
        "Keyleth's owl and from skin's tail.",
        "We come from. Skin the rabbit.",
        "Nothing to see here.",
    ]
    for mem in (camp, elsewhere):
        await mem.graph.add_entity(EntityIn(name="Frumpkin", type=EntityType.npc))
        await mem.graph.add_entity(EntityIn(name="Keyleth", type=EntityType.player))
        rec = await SessionRecorder.start(mem, "Night 1", index_cache=CorrectionIndexCache())
        await rec.add_many([Utterance(speaker="Liam", text=t) for t in [*lines, "Key lith waves."]])
        await rec.end()
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model="all-MiniLM-L6-v2")
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    before = await camp.log.session_entries((await camp.log.session_by_title("Night 1")).id)
    assert before[4].text == "Keyleth waves."  # a correction of stage 1 made when it was said

    phrases = ["from skin"]
    counted = await camp.log.count_heard(phrases)
    was = await camp.graph.get_entity("Frumpkin")
    now = await camp.graph.update_entity("Frumpkin", heard_as=phrases)
    assert counted == 2
    assert heard_as_said(was, now, counted) == (
        "From now on “from skin” is written Frumpkin; 2 lines already stored say it: they are corrected again in "
        "the background. “from skin” is everyday English: every “from skin” said from now on is written Frumpkin."
    )
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    assert await jobs.failed_jobs(memory.pool) == 0
    session = await camp.log.session_by_title("Night 1")
    after = await camp.log.session_entries(session.id)
    assert [e.text for e in after] == [
        "And Frumpkin jumps on the table.",
        "Keyleth's owl and Frumpkin's tail.",
        "We come from. Skin the rabbit.",
        "Nothing to see here.",
        "Keyleth waves.",
    ]
    assert [e.raw_text for e in after] == [*lines, "Key lith waves."]  # the raw text never changes
    assert after[4].corrections == before[4].corrections  # the rest of a line's corrections stay
    [c] = after[1].corrections
    assert (c.span, c.replacement, c.score, c.stage) == ("from skin", "Frumpkin", 1.0, 1)
    # the passages were embedded again from the new text, and the full-text search finds the name
    chunks = await camp.db.fetch("SELECT text FROM chunks WHERE campaign_id = $1", camp.campaign_id)
    assert chunks and all("from skin" not in r["text"] for r in chunks)
    assert any("Frumpkin jumps" in r["text"] for r in chunks)
    assert [h.text for h in await camp.log.search("Frumpkin")][:2]
    # another campaign's lines are not its to change
    theirs = await elsewhere.log.session_entries((await elsewhere.log.session_by_title("Night 1")).id)
    assert theirs[0].text == lines[0]
    # done once: running it again, or counting, finds nothing left to do
    assert await jobs.correct_heard_as_lines(camp, session.id) == 0
    assert await camp.log.count_heard(phrases) == 0


async def test_a_heard_as_job_cut_off_before_it_queued_the_chunking_has_it_done_when_tried_again(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The connection is lost after the heard-as job corrected the lines and before it queued their passages'
    embedding: its retry must not find the lines done and leave the passages saying the phrase."""
    camp = memory.campaign((await memory.campaigns().create("Ours")).id)
    await camp.graph.add_entity(EntityIn(name="Frumpkin", type=EntityType.npc))
    rec = await SessionRecorder.start(camp, "Night 1", index_cache=CorrectionIndexCache())
    await rec.add_many([Utterance(speaker="Liam", text=t) for t in ["And from skin jumps.", "Nothing here."]])
    await rec.end()
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model="all-MiniLM-L6-v2")
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    enqueue = jobs.enqueue_session_work
    cut_off: list[str] = []

    async def connection_lost_once(conn: object, *args: object, after: str = "", **kwargs: object) -> None:
        if after == ":h" and not cut_off:
            cut_off.append(after)
            raise ConnectionResetError("connection lost")  # an outage: the worker tries the job again
        await enqueue(conn, *args, after=after, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(heard_as, "enqueue_session_work", connection_lost_once)
    await camp.graph.update_entity("Frumpkin", heard_as=["from skin"])
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    assert cut_off == [":h"] and await jobs.failed_jobs(memory.pool) == 0
    assert [e.text for e in await camp.log.session_entries(rec.session.id)] == ["And Frumpkin jumps.", "Nothing here."]
    chunks = [
        r["text"] for r in await camp.db.fetch("SELECT text FROM chunks WHERE campaign_id = $1", camp.campaign_id)
    ]
    assert chunks and any("Frumpkin jumps" in c for c in chunks) and not any("from skin" in c for c in chunks)


async def _took_part(mem: CampaignMemory, entity_id: int) -> list[str]:
    """The recapped sessions the entity took part in, by title."""
    rows = await mem.db.fetch(
        """
        SELECT t.name FROM relationships r JOIN entities t ON t.id = r.target_id
        WHERE r.campaign_id = $1 AND r.source_id = $2 AND r.type = 'took_part_in' ORDER BY t.name
        """,
        mem.campaign_id,
        entity_id,
    )
    return [r["name"] for r in rows]


async def test_a_sessions_recap_waits_for_its_heard_as_job(memory: Memory) -> None:
    """A phrase taught during a session, which then ends: the recap waits for the job correcting its lines, so it is
    written from the names, and links the entity they name."""
    from pgqueuer import models as pgq_models

    camp = memory.campaign((await memory.campaigns().create("Ours")).id)
    cat = await camp.graph.add_entity(EntityIn(name="Frumpkin", type=EntityType.npc))
    rec = await SessionRecorder.start(camp, "Night 1", index_cache=CorrectionIndexCache())
    await rec.add(Utterance(speaker="DM", text="And from skin jumps on the table in the tavern tonight."))
    await rec.flush()
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model="all-MiniLM-L6-v2")
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)  # its lines chunked and read
    await camp.graph.update_entity("Frumpkin", heard_as=["from skin"])
    await rec.end()
    queued = await memory.pool.fetch("SELECT * FROM pgqueuer WHERE status = 'queued' ORDER BY entrypoint")
    assert [r["entrypoint"] for r in queued] == [jobs.HEARD, jobs.SUMMARY]
    # as a worker picks it
    picked = await memory.pool.fetchrow(
        "UPDATE pgqueuer SET status = 'picked' WHERE id = $1 RETURNING *", queued[1]["id"]
    )
    summary_job = pgq_models.Job.model_validate(dict(picked))
    assert await worker._summary_put_off(memory.pool, summary_job, camp.campaign_id, rec.session.id)

    # the job put off has queued its recheck, a few seconds on: the drain runs the heard-as job, then the recap
    await memory.pool.execute("DELETE FROM pgqueuer WHERE entrypoint = $1", jobs.SUMMARY)
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    await jobs.summarize_session(ctx, camp.campaign_id, rec.session.id)
    summary = (await camp.log.session(rec.session.id)).summary
    assert summary is not None and "Frumpkin jumps" in summary and "from skin" not in summary
    assert await _took_part(camp, cat.id) == ["Session: Night 1"]


async def test_a_phrase_spelling_another_name_with_other_spacing_is_refused(campaign: CampaignMemory) -> None:
    """The matcher reads names with spacing and punctuation aside, and another entity's name wins there: "iron
    hold" would be written Ironhold, whatever the reply said. Refused, either way round; the entity's own name
    spaced otherwise is only said again."""
    g = campaign.graph
    await g.add_entity(EntityIn(name="Ironhold", type=EntityType.place, aliases=["Old Keep"]))
    await g.add_entity(EntityIn(name="Frumpkin", type=EntityType.npc, heard_as=["from skin"]))
    aside = "spacing and punctuation aside, which is"
    refused = {
        "iron hold": f"'iron hold' is read as 'Ironhold', {aside} the name of 'Ironhold'",
        "old-keep": f"'old-keep' is read as 'Old Keep', {aside} an alias of 'Ironhold'",
        "IRON-HOLD": "'IRON-HOLD' is read as 'Ironhold'",
    }
    for phrase, message in refused.items():
        with pytest.raises(AlreadyExistsError, match=message):
            await g.update_entity("Frumpkin", heard_as=[phrase])
    with pytest.raises(
        AlreadyExistsError,
        match=rf"'fromskin' is read as 'from skin', {aside} already what the recogniser writes for 'Frumpkin'",
    ):
        await g.add_entity(EntityIn(name="Keyleth", type=EntityType.player, heard_as=["fromskin"]))
    assert (await g.get_entity("Frumpkin")).heard_as == ["from skin"]  # refusals changed nothing
    assert (await g.update_entity("Frumpkin", heard_as=["from skin", "frump kin"])).heard_as == [
        "from skin",
        "frump kin",
    ]
    # the other way round: a name or alias the matcher would read as a phrase the recogniser writes for another
    with pytest.raises(AlreadyExistsError, match="'from skin' is what the recogniser writes for 'Frumpkin'"):
        await g.add_entity(EntityIn(name="Fromskin", type=EntityType.item))
    with pytest.raises(AlreadyExistsError, match="'from skin' is what the recogniser writes for 'Frumpkin'"):
        await g.update_entity("Ironhold", aliases=["From-Skin"])
    assert (await g.update_entity("Frumpkin", aliases=["Frump-kin"])).aliases == ["Frump-kin"]  # its own: said again


async def test_lines_with_accented_words_are_counted_and_corrected_again(memory: Memory) -> None:
    """A phrase is looked for in the stored lines as the matcher reads it, accents aside on both sides: "café bar"
    (or "cafe bar") taught after the line was stored finds "The café bar owner"."""
    camp = memory.campaign((await memory.campaigns().create("Ours")).id)
    await camp.graph.add_entity(EntityIn(name="Zanzibar", type=EntityType.npc))
    rec = await SessionRecorder.start(camp, "Night 1", index_cache=CorrectionIndexCache())
    await rec.add_many(
        [Utterance(speaker="DM", text=t) for t in ["The café bar owner waves at you.", "A CAFÉ BAR, at last."]]
    )
    await rec.end()
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model="all-MiniLM-L6-v2")
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    assert await camp.log.count_heard(["café bar"]) == 2
    assert len(await camp.log.heard_in(rec.session.id, ["cafe bar"])) == 2
    await camp.graph.update_entity("Zanzibar", heard_as=["café bar"])
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    lines = await camp.log.session_entries(rec.session.id)
    assert [e.text for e in lines] == ["The Zanzibar owner waves at you.", "A Zanzibar, at last."]
    assert await camp.log.count_heard(["café bar"]) == 0


async def test_an_entity_taught_after_a_recap_took_part_in_the_sessions_that_said_its_phrase(memory: Memory) -> None:
    """The recap of Night 1 read "from skin", not Frumpkin: once the DM taught the phrase and the job corrected the
    lines, Frumpkin's card said it was last mentioned there, yet not that it took part in it."""
    camp = memory.campaign((await memory.campaigns().create("Ours")).id)
    await camp.graph.add_entity(EntityIn(name="Frumpkin", type=EntityType.npc))
    await camp.graph.add_entity(EntityIn(name="Keyleth", type=EntityType.player))
    for title, said in [("Night 1", "And from skin jumps on Keyleth's table."), ("Night 2", "Keyleth sleeps.")]:
        rec = await SessionRecorder.start(camp, title, index_cache=CorrectionIndexCache())
        await rec.add(Utterance(speaker="Liam", text=said))
        await rec.end()
    ctx = jobs.JobContext(memory=memory, embedder=MiniLMEmbedder(), embedding_model="all-MiniLM-L6-v2")
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)

    async def took_part(name: str) -> list[str]:
        entity = await camp.graph.get_entity(name)
        facts = await camp.graph.relationships_of(entity.id, include_secret=True)
        return sorted(r.target_name for r in facts if r.type == "took_part_in")

    assert await took_part("Keyleth") == ["Session: Night 1", "Session: Night 2"]
    assert await took_part("Frumpkin") == []
    await camp.graph.update_entity("Frumpkin", heard_as=["from skin"])
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    assert await jobs.failed_jobs(memory.pool) == 0
    assert await took_part("Frumpkin") == ["Session: Night 1"]
    session = await camp.log.session_by_title("Night 1")
    assert await jobs.correct_heard_as_lines(camp, session.id) == 0  # again: nothing changes, no link is doubled
    assert await took_part("Frumpkin") == ["Session: Night 1"]
