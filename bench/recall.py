"""Recall, side by side in one run: is the evidence in the first lines a DM reads?

    python -m bench.recall --quick          # a small run: 10 questions, 2 episodes, a 4-session campaign
    python -m bench.recall                  # the full run (bench/README.md "Recall" says its options and time)

Two data sets, each cut in two halves that never change (dev, to tune on, and held-out), every system on the same
lines in the same run:

- LongMemEval (../shared/data/longmemeval/longmemeval_oracle.json; ``_abs`` questions have no evidence: left out):
  each question gets its own campaign, its haystack = its evidence sessions + ``--distractors`` sessions of the
  other sampled questions (seeded), in date order; with ``--pool N``, N questions (in id order) share one, their
  evidence sessions + ``--distractors`` others, for halves of 50+ questions at the cost of a few. Halves by a hash
  of the question id.
- CRD3 (../shared/data/crd3): one campaign holding the episodes, imported as a DM would (``ingest_file`` with the
  wiki's entities); a fan-wiki summary sentence is the query, its turn range the evidence (spans of <= 30 turns,
  score > 0). Halves by episode.
- The DM's own questions (``--dm-questions``, tests/data/dm_questions.json): questions a DM asks after a session,
  written by reading two whole CRD3 episodes (one of each half), their answer turns the evidence. Also counted: the
  answer in the first 3 hits (a hit of the line baselines is one line, of the window baseline one window).

Lines go in through the real pipeline (recorder, stage-1 correction, then the jobs: chunk + MiniLM embed ...).
Systems: ``memory.recall.recall`` (Lorekeeper, today's product code), a frozen copy of the recall before issue 30
(bench/baselines/recall_v1.py), BM25 (bm25s) over single lines, BM25 over Lorekeeper's own windows (its chunks),
MiniLM over single lines.

What counts is what a DM reads: the hits' lines in rank order (a hit's ``lines`` when it has them, else its chunk's
lines; duplicates counted once). A question is answered within a budget when an evidence line starts inside it:
the first 10 lines, 25 lines, 300 words, 1,000 words (words = whitespace tokens of a line's text as shown: a
hit's context line is a preview, a long line its passage). LongMemEval also gets session recall@5: the first 5
distinct sessions of the hits hold one (any@5) or all (all@5) evidence sessions. Latency: recall in process on a
campaign of ``--latency-sessions`` sessions (bench/campaign_scale.py's, random vectors), p50/p95 beside the frozen
recall.

Embeddings are cached on disk (``--cache``, keyed by model and text hash): a rerun embeds nothing new.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import hashlib
import json
import os
import random
import re
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections import ChainMap, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import yaml
from bm25s.stopwords import STOPWORDS_EN

from bench.baselines.recall_v1 import recall_v1
from bot.cli.common import freeze_start_up
from memory import jobs, lexical, recall_rank
from memory.db import EmbeddedPostgres, EmbeddingSpec, create_pool, migrate
from memory.errors import MemoryError_
from memory.models import EntityIn, EntityType
from memory.providers.embeddings import MiniLMEmbedder
from memory.recall import recall
from memory.recorder import SessionRecorder, Utterance
from memory.store import CampaignMemory, Memory

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("LOREKEEPER_DATA", ROOT.parent / "shared" / "data"))
LME = DATA / "longmemeval" / "longmemeval_oracle.json"
CRD3 = DATA / "crd3"
EXAMPLE = ROOT / "campaigns" / "examples" / "critical_role.yaml"
DM_QUESTIONS = ROOT / "tests" / "data" / "dm_questions.json"
BUDGETS = (("10 lines", 10, None), ("25 lines", 25, None), ("300 words", None, 300), ("1,000 words", None, 1000))
SYSTEMS = (
    "Lorekeeper recall",
    "today's recall (frozen v1)",
    "BM25 over single lines",
    "BM25 over Lorekeeper's windows",
    "MiniLM over single lines",
)
LEXICAL_ONLY, VECTOR_ONLY = "Lorekeeper recall, full text only", "Lorekeeper recall, vectors only"
#: How deep the baselines' ranked lists go: enough lines to fill the largest budget on CRD3's short lines.
LINE_DEPTH = 150
WINDOW_DEPTH = 40
LATENCY_QUERIES = [
    "who killed Delilah",
    "what loot was on her body",
    "what festival is coming up",
    "what did Grog say about the dragon",
    "Keyleth",
    "where did we leave the cart",
    "the Ember Key",
    "what happened in the tavern last session",
]


# reading budgets (pure) ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Unit:
    """One hit of a system: its session and the lines a DM reads for it, in reading order."""

    session_id: int
    entry_ids: tuple[int, ...]
    words: tuple[int, ...] = ()  # the words shown of each line, when not the whole line's (a context preview)


def reading(units: Iterable[Unit]) -> list[int]:
    """The lines of ``units`` in rank order, each line once (overlapping windows share lines)."""
    return list(dict.fromkeys(i for u in units for i in u.entry_ids))


def shown_words(units: Iterable[Unit], words: dict[int, int]) -> Mapping[int, int]:
    """Each line's words as first read: a hit's preview of a context line counts its shown words."""
    shown: dict[int, int] = {}
    for u in units:
        for i, n in zip(u.entry_ids, u.words, strict=False):
            shown.setdefault(i, n)
    return ChainMap(shown, words) if shown else words


def within_budgets(read: Sequence[int], gold: set[int], words: Mapping[int, int]) -> list[bool]:
    """For each budget of ``BUDGETS``: does an evidence line start inside it?"""
    out = []
    for _, max_lines, max_words in BUDGETS:
        before = 0
        hit = False
        for n, line in enumerate(read):
            if (max_lines is not None and n >= max_lines) or (max_words is not None and before >= max_words):
                break
            if line in gold:
                hit = True
                break
            before += words[line]
        out.append(hit)
    return out


def session_recall(units: Iterable[Unit], gold: set[int], k: int = 5) -> tuple[bool, bool]:
    """(any, all) of the evidence sessions among the first ``k`` distinct sessions of the hits."""
    first = list(dict.fromkeys(u.session_id for u in units))[:k]
    return bool(gold & set(first)), gold <= set(first)


def half(key: str) -> str:
    """A fixed split: the same key is always in the same half, whatever else is sampled."""
    return "dev" if int(hashlib.sha1(key.encode()).hexdigest(), 16) % 2 == 0 else "held-out"


# embeddings, cached on disk ---------------------------------------------------------------------------------------


class CachedEmbedder:
    """MiniLM behind a disk cache (SQLite under /tmp) keyed by model + text hash: the jobs and the bench's own
    line vectors share it, and a rerun embeds nothing it embedded before."""

    def __init__(self, inner: MiniLMEmbedder, path: Path) -> None:
        self.inner = inner
        self.model_name = inner.model_name
        self.dim = inner.dim
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, check_same_thread=False)
        self.db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL)")
        self.computed = 0
        self.lock = asyncio.Lock()

    def _key(self, text: str) -> bytes:
        return hashlib.sha256(f"{self.model_name}\0{self.inner.max_tokens}\0{text}".encode()).digest()

    def array(self, texts: Sequence[str]) -> np.ndarray:
        keys = [self._key(t) for t in texts]
        found: dict[bytes, np.ndarray] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 500):
            part = unique[start : start + 500]
            rows = self.db.execute(
                f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(part))})", part
            ).fetchall()
            found.update((k, np.frombuffer(v, dtype=np.float32)) for k, v in rows)
        text_of = dict(zip(keys, texts, strict=True))
        missing = [k for k in unique if k not in found]
        for start in range(0, len(missing), 256):  # written as it goes: an interrupted run keeps what it did
            part = missing[start : start + 256]
            vectors = self.inner.embed_blocking([text_of[k] for k in part])
            self.db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                [(k, v.tobytes()) for k, v in zip(part, vectors, strict=True)],
            )
            self.db.commit()
            found.update(zip(part, vectors, strict=True))
            self.computed += len(part)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for row, k in enumerate(keys):
            out[row] = found[k]
        return out

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        async with self.lock:  # one SQLite connection; concurrent jobs take turns (the model uses both cores)
            return (await asyncio.to_thread(self.array, list(texts))).tolist()


# the haystacks ----------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Haystack:
    """One campaign's lines and windows as the baselines see them (read back from the database)."""

    campaign_id: int
    line_ids: list[int] = field(default_factory=list)
    line_session: dict[int, int] = field(default_factory=dict)
    line_text: dict[int, str] = field(default_factory=dict)  # "speaker: text", as windows show a line
    words: dict[int, int] = field(default_factory=dict)
    by_ref: dict[str, int] = field(default_factory=dict)
    by_seq: dict[tuple[int, int], int] = field(default_factory=dict)
    session_titled: dict[str, int] = field(default_factory=dict)
    windows: list[Unit] = field(default_factory=list)
    window_text: list[str] = field(default_factory=list)
    _indexes: dict[str, Any] = field(default_factory=dict)

    @classmethod
    async def read(cls, db: Any, campaign_id: int) -> Haystack:
        h = cls(campaign_id)
        for r in await db.fetch(
            "SELECT id, session_id, seq, speaker, text, ref FROM session_entries WHERE campaign_id = $1 "
            "ORDER BY session_id, seq",
            campaign_id,
        ):
            h.line_ids.append(r["id"])
            h.line_session[r["id"]] = r["session_id"]
            h.line_text[r["id"]] = f"{r['speaker']}: {r['text']}"
            h.words[r["id"]] = len(r["text"].split())
            h.by_seq[(r["session_id"], r["seq"])] = r["id"]
            if r["ref"]:
                h.by_ref[r["ref"]] = r["id"]
        for r in await db.fetch("SELECT id, title FROM sessions WHERE campaign_id = $1", campaign_id):
            h.session_titled[r["title"]] = r["id"]
        for r in await db.fetch(
            "SELECT session_id, entry_ids, text FROM chunks WHERE campaign_id = $1 ORDER BY session_id, start_s, id",
            campaign_id,
        ):
            h.windows.append(Unit(r["session_id"], tuple(r["entry_ids"])))
            h.window_text.append(r["text"])
        return h

    def bm25_lines(self, query: str) -> list[Unit]:
        order = _bm25_rank(self._bm25("lines", [self.line_text[i] for i in self.line_ids]), query, LINE_DEPTH)
        return [Unit(self.line_session[self.line_ids[k]], (self.line_ids[k],)) for k in order]

    def bm25_windows(self, query: str) -> list[Unit]:
        return [self.windows[k] for k in _bm25_rank(self._bm25("windows", self.window_text), query, WINDOW_DEPTH)]

    def minilm_lines(self, embedder: CachedEmbedder, vector: np.ndarray) -> list[Unit]:
        if "vectors" not in self._indexes:
            self._indexes["vectors"] = embedder.array([self.line_text[i] for i in self.line_ids])
        scores = self._indexes["vectors"] @ vector
        order = np.argsort(-scores, kind="stable")[:LINE_DEPTH]
        return [Unit(self.line_session[self.line_ids[k]], (self.line_ids[k],)) for k in order]

    def _bm25(self, name: str, texts: list[str]) -> bm25s.BM25:
        if name not in self._indexes:
            index = bm25s.BM25()
            index.index([_terms(t) or ["\0"] for t in texts], show_progress=False)
            self._indexes[name] = index
        return self._indexes[name]

    def drop_indexes(self) -> None:
        self._indexes.clear()


