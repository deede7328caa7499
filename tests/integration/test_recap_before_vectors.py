"""A session's recap does not wait for its lines' vectors: embedding a long session is most of an import's time,
and the recap reads none of them. The mention index the recap job writes for new lines survives the chunk job
that runs after it."""

from __future__ import annotations

from pathlib import Path

from pgqueuer import models as pgq_models

from memory import jobs
from memory.ingest import ingest_file
from memory.jobs import worker
from memory.mentions import index_lines
from memory.models import EntityIn, EntityType
from memory.store import CampaignMemory, Memory


class StandIn:
    """A stand-in for the model: one vector for every text."""

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [[1.0] + [0.0] * 383 for _ in texts]


async def test_the_recap_is_not_put_off_for_the_chunk_job(
    memory: Memory, campaign: CampaignMemory, tmp_path: Path
) -> None:
    (night := tmp_path / "night.txt").write_text("DM: The bell of Saltmere rings.\nAna: I count the ropes.\n")
    await ingest_file(campaign, night)
    session = (await campaign.log.sessions())[0]
    queued = {r["entrypoint"]: r["id"] for r in await memory.pool.fetch("SELECT * FROM pgqueuer")}
    assert {jobs.CHUNK, jobs.EXTRACT, jobs.SUMMARY} <= set(queued)
    picked = await memory.pool.fetchrow(
        "UPDATE pgqueuer SET status = 'picked' WHERE id = $1 RETURNING *", queued[jobs.SUMMARY]
    )
    job = pgq_models.Job.model_validate(dict(picked))
    # extraction files the links the recap lists: it is waited for
    assert await worker._summary_put_off(memory.pool, job, campaign.campaign_id, session.id)
    # extraction done (and the recheck that put-off queued taken away): only the chunk job left, still queued
    await memory.pool.execute("DELETE FROM pgqueuer WHERE entrypoint <> $1 AND id <> $2", jobs.CHUNK, job.id)
    assert not await worker._summary_put_off(memory.pool, job, campaign.campaign_id, session.id)


async def test_what_the_recap_indexed_for_a_new_line_outlives_the_chunk_job(
    memory: Memory, campaign: CampaignMemory, tmp_path: Path
) -> None:
    """The recap job, run first, indexed a line with an entity the chunk job's own look does not find there (one
    accepted after the chunk job read the graph, say): the chunk job adds its own rows and takes none away."""
    bell = await campaign.graph.add_entity(EntityIn(name="Saltmere Bell", type=EntityType.item))
    (night := tmp_path / "night.txt").write_text("DM: The bell rings over the harbour tonight.\n")
    await ingest_file(campaign, night)
    session = (await campaign.log.sessions())[0]
    (line,) = await campaign.log.session_entries(session.id)
    await index_lines(campaign.db, campaign.campaign_id, session.id, {line.id: [bell.id]}, replace=False)
    ctx = jobs.JobContext(memory=memory, embedder=StandIn(), embedding_model="stand-in")  # type: ignore[arg-type]
    await jobs.chunk_session(ctx, campaign.campaign_id, session.id)
    rows = await memory.pool.fetch("SELECT entity_id FROM entity_mentions WHERE entry_id = $1", line.id)
    assert [r["entity_id"] for r in rows] == [bell.id]

    # the line revised (stage 2, a heard-as phrase): what was recorded for its old text goes
    await campaign.log.revise(line.id, "The gulls cry over the harbour tonight.", [])
    await jobs.chunk_session(ctx, campaign.campaign_id, session.id)
    assert await memory.pool.fetch("SELECT entity_id FROM entity_mentions WHERE entry_id = $1", line.id) == []
