"""Rendering helpers shared by the cogs: Discord-limit-safe text, autocomplete choices, the two short-lived
views (a paginator and a confirm/cancel prompt) and the base of the forms (modals) only their opener may submit."""

from __future__ import annotations

import functools
import logging
import re
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from typing import Any, TypeAlias

import discord
from discord import app_commands
from rapidfuzz import fuzz, process

from bot.checks import UserError, describe_interaction, dm_campaign_by_id, reply_error
from memory.text import clip, name_said

log = logging.getLogger("lorekeeper.bot")

# Discord's limits (https://discord.com/developers/docs/resources/message#embed-object-embed-limits)
MAX_CHOICES, MAX_CHOICE_NAME = 25, 100
MAX_FIELD_VALUE, MAX_DESCRIPTION, MAX_EMBED_TOTAL = 1024, 4096, 6000
MAX_TITLE, MAX_FIELDS = 256, 25

_INTRAWORD_UNDERSCORE = re.compile(r"(?<=[^\W_])\\_(?=[^\W_])")


def plain(text: str) -> str:
    """``text`` as written: Discord markdown in it (a transcript's "*rolls*", "> quote", a name like ``__x__``)
    shown, not applied. Every card showing what the table said or an import wrote puts it through this."""
    # an underscore inside a word ("owned_by") never styles in Discord: left as is, it stays searchable and copyable
    return _INTRAWORD_UNDERSCORE.sub("_", discord.utils.escape_markdown(text))


def plain_naming(text: str, names: Iterable[str]) -> str:
    """``text`` as written (:func:`plain`), the first place it says one of ``names`` in bold: the word a DM looks
    for in a quoted paragraph, as /recall bolds the line that answers."""
    said = name_said(text, names)
    if said is None:
        return plain(text)
    return f"{plain(text[: said.start()])}**{plain(said.group())}**{plain(text[said.end() :])}"


def name_choices(names: Iterable[str], current: str, *, ordered: bool = False) -> list[app_commands.Choice[str]]:
    """Up to 25 names for an autocomplete: prefix matches first, then substring, then fuzzy (typos); each group
    by name, or in the order given if ``ordered`` (sessions newest first: a long campaign has hundreds)."""
    unique = list({n: None for n in names}) if ordered else sorted({n: None for n in names}, key=str.casefold)
    typed = " ".join(current.casefold().split())
    if not typed:
        ranked = unique
    else:
        prefix = [n for n in unique if n.casefold().startswith(typed)]
        inside = [n for n in unique if typed in n.casefold() and n not in prefix]
        matches = process.extract(typed, unique, scorer=fuzz.WRatio, processor=str.casefold, limit=25, score_cutoff=60)
        fuzzy = [m[0] for m in matches]
        ranked = list(dict.fromkeys(prefix + inside + fuzzy))
    # a choice's value must also fit in 100 characters; names are capped at 200, so longer ones are dropped
    return [app_commands.Choice(name=n, value=n) for n in ranked if len(n) <= MAX_CHOICE_NAME][:MAX_CHOICES]


AutocompleteCallback: TypeAlias = Callable[
    [discord.Interaction[Any], str], Coroutine[Any, Any, list[app_commands.Choice[str]]]
]


