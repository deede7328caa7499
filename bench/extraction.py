"""What the offline extractor puts in the DM's review queue for each CRD3 dev episode, and how much of it is worth
keeping.

    python bench/extraction.py                 # the table
    python bench/extraction.py --show C1E035   # also each item of one episode, with its best line (for judging)

Each episode is read as the extraction job reads an imported transcript, without a database: the entities of
campaigns/examples/critical_role.yaml are known, named as the pipeline names them (``gazetteer.of_mentions``: a person
by first or last name alone too; the wiki's sentences are read with it as well), lines go in slices of 200,
out-of-game talk (memory.offgame) and table talk (the salience gate) are skipped, the rule extractor proposes (told
which lines are the DM's opening recap, which it reads in the recap's register, where the session's scene moved,
found over the whole episode as the job finds it, and the turning points the DM's sentences tell by meaning, with
MiniLM; ``--no-meaning`` leaves those out), validation drops what it must, and items are counted once (as
``ensure_relationship`` and the name resolver keep them once). Stage-1 correction is left out: CRD3's text spells the
names already. Per episode:

* items: the review items (new entities and facts); per 500 turns; events: the new turning-point events among
  them (their rules' items, the event and its links, are tallied by rule after the table, and apart for those
  from the opening recap's lines and from play; so are the items of the alive and has fact rules);
* precision: the share of items judged "keep" in tests/data/extraction_judgements.json (each item marked keep,
  wrong or noise by hand, with its line), for the episodes judged; "noise" (not part of the game) per 500 turns;
* coverage: the share of the episode's aligned_index.dev summary chunks (chunk size 2, offset 0: two wiki sentences
  with their turn range) for which an item names an entity the chunk names, from a line inside the chunk's turns;
* retold: the events told only in the DM's recap at the opening (``opening_recap``): in a campaign, those merge
  into an earlier session's event of the name; another session's event of the name is named for its session;
* turning points: of the episode's 3 most summarised turning points, those with an item naming an entity their
  sentences name, from a line within ``--window`` turns of their turn range. A turning point is a summary chunk
  (size 2, offset 0) whose alignment is usable (score > 0, at most 30 turns, not all out of game) and whose
  sentences tell a death, an arrival, an acquisition or a quest (words of ``TURNING``, about a known entity of the
  kind's type); "most summarised" ranks them by how many aligned chunks of every size and offset (score > 0, at
  most 30 turns) cover one of their turns: the wiki's summary dwells on them. A missed one says why: none of its
  entities is named near it in game, only players name one, the DM names only players or kinds ("Gnoll"), or the
  DM names an npc, place or item there and no rule fires; and whether its turns hold a line of the opening recap.

Halves: the episodes in name order, even places (1st, 3rd, ...) are dev, odd places held-out. Rules are tuned on dev
only; held-out is reported apart (``--half dev`` reads dev alone, to tune without seeing held-out's lines).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
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
from memory.extraction.pipeline import meaning_events, opening_recap, scene_moves  # noqa: E402
from memory.extraction.rules import telling_line, whereabouts  # noqa: E402
from memory.extraction.salience import is_trivial  # noqa: E402
from memory.extraction.schema import players  # noqa: E402
from memory.extraction.validate import validate_result  # noqa: E402
from memory.gazetteer import Gazetteer, of_mentions  # noqa: E402
from memory.models import PERSON_TYPES, EntityType, Entry  # noqa: E402
from memory.offgame import narrator, out_of_game  # noqa: E402
from memory.providers.embeddings import MiniLMEmbedder  # noqa: E402

EXAMPLE = ROOT / "campaigns" / "examples" / "critical_role.yaml"
JUDGEMENTS = ROOT / "tests" / "data" / "extraction_judgements.json"
SLICE = 200
#: A usable alignment (data/README: spans of at most 30 turns, score above 0).
MAX_SPAN = 30
TOP_TURNING_POINTS = 3
#: Words of a summary sentence telling a turning point, by kind, and the type of the entity it is about.
TURNING: dict[str, tuple[re.Pattern[str], frozenset[EntityType]]] = {
    "death": (
        re.compile(
            r"\b(?:kill|killed|kills|killing|slain|slay|slays|slew|dies|died|death|dead|destroyed|beheads?|beheaded|"
            r"executed?|executes|murder|murdered|murders)\b",
            re.IGNORECASE,
        ),
        PERSON_TYPES | {EntityType.faction},
    ),
    "arrival": (
        re.compile(
            r"\b(?:arrives?|arrived|reach|reaches|reached|enters?|entered|travel|travels|traveled|travelled|"
            r"returns?|returned|heads?\s+(?:to|for|back)|headed\s+(?:to|for|back))\b",
            re.IGNORECASE,
        ),
        frozenset({EntityType.location}),
    ),
    "acquisition": (
        re.compile(
            r"\b(?:gives?|gave|given|receives?|received|finds?|found|obtains?|obtained|acquires?|acquired|loots?|"
            r"looted|takes?|took|buys?|bought|purchases?|purchased|steals?|stole)\b",
            re.IGNORECASE,
        ),
        frozenset({EntityType.item}),
    ),
    "quest": (
        re.compile(r"\b(?:quest|mission|contract|job|hires?|hired|bounty|task|completes?|completed)\b", re.IGNORECASE),
        frozenset({EntityType.npc, EntityType.faction, EntityType.quest}),
    ),
}


def known_entities() -> list[KnownEntity]:
    spec = read_campaign_file(EXAMPLE, max_bytes=50_000_000)
    return [
        KnownEntity(id=i, name=e.name, type=e.type, aliases=e.aliases, played_by=players(e.attributes))
        for i, e in enumerate(spec.entities, 1)
    ]


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
        self.ends: set[str] = set()  # its entity's name, or its fact's two ends, as proposed


async def review_items(lines: list[Entry], known: list[KnownEntity], embedder: MiniLMEmbedder | None) -> list[Item]:
    talk = out_of_game(lines, None)
    narrates = narrator(lines, None)  # over the whole episode, as the extraction job finds it
    retold = opening_recap(lines, talk, None)
    gazetteer = of_mentions(known)  # the pipeline's (extraction.pipeline.propose)
    resolver = NameResolver(known)
    scenes = scene_moves(lines, None, gazetteer)
    kept = [e for e in lines if e.id not in talk and (not is_trivial(e.text) or gazetteer.mentions(e.text))]
    # the episode's turning points by meaning, and where the party is, carried across slices (pipeline.SceneMoves)
    meant = await meaning_events(kept, narrates, gazetteer, embedder) if embedder else None
    where = whereabouts(kept, narrates, gazetteer, scenes, meant, retold)
    items: dict[str, Item] = {}
    for start in range(0, len(lines), SLICE):
        part = [e for e in lines[start : start + SLICE] if e.id not in talk]
        part = [e for e in part if not is_trivial(e.text) or gazetteer.mentions(e.text)]
        if not part:
            continue
        result = validate_result(
            await RuleExtractor().extract(
                part, known, narrates=narrates, retold=retold, scenes=scenes, meant=meant, here=where[part[0].id]
            ),
            known,
            {e.id for e in part},
        )
        for proposed in result.entities:
            if resolver.resolve(proposed.name)[0] is not None:
                continue  # a known entity under another spelling: merged, no item
            item = items.setdefault(f"new {proposed.type} {proposed.name}", Item("", []))
            item.key, item.turns = f"new {proposed.type} {proposed.name}", sorted({*item.turns, *proposed.entry_ids})
            item.names.add(normalize_name(proposed.name))
            item.ends.add(proposed.name)
        for fact in result.facts:
            key = f"{fact.source} —{fact.type}→ {fact.target if fact.target is not None else repr(fact.value)}"
            item = items.setdefault(key.casefold(), Item(key, []))
            item.turns = sorted({*item.turns, *fact.entry_ids})
            item.names |= {normalize_name(n) for n in (fact.source, fact.target) if n}
            item.ends |= {n for n in (fact.source, fact.target) if n}
    return list(items.values())


#: How a turning-point event's name begins (memory.extraction.events), by rule.
EVENT_KINDS = {
    "Death of ": "death", "Arrival at ": "arrival", "Arrival of ": "their arrival", "Acquisition of ": "acquisition",
    "Quest from ": "quest", "Battle with ": "battle",
}  # fmt: skip


#: The fact rules tallied apart (memory.extraction.rules), by how their items read: someone found alive, who holds
#: an item now.
FACT_RULES = {"—status→ 'alive'": "alive", "—has→ ": "has"}


def fact_rule(key: str) -> str | None:
    return next((rule for said, rule in FACT_RULES.items() if said in key), None)


def event_kind(key: str) -> str | None:
    """The rule of an event item ("new event Death of X") or of one of its links ("Grog —took_part_in→ Death of X")."""
    name = key.removeprefix("new event ") if key.startswith("new event ") else None
    if name is None and ("—took_part_in→ " in key or "—located_in→ " in key):
        name = key.split("—took_part_in→ ")[-1] if "—took_part_in→ " in key else key.split(" —located_in→ ")[0]
    return next((kind for prefix, kind in EVENT_KINDS.items() if name and name.startswith(prefix)), None)


def aligned(name: str) -> list[dict]:
    path = data_dir().parent / "aligned_index.dev.jsonl"
    return [c for c in map(json.loads, path.read_text(encoding="utf-8").splitlines()) if c["episode"] == name]


def turning_points(
    chunks: list[dict], offgame: set[int], known: list[KnownEntity], top: int = TOP_TURNING_POINTS
) -> list[dict]:
    """The episode's ``top`` most summarised turning points (see the module's doc), the most summarised first."""
    gazetteer = of_mentions(known)
    usable = [c for c in chunks if c["score"] > 0 and c["turn_end"] - c["turn_start"] <= MAX_SPAN]
    points = []
    for c in usable:
        turns = range(c["turn_start"], c["turn_end"] + 1)
        if c["chunk_size"] != 2 or c["offset"] != 0 or all(t in offgame for t in turns):
            continue
        types = {e.type for e in gazetteer.mentions(c["summary"])}
        kinds = [kind for kind, (words, about) in TURNING.items() if words.search(c["summary"]) and types & about]
        if kinds:
            weight = sum(1 for u in usable if u["turn_start"] <= c["turn_end"] and c["turn_start"] <= u["turn_end"])
            points.append({**c, "kinds": kinds, "weight": weight})
    return sorted(points, key=lambda p: (-p["weight"], p["turn_start"]))[:top]


def covers(item: Item, point: dict, window: int, gazetteer: Gazetteer[KnownEntity]) -> bool:
    """The item names an entity the turning point's sentences name, from a line within ``window`` turns of theirs."""
    summary = normalize_name(point["summary"])
    named = {normalize_name(e.name) for e in gazetteer.mentions(point["summary"])}
    return bool(item.names & named or any(n and n in summary for n in item.names)) and any(
        point["turn_start"] - window <= t <= point["turn_end"] + window for t in item.turns
    )


