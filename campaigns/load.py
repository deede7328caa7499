"""Campaign files into and out of a campaign's memory.

Loading is one transaction and idempotent: entities are matched by name (case-insensitively) and updated in
place, relationships already present keep all but the visibility the file gives, so loading a file twice changes
nothing. An entry renames the entity named in its ``renamed_from:``; one named like another entity's alias is
refused. Play may have changed what a file restates, so a load says what it changed of what the campaign had.
Entities the file no longer mentions are kept: they may have come from play, and only the DM deletes.
"""

from __future__ import annotations

import json
import logging
import unicodedata
from collections.abc import Callable, Sequence
from pathlib import PurePath
from typing import Any, TypeAlias

from pydantic import BaseModel, Field

from campaigns.schema import (
    CampaignFile,
    CampaignHeader,
    EntitySpec,
    RelationshipSpec,
    fact_key,
    find_conflicts,
    name_key,
)
from memory.correction.evidence import everyday
from memory.correction.text import spaceless
from memory.errors import AlreadyExistsError, InvalidInputError, MemoryError_
from memory.gazetteer import capital_only
from memory.graph import KnowledgeGraph
from memory.graph.reading import HeldFact
from memory.graph.rules import can_contradict, named_anew, one_way
from memory.graph.took_part import link_to_recaps
from memory.models import (
    Entity,
    EntityType,
    Provenance,
    Relationship,
    RelationshipIn,
    ReviewStatus,
    Source,
    relationship_type,
)
from memory.replies import described_said, masked_said, newly_hidden, unhidden_said
from memory.store import CampaignMemory
from memory.text import MAX_FACT_VALUE_CHARS, attribute_value, clean_name, clip, look_alikes, without_look_alikes

log = logging.getLogger(__name__)

Progress: TypeAlias = Callable[[int, int], None]
#: A fact as (source, type, target, value): what ``KnowledgeGraph.accepted_fact_keys`` knows facts by.
_FactKey: TypeAlias = tuple[int, str, int | None, str | None]

RENAME_HINT = "; to rename an entity, give this entry `renamed_from:` its current name"

#: New rows before the planner is told about them (see ``KnowledgeGraph.refresh_statistics``), then each time
#: their number has doubled. Until then a name check costs the square of the rows new so far: at 1,000, 0.4 s.
_STATISTICS_AFTER = 50


#: Changes :meth:`LoadReport.said` lists, and the characters of each line: a Discord reply holds 2,000.
_SHOWN = 20
_LINE = 80


class LoadChange(BaseModel):
    """One change a load made to what the campaign had before it (a field, an alias, a fact of ``entity``)."""

    entity: str
    change: str


