"""``/review``: what the bot was unsure of, oldest first, one embed each with Accept / Edit / Reject (and, for a
proposed entity, Same as…: it is one already known under another name).

The buttons are ``DynamicItem``s whose custom id carries the campaign id and the item ref (``e12`` / ``f34``), so
a button on a message sent before a restart still works: nothing about it lives in the process. Items can also be
posted to a review channel (``/lorekeeper setup review_channel``) as they arrive.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator, Coroutine
from typing import Any, Self

import asyncpg
import discord
from discord import app_commands
from discord.ext import commands, tasks

from bot.app import LorekeeperBot
from bot.checks import (
    DM_ROLE_KEY,
    REVIEW_CHANNEL_KEY,
    UserError,
    describe_interaction,
    dm_campaign,
    dm_campaign_by_id,
    guild_id_of,
    open_to_players,
    reply_error,
)
from bot.views import MAX_FIELD_VALUE, OwnedModal, add_field_within, clip, plain, plain_naming
from campaigns import batches
from memory.errors import AlreadyDecidedError, MemoryError_, NotFoundError
from memory.models import Campaign, EntityType, MergeResult, ReviewItem, ReviewStatus
from memory.replies import describe_same_as, kept_old_name
from memory.review import ReviewQueue, quoted_above, said_names, watch_new_items
from memory.store import CampaignMemory
from memory.text import MAX_FACT_VALUE_CHARS, counted, excerpt

log = logging.getLogger("lorekeeper.review")

#: Items shown per /review; the rest wait for the next one (five messages keep the channel readable).
PAGE = 5
#: Items posted to the review channel at a time (Discord rate-limits bursts; the rest follow a little later).
POST_BATCH = 10
#: New items are posted this long after the database announces them, so a burst of commits makes one post.
SETTLE_SECONDS = 1.0
#: After losing the listening connection, listen again this much later (the poll posts meanwhile).
LISTEN_RETRY_SECONDS = 30.0
COLOURS = {ReviewStatus.pending: 0xF1C40F, ReviewStatus.accepted: 0x2ECC71, ReviewStatus.rejected: 0xE74C3C}


def item_status(item: ReviewItem) -> ReviewStatus:
    # an item holds its entity or else its fact (ReviewItem names no type for either)
    return item.entity.status if item.entity else item.fact.status  # type: ignore[union-attr]


def item_embed(
    item: ReviewItem, *, decided_by: str | None = None, footer: str | None = None, above: ReviewItem | None = None
) -> discord.Embed:
    """The card of an item; ``footer`` replaces the one saying who decided it; ``above``: the card before it, which
    quotes the same line (:func:`memory.review.quoted_above`), so this one refers to it."""
    status = item_status(item)
    kind = "New entity" if item.entity else "New fact"
    # a description of 3,000 leaves the fields room within Discord's 6,000 in total: what was said always shows
    embed = discord.Embed(title=kind, description=clip(plain(item.describe()), 3000), colour=COLOURS[status])
    if footer is None and status != ReviewStatus.pending:
        footer = f"{status.value}" + (f" by {decided_by}" if decided_by else "")
    # the id last, in small print: the buttons carry it, the DM never types it (the command line's list shows it)
    embed.set_footer(text=clip(f"{footer} · {item.ref}" if footer else item.ref, 2048))  # first: fields fit around it
    # an item holds its entity or else its fact (ReviewItem names no type for either)
    provenance = item.entity.provenance if item.entity else item.fact.provenance  # type: ignore[union-attr]
    embed.add_field(name="Confidence", value=f"{provenance.confidence:.2f}")
    embed.add_field(name="Source", value=provenance.source.value)
    if provenance.review_reason:  # sure, but its lines do not say it: why it waits for the DM
        add_field_within(embed, "Waits because", provenance.review_reason, inline=False)
    if item.said is not None:
        more = f" and {counted(item.lines - 1, 'other line')}" if item.lines > 1 else ""
        add_field_within(embed, "Said in", plain(item.said.where()) + more)
        if above is not None:  # the same paragraph twice filled a phone's screen with one quote
            named = f"**{plain(above.entity.name)}**" if above.entity else f"the fact “{plain(above.describe())}”"
            add_field_within(embed, "Said", f"the line quoted above, on the card of {named}", inline=False)
        else:
            # a narrator's paragraph may name the item only past a field's 1,024 characters: show the part that does
            text = excerpt(item.said.text, said_names(item), MAX_FIELD_VALUE - len(item.said.speaker) - 4)
            add_field_within(
                embed, "Said", f"{plain(item.said.speaker)}: “{plain_naming(text, said_names(item))}”", inline=False
            )
    if settled := item.settled():
        add_field_within(embed, "Accepting it", settled, inline=False)
    if item.decided_with:  # their own cards would only say "already decided" when clicked
        # each as the queue says it, "e12: new npc 'Korvash'": without the id, as the card's title
        decided = [said.partition(": ")[2] for said in item.decided_with]
        add_field_within(embed, f"{status.value.capitalize()} with it", [plain(said) for said in decided], inline=False)
    return embed


def item_view(campaign_id: int, ref: str) -> discord.ui.View:
    view = discord.ui.View(timeout=None)
    view.add_item(AcceptButton(campaign_id, ref))
    view.add_item(EditButton(campaign_id, ref))
    view.add_item(RejectButton(campaign_id, ref))
    if ref.startswith("e"):
        view.add_item(SameAsButton(campaign_id, ref))
    return view


async def _queue_for(interaction: discord.Interaction, campaign_id: int) -> ReviewQueue:
    """The review queue of the button's campaign, if that campaign is this guild's and the clicker its DM."""
    return (await dm_campaign_by_id(interaction, campaign_id, refusal="Only the DM can review.")).review


@contextlib.asynccontextmanager
async def item_still_there(ref: str) -> AsyncIterator[None]:
    """A card or form outlives its item (a session delete takes the guesses only it made): say so, not that no
    such item exists, as if the DM had mistyped it."""
    try:
        yield
    except NotFoundError as exc:
        if exc.subject != "review item":
            raise
        raise UserError(
            f"This item ({ref}) no longer exists: the session it was heard in was deleted, or it was merged or "
            "removed since. /review shows what still waits."
        ) from None


class _ReviewButton(
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=r"lk:review:(?P<action>[a-z-]+):(?P<campaign>\d+):(?P<ref>[efb]\d+)",
):
    """What the review buttons share; each concrete one has its own template and is the one registered (this
    class's template, which every review button matches, is only what discord.py demands of a subclass)."""

    action = ""
    button_label = ""
    button_style = discord.ButtonStyle.secondary

    def __init__(self, campaign_id: int, ref: str) -> None:
        super().__init__(
            discord.ui.Button(
                label=self.button_label,
                style=self.button_style,
                custom_id=f"lk:review:{self.action}:{campaign_id}:{ref}",
            )
        )
        self.campaign_id = campaign_id
        self.ref = ref

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str]
    ) -> Self:
        return cls(int(match["campaign"]), match["ref"])

    async def callback(self, interaction: discord.Interaction) -> None:
        # a DynamicItem's errors would only be logged by discord.py; the user gets the same answer as commands
        try:
            async with item_still_there(self.ref):
                await self.run(interaction, await _queue_for(interaction, self.campaign_id))
        except Exception as exc:
            await reply_error(interaction, exc, where=describe_interaction(interaction))

    async def run(self, interaction: discord.Interaction, queue: ReviewQueue) -> None:
        raise NotImplementedError


