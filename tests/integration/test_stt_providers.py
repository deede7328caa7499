"""Online STT providers through their real clients (``openai``, aiohttp websockets) against local fake servers.

The fakes here are deliberately tiny: they record what arrived and answer in the services' documented shapes
(OpenAI ``verbose_json`` with word timestamps; Deepgram live ``Results`` messages).
"""

from __future__ import annotations

import io
import json
import wave
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import numpy as np
import openai
import pytest
from aiohttp import WSMsgType, web

from memory.providers.stt import (
    DeepgramSTT,
    OpenAISTT,
    SpeechToText,
    STTError,
    WhisperSTT,
    build_name_prompt,
)

NAMES = ["Eldrinax", "Ironhold", "Vex'ahlia", "eldrinax", "  "]


def half_second() -> np.ndarray:
    t = np.arange(8000) / 16_000
    return (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)


@asynccontextmanager
async def serve(app: web.Application) -> AsyncIterator[str]:
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await runner.cleanup()


# ---------------------------------------------------------------------------------------------------- OpenAI


@asynccontextmanager
async def fake_openai(answer: Callable[[dict[str, Any]], web.Response]) -> AsyncIterator[tuple[str, list]]:
    received: list[dict[str, Any]] = []

    async def transcriptions(request: web.Request) -> web.Response:
        form = await request.post()
        fields: dict[str, Any] = {k: v for k, v in form.items() if not isinstance(v, web.FileField)}
        fields["timestamp_granularities"] = form.getall("timestamp_granularities[]", [])
        upload = form["file"]
        assert isinstance(upload, web.FileField)
        with wave.open(io.BytesIO(upload.file.read())) as wav:
            fields["wav"] = (wav.getnchannels(), wav.getframerate(), wav.getnframes())
        fields["auth"] = request.headers.get("Authorization")
        received.append(fields)
        return answer(fields)

    app = web.Application()
    app.router.add_post("/v1/audio/transcriptions", transcriptions)
    async with serve(app) as host:
        yield f"http://{host}/v1", received


def verbose_json(fields: dict[str, Any]) -> web.Response:
    words = [
        {"word": "Eldrinax", "start": 0.0, "end": 0.31},
        # a faster-whisper-server style extra field: a word probability
        {"word": "sleeps", "start": 0.31, "end": 0.5, "probability": 0.87},
    ]
    body = {"text": " Eldrinax sleeps.", "language": "english", "duration": 0.5, "words": words}
    return web.json_response(body)


async def test_openai_sends_wav_and_names_and_parses_words() -> None:
    async with fake_openai(verbose_json) as (base_url, received):
        stt = OpenAISTT(model="whisper-1", base_url=base_url, api_key="sk-test")
        assert isinstance(stt, SpeechToText)
        result = await stt.transcribe(half_second(), prompt_names=NAMES)

    (req,) = received
    assert req["model"] == "whisper-1"
    assert req["response_format"] == "verbose_json"
    assert req["timestamp_granularities"] == ["word"]
    assert req["language"] == "en"
    assert req["auth"] == "Bearer sk-test"
    # Duplicates (case-insensitive) and blanks dropped, priority order kept.
    assert req["prompt"] == "Names: Eldrinax - Ironhold - Vex'ahlia."
    assert req["wav"] == (1, 16_000, 8000)

    assert result.text == "Eldrinax sleeps."
    assert [(w.word, w.start, w.end, w.confidence) for w in result.words] == [
        ("Eldrinax", 0.0, 0.31, None),
        ("sleeps", 0.31, 0.5, 0.87),
    ]
    assert result.language == "english"
    assert result.duration == 0.5


async def test_openai_without_names_sends_no_prompt() -> None:
    async with fake_openai(verbose_json) as (base_url, received):
        await OpenAISTT(base_url=base_url, api_key="k").transcribe(half_second())
    assert "prompt" not in received[0]


async def test_openai_server_error_is_an_stt_error() -> None:
    def broken(_: dict[str, Any]) -> web.Response:
        return web.json_response({"error": {"message": "model overloaded"}}, status=503)

    async with fake_openai(broken) as (base_url, _):
        client = openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0)
        with pytest.raises(STTError, match="model overloaded"):
            await OpenAISTT(client=client).transcribe(half_second(), prompt_names=NAMES)


# -------------------------------------------------------------------------------------------------- Deepgram


def dg_result(words: list[tuple[str, float, float, float]], *, final: bool) -> dict[str, Any]:
    return {
        "type": "Results",
        "is_final": final,
        "channel": {
            "alternatives": [
                {
                    "transcript": " ".join(w[0] for w in words),
                    "confidence": 0.9,
                    "words": [
                        {"word": w.lower().strip("."), "punctuated_word": w, "start": s, "end": e, "confidence": c}
                        for w, s, e, c in words
                    ],
                }
            ]
        },
    }