_WORD = re.compile(r"\w+")
_STOP = frozenset(STOPWORDS_EN)


def _terms(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.casefold()) if w not in _STOP]


def _bm25_rank(index: bm25s.BM25, query: str, depth: int) -> list[int]:
    terms = [t for t in dict.fromkeys(_terms(query)) if t in index.vocab_dict]
    if not terms:
        return []
    scores = index.get_scores(terms)
    order = np.argsort(-scores, kind="stable")[:depth]
    return [int(k) for k in order if scores[k] > 0]


# the questions ----------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Case:
    data: str  # "LongMemEval" or "CRD3"
    split: str
    query: str
    haystack: Haystack
    gold_lines: set[int]
    gold_sessions: set[int] = field(default_factory=set)
    kind: str = ""  # LongMemEval's question type
    asker: str | None = None  # as the lines name them: LongMemEval's questions are the user's
    now: datetime | None = None  # when it is asked (LongMemEval's question_date; else the run's now)


def lme_sample(questions: list[dict], n: int, seed: int) -> list[dict]:
    """An even share of every question type, abstention questions left out."""
    by_type: dict[str, list[dict]] = defaultdict(list)
    for q in questions:
        if not q["question_id"].endswith("_abs"):
            by_type[q["question_type"]].append(q)
    rng = random.Random(seed)
    per_type = -(-n // len(by_type))
    picked = [q for t in sorted(by_type) for q in rng.sample(by_type[t], min(per_type, len(by_type[t])))]
    return sorted(picked, key=lambda q: q["question_id"])[:n] if len(picked) > n else picked


def _pools(questions: list[dict], size: int) -> list[list[dict]]:
    """Questions sharing a campaign: ``size`` at a time in question-id order (types and halves mixed); each
    one's evidence sessions are the others' distractors. One question a campaign (``size`` 1) keeps the sample's
    order, as runs before pooling had it."""
    if size <= 1:
        return [[q] for q in questions]
    ordered = sorted(questions, key=lambda q: q["question_id"])
    return [ordered[k : k + size] for k in range(0, len(ordered), size)]


def _lme_date(text: str) -> datetime:
    return datetime.strptime(f"{text[:10]} {text[-5:]}", "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


async def load_longmemeval(memory: Memory, args: argparse.Namespace) -> list[Case]:
    questions = lme_sample(json.loads(LME.read_text()), args.questions, args.seed)
    sessions: dict[str, tuple[list[dict], str]] = {}
    for q in questions:
        for sid, session, date in zip(
            q["haystack_session_ids"], q["haystack_sessions"], q["haystack_dates"], strict=True
        ):
            sessions.setdefault(sid, (session, date))
    rng = random.Random(args.seed)
    campaigns: list[tuple[dict, int]] = []
    pools = _pools(questions, args.pool)
    for n, pool in enumerate(pools):
        own = {s for q in pool for s in q["haystack_session_ids"]}
        others = sorted(s for s in sessions if s not in own)
        chosen = sorted(
            [*own, *rng.sample(others, min(args.distractors, len(others)))],
            key=lambda s: (_lme_date(sessions[s][1]), s),
        )
        first = pool[0]["question_id"]
        name = f"LongMemEval {first} +{args.distractors}" + (f" pool {len(pool)}" if args.pool > 1 else "")
        if cid := await memory.pool.fetchval("SELECT id FROM campaigns WHERE name = $1", name):
            campaigns += [(q, cid) for q in pool]  # kept by an earlier run (--db)
            continue
        camp = await memory.campaigns().create(name)
        mem = memory.campaign(camp.id)
        for sid in chosen:
            rec = await SessionRecorder.start(mem, sid, started_at=_lme_date(sessions[sid][1]), batch_size=500)
            for i, turn in enumerate(sessions[sid][0]):
                await rec.add(Utterance(speaker=turn["role"], text=turn["content"], seq=i + 1, ref=f"{sid}/{i}"))
            await rec.end()
        campaigns += [(q, camp.id) for q in pool]
        print(f"  LongMemEval: {n + 1}/{len(pools)} haystacks recorded", end="\r", flush=True)
    print()
    # LongMemEval registers no entities: the extractor's proposals would wait for review, which recall never reads
    await _run_jobs(memory, args, drop=(jobs.SUMMARY, jobs.EXTRACT))
    cases = []
    read: dict[int, Haystack] = {}
    for q, cid in campaigns:
        h = read.get(cid) or read.setdefault(cid, await Haystack.read(memory.pool, cid))
        gold = {
            h.by_ref[f"{sid}/{i}"]
            for sid, session in zip(q["haystack_session_ids"], q["haystack_sessions"], strict=True)
            for i, turn in enumerate(session)
            if turn.get("has_answer") and f"{sid}/{i}" in h.by_ref
        }
        gold_sessions = {h.session_titled[s] for s in q["answer_session_ids"] if s in h.session_titled}
        cases.append(
            Case(
                "LongMemEval",
                half(q["question_id"]),
                q["question"],
                h,
                gold,
                gold_sessions,
                q["question_type"],
                "user",
                _lme_date(q["question_date"]),
            )
        )
    return cases


def crd3_queries(episodes: set[str], per_episode: int, seed: int, turns: int) -> list[dict]:
    """Summary sentences of well-aligned, short spans (within the first ``turns`` turns when > 0), each once, a
    seeded sample of each episode's."""
    best: dict[tuple[str, str], dict] = {}
    with (CRD3 / "aligned_index.dev.jsonl").open() as fh:
        for line in fh:
            row = json.loads(line)
            short = row["score"] > 0 and row["turn_end"] - row["turn_start"] <= 30
            if row["episode"] in episodes and short and (not turns or row["turn_end"] < turns):
                key = (row["episode"], row["summary"])
                if key not in best or row["score"] > best[key]["score"]:
                    best[key] = row
    rng = random.Random(seed)
    out = []
    for episode in sorted(episodes):
        rows = sorted((r for (e, _), r in best.items() if e == episode), key=lambda r: (r["turn_start"], r["summary"]))
        # after the sample, so the others stay the same: a blank sentence (the data has one an episode) asks
        # nothing, and recall refuses a blank query
        out += [r for r in rng.sample(rows, min(per_episode, len(rows))) if r["summary"].strip()]
    return out


def crd3_episodes(per_half: int) -> list[Path]:
    """The ``per_half`` smallest episodes with summary sentences of each half (embedding is the cost)."""
    summarised = {json.loads(line)["episode"] for line in (CRD3 / "aligned_index.dev.jsonl").open()}
    small = sorted(
        (p for p in (CRD3 / "episodes").glob("*.json") if p.stem in summarised), key=lambda p: p.stat().st_size
    )
    return sorted(p for s in ("dev", "held-out") for p in [p for p in small if half(p.stem) == s][:per_half])


async def load_crd3(memory: Memory, args: argparse.Namespace, folder: Path) -> list[Case]:
    from memory.ingest import ingest_file

    paths = crd3_episodes(args.episodes)
    name = f"Critical Role {' '.join(p.stem for p in paths)} {args.turns or 'all'}" + " players" * args.players
    if cid := await memory.pool.fetchval("SELECT id FROM campaigns WHERE name = $1", name):
        paths = []  # kept by an earlier run (--db)
    else:
        cid = (await memory.campaigns().create(name)).id
        await load_wiki_entities(memory.campaign(cid), CRD3 / "crd3_wiki_entities.json", players=args.players)
    mem = memory.campaign(cid)
    first = datetime(2015, 3, 12, 19, tzinfo=UTC)
    for n, path in enumerate(paths):
        if args.turns:  # the episode's first turns, under its own name (the session's title)
            cut = folder / path.name
            cut.write_text(json.dumps({"TURNS": json.loads(path.read_text())["TURNS"][: args.turns]}))
            path = cut
        await ingest_file(mem, path, batch_size=500, started_at=first + timedelta(days=7 * n))
        print(f"  CRD3: {n + 1}/{len(paths)} episodes imported", end="\r", flush=True)
    print()
    await _run_jobs(memory, args, drop=(jobs.SUMMARY,))
    h = await Haystack.read(memory.pool, cid)
    cases = []
    for row in crd3_queries({p.stem for p in crd3_episodes(args.episodes)}, args.crd3_queries, args.seed, args.turns):
        sid = h.session_titled[row["episode"]]
        gold = {i for t in range(row["turn_start"], row["turn_end"] + 1) if (i := h.by_seq.get((sid, t + 1)))}
        if gold:
            cases.append(Case("CRD3", half(row["episode"]), row["summary"], h, gold, {sid}))
    return cases


async def load_dm_questions(memory: Memory, args: argparse.Namespace) -> list[Case]:
    """The DM's own questions (tests/data/dm_questions.json): one campaign of their episodes, whole, imported as
    ``load_crd3`` does; a question's answer turns are its evidence. Halves by episode, as CRD3's."""
    from memory.ingest import ingest_file

    questions = json.loads(DM_QUESTIONS.read_text())["questions"]
    episodes = sorted({q["episode"] for q in questions})
    name = f"DM questions {' '.join(episodes)}" + " players" * args.players
    fresh = not await memory.pool.fetchval("SELECT id FROM campaigns WHERE name = $1", name)
    if fresh:
        cid = (await memory.campaigns().create(name)).id
        await load_wiki_entities(memory.campaign(cid), CRD3 / "crd3_wiki_entities.json", players=args.players)
    else:  # kept by an earlier run (--db)
        cid = await memory.pool.fetchval("SELECT id FROM campaigns WHERE name = $1", name)
    first = datetime(2015, 3, 12, 19, tzinfo=UTC)
    for n, episode in enumerate(episodes if fresh else []):
        await ingest_file(
            memory.campaign(cid),
            CRD3 / "episodes" / f"{episode}.json",
            batch_size=500,
            started_at=first + timedelta(days=7 * n),
        )
        print(f"  DM questions: {n + 1}/{len(episodes)} episodes imported", end="\r", flush=True)
    if fresh:
        print()
        await _run_jobs(memory, args, drop=(jobs.SUMMARY,))
    h = await Haystack.read(memory.pool, cid)
    cases = []
    for q in questions:
        sid = h.session_titled[q["episode"]]
        gold = {h.by_seq[(sid, a["turn"] + 1)] for a in q["answers"]}  # a turn's line is at seq turn + 1
        cases.append(Case("DM", half(q["episode"]), q["question"], h, gold, {sid}))
    return cases


async def load_wiki_entities(mem: CampaignMemory, path: Path, limit: int = 300, *, players: bool = False) -> None:
    """The wiki's most mentioned entities, as a DM would register them before importing (bench/ingest.py's);
    with ``players``, the player characters as the example campaign has them: their aliases ("Grog") and who
    plays them."""
    wiki = sorted(json.loads(path.read_text()), key=lambda e: -e.get("mentions", 0))
    characters = {
        e["name"].casefold(): e
        for e in yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))["entities"]
        if players and e.get("type") == "player"
    }
    seen: set[str] = set()
    for e in wiki[:limit]:
        name = e["canonical"].strip()
        if name and name.casefold() not in seen:
            seen.add(name.casefold())
            pc = characters.get(name.casefold())
            entity = EntityIn(name=name, type=EntityType.concept)
            if pc is not None:
                plays = {k: v for k, v in pc.get("attributes", {}).items() if k == "played_by"}
                entity = EntityIn(name=name, type=EntityType.player, aliases=pc.get("aliases") or [], attributes=plays)
            # an alias clashing with another's name: the character without it; a name clashing: skipped
            for version in (entity, entity.model_copy(update={"aliases": []})) if entity.aliases else (entity,):
                with contextlib.suppress(MemoryError_):
                    await mem.graph.add_entity(version)
                    break


