"""Recall's pure rules: what a question asks beyond its words (a session, a speaker), how the lexical and the
vector lists fuse into one ranking of lines, and how ranked lines become the hits a DM reads.

No database here: :mod:`memory.recall` fetches, these decide, and unit tests pin them down.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from difflib import SequenceMatcher
from itertools import islice, pairwise
from typing import Literal

from memory.offgame import DM_NAMES

#: Fusion by rank with a small constant: a list's first line must beat a line both lists found far down. With
#: RRF's usual k = 60 a line found by both at any depth (>= 2/100) beat one ranked first by one list (1/61); with
#: k = 2, rank 1 of one list (1/3) beats a line both rank 5th or lower (2/7).
FUSE_K = 2.0
#: How much each list counts. The vector list ranks single lines: its first (0.4 / 3) comes after BM25's fifth
#: line and before its sixth, and a line both rank second still beats BM25's first. On whole CRD3 dev episodes
#: 0.25-0.4 tie and less or more loses; less gains 1-2 of 60 on LongMemEval dev (bench/README.md, "weights").
LEXICAL_WEIGHT, VECTOR_WEIGHT = 1.0, 0.4
#: A line naming an entity the question names counts this much more; table talk (dice, rules, the show) this
#: much less, so the story comes first when both hold the words.
NAMED_BOOST, TABLE_TALK_FACTOR = 0.3, 0.35
#: A line of a session played in the days a question's time names ("two weeks ago", "last Friday") counts this
#: much more: preferred, not filtered (people are vague about when). Its list's 6th line then comes before the
#: first line of another day (3 / 8 > 1 / 3). On LongMemEval dev 1, 2 and 4 gain 2 of 60 at session all@5, 2 also
#: one at 10 lines and 300 words; 0.5 gains none (bench/README.md, "A time told against the day asked").
WHEN_BOOST = 2.0
#: Lines of context shown either side of a line that scored.
CONTEXT = 1
#: Words of a context line shown: the line that scored is whole, its neighbours a preview (their end before it,
#: their start after it). Whole neighbours of LongMemEval's ~190-word turns used up a 300-word reading before the
#: answer; 8 to 15 words did equally well on the dev half.
PREVIEW_WORDS = 12
#: A line that scored with at least this many words is shown without context: it says enough to be read alone,
#: and its neighbours would spend the reading (3 lines a hit) before the next hit. 5 to 20 scored alike on the
#: LongMemEval dev half (CRD3 dev did not move); the largest keeps context wherever it costs little. None: always.
ALONE_FROM: int | None = 20
#: A line shown alone whose words are this much those of a hit's line shown alone (difflib's ratio) is that hit
#: again, left out: a character's intro said each session, a "previously on" (0.88-1.0 between the sessions' takes
#: of Grog's intro, 0.02 to a line about him).
SAME_TEXT = 0.8
#: A line said by a speaker the question names, or by its asker when it speaks in the first person, counts as a
#: line naming what it asks about (``NAMED_BOOST``): "what did Caroline paint" is answered in Caroline's words.
SAID_BY_NAMED = True


@dataclass(frozen=True, slots=True)
class Speaker:
    """A speaker of the campaign a question may name: by their own name, or by the character they play (an
    entity's ``played_by``). ``called``: the name a question uses; ``plays``: the character's name when it is one."""

    name: str  # as the session's lines have it ("TRAVIS", a Discord display name)
    called: str
    plays: str | None = None
    #: asked for as "the DM": the sessions they narrate (their lines of the others are left out)
    narrates: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Filters:
    """What a question asks beyond its words: a session (``ago``: the latest ended is 1 ago; or the ``number``-th)
    and who said it (the speaker named, or the players of the character named)."""

    sessions_ago: int | None = None
    session_number: int | None = None
    #: the campaign's own title of the session it names ("what happened in Night 2?")
    session_title: str | None = None
    speakers: tuple[Speaker, ...] = ()
    #: "when did we first meet X" ("first") or "last see X", "where is X" ("last"): the lines naming X, in the
    #: order played
    told_in: Literal["first", "last"] | None = None
    #: the days (first, last; inclusive) a time it names falls in, told against when it is asked ("two weeks ago")
    when: tuple[date, date] | None = None

    def names_session(self) -> bool:
        return self.sessions_ago is not None or self.session_number is not None or self.session_title is not None

    def plays(self) -> dict[str, str]:
        """The character each speaker kept (casefolded) plays, to show their lines as "TRAVIS (Grog)"; none for a
        speaker named like the character."""
        return {s.name.casefold(): s.plays for s in self.speakers if s.plays and name_key(s.plays) != name_key(s.name)}


@dataclass(frozen=True, slots=True)
class Parsed:
    text: str  # the words left to search for
    filters: Filters
    #: the words without "first met" (``Filters.told_in``): searched when the question names whom it asks about
    unordered: str = ""
    #: how it named the session it filters by ("last session", "session 9"); "" when it names none
    session: str = ""
    #: "where did we leave off?": the last session, whose recap and last scene answer it
    left_off: bool = False


_NTH = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"]
_COUNT = ["a", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
_PLAYED = r"(?:session|game|episode)"
#: A session a question names, one rule: counted back from the latest ("last session", "two sessions ago") or
#: from the first ("the first session", "the 3rd session", "session 3"); ``said`` is how it named it. Counted, it
#: is a "session": "the very first game", "the 10th episode" are how a summary of the show speaks (CRD3 held-out
#: lost 5 of 79 questions to them).
_SESSION = re.compile(
    rf"\b(?:(?:in|from|during|at) )?(?:the )?(?P<said>(?P<last>last|previous|latest) {_PLAYED}"
    rf"|(?P<ago>\d{{1,3}}|{'|'.join(_COUNT)}) sessions? ago"
    rf"|(?:(?P<nth>{'|'.join(_NTH)})|(?P<th>\d{{1,4}})(?:st|nd|rd|th)) session"
    rf"|{_PLAYED} #?(?P<number>\d{{1,4}}))\b",
    re.I,
)
#: When someone was first or last met, seen or heard of: asked with "when", a question of the order of the lines.
_ORDERED = re.compile(
    r"\b(?P<which>first|last)\s+(?:time\s+)?(?:(?:we|I|you|they|the party)\s+)?"
    r"(?:met|meet|saw|see|seen|heard|hear|encountered|encounter|mentioned|mention|visited|visit|fought|fight)\b",
    re.I,
)
#: "Last time", "last week" name the last session only in a question asking what happened: "what did you
#: recommend last time?" may mean the last time it came up (filtered so, LongMemEval dev lost 3 of 60 questions).
_LAST_TIME = re.compile(r"\b(?:(?:in|from|during) )?(?:the )?(?P<said>last (?:time|week))\b", re.I)
_WHEN = re.compile(r"\bwhen\b", re.I)
#: "Where did we leave off?", "where were we", "remind me where we stopped": the morning after's question, asked
#: alone, of the last session: its recap and its last scene answer it (its words find lines saying "leave").
_LEFT_OFF = re.compile(
    r"(?:(?:so|okay|ok|now)[\s,]+)?(?:(?:can|could)\s+you\s+)?(?:remind\s+(?:me|us)\s+)?(?P<said>where\s+(?:"
    r"did\s+we\s+(?:last\s+)?(?:leave\s+(?:off|it|things)|stop|end(?:\s+up)?)"
    r"|were\s+we|we\s+(?:left\s+(?:off|it|things)|stopped|ended(?:\s+up)?|were)))(?:\s+(?:last\s+time|again))?",
    re.I,
)
#: "Where is X (now)?" asks where X is at present: told by the latest lines naming X, as "when did we last see X";
#: "where did X go?" too ("Nobody has seen Maelis since supper" of night 1 ranked above night 2's "the nun went to
#: Velmora"); not "where did we go", which asks where the party went.
_WHERE_NOW = re.compile(
    r"\bwhere(?:\s+(?:is|are)|['’](?:s|re)|\s+(?:did|has|have|had)\s+(?!(?:I|we)\b)(?:\S+\s+){1,4}?"
    r"(?:go|gone|head|headed|run off|disappear|disappeared|vanish|vanished))\b",
    re.I,
)
_SAID = re.compile(
    r"\b(?:what|when|where|why|how|who)\s+(?:did|does|has|had)\s+(?P<who>[^\W\d_][\w'’.-]*(?: [^\W\d_][\w'’.-]*)?)"
    r"\s+(?:say|said|tell|told|mention|ask|asked|talk)\b(?:\s+(?:about|of|to))?",
    re.I,
)


#: "What did Gorrik roll (for insight)?": the answer is the roll its player said, dice talk ranked down elsewhere.
_ROLLED = re.compile(r"\bwhat\s+(?:did|does|has|had)\s+[^\W\d_][\w'’.-]*(?: [^\W\d_][\w'’.-]*)?\s+roll(?:ed)?\b", re.I)


def roll_asked(query: str) -> bool:
    """Whether a question asks what someone rolled ("what did Gorrik roll for insight?")."""
    return _ROLLED.search(query) is not None


#: "What did the DM say": "the" is no name.
_ARTICLE = re.compile(r"^(?:the|our)\s+(?=\S)", re.I)


def speaker_asked(query: str) -> list[str]:
    """Who a question asks about as a speaker ("what did Grog say": Grog; "what did the DM say": DM), as its one
    or two words and its first word; the caller keeps the ones that are the campaign's speakers or the characters
    they play."""
    found = _SAID.search(query)
    if not found:
        return []
    who = _ARTICLE.sub("", found.group("who"))
    return list(dict.fromkeys([who, who.split()[0]]))


#: How a question names whoever narrates a session (the labels :func:`memory.offgame.dm_speaker` reads).
DM_CALLED = frozenset(name.casefold() for name in DM_NAMES)


def not_narrating(speakers: Iterable[Speaker]) -> set[tuple[str, int]]:
    """(speaker casefolded, session id) of the lines "the DM" leaves out: a narrator's lines of the sessions someone
    else narrates (the DM of Night 3 plays in Night 4)."""
    narrators = [s for s in speakers if s.narrates]
    every = {sid for s in narrators for sid in s.narrates}
    return {(s.name.casefold(), sid) for s in narrators for sid in every.difference(s.narrates)}


_CAPITALISED = re.compile(r"\b[^\W\d_a-z][\w'’-]*")
_POSSESSIVE = re.compile(r"['’]s$")
#: Forms of a question probed as speakers' or characters' names at most: a question is a line.
NAME_FORMS = 40


def named_forms(query: str) -> list[str]:
    """The forms a question may name a speaker or a character by: what "what did X say" asks for, then its
    capitalised words and pairs of them ("Grog Strongjaw"), a possessive without its "'s". Lower-case words are
    left out: a table's chorus speaks as "ALL", and "they all went" does not name it."""
    words = [_POSSESSIVE.sub("", w) for w in _CAPITALISED.findall(query)]
    pairs = [f"{a} {b}" for a, b in pairwise(words)]
    asked = speaker_asked(query)  # "what did I say": the asker
    forms = [*asked, *words, *pairs]
    return list(dict.fromkeys(name_key(f) for f in forms if len(f) > 1 or f in asked))[:NAME_FORMS]


_FIRST_PERSON = re.compile(r"\b(?:[Ii](?![.\w])|[Mm]e|[Mm]y|[Mm]ine|[Mm]yself)\b")


def first_person(query: str) -> bool:
    """Whether a question speaks of its asker ("what did I promise", "my sword")."""
    return bool(_FIRST_PERSON.search(query.replace("’", "'")))


def name_key(name: str) -> str:
    """How a name asked for is compared with a speaker's or a character's: any case, either apostrophe."""
    return name.replace("’", "'").casefold()


#: A question that asks what happened and nothing more ("what happened last session?", "recap session 3"): the
#: session's recap answers it (its words alone find lines saying "happened").
_RECAP = re.compile(
    r"(?:so\s+)?(?:what\s+(?:happened|went\s+on|did\s+we\s+do)|(?:give\s+(?:me|us)\s+)?(?:a\s+|the\s+)?"
    r"(?:recap|summary|summari[sz]e)(?:\s+(?:of|for))?)",
    re.I,
)


def recap_asked(parsed: Parsed) -> bool:
    """Whether a question asks for the recap of the session it names: "what happened last session?", "what
    happened in session 3", "recap last session", or a session named alone ("last session", "session 3": no
    word is left to search, its recap is what it asks for; "what did Grog say in session 2" asks for Grog's lines)."""
    left = parsed.text.strip(" ?!.,:;")
    alone = not left and not parsed.filters.speakers
    return bool(parsed.session) and (alone or _RECAP.fullmatch(left) is not None)


def session_asked(filters: Filters, sessions: Sequence[tuple[int, str, bool]]) -> int | None:
    """The session id ``filters`` name among ``sessions`` (id, title, ended; in the order played): "last session"
    is the latest one ended (the one running is this session; else the latest), "two sessions ago" the one before,
    "session 3" the one titled so, else the third."""
    if filters.sessions_ago is not None:
        ended = [s for s in sessions if s[2]] or list(sessions[-1:])
        return ended[-filters.sessions_ago][0] if 1 <= filters.sessions_ago <= len(ended) else None
    if filters.session_title is not None:
        asked = name_key(filters.session_title)
        said = re.compile(rf"(?<!\w){re.escape(asked)}(?!\w)")  # "Night 2" names "Night 2: the Heist"
        return next((sid for sid, title, _ in sessions if name_key(title) == asked), None) or next(
            (sid for sid, title, _ in sessions if said.search(name_key(title))), None
        )
    if filters.session_number is None:
        return None
    n = filters.session_number
    titled = re.compile(rf"\b(?:session|episode|game|part|chapter|e)\s*#?0*{n}\b", re.I)
    for sid, title, _ in sessions:
        if titled.search(title):
            return sid
    return sessions[n - 1][0] if 1 <= n <= len(sessions) else None


def session_said(text: str, sessions: Sequence[tuple[int, str, bool]]) -> int | None:
    """The session id ``text`` names whole as a question names one ("last session", "two sessions ago", "session
    3", "the first session", a title with a number) among ``sessions`` (as :func:`session_asked` reads them)."""
    parsed = parse(text, titles=[title for _, title, _ in sessions])
    if not parsed.session or parsed.text.strip(" ?!.,:;"):
        return None
    return session_asked(parsed.filters, sessions)


def parse(
    query: str, speakers: Iterable[Speaker | str] = (), titles: Iterable[str] = (), now: datetime | None = None
) -> Parsed:
    """The filters a question states ("last session", "in session 3", "in Night 2": one of the campaign's session
    ``titles`` that has a number, "what did Grog say about …", a time told against ``now``: "two weeks ago",
    "last Friday", "in March", see :func:`time_asked`), and its words without them.
    "What did Grog say" keeps the lines of every speaker ``called`` Grog (any case): a speaker
    named so and the players of a character named so; its whole name first ("Grog Strongjaw"), else its first word.
    A name no speaker is called by filters nothing: "what did the dragon say" keeps its words."""
    text, ago, number, title, said = query, None, None, None, ""
    chosen: tuple[Speaker, ...] = ()
    if found := _LEFT_OFF.fullmatch(text.strip(" ?!.,:;")):
        said = found.group("said")
        return Parsed("", Filters(sessions_ago=1), "", said, left_off=True)
    if found := _SESSION.search(text):
        said, text = found.group("said"), text[: found.start()] + " " + text[found.end() :]
        if found.group("last") or found.group("ago"):
            ago = 1 if found.group("last") else _count(found.group("ago"))
        else:
            nth = found.group("nth")
            number = _NTH.index(nth.casefold()) + 1 if nth else int(found.group("th") or found.group("number"))
    elif found := _titled(text, titles) or _title_like(text, titles):
        said = title = found.group("said")
        text = text[: found.start()] + " " + text[found.end() :]
    elif (found := _LAST_TIME.search(text)) and _RECAP.fullmatch(_without(text, found).strip(" ?!.,:;")):
        ago, said, text = 1, found.group("said"), _without(text, found)
    when = None
    if now is not None and TIME_ASKED:
        when, text = time_asked(text, now.date())
    told_in: Literal["first", "last"] | None = None
    unordered = ""
    # "when": a time, told by the order of the lines; "how she first met Trinket" asks for a story
    if (found := _ORDERED.search(text)) and _WHEN.search(text, 0, found.start()):
        told_in = "first" if found.group("which").casefold() == "first" else "last"
        unordered = text[: found.start()] + " " + text[found.end() :]
    elif _WHERE_NOW.search(text):
        told_in, unordered = "last", text
    if found := _SAID.search(text):
        known = [Speaker(s, s) if isinstance(s, str) else s for s in speakers]
        who = _ARTICLE.sub("", found.group("who"))
        for form in dict.fromkeys([name_key(who), name_key(who.split()[0])]):
            chosen = tuple(dict.fromkeys(s for s in known if name_key(s.called) == form))
            if chosen:
                text = text[: found.start()] + " " + text[found.end() :]
                unordered = unordered and _SAID.sub(" ", unordered, count=1)
                break
    filters = Filters(ago, number, title, chosen, told_in, when)
    return Parsed(" ".join(text.split()), filters, " ".join(unordered.split()), said)


# a time told against when the question is asked -------------------------------------------------------------------

#: Whether a question's time ("two weeks ago", "last Friday") is read as the days it names (False: as its words).
TIME_ASKED = True
#: No year: one counted back ("who won the tourney last year?", "two years ago") is the story's, a campaign's years
#: mostly being its world's as its days and weeks are the table's; this year is the sessions played lately.
_UNITS = {"day": 1, "week": 7, "month": 30}
_NUMBER = rf"\d{{1,3}}|{'|'.join(_COUNT[1:])}|(?:a\s+)?couple(?:\s+of)?|(?:a\s+)?few|several|an?"
_WEEKDAYS = [d.casefold() for d in calendar.day_name]
_MONTHS = [m.casefold() for m in calendar.month_name[1:]]
#: A month by its whole name, not a possessive ("in May's shop" names a person), written as one: capitalised ("we
#: may 5 …", "we march 5 miles" are verbs), or in lower case where no verb stands, as chat types it: before a day only
#: a date has ("march 5th, 2024"), after "of" ("the 5th of may"; not "the 4th may") or "in" ("what happened in march")
_MONTH = rf"(?-i:{'|'.join(m.capitalize() for m in _MONTHS)})(?!['’]s)"
_ANY_MONTH = rf"(?:{'|'.join(_MONTHS)})(?!['’]s)"
_DATED_MONTH = rf"{_MONTH}|{_ANY_MONTH}(?=\s+\d{{1,2}}(?:st|nd|rd|th|,?\s+\d{{4}}))"
_OF_MONTH = rf"{_MONTH}|(?<=of\s){_ANY_MONTH}"
#: After "in", a lower-case month only where no verb can follow it: "what we keep in may come back" is the modal.
_IN_MONTH = rf"{_MONTH}|{_ANY_MONTH}(?=\s*(?:$|[?.!,;:)])|\s+(?:\d|(?:of|about|last|this|next|year)\b))"
#: The times a DM (or LongMemEval's user) tells against the day they ask, one rule each.
_TIME = re.compile(
    r"\b(?:(?:on|from|during|in|over|at)\s+)?(?:the\s+)?(?:"
    rf"(?P<ago>{_NUMBER})\s+(?P<ago_unit>day|week|month)s?\s+ago"
    r"|(?P<yesterday>day before yesterday|yesterday|today|tonight|this morning|last night)"
    # a span "of" something ("the last day of the Festival", "the past week of the siege") is the story's time
    r"|(?P<which>last|this|previous)\s+(?P<span>week(?:end)?|month|(?<=this\s)year)\b(?!\s+of\b)"
    rf"|(?:past|last|previous)\s+(?:(?P<past>{_NUMBER})\s+)?(?P<past_unit>day|week|month)s?(?!\s+of\b)"
    rf"|(?:(?P<last_day>last|this past|past)\s+)?(?P<weekday>{'|'.join(d.capitalize() for d in _WEEKDAYS)})"
    r"(?:\s+(?:night|morning|evening))?(?!\s+(?-i:[A-HJ-Z]|I\w))"  # not a name: "the Friday Market"
    rf"|(?P<month>{_DATED_MONTH})\s+(?P<month_day>\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(?P<year>\d{{4}}))?"
    rf"|(?P<day_month>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<month2>{_OF_MONTH})(?:,?\s+(?P<year2>\d{{4}}))?"
    rf"|(?P<iso>\d{{4}}[-/]\d{{1,2}}[-/]\d{{1,2}})"
    rf"|(?<=in )(?P<in_month>{_IN_MONTH})(?:\s+(?P<year3>\d{{4}}))?"
    r")\b",
    re.I,
)


def time_asked(text: str, today: date) -> tuple[tuple[date, date] | None, str]:
    """The days (first, last) the time ``text`` tells falls in (the first it says, one counted back first), asked
    on ``today``, with a tolerance (people are vague: "two weeks ago" is 12 to 16 days ago), and ``text`` without
    the times it tells (their words name no line's topic).
    Relative ("yesterday", "5 days ago", "a couple of weeks ago", "last Friday", "on Friday", "last week", "this
    month", "in the past two months") or absolute ("on March 5", "the 5th of March", "in March", "2023-03-05": the
    latest one not after ``today``). None, ``text``: it tells no time."""
    told = [(found, days) for found in _TIME.finditer(text) if (days := _days(found, today)) is not None]
    if not told:
        return None, text
    # "the Wednesday two months ago": the time counted back is the one that says which Wednesday
    _, (first, last) = next(((f, d) for f, d in told if f.group("ago")), told[0])
    for found, _ in reversed(told):
        text = _without(text, found)
    return (first, min(last, today)), text


def _days(found: re.Match[str], today: date) -> tuple[date, date] | None:
    g = found.groupdict()
    if g["ago"]:
        n = _amount(g["ago"]) * _UNITS[g["ago_unit"].casefold()]
        slack = max(1, n // 5)  # a week ago: +-1 day; two weeks: 2; two months: 12
        return _around(today - timedelta(days=n), slack)
    if g["past_unit"]:
        n = _amount(g["past"]) if g["past"] else 1
        return today - timedelta(days=n * _UNITS[g["past_unit"].casefold()] + 1), today
    if said := g["yesterday"]:
        said = said.casefold()
        back = 2 if said.startswith("day before") else 1 if said == "yesterday" else 0
        return _around(today - timedelta(days=back), 1)
    if span := g["span"]:
        this, span = g["which"].casefold() == "this", span.casefold()
        if span.startswith("week"):  # the calendar week (Monday on), or its weekend
            monday = today - timedelta(days=today.weekday() + (0 if this else 7))
            first = monday + timedelta(days=5 if span == "weekend" else 0)
            return first - timedelta(days=1), monday + timedelta(days=7)
        if span == "month":
            year, month = (today.year, today.month) if this else _month_before(today.year, today.month)
            return _month(year, month)
        return date(today.year, 1, 1), date(today.year, 12, 31)
    if weekday := g["weekday"]:
        # "last Friday" is never today; "on Friday" may be
        back = (today.weekday() - _WEEKDAYS.index(weekday.casefold())) % 7 or (7 if g["last_day"] else 0)
        return _around(today - timedelta(days=back), 1)
    if g["month"] or g["month2"]:
        month = _month_number(g["month"] or g["month2"])
        day_number = int(g["month_day"] or g["day_month"])
        return _around(_dated(g["year"] or g["year2"], month, day_number, today), 1)
    if iso := g["iso"]:
        y, m, d = (int(part) for part in re.split(r"[-/]", iso))
        return _around(_dated(str(y), m, d, today), 1)
    if g["in_month"]:
        month = _month_number(g["in_month"])
        return _month(int(g["year3"]) if g["year3"] else today.year - (month > today.month), month)
    return None


def _month(year: int, month: int) -> tuple[date, date]:
    """A calendar month, with 3 days either side."""
    first, last = date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])
    return first - timedelta(days=3), last + timedelta(days=3)


