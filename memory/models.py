"""Typed models at the edges of the memory core (pydantic, Graphiti style).

Rows come out of PostgreSQL as these models; callers hand the ``*In`` models in.
"""

from __future__ import annotations

import difflib
import functools
import re
import unicodedata
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import UTC, date, datetime, time
from enum import StrEnum
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memory.text import (
    INVISIBLE,
    check_alias_count,
    check_attributes,
    clean_name,
    clip,
    clock,
    counted,
    described,
    heard_as_phrases,
    not_heard_as_phrases,
    seconds,
    shown_text,
    storable,
    value_within_limit,
)

#: A fact below this confidence waits for the DM in the review queue.
DEFAULT_ACCEPT_THRESHOLD = 0.7


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
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        # pydantic lists each member by name, the alias too: a tool's schema and its errors said "location" twice
        schema = handler(source)
        schema["members"] = list(dict.fromkeys(schema["members"]))
        return schema

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


#: The entity types that are people: who dies, gives, receives or is kin, and is called by a first or last name.
PERSON_TYPES = frozenset({EntityType.npc, EntityType.player})


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


def played_on(day: date) -> datetime:
    """When a session given only its day (``--started 2026-11-28``) started: noon UTC, that day in UTC (every
    citation's date); :attr:`Session.date_only` says it was a day alone."""
    return datetime.combine(day, time(12), UTC)


def start_of(when: date) -> tuple[datetime, bool]:
    """A session's start as stored, and whether it is a day alone: a ``date`` (no time given) is :func:`played_on`
    it, a ``datetime`` itself."""
    return (when, False) if isinstance(when, datetime) else (played_on(when), True)


class Session(BaseModel):
    id: int
    campaign_id: int
    title: str
    started_at: datetime
    ended_at: datetime | None = None
    summary: str | None = None
    #: A recorded session's DM: the user id (``Entry.speaker_id``) whose lines are the narrator's.
    dm_speaker_id: str | None = None
    #: Given only its day (``started_at`` is noon UTC that day): no time of day to show.
    date_only: bool = False

    @property
    def day_only(self) -> str | None:
        """The day a session given only its day was played ("2026-03-14"), as given: no time zone may move it
        (noon UTC is the next day at UTC+12 and east); None for a session with a time of day."""
        return f"{self.started_at.astimezone(UTC):%Y-%m-%d}" if self.date_only else None

    def started(self, fmt: str = "%Y-%m-%d %H:%M %Z") -> str:
        """When the session started in this machine's time zone (``fmt``), or the day alone it was given."""
        return self.day_only or f"{self.started_at.astimezone():{fmt}}"


class Correction(BaseModel):
    """One substitution made in an utterance: the misheard span and the canonical name it became."""

    span: str
    replacement: str
    start: int  # character offsets of the span in the raw text
    end: int
    entity_id: int | None = None
    score: float
    stage: int = 1


#: A recogniser's word confidence.
Probability = Annotated[float, Field(ge=0.0, le=1.0)]


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
    # the recogniser's, per token of ``tokenize(raw_text)`` (None: not given); stage 2's evidence for ordinary words
    confidences: list[Probability | None] | None = None

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
    confidences: list[float | None] | None = None
    created_at: datetime


class EntryHit(Entry):
    score: float


class ChunkIn(BaseModel):
    """A window of consecutive utterances for L2, embedded when written before lines had vectors."""

    key: str  # stable identity of the window, e.g. ``s3:12-20``; upserts replace by key
    session_id: int
    text: str
    embedding: list[float] | None = None
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


#: Relationship types that read the same both ways (the design's ALLIED_WITH, HOSTILE_TO, and ties of family or
#: friendship, as the rule extractor's "the sister of" gives sibling_of): one fact, whichever end it was stated from;
#: each end's card shows it.
SYMMETRIC = frozenset(
    {
        "allied_with",
        "ally_of",
        "hostile_to",
        "enemy_of",
        "sibling_of",
        "spouse_of",
        "married_to",
        "cousin_of",
        "friend_of",
        "friends_with",
    }
)

