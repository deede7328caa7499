"""The memory API on the real embedded PostgreSQL: L1, L2, L3, review queue, campaigns."""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools

import numpy as np
import pytest

from memory.db import create_pool
from memory.errors import AlreadyDecidedError, AlreadyExistsError, InvalidInputError, NotFoundError
from memory.graph import KnowledgeGraph
from memory.graph.took_part import told_in
from memory.models import (
    ChunkIn,
    Correction,
    EntityIn,
    EntityType,
    EntryIn,
    Provenance,
    RelationshipIn,
    ReviewStatus,
    Source,
    Visibility,
)
from memory.replies import spelled_like_said
from memory.review import NEW_ITEMS_CHANNEL, watch_new_items
from memory.store import CampaignMemory, Memory


def vec(*hot: int, dim: int = 384) -> list[float]:
    v = np.zeros(dim, dtype=np.float32)
    for i in hot:
        v[i] = 1.0
    return (v / np.linalg.norm(v)).tolist()


# L1 ------------------------------------------------------------------------------------------------------


async def test_l1_write_single_and_batch_keeps_raw_text_and_order(campaign: CampaignMemory) -> None:
    s = await campaign.log.start_session("Session 1")
    fix = Correction(span="elder nacks", replacement="Eldrinax", start=8, end=19, score=0.91)
    one = await campaign.log.write(
        s.id,
        EntryIn(
            speaker="DM",
            text="We meet Eldrinax.",
            raw_text="We meet elder nacks.",
            start_s=1.0,
            end_s=2.5,
            ref="t:1",
            corrections=[fix],
        ),
    )
    batch = await campaign.log.write_many(
        s.id, [EntryIn(speaker="Vex", text=f"line {i}", start_s=3.0 + i) for i in range(3)]
    )
    assert one.seq == 1 and [e.seq for e in batch] == [2, 3, 4]
    assert one.raw_text == "We meet elder nacks." and one.text == "We meet Eldrinax."
    assert one.duration_s == pytest.approx(1.5) and one.ref == "t:1"
    assert one.corrections == [fix]
    assert batch[0].raw_text == "line 0"  # nothing corrected: raw = text


async def test_l1_replaying_a_line_does_not_duplicate_and_other_words_are_refused(campaign: CampaignMemory) -> None:
    s = await campaign.log.start_session("S")
    first = await campaign.log.write_many(s.id, [EntryIn(speaker="A", text="hello", seq=1)])
    again = await campaign.log.write_many(s.id, [EntryIn(speaker="A", text="hello", seq=1)])
    assert again[0].id == first[0].id
    # another transcript imported into the same session must not be silently dropped
    with pytest.raises(AlreadyExistsError, match="line 1 of this session already says 'hello'"):
        await campaign.log.write_many(s.id, [EntryIn(speaker="A", text="changed", seq=1)])
    assert [e.text for e in await campaign.log.session_entries(s.id)] == ["hello"]
    # the same words said by another speaker: the message said them twice, the second cut before its closing quote
    # ("not 'hello"), and the DM could not see what differed
    long = "The gate of Ironhold is shut, and the guard will not open it for anyone tonight."
    await campaign.log.write_many(s.id, [EntryIn(speaker="DM", text=long, seq=2)])
    with pytest.raises(AlreadyExistsError) as refused:
        await campaign.log.write_many(s.id, [EntryIn(speaker="Unknown speaker", text=long, seq=2)])
    assert str(refused.value) == (
        "line 2 of this session already says 'The gate of Ironhold is shut, and the guard will not open…' (DM), "
        "not 'The gate of Ironhold is shut, and the guard will not open…' (Unknown speaker): a different "
        "transcript needs a session of its own"
    )


async def test_l1_concurrent_appends_keep_every_line(campaign: CampaignMemory) -> None:
    s = await campaign.log.start_session("S")

    async def append(who: str) -> None:
        for i in range(10):
            await campaign.log.write_many(s.id, [EntryIn(speaker=who, text=f"{who} {i}")])

    await asyncio.gather(append("A"), append("B"), append("C"))
    entries = await campaign.log.session_entries(s.id)
    assert len(entries) == 30 and [e.seq for e in entries] == list(range(1, 31))


async def test_l1_recent_window(campaign: CampaignMemory) -> None:
    s = await campaign.log.start_session("S")
    await campaign.log.write_many(s.id, [EntryIn(speaker="A", text=f"t{i}", start_s=i * 10.0) for i in range(10)])
    recent = await campaign.log.recent(s.id, window_s=25)
    assert [e.text for e in recent] == ["t7", "t8", "t9"]
    assert [e.text for e in await campaign.log.recent(s.id, window_s=10, until_s=30)] == ["t2", "t3"]


async def test_l1_full_text_search_with_filters(campaign: CampaignMemory) -> None:
    s1 = await campaign.log.start_session("One")
    s2 = await campaign.log.start_session("Two")
    await campaign.log.write_many(
        s1.id,
        [
            EntryIn(speaker="DM", text="The dragons of Ironhold are waking.", start_s=5),
            EntryIn(speaker="Grog", text="I punch the dragon.", start_s=50),
        ],
    )
    await campaign.log.write(s2.id, EntryIn(speaker="DM", text="A dragon circles the tower.", start_s=7))
    assert len(await campaign.log.search("dragon")) == 3  # stemming: dragons ~ dragon
    assert [h.speaker for h in await campaign.log.search("dragon", speakers=["grog"])] == ["Grog"]
    assert {h.session_id for h in await campaign.log.search("dragon", session_id=s2.id)} == {s2.id}
    hits = await campaign.log.search("dragon", session_id=s1.id, start_s=0, end_s=10)
    assert [h.text for h in hits] == ["The dragons of Ironhold are waking."]
    assert await campaign.log.search("unicorn") == []
    assert await campaign.log.search('"; DROP TABLE session_entries; --') == []


async def test_l1_search_reads_through_invisible_characters(campaign: CampaignMemory) -> None:
    s = await campaign.log.start_session("Pasted")
    text = "Str\u200bahd waits in Bar\u00adovia, \u200fbeyond the mists\ufeff."
    await campaign.log.write(s.id, EntryIn(speaker="DM", text=text))
    for query in ("Strahd", "Barovia", "beyond", "Str\u200bahd", '"waits in Barovia"'):
        assert [h.text for h in await campaign.log.search(query)] == [text], query  # kept as written
    assert [h.text for h in await campaign.log.search("ahd")] == []  # no longer a word of its own


async def test_l1_search_matches_an_irregular_plural_with_its_singular(campaign: CampaignMemory) -> None:
    """The English stemmer makes "dwarv" of "dwarves" and "dwarf" of "dwarf": neither found the other."""
    s = await campaign.log.start_session("Kraghammer")
    lines = [
        "Are you a dwarf still?",
        "The Elves of Syngorn never forget.",
        "Two wolves circle the camp, and thieves hide their knives.",
        "Three men and two women wait with the children.",
        "She leaves at dawn.",
    ]
    await campaign.log.write_many(s.id, [EntryIn(speaker="DM", text=t) for t in lines])
    for query, found in (
        ("dwarves", 0),
        ("Dwarves'", 0),
        ("elf", 1),
        ("wolf", 2),
        ("thief", 2),
        ("knife", 2),
        ("woman", 3),
        ("man", 3),
        ("child", 3),
        ("leave", 4),  # "leaves" is also leave's: no leaf
    ):
        assert [h.text for h in await campaign.log.search(query)] == [lines[found]], query
    assert await campaign.log.search("leaf") == []


async def test_l1_search_reads_a_name_without_its_accents(campaign: CampaignMemory) -> None:
    """`search "Dun Kaldor"` found 1 of 7 lines, those writing it "Dûn Kaldor" not; "Ragnarök" missed "Ragnarok"."""
    s = await campaign.log.start_session("Night 1")
    lines = ["We reach Dûn Kaldor.", "Dun Kaldor will fall.", "Zoë hides the Ragnarök shard.", "Æthelric frowns."]
    await campaign.log.write_many(s.id, [EntryIn(speaker="DM", text=t) for t in lines])
    for query, found in (
        ("Dun Kaldor", [0, 1]),
        ("dûn kaldor", [0, 1]),
        ("Zoe", [2]),
        ("Ragnarok", [2]),
        ("Aethelric", [3]),
        ("Æthelric", [3]),
    ):
        assert sorted(h.text for h in await campaign.log.search(query)) == sorted(lines[i] for i in found), query


async def test_l1_search_reads_a_name_through_its_apostrophe(campaign: CampaignMemory) -> None:
    """`search Kalthar` missed "Kal'thar": the parser split the word at the apostrophe ("kal", "thar")."""
    s = await campaign.log.start_session("Night 1")
    lines = ["Kal'thar waits at the gate.", "Ask Kalthar.", "Kal’thar smiles.", "I don't know.", "Grog's axe."]
    await campaign.log.write_many(s.id, [EntryIn(speaker="DM", text=t) for t in lines])
    for query, found in (
        ("Kalthar", [0, 1, 2]),
        ("Kal'thar", [0, 1, 2]),
        ("Kal’thar", [0, 1, 2]),
        ("thar", []),
        ("don't", [3]),
        ('"don\'t know"', [3]),
        ("Grog", [4]),
    ):
        assert sorted(h.text for h in await campaign.log.search(query)) == sorted(lines[i] for i in found), query


