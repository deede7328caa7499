"""A session's turning points in the DM's narration: deaths, arrivals at a known place, a named item changing
hands, a quest taken from a known giver, a known quest accepted or completed. Each is an ``event`` named from its
line ("Death of Sylas Briarwood", "Arrival at Whitestone") with who took part in it. Pure: the line comes tagged by
the rule extractor (each known name a placeholder).

In play a turning point is a clause: a verb of its kind (killing, dying, arriving, finding or being given), in any
tense, with a known entity of the kind's type as its subject or object ("Vex has fallen", "the lifeless body of
Reginald", "you make your way to the continent of Marquet", "you are handed the Bag of Holding"). An arrival's
subject is "you", "the party" or a known name: a player, a party or faction, or an npc ("Quillon arrives at Greyskull
Keep"), or someone unnamed whom the next sentence names ("An elf arrives at the Gilded Anchor. It is Nerith Vael.");
never a pronoun ("she walks back to the palace"). An npc's or faction's is named for them ("Arrival of Quillon
Ashgrove at Greyskull Keep"), the party's for the place alone.

Only the DM's words are read (the caller checks): a player's "I kill it" is a wish, not what happened. A match in a
hypothetical, a question, a denial or a memory ("if you kill Sylas", "is Sylas dead?", "a year ago you entered Emon")
is no event.

A turning point needs no phrasing when the scene moves: a known place the DM names for the first time in the session
and keeps naming in narration is an arrival there (:func:`scene_arrivals`, over the whole session).

Nor when a sentence of the DM's narration means one: naming one known person, place or item, its MiniLM embedding near
enough a generic sentence of a death, an arrival or an acquisition (:func:`meaning_sentences`, :func:`meant_events`;
the pipeline embeds).

The DM's recap at the session's opening is the DM's own summary of the story's turning points, told in the past tense
about the party ("you traveled south to the Frostweald", "you all did battle with Thordak"): there memories are the
point, and the recap's register is read too, which adds a battle with a known foe.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from memory.correction.evidence import MatchSettings, word_zipf
from memory.extraction.lexicon import NOUN_TYPE
from memory.extraction.schema import Event, EventKind, KnownEntity
from memory.models import PERSON_TYPES, EntityType

_K = r"\ue000(?P<{}>\d+)\ue001"  # a known name, tagged
#: A known name owning what follows, tagged apart from the others by the rule extractor ("Sylas's guard", "Vex's Bow
#: of the Wind"): never a rule's subject or object (see :func:`owns`), only the determiner of what it owns.
OWNER_TAG = "\ue002{}\ue001"
OWNER = r"\ue002\d+\ue001['’]s?\s+"
_UPPER = "A-ZÀ-ÖØ-Þ"
_PERSON = PERSON_TYPES
#: "The Briarwoods are dead": a faction of people can die too.
_MORTAL = _PERSON | {EntityType.faction}
#: Who the party is, when the recap names it: a player or the party's own name ("Vox Machina").
_PARTY_TYPES = frozenset({EntityType.player, EntityType.faction})
#: Who may arrive in play, as the DM tells it: the party, a faction, or an npc ("Quillon arrives at Greyskull Keep").
_ARRIVING = _PARTY_TYPES | {EntityType.npc}


# The DM's telling in play: a clause whose verb is of a turning point's class, with a known entity of the class's
# type as its subject (a dying) or its object (a killing, an arrival, an acquisition). Verbs are listed once, by
# lemma; _forms makes their present, past and participle, so "you find", "Gilmore found" and "was found" all read.

#: The present, past and participle of the irregular verbs below.
_IRREGULAR = {
    "die": ("dies", "died", "died"), "slay": ("slays", "slew", "slain"), "fall": ("falls", "fell", "fallen"),
    "find": ("finds", "found", "found"), "take": ("takes", "took", "taken"), "give": ("gives", "gave", "given"),
    "come": ("comes", "came", "come"), "make": ("makes", "made", "made"), "lie": ("lies", "lay", "lain"),
    "strike": ("strikes", "struck", "struck"), "cut": ("cuts", "cut", "cut"), "steal": ("steals", "stole", "stolen"),
    "get": ("gets", "got", "gotten"), "ride": ("rides", "rode", "ridden"), "run": ("runs", "ran", "run"),
    "fly": ("flies", "flew", "flown"), "go": ("goes", "went", "gone"), "sink": ("sinks", "sank", "sunk"),
    "hit": ("hits", "hit", "hit"), "set": ("sets", "set", "set"), "lay": ("lays", "laid", "laid"),
    "travel": ("travels", "traveled", "travelled"), "leave": ("leaves", "left", "left"),
}  # fmt: skip
#: Verbs that double their last consonant in the past: "dropped", "stepped".
_DOUBLED = frozenset({"drop", "step", "grab", "snag", "slip", "stop"})


def _forms(phrase: str, past: bool = True) -> str:
    """A verb phrase given by its lemma ("pick up") as a pattern of its base, present, past and participle (``past``
    False: its base and present only)."""
    verb, _, rest = phrase.partition(" ")
    if verb in _IRREGULAR:
        forms = {verb, *_IRREGULAR[verb]} if past else {verb, _IRREGULAR[verb][0]}
    else:
        stem = verb + verb[-1] if verb in _DOUBLED else verb.removesuffix("e")
        third = verb + "es" if re.search(r"(?:s|sh|ch|x|z|o)$", verb) else verb + "s"
        forms = {verb, third} | (
            {(stem[:-1] + "i" if re.search(r"[^aeiou]y$", stem) else stem) + "ed"} if past else set()
        )
    words = "|".join(sorted(forms, key=len, reverse=True))
    return rf"(?:{words})" + "".join(rf"\s+{w}" for w in rest.split())


def _class(*lemmas: str, past: bool = True) -> str:
    """Any form of any of the verb phrases, as whole words (``past`` False: in the present only)."""
    return r"\b(?i:" + "|".join(_forms(lemma, past) for lemma in lemmas) + r")\b"


#: Words between a subject and its verb: "Jazna finally dies", "you then make your way".
_ADVERB = r"(?:(?i:now|finally|then|just|suddenly|instantly|immediately|slowly|quickly|eventually|at\s+last)\s+)?"
#: A killing, the dead its object: "Grog beheads Jazna", "you finish off Kevdak".
_KILL = _class("kill", "slay", "behead", "execute", "murder", "assassinate", "decapitate", "finish off", "cut down",
               "strike down")  # fmt: skip
#: ... the dead between the verb and its particle: "you finish Kevdak off".
_KILL_SPLIT = r"(?P<split>" + _class("finish", "cut", "strike") + r")"
_PARTICLE = {"finish": "off", "cut": "down", "strike": "down", "finished": "off", "finishes": "off", "cuts": "down",
             "strikes": "down", "struck": "down"}  # fmt: skip
#: A dying, the dead its subject: "Jazna dies", "Sylas breathes his last".
_DIE = _class("die", "perish", "breathe (?:his|her|its|their) last", "stop breathing", "cease breathing")
#: "dead" of a death, not of a manner: "dead silent", "dead set on", "dead ahead".
_DEAD_WORD = r"(?i:dead)\b(?!\s+(?i:silent|quiet|serious|set|tired|center|centre|ahead|on|still|eyes?|weight)\b)"
#: A fall that the clause makes a death: "crumples to the ground, lifeless", "falls dead", never "falls unconscious".
_FALL = (
    _class("fall", "drop", "crumple", "collapse", "slump", "topple", "go", "lie", "sink", "hit the ground")
    + r"(?:(?![.!?;\ue000]|\b(?i:unconscious|asleep|prone|but)\b).){0,40}?\b(?:(?i:lifeless)\b|"
    + _DEAD_WORD
    + ")"
)
_DEAD_STATE = (
    r"\s+(?:(?i:now|finally|already)\s+)?(?:(?i:slain|killed|executed|beheaded|murdered|destroyed|deceased|lifeless|"
    r"no\s+more)\b|" + _DEAD_WORD + ")"
)
#: What the dead are: "Sylas is dead", "the Briarwoods were destroyed", "Thordak lies slain", "Grog's dead". An "'s"
#: is "is" only with the state ending its clause ("Grog's dead.", "Vex's dead and gone", "Grog's dead now"): else
#: a possessive ("Percy's dead family") or "has" ("Grog's killed the guard").
_DEAD_S = r"['’]s" + _DEAD_STATE + r"(?=\s*(?:[.!?;:,—\"”]|$)|\s+(?i:and|but|now)\b)"
_DEAD = (
    r"(?i:is|was|are|were|lies|lay|remains)" + _DEAD_STATE
    + r"|" + _DEAD_S
    + r"|(?i:has|have)\s+fallen(?=\s*(?:[.!;]|$))"  # "Vex has fallen.": not "has fallen unconscious" or "... asleep"
)  # fmt: skip
#: A body that tells its owner is dead: "the corpse of Horace", "the lifeless body of Reginald".
_CORPSE = r"(?i:corpse|carcass|(?:lifeless|dead)\s+(?:body|form))"

#: The dead's own verbs before the dying: "staggers back and", "lets out a scream, then crumples and". None begins
#: with a new subject ("Vex staggers back and Grog dies" is Grog's death) or holds a conjunction of its own.
_SUBJECT_WORD = r"(?i:he|she|they|you|we|it|i|the|a|an|his|her|their|its|this|that|there|and|then)\b"
_STEP = rf"(?!{_SUBJECT_WORD})[a-z]+(?:\s+(?!(?i:and|then)\b)[^\s.!?;:,\"“”\ue000\ue001]+){{0,5}}?"
_RUN = rf"(?:{_STEP},?\s+(?i:and\s+then|and|then)\s+){{0,2}}"

_DIES = re.compile(
    _K.format("x")
    + r"(?:['’](?=\s))?(?:\s+(?i:in|on|at)\s+(?i:the)\s+[a-z]+)?(?:\s+|(?=['’]s\s))"  # "Grog in the snow is dead"
    + _ADVERB
    + rf"(?:{_DEAD}|{_RUN}(?:{_DIE}|{_FALL}))"
    + r"|\b(?i:the|a)\s+(?:[a-z-]+\s+){0,2}?"
    + _CORPSE
    + r"\s+(?i:of)\s+"
    + _K.format("c")
)
#: A name right after a preposition is its object, not a clause's subject ("the captain of the guard is dead").
AFTER_PREPOSITION = re.compile(r"\b(?i:of|from|in|at|near|with|by|for|to|into|under|inside)\s+(?:(?i:the)\s+)?$")
_KILLS = re.compile(
    r"(?:" + _K.format("x") + r"(?:\s*,[^,.!?;\ue000]{1,40},)?\s+" + _ADVERB + r")?"  # "Grog, without hesitation,"
    rf"(?:{_KILL}\s+" + _K.format("y") + rf"|{_KILL_SPLIT}\s+" + _K.format("y2") + r"\s+(?P<particle>off|down)\b)"
)
_WAY = r"(?:your|their|his|her|our|its)\s+way\s+(?:back\s+)?(?:in)?to"
_REFLEXIVE = r"(?:yourselves|yourself|themselves|itself|himself|herself|ourselves)"
#: An arrival, the place its object: "you arrive at Whitestone", "you step into the Velvet Cabaret".
_ARRIVE = _class(
    "arrive at", "arrive in", "arrive on", "arrive upon", "reach", "enter", "step into", "step onto", "step inside",
    "walk into", "come into", "come upon", "pull into", "emerge into", "land in", "land at", "get to", "get back to",
    "set foot in", "set foot on", "cross into", "stop at", "stop by", f"make {_WAY}", f"find {_WAY}",
    f"find {_REFLEXIVE} in", f"find {_REFLEXIVE} at",
)  # fmt: skip
#: ... or a journey's end: "you head back to Westruun", "you travel north to Kraghammer".
_JOURNEY = _class("travel", "head", "return", "ride", "sail", "rest", "walk", "march", "fly", "run", "continue")
#: "the northern icy landscape of Issylra", "the dwarven citadel of Kraghammer": a place word and its name.
_PLACE_WORD = (
    r"(?i:city|town|village|capital|citadel|fortress|keep|"
    r"castle|temple|realm|plane|land|lands|landscape|region|country|countryside|kingdom|empire|continent|island|isle|"
    r"coast|shores?|edge|base|foot|heart|center|centre|depths|outskirts|gates?|walls|streets|ruins|docks|port|"
    r"harbou?r|district|borders?|mountains|forests?|woods|jungles?|deserts?|wastes|wilds|halls|tunnels|caverns?|caves"
    r"|sewers|territory|province|north|south|east|west|top|peak|mouth|entrance|middle|square)"
)
_PLACE_OF = r"(?:(?i:the|a|an|your|their|our)\s+)?(?:[a-z'-]+\s+){0,3}?" + _PLACE_WORD + r"\s+of\s+(?:(?i:the)\s+)?"
_GOES = (
    rf"(?:{_ARRIVE}|{_JOURNEY}\s+(?:(?i:back|north|south|east|west|home|deep|down|up|\w+ward|on)\s+)?"
    r"(?i:to|into|in|for))"
    rf"\s+(?:(?i:at|in|into|on|upon)\s+)?(?:{_PLACE_OF}|(?i:the)\s+)?" + _K.format("y")
)
_ARRIVES = re.compile(_GOES)
#: An acquisition, the item its object: "he hands you the Bag of Holding", "you pull out the Horn of Orcus".
_GIVE = _class("give", "hand", "pass", "toss", "present", "award", "gift", "bestow")
_GIVES = re.compile(
    r"(?:" + _K.format("x") + r"\s+" + _ADVERB + r")?" + _GIVE + r"\s+"
    r"(?:(?i:you|him|her|them|it|over)\s+|" + _K.format("to") + r"\s+)?(?:(?i:with)\s+)?"
    r"(?:(?i:the|a|an|his|her|their|its)\s+|" + OWNER + r")?"
    + _K.format("y") + r"(?:\s+(?i:to)\s+" + _K.format("to2") + ")?"
)  # fmt: skip
_FIND = _class(
    "find", "discover", "receive", "obtain", "acquire", "loot", "take", "grab", "pick up", "steal", "retrieve",
    "recover", "claim", "pull out", "take hold of", "pocket", "snatch", "attune to", "attune with",
)  # fmt: skip
#: ... or the item given to the party: "you are handed the Bag of Holding".
_GIVEN = r"\b(?i:are|were|is|was)\s+(?i:given|handed|gifted|awarded|granted|presented\s+with)\b"
_FINDS = re.compile(
    r"(?:" + _K.format("x") + r"\s+" + _ADVERB + r")?"
    + rf"(?:{_FIND}|{_GIVEN})\s+(?:(?i:the|a|an)\s+|{OWNER})?" + _K.format("y")
)  # fmt: skip

# A hand-over, said by anyone: a known item passing to a known person, who has it now ("Quillon hands Thessaly the
# Ashgrove Key", "Corvin picks up the Bellstone", a player's "I give the Cloak of Tides to Wren"). The giver or taker
# is the clause's subject: a known person, or the speaker's own character ("I"); no "you", whom the DM tells of.

#: Who gives or takes: a known name, or "I" (``i``: the speaker's character).
_HANDER = r"(?:" + _K.format("x") + r"|(?P<i>\bI))\s+" + _ADVERB
_ITEM_DET = rf"(?:(?i:the|a|an|his|her|their|its|my|your)\s+|{OWNER})?"
_HANDS = re.compile(
    _HANDER + _GIVE + r"\s+(?:" + _K.format("to") + r"\s+" + _ITEM_DET + _K.format("y")
    + r"|" + _ITEM_DET + _K.format("y2") + r"\s+(?i:to)\s+" + _K.format("to2") + r")"
)  # fmt: skip
#: Taking in hand, not finding: "Corvin finds the Bellstone" may leave it where it lies.
_TAKE = _class("take", "grab", "pick up", "snatch", "pocket", "receive", "take hold of", "steal", "catch")
_TAKES_ITEM = re.compile(_HANDER + _TAKE + r"\s+" + _ITEM_DET + _K.format("y"))
#: ... or holding it now: "Wren is carrying the Ember Key", "I'm holding the Bellstone", "Wren's holding the key".
#: Not "holding the line" (no known item), nor "still holding" (the holder the memory has, told again, or no
#: hand-over told: see ``rules._VERB_LINK``).
_HOLDING = r"(?:(?i:now|already)\s+)?(?i:holding|carrying|wielding|clutching|wearing)\s+"
_HOLDS = re.compile(
    r"(?:" + _K.format("x") + r"|(?P<i>\bI))(?:\s+(?i:is|was|am)\s+|['’](?i:s|m)\s+|\s+)" + _HOLDING
    + _ITEM_DET + _K.format("y")
)  # fmt: skip


def handovers(text: str, found: list[KnownEntity], me: KnownEntity | None) -> list[tuple[KnownEntity, KnownEntity]]:
    """Who has which item now, by the hand-overs ``text`` (one line, tagged, by anyone) tells: ``(holder, item)``.
    ``me``: the speaker's character, for "I" (None: the line's "I" is nobody's)."""
    out: list[tuple[KnownEntity, KnownEntity]] = []
    for pattern in (_HANDS, _TAKES_ITEM, _HOLDS):
        for m in pattern.finditer(text):
            giver = me if m.group("i") else found[int(m.group("x"))]
            if giver is None:
                continue  # "I" of nobody's character
            y = "y2" if m.groupdict().get("y2") else "y"
            item = found[int(m.group(y))]
            to = m.groupdict().get("to") or m.groupdict().get("to2")
            holder = found[int(to)] if to else giver
            if giver.type not in _MORTAL or holder.type not in _PERSON or item.type != EntityType.item:
                continue
            if (to and holder.id == giver.id) or not _whole(text, m, y):
                continue
            # holding is a state: told as it is now ("Grog was holding the key" may be long over)
            if _BEFORE_SUBJECT.search(text[: m.start()]) and (_stated if pattern is _HOLDS else _told)(text, m):
                out.append((holder, item))
    return list({(h.id, i.id): (h, i) for h, i in out}.values())


