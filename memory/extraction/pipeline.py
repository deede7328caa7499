"""The seam the ingestion jobs call: salience gate → extractor → validation → dedup → L3 with provenance.

Idempotent: entities dedup by name, alias and spelling (see ``names``), identical current facts are not stored
twice (``KnowledgeGraph.ensure_relationship``), and a fact or entity the DM rejected is not proposed again.

Lines an LLM answered nonsense about are read by the rule extractor instead, and what it finds there waits for
the DM's review: a badly chosen model must not leave a campaign's lines without facts, unnoticed.
"""

from __future__ import annotations

import logging
import unicodedata
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memory.errors import AlreadyExistsError, InvalidInputError
from memory.extraction.events import (
    NEAR_MISSES,
    PROTOTYPES,
    Event,
    EventKind,
    Sentence,
    meaning_sentences,
    meant_events,
    narration,
    said_whole,
    scene_arrivals,
    told_now,
)
from memory.extraction.evidence import End, evidence_gap
from memory.extraction.llm import LLMExtractor
from memory.extraction.names import NameResolver, normalize_name
from memory.extraction.rules import RuleExtractor, whereabouts
from memory.extraction.salience import is_trivial
from memory.extraction.schema import (
    ExtractionResult,
    ExtractionStats,
    Extractor,
    KnownEntity,
    ProposedEntity,
    ProposedFact,
    players,
)
from memory.extraction.validate import validate_result
from memory.gazetteer import Gazetteer, of_mentions
from memory.graph import KnowledgeGraph
from memory.graph.rules import stated_as
from memory.models import EntityIn, EntityType, Entry, Provenance, RelationshipIn, ReviewStatus, Source
from memory.offgame import Talk, line_talk, narrator, out_of_game
from memory.providers.embeddings import Embedder, MiniLMEmbedder
from memory.providers.llm import LLMClient
from memory.store import CampaignMemory

log = logging.getLogger(__name__)

#: The lines from the game's start that may hold the DM's recap, broken up by the players' banter. On the CRD3 dev
#: episodes its turning points came up to 12 lines after the start, those in play 42 lines after it at the earliest.
RECAP_LINES = 30


def make_extractor(llm: LLMClient | None) -> Extractor:
    """The LLM extractor when an LLM is configured, else the offline rule extractor."""
    return LLMExtractor(llm) if llm is not None else RuleExtractor()


async def known_entities(graph: KnowledgeGraph, *, status: ReviewStatus | None = None) -> list[KnownEntity]:
    """The campaign's entities for extractors: accepted and pending ones (``status`` narrows it)."""
    entities = await graph.list_entities(status=status)
    return [
        KnownEntity(
            id=e.id,
            name=e.name,
            type=e.type,
            aliases=e.aliases,
            status=e.status,
            heard_as=e.heard_as,
            played_by=players(e.attributes),
        )
        for e in entities
        if status is not None or e.status != ReviewStatus.rejected
    ]


@dataclass
class Proposal:
    """What the extractor proposed for some of one session's entries, validated, not yet written."""

    session_id: int
    kept: list[Entry]
    result: ExtractionResult
    stats: ExtractionStats
    review_only: bool
    #: The rule extractor's findings in lines the LLM's answer about was unusable: filed pending, always.
    fallback: ExtractionResult | None = None
    #: The session's title, and its opening's lines where the DM tells the story so far ("last we left off").
    title: str = ""
    retold: frozenset[int] = frozenset()
    #: The ids of the kept lines the narrator says: a fact no such line cites is only a player's word.
    narrated: frozenset[int] = frozenset()