async def test_l1_search_quoted_phrase_must_be_said(campaign: CampaignMemory) -> None:
    s = await campaign.log.start_session("C1E035")
    exact = "I have you right here between him and Lady Briarwood."
    await campaign.log.write_many(
        s.id,
        [
            EntryIn(speaker="Matt", text="Lady Briarwood turns, and between the pillars, Lady Briarwood waits."),
            EntryIn(speaker="Matt", text=exact),
            EntryIn(speaker="Liam", text="I shrug and look."),
            EntryIn(speaker="Matt", text="You shrug it off."),
        ],
    )
    # English full text drops "between him and": only the exact phrase's line is an answer
    assert [h.text for h in await campaign.log.search('"between him and Lady Briarwood"')] == [exact]
    assert [h.text for h in await campaign.log.search('"shrug it off"')] == ["You shrug it off."]
    assert [h.text for h in await campaign.log.search('"SHRUG  it off" -lady')] == ["You shrug it off."]
    either = await campaign.log.search('"shrug it off" or "him and lady"')
    assert sorted(h.text for h in either) == sorted([exact, "You shrug it off."])
    assert len(await campaign.log.search("shrug")) == 2  # unquoted words stay stemmed and stop-word free


# L2 ------------------------------------------------------------------------------------------------------


async def test_l2_upsert_and_nearest_with_filters(campaign: CampaignMemory) -> None:
    s1 = await campaign.log.start_session("One")
    s2 = await campaign.log.start_session("Two")
    await campaign.semantic.upsert(
        [
            ChunkIn(
                key="a",
                session_id=s1.id,
                text="dragon",
                embedding=vec(0),
                speakers=["DM"],
                entity_ids=[7],
                start_s=0,
                end_s=10,
            ),
            ChunkIn(key="b", session_id=s1.id, text="tavern", embedding=vec(1), speakers=["Vex"], start_s=10, end_s=20),
            ChunkIn(
                key="c", session_id=s2.id, text="dragon again", embedding=vec(0, 2), speakers=["DM"], start_s=0, end_s=5
            ),
        ]
    )
    hits = await campaign.semantic.nearest(vec(0), k=3)
    assert [h.key for h in hits] == ["a", "c", "b"]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert [h.key for h in await campaign.semantic.nearest(vec(0), session_id=s2.id)] == ["c"]
    assert [h.key for h in await campaign.semantic.nearest(vec(0), speakers=["Vex"])] == ["b"]
    # a speaker's windows of a session left out ("what did Grog say": the sessions their player played another)
    assert [h.key for h in await campaign.semantic.nearest(vec(0), speakers=["DM"], excluded={("dm", s1.id)})] == ["c"]
    assert [h.key for h in await campaign.semantic.nearest(vec(0), entity_id=7)] == ["a"]
    assert [h.key for h in await campaign.semantic.nearest(vec(0), start_s=12)] == ["b"]
    # upsert by key replaces in place
    await campaign.semantic.upsert([ChunkIn(key="b", session_id=s1.id, text="tavern brawl", embedding=vec(0))])
    chunks = await campaign.semantic.session_chunks(s1.id)
    assert len(chunks) == 2 and {c.text for c in chunks} == {"dragon", "tavern brawl"}


async def test_l2_rejects_wrong_dimension(campaign: CampaignMemory) -> None:
    s = await campaign.log.start_session("S")
    with pytest.raises(Exception, match="dimensions"):
        await campaign.semantic.upsert([ChunkIn(key="x", session_id=s.id, text="t", embedding=[1.0, 0.0])])


# L3 ------------------------------------------------------------------------------------------------------


async def test_entities_crud_case_insensitive_and_aliases(campaign: CampaignMemory) -> None:
    g = campaign.graph
    e = await g.add_entity(
        EntityIn(
            name="Eldrinax", type=EntityType.npc, aliases=["The Ember Wyrm", "Elly"], attributes={"race": "dragon"}
        )
    )
    assert (await g.get_entity("eldrinax")).id == e.id
    assert (await g.get_entity("the ember WYRM")).id == e.id
    with pytest.raises(AlreadyExistsError):
        await g.add_entity(EntityIn(name="ELDRINAX", type=EntityType.npc))
    with pytest.raises(AlreadyExistsError, match="alias"):
        await g.add_entity(EntityIn(name="Elly", type=EntityType.npc))
    with pytest.raises(AlreadyExistsError):
        await g.add_entity(EntityIn(name="Mira", type=EntityType.npc, aliases=["eldrinax"]))
    updated = await g.update_entity("elly", description="An old red dragon", attributes={"age": 900})
    assert updated.attributes == {"race": "dragon", "age": 900} and updated.description == "An old red dragon"
    with pytest.raises(NotFoundError, match="did you mean 'Eldrinax'"):
        await g.get_entity("Eldrinaks")
    await g.add_entity(EntityIn(name="Ironhold", type=EntityType.place))
    assert [x.name for x in await g.list_entities(EntityType.place)] == ["Ironhold"]
    assert len(await g.list_entities()) == 2
    await g.remove_entity("Eldrinax")
    assert await g.find_entity("Elly") is None


async def test_a_name_typed_with_another_apostrophe_or_the_is_found_when_it_means_one_entity(
    campaign: CampaignMemory,
) -> None:
    """Phones and Discord type ’ for ', and a table says "Nestled Nook Inn" for The Nestled Nook Inn: every lookup
    by name (`entity show` and the subcommands, MCP, slash) finds the one entity meant; did-you-mean lists an
    entity once, not its name and its alias as two."""
    g = campaign.graph
    vex = await g.add_entity(EntityIn(name="Vex'ahlia", type=EntityType.player))
    inn = await g.add_entity(EntityIn(name="The Nestled Nook Inn", type=EntityType.place))
    grog = await g.add_entity(EntityIn(name="Grog Strongjaw", type=EntityType.player))
    jazna = await g.add_entity(EntityIn(name="Jazna Grebin", type=EntityType.npc, aliases=["Countess Jazna Grebin"]))
    assert (await g.get_entity("Vex’ahlia")).id == vex.id
    assert (await g.get_entity("nestled nook inn")).id == inn.id
    assert (await g.get_entity("the Grog Strongjaw")).id == grog.id
    assert (await g.snapshot("Vex’ahlia")).entity.id == vex.id
    assert (await g.identity("Nestled Nook Inn"))[0].entity.id == inn.id
    assert (await g.update_entity("Vex’ahlia", description="A ranger")).description == "A ranger"
    await g.add_entity(EntityIn(name="Forge", type=EntityType.place))
    await g.add_entity(EntityIn(name="The Forge", type=EntityType.item))
    assert (await g.get_entity("forge")).type == EntityType.place  # the name as typed wins
    with pytest.raises(NotFoundError) as missing:
        await g.get_entity("Jazna")
    assert str(missing.value).count("Jazna Grebin") == 1 and jazna.aliases == ["Countess Jazna Grebin"]


async def test_a_name_typed_without_its_accents_is_found_and_hinted(campaign: CampaignMemory, memory: Memory) -> None:
    """`find_entities {"query": "cafe"}` found nothing for "Café Ünïcødé 東京", and `entity_card "cafe unicode 東京"`
    gave no did-you-mean: lookups and hints compared names with their accents."""
    from memory.mcp_tools import CampaignTools

    g = campaign.graph
    cafe = await g.add_entity(EntityIn(name="Café Ünïcødé 東京", type=EntityType.place))
    zoe = await g.add_entity(EntityIn(name="Zoë", type=EntityType.npc, aliases=["Łukasz's Daughter"]))
    assert (await g.get_entity("CAFE UNICØDE 東京")).id == cafe.id
    assert (await g.identity("zoe"))[0].entity.id == zoe.id
    assert (await g.snapshot("Łukasz’s daughter")).entity.id == zoe.id
    zoe_plain = await g.add_entity(EntityIn(name="Zoe", type=EntityType.player))
    assert (await g.get_entity("zoe")).id == zoe_plain.id and (await g.get_entity("Zoë")).id == zoe.id  # exact first
    assert (await g.get_entity("cafe unicode 東京")).id == cafe.id  # ø written o, as English writes it
    with pytest.raises(NotFoundError) as missing:
        await g.get_entity("cafe unicide 東京")
    assert "did you mean 'Café Ünïcødé 東京'" in str(missing.value)

    tools = CampaignTools(campaign, await memory.campaigns().get("Test Campaign"), dm=False)
    assert [e.name for e in (await tools.find_entities("cafe")).entities] == ["Café Ünïcødé 東京"]
    assert [e.name for e in (await tools.find_entities("zoe")).entities] == ["Zoe", "Zoë"]  # as typed first
    assert [e.name for e in (await tools.find_entities("Zoë")).entities] == ["Zoë", "Zoe"]
    with pytest.raises(NotFoundError) as hinted:
        await tools.entity_card("cafe unicide 東京")
    assert "did you mean 'Café Ünïcødé 東京'" in str(hinted.value)


async def test_a_name_typed_with_spaces_for_hyphens_or_plain_letters_for_ae_is_found(campaign: CampaignMemory) -> None:
    """docs/guide/entities.md: "hyphens may be left out or typed another way": "Mother of Thorns" found nothing
    for Mother-of-Thorns, nor "Aethelric" for Æthelric (NFKD leaves æ, œ, ð, þ whole)."""
    g = campaign.graph
    hag = await g.add_entity(EntityIn(name="Mother-of-Thorns", type=EntityType.npc))
    hold = await g.add_entity(EntityIn(name="Khaz-Morûn", type=EntityType.place))
    king = await g.add_entity(EntityIn(name="Æthelric", type=EntityType.npc))
    inn = await g.add_entity(EntityIn(name="Œil-de-Bœuf", type=EntityType.place))
    smith = await g.add_entity(EntityIn(name="Ðáin Stoneback", type=EntityType.npc))
    assert (await g.get_entity("Mother of Thorns")).id == hag.id
    assert (await g.get_entity("khaz morun")).id == hold.id
    assert (await g.get_entity("Aethelric")).id == king.id
    assert (await g.get_entity("Oeil de Boeuf")).id == inn.id
    assert (await g.get_entity("Dain Stoneback")).id == smith.id


