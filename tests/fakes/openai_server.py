"""A local fake of the OpenAI HTTP API, good enough for the real ``openai`` client.

Implements ``POST /v1/chat/completions`` and ``POST /v1/embeddings`` on 127.0.0.1 with a random port.
Chat answers are scripted by the test (queued content strings, refusals, HTTP errors or callables);
embeddings are deterministic unit vectors derived from a hash of the text. Every request body is recorded.

    async with FakeOpenAI.running(embedding_dim=16) as fake:
        fake.queue_chat('{"text": "hi"}', FakeHTTPError(500), lambda req: "not json")
        client = openai.AsyncOpenAI(base_url=fake.base_url, api_key=fake.api_key)
        ...
        assert fake.chat_requests[0]["temperature"] == 0.1
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import inspect
import itertools
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from aiohttp import web

__all__ = ["ChatReply", "ChatScript", "FakeHTTPError", "FakeOpenAI", "FakeRawReply", "RecordedRequest"]


@dataclass(frozen=True)
class ChatReply:
    """One scripted chat completion. ``content=None`` with a ``refusal`` mimics a model refusal."""

    content: str | None = None
    refusal: str | None = None
    finish_reason: str = "stop"
    delay: float = 0.0  # seconds to wait before answering, for client timeout tests


@dataclass(frozen=True)
class FakeHTTPError:
    """An HTTP error answer in OpenAI's error body format.

    ``retry=None`` leaves the retry decision to the client (it retries 408/409/429/5xx); the answer carries
    ``retry-after-ms: 1`` so such retries do not slow the tests down.
    """

    status: int = 500
    message: str = "fake server error"
    retry: bool | None = None


@dataclass(frozen=True)
class FakeRawReply:
    """A 200 answer whose body is not a chat completion at all: a proxy's error page, broken JSON."""

    body: str
    content_type: str = "text/html"


ChatResult = str | ChatReply | FakeHTTPError | FakeRawReply
ChatScript = ChatResult | Callable[[dict[str, Any]], ChatResult | Awaitable[ChatResult]]


@dataclass
class RecordedRequest:
    """A request the fake received: its path, JSON body and headers (lower-cased names)."""

    path: str
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


