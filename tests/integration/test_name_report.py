"""What name correction changed in a session (`lorekeeper session names`, `/session names`), on the real embedded
PostgreSQL: one aggregate over the session's lines' corrections."""

from __future__ import annotations

import pytest

from memory.errors import NotFoundError
from memory.models import Correction, EntityIn, EntityType
from memory.name_report import names_changed
from memory.recorder import CorrectionIndexCache, SessionRecorder, Utterance
from memory.store import CampaignMemory, Memory


async def _said(campaign: CampaignMemory, title: str, lines: list[str]) -> int:
    rec = await SessionRecorder.start(campaign, title, index_cache=CorrectionIndexCache())
    await rec.add_many([Utterance(speaker="DM", text=t) for t in lines])
    await rec.end()
    return rec.session.id


async def test_the_latest_sessions_corrections_grouped_by_phrase_heard_most_frequent_first(
    campaign: CampaignMemory, memory: Memory
) -> None:
    for name in ("Eldrinax", "Frumpkin", "Mentiri"):
        await campaign.graph.add_entity(EntityIn(name=name, type=EntityType.npc))
    await campaign.graph.update_entity("Frumpkin", heard_as=["from skin"])
    await _said(campaign, "Night 1", ["the elder nacks sleeps", "from skin naps"])
    night2 = await _said(
        campaign,
        "Night 2",
        [
            "Elder nacks rises from the sea.",
            "You see the elder  nacks.",  # spacing and case aside, the same phrase
            "and the elder nacks roars",
            "From skin hides; from skin purrs.",
            "A manta ray glides by.",
            "Nothing to see here.",
        ],
    )
    # stage 2 (the LLM) made one: written as its job revises a line
    (line,) = [e for e in await campaign.log.session_entries(night2) if "manta" in e.raw_text]
    start = line.raw_text.index("manta ray")
    mentiri = await campaign.graph.get_entity("Mentiri")
    fix = Correction(
        span="manta ray", replacement="Mentiri", start=start, end=start + 9, entity_id=mentiri.id, score=0.8, stage=2
    )
    await campaign.log.revise(line.id, line.raw_text.replace("manta ray", "Mentiri"), [fix])
    # another campaign's session of the same title and lines is not counted
    other = memory.campaign((await memory.campaigns().create("Other")).id)
    await other.graph.add_entity(EntityIn(name="Eldrinax", type=EntityType.npc))
    await _said(other, "Night 2", ["the elder nacks"] * 5)

    report = await names_changed(campaign)
    assert report.session.title == "Night 2" and report.lines == 5
    assert [(c.heard, c.name, c.count, c.how, c.heard_as) for c in report.changes] == [
        ("elder nacks", "Eldrinax", 3, ["sound"], []),
        ("from skin", "Frumpkin", 2, ["heard-as"], ["from skin"]),
        ("manta ray", "Mentiri", 1, ["LLM"], []),
    ]
    # an entity renamed since is shown by its name now; a session is found by its title, case aside
    await campaign.graph.update_entity("Eldrinax", new_name="Eldrinax the Drowned")
    first = await names_changed(campaign, "night 1")
    assert [(c.heard, c.name, c.count) for c in first.changes] == [
        ("elder nacks", "Eldrinax the Drowned", 1),
        ("from skin", "Frumpkin", 1),
    ]
    with pytest.raises(
        NotFoundError, match=r"no session titled 'Nigth 2' in this campaign \(did you mean 'Night 2'\?\)"
    ):
        await names_changed(campaign, "Nigth 2")
    assert (await names_changed(other)).changes[0].count == 5
    # an entity removed since: its corrections stay in the lines, shown by the name written, nothing to undo
    await campaign.graph.remove_entity("Mentiri")
    (gone,) = [c for c in (await names_changed(campaign)).changes if c.heard == "manta ray"]
    assert (gone.name, gone.removed) == ("Mentiri", True)
    assert not any(c.removed for c in first.changes)


async def test_the_undo_keeps_the_entitys_other_not_heard_as_phrases_and_a_respelling_has_none(
    campaign: CampaignMemory,
) -> None:
    """A hint adds its phrase ("+"): one replacing all the entity's phrases would drop the DM's others, and two rows'
    hints for one entity, followed one after the other, each the other's.
    And a correction that respells the name ("vexahlia" / Vex'ahlia) is no mishearing: not-heard-as refuses it."""
    from bot.cli.session import undo_command
    from cogs.sessions import undo_slash

    await campaign.graph.add_entity(EntityIn(name="Bittersolt", type=EntityType.npc, not_heard_as=["sea cow"]))
    await campaign.graph.add_entity(EntityIn(name="Vex'ahlia", type=EntityType.player))
    await _said(campaign, "Night 1", ["A bitter salt wind blows.", "vexahlia draws her bow."])
    changes = {c.heard: c for c in (await names_changed(campaign)).changes}
    assert set(changes) == {"bitter salt", "vexahlia"}
    salt, vex = changes["bitter salt"], changes["vexahlia"]
    assert (salt.not_heard_as, salt.respelled, vex.respelled) == (["sea cow"], False, True)
    undo = 'lorekeeper entity edit Bittersolt --not-heard-as "+bitter salt"'  # added: "sea cow" stays, as in Discord
    assert undo_command(salt) == undo
    assert undo_slash(salt) == "/entity edit Bittersolt not_heard_as: +bitter salt"  # added: "sea cow" stays
    assert undo_command(vex) == "(a spelling of its name or an alias)"
