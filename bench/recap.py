"""Offline recap quality: does the session recap tell the story the fan wiki tells?

    python -m bench.recap [--episodes C1E001,C2E002] [--show C1E020]
    python -m bench.recap --timing [--episodes C1E035] [--runs 3]

Each Critical Role episode of ../shared/data/crd3 (override with LOREKEEPER_DATA; "skipped: data not found"
without it) goes through the real ``extractive_summary`` as Entries, with a Gazetteer of the 1,272 wiki entities
built as the correction bench builds it. The reference recap of an episode is its fan-wiki summary sentences in
``aligned_index.dev.jsonl`` (each sentence once: the chunk sizes repeat them); an episode without any (C1E080) is
left out. For each episode and method:

- words: the recap's length, its "Involved:" line and the speakers' names aside (the same for every method);
- ROUGE-1 / ROUGE-2 recall and F: content words (stop words aside, lower case) and pairs of consecutive content
  words of the recap against the reference;
- entities: the share of the entities the reference names that the recap's lines name;
- coverage: the share of the reference sentences with a well-aligned turn range (score > 0, at most 30 turns,
  its tightest chunk) that a recap line falls within, or within ``--near`` turns of.

``--timing`` instead times what a DM waits for after ``lorekeeper ingest EPISODE --wait``, with the example
campaign file (campaigns/examples/critical_role.yaml) loaded first: each run a throw-away embedded PostgreSQL
(no embedding cached), the episode imported, then the jobs drained in-process with MiniLM, timing from the drain's
start until the recap is written and until every job is done. "before" is the recap job waiting for the chunk
job (the lines' vectors) as it did, "after" as it does now; runs alternate, so both see the same load.

The new recap's quoted lines are also looked up in hand labels (tests/data/recap_quote_labels.json: each line
quoted by this or an earlier version of the recap, marked story, rules, mixed or table): how many quote rules or
table talk, and which were never judged.

The baselines get the same word budget as the new recap of that episode: the first turns of the session, and
turns spread evenly over it (each cut to its share of the budget). "old" is the recap of the code before session
17 (5 turns by entity mentions and length), "old, cut" the same cut to the budget.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.correction import CRD3, crd3_entities, table
from campaigns.files import read_campaign_file
from memory.correction import EntityName
from memory.correction.text import normalize
from memory.extraction.schema import KnownEntity
from memory.gazetteer import Gazetteer
from memory.jobs import extractive_summary
from memory.models import EntityType, Entry
from memory.recap import PREVIOUSLY

ALIGNED = CRD3 / "aligned_index.dev.jsonl"
QUOTES = Path(__file__).resolve().parents[1] / "tests" / "data" / "recap_quote_labels.json"
EPISODES = CRD3 / "episodes"
#: Episodes the selection was tuned on; the rest were only read after the weights were set.
TUNE = ("C1E001", "C1E035", "C1E065", "C2E006")

_STOP = frozenset(
    """a about above after again against all am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her here
    hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now of
    off on once only or other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up very was we were what
    when where which while who whom why will with would you your yours yourself yourselves s t d ll m re ve
    okay ok yeah oh um uh like gonna get got go going one also""".split()
)


@dataclass
class Episode:
    name: str
    entries: list[Entry]
    reference: list[str]  # the wiki's summary sentences, each once, in order
    spans: list[tuple[int, int]]  # the well-aligned sentences' turn ranges


def _sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+|\n+", text)
    return [" ".join(p.split()) for p in parts if len(p.split()) >= 3]


def load_episode(name: str, aligned: list[dict]) -> Episode:
    turns = json.loads((EPISODES / f"{name}.json").read_text())["TURNS"]
    when = datetime(2015, 3, 12, tzinfo=UTC)
    entries = [
        Entry(
            id=i + 1,
            campaign_id=1,
            session_id=1,
            seq=i + 1,
            speaker=", ".join(n.title() for n in t["NAMES"]),
            speaker_id=None,
            raw_text=(text := " ".join(" ".join(t["UTTERANCES"]).split())),
            text=text,
            start_s=float(i),
            end_s=None,
            duration_s=None,
            ref=f"{name}:{t['NUMBER']}",
            corrections=[],
            created_at=when,
        )
        for i, t in enumerate(turns)
    ]
    reference: dict[str, None] = {}
    tightest: dict[str, tuple[int, int, int]] = {}  # sentence -> (chunk size, start, end)
    rows = [r for r in aligned if r["episode"] == name]
    for r in sorted(rows, key=lambda r: (r["chunk_size"], r["offset"], r["chunk_id"])):
        for s in _sentences(r["summary"]):
            reference.setdefault(s)
            if r["score"] > 0 and r["turn_end"] - r["turn_start"] <= 30:
                span = (r["chunk_size"], r["turn_start"], r["turn_end"])
                if s not in tightest or span[0] < tightest[s][0]:
                    tightest[s] = span
    return Episode(name, entries, list(reference), [(a, b) for _, a, b in tightest.values()])


def typed(entities: list[EntityName]) -> list[EntityName | KnownEntity]:
    """``entities`` with their types where the example campaign file (campaigns/examples/critical_role.yaml) names
    them, by name or alias: the recap finds the turning points a DM's campaign would (a death needs a person)."""
    example = read_campaign_file(EXAMPLE)
    types = {normalize(n): EntityType(e.type) for e in example.entities for n in [e.name, *e.aliases]}
    return [
        KnownEntity(id=e.id, name=e.name, type=kind, aliases=e.aliases, heard_as=e.heard_as)
        if e.id is not None and (kind := types.get(normalize(e.name)))
        else e
        for e in entities
    ]


