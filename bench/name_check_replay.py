"""Replay a names-from-audio run's segments through a check of names against the audio, without transcribing.

    python -m bench.voice_names --lines 96 --split dev --models base --history 150 --prompts chosen --dump dev.jsonl
    python -m bench.name_check_replay dev.jsonl [--distances 0.34 0.5] [--gains -2 0 2 4] [--max-words 2]
        [--unprompted] [--explain]

The check tried for names Whisper writes as an ordinary word it is sure of ("Max" for Vax, "ration" for
Raishan): each run of up to ``--max-words`` words of a stored line's raw text that sounds near a name of the prompt
it was heard with (phone edits per phone of the longer at most the distance) is read against the line's audio
twice by Whisper's teacher-forced ``align`` (the probability of each token given the audio, the same prompt and
the tokens before it, as its word timestamps are computed): the text as written and with the run replaced by the
name. The name is kept where the line with it reads at least ``gain`` nats likelier, from the first token that
differs to the end of the line (of overlapping runs, the one that gains most); stage 1 then runs again on the
changed line. ``--dump`` kept each line as said with its stored parts, and (``dev.segments.pkl``) each text heard
with its audio and prompt; the texts are read once (cached beside the dump), so a sweep only re-decides.
Prints name recall / precision / other WER for each distance and gain, the changes made at ``--show``, and with
``--explain`` each run's gain and whether its name was said. Found not to help: see bench/README.md, "Names from
audio".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import pickle
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rapidfuzz.distance import Levenshtein

from bench.voice_names import CAMPAIGN, Score
from campaigns.files import read_campaign_file
from campaigns.load import apply_campaign_file
from memory.correction import PhoneticMatcher
from memory.correction.edits import apply_corrections
from memory.correction.pronounce import word_phones
from memory.correction.text import align_confidences, name_norm, tokenize
from memory.db import EmbeddedPostgres, EmbeddingSpec, create_pool, migrate
from memory.gazetteer import Gazetteer
from memory.providers.stt import WhisperSTT
from memory.recorder import default_index_cache
from memory.store import Memory

Run = tuple[int, int, str, float]  # start, end (of the raw text), name, phone distance
Read = list[tuple[int, float]]  # a text's tokens, each with its log-probability read against the audio


def sounds_near(
    matcher: PhoneticMatcher, text: str, names: Sequence[str], distance: float, max_words: int
) -> list[Run]:
    """Runs of up to ``max_words`` words of ``text``, ordinary or not, sounding near one of ``names``."""
    told = {name_norm(n) for n in names}
    forms = [f for f in matcher.index.forms if f.norm in told and len(f.phones) >= 2]
    tokens = tokenize(text)
    runs: list[Run] = []
    for first in range(len(tokens)):
        for last in range(first, min(len(tokens), first + max_words)):
            if last > first and text[tokens[last - 1].end : tokens[last].start].strip():
                break  # punctuation between: no name
            run = tokens[first : last + 1]
            phones = "".join(word_phones(t.norm) for t in run)
            if len(phones) < 2:
                continue
            for form in forms:
                d = Levenshtein.normalized_distance(phones, form.phones)
                if d <= distance and not any(t.norm in form.words for t in run):  # "Vax" is no mishearing of Vax
                    runs.append((tokens[first].start, tokens[last].base_end, form.surface or form.canonical, d))
    return sorted(runs, key=lambda r: (r[3], r[0], r[1]))


def read_against_audio(whisper: WhisperSTT, pcm: np.ndarray, texts: Sequence[str], names: Sequence[str]) -> list[Read]:
    """Each of ``texts`` read against the audio (its first 30 s) with the prompt of ``names``, as faster-whisper's
    ``find_alignment`` reads a segment for word timestamps, the prompt before the start sequence."""
    from faster_whisper.audio import pad_or_trim
    from faster_whisper.tokenizer import Tokenizer

    model = whisper.load()
    prompt = whisper.prompt_for(names)
    tokenizer = Tokenizer(model.hf_tokenizer, model.model.is_multilingual, task="transcribe", language="en")
    features = model.feature_extractor(pcm)[:, : model.feature_extractor.nb_max_frames]
    encoded = model.encode(pad_or_trim(features))
    start = [tokenizer.sot_prev, *tokenizer.encode(" " + prompt)[-(model.max_length // 2 - 1) :]] if prompt else []
    start += [*tokenizer.sot_sequence, tokenizer.no_timestamps]
    out = []
    for text in texts:
        tokens = tokenizer.encode(" " + text.strip())
        (aligned,) = model.model.align(encoded, start, [tokens], features.shape[-1])
        out.append([(t, math.log(max(p, 1e-30))) for t, p in zip(tokens, aligned.text_token_probs, strict=True)])
    return out


def name_gain(written: Read, named: Read) -> float:
    """How much likelier (nats) the audio makes ``named`` than ``written``, from the first token that differs."""
    head = 0
    while head < min(len(written), len(named)) and written[head][0] == named[head][0]:
        head += 1
    return sum(lp for _, lp in named[head:]) - sum(lp for _, lp in written[head:])


def names_kept(runs: Sequence[Run], written: Read, named: Sequence[Read], gain: float) -> list[Run]:
    """The runs whose text with the name reads at least ``gain`` likelier; of overlapping runs, the best."""
    kept: list[Run] = []
    for found, run in sorted(((name_gain(written, n), r) for r, n in zip(runs, named, strict=True)), reverse=True):
        if found >= gain and all(run[1] <= k[0] or k[1] <= run[0] for k in kept):
            kept.append(run)
    return kept


def load(dump: Path) -> tuple[list[dict[str, Any]], dict[str, tuple[np.ndarray, list[str]]]]:
    rows = [json.loads(line) for line in dump.read_text().splitlines() if line.strip()]
    heard: dict[str, tuple[np.ndarray, list[str]]] = {}
    with dump.with_suffix(".segments.pkl").open("rb") as f:
        while True:
            try:
                heard.update(pickle.load(f)["heard"])
            except EOFError:
                break
    return rows, heard


async def campaign() -> tuple[Gazetteer[Any], Any, dict[str, int]]:
    """The example campaign's names, stage 1's matcher and the entities' ids, from a throwaway database."""
    root = Path(tempfile.mkdtemp(prefix="lk-replay-", dir="/tmp"))
    server = EmbeddedPostgres(root / "pg")
    try:
        pool = await create_pool(server.start())
        await migrate(pool, EmbeddingSpec("all-MiniLM-L6-v2", 384))
        memory = Memory(pool)
        mem = memory.campaign((await memory.campaigns().create("replay")).id)
        await apply_campaign_file(mem, read_campaign_file(CAMPAIGN))
        entities = await mem.graph.prompt_entities(recent_sessions=0)
        matcher = await default_index_cache.matcher(mem)
        await pool.close()
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    return Gazetteer(entities), matcher, {e.name: e.id for e in entities}


