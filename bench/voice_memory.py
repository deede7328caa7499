"""Memory of a long voice session: does anything in the capture path grow with the session's length?

    python bench/voice_memory.py [--hours 2] [--speakers 4]

Feeds a simulated table (speakers taking turns of 2–8 s with pauses, 20 ms 48 kHz stereo frames, as Discord
delivers them) through the real capture path — FrameQueueSource, UtteranceSegmenter with webrtcvad, the bounded
STT queue, VoicePipeline — as fast as it can, with a stand-in STT (the real model's memory is fixed once loaded
and is measured by bench/stt.py) and a sink that drops what it gets (L1 lives in PostgreSQL, not here).
Prints Python heap (tracemalloc) and process RSS every simulated 15 minutes: flat lines mean bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import time
import tracemalloc
from collections.abc import AsyncIterator, Sequence

import numpy as np

from memory.providers.stt import Transcript
from memory.providers.stt import Word as STTWord
from memory.recorder import Utterance
from memory.voice.capture import Frame, VoicePipeline
from memory.voice.prompt import StaticNames
from memory.voice.segmenter import FRAME_SAMPLES, INPUT_RATE

FRAME_S = 0.02


def speech(seconds: float, f0: float) -> list[bytes]:
    """Voiced-speech stand-in (harmonics with a syllable rhythm: webrtcvad hears speech) as 20 ms frames."""
    t = np.arange(round(seconds * INPUT_RATE)) / INPUT_RATE
    wave = 0.2 * sum(np.sin(2 * np.pi * f0 * k * t) / k for k in range(1, 12)) * (0.6 + 0.4 * np.sin(8 * np.pi * t))
    pcm = np.repeat((np.clip(wave, -1, 1) * 32767).astype("<i2"), 2)
    return [
        pcm[i : i + 2 * FRAME_SAMPLES].tobytes() for i in range(0, len(pcm) - 2 * FRAME_SAMPLES + 1, 2 * FRAME_SAMPLES)
    ]


class Table:
    """The simulated session: turns of prebuilt clips (building audio is not what is measured)."""

    def __init__(self, hours: float, speakers: int, seed: int = 1) -> None:
        self.end = hours * 3600
        self.rng = random.Random(seed)
        self.clips = {u: [speech(s, 110 + 45 * u) for s in (2, 3, 5, 8)] for u in range(speakers)}
        self.now = 0.0

    async def __aiter__(self) -> AsyncIterator[Frame]:
        while self.now < self.end:
            user = self.rng.randrange(len(self.clips))
            for frame in self.rng.choice(self.clips[user]):
                yield user, frame, self.now
                self.now += FRAME_S
            self.now += self.rng.uniform(1.0, 3.0)  # nothing is sent during silence
            await asyncio.sleep(0)


class QuickSTT:
    async def transcribe(self, pcm: np.ndarray, *, prompt_names: Sequence[str] = ()) -> Transcript:
        text = "the party walks into the tavern and orders a round"
        words = [STTWord(word=w, start=0.0, end=0.1, confidence=0.9) for w in text.split()]
        return Transcript(text=text, words=words, duration=len(pcm) / 16000)


class DropSink:
    def __init__(self) -> None:
        self.count = 0

    async def add(self, utterance: Utterance) -> Utterance:
        self.count += 1
        return utterance.model_copy(update={"seq": self.count})


async def main(args: argparse.Namespace) -> None:
    table = Table(args.hours, args.speakers)
    sink = DropSink()
    pipeline = VoicePipeline(
        table, sink, QuickSTT(), names=StaticNames(["Eldrinax", "Ironhold"]), speaker_name=str,
        session_start=0.0, idle_flush_s=None,
    )  # fmt: skip
    tracemalloc.start()
    rows: list[tuple[float, int, float, float, float]] = []
    started = time.perf_counter()

    async def sample() -> None:
        mark = 0.0
        while True:
            if table.now >= mark:
                current, peak = tracemalloc.get_traced_memory()
                rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
                rows.append((table.now / 60, sink.count, current / 2**20, peak / 2**20, rss))
                mark += 15 * 60
            await asyncio.sleep(0.05)

    sampler = asyncio.create_task(sample())
    await pipeline.run()
    sampler.cancel()
    current, peak = tracemalloc.get_traced_memory()
    rows.append((table.now / 60, sink.count, current / 2**20, peak / 2**20,
                 resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))  # fmt: skip
    print(f"\n{args.hours} h simulated with {args.speakers} speakers in {time.perf_counter() - started:.0f} s")
    print("| session min | utterances | Python heap MB | heap peak MB | max RSS MB |")
    print("|---|---|---|---|---|")
    for minute, count, cur, pk, rss in rows:
        print(f"| {minute:.0f} | {count} | {cur:.1f} | {pk:.1f} | {rss:.0f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hours", type=float, default=2.0)
    parser.add_argument("--speakers", type=int, default=4)
    asyncio.run(main(parser.parse_args()))
