"""Recall: what was said about X — the lines that answer it, ranked by BM25 over lines (:mod:`memory.lexical`),
vectors over lines (over windows, each credited to its best line, while a campaign has no line vectors) and the
graph (the entities a question names expand it and lift the lines that mention them), fused by
:mod:`memory.recall_rank`. A hit is the best line(s), whole, a short one with a line of context either side,
citing the ``ref`` of every line. Discord-free: /recall, ``lorekeeper recall`` and the MCP tools call this.

A passage says what was true when it was said ("Thrennick has the Ember Key"); the entities a query names come
with their current facts from the graph (:func:`named_entities`), so an answer shows what has changed since.
"""

from __future__ import annotations

import asyncio
import math
import re
import unicodedata
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import lru_cache, partial
from typing import Literal

import asyncpg
from pydantic import BaseModel

from memory import lexical as lexical_ranker
from memory import offgame
from memory import recall_rank as rank
from memory.correction.evidence import MatchSettings, word_zipf
from memory.correction.text import normalize, spaced_form, tokenize
from memory.errors import InvalidInputError, NotFoundError
from memory.gazetteer import Gazetteer, short_names
from memory.mentions import first_said
from memory.models import (
    PERSON_TYPES,
    ChunkHit,
    EntityType,
    Entry,
    Session,
    Visibility,
    played_there,
    speaker_label,
    took_part_line,
    where_said,
)
from memory.offgame import VOICE_LINES, Talk, line_talk, tells_last_session, voice_of
from memory.providers.embeddings import Embedder
from memory.store import CampaignMemory
from memory.text import excerpt, voice_left

Mode = Literal["both", "vector", "fulltext"]
#: Entities of a query shown with their facts: a question names one or two; more would bury the passages.
NAMED_LIMIT = 3
#: Lines read per hit asked for, for "when did we first (last) meet X": the first (last) that name X fill the hits
#: in the order played, before any later line scoring alike (neighbours join one hit: a hit may hold several).
TOLD_IN = 3
#: Sessions a named entity took part in, named by title (the latest); the rest are counted.
SESSIONS_SHOWN = 3
#: Current facts of a named entity shown, the last learned: about what one embed field holds after a description.
FACTS_SHOWN = 12
SECRET_MARK = " 🔒"
#: Characters of a named entity's description shown before its facts (`entity show` has it whole).
DESCRIPTION_SHOWN = 300
#: Characters of a query that count: a question is a line or two (/recall takes 200); a wall of pasted text would
#: nest PostgreSQL's full-text query too deep to run and make the name search read all of it.
QUERY_CHARS = 1000


def _clipped(query: str) -> str:
    """The query's first ``QUERY_CHARS`` characters, cut at a space if it has one there (no half word); NFC, as the
    lines and names are: a question typed decomposed ("Mórwen" as o and ◌́) finds what it says."""
    query = unicodedata.normalize("NFC", query)
    if len(query) <= QUERY_CHARS:
        return query
    head = query[: QUERY_CHARS + 1]
    return head[: head.rfind(" ")] if " " in head else head[:QUERY_CHARS]


class HitLine(BaseModel):
    """One line a DM reads for a hit: the line(s) that scored (``matched``) and their context. ``text`` is whole;
    :meth:`shown` is what a reader sees (a context line as a preview, see :func:`memory.recall_rank.preview`)."""

    entry_id: int
    session_id: int
    seq: int
    speaker: str
    #: the character the speaker plays in the session (:func:`memory.models.played_there`), or that the question
    #: asked what it said ("what did Grog say")
    plays: str | None = None
    text: str
    start_s: float | None
    ref: str | None
    matched: bool
    #: where a context line is: "before" the hit's first line that scored, else "after" one; "" for one that scored
    context: Literal["", "before", "after"] = ""
    #: a long line that scored by a passage: the characters of ``text`` shown (whole sentences around it)
    passage: tuple[int, int] | None = None

    def who(self, mask: Callable[[str], str] = str) -> str:
        """The speaker as every reader sees them (:func:`memory.models.speaker_label`): "TRAVIS (Grog Strongjaw)"."""
        return mask(speaker_label(self.speaker, self.plays))

    def shown(self, mask: Callable[[str], str] = str) -> str:
        """The line as a reader sees it: masked first (a preview never cuts a secret name into a word that no
        longer matches its mask), then a context line clipped to its words nearest the answer, and a long line
        that scored by a passage shown by it, with "…" where it goes on (``text`` and ``ref`` keep it whole)."""
        if self.passage is not None and not self.context:
            return rank.shown_passage(self.text, self.passage, mask)
        text = mask(self.text)
        return rank.preview(text, before=self.context == "before") if self.context else text


class RecallHit(BaseModel):
    session_id: int
    session: str
    started: datetime | None = None  # when the session was played, for its citation
    speakers: list[str]
    start_s: float | None
    end_s: float | None
    text: str
    score: float
    refs: list[str]  # source references of the L1 entries the hit covers
    entry_ids: list[int]
    #: how it was found: "fulltext", "vector", "entity" (names one asked of), "speaker" (said by), "when" (of a
    #: session played when the question says)
    matched: list[str]
    lines: list[HitLine] = []  # what the DM reads, in reading order

    def answering(self) -> list[HitLine]:
        """The lines that scored (the answer), without their context."""
        return [line for line in self.lines if line.matched]

    def where(self) -> str:
        """The session and time of its (first) answering line, or that line's source when the transcript had no
        times."""
        first = next(iter(self.answering()), None)
        start, ref = (first.start_s, first.ref) if first else (self.start_s, self.refs[0] if self.refs else None)
        return where_said(self.session or f"session {self.session_id}", start, ref, self.started)

    def cited_where(self, mask: Callable[[str], str] = str) -> str:
        """:meth:`where`, as a reader is shown it (``mask``: what they may not read hidden), marked "(near a
        mention)" for lines said beside one naming what was asked, which do not say it themselves: the command line
        shows so how a hit was found, and /recall and the MCP tool say this much too."""
        return mask(self.where()) + (f" ({NEAR_MENTION})" if NEAR_MENTION in self.matched else "")


#: Lines read from each list: enough for the fused ranking's top lines to be found by both when both know them.
#: Windows are read only while a campaign has no line vectors; reading them beside the lines did not help (dev).
LEXICAL_DEPTH, VECTOR_DEPTH, LINE_VECTOR_DEPTH = 40, 15, 20
#: "What did Mira say": the lines that may voice her by a marker read, the latest (each with the lines on from it).
VOICING_DEPTH = 100
#: Lines per hit asked for that are checked for table talk (dice, rules, the show), best first.
TALK_CHECKED = 3
#: An alias or name a question is expanded with counts less than the question's own words.
EXPANSION_WEIGHT = 0.7
#: The cosine a line found by meaning alone must reach when no line says a word of the question: "zzzzqqq", "?"
#: and "the" have lines at 0.23–0.39 (MiniLM, the Critical Role example), a question's answers come above.
MEANING_ALONE = 0.45
#: ... and beside lines that say its words: below it, it only pads them ("who is Eskil Ryndarien?": "His name is
#: Balan."). At 0.45 LongMemEval dev lost a question's evidence session from the first 5 (0.983 → 0.967); 0.35 and
#: 0.40 lose none, and gain at 300 words (0.883 → 0.900) and session all@5 (0.867 → 0.883) (bench/README.md).
MEANING_BESIDE_WORDS = 0.40
#: Words from which a line found by meaning alone is shown by its sentences nearest the question's meaning, as one
#: found by a word is by its passage: a DM's 400-word narration whole pushes the other hits off the screen.
MEANING_PASSAGE_FROM = 40