async def propose(
    mem: CampaignMemory,
    *,
    session_id: int,
    entries: Sequence[Entry],
    extractor: Extractor,
    scenes: SceneMoves | None = None,
    embedder: Embedder | None = None,
    talk: SessionTalk | None = None,
) -> Proposal | None:
    """Run the extractor (maybe a slow LLM call) on ``entries`` (one session's L1 entries); None when every entry
    is table talk. Nothing is written: call it outside a transaction, then :func:`file_proposal` in a short one.
    ``scenes``: where the session's scene moved, kept from an earlier slice of the same job run. ``embedder``: the
    rules also read the DM's lines by meaning (:func:`meaning_events`), with MiniLM only. ``talk``: the session's
    out-of-game segments, narrator and opening recap, kept likewise."""
    foreign = [e.id for e in entries if e.campaign_id != mem.campaign_id or e.session_id != session_id]
    if foreign:
        raise InvalidInputError(f"entries {foreign[:5]} are not from session {session_id} of this campaign")
    stats = ExtractionStats(entries_seen=len(entries))
    known = await known_entities(mem.graph)
    # the extractor's: a person called by first or last name alone is named too ("Pike, lol" is kept)
    gazetteer = of_mentions(known)
    session = await mem.log.session(session_id)
    # Sponsor reads, the pre-show, breaks, dice and banter: nothing is proposed from them, whatever they name. The
    # segments need the session's lines around these (the DM's "last we left off" may come after the slice).
    everything = await mem.log.session_entries(session_id)
    talk = talk or SessionTalk()
    offgame, narrates, retold = talk(everything, session.dm_speaker_id, entries)
    told = [e for e in entries if e.id not in offgame]
    stats.entries_skipped_offgame = len(entries) - len(told)
    kept = _kept(told, gazetteer)
    stats.entries_skipped_trivial = len(told) - len(kept)
    if not kept:
        return None
    kept = by_role(kept, session.dm_speaker_id)
    scenes = scenes or SceneMoves()
    # an LLM reads what a line means itself
    reads_meaning = embedder if isinstance(extractor, RuleExtractor) else None
    moves = await scenes(everything, session.dm_speaker_id, known, gazetteer, talk, reads_meaning)
    meant = scenes.meant if reads_meaning is not None else None
    raw = await extractor.extract(
        kept, known, narrates=narrates, retold=retold, scenes=moves, meant=meant, here=scenes.here(kept[0].id)
    )
    result = validate_result(raw, known, {e.id for e in kept})
    stats.llm_errors = len(result.errors)
    fallback = None
    if unread := set(result.unread):
        lines = [e for e in kept if e.id in unread]
        meant = await meaning_events(lines, narrates, gazetteer, embedder) if embedder else None
        fallback = validate_result(
            await RuleExtractor().extract(
                lines, known, narrates=narrates, retold=retold, scenes=moves, meant=meant, here=scenes.here(lines[0].id)
            ),
            known,
            unread,
        )
        stats.entries_fallback = len(lines)
    stats.items_invalid = result.invalid + (fallback.invalid if fallback else 0)
    # An entity's name has no invisible characters; a title may ("🧙‍♂️ Wizard night" holds a zero-width joiner).
    title = "".join(ch for ch in session.title if not unicodedata.category(ch).startswith("C"))
    narrated = frozenset(e.id for e in kept if narrates(e))
    return Proposal(session_id, kept, result, stats, _review_only(extractor), fallback, title, retold, narrated)


def opening_recap(entries: Sequence[Entry], talk: dict[int, Talk], dm_speaker_id: str | None) -> frozenset[int]:
    """The DM's lines of the session's opening, where a session that continues a story recaps it ("last we left
    off, the Briarwoods were dead"): their turning points are earlier sessions'. Not a line telling a turning point
    in the present and nothing in the past ("a patrol boat arrives at the abbey"): that is this session's play."""
    by_dm = narrator(entries, dm_speaker_id)
    start = next((n for n, e in enumerate(entries) if talk.get(e.id) != Talk.pre_show), len(entries))
    return frozenset(e.id for e in entries[start : start + RECAP_LINES] if by_dm(e) and not told_now(e.text))


def scene_moves(
    entries: Sequence[Entry], dm_speaker_id: str | None, gazetteer: Gazetteer[KnownEntity]
) -> dict[int, list[KnownEntity]]:
    """The places a session's scene moved to (``events.scene_arrivals``), by the ids of the lines that tell it;
    ``entries``: all the session's lines, in order."""
    by_dm = narrator(entries, dm_speaker_id)
    said = {e.id: narration(e.text) for e in entries if by_dm(e)}
    named = {i: [x for a, b, x in gazetteer.find(text) if said_whole(text, a, b)] for i, text in said.items()}
    # only the DM's lines naming something are asked whether they are out of game: each one costs
    talk = out_of_game(entries, dm_speaker_id, only={i for i, found in named.items() if found})
    return scene_arrivals([(e.id, named.get(e.id, []) if e.id not in talk else []) for e in entries])


