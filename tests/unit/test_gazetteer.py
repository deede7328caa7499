"""The gazetteer: which known entities a text mentions, as written (misheard names are the corrector's)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.extraction.schema import KnownEntity
from memory.gazetteer import Gazetteer, of_mentions
from memory.models import Correction, EntityType, Entry


def known(i: int, name: str, *aliases: str) -> KnownEntity:
    return KnownEntity(id=i, name=name, type=EntityType.npc, aliases=list(aliases))


GAZETTEER = Gazetteer(
    [
        known(1, "Mira Tolvanek", "Mira"),
        known(2, "Zyx'ara"),
        known(3, "Ironhold"),
        known(4, "Half-Orc"),
        known(5, "Hunter's Mark"),
        known(6, "Vox Machina", "Vox"),
        known(7, "Élodie"),
        known(8, "The Sunken Crown"),
        known(9, "Raise the Sunken Crown"),
        known(10, "St. Cuthbert"),
        known(11, 'Bo "The Breaker"'),
        known(12, "Half Orc"),
        known(13, "Aramente"),
        known(14, "Aramenté"),
        known(15, "The Hells"),
        known(16, "Gilmore's"),
        known(17, "Hunter"),
        known(18, "Hunter's"),
    ]
)


def ids(text: str) -> list[int]:
    return [e.id for e in GAZETTEER.mentions(text)]


def test_names_and_aliases_are_found_whole_longest_first_each_once() -> None:
    assert ids("Mira says Zyxara should go to Ironhold's gate, Mira said") == [1, 2, 3]
    assert ids("Vox Machina rides; vox is back") == [6]
    text = "the vox machina's wagon"
    assert [text[s:e] for s, e, _ in GAZETTEER.find(text)] == ["vox machina's"]  # the possessive goes with it
    assert ids("nothing here, not Miranda nor Ironholds") == []
    # a name inside a longer one is mentioned too, though a tagger wants mentions that do not overlap
    text = "we must raise the Sunken Crown"
    assert ids(text) == [9, 8]
    assert [text[s:e] for s, e, _ in GAZETTEER.find(text)] == ["raise the Sunken Crown"]


def test_a_possessive_not_the_names_own_may_stay_outside_the_mention() -> None:
    """For the extraction rules: the "'s" of "Mira's dead" may be "is", so they read it after the name."""
    for text, said in (
        ("Mira's dead", "Mira"),
        ("we went to gilmore's", "gilmore's"),
        ("the hunter's bow", "hunter's"),
    ):
        assert [text[s:e] for s, e, _ in GAZETTEER.find(text, possessive_ending=False)] == [said]


def test_case_accents_apostrophes_and_hyphens_aside() -> None:
    assert ids("a half-orc, a half‐orc, a HALFORC") == [4]  # an ASCII hyphen, then U+2010
    assert ids("a Half Orc") == [12]  # an entity's own spelling before another's spaced at its hyphen
    assert ids("she casts hunter's mark") == [5]
    # a possessive is part of a name only where the name has it
    assert ids("what the hell's going on") == [] and ids("what the hells") == [15]
    assert ids("we went to gilmore's") == [16]
    assert ids("we went to Gilmore’s") == [16]  # a curly apostrophe
    assert ids("the hunter's bow") == [18] and ids("the hunter's") == [18] and ids("the hunter") == [17]
    assert ids("elodie and ZYX'ARA") == [7, 2]
    assert ids("aramenté") == [14] and ids("Aramente") == [13]  # two entities spelled alike: the one written


def test_a_name_does_not_run_across_punctuation() -> None:
    text = "Vox. Machina"
    assert [text[s:e] for s, e, _ in GAZETTEER.find(text)] == ["Vox"]  # the alias alone, not the two-word name
    # unless the punctuation is the name's own
    assert ids('St. Cuthbert, Bo "The Breaker" said, and St Cuthbert again') == [10, 11]


def line(text: str, *corrections: Correction) -> Entry:
    return Entry(
        id=1,
        campaign_id=1,
        session_id=1,
        seq=1,
        speaker="DM",
        speaker_id=None,
        raw_text=text,
        text=text,
        start_s=0.0,
        end_s=None,
        duration_s=None,
        ref=None,
        corrections=list(corrections),
        created_at=datetime.now(UTC),
    )


def test_a_line_names_an_entity_called_by_an_ordinary_word_only_where_it_writes_it_as_a_name() -> None:
    words = Gazetteer(
        [
            known(1, "Tiny"),
            known(2, "Whisper"),
            known(3, "The List"),
            known(4, "Caleb Widogast", "Caleb"),
            known(5, "Bag of Holding"),
            known(6, "Zyx'ara"),
        ]
    )

    def named(text: str) -> list[int]:
        return words.mentioned_ids(line(text))

    # the mention index: a line saying the word is not about the entity so called
    assert named("You hear hundreds of tiny metal clangs. I whisper to him and check the list.") == []
    assert named("I'm going to turn around and whisper to Caleb.") == [4]
    # written as a name: inside a sentence, at its start (there far more often a name than the word), in capitals
    assert named("You watch as Tiny grins. Whisper glows. THE LIST!") == [1, 2, 3]
    # names of several words and invented ones, as written; a line without capitals says nothing by its case
    assert named("put it in the bag of holding, zyx'ara") == [5, 6]
    assert named("tiny and caleb whisper") == [1, 4, 2]
    # an entity a correction named is named, however the line writes it
    fix = Correction(span="tiny", replacement="tiny", start=0, end=4, entity_id=1, score=1.0, stage=1)
    assert named("tiny. The end.") == [] and words.mentioned_ids(line("tiny. The end.", fix)) == [1]
    # a query or a tag reads every mention (a question is often typed in lower case)
    assert [e.id for e in words.mentions("what did tiny say")] == [1]


def test_a_line_names_the_longest_name_at_a_place_a_query_the_names_inside_it_too() -> None:
    text = "We must raise the Sunken Crown."
    assert GAZETTEER.mentioned_ids(line(text)) == [9]  # the quest, not the item inside its name
    assert ids(text) == [9, 8]


def test_an_alias_written_in_lower_case_with_its_article_counts_as_written() -> None:
    """The alias "the abbey" typed by the DM never counted (one everyday word, no capital), while "the Abbot" did where
    capitalised: an alias of several words written in lower case is the phrase the DM means."""
    places = Gazetteer([known(1, "The Sunken Abbey", "the abbey"), known(2, "Quillon Ashgrove", "the Abbot")])

    def named(text: str) -> list[int]:
        return places.mentioned_ids(line(text))

    assert named("We row out to the abbey.") == [1] and named("The Abbey sinks.") == [1]
    assert named("Then the abbot laughs.") == [] and named("Then the Abbot laughs.") == [2]


PEOPLE = [known(1, "Wren Halloway"), known(2, "Quillon Ashgrove")]
WREN = Gazetteer(PEOPLE, people=PEOPLE)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("Wren stands up.", True),  # an English word at a sentence's start, doing something: the name
        ("Ooh. Wren makes a note.", True),
        ("Wren says, we'll do it.", True),
        ("It staggers. Wren, you're up.", True),  # spoken to
        ("He hands Wren the lantern.", True),  # inside a sentence, as before
        ("Wren is a small brown bird.", False),  # "is", "was", "has": not what the person does
        ("Wren is unconscious.", True),  # ... but a person's state after it is the person's
        ("Wren was not here.", True),
        ("Wren eggs hatch in May.", False),  # nor a noun in -s
        ("Wren lowers the boathook.", True),  # another verb in -s before its object,
        ("Wren stays with Lucy.", True),  # or a preposition
        ("Wren comes early.", False),  # what a season does too
        ("Wren.", False),  # alone: "Mark.", "Grace." are the word as often
        ("Wren's bow is strung.", False),
        ("the wren stands up.", False),  # no capital
        ("Quillon nods.", True),  # not an English word: anywhere, as before
    ],
)
def test_an_english_first_name_at_a_sentences_start_names_the_person_doing_something(text: str, named: bool) -> None:
    """ "Wren stands up." named no one: a first name that is an English word counted only inside a sentence. At its
    start, followed by a verb in -s or "you", it is the person (CRD3: 40 of Pike, Percy and Caleb's sentence starts,
    one of 73 of 127 everyday words a name could be)."""
    assert bool(WREN.find(text)) is named


TITLED = Gazetteer([known(1, "Dr. Henry Armitage", "Armitage"), known(2, "Doctor Morgan"), known(3, "Old Town Hall")])


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("Eleanor gives the idol to Doctor Armitage.", "Doctor Armitage"),  # a title the entity is registered without
        ("Mr. Armitage nods.", "Mr. Armitage"),  # shortened, with its full stop
        ("Inspector Henry Armitage, at last.", "Inspector Henry Armitage"),  # another title than its own
        ("Dr. Morgan arrives.", "Dr. Morgan"),  # registered with another title
        ("Morgan arrives.", "Morgan"),  # or without one
        ("I saw the Captain. Armitage nods.", "Armitage"),  # a sentence's end: no title of his
        ("the doctor Armitage", "Armitage"),  # without a capital: a word
    ],
)
def test_a_title_before_a_name_is_part_of_the_mention_registered_with_one_or_not(text: str, said: str) -> None:
    """ "gives the idol to Doctor Armitage" proposed no hand-over: the title stood between the verb and the name."""
    assert [text[a:b] for a, b, _ in TITLED.find(text)] == [said]


def test_a_name_without_its_title_is_no_ordinary_word() -> None:
    assert TITLED.find("the town hall") == [] and TITLED.find("Henry Armitage")[0][2].id == 1


SURNAMED = [
    known(1, "Edgar Whitlock"),
    known(2, "Jeremiah Crane"),
    known(3, "Agatha Pruitt"),
    known(4, "Lucy Pruitt"),
    known(6, "Edgar Marsh"),
]
CALLED = Gazetteer([*SURNAMED, known(5, "Lady Kima of Vord")], people=[*SURNAMED, known(5, "Lady Kima of Vord")])


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("The bookseller. Whitlock.", ["Whitlock"]),  # no English word: anywhere, with a capital
        ("Inspector Greene raids Whitlock's shop.", ["Whitlock's"]),
        ("Mister Crane waits.", ["Mister Crane"]),  # an English word: after a title,
        ("You find Crane on the pier.", ["Crane"]),  # inside a sentence,
        ("Crane nods.", ["Crane"]),  # or doing something at its start
        ("Crane is a bird.", []),
        ("Jeremiah Crane falls. Crane is dead.", ["Jeremiah Crane", "Crane"]),  # a person's state, named before
        ("Crane is dead.", []),  # named nowhere before it
        ("Marsh gas rises from the bog.", []),  # a noun in -s is no verb
        ("Marsh nods.", ["Marsh"]),
        ("We drink at the Crane Inn.", []),  # a word of a longer name
        ("Captain Whitlock Hale is dead.", []),  # no English word, but a word of a longer name all the same
        ("The bookseller, Whitlock, is here.", ["Whitlock"]),
        ("Then Pruitt.", []),  # two people's
        ("Vord", []),  # no last name: "of" is no name's word
        ("whitlock", []),  # without a capital
    ],
)
def test_a_persons_last_name_alone_names_them_where_written_as_a_name(text: str, said: list[str]) -> None:
    """ "Whitlock" named no one: only a first name counted alone, though a modern table calls people by surname.
    A misheard "Captain Corwin Hale is dead." named the absent Thessaly Corwin: only a name that is an English word
    stopped before another capital word."""
    assert [text[a:b] for a, b, _ in CALLED.find(text, written=True)] == said


def test_a_last_name_before_a_capital_word_is_anothers_a_first_name_the_persons_with_a_surname_misheard() -> None:
    """The recogniser's "Captain Corwin Hale is dead." (Corvane Hale) named the absent player Thessaly Corwin, in
    her mentions, the sessions she took part in and the recap's Involved. "Nerith Mael" is Nerith Vael, her
    surname heard wrong: a first name is followed by a surname, a last name by no other name word."""
    people = [known(1, "Thessaly Corwin"), known(2, "Corvane Hale"), known(3, "Nerith Vael")]
    called = Gazetteer(people, people=people)

    def said(text: str) -> list[tuple[str, int]]:
        return [(text[a:b], e.id) for a, b, e in called.find(text, written=True)]

    assert said("It is too late. Captain Corwin Hale is dead.") == [("Hale", 2)]
    assert said("It is Nerith Mael, the envoy.") == [("Nerith", 3)]
    assert said("You ask Corwin. Hale nods.") == [("Corwin", 1), ("Hale", 2)]


def test_a_known_first_name_before_another_surname_is_someone_new() -> None:
    """The reviewer's: with Nerith Vael and Oswin Marl known, "You meet a woman named Nerith Blackwood." named Nerith
    Vael (and proposed no one new), "Oswin Blackwood, the captain of Ironhold, nods." named Oswin Marl. A first name
    before a capital word is the person only when that word is their surname heard wrong."""
    people = [known(1, "Nerith Vael"), known(2, "Oswin Marl"), known(3, "Ironhold")]
    called = Gazetteer(people, people=people[:2])

    def said(text: str) -> list[tuple[str, int]]:
        return [(text[a:b], e.id) for a, b, e in called.find(text, written=True)]

    assert said("You meet a woman named Nerith Blackwood.") == []
    assert said("Oswin Blackwood, the captain of Ironhold, nods.") == [("Ironhold", 3)]
    assert said("Nerith Blackwood is the envoy of Ironhold.") == [("Ironhold", 3)]
    assert said("Tell Oswin Greyhame the news.") == []  # ours: any other surname
    assert said("It is Nerith Mael, the envoy.") == [("Nerith", 1)]  # her surname heard wrong, as before
    assert said("Nerith Vale nods.") == [("Nerith", 1)]
    assert said("Oswin Marle waves.") == [("Oswin", 2)]
    assert said("Oswin nods at Nerith.") == [("Oswin", 2), ("Nerith", 1)]


def test_a_short_name_before_another_known_name_is_a_mention_of_both() -> None:
    """The reviewer's: "Corwin Dorian and Keyleth go in." lost Thessaly Corwin, "Vael Keyleth nods." and "Tell Dorian
    Keyleth is here." Dorian Vael: any capital word after a short name made it a word of a longer name, as an
    unpunctuated list or a live transcript gives. One that starts another known name does not; a misheard "Captain
    Corwin Hale" (Corvane Hale's last name after it) is still no Thessaly Corwin."""
    people = [known(1, "Thessaly Corwin"), known(2, "Dorian Vael"), known(3, "Keyleth"), known(4, "Corvane Hale")]
    called = Gazetteer(people, people=people)

    def said(text: str) -> list[int]:
        return [e.id for e in called.mentions(text)]

    assert said("Corwin Dorian and Keyleth go in.") == [1, 2, 3]
    assert said("Vael Keyleth nods.") == [2, 3]
    # "Dorian" is an everyday word (Zipf 3.2): before another name it is a word of a longer one, as "Castle
    # Whitestone" (test_an_everyday_word_short_name_before_another_known_name_is_a_word_of_a_longer_name)
    assert said("Tell Dorian Keyleth is here.") == [3]
    assert said("You see Thessaly Dorian and Keyleth.") == [1, 2, 3]  # as before
    assert said("Corwin Thessaly and Hale wait.") == [1, 4]  # ours: "Thessaly" alone is Thessaly Corwin's own
    assert said("It is too late. Captain Corwin Hale is dead.") == [4]  # 6d01e87's case
    assert said("We drink at the Corwin Arms.") == []  # a word of a longer name, as before