#: Relationship types that state another type's fact from its other end: "Mira has the Sunblade" is "the Sunblade
#: owned_by Mira", "Balcor leader_of Greywatch" is "Greywatch ruled_by Balcor". The graph reads an edge of one as
#: the other (:func:`memory.graph.rules.one_way`), so a new holder or ruler, stated from either end, closes the old.
#: The holding verbs are those the rule extractor files as the type ("Mira carried the Sunblade"), and ``owns``,
#: which a VTT import writes for an item on a character sheet: "Thessaly has the Key" closes a loaded "Quillon owns
#: the Key", and an item moved between sheets is the new sheet's alone when imported again.
#: An item many sheets hold (a "Longsword +1", a "Potion of Healing") is a kind of item, not one object: see
#: :data:`HELD_BY_MANY`. "killed" is what the rule extractor files for "Grog slew Jazna"; kin and teachers are one
#: fact from either end.
INVERSE = {
    **dict.fromkeys("has had owns owned holds held carries carried takes took steals stole".split(), "owned_by"),
    **dict.fromkeys(["wields", "wielded"], "wielded_by"),
    "leader_of": "ruled_by",
    "killed": "killed_by",
    "parent_of": "child_of",
    "mentor_of": "student_of",
}

#: An item's attribute (``true``) saying it is a kind of item many hold, not one object: its holders (``owned_by``
#: and ``wielded_by``, from either end) add up instead of closing each other, so "Grog has the Longsword +1" takes it
#: from no sheet. An import sets it on an item several of its sheets hold; the DM may set it by hand.
HELD_BY_MANY = "held_by_many"

#: Relationship types that state another type's fact from the same end, in other words: "the Iron Circle led_by
#: Greta" is "the Iron Circle ruled_by Greta" (and so the other end of "Greta leader_of the Iron Circle"), "Ilsa
#: ally_of Serah" is "Ilsa allied_with Serah". Weighed as that type, as :data:`INVERSE` is. Not ``located_at`` for
#: ``located_in``, nor ``belongs_to`` for ``member_of`` (an item belongs to its holder): alike, not the same.
SYNONYM = {
    "led_by": "ruled_by",
    "ally_of": "allied_with",
    "enemy_of": "hostile_to",
    "friends_with": "friend_of",
    "married_to": "spouse_of",
}


#: How a DM reads a relationship type between two entities, where its own words do not read as English
#: ("Vex leader_of Vox Machina" is "Vex leads Vox Machina"). Both ends of :data:`INVERSE` and :data:`SYNONYM` are
#: here, so a fact reads right from whichever end it was stated. Any other type reads as its words
#: (:func:`relation_words`). The machines' outputs (``--json``, the campaign file, MCP's fields) keep the type.
RELATION_WORDS = {
    **{
        f"{place}_{prep}": f"is {place} {prep}"
        for place in ("located", "based", "found", "hidden")
        for prep in ("in", "at")
    },
    "born_in": "was born in",
    "member_of": "is a member of",
    "part_of": "is part of",
    "leader_of": "leads",
    "ruled_by": "is ruled by",
    "led_by": "is led by",
    "owned_by": "is owned by",
    "wielded_by": "is wielded by",
    "killed_by": "was killed by",
    **{
        f"{kin}_of": f"is {'an' if kin[0] in 'aeiou' else 'a'} {kin} of"
        for kin in ("parent", "child", "sibling", "cousin", "mentor", "student", "friend", "rival", "enemy", "ally")
    },
    "spouse_of": "is married to",
    "married_to": "is married to",
    "friends_with": "is friends with",
    "allied_with": "is allied with",
    "hostile_to": "is hostile to",
    "involved_in": "is involved in",
    "quest_giver": "gives the quest",
    "gives_quest": "gives the quest",
}
#: How a DM reads a state (a fact with a value): "Grog status dead" is "Grog is dead". Any other is "Brom —
#: occupation: blacksmith".
STATE_WORDS = {"status": "is"}


def relation_words(type: str) -> str:
    """A relationship type as a DM reads it: "leader_of" → "leads", "secretly_controls" → "secretly controls"."""
    return RELATION_WORDS.get(type) or " ".join(type.split("_"))


def fact_words(source: str, type: str, target: str | None, value: str | None = None) -> str:
    """A fact as a DM reads it, from its source: "Vex leads Vox Machina" (``target``), "Grog is dead" or "Brom —
    occupation: blacksmith" (a state, ``value``)."""
    if target is not None:
        return f"{source} {relation_words(type)} {target}"
    if type in STATE_WORDS:
        return f"{source} {STATE_WORDS[type]} {value}"
    return f"{source} — {relation_words(type)}: {value}"


