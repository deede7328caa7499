"""Transcript correction benchmark: accuracy on a TTRPG case and on real ASR errors, and speed.

    python -m bench.correction            # everything
    python -m bench.correction --only crd3 --show-errors 20
    python -m bench.correction --only crd3 --mishearings other.jsonl   # another set of mishearings
    python -m bench.correction --only speed   # stage 1 per utterance, and `lorekeeper correct` in lines/s
    python -m bench.correction --only crd3 --llm   # also stage 2, with the LLM configured as for the bot
    python -m bench.correction --only crd3 --setting sound_edge_zipf=7.0 --clean-turns 30000   # another setting
    valgrind --tool=cachegrind --cache-sim=no python -m bench.correction --workload 500 --repeat 1
        # instructions, which the machine's load does not change: the count less --workload 0's, per utterance
    python -m bench.correction --dump before.jsonl   # stage 1 on every CRD3 turn and case, to compare with cmp
    python -m bench.correction --only crd3 --cast   # stage 1 told the session's cast: every player character

Reads ../shared/data (override with LOREKEEPER_DATA); prints "skipped: data not found" for a missing set. Real
ASR errors: every asr/ref/<set>.biasing_<n>.tsv with a recogniser's output asr/hyp/<set>.*.tsv.
The CRD3 mishearings are split by entity into two halves: tune on "tune", read "holdout" as generalisation.
The CRD3 cases use the turns that say a name; a second table puts every mishearing of the set in the place of a
name in other turns (see ``slot_cases``), so a set of names these episodes never say is measured too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from rapidfuzz import process
from rapidfuzz.distance import JaroWinkler

from bot.cli.correct import DEFAULT_JOBS
from bot.settings import load_settings
from campaigns.files import read_campaign_file
from memory.correction import EntityName, MatchSettings, PhoneticIndex, PhoneticMatcher, Pipeline
from memory.correction.evidence import word_zipf
from memory.correction.llm import LLMCorrector
from memory.correction.pronounce import name_phones, warm
from memory.correction.text import normalize, tokenize
from memory.models import PERSON_TYPES, Correction
from memory.providers.llm import LLMError, OpenAILLM

DATA = Path(os.environ.get("LOREKEEPER_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
CRD3 = DATA / "crd3"
ASR = DATA / "asr"
SRD = DATA / "srd5e" / "srd_entity_names.json"
MISHEARINGS = CRD3 / "mishearings.dev.jsonl"

Corrector = Callable[[str, "list[float] | None"], list[Correction]]


def table(title: str, header: list[str], rows: Iterable[list[object]]) -> None:
    rows = [[f"{c:.3f}" if isinstance(c, float) else str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print(f"\n{title}")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


# --- shared: the entity lists ------------------------------------------------------------------------------


def _spoken(name: str) -> str:
    """Wiki titles carry disambiguators ("Tal'Dorei (continent)") that nobody says aloud."""
    return re.sub(r"\s*\([^)]*\)", "", name).strip()


def _uninverted(name: str) -> str:
    """The SRD's equipment list is a catalogue: "Crossbow, heavy" is said "heavy crossbow"."""
    head, comma, tail = name.partition(", ")
    if not comma or not re.fullmatch(r"[^\W\d_][\w' -]*", tail) or any(ch.isdigit() for ch in tail):
        return name  # "Armor, +1" is a name with a number, not a catalogue entry
    return f"{tail} {head.lower() if tail[:1].islower() else head}"


def _alias_worthy(surface: str, count: int, entity: dict) -> bool:
    # The wiki's surface forms include pronouns and descriptions ("his sister", "a white dragon"): keep short
    # capitalised forms seen more than once, sharing a word with the entity's name or its invented words, or
    # made of words English does not know (a nickname: "Minxie" for Keyleth).
    words = set(normalize(surface).split())
    if not any(c.isupper() for c in surface) or "\n" in surface or len(words) > 4:
        return False
    own = set(normalize(entity["canonical"]).split()) | {normalize(t) for t in entity["oov_tokens"]}
    return count > 1 or bool(words & own) or all(word_zipf(w) < 2.0 for w in words)


def crd3_entities() -> list[EntityName]:
    """The wiki's entities, the example campaign's npcs and player characters (513 of its 518) marked as people."""
    wiki = json.loads((CRD3 / "crd3_wiki_entities.json").read_text())
    people = _example_names(*PERSON_TYPES)
    entities = []
    for i, e in enumerate(wiki):
        name = _spoken(e["canonical"])
        aliases = [_spoken(s) for s, n in e["surfaces"].items() if s != e["canonical"] and _alias_worthy(s, n, e)]
        aliases = [a for a in aliases if a and a != name]
        entities.append(EntityName(id=i, name=name, aliases=aliases, person=normalize(name) in people))
    return entities


def _example_names(*types: str) -> set[str]:
    """The names and aliases (normal forms) of the example campaign's entities of these types."""
    example = read_campaign_file(Path(__file__).resolve().parents[1] / "campaigns" / "examples" / "critical_role.yaml")
    return {normalize(n) for e in example.entities if e.type in types for n in [e.name, *e.aliases]}


