"""`lorekeeper mcp` through the SDK's own client over stdio, against the embedded PostgreSQL: every tool, the
players' view hiding a secret entity and a secret fact, proposals landing in the review queue, and bad arguments
answered as MCP tool errors with a clear message, never a traceback."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from memory import jobs
from memory.errors import AlreadyExistsError
from memory.mcp_tools import CampaignTools
from memory.models import EntityIn, EntityType, EntryIn, Provenance, RelationshipIn, ReviewKind, Source, Visibility
from memory.store import CampaignMemory, Memory
from tests.integration.conftest import ROOT
from tests.integration.mcp_world import SECRET_FACT_VALUE, SECRET_NPC, build_world


@asynccontextmanager
async def mcp_client(dsn: str, data_dir: Path, *args: str) -> AsyncIterator[ClientSession]:
    env = {k: v for k, v in os.environ.items() if k != "LOREKEEPER_CONFIG"}
    env |= {"DATABASE_URL": dsn, "LOREKEEPER_DATA_DIR": str(data_dir), "PYTHONPATH": str(ROOT)}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from bot.cli import main; main()", "mcp", "-c", "Test Campaign", *args],
        env=env,
        cwd=str(data_dir),
    )
    with open(data_dir / "server.log", "w") as errlog:  # noqa: ASYNC230  # once, before the server starts
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def call(session: ClientSession, tool: str, /, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def error_of(session: ClientSession, tool: str, /, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    assert result.is_error, result
    text = " ".join(c.text for c in result.content if c.type == "text")
    assert "Traceback" not in text
    return text


async def test_dm_view_every_tool(campaign: CampaignMemory, fresh_dsn: str, tmp_path: Path) -> None:
    await build_world(campaign)
    async with mcp_client(fresh_dsn, tmp_path, "--as", "dm") as s:
        listed = {t.name: t for t in (await s.list_tools()).tools}
        assert set(listed) == {
            "search_sessions",
            "find_entities",
            "entity_card",
            "entity_facts",
            "entity_mentions",
            "session_recap",
            "recent_log",
            "hot_context",
        }  # read-only: no proposal tools
        assert all(t.description and t.input_schema["type"] == "object" for t in listed.values())
        # what an LLM reads to call them: no source indentation, each kind of entity once
        assert not any("\n    " in (t.description or "") for t in listed.values())
        kinds = listed["find_entities"].input_schema["$defs"]["EntityType"]["enum"]
        assert sorted(kinds) == sorted(set(kinds)) and "location" in kinds

        found = await call(s, "search_sessions", query="Ember Key", limit=3)
        # what the client's model reads: compact, and only what is secret marked so
        read = (await s.call_tool("find_entities", {"type": "npc"})).content[0].text  # type: ignore[union-attr]
        assert "\n" not in read and '": ' not in read
        assert '"secret":true' in read and '"secret":false' not in read
        assert found["passages"] and "Night 1" in found["passages"][0]["where"]
        assert "Ember Key" in found["passages"][0]["text"] and found["passages"][0]["refs"] is not None
        assert found["entities"][0]["name"] == "Ember Key"
        # the fact's type as stored, for a tool; its words beside it, as /recall reads it
        owned = found["entities"][0]["facts"][0]
        assert (owned["text"], owned["words"]) == ("Ember Key —owned_by→ Pip", "Ember Key is owned by Pip")

        names = [e["name"] for e in (await call(s, "find_entities", query="smith"))["entities"]]
        assert names == ["Grom"]  # by alias
        npcs = {e["name"] for e in (await call(s, "find_entities", type="npc"))["entities"]}
        assert npcs == {"Grom", SECRET_NPC}

        card = await call(s, "entity_card", name="Grom")
        assert card["description"].startswith("A dwarven smith")
        assert any(SECRET_FACT_VALUE in f and "[DM only]" in f for f in card["facts"])
        assert {c["name"] for c in card["connected"]} >= {"Ironhold", SECRET_NPC}

        facts = await call(s, "entity_facts", name="Ember Key", history=True)
        assert [f["text"] for f in facts["current"]] == ["Ember Key —owned_by→ Pip"]
        assert [p["text"] for p in facts["history"]] == ["Ember Key —owned_by→ Grom"]

        mentions = (await call(s, "entity_mentions", name="Grom"))["mentions"]
        assert mentions[0]["where"].startswith("Night 2") and "whispers" in mentions[0]["text"]
        assert any(m["where"].startswith("Night 1") for m in mentions)

        recap = await call(s, "session_recap", session="Night 1")
        assert recap["ended"] and SECRET_NPC in recap["summary"]
        # a question for a session's story is answered by its recap, as `lorekeeper recall` answers it
        asked = await call(s, "search_sessions", query="what happened last session?")
        assert asked["recap"] == recap and asked["passages"] == []
        assert found["recap"] is None

        log = await call(s, "recent_log", minutes=2)
        assert log["session"] == "Night 2" and log["live"]
        assert [line["start_s"] for line in log["lines"]] == [1200, 1230, 1260]

        hot = await call(s, "hot_context", entity="Grom", minutes=5, budget_tokens=300)
        assert hot["text"].startswith("# Grom (npc)") and len(hot["text"]) <= 1200
        assert "## In the scene\n- Ironhold (location)" in hot["text"] and SECRET_NPC in hot["text"]
        assert hot["session"] == "Night 2" and hot["live"] and not hot["quiet"]

        resources = {str(r.uri) for r in (await s.list_resources()).resources}
        assert "lorekeeper://campaign" in resources
        overview = (await s.read_resource("lorekeeper://campaign")).contents[0].text  # type: ignore[union-attr]
        assert "Test Campaign" in overview and "lorekeeper://sessions/" in overview
        old = next(x for x in await campaign.log.sessions() if x.title == "Night 1")
        recap_text = (await s.read_resource(f"lorekeeper://sessions/{old.id}/recap")).contents[0].text  # type: ignore[union-attr]
        assert recap_text.startswith("# Night 1") and "Ember Key" in recap_text


async def test_hot_context_answer_fits_its_budget(campaign: CampaignMemory, fresh_dsn: str, tmp_path: Path) -> None:
    """The answer held the whole context as data beside the block (a whole untimed session's 200 lines twice, ~10,000
    tokens at any budget): an MCP client puts all of it in the model's context. Now the block and a few fields."""
    ids = await build_world(campaign)
    said = "Grom hammers at the anvil while the travellers argue about the price of the road to the north."
    await campaign.log.write_many(
        ids["live"], [EntryIn(speaker="Pip", text=f"{said} ({n})", start_s=1261 + n) for n in range(200)]
    )
    async with mcp_client(fresh_dsn, tmp_path, "--as", "dm") as s:
        sizes = {}
        for budget in (100, 400, 2000):
            result = await s.call_tool("hot_context", {"entity": "Grom", "budget_tokens": budget})
            assert not result.is_error and result.structured_content is not None
            answer = " ".join(c.text for c in result.content if c.type == "text")
            assert len(result.structured_content["text"]) <= budget * 4
            assert len(answer) <= budget * 4 * 1.1 + 300, (budget, len(answer))  # JSON escapes and a few fields
            assert answer.count("Grom hammers") == result.structured_content["text"].count("Grom hammers")  # once
            sizes[budget] = len(answer)
    assert sizes[100] < sizes[400] < sizes[2000]


