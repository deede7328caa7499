"""Transcript files → utterances: JSON lines, "Speaker: text" lines (after an optional start time), CRD3 episode
JSON, and subtitles (SubRip .srt, WebVTT .vtt: one turn per cue, read whole by pysubs2).

A bad line never stops an import: it is reported (file and line, what is wrong) and skipped. A file in another
encoding than UTF-8 (or UTF-16/32 with a byte-order mark) is refused whole, before anything is stored: skipping
most of its lines would leave a session with holes. Every utterance gets a ``seq`` from its line (or turn)
number, so importing the same file again lands on the same L1 rows.
"""

from __future__ import annotations

import codecs
import html
import io
import itertools
import json
import math
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeGuard

import pysubs2
from pydantic import ValidationError
from pysubs2.formats.subrip import SubripFormat
from pysubs2.formats.webvtt import WebVTTFormat
from pysubs2.time import timestamp_to_ms

from memory.errors import describe_value, validation_problems
from memory.recorder import Utterance
from memory.text import MAX_TEXT_BYTES, session_title, without_bidi_controls

MAX_LINE_BYTES = MAX_TEXT_BYTES  # a line holds one utterance
#: A CRD3 episode is one JSON document, read whole (about 5 times its size in memory); the real ones are at most
#: about 1 MB.
MAX_CRD3_BYTES = 20 * 1024 * 1024
#: A subtitle file is read whole too (pysubs2 parses it at once); a four-hour session's captions are about 1 MB.
MAX_SUBTITLE_BYTES = 20 * 1024 * 1024
#: Who said a line no one is named for: a subtitle cue without a voice or a "Name:" (as audio without --speaker).
UNKNOWN_SPEAKER = "Unknown speaker"
#: Read besides UTF-8, by their byte-order mark (UTF-32's first: it starts like UTF-16's).
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
#: This many lines that are not UTF-8 (and 1 in 100) are a file saved in another encoding, unless more of its
#: lines hold UTF-8 beyond ASCII: a few broken lines of a UTF-8 file are skipped one by one instead (unless they
#: are all it has).
_NOT_UTF8_LINES = 5


@dataclass(frozen=True, slots=True)
class Skipped:
    line: int
    reason: str

    def message(self, path: Path) -> str:
        return f"{path.name}:{self.line}: skipped: {self.reason}"


@dataclass(frozen=True, slots=True)
class Line:
    session: str | None  # the line's own session title (JSON lines), else None: the caller's session
    utterance: Utterance


#: What ``read_transcript`` reads, as its error says them.
TRANSCRIPT_SUFFIXES = frozenset({".jsonl", ".txt", ".json", ".srt", ".vtt"})
TRANSCRIPTS_SAID = ".jsonl, .txt, CRD3 .json, or subtitles .srt or .vtt"


class TranscriptError(ValueError):
    """The file as a whole cannot be read (unknown format, not the JSON it claims to be)."""


def read_transcript(path: str | Path) -> Iterator[Line | Skipped]:
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return _jsonl(path, _encoding(path))
    if suffix == ".txt":
        encoding = _encoding(path)
        _refuse_campaign_file(path, encoding)
        return _txt(path, encoding)
    if suffix == ".json":
        return _crd3(path)
    if suffix in (".srt", ".vtt"):
        return iter(_subtitles(path))  # read whole here: a file refused is refused before anything is stored
    raise TranscriptError(f"{path.name}: unknown transcript format {suffix!r} (use {TRANSCRIPTS_SAID})")


#: A campaign file's top-level keys, alone on their line: no transcript line says them so.
_CAMPAIGN_KEY = re.compile(r"(entities|relationships):\s*(#.*)?")


def _refuse_campaign_file(path: Path, encoding: str) -> None:
    """A campaign file saved as .txt read as a transcript: each entity became a line of speaker "- {name" (13 lines
    of nonsense for the README's example, undone only by deleting the session). Its first 200 lines tell."""
    for number, text in itertools.islice(_raw_lines(path, encoding), 200):
        if isinstance(text, str) and _CAMPAIGN_KEY.fullmatch(text):
            raise TranscriptError(
                f"{path.name}: line {number} says {text.strip()!r}: this is a campaign file, not a transcript; "
                f"load it with `lorekeeper campaign load {path.name}` (or /campaign load on Discord)"
            )


