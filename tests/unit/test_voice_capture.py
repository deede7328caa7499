"""PCM frames through the capture interface: several interleaved speakers, silences, an undecryptable packet.

The speech-to-text here is a fake implementing the ``SpeechToText`` protocol: it "hears" which synthetic voice
(fundamental frequency) an utterance holds and how long it is. Real transcription is tested elsewhere
(tests/integration/test_stt_real.py, tests/integration/test_ingest_audio.py); this test is about what reaches
STT and what comes out of the pipeline. The segmenter and webrtcvad are the real ones.
"""

from __future__ import annotations

import asyncio
import logging
import stat
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from memory.providers.stt import SpeechToText, STTError, Transcript
from memory.providers.stt import Word as STTWord
from memory.recorder import Utterance
from memory.voice.audio_files import load_audio
from memory.voice.capture import (
    AudioSource,
    Frame,
    FrameDecryptor,
    FrameQueueSource,
    VoicePipeline,
    frames_from,
)
from memory.voice.prompt import StaticNames
from memory.voice.segmenter import FRAME_SAMPLES, INPUT_RATE, OUTPUT_RATE, UtteranceSegmenter

FRAME_S = 0.02
T0 = 1000.0  # the source's monotonic clock at session start
VOICES = {11: 130.0, 22: 210.0, 33: 320.0}  # user id → fundamental frequency of their synthetic voice
NAMES = {11: "Ana", 22: "Bram", 33: "Cyra"}
KEY = 0x5A


def voice(seconds: float, f0: float) -> np.ndarray:
    """A voiced-speech stand-in: harmonics on ``f0`` with a 4 Hz syllable rhythm (webrtcvad hears speech)."""
    t = np.arange(round(seconds * INPUT_RATE)) / INPUT_RATE
    harmonics = sum(np.sin(2 * np.pi * f0 * k * t) / k for k in range(1, 20))
    return 0.2 * harmonics * (0.6 + 0.4 * np.sin(2 * np.pi * 4 * t))


def pcm_frames(signal: np.ndarray) -> list[bytes]:
    pcm = np.repeat((np.clip(signal, -1, 1) * 32767).astype("<i2"), 2)
    return [pcm[i : i + 2 * FRAME_SAMPLES].tobytes() for i in range(0, len(pcm), 2 * FRAME_SAMPLES)]


def encrypt(pcm: bytes) -> bytes:
    """Stand-in for end-to-end encryption: XOR plus a tag byte the decryptor checks."""
    return b"\x01" + bytes(b ^ KEY for b in pcm)


def decrypt(user_id: int, payload: bytes) -> bytes:
    if payload[:1] != b"\x01":
        raise ValueError("bad authentication tag")
    return bytes(b ^ KEY for b in payload[1:])


