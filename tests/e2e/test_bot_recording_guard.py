"""/session and /campaign around a live recording: who may act on which campaign, and a database that goes away.

The fake Discord has no voice, so a stand-in holds a real MemoryGuard as VoiceSession does; its stop() is
VoiceSession.stop after leaving voice. The outage is real: the test database refuses connections.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from types import SimpleNamespace

import asyncpg
import discord
import numpy as np
import pytest

from bot.app import LorekeeperBot
from bot.voice import SessionStatus, VoiceSession
from cogs.sessions import NOT_IN_VOICE
from memory.errors import InvalidInputError
from memory.models import Campaign, EntityIn, EntityType, EntryIn, Session
from memory.providers.stt import STTError, Transcript
from memory.recorder import Utterance
from memory.store import CampaignMemory, Memory
from memory.voice.guard import MemoryGuard
from memory.voice.segmenter import Utterance as Segment
from memory.voice.unheard import unheard_files
from tests.e2e.fake_discord import FakeChannel, FakeDiscord, FakeGuild, FakeMember


class Recording:
    """What the cog holds for a live session, minus voice."""

    def __init__(self, campaign: Campaign, mem: CampaignMemory, guard: MemoryGuard) -> None:
        self.campaign, self.mem, self.guard = campaign, mem, guard
        self.before_end: Callable[[], Awaitable[None]] | None = None  # what happens while the tail is transcribed
        self.unheard = 0  # lines speech-to-text failed on, as VoiceSession's pipeline counts them

    def status(self) -> SessionStatus:
        return SessionStatus(self.guard.session.title, 60.0, {}, self.guard.status(), 0, True, unheard=self.unheard)

    async def stop(self) -> Session:
        if self.before_end is not None:
            await self.before_end()
        ended = await self.guard.end(wait_s=0.5)
        await self.guard.close()
        return ended

    async def abandon(self) -> None:
        await self.guard.close()


@pytest.fixture
async def recording(
    bot: LorekeeperBot, fake_discord: FakeDiscord, memory: Memory, guild: FakeGuild, dm: FakeMember, tmp_path: Path
) -> AsyncIterator[Recording]:
    await fake_discord.invoke("campaign create", {"name": "Ashes"}, user_id=dm)
    campaign = await memory.campaigns(guild.id).active()
    assert campaign is not None
    mem = memory.campaign(campaign.id)
    live = Recording(campaign, mem, await MemoryGuard.start(mem, "Night one", tmp_path / "spool"))
    bot.get_cog("Sessions").live[guild.id] = live  # type: ignore[union-attr]
    yield live
    bot.get_cog("Sessions").live.clear()  # type: ignore[union-attr]
    await live.guard.close()


@asynccontextmanager
async def outage(pg_template: str, fresh_dsn: str) -> AsyncIterator[Callable[[], Awaitable[None]]]:
    """A function that takes the test database away (until the block ends)."""
    database = fresh_dsn.partition("?")[0].rsplit("/", 1)[1]
    admin = await asyncpg.connect(pg_template)

    async def go_away() -> None:
        await admin.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS false')
        await admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
            database,
        )

    try:
        yield go_away
    finally:
        await admin.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS true')
        await admin.close()


async def test_stop_and_status_work_while_the_database_is_down(
    recording: Recording, pg_template: str, fresh_dsn: str, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    async with outage(pg_template, fresh_dsn) as go_away:
        await go_away()
        await recording.guard.add(Utterance(speaker="Ana", text="We ride to Ironhold."))
        await recording.guard.flush()  # to the spool
        status = await fake_discord.invoke("session status", user_id=dm)
        assert "Memory: 🟠 degraded (database unreachable)" in status.texts(), status.texts()
        stop = await fake_discord.invoke("session stop", user_id=dm)
        # said in the channel, to the players too: no path of the bot's machine
        assert stop.texts() == [
            "⏹️ Stopped recording. The database is unavailable: 1 utterance is safe on the bot's disk and will be "
            "stored (and the session closed) as soon as it is back."
        ]
    assert (await fake_discord.invoke("session status", user_id=dm)).texts() == [
        "No session is being recorded in this server."
    ]


async def test_a_database_lost_while_stopping_still_ends_the_session(
    recording: Recording, pg_template: str, fresh_dsn: str, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    async with outage(pg_template, fresh_dsn) as go_away:
        recording.before_end = go_away  # healthy until the very end: nothing waits, the session's end fails
        stop = await fake_discord.invoke("session stop", user_id=dm)
        assert "The database is unavailable" in stop.texts()[0], stop.texts()
    # The guard's retry ends the session once the database is back, after its backoff (1, 2, 4, 8 s…: the
    # longer the outage lasted on a loaded machine, the longer its last wait).
    deadline = asyncio.get_running_loop().time() + 60
    while (ended := await recording.mem.log.session_by_title("Night one")) is None or ended.ended_at is None:
        assert asyncio.get_running_loop().time() < deadline, "the session was never ended"
        await asyncio.sleep(0.1)


async def test_the_campaign_being_recorded_cannot_be_deleted(
    recording: Recording, fake_discord: FakeDiscord, memory: Memory, guild: FakeGuild, dm: FakeMember
) -> None:
    asked = await fake_discord.invoke("campaign delete", {"name": "Ashes"}, user_id=dm)
    assert asked.texts() == ["**Ashes** is being recorded: /session stop first."]
    assert [c.name for c in await memory.campaigns(guild.id).list()] == ["Ashes"]


@pytest.fixture
def keepers(guild: FakeGuild) -> tuple[FakeMember, FakeMember]:
    """The DMs of campaigns A and B, made before the bot starts (it reads the guild's roles when it joins)."""
    return (
        guild.add_member("keeper-a", roles=[guild.add_role("DM of A")]),
        guild.add_member("keeper-b", roles=[guild.add_role("DM of B")]),
    )


async def test_switch_and_delete_need_the_dm_of_the_campaign_they_act_on(
    keepers: tuple[FakeMember, FakeMember],
    bot: LorekeeperBot,
    fake_discord: FakeDiscord,
    memory: Memory,
    guild: FakeGuild,
) -> None:
    keeper_a, keeper_b = keepers
    campaigns = memory.campaigns(guild.id)
    for name, keeper in (("A", keeper_a), ("B", keeper_b)):
        await campaigns.create(name)
        await campaigns.update(name, settings={"dm_role_id": keeper.roles[0].id})
    b = await campaigns.get("B")
    await memory.campaign(b.id).graph.add_entity(EntityIn(name="Strahd", type=EntityType.npc))
    assert (await campaigns.active()).name == "A"  # type: ignore[union-attr]
    # the DM of A, A active: B is not theirs to delete nor to switch to
    for command in ("campaign delete", "campaign switch"):
        refused = await fake_discord.invoke(command, {"name": "B"}, user_id=keeper_a)
        assert refused.texts() == ["Only the DM can do that."], (command, refused.texts())
    assert (await campaigns.active()).name == "A"  # type: ignore[union-attr]
    # B's DM may switch to B, and A's DM back to A
    assert (await fake_discord.invoke("campaign switch", {"name": "B"}, user_id=keeper_b)).texts() == [
        "Active campaign: **B**."
    ]
    assert (await fake_discord.invoke("campaign switch", {"name": "A"}, user_id=keeper_a)).texts() == [
        "Active campaign: **A**."
    ]
    assert [c.name for c in await campaigns.list()] == ["A", "B"]


@pytest.fixture
def table(guild: FakeGuild) -> FakeChannel:
    """A voice channel, made before the bot starts."""
    return guild.add_channel("Table", type=2)


def in_voice(bot: LorekeeperBot, guild: FakeGuild, member: FakeMember, table: FakeChannel) -> None:
    """The member sits in ``table`` as the bot sees it (the fake Discord sends no voice states); no audio comes."""
    bot.stt = object()  # type: ignore[attr-defined]  # never used: no audio arrives
    joined = bot.get_guild(guild.id)
    assert joined is not None
    joined._voice_states[member.id] = discord.VoiceState(
        data={  # type: ignore[typeddict-item]
            "channel_id": str(table.id),
            "session_id": "s",
            "deaf": False,
            "mute": False,
            "self_deaf": False,
            "self_mute": False,
            "suppress": False,
            "self_video": False,
            "request_to_speak_timestamp": None,
            "user_id": str(member.id),
        },
        channel=joined.get_channel(table.id),  # type: ignore[arg-type]
    )


async def test_a_start_that_resumes_a_session_says_so(
    table: FakeChannel,
    bot: LorekeeperBot,
    fake_discord: FakeDiscord,
    memory: Memory,
    guild: FakeGuild,
    dm: FakeMember,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Today's session not ended (the bot restarted mid-game): a start without a title resumes it, and says so."""
    await fake_discord.invoke("campaign create", {"name": "Ashes"}, user_id=dm)
    campaign = await memory.campaigns(guild.id).active()
    assert campaign is not None
    mem = memory.campaign(campaign.id)
    today = f"Session {dt.datetime.now(dt.UTC):%Y-%m-%d}"
    earlier = await mem.log.start_session(today)
    for text in ("We ride to Ironhold.", "The gate is shut."):
        await mem.log.write(earlier.id, EntryIn(speaker="Ana", raw_text=text, text=text))

    async def join(self: VoiceSession) -> None:
        pass

    monkeypatch.setattr(VoiceSession, "_connect", join)
    in_voice(bot, guild, dm, table)
    for options, said in [
        ({}, f"— resumed session **{today}** (2 lines so far; /session start with a new title starts a new session)."),
        ({"title": "Night two"}, "— session **Night two**. Everything"),
    ]:
        start = await fake_discord.invoke("session start", options, user_id=dm)
        try:
            [text] = start.texts()
            assert text.startswith("🔴 **Recording**") and said in text, text
            live = bot.get_cog("Sessions").live[guild.id]  # type: ignore[union-attr]
            # stage 1 is told the cast the speech prompt puts first
            assert live.guard.recorder.cast == live.pipeline.names.cast
        finally:
            assert (await fake_discord.invoke("session stop", user_id=dm)).texts()[0].startswith("⏹️ Stopped")


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (TimeoutError(), "check that I have Connect and View Channel there and that it is not full"),
        (
            discord.Forbidden(SimpleNamespace(status=403, reason="Forbidden"), "Missing Permissions"),
            "check that I have Connect and View Channel there and that it is not full",
        ),
        (discord.ClientException("Already connected to a voice channel."), "already in a voice channel"),
    ],
)
async def test_a_start_that_cannot_join_voice_says_what_to_check_and_leaves_no_session(
    error: Exception,
    said: str,
    table: FakeChannel,
    bot: LorekeeperBot,
    fake_discord: FakeDiscord,
    memory: Memory,
    guild: FakeGuild,
    dm: FakeMember,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """discord.py times out when the bot may not join (no Connect, a full channel): the DM read "Something went
    wrong; it has been logged.", with no clue what to fix."""
    await fake_discord.invoke("campaign create", {"name": "Ashes"}, user_id=dm)

    async def refused(self: VoiceSession) -> None:
        raise error

    monkeypatch.setattr(VoiceSession, "_connect", refused)
    in_voice(bot, guild, dm, table)
    start = await fake_discord.invoke("session start", {"title": "Denied"}, user_id=dm)
    [text] = start.texts()
    assert text.startswith(f"I could not join <#{table.id}>: ") and said in text, text
    assert text.endswith("then run /session start again.")
    campaign = await memory.campaigns(guild.id).active()
    assert campaign is not None
    assert await memory.campaign(campaign.id).log.session_by_title("Denied") is None
    assert guild.id not in bot.get_cog("Sessions").live  # type: ignore[union-attr]


async def test_a_timeout_before_joining_voice_is_not_blamed_on_voice(
    table: FakeChannel,
    bot: LorekeeperBot,
    fake_discord: FakeDiscord,
    guild: FakeGuild,
    dm: FakeMember,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A database that times out while the session is opened is no reason to check the bot's Connect permission."""
    await fake_discord.invoke("campaign create", {"name": "Ashes"}, user_id=dm)

    async def slow_database(*args: object, **kwargs: object) -> MemoryGuard:
        raise TimeoutError

    monkeypatch.setattr(MemoryGuard, "start", slow_database)
    in_voice(bot, guild, dm, table)
    [text] = (await fake_discord.invoke("session start", {"title": "Slow"}, user_id=dm)).texts()
    assert "could not join" not in text and "Connect" not in text, text


async def test_a_second_game_the_same_day_is_a_session_of_its_own(
    table: FakeChannel,
    bot: LorekeeperBot,
    fake_discord: FakeDiscord,
    memory: Memory,
    guild: FakeGuild,
    dm: FakeMember,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Today's default title taken by a session the DM ended: a start without a title makes "… (2)", then "… (3)";
    a title given resumes that session all the same, and says it had ended."""
    await fake_discord.invoke("campaign create", {"name": "Ashes"}, user_id=dm)
    campaign = await memory.campaigns(guild.id).active()
    assert campaign is not None
    mem = memory.campaign(campaign.id)
    today = f"Session {dt.datetime.now(dt.UTC):%Y-%m-%d}"
    two_hours_ago = dt.datetime.now(dt.UTC) - dt.timedelta(hours=2)
    afternoon = await mem.log.start_session(today, started_at=two_hours_ago)
    for text in ("We ride to Ironhold.", "The gate is shut."):
        await mem.log.write(afternoon.id, EntryIn(speaker="Ana", raw_text=text, text=text))
    await mem.log.end_session(afternoon.id)

    async def join(self: VoiceSession) -> None:
        pass

    monkeypatch.setattr(VoiceSession, "_connect", join)
    in_voice(bot, guild, dm, table)
    for options, said in [
        ({}, f"— session **{today} (2)**. Everything"),
        ({}, f"— session **{today} (3)**. Everything"),
        (
            {"title": today.lower()},
            f"— resumed session **{today}** (it had ended, with 2 lines: what is said now is added to it; "
            "/session start with a new title starts a new session).",
        ),
    ]:
        start = await fake_discord.invoke("session start", options, user_id=dm)
        try:
            [text] = start.texts()
            assert text.startswith("🔴 **Recording**") and said in text, text
            # being recorded, a resumed session is live: listed so, and not deleted as an ended one
            live = bot.get_cog("Sessions").live[guild.id]  # type: ignore[union-attr]
            recording = live.guard.session.title
            assert [s.ended_at for s in await mem.log.sessions() if s.title == recording] == [None]
            # what is said now is two hours into the resumed session, not at 0:00 again (nor a new one's start)
            into = live.started - live.pipeline.session_start
            assert (7190 < into < 7300) if "title" in options else (0 <= into < 60), into
            with pytest.raises(InvalidInputError, match="has not ended"):
                await mem.log.deletable(recording)
        finally:
            assert (await fake_discord.invoke("session stop", user_id=dm)).texts()[0].startswith("⏹️ Stopped")
    assert [s.title for s in await mem.log.sessions()] == [today, f"{today} (2)", f"{today} (3)"]
    assert all(s.ended_at is not None for s in await mem.log.sessions())


async def test_a_second_start_while_the_first_joins_voice_is_refused(
    table: FakeChannel,
    bot: LorekeeperBot,
    fake_discord: FakeDiscord,
    memory: Memory,
    guild: FakeGuild,
    dm: FakeMember,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await fake_discord.invoke("campaign create", {"name": "Ashes"}, user_id=dm)
    joining, second_answered = asyncio.Event(), asyncio.Event()

    async def slow_join(self: VoiceSession) -> None:
        joining.set()
        await second_answered.wait()  # the first start stays in its join until the second is answered

    monkeypatch.setattr(VoiceSession, "_connect", slow_join)
    in_voice(bot, guild, dm, table)

    async def second() -> list[str]:
        await asyncio.wait_for(joining.wait(), 60)
        try:
            return (await fake_discord.invoke("session start", {"title": "Night one"}, user_id=dm)).texts()
        finally:
            second_answered.set()

    first, refused = await asyncio.gather(
        fake_discord.invoke("session start", {"title": "Night one"}, user_id=dm), second()
    )
    assert guild.id in bot.get_cog("Sessions").live  # type: ignore[union-attr]
    try:
        assert first.texts()[0].startswith("🔴 **Recording**"), first.texts()
        assert refused == ["The session is being started or stopped right now; try again in a moment."]
        campaign = await memory.campaigns(guild.id).active()
        assert await memory.campaign(campaign.id).log.session_by_title("Night one") is not None  # type: ignore[union-attr]
    finally:
        stopped = await fake_discord.invoke("session stop", user_id=dm)
        assert stopped.texts()[0].startswith("⏹️ Stopped recording **Night one**"), stopped.texts()
        assert guild.id not in bot.get_cog("Sessions").live  # type: ignore[union-attr]


async def test_a_stop_that_fails_on_a_bug_still_frees_the_guild_and_says_so(
    recording: Recording, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    async def bug() -> None:
        raise RuntimeError("a bug while the tail is transcribed")

    recording.before_end = bug
    await recording.guard.add(Utterance(speaker="Ana", text="We ride to Ironhold."))
    stop = await fake_discord.invoke("session stop", user_id=dm)
    [said] = stop.texts()
    assert said.startswith("⏹️ Stopped recording, but filing the session failed (it has been logged)."), said
    assert "RuntimeError" not in said  # the players read it too: what failed inside is in the log
    assert "/session start with the title **Night one** resumes the session" in said
    # the guild may record again: not "Already recording", but the usual check of where the DM is
    start = await fake_discord.invoke("session start", {"title": "Night one"}, user_id=dm)
    assert start.texts() == [NOT_IN_VOICE]
    # what the session still held is stored
    [line] = await recording.mem.log.session_entries(recording.guard.session.id)
    assert line.text == "We ride to Ironhold."


async def test_a_stop_says_how_many_lines_went_unheard_and_the_command_for_them(
    recording: Recording, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    """Speech-to-text failing on a line was said in the bot's log only: the DM never learned to hear it again."""
    recording.unheard = 1
    [said] = (await fake_discord.invoke("session stop", user_id=dm)).texts()
    assert said.endswith(
        "The recap is written in the background (/recap). 1 line went unheard (speech-to-text failed): "
        "`lorekeeper session unheard` hears it again."
    ), said


class FailingSTT:
    """Speech-to-text that fails on every utterance, as a model that cannot run would."""

    async def transcribe(self, *args: object, **kwargs: object) -> Transcript:
        raise STTError("the model cannot run")


async def test_a_voice_session_counts_the_lines_it_could_not_hear_in_its_stop_reply(
    table: FakeChannel,
    bot: LorekeeperBot,
    fake_discord: FakeDiscord,
    guild: FakeGuild,
    dm: FakeMember,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The real VoiceSession, voice left out: two utterances speech-to-text fails on, one while the session
    stops, are kept as audio and counted in what /session stop says."""
    await fake_discord.invoke("campaign create", {"name": "Ashes"}, user_id=dm)

    async def join(self: VoiceSession) -> None:
        pass

    monkeypatch.setattr(VoiceSession, "_connect", join)
    in_voice(bot, guild, dm, table)
    bot.stt = FailingSTT()  # type: ignore[attr-defined]
    start = await fake_discord.invoke("session start", {"title": "Night one"}, user_id=dm)
    assert start.texts()[0].startswith("🔴 **Recording**"), start.texts()
    live = bot.get_cog("Sessions").live[guild.id]  # type: ignore[union-attr]
    for n in range(2):
        await live.pipeline._enqueue(
            Segment(
                user_id=dm.id,
                start=live.started + n,
                end=live.started + n + 1,
                pcm16k=np.zeros(16_000, dtype=np.float32),
            )
        )
    [said] = (await fake_discord.invoke("session stop", user_id=dm)).texts()
    assert said.startswith("⏹️ Stopped recording **Night one**") and said.endswith(
        " 2 lines went unheard (speech-to-text failed): `lorekeeper session unheard` hears them again."
    ), said
    assert len(unheard_files(live.pipeline.unheard_dir)) == 2