def _amount(word: str) -> int:
    word = " ".join(word.casefold().split())
    if word.isdigit():
        return int(word)
    if word in ("a", "an"):
        return 1
    if "couple" in word:
        return 2
    if word in ("a few", "few", "several"):
        return 3
    return _COUNT.index(word) + 1


def _month_number(word: str) -> int:
    return next(n for n, m in enumerate(_MONTHS, 1) if m.startswith(word.rstrip(".").casefold()[:3]))


def _month_before(year: int, month: int) -> tuple[int, int]:
    return (year - 1, 12) if month == 1 else (year, month - 1)


def _dated(year: str | None, month: int, day_number: int, today: date) -> date | None:
    """The day asked for: in ``year``, else the latest one not after ``today``; None when there is no such day."""
    try:
        if year:
            return date(int(year), month, day_number)
        day = date(today.year, month, day_number)
        return day if day <= today else date(today.year - 1, month, day_number)
    except ValueError:  # "February 30"
        return None


def _around(day: date | None, slack: int) -> tuple[date, date] | None:
    return None if day is None else (day - timedelta(days=slack), day + timedelta(days=slack))


def _titled(text: str, titles: Iterable[str]) -> re.Match[str] | None:
    """Where the question says one of the session ``titles`` that has a number ("Night 2", "C1E035"), the longest
    first; a title of words alone ("The Heist", "One") is as often the question's own words."""
    numbered = {t.strip() for t in titles if re.search(r"\d", t) and re.search(r"[^\W\d_]", t)}
    for title in sorted(numbered, key=len, reverse=True):
        said = rf"(?<!\w)(?P<said>{re.escape(title)})(?!\w)"
        if found := re.search(rf"(?:\b(?:in|from|during|at) )?(?:the )?{said}", text, re.I):
            return found
    return None


