"""``/session start|stop|status|list|delete|names``: record a voice session into the active campaign's memory.

Thin: the DM check and the campaign come from ``bot.checks`` (server-side, scoped to this guild), the voice
glue from ``bot.voice``, everything after the PCM frames from ``memory.voice``.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
from collections.abc import Callable

import discord
from discord import app_commands
from discord.ext import commands

from bot.app import LorekeeperBot
from bot.checks import NotDMError, UserError, active_campaign, dm_campaign, guild_id_of, member_is_dm
from bot.views import Confirm, Paginator, name_choices, paged_embeds, safe_autocomplete
from bot.voice import CouldNotJoin, VoiceSession
from memory.jobs.admin import HeldJob, held_jobs
from memory.models import Campaign
from memory.name_report import NameChange, names_changed
from memory.providers.stt import SpeechToText, STTError, WhisperSTT, whisper_candidates
from memory.replies import deleted_session_said
from memory.session_log import ListedSession
from memory.store import CampaignMemory
from memory.text import clip, counted
from memory.voice.guard import GuardState, SpoolPending, recover_leftover_spools

log = logging.getLogger("lorekeeper.bot")

NOT_IN_VOICE = "Join a voice channel first, then run /session start: I record the channel you are in."
NO_SESSION = "No session is being recorded in this server."
BUSY = "The session is being started or stopped right now; try again in a moment."
#: Rows of /session names shown at most (pages of them); `lorekeeper session names` lists them all.
MAX_NAME_ROWS = 200
#: Discord sends voice in 20 ms packets: counts of dropped ones are shown as time.
PACKET_S = 0.02


def duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {secs:02d}s"


def _line(session: ListedSession, mask: Callable[[str], str] = str) -> str:
    state = "live" if session.ended_at is None else "recap written" if session.summary else "no recap yet"
    lines = counted(session.lines, "line")
    # a Discord timestamp: each reader sees it in their own time zone; a day alone as given, which no zone moves
    started = session.day_only or discord.utils.format_dt(session.started_at, "f")
    return f"**{mask(session.title)}** — {started} · {lines} · {state}"


def unheard_said(unheard: int) -> str:
    """For the stop reply: the lines speech-to-text failed on, and the command that hears them again."""
    if not unheard:
        return ""
    them = "it" if unheard == 1 else "them"
    return (
        f" {counted(unheard, 'line')} went unheard (speech-to-text failed): "
        f"`lorekeeper session unheard` hears {them} again."
    )


def held_said(held: list[HeldJob]) -> str:
    """For the DM's /session status: the campaign's held jobs, the first one's last error as `lorekeeper jobs list`
    shows it, and the command that runs them again."""
    first = held[0]
    return (
        f"{len(held)}, first {first.kind}{f' of {first.session!r}' if first.session else ''}: "
        f"{clip(first.error, 100)} · `lorekeeper jobs retry` runs them again"
    )


def undo_slash(change: NameChange) -> str:
    """The /entity edit that stops a wrong correction, as ``bot.cli.session.undo_command`` says it for the CLI."""
    if "heard-as" in change.how:  # taken away: the phrases it has stay
        return f"/entity edit {change.name} heard_as: -{change.heard}"
    return f"/entity edit {change.name} not_heard_as: +{change.heard}"  # added: the phrases it has stay


def _name_row(change: NameChange) -> str:
    return f"**{change.heard}** → **{change.name}** ×{change.count:,} ({', '.join(change.how)}) · " + (
        "its entity was removed"
        if change.removed
        else "a spelling of its name or an alias"
        if change.respelled
        else f"wrong? `{undo_slash(change)}`"
    )


async def todays_title(mem: CampaignMemory) -> str:
    """Today's default title, "Session YYYY-MM-DD" (UTC), or "… (2)", "… (3)" past those ended: a second game the
    same day is a session of its own. One not ended is resumed: the bot restarted mid-game."""
    today = title = f"Session {dt.datetime.now(dt.UTC):%Y-%m-%d}"
    n = 1
    while (session := await mem.log.session_by_title(title)) is not None and session.ended_at is not None:
        n += 1
        title = f"{today} ({n})"
    return title


@safe_autocomplete
async def session_titles(interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
    """Titles newest first; a player's with secret names masked, as /recap finds a session by its masked title."""
    campaign, mem = await active_campaign(interaction)
    mask = str if member_is_dm(interaction, campaign) else await mem.graph.player_mask()
    return name_choices([mask(s.title) for s in reversed(await mem.log.sessions())], current, ordered=True)


