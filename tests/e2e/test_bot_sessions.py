"""/session through the real bot and the fake Discord: the checks before any voice work.

The fake Discord server speaks no voice protocol (no voice gateway, no UDP, no DAVE) and sends no voice state
updates, so nobody is ever in a voice channel here: starting a recording is covered by the manual checklist
(docs/voice-checklist.md); the pipeline behind it by tests/unit/test_voice_capture.py and
tests/integration/test_voice_guard.py.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from types import SimpleNamespace

import pytest

from bot.app import LorekeeperBot
from bot.voice import SessionStatus
from cogs.sessions import NO_SESSION, NOT_IN_VOICE
from memory.graph import KnowledgeGraph
from memory.models import (
    Campaign,
    EntityIn,
    EntityType,
    Provenance,
    RelationshipIn,
    ReviewStatus,
    Source,
    Visibility,
)
from memory.recorder import SessionRecorder, Utterance
from memory.store import CampaignMemory
from memory.voice.guard import GuardState, GuardStatus
from tests.e2e.fake_discord import FakeChannel, FakeDiscord, FakeGuild, FakeMember

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


@pytest.fixture
async def campaign(bot: LorekeeperBot, fake_discord: FakeDiscord, dm: FakeMember) -> None:
    created = await fake_discord.invoke("campaign create", {"name": "Sunken Crown"}, user_id=dm)
    assert created.texts()[0].startswith("Created"), created.texts()


async def test_start_is_refused_for_a_player(campaign, fake_discord: FakeDiscord, player: FakeMember) -> None:
    refused = await fake_discord.invoke("session start", {"title": "Night one"}, user_id=player)
    assert refused.ephemeral and refused.texts() == ["Only the DM can do that."]


async def test_start_asks_the_dm_to_join_voice_first(
    campaign, bot: LorekeeperBot, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    asked = await fake_discord.invoke("session start", {"title": "Night one"}, user_id=dm)
    assert asked.ephemeral and asked.texts() == [NOT_IN_VOICE]
    assert bot.voice_clients == []


async def test_status_and_stop_without_a_session(campaign, fake_discord: FakeDiscord, dm: FakeMember, player) -> None:
    status = await fake_discord.invoke("session status", user_id=player)
    assert status.ephemeral and status.texts() == [NO_SESSION]
    stop = await fake_discord.invoke("session stop", user_id=dm)
    assert stop.ephemeral and stop.texts() == [NO_SESSION]


class RecordingStub:
    """Stands in for a VoiceSession (the fake Discord has no voice): what /session status reads."""

    def __init__(self, title: str, campaign: Campaign, mem: CampaignMemory) -> None:
        self.guard = SimpleNamespace(session=SimpleNamespace(title=title))
        self.title = title
        self.campaign = campaign
        self.mem = mem
        self.decrypt_failures = self.unknown_packets = 0

    def status(self) -> SessionStatus:
        guard = GuardStatus(GuardState.healthy, stored=3, spooled=0)
        return SessionStatus(
            self.title,
            65.0,
            {"Ana": 3},
            guard,
            decrypt_failures=self.decrypt_failures,
            connected=True,
            unknown_packets=self.unknown_packets,
        )


async def _recording(bot: LorekeeperBot, fake_discord: FakeDiscord) -> CampaignMemory:
    """The guild's active campaign, recording "Night one" as /session status sees it."""
    guild_id = next(iter(fake_discord.guilds))
    active = await bot.memory.campaigns(guild_id).active()
    assert active is not None
    mem = bot.memory.campaign(active.id)
    bot.get_cog("Sessions").live[guild_id] = RecordingStub("Night one", active, mem)
    return mem


