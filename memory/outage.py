"""Outage classification: whether an error means something is away (the database, the LLM, the network) rather
than wrong, and what to tell the DM about it.
"""

from __future__ import annotations

import asyncpg

from memory.errors import Unavailable

#: What is away, not wrong: the LLM, the database or the network. A job that failed on one of these is worth
#: running again later.
_OUTAGES: tuple[type[BaseException], ...] = (
    OSError,  # connections refused or reset, timeouts
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,  # the connection closed under the query
    asyncpg.InternalClientError,  # a pooled connection whose server said goodbye, its closed socket not yet seen
    asyncpg.exceptions.OperatorInterventionError,  # the server shutting down or starting up
    asyncpg.exceptions.InsufficientResourcesError,  # too many connections, disk full
    asyncpg.exceptions.TransactionRollbackError,  # a deadlock or serialization failure lost
)


def is_outage(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:  # wrapped errors count by what they wrap
        if isinstance(current, (*_OUTAGES, Unavailable)):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def short_reason(exc: BaseException) -> str:
    """What started an outage, in one line: the first outage error of the chain (later ones are often cleanup
    failing on the dead connection), the first line of its message."""
    exc = _first_outage(exc)
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def outage_said(exc: BaseException) -> tuple[str, str]:
    """What is away, as the DM reads it, and what to do before trying again: a full disk is not waited out."""
    if isinstance(_first_outage(exc), asyncpg.exceptions.DiskFullError):
        return "the database's disk is full", "free some space on it, then "
    return "the database stopped or cannot be reached", ""


def _first_outage(exc: BaseException) -> BaseException:
    chain = [exc]
    while (earlier := chain[-1].__cause__ or chain[-1].__context__) is not None and earlier not in chain:
        chain.append(earlier)
    # a provider's error says what is away in its own words ("LLM request timed out after 60 s at …"), where what
    # it wraps may be a bare TimeoutError
    provider = next((e for e in chain if isinstance(e, Unavailable)), None)
    return provider or next((e for e in reversed(chain) if isinstance(e, _OUTAGES)), chain[-1])
