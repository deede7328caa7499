"""Line vectors (migration 0019): the chunk job embeds each line long enough to mean something alone, recall's
vector half finds the line by meaning (the windows when a campaign has no line vectors yet), a session chunked
before lines had vectors gets them, and the pre-show and breaks the table's cues mark rank below the story."""

from __future__ import annotations

import numpy as np
import pytest

from memory import jobs
from memory.jobs.queue import enqueue_sessions_without_line_vectors
from memory.models import EntityIn, EntityType, EntryIn
from memory.providers.embeddings import MiniLMEmbedder
from memory.recall import recall
from memory.store import CampaignMemory, Memory

STORY = [
    ("DM", "The road winds north past the mill and its fences."),
    ("VEX", "Yeah."),
    ("DM", "The old blacksmith hammers a new blade for the young queen of Whitestone."),
    ("GROG", "I order another ale and look for a fight."),
    ("DM", "Rain falls on the harbour while the fishing boats come in."),
    ("PIKE", "Okay."),
    ("DM", "A merchant counts his coins twice and locks the chest."),
]


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


async def _said(mem: CampaignMemory, title: str, lines: list[tuple[str, str]]) -> list[int]:
    session = await mem.log.start_session(title)
    written = await mem.log.write_many(
        session.id, [EntryIn(speaker=s, text=t, start_s=5.0 * i) for i, (s, t) in enumerate(lines)]
    )
    async with mem.transaction() as tx:
        await jobs.enqueue_session_work(tx.db, mem.campaign_id, session.id, len(lines))
    return [e.id for e in written]


async def _run(memory: Memory, embedder: MiniLMEmbedder) -> None:
    ctx = jobs.JobContext(memory=memory, embedder=embedder, embedding_model=MiniLMEmbedder.model_name)
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    assert await jobs.failed_jobs(memory.pool) == 0


async def _vectors(mem: CampaignMemory) -> dict[int, bool]:
    rows = await mem.db.fetch(
        "SELECT entry_id, embedding IS NOT NULL AS embedded FROM line_vectors WHERE campaign_id = $1",
        mem.campaign_id,
    )
    return {r["entry_id"]: r["embedded"] for r in rows}


async def test_each_line_long_enough_is_embedded_and_a_short_one_recorded(
    campaign: CampaignMemory, memory: Memory, embedder: MiniLMEmbedder
) -> None:
    ids = await _said(campaign, "One", STORY)
    await _run(memory, embedder)
    assert await _vectors(campaign) == {i: (n not in (1, 5)) for n, i in enumerate(ids)}  # "Yeah.", "Okay."


async def test_the_vector_half_finds_the_line_by_meaning_and_falls_back_to_windows(
    campaign: CampaignMemory, memory: Memory, embedder: MiniLMEmbedder
) -> None:
    ids = await _said(campaign, "One", STORY)
    await _run(memory, embedder)
    question = "who is making a sword for the royal lady"  # no word of the line but "a" and "the"
    (hit,) = await recall(campaign, embedder, question, limit=1, mode="vector")
    assert [line.entry_id for line in hit.lines if line.matched] == [ids[2]]
    assert [line.entry_id for line in hit.lines] == ids[1:4]  # the line, a line of context either side
    # a campaign chunked before lines had vectors (its windows embedded, as the chunk job did then): they answer
    await campaign.db.execute("DELETE FROM line_vectors WHERE campaign_id = $1", campaign.campaign_id)
    assert await recall(campaign, embedder, question, limit=3, mode="vector") == []  # windows have no vectors now
    rows = await campaign.db.fetch("SELECT id, text FROM chunks WHERE campaign_id = $1", campaign.campaign_id)
    vectors = await embedder.embed([r["text"] for r in rows])
    await campaign.db.executemany(
        "UPDATE chunks SET embedding = $2 WHERE id = $1",
        [(r["id"], np.asarray(v, dtype=np.float32)) for r, v in zip(rows, vectors, strict=True)],
    )
    hits = await recall(campaign, embedder, question, limit=3, mode="vector")
    assert hits and all(h.matched == ["vector"] for h in hits)


