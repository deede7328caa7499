"""``/lorekeeper``: server setup (who the DM is, the review channel) and the owner's command sync."""

from __future__ import annotations

from typing import Literal

import discord
from discord import app_commands
from discord.ext import commands

from bot.app import LorekeeperBot
from bot.checks import DM_ROLE_KEY, REVIEW_CHANNEL_KEY, UserError, active_campaign, bot_of, open_to_players


@app_commands.guild_only()
@app_commands.default_permissions(manage_guild=True)
class Admin(commands.GroupCog, group_name="lorekeeper", group_description="Lorekeeper setup"):
    def __init__(self, bot: LorekeeperBot) -> None:
        self.bot = bot

    @app_commands.command(description="Who the DM is and where review items go (Manage Server)")
    @app_commands.describe(
        dm_role="Members with this role are the DM (default: members with Manage Server)",
        review_channel="New review items are posted here: a channel only the DM can view",
        clear="Forget the DM role and review channel",
    )
    async def setup(
        self,
        interaction: discord.Interaction,
        dm_role: discord.Role | None = None,
        review_channel: discord.TextChannel | None = None,
        clear: bool = False,
    ) -> None:
        # Manage Server, not the DM role: naming the DM is the server admin's decision
        if not interaction.permissions.manage_guild:
            raise UserError("Only members with Manage Server can set Lorekeeper up.")
        if dm_role is not None and dm_role.is_default():
            raise UserError(
                "@everyone is every member's role: as the DM role it would show every player the secrets and let "
                "them run the DM's commands. Choose the role only the DM holds."
            )
        # the channel check below may ask Discord about members added to it by name: past the 3 s to answer
        await interaction.response.defer(ephemeral=True, thinking=True)
        # stored with each campaign (new ones copy the active one's), but the server's: set on all of them
        campaign, _ = await active_campaign(interaction)
        settings = dict(campaign.settings)
        if clear:
            settings.pop(DM_ROLE_KEY, None)
            settings.pop(REVIEW_CHANNEL_KEY, None)
        if dm_role is not None:
            settings[DM_ROLE_KEY] = dm_role.id
        if review_channel is not None:
            settings[REVIEW_CHANNEL_KEY] = review_channel.id
        changing = clear or dm_role is not None or review_channel is not None
        # the channel set before too: a new DM role may leave the old one's members reading it
        channel = review_channel or (
            interaction.guild.get_channel(int(settings.get(REVIEW_CHANNEL_KEY, 0))) if interaction.guild else None
        )
        if changing and channel is not None:
            who = await open_to_players(channel, settings.get(DM_ROLE_KEY))
            if who is not None:
                raise UserError(
                    f"{channel.mention} is open to {who}, and review items show what the DM keeps secret: "
                    "choose a channel only the DM can view (a private channel the DM role can)."
                )
        if changing:
            await bot_of(interaction).memory.campaigns(campaign.guild_id).set_settings(settings)
        role_id, channel_id = settings.get(DM_ROLE_KEY), settings.get(REVIEW_CHANNEL_KEY)
        dm = f"<@&{role_id}> (and Manage Server)" if role_id else "members with Manage Server"
        where = f"<#{channel_id}>" if channel_id else "only through /review"
        scope = "Set for every campaign of this server" if changing else "This server"
        await interaction.followup.send(f"{scope} — DM: {dm}; review items: {where}.", ephemeral=True)

    @app_commands.command(description="Sync slash commands (bot owner only)")
    @app_commands.describe(scope="guild: this server, at once; global: every server, within the hour")
    async def sync(self, interaction: discord.Interaction, scope: Literal["guild", "global"] = "guild") -> None:
        if not await self.bot.is_owner(interaction.user):
            raise UserError("Only the bot's owner can sync commands.")
        await interaction.response.defer(ephemeral=True, thinking=True)
        if scope == "global":
            synced = await self.bot.tree.sync()
        else:
            guild = discord.Object(interaction.guild_id or 0)
            self.bot.tree.copy_global_to(guild=guild)
            synced = await self.bot.tree.sync(guild=guild)
        await interaction.followup.send(f"Synced {len(synced)} commands ({scope}).", ephemeral=True)


async def setup(bot: LorekeeperBot) -> None:
    await bot.add_cog(Admin(bot))