#: A quest taken: "Allura Vysoren came to them requesting their aid", "Lord Sherri hires you to". The giver is the
#: first known name of the sentence before the asking.
_ASKS = re.compile(
    _K.format("x") + r"[^.!?;]{0,120}?\b(?i:request(?:s|ed|ing)?\s+(?:your|their)\s+(?:aid|help)|"
    r"(?:asks|asked|hires|hired|begs|begged|tasks|tasked)\s+(?:you|them)\s+to|"
    r"offer(?:s|ed)?\s+(?:you|them)\s+(?:a|the)\s+(?:job|contract|quest|bounty)|offer(?:s|ed)?\s+to\s+pay\s+(?:you|them))\b"
)
#: Words anywhere in the sentence that make it a memory, not what happens now (the recap is all memory: not there).
_PAST = re.compile(r"\b(?:ago|remember|remembers|recall|previously|last\s+time|years?\s+back)\b", re.IGNORECASE)
#: Words that make the clause of a match no telling of what happened: conditions, intentions, futures (a plan:
#: "Tomorrow you walk to Ironhold", "next week you travel to ..."), denials, concessions (a state said in passing:
#: "even though Thordak is dead, the lair ..." tells no death now).
_UNREAL = re.compile(
    r"\b(?:if|unless|whether|though|although|despite|would|could|should|might|may|must|can|cannot|can't|will|"
    r"won't|gonna|going\s+to|"
    r"want|wants|wanted|try|tries|trying|tried|attempt|attempts|about\s+to|not|n't|never|nearly|"
    r"almost|plan|plans|hope|hopes|chance|kill\s+or|tomorrow|next\s+(?:week|month|year|time|session))\b|'ll\b|’ll\b",
    re.IGNORECASE,
)
#: ... and "before"/"until" of what has not happened yet: ahead of the telling ("before you reach Emon", "wait until
#: Sylas dies"), or after it with a subject of its own ("find the horn before they do"). Before a time they only say
#: when it happened, wherever they stand ("just before dawn you arrive", "you arrive a little before noon").
_TIME_WORD = (
    r"(?:dawn|dusk|daybreak|daylight|"
    r"first\s+light|sunrise|sunset|sundown|sunup|nightfall|twilight|noon|midday|midnight|mornings?|afternoons?|"
    r"evenings?|nights?|days?|weeks?|months?|years?|hours?|minutes?|moments?|long|then|now|today|tonight|tomorrow|"
    r"end|spring|summer|autumn|winter|\d+)\b"
)
_TIME = r"(?:(?:the|this|that|next|first|following|same|an?|one|\w+['’]s)\s+){0,2}" + _TIME_WORD
#: A time opening a sentence or clause, before its subject, with or without a comma: "In the morning you arrive",
#: "On the third day you", "Three days later you", "and after two days of travel you".
_OPENING_TIME = (
    r"(?:^|[.!?;:,]\s|\b(?:and|but|then|so)\s)\s*(?:(?:in|on|at|by|after|before|until|till|during|within|over|around|"
    r"toward|towards|near)\s+)?(?:(?:the|this|that|next|first|second|third|fourth|fifth|last|final|following|same|an?|"
    r"one|two|three|four|five|six|seven|few|several|couple\s+of|early|late|\w+['’]s|\d+)\s+){0,3}"
    rf"{_TIME_WORD}(?:\s+(?:later|after|on|of\s+[\w'’-]+))?"
)
#: A plan's time opening a sentence, which makes every clause of it a plan: "Tomorrow, when the gates open, you walk
#: into Ironhold", "The next time you see Tim, you ...".
_PLAN_OPENING = re.compile(
    r"[\s\"'“‘(*_-]*(?:tomorrow|(?:the\s+)?next\s+(?:week|month|year|time|session))\b", re.IGNORECASE
)
_UNTIL = r"\b(?:before|until|till)\s+"
_NOT_YET = re.compile(rf"{_UNTIL}(?!{_TIME})", re.IGNORECASE)
#: ... a clause's subject after them: a pronoun or a known name.
_NOT_YET_CLAUSE = re.compile(
    rf"{_UNTIL}(?:(?:I|you|he|she|it|we|they|anyone|anybody|someone|somebody|everyone|everybody)\b|\ue000)",
    re.IGNORECASE,
)
#: ... and memories, in play: "a year ago you entered Emon" is no turning point of this session.
_MEMORY = re.compile(r"\b(?:ago|yesterday|remember|previously|last\s+time|once)\b", re.IGNORECASE)
#: ... and what the party only sees in a dream or a vision, said before the telling in its sentence or in its clause:
#: "In the vision, you see Tim walk into Ironhold", "You see Tim walk into Ironhold in your dream"; not a vision told
#: of in a later clause ("Allura came requesting their aid, saying Kima had gone on a vision quest").
_DREAM = re.compile(
    r"\b(?:dreams?|dreaming|dreamt|dreamed|daydreams?|nightmares?|visions?|hallucinations?|hallucinate|imagine|"
    r"imagines|imagined|imagining)\b",
    re.IGNORECASE,
)
#: ... unless its clause ends the dream: "The vision fades, and you walk into Ironhold", "You wake from the nightmare".
_DREAM_ENDS = re.compile(
    r"\b(?:fades?|faded|fading|ends?|ended|over|gone|wakes?|woke|waking|awakens?|awakened|awoke|dissipates?|"
    r"dissolves?|vanish(?:es)?|vanished)\b",
    re.IGNORECASE,
)
#: The DM's hedges on their own memory: "Grog leapt, if I recall, into the Plane of Air" is no condition.
_HEDGE = re.compile(
    r"\b(?:if\s+(?:I|we)\s+(?:recall|remember)(?:\s+(?:correctly|right))?|if\s+I['’]m\s+(?:correct|right|not\s+mistaken)"
    r"|if\s+memory\s+serves(?:\s+me)?|as\s+(?:I|we)\s+recall)\b",
    re.IGNORECASE,
)
#: A death told of "him" or "her": "You killed him", "she crumples, lifeless", "he is dead". Who it is comes from
#: the scene (:func:`scene_deaths`).
_PRONOUN_DIES = re.compile(
    r"(?:\b(?i:you|they|he|she)|" + _K.format("k") + r")\s+" + _ADVERB
    + rf"(?:{_KILL}\s+(?i:him|her)\b|{_KILL_SPLIT}\s+(?i:him|her)\s+(?P<particle>off|down)\b)"
    + r"|\b(?i:he|she)(?:\s+|(?=['’]s))" + _ADVERB + rf"(?:{_DEAD}|{_DIE}|{_FALL})"
)  # fmt: skip
_IF = re.compile(r"\b(?:if|unless|whether)\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?;:\"“”]")
_CLAUSE_START = re.compile(r",|—|\b(?:and|but|as|while|so|then)\b", re.IGNORECASE)
_CLAUSE_END = re.compile(r",|—|\b(?:and|but|while|so|then)\b", re.IGNORECASE)


