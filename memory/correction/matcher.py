"""Stage 1: replace misheard entity names by phonetic matching against a prepared index (in-process, < 1 ms)."""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from itertools import pairwise

from rapidfuzz import process
from rapidfuzz.distance import Indel, JaroWinkler, Levenshtein

from memory.correction.evidence import (
    Evidence,
    MatchKind,
    MatchSettings,
    another_language,
    derived,
    inflected,
    inflection,
    past_tense,
    phrase_required,
    phrase_threshold,
    required_score,
    word_zipf,
)
from memory.correction.index import MIN_SOUND_PHONES, NameForm, PhoneticIndex, near_edits
from memory.correction.phonetics import codes
from memory.correction.pronounce import (
    arpabet_code,
    dictionary_phones,
    name_phones,
    phrase_phones,
    warm,
    word_phones,
)
from memory.correction.text import Token, may_be_plural, name_norm, normalize, spaced_form, spaceless, tokenize
from memory.models import Correction

# Windows may only join words separated by spaces or hyphens: a comma or full stop ends a name.
_JOINERS = frozenset(" \t-‐‑")
#: What may come before the first word of a sentence, which is capitalised whatever it is.
_SENTENCE_OPENERS = frozenset(".!?:;\"“”'‘’()[]{}-–—…*")
_APOSTROPHES = "'’‘"
#: A parenthesised aside of a transcript: a stage direction or a sound ("(laughs)", "(thoom)", "(as Grog)").
_ASIDE = re.compile(r"\([^()]*\)")
#: A word a name writes with a full stop inside it: a title ("Dr. Dranzel", "St. Ives").
_ABBREVIATION = re.compile(r"([^\W\d_]+)\. ")
_ARTICLES = frozenset({"a", "an", "the"})
#: Words before a noun, not before a person's name.
_DETERMINERS = frozenset(
    {*_ARTICLES, "my", "your", "his", "her", "its", "our", "their", "this", "that", "these", "those"}
)
#: Titles a person's name opens with, as said ("Dr." is said "Doctor"): one said before words that sound like the
#: surname of a name with that title is evidence the name was said (see ``PhoneticMatcher._titled``).
_TITLES = frozenset(
    """
    doctor professor captain mister missus miss madam madame sir dame lord lady inspector detective sergeant
    lieutenant commander colonel major general admiral father sister brother reverend agent officer constable
    """.split()
)
_TITLE_SAID = {"dr": "doctor", "mr": "mister", "mrs": "missus", "prof": "professor", "capt": "captain"}
#: Most words a surname after its title may be heard as ("Army tage" / Armitage).
_TITLED_WORDS = 3
#: Phone edits a surname after its title may be heard with: one up to this many phones, two from there.
_TITLED_ONE_EDIT = 5
#: Fewest phones of a last name said as two or three words (see ``PhoneticMatcher._surnamed``): two short words
#: ("may son" / Mason) sound like a short name by chance.
_SURNAME_PHONES = 5
#: What follows a person's name and no thing's (at a sentence's start, or one word after a title: see
#: ``_ends_name``): a verb of speech or gesture ("Whit lock nods"; not "Storm wind rises", "Black wood burns"), or a
#: comma and "you" (spoken to: "Whit lock, you lied").
_PERSON_ACTS = re.compile(
    r"\s+(?:says|said|asks|asked|tells|told|answers|answered|replies|replied|nods|nodded|smiles|smiled|laughs|"
    r"laughed|shrugs|shrugged|frowns|frowned|grins|grinned|sighs|sighed|whispers|whispered|shouts|shouted|yells|"
    r"yelled|mutters|muttered|winks|winked|speaks|spoke)\b|,\s*you(?:'re|'ve|'ll|r)?\b"
)
#: Small words inside a capitalised name ("Tower of Terror").
_LINKS = frozenset({"of", "the", "de", "von", "van"})
_SENTENCE_ENDS = ".!?…"
_CLOSERS = _SENTENCE_ENDS + " \"'”’»)"
# A name heard as a few more or fewer letters is plausible; 3:2 in length is not.
_MAX_LENGTH_RATIO = 1.5
#: Names shorter than this are not respelled from other word breaks (see ``_spaced_otherwise``).
_MIN_RESPACED_LETTERS = 6
_FUZZY_MEMO_SIZE = 16384
_WORD_MEMO_SIZE = 16384  # words a session says, each a record of facts (see ``_word_facts``)
_NO_FORMS: frozenset[NameForm] = frozenset()
# A phrase shorter than this cannot sound like a name of ``phrase_min_name`` letters at 2:3 in length.
_MIN_PHRASE_LETTERS = 4
# A name matched by sound ranks below one matched by letters at the same score (letters are the stronger proof).
_SOUND_RANK_GAP = 0.01
_NEVER = 1 << 30  # no name is this long: exact matches only
_VOWELS = frozenset(arpabet_code("AA AE AH AO AW AY EH ER EY IH IY OW OY UH UW".split()))
# Delete the vowels from a phone string, leaving the consonants a re-spelling keeps (see ``_same_consonants``);
# from a name's, its HH too: eSpeak NG sounds the h of invented spellings like "Vhaldris" (V IY HH AE L ...).
_CONSONANTS = str.maketrans("", "", "".join(_VOWELS))
#: The last phone of a plural said with its "s" ("hammers", "nacks").
_PLURAL_PHONES = frozenset(arpabet_code(["S", "Z"]))
_NAME_CONSONANTS = str.maketrans("", "", "".join(_VOWELS) + arpabet_code(["HH"]))
#: "collar" and "caller" (AA, AO) are one vowel to most North American ears, whatever CMUdict writes.
_COT_CAUGHT = str.maketrans(arpabet_code(["AO"]), arpabet_code(["AA"]))
# Rank added per extra word when overlapping windows compete.
_LENGTH_BONUS = 0.01
#: The fewest letters of each part of a compound (see ``PhoneticMatcher._compound``).
_COMPOUND_LETTERS = 4
#: Phone edits per phone (of the longer) from which a run of words no longer sounds near a name for a second
#: pass (see ``PhoneticMatcher.nearly_heard``): a phone off a name of 4, two of 6, three of 9; 0.45 doubled the
#: second passes on dev lines and wrote no name more.
NEARLY_HEARD_DISTANCE = 0.34


@dataclass(slots=True)
class Stage1Result:
    corrections: list[Correction] = field(default_factory=list)
    #: Character spans (raw text) worth a second look by stage 2: doubtful words and protected near-misses.
    suspects: list[tuple[int, int]] = field(default_factory=list)


@dataclass(slots=True)
class _Candidate:
    first: int  # token indices, inclusive
    last: int
    form: NameForm
    score: float
    plural: bool  # the last word's plural "s" stays outside the name
    rank: float = 0.0  # ordering among overlapping windows (see ``_resolve_overlaps``)


@dataclass(slots=True)
class _WordFacts:
    """A word as the windows weigh it, wherever it is said (see ``PhoneticMatcher._word_facts``); memoised and
    never changed (a slots class: the windows read its fields ~70 times an utterance)."""

    number: bool  # has a digit: dice and stats ("d20s"), never a name
    zipf: float  # of the word as heard
    uncommon: bool  # below ``MatchSettings.common_zipf``
    unfamiliar: bool  # unknown to English, nor an inflection of a word it knows
    letters: int
    edgy: bool  # a very common word no name has (``MatchSettings.sound_edge_zipf``)
    #: Pronunciations: words before a window's last are heard whole ("hunter's" of "Hunter's Mark"), the last
    #: without a possessive ending, which stays outside the name ("elder nacks's" -> "Eldrinax's").
    said: str
    whole: str
    plural: bool  # may be heard without its "s" (see ``PhoneticMatcher._word_facts``)


@dataclass(slots=True)
class _Span:
    tokens: list[Token]
    doubtful: bool  # heard with low STT confidence on average
    uncommon: bool  # has a word that is not ordinary English
    #: Runs of exact-mention tokens inside the window (spaces removed): the name must contain each one.
    #: "the chrome a Conclave" may become "Chroma Conclave" though "Conclave" alone is an alias, and
    #: "greg strong jaw" Grog Strongjaw though "strong jaw" spells the alias "Strongjaw"; a window
    #: never swallows the exact mention of another name.
    exact_runs: tuple[str, ...] = ()
    #: Several words, one of them uncommon enough for the phrase path (see ``MatchSettings.phrase_*``).
    phrase: bool = False
    #: One of the exact mentions is capitalised inside a sentence: the transcript wrote that name ("to Beau").
    names_written: bool = False
    #: Words the transcript capitalises inside a sentence, not known as names: its own names for something
    #: ("Howells"), which a name may only share ("young ashley Burch" / Ashly Burch).
    written: tuple[str, ...] = ()
    #: The window ends with an article that has no noun after it ("back in vest a."): it belongs to the window.
    dangling: bool = False
    #: Common words after a determiner, up to an article with a noun after it ("the guild a month"): a noun and
    #: the next one's article, ordinary speech whatever name they sound like (see ``_may_sound_like``).
    between_phrases: bool = False


#: Names a window may be heard as (the index answers an empty tuple for none).
_Forms = AbstractSet[NameForm] | tuple[()]


@dataclass(slots=True)
class _Word:
    """A word where the utterance says it: its facts (see ``_WordFacts``) and what the recogniser and the words
    around it add."""

    token: Token
    facts: _WordFacts
    conf: float | None  # the recogniser's confidence, if known
    exact: bool  # inside an exact mention of a name (see ``PhoneticMatcher._exact_mentions``)
    locked: bool  # exact, or a number: neither corrected nor a suspect
    named: bool  # capitalised inside a sentence, not an exact mention, not doubted: the transcript's own name
    named_exact: bool  # capitalised inside a sentence and an exact mention: the transcript wrote that name
    unknown: bool  # unfamiliar to English and not written as a name: spelling is evidence for it alone
    dangling: bool  # an article with no noun after it (see ``_Span.dangling``)
    joins_next: bool  # only spaces or hyphens before the next word: a window may go on


@dataclass(slots=True)
class _Window:
    """A run of words worth judging (see ``PhoneticMatcher._windows``), with the names it may be heard as."""

    first: int  # word indices, inclusive
    last: int
    span: _Span
    by_letters: bool  # spelling is evidence: a doubted span, or a single word English does not know
    phones: str
    heard_as: _Forms
    singular: str  # the phones without the last word's plural "s", when it may be one ("" otherwise)
    heard_plural: _Forms


@dataclass(slots=True)
class _Scored:
    score: float
    form: NameForm
    plural: bool
    kind: MatchKind
    words: list[str]  # the window's words as compared (plural "s" removed when ``plural``)
    heard: list[str]  # the same words as heard, for word frequencies


def _shared_ends(words: Sequence[str], name: Sequence[str]) -> tuple[int, int]:
    """How many leading and trailing words the span shares with the name (at least one word left over)."""
    lead = 0
    while lead < min(len(words), len(name)) - 1 and words[lead] == name[lead]:
        lead += 1
    trail = 0
    while trail < min(len(words), len(name)) - lead - 1 and words[-1 - trail] == name[-1 - trail]:
        trail += 1
    return lead, trail


def _evidence(c: _Scored, doubtful: bool) -> tuple[Evidence, float]:
    """Evidence on the part of the span that differs from the name, and that part's similarity.

    Words shared with the name ("the" in "the broken" / The Broker) prove nothing about the rest, so word
    frequencies and similarity are judged on the rest; the shared words still add phonetic material.
    """
    words, name = c.words, c.form.words
    lead, trail = _shared_ends(words, name)
    heard = tuple(c.heard[lead : len(words) - trail])
    name_part = "".join(name[lead : len(name) - trail])
    score = c.score if lead == trail == 0 else _jw("".join(words[lead : len(words) - trail]), name_part)
    code = codes("".join(words))
    return Evidence(heard, name_part, len(code[0]) if code else 0, c.kind, doubtful), score