def player_ids(entities: list[EntityName]) -> frozenset[int]:
    """The ids of the entities named as the example campaign's player characters (by name or alias): a cast as
    large as a campaign's, both parties' players at once (``--cast``)."""
    names = _example_names("player")
    return frozenset(e.id for e in entities if e.id is not None and normalize(e.name) in names)


def srd_entities(first_id: int) -> list[EntityName]:
    srd = json.loads(SRD.read_text()) if SRD.exists() else []
    return [EntityName(id=first_id + i, name=_uninverted(_spoken(e["name"]))) for i, e in enumerate(srd)]


# --- accuracy, TTRPG case -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    text: str
    start: int  # the injected mishearing, in ``text``
    end: int
    canonical: str
    half: str
    surface: str = ""  # the name as the turn had it ("Sylas" for the entity "Sylas Briarwood")


def crd3_turns() -> list[str]:
    turns = []
    for path in sorted((CRD3 / "episodes").glob("*.json")):
        for turn in json.loads(path.read_text())["TURNS"]:
            turns.append(" ".join(" ".join(turn["UTTERANCES"]).split()))
    return [t for t in turns if t]


def _half(canonical: str) -> str:
    return "tune" if zlib.crc32(canonical.encode()) % 2 == 0 else "holdout"


def crd3_cases(
    turns: list[str], per_entry: int, rng: random.Random, mishearings: Path = MISHEARINGS
) -> tuple[list[Case], set[int]]:
    """Real turns with one name replaced by its mishearing; also the turn numbers used."""
    cases: list[Case] = []
    used: set[int] = set()
    for line in mishearings.read_text().splitlines():
        m = json.loads(line)
        pattern = re.compile(r"(?<![\w'’])" + re.escape(m["surface"]) + r"(?![\w])")
        hits = [i for i, t in enumerate(turns) if pattern.search(t)]
        for i in rng.sample(hits, min(per_entry, len(hits))):
            hit = pattern.search(turns[i])
            assert hit is not None
            text = turns[i][: hit.start()] + m["misheard"] + turns[i][hit.end() :]
            canonical = _spoken(m["canonical"])
            end = hit.start() + len(m["misheard"])
            cases.append(Case(text, hit.start(), end, canonical, _half(canonical), m["surface"]))
            used.add(i)
    return cases, used


def _kind(misheard: str) -> str:
    """What a mishearing is made of: stage 1 replaces a common word only on strong evidence."""
    words = misheard.split()
    common = min(word_zipf(w) for w in words) >= MatchSettings().common_zipf
    return f"{'one word' if len(words) == 1 else 'several words'}, {'all common' if common else 'one uncommon'}"


def slot_cases(
    turns: list[str], per_entry: int, rng: random.Random, correct: Corrector, mishearings: Path = MISHEARINGS
) -> list[tuple[Case, str]]:
    """Every mishearing said where another turn names a CRD3 entity by an invented one-word name ("Scanlan"),
    with what it is made of (see ``_kind``). ``crd3_cases`` has only the names these 12 episodes say (84 of the
    dev set's 239), so a set of other names finds few turns there; these cases measure any set. Only turns
    ``correct`` leaves as they are take a mishearing: what it changes then is the mishearing's doing."""
    slots = {
        name
        for e in json.loads((CRD3 / "crd3_wiki_entities.json").read_text())
        if re.fullmatch(r"[A-Z][a-z]{3,}", name := _spoken(e["canonical"]))
        and word_zipf(name.lower()) < MatchSettings().known_zipf
    }
    pattern = re.compile(r"(?<![\w'’])(?:" + "|".join(map(re.escape, sorted(slots))) + r")(?![\w'’])")
    named = [(t, hit) for t in turns if (hit := pattern.search(t))]
    carriers = [(t, hit) for t, hit in rng.sample(named, min(len(named), 2000)) if not correct(t, None)]
    cases = []
    for line in mishearings.read_text().splitlines():
        m = json.loads(line)
        canonical = _spoken(m["canonical"])
        for text, hit in rng.sample(carriers, per_entry):
            said = text[: hit.start()] + m["misheard"] + text[hit.end() :]
            end = hit.start() + len(m["misheard"])
            case = Case(said, hit.start(), end, canonical, _half(canonical), m["surface"])
            cases.append((case, _kind(m["misheard"])))
    return cases


@dataclass
class Score:
    cases: int = 0
    restored: int = 0
    made: int = 0
    right: int = 0
    respelled: int = 0  # other corrections whose heard letters already spell a name ("white stone" / Whitestone)

    @property
    def recall(self) -> float:
        return self.restored / self.cases if self.cases else 0.0

    @property
    def precision(self) -> float:
        return self.right / self.made if self.made else 1.0

    @property
    def precision_respelled_ok(self) -> float:
        """Precision when respelling a name that was said with other word breaks or as an alias counts as right:
        the human transcripts write "white stone", a correction to "Whitestone" names the same place."""
        return (self.right + self.respelled) / self.made if self.made else 1.0