class LoadReport(BaseModel):
    entities_created: int = 0
    entities_updated: int = 0
    entities_unchanged: int = 0
    relationships_created: int = 0
    relationships_updated: int = 0
    relationships_unchanged: int = 0
    changes: list[LoadChange] = Field(default_factory=list)
    #: Names of the entities the file had that it left as they were: an import's card tells them from updates.
    unchanged: list[str] = Field(default_factory=list, exclude=True)
    #: Heard-as phrases this load taught that are ordinary English (``change``: the phrase): each is the name
    #: wherever it is said, which the DM may mean but should know.
    everyday: list[LoadChange] = Field(default_factory=list)
    #: Secret names of the file's entities (or a public name of theirs) players read anyway, each beside the name
    #: they may read that it is spelled like (see :func:`memory.graph.rules.unhidden_secrets`): loaded, as an
    #: export holding them must load, but the DM is warned, as ``entity add`` warns.
    unhidden: list[tuple[str, str]] = Field(default_factory=list)
    #: What of the secret names this load gave (a new or renamed secret entity's, ``hidden_names``) is ordinary
    #: English, which players will read as "[secret]" wherever it is said (see :func:`memory.replies.masked_said`).
    masked: list[str] = Field(default_factory=list)
    #: Fields players read of the file's public entities that say a secret name, as ``(entity, field, names)`` (see
    #: :func:`memory.graph.rules.secrets_described`): loaded, but the DM is warned, as ``entity add`` warns.
    described: list[tuple[str, str, list[str]]] = Field(default_factory=list)
    #: Names and aliases of one everyday English word the file writes in lower case (``change``: the name, "abbey"):
    #: a line names the entity by one only where it writes it with a capital (:func:`memory.gazetteer.capital_only`),
    #: which the DM who typed it lower case may not expect.
    capital_only: list[LoadChange] = Field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(
            self.entities_created or self.entities_updated or self.relationships_created or self.relationships_updated
        )

    def summary(self) -> str:
        return (
            f"entities: {self.entities_created} new, {self.entities_updated} updated, "
            f"{self.entities_unchanged} unchanged; relationships: {self.relationships_created} new, "
            f"{self.relationships_updated} updated, {self.relationships_unchanged} unchanged"
        )

    def said(self, shown: int = _SHOWN) -> str:
        """The changes to what the campaign had, entity by entity, for the DM (the CLI and ``/campaign load`` say
        the same): a committed load cannot be undone, so what it replaced must be seen. Then the heard-as phrases
        of everyday English it taught. First, a warning for each secret name players read anyway. "" if none."""
        warned = self.warnings(shown) + masked_said(self.masked)
        grouped: dict[str, list[str]] = {}
        for c in self.changes:
            grouped.setdefault(c.entity, []).append(c.change)
        lines = [clip(f"- {entity}: {change}", _LINE) for entity, changes in grouped.items() for change in changes]
        said = [*warned, *(["Changes to what the campaign had:", *_at_most(lines, shown)] if lines else [])]
        phrases: dict[str, list[str]] = {}
        for c in self.everyday:
            phrases.setdefault(c.entity, []).append(f"“{c.change}”")
        if phrases:
            said.append("Heard-as phrases of everyday English (each is written as the name wherever it is said):")
            said += _at_most([clip(f"- {entity}: {', '.join(p)}", _LINE) for entity, p in phrases.items()], shown)
        if self.capital_only:
            said.append(
                "Names of one everyday English word, counted only where a line writes them with a capital"
                " (write “the abbey” to count it in lower case too):"
            )
            said += _at_most([clip(f"- {c.entity}: “{c.change}”", _LINE) for c in self.capital_only], shown)
        return "\n".join(said)

    def warnings(self, shown: int = _SHOWN) -> list[str]:
        """A warning line for each secret name players read anyway, then one for each entity whose public text
        says a secret name: what the DM must see wherever the load is answered (an import's card too)."""
        said = [*unhidden_said(self.unhidden), *described_said(self.described)]
        return _at_most([f"warning: {s}" for s in said], shown)


def _at_most(lines: list[str], shown: int) -> list[str]:
    return [*lines[:shown], *([f"- and {len(lines) - shown:,} more"] if len(lines) > shown else [])]


async def apply_campaign_file(
    mem: CampaignMemory,
    file: CampaignFile,
    *,
    progress: Progress | None = None,
    imported_from: str | None = None,
    import_files: Sequence[str] = (),
    records: dict[str, str] | None = None,
    fact_files: dict[str, str] | None = None,
) -> LoadReport:
    """Bring the campaign's graph in line with ``file``, all or nothing. ``imported_from``: the tool an import's
    file was read from, kept in its facts' provenance (a later import ends only the GM notes its tool gave), with
    ``import_files``, the files it read (a fact's history says where it came from);
    ``records``: where an import read each entry (its name → "world.csv: line 2 ('Vexy')"), which a refused entry
    is named by, the DM having written no campaign file; ``fact_files``: the file each fact
    (:func:`~campaigns.schema.fact_key`) was read from, its history's source rather than all ``import_files``."""
    async with mem.transaction() as tx:
        await tx.graph.lock()  # before any write: see ``KnowledgeGraph.lock``
        # Removals first: a phrase one entry takes from an entity of a later entry is checked against the file's end
        # state, not refused because the later one holds it still. What they had is what the load reports against.
        had_before = await _give_up_moved_phrases(tx.graph, file)
        load = _Loading(
            tx, len(file.entities) + len(file.relationships), progress, imported_from, import_files, records
        )
        load.fact_files = fact_files or {}
        for number, spec in enumerate(file.entities, start=1):
            await load.entity(number, spec, had_before)
        if file.campaign is not None and file.campaign.hidden_names:
            load.hidden += await tx.graph.hide_names(None, file.campaign.hidden_names)
        load.report.unhidden = await tx.graph.unhidden_secrets(*load.loaded)
        load.report.masked = await tx.graph.everyday_masked(load.hidden)
        # every entity the file states, changed or not: the file says it so, and a load again must warn again
        load.report.described = await tx.graph.secrets_described(*((None, e) for e in load.loaded))
        await link_to_recaps(tx.graph, load.accepted)
        # A file loaded again holds mostly facts the campaign has as they are: known in one query, they are counted
        # unchanged without a fact's round trips each (16,000 facts: 16 s).
        held = await tx.graph.accepted_fact_keys()
        # What players still read first: the file's current facts then close it, as they had before the export.
        for rel in sorted(file.relationships, key=lambda r: not r.players_read):
            await load.relationship(file, rel, held)
        await tx.graph.mark_filed(load.restated)
    return load.report


