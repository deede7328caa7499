"""Foundry VTT: single-document exports ("Export Data" of an Actor, Item, Scene or JournalEntry, in v9's ``data``
or v10+'s ``system`` layout), a world's or compendium's NeDB ``.db`` files (one JSON document a line), compendium
sources (``packs/_source/*.json``, or ``*.yml`` as the dnd5e system now writes them), v11+ LevelDB folders (a
world's ``data/actors/`` …, a compendium's ``packs/<name>/``), and Adventure documents holding all of those.

- Actors: dnd5e/pf2e ``npc`` → npc, ``character`` → player, ``vehicle`` → item, ``group``/``party``/``army`` →
  faction, ``familiar`` → npc, ``hazard`` → concept, ``loot`` → item; any other actor type → npc.
- Items an actor owns become item entities it ``owns`` only when they are notable: a physical item (weapon,
  equipment, armor, consumable, tool, loot, treasure, container) that is magical (dnd5e's ``mgc`` property, pf2e's
  ``magical``/``invested`` trait), needs attunement, or is rarer than common. Mundane gear, spells, feats and class
  features stay on the sheet. Items exported on their own become items when physical, whatever their rarity.
- An item not yet identified (dnd5e ``identified: false``, pf2e ``identification.status: "unidentified"``) is
  what players know of it, its unidentified name and text; its true name, rarity and text GM notes.
- Scenes → location, journal entries → concept with their text as the description.
- HTML becomes plain text. GM-only text (pf2e ``privateNotes`` and ``description.gm``, ``<section class="secret">``
  blocks) is kept DM-only, as secret ``dm_notes`` facts; a journal entry's as ``dm_notes_journal``, apart from
  those of an actor of its name, so that importing either again replaces only its own. A journal entry players
  cannot see (default ownership NONE, or no ownership in the file) is secret.
- Folders, manifests (``world.json``, ``module.json``, ``system.json``), macros, playlists, roll tables, chat
  messages and users are not entities.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Sequence
from typing import Any

from campaigns.imports.common import World, as_object, as_text, html_to_text, problem
from memory.models import EntityType

ACTOR_TYPES = {
    "npc": EntityType.npc,
    "character": EntityType.player,
    "pc": EntityType.player,
    "player": EntityType.player,
    "vehicle": EntityType.item,
    "group": EntityType.faction,
    "party": EntityType.faction,
    "army": EntityType.faction,
    "familiar": EntityType.npc,
    "hazard": EntityType.concept,
    "loot": EntityType.item,
}
PHYSICAL = frozenset(
    {
        "weapon",
        "equipment",
        "armor",
        "consumable",
        "tool",
        "loot",
        "treasure",
        "container",
        "backpack",
        "shield",
        "book",
        "gear",
        "item",
        "artifact",
        "kit",
    }
)
_RARE = frozenset({"uncommon", "rare", "veryrare", "very rare", "legendary", "artifact", "unique"})
_MANIFEST_KEYS = ("compatibility", "coreVersion", "compatibleCoreVersion", "minimumCoreVersion", "esmodules", "packs")
_FOLDER_TYPES = frozenset(
    {"Actor", "Item", "Scene", "JournalEntry", "RollTable", "Macro", "Playlist", "Cards", "Adventure", "Compendium"}
)


def looks_like(obj: Any) -> bool:
    """Whether a JSON value is Foundry's: a document (or a list of them), an Adventure, or a manifest."""
    docs = obj if isinstance(obj, list) else [obj]
    return bool(docs) and all(isinstance(d, dict) for d in docs) and any(_is_foundry(d) for d in docs)


def _is_foundry(doc: dict[str, Any]) -> bool:
    return (
        "_id" in doc
        or "_stats" in doc
        or "prototypeToken" in doc
        or ("name" in doc and ("system" in doc or "data" in doc or "pages" in doc))
        or _is_manifest(doc)
    )