@functools.lru_cache(maxsize=4096)  # pure, and a file's thousands of facts use a few dozen types
def relationship_type(value: str) -> str:
    """``"Works At"`` → ``works_at``, however it is given (a command, a campaign file). Refused as a campaign file
    refuses it, or the campaign could not be exported; the messages follow the field's name ("type …")."""
    kind = "_".join(unicodedata.normalize("NFC", storable(value)).casefold().split())
    if not kind:
        raise ValueError("must not be empty")
    if hidden := next((char for char in kind if unicodedata.category(char).startswith("C")), None):
        raise ValueError(f"contains {described(hidden)}, {INVISIBLE}")
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
        """The fact with its type as stored, for machines and logs: "Vex —leader_of→ Vox Machina"."""
        other = self.target_name if self.target_id is not None else self.value
        return f"{self.source_name} —{self.type}→ {other}"

    def in_words(self) -> str:
        """The fact as a DM reads it: "Vex leads Vox Machina" (:func:`fact_words`)."""
        target = (self.target_name or "") if self.target_id is not None else None
        return fact_words(self.source_name, self.type, target, self.value)

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


#: The tools a world is imported from (a fact's ``imported_from``), as the DM knows them.
IMPORT_TOOLS = {"foundry": "Foundry VTT", "roll20": "Roll20", "kanka": "Kanka", "csv": "CSV"}


class PastFact(Relationship):
    """A fact that no longer holds (a later one closed it): when it held and where it was heard. Or one that holds,
    with where it was heard (:meth:`since`)."""

    session_title: str | None = None  # of the session it was heard in, while that session is kept
    #: The ref of the line it was heard in: a line of a transcript without times is at 0:00, which says nothing
    line_ref: str | None = None

    def heard(self) -> str:
        if self.session_title is not None:  # and when in it: the line the DM would look up
            return f"heard in {where_said(self.session_title, self.provenance.timestamp, self.line_ref)}"
        if self.provenance.session_id is not None:
            return "heard in a session since deleted"
        extra = self.provenance.model_extra or {}
        if self.provenance.source == Source.campaign_file and (tool := extra.get("imported_from")):
            # an import loads as a campaign file does: the DM looks for the tool and its export, not a file
            files = ", ".join(str(f) for f in extra.get("import_files") or ())
            return f"imported from {IMPORT_TOOLS.get(tool, tool)}" + (f" ({clip(files, 80)})" if files else "")
        return {Source.dm: "said by the DM", Source.campaign_file: "from the campaign file"}.get(
            self.provenance.source, self.provenance.source.value
        )

    def describe_past(self, secret_mark: str = "") -> str:
        """``Ember Key is owned by Kael (2025-04-01 → 2025-05-01, heard in Night 2)``, dates in UTC; ``until
        2025-05-01`` for a campaign file's fact that a night played before it was loaded ended."""
        assert self.valid_to is not None
        start, end = self.valid_from.astimezone(UTC), self.valid_to.astimezone(UTC)
        day = "%Y-%m-%d %H:%M" if start.date() == end.date() else "%Y-%m-%d"  # changed the same day: when
        held = f"{start:{day}} → {end:{day}}" if end >= start else f"until {end:{day}}"
        mark = secret_mark if self.visibility == Visibility.secret else ""
        return f"{self.in_words()}{mark} ({held}, {self.heard()})"

    def since(self) -> str:
        """A current fact's source: ``since 2025-05-01, heard in Night 3 at 1:00``."""
        return f"since {self.valid_from.astimezone(UTC):%Y-%m-%d}, {self.heard()}"


class Mention(BaseModel):
    """A line of the log that names an entity: where its name was last said."""

    session_id: int
    title: str
    speaker: str
    start_s: float
    text: str
    ref: str | None
    # the line's: two lines alike ("Roll initiative.") are two; the log's own key, not shown (--json, MCP)
    entry_id: int | None = Field(default=None, exclude=True)
    told: str | None = None  # the clause of ``text`` that tells the event the item is about, to show that part
    started_at: datetime | None = None  # the session's

    def where(self) -> str:
        return where_said(self.title, self.start_s, self.ref, self.started_at)


#: The refs of lines from speech, whose time is always that of the audio (``audio:night.wav:0``, ``voice:…``).
TIMED_REFS = ("audio:", "voice:")