class AcceptButton(
    _ReviewButton,
    template=r"lk:review:accept:(?P<campaign>\d+):(?P<ref>[ef]\d+)",
):
    action, button_label, button_style = "accept", "Accept", discord.ButtonStyle.success

    async def run(self, interaction: discord.Interaction, queue: ReviewQueue) -> None:
        item = await queue.accept(self.ref)
        await interaction.response.edit_message(embed=item_embed(item, decided_by=interaction.user.name), view=None)


class RejectButton(
    _ReviewButton,
    template=r"lk:review:reject:(?P<campaign>\d+):(?P<ref>[ef]\d+)",
):
    action, button_label, button_style = "reject", "Reject", discord.ButtonStyle.danger

    async def run(self, interaction: discord.Interaction, queue: ReviewQueue) -> None:
        item = await queue.reject(self.ref)
        await interaction.response.edit_message(embed=item_embed(item, decided_by=interaction.user.name), view=None)


async def _still_pending(queue: ReviewQueue, ref: str) -> ReviewItem:
    """The item, if it still waits: said before the DM types into a modal whose submit could only fail."""
    item = await queue.get(ref)
    status = item_status(item)
    if status != ReviewStatus.pending:
        raise AlreadyDecidedError(item.ref, status.value, item.describe())
    return item