def _title_like(text: str, titles: Iterable[str]) -> re.Match[str] | None:
    """Where the question names a session as the campaign's titles do, by a word and a number, that no title is
    ("what happened in Night 3?" of "Night 1", "Night 2"): a session it lacks, told so, not words to search, whose
    lines of another night answered it. The word: one before a title's number, only: of sessions titled otherwise,
    "on night 2 of the siege" is the story's night, searched."""
    words = {w.casefold() for t in titles for w in re.findall(r"([^\W\d_]{3,})\s*#?\d", t)}
    if not words:
        return None
    said = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    return re.search(rf"\b(?:in|from|during|at|on) (?:the )?(?P<said>(?:{said}) #?\d{{1,4}})(?!\w)", text, re.I)


def _without(text: str, found: re.Match[str]) -> str:
    return text[: found.start()] + " " + text[found.end() :]


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _COUNT.index(word.casefold()) + 1


_WORD = re.compile(r"\S+")


def preview(text: str, *, before: bool, words: int = PREVIEW_WORDS) -> str:
    """A context line as shown: whole when it has at most ``words`` words, else the ``words`` nearest the answer,
    cut between words with "…" (its last words when it comes ``before`` the answer, else its first)."""
    spans = list(_WORD.finditer(text))
    if len(spans) <= words:
        return text
    if before:
        return "…" + text[spans[-words].start() :].rstrip()
    return text[: spans[words - 1].end()] + "…"


