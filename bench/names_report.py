"""Would a list of "what stage 1 was unsure of" help a DM find mishearings to teach as heard-as? And how fast is
`/session names` (``memory.name_report.names_changed``) on a 5,000-line session?

The candidate list (``doubts`` below, not shipped: see README, Name correction) takes stage 1's doubtful spans of a
session, reduces each to the run of words nearest in sound to a name (``memory.correction.llm.said_alike``, as stage
2 picks the names it shows the model), counts them per phrase → name and filters them. A CRD3 episode stands for a
session: every mention of a few names (those said at least twice in it that the dev mishearings cover) is replaced by
its mishearing throughout, as a recogniser mishears a name every time; the list is made against the 1,272 CRD3 wiki
entities as ``bench.correction`` builds them, and counted: how many of the injected mishearings are in the top 10
with the right name, and how many of the top 10 are noise (no injected mishearing of that name).

    LOREKEEPER_DATA=/work/shared/data python -m bench.names_report --episodes C1E001,C1E050,C2E006 --names 6
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from bench.correction import CRD3, MISHEARINGS, _spoken, crd3_entities, table
from memory.correction import PhoneticIndex, PhoneticMatcher
from memory.correction.evidence import word_zipf
from memory.correction.index import NameForm
from memory.correction.llm import said_alike
from memory.correction.text import normalize, tokenize
from memory.db import EmbeddedPostgres, EmbeddingSpec, create_pool, migrate
from memory.name_report import names_changed
from memory.store import Memory

# --- the candidate list: what stage 1 was unsure of ------------------------------------------------------------


class Doubt(BaseModel):
    """A phrase stage 1 left alone though it sounds like a name: one the DM may teach as heard-as."""

    heard: str  # the words said like the name, normalised ("from skin")
    name: str  # the nearest name (the entity's canonical name)
    entity_id: int | None
    count: int  # doubtful spans of the session holding the phrase
    edits: int  # phones between the phrase and the name


def doubts(
    matcher: PhoneticMatcher,
    texts: Iterable[str],
    *,
    min_count: int = 2,
    skip: Iterable[str] = (),
    stage1_distance: bool = True,
    min_words: int = 1,
    single_word_zipf: float | None = None,
    limit: int | None = 10,
) -> list[Doubt]:
    """Stage 1's doubtful spans of ``texts`` (raw lines), each reduced to the run of words nearest in sound to a
    name, counted per phrase → name; those said at least ``min_count`` times, not in ``skip`` (phrases the DM has
    already said are or are not a name) and, with ``stage1_distance``, as near the name as stage 1 lets a phrase be
    (one phone off a name of 5+ phones, two off one of 9+), most said first, then nearest."""
    index = matcher.index
    skipped = {" ".join(normalize(s).split()) for s in skip}
    found: dict[tuple[str, int], list[object]] = {}
    for text in texts:
        for a, b in matcher.correct(text).suspects:
            words = [t.norm for t in tokenize(text[a:b])]
            alike = said_alike(index, words)
            if not alike:
                continue
            best = alike[0]
            if stage1_distance and best.edits > _stage1_edits(best.form):
                continue
            if best.last - best.first < min_words:
                continue
            phrase = " ".join(words[best.first : best.last])
            if phrase in skipped:
                continue
            if single_word_zipf is not None and best.last - best.first == 1 and word_zipf(phrase) >= single_word_zipf:
                continue  # a word English knows, said like a name: mostly the word ("damage" / Damon)
            key = (phrase, best.form.entity_key)
            if key in found:
                found[key][0] += 1  # type: ignore[operator]
            else:
                found[key] = [1, best]
    rows = [
        Doubt(heard=phrase, name=best.form.canonical, entity_id=best.form.entity_id, count=n, edits=best.edits)  # type: ignore[attr-defined]
        for (phrase, _), (n, best) in found.items()
        if n >= min_count  # type: ignore[operator]
    ]
    rows.sort(key=lambda d: (-d.count, d.edits, d.heard))
    return rows[:limit] if limit is not None else rows


def _stage1_edits(form: NameForm) -> int:
    """Phones a phrase may be from ``form`` for stage 1 to take it as the name at all (see README, Name
    correction): exact for a short name, one phone off 5+ phones, two off 9+."""
    n = len(form.phones)
    return 2 if n >= 9 else 1 if n >= 5 else 0


@dataclass(frozen=True)
class Injected:
    surface: str
    misheard: str  # normalised
    canonical: str
    mentions: int


def episode_turns(name: str) -> list[str]:
    turns = json.loads((CRD3 / "episodes" / f"{name}.json").read_text())["TURNS"]
    return [t for t in (" ".join(" ".join(turn["UTTERANCES"]).split()) for turn in turns) if t]


def inject(turns: list[str], count: int, rng: random.Random) -> tuple[list[str], list[Injected]]:
    """Every mention of ``count`` names said 2+ times in ``turns`` replaced by its dev-set mishearing."""
    candidates = []
    for line in MISHEARINGS.read_text().splitlines():
        m = json.loads(line)
        pattern = re.compile(r"(?<![\w'’])" + re.escape(m["surface"]) + r"(?![\w])")
        mentions = sum(len(pattern.findall(t)) for t in turns)
        if mentions >= 2:
            candidates.append((m, pattern, mentions))
    chosen = rng.sample(candidates, min(count, len(candidates)))
    injected = []
    for m, pattern, mentions in chosen:
        turns = [pattern.sub(m["misheard"], t) for t in turns]
        injected.append(Injected(m["surface"], normalize(m["misheard"]), _spoken(m["canonical"]), mentions))
    return turns, injected


async def time_names_changed(matcher: PhoneticMatcher, turns: list[str], sessions: int, lines: int) -> None:
    """`/session names` on a throw-away embedded PostgreSQL: ``sessions`` sessions of ``lines`` lines each (the
    turns, corrected by stage 1), the last one asked about."""
    said = (turns * (lines // len(turns) + 1))[:lines]
    corrected = [[c.model_dump() for c in matcher.correct(t).corrections] for t in said]
    root = Path(tempfile.mkdtemp(prefix="lk-bench-names-", dir="/tmp"))
    server = EmbeddedPostgres(root)
    dsn = server.start()
    try:
        pool = await create_pool(dsn, max_size=2)
        await migrate(pool, EmbeddingSpec("all-MiniLM-L6-v2", 384))
        memory = Memory(pool)
        camp = await memory.campaigns().create("Bench")
        mem = memory.campaign(camp.id)
        ids = [(await mem.log.start_session(f"Session {i + 1}")).id for i in range(sessions)]
        async with pool.acquire() as conn:
            for sid in ids:
                await conn.execute(
                    """
                    INSERT INTO session_entries (campaign_id, session_id, seq, speaker, raw_text, text, corrections)
                    SELECT $1, $2, n, 'DM', t, t, c::jsonb FROM unnest($3::int[], $4::text[], $5::text[]) AS u(n, t, c)
                    """,
                    camp.id,
                    sid,
                    list(range(1, len(said) + 1)),
                    said,
                    [json.dumps(fixes) for fixes in corrected],
                )
            await conn.execute("ANALYZE")
        took = []
        for _ in range(7):
            started = time.perf_counter()
            report = await names_changed(mem)
            took.append(time.perf_counter() - started)
        await pool.close()
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    print(
        f"\n/session names of the latest of {sessions} sessions of {lines:,} lines ({report.lines:,} of its lines "
        f"corrected, {sum(c.count for c in report.changes):,} corrections, {len(report.changes):,} rows): "
        f"median {statistics.median(took) * 1000:.0f} ms, slowest {max(took) * 1000:.0f} ms of 7"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", default=",".join(sorted(p.stem for p in (CRD3 / "episodes").glob("*.json"))))
    parser.add_argument("--names", type=int, default=6, help="names misheard per episode")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--min-count", type=int, default=2)
    parser.add_argument("--any-distance", action="store_true", help="keep phrases further than stage 1 allows")
    parser.add_argument("--min-words", type=int, default=2, help="words a phrase has at least")
    parser.add_argument("--single-word-zipf", type=float, default=None, help="drop single words this common")
    parser.add_argument("--sessions", type=int, default=20, help="sessions for the /session names timing (0: none)")
    parser.add_argument("--lines", type=int, default=5000, help="lines a session, for the timing")
    parser.add_argument("--show", action="store_true", help="print each top 10")
    args = parser.parse_args()

    entities = crd3_entities()
    matcher = PhoneticMatcher(PhoneticIndex.build(entities))
    rng = random.Random(args.seed)
    rows = []
    totals = [0, 0, 0, 0, 0]
    all_turns: list[str] = []
    for episode in args.episodes.split(","):
        turns, injected = inject(episode_turns(episode), args.names, rng)
        all_turns += turns
        # what stage 1 corrects itself is in /session names already: only the rest is the list's to find
        corrected = set()
        for inj in injected:
            for t in turns:
                if any(normalize(c.span) == inj.misheard for c in matcher.correct(t).corrections):
                    corrected.add(inj)
                    break
        started = time.perf_counter()
        top = doubts(
            matcher,
            turns,
            min_count=args.min_count,
            min_words=args.min_words,
            stage1_distance=not args.any_distance,
            single_word_zipf=args.single_word_zipf,
        )
        took = time.perf_counter() - started
        wanted = {(i.misheard, i.canonical) for i in injected}
        found = {(d.heard, d.name) for d in top} & wanted
        noise = [d for d in top if (d.heard, d.name) not in wanted]
        rows.append(
            [
                episode,
                len(turns),
                ", ".join(f"{i.misheard} / {i.canonical} ×{i.mentions}" for i in injected),
                len(corrected),
                f"{len(found)} of {len(wanted)}",
                f"{len(noise)} of {len(top)}",
                f"{took:.1f}",
            ]
        )
        for n, v in enumerate([len(injected), len(corrected), len(top), len(found), len(noise)]):
            totals[n] += v
        if args.show:
            print(f"\n{episode}:")
            for d in top:
                mark = "  " if d in noise else "✓ "
                print(f"  {mark}{d.heard!r} → {d.name} ×{d.count} ({d.edits} phones)")
    table(
        f"Doubt list, top 10 (min count {args.min_count}, {'any' if args.any_distance else 'stage-1'} distance, "
        f"{args.min_words}+ words, single words below Zipf {args.single_word_zipf})",
        ["episode", "turns", "injected (mentions)", "stage 1 corrects", "in top 10", "noise in top 10", "s"],
        rows,
    )
    injected_n, corrected_n, rows_n, found_n, noise_n = totals
    print(
        f"\ninjected {injected_n} (stage 1 corrects {corrected_n} of them somewhere): {found_n} in a top 10 with the "
        f"right name; {noise_n} of the {rows_n} rows shown are noise"
    )

    if args.sessions:
        asyncio.run(time_names_changed(matcher, all_turns, args.sessions, args.lines))


if __name__ == "__main__":
    main()
