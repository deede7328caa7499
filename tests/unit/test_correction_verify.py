"""Stage 2's verify step on its own: which of a model's declared fixes may stand."""

from __future__ import annotations

from memory.correction import EntityName, PhoneticIndex
from memory.correction.llm import LLMCorrection, LLMCorrector, Substitution


def _verify(names: list[EntityName], text: str, doubtful: str, answer: str, *subs: tuple[str, str]) -> str:
    stage2 = LLMCorrector(None, PhoneticIndex.build(names))  # type: ignore[arg-type]  # verify asks nothing
    start = text.index(doubtful)
    declared = LLMCorrection(text=answer, substitutions=[Substitution(heard=h, entity=e) for h, e in subs])
    fixes = stage2.verify(text, [(start, start + len(doubtful))], declared)
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
