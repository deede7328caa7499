"""``/campaign``: a guild's campaigns — create, list, switch, info, delete, load a YAML file, import another tool's
world for review, export one."""

from __future__ import annotations

import asyncio
import io
from typing import Any

import discord
from discord import app_commands
from discord.ext import commands

from bot.app import LorekeeperBot
from bot.checks import (
    NotDMError,
    UserError,
    active_campaign,
    bot_of,
    dm_campaign,
    guild_id_of,
    member_is_dm,
    require_dm,
)
from bot.views import Confirm, Paginator, clip, name_choices, paged_embeds, safe_autocomplete
from campaigns import batches
from campaigns.files import CampaignFileError, dump_campaign_file, parse_campaign_file, too_big_to_load
from campaigns.imports import FORMATS, MAX_IMPORT_BYTES, ImportFileError, read_import
from campaigns.load import apply_campaign_file, export_campaign_file
from campaigns.schema import CampaignHeader
from memory.campaigns import MAX_NAME, Campaigns
from memory.db import transaction
from memory.errors import MemoryError_
from memory.models import Campaign
from memory.replies import awaiting_review
from memory.store import CampaignMemory
from memory.text import counted

#: Campaign files bigger than this are refused before they are downloaded.
MAX_UPLOAD_BYTES = 2 * 1024 * 1024


def campaigns_of(interaction: discord.Interaction) -> Campaigns:
    # the only way a cog reaches campaigns: by the interaction's own guild, so guilds never see each other's
    return bot_of(interaction).memory.campaigns(guild_id_of(interaction))


