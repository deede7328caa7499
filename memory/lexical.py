"""BM25 over the lines of a campaign's log, computed in PostgreSQL.

Each line's ``tsv`` (its English stems, the GIN-indexed column full-text search uses) is the bag of words; the
document frequency of every term and the campaign's size live in ``recall_terms`` / ``recall_corpus``, which
triggers keep in step with ``session_entries`` in the writing transaction (migration 0018): nothing to rebuild,
nothing another campaign can see. ``ts_rank_cd`` has no IDF, so a line saying only a common name tied with the
line holding the question's rare words; here the rare words weigh what they should. A long line also scores as its
best passage (``PASSAGE_WORDS``), read from its tsvector's positions, which recall shows instead of the whole line.
A line's score is scaled by the share of the question it says (``COVERAGE_POWER``), and a name's aliases the
question was expanded with count as one word. When the question names entities, a line naming one weighs a word of
the question its other lines say more often than the campaign's by its rarity among them (``ENTITY_RARITY``).

To stay flat as a campaign grows, candidate lines are fetched through the GIN index by the query's rarest terms
only, up to ``FETCH_BUDGET`` lines; the commoner terms score those lines but fetch none (a line holding only
common words scores low, and such lines would be most of the work).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

from memory.correction.evidence import word_zipf
from memory.db import Executor

#: BM25's usual constants (Robertson; Lucene and bm25s use these or close): term-frequency saturation and how much
#: a line's length discounts it.
K1, B = 1.2, 0.75
#: Lines fetched through the index at most, rarest terms first: the terms past this budget still score the lines
#: fetched but fetch none (their IDF is low, and their lines would be most of the work at 150k lines).
FETCH_BUDGET = 500
#: Terms of a query scored at most (its rarest): a question has a dozen; a pasted page would cost its length.
MAX_TERMS = 32
#: A line of more distinct terms than a passage of ``PASSAGE_WORDS`` words holds is also scored by its best
#: passage: the window of that many words (tsvector positions) with the highest BM25, its terms counted inside it
#: and its length that of a passage. Whole, a DM's 450-word narration holding the question's rarest word lost to
#: "Come on." saying a common one (the length factor was ~24x). On the DM's dev questions (bench/recall.py
#: --dm-questions) 15 and 20 did best, then 25-30, then 40-80; CRD3 and LongMemEval dev alike. 0: scored whole.
PASSAGE_WORDS = 20
#: The length (distinct terms) a passage counts as: English keeps about half of its words as terms.
PASSAGE_TERMS_PER_WORD = 0.5
#: A passage counts how often it says a term (False: once, as a whole line does).
PASSAGE_TF = True
#: How much a long line's best passage counts against the line whole (0: found, to be shown, but not scored).
PASSAGE_WEIGHT = 1.0
#: A line ranks as the hit it shows: its BM25 plus this much of what the lines shown beside it (within ``context``
#: in its session, fetched) add, the query's terms it lacks, each once at its best neighbour's score. Conversation
#: spreads an answer's words over adjacent turns (a question and its reply). CRD3 dev at 10 lines: .675 -> .700 for
#: 0.25 to 1 (0.25 lost one LongMemEval dev question). Adding the neighbours' whole scores counted a word both say
#: twice (the DM's dev questions, 10 lines: .500 -> .417); a line shown alone (``alone_from`` words) counts none:
#: its neighbours are not read (counting them lost 1-2 of 60 on LongMemEval dev). 0: each line alone.
NEIGHBOUR_WEIGHT = 0.5
#: A line's score is multiplied by the share of the question it covers (the IDF of the question's terms it says,
#: an alias of a name counting for the name, over all of them; those said beside it as ``NEIGHBOUR_WEIGHT``
#: counts them), to this power. BM25 only adds its terms' scores, so "Come on." saying the commonest word of "what
#: festival is coming up" outranked the line saying "festival" (Lucene's classic coord factor did the same).
#: Dev at 10 lines (bench/recall.py): the DM's questions .500 -> .667, CRD3 .700 -> .713, LongMemEval .883 both
#: (1 of 60 lost at 25 lines); 1 and 2 the same but LongMemEval all@5 .883 -> .850. 0: BM25 alone.
COVERAGE_POWER = 0.5
#: A line counts at least this many terms long in BM25's length factor: a passage's (``PASSAGE_WORDS`` x
#: ``PASSAGE_TERMS_PER_WORD``). A two-word line is no more about its word than a passage (it is read with its
#: neighbours): "I die." and "No one else die." had twice the weight of "die" a passage had, and ranked above the
#: DM's "... Vex has fallen" for "how did Vex die?". Dev (bench/recall.py): 5 and 10 tie, the DM's questions in the
#: first 3 hits .500 -> .583; 15 loses. 0: a line's own length.
LENGTH_FLOOR = 10
#: In a line naming an entity the question names, each of the question's other words weighs its rarity among that
#: entity's other lines, where they say it more often than the campaign's (the lowest over the entities named):
#: every line of Thordak's lair says "lair", rarer campaign-wide than "egg", so "what was in the eggs in Thordak's
#: lair?" ranked the lair's lines, each saying "Thordak" and "lair", above his egg's. The IDF becomes
#: -ln P(term | entity) (BM25's own IDF is -ln P(term) with its +0.5 counts), ``P`` smoothed by ``ENTITY_PRIOR``
#: lines at the campaign's rate and counted without the line weighed (Pike's one line is no evidence against its
#: words). Lines naming none keep the campaign's IDF: weighed so too, "sun" and "tree" of "what did Keyleth learn
#: from the Sun Tree?" (4 of her 39 lines) lost the answer that does not name her. Dev (bench/recall.py): the DM's
#: questions in the first 3 hits .583 -> .667, the rest the same. 1: so; 0: the campaign's IDF everywhere.
ENTITY_RARITY = 1.0
#: Lines at the campaign's rate a named entity's lines are smoothed with (see ``ENTITY_RARITY``).
ENTITY_PRIOR = 10
#: From this Zipf frequency a word of a name the question says is an everyday word ("keep" of "Greyskull Keep",
#: 5.7), which counts only where a line says the name: "keeping busy" ranked above the one line naming the keep.
#: "Gilmore" (3.3) and "Shaun" (3.6) count alone. Stems that are no word ("palac") count alone too.
EVERYDAY_ZIPF = 4.0
#: The lines of a named entity read for its words' rarity at most, its newest: a campaign's main character is
#: named in thousands, and a sample says which words its lines share as well.
ENTITY_LINES = 2000


@dataclass(frozen=True, slots=True)
class Term:
    text: str  # a stem as the tsvector holds it
    lines: int  # document frequency
    weight: float  # the query's weight for it (1 for its own words; less for an alias it was expanded with)
    expanded: bool = False  # also a word of a name or alias the query was expanded with
    #: what a line must say for it to count, as tsquery text: the names and aliases it is a word of, as phrases,
    #: when the question does not say it or it is an everyday word (``EVERYDAY_ZIPF``; "" its stem alone): "Kern the
    #: Hammer" is no search for "hammer"
    phrases: str = ""
    #: for each entity the question names: how many of its lines (``ENTITY_LINES`` at most) say it, of how many
    said_with: tuple[tuple[int, int], ...] = ()

    def operand(self) -> str:
        """The term as a tsquery operand."""
        return self.phrases or tsquery_literal(self.text)


@dataclass(frozen=True, slots=True)
class LineScore:
    entry_id: int
    score: float  # its BM25, with what its neighbours add (``NEIGHBOUR_WEIGHT``)
    terms: tuple[str, ...]  # the query's terms the line holds
    passage: tuple[int, int] | None = None  # a long line's best passage: its first and last term's positions


#: What a query's term is to coverage: one of the question's words, one that also names an entity it names, or only
#: a word of a name or alias the question was expanded with.
PLAIN, NAMED, ALIAS = 0, 1, 2


def _covered(term: str) -> str:
    """SQL aggregates: a line's (or its neighbours') IDF-weights of the query's terms it says, by kind (``term``: the
    terms' alias)."""
    return ", ".join(
        f"coalesce(sum({term}.weight) FILTER (WHERE {term}.kind = {kind}), 0) AS {name}"
        for name, kind in (("plain", PLAIN), ("named", NAMED), ("alias", ALIAS))
    )