def _kept(told: Sequence[Entry], gazetteer: Gazetteer[KnownEntity]) -> list[Entry]:
    """The lines of ``told`` (in game) extraction reads: a turn naming a known entity is kept even if it looks like
    table talk ("Brom, lol")."""
    return [e for e in told if not is_trivial(e.text) or gazetteer.mentions(e.text)]


class SceneMoves:
    """:func:`scene_moves` of a session, the turning points its DM's lines tell by meaning (:func:`meaning_events`)
    and where the party is at each line (``rules.whereabouts``), kept while its lines and the known entities stay
    the same: the extraction job reads the whole session for each slice it files (0.13 s on a 2,000-line episode, a
    dozen slices), and where the party is must not depend on where a slice begins."""

    def __init__(self) -> None:
        self._read: tuple[list[Entry], str | None, list[KnownEntity], Embedder | None] | None = None
        self._moves: dict[int, list[KnownEntity]] = {}
        self._where: dict[int, KnownEntity | None] = {}
        #: The session's turning points told by meaning, by entry id (none without an embedder).
        self.meant: dict[int, list[Event]] = {}

    async def __call__(
        self,
        entries: Sequence[Entry],
        dm_speaker_id: str | None,
        known: Sequence[KnownEntity],
        gazetteer: Gazetteer[KnownEntity],
        talk: SessionTalk | None = None,
        embedder: Embedder | None = None,
    ) -> dict[int, list[KnownEntity]]:
        """``scene_moves`` of ``entries`` (all the session's lines); ``gazetteer``: that of ``known`` (a new one,
        or a line revised, is read again: a place proposed by an earlier slice may be where the scene moves in a
        later one). ``talk``: the session's out-of-game talk and recap; ``embedder``: the rules read the DM's lines
        by meaning too, and so does where the party is."""
        read = (list(entries), dm_speaker_id, list(known), embedder)
        if read != self._read:
            self._moves = scene_moves(entries, dm_speaker_id, gazetteer)
            # the lines as each slice's extract reads them, and what it folds in: the same carried state whichever
            # rule found the party's arrival, wherever the job cuts the session
            offgame, narrates, retold = (talk or SessionTalk())(entries, dm_speaker_id, entries)
            lines = _kept([e for e in entries if e.id not in offgame], gazetteer)
            self.meant = await meaning_events(lines, narrates, gazetteer, embedder) if embedder else {}
            self._where = whereabouts(lines, narrates, gazetteer, self._moves, self.meant, retold)
            self._read = read
        return self._moves

    def here(self, entry_id: int) -> KnownEntity | None:
        """Where the party is as the line ``entry_id`` begins, as the lines before it tell: a slice's first line
        is no new scene (an npc "arrives with the guards" where the party arrived two slices before)."""
        return self._where.get(entry_id)


class SessionTalk:
    """A session's out-of-game segments (the pre-show, breaks and after-show its DM's cues mark), who narrates and its
    opening recap (:func:`opening_recap`), kept while its lines stay the same: the extraction job reads them for each
    slice it files (35 ms on a 2,000-line episode, a dozen slices). Each slice's own lines are judged on their own."""

    def __init__(self) -> None:
        self._read: tuple[list[Entry], str | None] | None = None
        self._segments: dict[int, Talk] = {}
        self._narrates: Callable[[Entry], bool] = lambda e: False
        self._retold: frozenset[int] = frozenset()

    def __call__(
        self, everything: Sequence[Entry], dm_speaker_id: str | None, entries: Sequence[Entry]
    ) -> tuple[dict[int, Talk], Callable[[Entry], bool], frozenset[int]]:
        """``out_of_game(everything, dm_speaker_id, only=entries' ids)``, the session's narrator and its opening
        recap; ``everything``: all the session's lines, in order, ``entries`` among them."""
        read = (list(everything), dm_speaker_id)
        if read != self._read:
            self._segments = out_of_game(everything, dm_speaker_id, only=())
            self._narrates = narrator(everything, dm_speaker_id)
            self._retold = opening_recap(everything, self._segments, dm_speaker_id)
            self._read = read
        talk = dict(self._segments)
        for e in entries:
            if e.id not in talk and (kind := line_talk(e.text, narrated=self._narrates(e))) is not None:
                talk[e.id] = kind
        return talk, self._narrates, self._retold


