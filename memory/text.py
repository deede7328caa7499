"""Text and names as the memory keeps them: one rule each, shared by every edge (slash command, CLI, campaign file,
extractor, the store).

Names are NFC, one line, without invisible characters or look-alike letters of another script; free text holds
no hidden control character; whatever reaches PostgreSQL is storable; attribute values are what a campaign file
can hold. The models (:mod:`memory.models`) validate their fields with these.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from memory.errors import InvalidInputError

#: Aliases of one entity: the names a table uses for it fit; every alias is matched in every utterance.
MAX_ALIASES = 50
#: Phrases the recogniser writes for one entity's name ("from skin" / Frumpkin), as the DM taught them.
MAX_HEARD_AS = 50
#: Words of a heard-as phrase, at most: stage 1 looks no further for a mention (``MatchSettings.max_window_words``).
MAX_HEARD_AS_WORDS = 7


#: The DM voicing a character, marked at the line's start: "(as Mira) Because ...", "[as Mira]", "I'm Quillon now.",
#: "I'm Mira: grab the pole!".
_VOICE = re.compile(
    r"\s*(?:[(\[](?i:as)\s+(?P<as>[^)\]]{1,40})[)\]]"
    r"|I['’]m\s+(?P<im>[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)?)(?:\s+now)?\s*[.:!;,])\s*"
)


def voiced(text: str) -> tuple[str, str] | None:
    """Whom a line's marker at its start says its speaker voices, as written, and the line after the marker; None
    without one."""
    m = _VOICE.match(text)
    return (" ".join((m.group("as") or m.group("im")).split()), text[m.end() :]) if m else None


#: A voice marker after narration: "She relaxes a little. (as Ottilie) A brother." (a name, not "(as usual)").
_VOICE_LATER = re.compile(r"[(\[](?i:as)\s+([A-Z][^)\]\n]{0,39})[)\]]")


def voice_left(text: str) -> str | None:
    """Whom a line leaves its speaker voicing, as written: its last marker, at its start or after narration."""
    later = _VOICE_LATER.findall(text)
    if later:
        return " ".join(later[-1].split())
    marked = voiced(text)
    return marked[0] if marked else None


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters between words, an ellipsis saying it was; a word longer than
    two thirds of the room is cut in it."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    cut = limit - 1 if text[limit - 1].isspace() else max(head.rfind(" "), head.rfind("\n"))
    return (head[:cut] if cut > limit // 3 else head).rstrip(" \n,;:") + "…"


def excerpt(text: str, names: Iterable[str], limit: int) -> str:
    """``text`` cut to at most ``limit`` characters around the first place it says one of ``names`` (case aside,
    whole words, a plural or possessive too), else around the longest capitalised end of a name it says ("Whitestone
    Castle" of "Arrival at Whitestone Castle"), else from its start; cut between words, an ellipsis at each end that
    was cut. A narrator's paragraph may name the entity only in its fifth sentence."""
    if len(text) <= limit:
        return text
    at = said.start() if (said := name_said(text, names)) else 0
    # a third of the room before the name: what leads up to it, and more of what is said of it
    start = max(0, min(at - (limit - 2) // 3, len(text) - (limit - 2)))
    if start > 0 and not text[start - 1].isspace():
        start = next((i for i in range(start, at) if text[i - 1].isspace()), at)  # from the next word on
    end = start + limit - (start > 0) - 1  # room for the ellipses
    if end >= len(text):
        return ("…" if start else "") + text[start:]
    cut = text.rfind(" ", start, end + 1)
    end = cut if cut > at else end  # a word longer than the room is cut in it
    return ("…" if start else "") + text[start:end].rstrip(" ,;:") + "…"


def name_said(text: str, names: Iterable[str]) -> re.Match[str] | None:
    """Where ``text`` first says one of ``names`` (case aside, whole words, a plural or possessive too), else the
    longest capitalised end of a name it says ("Whitestone Castle" of "Arrival at Whitestone Castle"); None if
    neither."""
    names = [name.strip() for name in names if name.strip()]
    found = [match for name in names if (match := _said_at(text, name))]
    if not found:
        # an event the extractor named ("Death of Sylas Briarwood") is said by the name it ends with, and a person
        # by one word of it ("Watchmaster Bryce" for "Quest from Bryce Feelid" or "Bryce Feelid")
        tails = [" ".join(w[i:]) for w in (n.split() for n in names) for i in range(1, len(w)) if w[i][:1].isupper()]
        tails += [word for name in names for word in _capitalised_end(name)]
        found = next(([m] for tail in tails if (m := _said_at(text, tail))), [])
    return min(found, key=lambda m: m.start(), default=None)


def _capitalised_end(name: str) -> list[str]:
    """The words of the run of capitalised words ``name`` ends with: "Bryce", "Feelid" of "Quest from Bryce Feelid"
    (none of "Arrival at the ziggurat")."""
    words = name.split()
    run = list(itertools.takewhile(lambda word: word[:1].isupper(), reversed(words)))
    return run[::-1]


def _said_at(text: str, name: str) -> re.Match[str] | None:
    """Where ``text`` first says ``name``: case aside, whole words, a plural or possessive too."""
    return re.search(rf"(?<!\w){re.escape(name)}(?:s|['’]s)?(?!\w)", text, re.IGNORECASE)


def counted(n: int, one: str, many: str | None = None) -> str:
    """``n`` things, said for the DM: "1 fact", "2 facts", "1,204 lines", "3 entities" (``many`` when not just +s)."""
    return f"{n:,} {one if n == 1 else many or one + 's'}"


#: The shapes of an apostrophe a keyboard, a phone or a word processor writes ("Devo’ssa", "Devoʼssa", "Devo´ssa").
APOSTROPHES = "'’‘ʼʻ`´′"
#: The dashes a name's hyphen is typed as.
DASHES = "-‐‑‒–—"
#: Letters Unicode does not decompose that a keyboard without them writes as others: "Aethelric" of Æthelric, "Thorr"
#: of Þórr (ß is "ss" by casefolding).
LETTERS = str.maketrans({"æ": "ae", "œ": "oe", "ð": "d", "þ": "th", "ø": "o", "ł": "l", "đ": "d", "ħ": "h", "ı": "i"})


#: Characters that show nothing (a soft hyphen, zero-width spaces and joiners, direction marks, a byte-order mark) that
#: text pasted from a web page or a word processor carries inside a word: the SQL ``visible()`` (migrations/0026)
#: drops these, so "Mor\u00adwen" is found as Morwen, and the mask must read it so too.
INVISIBLES = frozenset(
    map(
        chr,
        [
            0xAD,
            0x180E,
            *range(0x200B, 0x2010),
            *range(0x202A, 0x202F),
            *range(0x2060, 0x2065),
            *range(0x2066, 0x206A),
            0xFEFF,
        ],
    )
)


@functools.lru_cache(maxsize=4096)
def _folded_char(char: str) -> str:
    if char in INVISIBLES:
        return ""
    if char in APOSTROPHES:
        return "'"
    if char in DASHES:
        return "-"
    decomposed = unicodedata.normalize("NFKD", char.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c)).translate(LETTERS)


def folded(text: str) -> tuple[str, list[int] | None]:
    """``text`` with a name's letters as any spelling of it writes them: casefolded, accents dropped (composed or
    decomposed), Æ Œ Ð Þ ß as two letters or one, every apostrophe "'" and every dash "-", no invisible character
    (:data:`INVISIBLES`) ("morwen" of "Mórwen" or "Mor\u200bwen", "devo'ssa" of "Devoʼssa"); and where each of its
    characters comes from, the offset in ``text`` (``len(text)`` after the last), or None where each is the one at
    its own offset."""
    if text.isascii():
        return text.lower().replace("`", "'"), None
    chars: list[str] = []
    at: list[int] = []
    for i, char in enumerate(text):
        chars.append(f := _folded_char(char))
        at.extend([i] * len(f))  # a combining accent adds nothing: it goes with the letter before it
    at.append(len(text))
    return "".join(chars), at


#: A campaign file names each entity once as itself and again in every fact about it (a two-year campaign's export:
#: 1,600 names, 43,000 times): pure, so each is checked once.
@functools.lru_cache(maxsize=16384)
def clean_name(value: str) -> str:
    """Names are stored NFC, trimmed, with inner whitespace collapsed; empty names, names with invisible or
    control characters, and names mixing scripts with a look-alike letter ("Vаx" with a Cyrillic а), are refused."""
    # The same name typed on two keyboards can arrive composed (é) or decomposed (e + ◌́): two entities that
    # look the same, unless both are NFC.
    value = unicodedata.normalize("NFC", value)
    start = len(value) - len(value.lstrip())
    end = len(value.rstrip())
    for position, char in enumerate(value):
        # Category C is control, format (zero-width joiners, bidi overrides), surrogate, private use and
        # unassigned: invisible in Discord, so two names differing by one would look the same to the DM, and a
        # bidi override shows "Gorrim" reversed. Tabs are only spacing, collapsed below like any other whitespace,
        # and so are line breaks at either end; one inside is two names on two lines. A joiner inside an emoji
        # ("🧙‍♂️") is part of the picture, not hidden between letters.
        if char in "\n\r":
            if start <= position < end:
                raise InvalidInputError(f"{value!r} has a line break at position {position + 1}: a name is one line")
            continue
        if unicodedata.category(char).startswith("C") and char != "\t" and not _emoji_joiner(value, position):
            raise InvalidInputError(f"{value!r} contains {described(char)} at position {position + 1}, {INVISIBLE}")
    name = " ".join(value.split())
    if not name:
        raise InvalidInputError("name must not be empty")
    if len(name) > 200:
        raise InvalidInputError(f"{name[:40] + '…'!r} is longer than 200 characters")
    if found := look_alikes(name):
        said = ", ".join(
            f"{char!r} (U+{ord(char):04X} {unicodedata.name(char, '?')}) looks like {script.title()} {plain!r}"
            for char, (plain, script) in found.items()
        )
        raise InvalidInputError(f"{name!r} mixes scripts: {said}; type it as {without_look_alikes(name)!r}")
    return name


#: A character's script ("LATIN", "CYRILLIC", "COMMON" for punctuation): the library's lookup is a binary search
#: in Python, cached as a long file brings the same few hundred characters thousands of times.
@functools.lru_cache(maxsize=4096)
def _script(char: str) -> str:
    from confusable_homoglyphs import categories  # 50 ms to import: only for a name that is not plain ASCII

    return categories.alias(char)


#: Scripts that a name may mix although some of their characters look alike (ロ and 口): Japanese is written so.
_CJK = frozenset({"HAN", "HIRAGANA", "KATAKANA", "HANGUL", "BOPOMOFO"})


def look_alikes(name: str) -> dict[str, tuple[str, str]]:
    """The letters of ``name`` that look like a plain letter of the script most of their word's letters are in
    ("Vаx" with a Cyrillic а): pasted, they make a second entity the DM cannot tell from the first. Each maps to
    that letter and its script. Each word is judged alone ("Sergei Петров", "Baba Яга" are fine), and only
    against the letters people type (not "ĸ" or "ʙ", which the confusables table also lists)."""
    found: dict[str, tuple[str, str]] = {}
    for word in name.split():
        found |= _word_look_alikes(word)
    return found


def _word_look_alikes(word: str) -> dict[str, tuple[str, str]]:
    if word.isascii():  # Latin and punctuation only: most names, and a 20,000-entity file, skip the tables
        return {}
    scripts = [script for char in word if (script := _script(char)) not in ("COMMON", "INHERITED")]
    if len(set(scripts)) < 2:
        return {}
    # The script meant is the one most letters are in; a tie goes to the first letter's.
    meant = max(scripts, key=lambda script: (scripts.count(script), -scripts.index(script)))
    from confusable_homoglyphs import confusables  # see _script

    found: dict[str, tuple[str, str]] = {}
    for item in confusables.is_confusable(word, greedy=True, preferred_aliases=[meant]) or []:
        char, script = item["character"], item["alias"]
        if script in ("COMMON", "INHERITED") or (script in _CJK and meant in _CJK):
            continue
        plain = [g["c"] for g in item["homoglyphs"] if len(g["c"]) == 1 and _script(g["c"]) == meant]
        if plain := [glyph for glyph in plain if _typed(glyph)]:
            found[char] = (min(plain, key=lambda glyph: not glyph.isascii()), meant)
    return found


def _typed(letter: str) -> bool:
    """A letter of the alphabets people type: ASCII, basic Greek, basic Cyrillic."""
    return letter.isascii() or "\u0370" <= letter <= "\u03ff" or "\u0400" <= letter <= "\u045f"


def without_look_alikes(name: str) -> str:
    """``name`` with each look-alike letter of another script replaced by the one it looks like ("Vаx" → "Vax"),
    word by word: a Cyrillic а is a look-alike in "Vаx", not in "Мара"."""
    return re.sub(
        r"\S+",
        lambda word: word[0].translate({ord(c): plain for c, (plain, _) in _word_look_alikes(word[0]).items()}),
        name,
    )


def _emoji_joiner(value: str, position: int) -> bool:
    """A zero-width joiner between two symbols (🧙 ZWJ ♂), the first maybe with its variation selector."""
    if value[position] != "\u200d" or not 0 < position < len(value) - 1:
        return False
    before = position - 1
    if value[before] == "\ufe0f" and before > 0:  # the emoji's variation selector: look at the emoji itself
        before -= 1
    return unicodedata.category(value[before]) in ("So", "Sk") and unicodedata.category(value[position + 1]) == "So"


#: How a refused character is called, after its code point and name.
INVISIBLE = "an invisible control character; remove it"

#: Bidi classes (``unicodedata.bidirectional``) of the explicit embedding, override and isolate controls
#: (U+202A-U+202E, U+2066-U+2069): invisible, they reorder what follows them, so "Gorrim" shows reversed, or as
#: another name, in Discord. The marks (LRM, RLM, ALM) that right-to-left text may need are not among them.
_BIDI_CONTROLS = frozenset({"LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"})


def described(char: str) -> str:
    """``U+202E RIGHT-TO-LEFT OVERRIDE``; a C0/C1 control has no name in Unicode: ``U+0007``."""
    name = unicodedata.name(char, "")
    return f"U+{ord(char):04X} {name}" if name else f"U+{ord(char):04X}"


def hidden_character(value: str, *, lines: bool = True) -> tuple[int, str] | None:
    """The first character of ``value`` that text shown to the DM or players may not hold, and its index: a bidi
    embedding, override or isolate control, or a C0/C1 control other than a line break or tab (when ``lines``;
    none of them when not). Emoji and their joiners, combining marks and right-to-left letters are text."""
    # no control or format character besides line breaks: most text, checked at C speed
    if (value.replace("\n", "").replace("\t", "").replace("\r", "") if lines else value).isprintable():
        return None
    for position, char in enumerate(value):
        if _hidden(char, lines):
            return position, char
    return None


def _hidden(char: str, lines: bool) -> bool:
    return unicodedata.bidirectional(char) in _BIDI_CONTROLS or (
        unicodedata.category(char) == "Cc" and not (lines and char in "\n\t\r")
    )


def without_hidden(text: str) -> str:
    """``text`` without what :func:`shown_text` refuses: for text a model wrote (a recap, an extracted
    description), which is kept without the character rather than refused for it."""
    return text if text.isprintable() else "".join(char for char in text if not _hidden(char, True))


def shown_text(value: str, *, lines: bool = True) -> str:
    """``value``, unless :func:`hidden_character` finds one (the message follows the field's name): free text the
    DM or a file gives (a description, a fact's value, an attribute) may hold line breaks (a vertical tab or form
    feed pasted from a word processor becomes one), a key (``lines`` false) not."""
    if lines and ("\v" in value or "\f" in value):
        # Word and PowerPoint write a line break within a paragraph as U+000B (and a page break as U+000C): pasted
        # from them, a description holds it where the DM sees a new line
        value = value.replace("\v", "\n").replace("\f", "\n")
    if found := hidden_character(value, lines=lines):
        position, char = found
        raise ValueError(f"contains {described(char)} at position {position + 1}, {INVISIBLE}")
    return value


def without_bidi_controls(text: str) -> str:
    """``text`` without its bidi embedding, override and isolate controls: what was said is kept, a stray control
    in a transcript is no reason to refuse the line, but it would reorder the line wherever it is shown."""
    if text.isprintable():
        return text
    return "".join(char for char in text if unicodedata.bidirectional(char) not in _BIDI_CONTROLS)


def check_alias_count(aliases: list[str]) -> list[str]:
    """``aliases``, unless there are more than :data:`MAX_ALIASES` of them."""
    if len(aliases) > MAX_ALIASES:
        raise ValueError(f"{len(aliases):,}, more than the {MAX_ALIASES} allowed: keep the names the table uses")
    return aliases


def heard_as_phrases(phrases: list[str], *, what: str = "heard as") -> list[str]:
    """What the recogniser writes for an entity's name, as the DM gives it: each trimmed as a name is, once
    (case aside), at most :data:`MAX_HEARD_AS` of them. A phrase is heard only as whole words said together, so
    one with a comma or full stop inside, more than :data:`MAX_HEARD_AS_WORDS` words, no letters or only words said
    all the time is refused. ``what``: "not heard as" checks phrases that are not the name (see
    :func:`not_heard_as_phrases`) the same way, but for the words said all the time."""
    seen: dict[str, str] = {}
    for phrase in phrases:
        try:
            text = clean_name(phrase)
        except InvalidInputError as exc:
            raise InvalidInputError(f"{what}: {exc}") from None
        if not re.search(r"\w", text):
            raise InvalidInputError(f"{what}: {text!r} has no word to hear")
        if mark := re.search(r"[,.;:!?…]", text):
            raise InvalidInputError(
                f"{what}: {text!r} has {mark.group()!r} inside; a name is never heard across it, so give the "
                "words as the recogniser writes them, without it"
            )
        if len(text.split()) > MAX_HEARD_AS_WORDS:
            raise InvalidInputError(f"{what}: {text!r} has more than {MAX_HEARD_AS_WORDS} words")
        if what == "heard as" and _said_all_the_time(text):
            raise InvalidInputError(
                f"heard as: {text!r} is only words said all the time (as 'the', 'not' or 'old man' are): every line "
                "saying it would get the name; give the words the recogniser writes for the name itself"
            )
        seen.setdefault(text.casefold(), text)
    if len(seen) > MAX_HEARD_AS:
        raise InvalidInputError(
            f"{what}: {len(seen):,} phrases, more than the {MAX_HEARD_AS} allowed: keep those the recogniser writes"
        )
    return list(seen.values())


def not_heard_as_phrases(phrases: list[str]) -> list[str]:
    """What the recogniser writes that is never the entity's name, though stage 1 may hear it so ("manta ray" is
    not Mentiri), as the DM gives it: checked as heard-as phrases are (:func:`heard_as_phrases`), but everyday
    words are what it protects, so they are not refused."""
    return heard_as_phrases(phrases, what="not heard as")


def _said_all_the_time(phrase: str) -> bool:
    """Whether every word of ``phrase`` is as common as stage 1's function words ("the", "not", "old man"): taught
    as a name, it would rewrite most lines of a campaign, stored and to come, and clearing it restores none."""
    # here, not at the top: the correction package builds on this module
    from memory.correction.evidence import MatchSettings, word_zipf

    common = MatchSettings().function_zipf
    return all(word_zipf(word) >= common for word in phrase.casefold().split())


def name_query(value: str) -> str:
    """A name as typed to look one up: stored names are NFC with whitespace collapsed (see :func:`clean_name`)."""
    return " ".join(unicodedata.normalize("NFC", value).split())


_APOSTROPHE = re.compile(f"[{APOSTROPHES}]")


def apostrophe_spellings(name: str) -> list[str]:
    """``name`` and the same name with each of :data:`APOSTROPHES` for its apostrophes: the one name a campaign file
    edited in a word processor writes "Kal’thar" for Kal'thar."""
    if not _APOSTROPHE.search(name):
        return [name]
    return [name, *(s for a in APOSTROPHES if (s := _APOSTROPHE.sub(a, name)) != name)]


#: Half of a UTF-16 surrogate pair (category Cs): valid in a Python string ("\ud800" in JSON), not in UTF-8 text.
_SURROGATE = re.compile("[\ud800-\udfff]")


def storable(value: Any) -> Any:
    """``value`` (text, or JSON-like data) as the database can keep it: PostgreSQL's text and jsonb hold no NUL
    character and no lone surrogate, and jsonb no NaN or infinity. Refused here, where the error can say what is
    wrong, not later (where one such value fails a whole batch)."""
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError("contains a NUL character (U+0000), which cannot be stored")
        if surrogate := _SURROGATE.search(value):
            raise ValueError(
                f"contains U+{ord(surrogate.group()):04X} at position {surrogate.start() + 1}, which is not a "
                "character (half of a UTF-16 surrogate pair, or a byte that is not UTF-8) and cannot be stored"
            )
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"must be a finite number, not {value}")
    elif isinstance(value, dict):
        for key, item in value.items():
            storable(key)
            storable(item)
    elif isinstance(value, list | tuple):
        for item in value:
            storable(item)
    return value


#: Longer than any utterance (a minute of speech is ~1 KB), and short enough that the text's full-text index entry
#: stays far below PostgreSQL's 1 MB tsvector limit (measured: at most ~4 bytes of tsvector per byte of text).
MAX_TEXT_BYTES = 64 * 1024
#: Speakers are indexed (a btree entry holds at most 2,704 bytes).
MAX_SPEAKER_CHARS = 200
#: Session titles are indexed (a btree entry holds at most 2,704 bytes); any file name fits, as a default title.
MAX_TITLE_CHARS = 300


def session_title(value: str) -> str:
    """A session title as stored and looked up: trimmed, storable, not overlong."""
    title = value.strip()
    try:
        shown_text(storable(title), lines=False)
    except ValueError as exc:
        raise InvalidInputError(f"session title {exc}") from None
    if len(title) > MAX_TITLE_CHARS:
        raise InvalidInputError(f"session title is longer than {MAX_TITLE_CHARS} characters: {title[:40]}…")
    return title


#: A fact's value is a state ("dead", "sleeping under Ironhold"), not notes: short enough that a reply quoting it
#: beside the fact it closed fits one Discord message. The one limit, whoever gives the value: the DM (a link, a
#: review edit, a campaign file) is told, an extractor's longer value is dropped (``memory.extraction.validate``),
#: and :class:`RelationshipIn` holds every other way in to it.
MAX_FACT_VALUE_CHARS = 500


def value_within_limit(value: str) -> str:
    """``value``, unless it is longer than a fact's value may be (the message follows the field's name)."""
    if len(value) > MAX_FACT_VALUE_CHARS:
        raise ValueError(
            f"has {len(value):,} characters; a fact's value has at most {MAX_FACT_VALUE_CHARS}: give the state "
            "(dead, sleeping under Ironhold) and put longer notes in the entity's description"
        )
    return value


def fact_value(value: str) -> str:
    """A fact's value as the DM gives it: NFC and trimmed, as a campaign file's; storable, not empty, not overlong."""
    try:
        text = value_within_limit(shown_text(unicodedata.normalize("NFC", storable(value)).strip()))
    except ValueError as exc:
        raise InvalidInputError(f"value {exc}") from None
    if not text:
        raise InvalidInputError("value: must not be empty")
    return text


def attribute_value(value: Any) -> Any:
    """The one rule for an attribute's value at every edge (campaign file, slash command, CLI, the store): text,
    a number, true/false, empty, or a list of those — what a campaign file can hold, so every entity exports."""
    if isinstance(value, list):
        return [_scalar(item, in_list=True) for item in value]
    return _scalar(value, in_list=False)


def _scalar(value: Any, *, in_list: bool) -> Any:
    if isinstance(value, str):
        return shown_text(storable(unicodedata.normalize("NFC", value)))
    if value is None or isinstance(value, bool | int | float):
        return storable(value)
    kinds: dict[type, str] = {dict: "a mapping", list: "a list"}
    kind = kinds.get(type(value), type(value).__name__)
    allowed = "text, a number, true/false or empty" + ("" if in_list else ", or a list of those")
    raise ValueError(f"must be {allowed}, not {kind}")


def check_attributes(attributes: dict[str, Any]) -> dict[str, Any]:
    """``attributes`` by :func:`attribute_value`; a refusal names the attribute."""
    checked: dict[str, Any] = {}
    for key, value in attributes.items():
        try:
            checked[shown_text(storable(key), lines=False)] = attribute_value(value)
        except ValueError as exc:
            raise InvalidInputError(f"attribute {key!r} {exc}") from None
    return checked


def typed_attribute(text: str) -> Any:
    """An attribute's value typed as text (`--attr age=55`, `/entity add` `age=55`): one that is valid JSON (a
    number, true, a list, "quoted text") keeps its type, as in a campaign file; anything else is the text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def attribute_text(value: Any) -> str:
    """An attribute's value as a DM types it (:func:`typed_attribute`): text as it is, anything else as JSON
    (``true``, ``[1, 2]``), not as Python prints it (``True``, ``['a']``)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def clock(seconds: float) -> str:
    """A time into a recording, whole seconds down: 1:02:03 or 2:03."""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02}:{secs:02}" if hours else f"{minutes}:{secs:02}"


def seconds(value: float | None) -> float | None:
    """A time into the session (``start_s``, ``end_s``): nothing is said before the session starts."""
    if value is not None and value < 0:
        raise ValueError(f"must not be negative (seconds from the session start), not {value}")
    return value
