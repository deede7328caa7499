"""What the offline extractor puts in the DM's review queue for each CRD3 dev episode, and how much of it is worth
keeping.

    python bench/extraction.py                 # the table
    python bench/extraction.py --show C1E035   # also each item of one episode, with its best line (for judging)

Each episode is read as the extraction job reads an imported transcript, without a database: the entities of
campaigns/examples/critical_role.yaml are known, lines go in slices of 200, out-of-game talk (memory.offgame) and
table talk (the salience gate) are skipped, the rule extractor proposes, validation drops what it must, and items
are counted once (as ``ensure_relationship`` and the name resolver keep them once). Stage-1 correction is left out:
CRD3's text spells the names already. Per episode:

* items: the review items (new entities and facts); per 500 turns;
* precision: the share of items judged "keep" in tests/data/extraction_judgements.json (each item marked keep,
  wrong or noise by hand, with its line), for the episodes judged; "noise" (not part of the game) per 500 turns;
* coverage: the share of the episode's aligned_index.dev summary chunks (chunk size 2, offset 0: two wiki sentences
  with their turn range) for which an item names an entity the chunk names, from a line inside the chunk's turns.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.offgame import DM, data_dir, episode  # noqa: E402
from campaigns.files import read_campaign_file  # noqa: E402
from memory.extraction import KnownEntity, RuleExtractor  # noqa: E402
from memory.extraction.names import NameResolver, normalize_name  # noqa: E402
from memory.extraction.salience import is_trivial  # noqa: E402
from memory.extraction.validate import validate_result  # noqa: E402
from memory.gazetteer import Gazetteer  # noqa: E402
from memory.models import Entry  # noqa: E402
from memory.offgame import out_of_game  # noqa: E402

EXAMPLE = ROOT / "campaigns" / "examples" / "critical_role.yaml"
JUDGEMENTS = ROOT / "tests" / "data" / "extraction_judgements.json"
SLICE = 200


def known_entities() -> list[KnownEntity]:
    spec = read_campaign_file(EXAMPLE, max_bytes=50_000_000)
    return [KnownEntity(id=i, name=e.name, type=e.type, aliases=e.aliases) for i, e in enumerate(spec.entities, 1)]


def entries(turns: list[tuple[str, str]]) -> list[Entry]:
    now = datetime.now(UTC)
    return [
        Entry(id=n, campaign_id=1, session_id=1, seq=n + 1, speaker=speaker, speaker_id=None, raw_text=text,
              text=text, start_s=0.0, end_s=None, duration_s=None, ref=f"turn {n}", corrections=[], created_at=now)
        for n, (speaker, text) in enumerate(turns)
    ]  # fmt: skip


class Item:
    """One review item: what it says and the turns that said it."""

    def __init__(self, key: str, turns: list[int]) -> None:
        self.key = key
        self.turns = sorted(set(turns))
        self.names: set[str] = set()


async def review_items(lines: list[Entry], known: list[KnownEntity]) -> list[Item]:
    talk = out_of_game(lines, None)
    gazetteer = Gazetteer(known)
    resolver = NameResolver(known)
    items: dict[str, Item] = {}
    for start in range(0, len(lines), SLICE):
        part = [e for e in lines[start : start + SLICE] if e.id not in talk]
        part = [e for e in part if not is_trivial(e.text) or gazetteer.mentions(e.text)]
        if not part:
            continue
        result = validate_result(await RuleExtractor().extract(part, known), known, {e.id for e in part})
        for proposed in result.entities:
            if resolver.resolve(proposed.name)[0] is not None:
                continue  # a known entity under another spelling: merged, no item
            item = items.setdefault(f"new {proposed.type} {proposed.name}", Item("", []))
            item.key, item.turns = f"new {proposed.type} {proposed.name}", sorted({*item.turns, *proposed.entry_ids})
            item.names.add(normalize_name(proposed.name))
        for fact in result.facts:
            key = f"{fact.source} —{fact.type}→ {fact.target if fact.target is not None else repr(fact.value)}"
            item = items.setdefault(key.casefold(), Item(key, []))
            item.turns = sorted({*item.turns, *fact.entry_ids})
            item.names |= {normalize_name(n) for n in (fact.source, fact.target) if n}
    return list(items.values())


def coverage(name: str, items: list[Item], known: list[KnownEntity]) -> tuple[int, int]:
    """(chunks covered, chunks) of the episode's aligned summary."""
    path = data_dir().parent / "aligned_index.dev.jsonl"
    chunks = [  # the summary's sentences in pairs, each once
        c
        for c in map(json.loads, path.read_text(encoding="utf-8").splitlines())
        if c["episode"] == name and c["chunk_size"] == 2 and c["offset"] == 0
    ]
    gazetteer = Gazetteer(known)
    covered = 0
    for chunk in chunks:
        named = {normalize_name(e.name) for e in gazetteer.mentions(chunk["summary"])}
        named |= {n for item in items for n in item.names if n and n in normalize_name(chunk["summary"])}
        if any(
            item.names & named and any(chunk["turn_start"] <= t <= chunk["turn_end"] for t in item.turns)
            for item in items
        ):
            covered += 1
    return covered, len(chunks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show", metavar="EPISODE", help="list one episode's items with their best line")
    args = parser.parse_args()
    known = known_entities()
    judged: dict[str, dict[str, list[str]]] = (
        json.loads(JUDGEMENTS.read_text(encoding="utf-8"))["episodes"] if JUDGEMENTS.exists() else {}
    )
    print("| episode | turns | items | per 500 turns | judged | keep | wrong | noise | precision | coverage |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    totals: dict[str, int] = defaultdict(int)
    for path in sorted(data_dir().glob("*.json")):
        turns = episode(path.stem)
        lines = entries(turns)
        items = asyncio.run(review_items(lines, known))
        covered, chunks = coverage(path.stem, items, known)
        marks = judged.get(path.stem, {})
        counts = {k: sum(1 for i in items if marks.get(i.key, [""])[0] == k) for k in ("keep", "wrong", "noise")}
        n_judged = sum(counts.values())
        precision = f"{counts['keep'] / n_judged:.2f}" if n_judged else "-"
        print(
            f"| {path.stem} | {len(turns)} | {len(items)} | {500 * len(items) / len(turns):.2f} | {n_judged} | "
            f"{counts['keep']} | {counts['wrong']} | {counts['noise']} | {precision} | {covered}/{chunks} |"
        )
        for key, value in (("turns", len(turns)), ("items", len(items)), ("covered", covered), ("chunks", chunks)):
            totals[key] += value
        if n_judged:
            for key, value in counts.items():
                totals[key] += value
            totals["judged_turns"] += len(turns)
        if args.show in (path.stem, "all"):
            for item in items:
                best = next((t for t in item.turns if turns[t][0] == DM), item.turns[0])
                mark = marks.get(item.key, ["?"])[0]
                print(f"    [{mark}] {item.key}  ({len(item.turns)} lines) turn {best} {turns[best][0]}: "
                      f"{turns[best][1][:160]}")  # fmt: skip
    judged_n = totals["keep"] + totals["wrong"] + totals["noise"]
    print(
        f"| all | {totals['turns']} | {totals['items']} | {500 * totals['items'] / totals['turns']:.2f} | "
        f"{judged_n} | {totals['keep']} | {totals['wrong']} | {totals['noise']} | "
        f"{totals['keep'] / max(1, judged_n):.2f} | {totals['covered']}/{totals['chunks']} |"
    )
    if judged_n:
        print(f"\nnoise per 500 turns in the judged episodes: {500 * totals['noise'] / totals['judged_turns']:.2f}")


if __name__ == "__main__":
    main()