@safe_autocomplete
async def campaign_names(interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
    return name_choices([c.name for c in await campaigns_of(interaction).list()], current)


def _line(campaign: Campaign) -> str:
    extra = " · ".join(x for x in (campaign.system, campaign.description) if x)
    return f"{'▶ ' if campaign.active else ''}**{campaign.name}**" + (f" — {clip(extra, 120)}" if extra else "")


@app_commands.guild_only()
class CampaignsCog(commands.GroupCog, group_name="campaign", group_description="This server's campaigns"):
    def __init__(self, bot: LorekeeperBot) -> None:
        self.bot = bot

    @app_commands.command(description="Create a campaign; the first one becomes active (DM only)")
    @app_commands.describe(
        name="Its name, unique in this server", description="A line or two about it", system="e.g. D&D 5e"
    )
    async def create(
        self,
        interaction: discord.Interaction,
        name: app_commands.Range[str, 1, MAX_NAME],
        description: app_commands.Range[str, 0, 1000] = "",
        system: app_commands.Range[str, 0, 100] = "",
    ) -> None:
        await require_dm(interaction)
        created = await campaigns_of(interaction).create(name, description=description, system=system)
        state = "It is now the active campaign." if created.active else "Use /campaign switch to make it active."
        await interaction.response.send_message(f"Created campaign **{created.name}**. {state}", ephemeral=True)

    @app_commands.command(name="list", description="This server's campaigns")
    async def list_(self, interaction: discord.Interaction) -> None:
        campaigns = await campaigns_of(interaction).list()
        if not campaigns:
            raise UserError("No campaigns yet: run /campaign create first.")
        await Paginator.reply(interaction, paged_embeds("Campaigns", [_line(c) for c in campaigns]))

    @app_commands.command(description="Make another campaign the active one (DM only)")
    @app_commands.describe(name="The campaign to make active")
    @app_commands.autocomplete(name=campaign_names)
    async def switch(self, interaction: discord.Interaction, name: str) -> None:
        campaigns = campaigns_of(interaction)
        target = await campaigns.get(name)
        if not member_is_dm(interaction, target):  # the DM of the campaign switched to, not of the active one
            raise NotDMError()
        active = await campaigns.activate(target.name)
        await interaction.response.send_message(f"Active campaign: **{active.name}**.", ephemeral=True)

    @app_commands.command(description="The active campaign: what it holds")
    async def info(self, interaction: discord.Interaction) -> None:
        campaign, mem = await active_campaign(interaction)
        counts = await campaigns_of(interaction).counts(campaign.id)
        embed = discord.Embed(title=clip(campaign.name, 256), description=clip(campaign.description, 4096) or None)
        if campaign.system:
            embed.add_field(name="System", value=clip(campaign.system, 1024))
        dm = member_is_dm(interaction, campaign)
        visible = await mem.graph.count_entities(include_secret=dm)
        embed.add_field(name="Entities", value=str(visible))
        if dm:  # the count includes secret facts, and there is no public-only count: players do not see it
            embed.add_field(name="Facts", value=str(counts["facts"]))
        embed.add_field(name="Sessions", value=str(counts["sessions"]))
        embed.add_field(name="Utterances", value=str(counts["entries"]))
        if dm:
            embed.add_field(name="Awaiting review", value=awaiting_review(counts))
        await interaction.response.send_message(embed=embed, ephemeral=True)

    @app_commands.command(description="Delete a campaign and everything in it (DM only)")
    @app_commands.describe(name="The campaign to delete (you are asked to confirm)")
    @app_commands.autocomplete(name=campaign_names)
    async def delete(self, interaction: discord.Interaction, name: str) -> None:
        campaigns = campaigns_of(interaction)
        target = await campaigns.get(name)
        if not member_is_dm(interaction, target):  # the DM of the campaign deleted, not of the active one
            raise NotDMError()
        self._not_recording(interaction, target)
        counts = await campaigns.counts(target.id)

        async def delete() -> str:
            self._not_recording(interaction, target)  # a session may have started while the DM decided
            active = await campaigns.delete(target.name)
            if target.active and active is not None:
                return f"Deleted campaign **{target.name}**. **{active.name}** is now the active campaign."
            return f"Deleted campaign **{target.name}**."

        await interaction.response.send_message(
            f"Delete **{target.name}** with {counted(counts['sessions'], 'session')}, "
            f"{counted(counts['entries'], 'utterance')} and {counted(counts['entities'], 'entity', 'entities')}? "
            "This cannot be undone.",
            view=Confirm(interaction, delete, dm_of=target.id),
            ephemeral=True,
        )

    def _not_recording(self, interaction: discord.Interaction, campaign: Campaign) -> None:
        # not isinstance: load_extension runs the cog's module anew, so an imported Sessions is another class
        sessions: Any = self.bot.get_cog("Sessions")
        recording = sessions.recording_into(guild_id_of(interaction)) if sessions is not None else None
        if recording is not None and recording.id == campaign.id:
            raise UserError(f"**{campaign.name}** is being recorded: /session stop first.")

    @app_commands.command(description="Load a campaign YAML file into the active campaign (DM only)")
    @app_commands.describe(file="A campaign .yaml file (see campaigns/examples)")
    async def load(self, interaction: discord.Interaction, file: discord.Attachment) -> None:
        campaigns = campaigns_of(interaction)
        active = await campaigns.active()
        if not member_is_dm(interaction, active):
            await require_dm(interaction)
        # the size Discord reports is checked before anything is downloaded
        if file.size > MAX_UPLOAD_BYTES:
            raise UserError(f"{file.filename} is {file.size:,} bytes; the limit is {MAX_UPLOAD_BYTES:,} bytes.")
        await interaction.response.defer(ephemeral=True, thinking=True)
        data = await file.read()
        try:
            parsed = await asyncio.to_thread(parse_campaign_file, data, file.filename, MAX_UPLOAD_BYTES)
        except CampaignFileError as exc:
            raise UserError(f"Nothing was loaded:\n{exc}") from None
        header = parsed.campaign or CampaignHeader()
        if active is None and not header.name:
            raise UserError(NO_CAMPAIGN_FOR_LOAD)
        memory = bot_of(interaction).memory
        try:
            # one transaction: a campaign created for the load is gone again when the load fails
            async with transaction(memory.pool) as conn:
                if active is None:  # a server's very first load may bring its campaign along
                    assert header.name  # without one it was refused above
                    active = await Campaigns(conn, guild_id_of(interaction)).create(
                        header.name, description=header.description, system=header.system, activate=True
                    )
                mem = CampaignMemory(conn, active.id, accept_threshold=memory.accept_threshold)
                report = await apply_campaign_file(mem, parsed)
        except MemoryError_ as exc:  # a clash with what the campaign holds: the whole load is rolled back
            raise UserError(f"Nothing was loaded:\n{exc}") from None
        said = f"**{active.name}** ← {file.filename}: {report.summary()}"
        if header.name and header.name.casefold() != active.name.casefold():  # the CLI would fill the file's own
            said += (
                f"\nThe file names campaign **{header.name}**; it was loaded into the active campaign "
                f"**{active.name}**."
            )
        said = f"{said}\n{report.said()}".rstrip()
        await interaction.followup.send(clip(said, 2000), ephemeral=True)

    @app_commands.command(
        name="import", description="Import a world from Foundry VTT, Roll20, Kanka or CSV for review (DM only)"
    )
    @app_commands.describe(
        file="An export: Foundry .json/.db or a zipped world folder, Roll20 .json, Kanka .json or .csv",
        file2="Another file of the same export (e.g. journal.db)",
        file3="Another file of the same export",
        format="The tool the files come from (default: told from them)",
    )
    @app_commands.choices(format=[app_commands.Choice(name=f, value=f) for f in FORMATS])
    async def import_(
        self,
        interaction: discord.Interaction,
        file: discord.Attachment,
        file2: discord.Attachment | None = None,
        file3: discord.Attachment | None = None,
        format: str | None = None,
    ) -> None:
        campaign, mem = await dm_campaign(interaction)
        attachments = [a for a in (file, file2, file3) if a is not None]
        for attachment in attachments:  # the size Discord reports is checked before anything is downloaded
            if attachment.size > MAX_IMPORT_BYTES:
                raise UserError(
                    f"{attachment.filename} is {attachment.size:,} bytes; an import reads at most {MAX_IMPORT_BYTES:,}."
                )
        await interaction.response.defer(ephemeral=True, thinking=True)
        read = [(a.filename, await a.read()) for a in attachments]
        try:
            # a str to discord.py, one of FORMATS as the choices above let through
            world = await asyncio.to_thread(read_import, read, format)  # type: ignore[arg-type]
        except ImportFileError as exc:
            raise UserError(f"Nothing was imported:\n{exc}") from None
        if not world.entities:
            raise UserError(f"Nothing to import: {len(world.skipped)} records left out.")
        try:
            batch = await batches.stage(mem, world)
        except MemoryError_ as exc:
            raise UserError(f"Nothing was imported:\n{exc}") from None
        await interaction.followup.send(
            clip(
                f"**{campaign.name}** ← {batch.card()}\nIt waits for you in /review: accept or reject it whole.", 2000
            ),
            ephemeral=True,
        )

    @app_commands.command(description="Download the active campaign as a YAML file (DM only)")
    async def export(self, interaction: discord.Interaction) -> None:
        campaign, mem = await dm_campaign(interaction)
        await interaction.response.defer(ephemeral=True, thinking=True)
        header = CampaignHeader(name=campaign.name, description=campaign.description, system=campaign.system)
        skipped: list[str] = []
        exported = await export_campaign_file(mem, header, on_skip=skipped.append)
        text = dump_campaign_file(exported)
        filename = "".join(c if c.isalnum() or c in "-_" else "_" for c in campaign.name) + ".yaml"
        data = text.encode()
        if interaction.guild is not None and len(data) > interaction.guild.filesize_limit:
            raise UserError(
                f"The campaign file is {len(data):,} bytes, more than this server lets me send "
                f"({interaction.guild.filesize_limit:,}): export it with `lorekeeper campaign export`."
            )
        # the warning first: the list of what was left out may be clipped
        big = too_big_to_load(len(exported.entities), len(data), max_bytes=MAX_UPLOAD_BYTES, how="/campaign load")
        said = f"\n⚠️ {big}." if big else ""
        said += "".join(f"\n- {clip(s, 300)}" for s in skipped[:10])
        if len(skipped) > 10:
            said += f"\n- and {len(skipped) - 10} more"
        await interaction.followup.send(
            clip(f"**{campaign.name}** as a campaign file.{said}", 2000),
            file=discord.File(io.BytesIO(data), filename=filename),
            ephemeral=True,
        )


NO_CAMPAIGN_FOR_LOAD = "This server has no active campaign and the file names none: run /campaign create first."


async def setup(bot: LorekeeperBot) -> None:
    await bot.add_cog(CampaignsCog(bot))
