"""The hot context: what an NPC agent reads before every reply, assembled in a few milliseconds.

For one entity (the NPC speaking) and a live session: its identity snapshot from L3 (description, current facts,
relationships, connected entities, where it was last mentioned), the last minutes of L1, and the entities of the
current scene (those who speak or are named in those minutes). A typed model, and :meth:`HotContext.text` for a
prompt within a token budget. Players' view (``dm=False``) masks secrets exactly as /entity show and /recall do.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator
from itertools import islice
from typing import TypedDict

import asyncpg
from pydantic import BaseModel, Field, computed_field

from memory.correction.text import normalize
from memory.errors import InvalidInputError, NotFoundError
from memory.graph import SecretMask
from memory.graph.rules import CLOSE_NAME, name_closeness
from memory.mentions import in_game
from memory.models import (
    FACTS_SHOWN,
    TIMED_REFS,
    Entity,
    EntityType,
    Mention,
    Neighbourhood,
    ReviewStatus,
    Visibility,
    newest_facts,
    session_link,
)
from memory.store import CampaignMemory
from memory.text import attribute_text, clip, clock

#: Lines of L1 the context reads at most: a window of minutes in a talkative scene.
MAX_LINES = 200
#: An untimed session's window (an imported transcript, every line at 0:00) unless a line count is asked: minutes
#: mean nothing there, and its last 200 lines are 30 KB of text; about a scene's worth.
UNTIMED_LINES = 30
#: The longest window asked for: an hour is a whole scene and more.
MAX_MINUTES = 60.0
#: Characters of a scene entity's description in the context: who it is, not its whole story.
SCENE_DESCRIPTION = 160
#: The tools a world is read from (the importers of ``campaigns.imports``, the CRD3 example's builder): an attribute
#: named after one ("crd3_mentions", "foundry_type", "kanka_type") is the import's bookkeeping, what the tool counted
#: or called its record, not who the entity is.
IMPORTED_FROM = frozenset({"crd3", "foundry", "kanka", "roll20"})

#: A fingerprint of every name, alias and heard-as phrase of campaign ``$1`` and of their visibility: what a players'
#: mask is built from (:meth:`KnowledgeGraph.player_mask`). One aggregate over the names, not the names.
_NAMES_NOW = """
    SELECT (SELECT array[count(*), sum(hashtext(concat_ws('|', id, name, type, visibility, status)))]
            FROM entities WHERE campaign_id = $1)
        || (SELECT array[count(*), sum(hashtext(concat_ws('|', entity_id, alias)))]
            FROM entity_aliases WHERE campaign_id = $1)
        || (SELECT array[count(*), sum(hashtext(concat_ws('|', entity_id, name, type)))]
            FROM masked_names WHERE campaign_id = $1)
        || (SELECT array[count(*), sum(hashtext(concat_ws('|', entity_id, phrase)))]
            FROM entity_heard_as WHERE campaign_id = $1)