class _Loading:
    """One load's running state inside its transaction: the report, the ids the file's entities got, what the
    campaign had before, and the progress told."""

    def __init__(
        self,
        tx: CampaignMemory,
        total: int,
        progress: Progress | None,
        imported_from: str | None = None,
        import_files: Sequence[str] = (),
        records: dict[str, str] | None = None,
    ) -> None:
        self.tx = tx
        self.records = {name_key(name): where for name, where in records.items()} if records is not None else None
        self.report = LoadReport()
        self.total, self.done, self.progress = total, 0, progress
        self.provenance = Provenance.model_validate(
            {"source": Source.campaign_file, "confidence": 1.0, "dm_confirmed": True}
            | ({"imported_from": imported_from} if imported_from else {})
            | ({"import_files": [PurePath(f).name for f in import_files]} if import_files else {})
        )
        self.statistics_due = _STATISTICS_AFTER
        self.fact_files: dict[str, str] = {}  # a fact's key → the file it was read from
        self.ids: dict[str, int] = {}  # the file's entity names → their ids in the campaign
        self.known: set[int] = set()  # entities the campaign had before this load: only their facts can be closed
        self.accepted: list[
            int
        ] = []  # new to the campaign, accepted or newly named by this load: no recap links them yet
        self.created: set[int] = set()  # facts of this load: one closing another of them changes nothing the DM had
        self.written: set[tuple[int, str]] = set()  # (source, type) of the facts this load wrote
        self.loaded: list[Entity] = []  # the file's entities as loaded: a secret name of theirs is warned of
        self.hidden: list[str] = []  # the names players read no more since this load: the DM is told of English
        self.restated: list[int] = []  # facts from play or the DM that the file now states too

    def _tick(self) -> None:
        self.done += 1
        if self.progress:
            self.progress(self.done, self.total)

    async def _refresh_statistics(self) -> None:
        self.statistics_due = await _refresh_statistics_when_due(self.tx, self.report, self.statistics_due)

    async def entity(self, number: int, spec: EntitySpec, had_before: dict[int, Entity]) -> None:
        """Load entry ``number`` of the file: create the entity or bring it up to date, and report what changed."""
        graph, report = self.tx.graph, self.report
        try:
            entity, outcome, before = await graph.upsert_entity(
                spec.to_entity_in(), renamed_from=spec.renamed_from, keep=spec.left_out()
            )
        except MemoryError_ as exc:  # a clash with the database: the file could not know, so say where it is
            if self.records is not None:  # an import's record, whose tool has no renamed_from: to give
                where = self.records.get(name_key(spec.name)) or repr(spec.name)
                raise type(exc)(f"{where}: {exc}") from None
            hint = RENAME_HINT if isinstance(exc, AlreadyExistsError) else ""
            raise type(exc)(f"{spec.located(number)}: {exc}{hint}") from None
        if entity.id in had_before:  # it gave up a phrase before the entries were loaded: the load changed it
            before, outcome = had_before[entity.id], "updated"
        setattr(report, f"entities_{outcome}", getattr(report, f"entities_{outcome}") + 1)
        if outcome == "unchanged":
            report.unchanged.append(entity.name)
        hidden = await graph.hide_names(entity.id, spec.hidden_names) if spec.hidden_names else []
        if hidden and before:
            report.changes.append(LoadChange(entity=entity.name, change=f"hidden from players: {', '.join(hidden)}"))
        self.hidden += [*newly_hidden(before, entity), *hidden]
        if before is None or before.status != ReviewStatus.accepted or named_anew(before, entity):
            self.accepted.append(entity.id)
        if before is not None:
            self.known.add(entity.id)
            report.changes += [LoadChange(entity=entity.name, change=c) for c in _entity_changes(before, entity)]
        report.everyday += _everyday_taught(before, entity)
        report.capital_only += _capital_only(before, entity)
        await self._refresh_statistics()
        self.ids[spec.name] = entity.id
        self.loaded.append(entity)
        self._tick()

    async def relationship(self, file: CampaignFile, rel: RelationshipSpec, held: dict[_FactKey, HeldFact]) -> None:
        """Load a relationship of the file; ``held``: the facts the campaign had accepted before, unchanged when
        the file restates one, unless a fact this load wrote of the same entity and type may have closed it. A
        fact the file stated before and play has since replaced is unchanged too: the file did not change it."""
        fact_in = self._fact_in(file, rel)
        key = (fact_in.source_id, fact_in.type, fact_in.target_id, fact_in.value)
        fresh = key[:2] not in self.written
        had = held.get(key) if fresh else None
        if rel.players_read and had is None and await self.tx.graph.has_fact(fact_in):
            self.report.relationships_unchanged += 1  # kept as history already: writing it would close the current
        elif had is not None and had.visibility == fact_in.visibility:
            self.report.relationships_unchanged += 1
            if not had.filed:
                self.restated.append(had.id)
        elif (
            had is None and fresh and fact_in.source_id in self.known and await self.tx.graph.replaced_in_play(fact_in)
        ):
            self.report.relationships_unchanged += 1
        else:
            await self._write(fact_in)
        self._tick()

    def _fact_in(self, file: CampaignFile, rel: RelationshipSpec) -> RelationshipIn:
        source = file.find_entity(rel.source)
        target = file.find_entity(rel.target) if rel.target is not None else None
        assert source is not None and (target is not None or rel.target is None)  # the schema checked them
        return RelationshipIn(
            source_id=self.ids[source.name],
            type=rel.type,
            target_id=self.ids[target.name] if target is not None else None,
            value=rel.value,
            attributes=dict(rel.attributes),
            visibility=rel.visibility,
            provenance=self.provenance
            if (read := self.fact_files.get(fact_key(rel))) is None
            else self.provenance.model_copy(update={"import_files": [PurePath(read).name]}),
            status=ReviewStatus.accepted,
        )

    async def _write(self, fact_in: RelationshipIn) -> None:
        graph, report = self.tx.graph, self.report
        fact, is_new = await graph.ensure_relationship(fact_in)
        if not is_new and fact.provenance.source != Source.campaign_file:
            self.restated.append(fact.id)
        if is_new:
            await self._created(fact)
        elif fact.visibility != fact_in.visibility:
            # The file is the DM's word on what players may see, as it is for entities.
            await graph.set_relationship(
                fact.id, ReviewStatus.accepted, dm_confirmed=True, visibility=fact_in.visibility
            )
            report.relationships_updated += 1
            report.changes.append(
                LoadChange(entity=fact.source_name, change=f"fact {fact.type}: {_other(fact)} now {fact_in.visibility}")
            )
        else:
            report.relationships_unchanged += 1

    async def _created(self, fact: Relationship) -> None:
        """Count a fact new to the campaign, and report the facts the campaign had that it closed."""
        self.report.relationships_created += 1
        self.created.add(fact.id)
        self.written.add((fact.source_id, fact.type))
        await self._refresh_statistics()
        # the entity whose fact it is, as the graph weighs it: the Bow's, of "Vex has the Bow"
        type, entity, _ = one_way(fact.type, fact.source_id, fact.target_id)
        type = fact.type if entity == fact.source_id else type  # "led_by" as the file says it
        if entity in self.known and can_contradict(fact.type, fact.value):
            self.report.changes += [
                LoadChange(
                    entity=_end(fact, entity), change=f"fact {type}: {_other(old, entity)} → {_other(fact, entity)}"
                )
                for old in await self.tx.graph.closed_by(fact.id)
                if old.id not in self.created
            ]


