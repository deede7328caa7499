"""Discord voice receive, thin: discord.py[voice] 2.7 + davey + discord-ext-voice-recv → our AudioSource.

Everything after "PCM frame of user X at time T" is Discord-free (``memory/voice/``). What lives here:

- :class:`DaveDecryptor` — discord-ext-voice-recv 0.5.2a179 decrypts only the transport layer; since DAVE
  (end-to-end encryption, mandatory since 2026-03-01) the payload inside is still encrypted. We wrap the reader's
  ``PacketDecryptor`` so that right after transport decryption the payload goes through
  ``dave_session.decrypt(user_id, davey.MediaType.audio, payload)`` (what upstream PRs #54/#62 do). A packet
  that fails is dropped and counted; it never reaches the Opus decoder and never ends capture.
- :class:`PCMSink` — the voice-recv sink: decoded 20 ms 48 kHz stereo PCM per user into a
  :class:`FrameQueueSource`, stamped on our monotonic clock from the RTP timestamps.
- :class:`VoiceSession` — one recorded session: voice connection, pipeline, memory guard, and the reconnect
  watchdog (backoff 1 s doubling to 30 s, 10 tries; the DM is told in the text channel if it gives up).

SSRC → user comes from SPEAKING events, which voice-recv already maps (``VoiceRecvClient._ssrc_to_id``).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import discord
from discord.ext import voice_recv
from nacl.exceptions import CryptoError

from memory.models import Campaign, Session
from memory.providers.stt import SpeechToText
from memory.store import CampaignMemory
from memory.voice.backoff import Backoff, GaveUp, retry
from memory.voice.capture import FrameDecryptor, FrameQueueSource, VoicePipeline
from memory.voice.guard import GuardStatus, MemoryGuard
from memory.voice.prompt import CampaignNames
from memory.voice.unheard import unheard_dir

try:
    import davey
except ImportError:  # pragma: no cover - davey is a declared dependency; without it only non-E2EE calls work
    davey = None  # type: ignore[assignment]  # the module or nothing, as the line above says

log = logging.getLogger("lorekeeper.voice")

RTP_RATE = 48_000
OPUS_SILENCE = b"\xf8\xff\xfe"  # sent unencrypted by DAVE clients: never try to decrypt it
RECONNECT = Backoff(initial=1.0, factor=2.0, maximum=30.0, tries=10)
WATCHDOG_S = 2.0

# The reader logs every transport CryptoError at ERROR level; a DAVE failure we raise is already counted and
# logged once per N by FrameDecryptor, so its duplicate line is filtered (thread-local: the reader's thread).
_ours = threading.local()


class _DropOurCryptoErrors(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(_ours, "failed", False) and record.getMessage().startswith("CryptoError decoding"):
            _ours.failed = False
            return False
        return True


logging.getLogger("discord.ext.voice_recv.reader").addFilter(_DropOurCryptoErrors())


class DaveDecryptor:
    """Stands in for voice-recv's ``PacketDecryptor``: transport decryption, then the DAVE layer."""

    def __init__(self, inner: Any, voice_client: voice_recv.VoiceRecvClient, gate: FrameDecryptor) -> None:
        self.inner = inner
        self.voice_client = voice_client
        self.gate = gate

    def update_secret_key(self, secret_key: bytes) -> None:
        self.inner.update_secret_key(secret_key)

    def decrypt_rtcp(self, data: bytes) -> bytes:
        return self.inner.decrypt_rtcp(data)

    def decrypt_rtp(self, packet: Any) -> bytes:
        payload = self.inner.decrypt_rtp(packet)
        session = getattr(self.voice_client._connection, "dave_session", None)
        if session is None or not session.ready or payload == OPUS_SILENCE:
            return payload  # the call is not end-to-end encrypted (yet): transport decryption was all
        user_id = self.voice_client._get_id_from_ssrc(packet.ssrc)
        plain = self.gate(user_id or 0, payload) if user_id is not None else None
        if plain is None:
            _ours.failed = True
            raise CryptoError("DAVE decryption failed")  # the reader drops the packet on CryptoError
        return plain


def dave_decrypt(voice_client: voice_recv.VoiceRecvClient) -> FrameDecryptor:
    def decrypt(user_id: int, payload: bytes) -> bytes:
        session = voice_client._connection.dave_session
        if session is None:  # the call left end-to-end encryption under this packet: dropped like a failure
            raise CryptoError("no DAVE session")
        return bytes(session.decrypt(user_id, davey.MediaType.audio, payload))

    return FrameDecryptor(decrypt)