#: The prototypes' vectors, by embedder: embedded once for each (weakly held: a dropped embedder frees its model).
_prototypes: weakref.WeakKeyDictionary[Embedder, tuple[dict[EventKind, list[list[float]]], list[list[float]]]] = (
    weakref.WeakKeyDictionary()
)


#: Each embedder's vectors of the DM's sentences lately read, newest last: the extraction job reads the whole
#: session again for each batch a live session writes, and only the new sentences need the model.
_said: weakref.WeakKeyDictionary[Embedder, OrderedDict[str, Any]] = weakref.WeakKeyDictionary()
SAID_KEPT = 8192  # float32 vectors of 384: 12 MiB


async def _embedded(embedder: Embedder, texts: list[str]) -> list[Any]:
    """``embedder``'s vectors of ``texts``, from :data:`_said` where it holds them (float32 holds MiniLM's exactly)."""
    kept = _said.setdefault(embedder, OrderedDict())
    new = list(dict.fromkeys(t for t in texts if t not in kept))
    for text, vector in zip(new, await embedder.embed(new) if new else [], strict=True):
        kept[text] = np.asarray(vector, dtype=np.float32)
    for text in texts:
        kept.move_to_end(text)
    vectors = [kept[t] for t in texts]
    while len(kept) > SAID_KEPT:
        kept.popitem(last=False)
    return vectors


async def meaning_events(
    entries: Sequence[Entry], narrates: Callable[[Entry], bool], gazetteer: Gazetteer[KnownEntity], embedder: Embedder
) -> dict[int, list[Event]]:
    """The turning points the DM's lines among ``entries`` (in game, in order) tell by meaning
    (``events.meant_events``), by entry id. Only MiniLM's: the thresholds are its cosines."""
    if embedder.model_name != MiniLMEmbedder.model_name:
        return {}
    sentences: dict[int, list[Sentence]] = {}
    for e in entries:
        if narrates(e):
            text = narration(e.text)
            spans = [(a, b, x) for a, b, x in gazetteer.find(text) if said_whole(text, a, b)]
            if spans and (found := meaning_sentences(text, spans)):
                sentences[e.id] = found
    if not sentences:
        return {}
    if embedder not in _prototypes:
        by_kind = {kind: await embedder.embed(texts) for kind, texts in PROTOTYPES.items()}
        _prototypes[embedder] = (by_kind, await embedder.embed(NEAR_MISSES))
    prototypes, near_misses = _prototypes[embedder]
    said = iter(await _embedded(embedder, [c.text for found in sentences.values() for c in found]))
    out: dict[int, list[Event]] = {}
    for entry_id, found in sentences.items():
        if told := meant_events(found, [next(said) for _ in found], prototypes, near_misses):
            out[entry_id] = told
    return out


async def file_proposal(mem: CampaignMemory, proposal: Proposal, *, warn: bool = True) -> ExtractionStats:
    """Write a proposal into the graph, in the caller's transaction if it holds one. Names resolve against the
    entities as they are now: the DM may have added, merged or rejected some while the extractor ran. ``warn``
    False: the caller says the LLM's unusable answers itself (:class:`Fallbacks`, once for many proposals)."""
    stats = proposal.stats.model_copy()
    async with mem.transaction() as tx:
        await tx.graph.lock()  # before any write: see ``KnowledgeGraph.lock``
        known = await known_entities(tx.graph)
        rejected = await known_entities(tx.graph, status=ReviewStatus.rejected)
        writer = _Writer(tx.graph, proposal, known, rejected, stats)
        await writer.write(proposal.result, review_only=proposal.review_only)
        if proposal.fallback is not None:  # after the LLM's: a fact both propose keeps the status the LLM's gets
            await writer.write(proposal.fallback, review_only=True)
            if warn:
                (await Fallbacks(proposal.session_id).add(tx, proposal, stats)).warn()
    return stats