def _aliases_once(score: str, term: str) -> str:
    """SQL aggregate: the sum of the terms' ``score`` but the aliases a question was expanded with, which count as one,
    the best of them (``term``: the terms' alias): a name is said once, however many words its full form has
    ("Percival Fredrickstein von Musel Klossowski de Rolo" for "Percy")."""
    return (
        f"coalesce(sum({score}) FILTER (WHERE {term}.kind <> {ALIAS}), 0)"
        f" + coalesce(max({score}) FILTER (WHERE {term}.kind = {ALIAS}), 0)"
    )


def _kind(term: Term) -> int:
    return ALIAS if term.weight < 1 else NAMED if term.expanded else PLAIN


def _coverage(line: str, beside: str, weight: float) -> str:
    """SQL: the IDF-weight of the question a line covers, what is said beside it counting ``weight``. A name's share
    (``$19``, its words in the question) is covered once: by the question's own words for it or by the aliases it
    was expanded with, whichever says more ("Eldrinax" covers "the Ember Wyrm", "Percival ... de Rolo" only
    "Percy")."""

    def said(kind: str) -> str:
        return f"({line}.{kind} + {float(weight)} * coalesce({beside}.{kind}, 0))"

    return f"({said('plain')} + greatest({said('named')}, least({said('alias')}, $19::float8)))"