async def test_player_view_hides_secrets_and_proposals_wait_for_review(
    campaign: CampaignMemory, fresh_dsn: str, tmp_path: Path
) -> None:
    await build_world(campaign)
    async with mcp_client(fresh_dsn, tmp_path, "--as", "player", "--allow-proposals") as s:
        # an LLM fills in what the schema describes: every argument of every tool says what it is
        tools = (await s.list_tools()).tools
        arguments = [(t.name, a, f) for t in tools for a, f in t.input_schema["properties"].items()]
        assert len({t for t, _, _ in arguments}) == 10
        assert [f"{t}.{a}" for t, a, f in arguments if not f.get("description")] == []
        relation = next(f for t, a, f in arguments if (t, a) == ("propose_fact", "relation"))
        assert "located_in" in relation["description"] and "status ('dead'" in relation["description"]
        everything = []
        npcs = await call(s, "find_entities", type="npc")
        assert {e["name"] for e in npcs["entities"]} == {"Grom"}
        card = await call(s, "entity_card", name="Grom")
        everything += [npcs, card]
        assert not any(SECRET_FACT_VALUE in f or "secretly_serves" in f for f in card["facts"])
        missing = await error_of(s, "entity_card", name=SECRET_NPC)
        assert "no entity named" in missing and missing.count("Vaskerrin") == 1
        assert "no entity named" in await error_of(s, "entity_card", name="the Pale Magister")
        everything.append(await call(s, "entity_facts", name="Grom"))
        everything.append(await call(s, "search_sessions", query="who watches in the shadows"))
        everything.append(await call(s, "session_recap", session="Night 1"))
        everything.append(await call(s, "recent_log", minutes=5))
        everything.append(await call(s, "hot_context", entity="Grom"))
        everything.append(await call(s, "entity_mentions", name="Grom"))
        dumped = json.dumps(everything, ensure_ascii=False)
        assert "Vaskerrin" not in dumped and SECRET_FACT_VALUE not in dumped
        assert "[secret]" in dumped  # what was said stays, with the name masked
        overview = (await s.read_resource("lorekeeper://campaign")).contents[0].text  # type: ignore[union-attr]
        assert "1 npc" in overview and "Vaskerrin" not in overview

        proposed = await call(s, "propose_entity", name="Sister Ash", type="npc", description="A wandering nun.")
        assert proposed == {"ref": "", "status": "pending", "said": "proposed new npc 'Sister Ash'"}
        fact = await call(s, "propose_fact", entity="Grom", relation="owes_money_to", target="Pip")
        assert fact == {"ref": "", "status": "pending", "said": "proposed Grom —owes_money_to→ Pip"}
        # a guess at a secret fact is answered as a new fact is: "already recorded" would confirm it
        guess = await call(s, "propose_fact", entity="Grom", relation="curse", value=SECRET_FACT_VALUE)
        assert guess == {"ref": "", "status": "pending", "said": f"proposed Grom —curse→ {SECRET_FACT_VALUE}"}
        # a name a public entity holds is refused without saying whose; a secret one's is answered as an unknown
        # name is (a refusal would confirm the guess), and filed for the DM with a note (see the test below)
        taken = await error_of(s, "propose_entity", name="the smith", type="npc")
        assert "cannot be proposed" in taken and "Grom" not in taken
        for guess in (SECRET_NPC, "the Pale Magister"):
            said = await call(s, "propose_entity", name=guess, type="npc")
            assert said == {"ref": "", "status": "pending", "said": f"proposed new npc {guess!r}"}

    pending = await campaign.review.pending()
    ash = await campaign.graph.find_entity("Sister Ash")
    assert ash is not None and ash.status == "pending"
    assert sorted((i.kind, i.ref[0]) for i in pending) == [(ReviewKind.entity, "e")] * 3 + [(ReviewKind.fact, "f")] * 2
    assert f"e{ash.id}" in {i.ref for i in pending}  # the owes_money_to proposal, and the guess (see the test below)
    grom = await campaign.graph.get_entity("Grom")
    canon = await campaign.graph.relationships_of(grom.id, include_secret=True)  # accepted facts only
    assert "owes_money_to" not in {r.type for r in canon}


