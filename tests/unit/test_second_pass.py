"""Which names a line is heard again with: those its words nearly sound like and the prompt left out
(``PhoneticMatcher.nearly_heard``, ``memory.voice.prompt``); no model here (the real one: test_stt_real)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from memory.correction import EntityName, PhoneticIndex, PhoneticMatcher
from memory.correction.text import tokenize
from memory.providers.stt import Transcript, Word
from memory.voice.prompt import SECOND_PASS_NAMES, StaticNames, names_nearly_heard, transcribe_heard

YEENOGHU, JMON, GNOLL, NOBLES, HANNAH, VAX, ELDRINAX = 1, 2, 3, 4, 5, 6, 7
ENTITIES = [
    EntityName(id=YEENOGHU, name="Yeenoghu"),
    EntityName(id=JMON, name="J'mon Sa Ord"),
    EntityName(id=GNOLL, name="Gnoll", aliases=["Gnolls"]),
    EntityName(id=NOBLES, name="New Nobles"),
    EntityName(id=HANNAH, name="Hannah"),
    EntityName(id=VAX, name="Vax'ildan", aliases=["Vax"]),
    EntityName(id=ELDRINAX, name="Eldrinax"),
]


@pytest.fixture(scope="module")
def matcher() -> PhoneticMatcher:
    return PhoneticMatcher(PhoneticIndex.build(ENTITIES))


def nearly(matcher: PhoneticMatcher, text: str, prompted: Sequence[str] = (), sure: float | None = None) -> list[str]:
    confidences = None if sure is None else [sure] * len(tokenize(text))
    return [f.canonical for f in matcher.nearly_heard(text, prompted, confidences)]


def test_an_uncommon_word_or_a_doubted_run_near_an_unprompted_name_asks_for_it(matcher: PhoneticMatcher) -> None:
    assert nearly(matcher, "Jamon Sword, as you know.", sure=0.9) == ["J'mon Sa Ord"]  # "jamon": not English
    assert nearly(matcher, "The elder nacks sleeps.", sure=0.9)[0] == "Eldrinax"  # "nacks" is near Vax too
    # ordinary words, but the recogniser doubted them
    assert nearly(matcher, "A series of notes from their pocket. You not who?", sure=0.3) == ["Yeenoghu"]


def test_ordinary_words_heard_surely_ask_for_nothing(matcher: PhoneticMatcher) -> None:
    for text in ["A series of notes from their pocket. You not who?", "Does he have a tiny armor mouse?"]:
        assert nearly(matcher, text, sure=0.95) == [], text
        assert nearly(matcher, text) == [], text  # no confidences: no doubt either


def test_a_name_the_prompt_holds_or_the_text_writes_is_not_asked_for(matcher: PhoneticMatcher) -> None:
    assert nearly(matcher, "Jamon Sword, as you know.", ["Vax", "J'mon Sa Ord"]) == []
    assert nearly(matcher, "Eldrinax sleeps.", sure=0.3) == []  # written already
    # one of an entity's names in the prompt is enough: the recogniser knows the entity
    assert nearly(matcher, "Some of these nobles were undead.", ["Gnolls"], sure=0.3) == []


def test_a_word_of_the_name_said_is_no_mishearing_of_it(matcher: PhoneticMatcher) -> None:
    # "nobles" is a word of New Nobles, said as such; it sounds near Gnolls, which is asked for
    assert nearly(matcher, "Some of these nobles were undead.", sure=0.3) == ["Gnoll"]


def test_what_the_dm_said_is_never_the_name_is_not_asked_for() -> None:
    told = EntityName(id=ELDRINAX, name="Eldrinax", not_heard_as=["elder nacks"])
    matcher = PhoneticMatcher(PhoneticIndex.build([told, EntityName(id=JMON, name="J'mon Sa Ord")]))
    assert nearly(matcher, "The elder nacks sleeps.", sure=0.3) == []
    assert nearly(matcher, "The elder nax sleeps.", sure=0.3) == ["Eldrinax"]


def test_the_closest_names_come_first_and_at_most_the_limit(matcher: PhoneticMatcher) -> None:
    text = "Jamon Sword, the elder nacks and you not who?"
    found = matcher.nearly_heard(text, (), [0.3] * len(tokenize(text)), limit=2)
    assert len(found) == 2
    assert [f.canonical for f in matcher.nearly_heard(text, (), [0.3] * len(tokenize(text)), limit=5)][:2] == [
        f.canonical for f in found
    ]
    words = [Word(word=w, start=0.0, end=0.1, confidence=0.3) for w in text.split()]
    names = names_nearly_heard(matcher, Transcript(text=text, words=words, duration=1.0), ())
    assert names == ["Eldrinax", "Vax", "Yeenoghu"][:SECOND_PASS_NAMES]  # each as the name or alias it sounds like


class Recogniser:
    """Writes a name only when its prompt has it: as a recogniser verifying what the audio says."""

    def __init__(self) -> None:
        self.prompts: list[list[str]] = []

    async def transcribe(self, pcm: np.ndarray, *, prompt_names: Sequence[str] = ()) -> Transcript:
        self.prompts.append(list(prompt_names))
        text = "Yeenoghu." if "Yeenoghu" in prompt_names else "You not who?"
        return Transcript(text=text, words=[Word(word=text, start=0.0, end=0.5, confidence=0.3)], duration=1.0)


class Nearly(StaticNames):
    def __init__(self, matcher: PhoneticMatcher) -> None:
        super().__init__()
        self.matcher = matcher

    def nearly_heard(self, heard: Transcript, prompted: Sequence[str]) -> Sequence[str]:
        return names_nearly_heard(self.matcher, heard, prompted)


async def test_a_line_is_heard_again_with_the_names_nearly_heard_first(matcher: PhoneticMatcher) -> None:
    pcm = np.zeros(16_000, dtype=np.float32)
    stt = Recogniser()
    heard = await transcribe_heard(stt, pcm, Nearly(matcher), ["Vax"])
    assert heard.text == "Yeenoghu."
    assert stt.prompts == [["Vax"], ["Yeenoghu", "Vax"]]

    stt = Recogniser()  # a name source that finds none (the default): one pass
    assert (await transcribe_heard(stt, pcm, StaticNames(["Vax"]), ["Vax"])).text == "You not who?"
    assert stt.prompts == [["Vax"]]
