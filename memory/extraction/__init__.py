"""Extraction into L3: the salience gate, extractors (rules offline, an LLM when configured), ``propose`` (the
extractor's validated proposal, nothing written) and ``file_proposal`` (its writes), which the extraction job calls
apart so that no transaction waits on an LLM, and ``extract_into_graph``, both in one."""

from memory.extraction.llm import LLMExtractor
from memory.extraction.pipeline import (
    Proposal,
    extract_into_graph,
    file_proposal,
    known_entities,
    make_extractor,
    propose,
)
from memory.extraction.rules import RuleExtractor
from memory.extraction.salience import is_trivial
from memory.extraction.schema import (
    ExtractionAnswer,
    ExtractionResult,
    ExtractionStats,
    Extractor,
    KnownEntity,
    ProposedEntity,
    ProposedFact,
)

__all__ = [
    "ExtractionAnswer",
    "ExtractionResult",
    "ExtractionStats",
    "Extractor",
    "KnownEntity",
    "LLMExtractor",
    "Proposal",
    "ProposedEntity",
    "ProposedFact",
    "RuleExtractor",
    "extract_into_graph",
    "file_proposal",
    "is_trivial",
    "known_entities",
    "make_extractor",
    "propose",
]
