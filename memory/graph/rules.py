"""The graph's rules as plain functions over models, with no database: which facts the DM vouched for, which
facts contradict, what players see, and how a merge chooses between two copies of one fact. SQL that must be
set-based says the same in :mod:`memory.graph.sql`; the tests in ``tests/unit/test_graph_rules.py`` hold both to it."""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import datetime
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from memory.errors import InvalidInputError
from memory.models import (
    HELD_BY_MANY,
    INVERSE,
    PERSON_TYPES,
    SYMMETRIC,
    SYNONYM,
    Entity,
    EntityIn,
    EntityType,
    Provenance,
    ReviewStatus,
    Source,
    Visibility,
)
from memory.text import MAX_ALIASES, MAX_HEARD_AS, attribute_text, clean_name

#: Relationship types an entity has at most one of at a time, edge or value: a new accepted one closes the old one.
#: Attribute facts (a value instead of a target) are always single-valued per type. An edge of an inverse type
#: (:data:`~memory.models.INVERSE`: "Balcor leader_of Greywatch") counts as its other end's ("Greywatch ruled_by").
SINGLE_VALUED = frozenset(
    {
        "located_in",
        "located_at",
        "lives_in",
        "ruled_by",
        "led_by",
        "owned_by",
        "wielded_by",
        "killed_by",
        "home",
        "allegiance",
        "status",
        "alignment",
        "occupation",
        "title",
        "age",
    }
)

#: The single-valued types that say who holds an item: one holder at a time, but for a kind of item many hold
#: (:func:`held_by_many`).
HOLDING = frozenset({"owned_by", "wielded_by"})


def held_by_many(attributes: dict[str, Any]) -> bool:
    """Whether an item of these ``attributes`` is a kind many hold (:data:`~memory.models.HELD_BY_MANY`), whose
    holders add up, as typed in a campaign file (``true``) or by hand (``"true"``)."""
    return attribute_text(attributes.get(HELD_BY_MANY, False)).casefold() == "true"


#: A state said in plain words ("Thordak is dead"): the graph holds a state as ``status`` (``entity link Thordak
#: status --value dead``, the extractor's "status dead"), so "is dead" must not stand beside it as another fact.
STATE_WORDS = frozenset({"is", "are", "was", "is_now", "now", "became", "becomes", "state"})


def state_type(type: str, value: str | None) -> str:
    """A fact's type as the graph files it: a state said as "is"/"became"… (a value, not a target) is ``status``."""
    return "status" if value is not None and "_".join(type.casefold().split()) in STATE_WORDS else type


#: Who speaks for the DM: a fact from one of these sources is the DM's word (and so is one the DM confirmed).
VOUCHING_SOURCES = (Source.dm, Source.campaign_file)


def vouched(provenance: Provenance) -> bool:
    """The DM's word: a fact the DM typed, loaded from a campaign file or accepted in review."""
    return provenance.source in VOUCHING_SOURCES or provenance.dm_confirmed


def status_for(provenance: Provenance, accept_threshold: float) -> ReviewStatus:
    """A new fact's status: the DM's word is accepted, anything else only at or above the threshold."""
    if vouched(provenance) or provenance.confidence >= accept_threshold:
        return ReviewStatus.accepted
    return ReviewStatus.pending


#: A word of a secret name rarer than this in English (Zipf: "holt" 3.7, "pale" 4.1) names the entity alone.
NAMING_ZIPF = 4.0
#: A number, ordinal or decade ("1900", "3rd", "1920s"): never a word that names an entity alone.
_NUMBER = re.compile(r"\d+(?:st|nd|rd|th|s)?")


