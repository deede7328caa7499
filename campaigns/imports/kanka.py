"""Kanka: its API JSON (``{"data": [...]}`` of one module, or one entity) and the per-module JSON files of a
campaign export, for characters, locations, organisations, families, items, quests, events, journals, notes and
races; and its relations as facts.

- Kanka's modules map to types: characters → npc (player when their ``type`` says PC or player), locations →
  location, organisations and families → faction, items → item, quests → quest, events → event, creatures → npc,
  journals, notes, races and abilities → concept.
- ``entry`` (HTML) is the description, its ``[character:12|Name]`` mentions written as their text, its posts
  after it (those not for all as GM notes); ``is_private`` makes the entity secret.
- Links Kanka keeps as fields become facts: a character's, organisation's or item's ``location_id`` (located_in),
  a location's ``parent_location_id`` (located_in), an item's ``character_id`` (the character owns it).
- Relations (``owner_id``, ``target_id``: entity ids) become facts of their ``relation`` text, with ``attitude``
  as an attribute; a visibility other than "all" (``visibility_id`` 1) makes the fact secret, and so does a private
  record at either end, or owning it (Kanka hides them; the entity may be public, merged with a public record of
  its name); a mirrored relation whose other half is not in the files is added the other way too, as Kanka shows it
  from both ends.
"""

from __future__ import annotations

import re
from html import escape
from typing import Any

from campaigns.imports.common import World, as_object, as_text, html_to_text, problem
from memory.models import EntityType, relationship_type
from memory.text import counted

#: Kanka entity ``type_id``s (its ``EntityType`` table) and module names, to the types here.
TYPE_IDS = {
    1: "character",
    2: "family",
    3: "location",
    4: "organisation",
    5: "item",
    6: "note",
    7: "event",
    9: "race",
    10: "quest",
    11: "journal",
    16: "ability",
    20: "creature",
}
MODULES = {
    "character": EntityType.npc,
    "creature": EntityType.npc,
    "location": EntityType.location,
    "organisation": EntityType.faction,
    "organization": EntityType.faction,
    "family": EntityType.faction,
    "item": EntityType.item,
    "quest": EntityType.quest,
    "event": EntityType.event,
    "journal": EntityType.concept,
    "note": EntityType.concept,
    "race": EntityType.concept,
    "ability": EntityType.concept,
}
#: A character's free ``type`` that says it is a player's.
_PLAYER_TYPES = frozenset({"pc", "player", "player character", "player-character", "party member"})
_MENTION = re.compile(r"\[(\w+):(\d+)(?:\|([^\]]*))?\]")
#: A mention an import could not name, as its description keeps it: its module and Kanka entity id.
UNNAMED = re.compile(r"\[(\w+):(\d+)\]")
#: Field names only one module's records have: how a record says what it is when nothing else does.
_TELLTALE = (
    ("parent_location_id", "location"),
    ("is_map", "location"),
    ("organisation_id", "organisation"),
    ("price", "item"),
    ("character_id", "item"),
    ("is_completed", "quest"),
    ("sex", "character"),
    ("is_dead", "character"),
    ("families", "character"),
    ("date", "event"),
)


def looks_like(obj: Any) -> bool:
    if isinstance(obj, dict) and obj.get("data") == []:  # a module the campaign does not use, in an export
        return True
    records = _records(obj)
    return (
        bool(records)
        and all(isinstance(r, dict) for r in records)
        and any("entry" in r or "owner_id" in r or "entity_id" in r for r in records)
        and not any("system" in r or "attribs" in r for r in records)
    )


def _records(obj: Any) -> list[Any]:
    if isinstance(obj, dict) and "data" in obj:
        obj = obj["data"]
    return obj if isinstance(obj, list) else [obj]


def _module(file: str, record: dict[str, Any]) -> str | None:
    entity = as_object(record.get("entity"))
    for value in (record.get("entity_type"), entity.get("type"), record.get("module")):
        if isinstance(value, str) and value.casefold().rstrip("s") in MODULES:
            return value.casefold().rstrip("s")
    for value in (record.get("type_id"), entity.get("type_id")):
        if isinstance(value, int) and value in TYPE_IDS:
            return TYPE_IDS[value]
    for part in reversed(re.split(r"[^a-z]+", file.casefold().rsplit(".", 1)[0])):  # characters.json, kanka/items/x
        stem = {"families": "family", "abilities": "ability"}.get(part, part.removesuffix("s"))
        if stem in MODULES:
            return stem
    for field_name, module in _TELLTALE:
        if field_name in record:
            return module
    return None


