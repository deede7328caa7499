"""Typed models at the edges of the memory core (pydantic, Graphiti style).

Rows come out of PostgreSQL as these models; callers hand the ``*In`` models in.
"""

from __future__ import annotations

import difflib
import functools
import json
import math
import re
import unicodedata
from collections.abc import Callable
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memory.errors import InvalidInputError

#: A fact below this confidence waits for the DM in the review queue.
DEFAULT_ACCEPT_THRESHOLD = 0.7
#: Aliases of one entity: the names a table uses for it fit; every alias is matched in every utterance.
MAX_ALIASES = 50
#: Phrases the recogniser writes for one entity's name ("from skin" / Frumpkin), as the DM taught them.
MAX_HEARD_AS = 50
#: Words of a heard-as phrase, at most: stage 1 looks no further for a mention (``MatchSettings.max_window_words``).
MAX_HEARD_AS_WORDS = 7


class EntityType(StrEnum):
    npc = "npc"
    location = "location"
    item = "item"
    faction = "faction"
    quest = "quest"
    event = "event"
    concept = "concept"
    player = "player"
    #: The name older versions stored and wrote; still read (files, commands, Python) as ``location``.
    place = "location"

    @classmethod
    def _missing_(cls, value: object) -> EntityType | None:
        # "place", "Location": what a DM or an older file writes; anything else stays an error.
        if isinstance(value, str):
            key = value.strip().casefold()
            key = ENTITY_TYPE_SYNONYMS_ACCEPTED.get(key, key)
            for member in cls:
                if member.value == key:
                    return member
        return None


#: Other names accepted as an entity type without a word: the one an older version used.
ENTITY_TYPE_SYNONYMS_ACCEPTED = {"place": "location"}

#: Words a DM may write for an entity type, offered as "did you mean" (never taken silently: "city" might be a
#: faction in someone's world). Spelling is matched separately (difflib).
ENTITY_TYPE_SYNONYMS = {
    "place": "location",
    "city": "location",
    "town": "location",
    "village": "location",
    "region": "location",
    "area": "location",
    "dungeon": "location",
    "building": "location",
    "scene": "location",
    "map": "location",
    "site": "location",
    "character": "npc",
    "person": "npc",
    "creature": "npc",
    "monster": "npc",
    "pc": "player",
    "player_character": "player",
    "organisation": "faction",
    "organization": "faction",
    "guild": "faction",
    "group": "faction",
    "family": "faction",
    "object": "item",
    "artifact": "item",
    "artefact": "item",
    "weapon": "item",
    "equipment": "item",
    "mission": "quest",
    "journal": "concept",
    "note": "concept",
    "lore": "concept",
    "handout": "concept",
}


def suggest_entity_type(value: str) -> str | None:
    """The entity type a DM probably meant by ``value``: by synonym ("city" → location), else by spelling
    ("locaton" → location), else None. Only the type's own name is compared for spelling: "location" must never
    read as "faction", which it shares an ending with."""
    key = "_".join(str(value).strip().casefold().split())
    if key in ENTITY_TYPE_SYNONYMS:
        return ENTITY_TYPE_SYNONYMS[key]
    types = [t.value for t in EntityType]
    if key in types:
        return key
    close = difflib.get_close_matches(key, [*types, *ENTITY_TYPE_SYNONYMS], n=1, cutoff=0.75)
    if not close:
        return None
    return ENTITY_TYPE_SYNONYMS.get(close[0], close[0])


class ReviewStatus(StrEnum):
    accepted = "accepted"
    pending = "pending"
    rejected = "rejected"


class Visibility(StrEnum):
    public = "public"
    secret = "secret"  # DM-only


class Source(StrEnum):
    stated = "stated"
    inferred = "inferred"
    dm = "dm"
    campaign_file = "campaign_file"


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, an ellipsis saying it was."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def counted(n: int, one: str, many: str | None = None) -> str:
    """``n`` things, said for the DM: "1 fact", "2 facts", "1,204 lines", "3 entities" (``many`` when not just +s)."""
    return f"{n:,} {one if n == 1 else many or one + 's'}"


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
            raise InvalidInputError(f"{value!r} contains {described(char)} at position {position + 1}, {_INVISIBLE}")
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
_INVISIBLE = "an invisible control character; remove it"

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
        raise ValueError(f"contains {described(char)} at position {position + 1}, {_INVISIBLE}")
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
    kind = {dict: "a mapping", list: "a list"}.get(type(value), type(value).__name__)
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