def why_missed(
    point: dict, lines: list[Entry], offgame: set[int], window: int, gazetteer: Gazetteer[KnownEntity]
) -> str:
    """Why no item covers a turning point: none of its entities is said near it (in game), only players say one, the
    DM names only players or kinds of thing ("Gnoll"), or the DM names someone, a place or a thing and no rule fires."""
    named = {e.id: e for e in gazetteer.mentions(point["summary"])}
    near = lines[max(0, point["turn_start"] - window) : point["turn_end"] + window + 1]
    said = [(e, named.keys() & set(gazetteer.mentioned_ids(e))) for e in near if e.id not in offgame]
    by_dm = {i for e, ids in said if e.speaker == DM for i in ids}
    if by_dm and any(named[i].type not in (EntityType.player, EntityType.concept) for i in by_dm):
        return "the DM names an npc, place or item"
    if by_dm:
        return "the DM names players or kinds"
    return "only players name one" if any(ids for _, ids in said) else "none named near it"


def coverage(name: str, items: list[Item], known: list[KnownEntity]) -> tuple[int, int]:
    """(chunks covered, chunks) of the episode's aligned summary."""
    chunks = [c for c in aligned(name) if c["chunk_size"] == 2 and c["offset"] == 0]  # the sentences in pairs
    gazetteer = of_mentions(known)
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
    parser.add_argument(
        "--top", type=int, default=TOP_TURNING_POINTS, help="turning points an episode (the issue's target: 3)"
    )
    parser.add_argument("--no-meaning", action="store_true", help="without the turning points read by meaning")
    parser.add_argument("--window", type=int, default=10, help="turns around a turning point's range (default 10)")
    parser.add_argument("--half", choices=("dev", "held-out"), help="read only this half's episodes")
    args = parser.parse_args()
    known = known_entities()
    embedder = None if args.no_meaning else MiniLMEmbedder()
    judged: dict[str, dict[str, list[str]]] = (
        json.loads(JUDGEMENTS.read_text(encoding="utf-8"))["episodes"] if JUDGEMENTS.exists() else {}
    )
    print(
        "| half | episode | turns | items | events | per 500 turns | judged | keep | wrong | noise | precision "
        "| coverage | turning points |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    halves: dict[str, dict[str, int]] = {"dev": defaultdict(int), "held-out": defaultdict(int)}
    gazetteer = of_mentions(known)
    shown: list[str] = []
    for place, path in enumerate(sorted(data_dir().glob("*.json"))):
        half = "dev" if place % 2 == 0 else "held-out"
        if args.half not in (None, half):
            continue  # tune on dev without reading the held-out half's lines
        totals = halves[half]
        turns = episode(path.stem)
        lines = entries(turns)
        items = asyncio.run(review_items(lines, known, embedder))
        covered, chunks = coverage(path.stem, items, known)
        offgame = set(out_of_game(lines, None))  # entry ids are turn numbers here
        points = turning_points(aligned(path.stem), offgame, known, args.top)
        hit = [p for p in points if any(covers(i, p, args.window, gazetteer) for i in items)]
        events = sum(1 for i in items if i.key.startswith("new event "))
        recap = opening_recap(lines, out_of_game(lines, None), None)
        totals["retold"] += sum(1 for i in items if i.key.startswith("new event ") and set(i.turns) <= recap)
        marks = judged.get(path.stem, {})
        counts = {k: sum(1 for i in items if marks.get(i.key, [""])[0] == k) for k in ("keep", "wrong", "noise")}
        n_judged = sum(counts.values())
        precision = f"{counts['keep'] / n_judged:.2f}" if n_judged else "-"
        print(
            f"| {half} | {path.stem} | {len(turns)} | {len(items)} | {events} | {500 * len(items) / len(turns):.2f} | "
            f"{n_judged} | {counts['keep']} | {counts['wrong']} | {counts['noise']} | {precision} | "
            f"{covered}/{chunks} | {len(hit)}/{len(points)} |"
        )
        for key, value in (
            ("turns", len(turns)), ("items", len(items)), ("events", events), ("covered", covered),
            ("chunks", chunks), ("points", len(points)), ("hit", len(hit)),
        ):  # fmt: skip
            totals[key] += value
        for p in points:
            mark = "covered" if p in hit else f"missed: {why_missed(p, lines, offgame, args.window, gazetteer)}"
            totals[f"why {mark}"] += 1
            if any(p["turn_start"] <= t <= p["turn_end"] for t in recap):
                mark += ", in the recap"
                totals["recap points"] += 1
            shown.append(f"{path.stem} turns {p['turn_start']}-{p['turn_end']}, {'/'.join(p['kinds'])} ({p['weight']} "
                         f"chunks, {mark}): {' '.join(p['summary'].split())[:120]}")  # fmt: skip
        if n_judged:
            for key, value in counts.items():
                totals[key] += value
            totals["judged_turns"] += len(turns)
        for item in items:  # each turning-point rule's items (the event and its links), to keep or drop the rule
            if (kind := event_kind(item.key)) is not None:
                where = "recap" if set(item.turns) <= recap else "play"
                for key in (kind, where):
                    totals[f"{key} items"] += 1
                    totals[f"{key} keep"] += marks.get(item.key, [""])[0] == "keep"
            if (rule := fact_rule(item.key)) is not None:
                totals[f"fact {rule} items"] += 1
                totals[f"fact {rule} keep"] += marks.get(item.key, [""])[0] == "keep"
        if args.show in (path.stem, "all"):
            for item in items:
                # as the review queue shows it: the DM's line that tells its turning point, else the DM's first
                said = [t for t in item.turns if turns[t][0] == DM] or item.turns
                best = said[telling_line(item.ends, [turns[t][1] for t in said], gazetteer)]
                mark = marks.get(item.key, ["?"])[0]
                print(f"    [{mark}] {item.key}  ({len(item.turns)} lines) turn {best} {turns[best][0]}: "
                      f"{turns[best][1][:160]}")  # fmt: skip
    halves = {half: totals for half, totals in halves.items() if args.half in (None, half)}
    for half, totals in halves.items():
        judged_n = totals["keep"] + totals["wrong"] + totals["noise"]
        print(
            f"| {half} | all | {totals['turns']} | {totals['items']} | {totals['events']} | "
            f"{500 * totals['items'] / totals['turns']:.2f} | {judged_n} | {totals['keep']} | {totals['wrong']} | "
            f"{totals['noise']} | {totals['keep'] / max(1, judged_n):.2f} | {totals['covered']}/{totals['chunks']} | "
            f"{totals['hit']}/{totals['points']} |"
        )
    print()
    for half, totals in halves.items():
        noise = 500 * totals["noise"] / totals["judged_turns"] if totals["judged_turns"] else 0.0
        print(f"{half}: noise per 500 turns in the judged episodes {noise:.2f}; turning points with an item "
              f"within {args.window} turns: {totals['hit']} of {totals['points']}")  # fmt: skip
    for half, totals in halves.items():
        rules = ", ".join(
            f"{kind} {totals[f'{kind} keep']} of {totals[f'{kind} items']}"
            for kind in EVENT_KINDS.values()
            if totals[f"{kind} items"]
        )
        print(f"{half}: turning-point items kept, by rule (event and links): {rules or 'none'}; from the DM's "
              f"opening recap {totals['recap keep']} of {totals['recap items']}, from play {totals['play keep']} of "
              f"{totals['play items']}")  # fmt: skip
    for half, totals in halves.items():
        facts = ", ".join(
            f"{rule} {totals[f'fact {rule} keep']} of {totals[f'fact {rule} items']}" for rule in FACT_RULES.values()
        )
        print(f"{half}: fact items kept, by rule: {facts}")
    for half, totals in halves.items():
        print(f"{half}: events told only in the opening's recap (an earlier session's, when one has the name): "
              f"{totals['retold']} of {totals['events']}")  # fmt: skip
    for half, totals in halves.items():
        whys = ", ".join(f"{why.removeprefix('why missed: ')} {n}" for why, n in totals.items() if "missed" in why)
        print(f"{half}: turning points covered {totals['why covered']}; missed: {whys or 'none'}; "
              f"in the DM's opening recap: {totals['recap points']} of {totals['points']}")  # fmt: skip
    print(f"\nThe turning points (the {args.top} most summarised of each episode):")
    for line in shown:
        print(f"    {line}")


if __name__ == "__main__":
    main()
