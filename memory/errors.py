"""Errors the memory core raises for the user to see; their messages are written for a DM."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from difflib import get_close_matches

from pydantic import ValidationError


class MemoryError_(Exception):
    """Base of the memory core's user-facing errors. ``subject`` says what kind of thing the error is about
    (``"entity"``, ``"campaign"``, ``"review item"``) and ``name`` which one, for the front end to add its next
    step: the command line and Discord have different commands for it."""

    def __init__(self, message: str, *, subject: str | None = None, name: str | None = None) -> None:
        super().__init__(message)
        self.subject, self.name = subject, name


class NotFoundError(MemoryError_, LookupError):
    pass


class AlreadyExistsError(MemoryError_, ValueError):
    pass


class InvalidInputError(MemoryError_, ValueError):
    pass


class AlreadyDecidedError(MemoryError_):
    """A review item that was accepted or rejected already. The message names it by id (``ref``), as a command
    given many ids must; :meth:`in_words` says it for a reply under the item's own card, which the DM is reading.
    ``correctable``: an accepted fact, which the graph's commands correct now, no longer review."""

    def __init__(self, ref: str, status: str, what: str, *, correctable: bool = False) -> None:
        fix = "; to correct it, `entity link` the right one (this one is kept as history), or `entity unlink` it if it "
        fix += "was never true"
        super().__init__(f"{ref} was already {status}: {what}{fix * correctable}", name=ref)
        self.status, self.what, self.correctable = status, what, correctable

    def in_words(self, fix: str = "") -> str:
        """The item as its card's reader is told: ``Already accepted: Jazna leads Whitestone.``, then ``fix`` (the
        front end's words for correcting it) when the item is an accepted fact."""
        said = f"Already {self.status}: {self.what.rstrip('.')}."
        return f"{said} {fix}" if fix and self.correctable else said


class Unavailable(Exception):
    """Mixed into a provider's error when no answer came at all: the endpoint could not be reached, timed out, or
    refused the call for a reason other than the request itself (auth, rate limit, overload). The same call may
    work later: a background job retries rather than go on without it, or give up on its data."""


#: A front end's next steps: (error class, subject) → what the DM can do, ``{name}`` standing for the error's name.
NextSteps = Mapping[tuple[type[MemoryError_], str], str]


def with_next_step(exc: MemoryError_, steps: NextSteps, quote: Callable[[str], str] = str) -> str:
    """``exc``'s message and, when ``steps`` has one for its kind and subject, what to do next."""
    for (kind, subject), step in steps.items():
        if isinstance(exc, kind) and exc.subject == subject:
            return f"{exc}: {step.format(name=quote(exc.name or ''))}"
    return str(exc)


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


def describe_value(value: object) -> str:
    """A value read from a file (JSON or YAML), as an error about its kind shows it: ``not a list``, ``not the
    number 3``; text is quoted and cut, so a pasted chapter does not become the error."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing (empty)"
    if isinstance(value, bool):
        return f"{str(value).lower()} (true/false)"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        return repr(value if len(value) <= 60 else value[:59] + "…")
    return repr(value)


#: Invisible characters that are part of what a name shows: the joiner of an emoji sequence ("🧙‍♂️").
_JOINERS = frozenset("\u200c\u200d")


def quoted(text: str) -> str:
    """``'text'`` for a message: a name or title as the DM typed it and can copy back. Unlike ``repr``, an emoji's
    joiner stays itself ('🧙‍♂️ Wizard night', not '🧙\\u200d♂️ Wizard night', which names no campaign); other
    characters that print nothing (controls, line breaks, bidi overrides) are still written as escapes."""
    return "'" + printable(text) + "'"


def printable(text: str) -> str:
    """``text`` as :func:`quoted` writes it, without the quotes: a bidi override (U+202E) in it is written
    ``\\u202e``, so it cannot reverse the rest of the message."""
    return "".join(ch if ch.isprintable() or ch in _JOINERS else repr(ch)[1:-1] for ch in text)


def did_you_mean(wanted: str, names: Iterable[str]) -> str:
    """`` (did you mean 'Night 1'?)`` for the name closest to ``wanted`` (case ignored), else the one name that
    has ``wanted`` as the start of a word ("Vox" for 'Vox Machina': too short for a close match), or ''."""
    by_key = {name.casefold(): name for name in names}
    key = wanted.casefold().strip()
    close = get_close_matches(key, list(by_key), n=1)
    if not close and key:
        starts = [k for k in by_key if any(word.startswith(key) for word in [k, *k.split()])]
        close = starts if len(starts) == 1 else []
    return f" (did you mean {quoted(by_key[close[0]])}?)" if close else ""