def speaker_label(speaker: str, plays: str | None) -> str:
    """Who says a line as every reader reads it (recall's hits, the recap's quotes, MCP): "Travis (Grog Strongjaw)"
    where the speaker plays that character (:func:`played_there`), else the speaker; a speaker named like the
    character once."""
    if not plays or plays.replace("’", "'").casefold() == speaker.replace("’", "'").casefold():
        return speaker
    return f"{speaker} ({plays})"


_T = TypeVar("_T")


def played_there(characters: Mapping[str, Sequence[_T]], took_part: Collection[_T]) -> dict[str, _T]:
    """The character each speaker (casefolded, as ``characters`` keys the characters they play by ``played_by``)
    plays in a session: their one, or of several the one that took part in it (``took_part``; LIAM plays Vax in one
    campaign and Caleb in the next); none when that says not which."""
    out: dict[str, _T] = {}
    for speaker, played in characters.items():
        here = [c for c in played if c in took_part] if len(played) > 1 else list(played)
        if len(here) == 1:
            out[speaker] = here[0]
    return out


def where_said(title: str, start_s: float | None, ref: str | None, started: datetime | None = None) -> str:
    """The session and the line's time in it, or its source ("turn 1098") when the transcript had no times
    (a CRD3 episode, an untimed file): every such line is "at 0:00", which says nothing. Speech heard (a recording's
    ``audio:`` line, live ``voice:``) always has its time: its first word at 0:00 is "at 0:00", not its ref. The
    session's date (``started``, UTC as every date shown) follows its title unless the title says it (a live
    session's "Session 2026-03-02"): "Session 4, 2024-03-02 (turn 1450)"."""
    if started is not None and (day := f"{started.astimezone(UTC):%Y-%m-%d}") not in title:
        title = f"{title}, {day}"
    if start_s or (start_s is not None and (not ref or ref.startswith(TIMED_REFS))):
        return f"{title} at {clock(start_s)}"
    return f"{title} ({ref})" if ref else title


#: How a session's recap event is named ("Session: Night 4"): the entity who took part in the session links to it.
RECAP_PREFIX = "Session: "
#: A recap event's name: "Session: Night 4", or the title alone when it says "session" itself ("Session 2", not
#: "Session: Session 2"). In SQL, :data:`RECAP_NAME_SQL`.
_RECAP_NAME = re.compile(r"session\b", re.IGNORECASE)
RECAP_NAME_SQL = r"~* '^session\M'"


def recap_name(title: str) -> str:
    """The name of the recap event of the session titled ``title`` (see :data:`RECAP_PREFIX`)."""
    return title if _RECAP_NAME.match(title) else f"{RECAP_PREFIX}{title}"


def is_recap_name(name: str) -> bool:
    """Whether ``name`` is one :func:`recap_name` gives."""
    return _RECAP_NAME.match(name) is not None


#: What never takes part in a session, however often its lines name it: a happening, a place ("Westruun", "the
#: Material Plane") and an idea (a race, a spell). The session's card listed them among who took part.
TAKES_NO_PART = frozenset({EntityType.event, EntityType.location, EntityType.concept})


def session_link(fact: Relationship, entity_id: int) -> bool:
    """Whether ``fact`` says the entity took part in a session (its recap's event), not in an event of the story
    ("Grog —took_part_in→ Death of Jazna"), which is a fact like any other."""
    return fact.type == "took_part_in" and fact.source_id == entity_id and is_recap_name(fact.target_name or "")


#: Facts an entity's page (``entity show``, the MCP tools) lists before "… and N more": a character of a two-year
#: campaign holds thousands, and a page of them is read by no one.
FACTS_SHOWN = 50

_R = TypeVar("_R", bound=Relationship)


def newest_facts(facts: Sequence[_R], limit: int | None) -> tuple[list[_R], int]:
    """The ``limit`` facts of ``facts`` most worth reading (all when None), most so first: those that hold before
    those that ended, then the newest (the last to begin; of ended ones, the last to end), and how many were left
    out. What a DM asks of a busy character is what holds now and what changed last."""
    ranked = sorted(
        facts,
        key=lambda r: (r.valid_to is None, r.valid_to or r.valid_from, r.valid_from, r.id),
        reverse=True,
    )
    shown = ranked if limit is None else ranked[:limit]
    return shown, len(facts) - len(shown)