def test_an_everyday_word_short_name_before_another_known_name_is_a_word_of_a_longer_name() -> None:
    """The reviewer's: "the lord of Castle Whitestone" named Tom Castle since any known name after a short name made
    it a mention. Only a short name that counts alone anyway (no everyday word, or after a title) does."""
    people = [known(1, "Tom Castle"), known(3, "Jon Winter"), known(5, "Rose Marsh"), known(7, "Dorian Vael")]
    called = Gazetteer([*people, known(2, "Whitestone"), known(4, "Emon"), known(6, "Grog")], people=people)

    def said(text: str) -> list[int]:
        return [e.id for e in called.mentions(text)]

    assert said("You're the lord of Castle Whitestone.") == [2]
    assert said("We reach Castle Emon.") == [4]
    assert said("They cheer for the Winter Grog festival.") == [6]
    assert said("You smell the Rose Whitestone gardens.") == [2]
    assert said("Vael Grog and Emon.") == [7, 6, 4]  # no everyday word: a mention, as 5aefceb made it
    assert said("You thank Sir Castle Grog and the rest.") == [1, 6]  # after a title it is the person
    assert said("You hand it to Castle.") == [1]  # alone inside a sentence, as before


def test_a_name_that_is_an_english_word_starts_a_sentence_as_the_person_in_a_persons_state() -> None:
    """ "Crane is dead." at a sentence's start named no one: "is" was never what a person does, as for "Hope is all
    we have". A state only a person is in (dead, alive, unconscious, gone ...) tells the name from the word."""
    people = [known(1, "Jeremiah Crane"), known(2, "Hope Marrow")]
    called = Gazetteer(people, people=people)

    def said(text: str) -> list[str]:
        return [text[a:b] for a, b, _ in called.find(text)]

    def present(text: str) -> list[str]:  # the lines before named both
        return [text[a:b] for a, b, _ in called.find(text, present={1, 2})]

    assert present("Crane is dead.") == ["Crane"] and said("Hope is gone.") == ["Hope"]  # a first name: cold too
    assert present("Crane's still breathing.") == ["Crane's"]
    assert said("Jeremiah Crane staggers. Crane is dead.") == ["Jeremiah Crane", "Crane"]  # named before in the line
    assert said("Hope is all we have.") == said("Hope is a thing with feathers.") == said("Crane is tall.") == []
    assert present("Hope is all we have.") == present("Crane is tall.") == []