def _is_manifest(doc: dict[str, Any]) -> bool:
    """``world.json``, ``module.json``, ``system.json``: a title and what a package declares, no document data."""
    if "title" not in doc or isinstance(doc.get("system"), dict):
        return False
    return any(key in doc for key in _MANIFEST_KEYS) or isinstance(doc.get("system"), str | list)


def parse_json(file: str, obj: Any, world: World) -> None:
    docs = obj if isinstance(obj, list) else [obj]
    for number, doc in enumerate(docs, start=1):
        if not isinstance(doc, dict):
            raise problem(
                file, number, None, f"expected a Foundry document (a JSON object), found {type(doc).__name__}"
            )
        _document(file, number if len(docs) > 1 else None, doc, world)


def parse_nedb(file: str, text: str, world: World) -> None:
    """A NeDB file: one JSON document a line, appended to as the world changes; the last copy of an ``_id`` is the
    document, and ``$$deleted`` removes it."""
    docs: dict[str, tuple[int, dict[str, Any]]] = {}
    for line_number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as exc:
            raise problem(file, f"line {line_number}", None, f"not a JSON document ({exc.msg})") from None
        if not isinstance(doc, dict):
            raise problem(file, f"line {line_number}", None, "not a JSON object")
        if "$$indexCreated" in doc:
            continue
        key = str(doc.get("_id", f"line {line_number}"))
        if doc.get("$$deleted"):
            docs.pop(key, None)
        else:
            docs[key] = (line_number, doc)
    for line_number, doc in docs.values():
        _document(file, f"line {line_number}", doc, world)


#: The LevelDB collections whose documents may be entities; the others (folders, messages, settings, users,
#: macros, playlists, roll tables, cards, combats, fog) are not.
_LEVELDB_DOCUMENTS = ("actors", "items", "journal", "scenes", "adventures")
#: A LevelDB key as Foundry (classic-level sublevels) writes it: ``!actors!<id>``, an embedded document under its
#: parent's sublevel and id, ``!actors.items!<actorId>.<itemId>``.
_LEVELDB_KEY = re.compile(r"!([A-Za-z]+(?:\.[A-Za-z]+)*)!([^!]+)")


def parse_leveldb(folder: str, files: Sequence[tuple[str, bytes]], world: World) -> None:
    """A v11+ LevelDB folder, its files' bytes: read from a copy (Foundry holds the folder's ``LOCK`` while it runs,
    and the DM's files are never written), each document rebuilt with its embedded ones (an actor's items, a
    journal's pages: stored apart, the parent listing their ids) as the ``.db`` files held them."""
    try:
        import plyvel  # a wheel for x86-64 Linux only (see pyproject.toml)
    except ImportError:
        raise problem(
            folder,
            None,
            None,
            "a Foundry v11+ LevelDB folder, which needs the plyvel package, not installed here (`pip install "
            "plyvel` builds it where LevelDB is installed), or extract it with the foundryvtt-cli `unpack` command",
        ) from None
    with tempfile.TemporaryDirectory(prefix="lorekeeper-leveldb-") as copy:
        for file, data in files:
            with open(os.path.join(copy, os.path.basename(file.replace("\\", "/"))), "wb") as out:
                out.write(data)
        entries: dict[tuple[str, str], dict[str, Any]] = {}
        try:
            db = plyvel.DB(copy, create_if_missing=False, paranoid_checks=True)
            try:
                for key, value in db.iterator(verify_checksums=True):
                    match, doc = _LEVELDB_KEY.fullmatch(key.decode("utf-8", "replace")), _json_object(value)
                    if match is None or doc is None:
                        raise problem(
                            folder,
                            None,
                            None,
                            f"a LevelDB folder, but not Foundry's: its entry {key[:60]!r} is not a document",
                        )
                    entries[match.group(1), match.group(2)] = doc
            finally:
                db.close()
        except plyvel.Error as exc:  # its message is bytes, and names the copy
            said = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
            raise problem(folder, None, None, f"a damaged LevelDB folder ({said.replace(copy, folder)})") from None
    sublevels = {sublevel for sublevel, _ in entries}
    skipped: dict[str, int] = {}
    for (sublevel, doc_id), doc in entries.items():
        if "." in sublevel:
            continue  # an embedded document, read with its parent
        if sublevel not in _LEVELDB_DOCUMENTS:
            skipped[sublevel] = skipped.get(sublevel, 0) + 1
            continue
        _document(folder, f"!{sublevel}!{doc_id}", _embedded(entries, sublevels, sublevel, doc_id, doc), world)
    world.skipped += [f"{folder}: {count} {sublevel} (not entities)" for sublevel, count in skipped.items()]


