"""The campaign file format: what a DM writes in YAML, as pydantic models.

```yaml
campaign: {name: The Sunken Crown, system: D&D 5e, description: …}   # optional
entities:
  - {name: Eldrinax, type: npc, aliases: [The Ash Wyrm], secret: true, attributes: {age: 900}}
  - {name: Frumpkin, type: npc, heard_as: [from skin]}   # what speech-to-text writes for the name
  - {name: The Pale Stranger, type: npc, secret: true, hidden_names: [Vaskerrin Holt]}   # renamed: old name hidden
  - {name: Mentiri, type: npc, not_heard_as: [manta ray]}   # what it writes that is never the name
relationships:
  - {source: Eldrinax, type: guards, target: The Sunken Crown}
  - {source: Eldrinax, type: hoards, value: drowned gold, secret: true}   # an attribute fact
  - {source: Eldrinax, type: status, value: asleep, players_read: true}   # replaced by a secret fact: players' view
```

Every model forbids unknown keys: a typo such as ``alias:`` must be an error, not a silently empty field.
The models check one item at a time; :func:`find_conflicts` checks the items against each other (duplicate
names, relationships to unknown entities). ``campaigns.files`` runs both and adds file lines to the errors.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    StrictStr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from memory.campaigns import MAX_NAME
from memory.graph import SINGLE_VALUED
from memory.graph.rules import HOLDING, held_by_many, one_way
from memory.models import SYMMETRIC, EntityIn, EntityType, Provenance, Source, Visibility, relationship_type
from memory.text import (
    attribute_value,
    check_alias_count,
    clean_name,
    heard_as_phrases,
    not_heard_as_phrases,
    shown_text,
    storable,
    value_within_limit,
)

Scalar = str | int | float | bool | None


def _nfc(value: str) -> str:
    # The same name typed on two keyboards can arrive composed (é) or decomposed (e + ◌́); without NFC they
    # would be two different entities that look identical.
    return unicodedata.normalize("NFC", value)


def normalise_name(value: str) -> str:
    """The store's own rules (:func:`clean_name`: NFC, no invisible or control characters, trimmed), as a
    validation error."""
    if not value.split():  # clean_name's own words ("name must not be empty") would follow the field's name
        raise PydanticCustomError("name_empty", "must not be empty")
    try:
        return clean_name(value)
    except ValueError as exc:
        raise PydanticCustomError("name_invalid", str(exc)) from None


def name_key(name: str) -> str:
    """How names are compared: case-insensitively, after the same normalisation as :func:`normalise_name`."""
    return " ".join(_nfc(name).split()).casefold()


def _none_as_empty(factory: type) -> BeforeValidator:
    # ``aliases:`` with nothing after it is YAML null; a DM means "none", not a type error.
    return BeforeValidator(lambda v: factory() if v is None else v)


#: A name of an entity (or a reference to one): NFC, no control characters, trimmed, at most 200 characters.
Name = Annotated[StrictStr, AfterValidator(normalise_name)]
# Stripped because a YAML folded block (``description: >``) ends with a newline nobody meant to write.
Text = Annotated[StrictStr, AfterValidator(lambda v: shown_text(storable(_nfc(v)).strip())), _none_as_empty(str)]
#: Text of one line (a campaign's system), as the store takes it: a tab or a line break inside is refused at its line
#: here, not by ``campaign load`` after the file was read, naming no line.
OneLine = Annotated[
    StrictStr, AfterValidator(lambda v: shown_text(storable(_nfc(v)).strip(), lines=False)), _none_as_empty(str)
]
AttributeValue = Annotated[Scalar | list[Scalar], BeforeValidator(attribute_value)]
Attributes = Annotated[dict[str, AttributeValue], AfterValidator(lambda v: _keys(storable(v))), _none_as_empty(dict)]


def _keys(attributes: dict[str, Any]) -> dict[str, Any]:
    """Attribute keys as the store takes them: one line, nothing hidden (the values are checked one by one)."""
    for key in attributes:
        try:
            shown_text(key, lines=False)
        except ValueError as exc:
            raise PydanticCustomError(
                "attribute_key", "key {key} {problem}", {"key": repr(key), "problem": str(exc)}
            ) from None
    return attributes


def _heard_as(phrases: list[str]) -> list[str]:
    """The store's rules for heard-as phrases (:func:`heard_as_phrases`), as a validation error."""
    try:
        return heard_as_phrases(phrases)
    except ValueError as exc:
        raise PydanticCustomError("heard_as", str(exc).removeprefix("heard as: ")) from None


