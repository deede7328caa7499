"""Import batches: a world read from another tool waits, whole, for the DM to accept or reject it.

Nothing of a batch is in the graph before it is accepted. Staging tries the load on the campaign and rolls it back,
so a batch that could not load (a name another entity holds as an alias …) is refused then, naming the entry, and
the counts the DM sees are what accepting will do. An imported entity named like an existing one, by its name or
an alias, updates it: the import's description when it has one, its aliases and attributes added to those the
entity has; its type and who may see it stay as the DM set them, unless its record, its alone, was made private
(or shared again) in the tool since its last import. A record an import made an entity of before is found by its
tool's id first (``entity_source_ids``): renamed in the tool, it renames its entity.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel

from campaigns.imports import ImportedWorld, kanka
from campaigns.imports.common import NOTES_TYPE, World, notes_of, secret_text
from campaigns.load import LoadChange, LoadReport, Progress, apply_campaign_file
from campaigns.schema import RENAMES_FIRST, CampaignFile, EntitySpec, RelationshipSpec, name_key
from memory.errors import AlreadyDecidedError, InvalidInputError, NotFoundError
from memory.graph.rules import one_way
from memory.graph.sql import ENTITY_SELECT, entity_from_row
from memory.models import Entity, Visibility
from memory.store import CampaignMemory
from memory.text import clip, counted

log = logging.getLogger(__name__)

#: Entities and facts a batch's card shows by name before it says how many more there are.
SAMPLE = 5


class ImportBatch(BaseModel):
    id: int
    campaign_id: int
    format: str
    sources: list[str]
    entities: int
    relationships: int
    status: Literal["pending", "accepted", "rejected"]
    created_at: datetime
    decided_at: datetime | None
    world: ImportedWorld
    #: Names of entities the campaign had when the batch was staged (updates, not new entities).
    updates: list[str] = []
    #: An imported name that updates an entity of another name (by its alias) → that entity's name.
    updates_as: dict[str, str] = {}
    #: An imported name that renames an entity (its record renamed in the tool since) → that entity's old name.
    renames: dict[str, str] = {}
    #: Names of the entities it updates that its load leaves as they were (an unchanged export), as tried; None
    #: when not tried (a batch staged before this was kept).
    unchanged: list[str] | None = None
    #: An imported name (key) whose record's type is not the type its entity keeps → the entity's type.
    types: dict[str, str] = {}
    #: An imported name (key) whose entity players will see otherwise than the record says → what the card says.
    shown: dict[str, str] = {}
    #: How many of its facts are DM-only, as planned (GM notes a secret record gives a public entity among them);
    #: None for a batch staged before this was kept.
    secret_facts: int | None = None
    #: GM notes the campaign has that accepting ends or replaces, as tried when staged ("Vask: fact dm_notes: …").
    notes_changed: list[str] = []
    #: Relations the campaign has that accepting ends, deleted in the tool, as tried when staged.
    relations_ended: list[str] = []
    #: The batch accepted while this one waited, after which it was planned again (its counts are as of then).
    replanned_after: str | None = None
    #: The batch accepted while this one waited, when planning it again failed: its counts are from before.
    stale_after: str | None = None

    @property
    def ref(self) -> str:
        return f"b{self.id}"

    def card(self, sample: int = SAMPLE) -> str:
        """The batch as one card: where it came from, its counts and a sample, for the DM to decide on."""
        world = self.world
        new = self.entities - len(self.updates)
        same = {name_key(n) for n in self.unchanged or ()}
        # an unchanged export changes nothing: counted apart from updates, as accepting it counts them
        unchanged = sum(1 for name in self.updates if name_key(name) in same)
        counts = f"{new:,} new, {len(self.updates) - unchanged:,} updated"
        counts += f", {unchanged:,} unchanged" if unchanged else ""
        secret = self.secret_facts
        if secret is None:
            secret = sum(1 for r in world.relationships if r.secret)
        lines = [
            f"Import {self.ref} ({self.format}: {clip(', '.join(self.sources), 80)}), {self.status}",
            f"{counted(self.entities, 'entity', 'entities')} ({counts}), "
            f"{counted(self.relationships, 'fact')}, {secret:,} of them DM-only",
        ]
        # the entities it makes DM-only (an update keeps who may see it): what a DM checks before accepting
        updating = {name_key(u) for u in self.updates} | set(self.updates_as)
        hidden = sum(1 for e in world.entities if e.secret and name_key(e.name) not in updating)
        if hidden:
            lines.append(f"{counted(hidden, 'new entity', 'new entities')} DM-only: players will not see them")
        if self.status == "pending" and self.stale_after:
            lines.append(f"{self.stale_after} was accepted since: these counts are from before it")
        elif self.status == "pending" and self.replanned_after:
            lines.append(f"planned again after {self.replanned_after} was accepted, against the campaign as it is now")
        kinds: dict[str, int] = {}
        for e in world.entities:
            kind = self.types.get(name_key(e.name), e.type.value)  # an update keeps its entity's type
            kinds[kind] = kinds.get(kind, 0) + 1
        lines.append("by type: " + ", ".join(f"{n:,} {k}" for k, n in sorted(kinds.items(), key=lambda x: -x[1])))
        # the old name of an entity a record renames is no update: another record of that name is a new entity
        updated = {name_key(u) for u in self.updates} - {name_key(old) for old in self.renames.values()}
        for e in world.entities[:sample]:
            said = f": {clip(e.description.splitlines()[0], 60)}" if e.description else ""
            mark = f" ({self.shown[name_key(e.name)]})" if name_key(e.name) in self.shown else ""
            mark = mark or (" (DM-only)" if e.secret else "")
            update = ""
            if name_key(e.name) in updated:
                update = " (unchanged)" if name_key(e.name) in same else " (updates the entity of that name)"
            if (other := self.updates_as.get(name_key(e.name))) is not None:
                update = f" ({other}, unchanged)" if name_key(other) in same else f" (updates {other})"
            if (old := self.renames.get(name_key(e.name))) is not None:
                update = f" (renames {old})"
            kind = self.types.get(name_key(e.name), e.type.value)
            lines.append(f"- {e.name} ({kind}){mark}{update}{said}")
        if len(world.entities) > sample:
            lines.append(f"- and {len(world.entities) - sample:,} more entities")
        shown = [r for r in world.relationships if not r.type.startswith("dm_notes")][:sample]
        lines += [f"- {clip(r.describe(), 80)}" + (" (DM-only)" if r.secret else "") for r in shown]
        if self.notes_changed:
            lines.append("GM notes it ends or replaces (kept in their history):")
            lines += [f"- {clip(change, 100)}" for change in self.notes_changed[:sample]]
            if len(self.notes_changed) > sample:
                lines.append(f"- and {len(self.notes_changed) - sample:,} more")
        if self.relations_ended:
            lines.append("relations deleted in the tool, that it ends (kept in their history):")
            lines += [f"- {clip(change, 100)}" for change in self.relations_ended[:sample]]
            if len(self.relations_ended) > sample:
                lines.append(f"- and {len(self.relations_ended) - sample:,} more")
        for what, names in world.assumed.items():
            lines.append(f"assumed: {what}: {clip(', '.join(names), 120)}")
        if world.skipped:
            example = clip(_file_named(world.skipped[0]), 90)
            lines.append(f"left out: {counted(len(world.skipped), 'record')} (e.g. {example})")
        return "\n".join(lines)


@dataclass
class Resolved:
    """An import as a campaign file against what the campaign has now, and what it does to the entities it had."""

    file: CampaignFile
    #: Names of the entities it updates (as they were).
    updates: list[str]
    #: An imported name (key) that updates an entity of another name → that entity's name.
    updates_as: dict[str, str]
    #: An imported name (key) that renames an entity, its record renamed in the tool since → its old name.
    renames: dict[str, str]
    #: An imported name (key) whose record's type is not the one its entity keeps → the entity's type.
    types: dict[str, str]
    #: The tool's ids to keep for an entry (its name): of the records it was read from, with their names, and the
    #: entity they name (None: new, known by the entry's name once loaded).
    sourced: list[tuple[str, dict[str, str], int | None]]
    #: Entries (their names) whose records have a place for GM notes, with those notes' label: the notes they
    #: carry are all they have now.
    notes_stated: list[tuple[str, str]] = field(default_factory=list)
    #: An imported name (key) whose entity's visibility is not the record's → what the card says of it.
    shown: dict[str, str] = field(default_factory=dict)
    #: Entries (their names) found by their tool's id whose records list all their relations.
    relations_stated: list[str] = field(default_factory=list)


def _file_named(said: str) -> str:
    """A left-out record's reason with its file named by its last two parts: a world's full path
    ("/home/dm/worlds/…/events.json") would push the reason past the card's clip."""
    path, colon, why = said.partition(": ")
    if not colon or "/" not in path.rstrip("/"):
        return said
    return f"{'/'.join(path.rstrip('/').split('/')[-2:])}: {why}"