def _phrase_score(c: _Scored) -> tuple[float, tuple[str, ...], str]:
    """Phrase score of the part of the span that differs from the name, with that part's heard words.

    Jaro-Winkler alone over-rewards a shared prefix ("mornings at" / Morningstar); Indel similarity counts
    every letter and code similarity counts sounds, so the mean needs the whole span to sound like the name.
    """
    words, name = c.words, c.form.words
    lead, trail = _shared_ends(words, name)
    heard = tuple(c.heard[lead : len(words) - trail])
    span = "".join(words[lead : len(words) - trail])
    name_part = "".join(name[lead : len(name) - trail])
    # Short words ("of", "the") are shared by chance: "nights of rick whittle" / The Knights of Requital.
    inner = {w for w in name[lead : len(name) - trail] if len(w) > 3}
    if any(w in inner or w.removesuffix("s") in inner for w in words[lead : len(words) - trail]):
        # "four elemental planes" / Fire Elemental Plane: the name's own words, reordered or partly heard,
        # are a partial mention, not a mishearing of the whole.
        return 0.0, heard, name_part
    span_codes, name_codes = codes(span), codes(name_part)
    code_sim = max((Levenshtein.normalized_similarity(a, b) for a in span_codes for b in name_codes), default=0.0)
    score = (_jw(span, name_part) + Indel.normalized_similarity(span, name_part) + code_sim) / 3
    return score, heard, name_part


def _span(
    words: list[_Word], first: int, last: int, doubtful: bool, rare: bool, phrase: bool, written: list[str]
) -> _Span:
    inside = words[first : last + 1]
    window = [w.token for w in inside]
    closing = words[last]
    between = (
        first < last
        and not doubtful
        and first > 0
        and words[first - 1].joins_next
        and words[first - 1].token.norm in _DETERMINERS
        and closing.token.norm in _ARTICLES
        and closing.joins_next
        and not closing.dangling
        and not any(w.facts.uncommon for w in inside)
    )
    return _Span(
        window,
        doubtful,
        rare,
        _exact_runs(window, [w.exact for w in inside]),
        phrase,
        any(w.named_exact for w in inside),
        () if doubtful else tuple(written),
        closing.dangling,
        between,
    )


def _exact_runs(window: list[Token], exact: list[bool]) -> tuple[str, ...]:
    runs: list[str] = []
    previous = False
    for token, is_exact in zip(window, exact, strict=True):
        if is_exact and previous:
            runs[-1] += token.norm
        elif is_exact:
            runs.append(token.norm)
        previous = is_exact
    return tuple(runs)


def _extends(name: str, runs: tuple[str, ...]) -> bool:
    """Whether a name contains every exact run and more: "chroma" besides "conclave", not "Percy" for "Percy is"."""
    rest = name
    for run in runs:
        if run not in rest:
            return False
        rest = rest.replace(run, "", 1)
    return len(rest) >= 3


def _spells_part(words: list[str], form: NameForm) -> bool:
    """Whether a word not of the name spells its start or end ("dragon" of Dragonborn): the other words then
    carry the whole difference, and two phones off is too much for them ("dragon form" is not Dragonborn)."""
    return any(
        len(w) >= 4 and w not in form.words and (form.spaceless.startswith(w) or form.spaceless.endswith(w))
        for w in words
    )


def _sound_alike(window: str, name: str) -> float:
    """How well a whole window (spaces removed) sounds like a name: what competing windows are ranked by.

    Jaro-Winkler barely punishes a stray word after a good prefix ("west rune we" / Westruun); Indel and code
    similarity do, so a longer window wins only when its extra words are part of the name.
    """
    window_codes, name_codes = codes(window), codes(name)
    code_sim = max((Levenshtein.normalized_similarity(a, b) for a in window_codes for b in name_codes), default=0.0)
    return (_jw(window, name) + Indel.normalized_similarity(window, name) + code_sim) / 3


def _spaced_otherwise(heard: str, form: NameForm, plural: bool) -> bool:
    """Whether the heard words spell the name with other word breaks ("iron hold" / Ironhold), case and
    hyphens aside ("half orc" and "half-orc" are Half-Orc already). Short names are not respelled: two function
    words join into one too easily ("or in" / Orin). Nor is a name the transcript already writes as one, a
    capital on each word spaced unlike the name ("the Quad Roads" / The Quadroads, "the Quad Roads district" /
    the Quadroads District): that is its spelling of the name, not a mishearing."""
    long_words = re.findall(r"[^\W_]{4,}", heard)
    respaced = [w for w in long_words if w.casefold() not in form.words] or long_words
    if all(w[0].isupper() and not w.isupper() for w in respaced):
        return False
    words = spaced_form(heard)
    if plural:
        words = words[:-1]
    return words != form.spaced and len(form.spaceless) >= _MIN_RESPACED_LETTERS


def _apostrophe_dropped(heard: str, form: NameForm, plural: bool, common_zipf: float) -> bool:
    """Whether the heard words are the entity's own name without its apostrophe ("vexahlia" / Vex'ahlia), which
    the recogniser cannot hear; not when they are ordinary English ("was" is not the name "was'")."""
    return (
        not plural
        and all(word_zipf(w) < common_zipf for w in normalize(heard).split())
        and not any(a in heard for a in _APOSTROPHES)
        and any(a in form.canonical for a in _APOSTROPHES)
        and spaceless(form.canonical) == form.spaceless
    )


def _accents_dropped(heard: str, form: NameForm, plural: bool, common_zipf: float) -> bool:
    """Whether the heard words write the entity's name with other letters than its own, case and word breaks aside:
    "Dun Kaldor" / Dûn Kaldor, "Vel Ashkar" / Vel-Ashkâr, "Aethelric" / Æthelric. The key matched (accents folded)
    says they are its name; the line then writes it as the campaign does, and search, recall and the players' mask
    read one spelling. Not ordinary English the line writes in lower case: "he's naive" is no "Naïve", "the cafe"
    no "Café" ("dun kaldor" is Dûn Kaldor: one word is no English)."""
    letters = _letters(heard)
    return (letters[:-1] if plural else letters) != _letters(form.surface or form.canonical) and (
        heard[:1].isupper() or any(word_zipf(w) < common_zipf for w in normalize(heard).split())
    )


