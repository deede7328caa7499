"""The hot context against the real schema: the identity snapshot, the live session's last minutes, the scene,
the players' view with its secrets masked, and the text block within its budget."""

from __future__ import annotations

import pytest

from memory.context import hot_context, recent_and_scene
from memory.errors import InvalidInputError, NotFoundError
from memory.jobs.queue import CHUNK, set_progress
from memory.mcp_tools import CampaignTools
from memory.mentions import index_lines
from memory.models import EntryIn
from memory.store import CampaignMemory, Memory
from tests.integration.mcp_world import SECRET_FACT_VALUE, SECRET_NPC, build_world


async def test_dm_view_has_identity_recent_lines_and_scene(campaign: CampaignMemory) -> None:
    ids = await build_world(campaign)
    ctx = await hot_context(campaign, "the smith", minutes=5, dm=True)
    assert ctx.entity.name == "Grom" and ctx.entity.id == ids["grom"]
    assert ctx.session == "Night 2" and ctx.live
    facts = "\n".join(ctx.entity.facts)
    assert "Grom —lives_in→ Ironhold" in facts
    assert "Ember Key —owned_by→ Pip" not in facts  # Pip's, about the key: not Grom's any more
    assert SECRET_FACT_VALUE in facts and "[DM only]" in facts
    # the window: the line 20 minutes before the last is outside 5 minutes
    assert [line.start_s for line in ctx.lines] == [1200, 1230, 1260]
    scene = {s.name for s in ctx.scene}
    assert {"Ironhold", "Grom", SECRET_NPC} <= scene  # by name, and by the alias "the Pale Magister"
    assert "Ember Key" not in scene
    assert ctx.entity.last_mentioned is not None and "Night 2" in ctx.entity.last_mentioned


async def test_player_view_hides_secret_entity_and_fact(campaign: CampaignMemory) -> None:
    await build_world(campaign)
    ctx = await hot_context(campaign, "Grom", minutes=5, dm=False)
    dumped = ctx.model_dump_json()
    assert SECRET_FACT_VALUE not in dumped and "secretly_serves" not in dumped
    assert "Vaskerrin" not in dumped  # masked in the lines, absent from the scene
    assert any("[secret] is near" in line.text for line in ctx.lines)
    assert "the Pale Magister" not in {s.name for s in ctx.scene}
    with pytest.raises(NotFoundError) as err:
        await hot_context(campaign, SECRET_NPC, dm=False)
    assert str(err.value).count("Vaskerrin") == 1  # its own question echoed, no hint confirming it


async def test_text_block_keeps_within_budget_newest_lines_first(campaign: CampaignMemory) -> None:
    await build_world(campaign)
    ctx = await hot_context(campaign, "Grom", minutes=30, dm=False)
    full = ctx.text(2000)
    assert full.startswith("# Grom (npc), also called the smith")
    assert full.index("[20:00] DM: You reach") < full.index("[21:00] DM: Grom whispers")  # oldest first
    small = ctx.text(60)
    assert len(small) <= 60 * 4
    assert "# Grom" in small
    mid = ctx.text(140)
    if "Long ago" in mid:  # an older line only ever with every newer one
        assert "[21:00]" in mid


async def test_attributes_and_facts_read_as_the_card_writes_them(campaign: CampaignMemory) -> None:
    """A list attribute (Roll20's tags) reads as a campaign file writes it, not as Python prints it; a fact whose
    value holds lines (imported GM notes) is one line of the block, not lines that look like others."""
    await build_world(campaign)
    await campaign.graph.update_entity("Grom", attributes={"tags": ["smith", "exile"], "level": 3})
    await campaign.graph.link("Grom", "dm_notes", value="GM\nHe forged the Ember Key.", secret=True)
    ctx = await hot_context(campaign, "Grom", minutes=30, dm=True)
    assert ctx.entity.attributes["tags"] == '["smith", "exile"]' and ctx.entity.attributes["level"] == "3"
    text = ctx.text(2000)
    assert '- tags: ["smith", "exile"]' in text
    assert "- Grom —dm_notes→ GM He forged the Ember Key. [DM only]" in text.splitlines()


async def test_no_session_and_bad_window(campaign: CampaignMemory) -> None:
    await build_world(campaign)
    with pytest.raises(InvalidInputError):
        await recent_and_scene(campaign, session_id=None, minutes=0, dm=True)
    with pytest.raises(NotFoundError):
        await recent_and_scene(campaign, session_id=999999, minutes=5, dm=True)
    ctx = await hot_context(campaign, "Grom", session_id=(await campaign.log.sessions())[0].id, minutes=0.2, dm=True)
    assert ctx.session == "Night 1" and not ctx.live
    assert [line.start_s for line in ctx.lines] == [20, 30]  # 12 s back from its last line


