"""Roll20: a character as the VTT Enhancement Suite exports it, handouts, and a whole campaign as the community
exporters write it (``characters``, ``handouts``, journal folders, pages).

- A character's ``bio`` and ``gmnotes`` are HTML that Roll20 keeps JavaScript-escaped (``%3Cp%3E``); ``tags`` and
  ``defaulttoken`` are JSON inside strings. An empty ``controlledby`` means an NPC, else a player's character.
- Its inventory's notable items (the 5e OGL sheet's ``repeating_inventory_*``, the Shaped sheet's
  ``repeating_equipment_*``) become items it ``owns``: those whose name carries a bonus (``+1``) or whose
  properties or text say magic, attunement or a rarity above common. The rest stays on the sheet.
- Handouts → concept (``notes`` the description). What is in no player's journal (``inplayerjournals`` empty; of an
  NPC, absent too) is the GM's alone: secret; what is in some players' journals, not ``all``, is secret too, said on
  the card (nothing here shows a record to some players alone). A player's character is the party's: public.
  ``gmnotes`` of either are GM-only: kept DM-only (a handout's as ``dm_notes_handout``, apart from a character's of
  its name). Pages (maps) → location. Journal folders are not entities.
"""

from __future__ import annotations

import re
from typing import Any

from campaigns.imports.common import World, as_text, html_to_text, js_unescape, json_string, problem
from memory.models import EntityType

_ITEM_NAME = re.compile(r"^repeating_(inventory|equipment|items?[-\w]*)_(-?[-\w]+?)_(itemname|name|item_name)$")
_MAGIC = re.compile(r"\b(magic(al)?|attun\w*|uncommon|rare|legendary|artifact|artefact|wondrous)\b", re.I)
#: A bonus in an item's name ("Dagger +1"); in its other fields a "+2" is a mundane rule ("AC +2" of a shield).
_BONUS = re.compile(r"\+\d\b")


def looks_like(obj: Any) -> bool:
    docs = obj if isinstance(obj, list) else [obj]
    if not docs or not all(isinstance(d, dict) for d in docs):
        return False
    return all(_is_character(d) or _is_handout(d) or _is_campaign(d) for d in docs)


def _is_character(doc: dict[str, Any]) -> bool:
    return "name" in doc and ("attribs" in doc or "schema_version" in doc or "bio" in doc or "controlledby" in doc)


def _is_handout(doc: dict[str, Any]) -> bool:
    return "name" in doc and "notes" in doc and ("inplayerjournals" in doc or "gmnotes" in doc or "archived" in doc)


def _is_campaign(doc: dict[str, Any]) -> bool:
    return isinstance(doc.get("characters"), list) or isinstance(doc.get("handouts"), list)


def _html(value: Any) -> tuple[str, str]:
    """A Roll20 HTML field, unescaped when Roll20 stored it escaped (it holds no ``<`` but ``%3C``)."""
    if not isinstance(value, str) or value in ("null", "undefined"):
        return "", ""
    if "<" not in value and re.search(r"%(3C|3c|u[0-9A-Fa-f]{4}|20)", value):
        value = js_unescape(value)
    return html_to_text(value)


def parse_json(file: str, obj: Any, world: World) -> None:
    docs = obj if isinstance(obj, list) else [obj]
    for number, doc in enumerate(docs, start=1):
        record = number if len(docs) > 1 else None
        if _is_campaign(doc):
            for index, character in enumerate(doc.get("characters") or [], start=1):
                _character(file, f"character #{index}", _dict(file, f"character #{index}", character), world)
            for index, handout in enumerate(doc.get("handouts") or [], start=1):
                _handout(file, f"handout #{index}", _dict(file, f"handout #{index}", handout), world)
            for index, page in enumerate(doc.get("pages") or [], start=1):
                page = _dict(file, f"page #{index}", page)
                if as_text(page.get("name")):
                    world.entity(
                        (file, f"page #{index}"),
                        name=page.get("name"),
                        type=EntityType.location,
                        source_ids=_ids("page", page),
                    )
        elif _is_handout(doc):
            _handout(file, record, doc, world)
        else:
            _character(file, record, doc, world)


