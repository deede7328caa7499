"""Which of the campaign's names go into the speech recogniser's prompt.

Whisper reads about 220 prompt tokens: a few dozen names of a campaign that may hold a thousand. A name in the
prompt is heard ("Eldrinax"); one left out comes out as English look-alikes ("elder nacks") that only the
corrector can mend. So the prompt holds the names most likely to be said next, in tiers:

1. the session's cast and the entities the DM pinned (``lorekeeper entity pin``, ``/entity pin``), with their
   aliases: the table says them all evening. The cast is the player characters named in this session so far or
   in the campaign's last sessions; with neither (a new campaign), every player character;
2. names said in the last minutes of this session, most recently said first, with the aliases said (a line is
   read after stage-1 correction: a name misheard and mended counts as said);
3. names said most in the campaign's last sessions (their passages, and the stored lines of the last two, whose
   passages may not be written yet), then the player characters not in this session's cast;
4. the rest, the most connected first (by its facts with another entity: GM notes and other attribute facts do
   not count; an event, "Session: Night 4" or "Death of Sylas", only where said or pinned), then every alias not
   listed yet (a small campaign's prompt holds them all: pinning adds nothing there, see :func:`held_unpinned`).

Each name once. The ranked list changes only when the entities change or a name enters or leaves the recent
minutes, so the prompt (counted with the model's tokenizer) is rebuilt then, not for every utterance.

A name first said at this very line is in no tier. So a line is heard twice when its text has words that sound
near a name the prompt left out (:func:`transcribe_heard`): the second time those names lead the prompt, and the
recogniser writes one only where the audio fits it.

A short line that is nothing but prompt names, all doubted ("Seventeen." written "Thessaly Brightwater", each word
at 0.00), is Whisper repeating its prompt over a word it could not place: it is heard again without names, and
that text is kept.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from memory.correction import PhoneticMatcher
from memory.correction.edits import apply_corrections
from memory.correction.text import align_confidences, normalize, tokenize
from memory.gazetteer import Gazetteer
from memory.models import PromptEntity
from memory.providers.stt import SpeechToText, Transcript, fit_names, prompted_names
from memory.recorder import default_index_cache, names_version
from memory.store import CampaignMemory

log = logging.getLogger(__name__)

#: How long a name said counts as "said lately" in this session.
RECENT_WINDOW_S = 600.0
#: How many of the campaign's last sessions say which names are said most.
RECENT_SESSIONS = 5
#: How many of the campaign's last sessions' stored lines count towards "said most" (and so the cast) at once.
LINES_SESSIONS = 2
#: At most this many names nearly heard lead a second pass's prompt (more found nothing more on dev lines).
SECOND_PASS_NAMES = 3
#: A line at most this long (seconds of audio) that is nothing but prompt names, every word of which the recogniser
#: gave a probability under ``ECHO_CONFIDENCE``, is heard again without them: Whisper base wrote a player
#: character's name for a 0.6 s "Seventeen." (padded to about 1 s) with every word at 0.00, on four espeak rolls;
#: names said alone ("Thessaly.", "Wren.", "Gorrik Emberhand.") had a word at 0.12-0.36, and without the prompt
#: came out as "Affiliate.", nothing, "I'll remember and": they must not be heard again.
ECHO_MAX_S = 3.0
ECHO_CONFIDENCE = 0.05


@dataclass(slots=True)
class Said:
    """When an entity was last said in this session, and the words it was said by."""

    at: float
    forms: dict[str, None] = field(default_factory=dict)  # as said, in order of first use
    first: float | None = None  # when first said (None: at ``at``)

    @property
    def since(self) -> float:
        return self.at if self.first is None else self.first


def rank_names(
    entities: Iterable[PromptEntity],
    said: Mapping[int, Said] | None = None,
    *,
    now: float | None = None,
    cast: Collection[int] | None = None,
) -> list[str]:
    """The prompt's names, most important first (tiers in the module docstring); ``said`` maps entity ids to their
    mentions in this session, of which those within :data:`RECENT_WINDOW_S` before ``now`` count; ``cast`` holds
    the ids of this session's player characters (None: every player character)."""
    recent = {i: s for i, s in (said or {}).items() if now is None or now - RECENT_WINDOW_S <= s.at <= now}
    tiers: list[list[tuple[tuple[float, ...], list[str]]]] = [[], [], [], [], []]
    for e in entities:
        heard = recent.get(e.id)
        forms = [f for f in heard.forms if normalize(f) != normalize(e.name)] if heard else []
        if e.pinned or (e.cast and (cast is None or e.id in cast)):
            tiers[0].append(((-(heard.at if heard else -1.0), -e.said_lately, -e.degree), [e.name, *e.aliases]))
            continue
        if heard is not None:
            tiers[1].append(((-heard.at,), [e.name, *forms]))
        elif e.said_lately or e.cast:  # a player character of another table still comes before unsaid lore
            tiers[2].append(((-e.said_lately, -e.degree), [e.name, *(e.aliases if e.cast else ())]))
        elif not e.event:  # an event's name is made of the names it tells of, ranked already; said, it ranks above
            tiers[3].append(((-e.degree,), [e.name]))
        if e.aliases:  # last, every alias not listed yet: a small campaign's prompt holds them all, pinned or not
            tiers[4].append(((-e.degree,), list(e.aliases)))
    names: list[str] = []
    seen: set[str] = set()
    for tier in tiers:
        for _, forms in sorted(tier, key=lambda item: (item[0], item[1][0].casefold())):
            for name in forms:
                if (key := normalize(name)) and key not in seen:
                    seen.add(key)
                    names.append(name)
    return names


