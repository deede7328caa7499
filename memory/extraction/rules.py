"""The offline extractor: a gazetteer of the campaign's names and a few sentence patterns. Names said together are
no fact: where a name was said goes to the mention index (``memory.mentions``), not to review.

Everything it proposes stays below the acceptance threshold (and the pipeline files it as pending whatever the
threshold): patterns misread speech often enough that only the DM should turn them into canon.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from memory.correction.evidence import MatchSettings, word_zipf
from memory.extraction.events import (
    AFTER_PREPOSITION,
    OWNER,
    OWNER_TAG,
    Event,
    EventKind,
    SceneLine,
    alive,
    arrivals_here,
    events,
    handovers,
    leaves,
    newcomers,
    one_each,
    owns,
    scene_deaths,
    scene_named,
)
from memory.extraction.lexicon import FAMILY_ROLES, NOUN_TYPE, OCCUPATIONS, RULER_ROLES
from memory.extraction.salience import COMMON_WORDS
from memory.extraction.schema import ExtractionResult, KnownEntity, ProposedEntity, ProposedFact
from memory.gazetteer import TITLES, Gazetteer, of_mentions
from memory.models import PERSON_TYPES, EntityType, Entry
from memory.offgame import narrator

#: Nothing the rules propose may reach this: their output is always for the DM to review.
MAX_RULE_CONFIDENCE = 0.6
PATTERN_CONFIDENCE = 0.55
NEW_NAME_BY_DM_CONFIDENCE = 0.5
NEW_NAME_CONFIDENCE = 0.4

#: Players (not the DM) who must say a new name, each in a line of their own, before it is proposed.
MIN_SPEAKERS = 2
#: The lines before a DM's "you killed him" that say who the scene is about.
SCENE_LINES = 4

_TITLES = OCCUPATIONS | {"sir", "dame", "madam", "madame", "mister", "miss", "mr", "mrs", "ms", "master"}
#: From this Zipf frequency a word is ordinary English (see ``MatchSettings.common_zipf``).
_COMMON_ZIPF = MatchSettings().common_zipf
#: Words a place is set off by ("Past the guard, Castle Ravenna, rises ...", "At the Gate, the guard ...").
_PREPOSITIONS = frozenset(
    """
    about above across after against along among around as at before behind below beneath beside beyond by down
    during for from in inside into near of off on onto outside over past since through to toward towards under
    until up upon with within without
    """.split()
)


_PLACEHOLDER = "\ue000{}\ue001"  # private-use characters: cannot occur in speech, so cannot be forged
_KNOWN = r"\ue000\d+\ue001"
_UPPER = "A-ZÀ-ÖØ-Þ"
_CAPWORD = rf"[{_UPPER}][^\W\d_]*(?:['’-][^\W\d_]+)*"
#: A name slot: a known mention, or up to three capitalised words ("Korvash", "Mother Yara", "Vox Machina").
_NAME = rf"(?:{_KNOWN}|{_CAPWORD}(?:\s+{_CAPWORD}){{0,2}})"
_POSS = r"(?:['’]s|['’])?"
_ROLE = r"(?P<role>[a-z]+(?:\s[a-z]+)?)"
_ART = r"(?i:the|a|an|his|her|their)"


def _slot(name: str) -> str:
    return rf"(?P<{name}>{_NAME}){_POSS}"


_ROLE_OF = re.compile(
    rf"{_slot('x')}(?:,\s+|\s+(?i:is|was|'s|’s|,? who is)\s+){_ART}\s+{_ROLE}\s+(?P<prep>(?i:of|in|at|from))\s+"
    rf"{_slot('y')}"
)
_IS_ROLE = re.compile(rf"{_slot('x')}\s+(?i:is|was)\s+{_ART}\s+{_ROLE}\b")
_RELATIONS: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(rf"{_slot('x')}\s+(?i:lives|lived|resides|resided|dwells|dwelt)\s+(?i:in|at)\s+{_slot('y')}"),
        "lives_in",
    ),
    (
        re.compile(
            rf"{_slot('x')}\s+(?:(?i:is|was|are|were)\s+(?:(?i:a)\s+)?(?i:members?)\s+of|(?i:belongs|belonged)\s+to"
            rf"|(?i:joined))\s+(?:the\s+)?{_slot('y')}"
        ),
        "member_of",
    ),
    (re.compile(rf"{_slot('x')}\s+(?i:works|worked)\s+(?i:in|at)\s+{_slot('y')}"), "works_in"),
    (re.compile(rf"{_slot('x')}\s+(?i:works|worked)\s+(?i:for)\s+{_slot('y')}"), "works_for"),
    (
        re.compile(rf"{_slot('x')}\s+(?i:rules|ruled|leads|led|commands|commanded)\s+(?:the\s+)?{_slot('y')}"),
        "leader_of",
    ),
    (re.compile(rf"{_slot('x')}\s+(?i:is|was)\s+(?i:located|found|based)\s+(?i:in|at)\s+{_slot('y')}"), "located_in"),
]
#: "Kevdak has the Titanstone Knuckles", "Kylre takes Toya": two known names joined by a verb of having or taking
#: (a giving is a hand-over: ``events.handovers`` files who receives). Any verb was read before: on the CRD3 dev
#: episodes 3 of 12 such items were worth keeping ("Gilmore stabs Vax", "Beau turns to Nott" are moments, not facts);
#: these verbs' were 2 of 2 (bench/extraction.py). The verb next to the name: "Thessaly still has the Key" is not
#: read, as it is no news (the holder the memory has, told again) or no hand-over told (of another holder), so
#: neither a duplicate nor a change of holder to review.
_VERB_LINK = re.compile(
    rf"(?P<x>{_KNOWN}){_POSS}\s+(?P<verb>[a-z]+)(?:\s+(?P<prep>to|from))?\s+(?:(?i:the)\s+|{OWNER})?(?P<y>{_KNOWN})"
)
#: A sentence asked ("And Wilhand is the brother of Ogden?"): what it says is a guess, not a fact told.
_ASKED = re.compile(r"[^.!?…]*\?")
_HOLDING = frozenset("has had owns owned holds held carries carried wields wielded takes took steals stole".split())
#: A known item taken is a hand-over's (``events.handovers``), read with its clause's guards ("if Corvin takes ...").
_TAKING = frozenset({"takes", "took", "steals", "stole"})
#: A death the DM tells: "Sylas is dead", "Jazna dies", "Grog beheads Jazna" ("Grog killed" alone is Grog killing).
#: Only of known entities and only in the DM's words: a player's "I'm dead" is a joke as often as not.
_DEATH = re.compile(
    rf"(?P<x>{_KNOWN}){_POSS}\s+(?:(?i:is|was|are|were)\s+(?:now\s+)?(?i:dead|slain|killed|executed)|(?i:dies|died))\b"
)
_KILL = re.compile(
    rf"(?:(?P<x>{_KNOWN})\s+)?(?i:kills|killed|slays|slew|beheads|beheaded|executes|executed)\s+(?P<y>{_KNOWN})"
)


def _with_article(what: str) -> str:
    """ "an elf", "a gnome": what a new name is, as the review reads it."""
    return f"{'an' if what[:1].casefold() in 'aeiou' else 'a'} {what}"


#: "a dwarf named Korvash", "an old tavern called The Gilded Goose", "her name is Yara".
_INTRO = re.compile(
    rf"(?:\b(?i:a|an|the|this|some)\s+(?:(?P<adj>[a-z-]+)\s+)?(?P<noun>[a-z-]+),?\s+)?"
    rf"(?i:named|called|by the name of|goes by|whose name is)\s+(?P<n>{_NAME})"
)

#: A role set off by commas beside a new name, in the DM's words: "A new captain, Oswin Marl, takes command",
#: "It is Nerith Vael, the envoy of Silvermarch". The role (``_person_role``) is what makes the name a person's.
_APPOSITION = re.compile(
    rf"\b{_ART}\s+(?P<before>(?:[a-z-]+\s+)?[a-z-]+),\s+(?P<n>{_NAME}),"
    rf"|(?P<m>{_NAME}),\s+{_ART}\s+(?P<after>[a-z-]+(?:\s+[a-z-]+)?)"
)


_EVENT_KINDS = {
    EventKind.death: "a death",
    EventKind.arrival: "an arrival",
    EventKind.acquisition: "an acquisition",
    EventKind.quest: "a quest taken or done",
    EventKind.battle: "a battle",
}


@dataclass
class _Mention:
    known: KnownEntity | None
    name: str


class RuleExtractor:
    """Gazetteer + patterns. ``review_only`` tells the pipeline to file everything as pending."""

    review_only = True

    async def extract(
        self,
        entries: Sequence[Entry],
        known: Sequence[KnownEntity],
        *,
        narrates: Callable[[Entry], bool] | None = None,
        retold: Collection[int] = frozenset(),
        scenes: Mapping[int, Sequence[KnownEntity]] | None = None,
        meant: Mapping[int, Sequence[Event]] | None = None,
        here: KnownEntity | None = None,
    ) -> ExtractionResult:
        # a person called by first or last name alone too, as the mention index reads them ("Eleanor gives ...")
        gazetteer = of_mentions(known)
        # who says "I": the one character a speaker plays (a player of two is neither)
        plays: dict[str, list[KnownEntity]] = {}
        for e in known:
            for player in e.played_by if e.type == EntityType.player else ():
                plays.setdefault(player, []).append(e)
        # Without the session's narrator: a speaker called DM (a recorded session's, named by role), else who says
        # the most in these lines.
        out = _Collector(narrates or narrator(entries, None))
        scene: deque[SceneLine] = deque(maxlen=SCENE_LINES)
        for entry in entries:
            text, found = _tag(gazetteer, entry.text, {e.id for line in scene for e in line.named})
            self._intros(entry, text, found, out.by_dm(entry), out)
            if out.by_dm(entry):
                self._deaths(entry, text, found, out)
                for who in alive(text, found, list(scene)):  # found alive: against a death the memory may hold
                    out.fact(who.name, "status", None, "alive", entry.id)
                told = events(text, found, retold=entry.id in retold)
                # someone unnamed arriving, whom the DM names next with a new name: proposed with their arrival
                for name, event in [] if entry.id in retold else newcomers(text, found, here):
                    if (mention := _resolve(name, found)) is not None and mention.known is None:
                        out.entity(mention.name, EntityType.npc, "", NEW_NAME_BY_DM_CONFIDENCE, entry)
                        out.fact(mention.name, "took_part_in", event.name, None, entry.id)
                        told.append(event)
                told += [e for e in scene_deaths(text, found, list(scene)) if e.name not in {t.name for t in told}]
                told = _folded(told, (scenes or {}).get(entry.id, ()), (meant or {}).get(entry.id, ()))
                if here is not None:
                    told += arrivals_here(text, found, here)
                here = _moved(here, text, found, told)  # where an npc arriving with no place comes next
                self._events(entry, one_each(told), out)
            me = plays.get(entry.speaker.strip().casefold(), [])
            self._patterns(entry, text, found, me[0] if len(me) == 1 else None, out)
            scene.append(SceneLine(scene_named(text, found)))
        return out.result()

    def _intros(self, entry: Entry, text: str, found: list[KnownEntity], by_dm: bool, out: _Collector) -> None:
        for m in _INTRO.finditer(text):
            mention = _resolve(m.group("n"), found)
            if mention is None or mention.known is not None:
                continue
            noun = (m.group("noun") or "").casefold()
            kind = NOUN_TYPE.get(noun) or NOUN_TYPE.get((m.group("adj") or "").casefold())
            kind = kind or (EntityType.npc if "nam" in m.group(0).casefold() else EntityType.concept)
            what = " ".join(w for w in (m.group("adj"), m.group("noun")) if w)
            conf = NEW_NAME_BY_DM_CONFIDENCE if by_dm else NEW_NAME_CONFIDENCE
            out.entity(mention.name, kind, _with_article(what) if what else "", conf, entry)
        for m in _APPOSITION.finditer(text) if by_dm else ():
            words = (m.group("before") or m.group("after")).split()
            # the role ends the words before the name ("a new captain"), and is one of the two after ("the envoy
            # of", "the old innkeeper")
            role = _person_role(words[-1:] if m.group("before") else words)
            mention = _resolve(m.group("n") or m.group("m"), found)
            if role is None or mention is None or mention.known is not None:
                continue
            if _introduced(mention.name, text[: m.start("n") if m.group("n") else m.start("m")]):
                out.entity(mention.name, EntityType.npc, _with_article(role), NEW_NAME_BY_DM_CONFIDENCE, entry)

    def _patterns(
        self, entry: Entry, text: str, found: list[KnownEntity], me: KnownEntity | None, out: _Collector
    ) -> None:
        text = _ASKED.sub(lambda m: " " * len(m.group()), text)  # same length: the names' places stay
        self._roles(entry, text, found, out)
        for m in _IS_ROLE.finditer(text):
            x, role = _resolve(m.group("x"), found), m.group("role").casefold()
            # Only a known entity: "Korvash is a blacksmith" alone is too thin to invent a person from.
            if x is not None and x.known is not None and role in OCCUPATIONS:
                out.fact(x.name, "occupation", None, role, entry.id)
        for pattern, rel_type in _RELATIONS:
            for m in pattern.finditer(text):
                x, y = _resolve(m.group("x"), found), _resolve(m.group("y"), found)
                if x is None or y is None or (x.known is None and y.known is None):
                    continue  # two unknown capitalised words are more likely a misparse than a fact
                self._new_if_unknown(x, EntityType.npc, entry, out)
                y_default = EntityType.faction if rel_type in ("member_of", "works_for") else EntityType.place
                self._new_if_unknown(y, y_default, entry, out)
                out.fact(x.name, rel_type, y.name, None, entry.id)
        # who has an item now: the receiver of a hand-over, the taker of a taking ("Corvin picks up the Bellstone")
        for holder, item in handovers(text, found, me):
            out.fact(holder.name, "has", item.name, None, entry.id)
        for m in _VERB_LINK.finditer(text):
            x, y = _resolve(m.group("x"), found), _resolve(m.group("y"), found)
            verb = m.group("verb")
            if x is None or y is None or x.name == y.name or verb not in _HOLDING:
                continue
            if verb in _TAKING and y.known is not None and y.known.type == EntityType.item:
                continue
            out.fact(x.name, "_".join(filter(None, (verb, m.group("prep")))), y.name, None, entry.id)

    def _roles(self, entry: Entry, text: str, found: list[KnownEntity], out: _Collector) -> None:
        """ "X, the blacksmith of Y": X's occupation or family, and how X stands to Y."""
        for m in _ROLE_OF.finditer(text):
            x, y = _resolve(m.group("x"), found), _resolve(m.group("y"), found)
            role = m.group("role").casefold()
            if x is None or y is None or role.split()[-1] not in OCCUPATIONS | FAMILY_ROLES.keys():
                continue
            self._new_if_unknown(x, EntityType.npc, entry, out)
            if (family := FAMILY_ROLES.get(role.split()[-1])) is not None:
                self._new_if_unknown(y, EntityType.npc, entry, out)
                out.fact(x.name, family, y.name, None, entry.id)
                continue
            out.fact(x.name, "occupation", None, role, entry.id)
            y_type = y.known.type if y.known else EntityType.place
            self._new_if_unknown(y, y_type, entry, out)
            out.fact(x.name, _role_link(role, m.group("prep"), y_type), y.name, None, entry.id)

    @staticmethod
    def _deaths(entry: Entry, text: str, found: list[KnownEntity], out: _Collector) -> None:
        for m in _DEATH.finditer(text):
            x = _resolve(m.group("x"), found)
            # who dies is a being, and the subject: not the place of "everyone from the abbey is dead"
            if x is not None and _mortal(x) and not AFTER_PREPOSITION.search(text, 0, m.start("x")):
                out.fact(x.name, "status", None, "dead", entry.id)
        for m in _KILL.finditer(text):
            y = _resolve(m.group("y"), found)
            x = _resolve(m.group("x"), found) if m.group("x") else None
            if y is None or (x is not None and x.name == y.name):
                continue
            out.fact(y.name, "status", None, "dead", entry.id)
            if x is not None:
                out.fact(x.name, "killed", y.name, None, entry.id)

    @staticmethod
    def _events(entry: Entry, told: list[Event], out: _Collector) -> None:
        """The turning points the DM tells, each an event linked to who took part and where."""
        for event in told:
            out.entity(event.name, EntityType.event, _EVENT_KINDS[event.kind], PATTERN_CONFIDENCE, entry)
            # the dead's state with the death, from the same line: accepted, it closes the "alive" a file loaded
            for who in event.participants if event.kind == EventKind.death else ():
                if event.name == f"Death of {who.name}":
                    out.fact(who.name, "status", None, "dead", entry.id)
            for who in event.participants:
                out.fact(who.name, "took_part_in", event.name, None, entry.id)
            if event.place is not None:
                out.fact(event.name, "located_in", event.place.name, None, entry.id)

    @staticmethod
    def _new_if_unknown(mention: _Mention, kind: EntityType, entry: Entry, out: _Collector) -> None:
        if mention.known is None:
            out.entity(mention.name, kind, "", NEW_NAME_CONFIDENCE, entry)