# --- the measures -------------------------------------------------------------------------------------------


def content_words(text: str) -> list[str]:
    words = re.findall(r"[a-z0-9]+(?:'[a-z]+)?", text.lower())
    return [w.removesuffix("'s") for w in words if w.removesuffix("'s") not in _STOP]


def rouge(candidate: Sequence[str], reference: Sequence[str], n: int) -> tuple[float, float]:
    """ROUGE-n recall and F1: n-grams of ``candidate`` found in ``reference``, each counted at most as often as
    the reference has it."""

    def grams(words: Sequence[str]) -> Counter[tuple[str, ...]]:
        return Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))

    cand, ref = grams(candidate), grams(reference)
    overlap = sum((cand & ref).values())
    if not overlap:
        return 0.0, 0.0
    recall, precision = overlap / sum(ref.values()), overlap / sum(cand.values())
    return recall, 2 * recall * precision / (recall + precision)


@dataclass
class Recap:
    lines: list[tuple[int, str]]  # (turn index, text without the speaker)
    seconds: float = 0.0

    @property
    def words(self) -> int:
        return sum(len(t.split()) for _, t in self.lines)


def measure(recap: Recap, episode: Episode, gazetteer: Gazetteer[EntityName], near: int) -> dict[str, float]:
    text = "\n".join(t for _, t in recap.lines)
    cand, ref = content_words(text), content_words("\n".join(episode.reference))
    r1, f1 = rouge(cand, ref, 1)
    r2, f2 = rouge(cand, ref, 2)
    named = {e.id for e in gazetteer.mentions("\n".join(episode.reference))}
    said = {e.id for e in gazetteer.mentions(text)}
    at = [i for i, _ in recap.lines]
    covered = sum(any(a - near <= i <= b + near for i in at) for a, b in episode.spans)
    return {
        "words": recap.words,
        "R1 recall": r1,
        "R1 F": f1,
        "R2 recall": r2,
        "R2 F": f2,
        "entities": len(named & said) / len(named) if named else 0.0,
        "coverage": covered / len(episode.spans) if episode.spans else 0.0,
        "seconds": recap.seconds,
    }


# --- the methods ----------------------------------------------------------------------------------------------


