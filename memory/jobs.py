"""Background jobs on the durable PostgreSQL queue (pgqueuer): chunk+embed, extract, correction stage 2, summary.

Every job is idempotent, so the queue's at-least-once delivery is enough: a job re-picked after a crash (its
heartbeat went stale) redoes only what did not commit. Chunk keys are deterministic (upserts), embeddings come
from a cache keyed by (model, content hash), extraction is idempotent and remembers how far it got per session,
and the summary's event entity and links are upserts.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import json
import logging
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence, Set
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import asyncpg
import numpy as np
from pgqueuer.adapters.drivers.asyncpg import AsyncpgPoolDriver
from pgqueuer.adapters.persistence.queries import Queries
from pgqueuer.core.executors import DatabaseRetryEntrypointExecutor, EntrypointExecutorParameters
from pgqueuer.core.qm import QueueManager
from pgqueuer.domain import errors as pgq_errors
from pgqueuer.domain import models as pgq_models
from pgqueuer.domain.types import QueueExecutionMode
from pydantic import BaseModel, field_validator

from memory.chunking import ChunkSettings, window_key, windows
from memory.db import Executor
from memory.errors import NotFoundError, Unavailable
from memory.extraction.pipeline import by_role
from memory.extraction.salience import is_trivial
from memory.gazetteer import Gazetteer
from memory.graph import SecretMask
from memory.mentions import index_lines
from memory.models import (
    ChunkIn,
    Correction,
    Entity,
    EntityIn,
    EntityType,
    Entry,
    Provenance,
    ReviewStatus,
    Source,
    Visibility,
)
from memory.offgame import is_table_talk, narrator, out_of_game
from memory.semantic import content_hash
from memory.store import CampaignMemory, Memory
from memory.text import storable, without_hidden
from memory.took_part import link_to_recaps, took_part, unlink_unnamed
from memory.voice.backoff import Backoff

if TYPE_CHECKING:
    from memory.correction import PhoneticMatcher
    from memory.providers.embeddings import Embedder
    from memory.providers.llm import LLMClient

log = logging.getLogger(__name__)

CHUNK = "lk_chunk"
EXTRACT = "lk_extract"
CORRECT2 = "lk_correct2"
SUMMARY = "lk_summary"
HEARD = "lk_heard"
UNHEARD = "lk_unheard"
ENTRYPOINTS = (CHUNK, EXTRACT, CORRECT2, SUMMARY, HEARD, UNHEARD)
_QUEUE_CHANNEL = "ch_pgqueuer"


# enqueueing (inside the caller's transaction) ------------------------------------------------------------------


def _payload(campaign_id: int, session_id: int, **extra: Any) -> bytes:
    return json.dumps({"campaign_id": campaign_id, "session_id": session_id, **extra}).encode()


async def enqueue_session_work(
    conn: Executor, campaign_id: int, session_id: int, upto_seq: int, *, stage2: bool = False, after: str = ""
) -> None:
    """Enqueue the jobs owed on a session's entries up to ``upto_seq``, on ``conn`` (the L1 transaction).

    A job processes everything new in its session when it runs, so one per batch is plenty; the dedupe key
    makes replaying a batch whose jobs still wait a no-op."""
    kinds = [CHUNK, EXTRACT] + ([CORRECT2] if stage2 else [])
    await _queries(conn).enqueue(
        kinds,
        [_payload(campaign_id, session_id, upto_seq=upto_seq)] * len(kinds),
        # Stage 2 first (it rewrites text), then chunks (recall), then extraction.
        [{CORRECT2: 30, CHUNK: 20, EXTRACT: 10}[k] for k in kinds],
        # ``after`` names a later round over the same lines (e.g. after stage 2): a job of the first round that
        # is running right now must not swallow it.
        dedupe_key=[f"{k}:{session_id}:{upto_seq}{after}" for k in kinds],
        on_conflict="skip",
    )


async def enqueue_recorrection(conn: Executor, campaign_id: int, phrases: Sequence[str]) -> int:
    """Have the campaign's stored lines that hold one of ``phrases`` (heard-as phrases just added) corrected
    again, one job per session (see :func:`correct_heard_as`), on ``conn`` (the transaction adding them);
    returns how many sessions. A campaign of two years holds a million lines: the DM is not kept waiting."""
    sessions = [
        r["id"] for r in await conn.fetch("SELECT id FROM sessions WHERE campaign_id = $1 ORDER BY id", campaign_id)
    ]
    if sessions:
        said = hashlib.sha256("\n".join(sorted(p.casefold() for p in phrases)).encode()).hexdigest()[:16]
        await _queries(conn).enqueue(
            [HEARD] * len(sessions),
            [_payload(campaign_id, s) for s in sessions],
            [25] * len(sessions),  # after stage 2, before chunking: the chunk job it enqueues embeds the new text
            # phrases added again while their jobs still wait add none; other phrases, a round of their own
            dedupe_key=[f"{HEARD}:{s}:{said}" for s in sessions],
            on_conflict="skip",
        )
    return len(sessions)


async def enqueue_restoration(
    conn: Executor, campaign_id: int, entity_id: int, phrases: Sequence[str], *, any_stage: bool = False
) -> int:
    """Have the campaign's stored lines where ``phrases`` (heard-as phrases the entity ``entity_id`` just lost, or
    with ``any_stage`` phrases it is never heard as) were corrected to it restored, one job per session (see
    :func:`restore_heard_as_lines`), on ``conn`` (the transaction making the change); returns how many sessions."""
    sessions = [
        r["id"] for r in await conn.fetch("SELECT id FROM sessions WHERE campaign_id = $1 ORDER BY id", campaign_id)
    ]
    if sessions and phrases:
        said = hashlib.sha256("\n".join(sorted(p.casefold() for p in phrases)).encode()).hexdigest()[:16]
        await _queries(conn).enqueue(
            [UNHEARD] * len(sessions),
            [
                _payload(campaign_id, s, entity_id=entity_id, phrases=list(phrases), any_stage=any_stage)
                for s in sessions
            ],
            [25] * len(sessions),  # as the heard-as job: after stage 2, before chunking
            dedupe_key=[f"{UNHEARD}:{s}:{entity_id}:{said}:{int(any_stage)}" for s in sessions],
            on_conflict="skip",
        )
    return len(sessions) if phrases else 0


async def enqueue_summary(conn: Executor, campaign_id: int, session_id: int) -> None:
    """Enqueue the session's summary. The dedupe key counts the session's lines: ending it again with the same
    lines adds no job, but a session resumed (or a late line imported) and ended again while its first summary
    job runs, which read the lines before, gets another."""
    lines = await conn.fetchval(
        "SELECT count(*) FROM session_entries WHERE campaign_id = $1 AND session_id = $2",
        campaign_id,
        session_id,
    )
    await _queries(conn).enqueue(
        [SUMMARY],
        [_payload(campaign_id, session_id)],
        [0],
        dedupe_key=[f"{SUMMARY}:{session_id}:{lines}"],
        on_conflict="skip",
    )


def _queries(conn: Executor) -> Queries:
    if isinstance(conn, asyncpg.Pool):
        return Queries.from_asyncpg_pool(conn)
    return Queries.from_asyncpg_connection(conn)


# the embedding cache --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class EmbedStats:
    requested: int = 0
    cache_hits: int = 0
    computed: int = 0


async def embed_cached(
    db: Executor, embedder: Embedder, model: str, texts: Sequence[str], stats: EmbedStats | None = None
) -> list[list[float]]:
    """Embeddings of ``texts``, computing only those not cached under (model, content hash)."""
    hashes = [content_hash(t) for t in texts]
    rows = await db.fetch(
        "SELECT content_hash, embedding FROM embedding_cache WHERE model = $1 AND content_hash = ANY($2::text[])",
        model,
        list(set(hashes)),
    )
    found: dict[str, Any] = {r["content_hash"]: r["embedding"] for r in rows}
    missing = list(dict.fromkeys(h for h in hashes if h not in found))
    if missing:
        text_of = dict(zip(hashes, texts, strict=True))
        vectors = await embedder.embed([text_of[h] for h in missing])
        await db.executemany(
            "INSERT INTO embedding_cache (model, content_hash, embedding) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            [(model, h, np.asarray(v, dtype=np.float32)) for h, v in zip(missing, vectors, strict=True)],
        )
        found.update(zip(missing, vectors, strict=True))
    if stats is not None:
        stats.requested += len(texts)
        stats.cache_hits += len(texts) - len(missing)
        stats.computed += len(missing)
    return [_as_list(found[h]) for h in hashes]


def _as_list(vector: Any) -> list[float]:
    # pgvector's codec yields ``Vector`` objects (newer) or numpy arrays (older); embedders yield lists.
    if hasattr(vector, "to_list"):
        return vector.to_list()
    return np.asarray(vector, dtype=np.float32).tolist()


# the jobs ------------------------------------------------------------------------------------------------------


@dataclass
class JobContext:
    """What the jobs share in one worker: the memory, the embedder (model loaded once), the optional LLM."""

    memory: Memory
    embedder: Embedder
    embedding_model: str
    llm: LLMClient | None = None
    chunk_settings: ChunkSettings = field(default_factory=ChunkSettings)
    embed_stats: EmbedStats = field(default_factory=EmbedStats)
    chunks_written: int = 0


async def _progress(db: Executor, mem: CampaignMemory, session_id: int, step: str) -> int:
    value = await db.fetchval(
        "SELECT last_seq FROM ingest_progress WHERE campaign_id = $1 AND session_id = $2 AND step = $3",
        mem.campaign_id,
        session_id,
        step,
    )
    return int(value or 0)


async def _set_progress(db: Executor, mem: CampaignMemory, session_id: int, step: str, seq: int) -> None:
    await db.execute(
        """
        INSERT INTO ingest_progress (campaign_id, session_id, step, last_seq) VALUES ($1, $2, $3, $4)
        ON CONFLICT (campaign_id, session_id, step)
        DO UPDATE SET last_seq = greatest(ingest_progress.last_seq, $4), updated_at = now()
        """,
        mem.campaign_id,
        session_id,
        step,
        seq,
    )


async def _claim_progress(db: Executor, mem: CampaignMemory, session_id: int, step: str, seq: int) -> bool:
    """In a transaction: lock ``step``'s progress row and tell whether it still stands at ``seq``."""
    await db.execute(
        """
        INSERT INTO ingest_progress (campaign_id, session_id, step, last_seq) VALUES ($1, $2, $3, 0)
        ON CONFLICT (campaign_id, session_id, step) DO NOTHING
        """,
        mem.campaign_id,
        session_id,
        step,
    )
    value = await db.fetchval(
        "SELECT last_seq FROM ingest_progress WHERE campaign_id = $1 AND session_id = $2 AND step = $3 FOR UPDATE",
        mem.campaign_id,
        session_id,
        step,
    )
    return int(value) == seq


