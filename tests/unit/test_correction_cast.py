"""Stage 1 and the session's cast: a name the transcript writes that sounds like a cast member's is theirs."""

from __future__ import annotations

import pytest

from memory.correction import EntityName, PhoneticIndex, PhoneticMatcher
from memory.correction.edits import apply_corrections

VAX, VEX, GROG, JESTER, FJORD, PIKE, MAXIMILIAN = 1, 2, 3, 4, 5, 6, 7
ENTITIES = [
    EntityName(id=VAX, name="Vax'ildan", aliases=["Vax"]),
    EntityName(id=VEX, name="Vex'ahlia", aliases=["Vex"]),
    EntityName(id=GROG, name="Grog Strongjaw", aliases=["Grog"]),
    EntityName(id=JESTER, name="Jester"),
    EntityName(id=FJORD, name="Fjord"),
    EntityName(id=PIKE, name="Pike"),
    EntityName(id=MAXIMILIAN, name="Maximilian"),
]
CAST = frozenset({VAX, GROG, JESTER, FJORD, PIKE})


@pytest.fixture(scope="module")
def matcher() -> PhoneticMatcher:
    return PhoneticMatcher(PhoneticIndex.build(ENTITIES))


def corrected(matcher: PhoneticMatcher, text: str, cast: frozenset[int] = CAST) -> str:
    return apply_corrections(text, matcher.correct(text, cast=cast).corrections)


def test_a_written_name_a_phone_off_a_cast_member_s_becomes_theirs(matcher: PhoneticMatcher) -> None:
    assert corrected(matcher, "Wait, Max, what was my role in this?") == "Wait, Vax'ildan, what was my role in this?"
    assert corrected(matcher, "Then Rex walks in.", CAST | {VEX}) == "Then Vex'ahlia walks in."
    assert corrected(matcher, "Oh, Chester's going to fight him.") == "Oh, Jester's going to fight him."
    [c] = matcher.correct("Give it to Max.", cast=CAST).corrections
    assert (c.span, c.replacement, c.entity_id, c.stage) == ("Max", "Vax'ildan", VAX, 1)


def test_without_the_cast_or_outside_it_the_written_name_stays(matcher: PhoneticMatcher) -> None:
    for text in ["Wait, Max, what was my role in this?", "Oh, Chester's going to fight him."]:
        assert matcher.correct(text).corrections == [], text
        assert matcher.correct(text, cast=frozenset({GROG, PIKE})).corrections == [], text


def test_near_misses_are_left_alone(matcher: PhoneticMatcher) -> None:
    for text in [
        "You deal max damage with that.",  # not written as a name
        "Max is the name of my dog.",  # capitalised because it starts the sentence
        "Oh, Rob's going to fight him.",  # two phones off Grog
        "Ask Mike about it.",  # a phone off Pike, a name too short to tell from words
        "Then Maximilian walks in.",  # another entity's name, written
        "I talk to Ford about the ship.",  # a phone shorter than Fjord: a nickname is said so ("Perce", "Kash")
        "It's like a Chester Gilliam movie.",  # one word of a longer name
        "We ride to the Tower of Chester.",
        "Our friends at Max & Shield sent it.",
        "I move my Max to the other one.",  # a thing of mine, not a person
        "We were with MAX all night.",  # all capitals say nothing
    ]:
        assert corrected(matcher, text) == text, text


def test_two_cast_members_as_near_leave_it_as_written(matcher: PhoneticMatcher) -> None:
    # "Vix" is a phone off both Vax and Vex: no prior tells them apart.
    assert corrected(matcher, "Then Vix runs.", CAST | {VEX}) == "Then Vix runs."
    assert corrected(matcher, "Then Vix runs.", CAST) == "Then Vax'ildan runs."


def test_the_speakers_own_names_are_never_corrected(matcher: PhoneticMatcher) -> None:
    """A player called Max at the table is Max, not Vax'ildan; another written name still is the cast's."""
    text = "Max, roll for it. Then Rex walks in."
    assert corrected(matcher, text, CAST | {VEX}) == "Max, roll for it. Then Vex'ahlia walks in."
    people = frozenset({"max"})
    fixed = apply_corrections(text, matcher.correct(text, cast=CAST | {VEX}, people=people).corrections)
    assert fixed == "Max, roll for it. Then Vex'ahlia walks in."
    assert corrected(matcher, "Give it to Max.") == "Give it to Vax'ildan."
    assert matcher.correct("Give it to Max.", cast=CAST, people=people).corrections == []
