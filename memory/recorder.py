"""The session recorder: utterances in, corrected L1 rows out, background jobs enqueued with them.

Each batch is one transaction: the L1 rows and the jobs that will chunk, embed and extract them commit together,
so a crash can lose neither a line nor the work owed on it.
"""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import date

from pydantic import BaseModel, Field, field_validator

from memory.correction import EntityName, PhoneticIndex, PhoneticMatcher
from memory.correction.edits import apply_corrections
from memory.correction.text import align_confidences, tokenize
from memory.db import Executor
from memory.jobs.queue import CHUNK, EXTRACT, enqueue_session_work, enqueue_summary, rewind_progress
from memory.models import PERSON_TYPES, Entity, EntryIn, Session, Visibility, start_of
from memory.store import CampaignMemory
from memory.text import MAX_SPEAKER_CHARS, MAX_TEXT_BYTES, seconds, storable, without_bidi_controls


def _spoken(value: object) -> object:
    """What was said (a transcript's line, a recognised word) without its bidi overrides and isolates
    (:func:`without_bidi_controls`): one stray control is no reason to skip the line, as a name with one is refused,
    but kept it would reorder the line wherever it is shown. NFC, as names are: a line written decomposed ("Mórwen"
    as o and ◌́, as macOS or a recogniser may write it) would be found by no search, index no mention and correct
    no name."""
    return unicodedata.normalize("NFC", without_bidi_controls(value)) if isinstance(value, str) else value


class Word(BaseModel):
    word: str
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)  # a probability, as every STT gives it

    _storable = field_validator("word", "confidence")(classmethod(lambda cls, v: storable(v)))
    _no_bidi = field_validator("word", mode="before")(classmethod(lambda cls, v: _spoken(v)))


class Utterance(BaseModel):
    """One thing said; refused here if the database could not keep it (a NUL, a time that is no number, a text or
    speaker too long to index) or its time is before the session's start, so a bad line of a transcript is skipped
    instead of failing the whole import when it is written (or sorting before the session's first line)."""

    speaker: str
    text: str
    speaker_id: str | None = None
    start_s: float = 0.0
    end_s: float | None = None
    words: list[Word] | None = None  # STT words with confidences, in order
    ref: str | None = None
    seq: int | None = None  # position in the session; files give it so a re-ingest lands on the same rows

    _storable = field_validator("speaker", "text", "speaker_id", "start_s", "end_s", "ref")(
        classmethod(lambda cls, v: storable(v))
    )
    _seconds = field_validator("start_s", "end_s")(classmethod(lambda cls, v: seconds(v)))
    _no_bidi = field_validator("speaker", "text", mode="before")(classmethod(lambda cls, v: _spoken(v)))

    @field_validator("speaker")
    @classmethod
    def _speaker_fits(cls, v: str) -> str:
        if len(v) > MAX_SPEAKER_CHARS:
            raise ValueError(f"is {len(v):,} characters long, longer than {MAX_SPEAKER_CHARS}")
        return v

    @field_validator("text")
    @classmethod
    def _text_fits(cls, v: str) -> str:
        if (size := len(v.encode())) > MAX_TEXT_BYTES:
            raise ValueError(f"is {size:,} bytes long, longer than {MAX_TEXT_BYTES:,}")
        return v


@dataclass(slots=True)
class _Prepared:
    version: tuple[object, ...]
    matcher: PhoneticMatcher


async def names_version(db: Executor, campaign_id: int) -> tuple[object, ...]:
    """Changes whenever what speech is corrected towards, or what the speech recogniser is prompted with, may have
    changed: a cheap aggregate (count and last change of accepted entities, aliases, heard-as phrases and pins),
    read before the entities are. The one query of the correction index and the live STT prompt."""
    row = await db.fetchrow(
        """
        SELECT count(*) FILTER (WHERE status = 'accepted') AS n, max(updated_at) AS changed,
               (SELECT count(*) FROM entity_aliases WHERE campaign_id = $1) AS aliases,
               (SELECT count(*) FROM entity_heard_as WHERE campaign_id = $1) AS heard,
               (SELECT count(*) FROM entity_not_heard_as WHERE campaign_id = $1) AS not_heard
        FROM entities WHERE campaign_id = $1
        """,
        campaign_id,
    )
    # Changing the aliases, heard-as phrases or pin of an entity changes its ``updated_at`` too: a list replaced by
    # one as long is seen.
    return (row["n"], row["changed"], row["aliases"], row["heard"], row["not_heard"])


