"""L3, the knowledge graph: entities with aliases, typed relationships and attribute facts with provenance.

Facts are never deleted by play: a contradicting fact, once accepted, closes the old one's validity
(``valid_to``) and points to it with ``superseded_by``. Only the DM removes things outright.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import asyncpg

from memory.db import Executor, transaction
from memory.errors import AlreadyExistsError, InvalidInputError, NotFoundError

if TYPE_CHECKING:
    from memory.session_log import SessionLog

from memory.models import (
    DEFAULT_ACCEPT_THRESHOLD,
    SYMMETRIC,
    Entity,
    EntityIn,
    EntityType,
    LinkResult,
    Mention,
    MergeResult,
    Neighbourhood,
    PastFact,
    PathStep,
    PromptEntity,
    Provenance,
    Relationship,
    RelationshipIn,
    ReviewStatus,
    Source,
    UnlinkResult,
    Visibility,
)
from memory.text import (
    MAX_ALIASES,
    MAX_HEARD_AS,
    check_attributes,
    clean_name,
    counted,
    fact_value,
    heard_as_phrases,
    name_query,
    not_heard_as_phrases,
    shown_text,
    storable,
)

#: Relationship types an entity has at most one of at a time, edge or value: a new accepted one closes the old one.
#: Attribute facts (a value instead of a target) are always single-valued per type.
SINGLE_VALUED = frozenset(
    {
        "located_in",
        "located_at",
        "lives_in",
        "ruled_by",
        "led_by",
        "leader_of",
        "owned_by",
        "wielded_by",
        "killed_by",
        "home",
        "allegiance",
        "status",
        "alignment",
        "occupation",
        "title",
        "age",
    }
)

#: The advisory transaction lock (namespace + campaign id, as ``session_log``'s appends) that writers of a
#: campaign's graph hold when they check before they write. One lock, so no two writers can take locks in
#: opposite orders and deadlock.
_GRAPH_LOCK = 2 << 48

_ENTITY_SELECT = """
    SELECT e.id, e.campaign_id, e.name, e.type, e.description, e.attributes, e.visibility, e.status,
           e.provenance, e.created_at, e.updated_at,
           ARRAY(SELECT a.alias FROM entity_aliases a WHERE a.entity_id = e.id ORDER BY lower(a.alias))
               AS aliases,
           ARRAY(SELECT h.phrase FROM entity_heard_as h WHERE h.entity_id = e.id ORDER BY lower(h.phrase))
               AS heard_as,
           ARRAY(SELECT n.phrase FROM entity_not_heard_as n WHERE n.entity_id = e.id ORDER BY lower(n.phrase))
               AS not_heard_as
    FROM entities e
"""

_REL_SELECT_FROM = """
    SELECT r.id, r.campaign_id, r.source_id, s.name AS source_name, r.type, r.target_id, t.name AS target_name,
           r.value, r.attributes, r.visibility, r.status, r.provenance, r.valid_from, r.valid_to,
           r.superseded_by, r.created_at
    FROM {facts} r
    JOIN entities s ON s.id = r.source_id
    LEFT JOIN entities t ON t.id = r.target_id
"""
_REL_SELECT = _REL_SELECT_FROM.format(facts="relationships")

_FACT_COLUMNS = (
    "r.id, r.campaign_id, r.source_id, r.type, r.target_id, r.value, r.attributes, r.visibility, r.status,"
    " r.provenance, r.valid_from"
)

#: Whether players see fact ``{f}``: public and accepted, about a public, accepted entity (its source is the fact's
#: own entity, which players see, or they would not be reading its facts).
_SEEN = """({f}.visibility = 'public' AND {f}.status = 'accepted' AND ({f}.target_id IS NULL OR EXISTS (
    SELECT 1 FROM entities t WHERE t.campaign_id = $1 AND t.id = {f}.target_id
      AND t.visibility = 'public' AND t.status = 'accepted')))"""

#: The campaign's ($1) facts as players know them. A fact they cannot see (secret, or about a secret entity) closes
#: the public one it contradicts, but players must not learn that something replaced it: to them that one holds
#: until a fact they see, newer than it, contradicts it by :meth:`KnowledgeGraph.close_contradicted`'s rule, or
#: says it again (the single-valued types: constants, not input). ``{touching}``: a condition on ``r`` that each
#: branch applies before its joins (see :func:`_facts`).
_PLAYERS_FACTS = f"""(
    SELECT {_FACT_COLUMNS}, r.valid_to, r.superseded_by, r.created_at FROM relationships r
    WHERE r.campaign_id = $1 AND {{touching}} AND NOT EXISTS (
        SELECT 1 FROM relationships h WHERE h.campaign_id = $1 AND h.id = r.superseded_by AND NOT {_SEEN.format(f="h")}
    )
    UNION ALL
    SELECT {_FACT_COLUMNS}, seen.valid_from, seen.id, r.created_at FROM relationships r
    JOIN relationships h ON h.campaign_id = $1 AND h.id = r.superseded_by
    LEFT JOIN LATERAL (
        SELECT c.id, c.valid_from FROM relationships c
        WHERE c.campaign_id = $1 AND c.source_id = r.source_id AND c.type = r.type AND c.id <> r.id
          AND {_SEEN.format(f="c")}
          AND ((c.target_id IS NULL) = (r.target_id IS NULL)
               OR r.type IN ({", ".join(f"'{t}'" for t in sorted(SINGLE_VALUED))}))
          AND (c.valid_from, c.id) > (r.valid_from, r.id)
        ORDER BY c.valid_from, c.id LIMIT 1
    ) seen ON true
    WHERE r.campaign_id = $1 AND {{touching}} AND NOT {_SEEN.format(f="h")}
)"""


def _facts(include_secret: bool, touching: str = "true") -> str:
    """The relationships a query reads: all of them for the DM, for players as they know them. ``touching`` (SQL on
    ``r``, the facts of one entity, say) restricts the players' ones where it can use an index, before the joins
    that find what they may see: a condition outside them came after reading every fact of the campaign."""
    return "relationships" if include_secret else _PLAYERS_FACTS.format(touching=touching)


def _rel_select(include_secret: bool) -> str:
    return _REL_SELECT_FROM.format(facts=_facts(include_secret))


def entity_from_row(row: asyncpg.Record) -> Entity:
    return Entity(**{k: row[k] for k in Entity.model_fields})


#: The accepted, current facts that a fact ($3 —$4→ target $5 or value $6; $8: of a single-valued type) contradicts,
#: but itself ($2). An attribute fact contradicts the other values of its type, a single-valued edge the other edges
#: and values of its type ("home: the road" closes "home Caddo Keep"): "knows: Elvish" does not close "knows Bob".
_CONTRADICTED = """
    campaign_id = $1 AND id IS DISTINCT FROM $2 AND source_id = $3 AND type = $4 AND status = 'accepted'
    AND valid_to IS NULL AND (target_id IS DISTINCT FROM $5 OR value IS DISTINCT FROM $6)
    AND ((target_id IS NULL) = ($5::bigint IS NULL) OR $8)