class LorekeeperVoiceClient(voice_recv.VoiceRecvClient):
    """VoiceRecvClient whose reader gets the DAVE step; a subclass, not a fork, so upstream fixes drop in."""

    gate: FrameDecryptor | None = None

    def listen(self, sink: voice_recv.AudioSink, *, after: Any = None) -> None:
        super().listen(sink, after=after)
        self.gate = self.gate or dave_decrypt(self)
        # a stand-in by duck typing: voice-recv types the attribute as its own class, with no protocol to meet
        self._reader.decryptor = DaveDecryptor(self._reader.decryptor, self, self.gate)  # type: ignore[assignment]


class RtpClock:
    """Frame times on our monotonic clock from each speaker's RTP timestamps (48 kHz, wrapping at 2^32).

    Arrival times jitter and come in bursts out of voice-recv's jitter buffer; RTP spacing is exact. Re-anchor
    when the two drift apart by more than a second (a new stream after a reconnect, a clock jump)."""

    def __init__(self, clock: Any = time.monotonic) -> None:
        self.clock = clock
        self._anchors: dict[int, tuple[float, int]] = {}

    def at(self, user_id: int, rtp_timestamp: int) -> float:
        now = self.clock()
        anchor = self._anchors.get(user_id)
        if anchor is not None:
            t = anchor[0] + ((rtp_timestamp - anchor[1]) % 2**32) / RTP_RATE
            if abs(t - now) <= 1.0:
                return t
        self._anchors[user_id] = (now, rtp_timestamp)
        return now


class PCMSink(voice_recv.AudioSink):
    """Decoded PCM per user into the capture source (called on voice-recv's router thread)."""

    def __init__(self, source: FrameQueueSource, names: dict[int, str]) -> None:
        super().__init__()
        self.source = source
        self.names = names
        self.clock = RtpClock()
        self.unknown = 0

    def wants_opus(self) -> bool:
        return False

    def write(self, user: discord.abc.User | None, data: voice_recv.VoiceData) -> None:
        if user is None:
            self.unknown += 1  # no SPEAKING event for this SSRC yet: we cannot say who it is
            return
        if not data.pcm:
            return
        self.names.setdefault(user.id, getattr(user, "display_name", None) or user.name)
        self.source.push(user.id, data.pcm, self.clock.at(user.id, data.packet.timestamp))

    def cleanup(self) -> None:
        pass


@dataclass(frozen=True, slots=True)
class SessionStatus:
    title: str
    duration_s: float
    speakers: dict[str, int]
    guard: GuardStatus
    decrypt_failures: int
    connected: bool
    unknown_packets: int = 0  # audio of a user Discord had not named yet (no SPEAKING event): dropped
    unheard: int = 0  # lines speech-to-text failed on, kept as audio for `lorekeeper session unheard`


class CouldNotJoin(Exception):
    """Discord did not let the bot into the voice channel: ``args[0]`` is why, "no access" (no Connect or View
    Channel, a full channel) or "already in voice" (in another channel of the server)."""