async def _run_jobs(memory: Memory, args: argparse.Namespace, drop: tuple[str, ...]) -> None:
    """The queued jobs, but those of ``drop``: session summaries play no part in recall."""
    started = time.perf_counter()
    await memory.pool.execute("DELETE FROM pgqueuer WHERE entrypoint = ANY($1::text[]) AND status = 'queued'", drop)
    ctx = jobs.JobContext(memory=memory, embedder=args.embedder, embedding_model=args.embedder.model_name)
    await jobs.run_workers(memory.pool, None, drain=True, ctx=ctx)
    await _embed_windows(memory, args.embedder)
    print(f"  jobs done in {time.perf_counter() - started:.0f} s ({args.embedder.computed} texts embedded so far)")


async def _embed_windows(memory: Memory, embedder: CachedEmbedder) -> None:
    """Vectors for the windows, which the chunk job no longer embeds: the frozen recall's vector half reads them."""
    rows = await memory.pool.fetch("SELECT id, text FROM chunks WHERE embedding IS NULL ORDER BY id")
    for start in range(0, len(rows), 512):
        part = rows[start : start + 512]
        vectors = await embedder.embed([r["text"] for r in part])
        await memory.pool.executemany(
            "UPDATE chunks SET embedding = $2 WHERE id = $1",
            [(r["id"], np.asarray(v, dtype=np.float32)) for r, v in zip(part, vectors, strict=True)],
        )