@asynccontextmanager
async def fake_deepgram(*, reject: int | None = None) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    seen: dict[str, Any] = {"audio": b"", "chunks": 0}

    async def listen(request: web.Request) -> web.StreamResponse:
        seen["query"] = request.query
        seen["auth"] = request.headers.get("Authorization")
        if reject:
            return web.Response(status=reject, text="bad key")
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        # An interim guess, later revised: must not reach the transcript.
        await ws.send_json(dg_result([("Eldritch", 0.0, 0.3, 0.4)], final=False))
        async for msg in ws:
            if msg.type == WSMsgType.BINARY:
                seen["audio"] += msg.data
                seen["chunks"] += 1
            elif msg.type == WSMsgType.TEXT and json.loads(msg.data) == {"type": "CloseStream"}:
                break
        await ws.send_json(dg_result([("Eldrinax", 0.0, 0.3, 0.93), ("sleeps", 0.3, 0.45, 0.99)], final=True))
        await ws.send_json(dg_result([("Ironhold.", 0.45, 0.5, 0.71)], final=True))
        await ws.send_json({"type": "Metadata", "duration": 0.5})
        await ws.close()
        return ws

    app = web.Application()
    app.router.add_get("/v1/listen", listen)
    async with serve(app) as host:
        yield f"ws://{host}/v1/listen", seen


async def test_deepgram_streams_audio_with_keyterms_and_collects_final_results() -> None:
    pcm = half_second()
    async with fake_deepgram() as (url, seen):
        stt = DeepgramSTT(api_key="dg-key", url=url, chunk_ms=100)
        try:
            result = await stt.transcribe(pcm, prompt_names=NAMES)
        finally:
            await stt.aclose()

    query = seen["query"]
    assert query.getall("keyterm") == ["Eldrinax", "Ironhold", "Vex'ahlia"]
    assert (query["encoding"], query["sample_rate"], query["channels"]) == ("linear16", "16000", "1")
    assert query["model"] == "nova-3"
    assert seen["auth"] == "Token dg-key"
    assert seen["chunks"] == 5  # 500 ms in 100 ms pieces
    sent = np.frombuffer(seen["audio"], dtype="<i2")
    np.testing.assert_allclose(sent / 32767.0, pcm, atol=1e-4)

    assert result.text == "Eldrinax sleeps Ironhold."
    assert [(w.word, w.confidence) for w in result.words] == [
        ("Eldrinax", 0.93),
        ("sleeps", 0.99),
        ("Ironhold.", 0.71),
    ]
    assert result.words[2].start == 0.45
    assert result.language == "en"
    assert result.duration == 0.5


async def test_deepgram_refusal_is_an_stt_error() -> None:
    async with fake_deepgram(reject=401) as (url, _):
        stt = DeepgramSTT(api_key="wrong", url=url)
        with pytest.raises(STTError, match="HTTP 401"):
            await stt.transcribe(half_second())
        await stt.aclose()


async def test_deepgram_keyterms_stop_at_the_budget_in_priority_order() -> None:
    # ~3 characters a token: 3 + 3, then Vex'ahlia (3) overflows 8; the short Zorb must not jump the queue.
    stt = DeepgramSTT(api_key=None, keyterm_token_budget=8)
    assert stt.keyterms(["Eldrinax", "Ironhold", "Vex'ahlia", "Zorb"]) == ["Eldrinax", "Ironhold"]


# -------------------------------------------------------------------------------------------------- prompts


def test_name_prompt_keeps_the_most_important_names_within_budget() -> None:
    names = [f"Name{i:03d}" for i in range(500)]
    # Counting characters: " Names:" + "." = 8, " Name000" = 8, each " - NameNNN" = 10.
    for budget, kept in ((106, 10), (105, 9)):
        prompt = build_name_prompt(names, count_tokens=len, budget=budget)
        assert prompt == "Names: " + " - ".join(names[:kept]) + "."
        assert len(" " + prompt) <= budget
    assert build_name_prompt([]) == ""


def test_whisper_refuses_int_pcm_before_touching_the_model() -> None:
    stt = WhisperSTT("no-such-model")
    with pytest.raises(TypeError, match="float PCM"):
        stt.transcribe_sync(np.zeros(16_000, dtype=np.int16))
    assert stt.transcribe_sync(np.zeros(0, dtype=np.float32)).text == ""
    stt.close()
