"""A small campaign for the hot context and the MCP server: a public NPC, a secret one, a secret fact, a past fact,
an ended session with a recap and a live one whose last minutes name a few of them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory.models import EntityIn, EntityType, EntryIn, Visibility
from memory.store import CampaignMemory

SECRET_NPC = "Vaskerrin Holt"
SECRET_FACT_VALUE = "lich in disguise"


async def build_world(mem: CampaignMemory) -> dict[str, int]:
    g = mem.graph
    grom = await g.add_entity(
        EntityIn(name="Grom", type=EntityType.npc, description="A dwarven smith of Ironhold.", aliases=["the smith"])
    )
    await g.add_entity(EntityIn(name="Ironhold", type=EntityType.place, description="A mountain fortress."))
    await g.add_entity(EntityIn(name="Ember Key", type=EntityType.item, description="A key that is always warm."))
    await g.add_entity(EntityIn(name="Pip", type=EntityType.player, description="A halfling rogue."))
    await g.add_entity(
        EntityIn(
            name=SECRET_NPC,
            type=EntityType.npc,
            description="The Pale Magister's true name.",
            aliases=["the Pale Magister"],
            visibility=Visibility.secret,
        )
    )
    await g.link("Grom", "lives_in", "Ironhold")
    await g.link("Ember Key", "owned_by", "Grom")
    await g.link("Ember Key", "owned_by", "Pip")  # closes "owned_by Grom": history
    await g.link("Grom", "secretly_serves", SECRET_NPC, secret=True)
    await g.link("Grom", "curse", value=SECRET_FACT_VALUE, secret=True)
    await g.link("Grom", "status", value="alive")

    start = datetime.now(UTC) - timedelta(days=7)
    old = await mem.log.start_session("Night 1", started_at=start)
    await mem.log.write_many(
        old.id,
        [
            EntryIn(speaker="DM", text="Grom hands the Ember Key to Pip.", start_s=10),
            EntryIn(speaker="Pip", text="I pocket the key and thank the smith.", start_s=20),
            EntryIn(speaker="DM", text=f"In the shadows, {SECRET_NPC} watches.", start_s=30),
        ],
    )
    await mem.log.end_session(old.id)
    await mem.log.set_summary(old.id, f"Grom gave Pip the Ember Key. {SECRET_NPC} watched.\nInvolved: Grom, Pip")

    live = await mem.log.start_session("Night 2")
    await mem.log.write_many(
        live.id,
        [
            EntryIn(speaker="DM", text="Long ago, the road to Ironhold was quiet.", start_s=0),
            EntryIn(speaker="DM", text="You reach the gates of Ironhold at dusk.", start_s=1200),
            EntryIn(speaker="Pip", text="I ask Grom about the Pale Magister.", start_s=1230),
            EntryIn(speaker="DM", text=f"Grom whispers: {SECRET_NPC} is near.", start_s=1260),
        ],
    )
    return {"grom": grom.id, "old": old.id, "live": live.id}
