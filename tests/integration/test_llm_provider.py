"""OpenAILLM against the local fake OpenAI server, through the real ``openai`` client."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from pydantic import BaseModel

from bot.settings import load_settings
from memory.jobs import make_job_context
from memory.providers.llm import DEFAULT_MAX_TOKENS, LLMError, LLMUnavailable, OpenAILLM
from tests.fakes.openai_server import ChatReply, FakeHTTPError, FakeOpenAI, FakeRawReply


class Substitution(BaseModel):
    span: str
    replacement: str


class Correction(BaseModel):
    text: str
    substitutions: list[Substitution] = []
    note: str | None = None


class Tally(BaseModel):
    counts: dict[str, int]


GOOD = json.dumps({"text": "Eldrinax attacks", "substitutions": [{"span": "elder nacks", "replacement": "Eldrinax"}]})


@pytest_asyncio.fixture
async def llm(fake_openai: FakeOpenAI) -> AsyncIterator[OpenAILLM]:
    client = OpenAILLM(fake_openai.base_url, fake_openai.api_key, "fake-gpt", timeout=5)
    yield client
    await client.aclose()


async def test_returns_validated_model_and_sends_structured_request(llm: OpenAILLM, fake_openai: FakeOpenAI) -> None:
    fake_openai.queue_chat(GOOD)
    result = await llm.complete_json(system="Fix names.", user="elder nacks attacks", schema=Correction)

    assert result == Correction(
        text="Eldrinax attacks", substitutions=[Substitution(span="elder nacks", replacement="Eldrinax")]
    )
    (request,) = fake_openai.chat_requests
    assert request["model"] == "fake-gpt"
    assert request["temperature"] == 0.1
    assert request["messages"] == [
        {"role": "system", "content": "Fix names."},
        {"role": "user", "content": "elder nacks attacks"},
    ]
    fmt = request["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "Correction"
    assert fmt["json_schema"]["strict"] is True
    schema = fmt["json_schema"]["schema"]
    # Strict mode needs closed objects with every property required, nested definitions included.
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["text", "substitutions", "note"]
    assert schema["$defs"]["Substitution"]["additionalProperties"] is False
    assert "default" not in schema["properties"]["note"]
    assert "default" not in schema["properties"]["substitutions"]


async def test_temperature_is_passed_through(llm: OpenAILLM, fake_openai: FakeOpenAI) -> None:
    fake_openai.queue_chat(GOOD)
    await llm.complete_json(system="s", user="u", schema=Correction, temperature=0.7)
    assert fake_openai.chat_requests[0]["temperature"] == 0.7


async def test_every_request_carries_a_length_cap(llm: OpenAILLM, fake_openai: FakeOpenAI) -> None:
    """A model that runs on (a JSON string never closed) is stopped at the cap, not billed for minutes."""
    fake_openai.queue_chat(GOOD, GOOD)
    await llm.complete_json(system="s", user="u", schema=Correction)
    await llm.complete_json(system="s", user="u", schema=Correction, max_tokens=300)
    assert [r["max_tokens"] for r in fake_openai.chat_requests] == [DEFAULT_MAX_TOKENS, 300]


async def test_free_form_dict_schema_is_sent_non_strict(llm: OpenAILLM, fake_openai: FakeOpenAI) -> None:
    fake_openai.queue_chat('{"counts": {"goblins": 3}}')
    assert await llm.complete_json(system="s", user="u", schema=Tally) == Tally(counts={"goblins": 3})
    json_schema = fake_openai.chat_requests[0]["response_format"]["json_schema"]
    assert json_schema["strict"] is False
    assert json_schema["schema"] == Tally.model_json_schema()


async def test_callable_script_sees_the_request(llm: OpenAILLM, fake_openai: FakeOpenAI) -> None:
    fake_openai.queue_chat(lambda req: json.dumps({"text": req["messages"][1]["content"].upper()}))
    result = await llm.complete_json(system="s", user="the tower of whispers", schema=Correction)
    assert result.text == "THE TOWER OF WHISPERS"


async def test_json_in_a_markdown_fence_is_accepted(llm: OpenAILLM, fake_openai: FakeOpenAI) -> None:
    fake_openai.queue_chat(f"```json\n{GOOD}\n```")
    result = await llm.complete_json(system="s", user="u", schema=Correction)
    assert result.text == "Eldrinax attacks"


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ('{"text": "Eldrinax", ', "not valid JSON"),
        ("Sure! Here is the corrected text: Eldrinax attacks", "not valid JSON"),
        ("", "empty"),
        ('{"substitutions": []}', "does not match Correction: text: Field required"),
        ('{"text": "x", "substitutions": [{"span": "a"}]}', "substitutions.0.replacement"),
        ('["not", "an", "object"]', "does not match Correction"),
        (ChatReply(refusal="I can't help with that."), "refused: I can't help with that."),
        (ChatReply(content='{"text": "Eldr', finish_reason="length"), "cut off at its cap of 1,024 tokens"),
        (ChatReply(content=None, finish_reason="content_filter"), "content filter"),
        # a 200 that is no chat completion: another shape, a number for the text
        (FakeRawReply("[]", "application/json"), "not a chat completion"),
        (FakeRawReply('{"choices": [{"message": {"content": 5}}]}', "application/json"), "has no text"),
    ],
)
async def test_unusable_answers_raise_llm_error(
    llm: OpenAILLM, fake_openai: FakeOpenAI, answer: str | ChatReply | FakeRawReply, expected: str
) -> None:
    fake_openai.queue_chat(answer)
    with pytest.raises(LLMError, match=expected):
        await llm.complete_json(system="s", user="u", schema=Correction)


@pytest.mark.parametrize(
    "page",
    [FakeRawReply("<html>bad gateway</html>"), FakeRawReply('{"choices": [', "application/json")],
    ids=["html", "broken-json"],
)
async def test_a_200_that_is_not_json_is_no_answer_at_all(
    llm: OpenAILLM, fake_openai: FakeOpenAI, page: FakeRawReply
) -> None:
    # a proxy's error page: a background job tries again later instead of passing its lines without their facts
    fake_openai.queue_chat(page)
    with pytest.raises(LLMUnavailable, match="LLM answer is not JSON"):
        await llm.complete_json(system="s", user="u", schema=Correction)


async def test_error_message_is_short(llm: OpenAILLM, fake_openai: FakeOpenAI) -> None:
    fake_openai.queue_chat("garbage " * 1000)
    with pytest.raises(LLMError) as info:
        await llm.complete_json(system="s", user="u", schema=Correction)
    assert len(str(info.value)) < 200


async def test_client_error_is_not_retried(llm: OpenAILLM, fake_openai: FakeOpenAI) -> None:
    fake_openai.queue_chat(FakeHTTPError(400, "temperature is not supported"), GOOD)
    with pytest.raises(LLMError, match="HTTP 400: temperature is not supported") as info:
        await llm.complete_json(system="s", user="u", schema=Correction)
    assert len(fake_openai.chat_requests) == 1
    assert not isinstance(info.value, LLMUnavailable)  # the request is wrong: trying again later will not help


def _llama_cpp_python(request: dict) -> str | FakeHTTPError:
    """llama-cpp-python's server (0.3.36): JSON-schema output is refused, a JSON object with a schema is fine."""
    if request["response_format"]["type"] != "json_object":
        return FakeHTTPError(
            500, "1 validation error: {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), ...}"
        )
    assert request["response_format"]["schema"] == Correction.model_json_schema()
    return GOOD