def idf(lines_with_term: int, lines: int) -> float:
    """BM25's IDF (the non-negative form of Lucene and bm25s): a term in every line still counts a little."""
    return math.log(1 + (lines - lines_with_term + 0.5) / (lines_with_term + 0.5))


def entity_idf(lines_with_term: int, lines: int, said_with: Sequence[tuple[int, int]] = ()) -> float:
    """A term's IDF as a question naming entities weighs it: the campaign's (:func:`idf`), or where the lines of an
    entity it names say it more often than the campaign's do, -ln of its rate among them (``said_with``: the lines
    of each entity saying it, of how many), smoothed by ``ENTITY_PRIOR`` lines at the campaign's rate; the lowest
    over the entities, ``ENTITY_RARITY`` of the way from the campaign's."""
    campaign = idf(lines_with_term, lines)
    rate = (lines_with_term + 0.5) / (lines + 1)  # idf() is -ln of it
    among = [(said + ENTITY_PRIOR * rate) / (of + ENTITY_PRIOR) for said, of in said_with if of]
    conditional = min((-math.log(min(1.0, p)) for p in among), default=campaign)
    return campaign - ENTITY_RARITY * max(0.0, campaign - conditional)


def tsquery_literal(term: str) -> str:
    """A stem as a quoted tsquery operand: quotes doubled and backslashes escaped, so any word is one operand."""
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def fetch_terms(terms: Sequence[Term], *, budget: int = FETCH_BUDGET) -> tuple[list[Term], bool]:
    """The terms that fetch candidate lines: the rarest while their lines add up to at most ``budget`` (the rarest
    always), and whether the fetch must be bounded (even the rarest is in more than ``budget`` lines)."""
    chosen: list[Term] = []
    total = 0
    for term in sorted(terms, key=lambda t: (t.lines, t.text)):
        if chosen and total + term.lines > budget:
            break
        chosen.append(term)
        total += term.lines
    return chosen, total > budget


