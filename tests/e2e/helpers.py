"""Helpers the end-to-end tests share (fixtures are in conftest.py): build the bot, wait for a condition, read
what the fake Discord holds."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from bot.app import LorekeeperBot, create_bot
from bot.settings import Settings
from memory.store import CampaignMemory, Memory
from tests.e2e.fake_discord import FakeDiscord, FakeGuild


def make_bot(fake: FakeDiscord, memory: Memory, tmp_path: Path, **settings: object) -> LorekeeperBot:
    values = {"data_dir": tmp_path, "owner_ids": [fake.owner_id]} | settings
    return create_bot(Settings(**values), memory, guild_ready_timeout=0.05)


async def active(memory: Memory, guild: FakeGuild) -> CampaignMemory:
    """The guild's active campaign."""
    campaign = await memory.campaigns(guild.id).active()
    assert campaign is not None
    return memory.campaign(campaign.id)


async def until_true(predicate: Callable[[], bool], within_s: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    while not predicate():
        assert loop.time() < deadline, f"not true after {within_s} s"
        await asyncio.sleep(0.05)


def modal_field(modal: dict, custom_id: str) -> dict:
    """A field of a modal, whatever layout discord.py gave it (action rows or labels)."""
    stack = list(modal["components"])
    while stack:
        component = stack.pop()
        if component.get("custom_id") == custom_id:
            return component
        stack += component.get("components", []) + ([component["component"]] if "component" in component else [])
    raise LookupError(custom_id)