def _not_heard_as(phrases: list[str]) -> list[str]:
    """The store's rules for not-heard-as phrases (:func:`not_heard_as_phrases`), as a validation error."""
    try:
        return not_heard_as_phrases(phrases)
    except ValueError as exc:
        raise PydanticCustomError("not_heard_as", str(exc).removeprefix("not heard as: ")) from None


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _campaign_name(name: str) -> str:
    if len(name) > MAX_NAME:  # shorter than an entity's: see MAX_NAME
        raise PydanticCustomError(
            "campaign_name_too_long",
            "has {length} characters; a campaign name is at most {limit}: choose a shorter one",
            {"length": len(name), "limit": MAX_NAME},
        )
    return name


class CampaignHeader(_Strict):
    """The optional ``campaign:`` block."""

    name: Annotated[Name, AfterValidator(_campaign_name)] | None = None
    description: Text = ""
    system: OneLine = ""  # rules system, e.g. "D&D 5e"
    #: Names of secret entities since removed: players never read them, in what was said or is said later.
    hidden_names: Annotated[list[Name], _none_as_empty(list)] = Field(default_factory=list)


class EntitySpec(_Strict):
    name: Name
    type: EntityType
    aliases: Annotated[list[Name], _none_as_empty(list)] = Field(default_factory=list)
    #: What speech-to-text writes for the name ("from skin" / Frumpkin): corrected to it, never shown to players.
    heard_as: Annotated[list[StrictStr], _none_as_empty(list), AfterValidator(_heard_as)] = Field(default_factory=list)
    #: What it writes that is never the name ("manta ray" / Mentiri): never corrected to it, never shown to players.
    not_heard_as: Annotated[list[StrictStr], _none_as_empty(list), AfterValidator(_not_heard_as)] = Field(
        default_factory=list
    )
    description: Text = ""
    attributes: Attributes = Field(default_factory=dict)
    secret: StrictBool = False  # DM-only: never shown to players
    #: Names players never read while the entity is secret: the names it had before a rename, and those of entities
    #: merged into it (an alias among them too). A load adds them to those it had; a public entity has none.
    hidden_names: Annotated[list[Name], _none_as_empty(list)] = Field(default_factory=list)
    #: The name of the entity this entry renames (its id, facts and mentions stay); ignored once it is renamed.
    renamed_from: Name | None = None
    #: Where the entry is written (``file.yaml:12``), for the problems only loading finds. Set by the reader with
    #: ``object.__setattr__``: not a field nor a private attribute, so it is neither dumped nor compared.
    where: ClassVar[str] = ""

    @field_validator("type", mode="before")
    @classmethod
    def _type_any_case(cls, v: Any) -> Any:
        return v.strip().casefold() if isinstance(v, str) else v

    @field_validator("aliases")
    @classmethod
    def _dedupe_aliases(cls, aliases: list[str], info: ValidationInfo) -> list[str]:
        # Repeating an alias, or listing the entity's own name, is harmless; keep the first spelling once.
        seen = {name_key(info.data["name"])} if "name" in info.data else set()
        unique = []
        for alias in aliases:
            if name_key(alias) not in seen:
                seen.add(name_key(alias))
                unique.append(alias)
        return check_alias_count(unique)

    def located(self, number: int) -> str:
        """The entry as a file problem names it: ``file.yaml:12: entity #3 'Eldrinax'`` (``number`` from 1)."""
        item = f"entity #{number} {self.name!r}"
        return f"{self.where}: {item}" if self.where else item

    @property
    def visibility(self) -> Visibility:
        return Visibility.secret if self.secret else Visibility.public

    def left_out(self) -> list[str]:
        """The store's fields this entry does not state: an entity already known keeps its own (a short entry
        naming a secret NPC only to link it must not make it public, nor drop its aliases)."""
        stated = self.model_fields_set
        fields = {
            "aliases": "aliases",
            "heard_as": "heard_as",
            "not_heard_as": "not_heard_as",
            "description": "description",
            "attributes": "attributes",
            "secret": "visibility",
        }
        return [field for key, field in fields.items() if key not in stated]

    def to_entity_in(self) -> EntityIn:
        """The store's input model; facts from a campaign file are the DM's own, so fully confident."""
        return EntityIn(
            name=self.name,
            type=self.type,
            description=self.description,
            aliases=list(self.aliases),
            heard_as=list(self.heard_as),
            not_heard_as=list(self.not_heard_as),
            attributes=dict(self.attributes),
            visibility=self.visibility,
            provenance=Provenance(source=Source.campaign_file, confidence=1.0, dm_confirmed=True),
        )