"""

#: A line ``se`` in a pre-show, a break or an after-show, as the chunk job marks them (a line it has not read yet is
#: not: the newest of a live session).
_SEGMENT = "EXISTS (SELECT FROM line_vectors v WHERE v.campaign_id = $1 AND v.entry_id = se.id AND v.talk IS NOT NULL)"

#: The live session's last minutes, in one statement. ``$1`` campaign, ``$2`` session id (NULL: the live one, else the
#: latest), ``$3`` window in seconds, ``$4`` line cap, the window ending at the session's last line (a live session's
#: is cut to the minutes before now by :func:`recent_and_scene`); ``$5``: the game's lines only, none of the pre-show,
#: a break or the after-show the chunk job marked (:mod:`memory.offgame`). With the entity ids correction wrote into
#: the lines, and what :class:`NamesCache` needs to know whether what it holds is still right.
_RECENT = f"""
WITH s AS (
    SELECT id, title, ended_at IS NULL AS live, (started_at AT TIME ZONE 'UTC')::date AS played,
           -- a live session's clock: its lines' times are seconds from its start (a recording's, a resumed one's)
           CASE WHEN ended_at IS NULL THEN extract(epoch FROM now() - started_at)::float8 END AS now_s
    FROM sessions
    WHERE campaign_id = $1 AND ($2::bigint IS NULL OR id = $2)
    ORDER BY ended_at IS NULL DESC, started_at DESC, id DESC LIMIT 1
),
stop AS (  -- the session's last line, by the time index backwards: a long session's lines are not all read
    SELECT (SELECT se.start_s FROM session_entries se WHERE se.campaign_id = $1 AND se.session_id = s.id
              AND NOT ($5 AND {_SEGMENT})
            ORDER BY se.start_s DESC LIMIT 1) AS t
    FROM s
),
recent AS (
    SELECT se.id, se.seq, se.speaker, se.text, se.start_s, se.ref, se.corrections
    FROM session_entries se JOIN s ON se.session_id = s.id, stop
    WHERE se.campaign_id = $1 AND se.start_s >= stop.t - $3 AND NOT ($5 AND {_SEGMENT})
    ORDER BY se.start_s DESC, se.seq DESC LIMIT $4
)
SELECT
    (SELECT jsonb_build_object('id', id, 'title', title, 'live', live, 'played', played, 'now_s', now_s)
     FROM s) AS session,
    (SELECT coalesce(jsonb_agg(jsonb_build_object(
                'speaker', speaker, 'text', text, 'start_s', start_s, 'ref', ref) ORDER BY start_s, seq), '[]')
     FROM recent) AS lines,
    ARRAY(SELECT DISTINCT (c ->> 'entity_id')::bigint FROM recent, jsonb_array_elements(recent.corrections) c
          WHERE c ->> 'entity_id' IS NOT NULL) AS corrected,
    ({_NAMES_NOW}) AS names_now
"""

#: The scene's entities of campaign ``$1`` by id (``$2``): accepted ones, secret ones for the DM only (``$3``).
_SCENE = f"""
SELECT e.id, e.name, e.type, left(e.description, {SCENE_DESCRIPTION * 2}) AS description,
       e.visibility = 'secret' AS secret
FROM entities e
WHERE e.campaign_id = $1 AND e.id = ANY($2::bigint[]) AND e.status = 'accepted' AND ($3 OR e.visibility = 'public')
ORDER BY lower(e.name)
"""

#: Every name and alias of campaign ``$1`` that is not rejected, with its entity.
_ALL_NAMES = """
SELECT id, name FROM entities WHERE campaign_id = $1 AND status <> 'rejected'
UNION ALL
SELECT entity_id, alias FROM entity_aliases WHERE campaign_id = $1
"""

_WORD = re.compile(r"[^\W_](?:[\w'’.-]*[^\W_])?")


def words(text: str) -> list[str]:
    """A text's words, lower case, punctuation around them dropped ("Mr. Vex'ahlia," → "mr", "vex'ahlia")."""
    return _WORD.findall(text.lower())


class NameIndex:
    """Which entities a text names, by their names and aliases (whole words, case and the punctuation around
    words aside). Built once per change of the campaign's names: looking a scene's lines up in it takes a few
    microseconds a word, at 10 or 10,000 names."""

    def __init__(self, named: list[tuple[int, str]]) -> None:
        self._ids: dict[str, set[int]] = {}
        self._first: set[str] = set()
        self._longest = 1
        for entity_id, name in named:
            said = words(name)
            if said:
                self._ids.setdefault(" ".join(said), set()).add(entity_id)
                self._first.add(said[0])
                self._longest = max(self._longest, len(said))

    def named_in(self, texts: list[str]) -> set[int]:
        found: set[int] = set()
        for text in texts:
            said = words(text)
            for i, word in enumerate(said):
                if word in self._first:
                    for k in range(i + 1, min(i + self._longest, len(said)) + 1):
                        found |= self._ids.get(" ".join(said[i:k]), set())
        return found


class ContextLine(BaseModel):
    speaker: str
    text: str
    start_s: float
    ref: str | None = None

    @property
    def untimed(self) -> bool:
        """An untimed transcript's line (a CRD3 episode): at 0:00 like all its lines, its ref says where."""
        ref = self.ref or ""
        return not self.start_s and ref != "" and not ref.startswith(TIMED_REFS)

    @property
    def when(self) -> str:
        if self.untimed:  # as `where_said` shows it
            return str(self.ref)
        return clock(self.start_s)

    def render(self) -> str:
        return f"[{self.when}] {self.speaker}: {self.text}"