def _json_object(value: bytes) -> dict[str, Any] | None:
    try:
        doc = json.loads(value)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def _embedded(
    entries: dict[tuple[str, str], dict[str, Any]], sublevels: set[str], sublevel: str, doc_id: str, doc: dict[str, Any]
) -> dict[str, Any]:
    """The document with each embedded id its parent lists (``"items": ["<itemId>", …]``) replaced by the embedded
    document (``!actors.items!<actorId>.<itemId>``), theirs in turn; an id with no entry is left out."""
    rebuilt = dict(doc)
    for field, value in doc.items():
        inner = f"{sublevel}.{field}"
        if isinstance(value, list) and inner in sublevels:
            keys = [(inner, f"{doc_id}.{item}") for item in value if isinstance(item, str)]
            rebuilt[field] = [_embedded(entries, sublevels, *key, entries[key]) for key in keys if key in entries]
    return rebuilt


def _system(doc: dict[str, Any]) -> dict[str, Any]:
    """The system data: ``system`` since v10, ``data`` before."""
    return as_object(doc.get("system", doc.get("data")))


def _get(data: Any, *path: str) -> Any:
    for part in path:
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return data


def _html(value: Any) -> tuple[str, str]:
    if isinstance(value, dict):  # {"value": "<p>…</p>"}
        value = value.get("value")
    return _text(value if isinstance(value, str) else "")


# Foundry's text enrichers, shown in Foundry as their label: a content link (@UUID[Actor.x]{Brother Hale}), an
# inline roll ([[/r 2d6]]{damage}, [[/check dex 15]], [[1d4]]) and the dnd5e system's &Reference[prone].
_LINK = re.compile(r"( ?)[@&](\w+)\[([^\]\n]*)\](?:\{([^}\n]*)\})?")
_ROLL = re.compile(r"\[\[(?:/\w+\s*)?([^\]\n]*)\]\](?:\{([^}\n]*)\})?")


def _unlinked(text: str) -> str:
    """``text`` with Foundry's enrichers as their labels; an unlabelled link to a document by its id (which only
    Foundry can name) left out, any other by what it names."""

    def link(match: re.Match[str]) -> str:
        if match.group(4) is not None:
            return match.group(1) + match.group(4)
        tail = match.group(3).split(".")[-1].strip()
        return "" if re.fullmatch(r"[A-Za-z0-9]{16}", tail) else match.group(1) + tail

    text = _ROLL.sub(lambda m: m.group(2) if m.group(2) is not None else m.group(1).strip(), _LINK.sub(link, text))
    return re.sub(r"[ \t]{2,}", " ", text)


def _text(html: str | None) -> tuple[str, str]:
    """(public text, GM-only text) of a Foundry HTML field, its enrichers as Foundry shows them."""
    public, secret = html_to_text(html)
    return _unlinked(public), _unlinked(secret)