# The recap register: the DM's summary of the story so far ("Last we left off, you traveled south to the Frostweald,
# where you battled a camp of orcs") tells its turning points in past-tense clauses about the party. A clause is
# read when its subject is the party (a pronoun, "the party", a known player or party), its verb a story verb in
# the past (a bare verb only after "managed to": "you managed to defeat the guardian, craft the trammels"), and its
# object or place a known entity of the verb's kind.

#: Who the recap tells of: the party, by pronoun, by a word for it, or by a known name (a player's or a party's).
_PARTY = (
    r"(?:\b(?i:you|they|we)(?:\s+(?i:all|guys|two|both|three|four|five|six))?"
    r"|\b(?i:the|your|their|our)\s+(?i:party|group|heroes|adventurers|companions)"
    r"|\b(?i:our)\s+(?i:gathering|band|group)\s+of\s+(?i:friends|adventurers|heroes)"
    r"|" + _K.format("s") + r")"
)
#: Words between the subject and its verb: auxiliaries and adverbs ("you had then finally"), or earlier verbs of a
#: chain ("you managed to defeat the guardian, craft ..."), never a relative clause, a condition or another name.
_BOUND = r"who|whom|whose|which|that|where|when|while|as|because|if|unless|whether|until|before|after|since|though"
_CHAIN = (
    r"(?:\s+(?:(?!\b(?i:" + _BOUND + r")\b)[^.!?;:\"“”\ue000\ue001]){0,100}?"
    r"(?:,\s*(?:(?i:and|then)\s+)?|\s+(?i:and|then)\s+))?\s*"
)
#: A verb in the past: the recap's tense. "-ed" (a few adjectives too: a line held for a recap by mistake is read as
#: before), the irregular pasts above and the commonest others.
_PAST_TENSE = re.compile(
    r"\b(?:\w+ed|"
    + "|".join(sorted({past for _, past, _ in _IRREGULAR.values()}))
    + r"|was|were|had|did|left|fought|met|saw|told|said|brought|sought|caught|kept|held|sent|lost|won|led|fled|"
    r"began|became|knew|drew|threw|stood|heard|broke|chose|spoke|woke|tore|bought|felt|meant|slept|leapt|rose|drove|"
    r"froze|hid|shook|forgot|flew|swam|ate|wore|swore|sat|[a-z]+['’]d)\b",
    re.IGNORECASE,
)


#: A turning point's verb in the present: "arrives at", "you find", "hands".
_NOW = re.compile(
    _class("arrive", "reach", "enter", "step into", "walk into", "come into", "land", "travel", "head", "return",
           "ride", "sail", "die", "kill", "slay", "give", "hand", "find", "take", "pick up", "grab", past=False)
)  # fmt: skip


