"""Recall: what was said about X — L2 vector hits and L1 full-text hits merged by reciprocal-rank fusion.

Vectors find paraphrases ("the dragon under the lake"), full text finds rare exact words (names, items); RRF
needs no score calibration between the two. Each hit is a chunk (a window of utterances) and cites the
``ref`` of every L1 entry it covers. Discord-free: the bot's /recall and ``lorekeeper recall`` both call this.

A passage says what was true when it was said ("Thrennick has the Ember Key"); the entities a query names come
with their current facts from the graph (:func:`named_entities`), so an answer shows what has changed since.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from memory.correction.text import normalize, spaced_form, tokenize
from memory.gazetteer import Gazetteer
from memory.models import Chunk, EntityType, Entry, Visibility, clip, where_said
from memory.providers.embeddings import Embedder
from memory.store import CampaignMemory

RRF_K = 60  # the usual constant: dampens the gap between the first ranks
Mode = Literal["both", "vector", "fulltext"]
#: Entities of a query shown with their facts: a question names one or two; more would bury the passages.
NAMED_LIMIT = 3
SECRET_MARK = " 🔒"
#: Characters of a named entity's description shown before its facts (`entity show` has it whole).
DESCRIPTION_SHOWN = 300
#: Characters of a query that count: a question is a line or two (/recall takes 200); a wall of pasted text would
#: nest PostgreSQL's full-text query too deep to run and make the name search read all of it.
QUERY_CHARS = 1000


def _clipped(query: str) -> str:
    """The query's first ``QUERY_CHARS`` characters, cut at a space if it has one there (no half word)."""
    if len(query) <= QUERY_CHARS:
        return query
    head = query[: QUERY_CHARS + 1]
    return head[: head.rfind(" ")] if " " in head else head[:QUERY_CHARS]


class HitLine(BaseModel):
    """One line a DM reads for a hit, whole: the line(s) that scored (``matched``) and their context."""

    entry_id: int
    session_id: int
    seq: int
    speaker: str
    text: str
    start_s: float | None
    ref: str | None
    matched: bool


class RecallHit(BaseModel):
    session_id: int
    session: str
    speakers: list[str]
    start_s: float | None
    end_s: float | None
    text: str
    score: float
    refs: list[str]  # source references of the L1 entries the hit covers
    entry_ids: list[int]
    matched: list[str]  # how it was found: "vector", "fulltext"
    lines: list[HitLine] = []  # what the DM reads, in reading order

    def where(self) -> str:
        """Its session and time, or its first line's source when the transcript had no times."""
        return where_said(
            self.session or f"session {self.session_id}", self.start_s, self.refs[0] if self.refs else None
        )


async def fulltext_entries(mem: CampaignMemory, query: str, limit: int) -> list[Entry]:
    """Entries matching any of the query's words, best first. A question in plain words is an OR of its
    terms here (``websearch`` syntax would require all of them and find nothing for a long question)."""
    rows = await mem.db.fetch(
        """
        WITH q AS (
            SELECT nullif(replace(plainto_tsquery('english', searchable($2))::text, '&', '|'), '')::tsquery AS q
        )
        SELECT e.id FROM session_entries e, q
        WHERE e.campaign_id = $1 AND q.q IS NOT NULL AND e.tsv @@ q.q
        ORDER BY ts_rank_cd(e.tsv, q.q) DESC, e.session_id, e.seq
        LIMIT $3
        """,
        mem.campaign_id,
        query,
        limit,
    )
    by_id = {e.id: e for e in await mem.log.entries([r["id"] for r in rows])}
    return [by_id[r["id"]] for r in rows if r["id"] in by_id]


