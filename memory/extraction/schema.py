"""What extractors exchange with the pipeline: the entities they know, what they propose, and the tally.

``ExtractionResult`` doubles as the LLM's structured-output schema, so its scalar fields are deliberately loose
(plain strings and floats), and its items are validated one by one: one bad item must be dropped and counted by
validation, not make pydantic reject the whole answer.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, Self

from pydantic import BaseModel, Field, ModelWrapValidatorHandler, PrivateAttr, ValidationError, model_validator

from memory.errors import validation_problems
from memory.models import EntityType, Entry, ReviewStatus


class KnownEntity(BaseModel):
    """An entity of the campaign as extractors see it: what it is called and what kind of thing it is."""

    id: int
    name: str
    type: EntityType
    aliases: list[str] = Field(default_factory=list)
    status: ReviewStatus = ReviewStatus.accepted
    heard_as: list[str] = Field(default_factory=list)  # what the recogniser writes for it: evidence of a mention
    played_by: list[str] = Field(default_factory=list)  # a player character's players, casefolded: who says "I"


def players(attributes: Mapping[str, object]) -> list[str]:
    """Who plays a character, casefolded, from its ``played_by`` attribute (one name or several)."""
    value = attributes.get("played_by")
    listed = value if isinstance(value, list) else [] if value is None else [value]
    return [str(p).strip().casefold() for p in listed]


class EventKind(StrEnum):
    death = "death"
    arrival = "arrival"
    acquisition = "acquisition"
    quest = "quest"
    battle = "battle"


@dataclass
class Event:
    """A turning point one line tells: its name, its kind, who took part, and where it happened; ``span``: where the
    clause rule read it in the tagged line (its clause up to the rule's end), to show the DM that part of the line."""

    kind: EventKind
    name: str
    participants: list[KnownEntity] = field(default_factory=list)
    place: KnownEntity | None = None
    span: tuple[int, int] | None = None


class ProposedEntity(BaseModel):
    name: str = Field(description="the name exactly as said in the text")
    type: str = Field(description="one of: " + ", ".join(t.value for t in EntityType))
    description: str = Field(description="one short sentence from what the text says, or empty")
    confidence: float = Field(description="0.0-1.0: how sure the text makes it that this is a named entity")
    entry_ids: list[int] = Field(description="ids of the lines that introduce it")


class ProposedFact(BaseModel):
    """``source —type→ target`` between two entities, or an attribute ``source.type = value``."""

    source: str = Field(description="name of the entity the fact is about")
    type: str = Field(description="snake_case relation such as located_in, member_of, leader_of, occupation")
    target: str | None = Field(description="name of the other entity, or null for an attribute fact")
    value: str | None = Field(description="the attribute value when target is null, else null")
    confidence: float = Field(description="0.0-1.0, calibrated: 0.9 plainly stated, 0.5 implied, 0.3 a guess")
    basis: str = Field(description="stated (said outright in the text) or inferred (implied by it)")
    entry_ids: list[int] = Field(description="ids of the lines the fact comes from")


class ExtractionAnswer(BaseModel):
    """The LLM's structured output (kept free of bookkeeping fields: strict mode makes every field required)."""

    entities: list[ProposedEntity] = Field(description="new named entities not among the known ones")
    facts: list[ProposedFact] = Field(description="facts stated in (or clearly implied by) the lines")

    _dropped: list[str] = PrivateAttr(default_factory=list)

    @property
    def dropped(self) -> list[str]:
        """What was wrong with each item dropped while this answer was read (``entities.3: name: …``)."""
        return self._dropped

    @model_validator(mode="wrap")
    @classmethod
    def _item_by_item(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        dropped: list[str] = []
        if isinstance(data, dict):
            data = dict(data)
            for key, model in (("entities", ProposedEntity), ("facts", ProposedFact)):
                if isinstance(items := data.get(key), list):
                    kept = []
                    for index, item in enumerate(items):
                        try:
                            kept.append(model.model_validate(item))
                        except ValidationError as exc:
                            dropped.append(f"{key}.{index}: {validation_problems(exc)}")
                    data[key] = kept
        answer = handler(data)
        answer._dropped = dropped
        return answer


class ExtractionResult(ExtractionAnswer):
    """Validated proposals, plus what the extractor had to throw away on the way."""

    invalid: int = 0  # malformed items dropped
    errors: list[str] = Field(default_factory=list)  # whole answers lost (LLM errors), one message each
    unread: list[int] = Field(default_factory=list)  # ids of the lines those lost answers were about


class Extractor(Protocol):
    async def extract(
        self,
        entries: Sequence[Entry],
        known: Sequence[KnownEntity],
        *,
        narrates: Callable[[Entry], bool] | None = None,
        retold: Collection[int] = frozenset(),
        scenes: Mapping[int, Sequence[KnownEntity]] | None = None,
        meant: Mapping[int, Sequence[Event]] | None = None,
        here: KnownEntity | None = None,
    ) -> ExtractionResult:
        """Propose entities and facts found in ``entries``; ``known`` are the campaign's entities; ``narrates``
        tells the DM's lines, as found over the whole session (a slice alone may be a player's monologue);
        ``retold``: the ids of the DM's recap of the story so far at the session's opening; ``scenes``: the places
        the session's scene moved to, by the ids of the lines that tell it (``events.scene_arrivals``); ``meant``: the
        turning points the DM's lines tell by meaning, by line id (``pipeline.meaning_events``); ``here``: where the
        party is as ``entries`` begin (``pipeline.SceneMoves.here``)."""
        ...


class ExtractionStats(BaseModel):
    """What one extraction run saw and did; fact counts are of facts newly stored by this run."""

    entries_seen: int = 0
    entries_skipped_trivial: int = 0
    entries_skipped_offgame: int = 0  # sponsor reads, pre-show, breaks, dice and banter (memory.offgame)
    entities_proposed: int = 0
    entities_merged: int = 0  # proposals that turned out to be an existing entity under another spelling
    entities_created: int = 0
    facts_proposed: int = 0
    facts_accepted: int = 0
    facts_pending: int = 0
    facts_unchanged: int = 0  # already in the graph (or rejected by the DM before): nothing written
    items_invalid: int = 0
    llm_errors: int = 0
    entries_fallback: int = 0  # lines the rules read instead, the LLM's answer about them being unusable

    def add(self, other: ExtractionStats) -> ExtractionStats:
        return ExtractionStats(**{k: getattr(self, k) + getattr(other, k) for k in ExtractionStats.model_fields})
