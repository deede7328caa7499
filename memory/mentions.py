"""The mention index: entity → the lines of the log that name it (by name, alias, or a correction that named it),
with the session and the time. It answers "where was X said" (``/entity show``, ``entity mentions``, recall's
entity boost, the MCP tools); being named together is evidence of that, not a fact for the DM to review.

The chunk job writes it for the lines it reads, with the gazetteer it finds a passage's entities with (a line
revised is read again); :func:`memory.graph.took_part.link_to_recaps` adds the lines of an entity accepted later,
and an accepted event's the lines it was drawn from (:func:`index_told`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from functools import lru_cache
from itertools import islice
from typing import TypeVar

from pydantic import BaseModel

from memory.db import Executor
from memory.models import where_said
from memory.offgame import line_talk

T = TypeVar("T")


class LineMention(BaseModel):
    """One line that names an entity, with where it was said."""

    entry_id: int
    session_id: int
    title: str  # the session's
    seq: int
    speaker: str
    start_s: float
    text: str
    ref: str | None
    started_at: datetime | None = None  # the session's

    def where(self) -> str:
        return where_said(self.title, self.start_s, self.ref, self.started_at)


class SessionMentions(BaseModel):
    """How many lines of one session name the entity."""

    session_id: int
    title: str
    lines: int


class Mentions(BaseModel):
    """The lines naming an entity, newest first (up to the limit asked), how many there are in all, and the
    sessions they are in, newest first."""

    entity_id: int
    total: int
    sessions: list[SessionMentions]
    lines: list[LineMention]


#: The version of the rules that say which entities a line names (:mod:`memory.gazetteer`'s): bump it when a change
#: makes a line name someone else, and the worker indexes the sessions read under an older one again (see
#: :func:`memory.jobs.chunk.reindex_mentions`); a session started now is read under this one.
MENTION_RULES = 1

#: The step whose progress says which lines the index has read (:data:`memory.jobs.queue.CHUNK`; the jobs import this
#: module, not the other way round).
_CHUNKED = "lk_chunk"


def said_ids(entity_id: str) -> str:
    """SQL: the ids of the lines of campaign ``$1`` naming the entity ``entity_id`` (an SQL expression).

    Those the index holds, and those it may not hold yet, found as before it existed (full text over the entity's
    names and aliases, or a correction naming it): lines past the chunk job's progress in their session (new or
    revised ones), and the lines of a session not yet recapped, which may name an entity or alias added after the
    job read them (the recap job indexes them for it). So the tail of a live session costs a scan of that session,
    and a recapped one only its index rows. The query is built once (a subquery): as an expression of the names it
    was built again for each line the full-text index matched, 40 µs each, 120 ms for a busy character."""
    terms = f"""(SELECT string_agg('"' || n || '"', ' OR ') FROM (
            SELECT name AS n FROM entities WHERE campaign_id = $1 AND id = {entity_id}
            UNION ALL SELECT alias FROM entity_aliases WHERE campaign_id = $1 AND entity_id = {entity_id}
        ) names WHERE strpos(n, '"') = 0)"""
    return f"""(
        SELECT m.entry_id AS id FROM entity_mentions m WHERE m.campaign_id = $1 AND m.entity_id = {entity_id}
        UNION
        SELECT se.id FROM sessions s
        LEFT JOIN ingest_progress p ON p.campaign_id = $1 AND p.session_id = s.id AND p.step = '{_CHUNKED}'
        JOIN session_entries se ON se.campaign_id = $1 AND se.session_id = s.id
            AND se.seq > CASE WHEN s.summary IS NULL THEN 0 ELSE coalesce(p.last_seq, 0) END
        WHERE s.campaign_id = $1
          AND (se.tsv @@ (SELECT websearch_to_tsquery('english', searchable({terms})))
               OR (se.corrections <> '[]'::jsonb
                   AND se.corrections @> jsonb_build_array(jsonb_build_object('entity_id', {entity_id}))))
    )"""


def said_lines(entity_id: str, limit: str, *, newest: bool = True, in_game: bool = False) -> str:
    """SQL: the newest (``newest=False``: the oldest) ``limit`` lines of campaign ``$1`` naming the entity
    ``entity_id`` (see :func:`said_ids`), sessions by when they were played, lines by their place in the session (a
    line's time may be missing, its place never is). ``in_game``: none of a pre-show, a break or an after-show (the
    segments the chunk job marks, :mod:`memory.offgame`); a line's own table talk is :func:`in_game`'s to judge."""
    order = "DESC" if newest else "ASC"
    segments = (
        "AND NOT EXISTS (SELECT FROM line_vectors v WHERE v.campaign_id = $1 AND v.entry_id = se.id "
        "AND v.talk IS NOT NULL)"
        if in_game
        else ""
    )
    # the ids as an array: joined to them, the planner read every line of the campaign for a busy character's
    # thousands (a seq scan, 120 ms at 100 sessions); looked up by the index, 20 ms
    return f"""
        SELECT se.id AS entry_id, se.session_id, s.title, se.seq, se.speaker, se.start_s, se.text, se.ref,
               s.started_at
        FROM session_entries se
        JOIN sessions s ON s.campaign_id = $1 AND s.id = se.session_id
        WHERE se.campaign_id = $1 AND se.id = ANY(ARRAY(SELECT said.id FROM {said_ids(entity_id)} said)) {segments}
        ORDER BY s.started_at {order}, se.session_id {order}, se.seq {order}
        LIMIT {limit}
    """


#: Lines read beyond those asked for, for those :func:`in_game` drops (a sponsor read, a roll asked for).
OFF_GAME_SLACK = 10


#: :func:`memory.offgame.line_talk`, remembered: a line costs a tenth of a millisecond or two, and a live session's
#: window slides a few lines between two hot contexts (an agent asks before every reply), so each is judged once.
_talk = lru_cache(maxsize=4096)(line_talk)


def in_game(lines: Sequence[T], text: Callable[[T], str]) -> Iterator[T]:
    """Those of ``lines`` that are not table talk on their own (sponsor reads, dice and rules, the cast's banter:
    :func:`memory.offgame.line_talk`), lazily: only as many as are taken."""
    return (line for line in lines if _talk(text(line)) is None)


async def latest(db: Executor, campaign_id: int, entity_id: int, *, limit: int = 10) -> list[LineMention]:
    """The newest ``limit`` lines of the game naming the entity, the index's and those it may not hold yet
    (:func:`said_ids`): where it was last said, for the MCP tools and the identity snapshot. Out-of-game talk is
    left out (the after-show's "find out where Raishan is", a merch read); :func:`mentions` keeps it."""
    rows = await db.fetch(
        said_lines("$2::bigint", "$3", in_game=True), campaign_id, entity_id, max(0, limit) + OFF_GAME_SLACK
    )
    return list(islice(in_game([LineMention(**r) for r in rows], lambda m: m.text), max(0, limit)))


async def first_said(db: Executor, campaign_id: int, entity_id: int, *, newest: bool, limit: int) -> list[int]:
    """The ids of the first ``limit`` lines naming the entity, in the order played (``newest``: the last ones, the
    latest first): where "when did we first meet Kevdak?" is answered."""
    rows = await db.fetch(said_lines("$2::bigint", "$3", newest=newest), campaign_id, entity_id, max(0, limit))
    return [r["entry_id"] for r in rows]


async def mentions(db: Executor, campaign_id: int, entity_id: int, *, limit: int = 10) -> Mentions:
    """The newest ``limit`` lines of the campaign that name the entity: sessions by when they were played, lines by
    their place in the session, as ``KnowledgeGraph.last_mention`` orders them. Counted as :func:`latest` finds
    them, the lines the index does not hold yet included: else a line just imported was the card's last mention
    while this said no line named it."""
    rows = await db.fetch(said_lines("$2::bigint", "$3"), campaign_id, entity_id, limit) if limit > 0 else []
    per_session = await db.fetch(
        f"""
        SELECT se.session_id, s.title, count(*) AS lines
        FROM {said_ids("$2::bigint")} said
        JOIN session_entries se ON se.campaign_id = $1 AND se.id = said.id
        JOIN sessions s ON s.campaign_id = $1 AND s.id = se.session_id
        GROUP BY se.session_id, s.title, s.started_at
        ORDER BY s.started_at DESC, se.session_id DESC
        """,
        campaign_id,
        entity_id,
    )
    sessions = [SessionMentions(**r) for r in per_session]
    return Mentions(
        entity_id=entity_id,
        total=sum(s.lines for s in sessions),
        sessions=sessions,
        lines=[LineMention(**r) for r in rows],
    )


async def index_lines(
    db: Executor, campaign_id: int, session_id: int, named: Mapping[int, Sequence[int]], *, replace: bool = True
) -> None:
    """Record which entities each line (id → entity ids) names. ``replace``: the lines were read whole again (their
    text may have changed), so what was recorded for them before goes; else only rows are added."""
    if not named:
        return
    if replace:
        # an event stays mentioned by the lines it was told in (:func:`index_told`), which never say its name
        await db.execute(
            """
            DELETE FROM entity_mentions m WHERE m.campaign_id = $1 AND m.entry_id = ANY($2::bigint[])
              AND NOT EXISTS (
                  SELECT FROM entities e WHERE e.campaign_id = $1 AND e.id = m.entity_id AND e.type = 'event'
                    AND e.provenance -> 'entry_ids' @> to_jsonb(m.entry_id))
            """,
            campaign_id,
            list(named),
        )
    pairs = [(entity_id, entry_id) for entry_id, ids in named.items() for entity_id in dict.fromkeys(ids)]
    if not pairs:
        return
    # Only ids of entities still there: the DM may delete one while the job reads its lines.
    await db.execute(
        """
        INSERT INTO entity_mentions (campaign_id, entity_id, entry_id, session_id)
        SELECT $1, m.entity_id, m.entry_id, $2
        FROM unnest($3::bigint[], $4::bigint[]) AS m(entity_id, entry_id)
        JOIN entities e ON e.campaign_id = $1 AND e.id = m.entity_id
        JOIN session_entries se ON se.campaign_id = $1 AND se.id = m.entry_id
        ON CONFLICT DO NOTHING
        """,
        campaign_id,
        session_id,
        [p[0] for p in pairs],
        [p[1] for p in pairs],
    )


async def index_told(db: Executor, campaign_id: int, entity_ids: Sequence[int]) -> None:
    """Index the lines each accepted event of ``entity_ids`` was drawn from as its mentions: an event is told, not
    named ("you stop by the Foramere Basin"), and without them its card says no line or session."""
    await db.execute(
        """
        INSERT INTO entity_mentions (campaign_id, entity_id, entry_id, session_id)
        SELECT $1, e.id, se.id, se.session_id
        FROM entities e
        CROSS JOIN LATERAL jsonb_array_elements_text(
            CASE jsonb_typeof(e.provenance -> 'entry_ids') WHEN 'array' THEN e.provenance -> 'entry_ids' END
        ) AS told(entry_id)
        JOIN session_entries se ON se.campaign_id = $1 AND se.id = told.entry_id::bigint
        WHERE e.campaign_id = $1 AND e.id = ANY($2::bigint[]) AND e.type = 'event' AND e.status = 'accepted'
        ON CONFLICT DO NOTHING
        """,
        campaign_id,
        list(entity_ids),
    )