def names_to_mask(
    names: Iterable[tuple[str, bool, str | None]], zipf: Callable[[str], float], *, heard: Iterable[str] = ()
) -> list[str]:
    """What players must not read, of the campaign's ``names`` (each with whether it is secret and its entity's type,
    None of a removed one's): every secret name no name they may read is (a name a public entity or an alias bears
    now is theirs to read, whatever once bore it), and each word of one that names it alone as the mention index
    reads names (:func:`alone_words`), rare in English (``zipf``, a word's Zipf frequency), in no name they may read
    and not a number (a "1900" of Villager 1900 is a year, a price, a count to players); and what the recogniser
    writes for a secret name (``heard``), whole."""
    normalize = _normalize()
    names = list(names)
    # "The Whispering Gate" or "whispering gáte" is the public Whispering Gate to a player: hiding it would mask the
    # public entity where it is said so, and tell that a secret one is spelled alike. Not a secret Raven beside the
    # public Ravens: the mask reads "Ravens" as its plural, but unmasked, "Raven slips the duke a vial" told it
    readable = {spelled_alike(name) for name, secret, _ in names if not secret}
    hidden = [(name, type) for name, secret, type in names if secret and spelled_alike(name) not in readable]
    misheard = [phrase for phrase in heard if spelled_alike(phrase) not in readable]
    # each word once: 20,000 names say a few thousand ("bastion" of the public Bastions too)
    words = {w for name, secret, _ in names if not secret for w in name_words(name)}
    shown = {form for w in words for form in singulars(normalize(w))}
    own = {
        w
        for name, type in hidden
        for w in alone_words(name, type)
        if len(w) >= 3 and not _NUMBER.fullmatch(w) and normalize(w) not in shown and zipf(w) < NAMING_ZIPF
    }
    return [*(name for name, _ in hidden), *misheard, *own]


def alone_words(name: str, type: str | None) -> list[str]:
    """The words of an entity's ``name`` (of entity ``type``) said alone for it, as the mention index reads them
    (:func:`~memory.gazetteer.short_names`), as :func:`name_words` writes them: a person's first and last names
    ("vaskerrin", "holt" of Vaskerrin Holt; "aubigné" of Ysolde d'Aubigné, "vord" of Kima of Vord too: what players
    guess at), the parts of any one-word name ("vex", "ahlia" of Vex'ahlia) and a one-word name without its title
    ("mab" of Queen Mab). Of another name ("Lich Dossier", "DM Plot
    Outline", "The Drowned Chapel") none: its words are said for what they mean ("lich", "outline")."""
    from memory.correction.text import tokenize
    from memory.gazetteer import TITLES, untitled

    name = _TYPE_SUFFIX.sub("", name)  # "Harrowgate (npc)": the name an import gave a second record of "Harrowgate"
    tokens = tokenize(name)
    words = [t.norm for t in tokens]
    rest = list(itertools.dropwhile(TITLES.__contains__, words))
    # a one-word name's parts, of any entity: "K'Varn", "Vel-Ashkar" are searched as "k" "varn", "vel" "ashkar", so
    # a player's guess at "Varns" must find nothing; one word as written, whatever the tokens ("kalthar" is one)
    alone = set(words) if len(name.split()) == 1 else set()
    if type in PERSON_TYPES and len(words) > 1 and words[0] not in {"a", "an", "the"} and rest:
        alone = {rest[0], rest[-1]} if len(rest) > 1 else {rest[0]}
    # a one-word name without its title (tokenised once more only where a title starts it: a fifth of the build)
    if len(rest) < len(words) and (plain := untitled(name)) and len(one := tokenize(plain)) == 1:
        alone.add(one[0].norm)
    return [w for t in tokens if t.norm in alone for w in name_words(name[t.start : t.base_end])]


#: A word this common in English ("holt" 3.7, "exile" 3.8) is said at the table for what it means, not only as a
#: name, as "Mira" (3.3), "Pip" (3.4) or "Vaskerrin" (0) are not.
SAID_ZIPF = 3.5


def everyday_masked(masked: Iterable[str], names: Iterable[str], zipf: Callable[[str], float]) -> list[str]:
    """What of ``names`` (a secret entity's name, hidden names) players will read as "[secret]" wherever it is said,
    in its everyday sense too: each of them or word of one that ``masked`` (:func:`names_to_mask`'s) hides and is
    ordinary English ("the gate", "holt" of Vaskerrin Holt), casefolded; not a name holding a word said already
    ("exile", not also "the exile")."""
    mine = {" ".join(name_words(n)) for n in names}
    mine |= {w for n in mine for w in n.split()}
    found = {said for m in masked if (said := " ".join(name_words(m))) in mine}
    found = {said for said in found if said and all(_said_zipf(w, zipf) >= SAID_ZIPF for w in said.split())}
    words = {said for said in found if " " not in said}
    return sorted(said for said in found if said in words or not words.intersection(said.split()))


