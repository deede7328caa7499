"""Chat LLMs behind a small protocol: ask for JSON matching a pydantic schema, get a validated model back.

The LLM is optional (correction stage 2, extraction, summaries); callers treat ``LLMError`` as "no answer" and
fall back to their offline path.
"""

from __future__ import annotations

import copy
import json
import logging
import re
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

import pydantic

from memory.errors import BAD_REQUEST, Unavailable
from memory.text import clip

if TYPE_CHECKING:  # openai takes ~0.9 s to import: only where a request is made
    from openai.types.chat import ChatCompletion
    from openai.types.chat.completion_create_params import ResponseFormat

__all__ = ["DEFAULT_MAX_TOKENS", "LLMClient", "LLMError", "LLMTimeout", "LLMUnavailable", "OpenAILLM"]

T = TypeVar("T", bound=pydantic.BaseModel)

log = logging.getLogger(__name__)

_FENCE = re.compile(r"^\s*```[A-Za-z]*\s*\n(.*?)\n\s*```\s*$", re.DOTALL)
_SNIPPET = 80

#: The answer's length cap when a caller names none: every request carries one, so a model that runs on (a JSON
#: string never closed, a list repeated for ever) is stopped instead of billing and blocking a worker for minutes.
DEFAULT_MAX_TOKENS = 1024


class LLMError(Exception):
    """The LLM gave no usable answer: transport error, refusal, truncation, bad JSON or schema mismatch."""


class LLMUnavailable(LLMError, Unavailable):
    """No answer came at all (see :class:`memory.errors.Unavailable`)."""


class LLMTimeout(LLMUnavailable):
    """The LLM did not answer within its timeout, however often the client asked: a background job is held at once
    instead of asking a slow server again and again (it would go on generating every abandoned request)."""


