"""``lorekeeper ingest session.wav``: a recorded session through the same path as live voice.

Audio file → the live segmenter (same silence gap, VAD and maximum length) → STT with the campaign's names →
correction stage 1 + L1 + jobs (the session recorder). One file is one speaker; a session recorded per speaker
(Craig, multitrack) is several files, each with its speaker, merged into one session by start time.

Memory stays flat for long files: audio is decoded in blocks and only the text of finished utterances is kept.
The seq of each utterance follows from its start time, so importing the same files again changes nothing.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

import numpy as np

from memory.errors import AlreadyExistsError, quoted
from memory.ingest import COMPARED_LINES, IngestReport, already_imported, refuse_stored_copy
from memory.providers.stt import SpeechToText
from memory.recorder import SessionRecorder, Utterance, Word
from memory.store import CampaignMemory
from memory.text import counted
from memory.transcripts import TRANSCRIPT_SUFFIXES, TRANSCRIPTS_SAID, UNKNOWN_SPEAKER
from memory.voice.audio_files import AUDIO_SAID, SUPPORTED_SUFFIXES, iter_audio_blocks
from memory.voice.prompt import CampaignNames, NameSource, transcribe_heard
from memory.voice.segmenter import FRAME_SAMPLES, INPUT_RATE, OUTPUT_RATE, UtteranceSegmenter
from memory.voice.segmenter import Utterance as Segment

AUDIO_SUFFIXES = SUPPORTED_SUFFIXES
DEFAULT_SPEAKER = UNKNOWN_SPEAKER  # a track without --speaker, as a subtitle cue without a name
_UP = INPUT_RATE // OUTPUT_RATE


def audio_ref(path: Path, ms: int | str) -> str:
    """A line's ref: the file and the milliseconds into it it was said at (``audio:night.wav:12500``)."""
    return f"audio:{path.name}:{ms}"


def is_audio(path: str | Path) -> bool:
    return Path(path).suffix.lower() in AUDIO_SUFFIXES


def unsupported(path: Path) -> str | None:
    """Why ``lorekeeper ingest`` cannot read the file by its type, naming both kinds it reads, or None: a
    recording's .wav or .aac was told it was an unknown transcript format."""
    if is_audio(path) or path.suffix.lower() in TRANSCRIPT_SUFFIXES:
        return None
    return (
        f"{path.name}: unsupported file type {path.suffix!r}: audio is {AUDIO_SAID}; a transcript is {TRANSCRIPTS_SAID}"
    )


@dataclass(frozen=True, slots=True)
class AudioTrack:
    path: Path
    speaker: str = DEFAULT_SPEAKER


def file_digest(path: Path) -> bytes:
    """SHA-256 of a file's bytes: a recording known again under any name."""
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").digest()


def discord_frames(blocks: Iterator[np.ndarray]) -> Iterator[tuple[bytes, float]]:
    """16 kHz mono float blocks as the 20 ms 48 kHz stereo s16le frames the live segmenter takes, with times.

    Sample-and-hold upsampling is enough: the segmenter's decimation filter removes the images it creates, and
    the segmenter's VAD and timing are then exactly those of a live session.
    """
    per_frame = FRAME_SAMPLES // _UP  # 320 samples at 16 kHz = 20 ms
    carry = np.zeros(0, dtype=np.float32)
    index = 0
    for block in blocks:
        samples = np.concatenate((carry, block))
        usable = len(samples) - len(samples) % per_frame
        carry = samples[usable:]
        pcm = (np.clip(samples[:usable], -1.0, 1.0) * 32767.0).astype("<i2")
        stereo = np.repeat(pcm, _UP * 2)  # ×3 in time, ×2 channels (adjacent samples = L, R)
        for frame in stereo.reshape(-1, FRAME_SAMPLES * 2):
            yield frame.tobytes(), index * 0.02
            index += 1
    if len(carry):
        pcm = np.zeros(per_frame, dtype="<i2")
        pcm[: len(carry)] = (np.clip(carry, -1.0, 1.0) * 32767.0).astype("<i2")
        yield np.repeat(pcm, _UP * 2).tobytes(), index * 0.02


