"""The correction pipeline: stage 1 inline, stage 2 (LLM) when one is configured; the raw text is kept."""

from __future__ import annotations

from pydantic import BaseModel, Field

from memory.correction.edits import apply_corrections, to_corrected_span, to_raw_offset
from memory.correction.evidence import MatchSettings
from memory.correction.index import EntityName, PhoneticIndex
from memory.correction.llm import LLMCorrector
from memory.correction.matcher import PhoneticMatcher, Stage1Result
from memory.correction.text import align_confidences, tokenize
from memory.models import Correction
from memory.providers.llm import LLMClient


class CorrectionResult(BaseModel):
    text: str  # corrected
    raw_text: str  # as recognised
    corrections: list[Correction] = Field(default_factory=list)  # offsets into raw_text


class Pipeline:
    """Corrects utterances against one campaign's entities. Call :meth:`set_entities` when they change."""

    def __init__(
        self,
        entities: list[EntityName],
        *,
        settings: MatchSettings | None = None,
        llm: LLMClient | None = None,
        lazy: bool = False,
    ) -> None:
        """``lazy``: for entities corrected against once or a few times (see ``PhoneticIndex.prepare``)."""
        self.settings = settings or MatchSettings()
        self.llm = llm
        self.set_entities(entities, lazy=lazy)

    def set_entities(self, entities: list[EntityName], *, lazy: bool = False) -> None:
        index = PhoneticIndex.build(entities, lazy=lazy)
        self.matcher = PhoneticMatcher(index, self.settings)
        self.stage2 = LLMCorrector(self.llm, index) if self.llm is not None else None

    def correct_fast(self, text: str, words: list[tuple[str, float | None]] | None = None) -> CorrectionResult:
        """Stage 1 only: in-process and quick enough for the live path."""
        return self._result(text, self._stage1(text, words).corrections)

    async def correct(self, text: str, words: list[tuple[str, float | None]] | None = None) -> CorrectionResult:
        """Stage 1, then stage 2 on the doubtful spans stage 1 left (when an LLM is configured)."""
        confidences = self._confidences(text, words)
        first = self.matcher.correct(text, confidences)
        corrections = list(first.corrections)
        if self.stage2 is not None and first.suspects:
            stage1_text = apply_corrections(text, corrections)
            shifted = [to_corrected_span(span, corrections) for span in first.suspects]
            # the recogniser's doubt is stage 2's evidence for an ordinary word (see ``CommonWordRule``)
            moved = shift_confidences(text, stage1_text, corrections, confidences) if confidences else None
            for c in await self.stage2.correct(stage1_text, shifted, confidences=moved):
                start = to_raw_offset(c.start, first.corrections)
                corrections.append(c.model_copy(update={"start": start, "end": start + len(c.span)}))
        return self._result(text, corrections)

    def _stage1(self, text: str, words: list[tuple[str, float | None]] | None) -> Stage1Result:
        return self.matcher.correct(text, self._confidences(text, words))

    @staticmethod
    def _confidences(text: str, words: list[tuple[str, float | None]] | None) -> list[float | None] | None:
        return align_confidences(text, tokenize(text), words) if words else None

    @staticmethod
    def _result(text: str, corrections: list[Correction]) -> CorrectionResult:
        ordered = sorted(corrections, key=lambda c: c.start)
        return CorrectionResult(text=apply_corrections(text, ordered), raw_text=text, corrections=ordered)


def shift_confidences(
    raw: str, corrected: str, corrections: list[Correction], confidences: list[float | None]
) -> list[float | None]:
    """Per token of ``corrected`` (``raw`` with ``corrections`` applied), the confidence of the raw token it
    is; a token of a replacement has none."""
    at = {t.start: c for t, c in zip(tokenize(raw), confidences, strict=True)}
    replaced = [
        (a, a + len(c.replacement)) for c in corrections for a, _ in [to_corrected_span((c.start, c.end), corrections)]
    ]
    return [
        None if any(a <= t.start < b for a, b in replaced) else at.get(to_raw_offset(t.start, corrections))
        for t in tokenize(corrected)
    ]