async def resolve(mem: CampaignMemory, world: ImportedWorld) -> Resolved:
    """The world as a campaign file against what the campaign has now: a record is the entity of its tool's id
    (imported from it before), else the entity of its name or alias."""
    entities: list[EntitySpec] = []
    updates: list[str] = []
    renames: dict[str, str] = {}
    sourced: list[tuple[str, dict[str, str], int | None]] = []
    named: dict[str, int] = {}  # an imported name (key) → the entity it updates, when that entity's name differs
    updating: dict[int, int] = {}  # an entity of the campaign → its entry: two records naming it make one
    hidden: list[tuple[int, str, str]] = []  # a public entity, the secret text a record of it holds, its label
    # and a record made private (or shared again) in the tool since its last import, the entity its alone: the
    # entity follows it (the import set its visibility); otherwise who may see it stays as the DM set it
    found, flips = await _found(mem, world)
    made: set[int] | None = None  # the entities an import made, read once when a record first needs it
    # entities a record renames: their old name is no longer theirs for another record of the import to match
    renaming = {
        entity.id
        for spec, (entity, retitled, _) in zip(world.entities, found, strict=True)
        if entity is not None
        and retitled
        and name_key(spec.name) != name_key(entity.name)
        and not (spec.secret and entity.visibility != Visibility.secret and name_key(spec.name) not in flips)
    }
    names = {name_key(spec.name) for spec in world.entities}
    # the entity of each record's name, for those not found by id: one lookup for the whole import
    by_names = await mem.graph.find_entities(
        ["" if entity else spec.name for spec, (entity, _, _) in zip(world.entities, found, strict=True)]
    )
    for spec, (existing, retitled, known), by_name in zip(world.entities, found, by_names, strict=True):
        ids = world.source_ids.get(spec.name, {})
        existing, by_id = existing or by_name, existing is not None
        if (
            not by_id
            and existing is not None
            and existing.id in renaming
            and name_key(existing.name) == name_key(spec.name)
        ):
            existing = None  # a new record of the name another record's entity had: a new entity
        if existing is None:
            entities.append(spec)
            if ids:
                sourced.append((spec.name, ids, None))
            continue
        if ids and not by_id and made is None:
            made = await _imported(mem, world.format)
        secret = (
            spec.secret and existing.visibility != Visibility.secret and not (by_id and name_key(spec.name) in flips)
        )
        if ids and (by_id or existing.id in (made or ())):  # never an entity the DM made by hand
            if retitled and secret:  # the rename withheld: kept as not yet seen, for when the record may give it
                ids = {source_id: known.get(source_id, record) for source_id, record in ids.items()}
            sourced.append((spec.name, ids, existing.id))
        if secret:  # a GM-only journal of a public NPC's name
            # its text is GM notes (its record's own), never the NPC's description
            hidden.append((existing.id, secret_text(spec), world.notes_labels.get(spec.name, "")))
            spec = EntitySpec(name=spec.name, type=spec.type, secret=True)
        # renamed in the tool since it was imported: renamed here too (a name the DM gave it here stays, and a
        # secret record's name is never a public entity's)
        rename = by_id and retitled and not secret and name_key(spec.name) != name_key(existing.name)
        if rename and (holder := await mem.graph.find_entity(spec.name)) is not None and holder.id != existing.id:
            rename = False  # the new name is another entity's: updated under its name, the DM may merge the two
        before = entities[updating[existing.id]] if existing.id in updating else None
        name = spec.name if rename else before.name if before else existing.name
        renamed_from = existing.name if rename else before.renamed_from if before else None
        aliases = [*(before.aliases if before else existing.aliases), *spec.aliases]
        if rename and name_key(existing.name) not in names:
            aliases.append(existing.name)
        elif not by_id and name_key(spec.name) != name_key(existing.name):
            aliases.append(spec.name)
        # of two records of one entity (one merged into it), the one of its name has the last word: the merged
        # one read first never replaces the description the merge kept
        first, second = (
            (before, spec) if before is not None and name_key(spec.name) != name_key(existing.name) else (spec, before)
        )
        entry = EntitySpec(
            name=name,
            type=existing.type,
            aliases=list(dict.fromkeys(a for a in aliases if name_key(a) != name_key(name))),
            description=(first.description if first else "")
            or (second.description if second else "")
            or existing.description,
            attributes={
                **existing.attributes,
                **(second.attributes if second else {}),
                **(first.attributes if first else {}),
            },
            secret=spec.secret if by_id and name_key(spec.name) in flips else existing.visibility == Visibility.secret,
            renamed_from=renamed_from,
        )
        if rename:
            renames[name_key(spec.name)] = existing.name
        named[name_key(spec.name)] = existing.id
        if before is not None:  # "Pike" and "Pike Trickfoot" of one import: the second adds to the first
            entities[updating[existing.id]] = entry
            continue
        updates.append(existing.name)
        updating[existing.id] = len(entities)
        entities.append(entry)
    # what each record's name stands for in the file: its entity's entry, as named once every record is read
    renamed = {
        key: entities[updating[i]].name for key, i in named.items() if name_key(entities[updating[i]].name) != key
    }
    facts = [
        fact.model_copy(
            update={
                "source": renamed.get(name_key(fact.source), fact.source),
                "target": renamed.get(name_key(fact.target), fact.target) if fact.target is not None else None,
            }
        )
        for fact in world.relationships
    ]
    notes = World(relationships=facts)
    for entity_id, text, label in hidden:
        if text:  # under the entity's name in the file: another record may rename it, its old name no longer its
            notes.notes((", ".join(world.sources), None), entities[updating[entity_id]].name, text, label)
    return Resolved(
        _import_file(entities, notes.relationships),
        updates,
        {key: name for key, name in renamed.items() if key not in renames},
        renames,
        {  # an update keeps its entity's type, whatever the record's
            name_key(spec.name): entities[updating[named[name_key(spec.name)]]].type.value
            for spec in world.entities
            if name_key(spec.name) in named and entities[updating[named[name_key(spec.name)]]].type != spec.type
        },
        sourced,
        _notes_stated(world, found, renamed),
        _shown(world, found, by_names, flips),
        [  # the tool's own records (matched by id), not an entity that only shares a name
            renamed.get(name_key(spec.name), spec.name)
            for spec, (entity, _, _) in zip(world.entities, found, strict=True)
            if entity is not None and spec.name in world.relations_stated
        ],
    )


