"""/entity end to end: the real bot (create_bot) ↔ fake Discord ↔ the real embedded PostgreSQL."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.app import LorekeeperBot
from memory.models import EntityIn, EntityType, EntryIn, Provenance, RelationshipIn, Source, Visibility
from memory.store import CampaignMemory, Memory
from memory.text import MAX_FACT_VALUE_CHARS
from tests.e2e.conftest import BotRunner
from tests.e2e.fake_discord import FakeDiscord, FakeGuild, FakeMember
from tests.e2e.helpers import make_bot, modal_field, until_true


def today() -> str:
    """The date of a session started now, as a citation says it beside the session's title."""
    return f"{datetime.now(UTC):%Y-%m-%d}"


pytestmark = [pytest.mark.e2e, pytest.mark.integration]


@pytest.fixture
async def world(bot: LorekeeperBot, fake_discord: FakeDiscord, memory: Memory, guild: FakeGuild, dm: FakeMember):
    """A campaign in the guild with a few entities, made through the commands themselves."""
    await fake_discord.invoke("campaign create", {"name": "Ashes"}, user_id=dm)
    for options in (
        {"name": "Eldrinax", "type": "npc", "description": "An ancient red dragon", "aliases": "The Red, Eldri"},
        {
            "name": "Ironhold",
            "type": "location",
            "description": "A dwarven fortress",
            "attributes": "ruler=Thane Borin",
        },
        {"name": "Queen Mab", "type": "npc", "description": "Eldrinax in disguise", "secret": True},
    ):
        record = await fake_discord.invoke("entity add", options, user_id=dm)
        assert record.texts()[0].startswith("Added"), record.texts()
    campaign = await memory.campaigns(guild.id).get("Ashes")
    return memory.campaign(campaign.id)


async def test_add_stores_entity_with_aliases_attributes_secret(world, fake_discord: FakeDiscord) -> None:
    eldrinax = await world.graph.get_entity("Eldri")
    assert eldrinax.name == "Eldrinax" and eldrinax.type == EntityType.npc
    assert sorted(eldrinax.aliases) == ["Eldri", "The Red"]
    assert (await world.graph.get_entity("Ironhold")).attributes == {"ruler": "Thane Borin"}
    assert (await world.graph.get_entity("Queen Mab")).visibility == Visibility.secret
    assert fake_discord.rejected == []


