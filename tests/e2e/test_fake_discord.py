"""Smoke tests of the fake Discord server, driving a tiny test-only bot through the real discord.py client.

The bot here exercises each Discord feature Lorekeeper's cogs rely on: a command group, autocomplete,
ephemeral and deferred replies, files both ways, embeds with a restart-proof DynamicItem button, a modal,
channel messages and one ``tree.on_error``.
"""

from __future__ import annotations

import asyncio
import io
import re
import types
from typing import Any

import discord
import pytest
from discord import app_commands
from discord.ext import commands

from tests.e2e.conftest import BotRunner
from tests.e2e.fake_discord import FakeDiscord, FakeGuild, FakeMember, Upload

pytestmark = pytest.mark.e2e

NAMES = ["Eldrinax", "Ironhold", "Vex'ahlia", "Ironwood Keep"]
EXPORT_YAML = b"campaign: Ashes\nentities:\n  - name: Eldrinax\n    type: npc\n"


def is_dm(interaction: discord.Interaction) -> bool:
    # checked on the server from what Discord sends, not from default_permissions
    if not interaction.permissions.manage_guild:
        raise app_commands.CheckFailure("Only the DM can do that.")
    return True


class NoteModal(discord.ui.Modal, title="Edit note"):
    note: discord.ui.TextInput[NoteModal] = discord.ui.TextInput(label="Note", custom_id="note")

    def __init__(self, item_id: int) -> None:
        super().__init__(custom_id=f"t:note:{item_id}")
        self.item_id = item_id

    async def on_submit(self, interaction: discord.Interaction) -> None:
        await interaction.response.send_message(f"note on {self.item_id}: {self.note.value}", ephemeral=True)


class AcceptButton(discord.ui.DynamicItem[discord.ui.Button[Any]], template=r"t:accept:(?P<id>\d+)"):
    def __init__(self, item_id: int) -> None:
        super().__init__(
            discord.ui.Button(label="Accept", style=discord.ButtonStyle.success, custom_id=f"t:accept:{item_id}")
        )
        self.item_id = item_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str]
    ) -> AcceptButton:
        return cls(int(match["id"]))

    async def callback(self, interaction: discord.Interaction) -> None:
        await interaction.response.edit_message(
            content=f"item {self.item_id} accepted by {interaction.user.name}", view=None
        )


class EditButton(discord.ui.DynamicItem[discord.ui.Button[Any]], template=r"t:edit:(?P<id>\d+)"):
    def __init__(self, item_id: int) -> None:
        super().__init__(discord.ui.Button(label="Edit", custom_id=f"t:edit:{item_id}"))
        self.item_id = item_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str]
    ) -> EditButton:
        return cls(int(match["id"]))

    async def callback(self, interaction: discord.Interaction) -> None:
        await interaction.response.send_modal(NoteModal(self.item_id))


def card_view(item_id: int) -> discord.ui.View:
    view = discord.ui.View(timeout=None)
    view.add_item(AcceptButton(item_id))
    view.add_item(EditButton(item_id))
    return view