class Neighbourhood(BaseModel):
    """An entity with the accepted, currently valid relationships around it and the entities they reach."""

    entity: Entity
    relationships: list[Relationship]
    connected: list[Entity]

    def hidden_from_players(self, fact: Relationship) -> bool:
        """Whether players do not read ``fact`` on this card: it is secret, or its other end is a secret entity
        ("Grog —enemy_of→ Vecna" with Vecna the DM's). The DM's card marks both alike."""
        ends = {fact.source_id, fact.target_id} - {self.entity.id, None}
        return fact.visibility == Visibility.secret or any(
            e.id in ends and e.visibility == Visibility.secret for e in self.connected
        )

    def attributes(self) -> dict[str, Any]:
        """The entity's attributes but those a current fact of it is of the same name of ("status: alive" beside
        "—status→ dead"): an attribute has no history, so the fact is the current word, and both would contradict."""
        stated = {r.type for r in self.relationships if r.source_id == self.entity.id}
        return {k: v for k, v in self.entity.attributes.items() if "_".join(k.casefold().split()) not in stated}

    def facts_and_sessions(self, shown: int = 3, clip: Callable[[str], str] = str) -> tuple[list[Relationship], str]:
        """The relationships other than the sessions the entity took part in, and those sessions as one line
        ("" if none): the last ``shown`` played by title, the rest counted. A two-year campaign has a hundred.
        ``KnowledgeGraph.neighbourhood`` gives them in the order they were played."""
        sessions = [r for r in self.relationships if session_link(r, self.entity.id)]
        # by id: a list of models compared field by field made it facts x sessions, seconds at 100 sessions
        linked = {r.id for r in sessions}
        others = [r.seen_from(self.entity.id) for r in self.relationships if r.id not in linked]
        latest = [r.target_name or "" for r in sessions[::-1][:shown]]
        return others, took_part_line(latest, len(sessions), clip)

    def sessions_taken_part(self, shown: int = 3, clip: Callable[[str], str] = str) -> tuple[int, str]:
        """How many sessions the entity took part in (its recap's links: the DM's story named it there), and
        them as :meth:`facts_and_sessions` names them ("Night 5, Night 4 and 2 earlier")."""
        sessions = [r for r in self.relationships if session_link(r, self.entity.id)]
        latest = [r.target_name or "" for r in sessions[::-1][:shown]]
        return len(sessions), session_titles(latest, len(sessions), clip)

    def who_took_part(self, facts: list[Relationship]) -> tuple[list[Relationship], list[Relationship]]:
        """``facts`` without the links of those who took part in this entity (an event), and those links, when
        there are several: a battle's card read one "X —took_part_in→ it" line each, eighteen of them above the
        rest. One link stays a fact."""
        took_part = [
            r
            for r in facts
            if r.type == "took_part_in" and r.target_id == self.entity.id and r.source_id != self.entity.id
        ]
        if len(took_part) < 2:
            return facts, []
        return [r for r in facts if r not in took_part], took_part


def who_took_part_line(names: list[str], room: int | None = None) -> str:
    """Those who took part in an event, as its card says them in one line ("" if none); within ``room``
    characters, the names that fit, then how many more."""
    if not names:
        return ""
    head = f"who took part ({len(names):,}): "
    shown, size = 0, len(head)
    for name in names:  # room kept for " and 1,234 more"
        if room is not None and shown and size + 2 + len(name) > room - 20:
            break
        size += 2 * bool(shown) + len(name)
        shown += 1
    more = f" and {len(names) - shown:,} more" if shown < len(names) else ""
    return head + ", ".join(names[:shown]) + more


def took_part_line(latest: list[str], count: int, clip: Callable[[str], str] = str) -> str:
    """The sessions an entity took part in as one line ("" if none): ``latest`` titles (their recaps' names: the
    line says "session" once, not "Session: " before each), the last played first, of ``count`` in all, the rest
    counted."""
    if not count:
        return ""
    return f"took part in {count} session{'s' * (count != 1)}: {session_titles(latest, count, clip)}"


def session_titles(latest: list[str], count: int, clip: Callable[[str], str] = str) -> str:
    """``latest`` sessions' titles (their recaps' names, without "Session: "), of ``count``, the rest counted."""
    titles = ", ".join(clip(title.removeprefix(RECAP_PREFIX)) for title in latest)
    return titles + (f" and {count - len(latest)} earlier" if count > len(latest) else "")