class CorrectionIndexCache:
    """One prepared phonetic index per campaign, rebuilt only when the campaign's entities change.

    The version is a cheap aggregate (count and last change of entities, aliases and heard-as phrases): one small
    query per batch instead of rebuilding the index, which costs milliseconds per hundred names."""

    def __init__(self) -> None:
        self._prepared: dict[int, _Prepared] = {}

    async def matcher(self, mem: CampaignMemory) -> PhoneticMatcher:
        version = await names_version(mem.db, mem.campaign_id)
        prepared = self._prepared.get(mem.campaign_id)
        if prepared is None or prepared.version != version:
            # Only accepted entities: correcting speech towards an unreviewed guess would spread the guess.
            entities = [e for e in await mem.graph.list_entities(status=None) if e.status.value == "accepted"]
            names = [n for e in entities for n in _names_said(e)]
            prepared = _Prepared(version, PhoneticMatcher(PhoneticIndex.build(names)))
            self._prepared[mem.campaign_id] = prepared
        return prepared.matcher


def _names_said(entity: Entity) -> list[EntityName]:
    """What speech is corrected towards. An alias is written as its entity's name, unless the entity is secret:
    players read the transcript, and "the pale magistor" must become The Pale Magister, not the secret name
    behind it (which is corrected only where it was said). What the DM says the recogniser writes for the name
    (``heard_as``) becomes the name, a secret one too: players read it masked, as they read the name said."""
    never = entity.not_heard_as  # what the DM says is never the name: of each of them
    person = entity.type in PERSON_TYPES  # called by the last name alone too
    if entity.visibility != Visibility.secret:
        return [
            EntityName(
                id=entity.id,
                name=entity.name,
                aliases=entity.aliases,
                heard_as=entity.heard_as,
                not_heard_as=never,
                person=person,
            )
        ]
    return [EntityName(id=entity.id, name=entity.name, heard_as=entity.heard_as, not_heard_as=never, person=person)] + [
        EntityName(id=entity.id, name=alias, not_heard_as=never) for alias in entity.aliases
    ]


#: Shared by every recorder in the process: a bot records many sessions of few campaigns.
default_index_cache = CorrectionIndexCache()


