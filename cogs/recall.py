"""``/recall`` (what was said about something, with where it was said) and ``/recap`` (a session's summary).

Retrieval is ``memory.recall`` (BM25 over lines + vectors + the graph, fused) — BM25 only when the bot was built
without an embedder — after the current facts of the entities the query names (``memory.recall.named_entities``).
Each hit is its best lines, whole, a short one with a line of context either side.
"""

from __future__ import annotations

from collections.abc import Callable

import discord
from discord import app_commands
from discord.ext import commands

from bot.app import LorekeeperBot
from bot.checks import UserError, active_campaign, member_is_dm
from bot.views import MAX_EMBED_TOTAL, add_field_within, clip, plain
from cogs.sessions import session_titles
from memory import recall as recall_core
from memory.graph import SecretMask
from memory.models import Session
from memory.recall import NamedEntity, RecallHit
from memory.recap import recap_for_players, session_titled
from memory.replies import no_lines_yet

HITS = 5
#: /recall embeds its query and searches vectors and text: a few rephrasings in a row are play, more is a loop
#: that would hold the shared cores (and the bot's answers to everyone else) for one user.
RECALL_RATE, RECALL_PER_SECONDS = 4, 30.0
#: Characters left for the passages below which a recall shows none (after a long recap): a clipped first line.
MIN_ROOM = 200


def cite(hit: RecallHit, mask: Callable[[str], str] = str) -> str:
    """The hit's lines (the ones that answer whole and in bold, their context plain and previewed) with its
    session, time and speakers, so the DM can find it in the recording; ``mask`` hides what the reader may not see
    in it (secret names, for players)."""
    # what was said is data: a "*" or ">" in it must not restyle the embed
    said = [
        f"**{text}**" if line.matched else text
        for line in hit.lines
        if (text := plain(f"{line.who(mask)}: {line.shown(mask)}"))
    ] or [plain(mask(hit.text))]
    who = ", ".join(dict.fromkeys([line.who(mask) for line in hit.answering()] or map(mask, hit.speakers)))
    # display names and titles are the users' too: "*Grog*" is a name here, not emphasis
    return "\n".join(f"> {line}" for line in said) + f"\n— **{plain(who)}**, {plain(hit.cited_where(mask))}"


def add_entity_field(embed: discord.Embed, known: NamedEntity) -> None:
    """A field of what the graph knows now of an entity the query names: its description, then its facts."""
    # no description written: its facts lead, and a placeholder only where there is nothing else to say
    about = [plain(known.description)] if known.description else []
    facts = [plain(line) for line in known.fact_lines()]
    said = [*about, *facts] or ["*nothing known of it yet but its name*"]
    add_field_within(embed, clip(plain(known.heading()), 256), said, inline=False)


def cited(hits: list[RecallHit], mask: Callable[[str], str], room: int) -> str:
    """The hits cited in rank order, as many whole as fit in ``room`` characters; the first is clipped with "…"
    at a word when it alone does not fit (the answer is in its first lines)."""
    out: list[str] = []
    for hit in hits:
        text = cite(hit, mask)
        if len("\n\n".join([*out, text])) <= room:
            out.append(text)
        elif not out:
            out.append(clip(text, room))
        else:
            break
    return "\n\n".join(out)