def seconds(value: float | None) -> float | None:
    """A time into the session (``start_s``, ``end_s``): nothing is said before the session starts."""
    if value is not None and value < 0:
        raise ValueError(f"must not be negative (seconds from the session start), not {value}")
    return value


class Provenance(BaseModel):
    """Where a fact came from: ``{session_id, timestamp, confidence, source, dm_confirmed}``."""

    model_config = ConfigDict(extra="allow")

    source: Source = Source.dm
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    session_id: int | None = None
    timestamp: float | None = None  # seconds into the session
    entry_ids: list[int] = Field(default_factory=list)
    dm_confirmed: bool = False
    review_reason: str | None = None  # why an extracted fact waits for the DM although it was sure (its evidence)


class Campaign(BaseModel):
    id: int
    guild_id: int
    name: str
    description: str = ""
    system: str = ""
    active: bool = False
    settings: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime


class Session(BaseModel):
    id: int
    campaign_id: int
    title: str
    started_at: datetime
    ended_at: datetime | None = None
    summary: str | None = None
    #: A recorded session's DM: the user id (``Entry.speaker_id``) whose lines are the narrator's.
    dm_speaker_id: str | None = None


class Correction(BaseModel):
    """One substitution made in an utterance: the misheard span and the canonical name it became."""

    span: str
    replacement: str
    start: int  # character offsets of the span in the raw text
    end: int
    entity_id: int | None = None
    score: float
    stage: int = 1


class EntryIn(BaseModel):
    """One utterance for L1."""

    speaker: str
    text: str
    raw_text: str | None = None  # defaults to ``text`` when nothing was corrected
    speaker_id: str | None = None
    start_s: float = 0.0  # seconds from the session start
    end_s: float | None = None
    seq: int | None = None  # position in the session; assigned when omitted
    ref: str | None = None  # source reference: transcript line id, audio offset …
    corrections: list[Correction] = Field(default_factory=list)
    suspects: list[tuple[int, int]] = Field(default_factory=list)  # raw-text spans for correction stage 2

    _seconds = field_validator("start_s", "end_s")(classmethod(lambda cls, v: seconds(v)))


class Entry(BaseModel):
    id: int
    campaign_id: int
    session_id: int
    seq: int
    speaker: str
    speaker_id: str | None
    raw_text: str
    text: str
    start_s: float
    end_s: float | None
    duration_s: float | None
    ref: str | None
    corrections: list[Correction]
    suspects: list[tuple[int, int]] = Field(default_factory=list)
    created_at: datetime


class EntryHit(Entry):
    score: float


class ChunkIn(BaseModel):
    """An embedded window of consecutive utterances for L2."""

    key: str  # stable identity of the window, e.g. ``s3:12-20``; upserts replace by key
    session_id: int
    text: str
    embedding: list[float]
    entry_ids: list[int] = Field(default_factory=list)
    speakers: list[str] = Field(default_factory=list)
    entity_ids: list[int] = Field(default_factory=list)
    topics: list[str] = Field(default_factory=list)
    start_s: float | None = None
    end_s: float | None = None


class Chunk(BaseModel):
    id: int
    campaign_id: int
    session_id: int
    key: str
    text: str
    entry_ids: list[int]
    speakers: list[str]
    entity_ids: list[int]
    topics: list[str]
    start_s: float | None
    end_s: float | None


class ChunkHit(Chunk):
    score: float  # cosine similarity, 1.0 = identical


class EntityIn(BaseModel):
    name: str
    type: EntityType
    description: str = ""
    aliases: list[str] = Field(default_factory=list)
    heard_as: list[str] = Field(default_factory=list)  # what the recogniser writes for its name (not an alias)
    not_heard_as: list[str] = Field(default_factory=list)  # what it writes that is never the name ("manta ray")
    attributes: dict[str, Any] = Field(default_factory=dict)
    visibility: Visibility = Visibility.public
    status: ReviewStatus = ReviewStatus.accepted
    provenance: Provenance = Field(default_factory=Provenance)

    _clean_name = field_validator("name")(classmethod(lambda cls, v: clean_name(v)))
    _storable = field_validator("description")(classmethod(lambda cls, v: shown_text(storable(v))))
    _attributes = field_validator("attributes")(classmethod(lambda cls, v: check_attributes(v)))
    _heard_as = field_validator("heard_as")(classmethod(lambda cls, v: heard_as_phrases(v)))
    _not_heard_as = field_validator("not_heard_as")(classmethod(lambda cls, v: not_heard_as_phrases(v)))

    @field_validator("aliases")
    @classmethod
    def _clean_aliases(cls, v: list[str]) -> list[str]:
        seen: dict[str, str] = {}
        for alias in v:
            a = clean_name(alias)
            seen.setdefault(a.casefold(), a)
        return check_alias_count(list(seen.values()))