def respells_a_name(c: Correction, names: set[str]) -> bool:
    return normalize(c.span).replace(" ", "") in names


def _restores(case: Case, c: Correction) -> bool:
    """Whether ``c`` puts the injected name back: over the extent of both, the corrected text reads as the turn
    did with either the surface form it had or the entity's canonical name (aliases map to canonical).

    A span one word wider than the mishearing is right when the result is the original ("dwell daily un Empire"
    -> "Dwendalian Empire" where the turn said "Dwendalian Empire"); so is one a word narrower that leaves a word
    already right as it was ("lord na stock grace pine" -> "lord Nostoc Greyspine" where the turn said "Lord
    Nostoc Greyspine"); an exact-span match writing the canonical name is right even if it doubles a word
    ("Dwendalian Empire Empire"), since that is what the spec asks for.
    """
    if not (c.start < case.end and case.start < c.end):
        return False
    lo, hi = min(c.start, case.start), max(c.end, case.end)
    corrected = case.text[lo : c.start] + c.replacement + case.text[c.end : hi]
    head, tail = case.text[lo : case.start], case.text[case.end : hi]
    wanted = {normalize(head + name + tail) for name in (case.surface, case.canonical) if name}
    return normalize(corrected) in wanted


def _names_part(case: Case, c: Correction) -> bool:
    """Whether ``c``, at one end of the mishearing, writes the words the name said there had at that end: "lady
    coma of told" corrected to "Lady Kima of told" where the turn said "Lady Kima of Vord". A right replacement
    (precision), though not the name restored (recall)."""
    if not (case.start <= c.start and c.end <= case.end):
        return False
    put = normalize(c.replacement).split()
    said = normalize(case.surface or case.canonical).split()
    return len(put) <= len(said) and (
        (c.start == case.start and said[: len(put)] == put) or (c.end == case.end and said[-len(put) :] == put)
    )


def simulated_confidences(text: str, doubtful: tuple[int, int] | None, rng: random.Random) -> list[float]:
    """Stand-in STT confidences: misheard words 0.2–0.6; other words 0.7–1.0, except 5 % noise at 0.3–0.6."""
    out = []
    for t in tokenize(text):
        if doubtful is not None and doubtful[0] <= t.start < doubtful[1]:
            out.append(rng.uniform(0.2, 0.6))
        else:
            out.append(rng.uniform(0.3, 0.6) if rng.random() < 0.05 else rng.uniform(0.7, 1.0))
    return out


def score_cases(
    correct: Corrector,
    cases: list[Case],
    rng: random.Random | None,
    names: set[str],
    errors: list[str] | None = None,
) -> dict[str, Score]:
    """Recall and precision; with ``rng``, words carry simulated STT confidences."""
    scores = {"tune": Score(), "holdout": Score(), "all": Score()}
    for case in cases:
        conf = simulated_confidences(case.text, (case.start, case.end), rng) if rng else None
        corrections = correct(case.text, conf)
        right = [c for c in corrections if _restores(case, c)]
        partly = [c for c in corrections if c not in right and _names_part(case, c)]
        for s in (scores[case.half], scores["all"]):
            s.cases += 1
            s.restored += bool(right)
            s.made += len(corrections)
            s.right += len(right) + len(partly)
            s.respelled += sum(respells_a_name(c, names) for c in corrections if c not in right + partly)
        if errors is not None and (not right or len(corrections) > len(right) + len(partly)):
            made = ", ".join(f"{c.span!r}->{c.replacement!r} {c.score:.2f}" for c in corrections)
            errors.append(f"{case.half:7} want {case.text[case.start : case.end]!r}->{case.canonical!r}; made {made}")
    return scores


def false_corrections(
    correct: Corrector, turns: list[str], rng: random.Random | None, names: set[str], errors: list[str] | None = None
) -> tuple[int, int, int]:
    """Words changed, words changed only to respell a name already said, and words seen, on turns with nothing
    injected."""
    changed = respelled = words = 0
    for turn in turns:
        words += len(tokenize(turn))
        conf = simulated_confidences(turn, None, rng) if rng else None
        for c in correct(turn, conf):
            changed += len(tokenize(c.span))
            respelled += len(tokenize(c.span)) if respells_a_name(c, names) else 0
            if errors is not None:
                errors.append(f"clean   {c.span!r}->{c.replacement!r} {c.score:.2f} in {turn[:90]!r}")
    return changed, respelled, words


def why_out_of_reach(index: PhoneticIndex, case: Case) -> str:
    """Why neither stage reaches a mishearing: it is another entity's name as written (left alone, as the spec
    asks), it is made of very common words only, or it is further from the name than stage 2 looks."""
    heard = normalize(case.text[case.start : case.end])
    if heard in index.exact_spaceless or heard.replace(" ", "") in index.exact_spaceless:
        return "another entity's name as written"
    if min(word_zipf(w) for w in heard.split()) >= 5.0:
        return "very common words only (Zipf ≥ 5)"
    return "less common words stage 1 does not hand on"