async def test_entities_are_listed_by_name_accents_aside(campaign: CampaignMemory) -> None:
    # by code point, Æthelric and Ðáin came after Zoë
    for name in ("Zoë Ashgrove", "Æthelric", "Ðáin Stoneback", "Brennan", "The Keep", "Dûn Kaldor"):
        await campaign.graph.add_entity(EntityIn(name=name, type=EntityType.npc))
    listed = [e.name for e in await campaign.graph.list_entities()]
    assert listed == ["Æthelric", "Brennan", "Ðáin Stoneback", "Dûn Kaldor", "The Keep", "Zoë Ashgrove"]


async def test_a_name_spelled_like_another_entitys_is_added_and_the_dm_told(campaign: CampaignMemory) -> None:
    # "Zoe Ashgrove" beside "Zoë Ashgrove" was added silently: then "Zoe" named one, "zoe ashgrove" the other
    g = campaign.graph
    await g.add_entity(EntityIn(name="Zoë Ashgrove", type=EntityType.npc, aliases=["Zoë"]))
    plain = await g.add_entity(EntityIn(name="Zoe Ashgrove", type=EntityType.npc, aliases=["Zoe"]))
    assert await g.spelled_like(plain) == [("Zoe Ashgrove", "Zoë Ashgrove"), ("Zoe", "Zoë")]
    assert spelled_like_said([("Zoe", "Zoë")])[0].startswith("“Zoe” is spelled like “Zoë”")
    other = await g.add_entity(EntityIn(name="Mira", type=EntityType.npc))
    assert await g.spelled_like(other) == []


async def test_a_name_an_edit_gives_spelled_like_another_entitys_is_told(campaign: CampaignMemory) -> None:
    # renaming an entity "Zoe Ashgrove" beside "Zoë Ashgrove" was silent: `entity add` warned of it, `entity edit` not
    g = campaign.graph
    await g.add_entity(EntityIn(name="Zoë Ashgrove", type=EntityType.npc, aliases=["Zoë"]))
    before = await g.add_entity(EntityIn(name="Mira", type=EntityType.npc))
    renamed = await g.update_entity("Mira", new_name="Zoe Ashgrove")
    assert await g.spelled_like(renamed, before) == [("Zoe Ashgrove", "Zoë Ashgrove")]  # not "Mira", its old name
    described = await g.update_entity("Zoe Ashgrove", description="A herbalist.")
    assert await g.spelled_like(described, renamed) == []  # told once, when the name was given


async def test_a_secret_spelling_neither_hides_nor_betrays_the_public_entity_a_player_means(
    campaign: CampaignMemory,
) -> None:
    """A player's "The Whispering Gate" means the public Whispering Gate, though a secret entity has that very
    name: another spelling is looked for among what the reader may see, so the secret neither hides the public
    entity ("not found" would say something holds the name) nor is read."""
    g = campaign.graph
    gate = await g.add_entity(EntityIn(name="Whispering Gate", type=EntityType.place))
    hidden = await g.add_entity(
        EntityIn(name="The Whispering Gate", type=EntityType.faction, visibility=Visibility.secret)
    )
    assert (await g.snapshot("The Whispering Gate")).entity.id == gate.id
    assert (await g.snapshot("The Whispering Gate", include_secret=True)).entity.id == hidden.id
    assert (await g.snapshot("the whispering gate’s".removesuffix("’s"))).entity.id == gate.id


async def test_a_secret_name_spelled_as_a_public_one_leaves_the_public_one_plain_to_a_player(
    campaign: CampaignMemory, memory: Memory
) -> None:
    """A secret "The Whispering Gate" beside a public Whispering Gate masked the public one in a player's card
    ("Travellers say [secret] hums"), and so told that a secret one is spelled alike: a secret name that differs
    from one players read only by a leading "The", case or accents is theirs to read, as the public one's."""
    from memory.mcp_tools import CampaignTools

    g = campaign.graph
    said = "Travellers say the Whispering Gate hums, and the old Café Noir too."
    await g.add_entity(EntityIn(name="Whispering Gate", type=EntityType.place, description=said))
    await g.add_entity(EntityIn(name="The Whispering Gate", type=EntityType.faction, visibility=Visibility.secret))
    await g.add_entity(EntityIn(name="Cafe Noir", type=EntityType.place))
    hidden = await g.add_entity(EntityIn(name="Vrask", type=EntityType.npc, visibility=Visibility.secret))
    await g.update_entity("Vrask", new_name="Whispering Gates")  # its old name stays hidden
    await g.hide_names(hidden.id, ["café noir"])  # as a merge into it would
    tools = CampaignTools(campaign, await memory.campaigns().get("Test Campaign"), dm=False)
    for name in ("Whispering Gate", "the whispering gate"):
        card = await tools.entity_card(name)
        assert (card.name, card.description) == ("Whispering Gate", said)
    assert (await g.player_mask())("Vrask waits at the Whispering Gates.") == "[secret] waits at the [secret]."
    found = await tools.find_entities("whispering gate")
    assert [(e.name, e.secret) for e in found.entities] == [("Whispering Gate", False)]


async def test_a_renamed_public_entity_keeps_its_old_name_as_an_alias_so_its_mentions_stay(
    campaign: CampaignMemory,
) -> None:
    g = campaign.graph
    session = await campaign.log.start_session("S1")
    await campaign.log.write(session.id, EntryIn(speaker="DM", text="You reach Caddo Keep at dusk."))
    await g.add_entity(EntityIn(name="Caddo Keep", type=EntityType.place, aliases=["The Keep"]))
    hold = await g.update_entity("caddo keep", new_name="Caddo Hold")
    assert hold.aliases == ["Caddo Keep", "The Keep"] and (await g.get_entity("Caddo Keep")).id == hold.id
    last = await g.last_mention(hold)
    assert last is not None and last.text == "You reach Caddo Keep at dusk."
    assert (await g.update_entity("Caddo Hold", new_name="CADDO HOLD")).aliases == ["Caddo Keep", "The Keep"]
    assert (await g.update_entity("Caddo Hold", aliases=[])).aliases == []  # the DM's word clears it
    fort = await g.update_entity("Caddo Hold", new_name="Caddo Fort", aliases=["The Fort"])
    assert fort.aliases == ["The Fort"]  # the aliases the DM gives are all of them
    # aliases are public: a secret entity's old name would tell players who it is
    await g.add_entity(EntityIn(name="Vaskerrin Holt", type=EntityType.npc, visibility=Visibility.secret))
    assert (await g.update_entity("Vaskerrin Holt", new_name="Vaskerrin the Pale")).aliases == []
    shown = await g.add_entity(EntityIn(name="Mira", type=EntityType.npc))
    hidden = await g.update_entity(shown.name, new_name="Mirelle", visibility=Visibility.secret)
    assert hidden.aliases == []


async def test_relationships_neighbourhood_snapshot_and_secrets(campaign: CampaignMemory) -> None:
    g = campaign.graph
    mira = await g.add_entity(EntityIn(name="Mira", type=EntityType.npc))
    iron = await g.add_entity(EntityIn(name="Ironhold", type=EntityType.place))
    hand = await g.add_entity(EntityIn(name="Pale Hand", type=EntityType.faction, visibility=Visibility.secret))
    await g.add_relationship(RelationshipIn(source_id=mira.id, type="lives in", target_id=iron.id))
    await g.add_relationship(RelationshipIn(source_id=mira.id, type="member_of", target_id=hand.id))
    await g.add_relationship(RelationshipIn(source_id=mira.id, type="occupation", value="blacksmith"))
    public = await g.snapshot("mira")
    assert {r.describe() for r in public.relationships} == {"Mira —lives_in→ Ironhold", "Mira —occupation→ blacksmith"}
    assert [e.name for e in public.connected] == ["Ironhold"]
    dm_view = await g.snapshot("Mira", include_secret=True)
    assert {e.name for e in dm_view.connected} == {"Ironhold", "Pale Hand"}
    with pytest.raises(NotFoundError):
        await g.neighbourhood("Pale Hand")  # a secret entity does not exist for players


async def test_identical_fact_not_duplicated(campaign: CampaignMemory) -> None:
    g = campaign.graph
    a = await g.add_entity(EntityIn(name="A", type=EntityType.npc))
    b = await g.add_entity(EntityIn(name="B", type=EntityType.npc))
    r1 = await g.add_relationship(RelationshipIn(source_id=a.id, type="ally_of", target_id=b.id))
    r2 = await g.add_relationship(RelationshipIn(source_id=a.id, type="ally of", target_id=b.id))
    assert r1.id == r2.id


async def test_multi_hop_traversal_with_depth_limit(campaign: CampaignMemory) -> None:
    g = campaign.graph
    ids = [(await g.add_entity(EntityIn(name=f"N{i}", type=EntityType.npc))).id for i in range(6)]
    for a, b in itertools.pairwise(ids):  # a chain N0 - N1 - ... - N5, plus a cycle edge
        await g.add_relationship(RelationshipIn(source_id=a, type="knows", target_id=b))
    await g.add_relationship(RelationshipIn(source_id=ids[2], type="knows", target_id=ids[0]))
    steps = await g.traverse(ids[0], max_depth=3)
    assert {(s.name, s.depth) for s in steps} == {("N1", 1), ("N2", 1), ("N3", 2), ("N4", 3)}
    assert all(s.via for s in steps)
    with pytest.raises(InvalidInputError):
        await g.traverse(ids[0], max_depth=0)