def untimed(lines: list[ContextLine]) -> bool:
    """Whether ``lines`` are an untimed session's: their window is its last lines, not minutes."""
    return bool(lines) and all(line.untimed for line in lines)


def is_quiet(lines: list[ContextLine], now_s: float | None, minutes: float) -> bool:
    """Whether a live session's ``lines`` (:func:`recent_and_scene`'s) are from before its last ``minutes``."""
    return bool(lines) and now_s is not None and not lines[-1].untimed and lines[-1].start_s < now_s - minutes * 60


class SceneEntity(BaseModel):
    id: int
    name: str
    type: EntityType
    description: str = ""
    secret: bool = False

    def render(self) -> str:
        said = f"- {self.name} ({self.type.value})" + (" [DM only]" if self.secret else "")
        return said + (f": {self.description}" if self.description else "")


class IdentitySnapshot(BaseModel):
    """An entity as its reader may see it: the card of /entity show, in plain text."""

    id: int
    name: str
    type: EntityType
    description: str
    aliases: list[str]
    attributes: dict[str, object] = Field(default_factory=dict)
    secret: bool
    facts: list[str]  # current relationships and attribute facts, "Ember Key —owned_by→ Pip"; the newest ones
    more_facts: int = 0  # those left out of ``facts``: entity_facts lists them
    took_part: str = ""  # "took part in 12 sessions: …"
    connected: list[SceneEntity]
    last_mentioned: str | None = None  # "Night 2 at 14:03, Kael: “…”"