async def test_a_server_refusing_json_schema_output_is_asked_for_a_json_object(
    llm: OpenAILLM, fake_openai: FakeOpenAI
) -> None:
    fake_openai.queue_chat(*[_llama_cpp_python] * 5)
    first = await llm.complete_json(system="Fix names.", user="elder nacks attacks", schema=Correction)
    second = await llm.complete_json(system="Fix names.", user="elder nacks attacks", schema=Correction)

    assert first == second and first.text == "Eldrinax attacks"
    formats = [r["response_format"]["type"] for r in fake_openai.chat_requests]
    assert {r["max_tokens"] for r in fake_openai.chat_requests} == {DEFAULT_MAX_TOKENS}
    # The client retries a 500 twice; from the first refusal on, only JSON objects are asked for.
    assert formats == ["json_schema", "json_schema", "json_schema", "json_object", "json_object"]
    system = fake_openai.chat_requests[-1]["messages"][0]["content"]
    assert (
        system.startswith("Fix names.") and json.dumps(Correction.model_json_schema(), separators=(",", ":")) in system
    )


async def test_an_api_key_echoed_by_the_server_is_starred_out(llm: OpenAILLM, fake_openai: FakeOpenAI) -> None:
    """The message goes to logs and the job table: a proxy that repeats the key must not put it there."""
    fake_openai.queue_chat(FakeHTTPError(401, f"Invalid proxy token. Received API Key = {fake_openai.api_key}"))
    with pytest.raises(LLMError) as info:
        await llm.complete_json(system="s", user="u", schema=Correction)
    assert str(info.value).startswith("LLM request failed: HTTP 401: Invalid proxy token. Received API Key = *** — ")