class EditButton(
    _ReviewButton,
    template=r"lk:review:edit:(?P<campaign>\d+):(?P<ref>[ef]\d+)",
):
    action, button_label, button_style = "edit", "Edit", discord.ButtonStyle.primary

    async def run(self, interaction: discord.Interaction, queue: ReviewQueue) -> None:
        item = await _still_pending(queue, self.ref)
        modal = EditModal(
            queue, item, campaign_id=self.campaign_id, user_id=interaction.user.id, guild_id=guild_id_of(interaction)
        )
        await interaction.response.send_modal(modal)


class EditModal(OwnedModal):
    """Correct an item and accept it; fields are pre-filled with what the bot understood."""

    def __init__(self, queue: ReviewQueue, item: ReviewItem, *, campaign_id: int, user_id: int, guild_id: int) -> None:
        # the opener's id in the custom id keeps two DMs editing the same item from replacing each other's modal
        custom_id = f"lk:review:modal:{user_id}:{campaign_id}:{item.ref}"
        super().__init__(title=f"Edit the {item.kind.value}", custom_id=custom_id, user_id=user_id, guild_id=guild_id)
        self.queue = queue
        self.item = item
        self.campaign_id = campaign_id
        self.fields: dict[str, discord.ui.TextInput[EditModal]] = {}
        self.kept: set[str] = set()  # fields whose text did not fit their box: unchanged unless typed over
        if item.entity is not None:
            e = item.entity
            self._field("name", "Name", e.name, max_length=200)
            # a label holds 45 characters, too few for the eight types: they go in the placeholder
            types = ", ".join(t.value for t in EntityType)
            self._field("type", "Type", e.type.value, max_length=20, placeholder=types)
            self._field(
                "description",
                "Description",
                e.description,
                style=discord.TextStyle.paragraph,
                required=False,
                max_length=2000,
            )
            self._field("aliases", "Aliases (comma-separated)", ", ".join(e.aliases), required=False, max_length=4000)
        else:
            f = item.fact
            assert f is not None
            self._field("type", "Relation", f.type, max_length=100)
            self._field("target", "Target entity (or leave empty)", f.target_name or "", required=False, max_length=200)
            self._field(
                "value",
                "Value (when there is no target)",
                f.value or "",
                required=False,
                max_length=MAX_FACT_VALUE_CHARS,
            )

    def _field(self, key: str, label: str, default: str, **options: Any) -> None:
        if len(default) > options["max_length"]:
            # Pre-filled cut short, a submit would save the cut: the box starts empty and is left out unless
            # the DM types a replacement.
            self.kept.add(key)
            options |= {
                "required": False,
                "placeholder": f"{len(default):,} characters, too long for this box: kept unless you type new text",
            }
            default = ""
        field: discord.ui.TextInput[EditModal] = discord.ui.TextInput(
            label=clip(label, 45), default=default or None, custom_id=key, **options
        )
        self.fields[key] = field
        self.add_item(field)

    async def on_submit(self, interaction: discord.Interaction) -> None:
        # the opener may have lost the DM role since the modal opened; the campaign must be this guild's
        queue = await _queue_for(interaction, self.campaign_id)
        values = {k: f.value.strip() for k, f in self.fields.items() if f.value.strip() or k not in self.kept}
        if self.item.entity is not None:
            changes: dict[str, Any] = {"name": values["name"], "type": values["type"]}
            if "description" in values:
                changes["description"] = values["description"]
            aliases = [a.strip() for a in values.get("aliases", "").split(",") if a.strip()]
            if "aliases" in values and aliases != self.item.entity.aliases:  # as shown: a rename keeps the old name
                changes["aliases"] = aliases
        else:
            changes = {"type": values.get("type", "")}
            if values["target"]:
                changes["target"] = values["target"]
            elif values.get("value"):
                changes["value"] = values["value"]
        async with item_still_there(self.item.ref):
            item = await queue.edit(self.item.ref, **changes)
        embed = item_embed(item, decided_by=f"{interaction.user.name} (edited)")
        before, after = self.item.entity, item.entity
        kept = before is not None and after is not None and kept_old_name(before, after)
        said = (
            f"Its old name **{before.name}** stays as an alias (`/entity edit` with `aliases: -` clears it)."
            if kept and before is not None
            else None
        )
        if interaction.message is not None:
            await interaction.response.edit_message(content=said, embed=embed, view=None)
        else:
            await interaction.response.send_message(said, embed=embed, ephemeral=True)