async def test_a_players_proposal_repeating_a_secret_fact_is_answered_as_any_and_filed_for_the_dm(
    campaign: CampaignMemory, memory: Memory
) -> None:
    """A players' proposal of a fact the DM holds as secret was dropped as a duplicate: the DM never learned the
    table guessed it. The player is answered as for any new proposal; the DM gets it in review, secret, saying which
    fact it repeats; the secret fact itself is unchanged."""
    ids = await build_world(campaign)
    [curse] = [r for r in await campaign.graph.relationships_of(ids["grom"], include_secret=True) if r.type == "curse"]
    players = CampaignTools(campaign, await memory.campaigns().get("Test Campaign"), dm=False)
    guess = await players.propose_fact("Grom", "curse", value=SECRET_FACT_VALUE)
    other = await players.propose_fact("Grom", "owes_money_to", target="Pip")
    assert guess.model_dump() == {"ref": "", "status": "pending", "said": f"proposed Grom —curse→ {SECRET_FACT_VALUE}"}
    assert other.model_dump() == {"ref": "", "status": "pending", "said": "proposed Grom —owes_money_to→ Pip"}
    # proposed again, each is answered as a proposal waiting for review is
    again = [
        await players.propose_fact("Grom", r, **kw)
        for r, kw in [("curse", {"value": SECRET_FACT_VALUE}), ("owes_money_to", {"target": "Pip"})]
    ]
    assert [a.model_dump() for a in again] == [
        {"ref": "", "status": "pending", "said": "already recorded or waiting for review"}
    ] * 2

    [filed] = [i.fact for i in await campaign.review.pending() if i.fact and i.fact.type == "curse_proposed"]
    assert (filed.value, filed.visibility, filed.status) == (SECRET_FACT_VALUE, Visibility.secret, "pending")
    assert filed.provenance.review_reason == (
        f"a player's proposal: it repeats the secret fact f{curse.id} (Grom —curse→ {SECRET_FACT_VALUE}), so it is "
        "filed as curse_proposed; make that fact public if the players know it now"
    )
    assert len(await campaign.review.pending()) == 2  # the guess once, and the other proposal
    assert (await campaign.graph.get_relationship(curse.id)).model_dump() == curse.model_dump()
    # players read none of it: not on the card, not as a fact
    card = json.dumps((await players.entity_facts("Grom")).model_dump(mode="json"))
    assert SECRET_FACT_VALUE not in card and "curse" not in card
    # the DM proposing it is told it is recorded, as before
    dm = CampaignTools(campaign, await memory.campaigns().get("Test Campaign"), dm=True)
    known = await dm.propose_fact("Grom", "curse", value=SECRET_FACT_VALUE)
    assert (known.ref, known.status, known.said) == (f"f{curse.id}", "accepted", "already recorded")