async def test_server_error_is_retried_then_succeeds(llm: OpenAILLM, fake_openai: FakeOpenAI) -> None:
    fake_openai.queue_chat(FakeHTTPError(503, "overloaded"), FakeHTTPError(429, "slow down"), GOOD)
    result = await llm.complete_json(system="s", user="u", schema=Correction)
    assert result.text == "Eldrinax attacks"
    assert len(fake_openai.chat_requests) == 3


async def test_server_error_after_all_retries_raises(llm: OpenAILLM, fake_openai: FakeOpenAI) -> None:
    fake_openai.queue_chat(*[FakeHTTPError(500, "boom")] * 3)
    with pytest.raises(LLMUnavailable, match="HTTP 500: boom"):
        await llm.complete_json(system="s", user="u", schema=Correction)
    assert len(fake_openai.chat_requests) == 3  # one try + max_retries=2


async def test_timeout_raises_llm_error(fake_openai: FakeOpenAI) -> None:
    slow = OpenAILLM(fake_openai.base_url, fake_openai.api_key, "fake-gpt", timeout=0.2, max_retries=0)
    fake_openai.queue_chat(ChatReply(content=GOOD, delay=2.0))
    with pytest.raises(LLMError, match="timed out"):
        await slow.complete_json(system="s", user="u", schema=Correction)
    await slow.aclose()