async def recall(
    mem: CampaignMemory,
    embedder: Embedder | None,
    query: str,
    *,
    limit: int = 5,
    mode: Mode = "both",
    embedding: list[float] | None = None,
    dm: bool = True,
    asker: str | None = None,
    now: datetime | None = None,
) -> list[RecallHit]:
    """The ``limit`` best hits for ``query`` (its first ``QUERY_CHARS`` characters): the lines that answer it,
    a short one with a line of context either side. ``embedding`` may be given when the caller embedded in bulk; ``dm``:
    secret entities' names expand the query too (a player's query is expanded with public names only). ``asker``:
    who asks, as the session's lines name them; a question in the first person ("what did I promise her?") prefers
    their lines. ``now``: when it is asked (default: now), which a time it tells is counted from ("two weeks ago":
    the lines of sessions played then come first). "What did Grog say about Jazna?" that no line of Grog's answers
    is answered by his lines said near those naming her (``_said_near``)."""
    asked = await _asked(mem, query, embedding, dm=dm, asker=asker, now=now)
    if asked is None:
        return []
    hits = await _recall(mem, embedder, asked, limit=limit, mode=mode)
    if not hits and asked.voices is not None:
        hits = await _said_near(mem, asked, limit=limit)
    return await _labelled(mem, hits, dm=dm)


@dataclass
class _Asked:
    """A question as recall reads it, once for its lines and again for those said near a mention: its words with
    misheard names respelt (and, for a player, secret names left out), who it asks for, when and where."""

    names: _Names
    query: str
    embedding: list[float] | None
    dm: bool
    asker: str | None
    #: who "what did X say" asks for; None when the question names no speaker
    voices: list[rank.Speaker] | None
    parsed: rank.Parsed
    sessions: list[int] | None
    #: the speakers it filters by (None: anyone's lines)
    speakers: list[str] | None
    #: (speaker, session) whose lines are left out: a player playing another character than asked for
    other: set[tuple[str, int]]


async def _asked(
    mem: CampaignMemory,
    query: str,
    embedding: list[float] | None,
    *,
    dm: bool,
    asker: str | None,
    now: datetime | None,
) -> _Asked | None:
    """``query`` read (see :class:`_Asked`); None when a player's question is nothing but secret names."""
    if not query.strip():  # blanks are nearest to nothing: passages at random, as if they answered
        raise InvalidInputError("query is empty: give words or names to look for")
    names = _Names(mem, include_secret=dm)  # a misspelt name and the names asked of both read them
    query, embedding = await _as_heard(mem, _clipped(query), embedding, dm=dm, names=names)
    if not dm:  # a secret name is no word a player read: a guess at one finds only what its other words find
        unsaid = await _unsaid(mem, query)
        if unsaid != " ".join(query.split()):
            query, embedding = unsaid, None
        if not query:
            return None
    forms = rank.named_forms(query)
    # "what did Grog say" filters by who said it: known first; else who it names only lifts lines, read beside
    voices = (
        await _speakers(mem, forms, dm=dm, narrators=True, asker=asker, alone=list(map(rank.name_key, who)))
        if (who := rank.speaker_asked(query))
        else None
    )
    # its days and the sessions' are counted in UTC, as sessions start
    parsed, sessions = await _parsed(mem, query, voices or (), (now or datetime.now(UTC)).astimezone(UTC))
    speakers = list(dict.fromkeys(s.name for s in parsed.filters.speakers)) or None
    # a player's lines of the sessions where they played another character than asked for: left out where the
    # best lines are chosen, so those of the character asked for fill the hits
    other = await _playing_another(mem, parsed.filters.plays(), dm=dm) | rank.not_narrating(parsed.filters.speakers)
    return _Asked(names, query, embedding, dm, asker, voices, parsed, sessions, speakers, other)


async def _labelled(mem: CampaignMemory, hits: list[RecallHit], *, dm: bool) -> list[RecallHit]:
    """``hits`` with the character each line's speaker plays in its session (``_plays_in``), so a player's line
    reads "Travis (Grog Strongjaw)" whichever way it was found, as the recap quotes it."""
    plays = await _plays_in(mem, sorted({h.session_id for h in hits}), dm=dm)
    for hit in hits:
        for line in hit.lines:
            line.plays = plays.get(hit.session_id, {}).get(line.speaker.casefold(), line.plays)
    return hits


def _players(entity: str) -> str:
    """SQL: the players (as written) the ``played_by`` attribute of the entity aliased ``entity`` names, a set of
    text: one name or a list of names, none of anything else."""
    played = f"{entity}.attributes -> 'played_by'"
    return (
        f"jsonb_array_elements_text(CASE jsonb_typeof({played}) WHEN 'array' THEN {played}"
        f" WHEN 'string' THEN jsonb_build_array({played}) ELSE '[]' END)"
    )


async def _plays_in(mem: CampaignMemory, session_ids: list[int], *, dm: bool) -> dict[int, dict[str, str]]:
    """The character each speaker (casefolded) plays in each of ``session_ids`` (:func:`memory.models.played_there`):
    of the accepted characters whose ``played_by`` names them, the one that took part (the recap's links). A
    player's reading: public characters only."""
    if not session_ids:
        return {}
    rows = await mem.db.fetch(
        f"""
        SELECT e.id, e.name, lower(btrim(p.player)) AS player FROM entities e
        CROSS JOIN LATERAL {_players("e")} AS p(player)
        WHERE e.campaign_id = $1 AND e.status = 'accepted' AND ($2 OR e.visibility = 'public')
        """,
        mem.campaign_id,
        dm,
    )
    if not rows:
        return {}
    characters: dict[str, list[int]] = {}
    for r in rows:
        characters.setdefault(r["player"], []).append(r["id"])
    names = {r["id"]: r["name"] for r in rows}
    part = await mem.db.fetch(
        """
        SELECT r.source_id, (r.provenance ->> 'session_id')::bigint AS session_id FROM relationships r
        WHERE r.campaign_id = $1 AND r.type = 'took_part_in' AND r.status = 'accepted'
          AND r.source_id = ANY($2::bigint[]) AND r.provenance ->> 'session_id' = ANY($3::text[])
        """,
        mem.campaign_id,
        sorted(names),
        [str(i) for i in session_ids],
    )
    took: dict[int, set[int]] = {}
    for r in part:
        took.setdefault(r["session_id"], set()).add(r["source_id"])
    return {
        sid: {who: names[c] for who, c in played_there(characters, took.get(sid, set())).items()} for sid in session_ids
    }


#: Lines from one naming what a speaker was asked about that their lines are looked for in, when none says it:
#: a scene's exchange ("Kill me." — "I aim my greataxe for her neck").
SAID_NEAR = 5
#: How a hit of such lines is marked: they do not say the topic, they were said beside a line that does.
NEAR_MENTION = "near a mention"


async def _said_near(mem: CampaignMemory, asked: _Asked, *, limit: int) -> list[RecallHit]:
    """The hits of "what did Grog say about Jazna?" when no line of Grog's says her: his lines within ``SAID_NEAR``
    lines of one naming Jazna (the mention index), the nearest first, each hit from the line naming her to his
    (marked ``NEAR_MENTION``); none when the question names no entity beside its speaker."""
    parsed, sessions, speakers = asked.parsed, asked.sessions, asked.speakers
    if not speakers or not parsed.text or sessions == []:
        return []
    called = await asked.names()
    topic = Gazetteer(_worded(_by_first_name(called, parsed.text), parsed.text)).find(parsed.text)
    near = [
        (e, at)
        for e, at in await mem.log.said_near(sorted({e.id for *_, e in topic}), speakers, sessions, SAID_NEAR)
        if (e.speaker.casefold(), e.session_id) not in asked.other
    ]
    spans: list[tuple[int, int, int, list[int]]] = []  # (session id, first seq, last seq, the speaker's lines)
    for e, at in near:
        a, b = min(e.seq, at), max(e.seq, at)
        joined = next((n for n, s in enumerate(spans) if s[0] == e.session_id and s[1] <= b and a <= s[2]), None)
        if joined is None:
            if len(spans) < limit:
                spans.append((e.session_id, a, b, [e.id]))
            continue
        sid, first, last, ids = spans[joined]
        spans[joined] = (sid, min(first, a), max(last, b), [*ids, e.id])
    hits = []
    for n, (sid, first, last, ids) in enumerate(spans):
        session = await mem.log.session(sid)
        rows = [
            _line(e, session) for e in await mem.log.session_entries(sid, after_seq=first - 1, limit=last - first + 1)
        ]
        group = rank.Group(sid, first, last, ids, 1 / (n + 1))
        hits.append(_hit(group, rows, [NEAR_MENTION], parsed.filters.plays(), lambda _: None))
    return hits


