"""Turning points the DM tells of a description or a pronoun ("you pick up the blade", "she crumples"), each resolved
to the one entity the lines around it name: tried on the dev episodes only, not kept (issue 31; bench/README.md "The
offline review queue").

    LOREKEEPER_DATA=../shared/data PYTHONPATH=$PWD python bench/described_turning.py [--window 4] [--after]
        [--names-only] [--top 3]

A DM's line (in game) gives a turning point the clause rules (memory.extraction.events) read once a definite
description in it (up to three words after "the": "the blade", "the town", "the adamantine hammer") stands for the
one known npc, place, item or faction that the lines within ``--window`` of it name (any speaker; ``--after``: the
players' lines after it only) and that the noun fits: a word of its name or an alias ("the tavern", the Feed and
Mead Tavern), or a noun of its type (``memory.extraction.lexicon.NOUN_TYPE``: "blade" an item, "town" a place;
``--names-only`` leaves this out). Two fits, or none: nothing. A death told of "him" or "her" reads the same lines
(``scene_deaths``), not only the 4 before. It counts the DM's clauses a description completes (a turning point, were
it a known npc, place or item) by how many entities around fit it; each item the extraction bench does not already
propose is listed with its line and its mark in tests/data/extraction_judgements.json; then the turning points with
an item within 10 turns, without and with the new items.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.extraction import (
    JUDGEMENTS,
    SLICE,
    Item,
    aligned,
    covers,
    entries,
    known_entities,
    review_items,
    turning_points,
)
from bench.offgame import data_dir, episode
from memory.extraction.events import Event, EventKind, SceneLine, events, scene_deaths, scene_named
from memory.extraction.lexicon import NOUN_TYPE
from memory.extraction.names import normalize_name
from memory.extraction.pipeline import opening_recap
from memory.extraction.rules import SCENE_LINES, _tag
from memory.extraction.salience import is_trivial
from memory.extraction.schema import KnownEntity
from memory.gazetteer import Gazetteer
from memory.models import EntityType
from memory.offgame import narrator, out_of_game
from memory.providers.embeddings import MiniLMEmbedder

_THE = re.compile(r"\b(?i:the)\s+(?P<w1>[a-z][a-z-]+)(?:\s+(?P<w2>[a-z][a-z-]+))?(?:\s+(?P<w3>[a-z][a-z-]+))?")
_DESCRIBED = frozenset({EntityType.npc, EntityType.location, EntityType.item, EntityType.faction})


def _words(e: KnownEntity) -> set[str]:
    return {w for n in (e.name, *e.aliases) for w in re.findall(r"[a-z][a-z-]+", n.casefold()) if len(w) > 2}


def fits(noun: str, near: list[KnownEntity], names_only: bool) -> list[KnownEntity]:
    """The entities of ``near`` the noun may stand for: a word of a name, or (not ``names_only``) its type's noun."""
    noun = noun.casefold()
    return list(
        {
            e.id: e
            for e in near
            if e.type in _DESCRIBED
            and (
                noun in _words(e)
                or noun.removesuffix("s") in _words(e)
                or (not names_only and NOUN_TYPE.get(noun) == e.type)
            )
        }.values()
    )


def described(
    text: str, found: list[KnownEntity], near: list[KnownEntity], names_only: bool
) -> tuple[str, list[KnownEntity], set[int]]:
    """``text`` (tagged) with each description of one fit tagged as that entity; the ids of those resolved."""
    found, resolved, parts, done = list(found), set(), [], 0
    for m in _THE.finditer(text):
        for group in ("w1", "w2", "w3"):
            if m.group(group) is None or len(fit := fits(m.group(group), near, names_only)) > 1:
                break
            if fit:
                parts += [text[done : m.start()], f"the \ue000{len(found)}\ue001"]
                found.append(fit[0])
                resolved.add(fit[0].id)
                done = m.end(group)
                break
    return "".join([*parts, text[done:]]), found, resolved


def completes(text: str, found: list[KnownEntity], retold: bool) -> list[tuple[str, EntityType, EventKind]]:
    """The descriptions of ``text`` (tagged) that a clause rule would read as a turning point if they were a known
    name (an npc, a place or an item): each with its noun, that type and the event's kind."""
    out = []
    for m in _THE.finditer(text):
        for group in ("w1", "w2", "w3"):
            if m.group(group) is None:
                break
            as_name = f"{text[: m.start()]}the \ue000{len(found)}\ue001{text[m.end(group) :]}"
            kinds = [
                (m.group(group), t, e.kind)
                for t in (EntityType.npc, EntityType.location, EntityType.item)
                for e in events(as_name, [*found, KnownEntity(id=-1, name="?", type=t)], retold=retold)
                if -1 in {x.id for x in (*e.participants, *([e.place] if e.place else []))}
            ]
            if kinds:
                out.append(kinds[0])
                break
    return out


