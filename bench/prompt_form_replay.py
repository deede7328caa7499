"""Replay a names-from-audio run's segments through Whisper under other forms of the same name prompt.

    python -m bench.voice_names --lines 96 --split dev --models base --history 150 --prompts chosen --second-pass \
        --dump dev.jsonl
    python -m bench.prompt_form_replay dev.jsonl [--forms dash comma lines names-lines comma-last] [--history 150]

Each text a run stored (``--dump``: the line's audio and the names of the prompt it was heard with, after the
second pass) is transcribed again by Whisper base (beam 5, as the product) with the same names in the same order
at the same token budget, laid out as:

- ``dash``: ``"Names: A - B - C."`` (the product's form);
- ``dash-last``: the names of ``dash``, the most important last (nearest the audio);
- ``comma``: ``"A, B, C."``;
- ``comma-last``: the names of ``comma``, the most important last (nearest the audio);
- ``lines``: the session's recent stored lines, those saying names of the prompt first, newest first, whole lines
  up to half the budget (in the order said), then the names they do not say as a comma list;
- ``names-lines``: the same, the names first and the lines last (the transcript Whisper continues);
- ``lines-dash``: the lines, then the names they do not say as ``dash`` does.

The recent lines are this form's own earlier texts of the episode (stage-1 corrected, as stored) after the
``--history`` turns said before its stretch (the last session, read from CRD3 as the benchmark stores it). Stage 1
runs on each text with the episode's cast; scored as the benchmark: name recall / precision / other WER, raw and
with stage 1, and the CPU seconds spent transcribing. Transcripts are cached (``--cache``, a file a form).
Found not to help: see bench/README.md, "Names from audio".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pickle
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bench.name_check_replay import campaign, load
from bench.voice_names import EPISODES, Score
from memory.correction.edits import apply_corrections
from memory.correction.text import align_confidences, normalize, tokenize
from memory.providers.stt import WHISPER_PROMPT_TOKENS, WhisperSTT, unique_names

Count = Callable[[str], int]
FORMS = ["dash", "dash-last", "comma", "comma-last", "lines", "names-lines", "lines-dash"]


def fit(names: Sequence[str], head: str, sep: str, tail: str, count: Count, budget: int) -> list[str]:
    """As many of ``names`` as fit ``budget`` tokens in ``head + sep.join(names) + tail``, in order."""
    kept: list[str] = []
    for name in unique_names(names):
        if count(" " + head + sep.join([*kept, name]) + tail) > budget:
            break
        kept.append(name)
    return kept


def said_in(name: str, text: str) -> bool:
    return f" {normalize(name)} " in f" {normalize(text)} "


def build(form: str, names: Sequence[str], lines: Sequence[str], count: Count, budget: int) -> str:
    """The prompt of ``names`` (most important first) in ``form``; ``lines``: the session's lines, oldest first."""
    if not names:
        return ""
    if form == "dash":
        kept = fit(names, "Names: ", " - ", ".", count, budget)
        return f"Names: {' - '.join(kept)}." if kept else ""
    if form == "dash-last":
        kept = fit(names, "Names: ", " - ", ".", count, budget)
        return f"Names: {' - '.join(reversed(kept))}." if kept else ""
    if form in ("comma", "comma-last"):
        kept = fit(names, "", ", ", ".", count, budget)
        return ", ".join(reversed(kept) if form == "comma-last" else kept) + "."
    # the lines that say the names the list form would hold, newest first, then the others; whole lines
    held = fit(names, "", ", ", ".", count, budget)
    recent = list(reversed(lines[-40:]))
    ranked = [ln for ln in recent if any(said_in(n, ln) for n in held)]
    ranked += [ln for ln in recent if ln not in ranked]
    chosen: list[str] = []
    for line in ranked:
        if count(" " + " ".join([*chosen, line])) > budget // 2:
            continue
        chosen.append(line)
    text = " ".join(ln for ln in lines[-40:] if ln in chosen)  # in the order said
    rest = [n for n in names if not said_in(n, text)]
    used = count(" " + text) if text else 0
    if form == "lines-dash":
        kept = fit(rest, "Names: ", " - ", ".", count, budget - used)
        listed = f"Names: {' - '.join(kept)}." if kept else ""
    else:
        kept = fit(rest, "", ", ", ".", count, budget - used)
        listed = ", ".join(kept) + "." if kept else ""
    parts = [text, listed] if form == "lines" else [listed, text]
    return " ".join(p for p in parts if p)