def _line(e: Entry, session: Session) -> lexical_ranker.Line:
    """A line of the log as recall reads it, with its session's title and start."""
    return lexical_ranker.Line(
        e.id, e.session_id, e.seq, e.speaker, e.text, e.start_s, e.end_s, e.ref, session.title, session.started_at
    )


async def _recall(
    mem: CampaignMemory, embedder: Embedder | None, asked: _Asked, *, limit: int, mode: Mode
) -> list[RecallHit]:
    """:func:`recall`'s hits as its lines and passages found them, before the speakers are labelled."""
    names, query, embedding, dm, asker = asked.names, asked.query, asked.embedding, asked.dm, asked.asker
    voices, parsed, sessions, speakers, other = asked.voices, asked.parsed, asked.sessions, asked.speakers, asked.other
    meant = _meaning(query, parsed, embedding, embedder)
    if sessions == [] or rank.recap_asked(parsed):
        # "in session 12" of a campaign with 3; "what happened last session?": its recap answers it (the caller's);
        # "where did we leave off?": its recap and its last scene
        return await _last_scene(mem, sessions[0]) if sessions and parsed.left_off else []
    forms = rank.named_forms(query)

    async def lexical_query() -> tuple[list[_Called], lexical_ranker.Query, list[int], list[int]]:
        named = await _named(names, parsed.text)
        # "when did we first meet Kevdak": his lines in order come first (``_told_in``); "first", "meet" find noise
        text = parsed.unordered if parsed.filters.told_in and named else parsed.text
        phrases = [(text, 1.0)] + [(form, EXPANSION_WEIGHT) for e in named for form in (e.name, *e.aliases)]
        # its other words weigh their rarity among the lines of those it names: "egg", not "lair", of Thordak's lair
        terms = await lexical_ranker.prepare(mem.db, mem.campaign_id, phrases, [e.id for e in named])
        # "what did Grog say last session?": no word left to search, his lines answer it
        return (
            named,
            terms,
            await _telling(mem, named, parsed.text)
            or await _told_in(mem, named, parsed.filters, limit)
            or await _spoken(mem, None if terms.terms else speakers, sessions, other, limit),
            # "what did Mira say": the lines the DM says in her voice ("(as Mira) ...", "I'm Mira now." and on)
            await _voicing(mem, named, query, sessions) if voices is not None else [],
        )

    async def nearest() -> tuple[dict[int, float], list[ChunkHit], float]:
        if mode not in ("both", "vector"):
            return {}, [], 0.0
        return await _vectors(mem, embedder, meant, sessions, speakers, other)

    async def named_voices() -> list[rank.Speaker]:
        return voices if voices is not None else await _speakers(mem, forms, dm=dm)

    # the names, the vectors and the speakers need nothing of each other: on a pool, each on its own connection
    if isinstance(mem.db, asyncpg.Pool):
        (named, terms, telling, voicing), (near, windows, closest), said = await asyncio.gather(
            lexical_query(), nearest(), named_voices()
        )
    else:
        (named, terms, telling, voicing), (near, windows, closest) = await lexical_query(), await nearest()
        said = await named_voices()
    found = await lexical_ranker.candidates(
        mem.db,
        mem.campaign_id,
        terms,
        limit=LEXICAL_DEPTH if mode in ("both", "fulltext") else 0,
        also=sorted({*near, *(i for w in windows for i in w.entry_ids), *telling, *voicing}),
        entity_ids=[e.id for e in named],
        session_ids=sessions,
        speakers=speakers,
        excluded=other,
        context=rank.CONTEXT,
        alone_from=rank.ALONE_FROM,
    )
    entries = found.lines
    lexical = [f.entry_id for f in found.lexical]
    if mode == "both" and not lexical and not telling and closest < MEANING_ALONE:
        return []  # no line says a word of it and none comes close in meaning: the nearest are no answer
    best = _best_lines(found.scored, windows, entries, speakers, other)
    vector = [*dict.fromkeys([*(i for i in near if i in entries), *best])]
    candidates = [*dict.fromkeys([*lexical, *vector])]
    said_by = _said_by(said, asker if rank.first_person(query) else None) if not speakers else set()
    # "what did Mira say": the lines in her voice come first, as a speaker's own lines are the only ones shown when
    # the question names a speaker; "what did Gorrik roll for insight?": his player's roll
    told = [
        i
        for i in [
            *telling,
            # a character's roll is its player's, who rolls it (unlike what it did, which the DM mostly tells)
            *(
                _rolls(candidates, found.around, {v.name.casefold() for v in said}, entries)
                if rank.roll_asked(query)
                else []
            ),
            *_voiced_first(voicing, candidates, entries, _topic(terms, named, query)),
        ]
        if i in entries and _kept(entries[i], sessions, speakers, other)
    ]
    mentioning = found.mentioning.intersection(candidates)
    said_ids = {i for i in candidates if i in entries and entries[i].speaker.casefold() in said_by}
    # the pre-show, breaks and after-show the chunk job marked: a recap before the story says the story's words
    # ... and the lines of the sessions played when the question says ("two weeks ago")
    segments, dated = found.off_game.intersection(candidates), _dated(parsed.filters, candidates, entries)
    ranked = rank.fuse(lexical, vector, named=mentioning, said=said_ids, table_talk=segments, told=told, dated=dated)
    spans: dict[int, tuple[int, int] | None] = {}

    def passage(i: int) -> tuple[int, int] | None:
        """The characters a long line that scored by a passage shows (see ``rank.passage_span``), once a line."""
        if i not in spans:
            spans[i] = rank.passage_span(entries[i].text, *found.passages[i]) if i in found.passages else None
        return spans[i]

    # table talk is told apart only near the top (a long line costs a millisecond): what it demotes, it demotes there;
    # a long line that scored by a passage is judged by it, what it is found and shown for (and 5x cheaper)
    top = [f.entry_id for f in ranked[: TALK_CHECKED * limit] if f.entry_id in entries]
    talk = [
        *segments,
        *(i for i in top if i not in segments and line_talk(_judged(entries[i].text, passage(i))) is not None),
        # "Okay so last time, we …" at a session's start: the event in fewer words than the lines that told it
        *(i for i in top if tells_last_session(entries[i].text, entries[i].seq)),
    ]
    if len(talk) > len(segments):
        ranked = rank.fuse(lexical, vector, named=mentioning, said=said_ids, table_talk=talk, told=told, dated=dated)
    if lexical or told:  # a line found by meaning alone, not close to it, pads the lines that say its words
        weak = {i for i, cosine in near.items() if cosine < MEANING_BESIDE_WORDS}
        ranked = [f for f in ranked if f.lexical_rank is not None or f.told or f.entry_id not in weak]
    places = {i: rank.Place(i, e.session_id, e.seq, len(e.text.split())) for i, e in entries.items()}
    # read here: the bench varies it; a repeat is told by what a DM would read of it
    grouping = partial(
        rank.group,
        ranked,
        places,
        limit,
        alone_from=rank.ALONE_FROM,
        shown=lambda i: _judged(entries[i].text, passage(i)),
    )
    # a long line no word of the question found shows its sentences nearest the question's meaning (with an embedder)
    shown = embedder is not None and rank.SHOW_PASSAGES
    unworded = {i: e.text for i, e in entries.items() if shown and i not in lexical and i not in found.scored}
    groups = await _shown_by_meaning(embedder, meant, grouping(), unworded, spans, grouping)
    return _hits(groups, {f.entry_id: f for f in ranked}, found.around, parsed.filters.plays(), passage)


