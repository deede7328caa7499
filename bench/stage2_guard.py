"""Stage 2's guard against a wrong model: what a substitution needs to stand, measured with a scripted model.

    python -m bench.stage2_guard                  # the CRD3 dev mishearings, 2 turns each
    python -m bench.stage2_guard --per-entry 3 --seed 11

Each CRD3 dev mishearing is put in the place of its name in real turns (``bench.correction.crd3_cases``), with
simulated STT confidences (``simulated_confidences``: the misheard words 0.2-0.6). Stage 2 is asked about the
mishearing's span, or where stage 1 leaves it in a doubtful span, about those spans: a local fake
OpenAI-compatible server (``tests/fakes/openai_server.py``, over HTTP with the real ``openai`` client) answers,
in turn, (a) the right name, (b) a wrong known name (the other entity spelled most like the right one) and (c) a
random known name, each as a declared substitution of the misheard words. Kept: the verify step let the
substitution stand. (a) should be kept; (b) and (c) reverted (the issue asks >= 95 %). The same questions are
asked with the misheard words heard confidently (0.7-1.0), where (a) may be reverted, and with no confidences
(a transcript file). Rows per half of the mishearings (tune / holdout, by entity).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from rapidfuzz import process
from rapidfuzz.distance import JaroWinkler

from bench.correction import (
    MISHEARINGS,
    Case,
    _restores,
    crd3_cases,
    crd3_entities,
    crd3_turns,
    simulated_confidences,
    srd_entities,
    table,
)
from memory.correction import MatchSettings, PhoneticIndex, PhoneticMatcher
from memory.correction.evidence import word_zipf
from memory.correction.llm import COMMON_WORDS, CommonWordRule, LLMCorrection, LLMCorrector, said_alike
from memory.correction.text import normalize, tokenize
from memory.models import Correction
from memory.providers.llm import OpenAILLM
from tests.fakes.openai_server import FakeOpenAI


@dataclass
class Tally:
    asked: int = 0
    kept: int = 0


def _answer(case: Case, name: str) -> str:
    heard = case.text[case.start : case.end]
    text = case.text[: case.start] + name + case.text[case.end :]
    return json.dumps({"text": text, "substitutions": [{"heard": heard, "entity": name}]})


def wrong_name_picker(names: list[str]) -> Callable[[str], str]:
    """The known name spelled most like ``right`` that is not it: the hardest wrong answer to tell apart."""
    keys = [normalize(n).replace(" ", "") for n in names]

    def pick(right: str) -> str:
        want = normalize(right).replace(" ", "")
        for _, _, i in process.extract(want, keys, scorer=JaroWinkler.similarity, limit=6):
            if keys[i] != want:
                return names[i]
        return names[0]

    return pick


MODES = ("a right name", "b wrong known name", "c random known name")


@dataclass
class Asked:
    """One question to stage 2: a case, the doubtful spans it is asked about, and the name each mode answers."""

    case: Case
    suspects: list[tuple[int, int]]
    answers: dict[str, str]
    confidences: list[float | None] | None = None  # per token of the case's text


DOUBT = ("doubted", "confident", "no confidences")


def heard(asked: list[Asked], doubt: str, seed: int) -> list[Asked]:
    """The questions with the misheard words doubted (as simulated), heard confidently (0.7-1.0), or with no
    confidences at all."""
    if doubt == DOUBT[0]:
        return asked
    rng = random.Random(seed)
    out = []
    for q in asked:
        confidences: list[float | None] | None = None
        if doubt == DOUBT[1] and q.confidences is not None:
            span = (q.case.start, q.case.end)
            confidences = [
                rng.uniform(0.7, 1.0) if span[0] <= t.start < span[1] else c
                for t, c in zip(tokenize(q.case.text), q.confidences, strict=True)
            ]
        out.append(replace(q, confidences=confidences))
    return out


def questions(per_entry: int, seed: int, canonical: bool = False) -> tuple[list[Asked], list[Asked], PhoneticIndex]:
    """Every case with its mishearing as the doubtful span (the guard alone), and those stage 1 leaves doubtful
    (what the pipeline hands to stage 2). (a) answers the name as the turn said it, an alias or the canonical
    name ("card" is Kord, an alias of The Stormlord); with ``canonical``, the canonical name."""
    rng = random.Random(seed)
    cases, _ = crd3_cases(crd3_turns(), per_entry, rng, MISHEARINGS)
    entities = crd3_entities()
    entities += srd_entities(len(entities))
    index = PhoneticIndex.build(entities)
    matcher = PhoneticMatcher(index, MatchSettings())
    names = sorted({e.name for e in entities})
    spelt = {normalize(n) for e in entities for n in (e.name, *e.aliases)}
    wrong = wrong_name_picker(names)
    every: list[Asked] = []
    left: list[Asked] = []
    for case in cases:
        right = case.surface if not canonical and normalize(case.surface) in spelt else case.canonical
        answers = {MODES[0]: right, MODES[1]: wrong(case.canonical), MODES[2]: rng.choice(names)}
        confidences: list[float | None] = list(simulated_confidences(case.text, (case.start, case.end), rng))
        every.append(Asked(case, [(case.start, case.end)], answers, confidences))
        first = matcher.correct(case.text, confidences)
        if any(_restores(case, c) for c in first.corrections):
            continue  # stage 1 restored it: stage 2 is not asked
        if any(a <= case.start and case.end <= b for a, b in first.suspects):
            left.append(Asked(case, first.suspects, answers, confidences))
    return every, left, index


def hostile_questions(count: int, seed: int, index: PhoneticIndex) -> list[Asked]:
    """The issue's failure ("you fools" -> Jules): in turns nothing was injected into, an ordinary word the
    recogniser doubted (simulated as a mishearing is), which a model renames to the known name said most like it
    (within two phones)."""
    rng = random.Random(seed)
    turns = crd3_turns()
    asked: list[Asked] = []
    for turn in rng.sample(turns, len(turns)):
        tokens = [t for t in tokenize(turn) if len(t.norm) >= 3 and word_zipf(t.norm) >= 3.0]
        if not tokens:
            continue
        token = rng.choice(tokens)
        alike = [a for a in said_alike(index, [token.norm]) if a.form.spaceless != token.norm]
        if not alike:
            continue
        name = alike[0].form.canonical
        case = Case(turn, token.start, token.end, name, "clean")
        confidences: list[float | None] = list(simulated_confidences(turn, (token.start, token.end), rng))
        asked.append(Asked(case, [(token.start, token.end)], {MODES[0]: name}, confidences))
        if len(asked) == count:
            break
    return asked


def _kept(asked: Asked, name: str, made: list[Correction]) -> bool:
    case = asked.case
    return any(c.start < case.end and case.start < c.end and normalize(c.replacement) == normalize(name) for c in made)


def _tally(tallies: dict[str, Tally], asked: Asked, mode: str, made: list[Correction]) -> None:
    tallies[mode].asked += 1
    # an alias is written as its entity's canonical name
    tallies[mode].kept += _kept(asked, asked.case.canonical if mode == MODES[0] else asked.answers[mode], made)


def _modes(asked: Asked) -> list[str]:
    # a "wrong" or random name that happens to be the right one is no wrong answer
    right = normalize(asked.case.canonical)
    return [m for m in MODES if m in asked.answers and (m == MODES[0] or normalize(asked.answers[m]) != right)]


async def over_http(asked: list[Asked], index: PhoneticIndex) -> dict[str, Tally]:
    """The real path: the ``openai`` client asks the fake server, which answers as scripted."""
    tallies = {m: Tally() for m in MODES}
    async with FakeOpenAI.running() as fake:
        llm = OpenAILLM(fake.base_url, fake.api_key, "fake-model", timeout=10, max_retries=0)
        stage2 = LLMCorrector(llm, index)
        try:
            for q in asked:
                for mode in _modes(q):
                    fake.queue_chat(_answer(q.case, q.answers[mode]))
                    made = await stage2.correct(q.case.text, q.suspects, confidences=q.confidences)
                    _tally(tallies, q, mode, made)
        finally:
            await llm.aclose()
    return tallies


def in_process(asked: list[Asked], index: PhoneticIndex, rule: CommonWordRule) -> dict[str, Tally]:
    """The same answers given to the verify step directly (no transport): for comparing settings."""
    tallies = {m: Tally() for m in MODES}
    stage2 = LLMCorrector(None, index, common_words=rule)  # type: ignore[arg-type]  # verify asks nothing
    for q in asked:
        for mode in _modes(q):
            answer = LLMCorrection.model_validate_json(_answer(q.case, q.answers[mode]))
            _tally(tallies, q, mode, stage2.verify(q.case.text, q.suspects, answer, q.confidences))
    return tallies


def _row(label: str, tallies: dict[str, Tally]) -> list[object]:
    shares = [t.kept / t.asked if t.asked else 0.0 for t in tallies.values()]
    return [label, tallies[MODES[0]].asked, f"{shares[0]:.1%}", f"{1 - shares[1]:.1%}", f"{1 - shares[2]:.1%}"]


def _hostile(tallies: dict[str, Tally]) -> str:
    t = tallies[MODES[0]]
    return f"{1 - t.kept / t.asked:.1%} of {t.asked}" if t.asked else "-"


def _half(asked: list[Asked], half: str) -> list[Asked]:
    return [q for q in asked if q.case.half == half]


HALVES = ("tune", "holdout")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-entry", type=int, default=2, help="turns per mishearing")
    parser.add_argument("--hostile", type=int, default=300, help="ordinary words renamed in clean turns")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--canonical", action="store_true", help="(a) answers the canonical name, not the alias said")
    args = parser.parse_args()
    started = time.perf_counter()
    every, left, index = questions(args.per_entry, args.seed, args.canonical)
    hostile = hostile_questions(args.hostile, args.seed, index)
    header = ["cases", "heard", "half", "n", "(a) right name kept", "(b) wrong name reverted", "(c) random reverted"]
    rows = []
    for label, asked in (("every mishearing, its span asked about", every), ("those stage 1 leaves doubtful", left)):
        for doubt in DOUBT:
            for half in HALVES:
                tallies = asyncio.run(over_http(_half(heard(asked, doubt, args.seed), half), index))
                rows.append([label, doubt, *_row(half, tallies)])
    table(
        f"Stage 2 against a scripted model over HTTP ({MISHEARINGS.name}, {args.per_entry} turns each, "
        f"{time.perf_counter() - started:.0f} s)",
        header,
        rows,
    )
    renamed = {doubt: heard(hostile, doubt, args.seed) for doubt in DOUBT}
    print(
        "ordinary words of clean turns renamed to the nearest-sounding name, reverted: "
        + "; ".join(f"{doubt} {_hostile(asyncio.run(over_http(qs, index)))}" for doubt, qs in renamed.items())
    )
    rules = [
        (
            "sound alone (no function words, no forms of the name)",
            CommonWordRule(
                exact_phones=0,
                one_edit_phones=0,
                two_edit_phones=0,
                doubted_exact_phones=0,
                doubted_one_edit_phones=0,
                doubted_two_edit_phones=0,
            ),
        ),
        (
            "doubt ignored: exact 4, one edit 6, two 8",
            CommonWordRule(doubted_exact_phones=4, doubted_one_edit_phones=6, doubted_two_edit_phones=8),
        ),
        (
            "doubted: exact 3, one edit 4, two 8; alone",
            CommonWordRule(doubted_exact_phones=3, doubted_one_edit_phones=4),
        ),
        ("doubted: the kept rule, function words too", CommonWordRule(function_zipf=99.0)),
        ("doubted: the kept rule, not alone", CommonWordRule(doubted_alone=False)),
        ("doubted: exact 4, one edit 5, two 8; alone (kept)", COMMON_WORDS),
        ("doubted: exact 4, one edit 5, two 6; alone", CommonWordRule(doubted_two_edit_phones=6)),
    ]
    table(
        "Ordinary-words rule compared (the verify step in process). (a) of every mishearing doubted and of those "
        "stage 1 leaves, tune / holdout; (b), (c) of every mishearing doubted, both halves; ordinary words of clean "
        "turns renamed, doubted / heard confidently",
        ["ordinary words need", "(a) every", "(a) left", "(b) reverted", "(c) reverted", "renamed reverted"],
        [_compared(label, rule, every, left, renamed, index) for label, rule in rules],
    )


def _compared(
    label: str,
    rule: CommonWordRule,
    every: list[Asked],
    left: list[Asked],
    renamed: dict[str, list[Asked]],
    index: PhoneticIndex,
) -> list[object]:
    def kept(asked: list[Asked]) -> str:
        return " / ".join(str(_row(h, in_process(_half(asked, h), index, rule))[2]) for h in HALVES)

    both = _row("", in_process(every, index, rule))
    hostile = " / ".join(_hostile(in_process(renamed[d], index, rule)) for d in DOUBT[:2])
    return [label, kept(every), kept(left), both[3], both[4], hostile]


if __name__ == "__main__":
    main()
