"""Deciding whether a proposed name is an entity the campaign already has, under another spelling.

Exact first (on a normal form: casefolded, accents folded, apostrophes/hyphens/punctuation gone, possessive
dropped), then phonetic: the same Double Metaphone code and a Jaro-Winkler similarity that rules out chance
homophones. A transcript misspelling ("Eldrinaks") thus merges into the entity (Eldrinax) instead of
multiplying it. Short names only match exactly: with four letters or fewer, "Tim" and "Tom" sound alike.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from doublemetaphone import doublemetaphone
from rapidfuzz.distance import JaroWinkler

from memory.extraction.schema import KnownEntity

#: Same Double Metaphone code and at least this Jaro-Winkler similarity: the same name, spelt differently.
PHONETIC_MIN_SIMILARITY = 0.88
#: Without a shared code the spellings must be nearly identical (a typo, a dropped letter).
FUZZY_MIN_SIMILARITY = 0.94
MIN_FUZZY_LENGTH = 5

_DROP = str.maketrans("", "", "'’‘`")
_NON_WORD = re.compile(r"[^\w\s]|_")
_POSSESSIVE = re.compile(r"(?:['’]s|s['’])$", re.IGNORECASE)


def normalize_name(name: str) -> str:
    """``"Vex'ahlia's"`` → ``"vexahlia"``; ``"Lady  Kima-of-Vord"`` → ``"lady kima of vord"``."""
    text = _POSSESSIVE.sub("", name.strip())
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c))
    text = _NON_WORD.sub(" ", text.casefold().translate(_DROP))
    return " ".join(text.split())


def _codes(norm: str) -> set[str]:
    return {c for c in doublemetaphone(norm.replace(" ", "")) if c}


def _similar_length(a: str, b: str) -> bool:
    """Jaro-Winkler rewards a shared prefix, so "Eldrin" would pass for "Eldrinax": cap the length gap."""
    la, lb = len(a.replace(" ", "")), len(b.replace(" ", ""))
    return abs(la - lb) <= max(1, min(la, lb) // 5)


@dataclass(frozen=True, slots=True)
class _Form:
    entity: KnownEntity
    norm: str
    codes: frozenset[str]


class NameResolver:
    """The campaign's names and aliases, prepared once per run; ``resolve`` is a dictionary hit or a short scan."""

    def __init__(self, entities: Iterable[KnownEntity]) -> None:
        self._exact: dict[str, KnownEntity] = {}
        self._forms: list[_Form] = []
        for entity in entities:
            self.add(entity)

    def add(self, entity: KnownEntity) -> None:
        for surface in [entity.name, *entity.aliases]:
            norm = normalize_name(surface)
            if not norm:
                continue
            # The first entity to claim a normal form keeps it: names are unique per campaign, so a clash is
            # only between accented/punctuated variants and the older entity is the likelier referent.
            self._exact.setdefault(norm, entity)
            self._forms.append(_Form(entity, norm, frozenset(_codes(norm))))

    def resolve(self, name: str) -> tuple[KnownEntity | None, bool]:
        """The entity ``name`` refers to, and whether the match was exact (False: phonetic/fuzzy)."""
        norm = normalize_name(name)
        if not norm:
            return None, False
        if (hit := self._exact.get(norm)) is not None:
            return hit, True
        if len(norm.replace(" ", "")) < MIN_FUZZY_LENGTH:
            return None, False
        codes = _codes(norm)
        best: tuple[float, KnownEntity] | None = None
        for form in self._forms:
            if len(form.norm.replace(" ", "")) < MIN_FUZZY_LENGTH:
                continue
            if not _similar_length(norm, form.norm):
                continue
            score = JaroWinkler.similarity(norm, form.norm)
            needed = PHONETIC_MIN_SIMILARITY if codes & form.codes else FUZZY_MIN_SIMILARITY
            if score >= needed and (best is None or score > best[0]):
                best = (score, form.entity)
        return (best[1], False) if best else (None, False)