def _document(file: str, record: str | int | None, doc: dict[str, Any], world: World) -> None:
    where = (file, record)
    if _is_manifest(doc):
        world.skipped.append(f"{file}: the manifest of {as_text(doc.get('title'))!r} (not an entity)")
        return
    if doc.get("type") in _FOLDER_TYPES and not _system(doc) and "pages" not in doc:
        return  # a folder
    if any(isinstance(doc.get(key), list) for key in ("actors", "scenes", "journal")) and "system" not in doc:
        for key in ("actors", "items", "scenes", "journal"):  # an Adventure: its documents
            for number, inner in enumerate(doc.get(key) or [], start=1):
                if isinstance(inner, dict):
                    _document(file, f"{key} #{number}", inner, world)
        return
    if isinstance(doc.get("pages"), list) or ("content" in doc and "type" not in doc and "speaker" not in doc):
        name = _journal(where, doc, world)
    elif any(key in doc for key in ("walls", "tokens", "grid", "navName", "initial")) and "type" not in doc:
        name = _scene(where, doc, world)
    elif isinstance(doc.get("items"), list) or "prototypeToken" in doc or "token" in doc:
        name = _actor(where, doc, world)
    elif "type" in doc and ("system" in doc or "data" in doc):
        name = _item(where, doc, world, owned=False)
    else:
        world.skipped.append(
            f"{file}: {as_text(doc.get('name')) or 'a document'} (not an actor, item, scene or journal)"
        )
        return
    if name is not None and not _uuids("Document", doc):  # no _id
        world.assume(NO_ID, name)


#: What the card says of a document exported without its id ("Export Data" drops it).
NO_ID = (
    'no Foundry id in the export ("Export Data" drops it), so found again by name alone: renamed in Foundry, it '
    "imports as a new entity (rename it here too, or import the world's .db files, which keep ids)"
)


def _uuids(kind: str, doc: dict[str, Any], parent: str | None = None) -> list[str]:
    """The document's id as Foundry's UUID writes it (``Actor.<id>``, an owned item ``Actor.<id>.Item.<id>``: an
    embedded id is unique only within its parent), or none when the export has no ``_id``."""
    doc_id = doc.get("_id")
    if not isinstance(doc_id, str) or not doc_id.strip() or (parent is not None and not parent):
        return []
    return [f"{parent + '.' if parent else ''}{kind}.{doc_id.strip()}"]


def _actor(where: tuple[str, Any], doc: dict[str, Any], world: World) -> str | None:
    system = _system(doc)
    kind = ACTOR_TYPES.get(str(doc.get("type", "")).casefold(), EntityType.npc)
    details = as_object(system.get("details"))
    public, secret = "", ""
    for path in (("biography",), ("publicNotes",), ("description",)):
        text, hidden = _html(_get(details, *path))
        public = public or text
        secret = "\n\n".join(s for s in (secret, hidden) if s)
    shared, shared_hidden = _html(_get(details, "biography", "public"))
    secret = "\n\n".join(s for s in (secret, shared_hidden) if s)
    # dnd5e's public biography is what players see of an actor they do not own, its full biography the GM's: the
    # first is the description of any actor but a player's (whose sheet its player reads whole), the second GM notes
    if shared and kind is not EntityType.player:
        full = _html(_get(details, "biography"))[0]
        public, secret = shared, "\n\n".join(s for s in (full if full != shared else "", secret) if s)
    public = public or shared
    if not public and isinstance(details.get("biography"), dict):  # pf2e characters: appearance, backstory …
        parts = [_html(v)[0] for k, v in details["biography"].items() if k in ("appearance", "backstory")]
        public = "\n\n".join(p for p in parts if p)
    private, hidden = _html(details.get("privateNotes"))
    secret = "\n\n".join(s for s in (private, hidden, secret) if s)
    creature = _get(details, "type", "value") if isinstance(details.get("type"), dict) else details.get("creatureType")
    attributes = {
        "alignment": as_text(details.get("alignment"))
        if not isinstance(details.get("alignment"), dict)
        else as_text(details["alignment"].get("value")),
        "creature_type": as_text(creature),
        "challenge": as_text(details.get("cr")),
        "level": as_text(
            _get(details, "level", "value") if isinstance(details.get("level"), dict) else details.get("level")
        ),
        "race": _race(details.get("race")),
        "foundry_type": as_text(doc.get("type")),
    }
    uuids = _uuids("Actor", doc)
    name = world.entity(
        where,
        name=doc.get("name"),
        type=kind,
        description=public,
        attributes=attributes,
        dm_notes=secret,
        source_ids=uuids,
        states_notes=True,
    )
    if name is None:
        return None
    left = 0
    for number, item in enumerate(doc.get("items") or [], start=1):
        if not isinstance(item, dict):
            continue
        if _notable(item):
            item_where = (where[0], f"{where[1] or 'actor'} item #{number}")
            owned = _item(item_where, item, world, owned=True, parent=uuids[0] if uuids else "")
            if owned is not None and owned.casefold() != name.casefold():
                world.fact(where, source=name, type="owns", target=owned)
        else:
            left += 1
    if left:
        world.skipped.append(f"{where[0]}: {name}: {left} mundane items, spells and features left on the sheet")
    return name


