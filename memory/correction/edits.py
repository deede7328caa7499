"""Applying corrections to a text and mapping offsets between the raw and the corrected text."""

from __future__ import annotations

from collections.abc import Sequence

from memory.models import Correction


def apply_corrections(raw: str, corrections: list[Correction]) -> str:
    """``raw`` with every (non-overlapping) correction's span replaced; everything around it untouched."""
    out: list[str] = []
    pos = 0
    for c in sorted(corrections, key=lambda c: c.start):
        out.append(raw[pos : c.start])
        out.append(c.replacement)
        pos = c.end
    out.append(raw[pos:])
    return "".join(out)


def merge_corrections(surer: Sequence[Correction], others: Sequence[Correction]) -> list[Correction]:
    """``surer`` and those of ``others`` (raw-text spans both) that overlap none of them, in text order."""
    kept = [c for c in others if not any(c.start < s.end and s.start < c.end for s in surer)]
    return sorted([*surer, *kept], key=lambda c: c.start)


def to_raw_offset(offset: int, corrections: list[Correction]) -> int:
    """The raw-text offset of ``offset`` in the corrected text; it must lie outside every replacement."""
    shift = 0
    for c in sorted(corrections, key=lambda c: c.start):
        if c.start + shift + len(c.replacement) > offset:
            break
        shift += len(c.replacement) - (c.end - c.start)
    return offset - shift


def to_corrected_span(span: tuple[int, int], corrections: list[Correction]) -> tuple[int, int]:
    """A raw-text span lying outside every correction, in the coordinates of the corrected text."""
    delta = sum(len(c.replacement) - (c.end - c.start) for c in corrections if c.end <= span[0])
    return span[0] + delta, span[1] + delta
