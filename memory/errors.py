"""Errors the memory core raises for the user to see; their messages are written for a DM."""

from __future__ import annotations

from pydantic import ValidationError


class MemoryError_(Exception):
    """Base of the memory core's user-facing errors."""


class NotFoundError(MemoryError_, LookupError):
    pass


class AlreadyExistsError(MemoryError_, ValueError):
    pass


class InvalidInputError(MemoryError_, ValueError):
    pass


class AlreadyDecidedError(MemoryError_):
    """A review item that was accepted or rejected already."""


class Unavailable(Exception):
    """Mixed into a provider's error when no answer came at all: the endpoint could not be reached, timed out, or
    refused the call for a reason other than the request itself (auth, rate limit, overload). The same call may
    work later: a background job retries rather than go on without it, or give up on its data."""


#: HTTP statuses that say the request itself is wrong (too long, malformed): asking again will not help.
BAD_REQUEST = frozenset({400, 413, 422})


def validation_problems(exc: ValidationError) -> str:
    """What a pydantic error says is wrong, field by field, without the values given: those may be secrets (a
    token under a mistyped key of a config file)."""
    problems = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error.get("loc", ()))
        message = error["msg"].removeprefix("Value error, ")  # a ValueError raised by the store's own checks
        problems.append(f"{where}: {message}" if where else message)
    return "; ".join(problems)
