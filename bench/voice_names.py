"""Names from audio: real Critical Role lines, spoken, transcribed through the real ingest path.

    python -m bench.voice_names [--lines 240] [--seed 5] [--models tiny.en base] [--prompts none connected chosen]
        [--split all|dev|held-out] [--beams 5] [--budgets 223] [--second-pass]

Reads ../shared/data (override with LOREKEEPER_DATA); prints "skipped: …" without the data or espeak-ng. The
example campaign (campaigns/examples/critical_role.yaml) is loaded into a throw-away embedded PostgreSQL. From each
of the 12 CRD3 episodes a stretch of consecutive lines that say its names is taken (in the order said, so the
names of the last minutes mean what they do at a table), and spoken by espeak-ng as a table of four: each
speaker a voice and speed of ``VOICES``, one track each (as Craig records a session), silence where the others
talk. ``lorekeeper ingest`` 's path transcribes the tracks (segmenter, Whisper with the prompt, stage-1
correction, L1), once per model and prompt:

- ``none``: no prompt;
- ``connected``: the campaign's names ordered by how many facts they are in, then their aliases (the order
  before the prompt was chosen from the graph);
- ``chosen``: the graph-chosen prompt (``memory.voice.prompt``: the session's cast and pinned, said lately, said
  most, rest);
- ``allcast``: the same with every player character of the campaign in the first tier, not the session's cast;
- ``nocast``: the chosen prompt, with stage 1 not told the session's cast (the rule before it was).

Each condition has a campaign of its own, so its earlier episodes are the "last sessions" its cast is read from
(the episodes are played in order, as a campaign is); ``--history N`` stores the N turns of the episode before
each stretch as the session before it (as text: what a table's last session left in the log). ``--beams`` and
``--budgets`` (prompt tokens) vary Whisper's beam size and the prompt's length. A graph-chosen prompt is heard
with the second pass for names nearly heard, as ingest does (``memory.voice.prompt``; "+ 2nd pass", and the
"2nd pass" column says how many lines were transcribed twice); ``--second-pass`` adds each such prompt without it
first, from the same audio in the same run.

Each stored line is matched to the line spoken by time. A name is an entity of the campaign found by its name or
an alias (``memory.gazetteer``, case and apostrophes aside): recall = names said that the stored line writes
(for the same entity), precision = names written that were said. "other WER" = word error rate of the other words
(names taken out of both sides). Rows come without stage 1 (the raw transcript) and with it (the stored line).
Episodes alternate between the dev half (tune on it) and the held-out half (``--split`` transcribes one).
RTF = speech-to-text seconds / seconds of the session (four speakers in turn), and in brackets the CPU seconds it
took (both cores) per second: the wall figure holds on a quiet machine only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pickle
import random
import re
import shutil
import subprocess
import tempfile
import time
import wave
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from rapidfuzz.distance import Levenshtein

from campaigns.files import read_campaign_file
from campaigns.load import apply_campaign_file
from memory.db import EmbeddedPostgres, EmbeddingSpec, create_pool, migrate
from memory.gazetteer import Gazetteer
from memory.models import EntryIn, PromptEntity
from memory.providers.stt import WHISPER_PROMPT_TOKENS, Transcript, WhisperSTT, installed_whisper_models
from memory.store import CampaignMemory, Memory
from memory.voice.audio_files import load_audio
from memory.voice.offline import AudioTrack, ingest_audio
from memory.voice.prompt import CampaignNames

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("LOREKEEPER_DATA", ROOT.parent / "shared" / "data"))
EPISODES = DATA / "crd3" / "episodes"
CAMPAIGN = ROOT / "campaigns" / "examples" / "critical_role.yaml"
VOICES = [("en-us", 150), ("en-gb", 150), ("en-us+f3", 150), ("en-us", 185), ("en-gb", 185), ("en-us+f3", 185)]
SPEAKERS = 4
RATE = 16_000
# Lines espeak reads as a player says them: words and light punctuation, no numbers, asides or stammer dashes.
_SAYABLE = re.compile(r"^[A-Za-z ,.'’?!;:\-\"]+$")
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


@dataclass
class Line:
    episode: str
    dev: bool
    text: str
    speaker: int
    start: float = 0.0
    end: float = 0.0
    heard: dict[str, list[str]] = field(default_factory=dict)  # condition -> stored texts (raw, corrected)
    before: list[tuple[str, str]] = field(default_factory=list)  # (speaker, text) said earlier: a past session
    #: condition -> the stored lines that overlap it: raw text, stored text, the recogniser's words (``--dump``)
    parts: dict[str, list[tuple[str, str, list[tuple[str, float | None]]]]] = field(default_factory=dict)


def pick_lines(
    gazetteer: Gazetteer[PromptEntity], per_episode: int, rng: random.Random, history: int = 0
) -> list[Line]:
    """``per_episode`` consecutive sayable lines naming an entity, from a random place in each episode; the first
    line of each episode holds the ``history`` turns said before it."""
    lines: list[Line] = []
    for n, path in enumerate(sorted(EPISODES.glob("*.json"))):
        turns = json.loads(path.read_text())["TURNS"]
        whole = [" ".join(" ".join(t["UTTERANCES"]).split()) for t in turns]  # a turn's pieces end mid-sentence
        said = [k for k, u in enumerate(whole) if 6 <= len(u.split()) <= 30 and _SAYABLE.match(u) and "--" not in u]
        naming = [k for k in said if gazetteer.mentions(whole[k])]
        if len(naming) < per_episode:
            continue
        first = rng.randrange(len(naming) - per_episode + 1)
        for j, k in enumerate(naming[first : first + per_episode]):
            lines.append(Line(path.stem, n % 2 == 0, whole[k], speaker=j % SPEAKERS))
        start = naming[first]
        lines[-per_episode].before = (
            [(", ".join(t["NAMES"]), u) for t, u in zip(turns[:start], whole[:start], strict=True) if u][-history:]
            if history
            else []
        )
    return lines


def speak(text: str, voice: str, speed: int, path: Path) -> np.ndarray:
    subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(path), text], check=True)
    return load_audio(path)


def write_wav(pcm: np.ndarray, path: Path) -> Path:
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(RATE)
        out.writeframes((np.clip(pcm, -1, 1) * 32767).astype("<i2").tobytes())
    return path


def record_episode(lines: list[Line], voices: list[tuple[str, int]], rng: random.Random, tmp: Path) -> list[Path]:
    """One track per speaker, each line at its place in the session, 0.8–1.6 s between lines."""
    clips = [speak(line.text, *voices[line.speaker], tmp / "clip.wav") for line in lines]
    cursor = 0.5
    for line, clip in zip(lines, clips, strict=True):
        line.start, line.end = cursor, cursor + len(clip) / RATE
        cursor = line.end + rng.uniform(0.8, 1.6)
    tracks = [np.zeros(int((cursor + 0.5) * RATE), dtype=np.float32) for _ in range(SPEAKERS)]
    for line, clip in zip(lines, clips, strict=True):
        at = int(line.start * RATE)
        tracks[line.speaker][at : at + len(clip)] = clip
    episode = lines[0].episode
    return [write_wav(t, tmp / f"{episode}-speaker{k}.wav") for k, t in enumerate(tracks)]


class Timed:
    """Speech-to-text timed (wall and CPU), with the prompt it is given replaced: none, or a fixed list."""

    def __init__(self, stt: WhisperSTT, names: Sequence[str] | None) -> None:
        self.stt, self.names, self.seconds, self.cpu_seconds = stt, names, 0.0, 0.0
        self.words: dict[str, list[tuple[str, float | None]]] = {}  # text heard -> its words (for ``--dump``)
        #: text heard -> the audio and the prompt's names it was heard with (for ``--dump``: a replay set)
        self.heard: dict[str, tuple[np.ndarray, list[str]]] = {}

    def prompted(self, names: Sequence[str]) -> list[str]:
        return self.stt.prompted(names if self.names is None else self.names)

    async def transcribe(self, pcm: np.ndarray, *, prompt_names: Sequence[str] = ()) -> Transcript:
        started, cpu = time.perf_counter(), time.process_time()
        try:
            heard = await self.stt.transcribe(pcm, prompt_names=prompt_names if self.names is None else self.names)
            self.words[heard.text.strip()] = [(w.word, w.confidence) for w in heard.words]
            self.heard[heard.text.strip()] = (pcm, list(prompt_names if self.names is None else self.names))
            return heard
        finally:
            self.seconds += time.perf_counter() - started
            self.cpu_seconds += time.process_time() - cpu


class CastUnknown(CampaignNames):
    """The campaign's names for the prompt; stage 1 is not told the session's cast."""

    def cast(self, at: float | None = None) -> frozenset[int]:
        return frozenset()


def by_connections(entities: list[PromptEntity]) -> list[str]:
    ranked = sorted(entities, key=lambda e: (-e.degree, e.name.casefold()))
    return [e.name for e in ranked] + [a for e in ranked for a in sorted(e.aliases, key=str.casefold)]


def other_words(text: str, gazetteer: Gazetteer[PromptEntity]) -> list[str]:
    for start, end, _ in sorted(gazetteer.find(text), reverse=True):
        text = text[:start] + " " + text[end:]
    return _WORD.findall(text.casefold().replace("’", "'"))


@dataclass
class Score:
    said: int = 0
    right: int = 0
    written: int = 0
    errors: int = 0
    words: int = 0

    def add(self, ref: str, hyp: str, gazetteer: Gazetteer[PromptEntity]) -> None:
        said = Counter(e.id for _, _, e in gazetteer.find(ref))
        written = Counter(e.id for _, _, e in gazetteer.find(hyp))
        self.said += sum(said.values())
        self.written += sum(written.values())
        self.right += sum((said & written).values())
        ref_words = other_words(ref, gazetteer)
        self.errors += Levenshtein.distance(ref_words, other_words(hyp, gazetteer))
        self.words += len(ref_words)

    def figures(self) -> tuple[float, float, float]:
        return (
            self.right / max(1, self.said),
            self.right / max(1, self.written),
            self.errors / max(1, self.words),
        )


async def transcribe_all(
    mem: CampaignMemory,
    episodes: dict[str, tuple[list[Line], list[Path]]],
    stt: Timed,
    condition: str,
    *,
    session_cast: bool = True,
    stage1_cast: bool = True,
    second_pass: bool = False,
    passes: Counter[str] | None = None,
) -> dict[str, list[str]]:
    """Ingest every episode's tracks as a session; give each spoken line the stored lines that overlap it. Returns
    each episode's cast as the session ended (the names of its player characters); ``passes`` counts the lines
    looked at for names nearly heard and those heard a second time."""
    casts: dict[str, list[str]] = {}
    for episode, (lines, tracks) in episodes.items():
        title = f"{episode} {condition}"
        if lines[0].before:  # the table's last session, as stored text, before tonight's recording
            past = await mem.log.start_session(f"{title} before")
            await mem.log.write_many(past.id, [EntryIn(speaker=who, text=text) for who, text in lines[0].before])
        names = (CampaignNames if stage1_cast else CastUnknown)(mem, session_cast=session_cast, second_pass=second_pass)
        await ingest_audio(
            mem,
            [AudioTrack(p, f"Speaker {k}") for k, p in enumerate(tracks)],
            stt,
            session_title=title,
            again=True,
            names=names,
        )
        if passes is not None:
            passes.update(lines=names.lines, second=names.second_passes)
        cast = names.cast()
        casts[episode] = sorted(e.name for e in await mem.graph.prompt_entities(recent_sessions=0) if e.id in cast)
        session = await mem.log.session_by_title(title)
        assert session is not None
        stored = await mem.log.session_entries(session.id)
        heard: dict[int, list[tuple[float, str, str]]] = {}
        for entry in stored:
            end = entry.end_s if entry.end_s is not None else entry.start_s
            overlaps = [min(end, ln.end) - max(entry.start_s, ln.start) for ln in lines]
            best = int(np.argmax(overlaps))
            if overlaps[best] > 0:
                heard.setdefault(best, []).append((entry.start_s, entry.raw_text or entry.text, entry.text))
        for i, line in enumerate(lines):
            parts = sorted(heard.get(i, []))
            line.heard[condition] = [" ".join(p[1] for p in parts), " ".join(p[2] for p in parts)]
            line.parts[condition] = [(raw, text, stt.words.get(raw, [])) for _, raw, text in parts]
    return casts


def show(cells: list[str], widths: list[int]) -> None:
    print("| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |", flush=True)


async def run(args: argparse.Namespace) -> int:
    if not EPISODES.is_dir():
        print(f"skipped: data not found ({EPISODES})")
        return 0
    if shutil.which("espeak-ng") is None:
        print("skipped: espeak-ng not installed (apt-get install -y espeak-ng)")
        return 0
    models = [m for m in args.models if m in installed_whisper_models()]
    rng = random.Random(args.seed)
    root = Path(tempfile.mkdtemp(prefix="lk-bench-voice-", dir="/tmp"))
    server = EmbeddedPostgres(root / "pg")
    try:
        pool = await create_pool(server.start())
        await migrate(pool, EmbeddingSpec("all-MiniLM-L6-v2", 384))
        memory = Memory(pool)
        campaign_file = read_campaign_file(CAMPAIGN)

        async def new_campaign(name: str) -> CampaignMemory:
            mem = memory.campaign((await memory.campaigns().create(name)).id)
            await apply_campaign_file(mem, campaign_file)
            return mem

        first = await new_campaign("Critical Role")
        entities = await first.graph.prompt_entities(recent_sessions=5)
        gazetteer = Gazetteer(entities)
        lines = pick_lines(gazetteer, args.lines // 12, rng, args.history)
        episodes: dict[str, tuple[list[Line], list[Path]]] = {}
        for n, episode in enumerate(dict.fromkeys(line.episode for line in lines)):
            mine = [line for line in lines if line.episode == episode]
            voices = [VOICES[(n * SPEAKERS + k) % len(VOICES)] for k in range(SPEAKERS)]
            episodes[episode] = (mine, record_episode(mine, voices, rng, root))
        if args.split != "all":  # every episode is spoken, so a half sounds as it does in a run of both
            lines = [line for line in lines if line.dev == (args.split == "dev")]
            episodes = {e: (ls, t) for e, (ls, t) in episodes.items() if ls[0].dev == (args.split == "dev")}
        session_s = sum(ls[-1].end + 0.5 for ls, _ in episodes.values())
        print(
            f"{len(lines)} lines of {len(episodes)} CRD3 episodes ({sum(ln.dev for ln in lines)} dev), "
            f"{session_s / 60:.1f} min as a table of {SPEAKERS}; {len(entities)} entities; seed {args.seed}"
        )
        fixed = {"none": [], "connected": by_connections(entities), "chosen": None, "allcast": None, "nocast": None}
        header = ["model", "beam/budget", "prompt", "dev: recall / precision / other WER", "held-out", "all"]
        widths = [7, 11, 27, 35, 21, 21]
        show([*header, "RTF (CPU s / s)", "2nd pass"], [*widths, 15, 8])
        print("|" + "|".join("-" * (w + 2) for w in [*widths, 15, 8]) + "|", flush=True)
        # a graph-chosen prompt is heard with the second pass, as ingest does (and, asked, without it first); a
        # fixed prompt has no head to put the names nearly heard at
        variants = [(p, False) for p in args.prompts if args.second_pass and fixed[p] is None]
        variants += [(p, fixed[p] is None) for p in args.prompts]
        unused = [first]  # one campaign per condition: no other condition's sessions are its last sessions
        for model in models:
            for beam in args.beams:
                for budget in args.budgets:
                    whisper = WhisperSTT(model, beam_size=beam, prompt_token_budget=budget)
                    for prompt, second_pass in variants:
                        stt = Timed(whisper, fixed[prompt])
                        label = prompt + (" + 2nd pass" if second_pass else "")
                        condition = f"{model}/{beam}/{budget}/{label}"
                        passes: Counter[str] = Counter()
                        mem = unused.pop() if unused else await new_campaign(condition)
                        casts = await transcribe_all(
                            mem,
                            episodes,
                            stt,
                            condition,
                            session_cast=prompt != "allcast",
                            stage1_cast=prompt != "nocast",
                            second_pass=second_pass,
                            passes=passes,
                        )
                        if args.dump:
                            with args.dump.open("a") as out:
                                for line in lines:
                                    said = {"condition": condition, "episode": line.episode, "dev": line.dev}
                                    parts = line.parts[condition]
                                    row = {**said, "said": line.text, "parts": parts, "cast": casts[line.episode]}
                                    out.write(json.dumps(row) + "\n")
                            # each text heard with its audio and prompt: segments to replay without transcribing
                            # (bench/name_check_replay.py)
                            with args.dump.with_suffix(".segments.pkl").open("ab") as out:
                                pickle.dump({"condition": condition, "heard": stt.heard}, out)
                        for stage, label in ((0, ""), (1, " + stage 1")):
                            cells = [model, f"{beam}/{budget}", condition.rsplit("/", 1)[1] + label]
                            for half in (True, False, None):
                                score = Score()
                                for line in lines:
                                    if half is None or line.dev == half:
                                        score.add(line.text, line.heard[condition][stage], gazetteer)
                                done = score.said or score.words
                                cells.append("{:.3f} / {:.3f} / {:.3f}".format(*score.figures()) if done else "-")
                            cells.append(f"{stt.seconds / session_s:.2f} ({stt.cpu_seconds / session_s:.2f})")
                            cells.append(f"{passes['second']}/{passes['lines']}")
                            show(cells, [*widths, 15, 8])  # row by row: a long run's first rows survive an interruption
                        if args.verbose:
                            for line in lines:
                                print(f"  {line.text}\n    -> {line.heard[condition][1]}")
                    whisper.close()
        await pool.close()
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=240, help="lines in all, spread over the 12 episodes")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--models", nargs="+", default=["tiny.en", "base"])
    parser.add_argument("--prompts", nargs="+", default=["none", "connected", "chosen"])
    parser.add_argument("--split", choices=["all", "dev", "held-out"], default="all", help="which episodes to speak")
    parser.add_argument("--beams", nargs="+", type=int, default=[5], help="Whisper beam sizes to compare")
    parser.add_argument("--budgets", nargs="+", type=int, default=[WHISPER_PROMPT_TOKENS], help="prompt tokens")
    parser.add_argument(
        "--history", type=int, default=0, help="turns said before each stretch, stored as the last session"
    )
    parser.add_argument(
        "--second-pass",
        action="store_true",
        help="each graph-chosen prompt also without the second pass for names nearly heard (before and after)",
    )
    parser.add_argument("--verbose", action="store_true", help="print each line as said and as stored")
    parser.add_argument(
        "--dump",
        type=Path,
        help="append each line (said; heard raw, stored, word confidences; the cast) as JSON, and each text heard "
        "with its audio and prompt to the same name .segments.pkl",
    )
    raise SystemExit(asyncio.run(run(parser.parse_args())))


if __name__ == "__main__":
    main()
