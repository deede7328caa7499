"""Transcript correction: stage 1 phonetic matching, stage 2 verified LLM correction, and the pipeline."""

from memory.correction.evidence import MatchSettings
from memory.correction.index import EntityName, PhoneticIndex
from memory.correction.llm import LLMCorrector
from memory.correction.matcher import PhoneticMatcher, Stage1Result
from memory.correction.pipeline import CorrectionResult, Pipeline

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