def _letters(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFC", text).casefold() if c.isalnum())


def _named(text: str, tokens: list[Token]) -> list[bool]:
    """Which words the transcript capitalises inside a sentence ("the Howells", not "Howells" first): it writes
    them as names already. All-capital words say nothing."""
    out = []
    for t in tokens:
        w = text[t.start : t.end]
        if not (w[0].isupper() and not w.isupper()):
            out.append(False)
            continue
        j = t.start - 1
        while j >= 0 and text[j].isspace():
            j -= 1
        out.append(j >= 0 and text[j] not in _SENTENCE_OPENERS)
    return out


def _opens_sentence(text: str, token: Token) -> bool:
    """Whether a word is the first of its sentence (of the text, or after a full stop, a quote, a dash ...)."""
    before = text[: token.start].rstrip()
    return not before or before[-1] in _SENTENCE_OPENERS


def _ends_name(text: str, token: Token) -> bool:
    """Whether the words after ``token`` say a person's name ended there: its sentence ends, or a verb of speech or
    gesture follows, or a comma and "you" (see ``_PERSON_ACTS``): "Whit lock nods.", not "Whit lock opens". A
    sentence ending on a past tense ends on its verb, the words before it its subject: "Captain raised." is the
    captain raising (a plural's or third person's "s" is not told apart: "Captain rays." is a name)."""
    if _PERSON_ACTS.match(text, token.end):
        return True
    after = text[token.end :].lstrip(" \t\"'”’)")
    return after[:1] in ("", *_SENTENCE_ENDS) and not past_tense(token.norm)


def _in_longer_name(text: str, tokens: list[Token], capitalised: list[bool], i: int) -> bool:
    """Whether token ``i`` is one word of a longer name, its neighbours ``capitalised`` inside the sentence too
    (see ``_named``): "Terry Gilliam", "Axe & Shield", "Tower of Terror"."""

    def joined(a: int, b: int) -> bool:
        return text[tokens[a].end : tokens[b].start].strip(" \t-‐‑&") == ""

    before = i > 0 and joined(i - 1, i)
    after = i + 1 < len(tokens) and joined(i, i + 1)
    of = i > 1 and before and tokens[i - 1].norm in _LINKS and joined(i - 2, i - 1) and capitalised[i - 2]
    return (before and capitalised[i - 1]) or (after and capitalised[i + 1]) or of


def _dangles(text: str, tokens: list[Token], i: int, zipfs: list[float], edge_zipf: float) -> bool:
    """Whether token ``i`` ends a sentence or comes before a function word: "a." and "the or", not "a-- a"."""
    if i + 1 == len(tokens):
        return not text[tokens[i].end :].strip(_CLOSERS)
    between = text[tokens[i].end : tokens[i + 1].start]
    if between.isspace():
        return zipfs[i + 1] >= edge_zipf
    return between.strip()[:1] in _SENTENCE_ENDS


@functools.lru_cache(maxsize=65536)
def _word_parts(words: tuple[str, ...], common_zipf: float) -> tuple[str, ...]:
    """A name's words, one not common itself but said as two common words of four letters or more as those two
    ("whitestone" is "white stone", "goodberry" "good berry"; not "keeper", "message" nor "northerners")."""
    parts: list[str] = []
    for word in words:
        splits = [(word[:i], word[i:]) for i in range(4, len(word) - 3)] if word_zipf(word) < common_zipf else []
        said = word_phones(word)
        parts.extend(
            next(
                (
                    pair
                    for pair in splits
                    if min(map(word_zipf, pair)) >= common_zipf and dictionary_phones(pair) == said
                ),
                (word,),
            )
        )
    return tuple(parts)


def _english(word: str, settings: MatchSettings) -> bool:
    return word_zipf(word) >= settings.known_zipf or inflected(word)


def _joined(text: str, pair: list[Token]) -> bool:
    """Whether two neighbouring tokens are separated by nothing but spaces or hyphens."""
    return all(ch in _JOINERS for ch in text[pair[0].end : pair[1].start])


def _similar_length(a: str, b: str) -> bool:
    # Jaro-Winkler rewards a shared prefix so much that "high" would match "High Elf": lengths must agree.
    return 1 / _MAX_LENGTH_RATIO <= len(a) / len(b) <= _MAX_LENGTH_RATIO


def _jw(a: str, b: str) -> float:
    return JaroWinkler.similarity(a, b)


def _score(spaced: str, spaceless: str, form: NameForm) -> float:
    """Jaro-Winkler over the space-stripped string, the full string, and the words paired in order (a name
    heard as its own number of words: "tall dorey" / Tal Dorei)."""
    words = spaced.split()
    paired = 0.0
    if len(words) == len(form.words) > 1:
        paired = sum(_jw(a, b) for a, b in zip(words, form.words, strict=True)) / len(words)
    return max(_jw(spaceless, form.spaceless), _jw(spaced, form.norm), paired)


def load_tables() -> None:
    """Load the word frequency table and the pronunciations now, not during the first utterance."""
    word_zipf("the")
    warm()


def _refused(not_heard: dict[str, frozenset[int]], window: list[Token]) -> frozenset[int] | None:
    """The entities (keys) the window is never corrected to: it says one of their not-heard-as phrases, or its
    plural."""
    key = "".join(t.norm for t in window)
    return not_heard.get(key) or (not_heard.get(key[:-1]) if key.endswith("s") else None)


class PhoneticMatcher:
    def __init__(self, index: PhoneticIndex, settings: MatchSettings | None = None) -> None:
        self.index = index
        self.settings = settings or MatchSettings()
        self._fuzzy_memo: dict[str, list[tuple[NameForm, float]]] = {}
        self._facts_memo: dict[tuple[str, str, bool], _WordFacts] = {}
        s = self.settings  # what each window weighs, read once (see ``_windows_from``)
        self._limits = (
            s.low_confidence,
            s.max_window_words,
            s.sound_max_zipf,
            s.sound_min_phones,
            s.sound_common_plural_phones,
            s.sound_two_edit_phones,
            s.sound_two_edit_common_phones,
            s.common_zipf,
            s.phrase_max_words,
            s.phrase_max_zipf,
        )
        # an entity's own name wins, and any name or alias a heard-as phrase spelled alike
        self._by_spaceless = {f.spaceless: f for f in reversed([*index.forms, *index.heard])}
        # Where an exact mention may start: a word that begins a name or is one (its plural too; see ``_names_it``).
        # Most words are neither, and one lookup settles them (see ``_exact_mentions``).
        names = index.exact_spaceless
        self._opens = frozenset(
            {*index.spaceless_prefixes, *names, *(n + "s" for n in names)}
            | {n[:-1] + "ves" for n in names if n.endswith("f")}
        )
        # The words after the first of each name of several, one of them not ordinary English ("the undying" of
        # Vorlag the Undying; not "road" of another road): see ``_heads``
        common = self.settings.common_zipf
        self._tails = frozenset(
            f.words[1:] for f in index.forms if len(f.words) > 1 and any(word_zipf(w) < common for w in f.words[1:])
        )
        # ... and the words before the last (Nerith of Nerith Vael): see ``_ends``
        self._leads = frozenset(
            f.words[:-1] for f in index.forms if len(f.words) > 1 and any(word_zipf(w) < common for w in f.words[:-1])
        )
        # Surnames by the title their name opens with: "doctor" -> (phones of "armitage", Dr. Henry Armitage)
        self._titled_names: dict[str, list[tuple[str, NameForm]]] = {}
        for f in index.forms:
            title = _TITLE_SAID.get(f.words[0], f.words[0]) if len(f.words) > 1 else ""
            surname = name_norm(f.canonical).split()[-1]  # not an alias's last word ("Sister Ottilie" of … Brand)
            if title in _TITLES and f.words[-1] == surname not in _TITLES and (sound := name_phones(f.words[-1:])):
                self._titled_names.setdefault(title, []).append((sound, f))
        # People's last names by their sound, as eSpeak NG and as the dictionary says them ("jQeUAT": Whitlock), and
        # by their spelling (see ``_surnamed``)
        self._surnames: dict[str, list[NameForm]] = {}
        for f in index.surnames:
            for sound in {f.phones, dictionary_phones(f.words)}:
                if len(sound) >= _SURNAME_PHONES:
                    self._surnames.setdefault(sound, []).append(f)
        self._surname_spellings = {f.spaceless: f for fs in self._surnames.values() for f in fs}
        # Words a name writes with a full stop ("Dr. Dranzel"): that stop does not end its exact mention.
        self._abbreviated = frozenset(w.casefold() for f in index.forms for w in _ABBREVIATION.findall(f.surface))
        load_tables()

    def correct(
        self,
        text: str,
        confidences: Sequence[float | None] | None = None,
        cast: AbstractSet[int] = frozenset(),
        people: AbstractSet[str] = frozenset(),
    ) -> Stage1Result:
        """Corrections for ``text``; ``confidences`` are per token of :func:`tokenize` (None: unknown); ``cast``:
        the ids of the entities the table says all evening (the session's cast, see ``_cast_names``); ``people``:
        the words of the speakers' own names (normal forms, see ``people_words``), which are never a misheard name:
        players call each other by name ("Marisha, roll").

        Windows (runs of words that may be a name) -> judge (each window's best name, if any) -> resolve
        (overlapping windows settled, corrections and stage 2's suspects written)."""
        tokens = tokenize(text)
        if not tokens or not self.index.forms:
            return Stage1Result()
        conf: Sequence[float | None] = confidences if confidences is not None else [None] * len(tokens)
        words, respaced = self._words(text, tokens, conf)
        low = self.settings.low_confidence
        unknown = [w.token.norm for w in words if w.unknown and (w.conf is None or w.conf >= low)]
        if len(unknown) > 1 and another_language(unknown, self.settings):
            return self._resolve(text, tokens, words, respaced, [])  # a line in Spanish has no names misheard
        no_confidences = all(c is None for c in conf)  # then stage 2 looks at spans sounding near a name
        # Names said where the words around them say a name is: a cast member's written, after a title ...
        said_as_names = self._cast_names(text, words, cast) if cast else []
        if self._titled_names:
            said_as_names += self._titled(text, words)
        if self._surname_spellings:
            said_as_names += self._surnamed(text, words)
        if self.index.not_heard:  # ... never where the DM said the words are not that name ("captain race")
            said_as_names = [c for c in said_as_names if c.form.entity_key not in self._not_heard(tokens, c)]
        candidates: list[_Candidate] = [*respaced, *said_as_names]
        near_misses: list[tuple[int, int]] = []
        for window in self._windows(words):
            candidate, near = self._judge(window, no_confidences)
            if candidate is not None:
                candidates.append(candidate)
            elif near:
                near_misses.append((tokens[window.first].start, tokens[window.last].base_end))
        if "(" in text:
            # An aside was written, not heard: "(thoom)" is a sound, not Tooma misheard. Windows stop at brackets.
            asides = [m.span() for m in _ASIDE.finditer(text)]
            candidates = [c for c in candidates if not any(a < tokens[c.first].start < b for a, b in asides)]
            near_misses = [s for s in near_misses if not any(a < s[0] < b for a, b in asides)]
        if people:
            candidates = [c for c in candidates if any(t.norm not in people for t in tokens[c.first : c.last + 1])]
        return self._resolve(text, tokens, words, candidates, near_misses)

    def _not_heard(self, tokens: list[Token], c: _Candidate) -> frozenset[int]:
        """The entities (keys) the candidate's words are never corrected to (see ``_refused``)."""
        return _refused(self.index.not_heard, tokens[c.first : c.last + 1]) or frozenset()

    def _cast_names(self, text: str, words: list[_Word], cast: AbstractSet[int]) -> list[_Candidate]:
        """Names the transcript writes for a cast member: a word it capitalises inside a sentence, no entity's name
        nor part of a longer name, sounding like one cast member's name of ``cast_min_phones`` phones or more, or a
        phone off it but no shorter ("Max" / Vax; "Kash" is a nickname of Kashaw). The recogniser heard a name
        there; said all evening, the cast's is the likely one (the windows leave a written name alone)."""
        out = []
        tokens = [w.token for w in words]
        capitalised = _named(text, tokens)
        for i, word in enumerate(words):
            phones = word.facts.said
            if (
                not word.named
                or not phones
                or word.facts.zipf >= self.settings.function_zipf
                or _in_longer_name(text, tokens, capitalised, i)
                or (i > 0 and tokens[i - 1].norm in _DETERMINERS)  # "my Hex", "the Knot": a thing, not a person
            ):
                continue
            found = [
                (edits, form)
                for form in self.index.sound_candidates(phones)
                if form.entity_id in cast
                and self.settings.cast_min_phones <= len(form.phones) <= len(phones)
                and (edits := Levenshtein.distance(phones, form.phones, score_cutoff=1)) <= 1
            ]
            if (said_as := self._unambiguous(found)) is not None:
                form, score = said_as
                out.append(_Candidate(i, i, form, score, False, score - _SOUND_RANK_GAP))
        return out

    def _titled(self, text: str, words: list[_Word]) -> list[_Candidate]:
        """A title said before a run of words that sounds like the surname of the one name opening with that title
        ("Doctor Army tage" / Dr. Henry Armitage, "Captain race says" / Captain Ilse Reyes): the title is what a
        table says before a name, and the surname's words are everyday English the windows rightly leave alone
        ("army", "race" and "will" are common words; "armitage" is too). The whole name replaces title and run. Not
        after a determiner ("the captain races"), where the title is a noun; the run starts with the surname's first
        phone and is at most one phone off it (two from ``_TITLED_ONE_EDIT`` phones), one name alone that near.
        One word English knows is as often the sentence's own, after a title called without its comma or used as a
        noun ("Captain raise your sword", "Sergeant prize fighter"), however near it sounds: it needs the
        recogniser's doubt, a capital, or a name's end after it (``_ends_name``: "Captain race says", "We sail with
        Captain race."; not "Captain raised.", a sentence ending on its verb)."""
        out = []
        low = self.settings.low_confidence
        for i, word in enumerate(words[:-1]):
            title = _TITLE_SAID.get(word.token.norm, word.token.norm)
            if title not in self._titled_names or (i > 0 and words[i - 1].token.norm in _DETERMINERS):
                continue
            found: list[tuple[int, int, NameForm]] = []  # (edits, last word, name)
            for last in range(i + 1, min(i + 1 + _TITLED_WORDS, len(words))):
                run = words[i + 1 : last + 1]
                if not words[last - 1].joins_next or any(w.locked or w.token.norm in _TITLES for w in run):
                    break
                one = run[0]
                if (
                    len(run) == 1
                    and not (one.facts.unfamiliar or one.named or (one.conf is not None and one.conf < low))
                    and not _ends_name(text, one.token)
                ):
                    continue  # "Captain raise your sword"
                heard = name_phones(tuple(w.token.norm for w in run))
                spelled = "".join(w.token.norm for w in run)
                for sound, form in self._titled_names[title]:
                    if spelled == form.words[-1]:
                        continue  # "Doctor Morgan": the surname said right, no name misheard
                    allowed = 1 if len(sound) <= _TITLED_ONE_EDIT else 2
                    if heard[:1] == sound[:1] and abs(len(heard) - len(sound)) <= allowed:
                        edits = Levenshtein.distance(heard, sound, score_cutoff=allowed)
                        if edits <= allowed:
                            found.append((edits, last, form))
            if not found:
                continue
            best = min(e for e, _, _ in found)
            at_best = {(last, form.entity_key): form for e, last, form in found if e == best}
            if len({key for _, key in at_best}) != 1:
                continue  # two names, or none alone, that near: left as said
            (last, _), form = min(at_best.items(), key=lambda item: item[0][0])
            primary = next((f for f in self.index.forms if f.entity_key == form.entity_key and f.primary), form)
            score = 1 - best / max(len(name_phones(form.words[-1:])), 1)
            out.append(_Candidate(i, last, primary, score, False, score - _SOUND_RANK_GAP))
        return out

    def _surnamed(self, text: str, words: list[_Word]) -> list[_Candidate]:
        """Two or three words said exactly as one person's last name, or spelling it ("Whit lock" / Whitlock of
        Edgar Whitlock), where they are said as a name: written with a capital inside a sentence ("we asked Whit
        lock"), after a title ("Mister whit lock"), or opening a sentence speaking or gesturing, spoken to or alone
        ("Whit lock nods.", "Whit lock, you ...", "Whit lock."; see ``_PERSON_ACTS``). Last names are everyday
        English more often than not (Crane, Marsh), so none is a form the windows match anywhere, and split in two
        they are two such words the windows rightly leave. Not after a determiner ("the black wood"), nor of
        everyday words only (``sound_everyday_run_zipf``: what was said), nor written with a capital on each word
        (the transcript's own name: "Black Wood"); the last name is written, as said."""
        out = []
        tokens = [w.token for w in words]
        everyday = self.settings.sound_everyday_run_zipf
        for i, opening in enumerate(words[:-1]):
            before = tokens[i - 1].norm if i else ""
            if opening.locked or before in _DETERMINERS:
                continue
            titled = i > 0 and words[i - 1].joins_next and _TITLE_SAID.get(before, before) in _TITLES
            opens = not (titled or opening.named) and _opens_sentence(text, opening.token)
            if not (titled or opening.named or opens):
                continue
            for last in range(i + 1, min(i + _TITLED_WORDS, len(words))):
                run = words[i : last + 1]
                if not words[last - 1].joins_next or any(w.locked or w.token.norm in _TITLES for w in run):
                    break
                if all(w.facts.zipf >= everyday for w in run) or all(
                    text[t.start].isupper() for t in tokens[i : last + 1]
                ):
                    continue
                if opens and not _ends_name(text, tokens[last]):
                    continue
                said = [t.norm for t in tokens[i : last + 1]]
                spelled = self._surname_spellings.get("".join(said))
                forms = {
                    f.entity_key: f for f in [*self._surnames.get(phrase_phones(said), ()), *filter(None, [spelled])]
                }
                if len(forms) == 1:
                    (form,) = forms.values()
                    out.append(_Candidate(i, last, form, 1.0, False, 1.0 - _SOUND_RANK_GAP))
                    break
        return out

    def nearly_heard(
        self,
        text: str,
        prompted: Iterable[str] = (),
        confidences: Sequence[float | None] | None = None,
        *,
        limit: int = 3,
        distance: float = NEARLY_HEARD_DISTANCE,
        max_words: int = 3,
        min_phones: int = MIN_SOUND_PHONES,
    ) -> list[NameForm]:
        """Names a run of up to ``max_words`` words of ``text`` sounds near (phone edits per phone of the longer at
        most ``distance``), closest first, one form an entity, at most ``limit``; not the entities of the
        ``prompted`` names, nor where ``text`` writes a name or says a word of one ("nobles" / New Nobles). Only
        runs with an uncommon word (``MatchSettings.common_zipf``) or that the recogniser doubted
        (``low_confidence``, by ``confidences`` per token of :func:`tokenize`) count: ordinary words heard surely
        sounded near some name in half the lines. Far looser than a correction: the recogniser is asked again
        with these names in its prompt, and writes one only where the audio fits it."""
        max_zipf, doubt = self.settings.common_zipf, self.settings.low_confidence
        tokens = tokenize(text)
        if not tokens or not self.index.sayings:
            return []
        told = {name_norm(n) for n in prompted}
        skip = {f.entity_key for f in self.index.forms if f.norm in told}
        conf = confidences if confidences is not None else [None] * len(tokens)
        words, _ = self._words(text, tokens, conf)
        choices = self._saying_phones
        best: dict[int, tuple[float, NameForm]] = {}
        for first in range(len(words)):
            phones, said_before, least_common, sure, sure_n = "", "", 99.0, 0.0, 0
            for last in range(first, min(len(words), first + max_words)):
                word = words[last]
                if word.locked or (last > first and not words[last - 1].joins_next):
                    break
                facts = word.facts
                if not facts.said:
                    break
                least_common = min(least_common, facts.zipf)
                if word.conf is not None:
                    sure, sure_n = sure + word.conf, sure_n + 1
                phones = said_before + facts.said
                said_before += facts.whole
                doubted = sure_n > 0 and sure / sure_n < doubt
                if len(phones) < min_phones or (least_common > max_zipf and not doubted):
                    continue
                for _, score, i in process.extract(
                    phones, choices, scorer=Levenshtein.normalized_distance, score_cutoff=distance, limit=None
                ):
                    form = self.index.sayings[i]
                    run = words[first : last + 1]
                    if form.entity_key in skip or any(w.token.norm in form.words for w in run):
                        continue  # prompted already; or a word of its own said ("nobles" of New Nobles): no mishearing
                    refused = _refused(self.index.not_heard, [w.token for w in run])
                    if refused and form.entity_key in refused:
                        continue  # the DM said these words are never this name
                    known = best.get(form.entity_key)
                    if known is None or score < known[0]:
                        best[form.entity_key] = (score, form)
        ranked = sorted(best.values(), key=lambda item: (item[0], not item[1].primary, item[1].entity_key))
        return [form for _, form in ranked[:limit]]

    @functools.cached_property
    def _saying_phones(self) -> list[str]:
        return [f.phones for f in self.index.sayings]

    def _resolve(
        self,
        text: str,
        tokens: list[Token],
        words: list[_Word],
        candidates: list[_Candidate],
        near_misses: list[tuple[int, int]],
    ) -> Stage1Result:
        """The windows that win where they overlap, as corrections, and the spans stage 2 should look at."""
        chosen = _resolve_overlaps(candidates)
        ends = [c.first for c in chosen[1:]] + [len(tokens)]
        corrections = [
            self._correction(text, words, c, previous, stop)
            for previous, c, stop in zip([None, *chosen], chosen, ends, strict=False)  # each with the one before it
        ]
        return Stage1Result(corrections, self._suspects(text, words, chosen, near_misses))

    def _words(
        self, text: str, tokens: list[Token], conf: Sequence[float | None]
    ) -> tuple[list[_Word], list[_Candidate]]:
        """Each word where it is said (see ``_Word``), and the exact mentions spaced unlike their name."""
        joinable = [_joined(text, [a, b]) for a, b in pairwise(tokens)]
        # A name written out with its own full stop is an exact mention ("Dr. Dranzel's" is not "Dr. Dr. Dranzel's").
        abbreviated = self._abbreviated
        exact, respaced = self._exact_mentions(
            text,
            tokens,
            [
                j or (a.norm in abbreviated and text[a.end : b.start].strip() == ".")
                for j, (a, b) in zip(joinable, pairwise(tokens), strict=True)
            ],
        )
        facts = [self._word_facts(t) for t in tokens]
        zipfs = [f.zipf for f in facts]
        capitalised = _named(text, tokens)
        edge_zipf, sure_from = self.settings.sound_edge_zipf, self.settings.written_name_confidence
        words = []
        for i, (token, f, c, x, cap) in enumerate(zip(tokens, facts, conf, exact, capitalised, strict=True)):
            # A capitalised word the index does not know as a name: the transcript's own name for something,
            # unless a recogniser was unsure of a spelling no word list has: its capital is a guess
            # ("Thunderdark" / Underdark; "Marian" stays Marian); nor is a spelling no word list has with the rest of
            # a name after it ("Morlag the Undying" / Vorlag the Undying; "Ashley Burch" stays).
            named = (
                cap
                and (c is None or c >= sure_from or f.zipf > 0)
                and not x
                and not (f.unfamiliar and (self._heads(tokens, joinable, i) or self._ends(tokens, joinable, i)))
            )
            unknown = f.unfamiliar and not named
            dangling = token.norm in _ARTICLES and _dangles(text, tokens, i, zipfs, edge_zipf)
            joins_next = i < len(joinable) and joinable[i]
            words.append(_Word(token, f, c, x, x or f.number, named, cap and x, unknown, dangling, joins_next))
        return words, respaced

    def _heads(self, tokens: list[Token], joinable: list[bool], i: int) -> bool:
        """Whether the words after token ``i`` are all of a name but its first word ("the Undying" of Vorlag the
        Undying)."""
        rest: tuple[str, ...] = ()
        for j in range(i + 1, min(len(tokens), i + self.settings.max_window_words)):
            if not joinable[j - 1]:
                break
            rest = (*rest, tokens[j].norm)
            if rest in self._tails:
                return True
        return False

    def _ends(self, tokens: list[Token], joinable: list[bool], i: int) -> bool:
        """Whether the words before token ``i`` are all of a name but its last word ("Nerith" of Nerith Vael: "Nerith
        Mael" is its last word misspelt, not the transcript's own name)."""
        rest: tuple[str, ...] = ()
        for j in range(i - 1, max(-1, i - self.settings.max_window_words), -1):
            if not joinable[j]:
                break
            rest = (tokens[j].norm, *rest)
            if rest in self._leads:
                return True
        return False

    def _windows(self, words: list[_Word]) -> Iterator[_Window]:
        """Every run of words that may be a misheard name and sounds or is spelled near one, in order: from each
        word, one word longer each time, the running values (letters, confidence, the rarest word, phones) grow
        with the window, and each window's names by sound are looked up."""
        # 90 lines, cyclomatic 39: stage 1's innermost loop (~70 windows an utterance), its running values locals:
        # with a call and a record a window, stage 1 took 70 % longer (measured).
        (
            low_confidence,
            widest,
            max_zipf,
            fewest,
            common_plural,
            two_edit,
            two_edit_common,
            common_zipf,
            max_words,
            phrase_zipf,
        ) = self._limits
        most = self.index.max_phones + 1
        two_edit_from = two_edit - 2
        sound_candidates = self.index.sound_candidates
        # English spelling takes up to about two letters a phone ("cave arne" / K'Varn: 8 letters, 6 phones).
        longest = max(self.index.max_spaceless * _MAX_LENGTH_RATIO, 2 * most)
        for first, opening_word in enumerate(words):
            if opening_word.facts.number:
                continue  # numbers ("d20s") are dice and stats, never names
            length, conf_sum, conf_n = 0, 0.0, 0
            rare, least_common, all_exact, sayable = False, 99.0, True, True
            said_before = ""
            spaceless = ""  # the window's words run together, as Double Metaphone reads them
            written: list[str] = []
            opening = opening_word.facts
            for last in range(first, min(len(words), first + widest)):
                word = words[last]
                facts = word.facts
                if last > first and (facts.number or not words[last - 1].joins_next):
                    break
                length += facts.letters
                if length > longest:
                    break
                if (c := word.conf) is not None:
                    conf_sum += c
                    conf_n += 1
                if word.named:
                    written.append(word.token.norm)
                rare = rare or facts.uncommon
                if facts.zipf < least_common:
                    least_common = facts.zipf
                # One doubtful word does not make its neighbours doubtful: the span as a whole must be.
                doubtful = conf_n > 0 and conf_sum / conf_n < low_confidence
                sayable = sayable and bool(facts.said)
                phones = said_before + facts.said
                said_before += facts.whole
                spaceless += word.token.norm
                all_exact = all_exact and word.exact
                if all_exact:
                    continue  # exact mentions only: nothing misheard here
                # Spelling is evidence for doubted spans and single words English does not know; sound for words
                # pronounced like a name. A word the transcript writes as a name is its name, unless doubted.
                by_letters = length >= 3 and (doubtful or (first == last and word.unknown))
                size = len(phones)
                soundable = sayable and least_common <= max_zipf and fewest <= size
                heard_as: _Forms = sound_candidates(phones) if soundable and size <= most else ()
                # A second reading doubles the chances of a coincidence: of common words only ("our glasses" /
                # Hourglass, "she casts" / Shakäste), only a long name ("crash hammers" / Kraghammer).
                singular = (
                    phones[:-1]
                    if facts.plural
                    and soundable
                    and (rare or doubtful or size > common_plural)
                    and fewest < size <= most + 1
                    else ""
                )
                heard_plural: _Forms = sound_candidates(singular) if singular else ()
                if last > first and size >= two_edit_from:
                    shortest = two_edit if least_common < common_zipf else two_edit_common
                    heard_as, heard_plural = self._two_off(
                        opening,
                        word,
                        phones,
                        spaceless,
                        shortest if soundable else None,
                        heard_as,
                        singular,
                        heard_plural,
                    )
                if not (by_letters or heard_as or heard_plural):
                    continue  # ordinary words nobody doubted and no name sounding alike: skip the rest
                phrase = 0 < last - first < max_words and least_common <= phrase_zipf and length >= _MIN_PHRASE_LETTERS
                span = _span(words, first, last, doubtful, rare, phrase, written)
                yield _Window(first, last, span, by_letters, phones, heard_as, singular, heard_plural)

    def _two_off(
        self,
        opening: _WordFacts,
        closing: _Word,
        phones: str,
        spaceless: str,
        shortest: int | None,
        heard_as: _Forms,
        singular: str,
        heard_plural: _Forms,
    ) -> tuple[_Forms, _Forms]:
        """The names a window of several words (``opening`` ... ``closing``) is pronounced as, with those two
        phones off a name of ``shortest`` phones or more (None: none, the window is not soundable) and those spelled
        alike.

        Two phones off a long name ("elder nacks" / Eldrinax; with common words only, a longer one: "trust en
        world" / Trostenwald), found by the thirds of its pronunciation; off in its vowels only, the spelling
        sounds alike too (a shared Double Metaphone code). Neither with a very common word at an edge, which
        ``_sound`` refuses, unless it is a dangling article or, for the spelling, a word of a name ("the elder
        nacks" / The Eldrinax): the costliest lookups are not paid for that."""
        edge_zipf = self.settings.sound_edge_zipf
        last_edge = not closing.dangling
        if (
            shortest is not None
            and shortest - 2 <= len(phones) <= self.index.max_phones + 2
            and not (opening.zipf >= edge_zipf or (last_edge and closing.facts.zipf >= edge_zipf))
        ):
            two_edit_candidates = self.index.two_edit_candidates
            heard_as = {*heard_as, *two_edit_candidates(phones, shortest)}
            if singular and len(singular) >= shortest - 2:
                heard_plural = {*heard_plural, *two_edit_candidates(singular, shortest)}
        if not (opening.edgy or (last_edge and closing.facts.edgy)) and (
            spelled_alike := self._spelled_alike(spaceless)
        ):
            heard_as = {*heard_as, *spelled_alike}
        return heard_as, heard_plural

    def _judge(self, window: _Window, no_confidences: bool) -> tuple[_Candidate | None, bool]:
        """The window's name, by spelling first, then by sound, then by sound without a plural "s"; or none, and
        whether the window is a near miss stage 2 should look at."""
        span, first, last = window.span, window.first, window.last
        heard_as, heard_plural = window.heard_as, window.heard_plural
        not_heard = self.index.not_heard
        refused = _refused(not_heard, span.tokens) if not_heard else None
        if refused:  # what the DM says is never those entities' name ("manta ray" / Mentiri)
            heard_as = {f for f in heard_as if f.entity_key not in refused}
            heard_plural = {f for f in heard_plural if f.entity_key not in refused}
        spelled, rejected = self._spelled(window, refused)
        if spelled is not None:
            return (None, True) if self._rhymes(window, spelled) else (spelled, False)
        if heard_as and (said_as := self._sound(span, window.phones, heard_as)) is not None:
            form, score = said_as
            candidate = _Candidate(first, last, form, score, False, score - _SOUND_RANK_GAP)
            return (None, True) if self._rhymes(window, candidate) else (candidate, False)
        if heard_plural and (said_as := self._sound(span, window.singular, heard_plural, plural=True)) is not None:
            form, score = said_as
            candidate = _Candidate(first, last, form, score, True, score - _SOUND_RANK_GAP)
            return (None, True) if self._rhymes(window, candidate) else (candidate, False)
        near = rejected or (
            no_confidences
            and bool(heard_as)
            and not span.exact_runs
            and self._sounds_near(span, window.phones, heard_as)
        )
        return None, near

    def _rhymes(self, window: _Window, c: _Candidate) -> bool:
        """Whether one word English does not know, not doubted, sounds like the name but for its first consonant
        ("grumpkins" / Frumpkin), or is an English word before the name's end ("sandkheg" / Ankheg): a word made
        on the name's pattern, which stage 2 may judge, not the name misheard."""
        if window.first != window.last or window.span.doubtful:
            return False
        token = window.span.tokens[0]
        facts = self._word_facts(token)
        if facts.unfamiliar and self._compound(token.norm, c.form.spaceless):
            return True
        heard = facts.said[:-1] if c.plural else facts.said
        name = c.form.phones
        return (
            facts.unfamiliar
            and len(heard) == len(name) > 1
            and heard[0] != name[0]
            and heard[1:] == name[1:]
            and heard[0] not in _VOWELS
            and name[0] not in _VOWELS
        )

    def _compound(self, word: str, name: str) -> bool:
        """Whether a word is an ordinary English word before the name's own invented ending, which the name does not
        start with: "sandkheg" (sand + kheg) is not Ankheg; "Thunderdark" (thunder + dark) may be Underdark."""
        settings = self.settings
        return any(
            name.endswith(word[i:])
            and not name.startswith(word[:i])
            and word_zipf(word[:i]) >= settings.common_zipf
            and word_zipf(word[i:]) < settings.known_zipf
            for i in range(_COMPOUND_LETTERS, len(word) - _COMPOUND_LETTERS + 1)
        )

    def _spelled(self, window: _Window, refused: frozenset[int] | None) -> tuple[_Candidate | None, bool]:
        """The window's name by spelling, where spelling is evidence; and whether a good match was refused."""
        if not window.by_letters:
            return None, False
        best, rejected = self._match_window(window.span)
        if best is None or (refused and best[0].entity_key in refused):
            return None, rejected
        form, score, plural = best
        window_text = "".join(t.norm for t in window.span.tokens)
        heard_name = window_text[:-1] if plural else window_text
        rank = _sound_alike(heard_name, form.spaceless)
        return _Candidate(window.first, window.last, form, score, plural, rank), rejected

    def _word_facts(self, token: Token) -> _WordFacts:
        """What the windows weigh of a word wherever it is said, memoised per word: a dozen table lookups each, and
        a session says the same words again."""
        key = (token.norm, token.word, token.base_end != token.end)
        facts = self._facts_memo.get(key)
        if facts is not None:
            return facts
        norm, word, possessive = key
        settings = self.settings
        zipf = word_zipf(word)
        said = word_phones(norm)
        facts = _WordFacts(
            number=any(ch.isdigit() for ch in norm),
            zipf=zipf,
            uncommon=zipf < settings.common_zipf,
            unfamiliar=max(zipf, word_zipf(norm)) < settings.known_zipf and not inflected(norm),
            letters=len(norm),
            edgy=zipf >= settings.sound_edge_zipf and norm not in self.index.name_words,
            said=said,
            whole=word_phones(word) if possessive else said,
            # A window ending in a plural is also heard without its "s", which stays outside the name ("crash
            # hammers" -> "Kraghammers"), as the spelling path keeps it (see ``_match_window``); not a word of its
            # own that only ends in an "s" ("religious").
            plural=may_be_plural(norm) and said[-1:] in _PLURAL_PHONES and (zipf == 0 or word_zipf(norm[:-1]) > 0),
        )
        if len(self._facts_memo) >= _WORD_MEMO_SIZE:
            self._facts_memo.clear()
        self._facts_memo[key] = facts
        return facts

    def _exact_mentions(
        self, text: str, tokens: list[Token], joinable: list[bool]
    ) -> tuple[list[bool], list[_Candidate]]:
        """Tokens inside an exact entity mention (longest first), which the matcher leaves alone — and, among
        them, the mentions spaced unlike the name ("iron hold" / Ironhold), corrected to its spelling: the very
        letters of a name are the strongest evidence there is."""
        locked = [False] * len(tokens)
        respaced: list[_Candidate] = []
        opens = self._opens
        i = 0
        while i < len(tokens):
            if tokens[i].norm not in opens and tokens[i].base_end == tokens[i].end:
                i += 1  # no name starts here, nor one with a possessive inside ("hunter's mark")
                continue
            keys = self._mention_keys(tokens, i, joinable)
            for n in range(len(keys), 0, -1):
                key = next((k for k in keys[n - 1] if self._names_it(k)), None)
                if key is not None:
                    locked[i : i + n] = [True] * n
                    if (candidate := self._respaced(text, tokens, i, n, key)) is not None:
                        respaced.append(candidate)
                    i += n
                    break
            else:
                i += 1
        return locked, respaced

    def _mention_keys(self, tokens: list[Token], i: int, joinable: list[bool]) -> list[tuple[str, ...]]:
        """Per length of a mention starting at token ``i``, the spellings to look up: bases only ("keyleth" of
        "Keyleth's"), and full words before the last one ("hunters" "mark" of "Hunter's Mark", a name with a
        possessive inside)."""
        prefixes = self.index.spaceless_prefixes
        longest = self.index.max_exact + 1  # +1: a plural "s"
        keys: list[tuple[str, ...]] = []
        base = full = ""
        for j, t in enumerate(tokens[i : i + self.settings.max_window_words]):
            if j and not joinable[i + j - 1]:
                break  # a name does not run across punctuation ("on. I" is not Oni)
            if len(base) + len(t.norm) > longest:
                break
            keys.append((base + t.norm,) if full == base else (base + t.norm, full + t.norm))
            if t.base_end == t.end and full == base:
                base = full = base + t.norm
            else:
                base, full = base + t.norm, full + (normalize(t.word) if t.base_end != t.end else t.norm)
            if base not in prefixes and full not in prefixes:
                break  # no name goes on like this
        return keys

    def _respaced(self, text: str, tokens: list[Token], i: int, n: int, key: str) -> _Candidate | None:
        """The correction of an exact mention (``n`` tokens from ``i``, spelling ``key``) to its name's own
        spelling, if it writes the name otherwise."""
        names = self.index.exact_spaceless
        plural = key not in names and key[:-1] in names
        form = self._by_spaceless.get(key[:-1] if plural else key)
        heard = text[tokens[i].start : tokens[i + n - 1].base_end]
        if form is None:
            return None
        if (
            form.heard  # the DM said so: whatever its words
            or _spaced_otherwise(heard, form, plural)
            or _apostrophe_dropped(heard, form, plural, self.settings.common_zipf)
        ):
            return _Candidate(i, i + n - 1, form, 1.0, plural, 1.0)
        after = text[tokens[i + n - 1].end : tokens[i + n - 1].end + 2]
        if (
            _accents_dropped(heard, form, plural, self.settings.common_zipf)
            and not (after and unicodedata.combining(after[0]))  # NFD "Zoë"
            and not (after[:1] in "-‐‑" and after[1:].isupper())  # a longer name: "Zoe-Ann" is not Zoë's
        ):
            # the name or alias as registered: "Zoe" is the alias Zoë, not the whole name Zoë Ashgrove
            own = replace(form, canonical=form.surface or form.canonical, primary=True)
            return _Candidate(i, i + n - 1, own, 1.0, plural, 1.0)
        return None

    def _names_it(self, key: str) -> bool:
        """Whether a space-free key is a name, or its plural: "Gnolls", and "half-elves" / Half-Elf."""
        names = self.index.exact_spaceless
        return (
            key in names
            or (key.endswith("s") and key[:-1] in names)
            or (key.endswith("ves") and key[:-3] + "f" in names)
        )

    def _sound(
        self, span: _Span, phones: str, heard_as: AbstractSet[NameForm], *, plural: bool = False
    ) -> tuple[NameForm, float] | None:
        """The name the window is pronounced as (see ``MatchSettings.sound_*``), with its phone similarity;
        ``plural``: ``phones`` are the window's without its last word's "s", and so are its words."""
        settings = self.settings
        words = [t.norm for t in span.tokens]
        if plural:
            words[-1] = words[-1][:-1]
        if len(words) == 1 and word_zipf(span.tokens[0].word) >= settings.function_zipf:
            return None  # "and" / Wand
        # A common word is that word unless doubted or said exactly like a longer name ("writes" / Rites).
        common = len(words) == 1 and not span.doubtful and word_zipf(words[0]) >= settings.common_zipf
        # An article and a common word are a noun phrase ("a sum" / Assum), unless the article is the name's.
        noun = (
            len(words) == 2
            and words[0] in _ARTICLES
            and not span.doubtful
            and word_zipf(words[1]) >= settings.common_zipf
        )
        found: list[tuple[int, NameForm]] = []
        for form in heard_as:
            common_word = common or (noun and words[0] not in form.words)
            edits = self._sound_edits(span, words, phones, form, common_word)
            if edits is not None:
                found.append((edits, form))
        return self._unambiguous(found)

    def _sound_edits(self, span: _Span, words: list[str], phones: str, form: NameForm, common_word: bool) -> int | None:
        """How many phones the window is off the name, if it may be that name by sound at all."""
        if not self._may_sound_like(span, words, form, common_word):
            return None
        if not span.doubtful and self._other_word(words, form):
            return None
        size = len(form.phones)
        # Words shared with the name ("the" of "the pounding" / The Founding) prove nothing: the rest must
        # be long enough for the edit allowed, and is judged as what it is (one word, or several).
        lead, trail = _shared_ends(words, form.words)
        rest = words[lead : len(words) - trail]
        name_rest = ""
        if lead or trail:
            name_rest = phrase_phones(form.words[lead : len(form.words) - trail])
            size = len(name_rest)
        allowed = self._edits_allowed(span, words, rest, form, (lead, trail), size)
        edits = Levenshtein.distance(phones, form.phones, score_cutoff=allowed)
        if edits and name_rest:
            # The shared words are the same words, however eSpeak NG says them inside the name ("why un
            # gorge" / Wuyun Gorge): the rest alone must sound like the rest of the name.
            edits = min(edits, Levenshtein.distance(phrase_phones(rest), name_rest, score_cutoff=allowed + 1))
        if edits > allowed and not (allowed and len(rest) > 1 and self._same_consonants(words, phones, form)):
            return None
        edits = min(edits, allowed)
        return edits if self._sound_stands(span, words, form, edits) else None

    def _may_sound_like(self, span: _Span, words: list[str], form: NameForm, common_word: bool) -> bool:
        """Whether the window may be a mishearing of the name at all, before any phones are compared."""
        settings = self.settings
        if span.written and not all(w in form.words for w in span.written):
            return False  # a word the transcript writes as a name stays unless it is a word of this one
        if span.between_phrases and span.tokens[0].norm not in form.words:
            return False  # "The guild a month ago" is not Gilda, however exactly "guild a" sounds like it
        size = len(form.phones)
        if size < settings.sound_min_phones or (common_word and size < settings.sound_common_word_phones):
            return False
        # "Pass Without a Trace" said with a word more, or "arcane" of Arcane Eye: no mishearing
        return not (
            len(form.words) > 1 and (all(w in words for w in form.words) or all(w in form.words for w in words))
        )

    def _other_word(self, words: list[str], form: NameForm) -> bool:
        """Whether, of several words, a common one nobody doubted stands where the name has another common word
        ("wet stone" / Whitestone, "could bury" / Goodberry, "jaunty bear" / Giant Boar): the name's English
        words are heard as English words, and one said otherwise is that other word, as it would be alone."""
        common = self.settings.common_zipf
        parts = _word_parts(form.words, common)
        return len(parts) == len(words) > 1 and any(
            word != part
            and min(word_zipf(word), word_zipf(part)) >= common
            and word_phones(word).translate(_COT_CAUGHT) != word_phones(part).translate(_COT_CAUGHT)
            for word, part in zip(words, parts, strict=True)
        )

    def _edits_allowed(
        self, span: _Span, words: list[str], rest: list[str], form: NameForm, shared: tuple[int, int], size: int
    ) -> int:
        """Phone edits allowed between the window and a name of ``size`` phones (its part not shared with the
        window, whose ``shared`` leading and trailing words are the name's own)."""
        settings = self.settings
        lead, trail = shared
        allowed = 1 if size >= self._one_edit_from(rest, span.doubtful) else 0
        if (
            allowed
            and not (lead or trail)
            and len(rest) > 1
            and not span.doubtful
            and min(word_zipf(w) for w in rest) >= settings.sound_everyday_run_zipf
        ):
            # Everyday words nobody doubted must say the name exactly, not a phone or a vowel off ("may not care" /
            # Manticore); a word of the name heard among them vouches for the rest ("tide collar horn").
            return 0
        if not allowed and self._vouched(words, rest, form, shared, size):
            allowed = 1
        if (
            allowed
            and len(rest) > 1
            and size >= settings.sound_two_edit_phones
            and not _spells_part(rest, form)
            and (
                min(word_zipf(w) for w in rest) < settings.common_zipf or size >= settings.sound_two_edit_common_phones
            )
        ):
            # "elder nacks" / Eldrinax, "trust en world" / Trostenwald; ordinary words two phones off a shorter
            # name are speech ("mistress off" / Mistrusts)
            return 2
        if (
            (lead or trail)
            and allowed
            and (span.doubtful or (len(rest) == 1 and not _english(rest[0], settings)))
            and size >= settings.sound_shared_two_edit_phones
            and all(word_zipf(w) < settings.common_zipf for w in words)
        ):
            # The name's own uncommon word vouches for the rest of a doubted span, itself no ordinary word
            # ("Malemauk Tealeaf"; not "Master Bramble" / Sister Bramble), or for one word English does not know,
            # undoubted ("Sylvara Nightbloom" / Sylvarra Nightbloom).
            return 2
        return allowed

    def _vouched(self, words: list[str], rest: list[str], form: NameForm, shared: tuple[int, int], size: int) -> bool:
        """A word of the name heard right vouches for one not very common word a phone off the rest of it, when
        that rest is invented ("lady coma" / Lady Kima; not "giant layer" / Giant Slayer, nor "giant dark" /
        Giant Shark, nor "the" for anything); an invented word of the name heard right, for a rest of any length
        ("Nerith Mael" / Nerith Vael: the rest three phones, the whole name eight)."""
        settings = self.settings
        lead, trail = shared
        said = (*words[:lead], *words[len(words) - trail :])
        return (
            len(rest) == 1
            and (size >= settings.sound_min_phones or any(word_zipf(w) < settings.common_zipf for w in said))
            and word_zipf(rest[0]) < settings.sound_shared_one_edit_zipf
            and all(word_zipf(w) < settings.common_zipf for w in form.words[lead : len(form.words) - trail])
            and any(len(w) > 3 and word_zipf(w) < settings.function_zipf for w in said)
        )

    def _sound_stands(self, span: _Span, words: list[str], form: NameForm, edits: int) -> bool:
        """Whether a name the window sounds like survives what the window's own words say against it."""
        settings = self.settings
        if (edits or span.names_written) and span.exact_runs and not _extends(form.spaceless, span.exact_runs):
            return False  # "a dragonborn" is the name Dragonborn said after "a"; "to Beau" is not Tubo
        own = set(form.words)
        name = form.spaceless
        if any(
            len(w) > 3
            and w not in own
            and (
                (
                    len(w) >= len(name) - 2
                    and derived(w, name)
                    and _english(w, settings)
                    # said exactly like the name, the commoner spelling is what was said: "desire" / Desir and
                    # "sprig" / Sprigg are words, "lorn" / lorne the name
                    and (edits > 0 or word_zipf(w) > word_zipf(name))
                )
                or (edits > 0 and any(inflection(w, n) for n in form.words))
            )
            for w in words
        ):
            return False  # "entangled" / Entangle: a word of its own ("omelet" / Omelette is the same word)
        if not edits:
            return True
        edges = (words[0],) if span.dangling else (words[0], words[-1])
        # "tent or" / Centaur: a real word plus a neighbour (not an article left without a noun)
        return not any(w not in own and word_zipf(w) >= settings.sound_edge_zipf for w in edges)

    def _unambiguous(self, found: list[tuple[int, NameForm]]) -> tuple[NameForm, float] | None:
        """The name fewest phones off, with its phone similarity; none when two entities sound alike."""
        if not found:
            return None
        found.sort(key=lambda f: (f[0], not f[1].primary, f[1].entity_key))
        edits, form = found[0]
        for other_edits, other in found[1:]:
            if other_edits > edits:
                break
            same_spelling = form.primary and other.norm == form.norm and not other.primary  # see ``_rival``
            if other.entity_key != form.entity_key and not _same_name(other, form) and not same_spelling:
                return None  # two entities sound alike: ambiguous
        score = 1 - edits / len(form.phones)
        return (form, score) if score >= self.settings.phonetic_threshold else None

    def _sounds_near(self, span: _Span, phones: str, heard_as: _Forms) -> bool:
        """Whether a window the sound rules refused is still pronounced within a phone of a name (two of a long
        one): "sasha" / Yasha, "terry" / Tary. Without recogniser doubt these are the entity-like spans stage 2 is
        asked about; function words ("and" / Wand), exact names and parts of a name said as such are not."""
        words = [t.norm for t in span.tokens]
        if len(words) == 1 and word_zipf(span.tokens[0].word) >= self.settings.function_zipf:
            return False
        for form in heard_as:
            size = len(form.phones)
            if size < self.settings.sound_min_phones:
                continue
            if len(form.words) > 1 and (all(w in words for w in form.words) or all(w in form.words for w in words)):
                continue
            if near_edits(phones, form) is not None:
                return True
        return False

    def _same_consonants(self, words: list[str], phones: str, form: NameForm) -> bool:
        """Several words spelled like the name and sounding like it but for its vowels, which eSpeak NG guesses for
        invented names ("toll van eck" / Tolvanek, T L V N K). Spelled like it as a phrase must be (the part not
        shared with the name; see ``phrase_threshold``), vowels too: English words have the consonants of a name
        and none of its vowels all the time ("manta ray" / Mentiri, M N T R; "cuttle fish" / Kattelfesh)."""
        if len(form.phones) < self.settings.sound_two_edit_phones - 1:
            return False
        lead, trail = _shared_ends(words, form.words)
        name_part = "".join(form.words[lead : len(form.words) - trail])
        # the name's other words said right vouch for the rest ("sister auto lee brand" / Sister Ottilie Brand)
        vouched = lead + trail > 0 and bool(set(codes("".join(words))) & set(form.codes))
        if not vouched and _sound_alike("".join(words[lead : len(words) - trail]), name_part) < phrase_threshold(
            name_part, self.settings
        ):
            return False
        vowels, name_vowels = sum(p in _VOWELS for p in phones), sum(p in _VOWELS for p in form.phones)
        heard = phones.translate(_CONSONANTS)
        return abs(vowels - name_vowels) <= 1 and heard in (
            form.phones.translate(_CONSONANTS),
            form.phones.translate(_NAME_CONSONANTS),
        )

    def _one_edit_from(self, heard: list[str], doubtful: bool) -> int:
        """How long a name must be (phones) for ``heard`` to be one phone off it: a doubted span or a single word
        English does not know ("craswell" / Cresswell) may be one off a shorter name than a phrase may; an
        ordinary word a sound away from a name is that word ("reception" / Deception)."""
        settings = self.settings
        if len(heard) != 1:
            return settings.sound_doubtful_one_edit_phones if doubtful else settings.sound_one_edit_phones
        zipf = word_zipf(heard[0])
        if doubtful:
            # Doubt lets an ordinary word be a name it sounds exactly like ("terry" / Tary); a phone off, only a
            # long one: the recogniser doubts "dragon", "battle", "damage" now and then (Dagon, Barrel, Damon).
            if zipf >= settings.common_zipf:
                return settings.sound_word_one_edit_phones
            return settings.sound_doubtful_one_edit_phones
        if zipf >= settings.common_zipf:
            return _NEVER  # and even sounding exactly like the name it needs doubt (see ``_sound``)
        if zipf >= settings.known_zipf or inflected(heard[0]):
            return settings.sound_word_one_edit_phones
        return settings.sound_unknown_one_edit_phones

    def _match_window(self, span: _Span) -> tuple[tuple[NameForm, float, bool] | None, bool]:
        """The accepted (form, score, plural) for a window, and whether a good match was refused as unsafe."""
        words = [t.norm for t in span.tokens]
        heard = [t.word for t in span.tokens]
        scored = self._spelled_like(span, words, heard)
        # Spelling-only matches are accepted only for a doubtful span or a single word unknown to English (see
        # evidence): only those pay for the search.
        unknown = len(words) == 1 and word_zipf(heard[0]) < self.settings.known_zipf
        if not scored and len(words) <= 2 and (span.doubtful or unknown):
            scored = [
                f
                for f in self._fuzzy(words, heard)
                if not span.exact_runs or _extends(f.form.spaceless, span.exact_runs)
            ]
        decided, rejected = self._decide(scored, span.doubtful)
        if decided is not None and not self._said_alike(decided, words, span.doubtful):
            return None, True
        return decided, rejected

    def _spelled_like(self, span: _Span, words: list[str], heard: list[str]) -> list[_Scored]:
        """Names sharing a Double Metaphone code with the window (one edit off too, where that is evidence), as
        said and without a plural "s", scored by spelling."""
        # Codes one edit apart are evidence only for a doubtful span, a single unknown word, or a phrase that
        # has a word uncommon enough to be judged on the phrase score (see evidence).
        near_too = span.doubtful or (len(words) == 1 and span.uncommon) or span.phrase
        variants = [(words, False)]
        if may_be_plural(words[-1]):
            variants.append(([*words[:-1], words[-1][:-1]], True))
        scored: list[_Scored] = []
        for v_words, plural in variants:
            v_spaced = " ".join(v_words)
            v_spaceless = v_spaced.replace(" ", "")
            window_codes = codes(v_spaceless)
            if not (near_too or span.uncommon) and len(window_codes[0]) < self.settings.strong_code_length:
                continue  # ordinary words with too few sounds: refused whatever they match
            same, near = self.index.phonetic_candidates(window_codes, near_too=near_too)
            for kind, forms in ((MatchKind.phonetic, same), (MatchKind.near, near)):
                for form in forms:
                    if span.exact_runs and not _extends(form.spaceless, span.exact_runs):
                        continue
                    if _similar_length(form.spaceless, v_spaceless):
                        # A plural reading must beat the plain one clearly: "orcas" is Orcus, not Orca+s.
                        score = _score(v_spaced, v_spaceless, form) - (0.03 if plural else 0.0)
                        scored.append(_Scored(score, form, plural, kind, v_words, heard))
        return scored

    def _said_alike(self, decided: tuple[NameForm, float, bool], words: list[str], doubtful: bool) -> bool:
        """Whether a spelling match does not sound unlike its name (see ``MatchSettings.letters_*_phone_distance``);
        a match that cannot be pronounced is judged by spelling alone."""
        form, _, plural = decided
        heard = phrase_phones([*words[:-1], words[-1][:-1]] if plural else words)
        if not (heard and form.phones):
            return True
        settings = self.settings
        if doubtful and len(words) == 1 and word_zipf(words[0]) >= settings.common_zipf:
            # as by sound: a doubted ordinary word spelled like a short name must sound just like it ("dragon" /
            # Dagon is a dragon)
            allowed = 1 if len(form.phones) >= self._one_edit_from(words, doubtful) else 0
            return Levenshtein.distance(heard, form.phones, score_cutoff=allowed + 1) <= allowed
        most = settings.letters_doubtful_phone_distance if doubtful else settings.letters_unknown_phone_distance
        return Levenshtein.normalized_distance(heard, form.phones) <= most

    def _fuzzy(self, words: list[str], heard: list[str]) -> list[_Scored]:
        """Spelling-only candidates, searched only for spans that are not ordinary English or are doubtful.

        The one search here that visits every name: limited to names of a plausible length and memoised per
        query (a session repeats its odd words), so a new unknown word costs ~0.5 ms at 10,000 names.
        """
        query = "".join(words)
        hits = self._fuzzy_memo.get(query)
        if hits is None:
            lengths = self.index.spaceless_lengths
            lo = bisect_left(lengths, math.ceil(len(query) / _MAX_LENGTH_RATIO))
            hi = bisect_right(lengths, math.floor(len(query) * _MAX_LENGTH_RATIO))
            forms = self.index.by_spaceless_length[lo:hi]
            found = process.extract(
                query,
                self.index.spaceless_by_length[lo:hi],
                scorer=JaroWinkler.similarity,
                score_cutoff=self.settings.fuzzy_threshold,
                limit=5,
            )
            hits = [(forms[i], score) for _, score, i in found if _similar_length(forms[i].spaceless, query)]
            if len(self._fuzzy_memo) >= _FUZZY_MEMO_SIZE:
                self._fuzzy_memo.clear()
            self._fuzzy_memo[query] = hits
        return [_Scored(score, form, False, MatchKind.fuzzy, words, heard) for form, score in hits]

    def _spelled_alike(self, spaceless: str) -> AbstractSet[NameForm]:
        """Names sharing a Double Metaphone code with a window's words run together. ~30 windows an utterance
        ask, nearly all for none, and nearly all new (a memo of them only churned): a miss is settled by the code
        table alone, without the sets ``phonetic_candidates`` builds."""
        window_codes = codes(spaceless)
        for code in window_codes:
            if code in self.index.by_code:
                return self.index.phonetic_candidates(window_codes, near_too=False)[0]
        return _NO_FORMS

    def _decide(self, scored: list[_Scored], doubtful: bool) -> tuple[tuple[NameForm, float, bool] | None, bool]:
        if not scored:
            return None, False
        # Canonical spellings first at equal score: "Taliesin" is the entity Taliesin before it is an alias of
        # Taliesin Jaffe (see ``_rival``).
        # Then the entity listed first: two entities written alike ("Tal'Dorei" twice) are no rivals (see
        # ``_rival``), and which of them a line names must not hang on the order of a set.
        scored.sort(key=lambda s: (s.score, s.form.primary, -s.form.entity_key), reverse=True)
        best = scored[0]
        if best.score < self.settings.phonetic_threshold:
            return None, False
        rival = _rival(best, scored[1:], lambda s: s.score)
        if rival is None or best.score - rival.score >= self.settings.ambiguity_margin:
            evidence, score = _evidence(best, doubtful)
            needed = required_score(evidence, self.settings)
            if needed is not None and score >= needed:
                return (best.form, best.score, best.plural), False
        # Refused on Jaro-Winkler alone: a phrase may still spell the name (the phrase score ranks differently).
        if (phrase := self._phrase(scored)) is not None:
            return phrase, False
        return None, True

    def _alias_mention(
        self, text: str, tokens: list[Token], first: int, form: NameForm, *, named_before: bool = False
    ) -> tuple[int, str]:
        """Where the mention of an alias starts, and what it writes: the canonical name, said once. Words of the
        name said just before the alias are part of the mention ("captain bran ock", heard as the alias Brannoch
        of Captain Brannoch Ysgarde), and so are uncommon words sounding like them ("kell loth the tide warden",
        the alias the Tidewarden of Quelloth the Tidewarden). After a word of the name said apart ("Quelloth, the
        tide warden"; "Eldrinax, the drowned worm"; an uncommon word of it, or the name corrected just before:
        ``named_before``) the alias is written as registered, not the name again."""
        name = name_norm(form.canonical).split()
        at = _alias_at(name, form)
        said = _name_said_before(text, tokens, first, form, name, at)
        if said:
            return first - said, form.canonical
        uncommon = {w for w in name if word_zipf(w) < self.settings.common_zipf}
        if named_before or (first > 0 and tokens[first - 1].norm in uncommon):
            alias = form.surface
            if text[tokens[first].start].isupper() and alias[:1].islower():
                alias = alias[0].upper() + alias[1:]  # "It was Quelloth. The tide warden" -> "The Tidewarden"
            return first, alias
        return self._sounded_before(text, tokens, first, name[:at] if at is not None else []), form.canonical

    def _sounded_before(self, text: str, tokens: list[Token], first: int, lead: list[str]) -> int:
        """Where uncommon words sounding like the name's words before its alias (``lead``) start, just before
        word ``first`` (a word may be heard as two); ``first`` if they are not said."""
        sound = name_phones(tuple(lead)) if lead else ""
        most = len(sound) // 3
        for start in range(first - 1, max(first - len(lead) - 2, -1), -1):
            if (
                not sound
                or not _joined(text, tokens[start : start + 2])
                or word_zipf(tokens[start].word) >= self.settings.common_zipf
            ):
                break
            heard = phrase_phones([t.norm for t in tokens[start:first]])
            if heard and Levenshtein.distance(heard, sound, score_cutoff=most) <= most:
                return start
        return first

    def _phrase(self, scored: list[_Scored]) -> tuple[NameForm, float, bool] | None:
        """The phrase path (see ``MatchSettings.phrase_*``): best by phrase score, unambiguous, above threshold."""
        ranked: list[tuple[float, _Scored]] = []
        for s in scored[:8]:  # by Jaro-Winkler already: the rest cannot reach a phrase threshold
            ranked.append((_phrase_score(s)[0], s))
        ranked.sort(key=lambda r: (r[0], r[1].form.primary, -r[1].form.entity_key), reverse=True)
        score, best = ranked[0]
        _, heard, name_part = _phrase_score(best)
        needed = phrase_required(heard, name_part, self.settings)
        if needed is None or score < needed:
            return None
        rival = _rival(best, [r[1] for r in ranked[1:]], lambda s: _phrase_score(s)[0])
        if rival is not None and score - _phrase_score(rival)[0] < self.settings.ambiguity_margin:
            return None
        # Reported (and ranked against overlapping windows) by Jaro-Winkler, like every other candidate.
        return best.form, best.score, best.plural

    def _correction(
        self, text: str, words: list[_Word], c: _Candidate, previous: _Candidate | None, stop: int
    ) -> Correction:
        """``previous``: the correction chosen just before this one, if any; ``stop``: the first word of the next."""
        tokens = [w.token for w in words]
        if c.form.heard:  # the whole phrase is the name, as the DM said: no word of it is kept
            # ... and its surname misheard just after it goes too ("a sold" taught for Ysolde Varrow: "a sold Marrow")
            name = name_norm(c.form.canonical).split()
            last = c.last if c.plural else _rest_sounded_after(words, c.last, name[1:], stop)
            start, end = tokens[c.first].start, tokens[last].base_end - (1 if c.plural else 0)
            return Correction(
                span=text[start:end],
                replacement=c.form.canonical,
                start=start,
                end=end,
                entity_id=c.form.entity_id,
                score=1.0,
                stage=1,
            )
        first, last, heard = _alias_words_kept(tokens, c)
        # An alias becomes the canonical name, said once (see ``_alias_mention``).
        replacement = c.form.canonical
        after = 0
        if first == c.first and not c.form.primary:
            named = (
                previous is not None and previous.last == first - 1 and previous.form.entity_key == c.form.entity_key
            )
            first, replacement = self._alias_mention(text, tokens, first, c.form, named_before=named)
            if not c.plural and (after := _name_said_after(text, tokens, last, c.form)):
                # The name's words said just after the alias are its own, written once: "ottily brand" (the alias
                # Ottilie of Sister Ottilie Brand) is "Ottilie Brand", not "Sister Ottilie Brand brand".
                last += after
                if first == c.first:  # none of the name said before the alias: the part of it said
                    replacement = _name_part(c.form, after)
        if not c.plural and not after:
            last = _rest_said_after(text, tokens, last, heard, spaceless(c.form.canonical))
            if replacement == c.form.canonical and last == c.last:
                name = name_norm(c.form.canonical).split()
                at = _alias_at(name, c.form)
                last = _rest_sounded_after(words, last, name[at + len(c.form.words) :] if at is not None else [], stop)
        start = tokens[first].start
        end = tokens[last].base_end - (1 if c.plural else 0)
        return Correction(
            span=text[start:end],
            replacement=replacement,
            start=start,
            end=end,
            entity_id=c.form.entity_id,
            score=round(c.score, 4),
            stage=1,
        )

    def _suspects(
        self, text: str, words: list[_Word], chosen: list[_Candidate], near_misses: list[tuple[int, int]]
    ) -> list[tuple[int, int]]:
        covered = [False] * len(words)
        for c in chosen:
            covered[c.first : c.last + 1] = [True] * (c.last - c.first + 1)
        low = self.settings.low_confidence
        spans = [
            (w.token.start, w.token.base_end)
            for w, done in zip(words, covered, strict=True)
            if w.conf is not None and w.conf < low and not done and not w.locked
        ]
        if all(w.conf is None for w in words):
            taken = [(words[c.first].token.start, words[c.last].token.end) for c in chosen]
            spans += [s for s in near_misses if not any(a < s[1] and s[0] < b for a, b in taken)]
        return _merge(text, spans)


def _alias_words_kept(tokens: list[Token], c: _Candidate) -> tuple[int, int, str]:
    """The words of a correction (first, last) and what of its form they say (spaces removed).

    An alias's words that the canonical name lacks stay as said: "Lord na stock grace pine" heard as the alias
    "Lord Nostoc Greyspine" becomes "Lord Nostoc Greyspine", not "Nostoc Greyspine". Only when every such word
    was heard right ("high higher raw fun toe farah" / High Hierophant Ophera is Ophera, not "high Ophera")."""
    first, last = c.first, c.last
    own = set(name_norm(c.form.canonical).split())
    words, before, after = c.form.words, 0, 0
    while first + before < last and before < len(words) and words[before] not in own:
        before += 1
    while last - after > first + before and after < len(words) - before and words[-1 - after] not in own:
        after += 1
    kept = words[before : len(words) - after]
    # ... unless the words left are no part of the name ("the drowned worm" heard as the alias The Drowned
    # Wyrm of Eldrinax is Eldrinax, not "the drowned Eldrinax").
    if (before or after) and not c.plural and kept and all(w in own for w in kept):
        said = [t.norm for t in tokens[first : first + before]] + [t.norm for t in tokens[last - after + 1 : last + 1]]
        if said == [*words[:before], *words[len(words) - after :]]:
            return first + before, last - after, "".join(kept)
    return first, last, c.form.spaceless


def _rest_said_after(text: str, tokens: list[Token], last: int, heard: str, canonical: str) -> int:
    """The last word of a correction that says only the start of the name (``heard``), taking the rest of the
    name said just after it: "Zix ara" -> "Zyx'ara" (heard as the alias Zyx), not "Zyx'ara ara"; "seeker russ
    um em ring" -> "seeker Assum Emring" (the alias Seeker Assum), not "... Emring em ring"."""
    if canonical == heard or not canonical.startswith(heard):
        return last
    rest, after = canonical[len(heard) :], last
    while (
        rest
        and after + 1 < len(tokens)
        and _joined(text, tokens[after : after + 2])
        and tokens[after + 1].norm
        and rest.startswith(tokens[after + 1].norm)
    ):
        rest, after = rest[len(tokens[after + 1].norm) :], after + 1
    return last if rest else after


def _rest_sounded_after(words: list[_Word], last: int, rest: list[str], stop: int) -> int:
    """The last word of a correction that writes the whole name, taking a word or two just after it (before word
    ``stop``) that are the ``rest`` of the name (its words after those said) misheard: a phone off it in four, or,
    written as a name, a letter in five: "a sold Marrow" (the alias Ysolde of Ysolde Varrow) is "Ysolde Varrow",
    not "Ysolde Varrow Marrow". Not another name said, a number, nor a word as common as "the"; "Quill and Hunz"
    (Quillon ... hands) keeps "Hunz", far from Ashgrove."""
    sound = name_phones(tuple(rest)) if rest else ""
    if len(sound) < MIN_SOUND_PHONES:
        return last
    letters = "".join(rest)
    for end in range(last + 1, min(last + len(rest) + 2, stop)):
        word = words[end]
        if word.locked or word.facts.edgy or not word.facts.said or not words[end - 1].joins_next:
            break
        run = words[last + 1 : end + 1]
        heard = phrase_phones([w.token.norm for w in run])
        spelt = "".join(w.token.norm for w in run)
        if (heard and Levenshtein.distance(heard, sound) <= len(sound) // 4) or (
            all(w.named for w in run) and Levenshtein.distance(spelt, letters) <= len(letters) // 5
        ):
            return end
    return last


def _alias_at(name: list[str], form: NameForm) -> int | None:
    """Where the alias ``form``'s words run inside the canonical ``name`` (its words), if they do."""
    size = len(form.words)
    return next((i for i in range(len(name) - size + 1) if tuple(name[i : i + size]) == form.words), None)


def _name_said_after(text: str, tokens: list[Token], last: int, form: NameForm) -> int:
    """How many of the canonical name's words after its alias ``form`` (a run of its words) are said just after the
    alias's last word ``last``; not ending on a small word ("ottily brand": one, of Sister Ottilie Brand; "kima of
    the": none, of Lady Kima of Vord)."""
    name = name_norm(form.canonical).split()
    at = _alias_at(name, form)
    if at is None:
        return 0
    rest, said = name[at + len(form.words) :], 0
    while (
        said < len(rest)
        and last + said + 1 < len(tokens)
        and tokens[last + said + 1].norm == rest[said]
        and _joined(text, tokens[last + said : last + said + 2])
    ):
        said += 1
    while said and rest[said - 1] in _LINKS:
        said -= 1
    return said


def _name_part(form: NameForm, after: int) -> str:
    """The canonical name's words from its alias ``form`` on, ``after`` more than the alias's, as the name writes
    them ("Ottilie Brand" of Sister Ottilie Brand); the whole name when that is all of it, or when its written words
    are not its words one for one."""
    written = form.canonical.split()
    name = name_norm(form.canonical).split()
    at = _alias_at(name, form)
    if at is None or [name_norm(w) for w in written] != name:
        return form.canonical
    return " ".join(written[at : at + len(form.words) + after])


def _name_said_before(
    text: str, tokens: list[Token], first: int, form: NameForm, name: list[str], at: int | None
) -> int:
    """How many words of the canonical ``name`` are said just before its alias ``form`` at word ``first``;
    ``at``: where the alias's words run inside the name, if they do."""
    if at is not None:  # a run of the name's words: those before it in the name, said just before it
        lead, said = name[:at], 0
        while (
            said < len(lead)
            and first - said > 0
            and tokens[first - said - 1].norm == lead[-1 - said]
            and _joined(text, tokens[first - said - 1 : first - said + 1])
        ):
            said += 1
        return said
    if set(form.words) & set(name):
        # A variant of the name, not a run of its words ("the crown of salt mere" / Crown of Saltmere, The
        # Sunken Crown): the name's first words said just before it ("the") are its own.
        return max(
            (
                k
                for k in range(1, min(first, len(name) - 1) + 1)
                if [t.norm for t in tokens[first - k : first]] == name[:k]
                and all(_joined(text, tokens[i : i + 2]) for i in range(first - k, first))
            ),
            default=0,
        )
    return 0


def _same_name(a: NameForm, b: NameForm) -> bool:
    """Two entities whose names are said alike: written alike ("K'Varn" and "K'varn"), or but for word breaks,
    apostrophes and accents ("Highbearer Vord" and "High Bearer Vord"). No sound tells them apart: the one
    listed first is named (see ``_decide``), not neither as ambiguous."""
    return spaceless(a.canonical) == spaceless(b.canonical)


def _rival(best: _Scored, others: list[_Scored], key: Callable[[_Scored], float]) -> _Scored | None:
    """The best-scoring candidate of another entity, ignoring the same spelling when ``best`` is canonical.

    Two entities may share a spelling (the character "Taliesin", the player "Taliesin Jaffe" with that alias):
    the entity whose own name it is wins; two aliases spelt alike stay ambiguous.
    """
    rivals = [
        s
        for s in others
        if s.form.entity_key != best.form.entity_key
        and not _same_name(s.form, best.form)
        and not (best.form.primary and s.form.norm == best.form.norm and not s.form.primary)
    ]
    return max(rivals, key=key, default=None)


def _resolve_overlaps(candidates: list[_Candidate]) -> list[_Candidate]:
    """Best-sounding window first, where a longer window earns a little: "Tower of Whispers" before "Tower",
    "na stock grace pine" / Nostoc Greyspine before "grace pine" / Greyspine. The rank punishes stray words
    ("west rune we"), so the bonus can reward words that belong to the name.
    """
    # A window holding a shorter one whose name is part of its own ranks as well as it: "greg strong jaw" /
    # Grog Strongjaw holds "strong jaw", the alias Strongjaw respaced, and is the whole of that mention. A
    # window holding one of the same name has caught a neighbour, and takes no rank from what it holds:
    # "estaphania who" / Estafania, "Fenwik Tull buys" / Fenwick Tull (holding "Fenwik", the alias Fenwick,
    # it ate "buy" into the name). Holding is transitive, so each window takes the best rank it holds directly;
    # windows are short, so looking only at those starting inside it keeps a long utterance linear.
    by_first = sorted(candidates, key=lambda c: c.first)
    firsts = [c.first for c in by_first]
    ranks = []
    for c in candidates:
        inside = [o for o in by_first[bisect_left(firsts, c.first) : bisect_right(firsts, c.last)] if o.last <= c.last]
        name = c.form.spaceless
        parts = [o.rank for o in inside if o.form.spaceless != name and o.form.spaceless in name]
        caught = any(o.form.spaceless == name and o.last - o.first < c.last - c.first for o in inside)
        ranks.append(c.rank if caught else max([c.rank, *parts]))
    for c, rank in zip(candidates, ranks, strict=True):
        c.rank = rank
    ranked = sorted(candidates, key=lambda c: c.rank + _LENGTH_BONUS * (c.last - c.first), reverse=True)
    taken: list[_Candidate] = []
    held: set[int] = set()  # tokens of the windows taken
    for c in ranked:
        tokens = range(c.first, c.last + 1)
        if held.isdisjoint(tokens):
            taken.append(c)
            held.update(tokens)
    return sorted(taken, key=lambda c: c.first)


def _merge(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping spans, and spans only whitespace apart ("from" "skin"), become one."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and (start <= merged[-1][1] or text[merged[-1][1] : start].isspace()):
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