@dataclass(slots=True)
class Fused:
    """A line's place in the fused ranking, and why it is there."""

    entry_id: int
    score: float = 0.0
    lexical_rank: int | None = None
    vector_rank: int | None = None
    named: bool = False
    table_talk: bool = False
    told: bool = False  # a line telling the entity the question is the name of
    dated: bool = False  # a line of a session played when the question says
    matched: list[str] = field(default_factory=list)  # "fulltext", "vector", "entity", "speaker"


def fuse(
    lexical: Sequence[int],
    vector: Sequence[int],
    *,
    named: Iterable[int] = (),
    said: Iterable[int] = (),
    table_talk: Iterable[int] = (),
    told: Sequence[int] = (),
    dated: Iterable[int] = (),
    k: float | None = None,
    lexical_weight: float | None = None,
    vector_weight: float | None = None,
) -> list[Fused]:
    """Lines ranked by both lists (entry ids, best first; a vector window is credited to its best line), each
    counting ``weight / (k + rank)``; a line naming an entity of the question, or ``said`` by a speaker it names
    or by its asker (``SAID_BY_NAMED``), gains ``NAMED_BOOST`` once, a line of a session played when the question
    says (``dated``) ``WHEN_BOOST``, table talk keeps ``TABLE_TALK_FACTOR`` of its
    score. Ties go to the lexical list's order, then the vector list's. The lines that ``told`` the entity a question
    is the name of come first, in their order: "Arrival at Vasselheim" asks for the lines telling that arrival."""
    k = FUSE_K if k is None else k
    lexical_weight = LEXICAL_WEIGHT if lexical_weight is None else lexical_weight
    vector_weight = VECTOR_WEIGHT if vector_weight is None else vector_weight
    out: dict[int, Fused] = {}
    for rank, entry_id in enumerate(lexical, 1):
        line = out.setdefault(entry_id, Fused(entry_id))
        if line.lexical_rank is None:
            line.lexical_rank = rank
            line.score += lexical_weight / (k + rank)
            line.matched.append("fulltext")
    for rank, entry_id in enumerate(vector, 1):
        line = out.setdefault(entry_id, Fused(entry_id))
        if line.vector_rank is None:
            line.vector_rank = rank
            line.score += vector_weight / (k + rank)
            line.matched.append("vector")
    named_ids, said_ids, talk_ids, dated_ids = set(named), set(said), set(table_talk), set(dated)
    for line in out.values():
        if line.entry_id in dated_ids:
            line.dated = True
            line.score *= 1 + WHEN_BOOST
            line.matched.append("when")
        if line.entry_id in named_ids or line.entry_id in said_ids:
            line.named = True
            line.score *= 1 + NAMED_BOOST
            # what a DM reads as why it came up: a line said by the one asked about names no entity
            line.matched += ["entity"] * (line.entry_id in named_ids) + ["speaker"] * (line.entry_id in said_ids)
        if line.entry_id in talk_ids:
            line.table_talk = True
            line.score *= TABLE_TALK_FACTOR
    order = {entry_id: n for n, entry_id in enumerate(dict.fromkeys(told))}
    top = max((line.score for line in out.values() if line.entry_id not in order), default=0.0)
    for entry_id in order:
        line = out.setdefault(entry_id, Fused(entry_id))
        line.told, line.score = True, max(line.score, top)  # scores still fall down the list
        if "entity" not in line.matched:
            line.matched.append("entity")
    big = len(lexical) + len(vector) + 1
    return sorted(
        out.values(),
        key=lambda f: (order.get(f.entry_id, len(order)), -f.score, f.lexical_rank or big, f.vector_rank or big),
    )