async def test_a_players_proposal_naming_a_secret_entity_is_answered_as_any_and_filed_for_the_dm(
    campaign: CampaignMemory, memory: Memory
) -> None:
    """A proposal whose aliases held a secret entity's name was dropped unseen, as was one named by it: the player
    is answered as for any new proposal, and the DM gets it in review without the secret names, saying whose."""
    await build_world(campaign)
    tools = CampaignTools(campaign, await memory.campaigns().get("Test Campaign"), dm=False)
    answers = [
        await tools.propose_entity("Old Man", EntityType.npc, "Feeds the crows.", aliases=["the Pale Magister"]),
        await tools.propose_entity(SECRET_NPC, EntityType.npc, "The tower's mage."),
        await tools.propose_entity("Sister Ash", EntityType.npc),
    ]
    assert [a.model_dump() for a in answers] == [
        {"ref": "", "status": "pending", "said": f"proposed new npc {n!r}"}
        for n in ("Old Man", SECRET_NPC, "Sister Ash")
    ]
    filed = {i.entity.name: i.entity for i in await campaign.review.pending() if i.entity}
    assert set(filed) == {"Old Man", f"{SECRET_NPC} (proposed)", "Sister Ash"}
    assert filed["Old Man"].aliases == [] and filed["Old Man"].description == "Feeds the crows."
    assert filed["Old Man"].provenance.review_reason == (
        f"a player's proposal: 'the Pale Magister' names the secret npc {SECRET_NPC!r}, so it is filed without it; "
        "Same as… if it is that one"
    )
    assert f"{SECRET_NPC!r} names the secret npc" in str(filed[f"{SECRET_NPC} (proposed)"].provenance.review_reason)
    assert filed["Sister Ash"].provenance.review_reason is None
    # proposed again, as any proposal waiting for review, and a name a public entity holds: "taken", nothing more
    for again in (SECRET_NPC, "Sister Ash"):
        with pytest.raises(AlreadyExistsError, match="taken or waiting for review"):
            await tools.propose_entity(again, EntityType.npc)
    with pytest.raises(AlreadyExistsError, match="taken or waiting for review") as taken:
        await tools.propose_entity("Crow Keeper", EntityType.npc, aliases=["the smith", "the Pale Magister"])
    assert "Grom" not in str(taken.value) and "Crow Keeper" not in {e.name for e in filed.values()}
    assert len(await campaign.review.pending()) == 3


