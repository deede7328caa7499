"""The DM's review queue: entities and facts the bot was unsure of, oldest first, accepted/edited/rejected, or
(a proposed entity) merged into the known one it is.

Only the DM decides here; nothing said at the table can move an item out of the queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import asyncpg

from memory.db import transaction
from memory.errors import AlreadyDecidedError, InvalidInputError, NotFoundError
from memory.graph import KnowledgeGraph
from memory.graph.took_part import link_to_recaps
from memory.models import (
    EntityType,
    Mention,
    MergeResult,
    ReviewItem,
    ReviewKind,
    ReviewStatus,
    Visibility,
    relationship_type,
    suggest_entity_type,
)
from memory.offgame import DM_NAMES
from memory.text import fact_value

_REF = re.compile(r"^\s*([ef])(\d+)\s*$", re.IGNORECASE)


def parse_ref(ref: str) -> tuple[ReviewKind, int]:
    """``e12`` → (entity, 12); ``f34`` → (fact, 34)."""
    m = _REF.match(ref)
    if not m:
        raise InvalidInputError(f"{ref!r} is not a review item id (they look like e12 or f34)")
    kind, number = (ReviewKind.entity if m.group(1).lower() == "e" else ReviewKind.fact), int(m.group(2))
    if number >= 2**63:  # no row has such an id; the database would refuse the number itself
        raise NotFoundError(f"no review item {ref.strip()} in this campaign", subject="review item")
    return kind, number


def said_names(item: ReviewItem) -> list[str]:
    """What the line says of the item, to show its part that says it: the clause telling its event, else the entity's
    names, else the fact's two ends."""
    if item.said is not None and item.said.told:
        return [item.said.told]
    if item.entity is not None:
        return [item.entity.name, *item.entity.aliases]
    assert item.fact is not None
    return [name for name in (item.fact.source_name, item.fact.target_name or item.fact.value) if name]


def quoted_above(items: Sequence[ReviewItem]) -> list[ReviewItem | None]:
    """For each of ``items`` (as listed, one after another), the earlier one quoting the same line, else None: an
    entity and the fact about it are often read from one line, a narrator's paragraph, shown once."""
    first: dict[int, ReviewItem] = {}
    above: list[ReviewItem | None] = []
    for item in items:
        key = item.said.entry_id if item.said is not None else None  # by id: "Roll initiative." twice is two lines
        above.append(first.get(key) if key is not None else None)
        if key is not None:
            first.setdefault(key, item)
    return above


#: Where the database says a campaign filed new items for review (migrations/0005), its id as payload.
NEW_ITEMS_CHANNEL = "lorekeeper_review"


async def watch_new_items(
    pool: asyncpg.Pool, on_new: Callable[[int], None], on_listening: Callable[[], None] | None = None
) -> None:
    """Call ``on_new(campaign_id)`` whenever a campaign files new review items, until cancelled, until the
    listening connection is lost (the caller may listen again) or until the pool closes; ``on_listening`` once
    listening (to catch up on what came before). Holds one pooled connection, and gives it back within a second
    of the pool starting to close (which waits for it)."""
    lost = asyncio.Event()

    def notified(_conn: object, _pid: int, _channel: str, payload: str) -> None:
        if payload.isdigit():
            on_new(int(payload))

    def terminated(_conn: object) -> None:
        lost.set()

    async with pool.acquire() as conn:
        conn.add_termination_listener(terminated)
        await conn.add_listener(NEW_ITEMS_CHANNEL, notified)
        if on_listening is not None:
            on_listening()
        try:
            while not (lost.is_set() or pool.is_closing()):
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(1.0):
                        await lost.wait()
        finally:
            # the connection goes back to the pool as it came
            conn.remove_termination_listener(terminated)
            with contextlib.suppress(asyncpg.PostgresError, asyncpg.InterfaceError, OSError):
                await conn.remove_listener(NEW_ITEMS_CHANNEL, notified)


