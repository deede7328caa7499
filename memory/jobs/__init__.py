"""Background jobs on the durable PostgreSQL queue (pgqueuer): chunk+embed, extract, correction stage 2, heard-as,
summary.

Every job is idempotent, so the queue's at-least-once delivery is enough: a job re-picked after a crash (its
heartbeat went stale) redoes only what did not commit. Chunk keys are deterministic (upserts), embeddings come
from a cache keyed by (model, content hash), extraction is idempotent and remembers how far it got per session,
and the summary's event entity and links are upserts.

The package, bottom to top: :mod:`~memory.jobs.queue` (enqueueing and progress, on the database only: the graph,
the store and the recorder import it), :mod:`~memory.jobs.embedding`, :mod:`~memory.jobs.context`, the steps by
kind (:mod:`~memory.jobs.chunk`, :mod:`~memory.jobs.extract`, :mod:`~memory.jobs.stage2`,
:mod:`~memory.jobs.heard_as`, :mod:`~memory.jobs.summary`), :mod:`~memory.jobs.admin` (held jobs, the queue's
log) and :mod:`~memory.jobs.worker`. Recap writing is :mod:`memory.recap`, outage classification
:mod:`memory.outage`.

The old names (``from memory import jobs; jobs.enqueue_session_work``) still work, loaded on first use: importing
``memory.jobs.queue`` runs this file, and an eager import of the steps here would import the store while the
store itself is being imported. New code imports from the submodules.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory.jobs.admin import (
        JOB_LOG_KEPT,
        HeldJob,
        failed_jobs,
        held_jobs,
        prune_job_log,
        requeue_failed,
    )
    from memory.jobs.chunk import chunk_session
    from memory.jobs.context import JobContext, make_job_context
    from memory.jobs.embedding import EmbedStats, embed_cached
    from memory.jobs.extract import extract_session
    from memory.jobs.heard_as import correct_heard_as, correct_heard_as_lines, restore_heard_as, restore_heard_as_lines
    from memory.jobs.queue import (
        CHUNK,
        CORRECT2,
        ENTRYPOINTS,
        EXTRACT,
        HEARD,
        SUMMARY,
        UNHEARD,
        BadJobError,
        delete_campaign_jobs,
        enqueue_recorrection,
        enqueue_restoration,
        enqueue_session_work,
        enqueue_summary,
        pending_jobs,
        rewind_progress,
        wait_until_idle,
    )
    from memory.jobs.stage2 import correct_stage2
    from memory.jobs.summary import summarize_session
    from memory.jobs.worker import build_queue_manager, run_workers
    from memory.outage import is_outage, outage_said, short_reason
    from memory.recap import RECAP_MAX_TOKENS, Recap, extractive_summary, recap_for_players

#: The old public names of ``memory.jobs``, by the module that holds each now.
_MOVED_TO: dict[str, tuple[str, ...]] = {
    "memory.jobs.queue": (
        "CHUNK",
        "EXTRACT",
        "CORRECT2",
        "SUMMARY",
        "HEARD",
        "UNHEARD",
        "ENTRYPOINTS",
        "BadJobError",
        "enqueue_session_work",
        "enqueue_recorrection",
        "enqueue_restoration",
        "enqueue_summary",
        "rewind_progress",
        "pending_jobs",
        "delete_campaign_jobs",
        "wait_until_idle",
    ),
    "memory.jobs.admin": (
        "JOB_LOG_KEPT",
        "prune_job_log",
        "requeue_failed",
        "HeldJob",
        "held_jobs",
        "failed_jobs",
    ),
    "memory.jobs.embedding": (
        "EmbedStats",
        "embed_cached",
    ),
    "memory.jobs.context": (
        "JobContext",
        "make_job_context",
    ),
    "memory.jobs.chunk": ("chunk_session",),
    "memory.jobs.extract": ("extract_session",),
    "memory.jobs.stage2": ("correct_stage2",),
    "memory.jobs.heard_as": (
        "correct_heard_as",
        "correct_heard_as_lines",
        "restore_heard_as",
        "restore_heard_as_lines",
    ),
    "memory.jobs.summary": ("summarize_session",),
    "memory.jobs.worker": (
        "build_queue_manager",
        "run_workers",
    ),
    "memory.outage": (
        "is_outage",
        "outage_said",
        "short_reason",
    ),
    "memory.recap": (
        "Recap",
        "RECAP_MAX_TOKENS",
        "extractive_summary",
        "recap_for_players",
    ),
}
_MOVED = {name: module for module, names in _MOVED_TO.items() for name in names}

__all__ = [
    "CHUNK",
    "CORRECT2",
    "ENTRYPOINTS",
    "EXTRACT",
    "HEARD",
    "JOB_LOG_KEPT",
    "RECAP_MAX_TOKENS",
    "SUMMARY",
    "UNHEARD",
    "BadJobError",
    "EmbedStats",
    "HeldJob",
    "JobContext",
    "Recap",
    "build_queue_manager",
    "chunk_session",
    "correct_heard_as",
    "correct_heard_as_lines",
    "correct_stage2",
    "delete_campaign_jobs",
    "embed_cached",
    "enqueue_recorrection",
    "enqueue_restoration",
    "enqueue_session_work",
    "enqueue_summary",
    "extract_session",
    "extractive_summary",
    "failed_jobs",
    "held_jobs",
    "is_outage",
    "make_job_context",
    "outage_said",
    "pending_jobs",
    "prune_job_log",
    "recap_for_players",
    "requeue_failed",
    "restore_heard_as",
    "restore_heard_as_lines",
    "rewind_progress",
    "run_workers",
    "short_reason",
    "summarize_session",
    "wait_until_idle",
]


def __getattr__(name: str) -> Any:
    if (module := _MOVED.get(name)) is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_MOVED])