async def test_a_players_proposed_fact_is_echoed_as_typed_a_secret_name_as_a_made_up_one(
    campaign: CampaignMemory, fresh_dsn: str, tmp_path: Path
) -> None:
    """The answer masked the player's own words: "afraid of [secret]" for a secret name, "afraid of Zorblax" for a
    made-up one — a yes to the guess. The names of the entities it links are still read as players read them."""
    await build_world(campaign)
    await campaign.graph.add_entity(EntityIn(name="Clarota", type=EntityType.npc, visibility=Visibility.secret))
    async with mcp_client(fresh_dsn, tmp_path, "--as", "player", "--allow-proposals") as s:
        for guess in ("Clarota", "Zorblax", "Vaskerrin", "Vaskerrin Holt"):
            said = await call(s, "propose_fact", entity="Grom", relation="mood", value=f"afraid of {guess}")
            assert said == {"ref": "", "status": "pending", "said": f"proposed Grom —mood→ afraid of {guess}"}


async def test_a_players_proposal_of_a_name_they_read_masked_is_answered_as_a_free_name(
    campaign: CampaignMemory, fresh_dsn: str, tmp_path: Path
) -> None:
    """Players read the public Clarota's Helmet as "[secret]'s Helmet": proposing "Clarota's Helmet" was refused as
    taken, "Zorblax's Helmet" accepted — a yes to the guess at the secret word. Both are filed for the DM now, the
    first under its name marked "(proposed)", its review item saying whose name it is."""
    await build_world(campaign)
    await campaign.graph.add_entity(EntityIn(name="Clarota", type=EntityType.npc, visibility=Visibility.secret))
    helmet = await campaign.graph.add_entity(EntityIn(name="Clarota's Helmet", type=EntityType.item))
    async with mcp_client(fresh_dsn, tmp_path, "--as", "player", "--allow-proposals") as s:
        for guess in ("Clarota's Helmet", "Zorblax's Helmet"):
            said = await call(s, "propose_entity", name=guess, type="item")
            assert said == {"ref": "", "status": "pending", "said": f"proposed new item {guess!r}"}
            again = await error_of(s, "propose_entity", name=guess, type="item")
            assert "taken or waiting for review" in again and "[secret]" not in again
    filed = {i.entity.name: i.entity for i in await campaign.review.pending() if i.entity}
    assert set(filed) == {"Clarota's Helmet (proposed)", "Zorblax's Helmet"}
    assert filed["Clarota's Helmet (proposed)"].provenance.review_reason == (
        'a player\'s proposal: "Clarota\'s Helmet" names the item "Clarota\'s Helmet", which players read as '
        '"[secret]\'s Helmet", so it is filed without it; Same as… if it is that one'
    )
    assert (await campaign.graph.get_entity_by_id(helmet.id)).model_dump() == helmet.model_dump()


