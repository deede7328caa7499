"""Per-speaker utterance segmentation of Discord voice frames.

Discord delivers each speaker's audio as 20 ms frames of 48 kHz stereo s16le PCM (after Opus decoding) and
sends *nothing* while a speaker is silent. So an utterance ends when

- the next frame of that speaker arrives after a gap of at least ``silence_gap_ms``, or
- the clock passes that gap with no frame at all (:meth:`UtteranceSegmenter.flush_idle`, on a timer), or
- the frames keep coming but voice activity detection (webrtcvad) hears silence for ``silence_gap_ms``
  (open microphones, background noise), or
- it reaches ``max_utterance_s`` (long monologues are cut so STT latency and memory stay bounded).

Utterances with less than ``min_speech_ms`` of detected speech (coughs, clicks, key presses) are dropped.
Audio is resampled on the fly to what STT wants (16 kHz mono float32), so only open utterances are held, at a
third of the input rate: memory is bounded by speakers × ``max_utterance_s``, never by session length.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, field

import numpy as np
import webrtcvad

log = logging.getLogger(__name__)

INPUT_RATE = 48_000
OUTPUT_RATE = 16_000
FRAME_MS = 20
FRAME_SAMPLES = INPUT_RATE * FRAME_MS // 1000  # per channel
FRAME_BYTES = FRAME_SAMPLES * 2 * 2  # stereo, 16-bit
_FACTOR = INPUT_RATE // OUTPUT_RATE


def _lowpass_taps(num_taps: int = 121, cutoff_hz: float = 7_200.0) -> np.ndarray:
    """Hamming-windowed sinc low-pass for decimation by 3.

    Anything above the new 8 kHz Nyquist would fold back into the speech band; with 121 taps the filter passes
    up to ~6.5 kHz (all Whisper needs) and attenuates > 50 dB from ~8 kHz.
    """
    n = np.arange(num_taps) - (num_taps - 1) / 2
    taps = np.sinc(2 * cutoff_hz / INPUT_RATE * n) * np.hamming(num_taps)
    return (taps / taps.sum()).astype(np.float32)


_TAPS = _lowpass_taps()
_DELAY = (len(_TAPS) - 1) // 2  # group delay in input samples; a multiple of 3, so outputs stay aligned
assert _DELAY % _FACTOR == 0 and FRAME_SAMPLES % _FACTOR == 0


class Decimator:
    """Streaming 48 kHz → 16 kHz low-pass decimation whose output matches filtering the whole signal at once.

    Frames are filtered with the previous frames' tail as history, so frame boundaries leave no clicks, and
    the filter's group delay is removed (leading outputs dropped, :meth:`finish` flushes the tail).
    """

    def __init__(self) -> None:
        self._history = np.zeros(len(_TAPS) - 1, dtype=np.float32)
        self._to_skip = _DELAY // _FACTOR

    def push(self, samples: np.ndarray) -> np.ndarray:
        """Filter 48 kHz mono float samples (a multiple of 3 of them) and return the 16 kHz ones."""
        buf = np.concatenate((self._history, samples.astype(np.float32, copy=False)))
        self._history = buf[len(buf) - len(self._history) :]
        out = np.convolve(buf, _TAPS, mode="valid")[::_FACTOR]
        if self._to_skip:
            skipped = min(self._to_skip, len(out))
            self._to_skip -= skipped
            out = out[skipped:]
        return out.astype(np.float32, copy=False)

    def finish(self) -> np.ndarray:
        return self.push(np.zeros(_DELAY, dtype=np.float32))


def resample_48k_stereo_to_16k_mono(pcm: bytes) -> np.ndarray:
    """Whole-buffer conversion of 48 kHz stereo s16le to 16 kHz mono float32 (for tests and file paths)."""
    stereo = np.frombuffer(pcm, dtype="<i2").reshape(-1, 2)
    mono = stereo.mean(axis=1, dtype=np.float32) / 32768.0
    mono = mono[: len(mono) - len(mono) % _FACTOR]
    decimator = Decimator()
    return np.concatenate((decimator.push(mono), decimator.finish()))


@dataclass(frozen=True, slots=True)
class Utterance:
    user_id: int
    start: float  # the caller's clock, seconds (start of the first frame)
    end: float  # end of the last voiced frame plus a short tail
    pcm16k: np.ndarray  # float32 mono 16 kHz

    @property
    def duration(self) -> float:
        return len(self.pcm16k) / OUTPUT_RATE


@dataclass(slots=True)
class _OpenUtterance:
    start: float
    decimator: Decimator = field(default_factory=Decimator)
    chunks: list[np.ndarray] = field(default_factory=list)
    samples: int = 0  # 16 kHz samples in chunks
    speech_frames: int = 0
    samples_at_last_speech: int = 0
    last_speech_end: float = 0.0

    def add(self, mono: np.ndarray) -> None:
        chunk = self.decimator.push(mono)
        self.chunks.append(chunk)
        self.samples += len(chunk)


@dataclass(slots=True)
class _Speaker:
    vad: webrtcvad.Vad | None
    preroll: deque[tuple[float, np.ndarray]]
    last_frame_end: float
    open: _OpenUtterance | None = None


class UtteranceSegmenter:
    """Feed each decoded frame to :meth:`feed`; call :meth:`flush_idle` on a timer, :meth:`flush` at the end.

    Each call returns the utterances it completed (often none), per speaker in order. Not thread-safe: one
    owner (the capture task) feeds it.
    """

    def __init__(
        self,
        *,
        silence_gap_ms: int = 700,
        max_utterance_s: float = 30.0,
        min_speech_ms: int = 200,
        vad_mode: int | None = 2,
        preroll_ms: int = 200,
        tail_ms: int = 200,
    ) -> None:
        if silence_gap_ms < FRAME_MS or max_utterance_s <= 0:
            raise ValueError("silence_gap_ms must be at least one frame and max_utterance_s positive")
        if vad_mode is not None and vad_mode not in (0, 1, 2, 3):
            raise ValueError(f"vad_mode must be 0-3 (webrtcvad aggressiveness) or None, got {vad_mode}")
        self.silence_gap = silence_gap_ms / 1000
        self.max_utterance = max_utterance_s
        self.min_speech_frames = max(1, -(-min_speech_ms // FRAME_MS))
        self.vad_mode = vad_mode
        # Discord's voice activity gate opens a little late; a short pre-roll keeps soft word onsets.
        self.preroll_frames = preroll_ms // FRAME_MS
        self.tail = tail_ms / 1000
        self.dropped_frames = 0
        self._speakers: dict[int, _Speaker] = {}

    @property
    def tracked_speakers(self) -> int:
        """Speakers with any state (open utterance, pre-roll, VAD); idle ones are forgotten by flush_idle."""
        return len(self._speakers)

    @property
    def open_speakers(self) -> list[int]:
        """Users with an utterance in progress."""
        return [uid for uid, s in self._speakers.items() if s.open is not None]

    def feed(self, user_id: int, frame: bytes, timestamp: float) -> list[Utterance]:
        """Add one 20 ms frame that started at ``timestamp`` (seconds, the caller's monotonic clock)."""
        if len(frame) != FRAME_BYTES:
            self.dropped_frames += 1
            log.warning(
                "dropped a %d-byte audio frame from user %s: expected %d (20 ms of 48 kHz stereo s16le)",
                len(frame),
                user_id,
                FRAME_BYTES,
            )
            return []
        done: list[Utterance] = []
        speaker = self._speakers.get(user_id)
        if speaker is None:
            speaker = self._speakers[user_id] = _Speaker(
                vad=webrtcvad.Vad(self.vad_mode) if self.vad_mode is not None else None,
                preroll=deque(maxlen=self.preroll_frames or None),
                last_frame_end=timestamp,
            )
        if timestamp - speaker.last_frame_end >= self.silence_gap:
            # Discord sent nothing for a while: the speaker stopped talking, even if no timer noticed yet.
            self._close(user_id, speaker, done)
            speaker.preroll.clear()
        frame_end = timestamp + FRAME_MS / 1000
        speaker.last_frame_end = frame_end

        stereo = np.frombuffer(frame, dtype="<i2").reshape(-1, 2).astype(np.int32)
        mono16 = ((stereo[:, 0] + stereo[:, 1]) >> 1).astype("<i2")
        voiced = speaker.vad is None or speaker.vad.is_speech(mono16.tobytes(), INPUT_RATE)
        mono = mono16.astype(np.float32) / 32768.0

        utt = speaker.open
        if utt is None:
            if not voiced:
                if self.preroll_frames:
                    speaker.preroll.append((timestamp, mono))
                return done
            start = speaker.preroll[0][0] if speaker.preroll else timestamp
            utt = speaker.open = _OpenUtterance(start=start)
            for _, earlier in speaker.preroll:
                utt.add(earlier)
            speaker.preroll.clear()
        utt.add(mono)
        if voiced:
            utt.speech_frames += 1
            utt.samples_at_last_speech = utt.samples
            utt.last_speech_end = frame_end
        if frame_end - utt.start >= self.max_utterance - 1e-9:
            self._close(user_id, speaker, done, trim=False)
        elif not voiced and frame_end - utt.last_speech_end >= self.silence_gap - 1e-9:
            self._close(user_id, speaker, done)
        return done

    def flush_idle(self, now: float) -> list[Utterance]:
        """Close utterances of speakers silent since ``now - silence_gap``; forget idle speakers entirely."""
        done: list[Utterance] = []
        for user_id, speaker in list(self._speakers.items()):
            if now - speaker.last_frame_end >= self.silence_gap - 1e-9:
                self._close(user_id, speaker, done)
                del self._speakers[user_id]  # keeps memory flat over hours with changing speakers
        return done

    def flush(self) -> list[Utterance]:
        """Close everything (session end)."""
        done: list[Utterance] = []
        for user_id, speaker in self._speakers.items():
            self._close(user_id, speaker, done)
        self._speakers.clear()
        return done

    def _close(self, user_id: int, speaker: _Speaker, done: list[Utterance], *, trim: bool = True) -> None:
        utt, speaker.open = speaker.open, None
        if utt is None:
            return
        if utt.speech_frames < self.min_speech_frames:
            log.debug("dropped %d ms of non-speech from user %s", utt.speech_frames * FRAME_MS, user_id)
            return
        utt.chunks.append(utt.decimator.finish())
        pcm = np.concatenate(utt.chunks)
        end = speaker.last_frame_end
        if trim:
            # Trailing non-speech only costs STT time; keep a short tail so the last word is not clipped.
            keep = utt.samples_at_last_speech + int(self.tail * OUTPUT_RATE)
            if keep < len(pcm):
                pcm = pcm[:keep]
                end = min(end, utt.last_speech_end + self.tail)
        done.append(Utterance(user_id=user_id, start=utt.start, end=end, pcm16k=pcm))