def safe_autocomplete(callback: AutocompleteCallback) -> AutocompleteCallback:
    """An autocomplete that answers ``[]`` when it fails (logged) instead of leaving Discord without an answer
    (the user would see "Loading options failed")."""

    @functools.wraps(callback)
    async def wrapper(interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        try:
            return await callback(interaction, current)
        except UserError:  # no campaign yet, not in a server: nothing to offer, nothing to log
            return []
        except Exception:
            log.exception("autocomplete %s failed (guild %s)", callback.__name__, interaction.guild_id)
            return []

    return wrapper


#: Short-lived views by their id (only while something else holds them); their buttons' custom ids carry it.
_views: weakref.WeakValueDictionary[str, OwnedView] = weakref.WeakValueDictionary()
EXPIRED = "These buttons have expired; run the command again."


class OwnedView(discord.ui.View):
    """A view only the member who ran ``interaction`` may use; errors go to the same reply as commands'.

    When it times out, its buttons are removed from the message it was sent with (the reply to ``interaction``),
    so nobody can press a button that would no longer be answered. A press nothing answers all the same (the
    bot restarted, the removal failed) gets :data:`EXPIRED` from :class:`ExpiredButton`."""

    timeout_s: float = 300

    def __init__(self, interaction: discord.Interaction) -> None:
        super().__init__(timeout=self.timeout_s)
        self.owner_id = interaction.user.id
        self.origin = interaction
        for n, item in enumerate(self.children):
            if isinstance(item, discord.ui.Button):
                item.custom_id = f"lk:view:{self.id}:{n}"
        _views[self.id] = self

    async def on_timeout(self) -> None:
        try:
            await self.origin.edit_original_response(view=None)
        except discord.HTTPException as exc:  # the reply was deleted, or its token expired
            log.info("could not remove the timed-out buttons of %s: %s", describe_interaction(self.origin), exc)

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        if interaction.user.id != self.owner_id:
            await interaction.response.send_message("These buttons belong to someone else's command.", ephemeral=True)
            return False
        return True

    async def on_error(self, interaction: discord.Interaction, error: Exception, item: discord.ui.Item[Any]) -> None:
        await reply_error(interaction, error, where=describe_interaction(interaction))


class ExpiredButton(discord.ui.DynamicItem[discord.ui.Button[Any]], template=r"lk:view:(?P<view>[0-9a-f]+):\d+"):
    """Any button of an :class:`OwnedView` whose view no longer listens: without an answer the user would see
    "This interaction failed". Registered in ``setup_hook``."""

    def __init__(self, item: discord.ui.Button[Any], view_id: str) -> None:
        super().__init__(item)
        self.view_id = view_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str]
    ) -> ExpiredButton:
        assert isinstance(item, discord.ui.Button)  # the template only matches buttons' ids
        return cls(item, match["view"])

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        # discord.py offers every press to the dynamic items and to a live view alike (to the dynamic items
        # first, before the view can stop): a view this client still listens with answers the press itself.
        view = _views.get(self.view_id)
        return view is None or view.origin.client is not interaction.client or not view.is_dispatching()

    async def callback(self, interaction: discord.Interaction) -> None:
        await interaction.response.send_message(EXPIRED, ephemeral=True)


#: How long an open form waits for its submit. A submit is a fresh interaction, so nothing on Discord's side
#: expires: a DM may type notes for a whole session night. The cost is the memory of forms closed unsubmitted.
FORM_TIMEOUT_S = 8 * 3600


class OwnedModal(discord.ui.Modal):
    """A form only the member who opened it, in the guild it was opened in, may submit.

    discord.py routes a modal submit by custom id alone, so anyone who knows the id could submit it: the modal
    remembers who opened it where and refuses everyone else (``on_submit`` still checks permissions again: the
    opener may have lost them since). Errors go to the same reply as commands'.
    """

    def __init__(
        self, *, title: str, custom_id: str, user_id: int, guild_id: int | None, timeout: float = FORM_TIMEOUT_S
    ) -> None:
        super().__init__(title=clip(title, 45), custom_id=custom_id, timeout=timeout)
        self.user_id = user_id
        self.guild_id = guild_id

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        if interaction.user.id == self.user_id and interaction.guild_id == self.guild_id:
            return True
        log.warning(
            "refused modal %s submitted by user %s in guild %s (opened by %s in %s)",
            self.custom_id,
            interaction.user.id,
            interaction.guild_id,
            self.user_id,
            self.guild_id,
        )
        await interaction.response.send_message("This edit form is not yours.", ephemeral=True)
        return False

    async def on_error(
        self, interaction: discord.Interaction, error: Exception, item: discord.ui.Item[Any] | None = None, /
    ) -> None:
        # ``item`` only to match View's signature too (a modal's base): a modal's errors come without one
        await reply_error(interaction, error, where=f"modal {self.custom_id}")


class Paginator(OwnedView):
    """Pages of an embed with Prev/Next buttons; shown without buttons when there is one page."""

    def __init__(self, interaction: discord.Interaction, pages: Sequence[discord.Embed]) -> None:
        super().__init__(interaction)
        self.pages = list(pages)
        self.index = 0
        for n, page in enumerate(self.pages):
            page.set_footer(text=f"page {n + 1} of {len(self.pages)}")
        self._sync_buttons()

    @classmethod
    async def reply(cls, interaction: discord.Interaction, pages: Sequence[discord.Embed]) -> None:
        """Answer ``interaction`` (ephemeral) with the first page; with the buttons when there are more."""
        view = cls(interaction, pages)
        if len(view.pages) > 1:
            await interaction.response.send_message(embed=view.pages[0], view=view, ephemeral=True)
        else:
            await interaction.response.send_message(embed=view.pages[0], ephemeral=True)

    def _sync_buttons(self) -> None:
        self.prev.disabled = self.index == 0
        self.next.disabled = self.index == len(self.pages) - 1

    async def _show(self, interaction: discord.Interaction, index: int) -> None:
        self.index = index
        self._sync_buttons()
        await interaction.response.edit_message(embed=self.pages[index], view=self)

    @discord.ui.button(label="Prev", style=discord.ButtonStyle.secondary)
    async def prev(self, interaction: discord.Interaction, button: discord.ui.Button[Paginator]) -> None:
        await self._show(interaction, max(0, self.index - 1))

    @discord.ui.button(label="Next", style=discord.ButtonStyle.secondary)
    async def next(self, interaction: discord.Interaction, button: discord.ui.Button[Paginator]) -> None:
        await self._show(interaction, min(len(self.pages) - 1, self.index + 1))


