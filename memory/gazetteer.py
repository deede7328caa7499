"""Which known entities a text mentions: every name and alias, found whole, longest first.

Names compare in the normal form of ``memory.correction.text`` (case, accents, apostrophes and hyphens aside:
"Zyxara" and "half orc" are Zyx'ara and Half-Orc), word by word, so a mention never starts or ends inside a
word. A possessive ending stays with the mention ("Ironhold's"). Misheard names are the corrector's business:
this finds only what the transcript spells.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from itertools import dropwhile, pairwise
from typing import Generic, Protocol, TypeVar

from memory.correction.evidence import MatchSettings, word_zipf
from memory.correction.text import Token, normalize, spaced_form, tokenize
from memory.models import PERSON_TYPES, EntityType, Entry


class Named(Protocol):
    @property
    def id(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def aliases(self) -> Sequence[str]: ...


E = TypeVar("E", bound=Named)


class Typed(Named, Protocol):
    @property
    def type(self) -> EntityType: ...


T = TypeVar("T", bound=Typed)


_ONE_HYPHEN = str.maketrans("‐‑", "--")
_HYPHEN_CHARS = "-‐‑"
_ARTICLES = frozenset({"a", "an", "the"})
#: From this Zipf frequency a word is ordinary English (see ``MatchSettings.common_zipf``).
_COMMON_ZIPF = MatchSettings().common_zipf
#: How alike a word after a first name must be to the person's last name to be it misheard ("Mael" of Vael: 0.75;
#: "Blackwood" of Vael, another person's surname: 0.15).
_MISHEARD = 0.6


#: Titles that are written shortened, with a full stop: "Dr. Armitage".
_SHORT_TITLES = frozenset("dr mr mrs ms st prof rev capt sgt lt col insp det".split())
#: Words a person's name may start with that are no first name: "Sister" of Sister Ottilie Brand, "Old" of Old Hobb.
TITLES = _SHORT_TITLES | frozenset(
    """
    sister brother father mother abbot abbess captain commander general lieutenant sergeant lord lady sir ser dame
    master mistress madam madame king queen prince princess duke duchess count countess baron baroness emperor
    empress doctor professor mister miss saint old young little big grand high elder inspector detective
    constable sheriff officer agent reverend colonel major admiral
    """.split()
)
#: The titles that are honorifics, not words of a name ("Old Town"): part of a mention before it, dropped from a
#: name registered with one.
_HONORIFICS = TITLES - {"old", "young", "little", "big", "grand", "high", "elder"}


@dataclass(frozen=True, slots=True)
class _Entry(Generic[E]):
    entity: E
    separators: frozenset[str]  # the punctuation the name has between its words ("." of "St. Cuthbert")
    written: str  # the name casefolded, spaces collapsed
    possessive: bool  # the name ends in a possessive ("Gilmore's")
    short: bool = False  # a name alone (:func:`short_names`): only where :func:`_written_as_short_name`
    lowered: bool = False  # the DM wrote it in lower case, of several words ("the abbey"): it counts as written
    capital: bool = False  # a name registered with a title, said without it: only with a capital ("Henry Armitage")


def _marks(between: str) -> str:
    """The punctuation between two words, spaces aside, any hyphen as "-"."""
    return "".join(between.split()).translate(_ONE_HYPHEN)


def _separators(surface: str) -> frozenset[str]:
    """The punctuation a name has between its words, spaces aside."""
    tokens = tokenize(surface)
    return frozenset(filter(None, (_marks(surface[a.end : b.start]) for a, b in pairwise(tokens))))


class Gazetteer(Generic[E]):
    def __init__(self, entities: Iterable[E], *, people: Iterable[E] = ()) -> None:
        """``people``: those of ``entities`` (npcs and player characters) a table calls by their first or last name
        alone (:func:`short_names`): "Quillon picks up the lantern" names Quillon Ashgrove, "Mister Whitlock"
        Edgar Whitlock."""
        # A name's words -> the entities so called, each with the punctuation it has between its words ("." of
        # "St. Cuthbert"); names as written first, then spaced at their hyphens.
        self._by_words: dict[str, list[_Entry[E]]] = {}
        entities = list(entities)
        surfaces = [(entity, surface) for entity in entities for surface in (entity.name, *entity.aliases)]
        # a name registered with its title is called without it too, or with another ("Dr." of "Doctor Armitage"):
        # of several words as a name ("Henry Armitage"), of one as a short name ("Morgan", :func:`short_names`)
        bare = [(e, plain) for e, surface in surfaces if (plain := untitled(surface)) and len(tokenize(plain)) > 1]
        surfaces += bare
        capital = {(id(entity), surface) for entity, surface in bare}
        for form in (normalize, spaced_form):
            lowered = {(id(entity), form(surface)) for entity, surface in surfaces if _lowered(surface)}
            for entity, surface in surfaces:
                key = form(surface)
                listed = self._by_words.setdefault(key, []) if key else []
                if key and all(entry.entity is not entity for entry in listed):
                    tokens = tokenize(surface)
                    listed.append(
                        _Entry(
                            entity,
                            _separators(surface),
                            " ".join(surface.casefold().split()),
                            bool(tokens) and tokens[-1].base_end != tokens[-1].end,
                            lowered=(id(entity), key) in lowered,
                            capital=(id(entity), surface) in capital,
                        )
                    )
        for word, entity in short_names({person.id for person in people}, entities).items():
            self._by_words[word] = [_Entry(entity, frozenset(), word, False, short=True)]
        # The first words of the names and aliases (short names aside): a word after a short name that starts one is
        # another name said next to it ("Corwin Dorian and Keyleth go in"), not a word of a longer name
        self._starts = {
            words[0]
            for key, listed in self._by_words.items()
            if (words := key.split()) and words[0] not in _ARTICLES and any(not e.short for e in listed)
        }
        # Where a run of words may still become a name: the scan stops extending a window at the first miss.
        self._prefixes = {
            " ".join(words[:n]) for key in self._by_words if (words := key.split()) for n in range(1, len(words) + 1)
        }

    def find(
        self,
        text: str,
        *,
        nested: bool = False,
        written: bool = False,
        first_names: bool = True,
        possessive_ending: bool = True,
        present: Collection[int] = (),
    ) -> list[tuple[int, int, E]]:
        """Each mention as (start, end, entity), ``text[start:end]`` with its possessive ending, in text order,
        the longest first; ``nested``: also the names inside a longer one ("The Sunken Crown" in the quest "Raise
        the Sunken Crown"), else mentions never overlap; ``written``: a name that is one ordinary English word
        only where the text writes it as a name (see :func:`_written_as_name`); ``first_names``: the short names
        too (:func:`short_names`: a person's first or last name alone, a name's one word without its title);
        ``possessive_ending`` False: an ending that is not the name's own stays outside the mention, for what reads
        the words after it ("'s" of "Grog's dead" may be "is"; "Gilmore's" of Gilmore's Glorious Goods is the
        name's); ``present``: ids of the people the lines just before name, for whom a last name that is an English
        word at a sentence's start in a person's state is theirs ("Crane is dead.", :func:`_written_as_short_name`)."""
        tokens = tokenize(text)
        cased = written and any(ch.isupper() for ch in text)
        # Words before a name's last keep a possessive of the name's own ("Hunter's Mark"); the last may add one.
        whole = [normalize(text[t.start : t.end]) for t in tokens]
        found: list[tuple[int, int, E]] = []
        i = 0
        while i < len(tokens):
            best: tuple[int, int, E] | None = None
            said = ""
            for j in range(i, len(tokens)):
                for last in dict.fromkeys((whole[j], tokens[j].norm)):
                    # the possessive read as part of the name only where the name ends in one ("Gilmore's"; "the
                    # hell's" is not The Hells), and then first
                    possessive = last != tokens[j].norm
                    entry = self._entry(f"{said} {last}" if said else last, text, tokens[i : j + 1], possessive)
                    if entry is None:
                        continue
                    # in a person's state only someone in the scene: the line or the lines before name them
                    known = entry.entity.id in present or any(e is entry.entity for *_, e in found)
                    if entry.short and not (
                        first_names
                        and _written_as_short_name(
                            text,
                            tokens,
                            i,
                            first_name(entry.entity.name),
                            present=known,
                            name_follows=self._name_follows(text, tokens, i, entry.entity),
                        )
                    ):
                        continue
                    if entry.capital and not text[tokens[i].start].isupper():
                        continue
                    if _joined_on(text, tokens[j].end):
                        continue  # a longer name it starts: "Zoë-Ann" is not Zoë
                    if not cased or entry.lowered or _written_as_name(text, tokens[i : j + 1]):
                        end = tokens[j].end if possessive or possessive_ending else tokens[j].base_end
                        best = (j, end, entry.entity)
                        break
                said = f"{said} {whole[j]}" if said else whole[j]
                if said not in self._prefixes:
                    break
            if best is None:
                i += 1
                continue
            start = _titled(text, tokens, i, found[-1][1] if found and not nested else 0)
            found.append((start, best[1], best[2]))
            i = i + 1 if nested else best[0] + 1
        return found

    def _name_follows(self, text: str, tokens: Sequence[Token], i: int, person: E) -> bool:
        """Whether the word after a short name of ``person`` (word ``i``) stands beside it as no word of a longer
        name: the start of another known name ("Corwin Dorian and Keyleth go in", "Vael Keyleth nods") after a
        short name that counts alone anyway, no everyday word or one after a title ("the lord of Castle
        Whitestone" is no Tom Castle), or, after the person's first name, their last name misheard ("Nerith Mael"
        of Nerith Vael; "Nerith Blackwood" is someone else, "Corwin Hale" not Thessaly Corwin)."""
        if i + 1 >= len(tokens):
            return False
        after, word = tokens[i + 1], tokens[i]
        if after.norm in self._starts and (
            word_zipf(word.norm) < _COMMON_ZIPF or _titled(text, tokens, i, 0) < word.start
        ):
            return True
        last = last_name(person.name)
        if tokens[i].norm != first_name(person.name) or last is None:
            return False
        return SequenceMatcher(None, after.norm, last).ratio() >= _MISHEARD

    def _entry(self, key: str, text: str, window: list[Token], possessive: bool = False) -> _Entry[E] | None:
        """The entity a window names, if its words are a name's and the punctuation between them is allowed: none,
        a hyphen, or the name's own ("Dr. Who", not "Vox. Machina"); ``possessive`` (the last word read with its
        possessive ending): only a name that ends in one. Of several, the one written as heard first
        ("Aramente" beside "Aramenté"), then one with the very punctuation heard ("half-orc" / Half-Orc beside
        "Half Orc")."""
        listed = self._by_words.get(key, [])
        marks = {_marks(text[a.end : b.start]) for a, b in pairwise(window)} - {""}
        listed = [
            entry for entry in listed if marks - {"-"} <= entry.separators and (entry.possessive or not possessive)
        ]
        if not listed:
            return None
        heard = " ".join(text[window[0].start : window[-1].end].casefold().split())
        return min(listed, key=lambda entry: (entry.written != heard, not marks <= entry.separators))

    def mentions(self, text: str, *, written: bool = False) -> list[E]:
        """The entities ``text`` mentions, each once, in order of first mention, names inside names too
        (``written``: see :meth:`find`)."""
        return list({id(e): e for _, _, e in self.find(text, nested=True, written=written)}.values())

    def mentioned_ids(self, entry: Entry) -> list[int]:
        """Ids of the entities an entry mentions, with those its corrections named (an alias of another
        spelling still carries the entity's id). A line of the log names an entity called by an ordinary word
        ("Tiny", "Whisper") only where it writes the word as a name: "a tiny dagger" names nobody. The longest
        name at a place wins: "the Order of the Pale Lantern" names the order, not the item The Pale Lantern (a
        query or the extraction's list of known entities reads the names inside names too, :meth:`mentions`)."""
        ids = dict.fromkeys(c.entity_id for c in entry.corrections if c.entity_id is not None)
        ids.update(dict.fromkeys(e.id for _, _, e in self.find(entry.text, written=True)))
        return list(ids)


def _joined_on(text: str, end: int) -> bool:
    """Whether a hyphen at ``end`` joins a capitalised word on: a name of its own ("Zoë-Ann", "Mary-Kate"). Before a
    name, a hyphen still shows it ("Tiger-Keyleth" is Keyleth)."""
    return text[end : end + 1] in _HYPHEN_CHARS and text[end + 1 : end + 2].isupper()


def of_mentions(entities: Iterable[T]) -> Gazetteer[T]:
    """The mention index's gazetteer (who a line names, who took part, a recap's Involved), and the offline
    extractor's (a hand-over, a death "Eleanor" tells is Eleanor Voss's): every name and alias, and the npcs' and
    player characters' first and last names alone (:func:`short_names`)."""
    entities = list(entities)
    return Gazetteer(entities, people=[e for e in entities if e.type in PERSON_TYPES])


def first_name(name: str) -> str | None:
    """A person's first name: the first word of a name of several, titles aside ("Ottilie" of Sister Ottilie
    Brand, "Hobb" of Old Hobb), of 3 letters or more; none of a name of one word or one starting with an article
    ("The Tidemother")."""
    words = [t.norm for t in tokenize(name)]
    if len(words) < 2 or words[0] in _ARTICLES:
        return None
    rest = list(dropwhile(TITLES.__contains__, words))
    return rest[0] if rest and len(rest[0]) >= 3 else None


def untitled(name: str) -> str | None:
    """A name without the titles it starts with ("Henry Armitage" of Dr. Henry Armitage), when it has some and
    what is left starts with a capital ("of the Quadroads" of Lord of the Quadroads is no name)."""
    tokens = tokenize(name)
    rest = list(dropwhile(lambda t: _honorific(name, t), tokens))
    if len(rest) == len(tokens) or not rest or rest[0].norm in _ARTICLES or not name[rest[0].start].isupper():
        return None
    return name[rest[0].start :]


P = TypeVar("P", bound=Named)


def sole_names(people: Iterable[P], everyone: Iterable[Named], words: Callable[[P], Iterable[str]]) -> dict[str, P]:
    """Each word of a person's name (``words`` picks them) that is that one person's alone and no entity's whole
    name or alias: a word two people share names neither."""
    owners: dict[str, dict[int, P]] = {}
    for person in people:
        for word in words(person):
            owners.setdefault(word, {})[person.id] = person
    whole = {normalize(form) for e in everyone for form in (e.name, *e.aliases)}
    return {word: next(iter(ps.values())) for word, ps in owners.items() if len(ps) == 1 and word not in whole}


def last_name(name: str) -> str | None:
    """A person's last name: the last word of a name of several, titles aside, each word with a capital
    ("Whitlock" of Edgar Whitlock, "Armitage" of Dr. Henry Armitage; none of Kima of Vord or Percival de Rolo III),
    of 3 letters or more."""
    tokens = tokenize(name)
    rest = list(dropwhile(lambda t: t.norm in TITLES, tokens))
    if len(rest) < 2 or rest[0].norm in _ARTICLES:
        return None
    words = [name[t.start : t.end] for t in rest]
    if not all(w[0].isupper() and not w.isupper() for w in words) or len(rest[-1].norm) < 3:
        return None
    return rest[-1].norm


def short_names(people: Collection[int], everyone: Iterable[P]) -> dict[str, P]:
    """The one words an entity of ``everyone`` is called by alone, each that one entity's (:func:`sole_names`): the
    first and last names of the people (ids ``people``, :func:`first_name`, :func:`last_name`), and what is left of
    any name or alias without its titles, if one word ("Morgan" of Captain Morgan, :func:`untitled`). So Lord Grey
    and Lady Grey share "Grey" and neither is called by it, nor Captain Morgan by the first name of Morgan Vale."""
    everyone = list(everyone)

    def words(entity: P) -> Iterable[str]:
        plain = [tokenize(u) for form in (entity.name, *entity.aliases) if (u := untitled(form))]
        named = [first_name(entity.name), last_name(entity.name)] if entity.id in people else []
        return filter(None, [*named, *(tokens[0].norm for tokens in plain if len(tokens) == 1)])

    return sole_names(everyone, everyone, words)


#: What a person does, said right after their name at a sentence's start ("Wren nods."), whatever follows: the verbs of
#: 72 % of CRD3's "He …s" and "She …s" sentence starts, their kin, and those of a turning point the extraction reads
#: (``memory.extraction.events``: "Crane dies.", "Wren arrives at …"). Not what a season, the night or time does too
#: ("Winter comes early", "Time flies", "Night falls", "Day breaks"), nor "is", "has" ("Hope is all we have.").
_DOES = frozenset(
    """
    says asks tells replies answers whispers shouts yells calls mutters screams cries laughs chuckles giggles sighs
    smiles grins smirks nods shrugs frowns winks blinks glances stares glares looks watches sees hears listens
    notices thinks knows wants needs likes loves hates wonders decides agrees tries reaches grabs takes gives hands
    pulls pushes puts places picks holds drops throws tosses opens closes draws casts attacks swings strikes stabs
    hits shoots kills charges blocks rolls walks runs rushes steps stands sits kneels leans climbs jumps leaps moves
    heads follows leads enters leaves returns waits turns points waves bows pats claps drinks eats sings plays writes
    reads wears carries brings offers shows helps heals pours approaches wanders wakes sleeps gasps grunts growls
    snarls stammers pauses hesitates peeks speaks sends catches loses shakes saves manages makes keeps starts stops
    delays dies arrives lands travels rides sails slays finds discovers receives obtains acquires loots steals
    retrieves recovers claims pockets snatches attunes presents bestows knocks shrieks screeches groans moans sobs
    weeps coughs gulps flinches collapses faints staggers stumbles trembles shudders
    """.split()
)
#: What follows a verb of a person's doing that is no verb of ``_DOES``: an object, a particle or a preposition ("Crane
#: lowers the boathook", "Ruth gets Lucy out", "Tommy goes up on deck", "Ruth stays with Lucy"), where a noun in -s
#: is followed by a verb ("Marsh gas rises"), ends a clause ("Gold pieces.") or is "about" something ("Iron bars about
#: two inches apart").
_OBJECT = (
    r"(?:the|a|an|his|her|their|its|my|your|our|him|them|it|me|us|you|this|that|these|those|up|down|in|out|on|off"
    r"|over|back|away|into|onto|through|with|to|at|for|from|toward|towards|around|across|along|behind|past|inside"
    r"|outside)\b|[A-Z]"
)
#: A person's state after "is", "was" or "'s" ("Crane is dead.", "Pike's unconscious."), not the word's ("Hope is
#: all we have.", "Crane is a bird."): on the CRD3 dev episodes these states followed a capital word at a
#: sentence's start only for pronouns and names (Pike, Ashley). A last name only of someone in the scene: "Hope is
#: dead.", "Winter's dead and spring is here." are the words' as often.
_PERSON_STATE = (
    r"(?:\s+(?:is|was)|['’]s)\s+(?:(?:still|now|already|not|just|finally|barely)\s+)?"
    r"(?:dead|alive|wounded|injured|hurt|bleeding|unconscious|awake|asleep|here|gone|missing|safe|dying|breathing)\b"
)
#: What follows a sentence's first word that is a person doing something or spoken to: what a person does
#: (``_DOES``: "Wren stands up.", "Wren says, …"), another verb in -s with what a verb takes after it (``_OBJECT``),
#: or a comma and "you" ("Wren, you're up."). On CRD3's 12 episodes it finds 22 characters at 148 of their 737
#: sentence starts (any word in -s: 156; "Kima goes, …" lost) and at none of the 90 sentence starts of 133 everyday
#: words a name could be (Will, Mark, Grace, Hope, Marsh, Winter, Stone …), where any word in -s took 3, each a noun
#: ("May birthdays!"); on two nights of a 1920s table ("Tommy checks his revolver", "Ruth stays with Lucy", "Crane
#: lowers the boathook"), every line any word in -s found. A person's state follows (``_PERSON_STATE``) apart.
_ACTS = re.compile(
    rf"\s+(?:{'|'.join(sorted(_DOES))})\b|,\s*you(?:'re|'ve|'ll|r)?\b"
    r"|\s+(?!(?:this|his|its|was|has|does|always|perhaps|sometimes|towards|yes|plus|thus|unless|as)\b)"
    rf"[a-z]+s\b(?<!ss|us|is)\s+(?:{_OBJECT})"
)
_IN_STATE = re.compile(_PERSON_STATE)
#: A copula just before a word: what it says of something is what it is ("It is Winter.", "it's Hope", "she was
#: Grace"), no one, unless the scene has them.
_AFTER_COPULA = re.compile(r"(?:\b(?i:is|was|are|were|be|been|became|becomes|become)|['’](?i:s|re))\s+$")


def _titled(text: str, tokens: Sequence[Token], i: int, after: int) -> int:
    """Where the mention starting at word ``i`` starts with the titles written before it ("Doctor Armitage",
    "Dr. Armitage", "Lord Commander Grey"), past ``after``: a title is part of whoever it names, registered with it
    or without, so "gives the idol to Doctor Armitage" reads as it would without one."""
    start = tokens[i].start
    while i > 0 and (title := tokens[i - 1]).start >= after and _honorific(text, title):
        between = _marks(text[title.end : start])
        if not (between == "" or (between == "." and title.norm in _SHORT_TITLES)):
            break
        start, i = title.start, i - 1
    return start


def _honorific(text: str, word: Token) -> bool:
    """Whether a word is written as an honorific: one of them, with a capital, no possessive ("King's Road")."""
    return word.norm in _HONORIFICS and text[word.start].isupper() and word.base_end == word.end


def _written_as_short_name(
    text: str,
    tokens: Sequence[Token],
    i: int,
    first: str | None,
    *,
    present: bool = False,
    name_follows: bool = False,
) -> bool:
    """Whether a short name (:func:`short_names`; ``first``: the person's first name, if any) is written as a name:
    with a capital ("Quillon picks it up", not "quillon"); not followed by another capital word, which makes it a
    word of a longer name ("the Crane Inn", "the Winter Palace", a misheard "Captain Corwin Hale" beside Thessaly
    Corwin), unless ``name_follows`` (:meth:`Gazetteer._name_follows`: another known name next to it, "Corwin
    Dorian and Keyleth", or the person's surname heard wrong, "Nerith Mael" of Nerith Vael); and one that is also
    an English word ("Wren", "Crane") after a title ("Mister Crane"), inside a sentence, where only a name has one,
    or at its start doing something or spoken to (``_ACTS``: "Crane nods.", not "Marsh gas rises."), or in a
    person's state (``_PERSON_STATE``: "Lucy is alive."), a last name only when ``present``: the person named
    earlier in the line or in the lines before, as "Hope is dead." or "Winter's dead and spring is here." of no one
    in the scene is the word's. Such a word alone after a copula ("It is Winter.") is the person's only when
    ``present`` too, unless a title names them ("It is Captain Winter.")."""
    word = tokens[i]
    if not text[word.start].isupper():
        return False
    common = word_zipf(word.norm) >= _COMMON_ZIPF
    after = re.match(r"\s+(\w+)", text[word.end :])
    if after and after.group(1)[0].isupper() and after.group(1) != "I" and not name_follows:
        return False
    if not common:
        return True
    titled = _titled(text, tokens, i, 0) < word.start
    if not (present or titled) and _AFTER_COPULA.search(text[: word.start]):
        return False
    before = text[: word.start].rstrip(" \t\"'“‘([*_-—")
    inside = bool(before) and before[-1] not in ".!?;…"
    if inside or titled or _ACTS.match(text, word.base_end) is not None:
        return True
    # a first name is the person's ("Lucy is alive."); a surname only of someone in the scene ("Hope is dead.")
    return (present or word.norm == first) and _IN_STATE.match(text, word.base_end) is not None


def _lowered(surface: str) -> bool:
    """Whether a name or alias is written in lower case on purpose, of several words ("the abbey", "the old
    smith"): the DM means the phrase as a line writes it, so it counts without a capital."""
    return surface == surface.lower() and len(tokenize(surface)) > 1


def capital_only(surface: str) -> bool:
    """Whether a name or alias counts only where a line writes it with a capital (:func:`_written_as_name`): one
    everyday English word, articles aside ("Wren", "abbey"), unless written in lower case with its article."""
    words = [t.norm for t in tokenize(surface) if t.norm not in _ARTICLES]
    return len(words) == 1 and word_zipf(words[0]) >= _COMMON_ZIPF and not _lowered(surface)


def _written_as_name(text: str, window: Sequence[Token]) -> bool:
    """Whether a window naming an entity is written as a name: a name of several words, articles aside ("bag of
    holding"), always is; one ordinary English word ("tiny", "the list") only with a capital, at a sentence start
    too: there "Caleb" and "Pike" are names far more often than "Whisper" is the word (CRD3's 12 episodes: 300
    to 3). Called only for a text that has capitals: in one written without, case says nothing."""
    words = [t for t in window if t.norm not in _ARTICLES]
    if len(words) != 1 or word_zipf(words[0].norm) < _COMMON_ZIPF:
        return True
    return text[words[0].start].isupper()