class SameAsButton(
    _ReviewButton,
    template=r"lk:review:same:(?P<campaign>\d+):(?P<ref>e\d+)",
):
    action, button_label, button_style = "same", "Same as…", discord.ButtonStyle.secondary

    async def run(self, interaction: discord.Interaction, queue: ReviewQueue) -> None:
        item = await _still_pending(queue, self.ref)
        modal = SameAsModal(
            item, campaign_id=self.campaign_id, user_id=interaction.user.id, guild_id=guild_id_of(interaction)
        )
        await interaction.response.send_modal(modal)


class SameAsModal(OwnedModal):
    """Name the known entity a proposed one is ("the old man" is Vaskerrin Holt): merged into it, the item
    leaves the queue."""

    def __init__(self, item: ReviewItem, *, campaign_id: int, user_id: int, guild_id: int) -> None:
        custom_id = f"lk:review:same-modal:{user_id}:{campaign_id}:{item.ref}"
        # a modal's title holds 45: the name is clipped, never the words saying what to type
        said = " is the same as…"
        title = clip(item.entity.name if item.entity else "It", 45 - len(said)) + said
        super().__init__(title=title, custom_id=custom_id, user_id=user_id, guild_id=guild_id)
        self.item = item
        self.campaign_id = campaign_id
        self.existing: discord.ui.TextInput[SameAsModal] = discord.ui.TextInput(
            label="The known entity's name or alias",
            custom_id="existing",
            max_length=200,
            placeholder=clip(f"the entity {item.entity.name if item.entity else item.ref} is another name for", 100),
        )
        self.add_item(self.existing)

    async def on_submit(self, interaction: discord.Interaction) -> None:
        # the opener may have lost the DM role since the modal opened; the campaign must be this guild's
        queue = await _queue_for(interaction, self.campaign_id)
        async with item_still_there(self.item.ref):
            result = await queue.same_as(self.item.ref, self.existing.value.strip())
        said = describe_same_as(result)
        embed = same_as_embed(self.item, result, decided_by=interaction.user.name)
        if interaction.message is not None:
            await interaction.response.edit_message(content=clip(said, 2000), embed=embed, view=None)
        else:
            await interaction.response.send_message(clip(said, 2000), embed=embed, ephemeral=True)


def same_as_embed(item: ReviewItem, result: MergeResult, *, decided_by: str) -> discord.Embed:
    """The card of an item merged into a known entity: it no longer exists to be shown as it is now."""
    embed = item_embed(item, footer=f"same as {result.entity.name} by {decided_by}")
    embed.colour = COLOURS[ReviewStatus.accepted]
    return embed


def batch_embed(batch: batches.ImportBatch, *, decided_by: str | None = None, said: str = "") -> discord.Embed:
    """An import batch as one card: its counts and a sample; the DM accepts or rejects it whole."""
    first, *rest = batch.card().split("\n")
    embed = discord.Embed(title=clip(first, 256), description=clip("\n".join([*rest, said]).strip(), 4000))
    if decided_by:
        embed.set_footer(text=f"{batch.status} by {decided_by}")
    return embed


def batch_view(campaign_id: int, ref: str) -> discord.ui.View:
    view = discord.ui.View(timeout=None)
    view.add_item(BatchAcceptButton(campaign_id, ref))
    view.add_item(BatchRejectButton(campaign_id, ref))
    return view


class _BatchButton(_ReviewButton, template=r"lk:review:batch-[a-z]+:(?P<campaign>\d+):(?P<ref>b\d+)"):
    async def callback(self, interaction: discord.Interaction) -> None:
        try:
            mem = await dm_campaign_by_id(interaction, self.campaign_id, refusal="Only the DM can review.")
            await self.decide(interaction, mem)
        except Exception as exc:
            await reply_error(interaction, exc, where=describe_interaction(interaction))

    async def decide(self, interaction: discord.Interaction, mem: CampaignMemory) -> None:
        raise NotImplementedError