def lorekeeper(
    summarise: Callable[..., tuple[str, list[int]]],
    episode: Episode,
    gazetteer: Gazetteer[EntityName],
    names: dict[int, str],
    **options: Any,
) -> Recap:
    """The recap ``summarise`` writes, each line traced back to the turn it came from."""
    t = time.perf_counter()
    summary, _ = summarise(episode.entries, gazetteer, names, **options)
    seconds = time.perf_counter() - t
    lines: list[tuple[int, str]] = []
    for line in summary.splitlines():
        if line.startswith("Involved: "):
            continue
        speaker, _, said = line.removeprefix(PREVIOUSLY).partition(": ")
        # the lines are in story order: a turn said again later (CRD3 C1E001 plays the cast's intro videos in its
        # pre-show and again in its break) is the one after the line before
        after = lines[-1][0] + 1 if lines else 0
        i = next(
            i for i, e in enumerate(episode.entries) if i >= after and e.speaker == speaker and _within(said, e.text)
        )
        lines.append((i, said))
    return Recap(lines, seconds)


def _within(said: str, text: str) -> bool:
    """A recap line is its turn's text, or a part of it (a cut ends in "…", the quotation marks it cuts through
    are added)."""
    return all(part in text or part.strip('"') in text for part in said.split("…") if part.strip())


def cut(lines: Iterable[tuple[int, str]], budget: int) -> Recap:
    """``lines`` up to ``budget`` words in all."""
    kept: list[tuple[int, str]] = []
    left = budget
    for i, text in lines:
        words = text.split()[:left]
        if not words:
            break
        kept.append((i, " ".join(words)))
        left -= len(words)
    return Recap(kept)


def first_turns(episode: Episode, budget: int) -> Recap:
    return cut(((i, e.text) for i, e in enumerate(episode.entries)), budget)