def _import_file(entities: list[EntitySpec], facts: list[RelationshipSpec]) -> CampaignFile:
    """The entries and facts as a campaign file to load. A record renamed in the tool and a new record of its old
    name: the rename is loaded first, freeing the name for the new entity (a file a DM writes may not say that)."""
    taken = {name_key(entry.name) for entry in entities}
    frees = [entry.renamed_from is not None and name_key(entry.renamed_from) in taken for entry in entities]
    if any(frees):
        entities = [e for e, first in zip(entities, frees, strict=True) if first] + [
            e for e, first in zip(entities, frees, strict=True) if not first
        ]
    return CampaignFile.model_validate(
        {"entities": entities, "relationships": [RelationshipSpec.model_validate(f.model_dump()) for f in facts]},
        context={RENAMES_FIRST: True},
    )


def _notes_stated(
    world: ImportedWorld, found: list[tuple[Entity | None, bool, dict[str, str]]], renamed: dict[str, str]
) -> list[tuple[str, str]]:
    """The entries (as named in the file) whose GM notes the import ends when it has none: those of the tool's
    records (matched by id) or of a CSV (its explicit column), not an entity that only shares a record's name (the
    DM's own campaign file, or another record, gave its notes: a Foundry "Export Data" file has no id to tell)."""
    own = {
        name_key(spec.name)
        for spec, (entity, _, _) in zip(world.entities, found, strict=True)
        if entity is not None or (world.format == "csv" and not world.source_ids.get(spec.name))
    }
    return list(
        dict.fromkeys(
            (renamed.get(name_key(n), n), label)
            for n in world.notes_stated
            if name_key(n) in own
            for label in world.notes_stated_as.get(n, [""])
        )
    )