class Entity(BaseModel):
    id: int
    campaign_id: int
    name: str
    type: EntityType
    description: str
    aliases: list[str]
    attributes: dict[str, Any]
    visibility: Visibility
    status: ReviewStatus
    provenance: Provenance
    created_at: datetime
    updated_at: datetime
    heard_as: list[str] = Field(default_factory=list)  # what the recogniser writes for its name: the DM's only
    not_heard_as: list[str] = Field(default_factory=list)  # what it writes that is never the name: the DM's only


#: relationships.type holds at most this many characters (migrations/0001_init.sql).
MAX_RELATIONSHIP_TYPE_CHARS = 100


#: Relationship types that read the same both ways (the design's ALLIED_WITH, HOSTILE_TO): one fact, whichever end
#: it was stated from; each end's card shows it.
SYMMETRIC = frozenset({"allied_with", "hostile_to"})


@functools.lru_cache(maxsize=4096)  # pure, and a file's thousands of facts use a few dozen types
def relationship_type(value: str) -> str:
    """``"Works At"`` → ``works_at``, however it is given (a command, a campaign file). Refused as a campaign file
    refuses it, or the campaign could not be exported; the messages follow the field's name ("type …")."""
    kind = "_".join(unicodedata.normalize("NFC", storable(value)).casefold().split())
    if not kind:
        raise ValueError("must not be empty")
    if hidden := next((char for char in kind if unicodedata.category(char).startswith("C")), None):
        raise ValueError(f"contains {described(hidden)}, {_INVISIBLE}")
    if len(kind) > MAX_RELATIONSHIP_TYPE_CHARS:
        raise ValueError(f"has {len(kind):,} characters; a relationship type has at most {MAX_RELATIONSHIP_TYPE_CHARS}")
    return kind


class RelationshipIn(BaseModel):
    """A typed edge between two entities, or an attribute fact about one (``target`` empty, ``value`` set)."""

    source_id: int
    type: str
    target_id: int | None = None
    value: str | None = None
    attributes: dict[str, Any] = Field(default_factory=dict)
    visibility: Visibility = Visibility.public
    provenance: Provenance = Field(default_factory=Provenance)
    status: ReviewStatus | None = None  # None: decided by provenance confidence against the threshold

    _value = field_validator("value")(
        classmethod(lambda cls, v: v if v is None else value_within_limit(shown_text(storable(v))))
    )
    _attributes = field_validator("attributes")(classmethod(lambda cls, v: check_attributes(v)))

    _type = field_validator("type")(classmethod(lambda cls, v: relationship_type(v)))


class Relationship(BaseModel):
    id: int
    campaign_id: int
    source_id: int
    source_name: str
    type: str
    target_id: int | None
    target_name: str | None
    value: str | None
    attributes: dict[str, Any]
    visibility: Visibility
    status: ReviewStatus
    provenance: Provenance
    valid_from: datetime
    valid_to: datetime | None
    superseded_by: int | None
    created_at: datetime

    def describe(self) -> str:
        other = self.target_name if self.target_id is not None else self.value
        return f"{self.source_name} —{self.type}→ {other}"

    def seen_from(self, entity_id: int) -> Relationship:
        """The fact as ``entity_id``'s card says it: a symmetric one (allied_with) read from that end, so either
        ally's card says "… —allied_with→ the other"; any other fact as it is."""
        if self.type not in SYMMETRIC or self.target_id != entity_id or self.source_id == entity_id:
            return self
        assert self.target_name is not None
        return self.model_copy(
            update={
                "source_id": self.target_id,
                "source_name": self.target_name,
                "target_id": self.source_id,
                "target_name": self.source_name,
            }
        )