async def extract_into_graph(
    mem: CampaignMemory, *, session_id: int, entries: Sequence[Entry], extractor: Extractor
) -> ExtractionStats:
    """Extract entities and facts from ``entries`` (one session's L1 entries) into the campaign's graph."""
    proposal = await propose(mem, session_id=session_id, entries=entries, extractor=extractor)
    if proposal is None:
        return ExtractionStats(entries_seen=len(entries), entries_skipped_trivial=len(entries))  # or out of game
    return await file_proposal(mem, proposal)


@dataclass
class Fallbacks:
    """The proposals of one session whose LLM answers were unusable, said in one warning: the DM's notice (the
    worker's log, `ingest --wait`) that a model answering nonsense must not go unnoticed, nor repeated a slice."""

    session_id: int
    names: tuple[object, object] = ("", "")  # the campaign's and the session's, read at the first one
    errors: int = 0
    first: str = ""
    lines: int = 0
    slices: int = 0

    async def add(self, mem: CampaignMemory, proposal: Proposal, stats: ExtractionStats) -> Fallbacks:
        if not self.slices:
            row = await mem.db.fetchrow(
                "SELECT c.name, s.title FROM sessions s JOIN campaigns c ON c.id = s.campaign_id "
                "WHERE s.campaign_id = $1 AND s.id = $2",
                mem.campaign_id,
                self.session_id,
            )
            self.names = (row["name"], row["title"]) if row else (mem.campaign_id, self.session_id)
            self.first = proposal.result.errors[0]
        self.errors += stats.llm_errors
        self.lines += stats.entries_fallback
        self.slices += 1
        return self

    def warn(self, of_slices: int | None = None) -> None:
        """Log the warning if there is anything to say; ``of_slices``: how many slices the job read."""
        if not self.slices:
            return
        log.warning(
            "campaign %r, session %r: unusable LLM answers (%d; the first: %s)%s, so the offline rules read those "
            "%d lines instead; what they found waits in review (`lorekeeper review list`). If this keeps "
            "happening, the model (LOREKEEPER_LLM_MODEL) is not fit for extraction",
            *self.names,
            self.errors,
            self.first,
            "" if of_slices is None else f" in {self.slices} of {of_slices} slices of its lines",
            self.lines,
        )


def by_role(entries: Sequence[Entry], dm_speaker_id: str | None) -> list[Entry]:
    """The lines as an LLM reads them (extraction, the recap). In a recorded session each speaker is named by role,
    from their user id: "DM" for who started it, "player NAME" for the rest, as a player's display name is theirs to
    choose ("DM" too) and the DM's word counts for more. A line without a user id was imported, named as the DM's
    file names it."""
    if dm_speaker_id is None:
        return list(entries)
    return [
        e
        if e.speaker_id is None
        else e.model_copy(update={"speaker": "DM" if e.speaker_id == dm_speaker_id else f"player {e.speaker}"})
        for e in entries
    ]


def _review_only(extractor: Extractor) -> bool:
    # Rule output must wait for the DM whatever threshold the campaign set, not just below the default one.
    return bool(getattr(extractor, "review_only", False))