async def rewind_progress(db: Executor, campaign_id: int, session_id: int, step: str, seq: int) -> None:
    """Make ``step`` process the session again from line ``seq`` on (if it had got past it).

    The row is locked either way, so a job claiming its progress (:func:`_claim_progress`) either waits for this
    transaction and then sees its line, or commits first and is rewound here."""
    await db.execute(
        """
        INSERT INTO ingest_progress (campaign_id, session_id, step, last_seq) VALUES ($1, $2, $3, 0)
        ON CONFLICT (campaign_id, session_id, step) DO UPDATE
        SET last_seq = least(ingest_progress.last_seq, $4 - 1),
            updated_at = CASE WHEN ingest_progress.last_seq >= $4 THEN now() ELSE ingest_progress.updated_at END
        """,
        campaign_id,
        session_id,
        step,
        seq,
    )


async def _gazetteer(mem: CampaignMemory) -> Gazetteer[Entity]:
    entities = await mem.graph.list_entities(status=None)
    return Gazetteer(e for e in entities if e.status != ReviewStatus.rejected)


async def chunk_session(ctx: JobContext, campaign_id: int, session_id: int, *, slice_size: int = 64) -> int:
    """Window the session from where the last run stopped, embed the windows whose text changed, upsert them;
    returns chunks written.

    Only windows that can have changed are windowed again: those from the first one holding the last line
    chunked. A window before it never looked at a later line, so a long session costs each job only its new
    lines. A late line or a line stage 2 revised rewinds the progress to itself. Writes go in slices so a crash
    keeps what was done."""
    mem = ctx.memory.campaign(campaign_id)
    written = 0
    while True:
        done = await _progress(mem.db, mem, session_id, CHUNK)
        after = await _rewindow_after(mem, session_id, done, ctx.chunk_settings)
        entries = await mem.log.session_entries(session_id, after_seq=after)
        written += await _chunk_entries(ctx, mem, session_id, entries, slice_size)
        async with mem.transaction() as tx:
            if not await _claim_progress(tx.db, tx, session_id, CHUNK, done):
                continue  # a late or revised line rewound it meanwhile
            # A line that arrived late inside what was read (a fixed transcript re-imported) enqueued a job with
            # this one's dedupe key, which is skipped while this one runs: its windows are this run's to write.
            # Lines after the last one read have jobs of their own.
            now = await tx.log.session_entries(session_id, after_seq=after, limit=len(entries))
            if [(e.id, e.text) for e in now] != [(e.id, e.text) for e in entries]:
                continue
            if entries:
                await _set_progress(tx.db, tx, session_id, CHUNK, entries[-1].seq)
        ctx.chunks_written += written
        return written


async def _rewindow_after(mem: CampaignMemory, session_id: int, done: int, settings: ChunkSettings) -> int:
    """The seq after which the session's windows must be computed again, when lines up to ``done`` are chunked.

    That is where the first stored window holding line ``done`` (or the last one before it) starts: windows
    are a pure function of the lines before their end, and no earlier window reached past that line. Such a
    window holds at most ``max_entries`` lines, so its start is among the last ones. With none stored (all
    dropped for a new embedding model), the whole session."""
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
    if not last:
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
    lines = {e.id: e for w in todo for e in w.entries}  # mentions are looked for in the lines written only
    mentions: dict[int, list[int]] = {}
    if lines:
        gazetteer = await _gazetteer(mem)
        mentions = {i: gazetteer.mentioned_ids(e) for i, e in lines.items()}
        await index_lines(mem.db, mem.campaign_id, session_id, mentions)  # "where was X said", line by line
    written = 0
    for start in range(0, len(todo), slice_size):
        part = todo[start : start + slice_size]
        vectors = await embed_cached(mem.db, ctx.embedder, ctx.embedding_model, [w.text for w in part], ctx.embed_stats)
        chunks = [
            ChunkIn(
                key=w.key,
                session_id=session_id,
                text=w.text,
                embedding=v,
                entry_ids=[e.id for e in w.entries],
                speakers=w.speakers,
                entity_ids=list(dict.fromkeys(i for e in w.entries for i in mentions[e.id])),
                start_s=w.entries[0].start_s,
                end_s=max((e.end_s if e.end_s is not None else e.start_s) for e in w.entries),
            )
            for w, v in zip(part, vectors, strict=True)
        ]
        await mem.semantic.upsert(chunks)
        written += len(chunks)
    # Windows move when a line arrives late (a fixed line re-imported): chunks of windows that no longer exist
    # would show their lines twice in recall.
    keys = {w.key for w in wins}
    await mem.semantic.drop(session_id, [k for e in entries if (k := window_key(session_id, e.seq)) not in keys])
    return written


