"""Utterance segmentation on synthetic Discord frames (20 ms, 48 kHz stereo s16le) with the real webrtcvad."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from memory.voice.segmenter import (
    FRAME_BYTES,
    FRAME_SAMPLES,
    INPUT_RATE,
    OUTPUT_RATE,
    Decimator,
    Utterance,
    UtteranceSegmenter,
    resample_48k_stereo_to_16k_mono,
)

FRAME_S = 0.02


def voice(seconds: float, f0: float = 150.0, start: float = 0.0) -> np.ndarray:
    """A voiced-speech stand-in: harmonic series on ``f0`` with a 4 Hz syllable rhythm (webrtcvad: speech)."""
    t = start + np.arange(round(seconds * INPUT_RATE)) / INPUT_RATE
    harmonics = sum(np.sin(2 * np.pi * f0 * k * t) / k for k in range(1, 20))
    return 0.2 * harmonics * (0.6 + 0.4 * np.sin(2 * np.pi * 4 * t))


def silence(seconds: float) -> np.ndarray:
    return np.zeros(round(seconds * INPUT_RATE))


def frames(signal: np.ndarray) -> list[bytes]:
    """Split a mono float signal into Discord frames (same sample in both channels)."""
    pcm = (np.clip(signal, -1, 1) * 32767).astype("<i2")
    stereo = np.repeat(pcm, 2)
    return [stereo[i : i + 2 * FRAME_SAMPLES].tobytes() for i in range(0, len(stereo), 2 * FRAME_SAMPLES)]


def feed(seg: UtteranceSegmenter, user: int, signal: np.ndarray, start: float) -> list[Utterance]:
    out: list[Utterance] = []
    for i, frame in enumerate(frames(signal)):
        out += seg.feed(user, frame, start + i * FRAME_S)
    return out


def dominant_hz(pcm16k: np.ndarray) -> float:
    spectrum = np.abs(np.fft.rfft(pcm16k * np.hanning(len(pcm16k))))
    return float(np.fft.rfftfreq(len(pcm16k), 1 / OUTPUT_RATE)[spectrum.argmax()])


def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64))))


def test_vad_silence_in_a_continuous_stream_ends_the_utterance() -> None:
    # An open microphone keeps sending frames; only VAD can tell the speaker has stopped.
    seg = UtteranceSegmenter()
    out = feed(seg, 1, np.concatenate([voice(1.0), silence(1.5), voice(0.6, start=2.5)]), start=10.0)
    assert len(out) == 1, "the second phrase is still open"
    first = out[0]
    assert first.user_id == 1
    assert first.start == pytest.approx(10.0)
    # VAD hangover keeps a few frames voiced after the sound stops, plus the 200 ms tail.
    assert 11.0 < first.end < 11.5
    assert first.pcm16k.dtype == np.float32
    assert len(first.pcm16k) == pytest.approx((first.end - first.start) * OUTPUT_RATE, abs=2 * 320)
    assert dominant_hz(first.pcm16k) == pytest.approx(150, abs=3)
    # Trailing silence was trimmed rather than sent to STT.
    assert rms(first.pcm16k[:OUTPUT_RATE]) > 0.05
    rest = seg.flush()
    assert len(rest) == 1
    assert rest[0].start == pytest.approx(12.5, abs=0.21)  # may include up to 200 ms of pre-roll


def test_interleaved_speakers_are_kept_apart() -> None:
    # Discord sends nothing during silence, so the gaps here have no frames at all.
    seg = UtteranceSegmenter()
    a1 = frames(voice(1.0, f0=150))
    b = frames(voice(1.5, f0=230))
    a2 = frames(voice(0.8, f0=150))
    events = (
        [(0.0 + i * FRAME_S, 1, f) for i, f in enumerate(a1)]
        + [(0.5 + i * FRAME_S, 2, f) for i, f in enumerate(b)]
        + [(3.0 + i * FRAME_S, 1, f) for i, f in enumerate(a2)]
    )
    done: list[Utterance] = []
    for ts, user, frame in sorted(events, key=lambda e: e[0]):
        done += seg.flush_idle(ts)
        done += seg.feed(user, frame, ts)
    done += seg.flush_idle(10.0)
    assert seg.open_speakers == []
    assert seg.tracked_speakers == 0, "idle speakers must not be kept"

    by_user = {u: [x for x in done if x.user_id == u] for u in (1, 2)}
    assert [(round(x.start, 2), round(x.end, 2)) for x in by_user[1]] == [(0.0, 1.0), (3.0, 3.8)]
    assert [(round(x.start, 2), round(x.end, 2)) for x in by_user[2]] == [(0.5, 2.0)]
    # Each utterance holds its own speaker's voice only.
    assert all(dominant_hz(x.pcm16k) == pytest.approx(150, abs=3) for x in by_user[1])
    assert dominant_hz(by_user[2][0].pcm16k) == pytest.approx(230, abs=3)
    assert len(by_user[2][0].pcm16k) == pytest.approx(1.5 * OUTPUT_RATE, abs=320)


def test_a_late_frame_closes_the_previous_utterance_without_a_timer() -> None:
    seg = UtteranceSegmenter(silence_gap_ms=700)
    assert feed(seg, 7, voice(0.5), start=0.0) == []
    assert seg.open_speakers == [7]
    out = feed(seg, 7, voice(0.5), start=1.3)  # 0.8 s after the last frame ended
    assert [(round(u.start, 2), round(u.end, 2)) for u in out] == [(0.0, 0.5)]


def test_a_short_gap_does_not_split() -> None:
    seg = UtteranceSegmenter(silence_gap_ms=700)
    feed(seg, 7, voice(0.5), start=0.0)
    assert seg.flush_idle(0.9) == []  # 400 ms without frames: a breath, not the end
    feed(seg, 7, voice(0.5), start=0.9)
    out = seg.flush_idle(2.2)
    assert [(round(u.start, 2), round(u.end, 2)) for u in out] == [(0.0, 1.4)]


def test_max_length_splits_a_monologue() -> None:
    seg = UtteranceSegmenter(max_utterance_s=2.0)
    out = feed(seg, 3, voice(5.0), start=0.0)
    out += seg.flush()
    assert [(round(u.start, 2), round(u.end, 2)) for u in out] == [(0.0, 2.0), (2.0, 4.0), (4.0, 5.0)]
    assert [len(u.pcm16k) for u in out] == [2 * OUTPUT_RATE, 2 * OUTPUT_RATE, OUTPUT_RATE]


def test_too_little_speech_is_dropped() -> None:
    seg = UtteranceSegmenter(min_speech_ms=200)
    feed(seg, 4, voice(0.1), start=0.0)  # a cough
    assert seg.flush_idle(5.0) == []
    feed(seg, 4, voice(0.3), start=6.0)
    assert len(seg.flush_idle(10.0)) == 1


def test_a_frame_of_the_wrong_size_is_skipped_with_a_log_line(caplog: pytest.LogCaptureFixture) -> None:
    seg = UtteranceSegmenter()
    good = frames(voice(1.0))
    with caplog.at_level(logging.WARNING, logger="memory.voice.segmenter"):
        for i, frame in enumerate(good):
            seg.feed(9, frame, i * FRAME_S)
            if i == 10:
                assert seg.feed(9, b"\x01\x02" * 17, i * FRAME_S + 0.01) == []
    assert seg.dropped_frames == 1
    assert any("34-byte" in r.getMessage() and "user 9" in r.getMessage() for r in caplog.records)
    (utt,) = seg.flush()
    assert len(utt.pcm16k) == pytest.approx(OUTPUT_RATE, abs=320), "the garbage did not reach the audio"


def test_silence_alone_opens_nothing() -> None:
    seg = UtteranceSegmenter()
    assert feed(seg, 5, silence(3.0), start=0.0) == []
    assert seg.open_speakers == []
    assert seg.flush() == []


def test_without_vad_every_frame_counts_as_speech() -> None:
    seg = UtteranceSegmenter(vad_mode=None)
    feed(seg, 5, silence(0.5), start=0.0)
    (utt,) = seg.flush()
    assert utt.end == pytest.approx(0.5)


def test_decimation_keeps_speech_band_and_removes_what_would_alias() -> None:
    t = np.arange(INPUT_RATE) / INPUT_RATE
    for hz, expect_kept in ((1_000, True), (5_000, True), (12_000, False), (20_000, False)):
        tone = 0.5 * np.sin(2 * np.pi * hz * t)
        out = resample_48k_stereo_to_16k_mono(b"".join(frames(tone)))
        assert len(out) == OUTPUT_RATE
        ratio = rms(out[200:-200]) / rms(tone)
        if expect_kept:
            assert ratio == pytest.approx(1.0, abs=0.03), hz
        else:
            assert ratio < 0.01, f"{hz} Hz would alias into the speech band"


def test_streaming_decimation_equals_whole_buffer() -> None:
    mono = voice(0.5).astype(np.float32)
    stream = Decimator()
    pieces = [stream.push(mono[i : i + FRAME_SAMPLES]) for i in range(0, len(mono), FRAME_SAMPLES)]
    streamed = np.concatenate([*pieces, stream.finish()])
    whole = Decimator()
    at_once = np.concatenate([whole.push(mono), whole.finish()])
    assert len(streamed) == len(mono) // 3
    np.testing.assert_allclose(streamed, at_once, atol=1e-6)


def test_frame_size_matches_discord() -> None:
    assert FRAME_BYTES == 3840  # 960 samples × 2 channels × 2 bytes