async def test_a_session_chunked_before_line_vectors_gets_them(
    campaign: CampaignMemory, memory: Memory, embedder: MiniLMEmbedder
) -> None:
    town = await campaign.graph.add_entity(EntityIn(name="Whitestone", type=EntityType.location))
    ids = await _said(campaign, "One", STORY)
    await _run(memory, embedder)
    before = await _vectors(campaign)
    mentioned = "SELECT entry_id FROM entity_mentions WHERE campaign_id = $1 AND entity_id = $2"
    assert [r["entry_id"] for r in await campaign.db.fetch(mentioned, campaign.campaign_id, town.id)] == [ids[2]]
    # a session chunked before lines had vectors, and before the mention index: the refill brings back both
    await campaign.db.execute("DELETE FROM line_vectors WHERE campaign_id = $1", campaign.campaign_id)
    await campaign.db.execute("DELETE FROM entity_mentions WHERE campaign_id = $1", campaign.campaign_id)
    assert await enqueue_sessions_without_line_vectors(memory.pool) == 1
    await _run(memory, embedder)
    assert await _vectors(campaign) == before and set(before) == set(ids)
    assert [r["entry_id"] for r in await campaign.db.fetch(mentioned, campaign.campaign_id, town.id)] == [ids[2]]
    assert await enqueue_sessions_without_line_vectors(memory.pool) == 0  # nothing left to fill


async def test_the_pre_show_ranks_below_the_story(
    campaign: CampaignMemory, memory: Memory, embedder: MiniLMEmbedder
) -> None:
    """A pre-show recap says the story's words in a short line (BM25 likes short lines): the segment the DM's
    "last we left off" ends is marked by the chunk job, and recall ranks it below the story."""
    ids = await _said(
        campaign,
        "One",
        [
            ("DM", "Hello everyone and welcome, the dragon mugs are back."),
            ("LIAM", "So good to be here tonight with all of you."),
            ("DM", "All right. Last we left off, you were on the road to the tower."),
            *STORY,
            ("DM", "High above the ruined tower of Westruun, the great red dragon circles and waits."),
            *STORY,
        ],
    )
    await _run(memory, embedder)
    talk = await campaign.db.fetch(
        "SELECT entry_id FROM line_vectors WHERE campaign_id = $1 AND talk = 'pre_show'", campaign.campaign_id
    )
    assert {r["entry_id"] for r in talk} == set(ids[:2])
    hits = await recall(campaign, embedder, "the dragon", limit=2, mode="fulltext")
    assert [line.entry_id for line in hits[0].lines if line.matched] == [ids[3 + len(STORY)]]
    assert [line.entry_id for line in hits[1].lines if line.matched] == [ids[0]]


async def test_a_home_tables_break_ranks_below_the_story(
    campaign: CampaignMemory, memory: Memory, embedder: MiniLMEmbedder
) -> None:
    """A home table breaks its own way ("let's have a quick break" … "alright, back in"): the chatter between is
    marked a break by the chunk job, and recall ranks a joke there below the story that says the same words."""
    ids = await _said(
        campaign,
        "One",
        [
            *STORY,
            ("DM", "Okay, let's have a quick break, the pizza's here."),
            ("ANA", "my dragon mug fell behind the couch lol"),
            ("BO", "brb"),
            ("DM", "Alright, back in."),
            *STORY,
            ("DM", "High above the ruined tower of Westruun, the great red dragon circles and waits."),
        ],
    )
    await _run(memory, embedder)
    talk = await campaign.db.fetch(
        "SELECT entry_id FROM line_vectors WHERE campaign_id = $1 AND talk = 'break'", campaign.campaign_id
    )
    n = len(STORY)
    assert {r["entry_id"] for r in talk} >= {ids[n + 1]}  # only lines long enough to mean something have vectors
    hits = await recall(campaign, embedder, "the dragon", limit=2, mode="fulltext")
    assert [line.entry_id for line in hits[0].lines if line.matched] == [ids[-1]]
    assert [line.entry_id for line in hits[1].lines if line.matched] == [ids[n + 1]]