class FactsInBrief(BaseModel):
    """An entity's current facts as a short answer shows them: the ``facts`` learned last (in
    :meth:`KnowledgeGraph.relationships_of`'s order), how many ``more`` there are, and the sessions it took part in
    as titles, the last played first, of ``session_count``. A busy entity of a long campaign has thousands."""

    facts: list[Relationship]
    more: int
    sessions: list[str]
    session_count: int
    secret_ends: list[int] = []  # of ``facts``, those whose other end is a secret entity


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
    ended: list[Relationship] = Field(default_factory=list)  # current facts of either, history now: the newer stands

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
        if ended := self.history_now():
            done.append(ended)
        return f"Merged {self.merged.name} into {self.entity.name}: {'; '.join(done)}."

    def history_now(self) -> str:
        """The current facts the merge ends, as the newer of two that disagree stands ('' when none)."""
        if not self.ended:
            return ""
        return "now history, as a newer fact says otherwise: " + "; ".join(r.in_words() for r in self.ended)


class LinkResult(BaseModel):
    """What linking two entities, or recording an attribute fact, did, for the DM's reply."""

    relationship: Relationship
    outcome: Literal["linked", "already linked", "made public", "made secret"]
    closed: list[Relationship] = Field(default_factory=list)  # the facts it contradicted, now history
    #: Made secret: the public facts it had closed, which players read again (a secret fact ends none for them).
    players_read: list[Relationship] = Field(default_factory=list)

    def describe(self, secret_mark: str = "") -> str:
        """``secret_mark`` follows each secret fact (" 🔒"), so it cannot be read as the closed one's."""

        def fact(r: Relationship) -> str:
            return r.in_words() + (secret_mark if r.visibility == Visibility.secret else "")

        said = {
            "linked": "Linked",
            "already linked": "Already linked:",
            "made public": "Now public:",
            "made secret": "Now secret:",
        }
        closed = "; closed: " + "; ".join(fact(r) for r in self.closed) if self.closed else ""
        if self.players_read:
            closed += (
                "\nwarning: players now read instead the fact it had replaced: "
                + "; ".join(r.in_words() for r in self.players_read)
                + " (link a public fact of its kind to tell them otherwise)"
            )
        return f"{said[self.outcome]} {fact(self.relationship)}{closed}"


class UnlinkResult(BaseModel):
    """What unlinking removed, and the facts those had closed that are current again (unlink is an undo)."""

    removed: list[Relationship]
    reopened: list[Relationship]

    def describe(self) -> str:
        said = "Unlinked " + "; ".join(r.in_words() for r in self.removed)
        if self.reopened:
            said += "; current again: " + "; ".join(r.in_words() for r in self.reopened)
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
    # decided with it, each as "e12: new npc 'Korvash'": a fact's proposed ends accepted with it, a rejected entity's
    # pending facts rejected with it; else they leave the queue unsaid
    decided_with: list[str] = Field(default_factory=list)

    @property
    def ref(self) -> str:
        return f"{self.kind.value[0]}{self.id}"

    def with_it(self) -> str:
        """The items decided with this one, for the DM's reply ('' when none)."""
        return "with it " + "; ".join(self.decided_with) if self.decided_with else ""

    def settled(self) -> str:
        """What accepting the fact did to the facts it contradicts, for the DM's reply ('' when nothing)."""
        if self.outdated_by is not None:
            return f"kept as history, as a later fact stands: {self.outdated_by.in_words()}"
        return "closed: " + "; ".join(r.in_words() for r in self.closed) if self.closed else ""

    def describe(self) -> str:
        if self.entity is not None:
            e = self.entity
            return f"new {e.type.value} {e.name!r}" + (f": {e.description}" if e.description else "")
        assert self.fact is not None
        return self.fact.in_words()


class PromptEntity(BaseModel):
    """An accepted entity as the speech recogniser's prompt weighs it (``memory.voice.prompt``)."""

    model_config = ConfigDict(frozen=True)

    id: int
    name: str
    aliases: tuple[str, ...] = ()
    cast: bool = False  # a player character
    pinned: bool = False  # the DM wants its names in the prompt
    said_lately: int = 0  # passages of the campaign's last sessions that name it
    degree: int = 0  # facts between it and another entity (GM notes and other attribute facts not)
    event: bool = False  # its name is told, not said ("Session: Night 4", "Death of Sylas"): no place by degree
