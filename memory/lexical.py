"""BM25 over the lines of a campaign's log, computed in PostgreSQL.

Each line's ``tsv`` (its English stems, the GIN-indexed column full-text search uses) is the bag of words; the
document frequency of every term and the campaign's size live in ``recall_terms`` / ``recall_corpus``, which
triggers keep in step with ``session_entries`` in the writing transaction (migration 0018): nothing to rebuild,
nothing another campaign can see. ``ts_rank_cd`` has no IDF, so a line saying only a common name tied with the
line holding the question's rare words; here the rare words weigh what they should.

To stay flat as a campaign grows, candidate lines are fetched through the GIN index by the query's rarest terms
only, up to ``FETCH_BUDGET`` lines; the commoner terms score those lines but fetch none (a line holding only
common words scores low, and such lines would be most of the work).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from memory.db import Executor

#: BM25's usual constants (Robertson; Lucene and bm25s use these or close): term-frequency saturation and how much
#: a line's length discounts it.
K1, B = 1.2, 0.75
#: Lines fetched through the index at most, rarest terms first: the terms past this budget still score the lines
#: fetched but fetch none (their IDF is low, and their lines would be most of the work at 150k lines).
FETCH_BUDGET = 500
#: Terms of a query scored at most (its rarest): a question has a dozen; a pasted page would cost its length.
MAX_TERMS = 32


@dataclass(frozen=True, slots=True)
class Term:
    text: str  # a stem as the tsvector holds it
    lines: int  # document frequency
    weight: float  # the query's weight for it (1 for its own words; less for an alias it was expanded with)


@dataclass(frozen=True, slots=True)
class LineScore:
    entry_id: int
    score: float
    terms: tuple[str, ...]  # the query's terms the line holds


def idf(lines_with_term: int, lines: int) -> float:
    """BM25's IDF (the non-negative form of Lucene and bm25s): a term in every line still counts a little."""
    return math.log(1 + (lines - lines_with_term + 0.5) / (lines_with_term + 0.5))


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
    return " | ".join(tsquery_literal(t.text) for t in terms) or None


@dataclass(frozen=True, slots=True)
class Query:
    """A query's terms (its rarest ``MAX_TERMS``) as this campaign counts them, read once for every list scored."""

    terms: list[Term]
    lines: int  # the campaign's
    mean_length: float


async def prepare(db: Executor, campaign_id: int, phrases: Sequence[tuple[str, float]]) -> Query:
    """The query ``phrases`` (text, weight) make, against the campaign's counts."""
    terms, lines, mean_length = await query_terms(db, campaign_id, phrases)
    # a pasted page: its rarest words count
    return Query(sorted(terms, key=lambda t: (t.lines, t.text))[:MAX_TERMS], lines, mean_length)


async def query_terms(
    db: Executor, campaign_id: int, phrases: Sequence[tuple[str, float]]
) -> tuple[list[Term], int, float]:
    """The stems of ``phrases`` (text, weight; a stem keeps its highest weight) with their document frequency in
    the campaign, and the campaign's line count and mean line length."""
    rows = await db.fetch(
        """
        WITH stems AS (
            SELECT u AS term, max(p.weight) AS weight
            FROM unnest($2::text[], $3::float8[]) AS p(phrase, weight),
                 unnest(tsvector_to_array(to_tsvector('english', searchable(p.phrase)))) u
            GROUP BY u
        )
        SELECT s.term, s.weight, coalesce(t.lines, 0) AS lines
        FROM stems s LEFT JOIN recall_terms t ON t.campaign_id = $1 AND t.term = s.term
        """,
        campaign_id,
        [p for p, _ in phrases],
        [w for _, w in phrases],
    )
    corpus = await db.fetchrow("SELECT lines, terms FROM recall_corpus WHERE campaign_id = $1", campaign_id)
    lines, length = (corpus["lines"], corpus["terms"]) if corpus else (0, 0)
    terms = [Term(r["term"], r["lines"], r["weight"]) for r in rows if r["lines"] > 0]
    return sorted(terms, key=lambda t: t.text), lines, length / lines if lines else 1.0


async def bm25_lines(
    db: Executor,
    campaign_id: int,
    query: Query,
    *,
    limit: int,
    session_ids: Sequence[int] | None = None,
    speakers: Sequence[str] | None = None,
    only: Sequence[int] | None = None,
    budget: int = FETCH_BUDGET,
) -> list[LineScore]:
    """The ``limit`` lines with the highest BM25 for ``query`` (the question and its expansions, each weighted),
    best first, ties to the newer line. ``session_ids`` / ``speakers`` (case-insensitive) keep only those lines;
    ``only``: score just these lines (the lines of windows found by meaning)."""
    terms, lines, mean_length = query.terms, query.lines, query.mean_length
    if not terms or (only is not None and not only):
        return []
    fetching, bounded = fetch_terms(terms, budget=budget)
    # a query of common words only reads the newest lines of its rarest: flat, and the latest is what it asks
    fetch = None if only is not None else tsquery_of(fetching)
    bounded = bounded and only is None
    # tf counts 1 (a line rarely says a word twice): each term is one C-level @@ on the line's own tsvector, four
    # times faster than unnesting it; the line's length still discounts (BM25's b)
    rows = await db.fetch(
        f"""
        WITH lines AS (
            SELECT e.id, e.tsv FROM session_entries e
            WHERE e.campaign_id = $1
              AND ($4::tsquery IS NULL OR e.tsv @@ $4::tsquery)
              AND ($5::bigint[] IS NULL OR e.id = ANY($5::bigint[]))
              AND ($6::bigint[] IS NULL OR e.session_id = ANY($6::bigint[]))
              AND ($7::text[] IS NULL OR lower(e.speaker) = ANY($7::text[]))
            {f"ORDER BY e.id DESC LIMIT {int(budget)}" if bounded else ""}
        )
        SELECT id, score * ({K1} + 1) / (1 + {K1} * (1 - {B} + {B} * dl / $8::float8)) AS score, terms FROM (
            SELECT l.id, length(l.tsv) AS dl, m.score, m.terms
            FROM lines l CROSS JOIN LATERAL (
                SELECT sum(w.weight) AS score, array_agg(w.term ORDER BY w.term) AS terms
                FROM unnest($2::text[], $3::float8[], $10::tsquery[]) AS w(term, weight, q)
                WHERE l.tsv @@ w.q
            ) m
        ) scored
        WHERE score > 0
        ORDER BY score DESC, id DESC
        LIMIT $9
        """,
        campaign_id,
        [t.text for t in terms],
        [t.weight * idf(t.lines, lines) for t in terms],
        fetch,
        None if only is None else list(only),
        None if session_ids is None else list(session_ids),
        None if speakers is None else [s.lower() for s in speakers],
        mean_length,
        limit,
        [tsquery_literal(t.text) for t in terms],
    )
    return [LineScore(r["id"], float(r["score"]), tuple(r["terms"])) for r in rows]