def tsquery_of(terms: Sequence[Term]) -> str | None:
    """Any of ``terms``, as tsquery text."""
    return " | ".join(t.operand() for t in terms) or None


@dataclass(frozen=True, slots=True)
class Query:
    """A query's terms (its rarest ``MAX_TERMS``) as this campaign counts them, read once for every list scored."""

    terms: list[Term]
    lines: int  # the campaign's
    mean_length: float

    def idf(self, term: Term) -> float:
        """The campaign's IDF of ``term``."""
        return idf(term.lines, self.lines)

    def among_named(self, term: Term) -> float:
        """The IDF ``term`` weighs in a line naming an entity the question names: a word of the question that is no
        name, by its rarity among those entities' lines (:func:`entity_idf`); a name's words, by the campaign's."""
        if _kind(term) == PLAIN:  # counted without the line itself: a line is no evidence against its own word
            return entity_idf(term.lines, self.lines, [(max(0, said - 1), of - 1) for said, of in term.said_with])
        return idf(term.lines, self.lines)


async def prepare(
    db: Executor, campaign_id: int, phrases: Sequence[tuple[str, float]], entity_ids: Sequence[int] = ()
) -> Query:
    """The query ``phrases`` (text, weight) make, against the campaign's counts and the lines of the entities it
    names (``entity_ids``)."""
    terms, lines, mean_length = await query_terms(db, campaign_id, phrases, entity_ids)
    # a pasted page: its rarest words count
    return Query(sorted(terms, key=lambda t: (t.lines, t.text))[:MAX_TERMS], lines, mean_length)


async def query_terms(
    db: Executor, campaign_id: int, phrases: Sequence[tuple[str, float]], entity_ids: Sequence[int] = ()
) -> tuple[list[Term], int, float]:
    """The stems of ``phrases`` (text, weight; a stem keeps its highest weight) with their document frequency in
    the campaign and among the lines mentioning each of ``entity_ids`` (the newest ``ENTITY_LINES``), and the
    campaign's line count and mean line length."""
    # the campaign's counts ride along on every row (a LEFT JOIN keeps them when no stem is known): one round trip
    rows = await db.fetch(
        f"""
        WITH stems AS (
            SELECT u AS term, max(p.weight) AS weight, bool_or(p.weight < 1) AS expanded,
                   string_agg(DISTINCT '(' || phraseto_tsquery('english', searchable(p.phrase))::text || ')', ' | ')
                       FILTER (WHERE p.weight < 1) AS phrases
            FROM unnest($2::text[], $3::float8[]) AS p(phrase, weight),
                 unnest(tsvector_to_array(to_tsvector('english', searchable(p.phrase)))) u
            GROUP BY u
        ), among AS MATERIALIZED (  -- the newest lines mentioning each entity named, the query's stems they say
            SELECT x.id AS entity,
                   tsvector_to_array(ts_filter(setweight(e.tsv, 'A', (SELECT array_agg(term) FROM stems)), '{{a}}'))
                       AS said
            FROM unnest($4::bigint[]) x(id) CROSS JOIN LATERAL (
                SELECT m.entry_id FROM entity_mentions m WHERE m.campaign_id = $1 AND m.entity_id = x.id
                ORDER BY m.entry_id DESC LIMIT {int(ENTITY_LINES)}
            ) m JOIN session_entries e ON e.campaign_id = $1 AND e.id = m.entry_id
        ), sizes AS (
            SELECT entity, count(*) AS lines FROM among GROUP BY entity
        ), said AS (
            SELECT a.entity, u AS term, count(*) AS lines FROM among a, unnest(a.said) u GROUP BY a.entity, u
        )
        SELECT s.term, s.weight, s.expanded, s.phrases, coalesce(t.lines, 0) AS lines,
               c.lines AS corpus_lines, c.terms AS corpus_terms, w.said, w.of
        FROM (SELECT 1) one
        LEFT JOIN recall_corpus c ON c.campaign_id = $1
        LEFT JOIN stems s ON true
        LEFT JOIN recall_terms t ON t.campaign_id = $1 AND t.term = s.term
        LEFT JOIN LATERAL (
            SELECT array_agg(coalesce(d.lines, 0) ORDER BY z.entity) AS said, array_agg(z.lines ORDER BY z.entity) AS of
            FROM sizes z LEFT JOIN said d ON d.entity = z.entity AND d.term = s.term
        ) w ON true
        """,
        campaign_id,
        [p for p, _ in phrases],
        [w for _, w in phrases],
        list(entity_ids),
    )
    first = rows[0]  # the LEFT JOINs from one row always give one
    lines, length = (first["corpus_lines"], first["corpus_terms"]) if first["corpus_lines"] is not None else (0, 0)
    terms = [
        Term(
            r["term"],
            r["lines"],
            r["weight"],
            r["expanded"],
            r["phrases"] if r["weight"] < 1 or word_zipf(r["term"]) >= EVERYDAY_ZIPF else "",
            tuple(zip(r["said"] or (), r["of"] or (), strict=True)),
        )
        for r in rows
        if r["term"] is not None and r["lines"] > 0
    ]
    return sorted(terms, key=lambda t: t.text), lines, length / lines if lines else 1.0