def told_now(text: str) -> bool:
    """Whether ``text`` tells a turning point in the present and nothing in the past: a line of the DM's opening
    so ("In the morning a patrol boat of the Tidewardens arrives at the abbey") is play, not a recap of the story so
    far ("Last time, Quillon drowned", or a fragment of one: "In the city of Kraghammer.")."""
    return _PAST_TENSE.search(_NAME_WORD.sub(" ", text)) is None and _NOW.search(text) is not None


def told_before(text: str) -> bool:
    """Whether ``text`` tells something in the past: a line of the DM's opening so ("Last we left off, you had
    fled Ironhold") retells the story so far, where one in the present ("So, it's dawn") is play."""
    return _PAST_TENSE.search(_NAME_WORD.sub(" ", text)) is not None


#: A capitalised word inside a sentence: a name's ("the Gilded Anchor", "the Fell Wood"), no verb in the past.
_NAME_WORD = re.compile(rf"(?<=[^\s.!?:\"“]\s)[{_UPPER}][\w'’-]*")


#: The verb that makes a bare form a telling: "you managed to craft", not "you went to craft".
_MANAGED = re.compile(r"\b(?:managed|able|proceeded|went\s+on|got)\s+to\b", re.IGNORECASE)
_DET = r"(?:(?i:the|a|an|one\s+of\s+the|some\s+of\s+the)\s+)?"
#: Up to three words before a name that say what it is ("the great colossal Thordak"), none a possessive.
_ADJ = r"(?:(?!(?i:his|her|their|your|its|my|our|him|them|you)\b)[a-z'-]+\s+){0,3}?"

# An arrival in play: "you guys stop by the Foramere Basin", "Grog arrives at Whitestone", "the Iron Ravens ride
# into Velmora", "Quillon arrives at Greyskull Keep". Its subject is told as in the recap, or is a known npc the DM
# tells of; but "they" is no one's party in play (the DM's "they" are the npcs around the party), nor is "she" of
# "she walks back to the palace" anyone known, and it stands where a subject stands.

#: Who arrives in play: "you" or "we" (by number or in part: "all of you guys"), a word for the party, a known name
#: ("the Iron Ravens").
_PLAYERS = (
    r"(?:(?:\b(?i:all|both|each|some|most|the\s+rest|the\s+two|the\s+three)\s+of\s+)?\b(?i:you|we)"
    r"(?:\s+(?i:all|guys|two|both|three|four|five|six))?"
    r"|\b(?i:the|your|our)\s+(?i:party|group|heroes|adventurers|companions)"
    r"|(?:\b(?i:the)\s+)?" + _K.format("s") + r")"
)
#: Known names listed before a subject's last: "Thessaly and", "Thessaly, Pike and", "the Briarwoods, the Ravens, and";
#: a comma alone is no list ("At the gate of Ironhold, Tim arrives").
_ONE = r"(?:\b(?i:the)\s+)?\ue000\d+\ue001"
_LISTED = rf"(?:(?:{_ONE}\s*,\s*)*{_ONE},?\s+(?i:and)\s+)?"
_ARRIVERS = _PLAYERS.replace("|(?:", "|" + _LISTED + "(?:", 1)  # the known name's alternative, with a list
_PLAY_ARRIVES = re.compile(
    rf"(?P<subject>{_ARRIVERS})(?:\s*,[^,.!?;:\"“”\ue000\ue001]{{1,60}},)?"  # "You, darting in a forward way, find"
    rf"{_CHAIN}(?:(?i:have|has|had|all|both)\s+)*{_ADVERB}{_GOES}"
)
#: A known quest the party takes on: "so you've accepted the quest to silence the Choir Bell", "you have a second
#: quest: find Tamsin". A home DM tells it so, the giver speaking in the first person ("I need someone to ...").
_TAKES = re.compile(
    rf"{_PLAYERS}(?:['’]ve|\s+(?i:have|has|had))?\s+" + _ADVERB
    + r"(?:(?i:accept|accepts|accepted|take|takes|took|taken)(?:\s+(?i:on|up))?\s+(?i:the|a|this|your|their)\s+"
    r"(?:[a-z]+\s+)?(?i:quest|job|task|mission)(?:\s+(?i:to|of))?"
    r"|(?i:a|an|the|your|their)\s+(?:[a-z]+\s+)?(?i:quest)\s*:)\s+" + _K.format("y")
)  # fmt: skip
#: ... and a known quest the party has done: "You have completed the quest to find Lucy Pruitt".
_DONE = re.compile(
    rf"{_PLAYERS}(?:['’]ve|\s+(?i:have|has|had))?\s+" + _ADVERB
    + r"(?i:complete|completes|completed|finish|finishes|finished|fulfil|fulfils|fulfill|fulfills|fulfilled)\s+"
    r"(?i:the|a|this|your|their)\s+(?:[a-z]+\s+)?(?i:quest|job|task|mission)(?:\s+(?i:to|of))?\s+" + _K.format("y")
)  # fmt: skip
#: What comes before a clause's subject: its sentence's or clause's start, a conjunction, an adverb or a time ("just
#: before dawn you arrive"), never a verb or a preposition ("she gives you a nod and walks back to the palace": "you"
#: is her object).
_BEFORE_SUBJECT = re.compile(
    r"(?:^|[.!?,;:\"“”—–(-]|\b(?i:and|but|so|then|as|when|once|while|after|until|where|now|soon|okay|ok|alright|"
    r"right|well|yeah|yes|because|since|meanwhile|tonight|today|\w+ly)|"
    rf"\b(?i:(?:before|until|till|after|at|by)\s+{_TIME})|(?i:{_OPENING_TIME})"  # "The next morning you"
    # who is seen doing it: "You see Quillon enter the Lantern", "you watch Grog walk into the Feed and Mead"
    r"|\b(?i:you|we)\s+(?:(?i:can|could|all|then|now)\s+)?(?i:see|saw|watch|watched|notice|noticed|spot|spotted))\s*$"
)


def _verbs(past: str, bare: str) -> str:
    return rf"(?:(?P<past>{past})|(?P<bare>{bare}))\b"


def _register(verbs: str, rest: str) -> re.Pattern[str]:
    return re.compile(_PARTY + _CHAIN + verbs + rest)


_RECAP_ARRIVES = _register(
    _verbs(
        r"(?i:traveled|travelled|journeyed|went|headed|returned|ventured|arrived|came|sailed|rode|flew|leapt|leaped|"
        r"jumped|fled|escaped|descended|climbed|snuck|sneaked|crossed|delved|trekked|marched|ran|teleported|"
        r"made\s+(?:your|their|its|our|his|her)\s+way|continued\s+(?:on\s+)?(?:your|their|its|our)\s+way|"
        r"found\s+(?:yourselves|themselves|itself|ourselves)|ended\s+up|set\s+(?:out|off|sail)|"
        r"(?:were|was)\s+(?:transported|brought|taken|teleported|escorted|sent|led|carried|whisked|summoned|pulled|"
        r"flown|ferried|guided))",
        r"(?i:travel|journey|go|head|return|venture|arrive|come|sail|ride|fly|leap|jump|flee|escape|descend|climb|"
        r"sneak|cross|delve|make\s+(?:your|their|its|our)\s+way)",
    ),
    # a path may come between: "leapt through one of these portals into", "were transported via druids to"
    r"(?:\s+(?i:back|north|south|east|west|\w+wards?|home|deep|down|up|out|onward|inland|far|further|all\s+the\s+way))?"
    r"(?:\s+(?i:via|through|by|across|over|along|past)\b[^.!?;\ue000]{0,40}?)?"
    r"\s+(?i:to|into|in|at|toward|towards|for|onto|within|inside|through|beneath|under|below)\s+"
    + rf"(?:{_PLACE_OF}|(?i:the)\s+)?"
    + _K.format("y"),
)
_RECAP_REACHES = _register(
    _verbs(r"(?i:entered|reached|infiltrated|stormed)", r"(?i:enter|reach|infiltrate|storm)"),
    rf"\s+(?:{_PLACE_OF}|(?i:the)\s+)?" + _K.format("y"),
)
_RECAP_ACQUIRES = _register(
    _verbs(
        r"(?i:found|discovered|acquired|obtained|received|recovered|retrieved|claimed|crafted|forged|created|stole|"
        r"took|looted|won|earned|bought|purchased|unearthed|secured|collected|tore|wrested|inherited|"
        r"(?:were|was)\s+(?:given|granted|handed|gifted|awarded|rewarded\s+with|entrusted\s+with))",
        r"(?i:find|discover|acquire|obtain|receive|recover|retrieve|claim|craft|forge|create|steal|take|loot|win|earn|"
        r"buy|purchase|unearth|secure|collect)",
    ),
    rf"\s+{_DET}{_ADJ}" + _K.format("y"),
)
#: A fight with a known foe: "you did battle with the great colossal Thordak".
_RECAP_FIGHTS = _register(
    _verbs(
        r"(?i:battled|fought(?:\s+(?:against|off|with))?|defeated|bested|vanquished|overcame|routed|faced(?:\s+off\s+"
        r"(?:against|with))?|confronted|ambushed|attacked|repelled|(?:fended|drove)\s+off|did\s+battle\s+(?:with|against)"
        r"|clashed\s+with|took\s+on|(?:were|was)\s+(?:attacked|ambushed|assaulted)\s+by)",
        r"(?i:battle|fight|defeat|best|vanquish|overcome|face|confront|repel|(?:fend|drive)\s+off|do\s+battle\s+with)",
    ),
    rf"\s+{_DET}{_ADJ}" + _K.format("y"),
)
#: Each register rule: its pattern, its kind, how it names the event, and the types its known entity may have.
_REGISTER: list[tuple[re.Pattern[str], EventKind, str, frozenset[EntityType]]] = [
    (_RECAP_ARRIVES, EventKind.arrival, "Arrival at {}", frozenset({EntityType.location})),
    (_RECAP_REACHES, EventKind.arrival, "Arrival at {}", frozenset({EntityType.location})),
    (_RECAP_ACQUIRES, EventKind.acquisition, "Acquisition of {}", frozenset({EntityType.item})),
    (_RECAP_FIGHTS, EventKind.battle, "Battle with {}", frozenset({EntityType.npc, EntityType.faction})),
]


