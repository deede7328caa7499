"""Merging one entity into another: the DM's answer to one NPC recorded twice."""

from __future__ import annotations

from memory.db import transaction
from memory.errors import InvalidInputError
from memory.graph.entities import Entities
from memory.graph.facts import Facts
from memory.graph.rules import SINGLE_VALUED, copy_rank, removed_heard_as
from memory.graph.took_part import link_to_recaps
from memory.models import (
    MAX_ALIASES,
    MAX_HEARD_AS,
    MergeResult,
    ReviewStatus,
    Visibility,
)


class Merging(Entities, Facts):
    """Merging two entities into one."""

    async def merge_entities(self, source: str | int, into: str | int) -> MergeResult:
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
        Either may be its id."""
        async with transaction(self.db) as conn:
            graph = self.bound_to(conn)
            await graph.lock()
            merged = await graph._merge_entities(source, into)
            # ``into`` may be accepted only now, or have names of a proposal's now: the recapped sessions they name
            await link_to_recaps(graph, [merged.entity.id])
            return merged

    async def _merge_entities(self, source: str | int, into: str | int) -> MergeResult:
        s, t = await self._entity(source), await self._entity(into)
        if s.id == t.id:
            if str(source).strip().casefold() == str(into).strip().casefold():
                raise InvalidInputError(f"cannot merge {t.name!r} into itself: name two entities")
            raise InvalidInputError(f"{source!r} and {into!r} both name {t.name!r}: nothing to merge")
        hide = s.visibility == Visibility.secret and t.visibility == Visibility.public
        known = {n.casefold() for n in [t.name, *t.aliases]}
        names = list(dict.fromkeys(n for n in [s.name, *s.aliases] if n.casefold() not in known))
        if not hide and len(t.aliases) + len(names) > MAX_ALIASES:
            # refused before anything changes: over the cap, the merged entity could not even be renamed
            raise InvalidInputError(
                f"merged, {t.name} would have {len(t.aliases) + len(names)} aliases ({len(t.aliases)} of its own, "
                f"{len(names)} from {s.name}), more than the {MAX_ALIASES} allowed: edit the aliases of either down "
                "to the names the table uses, then merge again"
            )
        if (heard := len({h.casefold() for h in [*t.heard_as, *s.heard_as]})) > MAX_HEARD_AS:
            # as for aliases: the phrases move to ``into``, which could then not be edited but to drop some
            raise InvalidInputError(
                f"merged, {t.name} would have {heard} heard-as phrases ({len(t.heard_as)} of its own, "
                f"{len(s.heard_as)} from {s.name}), more than the {MAX_HEARD_AS} allowed: edit those of either down "
                "to what the recogniser writes, then merge again"
            )
        if (unheard := len({h.casefold() for h in [*t.not_heard_as, *s.not_heard_as]})) > MAX_HEARD_AS:
            raise InvalidInputError(
                f"merged, {t.name} would have {unheard} not-heard-as phrases ({len(t.not_heard_as)} of its own, "
                f"{len(s.not_heard_as)} from {s.name}), more than the {MAX_HEARD_AS} allowed: edit those of either "
                "down, then merge again"
            )
        moved = dropped = loops = made_secret = 0
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
                loops += 1
                continue
            secret = hide and row["visibility"] == Visibility.public
            made_secret += secret
            keep = row
            copy = None
            if row["valid_to"] is None and row["status"] != ReviewStatus.rejected:
                copy = await self.db.fetchrow(
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
            if copy is not None:
                keep, drop = sorted((row, copy), key=copy_rank)
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
                dropped += 1
            else:
                moved += 1
            if keep is row:
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
                # "lives_in" of each: one stays current (only a value or a single-valued edge contradicts: the
                # rest would be a query each for nothing, thousands for a busy entity)
                if (
                    row["status"] == ReviewStatus.accepted
                    and row["valid_to"] is None
                    and (row["value"] is not None or row["type"] in SINGLE_VALUED)
                ):
                    await self.close_contradicted(row["id"])
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
            "" if hide else s.description,
            {} if hide else s.attributes,
        )
        # Where it was said: chunks found by entity, the corrections that named it.
        await self.db.execute(
            """
            UPDATE chunks SET entity_ids = ARRAY(
                SELECT i FROM unnest(array_replace(entity_ids, $2, $3)) WITH ORDINALITY u(i, n)
                GROUP BY i ORDER BY min(n)
            )
            WHERE campaign_id = $1 AND entity_ids @> ARRAY[$2::bigint]
            """,
            self.campaign_id,
            s.id,
            t.id,
        )
        await self.db.execute(  # the mention index (memory.mentions): the folded copy's rows go with it
            """
            INSERT INTO entity_mentions (campaign_id, entity_id, entry_id, session_id)
            SELECT campaign_id, $3, entry_id, session_id FROM entity_mentions WHERE campaign_id = $1 AND entity_id = $2
            ON CONFLICT DO NOTHING
            """,
            self.campaign_id,
            s.id,
            t.id,
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
            s.id,
            t.id,
        )
        # what the recogniser writes for its name is now said of ``into``
        await self.db.execute(
            "UPDATE entity_heard_as SET entity_id = $3 WHERE campaign_id = $1 AND entity_id = $2",
            self.campaign_id,
            s.id,
            t.id,
        )
        # ... and what it writes that is never the name (each phrase once)
        await self.db.execute(
            """
            UPDATE entity_not_heard_as n SET entity_id = $3 WHERE campaign_id = $1 AND entity_id = $2
              AND NOT EXISTS (SELECT 1 FROM entity_not_heard_as m
                              WHERE m.entity_id = $3 AND lower(m.phrase) = lower(n.phrase))
            """,
            self.campaign_id,
            s.id,
            t.id,
        )
        await self.db.execute(
            "DELETE FROM review_posted WHERE campaign_id = $1 AND kind = 'entity' AND item_id = $2",
            self.campaign_id,
            s.id,
        )
        hidden: list[str] = []
        if hide:  # what was said of it still says its name: no alias of ``into``, it stays hidden for good
            await self._keep_masked(None, [s.name])
        elif t.visibility == Visibility.secret:
            # players read a secret entity's aliases, but not, while it stays secret, the name of one merged into it
            # (as if that one were made secret), nor a proposal's aliases, which they never read
            hidden = [n for n in names if n == s.name or s.status != ReviewStatus.accepted]
            await self.db.execute(
                "UPDATE masked_names SET entity_id = $3 WHERE campaign_id = $1 AND entity_id = $2",
                self.campaign_id,
                s.id,
                t.id,
            )
            await self._keep_masked(t.id, hidden)
        await self.db.execute("DELETE FROM entities WHERE campaign_id = $1 AND id = $2", self.campaign_id, s.id)
        if not hide and names:
            await self.db.executemany(
                "INSERT INTO entity_aliases (campaign_id, entity_id, alias) VALUES ($1, $2, $3)",
                [(self.campaign_id, t.id, n) for n in names],
            )
        await self._check_not_heard_as(t.id)  # ``source``'s names may be what ``into`` is never heard as
        # lines may say them as ``into``'s name now: those corrected to ``into`` say ``source``'s phrases, and those
        # corrected to ``source`` (moved to ``into`` above) ``into``'s
        if new_never := [
            *removed_heard_as(s.not_heard_as, t.not_heard_as),
            *removed_heard_as(t.not_heard_as, s.not_heard_as),
        ]:
            from memory.jobs import enqueue_restoration  # the jobs build on this module

            await enqueue_restoration(self.db, self.campaign_id, t.id, new_never, any_stage=True)
        return MergeResult(
            entity=await self.get_entity_by_id(t.id),
            merged=s,
            facts_moved=moved,
            duplicates_dropped=dropped,
            self_loops_dropped=loops,
            facts_made_secret=made_secret,
            aliases_added=[] if hide else names,
            aliases_hidden=hidden,
            names_withheld=names if hide else [],
            description_dropped=s.description
            if not hide and t.description and s.description.strip() != t.description.strip()
            else "",
            attributes_dropped={}
            if hide
            else {k: v for k, v in s.attributes.items() if k in t.attributes and t.attributes[k] != v},
        )