async def _covering_chunks(mem: CampaignMemory, entry_ids: list[int]) -> dict[int, Chunk]:
    """For each entry, the earliest chunk that covers it."""
    if not entry_ids:
        return {}
    rows = await mem.db.fetch(
        """
        SELECT DISTINCT ON (eid) eid, c.id, c.campaign_id, c.session_id, c.key, c.text, c.entry_ids, c.speakers,
               c.entity_ids, c.topics, c.start_s, c.end_s
        FROM unnest($2::bigint[]) AS eid
        JOIN chunks c ON c.campaign_id = $1 AND c.entry_ids @> ARRAY[eid]
        ORDER BY eid, c.start_s, c.id
        """,
        mem.campaign_id,
        entry_ids,
    )
    return {r["eid"]: Chunk(**{k: r[k] for k in Chunk.model_fields}) for r in rows}


async def recall(
    mem: CampaignMemory,
    embedder: Embedder | None,
    query: str,
    *,
    limit: int = 5,
    mode: Mode = "both",
    embedding: list[float] | None = None,
) -> list[RecallHit]:
    """The ``limit`` best hits for ``query`` (its first ``QUERY_CHARS`` characters); ``embedding`` may be given
    when the caller embedded in bulk."""
    query = _clipped(query)
    depth = max(limit * 4, 20)
    scores: dict[str, float] = defaultdict(float)
    matched: dict[str, list[str]] = defaultdict(list)
    units: dict[str, Chunk | Entry] = {}
    entries: list[Entry] = []

    if mode in ("both", "vector"):
        if embedding is None:
            assert embedder is not None, "vector recall needs an embedder"
            (embedding,) = await embedder.embed([query])
        for rank, hit in enumerate(await mem.semantic.nearest(embedding, k=depth)):
            key = f"c{hit.id}"
            units[key] = hit
            scores[key] += 1 / (RRF_K + rank + 1)
            matched[key].append("vector")

    if mode in ("both", "fulltext"):
        entries = await fulltext_entries(mem, query, depth)
        covering = await _covering_chunks(mem, [e.id for e in entries])
        seen: set[str] = set()
        for rank, entry in enumerate(entries):
            # An entry counts for the chunk that holds it; one not chunked yet (jobs pending) stands alone.
            chunk = covering.get(entry.id)
            key = f"c{chunk.id}" if chunk else f"e{entry.id}"
            if key in seen:
                continue  # a chunk's best entry gives its rank; more entries of it would double count
            seen.add(key)
            units.setdefault(key, chunk or entry)
            scores[key] += 1 / (RRF_K + rank + 1)
            matched[key].append("fulltext")

    best = sorted(scores, key=lambda k: scores[k], reverse=True)[:limit]
    entry_ids = sorted({i for k in best for i in _entry_ids(units[k])})
    by_id = {e.id: e for e in await mem.log.entries(entry_ids)}
    refs = {i: e.ref for i, e in by_id.items()}
    full_text_ids = {e.id for e in entries}
    titles = {s.id: s.title for s in await mem.log.sessions()}
    out: list[RecallHit] = []
    for key in best:
        unit = units[key]
        ids = _entry_ids(unit)
        if isinstance(unit, Entry):
            speakers, text = [unit.speaker], f"{unit.speaker}: {unit.text}"
            start, end = unit.start_s, unit.end_s
        else:
            speakers, text, start, end = unit.speakers, unit.text, unit.start_s, unit.end_s
        out.append(
            RecallHit(
                session_id=unit.session_id,
                session=titles.get(unit.session_id, ""),
                speakers=speakers,
                start_s=start,
                end_s=end,
                text=text,
                score=round(scores[key], 6),
                refs=[r for i in ids if (r := refs.get(i))],
                entry_ids=ids,
                matched=matched[key],
                lines=[
                    HitLine(
                        entry_id=e.id,
                        session_id=e.session_id,
                        seq=e.seq,
                        speaker=e.speaker,
                        text=e.text,
                        start_s=e.start_s,
                        ref=e.ref,
                        matched="vector" in matched[key] or e.id in full_text_ids,
                    )
                    for i in ids
                    if (e := by_id.get(i))
                ],
            )
        )
    return out