async def test_a_players_walk_reads_the_facts_of_the_entities_it_reaches_not_every_fact(
    campaign: CampaignMemory,
) -> None:
    """Players read the facts as they know them (a secret fact does not end a public one for them), and each step
    of their walk found its entity's facts in all of the campaign's, read whole: 176 ms for 3 hops at 30,000 facts
    against the DM's 4 (bench/store.py). It reads them by index, as the DM's walk does, and reaches what it reached."""
    rng = np.random.default_rng(3)
    async with campaign.db.acquire() as conn:
        await conn.copy_records_to_table(
            "entities",
            columns=["campaign_id", "type", "name"],
            records=[(campaign.campaign_id, "npc", f"N{i}") for i in range(500)],
        )
        ids = [
            r["id"] for r in await conn.fetch("SELECT id FROM entities WHERE campaign_id = $1", campaign.campaign_id)
        ]
        pairs = {(int(a), int(b)) for a, b in rng.choice(ids, size=(3000, 2)) if a != b}
        await conn.copy_records_to_table(
            "relationships",
            columns=["campaign_id", "source_id", "type", "target_id", "visibility"],
            records=[(campaign.campaign_id, a, "knows", b, "secret" if a % 10 == 0 else "public") for a, b in pairs],
        )
        await conn.execute(  # history, some of it closed by a secret fact: players still see those
            """
            UPDATE relationships r SET valid_to = now(), superseded_by = n.id FROM relationships n
            WHERE r.campaign_id = $1 AND r.id % 7 = 0 AND n.campaign_id = $1 AND n.id = r.id + 1
            """,
            campaign.campaign_id,
        )
        await conn.execute("ANALYZE entities, relationships")
        start = ids[0]
        async with conn.transaction():
            graph = KnowledgeGraph(conn, campaign.campaign_id)
            read = "SELECT pg_stat_get_xact_tuples_returned('relationships'::regclass)"
            before = await conn.fetchval(read)
            steps = await graph.traverse(start, max_depth=2)
            read_by_players = await conn.fetchval(read) - before
    assert steps and read_by_players < len(pairs) / 4, read_by_players  # before: every fact, at every step
    # what they reach: the entities joined by the facts players read as current (some closed by a secret fact)
    seen = {(r.source_id, r.target_id) for e in ids for r in await campaign.graph.relationships_of(e) if r.target_id}
    reached, frontier = {start}, {start}
    for _ in range(2):
        frontier = {b for a, t in seen for x, b in ((a, t), (t, a)) if x in frontier} - reached
        reached |= frontier
    assert {s.entity_id for s in steps} == reached - {start}


async def test_contradiction_closes_old_fact_instead_of_deleting(campaign: CampaignMemory) -> None:
    g = campaign.graph
    mira = await g.add_entity(EntityIn(name="Mira", type=EntityType.npc))
    old = await g.add_relationship(RelationshipIn(source_id=mira.id, type="occupation", value="blacksmith"))
    new = await g.add_relationship(RelationshipIn(source_id=mira.id, type="occupation", value="mayor"))
    old_now = await g.get_relationship(old.id)
    assert old_now.valid_to is not None and old_now.superseded_by == new.id
    current = await g.relationships_of(mira.id)
    assert [r.value for r in current] == ["mayor"]
    history = await g.relationships_of(mira.id, include_history=True)
    assert [r.value for r in history] == ["mayor", "blacksmith"]


# review queue --------------------------------------------------------------------------------------------


async def test_watching_for_review_items_does_not_hold_up_closing_the_pool(fresh_dsn: str) -> None:
    pool = await create_pool(fresh_dsn, max_size=2)
    listening = asyncio.Event()
    watcher = asyncio.create_task(watch_new_items(pool, lambda _campaign_id: None, listening.set))
    async with asyncio.timeout(60):
        await listening.wait()  # holds its connection: what closing the pool must not wait for forever
    async with asyncio.timeout(5):
        await pool.close()  # waits for the listening connection to come back
        await watcher  # and the watch ends by itself


async def test_new_review_items_are_announced_once_per_transaction(memory: Memory, campaign: CampaignMemory) -> None:
    heard: list[int] = []
    marker = campaign.campaign_id + 1000  # no such campaign: a NOTIFY sent last, heard after all before it
    listening, marker_heard = asyncio.Event(), asyncio.Event()

    def on_new(campaign_id: int) -> None:
        heard.append(campaign_id)
        if campaign_id == marker:
            marker_heard.set()

    watcher = asyncio.create_task(watch_new_items(memory.pool, on_new, listening.set))
    try:
        async with asyncio.timeout(60):
            await listening.wait()
        low = Provenance(source=Source.stated, confidence=0.4)
        await campaign.graph.add_entity(EntityIn(name="Sure", type=EntityType.npc))  # accepted: nothing to say
        async with campaign.transaction() as tx:
            for name in ("Mira", "Brom"):
                await tx.graph.add_entity(
                    EntityIn(name=name, type=EntityType.npc, status=ReviewStatus.pending, provenance=low)
                )
        await memory.pool.execute("SELECT pg_notify($1, $2)", NEW_ITEMS_CHANNEL, str(marker))
        async with asyncio.timeout(60):
            await marker_heard.wait()  # notifications arrive in commit order: the transaction's are all in
        assert heard == [campaign.campaign_id, marker]  # one announcement for the transaction's two items
        assert await memory.guild_of(campaign.campaign_id) == 0
        assert await memory.guild_of(marker) is None
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)


async def test_review_queue_accept_reject_edit_oldest_first(campaign: CampaignMemory) -> None:
    g, q = campaign.graph, campaign.review
    mira = await g.add_entity(EntityIn(name="Mira", type=EntityType.npc))
    await g.add_relationship(RelationshipIn(source_id=mira.id, type="occupation", value="blacksmith"))
    guess = Provenance(source=Source.inferred, confidence=0.4, session_id=None)
    pending_e = await g.add_entity(
        EntityIn(name="Korvash", type=EntityType.npc, status=ReviewStatus.pending, provenance=guess)
    )
    fact = await g.add_relationship(
        RelationshipIn(source_id=mira.id, type="occupation", value="mayor", provenance=guess)
    )
    assert fact.status == ReviewStatus.pending
    # a pending contradiction does not close the accepted fact
    assert [r.value for r in await g.relationships_of(mira.id)] == ["blacksmith"]
    items = await q.pending()
    assert [i.ref for i in items] == [f"e{pending_e.id}", f"f{fact.id}"]
    assert await q.count() == 2

    accepted = await q.accept(f"f{fact.id}")
    assert accepted.fact and accepted.fact.status == ReviewStatus.accepted and accepted.fact.provenance.dm_confirmed
    assert [r.value for r in await g.relationships_of(mira.id)] == ["mayor"]
    with pytest.raises(AlreadyDecidedError, match="already accepted"):
        await q.accept(f"f{fact.id}")
    # an accepted fact found wrong is corrected in the graph: the error says how
    with pytest.raises(AlreadyDecidedError) as decided:
        await q.edit(f"f{fact.id}", value="archduke")
    assert str(decided.value) == (
        f"f{fact.id} was already accepted: Mira — occupation: mayor; to correct it, `entity link` the right one (this "
        "one is kept as history), or `entity unlink` it if it was never true"
    )

    edited = await q.edit(f"e{pending_e.id}", name="Korvax", description="A dwarven smith")
    assert edited.entity and edited.entity.name == "Korvax" and edited.entity.status == ReviewStatus.accepted
    assert await q.pending() == []

    other = await g.add_entity(EntityIn(name="Zed", type=EntityType.npc, status=ReviewStatus.pending, provenance=guess))
    dep = await g.add_relationship(
        RelationshipIn(source_id=other.id, type="ally_of", target_id=mira.id, provenance=guess)
    )
    await q.reject(f"e{other.id}")
    assert (await g.get_relationship(dep.id)).status == ReviewStatus.rejected
    assert await g.find_entity("Zed") is None
    # the rejected name is free again for the DM
    await g.add_entity(EntityIn(name="Zed", type=EntityType.npc))
    with pytest.raises(InvalidInputError):
        await q.accept("x1")
    with pytest.raises(NotFoundError):
        await q.accept("f999999")


async def test_accepting_fact_accepts_its_pending_endpoints(campaign: CampaignMemory) -> None:
    g, q = campaign.graph, campaign.review
    guess = Provenance(source=Source.inferred, confidence=0.3)
    a = await g.add_entity(EntityIn(name="A", type=EntityType.npc, status=ReviewStatus.pending, provenance=guess))
    b = await g.add_entity(EntityIn(name="B", type=EntityType.place))
    f = await g.add_relationship(RelationshipIn(source_id=a.id, type="lives_in", target_id=b.id, provenance=guess))
    await q.accept(f"f{f.id}")
    assert (await g.get_entity("A")).status == ReviewStatus.accepted


# campaigns and isolation ---------------------------------------------------------------------------------


async def test_campaign_lifecycle(memory: Memory) -> None:
    guild = memory.campaigns(guild_id=42)
    first = await guild.create("Sunken Crown")
    second = await guild.create("Side Quest")
    assert first.active and not second.active  # the first campaign becomes the active one
    with pytest.raises(AlreadyExistsError):
        await guild.create("sunken crown")
    await guild.activate("side quest")
    assert (await guild.active()).name == "Side Quest"  # type: ignore[union-attr]
    assert [c.name for c in await guild.list()] == ["Side Quest", "Sunken Crown"]
    cm = memory.campaign(second.id)
    s = await cm.log.start_session("S")
    await cm.log.write(s.id, EntryIn(speaker="A", text="hello"))
    await cm.graph.add_entity(EntityIn(name="X", type=EntityType.item))
    await guild.delete("Side Quest")
    assert await memory.pool.fetchval("SELECT count(*) FROM session_entries") == 0
    assert await memory.pool.fetchval("SELECT count(*) FROM entities") == 0
    assert [c.name for c in await guild.list()] == ["Sunken Crown"]
    # another guild sees none of it
    assert await memory.campaigns(guild_id=7).list() == []
    with pytest.raises(NotFoundError):
        await memory.campaigns(guild_id=7).get("Sunken Crown")
    with pytest.raises(NotFoundError, match=f"no campaign with id {first.id}"):
        await memory.campaigns(guild_id=7).get_by_id(first.id)
    # a forged button's id past bigint is missing like any other, not a database error
    with pytest.raises(NotFoundError, match=r"no campaign with id 9{30}$"):
        await guild.get_by_id(int("9" * 30))