@dataclass(frozen=True, slots=True)
class Place:
    """Where a line is: its session and position, for context and for merging neighbours into one hit."""

    entry_id: int
    session_id: int
    seq: int
    words: int = 0  # of its text


@dataclass(slots=True)
class Group:
    """One hit as lines: those that scored, and the span shown (their context included)."""

    session_id: int
    first: int  # seq
    last: int
    matched: list[int]  # entry ids that scored, best first
    score: float


def group(
    ranked: Sequence[Fused],
    places: Mapping[int, Place],
    limit: int,
    *,
    context: int = CONTEXT,
    alone_from: int | None = ALONE_FROM,
    shown: Callable[[int], str] | None = None,
) -> list[Group]:
    """The first ``limit`` hits: each ranked line with ``context`` lines either side, none when it has at least
    ``alone_from`` words (None: always context). A line already shown by a hit, or next to its span, joins that hit
    (one passage, read once; it grows by the line, not by more context) instead of making another. A line shown
    alone whose ``shown`` text (by entry id) is nearly a hit's shown alone (``SAME_TEXT``) is left out: one stands
    for its repeats."""
    out: list[Group] = []
    alone: list[list[str]] = []  # the words of the hits shown alone
    for line in ranked:
        if len(out) >= limit:
            break
        place = places.get(line.entry_id)
        if place is None:
            continue
        around = 0 if alone_from is not None and place.words >= alone_from else context
        joined = next(
            (
                g
                for g in out
                if g.session_id == place.session_id and g.first - around - 1 <= place.seq <= g.last + around + 1
            ),
            None,
        )
        if joined is not None:
            joined.first, joined.last = min(joined.first, place.seq), max(joined.last, place.seq)
            joined.matched.append(line.entry_id)
            continue
        if shown is not None and not around:
            words = _WORD.findall(shown(line.entry_id).casefold())
            if any(alike(words, seen, SAME_TEXT, autojunk=False) for seen in alone):
                continue
            alone.append(words)
        out.append(Group(place.session_id, place.seq - around, place.seq + around, [line.entry_id], line.score))
    return out