class BatchAcceptButton(
    _BatchButton,
    template=r"lk:review:batch-accept:(?P<campaign>\d+):(?P<ref>b\d+)",
):
    action, button_label, button_style = "batch-accept", "Accept all", discord.ButtonStyle.success

    async def decide(self, interaction: discord.Interaction, mem: CampaignMemory) -> None:
        await interaction.response.defer()  # a big world takes longer than Discord's three seconds
        try:
            batch, report = await batches.accept(mem, self.ref)
        except AlreadyDecidedError:  # on another copy of its card, or on the command line: said as such
            raise
        except MemoryError_ as exc:  # the campaign changed since: nothing of it was written
            raise UserError(f"Nothing of {self.ref} was imported:\n{exc}") from None
        await interaction.edit_original_response(
            embed=batch_embed(
                batch, decided_by=interaction.user.name, said="\n".join([report.summary(), *report.warnings()])
            ),
            view=None,
        )


class BatchRejectButton(
    _BatchButton,
    template=r"lk:review:batch-reject:(?P<campaign>\d+):(?P<ref>b\d+)",
):
    action, button_label, button_style = "batch-reject", "Reject all", discord.ButtonStyle.danger

    async def decide(self, interaction: discord.Interaction, mem: CampaignMemory) -> None:
        batch = await batches.reject(mem, self.ref)
        await interaction.response.edit_message(embed=batch_embed(batch, decided_by=interaction.user.name), view=None)


DYNAMIC_ITEMS = (AcceptButton, EditButton, RejectButton, SameAsButton, BatchAcceptButton, BatchRejectButton)


