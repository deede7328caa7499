"""A player of two characters: "what did Grog say" reads the player's lines of the sessions whose cast says Grog
was played there (the characters the recap found taking part), not those where the player played Fjord."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from memory import jobs
from memory.errors import NotFoundError
from memory.models import EntityIn, EntityType, EntryIn, Visibility
from memory.recall import LEXICAL_DEPTH, LINE_VECTOR_DEPTH, Mode, recall
from memory.semantic import LineVectorIn
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


async def answering(
    campaign: CampaignMemory,
    query: str,
    *,
    dm: bool = True,
    limit: int = 5,
    mode: Mode = "fulltext",
    embedding: list[float] | None = None,
    asker: str | None = None,
) -> set[int]:
    hits = await recall(campaign, None, query, limit=limit, mode=mode, embedding=embedding, dm=dm, asker=asker)
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


async def test_a_players_one_joke_as_his_other_character_does_not_make_it_take_part(
    memory: Memory, campaign: CampaignMemory
) -> None:
    """C2E002: TRAVIS played Fjord all night and once joked "(as Grog) …": Grog did not take part, so what Grog
    said is not read from that session's lines, and Fjord's lines are not shown as Grog's."""
    for name in ("Grog", "Fjord"):
        await campaign.graph.add_entity(EntityIn(name=name, type=EntityType.player, attributes={"played_by": "TRAVIS"}))
    fjord = await played(
        memory,
        campaign,
        "Mighty Nein 2",
        [
            ("DM", "Fjord, the watchmen close in."),
            ("TRAVIS", "We're under watch."),
            ("DM", "Fjord, they are right behind you."),
            ("TRAVIS", "Let's go. (as Grog) That worked way better than I thought."),
        ],
    )
    assert await answering(campaign, "what did Fjord say about the watch?") == {fjord[1]}
    assert await answering(campaign, "what did Grog say about the watch?") == set()


def vec(*hot: int, dim: int = 384) -> list[float]:
    """A unit vector spread evenly over the ``hot`` dimensions."""
    return [(1.0 if i in hot else 0.0) / len(hot) ** 0.5 for i in range(dim)]


async def test_what_grog_said_is_chosen_among_grogs_sessions_only(memory: Memory, campaign: CampaignMemory) -> None:
    """More of TRAVIS's Fjord lines match than recall reads of the best lines (``LEXICAL_DEPTH`` by words,
    ``LINE_VECTOR_DEPTH`` by meaning), each better than any Grog line: the Grog lines still fill the hits."""
    for name in ("Grog", "Fjord"):
        await campaign.graph.add_entity(EntityIn(name=name, type=EntityType.player, attributes={"played_by": "TRAVIS"}))
    # short: a long line said again word for word is one hit (``SAME_TEXT``)
    said = "I swing the great axe at it, and I rage the whole time."
    grog = await played(
        memory, campaign, "Vox Machina 35", [("DM", "Grog, the ogre charges."), *([*FILLER, ("TRAVIS", said)] * 3)]
    )
    asked = grog[len(FILLER) + 1 :: len(FILLER) + 1]  # TRAVIS's lines, far enough apart to be a hit each
    many = max(LEXICAL_DEPTH, LINE_VECTOR_DEPTH) + 5
    fjord = await played(
        memory, campaign, "Mighty Nein 2", [("DM", "Fjord, the pirates board."), *[("TRAVIS", "I rage!")] * many]
    )
    assert len(asked) == 3
    assert await answering(campaign, "what did Fjord say about rage", limit=3) <= set(fjord[1:])
    assert await answering(campaign, "what did Grog say about rage", limit=3) == set(asked)

    # by meaning: every Fjord line is nearer the question than any Grog line
    rows = await campaign.db.fetch(
        "SELECT id, session_id FROM session_entries WHERE campaign_id = $1", campaign.campaign_id
    )
    sessions = {r["id"]: r["session_id"] for r in rows}
    await campaign.semantic.upsert_lines(
        [LineVectorIn(i, sessions[i], "x", vec(0, 1)) for i in asked]
        + [LineVectorIn(i, sessions[i], "x", vec(0)) for i in fjord[1:]]
    )
    query = "what did Grog say about the battle"
    assert await answering(campaign, query, limit=3, mode="vector", embedding=vec(0)) == set(asked)