def _encoding(path: Path) -> str:
    """The file's encoding: UTF-16 or UTF-32 by its byte-order mark, else UTF-8; ``TranscriptError`` if the file
    is not in it."""
    with path.open("rb") as fh:
        start = fh.read(4)
        encoding = next((enc for bom, enc in _BOMS if start.startswith(bom)), "utf-8")
        fh.seek(0)
        if encoding != "utf-8":
            decoder = codecs.getincrementaldecoder(encoding)()
            try:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    decoder.decode(block)
                decoder.decode(b"", final=True)
            except UnicodeDecodeError as exc:
                raise TranscriptError(
                    f"{path.name} is not valid {encoding.upper()} text ({exc.reason}): save it as UTF-8"
                ) from None
            return encoding
        lines = not_utf8 = binary = utf8 = 0
        for raw in fh:
            if not raw.strip(b"\x00 \t\r\n"):
                continue
            lines += 1
            if b"\x00" in raw:  # binary data, or UTF-16 without a byte-order mark (told apart below)
                not_utf8 += 1
                binary += 1
            elif not raw.isascii():
                try:
                    raw.decode("utf-8")
                    utf8 += 1
                except UnicodeDecodeError:
                    not_utf8 += 1
                    binary += _binary(raw.decode("cp1252", "replace"))
    # A file none of whose lines is UTF-8 is refused however short: skipping each would read nothing at all.
    if not_utf8 and (
        not_utf8 == lines or (not_utf8 >= _NOT_UTF8_LINES and not_utf8 > utf8 and not_utf8 * 100 >= lines)
    ):
        if _utf16_without_bom(path):
            looks = "UTF-16"
        elif binary * 2 > not_utf8:
            raise TranscriptError(
                f"{path.name} is not a text file ({binary:,} of {lines:,} lines are binary data): give a transcript "
                "saved as UTF-8 text"
            )
        else:
            looks = "Latin-1"
        raise TranscriptError(
            f"{path.name} is not UTF-8 text (it looks like {looks}: {not_utf8:,} of {lines:,} lines are not UTF-8): "
            "save it as UTF-8"
        )
    return encoding


def _utf16_without_bom(path: Path) -> bool:
    """Whether the file's start reads as UTF-16 text (little- or big-endian) in any script: lines without control
    characters. Random bytes do not: one 16-bit unit in 32 is half a surrogate pair, one in 65,536 a newline; nor
    does 8-bit text, which has no NUL byte to make a newline."""
    with path.open("rb") as fh:
        sample = fh.read(1 << 16)
    for encoding in ("utf-16-le", "utf-16-be"):
        try:
            text = codecs.getincrementaldecoder(encoding)().decode(sample)  # not final: the sample may end mid-pair
        except UnicodeDecodeError:
            continue
        if "\n" in text and not any(_binary(line) for line in text.split("\n")):
            return True
    return False


def _raw_lines(path: Path, encoding: str) -> Iterator[tuple[int, str | Skipped]]:
    """Lines decoded one by one (binary mode, so one bad line cannot spoil the decoding of the rest)."""
    with path.open("rb") as fh:
        # UTF-16/32 (checked whole by _encoding) is read as text and handed on as UTF-8, as a UTF-8 file would be.
        lines = fh if encoding == "utf-8" else (t.encode() for t in io.TextIOWrapper(fh, encoding, newline="\n"))
        for number, raw in enumerate(lines, start=1):
            if len(raw) > MAX_LINE_BYTES:
                yield number, Skipped(number, f"line is {len(raw):,} bytes, longer than {MAX_LINE_BYTES:,}")
                continue
            try:
                # Editors on Windows start a UTF-8 file with a byte-order mark: not part of the first speaker's name.
                text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                yield number, Skipped(number, f"not valid UTF-8 (byte {exc.start + 1})")
                continue
            text = text.rstrip("\r\n")
            if _binary(text):
                yield number, Skipped(number, "binary data, not text")
                continue
            yield number, text


