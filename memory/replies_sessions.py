"""Sentences for the DM about sessions: what deleting one removed and kept.

Plain functions over what the store reports; no database. (The graph's sentences are :mod:`memory.replies`.)
"""

from __future__ import annotations

from typing import Protocol

from memory.errors import quoted
from memory.text import counted


class DeletedCounts(Protocol):
    """What deleting a session reports (:class:`memory.session_delete.DeletedSession` is one)."""

    title: str
    lines: int
    chunks: int
    pending_entities: int
    pending_facts: int
    recap: bool
    recap_links: int
    kept_recap: str | None
    kept_recap_facts: int
    jobs: int
    kept_entities: int
    kept_facts: int


def deleted_session_said(deleted: DeletedCounts) -> str:
    """What was removed and what stayed, in a sentence or two for the DM."""
    removed = [counted(deleted.lines, "line"), counted(deleted.chunks, "passage")]
    if deleted.pending_entities or deleted.pending_facts:
        removed.append(
            f"{counted(deleted.pending_entities, 'entity', 'entities')} and {counted(deleted.pending_facts, 'fact')}"
            " waiting for review"
        )
    if deleted.recap:
        removed.append(f"its recap entity with {counted(deleted.recap_links, 'link')} to who took part")
    elif deleted.recap_links:
        removed.append(f"{counted(deleted.recap_links, 'link')} of its recap to who took part")
    if deleted.jobs:
        removed.append(counted(deleted.jobs, "waiting background job"))
    text = f"Deleted session {quoted(deleted.title)}: {', '.join(removed)}."
    if deleted.kept_entities or deleted.kept_facts:
        text += (
            f" Kept {counted(deleted.kept_entities, 'entity', 'entities')} and {counted(deleted.kept_facts, 'fact')}"
            " heard in it that were accepted or rejected."
        )
    if deleted.kept_recap:
        n = deleted.kept_recap_facts
        text += (
            f" Kept its recap entity {deleted.kept_recap!r}: {counted(n, 'fact')} you accepted"
            f" {'is' if n == 1 else 'are'} about it (remove it as any entity if it should go too)."
        )
    return text