#: The narrator's story lines a session's last scene goes back to ("where did we leave off?"): the last two things
#: the DM told, and what the table said between and after them, where the story stood when play ended ...
LAST_SCENE_TOLD = 2
#: ... in at most this many story lines (a long chat between the two), though always from the DM's last one: the
#: cliffhanger, not the table's chatter after it alone.
LAST_SCENE_LINES = 10
#: Lines at a session's end judged for table talk (the after-show, thanks, dice) before its last story lines.
LAST_SCENE_READ = 300


async def _last_scene(mem: CampaignMemory, session_id: int) -> list[RecallHit]:
    """A session's last scene as one hit: its story lines from the narrator's ``LAST_SCENE_TOLD``-th last on, table
    talk aside (the after-show, dice, breaks: :func:`memory.offgame.out_of_game`, as the recap leaves them out)."""
    session = await mem.log.session(session_id)
    entries = await mem.log.session_entries(session_id)
    talk = offgame.out_of_game(entries, session.dm_speaker_id, only={e.id for e in entries[-LAST_SCENE_READ:]})
    story = [e for e in entries if e.id not in talk]
    narrates = offgame.narrator(entries, session.dm_speaker_id)
    told = [n for n, e in enumerate(story) if narrates(e)][-LAST_SCENE_TOLD:]
    start = max(0, len(story) - LAST_SCENE_LINES)
    scene = story[min(told[-1], max(told[0], start)) if told else start :]
    if not scene:
        return []
    rows = [_line(e, session) for e in entries if scene[0].seq <= e.seq <= scene[-1].seq]
    group = rank.Group(session_id, scene[0].seq, scene[-1].seq, [e.id for e in scene], 1.0)
    return [_hit(group, rows, ["last scene"], {}, lambda _: None)]


def _meaning(
    query: str, parsed: rank.Parsed, embedding: list[float] | None, embedder: Embedder | None
) -> list[float] | str:
    """What a question is searched for by meaning: its vector (``embedding`` when given) or text; its topic alone
    when its filters took words from it ("what did Vax say about the Briarwoods?" was near every line of Liam's
    saying "Vax says")."""
    if embedder is not None and parsed.text and parsed.text != " ".join(query.split()):
        return parsed.text
    return embedding or query


async def _shown_by_meaning(
    embedder: Embedder | None,
    question: list[float] | str,
    groups: list[rank.Group],
    unworded: dict[int, str],
    spans: dict[int, tuple[int, int] | None],
    grouping: Callable[[], list[rank.Group]],
) -> list[rank.Group]:
    """The hits once each long line no word of the question found (``unworded``) shows its sentences nearest the
    question's meaning (into ``spans``), grouped again by ``grouping``: a repeat is told by what is shown, and two
    cuts of a character's intro differ whole but show the same sentence."""
    read: set[int] = set()
    while todo := [i for g in groups for i in g.matched if i in unworded and i not in read and spans.get(i) is None]:
        assert embedder is not None, "a line is shown by meaning with an embedder"
        read.update(todo)
        spans.update(await _nearest_sentences(embedder, question, {i: unworded[i] for i in todo}))
        groups = grouping()
    return groups


async def _nearest_sentences(
    embedder: Embedder, question: list[float] | str, texts: dict[int, str]
) -> dict[int, tuple[int, int] | None]:
    """The characters each long line of ``texts`` (``MEANING_PASSAGE_FROM`` words or more) shows, found by
    meaning: its sentence nearest the ``question`` (its vector, embedded here only when there are such lines; all
    sentences of all lines embedded at once), with the sentences that make it a passage (``rank.passage_span``)."""
    texts = {i: text for i, text in texts.items() if len(text.split()) >= MEANING_PASSAGE_FROM}
    if not texts:
        return {}
    vector = await query_vector(embedder, question) if isinstance(question, str) else question
    sentences = {i: rank.sentence_spans(text) for i, text in texts.items()}
    flat = [(i, span) for i, spans in sentences.items() for span in spans]
    vectors = await embedder.embed([texts[i][a:b] for i, (a, b) in flat])
    best: dict[int, tuple[float, tuple[int, int]]] = {}
    for (i, span), v in zip(flat, vectors, strict=True):
        score = _cosine(vector, v)
        if i not in best or score > best[i][0]:
            best[i] = (score, span)
    out: dict[int, tuple[int, int] | None] = {}
    for i, (_, (a, b)) in best.items():
        tokens = [k for k, (start, end) in enumerate(rank.token_spans(texts[i]), 1) if a <= start and end <= b]
        out[i] = rank.passage_span(texts[i], tokens[0], tokens[-1]) if tokens else None
    return out


def _cosine(a: list[float], b: list[float]) -> float:
    norm = math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / norm if norm else 0.0


def _voiced_forms(named: Sequence[_Called], query: str) -> set[str]:
    """The names (casefolded) of whom ``query`` asks about as a speaker ("what did Mira say"): as asked, and a named
    person's name, aliases and first name."""
    asked = {" ".join(w.casefold().split()) for w in rank.speaker_asked(query)}
    forms = set(asked)
    for e in named:
        called = {" ".join(f.casefold().split()) for f in (e.name, *e.aliases, e.name.split()[0])}
        if e.person and called & asked:
            forms |= called
    return forms


async def _voicing(mem: CampaignMemory, named: Sequence[_Called], query: str, sessions: list[int] | None) -> list[int]:
    """The lines (the latest first) the session's narrator says in the voice of someone ``query`` asks about as a
    speaker ("what did Mira say"), by the name asked, or a person's name, alias or first name ("(as Quillon)" voices
    Quillon Ashgrove): by a marker at the line's start (:func:`memory.text.voiced`), and going on in it
    (:func:`memory.offgame.voice_of`). Not a player's joke in a character's voice."""
    forms = _voiced_forms(named, query)
    if not forms:
        return []

    def asked_for(voice: str | None) -> bool:
        words = (voice or "").casefold().split()
        return bool(words) and (" ".join(words) in forms or words[0] in forms)

    voicing: list[tuple[int, int, str]] = []  # (entry id, session id, speaker) of each line in the voice
    for marked, *after in await mem.log.voicing(sorted(forms), sessions, reach=VOICE_LINES, limit=VOICING_DEPTH):
        if not asked_for(voice_left(marked[3])):
            continue
        voicing += [marked[:3]] * asked_for(voice_of(marked[3], []))
        for n, (entry_id, session_id, speaker, text) in enumerate(after):
            # the lines between, latest first: the walk back stops at the marker
            if asked_for(voice_of(text, [t for *_, t in reversed([marked, *after[:n]])])):
                voicing.append((entry_id, session_id, speaker))
    narrators = await mem.log.narrators() if voicing else {}
    return list(dict.fromkeys(i for i, sid, who in voicing if narrators.get(sid) == who))


def _voiced_first(
    voicing: Sequence[int], candidates: Sequence[int], entries: Mapping[int, lexical_ranker.Line], topic: Sequence[str]
) -> list[int]:
    """The lines in a voice asked about (the latest first): those saying more of ``topic`` (stems) first, then those
    found for the question, in order."""
    place = {i: n for n, i in enumerate(candidates)}

    def saying(i: int) -> int:
        words = _WORDS.findall(entries[i].text.casefold())
        return sum(any(w.startswith(stem) for w in words) for stem in topic)

    return sorted((i for i in voicing if i in entries), key=lambda i: (-saying(i), place.get(i, len(place))))