def _binary(text: str) -> bool:
    control = sum(1 for c in text if unicodedata.category(c) == "Cc" and c not in "\t")
    return "\x00" in text or control > max(2, len(text) // 50)


def _jsonl(path: Path, encoding: str) -> Iterator[Line | Skipped]:
    origin: list[datetime] = []  # the file's first ISO 8601 time: the session's second 0
    for number, text in _raw_lines(path, encoding):
        if isinstance(text, Skipped):
            yield text
            continue
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            yield Skipped(number, f"not valid JSON ({exc.msg} at column {exc.colno})")
            continue
        if not isinstance(obj, dict):
            yield Skipped(number, "expected a JSON object with speaker and text")
            continue
        problem = _check_fields(obj)
        if problem:
            yield Skipped(number, problem)
            continue
        try:
            words = obj.get("words")
            if isinstance(words, list):  # as given, for Word to refuse a word that is no text, not to make one up
                words = [
                    {
                        "word": w.get("word"),
                        "confidence": _number(w.get("confidence", w.get("probability")), f"words.{i}.confidence"),
                    }
                    if isinstance(w, dict)
                    else w
                    for i, w in enumerate(words)
                ]
            utterance = Utterance(
                speaker=obj["speaker"].strip(),
                text=obj["text"].strip(),
                speaker_id=_label(obj, "speaker_id"),
                start_s=_seconds(obj.get("start"), "start", origin) or 0.0,
                end_s=_seconds(obj.get("end"), "end", origin),
                words=None if words == [] else words,  # {} or false is no list of words: Utterance refuses it
                ref=_label(obj, "ref") or f"{path.name}:{number}",
                seq=number,
            )
            # a session's title is refused with a bidi control, as a name is; a file's lines name it, as spoken
            # text: the control is dropped there, not each of its lines skipped
            title = _label(obj, "session")
            session = session_title(without_bidi_controls(title)) if title is not None else None
        except (ValidationError, TypeError, ValueError) as exc:
            problem = validation_problems(exc) if isinstance(exc, ValidationError) else str(exc).splitlines()[0]
            yield Skipped(number, f"invalid field: {problem}")
            continue
        yield Line(session, utterance)


def _check_fields(obj: dict[str, object]) -> str | None:
    for key in ("speaker", "text"):
        value = obj.get(key)
        if not isinstance(value, str) or not value.strip():
            return f"missing or empty {key!r}"
    return None


def _label(obj: dict[str, object], key: str) -> str | None:
    """``ref``, ``speaker_id`` or ``session``: text, or a number (an id); anything else is a mistake, not a name."""
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise ValueError(f"{key}: must be text or a number, not {describe_value(value)}")


def _number(value: object, field: str) -> float | None:
    """A time or a confidence: a JSON number or null. ``true`` is no 1.0 and ``[]`` no 0: a value of the wrong kind
    is a mistake to report, not a number to make up."""
    if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
        return value
    raise ValueError(f"{field}: must be a number, not {describe_value(value)}")


#: A time into the session as exported transcripts write it: 1:02:03, 02:03, 1:02:03.5, 01:02:03,250.
_CLOCK = re.compile(r"(?:(?P<h>\d+):)?(?P<m>[0-5]?\d):(?P<s>[0-5]\d(?:[.,]\d+)?)")


def _seconds(value: object, field: str, origin: list[datetime]) -> float | None:
    """A JSON line's ``start`` or ``end`` in seconds into the session: a number, text of one, ``hh:mm:ss`` (or
    ``mm:ss``), or an ISO 8601 date and time, counted from the file's first one (``origin``, set by it)."""
    if not isinstance(value, str):
        return _number(value, field)
    text = value.strip()
    if clock := _CLOCK.fullmatch(text):
        hours, minutes, seconds = clock.group("h", "m", "s")
        return int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds.replace(",", "."))
    try:
        number = float(text)
    except ValueError:
        pass
    else:
        if math.isfinite(number):
            return number
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"{field}: must be seconds, hh:mm:ss or an ISO 8601 time, not {describe_value(value)}"
        ) from None
    if when.tzinfo is None:  # one file's times are all local or all zoned: naive ones compare as UTC
        when = when.replace(tzinfo=UTC)
    if not origin:
        origin.append(when)
    return (when - origin[0]).total_seconds()  # before the first line's: negative, refused as any such time


def _txt(path: Path, encoding: str) -> Iterator[Line | Skipped]:
    for number, text in _raw_lines(path, encoding):
        if isinstance(text, Skipped):
            yield text
            continue
        if not text.strip():
            continue
        start_s = 0.0
        if stamp := _TIMESTAMP.match(text):
            hours, minutes, seconds = stamp.group("h", "m", "s")
            start_s = int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds)
            text = text[stamp.end() :]
        speaker, sep, said = text.partition(":")
        if not sep or not speaker.strip() or not said.strip() or len(speaker) > 100:
            yield Skipped(number, 'expected "Speaker: text" or "[hh:mm:ss] Speaker: text"')
            continue
        utterance = Utterance(
            speaker=speaker.strip(), text=said.strip(), start_s=start_s, ref=f"{path.name}:{number}", seq=number
        )
        yield Line(None, utterance)