# the systems ------------------------------------------------------------------------------------------------------


def _hit_units(hits: Sequence[Any]) -> list[Unit]:
    """Lorekeeper's hits as read: a hit's ``lines`` when it has them (issue 30), else its chunk's lines."""
    out = []
    for hit in hits:
        lines = getattr(hit, "lines", None)
        ids = tuple(line.entry_id for line in lines) if lines else tuple(hit.entry_ids)
        shown = tuple(len(line.shown().split()) for line in lines) if lines else ()
        out.append(Unit(hit.session_id, ids, shown))
    return out


async def run_systems(
    memory: Memory, case: Case, vector: np.ndarray, args: argparse.Namespace
) -> dict[str, list[Unit]]:
    h = case.haystack
    mem = memory.campaign(h.campaign_id)
    as_list = vector.tolist()
    hits = await recall(
        mem, args.embedder, case.query, limit=args.limit, embedding=as_list, asker=case.asker, now=case.now
    )
    old = await recall_v1(memory.pool, h.campaign_id, case.query, as_list, limit=args.limit)
    halves = {}
    for mode, name in (("fulltext", LEXICAL_ONLY), ("vector", VECTOR_ONLY)) if args.modes else ():
        found = await recall(
            mem,
            args.embedder,
            case.query,
            limit=args.limit,
            embedding=as_list,
            mode=mode,
            asker=case.asker,
            now=case.now,
        )
        halves[name] = _hit_units(found)
    for name, constant, value in variants(args):  # the same haystack, one of the product's constants changed
        module, attr = (lexical, constant[8:]) if constant.startswith("lexical.") else (recall_rank, constant)
        kept = getattr(module, attr)
        setattr(module, attr, value)
        try:
            found = await recall(
                mem, args.embedder, case.query, limit=args.limit, embedding=as_list, asker=case.asker, now=case.now
            )
        finally:
            setattr(module, attr, kept)
        halves[name] = _hit_units(found)
    return halves | {
        SYSTEMS[0]: _hit_units(hits),
        SYSTEMS[1]: [Unit(x.session_id, tuple(x.entry_ids)) for x in old],
        SYSTEMS[2]: h.bm25_lines(case.query),
        SYSTEMS[3]: h.bm25_windows(case.query),
        SYSTEMS[4]: h.minilm_lines(args.embedder, vector),
    }