class HotContext(BaseModel):
    entity: IdentitySnapshot
    session_id: int | None
    session: str | None
    live: bool
    played: str | None = None  # the day the session began, "2026-11-27"
    now_s: float | None = None  # a live session: seconds into it now (its clock, or its last line if that is later)
    minutes: float
    lines: list[ContextLine]
    scene: list[SceneEntity]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def quiet(self) -> bool:
        """A live session where nobody spoke within the window: its lines are the last said, from before it."""
        return is_quiet(self.lines, self.now_s, self.minutes)

    def text(self, budget_tokens: int = 800) -> str:
        """The context as a compact prompt block of at most ``budget_tokens`` (estimated at four characters a
        token, the usual figure for English with BPE tokenizers). The parts go in by importance: who the entity
        is (its name always, as many aliases as fit), its facts, the newest lines, its attributes (an import's
        "race: dwarf"), the scene, then the entities it is connected to; what does not fit is left out whole,
        never cut mid-line (a line's own length is capped)."""
        room = max(budget_tokens, 1) * 4
        e = self.entity

        def fit(line: str) -> bool:
            nonlocal room
            if len(line) + 1 > room:
                return False
            room -= len(line) + 1
            return True

        def section(title: str, items: list[str]) -> list[str]:
            if not items or not fit(title):
                return []
            kept = [title]
            for item in items:
                if not fit(item):
                    break
                kept.append(item)
            return kept if len(kept) > 1 else []

        # whose context it is, always; the aliases that fit in a quarter of the room, whole
        head = f"# {e.name} ({e.type.value}{', DM only' if e.secret else ''})"
        called: list[str] = []
        for alias in e.aliases:
            if len(head) + len(", also called ") + len(", ".join([*called, alias])) > min(300, room // 4):
                break
            called.append(alias)
        head = clip(head + (f", also called {', '.join(called)}" if called else ""), room - 1)
        identity = [head] if fit(head) else []
        if e.description and fit(description := clip(" ".join(e.description.split()), max(room // 4, 80))):
            identity.append(description)
        facts = [f"- {f}" for f in e.facts] + ([f"- {e.took_part}"] if e.took_part else [])
        facts += [f"- … and {e.more_facts:,} more facts"] if e.more_facts else []
        facts += [f"- last mentioned: {e.last_mentioned}"] if e.last_mentioned else []
        known = section("## Facts", [clip(" ".join(f.split()), 300) for f in facts])  # one line each: GM notes
        # an untimed session's lines are all in any window: what is shown is its last lines, not minutes
        span = "lines" if untimed(self.lines) else f"{self.minutes:g} minutes"
        title = f"## Last {span} of {self.session or 'the session'}"
        if self.quiet:  # the lines are older than the window: an agent must not answer them as just said
            title = f"## Nothing said in the last {span} of {self.session}; its last lines, from {self.lines[0].when}"
        if not self.live:  # an agent would read the last minutes of a past session as what is happening now
            title += f" (a past session{f' of {self.played}' if self.played else ''}, not what is happening now)"
        newest_first = section(title, [clip(line.render(), 400) for line in reversed(self.lines)])
        lines = newest_first[:1] + newest_first[:0:-1]  # the title, then oldest first
        # an import's attributes ("race: dwarf") say less than what was just said to it: they go in after
        attributes = section(
            "## Attributes", [clip(f"- {k}: {' '.join(str(v).split())}", 300) for k, v in e.attributes.items()]
        )
        scene_ids = {s.id for s in self.scene}
        scene = section("## In the scene", [clip(s.render(), 250) for s in self.scene if s.id != e.id])
        connected = section("## Connected", [clip(c.render(), 200) for c in e.connected if c.id not in scene_ids])
        return "\n".join([*identity, *known, *attributes, *lines, *scene, *connected])


async def visible_snapshot(mem: CampaignMemory, name: str, *, dm: bool, mask: Callable[[str], str]) -> Neighbourhood:
    """The entity named with its relationships, as ``/entity show`` finds it: for players, secret and unreviewed
    entities are "not found", one may be named by its masked name, and the did-you-mean hint names only what they
    may see, masked."""
    return (await _visible(mem, name, dm=dm, mask=mask, mention=False))[0]


async def visible_identity(
    mem: CampaignMemory, name: str, *, dm: bool, mask: Callable[[str], str]
) -> tuple[Neighbourhood, Mention | None]:
    """:func:`visible_snapshot` and where the entity was last said, read in the same round trip. A proposed event
    is told, not named, and its told lines are indexed once it is accepted: until then, the line it was drawn from."""
    snap, last = await _visible(mem, name, dm=dm, mask=mask, mention=True)
    if last is None and snap.entity.status == ReviewStatus.pending and snap.entity.provenance.entry_ids:
        last = await mem.review.said(snap.entity.provenance.entry_ids)
    return snap, last


async def _visible(
    mem: CampaignMemory, name: str, *, dm: bool, mask: Callable[[str], str], mention: bool
) -> tuple[Neighbourhood, Mention | None]:
    from rapidfuzz import process

    async def read(name: str, include_secret: bool = False) -> tuple[Neighbourhood, Mention | None]:
        if mention:
            return await mem.graph.identity(name, include_secret=include_secret)
        return await mem.graph.snapshot(name, include_secret=include_secret), None

    if dm:
        return await read(name, include_secret=True)
    try:
        found = await read(name)
        # a name holding a secret ("Session: Queen Mab unmasked") is found by its masked form only
        if mask(found[0].entity.name) == found[0].entity.name:
            return found
    except NotFoundError:
        pass
    entities = await mem.graph.list_entities(include_secret=False)
    visible = {mask(n): e.name for e in entities for n in (e.name, *e.aliases)}
    # as typed (case aside), else accents and apostrophes aside, as the graph's lookup finds names
    for same in (str.casefold, normalize):
        if (real := next((e for n, e in visible.items() if same(n) == same(name.strip())), None)) is not None:
            return await read(real)
    close = [
        m[0]
        for m in process.extract(
            name, list(visible), scorer=name_closeness, processor=normalize, limit=3, score_cutoff=CLOSE_NAME
        )
    ]
    hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
    raise NotFoundError(f"no entity named {name!r} in this campaign{hint}", subject="entity", name=name)


async def reader_mask(mem: CampaignMemory, dm: bool) -> Callable[[str], str]:
    """What hides secret names from the reader: nothing for the DM, :meth:`KnowledgeGraph.player_mask` else."""
    if dm:
        return str
    names = await _names.get(mem, tuple(await mem.db.fetchval(_NAMES_NOW, mem.campaign_id)), mask=True)
    assert names.mask is not None
    return names.mask


def bookkeeping(key: str) -> bool:
    """Whether an attribute is an import's record of itself (:data:`IMPORTED_FROM`): an NPC's prompt spent its
    attributes on "crd3_episodes: 135", and /entity show led with it. The campaign file and the CLI keep it."""
    tool, underscore, _ = key.casefold().partition("_")
    return bool(underscore) and tool in IMPORTED_FROM


def _short(description: str) -> str:
    return clip(" ".join(description.split()), SCENE_DESCRIPTION)


def _scene_entity(e: Entity, mask: Callable[[str], str]) -> SceneEntity:
    return SceneEntity(
        id=e.id,
        name=mask(e.name),
        type=e.type,
        description=_short(mask(e.description)),
        secret=e.visibility == Visibility.secret,
    )


def identity(
    snap: Neighbourhood, last: Mention | None, mask: Callable[[str], str], *, dm: bool, limit: int = FACTS_SHOWN
) -> IdentitySnapshot:
    """The snapshot as text its reader may see: secret facts are absent for players already (the graph's query),
    and a secret name in what the table or the DM wrote is masked. Of the current facts, the ``limit`` newest, in
    the card's order (a busy character's thousands made a 180 KB card); ``more_facts`` counts the rest."""
    e = snap.entity
    others, sessions = snap.facts_and_sessions(3, mask)
    newest, more = newest_facts(others, limit)
    kept = {r.id for r in newest}
    others = [r for r in others if r.id in kept]
    ends = {end for r in others for end in (r.source_id, r.target_id)}  # those the listed facts reach, no more
    # the sessions it took part in are one line (``took_part``), not connected entities too
    recaps = {r.target_id for r in snap.relationships if session_link(r, e.id)}
    mark = " [DM only]"
    return IdentitySnapshot(
        id=e.id,
        name=mask(e.name),
        type=e.type,
        description=mask(e.description),
        aliases=list(e.aliases),
        attributes={k: mask(attribute_text(v)) for k, v in snap.attributes().items() if not bookkeeping(k)},
        secret=e.visibility == Visibility.secret,
        facts=[mask(r.describe()) + mark * (dm and r.visibility == Visibility.secret) for r in others],
        more_facts=more,
        took_part=sessions,
        connected=[
            _scene_entity(c, mask)
            for c in snap.connected
            if c.status == ReviewStatus.accepted and c.id not in recaps and c.id in ends
        ],
        last_mentioned=f"{mask(last.where())}, {mask(last.speaker)}: “{mask(last.text)}”" if last else None,
    )


class SessionRead(TypedDict):
    """The session a hot context reads, as ``_RECENT`` builds it."""

    id: int
    title: str
    live: bool
    played: str  # the day it began, "2026-11-27"
    now_s: float | None  # live: seconds into it now, by its clock or its last line if later; ended: None


async def recent_and_scene(
    mem: CampaignMemory,
    *,
    session_id: int | None,
    minutes: float,
    dm: bool,
    limit: int | None = None,
    game_only: bool = False,
) -> tuple[SessionRead | None, list[ContextLine], list[SceneEntity], Callable[[str], str]]:
    """The session read (the live one unless ``session_id``), its last ``minutes`` of lines (at most ``limit``,
    the newest; an untimed session's last ``limit`` or :data:`UNTIMED_LINES`), the entities they name (unmasked)
    and the reader's mask: one round trip for the lines, one for the scene's entities (and, after a change of
    names, one to learn them again). ``game_only``: out-of-game talk left out (:mod:`memory.offgame`), the window
    ending at the game's last line."""
    if not 0 < minutes <= MAX_MINUTES:
        raise InvalidInputError(f"minutes must be more than 0 and at most {MAX_MINUTES:g}, not {minutes:g}")
    if limit is not None and not 0 < limit <= MAX_LINES:
        raise InvalidInputError(f"lines must be between 1 and {MAX_LINES}, not {limit}")
    row = await mem.db.fetchrow(_RECENT, mem.campaign_id, session_id, minutes * 60, limit or MAX_LINES, game_only)
    assert row is not None
    names = await _names.get(mem, tuple(row["names_now"]), mask=not dm)
    mask: Callable[[str], str] = str
    if not dm:
        assert names.mask is not None  # asked for with mask=True
        mask = names.mask
    if row["session"] is None:
        if session_id is not None:
            raise NotFoundError(f"no session with id {session_id} in this campaign", subject="session")
        return None, [], [], mask
    session: SessionRead = row["session"]
    lines = [ContextLine(**line) for line in row["lines"]]
    keep = limit or (UNTIMED_LINES if untimed(lines) else len(lines))
    newest: Iterator[ContextLine] = reversed(lines)
    if game_only:  # a line's own table talk (a sponsor read, a roll asked for), judged newest first until enough
        newest = in_game(lines[::-1], lambda line: line.text)
    lines = list(islice(newest, keep))[::-1]
    if session["now_s"] is not None and lines and not lines[-1].untimed:
        # a live session's minutes end now, not at its last line: after 20 quiet minutes, the lines of 20 minutes
        # ago are not "the last 5" (they stay, marked, if nothing was said since: see HotContext.quiet)
        now = session["now_s"] = max(session["now_s"], lines[-1].start_s)  # times ahead of the clock: a paste
        lines = [line for line in lines if line.start_s >= now - minutes * 60] or lines
    scene: list[SceneEntity] = []
    # who speaks is in the scene as much as who is named: an NPC the DM voices names nobody when it talks
    ids = names.index.named_in([part for line in lines for part in (line.speaker, line.text)]) | set(row["corrected"])
    if ids:
        found = await mem.db.fetch(_SCENE, mem.campaign_id, sorted(ids), dm)
        scene = [SceneEntity(**dict(r)) for r in found]
    return session, lines, scene, mask


class _Names:
    """A campaign's names as of one fingerprint: its index, and its players' mask once asked for."""

    def __init__(self, fingerprint: tuple[int, ...], index: NameIndex) -> None:
        self.fingerprint = fingerprint
        self.index = index
        self.mask: SecretMask | None = None


class NamesCache:
    """Each campaign's name index and players' mask while its names stay as they were: building them reads every
    name (tens of milliseconds at 10,000), the fingerprint that says they are still right is one aggregate."""

    def __init__(self) -> None:
        self._held: dict[int, _Names] = {}

    async def get(self, mem: CampaignMemory, fingerprint: tuple[int, ...], *, mask: bool) -> _Names:
        held = self._held.get(mem.campaign_id)
        if held is None or held.fingerprint != fingerprint:
            rows = await mem.db.fetch(_ALL_NAMES, mem.campaign_id)
            held = self._held[mem.campaign_id] = _Names(fingerprint, NameIndex([(r[0], r[1]) for r in rows]))
        if mask and held.mask is None:
            held.mask = await mem.graph.player_mask()
        return held


_names = NamesCache()


async def hot_context(
    mem: CampaignMemory,
    entity: str,
    *,
    session_id: int | None = None,
    minutes: float = 5.0,
    dm: bool = False,
) -> HotContext:
    """The hot context of ``entity`` (a name or alias) in the live session (or ``session_id``); ``dm``: secrets
    shown (marked), else hidden and masked as for players in Discord. Three round trips: the identity snapshot
    with its last mention (one statement), run alongside the L1 window, then the scene's entities."""

    async def identity_part() -> tuple[Neighbourhood | None, Mention | None]:
        try:
            return await mem.graph.identity(entity, include_secret=dm)
        except NotFoundError:
            if dm:
                raise
            return None, None  # perhaps named as players read it: looked up again with their mask

    # what an agent takes as just said: none of the table's talk about the game or the show
    l1_part = recent_and_scene(mem, session_id=session_id, minutes=minutes, dm=dm, game_only=True)
    if isinstance(mem.db, asyncpg.Pool):  # two connections: the parts run side by side
        (snap, last), (session, lines, scene, mask) = await asyncio.gather(identity_part(), l1_part)
    else:  # one connection runs one statement at a time
        snap, last = await identity_part()
        session, lines, scene, mask = await l1_part
    if snap is None or mask(snap.entity.name) != snap.entity.name:  # as /entity show finds it for players
        snap, last = await visible_identity(mem, entity, dm=dm, mask=mask)
    return HotContext(
        entity=identity(snap, last, mask, dm=dm),
        session_id=session["id"] if session else None,
        session=mask(session["title"]) if session else None,
        live=bool(session and session["live"]),
        played=session["played"] if session else None,
        now_s=session["now_s"] if session else None,
        minutes=minutes,
        lines=[line.model_copy(update={"speaker": mask(line.speaker), "text": mask(line.text)}) for line in lines],
        scene=[s.model_copy(update={"name": mask(s.name), "description": _short(mask(s.description))}) for s in scene],
    )