async def extract_session(ctx: JobContext, campaign_id: int, session_id: int, *, slice_size: int = 200) -> None:
    """Feed the session's entries not yet extracted to the extractor; progress commits with each slice's writes.

    The extractor (maybe a slow LLM call) runs outside any transaction; the writes and the progress then commit
    together in a short one, unless the slice changed meanwhile (progress moved: another run got there first, or
    a late line rewound it; or a line arrived or was revised inside the slice): then it is read and extracted
    again.
    """
    from memory.extraction import file_proposal, make_extractor, propose

    extractor = make_extractor(ctx.llm)
    mem = ctx.memory.campaign(campaign_id)
    while True:
        done = await _progress(mem.db, mem, session_id, EXTRACT)
        # Lines waiting for correction stage 2 are extracted after it, from their corrected text: the stage-2
        # job enqueues this one again when it is through. (Its progress is read first: a line it revises after
        # this read still waits.)
        corrected_to = await _progress(mem.db, mem, session_id, CORRECT2)
        entries = await mem.log.session_entries(session_id, after_seq=done, limit=slice_size)
        waiting = next((i for i, e in enumerate(entries) if e.suspects and e.seq > corrected_to), None)
        entries = entries[:waiting]
        if not entries:
            return
        proposal = await propose(mem, session_id=session_id, entries=entries, extractor=extractor)
        async with mem.transaction() as tx:
            if not await _claim_progress(tx.db, tx, session_id, EXTRACT, done):
                continue
            now = await tx.log.session_entries(session_id, after_seq=done, limit=len(entries))
            if [(e.id, e.text) for e in now] != [(e.id, e.text) for e in entries]:
                continue  # a line arrived inside the slice, or one was revised, while the extractor ran
            if proposal is not None:
                await file_proposal(tx, proposal)
            await _set_progress(tx.db, tx, session_id, EXTRACT, entries[-1].seq)


async def correct_stage2(ctx: JobContext, campaign_id: int, session_id: int, *, slice_size: int = 50) -> None:
    """Correction stage 2: the LLM looks at the spans stage 1 found doubtful; its verified substitutions
    revise the entry's text (the raw text stays). Chunking and extraction run again afterwards."""
    mem = ctx.memory.campaign(campaign_id)
    if ctx.llm is None:
        # Queued while an LLM was configured, run by a worker without one: the lines keep their stage-1
        # text, and extraction (which waits for stage 2) must not wait for ever.
        last = await _last_seq(mem, session_id)
        if last > await _progress(mem.db, mem, session_id, CORRECT2):
            await _set_progress(mem.db, mem, session_id, CORRECT2, last)
        await enqueue_session_work(mem.db, campaign_id, session_id, last, after=":2")  # see below
        return
    from memory.correction import LLMCorrector
    from memory.correction.edits import apply_corrections, merge_corrections, to_corrected_span, to_raw_offset
    from memory.recorder import default_index_cache

    corrector = LLMCorrector(ctx.llm, (await default_index_cache.matcher(mem)).index)
    while entries := await mem.log.session_entries(
        session_id, after_seq=await _progress(mem.db, mem, session_id, CORRECT2), limit=slice_size
    ):
        for e in entries:
            if not e.suspects:
                continue
            stage1_text = apply_corrections(e.raw_text, e.corrections)
            shifted = [to_corrected_span(span, e.corrections) for span in e.suspects]
            found = await corrector.correct(stage1_text, shifted, retry_later=True)
            if not found:
                continue
            more = [c.model_copy(update={"start": (at := to_raw_offset(c.start, e.corrections)),
                                         "end": at + len(c.span), "stage": 2}) for c in found]  # fmt: skip
            async with mem.transaction() as tx:  # new text, new vectors: its windows are chunked again
                # Read again, locked: the heard-as job may have corrected the line while the LLM was asked, and
                # its correction (the DM's word) stays.
                for now in await tx.log.entries([e.id], for_update=True):
                    # The names were read when the job started, maybe minutes ago: a phrase the DM said since is
                    # never the name is not made it (the job restoring such lines may have passed this one).
                    # Read after the lock: a later edit's restoration waits for it, and finds the line.
                    never = await tx.graph.not_heard_as_of({c.entity_id for c in more if c.entity_id is not None})
                    more = [c for c in more if not _never_heard(c, never)]
                    merged = merge_corrections(now.corrections, more)
                    if merged != now.corrections:
                        await tx.log.revise(e.id, apply_corrections(e.raw_text, merged), merged)
                        await rewind_progress(tx.db, campaign_id, session_id, CHUNK, e.seq)
        await _set_progress(mem.db, mem, session_id, CORRECT2, entries[-1].seq)
    # Extraction waited for these lines; windows with revised text need new vectors. Enqueued even when this
    # run had nothing left to do: a run that stopped between its progress and this step (a crash, a lost
    # connection) is retried, and the retry finds the lines done. A duplicate of waiting work is skipped.
    await enqueue_session_work(mem.db, campaign_id, session_id, await _last_seq(mem, session_id), after=":2")


def _never_heard(correction: Correction, never: dict[int, set[str]]) -> bool:
    """Whether ``correction`` writes an entity's name where it is never heard (``never``: each entity's phrases,
    spaces removed, as :meth:`KnowledgeGraph.not_heard_as_of` gives them): the phrase, or its plural."""
    from memory.correction.text import spaceless

    said = spaceless(correction.span)
    phrases = never.get(correction.entity_id, set()) if correction.entity_id is not None else set()
    return said in phrases or (said.endswith("s") and said[:-1] in phrases)


async def correct_heard_as(ctx: JobContext, campaign_id: int, session_id: int) -> int:
    """The job of :func:`enqueue_recorrection`."""
    return await correct_heard_as_lines(ctx.memory.campaign(campaign_id), session_id)