async def test_the_jobs_llm_times_out_after_the_configured_seconds(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in {
        "OPENAI_BASE_URL": fake_openai.base_url,
        "OPENAI_API_KEY": fake_openai.api_key,
        "LOREKEEPER_LLM_MODEL": "fake-gpt",
        "LOREKEEPER_LLM_TIMEOUT": "0.3",
    }.items():
        monkeypatch.setenv(key, value)
    settings = load_settings()
    assert settings.llm_timeout == 0.3
    llm = make_job_context(None, settings).llm  # type: ignore[arg-type]
    assert isinstance(llm, OpenAILLM)
    fake_openai.chat_handler = ChatReply(content=GOOD, delay=5.0)  # every try: slower than the setting
    started = time.monotonic()
    try:
        with pytest.raises(LLMUnavailable, match="timed out"):
            await llm.complete_json(system="s", user="u", schema=Correction)
    finally:
        await llm.aclose()
    assert time.monotonic() - started < 4.5  # three tries of 0.3 s and the client's pauses, not one of 60 s
    assert len(fake_openai.chat_requests) == 3  # one try + 2 retries, as before


async def test_wrong_api_key_raises_llm_error(fake_openai: FakeOpenAI) -> None:
    bad = OpenAILLM(fake_openai.base_url, "sk-wrong", "fake-gpt")
    with pytest.raises(LLMError, match="HTTP 401") as failed:  # a setting to fix: the offline path serves
        await bad.complete_json(system="s", user="u", schema=Correction)
    assert not isinstance(failed.value, LLMUnavailable)
    await bad.aclose()


async def test_unreachable_server_raises_llm_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Nothing listens on the port any more, so the connection is refused.
    llm = OpenAILLM(f"http://127.0.0.1:{port}/v1", "k", "fake-gpt", timeout=2, max_retries=0)
    with pytest.raises(LLMUnavailable, match="LLM unreachable"):  # a background job tries again later
        await llm.complete_json(system="s", user="u", schema=Correction)
    await llm.aclose()


def test_missing_key_for_openai_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LLMError, match="OPENAI_API_KEY"):
        OpenAILLM(None, None, "gpt-4o-mini")


async def test_local_server_needs_no_key(fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fake_openai.api_key = "not-needed"
    keyless = OpenAILLM(fake_openai.base_url, None, "llama3")
    fake_openai.queue_chat(GOOD)
    assert (await keyless.complete_json(system="s", user="u", schema=Correction)).text == "Eldrinax attacks"
    await keyless.aclose()


@pytest.mark.parametrize(
    ("answer", "drop_v1", "setting"),
    [
        (FakeHTTPError(404, "model 'llama3:8b' not found"), False, "LOREKEEPER_LLM_MODEL: 'fake-gpt'"),
        (FakeHTTPError(401, "Incorrect API key provided"), False, "OPENAI_API_KEY"),
        (ChatReply(content=GOOD), True, "OPENAI_BASE_URL"),  # the real 404 of a URL without /v1
    ],
)
async def test_a_wrong_model_key_or_url_is_a_setting_to_check_asked_once_not_an_outage(
    fake_openai: FakeOpenAI, answer: ChatReply | FakeHTTPError, drop_v1: bool, setting: str
) -> None:
    fake_openai.queue_chat(answer, answer)
    base_url = fake_openai.base_url.removesuffix("/v1") if drop_v1 else fake_openai.base_url
    client = OpenAILLM(base_url, fake_openai.api_key, "fake-gpt", timeout=5)
    try:
        for _ in range(2):
            with pytest.raises(LLMError) as failed:
                await client.complete_json(system="s", user="u", schema=Correction)
            assert not isinstance(failed.value, LLMUnavailable)  # no job waits and retries for it
            said = str(failed.value)
            assert f"check {setting}" in said, said
            assert drop_v1 == said.endswith("(an OpenAI-compatible URL usually ends in /v1)")
    finally:
        await client.aclose()
    assert len(fake_openai.chat_requests) == (0 if drop_v1 else 1)  # asked once: the second fails at once


def test_a_model_set_without_url_or_key_is_said_to_be_off_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A DM who forgot OPENAI_BASE_URL would believe the LLM reads the sessions: the bot, ingest and the worker
    say it is off, once."""
    from memory.jobs import context

    for key in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("LOREKEEPER_LLM_MODEL", "llama3.1:8b")
    context._say_llm_off.cache_clear()
    settings = load_settings()
    for _ in range(2):
        assert make_job_context(None, settings).llm is None  # type: ignore[arg-type]
    said = [r.getMessage() for r in caplog.records if "LOREKEEPER_LLM_MODEL" in r.getMessage()]
    assert said == [
        "LOREKEEPER_LLM_MODEL is set (llama3.1:8b) but neither OPENAI_BASE_URL nor OPENAI_API_KEY: the LLM is off, "
        "the offline rules and recaps serve"
    ]
