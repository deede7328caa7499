"""The chunk job: window a session's lines, embed the lines long enough to mean something alone, upsert the
windows and the lines' vectors (L2)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

from memory.chunking import ChunkSettings, embeds_alone, line_text, window_key, windows
from memory.gazetteer import Gazetteer, of_mentions
from memory.jobs.context import JobContext
from memory.jobs.embedding import embed_cached
from memory.jobs.queue import CHUNK, claim_progress, progress, set_progress
from memory.mentions import MENTION_RULES, index_lines
from memory.models import (
    ChunkIn,
    Entity,
    Entry,
    ReviewStatus,
)
from memory.offgame import SEGMENTS, out_of_game
from memory.semantic import LineVectorIn, content_hash
from memory.store import CampaignMemory
from memory.text import counted

log = logging.getLogger(__name__)
#: What an upgrade's re-index says as it goes: a DM's progress, shown without -v (the CLI shows "lorekeeper").
reindex_log = logging.getLogger("lorekeeper.reindex")


async def _gazetteer(mem: CampaignMemory) -> Gazetteer[Entity]:
    entities = await mem.graph.list_entities(status=None)
    return of_mentions(e for e in entities if e.status != ReviewStatus.rejected)


async def reindex_mentions(ctx: JobContext, campaign_id: int, session_id: int) -> int:
    """Index every line of the session again with the name rules of now (:data:`memory.mentions.MENTION_RULES`):
    the chunk job indexed them under the rules of when they were read, and reads a line again only once its text
    changes. The lines are read off the event loop (0.5 s for a long episode and a wiki's names); the index and the
    version it records move together in one transaction, which leaves a line revised meanwhile (stage 2, a heard-as
    phrase) to the chunk job reading its new text. Returns the lines read."""
    mem = ctx.memory.campaign(campaign_id)
    entries = await mem.log.session_entries(session_id)
    named: dict[int, list[int]] = {}
    if entries:
        gazetteer = await _gazetteer(mem)
        named = await asyncio.to_thread(lambda: {e.id: gazetteer.mentioned_ids(e) for e in entries})
    async with mem.transaction() as tx:
        if entries:
            await tx.log.lock_revisions()  # no line revised between the look below and the write
            read = {e.id: e.text for e in entries}
            now = {e.id: e.text for e in await tx.log.session_entries(session_id)}
            await index_lines(tx.db, campaign_id, session_id, {i: m for i, m in named.items() if now.get(i) == read[i]})
        await tx.log.set_mention_rules(session_id, MENTION_RULES)
    session = await mem.log.session(session_id)
    reindex_log.info(
        "%s (session %d): read again for who each line names (%s)",
        session.title,
        session_id,
        counted(len(entries), "line"),
    )
    return len(entries)


async def chunk_session(ctx: JobContext, campaign_id: int, session_id: int, *, slice_size: int = 64) -> int:
    """Window the session from where the last run stopped, upsert the windows whose text changed and embed its
    lines whose text changed; returns chunks written.

    Only windows that can have changed are windowed again: those from the first one holding the last line
    chunked. A window before it never looked at a later line, so a long session costs each job only its new
    lines. A late line or a line stage 2 revised rewinds the progress to itself. Writes go in slices so a crash
    keeps what was done."""
    mem = ctx.memory.campaign(campaign_id)
    written = 0
    while True:
        done = await progress(mem.db, mem, session_id, CHUNK)
        after = await _rewindow_after(mem, session_id, done, ctx.chunk_settings)
        entries = await mem.log.session_entries(session_id, after_seq=after)
        written += await _chunk_entries(ctx, mem, session_id, entries, slice_size)
        async with mem.transaction() as tx:
            if not await claim_progress(tx.db, tx, session_id, CHUNK, done):
                continue  # a late or revised line rewound it meanwhile
            # A line that arrived late inside what was read (a fixed transcript re-imported) enqueued a job with
            # this one's dedupe key, which is skipped while this one runs: its windows are this run's to write.
            # Lines after the last one read have jobs of their own.
            now = await tx.log.session_entries(session_id, after_seq=after, limit=len(entries))
            if [(e.id, e.text) for e in now] != [(e.id, e.text) for e in entries]:
                continue
            if entries:
                await set_progress(tx.db, tx, session_id, CHUNK, entries[-1].seq)
        ctx.chunks_written += written
        await _mark_segments(mem, session_id)
        return written


async def _rewindow_after(mem: CampaignMemory, session_id: int, done: int, settings: ChunkSettings) -> int:
    """The seq after which the session's windows must be computed again, when lines up to ``done`` are chunked.

    That is where the first stored window holding line ``done`` (or the last one before it) starts: windows
    are a pure function of the lines before their end, and no earlier window reached past that line. Such a
    window holds at most ``max_entries`` lines, so its start is among the last ones. With none stored (all
    dropped for a new embedding model) or with the last line chunked lacking its line vector (chunked before lines
    were embedded), the whole session: its windows are unchanged and cost a hash each, its lines get vectors."""
    if done <= 0:
        return 0
    last = await mem.db.fetch(
        "SELECT id, seq FROM session_entries WHERE campaign_id = $1 AND session_id = $2 AND seq <= $3"
        " ORDER BY seq DESC LIMIT $4",
        mem.campaign_id,
        session_id,
        done,
        settings.max_entries,
    )
    if not last or not await mem.semantic.line_hashes([last[0]["id"]]):
        return 0
    starts = await mem.db.fetch(
        "SELECT key FROM chunks WHERE campaign_id = $1 AND key = ANY($2::text[]) AND $3 = ANY(entry_ids)",
        mem.campaign_id,
        [window_key(session_id, r["seq"]) for r in last],
        last[0]["id"],
    )
    seq_of = {window_key(session_id, r["seq"]): r["seq"] for r in last}
    return min((seq_of[r["key"]] for r in starts), default=1) - 1


async def _chunk_entries(
    ctx: JobContext, mem: CampaignMemory, session_id: int, entries: list[Entry], slice_size: int
) -> int:
    """Chunk ``entries``, the session's lines from a window's start on; stored windows starting among them that
    no longer exist are dropped."""
    wins = windows(entries, ctx.chunk_settings)
    stored = await mem.semantic.hashes([w.key for w in wins])
    todo = [w for w in wins if stored.get(w.key) != content_hash(w.text)]
    embedded = await mem.semantic.line_hashes([e.id for e in entries])
    # mentions are looked for in the lines written only, and in lines chunked before lines had vectors (a
    # session recorded before the mention index existed is read whole again once: its windows are unchanged)
    lines = {e.id: e for w in todo for e in w.entries} | {e.id: e for e in entries if e.id not in embedded}
    mentions: dict[int, list[int]] = {}
    if lines:
        gazetteer = await _gazetteer(mem)
        mentions = {i: gazetteer.mentioned_ids(e) for i, e in lines.items()}
        # "where was X said", line by line. Only a line whose text changed since it was embedded loses what was
        # recorded for it: the recap job may have indexed a new line already (it does not wait for this job),
        # with entities accepted after this job read them.
        revised = {i for i, e in lines.items() if i in embedded and embedded[i] != content_hash(line_text(e))}
        await index_lines(mem.db, mem.campaign_id, session_id, {i: mentions[i] for i in revised})
        await index_lines(
            mem.db, mem.campaign_id, session_id, {i: m for i, m in mentions.items() if i not in revised}, replace=False
        )
    written = 0
    for start in range(0, len(todo), slice_size):
        part = todo[start : start + slice_size]
        # windows are not embedded: recall's vector half reads the lines' vectors, and embedding both made the
        # job 2.6x slower; a window keeps its lines, speakers and mentions
        chunks = [
            ChunkIn(
                key=w.key,
                session_id=session_id,
                text=w.text,
                entry_ids=[e.id for e in w.entries],
                speakers=w.speakers,
                entity_ids=list(dict.fromkeys(i for e in w.entries for i in mentions[e.id])),
                start_s=w.entries[0].start_s,
                end_s=max((e.end_s if e.end_s is not None else e.start_s) for e in w.entries),
            )
            for w in part
        ]
        await mem.semantic.upsert(chunks)
        written += len(chunks)
    await _embed_lines(ctx, mem, session_id, entries, embedded, slice_size)
    # Windows move when a line arrives late (a fixed line re-imported): chunks of windows that no longer exist
    # would show their lines twice in recall.
    keys = {w.key for w in wins}
    await mem.semantic.drop(session_id, [k for e in entries if (k := window_key(session_id, e.seq)) not in keys])
    return written


async def _embed_lines(
    ctx: JobContext,
    mem: CampaignMemory,
    session_id: int,
    entries: list[Entry],
    stored: Mapping[int, str],
    slice_size: int,
) -> int:
    """Embed the lines among ``entries`` whose text changed since their vector (``stored``: the hashes of those
    that have one) or that have none; a line too short to embed alone is recorded without one. Returns the lines
    embedded."""
    todo = [(e, content_hash(line_text(e))) for e in entries]
    todo = [(e, h) for e, h in todo if stored.get(e.id) != h]
    short = [LineVectorIn(e.id, session_id, h, None) for e, h in todo if not embeds_alone(e)]
    await mem.semantic.upsert_lines(short)
    alone = [(e, h) for e, h in todo if embeds_alone(e)]
    for start in range(0, len(alone), slice_size):
        part = alone[start : start + slice_size]
        texts = [line_text(e) for e, _ in part]
        vectors = await embed_cached(mem.db, ctx.embedder, ctx.embedding_model, texts, ctx.embed_stats)
        await mem.semantic.upsert_lines(
            [LineVectorIn(e.id, session_id, h, v) for (e, h), v in zip(part, vectors, strict=True)]
        )
    return len(alone)


async def _mark_segments(mem: CampaignMemory, session_id: int) -> None:
    """Mark the session's pre-show, breaks and after-show on its lines, for recall. The segments hang on the
    DM's cues anywhere in the session (a "welcome back" ends the break before it), so the whole session is read:
    only the DM's lines are matched, a few milliseconds for a long session."""
    session = await mem.log.session(session_id)
    entries = await mem.log.session_entries(session_id)
    talk = out_of_game(entries, session.dm_speaker_id, only=())
    await mem.semantic.mark_talk(session_id, {i: kind.value for i, kind in talk.items() if kind in SEGMENTS})
