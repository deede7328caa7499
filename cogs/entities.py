"""``/entity``: the DM's world registry — add, list, show, edit, describe, remove, merge, link, unlink."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import discord
from discord import app_commands
from discord.ext import commands

from bot.app import LorekeeperBot
from bot.checks import UserError, active_campaign, dm_campaign, dm_campaign_by_id, member_is_dm
from bot.views import (
    MAX_TITLE,
    Confirm,
    OwnedModal,
    Paginator,
    add_field_within,
    clip,
    name_choices,
    paged_embeds,
    plain,
    plain_naming,
    safe_autocomplete,
)
from memory.context import bookkeeping, visible_identity
from memory.mentions import Mentions, mentions
from memory.models import (
    Entity,
    EntityIn,
    EntityType,
    Mention,
    Provenance,
    ReviewStatus,
    Source,
    Visibility,
    newest_facts,
    who_took_part_line,
)
from memory.replies import (
    count_phrase_lines,
    described_said,
    edited_phrases,
    heard_as_said,
    kept_old_name,
    masked_said,
    newly_hidden,
    not_heard_as_said,
    phrases_said,
    removed_facts_said,
    spelled_like_said,
    unhidden_said,
)
from memory.text import (
    MAX_FACT_VALUE_CHARS,
    attribute_text,
    check_attributes,
    counted,
    excerpt,
    heard_as_phrases,
    not_heard_as_phrases,
    typed_attribute,
)
from memory.voice.prompt import ALREADY_PROMPTED, prompted_unpinned

#: Sessions an entity took part in that its card names (the newest); the rest are counted.
SESSIONS_SHOWN = 3
#: Characters of an event's card that say who took part in it (a field holds 1,024).
TOOK_PART_ROOM = 600
#: An entity's description, in the command option and in the /entity describe box (the card shows it whole).
MAX_DESCRIPTION_CHARS = 2000
#: Characters of the line an entity was last named in that its card quotes: the part around its name, a phone
#: screen's few lines (a narrator's paragraph of 700 filled it).
LAST_MENTION_CHARS = 280

TYPE_COLOURS = {
    EntityType.npc: 0xE67E22,
    EntityType.place: 0x2ECC71,
    EntityType.item: 0xF1C40F,
    EntityType.faction: 0x9B59B6,
    EntityType.quest: 0x3498DB,
    EntityType.event: 0xE74C3C,
    EntityType.concept: 0x95A5A6,
    EntityType.player: 0x1ABC9C,
}


def parse_aliases(text: str | None) -> list[str]:
    return [a.strip() for a in (text or "").split(",") if a.strip()]


def parse_attributes(text: str | None) -> dict[str, Any]:
    """``key=value;key=value`` → dict, each value typed as ``--attr`` types it (``age=55``: a number); a part
    without ``=`` is refused by name rather than guessed at."""
    attributes: dict[str, Any] = {}
    for part in (text or "").split(";"):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise UserError(f"attribute {part.strip()!r} needs the form key=value (several: key=value;key=value)")
        attributes[key.strip()] = typed_attribute(value.strip())
    return check_attributes(attributes)


def entity_embed(
    entity: Entity,
    *,
    relationships: list[str],
    last_mention: Mention | None,
    mask: Callable[[str], str] = str,
    history: list[str] | None = None,
    dm: bool = True,
    mentioned: Mentions | None = None,
    took_part: tuple[int, str] = (0, ""),
) -> discord.Embed:
    """The entity card; every part is trimmed against a running total, so the embed always stays within
    Discord's 6,000 characters (the parts come in order of importance: the last ones are cut first). ``mask``
    hides what its reader may not see in the text the DM or the table wrote (secret names, for players).
    ``history``: the facts that no longer hold, when asked for (None: not asked). ``dm``: the reader is the DM,
    who alone sees what the recogniser writes for the name (it may hold a guess at a secret one). ``mentioned``:
    the mention index's lines naming it, shown as the sessions they are in. ``took_part``: how many sessions it
    took part in (their recaps' links: the DM's story named it, or its player spoke) and their titles; the two
    counts differ (a player's backstory names Delilah in sessions she is not in), so each field says what it
    counts."""

    def as_said(text: str) -> str:  # what the table said or an import wrote: its "*" or ">" must not restyle the card
        return plain(mask(text))

    title = as_said(entity.name) + (" 🔒" if entity.visibility == Visibility.secret else "")
    embed = discord.Embed(
        title=clip(title, MAX_TITLE),
        # leaves at least ~1,600 characters of the total for the fields
        description=clip(as_said(entity.description), 2000) or None,  # none written: the fields say who it is
        colour=TYPE_COLOURS.get(entity.type, 0x5865F2),
    )
    add_field_within(embed, "Type", entity.type.value)
    if entity.status != ReviewStatus.accepted:
        add_field_within(embed, "Status", entity.status.value)
    if entity.aliases:
        add_field_within(embed, "Aliases", plain(", ".join(entity.aliases)), inline=False)
    if dm and entity.heard_as:
        add_field_within(embed, "Heard as", plain(", ".join(entity.heard_as)), inline=False)
    if dm and entity.not_heard_as:
        add_field_within(embed, "Never heard as", plain(", ".join(entity.not_heard_as)), inline=False)
    # an import's counters ("crd3_mentions: 563") are its own, not who the entity is: hidden, as the MCP card does
    if attributes := {k: v for k, v in entity.attributes.items() if not bookkeeping(k)}:
        lines = [f"**{plain(k)}**: {as_said(attribute_text(v))}" for k, v in attributes.items()]
        add_field_within(embed, "Attributes", lines, inline=False)
    if relationships:
        add_field_within(embed, "Relationships", [as_said(r) for r in relationships], inline=False)
    if history is not None:
        past = [as_said(line) for line in history] or ["no fact about it has changed yet"]
        add_field_within(embed, "History, newest first", past, inline=False)
    if last_mention:
        # a narrator's paragraph may name it only past a field's 1,024 characters: the part that does
        where = f"{as_said(last_mention.where())}, {as_said(last_mention.speaker)}: "
        # masked before cut: a secret name cut in half would be left whole enough to read
        names = [entity.name, *entity.aliases]
        said = f"{where}“{plain_naming(excerpt(mask(last_mention.text), names, LAST_MENTION_CHARS), names)}”"
        add_field_within(embed, "Last mentioned", said, inline=False)
    if took_part[0]:
        said = f"per their recaps: {plain(took_part[1])}"
        add_field_within(embed, f"Took part in {counted(took_part[0], 'session')}", said, inline=False)
    if mentioned is not None and mentioned.total:
        shown = mentioned.sessions[:SESSIONS_SHOWN]
        parts = [f"{plain(clip(mask(s.title), 60))} ({counted(s.lines, 'line')})" for s in shown]
        if more := len(mentioned.sessions) - len(shown):
            parts.append(f"{counted(more, 'more session')}")
        said = f"{counted(mentioned.total, 'line')}, anyone's: " + ", ".join(parts)
        add_field_within(embed, f"Mentioned in {counted(len(mentioned.sessions), 'session')}", said, inline=False)
    return embed


@safe_autocomplete
async def entity_names(interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
    """Names and aliases of the active campaign; secret and pending ones only for the DM, and a player's with
    secret names masked ("Session: [secret] unmasked", which /entity show finds)."""
    campaign, mem = await active_campaign(interaction)
    dm = member_is_dm(interaction, campaign)
    mask = str if dm else await mem.graph.player_mask()
    return name_choices(map(mask, await mem.graph.all_names(include_secret=dm)), current)


@app_commands.guild_only()
class Entities(commands.GroupCog, group_name="entity", group_description="The campaign's people, places and things"):
    def __init__(self, bot: LorekeeperBot) -> None:
        self.bot = bot

    @app_commands.command(description="Add an entity (DM only)")
    @app_commands.describe(
        name="Its name",
        type="What it is",
        description="One or two sentences",
        aliases="Other names, comma-separated",
        attributes="key=value;key=value",
        secret="Only the DM sees it",
        heard_as="What speech-to-text writes for its name (from skin), comma-separated",
        not_heard_as="What speech-to-text writes that is never its name (manta ray), comma-separated",
    )
    async def add(
        self,
        interaction: discord.Interaction,
        name: app_commands.Range[str, 1, 200],
        type: EntityType,
        description: app_commands.Range[str, 0, MAX_DESCRIPTION_CHARS] = "",
        aliases: str | None = None,
        attributes: str | None = None,
        secret: bool = False,
        heard_as: str | None = None,
        not_heard_as: str | None = None,
    ) -> None:
        _, mem = await dm_campaign(interaction)
        phrases = heard_as_phrases(parse_aliases(heard_as))  # refused as /entity edit refuses it
        never = not_heard_as_phrases(parse_aliases(not_heard_as))
        lines = await mem.log.count_heard(phrases) if phrases else None  # before a job corrects them
        entity = await mem.add_entity(
            EntityIn(
                name=name,
                type=type,
                description=description,
                aliases=parse_aliases(aliases),
                heard_as=phrases,
                not_heard_as=never,
                attributes=parse_attributes(attributes),
                visibility=Visibility.secret if secret else Visibility.public,
                provenance=Provenance(source=Source.dm, dm_confirmed=True),
            )
        )
        said = [heard_as_said(None, entity, lines), not_heard_as_said(None, entity, None)]
        said += masked_said(await mem.graph.everyday_masked(newly_hidden(None, entity)))
        unhidden = await mem.graph.unhidden_secrets(entity)  # that warning says the names are alike
        alike = [] if unhidden else await mem.graph.spelled_like(entity)
        said += [f"⚠️ {s}" for s in unhidden_said(unhidden) + spelled_like_said(alike)]
        said += [f"⚠️ {s}" for s in described_said(await mem.graph.secrets_described((None, entity)))]
        heard = " ".join(s for s in said if s)
        embed = entity_embed(entity, relationships=[], last_mention=None)
        await interaction.response.send_message(
            f"Added {entity.type.value} **{entity.name}**.{f' {heard}' if heard else ''}", embed=embed, ephemeral=True
        )

    @app_commands.command(name="list", description="List the campaign's entities")
    @app_commands.describe(type="Only this kind")
    async def list_(self, interaction: discord.Interaction, type: EntityType | None = None) -> None:
        campaign, mem = await active_campaign(interaction)
        dm = member_is_dm(interaction, campaign)
        entities = await mem.graph.list_entities(type, include_secret=dm)
        mask = str if dm else await mem.graph.player_mask()
        lines = [
            f"**{mask(e.name)}** · {e.type.value}"
            + (" 🔒" if e.visibility == Visibility.secret else "")
            + (f" — {clip(mask(e.description), 80)}" if e.description else "")
            for e in entities
        ]
        title = f"{campaign.name}: {len(entities)} {type.value if type else 'entities'}"
        await Paginator.reply(interaction, paged_embeds(title, lines))

    @app_commands.command(description="Show an entity: attributes, aliases, relationships, last mention")
    @app_commands.describe(name="The entity's name or an alias", history="Also the facts that no longer hold")
    @app_commands.autocomplete(name=entity_names)
    async def show(self, interaction: discord.Interaction, name: str, history: bool = False) -> None:
        campaign, mem = await active_campaign(interaction)
        dm = member_is_dm(interaction, campaign)
        mask = str if dm else await mem.graph.player_mask()
        snap, last = await visible_identity(mem, name, dm=dm, mask=mask)
        # masked before clipped: a secret name cut in half would be left whole enough to read
        others, _ = snap.facts_and_sessions()
        # the sessions it took part in: their own field, beside those naming it, not a relationship
        sessions = snap.sessions_taken_part(SESSIONS_SHOWN, lambda title: clip(mask(title), 60))
        others, took_part = snap.who_took_part(others)
        # asked for history, the current facts say where they were heard too
        said = {p.id: f" ({p.since()})" for p in await mem.graph.heard_where(snap.relationships)} if history else {}
        # a character of a two-year campaign holds thousands of facts: the newest first, as many as the field holds,
        # then how many more (the field's "… and N more")
        newest, _ = newest_facts(others, None)
        lines = [r.in_words() + " 🔒" * snap.hidden_from_players(r) + said.get(r.id, "") for r in newest]
        if took_part:
            names = [(r.source_name or "") + " 🔒" * snap.hidden_from_players(r) for r in took_part]
            lines.append(who_took_part_line(names, TOOK_PART_ROOM))  # whole, beside the facts in one field
        mentioned = await mentions(mem.db, mem.campaign_id, snap.entity.id, limit=0)
        past = await mem.graph.history(snap.entity.id, include_secret=dm) if history else None
        embed = entity_embed(
            snap.entity.model_copy(update={"attributes": snap.attributes()}),  # a current fact's name: the fact's
            relationships=lines,
            last_mention=last,
            mask=mask,
            history=None if past is None else [p.describe_past(" 🔒") for p in past],
            dm=dm,
            mentioned=mentioned,
            took_part=sessions,
        )
        await interaction.response.send_message(embed=embed, ephemeral=True)

    @app_commands.command(description="Change an entity (DM only)")
    @app_commands.autocomplete(name=entity_names)
    @app_commands.describe(
        name="The entity to change (its name or an alias)",
        new_name="Its new name",
        type="Its new kind",
        description="A new description (replaces the old one; /entity describe for several lines)",
        aliases="Replaces all aliases, comma-separated ('-' clears them)",
        attributes="key=value;key=value, merged into its attributes",
        heard_as="Its name as heard (from skin), comma-separated; replaces all ('-' clears, '+x' adds x, '-x' drops x)",
        not_heard_as=(
            "Never its name (manta ray), comma-separated; replaces all ('-' clears, '+x' adds x, '-x' drops x)"
        ),
        secret="True: DM-only, never shown to players",
    )
    async def edit(
        self,
        interaction: discord.Interaction,
        name: str,
        new_name: app_commands.Range[str, 1, 200] | None = None,
        type: EntityType | None = None,
        description: app_commands.Range[str, 0, MAX_DESCRIPTION_CHARS] | None = None,
        aliases: str | None = None,
        attributes: str | None = None,
        secret: bool | None = None,
        heard_as: str | None = None,
        not_heard_as: str | None = None,
    ) -> None:
        _, mem = await dm_campaign(interaction)
        given = (new_name, type, description, aliases, attributes, secret, heard_as, not_heard_as)
        if all(v is None for v in given):
            raise UserError(
                "Nothing to change: give at least one of new_name, type, description, aliases, attributes, secret, "
                "heard_as, not_heard_as."
            )
        visibility = None if secret is None else (Visibility.secret if secret else Visibility.public)
        before = await mem.graph.get_entity(name)
        phrases = None if heard_as is None else edited_phrases(before.heard_as, parse_aliases(heard_as))
        never = None if not_heard_as is None else edited_phrases(before.not_heard_as, parse_aliases(not_heard_as))
        lines = await count_phrase_lines(mem.log, before, phrases, never)  # before the edit's jobs change them
        entity = await mem.graph.update_entity(
            name,
            new_name=new_name,
            type=type,
            description=description,
            aliases=None if aliases is None else ([] if aliases.strip() == "-" else parse_aliases(aliases)),
            attributes=parse_attributes(attributes) if attributes else None,
            visibility=visibility,
            heard_as=phrases,
            not_heard_as=never,
        )
        kept = kept_old_name(before, entity)
        said = f" Its old name **{before.name}** stays as an alias (`aliases: -` clears it)." if kept else ""
        said += "".join(f" {s}" for s in phrases_said(before, entity, lines))
        said += "".join(f" {s}" for s in masked_said(await mem.graph.everyday_masked(newly_hidden(before, entity))))
        unhidden = await mem.graph.unhidden_secrets(entity)  # that warning says the names are alike
        alike = [] if unhidden else await mem.graph.spelled_like(entity, before)
        said += "".join(f" ⚠️ {s}" for s in unhidden_said(unhidden) + spelled_like_said(alike))
        said += "".join(f" ⚠️ {s}" for s in described_said(await mem.graph.secrets_described((before, entity))))
        embed = entity_embed(entity, relationships=[], last_mention=None)
        await interaction.response.send_message(f"Updated **{entity.name}**.{said}", embed=embed, ephemeral=True)

    @app_commands.command(description="Write an entity's description in a text box, several lines if need be (DM only)")
    @app_commands.describe(name="The entity's name or an alias")
    @app_commands.autocomplete(name=entity_names)
    async def describe(self, interaction: discord.Interaction, name: str) -> None:
        campaign, mem = await dm_campaign(interaction)
        entity = await mem.graph.get_entity(name)
        if len(entity.description) > MAX_DESCRIPTION_CHARS:  # from a campaign file: the box would cut it
            raise UserError(
                f"{entity.name}'s description is {len(entity.description):,} characters, more than the box holds "
                f"({MAX_DESCRIPTION_CHARS:,}): change it in the campaign file and load that again."
            )
        await interaction.response.send_modal(
            DescribeModal(entity, campaign_id=campaign.id, user_id=interaction.user.id, guild_id=interaction.guild_id)
        )

    @app_commands.command(description="Keep an entity's names in what the voice recogniser listens for (DM only)")
    @app_commands.describe(name="The entity's name or an alias", pinned="True to pin (the default), False to unpin")
    @app_commands.autocomplete(name=entity_names)
    async def pin(self, interaction: discord.Interaction, name: str, pinned: bool = True) -> None:
        _, mem = await dm_campaign(interaction)
        entity = await mem.graph.get_entity(name)
        changed = await mem.graph.set_pinned(entity, pinned)
        if not pinned:
            reply = f"Unpinned **{entity.name}**." if changed else f"**{entity.name}** was not pinned."
        elif changed:
            reply = (
                f"Pinned **{entity.name}**: its names stay among the few dozen the voice recogniser listens for, "
                "with the player characters' and the names said lately."
            )
        else:
            reply = f"**{entity.name}** was pinned already."
        if pinned and await prompted_unpinned(mem, entity.id):
            reply += f" But {ALREADY_PROMPTED}"
        await interaction.response.send_message(reply, ephemeral=True)

    @app_commands.command(description="Remove an entity and its relationships (DM only)")
    @app_commands.describe(name="The entity's name or an alias")
    @app_commands.autocomplete(name=entity_names)
    async def remove(self, interaction: discord.Interaction, name: str) -> None:
        campaign, mem = await dm_campaign(interaction)
        entity = await mem.graph.get_entity(name)
        facts = removed_facts_said(*await mem.graph.facts_touching(entity.id))

        async def delete() -> str:
            removed = await mem.graph.remove_entity(entity.id)  # the one asked about, renamed or not
            return f"Removed **{removed.name}** with {facts}."

        await interaction.response.send_message(
            f"Remove **{entity.name}** ({entity.type.value}) with its {facts}? This cannot be undone.",
            view=Confirm(interaction, delete, dm_of=campaign.id),
            ephemeral=True,
        )

    @app_commands.command(description="Merge an entity recorded twice into the other one (DM only)")
    @app_commands.describe(source="The one that goes: its facts, names and mentions move", into="The one kept")
    @app_commands.autocomplete(source=entity_names, into=entity_names)
    async def merge(self, interaction: discord.Interaction, source: str, into: str) -> None:
        campaign, mem = await dm_campaign(interaction)
        s, t = await mem.graph.get_entity(source), await mem.graph.get_entity(into)
        if s.id == t.id:
            raise UserError(f"{source!r} and {into!r} both name **{t.name}**: nothing to merge.")

        async def merge() -> str:
            return (await mem.graph.merge_entities(s.id, t.id)).describe()  # those asked about, by id

        ends = (await mem.graph.merge_entities(s.id, t.id, preview=True)).history_now()
        await interaction.response.send_message(
            f"Merge **{s.name}** ({s.type.value}) into **{t.name}** ({t.type.value})? Its facts, names and mentions "
            f"move to {t.name} and {s.name} is deleted{f' ({ends})' if ends else ''}. This cannot be undone.",
            view=Confirm(interaction, merge, dm_of=campaign.id),
            ephemeral=True,
        )

    @app_commands.command(
        description="Connect two entities (Eldrinax ally_of Ironhold) or record a state (status: dead) (DM only)"
    )
    @app_commands.autocomplete(source=entity_names, target=entity_names)
    @app_commands.describe(
        source="The entity the relationship starts from",
        relation="e.g. ally_of, lives_in, owns; or status, mood for a value",
        target="The other entity (or give value instead)",
        value="Instead of a target: the new state, e.g. dead for status; it closes the current one",
        secret="True: DM-only. A new link is public unless set; an existing one changes only if set",
    )
    async def link(
        self,
        interaction: discord.Interaction,
        source: str,
        relation: app_commands.Range[str, 1, 100],
        target: app_commands.Range[str, 1, 200] | None = None,
        value: app_commands.Range[str, 1, MAX_FACT_VALUE_CHARS] | None = None,
        secret: bool | None = None,
    ) -> None:
        _, mem = await dm_campaign(interaction)
        linked = await mem.graph.link(source, relation, target, value=value, secret=secret)
        # clipped: it is saved already, and a reply Discord refused would read as if it were not
        await interaction.response.send_message(clip(linked.describe(" 🔒"), 2000), ephemeral=True)

    @app_commands.command(description="Remove a fact recorded by mistake; what it replaced is current again (DM only)")
    @app_commands.describe(
        source="The entity it starts from",
        relation="Its type, e.g. ally_of",
        target="The other one, or an attribute fact's value",
    )
    @app_commands.autocomplete(source=entity_names, target=entity_names)
    async def unlink(
        self, interaction: discord.Interaction, source: str, relation: app_commands.Range[str, 1, 100], target: str
    ) -> None:
        _, mem = await dm_campaign(interaction)
        unlinked = await mem.graph.unlink(source, relation, target)
        await interaction.response.send_message(clip(unlinked.describe(), 2000), ephemeral=True)


class DescribeModal(OwnedModal):
    """The description in a paragraph box, pre-filled: a slash option holds one line, a DM's notes several."""

    def __init__(self, entity: Entity, *, campaign_id: int, user_id: int, guild_id: int | None) -> None:
        custom_id = f"lk:entity:describe:{user_id}:{campaign_id}:{entity.id}"
        super().__init__(title=f"Describe {entity.name}", custom_id=custom_id, user_id=user_id, guild_id=guild_id)
        self.campaign_id = campaign_id
        self.entity_id = entity.id
        self.text: discord.ui.TextInput[DescribeModal] = discord.ui.TextInput(
            label="Description",
            style=discord.TextStyle.paragraph,
            default=entity.description or None,
            required=False,
            max_length=MAX_DESCRIPTION_CHARS,
            custom_id="description",
        )
        self.add_item(self.text)

    async def on_submit(self, interaction: discord.Interaction) -> None:
        mem = await dm_campaign_by_id(interaction, self.campaign_id)
        # by id: the entity may have been renamed while the form was open
        current = await mem.graph.get_entity_by_id(self.entity_id)
        entity = await mem.graph.update_entity(current.name, description=self.text.value.strip())
        said = "".join(f" ⚠️ {s}" for s in described_said(await mem.graph.secrets_described((current, entity))))
        embed = entity_embed(entity, relationships=[], last_mention=None)
        await interaction.response.send_message(f"Updated **{entity.name}**.{said}", embed=embed, ephemeral=True)


async def setup(bot: LorekeeperBot) -> None:
    await bot.add_cog(Entities(bot))