async def test_campaigns_are_isolated(memory: Memory) -> None:
    ca = await memory.campaigns(1).create("A")
    cb = await memory.campaigns(2).create("B")
    a, b = memory.campaign(ca.id), memory.campaign(cb.id)
    sa = await a.log.start_session("S")
    await a.log.write(sa.id, EntryIn(speaker="DM", text="the secret dragon hoard"))
    await a.semantic.upsert([ChunkIn(key="k", session_id=sa.id, text="hoard", embedding=vec(3))])
    x = await a.graph.add_entity(EntityIn(name="Eldrinax", type=EntityType.npc))
    guess = Provenance(source=Source.inferred, confidence=0.2)
    await a.graph.add_entity(
        EntityIn(name="Pending", type=EntityType.npc, status=ReviewStatus.pending, provenance=guess)
    )

    assert await b.log.search("dragon") == []
    assert await b.semantic.nearest(vec(3)) == []
    assert await b.graph.find_entity("Eldrinax") is None
    assert await b.graph.list_entities(status=None) == []
    assert await b.review.pending() == []
    with pytest.raises(NotFoundError):
        await b.log.session(sa.id)
    with pytest.raises(NotFoundError):
        await b.graph.get_entity_by_id(x.id)
    # B cannot write into A's session or link to A's entity: the schema refuses cross-campaign references
    with pytest.raises(Exception, match="foreign key"):
        await b.log.write(sa.id, EntryIn(speaker="X", text="intrusion"))
    y = await b.graph.add_entity(EntityIn(name="Y", type=EntityType.npc))
    with pytest.raises(NotFoundError):
        await b.graph.add_relationship(RelationshipIn(source_id=y.id, type="knows", target_id=x.id))
    with pytest.raises(NotFoundError):
        await b.review.accept(f"e{x.id}")


async def test_transaction_rolls_back_everything(campaign: CampaignMemory) -> None:
    with pytest.raises(RuntimeError):
        async with campaign.transaction() as tx:
            await tx.graph.add_entity(EntityIn(name="Ghost", type=EntityType.npc))
            raise RuntimeError("boom")
    assert await campaign.graph.find_entity("Ghost") is None


# found in review --------------------------------------------------------------------------------------------


async def test_an_accepted_copy_of_a_pending_fact_accepts_it_instead_of_duplicating(campaign: CampaignMemory) -> None:
    g = campaign.graph
    a = await g.add_entity(EntityIn(name="Alice", type=EntityType.npc))
    b = await g.add_entity(EntityIn(name="Bob", type=EntityType.npc))
    guess = Provenance(source=Source.inferred, confidence=0.3, session_id=7, timestamp=12.5, entry_ids=[41, 42])
    pending = await g.add_relationship(RelationshipIn(source_id=a.id, type="ally_of", target_id=b.id, provenance=guess))
    stated, created = await g.ensure_relationship(RelationshipIn(source_id=a.id, type="ally_of", target_id=b.id))
    assert stated.id == pending.id and created and stated.status == ReviewStatus.accepted
    assert [r.id for r in await g.relationships_of(a.id)] == [pending.id]
    assert await campaign.review.pending() == []
    # the DM vouches for it now; where it was said is kept, for recall to cite
    p = stated.provenance
    assert (p.source, p.confidence, p.session_id, p.timestamp, p.entry_ids) == (Source.dm, 1.0, 7, 12.5, [41, 42])


async def test_editing_a_review_item_into_a_recorded_fact_is_refused_plainly(campaign: CampaignMemory) -> None:
    g = campaign.graph
    brom = await g.add_entity(EntityIn(name="Brom", type=EntityType.npc))
    await g.add_relationship(RelationshipIn(source_id=brom.id, type="title", value="Sir"))
    unsure = Provenance(source=Source.stated, confidence=0.4)
    typo = await g.add_relationship(RelationshipIn(source_id=brom.id, type="titel", value="Sir", provenance=unsure))
    with pytest.raises(AlreadyExistsError, match="already recorded; reject this one instead"):
        await campaign.review.edit(f"f{typo.id}", type="title")
    assert (await g.get_relationship(typo.id)).status == ReviewStatus.pending  # nothing changed


async def test_editing_a_review_item_follows_the_rules_a_fact_is_added_by(campaign: CampaignMemory) -> None:
    """A control character in an edited type was stored, and then the campaign could not be exported."""
    g = campaign.graph
    brom = await g.add_entity(EntityIn(name="Brom", type=EntityType.npc))
    unsure = Provenance(source=Source.stated, confidence=0.4)
    fact = await g.add_relationship(RelationshipIn(source_id=brom.id, type="title", value="Sir", provenance=unsure))
    with pytest.raises(InvalidInputError, match="type contains U\\+202E RIGHT-TO-LEFT OVERRIDE, an invisible"):
        await campaign.review.edit(f"f{fact.id}", type="sworn\u202eto")
    with pytest.raises(InvalidInputError, match="type has 101 characters"):
        await campaign.review.edit(f"f{fact.id}", type="x" * 101)
    with pytest.raises(InvalidInputError, match="value contains a NUL character"):
        await campaign.review.edit(f"f{fact.id}", value="Sir\x00")
    with pytest.raises(InvalidInputError, match="value has 501 characters; a fact's value has at most 500"):
        await campaign.review.edit(f"f{fact.id}", value="S" * 501)  # as /entity link and the Edit box refuse it
    assert (await g.get_relationship(fact.id)).status == ReviewStatus.pending  # nothing changed
    edited = await campaign.review.edit(f"f{fact.id}", type="Sworn To")
    assert edited.fact is not None and edited.fact.type == "sworn_to"


async def test_accepting_an_older_fact_does_not_undo_a_newer_one(campaign: CampaignMemory) -> None:
    g = campaign.graph
    npc = await g.add_entity(EntityIn(name="Old Tom", type=EntityType.npc))
    guess = Provenance(source=Source.inferred, confidence=0.3)
    alive = await g.add_relationship(RelationshipIn(source_id=npc.id, type="status", value="alive", provenance=guess))
    dead = await g.add_relationship(RelationshipIn(source_id=npc.id, type="status", value="dead"))
    await campaign.review.accept(f"f{alive.id}")
    assert [r.value for r in await g.relationships_of(npc.id)] == ["dead"]
    history = await g.get_relationship(alive.id)
    assert history.status == ReviewStatus.accepted and history.superseded_by == dead.id and history.valid_to


async def test_linking_an_entity_to_itself_is_refused(campaign: CampaignMemory) -> None:
    await campaign.graph.add_entity(EntityIn(name="Gorrim Ashfoot", type=EntityType.npc, aliases=["Gorrim"]))
    with pytest.raises(InvalidInputError, match="'gorrim' is 'Gorrim Ashfoot' itself: a relationship connects two"):
        await campaign.graph.link("Gorrim Ashfoot", "lives_in", "gorrim")
    assert await campaign.graph.relationships_of((await campaign.graph.get_entity("Gorrim")).id) == []


async def test_linking_a_value_records_a_change_in_the_world_and_says_what_it_closed(campaign: CampaignMemory) -> None:
    """The DM could record a new state ("status: dead") only with a campaign file: link wanted a target entity."""
    g = campaign.graph
    xeth = await g.add_entity(EntityIn(name="Xethrilaun", type=EntityType.npc))
    await g.add_entity(EntityIn(name="Caddo Keep", type=EntityType.place))
    await g.add_entity(EntityIn(name="The Mill", type=EntityType.place))
    alive = await g.link("xethrilaun", "Status", value=" alive ")
    assert (alive.describe(), alive.closed) == ("Linked Xethrilaun is alive", [])
    fact = alive.relationship
    assert (fact.status, fact.provenance.source, fact.provenance.dm_confirmed) == (
        ReviewStatus.accepted,
        Source.dm,
        True,
    )
    await g.link("Xethrilaun", "mood", value="calm")

    dead = await g.link("Xethrilaun", "status", value="dead", secret=True)
    assert dead.describe() == "Linked Xethrilaun is dead; closed: Xethrilaun is alive"
    assert dead.relationship.visibility == Visibility.secret
    history = await g.get_relationship(fact.id)
    assert history.valid_to is not None and history.superseded_by == dead.relationship.id
    current = await g.relationships_of(xeth.id, include_secret=True)
    assert sorted(r.describe() for r in current) == ["Xethrilaun —mood→ calm", "Xethrilaun —status→ dead"]
    assert (await g.link("Xethrilaun", "status", value="dead")).describe() == "Already linked: Xethrilaun is dead"
    # a single-valued edge says what it closed too; of a single-valued type, a value closes an edge and an edge a
    # value (one home at a time), and unlinking the mistaken one reopens the other
    await g.link("Xethrilaun", "home", "Caddo Keep")
    moved = await g.link("Xethrilaun", "home", "The Mill")
    assert moved.describe() == "Linked Xethrilaun home The Mill; closed: Xethrilaun home Caddo Keep"
    road = await g.link("Xethrilaun", "home", value="the road")
    assert road.describe() == "Linked Xethrilaun — home: the road; closed: Xethrilaun home The Mill"
    back = await g.link("Xethrilaun", "home", "The Mill")
    assert [r.describe() for r in back.closed] == ["Xethrilaun —home→ the road"]
    assert [r.describe() for r in (await g.unlink("Xethrilaun", "home", "The Mill")).reopened] == [
        "Xethrilaun —home→ the road"
    ]
    # of any other type a value settles values only: "knows: Elvish" does not close "knows The Mill"
    await g.link("Xethrilaun", "knows", "The Mill")
    assert (await g.link("Xethrilaun", "knows", value="Elvish")).closed == []
    # the value as a campaign file takes it (NFC), and unlink undoes it
    assert (await g.link("Xethrilaun", "title", value="Zoe\u0308's bane")).relationship.value == "Zoë's bane"
    assert [r.id for r in (await g.unlink("Xethrilaun", "status", "dead")).reopened] == [fact.id]

    with pytest.raises(InvalidInputError, match="not both"):
        await g.link("Xethrilaun", "home", "Caddo Keep", value="the road")
    with pytest.raises(InvalidInputError, match=r"^give a target \(another entity\) or a value"):
        await g.link("Xethrilaun", "status")
    with pytest.raises(InvalidInputError, match="value: must not be empty"):
        await g.link("Xethrilaun", "status", value="  ")


