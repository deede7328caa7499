"""Live capture: per-speaker PCM frames → utterances → STT with the campaign's names → the guarded recorder.

Discord-free: anything that yields ``(user_id, pcm_frame, timestamp)`` is an :class:`AudioSource` (the Discord
adapter in ``bot/voice.py``, a test's list of frames). The stages are decoupled by bounded queues, so a slow STT
pushes back on capture instead of growing memory, and nothing here grows with the length of the session:

    source ─► UtteranceSegmenter ─► asyncio.Queue(maxsize) ─► STT (off the event loop) ─► Utterance ─► guard
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
import wave
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from memory.providers.stt import SpeechToText, STTError, Transcript
from memory.recorder import Utterance, Word
from memory.voice import segmenter as seg
from memory.voice.prompt import NameSource, transcribe_heard
from memory.voice.segmenter import UtteranceSegmenter
from memory.voice.unheard import unheard_name, voice_ref

log = logging.getLogger(__name__)

#: (Discord user id, 20 ms of 48 kHz stereo s16le PCM, start of the frame in seconds on a monotonic clock)
Frame = tuple[int, bytes, float]


@runtime_checkable
class AudioSource(Protocol):
    """Per-speaker PCM frames as they arrive; the iteration ends when capture stops."""

    def __aiter__(self) -> AsyncIterator[Frame]: ...


class UtteranceSink(Protocol):
    """Where finished utterances go: the memory guard (which numbers and stores them)."""

    async def add(self, utterance: Utterance) -> Utterance: ...


# ---------------------------------------------------------------------------------------------------- sources


class FrameQueueSource:
    """An :class:`AudioSource` fed from another thread (discord-ext-voice-recv calls its sink on its own thread).

    ``push`` is thread-safe and never blocks the caller: the voice thread must keep draining the socket. The
    buffer is bounded (``max_frames``, 10 s of one speaker by default); when the event loop cannot keep up the
    oldest frames are dropped, counted and logged rather than growing memory without limit.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, *, max_frames: int = 500) -> None:
        self._loop = loop
        self._frames: deque[Frame] = deque()
        self._max = max_frames
        self._lock = threading.Lock()
        self._ready = asyncio.Event()
        self._closed = False
        self.dropped = 0

    def push(self, user_id: int, pcm: bytes, timestamp: float) -> None:
        with self._lock:
            if self._closed:
                return
            if len(self._frames) >= self._max:
                self._frames.popleft()
                self.dropped += 1
                if self.dropped % 500 == 1:
                    log.warning("voice capture is behind: %d frames dropped so far", self.dropped)
            self._frames.append((user_id, pcm, timestamp))
        self._wake()

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self._wake()

    def _wake(self) -> None:
        if self._loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._ready.set()
        else:
            self._loop.call_soon_threadsafe(self._ready.set)

    async def __aiter__(self) -> AsyncIterator[Frame]:
        while True:
            with self._lock:
                batch = list(self._frames)
                self._frames.clear()
                closed = self._closed
                self._ready.clear()
            for frame in batch:
                yield frame
            if closed:
                return
            if not batch:
                await self._ready.wait()


class FrameDecryptor:
    """The end-to-end (DAVE) decrypt step for one packet, Discord-free: ``decrypt(user_id, payload)``.

    A packet that fails to decrypt (a key rotation in flight, a sender not yet in the MLS group) is dropped and
    counted — one lost 20 ms frame is inaudible to STT, an exception in the voice thread would end capture.
    The log line comes once per ``log_every`` failures so a broken session does not flood the log.
    """

    def __init__(self, decrypt: Callable[[int, bytes], bytes], *, log_every: int = 250) -> None:
        self._decrypt = decrypt
        self.log_every = log_every
        self.failed = 0
        self.passed = 0

    def __call__(self, user_id: int, payload: bytes) -> bytes | None:
        try:
            plain = self._decrypt(user_id, payload)
        except Exception as exc:  # davey raises plain exceptions; every kind means "undecryptable packet"
            self.failed += 1
            if self.failed % self.log_every == 1 or self.log_every == 1:
                log.warning(
                    "dropped an audio packet from user %s that failed to decrypt (%s: %s); %d dropped so far",
                    user_id,
                    type(exc).__name__,
                    exc,
                    self.failed,
                )
            return None
        self.passed += 1
        return plain


