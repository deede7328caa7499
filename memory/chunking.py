"""Chunking L1 into L2 windows: consecutive utterances by count and time, overlapping, broken at scene breaks; and
which lines are embedded alone too.

Windows are a pure function of the entries so far: a window's start never depends on later utterances, so its
key (``s{session}:{first seq}``) is stable while a session grows — the last, still-open window is simply
re-embedded under the same key when it fills up.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from memory.models import Entry

# What a DM says when the story moves on: a fight starts, a new scene opens, time skips.
_SCENE_CUE = re.compile(
    r"\b(roll (for )?initiative|we open on|new scene|next scene|scene (change|shift)|cut to|meanwhile,?"
    r"|(later|the next morning|the next day) (that|you)|let'?s take a (short |quick )?break|welcome back)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class ChunkSettings:
    max_entries: int = 8
    max_seconds: float = 120.0  # a window never spans more than this from its first utterance's start
    overlap: int = 2  # utterances shared with the previous window, so a thought split at a border is whole once
    scene_gap_s: float = 45.0  # silence longer than this is a scene break


#: A line embedded on its own needs this many words: "Yeah." or "Okay, go ahead." means nothing alone, and the
#: window around it still carries it.
LINE_MIN_WORDS = 4


def line_text(entry: Entry) -> str:
    """A line as embedded on its own: as a window shows it, speaker first."""
    return f"{entry.speaker}: {entry.text}"


def embeds_alone(entry: Entry, min_words: int = LINE_MIN_WORDS) -> bool:
    """Whether a line gets a vector of its own (see :data:`LINE_MIN_WORDS`)."""
    return len(entry.text.split()) >= min_words


def window_key(session_id: int, first_seq: int) -> str:
    """The key of the window that starts at line ``first_seq`` of the session."""
    return f"s{session_id}:{first_seq}"


@dataclass(slots=True)
class Window:
    entries: list[Entry]
    entity_ids: list[int] = field(default_factory=list)

    @property
    def key(self) -> str:
        first = self.entries[0]
        return window_key(first.session_id, first.seq)

    @property
    def text(self) -> str:
        return "\n".join(line_text(e) for e in self.entries)

    @property
    def speakers(self) -> list[str]:
        return list(dict.fromkeys(e.speaker for e in self.entries))


def is_scene_break(previous: Entry | None, current: Entry, settings: ChunkSettings) -> bool:
    if previous is None:
        return False
    if _SCENE_CUE.search(current.text):
        return True
    last_end = previous.end_s if previous.end_s is not None else previous.start_s
    return current.start_s - last_end > settings.scene_gap_s


def scenes(entries: Sequence[Entry], settings: ChunkSettings) -> list[list[Entry]]:
    """Entries (in seq order) cut before every scene break."""
    out: list[list[Entry]] = []
    previous: Entry | None = None
    for entry in entries:
        if not out or is_scene_break(previous, entry, settings):
            out.append([])
        out[-1].append(entry)
        previous = entry
    return out


def windows(entries: Sequence[Entry], settings: ChunkSettings | None = None) -> list[Window]:
    settings = settings or ChunkSettings()
    out: list[Window] = []
    for scene in scenes(entries, settings):
        i, n = 0, len(scene)
        while i < n:
            j = i + 1
            while (
                j < n and j - i < settings.max_entries and scene[j].start_s - scene[i].start_s <= settings.max_seconds
            ):
                j += 1
            out.append(Window(list(scene[i:j])))
            if j >= n:
                break
            i = max(i + 1, j - settings.overlap)
    return out