async def _by_source(
    mem: CampaignMemory, kind: str, records: list[dict[str, str]]
) -> list[tuple[Entity | None, bool, dict[str, str]]]:
    """For each record's ids (the tool's ids → the records' names now): the entity imported before from one of
    them, of this tool only, whether the tool renamed that record since, and the names its ids were last kept
    with. Two queries for the whole import, not one a record: a world of thousands of records is matched in a
    moment."""
    wanted = sorted({source_id for ids in records for source_id in ids})
    if not wanted:
        return [(None, False, {})] * len(records)
    rows = await mem.db.fetch(
        """
        SELECT s.entity_id, s.source_id, s.name FROM entity_source_ids s
        JOIN entities e ON e.campaign_id = s.campaign_id AND e.id = s.entity_id
        WHERE s.campaign_id = $1 AND s.kind = $2 AND s.source_id = ANY($3::text[]) AND e.status <> 'rejected'
        """,
        mem.campaign_id,
        kind,
        wanted,
    )
    known: dict[str, tuple[int, str]] = {r["source_id"]: (r["entity_id"], r["name"]) for r in rows}
    entities = {
        row["id"]: entity_from_row(row)
        for row in await mem.db.fetch(
            f"{ENTITY_SELECT} WHERE e.campaign_id = $1 AND e.id = ANY($2::bigint[])",
            mem.campaign_id,
            sorted({entity_id for entity_id, _ in known.values()}),
        )
    }
    found: list[tuple[Entity | None, bool, dict[str, str]]] = []
    for ids in records:
        hits = [(known[source_id], source_id) for source_id in ids if source_id in known]  # in the record's order
        if not hits:
            found.append((None, False, {}))
            continue
        entity_id = hits[0][0][0]
        retitled = any(name_key(name) != name_key(ids[s]) for (e, name), s in hits if e == entity_id)
        found.append((entities[entity_id], retitled, {s: name for (e, name), s in hits if e == entity_id}))
    return found


async def _found(
    mem: CampaignMemory, world: ImportedWorld
) -> tuple[list[tuple[Entity | None, bool, dict[str, str]]], dict[str, str]]:
    """Each record's entity found by its ids (see :func:`_by_source`), and the records that flip theirs (see
    :func:`_flipped`)."""
    found = await _by_source(mem, world.format, [world.source_ids.get(spec.name, {}) for spec in world.entities])
    return found, await _flipped(mem, world, found)


def _shown(
    world: ImportedWorld,
    found: list[tuple[Entity | None, bool, dict[str, str]]],
    by_names: list[Entity | None],
    flips: dict[str, str],
) -> dict[str, str]:
    """What the card says of each record whose entity players see otherwise than the record says (its name's
    key → the words): made DM-only or public by it, or staying as the DM set it."""
    shown: dict[str, str] = {}
    for spec, (by_id, _, _), by_name in zip(world.entities, found, by_names, strict=True):
        existing = by_id or by_name
        if existing is None or spec.secret == (existing.visibility == Visibility.secret):
            continue
        key = name_key(spec.name)
        if by_id is not None and key in flips:
            shown[key] = flips[key]
        elif spec.secret:
            shown[key] = "stays public: the record is DM-only, its text kept as GM notes"
        else:
            shown[key] = "DM-only"
    return shown


async def _flipped(
    mem: CampaignMemory, world: ImportedWorld, found: list[tuple[Entity | None, bool, dict[str, str]]]
) -> dict[str, str]:
    """The records (their names' keys) whose entity, found by their ids and imported from them alone, they now
    show otherwise than their last accepted import did: made private in the tool (→ what the card says of the
    entity made DM-only), or shared again (→ of it made public). Nothing for a record the import never saw
    otherwise: an entity the DM hid or showed here stays so."""
    candidates = {
        name_key(spec.name): (entity, world.source_ids.get(spec.name, {}))
        for spec, (entity, _, _) in zip(world.entities, found, strict=True)
        if entity is not None and spec.secret != (entity.visibility == Visibility.secret)
    }
    if not candidates:
        return {}
    rows = await mem.db.fetch(
        """
        SELECT s.entity_id, s.source_id FROM entity_source_ids s
        WHERE s.campaign_id = $1 AND s.kind = $2 AND s.entity_id = ANY($3::bigint[])
        """,
        mem.campaign_id,
        world.format,
        sorted({entity.id for entity, _ in candidates.values()}),
    )
    records: dict[int, set[str]] = {}
    for row in rows:
        records.setdefault(row["entity_id"], set()).add(row["source_id"])
    alone = {key: ids for key, (entity, ids) in candidates.items() if records.get(entity.id, set()) <= set(ids)}
    if not alone:
        return {}
    # what the last accepted import of each record made of it: secret or not (a merged entry's, as it was read)
    was = await mem.db.fetch(
        """
        SELECT DISTINCT ON (ids.source_id) ids.source_id, (w ->> 'secret')::boolean AS secret
        FROM import_batches b
        CROSS JOIN LATERAL jsonb_each(b.content -> 'world' -> 'source_ids') AS rec(name, record_ids)
        CROSS JOIN LATERAL jsonb_object_keys(rec.record_ids) AS ids(source_id)
        CROSS JOIN LATERAL jsonb_array_elements(b.content -> 'world' -> 'entities') w
        WHERE b.campaign_id = $1 AND b.status = 'accepted' AND b.format = $2
          AND ids.source_id = ANY($3::text[]) AND w ->> 'name' = rec.name
        ORDER BY ids.source_id, b.decided_at DESC, b.id DESC
        """,
        mem.campaign_id,
        world.format,
        sorted({source_id for ids in alone.values() for source_id in ids}),
    )
    before = {row["source_id"]: row["secret"] for row in was}
    flips: dict[str, str] = {}
    for key, (entity, _) in candidates.items():
        seen = {before[source_id] for source_id in alone.get(key, ()) if source_id in before}
        secret = entity.visibility != Visibility.secret  # what the record is now: the entity's opposite
        if seen == {not secret}:
            flips[key] = (
                f"DM-only from now: made private in {world.format}"
                if secret
                else f"public once accepted: shared again in {world.format}"
            )
    return flips