async def test_making_a_public_fact_secret_warns_of_the_stale_fact_players_read_again(campaign: CampaignMemory) -> None:
    """A secret fact ends no public one for players, so hiding the allegiance they knew brings back the one it had
    replaced: the DM is told what players now read instead (the rule itself stays)."""
    g = campaign.graph
    balcor = await g.add_entity(EntityIn(name="Lord Balcor", type=EntityType.npc))
    for faction in ("The Iron Circle", "The Silver Hand"):
        await g.add_entity(EntityIn(name=faction, type=EntityType.faction))
    await g.link("Lord Balcor", "allegiance", "The Iron Circle")
    await g.link("Lord Balcor", "allegiance", "The Silver Hand")
    hidden = await g.link("Lord Balcor", "allegiance", "The Silver Hand", secret=True)
    assert [r.describe() for r in hidden.players_read] == ["Lord Balcor —allegiance→ The Iron Circle"]
    assert hidden.describe() == (
        "Now secret: Lord Balcor allegiance The Silver Hand\nwarning: players now read instead the fact it had "
        "replaced: Lord Balcor allegiance The Iron Circle (link a public fact of its kind to tell them otherwise)"
    )
    assert [r.target_name for r in await g.relationships_of(balcor.id)] == ["The Iron Circle"]
    # made public again, or a fact that replaced nothing: no warning
    assert (await g.link("Lord Balcor", "allegiance", "The Silver Hand", secret=False)).players_read == []
    await g.link("Lord Balcor", "mood", value="calm")
    assert (await g.link("Lord Balcor", "mood", value="calm", secret=True)).players_read == []


async def test_a_fact_said_again_in_a_later_session_cites_that_line_too(campaign: CampaignMemory) -> None:
    """Night 3 repeats Night 2's "Mira has the Sunblade": one fact, as before, but its evidence gains Night 3's line
    (review showed only Night 2's); where and when it was first heard stay."""
    g = campaign.graph
    mira = await g.add_entity(EntityIn(name="Mira", type=EntityType.npc))
    blade = await g.add_entity(EntityIn(name="Sunblade", type=EntityType.item))
    lines = []
    for month, title in ((3, "Night 2"), (4, "Night 3")):
        night = await campaign.log.start_session(title, started_at=dt.datetime(2025, month, 1, 20, tzinfo=dt.UTC))
        (entry,) = await campaign.log.write_many(night.id, [EntryIn(speaker="DM", text="Mira has the Sunblade.")])
        lines.append((night.id, entry.id))
    facts = []
    for session_id, entry_id in lines:
        said = Provenance(source=Source.stated, confidence=0.4, session_id=session_id, entry_ids=[entry_id])
        facts.append(
            await g.add_relationship(RelationshipIn(source_id=mira.id, type="has", target_id=blade.id, provenance=said))
        )
    first, again = facts
    assert again.id == first.id and again.provenance.entry_ids == [entry for _, entry in lines]
    stored = await g.get_relationship(first.id)
    assert (stored.provenance.entry_ids, stored.provenance.session_id) == ([e for _, e in lines], lines[0][0])
    assert stored.valid_from == first.valid_from
    assert (await campaign.review.get(f"f{first.id}")).lines == 2


async def test_a_fact_heard_in_an_older_session_imported_late_is_history_once_accepted(
    campaign: CampaignMemory,
) -> None:
    """A session played last year and imported today said Corvin lives in Varrowmere; the DM has since recorded
    that he lives in the Marsh. Accepted, the old fact is true from when it was said: history, not current."""
    g = campaign.graph
    corvin = await g.add_entity(EntityIn(name="Corvin", type=EntityType.npc))
    for place in ("Varrowmere", "Marsh", "Saltmere"):
        await g.add_entity(EntityIn(name=place, type=EntityType.place))
    marsh = (await g.link("Corvin", "lives_in", "Marsh")).relationship
    old = await campaign.log.start_session("Prologue", started_at=dt.datetime(2025, 1, 1, 20, tzinfo=dt.UTC))
    said = Provenance(source=Source.stated, confidence=0.5, session_id=old.id, timestamp=90.0)
    heard, _ = await g.ensure_relationship(
        RelationshipIn(
            source_id=corvin.id, type="lives_in", target_id=(await g.get_entity("Varrowmere")).id, provenance=said
        )
    )
    assert heard.valid_from == dt.datetime(2025, 1, 1, 20, 1, 30, tzinfo=dt.UTC)
    accepted = await campaign.review.accept(f"f{heard.id}")
    assert accepted.settled() == "kept as history, as a later fact stands: Corvin lives in Marsh"
    assert [r.describe() for r in await g.relationships_of(corvin.id)] == ["Corvin —lives_in→ Marsh"]
    history = await g.get_relationship(heard.id)
    assert history.status == ReviewStatus.accepted and history.valid_to is not None
    assert history.superseded_by == marsh.id
    # heard in a session played since, it is the news: it closes the Marsh
    now = await campaign.log.start_session("Night 5")
    said = Provenance(source=Source.stated, confidence=0.5, session_id=now.id, timestamp=5.0)
    moved, _ = await g.ensure_relationship(
        RelationshipIn(
            source_id=corvin.id, type="lives_in", target_id=(await g.get_entity("Saltmere")).id, provenance=said
        )
    )
    accepted = await campaign.review.accept(f"f{moved.id}")
    assert accepted.settled() == "closed: Corvin lives in Marsh"
    assert [r.describe() for r in await g.relationships_of(corvin.id)] == ["Corvin —lives_in→ Saltmere"]
    assert (await campaign.review.get(f"f{moved.id}")).settled() == ""  # said once, when it is accepted
    # a time no session lasts (a bad transcript) is no date PostgreSQL cannot write: it is said now
    said = Provenance(source=Source.stated, confidence=0.5, session_id=now.id, timestamp=1.7e15)
    odd, _ = await g.ensure_relationship(
        RelationshipIn(source_id=corvin.id, type="status", value="odd", provenance=said)
    )
    assert odd.valid_from <= dt.datetime.now(dt.UTC)


async def test_unlinking_a_mistaken_fact_reopens_what_it_closed_unless_something_current_contradicts_it(
    campaign: CampaignMemory, memory: Memory
) -> None:
    """Unlink is an undo ("dead" was accepted by mistake: "alive" comes back), not the end of a fact."""
    g = campaign.graph
    tom = await g.add_entity(EntityIn(name="Old Tom", type=EntityType.npc))
    keep = await g.add_entity(EntityIn(name="Caddo Keep", type=EntityType.place))
    mill = await g.add_entity(EntityIn(name="The Mill", type=EntityType.place))
    alive = await g.add_relationship(RelationshipIn(source_id=tom.id, type="status", value="alive"))
    await g.add_relationship(RelationshipIn(source_id=tom.id, type="status", value="dead"))
    home = await g.add_relationship(RelationshipIn(source_id=tom.id, type="lives_in", target_id=keep.id))
    await g.add_relationship(RelationshipIn(source_id=tom.id, type="lives_in", target_id=mill.id))
    other = memory.campaign((await memory.campaigns().create("Other")).id)
    with pytest.raises(NotFoundError):  # scoped: another campaign's unlink finds nothing of this one
        await other.graph.unlink("Old Tom", "status", "dead")

    undone = await g.unlink("old tom", "Status", "Dead")
    assert undone.describe() == "Unlinked Old Tom is dead; current again: Old Tom is alive"
    assert [r.id for r in undone.reopened] == [alive.id]
    assert [r.id for r in (await g.unlink("Old Tom", "lives_in", "The Mill")).reopened] == [home.id]
    reopened = await g.get_relationship(alive.id)
    assert reopened.valid_to is None and reopened.superseded_by is None
    assert sorted(r.describe() for r in await g.relationships_of(tom.id)) == [
        "Old Tom —lives_in→ Caddo Keep",
        "Old Tom —status→ alive",
    ]

    # alive → dead → undead: "dead" is history, which unlink leaves alone (it undoes only a current fact)
    dead = await g.add_relationship(RelationshipIn(source_id=tom.id, type="status", value="dead"))
    undead = await g.add_relationship(RelationshipIn(source_id=tom.id, type="status", value="undead"))
    with pytest.raises(NotFoundError, match=r"^Old Tom has no current 'status' fact of dead: unlink undoes a current"):
        await g.unlink("Old Tom", "status", "dead")
    history = await g.get_relationship(dead.id)
    assert history.status == ReviewStatus.accepted and history.superseded_by == undead.id
    assert [r.value for r in await g.relationships_of(tom.id) if r.type == "status"] == ["undead"]

    # "dead" heard again waits for review: the closed copy is not made current beside it (migration 0004)
    heard = Provenance(source=Source.stated, confidence=0.3)
    again = await g.add_relationship(RelationshipIn(source_id=tom.id, type="status", value="dead", provenance=heard))
    assert again.status == ReviewStatus.pending
    assert (await g.unlink("Old Tom", "status", "undead")).reopened == []
    assert (await g.get_relationship(dead.id)).valid_to is not None