# ---------------------------------------------------------------------------------------------------- pipeline


@dataclass(slots=True)
class PipelineStats:
    frames: int = 0
    utterances: int = 0  # transcribed and handed to the recorder
    empty: int = 0  # segments in which STT heard no words
    stt_errors: int = 0
    unheard: int = 0  # utterances STT failed on, kept as audio files
    stt_seconds: float = 0.0
    audio_seconds: float = 0.0
    max_queue_depth: int = 0
    speakers: Counter[str] = field(default_factory=Counter)  # utterances per speaker (bounded by the table)


class VoicePipeline:
    """Runs one session's capture: :meth:`run` until the source ends or :meth:`stop` is called.

    ``session_start`` is the source's clock at the start of the session; utterance times are relative to it.
    One STT worker keeps utterances in the order they ended (the order they get their seq).
    """

    def __init__(
        self,
        source: AudioSource,
        sink: UtteranceSink,
        stt: SpeechToText,
        *,
        names: NameSource,
        speaker_name: Callable[[int], str],
        session_start: float,
        segmenter: UtteranceSegmenter | None = None,
        queue_size: int = 16,
        idle_flush_s: float | None = 0.25,
        clock: Callable[[], float] = time.monotonic,
        stt_retries: int = 2,
        lag_warning_every_s: float = 10.0,
        unheard_dir: Path | None = None,
    ) -> None:
        self.source = source
        self.sink = sink
        self.stt = stt
        self.names = names
        self.speaker_name = speaker_name
        self.session_start = session_start
        self.segmenter = segmenter or UtteranceSegmenter()
        # Bounded: at most queue_size × max_utterance of audio waits (16 × 30 s × 64 kB/s ≈ 31 MB worst case).
        self.queue: asyncio.Queue[seg.Utterance | None] = asyncio.Queue(maxsize=queue_size)
        self.idle_flush_s = idle_flush_s
        self.clock = clock
        self.stt_retries = stt_retries
        #: Where an utterance STT keeps failing on is written as a WAV file, to import later.
        self.unheard_dir = unheard_dir
        self.lag_warning_every_s = lag_warning_every_s
        self.stats = PipelineStats()
        self._last_lag_warning = float("-inf")
        self._stopping = asyncio.Event()

    async def run(self) -> None:
        worker = asyncio.create_task(self._transcribe_loop(), name="voice-stt")
        ticker = asyncio.create_task(self._idle_loop(), name="voice-idle") if self.idle_flush_s else None
        try:
            await self._capture_loop()
        finally:
            if ticker is not None:
                ticker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await ticker
            # Whatever is still open is a finished sentence at session end.
            for utterance in self.segmenter.flush():
                await self._enqueue(utterance)
            await self.queue.put(None)
            await worker

    async def stop(self) -> None:
        """Stop reading the source; :meth:`run` then transcribes what is queued and returns."""
        self._stopping.set()

    async def _capture_loop(self) -> None:
        frames = aiter(self.source)
        stop = asyncio.create_task(self._stopping.wait())
        try:
            while True:
                nxt = asyncio.ensure_future(anext(frames))
                done, _ = await asyncio.wait({nxt, stop}, return_when=asyncio.FIRST_COMPLETED)
                if nxt not in done:
                    nxt.cancel()
                    with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                        await nxt
                    return
                try:
                    user_id, pcm, timestamp = nxt.result()
                except StopAsyncIteration:
                    return
                self.stats.frames += 1
                for utterance in self.segmenter.feed(user_id, pcm, timestamp):
                    await self._enqueue(utterance)
        finally:
            stop.cancel()
            closer = getattr(frames, "aclose", None)
            if closer is not None:
                with contextlib.suppress(Exception):
                    await closer()

    async def _idle_loop(self) -> None:
        # Discord sends nothing while someone is silent: without this tick a sentence would wait for the
        # speaker's next word to be closed.
        assert self.idle_flush_s is not None
        while True:
            await asyncio.sleep(self.idle_flush_s)
            for utterance in self.segmenter.flush_idle(self.clock()):
                await self._enqueue(utterance)

    async def _enqueue(self, utterance: seg.Utterance) -> None:
        depth = self.queue.qsize()
        self.stats.max_queue_depth = max(self.stats.max_queue_depth, min(depth + 1, self.queue.maxsize))
        if self.queue.full():
            now = self.clock()
            if now - self._last_lag_warning >= self.lag_warning_every_s:
                self._last_lag_warning = now
                log.warning(
                    "speech-to-text is falling behind: queue full (%d utterances waiting); capture waits for STT",
                    depth,
                )
        await self.queue.put(utterance)  # blocks when full: back-pressure instead of unbounded memory

    async def _transcribe_loop(self) -> None:
        while (segment := await self.queue.get()) is not None:
            try:
                await self._transcribe_one(segment)
            except asyncio.CancelledError:
                raise
            except Exception:
                # A bug for one utterance must not end the session's capture.
                log.exception("could not process an utterance of user %s", segment.user_id)

    async def _transcribe_one(self, segment: seg.Utterance) -> None:
        start_s = max(0.0, segment.start - self.session_start)
        end_s = max(start_s, segment.end - self.session_start)
        names = await self.names.names(start_s)
        transcript = await self._stt(segment, names)
        if transcript is None:
            return
        text = transcript.text.strip()
        if not text:
            self.stats.empty += 1
            return
        self.names.heard(text, start_s)
        speaker = self.speaker_name(segment.user_id)
        utterance = Utterance(
            speaker=speaker,
            speaker_id=str(segment.user_id),
            text=text,
            start_s=round(start_s, 3),
            end_s=round(end_s, 3),
            words=[Word(word=w.word, confidence=w.confidence) for w in transcript.words],
            ref=voice_ref(segment.user_id, round(start_s * 1000)),
        )
        stored = await self.sink.add(utterance)
        self.stats.utterances += 1
        self.stats.speakers[speaker] += 1
        log.debug("utterance %s by %s: %r", stored.seq, speaker, text)

    async def _stt(self, segment: seg.Utterance, names: Sequence[str]) -> Transcript | None:
        for attempt in range(self.stt_retries + 1):
            started = time.perf_counter()
            try:
                transcript = await transcribe_heard(self.stt, segment.pcm16k, self.names, names)
            except (STTError, OSError, TimeoutError) as exc:
                self.stats.stt_errors += 1
                if attempt == self.stt_retries:
                    kept = await asyncio.to_thread(self._keep_unheard, segment)
                    log.error(
                        "speech-to-text failed %d times for %.1f s of user %s: %s; %s",
                        attempt + 1,
                        segment.duration,
                        segment.user_id,
                        exc,
                        f"the audio is in {kept}: after the session, `lorekeeper session unheard` hears it into "
                        f"its session (`lorekeeper ingest {kept} --speaker NAME`: into a session of its own)"
                        if kept
                        else "the utterance is lost",
                    )
                    return None
                log.warning("speech-to-text failed (%s); retrying", exc)
                await asyncio.sleep(0.5 * 2**attempt)
                continue
            self.stats.stt_seconds += time.perf_counter() - started
            self.stats.audio_seconds += segment.duration
            return transcript
        return None

    def _keep_unheard(self, segment: seg.Utterance) -> Path | None:
        """Write an utterance STT failed on as 16 kHz mono 16-bit WAV; None when there is nowhere to keep it."""
        if self.unheard_dir is None:
            return None
        start_ms = round(max(0.0, segment.start - self.session_start) * 1000)
        path = self.unheard_dir / unheard_name(segment.user_id, start_ms)
        try:
            # players' voices: for the bot's own user only, whatever the umask (unheard/ and the session's folder)
            self.unheard_dir.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.unheard_dir.mkdir(mode=0o700, exist_ok=True)
            pcm = (np.clip(segment.pcm16k, -1.0, 1.0) * 32767).astype("<i2")
            with (
                open(path, "wb", opener=lambda name, flags: os.open(name, flags, 0o600)) as file,
                wave.open(file, "wb") as out,
            ):
                out.setnchannels(1)
                out.setsampwidth(2)
                out.setframerate(seg.OUTPUT_RATE)
                out.writeframes(pcm.tobytes())
        except OSError as exc:
            log.error("could not keep the unheard audio in %s: %s", path, exc)
            return None
        self.stats.unheard += 1
        return path


async def frames_from(items: Iterable[Frame]) -> AsyncIterator[Frame]:
    """An :class:`AudioSource` over frames already at hand (replays, tests)."""
    for frame in items:
        yield frame