def _said_zipf(word: str, zipf: Callable[[str], float]) -> float:
    """How often English says ``word`` for what it means: a plural with its singular, one word said two ways
    ("thorns" 3.25 and "thorn" 3.48 make 3.68, as "holt" 3.67 is said)."""
    forms = {word}
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        forms |= {word[:-1], word[:-2] if word.endswith("es") else word[:-1]}
    return math.log10(sum(10 ** zipf(form) for form in forms if zipf(form) > 0) or 1)


def unhidden_secrets(names: Iterable[tuple[str, bool, str | None]], of: Iterable[str]) -> list[tuple[str, str]]:
    """Each secret name of ``names`` (as :func:`names_to_mask` takes them) that one players may read is spelled
    alike, so it is never hidden ("The Gate" beside a public Gate), paired with that readable name: those where one
    of the two is a name ``of`` an entity just added or changed, for a warning to its DM."""
    names = list(names)
    readable = {spelled_alike(name): name for name, secret, _ in names if not secret}
    mine = {spelled_alike(name) for name in of}
    return sorted(
        {
            (name, readable[alike])
            for name, secret, _ in names
            if secret and (alike := spelled_alike(name)) in readable and alike in mine
        }
    )


def secrets_described(
    before: Entity | None, after: Entity, said: Callable[[str], list[str]]
) -> list[tuple[str, str, list[str]]]:
    """Each field players read of a public entity ``after`` (its description, an attribute's value) whose text the
    DM just wrote (``before`` had it otherwise, or was None or secret) and that says a hidden name (``said``: what
    of them a text says, :meth:`~memory.graph.masking.SecretMask.said`), as ``(entity, field, names said)``:
    players read "[secret]" there, which tells them a secret is there. A proposal is weighed too: accepted, players
    read it."""
    if after.visibility != Visibility.public or after.status == ReviewStatus.rejected:
        return []
    had = _read_fields(before) if before is not None and before.visibility == Visibility.public else {}
    return [
        (after.name, field, names)
        for field, text in _read_fields(after).items()
        if text != had.get(field) and (names := said(text))
    ]


def _read_fields(entity: Entity) -> dict[str, str]:
    """An entity's text players read beside its name: its description and its attributes' values."""
    attributes = {f"attribute {key}": attribute_text(value) for key, value in entity.attributes.items()}
    return {"description": entity.description, **attributes}


def spelled_alike(name: str) -> str:
    """What two spellings of one name share: case, accents, apostrophes, hyphens and spaces aside as the matcher
    reads names ("cafe" for Café, "Vex’ahlia", "Mother of Thorns" for Mother-of-Thorns, "Aethelric" for Æthelric),
    and a leading "The" ("Nestled Nook Inn", "the Vex'ahlia")."""
    return "".join(_normalize()(name).removeprefix("the ").split())


#: A plural's ending as the players' mask reads one after a hidden name: "s", or "es" after s, x, z, ch or sh
#: (Vaskerrins, Foxes, Marshes).
PLURAL = r"(?:(?<=s|x|z|h)es|s)"
_PLURAL_ENDING = re.compile(PLURAL)


def singulars(said: str) -> set[str]:
    """``said`` and what it is the plural of as the mask reads a plural (:data:`PLURAL`): the names the mask
    would hide it for ("bastions" for a hidden "bastion"; "foxe" and "fox" of "foxes")."""
    return {said} | {
        said[:at] for at in (len(said) - 2, len(said) - 1) if at > 0 and _PLURAL_ENDING.fullmatch(said, at)
    }


def listing_key(name: str) -> tuple[str, str]:
    """Where a name stands in a list: accents aside, as a reader looks it up ("Æthelric" by A, "Ðáin" by D; by code
    point they came after "Zoë")."""
    return _normalize()(name), name.casefold()


#: How close a mistyped name must be to one the campaign holds for a "did you mean" (:func:`name_closeness`).
CLOSE_NAME = 70


def name_closeness(typed: str, name: str, **_: Any) -> float:
    """How close ``typed`` is to ``name`` (both in :func:`memory.correction.text.normalize` form), 0-100, for "did
    you mean": the whole names, or ``typed`` against as many consecutive words of ``name`` ("Thordack" for "Death
    of Thordak"; a start of them, "Tary" for Taryon), or a name within the words typed ("Doty the robot"). Never a
    run of letters inside a word: rapidfuzz's WRatio found "Oni" in "Nonexistent Person" and "Goristro" for "Gorm".
    A rapidfuzz scorer (it passes ``score_cutoff``)."""
    from rapidfuzz.fuzz import ratio

    best = ratio(typed, name)
    for short, long in ((typed, name), (name, typed)):
        size, words = len(short.split()), long.split()
        for i in range(len(words) - size + 1):
            run = " ".join(words[i : i + size])
            if short is typed:
                within = 100.0 if run.startswith(short) else ratio(short, run)
            else:  # a name among other words typed, as it is: "Kash" is not in "Sister Ash"
                within = 100.0 if run == short else 0.0
            best = max(best, 0.9 * within)  # a part of the name, never as close as the whole
    return best