def _race(value: Any) -> str:
    """dnd5e 3.x keeps a character's race as the id of its race item ("Ej3hX9…"): no name, left out."""
    text = as_text(value) if isinstance(value, str) else ""
    return "" if re.fullmatch(r"[A-Za-z0-9]{16}", text) else text


def _notable(item: dict[str, Any]) -> bool:
    """An owned item worth an entity: physical, and magical, attuned or rarer than common."""
    if str(item.get("type", "")).casefold() not in PHYSICAL:
        return False
    system = _system(item)
    rarity = system.get("rarity") or _get(system, "traits", "rarity") or ""
    if isinstance(rarity, str) and rarity.casefold() in _RARE:
        return True
    properties = system.get("properties")
    if (isinstance(properties, list) and "mgc" in properties) or (
        isinstance(properties, dict) and properties.get("mgc")
    ):
        return True
    bonus = system.get("magicalBonus")
    if isinstance(bonus, int | float) and not isinstance(bonus, bool) and bonus > 0:
        return True
    attunement = system.get("attunement")
    if attunement in (1, 2, "1", "2", "required", "optional", True):
        return True
    traits = _get(system, "traits", "value")
    return isinstance(traits, list) and bool({"magical", "invested", "artifact"} & {str(t) for t in traits})


def _item(
    where: tuple[str, Any], doc: dict[str, Any], world: World, *, owned: bool, parent: str | None = None
) -> str | None:
    kind = str(doc.get("type", "")).casefold()
    if not owned and kind not in PHYSICAL:
        world.skipped.append(f"{where[0]}: {as_text(doc.get('name'))} ({kind or 'no type'}: rules, not a thing)")
        return None
    system = _system(doc)
    public, secret = _html(system.get("description"))
    gm, gm_hidden = _html(_get(system, "description", "gm"))
    rarity = as_text(system.get("rarity") or _get(system, "traits", "rarity"))
    name, hidden = doc.get("name"), False
    if (unidentified := _unidentified(system)) is not None:  # players know only its unidentified name and text
        known_name, known_text = unidentified
        if known_name:  # the true name, text and rarity are the DM's until the party identifies it
            known, known_hidden = _html(known_text)
            true = "\n".join(t for t in (f"Identified: {as_text(name)}", rarity and f"rarity: {rarity}", public) if t)
            secret = "\n\n".join(t for t in (true, known_hidden, secret) if t)
            name, public, rarity = known_name, known, ""
        else:  # nothing players may call it: the whole item is the DM's
            hidden = True
    return world.entity(
        where,
        name=name,
        type=EntityType.item,
        description=public,
        attributes={"rarity": rarity, "foundry_type": kind},
        secret=hidden,
        dm_notes="\n\n".join(s for s in (gm, gm_hidden, secret) if s),
        source_ids=_uuids("Item", doc, parent),
        states_notes=True,
    )