class LLMClient(Protocol):
    async def complete_json(
        self,
        *,
        system: str,
        user: str,
        schema: type[T],
        temperature: float = 0.1,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> T:
        """Answer ``user`` under ``system`` with JSON valid as ``schema`` in at most ``max_tokens`` tokens; raise
        ``LLMError`` if not (an answer cut off at the cap is no answer)."""
        ...


class OpenAILLM:
    """Any OpenAI-compatible chat endpoint, using JSON-schema structured output.

    ``strict`` asks the server to enforce the schema (OpenAI's strict mode); it is sent only for schemas that
    strict mode can express, and the answer is validated with pydantic either way. A server that refuses
    JSON-schema output (llama-cpp-python's takes only ``json_object``) is asked for a JSON object instead, with
    the schema beside it and in the instructions, from its first refusal on.
    """

    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        model: str,
        timeout: float = 60,
        max_retries: int = 2,
        *,
        strict: bool = True,
    ) -> None:
        from memory.providers.openai_client import make_openai_client  # openai takes ~0.9 s to import

        self.model = model
        self.strict = strict
        self.json_object = False  # set when the server refuses JSON-schema output
        self._misconfigured: LLMError | None = None  # a wrong model, key or URL: said once, then no more requests
        try:
            self._client = make_openai_client(base_url, api_key, timeout=timeout, max_retries=max_retries)
        except ValueError as exc:
            raise LLMError(str(exc)) from exc

    async def complete_json(
        self,
        *,
        system: str,
        user: str,
        schema: type[T],
        temperature: float = 0.1,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> T:
        import openai

        from memory.providers.openai_client import api_error_detail

        if self._misconfigured is not None:
            raise self._misconfigured
        asked_system, response_format = self._format(system, schema)
        try:
            completion = await self._client.chat.completions.create(
                model=self.model,
                messages=[{"role": "system", "content": asked_system}, {"role": "user", "content": user}],
                temperature=temperature,
                max_tokens=max_tokens,
                # the JSON-object form carries a schema beside it (llama-cpp's), which OpenAI's types do not name
                response_format=cast("ResponseFormat", response_format),
            )
        except openai.APIStatusError as exc:
            if not self.json_object and "response_format" in api_error_detail(exc):
                log.warning("the LLM server refuses JSON-schema output; asking it for JSON objects instead")
                self.json_object = True
                return await self.complete_json(
                    system=system, user=user, schema=schema, temperature=temperature, max_tokens=max_tokens
                )
            raise self._failed(exc) from exc
        except (openai.OpenAIError, ValueError) as exc:
            raise self._failed(exc) from exc
        return _answer(self._completion(completion), schema, max_tokens)

    def _format(self, system: str, schema: type[pydantic.BaseModel]) -> tuple[str, dict[str, Any]]:
        """The system prompt and the ``response_format`` to send: JSON-schema output, or a JSON object with the
        schema in the instructions for a server that refused it."""
        if not self.json_object:
            return system, response_format_for(schema, strict=self.strict)
        json_schema = schema.model_json_schema()
        said = json.dumps(json_schema, separators=(",", ":"))
        instructions = f"{system}\n\nAnswer with one JSON object valid under this JSON schema: {said}"
        return instructions, {"type": "json_object", "schema": json_schema}

    def _failed(self, exc: Exception) -> LLMError:
        """The error a failed request is told as: unavailable when no answer came at all."""
        import openai

        from memory.providers.openai_client import api_error_detail

        if isinstance(exc, openai.APIStatusError):
            said = f"LLM request failed: HTTP {exc.status_code}: {self._said(api_error_detail(exc))}"
            if check := self._setting_to_check(exc):
                # asking again will not help, nor will a job's retries: the request fails the same until the DM
                # fixes the setting, so the callers' offline path serves at once
                log.error("%s — %s", said, check)
                self._misconfigured = LLMError(f"{said} — {check}")
                return self._misconfigured
            failed = LLMError if exc.status_code in BAD_REQUEST else LLMUnavailable
            return failed(said)
        if isinstance(exc, openai.APITimeoutError):
            tries = self._client.max_retries + 1
            return LLMTimeout(
                f"LLM request timed out after {self._client.timeout} s ({tries} tr{'y' if tries == 1 else 'ies'}) at "
                f"{self._client.base_url}: "
                "raise LOREKEEPER_LLM_TIMEOUT, or use a faster model"
            )
        if isinstance(exc, openai.APIConnectionError):
            return LLMUnavailable(f"LLM unreachable: {self._said(str(exc))}")
        if isinstance(exc, openai.OpenAIError):
            return LLMError(f"LLM request failed: {type(exc).__name__}: {self._said(str(exc))}")
        # a 200 whose body is not JSON (a proxy's error page): no answer at all
        return LLMUnavailable(f"LLM answer is not JSON: {self._said(str(exc))}")

    def _setting_to_check(self, exc: Exception) -> str | None:
        """What the DM should check when the server refuses the settings rather than the request: a key it does
        not take (401, 403), a model it does not have or a URL it does not serve (404)."""
        import openai

        url = str(self._client.base_url).rstrip("/")
        if not isinstance(exc, openai.APIStatusError) or exc.status_code not in (401, 403, 404):
            return None
        if exc.status_code != 404:
            return f"check OPENAI_API_KEY (the server at {url} refuses it)"
        if "model" in str(exc).lower():
            return f"check LOREKEEPER_LLM_MODEL: {self.model!r} is not a model the server at {url} has"
        hint = "" if url.endswith("/v1") else " (an OpenAI-compatible URL usually ends in /v1)"
        return f"check OPENAI_BASE_URL: {url}/chat/completions was not found{hint}"

    def _completion(self, completion: object) -> ChatCompletion:
        """The chat completion a 200 brought, or the error that says what came instead."""
        from openai.types.chat import ChatCompletion

        if isinstance(completion, str):  # a 200 served as text: a proxy's error page, no answer at all either
            raise LLMUnavailable(f"LLM answer is not JSON: {self._said(completion)}")
        if not isinstance(completion, ChatCompletion):
            raise LLMError(f"LLM answer is not a chat completion: {_short(repr(completion))}")
        return completion

    def _said(self, text: str) -> str:
        from memory.providers.openai_client import without_key

        return _short(without_key(self._client, text))

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.close()


def _answer(completion: ChatCompletion, schema: type[T], max_tokens: int) -> T:
    """The first choice's JSON as ``schema``, unless the model refused, was cut off or was filtered."""
    if not completion.choices:
        raise LLMError("LLM answer has no choices")
    choice = completion.choices[0]
    message = choice.message
    if message.refusal:
        raise LLMError(f"LLM refused: {_short(message.refusal)}")
    if choice.finish_reason == "length":
        raise LLMError(f"LLM answer was cut off at its cap of {max_tokens:,} tokens (finish_reason=length)")
    if choice.finish_reason == "content_filter":
        raise LLMError("LLM answer was withheld by a content filter")
    return parse_json_answer(message.content, schema)


def parse_json_answer(content: str | None, schema: type[T]) -> T:
    """Validate an LLM's JSON text as ``schema``, tolerating a Markdown code fence around it."""
    if not isinstance(content, str):
        raise LLMError(f"LLM answer has no text: {_short(repr(content))}")
    if not content.strip():
        raise LLMError("LLM answer is empty")
    # Models served without schema enforcement often wrap JSON in ```json fences despite instructions.
    fenced = _FENCE.match(content)
    text = fenced.group(1) if fenced else content
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LLMError(f"LLM answer is not valid JSON ({exc.msg}): {_short(content)!r}") from exc
    try:
        return schema.model_validate(data)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "<root>"
        raise LLMError(
            f"LLM answer does not match {schema.__name__}: {where}: {first['msg']} ({exc.error_count()} error(s))"
        ) from exc


def response_format_for(schema: type[pydantic.BaseModel], *, strict: bool = True) -> dict[str, Any]:
    """The ``response_format`` for ``schema``; strict only when strict mode can express the schema."""
    json_schema = schema.model_json_schema()
    strict_schema = _strict_variant(json_schema) if strict else None
    return {
        "type": "json_schema",
        "json_schema": {
            "name": re.sub(r"[^A-Za-z0-9_-]", "_", schema.__name__)[:64],
            "schema": strict_schema if strict_schema is not None else json_schema,
            "strict": strict_schema is not None,
        },
    }


def _strict_variant(schema: dict[str, Any]) -> dict[str, Any] | None:
    """A copy of ``schema`` in the form OpenAI's strict mode demands, or None if it cannot be expressed.

    Strict mode wants every object closed (``additionalProperties: false``) with all its properties required.
    Requiring fields that have defaults is harmless: the model then always states them, and pydantic accepts
    that. Free-form objects (``dict[str, X]``) have no strict form.
    """
    result = copy.deepcopy(schema)

    def visit(node: Any) -> bool:
        if not isinstance(node, dict):
            return True
        if node.get("type") == "object" or "properties" in node:
            closed = node.get("additionalProperties") in (None, False)
            if not closed or not isinstance(node.get("properties"), dict):
                return False
            node["additionalProperties"] = False
            node["required"] = list(node["properties"])
        # With every field required a default means nothing to the server, and strict mode rejects some
        # (a null default, which pydantic emits for every Optional field).
        node.pop("default", None)
        children: list[Any] = [node.get("items")]
        for key in ("properties", "$defs", "definitions"):
            children.extend(node.get(key, {}).values())
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            children.extend(node.get(key, []))
        return all(visit(child) for child in children)

    return result if visit(result) else None


def _short(text: str) -> str:
    return clip(" ".join(text.split()), _SNIPPET)
