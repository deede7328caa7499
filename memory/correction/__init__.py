"""Transcript correction: stage 1 phonetic matching, stage 2 verified LLM correction, and the pipeline."""

from memory.correction.evidence import MatchSettings
from memory.correction.index import EntityName, PhoneticIndex
from memory.correction.matcher import PhoneticMatcher, Stage1Result

__all__ = ["EntityName", "MatchSettings", "PhoneticIndex", "PhoneticMatcher", "Stage1Result"]