def _introduced(name: str, before: str) -> bool:
    """Whether a new capitalised name set off beside a role (``before``: the line's words before it) looks like a
    person introduced, not a sentence's opener or a place ("Honestly, the guard ...", "Tuesday, the merchant ...",
    "At the Gate, the guard ...", "Past the guard, Castle Ravenna, rises ..."): a title before a name ("Mister
    Pell"), or a word that is no English word; not an adverb ("Hesitantly"), not after a preposition or an article,
    nor starting or ending in a place's or a group's noun."""
    if before.rstrip().endswith("\ue001"):
        return False  # right after a known name, a word of it: "It is Nerith Mael, the envoy" (Nerith Vael)
    words = name.casefold().split()
    prior = re.findall(r"[^\W\d_]+", before.casefold())[-1:]
    if words[0] in _PREPOSITIONS or (prior and prior[0] in {"the", "a", "an", *_PREPOSITIONS}):
        return False
    if any(NOUN_TYPE.get(w) not in (None, EntityType.npc) for w in (words[0], words[-1])):
        return False
    rest = words[next((i for i, w in enumerate(words) if w not in TITLES), len(words)) :]
    if rest and len(rest) < len(words):
        return True  # "Mister Pell", "Lady Sera"
    adverb = len(rest) == 1 and len(rest[0]) >= 7 and rest[0].endswith("ly")  # "Hesitantly", "Gingerly"
    return not adverb and any(word_zipf(w) < _COMMON_ZIPF for w in rest)