async def test_a_question_naming_a_speaker_prefers_their_own_lines(memory: Memory, campaign: CampaignMemory) -> None:
    """Three lines that match alike, the oldest by the speaker a question names (or by its asker, asked in the
    first person): it is lifted as a line naming them would be, past the second, into the first two hits."""
    await campaign.graph.add_entity(EntityIn(name="Grog", type=EntityType.player, attributes={"played_by": "TRAVIS"}))
    said = [
        ("Caroline", "I painted a lakeside."),
        ("Melanie", "I painted a sunrise."),
        ("Melanie", "I painted a meadow."),
        ("TRAVIS", "I grabbed an axe."),
        ("SAM", "I grabbed a lute."),
        ("SAM", "I grabbed a drum."),
    ]
    lines = await played(memory, campaign, "Vox Machina 35", [x for line in said for x in (line, *FILLER)])
    caroline, melanie, _, travis, sam, _ = lines[:: len(FILLER) + 1]
    newer_two = {sam, sam + len(FILLER) + 1}

    async def first_two(query: str, asker: str | None = None) -> set[int]:
        return await answering(campaign, query, limit=2, asker=asker)

    assert caroline in await first_two("What did Caroline paint?")
    assert await first_two("What did Melanie paint?") == {melanie, melanie + len(FILLER) + 1}
    # the asker's own lines when the question is in the first person
    assert travis in await first_two("what did i grab?", asker="travis")
    assert await first_two("what did they grab?", asker="TRAVIS") == newer_two
    # not the player of a character it names: what Grog did, the DM mostly tells
    assert await first_two("What did Grog grab?") == newer_two
    assert await first_two("what did we grab?") == newer_two  # no one named: the newer two


async def test_a_speaker_asked_for_by_their_characters_name_is_told_the_player(
    memory: Memory, campaign: CampaignMemory
) -> None:
    """`search --speaker Scanlan` found no line said by "Scanlan" and listed the speakers: the error says who plays
    him (a public character only: a secret one's name must not tell who plays it)."""
    await campaign.graph.add_entity(
        EntityIn(name="Scanlan Shorthalt", aliases=["Scanlan"], type=EntityType.player, attributes={"played_by": "SAM"})
    )
    await campaign.graph.add_entity(
        EntityIn(name="Kaylie", type=EntityType.npc, visibility=Visibility.secret, attributes={"played_by": "SAM"})
    )
    await played(memory, campaign, "Night 1", [("DM", "Scanlan, roll."), ("Sam", "I play the lute.")])
    for asked in ("Scanlan", "scanlan shorthalt"):
        with pytest.raises(NotFoundError) as error:
            await campaign.log.check_speaker(asked)
        assert str(error.value) == f"no line was said by '{asked}' ({asked} is played by 'Sam': give the player's name)"
    with pytest.raises(NotFoundError) as error:
        await campaign.log.check_speaker("Kaylie")
    assert "played by" not in str(error.value)