class Review(commands.Cog):
    """``/review``, and new items posted to the review channel as the database announces them (a poll catches
    what a lost listening connection missed)."""

    def __init__(self, bot: LorekeeperBot, *, poll_seconds: float = 300) -> None:
        self.bot = bot
        self.poll_seconds = poll_seconds
        self._posting: dict[int, asyncio.Lock] = {}  # per guild: the listener and the poll never post twice
        #: Per guild: why the review channel got nothing at the last try (open to players), for /review to say.
        self._withheld: dict[int, str] = {}
        self._due: set[int] = set()  # campaigns with new items, posted after a short settle
        self._tasks: set[asyncio.Task[None]] = set()
        self._unloaded = False

    async def cog_load(self) -> None:
        self.poll.change_interval(seconds=self.poll_seconds)
        self.poll.start()
        self._start(self._listen())

    async def cog_unload(self) -> None:
        self._unloaded = True
        self.poll.cancel()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _start(self, work: Coroutine[Any, Any, None]) -> None:
        if self._unloaded:
            work.close()  # a notification that arrived as the cog was unloading
            return
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _listen(self) -> None:
        await self.bot.wait_until_ready()
        pool = self.bot.memory.pool
        while not pool.is_closing():
            try:
                # once listening, what was filed while nobody listened (at start, after a lost connection)
                await watch_new_items(pool, self._new_items, lambda: self._start(self.poll()))
                if pool.is_closing():
                    return
                log.warning("review notifications: the listening connection was lost; listening again")
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                log.warning("review notifications: %s; the poll posts new items meanwhile", exc)
            except Exception:
                log.exception("review notifications failed; the poll posts new items meanwhile")
            await asyncio.sleep(LISTEN_RETRY_SECONDS)

    def _new_items(self, campaign_id: int) -> None:
        if campaign_id not in self._due:
            self._due.add(campaign_id)
            self._start(self._post_for(campaign_id))

    async def _post_for(self, campaign_id: int) -> None:
        await asyncio.sleep(SETTLE_SECONDS)  # one post for a burst of commits
        self._due.discard(campaign_id)
        try:
            guild_id = await self.bot.memory.guild_of(campaign_id)
            guild = self.bot.get_guild(guild_id) if guild_id else None
            if guild is None:
                return
            posted = await self.post_new_pending(guild, campaign_id)
        except Exception:
            log.exception("posting the review items of campaign %s failed", campaign_id)
            return
        if posted == POST_BATCH:
            self._new_items(campaign_id)  # more may wait: the next batch after the settle

    @app_commands.command(name="review", description="Review what the bot was unsure of (DM only)")
    @app_commands.guild_only()  # on each command: a plain Cog's class decorator does not reach them
    async def review(self, interaction: discord.Interaction) -> None:
        campaign, mem = await dm_campaign(interaction)
        total = await mem.review.count()
        waiting = await batches.pending(mem)
        # the channel check runs when items are posted; the DM hears of a refusal here, not only in the log
        withheld = f"\n{self._withheld[guild_id_of(interaction)]}" if guild_id_of(interaction) in self._withheld else ""
        if waiting:  # imports first, each one card decided whole
            await interaction.response.send_message(
                f"**{campaign.name}**: {len(waiting)} import{'s' * (len(waiting) != 1)} and {total} other item"
                f"{'s' * (total != 1)} waiting for review.{withheld}",
                ephemeral=True,
            )
            for batch in waiting:
                await interaction.followup.send(
                    embed=batch_embed(batch), view=batch_view(campaign.id, batch.ref), ephemeral=True
                )
            if total == 0:
                return
            withheld = ""
        if total == 0:
            await interaction.response.send_message(f"Nothing to review.{withheld}", ephemeral=True)
            return
        items = await mem.review.pending(limit=PAGE)
        more = f" (showing the oldest {len(items)})" if total > len(items) else ""
        if not waiting:
            await interaction.response.send_message(
                f"**{campaign.name}**: {total} waiting for review{more}.{withheld}", ephemeral=True
            )
        for item, above in zip(items, quoted_above(items), strict=True):
            await interaction.followup.send(
                embed=item_embed(item, above=above), view=item_view(campaign.id, item.ref), ephemeral=True
            )

    @tasks.loop(seconds=300)
    async def poll(self) -> None:
        for guild in self.bot.guilds:
            try:
                await self.post_new_pending(guild)
            except Exception:
                log.exception("posting review items in guild %s failed", guild.id)

    @poll.before_loop
    async def _before_poll(self) -> None:
        await self.bot.wait_until_ready()

    async def post_new_pending(self, guild: discord.Guild, campaign_id: int | None = None) -> int:
        """Post the items not yet posted of each of the guild's campaigns (or of ``campaign_id``) to its review
        channel, if it has one (a batch of each); returns how many. Not only the active campaign's: a session's jobs
        may file items after the DM switched to another, so each card says which campaign it is of."""
        async with self._posting.setdefault(guild.id, asyncio.Lock()):
            self._withheld.pop(guild.id, None)  # said again below if it still holds
            posted = 0
            for campaign in await self.bot.memory.campaigns(guild.id).list():
                if campaign_id in (None, campaign.id):
                    posted += await self._post_new_pending(guild, campaign)
            return posted

    async def _post_new_pending(self, guild: discord.Guild, campaign: Campaign) -> int:
        if not campaign.settings.get(REVIEW_CHANNEL_KEY):
            return 0
        channel = guild.get_channel(int(campaign.settings[REVIEW_CHANNEL_KEY]))
        if not isinstance(channel, discord.TextChannel):
            return 0
        mem: CampaignMemory = self.bot.memory.campaign(campaign.id)
        # each item once, remembered in the database (a restart does not post it again, a failed send does)
        fresh = await mem.review.pending(limit=POST_BATCH, unposted=True)
        if not fresh:
            return 0  # before the check below, which may ask Discord about members added by name
        # set before setup refused it, or opened since
        if (who := await open_to_players(channel, campaign.settings.get(DM_ROLE_KEY))) is not None:
            log.warning("not posting review items to #%s of guild %s: it is open to %s", channel.name, guild.id, who)
            self._withheld[guild.id] = (
                f"⚠️ New items are not posted to {channel.mention}: it is open to {who}, and they show secrets. "
                "Close it to them, or choose another channel with `/lorekeeper setup`."
            )
            return 0
        for item, above in zip(fresh, quoted_above(fresh), strict=True):
            # above the card, which the buttons' answers edit and keep it
            await channel.send(
                f"Campaign: **{campaign.name}**",
                embed=item_embed(item, above=above),
                view=item_view(campaign.id, item.ref),
            )
            await mem.review.mark_posted(item)
        return len(fresh)


async def setup(bot: LorekeeperBot) -> None:
    await bot.add_cog(Review(bot))
