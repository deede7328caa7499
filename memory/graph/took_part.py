"""Who took part in a session: links from the accepted entities the DM names in its story (its narrator's lines,
out-of-game talk aside: :func:`memory.offgame.told_lines`) to its recap's event entity.

The recap job links those accepted when it writes the recap, by the names they have then. An entity accepted later
(from the review queue, added by the DM, loaded from a campaign file), or given a name or alias later (the table's
"the ferryman" made Corvin Ash's), or a heard-as phrase the recap read as said ("from skin", corrected since), gets the
links of the recapped sessions that named it here, found as the recap job finds them, so its card does not leave out
the sessions it was in. A phrase taken away again (its lines restored) takes back the links of the sessions whose
lines then no longer name it (:func:`unlink_unnamed`).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
from collections.abc import Collection
from pathlib import Path

from memory.graph.lookup import EntityLookup
from memory.models import TAKES_NO_PART, Entity, EntityType, Entry, Provenance, RelationshipIn, ReviewStatus, Source


def took_part(entity_id: int, event_id: int, session_id: int) -> RelationshipIn:
    """The link from an entity a session's lines name to the session's recap event."""
    return RelationshipIn(
        source_id=entity_id,
        type="took_part_in",
        target_id=event_id,
        # Being mentioned in the session is a matter of record, not a guess to review.
        status=ReviewStatus.accepted,
        provenance=Provenance(source=Source.inferred, confidence=1.0, session_id=session_id),
    )


async def link_to_recaps(
    graph: EntityLookup,
    entity_ids: Collection[int],
    *,
    sessions: Collection[int] | None = None,
    names: Collection[str] | None = None,
) -> int:
    """Link each of these entities that is accepted to the recap of every ended session (of ``sessions`` only, when
    given) whose story names it (its name or an alias), secret ones too, as the recap job does; returns the links
    made. Every line naming it goes to the mention index, a player's too; an accepted event gets the lines it was
    drawn from as its mentions. ``names``: only the lines saying one of these, names new to an accepted entity; the
    lines saying its others were looked at when it got them (a busy entity's old name is in thousands). The recap
    job's gazetteer of every accepted entity decides, among the lines full-text search finds, so a name inside a
    longer one ("Vell" in "Vell Sorrowmere") counts as it does there. Measured on 100 sessions of 2,000 lines
    (bench/README.md, a busy machine): 2.2-2.7 s for Grog Strongjaw, named in every session (16 s when each session
    was read whole again for its told lines); 32-50 s for the 1,492 entities of a campaign file loaded after the
    sessions, two thirds of it the full-text search for the lines naming them while their names were OR'd into one
    query (:meth:`memory.session_log.SessionLog.saying` now probes the index once a name), 0.4 s their told lines."""
    if not entity_ids:
        return 0
    from memory.mentions import index_lines, index_told

    await index_told(graph.db, graph.campaign_id, list(entity_ids))
    recaps = await _recaps(graph, sessions)
    accepted = await graph.list_entities() if recaps else []
    wanted = set(entity_ids)
    targets = [e for e in accepted if e.id in wanted and e.type != EntityType.event]
    if not targets:
        return 0
    ids = {e.id for e in targets}
    from memory.gazetteer import of_mentions  # the write path's: reading the graph needs none of it

    def named(entries: list[Entry]) -> set[tuple[int, int, int]]:
        gazetteer = of_mentions(accepted)  # here, in the thread: 0.7 s for 20,000 entities
        return {(i, e.session_id, e.id) for e in entries for i in gazetteer.mentioned_ids(e) if i in ids}

    lines = await _lines_saying(graph, targets, names, list(recaps))
    # every accepted name, and thousands of lines for a campaign file's names: the bot's other work goes on meanwhile
    said_in = await asyncio.to_thread(named, lines) if lines else set()
    told = await told_in(graph, {session_id for _, session_id, _ in said_in})
    parts = {e.id for e in targets if e.type not in TAKES_NO_PART}  # a place named is indexed, takes no part
    found = {
        (entity_id, session_id)
        for entity_id, session_id, entry_id in said_in
        if entry_id in told and entity_id in parts
    }
    links = [took_part(entity_id, recaps[session_id], session_id) for entity_id, session_id in sorted(found)]
    await graph.lock()  # see ``KnowledgeGraph.lock``
    by_session: dict[int, dict[int, list[int]]] = {}
    for entity_id, session_id, entry_id in said_in:  # the mention index: the chunk job ran before it was known
        by_session.setdefault(session_id, {}).setdefault(entry_id, []).append(entity_id)
    for session_id, named_in in by_session.items():
        await index_lines(graph.db, graph.campaign_id, session_id, named_in, replace=False)
    return await _insert_links(graph, links)


@functools.cache
def told_rules() -> str:
    """What the told lines were found by: the out-of-game rules' source, so an upgrade that changes them finds
    every session's again rather than keep what the old rules found."""
    import memory.offgame

    return hashlib.md5(Path(memory.offgame.__file__).read_bytes()).hexdigest()


async def told_in(graph: EntityLookup, sessions: Collection[int]) -> set[int]:
    """The lines of these sessions the narrator says in the story: as at recap time, only who the DM names in the
    story takes part, not who a player asks about or the DM's rules talk names. Whether a line is out of game needs
    its whole session (the DM's cues of a break or the after-show): a session's are found once and kept until its
    lines or DM change (:meth:`memory.session_log.SessionLog.told`)."""
    from memory.offgame import told_lines
    from memory.session_log import SessionLog

    log = SessionLog(graph.db, graph.campaign_id)
    told: set[int] = set()
    for session_id, (lines, kept) in (await log.told(sorted(sessions), told_rules())).items():
        if kept is None:
            await graph.lock()  # before the row it writes: see ``KnowledgeGraph.lock``
            entries = await log.session_entries(session_id)
            dm = (await log.session(session_id)).dm_speaker_id
            kept = await asyncio.to_thread(told_lines, entries, dm)
            await log.keep_told(session_id, lines, kept)
        told |= kept
    return told


async def _recaps(graph: EntityLookup, sessions: Collection[int] | None) -> dict[int, int]:
    """The recap event of each ended, recapped session (of ``sessions`` only, when given), by session."""
    rows = await graph.db.fetch(
        """
        SELECT s.id AS session_id, e.id AS event_id FROM sessions s
        JOIN entities e ON e.campaign_id = s.campaign_id AND e.type = 'event'
            AND e.provenance ->> 'source' = 'inferred' AND e.provenance ->> 'session_id' = s.id::text
        WHERE s.campaign_id = $1 AND s.ended_at IS NOT NULL AND s.summary IS NOT NULL
            AND ($2::bigint[] IS NULL OR s.id = ANY($2::bigint[]))
        ORDER BY e.id
        """,
        graph.campaign_id,
        None if sessions is None else list(sessions),
    )
    return {r["session_id"]: r["event_id"] for r in rows}


async def _lines_saying(
    graph: EntityLookup, targets: list[Entity], names: Collection[str] | None, sessions: list[int]
) -> list[Entry]:
    """The lines of these sessions that full-text search finds saying a name or alias of ``targets`` (``names``
    only, when given), for the gazetteer to decide."""
    from memory.correction.text import normalize, spaced_form
    from memory.gazetteer import first_name, last_name
    from memory.session_log import SessionLog

    # as written, and in the gazetteer's normal forms ("Zyxara" of Zyx'ara, "half orc" of Half-Orc)
    # a person's first and last name too: the gazetteer says whether it is theirs alone, and written as a name
    alone = (first_name, last_name)
    said = (
        names
        if names is not None
        else [n for e in targets for n in (e.name, *e.aliases, *(f(e.name) or "" for f in alone))]
    )
    phrases = [form(n) for n in said for form in (str, normalize, spaced_form)]
    return await SessionLog(graph.db, graph.campaign_id).saying(phrases, sessions)


async def _insert_links(graph: EntityLookup, links: list[RelationshipIn]) -> int:
    """Store the links not stored yet; returns how many. In one statement: a fact at a time, thousands of links took
    minutes. A link is never pending, and closes no other fact (an entity takes part in many sessions), so one
    already there is all ``ensure_relationship`` checks."""
    made: int = await graph.db.fetchval(
        """
        WITH made AS (
            INSERT INTO relationships (campaign_id, source_id, type, target_id, status, provenance, valid_from)
            SELECT $1, l.source_id, $2, l.target_id, $3, l.provenance::jsonb, least(now(), s.started_at)
            FROM unnest($4::bigint[], $5::bigint[], $6::text[]) AS l(source_id, target_id, provenance)
            JOIN sessions s ON s.campaign_id = $1 AND s.id = (l.provenance::jsonb ->> 'session_id')::bigint
            ON CONFLICT DO NOTHING
            RETURNING 1
        ) SELECT count(*) FROM made
        """,
        graph.campaign_id,
        "took_part_in",
        ReviewStatus.accepted,
        [link.source_id for link in links],
        [link.target_id for link in links],
        [link.provenance.model_dump_json() for link in links],
    )
    return made


async def unlink_unnamed(graph: EntityLookup, entity_id: int, session_id: int) -> int:
    """Take away the link from the entity ``entity_id`` to the session's recap if no line of the session's story
    names it any longer (a heard-as phrase taken away, its lines restored): it took part by its lines, as the recap
    job and :func:`link_to_recaps` found it, and the same gazetteer decides here, over the session's story. Only a link
    made so (inferred from the lines); returns how many went. Without one (most sessions), one query."""
    linked = """
        FROM relationships r JOIN entities e ON e.campaign_id = r.campaign_id AND e.id = r.target_id
        WHERE r.campaign_id = $1 AND r.source_id = $2 AND r.type = 'took_part_in'
          AND r.provenance ->> 'source' = 'inferred' AND r.provenance ->> 'session_id' = $3::bigint::text
          AND e.type = 'event' AND e.provenance ->> 'source' = 'inferred'
          AND e.provenance ->> 'session_id' = $3::bigint::text
    """
    if not await graph.db.fetchval(f"SELECT EXISTS (SELECT 1 {linked})", graph.campaign_id, entity_id, session_id):
        return 0
    from memory.gazetteer import of_mentions
    from memory.session_log import SessionLog

    told = await told_in(graph, [session_id])
    entries = await SessionLog(graph.db, graph.campaign_id).entries(sorted(told))
    accepted = await graph.list_entities()

    def named() -> bool:
        gazetteer = of_mentions(accepted)
        return any(entity_id in gazetteer.mentioned_ids(e) for e in entries)

    if any(e.id == entity_id for e in accepted) and await asyncio.to_thread(named):
        return 0
    await graph.lock()  # see ``KnowledgeGraph.lock``
    return int(
        await graph.db.fetchval(
            f"""
            WITH gone AS (
                DELETE FROM relationships WHERE campaign_id = $1 AND id IN (SELECT r.id {linked}) RETURNING 1
            ) SELECT count(*) FROM gone
            """,
            graph.campaign_id,
            entity_id,
            session_id,
        )
    )