async def test_a_proposed_fact_is_filed_as_the_graph_holds_it_and_says_what_it_contradicts(
    campaign: CampaignMemory, memory: Memory
) -> None:
    """An LLM wrote "is dead" beside an accepted "status dead", kept "located_in: Ironhold" as text beside the
    entity Ironhold, and filed "alive" over "dead" without a word: a state said as "is" is status, a value naming
    an entity links it, and the answer names the accepted fact a proposal would replace."""
    await build_world(campaign)
    tools = CampaignTools(campaign, await memory.campaigns().get("Test Campaign"), dm=True)
    same = await tools.propose_fact("Grom", "is", value="alive")
    assert (same.status, same.said) == ("accepted", "already recorded")
    placed = await tools.propose_fact("Grom", "located_in", value="ironhold")
    ironhold = await campaign.graph.get_entity("Ironhold")
    [filed] = [i.fact for i in await campaign.review.pending() if i.fact]
    assert (filed.type, filed.target_id, filed.value) == ("located_in", ironhold.id, None)
    assert placed.said == "proposed Grom —located_in→ Ironhold"
    assert (await tools.propose_fact("Grom", "mood", value="Ironhold")).said == "proposed Grom —mood→ Ironhold"
    dead = await tools.propose_fact("Grom", "became", value="dead")
    assert dead.said == (
        "proposed Grom —status→ dead; it contradicts the accepted Grom —status→ alive, which it replaces if the DM "
        "accepts it"
    )
    # an edge that adds to the others contradicts nothing; players learn of no secret fact it would replace
    assert (await tools.propose_fact("Grom", "knows", target="Pip")).said == "proposed Grom —knows→ Pip"
    players = CampaignTools(campaign, await memory.campaigns().get("Test Campaign"), dm=False)
    said = (await players.propose_fact("Grom", "curse", value="none")).said
    assert said == "proposed Grom —curse→ none"


async def test_facts_and_recap_lines_say_where_they_were_said(campaign: CampaignMemory, memory: Memory) -> None:
    """ "Why do we say Pip has the key?" had no answer: a current fact carried no line, its time fake microseconds,
    and a recap's quoted lines no turn or time. A fact drawn from a line cites it; one the DM gave says so."""
    ids = await build_world(campaign)
    night1 = await campaign.log.session_entries(ids["old"])
    pip, grom = await campaign.graph.get_entity("Pip"), await campaign.graph.get_entity("Grom")
    heard = Provenance(source=Source.stated, confidence=0.9, session_id=ids["old"], entry_ids=[night1[1].id])
    await campaign.graph.add_relationship(  # not "carries the key": that is the key's owned_by, the DM's word here
        RelationshipIn(source_id=pip.id, type="trusts", target_id=grom.id, provenance=heard, status="accepted")
    )
    summary = "DM: Grom hands the Ember Key to Pip.\nPip: I pocket the key and…\nA written line.\nInvolved: Grom, Pip"
    await campaign.log.set_summary(ids["old"], summary)
    tools = CampaignTools(campaign, await memory.campaigns().get("Test Campaign"), dm=False)
    facts = {f.text: f for f in (await tools.entity_facts("Pip")).current}
    trusts = facts["Pip —trusts→ Grom"]
    played = next(s for s in await campaign.log.sessions() if s.id == ids["old"]).started_at  # a week ago
    assert (trusts.heard, trusts.where, trusts.speaker) == (
        "heard in Night 1",
        f"Night 1, {played:%Y-%m-%d} at 0:20",
        "Pip",
    )
    owned = facts["Ember Key —owned_by→ Pip"]
    assert (owned.heard, owned.where, owned.speaker) == ("said by the DM", None, None)
    assert all(f.since.microsecond == 0 for f in facts.values())
    recap = await tools.session_recap("Night 1")
    assert recap.summary == (
        "[0:10] DM: Grom hands the Ember Key to Pip.\n[0:20] Pip: I pocket the key and…\nA written line.\n"
        "Involved: Grom, Pip"
    )