class VoiceSession:
    """One recorded session in one guild: survives voice reconnects; the pipeline and guard keep running."""

    def __init__(
        self,
        bot: discord.Client,
        channel: discord.VoiceChannel | discord.StageChannel,
        announce: discord.abc.Messageable,
        campaign: Campaign,
        mem: CampaignMemory,
        guard: MemoryGuard,
        stt: SpeechToText,
        unheard: Path | None = None,
    ) -> None:
        self.bot = bot
        self.channel = channel
        self.announce = announce
        self.mem = mem
        #: The campaign recorded into, as it was read at the start (its DM role): the database may be what fails.
        self.campaign = campaign
        self.guard = guard
        self.started = time.monotonic()
        # Times are seconds into the session: a resumed one goes on from when it began, not from 0 again (a line
        # said an hour in is not the one said at the start, and its facts were not true back then).
        into = (dt.datetime.now(dt.UTC) - guard.session.started_at).total_seconds()
        self.names: dict[int, str] = {}
        self.source = FrameQueueSource(asyncio.get_running_loop())
        names = CampaignNames(mem)
        guard.recorder.cast = names.cast  # stage 1 knows the cast the speech prompt puts first
        self.pipeline = VoicePipeline(
            self.source,
            guard,
            stt,
            names=names,
            speaker_name=self.speaker_name,
            session_start=self.started - max(0.0, into),
            unheard_dir=unheard,
        )
        self.voice: LorekeeperVoiceClient | None = None
        self._gate: FrameDecryptor | None = None
        self._sinks: list[PCMSink] = []  # one per connection: their counts add up across reconnects
        self._stopping = False
        self._run = asyncio.create_task(self.pipeline.run(), name=f"voice-pipeline-{channel.guild.id}")
        self._watchdog: asyncio.Task[None] | None = None

    @classmethod
    async def start(
        cls,
        bot: discord.Client,
        channel: discord.VoiceChannel | discord.StageChannel,
        announce: discord.abc.Messageable,
        campaign: Campaign,
        mem: CampaignMemory,
        title: str,
        data_dir: Path,
        stt: SpeechToText,
        dm: discord.abc.User,
        stage2: bool = False,
    ) -> VoiceSession:
        """Record ``channel`` into the session titled ``title``; ``dm`` started it: their lines are the narrator's.
        ``stage2``: an LLM is configured, so lines with doubtful spans keep them (and their doubt) for its job."""
        guard = await MemoryGuard.start(mem, title, data_dir, dm_speaker_id=str(dm.id), stage2=stage2)
        unheard = unheard_dir(data_dir, mem.campaign_id, guard.session.id)
        session = cls(bot, channel, announce, campaign, mem, guard, stt, unheard)
        try:
            await session._connect()
        except BaseException as exc:
            await session._shutdown()
            await guard.abandon()  # not left open, nor an empty session in the campaign
            # discord.py waits for a join Discord never grants (no Connect, a full channel), then times out
            if isinstance(exc, TimeoutError | discord.Forbidden):
                raise CouldNotJoin("no access") from exc
            if type(exc) is discord.ClientException:  # a subclass (a closed voice gateway, say) is a bug
                raise CouldNotJoin("already in voice") from exc
            raise
        session._watchdog = asyncio.create_task(session._watch(), name=f"voice-watchdog-{channel.guild.id}")
        return session

    def speaker_name(self, user_id: int) -> str:
        if user_id not in self.names:
            member = self.channel.guild.get_member(user_id)
            self.names[user_id] = member.display_name if member else f"user {user_id}"
        return self.names[user_id]

    async def _connect(self) -> None:
        voice = await self.channel.connect(cls=LorekeeperVoiceClient, self_deaf=False, reconnect=False)
        assert isinstance(voice, LorekeeperVoiceClient)
        voice.gate = self._gate  # keep the failure count across reconnects
        sink = PCMSink(self.source, self.names)
        voice.listen(sink)
        self._sinks.append(sink)
        self._gate = voice.gate
        self.voice = voice

    async def _watch(self) -> None:
        """Notice a lost voice connection and reconnect with backoff; the recording goes on meanwhile."""
        while not self._stopping:
            await asyncio.sleep(WATCHDOG_S)
            if self._stopping or (self.voice is not None and self.voice.is_connected()):
                continue
            log.warning("voice connection in guild %s lost; reconnecting", self.channel.guild.id)
            with contextlib.suppress(Exception):
                if self.voice is not None:
                    await self.voice.disconnect(force=True)
            try:
                await retry(self._connect, RECONNECT, retry_on=(Exception,), on_give_up=self._gave_up)
            except GaveUp:
                return
            log.info("voice connection in guild %s restored", self.channel.guild.id)

    async def _gave_up(self, error: GaveUp) -> None:
        log.error("giving up on voice in guild %s: %s", self.channel.guild.id, error)
        with contextlib.suppress(discord.HTTPException):
            await self.announce.send(
                f"⚠️ Lost the voice connection to {self.channel.mention} and could not reconnect after "
                f"{error.tries} tries. Everything said before is saved; run `/session stop` and "
                "`/session start` again to resume recording."
            )

    def status(self) -> SessionStatus:
        return SessionStatus(
            title=self.guard.session.title,
            duration_s=time.monotonic() - self.started,
            speakers=dict(self.pipeline.stats.speakers),
            guard=self.guard.status(),
            decrypt_failures=self._gate.failed if self._gate else 0,
            connected=bool(self.voice and self.voice.is_connected()),
            unknown_packets=sum(sink.unknown for sink in self._sinks),
            unheard=self.pipeline.stats.unheard,
        )

    async def stop(self) -> Session:
        """Leave voice, transcribe what is still queued, store it, close the session (summary job)."""
        await self._shutdown()
        ended = await self.guard.end(wait_s=5.0)
        await self.guard.close()  # ended: the flush timer stops now (on SpoolPending the retry must go on)
        return ended

    async def abandon(self) -> None:
        """After a stop that failed: whatever still runs stops, voice is left, what the guard holds is stored or
        spooled. The session stays open, to be resumed and stopped again."""
        with contextlib.suppress(Exception):
            await self._shutdown()
        await self.guard.close()

    async def _shutdown(self) -> None:
        self._stopping = True
        if self._watchdog is not None:
            self._watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watchdog
        if self.voice is not None:
            with contextlib.suppress(Exception):
                self.voice.stop_listening()
            with contextlib.suppress(Exception):
                await self.voice.disconnect(force=True)
        self.source.close()
        await self.pipeline.stop()
        await self._run