def keys(event: Event) -> list[tuple[str, set[str]]]:
    """The review items an event makes (as the rule extractor files it), each with the names it carries."""
    name = normalize_name(event.name)
    out = [(f"new event {event.name}", {name})]
    for who in event.participants:
        if event.kind == EventKind.death and event.name == f"Death of {who.name}":
            out.append((f"{who.name} —status→ 'dead'", {normalize_name(who.name)}))
        out.append((f"{who.name} —took_part_in→ {event.name}", {normalize_name(who.name), name}))
    if event.place is not None:
        out.append((f"{event.name} —located_in→ {event.place.name}", {name, normalize_name(event.place.name)}))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--window", type=int, default=4, help="lines either side whose names a description may take")
    parser.add_argument("--after", action="store_true", help="only the players' lines after the DM's")
    parser.add_argument("--names-only", action="store_true", help="a noun fits a name's words only, not its type")
    parser.add_argument("--top", type=int, default=3, help="turning points an episode")
    args = parser.parse_args()
    known, embedder = known_entities(), MiniLMEmbedder()
    gazetteer = Gazetteer(known)
    judged = json.loads(JUDGEMENTS.read_text(encoding="utf-8"))["episodes"]
    total = {"new": 0, "keep": 0, "before": 0, "after": 0, "points": 0}
    clauses: dict[str, int] = {}
    for place, path in enumerate(sorted(data_dir().glob("*.json"))):
        if place % 2:  # held-out: never read here
            continue
        turns = episode(path.stem)
        lines = entries(turns)
        items = asyncio.run(review_items(lines, known, embedder))
        have = {i.key.casefold() for i in items}
        talk, by_dm = out_of_game(lines, None), narrator(lines, None)
        recap = opening_recap(lines, talk, None)
        new: dict[str, Item] = {}
        dm_line: dict[str, int] = {}  # the DM's line of each new item
        for start in range(0, len(lines), SLICE):  # the slices the extraction job reads
            part = [e for e in lines[start : start + SLICE] if e.id not in talk]
            part = [e for e in part if not is_trivial(e.text) or gazetteer.mentions(e.text)]
            tagged = [_tag(gazetteer, e.text) for e in part]
            named = [scene_named(text, found) for text, found in tagged]
            for at, entry in enumerate(part):
                if not by_dm(entry):
                    continue
                around = [
                    j
                    for j in range(max(0, at - args.window), min(len(part), at + args.window + 1))
                    if j != at and (not args.after or (j > at and not by_dm(part[j])))
                ]
                text, found = tagged[at]
                near = [e for j in around for e in named[j]]
                for noun, kind_type, kind in completes(text, found, entry.id in recap):
                    n = len([e for e in fits(noun, near, args.names_only) if e.type == kind_type])
                    clauses[f"{kind.value}, {min(n, 2)} fits"] = clauses.get(f"{kind.value}, {min(n, 2)} fits", 0) + 1
                before = [SceneLine(named[j]) for j in range(max(0, at - SCENE_LINES), at)]
                told = {
                    e.name for e in (*events(text, found, retold=entry.id in recap), *scene_deaths(text, found, before))
                }
                text2, found2, resolved = described(text, found, near, args.names_only)
                got = [
                    e
                    for e in events(text2, found2, retold=entry.id in recap)
                    if resolved & {x.id for x in (*e.participants, *([e.place] if e.place else []))}
                ]
                got += scene_deaths(text, found, [SceneLine(named[j]) for j in around])
                for event in (e for e in got if e.name not in told):
                    ends = {x.id for x in (*event.participants, *([event.place] if event.place else []))}
                    naming = [part[j].id for j in around if ends & {e.id for e in named[j]}][:1]
                    for key, names in keys(event):
                        if key.casefold() not in have:
                            item = new.setdefault(key, Item(key, []))
                            item.turns = sorted({*item.turns, entry.id, *naming})
                            item.names |= names
                            dm_line.setdefault(key, entry.id)
        marks = judged.get(path.stem, {})
        for key, item in new.items():
            mark = marks.get(key, ["?"])[0]
            total["new"] += 1
            total["keep"] += mark == "keep"
            print(f"{path.stem} [{mark}] {key} (turns {item.turns}) {dm_line[key]}: {turns[dm_line[key]][1][:140]}")
        points = turning_points(aligned(path.stem), set(talk), known, args.top)
        total["points"] += len(points)
        for p in points:
            total["before"] += any(covers(i, p, 10, gazetteer) for i in items)
            total["after"] += any(covers(i, p, 10, gazetteer) for i in [*items, *new.values()])
    print("dev: the DM's clauses a description completes, by the fits around it:", dict(sorted(clauses.items())))
    print(
        f"dev: new items {total['new']}, kept {total['keep']}; turning points with an item within 10 turns: "
        f"{total['before']} of {total['points']} without them, {total['after']} with them"
    )


if __name__ == "__main__":
    main()