def variants(args: argparse.Namespace) -> list[tuple[str, str, float | int | bool | None]]:
    """The product's settings a run also measures, as asked: (row name, ``memory.recall_rank`` constant, value),
    one constant changed at a time, the others the product's."""
    out: list[tuple[str, str, float | int | bool | None]] = []
    for words in args.alone_from:  # the same ranking, hits shown by another display rule
        name = "Lorekeeper, context for every hit" if words is None else f"Lorekeeper, no context from {words} words"
        out.append((name, "ALONE_FROM", words))
    if args.whole_lines:  # the same ranking, a long line shown whole rather than by its passage
        out.append(("Lorekeeper, long lines shown whole", "SHOW_PASSAGES", False))
    out += [(f"Lorekeeper, vector weight {w:g}", "VECTOR_WEIGHT", w) for w in args.vector_weight]
    out += [(f"Lorekeeper, entity boost {b:g}", "NAMED_BOOST", b) for b in args.named_boost]
    out += [(f"Lorekeeper, table talk x {f:g}", "TABLE_TALK_FACTOR", f) for f in args.table_talk]
    out += [(f"Lorekeeper, time boost {b:g}", "WHEN_BOOST", b) for b in args.when_boost]
    if args.not_said_by:
        out.append(("Lorekeeper, lines said by who is named not boosted", "SAID_BY_NAMED", False))
    if args.time_unread:
        out.append(("Lorekeeper, the question's time searched as words", "TIME_ASKED", False))
    for setting in args.lexical:  # "NAME=VALUE": a constant of memory.lexical
        constant, _, value = setting.partition("=")
        out.append((f"Lorekeeper, lexical {constant} {float(value):g}", f"lexical.{constant}", float(value)))
    return out


@dataclass(slots=True)
class Score:
    budgets: list[bool]
    any5: bool
    all5: bool
    words: int  # words of all the system's hits (what `recall --limit N` shows)
    first3: bool = False  # evidence in the system's first 3 hits (a hit of a baseline is its line or window)


