"""The salience gate: table talk and dice skip extraction, anything that may carry a fact does not."""

from __future__ import annotations

import pytest

from memory.extraction.salience import is_trivial


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "...",
        "ok",
        "Okay.",
        "lol",
        "hahaha",
        "LMAO",
        "Hi everyone!",
        "hey guys, good evening",
        "thanks, see you next week",
        "17",
        "nat 20!",
        "Natural 20",
        "I rolled a 12",
        "rolled a 12 to hit",
        "that's 17 plus 3",
        "2d6",
        "go left",
        "me next",
        "Sure, why not",
        "Yeah yeah",
    ],
)
def test_trivial_turns(text: str) -> None:
    assert is_trivial(text)


@pytest.mark.parametrize(
    "text",
    [
        "Korvash!",
        "Ask Brom",
        "the blacksmith lives in the old mill by the river",
        "You meet a dwarf named Korvash.",
        "I rolled a 12 and Eldrinax still hit me",
        "The king of Ironhold is dead.",
        "We should go back to the tavern and ask about the missing caravan",
    ],
)
def test_meaningful_turns(text: str) -> None:
    assert not is_trivial(text)