class PastFact(Relationship):
    """A fact that no longer holds (a later one closed it): when it held and where it was heard."""

    session_title: str | None = None  # of the session it was heard in, while that session is kept

    def heard(self) -> str:
        if self.session_title is not None:
            return f"heard in {self.session_title}"
        if self.provenance.session_id is not None:
            return "heard in a session since deleted"
        return {Source.dm: "said by the DM", Source.campaign_file: "from the campaign file"}.get(
            self.provenance.source, self.provenance.source.value
        )

    def describe_past(self, secret_mark: str = "") -> str:
        """``Ember Key —owned_by→ Kael (2025-04-01 → 2025-05-01, heard in Night 2)``, dates in UTC."""
        assert self.valid_to is not None
        held = f"{self.valid_from.astimezone(UTC):%Y-%m-%d} → {self.valid_to.astimezone(UTC):%Y-%m-%d}"
        mark = secret_mark if self.visibility == Visibility.secret else ""
        return f"{self.describe()}{mark} ({held}, {self.heard()})"


class Mention(BaseModel):
    """A line of the log that names an entity: where its name was last said."""

    session_id: int
    title: str
    speaker: str
    start_s: float
    text: str
    ref: str | None

    def where(self) -> str:
        return where_said(self.title, self.start_s, self.ref)


def where_said(title: str, start_s: float | None, ref: str | None) -> str:
    """The session and the line's time in it, or its source ("turn 1098") when the transcript had no times
    (a CRD3 episode, an untimed file): every such line is "at 0:00", which says nothing."""
    if start_s or (start_s is not None and not ref):
        minutes, secs = divmod(int(start_s), 60)
        hours, minutes = divmod(minutes, 60)
        return f"{title} at {f'{hours}:{minutes:02d}' if hours else minutes}:{secs:02d}"
    return f"{title} ({ref})" if ref else title


class Neighbourhood(BaseModel):
    """An entity with the accepted, currently valid relationships around it and the entities they reach."""

    entity: Entity
    relationships: list[Relationship]
    connected: list[Entity]

    def facts_and_sessions(self, shown: int = 3, clip: Callable[[str], str] = str) -> tuple[list[Relationship], str]:
        """The relationships other than the sessions the entity took part in, and those sessions as one line
        ("" if none): the last ``shown`` played by title, the rest counted. A two-year campaign has a hundred.
        ``KnowledgeGraph.neighbourhood`` gives them in the order they were played."""
        sessions = [r for r in self.relationships if r.type == "took_part_in" and r.source_id == self.entity.id]
        others = [r.seen_from(self.entity.id) for r in self.relationships if r not in sessions]
        if not sessions:
            return others, ""
        latest = sessions[::-1][:shown]
        titles = ", ".join(clip(r.target_name or "") for r in latest)
        more = f" and {len(sessions) - len(latest)} earlier" if len(sessions) > len(latest) else ""
        return others, f"took part in {len(sessions)} session{'s' * (len(sessions) != 1)}: {titles}{more}"


class MergeResult(BaseModel):
    """What merging one entity into another did, for the DM's reply."""

    entity: Entity  # the one merged into, as it is now
    merged: Entity  # the one merged, as it was
    facts_moved: int  # now on ``entity``
    duplicates_dropped: int  # already recorded on ``entity``: one copy kept
    self_loops_dropped: int  # between the two: nothing left to say once they are one
    facts_made_secret: int  # of a secret entity merged into a public one: players saw none of them
    aliases_added: list[str]
    aliases_hidden: list[str] = Field(default_factory=list)  # of those, the ones players read masked (secret entity)
    names_withheld: list[str]  # of a secret entity merged into a public one: aliases are public
    description_dropped: str = ""  # ``merged``'s, not kept: ``entity`` has its own
    attributes_dropped: dict[str, Any] = Field(default_factory=dict)  # ``merged``'s where ``entity``'s differ

    def hidden_from_players(self) -> str:
        """For the DM, after the new aliases: those players read masked ('' when none)."""
        if not self.aliases_hidden:
            return ""
        which = "" if self.aliases_hidden == self.aliases_added else ", ".join(self.aliases_hidden) + " "
        return f" ({which}hidden from players, as {self.entity.name} is secret)"

    def dropped(self) -> str:
        """What of ``merged`` was not kept, said with the text (shortened) the DM may want to copy into the one
        kept; '' when nothing was dropped."""
        said = []
        text = " ".join(self.description_dropped.split())
        if text:
            text = clip(text, 300)
            said.append(f"{self.merged.name}'s description was dropped, as {self.entity.name} has its own: {text!r}")
        if self.attributes_dropped:
            theirs = ", ".join(f"{k}: {v}" for k, v in self.attributes_dropped.items())
            ours = ", ".join(f"{k}: {self.entity.attributes.get(k)}" for k in self.attributes_dropped)
            were = "was" if len(self.attributes_dropped) == 1 else "were"
            said.append(f"{self.merged.name}'s {theirs} {were} dropped, as {self.entity.name} has {ours}")
        return "; ".join(said)

    def describe(self) -> str:
        done = [counted(self.facts_moved, "fact") + " moved"]
        if self.duplicates_dropped:
            done.append(counted(self.duplicates_dropped, "duplicate fact") + " dropped")
        if self.self_loops_dropped:
            done.append(counted(self.self_loops_dropped, "fact") + " between the two dropped")
        if self.aliases_added:
            done.append("new aliases: " + ", ".join(self.aliases_added) + self.hidden_from_players())
        if self.names_withheld:
            done.append(
                f"{self.merged.name} was secret: its names ({', '.join(self.names_withheld)}), description and "
                f"attributes were left out (aliases are public), {counted(self.facts_made_secret, 'fact')} made secret"
            )
        if dropped := self.dropped():
            done.append(dropped)
        return f"Merged {self.merged.name} into {self.entity.name}: {'; '.join(done)}."


