"""Tokens of an utterance with their character offsets, and the normal form used for matching.

Matching works on a normal form (accents folded, casefolded, apostrophes and hyphens gone) so that
"Vex'ahlia", "vexahlia" and "Véx-ahlia" compare equal, while the offsets keep every replacement anchored
to the raw text so casing and punctuation around a span survive.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

# A word is letters/digits with inner apostrophes ("Vex'ahlia", "I'm", "Keyleth's"); hyphens split words so
# "Tiger-Keyleth" exposes "Keyleth" to the matcher.
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*['’]?")
_DROP = str.maketrans("", "", "'’‘`-‐‑")
_POSSESSIVE = re.compile(r"(?:['’]s|s['’])$", re.IGNORECASE)


@lru_cache(maxsize=65536)
def normalize(text: str) -> str:
    """Casefolded, accent-free, without apostrophes/hyphens; inner whitespace collapsed."""
    folded = unicodedata.normalize("NFKD", text)
    if not folded.isascii():
        folded = "".join(c for c in folded if not unicodedata.combining(c))
    return " ".join(folded.casefold().translate(_DROP).split())


@dataclass(frozen=True, slots=True)
class Token:
    """One word: ``text[start:end]`` in the raw utterance; ``base_end`` excludes a possessive ending."""

    start: int
    end: int
    base_end: int
    norm: str  # normal form of the base (possessive removed)
    word: str  # the casefolded word as heard, apostrophes kept ("they'd"): what word frequencies know

    @property
    def suffix_len(self) -> int:
        return self.end - self.base_end


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    for m in _WORD.finditer(text):
        start, end = m.span()
        word = m.group()
        if word[-1] in "'’" and not word[:-1].casefold().endswith("s"):
            end -= 1  # a closing quote, not a plural possessive
            word = word[:-1]
        possessive = _POSSESSIVE.search(word) if len(word) > 3 else None
        base_end = end
        if possessive is not None:
            # "Vex's" keeps "'s"; "Vasselheims'" keeps the "'" and, as a plural, the "s" goes with the base.
            base_end = start + possessive.start() + (1 if word[possessive.start()] in "sS" else 0)
        norm = normalize(text[start:base_end])
        if norm:
            tokens.append(Token(start, end, base_end, norm, word.casefold().replace("’", "'")))
    return tokens