@app_commands.guild_only()
class Sessions(commands.GroupCog, group_name="session", group_description="Record a voice session"):
    def __init__(self, bot: LorekeeperBot) -> None:
        self.bot = bot
        self.live: dict[int, VoiceSession] = {}  # guild id → its one recorded session
        self._busy: set[int] = set()  # guilds whose session is being started or stopped right now
        self._stt: SpeechToText | None = None
        self._recovery: asyncio.Task[None] | None = None

    @property
    def stt(self) -> SpeechToText:
        # Loaded on first use: a bot that never records never pays for the Whisper model.
        stt = getattr(self.bot, "stt", None) or self._stt
        if stt is None:
            stt = self._stt = WhisperSTT(self.bot.settings.stt_model)
        return stt

    async def cog_load(self) -> None:
        try:
            model = whisper_candidates(self.bot.settings.stt_model)[0]
            log.info("speech-to-text: Whisper %s (offline; loaded at the first recording)", model)
        except STTError as exc:
            log.warning("speech-to-text: %s; /session start will fail until a model is installed", exc)
        # in the background: the bot answers commands while a long outage's spools are being stored
        self._recovery = asyncio.create_task(self._recover_spools(), name="recover-leftover-spools")

    async def _recover_spools(self) -> None:
        """Store what a crash or a stop during a database outage left in the spool folder, and end the
        sessions that were asked to end then."""
        try:
            settings = self.bot.settings
            replayed, ended = await recover_leftover_spools(
                self.bot.memory, settings.data_dir, stage2=settings.llm_enabled
            )
        except Exception:
            log.exception("recovering leftover spools failed; they stay on disk for the next start")
            return
        if replayed or ended:
            log.warning("leftover spools: %d utterances stored, %d sessions ended", replayed, ended)

    async def cog_unload(self) -> None:
        if self._recovery is not None and not self._recovery.done():
            self._recovery.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._recovery
        # every session is stopped and its guard closed, even when another one fails
        for guild_id, session in list(self.live.items()):
            try:
                await session.stop()
            except SpoolPending as exc:
                log.warning("session %s: %s", session.guard.session.id, exc)
            except Exception:
                log.exception("stopping the session of guild %s failed", guild_id)
            try:
                await session.guard.close()  # no flush timer or retry task is left pending
            except Exception:
                log.exception("closing the memory guard of guild %s failed", guild_id)
        self.live.clear()

    @app_commands.command(description="Join your voice channel and record the session (DM only)")
    @app_commands.describe(title="Session title (default: today's date); an existing title resumes that session")
    async def start(
        self, interaction: discord.Interaction, title: app_commands.Range[str, 1, 100] | None = None
    ) -> None:
        campaign, mem = await dm_campaign(interaction)
        guild_id = guild_id_of(interaction)
        if self._recovery is not None and not self._recovery.done():
            # a resumed session's spool could be replayed by both at once
            raise UserError("Still storing what was said during an earlier database outage; try again shortly.")
        if guild_id in self.live:
            raise UserError(f"Already recording **{self.live[guild_id].guard.session.title}**: /session stop first.")
        if guild_id in self._busy:
            raise UserError(BUSY)
        voice_state = getattr(interaction.user, "voice", None)
        channel = voice_state.channel if voice_state else None
        if channel is None:
            raise UserError(NOT_IN_VOICE)
        if channel.guild.id != guild_id:  # a campaign records only in its own guild
            raise UserError("I only record in this server's voice channels.")
        announce = interaction.channel
        assert isinstance(announce, discord.abc.Messageable)
        # Reserved until voice is joined: a second start meanwhile would resume the same session, fail to join,
        # and delete the session the first one records into.
        self._busy.add(guild_id)
        try:
            await interaction.response.defer(thinking=True)
            title = title or await todays_title(mem)
            resumed = await mem.log.session_by_title(title)
            try:
                session = await VoiceSession.start(
                    self.bot,
                    channel,
                    announce,
                    campaign,
                    mem,
                    title,
                    self.bot.settings.data_dir,
                    self.stt,
                    dm=interaction.user,
                    stage2=self.bot.settings.llm_enabled,
                )
            except CouldNotJoin as exc:
                why = (
                    "I am already in a voice channel of this server. Disconnect me (right-click me, Disconnect)"
                    if exc.args[0] == "already in voice"
                    else "check that I have Connect and View Channel there and that it is not full"
                )
                raise UserError(f"I could not join {channel.mention}: {why}, then run /session start again.") from exc
            self.live[guild_id] = session
        finally:
            self._busy.discard(guild_id)
        which = f"session **{session.guard.session.title}**"
        if resumed is not None:
            lines = counted(await mem.log.entry_count(resumed.id), "line")
            # an ended session the DM named: what is said now joins its log, and its recap is written again
            so_far = (
                f"it had ended, with {lines}: what is said now is added to it"
                if resumed.ended_at
                else f"{lines} so far"
            )
            which = f"resumed {which} ({so_far}; /session start with a new title starts a new session)"
        # Visible to everyone in the channel, not ephemeral: players must know they are being recorded.
        await interaction.followup.send(
            f"🔴 **Recording** {channel.mention} for **{campaign.name}** — {which}. "
            "Everything said in this channel is transcribed into the campaign's memory. "
            "The DM ends it with /session stop."
        )

    @app_commands.command(description="Stop recording and file the session (DM only)")
    async def stop(self, interaction: discord.Interaction) -> None:
        guild_id = guild_id_of(interaction)
        session = self.live.get(guild_id)
        if session is None:
            raise UserError(NO_SESSION)
        # The DM of the campaign being recorded, as it was read at the start: the database may be what is down.
        if not member_is_dm(interaction, session.campaign):
            raise NotDMError()
        if guild_id in self._busy:
            raise UserError(BUSY)
        self._busy.add(guild_id)
        try:
            await interaction.response.defer(thinking=True)
            status = session.status()
            try:
                ended = await session.stop()
            except SpoolPending as exc:
                self.live.pop(guild_id, None)
                log.warning("session %s of guild %s: %s", session.guard.session.id, guild_id, exc)
                # said to the whole table: where the bot's files are is the operator's business (logged above)
                await interaction.followup.send(
                    f"⏹️ Stopped recording. The database is unavailable: {exc.spooled} "
                    f"{'utterance is' if exc.spooled == 1 else 'utterances are'} safe on the bot's disk and will be "
                    "stored (and the session closed) as soon as it is back."
                )
                return
            except Exception:
                # A bug must not leave the guild unable to record until the bot restarts: the session is
                # forgotten all the same, what it still holds is stored or spooled, voice is left.
                log.exception("stopping the session of guild %s failed", guild_id)
                self.live.pop(guild_id, None)
                try:
                    await session.abandon()
                except Exception:
                    log.exception("closing the session of guild %s failed", guild_id)
                await interaction.followup.send(
                    "⏹️ Stopped recording, but filing the session failed (it has been logged). "
                    f"What was said is kept: /session start with the title **{session.guard.session.title}**"
                    " resumes the session, and /session stop then files it."
                )
                return
            self.live.pop(guild_id, None)
        finally:
            self._busy.discard(guild_id)
        stored = session.guard.status().stored
        # read after the stop: the tail transcribed while stopping may fail too; only the log said so before
        unheard = session.status().unheard
        await interaction.followup.send(
            f"⏹️ Stopped recording **{ended.title}** after {duration(status.duration_s)}: "
            f"{stored} utterance{'' if stored == 1 else 's'} stored. The recap is written in the background (/recap)."
            + unheard_said(unheard)
        )

    def recording_into(self, guild_id: int) -> Campaign | None:
        """The campaign this guild's session is recording into, if one is."""
        session = self.live.get(guild_id)
        return session.campaign if session is not None else None

    @app_commands.command(description="How the recording is going")
    async def status(self, interaction: discord.Interaction) -> None:
        guild_id = guild_id_of(interaction)
        session = self.live.get(guild_id)
        if session is None:
            raise UserError(NO_SESSION)
        s = session.status()
        pending: str | None = None
        held: list[HeldJob] = []
        title: str | None = s.title
        # what waits for review (secrets included) and job errors are the DM's business
        if member_is_dm(interaction, session.campaign):
            try:
                pending = str(await session.mem.review.count())
                # held after an LLM outage or a wrong LLM setting: else the DM never learns facts stopped coming
                held = await held_jobs(session.mem.db, session.mem.campaign_id)
            except Exception:  # the database may be the very thing that is down
                pending = "?"
        else:
            try:  # the DM's title may name a secret
                title = (await session.mem.graph.player_mask())(s.title)
            except Exception:  # with the database down, no title rather than one unmasked
                title = None
        state = "🟢 healthy" if s.guard.state == GuardState.healthy else "🟠 degraded (database unreachable)"
        speakers = ", ".join(f"{name} ({n})" for name, n in sorted(s.speakers.items())) or "nobody yet"
        embed = discord.Embed(title=f"Recording: {title}" if title else "Recording", colour=0xE74C3C)
        embed.add_field(name="Duration", value=duration(s.duration_s))
        embed.add_field(name="Utterances stored", value=str(s.guard.stored))
        embed.add_field(name="Spooled", value=str(s.guard.spooled))
        if pending is not None:
            embed.add_field(name="Pending facts", value=pending)
        embed.add_field(name="Memory", value=state)
        embed.add_field(name="Voice", value="connected" if s.connected else "reconnecting…")
        embed.add_field(name="Speakers", value=speakers[:1024], inline=False)
        if held:
            embed.add_field(name="Background jobs held", value=held_said(held)[:1024], inline=False)
        if isinstance(self.stt, WhisperSTT):  # which model hears them was said only in the log, at start
            loaded = self.stt.loaded or f"{self.stt.model_ref} (loaded at the first line heard)"
            embed.add_field(name="Speech-to-text", value=f"Whisper {loaded}")
        # why a recording stays empty while people talk: the hint says what the DM can do about it
        if s.decrypt_failures:
            embed.add_field(
                name="Audio I could not decrypt",
                value=f"{duration(s.decrypt_failures * PACKET_S)} (Discord's end-to-end encryption): a moment when "
                "someone joins is normal; if it keeps growing, nothing is heard: /session stop, then /session start",
                inline=False,
            )
        if s.unknown_packets:
            embed.add_field(
                name="Audio from someone not yet identified",
                value=f"{duration(s.unknown_packets * PACKET_S)}, not transcribed (Discord has not said who it is); "
                "if it keeps growing, whoever is not in Speakers should leave the voice channel and join again",
                inline=False,
            )
        await interaction.response.send_message(embed=embed, ephemeral=True)

    @app_commands.command(name="list", description="The campaign's sessions as played, oldest first")
    async def list_(self, interaction: discord.Interaction) -> None:
        campaign, mem = await active_campaign(interaction)
        sessions = await mem.log.listed()
        if not sessions:
            raise UserError("No sessions recorded in this campaign yet.")
        mask = str if member_is_dm(interaction, campaign) else await mem.graph.player_mask()
        lines = [_line(s, mask) for s in sessions]
        await Paginator.reply(interaction, paged_embeds(f"Sessions: {campaign.name}", lines))

    @app_commands.command(description="Delete a session, e.g. a transcript imported by mistake (DM only)")
    @app_commands.describe(title="The session to delete (you are asked to confirm)")
    @app_commands.autocomplete(title=session_titles)
    async def delete(self, interaction: discord.Interaction, title: str) -> None:
        campaign, mem = await dm_campaign(interaction)
        # This bot knows what it records: a session not ended that it does not record was cut off (a crash).
        target = await mem.log.deletable(title, even_if_live=True)
        self._not_recording(interaction, target.id)
        cut_off = " It never ended (its recording or import was cut off)." if target.ended_at is None else ""

        async def delete() -> str:
            self._not_recording(interaction, target.id)  # it may have been resumed while the DM decided
            deleted = await self.bot.memory.campaign(campaign.id).delete_session(target.id, even_if_live=True)
            return deleted_session_said(deleted)

        await interaction.response.send_message(
            f"Delete session **{target.title}** of **{campaign.name}** with its {target.lines:,} lines, its recap "
            f"and the review items only it proposed?{cut_off} What you accepted or rejected stays. "
            "This cannot be undone.",
            view=Confirm(interaction, delete, dm_of=campaign.id),
            ephemeral=True,
        )

    @app_commands.command(description="What name correction changed in a session, and how to undo it (DM only)")
    @app_commands.describe(session="The session's title (default: the latest)")
    @app_commands.autocomplete(session=session_titles)
    async def names(self, interaction: discord.Interaction, session: str | None = None) -> None:
        _, mem = await dm_campaign(interaction)
        report = await names_changed(mem, session)
        title = f"Names corrected: {report.session.title}"
        if not report.changes:
            await interaction.response.send_message(
                f"No names were corrected in **{report.session.title}**.", ephemeral=True
            )
            return
        rows = [_name_row(c) for c in report.changes[:MAX_NAME_ROWS]]
        if (more := len(report.changes) - MAX_NAME_ROWS) > 0:
            rows.append(f"… and {more:,} more: `lorekeeper session names` lists them all")
        intro = (
            f"{counted(len(report.changes), 'phrase')} heard became a name in {counted(report.lines, 'line')}, "
            "most frequent first, with how it was recognised: sound (it sounds like the name), LLM (the language "
            "model chose it) or heard-as (a phrase you taught)."
        )
        await Paginator.reply(interaction, paged_embeds(title, [intro, *rows]))

    def _not_recording(self, interaction: discord.Interaction, session_id: int) -> None:
        guild_id = guild_id_of(interaction)
        if guild_id in self._busy:
            raise UserError(BUSY)
        live = self.live.get(guild_id)
        if live is not None and live.guard.session.id == session_id:
            raise UserError(f"**{live.guard.session.title}** is being recorded: /session stop first.")


async def setup(bot: LorekeeperBot) -> None:
    await bot.add_cog(Sessions(bot))
