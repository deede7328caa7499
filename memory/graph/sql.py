"""The SQL the graph owns: the SELECTs that read entities and facts into models, and the set-based forms of the
rules in :mod:`memory.graph.rules` (what players see, what a fact contradicts, what the DM vouched for)."""

from __future__ import annotations

from collections.abc import Iterable

import asyncpg

from memory.graph.rules import HOLDING, SINGLE_VALUED, VOUCHING_SOURCES, one_way
from memory.models import (
    HELD_BY_MANY,
    INVERSE,
    SYNONYM,
    Entity,
    Provenance,
    Relationship,
    Source,
)

ENTITY_SELECT = """
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


REL_SELECT_FROM = """
    SELECT r.id, r.campaign_id, r.source_id, s.name AS source_name, r.type, r.target_id, t.name AS target_name,
           r.value, r.attributes, r.visibility, r.status, r.provenance, r.valid_from, r.valid_to,
           r.superseded_by, r.created_at
    FROM {facts} r
    JOIN entities s ON s.id = r.source_id
    LEFT JOIN entities t ON t.id = r.target_id
"""


REL_SELECT = REL_SELECT_FROM.format(facts="relationships")


FACT_COLUMNS = (
    "r.id, r.campaign_id, r.source_id, r.type, r.target_id, r.value, r.attributes, r.visibility, r.status,"
    " r.provenance, r.valid_from"
)


def _stated_as(type: str, turned: bool) -> str:
    """SQL: the types that state an edge of the type ``type`` (an expression, as :func:`~memory.graph.rules.one_way`
    weighs a fact) from the same end in other words (:data:`~memory.models.SYNONYM`), or if ``turned`` from the
    other end (:data:`~memory.models.INVERSE`), an array."""
    kin = INVERSE if turned else SYNONYM
    whens = " ".join(
        f"WHEN '{of}' THEN ARRAY[{_listed(t for t in kin if kin[t] == of)}]" for of in sorted(set(kin.values()))
    )
    return f"CASE {type} {whens} ELSE ARRAY[]::text[] END"


def one_way_of(fact: str) -> tuple[str, str, str, str]:
    """SQL: the stored fact ``fact`` (an alias) as :func:`memory.graph.rules.one_way` weighs it: its entity, type
    and target, and whether that type is single-valued (the types: constants, not input)."""
    inverse = f"({fact}.target_id IS NOT NULL AND {fact}.type IN ({_listed(INVERSE)}))"
    turned = " ".join(f"WHEN '{t}' THEN '{of}'" for t, of in sorted(INVERSE.items()))
    worded = " ".join(f"WHEN '{t}' THEN '{of}'" for t, of in sorted(SYNONYM.items()))
    type = f"""(CASE WHEN {inverse} THEN CASE {fact}.type {turned} END
                  ELSE CASE {fact}.type {worded} ELSE {fact}.type END END)"""
    return (
        f"(CASE WHEN {inverse} THEN {fact}.target_id ELSE {fact}.source_id END)",
        type,
        f"(CASE WHEN {inverse} THEN {fact}.source_id ELSE {fact}.target_id END)",
        f"({type} IN ({_listed(SINGLE_VALUED)}))",
    )


def _listed(types: Iterable[str]) -> str:
    """SQL: a list of ``types`` (constants, not input)."""
    return ", ".join(f"'{t}'" for t in sorted(types))


def weighs_against(fact: str, source: str, type: str, target: str, single: str) -> str:
    """SQL: whether the stored fact ``fact`` (an alias) is one a fact given as :func:`memory.graph.rules.one_way`
    weighs it (SQL: its entity ``source``, ``type``, ``target``, NULL for a value, and whether the type is
    ``single``-valued) would close, but for saying the same: of that entity and type, stated so, in other words
    ("the Circle led_by Greta" for "ruled_by") or from its other end ("Vex has the Bow" beside "the Bow owned_by
    Keyleth"), and of its kind (both edges or both values) unless the type is single-valued. The one rule of what
    closes what: the DM's (:data:`CONTRADICTED`) and the players' (``PLAYERS_FACTS``)."""
    worded = f"{fact}.type = ANY({_stated_as(type, False)})"
    # a kind of item many hold: its holders add up (rules.held_by_many)
    many = f"""({type} IN ({_listed(HOLDING)}) AND EXISTS (
        SELECT 1 FROM entities k WHERE k.id = {source} AND lower(k.attributes ->> '{HELD_BY_MANY}') = 'true'))"""
    return f"""(NOT {many} AND (({fact}.source_id = {source} AND ({fact}.type = {type} OR {worded})
                  AND (({fact}.target_id IS NULL) = ({target} IS NULL) OR {single}))
                 OR ({fact}.target_id = {source} AND {fact}.type = ANY({_stated_as(type, True)})
                     AND ({target} IS NOT NULL OR {single}))))"""


def weighed_target(fact: str, source: str, type: str) -> str:
    """SQL: the target of the stored fact ``fact`` (an alias) that :func:`weighs_against` found of the entity
    ``source`` and the type ``type``, as :func:`memory.graph.rules.one_way` weighs it: its source if it states the
    fact from the other end ("Vex has the Bow", of the Bow)."""
    turned = f"{fact}.target_id = {source} AND {fact}.type = ANY({_stated_as(type, True)})"
    return f"(CASE WHEN {turned} THEN {fact}.source_id ELSE {fact}.target_id END)"


#: Whether players see fact ``{f}``: public and accepted, about a public, accepted entity (its source is the fact's
#: own entity, which players see, or they would not be reading its facts).
SEEN = """({f}.visibility = 'public' AND {f}.status = 'accepted' AND ({f}.target_id IS NULL OR EXISTS (
    SELECT 1 FROM entities t WHERE t.campaign_id = $1 AND t.id = {f}.target_id
      AND t.visibility = 'public' AND t.status = 'accepted')))"""


def _players_facts() -> str:
    """``PLAYERS_FACTS``: built once, from the one rule of what closes what (:func:`weighs_against`)."""
    source, type, target, single = one_way_of("r")
    weighs = weighs_against("c", "r.ow_source", "r.ow_type", "r.ow_target", "r.ow_single")
    return f"""(
    WITH closed AS MATERIALIZED (  -- closed by a fact players do not see, each as the rule weighs it
        SELECT r.*, {source} AS ow_source, {type} AS ow_type, {target} AS ow_target, {single} AS ow_single
        FROM relationships r JOIN relationships h ON h.campaign_id = $1 AND h.id = r.superseded_by
        WHERE r.campaign_id = $1 AND {{touching}} AND NOT {SEEN.format(f="h")}
    ),
    -- the facts that may close them, read once (a subquery per closed fact read a busy character's thousands of
    -- facts again each time), keyed by the end and types the rule compares: one hash join, not a loop
    -- (by either end, each by its index: an OR of the two read every fact of the campaign)
    said AS MATERIALIZED (
        SELECT c.id, c.source_id, c.target_id, c.type, c.value, c.valid_from FROM relationships c
        WHERE c.campaign_id = $1 AND c.source_id IN (SELECT ow_source FROM closed) AND {SEEN.format(f="c")}
        UNION
        SELECT c.id, c.source_id, c.target_id, c.type, c.value, c.valid_from FROM relationships c
        WHERE c.campaign_id = $1 AND c.target_id IN (SELECT ow_source FROM closed) AND {SEEN.format(f="c")}
    ),
    keyed AS MATERIALIZED (
        SELECT said.*, said.source_id AS ow_end, false AS turned FROM said
        UNION ALL
        SELECT said.*, said.target_id, true FROM said WHERE said.target_id IS NOT NULL
    ),
    wanted AS MATERIALIZED (  -- each closed fact with the types the rule compares it to, from either end
        SELECT r.id, r.valid_from, r.ow_source, r.ow_type, r.ow_target, r.ow_single, k.t, k.turned
        FROM closed r, LATERAL (
            SELECT r.ow_type, false UNION SELECT unnest({_stated_as("r.ow_type", False)}), false
            UNION SELECT unnest({_stated_as("r.ow_type", True)}), true
        ) k(t, turned)
    ),
    seen AS MATERIALIZED (
        SELECT DISTINCT ON (r.id) r.id AS closed_id, c.id, c.valid_from
        FROM wanted r JOIN keyed c ON c.ow_end = r.ow_source AND c.turned = r.turned AND c.type = r.t
        WHERE c.id <> r.id AND {weighs} AND (c.valid_from, c.id) > (r.valid_from, r.id)
        ORDER BY r.id, c.valid_from, c.id
    )
    SELECT {FACT_COLUMNS}, r.valid_to, r.superseded_by, r.created_at FROM relationships r
    WHERE r.campaign_id = $1 AND {{touching}} AND NOT EXISTS (
        SELECT 1 FROM relationships h WHERE h.campaign_id = $1 AND h.id = r.superseded_by AND NOT {SEEN.format(f="h")}
    )
    UNION ALL
    SELECT {FACT_COLUMNS}, seen.valid_from, seen.id, r.created_at FROM closed r LEFT JOIN seen ON seen.closed_id = r.id
)"""


#: The campaign's ($1) facts as players know them. A fact they cannot see (secret, or about a secret entity) closes
#: the public one it contradicts, but players must not learn that something replaced it: to them that one holds
#: until a fact they see, newer than it, contradicts it by :meth:`KnowledgeGraph.close_contradicted`'s rule, or
#: says it again (the single-valued types: constants, not input). ``{touching}``: a condition on ``r`` that each
#: branch applies before its joins (see :func:`readable_facts`).
PLAYERS_FACTS = _players_facts()


def readable_facts(include_secret: bool, touching: str = "true") -> str:
    """The relationships a query reads: all of them for the DM, for players as they know them. ``touching`` (SQL on
    ``r``, the facts of one entity, say) restricts the players' ones where it can use an index, before the joins
    that find what they may see: a condition outside them came after reading every fact of the campaign."""
    return "relationships" if include_secret else PLAYERS_FACTS.format(touching=touching)


def rel_select(include_secret: bool) -> str:
    return REL_SELECT_FROM.format(facts=readable_facts(include_secret))


def entity_from_row(row: asyncpg.Record) -> Entity:
    return Entity(**{k: row[k] for k in Entity.model_fields})


def relationship_from_row(row: asyncpg.Record) -> Relationship:
    return Relationship(**{k: row[k] for k in Relationship.model_fields})


#: The accepted, current facts that a fact ($3 —$4→ target $5 or value $6; $8: of a single-valued type) contradicts,
#: but itself ($2). An attribute fact contradicts the other values of its type, a single-valued edge the other edges
#: and values of its type ("home: the road" closes "home Caddo Keep"): "knows: Elvish" does not close "knows Bob".
#: The fact is given as :func:`memory.graph.rules.one_way` weighs it, and an edge of an inverse type ("Mira has the
#: Sunblade") is weighed so too (the types: constants, not input).
#: :func:`memory.graph.rules.contradicts` in Python; callers ask only when :func:`~memory.graph.rules.can_contradict`.
CONTRADICTED = f"""
    campaign_id = $1 AND id IS DISTINCT FROM $2 AND status = 'accepted' AND valid_to IS NULL
    AND {weighs_against("relationships", "$3", "$4", "$5::bigint", "$8")}
    AND ({weighed_target("relationships", "$3", "$4")}, value) IS DISTINCT FROM ($5::bigint, $6::text)
"""


#: Whether a campaign file stated the stored fact (its columns unqualified): written by one, or restated by a load
#: since (``in_file``, see :meth:`KnowledgeGraph.mark_filed`). What a reload compares the file with.
FILED = f"""(provenance ->> 'source' = '{Source.campaign_file.value}'
             OR coalesce((provenance ->> 'in_file')::boolean, false))"""


def _word(provenance: str) -> str:
    """SQL: whose word a fact (``provenance``, a jsonb expression) is, for :func:`stands_over`: a campaign file's,
    one heard in a session, or another (the DM's)."""
    return f"""(CASE WHEN {provenance} ->> 'source' = '{Source.campaign_file.value}' THEN 'file'
                     WHEN {provenance} ->> 'session_id' IS NOT NULL THEN 'heard' ELSE 'other' END)"""


def stands_over(provenance: str, valid_from: str, created_at: str) -> str:
    """SQL on a stored fact (its columns unqualified): whether it stands over a fact it contradicts, of
    ``provenance`` (a jsonb expression), true from ``valid_from``, stored at ``created_at``: it became true later
    (an older session imported late does not outdate what is known since). But a campaign file's fact is dated
    when it was loaded, not when it held in the world: between it and a fact heard in play, the one the memory
    learned later stands (a death heard in a past night imported after the file is news the file did not know; a
    file loaded since, saying something else, is the DM's newer word). The file's fact was learned when it was
    loaded (its ``valid_from``: a waiting copy it accepted was stored earlier), the heard one when it was stored.
    :meth:`KnowledgeGraph.close_contradicted` and :meth:`KnowledgeGraph._would_close_vouched` both ask it."""
    mine, theirs = _word("provenance"), _word(provenance)
    return f"""(CASE WHEN {mine} = 'file' AND {theirs} = 'heard' THEN valid_from > {created_at}
                     WHEN {mine} = 'heard' AND {theirs} = 'file' THEN created_at > {valid_from}
                     ELSE valid_from > {valid_from} END)"""


def contradicting(
    type: str, source_id: int, target_id: int | None, value: str | None
) -> tuple[int, str, int | None, str | None, bool]:
    """:data:`CONTRADICTED`'s $3 to $6 and $8 for a fact, as :func:`~memory.graph.rules.one_way` weighs it."""
    type, source_id, target_id = one_way(type, source_id, target_id)
    return source_id, type, target_id, value, type in SINGLE_VALUED


def said_at(provenance: str) -> str:
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


def played_at(fact: str) -> str:
    """SQL: when the session a fact (alias ``fact``; ``$1`` the campaign) was heard in was played, else the session
    its target stands for (a ``took_part_in`` edge to the session's event): the order sessions were played in, which
    an import may set long after they were written."""
    return f"""(
        SELECT started_at FROM sessions WHERE campaign_id = $1 AND id = coalesce(
            {fact}.provenance ->> 'session_id',
            (SELECT t.provenance ->> 'session_id' FROM entities t WHERE t.id = {fact}.target_id))::bigint
    )"""


def other_end(fact: str, entity: str) -> str:
    """SQL: the entity at the other end of fact ``fact`` (an alias) from ``entity`` (an id expression); NULL for a
    value."""
    return f"CASE WHEN {fact}.source_id = {entity} THEN {fact}.target_id ELSE {fact}.source_id END"


def bare(text: str) -> str:
    """SQL: the text ``text`` (an expression) as the recogniser's matcher tells names apart, by their letters and
    digits only: "ironhold" of "Iron Hold", "Iron-hold" and "ironhold" (casefolded and accents dropped as in
    :func:`memory.correction.text.name_norm`, but for lower() leaving a few letters such as ß)."""
    return f"regexp_replace(normalize(lower({text}), NFKD), '[^[:alnum:]]+', '', 'g')"


#: :func:`memory.graph.rules.vouched`, in SQL, from the same sources and the model's default one.
VOUCHED = f"""(coalesce(provenance ->> 'source', '{Provenance().source.value}')
                   IN ({", ".join(f"'{s.value}'" for s in VOUCHING_SOURCES)})
               OR coalesce((provenance ->> 'dm_confirmed')::boolean, false))"""


def visible(alias: str, include_secret: bool) -> str:
    """SQL condition for what a player may see: accepted, currently valid, public unless the DM asks."""
    cond = f"{alias}.status = 'accepted'"
    if not include_secret:
        cond += f" AND {alias}.visibility = 'public'"
    return cond
