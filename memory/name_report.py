"""What name correction did in one session, for the DM to check: each phrase heard → the name it became, how often.

A wrong one is found here instead of by chance in /recall or /recap; the CLI and the cog say how to undo it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from memory.correction.text import spaceless
from memory.errors import NotFoundError, did_you_mean, quoted
from memory.models import Session
from memory.store import CampaignMemory
from memory.text import session_title

#: How a phrase became a name: stage 1 by sound (or spelling), stage 2 (the LLM), or a heard-as phrase the DM taught.
How = Literal["sound", "LLM", "heard-as"]


class NameChange(BaseModel):
    """One distinct correction of a session: ``heard`` (the raw span, casefolded, spaces collapsed) became the
    entity's name ``count`` times."""

    heard: str
    name: str  # the entity's name now (renamed since: the new one); the replacement written if it is gone
    entity_id: int | None
    count: int
    how: list[How]  # more than one when both stages made it
    heard_as: list[str]  # the entity's heard-as phrases now: undoing a heard-as row is giving them without it
    not_heard_as: list[str] = []  # the entity's not-heard-as phrases now: an edit gives them all, the new one too
    #: ``heard`` spells the entity's name or an alias, punctuation and spacing aside ("vexahlia" / Vex'ahlia): a
    #: respelling, which no not-heard-as phrase may stop (the alias is the DM's to remove).
    respelled: bool = False
    removed: bool = False  # the entity is gone (removed, or merged into another): nothing left to undo


class NamesReport(BaseModel):
    session: Session
    lines: int  # lines with at least one correction
    changes: list[NameChange]  # most frequent first


#: One aggregate over the session's lines' ``corrections`` (offsets into ``raw_text``, whose span they carry).
_CHANGES = r"""
WITH made AS (
    SELECT lower(regexp_replace(btrim(c->>'span'), '\s+', ' ', 'g')) AS heard,
           nullif(c->>'entity_id', '')::bigint AS entity_id,
           c->>'replacement' AS replacement,
           coalesce((c->>'stage')::int, 1) AS stage,
           e.id AS line
    FROM session_entries e CROSS JOIN LATERAL jsonb_array_elements(e.corrections) c
    WHERE e.campaign_id = $1 AND e.session_id = $2 AND e.corrections <> '[]'::jsonb
), grouped AS (
    SELECT heard, entity_id, min(replacement) AS replacement, count(*) AS n, array_agg(DISTINCT stage) AS stages
    FROM made GROUP BY heard, entity_id, CASE WHEN entity_id IS NULL THEN replacement END
)
SELECT g.heard, g.entity_id, coalesce(en.name, g.replacement) AS name, g.n, g.stages, en.id IS NULL AS removed,
       EXISTS (SELECT 1 FROM entity_heard_as h
               WHERE h.campaign_id = $1 AND h.entity_id = g.entity_id AND lower(h.phrase) = g.heard) AS taught,
       ARRAY(SELECT h.phrase FROM entity_heard_as h
             WHERE h.campaign_id = $1 AND h.entity_id = g.entity_id ORDER BY lower(h.phrase)) AS heard_as,
       ARRAY(SELECT n.phrase FROM entity_not_heard_as n
             WHERE n.campaign_id = $1 AND n.entity_id = g.entity_id ORDER BY lower(n.phrase)) AS not_heard_as,
       ARRAY(SELECT a.alias FROM entity_aliases a WHERE a.campaign_id = $1 AND a.entity_id = g.entity_id) AS aliases,
       (SELECT count(DISTINCT line) FROM made) AS lines
FROM grouped g LEFT JOIN entities en ON en.campaign_id = $1 AND en.id = g.entity_id
ORDER BY g.n DESC, g.heard, name
"""


async def find_session(mem: CampaignMemory, title: str | None) -> Session:
    """The session titled ``title`` (case aside), or the latest one played."""
    sessions = await mem.log.sessions()
    if not sessions:
        raise NotFoundError("no sessions in this campaign yet")
    if title is None:
        return sessions[-1]
    wanted = session_title(title).casefold()
    found = next((s for s in reversed(sessions) if s.title.casefold() == wanted), None)
    if found is None:
        hint = did_you_mean(title, [s.title for s in sessions])
        raise NotFoundError(f"no session titled {quoted(title)} in this campaign{hint}", subject="session", name=title)
    return found


async def names_changed(mem: CampaignMemory, title: str | None = None) -> NamesReport:
    """The distinct corrections made in session ``title`` (default: the latest), most frequent first."""
    session = await find_session(mem, title)
    rows = await mem.db.fetch(_CHANGES, mem.campaign_id, session.id)
    changes = [
        NameChange(
            heard=r["heard"],
            name=r["name"],
            entity_id=r["entity_id"],
            count=r["n"],
            how=["heard-as"] if r["taught"] else [("sound", "LLM")[s - 1] for s in sorted(r["stages"]) if s in (1, 2)],
            heard_as=list(r["heard_as"]),
            not_heard_as=list(r["not_heard_as"]),
            respelled=spaceless(r["heard"]) in {spaceless(n) for n in [r["name"], *r["aliases"]]},
            removed=r["removed"],
        )
        for r in rows
    ]
    return NamesReport(session=session, lines=rows[0]["lines"] if rows else 0, changes=changes)
