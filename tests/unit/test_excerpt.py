"""What a long line shows of itself where the command line has room for a part: the part naming the entity."""

from __future__ import annotations

import pytest

from memory.text import clip, excerpt

NARRATION = (
    "At this point, as you're running, you're rushing forward. To the left of your ear, you hear a thud and you "
    "glance over your shoulder. And there, face down on the ground, is Delilah, sprawled out, face down in the dirt "
    "with a single dagger sticking out of the center of her back."
)


def test_a_short_line_is_shown_whole() -> None:
    assert excerpt("I yell, Delilah's getting away!", ["Delilah"], 100) == "I yell, Delilah's getting away!"


def test_the_part_shown_names_the_entity_and_is_cut_between_words() -> None:
    shown = excerpt(NARRATION, ["Delilah Briarwood", "Delilah", "Lady Briarwood"], 100)
    assert len(shown) <= 100
    assert "is Delilah, sprawled out" in shown
    assert shown.startswith("…") and shown.endswith("…")
    inner = shown.strip("…")
    assert f" {inner} " in f" {NARRATION} "  # whole words only: none cut in half


def test_a_possessive_or_plural_counts_and_case_does_not_matter() -> None:
    line = "x " * 80 + "The Briarwoods are dead. " + "y " * 80
    assert "The Briarwoods are dead." in excerpt(line, ["briarwood"], 80)


def test_a_line_not_naming_it_is_shown_from_its_start() -> None:
    shown = excerpt(NARRATION, ["Vax"], 60)
    assert shown.startswith("At this point") and shown.endswith("…") and len(shown) <= 60


def test_the_end_of_the_line_is_shown_without_an_ellipsis_there() -> None:
    shown = excerpt(NARRATION, ["dagger"], 100)
    assert shown.startswith("…") and shown.endswith("center of her back.") and len(shown) <= 100


def test_an_event_named_for_what_befell_a_name_shows_where_the_line_says_that_name() -> None:
    """`review list` quoted the first 300 characters of a recap paragraph for the event 'Arrival at Whitestone
    Castle', which the paragraph says only halfway through, as "Whitestone Castle"."""
    line = "x " * 80 + "They made their way into Whitestone Castle, where they had uncovered the ziggurat. " + "y " * 80
    assert "into Whitestone Castle, where" in excerpt(line, ["Arrival at Whitestone Castle"], 80)
    assert "into Whitestone Castle, where" in excerpt(line, ["Siege of the Castle", "Whitestone Castle"], 80)
    # a name said whole comes first; a lower-case end ("the ziggurat") is no name to look for
    assert excerpt(line, ["Arrival at the ziggurat"], 80).startswith("x x")


def test_a_person_said_by_one_word_of_their_name_shows_where_the_line_says_it() -> None:
    """`review list` quoted the DM's "Welcome back. You guys are getting sloppy." for 'Bryce Feelid —took_part_in→
    Quest from Bryce Feelid' (CRD3 C2E006): the line names him "Watchmaster Bryce", half a page in."""
    line = "x " * 80 + "You were brought in by Watchmaster Bryce, who offered to pay you for gnoll ears. " + "y " * 80
    for names in (["Quest from Bryce Feelid"], ["Bryce Feelid", "Quest from Bryce Feelid"]):
        assert "Watchmaster Bryce, who offered" in excerpt(line, names, 80)


@pytest.mark.parametrize(
    ("text", "limit", "shown"),
    [
        ("The festival of Winter's Crest", 30, "The festival of Winter's Crest"),  # fits: whole
        ("The festival of Winter's Crest begins", 30, "The festival of Winter's…"),
        ("Mira, the smith of Ironhold", 12, "Mira, the…"),  # no comma before the ellipsis
        ("Ironhold\nMira the smith", 12, "Ironhold…"),  # a line break is between words too
        ("A Tarrasque-sized-description-with-no-spaces", 20, "A Tarrasque-sized-d…"),  # one long word: cut in it
    ],
)
def test_clip_cuts_between_words(text: str, limit: int, shown: str) -> None:
    assert clip(text, limit) == shown and len(shown) <= limit