def _register_events(text: str, found: list[KnownEntity]) -> list[Event]:
    """The turning points the recap register tells in ``text`` (tagged, a line of the DM's recap)."""
    out: list[Event] = []
    for pattern, kind, name, types in _REGISTER:
        for m in pattern.finditer(text):
            y = found[int(m.group("y"))]
            party = found[int(m.group("s"))] if m.group("s") else None
            if y.type not in types or (party is not None and party.type not in _PARTY_TYPES):
                continue
            if m.group("bare") and not _MANAGED.search(text, m.start(), m.start("bare")):
                continue  # "you went to craft the trammels" tells a purpose, not what happened
            if not _whole(text, m, "y") or not _told(text, m, retold=True):
                continue
            place = y if y.type == EntityType.location else None
            who = _with(_persons(text, m, found), party, None if place else y)
            out.append(Event(kind, name.format(y.name), who, place=place, span=_span(text, m)))
    return out


def events(text: str, found: list[KnownEntity], *, retold: bool = False) -> list[Event]:
    """The turning points ``text`` (one line of the DM's, tagged) tells; ``found``: the known names it tags.
    ``retold``: the line is the DM's recap at the session's opening (``memory.extraction.pipeline.opening_recap``)."""
    text = _HEDGE.sub(lambda h: " " * len(h.group()), text)
    out: list[Event] = []
    for m in _DIES.finditer(text):
        x = found[int(m.group("x") or m.group("c"))]
        if m.group("x") and AFTER_PREPOSITION.search(text, 0, m.start()):
            continue  # "the captain of the Briarwoods is dead": the captain's death
        if x.type in _MORTAL and _told(text, m, retold):
            out.append(Event(EventKind.death, f"Death of {x.name}", [x], span=_span(text, m)))
    for m in _KILLS.finditer(text):
        victim = found[int(m.group("y") or m.group("y2"))]
        killer = found[int(m.group("x"))] if m.group("x") else None
        if not _particle(m):
            continue  # "you cut Jazna off" is no killing
        if _bidden(text, m):
            continue
        if victim.type in _MORTAL and (killer is None or killer.id != victim.id) and _told(text, m, retold):
            who = _with([], victim, killer)
            out.append(Event(EventKind.death, f"Death of {victim.name}", who, span=_span(text, m)))
    for m, arrivers, end in ((m, [], m.end()) for m in _ARRIVES.finditer(text)) if retold else _arrivals(text, found):
        y = found[int(m.group("y"))]
        if y.type == EntityType.location and _whole(text, m, "y") and _told(text, m, retold):
            who = _with(_persons(text, m, found), *arrivers)
            # an npc's or a faction's arrival is theirs, not the party's at the same place: two events, even in one
            # session ("the Tidewardens arrive at the abbey" a night after the party did)
            them = [] if any(e.type == EntityType.player for e in arrivers) else arrivers
            name = f"Arrival of {_listed(them)} at {y.name}" if them else f"Arrival at {y.name}"
            out.append(Event(EventKind.arrival, name, who, place=y, span=(_clause(text, m), end)))
    for pattern in (_GIVES, _FINDS):
        for m in pattern.finditer(text):
            item = found[int(m.group("y"))]
            if item.type != EntityType.item or _bidden(text, m):
                continue
            if _whole(text, m, "y") and _told(text, m, retold):
                who = _with(_persons(text, m, found), item)
                out.append(Event(EventKind.acquisition, f"Acquisition of {item.name}", who, span=_span(text, m)))
    for m in _ASKS.finditer(text):
        x = found[int(m.group("x"))]
        if x.type in _MORTAL and _told(text, m, retold):
            who = _with(_persons(text, m, found), x)
            out.append(Event(EventKind.quest, f"Quest from {x.name}", who, span=_span(text, m)))
    for pattern, what in ((_TAKES, "Acceptance"), (_DONE, "Completion")):
        for m in pattern.finditer(text):
            quest = found[int(m.group("y"))]
            s = m.group("s")
            subject = s is None or found[int(s)].type in _PARTY_TYPES
            if (
                quest.type == EntityType.quest
                and subject
                and _BEFORE_SUBJECT.search(text[: m.start()])
                and _told(text, m)
            ):
                who = _with(_persons(text, m, found), quest)
                out.append(Event(EventKind.quest, f"{what} of {quest.name}", who, span=_span(text, m)))
    if retold:  # in play, the DM's past tense is a memory ("no, you went back to the tavern"), not a turning point
        out += _register_events(text, found)
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
        if not _particle(m) or not _told(text, m):
            continue
        named = [e for line in scene for e in line.named] + scene_named(text[: m.start()], found)
        if (dead := _scene_npc(named)) is None:
            continue
        killer = found[int(m.group("k"))] if m.group("k") else None
        players = [e for e in (*named, *scene_named(text, found)) if e.type == EntityType.player]
        out.append(Event(EventKind.death, f"Death of {dead.name}", _with(players, dead, killer)))
    return _once(out)


def _scene_npc(named: list[KnownEntity]) -> KnownEntity | None:
    """The one known npc of ``named`` (the names the scene's lines tell), None for none or several."""
    npcs = {e.id: e for e in named if e.type == EntityType.npc}
    return next(iter(npcs.values())) if len(npcs) == 1 else None


#: Someone found or still alive, told by the DM: "Lucy is alive", "Crane is still breathing", "you find Lucy alive",
#: "She's alive" (the one npc of the scene, as for a death told of "her"), "Lucy's alive".
_LIVING = r"(?:(?i:still|now|very\s+much|clearly|definitely|barely|somehow|just)\s+)?(?i:alive|breathing)\b"
_ALIVE = re.compile(
    r"(?:" + _K.format("x") + r"|\b(?i:he|she)(?=\s|['’]s))"
    r"(?:\s+(?i:is|was|remains|stays)\s+|['’]s\s+|\s+)" + _LIVING
)


#: A name's "'s" that the rules read as "is" or "has": "Grog's dead.", "Wren's holding the key", "Lucy's alive",
#: "Kima's the champion of Bahamut" (``rules._ROLE_OF``); or that no possessive is, before an adverb or a preposition
#: ("Pike's not listening", "Adra's got your back", "Keyleth's after Vax": on CRD3's dev episodes).
_CONTRACTED = re.compile(
    rf"{_DEAD_S}|['’]s\s+(?:{_HOLDING}|{_LIVING}|(?i:a|an|the|his|her|their)\s)"
    r"|['’]s\s+(?i:not|never|got|gotten|been|gone|going|still|already|just|now|also|always|here|there|in|on|at|with"
    r"|after|about|over|under|beneath|behind|up|down|out|off|into|from|to|so|too|very|really|like|all|gonna)\b"
)
#: A possessive ending and the first word of what it owns: "Sylas's guard", "Sylas' guard", "Vex's Bow of the Wind".
_POSSESSIVE = re.compile(r"(?:['’]s|(?<=[sxzSXZ])['’])\s+(?=[^\W\d_]|\ue000)")


def owns(text: str, end: int, place: bool = False) -> bool:
    """Whether the name ending at ``end`` of ``text`` (its possessive ending after it) owns what follows: "Sylas's
    guard" is the guard, "Grog has Vex's bow" not Vex, "Grog takes Vex's Bow of the Wind" the bow. Not where the rules
    read its "'s" as "is" or "has" (:data:`_CONTRACTED`), nor, of a ``place``, before a part of it: "you arrive at
    Emon's gates" is at Emon, as "the gates of Emon" is."""
    m = _POSSESSIVE.match(text, end)
    if m is None or _CONTRACTED.match(text, end) is not None:
        return False
    return not (place and re.match(_PLACE_WORD + r"\b", text[m.end() :]))


def alive(text: str, found: list[KnownEntity], scene: list[SceneLine]) -> list[KnownEntity]:
    """The known people ``text`` (one line of the DM's, tagged) tells are alive, told, not asked or supposed ("is she
    alive?", "if Crane is still breathing"): a ``status → alive`` for the DM to review, which accepted closes a
    death the memory holds (a character raised, a body that was not hers)."""
    out: dict[int, KnownEntity] = {}
    for m in _ALIVE.finditer(text):
        if not _stated(text, m):
            continue
        if m.group("x") is not None:
            who: KnownEntity | None = found[int(m.group("x"))]
        else:
            who = _scene_npc([e for line in scene for e in line.named] + scene_named(text[: m.start()], found))
        if who is not None and who.type in _PERSON and (m.group("x") is None or _whole(text, m, "x")):
            out[who.id] = who
    return list(out.values())


