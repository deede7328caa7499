"""Stage 2: an LLM proposes name fixes for doubtful spans; a verify step keeps only what it may change.

The model sees the utterance, the doubtful spans and the candidate entity names, and answers with the
corrected text plus an itemised list of substitutions. Its text is never used as such: the verify step diffs
it word by word against the input and rebuilds the output from the input, applying only changes that are
declared, target a known entity, touch nothing but a doubtful span, leave exact names alone and sound like
the words they replace. Anything else — a reworded sentence, a "fixed" ordinary word, an invented name, a name
guessed from context ("the old man" is Vaskerrin Holt), a failed call — changes nothing.
"""

from __future__ import annotations

import difflib
import json
import logging
from collections.abc import Collection
from dataclasses import dataclass

from pydantic import BaseModel, Field
from rapidfuzz import process
from rapidfuzz.distance import JaroWinkler, Levenshtein

from memory.correction.evidence import word_zipf
from memory.correction.index import MIN_SOUND_PHONES, NameForm, PhoneticIndex, near_edits
from memory.correction.pronounce import phrase_phones
from memory.correction.text import Token, may_be_plural, normalize, tokenize
from memory.models import Correction
from memory.providers.llm import LLMClient, LLMError, LLMUnavailable

log = logging.getLogger(__name__)

#: Longest run of a doubtful span's words compared by sound with the names.
_MAX_RUN = 5


def answer_cap(text: str, spans: list[str]) -> int:
    """The answer's length cap in tokens: the utterance again, a substitution per doubtful span and the JSON
    around them, each at two characters a token (English runs near four; invented names cost more)."""
    return 128 + len(text) // 2 + sum(32 + len(span) // 2 for span in spans)


SYSTEM_PROMPT = """\
You correct speech-recognition errors in one utterance from a tabletop role-playing game session.
The recogniser often mishears invented fantasy names as ordinary English words ("from skin" for "Frumpkin").
Fix ONLY misheard entity names inside the doubtful spans, and only into a name from the entity list.
Do not fix grammar, spelling, punctuation or anything else; if unsure, change nothing.
Answer with JSON: {"text": the utterance with your fixes, "substitutions": [{"heard": the exact words you
replaced, "entity": the entity name from the list}]}. No substitutions means "text" equals the input."""


class Substitution(BaseModel):
    heard: str = Field(description="the exact words of the utterance that were replaced")
    entity: str = Field(description="the entity name, spelled as in the list")


class LLMCorrection(BaseModel):
    text: str
    substitutions: list[Substitution]


