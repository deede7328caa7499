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
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, Field
from rapidfuzz import process
from rapidfuzz.distance import JaroWinkler, Levenshtein

from memory.correction.evidence import derived, word_zipf
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
        self,
        text: str,
        suspects: list[tuple[int, int]],
        *,
        confidences: Sequence[float | None] | None = None,
        retry_later: bool = False,
    ) -> list[Correction]:
        """Verified corrections for ``text`` (offsets in ``text``); ``suspects`` are the doubtful spans and
        ``confidences`` the recogniser's, per token of ``tokenize(text)`` (None: unknown). With no answer the text
        stays as it is, unless ``retry_later`` (a background job): then ``LLMUnavailable`` propagates, so the line
        is not marked as done without stage 2."""
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
        return self.verify(text, suspects, answer, confidences)

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

    def verify(
        self,
        text: str,
        suspects: list[tuple[int, int]],
        answer: LLMCorrection,
        confidences: Sequence[float | None] | None = None,
    ) -> list[Correction]:
        """Corrections for the changes in ``answer.text`` that may stand; every other change is dropped.
        ``confidences``: the recogniser's, per token of ``tokenize(text)``, if known."""
        before = tokenize(text)
        conf_at = {t.start: c for t, c in zip(before, confidences, strict=True)} if confidences is not None else {}
        after = tokenize(answer.text)
        declared = {(_key(s.heard), _key(s.entity)) for s in answer.substitutions}
        said, wrote = [t.norm for t in before], [t.norm for t in after]
        ops = difflib.SequenceMatcher(a=said, b=wrote, autojunk=False).get_opcodes()
        corrections: list[Correction] = []
        for heard, form_key in sorted(declared):
            for a, b in _occurrences(said, heard):
                # The model's words where these were: a fix may keep a word of the name as heard ("vox machine a"
                # / Vox Machina keeps "vox"), and a block may mix a declared fix with rewording ("from skin flew"
                # → "Frumpkin soared"): only the declared words, replaced there by the declared entity, count.
                ja, jb = _aligned(ops, a, b)
                if wrote[ja:jb] == said[a:b]:
                    continue  # unchanged: nothing was fixed here
                heard_tokens = before[a:b]
                doubted = _doubted([conf_at.get(t.start) for t in heard_tokens], self.common_words)
                # a word the model kept must be inside the name it wrote ("the from skin" / "the Frumpkin" is
                # not "the" made part of Frumpkin)
                kept = [
                    j1 + i - i1 for op, i1, i2, j1, _ in ops if op == "equal" for i in range(max(a, i1), min(b, i2))
                ]
                written = _runs(after[ja:jb], ja, kept).keys()
                change = self._accepted(heard_tokens, form_key, written, suspects, text, doubted)
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
        doubted: bool,
    ) -> Correction | None:
        """``written``: the runs of words of the model's text, keyed as ``entity_key`` is; ``doubted``: the
        recogniser doubted the replaced words."""
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
        if not self._may_become(heard, words, form, doubted):
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

    def _may_become(self, heard: str, words: list[str], form: NameForm, doubted: bool) -> bool:
        """Whether the heard words (``heard`` run together) may be corrected to the name."""
        if heard in self.index.exact_spaceless:
            return False  # an exact name stays as it is
        if (refused := self.index.not_heard) and form.entity_key in (
            refused.get(heard) or (refused.get(heard[:-1], frozenset()) if heard.endswith("s") else frozenset())
        ):
            return False  # the DM says these words are never its name ("manta ray" / Mentiri)
        if not _sounds_like(words, form):
            return False  # a guess from context ("the old man" is Vaskerrin Holt), not a name misheard
        # an ordinary word near a short name ("you fools" / Jules, "cracks" / Krix) stays as said, unless the
        # recogniser doubted it, the name is long enough and no other name sounds as near
        return _common_words_may_be(words, form, self.common_words, doubted=doubted, index=self.index)


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
    """What a span of ordinary English words only needs to become a name in stage 2. A model asked about a
    doubtful "fools" will say Jules if the campaign has a Jules; nothing in its answer is evidence, so the sound
    and the recogniser must be. Heard confidently (or with no confidences): at most this many phone edits from a
    name of at least this many phones, as in stage 1 if looser (stage 1 wants an exact sound from 5 phones and one
    edit from 8: ``MatchSettings.sound_common_word_phones``, ``sound_word_one_edit_phones``). Doubted by the
    recogniser: the ``doubted_*`` lengths, and no other entity may sound as near the words. Either way one word
    must not be a function word nor a form of the name, as in stage 1. Measured with ``python -m
    bench.stage2_guard``."""

    common_zipf: float = 3.0  # MatchSettings.common_zipf: from here a word is ordinary English
    function_zipf: float = 5.5  # MatchSettings.function_zipf: "not", "from" are never a name, however doubted
    exact_phones: int = 4
    one_edit_phones: int = 6
    two_edit_phones: int = 8  # "slay her stake" / Slayer's Take; stage 1 wants 10
    #: MatchSettings.low_confidence: words heard below it on average were doubted by the recogniser.
    low_confidence: float = 0.5
    doubted_exact_phones: int = 4
    #: one edit from 5 phones ("cracks" / Krix): from 4, "fools" / Jules and "card" / Kord would stand alike
    doubted_one_edit_phones: int = 5
    doubted_two_edit_phones: int = 8
    #: A doubted span needs its name to be the only one said this near it (a wrong name the model prefers
    #: to the right one is as near or further).
    doubted_alone: bool = True