@functools.cache
def _normalize() -> Callable[[str], str]:
    """The matcher's normal form (:func:`memory.correction.text.normalize`), its package loaded once names are
    compared, not when the command line starts; imported once, as the players' mask asks it of every name (an
    import a call was a quarter of the mask's build at 20,000 names)."""
    from memory.correction.text import normalize

    return normalize


_WORD = re.compile(r"\w+")
#: The type an import names the second record of a name by ("Harrowgate (npc)" beside the fort Harrowgate): no word of
#: the name, or a private one would hide every "npc" said.
_TYPE_SUFFIX = re.compile(rf"\s*\((?:{'|'.join(sorted({t.value for t in EntityType}))})\)\s*$", re.IGNORECASE)


def name_words(name: str) -> list[str]:
    """The words of a name, casefolded, without the type an import may add to it."""
    name = name.casefold()
    return _WORD.findall(_TYPE_SUFFIX.sub("", name) if name.endswith(")") else name)


class FactCopy(BaseModel):
    """One stored copy of a fact, as much as :func:`copy_rank` weighs."""

    id: int
    status: ReviewStatus
    provenance: Provenance
    valid_from: datetime


def copy_rank(fact: FactCopy) -> tuple[bool, bool, float, datetime, int]:
    """Two current copies of one fact, best first, as migration 0004 keeps them: accepted, then the DM's word,
    then the most confident, then the oldest."""
    return (
        fact.status != ReviewStatus.accepted,
        not vouched(fact.provenance),
        -fact.provenance.confidence,
        fact.valid_from,
        fact.id,
    )


class FactKey(BaseModel):
    """What says whether two facts contradict: whose, of what type, to what (target or value), and its state."""

    id: int | None = None
    source_id: int
    type: str
    target_id: int | None = None
    value: str | None = None
    status: ReviewStatus = ReviewStatus.accepted
    current: bool = True

    def one_way(self) -> FactKey:
        """The fact as :func:`one_way` weighs it."""
        type, source_id, target_id = one_way(self.type, self.source_id, self.target_id)
        return self.model_copy(update={"type": type, "source_id": source_id, "target_id": target_id})


_End = TypeVar("_End", int, str)  # an entity's id, or its name in a campaign file


def one_way(type: str, source_id: _End, target_id: _End | None) -> tuple[str, _End, _End | None]:
    """An edge as the graph weighs it, ``(type, source, target)``: one of an inverse type as its other end states it
    ("Mira has the Sunblade" as "Sunblade owned_by Mira"), a fact of a synonym as the type it is a synonym of
    ("led_by" as "ruled_by"), any other fact as it is. The ends are ids, or the names a campaign file gives them
    (its conflict check weighs its facts so)."""
    if target_id is not None and type in INVERSE:
        return INVERSE[type], target_id, source_id
    return SYNONYM.get(type, type), source_id, target_id


def stated_as(type: str) -> tuple[list[str], list[str]]:
    """The other types an edge of ``type`` is stated in, as :func:`one_way` weighs them: from the same end ("led_by"
    for "ruled_by", "carried" for "has"), and from the other end ("leader_of" for "ruled_by"; a symmetric type
    and its synonyms: "allied_with", "ally_of")."""
    weighed = INVERSE.get(type) or SYNONYM.get(type, type)
    same = {weighed, *(t for t, of in SYNONYM.items() if of == weighed)}
    turned = {t for t, of in INVERSE.items() if of == weighed}
    if type in turned:
        same, turned = turned, same
    return sorted(same - {type}), sorted(same if weighed in SYMMETRIC else turned)