def stage2_reach(
    matcher: PhoneticMatcher,
    cases: list[Case],
    clean: list[str],
    rng: random.Random | None,
    out_of_reach: list[Case] | None = None,
) -> tuple[float, float, float]:
    """What stage 2 could add at best, with no LLM to run: the share of cases stage 1 restores or hands to stage 2
    (the mishearing inside a doubtful span, its entity among the names the model is shown); and the share of
    clean turns, and of their words, that would go to the model for nothing. The cases neither stage reaches
    go to ``out_of_reach``."""
    stage2 = LLMCorrector(None, matcher.index)  # type: ignore[arg-type]  # asks nothing: names only
    reached = 0
    for case in cases:
        result = matcher.correct(
            case.text, simulated_confidences(case.text, (case.start, case.end), rng) if rng else None
        )
        if any(_restores(case, c) for c in result.corrections):
            reached += 1
            continue
        spans = [case.text[a:b] for a, b in result.suspects]
        wanted = {normalize(case.canonical), normalize(case.surface)}
        if any(a <= case.start and case.end <= b for a, b in result.suspects) and wanted & {
            normalize(n) for n in stage2.names_for(spans)
        }:
            reached += 1
        elif out_of_reach is not None:
            out_of_reach.append(case)
    sent = words = doubted = 0
    for turn in clean:
        result = matcher.correct(turn, simulated_confidences(turn, None, rng) if rng else None)
        sent += bool(result.suspects)
        words += len(tokenize(turn))
        doubted += sum(len(tokenize(turn[a:b])) for a, b in result.suspects)
    return reached / len(cases), sent / len(clean), doubted / words


class CountedLLM:
    """The LLM client, counting calls and failures: a run whose calls all fail must not pass for stage 2. The
    first call failing stops the bench (a wrong key, model or address)."""

    def __init__(self, llm: OpenAILLM) -> None:
        self.llm = llm
        self.calls = self.failed = 0

    async def complete_json(self, **kwargs: Any) -> Any:
        self.calls += 1
        try:
            return await self.llm.complete_json(**kwargs)
        except LLMError as exc:
            self.failed += 1
            if self.calls == 1:
                raise SystemExit(f"--llm: the first stage-2 call failed: {exc}") from exc
            raise


def llm_corrector(
    entities: list[EntityName], base_url: str | None, api_key: str | None, model: str
) -> tuple[Corrector, Callable[[], None], CountedLLM]:
    """Both stages, stage 2 on an OpenAI-compatible endpoint, as a blocking corrector (one call at a time); the
    function that closes it; and the call counts."""
    runner = asyncio.Runner()
    llm = CountedLLM(OpenAILLM(base_url, api_key, model))
    pipeline = Pipeline(entities, llm=llm)

    def correct(text: str, confidences: list[float] | None) -> list[Correction]:
        words = None
        if confidences is not None:
            words = [(text[t.start : t.end], c) for t, c in zip(tokenize(text), confidences, strict=True)]
        return runner.run(pipeline.correct(text, words)).corrections

    def close() -> None:
        with runner:
            runner.run(llm.llm.aclose())

    return correct, close, llm


class NaiveMatcher:
    """The baseline: every 1–3-word n-gram against every name by Jaro-Winkler ≥ 0.80, best first."""

    def __init__(self, entities: list[EntityName], threshold: float = 0.80) -> None:
        self.names = [normalize(e.name) for e in entities]
        self.canonical = [e.name for e in entities]
        self.threshold = threshold

    def correct(self, text: str, _confidences: list[float] | None = None) -> list[Correction]:
        tokens = tokenize(text)
        found: list[tuple[float, int, int, int]] = []
        for i in range(len(tokens)):
            for j in range(i, min(i + 3, len(tokens))):
                gram = " ".join(t.norm for t in tokens[i : j + 1])
                hit = process.extractOne(gram, self.names, scorer=JaroWinkler.similarity, score_cutoff=self.threshold)
                if hit is not None and hit[0] != gram:
                    found.append((hit[1], i, j, hit[2]))
        taken: list[tuple[float, int, int, int]] = []
        for f in sorted(found, reverse=True):
            if all(f[2] < t[1] or f[1] > t[2] for t in taken):
                taken.append(f)
        return [
            Correction(
                span=text[tokens[i].start : tokens[j].base_end],
                replacement=self.canonical[k],
                start=tokens[i].start,
                end=tokens[j].base_end,
                score=s,
            )
            for s, i, j, k in taken
        ]