def _everyday_taught(before: Entity | None, entity: Entity) -> list[LoadChange]:
    """The heard-as phrases of everyday English that loading ``entity`` taught (it had not them ``before``)."""
    had = {h.casefold() for h in before.heard_as} if before is not None else set()
    return [
        LoadChange(entity=entity.name, change=h) for h in entity.heard_as if h.casefold() not in had and everyday(h)
    ]


def _capital_only(before: Entity | None, entity: Entity) -> list[LoadChange]:
    """The names new to ``entity`` (it had not them ``before``) written in lower case that a line names it by only
    with a capital: one everyday English word ("abbey")."""
    had = {before.name, *before.aliases} if before is not None else set()
    names = (entity.name, *entity.aliases)
    return [
        LoadChange(entity=entity.name, change=n) for n in names if n not in had and n == n.lower() and capital_only(n)
    ]


async def _give_up_moved_phrases(graph: KnowledgeGraph, file: CampaignFile) -> dict[int, Entity]:
    """Take from each entity of ``file`` stating its heard-as phrases those another entry of the file takes from it
    (spacing and punctuation aside, as they are checked), before any entry is loaded; returns what each entity
    changed so was before. A query per phrase of the file: most entries have none."""

    takers: dict[str, tuple[str, EntitySpec]] = {}
    for spec in file.entities:
        for h in spec.heard_as:
            takers.setdefault(spaceless(h), (h, spec))
    had: dict[int, Entity] = {}
    for key, (phrase, taker) in takers.items():
        if (holder := await graph.heard_as_of(phrase)) is None:
            continue
        named = holder.name.casefold()
        # the file's entry for the holder, as loading finds it: by its name, or renaming it
        entries = [s for s in file.entities if named in (s.name.casefold(), (s.renamed_from or "").casefold())]
        entry = None
        for candidate in entries:
            if (found := await graph.upserted(candidate.name, candidate.renamed_from)) and found.id == holder.id:
                entry = candidate
                break
        if entry is None or entry is taker or "heard_as" in entry.left_out():
            continue  # not in the file, or keeping its phrases: the load refuses the phrase to another as ever
        if key in {spaceless(h) for h in entry.heard_as}:
            continue  # both entries say it: refused when loaded
        current = await graph.get_entity_by_id(holder.id)  # it may have given up another phrase already
        await graph.update_entity(current.name, heard_as=[h for h in current.heard_as if spaceless(h) != key])
        had.setdefault(holder.id, holder)
    return had