def can_contradict(type: str, value: str | None) -> bool:
    """Whether a fact of this type and value may close another: a value does, as does an edge of a single-valued
    type as :func:`one_way` weighs it ("home: the road" closes "home Caddo Keep", "Korrin has the Sunblade" the
    Sunblade's owner, "the Circle led_by Greta" its ruler); "knows Bob" closes nothing."""
    return value is not None or one_way(type, 0, 0)[0] in SINGLE_VALUED


def contradicts(new: FactKey, old: FactKey) -> bool:
    """Whether ``new``, accepted, closes ``old`` (:data:`memory.graph.sql.CONTRADICTED` in SQL): an accepted,
    current fact of the same entity and type that says something else, of its kind (both edges or both values)
    unless the type is single-valued; never itself. An inverse edge is weighed as its other end states it
    (:func:`one_way`)."""
    if not can_contradict(new.type, new.value):
        return False
    if (new.id is not None and new.id == old.id) or old.status != ReviewStatus.accepted or not old.current:
        return False
    new, old = new.one_way(), old.one_way()
    if (old.source_id, old.type) != (new.source_id, new.type):
        return False
    if (old.target_id, old.value) == (new.target_id, new.value):
        return False
    return (old.target_id is None) == (new.target_id is None) or new.type in SINGLE_VALUED


class Seen(Protocol):
    """An entity or a fact, as far as who may see it."""

    @property
    def status(self) -> ReviewStatus: ...

    @property
    def visibility(self) -> Visibility: ...


def players_see(thing: Seen) -> bool:
    """Whether players may read an entity or a fact: accepted and public (:func:`memory.graph.sql.visible`)."""
    return thing.status == ReviewStatus.accepted and thing.visibility == Visibility.public


def players_see_fact(fact: Seen, target: Seen | None) -> bool:
    """Whether players see a fact: they see it and the entity it points to, if any (:data:`memory.graph.sql.SEEN`;
    its source is the entity whose facts they read)."""
    return players_see(fact) and (target is None or players_see(target))


def keeping_old_name(entity: Entity, new_name: str) -> list[str]:
    """The aliases of a public ``entity`` renamed ``new_name``: its old name joins them, as the session log, the
    players and the speech to correct still say it (a secret one's would tell players who it is). A name the
    rules refuse now (a look-alike letter an earlier version let in) is not kept: renaming is how it is mended."""
    kept = [*(a for a in entity.aliases if a.casefold() != new_name.casefold()), entity.name]
    return [name for name in kept if is_storable_name(name)]


def keeping_unstated(current: Entity, entry: EntityIn, keep: Collection[str]) -> EntityIn:
    """A campaign file's ``entry`` for the entity ``current``, its fields named in ``keep`` (those the file does not
    state) as ``current`` has them. Renamed, a public entity keeps its old name as an alias (see
    :func:`keeping_old_name`); renamed to one of its aliases, that is its name now and no alias."""
    if not keep:
        return entry
    kept = {field: getattr(current, field) for field in keep}
    renamed = current.name.casefold() != entry.name.casefold()
    if "aliases" in kept and renamed and kept.get("visibility", entry.visibility) == Visibility.public:
        kept["aliases"] = keeping_old_name(current, entry.name)
    if "aliases" in kept:
        kept["aliases"] = [a for a in kept["aliases"] if a.casefold() != entry.name.casefold()]
    return entry.model_copy(update=kept)


def as_stated(entity: Entity | EntityIn) -> tuple[Any, ...]:
    """What a campaign file states of an entity, as :meth:`~memory.graph.entities.Entities.upsert_entity` compares
    it: names, aliases and phrases case aside."""
    return (
        entity.name,
        entity.type,
        entity.description,
        sorted(a.casefold() for a in entity.aliases),
        entity.attributes,
        entity.visibility,
        sorted(h.casefold() for h in entity.heard_as),
        sorted(h.casefold() for h in entity.not_heard_as),
    )


def is_storable_name(name: str) -> bool:
    try:
        clean_name(name)
    except InvalidInputError:
        return False
    return True


def removed_heard_as(had: Sequence[str], now: Sequence[str]) -> list[str]:
    """The phrases of ``had`` that ``now`` no longer holds, as the matcher reads them (spacing and punctuation
    aside: "from-skin" replacing "from skin" takes nothing away)."""
    from memory.correction.text import spaceless

    kept = {spaceless(p) for p in now}
    return [h for h in had if spaceless(h) not in kept]


