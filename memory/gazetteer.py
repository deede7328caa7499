"""Which known entities a text mentions: every name and alias, found whole, longest first.

Names compare in the normal form of ``memory.correction.text`` (case, accents, apostrophes and hyphens aside:
"Zyxara" and "half orc" are Zyx'ara and Half-Orc), word by word, so a mention never starts or ends inside a
word. A possessive ending stays with the mention ("Ironhold's"). Misheard names are the corrector's business:
this finds only what the transcript spells.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Generic, Protocol, TypeVar

from memory.correction.evidence import MatchSettings, word_zipf
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


_ONE_HYPHEN = str.maketrans("‐‑", "--")
_ARTICLES = frozenset({"a", "an", "the"})
#: From this Zipf frequency a word is ordinary English (see ``MatchSettings.common_zipf``).
_COMMON_ZIPF = MatchSettings().common_zipf


@dataclass(frozen=True, slots=True)
class _Entry(Generic[E]):
    entity: E
    separators: frozenset[str]  # the punctuation the name has between its words ("." of "St. Cuthbert")
    written: str  # the name casefolded, spaces collapsed
    possessive: bool  # the name ends in a possessive ("Gilmore's")


def _marks(between: str) -> str:
    """The punctuation between two words, spaces aside, any hyphen as "-"."""
    return "".join(between.split()).translate(_ONE_HYPHEN)


def _separators(surface: str) -> frozenset[str]:
    """The punctuation a name has between its words, spaces aside."""
    tokens = tokenize(surface)
    return frozenset(filter(None, (_marks(surface[a.end : b.start]) for a, b in pairwise(tokens))))


class Gazetteer(Generic[E]):
    def __init__(self, entities: Iterable[E]) -> None:
        # A name's words -> the entities so called, each with the punctuation it has between its words ("." of
        # "St. Cuthbert"); names as written first, then spaced at their hyphens.
        self._by_words: dict[str, list[_Entry[E]]] = {}
        surfaces = [(entity, surface) for entity in entities for surface in (entity.name, *entity.aliases)]
        for form in (normalize, spaced_form):
            for entity, surface in surfaces:
                key = form(surface)
                listed = self._by_words.setdefault(key, []) if key else []
                if key and all(entry.entity is not entity for entry in listed):
                    tokens = tokenize(surface)
                    listed.append(
                        _Entry(
                            entity,
                            _separators(surface),
                            " ".join(surface.casefold().split()),
                            bool(tokens) and tokens[-1].base_end != tokens[-1].end,
                        )
                    )
        # Where a run of words may still become a name: the scan stops extending a window at the first miss.
        self._prefixes = {
            " ".join(words[:n]) for key in self._by_words if (words := key.split()) for n in range(1, len(words) + 1)
        }

    def find(self, text: str, *, nested: bool = False, written: bool = False) -> list[tuple[int, int, E]]:
        """Each mention as (start, end, entity), ``text[start:end]`` with its possessive ending, in text order,
        the longest first; ``nested``: also the names inside a longer one ("The Sunken Crown" in the quest "Raise
        the Sunken Crown"), else mentions never overlap; ``written``: a name that is one ordinary English word
        only where the text writes it as a name (see :func:`_written_as_name`)."""
        tokens = tokenize(text)
        cased = written and any(ch.isupper() for ch in text)
        # Words before a name's last keep a possessive of the name's own ("Hunter's Mark"); the last may add one.
        whole = [normalize(text[t.start : t.end]) for t in tokens]
        found: list[tuple[int, int, E]] = []
        i = 0
        while i < len(tokens):
            best: tuple[int, E] | None = None
            said = ""
            for j in range(i, len(tokens)):
                for last in dict.fromkeys((whole[j], tokens[j].norm)):
                    # the possessive read as part of the name only where the name ends in one ("Gilmore's"; "the
                    # hell's" is not The Hells), and then first
                    possessive = last != tokens[j].norm
                    entity = self._entity(f"{said} {last}" if said else last, text, tokens[i : j + 1], possessive)
                    if entity is not None and (not cased or _written_as_name(text, tokens[i : j + 1])):
                        best = (j, entity)
                        break
                said = f"{said} {whole[j]}" if said else whole[j]
                if said not in self._prefixes:
                    break
            if best is None:
                i += 1
                continue
            found.append((tokens[i].start, tokens[best[0]].end, best[1]))
            i = i + 1 if nested else best[0] + 1
        return found

    def _entity(self, key: str, text: str, window: list[Token], possessive: bool = False) -> E | None:
        """The entity a window names, if its words are a name's and the punctuation between them is allowed: none,
        a hyphen, or the name's own ("Dr. Who", not "Vox. Machina"); ``possessive`` (the last word read with its
        possessive ending): only a name that ends in one. Of several, the one written as heard first
        ("Aramente" beside "Aramenté"), then one with the very punctuation heard ("half-orc" / Half-Orc beside
        "Half Orc")."""
        listed = self._by_words.get(key, [])
        marks = {_marks(text[a.end : b.start]) for a, b in pairwise(window)} - {""}
        listed = [
            entry for entry in listed if marks - {"-"} <= entry.separators and (entry.possessive or not possessive)
        ]
        if not listed:
            return None
        heard = " ".join(text[window[0].start : window[-1].end].casefold().split())
        return min(listed, key=lambda entry: (entry.written != heard, not marks <= entry.separators)).entity

    def mentions(self, text: str, *, written: bool = False) -> list[E]:
        """The entities ``text`` mentions, each once, in order of first mention, names inside names too
        (``written``: see :meth:`find`)."""
        return list({id(e): e for _, _, e in self.find(text, nested=True, written=written)}.values())

    def mentioned_ids(self, entry: Entry) -> list[int]:
        """Ids of the entities an entry mentions, with those its corrections named (an alias of another
        spelling still carries the entity's id). A line of the log names an entity called by an ordinary word
        ("Tiny", "Whisper") only where it writes the word as a name: "a tiny dagger" names nobody."""
        ids = dict.fromkeys(c.entity_id for c in entry.corrections if c.entity_id is not None)
        ids.update(dict.fromkeys(e.id for e in self.mentions(entry.text, written=True)))
        return list(ids)


def _written_as_name(text: str, window: Sequence[Token]) -> bool:
    """Whether a window naming an entity is written as a name: a name of several words, articles aside ("bag of
    holding"), always is; one ordinary English word ("tiny", "the list") only with a capital, at a sentence start
    too: there "Caleb" and "Pike" are names far more often than "Whisper" is the word (CRD3's 12 episodes: 300
    to 3). Called only for a text that has capitals: in one written without, case says nothing."""
    words = [t for t in window if t.norm not in _ARTICLES]
    if len(words) != 1 or word_zipf(words[0].norm) < _COMMON_ZIPF:
        return True
    return text[words[0].start].isupper()
