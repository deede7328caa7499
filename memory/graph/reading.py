"""Reading the graph: an entity's facts and history, its neighbourhood, traversal, where it was last said, and
what ranks it for the speech recogniser's prompt."""

from __future__ import annotations

from memory.errors import InvalidInputError, NotFoundError
from memory.graph.lookup import EntityLookup
from memory.graph.rules import players_see
from memory.graph.sql import (
    ENTITY_SELECT,
    REL_SELECT,
    entity_from_row,
    readable_facts,
    rel_select,
    relationship_from_row,
    visible,
)
from memory.models import (
    Entity,
    EntityType,
    Mention,
    Neighbourhood,
    PastFact,
    PathStep,
    PromptEntity,
    Relationship,
    Visibility,
)


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

    async def facts_by_source(self) -> dict[int, list[Relationship]]:
        """Every accepted current fact of the campaign, secret ones too, under its source entity, each entity's in
        :meth:`relationships_of`'s order: one query for a campaign's thousands (an export), not one per entity."""
        rows = await self.db.fetch(
            f"""{REL_SELECT}
            WHERE r.campaign_id = $1 AND r.status = 'accepted' AND r.valid_to IS NULL
              AND {visible("s", True)} AND (t.id IS NULL OR {visible("t", True)})
            ORDER BY r.source_id, r.type, r.id
            """,
            self.campaign_id,
        )
        facts: dict[int, list[Relationship]] = {}
        for row in rows:
            facts.setdefault(row["source_id"], []).append(relationship_from_row(row))
        return facts

    async def accepted_fact_keys(self) -> dict[tuple[int, str, int | None, str | None], Visibility]:
        """The campaign's accepted current facts as (source, type, target, value), each with its visibility: what
        :meth:`ensure_relationship` would find and leave as it is, known in one query."""
        rows = await self.db.fetch(
            """
            SELECT source_id, type, target_id, value, visibility FROM relationships
            WHERE campaign_id = $1 AND status = 'accepted' AND valid_to IS NULL
            """,
            self.campaign_id,
        )
        return {(r["source_id"], r["type"], r["target_id"], r["value"]): Visibility(r["visibility"]) for r in rows}

    async def history(self, entity_id: int, *, include_secret: bool = False) -> list[PastFact]:
        """The accepted facts touching an entity that no longer hold, the last to end first, each with the title of
        the session it was heard in: what was true before (the Ember Key's owners, "status: alive"). Visible as
        :meth:`relationships_of` filters them."""
        past = [
            r
            for r in await self.relationships_of(entity_id, include_secret=include_secret, include_history=True)
            if r.valid_to is not None
        ]
        said_in = {r.provenance.session_id for r in past if r.provenance.session_id is not None}
        rows = await self.db.fetch(
            "SELECT id, title FROM sessions WHERE campaign_id = $1 AND id = ANY($2::bigint[])",
            self.campaign_id,
            sorted(said_in),
        )
        titles: dict[int | None, str] = {r["id"]: r["title"] for r in rows}
        past.sort(key=lambda r: (r.valid_to, r.valid_from, r.id), reverse=True)
        return [PastFact(**r.model_dump(), session_title=titles.get(r.provenance.session_id)) for r in past]

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
            ORDER BY r.source_id <> $3, r.type, (
                -- took_part_in: in the order the sessions were played, which an import may set long after
                SELECT started_at FROM sessions
                WHERE campaign_id = $1
                  AND id = coalesce(r.provenance ->> 'session_id', t.provenance ->> 'session_id')::bigint
            ) NULLS FIRST, r.id
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
        return await self.neighbourhood(name, depth=1, include_secret=include_secret)

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
        """Where an entity's name (or an alias) was last said: session, speaker, time, text. Sessions go by when
        they were played (an import's is when it was imported unless the DM said otherwise), lines by their place
        in the session: a line's time into it may be missing (0), its place never is. A name the log no longer
        holds (a secret entity renamed keeps no alias) is found by the chunks that mention the entity."""
        terms = " OR ".join(f'"{n}"' for n in [entity.name, *entity.aliases] if '"' not in n)
        row = await self.db.fetchrow(
            """
            SELECT se.session_id, s.title, se.speaker, se.start_s, se.text, se.ref
            FROM session_entries se JOIN sessions s ON s.id = se.session_id
            WHERE se.campaign_id = $1 AND se.tsv @@ websearch_to_tsquery('english', searchable($2))
            ORDER BY s.started_at DESC, se.session_id DESC, se.seq DESC LIMIT 1
            """,
            self.campaign_id,
            terms,
        )
        return Mention(**row) if row else await self._last_mentioning_passage(entity.id)

    async def _last_mentioning_passage(self, entity_id: int) -> Mention | None:
        """The lines of the last chunk mentioning the entity that no chunk without it holds: windows overlap, so
        that is the line that named it, or the few around it."""
        rows = await self.db.fetch(
            """
            WITH last AS (
                SELECT c.session_id, c.entry_ids FROM chunks c JOIN sessions s ON s.id = c.session_id
                WHERE c.campaign_id = $1 AND c.entity_ids @> ARRAY[$2::bigint]
                ORDER BY s.started_at DESC, c.session_id DESC,
                         (SELECT max(seq) FROM session_entries WHERE campaign_id = $1 AND id = ANY(c.entry_ids)) DESC
                LIMIT 1
            )
            SELECT se.session_id, s.title, se.speaker, se.start_s, se.text, se.ref
            FROM last JOIN session_entries se ON se.campaign_id = $1 AND se.id = ANY(last.entry_ids)
            JOIN sessions s ON s.id = se.session_id
            WHERE NOT EXISTS (
                SELECT 1 FROM chunks o
                WHERE o.campaign_id = $1 AND o.session_id = last.session_id AND se.id = ANY(o.entry_ids)
                  AND NOT o.entity_ids @> ARRAY[$2::bigint]
            )
            ORDER BY se.seq
            """,
            self.campaign_id,
            entity_id,
        )
        if not rows:
            return None
        speakers = ", ".join(dict.fromkeys(r["speaker"] for r in rows))
        return Mention(**{**rows[0], "speaker": speakers, "text": " / ".join(r["text"] for r in rows)})

    async def prompt_entities(self, *, recent_sessions: int) -> list[PromptEntity]:
        """Every accepted entity with what ranks it for the speech recogniser's prompt: pinned, a player, how many
        passages of the last ``recent_sessions`` sessions (by when played) name it, how many facts it is in."""
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
                   (SELECT count(*) FROM relationships r
                    WHERE r.campaign_id = $1 AND (r.source_id = e.id OR r.target_id = e.id)) AS degree
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
            )
            for r in rows
        ]