class KankaReader:
    """Kanka records of one or more files: entities first, then what links them (ids across files)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.by_entity_id: dict[int, str] = {}
        self.by_model_id: dict[tuple[str, int], str] = {}
        self.links: list[tuple[tuple[str, Any], str, dict[str, Any]]] = []
        self.relations: list[tuple[tuple[str, Any], dict[str, Any]]] = []
        #: The private records (Kanka's entity ids, and module and id): what links one is secret, whatever
        #: entity it is merged into (a public journal of its name keeps the entity public).
        self.private: set[int | tuple[str, int]] = set()
        self.titles: dict[int, str] = {}  # Kanka entity id → its record's name
        self.tagged = 0  # records with tags: Kanka gives their ids alone, not what they say
        self.records: list[tuple[str, tuple[str, Any], dict[str, Any]]] = []  # the entities' records, read at the end

    def read(self, file: str, obj: Any) -> None:
        records = _records(obj)
        if not records:
            self.world.skipped.append(f"{file}: no records (a module the campaign does not use), left out")
        for number, record in enumerate(records, start=1):
            where = (file, number if len(records) > 1 else None)
            if not isinstance(record, dict):
                raise problem(file, number, None, f"expected a Kanka record (an object), found {type(record).__name__}")
            if "owner_id" in record and "target_id" in record:
                self.relations.append((where, record))
                continue
            self.records.append((file, where, record))

    def _entity(self, file: str, where: tuple[str, Any], record: dict[str, Any]) -> None:
        module = _module(file, record)
        if module is None and re.split(r"[/\\]", file)[-1].casefold() == "campaign.json":
            self.world.skipped.append(f"{file}: the campaign's own settings, left out")  # an export zip's
            return
        if module is None:
            raise problem(
                file,
                where[1],
                "entity_type",
                "cannot tell which Kanka module this record is from: "
                "name the file after it (characters.json, locations.json …)",
            )
        entity = as_object(record.get("entity"))
        # posts (once "entity notes": backstory, the GM's secrets) follow the entry under their names, those not
        # for all as GM notes
        posts = [p for p in entity.get("posts") or record.get("posts") or [] if isinstance(p, dict)]
        entry = as_raw(record.get("entry")) + "".join(_post(p) for p in posts if _for_all(p))
        public, hidden = html_to_text(_mentions(entry, self.titles))
        gm_posts = html_to_text(_mentions("".join(_post(p) for p in posts if not _for_all(p)), self.titles))
        hidden = "\n\n".join(text for text in (hidden, *gm_posts) if text)
        kind = _kind(module, record)
        entity_id = _entity_id(record)
        ids = [f"entity:{entity_id}"] if entity_id is not None else []  # unique in the campaign
        if isinstance(record.get("id"), int):
            # unique in its module (one spelling of it): an export may lack the entity's
            ids.append(f"{module.replace('organization', 'organisation')}:{record['id']}")
        name = self.world.entity(
            where,
            name=record.get("name"),
            type=kind,
            description=public,
            attributes={
                "title": as_text(record.get("title")),
                "kanka_type": as_text(record.get("type")),
                "age": as_text(record.get("age")),
                "sex": as_text(record.get("sex")),
                "status": "dead" if record.get("is_dead") is True else "",
            },
            secret=record.get("is_private") is True,
            dm_notes=hidden,
            source_ids=ids,
            states_notes="entry" in record,
        )
        if name is None:
            return
        if record.get("tags"):
            self.tagged += 1
        if entity_id is not None:
            self.by_entity_id[entity_id] = name
        if isinstance(record.get("id"), int):
            self.by_model_id[(module, record["id"])] = name
        if record.get("is_private") is True:
            self.private |= {entity_id} if entity_id is not None else set()
            self.private |= {(module, record["id"])} if isinstance(record.get("id"), int) else set()
        self.links.append((where, name, {**record, "_module": module}))
        if any(isinstance(r.get(k), list) for r in (entity, record) for k in ("relations", "relationships")):
            self.world.relations_stated.add(name)  # all its relations: one missing now was deleted in Kanka
        for relation in entity.get("relations") or entity.get("relationships") or record.get("relations") or []:
            if isinstance(relation, dict):  # the record's own, whatever ``owner_id`` says
                self.relations.append((where, {**relation, "_private": record.get("is_private") is True}))

    def _named(self, entity_id: Any) -> str | None:
        """The name of the entity with Kanka's ``entity_id``, if it is one read."""
        return self.by_entity_id.get(entity_id) if isinstance(entity_id, int) else None

    def finish(self) -> None:
        """The links and relations, once every file's entities are known (a relation may name one read later)."""
        # by Kanka's entity id, not the files' order (a zip's, a shell glob's): one export reads the same each time
        records = sorted(self.records, key=_entity_order)
        # every file read: a mention is named as its entity will be (two things of one name apart), whichever file
        # it is in, as its record is read (never text of another record: a private one merged into a public entity
        # of its name gives only GM notes)
        named = World()
        for file, where, record in records:
            module, entity_id = _module(file, record), _entity_id(record)
            name = named.entity(where, name=record.get("name"), type=_kind(module, record)) if module else None
            if name and entity_id is not None:
                self.titles[entity_id] = name
        for file, where, record in records:
            self._entity(file, where, record)
        if self.tagged:
            self.world.skipped.append(
                f"the tags of {counted(self.tagged, 'record')}: Kanka's files give their ids alone"
            )
        for where, name, record in self.links:
            for field_name, module, kind, owner_first in (
                ("location_id", "location", "located_in", False),
                ("parent_location_id", "location", "located_in", False),
                ("character_id", "character", "owns", True),
            ):
                model_id = record.get(field_name)
                other = self.by_model_id.get((module, model_id)) if isinstance(model_id, int) else None
                if other is None or other == name or (field_name == "character_id" and record["_module"] != "item"):
                    continue
                source, target = (other, name) if owner_first else (name, other)
                private = {(record["_module"], record.get("id")), (module, model_id)} & self.private
                self.world.fact(where, source=source, type=kind, target=target, secret=bool(private))
        stated = {r.get("id") for _, r in self.relations if r.get("id") is not None}
        seen: set[tuple[str, str, str]] = set()
        for where, relation in self.relations:
            owner = self._named(relation.get("owner_id"))
            target_name = self._named(relation.get("target_id"))
            text = as_text(relation.get("relation")) or "related_to"
            if owner is None or target_name is None or owner == target_name:
                self.world.skipped.append(f"{where[0]}: relation {text!r}: an entity not in the import")
                continue
            try:
                kind = relationship_type(text)
            except ValueError as exc:
                raise problem(where[0], where[1], "relation", str(exc)) from None
            attributes = {"attitude": relation.get("attitude")} if isinstance(relation.get("attitude"), int) else {}
            secret = (
                relation.get("visibility_id", 1) not in (1, None)
                or relation.get("visibility", "all") not in ("all", None)
                or relation.get("is_private") is True
                or relation.get("_private") is True
                or bool({relation.get("owner_id"), relation.get("target_id")} & self.private)
            )
            pairs = [(owner, target_name)]
            if relation.get("mirror_id") is not None and relation.get("mirror_id") not in stated:
                pairs.append((target_name, owner))
            for source, other in pairs:
                if (source, kind, other) in seen:
                    continue
                seen.add((source, kind, other))
                self.world.fact(where, source=source, type=kind, target=other, attributes=attributes, secret=secret)