async def transcribe_track(
    track: AudioTrack,
    stt: SpeechToText,
    names: NameSource,
    *,
    segmenter: UtteranceSegmenter | None = None,
    on_utterance: Callable[[Utterance], None] | None = None,
    on_position: Callable[[float], None] | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> list[Utterance]:
    """The utterances of one speaker's recording, with times from the start of the file; ``names`` gives each
    utterance its prompt and hears what it said; ``on_position`` hears how many seconds of it were read, after
    each 20 ms of it (the utterances ended there handed out first); ``on_warning`` that the file is not whole."""
    segmenter = segmenter or UtteranceSegmenter()
    out: list[Utterance] = []

    async def emit(segments: list[Segment]) -> None:
        for segment in segments:
            transcript = await transcribe_heard(stt, segment.pcm16k, names, await names.names(segment.start))
            text = transcript.text.strip()
            if not text:
                continue
            names.heard(text, segment.start)
            utterance = Utterance(
                speaker=track.speaker,
                text=text,
                start_s=round(segment.start, 3),
                end_s=round(segment.end, 3),
                words=[Word(word=w.word, confidence=w.confidence) for w in transcript.words],
                ref=audio_ref(track.path, round(segment.start * 1000)),
            )
            out.append(utterance)
            if on_utterance is not None:
                on_utterance(utterance)

    for frame, t in discord_frames(iter_audio_blocks(track.path, warn=on_warning)):
        await emit(segmenter.feed(0, frame, t))
        if on_position is not None:
            on_position(t)
    await emit(segmenter.flush())
    return out


async def _transcribe(
    mem: CampaignMemory,
    tracks: Sequence[AudioTrack],
    stt: SpeechToText,
    on_utterance: Callable[[Utterance], None] | None,
    on_position: Callable[[AudioTrack, float], None] | None,
    names: NameSource | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> list[Utterance]:
    """Every track's utterances, numbered in the order they were said."""
    names = names or CampaignNames(mem)  # one for all tracks: a name one speaker said is in the others' prompt then
    utterances: list[Utterance] = []
    for track in tracks:
        at = functools.partial(on_position, track) if on_position is not None else None
        utterances += await transcribe_track(
            track, stt, names, on_utterance=on_utterance, on_position=at, on_warning=on_warning
        )
    # Speakers' tracks interleave by time; the seq follows that order, so a re-import lands on the same rows.
    utterances.sort(key=lambda u: (u.start_s, u.speaker))
    return [u.model_copy(update={"seq": i}) for i, u in enumerate(utterances, 1)]


async def ingest_audio(
    mem: CampaignMemory,
    tracks: Sequence[AudioTrack],
    stt: SpeechToText,
    *,
    session_title: str | None = None,
    stage2: bool = False,
    on_utterance: Callable[[Utterance], None] | None = None,
    on_position: Callable[[AudioTrack, float], None] | None = None,
    started_at: date | None = None,
    again: bool = False,
    names: NameSource | None = None,
) -> IngestReport:
    """Transcribe ``tracks`` (one speaker each) into one session (default title: the first file's name), played
    at ``started_at`` (default, for a new session: when this import began); refused before anything is written
    if the recording is stored as another session already, unless ``again``. ``names`` gives the prompt (default:
    the campaign's)."""
    if not tracks:
        raise ValueError("no audio files given")
    started = time.perf_counter()
    # a new session's date when none is given: transcribing an evening takes hours, and "now" after it was that
    # much late (the files' times say when they were last copied as often as when they were recorded)
    began = datetime.now(UTC)
    title = session_title or tracks[0].path.stem
    digests = [await asyncio.to_thread(file_digest, track.path) for track in tracks]

    async def refuse_known_recording() -> None:
        stored = await mem.log.recorded_from(title, digests)
        if stored is not None:
            raise already_imported(tracks[0].path.name, stored)

    if not again:  # known by its bytes before speech-to-text, which takes minutes for an evening's recording
        await refuse_known_recording()
    # Imported into this session before: speech-to-text again would take minutes and, with a prompt of names that
    # grew since, write other words, which the session's lines refuse ("a different transcript"): nothing to add
    # but its date, if given again.
    done = None if again else await mem.log.recorded_in(title, digests)
    if done is None and (held := await mem.log.held_from_elsewhere(title, [audio_ref(t.path, "") for t in tracks])):
        # its lines would clash with theirs at line 1 ("a different transcript"): said before speech-to-text,
        # which takes minutes, not after (clip.wav, then clip.ogg of another evening into session "clip")
        raise AlreadyExistsError(
            f"session {quoted(held.title)} holds {counted(held.lines, 'line')} of another recording or transcript: "
            "a different recording needs a session of its own",
            subject="transcript",
        )
    names = names or CampaignNames(mem)
    warnings: list[str] = []  # a file cut short: said in the report, which the summary repeats
    utterances = (
        []
        if done is not None
        else await _transcribe(mem, tracks, stt, on_utterance, on_position, names, warnings.append)
    )
    if done is None and not utterances:
        # silence, or too short to hold a word: no session is started for it, as none is for an empty transcript
        # (an empty one would stay in the session list, unrecapped, and hold the recording as imported)
        return IngestReport(l1_seconds=time.perf_counter() - started, warnings=warnings)
    async with mem.log.importing():
        if not again:
            await refuse_known_recording()  # again: one imported while this one was transcribed
            # a recording imported before its files were remembered, or the same speech re-encoded
            await refuse_stored_copy(mem, tracks[0].path.name, {title: utterances[:COMPARED_LINES]})
        if started_at is None and await mem.log.session_by_title(title) is None:
            started_at = began
        recorder = await SessionRecorder.start(
            mem, title, started_at=started_at, batch_size=500, max_delay_s=1e9, stage2=stage2, cast=names.cast
        )
        await recorder.add_many(utterances)
        await recorder.end()
        await mem.log.add_recordings(
            recorder.session.id, [(d, t.path.name) for d, t in zip(digests, tracks, strict=True)]
        )
    return IngestReport(
        sessions=[recorder.session.title],
        lines=len(utterances) if done is None else done.lines,  # those it holds, as a transcript's re-import reads
        written=recorder.written,
        corrections=recorder.corrections,
        warnings=warnings,
        l1_seconds=time.perf_counter() - started,
    )
