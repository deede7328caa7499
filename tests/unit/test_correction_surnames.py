"""Stage 1 and a person's last name alone: words said as one, where a name is said, are that person's."""

from __future__ import annotations

import pytest

from memory.correction import EntityName, PhoneticIndex, PhoneticMatcher
from memory.correction.edits import apply_corrections

WHITLOCK, MARSH, ABERNATHY, BLACKWOOD, SHOP, STORMWIND = 1, 2, 3, 4, 5, 6
ENTITIES = [
    EntityName(id=WHITLOCK, name="Edgar Whitlock", person=True),
    EntityName(id=MARSH, name="Silas Marsh", person=True),
    EntityName(id=ABERNATHY, name="Dr. Ada Abernathy", person=True),
    EntityName(id=BLACKWOOD, name="Tom Blackwood", person=True),
    EntityName(id=SHOP, name="Whitlock's Books"),
    EntityName(id=STORMWIND, name="Tiberius Stormwind", person=True),
]


@pytest.fixture(scope="module")
def matcher() -> PhoneticMatcher:
    return PhoneticMatcher(PhoneticIndex.build(ENTITIES))


def corrected(matcher: PhoneticMatcher, text: str) -> str:
    return apply_corrections(text, matcher.correct(text).corrections)


@pytest.mark.parametrize(
    ("text", "fixed"),
    [
        ("Whit lock. Got it.", "Whitlock. Got it."),  # alone
        ('Whit lock says, "Goodnight."', 'Whitlock says, "Goodnight."'),  # speaking
        ("Whit lock, you're lying.", "Whitlock, you're lying."),  # spoken to
        ("We asked Whit lock about the papers.", "We asked Whitlock about the papers."),  # written as a name
        ("mister whit lock, did a young woman come here?", "mister Whitlock, did a young woman come here?"),
        ("Aber nathy nods.", "Abernathy nods."),  # spelled, though said otherwise
    ],
)
def test_words_said_as_a_persons_last_name_where_a_name_is_said_are_that_name(
    matcher: PhoneticMatcher, text: str, fixed: str
) -> None:
    """A last name alone is no form of the name (most are everyday English: Crane, Marsh), and split in two it is
    two everyday words ("whit", "lock"); said where a name is, they are what the recogniser made of it."""
    result = matcher.correct(text)
    assert apply_corrections(text, result.corrections) == fixed
    assert [c.entity_id for c in result.corrections] in ([WHITLOCK], [ABERNATHY])


@pytest.mark.parametrize(
    "text",
    [
        "then whit lock opens the door.",  # inside a sentence, no capital: nothing says a name
        "The whit lock is broken.",  # after a determiner: a noun
        "Black wood.",  # everyday words only: what was said
        "We camp in Black Wood.",  # a capital on each word: the transcript's own name
        "Storm wind rises.",  # a thing's verb
        "Whit lock opens the door.",  # nor is this one a person's alone
        "Whitlock opens the door.",  # said right
    ],
)
def test_words_like_a_last_name_not_said_as_a_name_stay_as_said(matcher: PhoneticMatcher, text: str) -> None:
    assert matcher.correct(text).corrections == [], text


def test_only_a_persons_own_last_name_counts() -> None:
    """Not a place's last word, nor a last name two people share: neither names one person."""
    shared = [EntityName(id=1, name="Edgar Whitlock", person=True), EntityName(id=2, name="Mary Whitlock", person=True)]
    place = [EntityName(id=1, name="Edgar Whitlock")]
    for entities in (shared, place):
        matcher = PhoneticMatcher(PhoneticIndex.build(entities))
        assert matcher.correct("Whit lock nods.").corrections == []


def test_words_the_dm_said_are_never_the_name_stay_as_said() -> None:
    """`session names` offers ``--not-heard-as "whit lock"`` for a wrong one: it holds here too."""
    refused = EntityName(id=WHITLOCK, name="Edgar Whitlock", person=True, not_heard_as=["whit lock"])
    assert PhoneticMatcher(PhoneticIndex.build([refused])).correct("Whit lock nods.").corrections == []