def _entity_changes(before: Entity, after: Entity) -> list[str]:
    """What loading changed of an entity the campaign had, each said for the DM."""
    changes = ["accepted (it was waiting for review)"] * (before.status == ReviewStatus.pending)
    if before.name != after.name:
        changes.append(f"renamed from {before.name}")
    if before.type != after.type:
        changes.append(f"type: {before.type} → {after.type}")
    if before.description != after.description:
        if not before.description:
            changes.append("description added")
        else:
            done = "replaced" if after.description else "cleared"
            changes.append(f"description {done} (was {_quoted(before.description)})")
    for done, changed in _removed_added(before.aliases, after.aliases):
        changes.append(f"{'alias' if len(changed) == 1 else 'aliases'} {done}: {', '.join(changed)}")
    changes += [f"heard as {done}: {', '.join(c)}" for done, c in _removed_added(before.heard_as, after.heard_as)]
    changes += [
        f"never heard as {done}: {', '.join(c)}" for done, c in _removed_added(before.not_heard_as, after.not_heard_as)
    ]
    for key in dict.fromkeys([*before.attributes, *after.attributes]):
        old, new = before.attributes.get(key), after.attributes.get(key)
        if key not in after.attributes:
            changes.append(f"attribute {key} removed (was {_quoted(old)})")
        elif key not in before.attributes:
            changes.append(f"attribute {key}: {_quoted(new)} added")
        elif old != new:
            changes.append(f"attribute {key}: {_quoted(old)} → {_quoted(new)}")
    if before.visibility != after.visibility:
        changes.append(f"now {after.visibility}")
    return changes