async def evaluate(memory: Memory, cases: list[Case], args: argparse.Namespace) -> dict[tuple[str, str], list[Score]]:
    vectors = args.embedder.array([c.query for c in cases])
    scores: dict[tuple[str, str], list[Score]] = defaultdict(list)
    last: Haystack | None = None
    for n, (case, vector) in enumerate(zip(cases, vectors, strict=True)):
        if last is not None and last is not case.haystack:
            last.drop_indexes()  # one haystack's indexes in memory at a time
        last = case.haystack
        for system, units in (await run_systems(memory, case, vector, args)).items():
            read = reading(units)
            words = shown_words(units, case.haystack.words)
            any5, all5 = session_recall(units, case.gold_sessions)
            s = Score(within_budgets(read, case.gold_lines, words), any5, all5, sum(words[i] for i in read))
            s.first3 = bool(case.gold_lines & set(reading(units[:3])))
            scores[(system, case.split)].append(s)
            scores[(system, f"{case.split}|{case.kind}")].append(s)
            missed = case.data == "LongMemEval" and case.split == "dev" and not all5  # dev only: tuned on
            if args.show_misses and system == SYSTEMS[0] and missed:
                await show_miss(memory, case, vector, units, args)
        print(f"  {case.data}: {n + 1}/{len(cases)} questions asked", end="\r", flush=True)
    print()
    return scores


#: Hits read for a miss: about every line the fusion ranks (the lexical and vector lists' depths).
MISS_DEPTH = 60


def evidence_places(gold: set[int], sessions: Sequence[int]) -> dict[int, tuple[int | None, int | None]]:
    """Where each evidence session of ``gold`` comes in a reading whose hits are of ``sessions`` (in rank order): its
    first hit's number and its place among the distinct sessions (None, None: no hit of it)."""
    order = list(dict.fromkeys(sessions))
    return {s: (sessions.index(s) + 1, order.index(s) + 1) if s in order else (None, None) for s in sorted(gold)}


async def show_miss(
    memory: Memory, case: Case, vector: np.ndarray, units: list[Unit], args: argparse.Namespace
) -> None:
    """Why a LongMemEval question's evidence sessions are not all in the first 5 sessions of the hits: the sessions
    the hits read in order (evidence starred), and where each evidence session first comes among the ``MISS_DEPTH``
    hits of the same ranking (none: no candidate line of it was ranked at all)."""
    mem = memory.campaign(case.haystack.campaign_id)
    deep = await recall(
        mem, args.embedder, case.query, limit=MISS_DEPTH, embedding=vector.tolist(), asker=case.asker, now=case.now
    )
    hits = list(dict.fromkeys(u.session_id for u in units))
    shown = " ".join(f"{s}{'*' * (s in case.gold_sessions)}" for s in hits)
    places = evidence_places(case.gold_sessions, [h.session_id for h in deep])
    where = ", ".join(f"{s}: hit {n} / session {k}" if n else f"{s}: none" for s, (n, k) in places.items())
    print(f"\n  miss [{case.kind}] {case.query!r}\n    hits' sessions: {shown} ({len(units)} hits)")
    print(f"    evidence in the first {MISS_DEPTH} hits: {where}")


# latency ----------------------------------------------------------------------------------------------------------


async def latency(args: argparse.Namespace, crd3_cases: list[Case]) -> list[tuple[str, float, float, float]]:
    """p50/p95 ms of recall (query embedded beforehand) on campaign_scale's campaign, beside the frozen recall."""
    from bench.campaign_scale import build

    queries = LATENCY_QUERIES + [c.query for c in crd3_cases if c.split == "dev"][: args.latency_queries]
    vectors = args.embedder.array(queries)
    root = Path(tempfile.mkdtemp(prefix="lk-bench-recall-scale-", dir="/tmp"))
    server = EmbeddedPostgres(root)
    try:
        pool = await create_pool(server.start(), max_size=4)
        await migrate(pool, EmbeddingSpec(MiniLMEmbedder.model_name, MiniLMEmbedder.dim))
        memory = Memory(pool)
        camp = await memory.campaigns().create("Two years")
        mem = memory.campaign(camp.id)
        started = time.perf_counter()
        scale = argparse.Namespace(
            sessions=args.latency_sessions, lines=args.latency_lines, entities=1500, facts=30_000, pending=300
        )
        await build(mem, scale)
        lines = await pool.fetchval("SELECT count(*) FROM session_entries WHERE campaign_id = $1", camp.id)
        print(f"  {args.latency_sessions} sessions, {lines:,} lines built in {time.perf_counter() - started:.0f} s")

        async def ours(q: str, v: list[float]) -> object:
            return await recall(mem, args.embedder, q, limit=args.limit, embedding=v)

        async def old(q: str, v: list[float]) -> object:
            return await recall_v1(pool, camp.id, q, v, limit=args.limit)

        systems: dict[str, Callable[[str, list[float]], Any]] = {SYSTEMS[0]: ours, SYSTEMS[1]: old}
        # as the bot runs (bot.cli.common): a full collection walks what came after start-up, not this process's
        # haystacks, indexes and model, a 100 ms pause every 15 recalls or so that fell on any question
        freeze_start_up(tables=False)
        first: dict[str, float] = {}
        samples: dict[str, list[float]] = defaultdict(list)
        for round_ in range(args.latency_rounds + 1):
            for q, v in zip(queries, vectors.tolist(), strict=True):
                for name, fn in systems.items():  # interleaved: the shared machine's load falls on both alike
                    t0 = time.perf_counter()
                    await fn(q, v)
                    ms = (time.perf_counter() - t0) * 1000
                    if round_ == 0:
                        first.setdefault(name, ms)  # the process's first call (an index built on demand)
                    else:
                        samples[name].append(ms)
                        samples[f"{name}: {_kind(q)}"].append(ms)
        embed_ms = []
        for q in queries[:20]:
            t0 = time.perf_counter()
            args.embedder.inner.embed_blocking([q])
            embed_ms.append((time.perf_counter() - t0) * 1000)
        await pool.close()
    finally:
        gc.unfreeze()
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    rows = [(name, first.get(name, float("nan")), _pct(s, 50), _pct(s, 95)) for name, s in sorted(samples.items())]
    rows.append(
        ("embedding the query (MiniLM, not included above)", embed_ms[0], _pct(embed_ms, 50), _pct(embed_ms, 95))
    )
    return rows


