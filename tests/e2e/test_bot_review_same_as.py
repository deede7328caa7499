"""The review card's "Same as…" end to end: real bot ↔ fake Discord ↔ embedded PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.app import LorekeeperBot
from memory.models import EntityIn, EntityType, Provenance, RelationshipIn, ReviewStatus, Source, Visibility
from memory.store import CampaignMemory, Memory
from tests.e2e.conftest import BotRunner
from tests.e2e.fake_discord import FakeDiscord, FakeMember
from tests.e2e.helpers import make_bot

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


async def test_same_as_merges_a_proposed_entity_into_the_known_one_after_a_restart(
    ashes: CampaignMemory,
    bot: LorekeeperBot,
    bot_runner: BotRunner,
    fake_discord: FakeDiscord,
    memory: Memory,
    dm: FakeMember,
    player: FakeMember,
    tmp_path: Path,
) -> None:
    g = ashes.graph
    holt = await g.add_entity(EntityIn(name="Vaskerrin Holt", type=EntityType.npc, aliases=["Vaskerrin"]))
    low = Provenance(source=Source.stated, confidence=0.4)
    old = await g.add_entity(
        EntityIn(name="the old man", type=EntityType.npc, status=ReviewStatus.pending, provenance=low)
    )
    fact = await g.add_relationship(
        RelationshipIn(source_id=old.id, type="occupation", value="ferryman", provenance=low)
    )
    ref = f"e{old.id}"

    record = await fake_discord.invoke("review", user_id=dm)
    await record.wait_for(lambda r: len(r.followups) == 2)
    card, fact_card = record.followups
    buttons = card["components"][0]["components"]
    assert [b["label"] for b in buttons] == ["Accept", "Edit", "Reject", "Same as…"]
    same_id = buttons[3]["custom_id"]
    assert same_id == f"lk:review:same:{ashes.campaign_id}:{ref}"
    # a fact is no entity to be another's name
    assert [b["label"] for b in fact_card["components"][0]["components"]] == ["Accept", "Edit", "Reject"]

    # the button is a dynamic item: it works on a card sent before the bot restarted
    await bot_runner.stop(bot)
    await bot_runner.start(make_bot(fake_discord, memory, tmp_path))

    refused = await fake_discord.click(card, same_id, user_id=player)
    assert refused.ephemeral and refused.texts() == ["Only the DM can review."]
    assert refused.modal is None

    opened = await fake_discord.click(card, same_id, user_id=dm)
    assert opened.modal is not None and opened.modal["title"] == "the old man is the same as…"
    modal_id = opened.modal["custom_id"]
    assert modal_id == f"lk:review:same-modal:{dm.id}:{ashes.campaign_id}:{ref}"

    # the form is the DM's: a player submitting it is refused
    forged = await fake_discord.submit_modal(modal_id, {"existing": "Vaskerrin"}, user_id=player)
    assert forged.ephemeral and forged.texts() == ["This edit form is not yours."]
    for typed, said in [
        ("Vaskerin", "no entity named 'Vaskerin' in this campaign (did you mean 'Vaskerrin Holt'?)"),
        ("The Old Man", f"'The Old Man' is {ref} itself: name the known entity it is the same as"),
    ]:
        answer = await fake_discord.submit_modal(modal_id, {"existing": typed}, user_id=dm)
        assert answer.ephemeral and answer.texts() == [said]
    assert (await g.get_entity_by_id(old.id)).status == ReviewStatus.pending

    done = await fake_discord.submit_modal(modal_id, {"existing": "vaskerrin"}, user_id=dm)
    assert done.callback_type == 7  # the card itself is updated, as Accept and Reject update it
    updated = fake_discord.messages[int(card["id"])]
    assert updated["content"] == "Same as Vaskerrin Holt: 'the old man' kept as an alias, 1 fact moved."
    assert updated["components"] == []
    assert updated["embeds"][0]["footer"]["text"] == f"same as Vaskerrin Holt by dm · {ref}"
    merged = await g.get_entity("the old man")
    assert merged.id == holt.id and set(merged.aliases) == {"Vaskerrin", "the old man"}
    moved = await g.get_relationship(fact.id)
    assert (moved.describe(), moved.status) == ("Vaskerrin Holt —occupation→ ferryman", ReviewStatus.pending)

    # the entity left the queue; its fact, now Vaskerrin Holt's, still waits
    after = await fake_discord.invoke("review", user_id=dm)
    await after.wait_for(lambda r: len(r.followups) == 1)
    assert after.texts()[0] == "**Ashes**: 1 waiting for review."
    assert after.followups[0]["embeds"][0]["title"] == "New fact"


async def test_same_as_a_mistyped_secret_entity_says_did_you_mean_to_the_dm(
    ashes: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    """The DM told the bot that "the old man" is the secret Vaskerrin Holt, with a typo: no did-you-mean, as the
    hints drew on public names only. Only the DM can open the form, so secret names may be hinted; the review
    form's Edit names its target the same way."""
    g = ashes.graph
    await g.add_entity(EntityIn(name="Vaskerrin Holt", type=EntityType.npc, visibility=Visibility.secret))
    low = Provenance(source=Source.stated, confidence=0.4)
    old = await g.add_entity(
        EntityIn(name="the old man", type=EntityType.npc, status=ReviewStatus.pending, provenance=low)
    )
    fact = await g.add_relationship(RelationshipIn(source_id=old.id, type="serves", value="the Order", provenance=low))
    record = await fake_discord.invoke("review", user_id=dm)
    await record.wait_for(lambda r: len(r.followups) == 2)
    card, fact_card = record.followups
    opened = await fake_discord.click(card, card["components"][0]["components"][3]["custom_id"], user_id=dm)
    assert opened.modal is not None
    typo = await fake_discord.submit_modal(opened.modal["custom_id"], {"existing": "Vaskerin"}, user_id=dm)
    assert typo.texts() == ["no entity named 'Vaskerin' in this campaign (did you mean 'Vaskerrin Holt'?)"]
    opened = await fake_discord.click(fact_card, fact_card["components"][0]["components"][1]["custom_id"], user_id=dm)
    assert opened.modal is not None
    edit = {"type": "serves", "target": "Vaskerin Holt", "value": ""}
    typo = await fake_discord.submit_modal(opened.modal["custom_id"], edit, user_id=dm)
    assert typo.texts() == ["no entity named 'Vaskerin Holt' in this campaign (did you mean 'Vaskerrin Holt'?)"]
    assert (await g.get_entity_by_id(old.id)).status == ReviewStatus.pending
    assert (await g.get_relationship(fact.id)).status == ReviewStatus.pending


async def test_same_as_form_of_a_long_name_keeps_its_words(
    ashes: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    """A modal's title holds 45 characters: "Delvers' Guild of Ironhold Deep Archive is…" lost "the same as…", the
    words saying what the DM types. The name is clipped instead."""
    low = Provenance(source=Source.stated, confidence=0.4)
    guild = await ashes.graph.add_entity(
        EntityIn(
            name="Delvers' Guild of Ironhold Deep Archive",
            type=EntityType.faction,
            status=ReviewStatus.pending,
            provenance=low,
        )
    )
    record = await fake_discord.invoke("review", user_id=dm)
    await record.wait_for(lambda r: len(r.followups) == 1)
    opened = await fake_discord.click(
        record.followups[0], f"lk:review:same:{ashes.campaign_id}:e{guild.id}", user_id=dm
    )
    assert opened.modal is not None and opened.modal["title"] == "Delvers' Guild of Ironhold… is the same as…"
