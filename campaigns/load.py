"""Campaign files into and out of a campaign's memory.

Loading is one transaction and idempotent: entities are matched by name (case-insensitively) and updated in
place, relationships already present keep all but the visibility the file gives, so loading a file twice changes
nothing. An entry renames the entity named in its ``renamed_from:``; one named like another entity's alias is
refused.
Entities the file no longer mentions are kept: they may have come from play, and only the DM deletes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from campaigns.schema import CampaignFile, CampaignHeader, EntitySpec, RelationshipSpec
from memory.errors import AlreadyExistsError, MemoryError_
from memory.models import Entity, EntityType, Provenance, RelationshipIn, ReviewStatus, Source, attribute_value
from memory.store import CampaignMemory

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]

RENAME_HINT = "; to rename an entity, give this entry `renamed_from:` its current name"

#: New rows before the planner is told about them (see ``KnowledgeGraph.refresh_statistics``), then each time
#: their number has doubled. Until then a name check costs the square of the rows new so far: at 1,000, 0.4 s.
_STATISTICS_AFTER = 50


class LoadReport(BaseModel):
    entities_created: int = 0
    entities_updated: int = 0
    entities_unchanged: int = 0
    relationships_created: int = 0
    relationships_updated: int = 0
    relationships_unchanged: int = 0

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


async def apply_campaign_file(
    mem: CampaignMemory, file: CampaignFile, *, progress: Progress | None = None
) -> LoadReport:
    """Bring the campaign's graph in line with ``file``, all or nothing."""
    report = LoadReport()
    total = len(file.entities) + len(file.relationships)
    done = 0
    provenance = Provenance(source=Source.campaign_file, confidence=1.0, dm_confirmed=True)
    statistics_due = _STATISTICS_AFTER
    async with mem.transaction() as tx:
        await tx.graph.lock()  # before any write: see ``KnowledgeGraph.lock``
        ids: dict[str, int] = {}
        for number, spec in enumerate(file.entities, start=1):
            try:
                entity, outcome = await tx.graph.upsert_entity(
                    spec.to_entity_in(), renamed_from=spec.renamed_from, keep=spec.left_out()
                )
            except MemoryError_ as exc:  # a clash with the database: the file could not know, so say where it is
                hint = RENAME_HINT if isinstance(exc, AlreadyExistsError) else ""
                raise type(exc)(f"{spec.located(number)}: {exc}{hint}") from None
            setattr(report, f"entities_{outcome}", getattr(report, f"entities_{outcome}") + 1)
            statistics_due = await _refresh_statistics_when_due(tx, report, statistics_due)
            ids[spec.name] = entity.id
            done += 1
            if progress:
                progress(done, total)
        for rel in file.relationships:
            source = file.find_entity(rel.source)
            target = file.find_entity(rel.target) if rel.target is not None else None
            assert source is not None and (target is not None or rel.target is None)  # the schema checked them
            fact, created = await tx.graph.ensure_relationship(
                RelationshipIn(
                    source_id=ids[source.name],
                    type=rel.type,
                    target_id=ids[target.name] if target is not None else None,
                    value=rel.value,
                    attributes=dict(rel.attributes),
                    visibility=rel.visibility,
                    provenance=provenance,
                    status=ReviewStatus.accepted,
                )
            )
            if created:
                report.relationships_created += 1
                statistics_due = await _refresh_statistics_when_due(tx, report, statistics_due)
            elif fact.visibility != rel.visibility:
                # The file is the DM's word on what players may see, as it is for entities.
                await tx.graph.set_relationship(
                    fact.id, ReviewStatus.accepted, dm_confirmed=True, visibility=rel.visibility
                )
                report.relationships_updated += 1
            else:
                report.relationships_unchanged += 1
            done += 1
            if progress:
                progress(done, total)
    return report


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
    ``on_skip``: the rest of the campaign must still export."""
    if waiting := await mem.review.count():
        on_skip(
            f"left out {waiting} item{'s' * (waiting != 1)} waiting for review: a campaign file holds only canon, "
            "so accept them first to keep them"
        )
    entities = await mem.graph.list_entities()
    by_id = {e.id: e for e in entities}
    specs = [
        EntitySpec(
            name=e.name,
            type=e.type,
            aliases=e.aliases,
            description=e.description,
            attributes=_file_attributes(_portable(e)),
            secret=e.visibility == "secret",
        )
        for e in entities
    ]
    rels: list[RelationshipSpec] = []
    for e in entities:
        for r in await mem.graph.relationships_of(e.id, include_secret=True):
            if r.source_id != e.id or (r.target_id is not None and r.target_id not in by_id):
                continue
            if r.target_id is None and not (r.value or "").strip():
                on_skip(f"left out {e.name} —{r.type}→ (no value): an attribute fact needs a value in a campaign file")
            else:
                rels.append(
                    RelationshipSpec(
                        source=e.name,
                        type=r.type,
                        target=by_id[r.target_id].name if r.target_id is not None else None,
                        value=r.value,
                        attributes=_file_attributes(r.attributes),
                        secret=r.visibility == "secret",
                    )
                )
    return CampaignFile(campaign=header, entities=specs, relationships=rels)


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