def _kind(query: str) -> str:
    return "the short questions" if query in LATENCY_QUERIES else "the summary sentences"


def _pct(samples: Sequence[float], p: int) -> float:
    return float(np.percentile(samples, p))


# tables -----------------------------------------------------------------------------------------------------------


def print_quality(
    title: str, scores: dict[tuple[str, str], list[Score]], split: str, sessions: bool, first3: bool = False
) -> None:
    n = len(scores.get((SYSTEMS[0], split), []))
    if not n:
        return
    print(f"\n{title}, {split}: {n} questions; evidence within the first … read\n")
    heads = [b[0] for b in BUDGETS] + (["session any@5", "session all@5"] if sessions else [])
    heads += (["first 3 hits"] if first3 else []) + ["words shown"]
    print("| system | " + " | ".join(heads) + " |")
    print("|---|" + "---:|" * len(heads))
    for system in _present(scores):
        rows = scores[(system, split)]
        cells = [f"{sum(r.budgets[k] for r in rows) / n:.3f}" for k in range(len(BUDGETS))]
        if sessions:
            cells += [f"{sum(r.any5 for r in rows) / n:.3f}", f"{sum(r.all5 for r in rows) / n:.3f}"]
        if first3:
            cells.append(f"{sum(r.first3 for r in rows) / n:.3f}")
        shown = system in SYSTEMS[:2] or system.startswith("Lorekeeper")
        cells.append(f"{statistics.mean(r.words for r in rows):,.0f}" if shown else "—")
        print(f"| {system} | " + " | ".join(cells) + " |")


def _present(scores: dict[tuple[str, str], list[Score]]) -> list[str]:
    """The systems measured, the product's first."""
    variants = [k for k in dict.fromkeys(k for k, _ in scores) if k.startswith("Lorekeeper, ")]  # as asked
    return list(
        dict.fromkeys(
            s for s in (*SYSTEMS[:1], *variants, LEXICAL_ONLY, VECTOR_ONLY, *SYSTEMS[1:]) for k, _ in scores if k == s
        )
    )


def print_by_type(scores: dict[tuple[str, str], list[Score]]) -> None:
    """The old per-type table: LongMemEval session any@5 by question type, both halves together."""
    types = sorted({k.split("|", 1)[1] for _, k in scores if "|" in k and k.split("|", 1)[1]})
    print("\nLongMemEval session any@5 by question type (both halves)\n")
    systems = _present(scores)
    print("| question type | n | " + " | ".join(systems) + " |")
    print("|---|---:|" + "---:|" * len(systems))
    for t in types:
        cells = []
        for system in systems:
            rows = [r for s in ("dev", "held-out") for r in scores.get((system, f"{s}|{t}"), [])]
            cells.append(f"{sum(r.any5 for r in rows) / len(rows):.2f}")
        n = sum(len(scores.get((SYSTEMS[0], f"{s}|{t}"), [])) for s in ("dev", "held-out"))
        print(f"| {t} | {n} | " + " | ".join(cells) + " |")


async def main(args: argparse.Namespace) -> None:
    if args.quick:
        args.questions, args.distractors, args.crd3_queries, args.episodes, args.turns = 10, 15, 20, 1, 700
        args.latency_sessions, args.latency_queries, args.latency_rounds = 4, 12, 2
    missing = [p for p in (LME, CRD3 / "aligned_index.dev.jsonl", CRD3 / "episodes") if not p.exists()]
    if missing:
        print(f"skipped: data not found ({', '.join(map(str, missing))})")
        return
    args.embedder = CachedEmbedder(MiniLMEmbedder(threads=args.threads), Path(args.cache))
    started = time.perf_counter()
    root = Path(args.db) if args.db else Path(tempfile.mkdtemp(prefix="lk-bench-recall-", dir="/tmp"))
    server = EmbeddedPostgres(root)
    try:
        pool = await create_pool(server.start())
        await migrate(pool, EmbeddingSpec(MiniLMEmbedder.model_name, MiniLMEmbedder.dim))
        memory = Memory(pool)
        lme = await load_longmemeval(memory, args) if "lme" in args.data else []
        crd3 = await load_crd3(memory, args, Path(tempfile.mkdtemp(dir=root))) if "crd3" in args.data else []
        dm = await load_dm_questions(memory, args) if args.dm_questions else []
        lme_scores = await evaluate(memory, lme, args)
        crd3_scores = await evaluate(memory, crd3, args)
        dm_scores = await evaluate(memory, dm, args)
        await pool.close()
    finally:
        server.stop()
        if not args.db:
            shutil.rmtree(root, ignore_errors=True)

    lme_sessions = sum(len(c.haystack.session_titled) for c in lme) / max(1, len(lme))
    cut = f" (their first {args.turns} turns)" if args.turns else ""
    shared = f", {args.pool} questions a haystack" if args.pool > 1 else ""
    if lme or crd3:
        print(f"\nLongMemEval: haystacks of {lme_sessions:.0f} sessions ({args.distractors} distractors{shared}); "
              f"CRD3: one campaign of {2 * args.episodes} episodes{cut}; recall --limit {args.limit}")  # fmt: skip
    for split in ("dev", "held-out"):
        print_quality("LongMemEval", lme_scores, split, sessions=True)
    for split in ("dev", "held-out"):
        print_quality("CRD3 aligned summaries", crd3_scores, split, sessions=False)
    for split in ("dev", "held-out"):
        print_quality("The DM's own questions (CRD3, whole episodes)", dm_scores, split, sessions=False, first3=True)
    if args.by_type and lme:
        print_by_type(lme_scores)
    timings = await latency(args, crd3) if args.latency_sessions else []
    if timings:
        queries = len(LATENCY_QUERIES) + args.latency_queries
        print(f"\nLatency in process, {args.latency_sessions} sessions of {args.latency_lines:,} lines, "
              f"{queries} queries x {args.latency_rounds} rounds, ms\n")  # fmt: skip
        print("| | first call | p50 | p95 |\n|---|---:|---:|---:|")
        for name, first, p50, p95 in timings:
            print(f"| {name} | {'—' if first != first else f'{first:.1f}'} | {p50:.1f} | {p95:.1f} |")  # nan: none
    print(
        f"\n{time.perf_counter() - started:.0f} s in all, {args.embedder.computed} texts embedded (cache: {args.cache})"
    )