def normalise_relationship_type(value: str) -> str:
    """``"Works At"`` → ``works_at``: :func:`relationship_type`, the store's own rule, so file and store agree."""
    try:
        return relationship_type(value)
    except ValueError as exc:
        raise PydanticCustomError("relationship_type", str(exc)) from None


class RelationshipSpec(_Strict):
    """An edge to another entity (``target``), or an attribute fact such as Mira —occupation→ blacksmith
    (``value``): the store keeps both as facts with their own visibility and history."""

    source: Name
    type: Annotated[StrictStr, AfterValidator(normalise_relationship_type)]
    target: Name | None = None
    value: (
        Annotated[StrictStr, AfterValidator(lambda v: value_within_limit(shown_text(storable(_nfc(v)).strip())))] | None
    ) = None
    attributes: Attributes = Field(default_factory=dict)
    secret: StrictBool = False  # DM-only, even between public entities
    #: A public fact a secret one has replaced: history for the DM, but what players still read (see
    #: ``memory.graph.sql.PLAYERS_FACTS``). Loaded before the file's other facts, which then close it.
    players_read: StrictBool = False

    @model_validator(mode="after")
    def _target_or_value(self) -> RelationshipSpec:
        if self.target is not None and self.value is not None:
            raise ValueError("has both a target and a value; a relationship has one of them")
        if self.target is None and not self.value:
            raise ValueError("needs a target (an entity) or a value (an attribute fact, e.g. value: blacksmith)")
        return self

    @property
    def visibility(self) -> Visibility:
        return Visibility.secret if self.secret else Visibility.public

    def describe(self) -> str:
        return f"{self.source} -[{self.type}]-> {self.target if self.target is not None else self.value}"


def fact_key(fact: RelationshipSpec) -> str:
    """A fact of a file as one key, case aside: an import names the file each of its facts was read from by it."""
    target = name_key(fact.target) if fact.target is not None else ""
    return "\t".join((name_key(fact.source), fact.type, target, fact.value or ""))


@dataclass(frozen=True)
class Conflict:
    """One problem between items: ``loc`` is the field inside item ``index`` of ``section`` that is wrong."""

    section: Literal["entities", "relationships"]
    index: int
    loc: tuple[str | int, ...]
    message: str
    other_index: int | None = None  # the earlier item it collides with, in the same section