def _person_role(words: Sequence[str]) -> str | None:
    """The first of ``words`` that is a role a person holds ("captain", "innkeeper"), if any."""
    return next((w for w in (w.casefold() for w in words) if w in OCCUPATIONS), None)


def whereabouts(
    entries: Sequence[Entry],
    by_dm: Callable[[Entry], bool],
    gazetteer: Gazetteer[KnownEntity],
    scenes: Mapping[int, Sequence[KnownEntity]],
    meant: Mapping[int, Sequence[Event]] | None = None,
    retold: Collection[int] = frozenset(),
) -> dict[int, KnownEntity | None]:
    """Where the party is as each of a session's lines (those extract reads, in order) begins, as the DM's lines
    tell it (:func:`_moved`; ``scenes``: the session's scene moves, ``meant``: its turning points read by meaning,
    ``retold``: its opening recap's lines, as :meth:`RuleExtractor.extract` takes them): the ``here`` a slice of
    them is extracted from, the same wherever the slice begins."""
    out: dict[int, KnownEntity | None] = {}
    here: KnownEntity | None = None
    for entry in entries:
        out[entry.id] = here
        if by_dm(entry):
            text, found = _tag(gazetteer, entry.text)  # as extract reads it
            placed = any(e.type == EntityType.location for e in found)  # only those can tell an arrival: events costs
            told = events(text, found, retold=entry.id in retold) if placed else []
            told = _folded(told, scenes.get(entry.id, ()), (meant or {}).get(entry.id, ()))
            here = _moved(here, text, found, told)
    return out