async def _imported(mem: CampaignMemory, kind: str) -> set[int]:
    """The entities an import made: those holding a tool's ids, and those an accepted batch of this tool added by
    their name (imported before ids were kept). One the DM made, which a batch only updated, is never matched by an
    id. One scan of the batches for the whole import, not one a record."""
    rows = await mem.db.fetch(
        """
        SELECT e.id FROM entities e
        WHERE e.campaign_id = $1 AND (
            EXISTS (SELECT 1 FROM entity_source_ids s WHERE s.campaign_id = $1 AND s.entity_id = e.id)
            OR lower(e.name) IN (
                SELECT made.name FROM (
                    SELECT b.id, lower(w ->> 'name') AS name FROM import_batches b
                    CROSS JOIN LATERAL jsonb_array_elements(b.content -> 'world' -> 'entities') w
                    WHERE b.campaign_id = $1 AND b.status = 'accepted' AND b.format = $2
                    EXCEPT
                    SELECT b.id, lower(u) FROM import_batches b
                    CROSS JOIN LATERAL jsonb_array_elements_text(b.content -> 'updates') u
                    WHERE b.campaign_id = $1 AND b.status = 'accepted' AND b.format = $2
                ) made
            )
        )
        """,
        mem.campaign_id,
        kind,
    )
    return {r["id"] for r in rows}


async def _keep_source_ids(
    tx: CampaignMemory, kind: str, sourced: list[tuple[str, dict[str, str], int | None]]
) -> None:
    """Remember, for the next import, which entity each record of an accepted batch is, and its name now. The new
    entities are found by their names in one query: a first import of thousands took a query each."""
    made = await tx.db.fetch(
        """
        SELECT n AS name, e.id FROM unnest($2::text[]) n
        JOIN entities e ON e.campaign_id = $1 AND e.status <> 'rejected' AND lower(e.name) = lower(n)
        """,
        tx.campaign_id,
        [name for name, _, entity_id in sourced if entity_id is None],
    )
    named = {row["name"]: row["id"] for row in made}
    rows = []
    for name, ids, entity_id in sourced:
        if entity_id is None and (entity_id := named.get(name)) is None:
            continue
        rows += [(tx.campaign_id, kind, source_id, entity_id, record) for source_id, record in ids.items()]
    await tx.db.executemany(
        """
        INSERT INTO entity_source_ids (campaign_id, kind, source_id, entity_id, name) VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (campaign_id, kind, source_id) DO UPDATE SET entity_id = EXCLUDED.entity_id, name = EXCLUDED.name
        """,
        rows,
    )


async def stage(
    mem: CampaignMemory, world: ImportedWorld, *, trial: bool = True, progress: Progress | None = None
) -> ImportBatch:
    """Keep ``world`` as a batch waiting for review, after trying its load (rolled back): a batch that could not
    load is refused now, with what is wrong, and nothing is kept. ``trial=False``: the caller accepts it in the
    same transaction, whose load refuses it as well (a big world's load, twice, was most of the wait)."""
    async with mem.transaction() as tx:
        await tx.graph.lock()
        world = await _named_mentions(tx, world)
        resolved = await resolve(tx, world)
        report = await _tried(tx, world, resolved, progress) if trial else None
        row = await tx.db.fetchrow(
            """
            INSERT INTO import_batches (campaign_id, format, sources, content, entities, relationships)
            VALUES ($1, $2, $3, $4, $5, $6) RETURNING *
            """,
            tx.campaign_id,
            world.format,
            world.sources,
            {"world": world.model_dump(mode="json"), **_plan(resolved, report)},
            len(resolved.file.entities),
            len(resolved.file.relationships),
        )
    return _batch(row)


async def _named_mentions(mem: CampaignMemory, world: ImportedWorld) -> ImportedWorld:
    """Kanka mentions of entities not in the import's files (one record fetched from the API mentions the others),
    named as the campaign's entities imported from their Kanka ids, else said as unknown: never empty text."""
    if world.format != "kanka" or not any(kanka.UNNAMED.search(e.description) for e in world.entities):
        return world
    rows = await mem.db.fetch(
        """
        SELECT s.source_id, e.name FROM entity_source_ids s
        JOIN entities e ON e.campaign_id = s.campaign_id AND e.id = s.entity_id
        WHERE s.campaign_id = $1 AND s.kind = 'kanka' AND s.source_id LIKE 'entity:%' AND e.status <> 'rejected'
        """,
        mem.campaign_id,
    )
    names = {row["source_id"]: row["name"] for row in rows}

    def named(match: re.Match[str]) -> str:
        module, entity_id = match.groups()
        return names.get(f"entity:{entity_id}") or f"[unknown {module} {entity_id}]"

    entities = [e.model_copy(update={"description": kanka.UNNAMED.sub(named, e.description)}) for e in world.entities]
    return world.model_copy(update={"entities": entities})


async def _tried(tx: CampaignMemory, world: ImportedWorld, resolved: Resolved, progress: Progress | None) -> LoadReport:
    """What loading ``resolved`` would do to the campaign now, tried and rolled back."""
    tried = tx.db.transaction()
    await tried.start()
    try:
        report = await apply_campaign_file(
            tx,
            resolved.file,
            imported_from=world.format,
            import_files=world.sources,
            progress=progress,
            records=world.records,
            fact_files=world.fact_files,
        )
        await _close_stale_notes(tx, resolved.file, report, resolved.notes_stated, world.format)
        await _end_deleted_relations(tx, resolved, report, world.format)
        _changed_entities(report)
        return report
    finally:
        await tried.rollback()


def _plan(resolved: Resolved, report: LoadReport | None) -> dict[str, Any]:
    """What a batch's card says of what accepting it does, as kept with the batch: ``report`` is its load, tried
    (or done), which alone tells an unchanged entity from an updated one."""
    return {
        "updates": resolved.updates,
        "updates_as": resolved.updates_as,
        "renames": resolved.renames,
        "types": resolved.types,
        "shown": resolved.shown,
        "secret_facts": sum(1 for r in resolved.file.relationships if r.secret),
        "unchanged": report.unchanged if report is not None else None,
        "notes_changed": [f"{c.entity}: {c.change}" for c in report.changes if _NOTES_CHANGE.match(c.change)]
        if report is not None
        else [],
        "relations_ended": [f"{c.entity}: {c.change}" for c in report.changes if c.change.endswith(_DELETED)]
        if report is not None
        else [],
    }