def _arrivals(text: str, found: list[KnownEntity]) -> Iterator[tuple[re.Match[str], list[KnownEntity], int]]:
    """The arrivals ``text`` (tagged, a line of the DM's play) tells: each with a subject of :data:`_PLAYERS` where a
    subject stands, a known name (or a list of them) a player's, a party's or faction's, or an npc's; or with
    someone unnamed as its subject whom the next sentence names (:data:`_SOMEONE_ARRIVES`). Each comes with who
    arrives by name (none: the party, by a word for it) and where its telling ends. The recap needs none: it is all
    the party's."""
    pos = 0
    while (m := _PLAY_ARRIVES.search(text, pos)) is not None:
        # "Thessaly and Grog arrive": every name of the subject arrives
        arrivers = [found[int(i)] for i in re.findall(r"\ue000(\d+)\ue001", m.group("subject"))]
        if all(e.type in _ARRIVING for e in arrivers) and _BEFORE_SUBJECT.search(text[: m.start()]):
            yield m, arrivers, m.end()
            pos = m.end()
        else:  # an object's "you" may hide the subject after it: look again from the next word
            pos = m.start() + 1
    for m in _SOMEONE_ARRIVES.finditer(text):
        if (named := _named_next(text, m, found)) is not None and _BEFORE_SUBJECT.search(text[: m.start()]):
            yield m, [named[0]], named[1]


#: Someone the DM has not named yet, as a clause's subject: "an elf in a grey cloak", "a tall figure", "someone". No
#: word of another clause ("a guard nods as you enter") nor a pronoun.
_SOMEONE = (
    r"(?:\b(?i:a|an)(?:\s+(?!(?i:" + _BOUND + r"|and|but|then|i|you|we|he|she|it|they|him|her|them)\b)[\w'’-]+){1,7}?"
    r"|\b(?i:someone|somebody))"
)
_SOMEONE_ARRIVES = re.compile(rf"{_SOMEONE}\s+{_ADVERB}{_GOES}")
#: ... and who it is, in the next sentence of the same line: "It is Nerith Vael.", "She's Nerith, the envoy of ...".
#: Capitalised words that are no one's name after "It is": "It is Tuesday.", "It's March.", "It is Christmas Eve."
_CALENDAR = (
    r"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|January|February|March|April|May|June|July|August|"
    r"September|October|November|December|Midnight|Noon|Dawn|Dusk|Morning|Evening|Night|Spring|Summer|Autumn|Fall|"
    r"Winter|Christmas|Easter|Halloween|Yule|Midsummer|Midwinter|Solstice|Equinox|New\s+Year)\b"
)
#: From this Zipf frequency a word is ordinary English (see ``MatchSettings.common_zipf``).
_COMMON_ZIPF = MatchSettings().common_zipf
_NAMED_NEXT = re.compile(
    r"\s*(?i:it|he|she)(?:\s+(?i:is|was)\s+|['’](?i:s)\s+)"
    rf"(?:{_K.format('n')}|(?!{_CALENDAR})(?P<new>[{_UPPER}][\w'’-]*(?:\s+[{_UPPER}][\w'’-]*){{0,2}}))"  # or a new name
    r"(?=\s*(?:[.,!;—]|$))"
)


def _named_next(text: str, m: re.Match[str], found: list[KnownEntity]) -> tuple[KnownEntity, int] | None:
    """Who arrives unnamed in the match (:data:`_SOMEONE`), as the next sentence names them: a known player, npc or
    faction, and where that naming ends; None when it names nobody so."""
    _, end = _sentence(text, m)
    n = _NAMED_NEXT.match(text, end)
    if n is None or n.group("n") is None or found[int(n.group("n"))].type not in _ARRIVING or not _whole(text, n, "n"):
        return None
    return (found[int(n.group("n"))], n.end()) if _person_like(m.group()) else None


def _person_like(said: str) -> bool:
    """Whether someone unnamed (:data:`_SOMEONE`, with its verb) is a person whom a name may be given next: a word
    for one ("an elf", "a tall figure", "a guard", "someone"), not weather, a season or a thing ("A storm arrives.
    It is Midnight.", "A few coins arrive.")."""
    words = re.findall(r"[\w'’-]+", said.casefold())
    return any(NOUN_TYPE.get(w) == EntityType.npc or w in ("someone", "somebody") for w in words)


def _new_name(name: str) -> bool:
    """Whether words given next as a newcomer's name are a person's: no everyday word alone ("It is Urgent.", "She
    is Dark."; :data:`_CALENDAR` has the times and holidays)."""
    words = name.split()
    return len(words) > 1 or word_zipf(name.casefold()) < _COMMON_ZIPF


def newcomers(text: str, found: list[KnownEntity], here: KnownEntity | None) -> list[tuple[str, Event]]:
    """The arrivals ``text`` (tagged, a line of the DM's play) tells of someone unnamed whom the next sentence gives a
    name no known entity has ("An elf arrives at the Gilded Anchor. It is Corvin Ash."): each with that name, as
    said, and its event named for it, at the known place said, else at ``here`` (None: nowhere, so none). The event
    has no participant: the name is for the caller to propose."""
    out: list[tuple[str, Event]] = []
    for m in (*_SOMEONE_ARRIVES.finditer(text), *_COMES.finditer(text)):
        if m.groupdict().get("s") is not None:
            continue  # a known name arriving: see arrivals_here
        y = m.groupdict().get("y")
        place = found[int(y)] if y is not None else here
        if place is None or place.type != EntityType.location or (y is not None and not _whole(text, m, "y")):
            continue
        n = _NAMED_NEXT.match(text, _sentence(text, m)[1])
        if n is None or not n.group("new") or not _new_name(n.group("new")) or not _person_like(m.group()):
            continue
        if _BEFORE_SUBJECT.search(text[: m.start()]) and _told(text, m):
            name = n.group("new")
            span = (_clause(text, m), n.end())
            out.append((name, Event(EventKind.arrival, f"Arrival of {name} at {place.name}", place=place, span=span)))
    return out


def _listed(named: Sequence[KnownEntity]) -> str:
    """Names as a list is said: "Jazna", "Jazna and Gilmore", "Sylas Briarwood, Jazna and Gilmore"."""
    names = [e.name for e in named]
    return " and ".join(filter(None, (", ".join(names[:-1]), names[-1])))


#: The party leaving where it is, or travelling away with no place to reach said: "you leave Whitestone behind",
#: "we set out at dawn", "you ride north for three days". (Travelling to a known place is an arrival: ``_GOES``.)
#: What it leaves is the place, or nothing: not "you leave a few coins on the bar", "you set off the trap", "you
#: move on to the next shop", "you run away from the ogre", "you walk toward the bar".
_SETTLEMENT = r"(?i:city|town|village|hamlet|settlement|camp|keep|castle|citadel|fortress|port|outpost|region|realm)"
_LEFT = (
    r"(?:(?:\s+(?i:behind|out\s+of|of|from))?\s+(?:(?:(?i:the|this|your|our)\s+(?:[a-z'-]+\s+){0,2}?)?"
    + _SETTLEMENT
    + r"\b|\ue000(?P<left>\d+)\ue001)"
    # ... or nothing: the clause ends, or a time, a manner, company or a destination follows ("set out at dawn"); not
    # "behind" and a thing ("you leave behind a few coins")
    r"|(?=\s*(?:[.,!?;:—–\"”)]|$|(?i:and|but|then|at|for|with|in|on|by|before|after|once|again|together|as|while|so"
    r"|now|early|\w+ly)\b)))"
)
_PLAY_LEAVES = re.compile(
    rf"(?P<subject>{_PLAYERS})(?:\s*,[^,.!?;:\"“”\ue000\ue001]{{1,60}},)?{_CHAIN}(?:(?i:have|has|had|all|both)\s+)*"
    + _ADVERB
    + rf"(?:(?:{_class('leave', 'depart', 'set out', 'set off', 'head out', 'ride out', 'move on')}"
    rf"|{_JOURNEY}\s+(?i:away|off|out)\b){_LEFT}"
    # a direction away, not toward something near: "you ride north for three days", not "rest east of the gate"
    rf"|{_JOURNEY}\s+(?i:onward|onwards|north|south|east|west|(?!towards?|outwards?|inwards?|forwards?)\w+wards?)\b"
    r"(?!\s+(?i:of)\b))"
)


def leaves(text: str, found: list[KnownEntity]) -> bool:
    """Whether ``text`` (tagged, a line of the DM's play) tells the party leaving, or travelling with no place to
    reach: where it was is no longer where the scene is. The party: "you", "we", "the party"; a faction or one
    player character leaving leaves the party where it is."""
    for m in _PLAY_LEAVES.finditer(text):
        left = m.group("left")
        place = left is None or found[int(left)].type == EntityType.location
        if m.group("s") is None and place and _BEFORE_SUBJECT.search(text[: m.start()]) and _told(text, m):
            return True
    return False


#: An npc or faction arriving where the party is, no place said: "Doran Ives arrives with the guards", or someone
#: unnamed whom the next sentence names ("An elf in silver armour arrives. It is Nerith Vael.").
_COMES = re.compile(
    rf"(?:(?P<subject>{_LISTED}{_K.format('s')})|{_SOMEONE})\s+{_ADVERB}"
    r"(?i:arrives|arrive|arrived|has\s+arrived|have\s+arrived)\b(?!\s+(?i:at|in|on|upon)\b)"
)