def _folded(told: list[Event], moves: Sequence[KnownEntity], meant: Sequence[Event]) -> list[Event]:
    """A DM's line's turning points (``told``, by its clauses) with the places its scene moved to (see
    ``scene_arrivals``) and those read by meaning (``meant``), each not told by a clause already."""
    told = list(told)
    for place in moves:
        if not _arrived(told, place):
            told.append(Event(EventKind.arrival, f"Arrival at {place.name}", place=place))
    names = {t.name for t in told}
    return told + [e for e in meant if e.name not in names and not (e.place and _arrived(told, e.place))]


def _moved(here: KnownEntity | None, text: str, found: list[KnownEntity], told: list[Event]) -> KnownEntity | None:
    """Where the party is after a DM's line (``text``, tagged) telling ``told``: the place it last arrives at, none
    once it leaves or travels away ("you leave Whitestone behind and ride north"), else where it was."""
    arrived = next((e.place for e in reversed(told) if _theirs(e)), None)
    return arrived or (None if leaves(text, found) else here)


def _theirs(event: Event) -> bool:
    """The party's arrival ("Arrival at Whitestone"), not an npc's ("Arrival of Quillon Ashgrove at ...")."""
    place = event.place
    return event.kind == EventKind.arrival and place is not None and event.name == f"Arrival at {place.name}"