def bench_slots(args: argparse.Namespace, matcher: PhoneticMatcher, names: set[str]) -> None:
    """Stage 1 on every mishearing of the set, each in the place of a name in other turns (see ``slot_cases``)."""
    cast = player_ids(crd3_entities()) if args.cast else frozenset()
    ours: Corrector = lambda t, conf: matcher.correct(t, conf, cast).corrections  # noqa: E731
    # The turns are chosen with the default settings, so that another --setting is measured on the same cases.
    default = PhoneticMatcher(matcher.index)
    chosen: Corrector = lambda t, conf: default.correct(t, conf).corrections  # noqa: E731
    cases = slot_cases(crd3_turns(), args.per_entry, random.Random(args.seed), chosen, args.mishearings)
    rows = []
    kinds = sorted({k for _, k in cases}, key=lambda k: (not k.startswith("one"), k))
    for kind in kinds:
        s = score_cases(ours, [c for c, k in cases if k == kind], None, names)["all"]
        rows.append([kind, s.cases, f"{s.cases / len(cases):.3f}", s.recall, s.precision, s.precision_respelled_ok])
    for half, s in score_cases(ours, [c for c, _ in cases], None, names).items():
        rows.append([f"{half} (mishearings)", s.cases, "", s.recall, s.precision, s.precision_respelled_ok])
    table(
        f"Every mishearing of {args.mishearings.name} in the place of a name in other CRD3 turns "
        f"({args.per_entry} turns each; phonetic, no confidences)",
        ["made of", "n", "share", "recall", "precision", "(respelling ok)"],
        rows,
    )


def bench_crd3(args: argparse.Namespace) -> None:
    if not args.mishearings.exists():
        print(f"\nAccuracy, TTRPG case: skipped: {args.mishearings} not found")
        return
    settings = load_settings(os.environ.get("LOREKEEPER_CONFIG")) if args.llm else None
    if settings is not None and not settings.llm_enabled:
        raise SystemExit("--llm: set LOREKEEPER_LLM_MODEL and OPENAI_API_KEY or OPENAI_BASE_URL, as for the bot")
    rng = random.Random(args.seed)
    turns = crd3_turns()
    cases, used = crd3_cases(turns, args.per_entry, rng, args.mishearings)
    unused = [t for i, t in enumerate(turns) if i not in used]
    clean = rng.sample(unused, min(args.clean_turns, len(unused)))
    entities = crd3_entities()
    entities += srd_entities(len(entities))
    matcher = PhoneticMatcher(PhoneticIndex.build(entities), args.match_settings)
    names = matcher.index.exact_spaceless
    cast = player_ids(entities) if args.cast else frozenset()
    ours: Corrector = lambda t, conf: matcher.correct(t, conf, cast).corrections  # noqa: E731
    runs: list[tuple[str, Corrector, random.Random | None, list[Case], list[str]]] = [
        ("phonetic", ours, None, cases, clean),
        ("phonetic + simulated conf.", ours, random.Random(args.seed), cases, clean),
    ]
    close_llm: Callable[[], None] | None = None
    counted: CountedLLM | None = None
    if settings is not None:
        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
        both, close_llm, counted = llm_corrector(entities, settings.openai_base_url, key, settings.llm_model or "")
        runs.append(("phonetic + LLM stage 2", both, None, cases, clean))
        runs.append(("phonetic + LLM + simulated conf.", both, random.Random(args.seed), cases, clean))
    if not args.no_baseline:
        # The naive matcher takes ~0.5 s per turn at this size: a sample.
        runs.append(("naive JW n-gram", NaiveMatcher(entities).correct, None, rng.sample(cases, 60), clean[:60]))
    rows = []
    try:
        for name, correct, conf_rng, sample, clean_sample in runs:
            errors: list[str] | None = [] if args.show_errors and name.startswith(args.errors_of) else None
            scores = score_cases(correct, sample, conf_rng, names, errors)
            changed, respelled, words = false_corrections(correct, clean_sample, conf_rng, names, errors)
            for half, s in scores.items():
                rows.append([name, half, s.cases, s.recall, s.precision, s.precision_respelled_ok, ""])
            rate = f"{1000 * changed / words:.2f} ({1000 * (changed - respelled) / words:.2f}) / {words} w"
            rows.append([name, "clean turns", len(clean_sample), "", "", "", rate])
            if errors:
                print("\n".join(errors[: args.show_errors]))
    finally:
        if close_llm is not None:
            close_llm()
    table(
        f"Accuracy, TTRPG case (CRD3 turns, {args.mishearings.name}, {len(entities)} entities incl. SRD distractors)",
        ["matcher", "set", "n", "recall", "precision", "(respelling ok)", "false corr./1k words (respelling ok)"],
        rows,
    )
    if counted is not None:
        print(f"stage 2: {counted.calls} LLM calls, {counted.failed} failed (a failed call leaves the text as heard)")
    unreached: list[Case] = []
    reach = [
        [name, *stage2_reach(matcher, cases, clean, conf_rng and random.Random(args.seed), out)]
        for (name, _, conf_rng, _, _), out in zip(runs[:2], [unreached, None], strict=True)
    ]
    table(
        "Stage 2's reach, no LLM run: names restored if the model got every doubtful span it is shown right",
        ["stage 1", "recall at best", "clean turns sent to stage 2", "their words doubted"],
        [[n, f"{r:.3f}", f"{t:.1%}", f"{w:.1%}"] for n, r, t, w in reach],
    )
    bench_slots(args, matcher, names)
    causes: dict[str, list[str]] = {}
    for case in unreached:
        causes.setdefault(why_out_of_reach(matcher.index, case), []).append(case.text[case.start : case.end])
    table(
        "Out of both stages' reach (phonetic, no confidences): why",
        ["cause", "cases", "share", "heard, e.g."],
        [
            [cause, len(heard), f"{len(heard) / len(cases):.3f}", ", ".join(sorted(set(heard))[:6])]
            for cause, heard in sorted(causes.items(), key=lambda c: -len(c[1]))
        ],
    )