def _removed_added(before: list[str], after: list[str]) -> list[tuple[str, list[str]]]:
    """("removed", names) and ("added", names) of a list of names, case aside; an empty one left out."""
    said = []
    for names, other, done in ((before, after, "removed"), (after, before, "added")):
        kept = {n.casefold() for n in other}
        if changed := [n for n in names if n.casefold() not in kept]:
            said.append((done, changed))
    return said


def _other(fact: Relationship, entity: int | None = None) -> str:
    """A fact's target entity or value, as ``Relationship.describe`` writes it; of an edge stated from the other end
    of ``entity`` ("Vex has the Bow", of the Bow), its source."""
    if fact.target_id is not None and fact.target_id == entity:
        return fact.source_name
    return str(fact.target_name if fact.target_id is not None else fact.value)


def _end(fact: Relationship, entity: int) -> str:
    """The name of ``entity``, an end of ``fact``."""
    return fact.target_name if fact.target_id == entity and fact.target_name is not None else fact.source_name


def _quoted(value: Any) -> str:
    """A value as JSON writes it: "" and "900" stay apart from nothing and 900."""
    return json.dumps(value, ensure_ascii=False)


async def _refresh_statistics_when_due(tx: CampaignMemory, report: LoadReport, due: int) -> int:
    """Refresh the planner's statistics once ``due`` rows are new; returns when they are due next."""
    if report.entities_created + report.relationships_created < due:
        return due
    await tx.graph.refresh_statistics()
    return due * 2


async def export_campaign_file(
    mem: CampaignMemory, header: CampaignHeader | None = None, on_skip: Callable[[str], None] = log.warning
) -> CampaignFile:
    """The campaign's accepted entities and their current accepted facts (edges and attribute facts, each with
    its visibility) as a campaign file. Pending and rejected items stay out: a file holds what is canon; how many
    wait for review is told to ``on_skip``, as a DM keeping the file as a backup would lose them unawares.
    An attribute fact with no value, which a file cannot hold (nor the DM write), is left out and told to
    ``on_skip``: the rest of the campaign must still export. So is a name or type an earlier version stored with
    a control character, written without it."""
    if waiting := await mem.review.count():
        on_skip(
            f"left out {waiting} item{'s' * (waiting != 1)} waiting for review: a campaign file holds only canon, "
            "so accept them first to keep them"
        )
    # Entities and facts cleaned of a control character go last: a clash they now make with another item is then
    # reported on them (see ``find_conflicts``), and it is they that give way.
    listed = await mem.graph.list_entities()
    cleaned = {e.id: _file_name(e, on_skip) for e in listed}
    hidden = {key: _file_names(names) for key, names in (await mem.graph.hidden_names()).items()}
    if hidden.get(None):  # a removed secret entity's name: hidden for good, in the campaign it is loaded into too
        header = (header or CampaignHeader()).model_copy(update={"hidden_names": hidden[None]})
    entities = sorted(listed, key=lambda e: cleaned[e.id][2])
    specs = [
        EntitySpec(
            name=cleaned[e.id][0],
            type=e.type,
            aliases=cleaned[e.id][1],
            heard_as=e.heard_as,
            not_heard_as=e.not_heard_as,
            description=e.description,
            attributes=_file_attributes(_portable(e)),
            secret=e.visibility == "secret",
            hidden_names=hidden.get(e.id, []) if e.visibility == "secret" else [],
        )
        for e in entities
    ]
    specs = _give_way(entities, specs, {e.id for e in entities if cleaned[e.id][2]}, on_skip)
    names = {e.id: spec.name for e, spec in zip(entities, specs, strict=True)}
    rels, changed = _file_facts(entities, names, await mem.graph.facts_by_source(), on_skip)
    # What players still read of a fact a secret one replaced goes first, so the load has it for the secret to close.
    still_read = await mem.graph.facts_by_source(players_read=True)
    read, read_changed = _file_facts(entities, names, still_read, on_skip, players_read=True)
    rels, changed = read + rels, read_changed + changed
    clean = len(rels)
    rels += [spec for _, spec in changed]
    clashing = {c.index: c for c in find_conflicts(list(enumerate(specs)), list(enumerate(rels)))}
    for index, conflict in sorted(clashing.items()):
        if index >= clean:
            on_skip(f"left out the fact {changed[index - clean][0]}: without its control character it repeats another")
        else:  # two current facts an older version kept, now read as one relation ("led_by" and "ruled_by")
            kept = rels[conflict.other_index].describe() if conflict.other_index is not None else "another"
            on_skip(
                f"left out the fact {rels[index].describe()}: it says what {kept}, current too, says otherwise (an "
                "older version kept both): unlink the wrong one"
            )
    rels = [r for i, r in enumerate(rels) if i not in clashing]
    return CampaignFile(campaign=header, entities=specs, relationships=rels)


