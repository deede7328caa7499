"""Stage 1 and a title: words after one that sound like the surname of the name opening with it are that name."""

from __future__ import annotations

import pytest

from memory.correction import EntityName, PhoneticIndex, PhoneticMatcher
from memory.correction.edits import apply_corrections

ARMITAGE, REYES, WILMARTH, MORGAN, VOSS, PRICE = 1, 2, 3, 4, 5, 6
ENTITIES = [
    EntityName(id=ARMITAGE, name="Dr. Henry Armitage", aliases=["Henry Armitage", "Armitage"]),
    EntityName(id=REYES, name="Captain Ilse Reyes", aliases=["Ilse Reyes", "Reyes"]),
    EntityName(id=WILMARTH, name="Professor Albert Wilmarth", aliases=["Wilmarth"]),
    EntityName(id=MORGAN, name="Dr. Francis Morgan", aliases=["Francis Morgan"]),
    EntityName(id=VOSS, name="Eleanor Voss"),
    EntityName(id=PRICE, name="Sergeant Will Price"),
]


@pytest.fixture(scope="module")
def matcher() -> PhoneticMatcher:
    return PhoneticMatcher(PhoneticIndex.build(ENTITIES))


def corrected(matcher: PhoneticMatcher, text: str) -> str:
    return apply_corrections(text, matcher.correct(text).corrections)


@pytest.mark.parametrize(
    ("text", "fixed"),
    [
        ("Waiting behind a desk is Doctor Army tage.", "Waiting behind a desk is Dr. Henry Armitage."),
        ("We meet doctor army tage at the library.", "We meet Dr. Henry Armitage at the library."),
        ('Captain race says, "Same as you."', 'Captain Ilse Reyes says, "Same as you."'),
        ("Professor will mouth has seen the script.", "Professor Albert Wilmarth has seen the script."),
        ("Captain race, you're late.", "Captain Ilse Reyes, you're late."),
        ("Sergeant prize nods.", "Sergeant Will Price nods."),
        ("We sail with Captain race.", "We sail with Captain Ilse Reyes."),
        ("We sail with Captain Race tonight.", "We sail with Captain Ilse Reyes tonight."),  # written as a name
        ("Captain raiz raises the alarm.", "Captain Ilse Reyes raises the alarm."),  # no English word
        ("Who sails with us? Captain rays.", "Who sails with us? Captain Ilse Reyes."),  # a plural's "s": no verb
    ],
)
def test_a_title_before_words_sounding_like_its_names_surname_is_that_name(
    matcher: PhoneticMatcher, text: str, fixed: str
) -> None:
    """Everyday words ("army", "race", "will") are never bent into a name alone; after the title of a name whose
    surname they sound like, they are what the recogniser made of it."""
    assert corrected(matcher, text) == fixed


@pytest.mark.parametrize(
    "text",
    [
        "The Captain races to the door.",  # after a determiner the title is a noun
        "The doctor will mouth the words.",
        "Professor will help.",  # not the surname's sound
        "Doctor army knife",
        "Doctor Morgan arrives.",  # the surname said right: nothing misheard
        "Captain, raise the sails!",  # a comma between: the title is called, no name follows
        "Sister race ahead.",  # no name opens with that title
        # one English word the sentence says, however near it sounds: the title called without its comma, or a noun
        "Captain raise your sword",
        "Captain raised the alarm",
        "Sergeant prize fighter",
        "Captain race to the door!",
        "Sergeant pries the lid open.",
        # a sentence ending on a past tense ends on its verb, the title its subject
        "Captain raised.",
        "Captain raised",
    ],
)
def test_the_title_alone_or_words_unlike_a_surname_stay_as_said(matcher: PhoneticMatcher, text: str) -> None:
    assert matcher.correct(text).corrections == [], text


def test_one_english_word_the_recogniser_doubted_after_a_title_is_the_name(matcher: PhoneticMatcher) -> None:
    """Its doubt says the word was not clearly that word; heard sure of itself, the word stays."""
    text = "Captain raise your sword"
    doubted = [0.95, 0.3, 0.95, 0.95]
    assert apply_corrections(text, matcher.correct(text, doubted).corrections) == "Captain Ilse Reyes your sword"
    assert matcher.correct(text, [0.95] * 4).corrections == []
    raised = "Captain raised."  # a past tense ending the sentence, doubted: the name too
    assert apply_corrections(raised, matcher.correct(raised, [0.95, 0.3]).corrections) == "Captain Ilse Reyes."


def test_words_the_dm_said_are_never_the_name_stay_after_its_title() -> None:
    """`session names` offers ``--not-heard-as "captain race"`` for a wrong correction: it holds here too."""
    refused = EntityName(id=REYES, name="Captain Ilse Reyes", not_heard_as=["captain race"])
    matcher = PhoneticMatcher(PhoneticIndex.build([refused]))
    assert matcher.correct('Captain race says, "Same as you."').corrections == []


@pytest.mark.parametrize(
    ("text", "fixed"),
    [
        ("We sail with Captain reed.", "We sail with Captain Ilse Reade."),
        ("Report to Sergeant creed.", "Report to Sergeant Tom Creede."),
        ("Captain raised.", "Captain raised."),  # a past tense: the title's verb
    ],
)
def test_an_eed_word_ending_the_line_after_a_title_is_no_past_tense(text: str, fixed: str) -> None:
    """ "reed", "creed", "need", "seed" end in "ed" but are no verb's past: the surname misheard ends the line."""
    entities = [
        EntityName(id=1, name="Captain Ilse Reade", aliases=["Ilse Reade", "Reade"]),
        EntityName(id=2, name="Sergeant Tom Creede", aliases=["Creede"]),
    ]
    assert corrected(PhoneticMatcher(PhoneticIndex.build(entities)), text) == fixed


@pytest.mark.parametrize(
    ("text", "fixed"),
    [
        ("Report to Sergeant jared.", "Report to Sergeant Tom Jarod."),
        ("Sergeant Jared.", "Sergeant Tom Jarod."),
        ("Sergeant jarred.", "Sergeant jarred."),  # jar's past tense, as English doubles it: the title's verb
        ("Sergeant raised.", "Sergeant raised."),
    ],
)
def test_a_name_in_ed_english_would_double_after_a_title_is_no_past_tense(text: str, fixed: str) -> None:
    """ "Jared" ending the line after a title was read as a past tense of "jar", whose past is "jarred": a
    one-syllable stem ending in consonant, vowel, consonant doubles it before "ed", so the misheard name ends there."""
    matcher = PhoneticMatcher(PhoneticIndex.build([EntityName(id=1, name="Sergeant Tom Jarod", aliases=["Jarod"])]))
    assert corrected(matcher, text) == fixed
