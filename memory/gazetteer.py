"""Which known entities a text mentions: every name and alias, found whole, longest first.

Names compare in the normal form of ``memory.correction.text`` (case, accents, apostrophes and hyphens aside:
"Zyxara" and "half orc" are Zyx'ara and Half-Orc), word by word, so a mention never starts or ends inside a
word. A possessive ending stays with the mention ("Ironhold's"). Misheard names are the corrector's business:
this finds only what the transcript spells.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import Generic, Protocol, TypeVar

from memory.correction.text import Token, normalize, spaced_form, tokenize
from memory.models import Entry


class Named(Protocol):
    @property
    def id(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def aliases(self) -> Sequence[str]: ...


E = TypeVar("E", bound=Named)


_HYPHENS = frozenset("-‐‑")


def _separators(surface: str) -> frozenset[str]:
    """The punctuation a name has between its words, spaces aside."""
    tokens = tokenize(surface)
    return frozenset(filter(None, ("".join(surface[a.end : b.start].split()) for a, b in pairwise(tokens))))


def _joined(between: str, own: frozenset[str]) -> bool:
    marks = "".join(between.split())
    return not marks or marks in _HYPHENS or marks in own


class Gazetteer(Generic[E]):
    def __init__(self, entities: Iterable[E]) -> None:
        # Each name's words -> (entity, the punctuation the name has between words: "." of "St. Cuthbert").
        self._by_words: dict[str, tuple[E, frozenset[str]]] = {}
        surfaces = [(entity, surface) for entity in entities for surface in (entity.name, *entity.aliases)]
        # Names as written first, then spaced at their hyphens: "Half Orc" keeps its own entity beside "Half-Orc".
        for form in (normalize, spaced_form):
            for entity, surface in surfaces:
                key = form(surface)
                if key:
                    self._by_words.setdefault(key, (entity, _separators(surface)))  # the first to claim it keeps it
        self._max_words = max((key.count(" ") + 1 for key in self._by_words), default=0)

    def find(self, text: str, *, nested: bool = False) -> list[tuple[int, int, E]]:
        """Each mention as (start, end, entity), ``text[start:end]`` with its possessive ending, in text order;
        ``nested``: also the names inside a longer one ("The Sunken Crown" in the quest "Raise the Sunken
        Crown"), else mentions never overlap."""
        tokens = tokenize(text)
        found: list[tuple[int, int, E]] = []
        i = 0
        while i < len(tokens):
            for size in range(min(self._max_words, len(tokens) - i), 0, -1):
                entity = self._lookup(text, tokens[i : i + size])
                if entity is not None:
                    found.append((tokens[i].start, tokens[i + size - 1].end, entity))
                    i += 1 if nested else size
                    break
            else:
                i += 1
        return found

    def _lookup(self, text: str, window: list[Token]) -> E | None:
        # As written: "half-orc" is Half-Orc even beside an entity "Half Orc".
        found = self._by_words.get(normalize(text[window[0].start : window[-1].end]))
        if found is not None:
            return found[0]
        # Word by word. Words before the last keep a possessive of the name's own ("Hunter's Mark"); the last may
        # add one.
        inner = [normalize(text[t.start : t.end]) for t in window[:-1]]
        last = window[-1]
        for final in (last.norm, normalize(text[last.start : last.end])):
            found = self._by_words.get(" ".join([*inner, final]))
            if found is not None:
                entity, own = found
                # A name does not run across punctuation, unless it is the name's own ("Dr. Who", not "Vox. Machina").
                if all(_joined(text[a.end : b.start], own) for a, b in pairwise(window)):
                    return entity
        return None

    def mentions(self, text: str) -> list[E]:
        """The entities ``text`` mentions, each once, in order of first mention, names inside names too."""
        return list({id(e): e for _, _, e in self.find(text, nested=True)}.values())

    def mentioned_ids(self, entry: Entry) -> list[int]:
        """Ids of the entities an entry mentions, with those its corrections named (an alias of another
        spelling still carries the entity's id)."""
        ids = dict.fromkeys(c.entity_id for c in entry.corrections if c.entity_id is not None)
        ids.update(dict.fromkeys(e.id for e in self.mentions(entry.text)))
        return list(ids)
