"""Campaigns, review, recall/recap, setup and sync end to end: real bot ↔ fake Discord ↔ embedded PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import discord
import pytest
import yaml
from discord import app_commands

from bot.app import LorekeeperBot
from memory import jobs
from memory.extraction import extract_into_graph, make_extractor
from memory.models import EntityIn, EntityType, EntryIn, Provenance, RelationshipIn, ReviewStatus, Source, Visibility
from memory.providers.llm import OpenAILLM
from memory.store import CampaignMemory, Memory
from tests.e2e.conftest import BotRunner
from tests.e2e.fake_discord import FakeChannel, FakeDiscord, FakeGuild, FakeMember, FakeRole, Upload
from tests.e2e.helpers import active, make_bot, modal_field, until_true
from tests.fakes.openai_server import FakeOpenAI


def today() -> str:
    """The date of a session started now, as a citation says it beside the session's title."""
    return f"{datetime.now(UTC):%Y-%m-%d}"


pytestmark = [pytest.mark.e2e, pytest.mark.integration]

EXAMPLE = Path(__file__).parents[2] / "campaigns" / "examples" / "sunken_crown.yaml"
BROKEN = b"campaign:\n  name: Broken\nentities:\n  - name: Mira\n    type: npc\n  - name: Orrin\n    type: wizard\n"


@pytest.fixture
async def pending(ashes: CampaignMemory) -> list[str]:
    """Two unsure extractions waiting for the DM: a new NPC and a fact about it (refs, oldest first)."""
    low = Provenance(source=Source.stated, confidence=0.4, session_id=None)
    mira = await ashes.graph.add_entity(
        EntityIn(name="Mira", type=EntityType.npc, description="a smith", status=ReviewStatus.pending, provenance=low)
    )
    forge = await ashes.graph.add_entity(EntityIn(name="Ironhold", type=EntityType.place))
    fact = await ashes.graph.add_relationship(
        RelationshipIn(source_id=mira.id, type="works_in", target_id=forge.id, provenance=low)
    )
    assert fact.status == ReviewStatus.pending
    return [f"e{mira.id}", f"f{fact.id}"]


# ---------------------------------------------------------------------------------------------- campaigns


async def test_dev_guild_sync_at_start(
    fake_discord: FakeDiscord, bot_runner: BotRunner, memory: Memory, guild: FakeGuild, tmp_path: Path
) -> None:
    await bot_runner.start(make_bot(fake_discord, memory, tmp_path, dev_guild_id=guild.id))
    ((scope, sent),) = fake_discord.sync_calls
    assert scope == guild.id
    assert sorted(c["name"] for c in sent) == [
        "campaign",
        "entity",
        "lorekeeper",
        "recall",
        "recap",
        "review",
        "session",
    ]
    entity = next(c for c in sent if c["name"] == "entity")
    assert sorted(o["name"] for o in entity["options"]) == [
        "add",
        "describe",
        "edit",
        "link",
        "list",
        "merge",
        "pin",
        "remove",
        "show",
        "unlink",
    ]
    add = next(o for o in entity["options"] if o["name"] == "add")
    type_option = next(o for o in add["options"] if o["name"] == "type")
    assert [c["value"] for c in type_option["choices"]] == [t.value for t in EntityType]
    # guild only: a command offered in a private message with the bot could only answer that it works in a server
    assert {c["name"]: (c.get("contexts"), c.get("dm_permission")) for c in sent} == {
        c["name"]: ([0], False) for c in sent
    }


async def test_campaign_create_list_switch_info_delete(
    ashes: CampaignMemory, fake_discord: FakeDiscord, memory: Memory, guild: FakeGuild, dm: FakeMember, player
) -> None:
    dup = await fake_discord.invoke("campaign create", {"name": "ashes"}, user_id=dm)
    assert dup.texts() == ["a campaign named 'ashes' already exists: /campaign switch makes it the active one"]
    second = await fake_discord.invoke("campaign create", {"name": "Frostmaw"}, user_id=dm)
    assert second.texts() == ["Created campaign **Frostmaw**. Use /campaign switch to make it active."]
    refused = await fake_discord.invoke("campaign create", {"name": "Mine"}, user_id=player)
    assert refused.texts() == ["Only the DM can do that."]

    listed = await fake_discord.invoke("campaign list", user_id=player)
    assert listed.texts() == ["Campaigns", "▶ **Ashes** — D&D 5e\n**Frostmaw**"]
    assert [c["name"] for c in await fake_discord.autocomplete("campaign switch", {"name": "fr"}, "name")] == [
        "Frostmaw"
    ]
    switched = await fake_discord.invoke("campaign switch", {"name": "Frostmaw"}, user_id=dm)
    assert switched.texts() == ["Active campaign: **Frostmaw**."]
    unknown = await fake_discord.invoke("campaign switch", {"name": "Nope"}, user_id=dm)
    assert unknown.texts() == ["no campaign named 'Nope': /campaign list shows them"]
    close = await fake_discord.invoke("campaign switch", {"name": "frostmav"}, user_id=dm)
    assert close.texts() == ["no campaign named 'frostmav' (did you mean 'Frostmaw'?): /campaign list shows them"]

    info = await fake_discord.invoke("campaign info", user_id=dm)
    assert info.texts()[0] == "Frostmaw" and "Entities: 0" in info.texts() and "Awaiting review: 0" in info.texts()
    assert not any(
        t.startswith("Awaiting") for t in (await fake_discord.invoke("campaign info", user_id=player)).texts()
    )

    asked = await fake_discord.invoke("campaign delete", {"name": "Ashes"}, user_id=dm)
    assert asked.original is not None and asked.texts()[0].startswith("Delete **Ashes**")
    confirm = asked.original["components"][0]["components"][0]["custom_id"]
    await fake_discord.click(asked.original, confirm, user_id=dm)
    assert fake_discord.messages[int(asked.original["id"])]["content"] == "Deleted campaign **Ashes**."
    assert [c.name for c in await memory.campaigns(guild.id).list()] == ["Frostmaw"]


async def test_campaign_list_pages_through_every_campaign(
    bot: LorekeeperBot, fake_discord: FakeDiscord, memory: Memory, guild: FakeGuild, dm: FakeMember
) -> None:
    campaigns = memory.campaigns(guild.id)
    names = [f"{n:02d} " + "The Long Road Beneath the Drowned Kingdom " * 2 for n in range(40)]
    for name in names:
        await campaigns.create(name.strip(), system="D&D 5e", description="A campaign of many sessions. " * 10)
    listed = await fake_discord.invoke("campaign list", user_id=dm)
    assert listed.ephemeral and listed.original is not None
    message_id = int(listed.original["id"])
    shown = [listed.original["embeds"][0]["description"]]
    while not (next_button := fake_discord.messages[message_id]["components"][0]["components"][1]).get("disabled"):
        await fake_discord.click(message_id, next_button["custom_id"], user_id=dm)
        shown.append(fake_discord.messages[message_id]["embeds"][0]["description"])
    assert len(shown) > 1 and all(len(page) <= 4096 for page in shown)
    text = "\n".join(shown)
    assert all(f"**{name.strip()}**" in text for name in names)


