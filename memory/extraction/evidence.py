"""The gate before an extracted fact is accepted without the DM: its cited lines must say it.

An extractor (an LLM above all) may cite any line of its batch for any fact; a confident answer citing an
unrelated line, or a fact a prompt-injection line asked for, must wait for the DM. A fact passes only if

- its cited lines mention both ends: by name, alias or heard-as phrase, in the text after correction (or named
  by one of the line's corrections);
- its relation is one the schema below allows between those entity types (an attribute: one it allows for the
  entity's type);
- an attribute's free-text value is in a cited line, word for word.

Everything else waits for review with the reason, which the DM sees on the card. Plain Python, no database.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from memory.correction.text import name_norm
from memory.gazetteer import Gazetteer
from memory.models import PERSON_TYPES, EntityType, Entry

_PERSON = PERSON_TYPES
_AGENT = _PERSON | {EntityType.faction}
_ANY = frozenset(EntityType)
_THINGS = _ANY - {EntityType.concept}

#: relation -> (the source types, the target types) it may link. A relation not listed waits for the DM.
RELATIONS: dict[str, tuple[frozenset[EntityType], frozenset[EntityType]]] = {
    **dict.fromkeys(
        ("located_in", "located_at", "lives_in", "works_in", "based_in", "born_in", "found_in", "hidden_in"),
        (_THINGS, frozenset({EntityType.location})),
    ),
    **dict.fromkeys(("member_of", "belongs_to"), (_AGENT, frozenset({EntityType.faction}))),
    "leader_of": (_AGENT, frozenset({EntityType.faction, EntityType.location})),
    **dict.fromkeys(("works_for", "serves"), (_AGENT, _AGENT)),
    **dict.fromkeys(
        ("child_of", "parent_of", "sibling_of", "spouse_of", "mentor_of", "student_of"), (_PERSON, _PERSON)
    ),
    **dict.fromkeys(
        ("ally_of", "allied_with", "enemy_of", "hostile_to", "friend_of", "rival_of", "knows"), (_AGENT, _AGENT)
    ),
    "killed_by": (_PERSON, _AGENT),
    "killed": (_AGENT, _PERSON),
    **dict.fromkeys(
        ("owns", "carries", "wields", "holds"), (_AGENT | {EntityType.location}, frozenset({EntityType.item}))
    ),
    "part_of": (_THINGS, _THINGS),
    **dict.fromkeys(("seeks", "guards"), (_AGENT, _THINGS)),
    "worships": (_AGENT, frozenset({EntityType.npc, EntityType.concept})),
    "gives_quest": (_AGENT, frozenset({EntityType.quest})),
    **dict.fromkeys(("involved_in", "participated_in"), (_AGENT, frozenset({EntityType.quest, EntityType.event}))),
    "took_part_in": (_THINGS, frozenset({EntityType.event})),  # as the recap links who its session names
    "quest_giver": (_AGENT, frozenset({EntityType.quest})),
}

#: attribute -> the entity types it describes. Any other attribute (``dm_note``, ``instruction``) waits.
ATTRIBUTES: dict[str, frozenset[EntityType]] = {
    **dict.fromkeys(
        ("occupation", "race", "species", "class", "age", "alignment", "mood", "role", "rank", "gender"), _PERSON
    ),
    **dict.fromkeys(("status", "title", "condition"), _ANY),
    **dict.fromkeys(("location", "whereabouts"), _THINGS),
    **dict.fromkeys(("climate", "population", "region"), frozenset({EntityType.location})),
    **dict.fromkeys(("material", "owner", "power"), frozenset({EntityType.item})),
}


@dataclass(frozen=True)
class End:
    """One end of a fact as the gate sees it: the entity, how it may be said, its type."""

    id: int
    name: str
    type: EntityType
    aliases: Sequence[str] = field(default_factory=tuple)


@dataclass(frozen=True)
class _Said:
    id: int
    name: str
    aliases: tuple[str, ...]


def evidence_gap(
    source: End, rel_type: str, target: End | None, value: str | None, cited: Sequence[Entry]
) -> str | None:
    """Why ``source —rel_type→ target`` (or ``source.rel_type = value``) may not be accepted without the DM on the
    strength of ``cited``, or None when those lines say it."""
    if (refused := _schema_gap(source, rel_type, target)) is not None:
        return refused
    where = "the cited line" if len(cited) == 1 else "the cited lines"
    does = "does" if len(cited) == 1 else "do"
    ends = [source] if target is None else [source, target]
    gazetteer = Gazetteer([_Said(e.id, e.name, tuple(e.aliases)) for e in ends])
    named = [set(gazetteer.mentioned_ids(entry)) for entry in cited]
    # one line says it all: two lines naming one end each may be about anything
    saying = [entry for entry, ids in zip(cited, named, strict=True) if all(e.id in ids for e in ends)]
    if not saying:
        unnamed = [e.name for e in ends if not any(e.id in ids for ids in named)]
        if unnamed:
            return f"{where} {does} not name {' or '.join(unnamed)}"
        return f"no cited line names both {source.name} and {target.name if target else ''}"
    if value is not None and not any(_contains(entry.text, value) for entry in saying):
        return f"{where} {does} not say {value!r}"
    return None


def _schema_gap(source: End, rel_type: str, target: End | None) -> str | None:
    """Why the schema refuses ``rel_type`` between these ends (an attribute when ``target`` is None), or None."""
    if target is not None:
        allowed = RELATIONS.get(rel_type)
        if allowed is None:
            return f"'{rel_type}' is not a relation the schema knows"
        if source.type not in allowed[0] or target.type not in allowed[1]:
            return f"'{rel_type}' does not link {_a(source.type)} to {_a(target.type)}"
        return None
    types = ATTRIBUTES.get(rel_type)
    if types is None:
        return f"'{rel_type}' is not an attribute the schema knows"
    if source.type not in types:
        return f"'{rel_type}' is not an attribute of {_a(source.type)}"
    return None


def _contains(text: str, value: str) -> bool:
    """``value``'s words appear in ``text`` together and in order (case, accents and punctuation aside)."""
    words, said = name_norm(value).split(), name_norm(text).split()
    if not words:
        return False
    return any(said[i : i + len(words)] == words for i in range(len(said) - len(words) + 1))


def _a(kind: EntityType) -> str:
    return f"{'an' if kind.value[0] in 'aeiou' or kind == EntityType.npc else 'a'} {kind.value}"
