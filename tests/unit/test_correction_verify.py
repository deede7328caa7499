"""Stage 2's verify step on its own: which of a model's declared fixes may stand."""

from __future__ import annotations

import pytest

from memory.correction import EntityName, PhoneticIndex
from memory.correction.llm import (
    COMMON_WORDS,
    LLMCorrection,
    LLMCorrector,
    Substitution,
    _common_words_may_be,
    _doubted,
)
from memory.correction.text import tokenize


def _verify(
    names: list[EntityName],
    text: str,
    doubtful: str,
    answer: str,
    *subs: tuple[str, str],
    heard_at: float | None = None,
) -> str:
    """``heard_at``: the recogniser's confidence in the doubtful words (the others at 0.95); None: unknown."""
    stage2 = LLMCorrector(None, PhoneticIndex.build(names))  # type: ignore[arg-type]  # verify asks nothing
    start = text.index(doubtful)
    end = start + len(doubtful)
    declared = LLMCorrection(text=answer, substitutions=[Substitution(heard=h, entity=e) for h, e in subs])
    confidences: list[float | None] | None = None
    if heard_at is not None:
        confidences = [heard_at if start <= t.start < end else 0.95 for t in tokenize(text)]
    fixes = stage2.verify(text, [(start, end)], declared, confidences)
    for c in sorted(fixes, key=lambda c: c.start, reverse=True):
        text = text[: c.start] + c.replacement + text[c.end :]
    return text


def test_a_name_with_a_possessive_inside_can_be_declared() -> None:
    names = [EntityName(id=1, name="Slayer's Take"), EntityName(id=2, name="Vex'ahlia", aliases=["Vex's Broom"])]
    text = "we went to slay her stake today"
    answer = "we went to Slayer's Take today"
    assert _verify(names, text, "slay her stake", answer, ("slay her stake", "Slayer's Take")) == answer
    # an alias with one maps to its entity's name
    text = "she rode the vexes brume home"
    answer = "she rode the Vex's Broom home"
    assert _verify(names, text, "vexes brume", answer, ("vexes brume", "Vex's Broom")) == "she rode the Vex'ahlia home"


def test_a_name_guessed_from_context_is_not_a_name_misheard() -> None:
    """Stage 2 fixes names the recogniser misheard; "the old man" does not sound like Vaskerrin Holt, whoever
    the model thinks he is (a secret name written there would tell players who he is)."""
    names = [EntityName(id=1, name="Vaskerrin Holt", aliases=["The Pale Magister"]), EntityName(id=2, name="Frumpkin")]
    text = "I think the old man is following us, from skin"
    answer = "I think Vaskerrin Holt is following us, Frumpkin"
    fixed = _verify(names, text, text, answer, ("the old man", "Vaskerrin Holt"), ("from skin", "Frumpkin"))
    assert fixed == "I think the old man is following us, Frumpkin"


def test_ordinary_words_need_a_close_sound_of_a_long_enough_name() -> None:
    """A model renames ordinary words to any name that sounds near ("you fools" / Jules): one sound off a name of
    four is no evidence; said exactly like it (Emon), or one sound off a long name (Frumpkin), is."""
    names = [EntityName(id=i, name=n) for i, n in enumerate(["Jules", "Yasha", "Emon", "Frumpkin"], 1)]
    for heard, name in (("fools", "Jules"), ("sasha", "Yasha")):
        text = f"go on, {heard}"
        assert _verify(names, text, heard, f"go on, {name}", (heard, name)) == text
    for heard, name in (("im on", "Emon"), ("from skin", "Frumpkin")):
        text = f"go on, {heard}"
        assert _verify(names, text, heard, f"go on, {name}", (heard, name)) == f"go on, {name}"
    # an uncommon word is judged by its sound alone, as before
    assert _verify(names, "go on, yasher", "yasher", "go on, Yasha", ("yasher", "Yasha")) == "go on, Yasha"


def test_a_phrase_the_dm_says_is_never_the_name_is_not_made_it() -> None:
    """ "manta ray" is never Mentiri (the DM said so): the model's substitution is reverted, whatever it thinks;
    another phrase of the line still becomes the name."""
    names = [EntityName(id=1, name="Mentiri", not_heard_as=["manta ray"])]
    text = "a manta ray swims past men teary"
    answer = "a Mentiri swims past Mentiri"
    subs = (("manta ray", "Mentiri"), ("men teary", "Mentiri"))
    assert _verify(names, text, text, answer, *subs) == "a manta ray swims past Mentiri"
    allowed = [EntityName(id=1, name="Mentiri")]
    assert _verify(allowed, text, text, answer, *subs) == "a Mentiri swims past Mentiri"


def test_a_plural_keeps_its_s_outside_the_name_as_in_stage_1() -> None:
    names = [EntityName(id=1, name="Quelloth"), EntityName(id=2, name="Frumpkin"), EntityName(id=3, name="Nicodranas")]
    text = "the kwellows attack"
    # the model writes the plural, declaring the name either way
    for declared in ("Quelloth", "Quelloths"):
        assert (
            _verify(names, text, "kwellows", "the Quelloths attack", ("kwellows", declared)) == "the Quelloths attack"
        )
    # the model writes the singular: the "s" is kept where the words sound nearer the name without it ...
    assert _verify(names, "two from skins", "from skins", "two Frumpkin", ("from skins", "Frumpkin")) == "two Frumpkins"
    # ... not where it may be a sound of the name ("kwellows" is as near Quelloth as "kwellow"), nor where the name
    # ends in one, nor on a word with no "s"
    assert _verify(names, text, "kwellows", "the Quelloth attack", ("kwellows", "Quelloth")) == "the Quelloth attack"
    answer = "off to Nicodranas"
    assert _verify(names, "off to nick a dramas", "nick a dramas", answer, ("nick a dramas", "Nicodranas")) == answer
    assert _verify(names, "we met kwellow", "kwellow", "we met Quelloths", ("kwellow", "Quelloth")) == "we met Quelloth"