def arrivals_here(text: str, found: list[KnownEntity], here: KnownEntity) -> list[Event]:
    """The arrivals of known npcs and factions ``text`` (tagged, a line of the DM's play) tells with no place said:
    at ``here``, where the scene is (the place the party last arrived at this session)."""
    out: list[Event] = []
    for m in _COMES.finditer(text):
        if m.group("s") is not None:
            who, end = [found[int(i)] for i in re.findall(r"\ue000(\d+)\ue001", m.group("subject"))], m.end()
            if not _whole(text, m, "s"):
                continue
        elif (named := _named_next(text, m, found)) is not None:
            who, end = [named[0]], named[1]
        else:
            continue
        if any(e.type not in (EntityType.npc, EntityType.faction) for e in who):
            continue
        if _BEFORE_SUBJECT.search(text[: m.start()]) and _told(text, m) and not _elsewhere(text, m, found, here):
            name = f"Arrival of {_listed(who)} at {here.name}"
            out.append(Event(EventKind.arrival, name, who, place=here, span=(_clause(text, m), end)))
    return out


#: What tells an npc arriving somewhere or sometime else than the scene, with no place named: "Meanwhile, back in
#: Emon, Tim arrives", "Tim arrives home", "Tim arrives back at the palace", "Tim arrives there first".
#: "Back from his patrol" is where they come from, not where they arrive.
_AWAY = r"\b(?i:meanwhile|elsewhere|back(?!\s+from\b)|home|there|away)\b"
_ELSEWHERE_BEFORE = re.compile(_AWAY)
#: ... after the arrival: a place ("arrives, at last, at the docks") or a later time ("arrives later tonight").
_ELSEWHERE_AFTER = re.compile(
    _AWAY + r"|\b(?i:later|soon|tonight|next)\b"
    rf"|\b(?i:at|in|on|upon|into|inside|outside|near|across)\s+(?:(?i:the|a|an|his|her|their|its|your|our)\b|[{_UPPER}]|\ue000)"
)


#: Where an arrival's own telling ends: a conjunction or a clause with a subject of its own ("Tim arrives, and you
#: tell him about Emon"), not a phrase of the verb's set off by commas ("Tim arrives, at last, at the docks").
_ARRIVAL_END = re.compile(
    r"\b(?i:and|but|while|so|then|as|when|where|who|which)\b"
    r"|[,—;]\s*(?:(?i:I|you|he|she|it|we|they|his|her|their)\b|\ue000)"
)


def _elsewhere(text: str, m: re.Match[str], found: list[KnownEntity], here: KnownEntity) -> bool:
    """The arrival's sentence, up to the end of its own clause (:data:`_ARRIVAL_END`), places it away from
    ``here`` or later than now: words of another place or time (:data:`_ELSEWHERE_AFTER`), or a known place other
    than ``here``, but one it comes from ("back from Emon")."""
    start, end = _sentence(text, m)
    stop = after.start() if (after := _ARRIVAL_END.search(text, m.end(), end)) else end
    if _ELSEWHERE_BEFORE.search(text, start, m.start()) or _ELSEWHERE_AFTER.search(text, m.end(), stop):
        return True
    named = (found[int(i)] for i in re.findall(r"(?<!\b(?i:from)\s)\ue000(\d+)\ue001", text[start:stop]))
    return any(e.type == EntityType.location and e.id != here.id for e in named)


def _particle(m: re.Match[str]) -> bool:
    """A killing verb split around its object has its own particle: "finish him off", "cut him down"."""
    return not m.group("split") or _PARTICLE.get(m.group("split").casefold()) == m.group("particle").casefold()


def _sentence(text: str, m: re.Match[str]) -> tuple[int, int]:
    start = max((s.end() for s in _SENTENCE_END.finditer(text, 0, m.start())), default=0)
    end = _SENTENCE_END.search(text, m.end())
    return start, end.end() if end is not None else len(text)


def _clause(text: str, m: re.Match[str]) -> int:
    """Where the match's clause begins."""
    start, _ = _sentence(text, m)
    return max((c.end() for c in _CLAUSE_START.finditer(text, start, m.start())), default=start)


def _span(text: str, m: re.Match[str]) -> tuple[int, int]:
    """The match's clause up to its end: what tells the turning point."""
    return _clause(text, m), m.end()


def _whole(text: str, m: re.Match[str], group: str) -> bool:
    """The known name tagged in group ``group`` is the whole name said (:func:`said_whole`)."""
    return said_whole(text, m.start(group) - 1, m.end(group) + 1)  # the tag's marks are either side of its number


def said_whole(text: str, start: int, end: int) -> bool:
    """The known name at ``text[start:end]`` is the whole name said: "Greyspine" of "Greyspine Manor" or of "House
    Greyspine" is another place than Greyspine's. A capital word before it counts unless it begins a sentence."""
    if re.match(rf"(?:['’]s?)?\s+[{_UPPER}]", text[end:]):  # "Emon's Gate" too
        return False
    head = text[:start]
    word = re.search(rf"(?:^|(?<=\s))[{_UPPER}][\w'’-]*\s+$", head)
    return (
        word is None
        or word.group().strip() == "I"
        or re.search(r"(?:^|[.!?:\"“”])\s*$", head[: word.start()]) is not None
    )


def _bidden(text: str, m: re.Match[str]) -> bool:
    """The match is an instruction, not a telling: its verb opens its sentence, no subject before it ("Find the
    Tidecaller Horn.", "Kill Sylas.", '"Take the key," she says.')."""
    start, _ = _sentence(text, m)
    return m.group("x") is None and not text[start : m.start()].strip()


def _told(text: str, m: re.Match[str], retold: bool = False) -> bool:
    """The match tells what happened: its sentence is no question, and nothing in its clause makes it unreal.
    ``retold``: the line is the DM's recap of the story so far, where every turning point is a memory."""
    start, end = _sentence(text, m)
    if text[end - 1] == "?" or _IF.search(text, start, m.start()) or _PLAN_OPENING.match(text, start):
        return False  # "If you hit, she is dead": the condition may come in a clause of its own before it
    if not retold and _PAST.search(text[start:end]):
        return False
    after = _CLAUSE_END.search(text, m.end(), end)  # "Sylas dies if you close it": the condition may follow
    begin = _clause(text, m)
    stop = after.start() if after else end
    clause = re.sub(r"\ue000\d+\ue001", " ", text[begin:stop])
    if _NOT_YET.search(text, begin, m.start()) or _NOT_YET_CLAUSE.search(text, m.end(), stop):
        return False
    if any(_dreamt(text, d, start, end) for d in _DREAM.finditer(text, start, stop)):
        return False  # "In the vision, you see ...", "... into Ironhold in your dream"
    return _UNREAL.search(clause) is None and (retold or _MEMORY.search(clause) is None)


#: What makes a state told no state now: heard, believed, reported, remembered or dreamt ("The rumor says Lucy is
#: alive", "Lucy's alive, you think", "Lucy's alive in your memories", "Tim tells you Lucy is alive"): not the DM's
#: own telling of the present, which is what a ``status`` or ``has`` the review files says.
_HEARSAY = re.compile(
    r"\b(?:say|says|said|rumou?rs?|word\s+is|think|thinks|thought|believe|believes|believed|hear|hears|heard|claims?"
    r"|claimed|supposedly|apparently|reportedly|allegedly|seems?|seemed|memory|memories|dreams?|dreamt|dreamed"
    r"|visions?|imagine|imagines|tells?|told)\b",
    re.IGNORECASE,
)


#: Where a state's clause ends, for what is heard: "She's alive but has no memory …", "… as Tim tells you the story".
_STATE_CLAUSE_END = re.compile(r",|—|\b(?:and|but|while|so|then|as|when|because)\b", re.IGNORECASE)


def _dreamt(text: str, d: re.Match[str], start: int, end: int) -> bool:
    """A dream word of the sentence ``text[start:end]`` makes it a dream: its own clause does not end it
    (:data:`_DREAM_ENDS`)."""
    begin = max((c.end() for c in _CLAUSE_START.finditer(text, start, d.start())), default=start)
    after = _CLAUSE_END.search(text, d.end(), end)
    return _DREAM_ENDS.search(text, begin, after.start() if after else end) is None


def _stated(text: str, m: re.Match[str]) -> bool:
    """The match tells a state as it is now (alive, holding): told (:func:`_told`), not in the past ("Lucy was alive
    when you left", "Grog was holding the key": perhaps no longer), nor heard or believed: before it or in its own
    clause ("Tim tells you Lucy is alive", "alive in your memories"), or in a short tag closing its sentence ("…,
    you think.", "…, says the rumor."); a later clause of its own is another telling ("Lucy is alive, and she tells
    you the cult took her")."""
    start, end = _sentence(text, m)
    if re.search(r"\b(?i:was|were)\b", m.group()) is not None or not _told(text, m):
        return False
    after = _STATE_CLAUSE_END.search(text, m.end(), end)
    if _HEARSAY.search(text, start, after.start() if after else end) is not None:
        return False
    tail = text[max((c.end() for c in _STATE_CLAUSE_END.finditer(text, m.end(), end)), default=end) : end]
    return len(tail.split()) > 4 or _HEARSAY.search(tail) is None