def _topic(terms: lexical_ranker.Query, named: Sequence[_Called], query: str) -> list[str]:
    """The stems of the question but the words of whom it asks about as a speaker: what "what did Quillon say about
    the lantern" asks him to have said."""
    called = {w for form in _voiced_forms(named, query) for w in form.split()}
    return [t.text for t in terms.terms if not any(w.startswith(t.text) or t.text.startswith(w) for w in called)]


_WORDS = re.compile(r"\w+")


#: A roll said: dice talk with a number ("Natural 20 plus 2, 22"), not the asking ("Can I roll insight?").
_NUMBER = re.compile(r"(?<![\w-])\d{1,3}(?![\w-])")


def _rolls(
    candidates: Sequence[int],
    around: Sequence[lexical_ranker.Line],
    rollers: set[str],
    entries: dict[int, lexical_ranker.Line],
) -> list[int]:
    """The rolls ``rollers`` (speakers, casefolded) said, each a candidate line or one of the ``rank.CONTEXT`` lines
    after one (the DM's "Sure, roll insight.", then "Natural 20 plus 2, 22"), in the candidates' order; added to
    ``entries``, the lines hits are made of. Dice talk, ranked down elsewhere, is the answer here."""
    at = {(line.session_id, line.seq): line for line in around}
    out: list[int] = []
    for asked in (entries[i] for i in candidates if i in entries):
        for n in range(rank.CONTEXT + 1):
            line = at.get((asked.session_id, asked.seq + n))
            if line is not None and line.speaker.casefold() in rollers and _rolled(line.text):
                out.append(line.id)
                entries.setdefault(line.id, line)
                break
    return [*dict.fromkeys(out)]


def _rolled(text: str) -> bool:
    return line_talk(text) == Talk.dice and _NUMBER.search(text) is not None


def _said_by(voices: list[rank.Speaker], asker: str | None) -> set[str]:
    """The speakers (casefolded) whose lines a question ties to what it names, as lines naming it are: a speaker it
    names by their own name ("what did Caroline paint"), the asker of a question in the first person. Not the
    player of a character it names: what Grog did, the DM mostly tells."""
    if not rank.SAID_BY_NAMED:
        return set()
    return {v.name.casefold() for v in voices if v.plays is None} | ({asker.casefold()} if asker else set())


async def _vectors(
    mem: CampaignMemory,
    embedder: Embedder | None,
    query: str | list[float],
    sessions: list[int] | None,
    speakers: list[str] | None,
    excluded: set[tuple[str, int]],
) -> tuple[dict[int, float], list[ChunkHit], float]:
    """The lines nearest the query's meaning (``query``: its text, or its embedding when the caller has it) with
    their cosines, or the nearest windows when the campaign's lines have no vectors yet (chunked before lines were
    embedded), and the closest one's cosine; ``excluded``: (speaker casefolded, session id) pairs whose lines are
    left out."""
    if isinstance(query, str):
        assert embedder is not None, "vector recall needs an embedder"
        query = await query_vector(embedder, query)
    session_id = sessions[0] if sessions else None
    lines = await mem.semantic.nearest_lines(
        query, k=LINE_VECTOR_DEPTH, session_id=session_id, speakers=speakers, excluded=excluded
    )
    if lines:
        return {line.entry_id: line.score for line in lines}, [], max(line.score for line in lines)
    windows = await mem.semantic.nearest(
        query, k=VECTOR_DEPTH, session_id=session_id, speakers=speakers, excluded=excluded
    )
    return {}, windows, max((w.score for w in windows), default=0.0)


#: Questions whose vectors each embedder keeps: a DM asks one again (or a player the DM's) for nothing.
QUERY_VECTORS_KEPT = 256
_query_vectors: weakref.WeakKeyDictionary[Embedder, OrderedDict[str, list[float]]] = weakref.WeakKeyDictionary()


async def query_vector(embedder: Embedder, text: str) -> list[float]:
    """``text``'s vector, from the last ``QUERY_VECTORS_KEPT`` questions ``embedder`` embedded when it is one."""
    kept = _query_vectors.setdefault(embedder, OrderedDict())
    if text in kept:
        kept.move_to_end(text)
        return kept[text]
    (vector,) = await embedder.embed([text])
    kept[text] = vector
    if len(kept) > QUERY_VECTORS_KEPT:
        kept.popitem(last=False)
    return vector


async def _speakers(
    mem: CampaignMemory,
    asked: list[str],
    *,
    dm: bool,
    narrators: bool = False,
    asker: str | None = None,
    alone: Sequence[str] = (),
) -> list[rank.Speaker]:
    """The campaign's speakers a question names by one of the forms ``asked`` (``rank.named_forms``): a speaker
    named so, and the players of an accepted character named so (name or alias) by its ``played_by`` attribute (a
    name or a list of names, as the session's lines name the speaker, any case). Players map public characters
    only (a secret one's name must not pick out whose lines to show). ``narrators``: "DM", "GM" also name each
    session's narrator (``_narrators``), and "I" the ``asker`` ("what did I say last session?"). Those of
    ``alone`` (who "what did X say" asks for) no speaker nor character is named also name the character they call
    alone, as its card does: "what did Thessaly say" of Thessaly Vorn."""
    if not asked:
        return []
    rows = await mem.db.fetch(
        f"""
        WITH asked AS (
            SELECT form, n FROM unnest($2::text[]) WITH ORDINALITY AS a(form, n)
        ), characters AS (
            SELECT a.n, e.id FROM asked a
            JOIN entities e ON e.campaign_id = $1 AND lower(e.name) = a.form AND e.status <> 'rejected'  -- its index
            UNION
            SELECT a.n, x.entity_id FROM asked a JOIN entity_aliases x ON x.campaign_id = $1 AND lower(x.alias) = a.form
        ), called AS (
            SELECT n, NULL::text AS plays, form AS name FROM asked
            UNION ALL
            SELECT c.n, e.name, lower(btrim(p.player)) FROM characters c
            JOIN entities e ON e.campaign_id = $1 AND e.id = c.id AND e.status = 'accepted'
             AND ($3 OR e.visibility = 'public')
            CROSS JOIN LATERAL {_players("e")} AS p(player)
        )
        -- a speaker counts once they have said something: one probe of the speaker index each, for the first
        -- name at or after theirs (with an equality the planner may scan every line for a first match it expects
        -- soon, and a name nobody has is every line)
        SELECT c.n, c.plays, s.speaker FROM called c CROSS JOIN LATERAL (
            SELECT speaker FROM session_entries WHERE campaign_id = $1 AND lower(speaker) >= c.name
            ORDER BY lower(speaker) LIMIT 1
        ) s
        WHERE lower(s.speaker) = c.name
        """,
        mem.campaign_id,
        asked,
        dm,
    )
    found = [rank.Speaker(r["speaker"], asked[r["n"] - 1], r["plays"]) for r in rows]
    for form in dict.fromkeys(alone).keys() - {s.called for s in found} - rank.DM_CALLED - {"i"}:
        if character := await mem.log.character_called(form, include_secret=dm):
            players = await _speakers(mem, [rank.name_key(character)], dm=dm)
            found += [replace(s, called=form) for s in players if s.plays]
    me: list[rank.Speaker] = []
    if asker and "i" in asked:  # the asker as the lines name them, when they said any (on Discord: whoever asks)
        me = [rank.Speaker(s.name, "i") for s in await _speakers(mem, [rank.name_key(asker)], dm=dm) if not s.plays]
    return found + me + await _narrators(mem, [form for form in asked if narrators and form in rank.DM_CALLED])


