"""Reading the graph: an entity's facts and history, its neighbourhood, traversal, where it was last said, and
what ranks it for the speech recogniser's prompt."""

from __future__ import annotations

from typing import NamedTuple

from memory.errors import InvalidInputError, NotFoundError
from memory.graph.lookup import EntityLookup
from memory.graph.rules import players_see
from memory.graph.sql import (
    ENTITY_SELECT,
    FILED,
    REL_SELECT_FROM,
    entity_from_row,
    other_end,
    played_at,
    readable_facts,
    rel_select,
    relationship_from_row,
    visible,
)
from memory.mentions import OFF_GAME_SLACK, in_game, latest, said_lines
from memory.models import (
    RECAP_NAME_SQL,
    Entity,
    EntityType,
    FactsInBrief,
    Mention,
    Neighbourhood,
    PastFact,
    PathStep,
    PromptEntity,
    Relationship,
    Visibility,
)
from memory.text import name_query


class HeldFact(NamedTuple):
    """An accepted current fact as a campaign load weighs the file's restating it."""

    id: int
    visibility: Visibility
    filed: bool  # a campaign file stated it (see :data:`memory.graph.sql.FILED`)


class Reading(EntityLookup):
    """What the graph tells about an entity and its surroundings."""

    async def relationships_of(
        self, entity_id: int, *, include_secret: bool = False, include_history: bool = False
    ) -> list[Relationship]:
        """Accepted facts touching an entity; closed ones too with ``include_history``."""
        rows = await self.db.fetch(
            f"""{rel_select(include_secret)}
            WHERE r.campaign_id = $1 AND (r.source_id = $2 OR r.target_id = $2)
              AND {visible("r", include_secret)} AND ($3 OR r.valid_to IS NULL)
              AND {visible("s", include_secret)} AND (t.id IS NULL OR {visible("t", include_secret)})
            ORDER BY r.valid_to IS NOT NULL, r.type, r.id
            """,
            self.campaign_id,
            entity_id,
            include_history,
        )
        return [relationship_from_row(r) for r in rows]

    async def facts_in_brief(
        self, entity_id: int, *, include_secret: bool = False, shown: int, sessions_shown: int
    ) -> FactsInBrief:
        """An entity's current facts as :meth:`relationships_of` gives them, but only the ``shown`` learned last and
        the ``sessions_shown`` sessions it took part in played last, each counted: one statement, however many it
        has (a player of a two-year campaign, thousands)."""
        touching = "(r.source_id = $2 OR r.target_id = $2)"
        rows = await self.db.fetch(
            f"""
            WITH f AS MATERIALIZED (
                {REL_SELECT_FROM.format(facts=readable_facts(include_secret, touching))}
                WHERE r.campaign_id = $1 AND {touching} AND r.valid_to IS NULL AND {visible("r", include_secret)}
                  AND {visible("s", include_secret)} AND (t.id IS NULL OR {visible("t", include_secret)})
            ), kept AS (
                SELECT f.*, coalesce(f.type = 'took_part_in' AND f.source_id = $2 AND f.target_name {RECAP_NAME_SQL},
                    false) AS session_link,  -- a value has no target name: a fact
                    EXISTS (SELECT 1 FROM entities o WHERE o.campaign_id = $1 AND o.id = {other_end("f", "$2")}
                            AND o.visibility = 'secret') AS secret_end
                FROM f
            )
            (SELECT kept.*, count(*) OVER () AS total FROM kept WHERE NOT session_link ORDER BY id DESC LIMIT $3)
            UNION ALL
            (SELECT kept.*, count(*) OVER () AS total FROM kept WHERE session_link
             ORDER BY {played_at("kept")} DESC NULLS LAST, id DESC LIMIT $4)
            """,
            self.campaign_id,
            entity_id,
            shown,
            sessions_shown,
        )
        facts = [r for r in rows if not r["session_link"]]
        links = [r for r in rows if r["session_link"]]
        return FactsInBrief(
            facts=sorted(map(relationship_from_row, facts), key=lambda r: (r.type, r.id)),
            more=facts[0]["total"] - len(facts) if facts else 0,
            sessions=[r["target_name"] for r in links],
            session_count=links[0]["total"] if links else 0,
            secret_ends=[r["id"] for r in facts if r["secret_end"]],
        )

    async def facts_by_source(self, *, players_read: bool = False) -> dict[int, list[Relationship]]:
        """Every accepted current fact of the campaign, secret ones too, under its source entity, each entity's in
        :meth:`relationships_of`'s order: one query for a campaign's thousands (an export), not one per entity.
        ``players_read``: instead, the facts the DM's view has closed that players still read as current, a fact
        they cannot see having replaced them (see ``PLAYERS_FACTS``)."""
        closed = "EXISTS (SELECT 1 FROM relationships d WHERE d.id = r.id AND d.valid_to IS NOT NULL)"
        rows = await self.db.fetch(
            f"""{REL_SELECT_FROM.format(facts=readable_facts(not players_read))}
            WHERE r.campaign_id = $1 AND r.status = 'accepted' AND r.valid_to IS NULL
              AND {closed if players_read else "true"}
              AND {visible("s", True)} AND (t.id IS NULL OR {visible("t", True)})
            ORDER BY r.source_id, r.type, r.id
            """,
            self.campaign_id,
        )
        facts: dict[int, list[Relationship]] = {}
        for row in rows:
            facts.setdefault(row["source_id"], []).append(relationship_from_row(row))
        return facts

    async def accepted_fact_keys(self) -> dict[tuple[int, str, int | None, str | None], HeldFact]:
        """The campaign's accepted current facts as (source, type, target, value), each with its id, visibility and
        whether a campaign file stated it: what :meth:`ensure_relationship` would find and leave as it is, known in
        one query."""
        rows = await self.db.fetch(
            f"""
            SELECT id, source_id, type, target_id, value, visibility, {FILED} AS filed FROM relationships
            WHERE campaign_id = $1 AND status = 'accepted' AND valid_to IS NULL
            """,
            self.campaign_id,
        )
        return {
            (r["source_id"], r["type"], r["target_id"], r["value"]): HeldFact(
                r["id"], Visibility(r["visibility"]), r["filed"]
            )
            for r in rows
        }

    async def history(self, entity_id: int, *, include_secret: bool = False) -> list[PastFact]:
        """The accepted facts touching an entity that no longer hold, the last to end first, each with the title of
        the session it was heard in: what was true before (the Ember Key's owners, "status: alive"). Visible as
        :meth:`relationships_of` filters them."""
        past = await self.heard_where(
            [
                r
                for r in await self.relationships_of(entity_id, include_secret=include_secret, include_history=True)
                if r.valid_to is not None
            ]
        )
        past.sort(key=lambda r: (r.valid_to, r.valid_from, r.id), reverse=True)
        return past

    async def heard_where(self, facts: list[Relationship]) -> list[PastFact]:
        """``facts``, each with the title of the session it was heard in and the ref of its line (see
        :meth:`PastFact.heard`)."""
        said_in = {r.provenance.session_id for r in facts if r.provenance.session_id is not None}
        rows = await self.db.fetch(
            "SELECT id, title FROM sessions WHERE campaign_id = $1 AND id = ANY($2::bigint[])",
            self.campaign_id,
            sorted(said_in),
        )
        titles: dict[int | None, str] = {r["id"]: r["title"] for r in rows}
        lines = {r.provenance.entry_ids[0] for r in facts if r.provenance.entry_ids}
        rows = await self.db.fetch(
            "SELECT id, ref FROM session_entries WHERE campaign_id = $1 AND id = ANY($2::bigint[])",
            self.campaign_id,
            sorted(lines),
        )
        refs: dict[int, str | None] = {r["id"]: r["ref"] for r in rows}
        return [
            PastFact(
                **r.model_dump(),
                session_title=titles.get(r.provenance.session_id),
                line_ref=refs.get(r.provenance.entry_ids[0]) if r.provenance.entry_ids else None,
            )
            for r in facts
        ]

    async def neighbourhood(self, name: str, *, depth: int = 1, include_secret: bool = False) -> Neighbourhood:
        """The visible subgraph around an entity: its current relationships up to ``depth`` hops and the
        entities they reach. Secret entities and facts are left out unless ``include_secret``."""
        entity = await self.get_entity(name)
        if not include_secret and not players_see(entity):
            raise NotFoundError(await self._not_found_message(name))
        steps = await self.traverse(entity.id, max_depth=depth, include_secret=include_secret)
        ids = [entity.id, *(s.entity_id for s in steps)]
        rel_rows = await self.db.fetch(
            f"""{rel_select(include_secret)}
            WHERE r.campaign_id = $1 AND r.valid_to IS NULL AND {visible("r", include_secret)}
              AND r.source_id = ANY($2::bigint[]) AND (r.target_id IS NULL OR r.target_id = ANY($2::bigint[]))
              AND (r.source_id = $3 OR r.target_id = $3 OR $4 > 1)
            ORDER BY r.source_id <> $3, r.type, {played_at("r")} NULLS FIRST, r.id
            """,
            self.campaign_id,
            ids,
            entity.id,
            depth,
        )
        ent_rows = await self.db.fetch(
            f"{ENTITY_SELECT} WHERE e.campaign_id = $1 AND e.id = ANY($2::bigint[]) ORDER BY lower(e.name)",
            self.campaign_id,
            ids[1:],
        )
        return Neighbourhood(
            entity=entity,
            relationships=[relationship_from_row(r) for r in rel_rows],
            connected=[entity_from_row(r) for r in ent_rows],
        )

    async def snapshot(self, name: str, *, include_secret: bool = False) -> Neighbourhood:
        """An NPC's identity: the node, its current relationships and the entities they connect to."""
        return (await self._identity(name, include_secret, mention=False))[0]

    async def identity(self, name: str, *, include_secret: bool = False) -> tuple[Neighbourhood, Mention | None]:
        """:meth:`snapshot` and :meth:`last_mention` in one round trip: what the hot context and a card read."""
        return await self._identity(name, include_secret, mention=True)

    async def _identity(
        self, name: str, include_secret: bool, *, mention: bool
    ) -> tuple[Neighbourhood, Mention | None]:
        sql = _identity_sql(include_secret, mention)
        row = await self.db.fetchrow(sql, self.campaign_id, name_query(name))
        if row is not None and not include_secret and not players_see(entity_from_row(row)):
            row = None  # a name the reader may not see is as unknown to them as one nobody has
        # "Vex’ahlia", "Nook Inn": another spelling of the one name the reader may see
        meant = await self._spelled_otherwise(name, include_secret=include_secret) if row is None else None
        if meant is not None:
            row = await self.db.fetchrow(sql, self.campaign_id, meant.name)
        if row is None:
            raise NotFoundError(await self._not_found_message(name), subject="entity", name=name)
        entity = entity_from_row(row)
        snap = Neighbourhood(
            entity=entity,
            relationships=[Relationship(**r) for r in row["facts"]],
            connected=[Entity(**c) for c in row["connected"]],
        )
        last = next(in_game(row["last"] or [], lambda m: m["text"]), None) if mention else None
        return snap, Mention(**last) if last else None

    async def traverse(self, start_id: int, *, max_depth: int = 3, include_secret: bool = False) -> list[PathStep]:
        """Entities reachable from ``start_id`` over current, visible relationships (either direction), each at
        its shortest depth with the relationship that reached it.

        UNION (not UNION ALL) keeps one row per (entity, depth, edge), so the work per hop is bounded by the
        number of edges instead of growing with the number of paths."""
        if not 1 <= max_depth <= 6:
            raise InvalidInputError("traversal depth must be between 1 and 6")
        touching = "(r.source_id = w.entity_id OR r.target_id = w.entity_id)"  # each step's facts, by index
        rows = await self.db.fetch(
            f"""
            WITH RECURSIVE walk(entity_id, depth, via) AS (
                SELECT $2::bigint, 0, NULL::bigint
                UNION
                SELECT other.id, w.depth + 1, r.id
                FROM walk w
                JOIN {"" if include_secret else "LATERAL "}{readable_facts(include_secret, touching)} r
                  ON r.campaign_id = $1 AND (r.source_id = w.entity_id OR r.target_id = w.entity_id)
                CROSS JOIN LATERAL (
                    SELECT CASE WHEN r.source_id = w.entity_id THEN r.target_id ELSE r.source_id END AS id
                ) other
                JOIN entities o ON o.id = other.id
                WHERE w.depth < $3 AND r.target_id IS NOT NULL AND r.valid_to IS NULL
                  AND {visible("r", include_secret)} AND {visible("o", include_secret)}
            )
            SELECT DISTINCT ON (w.entity_id) w.entity_id, en.name, w.depth, w.via
            FROM walk w JOIN entities en ON en.id = w.entity_id AND en.campaign_id = $1
            WHERE w.entity_id <> $2 AND {visible("en", include_secret)}
            ORDER BY w.entity_id, w.depth
            """,
            self.campaign_id,
            start_id,
            max_depth,
        )
        steps = [PathStep(entity_id=r["entity_id"], name=r["name"], depth=r["depth"], via=r["via"]) for r in rows]
        return sorted(steps, key=lambda s: (s.depth, s.name.casefold()))

    async def last_mention(self, entity: Entity) -> Mention | None:
        """Where an entity was last named (by name, alias, heard-as or a correction): session, speaker, time, text,
        from the mention index and the lines it may not hold yet (:func:`memory.mentions.said_ids`). Sessions go by
        when they were played, lines by their place in the session; out-of-game talk aside. A secret entity renamed
        keeps no alias, but its lines stay indexed under its id."""
        said = await latest(self.db, self.campaign_id, entity.id, limit=1)
        return Mention(**said[0].model_dump()) if said else None

    async def prompt_entities(self, *, recent_sessions: int) -> list[PromptEntity]:
        """Every accepted entity with what ranks it for the speech recogniser's prompt: pinned, a player, how many
        passages of the last ``recent_sessions`` sessions (by when played) name it, how many facts link it to
        another entity (not rejected). An attribute fact is left out: imported GM notes (``dm_notes``) are one each,
        so every NPC with notes ranked above every place; a status or occupation says no more of how central a name
        is to the story than notes do."""
        rows = await self.db.fetch(
            """
            WITH recent AS (
                SELECT id FROM sessions WHERE campaign_id = $1 ORDER BY started_at DESC, id DESC LIMIT $2
            ), said AS (
                SELECT m.id, count(*) AS n FROM chunks c CROSS JOIN LATERAL unnest(c.entity_ids) AS m(id)
                WHERE c.campaign_id = $1 AND c.session_id IN (SELECT id FROM recent) GROUP BY m.id
            )
            SELECT e.id, e.name, e.type, e.pinned, coalesce(said.n, 0) AS said_lately,
                   ARRAY(SELECT a.alias FROM entity_aliases a WHERE a.entity_id = e.id ORDER BY lower(a.alias))
                       AS aliases,
                   (SELECT count(*) FROM relationships r  -- facts between two entities, see the docstring
                    WHERE r.campaign_id = $1 AND (r.source_id = e.id OR r.target_id = e.id)
                      AND r.target_id IS NOT NULL AND r.status <> 'rejected') AS degree
            FROM entities e LEFT JOIN said ON said.id = e.id
            WHERE e.campaign_id = $1 AND e.status = 'accepted'
            """,
            self.campaign_id,
            recent_sessions,
        )
        return [
            PromptEntity(
                id=r["id"],
                name=r["name"],
                aliases=tuple(r["aliases"]),
                cast=r["type"] == EntityType.player.value,
                pinned=r["pinned"],
                said_lately=r["said_lately"],
                degree=r["degree"],
                event=r["type"] == EntityType.event.value,
            )
            for r in rows
        ]