#: A start time before the speaker, as recorders and subtitle tools write it: [01:02:03], [02:03.5], 1:02:03.
_TIMESTAMP = re.compile(r"\s*(\[)?(?:(?P<h>\d+):)?(?P<m>[0-5]?\d):(?P<s>[0-5]\d(?:\.\d+)?)(?(1)\]\s*|\s+)")


#: Speakers that are a role, not a name: kept in capitals ("DM", never "Dm").
_CRD3_ROLES = frozenset({"DM", "GM"})


def _crd3_name(name: str) -> str:
    """CRD3 writes names in capitals ("MATT", "JO"), other transcripts as names ("Jo"): the same speaker is one
    name whatever file they come from. A role stays in capitals, and a name not all in capitals is already written
    as meant ("McKenna")."""
    name = name.strip()
    return name.title() if name.isupper() and name not in _CRD3_ROLES else name


def _texts(value: object) -> TypeGuard[list[str]]:
    """A list of text, not text: a string would be taken letter by letter ("L & A & U & R & A")."""
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def _crd3(path: Path) -> Iterator[Line | Skipped]:
    if (size := path.stat().st_size) > MAX_CRD3_BYTES:
        raise TranscriptError(
            f"{path.name} is {size:,} bytes; a CRD3 episode is read whole, so at most {MAX_CRD3_BYTES:,} (real ones "
            "are about 1 MB): split its TURNS into several files, or write it as .jsonl, which is read line by line"
        )
    try:
        data = json.loads(path.read_bytes())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TranscriptError(f"{path.name}: not valid JSON: {exc}") from None
    except RecursionError:
        raise TranscriptError(f"{path.name}: not valid JSON: nested too deeply") from None
    turns = data.get("TURNS") if isinstance(data, dict) else None
    if not isinstance(turns, list):
        raise TranscriptError(f'{path.name}: expected the CRD3 episode format {{"TURNS": [...]}}')
    for index, turn in enumerate(turns, start=1):
        names, said = (turn.get("NAMES"), turn.get("UTTERANCES")) if isinstance(turn, dict) else (None, None)
        if not (_texts(names) and _texts(said)):
            yield Skipped(index, "expected NAMES and UTTERANCES, each a list of text")
            continue
        speaker = " & ".join(_crd3_name(n) for n in names if n.strip())
        text = " ".join(u.strip() for u in said).strip()
        if not text or not speaker:
            yield Skipped(index, "empty turn")
            continue
        number = turn.get("NUMBER", index - 1)
        if isinstance(number, bool) or not isinstance(number, int):
            yield Skipped(index, f"invalid field: NUMBER: must be a whole number, not {describe_value(number)}")
            continue
        try:
            utterance = Utterance(speaker=speaker, text=text, ref=f"turn {number}", seq=index)
        except ValidationError as exc:
            yield Skipped(index, f"invalid field: {validation_problems(exc)}")
            continue
        yield Line(None, utterance)


#: Subtitle formats, by pysubs2's name: their parser and what a cue's timing line looks like (two times).
_SUBTITLE_FORMATS = {"srt": SubripFormat, "vtt": WebVTTFormat}
#: A time inside a cue's text (YouTube's word timings, ``<00:00:01.500>``): would make a line of two a cue's timing.
_INLINE_TIME = re.compile(r"<(?:\d+:)?\d{1,2}:\d{2}[.,]\d{1,3}>")
#: An SRT time with its hours all read: pysubs2's takes two digits of them, so ``100:00:01,000`` was at one second.
_SRT_TIME = re.compile(r"(\d+):(\d{1,2}):(\d{1,2})[.,](\d{1,3})")
#: A WebVTT voice: ``<v Matt>``, ``<v.loud Matt Mercer>``; its name up to the ``>``.
_VOICE = re.compile(r"<v(?:\.[^\s>]*)?\s+([^>]*)>")
#: Formatting: HTML-like tags (``<i>``, ``<c.yellow>``, ``</v>``) and SubStation overrides (``{\i1}``, ``{\an8}``).
_TAGS = re.compile(r"<[^>]*>|\{\\[^}]*\}")
#: A caption's speaker before its words: "MATT: Roll.", "- Laura Bailey: Yes!", ">> SAM: No." (up to four words).
_NAME_PREFIX = re.compile(
    r"(?:(?:[-–—]|>>)\s*)?(?P<name>[^\W\d_][\w'’.&-]*(?: [^\W\d_][\w'’.&-]*){0,3})\s*:\s+(?P<text>\S.*)"
)

