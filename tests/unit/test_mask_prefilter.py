"""SecretMask searches a text only for the names whose words it holds: the answer is the same as the pattern's of
every name."""

from __future__ import annotations

import pytest

from memory.graph import SecretMask


def _whole(mask: SecretMask, text: str) -> str:
    """``text`` masked by the one pattern of every name, no name skipped."""
    return mask._hidden(text, mask._spans(text, mask._pattern))


NAMES = ["Vaskerrin Holt", "Vaskerrin", "Mr. Mistoffelees", "Vex'ahlia", "'Tis Himself", "Straße"]
TEXTS = [
    "nothing secret here at all",
    "VASKERRIN   holt waits",
    "vaskerrinholt is one word, not the name",
    "Ask mr. mistoffelees, or Mr.Mistoffelees",
    "the ranger vex'ahlia and Vex'Ahlia",
    "as 'tis himself said",
    "the vaſkerrin with a long s",  # folded: ſ is s
    "Vel Ashkar, the Vaskerrins' holt, Ank harel",
    "STRASSE and straße",
    "",
]


@pytest.mark.parametrize("text", TEXTS)
def test_same_answer_as_the_pattern_alone(text: str) -> None:
    mask = SecretMask(NAMES)
    assert mask(text) == _whole(mask, text)


def test_a_name_without_word_characters_is_always_searched() -> None:
    assert SecretMask(["???", "Holt"])("who said ??? to them") == "who said [secret] to them"


def test_random_texts_of_name_words_answer_as_the_pattern() -> None:
    import random

    rng = random.Random(3)
    names = ["Holt", "Vaskerrin Holt", "Holt Vaskerrin", "the Grey", "Grey Lady of Holt", "Ank'harel", "Mr. Pike"]
    mask = SecretMask([*names, "Vel-Ashkâr", "Ðáin"])
    pieces = ["holt", "Vaskerrin", "the", "grey", "Lady", "of", "ank'harel", "Ank", "harel", "mr.", "Pike", ",", "x"]
    pieces += ["Vel", "-", "ashkar", "velashkâr", "dain", "Ðáins", "Ank’harel"]
    for _ in range(2000):
        text = rng.choice(["", " "]).join(rng.choice(pieces) for _ in range(rng.randrange(1, 9)))
        assert mask(text) == _whole(mask, text), text