#: What ``entity pin`` adds when :func:`prompted_unpinned` holds (docs/guide/voice-names.md says what to do then).
ALREADY_PROMPTED = (
    "its names are in the voice recogniser's prompt pinned or not (this campaign's names all fit in it); pinned, "
    "a name Whisper writes a sound off it is only taken for it. A name still misheard: see "
    "docs/guide/voice-names.md."
)


def held_unpinned(entities: Sequence[PromptEntity], entity_id: int) -> bool:
    """Whether the prompt holds the entity's name and aliases without a pin: when every name ranked fits it (by
    :func:`fit_names`' count, Whisper's tokenizer's), as in a small campaign, pinning adds nothing to it (the pinned
    are still the cast a written name may be taken for, see ``PhoneticMatcher._cast_names``)."""
    ranked = rank_names([e.model_copy(update={"pinned": False}) if e.id == entity_id else e for e in entities])
    kept = {normalize(n) for n in fit_names(ranked)}
    if len(kept) < len({normalize(n) for n in ranked}):
        return False
    return all(normalize(n) in kept for e in entities if e.id == entity_id for n in (e.name, *e.aliases))


async def prompted_unpinned(mem: CampaignMemory, entity_id: int) -> bool:
    """:func:`held_unpinned` for the campaign's entities, between sessions (no name said lately in one)."""
    return held_unpinned(await mem.graph.prompt_entities(recent_sessions=RECENT_SESSIONS), entity_id)


async def next_prompt(mem: CampaignMemory) -> tuple[list[str], list[str]]:
    """The names a next session's first line is prompted with (``entity pin --prompt``), most important first, by
    :func:`fit_names`' count (Whisper's tokenizer's), and the ranked names left out."""
    ranked = await CampaignNames(mem).names(0.0)
    kept = fit_names(ranked)
    held = {normalize(n) for n in kept}
    return kept, [n for n in ranked if normalize(n) not in held]


class NameSource(Protocol):
    """What a transcriber asks for its prompt's names and tells what was said."""

    async def names(self, at: float | None = None) -> Sequence[str]: ...

    def heard(self, text: str, at: float) -> None: ...

    def cast(self, at: float | None = None) -> frozenset[int]: ...

    def nearly_heard(self, heard: Transcript, prompted: Sequence[str]) -> Sequence[str]:
        """Names not among ``prompted`` that words of ``heard`` sound near, best first: a second pass's prompt."""
        ...


async def transcribe_heard(stt: SpeechToText, pcm: np.ndarray, names: NameSource, ranked: Sequence[str]) -> Transcript:
    """``pcm`` transcribed with the ``ranked`` names as the prompt and, if words of it sound near names the prompt
    left out, once more with those names at its head (that text is kept): the recogniser writes such a name only
    where the audio fits it, which no rule over the text can check."""
    first = await stt.transcribe(pcm, prompt_names=ranked)
    if not first.text.strip():
        return first
    # the prompt's names are counted under the recogniser's lock, mostly cached: off the event loop all the same
    prompted = await asyncio.to_thread(prompted_names, stt, ranked)
    if first.duration <= ECHO_MAX_S and only_names(first.text, prompted) and unsure_throughout(first):
        # the prompt echoed over a short word (a roll): what the audio says without it is kept
        log.debug("heard again without names: %r", first.text)
        return await stt.transcribe(pcm)
    nearly = names.nearly_heard(first, prompted)
    if not nearly:
        return first
    log.debug("heard again with %s first: %r", list(nearly), first.text)
    return await stt.transcribe(pcm, prompt_names=[*nearly, *ranked])