async def test_attributes_are_typed_as_the_command_line_types_them(
    world, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    """`age=55` was stored as the text "55" here and as the number 55 by `--attr`: the same entity, two kinds."""
    options = {"name": "Borin", "type": "npc", "attributes": 'age=55; alive=true; title="7"; ruler=Thane Borin'}
    assert (await fake_discord.invoke("entity add", options, user_id=dm)).texts()[0].startswith("Added")
    borin = await world.graph.get_entity("Borin")
    assert borin.attributes == {"age": 55, "alive": True, "title": "7", "ruler": "Thane Borin"}
    edited = await fake_discord.invoke("entity edit", {"name": "Borin", "attributes": "age=56;kin=[1, 2]"}, user_id=dm)
    assert edited.texts()[0].startswith("Updated"), edited.texts()
    assert (await world.graph.get_entity("Borin")).attributes == {
        "age": 56,
        "alive": True,
        "title": "7",
        "ruler": "Thane Borin",
        "kin": [1, 2],
    }
    card = "\n".join((await fake_discord.invoke("entity show", {"name": "Borin"}, user_id=dm)).texts())
    assert "**alive**: true" in card and "**kin**: [1, 2]" in card  # as typed, not Python's True / [1, 2]
    nested = await fake_discord.invoke("entity edit", {"name": "Borin", "attributes": 'kin={"a": 1}'}, user_id=dm)
    assert nested.texts() == [
        "attribute 'kin' must be text, a number, true/false or empty, or a list of those, not a mapping"
    ]


async def test_add_bad_input_is_refused_and_changes_nothing(world, fake_discord: FakeDiscord, dm: FakeMember) -> None:
    duplicate = await fake_discord.invoke("entity add", {"name": "eldrinax", "type": "npc"}, user_id=dm)
    assert duplicate.ephemeral and duplicate.texts() == [
        "an entity named 'Eldrinax' already exists: see it with /entity show or change it with /entity edit"
    ]
    bad_attr = await fake_discord.invoke(
        "entity add", {"name": "Borin", "type": "npc", "attributes": "rank"}, user_id=dm
    )
    assert bad_attr.texts() == ["attribute 'rank' needs the form key=value (several: key=value;key=value)"]
    assert await world.graph.find_entity("Borin") is None


async def test_non_dm_is_refused_on_the_server(world, fake_discord: FakeDiscord, player: FakeMember) -> None:
    for command, options in [
        ("entity add", {"name": "Borin", "type": "npc"}),
        ("entity remove", {"name": "Ironhold"}),
        ("entity link", {"source": "Eldrinax", "relation": "rules", "target": "Ironhold"}),
        ("review", {}),
        ("campaign export", {}),
    ]:
        record = await fake_discord.invoke(command, options, user_id=player)
        assert record.ephemeral and record.texts() == ["Only the DM can do that."], (command, record.texts())
    assert await world.graph.find_entity("Borin") is None
    assert await world.graph.find_entity("Ironhold") is not None


async def test_show_hides_secrets_from_players(world, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember):
    await fake_discord.invoke(
        "entity link", {"source": "Eldrinax", "relation": "rules", "target": "Ironhold"}, user_id=dm
    )
    await fake_discord.invoke(
        "entity link", {"source": "Queen Mab", "relation": "disguise_of", "target": "Eldrinax"}, user_id=dm
    )
    as_dm = await fake_discord.invoke("entity show", {"name": "the red"}, user_id=dm)
    text = "\n".join(as_dm.texts())
    assert "Eldrinax" in text and "Eldrinax rules Ironhold" in text and "Queen Mab disguise of Eldrinax" in text
    assert "Aliases: Eldri, The Red" in text or "Aliases: The Red, Eldri" in text

    as_player = await fake_discord.invoke("entity show", {"name": "Eldrinax"}, user_id=player)
    text = "\n".join(as_player.texts())
    assert "Eldrinax rules Ironhold" in text and "Queen Mab" not in text
    secret = await fake_discord.invoke("entity show", {"name": "Queen Mab"}, user_id=player)
    assert secret.ephemeral and secret.texts() == ["no entity named 'Queen Mab' in this campaign"]
    near = await fake_discord.invoke("entity show", {"name": "Queen Ma"}, user_id=player)
    assert near.texts() == ["no entity named 'Queen Ma' in this campaign"]  # no hint naming the secret


async def test_show_unknown_name_suggests(world, fake_discord: FakeDiscord) -> None:
    record = await fake_discord.invoke("entity show", {"name": "Eldrinex"})
    assert record.texts() == ["no entity named 'Eldrinex' in this campaign (did you mean 'Eldrinax'?)"]


async def test_autocomplete_prefix_then_fuzzy_and_no_secrets_for_players(
    world, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    choices = await fake_discord.autocomplete("entity show", {"name": "eld"}, focused="name", user_id=dm)
    assert [c["name"] for c in choices][:2] == ["Eldri", "Eldrinax"]
    typo = await fake_discord.autocomplete("entity show", {"name": "irnhold"}, focused="name", user_id=dm)
    assert typo[0]["name"] == "Ironhold"
    everything = await fake_discord.autocomplete("entity show", {"name": ""}, focused="name", user_id=player)
    assert "Queen Mab" not in [c["name"] for c in everything]
    mab = await fake_discord.autocomplete("entity show", {"name": "que"}, focused="name", user_id=dm)
    assert mab[0]["name"] == "Queen Mab"


async def test_autocomplete_caps_at_25(world, fake_discord: FakeDiscord, dm: FakeMember) -> None:
    async with world.transaction() as tx:
        from memory.models import EntityIn

        for n in range(40):
            await tx.graph.add_entity(EntityIn(name=f"Goblin {n:02d}", type=EntityType.npc))
    choices = await fake_discord.autocomplete("entity remove", {"name": "gob"}, focused="name", user_id=dm)
    assert len(choices) == 25 and choices[0]["name"] == "Goblin 00"


async def test_list_paginates_with_buttons(world, fake_discord: FakeDiscord, dm: FakeMember, player) -> None:
    from memory.models import EntityIn

    for n in range(60):  # ~100 characters a line: more than one page of 4,096
        await world.graph.add_entity(EntityIn(name=f"Kobold {n:02d}", type=EntityType.npc, description="yip " * 30))
    record = await fake_discord.invoke("entity list", {"type": "npc"}, user_id=dm)
    assert record.ephemeral and record.original is not None
    first = record.original["embeds"][0]
    assert first["title"] == "Ashes: 62 npc" and first["footer"]["text"] == "page 1 of 2"
    (row,) = record.original["components"]
    prev, nxt = row["components"]
    assert prev["disabled"] and not nxt["disabled"]
    next_id = nxt["custom_id"]
    page2 = await fake_discord.click(record.original, next_id, user_id=dm)
    assert page2.callback_type == 7
    shown = fake_discord.messages[int(record.original["id"])]["embeds"][0]
    assert shown["footer"]["text"] == "page 2 of 2" and "**Queen Mab** · npc 🔒" in shown["description"]
    as_player = await fake_discord.invoke("entity list", {}, user_id=player)
    assert "Queen Mab" not in "\n".join(as_player.texts())


async def test_edit_rename_and_aliases(world, fake_discord: FakeDiscord, dm: FakeMember) -> None:
    record = await fake_discord.invoke(
        "entity edit", {"name": "Ironhold", "new_name": "Ironhold Keep", "aliases": "The Keep"}, user_id=dm
    )
    assert record.texts()[0] == "Updated **Ironhold Keep**."
    keep = await world.graph.get_entity("the keep")
    assert keep.name == "Ironhold Keep" and keep.attributes == {"ruler": "Thane Borin"}
    nothing = await fake_discord.invoke("entity edit", {"name": "Ironhold Keep"}, user_id=dm)
    assert nothing.texts()[0].startswith("Nothing to change")
    clash = await fake_discord.invoke("entity edit", {"name": "Ironhold Keep", "new_name": "Eldri"}, user_id=dm)
    assert clash.texts() == [
        "'Eldri' is already an alias of 'Eldrinax': see it with /entity show or change it with /entity edit"
    ]
    renamed = await fake_discord.invoke("entity edit", {"name": "Ironhold Keep", "new_name": "Irongate"}, user_id=dm)
    assert renamed.texts()[0] == (
        "Updated **Irongate**. Its old name **Ironhold Keep** stays as an alias (`aliases: -` clears it)."
    )
    assert (await world.graph.get_entity("Ironhold Keep")).aliases == ["Ironhold Keep", "The Keep"]


async def test_add_takes_heard_as_checked_and_said_as_edit_does(
    world, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    added = await fake_discord.invoke(
        "entity add", {"name": "The Stormlord", "type": "npc", "heard_as": "storm lored, card"}, user_id=dm
    )
    assert added.ephemeral and added.texts()[0] == (
        "Added npc **The Stormlord**. From now on “card”, “storm lored” are written The Stormlord; no line stored so "
        "far says it. “card” is everyday English: every “card” said from now on is written The Stormlord."
    )
    assert (await world.graph.get_entity("The Stormlord")).heard_as == ["card", "storm lored"]
    clash = await fake_discord.invoke("entity add", {"name": "Kord", "type": "npc", "heard_as": "the red"}, user_id=dm)
    assert clash.texts() == ["heard as: 'The Red' is an alias of 'Eldrinax'"]
    bad = await fake_discord.invoke(
        "entity add", {"name": "Kord", "type": "npc", "heard_as": "a b c d e f g h"}, user_id=dm
    )
    assert bad.texts() == ["heard as: 'a b c d e f g h' has more than 7 words"]
    assert await world.graph.find_entity("Kord") is None  # refused whole


async def test_edit_heard_as_is_the_dms_to_set_and_see(
    world, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    taught = await fake_discord.invoke(
        "entity edit", {"name": "Eldri", "heard_as": "all drinks, elder nacks"}, user_id=dm
    )
    assert taught.ephemeral and taught.texts()[0] == (
        "Updated **Eldrinax**. From now on “all drinks”, “elder nacks” are written Eldrinax; no line stored so far "
        "says it. “all drinks” is everyday English: every “all drinks” said from now on is written Eldrinax."
    )
    assert (await world.graph.get_entity("Eldrinax")).heard_as == ["all drinks", "elder nacks"]
    as_dm = "\n".join((await fake_discord.invoke("entity show", {"name": "Eldrinax"}, user_id=dm)).texts())
    assert "Heard as: all drinks, elder nacks" in as_dm
    as_player = "\n".join((await fake_discord.invoke("entity show", {"name": "Eldrinax"}, user_id=player)).texts())
    assert "Eldrinax" in as_player and "Heard as" not in as_player and "elder nacks" not in as_player
    refused = await fake_discord.invoke("entity edit", {"name": "Eldrinax", "heard_as": "-"}, user_id=player)
    assert (await world.graph.get_entity("Eldrinax")).heard_as == ["all drinks", "elder nacks"], refused.texts()
    clash = await fake_discord.invoke("entity edit", {"name": "Ironhold", "heard_as": "the red"}, user_id=dm)
    assert clash.texts() == ["heard as: 'The Red' is an alias of 'Eldrinax'"]
    cleared = await fake_discord.invoke("entity edit", {"name": "Eldrinax", "heard_as": "-"}, user_id=dm)
    assert cleared.texts()[0] == (
        "Updated **Eldrinax**. “all drinks”, “elder nacks” are no longer written Eldrinax; no line stored so far was "
        "corrected from them."
    )
    assert (await world.graph.get_entity("Eldrinax")).heard_as == []


async def test_edit_not_heard_as_is_the_dms_to_set_and_see(
    world, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    taught = await fake_discord.invoke(
        "entity edit", {"name": "Eldri", "not_heard_as": "elder nuts, all drinks"}, user_id=dm
    )
    assert taught.ephemeral and taught.texts()[0] == (
        "Updated **Eldrinax**. From now on “all drinks”, “elder nuts” are never written Eldrinax; no line stored so "
        "far was corrected from them."
    )
    assert (await world.graph.get_entity("Eldrinax")).not_heard_as == ["all drinks", "elder nuts"]
    as_dm = "\n".join((await fake_discord.invoke("entity show", {"name": "Eldrinax"}, user_id=dm)).texts())
    assert "Never heard as: all drinks, elder nuts" in as_dm
    as_player = "\n".join((await fake_discord.invoke("entity show", {"name": "Eldrinax"}, user_id=player)).texts())
    assert "Eldrinax" in as_player and "Never heard as" not in as_player and "elder nuts" not in as_player
    refused = await fake_discord.invoke("entity edit", {"name": "Eldrinax", "not_heard_as": "-"}, user_id=player)
    assert (await world.graph.get_entity("Eldrinax")).not_heard_as == ["all drinks", "elder nuts"], refused.texts()
    clash = await fake_discord.invoke("entity edit", {"name": "Eldrinax", "not_heard_as": "the red"}, user_id=dm)
    assert clash.texts() == [
        "not heard as: 'the red' is an alias of 'Eldrinax': it cannot also be what is never its name; take it out "
        "of one of them"
    ]
    cleared = await fake_discord.invoke("entity edit", {"name": "Eldrinax", "not_heard_as": "-"}, user_id=dm)
    assert cleared.texts()[0] == "Updated **Eldrinax**."
    assert (await world.graph.get_entity("Eldrinax")).not_heard_as == []
    added = await fake_discord.invoke(
        "entity add", {"name": "Mentiri", "type": "npc", "not_heard_as": "manta ray"}, user_id=dm
    )
    assert added.texts()[0] == "Added npc **Mentiri**. From now on “manta ray” is never written Mentiri."
    assert (await world.graph.get_entity("Mentiri")).not_heard_as == ["manta ray"]


async def test_remove_confirm_and_cancel(world, fake_discord: FakeDiscord, dm: FakeMember) -> None:
    asked = await fake_discord.invoke("entity remove", {"name": "Ironhold"}, user_id=dm)
    assert asked.original is not None and "Remove **Ironhold**" in asked.texts()[0]
    (row,) = asked.original["components"]
    confirm_id, cancel_id = (b["custom_id"] for b in row["components"])
    cancelled = await fake_discord.click(asked.original, cancel_id, user_id=dm)
    assert fake_discord.messages[int(asked.original["id"])]["content"] == "Cancelled; nothing was changed."
    assert cancelled.callback_type == 7 and await world.graph.find_entity("Ironhold") is not None

    again = await fake_discord.invoke("entity remove", {"name": "Ironhold"}, user_id=dm)
    assert again.original is not None
    confirm_id = again.original["components"][0]["components"][0]["custom_id"]
    await fake_discord.click(again.original, confirm_id, user_id=dm)
    assert fake_discord.messages[int(again.original["id"])]["content"].startswith("Removed **Ironhold**")
    assert await world.graph.find_entity("Ironhold") is None


async def test_pin_puts_an_entity_s_names_in_the_voice_prompt_for_the_dm_only(
    world: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    """The prompt holds a few dozen names: a pinned entity's come first, with its aliases, however unconnected."""
    from memory.voice.prompt import CampaignNames

    # a small campaign's prompt holds every name already: pinning adds nothing, and the DM is told so
    small = await fake_discord.invoke("entity pin", {"name": "Eldrinax"}, user_id=dm)
    assert "its names are in the voice recogniser's prompt pinned or not" in small.texts()[0]
    await fake_discord.invoke("entity pin", {"name": "Eldrinax", "pinned": False}, user_id=dm)
    for i in range(80):  # more names than the prompt holds
        await world.graph.add_entity(EntityIn(name=f"Lore{i:02d}", type=EntityType.concept))
    assert (await CampaignNames(world).names())[:3] != ["Eldrinax", "Eldri", "The Red"]
    refused = await fake_discord.invoke("entity pin", {"name": "The Red"}, user_id=player)
    assert refused.ephemeral and refused.texts() == ["Only the DM can do that."]

    pinned = await fake_discord.invoke("entity pin", {"name": "The Red"}, user_id=dm)
    assert pinned.ephemeral and pinned.texts()[0].startswith("Pinned **Eldrinax**: its names stay among")
    assert (await CampaignNames(world).names())[:3] == ["Eldrinax", "Eldri", "The Red"]
    again = await fake_discord.invoke("entity pin", {"name": "Eldrinax"}, user_id=dm)
    assert again.texts() == ["**Eldrinax** was pinned already."]

    unpinned = await fake_discord.invoke("entity pin", {"name": "Eldrinax", "pinned": False}, user_id=dm)
    assert unpinned.texts() == ["Unpinned **Eldrinax**."]
    assert (await CampaignNames(world).names())[:3] != ["Eldrinax", "Eldri", "The Red"]


async def test_merge_asks_then_folds_one_entity_into_the_other_for_the_dm_only(
    world: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    guess = Provenance(source=Source.inferred, confidence=0.4)
    gorrim = await world.graph.add_entity(
        EntityIn(name="Gorrim", type=EntityType.npc, status="pending", provenance=guess)
    )
    ironhold = await world.graph.get_entity("Ironhold")
    fact = await world.graph.add_relationship(
        RelationshipIn(source_id=gorrim.id, type="lives_in", target_id=ironhold.id, provenance=guess)
    )
    await fake_discord.invoke("entity add", {"name": "Gorrim Ashfoot", "type": "npc"}, user_id=dm)
    choices = await fake_discord.autocomplete("entity merge", {"into": "gorrim a"}, focused="into", user_id=dm)
    assert choices[0]["name"] == "Gorrim Ashfoot"
    refused = await fake_discord.invoke("entity merge", {"source": "Gorrim", "into": "Gorrim Ashfoot"}, user_id=player)
    assert refused.ephemeral and refused.texts() == ["Only the DM can do that."]
    same = await fake_discord.invoke("entity merge", {"source": "The Red", "into": "Eldrinax"}, user_id=dm)
    assert same.texts() == ["'The Red' and 'Eldrinax' both name **Eldrinax**: nothing to merge."]

    asked = await fake_discord.invoke("entity merge", {"source": "Gorrim", "into": "Gorrim Ashfoot"}, user_id=dm)
    assert asked.ephemeral and asked.original is not None
    assert asked.texts()[0].startswith("Merge **Gorrim** (npc) into **Gorrim Ashfoot** (npc)?")
    confirm_id = asked.original["components"][0]["components"][0]["custom_id"]
    await fake_discord.click(asked.original, confirm_id, user_id=player)  # not theirs to press
    assert (await world.graph.get_entity("Gorrim")).name == "Gorrim"
    await fake_discord.click(asked.original, confirm_id, user_id=dm)
    assert fake_discord.messages[int(asked.original["id"])]["content"] == (
        "Merged Gorrim into Gorrim Ashfoot: 1 fact moved; new aliases: Gorrim."
    )
    assert (await world.graph.get_entity("Gorrim")).name == "Gorrim Ashfoot"
    moved = await world.graph.get_relationship(fact.id)
    assert moved.describe() == "Gorrim Ashfoot —lives_in→ Ironhold" and moved.status == "pending"


async def test_remove_and_merge_confirmed_act_on_the_entities_asked_about_not_on_their_names_now(
    world: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    """While the question waits (two minutes), what it names may be renamed and another entity take the name (a
    co-DM, a campaign file loaded): Confirm removes or merges the ones the DM was asked about."""
    g = world.graph
    await g.add_entity(EntityIn(name="Gorrim", type=EntityType.npc))
    await g.add_entity(EntityIn(name="Gorrim Ashfoot", type=EntityType.npc))
    remove = await fake_discord.invoke("entity remove", {"name": "Ironhold"}, user_id=dm)
    merge = await fake_discord.invoke("entity merge", {"source": "Gorrim", "into": "Gorrim Ashfoot"}, user_id=dm)
    for old, new in (("Ironhold", "Old Ironhold"), ("Gorrim", "Gorrim the Elder")):
        await g.update_entity(old, new_name=new, aliases=[])
        await g.add_entity(EntityIn(name=old, type=EntityType.npc, description="the newcomer"))
    for asked in (remove, merge):
        assert asked.original is not None
        await fake_discord.click(
            asked.original, asked.original["components"][0]["components"][0]["custom_id"], user_id=dm
        )
    assert fake_discord.messages[int(remove.original["id"])]["content"].startswith("Removed **Old Ironhold**")
    assert await g.find_entity("Old Ironhold") is None
    assert (await g.get_entity("Ironhold")).description == "the newcomer"
    assert (await g.get_entity("Gorrim the Elder")).name == "Gorrim Ashfoot"
    assert (await g.get_entity("Gorrim")).description == "the newcomer"


async def test_a_confirmed_action_that_fails_leaves_no_dead_buttons(
    world: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    asked = await fake_discord.invoke("entity remove", {"name": "Eldrinax"}, user_id=dm)
    assert asked.original is not None
    confirm_id = asked.original["components"][0]["components"][0]["custom_id"]
    await world.graph.remove_entity("Eldrinax")  # a co-DM was quicker
    failed = await fake_discord.click(asked.original, confirm_id, user_id=dm)
    await failed.wait_for(lambda r: bool(r.followups))
    prompt = fake_discord.messages[int(asked.original["id"])]
    assert prompt["content"] == "Not done: see the message below." and not prompt.get("components")
    assert failed.followups[0]["content"].startswith("no entity")


async def test_an_entity_added_after_the_recap_of_a_session_that_named_it_took_part_in_it(
    world: CampaignMemory, memory: Memory, fake_discord: FakeDiscord, dm: FakeMember, tmp_path: Path
) -> None:
    """The recap links only the entities known when it is written: one the DM adds later gets its link then."""
    from memory import jobs
    from memory.ingest import ingest_file

    night = tmp_path / "night.txt"
    night.write_text("DM: Corvin Ash rows you across to Ironhold.\nAna: We pay him in silver.\n")
    await ingest_file(world, night, session_title="Night 1")
    session = await world.log.session_by_title("Night 1")
    assert session is not None
    ctx = jobs.JobContext(memory=memory, embedder=None, embedding_model="x")  # type: ignore[arg-type]
    await jobs.summarize_session(ctx, world.campaign_id, session.id)
    added = await fake_discord.invoke("entity add", {"name": "Corvin Ash", "type": "npc"}, user_id=dm)
    assert added.texts()[0].startswith("Added"), added.texts()
    card = "\n".join((await fake_discord.invoke("entity show", {"name": "Corvin Ash"}, user_id=dm)).texts())
    assert "Took part in 1 session: per their recaps: Night 1" in card, card


async def test_the_sessions_an_entity_took_part_in_are_one_line_on_its_card(
    world: CampaignMemory, fake_discord: FakeDiscord, player: FakeMember
) -> None:
    from memory.models import RelationshipIn

    eldrinax = await world.graph.get_entity("Eldrinax")
    for n in range(1, 6):
        event = await world.graph.add_entity(EntityIn(name=f"Session: Night {n}", type=EntityType.event))
        await world.graph.add_relationship(
            RelationshipIn(source_id=eldrinax.id, type="took_part_in", target_id=event.id)
        )
    texts = (await fake_discord.invoke("entity show", {"name": "Eldrinax"}, user_id=player)).texts()
    card = "\n".join(texts)
    # its own field, saying what it counts; not among the relationships
    assert "Took part in 5 sessions: per their recaps: Night 5, Night 4, Night 3 and 2 earlier" in texts
    assert "took part in Session: " not in card and "took part in 5" not in card
    # the session's own card still lists who took part
    night = "\n".join((await fake_discord.invoke("entity show", {"name": "Session: Night 1"}, user_id=player)).texts())
    assert "Eldrinax took part in Session: Night 1" in night


async def test_who_took_part_in_an_event_is_one_line_on_its_card(
    world: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    """A battle the recap links 18 entities to showed 18 "X —took_part_in→ it" lines, the rest of its card below."""
    battle = await world.graph.add_entity(EntityIn(name="Battle of Ironhold", type=EntityType.event))
    mab = await world.graph.get_entity("Queen Mab")
    fighters = [await world.graph.add_entity(EntityIn(name=f"Fighter {n}", type=EntityType.npc)) for n in range(18)]
    for who in [*fighters, mab]:
        await world.graph.add_relationship(RelationshipIn(source_id=who.id, type="took_part_in", target_id=battle.id))
    dm_card = "\n".join((await fake_discord.invoke("entity show", {"name": "Battle of Ironhold"}, user_id=dm)).texts())
    names = ", ".join(f"Fighter {n}" for n in range(18))
    assert f"who took part (19): {names}, Queen Mab 🔒" in dm_card, dm_card
    assert " took part in Battle of Ironhold" not in dm_card
    as_player = await fake_discord.invoke("entity show", {"name": "Battle of Ironhold"}, user_id=player)
    card = "\n".join(as_player.texts())
    assert f"who took part (18): {names}" in card and "Mab" not in card, card
    # the fighter's own card keeps the fact
    fighter = "\n".join((await fake_discord.invoke("entity show", {"name": "Fighter 3"}, user_id=dm)).texts())
    assert "Fighter 3 took part in Battle of Ironhold" in fighter


async def test_the_card_places_a_line_of_an_untimed_transcript_by_its_turn(
    world: CampaignMemory, fake_discord: FakeDiscord, player: FakeMember
) -> None:
    from memory.models import EntryIn

    session = await world.log.start_session("C1E010")
    await world.log.write(session.id, EntryIn(speaker="Grog", text="Eldrinax is awake.", ref="turn 1098"))
    card = "\n".join((await fake_discord.invoke("entity show", {"name": "Eldrinax"}, user_id=player)).texts())
    assert f"C1E010, {today()} (turn 1098), Grog: “**Eldrinax** is awake.”" in card


async def test_link_unlink(world, fake_discord: FakeDiscord, dm: FakeMember) -> None:
    linked = await fake_discord.invoke(
        "entity link", {"source": "Eldri", "relation": "Ally Of", "target": "Ironhold"}, user_id=dm
    )
    assert linked.texts() == ["Linked Eldrinax is an ally of Ironhold"]
    again = await fake_discord.invoke(
        "entity link", {"source": "Eldrinax", "relation": "ally_of", "target": "Ironhold"}, user_id=dm
    )
    assert again.texts() == ["Already linked: Eldrinax is an ally of Ironhold"]
    unknown = await fake_discord.invoke(
        "entity link", {"source": "Eldrinax", "relation": "ally_of", "target": "Nowhere"}, user_id=dm
    )
    assert unknown.texts()[0].startswith("no entity named 'Nowhere'")
    unlinked = await fake_discord.invoke(
        "entity unlink", {"source": "Eldrinax", "relation": "ally_of", "target": "Ironhold"}, user_id=dm
    )
    assert unlinked.texts() == ["Unlinked Eldrinax is an ally of Ironhold"]
    missing = await fake_discord.invoke(
        "entity unlink", {"source": "Eldrinax", "relation": "ally_of", "target": "Ironhold"}, user_id=dm
    )
    assert missing.texts() == [  # it is rejected now: undone, not forgotten
        "Eldrinax has no current 'ally_of' fact of Ironhold: unlink undoes a current fact; what is history or was "
        "rejected stays"
    ]


async def test_link_a_value_records_a_change_in_the_world(
    world: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    """README said a change in the world is recorded by linking the new fact, but /entity link wanted a target
    entity: only a campaign file could say "status: dead". The value is its own option, so a mistyped target
    still fails rather than become a value."""
    status = {"source": "Eldri", "relation": "Status"}
    alive = await fake_discord.invoke("entity link", status | {"value": "alive"}, user_id=dm)
    assert alive.ephemeral and alive.texts() == ["Linked Eldrinax is alive"]
    dead = await fake_discord.invoke("entity link", status | {"value": "dead", "secret": True}, user_id=dm)
    assert dead.texts() == ["Linked Eldrinax is dead 🔒; closed: Eldrinax is alive"]
    eldrinax = await world.graph.get_entity("Eldrinax")
    current = await world.graph.relationships_of(eldrinax.id, include_secret=True)
    assert [(r.describe(), r.provenance.source) for r in current] == [("Eldrinax —status→ dead", Source.dm)]

    for options, refusal in [
        (status | {"target": "Ironhold", "value": "dead"}, "not both"),
        (status, "give a target (another entity) or a value (a state, e.g. status dead)"),
        (status | {"value": "  "}, "value: must not be empty"),
        (
            status | {"target": "dead"},
            "no entity named 'dead' in this campaign; a state (status dead) is given as a value",
        ),
    ]:
        record = await fake_discord.invoke("entity link", options, user_id=dm)
        assert record.ephemeral and record.texts()[0].endswith(refusal), (options, record.texts())
    refused = await fake_discord.invoke("entity link", status | {"value": "undead"}, user_id=player)
    assert refused.ephemeral and refused.texts() == ["Only the DM can do that."]
    after = await world.graph.relationships_of(eldrinax.id, include_secret=True, include_history=True)
    assert sorted(r.value or "" for r in after) == ["alive", "dead"]


async def test_link_says_the_value_limit_and_replies_within_discord_limits(
    world: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    """A 2,500-character value was stored, then the reply (it and the fact it closed) broke Discord's 2,000: the
    DM read "Something went wrong", and a retry stored it again. The limit is said up front and kept by the core;
    a reply quoting a longer fact (a campaign file's, loaded before the file kept it too) is clipped."""
    (entity,) = [c for c in fake_discord.global_commands if c["name"] == "entity"]
    link = next(o for o in entity["options"] if o["name"] == "link")
    assert {o["name"]: o.get("max_length") for o in link["options"]}["value"] == MAX_FACT_VALUE_CHARS
    eldrinax = await world.graph.get_entity("Eldrinax")
    hoards = {"source": "Eldrinax", "relation": "hoards"}
    too_long = await fake_discord.invoke("entity link", hoards | {"value": "gold" * 150}, user_id=dm)
    assert too_long.texts() == [
        "value has 600 characters; a fact's value has at most 500: give the state (dead, sleeping under "
        "Ironhold) and put longer notes in the entity's description"
    ]
    assert await world.graph.relationships_of(eldrinax.id, include_history=True) == []

    from_file = Provenance(source=Source.campaign_file)
    hoard = "the drowned gold of the sunken crown " * 70  # 2,590 characters
    # a campaign file's, loaded before every way in kept the limit (unchecked here): a database may hold it still
    await world.graph.add_relationship(
        RelationshipIn.model_construct(source_id=eldrinax.id, type="hoards", value=hoard.strip(), provenance=from_file)
    )
    linked = await fake_discord.invoke("entity link", hoards | {"value": "nothing"}, user_id=dm)
    (said,) = linked.texts()
    assert said.startswith("Linked Eldrinax — hoards: nothing; closed: Eldrinax — hoards: the drowned gold")
    assert 1990 <= len(said) <= 2000 and said.endswith(" drowned…")  # within the limit, between words
    undone = await fake_discord.invoke("entity unlink", hoards | {"target": "nothing"}, user_id=dm)
    (said,) = undone.texts()
    assert said.startswith("Unlinked Eldrinax — hoards: nothing; current again: Eldrinax — hoards: the drowned gold")
    assert 1990 <= len(said) <= 2000 and said.endswith(" the…")
    assert fake_discord.rejected == []
    assert [r.value for r in await world.graph.relationships_of(eldrinax.id)] == [hoard.strip()]


async def test_unlink_removes_an_attribute_fact_accepted_by_mistake(
    world: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    """A value heard at the table and accepted wrongly ("status: dead", sure enough to pass the threshold) was canon
    for good: unlink wanted a target entity, and a campaign file can only replace a value. Unlinking it undoes it:
    the value it had closed is current again."""
    eldrinax = await world.graph.get_entity("Eldrinax")
    heard = Provenance(source=Source.stated, confidence=0.9)  # the DM's own "alive" it would not have closed
    await world.graph.add_relationship(
        RelationshipIn(source_id=eldrinax.id, type="status", value="alive", provenance=heard)
    )
    dead = await world.graph.add_relationship(
        RelationshipIn(source_id=eldrinax.id, type="status", value="dead", provenance=heard)
    )
    assert dead.status == "accepted"
    unlinked = await fake_discord.invoke(
        "entity unlink", {"source": "Eldri", "relation": "Status", "target": "Dead"}, user_id=dm
    )
    assert unlinked.texts() == ["Unlinked Eldrinax is dead; current again: Eldrinax is alive"]
    current = await world.graph.relationships_of(eldrinax.id, include_secret=True)
    assert [r.describe() for r in current] == ["Eldrinax —status→ alive"]
    typo = await fake_discord.invoke(
        "entity unlink", {"source": "Eldrinax", "relation": "ally_of", "target": "Ironhld"}, user_id=dm
    )
    assert typo.texts() == [
        "no entity named 'Ironhld' in this campaign (did you mean 'Ironhold'?), and Eldrinax has no 'ally_of' fact "
        "of that value"
    ]


async def test_link_secret_only_the_dm_sees_and_relinking_keeps_it(
    world, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    hunts = {"source": "Eldrinax", "relation": "hunts", "target": "Ironhold"}
    linked = await fake_discord.invoke("entity link", hunts | {"secret": True}, user_id=dm)
    assert linked.texts() == ["Linked Eldrinax hunts Ironhold 🔒"]
    (fact,) = await world.graph.relationships_of((await world.graph.get_entity("Eldrinax")).id, include_secret=True)
    assert fact.visibility == Visibility.secret

    as_dm = "\n".join((await fake_discord.invoke("entity show", {"name": "Eldrinax"}, user_id=dm)).texts())
    assert "Eldrinax hunts Ironhold 🔒" in as_dm
    as_player = "\n".join((await fake_discord.invoke("entity show", {"name": "Eldrinax"}, user_id=player)).texts())
    assert "hunts" not in as_player
    assert "hunts" not in "\n".join(
        (await fake_discord.invoke("entity show", {"name": "Ironhold"}, user_id=player)).texts()
    )

    # linking again without the option leaves the secret alone; giving it changes the visibility
    again = await fake_discord.invoke("entity link", hunts, user_id=dm)
    assert again.texts() == ["Already linked: Eldrinax hunts Ironhold 🔒"]
    public = await fake_discord.invoke("entity link", hunts | {"secret": False}, user_id=dm)
    assert public.texts() == ["Now public: Eldrinax hunts Ironhold"]
    as_player = "\n".join((await fake_discord.invoke("entity show", {"name": "Eldrinax"}, user_id=player)).texts())
    assert "Eldrinax hunts Ironhold" in as_player
    secret = await fake_discord.invoke("entity link", hunts | {"secret": True}, user_id=dm)
    assert secret.texts() == ["Now secret: Eldrinax hunts Ironhold 🔒"]
    assert len(await world.graph.relationships_of(fact.source_id, include_secret=True)) == 1


async def test_show_history_gives_players_only_the_public_past_with_secret_names_masked(
    world: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    """The graph kept closed facts, but no command showed them: nobody could see that Eldrinax slept before he
    woke. A player sees the public past only, as the current facts, and no secret name in it."""
    eldrinax = await world.graph.get_entity("Eldrinax")
    ball = await world.log.start_session("Queen Mab's ball", started_at=datetime(2025, 3, 1, 20, tzinfo=UTC))
    heard = Provenance(source=Source.stated, confidence=0.9, session_id=ball.id)
    ironhold = (await world.graph.get_entity("Ironhold")).id
    await world.graph.add_relationship(
        RelationshipIn(source_id=eldrinax.id, type="home", target_id=ironhold, provenance=heard)
    )
    for options in (
        {"relation": "home", "value": "the sky"},
        {"relation": "status", "value": "sleeping", "secret": True},
        {"relation": "status", "value": "awake"},
    ):
        await fake_discord.invoke("entity link", {"source": "Eldrinax"} | options, user_id=dm)

    as_dm = "\n".join(
        (await fake_discord.invoke("entity show", {"name": "Eldri", "history": True}, user_id=dm)).texts()
    )
    assert "History, newest first: Eldrinax is sleeping 🔒 (" in as_dm
    assert "Eldrinax home Ironhold (2025-03-01 → " in as_dm and ", heard in Queen Mab's ball)" in as_dm
    shown = await fake_discord.invoke("entity show", {"name": "Eldrinax", "history": True}, user_id=player)
    as_player = "\n".join(shown.texts())
    assert "sleeping" not in as_player and "Queen Mab" not in as_player
    assert "History, newest first: Eldrinax home Ironhold (2025-03-01 → " in as_player
    assert ", heard in [secret]'s ball)" in as_player
    assert "History" not in "\n".join((await fake_discord.invoke("entity show", {"name": "Eldrinax"})).texts())
    other_end = await fake_discord.invoke("entity show", {"name": "Ironhold", "history": True}, user_id=player)
    assert "History, newest first: Eldrinax home Ironhold (2025-03-01 → " in "\n".join(other_end.texts())


async def test_show_gives_players_a_public_fact_a_secret_one_replaced_as_still_current(
    world: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    """Eldrinax slept, then woke in secret: a player saw no status at all and, in his history, "sleeping" ended, so
    learnt that something secret had replaced it. To players he sleeps until the DM says in public he does not."""
    for options in ({"value": "sleeping"}, {"value": "awake", "secret": True}):
        await fake_discord.invoke("entity link", {"source": "Eldrinax", "relation": "status"} | options, user_id=dm)
    show = {"name": "Eldrinax", "history": True}

    as_player = "\n".join((await fake_discord.invoke("entity show", show, user_id=player)).texts())
    assert "Relationships: Eldrinax is sleeping" in as_player and "awake" not in as_player
    assert "History, newest first: no fact about it has changed yet" in as_player
    as_dm = "\n".join((await fake_discord.invoke("entity show", show, user_id=dm)).texts())
    assert "Eldrinax is awake 🔒" in as_dm and "History, newest first: Eldrinax is sleeping (" in as_dm

    await fake_discord.invoke("entity link", {"source": "Eldrinax", "relation": "status", "value": "dead"}, user_id=dm)
    as_player = "\n".join((await fake_discord.invoke("entity show", show, user_id=player)).texts())
    assert "Eldrinax is dead" in as_player and "awake" not in as_player
    assert "History, newest first: Eldrinax is sleeping (" in as_player


async def test_text_with_a_nul_character_is_refused_clearly(
    world, fake_discord: FakeDiscord, dm: FakeMember, player: FakeMember
) -> None:
    refusal = "The text contains a NUL character (U+0000), which cannot be stored or searched: remove it and try again."
    for command, options, user in [
        ("entity show", {"name": "Iron\x00hold"}, player),
        ("entity link", {"source": "Eldrinax", "relation": "rules", "target": "Iron\x00hold"}, dm),
        ("recall", {"query": "Eldrinax\x00"}, player),
    ]:
        record = await fake_discord.invoke(command, options, user_id=user)
        assert record.ephemeral and record.texts() == [refusal], command
    opened = await fake_discord.invoke("entity describe", {"name": "Ironhold"}, user_id=dm)
    described = await fake_discord.submit_modal(opened.modal["custom_id"], {"description": "Deep\x00halls"})
    # (/entity add and a description's edit name the field: the character is refused before the database sees it)
    assert described.texts() == ["description contains a NUL character (U+0000), which cannot be stored"]
    edited = await fake_discord.invoke(
        "entity edit", {"name": "Ironhold", "description": "A dwarven\x00fort"}, user_id=dm
    )
    assert edited.texts() == described.texts()
    added = await fake_discord.invoke(
        "entity add", {"name": "Borin", "type": "npc", "description": "a\x00"}, user_id=dm
    )
    assert added.texts() == ["description: contains a NUL character (U+0000), which cannot be stored"]
    assert (await world.graph.get_entity("Ironhold")).description == "A dwarven fortress"


async def test_a_bidi_override_is_refused_naming_the_field_and_the_character(
    world, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    """U+202E in a name or a description showed it reversed to everyone reading it (or as another name in the review
    queue); the reply says where and what, escaped, so it does not reverse the reply itself."""
    said = "contains U+202E RIGHT-TO-LEFT OVERRIDE at position 4, an invisible control character; remove it"
    added = await fake_discord.invoke("entity add", {"name": "Gor\u202erim", "type": "npc"}, user_id=dm)
    assert added.ephemeral and added.texts() == [f"name: 'Gor\\u202erim' {said}"]
    aliased = await fake_discord.invoke(
        "entity add", {"name": "Gorrim", "type": "npc", "aliases": "Old \u2067Gorrim\u2069"}, user_id=dm
    )
    assert aliased.texts()[0].startswith("aliases: 'Old \\u2067Gorrim\\u2069' contains U+2067 RIGHT-TO-LEFT ISOLATE")
    edited = await fake_discord.invoke(
        "entity edit", {"name": "Ironhold", "description": "A d\u202ewarven hold"}, user_id=dm
    )
    assert edited.texts() == [f"description {said}"]
    opened = await fake_discord.invoke("entity describe", {"name": "Ironhold"}, user_id=dm)
    described = await fake_discord.submit_modal(opened.modal["custom_id"], {"description": "Dee\u202ep halls"})
    assert described.texts() == [f"description {said}"]
    assert await world.graph.find_entity("Gorrim") is None
    assert (await world.graph.get_entity("Ironhold")).description == "A dwarven fortress"
    # right-to-left names, and an emoji with its joiner, are names
    arabic = await fake_discord.invoke(
        "entity add",
        {"name": "غوريم", "type": "npc", "aliases": "גורים", "description": "🧙\u200d\u2642\ufe0f"},
        user_id=dm,
    )
    assert arabic.texts()[0] == "Added npc **غوريم**."
    assert (await world.graph.get_entity("גורים")).description == "🧙\u200d\u2642\ufe0f"


async def test_guild_b_cannot_see_guild_a(
    world, bot_runner: BotRunner, fake_discord: FakeDiscord, memory: Memory, tmp_path: Path
) -> None:
    other = fake_discord.add_guild("Other table")
    # the new guild reaches the running client on its next identify: restart it, as a join would be seen
    await bot_runner.stop_all()
    restarted = await bot_runner.start(make_bot(fake_discord, memory, tmp_path))
    assert restarted.get_guild(other.id) is not None
    none_yet = await fake_discord.invoke("entity show", {"name": "Eldrinax"}, guild_id=other)
    assert none_yet.texts() == ["This server has no active campaign: run /campaign create first."]
    await fake_discord.invoke("campaign create", {"name": "Ashes"}, guild_id=other)  # same name, other guild
    shown = await fake_discord.invoke("entity show", {"name": "Eldrinax"}, guild_id=other)
    assert shown.texts() == ["no entity named 'Eldrinax' in this campaign"]
    assert await fake_discord.autocomplete("entity show", {"name": "e"}, focused="name", guild_id=other) == []
    listed = await fake_discord.invoke("campaign list", guild_id=other)
    assert listed.texts()[1:] == ["▶ **Ashes**"]


async def test_no_campaign_yet(bot: LorekeeperBot, fake_discord: FakeDiscord, dm: FakeMember) -> None:
    record = await fake_discord.invoke("entity add", {"name": "Borin", "type": "npc"}, user_id=dm)
    assert record.ephemeral and record.texts() == ["This server has no active campaign: run /campaign create first."]


async def test_show_huge_entity_stays_within_embed_total(world, fake_discord: FakeDiscord, dm: FakeMember) -> None:
    from memory.models import Provenance, RelationshipIn, ReviewStatus, Source
    from memory.recorder import SessionRecorder, Utterance

    name = "Zorbo " + "x" * 190
    big = await world.graph.add_entity(
        EntityIn(
            name=name,
            type=EntityType.npc,
            description="d" * 2000,
            aliases=[f"Zorbalias{i} " + "a" * 140 for i in range(8)],
            attributes={f"k{i}": "v" * 120 for i in range(10)},
        )
    )
    for i in range(12):
        other = await world.graph.add_entity(EntityIn(name=f"Other {i} " + "o" * 100, type=EntityType.place))
        await world.graph.ensure_relationship(
            RelationshipIn(
                source_id=big.id,
                type="knows",
                target_id=other.id,
                provenance=Provenance(source=Source.dm, dm_confirmed=True),
                status=ReviewStatus.accepted,
            )
        )
    recorder = await SessionRecorder.start(world, "Night")
    await recorder.add_many([Utterance(speaker="p", text=name + " said " + "w " * 700, seq=1)])
    await recorder.end()

    shown = await fake_discord.invoke("entity show", {"name": name}, user_id=dm)
    assert fake_discord.rejected == []
    (embed,) = shown.original["embeds"]
    total = len(embed["title"]) + len(embed["description"])
    total += sum(len(f["name"]) + len(f["value"]) for f in embed["fields"])
    assert total <= 6000 and len(embed["fields"]) <= 25
    assert all(len(f["value"]) <= 1024 for f in embed["fields"])
    fields = {f["name"]: f["value"] for f in embed["fields"]}
    # relationships are cut at a whole line and say how many were left out
    relations = fields["Relationships"].split("\n")
    assert relations[-1].startswith("… and ") and all(r.endswith("o" * 100) for r in relations[:-1])


async def test_list_pages_fill_to_the_limit_and_lose_no_entry(world, fake_discord: FakeDiscord, dm: FakeMember):
    names = [f"A{i:02d} " + "n" * 190 for i in range(40)]
    for name in names:
        await world.graph.add_entity(EntityIn(name=name, type=EntityType.npc, description="d" * 200))
    record = await fake_discord.invoke("entity list", {"type": "npc"}, user_id=dm)
    assert fake_discord.rejected == []
    message = record.original
    descriptions = [message["embeds"][0]["description"]]
    while not message["components"][0]["components"][1]["disabled"]:
        await fake_discord.click(message, message["components"][0]["components"][1]["custom_id"], user_id=dm)
        message = fake_discord.messages[int(message["id"])]
        descriptions.append(message["embeds"][0]["description"])
    assert all(len(d) <= 4096 for d in descriptions)
    # each page is full: the next page's first line would not have fit
    for page, following in itertools.pairwise(descriptions):
        assert len(page) + 1 + len(following.split("\n")[0]) > 4096
    lines = [line for d in descriptions for line in d.split("\n")]
    shown = [line.split("**")[1] for line in lines if line.startswith("**A")]
    assert shown == names  # every entry once, in order, none cut at a page break
    assert all(line.endswith("…") for line in lines if line.startswith("**A"))  # description clipped to 80


async def test_timed_out_buttons_are_removed(world, fake_discord: FakeDiscord, dm: FakeMember, monkeypatch) -> None:
    import bot.views as views

    monkeypatch.setattr(views.Confirm, "timeout_s", 1.0)
    monkeypatch.setattr(views.Paginator, "timeout_s", 1.0)
    for n in range(60):
        await world.graph.add_entity(EntityIn(name=f"Kobold {n:02d}", type=EntityType.npc, description="yip " * 30))
    asked = await fake_discord.invoke("entity remove", {"name": "Ironhold"}, user_id=dm)
    assert asked.original["components"]  # (the fake edits this very dict when the message is edited)
    listed = await fake_discord.invoke("entity list", {}, user_id=dm)
    assert listed.original["components"]
    for record in (asked, listed):
        message_id = int(record.original["id"])
        await until_true(lambda m=message_id: fake_discord.messages[m]["components"] == [], within_s=5.0)
    assert "Remove **Ironhold**" in fake_discord.messages[int(asked.original["id"])]["content"]  # text kept
    assert await world.graph.find_entity("Ironhold") is not None
    assert fake_discord.rejected == [] and fake_discord.client_errors == []


async def test_buttons_of_a_view_gone_with_a_restart_say_they_expired(
    world: CampaignMemory,
    bot: LorekeeperBot,
    bot_runner: BotRunner,
    fake_discord: FakeDiscord,
    memory: Memory,
    dm: FakeMember,
    tmp_path: Path,
) -> None:
    for n in range(60):
        await world.graph.add_entity(EntityIn(name=f"Kobold {n:02d}", type=EntityType.npc, description="yip " * 30))
    listed = await fake_discord.invoke("entity list", {}, user_id=dm)
    next_id = listed.original["components"][0]["components"][1]["custom_id"]
    live = await fake_discord.click(listed.original, next_id, user_id=dm)
    assert live.callback_type == 7  # the live view answers, and only it: a second answer would be an error
    asked = await fake_discord.invoke("entity remove", {"name": "Ironhold"}, user_id=dm)
    confirm_id = asked.original["components"][0]["components"][0]["custom_id"]

    await bot_runner.stop(bot)
    await bot_runner.start(make_bot(fake_discord, memory, tmp_path))
    for record, custom_id in ((asked, confirm_id), (listed, next_id)):
        pressed = await fake_discord.click(record.original, custom_id, user_id=dm)
        assert pressed.ephemeral and pressed.texts() == ["These buttons have expired; run the command again."]
    assert await world.graph.find_entity("Ironhold") is not None
    assert fake_discord.client_errors == []


async def test_recap_offers_the_latest_sessions_first(
    world: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    """Thirty sessions in: by name, the 25 offered were Session 1, 10–19, 2, 20–29, 3…, never the last ones."""
    first = datetime(2024, 1, 6, 19, tzinfo=UTC)
    for n in range(1, 31):
        await world.log.start_session(f"Session {n}", started_at=first + timedelta(weeks=n))
    offered = await fake_discord.autocomplete("recap", {"session": ""}, focused="session", user_id=dm)
    assert [c["name"] for c in offered] == [f"Session {n}" for n in range(30, 5, -1)]
    typed = await fake_discord.autocomplete("recap", {"session": "session 2"}, focused="session", user_id=dm)
    assert [c["name"] for c in typed][:11] == [f"Session {n}" for n in (*range(29, 19, -1), 2)]


async def test_failing_autocomplete_answers_empty(world, fake_discord: FakeDiscord, dm: FakeMember, monkeypatch):
    from memory.graph import KnowledgeGraph
    from memory.session_log import SessionLog

    async def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("database hiccup")

    monkeypatch.setattr(KnowledgeGraph, "all_names", broken)
    monkeypatch.setattr(SessionLog, "sessions", broken)
    assert await fake_discord.autocomplete("entity show", {"name": "eld"}, focused="name", user_id=dm) == []
    assert await fake_discord.autocomplete("recap", {"session": "n"}, focused="session", user_id=dm) == []


async def test_describe_writes_several_lines_in_a_box_only_the_dm_may_submit(
    world, fake_discord: FakeDiscord, guild: FakeGuild, dm: FakeMember, player: FakeMember
) -> None:
    refused = await fake_discord.invoke("entity describe", {"name": "Eldrinax"}, user_id=player)
    assert refused.texts() == ["Only the DM can do that."]

    opened = await fake_discord.invoke("entity describe", {"name": "the red"}, user_id=dm)
    assert opened.modal is not None and opened.modal["title"] == "Describe Eldrinax"
    field = modal_field(opened.modal, "description")
    assert field["style"] == 2 and field["value"] == "An ancient red dragon"  # a paragraph box, pre-filled

    notes = "An ancient red dragon.\nSleeps under Ironhold; wakes when the bells ring."
    forged = await fake_discord.submit_modal(opened.modal["custom_id"], {"description": "pwned"}, user_id=player)
    assert forged.texts() == ["This edit form is not yours."]
    await fake_discord.invoke(
        "entity edit", {"name": "Eldrinax", "new_name": "Eldrinax the Red"}, user_id=dm
    )  # renamed while the box is open: the form still finds it
    saved = await fake_discord.submit_modal(opened.modal["custom_id"], {"description": notes + "\n"})
    assert saved.ephemeral and saved.texts()[:2] == ["Updated **Eldrinax the Red**.", "Eldrinax the Red"]
    assert (await world.graph.get_entity("Eldri")).description == notes

    unknown = await fake_discord.invoke("entity describe", {"name": "Eldrinex"}, user_id=dm)
    assert unknown.modal is None and unknown.texts()[0].startswith("no entity named 'Eldrinex'")
    await world.graph.update_entity("Ironhold", description="A dwarven fortress. " * 120)  # as a campaign file may
    too_long = await fake_discord.invoke("entity describe", {"name": "Ironhold"}, user_id=dm)
    assert too_long.modal is None and too_long.texts() == [
        "Ironhold's description is 2,400 characters, more than the box holds (2,000): "
        "change it in the campaign file and load that again."
    ]


async def test_the_card_says_in_which_sessions_the_mention_index_found_the_entity(
    world: CampaignMemory, fake_discord: FakeDiscord, player: FakeMember
) -> None:
    from memory.mentions import index_lines
    from memory.models import EntryIn

    eldrinax = await world.graph.get_entity("Eldrinax")
    for title, said in (("Night 1", 2), ("Night 2", 1)):
        session = await world.log.start_session(title)
        lines = await world.log.write_many(
            session.id, [EntryIn(speaker="DM", text=f"Eldrinax roars ({n}).") for n in range(said)]
        )
        await index_lines(world.db, world.campaign_id, session.id, {e.id: [eldrinax.id] for e in lines})
    card = "\n".join((await fake_discord.invoke("entity show", {"name": "Eldrinax"}, user_id=player)).texts())
    assert "Mentioned in 2 sessions: 3 lines, anyone's: Night 2 (1 line), Night 1 (2 lines)" in card, card


async def test_the_card_shows_what_was_said_and_imported_as_written_not_as_markdown(
    world: CampaignMemory, fake_discord: FakeDiscord, player: FakeMember
) -> None:
    """/recall escapes a line's "*", "_", ">", "|"; the entity card applied them as styling."""
    from memory.mentions import index_lines
    from memory.models import EntryIn

    eldrinax = await world.graph.get_entity("Eldrinax")
    await world.graph.update_entity("Eldrinax", description="> *imported* __lore__ | x")
    session = await world.log.start_session("Night 1")
    said = "The *vast* Eldrinax stirs; Grog_the_great says > a|b"
    lines = await world.log.write_many(session.id, [EntryIn(speaker="DM", text=said, start_s=6.0)])
    await index_lines(world.db, world.campaign_id, session.id, {e.id: [eldrinax.id] for e in lines})
    embed = (await fake_discord.invoke("entity show", {"name": "Eldrinax"}, user_id=player)).messages[0]["embeds"][0]
    assert embed["description"] == "\\> \\*imported\\* \\_\\_lore\\_\\_ \\| x"
    fields = {f["name"]: f["value"] for f in embed["fields"]}
    assert (
        "The \\*vast\\* **Eldrinax** stirs; Grog_the_great says > a\\|b" in fields["Last mentioned"]
    )  # ">" quotes only first


async def test_the_card_has_no_import_counters_or_placeholder(
    world: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    """The CRD3 cards led with "crd3_episodes: 135" and an italic "*no description*"."""
    from memory.models import RelationshipIn

    await world.graph.add_entity(
        EntityIn(name="Delilah", type=EntityType.npc, attributes={"crd3_mentions": 563, "age": 40})
    )
    delilah, ironhold = await world.graph.get_entity("Delilah"), await world.graph.get_entity("Ironhold")
    await world.graph.add_relationship(
        RelationshipIn(source_id=delilah.id, type="secretly_controls", target_id=ironhold.id)
    )
    embed = (await fake_discord.invoke("entity show", {"name": "Delilah"}, user_id=dm)).messages[0]["embeds"][0]
    fields = {f["name"]: f["value"] for f in embed["fields"]}
    assert "description" not in embed  # none written: no placeholder in its place
    assert fields["Attributes"] == "**age**: 40"  # the import's counter is its own
    assert fields["Relationships"] == "Delilah secretly controls Ironhold"


async def test_show_an_accepted_event_says_the_line_it_was_told_in(
    ashes: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    """An event the review proposed is told ("you stop by the Foramere Basin"), never said by its name: accepted,
    its card named no line and no session, so the DM could not see when it happened."""
    night = await ashes.log.start_session("Night one")
    story = "You ride along the Amber Road, trading stories with the guards of the caravan. " * 14
    told = story + "You guys stop by the Foramere Basin, where the survivors camp. " + story
    line = await ashes.log.write(night.id, EntryIn(speaker="DM", text=told, start_s=6.0))
    said = Provenance(source=Source.stated, confidence=0.55, session_id=night.id, timestamp=6.0, entry_ids=[line.id])
    await ashes.graph.add_entity(EntityIn(name="Foramere Basin", type=EntityType.location))
    event = await ashes.graph.add_entity(
        EntityIn(name="Arrival at Foramere Basin", type=EntityType.event, status="pending", provenance=said)
    )
    await ashes.review.accept(f"e{event.id}")

    card = await fake_discord.invoke("entity show", {"name": "Arrival at Foramere Basin"}, user_id=dm)
    [said_in] = [t.removeprefix("Last mentioned: ") for t in card.texts() if t.startswith("Last mentioned: ")]
    assert said_in.startswith(f"Night one, {today()} at 0:06, DM: “…") and said_in.endswith("…”"), said_in
    # the part naming it, the name in bold, a phone screen's few lines (a narrator's 700-character paragraph filled it)
    assert "You guys stop by the **Foramere Basin**, where the survivors camp." in said_in
    assert len(said_in) <= 320


async def test_show_a_pending_event_says_the_line_it_was_told_in(
    ashes: CampaignMemory, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    """A proposed event's told lines are indexed only once it is accepted: while the DM weighs it, its card still
    names the line it was drawn from."""
    night = await ashes.log.start_session("Night one")
    line = await ashes.log.write(
        night.id, EntryIn(speaker="DM", text="You guys stop by the Foramere Basin, where the survivors camp.")
    )
    said = Provenance(source=Source.stated, confidence=0.55, session_id=night.id, entry_ids=[line.id])
    await ashes.graph.add_entity(EntityIn(name="Foramere Basin", type=EntityType.location))
    await ashes.graph.add_entity(
        EntityIn(name="Arrival at Foramere Basin", type=EntityType.event, status="pending", provenance=said)
    )

    card = await fake_discord.invoke("entity show", {"name": "Arrival at Foramere Basin"}, user_id=dm)
    [said_in] = [t.removeprefix("Last mentioned: ") for t in card.texts() if t.startswith("Last mentioned: ")]
    assert "You guys stop by the **Foramere Basin**" in said_in, said_in


async def test_a_public_description_naming_a_secret_is_warned_of(
    world, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    """Players read "[secret]" where a public description says the secret Queen Mab, which tells them a secret is
    there: /entity add and /entity edit store it, and tell the DM the field and the name."""
    warned = (
        "⚠️ “Kestrel” is public but its description says “queen mab”, a secret name: players will read [secret] "
        "there, which tells them a secret is there; reword it, or make the entity secret."
    )
    options = {"name": "Kestrel", "type": "npc", "description": "a spy of queen mab"}
    added = await fake_discord.invoke("entity add", options, user_id=dm)
    assert added.texts()[0] == f"Added npc **Kestrel**. {warned}", added.texts()
    edited = await fake_discord.invoke(
        "entity edit", {"name": "Kestrel", "description": "queen mab's eyes"}, user_id=dm
    )
    assert edited.texts()[0] == f"Updated **Kestrel**. {warned}", edited.texts()
    plain = await fake_discord.invoke("entity edit", {"name": "Kestrel", "description": "a spy"}, user_id=dm)
    assert "⚠️" not in plain.texts()[0], plain.texts()


async def test_a_secret_name_spelled_like_a_public_one_is_warned_of(
    world, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    """Players read "The Ironhold" as the public Ironhold: such a secret name is never masked, so the DM is told
    (not refused: a campaign file holding it must still load)."""
    added = await fake_discord.invoke(
        "entity add", {"name": "The Ironhold", "type": "location", "secret": True}, user_id=dm
    )
    assert added.texts()[0].startswith(
        "Added location **The Ironhold**. ⚠️ The secret name “The Ironhold” is spelled "
        "like “Ironhold”, which players may read"
    ), added.texts()
    plain = await fake_discord.invoke("entity add", {"name": "Kestrel", "type": "npc"}, user_id=dm)
    assert "⚠️" not in plain.texts()[0], plain.texts()
    # a secret name of English words masks them wherever players read them: the DM is told which
    exile = await fake_discord.invoke("entity add", {"name": "The Exile", "type": "npc", "secret": True}, user_id=dm)
    assert exile.texts()[0] == (
        "Added npc **The Exile**. Players will read [secret] for every “the exile” said, in any sense (as it hides "
        "the secret name)."
    ), exile.texts()
    assert "Players will read" not in plain.texts()[0]
    # a rename to a public name spelled like the secret Queen Mab, accents and case aside
    renamed = await fake_discord.invoke("entity edit", {"name": "Kestrel", "new_name": "queen mäb"}, user_id=dm)
    assert "⚠️ The secret name “Queen Mab” is spelled like “queen mäb”" in renamed.texts()[0], renamed.texts()


async def test_show_a_busy_character_lists_its_newest_facts_first(
    world, fake_discord: FakeDiscord, dm: FakeMember
) -> None:
    """61 facts and 7 past ones: the card's field holds the newest (those that ended, the last to end), and says
    how many of all the others it left out."""
    await world.graph.add_entity(EntityIn(name="Grog", type=EntityType.player))
    for n in range(1, 61):
        await world.graph.add_entity(EntityIn(name=f"Friend {n}", type=EntityType.npc))
        await world.graph.link("Grog", "knows", f"Friend {n}")
    for n in range(1, 9):
        await world.graph.link("Grog", "status", value=f"mood {n}")
    shown = await fake_discord.invoke("entity show", {"name": "Grog", "history": True}, user_id=dm)
    (embed,) = shown.original["embeds"]
    fields = {f["name"]: f["value"].split("\n") for f in embed["fields"]}
    facts, past = fields["Relationships"], fields["History, newest first"]
    assert facts[0].startswith("Grog is mood 8") and facts[1].startswith("Grog knows Friend 60")
    assert facts[-1] == f"… and {61 - (len(facts) - 1)} more"
    assert past[0].startswith("Grog is mood 7") and len(past) == 7