class ReviewQueue:
    def __init__(self, graph: KnowledgeGraph) -> None:
        self.graph = graph
        # the campaign's names as the extractor reads them, kept while they stay the same: a page of the queue
        # shows up to 25 items, each may ask which of its lines tells its event
        self._names: tuple[tuple[Any, ...], Any] | None = None

    async def pending(self, *, limit: int = 25, offset: int = 0, unposted: bool = False) -> list[ReviewItem]:
        """Pending entities and facts, oldest first; ``unposted``: only those not yet posted to the review channel
        (see ``mark_posted``), however old: a long transaction may file items older than ones already posted."""
        g = self.graph
        rows = await g.db.fetch(
            """
            SELECT kind, id, created_at FROM (
                SELECT 'entity' AS kind, id, created_at FROM entities WHERE campaign_id = $1 AND status = 'pending'
                UNION ALL
                SELECT 'fact', id, created_at FROM relationships WHERE campaign_id = $1 AND status = 'pending'
            ) q
            WHERE NOT $4 OR NOT EXISTS (
                SELECT 1 FROM review_posted p WHERE p.campaign_id = $1 AND p.kind = q.kind AND p.item_id = q.id
            )
            ORDER BY created_at, kind, id LIMIT $2 OFFSET $3
            """,
            g.campaign_id,
            limit,
            offset,
            unposted,
        )
        return [await self._item(ReviewKind(r["kind"]), r["id"]) for r in rows]

    async def mark_posted(self, item: ReviewItem) -> None:
        """Remember that ``item`` is on the review channel, so it is not posted again."""
        await self.graph.db.execute(
            "INSERT INTO review_posted (campaign_id, kind, item_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            self.graph.campaign_id,
            item.kind.value,
            item.id,
        )

    async def count(self) -> int:
        return await self.graph.db.fetchval(
            """
            SELECT (SELECT count(*) FROM entities WHERE campaign_id = $1 AND status = 'pending')
                 + (SELECT count(*) FROM relationships WHERE campaign_id = $1 AND status = 'pending')
            """,
            self.graph.campaign_id,
        )

    async def get(self, ref: str) -> ReviewItem:
        try:
            return await self._item(*parse_ref(ref))
        except NotFoundError:
            raise NotFoundError(
                f"no review item {ref.strip()} in this campaign", subject="review item", name=ref.strip()
            ) from None

    async def _item(self, kind: ReviewKind, item_id: int) -> ReviewItem:
        if kind == ReviewKind.entity:
            entity = await self.graph.get_entity_by_id(item_id)
            ids = entity.provenance.entry_ids
            said = await self.said(ids, about=[entity.id])
            return ReviewItem(
                kind=kind, id=item_id, created_at=entity.created_at, entity=entity, said=said, lines=len(set(ids))
            )
        fact = await self.graph.get_relationship(item_id)
        ids = fact.provenance.entry_ids
        said = await self.said(ids, about=[i for i in (fact.source_id, fact.target_id) if i is not None])
        return ReviewItem(kind=kind, id=item_id, created_at=fact.created_at, fact=fact, said=said, lines=len(set(ids)))

    async def said(self, entry_ids: list[int], *, about: Sequence[int] = ()) -> Mention | None:
        """The best of the lines an item was drawn from: the DM's (who ran the session, or a speaker the transcript
        calls DM or GM), whose word is the world's; of those, the one that tells the turning point the item is about
        (``about``: its entities, an event among them; :func:`memory.extraction.rules.telling_line`), else the first;
        with the clause of it telling that turning point, to show the DM that part of a long line.
        Also for the card of what an item became."""
        if not entry_ids:
            return None
        rows = await self._said_rows(entry_ids)
        if not rows:
            return None
        best = [r for r in rows if r["by_dm"] == rows[0]["by_dm"]]
        n, told = await self._telling(about, [r["text"] for r in best]) if about else (0, None)
        return Mention(**{k: v for k, v in best[n].items() if k != "by_dm"}, told=told)

    async def said_each(self, entry_ids: Mapping[int, Sequence[int]]) -> dict[int, Mention]:
        """:meth:`said` (with no ``about``) of each of several items, by key, in one query: a busy character's
        facts read one query each were 2,000 round trips. An item none of whose lines is kept is left out."""
        rows = await self._said_rows(sorted({i for ids in entry_ids.values() for i in ids}))
        rank = {r["entry_id"]: n for n, r in enumerate(rows)}  # the rows come best first
        said: dict[int, Mention] = {}
        for key, ids in entry_ids.items():
            if kept := [rank[i] for i in ids if i in rank]:  # an item's best line: the first of its own
                said[key] = Mention(**{k: v for k, v in rows[min(kept)].items() if k != "by_dm"})
        return said

    async def _said_rows(self, entry_ids: Sequence[int]) -> list[asyncpg.Record]:
        """The lines ``entry_ids``, the DM's first, then in the order they were said."""
        return await self.graph.db.fetch(
            """
            SELECT se.id AS entry_id, se.session_id, s.title, s.started_at, se.speaker, se.start_s, se.text, se.ref,
                   (se.speaker_id = s.dm_speaker_id
                    OR upper(btrim(se.speaker)) = ANY($3::text[])) IS TRUE AS by_dm
            FROM session_entries se JOIN sessions s ON s.campaign_id = se.campaign_id AND s.id = se.session_id
            WHERE se.campaign_id = $1 AND se.id = ANY($2::bigint[])
            ORDER BY by_dm DESC, s.started_at, se.session_id, se.seq
            """,
            self.graph.campaign_id,
            list(entry_ids),
            sorted(DM_NAMES),  # the labels transcripts give the DM, "Keeper" and "Narrator" too
        )

    async def _telling(self, about: Sequence[int], lines: list[str]) -> tuple[int, str | None]:
        """Which of ``lines`` tells the turning point of the events among ``about`` (0 when none is an event), and
        the clause of it that tells it (None when none does)."""
        g = self.graph
        named = await g.db.fetch(
            "SELECT name FROM entities WHERE campaign_id = $1 AND id = ANY($2::bigint[]) AND type = 'event'",
            g.campaign_id,
            list(about),
        )
        if not named:
            return 0, None
        # the write path's rules and name matching: a queue without such items loads none of them
        from memory.extraction.rules import telling_clause, telling_line
        from memory.extraction.schema import KnownEntity
        from memory.gazetteer import of_mentions

        entities = await g.list_entities(status=None)
        known = [
            KnownEntity(id=e.id, name=e.name, type=e.type, aliases=e.aliases)
            for e in entities
            if e.status != ReviewStatus.rejected
        ]
        key = tuple((k.id, k.name, k.type, tuple(k.aliases)) for k in known)
        if self._names is None or self._names[0] != key:
            # 0.7 s for 20,000 entities: in a thread, once while the names stay the same
            self._names = key, await asyncio.to_thread(of_mentions, known)
        gazetteer = self._names[1]
        names = [r["name"] for r in named]
        n = await asyncio.to_thread(telling_line, names, lines, gazetteer) if len(lines) > 1 else 0
        return n, await asyncio.to_thread(telling_clause, names, lines[n], gazetteer)

    async def _status(self, item: ReviewItem) -> ReviewStatus:
        return item.entity.status if item.entity else item.fact.status  # type: ignore[union-attr]

    async def _pending_item(self, ref: str) -> ReviewItem:
        # One decision of a campaign's at a time, each seeing the last one committed: a double click, or the DM
        # in Discord and at the command line, must not accept and reject the same item. Taken before any write.
        await self.graph.lock()
        item = await self.get(ref)
        status = await self._status(item)
        if status != ReviewStatus.pending:
            # review decides once; an accepted fact found wrong is corrected in the graph, which the DM must be told
            correctable = status == ReviewStatus.accepted and item.fact is not None
            raise AlreadyDecidedError(item.ref, status.value, item.describe(), correctable=correctable)
        return item

    async def accept(self, ref: str) -> ReviewItem:
        async with transaction(self.graph.db) as conn:  # all of the decision or none of it
            return await ReviewQueue(self.graph.bound_to(conn))._accept(ref)

    async def _accept(self, ref: str) -> ReviewItem:
        """Accept an item as canon. A fact's pending endpoints are accepted with it (the DM vouched for them);
        an accepted fact closes the accepted facts it contradicts."""
        g = self.graph
        item = await self._pending_item(ref)
        if item.entity is not None:
            await g.set_entity_status(item.id, ReviewStatus.accepted, dm_confirmed=True)
            await link_to_recaps(g, [item.id])  # the sessions recapped while it waited
        else:
            fact = item.fact
            assert fact is not None
            along: list[ReviewItem] = []
            for entity_id in (fact.source_id, fact.target_id):
                if entity_id is not None:
                    e = await g.get_entity_by_id(entity_id)
                    if e.status == ReviewStatus.rejected:
                        raise InvalidInputError(f"{e.name!r} was rejected; edit the fact or reject it")
                    if e.status == ReviewStatus.pending:
                        await g.set_entity_status(entity_id, ReviewStatus.accepted, dm_confirmed=True)
                        await link_to_recaps(g, [entity_id])
                        along.append(await self._item(ReviewKind.entity, entity_id))
            await g.set_relationship(item.id, ReviewStatus.accepted, dm_confirmed=True)
            closed = await g.close_contradicted(item.id)
            decided = await self._item(item.kind, item.id)
            decided.decided_with = [f"{e.ref}: {e.describe()}" for e in along]
            if item.id in closed:  # said in an older session than a fact accepted since
                assert decided.fact is not None and decided.fact.superseded_by is not None
                decided.outdated_by = await g.get_relationship(decided.fact.superseded_by)
            else:
                decided.closed = [await g.get_relationship(i) for i in closed]
            return decided
        return await self._item(item.kind, item.id)

    async def reject(self, ref: str) -> ReviewItem:
        async with transaction(self.graph.db) as conn:  # all of the decision or none of it
            return await ReviewQueue(self.graph.bound_to(conn))._reject(ref)

    async def _reject(self, ref: str) -> ReviewItem:
        """Reject an item; it stays on record (so it is not proposed again) but is never shown as canon.
        Rejecting an entity rejects the pending facts that depend on it."""
        g = self.graph
        item = await self._pending_item(ref)
        along: list[int] = []
        if item.entity is not None:
            await g.set_entity_status(item.id, ReviewStatus.rejected, dm_confirmed=True)
            rows = await g.db.fetch(
                """
                UPDATE relationships SET status = 'rejected' WHERE campaign_id = $1 AND status = 'pending'
                  AND (source_id = $2 OR target_id = $2)
                RETURNING id
                """,
                g.campaign_id,
                item.id,
            )
            along = sorted(r["id"] for r in rows)
        else:
            await g.set_relationship(item.id, ReviewStatus.rejected, dm_confirmed=True)
        decided = await self._item(item.kind, item.id)
        rejected = [await g.get_relationship(i) for i in along]
        with_it = [ReviewItem(kind=ReviewKind.fact, id=f.id, created_at=f.created_at, fact=f) for f in rejected]
        decided.decided_with = [f"{e.ref}: {e.describe()}" for e in with_it]  # as accepting names its items
        return decided

    async def same_as(self, ref: str, existing: str) -> MergeResult:
        async with transaction(self.graph.db) as conn:  # all of the decision or none of it
            return await ReviewQueue(self.graph.bound_to(conn))._same_as(ref, existing)

    async def _same_as(self, ref: str, existing: str) -> MergeResult:
        """The DM's word that a proposed entity is one already known under another name ("the old man" is
        Vaskerrin Holt): it is merged into ``existing`` (a name or alias), its name kept as an alias and its facts
        moved (those pending stay in review), and it leaves the queue."""
        kind, _ = parse_ref(ref)
        if kind != ReviewKind.entity:
            raise InvalidInputError(
                f"{ref.strip()} is a fact: only a proposed entity can be the same as a known one; accept, edit or "
                "reject the fact"
            )
        g = self.graph
        item = await self._pending_item(ref)
        assert item.entity is not None
        known = await g.get_entity(existing, secret_hints=True)  # the review queue is the DM's
        if known.id == item.id:
            raise InvalidInputError(f"{existing!r} is {item.ref} itself: name the known entity it is the same as")
        if known.status == ReviewStatus.pending:
            raise InvalidInputError(
                f"{known.name!r} is waiting for review too (e{known.id}): accept it first, then say {item.ref} "
                "is the same as it"
            )
        if (item.entity.type == EntityType.event) != (known.type == EntityType.event):
            # a happening is never a person, place or thing: "Arrival at The Alcove" is not The Alcove, and merged
            # the place would answer to the event's name. The DM who means it says so by changing the type first.
            proposed, to = item.entity, known.type.value
            raise InvalidInputError(
                f"{item.ref} {proposed.name!r} is {_a(proposed.type.value)} and {known.name!r} {_a(to)}: an event "
                f"is only ever the same as another event. Accept or reject {item.ref}; if it is {known.name} after "
                f"all, give it that type first (Edit, or `lorekeeper review edit {item.ref} --type {to}`), then "
                f"merge the two (/entity merge, or `lorekeeper entity merge "
                f"{shlex.quote(proposed.name)} {shlex.quote(known.name)}`)"
            )
        return await g.merge_entities(item.entity.name, known.name)

    async def edit(self, ref: str, **changes: Any) -> ReviewItem:
        async with transaction(self.graph.db) as conn:  # all of the decision or none of it
            return await ReviewQueue(self.graph.bound_to(conn))._edit(ref, **changes)

    async def _edit(self, ref: str, **changes: Any) -> ReviewItem:
        """Correct an item and accept it. Entities: name, type, description, aliases, visibility.
        Facts: type, target (an entity name), value, visibility."""
        g = self.graph
        item = await self._pending_item(ref)
        if item.entity is not None:
            allowed = {"name", "type", "description", "aliases", "visibility"}
            _check_fields(changes, allowed)
            await g.update_entity(
                item.entity.name,
                new_name=changes.get("name") or None,
                type=_entity_type(str(changes["type"])) if changes.get("type") else None,
                description=changes.get("description"),
                aliases=changes.get("aliases"),
                visibility=Visibility(changes["visibility"]) if changes.get("visibility") else None,
            )
        else:
            _check_fields(changes, {"type", "target", "value", "visibility"})
            update: dict[str, Any] = {}
            # the rules a fact is added by: a control character typed here would make the export fail
            if changes.get("type"):
                update["type"] = _checked("type", relationship_type, str(changes["type"]))
            if changes.get("target"):
                update["target_id"] = (await g.get_entity(changes["target"], secret_hints=True)).id
                update["value"] = None
            elif changes.get("value"):
                update["value"] = fact_value(str(changes["value"]))
                update["target_id"] = None
            if changes.get("visibility"):
                update["visibility"] = Visibility(changes["visibility"])
            await g.set_relationship(item.id, ReviewStatus.pending, dm_confirmed=False, **update)
        return await self._accept(item.ref)


def _a(word: str) -> str:
    return f"{'an' if word[:1] in 'aeiou' or word == 'npc' else 'a'} {word}"  # "an npc": an en-pee-see


def _entity_type(text: str) -> EntityType:
    try:
        return EntityType(text.strip().casefold())
    except ValueError:
        kinds = ", ".join(t.value for t in EntityType)
        hint = f" (did you mean {meant!r}?)" if (meant := suggest_entity_type(text)) else ""
        raise InvalidInputError(f"{text!r} is not an entity type{hint}; use one of {kinds}") from None


def _checked(field: str, rule: Callable[[str], str], value: str) -> str:
    try:
        return rule(value)
    except ValueError as exc:
        raise InvalidInputError(f"{field} {exc}") from None


def _check_fields(changes: dict[str, Any], allowed: set[str]) -> None:
    unknown = set(changes) - allowed
    if unknown:
        raise InvalidInputError(
            f"cannot edit {', '.join(sorted(unknown))} here; editable: {', '.join(sorted(allowed))}"
        )