def only_names(text: str, names: Sequence[str]) -> bool:
    """Whether ``text`` is nothing but some of ``names``, one after another ("Thessaly Brightwater.", "Wren,
    Corvin"), words compared in their normal form."""
    words = [t.norm for t in tokenize(text)]
    forms = {tuple(n.norm for n in tokenize(name)) for name in names} - {()}
    ends = {0}  # how many of the words names can make up: a name may follow at each
    for i in range(len(words)):
        if i in ends:
            ends |= {i + len(f) for f in forms if tuple(words[i : i + len(f)]) == f}
    return bool(words) and len(words) in ends


def unsure_throughout(heard: Transcript) -> bool:
    """Whether the recogniser gave every word of ``heard`` a probability under :data:`ECHO_CONFIDENCE` (False
    when it gives none: a provider without word confidences)."""
    return bool(heard.words) and all(w.confidence is not None and w.confidence < ECHO_CONFIDENCE for w in heard.words)


def names_nearly_heard(matcher: PhoneticMatcher, heard: Transcript, prompted: Sequence[str]) -> list[str]:
    """Up to :data:`SECOND_PASS_NAMES` names of entities the ``prompted`` names leave out, sounding near a run of
    words of ``heard`` that are uncommon or the recogniser doubted (``PhoneticMatcher.nearly_heard``), each as
    the name or alias it sounds like."""
    tokens = tokenize(heard.text)
    confidences = align_confidences(heard.text, tokens, [(w.word, w.confidence) for w in heard.words])
    forms = matcher.nearly_heard(heard.text, prompted, confidences, limit=SECOND_PASS_NAMES)
    return [form.surface or form.canonical for form in forms]


class StaticNames:
    """A fixed list (tests, benchmarks, a recogniser without a campaign)."""

    def __init__(self, names: Sequence[str] = ()) -> None:
        self._names = list(names)

    async def names(self, at: float | None = None) -> Sequence[str]:
        return self._names

    def heard(self, text: str, at: float) -> None:
        pass

    def cast(self, at: float | None = None) -> frozenset[int]:
        return frozenset()

    def nearly_heard(self, heard: Transcript, prompted: Sequence[str]) -> Sequence[str]:
        return []


