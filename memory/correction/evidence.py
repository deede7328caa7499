"""When a phonetic match is trusted enough to rewrite what was said.

A false correction is worse than a missed one: it puts a name in the players' mouths. Similarity alone never
rewrites ordinary English. The decision looks at the part of the span that differs from the name (words the
span shares with the name, like "the" in "the broken" → "The Broker", prove nothing), at how common its words
are, at the STT confidence and at how much phonetic material the match rests on.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import StrEnum
from functools import cache, lru_cache


class MatchKind(StrEnum):
    phonetic = "phonetic"  # the span and the name share a Double Metaphone code
    near = "near"  # the codes are one edit apart
    fuzzy = "fuzzy"  # spelling only: no phonetic link


@dataclass(frozen=True, slots=True)
class MatchSettings:
    #: The least score of a match by sound (a shared Double Metaphone code, or phones: 1 - edits / phones) and,
    #: with none, by spelling; the rules below ask more of ordinary words. `lorekeeper correct` takes both.
    phonetic_threshold: float = 0.70
    fuzzy_threshold: float = 0.85
    #: Zipf frequency (log10 per billion words) from which a word is ordinary English. 3.0 is about one in a
    #: million words: "vector", "grotto" and "camel" are above it, invented names below.
    common_zipf: float = 3.0
    #: From here a single word ("and", "from", "one") is never replaced, however doubtful.
    function_zipf: float = 5.5
    #: Below this a word is unknown to English (a typo or a name); between the two it is rare English
    #: ("goliaths", "whimper") that must not be bent into a name on a weak match.
    known_zipf: float = 2.0
    rare_word_threshold: float = 0.90
    unknown_word_threshold: float = 0.88
    #: A span of several words with an uncommon one ("vassal high mm") needs this score and this many sounds.
    rare_phrase_threshold: float = 0.80
    rare_phrase_code: int = 4
    #: A span of ordinary words only ("west rune") needs this score and a code of this many sounds: shorter
    #: codes collide with ordinary speech all the time ("able to" / Aboleth, "the door" / Theodore).
    strong_threshold: float = 0.88
    strong_code_length: int = 5
    #: Words below this STT confidence are doubtful: protection is lifted and stage 2 looks at them. Even
    #: so a doubtful word needs a good match: the recogniser doubts plenty of words it got right.
    low_confidence: float = 0.5
    #: A word the transcript capitalises is taken as its own name for something only if the recogniser was at
    #: least this sure of it or a word list has the spelling ("Marian"): Whisper capitalises its guesses at
    #: invented names ("Thunderdark" / Underdark at 0.51). Measured on real Whisper transcripts (``bench.stt``),
    #: as the CRD3 set has no doubt of its own.
    written_name_confidence: float = 0.7
    doubtful_word_threshold: float = 0.92  # 0.85 -> 0.92: on the tune half, only false corrections lay between
    doubtful_phrase_threshold: float = 0.80
    #: A match by spelling must not sound unlike the name: phone edits per phone (of the longer) at most this
    #: for a doubted span ("damn" / Damon, "skin" / Skein are refused) and this for a word English does not know
    #: (0.4 costs the ASR set names spelled unlike their sound). Tuned on the tune half with simulated
    #: confidences, and the ASR set.
    letters_doubtful_phone_distance: float = 0.2
    letters_unknown_phone_distance: float = 0.5
    #: Two different entities scoring within this margin make a span ambiguous: it is left alone.
    ambiguity_margin: float = 0.02
    #: Phrase path, for doubted spans only (otherwise the sound path judges phrases): several words whose
    #: sounds, joined, spell a name ("tally sin" / Taliesin, "tar ryan during ton" / Taryon Darrington). Judged
    #: on the joined span by a phrase score (mean of Jaro-Winkler, Indel similarity and code similarity), with a
    #: threshold that falls as the name grows: a long name matched by chance is rare, a short one ("the road" /
    #: Therad) is everywhere. Tuned on the "tune" half of the CRD3 dev mishearings against 3,000 clean turns.
    phrase_min_name: int = 6
    phrase_short_threshold: float = 0.88  # names of 6–7 letters
    phrase_medium_threshold: float = 0.84  # 8–10 letters
    phrase_long_threshold: float = 0.82  # 11 or more
    #: The span needs a word at most this common: all-function-word spans ("to them" / Totem) are speech.
    phrase_max_zipf: float = 4.5
    #: Longest phrase tried (each uncommon word opens up to this many windows on either side: the cost).
    phrase_max_words: int = 5  # 7 -> 5: no loss on the tune half, a third fewer lookups
    #: A span that starts or ends with a function word this common ("bastion of", "the doorway", "I worship")
    #: has usually caught a real word plus its neighbour: it needs this much more.
    phrase_edge_zipf: float = 6.0
    phrase_edge_penalty: float = 0.08
    #: Longest span, in words, tried against a name (mishearings split a name into several words).
    max_window_words: int = 7
    #: Sound path: a span pronounced (CMUdict / eSpeak NG phones) exactly like a name of at least
    #: ``sound_min_phones`` phones, or one phone off a name of at least ``sound_one_edit_phones``, is the
    #: name. Shorter names sound like ordinary words too often ("not" / Nott).
    sound_min_phones: int = 4
    sound_one_edit_phones: int = 5
    #: ... of ``sound_doubtful_one_edit_phones`` when the recogniser doubted the span, of
    #: ``sound_unknown_one_edit_phones`` for one word English does not know ("craswell" / Cresswell), and of
    #: ``sound_word_one_edit_phones`` for one word it knows but rarely uses ("clink" / Blink) or a common one
    #: doubted ("dragon" / Dagon is not); undoubted, a common word must sound exactly like the name. Tuned on the
    #: CRD3 tune half and the ASR set.
    sound_doubtful_one_edit_phones: int = 5
    sound_unknown_one_edit_phones: int = 5
    sound_word_one_edit_phones: int = 8
    #: A common word said exactly like a name is the name only from this many phones ("writes" / Rites is not).
    sound_common_word_phones: int = 5
    #: A plural of common words only ("crash hammers") is heard without its "s" only for a name of this many
    #: phones: "our glasses" is not Hourglasses, nor "bad rolls" Bedrolls. With any length (0), `bench.correction
    #: --clean-turns 30000` restores nothing more and makes 0.47 false corrections per 1,000 words, not 0.40.
    sound_common_plural_phones: int = 8
    #: Several words, one of them not common, may be two phones off a name of this many phones ("elder nacks" /
    #: Eldrinax; not "mistress off" / Mistrusts). The halves index finds names one phone off, so windows this
    #: long also look up names spelled alike (a shared Double Metaphone code); those may differ in vowels only
    #: at one phone shorter (see ``_same_consonants``).
    sound_two_edit_phones: int = 9
    #: ... and words all common two phones off a name of this many ("trust en world" / Trostenwald). 9 costs
    #: precision on the holdout half.
    sound_two_edit_common_phones: int = 10
    #: Several words undoubted, each at least this common ("even take", "may not care"), none of them the name's,
    #: must sound exactly like the name: a text transcript has no doubt, and a run of everyday words is what was
    #: said. Mishearings keep a less common word ("had ash" / Zadash, "ill in id" / Illithid: 4.16, 4.61).
    sound_everyday_run_zipf: float = 4.75
    #: A span of uncommon words holding a word of the name, doubted or with one word English does not know for the
    #: rest, may be two phones off in that rest from this many phones of it ("malemauk tealeaf" / Mollymauk
    #: Tealeaf, "Sylvara Nightbloom" / Sylvarra Nightbloom); measured on real Whisper transcripts (``bench.stt``),
    #: as the CRD3 set has no doubt of its own.
    sound_shared_two_edit_phones: int = 5
    #: A span sharing a word with a name (not a function word) may be one phone off in one other word at most
    #: this common, where the name has an invented word ("lady coma" / Lady Kima; not "giant dark" / Giant
    #: Shark, nor "a giant layer" / Giant Slayer).
    sound_shared_one_edit_zipf: float = 4.5
    #: The span needs a word at most this common: "and then the" is never a name.
    sound_max_zipf: float = 5.0
    #: A span one phone off a name that starts or ends with a word this common ("tent or" / Centaur, "one gets"
    #: / Wuyun Gates) has caught a real word plus its neighbour. 6.0 refuses "ye not who" and "had ash" (who and
    #: had at 6.34 and 6.33); 6.5 let in "one" (6.47); 7.0 lets in "tent or", "drink it".
    sound_edge_zipf: float = 6.4
    #: A word the transcript writes as a name (capitalised inside a sentence, no entity's) is a cast member's name
    #: it sounds like, or is a phone off, from this many phones of the name ("Max" / Vax; see
    #: ``PhoneticMatcher._cast_names``).
    cast_min_phones: int = 4


_PLAIN = re.compile(r"[a-z]+(?:'[a-z]+)*")


@lru_cache(maxsize=1)
def _frequencies() -> dict[str, float]:
    from wordfreq import get_frequency_dict  # 0.1-0.2 s to import: not for commands that never weigh a word

    return get_frequency_dict("en")


@lru_cache(maxsize=262144)
def word_zipf(word: str) -> float:
    """wordfreq's Zipf frequency. ``zipf_frequency`` re-tokenises every word (~15 µs, a p99 cost on a new
    utterance); a plain lowercase word is read from the frequency table directly, with the same value."""
    if not _PLAIN.fullmatch(word):
        from wordfreq import zipf_frequency

        return zipf_frequency(word, "en")  # digits, accents, a closing apostrophe: wordfreq's own rules
    frequency = _frequencies().get(word, 0.0)
    return round(math.log10(frequency) + 9, 2) if frequency > 0 else 0.0


#: Languages a table may speak a line of besides English (wordfreq's small lists: 0.02 s each to load).
_OTHER_LANGUAGES = ("es", "fr", "de", "it", "pt")
#: Words unknown to English, common in one other language, from which a line is in that language.
_FOREIGN_WORDS = 2


@cache
def _other_frequencies(language: str) -> dict[str, float]:
    from wordfreq import get_frequency_dict

    return get_frequency_dict(language, wordlist="small")


def another_language(unknown: list[str], settings: MatchSettings) -> bool:
    """Whether words English does not know are common words of one other language, enough of them to say the
    line is in it ("me llamo ... dos camisas para vender"): its words, not names misheard."""
    if len(unknown) < _FOREIGN_WORDS:
        return False
    least = 10 ** (settings.common_zipf - 9)
    return any(
        sum(_other_frequencies(language).get(w, 0.0) >= least for w in unknown) >= _FOREIGN_WORDS
        for language in _OTHER_LANGUAGES
    )


def everyday(phrase: str, settings: MatchSettings = MatchSettings()) -> bool:
    """Whether every word of ``phrase`` is ordinary English ("card", "the road"): taught as what the recogniser
    writes for a name, it is the name wherever it is said, whatever the speaker meant."""
    words = re.findall(r"[^\W_]+(?:'[^\W_]+)*", phrase.casefold())
    return bool(words) and all(word_zipf(w) >= settings.common_zipf for w in words)


@dataclass(frozen=True, slots=True)
class Evidence:
    """The differing part of a span against one name, and what the recogniser said about it."""

    words: tuple[str, ...]  # the span's words not shared with the name, as heard (for word frequencies)
    name_part: str  # the name's unshared part, without spaces
    code_length: int  # sounds in the span's phonetic code
    kind: MatchKind
    doubtful: bool  # the span was heard with low STT confidence on average


def required_score(ev: Evidence, settings: MatchSettings) -> float | None:
    """The score this match needs, or None when the span is ordinary speech that must stay as it is."""
    base = settings.phonetic_threshold if ev.kind is MatchKind.phonetic else settings.fuzzy_threshold
    if not ev.words:
        return None  # only words of the name itself were heard: a partial mention, not a mishearing
    zipfs = [word_zipf(w) for w in ev.words]
    if len(ev.words) == 1:
        if zipfs[0] >= settings.function_zipf or derived(ev.words[0], ev.name_part):
            return None  # "and" / Wand even when doubted; "tinkered" next to the name "Tinker"
        if ev.doubtful:
            return max(base, settings.doubtful_word_threshold)
        if zipfs[0] >= settings.common_zipf:
            return None  # "vector" is only doubted when the recogniser doubts it
        if zipfs[0] >= settings.known_zipf:
            return max(base, settings.rare_word_threshold) if ev.kind is MatchKind.phonetic else None
        # An unknown word is often another name or a spelling variant ("J'Mon" is not "Emon").
        return max(base, settings.unknown_word_threshold)
    if ev.doubtful:
        # Doubt does not make function words a name ("and a" / Wand, "not at" / Nott), nor does it make a few
        # letters heard across two words strong evidence: the recogniser doubts short words all the time.
        if min(zipfs) >= settings.function_zipf or len(ev.name_part) < settings.phrase_min_name:
            return None
        return max(base, settings.doubtful_phrase_threshold)
    # Several words: only a shared phonetic code is evidence enough. Words one sound apart from a name are
    # everywhere in ordinary speech ("a couple" / Acolyte).
    if ev.kind is not MatchKind.phonetic:
        return None
    if min(zipfs) < settings.common_zipf:
        return max(base, settings.rare_phrase_threshold) if ev.code_length >= settings.rare_phrase_code else None
    if ev.code_length < settings.strong_code_length:
        return None  # "able to" / Aboleth: four sounds in two ordinary words is a coincidence, not a name
    return max(base, settings.strong_threshold)


def phrase_required(heard: tuple[str, ...], name_part: str, settings: MatchSettings) -> float | None:
    """The phrase score a multi-word span of ordinary words needs to become the name, or None."""
    if len(heard) < 2 or len(name_part) < settings.phrase_min_name:
        return None  # one differing word: the single-word rules decide ("lady coma" / Lady Kima)
    if min(word_zipf(w) for w in heard) > settings.phrase_max_zipf:
        return None
    # "fun character" / Characters, "mornings at" / Morningstar: a word of its own that the name extends.
    if any(len(w) >= 6 and name_part.startswith(w.replace("'", "")[:-1]) for w in heard):
        return None
    needed = phrase_threshold(name_part, settings)
    if max(word_zipf(heard[0]), word_zipf(heard[-1])) >= settings.phrase_edge_zipf:
        needed += settings.phrase_edge_penalty
    return needed


def phrase_threshold(name_part: str, settings: MatchSettings) -> float:
    """The phrase score words must reach to spell a name (part) of this length: a long name spelled by chance
    is rare, a short one is everywhere."""
    if len(name_part) < 8:
        return settings.phrase_short_threshold
    if len(name_part) < 11:
        return settings.phrase_medium_threshold
    return settings.phrase_long_threshold


#: A stem this common makes an unlisted word an inflection of it ("scrawl" of "scrawling").
_STEM_ZIPF = 2.5
_SUFFIXES = ("ingly", "ings", "ing", "edly", "ed", "ly", "ers", "er", "es", "s", "d", "y")


@lru_cache(maxsize=65536)
def inflected(word: str) -> bool:
    """Whether a word English does not list is an English word inflected ("stealthing", "potioned",
    "shivved"): a word of the language, not a garbled name."""
    for suffix in _SUFFIXES:
        stem = word[: -len(suffix)]
        if word.endswith(suffix) and len(stem) >= 3:
            doubled = stem[:-1] if stem[-1] == stem[-2] else stem
            if any(word_zipf(s) >= _STEM_ZIPF for s in (stem, stem + "e", doubled)):
                return True
    return False


#: A stem this common makes a word ending in "ed" its past tense ("raise" of "raised", not "ree" of "reed").
_PAST_STEM_ZIPF = 3.0
#: A stem of one syllable ending in a consonant, a vowel and a consonant English doubles before "ed" ("jar": jarred,
#: "stop": stopped; not "w", "x" or "y": "bowed", "fixed", "played"): without it, "Jared" is no past of "jar".
_DOUBLES = re.compile(r"[^aeiouy]*[aeiou][^aeiouwxy]")


@lru_cache(maxsize=65536)
def past_tense(word: str) -> bool:
    """Whether a word ending in "ed" reads as a verb's past tense: its stem is a common word, "ed" after a
    consonant ("armed", "shivved"), "d" after an "e" ("raised", "agreed"). A short "-eed" word is a word of its
    own ("reed", "creed", "need", "seed", "speed"): "see" or "fee" are no stems of theirs, "agree" is longer. Nor is
    an "ed" English would have doubled the consonant before (:data:`_DOUBLES`: "Jared", not "jarred")."""
    if not word.endswith("ed") or len(word) < 5:
        return False
    stems = [word[:-1]] if word[-3] == "e" else [word[:-1], word[:-2]]
    if _DOUBLES.fullmatch(word[:-2]):
        stems.remove(word[:-2])
    if word[-3] == word[-4] != "e":
        stems.append(word[:-3])  # "shivved"
    return any(
        len(stem) >= 3 and word_zipf(stem) >= _PAST_STEM_ZIPF and not (stem.endswith("ee") and len(stem) < 5)
        for stem in stems
    )


def derived(word: str, name: str) -> bool:
    """An inflection or compound of the name ("tinkered" / Tinker, "unlock" / Lock) is a word of its own. The
    sound path asks English to have it too: "Thunderdark" is Underdark misheard."""
    short, long = sorted((word, name), key=len)
    if len(short) < 3:
        return False
    return (
        long.startswith(short)
        or long.endswith(short)
        or (len(short) >= 5 and long.startswith(short[:-1]))
        or inflection(short, long)
    )


_ENDINGS = ("", "e", "ion", "ation", "ate", "al", "ish", *_SUFFIXES)


def inflection(a: str, b: str) -> bool:
    """Whether two words are one stem with two English endings: "pierces" / Piercing, "gnollish" / Gnolls."""
    shared = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return shared >= 5 and a[shared:] in _ENDINGS and b[shared:] in _ENDINGS
