"""Transcript correction: stage 1 phonetic matching, stage 2 verified LLM correction, and the pipeline.

The names below load on first use (PEP 562): a command that only needs ``memory.correction.text`` (listing
entities) does not pay for the matcher's tables, rapidfuzz and wordfreq."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory.correction.evidence import MatchSettings
    from memory.correction.index import EntityName, PhoneticIndex
    from memory.correction.llm import LLMCorrector
    from memory.correction.matcher import PhoneticMatcher, Stage1Result
    from memory.correction.pipeline import CorrectionResult, Pipeline

_WHERE = {
    "CorrectionResult": "pipeline",
    "EntityName": "index",
    "LLMCorrector": "llm",
    "MatchSettings": "evidence",
    "PhoneticIndex": "index",
    "PhoneticMatcher": "matcher",
    "Pipeline": "pipeline",
    "Stage1Result": "matcher",
}

__all__ = [
    "CorrectionResult",
    "EntityName",
    "LLMCorrector",
    "MatchSettings",
    "PhoneticIndex",
    "PhoneticMatcher",
    "Pipeline",
    "Stage1Result",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value  # once: the next lookup is a plain attribute
    return value