#: A caption's mark of a new speaker, without a name: "- Yes!", ">> Yes!".
_DASH = re.compile(r"^(?:[-–—]|>>)\s+")


#: A cue as read: its number, its timing line's, its times, and its lines each after its WebVTT voice (if any).
_Cue = tuple[int, int, pysubs2.SSAEvent, list[tuple[str | None, str]]]


def _named(said: str) -> re.Match[str] | None:
    """The "Name:" a cue's line starts with, if a capitalised one."""
    prefix = _NAME_PREFIX.fullmatch(said)
    return prefix if prefix and prefix["name"][0].isupper() else None


def _subtitles(path: Path) -> list[Line | Skipped]:
    """An .srt or .vtt file, one turn per cue (or per voice or "Name:" in it), its start time the cue's. A cue that
    holds a line not UTF-8, binary or too long is skipped whole, named by that line; empty cues are dropped."""
    texts, bad = _subtitle_texts(path)
    cues, cue_lines = _subtitle_cues(path, texts)
    ends = [*cue_lines[1:], len(texts) + 1]
    items = _cue_items(path, cues, ends, bad)
    items.extend((n, skipped) for n, skipped in bad.items())  # outside any cue (the header): said, nothing lost
    items.sort(key=lambda item: item[0])
    return [item for _, item in items]


def _subtitle_texts(path: Path) -> tuple[list[str], dict[int, Skipped]]:
    """A subtitle file's lines without inline times ("" for a line that cannot be read), and those that cannot
    be, by line number."""
    if (size := path.stat().st_size) > MAX_SUBTITLE_BYTES:
        raise TranscriptError(
            f"{path.name} is {size:,} bytes; a subtitle file is read whole, so at most {MAX_SUBTITLE_BYTES:,} (a "
            "four-hour session's is about 1 MB): split it into several files"
        )
    encoding = _encoding(path)
    texts: list[str] = []
    bad: dict[int, Skipped] = {}
    for number, text in _raw_lines(path, encoding):
        if isinstance(text, Skipped):
            bad[number] = text
            texts.append("")
        else:
            texts.append(_INLINE_TIME.sub("", text))
    return texts, bad


def _subtitle_cues(path: Path, texts: list[str]) -> tuple[list[_Cue], list[int]]:
    """The cues of a subtitle file's lines (SRT or WebVTT, whichever has timing lines), without rolled-over
    lines, and the line number of each cue's timing line."""
    first = next((t.strip() for t in texts if t.strip()), "")
    preferred = "vtt" if first.startswith("WEBVTT") or path.suffix.lower() == ".vtt" else "srt"
    for fmt in (preferred, "srt" if preferred == "vtt" else "vtt"):
        timing = _SUBTITLE_FORMATS[fmt].TIMESTAMP
        cue_lines = [n for n, t in enumerate(texts, start=1) if len(timing.findall(t)) == 2]
        if cue_lines:
            break
    else:
        raise TranscriptError(
            f"{path.name}: no subtitle cues in it (a cue starts with its times, `00:01:02,500 --> 00:01:05,000`): "
            "not an SRT or WebVTT file"
        )
    try:
        events = pysubs2.SSAFile.from_string("\n".join(texts) + "\n", format_=fmt, keep_html_tags=True).events
    except Exception as exc:  # pysubs2 checks nothing of its own: whatever it trips on is a file it cannot read
        raise TranscriptError(f"{path.name}: not a readable {fmt.upper()} file ({exc})") from None
    if len(events) != len(cue_lines):  # the same timing lines make its cues: a mismatch is a pysubs2 unknown to us
        raise TranscriptError(f"{path.name}: {len(events)} cues read but {len(cue_lines)} timing lines found")
    cues: list[_Cue] = []
    for index, (line, event) in enumerate(zip(cue_lines, events, strict=True), start=1):
        text = event.text.replace("\\h", " ")
        if fmt == "vtt":  # a blank line ends a WebVTT cue: what follows is a NOTE or the next cue's identifier
            text = text.split("\\N\\N", 1)[0]
        if fmt == "srt" and len(stamps := _SRT_TIME.findall(texts[line - 1])) == 2:
            event.start, event.end = (timestamp_to_ms(stamp) for stamp in stamps)
        cues.append((index, line, event, _cue_parts(text.replace("\\N", "\n"))))
    return _without_rolled_lines(cues), cue_lines


