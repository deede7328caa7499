"""Lines speech-to-text failed on in play, heard again into their session.

When speech-to-text fails on an utterance three times, the live pipeline keeps its audio in
``unheard/<campaign>-<session>/<user id>-<ms into the session>.wav`` (:mod:`memory.voice.capture`). Here each file
is transcribed again and written to its own session, under the name its speaker had there and at its time, with
the ref the live line would have had: a file heard before (a run cut short) is not written twice. A file is
deleted once its line is stored; one with no speech in it is kept and counted.
"""

from __future__ import annotations

import asyncio
import re
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from memory.errors import InvalidInputError, quoted
from memory.models import Session
from memory.providers.stt import SpeechToText
from memory.recorder import SessionRecorder, Utterance, Word
from memory.store import CampaignMemory
from memory.transcripts import UNKNOWN_SPEAKER
from memory.voice.audio_files import SAMPLE_RATE, AudioFileError, load_audio
from memory.voice.prompt import CampaignNames, NameSource, transcribe_heard

_FILE = re.compile(r"(?P<user>\d+)-(?P<ms>\d+)\.wav")
_FOLDER = re.compile(r"(?P<campaign>\d+)-(?P<session>\d+)")


def voice_ref(user_id: int | str, ms: int) -> str:
    """A live line's ref: who said it (their Discord id) and the milliseconds into the session it began."""
    return f"voice:{user_id}:{ms}"


def unheard_name(user_id: int | str, ms: int) -> str:
    """An unheard utterance's file: who said it and when, as its line's ref says (``voice_ref``)."""
    return f"{user_id}-{ms:09d}.wav"


def unheard_root(data_dir: Path) -> Path:
    return data_dir / "unheard"


def unheard_dir(data_dir: Path, campaign_id: int, session_id: int) -> Path:
    """Where a session's utterances that speech-to-text failed on are kept as audio files."""
    return unheard_root(data_dir) / f"{campaign_id}-{session_id}"


@dataclass(frozen=True, slots=True)
class UnheardFile:
    path: Path
    user_id: str
    ms: int

    @property
    def ref(self) -> str:
        return voice_ref(self.user_id, self.ms)


def unheard_files(folder: Path) -> list[UnheardFile]:
    """A session's unheard audio, in the order it was said (other files in the folder are not ours: left alone)."""
    found = [
        UnheardFile(path, m["user"], int(m["ms"]))
        for path in (folder.iterdir() if folder.is_dir() else ())
        if (m := _FILE.fullmatch(path.name)) and path.is_file()
    ]
    return sorted(found, key=lambda f: (f.ms, f.user_id))


def unheard_sessions(data_dir: Path, campaign_id: int) -> dict[int, list[UnheardFile]]:
    """The campaign's sessions (by id) with unheard audio, and their files."""
    out: dict[int, list[UnheardFile]] = {}
    root = unheard_root(data_dir)
    for folder in sorted(root.iterdir()) if root.is_dir() else ():
        m = _FOLDER.fullmatch(folder.name)
        if m and int(m["campaign"]) == campaign_id and (files := unheard_files(folder)):
            out[int(m["session"])] = files
    return out


@dataclass
class HeardAgain:
    """What hearing a session's unheard audio again did."""

    written: list[Utterance] = field(default_factory=list)  # the lines added to the session
    known: int = 0  # files whose line the session already had (a run cut short before their files were deleted)
    silent: list[Path] = field(default_factory=list)  # files with no speech heard: kept
    unreadable: list[str] = field(default_factory=list)  # why a file could not be read: kept
    corrections: int = 0


async def hear_again(
    mem: CampaignMemory,
    session: Session,
    files: Sequence[UnheardFile],
    stt: SpeechToText,
    *,
    names: NameSource | None = None,
    on_line: Callable[[Utterance], None] | None = None,
) -> HeardAgain:
    """Transcribe ``files`` (a session's unheard audio) and add their lines to ``session``, after its others in the
    log (as a line that took long to hear is), each at its own time. Refused while the session is recorded: its
    lines are being written."""
    if session.ended_at is None:
        raise InvalidInputError(
            f"session {quoted(session.title)} is still being recorded: hear its unheard lines after /session stop"
        )
    done = HeardAgain()
    held = await mem.log.held_refs(session.id, [f.ref for f in files])
    speakers = await mem.log.speaker_names(session.id)
    told: deque[tuple[float, str]] = deque()  # the session's lines, to give each file's prompt the names said before it
    if names is None:
        names = CampaignNames(mem)
        await names.names()  # the campaign's names, read before lines are heard for them
        told.extend(sorted((line.start_s, line.text) for line in await mem.log.session_entries(session.id)))
    heard: list[tuple[UnheardFile, Utterance]] = []
    for file in files:
        if file.ref in held:
            done.known += 1
            continue
        start_s = file.ms / 1000
        while told and told[0][0] <= start_s:
            at, text = told.popleft()
            names.heard(text, at)
        try:
            pcm = await asyncio.to_thread(load_audio, file.path)
        except AudioFileError as exc:  # one damaged file: the others are still heard
            done.unreadable.append(str(exc))
            continue
        transcript = await transcribe_heard(stt, pcm, names, await names.names(start_s))
        if not (text := transcript.text.strip()):
            done.silent.append(file.path)
            continue
        utterance = Utterance(
            speaker=speakers.get(file.user_id, UNKNOWN_SPEAKER),
            speaker_id=file.user_id,
            text=text,
            start_s=start_s,
            end_s=round(start_s + len(pcm) / SAMPLE_RATE, 3),
            words=[Word(word=w.word, confidence=w.confidence) for w in transcript.words],
            ref=file.ref,
        )
        heard.append((file, utterance))
        if on_line is not None:
            on_line(utterance)
    if heard:
        async with mem.log.importing():  # two runs at once: the second finds the first's lines and adds none
            held |= await mem.log.held_refs(session.id, [u.ref or "" for _, u in heard])
            new = [u for f, u in heard if f.ref not in held]
            recorder = SessionRecorder(mem, session, batch_size=len(heard), max_delay_s=1e9, cast=names.cast)
            await recorder.add_many(new)
            await recorder.end()  # its recap and the rest are written again with the new lines
        done.written, done.known = new, done.known + len(heard) - len(new)
        done.corrections = recorder.corrections
    stored = held | {f.ref for f, _ in heard}
    for file in files:
        if file.ref in stored:
            file.path.unlink(missing_ok=True)  # its line is in the session (another run may have gone first)
    for folder in {f.path.parent for f in files}:
        if not any(folder.iterdir()):
            folder.rmdir()
    return done