async def test_mentions_from_the_index_are_masked_for_players(campaign: CampaignMemory, memory: Memory) -> None:
    """Lines the mention index alone says name Grom (the session is recapped and read by the chunk job, so nothing is
    looked for by full text there): players read the secret name in them masked, and never a secret entity's."""
    ids = await build_world(campaign)
    secret = await campaign.graph.get_entity(SECRET_NPC)
    rows = await campaign.db.fetch(
        "SELECT id, session_id, seq, text FROM session_entries WHERE campaign_id = $1 ORDER BY session_id, seq",
        campaign.campaign_id,
    )
    for session_id in (ids["old"], ids["live"]):
        named = {
            r["id"]: [ids["grom"], secret.id] if "Vaskerrin" in r["text"] else [ids["grom"]]
            for r in rows
            if r["session_id"] == session_id and ("Grom" in r["text"] or "Vaskerrin" in r["text"])
        }
        await index_lines(campaign.db, campaign.campaign_id, session_id, named)
        seqs = [r["seq"] for r in rows if r["session_id"] == session_id]
        await set_progress(campaign.db, campaign, session_id, CHUNK, max(seqs))
    chosen = await memory.campaigns().get("Test Campaign")

    players = CampaignTools(campaign, chosen, dm=False)
    said = await players.entity_mentions("Grom", limit=10)
    texts = [m.text for m in said.mentions]
    assert "In the shadows, [secret] watches." in texts  # Night 1's: from the index only
    assert "Grom whispers: [secret] is near." in texts
    assert "Vaskerrin" not in said.model_dump_json()
    for name in (SECRET_NPC, "the Pale Magister"):
        with pytest.raises(NotFoundError):
            await players.entity_mentions(name)

    dm = await CampaignTools(campaign, chosen, dm=True).entity_mentions(SECRET_NPC, limit=10)
    assert [m.text for m in dm.mentions] == [  # the live session by full text (its alias too), Night 1 by the index
        f"Grom whispers: {SECRET_NPC} is near.",
        "I ask Grom about the Pale Magister.",
        f"In the shadows, {SECRET_NPC} watches.",
    ]


async def test_a_secret_npcs_name_as_a_speaker_is_masked_for_players(campaign: CampaignMemory, memory: Memory) -> None:
    """A line spoken under a secret NPC's name: its text was masked, but search_sessions' speakers, entity_mentions,
    the card's and the hot context's "last mentioned", /entity show and a /recall cite named the speaker whole."""
    from cogs.entities import entity_embed
    from cogs.recall import cite
    from memory.recall import recall

    ids = await build_world(campaign)
    await campaign.log.write_many(
        ids["live"], [EntryIn(speaker=SECRET_NPC, text="Grom, you have failed me.", start_s=1290)]
    )
    chosen = await memory.campaigns().get("Test Campaign")
    players = CampaignTools(campaign, chosen, dm=False)
    found = await players.search_sessions("failed me")
    assert any("[secret]" in p.speakers for p in found.passages)
    ctx = await hot_context(campaign, "Grom", minutes=5, dm=False)
    assert (
        ctx.entity.last_mentioned is not None and "[secret]: “Grom, you have failed me.”" in ctx.entity.last_mentioned
    )
    said = [
        found,
        await players.entity_mentions("Grom"),
        await players.entity_card("Grom"),
        (await players.hot_context("Grom", budget_tokens=2000)).text,
    ]
    assert "failed me" in str(said[1]) and "Vaskerrin" not in str(said)

    mask = await campaign.graph.player_mask()
    snap, last = await campaign.graph.identity("Grom")
    embed = entity_embed(snap.entity, relationships=[], last_mention=last, mask=mask, dm=False)
    assert last is not None and last.speaker == SECRET_NPC and "Vaskerrin" not in str(embed.to_dict())
    (hit,) = await recall(campaign, None, "you have failed me", limit=1, mode="fulltext", dm=False)
    assert "Vaskerrin" not in cite(hit.model_copy(update={"lines": []}), mask)  # by its speakers alone


async def test_a_speaker_is_in_the_scene_and_a_past_session_says_it_is_past(campaign: CampaignMemory) -> None:
    """Only what the lines said counted: Pip, who speaks in the window but is named by nobody, was not in the
    scene. With no session live, the block titled an ended session's last minutes as if they were now."""
    import re

    ids = await build_world(campaign)
    ctx = await hot_context(campaign, "Ironhold", minutes=5, dm=True)
    assert "Pip" in {s.name for s in ctx.scene}
    assert "## Last 5 minutes of Night 2\n" in ctx.text(2000)  # live: no note
    await campaign.log.end_session(ids["live"])
    past = await hot_context(campaign, "Ironhold", minutes=5, dm=True)
    assert not past.live and past.played is not None
    title = f"## Last 5 minutes of Night 2 (a past session of {past.played}, not what is happening now)"
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", past.played) and title in past.text(2000)


