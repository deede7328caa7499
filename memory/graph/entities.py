"""Writing entities: add, edit (by the DM or a campaign file), remove, review status and pins."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import asyncpg

from memory.db import transaction
from memory.errors import AlreadyExistsError, InvalidInputError
from memory.graph.masking import Masking
from memory.graph.names import Names
from memory.graph.rules import as_stated, keeping_old_name, keeping_unstated, new_names, vouched
from memory.graph.sql import entity_from_row
from memory.graph.took_part import link_to_recaps
from memory.models import Entity, EntityIn, EntityType, ReviewStatus, Visibility
from memory.text import check_attributes, clean_name, heard_as_phrases, not_heard_as_phrases, shown_text, storable


class Entities(Names, Masking):
    """Adding, editing and removing entities."""

    async def add_entity(self, entity: EntityIn) -> Entity:
        async with transaction(self.db) as conn:  # the entity and its aliases, or nothing
            return await self.bound_to(conn)._add_entity(entity)

    async def _add_entity(self, entity: EntityIn) -> Entity:
        await self._check_names_free([entity.name, *entity.aliases])
        try:
            # the row as ENTITY_SELECT reads it, names none yet: read again only if it is given some below
            row = await self.db.fetchrow(
                """
                INSERT INTO entities (campaign_id, type, name, description, attributes, visibility, status,
                                      provenance)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                RETURNING id, campaign_id, name, type, description, attributes, visibility, status, provenance,
                          created_at, updated_at, '{}'::text[] AS aliases, '{}'::text[] AS heard_as,
                          '{}'::text[] AS not_heard_as
                """,
                self.campaign_id,
                entity.type,
                entity.name,
                entity.description,
                entity.attributes,
                entity.visibility,
                entity.status,
                entity.provenance.model_dump(mode="json"),
            )
        except asyncpg.UniqueViolationError:
            raise AlreadyExistsError(
                f"an entity named {entity.name!r} already exists", subject="entity", name=entity.name
            ) from None
        # a new entity has no names to replace: only those it has are written (a big import's round trips)
        if not (entity.aliases or entity.heard_as or entity.not_heard_as):
            return entity_from_row(row)
        if entity.aliases:
            await self._set_aliases(row["id"], entity.aliases)
        if entity.heard_as:
            await self._set_heard_as(row["id"], entity.heard_as)
        if entity.not_heard_as:
            await self._set_not_heard_as(row["id"], entity.not_heard_as, restore=False)  # no line names it yet
        return await self.get_entity_by_id(row["id"])

    async def update_entity(
        self,
        name: str,
        *,
        new_name: str | None = None,
        type: EntityType | None = None,
        description: str | None = None,
        aliases: Sequence[str] | None = None,
        attributes: dict[str, Any] | None = None,
        visibility: Visibility | None = None,
        replace_attributes: bool = False,
        heard_as: Sequence[str] | None = None,
        not_heard_as: Sequence[str] | None = None,
    ) -> Entity:
        """Change an entity in place; ``attributes`` merge into the existing ones unless ``replace_attributes``. A
        public entity renamed keeps its old name as an alias, unless ``aliases`` says what they are; a secret one's
        old name stays hidden from players while it is secret (what was said of it still says that name).
        ``heard_as`` replaces what the recogniser is known to write for its name; the lines a new phrase is in are
        corrected again by a background job (:func:`memory.jobs.enqueue_recorrection`), and those a phrase taken away
        was corrected in restored (:func:`memory.jobs.enqueue_restoration`); ``not_heard_as`` replaces what it
        writes that is never the name, and the lines a new one was corrected to the name in are restored so too. An
        accepted entity given a name or alias it did not have took part in the recapped sessions that said it (see
        :func:`memory.graph.took_part.link_to_recaps`)."""
        async with transaction(self.db) as conn:  # name, fields, aliases and links change together or not at all
            graph = self.bound_to(conn)
            await graph.lock()  # before any write (heard-as phrases go first): see ``KnowledgeGraph.lock``
            before = await graph.get_entity(name)
            updated = await graph._update_entity(
                before,
                new_name=new_name,
                type=type,
                description=description,
                aliases=aliases,
                attributes=attributes,
                visibility=visibility,
                replace_attributes=replace_attributes,
                heard_as=heard_as,
                not_heard_as=not_heard_as,
            )
            if updated.status == ReviewStatus.accepted and (said := new_names(before, updated)):
                # an entity accepted before the edit took part in the sessions saying its old names already
                names = said if before.status == ReviewStatus.accepted else None
                await link_to_recaps(graph, [updated.id], names=names)
            return updated

    async def _update_entity(
        self,
        current: Entity,
        *,
        new_name: str | None,
        type: EntityType | None,
        description: str | None,
        aliases: Sequence[str] | None,
        attributes: dict[str, Any] | None,
        visibility: Visibility | None,
        replace_attributes: bool,
        heard_as: Sequence[str] | None = None,
        not_heard_as: Sequence[str] | None = None,
    ) -> Entity:
        public = (visibility or current.visibility) == Visibility.public
        phrases = heard_as_phrases(list(heard_as)) if heard_as is not None else None
        refused = not_heard_as_phrases(list(not_heard_as)) if not_heard_as is not None else None
        if phrases is not None:  # gone before the names are checked: a phrase may become a name in the same edit
            await self.db.execute(
                "DELETE FROM entity_heard_as WHERE campaign_id = $1 AND entity_id = $2", self.campaign_id, current.id
            )
        edit = _cleaned_edit(current, new_name, aliases, attributes, description, public=public)
        await self._check_names_free([n for n in [edit.new_name, *edit.aliases] if n], except_id=current.id)
        merged = edit.attributes if replace_attributes else {**current.attributes, **(edit.attributes or {})}
        await self._write_fields(current.id, edit, type=type, attributes=merged or {}, visibility=visibility)
        if edit.aliases_given:
            await self._set_aliases(current.id, edit.aliases)
        if not public and edit.renamed:  # what was said of it still says its old name
            await self._keep_masked(current.id, [current.name])
        elif public and current.visibility == Visibility.secret:  # no secret now: nor are the names it had
            await self.db.execute(
                "DELETE FROM masked_names WHERE campaign_id = $1 AND entity_id = $2", self.campaign_id, current.id
            )
        if phrases is not None:
            await self._set_heard_as(current.id, phrases, had=current.heard_as)
        if refused is not None:
            await self._set_not_heard_as(current.id, refused, had=current.not_heard_as)
        else:  # its names or heard-as phrases changed: none may be what it is never heard as
            await self._check_not_heard_as(current.id)
        return await self.get_entity_by_id(current.id)

    async def _write_fields(
        self,
        entity_id: int,
        edit: _Edit,
        *,
        type: EntityType | None,
        attributes: dict[str, Any],
        visibility: Visibility | None,
    ) -> None:
        """Write an edit's name, type, description, attributes and visibility (None: left as they are)."""
        try:
            await self.db.execute(
                """
                UPDATE entities SET name = coalesce($3, name), type = coalesce($4, type),
                    description = coalesce($5, description), attributes = $6,
                    visibility = coalesce($7, visibility), updated_at = now()
                WHERE campaign_id = $1 AND id = $2
                """,
                self.campaign_id,
                entity_id,
                edit.new_name,
                type,
                edit.description,
                attributes,
                visibility,
            )
        except asyncpg.UniqueViolationError:
            raise AlreadyExistsError(
                f"an entity named {edit.new_name!r} already exists", subject="entity", name=edit.new_name
            ) from None

    async def upsert_entity(
        self, entity: EntityIn, *, renamed_from: str | None = None, keep: Collection[str] = ()
    ) -> tuple[Entity, Literal["created", "updated", "unchanged"], Entity | None]:
        """Create the entity or bring the one of its name up to date, saying which happened and what it was before
        (None: new), so a caller can tell the DM what was replaced; ``renamed_from``
        names an entity to rename into it (once renamed, the entity of its name is found first, so loading the
        same file again changes nothing; two entities are never merged). Never one whose alias is its name: "Old
        Bronze", an alias of Eldrinax, would rename, retype and strip Eldrinax. Nor one of its aliases: a new "Mira
        the Younger" with the alias "Mira" is not the Mira already known. ``keep`` names the fields of ``entity``
        its caller did not state: an entity already known keeps its own values of them."""
        current = await self._upserted_checked(entity.name, renamed_from)
        if current is None:  # a file made elsewhere, its entity is new here
            return await self.add_entity(entity), "created", None
        before = current
        if renamed_from is None and entity.name.casefold() != current.name.casefold():  # "Kal’thar" of Kal'thar
            entity = entity.model_copy(update={"name": current.name})  # the same name, kept as it was written
        # The DM's word (a campaign file) on an entity still waiting for review accepts it, as it would a fact.
        accepted = False
        if current.status == ReviewStatus.pending and vouched(entity.provenance):
            await self.set_entity_status(current.id, ReviewStatus.accepted, dm_confirmed=True)
            current, accepted = await self.get_entity_by_id(current.id), True
        entity = keeping_unstated(current, entity, keep)
        if as_stated(entity) == as_stated(current):
            return current, "updated" if accepted else "unchanged", before
        # not ``update_entity``: a file's names change many entities at once, their caller links them in one go
        async with transaction(self.db) as conn:
            updated = await self.bound_to(conn)._update_entity(
                current,
                new_name=entity.name,
                type=entity.type,
                description=entity.description,
                aliases=entity.aliases,
                attributes=entity.attributes,
                visibility=entity.visibility,
                replace_attributes=True,
                heard_as=entity.heard_as,
                not_heard_as=entity.not_heard_as,
            )
        return updated, "updated", before

    async def _upserted_checked(self, name: str, renamed_from: str | None) -> Entity | None:
        """:meth:`upserted`, refusing a ``renamed_from`` that would take the name of another entity."""
        named, old = await self._named_for_file(name, renamed_from)
        if named is not None and old is not None and named.id != old.id:
            raise AlreadyExistsError(
                f"renamed_from: {old.name!r} cannot become {named.name!r}, which is another entity already"
            )
        return named or old

    async def remove_entity(self, name: str | int) -> Entity:
        """Delete an entity (a name, an alias or its id) and every relationship touching it (the DM's decision,
        not play's). A secret one's names stay hidden from players in what was said of it: removing it reveals
        nothing."""
        async with transaction(self.db) as conn:
            graph = self.bound_to(conn)
            entity = await graph._entity(name)
            if entity.visibility == Visibility.secret:
                await graph._keep_masked_for_good(entity)
            await conn.execute("DELETE FROM entities WHERE campaign_id = $1 AND id = $2", self.campaign_id, entity.id)
            return entity

    async def facts_touching(self, entity_id: int) -> tuple[int, int, int]:
        """How many facts touching an entity (secret ones too) removing it deletes: current, history (its own and
        other entities', "Osric lived in Greywatch") and waiting for review. The DM is told all three."""
        row = await self.db.fetchrow(
            """
            SELECT count(*) FILTER (WHERE status = 'accepted' AND valid_to IS NULL) AS current,
                   count(*) FILTER (WHERE status = 'accepted' AND valid_to IS NOT NULL) AS past,
                   count(*) FILTER (WHERE status = 'pending') AS waiting
            FROM relationships WHERE campaign_id = $1 AND (source_id = $2 OR target_id = $2)
            """,
            self.campaign_id,
            entity_id,
        )
        assert row is not None
        return row["current"], row["past"], row["waiting"]

    async def set_entity_status(self, entity_id: int, status: ReviewStatus, *, dm_confirmed: bool) -> None:
        if status == ReviewStatus.rejected:
            # a rejected proposal keeps its row, not its names: they are free for the DM to use again
            for table in ("entity_aliases", "entity_heard_as", "entity_not_heard_as"):
                await self.db.execute(
                    f"DELETE FROM {table} WHERE campaign_id = $1 AND entity_id = $2", self.campaign_id, entity_id
                )
        await self.db.execute(
            """
            UPDATE entities SET status = $3, updated_at = now(),
                provenance = provenance || jsonb_build_object('dm_confirmed', $4::boolean)
            WHERE campaign_id = $1 AND id = $2
            """,
            self.campaign_id,
            entity_id,
            status,
            dm_confirmed,
        )

    async def set_pinned(self, entity: Entity, pinned: bool) -> bool:
        """Pin an entity's names in the speech recogniser's prompt (or unpin them); False if it was so already."""
        status = await self.db.execute(
            "UPDATE entities SET pinned = $3, updated_at = now() WHERE campaign_id = $1 AND id = $2 AND pinned <> $3",
            self.campaign_id,
            entity.id,
            pinned,
        )
        return status != "UPDATE 0"