def test_an_english_word_name_alone_in_a_state_is_the_word_unless_the_person_is_in_the_scene() -> None:
    """The reviewer's: with Faith Hope, Jon Winter, Mara Silence and Ada Frost known, "Hope is dead." proposed the death
    of Faith Hope, "Winter's dead and spring is here." Jon Winter's, "Frost is alive on the window." Ada Frost alive.
    A surname that is an English word, alone at a sentence's start, is the person in a state only when the line or
    the lines before name them (a title, "Crane nods." or a name inside a sentence count as before)."""
    people = [known(1, "Faith Hope"), known(2, "Jon Winter"), known(3, "Mara Silence"), known(4, "Ada Frost")]
    called = Gazetteer(people, people=people)

    def said(text: str, present: set[int] = set()) -> list[str]:  # noqa: B006 - read only
        return [text[a:b] for a, b, _ in called.find(text, present=present)]

    for line in [
        "Hope is dead.",
        "Hope's dead.",
        "Winter's dead and spring is here.",
        "Winter is dying.",
        "Silence is dead in the hall.",
        "Frost is alive on the window.",
        "Hope is gone.",  # ours: idioms of the same words (a first name is the person's: "Lucy is alive.")
        "Silence was here long before you.",
        "Winter is still here.",
    ]:
        assert said(line) == [], line
    assert said("Hope is dead.", present={1}) == ["Hope"]  # Faith Hope named in the lines before
    assert said("Hope is dead.", present={2}) == []  # someone else
    assert said("Faith Hope falls. Hope is dead.") == ["Faith Hope", "Hope"]
    assert said("Mister Winter is dead.") == ["Mister Winter"]  # a title: the person


