"""Both stages from blocking callers, through the real ``openai`` client against the fake server:
``lorekeeper correct --llm`` and ``python -m bench.correction --llm``."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from bench.correction import Case, llm_corrector, score_cases
from bot.cli.correct import run
from memory.correction import EntityName
from memory.providers.llm import OpenAILLM
from tests.fakes.openai_server import FakeHTTPError, FakeOpenAI

ENTITIES = [EntityName(id=1, name="Yasha"), EntityName(id=2, name="Tary")]
TEXT = "closest to me and yasher, and then the door"


def _model(request: dict[str, Any]) -> str:
    """A model that knows "yasher" is Yasha, and changes nothing else."""
    sent = json.loads(request["messages"][1]["content"])
    text, subs = sent["utterance"], []
    if "yasher" in sent["doubtful_spans"]:
        text, subs = text.replace("yasher", "Yasha"), [{"heard": "yasher", "entity": "Yasha"}]
    return json.dumps({"text": text, "substitutions": subs})


def _asked(fake: FakeOpenAI) -> list[list[str]]:
    chats = [r for r in fake.requests if r.path.endswith("/chat/completions")]
    return [json.loads(r.body["messages"][1]["content"])["doubtful_spans"] for r in chats]


def test_the_bench_scores_what_stage_2_restores(fake_openai_thread: FakeOpenAI) -> None:
    fake_openai_thread.chat_handler = _model
    correct, close, counted = llm_corrector(
        ENTITIES, fake_openai_thread.base_url, fake_openai_thread.api_key, "fake-model"
    )
    try:
        case = Case(TEXT, TEXT.index("yasher"), TEXT.index("yasher") + 6, "Yasha", "holdout", "Yasha")
        both = score_cases(correct, [case], None, set())["all"]
        with_doubt = correct(TEXT, [0.9, 0.9, 0.9, 0.9, 0.2, 0.9, 0.9, 0.9, 0.9])
    finally:
        close()
    # stage 1 leaves "yasher" (doubtful, too short a name); stage 2 is asked and fixes it (not an ordinary word)
    assert (both.recall, both.precision) == (1.0, 1.0)
    assert [(c.span, c.replacement, c.stage) for c in with_doubt] == [("yasher", "Yasha", 2)]
    assert _asked(fake_openai_thread) == [["yasher"], ["yasher"]]
    assert (counted.calls, counted.failed) == (2, 0)


def test_the_cli_runs_stage_2_with_llm(fake_openai_thread: FakeOpenAI) -> None:
    fake_openai_thread.chat_handler = _model
    llm = OpenAILLM(fake_openai_thread.base_url, fake_openai_thread.api_key, "fake-model", max_retries=0)
    own_list = json.dumps({"text": "then terry and yasher left", "entities": ["Yasha"]})
    stdin = io.StringIO(f"{TEXT}\nthe door is shut\n{own_list}\n")
    stdout = io.StringIO()
    run(stdin, stdout, ENTITIES, llm)
    first, second, third = (json.loads(line) for line in stdout.getvalue().splitlines())
    assert first["text"] == "closest to me and Yasha, and then the door"
    assert [(c["span"], c["replacement"], c["stage"]) for c in first["corrections"]] == [("yasher", "Yasha", 2)]
    assert second == {"text": "the door is shut", "raw_text": "the door is shut", "corrections": []}
    # a line with its own entity list goes to stage 2 too, with only its own names doubted ("terry" is no Tary here)
    assert third["text"] == "then terry and Yasha left"
    assert _asked(fake_openai_thread) == [["yasher"], ["yasher"]]  # no call for a line with nothing doubtful
    # without --llm, stage 1 alone: the same line is left as heard
    stdout = io.StringIO()
    run(io.StringIO(TEXT + "\n"), stdout, ENTITIES)
    assert json.loads(stdout.getvalue())["text"] == TEXT


def test_the_bench_stops_when_its_first_llm_call_fails(fake_openai_thread: FakeOpenAI) -> None:
    # a wrong key or model must not pass stage-1 figures off as stage 2's
    fake_openai_thread.queue_chat(FakeHTTPError(401, "Incorrect API key provided", retry=False))
    correct, close, counted = llm_corrector(ENTITIES, fake_openai_thread.base_url, "sk-wrong", "fake-model")
    try:
        with pytest.raises(SystemExit, match="first stage-2 call failed"):
            correct(TEXT, None)
    finally:
        close()
    assert (counted.calls, counted.failed) == (1, 1)
