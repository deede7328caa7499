"""Audio files (a recorded session for ``lorekeeper ingest``) decoded to what STT wants: 16 kHz mono float32.

Decoding goes through PyAV (FFmpeg), which faster-whisper already depends on, so every container and codec
FFmpeg knows works; the suffix check only gives a clear message for files that are certainly not audio.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

import av
import numpy as np
from faster_whisper import decode_audio

from memory.text import clock

log = logging.getLogger(__name__)

SAMPLE_RATE = 16_000
SUPPORTED_SUFFIXES = frozenset(
    {".wav", ".ogg", ".oga", ".opus", ".mp3", ".flac", ".m4a", ".webm", ".aac", ".wma", ".aif", ".aiff"}
)


AUDIO_SAID = " ".join(sorted(SUPPORTED_SUFFIXES))


class AudioFileError(ValueError):
    """The file is missing, not a supported audio format, or cannot be decoded; the message names it."""


def _check(path: str | Path) -> Path:
    path = Path(path)
    if path.suffix.lower() not in SUPPORTED_SUFFIXES:
        raise AudioFileError(f"{path}: unsupported audio file type {path.suffix!r} (supported: {AUDIO_SAID})")
    if not path.is_file():
        raise AudioFileError(f"{path}: no such file")
    if not path.stat().st_size:
        raise AudioFileError(f"{path}: the file is empty")
    return path


def _why(exc: av.FFmpegError) -> str:
    """FFmpeg's reason alone: its str() adds the errno and the file name, which the message names already."""
    return exc.strerror or str(exc)


def load_audio(path: str | Path) -> np.ndarray:
    """The whole file as 16 kHz mono float32 in [-1, 1] (about 3.5 MB a minute: use blocks for long files)."""
    path = _check(path)
    try:
        return decode_audio(str(path), sampling_rate=SAMPLE_RATE)
    except (av.FFmpegError, IndexError, ValueError) as exc:  # IndexError: a file without an audio stream
        why = _why(exc) if isinstance(exc, av.FFmpegError) else exc
        raise AudioFileError(f"{path}: cannot decode audio: {why}") from exc


def audio_duration(path: str | Path) -> float | None:
    """The file's length in seconds as its container states it, or None when it does not (or cannot be read:
    decoding it says why)."""
    try:
        with av.open(str(_check(path)), mode="r", metadata_errors="ignore") as container:
            if container.duration is not None:
                return container.duration / av.time_base
            stream = container.streams.audio[0] if container.streams.audio else None
            if stream is not None and stream.duration is not None and stream.time_base is not None:
                return float(stream.duration * stream.time_base)
    except (av.FFmpegError, AudioFileError, IndexError, ValueError):
        pass
    return None


def iter_audio_blocks(
    path: str | Path, block_seconds: float = 30.0, warn: Callable[[str], None] | None = None
) -> Iterator[np.ndarray]:
    """Stream the file as consecutive 16 kHz mono float32 blocks of ``block_seconds`` (the last one shorter);
    ``warn`` hears that the file is cut short or damaged (default: the log).

    A four-hour session is ~0.9 GB as float32; streaming keeps ingest memory flat. Concatenated, the blocks
    equal :func:`load_audio`.
    """
    path = _check(path)
    warn = warn or log.warning
    block = max(1, int(block_seconds * SAMPLE_RATE))
    pending: list[np.ndarray] = []
    pending_len = 0
    try:
        with av.open(str(path), mode="r", metadata_errors="ignore") as container:
            if not container.streams.audio:
                raise AudioFileError(f"{path}: no audio stream")
            resampler = av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
            for frame in _with_flush(_frames(container, path, warn)):
                for out in resampler.resample(frame):
                    samples = out.to_ndarray().reshape(-1)
                    pending.append(samples)
                    pending_len += len(samples)
                    while pending_len >= block:
                        joined = np.concatenate(pending)
                        yield joined[:block].astype(np.float32) / 32768.0
                        pending, pending_len = [joined[block:]], len(joined) - block
    except av.FFmpegError as exc:
        raise AudioFileError(f"{path}: cannot decode audio: {_why(exc)}") from exc
    if pending_len:
        yield np.concatenate(pending).astype(np.float32) / 32768.0
    if (held := wav_cut_short(path)) is not None:  # FFmpeg reads a cut WAV to its end without a word
        warn(f"{path.name} is cut short: its audio up to {clock(held)} is imported")


def wav_cut_short(path: Path) -> float | None:
    """The seconds of audio a WAV file holds when it holds less than its header says (a copy stopped part way),
    else None (whole, not a WAV, or a header of a recorder that never wrote the size)."""
    try:
        with path.open("rb") as f:
            riff, _, form = struct.unpack("<4sI4s", f.read(12))
            if riff != b"RIFF" or form != b"WAVE":
                return None
            byte_rate = 0
            while len(chunk := f.read(8)) == 8:
                kind, size = struct.unpack("<4sI", chunk)
                if kind == b"fmt ":
                    byte_rate = struct.unpack("<HHII", f.read(12))[3]
                    f.seek(size - 12 + size % 2, 1)
                elif kind == b"data":
                    held = path.stat().st_size - f.tell()
                    unknown = size in (0, 0xFFFFFFFF)  # streamed: the size left for the end and never written
                    return held / byte_rate if byte_rate and not unknown and held < size else None
                else:
                    f.seek(size + size % 2, 1)
    except (OSError, struct.error):
        pass
    return None


def _frames(container: av.container.InputContainer, path: Path, warn: Callable[[str], None]) -> Iterator[av.AudioFrame]:
    """The audio frames decoded; a damaged packet is skipped, and a file cut short ends where it breaks off (a copy
    stopped part way: the FLAC of a whole evening, truncated, raised at its end and lost the hours before it), said
    to ``warn``. A file nothing of which decodes is refused."""
    decoded = damaged = 0
    end = cut_at = 0.0
    error: av.FFmpegError | None = None
    packets = container.demux(audio=0)
    while True:
        try:
            packet = next(packets)
        except StopIteration:
            break
        except av.FFmpegError as exc:  # the container itself breaks off
            error, cut_at = exc, end
            break
        try:
            frames = packet.decode()
        except av.FFmpegError as exc:
            damaged, error, cut_at = damaged + 1, exc, end
            continue
        for frame in frames:
            if frame is not None:
                decoded += 1
                if frame.time is not None and frame.sample_rate:
                    end = frame.time + frame.samples / frame.sample_rate
                yield frame
    if error is not None:
        if not decoded:
            raise error
        if cut_at == end:  # nothing decoded after it: the file breaks off there
            warn(f"{path.name} is cut short ({_why(error)}): its audio up to {clock(end)} is imported")
        else:
            warn(f"{path.name} is damaged ({_why(error)}): {damaged} damaged parts of it are skipped")


def _with_flush(frames: Iterator[av.AudioFrame]) -> Iterator[av.AudioFrame | None]:
    """The decoded frames, then ``None``, which makes the resampler hand out the samples it still buffers."""
    yield from frames
    yield None