async def test_unlinking_a_value_written_twice_in_other_cases_removes_both_and_reopens_what_they_closed(
    campaign: CampaignMemory,
) -> None:
    # "dead" closed "alive", "Dead" closed "dead": unlink matches both, and the one removed first must not be
    # reopened by the other's removal (it used to fail the whole unlink: no relationship with that id)
    g = campaign.graph
    tom = await g.add_entity(EntityIn(name="Old Tom", type=EntityType.npc))
    alive = await g.add_relationship(RelationshipIn(source_id=tom.id, type="status", value="alive"))
    await g.add_relationship(RelationshipIn(source_id=tom.id, type="status", value="dead"))
    await g.add_relationship(RelationshipIn(source_id=tom.id, type="status", value="Dead"))
    undone = await g.unlink("Old Tom", "status", "dead")
    assert sorted(r.value or "" for r in undone.removed) == ["Dead", "dead"]
    assert [r.id for r in undone.reopened] == [alive.id]
    assert [r.value for r in await g.relationships_of(tom.id)] == ["alive"]


async def test_entity_writes_are_all_or_nothing_and_rejected_names_are_free(campaign: CampaignMemory) -> None:
    g = campaign.graph
    await g.add_entity(EntityIn(name="Xan", type=EntityType.npc, aliases=["Xanny"]))
    await g.add_entity(EntityIn(name="Grim", type=EntityType.npc, aliases=["Old Grim"]))
    with pytest.raises(AlreadyExistsError):
        await g.update_entity("Xan", new_name="Xander", aliases=["Old Grim"])
    xan = await g.get_entity("Xan")
    assert (xan.name, xan.aliases) == ("Xan", ["Xanny"])  # neither renamed nor stripped of its alias
    guess = Provenance(source=Source.inferred, confidence=0.3)
    proposal = EntityIn(
        name="Korv", type=EntityType.npc, aliases=["The Smith"], status=ReviewStatus.pending, provenance=guess
    )
    p = await g.add_entity(proposal)
    await campaign.review.reject(f"e{p.id}")
    await g.add_entity(EntityIn(name="Brann", type=EntityType.npc, aliases=["The Smith"]))  # the alias is free


async def test_a_refused_review_decision_changes_nothing(campaign: CampaignMemory) -> None:
    g = campaign.graph
    guess = Provenance(source=Source.inferred, confidence=0.3)
    a = await g.add_entity(EntityIn(name="Pend", type=EntityType.npc, status=ReviewStatus.pending, provenance=guess))
    b = await g.add_entity(EntityIn(name="Gone", type=EntityType.npc, status=ReviewStatus.pending, provenance=guess))
    f = await g.add_relationship(RelationshipIn(source_id=a.id, type="knows", target_id=b.id, provenance=guess))
    await g.set_entity_status(b.id, ReviewStatus.rejected, dm_confirmed=True)
    with pytest.raises(InvalidInputError, match="'Gone' was rejected"):
        await campaign.review.accept(f"f{f.id}")
    assert (await g.get_entity_by_id(a.id)).status == ReviewStatus.pending  # not half-accepted


async def test_creating_an_active_campaign_switches_to_it(memory: Memory) -> None:
    guild = memory.campaigns(guild_id=5)
    await guild.create("First")
    second = await guild.create("Second", activate=True)
    assert second.active and (await guild.active()).name == "Second"  # type: ignore[union-attr]
    assert [c.name for c in await guild.list() if c.active] == ["Second"]
    # and back: the older row comes first in the table, where one UPDATE doing both broke the unique index
    await guild.activate("First")
    await guild.activate("Second")
    await guild.activate("first")
    assert [c.name for c in await guild.list() if c.active] == ["First"]


async def test_unposted_items_are_each_posted_once_however_old(memory: Memory, campaign: CampaignMemory) -> None:
    guess = Provenance(source=Source.inferred, confidence=0.3)
    # a long transaction (an extraction waiting for its LLM) begins first and commits last: its item is older
    # than items posted while it ran
    async with memory.pool.acquire() as conn, conn.transaction():
        began = await conn.fetchval("SELECT now()")
        async with campaign.transaction() as tx:  # one transaction: one created_at for all
            for i in range(7):
                await tx.graph.add_entity(
                    EntityIn(name=f"Twin {i}", type=EntityType.npc, status=ReviewStatus.pending, provenance=guess)
                )
        first = await campaign.review.pending(limit=5, unposted=True)
        for item in first:
            await campaign.review.mark_posted(item)
        await conn.execute(
            "INSERT INTO entities (campaign_id, name, type, status) VALUES ($1, 'Late', 'npc', 'pending')",
            campaign.campaign_id,
        )
    rest = await campaign.review.pending(limit=5, unposted=True)
    assert [i.entity.name for i in first if i.entity] == [f"Twin {i}" for i in range(5)]
    assert [i.entity.name for i in rest if i.entity] == ["Late", "Twin 5", "Twin 6"]
    assert rest[0].created_at == began < first[0].created_at
    await campaign.review.mark_posted(first[0])  # again: no harm
    assert len(await campaign.review.pending(limit=50)) == 8  # the queue itself is unchanged


async def test_concurrent_writers_of_the_same_fact_store_one_copy(pool, campaign: CampaignMemory) -> None:
    g = campaign.graph
    a = await g.add_entity(EntityIn(name="Alice", type=EntityType.npc))
    b = await g.add_entity(EntityIn(name="Bob", type=EntityType.npc))
    fact = RelationshipIn(source_id=a.id, type="ally_of", target_id=b.id)
    results = await asyncio.gather(*(g.ensure_relationship(fact) for _ in range(8)))
    assert len({r.id for r, _ in results}) == 1 and sum(created for _, created in results) == 1
    assert await pool.fetchval("SELECT count(*) FROM relationships") == 1


async def test_l2_drop_deletes_windows_that_no_longer_exist(campaign: CampaignMemory) -> None:
    s1 = await campaign.log.start_session("One")
    s2 = await campaign.log.start_session("Two")
    await campaign.semantic.upsert(
        [
            ChunkIn(key=k, session_id=s.id, text=k, embedding=vec(i))
            for i, (k, s) in enumerate([("a", s1), ("b", s1), ("c", s2)])
        ]
    )
    assert await campaign.semantic.drop(s1.id, ["b", "c", "gone"]) == 1
    assert [c.key for c in await campaign.semantic.session_chunks(s1.id)] == ["a"]
    assert [c.key for c in await campaign.semantic.session_chunks(s2.id)] == ["c"]  # other sessions untouched


async def test_names_refused_say_why_for_a_dm(memory: Memory, campaign: CampaignMemory) -> None:
    heard = Provenance(source=Source.inferred, confidence=0.4)
    mira = await campaign.graph.add_entity(
        EntityIn(name="Mira", type=EntityType.npc, status=ReviewStatus.pending, provenance=heard)
    )
    with pytest.raises(AlreadyExistsError, match=rf"waiting for review as e{mira.id}: accept, edit or reject it"):
        await campaign.graph.add_entity(EntityIn(name="mira", type=EntityType.npc))
    # blank (here: ideographic spaces) is a user's mistake with a message, not a crash
    with pytest.raises(InvalidInputError, match="name must not be empty"):
        await memory.campaigns(guild_id=9).create("\u3000\u3000")


async def test_a_name_check_reads_the_names_asked_for_not_the_whole_campaign(campaign: CampaignMemory) -> None:
    # Every entity written checks that its names are free; scanning the campaign for that made a load of 6,000
    # entities take 80 s instead of 17.
    await campaign.db.execute(
        """
        WITH e AS (
            INSERT INTO entities (campaign_id, type, name)
            SELECT $1, 'npc', 'Entity ' || i FROM generate_series(1, 3000) i RETURNING id, name
        )
        INSERT INTO entity_aliases (campaign_id, entity_id, alias) SELECT $1, id, 'Alias of ' || name FROM e
        """,
        campaign.campaign_id,
    )
    await campaign.db.execute("ANALYZE entities, entity_aliases")
    read = "SELECT coalesce(sum(seq_tup_read + coalesce(idx_tup_fetch, 0)), 0) FROM pg_stat_xact_user_tables"
    async with campaign.transaction() as tx:
        before = await tx.db.fetchval(read)
        await tx.graph.add_entity(EntityIn(name="Newcomer", type=EntityType.npc, aliases=["The New One"]))
        with pytest.raises(AlreadyExistsError, match="'Alias of Entity 2999' is already an alias of 'Entity 2999'"):
            await tx.graph.add_entity(EntityIn(name="Alias of Entity 2999", type=EntityType.npc))
        assert await tx.db.fetchval(read) - before < 50