def alike(a: Sequence[str], b: Sequence[str], least: float, *, autojunk: bool = True) -> bool:
    """Whether difflib's ratio of ``a`` to ``b`` is at least ``least``: its bounds by length and by the elements
    both hold are tried first, as ``difflib.get_close_matches`` does. Most pairs fail on them, in linear time; the
    ratio itself is quadratic (two 300-word lines took ms, a recall's dozen of them 10 ms)."""
    size = len(a) + len(b)
    if size and 2.0 * min(len(a), len(b)) / size < least:  # real_quick_ratio, before b is indexed
        return False
    s = SequenceMatcher(None, a, b, autojunk=autojunk)
    return s.quick_ratio() >= least and s.ratio() >= least


# a long line shown by its passage --------------------------------------------------------------------------------

#: A long line that scored by a passage is shown by it (False: whole, as the bench compares).
SHOW_PASSAGES = True
#: Words a long line's passage shows at least: a sentence of the question's words and the one after it ("Winter's
#: Crest!" alone says less than the sentence that tells when).
PASSAGE_MIN_WORDS = 12
#: Words a passage shows at most: a transcript without full stops has no sentences to stop at.
PASSAGE_MAX_WORDS = 80

# PostgreSQL's parser as the tsvector numbers words: a number with its decimals, else a run of letters or digits,
# through an apostrophe before a letter (searchable() drops it: "Kal'thar" is one word); a hyphenated word is one
# position, then each of its parts one ("well-made": well-made, well, made).
_PART = r"[^\W_]+(?:['’ʼ][^\W\d_][^\W_]*)*"
_TOKEN = re.compile(rf"\d+(?:[.,]\d+)+|{_PART}(?:-{_PART})*")
_SENTENCE_END = re.compile(r"(?P<stop>[.!?…]+[\"'”’)\]]*)\s+|\n\s*")