def _kind(module: str, record: dict[str, Any]) -> EntityType:
    if module == "character" and as_text(record.get("type")).casefold() in _PLAYER_TYPES:
        return EntityType.player  # Kanka has no player flag: DMs type their PCs so
    return MODULES[module]


def _entity_id(record: dict[str, Any]) -> int | None:
    """The record's Kanka entity id (unique in the campaign, whatever its module), if it has one."""
    entity_id = record.get("entity_id", as_object(record.get("entity")).get("id"))
    return entity_id if isinstance(entity_id, int) else None


def _entity_order(read: tuple[str, tuple[str, Any], dict[str, Any]]) -> tuple[bool, int]:
    entity_id = _entity_id(read[2])
    return (entity_id is None, entity_id or 0)


def _for_all(post: dict[str, Any]) -> bool:
    """Whether players may read a Kanka post: its visibility is "all" (``visibility_id`` 1)."""
    return (
        post.get("visibility_id", 1) in (1, None)
        and post.get("visibility", "all") in ("all", None)
        and post.get("is_private") is not True
    )


def _post(post: dict[str, Any]) -> str:
    """A post as HTML following the entry: its name as a heading, then its text."""
    return f"<h3>{escape(as_text(post.get('name')))}</h3>{as_raw(post.get('entry'))}"


def as_raw(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _mentions(html: str, names: dict[int, str]) -> str:
    """Kanka's mentions (``[character:12]``, ``[location:3|the old keep]``: entity ids) as the text they show: the
    text given, else the entity's name; one of an entity not in the files stays as written (``[character:12]``),
    for the campaign to name (:data:`UNNAMED`), never empty text."""
    return _MENTION.sub(lambda m: m.group(3) or names.get(int(m.group(2)), f"[{m.group(1)}:{m.group(2)}]"), html)