def even_turns(episode: Episode, budget: int, k: int) -> Recap:
    """``k`` excerpts spread evenly over the session, each its share of the budget: the turns from the middle of
    each ``k``-th of the session on (of 5 words or more)."""
    said = [(i, e.text) for i, e in enumerate(episode.entries) if len(e.text.split()) >= 5]
    lines: list[tuple[int, str]] = []
    for j in range(k):
        lines += cut(said[(2 * j + 1) * len(said) // (2 * k) :], budget // k).lines
    return Recap(lines)


def old_summary(
    entries: Sequence[Entry], gazetteer: Gazetteer, names: dict[int, str], *, k: int = 5
) -> tuple[str, list[int]]:
    """The recap before session 17, for the comparison: the 5 turns of most entity mentions and words."""

    def salience(entry: Entry, mentioned: int) -> float:
        words = len(entry.text.split())
        if words < 5:
            return 0.0
        score = 2.0 * mentioned + min(words, 30) / 15
        return score + (0.5 if entry.speaker.strip().upper() in {"DM", "GM", "MATT", "DUNGEON MASTER"} else 0.0)

    scored = [(salience(e, len(gazetteer.mentioned_ids(e))), i) for i, e in enumerate(entries)]
    best = sorted(i for s, i in sorted(scored, reverse=True)[:k] if s > 0)
    return "\n".join(f"{entries[i].speaker}: {entries[i].text}" for i in best), []


# --- the wait, timed ----------------------------------------------------------------------------------------

EXAMPLE = Path(__file__).resolve().parents[1] / "campaigns" / "examples" / "critical_role.yaml"


async def time_one_import(episode: Path, embedder: Any, *, waits_for_vectors: bool) -> tuple[float, float]:
    """Seconds from the start of the jobs until the recap is written, and until every job is done."""
    import shutil
    import tempfile

    from campaigns.load import apply_campaign_file
    from memory import jobs
    from memory.db import EmbeddedPostgres, EmbeddingSpec, create_pool, migrate
    from memory.ingest import ingest_file
    from memory.jobs import worker
    from memory.store import Memory

    root = Path(tempfile.mkdtemp(prefix="lk-bench-recap-", dir="/tmp"))
    server = EmbeddedPostgres(root)
    waits = worker._SUMMARY_WAITS_FOR
    try:
        pool = await create_pool(server.start())
        await migrate(pool, EmbeddingSpec("all-MiniLM-L6-v2", 384))
        memory = Memory(pool)
        mem = memory.campaign((await memory.campaigns().create("Critical Role")).id)
        await apply_campaign_file(mem, read_campaign_file(EXAMPLE))
        await ingest_file(mem, episode)
        session = (await mem.log.sessions())[0]
        if waits_for_vectors:
            worker._SUMMARY_WAITS_FOR = (jobs.CHUNK, *waits)
        ctx = jobs.JobContext(memory=memory, embedder=embedder, embedding_model="all-MiniLM-L6-v2")
        started = time.perf_counter()
        drain = asyncio.create_task(jobs.run_workers(pool, None, drain=True, ctx=ctx))
        recapped = None
        while not drain.done():
            if recapped is None and (await mem.log.session(session.id)).summary is not None:
                recapped = time.perf_counter() - started
            await asyncio.sleep(0.1)
        await drain
        done = time.perf_counter() - started
        await pool.close()
        return (recapped if recapped is not None else done), done
    finally:
        worker._SUMMARY_WAITS_FOR = waits
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def timing(episodes: list[str], runs: int) -> None:
    from memory.providers.embeddings import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    embedder.embed_blocking(["load the model once, outside the runs"])
    for name in episodes:
        path = EPISODES / f"{name}.json"
        turns = len(json.loads(path.read_text())["TURNS"])
        times: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
        for run in range(runs):
            order = ("before", "after") if run % 2 == 0 else ("after", "before")
            for variant in order:
                times[variant].append(
                    asyncio.run(time_one_import(path, embedder, waits_for_vectors=variant == "before"))
                )
                recap, done = times[variant][-1]
                print(f"{name} run {run + 1} {variant}: recap {recap:.1f} s, all jobs {done:.1f} s", flush=True)
        medians = {
            v: (statistics.median(r for r, _ in t), statistics.median(d for _, d in t)) for v, t in times.items()
        }
        table(
            f"{name} ({turns:,} lines), seconds from the jobs' start, median of {runs} (each run's in brackets)",
            ["recap job", "recap written", "all jobs done"],
            [
                [
                    "waits for the lines' vectors (before)" if v == "before" else "does not (after)",
                    f"{medians[v][0]:.1f} ({', '.join(f'{r:.1f}' for r, _ in times[v])})",
                    f"{medians[v][1]:.1f} ({', '.join(f'{d:.1f}' for _, d in times[v])})",
                ]
                for v in ("before", "after")
            ]
            + [
                [
                    "ratio before / after",
                    f"{medians['before'][0] / medians['after'][0]:.2f}x",
                    f"{medians['before'][1] / medians['after'][1]:.2f}x",
                ]
            ],
        )


QUOTE_KINDS = ["lines", "story", "rules", "mixed", "table", "unjudged"]


def quote_labels(recap: Recap, judged: list[list]) -> Counter[str]:
    """The recap's lines counted by their hand label (``[turn, label, text]``), "unjudged" when not labelled; the
    lines not judged story are printed, to judge or to read."""
    labels = {(turn, text): label for turn, label, text in judged}
    counts: Counter[str] = Counter(lines=len(recap.lines))
    for i, text in recap.lines:
        label = labels.get((i, text), "unjudged")
        counts[label] += 1
        if label != "story":
            print(f"  quoted [{i}] ({label}) {text}")
    return counts


# --- the run --------------------------------------------------------------------------------------------------

COLUMNS = ["words", "R1 recall", "R1 F", "R2 recall", "R2 F", "entities", "coverage", "seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", help="comma-separated episode names (default: every one with a reference)")
    parser.add_argument("--near", type=int, default=20, help="turns either side of a sentence's range that count")
    parser.add_argument("--show", help="print the recaps of this episode")
    parser.add_argument("--timing", action="store_true", help="time the wait for the recap after an import")
    parser.add_argument("--runs", type=int, default=3, help="--timing: runs of each variant (medians shown)")
    args = parser.parse_args()
    if not ALIGNED.exists() or not EPISODES.exists():
        print(f"skipped: data not found ({CRD3})")
        return
    if args.timing:
        timing(args.episodes.split(",") if args.episodes else ["C1E035"], args.runs)
        return
    aligned = [json.loads(line) for line in ALIGNED.read_text().splitlines()]
    wanted = args.episodes.split(",") if args.episodes else sorted({r["episode"] for r in aligned})
    entities = typed(crd3_entities())
    gazetteer = Gazetteer(entities)
    names = {e.id: e.name for e in entities}

    results: dict[str, dict[str, dict[str, float]]] = {}
    turns: dict[str, int] = {}
    quoted: dict[str, Counter[str]] = {}
    judged = json.loads(QUOTES.read_text(encoding="utf-8"))["episodes"]
    for name in wanted:
        episode = load_episode(name, aligned)
        # the wiki lists the cast ("Matt" of Matthew Mercer) among its entities; a campaign lists its world only
        cast = {w for e in episode.entries for w in re.findall(r"[A-Z][a-z]{2,}", e.speaker)}
        world = Gazetteer([e for e in entities if not {e.name, *e.aliases} & cast])
        new = lorekeeper(extractive_summary, episode, world, names)
        old = lorekeeper(old_summary, episode, world, names)
        budget = new.words
        recaps = {
            "new": new,
            "old": old,
            "old, cut": Recap(cut(old.lines, budget).lines, old.seconds),
            "first turns": first_turns(episode, budget),
            "even turns": even_turns(episode, budget, max(1, len(new.lines))),
        }
        turns[name] = len(episode.entries)
        quoted[name] = quote_labels(new, judged.get(name, []))
        results[name] = {method: measure(r, episode, gazetteer, args.near) for method, r in recaps.items()}
        if name == args.show:
            for method, r in recaps.items():
                print(f"\n--- {name}, {method}")
                print("\n".join(f"[{i}] {t}" for i, t in r.lines))
        cells = results[name]["new"]
        print(
            f"{name}: {len(episode.entries)} turns, {len(episode.reference)} reference sentences "
            f"({len(episode.spans)} aligned), new recap {cells['words']:.0f} words in {cells['seconds']:.2f} s"
        )

    methods = list(next(iter(results.values())))
    for label, group in (
        ("tuned on", [n for n in results if n in TUNE]),
        ("held out", [n for n in results if n not in TUNE]),
        ("all", list(results)),
    ):
        if not group:
            continue
        table(
            f"Mean over {len(group)} episodes, {label}: {', '.join(group)} (coverage: within {args.near} turns)",
            ["method", *COLUMNS],
            [[m, *(statistics.mean(results[n][m][c] for n in group) for c in COLUMNS)] for m in methods],
        )
    table(
        "The new recap's quoted lines by hand label (mixed: a rules sentence beside the story's)",
        ["episodes", "lines", "story", "rules", "mixed", "table", "unjudged"],
        [
            [f"{label}: {', '.join(group)}", *(sum(quoted[n][k] for n in group) for k in QUOTE_KINDS)]
            for label, group in (
                ("tuned on", [n for n in results if n in TUNE]),
                ("held out", [n for n in results if n not in TUNE]),
            )
            if group
        ],
    )
    table(
        "Per episode, new / old, cut / even turns: ROUGE-1 recall, coverage",
        ["episode", "turns", "R1 recall", "coverage"],
        [
            [
                n,
                turns[n],
                " / ".join(f"{results[n][m]['R1 recall']:.3f}" for m in ("new", "old, cut", "even turns")),
                " / ".join(f"{results[n][m]['coverage']:.3f}" for m in ("new", "old, cut", "even turns")),
            ]
            for n in results
        ],
    )


if __name__ == "__main__":
    main()