async def test_a_live_sessions_minutes_end_now_not_at_its_last_line(campaign: CampaignMemory, memory: Memory) -> None:
    """The window was measured back from the last line: a live session quiet for 20 minutes served the lines of
    20 minutes ago as "the last 5 minutes", untold."""
    from datetime import UTC, datetime, timedelta

    ids = await build_world(campaign)
    # nearly 23 minutes into Night 2 by the clock, its last line said at 21:00
    await campaign.log.set_started(ids["live"], datetime.now(UTC) - timedelta(seconds=1370))
    ctx = await hot_context(campaign, "Grom", minutes=2, dm=True)
    assert [line.start_s for line in ctx.lines] == [1260]  # 20:50–22:50, not 19:00–21:00–23:00, not 19:00–21:00
    assert not ctx.quiet and "## Last 2 minutes of Night 2\n" in ctx.text(2000)
    quiet = await hot_context(campaign, "Grom", minutes=1, dm=True)
    assert quiet.quiet and [line.start_s for line in quiet.lines] == [1200, 1230, 1260]  # the last said, marked
    text = quiet.text(2000)
    assert "## Nothing said in the last 1 minutes of Night 2; its last lines, from 20:00\n[20:00] DM:" in text
    log = await CampaignTools(campaign, await memory.campaigns().get("Test Campaign"), dm=False).recent_log(1)
    assert log.quiet and len(log.lines) == 3
    # a transcript's times ahead of the clock (pasted in at once): its last line is now
    await campaign.log.set_started(ids["live"], datetime.now(UTC))
    ahead = await hot_context(campaign, "Grom", minutes=1, dm=True)
    assert not ahead.quiet and [line.start_s for line in ahead.lines] == [1200, 1230, 1260]
    await campaign.log.end_session(ids["live"])  # an ended session: its last minutes, as before
    past = await hot_context(campaign, "Grom", minutes=1, dm=True)
    assert not past.quiet and past.now_s is None and [line.start_s for line in past.lines] == [1200, 1230, 1260]


async def test_an_untimed_sessions_recent_log_is_its_last_lines_and_says_so(
    campaign: CampaignMemory, memory: Memory
) -> None:
    """An imported transcript has no times: every minutes asked gave its last 200 lines (32 KB), and nothing said
    the window was lines. Now its last 30 unless a line count is asked, and `window` says "lines"."""
    from memory.context import UNTIMED_LINES

    await build_world(campaign)
    imported = await campaign.log.start_session("Episode 1")
    await campaign.log.write_many(
        imported.id,
        [EntryIn(speaker="Matt", text=f"The road goes on ({n}).", start_s=0, ref=f"turn {n}") for n in range(250)],
    )
    await campaign.log.end_session(imported.id)
    tools = CampaignTools(campaign, await memory.campaigns().get("Test Campaign"), dm=False)
    for minutes in (5, 0.1):
        log = await tools.recent_log(minutes, "Episode 1")
        assert log.window == "lines" and [line.ref for line in log.lines] == [f"turn {n}" for n in range(220, 250)]
    assert len(log.lines) == UNTIMED_LINES
    few = await tools.recent_log(5, "Episode 1", lines=3)
    assert few.window == "lines" and [line.ref for line in few.lines] == ["turn 247", "turn 248", "turn 249"]
    assert len((await tools.recent_log(5, "Episode 1", lines=200)).lines) == 200
    # a timed session: the minutes, at most the lines asked
    timed = await tools.recent_log(5, "Night 2")
    assert timed.window == "minutes" and [line.start_s for line in timed.lines] == [1200, 1230, 1260]
    assert [line.start_s for line in (await tools.recent_log(5, "Night 2", lines=1)).lines] == [1260]
    with pytest.raises(InvalidInputError, match="lines must be between 1 and 200"):
        await tools.recent_log(5, lines=0)


