"""Out-of-game talk: what is said at the table that is not the game's story. One classifier for extraction (nothing
is proposed from such a line), the recap (it quotes none of it) and recall.

Two levels, pure Python over the text:

* a line on its own (:func:`line_talk`): sponsor reads and announcements, dice results and rules talk, cast banter
  ("(laughter)", "in real life");
* a session's lines in order (:func:`session_talk`): the pre-show before the DM's "last we left off" (or after a
  player's "okay so last time, we…", which tells the last session), a break
  between "we'll take a break" (a home table's "let's do ten minutes") and "welcome back" ("okay, we're back"),
  the after-show from "we'll pick it up next week" on. The DM's words mark those, since a player's "let's take a
  break" is often in character; a player's "okay, back" only ends a break the DM announced and never closed.

Precision first: a line that also tells the story ("As you make your way to the docks, we'll take a break") is
kept as game; a missed out-of-game line costs less than a lost event. Measured on hand-labelled CRD3 turns by
``bench/offgame.py`` (tests/data/offgame_crd3_labels.json).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from enum import StrEnum

from memory.models import Entry
from memory.text import voice_left, voiced


class Talk(StrEnum):
    """Kinds of out-of-game talk."""

    sponsor = "sponsor"  # sponsor reads, announcements, the stream and its chat
    pre_show = "pre_show"
    break_ = "break"
    after_show = "after_show"
    dice = "dice"  # dice results, checks asked for, rules and character-sheet talk
    banter = "banter"  # the cast outside the fiction: real life, laughter at the table


_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")

# Words of the show's business: one is enough (none of them is a fantasy world's word).
_SPONSOR = re.compile(
    r"\b(?:sponsor(?:s|ed|ing)?|patreon|twitch|subscrib(?:e|ed|ers?|ing)|giveaways?|merch(?:andise)?|twitter|"
    r"instagram|tweets?|youtube|podcasts?|promo code|discount code|use the code|loot ?crate|wyrmwood|d&d beyond|"
    r"geek (?:and|&) sundry|talks machina|critters?|critmas|hashtag|the (?:twitch )?chat(?: ?room)?|"
    r"in the chat|live stream|livestream|fan ?art|shop\.|\.com|website|link (?:is )?(?:in|below)|"
    r"(?:this|last|next) (?:week's )?episode|tickets? (?:go|are) on sale)\b",
    re.IGNORECASE,
)
# One die, the noun: after a determiner or what a die is ("the necrotic die", "my bonus die", "Scanlan's die"), never
# after a subject, a modal or "to", which make the story's verb ("you die", "going to die", "let's die", "no one die"),
# nor in the idiom "the die is cast" (a choice made for good, in the story as often as not).
_DIE = (
    r"(?:(?<!\bno )(?<!\bany )(?:a|an|the|this|my|your|his|its|our|their|one|another|each|every)|"
    r"(?!(?:let|it|that|he|she|who|what|there|here)['’]s)\w+['’]s|"
    r"hit|damage|bonus|extra|additional|inspiration|superiority|percentile|custom|\w+-sided|d\d+|acid|cold|fire|force|"
    r"lightning|necrotic|poison|psychic|radiant|thunder|bludgeoning|piercing|slashing) die"
    r"(?! (?:down|out|off|away)\b)(?! (?:is|was|has been|had been) cast\b)"
)
# What follows "checks" as a verb ("Tommy checks his revolver"), not as the noun of rolls ("make stealth checks").
_OBJECT = r"the|a|an|his|her|their|its|my|your|our|him|them|it|this|that|out|on|in|under|behind|around|if|whether|for"
# Rules and dice: each match counts once. Words a story seldom says in a D&D transcript: dice and their notation
# ("2d4"), checks and saves, the turn and its parts (a move, an action, melee), the DM calling the next in turn.
_MECHANICS = re.compile(
    rf"\b(?:roll(?:s|ed|ing)?|re-?roll|dice|{_DIE}|\d*d(?:4|6|8|10|12|20|100)s?|nat(?:ural)? (?:20|twenty|1|one)|"
    rf"saving throws?|(?:\w+ )?saves?|\w+ check|\w+ checks(?! (?:{_OBJECT})\b)|initiative|armou?r class|AC|DC|"
    r"(?:\d+|plus \w+|bonus) to hit|hit points?|HP|damage|"
    # other games' terms: a percentile game's successes and pushed rolls, sanity points, the ability scores in
    # capitals ("DEX at half"), and the character sheet
    r"(?:regular|hard|extreme|critical) success|pushed roll|sanity (?:points?|loss)|"
    r"(?-i:SAN|STR|DEX|CON|INT|WIS|CHA|POW|SIZ|EDU|APP)|(?:my|your|his|her|their|character) sheets?|"
    r"rules? questions?|"
    r"bonus action|spell slots?|(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|\d(?:st|nd|rd|th))"
    r"[- ]level|cantrips?|concentration|attacks? of opportunity|opportunity attacks?|end of (?:its|your|his|her|their) "
    r"turn|(?:your|my|his|her|its|their|[a-z]+'s) turn|you're up|recharges?|proficiency|modifier|"
    r"inspiration(?: die)?|sneak attack|(?:dis)?advantage|short rest|long rest|reaction|round|"
    r"(?:brings?|bringing) us (?:back )?to|(?:is|are|'s|'re) up (?:first|next)|next up|(?:full|brief|free) move|"
    r"you(?:'re| are) on deck(?=\s*[.,!?]|$)|"
    r"(?:your|its|his|her|their|full|brief|free|held|readied) (?:movement|action)|melee|"
    r"attack rolls?|hit dice|prone|grappled|restrained|incapacitated|what(?: did|'d) you (?:get|roll))\b",
    re.IGNORECASE,
)
# Words that are rules talk beside the words above, but also the story's on their own ("movement in the trees"):
# they count towards a line's density of rules words only. The SRD's skills and conditions, the action economy.
_RULES_TOO = re.compile(
    r"\b(?:acrobatics|animal handling|arcana|athletics|deception|history|insight|intimidation|investigation|"
    r"medicine|nature|perception|performance|persuasion|religion|sleight of hand|stealth|survival|"
    r"blinded|charmed|deafened|frightened|invisible|paralyzed|petrified|poisoned|stunned|exhaust(?:ed|ion)|"
    r"actions?|movement|move|attacks?|hits?|miss(?:es)?|range|feet|spells?|cast|level|turn|first|up|"
    # any game's: a skill named as such, its result, sanity and luck spent, a score halved
    r"skills?|stats?|succe(?:ss|eds?|eded)|fail(?:s|ed|ure)?|sanity|luck|half)\b",
    re.IGNORECASE,
)
# The DM calling for a roll, in any game: "make a Psychology roll", "give me a Spot Hidden check", "Roll initiative.",
# "Tommy, roll Luck" (an imperative "roll" opening a sentence or after a name; not asked back, "Roll both?").
_CALL = re.compile(
    r"\b(?:make|give me|I need|I'll need|I want|want|try|do|take) (?:me |us )?(?:a |an |another |one more |your )?"
    r"(?:(?!to )[\w'-]+ ){0,3}(?:roll|check|save|saving throw)s?\b|"
    r"(?:^|[.!?]\s+|,\s*)(?:\w+,\s*)?roll\b(?! (?:the|a|an|it|them|him|her|of|over|in|out|away|back|down|up|off)\b)"
    r"(?![^.!?]*\?)",
    re.IGNORECASE,
)
# Table business said in so many words, at any length: a rules question, the character sheet.
_TABLE_RULES = re.compile(
    r"\b(?:rules? questions?|character sheets?|(?:check|look at|on) (?:my|your|his|her|their) sheet)\b", re.IGNORECASE
)
# A line saying something happened in the story is game, whatever numbers it holds ("takes 24 damage and dies").
_STORY = re.compile(
    r"\b(?:dies|died|dead|killed?|slain|collapses?|falls? unconscious|you see|you hear|you notice|you feel|"
    r"you find|you arrive|you enter)\b",
    re.IGNORECASE,
)
# A die's result as the table says it: digits, not followed by what they count ("13." and "13 for Trinket", not
# "40 days" or "three gold", which are the story's).
# ... or followed by its outcome ("20 pass", "50 exactly") or typed laughter, which no story says ("88 lol"; not an
# interjection, which a character says too: "73. damn" is a result by its full stop); a number after a capitalised
# word mid-sentence is part of a name ("we head for Pier 9", "Room 101"), not a result (one fixed width a
# look-behind: re takes no other).
_NAMED = "".join(rf"(?-i:(?<![a-z] [A-Z][a-z]{{{n}}} ))" for n in range(1, 9))
_RESULT = re.compile(
    rf"(?<![\w-]){_NAMED}\d{{1,3}}(?![\w-])"
    r"(?!\s+(?!(?:for|to|on|plus|minus)\b|"
    r"(?:pass(?:es|ed)?|fail(?:s|ed)?|success|exactly|flat|total|again|lol|lmao)\b(?!\s+[a-z]))[a-z])",
    re.IGNORECASE,
)
# A break in the talk for the speaker's own business: "hold on", "sorry", "one sec".
_HOLD = r"(?:hold on|hang on|wait|sorry|one sec(?:ond)?)"
_BANTER = re.compile(
    r"\b(?:in real life|irl|out of character|ooc|the cameras?|the mic|microphones?|headphones|the internet|"
    r"the audience|folks at home|guys at home|voice act(?:or|ors|ing)|the show|this show|the set|"
    # a phone call taken at the table: the speaker's own phone ("my phone", a bare "phone") as they break off ("wait
    # hold on, my phone", "sorry, phone again"); not a phone of the story ("hang on, the phone is ringing downstairs")
    rf"{_HOLD}(?:\W+{_HOLD})*\W+(?:(?:\w+\W+){{0,2}}my\s+)?phone)\b",
    re.IGNORECASE,
)
# The table talking about the game, in a short aside ("we don't know that in character", "I lost 1 in the first
# session", "can I narrate what happens"): a longer line with these words is often the DM's story too.
_ASIDE_WORDS = r"in character|(?:this|next) session|narrate"
_ASIDE = re.compile(rf"\b(?:{_ASIDE_WORDS}|(?:last|first|previous) session)\b", re.IGNORECASE)
# ... but the narrator's past session that sets the time of a clause told after it is the story's recap ("Last
# session, you slew Thordak", "In the last session, Mira gave you the key"), not an aside; a player's is the table's
# talk ("Last session we forgot to level up", "last session you guys were so loud"), as is the table's "we"; the
# story's "you all", "you two" and "we left you/off" are the narrator's ("Last session, we left you at the gates").
_ASIDE_TOLD = re.compile(
    rf"\b(?:{_ASIDE_WORDS}|(?:last|first|previous) session"
    r"(?![,:]?\s+(?:you(?!\s+(?:guys|folks)\b)|we\s+left\s+(?:you|off)\b|they|he|she|your|the party|"
    r"(?!I\b)(?-i:[A-Z]))))\b",
    re.IGNORECASE,
)
#: ... of at most this many words.
_SHORT_ASIDE = 15
_LAUGHTER = re.compile(r"\((?:laughter|laughs|laughing|giggles|giggling|groans|cheering|applause)\)", re.IGNORECASE)

#: A line this short with a rules word, or a die's result among at most this many words, is dice talk; a rules
#: word and a result in a line of up to ``_LONG`` words too ("That was the dice I rolled? 16.").
_SHORT_RULES, _SHORT_NUMBER, _LONG = 10, 6, 25
#: ... and a line of at least one rules word in this many words, counting those that are rules talk beside it.
_DENSITY = 6
_SHORT_LAUGH = 4  # "Yep. (laughter)"; a longer line laughed at is often the story ("Trinket is gaining on you.")

_START_STRONG = re.compile(
    r"\b(?:last (?:time )?we left off|previously on|when we last left|"
    r"(?:get|getting) (?:you|us|everyone)(?: guys| all)? (?:caught up|up to speed)|"
    r"catch(?:ing)? (?:you|us|everyone)(?: guys| all)? up|pick up where we left off)\b",
    re.IGNORECASE,
)
# A player retelling the last session for the table ("Okay so last time, we met on a barge…", "Last time, we crossed
# the fen…"): talk of a past session, before this one's story.
_RETOLD = re.compile(
    r"(?:^|[.!?]\s+)\W*(?:(?:okay|ok|so|alright|all right|right|well|and)\W+)*"
    r"(?:last (?:time|session|week|game)|previously)\W+(?:on \w+\W+)?(?:we|you|our|the party)\b",
    re.IGNORECASE,
)
_START_WEAK = re.compile(
    r"\b(?:let's|let us) (?:go ahead and )?(?:jump|dive|hop|get started|begin|start|get into it)\b|"
    r"without further ado",
    re.IGNORECASE,
)
# A break as the table announces it: a break word the table's way ("take a break", "let's have a quick break", "a
# bathroom break"; not "break the seal", nor the farmers "having a break" of the story), a few minutes off ("let's do
# ten minutes", "take five"), or the show's "back here in a few minutes".
_PAUSE = r"(?:break|intermission)"
_OFF = r"(?:quick|short|little|brief|bathroom|restroom|pee|pizza|snack|food|dinner|smoke|coffee|\w+[- ]minute)"
_BREAK = re.compile(
    rf"\b(?:(?:take|(?:let's|let us|we|we'll|I|I'll|gonna|going to|want to) (?:\w+ )?(?:have|grab|do|need|call))"
    rf" (?:a |an |our |the |some )?(?:{_OFF} )*{_PAUSE}|{_OFF} {_PAUSE}|"
    r"(?:let's|let us|we'll|we will|going to|gonna) (?:take|do|have) (?:a )?(?:few|couple|five|ten|fifteen|twenty|\d+)"
    r"(?: of)? (?:minutes|mins)|(?:let's|let us|we'll|we will|going to|gonna) (?:take (?:a )?)?pause|"
    r"(?:let's|we'll) take (?:five|ten|fifteen)|"
    r"(?:we'll be|be right) back(?: here)? in|(?:back|see you)(?: guys)? (?:here )?in (?:just )?a (?:few|couple)"
    r"(?: of)? minutes|meet you(?: guys)? back here)\b",
    re.IGNORECASE,
)
# The table back from it: "welcome back", "okay, we're back", "alright, back in", "back to it".
_BACK = re.compile(
    r"\b(?:welcome back|we(?:'re| are) back|returning from (?:the )?break|"
    r"back to (?:it|the game|the table)|(?:get|getting|jump|jumping|dive|diving|hop|hopping) back in(?:to it)?|"
    r"(?:let's|let us) (?:resume|continue))\b|"
    r"^\W*(?:(?:okay|ok|alright|all right|right|so|and)\W+)*(?:I'm |I am )?back\b",
    re.IGNORECASE,
)
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I'll|I've|me|my|we|we're|we'll|we've|us|our|let's)\b", re.IGNORECASE)
_END = re.compile(
    r"\b(?:pick (?:this|it|that)?\s?up (?:(?:on|with) (?:this|it|that) )?(?:again |there |from there )?"
    r"(?:next (?:week|time|thursday)|in (?:a couple|two) weeks)|until we pick (?:this |it )?up|"
    r"(?:we'll|we will|gonna|going to) (?:end|stop) (?:it )?(?:there|here)|that's where we'll (?:end|stop)|"
    r"thank you (?:all |guys |everyone )?(?:so much )?for (?:watching|joining))",
    re.IGNORECASE,
)
# The end of the game said in so many words ("that is where we're going to leave tonight's session"): looked for from
# the middle of a session on, since a long after-show (donations read out, a Q&A) can follow it.
_END_SESSION = re.compile(
    r"\b(?:leave|end|stop|close|pause|wrap up|finish) (?:it |things )?(?:there |here )?(?:for )?"
    r"(?:tonight's|today's|this|the) (?:session|game|episode)\b",
    re.IGNORECASE,
)
#: The pre-show is looked for in the first part of a session only, the after-show in its last part.
_OPENING_SHARE, _CLOSING_SHARE = 0.25, 0.15
#: ... and in the first lines of a short one (or of a session still being recorded).
_MIN_OPENING = 60
#: A break lasts at most this many lines before "welcome back" (else only its announcement is out of game).
_MAX_BREAK = 40
#: A player's line saying they are back ("Okay back, the rolls are fine.") ends a break in at most this many words.
_SHORT_BACK = 10
#: A cue line with at least this many words before the cue tells the story too: it stays game.
_STORY_WORDS = 8


#: The kinds of talk that are parts of a session (marked from the DM's cues), not judged line by line.
SEGMENTS = frozenset({Talk.pre_show, Talk.break_, Talk.after_show})


def line_talk(text: str, *, narrated: bool = False) -> Talk | None:
    """What kind of out-of-game talk this line is on its own, or None (game, or too little to tell); ``narrated``: the
    narrator says it (a past session then may set the time of the story told)."""
    words = _WORD.findall(text)
    if not words:
        return None
    if _SPONSOR.search(text):
        return Talk.sponsor
    if (
        _BANTER.search(text)
        or (_LAUGHTER.search(text) and len(words) <= _SHORT_LAUGH)
        or ((_ASIDE_TOLD if narrated else _ASIDE).search(text) and len(words) <= _SHORT_ASIDE)
    ):
        return Talk.banter
    if _TABLE_RULES.search(text):
        return Talk.dice
    if _STORY.search(text):
        return None
    # "Okay, Kim, Dev, both of you make a Psychology roll on Wilmarth."; a longer line calling for one tells more
    if _CALL.search(text) and len(words) <= _LONG and not _tells(text):
        return Talk.dice
    rules = len(_MECHANICS.findall(text))
    results = len(_RESULT.findall(text))
    if rules and (len(words) <= _SHORT_RULES or rules * 7 >= len(words) or (results and len(words) <= _LONG)):
        return Talk.dice
    # a rules word among words that are rules talk beside it, dense enough: "Make a persuasion check for that.
    # It's a very persuasion based encounter.", "You want to stay there or you want to move? You are in its melee
    # range, so if you move it will get an attack of opportunity."
    if rules and (rules + len(_RULES_TOO.findall(text))) * _DENSITY >= len(words) and not _tells(text):
        return Talk.dice
    if results and len(words) <= _SHORT_NUMBER:
        return Talk.dice
    return None


_SENTENCE = re.compile(r"(?<=[.!?])[\"')\]]*\s+")


def _tells(text: str) -> bool:
    """Whether a sentence of ``text`` tells something with no rules word in it ("You go ahead and you bring your holy
    arrow and you release it."): the line narrates beside its rules talk."""
    return any(
        len(_WORD.findall(part)) >= _STORY_WORDS and not _MECHANICS.search(part) and not _RULES_TOO.search(part)
        for part in _SENTENCE.split(text)
    )


# The last session told again at the start of this one ("Okay so last time, we met on a barge…"): what happened
# then, in fewer words than the lines that told it. Not the DM's "Last we left off, …", which starts the show and may
# tell what no line did (C1E001's backstory: a DM question's answer).
_PAST_SESSION = re.compile(r"\blast (?:time|session|week|game)[,:]?\s+(?:we|you|the party|our)\b", re.IGNORECASE)


def tells_last_session(text: str, seq: int) -> bool:
    """Whether line ``seq`` (from 0) of a session tells the last session again, in the session's first lines."""
    return seq < _MIN_OPENING and _PAST_SESSION.search(text) is not None


def tells_story(text: str) -> bool:
    """Whether ``text`` says that something happened in the story ("You see …", "… and dies")."""
    return _STORY.search(text) is not None


# Table business a recap sentence must not hold, beyond the rules words above; and the DM placing the players'
# characters on the map or calling them to roll ("I have you right here between him and Lady Briarwood.", "We have
# the two of you by the door.", "I need Pike, Percy, and Scanlan to make another.", "I need you and you"; not an
# errand, "I need you to find her"); a save's outcome ("You shrug it off.", "you succeed").
_TABLE = re.compile(
    r"\b(?:turn is over|bathroom|episodes?|stream|the chat|(?:this|next|the) round|"
    r"I need (?-i:[A-Z])\w*|(?:we|I) have you (?:right )?(?:here|there)|I need you(?! to)|"
    r"we have (?:(?:the \w+|all|both|each) of you|you (?:guys|all|two|three))|"
    r"(?:shrugs?|shrugged|shakes?|shook) (?:it|this|that) off|you succeed(?:ed)?)\b",
    re.IGNORECASE,
)


# A ruling's register: the DM telling a player what the rules let them do, or what a kind of creature is under
# the rules; the present tense, no story verb. Its words: the turn's economy, a move allowed rather than told ("you
# can still move", not "you move to the door"), a creature's immunities, and its kind as the rules read it, said of
# the kind itself ("it's a fiend, so…", "oozes can't be…"; not "the fiend rises" or "a fiend's claw").
_RULING_WORDS = re.compile(
    r"\b(?:movement|squares?|reactions?|range|legendary (?:actions?|resistances?)|"
    r"(?:can|can't|cannot|could|may|want to|wish to|go ahead and|get to|have to|need to|able to) (?:\w+ )?move)\b",
    re.IGNORECASE,
)
_IMMUNE = re.compile(r"\b(?:immun(?:e|ity)|resistant|resistances? to|vulnerab(?:le|ility))\b", re.IGNORECASE)
_KINDS = (
    r"(?:aberration|beast|celestial|construct|dragon|elemental|fey|fiend|giant|humanoid|monstrosit(?:y|ie)|ooze|"
    r"plant|undead)s?"
)
_KIND_RULE = re.compile(
    rf"\b(?:(?:isn't|is not|aren't|are not|'s not|'re not) (?:an? )?{_KINDS}\b(?![\w-]|\s+\w)|"
    rf"(?:it's|it is|is|are|they're) (?:an? )?{_KINDS},? so\b|"
    rf"(?<!\bthe )(?<!\bthese )(?<!\bthose )(?<!\btwo ){_KINDS} "
    r"(?:don't|do not|can't|cannot|aren't|are not|need|get)\b)",
    re.IGNORECASE,
)
_ADDRESSED = re.compile(r"\byour?\b|^\W*(?:\w+, )?go ahead and\b", re.IGNORECASE)
# What the story says and a ruling does not: the past, and what is seen or heard ("the rest of you just see it").
_NOT_RULING = re.compile(r"\b(?:was|were|had|did|see|sees|hear|hears|watch|watches|notice|notices)\b", re.IGNORECASE)


def _ruling(sentence: str) -> bool:
    """Whether a sentence is the DM ruling: on a creature's kind or immunities, or to a player on the turn's
    economy, densely enough that it tells nothing beside it ("You still have some movement if you want it.",
    "Constructs don't sleep, so…", "He's resistant."); never what happened ("you were too far", "you see it move")."""
    if _STORY.search(sentence) or _NOT_RULING.search(sentence):
        return False
    if _KIND_RULE.search(sentence):
        return True
    economy, immune = len(_RULING_WORDS.findall(sentence)), len(_IMMUNE.findall(sentence))
    said_to = immune or (economy and _ADDRESSED.search(sentence))  # a creature's immunity is ruled on to anyone
    beside = len(_RULES_TOO.findall(sentence))  # "feet", "turn": rules talk beside a ruling's words, as above
    return bool(said_to) and (economy + immune + beside) * _DENSITY >= len(_WORD.findall(sentence))


def is_table_talk(sentence: str, *, narrated: bool = False) -> bool:
    """Whether a sentence talks rules, dice or the show, however long: for the recap, which quotes a sentence or
    a few and must quote none of those ("That will be the end of its turn. Let's see if that recharges.");
    ``narrated`` as for :func:`line_talk`."""
    aside = _ASIDE_TOLD if narrated else _ASIDE
    return (
        any(ch.isdigit() for ch in sentence)
        or any(p.search(sentence) for p in (_MECHANICS, _SPONSOR, _BANTER, aside, _TABLE))
        or _ruling(sentence)
    )


#: A voice a marker starts holds for at most this many lines of the session after the marker's (anyone's).
VOICE_LINES = 20


# A character's own words: the first person, not the DM's "let's" to the table.
_SPEAKING = re.compile(r"\b(?:I|I'm|I'll|I've|I'd|me|my|mine|myself|we|we're|we'll|we've|us|our)\b", re.IGNORECASE)
# The DM back to the table: "Okay, let's wrap there.", "Alright, roll me a check."
_TO_TABLE = re.compile(r"^\W*(?:okay|ok|alright|all right)\b", re.IGNORECASE)


def in_voice(text: str) -> bool:
    """Whether a line may go on in the voice of a character its speaker voiced by a marker just before: in the first
    person or opening in quotes ("I did not kill her."), with no rules, dice or break in it, nor opening with "Okay"
    or "Alright" to the table. Narration ("Mira is very surprised by the hug.") is not."""
    return (
        (_SPEAKING.search(text) is not None or text.lstrip().startswith(('"', "“")))
        and not _TO_TABLE.match(text)
        and line_talk(text) is None
        and not any(cue.search(text) for cue in (_BREAK, _BACK, _END, _END_SESSION))
    )


def voice_of(text: str, before: Sequence[str]) -> str | None:
    """Whom a line is said in the voice of, as a marker names them (:func:`memory.text.voiced`): its own at its
    start, else the last of its speaker's ``before`` lines (those of the :data:`VOICE_LINES` lines of the session
    before it, latest first) while the line and those between stay :func:`in_voice`. A DM voicing Quillon goes on as
    him over their next lines, the players answering between; their narration, rules talk or another marker ends
    it."""
    if marked := voiced(text):
        return marked[0]
    if voice_left(text) is not None or not in_voice(text):  # "She smiles. (as Ottilie) …" opens in narration
        return None
    for earlier in before:
        if (voice := voice_left(earlier)) is not None:
            return voice
        if not in_voice(earlier):
            return None
    return None


#: What a transcript calls its game master: D&D's DM, and other games' names for the role (Call of Cthulhu's Keeper,
#: the World of Darkness's Storyteller, a Powered by the Apocalypse game's MC, an old-school or Traveller Referee).
DM_NAMES = frozenset(
    {"DM", "GM", "DUNGEON MASTER", "GAME MASTER", "NARRATOR", "KEEPER", "STORYTELLER", "MC", "REFEREE"}
)

# The label of a game master's lines, alone or beside a name as a home table's transcript or a Discord display name
# gives it: "DM", "Marcus (DM)", "GM - Marcus", "Dungeon Master", "Priya (Keeper)"; a word of its own, not "Admiral",
# "Dmitri" or "Gatekeeper"; "MC" in capitals only ("Mc Bride" is a name).
_DM_LABEL = re.compile(
    r"(?<![^\W\d_])(?:DM|GM|NARRATOR|KEEPER|STORYTELLER|REFEREE|(?-i:MC)|(?:DUNGEON|GAME)\s+MASTER)(?![^\W\d_])",
    re.IGNORECASE,
)


def dm_speaker(words: Mapping[str, int]) -> tuple[str, bool]:
    """Who narrates of these speakers, with the words each said: one whose label names the game master ("Marcus
    (DM)"), else the one who said the most words (the game master describes the world, voices its people and rules
    on the rest: MATT in a Critical Role transcript); and whether that was a guess (no label said it)."""
    labelled = next((speaker for speaker in words if _DM_LABEL.search(speaker)), None)
    if labelled is not None:
        return labelled, False
    return max(words, key=words.__getitem__, default=""), True


def narrator(entries: Sequence[Entry], dm_speaker_id: str | None) -> Callable[[Entry], bool]:
    """Who narrates: in a recorded session the user who ran it (``dm_speaker_id``: a player may call themself
    "DM"); else :func:`dm_speaker`."""
    if dm_speaker_id is not None and any(e.speaker_id == dm_speaker_id for e in entries):
        return lambda e: e.speaker_id == dm_speaker_id
    words: Counter[str] = Counter()
    for e in entries:
        words[e.speaker] += len(e.text.split())
    named, _ = dm_speaker(words)
    return lambda e: e.speaker == named


def out_of_game(
    entries: Sequence[Entry], dm_speaker_id: str | None, *, only: Collection[int] | None = None
) -> dict[int, Talk]:
    """The out-of-game lines among a session's ``entries`` (all of them, in order: the segments need the DM's
    cues), by entry id; ``only``: of these entry ids (the others are not looked at one by one)."""
    by_dm = narrator(entries, dm_speaker_id)
    wanted = None if only is None else [n for n, e in enumerate(entries) if e.id in only]
    kinds = session_talk([(e.text, by_dm(e)) for e in entries], only=wanted)
    return {e.id: kind for e, kind in zip(entries, kinds, strict=True) if kind is not None}


def told_lines(entries: Sequence[Entry], dm_speaker_id: str | None, *, only: Collection[int] | None = None) -> set[int]:
    """The ids of a session's ``entries`` (all of them, in order) that the narrator says in the story, out-of-game
    talk aside (of ``only``, when given): who they name took part, as the recap finds them
    (:func:`memory.recap.extractive_summary`), and so an entity accepted after it (:mod:`memory.graph.took_part`)."""
    narrates = narrator(entries, dm_speaker_id)
    # only the narrator's lines are judged one by one: a player's is not told, whatever it says
    told = {e.id for e in entries if (only is None or e.id in only) and narrates(e)}
    return told - out_of_game(entries, dm_speaker_id, only=told).keys()


def session_talk(lines: Sequence[tuple[str, bool]], *, only: Collection[int] | None = None) -> list[Talk | None]:
    """Each line's kind of out-of-game talk, for a session's lines in order as ``(text, said by the DM)``: the
    pre-show, breaks and after-show the DM's words mark, and each other line by :func:`line_talk`. ``only``: the
    indexes of the lines wanted (the segments still need all of them; the rest are left None): a line on its own
    costs a fifth of a millisecond, which a job reading a long session slice by slice must not pay again and again."""
    n = len(lines)
    kinds: list[Talk | None] = [None] * n
    if n == 0:
        return kinds
    dm = [i for i, (_, by_dm) in enumerate(lines) if by_dm]
    start = _show_start(lines, dm)
    for i in range(start):
        kinds[i] = Talk.pre_show
    end = next((i for i in dm if i > start and _ends(lines[i][0], i, n)), n)
    if end < n and not _story_before(lines[end][0], _END) and not _story_before(lines[end][0], _END_SESSION):
        kinds[end] = Talk.after_show
    for i in range(end + 1, n):
        kinds[i] = Talk.after_show
    for i in dm:
        if start <= i < end and _BREAK.search(lines[i][0]):
            _mark_break(lines, dm, i, kinds)
    for i in range(n) if only is None else only:
        if kinds[i] is None:
            kinds[i] = line_talk(lines[i][0], narrated=lines[i][1])
    return kinds


def _ends(text: str, i: int, n: int) -> bool:
    """Whether the DM's line ``i`` of ``n`` ends the game: a closing cue in the last part of the session, or the
    session named as ending from its middle on."""
    return (i >= n - int(n * _CLOSING_SHARE) and _END.search(text) is not None) or (
        i >= n // 2 and _END_SESSION.search(text) is not None
    )


def _show_start(lines: Sequence[tuple[str, bool]], dm: list[int]) -> int:
    """The first line of the game: after the DM's last recap cue in the opening part of the session, if any."""
    n = len(lines)
    opening = [i for i in dm if i < max(_MIN_OPENING, int(n * _OPENING_SHARE))]
    # The last recap cue of the opening: "Last we left off was crazy, but first, announcements" comes before them.
    start = next((i for i in reversed(opening) if _START_STRONG.search(lines[i][0])), None)
    retold = _players_recap(lines, dm, start)
    if start is not None:
        return max(start, retold)
    weak = [i for i in opening if _START_WEAK.search(lines[i][0])]
    return max(weak[-1] + (0 if _story_before(lines[weak[-1]][0], _START_WEAK) else 1) if weak else 0, retold)


def _players_recap(lines: Sequence[tuple[str, bool]], dm: list[int], cue: int | None) -> int:
    """The DM's first line after the players retell the last session in the first lines of this one (before the DM's
    recap ``cue``, or answering it: "Who wants to catch us up?"), else 0: the DM's own recap is the game's and a
    player adding to it is part of it; a player's "last time we…" later on is the story's."""
    told = [
        i
        for i in range(min(len(lines), _MIN_OPENING))
        if not lines[i][1]
        and _RETOLD.search(lines[i][0])
        and (cue is None or i < cue or ("?" in lines[cue][0] and not any(cue < j < i for j in dm)))
    ]
    return next((j for j in dm if j > told[-1]), 0) if told else 0


def _mark_break(lines: Sequence[tuple[str, bool]], dm: list[int], i: int, kinds: list[Talk | None]) -> None:
    """A break the DM announces at line ``i``: its announcement (unless it tells the story too) and, up to the
    DM's "welcome back" within :data:`_MAX_BREAK` lines, the lines of the break. A DM who says no such thing and
    goes on with the story once the table is back: up to a player's short "okay, back"."""
    if not _story_before(lines[i][0], _BREAK):
        kinds[i] = Talk.break_
    within = range(i + 1, min(i + _MAX_BREAK + 1, len(lines)))
    back = next((j for j in dm if j in within and _BACK.search(lines[j][0])), None)
    if back is None:
        back = next((j for j in within if _BACK.match(lines[j][0]) and len(lines[j][0].split()) <= _SHORT_BACK), None)
    if back is None:
        return
    for j in range(i + 1, back):
        kinds[j] = Talk.break_
    text = lines[back][0]
    cue = _BACK.search(text)
    after = _SENTENCE.split(text[cue.end() :] if cue else "", maxsplit=1)[1:]  # the sentences after the cue's
    goes_on = (  # the DM's story in the second or third person, not the table's "we" ("I assume we'll have Liam")
        bool(after)
        and len(_WORD.findall(after[0])) >= _STORY_WORDS // 2
        and not is_table_talk(after[0])
        and _FIRST_PERSON.search(after[0]) is None
    )
    if len(_WORD.findall(text)) < 3 * _STORY_WORDS and not goes_on:
        kinds[back] = Talk.break_  # "Welcome back, everyone!" with no story after it ("Back in. Night falls.")


def _story_before(text: str, cue: re.Pattern[str]) -> bool:
    found = cue.search(text)
    return found is not None and len(_WORD.findall(text[: found.start()])) >= _STORY_WORDS