async def run(args: argparse.Namespace) -> None:
    rows, heard = load(args.dump)
    gazetteer, matcher, ids = await campaign()
    whisper = WhisperSTT("base")
    widest = max(args.distances)
    cache = args.dump.with_suffix(".scores-unprompted.pkl" if args.unprompted else ".scores.pkl")
    # (text heard, text read) -> what it read
    known: dict[tuple[str, str], Read] = pickle.loads(cache.read_bytes()) if cache.is_file() else {}
    parts: list[tuple[dict[str, Any], str, str, list[tuple[str, float | None]], list[Run], list[Read]]] = []
    for row in rows:
        for raw, stored, words in row["parts"]:
            pcm, names = heard[raw]
            runs = sounds_near(matcher, raw, whisper.prompted(names), widest, args.max_words)
            texts = [raw, *(raw[:a] + name + raw[b:] for a, b, name, _ in runs)] if runs else []
            if new := [t for t in dict.fromkeys(texts) if (raw, t) not in known]:
                read = read_against_audio(whisper, pcm, new, () if args.unprompted else names)
                known.update(((raw, t), r) for t, r in zip(new, read, strict=True))
            parts.append((row, raw, stored, words, runs, [known[raw, t] for t in texts]))
    cache.write_bytes(pickle.dumps(known))
    whisper.close()
    checked = sum(bool(p[4]) for p in parts)
    print(f"{len(rows)} lines, {len(parts)} parts, {checked} with runs near a prompted name (distance {widest})")
    if args.explain:
        for row, raw, _, _, runs, scores in parts:
            said = {e.id for _, _, e in gazetteer.find(row["said"])}
            for (a, b, name, d), named in zip(runs, scores[1:], strict=True):
                mark = "said" if any(e.id in said for _, _, e in gazetteer.find(name)) else "    "
                print(f"  {name_gain(scores[0], named):+6.2f} d={d:.2f} {mark} {raw[a:b]!r} -> {name}")
    before = Score()
    for row in rows:
        before.add(row["said"], " ".join(p[1] for p in row["parts"]), gazetteer)
    print("as stored: {:.3f} / {:.3f} / {:.3f}".format(*before.figures()))
    print("| distance | gain | recall / precision / other WER | names changed |\n|---|---|---|---|")
    for distance in args.distances:
        for gain in args.gains:
            score, changes, texts_of = Score(), [], dict[int, list[str]]()
            for row, raw, stored, words, runs, scores in parts:
                near = [(r, n) for r, n in zip(runs, scores[1:], strict=True) if r[3] <= distance]
                kept = names_kept([r for r, _ in near], scores[0], [n for _, n in near], gain) if near else []
                text = stored
                if kept:
                    text = raw
                    for a, b, name, _ in sorted(kept, reverse=True):
                        changes.append(f"{raw[a:b]!r} -> {name}")
                        text = text[:a] + name + text[b:]
                    tokens = tokenize(text)
                    conf = align_confidences(text, tokens, words)  # the name's own word has none
                    cast = frozenset(ids[n] for n in row["cast"] if n in ids)
                    text = apply_corrections(text, matcher.correct(text, conf, cast).corrections)
                texts_of.setdefault(id(row), []).append(text)
            for row in rows:
                score.add(row["said"], " ".join(texts_of.get(id(row), [])), gazetteer)
            print("| {} | {} | {:.3f} / {:.3f} / {:.3f} | {} |".format(distance, gain, *score.figures(), len(changes)))
            if gain == args.show and distance == widest:
                print("".join(f"    {change}\n" for change in changes), end="", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dump", type=Path)
    parser.add_argument("--distances", nargs="+", type=float, default=[0.34, 0.5])
    parser.add_argument("--gains", nargs="+", type=float, default=[-2.0, 0.0, 2.0, 4.0, 6.0])
    parser.add_argument("--max-words", type=int, default=2, help="words a run may have")
    parser.add_argument("--unprompted", action="store_true", help="read the texts against the audio without prompt")
    parser.add_argument("--explain", action="store_true", help="print each run's gain and whether its name was said")
    parser.add_argument("--show", type=float, default=4.0, help="print the changes made at this gain")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