def _persons(text: str, m: re.Match[str], found: list[KnownEntity]) -> list[KnownEntity]:
    """The people (and parties) the match's clause names up to its end: who took part (those named after it are
    often only where it happened: "to the Frostweald, where Osysa resides")."""
    # "Allura of the Tal'Dorei Council": a name after "of" says whose she is, not who took part
    span = text[_clause(text, m) : m.end()]
    seen = {int(i) for i in re.findall(r"(?<!\bof\s)(?<!\bof\sthe\s)\ue000(\d+)\ue001", span, re.IGNORECASE)}
    return list({found[i].id: found[i] for i in sorted(seen) if found[i].type in _MORTAL}.values())


def _with(named: list[KnownEntity], *ends: KnownEntity | None) -> list[KnownEntity]:
    return list({e.id: e for e in (*ends, *named) if e is not None}.values())


def one_each(told: list[Event]) -> list[Event]:
    """One turning point of a line per entity: a battle with a foe whose death the same line tells is that death
    ("There you all did battle with the great colossal Thordak … upon the corpse of Thordak"), its party taking part
    in it. Two events of one happening made the DM review both."""
    deaths = {e.name.removeprefix("Death of ").casefold(): e for e in told if e.kind == EventKind.death}
    out: list[Event] = []
    for event in told:
        dead = (
            deaths.get(event.name.removeprefix("Battle with ").casefold()) if event.kind == EventKind.battle else None
        )
        if dead is None:
            out.append(event)
        else:
            dead.participants = _with(dead.participants, *event.participants)
    return out


def _once(found: list[Event]) -> list[Event]:
    """One event per name: a line telling a death twice ("kills Jazna; Jazna is dead") is one death."""
    by_name: dict[str, Event] = {}
    for event in found:
        current = by_name.setdefault(event.name.casefold(), event)
        if current is not event:
            current.participants = _with(current.participants, *event.participants)
    return list(by_name.values())


# The scene moving to a place, told in no particular phrasing: the DM names a known place for the first time in the
# session, then names it again and again in their narration ("Welcome to Kraghammer!", "the entry thoroughfare of
# Kraghammer"). An arrival, told by every line of the burst.

#: The DM's lines naming the place in narration, the first included, within :data:`SCENE_LINES` lines of the first.
#: Two were 0.86 precise on the CRD3 dev episodes (a dragon seen "coming down from the top of Gatshadow"), three 1.00.
SCENE_BURST = 3
SCENE_LINES = 30
#: An npc's words the DM voices in quotes ("Heading to Westruun yourself, now?") are where they talk of, not where
#: the scene is.
# quoted speech, and a home table's voice marker: "(as Hobb) Not since the abbey went under." is Hobb's to the end
_QUOTED = re.compile(r"\"[^\"]*\"?|“[^”]*”?|[(\[](?i:as)\s+[A-Z][^)\]\n]{0,40}[)\]].*", re.DOTALL)


def narration(text: str) -> str:
    """The DM's words outside quoted speech."""
    return _QUOTED.sub(" ", text)


def scene_arrivals(lines: Sequence[tuple[int, Sequence[KnownEntity]]]) -> dict[int, list[KnownEntity]]:
    """The places the scene moved to, by the entry id of each line of their burst. ``lines``: each line of a session in
    order, by its entry id, with the known entities the DM's narration names in it (none for another speaker's line
    or out-of-game talk). A burst: a known place named for the first time, named in :data:`SCENE_BURST` lines within
    :data:`SCENE_LINES` lines."""
    out: dict[int, list[KnownEntity]] = {}
    said: set[int] = set()
    for n, (_, named) in enumerate(lines):
        for place in {e.id: e for e in named if e.type == EntityType.location and e.id not in said}.values():
            burst = [i for i, later in lines[n : n + SCENE_LINES + 1] if any(e.id == place.id for e in later)]
            if len(burst) >= SCENE_BURST:
                for entry_id in burst:
                    out.setdefault(entry_id, []).append(place)
        said |= {e.id for e in named}
    return out


# A turning point by its meaning, whatever its phrasing: a sentence of the DM's narration naming one known entity of a
# kind's type, whose embedding (MiniLM) is near enough a generic sentence of that kind, and clearly nearer it than any
# near-miss. The sentence, not the line: the DM's long lines tell many things at once.

#: Generic sentences of each kind (none taken from a transcript), and the kind's entity types.
PROTOTYPES: dict[EventKind, tuple[str, ...]] = {
    EventKind.death: (
        "He dies.", "She is killed.", "The man falls to the ground, dead.", "You kill him.",
        "His lifeless body collapses.", "She breathes her last breath.", "The creature is slain.",
        "You cut off his head.", "He is executed.", "The life fades from her eyes.",
    ),
    EventKind.arrival: (
        "You arrive at the city.", "You reach the gates of the town.", "You enter the temple.",
        "You step into the tavern.", "After days of travel, you finally arrive in the village.",
        "The party makes its way into the castle.", "You walk through the doors into the great hall.",
        "You come upon the ruins.",
    ),
    EventKind.acquisition: (
        "You find a sword.", "He hands you the amulet.", "You pick up the ring.", "She gives you the book.",
        "You receive a magic staff.", "Inside the chest you discover a golden crown.", "You take the key.",
        "You now hold the ancient artifact.",
    ),
}  # fmt: skip
#: Near-misses of the same words: a sentence not clearly nearer a prototype than these tells no turning point.
NEAR_MISSES: tuple[str, ...] = (
    "He falls unconscious.", "She wakes up, gasping for breath.", "He is badly wounded.", "You head toward the city.",
    "You leave the town behind.", "You reach into your bag.", "You put the sword away.",
    # MiniLM puts "alive" near "dies": "Lena is alive." scores 0.61 with the deaths, 0.72 with this one
    "She is alive.", "He survives.",
)  # fmt: skip
#: The cosine a sentence needs to its kind's nearest prototype (MiniLM's unit vectors), and how much nearer it must be
#: than to any near-miss; chosen on the CRD3 dev episodes.
MEANING_THRESHOLD: dict[EventKind, float] = {EventKind.death: 0.55, EventKind.arrival: 0.56, EventKind.acquisition: 0.5}
MEANING_MARGIN = 0.05
_MEANT_TYPES: dict[EventKind, frozenset[EntityType]] = {
    EventKind.death: _PERSON,
    EventKind.arrival: frozenset({EntityType.location}),
    EventKind.acquisition: frozenset({EntityType.item}),
}
_SENTENCE = re.compile(r"[^.!?]+[.!?]*")


@dataclass
class Sentence:
    """A sentence of the DM's narration to read by meaning: its words, the one known entity it names of a kind's type,
    and that kind."""

    text: str
    entity: KnownEntity
    kind: EventKind


def meaning_sentences(text: str, spans: Sequence[tuple[int, int, KnownEntity]]) -> list[Sentence]:
    """The sentences of ``text`` (the DM's narration, quoted speech left out: :func:`narration`) to read by meaning:
    each names one known entity of a turning point's type (``spans``: the known names in ``text`` with their place,
    whole names only) and is no question, condition, denial, intention or memory (:func:`_told`'s words)."""
    out: list[Sentence] = []
    for s in _SENTENCE.finditer(text):
        words = s.group().strip()
        if words.endswith("?") or _IF.search(words) or len(words.split()) < 3:
            continue
        if _UNREAL.search(words) or _NOT_YET.search(words) or _MEMORY.search(words) or _DREAM.search(words):
            continue
        named = {e.id: e for a, b, e in spans if s.start() <= a and b <= s.end()}
        for kind, types in _MEANT_TYPES.items():
            of_kind = [e for e in named.values() if e.type in types]
            if len(of_kind) == 1:  # "Grog kills Jazna": which of two died is for the clause rules to tell
                out.append(Sentence(words, of_kind[0], kind))
    return out


def meant_events(
    sentences: Sequence[Sentence],
    vectors: Sequence[Sequence[float]],
    prototypes: Mapping[EventKind, Sequence[Sequence[float]]],
    near_misses: Sequence[Sequence[float]],
) -> list[Event]:
    """The turning points ``sentences`` tell by meaning. ``vectors``: each one's unit vector; ``prototypes``: those
    of :data:`PROTOTYPES` by kind; ``near_misses``: those of :data:`NEAR_MISSES`, by the same embedder."""
    if len(vectors) != len(sentences):
        raise ValueError(f"{len(vectors)} vectors for {len(sentences)} sentences")
    if not sentences:
        return []
    # every cosine at once (float64, as Python's sums were: they differ by 1e-15 at most)
    said = np.asarray(vectors, dtype=np.float64)
    misses = (said @ np.asarray(near_misses, dtype=np.float64).T).max(axis=1) if len(near_misses) else None
    nearest = {
        kind: (said @ np.asarray(prototypes[kind], dtype=np.float64).T).max(axis=1)
        for kind in {s.kind for s in sentences}
    }
    out: list[Event] = []
    for n, sentence in enumerate(sentences):
        miss = -1.0 if misses is None else float(misses[n])
        kind = sentence.kind
        score = float(nearest[kind][n])
        if score < MEANING_THRESHOLD[kind] or score < miss + MEANING_MARGIN:
            continue
        e = sentence.entity
        if kind == EventKind.death:
            out.append(Event(kind, f"Death of {e.name}", [e]))
        elif kind == EventKind.arrival:
            out.append(Event(kind, f"Arrival at {e.name}", place=e))
        else:
            out.append(Event(kind, f"Acquisition of {e.name}", [e]))
    return _once(out)