async def _narrators(mem: CampaignMemory, called: list[str]) -> list[rank.Speaker]:
    """Who "the DM" (each form of ``called``) is: each session's narrator (:func:`memory.offgame.narrator`: the
    user who ran a recorded session, else the speaker labelled DM, "Marcus (DM)", else who said the most), with
    the sessions they narrate. A campaign's DM may be "DM" one night and "Marcus" the next."""
    if not called:
        return []
    narrates: dict[str, list[int]] = {}
    for session_id, narrator in (await mem.log.narrators()).items():
        narrates.setdefault(narrator, []).append(session_id)
    return [rank.Speaker(name, form, narrates=tuple(ids)) for form in called for name, ids in narrates.items()]


async def _playing_another(mem: CampaignMemory, plays: dict[str, str], *, dm: bool) -> set[tuple[str, int]]:
    """(speaker casefolded, session id) where the speaker played another character than the one asked for: a
    player of two characters (``played_by``) whose other one took part in the session (its lines named it, as the
    recap links it) and the one asked for did not. A session naming both, or neither, says nothing of who was
    played: its lines stay. Players' questions read public characters' sessions only."""
    if not plays:
        return set()
    rows = await mem.db.fetch(
        f"""
        WITH asked AS (SELECT * FROM unnest($2::text[], $3::text[]) AS a(speaker, plays)),
        part AS (  -- who took part in which session: the recap's links
            SELECT r.source_id, r.provenance ->> 'session_id' AS session_id FROM relationships r
            WHERE r.campaign_id = $1 AND r.type = 'took_part_in' AND r.status = 'accepted'
        )
        SELECT DISTINCT a.speaker, p.session_id::bigint AS session_id FROM asked a
        JOIN entities c ON c.campaign_id = $1 AND lower(c.name) = lower(a.plays)
        JOIN entities o ON o.campaign_id = $1 AND o.id <> c.id AND o.status = 'accepted'
         AND ($4 OR o.visibility = 'public')
         AND EXISTS (
            SELECT 1 FROM {_players("o")} AS x(player)
            WHERE lower(btrim(x.player)) = a.speaker)
        JOIN part p ON p.source_id = o.id
        WHERE NOT EXISTS (SELECT 1 FROM part q WHERE q.source_id = c.id AND q.session_id = p.session_id)
        """,
        mem.campaign_id,
        list(plays),
        list(plays.values()),
        dm,
    )
    return {(r["speaker"], r["session_id"]) for r in rows}


async def recap_asked(mem: CampaignMemory, query: str) -> Session | None:
    """The session whose recap a question asks for ("what happened last session?", "recap session 3"), shown
    before the lines that answer it (its recall finds none: the recap answers it); None when it asks something
    else. A question naming a session the campaign lacks is told so, with the recent ones, as `recap` tells it."""
    played = await _titled(mem, _clipped(query))
    parsed = rank.parse(_clipped(query), titles=[s.title for s in played or ()])
    if not parsed.session:
        return None
    sessions = played if played is not None else await mem.log.sessions()
    chosen = rank.session_asked(parsed.filters, [(s.id, s.title, s.ended_at is not None) for s in sessions])
    if chosen is None:
        recent = ", ".join(repr(s.title) for s in sessions[-5:]) or "none yet"
        said = f"session {parsed.session}" if parsed.session.casefold().endswith(" ago") else parsed.session
        raise NotFoundError(f"no {said} in this campaign; recent ones: {recent}", subject="session")
    return next((s for s in sessions if s.id == chosen), None) if rank.recap_asked(parsed) else None


async def _titled(mem: CampaignMemory, query: str) -> list[Session] | None:
    """The campaign's sessions, whose titles with a number a question may name ("what happened in Night 2?"); None
    when it has no number to name one by (the sessions are read only then)."""
    return await mem.log.sessions() if any(c.isdigit() for c in query) else None


async def _parsed(
    mem: CampaignMemory, query: str, voices: Sequence[rank.Speaker], now: datetime
) -> tuple[rank.Parsed, list[int] | None]:
    """The question's filters and words (:func:`memory.recall_rank.parse`, its time told against ``now``), and the
    session it names (``_sessions``)."""
    played = await _titled(mem, query)
    parsed = rank.parse(query, voices, [s.title for s in played or ()], now=now)
    return parsed, await _sessions(mem, parsed.filters, played)


def _dated(filters: rank.Filters, candidates: Sequence[int], entries: Mapping[int, lexical_ranker.Line]) -> set[int]:
    """The ``candidates`` of sessions played in the days the question's time names (``filters.when``): by the day
    each line's session started (read with the line: a query for the sessions cost p95 50 ms at 60 sessions)."""
    if filters.when is None:
        return set()
    first, last = filters.when
    return {
        i
        for i in candidates
        if i in entries and (day := entries[i].started) is not None and first <= day.astimezone(UTC).date() <= last
    }


async def _sessions(
    mem: CampaignMemory, filters: rank.Filters, played: list[Session] | None = None
) -> list[int] | None:
    """The session a question names, None when it names none, [] when it names one the campaign does not have
    (``played``: the campaign's sessions, when read already)."""
    if not filters.names_session():
        return None
    sessions = played if played is not None else await mem.log.sessions()
    chosen = rank.session_asked(filters, [(s.id, s.title, s.ended_at is not None) for s in sessions])
    return [] if chosen is None else [chosen]


async def _named(names: _Names, text: str) -> list[_Called]:
    """The accepted entities the query's words name, with their names and aliases to expand it with."""
    called = await names()
    found = await asyncio.to_thread(lambda: Gazetteer(_worded(called, text)).find(text))
    return list({e.id: e for _, _, e in found}.values())[:NAMED_LIMIT]


async def _telling(mem: CampaignMemory, named: list[_Called], text: str) -> list[int]:
    """The lines that tell the entity ``text`` is the name or an alias of, in order: those it was proposed from (an
    event's: every line telling it). Others' words for it ("we arrive at Vasselheim tomorrow?") may rank higher,
    and the mention index only lifts the lines found."""
    asked = _words(text)
    whole = next((e for e in named if asked in {_words(form) for form in (e.name, *e.aliases)}), None)
    if whole is None or not asked:
        return []
    return list((await mem.graph.get_entity_by_id(whole.id)).provenance.entry_ids)


async def _told_in(mem: CampaignMemory, named: list[_Called], filters: rank.Filters, hits: int) -> list[int]:
    """The lines naming the entity a question asks about first or last ("when did we first meet Kevdak?"), in the
    order played (the last: the latest first), enough for ``hits`` hits. Their words ("first", "meet") are no
    search: any line saying "meet" ranked above the 30 naming Kevdak."""
    if filters.told_in is None or not named:
        return []
    newest = filters.told_in == "last"
    return await first_said(mem.db, mem.campaign_id, named[0].id, newest=newest, limit=TOLD_IN * hits)


async def _spoken(
    mem: CampaignMemory,
    speakers: list[str] | None,
    sessions: list[int] | None,
    excluded: set[tuple[str, int]],
    hits: int,
) -> list[int]:
    """The lines of ``speakers`` a question asks for with no topic ("what did Grog say in session 7?"), enough for
    ``hits`` hits: their story first (table talk last), the longest first, as the one who says most of them says
    it. Meaning alone ranked their "What did you do?" by how near it is to "say"."""
    if not speakers:
        return []
    lines = await mem.log.longest_said(speakers, sessions, excluded, TOLD_IN * hits)
    return [e.id for e in sorted(lines, key=lambda e: line_talk(e.text) is not None)]


def _words(text: str) -> str:
    return " ".join(t.norm for t in tokenize(text))


def _kept(
    line: lexical_ranker.Line, sessions: list[int] | None, speakers: list[str] | None, excluded: set[tuple[str, int]]
) -> bool:
    """Whether the filters of a question keep ``line``: its session, its speakers, and the (speaker, session) pairs
    ``excluded`` (lines found by meaning are filtered so too)."""
    return (
        (sessions is None or line.session_id in sessions)
        and (not speakers or line.speaker.casefold() in {s.casefold() for s in speakers})
        and (line.speaker.casefold(), line.session_id) not in excluded
    )