async def test_a_players_npc_labels_their_lines_alike_in_recall_and_the_recap(
    memory: Memory, campaign: CampaignMemory
) -> None:
    """An npc a player runs (``played_by`` on an npc): recall quoted "Sam (Kash Vord)", the recap only "Sam", as it
    read player characters alone. One rule: any character whose ``played_by`` names the speaker."""
    await campaign.graph.add_entity(EntityIn(name="Kash Vord", type=EntityType.npc, attributes={"played_by": "Sam"}))
    lines = [
        ("DM", "Kash the guard captain waits at the bridge of Emon with his spear raised high."),
        ("Sam", "Kash says the bridge is closed to all travellers until the tide turns tonight."),
        ("DM", "The river churns beneath the bridge and the lanterns of Emon flicker in the wind."),
        ("Sam", "Kash lowers his spear and lets the party pass without a word."),
        ("DM", "You cross the bridge into the old quarter of Emon as the bells ring midnight."),
        ("Sam", "Kash watches the party vanish into the fog and returns to his post."),
    ]
    await played(memory, campaign, "Four", lines)
    (hit,) = await recall(campaign, None, "Kash lowers his spear", limit=1, mode="fulltext")
    assert [line.plays for line in hit.answering()] == ["Kash Vord"]
    recap = (await campaign.log.session(hit.session_id)).summary or ""
    assert "Sam (Kash Vord): " in recap and "Sam: " not in recap, recap


async def test_a_player_who_voices_an_npc_too_still_has_their_character_take_part(
    memory: Memory, campaign: CampaignMemory
) -> None:
    """Travis plays Grog and now and then voices the npc Old Tom (``played_by`` on both): Grog, played at the table,
    took part in a session where Travis speaks, as before Old Tom counted among his characters."""
    grog = await campaign.graph.add_entity(
        EntityIn(name="Grog Strongjaw", type=EntityType.player, attributes={"played_by": "TRAVIS"})
    )
    await campaign.graph.add_entity(EntityIn(name="Old Tom", type=EntityType.npc, attributes={"played_by": "TRAVIS"}))
    await played(memory, campaign, "Five", [*FILLER, ("TRAVIS", "I smash the mill's door down.")])
    facts = await campaign.graph.relationships_of(grog.id)
    assert any(r.type == "took_part_in" for r in facts), facts


async def test_what_a_character_said_in_a_session_lists_their_lines(memory: Memory, campaign: CampaignMemory) -> None:
    """ "What did Grog say last session?" left no word to search once the speaker and the session were read:
    nothing found, or lines by how near "say" they were. His lines of that session answer it, story first."""
    await campaign.graph.add_entity(EntityIn(name="Grog", type=EntityType.player, attributes={"played_by": "TRAVIS"}))
    smash = (await played(memory, campaign, "Session 1", [*FILLER, ("TRAVIS", "I smash the mill's door down.")]))[-1]
    lines = await played(
        memory,
        campaign,
        "Session 2",
        [
            ("TRAVIS", "I make a strength check, roll a d20 plus 5, and that is a natural 20 on the die."),
            *FILLER[:4],
            ("TRAVIS", "I rage."),
            *FILLER[4:],
            ("TRAVIS", "I pick up the bard and carry him over the river."),
        ],
    )
    dice, rage, carry = lines[0], lines[5], lines[-1]
    for query in ("what did Grog say in session 2?", "what did Grog say last session?", "what did Travis say"):
        hits = await recall(campaign, None, query, limit=3, mode="fulltext")
        shown = [line.entry_id for hit in hits for line in hit.answering()]
        # the story, the longest first, then the dice
        assert shown == ([carry, rage, dice] if "session" in query else [carry, smash, rage]), query


async def test_what_i_said_is_the_askers_lines(memory: Memory, campaign: CampaignMemory) -> None:
    """`recall --as Travis "what did I say last session?"` searched "say": Sam's "he can say one word" came first."""
    lines = await played(
        memory,
        campaign,
        "Session 1",
        [("SAM", "He can say one word."), *FILLER, ("TRAVIS", "I rage."), ("TRAVIS", "I carry the bard over.")],
    )
    for asker, query in (("TRAVIS", "what did I say last session?"), ("travis", "what did i say in session 1")):
        hits = await recall(campaign, None, query, limit=3, mode="fulltext", asker=asker)
        assert [line.entry_id for hit in hits for line in hit.answering()] == [lines[-2], lines[-1]], query
    hits = await recall(campaign, None, "what did I say about the bard?", limit=3, mode="fulltext", asker="TRAVIS")
    assert [line.entry_id for hit in hits for line in hit.answering()] == [lines[-1]]
    # an asker who said nothing (on Discord, whoever asks) filters nothing
    hits = await recall(campaign, None, "what did I say about the bard?", limit=3, mode="fulltext", asker="Nobody")
    assert [line.entry_id for line in hits[0].answering()] == [lines[-1]] and len(hits) == 2  # "say" found too