def new_names(before: Entity, after: Entity) -> list[str]:
    """The names and aliases ``after`` goes by that ``before`` did not: recaps may have heard it by those."""
    known = {n.casefold() for n in (before.name, *before.aliases)}
    return [n for n in (after.name, *after.aliases) if n.casefold() not in known]


def named_anew(before: Entity, after: Entity) -> bool:
    """Whether ``after`` goes by a name or alias ``before`` did not."""
    return bool(new_names(before, after))


class MergePlan(BaseModel):
    """What a merge of ``source`` into ``into`` does with ``source``'s names (see :func:`plan_merge`)."""

    hide: bool  # a secret ``source`` into a public ``into``: none of its names, description or attributes move
    names: list[str]  # ``source``'s names ``into`` lacks: its new aliases, unless ``hide``


def plan_merge(source: Entity, into: Entity, source_ref: str | int, into_ref: str | int) -> MergePlan:
    """Whether ``source`` may be merged into ``into`` (refused with the reason, before anything changes: one entity
    named twice, or more aliases or heard-as phrases than their caps, so that the merged entity could not even be
    renamed), and what becomes of its names. ``*_ref``: what the DM named them by."""
    if source.id == into.id:
        if str(source_ref).strip().casefold() == str(into_ref).strip().casefold():
            raise InvalidInputError(f"cannot merge {into.name!r} into itself: name two entities")
        raise InvalidInputError(f"{source_ref!r} and {into_ref!r} both name {into.name!r}: nothing to merge")
    hide = source.visibility == Visibility.secret and into.visibility == Visibility.public
    known = {n.casefold() for n in [into.name, *into.aliases]}
    names = list(dict.fromkeys(n for n in [source.name, *source.aliases] if n.casefold() not in known))
    if not hide and len(into.aliases) + len(names) > MAX_ALIASES:
        raise InvalidInputError(
            f"merged, {into.name} would have {len(into.aliases) + len(names)} aliases ({len(into.aliases)} of its "
            f"own, {len(names)} from {source.name}), more than the {MAX_ALIASES} allowed: edit the aliases of either "
            "down to the names the table uses, then merge again"
        )
    if (heard := len({h.casefold() for h in [*into.heard_as, *source.heard_as]})) > MAX_HEARD_AS:
        # as for aliases: the phrases move to ``into``, which could then not be edited but to drop some
        raise InvalidInputError(
            f"merged, {into.name} would have {heard} heard-as phrases ({len(into.heard_as)} of its own, "
            f"{len(source.heard_as)} from {source.name}), more than the {MAX_HEARD_AS} allowed: edit those of "
            "either down to what the recogniser writes, then merge again"
        )
    if (unheard := len({h.casefold() for h in [*into.not_heard_as, *source.not_heard_as]})) > MAX_HEARD_AS:
        raise InvalidInputError(
            f"merged, {into.name} would have {unheard} not-heard-as phrases ({len(into.not_heard_as)} of its own, "
            f"{len(source.not_heard_as)} from {source.name}), more than the {MAX_HEARD_AS} allowed: edit those of "
            "either down, then merge again"
        )
    return MergePlan(hide=hide, names=names)


def hidden_by_merge(source: Entity, into: Entity, names: Sequence[str]) -> list[str]:
    """Of the names a merge gives a secret ``into``, those players must not read while it stays secret:
    ``source``'s own name (as if it were made secret) and a proposal's aliases, which they never read."""
    if into.visibility != Visibility.secret:
        return []
    return [n for n in names if n == source.name or source.status != ReviewStatus.accepted]


def merge_drops(source: Entity, into: Entity, hide: bool) -> tuple[str, dict[str, Any]]:
    """What of ``source`` a merge leaves out: its description where ``into`` has another, and its attributes where
    ``into`` has other values (nothing when ``hide``: none of it was offered)."""
    if hide:
        return "", {}
    differs = into.description and source.description.strip() != into.description.strip()
    dropped = {k: v for k, v in source.attributes.items() if k in into.attributes and into.attributes[k] != v}
    return (source.description if differs else ""), dropped


def new_never_heard_as(source: Entity, into: Entity) -> list[str]:
    """After a merge, the not-heard-as phrases each had that the other lacked: lines corrected to either may
    say them as ``into``'s name now, and are restored."""
    return [
        *removed_heard_as(source.not_heard_as, into.not_heard_as),
        *removed_heard_as(into.not_heard_as, source.not_heard_as),
    ]
