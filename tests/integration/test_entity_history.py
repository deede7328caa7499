"""An entity's history: the facts that no longer hold, when they held and where they were heard."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable

from memory.db import create_pool
from memory.graph import KnowledgeGraph
from memory.models import EntityIn, EntityType, EntryIn, Provenance, RelationshipIn, Source, Visibility
from memory.recall import named_entities
from memory.store import CampaignMemory, Memory


async def ember_key(campaign: CampaignMemory) -> None:
    """The Ember Key went Thrennick → Kael → Pip, each heard in a session; a guess the DM rejected; a secret state
    the DM closed; Tavian alive in the campaign file, dead since by the DM's word."""
    g = campaign.graph
    key = await g.add_entity(EntityIn(name="Ember Key", type=EntityType.item))
    for name in ("Thrennick", "Kael", "Pip", "Vex"):
        await g.add_entity(EntityIn(name=name, type=EntityType.npc))
    for month, (title, owner) in enumerate([("Night 1", "Thrennick"), ("Night 2", "Kael"), ("Night 3", "Pip")], 3):
        night = await campaign.log.start_session(title, started_at=dt.datetime(2025, month, 1, 20, tzinfo=dt.UTC))
        heard = Provenance(source=Source.stated, confidence=0.9, session_id=night.id, timestamp=60)
        owner_id = (await g.get_entity(owner)).id
        await g.add_relationship(
            RelationshipIn(source_id=key.id, type="owned_by", target_id=owner_id, provenance=heard)
        )
    guess = Provenance(source=Source.inferred, confidence=0.3, session_id=night.id)
    vex = (await g.get_entity("Vex")).id
    wrong = await g.add_relationship(RelationshipIn(source_id=key.id, type="owned_by", target_id=vex, provenance=guess))
    await campaign.review.reject(f"f{wrong.id}")
    await g.link("Ember Key", "status", value="cursed", secret=True)
    await g.link("Ember Key", "status", value="cleansed")
    tavian = await g.add_entity(EntityIn(name="Tavian", type=EntityType.npc))
    said = Provenance(source=Source.campaign_file)
    await g.add_relationship(RelationshipIn(source_id=tavian.id, type="status", value="alive", provenance=said))
    await g.link("Tavian", "status", value="dead")


async def test_history_is_the_closed_facts_newest_first_with_where_they_were_heard(campaign: CampaignMemory) -> None:
    await ember_key(campaign)
    g = campaign.graph
    key = await g.get_entity("Ember Key")
    past = await g.history(key.id, include_secret=True)
    assert [(p.describe(), p.heard()) for p in past] == [
        ("Ember Key —status→ cursed", "said by the DM"),
        ("Ember Key —owned_by→ Kael", "heard in Night 2 at 1:00"),
        ("Ember Key —owned_by→ Thrennick", "heard in Night 1 at 1:00"),
    ]  # where in the session too; not the guess the DM rejected (owned_by Vex), nor what holds now (Pip, cleansed)
    assert past[0].describe_past(" 🔒").startswith("Ember Key is cursed 🔒 (")
    # each held until the next was said, not until the import that filed the next one
    assert [p.describe_past(" 🔒") for p in past[1:]] == [
        "Ember Key is owned by Kael (2025-04-01 → 2025-05-01, heard in Night 2 at 1:00)",
        "Ember Key is owned by Thrennick (2025-03-01 → 2025-04-01, heard in Night 1 at 1:00)",
    ]
    # the players' view: the secret state is left out
    assert [p.describe() for p in await g.history(key.id)] == [
        "Ember Key —owned_by→ Kael",
        "Ember Key —owned_by→ Thrennick",
    ]
    tavian = await g.get_entity("Tavian")
    (alive,) = await g.history(tavian.id)
    assert re.fullmatch(
        r"Tavian is alive \(\d{4}-\d\d-\d\d \d\d:\d\d → \d\d\d\d-\d\d-\d\d \d\d:\d\d, from the campaign file\)",
        alive.describe_past(),
    )  # changed the same day: the times tell when