async def test_what_a_character_rolled_is_their_players_roll_after_the_line_calling_for_it(
    memory: Memory, campaign: CampaignMemory
) -> None:
    """ "What did Gorrik roll for insight?": Ben's "Natural 20 plus 2, 22" after the DM's "Sure, roll insight", first,
    though dice talk is otherwise ranked down as table talk, and lines naming Gorrik say more of his words."""
    await campaign.graph.add_entity(
        EntityIn(name="Gorrik Emberhand", type=EntityType.player, aliases=["Gorrik"], attributes={"played_by": "Ben"})
    )
    ids = await played(
        memory,
        campaign,
        "Night 1",
        [
            ("Ben", "Gorrik Emberhand strides straight through the inn. I want a drink."),
            *FILLER[:3],
            ("Ben", "Can I roll insight on Brannoch?"),
            ("DM", "Sure, roll insight."),
            ("Ben", "Natural 20 plus 2, 22."),
            *FILLER[3:6],
            ("DM", "Roll perception, everyone."),
            ("Ana", "14."),
            *FILLER[6:],
            ("Ben", "Gorrik sharpens his axe all night. Gorrik never pays for insight."),
        ],
    )
    roll = ids[6]
    hits = await recall(campaign, None, "what did Gorrik roll for insight?", limit=3, mode="fulltext", dm=True)
    assert roll in {line.entry_id for line in hits[0].answering()}
    # a question of no roll keeps dice talk down
    hits = await recall(campaign, None, "what did Gorrik say about insight?", limit=3, mode="fulltext", dm=True)
    assert roll not in {line.entry_id for line in hits[0].answering()}


async def test_a_characters_first_name_asks_for_their_players_lines(memory: Memory, campaign: CampaignMemory) -> None:
    """ "What did Thessaly say" showed Thessaly Vorn's card but the DM's line first, and `search --speaker
    Thessaly` and `--as Thessaly` knew no one: her first name calls her alone, as on her card, so it is Ana's lines."""
    await campaign.graph.add_entity(
        EntityIn(name="Thessaly Vorn", type=EntityType.player, aliases=["Thess"], attributes={"played_by": "Ana"})
    )
    await campaign.graph.add_entity(EntityIn(name="Thessaly Crossing", type=EntityType.location))  # a place's word
    await campaign.graph.add_entity(EntityIn(name="Mira Tolvanek", type=EntityType.npc))  # a person, no player
    lines = await played(
        memory,
        campaign,
        "Session 1",
        [
            ("DM", "She says three ore caravans left and none came back."),
            *FILLER,
            ("Ana", "Thess agrees. But first we find those caravans."),
            ("Mira", "The caravans were mine."),
        ],
    )
    assert await answering(campaign, "what did Thessaly say about the caravans?") == {lines[-2]}
    assert await campaign.log.speakers_called("Thessaly") == (["Ana"], set())
    with pytest.raises(NotFoundError, match=r"\(Thessaly Vorn is played by 'Ana': give the player's name\)"):
        await campaign.log.check_speaker("thessaly")
    # a first name no character with a player is called by alone filters nothing
    assert await campaign.log.character_called("Mira") is None
    assert await campaign.log.character_called("Crossing") is None
    assert lines[0] in await answering(campaign, "what did Tolvanek say about the caravans?")
