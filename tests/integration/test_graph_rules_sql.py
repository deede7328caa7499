"""The SQL forms of the graph's rules say what the Python ones say (memory/graph/rules.py, tested without a
database in tests/unit/test_graph_rules.py): what the DM vouched for, and which facts an accepted one closes."""

from __future__ import annotations

import datetime as dt
import itertools

from memory.graph.rules import FactKey, can_contradict, contradicts, vouched
from memory.graph.sql import CONTRADICTED, VOUCHED, contradicting
from memory.models import EntityIn, EntityType, Provenance
from memory.store import CampaignMemory


async def test_the_sql_of_vouched_facts_says_what_the_rule_says(campaign: CampaignMemory) -> None:
    a = await campaign.graph.add_entity(EntityIn(name="Vell", type=EntityType.npc))
    provenances = [
        {},  # a key missing reads as the model's default: the DM's
        {"source": "dm"},
        {"source": "campaign_file"},
        {"source": "stated", "confidence": 0.99},
        {"source": "inferred", "dm_confirmed": True},
        {"source": "stated", "dm_confirmed": False},
    ]
    for i, provenance in enumerate(provenances):
        await campaign.db.execute(
            "INSERT INTO relationships (campaign_id, source_id, type, value, status, provenance)"
            " VALUES ($1, $2, $3, 'x', 'accepted', $4::jsonb)",
            campaign.campaign_id,
            a.id,
            f"said_{i}",
            provenance,
        )
    rows = await campaign.db.fetch(
        f"SELECT provenance, {VOUCHED} AS vouched FROM relationships WHERE campaign_id = $1 ORDER BY id",
        campaign.campaign_id,
    )
    assert [r["vouched"] for r in rows] == [vouched(Provenance.model_validate(p)) for p in provenances]
    assert [r["vouched"] for r in rows] == [True, True, True, False, True, False]


async def test_the_sql_of_what_a_fact_closes_says_what_the_rule_says(campaign: CampaignMemory) -> None:
    g = campaign.graph
    vell, keep, road = [
        await g.add_entity(EntityIn(name=n, type=EntityType.npc)) for n in ("Vell", "Caddo Keep", "Pip")
    ]
    stored: list[FactKey] = []
    kinds = [("status", None, "alive"), ("status", None, "dead"), ("home", keep.id, None), ("knows", road.id, None)]
    kinds += [("knows", None, "Elvish"), ("home", None, "the road")]
    # an inverse edge is weighed as its other end states it: "Pip has Vell" is "Vell owned_by Pip"
    kinds += [("owned_by", road.id, None), ("owned_by", keep.id, None), ("has", None, "a scar")]
    kinds += [("has", road.id, None), ("leader_of", keep.id, None), ("ruled_by", keep.id, None)]
    # and in other words: "Vell led_by Pip" is "Vell ruled_by Pip"; a value of the type is its own
    kinds += [("led_by", road.id, None), ("led_by", None, "Pip"), ("killed_by", road.id, None)]
    facts = list(itertools.product(kinds, [("accepted", True), ("accepted", False), ("rejected", True)]))
    # a pending copy of an accepted current fact would be a second current copy (migration 0004): others wait
    facts += [(k, ("pending", True)) for k in [("status", None, "missing"), ("home", road.id, None)]]
    facts += [(("knows", keep.id, None), ("pending", True))]
    stated = [(vell.id, fact) for fact in facts]
    # and from the other end: "Pip has Vell" ("Vell owned_by Pip"), "Caddo Keep leader_of Vell"
    stated += [(road.id, ((t, vell.id, None), ("accepted", True))) for t in ("has", "carried", "owned_by")]
    stated += [(keep.id, ((t, vell.id, None), ("accepted", True))) for t in ("leader_of", "has", "knows", "killed")]
    stated += [(road.id, ((t, vell.id, None), ("accepted", True))) for t in ("led_by", "killed_by", "leader_of")]
    for source, ((type, target, value), (status, current)) in stated:
        rel_id = await campaign.db.fetchval(
            "INSERT INTO relationships (campaign_id, source_id, type, target_id, value, status, valid_to)"
            " VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $7 THEN NULL ELSE now() END) RETURNING id",
            campaign.campaign_id,
            source,
            type,
            target,
            value,
            status,
            current,
        )
        stored.append(
            FactKey(
                id=rel_id, source_id=source, type=type, target_id=target, value=value, status=status, current=current
            )
        )
    for new in stored:
        rows = await campaign.db.fetch(
            # as ``close_contradicted`` asks for the ones older than the fact: all of them here
            f"SELECT id FROM relationships WHERE {CONTRADICTED} AND valid_from <= $7 ORDER BY id",
            campaign.campaign_id,
            new.id,
            *(weighed := contradicting(new.type, new.source_id, new.target_id, new.value))[:4],
            dt.datetime.now(dt.UTC) + dt.timedelta(days=1),
            weighed[4],
        )
        # the graph asks only of a fact that can close another (see ``Facts.close_contradicted``)
        closed_by_sql = [r["id"] for r in rows] if can_contradict(new.type, new.value) else []
        assert closed_by_sql == [old.id for old in stored if contradicts(new, old)], new