async def test_a_fact_heard_in_a_transcript_without_times_says_its_line_not_at_0_00(
    campaign: CampaignMemory, memory: Memory
) -> None:
    """Every line of a CRD3 episode (a transcript without times) is at 0:00: "heard in C1E035 at 0:00" said
    nothing. Where the line has no time, its source says where ("turn 2"), as search and review say it."""
    from memory.mcp_tools import CampaignTools

    g = campaign.graph
    await g.add_entity(EntityIn(name="Briarwoods", type=EntityType.faction))
    night = await campaign.log.start_session("C1E035", started_at=dt.datetime(2026, 10, 10, 20, tzinfo=dt.UTC))
    lines = [EntryIn(speaker="Matt", text=f"Line {n}.", ref=f"turn {n}") for n in (1, 2)]
    _, line = await campaign.log.write_many(night.id, lines)
    heard = Provenance(
        source=Source.stated, confidence=0.9, session_id=night.id, timestamp=line.start_s, entry_ids=[line.id]
    )
    faction = await g.get_entity("Briarwoods")
    await g.add_relationship(RelationshipIn(source_id=faction.id, type="status", value="dead", provenance=heard))
    current = await g.relationships_of(faction.id)
    assert [p.since() for p in await g.heard_where(current)] == ["since 2026-10-10, heard in C1E035 (turn 2)"]
    tools = CampaignTools(campaign, await memory.campaigns().get("Test Campaign"), dm=True)
    assert [f.heard for f in (await tools.entity_facts("Briarwoods")).current] == ["heard in C1E035 (turn 2)"]


async def test_history_leaves_out_a_secret_entity_for_players(campaign: CampaignMemory) -> None:
    g = campaign.graph
    key = await g.add_entity(EntityIn(name="Ember Key", type=EntityType.item))
    await g.add_entity(EntityIn(name="Ashen Prioress", type=EntityType.npc, visibility=Visibility.secret))
    await g.add_entity(EntityIn(name="Pip", type=EntityType.npc))
    await g.link("Ember Key", "owned_by", "Ashen Prioress")
    await g.link("Ember Key", "owned_by", "Pip")
    assert [p.describe() for p in await g.history(key.id, include_secret=True)] == [
        "Ember Key —owned_by→ Ashen Prioress"
    ]
    assert await g.history(key.id) == []


async def test_entity_show_history_on_the_command_line(lk: Callable, fresh_dsn: str) -> None:
    assert lk("campaign", "create", "C").returncode == 0
    pool = await create_pool(fresh_dsn)
    try:
        memory = Memory(pool)
        await ember_key(memory.campaign((await memory.campaigns().get("C")).id))
    finally:
        await pool.close()
    shown = lk("entity", "show", "Ember Key", "--history")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    at = lines.index("  history, newest first:")
    # asked for history, the current facts say where they were heard too
    assert lines[at - 2 : at] == [
        "  - Ember Key is owned by Pip (since 2025-05-01, heard in Night 3 at 1:00)",
        f"  - Ember Key is cleansed (since {dt.datetime.now(dt.UTC):%Y-%m-%d}, said by the DM)",
    ]
    assert [line.split(" (")[0] for line in lines[at + 1 :]] == [
        "  - Ember Key is cursed",
        "  - Ember Key is owned by Kael",
        "  - Ember Key is owned by Thrennick",
    ]
    assert lines[at + 1].endswith(", said by the DM)") and " (secret) (" in lines[at + 1]
    assert lines[at + 2].startswith("  - Ember Key is owned by Kael (2025-04-01 → ")
    assert "history" not in (plain_show := lk("entity", "show", "Ember Key").stdout)  # only when asked
    assert "  - Ember Key is owned by Pip\n" in plain_show
    assert lk("entity", "show", "Vex", "--history").stdout == "Vex (npc)\n  history: no fact about it has changed yet\n"

    plain = json.loads(lk("entity", "show", "Ember Key", "--json").stdout)
    full = json.loads(lk("entity", "show", "Ember Key", "--history", "--json").stdout)
    assert "history" not in plain and {k: v for k, v in full.items() if k != "history"} == plain
    assert [
        (p["target_name"] or p["value"], p["session_title"], p["provenance"]["source"]) for p in full["history"]
    ] == [
        ("cursed", None, "dm"),
        ("Kael", "Night 2", "stated"),
        ("Thrennick", "Night 1", "stated"),
    ]
    assert full["history"][1]["valid_from"].startswith("2025-04-01T20:01:00")


async def _players_and_dms(g: KnowledgeGraph, name: str) -> tuple[list[str], list[str], list[str], list[str]]:
    """Current facts and past ones about ``name``, for players then for the DM."""
    entity = await g.get_entity(name)
    out: list[list[str]] = []
    for dm in (False, True):
        out.append([r.describe() for r in (await g.snapshot(name, include_secret=dm)).relationships])
        out.append([p.describe() for p in await g.history(entity.id, include_secret=dm)])
    players_now, players_past, dms_now, dms_past = out
    return players_now, players_past, dms_now, dms_past