COMMON_WORDS = CommonWordRule()


def _doubted(confidences: Sequence[float | None], rule: CommonWordRule) -> bool:
    """Whether the recogniser doubted these words: every one's confidence known, below the rule's on average."""
    known = [c for c in confidences if c is not None]
    return bool(known) and len(known) == len(confidences) and sum(known) / len(known) < rule.low_confidence


def _close_enough(edits: int, phones: int, exact: int, one_edit: int, two_edits: int) -> bool:
    least = {0: exact, 1: one_edit, 2: two_edits}.get(edits)
    return least is not None and phones >= least


def _common_words_may_be(
    words: list[str],
    form: NameForm,
    rule: CommonWordRule = COMMON_WORDS,
    *,
    doubted: bool = False,
    index: PhoneticIndex | None = None,
) -> bool:
    """Whether the words may be the name misheard: any word English rarely uses is (``_sounds_like`` judged
    those); ordinary words only if they sound close enough to a long enough name (``CommonWordRule``): closer
    when the recogniser was sure of them, and, when it doubted them, as near as no other name of ``index``."""
    if any(word_zipf(w) < rule.common_zipf for w in words):
        return True
    if len(words) == 1 and (word_zipf(words[0]) >= rule.function_zipf or derived(words[0], form.spaceless)):
        return False  # "not" / Nott, "character" / Characters: stage 1 never makes these a name either
    said = phrase_phones(words)
    edits, phones = Levenshtein.distance(said, form.phones), len(form.phones)
    if _close_enough(edits, phones, rule.exact_phones, rule.one_edit_phones, rule.two_edit_phones):
        return True
    if not doubted or not _close_enough(
        edits, phones, rule.doubted_exact_phones, rule.doubted_one_edit_phones, rule.doubted_two_edit_phones
    ):
        return False
    return not rule.doubted_alone or index is None or not _rival_as_near(index, said, form, edits)


def _rival_as_near(index: PhoneticIndex, said: str, form: NameForm, edits: int) -> bool:
    """Whether a name of another entity is said within ``edits`` phones of ``said`` (at most 2). One spelt as the
    name is not (the character "Yasha" and "Yasha Nydoorin" with that alias): no sound tells them apart."""
    near = (
        *index.sound_candidates(said),
        *(index.two_edit_candidates(said, 0) if edits >= 2 else ()),
        *(f for f in index.forms if len(f.phones) < MIN_SOUND_PHONES),  # names too short for the sound index
    )
    return any(
        f.entity_key != form.entity_key
        and f.spaceless != form.spaceless
        and Levenshtein.distance(said, f.phones, score_cutoff=edits) <= edits
        for f in near
    )


def _nearer_without_s(words: list[str], form: NameForm) -> bool:
    """Whether words ending in an "s" sound nearer the name without it: a plural, not a sound of the name."""
    singular = [*words[:-1], words[-1][:-1]]
    plain, without = phrase_phones(words), phrase_phones(singular)
    return bool(plain and without) and Levenshtein.distance(without, form.phones) < Levenshtein.distance(
        plain, form.phones
    )


def _occurrences(words: list[str], heard: str) -> list[tuple[int, int]]:
    """Every run ``words[a:b]`` that, joined, is ``heard``."""
    found = []
    for a in range(len(words)):
        joined, b = "", a
        while b < len(words) and len(joined) < len(heard) and heard.startswith(joined + words[b]):
            joined += words[b]
            b += 1
        if joined == heard and b > a:
            found.append((a, b))
    return found


def _aligned(ops: Sequence[tuple[str, int, int, int, int]], a: int, b: int) -> tuple[int, int]:
    """The model's words standing where ``a:b`` of the input were (difflib opcodes), with words it inserted
    at either edge ("nights of rick whittle" / The Knights of Requital)."""
    ja = jb = None
    for op, i1, i2, j1, j2 in ops:
        if ja is None and (i1 <= a < i2 or (op == "insert" and i1 == a)):
            ja = j1 + (a - i1 if op == "equal" else 0)
        if i1 < b <= i2 and op != "insert":
            jb = j1 + (b - i1) if op == "equal" else j2
        elif op == "insert" and i1 == b:
            jb = j2
    assert ja is not None and jb is not None  # opcodes cover every input word
    return ja, max(ja, jb)


def _runs(tokens: list[Token], first: int = 0, covering: Sequence[int] = ()) -> dict[str, list[Token]]:
    """Every contiguous run of tokens (numbered from ``first``) holding every position of ``covering``, keyed by
    its space-free normal form (the first run wins)."""
    runs: dict[str, list[Token]] = {}
    low, high = (min(covering) - first, max(covering) - first) if covering else (len(tokens), -1)
    for i in range(min(low, len(tokens) - 1) + 1):
        for j in range(max(i, high) + 1, len(tokens) + 1):
            runs.setdefault("".join(t.norm for t in tokens[i:j]), tokens[i:j])
    return runs


def _key(words: str) -> str:
    # Compared like the tokens of the diff: possessive endings and spacing do not matter.
    return "".join(t.norm for t in tokenize(words))