def _batch(row: Any) -> ImportBatch:
    content = row["content"] if isinstance(row["content"], dict) else json.loads(row["content"])
    return ImportBatch(
        id=row["id"],
        campaign_id=row["campaign_id"],
        format=row["format"],
        sources=list(row["sources"]),
        entities=row["entities"],
        relationships=row["relationships"],
        status=row["status"],
        created_at=row["created_at"],
        decided_at=row["decided_at"],
        world=ImportedWorld.model_validate(content["world"]),
        updates=content.get("updates", []),
        updates_as=content.get("updates_as", {}),
        renames=content.get("renames", {}),
        unchanged=content.get("unchanged"),
        types=content.get("types", {}),
        shown=content.get("shown", {}),
        secret_facts=content.get("secret_facts"),
        notes_changed=content.get("notes_changed", []),
        relations_ended=content.get("relations_ended", []),
        replanned_after=content.get("replanned_after"),
        stale_after=content.get("stale_after"),
    )


async def pending(mem: CampaignMemory) -> list[ImportBatch]:
    rows = await mem.db.fetch(
        "SELECT * FROM import_batches WHERE campaign_id = $1 AND status = 'pending' ORDER BY id", mem.campaign_id
    )
    return [_batch(r) for r in rows]


def batch_id(ref: str) -> int:
    """``b3`` (or ``3``) → 3."""
    text = ref.strip().casefold().removeprefix("b")
    if text[:1] in ("e", "f") and text[1:].isdigit():  # what `review list` calls its items: a DM copies one here
        raise InvalidInputError(
            f"{ref!r} is a review item, not an import batch (b1, b2 …): `lorekeeper review list` shows the items"
        )
    if not text.isdigit():
        raise InvalidInputError(f"{ref!r} is not an import batch: they are b1, b2 … (`lorekeeper review list`)")
    return int(text)


async def get(mem: CampaignMemory, ref: str) -> ImportBatch:
    row = await mem.db.fetchrow(
        "SELECT * FROM import_batches WHERE campaign_id = $1 AND id = $2", mem.campaign_id, batch_id(ref)
    )
    if row is None:
        raise NotFoundError(f"no import batch {ref.strip()} in this campaign")
    return _batch(row)


async def accept(mem: CampaignMemory, ref: str, *, progress: Progress | None = None) -> tuple[ImportBatch, LoadReport]:
    """Load the batch into the graph, all or nothing, matched against the campaign as it is now; ``progress`` is
    told how far the load is."""
    async with mem.transaction() as tx:
        # planned under the lock the load takes: an edit or another accept meanwhile would make the plan stale
        await tx.graph.lock()
        batch = await _pending(tx, ref)
        resolved = await resolve(tx, batch.world)
        report = await apply_campaign_file(
            tx,
            resolved.file,
            imported_from=batch.world.format,
            import_files=batch.world.sources,
            progress=progress,
            records=batch.world.records,
            fact_files=batch.world.fact_files,
        )
        await _keep_source_ids(tx, batch.world.format, resolved.sourced)
        await _close_stale_notes(tx, resolved.file, report, resolved.notes_stated, batch.world.format)
        await _end_deleted_relations(tx, resolved, report, batch.world.format)
        await _end_moved_items(tx, resolved.file, report)
        _changed_entities(report)
        decided = await _decided(tx, batch, "accepted", _plan(resolved, report))  # its card: what it did
        await _plan_again(tx, decided)
        return decided, report


async def _plan_again(tx: CampaignMemory, accepted: ImportBatch) -> None:
    """Plan again the batches still waiting, against the campaign ``accepted`` changed: their cards said what they
    would do before it (new entities it has made since, renames it made), and now say it changed. Tried on the
    campaign as staging does, for what it would leave unchanged; one that could no longer load is refused whole
    when accepted. Accepting one batch never fails for another's sake: whatever stops another's plan, its own
    accept says."""
    for other in await pending(tx):
        try:
            async with tx.db.transaction():  # a savepoint: a failed query of its plan leaves this accept whole
                resolved = await resolve(tx, other.world)
                report = await _tried(tx, other.world, resolved, None)
        except Exception as exc:  # a plan that cannot load now, whyever: its card says it is old, its accept why
            log.info("import batch %s could not be planned again after %s: %r", other.ref, accepted.ref, exc)
            changed: dict[str, Any] = {"stale_after": accepted.ref}
            counts = (other.entities, other.relationships)
        else:
            changed = {**_plan(resolved, report), "replanned_after": accepted.ref, "stale_after": None}
            counts = (len(resolved.file.entities), len(resolved.file.relationships))
        await tx.db.execute(
            """
            UPDATE import_batches SET content = content || $3::jsonb, entities = $4, relationships = $5
            WHERE campaign_id = $1 AND id = $2
            """,
            tx.campaign_id,
            other.id,
            changed,
            *counts,
        )


def _changed_entities(report: LoadReport) -> None:
    """An entity whose facts the import changed (its GM notes ended …) is updated, not
    unchanged: the counts say what accepting does to it."""
    changed = {name_key(change.entity) for change in report.changes}
    still = [name for name in report.unchanged if name_key(name) not in changed]
    moved = len(report.unchanged) - len(still)
    report.unchanged = still
    report.entities_unchanged -= moved
    report.entities_updated += moved


#: A load's change to GM notes the campaign had (ended, or replaced by other text), as the card previews it.
_NOTES_CHANGE = re.compile(rf"fact {NOTES_TYPE.pattern}: ")


def _notes_order(row: Any) -> tuple[str, str, int]:
    """GM-note facts ended, as the DM reads them: by entity, then record, then part (``dm_notes``, ``dm_notes_2``
    … ``_10``)."""
    match = NOTES_TYPE.fullmatch(row["type"])
    assert match is not None  # the queries end only facts of that pattern
    return row["name"], match.group(1), int(match.group(2) or 1)