class Recall(commands.Cog):
    def __init__(self, bot: LorekeeperBot) -> None:
        self.bot = bot

    @app_commands.command(description="What was said about something, with session, speaker and time")
    @app_commands.guild_only()  # on each command: a plain Cog's class decorator does not reach them
    # what memory.recall does: any of the words (quotes and minus signs are read as plain words), and meaning
    @app_commands.describe(query="Words or a question: passages with any of its words or close in meaning, best first")
    @app_commands.checks.cooldown(RECALL_RATE, RECALL_PER_SECONDS)  # per user, in every server
    async def recall(self, interaction: discord.Interaction, query: app_commands.Range[str, 1, 200]) -> None:
        campaign, mem = await active_campaign(interaction)
        dm = member_is_dm(interaction, campaign)
        await interaction.response.defer(ephemeral=True, thinking=True)
        embedder = self.bot.embedder
        hits = await recall_core.recall(
            mem,
            embedder,
            query,
            limit=HITS,
            mode="both" if embedder else "fulltext",
            dm=dm,
            asker=interaction.user.display_name,  # as the voice recorder names their lines: "what did I promise"
        )
        players_mask = None if dm else await mem.graph.player_mask()
        # "what happened last session?": the session's recap answers it, before the lines
        recap = await recall_core.recap_asked(mem, query)
        recaps = [recap_embed(recap, players_mask)] if recap else []
        embed = discord.Embed(title=clip(f"Recall: {query}", 256), colour=0x3498DB)
        # what the graph knows now comes first: a passage says what was true then ("Thrennick has the Ember Key")
        for known in await recall_core.named_entities(mem, query, dm=dm):
            add_entity_field(embed, known)
        # Discord shows an embed's fields below its description: passages after facts need an embed of their own
        passages = discord.Embed(colour=0x3498DB) if embed.fields else embed
        # a message's embeds share Discord's 6,000 characters: a long recap leaves the passages out
        room = min(4000, MAX_EMBED_TOTAL - len(embed) - sum(map(len, recaps)))
        if hits and room >= MIN_ROOM:
            # players heard what was said, but a name the DM keeps secret stays hidden in what they read back
            passages.description = cited(hits, players_mask or str, room)
        elif not embed.fields and not recaps:
            embed.description = "Nothing in this campaign's sessions matches that."
            if not await mem.log.has_lines():
                embed.set_footer(text=no_lines_yet(campaign.name) + ".")
        shown = [embed, passages] if passages.description and passages is not embed else [embed]
        if recaps and not embed.fields and not embed.description:  # the recap answers it: an empty heading adds nothing
            shown = []
        await interaction.followup.send(embeds=[*recaps, *shown], ephemeral=True)

    @app_commands.command(description="The summary of a session (default: the latest)")
    @app_commands.guild_only()
    @app_commands.describe(session="The session's title (default: the latest)")
    @app_commands.autocomplete(session=session_titles)
    async def recap(self, interaction: discord.Interaction, session: str | None = None) -> None:
        campaign, mem = await active_campaign(interaction)
        sessions = await mem.log.sessions()
        if not sessions:
            raise UserError("No sessions recorded in this campaign yet.")
        players_mask = None if member_is_dm(interaction, campaign) else await mem.graph.player_mask()
        # a player reads titles masked, and picks one so from the autocomplete
        mask: Callable[[str], str] = players_mask or str
        if session:
            chosen = session_titled(sessions, session, mask)
            if chosen is None:
                names = ", ".join(repr(mask(s.title)) for s in sessions[-5:])
                raise UserError(f"No session titled {session!r}; recent ones: {names}.")
        else:
            chosen = sessions[-1]
        await interaction.response.send_message(embed=recap_embed(chosen, players_mask), ephemeral=True)


def recap_embed(chosen: Session, players_mask: SecretMask | None) -> discord.Embed:
    """/recap's embed of a session: its summary (for players, with secret names hidden), or why there is none. The
    summary quotes speakers by name ("*Grog*: …") and the title is the DM's: neither is Discord markdown."""
    mask: Callable[[str], str] = players_mask or str
    if chosen.summary and players_mask is None:
        text = plain(chosen.summary)
    elif chosen.summary and players_mask is not None:
        text = plain(recap_for_players(chosen.summary, players_mask))
    elif chosen.ended_at is None:
        text = "*This session is still running; its recap is written when it ends.*"
    else:
        text = "*No summary for this session yet.*"
    embed = discord.Embed(
        title=clip(f"Recap: {plain(mask(chosen.title))}", 256), description=clip(text, 4096), colour=0x9B59B6
    )
    # a day alone as given: its noon UTC is no time anyone played at
    embed.set_footer(text=f"started {chosen.day_only or f'{chosen.started_at:%Y-%m-%d %H:%M} UTC'}")
    return embed


async def setup(bot: LorekeeperBot) -> None:
    await bot.add_cog(Recall(bot))