def _file_facts(
    entities: list[Entity],
    names: dict[int, str],
    facts: dict[int, list[Relationship]],
    on_skip: Callable[[str], None],
    *,
    players_read: bool = False,
) -> tuple[list[RelationshipSpec], list[tuple[str, RelationshipSpec]]]:
    """The entities' facts as a file holds them: those kept as they are, and those written without a control
    character (each with the fact as said), which give way to a fact they now repeat. A fact of an entity left
    out, or an attribute fact with no value (told to ``on_skip``), is left out."""
    rels: list[RelationshipSpec] = []
    changed: list[tuple[str, RelationshipSpec]] = []
    for e in entities:
        for r in facts.get(e.id, []):
            if r.target_id is not None and r.target_id not in names:
                continue
            if r.target_id is None and not (r.value or "").strip():
                on_skip(f"left out {e.name} —{r.type}→ (no value): an attribute fact needs a value in a campaign file")
                continue
            source, target = names[e.id], names[r.target_id] if r.target_id is not None else None
            fact = f"{source} —{r.type!r}→ {target or r.value}"
            if (filed := _file_type(r.type, fact, on_skip)) is None:
                continue
            kind, was_cleaned = filed
            spec = _fact_spec(r, source, kind, target, fact, on_skip, players_read)
            if was_cleaned:
                changed.append((fact, spec))
            else:
                rels.append(spec)
    return rels, changed


def _fact_spec(
    r: Relationship,
    source: str,
    kind: str,
    target: str | None,
    fact: str,
    on_skip: Callable[[str], None],
    players_read: bool = False,
) -> RelationshipSpec:
    """One fact as a file entry; a value longer than a file loads is written whole all the same (told)."""
    fields: dict[str, Any] = {
        "source": source,
        "type": kind,
        "target": target,
        "value": r.value,
        "attributes": _file_attributes(r.attributes),
        "secret": r.visibility == "secret",
    }
    if players_read:
        fields["players_read"] = True
    if r.value is not None and len(r.value) > MAX_FACT_VALUE_CHARS:  # stored before every edge kept it
        on_skip(
            f"wrote {clip(fact, 40)} whole: its value has {len(r.value):,} characters, more than the "
            f"{MAX_FACT_VALUE_CHARS} a campaign file loads; shorten it (longer notes go in the "
            "description) before loading the file back"
        )
        return RelationshipSpec.model_construct(**fields)  # the DM's text: a backup loses none of it
    return RelationshipSpec(**fields)


_CANNOT = "which a campaign file cannot"
_UNFIT = f"it held a control character, {_CANNOT}"


def _without_control(text: str) -> str:
    """``text`` without control or invisible characters (Unicode category C), which an earlier version stored in
    names and relationship types before every edge refused them: an export must not fail on what the database
    holds. Tabs and line breaks are spaces, as they are in names."""
    return "".join(
        " " if char.isspace() else char
        for char in text
        if char.isspace() or not unicodedata.category(char).startswith("C")
    )