def _judged(text: str, span: tuple[int, int] | None) -> str:
    """What of a line is judged for table talk: its passage when it scored by one."""
    return text if span is None else text[span[0] : span[1]]


def _best_lines(
    scored: dict[int, float],
    windows: list[ChunkHit],
    entries: dict[int, lexical_ranker.Line],
    speakers: list[str] | None,
    excluded: set[tuple[str, int]],
) -> list[int]:
    """Each window found by meaning credited to its best line: the one BM25 scores highest for the question
    (``scored``), else its longest (a window of small talk around one line that says something); of ``speakers``
    when given, but for a speaker's lines of a session ``excluded`` names."""
    out: list[int] = []
    for w in windows:
        lines = [entries[i] for i in w.entry_ids if i in entries and _kept(entries[i], None, speakers, excluded)]
        if lines:
            out.append(max(lines, key=lambda e: (scored.get(e.id, 0.0), len(e.text.split()))).id)
    return out


def _hits(
    groups: list[rank.Group],
    fused: dict[int, rank.Fused],
    around: list[lexical_ranker.Line],
    plays: dict[str, str],
    passage: Callable[[int], tuple[int, int] | None],
) -> list[RecallHit]:
    """The hits' lines, whole and in order, with their session and citation. Every line of a group is a ranked
    line or within ``rank.CONTEXT`` of one (a line joins a hit only that near it), so ``around`` holds them all.
    ``plays``: the character each asked-for player's speaker (casefolded) plays; ``passage``: the characters a
    long line that scored by a passage shows of it."""
    return [
        _hit(
            g,
            [r for r in around if r.session_id == g.session_id and g.first <= r.seq <= g.last],
            [m for i in g.matched for m in fused[i].matched],
            plays,
            passage,
        )
        for g in groups
    ]


def _hit(
    g: rank.Group,
    rows: list[lexical_ranker.Line],
    how: list[str],
    plays: dict[str, str],
    passage: Callable[[int], tuple[int, int] | None],
) -> RecallHit:
    matched = set(g.matched)
    # a long line that scored is shown by its passage (read here: the bench varies it)
    shown = rank.SHOW_PASSAGES
    first = next((r.seq for r in rows if r.id in matched), g.first)
    lines = [
        HitLine(
            entry_id=r.id,
            session_id=r.session_id,
            seq=r.seq,
            speaker=r.speaker,
            plays=plays.get(r.speaker.casefold()),
            text=r.text,
            start_s=r.start_s,
            ref=r.ref,
            matched=r.id in matched,
            context="" if r.id in matched else "before" if r.seq < first else "after",
            passage=passage(r.id) if shown and r.id in matched else None,
        )
        for r in rows
    ]
    return RecallHit(
        session_id=g.session_id,
        session=rows[0].session if rows else "",
        started=rows[0].started if rows else None,
        speakers=list(dict.fromkeys(r.speaker for r in rows)),
        start_s=rows[0].start_s if rows else None,
        end_s=max((r.end_s or r.start_s for r in rows), default=None),
        text="\n".join(f"{r.speaker}: {r.text}" for r in rows),  # whole, for tools that mask it themselves
        score=round(g.score, 6),
        refs=[r.ref for r in rows if r.ref],
        entry_ids=[r.id for r in rows],
        matched=list(dict.fromkeys(how)),
        lines=lines,
    )


class KnownFact(BaseModel):
    text: str  # "Ember Key —owned_by→ Pip": its type as stored, for machines (--json, MCP)
    words: str  # "Ember Key is owned by Pip": what a DM reads (/recall, `lorekeeper recall`)
    secret: bool


class NamedEntity(BaseModel):
    """An entity a query names, as its reader may see it: its description and its current facts."""

    name: str
    type: EntityType
    secret: bool
    description: str
    facts: list[KnownFact]
    more_facts: int = 0  # current facts not in ``facts``: those learned before them

    def heading(self) -> str:
        return self.name + SECRET_MARK * self.secret

    def fact_lines(self) -> list[str]:
        more = [f"… and {self.more_facts:,} earlier fact{'s' * (self.more_facts != 1)} on its card"]
        return [f.words + SECRET_MARK * f.secret for f in self.facts] + more * bool(self.more_facts)


async def named_entities(mem: CampaignMemory, query: str, *, dm: bool, limit: int = NAMED_LIMIT) -> list[NamedEntity]:
    """The accepted entities ``query`` names (a name or an alias, whole words, longest first), in the order it
    names them, with their current facts. Players (not ``dm``) see neither a secret entity nor a secret fact, and
    a secret name in what they read is masked: they name an entity as they read it ("Session: [secret] unmasked"),
    so a guess of the secret its name holds is not confirmed. Only the query's first ``QUERY_CHARS`` count."""
    names = _Names(mem, include_secret=dm)
    query, _ = await _as_heard(mem, _clipped(query), None, dm=dm, names=names)
    called = await names()
    mask = str if dm else await mem.graph.player_mask()

    def find() -> list[tuple[int, int, _Called]]:
        shown = called if dm else [_Called(e.id, mask(e.name), list(map(mask, e.aliases)), e.person) for e in called]
        return Gazetteer(_worded(_by_first_name(shown, query), query)).find(query)

    # pure Python over every name (0.2–0.3 s for 20,000 entities): off the event loop, which serves the bot
    found = await asyncio.to_thread(find)
    named = list({e.id: e for _, _, e in found}.values())[:limit]
    out: list[NamedEntity] = []
    for one in named:
        entity = await mem.graph.get_entity_by_id(one.id)
        brief = await mem.graph.facts_in_brief(
            entity.id, include_secret=dm, shown=FACTS_SHOWN, sessions_shown=SESSIONS_SHOWN
        )
        # the sessions it took part in as one line, as on its card: a player of a long campaign has a hundred
        sessions = took_part_line(brief.sessions, brief.session_count, mask)
        # marked as its card marks them: secret, or about a secret entity; a secret entity's facts are its heading's
        hidden = {f.id for f in brief.facts if f.visibility == Visibility.secret} if dm else set()
        if dm and entity.visibility != Visibility.secret:
            hidden |= set(brief.secret_ends)
        known = [
            KnownFact(text=mask(f.describe()), words=mask(f.in_words()), secret=f.id in hidden) for f in brief.facts
        ]
        out.append(
            NamedEntity(
                name=mask(entity.name),
                type=entity.type,
                secret=entity.visibility == Visibility.secret,
                description=_shortened(mask(entity.description)),
                facts=known + [KnownFact(text=sessions, words=sessions, secret=False)] * bool(sessions),
                more_facts=brief.more,
            )
        )
    return out


def _shortened(description: str) -> str:
    """A description as a recall shows it: its start, so the current facts after it are not crowded out."""
    # no names: its start, cut between words with "…" as line previews are, not in a word
    return excerpt(" ".join(description.split()), (), DESCRIPTION_SHOWN)


@dataclass(frozen=True, slots=True)
class _Called:
    """What the gazetteer needs of an entity: a campaign may have thousands, and a query names one or two."""

    id: int
    name: str
    aliases: list[str]
    person: bool = False  # an npc or a player: named by a first (or last) name alone


async def _as_heard(
    mem: CampaignMemory, query: str, embedding: list[float] | None, *, dm: bool, names: _Names
) -> tuple[str, list[float] | None]:
    """``query`` with what the recogniser writes for a name (its heard-as phrases, the longest first) read as the
    name, as stage-1 correction reads a line: a DM types "what did key love say" as the bot wrote it in voice. Its
    ``embedding`` is kept when it is unchanged."""
    rows = await mem.db.fetch(
        """
        SELECT h.phrase, e.name FROM entity_heard_as h JOIN entities e ON e.campaign_id = $1 AND e.id = h.entity_id
        WHERE h.campaign_id = $1 AND e.status = 'accepted' AND ($2 OR e.visibility = 'public')
        ORDER BY length(h.phrase) DESC
        """,
        mem.campaign_id,
        dm,
    )
    read = query
    for r in rows:
        said = re.compile(rf"(?<![\w'’]){re.escape(r['phrase'])}(?![\w'’])", re.IGNORECASE)
        read = said.sub(str(r["name"]).replace("\\", "\\\\"), read)  # a name with a backslash is no group
    for word, name in (await _misspelt(mem, read, names)).items():
        read = re.sub(rf"(?<![\w'’]){re.escape(word)}(?![\w'’])", name.replace("\\", "\\\\"), read)
    return read, embedding if read == query else None