def _entry_ids(unit: Chunk | Entry) -> list[int]:
    return [unit.id] if isinstance(unit, Entry) else list(unit.entry_ids)


class KnownFact(BaseModel):
    text: str  # "Ember Key —owned_by→ Pip"
    secret: bool


class NamedEntity(BaseModel):
    """An entity a query names, as its reader may see it: its description and its current facts."""

    name: str
    type: EntityType
    secret: bool
    description: str
    facts: list[KnownFact]

    def heading(self) -> str:
        return self.name + SECRET_MARK * self.secret

    def fact_lines(self) -> list[str]:
        return [f.text + SECRET_MARK * f.secret for f in self.facts]


async def named_entities(mem: CampaignMemory, query: str, *, dm: bool, limit: int = NAMED_LIMIT) -> list[NamedEntity]:
    """The accepted entities ``query`` names (a name or an alias, whole words, longest first), in the order it
    names them, with their current facts. Players (not ``dm``) see neither a secret entity nor a secret fact, and
    a secret name in what they read is masked: they name an entity as they read it ("Session: [secret] unmasked"),
    so a guess of the secret its name holds is not confirmed. Only the query's first ``QUERY_CHARS`` count."""
    query = _clipped(query)
    called = await _names(mem, include_secret=dm)
    mask = str if dm else await mem.graph.player_mask()

    def find() -> list[tuple[int, int, _Called]]:
        shown = called if dm else [_Called(e.id, mask(e.name), list(map(mask, e.aliases))) for e in called]
        return Gazetteer(_worded(shown, query)).find(query)

    # pure Python over every name (0.2–0.3 s for 20,000 entities): off the event loop, which serves the bot
    found = await asyncio.to_thread(find)
    named = list({e.id: e for _, _, e in found}.values())[:limit]
    out: list[NamedEntity] = []
    for called in named:
        entity = await mem.graph.get_entity_by_id(called.id)
        facts = await mem.graph.relationships_of(entity.id, include_secret=dm)
        out.append(
            NamedEntity(
                name=mask(entity.name),
                type=entity.type,
                secret=entity.visibility == Visibility.secret,
                description=_shortened(mask(entity.description)),
                facts=[KnownFact(text=mask(f.describe()), secret=f.visibility == Visibility.secret) for f in facts],
            )
        )
    return out


def _shortened(description: str) -> str:
    """A description as a recall shows it: its start, so the current facts after it are not crowded out."""
    return clip(" ".join(description.split()), DESCRIPTION_SHOWN)


@dataclass(frozen=True, slots=True)
class _Called:
    """What the gazetteer needs of an entity: a campaign may have thousands, and a query names one or two."""

    id: int
    name: str
    aliases: list[str]


async def _names(mem: CampaignMemory, *, include_secret: bool) -> list[_Called]:
    rows = await mem.db.fetch(
        """
        SELECT e.id, e.name, coalesce(array_agg(a.alias) FILTER (WHERE a.alias IS NOT NULL), '{}') AS aliases
        FROM entities e LEFT JOIN entity_aliases a ON a.campaign_id = $1 AND a.entity_id = e.id
        WHERE e.campaign_id = $1 AND e.status = 'accepted' AND ($2 OR e.visibility = 'public')
        GROUP BY e.id
        """,
        mem.campaign_id,
        include_secret,
    )
    return [_Called(r["id"], r["name"], r["aliases"]) for r in rows]


def _worded(entities: list[_Called], query: str) -> list[_Called]:
    """Those with a name or alias whose every word is one of the query's, all the gazetteer could find: building
    it for each of a large campaign's entities would take longer than the search."""
    words = {w for t in tokenize(query) for w in (t.norm, normalize(query[t.start : t.end]))}
    return [
        e
        for e in entities
        if any(set(form(s).split()) <= words for s in (e.name, *e.aliases) for form in (normalize, spaced_form))
    ]
