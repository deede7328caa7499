"""The graph's rules as plain functions over models, with no database: which facts the DM vouched for, which
facts contradict, what players see, and how a merge chooses between two copies of one fact. SQL that must be
set-based says the same in :mod:`memory.graph.sql`; the tests in ``tests/unit/test_graph_rules.py`` hold both to it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import asyncpg

from memory.errors import InvalidInputError
from memory.models import (
    Entity,
    Provenance,
    ReviewStatus,
    Source,
    clean_name,
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


def vouched(provenance: Provenance) -> bool:
    """The DM's word: a fact the DM typed, loaded from a campaign file or accepted in review."""
    return provenance.source in (Source.dm, Source.campaign_file) or provenance.dm_confirmed


def copy_rank(fact: asyncpg.Record) -> tuple[Any, ...]:
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


def keeping_old_name(entity: Entity, new_name: str) -> list[str]:
    """The aliases of a public ``entity`` renamed ``new_name``: its old name joins them, as the session log, the
    players and the speech to correct still say it (a secret one's would tell players who it is). A name the
    rules refuse now (a look-alike letter an earlier version let in) is not kept: renaming is how it is mended."""
    kept = [*(a for a in entity.aliases if a.casefold() != new_name.casefold()), entity.name]
    return [name for name in kept if is_storable_name(name)]


def is_storable_name(name: str) -> bool:
    try:
        clean_name(name)
    except InvalidInputError:
        return False
    return True


def removed_heard_as(had: Sequence[str], now: Sequence[str]) -> list[str]:
    """The phrases of ``had`` that ``now`` no longer holds, as the matcher reads them (spacing and punctuation
    aside: "from-skin" replacing "from skin" takes nothing away)."""
    from memory.correction.text import spaceless

    kept = {spaceless(p) for p in now}
    return [h for h in had if spaceless(h) not in kept]


def new_names(before: Entity, after: Entity) -> list[str]:
    """The names and aliases ``after`` goes by that ``before`` did not: recaps may have heard it by those."""
    known = {n.casefold() for n in (before.name, *before.aliases)}
    return [n for n in (after.name, *after.aliases) if n.casefold() not in known]


def named_anew(before: Entity, after: Entity) -> bool:
    """Whether ``after`` goes by a name or alias ``before`` did not."""
    return bool(new_names(before, after))