class CampaignNames:
    """The campaign's accepted entity names ranked for the prompt, kept fresh cheaply.

    A version query (count and last change) runs at most every ``refresh_s``; the entities are read again only
    when it changed, and how often each was said in the last sessions every ``history_refresh_s``. When the
    database is away the last names are kept: transcription must go on. ``heard`` takes each transcribed line,
    with its time into the session, and finds the names it says. ``session_cast=False`` keeps every player
    character in the first tier (the rule before the cast was the session's; benchmarks compare the two);
    ``second_pass=False`` finds no names nearly heard (no line is transcribed twice). ``lines`` and ``second_passes``
    count the lines looked at for names nearly heard and those that had some.
    """

    def __init__(
        self,
        mem: CampaignMemory,
        *,
        refresh_s: float = 10.0,
        history_refresh_s: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
        session_cast: bool = True,
        second_pass: bool = True,
    ) -> None:
        self.mem = mem
        self.session_cast = session_cast
        self.second_pass = second_pass
        self.lines = 0
        self.second_passes = 0
        self.refresh_s = refresh_s
        self.history_refresh_s = history_refresh_s
        self._clock = clock
        self._checked: float | None = None
        self._loaded: float | None = None
        self._version: tuple[object, ...] | None = None
        self._entities: list[PromptEntity] = []
        self._gazetteer: Gazetteer[PromptEntity] = Gazetteer(())
        self._matcher: PhoneticMatcher | None = None
        self._said: dict[int, Said] = {}
        self._players: frozenset[int] = frozenset()
        self._last_cast: frozenset[int] = frozenset()  # player characters named in the last sessions
        self._ranked: list[str] = []
        self._ranked_for: tuple[object, ...] | None = None

    async def names(self, at: float | None = None) -> Sequence[str]:
        """The ranked names for a line starting ``at`` seconds into the session (None: after all said so far)."""
        await self._refresh()
        recent = frozenset(i for i, s in self._said.items() if at is None or at - RECENT_WINDOW_S <= s.at <= at)
        cast = self._cast(at)
        key = (self._version, self._loaded, recent, cast)
        if key != self._ranked_for:  # the same list object while nothing changed: the prompt is not rebuilt
            self._ranked = rank_names(self._entities, {i: self._said[i] for i in recent}, cast=cast)
            self._ranked_for = key
        return self._ranked

    def _cast(self, at: float | None) -> frozenset[int] | None:
        """This session's player characters: named in it before ``at`` or in the last sessions (None: all)."""
        if not self.session_cast:
            return None
        named = (i for i, s in self._said.items() if i in self._players and (at is None or s.since <= at))
        return self._last_cast.union(named) or None

    def cast(self, at: float | None = None) -> frozenset[int]:
        """The ids of the prompt's first tier for a line starting ``at`` (None: after all said so far): this
        session's cast (every player character without one) and the pinned entities."""
        cast = self._cast(at)
        return frozenset(e.id for e in self._entities if e.pinned or (e.cast and (cast is None or e.id in cast)))

    def heard(self, text: str, at: float) -> None:
        if self._matcher is not None:  # as the stored line will read; without word confidences, stage 1 is surer
            text = apply_corrections(text, self._matcher.correct(text, cast=self.cast(at)).corrections)
        for start, end, entity in self._gazetteer.find(text):
            said = self._said.setdefault(entity.id, Said(at, first=at))
            said.at = max(said.at, at)
            said.first = min(said.since, at)
            said.forms.setdefault(_without_possessive(text[start:end]))

    def nearly_heard(self, heard: Transcript, prompted: Sequence[str]) -> Sequence[str]:
        """The campaign's names nearly heard (see :func:`names_nearly_heard`), none with ``second_pass=False``."""
        if not self.second_pass or self._matcher is None:
            return []
        found = names_nearly_heard(self._matcher, heard, prompted)
        self.lines += 1
        self.second_passes += bool(found)
        return found

    async def _refresh(self) -> None:
        now = self._clock()
        if self._checked is not None and now - self._checked < self.refresh_s:
            return
        self._checked = now
        try:
            version = await names_version(self.mem.db, self.mem.campaign_id)
            stale = self._loaded is None or now - self._loaded >= self.history_refresh_s
            if version != self._version or stale:
                entities = await self.mem.graph.prompt_entities(recent_sessions=RECENT_SESSIONS)
                gazetteer = Gazetteer(entities)
                lately = await self._said_in_last_lines(gazetteer)
                self._entities = [
                    e.model_copy(update={"said_lately": e.said_lately + lately[e.id]}) if e.id in lately else e
                    for e in entities
                ]
                self._gazetteer = gazetteer
                self._players = frozenset(e.id for e in entities if e.cast)
                self._last_cast = frozenset(e.id for e in self._entities if e.cast and e.said_lately)
                self._matcher = await default_index_cache.matcher(self.mem)
                self._version, self._loaded = version, now
                log.info("STT prompt: %d campaign entities", len(self._entities))
        except Exception as exc:  # the guard handles the outage; names just stay as they were
            log.debug("could not refresh campaign names (%s); keeping %d", exc, len(self._entities))

    async def _said_in_last_lines(self, gazetteer: Gazetteer[PromptEntity]) -> Counter[int]:
        """How often each entity is named in the stored (stage-1 corrected) lines of the last
        :data:`LINES_SESSIONS` sessions: the jobs write their passages, which ``said_lately`` counts, later."""
        said: Counter[int] = Counter()
        for session in (await self.mem.log.sessions())[-LINES_SESSIONS:]:
            for entry in await self.mem.log.session_entries(session.id):
                said.update(e.id for _, _, e in gazetteer.find(entry.text))
        return said


def _without_possessive(form: str) -> str:
    for ending in ("'s", "’s"):
        if form.casefold().endswith(ending):
            return form[: -len(ending)]
    return form
