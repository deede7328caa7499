"""Stage 2 through the real ``openai`` client against the fake OpenAI server: only verified fixes stand."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from itertools import product

import pytest
import pytest_asyncio

from memory.correction import EntityName, MatchSettings, Pipeline
from memory.correction.llm import answer_cap
from memory.providers.llm import OpenAILLM
from tests.fakes.openai_server import ChatReply, FakeHTTPError, FakeOpenAI

ENTITIES = [
    EntityName(id=1, name="Frumpkin"),
    EntityName(id=2, name="Vasselheim"),
    EntityName(id=3, name="Kord", aliases=["The Stormlord"]),
]
# "from skin" is doubted by the recogniser but stage 1 needs more than 0.99 on a doubted phrase here, so the
# span reaches stage 2.
STRICT = MatchSettings(doubtful_phrase_threshold=0.99)
TEXT = "so from skin flew over the card table"
WORDS = [
    ("so", 0.95),
    ("from", 0.3),
    ("skin", 0.35),
    ("flew", 0.9),
    ("over", 0.95),
    ("the", 0.97),
    ("card", 0.4),
    ("table", 0.9),
]


@pytest_asyncio.fixture
async def pipeline(fake_openai: FakeOpenAI) -> AsyncIterator[Pipeline]:
    llm = OpenAILLM(fake_openai.base_url, fake_openai.api_key, "fake-model", max_retries=0)
    yield Pipeline(ENTITIES, settings=STRICT, llm=llm)
    await llm.aclose()


def _answer(text: str, *subs: tuple[str, str]) -> str:
    return json.dumps({"text": text, "substitutions": [{"heard": h, "entity": e} for h, e in subs]})


async def test_a_declared_fix_of_a_doubtful_span_is_applied(pipeline: Pipeline, fake_openai: FakeOpenAI) -> None:
    fake_openai.queue_chat(_answer("so Frumpkin flew over the card table", ("from skin", "Frumpkin")))
    result = await pipeline.correct(TEXT, WORDS)
    assert result.text == "so Frumpkin flew over the card table"
    assert result.raw_text == TEXT
    [c] = result.corrections
    assert (c.span, c.replacement, c.entity_id, c.stage, c.start, c.end) == ("from skin", "Frumpkin", 1, 2, 3, 12)
    [request] = fake_openai.chat_requests
    assert request["temperature"] == 0.1
    assert request["response_format"]["type"] == "json_schema"
    sent = json.loads(request["messages"][1]["content"])
    assert sent["doubtful_spans"] == ["from skin", "card"]
    assert "Frumpkin" in sent["entities"]


async def test_a_hostile_answer_is_reverted_except_the_declared_fixes(
    pipeline: Pipeline, fake_openai: FakeOpenAI
) -> None:
    hostile = _answer(
        "So Frumpkin soared above the Kord table, obviously!",
        ("from skin", "Frumpkin"),
        ("flew over", "soared above"),
        ("card", "Kord"),
    )
    fake_openai.queue_chat(hostile)
    result = await pipeline.correct(TEXT, WORDS)
    # "card" → Kord is reverted though the recogniser doubted "card" (0.4): one sound off a name of four is
    # what "fools" is to Jules. The rewording, the added word and the capital S are all reverted.
    assert result.text == "so Frumpkin flew over the card table"
    assert [(c.span, c.replacement) for c in result.corrections] == [("from skin", "Frumpkin")]
    # heard confidently, "card" is no doubtful span: the model is asked about "from skin" only
    fake_openai.queue_chat(hostile)
    sure = [(w, 0.9 if w == "card" else c) for w, c in WORDS]
    result = await pipeline.correct(TEXT, sure)
    assert json.loads(fake_openai.chat_requests[-1]["messages"][1]["content"])["doubtful_spans"] == ["from skin"]
    assert result.text == "so Frumpkin flew over the card table"


#: The issue's endpoint: ordinary words renamed to the campaign's short names (4 of 5 stage-2 corrections
#: wrong), beside one right fix.
HOSTILE = [
    ("Get on the damn carpet, you fools!", "fools", "Jules"),
    ("That does not fit us at all", "fit us", "Fitz"),
    ("They fire the canon again", "canon", "Karen"),
    ("The ice cracks under him", "cracks", "Krix"),
    ("And from skin flies off", "from skin", "Frumpkin"),
]


async def _hostile_run(
    fake_openai: FakeOpenAI, text: str, heard: str, name: str, heard_at: float | None
) -> tuple[str, list[str]]:
    """The corrected text, and the doubtful spans stage 2 was asked about; ``heard_at``: the recogniser's
    confidence in the heard words (the others at 0.95), None for a transcript with none."""
    names = [EntityName(id=i, name=n) for i, (_, _, n) in enumerate(HOSTILE)]
    llm = OpenAILLM(fake_openai.base_url, fake_openai.api_key, "fake-model", max_retries=0)
    pipeline = Pipeline(names, settings=STRICT, llm=llm)
    said = text.replace(",", "").replace("!", "").split()
    words = None if heard_at is None else [(w, heard_at if w in heard.split() else 0.95) for w in said]
    fake_openai.queue_chat(_answer(text.replace(heard, name), (heard, name)))
    try:
        result = await pipeline.correct(text, words)
    finally:
        await llm.aclose()
    asked = fake_openai.chat_requests
    return result.text, json.loads(asked[0]["messages"][1]["content"])["doubtful_spans"] if asked else []


@pytest.mark.parametrize(("text", "heard", "name"), HOSTILE)
async def test_ordinary_words_renamed_to_a_short_name_are_reverted(
    fake_openai: FakeOpenAI, text: str, heard: str, name: str
) -> None:
    """A transcript without word confidences: stage 1 hands stage 2 the words said near a name, and the model's
    word is no evidence that an ordinary word one sound off a short name is the name."""
    fixed, asked = await _hostile_run(fake_openai, text, heard, name, None)
    assert heard in " ".join(asked)  # stage 2 was asked about the words
    if name == "Frumpkin":  # eight sounds, one off: the sound is evidence enough
        assert fixed == text.replace(heard, name)
    else:
        assert fixed == text


@pytest.mark.parametrize(("text", "heard", "name"), HOSTILE)
async def test_with_word_confidences_only_words_the_recogniser_doubted_may_be_renamed(
    fake_openai: FakeOpenAI, text: str, heard: str, name: str
) -> None:
    """Heard confidently, the words are not asked about; doubted, a name of five sounds or more one sound off
    them that no other name sounds as near stands (Karen, Krix, Frumpkin): the recogniser's doubt is the evidence
    the sound lacks. A name of four sounds one off an ordinary word (Jules, Fitz) stays refused."""
    assert await _hostile_run(fake_openai, text, heard, name, 0.9) == (text, [])
    fixed, asked = await _hostile_run(fake_openai, text, heard, name, 0.3)
    assert heard in " ".join(asked)
    assert fixed == (text.replace(heard, name) if name not in ("Jules", "Fitz") else text)


async def test_undeclared_changes_and_non_entities_are_dropped(pipeline: Pipeline, fake_openai: FakeOpenAI) -> None:
    fake_openai.queue_chat(
        _answer("so Frumpkin flew over the Cardinal table", ("card", "Cardinal")),  # no entity; Frumpkin undeclared
    )
    result = await pipeline.correct(TEXT, WORDS)
    assert result.text == TEXT
    assert result.corrections == []


async def test_a_fix_outside_the_doubtful_spans_is_dropped(pipeline: Pipeline, fake_openai: FakeOpenAI) -> None:
    fake_openai.queue_chat(_answer("so from skin flew over Vasselheim card table", ("the", "Vasselheim")))
    result = await pipeline.correct(TEXT, WORDS)
    assert result.text == TEXT


@pytest.mark.parametrize("reply", ["not json at all", '{"text": 3}', FakeHTTPError(500, retry=False)])
async def test_a_failing_answer_leaves_the_text_unchanged(
    pipeline: Pipeline, fake_openai: FakeOpenAI, reply: object
) -> None:
    fake_openai.queue_chat(reply)  # type: ignore[arg-type]
    result = await pipeline.correct(TEXT, WORDS)
    assert result.text == TEXT
    assert result.corrections == []
    assert len(fake_openai.chat_requests) == 1


async def test_the_answer_is_capped_by_the_utterance_and_one_cut_off_there_changes_nothing(
    pipeline: Pipeline, fake_openai: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    cut = _answer("so Frumpkin flew over the card table", ("from skin", "Frumpkin"))[:40]
    fake_openai.queue_chat(ChatReply(content=cut, finish_reason="length"))
    result = await pipeline.correct(TEXT, WORDS)
    assert result.text == TEXT and result.corrections == []
    [request] = fake_openai.chat_requests
    assert request["max_tokens"] == answer_cap(TEXT, ["from skin", "card"])
    long_line = " ".join([TEXT] * 40)
    assert answer_cap(long_line, ["from skin"]) > answer_cap(TEXT, ["from skin"]) + len(long_line) // 3
    [warning] = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warning == (
        "stage 2 correction skipped: LLM answer was cut off at its cap of "
        f"{request['max_tokens']:,} tokens (finish_reason=length)"
    )


async def test_stage_1_fixes_stay_and_offsets_refer_to_the_raw_text(
    fake_openai: FakeOpenAI,
) -> None:
    llm = OpenAILLM(fake_openai.base_url, fake_openai.api_key, "fake-model", max_retries=0)
    pipeline = Pipeline(ENTITIES, settings=MatchSettings(doubtful_phrase_threshold=0.99), llm=llm)
    text = "in vassal high mm the from skin sleeps"
    words = [("in", 0.9), ("vassal", 0.9), ("high", 0.9), ("mm", 0.9), ("the", 0.9), ("from", 0.2), ("skin", 0.3)]
    words.append(("sleeps", 0.9))
    fake_openai.queue_chat(_answer("in Vasselheim the Frumpkin sleeps", ("from skin", "Frumpkin")))
    result = await pipeline.correct(text, words)
    await llm.aclose()
    assert result.text == "in Vasselheim the Frumpkin sleeps"
    stage1, stage2 = result.corrections
    assert (stage1.stage, stage2.stage) == (1, 2)
    assert text[stage2.start : stage2.end] == "from skin"
    sent = json.loads(fake_openai.chat_requests[0]["messages"][1]["content"])
    assert sent["utterance"] == "in Vasselheim the from skin sleeps"


async def test_the_recogniser_doubt_follows_the_words_past_stage_1_fixes(fake_openai: FakeOpenAI) -> None:
    """Stage 2 reads the stage-1 text: the confidences must stay with their words after "vassal high mm" became
    Vasselheim (three words one), so the doubted "cracks" may become Krix (a word heard at 0.9 may not)."""
    llm = OpenAILLM(fake_openai.base_url, fake_openai.api_key, "fake-model", max_retries=0)
    pipeline = Pipeline([*ENTITIES, EntityName(id=4, name="Krix")], llm=llm)
    text = "in vassal high mm the cracks game"
    words = [("in", 0.9), ("vassal", 0.9), ("high", 0.9), ("mm", 0.9), ("the", 0.9), ("cracks", 0.2), ("game", 0.9)]
    fake_openai.queue_chat(_answer("in Vasselheim the Krix game", ("cracks", "Krix")))
    try:
        result = await pipeline.correct(text, words)
    finally:
        await llm.aclose()
    assert result.text == "in Vasselheim the Krix game"
    assert [(c.span, c.stage) for c in result.corrections] == [("vassal high mm", 1), ("cracks", 2)]


async def test_no_llm_call_without_doubtful_spans(pipeline: Pipeline, fake_openai: FakeOpenAI) -> None:
    result = await pipeline.correct("so the cat flew over", [(w, 0.95) for w in "so the cat flew over".split()])
    assert result.corrections == []
    assert fake_openai.chat_requests == []


async def test_without_confidences_a_large_campaign_shows_the_model_names_said_alike(
    fake_openai: FakeOpenAI,
) -> None:
    # More entities than the prompt lists, all spelled more like "terry" than Tary is: the model sees, per
    # doubtful span, the names pronounced like it (an alias with its entity's name), not only those spelled so.
    fillers = [
        EntityName(id=100 + i, name=f"Terr{a}{b}y") for i, (a, b) in enumerate(product("aeiou", "bcdfgklmnprstvz"))
    ]
    entities = [EntityName(id=1, name="The Stormlord", aliases=["Tary"]), *fillers]
    llm = OpenAILLM(fake_openai.base_url, fake_openai.api_key, "fake-model", max_retries=0)
    pipeline = Pipeline(entities, llm=llm)
    text = "and while terry was living in the house"
    fake_openai.queue_chat(_answer("and while Tary was living in the house", ("terry", "Tary")))
    result = await pipeline.correct(text)
    await llm.aclose()
    sent = json.loads(fake_openai.chat_requests[0]["messages"][1]["content"])
    assert sent["doubtful_spans"] == ["terry"]
    assert {"Tary", "The Stormlord"} <= set(sent["entities"])
    assert len(sent["entities"]) < len(entities)
    # the alias maps to its entity's name
    assert result.text == "and while The Stormlord was living in the house"
    assert [(c.span, c.entity_id, c.stage) for c in result.corrections] == [("terry", 1, 2)]
