"""Audio file decoding: every supported format comes out as the same 16 kHz mono float32 signal."""

from __future__ import annotations

import wave
from pathlib import Path

import av
import numpy as np
import pytest

from memory.voice.audio_files import AudioFileError, iter_audio_blocks, load_audio

RATE = 44_100  # deliberately not 16 kHz, so resampling is exercised
TONE_HZ = 440


def tone(seconds: float = 2.0) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    return (0.5 * np.sin(2 * np.pi * TONE_HZ * t)).astype(np.float32)


def write_wav(path: Path, signal: np.ndarray) -> None:
    stereo = np.repeat((signal * 32767).astype("<i2"), 2)
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(2)
        wav.setsampwidth(2)
        wav.setframerate(RATE)
        wav.writeframes(stereo.tobytes())


def write_encoded(path: Path, signal: np.ndarray, codec: str) -> None:
    """Encode with PyAV (the same FFmpeg the decoder uses), as a recorder would produce the file."""
    with av.open(str(path), "w") as out:
        stream = out.add_stream(codec, rate=RATE if codec != "libopus" else 48_000)
        stream.layout = "mono"
        resampler = av.AudioResampler(format=stream.format.name, layout="mono", rate=stream.rate)
        frame = av.AudioFrame.from_ndarray(signal.reshape(1, -1), format="flt", layout="mono")
        frame.sample_rate = RATE
        for chunk in [*resampler.resample(frame), *resampler.resample(None)]:
            out.mux(stream.encode(chunk))
        out.mux(stream.encode(None))


@pytest.mark.parametrize(
    ("suffix", "codec"),
    [(".wav", None), (".flac", "flac"), (".ogg", "libopus"), (".mp3", "mp3"), (".aac", "aac"), (".aiff", "pcm_s16be")],
)
def test_formats_decode_to_16k_mono(tmp_path: Path, suffix: str, codec: str | None) -> None:
    path = tmp_path / f"session{suffix}"
    if codec is None:
        write_wav(path, tone())
    else:
        write_encoded(path, tone(), codec)
    audio = load_audio(path)
    assert audio.dtype == np.float32 and audio.ndim == 1
    assert len(audio) == pytest.approx(2 * 16_000, abs=0.1 * 16_000)  # lossy codecs pad a little
    middle = audio[4000:-4000]
    assert np.sqrt(np.mean(middle**2)) == pytest.approx(0.5 / np.sqrt(2), rel=0.1)
    spectrum = np.abs(np.fft.rfft(middle))
    assert np.fft.rfftfreq(len(middle), 1 / 16_000)[spectrum.argmax()] == pytest.approx(TONE_HZ, abs=2)


def test_blocks_concatenate_to_the_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "long.flac"
    write_encoded(path, tone(5.0), "flac")
    blocks = list(iter_audio_blocks(path, block_seconds=2.0))
    assert [len(b) for b in blocks] == [32_000, 32_000, 16_000]
    np.testing.assert_array_equal(np.concatenate(blocks), load_audio(path))


def test_bad_files_name_the_file(tmp_path: Path) -> None:
    not_audio = tmp_path / "notes.wav"
    not_audio.write_text("the dragon sleeps")
    with pytest.raises(AudioFileError, match=r"notes\.wav: cannot decode audio"):
        load_audio(not_audio)
    with pytest.raises(AudioFileError) as refused:
        list(iter_audio_blocks(not_audio))
    # FFmpeg's reason, without its errno ("[Errno 1094995529] …") and the file named twice
    assert str(refused.value) == f"{not_audio}: cannot decode audio: Invalid data found when processing input"
    (empty := tmp_path / "empty.wav").write_bytes(b"")
    for read in (load_audio, lambda p: list(iter_audio_blocks(p))):
        with pytest.raises(AudioFileError, match=r"^.*empty\.wav: the file is empty$"):
            read(empty)
    with pytest.raises(AudioFileError, match=r"missing\.mp3: no such file"):
        load_audio(tmp_path / "missing.mp3")
    with pytest.raises(AudioFileError, match=r"unsupported audio file type '\.txt'"):
        load_audio(tmp_path / "session.txt")


def test_a_file_cut_short_gives_its_audio_up_to_there_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A FLAC of an evening whose copy stopped part way raised "cannot decode audio" at its end: the import failed
    after speech-to-text of everything before it, which was lost. What is there is used now, and the log says the
    file is cut short."""
    whole = tmp_path / "whole.flac"
    write_encoded(whole, np.concatenate([tone(10.0), 0.5 * tone(10.0)]), "flac")
    cut = tmp_path / "evening.flac"
    cut.write_bytes(whole.read_bytes()[: int(whole.stat().st_size * 0.6) + 7])
    with caplog.at_level("WARNING", logger="memory.voice.audio_files"):
        seconds = sum(len(b) for b in iter_audio_blocks(cut, block_seconds=5.0)) / 16_000
    assert 8 < seconds < 19
    [said] = [r.getMessage() for r in caplog.records]
    assert said.startswith("evening.flac is cut short (") and said.endswith(
        f"its audio up to 0:{int(seconds):02} is imported"
    )
    wav = tmp_path / "whole.wav"
    write_wav(wav, tone(10.0))
    (cut_wav := tmp_path / "evening.wav").write_bytes(wav.read_bytes()[: int(wav.stat().st_size * 0.6)])
    caplog.clear()
    with caplog.at_level("WARNING", logger="memory.voice.audio_files"):
        seconds = sum(len(b) for b in iter_audio_blocks(cut_wav)) / 16_000
        list(iter_audio_blocks(wav))  # whole: nothing said
    assert 5.5 < seconds < 6.5
    assert [r.getMessage() for r in caplog.records] == ["evening.wav is cut short: its audio up to 0:05 is imported"]
    (garbage := tmp_path / "noise.flac").write_bytes(whole.read_bytes()[:42] + bytes(range(256)) * 64)
    with pytest.raises(AudioFileError, match=r"noise\.flac: cannot decode audio"):
        list(iter_audio_blocks(garbage))  # nothing of it decodes: still refused