class HearsVoices:
    """Fake STT: names the voice by its dominant frequency, and says how long the audio is."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, tuple[str, ...]]] = []

    async def transcribe(self, pcm: np.ndarray, *, prompt_names: Sequence[str] = ()) -> Transcript:
        duration = len(pcm) / OUTPUT_RATE
        self.calls.append((duration, tuple(prompt_names)))
        await asyncio.sleep(0)  # a real provider awaits its worker thread here
        spectrum = np.abs(np.fft.rfft(pcm * np.hanning(len(pcm))))
        hz = float(np.fft.rfftfreq(len(pcm), 1 / OUTPUT_RATE)[spectrum.argmax()])
        who = min(VOICES, key=lambda uid: abs(VOICES[uid] - hz))
        text = f"voice {NAMES[who]} for {duration:.1f} seconds"
        return Transcript(
            text=text,
            words=[STTWord(word=w, start=0.0, end=0.1, confidence=0.9) for w in text.split()],
            duration=duration,
        )


class ListSink:
    def __init__(self) -> None:
        self.got: list[Utterance] = []

    async def add(self, utterance: Utterance) -> Utterance:
        utterance = utterance.model_copy(update={"seq": len(self.got) + 1})
        self.got.append(utterance)
        return utterance


def scene(decryptor: FrameDecryptor) -> list[Frame]:
    """Three players over 6 s, interleaved frame by frame as Discord delivers them, with one corrupt packet.

    Ana speaks 0.0-1.5 s and again 3.0-4.0 s; Bram 0.5-2.5 s (overlapping Ana); Cyra 4.5-5.3 s.
    Between their turns nothing is sent (Discord sends no packets during silence).
    """
    turns = [(11, 0.0, 1.5), (22, 0.5, 2.0), (11, 3.0, 1.0), (33, 4.5, 0.8)]
    timeline: list[tuple[float, int, bytes]] = []
    for user, start, length in turns:
        for i, frame in enumerate(pcm_frames(voice(length, VOICES[user]))):
            timeline.append((start + i * FRAME_S, user, encrypt(frame)))
    timeline.sort(key=lambda item: (item[0], item[1]))
    # A packet of Bram's in mid-sentence arrives mangled (a key rotation in flight).
    corrupt = next(i for i, (t, user, _) in enumerate(timeline) if user == 22 and t >= 1.0)
    t, user, payload = timeline[corrupt]
    timeline[corrupt] = (t, user, b"\x00" + payload[1:])
    frames: list[Frame] = []
    for t, user, payload in timeline:
        pcm = decryptor(user, payload)
        if pcm is not None:
            frames.append((user, pcm, T0 + t))
    return frames


async def test_interleaved_speakers_silences_and_a_bad_packet_give_the_right_utterances(
    caplog: pytest.LogCaptureFixture,
) -> None:
    decryptor = FrameDecryptor(decrypt, log_every=1)
    with caplog.at_level(logging.WARNING, logger="memory.voice.capture"):
        frames = scene(decryptor)
    assert decryptor.failed == 1 and "failed to decrypt" in caplog.text

    stt, sink = HearsVoices(), ListSink()
    source = frames_from(frames)
    assert isinstance(source, AudioSource)
    assert isinstance(stt, SpeechToText)
    pipeline = VoicePipeline(
        source,
        sink,
        stt,
        names=StaticNames(["Eldrinax", "Ironhold"]),
        speaker_name=NAMES.__getitem__,
        session_start=T0,
        idle_flush_s=None,
    )
    await asyncio.wait_for(pipeline.run(), 30)

    by_speaker: dict[str, list[Utterance]] = {}
    for u in sink.got:
        by_speaker.setdefault(u.speaker, []).append(u)
    assert sorted(by_speaker) == ["Ana", "Bram", "Cyra"]
    # every utterance went to the right speaker, and holds only that speaker's voice
    assert all(u.text.startswith(f"voice {u.speaker} ") for u in sink.got)
    assert [round(u.start_s, 1) for u in by_speaker["Ana"]] == [0.0, 3.0]  # Ana's 1.5 s gap split her turns
    assert [round(u.start_s, 1) for u in by_speaker["Bram"]] == [0.5]  # one lost frame did not split Bram
    assert [round(u.start_s, 1) for u in by_speaker["Cyra"]] == [4.5]
    for u, length in zip(
        by_speaker["Ana"] + by_speaker["Bram"] + by_speaker["Cyra"], [1.5, 1.0, 2.0, 0.8], strict=True
    ):
        assert u.end_s is not None and abs((u.end_s - u.start_s) - length) < 0.25
        assert u.ref == f"voice:{u.speaker_id}:{round(u.start_s * 1000)}"
        assert u.words and all(w.confidence == 0.9 for w in u.words)
    assert {u.speaker_id for u in by_speaker["Bram"]} == {"22"}
    assert [u.seq for u in sink.got] == [1, 2, 3, 4]
    assert all(names == ("Eldrinax", "Ironhold") for _, names in stt.calls)
    assert pipeline.stats.utterances == 4 and pipeline.stats.speakers == {"Ana": 2, "Bram": 1, "Cyra": 1}


class NearlyCyrax(StaticNames):
    """A name source for which "Cyra" sounds near a name the prompt leaves out."""

    def nearly_heard(self, heard: Transcript, prompted: Sequence[str]) -> Sequence[str]:
        return ["Cyrax"] if "Cyra" in heard.text.split() and "Cyrax" not in prompted else []


class HearsPromptedNames(HearsVoices):
    async def transcribe(self, pcm: np.ndarray, *, prompt_names: Sequence[str] = ()) -> Transcript:
        heard = await super().transcribe(pcm, prompt_names=prompt_names)
        return (
            heard.model_copy(update={"text": heard.text.replace("Cyra", "Cyrax")}) if "Cyrax" in prompt_names else heard
        )


async def test_a_line_that_nearly_says_a_name_is_heard_again_with_it_first() -> None:
    stt, sink = HearsPromptedNames(), ListSink()
    pipeline = VoicePipeline(
        frames_from(scene(FrameDecryptor(decrypt))),
        sink,
        stt,
        names=NearlyCyrax(["Eldrinax"]),
        speaker_name=NAMES.__getitem__,
        session_start=T0,
        idle_flush_s=None,
    )
    await asyncio.wait_for(pipeline.run(), 30)
    assert sorted(u.text.split()[1] for u in sink.got) == ["Ana", "Ana", "Bram", "Cyrax"]
    assert [names for _, names in stt.calls] == [("Eldrinax",)] * 4 + [("Cyrax", "Eldrinax")]


class SlowSTT(HearsVoices):
    """Answers only when the test releases it: a stand-in for a model slower than real time."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()

    async def transcribe(self, pcm: np.ndarray, *, prompt_names: Sequence[str] = ()) -> Transcript:
        await self.release.wait()
        return await super().transcribe(pcm, prompt_names=prompt_names)