def _arrived(told: list[Event], place: KnownEntity) -> bool:
    """Whether the line's clauses tell an arrival at ``place`` already: "Quillon walks into the Lantern" is his, and
    the scene or the meaning rule reading the same line adds no party's arrival there."""
    return any(e.kind == EventKind.arrival and e.place is not None and e.place.id == place.id for e in told)


def _role_link(role: str, prep: str, y_type: EntityType) -> str:
    """How someone of ``role`` (``prep``: "of", "in", ...) stands to a place, faction or other entity."""
    # "the archmage of Westruun" rules it; "the archmage in Westruun" lives there (seen on CRD3 C1E035)
    if prep.casefold() == "of" and (role in RULER_ROLES or role.split()[-1] in RULER_ROLES):
        return "leader_of"
    if y_type == EntityType.place:
        return "works_in"
    if y_type == EntityType.faction:
        return "member_of"
    return "associated_with"


def _tag(gazetteer: Gazetteer[KnownEntity], text: str, present: Collection[int] = ()) -> tuple[str, list[KnownEntity]]:
    """The text with each mention replaced by a placeholder naming its index in the returned list. A possessive
    ending not the name's own stays in the text: "Grog's dead" is "Grog is dead". A name owning what follows
    ("Sylas's guard", :func:`events.owns`) is tagged apart, so that no rule takes it for its subject or object."""
    parts: list[str] = []
    found: list[KnownEntity] = []
    done = 0
    for start, end, entity in gazetteer.find(text, possessive_ending=False, present=present):
        tag = OWNER_TAG if owns(text, end, place=entity.type == EntityType.location) else _PLACEHOLDER
        parts += [text[done:start], tag.format(len(found))]
        found.append(entity)
        done = end
    parts.append(text[done:])
    return "".join(parts), found