async def test_deleting_the_active_campaign_makes_the_newest_left_active(
    ashes: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    for name in ("Frostmaw", "Emberfall"):
        await fake_discord.invoke("campaign create", {"name": name}, user_id=dm)
    asked = await fake_discord.invoke("campaign delete", {"name": "Ashes"}, user_id=dm)
    await fake_discord.click(asked.original, asked.original["components"][0]["components"][0]["custom_id"], user_id=dm)
    assert fake_discord.messages[int(asked.original["id"])]["content"] == (
        "Deleted campaign **Ashes**. **Emberfall** is now the active campaign."
    )
    info = await fake_discord.invoke("campaign info", user_id=dm)
    assert info.texts()[0] == "Emberfall"


async def test_campaign_info_counts_for_players_leave_secrets_out(
    ashes: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    public = await ashes.graph.add_entity(EntityIn(name="Ironhold", type=EntityType.place))
    secret = await ashes.graph.add_entity(EntityIn(name="Queen Mab", type=EntityType.npc, visibility=Visibility.secret))
    dm_says = Provenance(source=Source.dm, dm_confirmed=True)
    await ashes.graph.add_relationship(
        RelationshipIn(source_id=secret.id, type="rules", target_id=public.id, provenance=dm_says)
    )
    as_dm = (await fake_discord.invoke("campaign info", user_id=dm)).texts()
    assert "Entities: 2" in as_dm and "Facts: 1" in as_dm and "Awaiting review: 0" in as_dm
    as_player = (await fake_discord.invoke("campaign info", user_id=player)).texts()
    assert "Entities: 1" in as_player  # Queen Mab is secret
    assert not any(t.startswith(("Facts", "Awaiting")) for t in as_player), as_player


async def test_campaign_load_example_then_export(
    bot: LorekeeperBot,
    fake_discord: FakeDiscord,
    memory: Memory,
    guild: FakeGuild,
    dm: FakeMember,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # no campaign yet: the file's own campaign block creates it
    loaded = await fake_discord.invoke(
        "campaign load", {"file": Upload("sunken_crown.yaml", EXAMPLE.read_bytes())}, user_id=dm
    )
    assert loaded.ephemeral and loaded.texts()[0].startswith("**The Sunken Crown** ← sunken_crown.yaml: entities: ")
    mem = await active(memory, guild)
    assert (await mem.graph.get_entity("Old Bronze")).name == "Eldrinax"
    again = await fake_discord.invoke(
        "campaign load", {"file": Upload("sunken_crown.yaml", EXAMPLE.read_bytes())}, user_id=dm
    )
    assert "0 new, 0 updated" in again.texts()[0] and "Changes" not in again.texts()[0]
    # a name play gave Eldrinax: the file lists his aliases, so loading it again takes the name away, and says so
    await mem.graph.update_entity("Eldrinax", aliases=["The Drowned Wyrm", "Old Bronze", "the worm"])
    reloaded = await fake_discord.invoke(
        "campaign load", {"file": Upload("sunken_crown.yaml", EXAMPLE.read_bytes())}, user_id=dm
    )
    assert reloaded.texts()[0].endswith("\nChanges to what the campaign had:\n- Eldrinax: alias removed: the worm"), (
        reloaded.texts()
    )

    exported = await fake_discord.invoke("campaign export", user_id=dm)
    (sent,) = exported.files
    assert sent.filename == "The_Sunken_Crown.yaml"
    data = yaml.safe_load(sent.text())
    assert data["campaign"]["name"] == "The Sunken Crown"
    assert {e["name"] for e in data["entities"]} >= {"Eldrinax", "Vaskerrin Holt"}
    assert exported.texts() == ["**The Sunken Crown** as a campaign file."]
    # what a file cannot hold is named in the reply, not only in the bot's log
    eldrinax = await mem.graph.get_entity("Eldrinax")
    await mem.graph.add_relationship(RelationshipIn(source_id=eldrinax.id, type="motto", value=""))
    exported = await fake_discord.invoke("campaign export", user_id=dm)
    assert exported.texts() == [
        "**The Sunken Crown** as a campaign file.\n- left out Eldrinax —motto→ (no value): an attribute "
        "fact needs a value in a campaign file"
    ]
    # an export bigger than /campaign load takes is sent all the same, and says how to load it back
    monkeypatch.setattr(sys.modules["cogs.campaigns"], "MAX_UPLOAD_BYTES", 1000)  # the module the bot loaded
    (text,) = (await fake_discord.invoke("campaign export", user_id=dm)).texts()
    assert text.startswith("**The Sunken Crown** as a campaign file.\n⚠️ the file has ") and (
        " bytes (at most 1,000), more than one /campaign load takes: to load it back, split it" in text
    ), text
    # more than the server lets the bot send: said, with where else to get it
    monkeypatch.setattr(discord.Guild, "filesize_limit", property(lambda guild: 1000))
    (text,) = (await fake_discord.invoke("campaign export", user_id=dm)).texts()
    assert text.endswith("more than this server lets me send (1,000): export it with `lorekeeper campaign export`.")


async def test_campaign_load_of_a_file_naming_another_campaign_says_where_it_went(
    ashes: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    """The file's header names The Sunken Crown: `lorekeeper campaign load` fills that campaign, /campaign load the
    active one, and the reply did not say so."""
    loaded = await fake_discord.invoke(
        "campaign load", {"file": Upload("sunken_crown.yaml", EXAMPLE.read_bytes())}, user_id=dm
    )
    first, said, *_ = loaded.texts()[0].split("\n")
    assert first.startswith("**Ashes** ← sunken_crown.yaml: entities: 25 new")
    assert said == "The file names campaign **The Sunken Crown**; it was loaded into the active campaign **Ashes**."
    for data in (b"campaign:\n  name: ashes\nentities: []\n", b"entities: []\n"):  # its own name, or none
        again = await fake_discord.invoke("campaign load", {"file": Upload("x.yaml", data)}, user_id=dm)
        assert "The file names" not in again.texts()[0], again.texts()


async def test_campaign_load_broken_file_changes_nothing(
    ashes: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    await ashes.graph.add_entity(EntityIn(name="Mira", type=EntityType.npc, description="before"))
    record = await fake_discord.invoke("campaign load", {"file": Upload("broken.yaml", BROKEN)}, user_id=dm)
    (text,) = record.texts()
    assert record.ephemeral and text.startswith("Nothing was loaded:\nbroken.yaml:7: ")
    assert "wizard" in text
    assert [e.name for e in await ashes.graph.list_entities()] == ["Mira"]
    assert (await ashes.graph.get_entity("Mira")).description == "before"

    syntax = await fake_discord.invoke("campaign load", {"file": Upload("bad.yaml", b"entities: [\n")}, user_id=dm)
    assert syntax.texts()[0].startswith("Nothing was loaded:\nbad.yaml:")

    # a name the campaign already gives another entity: only the database can tell, the whole load is undone
    await ashes.graph.add_entity(EntityIn(name="Eldrinax", type=EntityType.npc, aliases=["Old Bronze"]))
    clash = b"entities:\n  - {name: Vell, type: npc}\n  - {name: Old Bronze, type: item}\n"
    record = await fake_discord.invoke("campaign load", {"file": Upload("clash.yaml", clash)}, user_id=dm)
    assert record.texts()[0].startswith("Nothing was loaded:\nclash.yaml:3: "), record.texts()
    assert "'Old Bronze' is already an alias of 'Eldrinax'" in record.texts()[0]
    assert sorted(e.name for e in await ashes.graph.list_entities()) == ["Eldrinax", "Mira"]


async def test_a_failed_first_load_leaves_no_campaign_behind(
    bot: LorekeeperBot, fake_discord: FakeDiscord, memory: Memory, guild: FakeGuild, dm: FakeMember
) -> None:
    # only the database finds this clash: it lowers "İstanbul" to "istanbul", which Python's casefold does not
    clash = "campaign: {name: Fresh}\nentities:\n  - {name: Vell, type: npc, aliases: [İstanbul]}\n"
    clash += "  - {name: istanbul, type: place}\n"
    record = await fake_discord.invoke("campaign load", {"file": Upload("clash.yaml", clash.encode())}, user_id=dm)
    (text,) = record.texts()
    assert text.startswith("Nothing was loaded:\nclash.yaml:4: ") and "give this entry `renamed_from:`" in text
    assert await memory.campaigns(guild.id).list() == []
    good = b"campaign: {name: Fresh}\nentities:\n  - {name: Vell, type: npc}\n"
    loaded = await fake_discord.invoke("campaign load", {"file": Upload("good.yaml", good)}, user_id=dm)
    assert loaded.texts()[0].startswith("**Fresh** ← good.yaml: entities: 1 new")
    assert [(c.name, c.active) for c in await memory.campaigns(guild.id).list()] == [("Fresh", True)]


async def test_campaign_names_over_100_characters_are_refused_clearly(
    bot: LorekeeperBot, fake_discord: FakeDiscord, memory: Memory, guild: FakeGuild, dm: FakeMember
) -> None:
    refusal = f"a campaign name is at most 100 characters; {'L' * 40}… has 150: choose a shorter one"
    created = await fake_discord.invoke("campaign create", {"name": "L" * 150}, user_id=dm)
    assert created.texts() == [refusal]
    data = f"campaign: {{name: {'L' * 150}}}\nentities:\n  - {{name: Mira, type: npc}}\n".encode()
    loaded = await fake_discord.invoke("campaign load", {"file": Upload("long.yaml", data)}, user_id=dm)
    assert loaded.texts() == [  # refused with its line, before anything is created
        "Nothing was loaded:\nlong.yaml:1: campaign: name has 150 characters; a campaign name is at most 100: "
        "choose a shorter one"
    ]
    assert await memory.campaigns(guild.id).list() == []
    fits = await fake_discord.invoke("campaign create", {"name": "L" * 100}, user_id=dm)
    assert fits.texts()[0].startswith("Created campaign")


async def test_campaign_load_too_big_is_refused_before_download(
    ashes: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    big = Upload("huge.yaml", b"#" * (2 * 1024 * 1024 + 1))
    record = await fake_discord.invoke("campaign load", {"file": big}, user_id=dm)
    assert record.callback_type == 4 and record.texts() == [
        "huge.yaml is 2,097,153 bytes; the limit is 2,097,152 bytes."
    ]
    assert not any("/cdn/" in line for _, line in fake_discord.transcript)
    refused = await fake_discord.invoke("campaign load", {"file": Upload("x.yaml", b"entities: []\n")}, user_id=player)
    assert refused.texts() == ["Only the DM can do that."]


# ---------------------------------------------------------------------------------------------- review


async def test_review_accept_edit_reject(
    pending: list[str], ashes: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    entity_ref, fact_ref = pending
    record = await fake_discord.invoke("review", user_id=dm)
    await record.wait_for(lambda r: len(r.followups) == 2)
    assert record.texts()[0] == "**Ashes**: 2 waiting for review."
    cards = record.followups
    # the ids are the buttons', in small print: the DM reads what the item is
    assert [c["embeds"][0]["title"] for c in cards] == ["New entity", "New fact"]
    assert [c["embeds"][0]["footer"]["text"] for c in cards] == [entity_ref, fact_ref]
    ids = [b["custom_id"] for b in cards[0]["components"][0]["components"]]
    campaign_id = ashes.campaign_id
    assert ids == [f"lk:review:{a}:{campaign_id}:{entity_ref}" for a in ("accept", "edit", "reject", "same")]

    # a player pressing the DM's button is refused and nothing changes
    refused = await fake_discord.click(cards[0], ids[0], user_id=player)
    assert refused.texts() == ["Only the DM can review."]

    # Edit opens a modal pre-filled with what the bot understood; submitting corrects and accepts
    opened = await fake_discord.click(cards[0], ids[1], user_id=dm)
    assert opened.modal is not None and opened.modal["title"] == "Edit the entity"
    assert opened.modal["custom_id"] == f"lk:review:modal:{dm.id}:{campaign_id}:{entity_ref}"
    submitted = await fake_discord.submit_modal(
        opened.modal["custom_id"],
        {"name": "Mira Tolvanek", "type": "npc", "description": "The blacksmith of Ironhold", "aliases": "Mira"},
    )
    assert submitted.callback_type == 7
    edited_card = fake_discord.messages[int(cards[0]["id"])]
    assert edited_card["components"] == []
    assert edited_card["embeds"][0]["footer"]["text"] == f"accepted by dm (edited) · {entity_ref}"
    mira = await ashes.graph.get_entity("Mira")
    assert (mira.name, mira.status, mira.aliases) == ("Mira Tolvanek", ReviewStatus.accepted, ["Mira"])

    reject_id = cards[1]["components"][0]["components"][2]["custom_id"]
    rejected = await fake_discord.click(cards[1], reject_id, user_id=dm)
    assert rejected.callback_type == 7
    assert (await ashes.graph.get_relationship(int(fact_ref[1:]))).status == ReviewStatus.rejected
    assert fake_discord.messages[int(cards[1]["id"])]["embeds"][0]["footer"]["text"] == f"rejected by dm · {fact_ref}"

    empty = await fake_discord.invoke("review", user_id=dm)
    assert empty.texts() == ["Nothing to review."]


async def test_review_card_says_the_session_and_the_line(
    ashes: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    """DMs know sessions by title, not by id; the line itself is what they check before accepting."""
    night = await ashes.log.start_session("Night one")
    line = await ashes.log.write(night.id, EntryIn(speaker="Ana", text="Mira runs to the Cinder Cup.", start_s=6.0))
    said = Provenance(source=Source.stated, confidence=0.55, session_id=night.id, timestamp=6.0, entry_ids=[line.id])
    await ashes.graph.add_entity(EntityIn(name="Mira", type=EntityType.npc, status="pending", provenance=said))
    record = await fake_discord.invoke("review", user_id=dm)
    await record.wait_for(lambda r: len(r.followups) == 1)
    fields = {f["name"]: f["value"] for f in record.followups[0]["embeds"][0]["fields"]}
    assert fields["Said in"] == f"Night one, {today()} at 0:06"
    assert fields["Said"] == "Ana: “**Mira** runs to the Cinder Cup.”"  # the name it asks about, in bold


async def test_review_card_shows_the_line_as_written_not_as_markdown(
    ashes: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    """A typed line's "*rolls*", "> quote" or "||" restyled the card (/recall escapes them): shown as written."""
    night = await ashes.log.start_session("Night one")
    text = "> *rolls* Mira_the_great __waves__ at a|b"
    line = await ashes.log.write(night.id, EntryIn(speaker="Ana", text=text, start_s=6.0))
    said = Provenance(source=Source.stated, confidence=0.55, session_id=night.id, timestamp=6.0, entry_ids=[line.id])
    await ashes.graph.add_entity(
        EntityIn(name="Mira", type=EntityType.npc, description="*the* smith", status="pending", provenance=said)
    )
    record = await fake_discord.invoke("review", user_id=dm)
    await record.wait_for(lambda r: len(r.followups) == 1)
    embed = record.followups[0]["embeds"][0]
    fields = {f["name"]: f["value"] for f in embed["fields"]}
    assert fields["Said"] == "Ana: “\\> \\*rolls\\* Mira_the_great \\_\\_waves\\_\\_ at a\\|b”", fields["Said"]
    assert embed["description"] == "new npc 'Mira': \\*the\\* smith"


async def test_review_cards_of_the_llms_proposals_say_their_line_and_none_come_from_the_pre_show(
    ashes: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember, fake_openai: FakeOpenAI
) -> None:
    """With an LLM configured, its proposals reach the card as the rules' do: with the line that says them, and
    nothing from table talk, even when the model proposes it (citing a line it was not given, or none)."""
    night = await ashes.log.start_session("Night one")
    lines = [
        ("DM", "Welcome to the show! A few announcements before we start."),
        ("Sam", "I voice a pilot named Lao in Xenoblade Chronicles X, out this week."),
        ("DM", "All right. Last we left off, you stood in the forge."),
        ("DM", "Behind the anvil stands a dwarf named Korvash, arms crossed."),
        *[("Ana", "I look around the forge.")] * 3,
    ]
    entries = await ashes.log.write_many(
        night.id, [EntryIn(speaker=s, text=t, start_s=10.0 * n) for n, (s, t) in enumerate(lines)]
    )

    def npc(name: str, ids: list[int]) -> dict[str, object]:
        return {"name": name, "type": "npc", "description": "", "confidence": 0.9, "entry_ids": ids}

    answer = {"entities": [npc("Lao", [entries[1].id]), npc("Xenoblade", []), npc("Korvash", [])], "facts": []}
    fake_openai.queue_chat(json.dumps(answer))
    llm = OpenAILLM(fake_openai.base_url, fake_openai.api_key, "fake-gpt", timeout=5, max_retries=0)
    try:
        await extract_into_graph(ashes, session_id=night.id, entries=entries, extractor=make_extractor(llm))
    finally:
        await llm.aclose()
    assert "Xenoblade" not in fake_openai.chat_requests[0]["messages"][1]["content"]

    record = await fake_discord.invoke("review", user_id=dm)
    await record.wait_for(lambda r: len(r.followups) == 1)
    (card,) = record.followups
    assert card["embeds"][0]["title"].startswith("New entity")
    fields = {f["name"]: f["value"] for f in card["embeds"][0]["fields"]}
    assert fields["Said in"] == f"Night one, {today()} at 0:30"
    assert fields["Said"] == "DM: “Behind the anvil stands a dwarf named **Korvash**, arms crossed.”"


async def test_review_card_of_a_long_narration_shows_the_part_that_names_the_item(
    ashes: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    """A DM's opening recap runs to 2,500 characters and told the arrival in its middle: the card showed the first
    1,024, so "Said" never named the place the DM was asked to confirm."""
    night = await ashes.log.start_session("Night one")
    story = "You walked the long road north, trading stories and blows with the bandits of the pass. " * 12
    recap = story + "At last Grog leapt through a portal into the Elemental Plane of Air, set adrift. " + story
    line = await ashes.log.write(night.id, EntryIn(speaker="DM", text=recap, start_s=6.0))
    said = Provenance(source=Source.stated, confidence=0.55, session_id=night.id, timestamp=6.0, entry_ids=[line.id])
    await ashes.graph.add_entity(
        EntityIn(name="Arrival at Elemental Plane of Air", type=EntityType.event, status="pending", provenance=said)
    )
    record = await fake_discord.invoke("review", user_id=dm)
    await record.wait_for(lambda r: len(r.followups) == 1)
    fields = {f["name"]: f["value"] for f in record.followups[0]["embeds"][0]["fields"]}
    assert fields["Said"].startswith("DM: “…") and fields["Said"].endswith("…”"), fields["Said"]
    assert "a portal into the **Elemental Plane of Air**, set adrift." in fields["Said"]
    assert len(fields["Said"]) <= 1024


async def test_review_quotes_a_line_once_for_an_entity_and_its_fact(
    ashes: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    """An arrival and the fact of where it is are read from one narrator's paragraph: both cards quoted the same
    478 characters, a phone's screen twice. The fact's card refers to the entity's."""
    night = await ashes.log.start_session("Night one")
    text = "You make your way to Emon, then you charter a ship across the Ozmit Sea to the port city of Shamal."
    line = await ashes.log.write(night.id, EntryIn(speaker="DM", text=text, start_s=30.0))
    said = Provenance(source=Source.stated, confidence=0.55, session_id=night.id, timestamp=30.0, entry_ids=[line.id])
    emon = await ashes.graph.add_entity(EntityIn(name="Emon", type=EntityType.location))
    arrival = await ashes.graph.add_entity(
        EntityIn(name="Arrival at Emon", type=EntityType.event, status="pending", provenance=said)
    )
    await ashes.graph.add_relationship(
        RelationshipIn(source_id=arrival.id, type="located_in", target_id=emon.id, provenance=said)
    )
    record = await fake_discord.invoke("review", user_id=dm)
    await record.wait_for(lambda r: len(r.followups) == 2)
    entity_card, fact_card = ({f["name"]: f["value"] for f in c["embeds"][0]["fields"]} for c in record.followups)
    assert entity_card["Said"].startswith("DM: “**You make your way to Emon**, then")
    assert fact_card["Said in"] == entity_card["Said in"] == f"Night one, {today()} at 0:30"
    assert fact_card["Said"] == "the line quoted above, on the card of **Arrival at Emon**"
    # the fact in words: "—located_in→" is the graph's, not the DM's
    assert record.followups[1]["embeds"][0]["description"] == "Arrival at Emon is located in Emon"


async def test_review_quotes_each_line_alike_and_names_the_fact_above(
    ashes: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    """Two lines alike in an untimed transcript ("Roll initiative.", both at 0:00) were taken for one, so the card
    of the second referred to the first's quote; and a card after a fact's said "on the card of the fact", not
    which one."""
    night = await ashes.log.start_session("Night one")
    first, second = [await ashes.log.write(night.id, EntryIn(speaker="DM", text="Roll initiative.")) for _ in "12"]
    tova, aldric, wren = [
        await ashes.graph.add_entity(EntityIn(name=n, type=EntityType.npc)) for n in ("Tova", "Aldric", "Wren")
    ]
    for line, source, target in ((first, tova, aldric), (first, tova, wren), (second, aldric, wren)):
        said = Provenance(source=Source.stated, confidence=0.55, session_id=night.id, entry_ids=[line.id])
        await ashes.graph.add_relationship(
            RelationshipIn(source_id=source.id, type="hostile_to", target_id=target.id, provenance=said)
        )
    record = await fake_discord.invoke("review", user_id=dm)
    await record.wait_for(lambda r: len(r.followups) == 3)
    cards = [{f["name"]: f["value"] for f in c["embeds"][0]["fields"]} for c in record.followups]
    assert cards[0]["Said"] == cards[2]["Said"] == "DM: “Roll initiative.”"
    assert cards[1]["Said"] == "the line quoted above, on the card of the fact “Tova is hostile to Aldric”"


async def test_review_card_of_long_texts_stays_within_discord_limits(
    ashes: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    """Accepting a fact with a long value, line and closed fact edited its card past Discord's 6,000 characters
    in total: the accept was saved, but the card kept its buttons and looked pending."""
    eldrinax = await ashes.graph.add_entity(EntityIn(name="Eldrinax", type=EntityType.npc))
    # values longer than one may be now, as a database written before may hold them (unchecked here)
    await ashes.graph.add_relationship(
        RelationshipIn.model_construct(source_id=eldrinax.id, type="hoards", value="old gold " * 300)
    )
    night = await ashes.log.start_session("Night one")
    line = await ashes.log.write(night.id, EntryIn(speaker="Ana", text="Eldrinax hoards " + "gold " * 300, start_s=6))
    heard = Provenance(source=Source.stated, confidence=0.4, session_id=night.id, entry_ids=[line.id])
    await ashes.graph.add_relationship(
        RelationshipIn.model_construct(source_id=eldrinax.id, type="hoards", value="new gold " * 600, provenance=heard)
    )
    record = await fake_discord.invoke("review", user_id=dm)
    await record.wait_for(lambda r: len(r.followups) == 1)
    card = record.followups[0]
    clicked = await fake_discord.click(card, card["components"][0]["components"][0]["custom_id"], user_id=dm)
    assert clicked.callback_type == 7, (fake_discord.rejected, clicked.texts())
    (embed,) = fake_discord.messages[int(card["id"])]["embeds"]
    assert fake_discord.messages[int(card["id"])]["components"] == []
    assert embed["footer"]["text"].startswith("accepted by dm · f")
    fields = {f["name"]: f["value"] for f in embed["fields"]}
    assert fields["Said"].startswith("Ana: “**Eldrinax** hoards gold gold")
    assert fields["Accepting it"].startswith("closed: Eldrinax — hoards: old gold")
    assert fake_discord.rejected == []


async def test_review_edit_renaming_an_entity_keeps_its_old_name_and_says_so(
    pending: list[str], ashes: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    """As /entity edit: the log says the name the bot heard, so it stays an alias unless the DM changes the
    aliases the form showed."""
    modal_id = await open_edit_modal(fake_discord, dm)
    values = {"name": "Mira Tolvanek", "type": "npc", "description": "a smith", "aliases": ""}
    done = await fake_discord.submit_modal(modal_id, values, user_id=dm)
    assert done.callback_type == 7
    assert done.texts()[0] == "Its old name **Mira** stays as an alias (`/entity edit` with `aliases: -` clears it)."
    assert (await ashes.graph.get_entity("Mira")).aliases == ["Mira"]


async def test_review_modal_bad_type_changes_nothing(
    pending: list[str], ashes: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    record = await fake_discord.invoke("review", user_id=dm)
    await record.wait_for(lambda r: len(r.followups) == 2)
    card = record.followups[0]
    opened = await fake_discord.click(card, card["components"][0]["components"][1]["custom_id"], user_id=dm)
    submitted = await fake_discord.submit_modal(
        opened.modal["custom_id"], {"name": "Mira", "type": "dragon", "description": "", "aliases": ""}
    )
    assert submitted.ephemeral and submitted.texts()[0].startswith("'dragon' is not an entity type")
    assert (await ashes.graph.get_entity_by_id(int(pending[0][1:]))).status == ReviewStatus.pending


async def test_review_edit_keeps_text_too_long_for_its_box(
    ashes: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    low = Provenance(source=Source.stated, confidence=0.4)
    description = "A smith. " * 300  # 2,700 characters: a campaign file or the LLM may write that much
    aliases = [f"Alias number {i} of the smith" for i in range(40)]
    mira = await ashes.graph.add_entity(
        EntityIn(
            name="Mira",
            type=EntityType.npc,
            description=description,
            aliases=aliases,
            status=ReviewStatus.pending,
            provenance=low,
        )
    )
    fact = await ashes.graph.add_relationship(
        # longer than a value may be now, as a database written before may hold it (unchecked here)
        RelationshipIn.model_construct(source_id=mira.id, type="knows", value="lore " * 240, provenance=low)
    )
    record = await fake_discord.invoke("review", user_id=dm)
    await record.wait_for(lambda r: len(r.followups) == 2)
    for card, keys in zip(
        record.followups, [("name", "type", "description", "aliases"), ("type", "target", "value")], strict=True
    ):
        opened = await fake_discord.click(card, card["components"][0]["components"][1]["custom_id"], user_id=dm)
        assert opened.modal is not None
        # the DM changes nothing and submits what the form showed
        values = {k: modal_field(opened.modal, k).get("value") or "" for k in keys}
        done = await fake_discord.submit_modal(opened.modal["custom_id"], values, user_id=dm)
        assert done.callback_type == 7, done.texts()
    kept = modal_field(opened.modal, "value")
    assert "value" not in kept and kept["placeholder"].startswith("1,200 characters, too long for this box: kept")
    after = await ashes.graph.get_entity_by_id(mira.id)
    assert (after.status, after.description, sorted(after.aliases)) == (
        ReviewStatus.accepted,
        mira.description,
        sorted(aliases),
    )
    fact_after = await ashes.graph.get_relationship(fact.id)
    assert (fact_after.status, fact_after.value) == (ReviewStatus.accepted, fact.value)


async def open_edit_modal(fake_discord: FakeDiscord, dm: FakeMember) -> str:
    """Open the Edit modal of the first card of a /review as the DM; its custom id."""
    record = await fake_discord.invoke("review", user_id=dm)
    await record.wait_for(lambda r: len(r.followups) >= 1)
    card = record.followups[0]
    opened = await fake_discord.click(card, card["components"][0]["components"][1]["custom_id"], user_id=dm)
    assert opened.modal is not None
    return opened.modal["custom_id"]


async def test_review_modal_submitted_by_a_player_is_refused(
    pending: list[str], ashes: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    modal_id = await open_edit_modal(fake_discord, dm)
    values = {"name": "ByPlayer", "type": "npc", "description": "", "aliases": ""}
    refused = await fake_discord.submit_modal(modal_id, values, user_id=player)
    assert refused.ephemeral and refused.texts() == ["This edit form is not yours."]
    mira = await ashes.graph.get_entity_by_id(int(pending[0][1:]))
    assert (mira.name, mira.status) == ("Mira", ReviewStatus.pending)
    # the refusal did not use the modal up: the DM who opened it can still submit it
    done = await fake_discord.submit_modal(modal_id, values | {"name": "Mira Tolvanek"}, user_id=dm)
    assert done.callback_type == 7
    assert (await ashes.graph.get_entity_by_id(int(pending[0][1:]))).name == "Mira Tolvanek"


async def test_review_modal_submitted_from_another_guild_is_refused(
    pending: list[str], ashes: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    modal_id = await open_edit_modal(fake_discord, dm)
    other = fake_discord.add_guild("Elsewhere")
    stranger = other.add_member("stranger", roles=[other.add_role("Admin", discord.Permissions(manage_guild=True))])
    values = {"name": "Pwned", "type": "npc", "description": "", "aliases": ""}
    forged = await fake_discord.submit_modal(modal_id, values, user_id=stranger, guild_id=other)
    assert forged.ephemeral and forged.texts() == ["This edit form is not yours."]
    assert (await ashes.graph.get_entity_by_id(int(pending[0][1:]))).name == "Mira"


async def test_review_modal_rechecks_dm_on_submit(
    pending: list[str], ashes: CampaignMemory, fake_discord: FakeDiscord, guild: FakeGuild, dm: FakeMember
) -> None:
    modal_id = await open_edit_modal(fake_discord, dm)
    dm.roles.clear()  # demoted while the modal was open
    values = {"name": "Demoted", "type": "npc", "description": "", "aliases": ""}
    refused = await fake_discord.submit_modal(modal_id, values, user_id=dm)
    assert refused.ephemeral and refused.texts() == ["Only the DM can review."]
    assert (await ashes.graph.get_entity_by_id(int(pending[0][1:]))).name == "Mira"


async def test_forms_wait_hours_for_their_submit(
    pending: list[str], bot: LorekeeperBot, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    edit_id = await open_edit_modal(fake_discord, dm)
    described = await fake_discord.invoke("entity describe", {"name": "Ironhold"}, user_id=dm)
    assert described.modal is not None
    # discord.py drops a form at its timeout and its submit then gets no answer: a DM typing long notes
    # would lose them
    open_forms = bot._connection._view_store._modals
    for custom_id in (edit_id, described.modal["custom_id"]):
        async with asyncio.timeout(5):  # stored by discord.py once Discord has answered the callback
            while custom_id not in open_forms:  # noqa: ASYNC110  (a dict of discord.py, no event to wait on)
                await asyncio.sleep(0.01)
        assert open_forms[custom_id].timeout >= 4 * 3600, custom_id


async def test_accepting_a_fact_says_what_it_closed(
    ashes: CampaignMemory, bot: LorekeeperBot, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    g = ashes.graph
    mira = await g.add_entity(EntityIn(name="Mira", type=EntityType.npc))
    for place in ("Ironhold", "Saltmere"):
        await g.add_entity(EntityIn(name=place, type=EntityType.place))
    await g.link("Mira", "lives_in", "Ironhold")
    heard = Provenance(source=Source.stated, confidence=0.4)
    moved = await g.add_relationship(
        RelationshipIn(
            source_id=mira.id, type="lives_in", target_id=(await g.get_entity("Saltmere")).id, provenance=heard
        )
    )
    record = await fake_discord.invoke("review", user_id=dm)
    await record.wait_for(lambda r: len(r.followups) == 1)
    card = record.followups[0]
    clicked = await fake_discord.click(card, card["components"][0]["components"][0]["custom_id"], user_id=dm)
    assert clicked.callback_type == 7
    assert "Accepting it: closed: Mira lives in Ironhold" in clicked.texts(), clicked.texts()
    assert (await g.get_relationship(moved.id)).status == ReviewStatus.accepted


async def test_two_dms_editing_the_same_item_get_distinct_modals(
    pending: list[str], ashes: CampaignMemory, fake_discord: FakeDiscord, guild: FakeGuild, dm: FakeMember
) -> None:
    other_dm = guild.add_member("co-dm", roles=list(dm.roles))
    first = await open_edit_modal(fake_discord, dm)
    second = await open_edit_modal(fake_discord, other_dm)
    assert first != second
    done = await fake_discord.submit_modal(first, {"name": "Mira Tolvanek", "type": "npc"}, user_id=dm)
    assert done.callback_type == 7
    assert (await ashes.graph.get_entity_by_id(int(pending[0][1:]))).name == "Mira Tolvanek"


async def test_review_button_works_after_restart_and_says_already_decided(
    pending: list[str],
    bot: LorekeeperBot,
    bot_runner: BotRunner,
    ashes: CampaignMemory,
    fake_discord: FakeDiscord,
    memory: Memory,
    dm: FakeMember,
    tmp_path: Path,
) -> None:
    record = await fake_discord.invoke("review", user_id=dm)
    await record.wait_for(lambda r: len(r.followups) == 2)
    card = record.followups[1]
    accept_id = card["components"][0]["components"][0]["custom_id"]

    await bot_runner.stop(bot)
    restarted = await bot_runner.start(make_bot(fake_discord, memory, tmp_path))  # new client, same database
    assert restarted is not bot

    clicked = await fake_discord.click(card, accept_id, user_id=dm)
    assert clicked.callback_type == 7
    fact = await ashes.graph.get_relationship(int(pending[1][1:]))
    assert fact.status == ReviewStatus.accepted
    # accepting the fact vouched for its pending endpoint too
    assert (await ashes.graph.get_entity_by_id(int(pending[0][1:]))).status == ReviewStatus.accepted

    # the same button on the other copy of the card (the first /review's message was not updated)
    stale = await fake_discord.invoke("review", user_id=dm)
    assert stale.texts() == ["Nothing to review."]
    old_entity_card = record.followups[0]
    again = await fake_discord.click(
        old_entity_card, old_entity_card["components"][0]["components"][2]["custom_id"], user_id=dm
    )
    # said in words under the card the DM reads, as the buttons' other replies are: not by the item's id
    assert again.ephemeral and again.texts() == ["Already accepted: new npc 'Mira': a smith."]


async def test_review_button_from_another_guild_is_refused(
    pending: list[str],
    bot: LorekeeperBot,
    bot_runner: BotRunner,
    ashes: CampaignMemory,
    fake_discord: FakeDiscord,
    memory: Memory,
    dm: FakeMember,
    tmp_path: Path,
) -> None:
    record = await fake_discord.invoke("review", user_id=dm)
    await record.wait_for(lambda r: len(r.followups) == 2)
    # a forged copy of the card in another guild: its custom id names guild A's campaign
    other = fake_discord.add_guild("Other table")
    await bot_runner.stop(bot)
    await bot_runner.start(make_bot(fake_discord, memory, tmp_path))
    forged = dict(record.followups[0], guild_id=str(other.id), channel_id=str(other.text_channel.id), id="1")
    fake_discord.messages[1] = forged
    clicked = await fake_discord.click(forged, forged["components"][0]["components"][0]["custom_id"])
    assert clicked.texts() == [f"no campaign with id {ashes.campaign_id}"]
    assert (await ashes.graph.get_entity_by_id(int(pending[0][1:]))).status == ReviewStatus.pending


async def test_review_channel_is_one_everyone_cannot_view(
    review_channel: FakeChannel,
    pending: list[str],
    bot: LorekeeperBot,
    memory: Memory,
    fake_discord: FakeDiscord,
    guild: FakeGuild,
    dm: FakeMember,
) -> None:
    """Review items show secret entities and facts: posted in #general, every player would read them."""
    general = guild.text_channel
    refused = await fake_discord.invoke("lorekeeper setup", {"review_channel": general}, user_id=dm)
    assert refused.texts() == [
        f"<#{general.id}> is open to everyone, and review items show what the DM keeps secret: choose a channel "
        "only the DM can view (a private channel the DM role can)."
    ]
    assert [c.settings for c in await memory.campaigns(guild.id).list()] == [{}]
    # one set before setup refused such channels (or opened since) gets nothing posted
    await memory.campaigns(guild.id).set_settings({"review_channel_id": general.id})
    cog, discord_guild = bot.get_cog("Review"), bot.get_guild(guild.id)
    assert cog is not None and discord_guild is not None
    assert await cog.post_new_pending(discord_guild) == 0 and fake_discord.channel_messages == []
    # and the DM hears of it at the next /review, not only in the bot's log
    told = (await fake_discord.invoke("review", user_id=dm)).texts()[0]
    assert told.endswith(
        f"\n⚠️ New items are not posted to <#{general.id}>: it is open to everyone, and they show secrets. Close it "
        "to them, or choose another channel with `/lorekeeper setup`."
    ), told
    # forgotten once the channel is no longer set (nor any other reason holds)
    await fake_discord.invoke("lorekeeper setup", {"clear": True}, user_id=dm)
    assert await cog.post_new_pending(discord_guild) == 0
    assert "⚠️" not in (await fake_discord.invoke("review", user_id=dm)).texts()[0]
    await fake_discord.invoke("lorekeeper setup", {"review_channel": review_channel}, user_id=dm)
    assert [c.settings for c in await memory.campaigns(guild.id).list()] == [{"review_channel_id": review_channel.id}]
    assert await cog.post_new_pending(discord_guild) == 2
    assert "⚠️" not in (await fake_discord.invoke("review", user_id=dm)).texts()[0]


@pytest.fixture
def table_channels(guild: FakeGuild, keeper: FakeMember) -> tuple[FakeRole, FakeChannel, FakeChannel]:
    """The players' role, a channel it may view, and one only the keeper's role may."""
    table = guild.add_role("Adventurers")
    for_the_table = guild.add_channel("table-talk", private=True, viewers=[table])
    return table, for_the_table, guild.add_channel("gm-notes", private=True, viewers=[keeper.roles[0]])


async def test_review_channel_is_one_only_the_dm_can_view(
    table_channels: tuple[FakeRole, FakeChannel, FakeChannel],  # first: in the guild the bot sees at connect
    keeper: FakeMember,
    guild: FakeGuild,
    pending: list[str],
    bot: LorekeeperBot,
    memory: Memory,
    fake_discord: FakeDiscord,
    dm: FakeMember,
) -> None:
    """A server where @everyone sees nothing and a members' role sees the channels: the players' role must not
    read the review items either. The DM role may see them, and so may whoever has Manage Server (a DM)."""
    table, for_the_table, gm_only = table_channels
    refused = await fake_discord.invoke("lorekeeper setup", {"review_channel": for_the_table}, user_id=dm)
    assert refused.texts() == [
        f"<#{for_the_table.id}> is open to <@&{table.id}>, who are not the DM, and review items show what the DM "
        "keeps secret: choose a channel only the DM can view (a private channel the DM role can)."
    ]
    # the DM role's view counts only once it is the DM role
    refused = await fake_discord.invoke("lorekeeper setup", {"review_channel": gm_only}, user_id=dm)
    assert f"is open to <@&{keeper.roles[0].id}>, who are not the DM" in refused.texts()[0]
    assert [c.settings for c in await memory.campaigns(guild.id).list()] == [{}]
    done = await fake_discord.invoke(
        "lorekeeper setup", {"dm_role": keeper.roles[0], "review_channel": gm_only}, user_id=dm
    )
    assert done.texts()[0].startswith("Set for every campaign"), done.texts()
    # another DM role would leave the keepers, no longer the DM, reading the channel set before
    moved = await fake_discord.invoke("lorekeeper setup", {"dm_role": table}, user_id=dm)
    assert moved.texts() == [
        f"<#{gm_only.id}> is open to <@&{keeper.roles[0].id}>, who are not the DM, and review items show what the "
        "DM keeps secret: choose a channel only the DM can view (a private channel the DM role can)."
    ]
    assert (await memory.campaigns(guild.id).active()).settings["dm_role_id"] == keeper.roles[0].id  # type: ignore[union-attr]
    # one set before setup refused it (or opened to the players since) gets nothing posted
    await memory.campaigns(guild.id).set_settings(
        {"dm_role_id": keeper.roles[0].id, "review_channel_id": for_the_table.id}
    )
    cog, discord_guild = bot.get_cog("Review"), bot.get_guild(guild.id)
    assert cog is not None and discord_guild is not None
    assert await cog.post_new_pending(discord_guild) == 0 and fake_discord.channel_messages == []


@pytest.fixture
def by_name(
    guild: FakeGuild, dm: FakeMember, keeper: FakeMember, player: FakeMember, fake_discord: FakeDiscord
) -> tuple[FakeChannel, FakeChannel]:
    """Private channels the DM opened to members by name: one to a player, one to the keeper, the bot and someone
    who has left the server."""
    gone = FakeMember(fake_discord.new_id(), "gone", guild)  # the overwrite outlives the member
    with_player = guild.add_channel("dm-and-player", private=True, members=[dm, player])
    bot_member = guild.member(fake_discord.app_id)
    return with_player, guild.add_channel("dm-notes", private=True, members=[dm, keeper, bot_member, gone])


async def test_review_channel_opened_to_a_player_by_name_is_refused(
    by_name: tuple[FakeChannel, FakeChannel],  # first: in the guild the bot sees at connect
    ashes: CampaignMemory,
    memory: Memory,
    fake_discord: FakeDiscord,
    guild: FakeGuild,
    dm: FakeMember,
    player: FakeMember,
) -> None:
    """Small servers open a private channel to a few members by name (a member overwrite), not by role."""
    with_player, _ = by_name
    refused = await fake_discord.invoke("lorekeeper setup", {"review_channel": with_player}, user_id=dm)
    assert refused.texts() == [
        f"<#{with_player.id}> is open to <@{player.id}>, who is not the DM, and review items show what the DM "
        "keeps secret: choose a channel only the DM can view (a private channel the DM role can)."
    ]
    assert [c.settings for c in await memory.campaigns(guild.id).list()] == [{}]


async def test_review_channel_opened_by_name_only_to_the_dm_is_accepted(
    by_name: tuple[FakeChannel, FakeChannel],
    keeper: FakeMember,
    pending: list[str],
    bot: LorekeeperBot,
    memory: Memory,
    fake_discord: FakeDiscord,
    guild: FakeGuild,
    dm: FakeMember,
) -> None:
    """Manage Server, the DM role and bots make a member added by name the DM's; one who has left sees nothing."""
    _, dm_notes = by_name
    refused = await fake_discord.invoke("lorekeeper setup", {"review_channel": dm_notes}, user_id=dm)
    assert f"is open to <@{keeper.id}>, who is not the DM" in refused.texts()[0]  # not the DM until the role is
    done = await fake_discord.invoke(
        "lorekeeper setup", {"dm_role": keeper.roles[0], "review_channel": dm_notes}, user_id=dm
    )
    assert done.texts()[0].startswith("Set for every campaign"), done.texts()
    assert (await memory.campaigns(guild.id).active()).settings["review_channel_id"] == dm_notes.id  # type: ignore[union-attr]
    cog, discord_guild = bot.get_cog("Review"), bot.get_guild(guild.id)
    assert cog is not None and discord_guild is not None
    assert await cog.post_new_pending(discord_guild) == 2


async def test_review_channel_a_player_is_added_to_after_setup_gets_nothing(
    review_channel: FakeChannel,
    pending: list[str],
    bot: LorekeeperBot,
    fake_discord: FakeDiscord,
    guild: FakeGuild,
    dm: FakeMember,
    player: FakeMember,
    caplog: pytest.LogCaptureFixture,
) -> None:
    done = await fake_discord.invoke("lorekeeper setup", {"review_channel": review_channel}, user_id=dm)
    assert done.texts()[0].startswith("Set for every campaign"), done.texts()
    review_channel.members.append(player)
    await fake_discord.dispatch("CHANNEL_UPDATE", review_channel.to_payload(guild.id))
    cog, discord_guild = bot.get_cog("Review"), bot.get_guild(guild.id)
    assert cog is not None and discord_guild is not None
    channel = discord_guild.get_channel(review_channel.id)
    assert isinstance(channel, discord.TextChannel)
    await until_true(lambda: len(channel.overwrites) == 2, 5)
    assert await cog.post_new_pending(discord_guild) == 0 and fake_discord.channel_messages == []
    assert f"it is open to <@{player.id}>, who is not the DM" in caplog.text


async def test_a_member_added_by_name_who_cannot_be_looked_up_keeps_the_channel_closed(
    by_name: tuple[FakeChannel, FakeChannel],
    ashes: CampaignMemory,
    memory: Memory,
    fake_discord: FakeDiscord,
    guild: FakeGuild,
    dm: FakeMember,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Not knowing whether a member is the DM is not knowing the secrets are safe: refused, and the log says why."""
    fake_discord.member_lookups_forbidden = True
    _, dm_notes = by_name
    refused = await fake_discord.invoke("lorekeeper setup", {"review_channel": dm_notes}, user_id=dm)
    assert refused.texts() == [
        f"<#{dm_notes.id}> is open to <@{dm.id}>, who could not be looked up to tell whether they are the DM, and "
        "review items show what the DM keeps secret: choose a channel only the DM can view (a private channel the "
        "DM role can)."
    ]
    assert [c.settings for c in await memory.campaigns(guild.id).list()] == [{}]
    assert f"member {dm.id}, added by name, could not be looked up (403 Forbidden" in caplog.text


async def test_review_channel_gets_new_items_once(
    review_channel: FakeChannel,  # first, so the channel exists when the bot connects
    pending: list[str],
    bot: LorekeeperBot,
    fake_discord: FakeDiscord,
    guild: FakeGuild,
    dm: FakeMember,
) -> None:
    setup = await fake_discord.invoke("lorekeeper setup", {"review_channel": review_channel}, user_id=dm)
    assert setup.texts() == [
        f"Set for every campaign of this server — DM: members with Manage Server; review items: <#{review_channel.id}>."
    ]
    cog = bot.get_cog("Review")
    discord_guild = bot.get_guild(guild.id)
    assert cog is not None and discord_guild is not None
    assert await cog.post_new_pending(discord_guild) == 2
    assert await cog.post_new_pending(discord_guild) == 0  # the cursor in the campaign settings moved on
    posted = fake_discord.channel_messages
    assert [m["channel_id"] for m in posted] == [str(review_channel.id)] * 2
    clicked = await fake_discord.click(posted[0], posted[0]["components"][0]["components"][0]["custom_id"], user_id=dm)
    assert clicked.callback_type == 7


async def test_review_channel_gets_items_as_the_database_announces_them(
    review_channel: FakeChannel,
    ashes: CampaignMemory,
    bot: LorekeeperBot,
    fake_discord: FakeDiscord,
    dm: FakeMember,
) -> None:
    await fake_discord.invoke("lorekeeper setup", {"review_channel": review_channel}, user_id=dm)
    cog = bot.get_cog("Review")
    assert cog is not None and cog.poll_seconds >= 300  # the poll is not what posts them
    low = Provenance(source=Source.stated, confidence=0.4, session_id=None)
    names = [f"Stranger {n}" for n in range(12)]  # more than one batch, filed by one transaction
    async with ashes.transaction() as tx:
        for name in names:
            await tx.graph.add_entity(
                EntityIn(name=name, type=EntityType.npc, status=ReviewStatus.pending, provenance=low)
            )
    async with asyncio.timeout(10):
        posted = await fake_discord.wait_for_channel_messages(len(names))
    titles = [m["embeds"][0]["title"] for m in posted]
    assert titles == ["New entity"] * len(names)
    # each once: a second post would come from a post the cog still has scheduled or running (its listener
    # runs until the bot stops)
    await until_true(
        lambda: not cog._due and all(t.done() for t in cog._tasks if t.get_coro().__name__ != "_listen"), 10
    )
    assert len(fake_discord.channel_messages) == len(names)


async def test_review_channel_gets_the_items_of_a_campaign_not_active_each_card_naming_its_campaign(
    review_channel: FakeChannel,
    ashes: CampaignMemory,
    bot: LorekeeperBot,
    fake_discord: FakeDiscord,
    memory: Memory,
    guild: FakeGuild,
    dm: FakeMember,
) -> None:
    """A session's jobs may finish after the DM switched to another campaign: what they file waits in its own
    campaign's queue, and its cards are posted all the same (they went nowhere), each saying which campaign it is
    of; its buttons decide it there."""
    await fake_discord.invoke("campaign create", {"name": "Frostmaw"}, user_id=dm)
    await fake_discord.invoke("lorekeeper setup", {"review_channel": review_channel}, user_id=dm)
    await fake_discord.invoke("campaign switch", {"name": "Frostmaw"}, user_id=dm)
    frostmaw = await active(memory, guild)
    low = Provenance(source=Source.stated, confidence=0.4, session_id=None)
    for mem, name in [(ashes, "Mira"), (frostmaw, "Hrolf")]:
        await mem.graph.add_entity(
            EntityIn(name=name, type=EntityType.npc, status=ReviewStatus.pending, provenance=low)
        )
    async with asyncio.timeout(10):
        posted = await fake_discord.wait_for_channel_messages(2)
    cards = {m["embeds"][0]["description"]: m for m in posted}
    assert sorted(cards) == ["new npc 'Hrolf'", "new npc 'Mira'"]
    assert cards["new npc 'Mira'"]["content"] == "Campaign: **Ashes**"
    assert cards["new npc 'Hrolf'"]["content"] == "Campaign: **Frostmaw**"
    mira = cards["new npc 'Mira'"]
    clicked = await fake_discord.click(mira, mira["components"][0]["components"][0]["custom_id"], user_id=dm)
    assert clicked.callback_type == 7
    decided = fake_discord.messages[int(mira["id"])]
    assert decided["content"] == "Campaign: **Ashes**"
    assert decided["embeds"][0]["footer"]["text"] == f"accepted by dm · e{(await ashes.graph.get_entity('Mira')).id}"
    assert (await ashes.graph.get_entity("Mira")).status == ReviewStatus.accepted


# ---------------------------------------------------------------------------------------------- setup


@pytest.fixture
def keeper(guild: FakeGuild) -> FakeMember:
    """A member whose role has no permissions at all: only /lorekeeper setup can make them the DM."""
    return guild.add_member("keeper", roles=[guild.add_role("Keeper")])


async def test_confirm_asks_again_whether_the_clicker_is_still_the_dm(
    keeper: FakeMember, ashes: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    await fake_discord.invoke("lorekeeper setup", {"dm_role": keeper.roles[0]}, user_id=dm)
    await ashes.graph.add_entity(EntityIn(name="Ironhold", type=EntityType.place))
    asked = await fake_discord.invoke("entity remove", {"name": "Ironhold"}, user_id=keeper)
    assert asked.original is not None and asked.texts()[0].startswith("Remove **Ironhold**")
    keeper.roles.clear()  # the server's admin takes the DM role away while the question is open
    confirm_id = asked.original["components"][0]["components"][0]["custom_id"]
    refused = await fake_discord.click(asked.original, confirm_id, user_id=keeper)
    assert refused.texts() == ["Only the DM can do that."]
    assert await ashes.graph.find_entity("Ironhold") is not None


async def test_setup_dm_role_makes_its_members_dm(
    keeper: FakeMember,  # first, so the role is in the guild the bot sees at connect
    ashes: CampaignMemory,
    fake_discord: FakeDiscord,
    dm: FakeMember,
    player: FakeMember,
) -> None:
    gm_role = keeper.roles[0]
    before = await fake_discord.invoke("entity add", {"name": "Borin", "type": "npc"}, user_id=keeper)
    assert before.texts() == ["Only the DM can do that."]
    not_admin = await fake_discord.invoke("lorekeeper setup", {"dm_role": gm_role}, user_id=keeper)
    assert not_admin.texts() == ["Only members with Manage Server can set Lorekeeper up."]
    done = await fake_discord.invoke("lorekeeper setup", {"dm_role": gm_role}, user_id=dm)
    assert done.texts() == [
        f"Set for every campaign of this server — DM: <@&{gm_role.id}> (and Manage Server); "
        "review items: only through /review."
    ]
    after = await fake_discord.invoke("entity add", {"name": "Borin", "type": "npc"}, user_id=keeper)
    assert after.texts()[0] == "Added npc **Borin**."
    still_not = await fake_discord.invoke("entity add", {"name": "Orrin", "type": "npc"}, user_id=player)
    assert still_not.texts() == ["Only the DM can do that."]


async def test_everyone_is_never_the_dm_role(
    ashes: CampaignMemory, memory: Memory, fake_discord: FakeDiscord, guild: FakeGuild, dm: FakeMember, player
) -> None:
    """@everyone is every member's role: as the DM role, every player would read the secrets and run /review."""
    refused = await fake_discord.invoke("lorekeeper setup", {"dm_role": guild.everyone}, user_id=dm)
    assert refused.texts() == [
        "@everyone is every member's role: as the DM role it would show every player the secrets and let them run "
        "the DM's commands. Choose the role only the DM holds."
    ]
    assert [c.settings for c in await memory.campaigns(guild.id).list()] == [{}]
    # one set before setup refused it makes nobody the DM
    await memory.campaigns(guild.id).set_settings({"dm_role_id": guild.id})
    for command, options in [("entity add", {"name": "Borin", "type": "npc"}), ("review", {})]:
        as_player = await fake_discord.invoke(command, options, user_id=player)
        assert as_player.texts() == ["Only the DM can do that."], command
    added = await fake_discord.invoke("entity add", {"name": "Borin", "type": "npc"}, user_id=dm)
    assert added.texts()[0] == "Added npc **Borin**."


async def test_setup_is_the_servers_and_survives_switching_campaigns(
    keeper: FakeMember,  # first, so the role and channel are in the guild the bot sees at connect
    review_channel: FakeChannel,
    ashes: CampaignMemory,
    fake_discord: FakeDiscord,
    memory: Memory,
    guild: FakeGuild,
    dm: FakeMember,
) -> None:
    await fake_discord.invoke("campaign create", {"name": "Frostmaw"}, user_id=dm)  # before the setup
    await fake_discord.invoke(
        "lorekeeper setup", {"dm_role": keeper.roles[0], "review_channel": review_channel}, user_id=dm
    )
    await fake_discord.invoke("campaign switch", {"name": "Frostmaw"}, user_id=dm)
    added = await fake_discord.invoke("entity add", {"name": "Borin", "type": "npc"}, user_id=keeper)
    assert added.texts()[0] == "Added npc **Borin**."
    shown = await fake_discord.invoke("lorekeeper setup", user_id=dm)
    assert shown.texts() == [
        f"This server — DM: <@&{keeper.roles[0].id}> (and Manage Server); review items: <#{review_channel.id}>."
    ]

    cleared = await fake_discord.invoke("lorekeeper setup", {"clear": True}, user_id=dm)
    assert cleared.texts() == [
        "Set for every campaign of this server — DM: members with Manage Server; review items: only through /review."
    ]
    assert [c.settings for c in await memory.campaigns(guild.id).list()] == [{}, {}]


async def test_a_campaign_created_by_the_dm_role_keeps_the_role_and_review_channel(
    keeper: FakeMember,  # first, so the role and channel are in the guild the bot sees at connect
    review_channel: FakeChannel,
    ashes: CampaignMemory,
    fake_discord: FakeDiscord,
    memory: Memory,
    guild: FakeGuild,
    dm: FakeMember,
    player: FakeMember,
) -> None:
    setup = {"dm_role": keeper.roles[0], "review_channel": review_channel}
    await fake_discord.invoke("lorekeeper setup", setup, user_id=dm)
    created = await fake_discord.invoke("campaign create", {"name": "Frostmaw"}, user_id=keeper)
    assert created.texts()[0].startswith("Created campaign **Frostmaw**")
    refused = await fake_discord.invoke("campaign switch", {"name": "Frostmaw"}, user_id=player)
    assert refused.texts() == ["Only the DM can do that."]
    switched = await fake_discord.invoke("campaign switch", {"name": "Frostmaw"}, user_id=keeper)
    assert switched.texts() == ["Active campaign: **Frostmaw**."]
    frostmaw = await memory.campaigns(guild.id).get("Frostmaw")
    assert frostmaw.settings == {"dm_role_id": keeper.roles[0].id, "review_channel_id": review_channel.id}
    asked = await fake_discord.invoke("campaign delete", {"name": "Frostmaw"}, user_id=keeper)
    assert asked.texts()[0].startswith("Delete **Frostmaw**"), asked.texts()


async def test_owner_sync_command(bot: LorekeeperBot, ashes, fake_discord: FakeDiscord, guild: FakeGuild, dm) -> None:
    refused = await fake_discord.invoke("lorekeeper sync", user_id=dm)
    assert refused.texts() == ["Only the bot's owner can sync commands."]
    owner = guild.add_member("owner", member_id=fake_discord.owner_id)
    del owner
    # the owner is not in the guild cache of the running client; add them, as a join would
    bot.get_guild(guild.id)
    synced = await fake_discord.invoke("lorekeeper sync", {"scope": "guild"}, user_id=fake_discord.owner_id)
    assert synced.texts() == ["Synced 7 commands (guild)."]
    assert fake_discord.sync_calls[-1][0] == guild.id


# ---------------------------------------------------------------------------------------------- recall / recap


@pytest.fixture
async def session_log(ashes: CampaignMemory) -> CampaignMemory:
    eld = await ashes.graph.add_entity(EntityIn(name="Eldrinax", type=EntityType.npc, description="A bronze dragon"))
    lake = await ashes.graph.add_entity(EntityIn(name="Lake Vhaldris", type=EntityType.place))
    holt = await ashes.graph.add_entity(EntityIn(name="Vaskerrin Holt", type=EntityType.npc))
    await ashes.graph.add_relationship(RelationshipIn(source_id=eld.id, type="sleeps_under", target_id=lake.id))
    await ashes.graph.add_relationship(
        RelationshipIn(source_id=holt.id, type="hunts", target_id=eld.id, visibility=Visibility.secret)
    )
    one = await ashes.log.start_session("The Drowned Road")
    await ashes.log.write_many(
        one.id,
        [
            EntryIn(speaker="DM", text="The lake is still. Something vast sleeps beneath it.", start_s=12.0, ref="l1"),
            EntryIn(speaker="Ana", text="I think Eldrinax is the dragon under the lake.", start_s=75.5, ref="l2"),
            EntryIn(speaker="Ben", text="Let's buy rope in Ironhold first.", start_s=130.0, ref="l3"),
        ],
    )
    await ashes.log.end_session(one.id)
    await ashes.log.set_summary(one.id, "The party reached Lake Vhaldris and guessed Eldrinax sleeps there.")
    await ashes.log.start_session("Into the Deep")
    return ashes


async def test_recall_cites_session_speaker_time_and_hides_secrets(
    session_log: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    as_player = await fake_discord.invoke("recall", {"query": "Eldrinax"}, user_id=player)
    text = "\n".join(as_player.texts())
    assert as_player.ephemeral
    assert "> **Ana: I think Eldrinax is the dragon under the lake.**\n" in text  # the answer whole, in bold
    assert f"— **Ana**, The Drowned Road, {today()} at 1:15" in text  # who said it and when
    assert "Eldrinax sleeps under Lake Vhaldris" in text and "hunts" not in text
    as_dm = await fake_discord.invoke("recall", {"query": "Eldrinax"}, user_id=dm)
    assert "Vaskerrin Holt hunts Eldrinax 🔒" in "\n".join(as_dm.texts())
    nothing = await fake_discord.invoke("recall", {"query": "zeppelin"}, user_id=player)
    assert nothing.texts() == ["Recall: zeppelin", "Nothing in this campaign's sessions matches that."]


async def test_a_players_recall_of_a_secret_name_in_another_form_finds_what_a_made_up_word_finds(
    session_log: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    """The search stems the lines as said: "/recall Zanthorises" (or "exiled", of a hidden name) found the lines
    that said the secret name, where a made-up word found nothing."""
    secret = await session_log.graph.add_entity(
        EntityIn(name="Zanthoris", type=EntityType.npc, visibility=Visibility.secret)
    )
    await session_log.graph.hide_names(secret.id, ["Zanthoris the Exile"])
    (deep,) = [s for s in await session_log.log.sessions() if s.title == "Into the Deep"]
    await session_log.log.write_many(
        deep.id,
        [
            EntryIn(speaker="DM", text="Zanthoris floats beside you.", start_s=10.0),
            EntryIn(speaker="Ben", text="They used to call him Zanthoris the Exile.", start_s=20.0),
        ],
    )
    assert "Recall: Zanthorises" in (await fake_discord.invoke("recall", {"query": "Zanthorises"}, user_id=dm)).texts()
    for guess in ("zeppelins", "Zanthorises", "exiled"):
        asked = await fake_discord.invoke("recall", {"query": guess}, user_id=player)
        assert asked.texts() == [f"Recall: {guess}", "Nothing in this campaign's sessions matches that."], guess


async def test_recall_of_what_happened_in_a_session_shows_its_recap_first(
    session_log: CampaignMemory, fake_discord: FakeDiscord, player: FakeMember, dm: FakeMember
) -> None:
    """ "What happened last session?" answered with lines saying "happened"; the session's recap answers it, alone."""
    for query, asker in [(q, player) for q in ("what happened last session?", "recap session 1")] + [
        (q, dm)
        for q in ("last session", "session 1")  # a session named alone asks for its recap
    ]:
        asked = await fake_discord.invoke("recall", {"query": query}, user_id=asker)
        assert asked.texts() == [
            "Recap: The Drowned Road",
            "The party reached Lake Vhaldris and guessed Eldrinax sleeps there.",
        ]
    first = await fake_discord.invoke("recall", {"query": "what happened in the first session"}, user_id=dm)
    assert first.texts()[0] == "Recap: The Drowned Road" and len(first.texts()) == 2
    missing = await fake_discord.invoke("recall", {"query": "what happened in session 9"}, user_id=dm)
    assert "no session 9" in missing.texts()[0] and "'The Drowned Road'" in missing.texts()[0]
    running = await fake_discord.invoke("recall", {"query": "what happened in session 2"}, user_id=player)
    assert running.texts()[:2] == [
        "Recap: Into the Deep",
        "*This session is still running; its recap is written when it ends.*",
    ]
    # a question about something in the session is answered by its lines
    asked = await fake_discord.invoke("recall", {"query": "what happened to the lake last session?"}, user_id=player)
    assert asked.texts()[0] == "Recall: what happened to the lake last session?"


async def test_recall_of_what_a_character_said_reads_its_players_lines(
    session_log: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    """Lines are signed by the player ("Ana"); the table asks about the character ("Thess")."""
    options = {"name": "Thessaly Vorn", "type": "player", "aliases": "Thess", "attributes": "played_by=ana"}
    assert (await fake_discord.invoke("entity add", options, user_id=dm)).texts()[0].startswith("Added")
    asked = await fake_discord.invoke("recall", {"query": "what did Thess say about the lake?"}, user_id=player)
    assert asked.texts()[-1] == (
        "> DM: The lake is still. Something vast sleeps beneath it.\n"  # context only: the DM is not Thess
        "> **Ana (Thessaly Vorn): I think Eldrinax is the dragon under the lake.**\n"
        "> Ben: Let's buy rope in Ironhold first.\n"
        f"— **Ana (Thessaly Vorn)**, The Drowned Road, {today()} at 1:15"
    )


async def test_recall_shows_what_the_graph_knows_now_of_each_entity_named_before_the_passages(
    ashes: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    """A DM's walkthrough: "who has the Ember Key now" put Night 1's "Thrennick has the Ember Key" first, and
    nothing said that Pip has had it since."""
    g = ashes.graph
    key = await g.add_entity(EntityIn(name="Ember Key", type=EntityType.item, description="Opens a vault"))
    thrennick = await g.add_entity(EntityIn(name="Thrennick", type=EntityType.npc))
    pip = await g.add_entity(EntityIn(name="Pip", type=EntityType.npc))
    holt = await g.add_entity(EntityIn(name="Vaskerrin Holt", type=EntityType.npc, visibility=Visibility.secret))
    for owner in (thrennick, pip):  # Pip's closes Thrennick's
        await g.add_relationship(RelationshipIn(source_id=key.id, type="owned_by", target_id=owner.id))
    await g.add_relationship(
        RelationshipIn(source_id=pip.id, type="works_for", target_id=holt.id, visibility=Visibility.secret)
    )
    night = await ashes.log.start_session("Night 1")
    await ashes.log.write_many(night.id, [EntryIn(speaker="DM", text="Thrennick has the Ember Key.", start_s=5.0)])

    asked = await fake_discord.invoke("recall", {"query": "who has the Ember Key now?"}, user_id=player)
    # the facts come first: an embed of their own, as Discord shows a description above the fields
    assert asked.texts() == [
        "Recall: who has the Ember Key now?",
        "Ember Key: Opens a vault\nEmber Key is owned by Pip",
        f"> **DM: Thrennick has the Ember Key.**\n— **DM**, Night 1, {today()} at 0:05",
    ]
    question = {"query": "Does Pip work for Vaskerrin Holt?"}
    as_player = await fake_discord.invoke("recall", question, user_id=player)
    # a secret entity and a secret fact are as good as unknown to players
    assert as_player.texts() == [
        "Recall: Does Pip work for Vaskerrin Holt?",
        "Pip: Ember Key is owned by Pip",
    ]
    as_dm = await fake_discord.invoke("recall", question, user_id=dm)
    assert as_dm.texts()[1:] == [
        "Pip: Ember Key is owned by Pip\nPip works for Vaskerrin Holt 🔒",
        "Vaskerrin Holt 🔒: Pip works for Vaskerrin Holt 🔒",
    ]


async def test_recall_help_says_it_finds_any_of_the_words(
    session_log: CampaignMemory, fake_discord: FakeDiscord, player: FakeMember
) -> None:
    (recall,) = [c for c in fake_discord.sync_calls[-1][1] if c["name"] == "recall"]
    assert recall["options"][0]["description"].startswith("Words or a question: passages with any of its words")
    either = await fake_discord.invoke("recall", {"query": '"zeppelin Eldrinax" -dragon'}, user_id=player)
    assert "Ana: I think Eldrinax is the dragon under the lake." in "\n".join(either.texts())


async def test_recall_is_refused_to_one_user_asking_too_fast(
    ashes: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    """Each /recall embeds and searches: one user in a loop would hold the bot for everyone."""
    for n in range(4):
        asked = await fake_discord.invoke("recall", {"query": f"zeppelin {n}"}, user_id=player)
        assert asked.texts()[1] == "Nothing in this campaign's sessions matches that."
        # a campaign without a line yet says how lines get there, under the answer
        (embed,) = asked.messages[0]["embeds"]
        assert embed["footer"]["text"].startswith("'Ashes' has no lines yet: import a transcript with")
    refused = await fake_discord.invoke("recall", {"query": "zeppelin"}, user_id=player)
    assert refused.ephemeral and len(refused.texts()) == 1
    said = refused.texts()[0]
    assert said.startswith("Slow down: 4 of these every 30 seconds at most. Try again in "), said
    assert 0 < int(said.removeprefix("Slow down: 4 of these every 30 seconds at most. Try again in ")[:-2]) <= 30
    # the others at the table are not held up by one player
    other = await fake_discord.invoke("recall", {"query": "zeppelin"}, user_id=dm)
    assert other.texts()[0] == "Recall: zeppelin"


async def test_recap_latest_named_and_unknown(session_log: CampaignMemory, fake_discord: FakeDiscord, player) -> None:
    latest = await fake_discord.invoke("recap", user_id=player)
    assert latest.texts()[:2] == [
        "Recap: Into the Deep",
        "*This session is still running; its recap is written when it ends.*",
    ]
    named = await fake_discord.invoke("recap", {"session": "the drowned road"}, user_id=player)
    assert named.texts()[1] == "The party reached Lake Vhaldris and guessed Eldrinax sleeps there."
    choices = await fake_discord.autocomplete("recap", {"session": "drown"}, "session", user_id=player)
    assert [c["name"] for c in choices] == ["The Drowned Road"]
    unknown = await fake_discord.invoke("recap", {"session": "Nope"}, user_id=player)
    assert unknown.texts() == ["No session titled 'Nope'; recent ones: 'The Drowned Road', 'Into the Deep'."]


async def test_players_never_read_a_secret_name(
    ashes: CampaignMemory, memory: Memory, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    """The table may say a name the DM keeps secret; the recap, recall and entity cards players read hide it."""
    await ashes.graph.add_entity(
        EntityIn(name="Eldrinax", type=EntityType.npc, visibility=Visibility.secret, aliases=["the old beggar"])
    )
    await ashes.graph.add_entity(EntityIn(name="Ironhold", type=EntityType.place, description="Eldrinax's old home"))
    await ashes.graph.add_entity(EntityIn(name="Borin", type=EntityType.npc))
    session = await ashes.log.start_session("The Gates")
    said = [
        ("DM", "You reach the gates of Ironhold as the sun goes down over the mountains."),
        ("DM", "Unseen by anyone, Eldrinax watches the party from the shadows of Ironhold tonight."),
        ("Ana", "I ask Borin about the old beggar we saw by the gates of Ironhold."),
        ("DM", "Borin shrugs: the old beggar comes and goes by the gates."),  # the DM's: Borin took part
    ]
    await ashes.log.write_many(
        session.id, [EntryIn(speaker=s, text=t, start_s=10.0 * i, ref=f"l{i}") for i, (s, t) in enumerate(said)]
    )
    await ashes.log.end_session(session.id)
    await jobs.summarize_session(
        jobs.JobContext(memory=memory, embedder=None, embedding_model="-"), ashes.campaign_id, session.id
    )  # type: ignore[arg-type]  # the offline recap needs neither

    async def read(user: FakeMember, command: str, options: dict[str, str] | None = None) -> str:
        return "\n".join((await fake_discord.invoke(command, options or {}, user_id=user)).texts())

    recap = await read(player, "recap")
    assert "[secret] watches the party" in recap and "Eldrinax" not in recap
    assert "the old beggar" in recap  # the alias is what players know it by
    assert "Involved: Ironhold, Borin" in recap or "Involved: Borin, Ironhold" in recap
    for command, options in [
        ("recall", {"query": "who watches the party"}),
        ("entity show", {"name": "Session: The Gates"}),  # the recap is the session's description
        ("entity show", {"name": "Ironhold"}),  # the description and the last mention
        ("entity list", {}),
    ]:
        shown = await read(player, command, options)
        assert "[secret]" in shown and "Eldrinax" not in shown, (command, shown)
    assert "Eldrinax watches the party" in await read(dm, "recap")
    assert "Eldrinax's old home" in await read(dm, "entity show", {"name": "Ironhold"})

    # a name made secret after the recap was written goes from it too
    await fake_discord.invoke("entity edit", {"name": "Borin", "secret": True}, user_id=dm)
    recap = await read(player, "recap")
    assert "Borin" not in recap and "Involved: Ironhold" in recap


@pytest.fixture
async def unmasked(ashes: CampaignMemory, memory: Memory) -> CampaignMemory:
    """A session titled after the evening's reveal, a secret NPC (a DM's walkthrough: the title reached players
    everywhere), recapped: the recap names the session's event entity after the title."""
    await ashes.graph.add_entity(EntityIn(name="Queen Mab", type=EntityType.npc, visibility=Visibility.secret))
    await ashes.graph.add_entity(EntityIn(name="Eldrinax", type=EntityType.npc))
    night = await ashes.log.start_session("Queen Mab unmasked")
    await ashes.log.write_many(night.id, [EntryIn(speaker="DM", text="Eldrinax wakes beneath the hill.", start_s=3.0)])
    await ashes.log.end_session(night.id)
    await jobs.summarize_session(
        jobs.JobContext(memory=memory, embedder=None, embedding_model="-"), ashes.campaign_id, night.id
    )  # type: ignore[arg-type]  # the offline recap needs neither
    return ashes


async def read(fake_discord: FakeDiscord, user: FakeMember, command: str, options: dict | None = None) -> str:
    return "\n".join((await fake_discord.invoke(command, options or {}, user_id=user)).texts())


async def test_players_read_session_titles_with_secret_names_masked_in_lists_and_recaps(
    unmasked: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    listed = await read(fake_discord, player, "session list")
    assert "**[secret] unmasked** — " in listed and "Mab" not in listed
    assert "**Queen Mab unmasked** — " in await read(fake_discord, dm, "session list")

    recap = await read(fake_discord, player, "recap")
    assert recap.startswith("Recap: [secret] unmasked\n") and "Mab" not in recap
    assert (await read(fake_discord, dm, "recap")).startswith("Recap: Queen Mab unmasked\n")
    # the autocomplete offers the title as the player reads it, and picking it finds the session
    offered = await fake_discord.autocomplete("recap", {"session": ""}, "session", user_id=player)
    assert [(c["name"], c["value"]) for c in offered] == [("[secret] unmasked", "[secret] unmasked")]
    picked = await read(fake_discord, player, "recap", {"session": "[secret] unmasked"})
    assert picked.startswith("Recap: [secret] unmasked\nDM: Eldrinax wakes beneath the hill."), picked
    as_dm = await fake_discord.autocomplete("recap", {"session": ""}, "session", user_id=dm)
    assert [c["name"] for c in as_dm] == ["Queen Mab unmasked"]
    unknown = await read(fake_discord, player, "recap", {"session": "nope"})
    assert unknown == "No session titled 'nope'; recent ones: '[secret] unmasked'."
    assert "'Queen Mab unmasked'" in await read(fake_discord, dm, "recap", {"session": "nope"})


async def test_players_read_the_session_of_a_recalled_passage_with_secret_names_masked(
    unmasked: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    recalled = await read(fake_discord, player, "recall", {"query": "wakes beneath the hill"})
    assert f"— **DM**, [secret] unmasked, {today()} at 0:03" in recalled and "Mab" not in recalled
    assert f"— **DM**, Queen Mab unmasked, {today()} at 0:03" in await read(
        fake_discord, dm, "recall", {"query": "hill"}
    )


async def test_players_read_a_sessions_event_entity_and_last_mention_with_secret_names_masked(
    unmasked: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    card = await read(fake_discord, player, "entity show", {"name": "Eldrinax"})
    assert f"Last mentioned: [secret] unmasked, {today()} at 0:03, DM: " in card and "Mab" not in card
    assert "Took part in 1 session: per their recaps: [secret] unmasked" in card
    dm_card = await read(fake_discord, dm, "entity show", {"name": "Eldrinax"})
    assert f"Last mentioned: Queen Mab unmasked, {today()} at 0:03, DM: " in dm_card

    listed = await read(fake_discord, player, "entity list", {"type": "event"})
    assert "**Session: [secret] unmasked** · event" in listed and "Mab" not in listed
    assert "**Session: Queen Mab unmasked** · event" in await read(fake_discord, dm, "entity list", {"type": "event"})
    offered = await fake_discord.autocomplete("entity show", {"name": "sess"}, "name", user_id=player)
    assert [c["name"] for c in offered] == ["Session: [secret] unmasked"]
    # picked from the autocomplete, the masked name finds the card, titled as the player reads it
    event = await read(fake_discord, player, "entity show", {"name": "Session: [secret] unmasked"})
    assert event.startswith("Session: [secret] unmasked\n") and "Mab" not in event, event
    typo = await read(fake_discord, player, "entity show", {"name": "Session: [secret] unmask"})
    assert (
        typo
        == "no entity named 'Session: [secret] unmask' in this campaign (did you mean 'Session: [secret] unmasked'?)"
    )
    assert (await read(fake_discord, dm, "entity show", {"name": "Session: Queen Mab unmasked"})).startswith(
        "Session: Queen Mab unmasked\n"
    )
    # a player who guesses the secret in a title is not told it is right: neither the card nor the recap opens
    guessed = await read(fake_discord, player, "entity show", {"name": "Session: Queen Mab unmasked"})
    assert guessed.startswith("no entity named 'Session: Queen Mab unmasked'"), guessed
    guessed = await read(fake_discord, player, "recap", {"session": "Queen Mab unmasked"})
    assert guessed.startswith("No session titled 'Queen Mab unmasked'"), guessed


async def test_a_recapped_title_leaves_a_word_of_a_secret_name_masked(
    ashes: CampaignMemory, memory: Memory, fake_discord: FakeDiscord, player: FakeMember
) -> None:
    """ "Vaskerrin" alone names the secret Vaskerrin Holt, so players read it masked, unless a public name holds
    it: the recap's event entity, named after the title "Vaskerrin's betrayal", did, and unmasked it everywhere."""
    await ashes.graph.add_entity(EntityIn(name="Vaskerrin Holt", type=EntityType.npc, visibility=Visibility.secret))
    night = await ashes.log.start_session("Vaskerrin's betrayal")
    await ashes.log.write_many(night.id, [EntryIn(speaker="DM", text="Vaskerrin smiles at the party.", start_s=3.0)])
    await ashes.log.end_session(night.id)
    await jobs.summarize_session(
        jobs.JobContext(memory=memory, embedder=None, embedding_model="-"), ashes.campaign_id, night.id
    )  # type: ignore[arg-type]  # the offline recap needs neither
    assert await ashes.graph.find_entity("Session: Vaskerrin's betrayal") is not None

    assert "**[secret]'s betrayal** — " in await read(fake_discord, player, "session list")
    recalled = await read(fake_discord, player, "recall", {"query": "smiles at the party"})
    assert f"> **DM: [secret] smiles at the party.**\n— **DM**, [secret]'s betrayal, {today()} at 0:03" in recalled, (
        recalled
    )
    assert "Vaskerrin" not in recalled
    listed = await read(fake_discord, player, "entity list", {"type": "event"})
    assert "**Session: [secret]'s betrayal** · event" in listed and "Vaskerrin" not in listed


# ---------------------------------------------------------------------------------------------- transcript


async def test_transcript_of_review_accept(
    pending: list[str], fake_discord: FakeDiscord, dm: FakeMember, capsys: pytest.CaptureFixture[str]
) -> None:
    start = len(fake_discord.transcript)
    record = await fake_discord.invoke("review", user_id=dm)
    await record.wait_for(lambda r: len(r.followups) == 2)
    card = record.followups[0]
    await fake_discord.click(card, card["components"][0]["components"][0]["custom_id"], user_id=dm)
    text = fake_discord.format_transcript(start)
    with capsys.disabled():
        print("\n" + text)
    assert "INTERACTION_CREATE type=2 /review  by 'dm'" in text
    assert "embed 'New entity'" in text and "lk:review:accept:" in text
    assert "update message, embed 'New entity" in text
    assert fake_discord.unhandled == [] and fake_discord.rejected == []


async def test_every_option_says_what_it_is_for(bot: LorekeeperBot) -> None:
    """Whole: discord.py cuts a description over Discord's 100 characters to 100 ending in "…", silently (the
    "+" rule of /entity edit not_heard_as was lost so)."""
    undescribed = [
        f"/{command.qualified_name} {option.name}"
        for command in bot.tree.walk_commands()
        if isinstance(command, app_commands.Command)
        for option in command.parameters
        if option.description in ("…", "") or len(option.description) > 100 or option.description.endswith("…")
    ]
    assert undescribed == []