async def correct_heard_as_lines(mem: CampaignMemory, session_id: int, *, slice_size: int = 500) -> int:
    """Correct again the session's stored lines where the campaign's heard-as phrases are said, as stage 1 now
    corrects a new line: each phrase becomes its entity's name (a correction there before, of stage 1 or 2, gives
    way: the DM's word is surer). The rest of each line's corrections stay (the recogniser's word confidences
    they were made with are gone), and so does the raw text. As stage 2 revises a line, the session's windows
    from it on are chunked and embedded again, and an entity the lines now name took part in the session (its
    recap, if written, read the phrase). Returns how many lines changed; running it again changes none."""
    from memory.correction.edits import merge_corrections
    from memory.correction.text import spaceless
    from memory.recorder import default_index_cache

    matcher = await default_index_cache.matcher(mem)
    if not (heard := {f.spaceless for f in matcher.index.heard}):
        return 0
    ids = await mem.log.heard_in(session_id, [f.surface for f in matcher.index.heard])
    changed = 0
    named: set[int] = set()  # the entities whose phrases the lines say
    for start in range(0, len(ids), slice_size):
        async with mem.transaction() as tx:
            # locked as read: a stage-2 revision committed before this one writes must not be written over
            entries = await tx.log.entries(ids[start : start + slice_size], for_update=True)
            # The phrases as they are now, after the lock: one taken away since the job started is not written (the
            # job restoring its lines may have passed these), and one taken away after waits for the lock.
            matcher = await default_index_cache.matcher(mem)
            heard = {f.spaceless for f in matcher.index.heard}
            found = [
                [c for c in matcher.correct(e.raw_text).corrections if spaceless(c.span) in heard] for e in entries
            ]
            named.update(c.entity_id for cs in found for c in cs if c.entity_id is not None)
            revised = await _revise(
                tx,
                session_id,
                entries,
                [merge_corrections(f, e.corrections) for f, e in zip(found, entries, strict=True)],
                after=":h",
            )
        changed += revised
    if named:  # a recap written before read the phrase, not the name (done again by a retry: the raw text stays)
        async with mem.transaction() as tx:
            await link_to_recaps(tx.graph, named, sessions=[session_id])
    return changed


async def restore_heard_as(
    ctx: JobContext, campaign_id: int, session_id: int, *, entity_id: int, phrases: list[str], any_stage: bool
) -> int:
    """The job of :func:`enqueue_restoration`."""
    mem = ctx.memory.campaign(campaign_id)
    return await restore_heard_as_lines(mem, session_id, entity_id, phrases, any_stage=any_stage)


async def restore_heard_as_lines(
    mem: CampaignMemory,
    session_id: int,
    entity_id: int,
    phrases: Sequence[str],
    *,
    any_stage: bool = False,
    slice_size: int = 500,
) -> int:
    """Undo in the session's stored lines what ``phrases`` did as heard-as phrases of the entity ``entity_id``,
    which has them no longer: each stage-1 correction of such a span (spacing and punctuation aside) to the entity
    is dropped and the span judged again by the campaign's matcher as it is now (what it corrects there by sound,
    or as another entity's heard-as phrase, is corrected so again); the line's other corrections, of stage 1 or 2,
    stay, and its text is written again from the raw text. As :func:`correct_heard_as_lines`, the session's windows
    from the first line changed on are chunked and embedded again, and the entity's link to the session goes if its
    lines name it no longer, each with the lines that made it so (one transaction a slice). Returns how many lines
    changed; running it again changes none. ``any_stage``: stage 2's corrections of such a span, or of its plural,
    to the entity are dropped too (a phrase the DM says is never the name)."""
    from memory.correction.edits import merge_corrections
    from memory.correction.text import spaceless
    from memory.recorder import default_index_cache

    def undoes(c: Correction, undone: set[str]) -> bool:
        # A phrase never the name is not its plural either: stage 2 refuses that too (see _never_heard), and may
        # have made it the name before ("Kwellows" for "kwellow"; its span may hold the "s", stage 1's never does).
        if c.entity_id != entity_id:
            return False
        return _never_heard(c, {entity_id: undone}) if any_stage else spaceless(c.span) in undone

    def restore(e: Entry, undone: set[str], matcher: PhoneticMatcher) -> list[Correction]:
        # the line's corrections without those of ``undone``, each span judged again by ``matcher``
        freed = [c for c in e.corrections if (any_stage or c.stage == 1) and undoes(c, undone)]
        if not freed:
            return e.corrections
        again = matcher.correct(e.raw_text).corrections
        return merge_corrections(
            [c for c in e.corrections if c not in freed],
            [c for c in again if any(c.start < f.end and f.start < c.end for f in freed)],
        )

    if not (gone := {s for p in phrases if (s := spaceless(p))}):
        return 0
    async with mem.transaction() as tx:
        # after the revisions in progress: one by a writer that read the names before the DM's edit is listed too
        await tx.log.lock_revisions()
        ids = await tx.log.corrected_in(session_id, entity_id, list(phrases), any_stage=any_stage)
    changed = 0
    for start in range(0, len(ids), slice_size):
        async with mem.transaction() as tx:
            # The took-part link the restored lines no longer make goes with them, in this transaction: a job cut off
            # after they were written would, tried again, find them done and leave the link. So the graph's lock
            # comes first (see ``KnowledgeGraph.lock``: a merge takes it before it writes these lines).
            await tx.graph.lock()
            # locked as read: a stage-2 revision committed before this one writes must not be written over
            entries = await tx.log.entries(ids[start : start + slice_size], for_update=True)
            # The DM may have changed their mind since the job was queued (a phrase given back, a "never" taken
            # back), and the heard-as job may have corrected these lines so meanwhile: what is undone, and the
            # names they are judged by again, are read now, after the lock.
            now = await _phrases_now(tx, entity_id, any_stage=any_stage)
            undone = gone & now if any_stage else gone - now
            matcher = await default_index_cache.matcher(mem)
            restored = [restore(e, undone, matcher) for e in entries]
            if revised := await _revise(tx, session_id, entries, restored, after=":u"):
                # It took part in the session by its lines: if they named it only by the phrase, they name it no
                # longer. (Only here: a session the phrase changed nothing in keeps its links, whatever made them.)
                await unlink_unnamed(tx.graph, entity_id, session_id)
        changed += revised
    return changed


async def _revise(
    tx: CampaignMemory,
    session_id: int,
    entries: Sequence[Entry],
    corrections: Sequence[list[Correction]],
    *,
    after: str,
) -> int:
    """Write each of the session's ``entries`` (locked) whose ``corrections`` (one list each, in order) differ from
    its own: text again from the raw text. The windows from the first line changed on are chunked and embedded
    again, queued in the same transaction (a job cut off after writing the text would, tried again, find the lines
    done and queue nothing). Returns how many lines changed."""
    from memory.correction.edits import apply_corrections

    revised = []
    for e, merged in zip(entries, corrections, strict=True):
        if merged != e.corrections:
            await tx.log.revise(e.id, apply_corrections(e.raw_text, merged), merged)
            revised.append(e.seq)
    if revised:  # new text, new vectors
        await rewind_progress(tx.db, tx.campaign_id, session_id, CHUNK, min(revised))
        await enqueue_session_work(tx.db, tx.campaign_id, session_id, await _last_seq(tx, session_id), after=after)
    return len(revised)


async def _phrases_now(tx: CampaignMemory, entity_id: int, *, any_stage: bool) -> set[str]:
    """The entity's not-heard-as phrases (``any_stage``) or heard-as phrases as they are now, spaces removed as the
    matcher reads them; none if it was removed."""
    from memory.correction.text import spaceless

    if any_stage:
        return (await tx.graph.not_heard_as_of([entity_id])).get(entity_id, set())
    try:
        entity = await tx.graph.get_entity_by_id(entity_id)
    except NotFoundError:
        return set()
    return {spaceless(h) for h in entity.heard_as}


async def _last_seq(mem: CampaignMemory, session_id: int) -> int:
    return int(
        await mem.db.fetchval(
            "SELECT coalesce(max(seq), 0) FROM session_entries WHERE campaign_id = $1 AND session_id = $2",
            mem.campaign_id,
            session_id,
        )
    )


# the summary ---------------------------------------------------------------------------------------------------