#: How alike (difflib's ratio) a word no line says must be to a word of a name to be read as it: "Tordak" is
#: Thordak (0.92), "Skanlan" Scanlan (0.86); "Grig" is not Grog (0.75).
MISSPELT = 0.85


async def _misspelt(mem: CampaignMemory, query: str, names: _Names) -> dict[str, str]:
    """The capitalised words of ``query`` that are no everyday English word, each with the one word of the names and
    aliases spelled nearly like it ("Tordak": "Thordak") where no line of the campaign says it, or it is that word to
    the search (its stem: "Gilmor" of Gilmore): searched as it is, the first finds nothing, and neither shows the
    entity."""
    asked = {w for w in re.findall(r"\b[^\W\d_a-z][^\W\d_]{3,}\b", query) if word_zipf(w.casefold()) < _COMMON_ZIPF}
    if not asked:
        return {}
    rows = await mem.db.fetch(
        """
        SELECT w, s.stems, EXISTS (
            SELECT FROM recall_terms t WHERE t.campaign_id = $1 AND t.lines > 0 AND t.term = ANY(s.stems)) AS said
        FROM unnest($2::text[]) w, LATERAL (SELECT tsvector_to_array(to_tsvector('english', searchable(w))) AS stems) s
        """,
        mem.campaign_id,
        sorted(asked),
    )
    words = {t for e in await names() for f in (e.name, *e.aliases) for t in f.split()}
    near = {w.strip(".,'’").casefold(): w.strip(".,'’") for w in words}
    close: dict[str, str] = {}
    for r in (r for r in rows if r["w"].casefold() not in near):
        # a word said, as its stem: only a name word of that stem, which a stem begins
        keys = [k for k in near if not r["said"] or k.startswith(tuple(r["stems"]))]
        found = [near[k] for k in keys if rank.alike(r["w"].casefold(), k, MISSPELT)]
        if len(found) == 1:
            close[r["w"]] = found[0]
    said = {r["w"]: r["stems"] for r in rows if r["said"] and r["w"] in close}
    if said:  # "Kerr" said is no misspelt "Kerry": a word said counts as the name only where it stems as it
        same = await mem.db.fetch(
            """
            SELECT w FROM unnest($1::text[], $2::text[]) AS p(w, name)
            WHERE to_tsvector('english', searchable(w)) = to_tsvector('english', searchable(name))
            """,
            list(said),
            [close[w] for w in said],
        )
        kept = {r["w"] for r in same}
        close = {w: n for w, n in close.items() if w not in said or w in kept}
    return close


async def _unsaid(mem: CampaignMemory, query: str) -> str:
    """A player's ``query`` without the secret names it says, in any form the search reads as one (see
    :meth:`~memory.graph.masking.SecretMask.unsaid`)."""
    mask = await mem.graph.player_mask()
    words = query.split()
    if not words or not mask.names:
        return " ".join(words)
    rows = await mem.db.fetch(
        "SELECT w, tsvector_to_array(to_tsvector('english', searchable(w))) AS stems FROM unnest($1::text[]) w",
        sorted({*words, *(w for name in mask.names for w in name.split())}),
    )
    return " ".join(mask.unsaid(words, {r["w"]: r["stems"] for r in rows}))


async def _names(mem: CampaignMemory, *, include_secret: bool) -> list[_Called]:
    rows = await mem.db.fetch(
        """
        SELECT e.id, e.name, coalesce(array_agg(a.alias) FILTER (WHERE a.alias IS NOT NULL), '{}') AS aliases,
               e.type = ANY($3::text[]) AS person
        FROM entities e LEFT JOIN entity_aliases a ON a.campaign_id = $1 AND a.entity_id = e.id
        WHERE e.campaign_id = $1 AND e.status = 'accepted' AND ($2 OR e.visibility = 'public')
        GROUP BY e.id
        """,
        mem.campaign_id,
        include_secret,
        sorted(PERSON_TYPES),
    )
    return [_Called(r["id"], r["name"], r["aliases"], r["person"]) for r in rows]


class _Names:
    """The campaign's accepted entities as recall reads them (``_names``), read once however many of its steps ask:
    a campaign has thousands (1,500 rows, 5-10 ms, twice a question that named one)."""

    def __init__(self, mem: CampaignMemory, *, include_secret: bool) -> None:
        self.mem = mem
        self.include_secret = include_secret
        self._read: list[_Called] | None = None

    async def __call__(self) -> list[_Called]:
        if self._read is None:
            self._read = await _names(self.mem, include_secret=self.include_secret)
        return self._read


#: From this Zipf frequency a word is everyday English ("Keeper", "Lady"): no first name alone.
_COMMON_ZIPF = MatchSettings().common_zipf


def _asked_alone(query: str) -> set[str]:
    """The words a question may call someone by alone: written with a capital, of 3 letters or more, no everyday
    English word. A question's guard, not a line's (the gazetteer's, which lets "Crane nods." name Crane): a DM
    capitalises a thing's word ("where is the Keeper?") and types a name in lower case, where case says nothing."""
    return {
        t.norm
        for t in tokenize(query)
        if query[t.start].isupper() and len(t.norm) >= 3 and word_zipf(t.norm) < _COMMON_ZIPF
    }


def _by_first_name(entities: list[_Called], query: str) -> list[_Called]:
    """``entities`` with the one word an entity is called by alone as an alias, where the question says it
    (``_asked_alone``): who a line names by it (the gazetteer's :func:`short_names`: a person's first or last name,
    a name's one word without its title, each that one entity's), so "who killed Jazna?" asks of Jazna Grebin.
    For the cards a recall shows only: expanding the search with the whole name ("Briarwood") lost one of the DM's
    12 dev questions in the first 3 hits (wiki entities typed npc), and what lines mention stays the mention
    index's."""
    asked = _asked_alone(query)
    if not asked:
        return entities
    # only those whose names hold an asked word can be called by it, or share it: the short names of a large
    # campaign's every entity take a second
    near = [e for e in entities if any(w in _normal(form) for form in (e.name, *e.aliases) for w in asked)]
    alone = {w: e.id for w, e in short_names({e.id for e in near if e.person}, near).items() if w in asked}
    return [
        replace(e, aliases=[*e.aliases, *called]) if (called := [w for w, p in alone.items() if p == e.id]) else e
        for e in entities
    ]


@lru_cache(maxsize=65536)
def _normal(name: str) -> str:
    return normalize(name)


def _worded(entities: list[_Called], query: str) -> list[_Called]:
    """Those with a name or alias whose every word is one of the query's, all the gazetteer could find: building
    it for each of a large campaign's entities would take longer than the search."""
    words = {w for t in tokenize(query) for w in (t.norm, normalize(query[t.start : t.end]))}
    return [e for e in entities if any(said <= words for s in (e.name, *e.aliases) for said in _name_words(s))]


@lru_cache(maxsize=65536)
def _name_words(name: str) -> tuple[frozenset[str], frozenset[str]]:
    """The words of a name or alias in each form a question may say it (``normalize``, ``spaced_form``). Memoised:
    a campaign's names are the same from one question to the next, and normalising 1,500 of them took 10 ms each."""
    return frozenset(normalize(name).split()), frozenset(spaced_form(name).split())
