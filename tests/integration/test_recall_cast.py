"""A player of two characters: "what did Grog say" reads the player's lines of the sessions whose cast says Grog
was played there (the characters the recap found taking part), not those where the player played Fjord."""

from __future__ import annotations

from collections.abc import Sequence

from memory import jobs
from memory.models import EntityIn, EntityType, EntryIn, Visibility
from memory.recall import recall
from memory.store import CampaignMemory, Memory

FILLER = [("DM", f"The road winds on past farm {n} and its fences.") for n in range(8)]


async def played(memory: Memory, campaign: CampaignMemory, title: str, lines: Sequence[tuple[str, str]]) -> list[int]:
    """A session played and recapped (the recap links who took part)."""
    session = await campaign.log.start_session(title)
    written = await campaign.log.write_many(
        session.id, [EntryIn(speaker=who, text=text, start_s=float(n)) for n, (who, text) in enumerate(lines)]
    )
    await campaign.log.end_session(session.id)
    ctx = jobs.JobContext(memory=memory, embedder=None, embedding_model="x")  # type: ignore[arg-type]
    await jobs.summarize_session(ctx, campaign.campaign_id, session.id)
    return [e.id for e in written]


async def answering(campaign: CampaignMemory, query: str, *, dm: bool = True) -> set[int]:
    hits = await recall(campaign, None, query, limit=5, mode="fulltext", dm=dm)
    return {line.entry_id for hit in hits for line in hit.answering()}


async def test_what_grog_said_leaves_out_the_sessions_travis_played_fjord(
    memory: Memory, campaign: CampaignMemory
) -> None:
    for name in ("Grog", "Fjord"):
        await campaign.graph.add_entity(EntityIn(name=name, type=EntityType.player, attributes={"played_by": "TRAVIS"}))
    grog = await played(
        memory, campaign, "Vox Machina 35", [*FILLER[:3], ("DM", "Grog, the ogre charges."), ("TRAVIS", "I rage!")]
    )
    fjord = await played(
        memory, campaign, "Mighty Nein 2", [*FILLER[3:], ("DM", "Fjord, the pirates board."), ("TRAVIS", "I rage!")]
    )
    both = await played(
        memory, campaign, "Crossover", [("DM", "Grog and Fjord meet at the docks."), ("TRAVIS", "I rage at both!")]
    )
    untold = await played(memory, campaign, "Untold", [("DM", "A quiet night."), ("TRAVIS", "I rage in my sleep.")])
    assert await answering(campaign, "what did Grog say about rage") == {grog[-1], both[-1], untold[-1]}
    assert await answering(campaign, "what did Fjord say about rage") == {fjord[-1], both[-1], untold[-1]}

    # a player's question reads public characters' sessions only: a secret one's must not pick lines out
    await campaign.graph.update_entity("Fjord", visibility=Visibility.secret)
    assert fjord[-1] in await answering(campaign, "what did Grog say about rage", dm=False)