def _dict(file: str, record: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise problem(file, record, None, f"expected an object, found {type(value).__name__}")
    return value


def _ids(kind: str, doc: dict[str, Any]) -> list[str]:
    """The record's Roll20 id (``id``; VTTES keeps a character's as ``oldId``) with its kind, or none."""
    record_id = as_text(doc.get("id") or doc.get("oldId"))
    return [f"{kind}:{record_id}"] if record_id else []


def _attributes(doc: dict[str, Any]) -> dict[str, str]:
    """A character's attributes by name (``attribs`` in VTTES's export, ``attributes`` in some exporters)."""
    found: dict[str, str] = {}
    for attrib in doc.get("attribs") or doc.get("attributes") or []:
        if isinstance(attrib, dict) and isinstance(attrib.get("name"), str):
            found[attrib["name"]] = as_text(attrib.get("current"))
    return found


def _character(file: str, record: str | int | None, doc: dict[str, Any], world: World) -> None:
    where = (file, record)
    public, hidden = _html(doc.get("bio"))
    gm, gm_hidden = _html(doc.get("gmnotes"))
    tags = json_string(doc.get("tags"))
    token = json_string(doc.get("defaulttoken"))
    attribs = _attributes(doc)
    controlled = as_text(doc.get("controlledby"))
    aliases = []
    if (
        isinstance(token, dict)
        and as_text(token.get("name"))
        and as_text(token.get("name")) != as_text(doc.get("name"))
    ):
        aliases.append(as_text(token["name"]))
    secret = not controlled and _hidden(doc, world, absent=True)
    name = world.entity(
        where,
        name=doc.get("name"),
        type=EntityType.player if controlled else EntityType.npc,
        secret=secret,
        description=public,
        aliases=aliases,
        attributes={
            "tags": [as_text(t) for t in tags if as_text(t)] if isinstance(tags, list) else "",
            "race": attribs.get("race", ""),
            "class": attribs.get("class", ""),
            "alignment": attribs.get("alignment", ""),
            "level": attribs.get("level", ""),
        },
        dm_notes="\n\n".join(s for s in (gm, hidden, gm_hidden) if s),
        source_ids=(ids := _ids("character", doc)),
        states_notes="bio" in doc or "gmnotes" in doc,
    )
    if name is None:
        return
    for row, item in _inventory(doc).items():
        text = " ".join(item.values())
        if not (_MAGIC.search(text) or _BONUS.search(item["name"])):
            continue
        description = as_text(item.get("content") or item.get("itemcontent") or "")
        owned = world.entity(
            (file, f"{record or 'character'} inventory {row}"),
            name=item["name"],
            type=EntityType.item,
            description=description,
            attributes={"properties": as_text(item.get("itemproperties") or item.get("properties"))},
            # a hidden NPC's items are the GM's too (one public elsewhere stays so, this record's text GM notes)
            secret=secret,
            source_ids=[f"{ids[0]}/inventory:{row}"] if ids else [],  # a row's id is its character's own
        )
        if owned is not None and secret:
            world.assume(HIDDEN_OWNER, owned)
        if owned is not None and owned.casefold() != name.casefold():
            world.fact(where, source=name, type="owns", target=owned, secret=secret)


def _inventory(doc: dict[str, Any]) -> dict[str, dict[str, str]]:
    """The character's inventory rows: row id → {"name": …, and the row's other fields}."""
    attribs = _attributes(doc)
    rows: dict[str, dict[str, str]] = {}
    for key, value in attribs.items():
        match = _ITEM_NAME.match(key)
        if match and value:
            prefix = key[: -len(match.group(3))]
            fields = {k[len(prefix) :]: v for k, v in attribs.items() if k.startswith(prefix) and v}
            fields["name"] = value
            rows[match.group(2)] = fields
    return rows


#: What the card says of an item of an NPC no player's journal holds: made DM-only with its owner.
HIDDEN_OWNER = (
    "DM-only with the NPC in no player's journal that holds it (unless public elsewhere here or in the campaign)"
)

#: What the card says of a record some players' journals hold, not all: made DM-only.
SOME_PLAYERS = "DM-only, in some players' journals only (Lorekeeper cannot show a record to some players alone)"


def _hidden(doc: dict[str, Any], world: World, *, absent: bool = False) -> bool:
    """Whether a record is the GM's: in no player's journal (``inplayerjournals`` empty), or in some players' but not
    ``all`` (said on the card). ``absent``: what a record the field is missing from is (a handout's: public)."""
    if "inplayerjournals" not in doc:
        return absent
    shared = {part.strip() for part in as_text(doc.get("inplayerjournals")).split(",") if part.strip()}
    if shared and "all" not in shared and as_text(doc.get("name")):
        world.assume(SOME_PLAYERS, as_text(doc.get("name")))
    return "all" not in shared


def _handout(file: str, record: str | int | None, doc: dict[str, Any], world: World) -> None:
    public, hidden = _html(doc.get("notes"))
    gm, gm_hidden = _html(doc.get("gmnotes"))
    world.entity(
        (file, record),
        name=doc.get("name"),
        type=EntityType.concept,
        description=public,
        secret=_hidden(doc, world),
        dm_notes="\n\n".join(s for s in (gm, hidden, gm_hidden) if s),
        source_ids=_ids("handout", doc),
        states_notes=True,
        notes_label="handout",  # a character's notes and a handout's of its name: each imported again apart
    )
