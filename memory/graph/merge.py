"""Merging one entity into another: the DM's answer to one NPC recorded twice."""

from __future__ import annotations

from dataclasses import dataclass, field

import asyncpg

from memory.db import transaction
from memory.graph.entities import Entities
from memory.graph.facts import Facts
from memory.graph.rules import (
    FactCopy,
    MergePlan,
    can_contradict,
    copy_rank,
    hidden_by_merge,
    merge_drops,
    new_never_heard_as,
    plan_merge,
)
from memory.graph.took_part import link_to_recaps
from memory.jobs.queue import enqueue_restoration
from memory.models import (
    Entity,
    EntityType,
    MergeResult,
    ReviewStatus,
    Visibility,
)


class Merging(Entities, Facts):
    """Merging two entities into one."""

    async def merge_entities(self, source: str | int, into: str | int, *, preview: bool = False) -> MergeResult:
        """Make ``source`` (a name or alias) part of ``into``: the DM's answer to one NPC recorded twice ("Gorrim"
        and "Gorrim Ashfoot"). Every fact of ``source`` moves to ``into`` with its status (a pending one stays in
        the review queue), visibility, provenance and validity; a fact ``into`` has already keeps one copy, the
        better one as migration 0004 chose (the other's provenance under "merged"), and a fact between the two is
        dropped. ``source``'s name and aliases become aliases of ``into``, its description and attributes fill
        what ``into`` lacks (a description ``into`` has stays; the result says what was dropped), its mentions
        (chunks, corrections) become ``into``'s, and ``source`` is deleted.

        A secret ``source`` merged into a public ``into`` gives it none of its names, description or attributes
        (players would read them) and its facts become secret. ``into`` is accepted if either was: the DM
        vouched for the accepted one, and merging is the DM's word that the pending one is the same. Merged into a
        secret ``into``, ``source``'s name (and a proposal's aliases) stays hidden from players while ``into`` is
        secret: aliases are what players know a secret entity by, and they did not know it by those. A merge that
        would give ``into`` more aliases or heard-as phrases than their caps is refused before anything changes.
        Either may be its id.

        A fact of one that contradicts the other's ("dead" and "alive") settles as any new fact does: the newer
        stands, the older is history, and the result names it (``ended``). ``preview``: what the merge would do,
        for the DM to confirm, and nothing changed."""
        try:
            async with transaction(self.db) as conn:
                graph = self.bound_to(conn)
                await graph.lock()
                merged = await graph._merge_entities(source, into)
                # ``into`` may be accepted only now, or have names of a proposal's now: the recapped sessions they
                # name
                await link_to_recaps(graph, [merged.entity.id])
                if preview:
                    raise _Previewed(merged)  # rolls the merge back
                return merged
        except _Previewed as previewed:
            return previewed.result

    async def _merge_entities(self, source: str | int, into: str | int) -> MergeResult:
        s, t = await self._entity(source), await self._entity(into)
        plan = plan_merge(s, t, source, into)
        counts = await self._move_facts(s, t, plan.hide)
        if t.status == ReviewStatus.pending and s.status == ReviewStatus.accepted:
            await self.set_entity_status(t.id, ReviewStatus.accepted, dm_confirmed=True)
        await self.db.execute(
            """
            UPDATE entities SET description = CASE WHEN description = '' THEN $3 ELSE description END,
                attributes = $4::jsonb || attributes, updated_at = now()
            WHERE campaign_id = $1 AND id = $2
            """,
            self.campaign_id,
            t.id,
            "" if plan.hide else s.description,
            {} if plan.hide else s.attributes,
        )
        if t.type == EntityType.event and (
            told := [i for i in s.provenance.entry_ids if i not in t.provenance.entry_ids]
        ):
            # an event is told, not named: the lines ``source`` was told in stay ``into``'s mentions (index_told),
            # which a line read again keeps only for the event whose provenance holds it
            await self.db.execute(
                "UPDATE entities SET provenance = jsonb_set(provenance, '{entry_ids}', $3::jsonb) "
                "WHERE campaign_id = $1 AND id = $2",
                self.campaign_id,
                t.id,
                [*t.provenance.entry_ids, *told],
            )
        await self._move_mentions(s.id, t.id)
        await self._move_phrases(s.id, t.id)
        await self.db.execute(  # the tools' records it was imported from are ``into`` now: a re-import finds it
            "UPDATE entity_source_ids SET entity_id = $3 WHERE campaign_id = $1 AND entity_id = $2",
            self.campaign_id,
            s.id,
            t.id,
        )
        await self.db.execute(
            "DELETE FROM review_posted WHERE campaign_id = $1 AND kind = 'entity' AND item_id = $2",
            self.campaign_id,
            s.id,
        )
        hidden = await self._mask_merged(s, t, plan)
        await self.db.execute("DELETE FROM entities WHERE campaign_id = $1 AND id = $2", self.campaign_id, s.id)
        if not plan.hide and plan.names:
            await self.db.executemany(
                "INSERT INTO entity_aliases (campaign_id, entity_id, alias) VALUES ($1, $2, $3)",
                [(self.campaign_id, t.id, n) for n in plan.names],
            )
        await self._check_not_heard_as(t.id)  # ``source``'s names may be what ``into`` is never heard as
        # lines may say them as ``into``'s name now: those corrected to ``into`` say ``source``'s phrases, and those
        # corrected to ``source`` (moved to ``into`` above) ``into``'s
        if new_never := new_never_heard_as(s, t):
            await enqueue_restoration(self.db, self.campaign_id, t.id, new_never, any_stage=True)
        description_dropped, attributes_dropped = merge_drops(s, t, plan.hide)
        return MergeResult(
            entity=await self.get_entity_by_id(t.id),
            merged=s,
            facts_moved=counts.moved,
            duplicates_dropped=counts.dropped,
            self_loops_dropped=counts.loops,
            facts_made_secret=counts.made_secret,
            ended=[await self.get_relationship(i) for i in counts.ended],
            aliases_added=[] if plan.hide else plan.names,
            aliases_hidden=hidden,
            names_withheld=plan.names if plan.hide else [],
            description_dropped=description_dropped,
            attributes_dropped=attributes_dropped,
        )

    async def _move_facts(self, s: Entity, t: Entity, hide: bool) -> _Moved:
        """Every fact of ``s`` made ``t``'s: one between the two dropped, one ``t`` has already kept once (the
        better copy), each made secret if ``hide``."""
        counts = _Moved()
        rows = await self.db.fetch(
            """
            SELECT id, source_id, target_id, type, value, status, visibility, provenance, valid_from, valid_to
            FROM relationships WHERE campaign_id = $1 AND (source_id = $2 OR target_id = $2) ORDER BY id
            """,
            self.campaign_id,
            s.id,
        )
        for row in rows:
            src = t.id if row["source_id"] == s.id else row["source_id"]
            dst = t.id if row["target_id"] == s.id else row["target_id"]
            if src == dst:
                await self.db.execute(
                    "DELETE FROM relationships WHERE campaign_id = $1 AND id = $2", self.campaign_id, row["id"]
                )
                counts.loops += 1
                continue
            secret = hide and row["visibility"] == Visibility.public
            counts.made_secret += secret
            copy = await self._copy_in_into(row, src, dst)
            keep = row if copy is None else await self._fold_copies(row, copy, secret)
            counts.dropped += copy is not None
            counts.moved += copy is None
            if keep is row:
                counts.ended += await self._move_fact(row, src, dst, secret)
        return counts

    async def _copy_in_into(self, row: asyncpg.Record, src: int, dst: int | None) -> asyncpg.Record | None:
        """The current copy of the fact ``row`` would be once moved to ``src`` → ``dst``, if one is stored."""
        if row["valid_to"] is not None or row["status"] == ReviewStatus.rejected:
            return None
        return await self.db.fetchrow(
            """
            SELECT id, status, visibility, provenance, valid_from FROM relationships
            WHERE campaign_id = $1 AND source_id = $2 AND type = $3 AND target_id IS NOT DISTINCT FROM $4
              AND value IS NOT DISTINCT FROM $5 AND valid_to IS NULL AND status <> 'rejected'
            """,
            self.campaign_id,
            src,
            row["type"],
            dst,
            row["value"],
        )

    async def _fold_copies(self, row: asyncpg.Record, copy: asyncpg.Record, secret: bool) -> asyncpg.Record:
        """Keep the better of two copies of one fact (:func:`copy_rank`), the other's provenance under "merged";
        returns the one kept."""
        keep, drop = sorted((row, copy), key=lambda r: copy_rank(FactCopy(**{k: r[k] for k in FactCopy.model_fields})))
        await self.db.execute(
            "DELETE FROM relationships WHERE campaign_id = $1 AND id = $2", self.campaign_id, drop["id"]
        )
        await self.db.execute(
            "UPDATE relationships SET superseded_by = $3 WHERE campaign_id = $1 AND superseded_by = $2",
            self.campaign_id,
            drop["id"],
            keep["id"],
        )
        folded = {**drop["provenance"], "id": drop["id"], "status": drop["status"]}
        merged = [*keep["provenance"].get("merged", []), folded]
        await self.db.execute(
            """
            UPDATE relationships SET provenance = provenance || jsonb_build_object('merged', $3::jsonb),
                visibility = CASE WHEN $4 THEN 'secret' ELSE visibility END
            WHERE campaign_id = $1 AND id = $2
            """,
            self.campaign_id,
            keep["id"],
            merged,
            secret or drop["visibility"] == Visibility.secret,
        )
        return keep

    async def _move_fact(self, row: asyncpg.Record, src: int, dst: int | None, secret: bool) -> list[int]:
        """Move a fact to ``src`` → ``dst``; returns the ids of the facts it ends or that end it (history now)."""
        await self.db.execute(
            """
            UPDATE relationships SET source_id = $3, target_id = $4,
                visibility = CASE WHEN $5 THEN 'secret' ELSE visibility END
            WHERE campaign_id = $1 AND id = $2
            """,
            self.campaign_id,
            row["id"],
            src,
            dst,
            secret,
        )
        # "lives_in" of each: one stays current (only a value or a single-valued edge contradicts: the rest would be
        # a query each for nothing, thousands for a busy entity)
        current = row["status"] == ReviewStatus.accepted and row["valid_to"] is None
        if current and can_contradict(row["type"], row["value"]):
            return await self.close_contradicted(row["id"])
        return []

    async def _move_mentions(self, source_id: int, into_id: int) -> None:
        """Where ``source`` was said becomes where ``into`` was: chunks found by entity, the mention index, the
        corrections that named it."""
        await self.db.execute(
            """
            UPDATE chunks SET entity_ids = ARRAY(
                SELECT i FROM unnest(array_replace(entity_ids, $2, $3)) WITH ORDINALITY u(i, n)
                GROUP BY i ORDER BY min(n)
            )
            WHERE campaign_id = $1 AND entity_ids @> ARRAY[$2::bigint]
            """,
            self.campaign_id,
            source_id,
            into_id,
        )
        await self.db.execute(  # the mention index (memory.mentions): the folded copy's rows go with it
            """
            INSERT INTO entity_mentions (campaign_id, entity_id, entry_id, session_id)
            SELECT campaign_id, $3, entry_id, session_id FROM entity_mentions WHERE campaign_id = $1 AND entity_id = $2
            ON CONFLICT DO NOTHING
            """,
            self.campaign_id,
            source_id,
            into_id,
        )
        await self.db.execute(
            """
            UPDATE session_entries SET corrections = (
                SELECT jsonb_agg(CASE WHEN c ->> 'entity_id' = $2::text
                                      THEN jsonb_set(c, '{entity_id}', to_jsonb($3::bigint)) ELSE c END ORDER BY n)
                FROM jsonb_array_elements(corrections) WITH ORDINALITY x(c, n)
            )
            WHERE campaign_id = $1 AND corrections <> '[]'::jsonb  -- the index holds only corrected lines
              AND corrections @> jsonb_build_array(jsonb_build_object('entity_id', $2::bigint))
            """,
            self.campaign_id,
            source_id,
            into_id,
        )

    async def _move_phrases(self, source_id: int, into_id: int) -> None:
        """What the recogniser writes for ``source``'s name is now said of ``into``, and what it writes that is never
        the name (each phrase once)."""
        await self.db.execute(
            "UPDATE entity_heard_as SET entity_id = $3 WHERE campaign_id = $1 AND entity_id = $2",
            self.campaign_id,
            source_id,
            into_id,
        )
        await self.db.execute(
            """
            UPDATE entity_not_heard_as n SET entity_id = $3 WHERE campaign_id = $1 AND entity_id = $2
              AND NOT EXISTS (SELECT 1 FROM entity_not_heard_as m
                              WHERE m.entity_id = $3 AND lower(m.phrase) = lower(n.phrase))
            """,
            self.campaign_id,
            source_id,
            into_id,
        )

    async def _mask_merged(self, s: Entity, t: Entity, plan: MergePlan) -> list[str]:
        """Keep from players the names of ``s`` they must not read (see :func:`hidden_by_merge`); returns those
        hidden while ``t`` stays secret."""
        if plan.hide:  # what was said of it still says its name: no alias of ``into``, it stays hidden for good
            await self._keep_masked_for_good(s)
            return []
        if t.visibility != Visibility.secret:
            return []
        hidden = hidden_by_merge(s, t, plan.names)
        await self.db.execute(
            "UPDATE masked_names SET entity_id = $3 WHERE campaign_id = $1 AND entity_id = $2",
            self.campaign_id,
            s.id,
            t.id,
        )
        await self._keep_masked(t.id, hidden)
        return hidden


@dataclass
class _Moved:
    """What :meth:`Merging._move_facts` did, counted."""

    moved: int = 0
    dropped: int = 0
    loops: int = 0
    made_secret: int = 0
    ended: list[int] = field(default_factory=list)  # current facts of either the merge made history


class _Previewed(Exception):
    """Raised to roll back a merge asked only to be previewed, with what it would have done."""

    def __init__(self, result: MergeResult) -> None:
        super().__init__("a merge previewed")
        self.result = result
