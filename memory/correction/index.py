"""The prepared per-campaign index of entity names: built once when the entities change, read per utterance.

Every name and alias becomes a :class:`NameForm` keyed five ways: by its space-free normal form (exact
mentions are left alone), by its Double Metaphone codes (homophones), by the one-deletion neighbourhood of
those codes (near-homophones), and by the halves and the thirds of its pronunciation (names a phone or two
from what was said). Lookups are dictionary hits, so the cost per utterance hardly grows with the entity count.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from itertools import accumulate

from pydantic import BaseModel, Field
from rapidfuzz.distance import Levenshtein

from memory.correction.evidence import MatchSettings, word_zipf
from memory.correction.phonetics import MIN_FUZZY_CODE, codes, deletions
from memory.correction.pronounce import dictionary_phones, name_phones
from memory.correction.text import name_norm, spaced_form, tokenize
from memory.gazetteer import last_name

#: "+2" of "Armor, +2" is said "plus two", never "two" alone ("armor to" is not the item).
_PLUS = re.compile(r"\+(?=\s*\d)")

_MEMO_SIZE = 65536
#: Names shorter than this many phones are not indexed by sound: too many words sound like them.
MIN_SOUND_PHONES = 4
#: ... nor, for words two phones off them, names shorter than this.
MIN_TWO_EDIT_PHONES = 8
_NO_HALVES: dict[str, list[NameForm]] = {}  # no name of this many phones (never written to)
_ARTICLES = frozenset({"a", "an", "the"})
_COMMON_ZIPF = MatchSettings().common_zipf


@lru_cache(maxsize=1024)
def _third_keys(n: int, shortest: int) -> tuple[int, int, tuple[tuple[tuple[int, int], ...], ...]]:
    """Where, in ``n`` heard phones, to look for the thirds of names of ``shortest`` phones or more that are two
    edits away: names of n - 2 to n + 2 phones, their first third at the start, the last at the end, the middle
    one up to a phone from where it is in the name (two phones from it, both edits fell in the first third and
    the last is intact). Returns the name lengths and, per part, the (start, end) slices."""
    low, high = max(shortest, MIN_TWO_EDIT_PHONES, n - 2), n + 2
    keys: set[tuple[int, int, int]] = set()
    for size in range(low, high + 1):
        a, b = size // 3, 2 * size // 3
        keys.add((0, 0, a))
        keys.add((2, n - (size - b), n))
        keys.update((1, i, i + b - a) for i in range(a - 1, a + 2))
    return low, high, tuple(tuple((start, end) for p, start, end in sorted(keys) if p == part) for part in range(3))


def near_edits(phones: str, form: NameForm) -> int | None:
    """Phone edits from ``phones`` to the name when they sound near it: within a phone, or two of a long name
    (what stage 1 refuses but hands to stage 2, and what stage 2 shows the model); None when further."""
    most = 2 if len(form.phones) >= MIN_TWO_EDIT_PHONES else 1
    edits = Levenshtein.distance(phones, form.phones, score_cutoff=most)
    return edits if edits <= most else None


class EntityName(BaseModel):
    """What the matcher needs of an entity: its id (None outside the database), name and aliases, and what the
    recogniser is known to write for it (``heard_as``: "from skin" / Frumpkin, as the DM said), and what it writes
    that is never the name (``not_heard_as``: "manta ray" is not Mentiri)."""

    id: int | None = None
    name: str
    aliases: list[str] = Field(default_factory=list)
    heard_as: list[str] = Field(default_factory=list)
    not_heard_as: list[str] = Field(default_factory=list)
    #: An npc or a player character: a table calls them by their last name alone ("Whitlock" of Edgar Whitlock).
    person: bool = False


@dataclass(frozen=True, slots=True, eq=False)  # identity hashing: forms are unique objects of one index
class NameForm:
    """One spelling an entity may be mentioned by; ``canonical`` is what a correction writes."""

    canonical: str
    entity_id: int | None
    entity_key: int  # position of the entity in the build list: ids may be None
    norm: str  # "vox machina"
    spaced: str  # the norm with the name's hyphens as word breaks: "half orc" of Half-Orc (norm "halforc")
    spaceless: str  # "voxmachina"
    words: tuple[str, ...]
    codes: tuple[str, ...]
    primary: bool = True  # the entity's own name, not an alias
    phones: str = ""  # the pronunciation (see ``pronounce``); "" when it cannot be pronounced
    surface: str = ""  # the spelling as registered: the name or this alias ("Kord" of The Stormlord)
    heard: bool = False  # a heard-as phrase: said, it is the name, whatever its words (see ``PhoneticIndex.heard``)


def everyday(words: tuple[str, ...]) -> bool:
    """Whether a name is an article and one everyday word ("The Harbour", a Foundry scene's navigation name; "the
    Mist"): what a table says of any harbour, so only its own words mention it. Words sounding or spelled like it
    are that everyday phrase ("the harbor"), not a mishearing of the name."""
    return len(words) == 2 and words[0] in _ARTICLES and word_zipf(words[1]) >= _COMMON_ZIPF


def _sayings(forms: list[NameForm]) -> list[NameForm]:
    """The forms long enough to be matched by sound, each once more as the dictionary says it if otherwise.

    A name made of dictionary words is also said the dictionary's way ("lorne": eSpeak NG reads L OW R N,
    CMUdict L AO R N), as the words a recogniser writes are."""
    sayings = [f for f in forms if len(f.phones) >= MIN_SOUND_PHONES]
    for f in forms:
        said = dictionary_phones(f.words)
        if len(said) >= MIN_SOUND_PHONES and said != f.phones:
            sayings.append(replace(f, phones=said))
    return sayings


def _surnames(entities: list[EntityName], forms: list[NameForm]) -> list[NameForm]:
    """The last names of the people among ``entities`` (as the mention index reads them: :func:`last_name`), each
    one person's alone and no entity's name or alias (those are forms already), as forms of that person that write
    the last name ("Whitlock"): said alone, it is what was said."""
    owners: dict[str, set[int]] = defaultdict(set)
    found: dict[str, NameForm] = {}
    names = {f.spaceless for f in forms}
    for key, entity in enumerate(entities):
        if not entity.person or (surname := last_name(entity.name)) is None:
            continue
        owners[surname].add(entity.id if entity.id is not None else -1 - key)  # a secret one comes as several
        written = next((entity.name[t.start : t.base_end] for t in tokenize(entity.name) if t.norm == surname), surname)
        found[surname] = NameForm(
            canonical=written,
            entity_id=entity.id,
            entity_key=key,
            norm=surname,
            spaced=surname,
            spaceless=surname,
            words=(surname,),
            codes=codes(surname),
            primary=False,
            phones=name_phones((surname,)),
            surface=written,
        )
    return [f for s, f in found.items() if len(owners[s]) == 1 and s not in names]


class PhoneticIndex:
    """Entity names prepared for matching. Build with :meth:`build`; immutable afterwards."""

    def __init__(
        self,
        forms: list[NameForm],
        *,
        lazy: bool = False,
        heard: list[NameForm] | None = None,
        not_heard: dict[str, frozenset[int]] | None = None,
        surnames: list[NameForm] | None = None,
    ) -> None:
        self.forms = forms
        #: The forms matched by sound or spelling: not an everyday phrase (see ``everyday``), said exactly or not.
        self.matched = [f for f in forms if not everyday(f.words)]
        #: People's last names, one person's alone and no entity's name or alias ("whitlock" of Edgar Whitlock):
        #: no form of their own (most are everyday English: Crane, Marsh), matched only where said as a name
        #: (see ``PhoneticMatcher._surnamed``).
        self.surnames = surnames or []
        #: Not-heard-as phrases, spaces removed, each with the entities (``NameForm.entity_key``) a window saying
        #: it is never corrected to: one lookup per window the matcher weighs, and only when there are any.
        self.not_heard = not_heard or {}
        #: Heard-as phrases, matched by their exact words only: they are ordinary English ("from skin"), so
        #: nothing sounding or spelled like them is the name.
        self.heard = heard or []
        # Exact mentions are compared without spaces: "quad roads" is the name "Quadroads" spaced differently.
        self.exact_spaceless: set[str] = set()
        self.spaceless_prefixes: set[str] = set()  # where a heard run of words may still become a name
        self.by_code: dict[str, list[NameForm]] = defaultdict(list)
        # Pronunciations by length and by each half: a pronunciation one phone edit away from a name keeps one
        # half of the name intact at its start or its end (the edit falls in the other half).
        # Keyed by length, then by the half: a lookup slices the heard phones, and needs no key tuple built and
        # hashed besides.
        self.by_first_half: dict[int, dict[str, list[NameForm]]] = defaultdict(lambda: defaultdict(list))
        self.by_second_half: dict[int, dict[str, list[NameForm]]] = defaultdict(lambda: defaultdict(list))
        # ... and by each third: a pronunciation two edits away keeps one third of the name intact. One table per
        # third: a lookup slices the heard phones, and needs no key tuple built and hashed besides.
        self.by_thirds: tuple[dict[str, list[NameForm]], ...] = tuple(defaultdict(list) for _ in range(3))
        #: The forms matched by sound, with a name of dictionary words said the dictionary's way too.
        self.sayings = sayings = _sayings(self.matched)
        self._index_sayings(sayings)
        for form in forms:
            self.exact_spaceless.add(form.spaceless)
            self.spaceless_prefixes.update(accumulate(form.spaceless[:-1]))  # "v", "vo" ... "voxmachin"
        for form in self.matched:
            for code in form.codes:
                self.by_code[code].append(form)
        self.max_spaceless = max(map(len, self.exact_spaceless), default=0)
        for form in self.heard:
            self.exact_spaceless.add(form.spaceless)
            self.spaceless_prefixes.update(accumulate(form.spaceless[:-1]))
        #: The longest exact mention (name, alias or heard-as phrase), spaces removed.
        self.max_exact = max(map(len, self.exact_spaceless), default=0)
        self.name_words = frozenset(w for f in forms for w in f.words)
        self.max_phones = max((len(f.phones) for f in sayings), default=0)
        self._near_memo: dict[str, frozenset[NameForm]] = {}
        self._two_edit_memo: dict[tuple[str, int], frozenset[NameForm]] = {}
        self._sound_memo: dict[str, frozenset[NameForm] | tuple[()]] = {}
        if not lazy:
            self.prepare()

    def _index_sayings(self, sayings: list[NameForm]) -> None:
        """Each pronunciation by its halves and, long enough, by its thirds (see ``__init__``)."""
        for saying in sayings:
            phones = saying.phones
            size = len(phones)
            self.by_first_half[size][phones[: size // 2]].append(saying)
            self.by_second_half[size][phones[size // 2 :]].append(saying)
            if size >= MIN_TWO_EDIT_PHONES:
                a, b = size // 3, 2 * size // 3
                self.by_thirds[0][phones[:a]].append(saying)
                self.by_thirds[1][phones[a:b]].append(saying)
                self.by_thirds[2][phones[b:]].append(saying)

    def prepare(self) -> None:
        """Build the tables only some utterances need now, not during the first of them (``lazy`` leaves them
        until then: a line's own entity list is corrected against once)."""
        for table in ("_by_code_or_deletion", "by_spaceless_length", "spaceless_lengths", "spaceless_by_length"):
            getattr(self, table)

    @cached_property
    def _by_code_or_deletion(self) -> dict[str, list[NameForm]]:
        """Codes and the codes one deletion from them (4+ sounds) in one table: two codes within one edit share a
        member of {code} ∪ deletions, so a near-homophone is one lookup per deleted sound."""
        table: dict[str, list[NameForm]] = defaultdict(list)
        for form in self.matched:
            for code in form.codes:
                table[code].append(form)
                if len(code) >= MIN_FUZZY_CODE:
                    for variant in deletions(code):
                        table[variant].append(form)
        return table

    # Spelling-only search looks only at names of a plausible length: forms sorted by length.
    @cached_property
    def by_spaceless_length(self) -> list[NameForm]:
        return sorted(self.matched, key=lambda f: len(f.spaceless))

    @cached_property
    def spaceless_lengths(self) -> list[int]:
        return [len(f.spaceless) for f in self.by_spaceless_length]

    @cached_property
    def spaceless_by_length(self) -> list[str]:
        return [f.spaceless for f in self.by_spaceless_length]

    @classmethod
    def build(cls, entities: list[EntityName], *, lazy: bool = False) -> PhoneticIndex:
        """``lazy``: for entities corrected against once or a few times (see ``prepare``)."""
        canonical: list[NameForm] = []
        aliases: list[NameForm] = []
        heard: list[NameForm] = []
        not_heard: dict[str, set[int]] = defaultdict(set)
        seen: set[tuple[str, int]] = set()
        for key, entity in enumerate(entities):
            name = " ".join(entity.name.split())
            for phrase in entity.not_heard_as:
                if spaceless := "".join(name_norm(phrase).split()):
                    not_heard[spaceless].add(key)
            for phrase in entity.heard_as:
                if words := tuple(name_norm(phrase).split()):
                    heard.append(
                        NameForm(
                            canonical=name,
                            entity_id=entity.id,
                            entity_key=key,
                            norm=" ".join(words),
                            spaced=" ".join(words),
                            spaceless="".join(words),
                            words=words,
                            codes=(),
                            primary=False,
                            surface=" ".join(phrase.split()),
                            heard=True,
                        )
                    )
            for i, surface in enumerate([entity.name, *entity.aliases]):
                # Quotes and other punctuation inside a name (Bo "The Breaker") are never heard; a plus sign is.
                said = _PLUS.sub(" plus ", surface)
                norm = name_norm(said)
                if not norm or (norm, key) in seen:
                    continue
                seen.add((norm, key))
                words = tuple(norm.split())
                spaceless = "".join(words)
                form = NameForm(
                    canonical=name,
                    entity_id=entity.id,
                    entity_key=key,
                    norm=norm,
                    spaced=norm if surface.isalpha() else spaced_form(said),  # letters only: no hyphens
                    spaceless=spaceless,
                    words=words,
                    codes=codes(spaceless),
                    primary=i == 0,
                    phones=name_phones(words),
                    surface=" ".join(surface.split()) if i else name,
                )
                (aliases if i else canonical).append(form)
        forms = canonical + aliases
        return cls(
            forms,
            lazy=lazy,
            heard=heard,
            not_heard={phrase: frozenset(keys) for phrase, keys in not_heard.items()},
            surnames=_surnames(entities, forms),
        )

    def __len__(self) -> int:
        return len(self.forms)

    def phonetic_candidates(
        self, window_codes: tuple[str, ...], *, near_too: bool
    ) -> tuple[set[NameForm], set[NameForm]]:
        """Forms sharing a code with the window and, if asked, forms one code edit away (4+ sounds only)."""
        same: set[NameForm] = set()
        near: set[NameForm] = set()
        for code in window_codes:
            same.update(self.by_code.get(code, ()))
            if near_too and len(code) >= MIN_FUZZY_CODE:
                near.update(self._near(code))
        return same, near - same

    def sound_candidates(self, phones: str) -> frozenset[NameForm] | tuple[()]:
        """Forms that may be pronounced within one phone edit of ``phones`` (a superset: verify), memoised: an
        utterance asks for ~30 windows' worth, and a session says the same words again."""
        found = self._sound_memo.get(phones)
        if found is not None:
            return found
        firsts, seconds, none = self.by_first_half.get, self.by_second_half.get, _NO_HALVES
        n = len(phones)
        # Names of n - 1, n and n + 1 phones; for each, the first half at the start or the second at the end.
        hits = [
            listed
            for listed in (
                firsts(n - 1, none).get(phones[: (n - 1) // 2]),
                seconds(n - 1, none).get(phones[(n - 1) // 2 - n + 1 :]),
                firsts(n, none).get(phones[: n // 2]),
                seconds(n, none).get(phones[n // 2 :]),
                firsts(n + 1, none).get(phones[: (n + 1) // 2]),
                seconds(n + 1, none).get(phones[(n + 1) // 2 - n - 1 :]),
            )
            if listed
        ]
        found = frozenset(form for listed in hits for form in listed) if hits else ()
        if len(self._sound_memo) >= _MEMO_SIZE:
            self._sound_memo.clear()
        self._sound_memo[phones] = found
        return found

    def two_edit_candidates(self, phones: str, shortest: int) -> frozenset[NameForm]:
        """Forms of at least ``shortest`` phones pronounced within two phone edits of ``phones``, memoised."""
        memo_key = (phones, shortest)
        found = self._two_edit_memo.get(memo_key)
        if found is not None:
            return found
        low, high, slices = _third_keys(len(phones), shortest)
        hits = [
            listed
            for table, part_slices in zip(self.by_thirds, slices, strict=True)
            for start, end in part_slices
            if (listed := table.get(phones[start:end]))
        ]
        found = frozenset(
            f
            for f in set().union(*hits)
            if low <= len(f.phones) <= high and Levenshtein.distance(phones, f.phones, score_cutoff=2) <= 2
        )
        if len(self._two_edit_memo) >= _MEMO_SIZE:
            self._two_edit_memo.clear()
        self._two_edit_memo[memo_key] = found
        return found

    def _near(self, code: str) -> frozenset[NameForm]:
        """Forms one code edit away, memoised: a long code has dozens of neighbours to look up, and a session
        says the same things again. The index never changes, so the memo never goes stale."""
        found = self._near_memo.get(code)
        if found is None:
            # The window lacks one sound of the name (the window's own code's forms come too; the caller takes
            # them out as the same sound); has one extra sound, or one sound differs.
            forms: set[NameForm] = set(self._by_code_or_deletion.get(code, ()))
            for variant in deletions(code):
                forms.update(self._by_code_or_deletion.get(variant, ()))
            found = frozenset(f for f in forms if len(f.codes[0]) >= MIN_FUZZY_CODE)
            if len(self._near_memo) >= _MEMO_SIZE:
                self._near_memo.clear()
            self._near_memo[code] = found
        return found