class SessionRecorder:
    """Records one session. ``add`` buffers; a full buffer, ``flush`` and ``end`` write it.

    ``batch_size`` trades latency against throughput: a live voice session flushes small batches (or on a
    timer, via ``max_delay_s``), a transcript import large ones."""

    def __init__(
        self,
        mem: CampaignMemory,
        session: Session,
        *,
        batch_size: int = 200,
        max_delay_s: float = 2.0,
        index_cache: CorrectionIndexCache | None = None,
        stage2: bool = False,
        cast: Callable[[float], AbstractSet[int]] | None = None,
    ) -> None:
        self.mem = mem
        self.session = session
        self.batch_size = batch_size
        self.max_delay_s = max_delay_s
        self.index_cache = index_cache or default_index_cache
        self.stage2 = stage2  # an LLM is configured: enqueue correction stage 2 too
        #: The session's cast for a line said that many seconds in (entity ids): a name the recogniser writes that
        #: sounds like a cast member's is theirs (``PhoneticMatcher.correct``). The speech prompt's first tier.
        self.cast = cast
        self._buffer: list[Utterance] = []
        self._oldest: float | None = None
        self.written = 0  # entries new to L1 (a replayed line is not counted)
        self.corrections = 0
        self._started_at: date | None = None  # a correction of an existing session's date, made at ``end``
        #: The words of the speakers' names so far: the table calls its players by name, never a misheard entity.
        self._people: set[str] = set()

    @classmethod
    async def start(
        cls, mem: CampaignMemory, title: str, *, started_at: date | None = None, **kwargs: object
    ) -> SessionRecorder:
        """Open the session titled ``title`` (created if new, reused if it exists: imports resume); ``started_at``
        is when it was played, if not now (an import of an old one; given again, it corrects an earlier import; a
        ``date``: that day alone)."""
        session = await mem.log.session_by_title(title)
        if session is None:
            session = await mem.log.start_session(title, started_at=started_at)
        recorder = cls(mem, session, **kwargs)  # type: ignore[arg-type]
        if started_at is not None and (session.started_at, session.date_only) != start_of(started_at):
            # once its lines are in: an import refused for them (another file of the same name) changes nothing
            recorder._started_at = started_at
        return recorder

    async def add(self, utterance: Utterance) -> None:
        if not self._buffer:
            self._oldest = time.monotonic()
        self._buffer.append(utterance)
        if len(self._buffer) >= self.batch_size or (
            self._oldest is not None and time.monotonic() - self._oldest >= self.max_delay_s
        ):
            await self.flush()

    async def add_many(self, utterances: Sequence[Utterance]) -> None:
        for u in utterances:
            await self.add(u)

    async def flush(self) -> int:
        """Correct and write the buffered utterances with their jobs in one transaction; returns new entries."""
        if not self._buffer:
            return 0
        batch, self._buffer, self._oldest = self._buffer, [], None
        matcher = await self.index_cache.matcher(self.mem)
        rows: list[EntryIn] = []
        self._people.update(t.norm for u in batch for t in tokenize(u.speaker))
        for u in batch:
            confidences = None
            if u.words:
                words: list[tuple[str, float | None]] = [
                    (w.word, w.confidence) for w in u.words if w.confidence is not None
                ]
                confidences = align_confidences(u.text, tokenize(u.text), words) if words else None
            cast = self.cast(u.start_s) if self.cast else frozenset()
            result = matcher.correct(u.text, confidences, cast, self._people)
            rows.append(
                EntryIn(
                    speaker=u.speaker,
                    speaker_id=u.speaker_id,
                    raw_text=u.text,
                    text=apply_corrections(u.text, result.corrections),
                    start_s=u.start_s,
                    end_s=u.end_s,
                    seq=u.seq,
                    ref=u.ref,
                    corrections=result.corrections,
                    suspects=result.suspects if self.stage2 else [],
                    # kept only where the stage-2 job will look: its verify step reads the recogniser's doubt
                    confidences=confidences if self.stage2 and result.suspects else None,
                )
            )
        async with self.mem.transaction() as tx:
            stored = await self._stored_seqs(tx, rows)
            new = len(rows) - len(stored)
            written = await tx.log.write_many(self.session.id, rows)
            if new:
                # A line arriving after later ones were extracted (a fixed line re-imported) must not be skipped:
                # extraction and chunking resume from it (re-reading the rest is harmless: both are idempotent).
                for step in (EXTRACT, CHUNK):
                    await rewind_progress(tx.db, self.mem.campaign_id, self.session.id, step, written[0].seq)
                # Dedupe keys name the batch's last seq: replaying a batch whose jobs are still queued adds none.
                await enqueue_session_work(
                    tx.db, self.mem.campaign_id, self.session.id, written[-1].seq, stage2=self.stage2
                )
        self.written += new
        # of the new lines only: a line stored before keeps its text, so a file imported again corrects nothing
        self.corrections += sum(len(r.corrections) for r in rows if r.seq is None or r.seq not in stored)
        return new

    async def _stored_seqs(self, tx: CampaignMemory, rows: Sequence[EntryIn]) -> set[int]:
        """The seqs of ``rows`` the session holds already (a replay: they are not written again)."""
        seqs = [r.seq for r in rows if r.seq is not None]
        if len(seqs) < len(rows):
            return set()  # unsequenced rows are always appended
        existing = await tx.db.fetch(
            "SELECT seq FROM session_entries WHERE campaign_id = $1 AND session_id = $2 AND seq = ANY($3)",
            self.mem.campaign_id,
            self.session.id,
            seqs,
        )
        return {r["seq"] for r in existing}

    async def end(self) -> Session:
        """Flush, close the session and enqueue its summary (which waits for the session's other jobs)."""
        await self.flush()
        if self._started_at is not None:
            self.session = await self.mem.log.set_started(self.session.id, self._started_at)
        # the same file imported again into its ended, summarised session: a summary job would redo the same recap
        resummarise = bool(self.written) or self.session.ended_at is None or self.session.summary is None
        async with self.mem.transaction() as tx:
            session = await tx.log.end_session(self.session.id)
            if resummarise:
                await enqueue_summary(tx.db, self.mem.campaign_id, self.session.id)
        self.session = session
        return session