class Formed(WhisperSTT):
    """WhisperSTT whose prompt is ``build(form, names, lines)``."""

    def __init__(self, form: str, budget: int) -> None:
        super().__init__("base", cpu_threads=1, prompt_token_budget=budget)
        self.form = form
        self.lines: list[str] = []
        self.last_prompt = ""

    def _prompt_locked(self, names: tuple[str, ...]) -> str:
        if self.form == "dash":  # the product's own
            self.last_prompt = super()._prompt_locked(names)
            return self.last_prompt
        tokenizer = self._load_locked().hf_tokenizer

        def count(text: str) -> int:
            return len(tokenizer.encode(text, add_special_tokens=False).ids)

        self.last_prompt = build(self.form, names, self.lines, count, self.prompt_token_budget)
        return self.last_prompt


def history_of(episode: str, first_said: str, turns: int) -> list[str]:
    """The ``turns`` turns said before ``first_said`` in the episode: the last session the benchmark stores."""
    data = json.loads((EPISODES / f"{episode}.json").read_text())["TURNS"]
    whole = [" ".join(" ".join(t["UTTERANCES"]).split()) for t in data]
    return [u for u in whole[: whole.index(first_said)] if u][-turns:] if turns else []


async def run(args: argparse.Namespace) -> None:
    rows, heard = load(args.dump)
    gazetteer, matcher, ids = await campaign()
    before = Score()
    for row in rows:
        before.add(row["said"], " ".join(p[1] for p in row["parts"]), gazetteer)
    print("as stored: {:.3f} / {:.3f} / {:.3f}".format(*before.figures()), flush=True)
    print("| form | raw: recall / precision / other WER | + stage 1 | names right / said | CPU s |")
    print("|---|---|---|---|---|", flush=True)
    for form in args.forms:
        stt = Formed(form, args.budget)
        cache_path = (args.cache or args.dump.parent) / f"{args.dump.stem}.form-{form}.pkl"
        # (raw text first heard, prompt) -> (text, words)
        cache: dict[tuple[str, str], tuple[str, list[tuple[str, float | None]]]] = (
            pickle.loads(cache_path.read_bytes()) if cache_path.is_file() else {}
        )
        cpu = 0.0
        raw_score, score = Score(), Score()
        episode, lines = "", list[str]()
        for row in rows:
            if row["episode"] != episode:
                episode, lines = row["episode"], history_of(row["episode"], row["said"], args.history)
            cast = frozenset(ids[n] for n in row["cast"] if n in ids)
            raws, texts = [], []
            for raw, _, _ in row["parts"]:
                pcm, names = heard[raw]
                stt.lines = lines
                prompt = stt.prompt_for(names)
                key = (raw, prompt)
                if key not in cache:
                    started = time.process_time()
                    got = stt.transcribe_sync(pcm, prompt_names=names)
                    cpu += time.process_time() - started
                    cache[key] = (got.text, [(w.word, w.confidence) for w in got.words])
                text, words = cache[key]
                conf = align_confidences(text, tokenize(text), words)
                stored = apply_corrections(text, matcher.correct(text, conf, cast).corrections)
                raws.append(text)
                texts.append(stored)
                if stored.strip():
                    lines = [*lines, stored]
                if args.show:
                    print(f"  [{prompt[-120:]}]\n  {row['said']}\n    -> {stored}", flush=True)
            raw_score.add(row["said"], " ".join(raws), gazetteer)
            score.add(row["said"], " ".join(texts), gazetteer)
        cache_path.write_bytes(pickle.dumps(cache))
        stt.close()
        print(
            "| {} | {:.3f} / {:.3f} / {:.3f} | {:.3f} / {:.3f} / {:.3f} | {} / {} | {:.0f} |".format(
                form, *raw_score.figures(), *score.figures(), score.right, score.said, cpu
            ),
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dump", type=Path)
    parser.add_argument("--forms", nargs="+", choices=FORMS, default=FORMS)
    parser.add_argument("--history", type=int, default=150, help="turns before each stretch: the last session")
    parser.add_argument("--budget", type=int, default=WHISPER_PROMPT_TOKENS)
    parser.add_argument("--cache", type=Path, help="where the transcripts are cached (default: beside the dump)")
    parser.add_argument("--show", action="store_true", help="print each line's prompt end, as said and as stored")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