def _cue_items(
    path: Path, cues: list[_Cue], ends: list[int], bad: dict[int, Skipped]
) -> list[tuple[int, Line | Skipped]]:
    """Each cue's turns as lines (or the cue skipped, for a line in it that cannot be read: taken out of
    ``bad``), by line number; ``ends``: the line after each cue."""
    prefixed = sum(1 for *_, parts in cues if any(_named(said) for _, said in parts))
    # "Name:" is the file's way (in a tenth of its cues, at least two), not one cue's "Look: the door"
    names = prefixed >= min(2, len(cues)) and prefixed * 10 >= len(cues)
    items: list[tuple[int, Line | Skipped]] = []
    speaker: str | None = None
    seq = 0
    for (index, line, event, parts), end in zip(cues, ends, strict=True):
        spoiled = next((bad.pop(n) for n in range(line + 1, end) if n in bad), None)
        if spoiled is not None:
            items.append((spoiled.line, Skipped(spoiled.line, f"{spoiled.reason}: cue {index} skipped")))
            continue
        for turn, (named, said) in enumerate(_cue_turns(parts, names)):
            # a caption names who speaks when that changes: an unnamed cue after a named one is theirs too
            speaker = _crd3_name(named) if named else speaker
            # numbered from the cue's timing line, as a .txt line by its own: a cue skipped (a broken line) keeps its
            # numbers, so the file mended and imported again fills them, not clashes with the cues after it
            seq = max(line + turn, seq + 1)
            try:
                utterance = Utterance(
                    speaker=speaker or UNKNOWN_SPEAKER,
                    text=said,
                    start_s=event.start / 1000,
                    end_s=event.end / 1000 if event.end >= event.start else None,
                    ref=f"{path.name}:{line}",
                    seq=seq,
                )
            except ValidationError as exc:
                items.append((line, Skipped(line, f"cue {index}: invalid field: {validation_problems(exc)}")))
                continue
            items.append((line, Line(None, utterance)))
    return items


def _without_rolled_lines(cues: list[_Cue]) -> list[_Cue]:
    """The cues without what they roll over from the one before, in a file that rolls: YouTube's automatic captions
    show each line twice (a cue starts with the previous one's last line) and again alone in a 10 ms cue, so every
    phrase was stored three times. A file rolls when most of its cues start so; in another, a line said twice
    ("No." "No.") is what was said."""
    said = [[s for _, s in parts if s] for *_, parts in cues]
    starts = [n for n in range(1, len(said)) if said[n] and said[n - 1] and said[n][0] == said[n - 1][-1]]
    if len(starts) < 2 or len(starts) * 2 < sum(1 for lines in said if lines):
        return cues
    kept = []
    for n, (index, line, event, parts) in enumerate(cues):
        before = said[n - 1] if n else []
        rolled = next((k for k in range(min(len(before), len(said[n])), 0, -1) if said[n][:k] == before[-k:]), 0)
        keep = [i for i, (_, s) in enumerate(parts) if s]  # the indexes of the parts that say something, in order
        dropped = set(keep[:rolled])
        kept.append((index, line, event, [part for i, part in enumerate(parts) if i not in dropped]))
    return kept


def _cue_parts(text: str) -> list[tuple[str | None, str]]:
    """A cue's lines, each after the WebVTT voice it is said in (None before any), formatting taken out."""
    parts: list[tuple[str | None, str]] = []
    for i, piece in enumerate(_VOICE.split(text)):  # text, voice, text, voice, text…
        if i % 2:
            parts.append((_clean(piece) or None, ""))  # a voice starts a turn even if its text is on the next line
            continue
        for raw in piece.split("\n"):
            if said := _clean(raw):
                parts.append((None, said))
    return parts


def _cue_turns(parts: list[tuple[str | None, str]], names: bool) -> list[tuple[str | None, str]]:
    """A cue's turns: one per voice, and per "Name:" line when the file names speakers so; else the cue is one."""
    turns: list[tuple[str | None, list[str]]] = [(None, [])]
    for voice, said in parts:
        if voice is not None:
            turns.append((voice, []))
        if not said:
            continue
        if names and (prefix := _named(said)):
            turns.append((prefix["name"], [prefix["text"]]))
        else:
            turns[-1][1].append(_DASH.sub("", said) if names else said)
    return [(speaker, " ".join(lines)) for speaker, lines in turns if lines]


def _clean(text: str) -> str:
    return " ".join(html.unescape(_TAGS.sub("", text)).split())