def _fetched(query: Query, budget: int) -> tuple[str | None, str]:
    """The tsquery fetching candidate lines (None: the query has no known term) and the clause bounding them."""
    fetching, bounded = fetch_terms(query.terms, budget=budget)
    # a query of common words only reads the newest lines of its rarest: flat, and the latest is what it asks
    return tsquery_of(fetching), f"ORDER BY e.id DESC LIMIT {int(budget)}" if bounded else ""


@dataclass(frozen=True, slots=True)
class Line:
    """A line as recall ranks and shows it (not the whole :class:`~memory.models.Entry`), with its session's title."""

    id: int
    session_id: int
    seq: int
    speaker: str
    text: str
    start_s: float
    end_s: float | None
    ref: str | None
    session: str  # its session's title
    started: datetime | None = None  # and when it was played


@dataclass(frozen=True, slots=True)
class Candidates:
    lexical: list[LineScore]  # the best lines by BM25, best first
    scored: dict[int, float]  # the BM25 of each line of ``also`` that holds a term of the query
    passages: dict[int, tuple[int, int]]  # a long line's best passage (see ``LineScore.passage``), of both
    lines: dict[int, Line]  # every line of both
    mentioning: set[int]  # those the mention index ties to one of ``entity_ids``
    off_game: set[int]  # those the chunk job marked as the pre-show, a break or the after-show
    around: list[Line]  # every line of both and those within ``context`` of one, by session and seq


