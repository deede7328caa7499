"""The mention index: entity → the lines of the log that name it (by name, alias, or a correction that named it),
with the session and the time. It answers "where was X said" (``/entity show``, ``entity mentions``, recall's
entity boost, the MCP tools); being named together is evidence of that, not a fact for the DM to review.

The chunk job writes it for the lines it reads, with the gazetteer it finds a passage's entities with (a line
revised is read again); :func:`memory.graph.took_part.link_to_recaps` adds the lines of an entity accepted later.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from memory.db import Executor
from memory.models import where_said


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

    def where(self) -> str:
        return where_said(self.title, self.start_s, self.ref)


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


async def mentions(db: Executor, campaign_id: int, entity_id: int, *, limit: int = 10) -> Mentions:
    """The newest ``limit`` lines of the campaign that name the entity: sessions by when they were played, lines by
    their place in the session, as ``KnowledgeGraph.last_mention`` orders them."""
    rows = await db.fetch(
        """
        SELECT se.id AS entry_id, se.session_id, s.title, se.seq, se.speaker, se.start_s, se.text, se.ref
        FROM entity_mentions m
        JOIN session_entries se ON se.campaign_id = m.campaign_id AND se.id = m.entry_id
        JOIN sessions s ON s.campaign_id = m.campaign_id AND s.id = se.session_id
        WHERE m.campaign_id = $1 AND m.entity_id = $2
        ORDER BY s.started_at DESC, se.session_id DESC, se.seq DESC
        LIMIT $3
        """,
        campaign_id,
        entity_id,
        max(0, limit),
    )
    per_session = await db.fetch(
        """
        SELECT m.session_id, s.title, count(*) AS lines
        FROM entity_mentions m JOIN sessions s ON s.campaign_id = m.campaign_id AND s.id = m.session_id
        WHERE m.campaign_id = $1 AND m.entity_id = $2
        GROUP BY m.session_id, s.title, s.started_at
        ORDER BY s.started_at DESC, m.session_id DESC
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
        await db.execute(
            "DELETE FROM entity_mentions WHERE campaign_id = $1 AND entry_id = ANY($2::bigint[])",
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