# --- accuracy, real ASR errors ------------------------------------------------------------------------------


def _align(ref: list[str], hyp: list[str]) -> list[int | None]:
    """For each reference word, the index of the identical hypothesis word it aligns to (Levenshtein)."""
    n, m = len(ref), len(hyp)
    cost = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        cost[i][0] = i
    for j in range(m + 1):
        cost[0][j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost[i][j] = min(cost[i - 1][j] + 1, cost[i][j - 1] + 1, cost[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1]))
    out: list[int | None] = [None] * n
    i, j = n, m
    while i > 0 and j > 0:
        if cost[i][j] == cost[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1]):
            out[i - 1] = j - 1 if ref[i - 1] == hyp[j - 1] else None
            i, j = i - 1, j - 1
        elif cost[i][j] == cost[i - 1][j] + 1:
            i -= 1
        else:
            j -= 1
    return out


def _words(text: str) -> list[str]:
    return [t.word for t in tokenize(text.casefold())]


def asr_sets() -> list[tuple[str, str, Path, Path]]:
    """(set, biasing list size, reference file, hypothesis file) for each reference file with a recogniser's
    output for its set: test-clean with 100-word lists here; test-other or longer lists where they are given
    (``ref/<set>.biasing_<n>.tsv``, ``hyp/<set>.<anything>.tsv``, as fbai-speech names them)."""
    found = []
    for ref in sorted((ASR / "ref").glob("*.biasing_*.tsv")):
        part, _, size = ref.name.removesuffix(".tsv").partition(".biasing_")
        hyps = sorted((ASR / "hyp").glob(f"{part}.*.tsv"))
        if hyps:
            found.append((part, size, ref, hyps[0]))
    return sorted(found, key=lambda f: (f[0], int(f[1]) if f[1].isdigit() else 0))


def bench_asr(args: argparse.Namespace) -> None:
    sets = asr_sets()
    if not sets:
        print("\nAccuracy, real ASR errors: skipped: data not found")
        return
    rows: list[list[object]] = []
    for part, size, ref_path, hyp_path in sets:
        hyps = dict(line.split("\t", 1) for line in hyp_path.read_text().splitlines())
        rare = errors_before = errors_after = damaged = changed = 0
        for line in ref_path.read_text().splitlines():
            utt, ref_text, rare_json, biasing_json = line.split("\t")
            raw = hyps.get(utt, "").strip()
            pipeline = Pipeline([EntityName(name=w) for w in json.loads(biasing_json)])
            corrected = pipeline.correct_fast(raw).text
            changed += corrected != raw
            ref = _words(ref_text)
            before, after = _align(ref, _words(raw)), _align(ref, _words(corrected))
            rare_words = set(json.loads(rare_json))
            for word, b, a in zip(ref, before, after, strict=True):
                if word in rare_words:
                    rare += 1
                    errors_before += b is None
                    errors_after += a is None
                elif b is not None and a is None:
                    damaged += 1
        rows.append([part, size, "before correction", rare, f"{100 * errors_before / rare:.1f} %", "", ""])
        rows.append([part, size, "after stage 1", rare, f"{100 * errors_after / rare:.1f} %", damaged, changed])
    table(
        "Accuracy, real ASR errors (LibriSpeech, RNN-T without biasing, each utterance's biasing list as entities)",
        ["set", "list", "", "rare words", "rare-word error rate", "other words damaged", "utterances changed"],
        rows,
    )


# --- speed ---------------------------------------------------------------------------------------------------


def _synthetic_names(count: int, rng: random.Random) -> list[str]:
    """Name-like strings from syllables, for entity counts beyond the real lists."""
    syllables = [
        "ka",
        "vel",
        "dor",
        "ith",
        "mar",
        "zen",
        "lo",
        "rah",
        "quin",
        "tor",
        "bel",
        "sha",
        "gru",
        "nex",
        "ol",
        "fey",
        "wyn",
        "dra",
        "kes",
        "um",
        "ar",
        "thi",
        "mo",
        "sk",
        "ra",
    ]
    names: set[str] = set()
    while len(names) < count:
        words = [
            "".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))).capitalize()
            for _ in range(rng.choice((1, 1, 1, 2, 2, 3)))
        ]
        names.add(" ".join(words))
    return sorted(names)


