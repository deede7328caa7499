"""A Foundry v11+ world as Foundry writes it, LevelDB folders and all, for the import tests (unit, integration, e2e)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def leveldb(folder: Path, entries: dict[str, dict[str, object]]) -> None:
    """A LevelDB folder as Foundry v11+ writes one: ``!actors!<id>``, an embedded document under its parent's
    sublevel and id (``!actors.items!<actorId>.<itemId>``), the parent listing the ids; JSON values."""
    plyvel = pytest.importorskip("plyvel")
    folder.mkdir(parents=True, exist_ok=True)
    db = plyvel.DB(str(folder), create_if_missing=True)
    for key, value in entries.items():
        db.put(key.encode(), json.dumps(value).encode())
    db.close()


def v11_world(root: Path) -> Path:
    """A Foundry v11+ world folder: world.json, data/ of LevelDB folders, and a compendium pack of its own."""
    world = root / "tides"
    world.mkdir(parents=True)
    (world / "world.json").write_text('{"id": "tides", "title": "Tides", "system": "dnd5e", "compatibility": {}}')
    (world / "data").mkdir()  # the v10 file Foundry migrated to data/actors/ and kept: stale
    (world / "data" / "actors.db").write_text(json.dumps({"_id": "vask000000000001", "name": "Vask", "type": "npc"}))
    leveldb(
        world / "data" / "actors",
        {
            "!actors!vask000000000001": {
                "_id": "vask000000000001",
                "name": "Vask the Ashen",
                "type": "npc",
                "system": {
                    "details": {"biography": {"value": "<p>A smith.</p><section class='secret'>A spy.</section>"}}
                },
                "items": ["blade00000000001", "dagger0000000001", "ring000000000001"],
                "effects": [],
                "prototypeToken": {"name": "Vask"},
            },
            "!actors.items!vask000000000001.blade00000000001": {
                "_id": "blade00000000001",
                "name": "Ember Blade",
                "type": "weapon",
                "system": {"rarity": "rare", "description": {"value": "<p>Always warm.</p>"}},
                "effects": ["glow000000000001"],
            },
            "!actors.items.effects!vask000000000001.blade00000000001.glow000000000001": {"_id": "glow000000000001"},
            "!actors.items!vask000000000001.dagger0000000001": {
                "_id": "dagger0000000001",
                "name": "Dagger",
                "type": "weapon",
            },
            "!actors.items!vask000000000001.ring000000000001": {
                "_id": "ring000000000001",
                "name": "Ring of Spite",
                "type": "equipment",
                "system": {"rarity": "rare", "identified": False, "unidentified": {"name": "Black Ring"}},
            },
        },
    )
    leveldb(
        world / "data" / "journal",
        {
            "!journal!pact000000000001": {
                "_id": "pact000000000001",
                "name": "The Pact of Tides",
                "ownership": {"default": 2},
                "pages": ["terms00000000001", "price00000000001"],
            },
            "!journal.pages!pact000000000001.terms00000000001": {
                "_id": "terms00000000001",
                "name": "Terms",
                "type": "text",
                "text": {"content": "<p>The sea takes one ship a year.</p>"},
                "ownership": {"default": -1},
            },
            "!journal.pages!pact000000000001.price00000000001": {
                "_id": "price00000000001",
                "name": "Price",
                "type": "text",
                "text": {"content": "<p>The captain is the price.</p>"},
                "ownership": {"default": 0},  # the GM's page
            },
        },
    )
    leveldb(
        world / "data" / "scenes",
        {"!scenes!docks00000000001": {"_id": "docks00000000001", "name": "Saltmere Docks", "navName": "The Docks"}},
    )
    leveldb(world / "data" / "folders", {"!folders!folder0000000001": {"_id": "folder0000000001", "name": "NPCs"}})
    leveldb(
        world / "packs" / "priests",
        {
            "!actors!priest0000000001": {
                "_id": "priest0000000001",
                "name": "Tide Priest",
                "type": "npc",
                "system": {},
                "items": [],
                "prototypeToken": {},
            }
        },
    )
    return world