class FakeOpenAI:
    """Fake OpenAI-compatible server. Use ``FakeOpenAI.running()`` or ``start()``/``stop()``."""

    def __init__(self, *, embedding_dim: int = 8, api_key: str = "sk-fake-key") -> None:
        self.embedding_dim = embedding_dim
        self.api_key = api_key
        self.requests: list[RecordedRequest] = []
        # Used when the chat queue is empty; None means "answer 500 and tell the client not to retry",
        # so a test that forgot to script an answer fails loudly instead of hanging on retries.
        self.chat_handler: ChatScript | None = None
        self._chat_queue: deque[ChatScript] = deque()
        self._embedding_errors: deque[FakeHTTPError] = deque()
        self._ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    # -- lifecycle -------------------------------------------------------------------------------------

    @classmethod
    @asynccontextmanager
    async def running(cls, **kwargs: Any) -> AsyncIterator[FakeOpenAI]:
        """Start a fake server for the duration of the ``async with`` block."""
        fake = cls(**kwargs)
        await fake.start()
        try:
            yield fake
        finally:
            await fake.stop()

    async def start(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/embeddings", self._embeddings)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self._port = self._runner.addresses[0][1]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def base_url(self) -> str:
        """The value for ``openai.AsyncOpenAI(base_url=...)``."""
        if self._port is None:
            raise RuntimeError("FakeOpenAI is not running")
        return f"http://127.0.0.1:{self._port}/v1"

    # -- scripting -------------------------------------------------------------------------------------

    def queue_chat(self, *replies: ChatScript) -> None:
        """Queue chat answers, consumed one per request in order.

        Each is a content string (sent verbatim, valid JSON or not), a ``ChatReply``, a ``FakeHTTPError``,
        or a callable that receives the request JSON and returns (or awaits to) one of those.
        """
        self._chat_queue.extend(replies)

    def queue_embedding_error(self, *errors: FakeHTTPError) -> None:
        """Make the next embeddings requests fail with these errors, one per request."""
        self._embedding_errors.extend(errors)

    @property
    def pending_chat(self) -> int:
        """How many queued chat answers have not been consumed yet."""
        return len(self._chat_queue)

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """JSON bodies of every chat request received (messages, response_format, temperature, ...)."""
        return [r.body for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def embedding_requests(self) -> list[dict[str, Any]]:
        """JSON bodies of every embeddings request received."""
        return [r.body for r in self.requests if r.path.endswith("/embeddings")]

    @staticmethod
    def vector_for(text: str, dim: int) -> list[float]:
        """The unit vector the fake returns for ``text``: seeded from its SHA-256, so equal texts match."""
        seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
        vec = np.random.default_rng(seed).standard_normal(dim)
        # Round-trip through float32 so float and base64 answers carry exactly the same numbers.
        vec = (vec / np.linalg.norm(vec)).astype(np.float32)
        return [float(x) for x in vec]

    # -- handlers --------------------------------------------------------------------------------------

    async def _record(self, request: web.Request) -> RecordedRequest | web.Response:
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "request body is not valid JSON")
        if not isinstance(body, dict):
            return _error(400, "request body must be a JSON object")
        recorded = RecordedRequest(request.path, body, {k.lower(): v for k, v in request.headers.items()})
        self.requests.append(recorded)
        if request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return _error(401, "Incorrect API key provided", code="invalid_api_key")
        return recorded

    async def _chat(self, request: web.Request) -> web.Response:
        recorded = await self._record(request)
        if isinstance(recorded, web.Response):
            return recorded
        body = recorded.body
        messages = body.get("messages")
        if not isinstance(body.get("model"), str) or not isinstance(messages, list) or not messages:
            return _error(400, "'model' and a non-empty 'messages' list are required")

        script = self._chat_queue.popleft() if self._chat_queue else self.chat_handler
        if script is None:
            return _error(500, "FakeOpenAI: no chat answer queued", retry=False)
        result = script(body) if callable(script) else script
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, FakeHTTPError):
            return _error(result.status, result.message, retry=result.retry)
        if isinstance(result, FakeRawReply):
            return web.Response(text=result.body, content_type=result.content_type)
        reply = ChatReply(content=result) if isinstance(result, str) else result
        if reply.delay:
            await asyncio.sleep(reply.delay)

        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in messages if isinstance(m, dict))
        completion_tokens = len((reply.content or reply.refusal or "").split())
        return web.json_response(
            {
                "id": f"chatcmpl-fake-{next(self._ids)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply.content, "refusal": reply.refusal},
                        "finish_reason": reply.finish_reason,
                        "logprobs": None,
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            }
        )

    async def _embeddings(self, request: web.Request) -> web.Response:
        recorded = await self._record(request)
        if isinstance(recorded, web.Response):
            return recorded
        body = recorded.body
        if self._embedding_errors:
            err = self._embedding_errors.popleft()
            return _error(err.status, err.message, retry=err.retry)

        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        # Same limits as the real API, so batching bugs show up here rather than in production.
        if not isinstance(inputs, list) or not inputs or not all(isinstance(t, str) for t in inputs):
            return _error(400, "'input' must be a string or a non-empty list of strings")
        if len(inputs) > 2048:
            return _error(400, "'input' must have at most 2048 items")
        if any(t == "" for t in inputs):
            return _error(400, "'input' cannot contain an empty string")
        if not isinstance(body.get("model"), str):
            return _error(400, "'model' is required")
        dim = body.get("dimensions") or self.embedding_dim
        encoding = body.get("encoding_format", "float")
        if encoding not in ("float", "base64"):
            return _error(400, f"unknown encoding_format {encoding!r}")

        data = []
        for i, text in enumerate(inputs):
            vec = self.vector_for(text, dim)
            payload: list[float] | str = vec
            if encoding == "base64":
                payload = base64.b64encode(np.asarray(vec, dtype=np.float32).tobytes()).decode("ascii")
            data.append({"object": "embedding", "index": i, "embedding": payload})
        tokens = sum(len(t.split()) for t in inputs)
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )


def _error(status: int, message: str, *, retry: bool | None = None, code: str | None = None) -> web.Response:
    headers = {"retry-after-ms": "1"}
    if retry is not None:
        headers["x-should-retry"] = "true" if retry else "false"
    return web.json_response(
        {"error": {"message": message, "type": "fake_error", "param": None, "code": code}},
        status=status,
        headers=headers,
    )
