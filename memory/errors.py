"""Errors the memory core raises for the user to see; their messages are written for a DM."""


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