class Recap(BaseModel):
    recap: str

    # a NUL or lone surrogate in the model's text would fail the summary job: such an answer is not used
    _storable = field_validator("recap")(classmethod(lambda cls, v: storable(without_hidden(v))))


_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")
#: A recap line quotes at most ``_LINE_WORDS`` words (a sentence or a few of one turn), one line for every
#: ``_TURNS_PER_LINE`` lines of the session, at most ``_MAX_LINES``: many short lines cover more of the story
#: than a few long ones of as many words (bench/recap.py). With the "Involved:" list a recap stays within the
#: 2,000 characters of the session event's description, well inside a Discord embed's 4,096.
_LINE_WORDS, _TURNS_PER_LINE, _MAX_LINES, _MAX_CHARS = 25, 200, 12, 2000
#: A sentence shorter than this ("All right.", "Okay, cool.") neither starts nor ends a line.
_SHORT = 4
#: What makes a line telling: each entity it names, its length (up to ``_LINE_WORDS`` words), the narrator.
_ENTITY, _NARRATOR = 1.0, 1.0


@dataclass(frozen=True, slots=True)
class _Line:
    score: float
    text: str


def _best_line(entry: Entry, mentions: Sequence[tuple[int, int, int]], narrator: bool) -> _Line | None:
    """The run of sentences of ``entry`` (at most ``_LINE_WORDS`` words, a longer sentence cut) that tells most:
    the entities it names, its length, and whether the narrator says it; none that asks, or talks rules or table
    business. A run starts and ends on a sentence of a few words ("All right." is no part of the story)."""
    text = entry.text
    if len(text.split()) < 5 or is_trivial(text):
        return None
    bounds = [0, *(m.end() for m in _SENTENCE_END.finditer(text)), len(text)]
    sentences = [(a, b) for a, b in itertools.pairwise(bounds) if len(text[a:b].split()) >= _SHORT]
    best: _Line | None = None
    for i, (start, _) in enumerate(sentences):
        for _, end in sentences[i:]:
            said = " ".join(text[start:end].split())
            words = len(said.split())
            if end != sentences[i][1] and words > _LINE_WORDS:
                break
            if said.endswith("?") or is_table_talk(said):
                break
            named = {entity for a, b, entity in mentions if a < end and b > start}
            score = _ENTITY * len(named) + min(words, _LINE_WORDS) / _LINE_WORDS + (_NARRATOR if narrator else 0.0)
            if best is None or score > best.score:
                best = _Line(score, said if words <= _LINE_WORDS else " ".join(said.split()[:_LINE_WORDS]) + "…")
    return best


_INVOLVED = "Involved: "