class Lore(app_commands.Group):
    @app_commands.command(description="Find an entity")
    async def find(self, interaction: discord.Interaction, name: str) -> None:
        await interaction.response.send_message(f"found {name}", ephemeral=True)

    @find.autocomplete("name")
    async def find_name(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        return [app_commands.Choice(name=n, value=n) for n in NAMES if current.lower() in n.lower()][:25]

    @app_commands.command(description="DM-only secret")
    @app_commands.check(is_dm)
    async def secret(self, interaction: discord.Interaction) -> None:
        await interaction.response.send_message("the dragon is the king", ephemeral=True)

    @app_commands.command(description="Slow export")
    async def export(self, interaction: discord.Interaction) -> None:
        await interaction.response.defer(thinking=True)
        await interaction.followup.send("export ready", file=discord.File(io.BytesIO(EXPORT_YAML), "export.yaml"))

    @app_commands.command(description="An entity card with buttons")
    async def card(self, interaction: discord.Interaction, item_id: int) -> None:
        embed = discord.Embed(title=f"Item {item_id}", description="A pending fact")
        await interaction.response.send_message(embed=embed, view=card_view(item_id))

    @app_commands.command(description="Post a card to the channel")
    async def post(self, interaction: discord.Interaction, item_id: int) -> None:
        assert isinstance(interaction.channel, discord.TextChannel)
        await interaction.channel.send(f"review item {item_id}", view=card_view(item_id))
        await interaction.response.send_message("posted", ephemeral=True)

    @app_commands.command(description="Load a file")
    async def load(self, interaction: discord.Interaction, file: discord.Attachment) -> None:
        data = await file.read()
        first = data.decode().splitlines()[0]
        await interaction.response.send_message(f"{file.filename}: {len(data)} bytes, starts {first!r}")

    @app_commands.command(description="Who is this member?")
    async def whois(self, interaction: discord.Interaction, member: discord.Member) -> None:
        await interaction.response.defer(ephemeral=True)
        is_dm = member.guild_permissions.manage_guild
        await interaction.edit_original_response(content=f"{member.name}: {member.top_role.name}, DM={is_dm}")
        sent = await interaction.original_response()
        await interaction.followup.send(f"edited {sent.id}", ephemeral=True)

    @app_commands.command(description="Too long for one message")
    async def ramble(self, interaction: discord.Interaction) -> None:
        await interaction.response.send_message("la" * 1001)

    @app_commands.command(description="Always fails")
    async def boom(self, interaction: discord.Interaction) -> None:
        raise RuntimeError("kaboom")


class SmokeBot(commands.Bot):
    def __init__(self, sync_guild: int | None = None) -> None:
        intents = discord.Intents.default()
        intents.members = True
        super().__init__(command_prefix=commands.when_mentioned, intents=intents, guild_ready_timeout=0.05)
        self.sync_guild = sync_guild
        self.errors: list[BaseException] = []

    async def setup_hook(self) -> None:
        self.add_dynamic_items(AcceptButton, EditButton)
        self.tree.add_command(Lore(name="lore", description="Campaign lore"))
        self.tree.on_error = self.on_app_command_error
        if self.sync_guild is None:
            await self.tree.sync()
        else:
            guild = discord.Object(self.sync_guild)
            self.tree.copy_global_to(guild=guild)
            await self.tree.sync(guild=guild)

    async def on_app_command_error(self, interaction: discord.Interaction, error: app_commands.AppCommandError) -> None:
        self.errors.append(error)
        message = str(error) if isinstance(error, app_commands.CheckFailure) else "Something went wrong."
        if interaction.response.is_done():
            await interaction.followup.send(message, ephemeral=True)
        else:
            await interaction.response.send_message(message, ephemeral=True)


@pytest.fixture
def guild(fake_discord: FakeDiscord) -> FakeGuild:
    return fake_discord.add_guild("Ashes of Ironhold")


@pytest.fixture
def dm(guild: FakeGuild) -> FakeMember:
    role = guild.add_role("Dungeon Master", permissions=discord.Permissions(manage_guild=True))
    return guild.add_member("dm", roles=[role])


@pytest.fixture
def player(guild: FakeGuild) -> FakeMember:
    return guild.add_member("player")


@pytest.fixture
async def bot(bot_runner: BotRunner, guild: FakeGuild, dm: FakeMember, player: FakeMember) -> SmokeBot:
    started = await bot_runner.start(SmokeBot())
    assert isinstance(started, SmokeBot)
    return started


async def test_ready_sees_configured_guild_roles_members(bot: SmokeBot, guild: FakeGuild, dm: FakeMember) -> None:
    seen = bot.get_guild(guild.id)
    assert seen is not None and seen.name == "Ashes of Ironhold"
    member = seen.get_member(dm.id)
    assert member is not None and member.guild_permissions.manage_guild
    assert [r.name for r in member.roles] == ["@everyone", "Dungeon Master"]
    assert {c.name for c in seen.channels} == {"general", "Session"}
    assert seen.me is not None and bot.user is not None and bot.user.id == seen.me.id


async def test_sync_is_recorded_with_ids(bot: SmokeBot, fake_discord: FakeDiscord) -> None:
    ((scope, sent),) = fake_discord.sync_calls
    assert scope is None and [c["name"] for c in sent] == ["lore"]
    lore = fake_discord.global_commands[0]
    assert lore["id"] and lore["application_id"] == str(fake_discord.app_id)
    assert {o["name"] for o in lore["options"]} == {
        "find",
        "secret",
        "export",
        "card",
        "post",
        "load",
        "whois",
        "ramble",
        "boom",
    }
    fetched = await bot.tree.fetch_commands()
    assert [c.id for c in fetched] == [int(lore["id"])]


async def test_autocomplete_returns_filtered_choices(bot: SmokeBot, fake_discord: FakeDiscord) -> None:
    iron, vex = await asyncio.gather(  # two users typing at once get their own answers
        fake_discord.autocomplete("lore find", {"name": "iron"}, focused="name"),
        fake_discord.autocomplete("lore find", {"name": "VEX"}, focused="name"),
    )
    assert [c["name"] for c in iron] == ["Ironhold", "Ironwood Keep"]
    assert vex == [{"name": "Vex'ahlia", "value": "Vex'ahlia"}]


async def test_ephemeral_reply(bot: SmokeBot, fake_discord: FakeDiscord, player: FakeMember) -> None:
    record = await fake_discord.invoke("lore find", {"name": "Eldrinax"}, user_id=player)
    assert record.callback_type == 4 and record.ephemeral
    assert record.texts() == ["found Eldrinax"]


async def test_permission_from_payload_dm_allowed_player_refused(
    bot: SmokeBot, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    allowed = await fake_discord.invoke("lore secret", user_id=dm)
    assert allowed.texts() == ["the dragon is the king"]
    refused = await fake_discord.invoke("lore secret", user_id=player)
    assert refused.ephemeral and refused.texts() == ["Only the DM can do that."]


async def test_guild_sync_reaches_only_that_guild(
    fake_discord: FakeDiscord, bot_runner: BotRunner, guild: FakeGuild, player: FakeMember
) -> None:
    other = fake_discord.add_guild("Other table")
    await bot_runner.start(SmokeBot(sync_guild=guild.id))
    assert [(scope, [c["name"] for c in sent]) for scope, sent in fake_discord.sync_calls] == [(guild.id, ["lore"])]
    record = await fake_discord.invoke("lore find", {"name": "Ironhold"}, guild_id=guild, user_id=player)
    assert record.payload["data"]["guild_id"] == str(guild.id)
    assert record.texts() == ["found Ironhold"]
    with pytest.raises(LookupError, match="never synced"):
        await fake_discord.invoke("lore find", {"name": "Ironhold"}, guild_id=other)


async def test_member_option_deferred_edit_of_original(
    bot: SmokeBot, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    record = await fake_discord.invoke("lore whois", {"member": dm}, user_id=player)
    await record.wait_for(lambda r: len(r.followups) == 1)
    assert record.callback_type == 5 and record.ephemeral
    (edit,) = record.edits
    assert edit["content"] == "dm: Dungeon Master, DM=True"
    assert record.original is not None
    assert record.texts() == ["dm: Dungeon Master, DM=True", f"edited {record.original['id']}"]


async def test_error_goes_through_tree_on_error(bot: SmokeBot, fake_discord: FakeDiscord) -> None:
    record = await fake_discord.invoke("lore boom")
    assert record.ephemeral and record.texts() == ["Something went wrong."]
    assert isinstance(bot.errors[-1], app_commands.CommandInvokeError)
    assert isinstance(bot.errors[-1].__cause__, RuntimeError)


async def test_discord_limits_are_enforced(bot: SmokeBot, fake_discord: FakeDiscord) -> None:
    record = await fake_discord.invoke("lore ramble")
    assert fake_discord.rejected == ["content: 2002 > 2000"]
    assert isinstance(bot.errors[-1].__cause__, discord.HTTPException)
    assert record.texts() == ["Something went wrong."]


async def test_unanswered_interaction_fails_with_transcript_and_client_error(
    bot: SmokeBot, fake_discord: FakeDiscord
) -> None:
    # discord.py's default on_error only logs, so nothing answers the user
    bot.tree.on_error = types.MethodType(app_commands.CommandTree.on_error, bot.tree)  # type: ignore[method-assign]
    fake_discord.answer_timeout = 0.3
    with pytest.raises(TimeoutError) as failure:
        await fake_discord.invoke("lore boom")
    assert "INTERACTION_CREATE type=2 /lore boom" in str(failure.value)
    assert "RuntimeError: kaboom" in str(failure.value)


async def test_deferred_reply_with_file_followup(bot: SmokeBot, fake_discord: FakeDiscord) -> None:
    record = await fake_discord.invoke("lore export")
    assert record.callback_type == 5
    assert record.texts() == ["export ready"]
    (sent,) = record.files
    assert sent.filename == "export.yaml" and sent.data == EXPORT_YAML
    # the follow-up replaced the "thinking" message, as on Discord
    assert record.original is not None and record.followups[0]["id"] == record.original["id"]
    assert record.original["flags"] == 0 and record.original["attachments"][0]["filename"] == "export.yaml"


async def test_attachment_option_is_downloaded_from_fake_cdn(bot: SmokeBot, fake_discord: FakeDiscord) -> None:
    upload = Upload("campaign.yaml", EXPORT_YAML, "application/yaml")
    record = await fake_discord.invoke("lore load", {"file": upload})
    assert record.texts() == [f"campaign.yaml: {len(EXPORT_YAML)} bytes, starts 'campaign: Ashes'"]


async def test_unsynced_command_or_unknown_option_is_a_test_error(bot: SmokeBot, fake_discord: FakeDiscord) -> None:
    with pytest.raises(LookupError, match="never synced"):
        await fake_discord.invoke("entity add")
    with pytest.raises(ValueError, match="unknown options"):
        await fake_discord.invoke("lore find", {"nmae": "x"})


async def test_embed_button_survives_restart(
    bot: SmokeBot, bot_runner: BotRunner, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    record = await fake_discord.invoke("lore card", {"item_id": 42}, user_id=dm)
    assert record.original is not None
    assert record.original["embeds"][0]["title"] == "Item 42"
    message = record.original

    await bot_runner.stop(bot)
    assert bot.is_closed()
    await bot_runner.start(SmokeBot())

    clicked = await fake_discord.click(message, "t:accept:42", user_id=dm)
    assert clicked.callback_type == 7
    assert fake_discord.messages[int(message["id"])]["content"] == "item 42 accepted by dm"
    assert fake_discord.messages[int(message["id"])]["components"] == []
    with pytest.raises(LookupError):
        await fake_discord.click(message, "t:accept:42", user_id=dm)


async def test_modal_opened_by_button_and_submitted(bot: SmokeBot, fake_discord: FakeDiscord, dm: FakeMember) -> None:
    record = await fake_discord.invoke("lore card", {"item_id": 7}, user_id=dm)
    assert record.original is not None
    opened = await fake_discord.click(record.original, "t:edit:7", user_id=dm)
    assert opened.callback_type == 9 and opened.modal is not None
    assert opened.modal["title"] == "Edit note"
    submitted = await fake_discord.submit_modal("t:note:7", {"note": "The king is a dragon"})
    assert submitted.type == 5 and submitted.ephemeral
    assert submitted.texts() == ["note on 7: The king is a dragon"]
    assert submitted.payload["member"]["user"]["id"] == str(dm.id)


async def test_channel_message_button(bot: SmokeBot, fake_discord: FakeDiscord, player: FakeMember) -> None:
    record = await fake_discord.invoke("lore post", {"item_id": 5})
    assert record.texts() == ["posted"]
    (posted,) = fake_discord.channel_messages
    assert posted["content"] == "review item 5" and "webhook_id" not in posted
    clicked = await fake_discord.click(posted, "t:accept:5", user_id=player)
    assert clicked.callback_type == 7
    assert fake_discord.messages[int(posted["id"])]["content"] == "item 5 accepted by player"


async def test_rejected_token_fails_login(bot_runner: BotRunner, guild: FakeGuild) -> None:
    with pytest.raises(discord.LoginFailure):
        await bot_runner.start(SmokeBot(), token="wrong")


async def test_transcript_of_a_scenario(bot: SmokeBot, fake_discord: FakeDiscord, dm: FakeMember) -> None:
    start = len(fake_discord.transcript)
    record = await fake_discord.invoke("lore card", {"item_id": 3}, user_id=dm)
    assert record.original is not None
    await fake_discord.click(record.original, "t:accept:3", user_id=dm)
    text = fake_discord.format_transcript(start)
    print(fake_discord.format_transcript())
    assert "INTERACTION_CREATE type=2 /lore card" in text
    assert "embed 'Item 3'" in text and "buttons ['t:accept:3', 't:edit:3']" in text
    assert "update message, 'item 3 accepted by dm'" in text
    assert fake_discord.unhandled == []