"""


def _said_at(provenance: str) -> str:
    """When a fact heard in a session became true, in SQL (``$1``: the campaign; ``provenance``: the parameter
    holding the fact's provenance as JSON): the session's start plus the time said, plus its first line's place in
    the session as microseconds, which orders lines said at one time (an untimed transcript's are all at 0:00); now
    if it names no session of the campaign, and never later. The fact written and the check of what it would close
    (:meth:`KnowledgeGraph._would_close_vouched`) both use it, so they place the fact at one moment."""
    return f"""least(now(), (
        SELECT s.started_at
               + make_interval(secs => least(coalesce(({provenance}::jsonb ->> 'timestamp')::float8, 0), 1e9))
               + make_interval(secs => coalesce((
                   SELECT min(e.seq) FROM session_entries e
                   WHERE e.campaign_id = $1 AND e.session_id = s.id AND e.id = ANY(ARRAY(
                       SELECT jsonb_array_elements_text({provenance}::jsonb -> 'entry_ids')::bigint))
               ), 0) * 1e-6)
        FROM sessions s WHERE s.campaign_id = $1 AND s.id = ({provenance}::jsonb ->> 'session_id')::bigint
    ))"""


def _bare(text: str) -> str:
    """SQL: the text ``text`` (an expression) as the recogniser's matcher tells names apart, by their letters and
    digits only: "ironhold" of "Iron Hold", "Iron-hold" and "ironhold" (casefolded and accents dropped as in
    :func:`memory.correction.text.name_norm`, but for lower() leaving a few letters such as ß)."""
    return f"regexp_replace(normalize(lower({text}), NFKD), '[^[:alnum:]]+', '', 'g')"


#: :func:`_vouched`, in SQL.
_VOUCHED = """(provenance ->> 'source' IN ('dm', 'campaign_file')
               OR coalesce((provenance ->> 'dm_confirmed')::boolean, false))"""


def _vouched(provenance: Provenance) -> bool:
    """The DM's word: a fact the DM typed, loaded from a campaign file or accepted in review."""
    return provenance.source in (Source.dm, Source.campaign_file) or provenance.dm_confirmed


def relationship_from_row(row: asyncpg.Record) -> Relationship:
    return Relationship(**{k: row[k] for k in Relationship.model_fields})


def _copy_rank(fact: asyncpg.Record) -> tuple[Any, ...]:
    """Two current copies of one fact, best first, as migration 0004 keeps them: accepted, then the DM's word,
    then the most confident, then the oldest."""
    p = fact["provenance"]
    dm_word = p.get("source", "dm") in ("dm", "campaign_file") or bool(p.get("dm_confirmed"))
    return (
        fact["status"] != ReviewStatus.accepted,
        not dm_word,
        -float(p.get("confidence", 1)),
        fact["valid_from"],
        fact["id"],
    )


def _keeping_old_name(entity: Entity, new_name: str) -> list[str]:
    """The aliases of a public ``entity`` renamed ``new_name``: its old name joins them, as the session log, the
    players and the speech to correct still say it (a secret one's would tell players who it is). A name the
    rules refuse now (a look-alike letter an earlier version let in) is not kept: renaming is how it is mended."""
    kept = [*(a for a in entity.aliases if a.casefold() != new_name.casefold()), entity.name]
    return [name for name in kept if _storable(name)]


def _storable(name: str) -> bool:
    try:
        clean_name(name)
    except InvalidInputError:
        return False
    return True


def kept_old_name(before: Entity, after: Entity) -> bool:
    """Whether an edit renamed ``before`` and kept its old name as an alias: the DM is told, and how to clear it."""
    return before.name != after.name and before.name in after.aliases


def heard_as_said(before: Entity | None, after: Entity, lines: int | None) -> str:
    """What an edit (``before``: the entity before it; None: it was added) taught of what the recogniser writes for
    the entity's name, for the DM's reply ('' if nothing new). ``lines``: how many stored lines say it, counted
    before the edit (see ``SessionLog.count_heard``; None: not known), which a background job corrects."""
    had = {h.casefold() for h in before.heard_as} if before is not None else set()
    if not (new := [h for h in after.heard_as if h.casefold() not in had]):
        return ""
    said = f"From now on {', '.join(f'“{h}”' for h in new)} {'is' if len(new) == 1 else 'are'} written {after.name}"
    if lines is None:
        said += "; the lines already stored that say it are corrected again in the background."
    elif not lines:
        said += "; no line stored so far says it."
    else:
        one = lines == 1
        said += (
            f"; {counted(lines, 'line')} already stored {'says' if one else 'say'} it: {'it is' if one else 'they are'}"
            " corrected again in the background."
        )
    return " ".join([said, *everyday_said(new, after.name)])


def removed_heard_as(had: Sequence[str], now: Sequence[str]) -> list[str]:
    """The phrases of ``had`` that ``now`` no longer holds, as the matcher reads them (spacing and punctuation
    aside: "from-skin" replacing "from skin" takes nothing away)."""
    from memory.correction.text import spaceless

    kept = {spaceless(p) for p in now}
    return [h for h in had if spaceless(h) not in kept]


def heard_as_removed_said(before: Entity, after: Entity, lines: int | None) -> str:
    """What an edit took away of what the recogniser writes for the entity's name, for the DM's reply ('' if
    nothing). ``lines``: how many stored lines hold a correction of those phrases to it (see
    ``SessionLog.count_corrected``; None: not known), which a background job restores."""
    if not (gone := removed_heard_as(before.heard_as, after.heard_as)):
        return ""
    it, is_ = ("it", "is") if len(gone) == 1 else ("they", "are")
    said = f"{', '.join(f'“{h}”' for h in gone)} {is_} no longer written {after.name}"
    if lines is None:
        return f"{said}; {it} {is_} restored in the background in the stored lines where {it} became the name."
    if not lines:
        return f"{said}; no line stored so far was corrected from {'it' if it == 'it' else 'them'}."
    return f"{said}; {it} {is_} restored in {counted(lines, 'line')} already stored, in the background."


def not_heard_as_said(before: Entity | None, after: Entity, lines: int | None) -> str:
    """What an edit (``before``: the entity before it; None: it was added) taught of what the recogniser writes that
    is never the entity's name, for the DM's reply ('' if nothing new). ``lines``: how many stored lines hold a
    correction of those phrases to it (see ``SessionLog.count_corrected``; None: not known), which a background
    job restores."""
    if not (new := removed_heard_as(after.not_heard_as, before.not_heard_as if before is not None else [])):
        return ""
    it, is_ = ("it", "is") if len(new) == 1 else ("they", "are")
    said = f"From now on {', '.join(f'“{h}”' for h in new)} {is_} never written {after.name}"
    if before is None:  # no line was corrected to it yet
        return said + "."
    if lines is None:
        return f"{said}; {it} {is_} restored in the background in the stored lines where {it} became the name."
    if not lines:
        return f"{said}; no line stored so far was corrected from {'it' if it == 'it' else 'them'}."
    return f"{said}; {it} {is_} restored in {counted(lines, 'line')} already stored, in the background."


class PhraseLines(NamedTuple):
    """How many stored lines an edit of an entity's phrases touches, counted before the edit (its jobs change them)."""

    heard: int | None  # say a heard-as phrase given (see ``SessionLog.count_heard``)
    restored: int | None  # hold a correction from a heard-as phrase taken away
    unsaid: int | None  # hold a correction from a new not-heard-as phrase


async def count_phrase_lines(
    log: SessionLog, before: Entity, heard_as: Sequence[str] | None, not_heard_as: Sequence[str] | None
) -> PhraseLines:
    """The stored lines an edit giving the entity ``before`` these heard-as and not-heard-as phrases (None: left as
    they are) will have corrected or restored, for :func:`phrases_said`."""
    names = [before.name, *before.aliases]
    gone = removed_heard_as(before.heard_as, heard_as) if heard_as is not None else []
    new_never = removed_heard_as(not_heard_as, before.not_heard_as) if not_heard_as else []  # those it lacked
    return PhraseLines(
        heard=await log.count_heard(heard_as) if heard_as else None,
        restored=await log.count_corrected(before.id, gone, names) if gone else None,
        unsaid=await log.count_corrected(before.id, new_never, names, any_stage=True) if new_never else None,
    )


def phrases_said(before: Entity, after: Entity, lines: PhraseLines) -> list[str]:
    """What an edit did to what the recogniser writes for the entity, for the DM's reply: a sentence each."""
    said = [
        heard_as_said(before, after, lines.heard),
        heard_as_removed_said(before, after, lines.restored),
        not_heard_as_said(before, after, lines.unsaid),
    ]
    return [s for s in said if s]


def everyday_said(phrases: Sequence[str], name: str) -> list[str]:
    """The warning for the DM when a heard-as phrase of ``name`` is ordinary English (see :func:`everyday`): it is
    allowed, but every time it is said it becomes the name. [] if none is."""
    from memory.correction.evidence import everyday  # wordfreq and the matcher: only when a phrase is added

    if not (common := [p for p in phrases if everyday(p)]):
        return []
    if len(common) == 1:
        return [f"“{common[0]}” is everyday English: every “{common[0]}” said from now on is written {name}."]
    return [f"{', '.join(f'“{p}”' for p in common)} are everyday English: each said from now on is written {name}."]


def _visible(alias: str, include_secret: bool) -> str:
    """SQL condition for what a player may see: accepted, currently valid, public unless the DM asks."""
    cond = f"{alias}.status = 'accepted'"
    if not include_secret:
        cond += f" AND {alias}.visibility = 'public'"
    return cond


#: A word of a secret name rarer than this in English (Zipf: "holt" 3.7, "pale" 4.1) names the entity alone.
_NAMING_ZIPF = 4.0


_WORD_RUN = re.compile(r"\w+")


def _words(name: str) -> list[str]:
    return re.findall(r"\w+", name.casefold())


class SecretMask:
    """Hides secret entities' names in text players read: a recap, a recalled passage or a description may
    quote someone saying one. Their aliases stay: an alias ("the Pale Magister") is what players know such an
    entity by. Case is ignored: a name said in lower case is still the name."""

    MASK = "[secret]"

    def __init__(self, names: Iterable[str]) -> None:
        # longest first, so "Vaskerrin Holt" is hidden whole before a shorter secret name inside it
        self._spellings = sorted({n for n in names if n.strip()}, key=len, reverse=True)
        # A match holds every word of its name whole (casefold: what IGNORECASE equates), so a text is searched
        # for the names whose words it all has, and no others: one pattern of every name tried at every character
        # cost 0.6 ms a line at 1,000 entities, and ten times that at 10,000.
        self._words = [frozenset(_WORD_RUN.findall(n.casefold())) for n in self._spellings]
        self._by_word: dict[str, list[int]] = {}
        for i, said in enumerate(self._words):
            if said:
                self._by_word.setdefault(min(said), []).append(i)
        self._always = [i for i, said in enumerate(self._words) if not said]
        self._patterns: dict[tuple[int, ...], re.Pattern[str]] = {}

    @functools.cached_property
    def _pattern(self) -> re.Pattern[str]:
        """The one pattern of every name (what a text holding all their words is searched with)."""
        return self._pattern_of(tuple(range(len(self._spellings))))

    def _pattern_of(self, which: tuple[int, ...]) -> re.Pattern[str]:
        if (pattern := self._patterns.get(which)) is None:
            words = (r"\s+".join(map(re.escape, self._spellings[i].split())) for i in which)
            pattern = re.compile("|".join(rf"(?<!\w){w}(?!\w)" for w in words), re.IGNORECASE)
            if len(self._patterns) < 10_000:  # a scene names the same few again and again
                self._patterns[which] = pattern
        return pattern

    def __call__(self, text: str) -> str:
        if not self._spellings or not text:
            return text
        said = set(_WORD_RUN.findall(text.casefold()))
        which = {i for w in said.intersection(self._by_word) for i in self._by_word[w] if self._words[i] <= said}
        if not which and not self._always:
            return text
        return self._pattern_of(tuple(sorted(which.union(self._always)))).sub(self.MASK, text)


class KnowledgeGraph:
    def __init__(self, db: Executor, campaign_id: int, *, accept_threshold: float = DEFAULT_ACCEPT_THRESHOLD) -> None:
        self.db = db
        self.campaign_id = campaign_id
        self.accept_threshold = accept_threshold

    # entities ---------------------------------------------------------------------------------------------

    async def find_entity(self, name: str, *, include_rejected: bool = False) -> Entity | None:
        """The entity called ``name`` or having it as an alias, case-insensitively (the name wins)."""
        # Two index lookups joined by UNION ALL: an OR across the tables would scan every entity.
        # ``status <> 'rejected'`` spelled out in the name probe so the partial unique index serves it.
        row = await self.db.fetchrow(
            f"""
            WITH hit AS (
                SELECT id, 0 AS rank FROM entities
                WHERE campaign_id = $1 AND lower(name) = lower($2) AND ($3 OR status <> 'rejected')
                UNION ALL
                SELECT entity_id, 1 FROM entity_aliases WHERE campaign_id = $1 AND lower(alias) = lower($2)
            )
            {_ENTITY_SELECT} JOIN hit ON hit.id = e.id
            WHERE e.campaign_id = $1 AND ($3 OR e.status <> 'rejected')
            ORDER BY hit.rank LIMIT 1
            """,
            self.campaign_id,
            name_query(name),
            include_rejected,
        )
        return entity_from_row(row) if row else None

    async def heard_as_of(self, phrase: str) -> Entity | None:
        """The entity the recogniser is known to write ``phrase`` for (one of its heard-as phrases, spacing and
        punctuation aside, as the matcher reads them), if any."""
        row = await self.db.fetchrow(
            f"""
            {_ENTITY_SELECT} JOIN entity_heard_as h ON h.entity_id = e.id
            WHERE e.campaign_id = $1 AND e.status <> 'rejected' AND h.campaign_id = $1
              AND {_bare("h.phrase")} = {_bare("$2::text")}
            LIMIT 1
            """,
            self.campaign_id,
            phrase,
        )
        return entity_from_row(row) if row else None

    async def get_entity(self, name: str, *, secret_hints: bool = False) -> Entity:
        """``secret_hints``: the did-you-mean may name secret and pending entities, for an answer only the DM reads."""
        found = await self.find_entity(name)
        if found is None:
            raise NotFoundError(await self._not_found_message(name, secret_hints), subject="entity", name=name)
        return found

    async def get_entity_by_id(self, entity_id: int) -> Entity:
        row = await self.db.fetchrow(
            f"{_ENTITY_SELECT} WHERE e.campaign_id = $1 AND e.id = $2", self.campaign_id, entity_id
        )
        if row is None:
            raise NotFoundError(f"no entity with id {entity_id} in this campaign")
        return entity_from_row(row)

    async def _not_found_message(self, name: str, include_secret: bool = False) -> str:
        from rapidfuzz import process

        # Hints come from public, accepted names only, unless told: a player's typo must not reveal a secret entity.
        names = await self.all_names(include_secret=include_secret)
        close = [m[0] for m in process.extract(name, names, limit=3, score_cutoff=70)]
        hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
        return f"no entity named {name!r} in this campaign{hint}"

    async def all_names(self, *, include_secret: bool = True) -> list[str]:
        """Names and aliases of the entities that are not rejected (public and accepted ones only, unless
        ``include_secret``)."""
        visible = "" if include_secret else "AND e.status = 'accepted' AND e.visibility = 'public'"
        rows = await self.db.fetch(
            f"""
            SELECT e.name FROM entities e WHERE e.campaign_id = $1 AND e.status <> 'rejected' {visible}
            UNION ALL
            SELECT a.alias FROM entity_aliases a JOIN entities e ON e.id = a.entity_id
            WHERE a.campaign_id = $1 AND e.status <> 'rejected' {visible}
            """,
            self.campaign_id,
        )
        return [r[0] for r in rows]

    async def player_mask(self) -> SecretMask:
        """What hides this campaign's secret names from players (see :class:`SecretMask`): each name, and each of
        its words that names it alone ("Vaskerrin" of Vaskerrin Holt) — one English hardly uses, and no name
        players may read holds: an accepted public entity's name or an accepted entity's alias (a proposal waiting
        for review is the DM's to read, however the table named it)."""
        from memory.correction.evidence import word_zipf  # wordfreq's table loads on first use

        rows = await self.db.fetch(
            """
            SELECT e.name, e.visibility = 'secret' AS secret FROM entities e
            WHERE e.campaign_id = $1 AND (e.status = 'accepted' OR e.visibility = 'secret' AND e.status <> 'rejected')
              -- a recap's event is named after its session's title ("Session: Vaskerrin's betrayal"), which
              -- players read masked: it does not make a word of a secret name one they may read
              AND NOT (e.type = 'event' AND e.visibility = 'public' AND e.name LIKE 'Session: %')
            UNION ALL
            SELECT a.alias, false FROM entity_aliases a JOIN entities e ON e.id = a.entity_id
            WHERE a.campaign_id = $1 AND e.status = 'accepted' AND NOT EXISTS (
                SELECT 1 FROM masked_names m
                WHERE m.campaign_id = $1 AND m.entity_id = a.entity_id AND lower(m.name) = lower(a.alias)
            )
            UNION ALL
            SELECT m.name, true FROM masked_names m LEFT JOIN entities e ON e.campaign_id = $1 AND e.id = m.entity_id
            WHERE m.campaign_id = $1 AND (m.entity_id IS NULL OR e.visibility = 'secret' AND e.status <> 'rejected')
            """,
            self.campaign_id,
        )
        # a name a public entity or an alias bears now is players' to read, whatever once bore it
        readable = {r["name"].casefold() for r in rows if not r["secret"]}
        secret = [r["name"] for r in rows if r["secret"] and r["name"].casefold() not in readable]
        shown = {w for r in rows if not r["secret"] for w in _words(r["name"])}
        own = {
            w for name in secret for w in _words(name) if len(w) >= 3 and w not in shown and word_zipf(w) < _NAMING_ZIPF
        }
        return SecretMask([*secret, *own])

    async def list_entities(
        self,
        type: EntityType | None = None,
        *,
        status: ReviewStatus | None = ReviewStatus.accepted,
        include_secret: bool = True,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[Entity]:
        rows = await self.db.fetch(
            f"""{_ENTITY_SELECT}
            WHERE e.campaign_id = $1 AND ($2::text IS NULL OR e.type = $2)
              AND ($3::text IS NULL OR e.status = $3) AND ($4 OR e.visibility = 'public')
            ORDER BY lower(e.name) LIMIT $5 OFFSET $6
            """,
            self.campaign_id,
            type,
            status,
            include_secret,
            limit,
            offset,
        )
        return [entity_from_row(r) for r in rows]

    async def count_entities(self, type: EntityType | None = None, *, include_secret: bool = True) -> int:
        return await self.db.fetchval(
            """
            SELECT count(*) FROM entities WHERE campaign_id = $1 AND status = 'accepted'
              AND ($2::text IS NULL OR type = $2) AND ($3 OR visibility = 'public')
            """,
            self.campaign_id,
            type,
            include_secret,
        )

    def bound_to(self, conn: Executor) -> KnowledgeGraph:
        """The same graph on ``conn`` (a connection inside a transaction)."""
        return (
            self if conn is self.db else KnowledgeGraph(conn, self.campaign_id, accept_threshold=self.accept_threshold)
        )

    async def add_entity(self, entity: EntityIn) -> Entity:
        async with transaction(self.db) as conn:  # the entity and its aliases, or nothing
            return await self.bound_to(conn)._add_entity(entity)

    async def _add_entity(self, entity: EntityIn) -> Entity:
        await self._check_names_free([entity.name, *entity.aliases])
        try:
            entity_id = await self.db.fetchval(
                """
                INSERT INTO entities (campaign_id, type, name, description, attributes, visibility, status,
                                      provenance)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id
                """,
                self.campaign_id,
                entity.type,
                entity.name,
                entity.description,
                entity.attributes,
                entity.visibility,
                entity.status,
                entity.provenance.model_dump(mode="json"),
            )
        except asyncpg.UniqueViolationError:
            raise AlreadyExistsError(
                f"an entity named {entity.name!r} already exists", subject="entity", name=entity.name
            ) from None
        await self._set_aliases(entity_id, entity.aliases)
        await self._set_heard_as(entity_id, entity.heard_as)
        await self._set_not_heard_as(entity_id, entity.not_heard_as, restore=False)  # no line names it yet
        return await self.get_entity_by_id(entity_id)

    async def update_entity(
        self,
        name: str,
        *,
        new_name: str | None = None,
        type: EntityType | None = None,
        description: str | None = None,
        aliases: Sequence[str] | None = None,
        attributes: dict[str, Any] | None = None,
        visibility: Visibility | None = None,
        replace_attributes: bool = False,
        heard_as: Sequence[str] | None = None,
        not_heard_as: Sequence[str] | None = None,
    ) -> Entity:
        """Change an entity in place; ``attributes`` merge into the existing ones unless ``replace_attributes``. A
        public entity renamed keeps its old name as an alias, unless ``aliases`` says what they are; a secret one's
        old name stays hidden from players while it is secret (what was said of it still says that name).
        ``heard_as`` replaces what the recogniser is known to write for its name; the lines a new phrase is in are
        corrected again by a background job (:func:`memory.jobs.enqueue_recorrection`), and those a phrase taken away
        was corrected in restored (:func:`memory.jobs.enqueue_restoration`); ``not_heard_as`` replaces what it
        writes that is never the name, and the lines a new one was corrected to the name in are restored so too. An
        accepted entity given a name or alias it did not have took part in the recapped sessions that said it (see
        :func:`memory.took_part.link_to_recaps`)."""
        from memory.took_part import link_to_recaps, new_names  # it builds on this module

        async with transaction(self.db) as conn:  # name, fields, aliases and links change together or not at all
            graph = self.bound_to(conn)
            await graph.lock()  # before any write (heard-as phrases go first): see ``KnowledgeGraph.lock``
            before = await graph.get_entity(name)
            updated = await graph._update_entity(
                before,
                new_name=new_name,
                type=type,
                description=description,
                aliases=aliases,
                attributes=attributes,
                visibility=visibility,
                replace_attributes=replace_attributes,
                heard_as=heard_as,
                not_heard_as=not_heard_as,
            )
            if updated.status == ReviewStatus.accepted and (said := new_names(before, updated)):
                # an entity accepted before the edit took part in the sessions saying its old names already
                names = said if before.status == ReviewStatus.accepted else None
                await link_to_recaps(graph, [updated.id], names=names)
            return updated

    async def _update_entity(
        self,
        current: Entity,
        *,
        new_name: str | None,
        type: EntityType | None,
        description: str | None,
        aliases: Sequence[str] | None,
        attributes: dict[str, Any] | None,
        visibility: Visibility | None,
        replace_attributes: bool,
        heard_as: Sequence[str] | None = None,
        not_heard_as: Sequence[str] | None = None,
    ) -> Entity:
        public = (visibility or current.visibility) == Visibility.public
        renamed = False
        phrases = heard_as_phrases(list(heard_as)) if heard_as is not None else None
        refused = not_heard_as_phrases(list(not_heard_as)) if not_heard_as is not None else None
        if phrases is not None:  # gone before the names are checked: a phrase may become a name in the same edit
            await self.db.execute(
                "DELETE FROM entity_heard_as WHERE campaign_id = $1 AND entity_id = $2", self.campaign_id, current.id
            )
        if new_name is not None:
            new_name = clean_name(new_name)
            renamed = new_name.casefold() != current.name.casefold()
            if renamed and aliases is None and public:
                aliases = _keeping_old_name(current, new_name)
        cleaned_aliases = EntityIn(name="x", type=EntityType.npc, aliases=list(aliases)).aliases if aliases else []
        to_check = [n for n in [new_name, *cleaned_aliases] if n]
        await self._check_names_free(to_check, except_id=current.id)
        attributes = check_attributes(attributes) if attributes else attributes
        if description is not None:
            try:
                description = shown_text(storable(description))
            except ValueError as exc:
                raise InvalidInputError(f"description {exc}") from None
        merged = attributes if replace_attributes else {**current.attributes, **(attributes or {})}
        try:
            await self.db.execute(
                """
                UPDATE entities SET name = coalesce($3, name), type = coalesce($4, type),
                    description = coalesce($5, description), attributes = $6,
                    visibility = coalesce($7, visibility), updated_at = now()
                WHERE campaign_id = $1 AND id = $2
                """,
                self.campaign_id,
                current.id,
                new_name,
                type,
                description,
                merged or {},
                visibility,
            )
        except asyncpg.UniqueViolationError:
            raise AlreadyExistsError(
                f"an entity named {new_name!r} already exists", subject="entity", name=new_name
            ) from None
        if aliases is not None:
            await self._set_aliases(current.id, cleaned_aliases)
        if not public and renamed:  # what was said of it still says its old name
            await self._keep_masked(current.id, [current.name])
        elif public and current.visibility == Visibility.secret:  # no secret now: nor are the names it had
            await self.db.execute(
                "DELETE FROM masked_names WHERE campaign_id = $1 AND entity_id = $2", self.campaign_id, current.id
            )
        if phrases is not None:
            await self._set_heard_as(current.id, phrases, had=current.heard_as)
        if refused is not None:
            await self._set_not_heard_as(current.id, refused, had=current.not_heard_as)
        else:  # its names or heard-as phrases changed: none may be what it is never heard as
            await self._check_not_heard_as(current.id)
        return await self.get_entity_by_id(current.id)

    async def hidden_names(self) -> dict[int | None, list[str]]:
        """The names players never read that no secret entity bears as its name (see migration 0008), by the secret
        entity they were names of (None: one removed), as a campaign file carries them to another campaign."""
        rows = await self.db.fetch(
            "SELECT entity_id, name FROM masked_names WHERE campaign_id = $1 ORDER BY entity_id NULLS FIRST, name",
            self.campaign_id,
        )
        hidden: dict[int | None, list[str]] = {}
        for r in rows:
            hidden.setdefault(r["entity_id"], []).append(r["name"])
        return hidden

    async def hide_names(self, entity_id: int | None, names: Sequence[str]) -> list[str]:
        """Hide ``names`` from players while the secret entity ``entity_id`` stays secret (None: for good), as its
        rename or a merge into it would; returns those not hidden already. A public entity's are not kept: making
        it public released them."""
        if entity_id is not None and (await self.get_entity_by_id(entity_id)).visibility != Visibility.secret:
            return []
        had = {n.casefold() for n in (await self.hidden_names()).get(entity_id, [])}
        new = list({n.casefold(): n for n in names if n.casefold() not in had}.values())
        await self._keep_masked(entity_id, new)
        return new

    async def _keep_masked(self, entity_id: int | None, names: Iterable[str]) -> None:
        """Hide ``names`` from players while the entity ``entity_id`` stays secret; for good with None (a
        secret entity removed)."""
        await self.db.execute(
            """
            INSERT INTO masked_names (campaign_id, entity_id, name)
            SELECT $1, $2, u.name FROM unnest($3::text[]) u(name)
            WHERE NOT EXISTS (
                SELECT 1 FROM masked_names m
                WHERE m.campaign_id = $1 AND m.entity_id IS NOT DISTINCT FROM $2 AND lower(m.name) = lower(u.name)
            )
            """,
            self.campaign_id,
            entity_id,
            list(names),
        )

    async def upsert_entity(
        self, entity: EntityIn, *, renamed_from: str | None = None, keep: Collection[str] = ()
    ) -> tuple[Entity, Literal["created", "updated", "unchanged"], Entity | None]:
        """Create the entity or bring the one of its name up to date, saying which happened and what it was before
        (None: new), so a caller can tell the DM what was replaced; ``renamed_from``
        names an entity to rename into it (once renamed, the entity of its name is found first, so loading the
        same file again changes nothing; two entities are never merged). Never one whose alias is its name: "Old
        Bronze", an alias of Eldrinax, would rename, retype and strip Eldrinax. Nor one of its aliases: a new "Mira
        the Younger" with the alias "Mira" is not the Mira already known. ``keep`` names the fields of ``entity``
        its caller did not state: an entity already known keeps its own values of them."""
        named, old = await self._named_for_file(entity.name, renamed_from)
        if named is not None and old is not None and named.id != old.id:
            raise AlreadyExistsError(
                f"renamed_from: {old.name!r} cannot become {named.name!r}, which is another entity already"
            )
        current = named or old  # neither: a file made elsewhere, its entity is new here
        if current is None:
            return await self.add_entity(entity), "created", None
        before = current
        # The DM's word (a campaign file) on an entity still waiting for review accepts it, as it would a fact.
        said_by_dm = entity.provenance.source in (Source.dm, Source.campaign_file) or entity.provenance.dm_confirmed
        accepted = False
        if current.status == ReviewStatus.pending and said_by_dm:
            await self.set_entity_status(current.id, ReviewStatus.accepted, dm_confirmed=True)
            current, accepted = await self.get_entity_by_id(current.id), True
        if keep:
            kept = {field: getattr(current, field) for field in keep}
            renamed = current.name.casefold() != entity.name.casefold()
            if "aliases" in kept and renamed and kept.get("visibility", entity.visibility) == Visibility.public:
                kept["aliases"] = _keeping_old_name(current, entity.name)
            if "aliases" in kept:  # renamed to one of its aliases: that is its name now
                kept["aliases"] = [a for a in kept["aliases"] if a.casefold() != entity.name.casefold()]
            entity = entity.model_copy(update=kept)
        wanted = (
            entity.name,
            entity.type,
            entity.description,
            sorted(a.casefold() for a in entity.aliases),
            entity.attributes,
            entity.visibility,
            sorted(h.casefold() for h in entity.heard_as),
            sorted(h.casefold() for h in entity.not_heard_as),
        )
        have = (
            current.name,
            current.type,
            current.description,
            sorted(a.casefold() for a in current.aliases),
            current.attributes,
            current.visibility,
            sorted(h.casefold() for h in current.heard_as),
            sorted(h.casefold() for h in current.not_heard_as),
        )
        if wanted == have:
            return current, "updated" if accepted else "unchanged", before
        # not ``update_entity``: a file's names change many entities at once, their caller links them in one go
        async with transaction(self.db) as conn:
            updated = await self.bound_to(conn)._update_entity(
                current,
                new_name=entity.name,
                type=entity.type,
                description=entity.description,
                aliases=entity.aliases,
                attributes=entity.attributes,
                visibility=entity.visibility,
                replace_attributes=True,
                heard_as=entity.heard_as,
                not_heard_as=entity.not_heard_as,
            )
        return updated, "updated", before

    async def _named_for_file(self, name: str, renamed_from: str | None) -> tuple[Entity | None, Entity | None]:
        """The entity named ``name`` and the one named ``renamed_from`` (None: none, or not given)."""
        return await self._named(name), await self._named(renamed_from) if renamed_from else None

    async def upserted(self, name: str, renamed_from: str | None = None) -> Entity | None:
        """The entity :meth:`upsert_entity` would bring up to date for an entry of this name (None: it adds one)."""
        named, old = await self._named_for_file(name, renamed_from)
        return named or old

    async def _named(self, name: str) -> Entity | None:
        """The entity of this name (not alias), case-insensitively."""
        row = await self.db.fetchrow(
            f"""{_ENTITY_SELECT}
            WHERE e.campaign_id = $1 AND lower(e.name) = lower($2) AND e.status <> 'rejected'
            """,
            self.campaign_id,
            name_query(name),
        )
        return entity_from_row(row) if row else None

    async def _entity(self, ref: str | int) -> Entity:
        """By name or alias, or by id: what a Confirm button asked about, whatever it is called since."""
        return await self.get_entity_by_id(ref) if isinstance(ref, int) else await self.get_entity(ref)

    async def remove_entity(self, name: str | int) -> Entity:
        """Delete an entity (a name, an alias or its id) and every relationship touching it (the DM's decision,
        not play's). A secret one's names stay hidden from players in what was said of it: removing it reveals
        nothing."""
        async with transaction(self.db) as conn:
            graph = self.bound_to(conn)
            entity = await graph._entity(name)
            if entity.visibility == Visibility.secret:
                await graph._keep_masked(None, [entity.name])  # the names it had follow by the foreign key
            await conn.execute("DELETE FROM entities WHERE campaign_id = $1 AND id = $2", self.campaign_id, entity.id)
            return entity

    async def merge_entities(self, source: str | int, into: str | int) -> MergeResult:
        """Make ``source`` (a name or alias) part of ``into``: the DM's answer to one NPC recorded twice ("Gorrim"
        and "Gorrim Ashfoot"). Every fact of ``source`` moves to ``into`` with its status (a pending one stays in
        the review queue), visibility, provenance and validity; a fact ``into`` has already keeps one copy, the
        better one as migration 0004 chose (the other's provenance under "merged"), and a fact between the two is
        dropped. ``source``'s name and aliases become aliases of ``into``, its description and attributes fill
        what ``into`` lacks (a description ``into`` has stays; the result says what was dropped), its mentions
        (chunks, corrections) become ``into``'s, and ``source`` is deleted.

        A secret ``source`` merged into a public ``into`` gives it none of its names, description or attributes
        (players would read them) and its facts become secret. ``into`` is accepted if either was: the DM
        vouched for the accepted one, and merging is the DM's word that the pending one is the same. Merged into a
        secret ``into``, ``source``'s name (and a proposal's aliases) stays hidden from players while ``into`` is
        secret: aliases are what players know a secret entity by, and they did not know it by those. A merge that
        would give ``into`` more aliases or heard-as phrases than their caps is refused before anything changes.
        Either may be its id."""
        from memory.took_part import link_to_recaps  # it builds on this module

        async with transaction(self.db) as conn:
            graph = self.bound_to(conn)
            await graph.lock()
            merged = await graph._merge_entities(source, into)
            # ``into`` may be accepted only now, or have names of a proposal's now: the recapped sessions they name
            await link_to_recaps(graph, [merged.entity.id])
            return merged

    async def _merge_entities(self, source: str | int, into: str | int) -> MergeResult:
        s, t = await self._entity(source), await self._entity(into)
        if s.id == t.id:
            if str(source).strip().casefold() == str(into).strip().casefold():
                raise InvalidInputError(f"cannot merge {t.name!r} into itself: name two entities")
            raise InvalidInputError(f"{source!r} and {into!r} both name {t.name!r}: nothing to merge")
        hide = s.visibility == Visibility.secret and t.visibility == Visibility.public
        known = {n.casefold() for n in [t.name, *t.aliases]}
        names = list(dict.fromkeys(n for n in [s.name, *s.aliases] if n.casefold() not in known))
        if not hide and len(t.aliases) + len(names) > MAX_ALIASES:
            # refused before anything changes: over the cap, the merged entity could not even be renamed
            raise InvalidInputError(
                f"merged, {t.name} would have {len(t.aliases) + len(names)} aliases ({len(t.aliases)} of its own, "
                f"{len(names)} from {s.name}), more than the {MAX_ALIASES} allowed: edit the aliases of either down "
                "to the names the table uses, then merge again"
            )
        if (heard := len({h.casefold() for h in [*t.heard_as, *s.heard_as]})) > MAX_HEARD_AS:
            # as for aliases: the phrases move to ``into``, which could then not be edited but to drop some
            raise InvalidInputError(
                f"merged, {t.name} would have {heard} heard-as phrases ({len(t.heard_as)} of its own, "
                f"{len(s.heard_as)} from {s.name}), more than the {MAX_HEARD_AS} allowed: edit those of either down "
                "to what the recogniser writes, then merge again"
            )
        if (unheard := len({h.casefold() for h in [*t.not_heard_as, *s.not_heard_as]})) > MAX_HEARD_AS:
            raise InvalidInputError(
                f"merged, {t.name} would have {unheard} not-heard-as phrases ({len(t.not_heard_as)} of its own, "
                f"{len(s.not_heard_as)} from {s.name}), more than the {MAX_HEARD_AS} allowed: edit those of either "
                "down, then merge again"
            )
        moved = dropped = loops = made_secret = 0
        rows = await self.db.fetch(
            """
            SELECT id, source_id, target_id, type, value, status, visibility, provenance, valid_from, valid_to
            FROM relationships WHERE campaign_id = $1 AND (source_id = $2 OR target_id = $2) ORDER BY id
            """,
            self.campaign_id,
            s.id,
        )
        for row in rows:
            src = t.id if row["source_id"] == s.id else row["source_id"]
            dst = t.id if row["target_id"] == s.id else row["target_id"]
            if src == dst:
                await self.db.execute(
                    "DELETE FROM relationships WHERE campaign_id = $1 AND id = $2", self.campaign_id, row["id"]
                )
                loops += 1
                continue
            secret = hide and row["visibility"] == Visibility.public
            made_secret += secret
            keep = row
            copy = None
            if row["valid_to"] is None and row["status"] != ReviewStatus.rejected:
                copy = await self.db.fetchrow(
                    """
                    SELECT id, status, visibility, provenance, valid_from FROM relationships
                    WHERE campaign_id = $1 AND source_id = $2 AND type = $3 AND target_id IS NOT DISTINCT FROM $4
                      AND value IS NOT DISTINCT FROM $5 AND valid_to IS NULL AND status <> 'rejected'
                    """,
                    self.campaign_id,
                    src,
                    row["type"],
                    dst,
                    row["value"],
                )
            if copy is not None:
                keep, drop = sorted((row, copy), key=_copy_rank)
                await self.db.execute(
                    "DELETE FROM relationships WHERE campaign_id = $1 AND id = $2", self.campaign_id, drop["id"]
                )
                await self.db.execute(
                    "UPDATE relationships SET superseded_by = $3 WHERE campaign_id = $1 AND superseded_by = $2",
                    self.campaign_id,
                    drop["id"],
                    keep["id"],
                )
                folded = {**drop["provenance"], "id": drop["id"], "status": drop["status"]}
                merged = [*keep["provenance"].get("merged", []), folded]
                await self.db.execute(
                    """
                    UPDATE relationships SET provenance = provenance || jsonb_build_object('merged', $3::jsonb),
                        visibility = CASE WHEN $4 THEN 'secret' ELSE visibility END
                    WHERE campaign_id = $1 AND id = $2
                    """,
                    self.campaign_id,
                    keep["id"],
                    merged,
                    secret or drop["visibility"] == Visibility.secret,
                )
                dropped += 1
            else:
                moved += 1
            if keep is row:
                await self.db.execute(
                    """
                    UPDATE relationships SET source_id = $3, target_id = $4,
                        visibility = CASE WHEN $5 THEN 'secret' ELSE visibility END
                    WHERE campaign_id = $1 AND id = $2
                    """,
                    self.campaign_id,
                    row["id"],
                    src,
                    dst,
                    secret,
                )
                # "lives_in" of each: one stays current (only a value or a single-valued edge contradicts: the
                # rest would be a query each for nothing, thousands for a busy entity)
                if (
                    row["status"] == ReviewStatus.accepted
                    and row["valid_to"] is None
                    and (row["value"] is not None or row["type"] in SINGLE_VALUED)
                ):
                    await self.close_contradicted(row["id"])
        if t.status == ReviewStatus.pending and s.status == ReviewStatus.accepted:
            await self.set_entity_status(t.id, ReviewStatus.accepted, dm_confirmed=True)
        await self.db.execute(
            """
            UPDATE entities SET description = CASE WHEN description = '' THEN $3 ELSE description END,
                attributes = $4::jsonb || attributes, updated_at = now()
            WHERE campaign_id = $1 AND id = $2
            """,
            self.campaign_id,
            t.id,
            "" if hide else s.description,
            {} if hide else s.attributes,
        )
        # Where it was said: chunks found by entity, the corrections that named it.
        await self.db.execute(
            """
            UPDATE chunks SET entity_ids = ARRAY(
                SELECT i FROM unnest(array_replace(entity_ids, $2, $3)) WITH ORDINALITY u(i, n)
                GROUP BY i ORDER BY min(n)
            )
            WHERE campaign_id = $1 AND entity_ids @> ARRAY[$2::bigint]
            """,
            self.campaign_id,
            s.id,
            t.id,
        )
        await self.db.execute(  # the mention index (memory.mentions): the folded copy's rows go with it
            """
            INSERT INTO entity_mentions (campaign_id, entity_id, entry_id, session_id)
            SELECT campaign_id, $3, entry_id, session_id FROM entity_mentions WHERE campaign_id = $1 AND entity_id = $2
            ON CONFLICT DO NOTHING
            """,
            self.campaign_id,
            s.id,
            t.id,
        )
        await self.db.execute(
            """
            UPDATE session_entries SET corrections = (
                SELECT jsonb_agg(CASE WHEN c ->> 'entity_id' = $2::text
                                      THEN jsonb_set(c, '{entity_id}', to_jsonb($3::bigint)) ELSE c END ORDER BY n)
                FROM jsonb_array_elements(corrections) WITH ORDINALITY x(c, n)
            )
            WHERE campaign_id = $1 AND corrections <> '[]'::jsonb  -- the index holds only corrected lines
              AND corrections @> jsonb_build_array(jsonb_build_object('entity_id', $2::bigint))
            """,
            self.campaign_id,
            s.id,
            t.id,
        )
        # what the recogniser writes for its name is now said of ``into``
        await self.db.execute(
            "UPDATE entity_heard_as SET entity_id = $3 WHERE campaign_id = $1 AND entity_id = $2",
            self.campaign_id,
            s.id,
            t.id,
        )
        # ... and what it writes that is never the name (each phrase once)
        await self.db.execute(
            """
            UPDATE entity_not_heard_as n SET entity_id = $3 WHERE campaign_id = $1 AND entity_id = $2
              AND NOT EXISTS (SELECT 1 FROM entity_not_heard_as m
                              WHERE m.entity_id = $3 AND lower(m.phrase) = lower(n.phrase))
            """,
            self.campaign_id,
            s.id,
            t.id,
        )
        await self.db.execute(
            "DELETE FROM review_posted WHERE campaign_id = $1 AND kind = 'entity' AND item_id = $2",
            self.campaign_id,
            s.id,
        )
        hidden: list[str] = []
        if hide:  # what was said of it still says its name: no alias of ``into``, it stays hidden for good
            await self._keep_masked(None, [s.name])
        elif t.visibility == Visibility.secret:
            # players read a secret entity's aliases, but not, while it stays secret, the name of one merged into it
            # (as if that one were made secret), nor a proposal's aliases, which they never read
            hidden = [n for n in names if n == s.name or s.status != ReviewStatus.accepted]
            await self.db.execute(
                "UPDATE masked_names SET entity_id = $3 WHERE campaign_id = $1 AND entity_id = $2",
                self.campaign_id,
                s.id,
                t.id,
            )
            await self._keep_masked(t.id, hidden)
        await self.db.execute("DELETE FROM entities WHERE campaign_id = $1 AND id = $2", self.campaign_id, s.id)
        if not hide and names:
            await self.db.executemany(
                "INSERT INTO entity_aliases (campaign_id, entity_id, alias) VALUES ($1, $2, $3)",
                [(self.campaign_id, t.id, n) for n in names],
            )
        await self._check_not_heard_as(t.id)  # ``source``'s names may be what ``into`` is never heard as
        # lines may say them as ``into``'s name now: those corrected to ``into`` say ``source``'s phrases, and those
        # corrected to ``source`` (moved to ``into`` above) ``into``'s
        if new_never := [
            *removed_heard_as(s.not_heard_as, t.not_heard_as),
            *removed_heard_as(t.not_heard_as, s.not_heard_as),
        ]:
            from memory.jobs import enqueue_restoration  # the jobs build on this module

            await enqueue_restoration(self.db, self.campaign_id, t.id, new_never, any_stage=True)
        return MergeResult(
            entity=await self.get_entity_by_id(t.id),
            merged=s,
            facts_moved=moved,
            duplicates_dropped=dropped,
            self_loops_dropped=loops,
            facts_made_secret=made_secret,
            aliases_added=[] if hide else names,
            aliases_hidden=hidden,
            names_withheld=names if hide else [],
            description_dropped=s.description
            if not hide and t.description and s.description.strip() != t.description.strip()
            else "",
            attributes_dropped={}
            if hide
            else {k: v for k, v in s.attributes.items() if k in t.attributes and t.attributes[k] != v},
        )

    async def set_entity_status(self, entity_id: int, status: ReviewStatus, *, dm_confirmed: bool) -> None:
        if status == ReviewStatus.rejected:
            # a rejected proposal keeps its row, not its names: they are free for the DM to use again
            for table in ("entity_aliases", "entity_heard_as", "entity_not_heard_as"):
                await self.db.execute(
                    f"DELETE FROM {table} WHERE campaign_id = $1 AND entity_id = $2", self.campaign_id, entity_id
                )
        await self.db.execute(
            """
            UPDATE entities SET status = $3, updated_at = now(),
                provenance = provenance || jsonb_build_object('dm_confirmed', $4::boolean)
            WHERE campaign_id = $1 AND id = $2
            """,
            self.campaign_id,
            entity_id,
            status,
            dm_confirmed,
        )

    async def _set_aliases(self, entity_id: int, aliases: Iterable[str]) -> None:
        await self.db.execute(
            "DELETE FROM entity_aliases WHERE campaign_id = $1 AND entity_id = $2", self.campaign_id, entity_id
        )
        rows = [(self.campaign_id, entity_id, a) for a in aliases]
        if rows:
            try:
                await self.db.executemany(
                    "INSERT INTO entity_aliases (campaign_id, entity_id, alias) VALUES ($1, $2, $3)", rows
                )
            except asyncpg.UniqueViolationError:
                raise AlreadyExistsError("an alias is already used by another entity") from None

    async def _set_not_heard_as(
        self, entity_id: int, phrases: Sequence[str], *, had: Sequence[str] = (), restore: bool = True
    ) -> None:
        """Make ``phrases`` what the recogniser writes that is never the entity's name (``had``: what it was): stage
        1 and 2 no longer correct them to it, and the stored lines where a new one was corrected to it are restored
        by a background job. One that is its name, an alias or a heard-as phrase (spacing and punctuation aside) is
        refused: said, it would be the name and not the name."""
        await self.db.execute(
            "DELETE FROM entity_not_heard_as WHERE campaign_id = $1 AND entity_id = $2", self.campaign_id, entity_id
        )
        if not phrases:
            return
        await self.db.executemany(
            "INSERT INTO entity_not_heard_as (campaign_id, entity_id, phrase) VALUES ($1, $2, $3)",
            [(self.campaign_id, entity_id, p) for p in phrases],
        )
        await self._check_not_heard_as(entity_id)
        if restore and (new := removed_heard_as(phrases, had)):  # those ``had`` lacked
            from memory.jobs import enqueue_restoration  # the jobs build on this module

            await enqueue_restoration(self.db, self.campaign_id, entity_id, new, any_stage=True)

    async def not_heard_as_of(self, entity_ids: Collection[int]) -> dict[int, set[str]]:
        """What the recogniser writes that is never each entity's name, as the matcher reads it (spaces and
        punctuation dropped): for a writer checking, after it locked the lines, corrections it worked out earlier."""
        from memory.correction.text import spaceless

        if not entity_ids:
            return {}
        rows = await self.db.fetch(
            """
            SELECT entity_id, phrase FROM entity_not_heard_as
            WHERE campaign_id = $1 AND entity_id = ANY($2::bigint[])
            """,
            self.campaign_id,
            list(entity_ids),
        )
        never: dict[int, set[str]] = {}
        for r in rows:
            never.setdefault(r["entity_id"], set()).add(spaceless(r["phrase"]))
        return never

    async def _check_not_heard_as(self, entity_id: int) -> None:
        """Refuse the entity's not-heard-as phrases if one is its name, an alias or a heard-as phrase of it, as the
        matcher reads them (spacing and punctuation aside)."""
        row = await self.db.fetchrow(
            f"""
            WITH said AS (
                SELECT name AS used, 'the name of' AS what FROM entities WHERE campaign_id = $1 AND id = $2
                UNION ALL
                SELECT alias, 'an alias of' FROM entity_aliases WHERE campaign_id = $1 AND entity_id = $2
                UNION ALL
                SELECT phrase, 'what the recogniser writes for' FROM entity_heard_as
                WHERE campaign_id = $1 AND entity_id = $2
            )
            SELECT n.phrase, s.used, s.what, e.name FROM entity_not_heard_as n
            JOIN said s ON {_bare("s.used")} = {_bare("n.phrase")}
            JOIN entities e ON e.id = n.entity_id
            WHERE n.campaign_id = $1 AND n.entity_id = $2
            ORDER BY lower(n.phrase) LIMIT 1
            """,
            self.campaign_id,
            entity_id,
        )
        if row is not None:
            read = "" if row["used"].casefold() == row["phrase"].casefold() else f" (read as {row['used']!r})"
            raise InvalidInputError(
                f"not heard as: {row['phrase']!r}{read} is {row['what']} {row['name']!r}: it cannot also be what "
                "is never its name; take it out of one of them"
            )

    async def _set_heard_as(self, entity_id: int, phrases: Sequence[str], *, had: Sequence[str] = ()) -> None:
        """Make ``phrases`` what the recogniser is known to write for the entity's name (``had``: what it was), and
        have the campaign's lines holding a new one corrected again, and those where one it lost was corrected to
        it restored (:func:`memory.jobs.enqueue_restoration`). A phrase that is a name or an alias, or another
        entity's heard-as phrase, is refused: said, it would be two things at once."""
        await self.db.execute(
            "DELETE FROM entity_heard_as WHERE campaign_id = $1 AND entity_id = $2", self.campaign_id, entity_id
        )
        if gone := removed_heard_as(had, phrases):
            from memory.jobs import enqueue_restoration  # the jobs build on this module

            await enqueue_restoration(self.db, self.campaign_id, entity_id, gone)
        if not phrases:
            return
        await self.lock()  # as for names: two writers checking at once would both find a phrase free
        # Spacing and punctuation aside, as the matcher reads them: "iron hold" is another's name, Ironhold, which
        # wins there ("frump kin" of Frumpkin itself is only said again). A scan of the campaign's names (no index
        # holds them so): a heard-as edit is rare.
        row = await self.db.fetchrow(
            f"""
            WITH wanted AS (
                SELECT p AS phrase, lower(p) AS low, {_bare("p")} AS bare FROM unnest($2::text[]) p
            ), used AS (
                SELECT w.phrase, e.id AS entity_id, e.name AS used, 'name' AS what FROM entities e
                JOIN wanted w ON {_bare("e.name")} = w.bare AND (lower(e.name) = w.low OR e.id <> $3)
                WHERE e.campaign_id = $1 AND e.status <> 'rejected'
                UNION ALL
                SELECT w.phrase, a.entity_id, a.alias, 'alias' FROM entity_aliases a
                JOIN wanted w ON {_bare("a.alias")} = w.bare AND (lower(a.alias) = w.low OR a.entity_id <> $3)
                WHERE a.campaign_id = $1
                UNION ALL
                SELECT w.phrase, h.entity_id, h.phrase, 'heard' FROM entity_heard_as h
                JOIN wanted w ON {_bare("h.phrase")} = w.bare
                WHERE h.campaign_id = $1
            )
            SELECT u.phrase, e.name, u.used, u.what FROM used u JOIN entities e ON e.id = u.entity_id
            WHERE e.campaign_id = $1 AND e.status <> 'rejected'
            LIMIT 1
            """,
            self.campaign_id,
            list(phrases),
            entity_id,
        )
        if row is not None:
            what = {"name": "the name of", "alias": "an alias of", "heard": "already what the recogniser writes for"}[
                row["what"]
            ]
            if row["used"].casefold() == row["phrase"].casefold():
                raise AlreadyExistsError(f"heard as: {row['used']!r} is {what} {row['name']!r}")
            raise AlreadyExistsError(
                f"heard as: {row['phrase']!r} is read as {row['used']!r}, spacing and punctuation aside, which is "
                f"{what} {row['name']!r}"
            )
        await self.db.executemany(
            "INSERT INTO entity_heard_as (campaign_id, entity_id, phrase) VALUES ($1, $2, $3)",
            [(self.campaign_id, entity_id, p) for p in phrases],
        )
        old = {h.casefold() for h in had}
        if new := [p for p in phrases if p.casefold() not in old]:
            from memory.jobs import enqueue_recorrection  # the jobs build on this module

            await enqueue_recorrection(self.db, self.campaign_id, new)

    async def _check_names_free(self, names: Sequence[str], *, except_id: int | None = None) -> None:
        """A name or alias may name one entity only: no entity's name may be another's alias. Nor may it be what
        the recogniser is known to write for a name (a heard-as phrase), which is corrected away."""
        if not names:
            return
        await self.lock()  # two writers checking at once would both find a name free
        lowered = [n.casefold() for n in names]
        if len(set(lowered)) != len(lowered):
            raise InvalidInputError("an alias repeats the entity's name or another alias")
        # Two index probes (``entities_name``, ``entity_aliases_lookup``), as in ``find_entity``: a join from every
        # entity to its names scanned the whole campaign per entity written, so loading a file took quadratic time.
        # The campaign's heard-as phrases, a few, are read through, as the matcher compares them: spacing aside.
        row = await self.db.fetchrow(
            f"""
            WITH used AS (
                SELECT id AS entity_id, name AS used, false AS heard FROM entities
                WHERE campaign_id = $1 AND lower(name) = ANY($2::text[]) AND status <> 'rejected'
                UNION ALL
                SELECT entity_id, alias, false FROM entity_aliases
                WHERE campaign_id = $1 AND lower(alias) = ANY($2::text[])
                UNION ALL
                SELECT entity_id, phrase, true FROM entity_heard_as
                WHERE campaign_id = $1
                  AND {_bare("phrase")} = ANY(ARRAY(SELECT {_bare("n")} FROM unnest($2::text[]) n))
            )
            SELECT e.id, e.name, e.status, u.used, u.heard FROM used u JOIN entities e ON e.id = u.entity_id
            WHERE e.campaign_id = $1 AND e.status <> 'rejected'
              AND (e.id IS DISTINCT FROM $3 OR u.heard AND lower(u.used) = ANY($2::text[]))
            LIMIT 1
            """,
            self.campaign_id,
            [n.lower() for n in names],
            except_id,
        )
        if row is not None:
            # A name the bot heard waits for the DM's review: it is in no list yet, so say where it is.
            waiting = (
                f" (waiting for review as e{row['id']}: accept, edit or reject it first)"
                if row["status"] == "pending"
                else ""
            )
            # one still waiting for review is in no list: the message above says what to do instead
            about = {} if waiting else {"subject": "entity", "name": row["name"]}
            if row["heard"]:
                raise AlreadyExistsError(
                    f"{row['used']!r} is what the recogniser writes for {row['name']!r} (heard as): take it out of "
                    f"{row['name']}'s heard-as phrases first",
                    **about,
                )
            if row["used"].casefold() == row["name"].casefold():
                raise AlreadyExistsError(f"an entity named {row['name']!r} already exists{waiting}", **about)
            raise AlreadyExistsError(f"{row['used']!r} is already an alias of {row['name']!r}{waiting}", **about)

    # relationships and facts ------------------------------------------------------------------------------

    async def add_relationship(self, rel: RelationshipIn) -> Relationship:
        return (await self.ensure_relationship(rel))[0]

    async def ensure_relationship(self, rel: RelationshipIn) -> tuple[Relationship, bool]:
        """Record a relationship or attribute fact.

        Status comes from the provenance: DM and campaign-file facts are accepted; others are accepted only at
        or above the threshold and wait for review below it. An identical current fact is returned instead of
        being stored twice. An accepted fact closes the current accepted facts it contradicts."""
        async with transaction(self.db) as conn:
            graph = self.bound_to(conn)
            # two contradicting values accepted at once ("dead" by extraction, "alive" by the DM) would each miss
            # the other, uncommitted, and both stay current
            await graph.lock()
            return await graph._ensure_relationship(rel)

    async def lock(self) -> None:
        """Hold, until the transaction ends, the right to write this campaign's graph after checking it (names
        free, facts contradicted, a review item still pending). Take it first in a transaction that writes
        several things: a row written before it could be one another holder waits for."""
        await self.db.execute("SELECT pg_advisory_xact_lock($1::bigint)", _GRAPH_LOCK + self.campaign_id)

    async def refresh_statistics(self) -> None:
        """Let the planner count the rows this transaction wrote. It knows a campaign's size only from the last
        ANALYZE: to a long load into a new campaign the campaign looks empty, so each name check scanned all of
        it (quadratic: 20k entities had not loaded after 20 minutes). ANALYZE inside the transaction counts its
        own rows."""
        await self.db.execute("ANALYZE entities, entity_aliases, relationships")

    async def _ensure_relationship(self, rel: RelationshipIn) -> tuple[Relationship, bool]:
        status = rel.status or self._status_for(rel.provenance)
        query = f"""{_REL_SELECT}
            WHERE r.campaign_id = $1 AND r.source_id = $2 AND r.type = $3
              AND r.target_id IS NOT DISTINCT FROM $4 AND r.value IS NOT DISTINCT FROM $5
              AND r.valid_to IS NULL AND r.status <> 'rejected'
            ORDER BY r.status = 'accepted' DESC LIMIT 1
            """
        existing = await self.db.fetchrow(query, self.campaign_id, rel.source_id, rel.type, rel.target_id, rel.value)
        if existing is None and rel.type in SYMMETRIC and rel.target_id is not None:
            # a symmetric fact (allied_with) stated from the other end is the same fact; asked apart, so the usual
            # lookup keeps its index
            existing = await self.db.fetchrow(query, self.campaign_id, rel.target_id, rel.type, rel.source_id, None)
        # However sure the extractor is, what was said at the table (a player's "Eldrinax is dead", maybe under the
        # nickname "DM") does not end the DM's word by itself: the DM decides, in review. A waiting copy accepted
        # now would be true from now (below).
        guess = rel.status is None and status == ReviewStatus.accepted and not _vouched(rel.provenance)
        if guess and await self._would_close_vouched(rel, rel.provenance if existing is None else None):
            status = ReviewStatus.pending
        if existing is not None and (existing["status"] == "accepted" or status == ReviewStatus.pending):
            return relationship_from_row(existing), False
        if existing is not None:
            # The same fact waits for review and now arrives accepted (the DM, a campaign file): accept the
            # waiting one rather than keep two current copies.
            # The new source vouches for it; where it was said (session, lines, time) stays, for recall to cite.
            said = relationship_from_row(existing).provenance
            kept = {key: getattr(said, key) for key in ("session_id", "timestamp", "entry_ids") if getattr(said, key)}
            # And it says who may see it: a waiting fact heard at the table is public until then. It is true from
            # now: the DM's word settles it, where a fact accepted since (a move) would otherwise close it at once.
            await self.db.execute(
                """
                UPDATE relationships SET status = 'accepted', provenance = $3, visibility = $4,
                    valid_from = greatest(valid_from, now())
                WHERE campaign_id = $1 AND id = $2
                """,
                self.campaign_id,
                existing["id"],
                {**rel.provenance.model_dump(mode="json"), **kept},
                rel.visibility,
            )
            await self.close_contradicted(existing["id"])
            return await self.get_relationship(existing["id"]), True
        try:
            async with transaction(self.db) as conn:  # a savepoint: a lost race must not abort the caller's work
                # True from when it was said, if heard in a session (an older session imported late must not
                # outdate what is known since: accepted, it is history); else from now. Of two facts an untimed
                # transcript gives, the one said later holds whichever the DM accepts first.
                rel_id = await conn.fetchval(
                    f"""
                INSERT INTO relationships (campaign_id, source_id, type, target_id, value, attributes, visibility,
                                           status, provenance, valid_from)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, {_said_at("$9")})
                RETURNING id
                """,
                    self.campaign_id,
                    rel.source_id,
                    rel.type,
                    rel.target_id,
                    rel.value,
                    rel.attributes,
                    rel.visibility,
                    status,
                    rel.provenance.model_dump(mode="json"),
                )
        except asyncpg.UniqueViolationError:
            return await self._ensure_relationship(rel)  # someone stored the same fact a moment ago: use theirs
        except asyncpg.ForeignKeyViolationError:
            raise NotFoundError("the relationship names an entity that is not in this campaign") from None
        except asyncpg.CheckViolationError:
            raise InvalidInputError("a relationship needs either a target entity or a value, not both") from None
        if status == ReviewStatus.accepted:
            await self.close_contradicted(rel_id)
        return await self.get_relationship(rel_id), True

    def _status_for(self, provenance: Provenance) -> ReviewStatus:
        if _vouched(provenance):
            return ReviewStatus.accepted
        return ReviewStatus.accepted if provenance.confidence >= self.accept_threshold else ReviewStatus.pending

    async def _would_close_vouched(self, rel: RelationshipIn, said: Provenance | None) -> bool:
        """Whether ``rel``, accepted as true from when ``said`` says (None: from now), would close a fact the DM
        vouched for (see :func:`_vouched`), by :meth:`close_contradicted`'s rule."""
        if rel.value is None and rel.type not in SINGLE_VALUED:
            return False
        return bool(
            await self.db.fetchval(
                f"""
                SELECT EXISTS (
                    SELECT 1 FROM relationships WHERE {_CONTRADICTED} AND {_VOUCHED}
                      AND valid_from <= {_said_at("$7")}
                )
                """,
                self.campaign_id,
                None,
                rel.source_id,
                rel.type,
                rel.target_id,
                rel.value,
                said.model_dump(mode="json") if said else None,
                rel.type in SINGLE_VALUED,
            )
        )

    async def close_contradicted(self, rel_id: int) -> list[int]:
        """Settle validity between the accepted fact ``rel_id`` and the accepted, current facts it contradicts,
        by when each became true: older ones are closed; if a newer one exists, ``rel_id`` itself is history
        (accepting an old "alive" must not undo a later "dead"). Returns the ids closed."""
        rel = await self.get_relationship(rel_id)
        if rel.value is None and rel.type not in SINGLE_VALUED:
            return []
        single = rel.type in SINGLE_VALUED
        args = (self.campaign_id, rel.id, rel.source_id, rel.type, rel.target_id, rel.value, rel.valid_from, single)
        newer = await self.db.fetchrow(
            f"SELECT id, valid_from FROM relationships WHERE {_CONTRADICTED} AND valid_from > $7"
            " ORDER BY valid_from LIMIT 1",
            *args,
        )
        if newer is not None:
            await self.db.execute(
                "UPDATE relationships SET valid_to = $3, superseded_by = $4 WHERE campaign_id = $1 AND id = $2",
                self.campaign_id,
                rel.id,
                newer["valid_from"],
                newer["id"],
            )
            return [rel.id]
        # they held until it became true (said in a session imported today: then, not today), as above
        rows = await self.db.fetch(
            f"UPDATE relationships SET valid_to = $7, superseded_by = $2 WHERE {_CONTRADICTED}"
            " AND valid_from <= $7 RETURNING id",
            *args,
        )
        return [r["id"] for r in rows]

    async def closed_by(self, rel_id: int) -> list[Relationship]:
        """The facts ``rel_id`` contradicted and closed (see :meth:`close_contradicted`), oldest first."""
        rows = await self.db.fetch(
            f"{_REL_SELECT} WHERE r.campaign_id = $1 AND r.superseded_by = $2 ORDER BY r.valid_from, r.id",
            self.campaign_id,
            rel_id,
        )
        return [relationship_from_row(r) for r in rows]

    async def get_relationship(self, rel_id: int) -> Relationship:
        row = await self.db.fetchrow(f"{_REL_SELECT} WHERE r.campaign_id = $1 AND r.id = $2", self.campaign_id, rel_id)
        if row is None:
            raise NotFoundError(f"no relationship with id {rel_id} in this campaign")
        return relationship_from_row(row)

    async def link(
        self,
        source: str,
        relation: str,
        target: str | None = None,
        *,
        value: str | None = None,
        secret: bool | None = None,
    ) -> LinkResult:
        """Connect two entities (names or aliases) on the DM's word, or give ``source`` an attribute fact (``value``:
        status dead) as a campaign file does. Either closes the current fact it contradicts: a change in the world.
        ``secret`` None leaves an existing link's visibility alone: a DM who links again without thinking of it must
        not make a secret link public."""
        # the value is asked for by name: a mistyped target must not silently become one
        if target is not None and value is not None:
            raise InvalidInputError("give a target (another entity) or a value (a state, e.g. status dead), not both")
        if target is None and value is None:
            raise InvalidInputError("give a target (another entity) or a value (a state, e.g. status dead)")
        s = await self.get_entity(source)
        t = await self.find_entity(target) if target is not None else None
        if target is not None and t is None:
            raise NotFoundError(
                f"{await self._not_found_message(target)}; a state (status dead) is given as a value",
                subject="entity",
                name=target,
            )
        if t is not None and t.id == s.id:
            raise InvalidInputError(
                f"{target!r} is {s.name!r} itself: a relationship connects two entities (a state of its own is a "
                "value, e.g. status dead)"
            )
        if value is not None:
            value = fact_value(value)
        visibility = Visibility.secret if secret else Visibility.public
        rel, created = await self.ensure_relationship(
            RelationshipIn(
                source_id=s.id,
                type=relation,
                target_id=t.id if t is not None else None,
                value=value,
                visibility=visibility,
                provenance=Provenance(source=Source.dm, dm_confirmed=True),
                status=ReviewStatus.accepted,
            )
        )
        if created:
            return LinkResult(relationship=rel, outcome="linked", closed=await self.closed_by(rel.id))
        if secret is None or rel.visibility == visibility:
            return LinkResult(relationship=rel, outcome="already linked")
        await self.set_relationship(rel.id, ReviewStatus.accepted, dm_confirmed=True, visibility=visibility)
        return LinkResult(
            relationship=await self.get_relationship(rel.id), outcome="made secret" if secret else "made public"
        )

    async def unlink(self, source: str, type: str, target: str) -> UnlinkResult:
        """Remove the relationships ``source —type→ target`` (names or aliases) and the attribute facts whose value
        ``target`` is, as ``describe`` writes both: a value accepted by mistake has no other way out.

        Unlinking says the fact was wrong (an undo), not that it ended: a fact it had closed ("alive", closed by a
        mistaken "dead") is current again, unless another current fact contradicts it. A change in the world is
        recorded by adding the new fact (a link, a campaign file), which closes the old one."""
        async with transaction(self.db) as conn:
            graph = self.bound_to(conn)
            await graph.lock()  # no fact may be accepted between the check and the reopening
            return await graph._unlink(source, type, target)

    async def _unlink(self, source: str, type: str, target: str) -> UnlinkResult:
        s, t = await self.get_entity(source), await self.find_entity(target)
        rel_type = RelationshipIn(source_id=s.id, type=type).type
        rows = await self.db.fetch(
            """
            SELECT id FROM relationships WHERE campaign_id = $1 AND type = $3
              AND ((source_id = $2 AND (target_id = $4 OR (target_id IS NULL AND lower(value) = lower($5))))
                   OR ($6 AND source_id = $4 AND target_id = $2))  -- a symmetric fact, stated from the other end
            ORDER BY id DESC
            """,
            self.campaign_id,
            s.id,
            rel_type,
            t.id if t is not None else None,
            target.strip(),
            rel_type in SYMMETRIC,
        )
        if not rows and t is None:
            raise NotFoundError(
                f"{await self._not_found_message(target)}, and {s.name} has no {rel_type!r} fact of that value"
            )
        if not rows:
            raise NotFoundError(f"{s.name} has no {rel_type!r} relationship to {t.name}")
        removed: list[Relationship] = []
        reopened: list[int] = []
        doomed = {row["id"] for row in rows}  # newest first: "dead" closed by "Dead", both removed, reopen "alive"
        for row in rows:
            removed.append(await self.get_relationship(row["id"]))
            reopened += await self._remove_fact(row["id"], doomed)
        return UnlinkResult(removed=removed, reopened=[await self.get_relationship(i) for i in reopened])

    async def _remove_fact(self, rel_id: int, doomed: set[int]) -> list[int]:
        """Delete a fact as a mistake; returns the ids of the facts it had closed that are current again (none of
        ``doomed``, removed too). One that stays closed (a later fact contradicts it too) is now superseded by
        what superseded the removed one."""
        closed = await self.db.fetch(
            """
            UPDATE relationships o SET superseded_by = r.superseded_by FROM relationships r
            WHERE o.campaign_id = $1 AND o.superseded_by = $2 AND r.campaign_id = $1 AND r.id = $2
            RETURNING o.id, o.valid_from
            """,
            self.campaign_id,
            rel_id,
        )
        await self.db.execute("DELETE FROM relationships WHERE campaign_id = $1 AND id = $2", self.campaign_id, rel_id)
        reopened: list[int] = []
        # newest first: once one is current again, it contradicts the older ones
        for row in sorted(closed, key=lambda r: (r["valid_from"], r["id"]), reverse=True):
            if row["id"] in doomed:
                continue
            # Another accepted current fact of its type and kind either contradicts it or is the same fact, and any
            # current copy of it (pending too) is one copy too many (migration 0004).
            opened = await self.db.fetchval(
                """
                UPDATE relationships o SET valid_to = NULL, superseded_by = NULL
                WHERE o.campaign_id = $1 AND o.id = $2 AND o.status = 'accepted' AND o.valid_to IS NOT NULL
                  AND NOT EXISTS (
                    SELECT 1 FROM relationships c
                    WHERE c.campaign_id = $1 AND c.source_id = o.source_id AND c.type = o.type
                      AND c.valid_to IS NULL AND c.id <> o.id
                      AND ((c.status = 'accepted' AND ((c.target_id IS NULL) = (o.target_id IS NULL)
                                                       OR o.type = ANY($3::text[])))
                           OR (c.status <> 'rejected' AND c.target_id IS NOT DISTINCT FROM o.target_id
                               AND c.value IS NOT DISTINCT FROM o.value))
                  )
                RETURNING o.id
                """,
                self.campaign_id,
                row["id"],
                sorted(SINGLE_VALUED),
            )
            if opened is not None:
                reopened.append(opened)
        return reopened

    async def set_relationship(self, rel_id: int, status: ReviewStatus, *, dm_confirmed: bool, **changes: Any) -> None:
        allowed = {"type", "target_id", "value", "visibility"}
        if set(changes) - allowed:
            raise InvalidInputError(f"cannot change {', '.join(sorted(set(changes) - allowed))} of a fact")
        sets = [f"{key} = ${i}" for i, key in enumerate(changes, start=5)]
        try:
            async with transaction(self.db) as conn:  # a savepoint: the refusal must not abort the caller's work
                await conn.execute(
                    f"""
                    UPDATE relationships SET status = $3,
                        provenance = provenance || jsonb_build_object('dm_confirmed', $4::boolean)
                        {"".join(", " + s for s in sets)}
                    WHERE campaign_id = $1 AND id = $2
                    """,
                    self.campaign_id,
                    rel_id,
                    status,
                    dm_confirmed,
                    *changes.values(),
                )
        except asyncpg.UniqueViolationError:
            raise AlreadyExistsError("that fact is already recorded; reject this one instead") from None

    async def relationships_of(
        self, entity_id: int, *, include_secret: bool = False, include_history: bool = False
    ) -> list[Relationship]:
        """Accepted facts touching an entity; closed ones too with ``include_history``."""
        rows = await self.db.fetch(
            f"""{_rel_select(include_secret)}
            WHERE r.campaign_id = $1 AND (r.source_id = $2 OR r.target_id = $2)
              AND {_visible("r", include_secret)} AND ($3 OR r.valid_to IS NULL)
              AND {_visible("s", include_secret)} AND (t.id IS NULL OR {_visible("t", include_secret)})
            ORDER BY r.valid_to IS NOT NULL, r.type, r.id
            """,
            self.campaign_id,
            entity_id,
            include_history,
        )
        return [relationship_from_row(r) for r in rows]

    async def facts_by_source(self) -> dict[int, list[Relationship]]:
        """Every accepted current fact of the campaign, secret ones too, under its source entity, each entity's in
        :meth:`relationships_of`'s order: one query for a campaign's thousands (an export), not one per entity."""
        rows = await self.db.fetch(
            f"""{_REL_SELECT}
            WHERE r.campaign_id = $1 AND r.status = 'accepted' AND r.valid_to IS NULL
              AND {_visible("s", True)} AND (t.id IS NULL OR {_visible("t", True)})
            ORDER BY r.source_id, r.type, r.id
            """,
            self.campaign_id,
        )
        facts: dict[int, list[Relationship]] = {}
        for row in rows:
            facts.setdefault(row["source_id"], []).append(relationship_from_row(row))
        return facts

    async def accepted_fact_keys(self) -> dict[tuple[int, str, int | None, str | None], Visibility]:
        """The campaign's accepted current facts as (source, type, target, value), each with its visibility: what
        :meth:`ensure_relationship` would find and leave as it is, known in one query."""
        rows = await self.db.fetch(
            """
            SELECT source_id, type, target_id, value, visibility FROM relationships
            WHERE campaign_id = $1 AND status = 'accepted' AND valid_to IS NULL
            """,
            self.campaign_id,
        )
        return {(r["source_id"], r["type"], r["target_id"], r["value"]): Visibility(r["visibility"]) for r in rows}

    async def history(self, entity_id: int, *, include_secret: bool = False) -> list[PastFact]:
        """The accepted facts touching an entity that no longer hold, the last to end first, each with the title of
        the session it was heard in: what was true before (the Ember Key's owners, "status: alive"). Visible as
        :meth:`relationships_of` filters them."""
        past = [
            r
            for r in await self.relationships_of(entity_id, include_secret=include_secret, include_history=True)
            if r.valid_to is not None
        ]
        said_in = {r.provenance.session_id for r in past} - {None}
        rows = await self.db.fetch(
            "SELECT id, title FROM sessions WHERE campaign_id = $1 AND id = ANY($2::bigint[])",
            self.campaign_id,
            sorted(said_in),
        )
        titles: dict[int | None, str] = {r["id"]: r["title"] for r in rows}
        past.sort(key=lambda r: (r.valid_to, r.valid_from, r.id), reverse=True)
        return [PastFact(**r.model_dump(), session_title=titles.get(r.provenance.session_id)) for r in past]

    async def neighbourhood(self, name: str, *, depth: int = 1, include_secret: bool = False) -> Neighbourhood:
        """The visible subgraph around an entity: its current relationships up to ``depth`` hops and the
        entities they reach. Secret entities and facts are left out unless ``include_secret``."""
        entity = await self.get_entity(name)
        if not include_secret and (entity.visibility == Visibility.secret or entity.status != ReviewStatus.accepted):
            raise NotFoundError(await self._not_found_message(name))
        steps = await self.traverse(entity.id, max_depth=depth, include_secret=include_secret)
        ids = [entity.id, *(s.entity_id for s in steps)]
        rel_rows = await self.db.fetch(
            f"""{_rel_select(include_secret)}
            WHERE r.campaign_id = $1 AND r.valid_to IS NULL AND {_visible("r", include_secret)}
              AND r.source_id = ANY($2::bigint[]) AND (r.target_id IS NULL OR r.target_id = ANY($2::bigint[]))
              AND (r.source_id = $3 OR r.target_id = $3 OR $4 > 1)
            ORDER BY r.source_id <> $3, r.type, (
                -- took_part_in: in the order the sessions were played, which an import may set long after
                SELECT started_at FROM sessions
                WHERE campaign_id = $1
                  AND id = coalesce(r.provenance ->> 'session_id', t.provenance ->> 'session_id')::bigint
            ) NULLS FIRST, r.id
            """,
            self.campaign_id,
            ids,
            entity.id,
            depth,
        )
        ent_rows = await self.db.fetch(
            f"{_ENTITY_SELECT} WHERE e.campaign_id = $1 AND e.id = ANY($2::bigint[]) ORDER BY lower(e.name)",
            self.campaign_id,
            ids[1:],
        )
        return Neighbourhood(
            entity=entity,
            relationships=[relationship_from_row(r) for r in rel_rows],
            connected=[entity_from_row(r) for r in ent_rows],
        )

    async def snapshot(self, name: str, *, include_secret: bool = False) -> Neighbourhood:
        """An NPC's identity: the node, its current relationships and the entities they connect to."""
        return await self.neighbourhood(name, depth=1, include_secret=include_secret)

    async def traverse(self, start_id: int, *, max_depth: int = 3, include_secret: bool = False) -> list[PathStep]:
        """Entities reachable from ``start_id`` over current, visible relationships (either direction), each at
        its shortest depth with the relationship that reached it.

        UNION (not UNION ALL) keeps one row per (entity, depth, edge), so the work per hop is bounded by the
        number of edges instead of growing with the number of paths."""
        if not 1 <= max_depth <= 6:
            raise InvalidInputError("traversal depth must be between 1 and 6")
        touching = "(r.source_id = w.entity_id OR r.target_id = w.entity_id)"  # each step's facts, by index
        rows = await self.db.fetch(
            f"""
            WITH RECURSIVE walk(entity_id, depth, via) AS (
                SELECT $2::bigint, 0, NULL::bigint
                UNION
                SELECT other.id, w.depth + 1, r.id
                FROM walk w
                JOIN {"" if include_secret else "LATERAL "}{_facts(include_secret, touching)} r
                  ON r.campaign_id = $1 AND (r.source_id = w.entity_id OR r.target_id = w.entity_id)
                CROSS JOIN LATERAL (
                    SELECT CASE WHEN r.source_id = w.entity_id THEN r.target_id ELSE r.source_id END AS id
                ) other
                JOIN entities o ON o.id = other.id
                WHERE w.depth < $3 AND r.target_id IS NOT NULL AND r.valid_to IS NULL
                  AND {_visible("r", include_secret)} AND {_visible("o", include_secret)}
            )
            SELECT DISTINCT ON (w.entity_id) w.entity_id, en.name, w.depth, w.via
            FROM walk w JOIN entities en ON en.id = w.entity_id AND en.campaign_id = $1
            WHERE w.entity_id <> $2 AND {_visible("en", include_secret)}
            ORDER BY w.entity_id, w.depth
            """,
            self.campaign_id,
            start_id,
            max_depth,
        )
        steps = [PathStep(entity_id=r["entity_id"], name=r["name"], depth=r["depth"], via=r["via"]) for r in rows]
        return sorted(steps, key=lambda s: (s.depth, s.name.casefold()))

    async def last_mention(self, entity: Entity) -> Mention | None:
        """Where an entity's name (or an alias) was last said: session, speaker, time, text. Sessions go by when
        they were played (an import's is when it was imported unless the DM said otherwise), lines by their place
        in the session: a line's time into it may be missing (0), its place never is. A name the log no longer
        holds (a secret entity renamed keeps no alias) is found by the chunks that mention the entity."""
        terms = " OR ".join(f'"{n}"' for n in [entity.name, *entity.aliases] if '"' not in n)
        row = await self.db.fetchrow(
            """
            SELECT se.session_id, s.title, se.speaker, se.start_s, se.text, se.ref
            FROM session_entries se JOIN sessions s ON s.id = se.session_id
            WHERE se.campaign_id = $1 AND se.tsv @@ websearch_to_tsquery('english', searchable($2))
            ORDER BY s.started_at DESC, se.session_id DESC, se.seq DESC LIMIT 1
            """,
            self.campaign_id,
            terms,
        )
        return Mention(**row) if row else await self._last_mentioning_passage(entity.id)

    async def _last_mentioning_passage(self, entity_id: int) -> Mention | None:
        """The lines of the last chunk mentioning the entity that no chunk without it holds: windows overlap, so
        that is the line that named it, or the few around it."""
        rows = await self.db.fetch(
            """
            WITH last AS (
                SELECT c.session_id, c.entry_ids FROM chunks c JOIN sessions s ON s.id = c.session_id
                WHERE c.campaign_id = $1 AND c.entity_ids @> ARRAY[$2::bigint]
                ORDER BY s.started_at DESC, c.session_id DESC,
                         (SELECT max(seq) FROM session_entries WHERE campaign_id = $1 AND id = ANY(c.entry_ids)) DESC
                LIMIT 1
            )
            SELECT se.session_id, s.title, se.speaker, se.start_s, se.text, se.ref
            FROM last JOIN session_entries se ON se.campaign_id = $1 AND se.id = ANY(last.entry_ids)
            JOIN sessions s ON s.id = se.session_id
            WHERE NOT EXISTS (
                SELECT 1 FROM chunks o
                WHERE o.campaign_id = $1 AND o.session_id = last.session_id AND se.id = ANY(o.entry_ids)
                  AND NOT o.entity_ids @> ARRAY[$2::bigint]
            )
            ORDER BY se.seq
            """,
            self.campaign_id,
            entity_id,
        )
        if not rows:
            return None
        speakers = ", ".join(dict.fromkeys(r["speaker"] for r in rows))
        return Mention(**{**rows[0], "speaker": speakers, "text": " / ".join(r["text"] for r in rows)})

    async def set_pinned(self, entity: Entity, pinned: bool) -> bool:
        """Pin an entity's names in the speech recogniser's prompt (or unpin them); False if it was so already."""
        status = await self.db.execute(
            "UPDATE entities SET pinned = $3, updated_at = now() WHERE campaign_id = $1 AND id = $2 AND pinned <> $3",
            self.campaign_id,
            entity.id,
            pinned,
        )
        return status != "UPDATE 0"

    async def pinned_entities(self) -> list[Entity]:
        rows = await self.db.fetch(
            f"{_ENTITY_SELECT} WHERE e.campaign_id = $1 AND e.pinned ORDER BY lower(e.name)", self.campaign_id
        )
        return [entity_from_row(r) for r in rows]

    async def names_version(self) -> tuple[object, ...]:
        """Changes with any accepted entity, alias or pin: the cheap check before :meth:`prompt_entities`."""
        row = await self.db.fetchrow(
            """
            SELECT count(*) FILTER (WHERE status = 'accepted') AS n, max(updated_at) AS changed,
                   (SELECT count(*) FROM entity_aliases WHERE campaign_id = $1) AS aliases
            FROM entities WHERE campaign_id = $1
            """,
            self.campaign_id,
        )
        return (row["n"], row["changed"], row["aliases"])

    async def prompt_entities(self, *, recent_sessions: int) -> list[PromptEntity]:
        """Every accepted entity with what ranks it for the speech recogniser's prompt: pinned, a player, how many
        passages of the last ``recent_sessions`` sessions (by when played) name it, how many facts it is in."""
        rows = await self.db.fetch(
            """
            WITH recent AS (
                SELECT id FROM sessions WHERE campaign_id = $1 ORDER BY started_at DESC, id DESC LIMIT $2
            ), said AS (
                SELECT m.id, count(*) AS n FROM chunks c CROSS JOIN LATERAL unnest(c.entity_ids) AS m(id)
                WHERE c.campaign_id = $1 AND c.session_id IN (SELECT id FROM recent) GROUP BY m.id
            )
            SELECT e.id, e.name, e.type, e.pinned, coalesce(said.n, 0) AS said_lately,
                   ARRAY(SELECT a.alias FROM entity_aliases a WHERE a.entity_id = e.id ORDER BY lower(a.alias))
                       AS aliases,
                   (SELECT count(*) FROM relationships r
                    WHERE r.campaign_id = $1 AND (r.source_id = e.id OR r.target_id = e.id)) AS degree
            FROM entities e LEFT JOIN said ON said.id = e.id
            WHERE e.campaign_id = $1 AND e.status = 'accepted'
            """,
            self.campaign_id,
            recent_sessions,
        )
        return [
            PromptEntity(
                id=r["id"],
                name=r["name"],
                aliases=tuple(r["aliases"]),
                cast=r["type"] == EntityType.player.value,
                pinned=r["pinned"],
                said_lately=r["said_lately"],
                degree=r["degree"],
            )
            for r in rows
        ]