def _unidentified(system: dict[str, Any]) -> tuple[str, Any] | None:
    """What players know an item not yet identified by (its unidentified name, and description as the item keeps
    it), or None for an identified item. dnd5e: ``identified: false``, ``unidentified.name`` and ``description``;
    pf2e: ``identification.status: "unidentified"``, ``identification.unidentified.name`` and
    ``data.description``."""
    if system.get("identified") is False:
        return as_text(_get(system, "unidentified", "name")), _get(system, "unidentified", "description")
    if _get(system, "identification", "status") == "unidentified":
        known = as_object(_get(system, "identification", "unidentified"))
        return as_text(known.get("name")), _get(known, "data", "description")
    return None


def _scene(where: tuple[str, Any], doc: dict[str, Any], world: World) -> str | None:
    public, secret = _text(doc.get("description") if isinstance(doc.get("description"), str) else "")
    nav = as_text(doc.get("navName"))
    return world.entity(
        where,
        name=doc.get("name"),
        type=EntityType.location,
        description=public,
        aliases=[nav] if nav else [],
        dm_notes=secret,
        source_ids=_uuids("Scene", doc),
        states_notes=True,
    )


def _journal(where: tuple[str, Any], doc: dict[str, Any], world: World) -> str | None:
    public_parts: list[str] = []
    secret_parts: list[str] = []
    if isinstance(doc.get("pages"), list):
        pages = [p for p in doc["pages"] if isinstance(p, dict) and p.get("type", "text") == "text"]
        read = [(page, *_text(_get(page, "text", "content") or "")) for page in pages]
        # a page's title heads its text among others; one page is the entry itself, whatever it is titled
        several = sum(1 for _, text, _ in read if text) > 1
        for page, text, hidden in read:
            title = as_text(page.get("name"))
            if text:
                (secret_parts if _gm_only(page, page=True) else public_parts).append(
                    f"{title}\n{text}" if several and title and title != doc.get("name") else text
                )
            if hidden:
                secret_parts.append(hidden)
    else:
        text, hidden = _text(doc.get("content") if isinstance(doc.get("content"), str) else "")
        public_parts.append(text)
        secret_parts.append(hidden)
    name = world.entity(
        where,
        name=doc.get("name"),
        type=EntityType.concept,
        description="\n\n".join(p for p in public_parts if p),
        secret=_gm_only(doc),
        dm_notes="\n\n".join(p for p in secret_parts if p),
        source_ids=_uuids("JournalEntry", doc),
        states_notes=True,
        notes_label="journal",  # an actor's notes and a journal's of its name: each imported again apart
    )
    if name and not isinstance(doc.get("ownership", doc.get("permission")), dict):
        world.assume(NO_OWNERSHIP, name)
    return name


#: What the card says of a journal entry exported without its ownership.
NO_OWNERSHIP = 'no ownership in the export ("Export Data" drops it), so DM-only, as Foundry\'s default is'


def _gm_only(doc: dict[str, Any], *, page: bool = False) -> bool:
    """A document players cannot see: its default ownership (v10+ ``ownership``, v9 ``permission``) is NONE and
    no player is given more. Absent (Foundry's "Export Data" and compendium packs drop it), an entry is taken as
    Foundry's own default, NONE: nothing says players may read it. A journal page's INHERIT (-1, what Foundry
    writes for every page unless the GM sets it) is its entry's: not hidden on its own, nor is a page without
    ownership."""
    ownership = doc.get("ownership", doc.get("permission"))
    if not isinstance(ownership, dict):
        return not page
    if "default" not in ownership:
        return False
    if page and ownership["default"] == -1:
        return False
    return all(level in (0, -1) for level in ownership.values() if isinstance(level, int))