async def candidates(
    db: Executor,
    campaign_id: int,
    query: Query,
    *,
    limit: int,
    also: Sequence[int] = (),
    entity_ids: Sequence[int] = (),
    session_ids: Sequence[int] | None = None,
    speakers: Sequence[str] | None = None,
    excluded: Collection[tuple[str, int]] = (),
    context: int = 1,
    alone_from: int | None = None,
    budget: int = FETCH_BUDGET,
) -> Candidates:
    """In one statement (a recall's round trips were most of its time): the ``limit`` lines with the highest BM25
    for ``query`` (the question and its expansions, each weighted; a line of fewer than ``alone_from`` words, None:
    any, with what its neighbours add, see ``NEIGHBOUR_WEIGHT``; best first, ties to the newer line;
    ``session_ids`` / ``speakers``, case-insensitive, keep only those lines; ``excluded``, (speaker lowercased,
    session id) pairs, leaves out a speaker's lines of a session), the BM25 of the lines ``also`` (those
    of windows found by meaning: any session or speaker), which of them mention ``entity_ids``, and every one of
    them with the lines within ``context`` of it (a hit's lines, read before it is known which will be shown),
    and which of both are table talk by the chunk job's marks. ``limit`` 0: no lexical list (only ``also``
    scored)."""
    fetch, bounded = _fetched(query, budget) if query.terms and limit else (None, "")
    rows = await db.fetch(
        f"""
        WITH fetched AS (
            SELECT e.id, e.session_id, e.seq, e.text, e.tsv, true AS fetched FROM session_entries e
            WHERE e.campaign_id = $1 AND $6::tsquery IS NOT NULL AND e.tsv @@ $6::tsquery
              AND ($7::bigint[] IS NULL OR e.session_id = ANY($7::bigint[]))
              AND ($8::text[] IS NULL OR lower(e.speaker) = ANY($8::text[]))
              AND NOT EXISTS (
                  SELECT FROM unnest($14::text[], $15::bigint[]) AS x(speaker, session_id)
                  WHERE x.session_id = e.session_id AND x.speaker = lower(e.speaker))
            {bounded}
        ), also AS (
            SELECT e.id, e.session_id, e.seq, e.text, e.tsv, false AS fetched FROM session_entries e
            WHERE e.campaign_id = $1 AND e.id = ANY($9::bigint[])
        ), base AS (
            -- tf counts 1 (a line rarely says a word twice): each term is one C-level @@ on the line's own
            -- tsvector, four times faster than unnesting it; the line's length still discounts (BM25's b)
            SELECT l.id, l.session_id, l.seq, l.text, l.fetched, l.tsv, l.entity, length(l.tsv) AS dl, m.score,
                   m.terms, m.plain, m.named, m.alias
            FROM (  -- a line naming an entity the question names weighs its words by that entity's lines
                SELECT u.*, EXISTS (
                    SELECT FROM entity_mentions m
                    WHERE m.campaign_id = $1 AND m.entry_id = u.id AND m.entity_id = ANY($11::bigint[])) AS entity
                FROM (SELECT * FROM fetched UNION ALL SELECT * FROM also) u
            ) l CROSS JOIN LATERAL (
                SELECT {_aliases_once("w.weight", "w")} AS score, array_agg(w.term ORDER BY w.term) AS terms,
                       {_covered("w")}
                FROM (
                    SELECT v.term, v.q, v.kind, CASE WHEN l.entity THEN v.cond ELSE v.weight END AS weight
                    FROM unnest($2::text[], $3::float8[], $4::tsquery[], $17::int[], $20::float8[])
                         AS v(term, weight, q, kind, cond)
                ) w
                WHERE l.tsv @@ w.q
            ) m
            WHERE m.score > 0
        ), hits AS (
            -- a long line also scores as its best passage: where it says each term, from its tsvector's positions
            -- (only long lines, all at once: a subquery a line cost more; setweight + ts_filter keep the query's
            -- lexemes in C, a third of the cost of unnesting them all)
            SELECT b.id, w.term, CASE WHEN b.entity THEN w.cond ELSE w.weight END AS weight, w.kind, p AS pos
            FROM (SELECT DISTINCT ON (id) id, tsv, entity FROM base WHERE dl > $13::int * {PASSAGE_TERMS_PER_WORD}) b,
                 unnest(ts_filter(setweight(b.tsv, 'A', $2::text[]), '{{a}}')) u,
                 unnest($2::text[], $3::float8[], $17::int[], $4::tsquery[], $20::float8[])
                     AS w(term, weight, kind, q, cond),
                 unnest(u.positions) p
            WHERE $13::int > 0 AND w.term = u.lexeme  -- a line both fetched and found by meaning: once
              AND (numnode(w.q) = 1 OR b.tsv @@ w.q)  -- a word of a name, where the line says the name
        ), windows AS (  -- each window of $13 words that starts at a term, by term
            SELECT s.id, s.pos AS first, h.term, h.weight, h.kind, max(h.pos) AS last,
                   {"count(*)" if PASSAGE_TF else "1"} AS tf
            FROM hits s JOIN hits h ON h.id = s.id AND h.pos >= s.pos AND h.pos < s.pos + $13::int
            GROUP BY s.id, s.pos, h.term, h.weight, h.kind
        ), passages AS (  -- each long line's best window, scored as a line of a passage's length
            SELECT DISTINCT ON (id) id, first, last, best FROM (
                SELECT id, first, max(last) AS last, {_aliases_once("t.score", "t")} AS best FROM (
                    SELECT id, first, last, kind, weight * tf * ({K1} + 1)
                           / (tf + {K1} * (1 - {B} + {B} * $13::int * {PASSAGE_TERMS_PER_WORD} / $5::float8)) AS score
                    FROM windows
                ) t GROUP BY id, first
            ) w
            ORDER BY id, best DESC, first
        ), scored AS (
            SELECT b.id, b.session_id, b.seq, b.text, b.dl, b.fetched, b.entity, b.terms, b.plain, b.named, b.alias,
                   CASE WHEN p.id IS NOT NULL THEN ARRAY[p.first, p.last] END AS passage,
                   greatest(b.score * n.norm, {float(PASSAGE_WEIGHT)} * p.best) AS score, n.norm
            FROM base b LEFT JOIN passages p ON p.id = b.id CROSS JOIN LATERAL (
                SELECT ({K1} + 1)
                       / (1 + {K1} * (1 - {B} + {B} * greatest(b.dl, {float(LENGTH_FLOOR)}) / $5::float8)) AS norm
            ) n
        ), places AS MATERIALIZED (  -- each short fetched line at each place beside it (shown alone: none)
            SELECT s.id, s.session_id, s.seq + d AS seq, s.terms FROM (
                SELECT id, session_id, seq, terms FROM scored
                WHERE {float(NEIGHBOUR_WEIGHT)} <> 0 AND fetched AND ($16::int IS NULL OR dl < $16::int AND cardinality(
                    -- its words split at ASCII whitespace as recall_rank counts them: 6x faster than a regexp
                    array_remove(string_to_array(translate(text, E'\\t\\n\\r\\f\\v', '     '), ' '), '')) < $16::int)
                OFFSET 0  -- words counted once a line, not once a place
            ) s CROSS JOIN generate_series(-$12::int, $12::int) d
            WHERE d <> 0  -- materialized: else joined by session alone, every pair of a session's lines
        ), beside AS (  -- the query's terms a fetched line lacks that a fetched line shown beside it says
            SELECT id, {_aliases_once("t.best", "t")} AS score, {_covered("t")} FROM (
                SELECT p.id, max(CASE WHEN n.entity THEN w.cond ELSE w.weight END * n.norm) AS best, w.weight, w.kind
                FROM places p JOIN scored n ON n.fetched AND n.session_id = p.session_id AND n.seq = p.seq
                CROSS JOIN unnest(n.terms) said(term)
                JOIN unnest($2::text[], $3::float8[], $17::int[], $20::float8[]) AS w(term, weight, kind, cond)
                  ON w.term = said.term
                WHERE NOT said.term = ANY(p.terms)
                GROUP BY p.id, w.term, w.weight, w.kind
            ) t GROUP BY id
        ), lexical AS (
            SELECT id, score, terms, passage, row_number() OVER (ORDER BY score DESC, id DESC) AS rank
            FROM (
                SELECT s.id, s.terms, s.passage,
                       (s.score + {float(NEIGHBOUR_WEIGHT)} * coalesce(n.score, 0))
                       * power(least(1.0, {_coverage("s", "n", NEIGHBOUR_WEIGHT)}
                                          / CASE WHEN s.entity THEN $21::float8 ELSE $18::float8 END),
                               {float(COVERAGE_POWER)}) AS score
                FROM scored s LEFT JOIN beside n ON n.id = s.id
                WHERE s.fetched ORDER BY score DESC, s.id DESC LIMIT $10
            ) best
        ), found AS (
            SELECT e.id, e.session_id, e.seq FROM session_entries e
            WHERE e.campaign_id = $1 AND e.id = ANY(ARRAY(SELECT id FROM lexical) || $9::bigint[])
        ), around AS (
            SELECT DISTINCT ON (n.id) n.id, n.session_id, n.seq, n.speaker, n.text, n.start_s, n.end_s, n.ref
            FROM found f JOIN session_entries n
              ON n.campaign_id = $1 AND n.session_id = f.session_id AND n.seq BETWEEN f.seq - $12 AND f.seq + $12
        )
        SELECT e.*, s.title, s.started_at, f.id IS NOT NULL AS found, x.rank, x.score, x.terms, a.score AS also_score,
               coalesce(x.passage, a.passage) AS passage,
               f.id IS NOT NULL AND cardinality($11::bigint[]) > 0 AND EXISTS (
                   SELECT FROM entity_mentions m
                   WHERE m.campaign_id = $1 AND m.entry_id = e.id AND m.entity_id = ANY($11::bigint[])
               ) AS mentions,
               f.id IS NOT NULL AND EXISTS (
                   SELECT FROM line_vectors v WHERE v.campaign_id = $1 AND v.entry_id = e.id AND v.talk IS NOT NULL
               ) AS off_game
        FROM around e JOIN sessions s ON s.campaign_id = $1 AND s.id = e.session_id
        LEFT JOIN found f ON f.id = e.id
        LEFT JOIN lexical x ON x.id = e.id
        LEFT JOIN scored a ON a.id = e.id AND NOT a.fetched
        ORDER BY e.session_id, e.seq
        """,
        campaign_id,
        [t.text for t in query.terms],
        [t.weight * query.idf(t) for t in query.terms],  # the query's weight × IDF
        [t.operand() for t in query.terms],
        query.mean_length,
        fetch,
        None if session_ids is None else list(session_ids),
        None if speakers is None else [s.lower() for s in speakers],
        list(also),
        limit,
        list(entity_ids),
        context,
        int(PASSAGE_WORDS),  # the bench may set it as a float
        [speaker for speaker, _ in excluded],
        [session for _, session in excluded],
        alone_from,
        [_kind(t) for t in query.terms],
        sum(query.idf(t) for t in query.terms if _kind(t) != ALIAS) or 1.0,
        sum(query.idf(t) for t in query.terms if _kind(t) == NAMED),
        [t.weight * query.among_named(t) for t in query.terms],  # the same in a line naming a named entity
        sum(query.among_named(t) for t in query.terms if _kind(t) != ALIAS) or 1.0,
    )
    lines = [
        Line(
            r["id"],
            r["session_id"],
            r["seq"],
            r["speaker"],
            r["text"],
            r["start_s"],
            r["end_s"],
            r["ref"],
            r["title"],
            r["started_at"],
        )
        for r in rows
    ]
    ranked = sorted((r for r in rows if r["rank"] is not None), key=lambda r: r["rank"])
    return Candidates(
        lexical=[LineScore(r["id"], float(r["score"]), tuple(r["terms"]), _span(r["passage"])) for r in ranked],
        scored={r["id"]: float(r["also_score"]) for r in rows if r["also_score"] is not None},
        passages={r["id"]: (r["passage"][0], r["passage"][1]) for r in rows if r["passage"] is not None},
        lines={line.id: line for line, r in zip(lines, rows, strict=True) if r["found"]},
        mentioning={r["id"] for r in rows if r["mentions"]},
        off_game={r["id"] for r in rows if r["off_game"]},
        around=lines,
    )


def _span(passage: list[int] | None) -> tuple[int, int] | None:
    return None if passage is None else (passage[0], passage[1])