async def test_players_do_not_learn_that_a_secret_fact_replaced_a_public_one(campaign: CampaignMemory) -> None:
    """Eldrinax sleeps, then wakes in secret: to players he still sleeps, and nothing of his has ended."""
    g = campaign.graph
    await g.add_entity(EntityIn(name="Eldrinax", type=EntityType.npc))
    for place in ("Ironhold", "the Ashen Lair"):
        await g.add_entity(EntityIn(name=place, type=EntityType.place))
    await g.link("Eldrinax", "status", value="sleeping")
    await g.link("Eldrinax", "status", value="awake", secret=True)
    await g.link("Eldrinax", "located_in", "Ironhold")
    await g.link("Eldrinax", "located_in", "the Ashen Lair", secret=True)

    players_now, players_past, dms_now, dms_past = await _players_and_dms(g, "Eldrinax")
    assert players_now == ["Eldrinax —located_in→ Ironhold", "Eldrinax —status→ sleeping"] and players_past == []
    assert dms_now == ["Eldrinax —located_in→ the Ashen Lair", "Eldrinax —status→ awake"]
    assert dms_past == ["Eldrinax —located_in→ Ironhold", "Eldrinax —status→ sleeping"]
    # every way players read current facts: the other end's card (reached by the same walk) and recall
    ironhold = await g.get_entity("Ironhold")
    assert [r.describe() for r in await g.relationships_of(ironhold.id)] == ["Eldrinax —located_in→ Ironhold"]
    assert [r.describe() for r in (await g.snapshot("Ironhold")).relationships] == ["Eldrinax —located_in→ Ironhold"]
    (named,) = await named_entities(campaign, "Is Eldrinax awake?", dm=False)
    assert named.fact_lines() == ["Eldrinax is located in Ironhold", "Eldrinax is sleeping"]


async def test_a_later_public_fact_ends_for_players_what_a_secret_one_closed(campaign: CampaignMemory) -> None:
    g = campaign.graph
    eldrinax = await g.add_entity(EntityIn(name="Eldrinax", type=EntityType.npc))
    await g.link("Eldrinax", "status", value="sleeping")
    await g.link("Eldrinax", "status", value="awake", secret=True)
    dead = (await g.link("Eldrinax", "status", value="dead")).relationship

    players_now, players_past, dms_now, dms_past = await _players_and_dms(g, "Eldrinax")
    assert players_now == dms_now == ["Eldrinax —status→ dead"] and players_past == ["Eldrinax —status→ sleeping"]
    assert dms_past == ["Eldrinax —status→ awake", "Eldrinax —status→ sleeping"]
    (sleeping,) = await g.history(eldrinax.id)
    # closed by "dead", as players know it: when "awake" was said is not theirs to read either
    assert (sleeping.value, sleeping.superseded_by, sleeping.valid_to) == ("sleeping", dead.id, dead.valid_from)


async def test_players_see_a_fact_end_only_by_one_of_its_kind(campaign: CampaignMemory) -> None:
    """As a new fact closes others: "knows" holds many edges and one value; a single-valued type, one of either."""
    g = campaign.graph
    for name in ("Kael", "Bob", "Mira", "Ironhold", "the Ashen Lair"):
        await g.add_entity(EntityIn(name=name, type=EntityType.npc))
    await g.link("Kael", "knows", "Bob")
    await g.link("Kael", "knows", value="Elvish")
    await g.link("Kael", "knows", value="Draconic", secret=True)
    await g.link("Kael", "knows", "Mira")  # an edge: it does not end the value "Elvish"
    await g.link("Kael", "home", "Ironhold")
    await g.link("Kael", "home", "the Ashen Lair", secret=True)
    await g.link("Kael", "home", value="the road")  # a value of a single-valued type ends an edge of it

    players_now, players_past, _, _ = await _players_and_dms(g, "Kael")
    assert players_now == [
        "Kael —home→ the road",
        "Kael —knows→ Bob",
        "Kael —knows→ Elvish",
        "Kael —knows→ Mira",
    ]
    assert players_past == ["Kael —home→ Ironhold"]
    await g.link("Kael", "knows", value="Dwarvish")
    players_now, players_past, _, _ = await _players_and_dms(g, "Kael")
    assert "Kael —knows→ Elvish" not in players_now and "Kael —knows→ Dwarvish" in players_now
    assert players_past == ["Kael —knows→ Elvish", "Kael —home→ Ironhold"]