class LLMCorrector:
    """Asks ``llm`` about doubtful spans and returns only verified corrections (stage 2)."""

    def __init__(
        self, llm: LLMClient, index: PhoneticIndex, *, max_names: int = 60, common_words: CommonWordRule | None = None
    ) -> None:
        self.llm = llm
        self.index = index
        self.max_names = max_names
        self.common_words = common_words or COMMON_WORDS
        # Declared entities are keyed like the model's words: "Slayer's Take" reads "slayertake" there, though
        # the index spells it "slayerstake". Canonical spellings win.
        self._by_key = {_key(f.surface or f.canonical): f for f in reversed(index.forms)}
        self._by_key.update({f.spaceless: f for f in reversed(index.forms)})
        self._choices = [f.spaceless for f in index.forms]

    async def correct(
        self, text: str, suspects: list[tuple[int, int]], *, retry_later: bool = False
    ) -> list[Correction]:
        """Verified corrections for ``text`` (offsets in ``text``); ``suspects`` are the doubtful spans. With no
        answer the text stays as it is, unless ``retry_later`` (a background job): then ``LLMUnavailable``
        propagates, so the line is not marked as done without stage 2."""
        if not suspects or not self.index.forms:
            return []
        spans = [text[a:b] for a, b in suspects]
        user = json.dumps(
            {"utterance": text, "doubtful_spans": spans, "entities": self.names_for(spans)}, ensure_ascii=False
        )
        try:
            answer = await self.llm.complete_json(
                system=SYSTEM_PROMPT,
                user=user,
                schema=LLMCorrection,
                temperature=0.1,
                max_tokens=answer_cap(text, spans),
            )
        except LLMError as exc:
            if retry_later and isinstance(exc, LLMUnavailable):
                raise
            log.warning("stage 2 correction skipped: %s", exc)
            return []
        return self.verify(text, suspects, answer)

    def names_for(self, spans: list[str]) -> list[str]:
        """The names the model may choose from: every spelling in a small campaign; in a large one (thousands),
        per doubtful span the spellings said like part of it, then those closest in spelling. An alias comes
        with its entity's name, so "card" may be Kord, and Kord is The Stormlord."""
        forms = self.index.forms
        if len(forms) > self.max_names:
            per_span = max(1, self.max_names // len(spans))
            chosen: dict[NameForm, None] = {}
            for span in spans:
                query = normalize(span).replace(" ", "")
                spelled = process.extract(query, self._choices, scorer=JaroWinkler.similarity, limit=per_span)
                alike = [*self._said_alike(span), *(forms[i] for _, _, i in spelled)]
                chosen.update(dict.fromkeys(list(dict.fromkeys(alike))[:per_span]))
            forms = list(chosen)
        names: dict[str, None] = {}
        for f in forms:
            names.update(dict.fromkeys((f.surface or f.canonical, f.canonical)))
        return list(names) if len(self.index.forms) > self.max_names else sorted(names)

    def _said_alike(self, span: str) -> list[NameForm]:
        """Forms pronounced within a phone of some run of the span's words (two for a long name), nearest first."""
        return [alike.form for alike in said_alike(self.index, [t.norm for t in tokenize(span)])]

    def verify(self, text: str, suspects: list[tuple[int, int]], answer: LLMCorrection) -> list[Correction]:
        """Corrections for the changes in ``answer.text`` that may stand; every other change is dropped."""
        before = tokenize(text)
        after = tokenize(answer.text)
        declared = {(_key(s.heard), _key(s.entity)) for s in answer.substitutions}
        matcher = difflib.SequenceMatcher(a=[t.norm for t in before], b=[t.norm for t in after], autojunk=False)
        corrections: list[Correction] = []
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op != "replace":
                continue  # insertions and deletions are never name fixes
            # A block may mix a declared fix with rewording ("from skin flew" → "Frumpkin soared"): only the
            # declared words, replaced in the model's text by the declared entity, are taken from it.
            new = _runs(after[j1:j2])
            for heard_tokens in _runs(before[i1:i2]).values():
                heard = "".join(t.norm for t in heard_tokens)
                for form_key in {e for h, e in declared if h == heard}:
                    change = self._accepted(heard_tokens, form_key, new.keys(), suspects, text)
                    if change is not None:
                        corrections.append(change)
        return corrections

    def _accepted(
        self,
        old: list[Token],
        entity_key: str,
        written: Collection[str],
        suspects: list[tuple[int, int]],
        text: str,
    ) -> Correction | None:
        """``written``: the runs of words of the model's text, keyed as ``entity_key`` is."""
        form = self._declared(entity_key, written)
        if form is None:
            return None  # not a known entity, or declared without being made
        heard = "".join(t.norm for t in old)
        words = [t.norm for t in old]
        # A plural keeps its "s" outside the name, as in stage 1 ("the kwellows" -> "the Quelloths"): when the
        # model writes the plural, or the words sound nearer the name without their "s".
        plural = (
            may_be_plural(words[-1])
            and not form.spaceless.endswith("s")
            and (form.spaceless + "s" in written or _nearer_without_s(words, form))
        )
        if plural:
            words[-1] = words[-1][:-1]
        start, end = old[0].start, old[-1].base_end - plural
        if not any(a <= start and end <= b for a, b in suspects):
            return None  # outside the spans the model was asked about
        if not self._may_become(heard, words, form):
            return None
        return Correction(
            span=text[start:end],
            replacement=form.canonical,
            start=start,
            end=end,
            entity_id=form.entity_id,
            score=round(JaroWinkler.similarity(heard, form.spaceless), 4),
            stage=2,
        )

    def _declared(self, entity_key: str, written: Collection[str]) -> NameForm | None:
        """The known name the model declared (``entity_key``), if it also wrote it (see ``_accepted``)."""
        form = self._by_key.get(entity_key)
        if form is None and entity_key.endswith("s"):
            form = self._by_key.get(entity_key[:-1])  # the name declared in the plural ("Quelloths")
        if form is None or not (entity_key in written or form.spaceless + "s" in written):
            return None
        return form

    def _may_become(self, heard: str, words: list[str], form: NameForm) -> bool:
        """Whether the heard words (``heard`` run together) may be corrected to the name."""
        if heard in self.index.exact_spaceless:
            return False  # an exact name stays as it is
        if (refused := self.index.not_heard) and form.entity_key in (
            refused.get(heard) or (refused.get(heard[:-1], frozenset()) if heard.endswith("s") else frozenset())
        ):
            return False  # the DM says these words are never its name ("manta ray" / Mentiri)
        if not _sounds_like(words, form):
            return False  # a guess from context ("the old man" is Vaskerrin Holt), not a name misheard
        # an ordinary word near a short name ("you fools" / Jules, "cracks" / Krix) stays as said
        return _common_words_may_be(words, form, self.common_words)


@dataclass(frozen=True, slots=True)
class SaidAlike:
    """A name said like the run ``words[first:last]`` of some words, ``edits`` phones away."""

    form: NameForm
    edits: int
    first: int
    last: int  # exclusive


def said_alike(index: PhoneticIndex, words: list[str]) -> list[SaidAlike]:
    """The forms pronounced within a phone of some run of ``words`` (normalised; two phones for a long name), each
    with its nearest run, nearest first: what stage 2 shows the model, and what ``memory.name_report`` proposes."""
    # The index holds a second copy of a name also said the dictionary's way: one entry each, nearest first.
    nearest: dict[tuple[int, str], SaidAlike] = {}
    for i in range(len(words)):
        for j in range(i + 1, min(len(words), i + _MAX_RUN) + 1):
            phones = phrase_phones(words[i:j])
            if len(phones) < MIN_SOUND_PHONES - 1:
                continue
            for form in (*index.sound_candidates(phones), *index.two_edit_candidates(phones, 0)):
                edits = near_edits(phones, form)
                key = (form.entity_key, form.norm)
                if edits is not None and (key not in nearest or edits < nearest[key].edits):
                    nearest[key] = SaidAlike(form, edits, i, j)
    return sorted(nearest.values(), key=lambda e: (e.edits, e.form.surface))


#: Phone edits a misheard name may be from the name: two, or two in five of a long one's phones. Every
#: mishearing of the CRD3 dev set is within this ("cancer" / Zanror: 2 of 5, "sa virgin your royal" /
#: Sovereign Uriel: 3 of 14); a model's guess from context mostly is not.
_MAX_EDITS, _MAX_EDIT_SHARE = 2, 0.4


def _sounds_like(words: list[str], form: NameForm) -> bool:
    """Whether the words could be the name misheard: near it in sound."""
    most = max(_MAX_EDITS, int(_MAX_EDIT_SHARE * len(form.phones)))
    return Levenshtein.distance(phrase_phones(words), form.phones, score_cutoff=most) <= most


@dataclass(frozen=True, slots=True)
class CommonWordRule:
    """What a span of ordinary English words only needs to become a name in stage 2: at most this many phone
    edits from a name of at least this many phones. A model asked about a doubtful "fools" will say Jules if the
    campaign has a Jules; nothing in its answer is evidence, so the sound must be, as in stage 1, if looser:
    stage 1 wants an exact sound from 5 phones and one edit from 8 (``MatchSettings.sound_common_word_phones``,
    ``sound_word_one_edit_phones``). Measured with ``python -m bench.stage2_guard`` (bench/README.md)."""

    common_zipf: float = 3.0  # MatchSettings.common_zipf: from here a word is ordinary English
    exact_phones: int = 4
    one_edit_phones: int = 6
    two_edit_phones: int = 8  # "slay her stake" / Slayer's Take; stage 1 wants 10


COMMON_WORDS = CommonWordRule()


def _common_words_may_be(words: list[str], form: NameForm, rule: CommonWordRule = COMMON_WORDS) -> bool:
    """Whether the words may be the name misheard: any word English rarely uses is (``_sounds_like`` judged
    those); ordinary words only if they sound close enough to a long enough name (``CommonWordRule``)."""
    if any(word_zipf(w) < rule.common_zipf for w in words):
        return True
    edits, phones = Levenshtein.distance(phrase_phones(words), form.phones), len(form.phones)
    least = {0: rule.exact_phones, 1: rule.one_edit_phones, 2: rule.two_edit_phones}.get(edits)
    return least is not None and phones >= least


def _nearer_without_s(words: list[str], form: NameForm) -> bool:
    """Whether words ending in an "s" sound nearer the name without it: a plural, not a sound of the name."""
    singular = [*words[:-1], words[-1][:-1]]
    plain, without = phrase_phones(words), phrase_phones(singular)
    return bool(plain and without) and Levenshtein.distance(without, form.phones) < Levenshtein.distance(
        plain, form.phones
    )


def _runs(tokens: list[Token]) -> dict[str, list[Token]]:
    """Every contiguous run of tokens, keyed by its space-free normal form (the first run wins)."""
    runs: dict[str, list[Token]] = {}
    for i in range(len(tokens)):
        for j in range(i + 1, len(tokens) + 1):
            runs.setdefault("".join(t.norm for t in tokens[i:j]), tokens[i:j])
    return runs


def _key(words: str) -> str:
    # Compared like the tokens of the diff: possessive endings and spacing do not matter.
    return "".join(t.norm for t in tokenize(words))
