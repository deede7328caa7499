"""The graph package's shape: KnowledgeGraph is its parts, and no part redefines another's method by accident
(a mixin's helper named as another's would silently replace it for every caller)."""

from __future__ import annotations

import inspect
from collections import Counter

from memory.graph import KnowledgeGraph


def test_no_two_parts_of_the_graph_define_the_same_method() -> None:
    parts = [c for c in KnowledgeGraph.__mro__ if c.__module__.startswith("memory.graph.")]
    names = Counter(
        name
        for part in parts
        for name, member in vars(part).items()
        if inspect.isfunction(member) and not name.startswith("__")
    )
    assert [name for name, n in names.items() if n > 1] == []
    assert len(parts) >= 7  # lookup, names, masking, entities, facts, merge, reading (and their base)


PUBLIC = ("find_entity", "update_entity", "upsert_entity", "merge_entities", "ensure_relationship", "link", "unlink")
PUBLIC += ("close_contradicted", "player_mask", "neighbourhood", "traverse", "prompt_entities", "bound_to", "lock")


def test_the_graph_keeps_its_public_methods() -> None:
    for name in PUBLIC:
        assert callable(getattr(KnowledgeGraph, name)), name
