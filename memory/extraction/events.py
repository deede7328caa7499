"""A session's turning points in the DM's narration: deaths, arrivals at a known place, a named item changing
hands, a quest taken from a known giver. Each is an ``event`` named from its line ("Death of Sylas Briarwood",
"Arrival at Whitestone") with who took part in it. Pure: the line comes tagged by the rule extractor (each known
name a placeholder).

Only the DM's words are read (the caller checks): a player's "I kill it" is a wish, not what happened. A match in a
hypothetical, a question, a denial or a memory ("if you kill Sylas", "is Sylas dead?", "a year ago you entered Emon")
is no event.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

from memory.extraction.schema import KnownEntity
from memory.models import EntityType

_K = r"\ue000(?P<{}>\d+)\ue001"  # a known name, tagged
_POSS = r"(?:['’]s|['’])?"
_UPPER = "A-ZÀ-ÖØ-Þ"
_PERSON = frozenset({EntityType.npc, EntityType.player})
#: "The Briarwoods are dead": a faction of people can die too.
_MORTAL = _PERSON | {EntityType.faction}


class EventKind(StrEnum):
    death = "death"
    arrival = "arrival"
    acquisition = "acquisition"
    quest = "quest"


@dataclass
class Event:
    """A turning point one line tells: its name, its kind, who took part, and where it happened."""

    kind: EventKind
    name: str
    participants: list[KnownEntity] = field(default_factory=list)
    place: KnownEntity | None = None


_DIES = re.compile(
    _K.format("x")
    + _POSS
    + r"(?:\s+(?i:in|on|at)\s+(?i:the)\s+[a-z]+)?\s+"  # "Grog in the snow is dead"
    # "X killed" alone is X killing: a killing word needs "is", "was"... before it
    + r"(?:(?:(?i:is|was|are|were)\s+(?:(?i:now|finally|already)\s+)?(?i:dead|slain|killed|executed|beheaded|"
    r"destroyed))|(?i:falls|fell|drops|dropped|lies|lay)\s+dead|(?:(?i:finally)\s+)?(?i:dies|died))\b"
)
_KILLS = re.compile(
    r"(?:" + _K.format("x") + r"(?:\s*,[^,.!?;\ue000]{1,40},)?\s+)?"  # "Grog, without hesitation, beheads Jazna"
    r"\b(?i:kills|killed|slays|slew|beheads|beheaded|executes|executed|murders|murdered|finishes\s+off|"
    r"finished\s+off)\s+" + _K.format("y")
)
_WAY = r"(?:your|their|his|her|our)\s+way\s+(?:back\s+)?(?:in)?to"
_ARRIVES = re.compile(
    r"\b(?i:arrive|arrives|arrived|reach|reaches|reached|enter|enters|entered|step\s+into|steps\s+into|"
    rf"make\s+{_WAY}|makes\s+{_WAY}|made\s+{_WAY}|pull\s+into|pulls\s+into|"
    r"(?:find|finds|found)\s+(?:yourselves|yourself|themselves|itself|himself|herself|ourselves)\s+(?:in|at)|"
    r"come\s+into|comes\s+into|"
    r"(?:travel|travels|traveled|travelled|head|heads|headed|return|returns|returned|ride|rides|rode|sail|sails|"
    r"sailed|rest|rested)\s+(?:(?i:back|north|south|east|west|home|deep|down|up|\w+ward)\s+)?(?:to|into|in|for))"
    r"\s+(?:(?i:at|in|into|on|upon)\s+)?(?:(?i:the)\s+)?(?:(?i:city|town|village|gates?|outskirts)\s+of\s+)?"
    + _K.format("y")
)
_GIVES = re.compile(
    r"(?:" + _K.format("x") + r"\s+)?\b(?i:gives|gave|hands|handed|passes|passed|tosses|tossed)\s+"
    r"(?:(?i:you|him|her|them|it|over)\s+|" + _K.format("to") + r"\s+)?"
    r"(?:(?i:the|a|an|his|her|their|its)\s+)?" + _K.format("y") + r"(?:\s+(?i:to)\s+" + _K.format("to2") + ")?"
)
_FINDS = re.compile(
    r"(?:" + _K.format("x") + r"\s+)?\b(?i:find|finds|found|discover|discovers|discovered|receive|receives|received|"
    r"obtain|obtains|obtained|acquire|acquires|acquired|loot|loots|looted|take|takes|took|grab|grabs|grabbed|"
    r"pick\s+up|picks\s+up|picked\s+up|steal|steals|stole)\s+(?:(?i:the|a|an)\s+)?" + _K.format("y")
)
#: A quest taken: "Allura Vysoren came to them requesting their aid", "Lord Sherri hires you to". The giver is the
#: first known name of the sentence before the asking.
_ASKS = re.compile(
    _K.format("x") + r"[^.!?;]{0,120}?\b(?i:request(?:s|ed|ing)?\s+(?:your|their)\s+(?:aid|help)|"
    r"(?:asks|asked|hires|hired|begs|begged|tasks|tasked)\s+(?:you|them)\s+to|"
    r"offers?\s+(?:you|them)\s+(?:a|the)\s+(?:job|contract|quest|bounty))\b"
)
#: Words anywhere in the sentence that make it a memory, not what happens now.
_PAST = re.compile(r"\b(?:ago|remember|remembers|recall|previously|last\s+time|years?\s+back)\b", re.IGNORECASE)
#: Words that make the clause of a match no telling of what happened: conditions, intentions, futures,
#: denials, memories.
_UNREAL = re.compile(
    r"\b(?:if|unless|whether|would|could|should|might|may|must|can|cannot|can't|will|won't|gonna|going\s+to|"
    r"want|wants|wanted|try|tries|trying|tried|attempt|attempts|about\s+to|before|until|not|n't|never|nearly|"
    r"almost|ago|remember|previously|last\s+time|once|plan|plans|hope|hopes|chance|kill\s+or)\b|'ll\b|’ll\b",
    re.IGNORECASE,
)
#: A death told of "him" or "her": "You killed him", "she crumples, lifeless", "he is dead". Who it is comes from
#: the scene (:func:`scene_deaths`).
_PRONOUN_DIES = re.compile(
    r"(?:\b(?i:you|they|he|she)|" + _K.format("k") + r")\s+(?i:kills?|killed|slays?|slew|beheads?|beheaded|executes?|"
    r"executed|finish(?:es)?\s+off|finished\s+off)\s+(?i:him|her)\b"
    r"|\b(?i:he|she)(?:\s+(?i:is|was)|['’]s)\s+(?:(?i:now|finally)\s+)?(?i:dead|slain)\b"
    r"|\b(?i:he|she)\s+(?:(?i:dies|died)\b|(?i:falls|fell|drops|dropped|crumples|crumpled|slumps|slumped|collapses|"
    r"collapsed)\b[^.!?;]{0,40}?\b(?i:dead|lifeless)\b)"
)
_IF = re.compile(r"\b(?:if|unless|whether)\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?;:\"“”]")
_CLAUSE_START = re.compile(r",|—|\b(?:and|but|as|while|so|then)\b", re.IGNORECASE)
_CLAUSE_END = re.compile(r",|—|\b(?:and|but|while|so|then)\b", re.IGNORECASE)


def events(text: str, found: list[KnownEntity]) -> list[Event]:
    """The turning points ``text`` (one line of the DM's, tagged) tells; ``found``: the known names it tags."""
    out: list[Event] = []
    for m in _DIES.finditer(text):
        x = found[int(m.group("x"))]
        if x.type in _MORTAL and _told(text, m):
            out.append(Event(EventKind.death, f"Death of {x.name}", [x]))
    for m in _KILLS.finditer(text):
        victim = found[int(m.group("y"))]
        killer = found[int(m.group("x"))] if m.group("x") else None
        if victim.type in _MORTAL and (killer is None or killer.id != victim.id) and _told(text, m):
            out.append(Event(EventKind.death, f"Death of {victim.name}", _with([], victim, killer)))
    for m in _ARRIVES.finditer(text):
        y = found[int(m.group("y"))]
        if y.type == EntityType.location and _whole(text, m, "y") and _told(text, m):
            out.append(Event(EventKind.arrival, f"Arrival at {y.name}", _persons(text, m, found), place=y))
    for pattern in (_GIVES, _FINDS):
        for m in pattern.finditer(text):
            item = found[int(m.group("y"))]
            if item.type == EntityType.item and _whole(text, m, "y") and _told(text, m):
                who = _with(_persons(text, m, found), item)
                out.append(Event(EventKind.acquisition, f"Acquisition of {item.name}", who))
    for m in _ASKS.finditer(text):
        x = found[int(m.group("x"))]
        if x.type in _MORTAL and _told(text, m):
            out.append(Event(EventKind.quest, f"Quest from {x.name}", _with(_persons(text, m, found), x)))
    return _once(out)


@dataclass
class SceneLine:
    """One line before the DM's, by anyone: the known names it tells (not asks or supposes), in order."""

    named: list[KnownEntity]


def scene_named(text: str, found: list[KnownEntity]) -> list[KnownEntity]:
    """The known names ``text`` (tagged) says in sentences that tell, not ask or suppose: "what if I attack Delilah?"
    makes Delilah no one's target yet."""
    out: list[KnownEntity] = []
    for m in re.finditer(r"\ue000(\d+)\ue001", text):
        if _told(text, m):
            out.append(found[int(m.group(1))])
    return out


def scene_deaths(text: str, found: list[KnownEntity], scene: list[SceneLine]) -> list[Event]:
    """Deaths the DM tells of "him" or "her" (``text``, tagged), each resolved to the one npc the scene is about:
    the known npcs this line names before it and those the last lines (``scene``, oldest first) name. Two of them
    and it is nobody: a wrong name costs the DM more than a missed death. Who took part: the players named there."""
    out: list[Event] = []
    for m in _PRONOUN_DIES.finditer(text):
        if not _told(text, m):
            continue
        before = scene_named(text[: m.start()], found)
        killer = found[int(m.group("k"))] if m.group("k") else None
        named = [e for line in scene for e in line.named] + before
        npcs = {e.id: e for e in named if e.type == EntityType.npc}
        if len(npcs) != 1:
            continue
        (dead,) = npcs.values()
        players = [e for e in (*named, *scene_named(text, found)) if e.type == EntityType.player]
        out.append(Event(EventKind.death, f"Death of {dead.name}", _with(players, dead, killer)))
    return _once(out)


def _sentence(text: str, m: re.Match[str]) -> tuple[int, int]:
    start = max((s.end() for s in _SENTENCE_END.finditer(text, 0, m.start())), default=0)
    end = _SENTENCE_END.search(text, m.end())
    return start, end.end() if end is not None else len(text)


def _clause(text: str, m: re.Match[str]) -> int:
    """Where the match's clause begins."""
    start, _ = _sentence(text, m)
    return max((c.end() for c in _CLAUSE_START.finditer(text, start, m.start())), default=start)


def _whole(text: str, m: re.Match[str], group: str) -> bool:
    """The known name is the whole name said: "Greyspine" of "Greyspine Manor" is another place than Greyspine's."""
    return re.match(rf"\s+[{_UPPER}]", text[m.end(group) + 1 :]) is None


def _told(text: str, m: re.Match[str]) -> bool:
    """The match tells what happened: its sentence is no question, and nothing in its clause makes it unreal."""
    start, end = _sentence(text, m)
    if text[end - 1] == "?" or _PAST.search(text[start:end]) or _IF.search(text, start, m.start()):
        return False  # "If you hit, she is dead": the condition may come in a clause of its own before it
    after = _CLAUSE_END.search(text, m.end(), end)  # "Sylas dies if you close it": the condition may follow
    clause = re.sub(r"\ue000\d+\ue001", " ", text[_clause(text, m) : after.start() if after else end])
    return _UNREAL.search(clause) is None


def _persons(text: str, m: re.Match[str], found: list[KnownEntity]) -> list[KnownEntity]:
    """The people (and parties) the match's clause names up to its end: who took part (those named after it are
    often only where it happened: "to the Frostweald, where Osysa resides")."""
    # "Allura of the Tal'Dorei Council": a name after "of" says whose she is, not who took part
    span = text[_clause(text, m) : m.end()]
    seen = {int(i) for i in re.findall(r"(?<!\bof\s)(?<!\bof\sthe\s)\ue000(\d+)\ue001", span, re.IGNORECASE)}
    return list({found[i].id: found[i] for i in sorted(seen) if found[i].type in _MORTAL}.values())


def _with(named: list[KnownEntity], *ends: KnownEntity | None) -> list[KnownEntity]:
    return list({e.id: e for e in (*ends, *named) if e is not None}.values())


def _once(found: list[Event]) -> list[Event]:
    """One event per name: a line telling a death twice ("kills Jazna; Jazna is dead") is one death."""
    by_name: dict[str, Event] = {}
    for event in found:
        current = by_name.setdefault(event.name.casefold(), event)
        if current is not event:
            current.participants = _with(current.participants, *event.participants)
    return list(by_name.values())