def _mortal(x: _Mention) -> bool:
    """Whether a death may be told of it: a person or a faction ("the Briarwoods are dead"), not a place or thing."""
    return x.known is None or x.known.type in PERSON_TYPES | {EntityType.faction}


def _resolve(slot: str, found: list[KnownEntity]) -> _Mention | None:
    """A name slot as a known entity, or as a new capitalised name (None when it is an ordinary word)."""
    if slot.startswith("\ue000"):
        return _Mention(found[int(slot[1:-1])], found[int(slot[1:-1])].name)
    name = re.sub(r"(?:['’]s|['’])$", "", slot).strip()
    if not name or name.split()[0].casefold() in COMMON_WORDS or "\ue000" in name:
        return None
    if " " not in name and name.casefold() in _TITLES:
        return None  # "named Lord and Lady Briarwood": a bare title is not a name
    return _Mention(None, name)


class _Collector:
    """Proposals keyed by what they say, so repeats within a batch merge their evidence. A new name is proposed
    only when the DM said it, or several players in several lines: one player's aside ("I voice a pilot named
    Lao") is no part of the world; facts about a name not proposed go with it."""

    def __init__(self, by_dm: Callable[[Entry], bool]) -> None:
        self.by_dm = by_dm
        self._entities: dict[str, ProposedEntity] = {}
        self._facts: dict[tuple[str, str, str | None, str | None], ProposedFact] = {}
        self._speakers: dict[str, set[str]] = {}  # new name → who said it (the DM as "")

    def entity(self, name: str, kind: EntityType, description: str, confidence: float, entry: Entry) -> None:
        self._speakers.setdefault(name.casefold(), set()).add("" if self.by_dm(entry) else entry.speaker)
        current = self._entities.get(name.casefold())
        if current is None:
            self._entities[name.casefold()] = ProposedEntity(
                name=name,
                type=kind.value,
                description=description,
                confidence=min(confidence, MAX_RULE_CONFIDENCE),
                entry_ids=[entry.id],
            )
            return
        current.confidence = min(max(current.confidence, confidence), MAX_RULE_CONFIDENCE)
        current.description = current.description or description
        if entry.id not in current.entry_ids:
            current.entry_ids.append(entry.id)

    def fact(
        self,
        source: str,
        rel_type: str,
        target: str | None,
        value: str | None,
        entry_id: int,
        confidence: float = PATTERN_CONFIDENCE,
    ) -> None:
        key = (source.casefold(), rel_type, target.casefold() if target else None, value)
        current = self._facts.get(key)
        if current is None:
            self._facts[key] = ProposedFact(
                source=source,
                type=rel_type,
                target=target,
                value=value,
                confidence=min(confidence, MAX_RULE_CONFIDENCE),
                basis="stated",
                entry_ids=[entry_id],
            )
        elif entry_id not in current.entry_ids:
            current.entry_ids.append(entry_id)

    def result(self) -> ExtractionResult:
        unsaid = {
            key
            for key, e in self._entities.items()
            if "" not in self._speakers[key] and (len(self._speakers[key]) < MIN_SPEAKERS or len(e.entry_ids) < 2)
        }
        return ExtractionResult(
            entities=[e for key, e in self._entities.items() if key not in unsaid],
            facts=[f for (s, _, t, _), f in self._facts.items() if s not in unsaid and t not in unsaid],
        )