def _words(text: str) -> int | None:
    return None if text == "none" else int(text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a small run (< 3 minutes once the cache is warm)")
    parser.add_argument("--questions", type=int, default=40, help="LongMemEval questions (both halves)")
    parser.add_argument("--distractors", type=int, default=50, help="other questions' sessions in each haystack")
    parser.add_argument(
        "--pool",
        type=int,
        default=1,
        help="LongMemEval questions sharing one haystack (their evidence sessions + --distractors others): "
        "recording and indexing cost about 1/N as much, for larger halves",
    )
    parser.add_argument("--crd3-queries", type=int, default=40, help="summary sentences per CRD3 episode")
    parser.add_argument("--episodes", type=int, default=2, help="CRD3 episodes of each half (the smallest)")
    parser.add_argument("--turns", type=int, default=0, help="only each episode's first turns (0: all)")
    parser.add_argument("--threads", type=int, default=1, help="MiniLM threads (1 on a shared machine)")
    parser.add_argument("--data", nargs="*", default=["lme", "crd3"], choices=["lme", "crd3"], help="none: neither")
    parser.add_argument(
        "--dm-questions",
        action="store_true",
        help="also the DM's own questions (tests/data/dm_questions.json) on their whole episodes, with the answer "
        "in the first 3 hits",
    )
    parser.add_argument("--limit", type=int, default=10, help="hits asked of Lorekeeper and today's recall")
    parser.add_argument("--latency-sessions", type=int, default=60, help="0: no latency table")
    parser.add_argument("--latency-lines", type=int, default=2500, help="lines a session in the latency campaign")
    parser.add_argument("--latency-queries", type=int, default=32, help="CRD3 sentences added to the 8 questions")
    parser.add_argument("--latency-rounds", type=int, default=3)
    parser.add_argument("--modes", action="store_true", help="also Lorekeeper's full-text and vector halves alone")
    parser.add_argument(
        "--alone-from",
        type=_words,
        nargs="*",
        default=[],
        help="also Lorekeeper with hits shown by other display rules: no context for a line of N+ words each "
        "('none': context for every hit); the same ranking, so only the display differs",
    )
    parser.add_argument(
        "--whole-lines",
        action="store_true",
        help="also Lorekeeper with a long line that scored by its passage shown whole (the same ranking)",
    )
    fusion = "also Lorekeeper with the fusion's {} at each value (memory.recall_rank.{}, today {}), the others "
    fusion += "the product's: the same haystacks, so only the ranking differs"
    for flag, what, constant in (
        ("--vector-weight", "vector list's weight", "VECTOR_WEIGHT"),
        ("--named-boost", "boost of a line naming the question's entity", "NAMED_BOOST"),
        ("--table-talk", "factor of a table-talk line", "TABLE_TALK_FACTOR"),
        ("--when-boost", "boost of a line of a session played when the question says", "WHEN_BOOST"),
    ):
        today = getattr(recall_rank, constant)
        parser.add_argument(flag, type=float, nargs="*", default=[], help=fusion.format(what, constant, today))
    parser.add_argument(
        "--lexical",
        nargs="*",
        default=[],
        metavar="NAME=VALUE",
        help="also Lorekeeper with one constant of memory.lexical changed (e.g. B=0.5), the others the product's",
    )
    parser.add_argument(
        "--players",
        action="store_true",
        help="CRD3: register the player characters as campaigns/examples/critical_role.yaml has them (aliases, "
        "played_by), not as plain wiki entities",
    )
    parser.add_argument(
        "--not-said-by",
        action="store_true",
        help="also Lorekeeper without boosting the lines said by a speaker the question names (SAID_BY_NAMED)",
    )
    parser.add_argument(
        "--time-unread",
        action="store_true",
        help='also Lorekeeper with a question\'s time ("5 days ago", "last Friday") searched as its words, '
        "not read as the days it names (TIME_ASKED)",
    )
    parser.add_argument(
        "--show-misses",
        action="store_true",
        help="print each LongMemEval dev question whose evidence sessions are not all in Lorekeeper's first 5, with "
        "where they come in a deeper reading of the same ranking",
    )
    parser.add_argument("--by-type", action="store_true", help="also LongMemEval session any@5 by question type")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--db",
        help="keep the database in this folder and reuse the campaigns an earlier run left there (same options): a "
        "rerun then only asks the questions. Delete it when how lines are written changes",
    )
    parser.add_argument("--cache", default="/tmp/lk-bench-embeddings/minilm.sqlite3", help="embedding cache")
    return parser


if __name__ == "__main__":
    asyncio.run(main(build_parser().parse_args()))
