"""/campaign import and /review of an import batch end to end: real bot ↔ fake Discord ↔ embedded PostgreSQL."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from bot.app import LorekeeperBot
from memory.store import Memory
from tests.e2e.fake_discord import FakeDiscord, FakeGuild, FakeMember, Upload
from tests.integration.foundry_v11 import v11_world

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "imports"


async def test_import_waits_for_review_and_is_accepted_whole(
    bot: LorekeeperBot, fake_discord: FakeDiscord, memory: Memory, guild: FakeGuild, dm: FakeMember, player: FakeMember
) -> None:
    await fake_discord.invoke("campaign create", {"name": "Tides"}, user_id=dm)
    campaign = await memory.campaigns(guild.id).active()
    assert campaign is not None
    mem = memory.campaign(campaign.id)
    actors = Upload("actors.db", (FIXTURES / "foundry_world" / "actors.db").read_bytes())
    journal = Upload("journal.db", (FIXTURES / "foundry_world" / "journal.db").read_bytes())

    refused = await fake_discord.invoke("campaign import", {"file": actors}, user_id=player)
    assert refused.texts() == ["Only the DM can do that."]
    bad = await fake_discord.invoke("campaign import", {"file": Upload("x.csv", b"name,type\nA,dragon\n")}, user_id=dm)
    assert bad.texts()[0].startswith("Nothing was imported:\nx.csv: line 2 ('A'): field 'type': 'dragon'"), bad.texts()

    staged = await fake_discord.invoke("campaign import", {"file": actors, "file2": journal}, user_id=dm)
    said = staged.texts()[0]
    assert said.startswith("**Tides** ← Import b") and "6 entities (6 new, 0 updated)" in said, said
    assert await mem.graph.count_entities() == 0  # waits for the DM

    record = await fake_discord.invoke("review", user_id=dm)
    await record.wait_for(lambda r: len(r.followups) == 1)
    assert record.texts()[0] == "**Tides**: 1 import and 0 other items waiting for review."
    [card] = record.followups
    assert card["embeds"][0]["title"].startswith("Import b")
    ids = [b["custom_id"] for b in card["components"][0]["components"]]
    ref = ids[0].rsplit(":", 1)[1]
    assert ids == [f"lk:review:batch-{a}:{campaign.id}:{ref}" for a in ("accept", "reject")]

    await fake_discord.click(card, ids[0], user_id=dm)
    decided = fake_discord.messages[int(card["id"])]
    assert decided["components"] == [] and decided["embeds"][0]["footer"]["text"] == "accepted by dm"
    assert await mem.graph.count_entities() == 6
    assert (await mem.graph.get_entity("Captain Ilse")).type.value == "player"


async def test_accepting_an_import_on_its_card_warns_of_a_public_description_naming_a_secret(
    bot: LorekeeperBot, fake_discord: FakeDiscord, memory: Memory, guild: FakeGuild, dm: FakeMember
) -> None:
    """Accepted on its review card, an import whose public description says a secret name tells the DM there, as
    `lorekeeper review accept` does: players will read "[secret]" in it."""
    await fake_discord.invoke("campaign create", {"name": "Tides"}, user_id=dm)
    secret = {"name": "Vaskerrin Oruk", "type": "npc", "secret": True}
    assert (await fake_discord.invoke("entity add", secret, user_id=dm)).texts()[0].startswith("Added")
    world = Upload("world.csv", b"name,type,description\nIronhold,location,vaskerrin's keep\n")
    assert "1 entity" in (await fake_discord.invoke("campaign import", {"file": world}, user_id=dm)).texts()[0]
    record = await fake_discord.invoke("review", user_id=dm)
    await record.wait_for(lambda r: len(r.followups) == 1)
    [card] = record.followups
    await fake_discord.click(card, card["components"][0]["components"][0]["custom_id"], user_id=dm)
    decided = fake_discord.messages[int(card["id"])]["embeds"][0]["description"]
    assert decided.endswith(
        "\nwarning: “Ironhold” is public but its description says “vaskerrin”, a secret name: players will read "
        "[secret] there, which tells them a secret is there; reword it, or make the entity secret."
    ), decided


async def test_a_zipped_foundry_v11_world_imports(
    bot: LorekeeperBot, fake_discord: FakeDiscord, memory: Memory, guild: FakeGuild, dm: FakeMember, tmp_path: Path
) -> None:
    """A DM without a shell uploads their v11+ world folder zipped: its LevelDB folders are read as they are."""
    await fake_discord.invoke("campaign create", {"name": "Tides"}, user_id=dm)
    world = v11_world(tmp_path)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(world.rglob("*")):
            if path.is_file():
                archive.write(path, str(path.relative_to(tmp_path)))
    staged = await fake_discord.invoke("campaign import", {"file": Upload("tides.zip", buffer.getvalue())}, user_id=dm)
    said = staged.texts()[0]
    assert said.startswith("**Tides** ← Import b") and "6 entities (6 new, 0 updated)" in said, said
    assert "tides.zip/tides/data/actors" in said