async def test_status_shows_pending_facts_only_to_the_dm(
    campaign, bot: LorekeeperBot, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    mem = await _recording(bot, fake_discord)
    unsure = Provenance(source=Source.inferred, confidence=0.4)
    await mem.graph.add_entity(
        EntityIn(name="Secret heir", type=EntityType.npc, status=ReviewStatus.pending, provenance=unsure)
    )
    try:
        as_dm = await fake_discord.invoke("session status", user_id=dm)
        assert "Pending facts: 1" in as_dm.texts() and "Utterances stored: 3" in as_dm.texts()
        # the model hearing them, said in the log only before
        assert "Speech-to-text: Whisper auto (loaded at the first line heard)" in as_dm.texts(), as_dm.texts()
        as_player = await fake_discord.invoke("session status", user_id=player)
        assert "Utterances stored: 3" in as_player.texts()
        assert not any(t.startswith("Pending") for t in as_player.texts()), as_player.texts()
    finally:
        bot.get_cog("Sessions").live.clear()


async def test_status_tells_the_dm_of_held_jobs_and_players_nothing(
    campaign, bot: LorekeeperBot, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    mem = await _recording(bot, fake_discord)
    try:
        assert not any(
            t.startswith("Background jobs held")
            for t in (await fake_discord.invoke("session status", user_id=dm)).texts()
        )
        for n in range(2):  # two extractions held after an LLM outage
            await bot.memory.pool.execute(
                """
                WITH j AS (INSERT INTO pgqueuer (priority, status, entrypoint, payload)
                           VALUES (0, 'failed', 'lk_extract', $1) RETURNING id)
                INSERT INTO pgqueuer_log (job_id, status, priority, entrypoint, traceback)
                SELECT id, 'failed', 0, 'lk_extract', $2::jsonb FROM j
                """,
                json.dumps({"campaign_id": mem.campaign_id, "n": n}).encode(),
                json.dumps(
                    {"exception_type": "LLMUnavailable", "exception_message": "LLM request failed: HTTP 503 " * 9}
                ),
            )
        as_dm = (await fake_discord.invoke("session status", user_id=dm)).texts()
        [held] = [t for t in as_dm if t.startswith("Background jobs held")]
        assert held.startswith(
            "Background jobs held: 2, first extract: LLMUnavailable: LLM request failed: HTTP 503"
        ), held
        assert "…" in held and "`lorekeeper jobs retry`" in held, held
        as_player = (await fake_discord.invoke("session status", user_id=player)).texts()
        assert not any("held" in t or "LLM" in t for t in as_player), as_player
    finally:
        bot.get_cog("Sessions").live.clear()


async def test_status_gives_players_the_title_with_secret_names_masked(
    campaign, bot: LorekeeperBot, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember, monkeypatch
) -> None:
    guild_id = next(iter(fake_discord.guilds))
    active = await bot.memory.campaigns(guild_id).active()
    assert active is not None
    mem = bot.memory.campaign(active.id)
    await mem.graph.add_entity(EntityIn(name="Queen Mab", type=EntityType.npc, visibility=Visibility.secret))
    bot.get_cog("Sessions").live[guild_id] = RecordingStub("Queen Mab unmasked", active, mem)
    try:
        assert "Recording: Queen Mab unmasked" in (await fake_discord.invoke("session status", user_id=dm)).texts()
        as_player = (await fake_discord.invoke("session status", user_id=player)).texts()
        assert as_player[0] == "Recording: [secret] unmasked", as_player

        async def down(*args: object) -> None:
            raise ConnectionError("database unreachable")

        # the database may be what is down: no title then, rather than one unmasked
        monkeypatch.setattr(KnowledgeGraph, "player_mask", down)
        as_player = (await fake_discord.invoke("session status", user_id=player)).texts()
        assert as_player[0] == "Recording" and "Utterances stored: 3" in as_player, as_player
    finally:
        bot.get_cog("Sessions").live.clear()


async def test_list_shows_the_campaigns_sessions_as_played_to_everyone(
    campaign, bot: LorekeeperBot, fake_discord: FakeDiscord, player: FakeMember
) -> None:
    empty = await fake_discord.invoke("session list", user_id=player)
    assert empty.ephemeral and empty.texts() == ["No sessions recorded in this campaign yet."]
    guild_id = next(iter(fake_discord.guilds))
    active = await bot.memory.campaigns(guild_id).active()
    assert active is not None
    mem = bot.memory.campaign(active.id)
    for title, day, said in (("Night 2", 9, 1), ("Night 1", 2, 2)):
        rec = await SessionRecorder.start(mem, title, started_at=datetime(2024, 3, day, 19, tzinfo=UTC))
        await rec.add_many([Utterance(speaker="DM", text=f"Line {n}.", seq=n) for n in range(1, said + 1)])
        await rec.end()
    night1 = await mem.log.session_by_title("Night 1")
    assert night1 is not None
    await mem.log.end_session(night1.id)
    await mem.log.set_summary(night1.id, "The bell tolled.")
    await mem.log.start_session("Tonight", started_at=datetime(2024, 3, 16, 18, tzinfo=UTC))
    # given its day alone (`--started 2024-03-01`): that day, which no reader's time zone moves
    await mem.log.end_session((await mem.log.start_session("Night 0", started_at=date(2024, 3, 1))).id)

    listed = await fake_discord.invoke("session list", user_id=player)
    # Discord timestamps: each reader sees them in their own time zone
    night1, night2, tonight = (
        int(datetime(2024, 3, d, h, tzinfo=UTC).timestamp()) for d, h in ((2, 19), (9, 19), (16, 18))
    )
    assert listed.ephemeral and listed.texts() == [
        "Sessions: Sunken Crown",
        "**Night 0** — 2024-03-01 · 0 lines · no recap yet\n"
        f"**Night 1** — <t:{night1}:f> · 2 lines · recap written\n"
        f"**Night 2** — <t:{night2}:f> · 1 line · no recap yet\n"
        f"**Tonight** — <t:{tonight}:f> · 0 lines · live",
    ]


async def test_delete_asks_the_dm_then_says_what_went_and_refuses_players_and_the_session_being_recorded(
    campaign, bot: LorekeeperBot, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    guild_id = next(iter(fake_discord.guilds))
    active = await bot.memory.campaigns(guild_id).active()
    assert active is not None
    mem = bot.memory.campaign(active.id)
    for title in ("Night 1", "night1"):  # the same transcript imported twice, the second time by mistake
        rec = await SessionRecorder.start(mem, title)
        await rec.add_many([Utterance(speaker="DM", text=f"Line {n}.", seq=n) for n in (1, 2)])
        await rec.end()
    tonight = await mem.log.start_session("Tonight")

    refused = await fake_discord.invoke("session delete", {"title": "night1"}, user_id=player)
    assert refused.ephemeral and refused.texts() == ["Only the DM can do that."]
    unknown = await fake_discord.invoke("session delete", {"title": "nigth1"}, user_id=dm)
    assert unknown.texts() == [
        "no session titled 'nigth1' in this campaign (did you mean 'night1'?): /session list shows them"
    ]
    stub = RecordingStub("Tonight", active, mem)
    stub.guard.session.id = tonight.id
    bot.get_cog("Sessions").live[guild_id] = stub
    try:
        recorded = await fake_discord.invoke("session delete", {"title": "Tonight"}, user_id=dm)
        assert recorded.texts() == ["**Tonight** is being recorded: /session stop first."]
    finally:
        bot.get_cog("Sessions").live.clear()

    asked = await fake_discord.invoke("session delete", {"title": "night1"}, user_id=dm)
    assert asked.ephemeral and asked.original is not None
    assert asked.texts()[0] == (
        "Delete session **night1** of **Sunken Crown** with its 2 lines, its recap and the review items only it "
        "proposed? What you accepted or rejected stays. This cannot be undone."
    )
    confirm = asked.original["components"][0]["components"][0]["custom_id"]
    await fake_discord.click(asked.original, confirm, user_id=player)  # not theirs to press
    assert [s.title for s in await mem.log.sessions()] == ["Night 1", "night1", "Tonight"]
    await fake_discord.click(asked.original, confirm, user_id=dm)
    assert fake_discord.messages[int(asked.original["id"])]["content"] == (
        "Deleted session 'night1': 2 lines, 0 passages, 3 waiting background jobs."
    )
    assert [s.title for s in await mem.log.sessions()] == ["Night 1", "Tonight"]
    # Not recorded by this bot, never ended: cut off by a crash, the DM may delete it.
    cut_off = await fake_discord.invoke("session delete", {"title": "Tonight"}, user_id=dm)
    assert "It never ended (its recording or import was cut off)." in cut_off.texts()[0]


async def test_delete_confirmed_deletes_the_session_asked_about_not_one_imported_since_under_its_title(
    campaign, bot: LorekeeperBot, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    guild_id = next(iter(fake_discord.guilds))
    active = await bot.memory.campaigns(guild_id).active()
    assert active is not None
    mem = bot.memory.campaign(active.id)
    rec = await SessionRecorder.start(mem, "Night 1")
    await rec.add_many([Utterance(speaker="DM", text="The wrong file.", seq=1)])
    await rec.end()
    asked = await fake_discord.invoke("session delete", {"title": "Night 1"}, user_id=dm)
    await mem.delete_session("Night 1")  # deleted meanwhile, and the right file imported under the title
    rec = await SessionRecorder.start(mem, "Night 1")
    await rec.add_many([Utterance(speaker="DM", text=f"The right file, line {n}.", seq=n) for n in (1, 2)])
    await rec.end()
    failed = await fake_discord.click(
        asked.original, asked.original["components"][0]["components"][0]["custom_id"], user_id=dm
    )
    await failed.wait_for(lambda r: bool(r.followups))
    assert fake_discord.messages[int(asked.original["id"])]["content"] == "Not done: see the message below."
    assert failed.followups[0]["content"].startswith("no session with id ")
    assert [(s.title, s.lines) for s in await mem.log.listed()] == [("Night 1", 2)]


async def test_review_cards_of_a_deleted_session_say_their_item_is_gone(
    review_channel: FakeChannel,  # first, so the channel exists when the bot connects
    campaign,
    bot: LorekeeperBot,
    fake_discord: FakeDiscord,
    guild: FakeGuild,
    dm: FakeMember,
) -> None:
    """Cards posted to the review channel outlive the items a session delete removes: every button on them, and
    an Edit form opened before the delete, answers the DM that the item is gone."""
    active = await bot.memory.campaigns(guild.id).active()
    assert active is not None
    mem = bot.memory.campaign(active.id)
    rec = await SessionRecorder.start(mem, "Night 1")
    await rec.add_many([Utterance(speaker="DM", text="A stranger waits in Ironhold.", seq=1)])
    night = await rec.end()
    heard = Provenance(source=Source.stated, confidence=0.4, session_id=night.id)
    stranger = await mem.graph.add_entity(
        EntityIn(name="Stranger", type=EntityType.npc, status=ReviewStatus.pending, provenance=heard)
    )
    ironhold = await mem.graph.add_entity(EntityIn(name="Ironhold", type=EntityType.place))
    mood = await mem.graph.add_relationship(
        RelationshipIn(source_id=ironhold.id, type="mood", value="grim", provenance=heard)
    )
    await fake_discord.invoke("lorekeeper setup", {"review_channel": review_channel}, user_id=dm)
    assert await bot.get_cog("Review").post_new_pending(bot.get_guild(guild.id)) == 2  # type: ignore[union-attr]
    cards = {m["embeds"][0]["footer"]["text"].split(" · ")[-1]: m for m in fake_discord.channel_messages}
    assert set(cards) == {f"e{stranger.id}", f"f{mood.id}"}
    edit_id = f"lk:review:edit:{active.id}:e{stranger.id}"
    opened = await fake_discord.click(cards[f"e{stranger.id}"], edit_id, user_id=dm)
    assert opened.modal is not None

    await mem.delete_session("Night 1")

    for ref, card in cards.items():
        for button in card["components"][0]["components"]:
            pressed = await fake_discord.click(card, button["custom_id"], user_id=dm)
            assert pressed.ephemeral and pressed.texts() == [
                f"This item ({ref}) no longer exists: the session it was heard in was deleted, or it was merged "
                "or removed since. /review shows what still waits."
            ], button["label"]
    submitted = await fake_discord.submit_modal(
        opened.modal["custom_id"], {"name": "Stranger", "type": "npc", "description": "", "aliases": ""}, user_id=dm
    )
    assert submitted.ephemeral and submitted.texts()[0].startswith(f"This item (e{stranger.id}) no longer exists")
    assert fake_discord.client_errors == []


async def test_status_says_why_what_is_said_may_not_be_transcribed(
    campaign, bot: LorekeeperBot, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    """Audio that failed DAVE decryption, and audio from someone Discord had not named yet, were counted but never
    shown: a DM looking at "Utterances stored: 0" while the table talked had no clue why."""
    guild_id = next(iter(fake_discord.guilds))
    active = await bot.memory.campaigns(guild_id).active()
    assert active is not None
    stub = RecordingStub("Night one", active, bot.memory.campaign(active.id))
    bot.get_cog("Sessions").live[guild_id] = stub
    try:
        heard = await fake_discord.invoke("session status", user_id=player)
        assert not any(t.startswith("Audio") for t in heard.texts()), heard.texts()  # nothing lost: nothing said
        stub.decrypt_failures, stub.unknown_packets = 1500, 250  # 30 s and 5 s of 20 ms packets
        lost = await fake_discord.invoke("session status", user_id=player)
        assert [t for t in lost.texts() if t.startswith("Audio")] == [
            "Audio I could not decrypt: 0m 30s (Discord's end-to-end encryption): a moment when someone joins is "
            "normal; if it keeps growing, nothing is heard: /session stop, then /session start",
            "Audio from someone not yet identified: 0m 05s, not transcribed (Discord has not said who it is); if it "
            "keeps growing, whoever is not in Speakers should leave the voice channel and join again",
        ]
    finally:
        bot.get_cog("Sessions").live.clear()


async def test_names_shows_the_dm_what_correction_changed_with_the_edit_that_undoes_it(
    campaign, bot: LorekeeperBot, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    guild_id = next(iter(fake_discord.guilds))
    active = await bot.memory.campaigns(guild_id).active()
    assert active is not None
    mem = bot.memory.campaign(active.id)
    await mem.graph.add_entity(EntityIn(name="Eldrinax", type=EntityType.npc))
    await mem.graph.add_entity(
        EntityIn(
            name="Frumpkin", type=EntityType.npc, visibility=Visibility.secret, heard_as=["from skin", "frump kin"]
        )
    )
    nothing = await fake_discord.invoke("session names", user_id=dm)
    assert nothing.texts() == ["no sessions in this campaign yet"]
    for title, day, lines in (
        ("Night 1", 2, ["The elder nacks wakes.", "From skin, go!", "and the elder nacks roars"]),
        ("Night 2", 9, ["A quiet night."]),
    ):
        rec = await SessionRecorder.start(mem, title, started_at=datetime(2024, 3, day, 19, tzinfo=UTC))
        await rec.add_many([Utterance(speaker="DM", text=t) for t in lines])
        await rec.end()

    refused = await fake_discord.invoke("session names", {"session": "Night 1"}, user_id=player)
    assert refused.ephemeral and refused.texts() == ["Only the DM can do that."]
    latest = await fake_discord.invoke("session names", user_id=dm)
    assert latest.ephemeral and latest.texts() == ["No names were corrected in **Night 2**."]
    shown = await fake_discord.invoke("session names", {"session": "night 1"}, user_id=dm)
    assert shown.ephemeral and shown.texts() == [
        "Names corrected: Night 1",
        "2 phrases heard became a name in 3 lines, most frequent first, with how it was recognised: sound (it sounds "
        "like the name), LLM (the language model chose it) or heard-as (a phrase you taught).\n"
        "**elder nacks** → **Eldrinax** ×2 (sound) · wrong? `/entity edit Eldrinax not_heard_as: +elder nacks`\n"
        "**from skin** → **Frumpkin** ×1 (heard-as) · wrong? `/entity edit Frumpkin heard_as: -from skin`",
    ]
    unknown = await fake_discord.invoke("session names", {"session": "Nigth 1"}, user_id=dm)
    assert unknown.texts() == [
        "no session titled 'Nigth 1' in this campaign (did you mean 'Night 1'?): /session list shows them"
    ]
    # the hint adds the phrase: a second one followed keeps the first (the option alone replaces them all)
    for phrase in ("elder nacks", "elder nox"):
        await fake_discord.invoke("entity edit", {"name": "Eldrinax", "not_heard_as": f"+{phrase}"}, user_id=dm)
    assert (await mem.graph.get_entity("Eldrinax")).not_heard_as == ["elder nacks", "elder nox"]
    # a taught phrase's hint takes that one away, the others staying
    await fake_discord.invoke("entity edit", {"name": "Frumpkin", "heard_as": "-from skin"}, user_id=dm)
    assert (await mem.graph.get_entity("Frumpkin")).heard_as == ["frump kin"]