async def test_a_public_fact_about_a_secret_entity_is_one_players_cannot_see(campaign: CampaignMemory) -> None:
    """The Ember Key passes, by a public fact, to a secret NPC: players cannot read that fact, so to them Kael
    still has the key; and a state said again after a secret one is one state, not two."""
    g = campaign.graph
    await g.add_entity(EntityIn(name="Ember Key", type=EntityType.item))
    await g.add_entity(EntityIn(name="Kael", type=EntityType.npc))
    await g.add_entity(EntityIn(name="Vaskerrin", type=EntityType.npc, visibility=Visibility.secret))
    await g.link("Ember Key", "owned_by", "Kael")
    await g.link("Ember Key", "owned_by", "Vaskerrin")  # public, but about a secret entity
    players_now, players_past, dms_now, _ = await _players_and_dms(g, "Ember Key")
    assert (players_now, players_past) == (["Ember Key —owned_by→ Kael"], [])
    assert dms_now == ["Ember Key —owned_by→ Vaskerrin"]

    await g.add_entity(EntityIn(name="Eldrinax", type=EntityType.npc))
    await g.link("Eldrinax", "status", value="sleeping")
    await g.link("Eldrinax", "status", value="awake", secret=True)
    await g.link("Eldrinax", "status", value="sleeping")  # said again, in public
    players_now, players_past, _, _ = await _players_and_dms(g, "Eldrinax")
    assert players_now == ["Eldrinax —status→ sleeping"] and players_past == ["Eldrinax —status→ sleeping"]


async def busy_grog(g: KnowledgeGraph) -> None:
    """Grog knows 60 NPCs, then his mood changed 8 times: 61 facts hold, 7 ended."""
    await g.add_entity(EntityIn(name="Grog", type=EntityType.player))
    for n in range(1, 61):
        await g.add_entity(EntityIn(name=f"Friend {n}", type=EntityType.npc))
        await g.link("Grog", "knows", f"Friend {n}")
    for n in range(1, 9):  # the last holds, the seven before it ended
        await g.link("Grog", "status", value=f"mood {n}")


async def test_a_busy_characters_mcp_facts_and_card_are_bounded(campaign: CampaignMemory, memory: Memory) -> None:
    """The MCP facts and card list the newest facts up to a limit, those that hold first, and say how many more
    and how to ask for them; history only when asked."""
    from memory.mcp_tools import CampaignTools

    await busy_grog(campaign.graph)
    for dm in (True, False):  # the players' view is bounded alike
        tools = CampaignTools(campaign, await memory.campaigns().get("Test Campaign"), dm=dm)
        facts = await tools.entity_facts("Grog")
        assert len(facts.current) == 50 and facts.history == []
        assert facts.current[0].text == "Grog —status→ mood 8" and facts.current[1].text == "Grog —knows→ Friend 60"
        assert facts.more == "11 more facts not listed: ask again with a larger limit (at most 500)"
        everything = await tools.entity_facts("Grog", history=True, limit=500)
        assert (len(everything.current), len(everything.history), everything.more) == (61, 7, None)
        assert everything.history[0].text == "Grog —status→ mood 7"  # the last to end first
        some = await tools.entity_facts("Grog", history=True, limit=63)
        assert (len(some.current), len(some.history)) == (61, 2)
        assert some.more is not None and some.more.startswith("5 more facts")
        card = await tools.entity_card("Grog")
        assert (len(card.facts), card.more_facts) == (50, 11) and "Grog —status→ mood 8" in card.facts
        assert len(card.connected) == 49  # those its listed facts reach: one is a state


async def test_a_busy_characters_page_lists_the_newest_facts_and_counts_the_rest(lk: Callable, fresh_dsn: str) -> None:
    """`entity show`: the newest facts up to --limit, then "… and N more: --all, or --limit"; --history alike."""
    assert lk("campaign", "create", "C").returncode == 0
    pool = await create_pool(fresh_dsn)
    try:
        memory = Memory(pool)
        await busy_grog(memory.campaign((await memory.campaigns().get("C")).id).graph)
    finally:
        await pool.close()

    page = lk("entity", "show", "Grog").stdout.splitlines()
    assert len([line for line in page if line.startswith("  - ")]) == 50
    assert "  … and 11 more facts: --all, or --limit" in page
    newest = lk("entity", "show", "Grog", "--limit", "3", "--history").stdout.splitlines()
    at = newest.index("  history, newest first:")
    assert sorted(line.split(" (")[0] for line in newest[1 : at - 1]) == sorted(
        ["  - Grog knows Friend 60", "  - Grog knows Friend 59", "  - Grog is mood 8"]
    )
    assert newest[at - 1] == "  … and 58 more facts: --all, or --limit"
    assert [line.split(" (")[0] for line in newest[at + 1 : at + 4]] == [
        "  - Grog is mood 7",
        "  - Grog is mood 6",
        "  - Grog is mood 5",
    ]
    assert newest[at + 4] == "  … and 4 more past facts: --all, or --limit"
    whole = lk("entity", "show", "Grog", "--all", "--history").stdout
    assert len([line for line in whole.splitlines() if line.startswith("  - ")]) == 61 + 7 and " more " not in whole