async def test_a_recap_names_a_secret_npc_voiced_by_its_alias_as_the_dm_said_it(
    campaign: CampaignMemory, memory: Memory
) -> None:
    """ "(as the Pale Magister) I serve…" was recapped "DM (as Vaskerrin Holt): I serve…", which players read
    "DM (as [secret])": the secret behind the alias they know. The marker's words are kept for a secret one."""
    await build_world(campaign)
    session = await campaign.log.start_session("Night 3")
    lines = [
        "The road to the Underdark winds down into the dark below Ironhold.",
        "(as the Pale Magister) I serve the Elder Brain, and I will lead you to the gates of Ironhold.",
        "Grom shakes his head and grips the Ember Key tight in his fist.",
        "Deep below Ironhold the tunnels open onto a lake of black water.",
        "(as Vaskerrin Holt) You will kneel before the Elder Brain in Ironhold, all of you.",
    ]
    await campaign.log.write_many(
        session.id, [EntryIn(speaker="DM", text=t, start_s=float(60 * n)) for n, t in enumerate(lines)]
    )
    await campaign.log.end_session(session.id)
    ctx = jobs.JobContext(memory=memory, embedder=None, embedding_model="x")  # type: ignore[arg-type]
    await jobs.summarize_session(ctx, campaign.campaign_id, session.id)
    players = CampaignTools(campaign, await memory.campaigns().get("Test Campaign"), dm=False)
    recap = (await players.session_recap("Night 3")).summary or ""
    assert "DM (as the Pale Magister): I serve the Elder Brain" in recap, recap
    assert "DM (as [secret]): You will kneel" in recap and "Vaskerrin" not in recap, recap


async def test_a_long_line_is_shown_by_its_passage(campaign: CampaignMemory, memory: Memory) -> None:
    """A narrator's long paragraph came whole in every passage (8,000 characters for five): it is shown as recall
    shows it in Discord, by the sentences around what was asked, cut at words with "…"."""
    ids = await build_world(campaign)
    filler = " ".join(f"The hall of the dwarves is cold and quiet on day {n}." for n in range(40))
    long = f"{filler} Grom strikes the moonforged anvil twice. {filler}"
    await campaign.log.write_many(ids["old"], [EntryIn(speaker="DM", text=long, start_s=40)])
    tools = CampaignTools(campaign, await memory.campaigns().get("Test Campaign"), dm=True)
    [passage, *_] = (await tools.search_sessions("moonforged anvil")).passages
    assert "Grom strikes the moonforged anvil twice." in passage.text and len(passage.text) < len(long) // 4
    assert passage.text.startswith("DM: …") and passage.text.endswith("…")


async def test_bad_arguments_are_tool_errors(campaign: CampaignMemory, fresh_dsn: str, tmp_path: Path) -> None:
    await build_world(campaign)
    async with mcp_client(fresh_dsn, tmp_path, "--as", "dm") as s:
        assert "query" in await error_of(s, "search_sessions", query="")
        assert "limit" in await error_of(s, "search_sessions", query="key", limit=500)
        assert "type" in await error_of(s, "find_entities", type="dragon")
        assert "name" in await error_of(s, "entity_card")
        assert "no entity named 'Gorm'" in await error_of(s, "entity_card", name="Gorm")
        assert "did you mean 'Grom'" in await error_of(s, "entity_facts", name="Gorm")
        assert "minutes" in await error_of(s, "recent_log", minutes=-1)
        # the SDK checks the arguments against the schema first: its refusals in plain words too
        plain = {
            "limit must be between 1 and 50": ("find_entities", {"limit": 1000}),
            "name must not be empty": ("entity_card", {"name": ""}),
            "name must be text": ("entity_card", {"name": 42}),
            "minutes must be more than 0 and at most 60": ("recent_log", {"minutes": 0}),
            "minutes must be a number": ("recent_log", {"minutes": "abc"}),
            "limit must be a whole number": ("entity_mentions", {"name": "Grom", "limit": 2.5}),
            "history must be true or false": ("entity_facts", {"name": "Grom", "history": "maybe"}),
            "name is required": ("entity_card", {}),
        }
        for said, (tool, arguments) in plain.items():
            error = await error_of(s, tool, **arguments)
            assert error == f"Error executing tool {tool}: {said}", error
        assert "type must be one of 'npc'" in await error_of(s, "find_entities", type="dragon")
        assert "no session titled" in await error_of(s, "session_recap", session="Night 9")
        # the SDK would drop an argument its schema lacks, and the caller believe it filtered by it
        made_up = await error_of(s, "search_sessions", query="Grom", session="Night 1")
        assert made_up == (
            "Error executing tool search_sessions: unknown argument 'session' (search_sessions takes query, limit)"
        )
        # proposals are not offered read-only: calling one is an error, nothing is written
        assert "propose_fact" in await error_of(s, "propose_fact", entity="Grom", relation="x", value="y")
        try:
            await s.read_resource("lorekeeper://sessions/999999/recap")
        except MCPError as exc:
            assert "no session with id" in str(exc)
        else:
            raise AssertionError("a missing session's recap was read")
    assert await campaign.review.pending() == []


