"""Tokens of an utterance with their character offsets, and the normal form used for matching.

Matching works on a normal form (accents folded, casefolded, apostrophes and hyphens gone) so that
"Vex'ahlia", "vexahlia" and "Véx-ahlia" compare equal, while the offsets keep every replacement anchored
to the raw text so casing and punctuation around a span survive.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from memory.text import APOSTROPHES, LETTERS

# A word is letters/digits with inner apostrophes ("Vex'ahlia", "I'm", "Keyleth's"); hyphens split words so
# "Tiger-Keyleth" exposes "Keyleth" to the matcher.
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*['’]?")
_DROP = str.maketrans("", "", APOSTROPHES + "-‐‑")
_POSSESSIVE = re.compile(r"(?:['’]s|s['’])$", re.IGNORECASE)


@lru_cache(maxsize=65536)
def normalize(text: str) -> str:
    """Casefolded, accent-free (æ as ae, ø as o), without apostrophes/hyphens; inner whitespace collapsed."""
    folded = unicodedata.normalize("NFKD", text)
    if not folded.isascii():
        folded = "".join(c for c in folded if not unicodedata.combining(c)).casefold().translate(LETTERS)
    return " ".join(folded.casefold().translate(_DROP).split())


_NAME_WORD = re.compile(r"[^\W_]+")
_HYPHENS = re.compile(r"[-‐‑]")


def name_norm(text: str) -> str:
    """The normal form of a name, punctuation inside it dropped: "bo the breaker" of 'Bo "The Breaker"'."""
    return " ".join(_NAME_WORD.findall(normalize(text)))


def spaceless(text: str) -> str:
    """The normal form of a name with its spaces removed, as phrases and names compare: "highbearervord" of "High
    Bearer Vord" and of "Highbearer Vord"."""
    return "".join(name_norm(text).split())


def spaced_form(text: str) -> str:
    """The normal form with hyphens as word breaks and other punctuation dropped: "half orc" of "Half-Orc"."""
    return name_norm(_HYPHENS.sub(" ", text))


def may_be_plural(word: str) -> bool:
    """Whether a normalised word may be a plural whose "s" stays outside a name ("hammers"; not "has", "moss")."""
    return len(word) > 3 and word[-1] == "s" and word[-2] != "s"


@dataclass(frozen=True, slots=True)
class Token:
    """One word: ``text[start:end]`` in the raw utterance; ``base_end`` excludes a possessive ending."""

    start: int
    end: int
    base_end: int
    norm: str  # normal form of the base (possessive removed)
    word: str  # the casefolded word as heard, apostrophes kept ("they'd"): what word frequencies know


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    for m in _WORD.finditer(text):
        start = m.start()
        length, base, norm, word = _word_parts(m.group())
        if norm:
            tokens.append(Token(start, start + length, start + base, norm, word))
    return tokens


@lru_cache(maxsize=65536)
def _word_parts(word: str) -> tuple[int, int, str, str]:
    """A matched word's token, offsets relative to its start: its length, where its base ends, the base's normal
    form and the word as heard. Memoised: tokenising is a tenth of stage 1, and speech repeats its words."""
    end = len(word)
    if word[-1] in "'’" and not word[:-1].casefold().endswith("s"):
        end -= 1  # a closing quote, not a plural possessive
        word = word[:-1]
    possessive = _POSSESSIVE.search(word) if len(word) > 3 else None
    base_end = end
    if possessive is not None:
        # "Vex's" keeps "'s"; "Vasselheims'" keeps the "'" and, as a plural, the "s" goes with the base.
        base_end = possessive.start() + (1 if word[possessive.start()] in "sS" else 0)
    return end, base_end, normalize(word[:base_end]), word.casefold().replace("’", "'")


def align_confidences(text: str, tokens: list[Token], words: Sequence[tuple[str, float | None]]) -> list[float | None]:
    """Per-token confidence from the recogniser's words (each word found in order in ``text``).

    A token takes the lowest confidence of the words overlapping it; a word that cannot be found (the
    recogniser's text and ``text`` disagree) gives no confidence rather than a wrong one, as does a word whose
    confidence is None (unknown), which still holds its place.
    """
    result: list[float | None] = [None] * len(tokens)
    pos = 0
    i = 0
    for word, confidence in words:
        word = word.strip()
        found = text.find(word, pos) if word else -1
        if found < 0:
            continue
        start, end = found, found + len(word)
        pos = end
        if confidence is None:
            continue
        while i < len(tokens) and tokens[i].end <= start:
            i += 1
        j = i
        while j < len(tokens) and tokens[j].start < end:
            current = result[j]
            result[j] = confidence if current is None else min(current, confidence)
            j += 1
    return result