async def test_the_after_show_and_table_talk_are_not_what_was_just_said(
    campaign: CampaignMemory, memory: Memory
) -> None:
    """An NPC agent was handed the after-show ("thank you for watching … go follow Grom on Twitter") and sponsor
    reads as the last lines said, and as where Grom was last mentioned. Out-of-game talk is left out of both (the
    segments the chunk job marks, and a line's own table talk); the log and `entity mentions` keep it."""
    from memory.jobs.chunk import _mark_segments
    from memory.mentions import latest, mentions
    from memory.semantic import LineVectorIn

    await build_world(campaign)
    night = await campaign.log.start_session("Night 3")
    said = [("DM", "The road winds on through the pines toward the pass.")] * 36 + [
        ("DM", "Grom sets the Ember Key on the anvil and starts to hammer."),
        ("Pip", "This part of the show is sponsored by Grom's Forge, use the code GROM for dice."),
        ("Pip", "I thank Grom and walk out into the snow."),
        ("DM", "And we'll end it there. Thank you all so much for watching!"),
        ("Pip", "Go follow Grom on Twitter, everyone!"),
        ("DM", "Grom says goodnight to all of you at home."),
    ]
    written = await campaign.log.write_many(
        night.id, [EntryIn(speaker=who, text=text, start_s=10.0 * n) for n, (who, text) in enumerate(said)]
    )
    await campaign.log.end_session(night.id)
    # as the chunk job leaves a session: a line vector row for each line, its segments marked
    await campaign.semantic.upsert_lines([LineVectorIn(e.id, night.id, "x", None) for e in written])
    await _mark_segments(campaign, night.id)

    ctx = await hot_context(campaign, "Grom", session_id=night.id, minutes=5, dm=True)
    assert [line.text for line in ctx.lines][-2:] == [said[36][1], said[38][1]]  # no sponsor read, no after-show
    assert ctx.entity.last_mentioned is not None and "walk out into the snow" in ctx.entity.last_mentioned
    assert "Twitter" not in ctx.text(8000) and "watching" not in ctx.text(8000)
    grom = await campaign.graph.get_entity("Grom")
    assert [m.text for m in await latest(campaign.db, campaign.campaign_id, grom.id, limit=2)] == [
        said[38][1],
        said[36][1],
    ]
    last = await campaign.graph.last_mention(grom)
    assert last is not None and last.text == said[38][1]
    tools = CampaignTools(campaign, await memory.campaigns().get("Test Campaign"), dm=True)
    assert (await tools.entity_card("Grom")).last_mentioned == ctx.entity.last_mentioned
    # the DM still sees them: in the log, and in `lorekeeper entity mentions`
    assert (await tools.recent_log(5, "Night 3")).lines[-1].text == said[-1][1]
    everything = await mentions(campaign.db, campaign.campaign_id, grom.id, limit=3)
    assert [m.text for m in everything.lines] == [said[-1][1], said[-2][1], said[-4][1]]


async def test_an_npcs_prompt_has_no_import_bookkeeping_and_its_sessions_once(
    campaign: CampaignMemory, memory: Memory
) -> None:
    """The block spent its attributes on the import's statistics ("crd3_episodes: 135") and said the sessions the
    entity took part in twice more, as connected "Session: Night 1" events beside "took part in". Now an attribute
    named after the tool it was imported from is left out (the card of /entity show keeps it), and the sessions are
    the one "took part in" line."""
    from memory.models import EntityIn, EntityType, recap_name

    await build_world(campaign)
    g = campaign.graph
    attributes = {"crd3_mentions": 563, "crd3_episodes": 135, "Foundry_Type": "npc", "race": "dwarf", "kanka": "x"}
    await g.add_entity(EntityIn(name="Old Tam", type=EntityType.npc, attributes=attributes))
    for title in ("Night 1", "Night 2"):
        await g.add_entity(EntityIn(name=recap_name(title), type=EntityType.event, description=f"{title}: a road."))
        await g.link("Old Tam", "took_part_in", recap_name(title))
    await g.link("Old Tam", "lives_in", "Ironhold")

    ctx = await hot_context(campaign, "Old Tam", minutes=5, dm=True)
    assert ctx.entity.attributes == {"race": "dwarf", "kanka": "x"}
    assert [c.name for c in ctx.entity.connected] == ["Ironhold"]
    assert ctx.entity.took_part.startswith("took part in 2 sessions") and ctx.entity.facts == [
        "Old Tam —lives_in→ Ironhold"
    ]
    text = ctx.text(2000)
    assert "crd3" not in text and "Foundry" not in text and "- race: dwarf" in text
    assert text.count("Night 1") == 1 and recap_name("Night 1") not in text
    card = await CampaignTools(campaign, await memory.campaigns().get("Test Campaign"), dm=False).entity_card("Old Tam")
    assert card.attributes == ctx.entity.attributes and [c.name for c in card.connected] == ["Ironhold"]
    assert (await g.get_entity("Old Tam")).attributes["crd3_mentions"] == 563  # kept: only the prompt leaves it out