def _percentile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def workload(args: argparse.Namespace) -> None:
    """The speed table's utterances at 1,000 entities, for an instruction count (see the module's docstring): the
    index and the warm-up, then ``--workload`` utterances corrected ``--repeat`` times. Prints nothing."""
    rng = random.Random(args.seed)
    names = [e.name for e in crd3_entities()] + [e.name for e in srd_entities(0)]
    pipeline = Pipeline([EntityName(id=i, name=n) for i, n in enumerate(names[:1000])], settings=args.match_settings)
    words = " ".join(crd3_turns()).split()
    utterances = [" ".join(words[i : i + 20]) for i in rng.sample(range(len(words) - 20), args.utterances)]
    for u in utterances[:50]:
        pipeline.correct_fast(u)
    for _ in range(args.repeat):
        for u in utterances[50 : 50 + args.workload]:
            pipeline.correct_fast(u)


def dump(args: argparse.Namespace) -> None:
    """Stage 1's result (corrections and suspects) on every CRD3 turn and every mishearing case, plain and with
    simulated confidences, one JSON line each: a change meant to keep the matcher's behaviour must leave the file
    byte-identical (``cmp before.jsonl after.jsonl``)."""
    entities = crd3_entities()
    entities += srd_entities(len(entities))
    matcher = PhoneticMatcher(PhoneticIndex.build(entities), args.match_settings)
    cast = player_ids(entities) if args.cast else frozenset()
    turns = crd3_turns()
    cases, _ = crd3_cases(turns, args.per_entry, random.Random(args.seed), args.mishearings)
    rng = random.Random(11)
    with args.dump.open("w", encoding="utf-8") as out:

        def write(tag: str, text: str, confidences: list[float] | None) -> None:
            result = matcher.correct(text, confidences, cast)
            fixes = [c.model_dump(mode="json") for c in result.corrections]
            out.write(json.dumps([tag, fixes, result.suspects], ensure_ascii=False) + "\n")

        for i, turn in enumerate(turns):
            write(f"t{i}", turn, None)
        for i, case in enumerate(cases):
            write(f"c{i}", case.text, None)
            write(f"c{i}s", case.text, simulated_confidences(case.text, (case.start, case.end), rng))
    print(f"{len(turns):,} turns and {len(cases):,} cases (twice) written to {args.dump}")


