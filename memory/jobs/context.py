"""What the jobs of one worker share."""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memory.chunking import ChunkSettings
from memory.jobs.embedding import EmbedStats
from memory.store import Memory

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from memory.providers.embeddings import Embedder
    from memory.providers.llm import LLMClient


@dataclass
class JobContext:
    """What the jobs share in one worker: the memory, the embedder (model loaded once), the optional LLM."""

    memory: Memory
    embedder: Embedder
    embedding_model: str
    llm: LLMClient | None = None
    chunk_settings: ChunkSettings = field(default_factory=ChunkSettings)
    embed_stats: EmbedStats = field(default_factory=EmbedStats)
    chunks_written: int = 0
    jobs_done: int = 0  # the jobs this worker ran to their end (their session gone: skipped)
    jobs_failed: int = 0  # those held after their last try


def make_job_context(memory: Memory, settings: Any) -> JobContext:
    """The jobs' context from the app's settings: the configured embedder, and the LLM when one is enabled."""
    # The providers load onnxruntime or openai: imported when a worker is made, not with the package.
    from memory.providers.embeddings import make_embedder

    api_key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    embedder = make_embedder(
        settings.embedding_provider,
        settings.embedding_model,
        settings.openai_base_url,
        api_key,
        settings.embedding_dim,
    )
    llm = None
    warn_if_llm_off(settings)
    if settings.llm_enabled:
        from memory.providers.llm import OpenAILLM

        llm = OpenAILLM(settings.openai_base_url, api_key, settings.llm_model, timeout=settings.llm_timeout)
    return JobContext(memory=memory, embedder=embedder, embedding_model=settings.embedding.model, llm=llm)


def warn_if_llm_off(settings: Any) -> None:
    """Say (once a process) that the LLM model set is not used: a DM who forgot the URL believes the LLM reads."""
    if settings.llm_model and not settings.llm_enabled:
        _say_llm_off(settings.llm_model)


@functools.cache
def _say_llm_off(model: str) -> None:
    log.warning(
        "LOREKEEPER_LLM_MODEL is set (%s) but neither OPENAI_BASE_URL nor OPENAI_API_KEY: the LLM is off, "
        "the offline rules and recaps serve",
        model,
    )