class LinkResult(BaseModel):
    """What linking two entities, or recording an attribute fact, did, for the DM's reply."""

    relationship: Relationship
    outcome: Literal["linked", "already linked", "made public", "made secret"]
    closed: list[Relationship] = Field(default_factory=list)  # the facts it contradicted, now history

    def describe(self, secret_mark: str = "") -> str:
        """``secret_mark`` follows each secret fact (" 🔒"), so it cannot be read as the closed one's."""

        def fact(r: Relationship) -> str:
            return r.describe() + (secret_mark if r.visibility == Visibility.secret else "")

        said = {
            "linked": "Linked",
            "already linked": "Already linked:",
            "made public": "Now public:",
            "made secret": "Now secret:",
        }
        closed = "; closed: " + "; ".join(fact(r) for r in self.closed) if self.closed else ""
        return f"{said[self.outcome]} {fact(self.relationship)}{closed}"


class UnlinkResult(BaseModel):
    """What unlinking removed, and the facts those had closed that are current again (unlink is an undo)."""

    removed: list[Relationship]
    reopened: list[Relationship]

    def describe(self) -> str:
        said = "Unlinked " + "; ".join(r.describe() for r in self.removed)
        if self.reopened:
            said += "; current again: " + "; ".join(r.describe() for r in self.reopened)
        return said


class PathStep(BaseModel):
    entity_id: int
    name: str
    depth: int
    via: int  # the relationship that reached it


class ReviewKind(StrEnum):
    entity = "entity"
    fact = "fact"


class ReviewItem(BaseModel):
    """A pending entity or fact; ``ref`` (``e12`` / ``f34``) names it in buttons and on the CLI."""

    kind: ReviewKind
    id: int
    created_at: datetime
    entity: Entity | None = None
    fact: Relationship | None = None
    said: Mention | None = None  # its best line (the DM's, else the first): what the DM checks before deciding
    lines: int = 0  # how many lines it was drawn from: the weight of its evidence
    closed: list[Relationship] = Field(default_factory=list)  # accepting the fact closed these: now history
    outdated_by: Relationship | None = None  # accepted, the fact was history at once: this later one stands

    @property
    def ref(self) -> str:
        return f"{self.kind.value[0]}{self.id}"

    def settled(self) -> str:
        """What accepting the fact did to the facts it contradicts, for the DM's reply ('' when nothing)."""
        if self.outdated_by is not None:
            return f"kept as history, as a later fact stands: {self.outdated_by.describe()}"
        return "closed: " + "; ".join(r.describe() for r in self.closed) if self.closed else ""

    def describe(self) -> str:
        if self.entity is not None:
            e = self.entity
            return f"new {e.type.value} {e.name!r}" + (f": {e.description}" if e.description else "")
        assert self.fact is not None
        return self.fact.describe()


class PromptEntity(BaseModel):
    """An accepted entity as the speech recogniser's prompt weighs it (``memory.voice.prompt``)."""

    model_config = ConfigDict(frozen=True)

    id: int
    name: str
    aliases: tuple[str, ...] = ()
    cast: bool = False  # a player character
    pinned: bool = False  # the DM wants its names in the prompt
    said_lately: int = 0  # passages of the campaign's last sessions that name it
    degree: int = 0  # facts it takes part in