def token_spans(text: str, upto: int | None = None) -> list[tuple[int, int]]:
    """The character span of each tsvector position of ``text`` (position n is item n - 1; at least the first
    ``upto``), as PostgreSQL's default parser counts them for English prose; where it counts otherwise (a URL, an
    e-mail address) a passage is only shifted by a word or two."""
    tokens = [t.span() for t in islice(_TOKEN.finditer(text), upto)]
    if "-" not in text:
        return tokens
    out: list[tuple[int, int]] = []
    for start, end in tokens:
        out.append((start, end))
        if "-" in text[start:end]:
            for part in text[start:end].split("-"):
                out.append((start, start + len(part)))
                start += len(part) + 1
    return out


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """The character span of each sentence of ``text`` (ends at . ! ? … before a space, or at a line break)."""
    out: list[tuple[int, int]] = []
    start = 0
    for end in _SENTENCE_END.finditer(text):
        stop = end.end("stop") if end.group("stop") else end.start()
        if text[start:stop].strip():
            out.append((start, stop))
        start = end.end()
    if text[start:].strip():
        out.append((start, len(text.rstrip())))
    return out


def passage_span(
    text: str,
    first: int,
    last: int,
    *,
    min_words: int | None = None,
    max_words: int | None = None,
) -> tuple[int, int] | None:
    """The characters of ``text`` a long line shows for its best passage (tsvector positions ``first`` to ``last``,
    those of its first and last term of the question): the whole sentences holding them, then the sentences after
    (else before) until it has ``min_words``; at most ``max_words``, cut between words around the terms when one
    sentence is longer. None: the passage would be the whole line."""
    min_words = PASSAGE_MIN_WORDS if min_words is None else min_words
    max_words = PASSAGE_MAX_WORDS if max_words is None else max_words
    tokens = token_spans(text, upto=max(first, last))
    if not tokens:
        return None
    start = tokens[min(max(first, 1), len(tokens)) - 1][0]
    end = tokens[min(max(last, first, 1), len(tokens)) - 1][1]
    sentences = sentence_spans(text) or [(0, len(text))]
    lo = next((k for k, (_, b) in enumerate(sentences) if b > start), len(sentences) - 1)
    hi = next((k for k, (_, b) in enumerate(sentences) if b >= end), len(sentences) - 1)
    hi = max(hi, lo)

    def words(a: int, b: int) -> int:
        return len(_WORD.findall(text[sentences[a][0] : sentences[b][1]]))

    while words(lo, hi) < min_words and (hi + 1 < len(sentences) or lo > 0):
        hi, lo = (hi + 1, lo) if hi + 1 < len(sentences) else (hi, lo - 1)
    span = (sentences[lo][0], sentences[hi][1])
    if words(lo, hi) > max_words:  # one long sentence: the words around the terms
        spans = list(_WORD.finditer(text))
        at = next((k for k, w in enumerate(spans) if w.end() > start), 0)
        to = next((k for k, w in enumerate(spans) if w.end() >= end), at)
        room = max(0, max_words - (to - at + 1)) // 2
        a, b = max(0, at - room), min(len(spans) - 1, max(to, at + max_words - 1 - room))
        span = (spans[a].start(), spans[b].end())
    if span[0] <= 0 and not text[span[1] :].strip():
        return None
    return span


