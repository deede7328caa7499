"""The Discord application: a ``commands.Bot`` subclass and the factory that builds it from settings.

RoboDanny style: ``setup_hook`` loads the extensions list (one cog per file), registers the review buttons as
``DynamicItem``s so buttons on messages from before a restart still work (those of the short-lived views say they
have expired), and syncs to the dev guild.
"""

from __future__ import annotations

import logging
from typing import Any

import discord
from discord import app_commands
from discord.ext import commands

from bot.checks import describe_interaction, reply_error
from bot.settings import Settings
from bot.views import ExpiredButton
from memory.providers.embeddings import Embedder
from memory.store import Memory

log = logging.getLogger("lorekeeper.bot")

EXTENSIONS = (
    "cogs.campaigns",
    "cogs.entities",
    "cogs.review",
    "cogs.recall",
    "cogs.admin",
    "cogs.sessions",
)


def intents() -> discord.Intents:
    """Guilds (the guild cache, roles for the DM check) and voice states (who is in the session channel).
    No privileged intent: the interaction payload carries the member and its roles, so members/presences/
    message content are not needed."""
    wanted = discord.Intents.none()
    wanted.guilds = True
    wanted.voice_states = True
    return wanted


class LorekeeperBot(commands.Bot):
    def __init__(
        self,
        settings: Settings,
        memory: Memory,
        *,
        embedder: Embedder | None = None,
        sync_on_start: bool = True,
        **options: Any,
    ) -> None:
        owner_ids = set(settings.owner_ids) or None
        super().__init__(
            # no prefix commands: everything is a slash command, so mentions are the harmless default
            command_prefix=commands.when_mentioned,
            intents=intents(),
            owner_ids=owner_ids,
            help_command=None,
            allowed_mentions=discord.AllowedMentions.none(),
            **options,
        )
        self.settings = settings
        self.memory = memory
        # /recall adds vector search when an embedder is given (shared with the in-process workers)
        self.embedder = embedder
        self.sync_on_start = sync_on_start
        self.tree.error(self.on_app_command_error)

    async def setup_hook(self) -> None:
        for extension in EXTENSIONS:
            await self.load_extension(extension)
        from cogs.review import DYNAMIC_ITEMS

        self.add_dynamic_items(*DYNAMIC_ITEMS, ExpiredButton)
        if self.sync_on_start and self.settings.dev_guild_id:
            guild = discord.Object(self.settings.dev_guild_id)
            self.tree.copy_global_to(guild=guild)
            synced = await self.tree.sync(guild=guild)
            log.info("synced %d commands to dev guild %s", len(synced), self.settings.dev_guild_id)

    async def on_app_command_error(self, interaction: discord.Interaction, error: app_commands.AppCommandError) -> None:
        await reply_error(interaction, error, where=describe_interaction(interaction))


def create_bot(settings: Settings, memory: Memory, **options: Any) -> LorekeeperBot:
    """The bot for ``settings`` over ``memory``; ``options`` go to ``discord.Client`` (tests pass
    ``guild_ready_timeout``), plus ``embedder`` for vector recall and ``sync_on_start=False`` for tools that
    sync by themselves."""
    return LorekeeperBot(settings, memory, **options)
