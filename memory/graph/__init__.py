"""L3, the knowledge graph: entities with aliases, typed relationships and attribute facts with provenance.

Facts are never deleted by play: a contradicting fact, once accepted, closes the old one's validity
(``valid_to``) and points to it with ``superseded_by``. Only the DM removes things outright.

The map, each part building on those above it:

- :mod:`~memory.graph.rules` — the rules as plain functions over models (no database): vouched facts,
  contradiction, what players see, merge policy.
- :mod:`~memory.graph.sql` — the SQL the graph owns: row readers and the set-based forms of those rules.
- :mod:`~memory.graph.base`, :mod:`~memory.graph.lookup` — the campaign and its lock; finding an entity or a fact.
- :mod:`~memory.graph.names` — aliases, heard-as and not-heard-as phrases.
- :mod:`~memory.graph.masking` — secret names kept from players (:class:`SecretMask`).
- :mod:`~memory.graph.entities`, :mod:`~memory.graph.facts`, :mod:`~memory.graph.merge` — the writes.
- :mod:`~memory.graph.took_part` — links from entities to the recaps of the sessions that name them.
- :mod:`~memory.graph.reading` — neighbourhoods, history, traversal, last mention, the recogniser's prompt.

:class:`KnowledgeGraph` is all of them on one campaign. Sentences for the DM about what the graph did live in
:mod:`memory.replies`.
"""

from __future__ import annotations

from memory.graph.masking import SecretMask
from memory.graph.merge import Merging
from memory.graph.reading import Reading
from memory.graph.rules import SINGLE_VALUED
from memory.graph.sql import entity_from_row, relationship_from_row

__all__ = ["SINGLE_VALUED", "KnowledgeGraph", "SecretMask", "entity_from_row", "relationship_from_row"]


class KnowledgeGraph(Merging, Reading):
    """One campaign's graph: look-ups, entity and fact writes, merges, masking and reading, on one executor (a
    pool, or a connection inside a transaction: see :meth:`bound_to`)."""