async def test_slow_stt_pushes_back_with_a_warning_and_loses_nothing(caplog: pytest.LogCaptureFixture) -> None:
    loop = asyncio.get_running_loop()
    source = FrameQueueSource(loop, max_frames=10_000)
    stt, sink = SlowSTT(), ListSink()
    pipeline = VoicePipeline(
        source,
        sink,
        stt,
        names=StaticNames(),
        speaker_name=NAMES.__getitem__,
        session_start=T0,
        queue_size=2,
        idle_flush_s=None,
        segmenter=UtteranceSegmenter(silence_gap_ms=300),
    )
    run = asyncio.create_task(pipeline.run())
    # Six short sentences by Ana, 0.5 s apart: more than the queue (2) and the busy STT (1) can hold.
    t = T0
    for _ in range(6):
        for frame in pcm_frames(voice(0.4, VOICES[11])):
            source.push(11, frame, t)
            t += FRAME_S
        t += 0.5
    source.close()
    with caplog.at_level(logging.WARNING, logger="memory.voice.capture"):
        deadline = loop.time() + 30
        while "falling behind" not in caplog.text:  # capture found the queue full (a full queue alone is not that)
            assert loop.time() < deadline, "capture never found the queue full"
            await asyncio.sleep(0.01)
        assert pipeline.queue.full()
        stt.release.set()
        await asyncio.wait_for(run, 30)
    assert "speech-to-text is falling behind: queue full (2 utterances waiting)" in caplog.text
    assert len(sink.got) == 6 and pipeline.stats.max_queue_depth <= 2
    assert source.dropped == 0


async def test_stop_ends_a_live_source_and_keeps_the_open_sentence() -> None:
    loop = asyncio.get_running_loop()
    source = FrameQueueSource(loop)
    sink = ListSink()
    pipeline = VoicePipeline(
        source, sink, HearsVoices(), names=StaticNames(), speaker_name=NAMES.__getitem__, session_start=T0
    )
    run = asyncio.create_task(pipeline.run())
    for i, frame in enumerate(pcm_frames(voice(1.0, VOICES[33]))):
        source.push(33, frame, T0 + i * FRAME_S)
    deadline = loop.time() + 30
    while pipeline.stats.frames < 50:  # every pushed frame consumed: what stop must not lose is in hand
        assert loop.time() < deadline, f"{pipeline.stats.frames} of 50 frames consumed"
        await asyncio.sleep(0.01)
    await pipeline.stop()
    await asyncio.wait_for(run, 10)
    assert [u.speaker for u in sink.got] == ["Cyra"]


def test_bounded_source_drops_oldest_frames_when_the_loop_falls_behind() -> None:
    loop = asyncio.new_event_loop()
    try:
        source = FrameQueueSource(loop, max_frames=3)
        for i in range(5):
            source.push(11, b"x", float(i))
        assert source.dropped == 2
    finally:
        loop.close()


class BrokenSTT(HearsVoices):
    """Fails every time: a crashed model server, a full disk."""

    async def transcribe(self, pcm: np.ndarray, *, prompt_names: Sequence[str] = ()) -> Transcript:
        self.calls.append((len(pcm) / OUTPUT_RATE, tuple(prompt_names)))
        raise STTError("model server is down")


async def test_an_utterance_stt_keeps_failing_on_is_kept_as_audio(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    stt, sink = BrokenSTT(), ListSink()
    frames = [(22, frame, T0 + 2.0 + i * FRAME_S) for i, frame in enumerate(pcm_frames(voice(1.0, VOICES[22])))]
    unheard = tmp_path / "unheard" / "1-7"
    pipeline = VoicePipeline(
        frames_from(frames),
        sink,
        stt,
        names=StaticNames(),
        speaker_name=NAMES.__getitem__,
        session_start=T0,
        idle_flush_s=None,
        stt_retries=1,
        unheard_dir=unheard,
    )
    with caplog.at_level(logging.ERROR, logger="memory.voice.capture"):
        await asyncio.wait_for(pipeline.run(), 30)
    assert sink.got == [] and len(stt.calls) == 2  # tried twice, stored nothing
    kept = sorted(unheard.iterdir())
    assert [p.name for p in kept] == ["22-000002000.wav"]  # the speaker and where in the session it was said
    # the players' voices: only the bot's user reads them, whatever its umask (0644 files in 0755 folders were)
    assert [stat.S_IMODE(p.stat().st_mode) for p in (unheard.parent, unheard, kept[0])] == [0o700, 0o700, 0o600]
    assert pipeline.stats.unheard == 1 and f"lorekeeper ingest {kept[0]}" in caplog.text
    audio = load_audio(kept[0])  # what `lorekeeper ingest` reads
    assert abs(len(audio) / OUTPUT_RATE - 1.0) < 0.25
    assert abs(float(np.abs(audio).max()) - 0.2 * 1.8) < 0.2  # the voice, not silence