#: Words from which a line `search` found is shown by its passage: a DM's 400-word narration whole filled 40 rows.
SEARCH_PASSAGE_FROM = 40


def search_span(text: str, positions: Sequence[int]) -> tuple[int, int] | None:
    """The characters a line `search` found shows (see :func:`passage_span`): the sentences where it first says a
    word of the query (its tsvector ``positions``), with those said within a passage's words; None: the line whole,
    of fewer than ``SEARCH_PASSAGE_FROM`` words."""
    if not positions or len(text.split()) < SEARCH_PASSAGE_FROM:
        return None
    first = positions[0]
    return passage_span(text, first, max(p for p in positions if p < first + PASSAGE_MIN_WORDS))


def shown_passage(text: str, span: tuple[int, int], mask: Callable[[str], str] = str) -> str:
    """A long line as shown by its passage ``span`` (characters of ``text``), masked, with "…" where the line goes
    on. Masked piecewise only when that masks it exactly as whole (no secret name crosses a cut); else whole."""
    before, inside, after = text[: span[0]], text[span[0] : span[1]], text[span[1] :]
    masked = mask(text)
    if mask(before) + mask(inside) + mask(after) != masked:
        return masked
    return "…" * bool(before.strip()) + mask(inside).strip() + "…" * bool(after.strip())