def _file_name(entity: Entity, on_skip: Callable[[str], None]) -> tuple[str, list[str], bool]:
    """The entity's name and aliases as a file can hold them (see :func:`_without_control`; a look-alike letter
    of another script, which an earlier version let in too, as the letter it looks like), and whether they had
    to change (said); an alias with nothing left is left out."""
    try:
        return clean_name(entity.name), [clean_name(alias) for alias in entity.aliases], False
    except InvalidInputError:
        name = clean_name(without_look_alikes(_without_control(entity.name)) or f"entity {entity.id}")
        aliases = [
            clean_name(without_look_alikes(kept))
            for alias in entity.aliases
            if (kept := _without_control(alias).strip())
        ]
        said = f" (aliases {', '.join(map(repr, aliases))})" if aliases else ""
        old = [entity.name, *entity.aliases]
        held = ["a control character"] * any(_without_control(n) != n for n in old)
        if looks := {char for name in map(_without_control, old) for char in look_alikes(name)}:
            said_looks = ", ".join(f"{char!r} U+{ord(char):04X} {unicodedata.name(char)}" for char in sorted(looks))
            held.append(f"a letter of another script that looks like one of its own ({said_looks})")
        on_skip(f"wrote the entity {entity.name!r} as {name!r}{said}: it held {' and '.join(held)}, {_CANNOT}")
        return name, aliases, True


def _file_names(names: list[str]) -> list[str]:
    """Hidden names as a file can hold them: one an earlier version stored with a control character, without it."""
    kept: dict[str, str] = {}
    for name in names:
        try:
            cleaned = clean_name(without_look_alikes(_without_control(name)))
        except InvalidInputError:
            continue  # nothing left of it
        kept.setdefault(cleaned.casefold(), cleaned)
    return list(kept.values())


def _give_way(
    entities: list[Entity], specs: list[EntitySpec], cleaned: set[int], on_skip: Callable[[str], None]
) -> list[EntitySpec]:
    """Names cleaned of a control character that now clash with another entity's (or its own name): a clashing
    alias is left out, a clashing name is written with the entity's id ("Bob #12"), each said."""
    renamed: dict[int, str] = {}
    dropped: dict[int, set[int]] = {}
    for conflict in find_conflicts(list(enumerate(specs)), []):
        entity, spec = entities[conflict.index], specs[conflict.index]
        if entity.id not in cleaned:
            continue  # not of the cleaning's making: the file's own check says what is wrong
        if conflict.loc == ("name",):
            renamed[conflict.index] = f"{spec.name} #{entity.id}"
            on_skip(f"wrote the entity {entity.name!r} as {renamed[conflict.index]!r}: {conflict.message}")
        elif conflict.loc[0] == "aliases":
            dropped.setdefault(conflict.index, set()).add(int(conflict.loc[1]))
            on_skip(f"left out the alias {spec.aliases[int(conflict.loc[1])]!r} of {entity.name!r}: {conflict.message}")
    return [
        spec.model_copy(
            update={
                "name": renamed.get(i, spec.name),
                "aliases": [a for k, a in enumerate(spec.aliases) if k not in dropped.get(i, ())],
            }
        )
        for i, spec in enumerate(specs)
    ]


def _file_type(kind: str, fact: str, on_skip: Callable[[str], None]) -> tuple[str, bool] | None:
    """A fact's type as a file can hold it (see :func:`_without_control`) and whether it had to change (said);
    None (the fact left out, and said) when nothing but control characters is left of it."""
    try:
        return relationship_type(kind), False
    except ValueError:
        pass
    try:
        cleaned = relationship_type(_without_control(kind))
    except ValueError:
        on_skip(f"left out the fact {fact}: {_UNFIT}")
        return None
    on_skip(f"wrote the fact {fact} with the type {cleaned!r}: {_UNFIT}")
    return cleaned, True


def _portable(entity: Entity) -> dict[str, Any]:
    """An entity's attributes without what holds only in this database: a session's event entity, before its
    session was left to its provenance, kept the session's id, which in another database is another session."""
    if entity.type == EntityType.event:
        return {k: v for k, v in entity.attributes.items() if k != "session_id"}
    return entity.attributes


def _file_attributes(attributes: dict[str, Any]) -> dict[str, Any]:
    """Attributes as a file can hold them. A value stored before every edge kept to :func:`attribute_value`
    (a mapping, say) is written as its JSON text: an export must not fail on what the database holds."""
    result: dict[str, Any] = {}
    for key, value in attributes.items():
        try:
            result[key] = attribute_value(value)
        except ValueError:
            result[key] = json.dumps(value, ensure_ascii=False)
    return result
