"""Who may do what, which campaign a command works on, and how errors reach the user.

Permission checks run here, on the server, from what Discord sends with the interaction: ``default_permissions``
on a command is only a hint for the client UI and a server admin can override it.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any, cast

import asyncpg
import discord
from discord import app_commands
from pydantic import ValidationError

from campaigns.files import CampaignFileError
from memory.errors import (
    AlreadyDecidedError,
    AlreadyExistsError,
    MemoryError_,
    NextSteps,
    NotFoundError,
    validation_problems,
    with_next_step,
)
from memory.models import Campaign
from memory.outage import is_outage, outage_said, short_reason
from memory.store import CampaignMemory
from memory.text import clip

if TYPE_CHECKING:
    from bot.app import LorekeeperBot

log = logging.getLogger("lorekeeper.bot")

#: Keys of the per-campaign settings JSON that ``/lorekeeper setup`` writes.
DM_ROLE_KEY = "dm_role_id"
REVIEW_CHANNEL_KEY = "review_channel_id"
NO_CAMPAIGN = "This server has no active campaign: run /campaign create first."
NOT_DM = "Only the DM can do that."
NUL_TEXT = "The text contains a NUL character (U+0000), which cannot be stored or searched: remove it and try again."


#: What the DM can do next after these errors (the command line's: ``bot.cli.common``).
NEXT_STEPS: NextSteps = {
    (AlreadyExistsError, "entity"): "see it with /entity show or change it with /entity edit",
    (AlreadyExistsError, "campaign"): "/campaign switch makes it the active one",
    (NotFoundError, "campaign"): "/campaign list shows them",
    (NotFoundError, "review item"): "/review shows those waiting",
    (NotFoundError, "session"): "/session list shows them",
}


class UserError(app_commands.AppCommandError):
    """A problem the user can fix; its message is shown as it is."""


class NotDMError(app_commands.CheckFailure):
    def __init__(self, message: str = NOT_DM) -> None:
        super().__init__(message)


def bot_of(interaction: discord.Interaction) -> LorekeeperBot:
    return cast("LorekeeperBot", interaction.client)  # the only client whose interactions reach our code


def guild_id_of(interaction: discord.Interaction) -> int:
    # Commands are guild_only, but a DM-channel interaction must never fall through to guild 0's campaigns.
    if interaction.guild_id is None:
        raise UserError("Lorekeeper commands work inside a server.")
    return interaction.guild_id


async def active_campaign(interaction: discord.Interaction) -> tuple[Campaign, CampaignMemory]:
    """The guild's active campaign and its memory; always scoped to the interaction's own guild."""
    memory = bot_of(interaction).memory
    campaign = await memory.campaigns(guild_id_of(interaction)).active()
    if campaign is None:
        raise UserError(NO_CAMPAIGN)
    return campaign, memory.campaign(campaign.id)


def member_is_dm(interaction: discord.Interaction, campaign: Campaign | None) -> bool:
    """The DM is whoever holds the campaign's DM role; members with Manage Server always count, so a
    server admin cannot lock themselves out by picking the wrong role."""
    if interaction.permissions.manage_guild:
        return True
    return _holds_dm_role(interaction.user, campaign.settings.get(DM_ROLE_KEY) if campaign else None)


def _holds_dm_role(user: discord.abc.User, role_id: Any) -> bool:
    if not isinstance(user, discord.Member) or not role_id or int(role_id) == user.guild.id:
        return False  # @everyone (its id is the guild's) makes nobody the DM
    return any(r.id == int(role_id) for r in user.roles)


async def open_to_players(channel: discord.abc.GuildChannel, dm_role_id: int | None) -> str | None:
    """Who can view ``channel`` and is not the DM (see :func:`member_is_dm`), as the DM should read it, or None:
    review items posted there would show them the secrets. @everyone first, then roles, then members added by
    name; bots do not count, nor members who have left. A member Discord will not look up counts: fail closed."""
    for role in channel.guild.roles:
        dm = role.id == dm_role_id and not role.is_default()
        if dm or role.permissions.manage_guild or role.permissions.administrator or role.is_bot_managed():
            continue
        if channel.permissions_for(role).view_channel:
            return "everyone" if role.is_default() else f"{role.mention}, who are not the DM"
    for target, overwrite in channel.overwrites.items():
        of_role = isinstance(target, discord.Role) or (
            isinstance(target, discord.Object) and target.type is discord.Role
        )
        if of_role or not overwrite.view_channel:
            continue  # roles were judged above (a deleted one's overwrite shows nobody anything)
        try:
            # without the members intent few members are cached; fetching one needs no intent
            member = target if isinstance(target, discord.Member) else await channel.guild.fetch_member(target.id)
        except discord.NotFound:
            continue  # left the server: the overwrite stays but shows them nothing
        except discord.HTTPException as error:
            log.warning(
                "review channel #%s of guild %s counts as open: member %s, added by name, could not be looked up (%s)",
                channel.name,
                channel.guild.id,
                target.id,
                error,
            )
            return f"<@{target.id}>, who could not be looked up to tell whether they are the DM"
        if not (member.bot or member.guild_permissions.manage_guild or _holds_dm_role(member, dm_role_id)):
            return f"<@{member.id}>, who is not the DM"
    return None


async def dm_campaign(interaction: discord.Interaction) -> tuple[Campaign, CampaignMemory]:
    """The active campaign, refusing anyone who is not its DM."""
    campaign, mem = await active_campaign(interaction)
    if not member_is_dm(interaction, campaign):
        raise NotDMError()
    return campaign, mem


async def dm_campaign_by_id(
    interaction: discord.Interaction, campaign_id: int, *, refusal: str = NOT_DM
) -> CampaignMemory:
    """The memory of a campaign a button or form was made for, if it is this guild's and the user its DM (who
    may have lost the role since the form opened)."""
    memory = bot_of(interaction).memory
    campaign = await memory.campaigns(guild_id_of(interaction)).get_by_id(campaign_id)
    if not member_is_dm(interaction, campaign):
        raise NotDMError(refusal)
    return memory.campaign(campaign.id)


async def require_dm(interaction: discord.Interaction) -> None:
    """The DM check for commands that may run without an active campaign (create, the first load)."""
    campaign = await bot_of(interaction).memory.campaigns(guild_id_of(interaction)).active()
    if not member_is_dm(interaction, campaign):
        raise NotDMError()


# ------------------------------------------------------------------------------------------------ errors


def _unwrap(error: BaseException) -> BaseException:
    while isinstance(error, app_commands.CommandInvokeError | app_commands.TransformerError) and error.__cause__:
        error = error.__cause__
    return error


def user_message(error: BaseException) -> str | None:
    """What to tell the user about ``error``, or None when it is a bug they cannot fix."""
    error = _unwrap(error)
    if isinstance(error, AlreadyDecidedError):  # said under the item's own card: what it was, not its id
        return error.in_words(
            "To correct it, /entity link the right one (this one is kept as history), or /entity unlink it if it was "
            "never true."
        )
    if isinstance(error, MemoryError_):
        return with_next_step(error, NEXT_STEPS)
    if isinstance(error, app_commands.CommandOnCooldown):  # a CheckFailure, whose own text says "cooldown" only
        per, wait = error.cooldown.per, math.ceil(error.retry_after)
        return f"Slow down: {error.cooldown.rate} of these every {per:g} seconds at most. Try again in {wait} s."
    if isinstance(error, UserError | CampaignFileError | app_commands.CheckFailure):
        return str(error) or NOT_DM
    if isinstance(error, ValidationError):
        return validation_problems(error)
    if isinstance(error, asyncpg.CharacterNotInRepertoireError):
        # PostgreSQL's text holds no NUL. The models refuse it where they can name the field; this is the rest
        # (a description edited, a name or query looked up), refused by the database with nothing changed.
        return NUL_TEXT
    if isinstance(error, app_commands.TransformerError):
        return str(error)
    if is_outage(error):
        away, first = outage_said(error)
        return (
            f"{away[0].upper()}{away[1:]}: {first}try again in a minute. A session being recorded goes on: what is "
            "said is kept."
        )
    return None


async def reply_error(interaction: discord.Interaction, error: BaseException, *, where: str) -> None:
    """Answer with one short ephemeral line; log what the user cannot fix with who, where and what."""
    message = user_message(error)
    if is_outage(_unwrap(error)):  # the operator's to see, in one line (the reason is not the players')
        log.warning("%s failed: %s (%s)", where, outage_said(_unwrap(error))[0], short_reason(_unwrap(error)))
    if message is None:
        original = _unwrap(error)
        log.error(
            "unexpected error in %s (guild %s, user %s)",
            where,
            interaction.guild_id,
            interaction.user.id if interaction.user else None,
            exc_info=(type(original), original, original.__traceback__),
        )
        message = "Something went wrong; it has been logged."
    message = clip(message, 1900)
    try:
        if interaction.response.is_done():
            await interaction.followup.send(message, ephemeral=True)
        else:
            await interaction.response.send_message(message, ephemeral=True)
    except discord.HTTPException:
        log.exception("could not tell the user about an error in %s", where)


def describe_interaction(interaction: discord.Interaction) -> str:
    if interaction.command is not None:
        return f"/{interaction.command.qualified_name}"
    data: Any = interaction.data or {}
    return f"component {data.get('custom_id', '?')}"