def bench_speed(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    if (CRD3 / "episodes").exists():
        words = " ".join(crd3_turns()).split()
        real_names = [e.name for e in crd3_entities()] + [e.name for e in srd_entities(0)]
    else:
        words = "the party walks into the old tavern and asks the keeper about the missing paladin".split() * 50
        real_names = []
    utterances = [" ".join(words[i : i + 20]) for i in rng.sample(range(len(words) - 20), args.utterances)]
    rows = []
    for count in (100, 1_000, 10_000):
        names = real_names[:count] + _synthetic_names(max(0, count - len(real_names)), rng)
        entities = [EntityName(id=i, name=n) for i, n in enumerate(names)]
        start = time.perf_counter()
        pipeline = Pipeline(entities, settings=args.match_settings)
        build_ms = 1000 * (time.perf_counter() - start)
        for u in utterances[:50]:
            pipeline.correct_fast(u)  # warm the code caches the way a running session does
        timings = []
        for u in utterances:
            t0 = time.perf_counter()
            pipeline.correct_fast(u)
            timings.append(1000 * (time.perf_counter() - t0))
        rows.append(["phonetic index", count, f"{build_ms:.0f}", _percentile(timings, 50), _percentile(timings, 99)])
        if not args.no_baseline:
            naive = NaiveMatcher(entities)
            sample = utterances[: max(5, args.utterances // (20 if count < 10_000 else 100))]
            naive_t = []
            for u in sample:
                t0 = time.perf_counter()
                naive.correct(u)
                naive_t.append(1000 * (time.perf_counter() - t0))
            rows.append(["naive n-gram × all names", count, "0", _percentile(naive_t, 50), _percentile(naive_t, 99)])
    table(
        f"Speed, 20-word utterances ({args.utterances} real CRD3 word windows, stage 1 only, ms)",
        ["matcher", "entities", "index build ms", "p50 ms", "p99 ms"],
        rows,
    )


def _asr_lines(limit: int) -> list[str]:
    """JSON lines of the first ASR set as a recogniser's harness would send them: the output, and the
    utterance's own biasing list as its entities (nearly every list new: most of its words were not seen)."""
    sets = asr_sets()
    if not sets:
        return []
    _, _, ref_path, hyp_path = sets[0]
    hyps = dict(line.split("\t", 1) for line in hyp_path.read_text().splitlines())
    lines = []
    for line in ref_path.read_text().splitlines()[:limit]:
        utt, _, _, biasing_json = line.split("\t")
        lines.append(json.dumps({"text": hyps.get(utt, "").strip(), "entities": json.loads(biasing_json)}))
    return lines


def bench_cli(args: argparse.Namespace) -> None:
    """`lorekeeper correct` as others will run it: a process reading utterances from stdin, JSON lines out."""
    rng = random.Random(args.seed)
    if (CRD3 / "episodes").exists():
        turns, names = crd3_turns(), [e.name for e in crd3_entities()]
    else:
        turns, names = ["the party asks the keeper about the paladin"], _synthetic_names(1_000, rng)
    lines = [rng.choice(turns) for _ in range(10_000)]
    command = [sys.executable, "-c", "from bot.cli import main; main()", "correct"]
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory() as folder:
        entities = Path(folder) / "entities.txt"
        entities.write_text("\n".join(names))

        def run(stdin: list[str], *options: str) -> float:
            start = time.perf_counter()
            done = subprocess.run([*command, *options], input="\n".join(stdin), capture_output=True, text=True)
            if done.returncode != 0 or len(done.stdout.splitlines()) != len(stdin):
                raise RuntimeError(f"lorekeeper correct failed: {done.stderr[-500:]}")
            return time.perf_counter() - start

        def row(what: str, stdin: list[str], *options: str) -> None:
            for jobs in ("1", str(DEFAULT_JOBS)):  # in this process; one worker per core (the default)
                startup, total = run(stdin[:1], *options, "--jobs", jobs), run(stdin, *options, "--jobs", jobs)
                rate = len(stdin) / (total - startup)
                rows.append([what, jobs, len(stdin), f"{startup:.2f}", f"{total:.2f}", f"{rate:.0f}"])

        words = statistics.mean(len(line.split()) for line in lines)
        row(f"--entities ({len(names)} names), CRD3 turns of {words:.1f} words", lines, "--entities", str(entities))
        if asr := _asr_lines(2_000):
            row("each line its own 100-word list (LibriSpeech)", asr)
    table(
        "CLI, `lorekeeper correct`",
        ["input", "--jobs", "lines", "process start + index (s)", "total (s)", "lines/s after start"],
        rows,
    )
    if asr:
        # What a line's own list costs most: eSpeak NG's reading of each name not pronounced before (C code the
        # project calls unchanged, so the figure compares machines).
        new = list(dict.fromkeys(n for line in asr for n in json.loads(line)["entities"]))[:2_000]
        warm()
        start = time.perf_counter()
        for name in new:
            name_phones.__wrapped__(tuple(normalize(name).split()))
        print(f"pronouncing a new name (eSpeak NG): {1e6 * (time.perf_counter() - start) / len(new):.0f} µs")


def _setting(text: str) -> tuple[str, object]:
    name, _, value = text.partition("=")
    kinds = {f.name: type(getattr(MatchSettings(), f.name)) for f in fields(MatchSettings)}
    if name not in kinds or not value:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, NAME one of {', '.join(sorted(kinds))}")
    try:
        return name, kinds[name](value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{name} takes a {kinds[name].__name__}, not {value!r}") from None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=["crd3", "asr", "speed"])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--per-entry", type=int, default=3, help="turns per mishearing")
    parser.add_argument(
        "--mishearings", type=Path, default=MISHEARINGS, help="mishearings JSONL (surface, canonical, misheard)"
    )
    parser.add_argument("--clean-turns", type=int, default=3000)
    parser.add_argument("--show-errors", type=int, default=0, help="print this many misses/false corrections")
    parser.add_argument("--errors-of", default="phonetic", help="matcher whose errors --show-errors prints")
    parser.add_argument("--utterances", type=int, default=2000, help="utterances timed per entity count")
    parser.add_argument("--no-baseline", action="store_true", help="skip the (slow) naive baseline")
    parser.add_argument(
        "--llm",
        action="store_true",
        help="also run stage 2 on the LLM configured as for the bot (LOREKEEPER_LLM_MODEL, OPENAI_API_KEY, "
        "OPENAI_BASE_URL): a call per turn with a doubtful span, about 1,600 on the defaults",
    )
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        type=_setting,
        metavar="NAME=VALUE",
        help="stage 1 with this MatchSettings field changed (crd3 and speed; repeatable): what a tuning costs",
    )
    parser.add_argument("--workload", type=int, help="only correct this many utterances, for valgrind (see above)")
    parser.add_argument("--repeat", type=int, default=1, help="times --workload corrects its utterances")
    parser.add_argument("--dump", type=Path, help="only write stage 1's result on every CRD3 turn to this file")
    parser.add_argument(
        "--cast", action="store_true", help="crd3 and --dump: stage 1 told every player character is the cast"
    )
    args = parser.parse_args()
    args.match_settings = replace(MatchSettings(), **dict(args.setting))
    if args.workload is not None:
        workload(args)
        return
    if args.dump is not None:
        dump(args)
        return
    if args.only in (None, "crd3"):
        bench_crd3(args)
    if args.only in (None, "asr"):
        bench_asr(args)
    if args.only in (None, "speed"):
        bench_speed(args)
        bench_cli(args)


if __name__ == "__main__":
    main()
