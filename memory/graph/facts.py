"""Relationships and attribute facts: recorded with a status from their provenance, closing what they contradict,
linked and unlinked on the DM's word.

Facts are never deleted by play: a contradicting fact, once accepted, closes the old one's validity
(``valid_to``) and points to it with ``superseded_by``. Only the DM removes things outright."""

from __future__ import annotations

from typing import Any

import asyncpg

from memory.db import transaction
from memory.errors import AlreadyExistsError, InvalidInputError, NotFoundError
from memory.graph.lookup import EntityLookup
from memory.graph.rules import can_contradict, stated_as, status_for, vouched
from memory.graph.sql import (
    CONTRADICTED,
    FILED,
    REL_SELECT,
    VOUCHED,
    contradicting,
    one_way_of,
    rel_select,
    relationship_from_row,
    said_at,
    stands_over,
    visible,
    weighed_target,
    weighs_against,
)
from memory.models import (
    LinkResult,
    Provenance,
    Relationship,
    RelationshipIn,
    ReviewStatus,
    Source,
    UnlinkResult,
    Visibility,
)
from memory.text import fact_value


class Facts(EntityLookup):
    """Recording, contradicting, linking and unlinking facts."""

    async def add_relationship(self, rel: RelationshipIn) -> Relationship:
        return (await self.ensure_relationship(rel))[0]

    async def ensure_relationship(self, rel: RelationshipIn) -> tuple[Relationship, bool]:
        """Record a relationship or attribute fact.

        Status comes from the provenance: DM and campaign-file facts are accepted; others are accepted only at
        or above the threshold and wait for review below it. An identical current fact is returned instead of
        being stored twice. An accepted fact closes the current accepted facts it contradicts."""
        async with transaction(self.db) as conn:
            graph = self.bound_to(conn)
            # two contradicting values accepted at once ("dead" by extraction, "alive" by the DM) would each miss
            # the other, uncommitted, and both stay current
            await graph.lock()
            return await graph._ensure_relationship(rel)

    async def _ensure_relationship(self, rel: RelationshipIn) -> tuple[Relationship, bool]:
        status = rel.status or status_for(rel.provenance, self.accept_threshold)
        existing = await self._current_copy(rel)
        # However sure the extractor is, what was said at the table (a player's "Eldrinax is dead", maybe under the
        # nickname "DM") does not end the DM's word by itself: the DM decides, in review. A waiting copy accepted
        # now would be true from now (below).
        guess = rel.status is None and status == ReviewStatus.accepted and not vouched(rel.provenance)
        if guess and await self._would_close_vouched(rel, rel.provenance if existing is None else None):
            status = ReviewStatus.pending
        if existing is not None and (existing["status"] == "accepted" or status == ReviewStatus.pending):
            return await self._add_evidence(relationship_from_row(existing), rel.provenance), False
        if existing is not None:
            return await self._accept_waiting(existing, rel), True
        fact = await self._insert_fact(rel, status)
        if fact is None:
            return await self._ensure_relationship(rel)  # someone stored the same fact a moment ago: use theirs
        if status == ReviewStatus.accepted and fact.id in await self._close_contradicted(fact):
            fact = await self.get_relationship(fact.id)  # a newer fact outdates it: history now
        return fact, True

    async def _current_copy(self, rel: RelationshipIn) -> asyncpg.Record | None:
        """The current, not rejected copy of the fact ``rel`` states, the accepted one first, if one is stored."""
        query = f"""{REL_SELECT}
            WHERE r.campaign_id = $1 AND r.source_id = $2 AND r.type = ANY($3::text[])
              AND r.target_id IS NOT DISTINCT FROM $4 AND r.value IS NOT DISTINCT FROM $5
              AND r.valid_to IS NULL AND r.status <> 'rejected'
            ORDER BY r.status = 'accepted' DESC LIMIT 1
            """
        existing = await self.db.fetchrow(query, self.campaign_id, rel.source_id, [rel.type], rel.target_id, rel.value)
        if existing is not None or rel.target_id is None:
            return existing
        # the same fact in other words ("the Circle led_by Greta", "ruled_by") or from the other end (allied_with;
        # "Mira has the Sunblade", "the Sunblade owned_by Mira"); asked apart, so the usual lookup keeps its index
        same, other = stated_as(rel.type)
        for source, types, target in ((rel.source_id, same, rel.target_id), (rel.target_id, other, rel.source_id)):
            if types and (existing := await self.db.fetchrow(query, self.campaign_id, source, types, target, None)):
                return existing
        return None

    async def _add_evidence(self, fact: Relationship, said: Provenance) -> Relationship:
        """``fact`` said again (Night 3 repeats Night 2's "Mira has the Sunblade"): the new lines join the ones it
        cites, for review and recall to show; when and where it was first heard stay."""
        if not (new := [i for i in said.entry_ids if i not in fact.provenance.entry_ids]):
            return fact
        entry_ids = [*fact.provenance.entry_ids, *new]
        await self.db.execute(
            "UPDATE relationships SET provenance = jsonb_set(provenance, '{entry_ids}', $3::jsonb) "
            "WHERE campaign_id = $1 AND id = $2",
            self.campaign_id,
            fact.id,
            entry_ids,
        )
        return fact.model_copy(update={"provenance": fact.provenance.model_copy(update={"entry_ids": entry_ids})})

    async def _accept_waiting(self, existing: asyncpg.Record, rel: RelationshipIn) -> Relationship:
        """The same fact waits for review and now arrives accepted (the DM, a campaign file): accept the waiting one
        rather than keep two current copies. The new source vouches for it; where it was said (session, lines,
        time) stays, for recall to cite."""
        said = relationship_from_row(existing).provenance
        kept = {key: getattr(said, key) for key in ("session_id", "timestamp", "entry_ids") if getattr(said, key)}
        # And it says who may see it: a waiting fact heard at the table is public until then. It is true from
        # now: the DM's word settles it, where a fact accepted since (a move) would otherwise close it at once.
        await self.db.execute(
            """
            UPDATE relationships SET status = 'accepted', provenance = $3, visibility = $4,
                valid_from = greatest(valid_from, now())
            WHERE campaign_id = $1 AND id = $2
            """,
            self.campaign_id,
            existing["id"],
            {**rel.provenance.model_dump(mode="json"), **kept},
            rel.visibility,
        )
        await self.close_contradicted(existing["id"])
        return await self.get_relationship(existing["id"])

    async def _insert_fact(self, rel: RelationshipIn, status: ReviewStatus) -> Relationship | None:
        """Store a new fact, read back as REL_SELECT reads it (not a second query); None if the same fact was stored
        a moment ago by another writer."""
        # No savepoint of its own: a copy another writer stored a moment ago is no error (ON CONFLICT), and any other
        # error ends the savepoint or transaction ``ensure_relationship`` holds.
        try:
            # True from when it was said, if heard in a session (an older session imported late must not
            # outdate what is known since: accepted, it is history); else from now. Of two facts an untimed
            # transcript gives, the one said later holds whichever the DM accepts first.
            row = await self.db.fetchrow(
                f"""
                INSERT INTO relationships AS r (campaign_id, source_id, type, target_id, value, attributes,
                                                visibility, status, provenance, valid_from)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, {said_at("$9")})
                ON CONFLICT DO NOTHING
                RETURNING r.id, r.campaign_id, r.source_id,
                    (SELECT s.name FROM entities s WHERE s.id = r.source_id) AS source_name, r.type, r.target_id,
                    (SELECT t.name FROM entities t WHERE t.id = r.target_id) AS target_name, r.value, r.attributes,
                    r.visibility, r.status, r.provenance, r.valid_from, r.valid_to, r.superseded_by, r.created_at
                """,
                self.campaign_id,
                rel.source_id,
                rel.type,
                rel.target_id,
                rel.value,
                rel.attributes,
                rel.visibility,
                status,
                rel.provenance.model_dump(mode="json"),
            )
        except asyncpg.ForeignKeyViolationError:
            raise NotFoundError("the relationship names an entity that is not in this campaign") from None
        except asyncpg.CheckViolationError:
            raise InvalidInputError("a relationship needs either a target entity or a value, not both") from None
        return relationship_from_row(row) if row is not None else None

    async def _would_close_vouched(self, rel: RelationshipIn, said: Provenance | None) -> bool:
        """Whether ``rel``, accepted as true from when ``said`` says (None: from now), would close a fact the DM
        vouched for (see :func:`vouched`), by :meth:`close_contradicted`'s rule."""
        if not can_contradict(rel.type, rel.value):
            return False
        *fact, single = contradicting(rel.type, rel.source_id, rel.target_id, rel.value)
        return bool(
            await self.db.fetchval(
                f"""
                SELECT EXISTS (
                    SELECT 1 FROM relationships WHERE {CONTRADICTED} AND {VOUCHED}
                      AND NOT {stands_over("$7::jsonb", said_at("$7"), "now()")}
                )
                """,
                self.campaign_id,
                None,
                *fact,
                said.model_dump(mode="json") if said else None,
                single,
            )
        )

    async def close_contradicted(self, rel_id: int) -> list[int]:
        """Settle validity between the accepted fact ``rel_id`` and the accepted, current facts it contradicts,
        by when each became true: older ones are closed; if a newer one exists, ``rel_id`` itself is history
        (accepting an old "alive" must not undo a later "dead"). Between a campaign file's fact and one heard in
        play, the one learned later is the newer (see :func:`stands_over`). Returns the ids closed."""
        return await self._close_contradicted(await self.get_relationship(rel_id))

    async def _close_contradicted(self, rel: Relationship) -> list[int]:
        if not can_contradict(rel.type, rel.value):
            return []
        *fact, single = contradicting(rel.type, rel.source_id, rel.target_id, rel.value)
        args = (self.campaign_id, rel.id, *fact, rel.valid_from, single, rel.provenance.model_dump(mode="json"))
        args = (*args, rel.created_at)
        later = stands_over("$9::jsonb", "$7", "$10")
        newer = await self.db.fetchrow(
            f"SELECT id, valid_from FROM relationships WHERE {CONTRADICTED} AND {later} ORDER BY valid_from LIMIT 1",
            *args,
        )
        if newer is not None:
            await self.db.execute(
                "UPDATE relationships SET valid_to = $3, superseded_by = $4 WHERE campaign_id = $1 AND id = $2",
                self.campaign_id,
                rel.id,
                newer["valid_from"],
                newer["id"],
            )
            return [rel.id]
        # they held until it became true (said in a session imported today: then, not today), as above; a file's
        # fact, dated when it was loaded, may so end before that date
        rows = await self.db.fetch(
            f"UPDATE relationships SET valid_to = $7, superseded_by = $2 WHERE {CONTRADICTED}"
            f" AND NOT {later} RETURNING id",
            *args,
        )
        return [r["id"] for r in rows]

    async def mark_filed(self, ids: list[int]) -> None:
        """A campaign file restated the facts ``ids``, which play or the DM had recorded: that is what the file
        says now (see :meth:`replaced_in_play`)."""
        await self.db.execute(
            """UPDATE relationships SET provenance = provenance || '{"in_file": true}'
               WHERE campaign_id = $1 AND id = ANY($2::bigint[])""",
            self.campaign_id,
            ids,
        )

    async def replaced_in_play(self, rel: RelationshipIn) -> bool:
        """Whether a campaign file stating ``rel`` again says what it said before, which play or the DM has since
        replaced by a fact no file stated ("alive" loaded, "dead" heard in Night 2, the same file loaded again):
        only a value the file changed is the DM's newer word; reloading an unchanged file revives nothing."""
        if not can_contradict(rel.type, rel.value):
            return False
        # what would close the file's fact now (CONTRADICTED's rule), stated from either end or in other words
        same = f"""({weighed_target("relationships", "$2", "$3")} IS NOT DISTINCT FROM $4
                    AND value IS NOT DISTINCT FROM $5)"""
        current = f"(valid_to IS NULL AND NOT {same})"
        return bool(
            await self.db.fetchval(
                f"""
                SELECT bool_or(valid_to IS NOT NULL AND {same} AND {FILED})
                       AND bool_or({current}) AND NOT bool_or({current} AND {FILED})
                FROM relationships
                WHERE campaign_id = $1 AND status = 'accepted'
                  AND {weighs_against("relationships", "$2", "$3", "$4::bigint", "$6")}
                """,
                self.campaign_id,
                *contradicting(rel.type, rel.source_id, rel.target_id, rel.value),
            )
        )

    async def has_fact(self, rel: RelationshipIn) -> bool:
        """Whether the campaign has accepted ``rel`` (the same source, type, target or value), current or not."""
        return bool(
            await self.db.fetchval(
                """
                SELECT EXISTS (SELECT 1 FROM relationships WHERE campaign_id = $1 AND source_id = $2 AND type = $3
                  AND target_id IS NOT DISTINCT FROM $4 AND value IS NOT DISTINCT FROM $5 AND status = 'accepted')
                """,
                self.campaign_id,
                rel.source_id,
                rel.type,
                rel.target_id,
                rel.value,
            )
        )

    async def set_relationship(self, rel_id: int, status: ReviewStatus, *, dm_confirmed: bool, **changes: Any) -> None:
        allowed = {"type", "target_id", "value", "visibility"}
        if set(changes) - allowed:
            raise InvalidInputError(f"cannot change {', '.join(sorted(set(changes) - allowed))} of a fact")
        sets = [f"{key} = ${i}" for i, key in enumerate(changes, start=5)]
        try:
            async with transaction(self.db) as conn:  # a savepoint: the refusal must not abort the caller's work
                await conn.execute(
                    f"""
                    UPDATE relationships SET status = $3,
                        provenance = provenance || jsonb_build_object('dm_confirmed', $4::boolean)
                        {"".join(", " + s for s in sets)}
                    WHERE campaign_id = $1 AND id = $2
                    """,
                    self.campaign_id,
                    rel_id,
                    status,
                    dm_confirmed,
                    *changes.values(),
                )
        except asyncpg.UniqueViolationError:
            raise AlreadyExistsError("that fact is already recorded; reject this one instead") from None

    async def link(
        self,
        source: str,
        relation: str,
        target: str | None = None,
        *,
        value: str | None = None,
        secret: bool | None = None,
    ) -> LinkResult:
        """Connect two entities (names or aliases) on the DM's word, or give ``source`` an attribute fact (``value``:
        status dead) as a campaign file does. Either closes the current fact it contradicts: a change in the world.
        ``secret`` None leaves an existing link's visibility alone: a DM who links again without thinking of it must
        not make a secret link public."""
        # the value is asked for by name: a mistyped target must not silently become one
        if target is not None and value is not None:
            raise InvalidInputError("give a target (another entity) or a value (a state, e.g. status dead), not both")
        if target is None and value is None:
            raise InvalidInputError("give a target (another entity) or a value (a state, e.g. status dead)")
        s = await self.get_entity(source)
        t = await self.find_entity(target) if target is not None else None
        if target is not None and t is None:
            raise NotFoundError(
                f"{await self._not_found_message(target)}; a state (status dead) is given as a value",
                subject="entity",
                name=target,
            )
        if t is not None and t.id == s.id:
            raise InvalidInputError(
                f"{target!r} is {s.name!r} itself: a relationship connects two entities (a state of its own is a "
                "value, e.g. status dead)"
            )
        if value is not None:
            value = fact_value(value)
        visibility = Visibility.secret if secret else Visibility.public
        rel, created = await self.ensure_relationship(
            RelationshipIn(
                source_id=s.id,
                type=relation,
                target_id=t.id if t is not None else None,
                value=value,
                visibility=visibility,
                provenance=Provenance(source=Source.dm, dm_confirmed=True),
                status=ReviewStatus.accepted,
            )
        )
        if created:
            return LinkResult(relationship=rel, outcome="linked", closed=await self.closed_by(rel.id))
        if secret is None or rel.visibility == visibility:
            return LinkResult(relationship=rel, outcome="already linked")
        await self.set_relationship(rel.id, ReviewStatus.accepted, dm_confirmed=True, visibility=visibility)
        # A secret fact does not end a public one for players: what this one had closed, they read again.
        closed = [r.id for r in await self.closed_by(rel.id)] if secret else []
        rows = await self.db.fetch(
            f"""{rel_select(False)} WHERE r.campaign_id = $1 AND r.id = ANY($2::bigint[]) AND {visible("r", False)}
              AND (t.id IS NULL OR {visible("t", False)})""",
            self.campaign_id,
            closed,
        )
        return LinkResult(
            relationship=await self.get_relationship(rel.id),
            outcome="made secret" if secret else "made public",
            players_read=[relationship_from_row(r) for r in rows],
        )

    async def unlink(self, source: str, type: str, target: str) -> UnlinkResult:
        """Reject the current relationship ``source —type→ target`` (names or aliases) or the attribute fact whose
        value ``target`` is, as ``describe`` writes both: a value accepted by mistake has no other way out. Like a
        fact rejected in review, it is not proposed again; its history and earlier rejections stay.

        Unlinking says the fact was wrong (an undo), not that it ended: a fact it had closed ("alive", closed by a
        mistaken "dead") is current again, unless another current fact contradicts it. A change in the world is
        recorded by adding the new fact (a link, a campaign file), which closes the old one."""
        async with transaction(self.db) as conn:
            graph = self.bound_to(conn)
            await graph.lock()  # no fact may be accepted between the check and the reopening
            return await graph._unlink(source, type, target)

    async def _unlink(self, source: str, type: str, target: str) -> UnlinkResult:
        s, t = await self.get_entity(source), await self.find_entity(target)
        rel_type = RelationshipIn(source_id=s.id, type=type).type
        rows = await self.db.fetch(
            """
            SELECT id, status, valid_to, superseded_by FROM relationships WHERE campaign_id = $1
              AND ((type = ANY($3::text[]) AND source_id = $2
                    AND (target_id = $4 OR (target_id IS NULL AND lower(value) = lower($5))))
                   -- the fact from the other end ("Vex has the Bow" of "the Bow owned_by Vex"; allied_with)
                   OR (type = ANY($6::text[]) AND source_id = $4 AND target_id = $2))
            ORDER BY id DESC
            """,
            self.campaign_id,
            s.id,
            [rel_type, *(stated := stated_as(rel_type))[0]],  # or in other words: "led_by" of "ruled_by"
            t.id if t is not None else None,
            target.strip(),
            stated[1],
        )
        if not rows and t is None:
            raise NotFoundError(
                f"{await self._not_found_message(target)}, and {s.name} has no {rel_type!r} fact of that value"
            )
        if not rows:
            raise NotFoundError(f"{s.name} has no {rel_type!r} relationship to {t.name if t else target}")
        # Only the current fact is undone, and what it closed in the same words ("dead" closed by "Dead"): history
        # (a "dead" since ended by "alive") is what was true then, and a fact rejected in review stays rejected.
        doomed: set[int] = set()
        for row in rows:  # newest first
            if row["status"] == "accepted" and (row["valid_to"] is None or row["superseded_by"] in doomed):
                doomed.add(row["id"])
        if not doomed:
            raise NotFoundError(
                f"{s.name} has no current {rel_type!r} fact of {t.name if t else target.strip()}: unlink undoes a "
                "current fact; what is history or was rejected stays"
            )
        removed: list[Relationship] = []
        reopened: list[int] = []
        for rel_id in sorted(doomed, reverse=True):
            removed.append(await self.get_relationship(rel_id))
            reopened += await self._remove_fact(rel_id, doomed)
        return UnlinkResult(removed=removed, reopened=[await self.get_relationship(i) for i in reopened])

    async def _remove_fact(self, rel_id: int, doomed: set[int]) -> list[int]:
        """Reject a fact as a mistake, as review does (never proposed again, in no history); returns the ids of the
        facts it had closed that are current again (none of ``doomed``, rejected too). One that stays closed (a later
        fact contradicts it too) is now superseded by what superseded the rejected one."""
        closed = await self.db.fetch(
            """
            UPDATE relationships o SET superseded_by = r.superseded_by FROM relationships r
            WHERE o.campaign_id = $1 AND o.superseded_by = $2 AND r.campaign_id = $1 AND r.id = $2
            RETURNING o.id, o.valid_from
            """,
            self.campaign_id,
            rel_id,
        )
        await self.set_relationship(rel_id, ReviewStatus.rejected, dm_confirmed=True)
        reopened: list[int] = []
        # newest first: once one is current again, it contradicts the older ones
        for row in sorted(closed, key=lambda r: (r["valid_from"], r["id"]), reverse=True):
            if row["id"] in doomed:
                continue
            # Another accepted current fact of its type and kind, stated from either end (the one rule of
            # ``weighs_against``), either contradicts it or is the same fact, and any current copy of it (pending
            # too) is one copy too many (migration 0004).
            opened = await self.db.fetchval(
                f"""
                UPDATE relationships o SET valid_to = NULL, superseded_by = NULL
                WHERE o.campaign_id = $1 AND o.id = $2 AND o.status = 'accepted' AND o.valid_to IS NOT NULL
                  AND NOT EXISTS (
                    SELECT 1 FROM relationships c
                    WHERE c.campaign_id = $1 AND c.valid_to IS NULL AND c.id <> o.id
                      AND ((c.status = 'accepted' AND {weighs_against("c", *one_way_of("o"))})
                           OR (c.status <> 'rejected' AND c.source_id = o.source_id AND c.type = o.type
                               AND c.target_id IS NOT DISTINCT FROM o.target_id
                               AND c.value IS NOT DISTINCT FROM o.value))
                  )
                RETURNING o.id
                """,
                self.campaign_id,
                row["id"],
            )
            if opened is not None:
                reopened.append(opened)
        return reopened
