"""Checking proposals before they reach the graph: whatever an extractor (an LLM above all) says is untrusted.

An item that is malformed, names an entity that is neither known nor proposed alongside it, cites lines outside
the batch, or repeats another item is dropped and counted, never raised: one bad item must not cost the batch.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Collection, Sequence

from memory.extraction.names import NameResolver, normalize_name
from memory.extraction.schema import ExtractionAnswer, ExtractionResult, KnownEntity, ProposedEntity, ProposedFact
from memory.models import EntityType
from memory.text import clean_name, clip, storable, value_within_limit, without_hidden

log = logging.getLogger(__name__)

_REL_TYPE = re.compile(r"^[a-z][a-z0-9_]{0,49}$")
BASES = frozenset({"stated", "inferred"})


def validate_result(
    answer: ExtractionAnswer, known: Sequence[KnownEntity], entry_ids: Collection[int]
) -> ExtractionResult:
    """The well-formed, distinct proposals of ``answer``; ``invalid`` adds what was dropped here."""
    invalid = (answer.invalid if isinstance(answer, ExtractionResult) else 0) + len(answer.dropped)
    errors = list(answer.errors) if isinstance(answer, ExtractionResult) else []
    unread = list(answer.unread) if isinstance(answer, ExtractionResult) else []
    entities, names, dropped = _distinct_entities(answer.entities, entry_ids)
    facts, dropped_facts = _distinct_facts(answer.facts, entry_ids, NameResolver(known), names)
    invalid += dropped + dropped_facts
    return ExtractionResult(entities=entities, facts=facts, invalid=invalid, errors=errors, unread=unread)


def _distinct_entities(
    items: Sequence[ProposedEntity], entry_ids: Collection[int]
) -> tuple[list[ProposedEntity], set[str], int]:
    """The well-formed entities, once per name; their names (normal form), and how many were dropped."""
    entities: list[ProposedEntity] = []
    names: set[str] = set()
    invalid = 0
    for item in items:
        cleaned = _entity(item, entry_ids)
        norm = normalize_name(cleaned.name) if cleaned else ""
        if cleaned is None or not norm or norm in names:
            invalid += 1
            continue
        names.add(norm)
        entities.append(cleaned)
    return entities, names, invalid


def _distinct_facts(
    items: Sequence[ProposedFact], entry_ids: Collection[int], resolver: NameResolver, proposed_names: set[str]
) -> tuple[list[ProposedFact], int]:
    """The well-formed facts between entities known or proposed, once each, and how many were dropped."""
    facts: list[ProposedFact] = []
    seen: set[tuple[str, str, str | None, str | None]] = set()
    invalid = 0
    too_long: list[str] = []
    for item in items:
        cleaned = _fact(item, entry_ids, too_long)
        if cleaned is None:
            invalid += 1
            continue
        source = _canonical(cleaned.source, resolver, proposed_names)
        target = _canonical(cleaned.target, resolver, proposed_names) if cleaned.target is not None else None
        key = (source or "", cleaned.type, target, cleaned.value.casefold() if cleaned.value else None)
        if source is None or (cleaned.target is not None and target is None) or source == target or key in seen:
            invalid += 1
            continue
        seen.add(key)
        facts.append(cleaned)
    if too_long:  # one warning an answer: a model writing paragraphs as values must not flood the log
        more = f" (and {len(too_long) - 1:,} more facts too long)" if len(too_long) > 1 else ""
        log.warning("extraction dropped a fact: %s%s", too_long[0], more)
    return facts, invalid


def _canonical(name: str, resolver: NameResolver, proposed: set[str]) -> str | None:
    """A stable key for the entity ``name`` refers to, or None if it refers to nothing known or proposed."""
    hit, _ = resolver.resolve(name)
    if hit is not None:
        return f"#{hit.id}"
    norm = normalize_name(name)
    return norm if norm in proposed else None


def _confidence(value: float) -> bool:
    return isinstance(value, int | float) and not math.isnan(value) and 0.0 <= value <= 1.0


def _evidence(ids: list[int], entry_ids: Collection[int]) -> list[int] | None:
    """Cited lines must be in the batch; citing none means the batch as a whole."""
    if any(i not in entry_ids for i in ids):
        return None
    return sorted(set(ids)) or sorted(entry_ids)


def _entity(item: ProposedEntity, entry_ids: Collection[int]) -> ProposedEntity | None:
    try:
        name = clean_name(item.name)
        kind = EntityType(item.type.strip().casefold())
        # what the store refuses a DM (a bidi override, a control character) is left out of a model's text
        description = storable(without_hidden(" ".join(item.description.split())[:500]))
    except ValueError:
        return None
    evidence = _evidence(item.entry_ids, entry_ids)
    if not _confidence(item.confidence) or evidence is None:
        return None
    return ProposedEntity(
        name=name, type=kind.value, description=description, confidence=item.confidence, entry_ids=evidence
    )


def _fact(item: ProposedFact, entry_ids: Collection[int], too_long: list[str] | None = None) -> ProposedFact | None:
    """The item cleaned, or None; a value too long is said in ``too_long`` (else in the log)."""
    rel_type = "_".join(item.type.strip().casefold().replace("-", " ").split())
    basis = item.basis.strip().casefold()
    value = without_hidden(" ".join(item.value.split())) if item.value is not None else None
    target = item.target.strip() if item.target is not None else None
    try:
        source = clean_name(item.source)
        target = clean_name(target) if target else None
        storable([rel_type, value])
    except ValueError:
        return None
    evidence = _evidence(item.entry_ids, entry_ids)
    if (
        not _REL_TYPE.match(rel_type)
        or basis not in BASES
        or not _confidence(item.confidence)
        or evidence is None
        or (target is None) == (not value)  # exactly one of a target entity and a value
    ):
        return None
    try:
        value_within_limit(value or "")
    except ValueError as exc:  # dropped, not cut: a state cut short and accepted would be wrong
        said = f"{source} —{rel_type}→ {clip(value or '', 11)} {exc}"
        if too_long is None:
            log.warning("extraction dropped a fact: %s", said)
        else:
            too_long.append(said)
        return None
    return ProposedFact(
        source=source,
        type=rel_type,
        target=target,
        value=value or None,
        confidence=item.confidence,
        basis=basis,
        entry_ids=evidence,
    )
