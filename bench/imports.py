"""Import parsing speed: a generated Foundry world's ``actors.db`` (NeDB, one actor a line, each with one magic and
four mundane items and an HTML biography with a secret block) read into campaign-file entries. Pure Python, no
database: what the DM waits for before the batch is staged.

    python bench/imports.py [--sizes 500,2000,5000]
"""

from __future__ import annotations

import argparse
import json
import time

from campaigns.imports import read_import


def actors_db(n: int) -> bytes:
    lines = []
    for i in range(n):
        items = [
            {
                "_id": f"m{i}",
                "name": f"Blade of Night {i}",
                "type": "weapon",
                "system": {"description": {"value": "<p>Dark.</p>"}, "rarity": "rare", "properties": ["mgc"]},
            },
            *({"_id": f"i{i}_{k}", "name": f"Rope {k}", "type": "loot", "system": {"rarity": ""}} for k in range(4)),
        ]
        bio = f"<p>Actor <strong>{i}</strong> of the coast.</p><section class='secret'><p>Spy {i}.</p></section>"
        doc = {
            "_id": f"a{i}",
            "name": f"Actor {i:05d}",
            "type": "npc",
            "system": {"details": {"biography": {"value": bio}, "alignment": "Neutral"}},
            "items": items,
        }
        lines.append(json.dumps(doc))
    return "\n".join(lines).encode()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="500,2000,5000")
    sizes = [int(s) for s in parser.parse_args().sizes.split(",")]
    print("| actors | file | entities | facts | read (s) |")
    print("|---:|---:|---:|---:|---:|")
    for n in sizes:
        data = actors_db(n)
        start = time.perf_counter()
        world = read_import([("actors.db", data)])
        took = time.perf_counter() - start
        size = f"{len(data) / 2**20:.1f} MB"
        print(f"| {n:,} | {size} | {len(world.entities):,} | {len(world.relationships):,} | {took:.2f} |")


if __name__ == "__main__":
    main()