async def _close_stale_notes(
    tx: CampaignMemory, file: CampaignFile, report: LoadReport, stated: list[tuple[str, str]], kind: str
) -> None:
    """End the parts of a record's GM notes that the notes it gave now have no more of: shorter notes leave the old
    ``dm_notes_3`` current otherwise, and the DM reads stale text after the new one. An entity of ``stated`` (a
    record of it has a place for GM notes, with those notes' label) given none now under that label has those
    notes ended: deleted in the tool. The notes of the entity's other records (``dm_notes_journal`` beside an
    actor's ``dm_notes``) are theirs to replace or end, whichever file is imported."""
    parts: dict[tuple[str, str], set[str]] = {}
    for fact in file.relationships:
        if match := NOTES_TYPE.fullmatch(fact.type):
            entry = file.find_entity(fact.source)  # the entity's name, as loaded, of a fact named by an alias
            parts.setdefault((entry.name if entry else fact.source, match.group(1)), set()).add(fact.type)
    noted = {(name_key(name), notes) for name, notes in parts}
    deleted = [(name, notes_of(label)) for name, label in stated]
    await _close_deleted_notes(
        tx, [(n, notes) for n, notes in deleted if (name_key(n), notes) not in noted], report, kind
    )
    if not parts:
        return
    kept = [(name, notes, kind) for (name, notes), kinds in parts.items() for kind in sorted(kinds)]
    # one query for the whole import, not two an entity: a world of thousands of GM-noted records took seconds
    rows = await tx.db.fetch(
        """
        WITH kept(name, notes, type) AS (SELECT * FROM unnest($2::text[], $3::text[], $4::text[])),
        noted AS (
            SELECT DISTINCT e.id, e.name, k.notes FROM kept k
            JOIN entities e ON e.campaign_id = $1 AND e.status <> 'rejected' AND lower(e.name) = lower(k.name)
        )
        UPDATE relationships r SET valid_to = now(), superseded_by = (
            SELECT n.id FROM relationships n
            WHERE n.campaign_id = $1 AND n.source_id = r.source_id AND n.type = e.notes AND n.valid_to IS NULL
              AND n.status = 'accepted' LIMIT 1)
        FROM noted e
        WHERE r.campaign_id = $1 AND r.source_id = e.id AND r.valid_to IS NULL AND r.status = 'accepted'
          AND r.type ~ ('^' || e.notes || '(_[0-9]+)?$')
          AND NOT EXISTS (SELECT 1 FROM kept k WHERE lower(k.name) = lower(e.name) AND k.type = r.type)
        RETURNING e.name, r.type
        """,
        tx.campaign_id,
        [name for name, _, _ in kept],
        [notes for _, notes, _ in kept],
        [kind for _, _, kind in kept],
    )
    report.relationships_updated += len(rows)
    report.changes += [
        LoadChange(entity=row["name"], change=f"fact {row['type']}: ended (the GM notes are shorter now)")
        for row in sorted(rows, key=_notes_order)
    ]


async def _close_deleted_notes(tx: CampaignMemory, noted: list[tuple[str, str]], report: LoadReport, kind: str) -> None:
    """End the GM notes (of an entity, the type of their first part) an import of the tool ``kind`` gave, whose
    records have none now. One query for the whole import: most records of a world have no notes. Notes the DM
    wrote here, or another tool gave, are not the tool's to delete; nor, for a CSV, notes of a campaign file or of
    an import before the tool was kept (a tool with ids matched the record itself: its notes then were that
    record's)."""
    if not noted:
        return
    rows = await tx.db.fetch(
        """
        UPDATE relationships r SET valid_to = now()
        FROM entities e, unnest($2::text[], $3::text[]) AS n(name, notes)
        WHERE e.campaign_id = $1 AND e.status <> 'rejected' AND lower(e.name) = lower(n.name)
          AND r.campaign_id = $1 AND r.source_id = e.id AND r.valid_to IS NULL AND r.status = 'accepted'
          AND r.type ~ ('^' || n.notes || '(_[0-9]+)?$')
          AND coalesce(r.provenance ->> 'source', 'dm') = 'campaign_file'
          AND coalesce(r.provenance ->> 'imported_from', CASE WHEN $4 = 'csv' THEN NULL ELSE $4 END) = $4
        RETURNING e.name, r.type
        """,
        tx.campaign_id,
        [name for name, _ in noted],
        [notes for _, notes in noted],
        kind,
    )
    report.relationships_updated += len(rows)
    report.changes += [
        LoadChange(entity=row["name"], change=f"fact {row['type']}: ended (the GM notes were deleted)")
        for row in sorted(rows, key=_notes_order)
    ]


#: How a load's change says a relation deleted in the tool was ended.
_DELETED = ": ended (deleted in the tool)"
#: Facts a Kanka record's fields give, not its relations: an owner's relations say nothing of them.
_LINKS = ("located_in", "owns")