def telling_line(named: Collection[str], lines: Sequence[str], gazetteer: Gazetteer[KnownEntity]) -> int:
    """Which of an item's lines (``lines``, in order) shows the DM the turning point ``named`` names (its event's
    name, or a session's: "Arrival at Whitestone (Session 3)"): the first the clause rules read as telling it in
    play, else the first they read as it in the DM's recap, else the first. The scene rule cites every line naming the
    place ("The town up on the cliffs is Ironhold"), the meaning rule another way of saying it: neither needs telling.
    """
    wanted = [name.casefold() for name in named]
    tagged = [_tag(gazetteer, text) for text in lines]

    def tells(text: str, found: list[KnownEntity], retold: bool) -> bool:
        said = [e.name.casefold() for e in events(text, found, retold=retold)]
        return any(w == s or w.startswith(f"{s} (") for w in wanted for s in said)

    for retold in (False, True):
        if (n := next((n for n, (text, found) in enumerate(tagged) if tells(text, found, retold)), None)) is not None:
            return n
    return 0


def telling_clause(named: Collection[str], line: str, gazetteer: Gazetteer[KnownEntity]) -> str | None:
    """The clause of ``line`` that tells the turning point ``named`` names (as :func:`telling_line` reads it), as
    said: a line may name the place before it tells the party getting there ("dragons tearing through distant
    Wildemount … you traveled across to the continent of Wildemount"). None when no clause rule reads it there."""
    wanted = [name.casefold() for name in named]
    text, found = _tag(gazetteer, line)
    for retold in (False, True):
        for event in events(text, found, retold=retold):
            said = event.name.casefold()
            if event.span and any(w == said or w.startswith(f"{said} (") for w in wanted):
                start, end = (_untagged(gazetteer, line, at) for at in event.span)
                return line[start:end].strip()
    return None


def _untagged(gazetteer: Gazetteer[KnownEntity], line: str, at: int) -> int:
    """Where offset ``at`` of ``line`` tagged (:func:`_tag`) is in ``line``; in a tag, its name's start."""
    shift = 0  # how much longer the line is than its tagged text, up to here
    for n, (start, end, _) in enumerate(gazetteer.find(line, possessive_ending=False)):
        tagged_start = start - shift
        if at <= tagged_start:
            break
        tag = len(_PLACEHOLDER.format(n))
        if at < tagged_start + tag:
            return start
        shift += (end - start) - tag
    return at + shift