@dataclass
class _Edit:
    """An edit's fields, cleaned and checked (see :func:`_cleaned_edit`)."""

    new_name: str | None
    renamed: bool
    aliases: list[str]
    aliases_given: bool  # None: the aliases stay as they are
    attributes: dict[str, Any] | None
    description: str | None


def _cleaned_edit(
    current: Entity,
    new_name: str | None,
    aliases: Sequence[str] | None,
    attributes: dict[str, Any] | None,
    description: str | None,
    *,
    public: bool,
) -> _Edit:
    """The edit's fields as stored, or the first one refused. A public entity renamed keeps its old name as an alias
    unless ``aliases`` says what they are (see :func:`keeping_old_name`)."""
    renamed = False
    if new_name is not None:
        new_name = clean_name(new_name)
        renamed = new_name.casefold() != current.name.casefold()
        if renamed and aliases is None and public:
            aliases = keeping_old_name(current, new_name)
    cleaned_aliases = EntityIn(name="x", type=EntityType.npc, aliases=list(aliases)).aliases if aliases else []
    if description is not None:
        try:
            description = shown_text(storable(description))
        except ValueError as exc:
            raise InvalidInputError(f"description {exc}") from None
    return _Edit(
        new_name=new_name,
        renamed=renamed,
        aliases=cleaned_aliases,
        aliases_given=aliases is not None,
        attributes=check_attributes(attributes) if attributes else attributes,
        description=description,
    )