async def test_the_lines_saying_a_campaign_files_names_are_found_by_the_index_not_by_reading_every_line(
    campaign: CampaignMemory,
) -> None:
    # Who took part, for a file's names loaded after the sessions: the names were OR'd into one full-text query of
    # 200, and the planner read every line against all of them (24 s a query at 100 sessions). One probe a name.
    syllables = "ba de fi go ku la me no pi ro sa tu vi xo ze ha jo ny qu wa".split()
    words = [f"{syllables[n // 15]}{syllables[n % 15]}rin".capitalize() for n in range(300)]
    session = await campaign.log.start_session("Night 1")
    lines = [", ".join(words[(n * 7 + k) % 300] for k in range(10)) + " wave." for n in range(1000)]
    lines += [f"The road winds on past farm {n}." for n in range(19000)]
    await campaign.db.execute(
        """
        INSERT INTO session_entries (campaign_id, session_id, seq, speaker, raw_text, text)
        SELECT $1, $2, n, 'DM', t, t FROM unnest($3::text[]) WITH ORDINALITY AS l(t, n)
        """,
        campaign.campaign_id,
        session.id,
        lines,
    )
    await campaign.db.execute("ANALYZE session_entries")
    read = "SELECT seq_tup_read + coalesce(idx_tup_fetch, 0) FROM pg_stat_xact_user_tables WHERE relid = $1::regclass"
    async with campaign.transaction() as tx:
        before = await tx.db.fetchval(read, "session_entries")
        said = await tx.log.saying([*words[:200], *(f"{w} Marrow" for w in words[:200])], [session.id])
        asked = set(words[:200])
        assert [e.seq for e in said] == [n + 1 for n, line in enumerate(lines) if asked & set(line[:-6].split(", "))]
        assert await tx.db.fetchval(read, "session_entries") - before < 10_000  # a line once for each name it says


async def test_a_sessions_told_lines_read_its_lines_not_the_campaigns(campaign: CampaignMemory) -> None:
    # The digest a session's told lines are kept by joined sessions to their lines: with a long night beside it,
    # the planner read every line of the campaign to find a short night's two.
    short = await campaign.log.start_session("Night 1")
    await campaign.log.write_many(short.id, [EntryIn(speaker="DM", text="Corvin Ash rows you across.")] * 2)
    long = await campaign.log.start_session("Night 2")
    await campaign.db.execute(
        "INSERT INTO session_entries (campaign_id, session_id, seq, speaker, raw_text, text)"
        " SELECT $1, $2, n, 'DM', 'The road winds on.', 'The road winds on.' FROM generate_series(1, 20000) n",
        campaign.campaign_id,
        long.id,
    )
    await campaign.db.execute("ANALYZE sessions, session_entries")
    read = "SELECT seq_tup_read + coalesce(idx_tup_fetch, 0) FROM pg_stat_xact_user_tables WHERE relid = $1::regclass"
    async with campaign.transaction() as tx:
        before = await tx.db.fetchval(read, "session_entries")
        assert len(await told_in(tx.graph, [short.id])) == 2
        assert await tx.db.fetchval(read, "session_entries") - before < 100


async def test_a_public_name_the_plural_of_a_word_of_a_hidden_name_stays_plain_to_a_player(
    campaign: CampaignMemory, memory: Memory
) -> None:
    """The secret Hotis's hidden name "Hosin Bastion" hid its rare word "bastion" and, as the mask hides a plural
    too, the public faction Bastions: players lost its card ("no entity named 'Bastions'") and read "the [secret]
    are a voluntary guard". A public name keeps a word from the mask however the mask would read it there."""
    from memory.mcp_tools import CampaignTools

    g = campaign.graph
    await g.add_entity(EntityIn(name="Bastions", type=EntityType.faction, description="A voluntary guard."))
    hotis = await g.add_entity(EntityIn(name="Hotis", type=EntityType.npc, visibility=Visibility.secret))
    await g.hide_names(hotis.id, ["Hosin Bastion"])
    tools = CampaignTools(campaign, await memory.campaigns().get("Test Campaign"), dm=False)
    card = await tools.entity_card("Bastions")
    assert (card.name, card.description) == ("Bastions", "A voluntary guard.")
    said = "The Bastions are more of a voluntary guard. Hosin Bastion sent Hotis."
    assert (await g.player_mask())(said) == "The Bastions are more of a voluntary guard. [secret] sent [secret]."


async def test_players_mask_hides_a_secret_name_and_the_words_that_name_it_alone(campaign: CampaignMemory) -> None:
    await campaign.graph.add_entity(
        EntityIn(
            name="Vaskerrin Holt", type=EntityType.npc, visibility=Visibility.secret, aliases=["the Pale Magister"]
        )
    )
    await campaign.graph.add_entity(EntityIn(name="Holt Farm", type=EntityType.place))  # players may read "Holt"
    await campaign.graph.add_entity(EntityIn(name="Queen Mab", type=EntityType.npc, visibility=Visibility.secret))
    mask = await campaign.graph.player_mask()
    said = "Later Vaskerrin's men left Holt Farm. The Pale Magister smiled at the queen. Vaskerrin Holt! Mab?"
    assert (
        mask(said) == "Later [secret]'s men left Holt Farm. The Pale Magister smiled at the queen. [secret]! [secret]?"
    )


async def test_a_proposal_waiting_for_review_does_not_unmask_a_word_of_a_secret_name(campaign: CampaignMemory) -> None:
    """A proposal named "Vaskerrin" (the table said a name the extractor did not know): players cannot read it until
    the DM accepts it, so it must not make a word of the secret Vaskerrin Holt's name one they may read."""
    g = campaign.graph
    await g.add_entity(EntityIn(name="Vaskerrin Holt", type=EntityType.npc, visibility=Visibility.secret))
    proposal = await g.add_entity(EntityIn(name="Vaskerrin", type=EntityType.npc, status=ReviewStatus.pending))
    # a proposal's alias is no more readable than its name
    await g.add_entity(
        EntityIn(name="the harbour captain", type=EntityType.npc, status=ReviewStatus.pending, aliases=["Holt"])
    )
    assert (await g.player_mask())("Vaskerrin smiles at Holt.") == "[secret] smiles at [secret]."

    await campaign.review.accept(f"e{proposal.id}")  # the DM's word: a Vaskerrin players may read
    assert (await g.player_mask())("Vaskerrin smiles at Holt.") == "Vaskerrin smiles at [secret]."


async def test_a_secret_entitys_old_names_stay_masked_until_it_is_made_public(memory: Memory) -> None:
    """The log, the recaps and the session titles still say a secret entity's old name after the DM renames it."""
    campaign = memory.campaign((await memory.campaigns(1).create("A")).id)
    other = memory.campaign((await memory.campaigns(1).create("B")).id)
    g = campaign.graph
    said = "Queen Mab is behind it. Mab! Mira knows."
    await g.add_entity(EntityIn(name="Queen Mab", type=EntityType.npc, visibility=Visibility.secret))
    await g.update_entity("Queen Mab", new_name="The Winter Queen")
    await g.add_entity(EntityIn(name="Mira", type=EntityType.npc))
    await g.update_entity("Mira", new_name="Mirelle", visibility=Visibility.secret)  # hidden from now on
    assert (await g.player_mask())(said) == "[secret] is behind it. [secret]! [secret] knows."
    assert (await other.graph.player_mask())(said) == said  # another campaign's secrets are its own

    # made public, it is no secret any more, nor are the names it had
    await g.update_entity("The Winter Queen", visibility=Visibility.public)
    assert (await g.player_mask())(said) == "Queen Mab is behind it. Mab! [secret] knows."
    # renamed while public, its old name an alias players read; made secret again, what they read since stays
    await g.update_entity("The Winter Queen", new_name="The Summer Queen")
    await g.update_entity("The Summer Queen", visibility=Visibility.secret)
    assert (await g.player_mask())(f"{said} The Winter Queen, The Summer Queen.") == (
        "Queen Mab is behind it. Mab! [secret] knows. The Winter Queen, [secret]."
    )


async def test_a_removed_secret_entitys_name_stays_masked_in_what_was_said(campaign: CampaignMemory) -> None:
    """Removing a secret entity, or merging it into a public one, tells players nothing of it: what was said of it
    stays masked, until the DM names a public entity so."""
    g = campaign.graph
    said = "Queen Mab and the Pale Magister, or Vaskerrin Holt, are behind it."
    await g.add_entity(EntityIn(name="Queen Mab", type=EntityType.npc, visibility=Visibility.secret))
    await g.add_entity(
        EntityIn(name="Vaskerrin Holt", type=EntityType.npc, visibility=Visibility.secret, aliases=["Pale Magister"])
    )
    await g.add_entity(EntityIn(name="the old man", type=EntityType.npc))
    await g.remove_entity("Queen Mab")
    await g.merge_entities("Vaskerrin Holt", "the old man")
    # the alias was players' to read already
    assert (await g.player_mask())(said) == "[secret] and the Pale Magister, or [secret], are behind it."

    await g.add_entity(EntityIn(name="Queen Mab", type=EntityType.npc))  # the DM's word: players may read it
    assert (await g.player_mask())(said) == "Queen Mab and the Pale Magister, or [secret], are behind it."


async def test_renaming_an_old_look_alike_name_mends_it_instead_of_keeping_it_as_an_alias(
    campaign: CampaignMemory,
) -> None:
    """A name an earlier version stored with a look-alike letter ("V\u0430x", a Cyrillic а) is refused now: a
    rename, the way to mend it, used to be refused too, as the old name joined the aliases and was checked."""
    g = campaign.graph
    vex = await g.add_entity(EntityIn(name="Vex", type=EntityType.npc, aliases=["Vexy", "Lady Vex"]))
    await campaign.db.execute(
        "UPDATE entities SET name = 'V\u0430x' WHERE campaign_id = $1 AND id = $2", campaign.campaign_id, vex.id
    )
    await campaign.db.execute(
        "UPDATE entity_aliases SET alias = 'V\u0435xy' WHERE campaign_id = $1 AND alias = 'Vexy'",
        campaign.campaign_id,
    )
    mended = await g.update_entity("V\u0430x", new_name="Vax")
    assert (mended.name, mended.aliases) == ("Vax", ["Lady Vex"])
    renamed = await g.update_entity("Vax", new_name="Vax the Bold")  # the good old name is kept, as ever
    assert renamed.aliases == ["Lady Vex", "Vax"]