async def _end_deleted_relations(tx: CampaignMemory, resolved: Resolved, report: LoadReport, kind: str) -> None:
    """End the relations an import of the tool gave an entity whose record now lists all its relations without
    them (deleted in Kanka), as deleted GM notes are ended. Only relations to another entity of this import: one to
    an entity not imported may be in its files still. Facts of play or of the DM are not the tool's to end."""
    if not resolved.relations_stated:
        return
    names = [e.name for e in resolved.file.entities]
    rows = await tx.db.fetch(
        "SELECT id, lower(name) AS name FROM entities WHERE campaign_id = $1 AND status <> 'rejected' "
        "AND lower(name) = ANY($2::text[])",
        tx.campaign_id,
        [n.lower() for n in names],
    )
    ids = {row["name"]: row["id"] for row in rows}

    def entity_id(name: str) -> int | None:  # a fact may name its entity by an alias
        entry = resolved.file.find_entity(name)
        return ids.get((entry.name if entry else name).lower())

    stated = {
        one_way(f.type, source, target)
        for f in resolved.file.relationships
        if f.target is not None
        and (source := entity_id(f.source)) is not None
        and (target := entity_id(f.target)) is not None
    }
    ended = await tx.db.fetch(
        """
        UPDATE relationships r SET valid_to = now()
        WHERE r.campaign_id = $1 AND r.valid_to IS NULL AND r.status = 'accepted'
          AND r.source_id = ANY($2::bigint[]) AND r.target_id = ANY($3::bigint[]) AND NOT (r.type = ANY($4::text[]))
          AND coalesce(r.provenance ->> 'source', 'dm') = 'campaign_file' AND r.provenance ->> 'imported_from' = $5
          AND NOT (r.id = ANY($6::bigint[]))
        RETURNING r.id, r.type, r.source_id, r.target_id,
                  (SELECT name FROM entities WHERE campaign_id = $1 AND id = r.source_id) AS source,
                  (SELECT name FROM entities WHERE campaign_id = $1 AND id = r.target_id) AS target
        """,
        tx.campaign_id,
        [ids[n.lower()] for n in resolved.relations_stated if n.lower() in ids],
        list(ids.values()),
        list(_LINKS),
        kind,
        [  # those the import states still, as the graph weighs them (read from either end)
            row["id"]
            for row in await tx.db.fetch(
                "SELECT id, type, source_id, target_id FROM relationships WHERE campaign_id = $1 "
                "AND valid_to IS NULL AND source_id = ANY($2::bigint[]) AND target_id IS NOT NULL",
                tx.campaign_id,
                list(ids.values()),
            )
            if one_way(row["type"], row["source_id"], row["target_id"]) in stated
        ],
    )
    report.relationships_updated += len(ended)
    report.changes += [
        LoadChange(entity=row["source"], change=f"fact {row['type']} {row['target']}{_DELETED}")
        for row in sorted(ended, key=lambda r: (r["source"], r["type"], r["target"]))
    ]


async def _end_moved_items(tx: CampaignMemory, file: CampaignFile, report: LoadReport) -> None:
    """An item the import says another of its records owns now (moved between sheets in the tool): the owner it
    had, a record of this import too that no longer has it, no longer owns it. The graph closes it for one object,
    not for a kind many hold (``held_by_many``: a "Longsword +1" on three sheets), whose holders add up. An owner
    the import does not read, or the DM's own word, is left as it is."""
    owners: dict[str, list[str]] = {}
    for fact in file.relationships:
        if fact.type == "owns" and fact.target is not None:
            owners.setdefault(fact.target, []).append(fact.source)
    if not owners:
        return
    rows = await tx.db.fetch(
        """
        WITH owned(item, owner) AS (SELECT * FROM unnest($2::text[], $3::text[])),
        read AS (
            SELECT e.id FROM entities e
            WHERE e.campaign_id = $1 AND e.status <> 'rejected'
              AND lower(e.name) IN (SELECT lower(n) FROM unnest($4::text[]) n)
        ),
        now_owned AS (
            SELECT n.id, n.source_id, n.target_id FROM owned o
            JOIN entities i ON i.campaign_id = $1 AND lower(i.name) = lower(o.item) AND i.status <> 'rejected'
            JOIN entities w ON w.campaign_id = $1 AND lower(w.name) = lower(o.owner) AND w.status <> 'rejected'
            JOIN relationships n ON n.campaign_id = $1 AND n.source_id = w.id AND n.target_id = i.id
             AND n.type = 'owns' AND n.valid_to IS NULL AND n.status = 'accepted'
        )
        UPDATE relationships r
        SET valid_to = now(), superseded_by = (SELECT min(n.id) FROM now_owned n WHERE n.target_id = r.target_id)
        WHERE r.campaign_id = $1 AND r.type = 'owns' AND r.valid_to IS NULL AND r.status = 'accepted'
          AND r.target_id IN (SELECT target_id FROM now_owned)
          AND r.id NOT IN (SELECT id FROM now_owned)
          AND r.source_id IN (SELECT id FROM read)
          AND coalesce(r.provenance ->> 'source', 'dm') = 'campaign_file'
        RETURNING (SELECT name FROM entities WHERE campaign_id = $1 AND id = r.source_id) AS owner,
                  (SELECT name FROM entities WHERE campaign_id = $1 AND id = r.target_id) AS item
        """,
        tx.campaign_id,
        [item for item, names in owners.items() for _ in names],
        [owner for names in owners.values() for owner in names],
        [e.name for e in file.entities],
    )
    report.relationships_updated += len(rows)
    report.changes += [
        LoadChange(entity=row["owner"], change=f"fact owns {row['item']}: ended (another owns it now)")
        for row in sorted(rows, key=lambda r: (r["owner"], r["item"]))
    ]


async def reject(mem: CampaignMemory, ref: str) -> ImportBatch:
    async with mem.transaction() as tx:
        return await _decided(tx, await _pending(tx, ref), "rejected")


async def _decided(
    tx: CampaignMemory, batch: ImportBatch, status: str, plan: dict[str, Any] | None = None
) -> ImportBatch:
    row = await tx.db.fetchrow(
        """
        UPDATE import_batches SET status = $3, decided_at = now(), content = content || $4::jsonb
        WHERE campaign_id = $1 AND id = $2 RETURNING *
        """,
        tx.campaign_id,
        batch.id,
        status,
        plan or {},
    )
    return _batch(row)


async def _pending(mem: CampaignMemory, ref: str) -> ImportBatch:
    row = await mem.db.fetchrow(
        "SELECT * FROM import_batches WHERE campaign_id = $1 AND id = $2 FOR UPDATE", mem.campaign_id, batch_id(ref)
    )
    if row is None:
        raise NotFoundError(f"no import batch {ref.strip()} in this campaign")
    batch = _batch(row)
    if batch.status != "pending":  # said as a review item decided already is: under its card, what it was
        raise AlreadyDecidedError(batch.ref, batch.status, f"the import of {clip(', '.join(batch.sources), 80)}")
    return batch
