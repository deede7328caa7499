"""Finding one entity or fact: by name, alias, heard-as phrase or id, with the did-you-mean of a name not found."""

from __future__ import annotations

from collections.abc import Sequence

from memory.errors import NotFoundError
from memory.graph.base import GraphBase
from memory.graph.rules import CLOSE_NAME, listing_key, name_closeness, spelled_alike
from memory.graph.sql import (
    ENTITY_SELECT,
    REL_SELECT,
    bare,
    entity_from_row,
    relationship_from_row,
)
from memory.models import Entity, EntityType, Relationship, ReviewStatus
from memory.text import apostrophe_spellings, name_query


class EntityLookup(GraphBase):
    """Finding entities and facts of one campaign."""

    async def find_entity(self, name: str, *, include_rejected: bool = False) -> Entity | None:
        """The entity called ``name`` or having it as an alias, case-insensitively (the name wins)."""
        # Two index lookups joined by UNION ALL: an OR across the tables would scan every entity.
        # ``status <> 'rejected'`` spelled out in the name probe so the partial unique index serves it.
        row = await self.db.fetchrow(
            f"""
            WITH hit AS (
                SELECT id, 0 AS rank FROM entities
                WHERE campaign_id = $1 AND lower(name) = lower($2) AND ($3 OR status <> 'rejected')
                UNION ALL
                SELECT entity_id, 1 FROM entity_aliases WHERE campaign_id = $1 AND lower(alias) = lower($2)
            )
            {ENTITY_SELECT} JOIN hit ON hit.id = e.id
            WHERE e.campaign_id = $1 AND ($3 OR e.status <> 'rejected')
            ORDER BY hit.rank LIMIT 1
            """,
            self.campaign_id,
            name_query(name),
            include_rejected,
        )
        return entity_from_row(row) if row else None

    async def find_entities(self, names: Sequence[str]) -> list[Entity | None]:
        """:meth:`find_entity` of each name, in two queries for them all: an import of thousands of records looked
        each up alone."""
        hits = await self.db.fetch(
            """
            WITH wanted AS (SELECT lower(n) AS n, i FROM unnest($2::text[]) WITH ORDINALITY w(n, i)),
            hit AS (
                SELECT w.i, e.id, 0 AS rank FROM wanted w
                JOIN entities e ON e.campaign_id = $1 AND lower(e.name) = w.n AND e.status <> 'rejected'
                UNION ALL
                SELECT w.i, a.entity_id, 1 FROM wanted w
                JOIN entity_aliases a ON a.campaign_id = $1 AND lower(a.alias) = w.n
                JOIN entities e ON e.campaign_id = $1 AND e.id = a.entity_id AND e.status <> 'rejected'
            )
            SELECT DISTINCT ON (i) i, id FROM hit ORDER BY i, rank
            """,
            self.campaign_id,
            [name_query(name) for name in names],
        )
        rows = await self.db.fetch(
            f"{ENTITY_SELECT} WHERE e.campaign_id = $1 AND e.id = ANY($2::bigint[])",
            self.campaign_id,
            sorted({hit["id"] for hit in hits}),
        )
        entities = {row["id"]: entity_from_row(row) for row in rows}
        found: list[Entity | None] = [None] * len(names)
        for hit in hits:
            found[hit["i"] - 1] = entities[hit["id"]]
        return found

    async def heard_as_of(self, phrase: str) -> Entity | None:
        """The entity the recogniser is known to write ``phrase`` for (one of its heard-as phrases, spacing and
        punctuation aside, as the matcher reads them), if any."""
        row = await self.db.fetchrow(
            f"""
            {ENTITY_SELECT} JOIN entity_heard_as h ON h.entity_id = e.id
            WHERE e.campaign_id = $1 AND e.status <> 'rejected' AND h.campaign_id = $1
              AND {bare("h.phrase")} = {bare("$2::text")}
            LIMIT 1
            """,
            self.campaign_id,
            phrase,
        )
        return entity_from_row(row) if row else None

    async def get_entity(self, name: str, *, secret_hints: bool = False) -> Entity:
        """``secret_hints``: the did-you-mean may name secret and pending entities, for an answer only the DM reads."""
        found = await self.find_entity(name) or await self._spelled_otherwise(name, include_secret=True)
        if found is None:
            raise NotFoundError(await self._not_found_message(name, secret_hints), subject="entity", name=name)
        return found

    async def _spelled_otherwise(self, name: str, *, include_secret: bool) -> Entity | None:
        """The one entity ``name`` means as typed another way: accents, apostrophes (a phone's ’ for ') and hyphens
        aside as the matcher reads names ("cafe" for Café, "Vex’ahlia"), and a leading "The" left out or added
        ("Nestled Nook Inn", "the Vex'ahlia"). None if none, or if the spellings name several (of those a player
        sees, unless ``include_secret``: a secret one must not make a public one unfound)."""
        if not (wanted := spelled_alike(name)):
            return None
        forms = await self._forms(include_secret)
        found = {entity_id for entity_id, form, _ in forms if spelled_alike(form) == wanted}
        return await self.get_entity_by_id(found.pop()) if len(found) == 1 else None

    async def get_entity_by_id(self, entity_id: int) -> Entity:
        row = await self.db.fetchrow(
            f"{ENTITY_SELECT} WHERE e.campaign_id = $1 AND e.id = $2", self.campaign_id, entity_id
        )
        if row is None:
            raise NotFoundError(f"no entity with id {entity_id} in this campaign")
        return entity_from_row(row)

    async def _entity(self, ref: str | int) -> Entity:
        """By name or alias, or by id: what a Confirm button asked about, whatever it is called since."""
        return await self.get_entity_by_id(ref) if isinstance(ref, int) else await self.get_entity(ref)

    async def _named(self, name: str) -> Entity | None:
        """The entity of this name (not alias), case-insensitively and whatever its apostrophes are typed as: a
        file's "Kal’thar" is Kal'thar, not a second entity beside it. The spelling itself first."""
        query = name_query(name)
        row = await self.db.fetchrow(
            f"""{ENTITY_SELECT}
            WHERE e.campaign_id = $1 AND lower(e.name) = ANY(ARRAY(SELECT lower(n) FROM unnest($2::text[]) n))
              AND e.status <> 'rejected'
            ORDER BY lower(e.name) = lower($3) DESC LIMIT 1
            """,
            self.campaign_id,
            apostrophe_spellings(query),
            query,
        )
        return entity_from_row(row) if row else None

    async def _named_for_file(self, name: str, renamed_from: str | None) -> tuple[Entity | None, Entity | None]:
        """The entity named ``name`` and the one named ``renamed_from`` (None: none, or not given)."""
        return await self._named(name), await self._named(renamed_from) if renamed_from else None

    async def upserted(self, name: str, renamed_from: str | None = None) -> Entity | None:
        """The entity :meth:`upsert_entity` would bring up to date for an entry of this name (None: it adds one)."""
        named, old = await self._named_for_file(name, renamed_from)
        return named or old

    async def _not_found_message(self, name: str, include_secret: bool = False) -> str:
        from rapidfuzz import process

        from memory.correction.text import normalize

        # Hints come from public, accepted names only, unless told: a player's typo must not reveal a secret entity.
        forms = await self._forms(include_secret)
        # each entity once ("Jazna Grebin", not its title "Countess Jazna Grebin" too): its name if close, else the
        # closest alias
        close: dict[int, str] = {}
        choices = [f for _, f, _ in forms]
        close_forms = process.extract(
            name, choices, scorer=name_closeness, processor=normalize, limit=None, score_cutoff=CLOSE_NAME
        )
        for form, _, i in close_forms:
            entity_id, _, alias = forms[i]
            if entity_id not in close or not alias:  # in the order of its closest form
                close[entity_id] = form
        hint = f" (did you mean {', '.join(repr(c) for c in list(close.values())[:3])}?)" if close else ""
        return f"no entity named {name!r} in this campaign{hint}"

    async def all_names(self, *, include_secret: bool = True) -> list[str]:
        """Names and aliases of the entities that are not rejected (public and accepted ones only, unless
        ``include_secret``)."""
        return [form for _, form, _ in await self._forms(include_secret)]

    async def spelled_like(self, entity: Entity, before: Entity | None = None) -> list[tuple[str, str]]:
        """(a name of ``entity``, another entity's name or alias) pairs spelled alike (accents, apostrophes, hyphens
        aside: "Zoe Ashgrove" beside "Zoë Ashgrove"): allowed, a name as typed wins, but the DM is told, as typed
        otherwise either may be meant. ``before``: the entity before an edit: only the names the edit gave (the DM
        was told of the others when they were given)."""
        given = {entity.name, *entity.aliases} - ({before.name, *before.aliases} if before else set())
        mine = {spelled_alike(n): n for n in given}
        return [
            (mine[alike], form)
            for entity_id, form, _ in await self._forms(include_secret=True)
            if entity_id != entity.id and (alike := spelled_alike(form)) in mine
        ]

    async def _forms(self, include_secret: bool) -> list[tuple[int, str, bool]]:
        """(entity id, name or alias, whether an alias) of :meth:`all_names`."""
        visible = "" if include_secret else "AND e.status = 'accepted' AND e.visibility = 'public'"
        rows = await self.db.fetch(
            f"""
            SELECT e.id, e.name, false FROM entities e WHERE e.campaign_id = $1 AND e.status <> 'rejected' {visible}
            UNION ALL
            SELECT e.id, a.alias, true FROM entity_aliases a JOIN entities e ON e.id = a.entity_id
            WHERE a.campaign_id = $1 AND e.status <> 'rejected' {visible}
            """,
            self.campaign_id,
        )
        return [(r[0], r[1], r[2]) for r in rows]

    async def list_entities(
        self,
        type: EntityType | None = None,
        *,
        status: ReviewStatus | None = ReviewStatus.accepted,
        include_secret: bool = True,
    ) -> list[Entity]:
        """By name, accents aside (:func:`listing_key`)."""
        rows = await self.db.fetch(
            f"""{ENTITY_SELECT}
            WHERE e.campaign_id = $1 AND ($2::text IS NULL OR e.type = $2)
              AND ($3::text IS NULL OR e.status = $3) AND ($4 OR e.visibility = 'public')
            """,
            self.campaign_id,
            type,
            status,
            include_secret,
        )
        return sorted((entity_from_row(r) for r in rows), key=lambda e: listing_key(e.name))

    async def count_entities(self, type: EntityType | None = None, *, include_secret: bool = True) -> int:
        return await self.db.fetchval(
            """
            SELECT count(*) FROM entities WHERE campaign_id = $1 AND status = 'accepted'
              AND ($2::text IS NULL OR type = $2) AND ($3 OR visibility = 'public')
            """,
            self.campaign_id,
            type,
            include_secret,
        )

    async def get_relationship(self, rel_id: int) -> Relationship:
        row = await self.db.fetchrow(f"{REL_SELECT} WHERE r.campaign_id = $1 AND r.id = $2", self.campaign_id, rel_id)
        if row is None:
            raise NotFoundError(f"no relationship with id {rel_id} in this campaign")
        return relationship_from_row(row)

    async def closed_by(self, rel_id: int) -> list[Relationship]:
        """The facts ``rel_id`` contradicted and closed (see :meth:`close_contradicted`), oldest first."""
        rows = await self.db.fetch(
            f"{REL_SELECT} WHERE r.campaign_id = $1 AND r.superseded_by = $2 ORDER BY r.valid_from, r.id",
            self.campaign_id,
            rel_id,
        )
        return [relationship_from_row(r) for r in rows]

    async def pinned_entities(self) -> list[Entity]:
        rows = await self.db.fetch(
            f"{ENTITY_SELECT} WHERE e.campaign_id = $1 AND e.pinned ORDER BY lower(e.name)", self.campaign_id
        )
        return [entity_from_row(r) for r in rows]