def paged_embeds(title: str, lines: Sequence[str], *, colour: int = 0x5865F2) -> list[discord.Embed]:
    """Whole lines per page, each page filled up to the description limit; only a line longer than a whole
    page on its own is clipped, so no entry is cut off at a page break or skipped."""
    pages: list[list[str]] = [[]]
    size = 0
    for line in lines:
        line = clip(line, MAX_DESCRIPTION)
        if pages[-1] and size + 1 + len(line) > MAX_DESCRIPTION:
            pages.append([])
        size = len(line) if not pages[-1] else size + 1 + len(line)
        pages[-1].append(line)
    return [
        discord.Embed(title=clip(title, MAX_TITLE), description="\n".join(p) or "nothing yet", colour=colour)
        for p in pages
    ]


def fit_lines(lines: Sequence[str], limit: int) -> str:
    """As many whole lines as fit in ``limit`` characters, then how many were left out."""
    whole = "\n".join(lines)
    if len(whole) <= limit:
        return whole
    size = -1  # the length of the first k lines joined
    best = ""
    for k, line in enumerate(lines[:-1], start=1):
        size += 1 + len(line)
        candidate = f"\n… and {len(lines) - k} more"
        if size + len(candidate) > limit:
            break
        best = "\n".join(lines[:k]) + candidate
    if best:
        return best
    # not even one whole line fits beside the count: the first line clipped, then the count if it fits
    tail = f"\n… and {len(lines) - 1} more" if len(lines) > 1 else ""
    if limit - len(tail) < 10:
        return clip(whole, limit)
    return clip(lines[0], limit - len(tail)) + tail


def add_field_within(
    embed: discord.Embed, name: str, value: str | Sequence[str], *, inline: bool = True, min_room: int = 40
) -> bool:
    """Add a field only as long as the embed's total stays within Discord's 6,000 characters and 25 fields;
    ``value`` as lines is cut at a line. False when there was no room left for it."""
    if len(embed.fields) >= MAX_FIELDS:
        return False
    room = min(MAX_FIELD_VALUE, MAX_EMBED_TOTAL - len(embed) - len(name))
    text = value if isinstance(value, str) else "\n".join(value)
    if room < min(len(text), min_room) or room <= 0:
        return False
    embed.add_field(
        name=name, value=clip(value, room) if isinstance(value, str) else fit_lines(value, room), inline=inline
    )
    return True


class Confirm(OwnedView):
    """Confirm/Cancel for destructive commands of the DM of campaign ``dm_of``; ``action`` runs on Confirm and
    returns the final message."""

    timeout_s = 120

    def __init__(self, interaction: discord.Interaction, action: Callable[[], Awaitable[str]], *, dm_of: int) -> None:
        super().__init__(interaction)
        self.action = action
        self.dm_of = dm_of

    @discord.ui.button(label="Confirm", style=discord.ButtonStyle.danger)
    async def confirm(self, interaction: discord.Interaction, button: discord.ui.Button[Confirm]) -> None:
        await dm_campaign_by_id(interaction, self.dm_of)  # still the DM: the role may have gone since the ask
        self.stop()
        # Answered at once: the action (a big campaign's cascade) may outlast Discord's 3 s. The buttons go
        # either way: if it fails, none may stay with nothing listening behind it.
        await interaction.response.defer()
        try:
            done = await self.action()
        except Exception:
            await interaction.edit_original_response(content="Not done: see the message below.", embed=None, view=None)
            raise
        await interaction.edit_original_response(content=clip(done, 2000), embed=None, view=None)

    @discord.ui.button(label="Cancel", style=discord.ButtonStyle.secondary)
    async def cancel(self, interaction: discord.Interaction, button: discord.ui.Button[Confirm]) -> None:
        self.stop()
        await interaction.response.edit_message(content="Cancelled; nothing was changed.", embed=None, view=None)