SHORT = [EntityName(id=i, name=n) for i, n in enumerate(["Jules", "Yasha", "Kord", "Krix", "Frumpkin"], 1)]


def test_a_doubted_ordinary_word_may_be_a_name_of_five_sounds_said_nearly_like_it() -> None:
    """One phone off a name of five is no evidence in an ordinary word the recogniser was sure of (or gave no
    confidence for); when it doubted the word, the sound is evidence enough if no other name sounds as near."""
    text, fixed, said = "the ice cracks under him", "the ice Krix under him", ("cracks", "Krix")
    assert _verify(SHORT, text, "cracks", fixed, said, heard_at=0.3) == fixed
    for sure in (None, 0.9, 0.6):  # unknown; sure; unsure, but above stage 1's doubt (0.5)
        assert _verify(SHORT, text, "cracks", fixed, said, heard_at=sure) == text
    # another entity said as near the word: the sound cannot tell them apart, and the model's word is no evidence
    rival = [*SHORT, EntityName(id=9, name="Krecks")]
    assert _verify(rival, text, "cracks", fixed, said, heard_at=0.3) == text
    # the same spelling under two entities is no rival ("Krix" and "Krix the Bold" with that alias)
    twin = [*SHORT, EntityName(id=12, name="Krix the Bold", aliases=["Krix"])]
    assert _verify(twin, text, "cracks", fixed, said, heard_at=0.3) == fixed


@pytest.mark.parametrize(("heard", "name"), [("sasha", "Yasha"), ("card", "Kord"), ("fools", "Jules")])
def test_a_doubted_ordinary_word_one_sound_off_a_name_of_four_stays(heard: str, name: str) -> None:
    """ "card" may be Kord as "fools" may be Jules: one sound off a name of four, doubt does not tell a misheard
    name from an ordinary word, so the word stays as said (the DM can teach it with a heard-as phrase)."""
    text = f"go on, {heard}, now"
    assert _verify(SHORT, text, heard, f"go on, {name}, now", (heard, name), heard_at=0.3) == text


def test_doubt_does_not_make_a_distant_name_of_an_ordinary_word() -> None:
    """Doubted or not, a wrong name said less like the words than the right one is reverted ("cracks" is not
    Kord), and so is a name two phones off a short one."""
    for wrong in ("Kord", "Jules", "Yasha"):
        answer = f"the ice {wrong} under him"
        assert _verify(SHORT, "the ice cracks under him", "cracks", answer, ("cracks", wrong), heard_at=0.2) == (
            "the ice cracks under him"
        )


def test_doubt_does_not_make_a_name_of_a_function_word_or_a_form_of_the_name() -> None:
    """As in stage 1: "not" is never Nott, nor "character" Characters, however doubted."""
    names = [EntityName(id=1, name="Nott"), EntityName(id=2, name="Characters")]
    for heard, name in (("not", "Nott"), ("character", "Characters")):
        text = f"it is {heard} here"
        assert _verify(names, text, heard, f"it is {name} here", (heard, name), heard_at=0.2) == text


def test_the_rule_reads_doubt_as_stage_1_does() -> None:
    assert _doubted([0.3, 0.6], COMMON_WORDS)  # the span as a whole: 0.45 on average
    assert not _doubted([0.3, 0.8], COMMON_WORDS)
    assert not _doubted([0.3, None], COMMON_WORDS)  # a word of unknown confidence is no doubt
    assert not _doubted([], COMMON_WORDS)
    index = PhoneticIndex.build(SHORT)
    [krix] = [f for f in index.forms if f.canonical == "Krix"]
    assert not _common_words_may_be(["cracks"], krix, doubted=False, index=index)
    assert _common_words_may_be(["cracks"], krix, doubted=True, index=index)
    [yasha] = [f for f in index.forms if f.canonical == "Yasha"]
    assert not _common_words_may_be(["sasha"], yasha, doubted=True, index=index)  # a name of four: exact only
    assert _common_words_may_be(["yasher"], yasha)  # not ordinary English: ``_sounds_like`` judges it


def test_a_name_may_keep_a_word_as_it_was_heard() -> None:
    """ "vox machine a" is Vox Machina though the model's text keeps "vox" as it was; a word the model kept
    outside the name it wrote ("the" of "the from skin") is not made part of the name."""
    names = [
        EntityName(id=1, name="Vox Machina"),
        EntityName(id=2, name="Frumpkin"),
        EntityName(id=3, name="Lady Kima"),
    ]
    text = "so vox machine a rode on"
    answer = "so Vox Machina rode on"
    assert _verify(names, text, "vox machine a", answer, ("vox machine a", "Vox Machina")) == answer
    text = "we met lady coma there"
    assert _verify(names, text, "lady coma", "we met Lady Kima there", ("lady coma", "Lady Kima")) == (
        "we met Lady Kima there"
    )
    text = "and the from skin flies"
    assert _verify(names, text, text, "and the Frumpkin flies", ("the from skin", "Frumpkin")) == text
    assert _verify(names, text, text, "and the Frumpkin flies", ("from skin", "Frumpkin")) == "and the Frumpkin flies"