def _identity_sql(include_secret: bool, mention: bool) -> str:
    """One statement for an entity's snapshot (:meth:`Reading.neighbourhood` at depth 1) and, with ``mention``,
    where it was last said: campaign ``$1``, name or alias ``$2`` (the name wins). The facts are the current ones
    touching it whose other end the reader sees, in the neighbourhood's order; the connected entities those ends.
    A row with the entity however visible (the caller says "not found"); none when no entity has the name."""
    touching = "(r.source_id = (SELECT id FROM ent) OR r.target_id = (SELECT id FROM ent))"
    other = other_end("f", "(SELECT id FROM ent)")
    # the newest lines of the game, a few more than one: :meth:`Reading._identity` drops a line's own table talk
    newest = said_lines("ent.id", str(1 + OFF_GAME_SLACK), in_game=True)
    last = f"(SELECT jsonb_agg(to_jsonb(l)) FROM ({newest}) l)" if mention else "NULL::jsonb"
    return f"""
    WITH hit AS (
        SELECT id, 0 AS rank FROM entities WHERE campaign_id = $1 AND lower(name) = lower($2) AND status <> 'rejected'
        UNION ALL
        SELECT entity_id, 1 FROM entity_aliases WHERE campaign_id = $1 AND lower(alias) = lower($2)
    ),
    ent AS MATERIALIZED (
        {ENTITY_SELECT} JOIN hit ON hit.id = e.id
        WHERE e.campaign_id = $1 AND e.status <> 'rejected' ORDER BY hit.rank LIMIT 1
    ),
    f AS MATERIALIZED (
        {REL_SELECT_FROM.format(facts=readable_facts(include_secret, touching))}
        WHERE r.campaign_id = $1 AND {touching} AND r.valid_to IS NULL AND {visible("r", include_secret)}
    ),
    facts AS (  -- an edge counts when the reader sees its other end (or it loops back to the entity)
        SELECT f.*, {other} AS other FROM f
        WHERE f.target_id IS NULL OR {other} = (SELECT id FROM ent) OR EXISTS (
            SELECT 1 FROM entities o WHERE o.campaign_id = $1 AND o.id = {other} AND {visible("o", include_secret)})
    )
    SELECT ent.*,
        coalesce((
            SELECT jsonb_agg(
                to_jsonb(facts) - 'other'
                ORDER BY facts.source_id <> ent.id, facts.type, {played_at("facts")} NULLS FIRST, facts.id
            )
            FROM facts
        ), '[]'::jsonb) AS facts,
        coalesce((
            SELECT jsonb_agg(to_jsonb(c) ORDER BY lower(c.name)) FROM (
                {ENTITY_SELECT}
                WHERE e.campaign_id = $1
                  AND e.id IN (SELECT other FROM facts WHERE target_id IS NOT NULL AND other <> (SELECT id FROM ent))
            ) c
        ), '[]'::jsonb) AS connected,
        {last} AS last
    FROM ent
    """
