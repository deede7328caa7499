"""Construction of the ``openai.AsyncOpenAI`` client shared by the LLM and embedding providers."""

from __future__ import annotations

import os

import openai

# Local OpenAI-compatible servers (Ollama, llama.cpp, vLLM) ignore the key, but the client insists on one.
_PLACEHOLDER_KEY = "not-needed"


def make_openai_client(
    base_url: str | None, api_key: str | None, *, timeout: float, max_retries: int
) -> openai.AsyncOpenAI:
    """An ``AsyncOpenAI`` for ``base_url`` (None: api.openai.com); the key falls back to ``OPENAI_API_KEY``.

    Raises ``ValueError`` when talking to api.openai.com without any key.
    """
    key = api_key or os.environ.get("OPENAI_API_KEY")
    if not key:
        if base_url is None:
            raise ValueError("no OpenAI API key: pass api_key or set OPENAI_API_KEY")
        key = _PLACEHOLDER_KEY
    return openai.AsyncOpenAI(base_url=base_url, api_key=key, timeout=timeout, max_retries=max_retries)


def api_error_detail(exc: openai.APIStatusError) -> str:
    """The server's own error message, without the client's "Error code: ..." wrapping."""
    body = exc.body
    if isinstance(body, dict):
        # The client hands over the body's "error" object when there is one.
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
    return exc.message


def without_key(client: openai.AsyncOpenAI, text: str) -> str:
    """``text`` (a server's or the client's error message, bound for logs and the job table) with the API key
    starred out: some proxies echo the key they were sent ("Invalid key sk-...")."""
    key = client.api_key
    return text.replace(key, "***") if key and key != _PLACEHOLDER_KEY else text
