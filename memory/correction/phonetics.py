"""Double Metaphone keys, including the one-edit neighbourhood used to find near-homophones."""

from __future__ import annotations

from functools import lru_cache

from doublemetaphone import doublemetaphone

#: Codes shorter than this only match exactly: a one-edit neighbourhood of "TR" or "KN" is half the lexicon.
MIN_FUZZY_CODE = 4


@lru_cache(maxsize=131072)
def codes(spaceless: str) -> tuple[str, ...]:
    """Distinct non-empty Double Metaphone codes (primary first) of a normalised, space-free string."""
    primary, secondary = doublemetaphone(spaceless)
    if not primary:
        return ()
    return (primary,) if secondary in ("", primary) else (primary, secondary)


@lru_cache(maxsize=131072)
def deletions(code: str) -> frozenset[str]:
    """All codes one deletion away. Two codes within one edit share a member of ``{code} ∪ deletions``."""
    return frozenset(code[:i] + code[i + 1 :] for i in range(len(code)))