class _Writer:
    def __init__(
        self,
        graph: KnowledgeGraph,
        proposal: Proposal,
        known: Sequence[KnownEntity],
        rejected: Sequence[KnownEntity],
        stats: ExtractionStats,
    ) -> None:
        entries = proposal.kept
        self.graph = graph
        self.session_id = proposal.session_id
        self.title = proposal.title
        self.retold = proposal.retold
        self.narrated = proposal.narrated
        self.start_s = {e.id: e.start_s for e in entries}
        self.entries = {e.id: e for e in entries}
        self.resolver = NameResolver(known)
        self.rejected = NameResolver(rejected)
        self.stats = stats
        # Proposed names (normal form) → the entity they became; None for a name the DM rejected before.
        self.bound: dict[str, KnownEntity | None] = {}

    def provenance(self, basis: str, confidence: float, entry_ids: list[int]) -> Provenance:
        return Provenance(
            source=Source.inferred if basis == "inferred" else Source.stated,
            confidence=confidence,
            session_id=self.session_id,
            timestamp=min(self.start_s[i] for i in entry_ids),
            entry_ids=entry_ids,
            dm_confirmed=False,  # only the DM's review confirms; nothing said at the table can
        )

    async def write(self, result: ExtractionResult, *, review_only: bool) -> None:
        for proposed in result.entities:
            await self._write_entity(proposed)
        for fact in result.facts:
            await self._write_fact(fact, review_only=review_only)

    async def _write_entity(self, proposed: ProposedEntity) -> None:
        self.stats.entities_proposed += 1
        norm = normalize_name(proposed.name)
        existing, _ = self.resolver.resolve(proposed.name)
        if existing is not None and await self._another_sessions(existing, proposed):
            # "Arrival at Whitestone" in two sessions is two arrivals: this one is named for its session
            proposed = proposed.model_copy(update={"name": f"{proposed.name} ({self.title})"[:200]})
            existing, _ = self.resolver.resolve(proposed.name)
        if existing is not None:
            self.stats.entities_merged += 1
            self.bound[norm] = existing
            if existing.type == EntityType.event == proposed.type and existing.status == ReviewStatus.pending:
                await self._told_again(existing, proposed.entry_ids)
            return
        if self.rejected.resolve(proposed.name)[0] is not None:
            self.bound[norm] = None
            return
        entity = EntityIn(
            name=proposed.name,
            type=EntityType(proposed.type),
            description=proposed.description,
            status=ReviewStatus.pending,  # a new name is the DM's to accept, however sure the extractor is
            provenance=self.provenance("stated", proposed.confidence, proposed.entry_ids),
        )
        created = await self._add_entity(entity)
        self.stats.entities_created += 1
        self.bound[norm] = created
        self.resolver.add(created)

    async def _write_fact(self, fact: ProposedFact, *, review_only: bool) -> None:
        self.stats.facts_proposed += 1
        source = self._entity(fact.source)
        target = self._entity(fact.target) if fact.target is not None else None
        if source is None or (fact.target is not None and target is None):
            self.stats.facts_unchanged += 1  # about an entity the DM rejected
            return
        if target is not None and target.id == source.id:
            self.stats.items_invalid += 1  # two spellings of one entity, merged
            return
        touches_pending = ReviewStatus.pending in (source.status, target.status if target else None)
        provenance = self.provenance(fact.basis, fact.confidence, fact.entry_ids)
        # A fact cannot be surer than the existence of what it is about, nor than the lines it cites.
        gap = None if review_only or touches_pending else self._evidence_gap(fact, source, target)
        provenance.review_reason = gap
        rel = RelationshipIn(
            source_id=source.id,
            type=fact.type,
            target_id=target.id if target else None,
            value=fact.value,
            provenance=provenance,
            status=ReviewStatus.pending if review_only or touches_pending or gap else None,
        )
        if await self._was_rejected(rel):
            self.stats.facts_unchanged += 1
            return
        stored, created = await self.graph.ensure_relationship(rel)
        if not created:
            self.stats.facts_unchanged += 1
        elif stored.status == ReviewStatus.accepted:
            self.stats.facts_accepted += 1
        else:
            self.stats.facts_pending += 1

    async def _another_sessions(self, existing: KnownEntity, proposed: ProposedEntity) -> bool:
        """Whether ``existing`` is a turning point of another session than the one ``proposed`` (an event of this
        session's lines) tells, which the DM's recap of the story so far does not retell."""
        if existing.type != EntityType.event or proposed.type != EntityType.event or not self.title:
            return False
        if set(proposed.entry_ids) <= self.retold:
            return False
        session = (await self.graph.get_entity_by_id(existing.id)).provenance.session_id
        return session is not None and session != self.session_id

    async def _told_again(self, existing: KnownEntity, entry_ids: list[int]) -> None:
        """Add the lines a later slice tells a pending event of this session in to its provenance: the DM reviews
        it with every line it was told in, not the first slice's only."""
        entity = await self.graph.get_entity_by_id(existing.id)
        provenance = entity.provenance
        new = [i for i in dict.fromkeys(entry_ids) if i not in provenance.entry_ids]
        # an accepted or rejected one is the DM's; a recap retelling another session's event is not its lines
        if not new or entity.status != ReviewStatus.pending or provenance.session_id != self.session_id:
            return
        seqs = dict(
            await self.graph.db.fetch(
                "SELECT id, seq FROM session_entries WHERE campaign_id = $1 AND id = ANY($2::bigint[])",
                self.graph.campaign_id,
                [*provenance.entry_ids, *new],
            )
        )
        told = sorted([*provenance.entry_ids, *new], key=lambda i: seqs.get(i, float("inf")))  # stable: in order
        first = min(self.start_s[i] for i in new)
        timestamp = first if provenance.timestamp is None else min(provenance.timestamp, first)
        provenance = provenance.model_copy(update={"entry_ids": told, "timestamp": timestamp})
        await self.graph.db.execute(
            "UPDATE entities SET provenance = $3 WHERE campaign_id = $1 AND id = $2",
            self.graph.campaign_id,
            existing.id,
            provenance.model_dump(mode="json"),
        )

    def _evidence_gap(self, fact: ProposedFact, source: KnownEntity, target: KnownEntity | None) -> str | None:
        ends = _end(source), fact.type, _end(target) if target else None, fact.value
        cited = [self.entries[i] for i in fact.entry_ids]
        if (gap := evidence_gap(*ends, cited)) is not None:
            return gap
        # A player's word is not canon, however sure the model (or the player: "the DM says so, it is canon") is.
        told = [e for e in cited if e.id in self.narrated]
        return None if told and evidence_gap(*ends, told) is None else "only a player's line says it"

    def _entity(self, name: str) -> KnownEntity | None:
        norm = normalize_name(name)
        if norm in self.bound:
            return self.bound[norm]
        return self.resolver.resolve(name)[0]

    async def _add_entity(self, entity: EntityIn) -> KnownEntity:
        try:
            async with self.graph.db.transaction():  # a savepoint: a lost race must not abort the batch
                created = await self.graph.add_entity(entity)
        except AlreadyExistsError:
            # Another worker created it meanwhile (or it exists under a form we do not resolve), or it is what the
            # recogniser writes for a name, in a line the heard-as job has yet to correct: the DM said it is that.
            found = await self.graph.find_entity(entity.name) or await self.graph.heard_as_of(entity.name)
            if found is None:
                raise
            self.stats.entities_created -= 1
            self.stats.entities_merged += 1
            created = found
        return KnownEntity(
            id=created.id, name=created.name, type=created.type, aliases=created.aliases, status=created.status
        )

    async def _was_rejected(self, rel: RelationshipIn) -> bool:
        """Whether the DM rejected ``rel``, stated so, in other words or from its other end ("Jazna killed_by Grog"
        after "Grog killed Jazna", the types :func:`stated_as` gives)."""
        same, other = stated_as(rel.type)
        return bool(
            await self.graph.db.fetchval(
                """
                SELECT EXISTS (SELECT 1 FROM relationships
                               WHERE campaign_id = $1 AND status = 'rejected'
                                 AND ((source_id = $2 AND type = ANY($3::text[])
                                       AND target_id IS NOT DISTINCT FROM $4 AND value IS NOT DISTINCT FROM $5)
                                      OR (source_id = $4 AND type = ANY($6::text[]) AND target_id = $2)))
                """,
                self.graph.campaign_id,
                rel.source_id,
                [rel.type, *same],
                rel.target_id,
                rel.value,
                other if rel.target_id is not None else [],
            )
        )


def _end(entity: KnownEntity) -> End:
    return End(entity.id, entity.name, entity.type, (*entity.aliases, *entity.heard_as))