@pytest.mark.parametrize(
    ("names", "text", "said"),
    [
        (["Lord Grey", "Lady Grey"], "Grey nods.", []),  # two entities': neither
        (["Lord Grey", "Lady Grey"], "You bow to Lady Grey.", ["Lady Grey"]),
        (["Captain Morgan", "Morgan Vale"], "Morgan nods.", []),  # another person's first name
        (["Captain Morgan", "Morgan Vale"], "Captain Morgan nods.", ["Captain Morgan"]),
        (["Father Winter"], "Winter comes early to Ironhold.", []),  # an English word: as a first name is
        (["Father Winter"], "Winter nods.", ["Winter"]),
        (["Father Winter"], "You pray to Winter.", ["Winter"]),  # inside a sentence, with a capital, as "Crane" is
        (["Father Winter"], "The winter is long.", []),
        (["Father Winter"], "We ride to the Winter Palace.", []),  # a word of a longer name
        (["Captain Ilse Reyes"], "Ilse Reyes nods.", ["Ilse Reyes"]),  # of several words: a name
    ],
)
def test_a_name_without_its_title_is_a_short_name_as_a_first_or_last_name_is(
    names: list[str], text: str, said: list[str]
) -> None:
    """ "Grey nods." named Lord Grey beside Lady Grey, "Morgan nods." Captain Morgan beside Morgan Vale, and
    "Winter comes early to Ironhold." Father Winter: a name registered with a title was said without it with no
    guard a first or last name has."""
    gazetteer = of_mentions([known(i, name) for i, name in enumerate(names)])
    assert [text[a:b] for a, b, _ in gazetteer.find(text, written=True)] == said


def test_an_alias_without_its_title_names_one_entity_alone() -> None:
    """ "Mrs. Pruitt" of Agatha Pruitt made "Pruitt" hers, though Lucy Pruitt is a Pruitt too."""
    pruitts = of_mentions([known(1, "Agatha Pruitt", "Mrs. Pruitt"), known(2, "Lucy Pruitt")])
    assert pruitts.find("You ask Pruitt.", written=True) == []
    assert [e.id for _, _, e in pruitts.find("You ask Mrs. Pruitt.", written=True)] == [1]


def test_a_name_a_hyphen_joins_a_capitalised_word_onto_is_a_longer_name() -> None:
    # "Zoë-Ann O'Brien-Ñúñez" was counted as Zoë's mention, and no new npc proposed
    zoe = Gazetteer([known(1, "Zoë Ashgrove", "Zoë"), known(2, "Keyleth")])
    assert zoe.find("A gnome named Zoë-Ann O'Brien-Ñúñez greets you.") == []
    assert [e.id for _, _, e in zoe.find("Zoë-like grace, and Zoë's ale")] == [1, 1]
    assert [e.id for _, _, e in zoe.find("Tiger-Keyleth roars.")] == [2]  # before a name, it still shows it