def find_conflicts(
    entities: Sequence[tuple[int, EntitySpec]],
    relationships: Sequence[tuple[int, RelationshipSpec]],
    unchecked_names: frozenset[str] = frozenset(),
    *,
    renames_first: bool = False,
) -> list[Conflict]:
    """Duplicate names/aliases, relationships naming no entity, and repeated relationships.

    Items come with their position in the file so conflicts can point back at them. ``unchecked_names``
    (as :func:`name_key`) are entities that exist in the file but failed their own validation: relationships
    to them are not reported as unknown, because the real error is already reported on the entity.
    ``renames_first``: a ``renamed_from`` may be the name of a later entry, a new entity of the name the rename
    frees (an import tells the rename by the tool's id; loaded in order, the rename comes first).
    """
    conflicts: list[Conflict] = []
    owner: dict[str, tuple[int, EntitySpec, str]] = {}  # name_key → (index, entity, "name"/"alias")
    for index, entity in entities:
        spellings: list[tuple[tuple[str | int, ...], str, str]] = [(("name",), entity.name, "name")]
        spellings += [(("aliases", i), alias, "alias") for i, alias in enumerate(entity.aliases)]
        for loc, spelling, role in spellings:
            key = name_key(spelling)
            if key in owner:
                other_index, other, other_role = owner[key]
                already = "the name" if other_role == "name" else "an alias"
                message = f"{role} {spelling!r} is already {already} of entity #{other_index + 1} {other.name!r}"
                conflicts.append(Conflict("entities", index, loc, message, other_index))
            else:
                owner[key] = (index, entity, role)

    renamed: dict[str, int] = {}
    for index, entity in entities:
        if entity.renamed_from is None:
            continue
        key = name_key(entity.renamed_from)
        if (
            key in owner
            and owner[key][0] != index
            and not (renames_first and owner[key][0] > index and owner[key][2] == "name")
        ):
            other_index, other, _ = owner[key]
            message = f"renamed_from {entity.renamed_from!r} is entity #{other_index + 1} {other.name!r} of this file"
            conflicts.append(Conflict("entities", index, ("renamed_from",), message, other_index))
        elif key in renamed:
            message = f"renamed_from {entity.renamed_from!r} is renamed by entity #{renamed[key] + 1} already"
            conflicts.append(Conflict("entities", index, ("renamed_from",), message, renamed[key]))
        else:
            renamed[key] = index

    seen_edges: dict[tuple[str, str, str | None, str | None], tuple[int, tuple[str, str, str | None, str | None]]] = {}
    # An attribute fact, or an edge of a type one has once ("lives_in"), closes the other current one of its
    # source and type: two in one file would close each other at every load, and only one would survive.
    single: dict[tuple[str, str, bool], tuple[int, RelationshipSpec]] = {}
    for index, rel in relationships:
        fields = ("source", "target") if rel.target is not None else ("source",)
        resolved: list[str] = []
        for field in fields:
            spelling = getattr(rel, field)
            key = name_key(spelling)
            if key in owner:
                resolved.append(name_key(owner[key][1].name))
                continue
            if key in unchecked_names:
                continue
            hint = get_close_matches(key, list(owner), n=1, cutoff=0.75)
            suggestion = f"; did you mean {owner[hint[0]][1].name!r}?" if hint else ""
            conflicts.append(
                Conflict(
                    "relationships",
                    index,
                    (field,),
                    f"{field} {spelling!r} is not the name or alias of any entity in this file{suggestion}",
                )
            )
        if len(resolved) == 2 and resolved[0] == resolved[1]:
            conflicts.append(
                Conflict(
                    "relationships",
                    index,
                    ("target",),
                    f"target {rel.target!r} is {owner[name_key(rel.source)][1].name!r} itself: a relationship connects "
                    "two entities (a state of its own is a value, e.g. value: dead)",
                )
            )
        elif len(resolved) == len(fields):
            stated = (resolved[0], rel.type, resolved[1] if rel.target is not None else None, rel.value)
            # weighed as the graph weighs it: "Balcor leader_of Greywatch" is "Greywatch ruled_by Balcor"
            type, source, target = one_way(rel.type, stated[0], stated[2])
            edge = (source, type, target, rel.value)
            if rel.type in SYMMETRIC and (target, type, source, None) in seen_edges:
                continue  # the same symmetric fact from the other end ("A allied_with B", "B allied_with A"): one fact
            if edge in seen_edges:
                if seen_edges[edge][1] != stated:
                    continue  # the same fact from its other end ("Bow owned_by Vex", "Vex has Bow"): one fact
                conflicts.append(
                    Conflict(
                        "relationships",
                        index,
                        (),
                        f"repeats relationship #{seen_edges[edge][0] + 1}",
                        seen_edges[edge][0],
                    )
                )
            else:
                seen_edges[edge] = (index, stated)
                if (rel.value is not None or _one_at_a_time(type, owner[source][1])) and not rel.players_read:
                    key2 = (source, type, rel.value is None)  # values and edges are settled apart
                    if key2 in single:
                        conflicts.append(_two_at_a_time(index, rel, *single[key2], type, source == resolved[0]))
                    else:
                        single[key2] = (index, rel)
    return conflicts