def extractive_summary(
    entries: Sequence[Entry],
    gazetteer: Gazetteer,
    names: dict[int, str],
    *,
    secret: Set[int] = frozenset(),
    dm_speaker_id: str | None = None,
) -> tuple[str, list[int]]:
    """A line for each part of the session, in story order, and the entities involved, most mentioned first.

    The session is cut into parts of equal length (one per 200 lines, 5 to 12), and each part gives its most
    telling line (:func:`_best_line`): the recap tells the story from its start to its end, not only where names
    crowd. The recap is the players' too: it names no ``secret`` entity, which may have been mentioned by an alias
    ("the old beggar") that is all they know of it. ``dm_speaker_id``: the user id of a recorded session's DM."""
    counts: Counter[int] = Counter()
    narrates = narrator(entries, dm_speaker_id)
    talk = out_of_game(entries, dm_speaker_id)  # the pre-show, breaks, sponsor reads and dice: never quoted
    found: dict[int, _Line] = {}
    for n, e in enumerate(entries):
        counts.update(gazetteer.mentioned_ids(e))
        if e.id in talk:
            continue
        mentions = [(a, b, entity.id) for a, b, entity in gazetteer.find(e.text, nested=True)]
        if line := _best_line(e, mentions, narrates(e)):
            found[n] = line
    parts = min(len(entries), _MAX_LINES, max(5, len(entries) // _TURNS_PER_LINE))
    said: dict[int, str] = {}
    for p in range(parts):
        part = [n for n in range(p * len(entries) // parts, (p + 1) * len(entries) // parts) if n in found]
        if part:
            best = max(part, key=lambda n: found[n].score)  # the first of equals
            said[best] = f"{entries[best].speaker}: {found[best].text}"
    involved = [i for i, _ in counts.most_common() if i in names]
    shown = [names[i] for i in involved if i not in secret]
    tail = [_INVOLVED + ", ".join(shown[:12])] if shown else []
    while len(said) > 1 and len("\n".join([*said.values(), *tail])) > _MAX_CHARS:  # long speakers' names
        del said[min(said, key=lambda n: found[n].score)]
    return "\n".join([*said.values(), *tail]), involved


def recap_for_players(summary: str, mask: SecretMask) -> str:
    """A session's summary as players may read it: secret names hidden, and gone from its "Involved:" list,
    which may name an entity made secret after the summary was written."""
    lines = []
    for line in mask(summary).splitlines():
        if line.startswith(_INVOLVED):
            shown = [n for n in line.removeprefix(_INVOLVED).split(", ") if n != mask.MASK]
            line = _INVOLVED + ", ".join(shown) if shown else ""
        if line:
            lines.append(line)
    return "\n".join(lines)


async def summarize_session(ctx: JobContext, campaign_id: int, session_id: int) -> str:
    """Write the session's recap, unless the one it has covers every line: a session ended again, however often
    and whichever of its summary jobs runs first, gets one recap, and another only once lines were added. (The
    summary's progress is the number of lines the recap covers: a late line may come before the last.)"""
    mem = ctx.memory.campaign(campaign_id)
    session = await mem.log.session(session_id)
    entries = await mem.log.session_entries(session_id)
    done = await _progress(mem.db, mem, session_id, SUMMARY)
    if session.summary is not None and done == len(entries):
        return session.summary
    entities = [e for e in await mem.graph.list_entities(status=None) if e.status == ReviewStatus.accepted]
    names = {e.id: e.name for e in entities if e.type != EntityType.event}
    secret = {e.id for e in entities if e.visibility == Visibility.secret}
    summary, involved = extractive_summary(
        entries, Gazetteer(entities), names, secret=secret, dm_speaker_id=session.dm_speaker_id
    )
    told = [e for e in entries if e.id not in out_of_game(entries, session.dm_speaker_id)]  # the story's lines
    if ctx.llm is not None and told:
        summary = await _abstractive(ctx.llm, by_role(told, session.dm_speaker_id), summary)
    # An entity's name has no invisible characters; a title may ("🧙‍♂️ Wizard night" holds a zero-width joiner).
    title = "".join(ch for ch in session.title if not unicodedata.category(ch).startswith("C"))
    async with mem.transaction() as tx:
        await tx.graph.lock()  # before any write: see ``KnowledgeGraph.lock``
        if not await _claim_progress(tx.db, tx, session_id, SUMMARY, done):  # another job wrote it meanwhile
            return (await tx.log.session(session_id)).summary or summary
        await _set_progress(tx.db, tx, session_id, SUMMARY, len(entries))
        await tx.log.set_summary(session_id, summary)
        event, _, _ = await tx.graph.upsert_entity(
            EntityIn(
                name=f"Session: {title}"[:200],  # an entity name's limit; titles may be file names
                type=EntityType.event,
                description=without_hidden(summary[:2000]),  # a recap is the model's text: see without_hidden
                provenance=Provenance(source=Source.inferred, confidence=1.0, session_id=session_id),
            )
        )
        for entity_id in involved:
            await tx.graph.ensure_relationship(took_part(entity_id, event.id, session_id))
        # accepted while the recap was being written: their own look found no recap yet, and this one's list of
        # who took part was read before them
        late = {e.id for e in await tx.graph.list_entities()} - {e.id for e in entities}
        await link_to_recaps(tx.graph, late)
    return summary


#: The LLM recap's length cap in tokens: eight sentences come to a few hundred, and a recap has Discord's
#: 2,000-character message in mind (about 500 tokens; invented names cost more). A recap cut off here is
#: unusable: the extractive summary stands.
RECAP_MAX_TOKENS = 800


async def _abstractive(llm: LLMClient, entries: Sequence[Entry], fallback: str) -> str:
    """The LLM's recap of ``entries``, its speakers named by role (see :func:`by_role`): a player calling themself
    "DM" must not narrate the session to the model."""
    from memory.providers.llm import LLMError

    transcript = "\n".join(f"{e.speaker}: {e.text}" for e in entries)[-24000:]
    try:
        answer = await llm.complete_json(
            system="You write a short recap (at most 8 sentences, under 1,500 characters) of a tabletop RPG "
            "session for its players. Only state what the transcript says.",
            user=transcript,
            schema=Recap,
            max_tokens=RECAP_MAX_TOKENS,
        )
    except LLMError as exc:
        log.warning("LLM recap failed (%s); keeping the extractive summary", exc)
        return fallback
    return answer.recap.strip() or fallback


# workers -------------------------------------------------------------------------------------------------------


def _job_args(job: pgq_models.Job) -> tuple[int, int]:
    data = json.loads(job.payload or b"{}")
    return int(data["campaign_id"]), int(data["session_id"])


def _restoration_args(job: pgq_models.Job) -> dict[str, Any]:
    """The entity and phrases of a :data:`UNHEARD` job."""
    data = json.loads(job.payload or b"{}")
    phrases = data["phrases"]
    if not isinstance(phrases, list) or not all(isinstance(p, str) for p in phrases):
        raise ValueError("phrases: a list of text expected")
    return {"entity_id": int(data["entity_id"]), "phrases": phrases, "any_stage": bool(data.get("any_stage"))}


async def _session_exists(db: Executor, campaign_id: int, session_id: int) -> bool:
    return bool(
        await db.fetchval(
            "SELECT EXISTS (SELECT 1 FROM sessions WHERE campaign_id = $1 AND id = $2)", campaign_id, session_id
        )
    )


#: A session's summary waits for the session's chunk, extract, stage-2 and heard-as jobs (the names stage 2 and
#: heard-as phrases restore and the links extraction files belong in the recap), looking again every few seconds,
#: but for half an hour at most: then it summarises what is there.
_SUMMARY_RECHECK = timedelta(seconds=3)
_SUMMARY_MAX_WAIT = timedelta(minutes=30)


async def _summary_put_off(pool: asyncpg.Pool, job: pgq_models.Job, campaign_id: int, session_id: int) -> bool:
    """Whether the summary ``job`` is put off: another summary job of its session is queued (it reads every line
    when it runs), or its session still has work queued or running, so a summary job a few seconds later takes
    its place (no worker slot is held while it waits)."""
    since = json.loads(job.payload or b"{}").get("waiting_since") or job.created.isoformat()
    of_session = """
        convert_from(payload, 'UTF8')::jsonb ->> 'campaign_id' = $2::bigint::text
        AND convert_from(payload, 'UTF8')::jsonb ->> 'session_id' = $3::bigint::text"""
    if await pool.fetchval(
        f"SELECT EXISTS (SELECT 1 FROM pgqueuer WHERE entrypoint = $1 AND status = 'queued' AND {of_session})",
        SUMMARY,
        campaign_id,
        session_id,
    ):
        return True
    waiting = await pool.fetchval(
        f"""
        SELECT now() - $4::text::timestamptz < $5::interval AND EXISTS (
            SELECT 1 FROM pgqueuer WHERE entrypoint = ANY($1::text[]) AND status IN ('queued', 'picked')
              AND {of_session})
        """,
        [CHUNK, EXTRACT, CORRECT2, HEARD, UNHEARD],
        campaign_id,
        session_id,
        since,
        _SUMMARY_MAX_WAIT,
    )
    if waiting:
        await _queries(pool).enqueue(
            [SUMMARY],
            [_payload(campaign_id, session_id, waiting_since=since)],
            [0],
            execute_after=[_SUMMARY_RECHECK],
            dedupe_key=[f"{SUMMARY}:{session_id}:after:{job.id}"],  # this job run again adds no second one
            on_conflict="skip",
        )
    return bool(waiting)


class BadJobError(Exception):
    """A job failed for a reason other than an outage (its data, a bug): running it again fails the same way,
    so it is not run again at a worker start. The original error is its cause, in the job's logged traceback."""


#: What is away, not wrong: the LLM, the database or the network. A job that failed on one of these is worth
#: running again later.
_OUTAGES: tuple[type[BaseException], ...] = (
    OSError,  # connections refused or reset, timeouts
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,  # the connection closed under the query
    asyncpg.InternalClientError,  # a pooled connection whose server said goodbye, its closed socket not yet seen
    asyncpg.exceptions.OperatorInterventionError,  # the server shutting down or starting up
    asyncpg.exceptions.InsufficientResourcesError,  # too many connections, disk full
    asyncpg.exceptions.TransactionRollbackError,  # a deadlock or serialization failure lost
)


def is_outage(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:  # wrapped errors count by what they wrap
        if isinstance(current, (*_OUTAGES, Unavailable)):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


#: Six tries over about a minute ride out a restarting database or LLM.
_MAX_ATTEMPTS = 6
_RETRY_DELAYS = (timedelta(seconds=2), timedelta(seconds=30))  # the first and the longest


class _RetryOutages(DatabaseRetryEntrypointExecutor):
    """pgqueuer's retries with backoff, for outages only: a :class:`BadJobError` would fail the same way every
    time, so it is held at once instead of delaying a drain by a minute of tries."""

    async def execute(self, job: pgq_models.Job, context: pgq_models.Context) -> None:
        try:
            await super().execute(job, context)
        except pgq_errors.RetryRequested as retry:
            if isinstance(retry.__cause__, BadJobError):  # the base class turns every error into a retry
                raise retry.__cause__ from retry.__cause__.__cause__
            raise


def build_queue_manager(pool: asyncpg.Pool, ctx: JobContext) -> QueueManager:
    qm = QueueManager(Queries(AsyncpgPoolDriver(pool)))

    def register(name: str, fn: Any) -> None:
        async def run(job: pgq_models.Job) -> None:
            try:
                campaign_id, session_id = _job_args(job)
                extra = _restoration_args(job) if name == UNHEARD else {}
            except (ValueError, KeyError, TypeError) as exc:
                raise BadJobError(f"unreadable payload {job.payload!r}") from exc
            try:
                if await _session_exists(pool, campaign_id, session_id):
                    if name == SUMMARY and await _summary_put_off(pool, job, campaign_id, session_id):
                        return
                    await fn(ctx, campaign_id, session_id, **extra)
                    return
            except Exception as exc:
                if is_outage(exc):
                    raise
                if await _session_exists(pool, campaign_id, session_id):
                    raise BadJobError(f"{type(exc).__name__}: {exc}") from exc
            # Its campaign (or the session, one nothing was said in) was deleted before or while it ran.
            log.info(
                "%s job %s skipped: session %d of campaign %d no longer exists", name, job.id, session_id, campaign_id
            )

        # One job per kind at a time across all workers: jobs of a kind on the same session would only redo
        # each other's work, and extraction must not race itself creating the same new entity.
        # Outages retry with backoff, then stay visible as 'failed' instead of vanishing; one held after an
        # outage runs again at the next worker start (``requeue_failed``).
        qm.register_executor(
            name,
            _RetryOutages(
                EntrypointExecutorParameters(concurrency_limit=1, func=run, on_failure="hold"),
                max_attempts=_MAX_ATTEMPTS,
                initial_delay=_RETRY_DELAYS[0],
                max_delay=_RETRY_DELAYS[1],
            ),
        )

    register(CHUNK, chunk_session)
    register(EXTRACT, extract_session)
    register(CORRECT2, correct_stage2)
    register(SUMMARY, summarize_session)
    register(HEARD, correct_heard_as)
    register(UNHEARD, restore_heard_as)
    return qm


def make_job_context(memory: Memory, settings: Any) -> JobContext:
    from memory.providers.embeddings import make_embedder

    api_key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    embedder = make_embedder(
        settings.embedding_provider,
        settings.embedding_model,
        settings.openai_base_url,
        api_key,
        settings.embedding_dim,
    )
    llm = None
    if settings.llm_enabled:
        from memory.providers.llm import OpenAILLM

        llm = OpenAILLM(settings.openai_base_url, api_key, settings.llm_model, timeout=settings.llm_timeout)
    return JobContext(memory=memory, embedder=embedder, embedding_model=settings.embedding.model, llm=llm)


#: A worker waits for a database that went away (a restart, a failover) as long as it takes, trying again at
#: most every 30 s.
_RECONNECT = Backoff(initial=1.0, maximum=30.0, tries=None)


async def run_workers(
    pool: asyncpg.Pool,
    settings: Any,
    stop_event: asyncio.Event | None = None,
    *,
    drain: bool = False,
    heartbeat_timeout: timedelta = timedelta(seconds=30),
    ctx: JobContext | None = None,
) -> JobContext:
    """Process jobs in this process until ``stop_event`` is set (or, with ``drain``, until the queue is empty).

    A job picked by a worker that died is picked again once its heartbeat is ``heartbeat_timeout`` old. When the
    database goes away, a worker that runs until stopped waits for it and carries on (the pool reconnects); a
    drain raises the error, for its caller to say "run it again" (no job is lost either way). At its start (and
    daily, one that runs until stopped) it prunes the queue's log: :func:`prune_job_log`."""
    ctx = ctx or make_job_context(Memory(pool, accept_threshold=settings.accept_threshold), settings)
    stop = stop_event or asyncio.Event()
    failures = 0
    while not stop.is_set():
        try:
            if requeued := await requeue_failed(pool):
                log.warning("%d background jobs that had failed run again", requeued)
            await _prune_job_log_quietly(pool)
            if failures:
                log.warning("the database is back: background jobs go on")
                failures = 0
            await _run_queue(pool, build_queue_manager(pool, ctx), stop, drain, heartbeat_timeout)
            break
        except Exception as exc:
            if drain or not is_outage(exc):
                raise
            if stop.is_set():
                break
            if not failures:
                log.warning("%s (%s): background jobs wait for it", outage_said(exc)[0], short_reason(exc))
            failures += 1
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), _RECONNECT.delay(failures))
    return ctx


async def _run_queue(
    pool: asyncpg.Pool, qm: QueueManager, stop: asyncio.Event, drain: bool, heartbeat_timeout: timedelta
) -> None:
    async def stop_when_told() -> None:
        await stop.wait()
        qm.shutdown.set()

    async def prune_daily() -> None:  # the bot's worker runs for months
        while True:
            await asyncio.sleep(_PRUNE_EVERY.total_seconds())
            await _prune_job_log_quietly(pool)

    helpers = [asyncio.create_task(stop_when_told())] + ([] if drain else [asyncio.create_task(prune_daily())])
    try:
        await qm.run(
            mode=QueueExecutionMode.drain if drain else QueueExecutionMode.continuous,
            batch_size=4,
            heartbeat_timeout=heartbeat_timeout,
            dequeue_timeout=timedelta(seconds=5),
        )
    finally:
        for helper in helpers:
            helper.cancel()


#: How long the queue's own log is kept: ``pgqueuer_log`` (a row each time a job is queued, finished or
#: failed: thousands a session, never deleted by pgqueuer) and the per-second counts pgqueuer folds it into
#: (``pgqueuer_statistics``). Nothing of ours reads them but the last error of a held job, kept while it is held.
JOB_LOG_KEPT = timedelta(days=30)
_PRUNE_EVERY = timedelta(days=1)
_PRUNE_BATCH = 10_000


async def prune_job_log(db: Executor, older_than: timedelta = JOB_LOG_KEPT) -> int:
    """Delete the queue's log rows and counts older than ``older_than``, but not the log of a job still in the
    queue (waiting, running or held); returns how many log rows went. In batches on the log's index of
    ``created``: the first prune of a database that ran for years holds no long transaction."""
    pruned = 0
    while True:
        status = await db.execute(
            """
            DELETE FROM pgqueuer_log WHERE id IN (
                SELECT l.id FROM pgqueuer_log l
                WHERE l.created < now() - $1::interval
                  AND NOT EXISTS (SELECT 1 FROM pgqueuer j WHERE j.id = l.job_id)
                LIMIT $2
            )
            """,
            older_than,
            _PRUNE_BATCH,
        )
        deleted = int(status.split()[-1])
        pruned += deleted
        if deleted < _PRUNE_BATCH:
            break
    await db.execute("DELETE FROM pgqueuer_statistics WHERE created < now() - $1::interval", older_than)
    if pruned:
        log.info("pruned %d rows of the job log older than %d days", pruned, older_than.days)
    return pruned


async def _prune_job_log_quietly(pool: asyncpg.Pool) -> None:
    """Housekeeping never stops the jobs: a prune that failed is said, and the next one catches up."""
    try:
        await prune_job_log(pool)
    except Exception as exc:
        log.warning("could not prune the job log (%s)", short_reason(exc))


def short_reason(exc: BaseException) -> str:
    """What started an outage, in one line: the first outage error of the chain (later ones are often cleanup
    failing on the dead connection), the first line of its message."""
    exc = _first_outage(exc)
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def outage_said(exc: BaseException) -> tuple[str, str]:
    """What is away, as the DM reads it, and what to do before trying again: a full disk is not waited out."""
    if isinstance(_first_outage(exc), asyncpg.exceptions.DiskFullError):
        return "the database's disk is full", "free some space on it, then "
    return "the database stopped or cannot be reached", ""


def _first_outage(exc: BaseException) -> BaseException:
    chain = [exc]
    while (earlier := chain[-1].__cause__ or chain[-1].__context__) is not None and earlier not in chain:
        chain.append(earlier)
    return next((e for e in reversed(chain) if isinstance(e, (*_OUTAGES, Unavailable))), chain[-1])


#: A job's campaign is in its payload (``$2``; NULL: every campaign's).
_OF_CAMPAIGN = "AND ($2::bigint IS NULL OR convert_from(payload, 'UTF8')::jsonb ->> 'campaign_id' = $2::text)"
#: ... and of a guild's campaigns only (``$3``; NULL: every guild's). An admin command of one guild must not see or
#: touch another guild's jobs, whose payload, title and error text name that guild's campaign.
_OF_GUILD = """AND ($3::bigint IS NULL OR convert_from(payload, 'UTF8')::jsonb ->> 'campaign_id' IN (
    SELECT g.id::text FROM campaigns g WHERE g.guild_id = $3))"""


async def pending_jobs(db: Executor, campaign_id: int | None = None) -> int:
    """Jobs of ours still queued or running (of one campaign when given)."""
    return int(
        await db.fetchval(
            f"""
            SELECT count(*) FROM pgqueuer
            WHERE entrypoint = ANY($1::text[]) AND status IN ('queued', 'picked') {_OF_CAMPAIGN}
            """,
            list(ENTRYPOINTS),
            campaign_id,
        )
    )


#: The last failure pgqueuer logged for the held job ``f``. It logs the error as JSON text, which our pool's jsonb
#: codec encodes once more: a string.
_LAST_FAILURE = """
    SELECT CASE jsonb_typeof(l.traceback) WHEN 'string' THEN (l.traceback #>> '{}')::jsonb ELSE l.traceback END
    FROM pgqueuer_log l WHERE l.job_id = f.id AND l.status = 'failed'
    ORDER BY l.created DESC, l.id DESC LIMIT 1
"""


async def requeue_failed(
    pool: asyncpg.Pool, campaign_id: int | None = None, *, bad_data: bool = False, guild_id: int | None = None
) -> int:
    """Put held jobs (of one campaign when given) back in the queue; returns how many. Every job resumes from its
    session's progress, so running one again does no harm. Of such jobs with the same dedupe key, or one already
    waiting, one runs. Only jobs held after an outage (their tries ran out while the database or the LLM was
    away) unless ``bad_data``: one whose last failure was a :class:`BadJobError` would only fail again, at every
    worker start, until the code or the data is fixed (the operator's ``lorekeeper jobs retry``). ``guild_id``
    limits them to that guild's campaigns."""
    held = f"""
        SELECT f.id, f.dedupe_key FROM pgqueuer f
        WHERE f.entrypoint = ANY($1::text[]) AND f.status = 'failed' {_OF_CAMPAIGN} {_OF_GUILD}
          AND ($4::text IS NULL OR ({_LAST_FAILURE}) ->> 'exception_type' IS DISTINCT FROM $4)
    """
    args = (list(ENTRYPOINTS), campaign_id, guild_id, None if bad_data else BadJobError.__name__)
    async with pool.acquire() as conn, conn.transaction():
        ids = [
            row["id"]
            for row in await conn.fetch(
                f"""
                SELECT DISTINCT ON (coalesce(f.dedupe_key, f.id::text)) f.id FROM ({held}) f
                WHERE NOT EXISTS (
                    SELECT 1 FROM pgqueuer w WHERE w.dedupe_key = f.dedupe_key AND w.status IN ('queued', 'picked'))
                ORDER BY coalesce(f.dedupe_key, f.id::text), f.id DESC
                """,
                *args,
            )
        ]
        await conn.execute(
            f"DELETE FROM pgqueuer WHERE id IN (SELECT id FROM ({held}) f) AND NOT id = ANY($5)", *args, ids
        )
        if ids:
            await Queries.from_asyncpg_connection(conn).requeue_jobs(ids)
    return len(ids)


class HeldJob(BaseModel):
    """A job held after its last try, as ``lorekeeper jobs list`` shows it."""

    id: int
    kind: str
    campaign_id: int | None
    campaign: str | None
    session_id: int | None
    session: str | None
    failed_at: datetime
    error: str
    on_its_data: bool  # held at once, and not run again at a worker start


async def held_jobs(db: Executor, campaign_id: int | None = None, *, guild_id: int | None = None) -> list[HeldJob]:
    """Jobs of ours held after their last try (of one campaign, or of one guild's campaigns, when given), oldest
    first, with their last error."""
    rows = await db.fetch(
        f"""
        SELECT f.id, f.entrypoint, f.updated, c.id AS campaign_id, c.name AS campaign,
               s.id AS session_id, s.title AS session, ({_LAST_FAILURE}) AS failure
        FROM pgqueuer f
        CROSS JOIN LATERAL (SELECT convert_from(f.payload, 'UTF8')::jsonb AS p) j
        LEFT JOIN campaigns c ON c.id::text = j.p ->> 'campaign_id'
        LEFT JOIN sessions s ON s.campaign_id = c.id AND s.id::text = j.p ->> 'session_id'
        WHERE f.entrypoint = ANY($1::text[]) AND f.status = 'failed' {_OF_CAMPAIGN} {_OF_GUILD}
        ORDER BY f.id
        """,
        list(ENTRYPOINTS),
        campaign_id,
        guild_id,
    )
    held = []
    for r in rows:
        failure = r["failure"] or {}
        kind, message = failure.get("exception_type", "unknown error"), failure.get("exception_message", "")
        held.append(
            HeldJob(
                id=r["id"],
                kind=r["entrypoint"].removeprefix("lk_"),
                campaign_id=r["campaign_id"],
                campaign=r["campaign"],
                session_id=r["session_id"],
                session=r["session"],
                failed_at=r["updated"],
                # A BadJobError's message already names the error it wraps.
                error=message if kind == BadJobError.__name__ else f"{kind}: {message}",
                on_its_data=kind == BadJobError.__name__,
            )
        )
    return held


async def failed_jobs(db: Executor, campaign_id: int | None = None) -> int:
    """Jobs of ours held after their last try (of one campaign when given)."""
    return int(
        await db.fetchval(
            f"SELECT count(*) FROM pgqueuer WHERE entrypoint = ANY($1::text[]) AND status = 'failed' {_OF_CAMPAIGN}",
            list(ENTRYPOINTS),
            campaign_id,
        )
    )


async def delete_campaign_jobs(conn: Executor, campaign_id: int, session_id: int | None = None) -> int:
    """Forget a deleted campaign's (or session's) waiting and held jobs, in its delete's transaction; returns how
    many. A job running now is left to its worker, which finds the session gone and skips it."""
    status = await conn.execute(
        """
        DELETE FROM pgqueuer WHERE entrypoint = ANY($1::text[]) AND status IN ('queued', 'failed')
          AND convert_from(payload, 'UTF8')::jsonb ->> 'campaign_id' = $2::bigint::text
          AND ($3::bigint IS NULL OR convert_from(payload, 'UTF8')::jsonb ->> 'session_id' = $3::bigint::text)
        """,
        list(ENTRYPOINTS),
        campaign_id,
        session_id,
    )
    return int(status.split()[-1])


async def wait_until_idle(
    pool: asyncpg.Pool, *, campaign_id: int | None = None, deadline_s: float | None = None
) -> None:
    """Return once no job of ours is queued or running, woken by the queue's own NOTIFYs (a slow re-check
    covers a missed one); raises ``TimeoutError`` after ``deadline_s`` seconds."""
    changed = asyncio.Event()

    def wake(*_: object) -> None:
        changed.set()

    async with asyncio.timeout(deadline_s), pool.acquire() as conn:
        await conn.add_listener(_QUEUE_CHANNEL, wake)
        try:
            while await pending_jobs(conn, campaign_id):
                changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), 2.0)
        finally:
            await conn.remove_listener(_QUEUE_CHANNEL, wake)