async def test_blank_query_and_empty_state_are_refused(
    campaign: CampaignMemory, fresh_dsn: str, tmp_path: Path
) -> None:
    """A query of blanks would return passages at random, and an empty state a review item saying nothing: both
    are refused as `lorekeeper recall` and `entity link` refuse them; a state is trimmed as the DM's is."""
    await build_world(campaign)
    async with mcp_client(fresh_dsn, tmp_path, "--as", "player", "--allow-proposals") as s:
        assert "query is empty" in await error_of(s, "search_sessions", query="   ")
        assert "value: must not be empty" in await error_of(
            s, "propose_fact", entity="Grom", relation="status", value=" "
        )
        fact = await call(s, "propose_fact", entity="Grom", relation="status", value="  wounded  ")
        assert fact["said"].startswith("proposed Grom —status→ wounded; it contradicts"), fact
    (item,) = await campaign.review.pending()
    assert item.kind == ReviewKind.fact and "wounded" in item.describe()


async def test_http_needs_the_bearer_token(campaign: CampaignMemory, fresh_dsn: str, tmp_path: Path) -> None:
    import asyncio
    import socket

    import httpx2
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    await build_world(campaign)
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    token = "t" * 32
    env = {k: v for k, v in os.environ.items() if k != "LOREKEEPER_CONFIG"}
    env |= {"DATABASE_URL": fresh_dsn, "LOREKEEPER_DATA_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    cli = [sys.executable, "-c", "from bot.cli import main; main()", "mcp", "-c", "Test Campaign", "--http"]
    short = await asyncio.create_subprocess_exec(
        *cli, env={**env, "LOREKEEPER_MCP_TOKEN": "short"}, stderr=asyncio.subprocess.PIPE
    )
    _, said = await short.communicate()
    assert short.returncode == 1 and b"LOREKEEPER_MCP_TOKEN" in said
    log = (tmp_path / "http.log").open("wb")  # once, before the server starts
    server = await asyncio.create_subprocess_exec(
        *cli, "--port", str(port), env={**env, "LOREKEEPER_MCP_TOKEN": token}, stderr=log
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        async with httpx2.AsyncClient() as plain:
            for _ in range(600):  # until it listens (a busy machine takes seconds to import and connect)
                assert server.returncode is None, (tmp_path / "http.log").read_text()
                try:
                    refused = await plain.post(url, json={})
                    break
                except httpx2.ConnectError:
                    await asyncio.sleep(0.1)
            assert refused.status_code == 401
            wrong = await plain.post(url, json={}, headers={"Authorization": "Bearer " + "x" * 32})
            assert wrong.status_code == 401
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with (
            client,
            streamable_http_client(url, http_client=client) as (read, write),
            ClientSession(read, write) as s,
        ):
            await s.initialize()
            card = await call(s, "entity_card", name="Grom")
            assert card["name"] == "Grom" and not any(SECRET_FACT_VALUE in f for f in card["facts"])
    finally:
        if server.returncode is None:
            server.terminate()
        await server.wait()
        log.close()
