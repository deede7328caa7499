"""Deleting a session (a mistaken import) on the real embedded PostgreSQL: what goes, what the DM decided stays."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from campaigns.files import read_campaign_file
from campaigns.load import apply_campaign_file
from memory import jobs
from memory.errors import InvalidInputError, NotFoundError
from memory.ingest import ingest_file
from memory.jobs import worker
from memory.models import EntityIn, EntityType, Provenance, RelationshipIn, ReviewStatus, Source
from memory.providers.embeddings import MiniLMEmbedder
from memory.recorder import SessionRecorder, Utterance
from memory.replies import deleted_session_said
from memory.store import CampaignMemory, Memory

EXAMPLES = Path(__file__).resolve().parents[2] / "campaigns" / "examples"
SAMPLE = EXAMPLES / "sunken_crown_session1.jsonl"


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


async def run_jobs(memory: Memory, embedder: MiniLMEmbedder) -> None:
    ctx = jobs.JobContext(memory=memory, embedder=embedder, embedding_model=MiniLMEmbedder.model_name)
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    assert await jobs.failed_jobs(memory.pool) == 0


def heard(session_id: int, confidence: float = 0.5) -> Provenance:
    return Provenance(source=Source.stated, confidence=confidence, session_id=session_id)


async def counts(mem: CampaignMemory, session_id: int) -> tuple[int, int]:
    row = await mem.db.fetchrow(
        """
        SELECT (SELECT count(*) FROM session_entries WHERE campaign_id = $1 AND session_id = $2),
               (SELECT count(*) FROM chunks WHERE campaign_id = $1 AND session_id = $2)
        """,
        mem.campaign_id,
        session_id,
    )
    return row[0], row[1]


async def test_deleting_a_copied_import_removes_its_lines_guesses_and_recap_only(
    memory: Memory, campaign: CampaignMemory, embedder: MiniLMEmbedder
) -> None:
    await apply_campaign_file(campaign, read_campaign_file(EXAMPLES / "sunken_crown.yaml"))
    await ingest_file(campaign, SAMPLE, session_title="Night 1")
    await ingest_file(campaign, SAMPLE, session_title="Copy", again=True)
    other = memory.campaign((await memory.campaigns().create("Other table")).id)
    await ingest_file(other, SAMPLE, session_title="Copy")
    await run_jobs(memory, embedder)
    night1 = await campaign.log.session_by_title("Night 1")
    copy = await campaign.log.session_by_title("Copy")
    other_copy = await other.log.session_by_title("Copy")
    assert night1 and copy and other_copy
    kept_before = await counts(campaign, night1.id), await counts(other, other_copy.id)
    lines, chunks = await counts(campaign, copy.id)
    assert lines == 60 and chunks > 0
    event = await campaign.graph.find_entity("Session: Copy")
    assert event is not None and event.type == EntityType.event
    took_part = await campaign.db.fetchval(
        "SELECT count(*) FROM relationships WHERE type = 'took_part_in' AND target_id = $1", event.id
    )
    assert took_part

    # The copy's own guesses: a new name, a fact about it, a fact about a known entity.
    g = campaign.graph
    guess = await g.add_entity(
        EntityIn(name="Brother Quill", type=EntityType.npc, status=ReviewStatus.pending, provenance=heard(copy.id))
    )
    eldrinax = await g.get_entity("Eldrinax")
    on_guess, _ = await g.ensure_relationship(
        RelationshipIn(source_id=guess.id, type="fears", target_id=eldrinax.id, provenance=heard(copy.id))
    )
    pending, _ = await g.ensure_relationship(
        RelationshipIn(source_id=eldrinax.id, type="mood", value="sleepy", provenance=heard(copy.id))
    )
    assert on_guess.status == pending.status == ReviewStatus.pending
    # What the DM decided stays: an accepted fact heard in the copy, and the proposed entity it stands on.
    standing = await g.add_entity(
        EntityIn(name="Old Mossback", type=EntityType.npc, status=ReviewStatus.pending, provenance=heard(copy.id))
    )
    accepted, _ = await g.ensure_relationship(
        RelationshipIn(source_id=standing.id, type="guards", target_id=eldrinax.id, provenance=heard(copy.id, 0.9))
    )
    assert accepted.status == ReviewStatus.accepted
    # A guess Night 1 made stays, and so does one about an entity the copy proposed but Night 1 also stands on.
    night1_guess, _ = await g.ensure_relationship(
        RelationshipIn(source_id=eldrinax.id, type="mood", value="hungry", provenance=heard(night1.id))
    )
    shared = await g.add_entity(
        EntityIn(name="Tully", type=EntityType.npc, status=ReviewStatus.pending, provenance=heard(copy.id))
    )
    await g.ensure_relationship(
        RelationshipIn(source_id=shared.id, type="knows", target_id=eldrinax.id, provenance=heard(night1.id))
    )
    # A job still waiting for the copy is dropped; one for Night 1 is not.
    await jobs.enqueue_summary(memory.pool, campaign.campaign_id, copy.id)
    await jobs.enqueue_summary(memory.pool, campaign.campaign_id, night1.id)

    deleted = await campaign.delete_session("copy")

    assert deleted.model_dump() == {
        "title": "Copy",
        "lines": 60,
        "chunks": chunks,
        # Brother Quill (and its fact) and the copy's own "Arrival at Ironhold (Copy)" (and its place); Old Mossback
        # and Tully have others standing on them
        "pending_entities": 2,
        "pending_facts": 3,
        "recap": True,
        "recap_links": took_part,
        "kept_recap": None,
        "kept_recap_facts": 0,
        "jobs": 1,
        "kept_entities": 0,
        "kept_facts": 1,
    }
    assert deleted_session_said(deleted) == (
        f"Deleted session 'Copy': 60 lines, {chunks} passages, 2 entities and 3 facts waiting for review, its recap "
        f"entity with {took_part} links to who took part, 1 waiting background job. Kept 0 entities and 1 fact heard "
        "in it that were accepted or rejected."
    )
    assert await campaign.log.session_by_title("Copy") is None
    assert await counts(campaign, copy.id) == (0, 0)
    assert await campaign.db.fetchval("SELECT count(*) FROM ingest_progress WHERE session_id = $1", copy.id) == 0
    assert await g.find_entity("Session: Copy") is None
    assert await g.find_entity("Brother Quill") is None and await g.find_entity("Arrival at Ironhold (Copy)") is None
    assert await g.find_entity("Arrival at Ironhold") is not None  # Night 1's
    assert (await g.find_entity("Old Mossback")) is not None and (await g.find_entity("Tully")) is not None
    assert (await g.get_relationship(accepted.id)).status == ReviewStatus.accepted
    assert (await g.get_relationship(night1_guess.id)).status == ReviewStatus.pending
    with pytest.raises(NotFoundError):
        await g.get_relationship(pending.id)
    # Night 1, its recap and the other campaign's "Copy" are untouched.
    assert (await counts(campaign, night1.id), await counts(other, other_copy.id)) == kept_before
    assert await g.find_entity("Session: Night 1") is not None
    assert await other.graph.find_entity("Session: Copy") is not None
    assert await jobs.pending_jobs(memory.pool) == 1
    # A reader of the old provenance copes: the last mention is Night 1's line again, not the copy's.
    mention = await g.last_mention(eldrinax)
    assert mention is not None and mention.title == "Night 1"


async def test_a_live_or_unknown_session_is_refused_and_nothing_changes(campaign: CampaignMemory) -> None:
    live = await campaign.log.start_session("Night 2")
    with pytest.raises(InvalidInputError, match="'Night 2' has not ended"):
        await campaign.delete_session("Night 2")
    assert await campaign.log.session_by_title("Night 2") is not None
    with pytest.raises(
        NotFoundError, match=r"no session titled 'Nigth 2' in this campaign \(did you mean 'Night 2'\?\)"
    ):
        await campaign.delete_session("Nigth 2")
    # One cut off (a crash, Ctrl-C) never ends by itself: the DM may delete it all the same.
    assert (await campaign.delete_session("Night 2", even_if_live=True)).title == "Night 2"
    assert await campaign.log.session_by_title(live.title) is None


async def test_a_job_that_runs_after_its_session_was_deleted_does_nothing(
    memory: Memory, campaign: CampaignMemory, caplog: pytest.LogCaptureFixture
) -> None:
    session = await campaign.log.start_session("Gone")
    await campaign.log.end_session(session.id)
    await jobs.enqueue_session_work(memory.pool, campaign.campaign_id, session.id, 5)
    real_chunk = jobs.chunk_session

    async def delete_first(ctx: jobs.JobContext, campaign_id: int, session_id: int) -> int:
        await memory.campaign(campaign_id).delete_session("Gone")  # while the job runs: it was picked already
        return await real_chunk(ctx, campaign_id, session_id)

    ctx = jobs.JobContext(memory=memory, embedder=None, embedding_model="x")  # type: ignore[arg-type]
    with pytest.MonkeyPatch.context() as mp, caplog.at_level(logging.INFO, logger=jobs.__name__):
        mp.setattr(worker, "chunk_session", delete_first)
        await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    assert await memory.pool.fetch("SELECT * FROM pgqueuer") == []  # none held as failed
    skipped = [r.levelno for r in caplog.records if "no longer exists" in r.getMessage()]
    assert skipped and set(skipped) == {logging.INFO}


async def test_a_recap_the_dm_gave_facts_of_their_own_stays_with_them(memory: Memory, campaign: CampaignMemory) -> None:
    """`entity link "Session: Night 1" happened_in Ironhold` is the DM's word, not a guess of the deleted lines:
    the recap entity stays with it (only the session's "took part in" links go), and the DM is told."""
    g = campaign.graph
    await g.add_entity(EntityIn(name="Ironhold", type=EntityType.place))
    await g.add_entity(EntityIn(name="Mira", type=EntityType.npc))
    ctx = jobs.JobContext(memory=memory, embedder=None, embedding_model="x")  # type: ignore[arg-type]
    for title in ("Night 1", "Night 2"):
        rec = await SessionRecorder.start(campaign, title)
        await rec.add_many([Utterance(speaker="DM", text="Mira reaches Ironhold.", seq=1)])
        ended = await rec.end()
        await jobs.summarize_session(ctx, campaign.campaign_id, ended.id)
    await g.link("Session: Night 1", "happened_in", "Ironhold")

    deleted = await campaign.delete_session("Night 1")

    assert deleted_session_said(deleted) == (  # Mira's link: Ironhold, a place, took no part
        "Deleted session 'Night 1': 1 line, 0 passages, 1 link of its recap to who took part, 3 waiting background "
        "jobs. Kept its recap entity 'Session: Night 1': 1 fact you accepted is about it (remove it as any entity "
        "if it should go too)."
    )
    kept = await g.find_entity("Session: Night 1")
    assert kept is not None and kept.type == EntityType.event
    facts = await campaign.db.fetch(
        "SELECT type FROM relationships WHERE campaign_id = $1 AND $2 IN (source_id, target_id)",
        campaign.campaign_id,
        kept.id,
    )
    assert [f["type"] for f in facts] == ["happened_in"]
    # a recap with nothing of the DM's goes as before
    assert (await campaign.delete_session("Night 2")).recap
    assert await g.find_entity("Session: Night 2") is None
