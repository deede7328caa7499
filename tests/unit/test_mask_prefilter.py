"""SecretMask skips a text holding none of its names' first words: the answer is the same as the pattern's."""

from __future__ import annotations

import re

import pytest

from memory.graph import SecretMask

NAMES = ["Vaskerrin Holt", "Vaskerrin", "Mr. Mistoffelees", "Vex'ahlia", "'Tis Himself", "Straße"]
TEXTS = [
    "nothing secret here at all",
    "VASKERRIN   holt waits",
    "vaskerrinholt is one word, not the name",
    "Ask mr. mistoffelees, or Mr.Mistoffelees",
    "the ranger vex'ahlia and Vex'Ahlia",
    "as 'tis himself said",
    "the vaſkerrin with a long s",  # IGNORECASE equates ſ and s
    "STRASSE and straße",
    "",
]


@pytest.mark.parametrize("text", TEXTS)
def test_same_answer_as_the_pattern_alone(text: str) -> None:
    mask = SecretMask(NAMES)
    spellings = sorted(set(NAMES), key=len, reverse=True)
    words = (r"\s+".join(map(re.escape, n.split())) for n in spellings)
    pattern = re.compile("|".join(rf"(?<!\w){w}(?!\w)" for w in words), re.IGNORECASE)
    assert mask(text) == pattern.sub(SecretMask.MASK, text)


def test_a_name_without_word_characters_is_always_searched() -> None:
    assert SecretMask(["???", "Holt"])("who said ??? to them") == "who said [secret] to them"


def test_random_texts_of_name_words_answer_as_the_pattern() -> None:
    import random

    rng = random.Random(3)
    names = ["Holt", "Vaskerrin Holt", "Holt Vaskerrin", "the Grey", "Grey Lady of Holt", "Ank'harel", "Mr. Pike"]
    mask = SecretMask(names)
    spellings = sorted(set(names), key=len, reverse=True)
    spaced = (r"\s+".join(map(re.escape, n.split())) for n in spellings)
    pattern = re.compile("|".join(rf"(?<!\w){w}(?!\w)" for w in spaced), re.IGNORECASE)
    pieces = ["holt", "Vaskerrin", "the", "grey", "Lady", "of", "ank'harel", "Ank", "harel", "mr.", "Pike", ",", "x"]
    for _ in range(2000):
        text = " ".join(rng.choice(pieces) for _ in range(rng.randrange(1, 9)))
        assert mask(text) == pattern.sub(SecretMask.MASK, text), text