def _one_at_a_time(type: str, entity: EntitySpec) -> bool:
    """Whether ``entity`` has one fact of ``type`` (as :func:`one_way` weighs it) at a time: a single-valued type,
    but for the holders of a kind of item many hold (``held_by_many``), which add up."""
    return type in SINGLE_VALUED and not (type in HOLDING and held_by_many(entity.attributes))


def _two_at_a_time(
    index: int, rel: RelationshipSpec, other_index: int, other: RelationshipSpec, type: str, from_source: bool
) -> Conflict:
    """Relationship ``index`` gives its entity (its source, or its target if not ``from_source``) a second fact of
    ``type``, which it has one of at a time, beside relationship ``other_index``; either may state it from its other
    end (``leader_of`` for ``ruled_by``), which the message says, as the DM wrote neither as ``type``."""
    turned = "; ".join(
        f"{r.source} {r.type} {r.target} is {' '.join(map(str, (ends[1], ends[0], ends[2])))}"
        for r in (other, rel)
        if r.type != type and r.target is not None and (ends := one_way(r.type, r.source, r.target))
    )
    return Conflict(
        "relationships",
        index,
        (),
        f"{rel.source if from_source else rel.target} has one {type!r} at a time, and relationship #{other_index + 1} "
        f"gives another{f' ({turned})' if turned else ''}: keep one (several values of an attribute go in the "
        "entity's attributes, as a list)",
        other_index,
    )


#: The validation context key of a file an import made: see ``find_conflicts``'s ``renames_first``.
RENAMES_FIRST = "renames_first"


class CampaignFile(_Strict):
    """A whole campaign file. Constructing one directly runs the same cross-item checks as loading a file."""

    campaign: CampaignHeader | None = None
    entities: Annotated[list[EntitySpec], _none_as_empty(list)] = Field(default_factory=list)
    relationships: Annotated[list[RelationshipSpec], _none_as_empty(list)] = Field(default_factory=list)

    _index: dict[str, EntitySpec] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> CampaignFile:
        renames_first = bool(info.context and info.context.get(RENAMES_FIRST))
        conflicts = find_conflicts(
            list(enumerate(self.entities)), list(enumerate(self.relationships)), renames_first=renames_first
        )
        if conflicts:
            first = conflicts[0]
            noun = "entity" if first.section == "entities" else "relationship"
            more = f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1 else ""
            raise ValueError(f"{noun} #{first.index + 1}: {first.message}{more}")
        for entity in self.entities:
            for spelling in (entity.name, *entity.aliases):
                self._index[name_key(spelling)] = entity
        return self

    def find_entity(self, name: str) -> EntitySpec | None:
        """The entity called ``name`` or having it as an alias, case-insensitively."""
        return self._index.get(name_key(name))
