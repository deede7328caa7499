"""Campaign files into the database: transactional, idempotent, updates in place; export round-trips."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from campaigns.files import CampaignFileError, dump_campaign_file, parse_campaign_file, read_campaign_file
from campaigns.load import apply_campaign_file, export_campaign_file
from campaigns.schema import CampaignHeader
from memory import jobs
from memory.errors import AlreadyExistsError, InvalidInputError
from memory.models import EntityIn, EntityType, Provenance, RelationshipIn, ReviewStatus, Source, Visibility
from memory.recorder import SessionRecorder, Utterance
from memory.replies import unhidden_said
from memory.store import CampaignMemory, Memory

EXAMPLES = Path(__file__).resolve().parents[2] / "campaigns" / "examples"

SMALL = """
entities:
  - {name: Eldrinax, type: npc, aliases: [The Ember Wyrm], attributes: {age: 900}}
  - {name: Ironhold, type: place}
  - {name: Pale Hand, type: faction, secret: true}
relationships:
  - {source: Eldrinax, type: lives in, target: Ironhold}
  - {source: the ember wyrm, type: leads, target: Pale Hand}
"""


async def loaded(memory: Memory, campaign: str, text: str, filename: str) -> CampaignMemory:
    """A new campaign with the campaign file ``text`` loaded."""
    mem = memory.campaign((await memory.campaigns().create(campaign)).id)
    await apply_campaign_file(mem, parse_campaign_file(text, filename))
    return mem


async def state(mem: CampaignMemory) -> tuple[object, ...]:
    rows = await mem.db.fetch(
        "SELECT name, type, description, attributes, visibility FROM entities WHERE campaign_id = $1 ORDER BY name",
        mem.campaign_id,
    )
    rels = await mem.db.fetch(
        "SELECT source_id, type, target_id FROM relationships WHERE campaign_id = $1 ORDER BY 1, 2, 3",
        mem.campaign_id,
    )
    aliases = await mem.db.fetch("SELECT alias FROM entity_aliases WHERE campaign_id = $1 ORDER BY 1", mem.campaign_id)
    return tuple(map(tuple, rows)), tuple(map(tuple, rels)), tuple(map(tuple, aliases))


async def test_load_is_idempotent_and_updates_in_place(campaign: CampaignMemory) -> None:
    first = await apply_campaign_file(campaign, parse_campaign_file(SMALL, "small.yaml"))
    assert (first.entities_created, first.relationships_created) == (3, 2)
    before = await state(campaign)
    again = await apply_campaign_file(campaign, parse_campaign_file(SMALL, "small.yaml"))
    assert not again.changed and again.entities_unchanged == 3 and again.relationships_unchanged == 2
    assert await state(campaign) == before

    changed = SMALL.replace("age: 900", "age: 901").replace(
        "Ironhold, type: place}", "Ironhold, type: place, description: A dwarf hold}"
    )
    report = await apply_campaign_file(campaign, parse_campaign_file(changed, "small.yaml"))
    assert report.entities_updated == 2 and report.entities_created == 0
    wyrm = await campaign.graph.get_entity("the ember wyrm")
    assert wyrm.attributes == {"age": 901}
    assert (await campaign.graph.get_entity("ironhold")).description == "A dwarf hold"
    assert (await campaign.graph.get_entity("pale hand")).visibility == Visibility.secret
    assert len(await campaign.graph.list_entities()) == 3


async def test_a_short_file_naming_a_known_entity_only_to_link_it_changes_nothing_it_leaves_out(
    campaign: CampaignMemory,
) -> None:
    """A DM adds one NPC beside the campaign's file, repeating the secret Pale Hand only because a relationship
    names entities of its own file: the Pale Hand must stay secret (players would learn of it) and keep what
    the first file said of it. What an entry does say still counts, an empty list or ``secret: false`` too."""
    await apply_campaign_file(
        campaign,
        parse_campaign_file(
            SMALL.replace(
                "{name: Pale Hand, type: faction, secret: true}",
                "{name: Pale Hand, type: faction, secret: true, aliases: [The Hand], description: A cult, "
                "attributes: {sigil: a white hand}}",
            ),
            "small.yaml",
        ),
    )
    before = await campaign.graph.get_entity("Pale Hand")
    short = """
entities:
  - {name: Pale Hand, type: faction}
  - {name: Brother Ashe, type: npc}
relationships:
  - {source: Brother Ashe, type: member of, target: Pale Hand}
"""
    report = await apply_campaign_file(campaign, parse_campaign_file(short, "session3.yaml"))
    assert (report.entities_created, report.entities_unchanged, report.relationships_created) == (1, 1, 1)
    assert await campaign.graph.get_entity("Pale Hand") == before
    assert before.visibility == Visibility.secret and before.aliases == ["The Hand"]

    said = short.replace("{name: Pale Hand, type: faction}", "{name: Pale Hand, type: faction, aliases: []}")
    await apply_campaign_file(campaign, parse_campaign_file(said, "session3.yaml"))
    hand = await campaign.graph.get_entity("Pale Hand")
    assert (hand.aliases, hand.visibility, hand.description) == ([], Visibility.secret, "A cult")
    public = said.replace("aliases: []}", "aliases: [], secret: false}")
    await apply_campaign_file(campaign, parse_campaign_file(public, "session3.yaml"))
    assert (await campaign.graph.get_entity("Pale Hand")).visibility == Visibility.public


PREP = """
entities:
  - {name: Vaskerrin Holt, type: npc, aliases: [Vaskerrin], attributes: {mood: restless}}
  - {name: Brannagh, type: npc}
relationships:
  - {source: Brannagh, type: status, value: alive}
"""


async def test_a_reload_after_play_says_what_it_replaced(campaign: CampaignMemory) -> None:
    """A DM's walkthrough: play added an alias (Same as…), a second file made Vaskerrin angry and Brannagh died;
    reloading the prep file for one new NPC put all three back and said only "1 updated". The rules stay for
    entities (what an entry lists replaces), but the load now says what it replaced, and loading again says
    nothing. A fact the file states as it did before is no newer word: Brannagh stays dead."""
    g = campaign.graph
    await apply_campaign_file(campaign, parse_campaign_file(PREP, "prep.yaml"))
    heard = Provenance(source=Source.inferred, confidence=0.4)
    old_man = await g.add_entity(
        EntityIn(name="the old man", type=EntityType.npc, status=ReviewStatus.pending, provenance=heard)
    )
    await campaign.review.same_as(f"e{old_man.id}", "Vaskerrin Holt")
    update = "entities:\n  - {name: Vaskerrin Holt, type: npc, attributes: {mood: angry}}\n"
    await apply_campaign_file(campaign, parse_campaign_file(update, "update1.yaml"))
    await g.link("Brannagh", "status", value="dead")

    prep = PREP.replace("relationships:", "  - {name: Mira, type: npc}\nrelationships:")
    report = await apply_campaign_file(campaign, parse_campaign_file(prep, "prep.yaml"))

    assert (report.entities_created, report.entities_updated, report.relationships_created) == (1, 1, 0)
    assert [(c.entity, c.change) for c in report.changes] == [
        ("Vaskerrin Holt", "alias removed: the old man"),
        ("Vaskerrin Holt", 'attribute mood: "angry" → "restless"'),
    ]
    assert report.said() == (
        "Changes to what the campaign had:\n"
        "- Vaskerrin Holt: alias removed: the old man\n"
        '- Vaskerrin Holt: attribute mood: "angry" → "restless"'
    )
    brannagh = await g.get_entity("Brannagh")
    assert [r.describe() for r in await g.relationships_of(brannagh.id)] == ["Brannagh —status→ dead"]
    again = await apply_campaign_file(campaign, parse_campaign_file(prep, "prep.yaml"))
    assert not again.changed and again.changes == [] and again.said() == ""


async def test_a_load_says_each_kind_of_change_to_what_the_campaign_had(campaign: CampaignMemory) -> None:
    g = campaign.graph
    first = """
entities:
  - {name: Ironhold, type: place, description: A dwarven hold, attributes: {depth: 3, ruler: none}}
  - {name: Saltmere, type: place}
  - {name: Korv, type: npc, secret: true}
relationships:
  - {source: Korv, type: lives in, target: Ironhold}
  - {source: Korv, type: owes, value: 10 gold}
"""
    await apply_campaign_file(campaign, parse_campaign_file(first, "first.yaml"))
    await g.add_entity(
        EntityIn(
            name="Pale Hand",
            type=EntityType.faction,
            status=ReviewStatus.pending,
            provenance=Provenance(source=Source.inferred, confidence=0.4),
        )
    )
    second = """
entities:
  - {name: Ironhold, type: faction, description: "", attributes: {depth: 4, gold: true}, aliases: [The Hold]}
  - {name: Saltmere, type: place, description: A drowned town}
  - {name: Korv, type: npc, secret: false}
  - {name: Pale Hand, type: faction}
relationships:
  - {source: Korv, type: lives in, target: Saltmere}
  - {source: Korv, type: owes, value: 10 gold, secret: true}
"""
    report = await apply_campaign_file(campaign, parse_campaign_file(second, "second.yaml"))
    assert [(c.entity, c.change) for c in report.changes] == [
        ("Ironhold", "type: location → faction"),
        ("Ironhold", 'description cleared (was "A dwarven hold")'),
        ("Ironhold", "alias added: The Hold"),
        ("Ironhold", "attribute depth: 3 → 4"),
        ("Ironhold", 'attribute ruler removed (was "none")'),
        ("Ironhold", "attribute gold: true added"),
        ("Saltmere", "description added"),
        ("Korv", "now public"),
        ("Pale Hand", "accepted (it was waiting for review)"),
        ("Korv", "fact lives_in: Ironhold → Saltmere"),
        ("Korv", "fact owes: 10 gold now secret"),
    ]
    # entity by entity: Korv's facts follow what the load changed of Korv himself
    assert report.said().splitlines()[8:11] == [
        "- Korv: now public",
        "- Korv: fact lives_in: Ironhold → Saltmere",
        "- Korv: fact owes: 10 gold now secret",
    ]


async def test_a_load_says_which_holder_or_ruler_a_fact_stated_from_the_other_end_replaced(
    campaign: CampaignMemory,
) -> None:
    """A reload's "Vex has the Bow" closes "the Bow owned_by Keyleth" but the load did not say so, as it weighed
    the fact as Vex's: it is the Bow's, told as its owner."""
    world = """
entities:
  - {name: Bow, type: item}
  - {name: Keyleth, type: npc}
  - {name: Vex, type: npc}
  - {name: The Circle, type: faction}
relationships:
"""
    first = (
        world
        + "  - {source: Bow, type: owned_by, target: Keyleth}\n"
        + "  - {source: Keyleth, type: leader_of, target: The Circle}\n"
    )
    await apply_campaign_file(campaign, parse_campaign_file(first, "first.yaml"))
    second = world + "  - {source: Vex, type: has, target: Bow}\n  - {source: The Circle, type: led_by, target: Vex}\n"
    report = await apply_campaign_file(campaign, parse_campaign_file(second, "second.yaml"))
    assert [(c.entity, c.change) for c in report.changes] == [
        ("Bow", "fact owned_by: Keyleth → Vex"),
        ("The Circle", "fact led_by: Keyleth → Vex"),
    ]


async def test_a_reload_keeps_a_holder_or_ruler_play_gave_from_the_other_end(campaign: CampaignMemory) -> None:
    """The file's "the Bow owned_by Keyleth", then "Vex has the Bow" in play: loading the same file again gave the
    Bow back to Keyleth, as the check of what play replaced looked only at the Bow's own "owned_by" facts. A holder
    or a ruler from the other end or in other words ("led_by") is what play said since, as "owned_by" is."""
    g = campaign.graph
    prep = """
entities:
  - {name: Bow, type: item}
  - {name: Keyleth, type: npc}
  - {name: Vex, type: npc}
  - {name: The Circle, type: faction}
relationships:
  - {source: Bow, type: owned_by, target: Keyleth}
  - {source: Keyleth, type: leader_of, target: The Circle}
"""
    await apply_campaign_file(campaign, parse_campaign_file(prep, "prep.yaml"))
    await g.link("Vex", "has", "Bow")
    await g.link("The Circle", "led_by", "Vex")
    again = await apply_campaign_file(campaign, parse_campaign_file(prep, "prep.yaml"))
    assert not again.changed and again.changes == []
    bow, circle = await g.get_entity("Bow"), await g.get_entity("The Circle")
    assert [r.describe() for r in await g.relationships_of(bow.id)] == ["Vex —has→ Bow"]
    assert [r.describe() for r in await g.relationships_of(circle.id)] == ["The Circle —led_by→ Vex"]


async def test_an_export_leaves_out_a_second_ruler_an_older_version_kept_current(campaign: CampaignMemory) -> None:
    """Before "led_by" was read as "ruled_by", a faction could hold one of each as current: the file check now
    refuses such a pair, so an export left it in and wrote a file that would not load back. The second is left
    out, and said."""
    g = campaign.graph
    await g.add_entity(EntityIn(name="The Circle", type=EntityType.faction))
    for name in ("Keyleth", "Vex"):
        await g.add_entity(EntityIn(name=name, type=EntityType.npc))
    await g.link("The Circle", "led_by", "Keyleth")
    circle, vex = await g.get_entity("The Circle"), await g.get_entity("Vex")
    await campaign.db.execute(  # as an older version stored it: two current facts
        "INSERT INTO relationships (campaign_id, source_id, type, target_id, status) VALUES ($1, $2, 'ruled_by', $3,"
        " 'accepted')",
        campaign.campaign_id,
        circle.id,
        vex.id,
    )
    skipped: list[str] = []
    exported = await export_campaign_file(campaign, on_skip=skipped.append)
    assert [r.describe() for r in exported.relationships] == ["The Circle -[led_by]-> Keyleth"]
    assert skipped == [
        "left out the fact The Circle -[ruled_by]-> Vex: it says what The Circle -[led_by]-> Keyleth, current too, "
        "says otherwise (an older version kept both): unlink the wrong one"
    ]
    parse_campaign_file(dump_campaign_file(exported), "copy.yaml")  # it loads back


async def test_a_load_says_which_heard_as_phrases_it_taught_are_everyday_english(campaign: CampaignMemory) -> None:
    """As `/entity edit` says it: every "card" said at the table is written the name from then on."""
    first = """
entities:
  - {name: The Stormlord, type: npc, heard_as: [card, storm lored]}
  - {name: Frumpkin, type: npc, heard_as: [frump kin]}
"""
    report = await apply_campaign_file(campaign, parse_campaign_file(first, "first.yaml"))
    assert [(c.entity, c.change) for c in report.everyday] == [("The Stormlord", "card")]
    assert report.said() == (
        "Heard-as phrases of everyday English (each is written as the name wherever it is said):\n"
        "- The Stormlord: “card”"
    )
    # loaded again: nothing new to say; a phrase added to a known entity is said, with what else changed
    assert (await apply_campaign_file(campaign, parse_campaign_file(first, "first.yaml"))).said() == ""
    second = first.replace("[frump kin]", "[frump kin, from skin, pumpkin]")
    report = await apply_campaign_file(campaign, parse_campaign_file(second, "second.yaml"))
    assert report.said().splitlines() == [
        "Changes to what the campaign had:",
        "- Frumpkin: heard as added: from skin, pumpkin",
        "Heard-as phrases of everyday English (each is written as the name wherever it is said):",
        "- Frumpkin: “from skin”, “pumpkin”",
    ]


async def test_a_load_warns_of_a_lower_case_alias_of_one_everyday_word(campaign: CampaignMemory) -> None:
    """A line names an entity by one everyday English word only where it writes it with a capital: the DM who typed
    "abbey" is told so; "the abbey", lower case with its article, counts as written and is not warned of."""
    first = """
entities:
  - {name: The Sunken Abbey, type: location, aliases: [abbey, the abbey, Abbey]}
  - {name: Blackreed Fen, type: location, aliases: [fen]}
"""
    report = await apply_campaign_file(campaign, parse_campaign_file(first, "first.yaml"))
    assert report.said() == (
        "Names of one everyday English word, counted only where a line writes them with a capital (write “the abbey”"
        " to count it in lower case too):\n"
        "- The Sunken Abbey: “abbey”"
    )
    assert (await apply_campaign_file(campaign, parse_campaign_file(first, "first.yaml"))).said() == ""


async def test_a_load_warns_of_a_secret_name_spelled_like_a_public_one(campaign: CampaignMemory) -> None:
    """Players read "The Whispering Gate" as the public Whispering Gate: such a secret name is never masked. A file
    holding one still loads (an export may), and the DM is warned of each pair, as `entity add` warns."""
    text = """
entities:
  - {name: Whispering Gate, type: location}
  - {name: The Whispering Gate, type: location, secret: true}
  - {name: Queen Mab, type: npc, secret: true}
  - {name: Mira, type: npc}
"""
    report = await apply_campaign_file(campaign, parse_campaign_file(text, "gate.yaml"))
    assert report.entities_created == 4 and report.unhidden == [("The Whispering Gate", "Whispering Gate")]
    assert report.said() == (
        "warning: The secret name “The Whispering Gate” is spelled like “Whispering Gate”, which players may read: "
        "it cannot be hidden from them; give one of the two a name of its own."
    )
    # loaded again it is said again; a public alias spelled like a secret name of the campaign is warned of too
    again = await apply_campaign_file(
        campaign,
        parse_campaign_file(text.replace("Mira, type: npc", "Mira, type: npc, aliases: [queen mäb]"), "gate.yaml"),
    )
    assert again.unhidden == [("Queen Mab", "queen mäb"), ("The Whispering Gate", "Whispering Gate")]
    assert again.said().splitlines()[:2] == [f"warning: {s}" for s in unhidden_said(again.unhidden)]
    plain = await apply_campaign_file(campaign, parse_campaign_file("entities: [{name: Kestrel, type: npc}]", "k.yaml"))
    assert plain.unhidden == [] and plain.said() == ""  # the pairs are of the file's entities


async def test_a_load_warns_of_a_public_description_that_names_a_secret(campaign: CampaignMemory) -> None:
    """A public description saying a secret name in lower case shows players "[secret]" there, which tells them a
    secret is there: the file loads, and the DM is warned once per entity, naming the field and the secret."""
    text = """
entities:
  - {name: Vaskerrin Oruk, type: npc, secret: true}
  - name: Greywatch
    type: location
    description: the old keep vaskerrin oruk once held
    attributes: {ruler: vaskerrin}
  - {name: Mira, type: npc, description: a smith of Greywatch}
  - {name: Ashgrave, type: location, secret: true, description: vaskerrin oruk hides here}
"""
    report = await apply_campaign_file(campaign, parse_campaign_file(text, "holt.yaml"))
    assert report.described == [
        ("Greywatch", "description", ["vaskerrin oruk"]),
        ("Greywatch", "attribute ruler", ["vaskerrin"]),
    ]
    assert report.said() == (
        "warning: “Greywatch” is public but its description says “vaskerrin oruk”; its attribute ruler says "
        "“vaskerrin”, a secret name: players will read [secret] there, which tells them a secret is there; reword "
        "it, or make the entity secret."
    )
    # loaded again it is said again: the file still says it
    assert (await apply_campaign_file(campaign, parse_campaign_file(text, "holt.yaml"))).described == report.described


async def test_load_conflicting_with_database_changes_nothing(campaign: CampaignMemory) -> None:
    await apply_campaign_file(campaign, parse_campaign_file(SMALL, "small.yaml"))
    before = await state(campaign)
    # valid on its own, but an alias collides with an entity already in the database
    clash = """
entities:
  - {name: Brand New, type: item}
  - {name: Korvash, type: npc, aliases: [Ironhold]}
"""
    with pytest.raises(Exception, match="Ironhold"):
        await apply_campaign_file(campaign, parse_campaign_file(clash, "clash.yaml"))
    assert await state(campaign) == before
    assert await campaign.graph.find_entity("Brand New") is None


async def test_a_name_that_is_another_listed_entitys_alias_renames_nothing(campaign: CampaignMemory) -> None:
    await apply_campaign_file(
        campaign, parse_campaign_file("entities:\n  - {name: Eldrinax, type: npc, aliases: [Ember Wyrm]}\n", "a.yaml")
    )
    before = await state(campaign)
    # "Ember Wyrm" is Eldrinax's alias, and Eldrinax is listed too: two entities, not a rename of Eldrinax
    both = "entities:\n  - {name: Ember Wyrm, type: npc}\n  - {name: Eldrinax, type: npc}\n"
    with pytest.raises(AlreadyExistsError, match="'Ember Wyrm' is already an alias of 'Eldrinax'"):
        await apply_campaign_file(campaign, parse_campaign_file(both, "b.yaml"))
    assert await state(campaign) == before
    # alone, with its old name among its aliases, it is still no rename: that is what `renamed_from:` says
    swapped = "entities:\n  - {name: Ember Wyrm, type: npc, aliases: [Eldrinax]}\n"
    with pytest.raises(AlreadyExistsError, match="to rename an entity, give this entry `renamed_from:`"):
        await apply_campaign_file(campaign, parse_campaign_file(swapped, "c.yaml"))
    assert await state(campaign) == before
    renamed = "entities:\n  - {name: Ember Wyrm, type: npc, aliases: [Eldrinax], renamed_from: Eldrinax}\n"
    report = await apply_campaign_file(campaign, parse_campaign_file(renamed, "c.yaml"))
    assert report.entities_updated == 1 and (await campaign.graph.get_entity("Eldrinax")).name == "Ember Wyrm"


WYRM = """
entities:
  - {name: Eldrinax, type: npc, secret: true, aliases: [Old Bronze, The Drowned Wyrm], attributes: {age: 1140}}
  - {name: The Bell, type: item}
relationships:
  - {source: Eldrinax, type: guards, target: The Bell}
"""


async def test_a_name_that_is_only_another_entitys_alias_is_refused_where_it_is_written(
    campaign: CampaignMemory,
) -> None:
    await apply_campaign_file(campaign, parse_campaign_file(WYRM, "wyrm.yaml"))
    before = await state(campaign)
    # "Old Bronze" is Eldrinax's alias: taking it for Eldrinax made it a public item with no aliases or age
    bell = "entities:\n  - {name: Bell Rope, type: item}\n  - {name: Old Bronze, type: item}\n"
    with pytest.raises(
        AlreadyExistsError,
        match=r"^ob\.yaml:3: entity #2 'Old Bronze': 'Old Bronze' is already an alias of 'Eldrinax'; to rename",
    ):
        await apply_campaign_file(campaign, parse_campaign_file(bell, "ob.yaml"))
    assert await state(campaign) == before
    # nor is listing an entity's name among the aliases of a new one: Mira the Younger is not the Mira known
    for entry in (
        "{name: Eldrinax's Lair, type: place, aliases: [Eldrinax]}",
        "{name: Eldrinax II, type: npc, aliases: [Eldrinax]}",
    ):
        with pytest.raises(AlreadyExistsError, match=r"^lair\.yaml:2: entity #1 .*an entity named 'Eldrinax' already"):
            await apply_campaign_file(campaign, parse_campaign_file(f"entities:\n  - {entry}\n", "lair.yaml"))
        assert await state(campaign) == before


async def test_a_name_typed_with_another_apostrophe_is_the_same_entity(campaign: CampaignMemory) -> None:
    # a file edited in a word processor writes ’ for ': no second "Kal’thar" beside Kal'thar, its spelling kept
    await apply_campaign_file(campaign, parse_campaign_file('entities: [{name: "Kal\'thar", type: npc}]', "a.yaml"))
    curly = "entities: [{name: Kal’thar, type: npc, description: Orc warchief}]"
    report = await apply_campaign_file(campaign, parse_campaign_file(curly, "b.yaml"))
    assert (report.entities_created, report.entities_updated) == (0, 1)
    [kalthar] = await campaign.graph.list_entities()
    assert (kalthar.name, kalthar.description) == ("Kal'thar", "Orc warchief")
    again = await apply_campaign_file(campaign, parse_campaign_file(curly, "b.yaml"))
    assert not again.changed


async def test_a_file_renames_the_entity_its_entry_is_renamed_from(campaign: CampaignMemory) -> None:
    await apply_campaign_file(campaign, parse_campaign_file(WYRM, "wyrm.yaml"))
    wyrm = await campaign.graph.get_entity("Eldrinax")
    renamed = WYRM.replace("name: Eldrinax,", "name: Eldrinax the Bronze, renamed_from: eldrinax,").replace(
        "[Old Bronze,", "[Eldrinax,"
    )
    report = await apply_campaign_file(campaign, parse_campaign_file(renamed, "renamed.yaml"))
    assert (report.entities_updated, report.entities_created, report.relationships_unchanged) == (1, 0, 1)
    now = await campaign.graph.get_entity("Eldrinax")
    assert (now.id, now.name, now.aliases) == (wyrm.id, "Eldrinax the Bronze", ["Eldrinax", "The Drowned Wyrm"])
    assert (now.visibility, now.attributes) == (Visibility.secret, {"age": 1140})
    assert not (await apply_campaign_file(campaign, parse_campaign_file(renamed, "renamed.yaml"))).changed


async def test_renamed_from_never_merges_two_entities_and_travels_to_a_new_campaign(memory: Memory) -> None:
    mem = memory.campaign((await memory.campaigns().create("Two wyrms")).id)
    both = "entities:\n  - {name: Eldrinax, type: npc}\n  - {name: Ember Wyrm, type: npc, description: the other}\n"
    await apply_campaign_file(mem, parse_campaign_file(both, "both.yaml"))
    before = await state(mem)
    onto = "entities:\n  - {name: Ember Wyrm, type: npc, renamed_from: Eldrinax}\n"
    with pytest.raises(AlreadyExistsError, match="'Eldrinax' cannot become 'Ember Wyrm', which is another entity"):
        await apply_campaign_file(mem, parse_campaign_file(onto, "onto.yaml"))
    assert await state(mem) == before
    # the same file in a campaign that never had the old name: the entity is simply new there
    fresh = memory.campaign((await memory.campaigns().create("Fresh")).id)
    report = await apply_campaign_file(fresh, parse_campaign_file(onto, "onto.yaml"))
    assert report.entities_created == 1 and (await fresh.graph.get_entity("Ember Wyrm")).name == "Ember Wyrm"


async def test_a_file_accepts_what_waits_for_review_under_its_name(memory: Memory) -> None:
    mem = memory.campaign((await memory.campaigns().create("Heard first")).id)
    heard = Provenance(source=Source.stated, confidence=0.4)
    await mem.graph.add_entity(EntityIn(name="Strahd", type=EntityType.npc, status="pending", provenance=heard))
    assert (await mem.graph.get_entity("Strahd")).status == "pending"
    file = "entities:\n  - {name: Strahd von Zarovich, type: npc, renamed_from: Strahd}\n"
    report = await apply_campaign_file(mem, parse_campaign_file(file, "s.yaml"))
    assert report.entities_updated == 1
    strahd = await mem.graph.get_entity("Strahd von Zarovich")
    assert strahd.status == "accepted"  # canon now: players see it, export keeps it
    assert strahd.aliases == ["Strahd"]  # what the log and the players say
    assert [e.name for e in (await export_campaign_file(mem)).entities] == ["Strahd von Zarovich"]
    assert not (await apply_campaign_file(mem, parse_campaign_file(file, "s.yaml"))).changed
    cleared = "entities:\n  - {name: Strahd the Ancient, type: npc, renamed_from: Strahd von Zarovich, aliases: []}\n"
    await apply_campaign_file(mem, parse_campaign_file(cleared, "s.yaml"))
    assert (await mem.graph.get_entity("Strahd the Ancient")).aliases == []


async def test_a_file_settles_a_fact_heard_before_a_later_one(memory: Memory) -> None:
    mem = memory.campaign((await memory.campaigns().create("Moves")).id)
    places = "entities:\n  - {name: Mira, type: npc}\n  - {name: Forge, type: place}\n  - {name: Mill, type: place}\n"
    await apply_campaign_file(mem, parse_campaign_file(places, "p.yaml"))
    mira, forge, mill = [(await mem.graph.get_entity(n)).id for n in ("Mira", "Forge", "Mill")]
    heard = Provenance(source=Source.stated, confidence=0.4)
    await mem.graph.add_relationship(RelationshipIn(source_id=mira, type="lives_in", target_id=forge, provenance=heard))
    await mem.graph.add_relationship(RelationshipIn(source_id=mira, type="lives_in", target_id=mill))  # the DM, later
    file = places + "relationships:\n  - {source: Mira, type: lives in, target: Forge}\n"
    for _ in range(2):  # the file's word holds, and holding it again changes nothing
        await apply_campaign_file(mem, parse_campaign_file(file, "p.yaml"))
        current = [(r.type, r.target_name) for r in await mem.graph.relationships_of(mira)]
        assert current == [("lives_in", "Forge")]
    # an attribute fact of a type settles values only: it does not close an edge of that type
    both = file + "  - {source: Mira, type: knows, target: Mill}\n  - {source: Mira, type: knows, value: Elvish}\n"
    await apply_campaign_file(mem, parse_campaign_file(both, "p.yaml"))
    assert not (await apply_campaign_file(mem, parse_campaign_file(both, "p.yaml"))).changed
    knows = {(r.target_name, r.value) for r in await mem.graph.relationships_of(mira) if r.type == "knows"}
    assert knows == {("Mill", None), (None, "Elvish")}


async def test_bad_file_is_rejected_before_the_database(campaign: CampaignMemory) -> None:
    with pytest.raises(CampaignFileError, match=r"bad\.yaml:3"):
        parse_campaign_file("entities:\n  - {name: A, type: npc}\n  - {name: B, type: dragon}\n", "bad.yaml")


@pytest.mark.parametrize("example", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
async def test_examples_load_and_export_round_trip(campaign: CampaignMemory, example: Path) -> None:
    parsed = read_campaign_file(example)
    report = await apply_campaign_file(campaign, parsed)
    assert report.entities_created == len(parsed.entities)
    exported = await export_campaign_file(campaign)
    assert {e.name for e in exported.entities} == {e.name for e in parsed.entities}
    assert len(exported.relationships) == len(parsed.relationships)
    again = await apply_campaign_file(campaign, exported)
    assert not again.changed


async def current_facts(mem: CampaignMemory) -> set[tuple[object, ...]]:
    rows = await mem.db.fetch(
        """
        SELECT s.name, r.type, t.name, r.value, r.visibility FROM relationships r
        JOIN entities s ON s.id = r.source_id LEFT JOIN entities t ON t.id = r.target_id
        WHERE r.campaign_id = $1 AND r.status = 'accepted' AND r.valid_to IS NULL
        """,
        mem.campaign_id,
    )
    return {tuple(r) for r in rows}


async def test_heard_as_loads_exports_and_reloads_and_a_load_says_what_changed(memory: Memory) -> None:
    text = (
        "entities:\n  - {name: Frumpkin, type: npc, heard_as: [from skin, frump kin]}\n  - {name: Vecna, type: npc}\n"
    )
    mem = await loaded(memory, "Cats", text, "cats.yaml")
    assert (await mem.graph.get_entity("Frumpkin")).heard_as == ["from skin", "frump kin"]
    exported = dump_campaign_file(await export_campaign_file(mem))
    assert "heard_as:" in exported and "Vecna" in exported
    again = await loaded(memory, "Cats again", exported, "export.yaml")
    assert (await again.graph.get_entity("Frumpkin")).heard_as == ["from skin", "frump kin"]
    # a short entry leaves them as they are; a list replaces them, and the load (or a dry run) says so
    unchanged = await apply_campaign_file(mem, parse_campaign_file("entities:\n  - {name: Frumpkin, type: npc}\n", "f"))
    assert unchanged.entities_unchanged == 1
    changed = await apply_campaign_file(
        mem, parse_campaign_file("entities:\n  - {name: Vecna, type: npc, heard_as: [vector]}\n", "f")
    )
    assert [(c.entity, c.change) for c in changed.changes] == [("Vecna", "heard as added: vector")]
    with pytest.raises(AlreadyExistsError, match="f:2: entity #1 'Frumpkin': heard as: 'Vecna' is the name of 'Vecna'"):
        await apply_campaign_file(
            mem, parse_campaign_file("entities:\n  - {name: Frumpkin, type: npc, heard_as: [Vecna]}\n", "f")
        )
    with pytest.raises(CampaignFileError, match=r"heard_as.*has ',' inside"):
        parse_campaign_file("entities:\n  - {name: Frumpkin, type: npc, heard_as: ['from, skin']}\n", "f")


async def test_not_heard_as_loads_exports_and_reloads_and_a_load_says_what_changed(memory: Memory) -> None:
    text = "entities:\n  - {name: Mentiri, type: npc, not_heard_as: [manta ray, the]}\n  - {name: Vecna, type: npc}\n"
    mem = await loaded(memory, "Sea", text, "sea.yaml")
    assert (await mem.graph.get_entity("Mentiri")).not_heard_as == ["manta ray", "the"]  # everyday words allowed
    exported = dump_campaign_file(await export_campaign_file(mem))
    assert "not_heard_as:" in exported
    again = await loaded(memory, "Sea again", exported, "export.yaml")
    assert (await again.graph.get_entity("Mentiri")).not_heard_as == ["manta ray", "the"]
    # a short entry leaves them as they are; a list replaces them, and the load (or a dry run) says so
    unchanged = await apply_campaign_file(mem, parse_campaign_file("entities:\n  - {name: Mentiri, type: npc}\n", "f"))
    assert unchanged.entities_unchanged == 1
    changed = await apply_campaign_file(
        mem, parse_campaign_file("entities:\n  - {name: Mentiri, type: npc, not_heard_as: [manta rays]}\n", "f")
    )
    assert [(c.entity, c.change) for c in changed.changes] == [
        ("Mentiri", "never heard as removed: manta ray, the"),
        ("Mentiri", "never heard as added: manta rays"),
    ]
    with pytest.raises(InvalidInputError, match="f:2: entity #1 'Mentiri': not heard as: 'mentiri' is the name of"):
        await apply_campaign_file(
            mem, parse_campaign_file("entities:\n  - {name: Mentiri, type: npc, not_heard_as: [mentiri]}\n", "f")
        )
    with pytest.raises(CampaignFileError, match=r"not_heard_as.*has ',' inside"):
        parse_campaign_file("entities:\n  - {name: Mentiri, type: npc, not_heard_as: ['manta, ray']}\n", "f")


async def test_export_round_trips_accepted_attribute_facts_and_visibility(memory: Memory) -> None:
    """Facts accepted in play (a value, no target entity) and secret facts survive export and load."""
    played = await loaded(memory, "Played", SMALL, "small.yaml")
    wyrm = await played.graph.get_entity("Eldrinax")
    heard = Provenance(source=Source.stated, confidence=0.4)
    occupation = await played.graph.add_relationship(
        RelationshipIn(source_id=wyrm.id, type="occupation", value="blacksmith", provenance=heard)
    )
    await played.review.accept(f"f{occupation.id}")
    hold = await played.graph.get_entity("Ironhold")
    for secret in (dict(type="hoards", value="gold"), dict(type="covets", target_id=hold.id)):
        await played.graph.add_relationship(RelationshipIn(source_id=wyrm.id, visibility=Visibility.secret, **secret))
    unsure = await played.graph.add_relationship(
        RelationshipIn(source_id=wyrm.id, type="fears", value="water", provenance=heard)
    )
    assert unsure.status == "pending"

    text = dump_campaign_file(await export_campaign_file(played))
    copy = await loaded(memory, "Copy", text, "export.yaml")

    facts = await current_facts(copy)
    assert facts == await current_facts(played)
    assert ("Eldrinax", "occupation", None, "blacksmith", "public") in facts
    assert {("Eldrinax", "hoards", None, "gold", "secret"), ("Eldrinax", "covets", "Ironhold", None, "secret")} <= facts
    assert not any(f[1] == "fears" for f in facts)  # pending: not canon, so not in the file


async def test_export_writes_no_session_id_of_this_database(memory: Memory) -> None:
    """A session's event entity travels by its name: an id of this database would name another session, or
    none, in the one it is loaded into. Nor does an event stored when the recap kept the id carry it along."""
    played = await loaded(memory, "Lived", SMALL, "small.yaml")
    rec = await SessionRecorder.start(played, "Night one")
    await rec.add(Utterance(speaker="DM", text="Eldrinax flies over Ironhold.", seq=1))
    await rec.flush()
    await jobs.summarize_session(
        jobs.JobContext(memory=memory, embedder=None, embedding_model="x"),  # type: ignore[arg-type]
        played.campaign_id,
        rec.session.id,
    )
    assert (await played.graph.get_entity("Session: Night one")).attributes == {}  # its provenance says which
    await played.graph.update_entity("Session: Night one", attributes={"session_id": rec.session.id, "mood": "grim"})

    text = dump_campaign_file(await export_campaign_file(played))
    assert "session_id" not in text
    copy = await loaded(memory, "Moved", text, "export.yaml")
    event = await copy.graph.get_entity("Session: Night one")
    assert event.attributes == {"mood": "grim"}
    assert await current_facts(copy) == await current_facts(played)


async def test_export_leaves_out_an_attribute_fact_with_no_value_and_says_so(memory: Memory) -> None:
    """A file cannot hold an attribute fact without a value; the rest of the campaign still exports."""
    mem = await loaded(memory, "Blank", SMALL, "small.yaml")
    wyrm = await mem.graph.get_entity("Eldrinax")
    for value in ("", "  "):
        await mem.graph.add_relationship(RelationshipIn(source_id=wyrm.id, type=f"motto{len(value)}", value=value))
    skipped: list[str] = []

    text = dump_campaign_file(await export_campaign_file(mem, on_skip=skipped.append))
    copy = await loaded(memory, "Blank copy", text, "export.yaml")
    assert await current_facts(copy) == {f for f in await current_facts(mem) if not f[1].startswith("motto")}
    assert skipped == [
        "left out Eldrinax —motto0→ (no value): an attribute fact needs a value in a campaign file",
        "left out Eldrinax —motto2→ (no value): an attribute fact needs a value in a campaign file",
    ]


async def test_export_writes_a_value_longer_than_a_file_loads_whole_and_says_so(memory: Memory) -> None:
    """A value longer than a fact's may be now (a campaign file's, loaded before the file kept the limit) is the
    DM's text: the backup keeps it whole, and says that a load refuses it until it is shortened."""
    mem = await loaded(memory, "Long", SMALL, "small.yaml")
    wyrm = await mem.graph.get_entity("Eldrinax")
    hoard = " ".join(["drowned gold"] * 50)  # 649 characters; unchecked here, as an earlier version took it
    await mem.graph.add_relationship(RelationshipIn.model_construct(source_id=wyrm.id, type="hoards", value=hoard))
    warned: list[str] = []

    text = dump_campaign_file(await export_campaign_file(mem, on_skip=warned.append))
    assert hoard in " ".join(text.split())
    assert warned == [
        "wrote Eldrinax —'hoards'→ drowned gold… whole: its value has 649 characters, more than the 500 a "
        "campaign file loads; shorten it (longer notes go in the description) before loading the file back"
    ]
    with pytest.raises(CampaignFileError, match="value has 649 characters; a fact's value has at most 500"):
        parse_campaign_file(text, "export.yaml")


async def test_export_says_how_many_items_waiting_for_review_it_leaves_out(memory: Memory) -> None:
    """A DM keeping the export as a backup must learn that the review queue is not in it."""
    mem = await loaded(memory, "Queue", SMALL, "small.yaml")
    skipped: list[str] = []
    await export_campaign_file(mem, on_skip=skipped.append)
    assert skipped == []
    heard = Provenance(source=Source.stated, confidence=0.4)
    korvash = await mem.graph.add_entity(
        EntityIn(name="Korvash", type=EntityType.npc, status=ReviewStatus.pending, provenance=heard)
    )
    hold = await mem.graph.get_entity("Ironhold")
    await mem.graph.add_relationship(
        RelationshipIn(source_id=korvash.id, type="lives_in", target_id=hold.id, provenance=heard)
    )

    exported = await export_campaign_file(mem, on_skip=skipped.append)
    assert "Korvash" not in {e.name for e in exported.entities}
    assert skipped == [
        "left out 2 items waiting for review: a campaign file holds only canon, so accept them first to keep them"
    ]


async def test_reloading_a_file_sets_the_visibility_of_facts_it_holds(memory: Memory) -> None:
    mem = await loaded(memory, "Veiled", SMALL, "small.yaml")
    hidden = SMALL.replace("target: Ironhold}", "target: Ironhold, secret: true}")
    report = await apply_campaign_file(mem, parse_campaign_file(hidden, "small.yaml"))
    assert (report.relationships_updated, report.relationships_unchanged) == (1, 1) and report.changed
    assert "relationships: 0 new, 1 updated, 1 unchanged" in report.summary()
    lives = {
        (r.type, r.visibility) for r in await mem.graph.relationships_of((await mem.graph.get_entity("Eldrinax")).id)
    }
    assert ("lives_in", "public") not in lives  # players no longer see it
    assert {("lives_in", "secret")} <= await facts_seen_by_dm(mem)
    await apply_campaign_file(mem, parse_campaign_file(SMALL, "small.yaml"))  # and the DM may reveal it again
    assert {("lives_in", "public")} <= await facts_seen_by_dm(mem)


async def test_a_fact_waiting_for_review_takes_the_files_secret_when_the_file_accepts_it(memory: Memory) -> None:
    mem = await loaded(memory, "Heard", SMALL, "small.yaml")
    wyrm = await mem.graph.get_entity("Eldrinax")
    heard = Provenance(source=Source.stated, confidence=0.4)
    waiting = await mem.graph.add_relationship(
        RelationshipIn(source_id=wyrm.id, type="occupation", value="spy", provenance=heard)
    )
    assert (waiting.status, waiting.visibility) == ("pending", "public")
    spy = SMALL + "  - {source: Eldrinax, type: occupation, value: spy, secret: true}\n"
    report = await apply_campaign_file(mem, parse_campaign_file(spy, "small.yaml"))
    assert report.relationships_created == 1
    fact = await mem.graph.get_relationship(waiting.id)
    assert (fact.status, fact.visibility) == ("accepted", "secret")
    assert ("occupation", "secret") in await facts_seen_by_dm(mem)
    assert not any(r.type == "occupation" for r in await mem.graph.relationships_of(wyrm.id))  # players


async def facts_seen_by_dm(mem: CampaignMemory) -> set[tuple[str, str]]:
    wyrm = await mem.graph.get_entity("Eldrinax")
    return {(r.type, r.visibility) for r in await mem.graph.relationships_of(wyrm.id, include_secret=True)}


async def test_export_writes_a_nested_attribute_stored_before_the_rule_as_json_text(memory: Memory) -> None:
    old = await loaded(memory, "Old", SMALL, "small.yaml")
    with pytest.raises(ValidationError, match="attribute 'stats' must be text, a number"):
        EntityIn(name="Golem", type=EntityType.npc, attributes={"stats": {"str": 18}})
    with pytest.raises(InvalidInputError, match="attribute 'stats' must be text, a number"):
        await old.graph.update_entity("Ironhold", attributes={"stats": {"str": 18}})
    # what an earlier version let in
    await old.db.execute(
        "UPDATE entities SET attributes = $2 WHERE campaign_id = $1 AND name = 'Ironhold'",
        old.campaign_id,
        {"stats": {"str": 18}, "gates": 2},
    )

    text = dump_campaign_file(await export_campaign_file(old))
    copy = await loaded(memory, "Copy", text, "export.yaml")
    assert (await copy.graph.get_entity("Ironhold")).attributes == {"stats": '{"str": 18}', "gates": 2}


async def test_export_writes_text_stored_before_the_rules_without_its_control_characters(memory: Memory) -> None:
    """An earlier version stored a relationship type (``entity link``) or a name holding a control character, which
    a campaign file refuses: the DM's backup must still export, the cleaned value said."""
    old = await loaded(memory, "Old types", SMALL, "small.yaml")
    # what an earlier version let in
    await old.db.execute(
        "UPDATE relationships SET type = 'lives\x01in' WHERE campaign_id = $1 AND type = 'lives_in'", old.campaign_id
    )
    await old.db.execute(
        "UPDATE relationships SET type = '\x04' WHERE campaign_id = $1 AND type = 'leads'", old.campaign_id
    )
    hold_id = (await old.graph.get_entity("Ironhold")).id
    await old.db.execute(
        "UPDATE entities SET name = 'Iron\x02hold' WHERE campaign_id = $1 AND id = $2", old.campaign_id, hold_id
    )
    await old.db.execute(
        "INSERT INTO entity_aliases (campaign_id, entity_id, alias) VALUES ($1, $2, 'The\x03Hold')",
        old.campaign_id,
        hold_id,
    )
    warned: list[str] = []

    text = dump_campaign_file(await export_campaign_file(old, on_skip=warned.append))
    copy = await loaded(memory, "Copy of old types", text, "export.yaml")
    hold = await copy.graph.get_entity("Ironhold")
    assert hold.aliases == ["TheHold"]
    assert [r.type for r in await copy.graph.relationships_of(hold.id)] == ["livesin"]
    assert warned == [
        "wrote the entity 'Iron\\x02hold' as 'Ironhold' (aliases 'TheHold'): it held a control character, "
        "which a campaign file cannot",
        "left out the fact Eldrinax —'\\x04'→ Pale Hand: it held a control character, which a campaign file cannot",
        "wrote the fact Eldrinax —'lives\\x01in'→ Ironhold with the type 'livesin': it held a control character, "
        "which a campaign file cannot",
    ]


async def test_export_cleaning_gives_way_where_the_cleaned_text_clashes(memory: Memory) -> None:
    """Cleaned of its control character, an old name or type can be another's: the cleaned one gives way (an alias
    or a repeated fact left out, a name written with its id), said, and the rest of the backup exports."""
    text = """
entities:
  - {name: Bob, type: npc}
  - {name: Ironhold, type: place}
  - {name: Caddo Keep, type: place}
  - {name: Bobby, type: npc, aliases: [Bob the Younger]}
relationships:
  - {source: Bob, type: knows, target: Bobby}
  - {source: Bob, type: lives_in, target: Ironhold}
  - {source: Bobby, type: lives_in, target: Caddo Keep}
"""
    old = await loaded(memory, "Clashes", text, "clash.yaml")
    bobby = await old.graph.get_entity("Bobby")
    for sql in (  # what an earlier version let in
        "UPDATE entities SET name = 'Bob\x07' WHERE campaign_id = $1 AND id = $2",
        "UPDATE entity_aliases SET alias = 'Bob\x07 the\tYounger' WHERE campaign_id = $1 AND entity_id = $2",
        "INSERT INTO entity_aliases (campaign_id, entity_id, alias) VALUES ($1, $2, '\x07')",
        "INSERT INTO entity_aliases (campaign_id, entity_id, alias) VALUES ($1, $2, 'B\x07ob')",
        "INSERT INTO entity_aliases (campaign_id, entity_id, alias) VALUES ($1, $2, 'Bob\x07by')",
        "INSERT INTO entity_aliases (campaign_id, entity_id, alias) VALUES ($1, $2, 'Iron\x07hold')",
    ):
        await old.db.execute(sql, old.campaign_id, bobby.id)
    bob = await old.graph.get_entity("Bob")
    await old.db.execute(  # a second "knows" of the same pair, and a second home
        "INSERT INTO relationships (campaign_id, source_id, type, target_id, status, provenance) "
        "SELECT campaign_id, source_id, type || '\x01', target_id, status, provenance "
        "FROM relationships WHERE campaign_id = $1 AND source_id = $2",
        old.campaign_id,
        bob.id,
    )
    warned: list[str] = []

    exported = await export_campaign_file(old, on_skip=warned.append)
    copy = await loaded(memory, "Copy of clashes", dump_campaign_file(exported), "export.yaml")
    renamed = await copy.graph.get_entity(f"Bob #{bobby.id}")
    assert sorted(renamed.aliases) == ["Bob the Younger", "Bobby"]  # the tab a space; "" and its own name "Bob" out
    kept = await copy.graph.relationships_of((await copy.graph.get_entity("Bob")).id)
    assert sorted(r.type for r in kept) == ["knows", "lives_in"]
    assert warned[0].startswith("wrote the entity 'Bob\\x07' as 'Bob' (aliases ")
    assert warned[1].startswith(f"wrote the entity 'Bob\\x07' as 'Bob #{bobby.id}': name 'Bob' is already the name")
    assert (
        warned[2]
        == "left out the alias 'Ironhold' of 'Bob\\x07': alias 'Ironhold' is already the name of entity #3 'Ironhold'"
    )
    assert [w for w in warned if "repeats another" in w] == [
        f"left out the fact Bob —'knows\\x01'→ Bob #{bobby.id}: without its control character it repeats another",
        "left out the fact Bob —'lives_in\\x01'→ Ironhold: without its control character it repeats another",
    ]


async def test_export_writes_a_look_alike_letter_stored_before_the_rule_as_the_letter_it_looks_like(
    memory: Memory,
) -> None:
    """An earlier version stored "Vаx" (a Cyrillic а) beside "Vax", which a campaign file now refuses: the backup
    still exports and loads, the look-alike written as the letter it looks like and the clash that makes given
    way, each said with the character."""
    text = "entities:\n  - {name: Vax, type: npc}\n  - {name: Vex, type: npc, aliases: [Vexy]}\n"
    old = await loaded(memory, "Look-alikes", text, "old.yaml")
    vex = await old.graph.get_entity("Vex")
    # what an earlier version let in: "V\u0430x" and "V\u0435xy" are Vax and Vexy with Cyrillic letters
    await old.db.execute(
        "UPDATE entities SET name = 'V\u0430x' WHERE campaign_id = $1 AND id = $2", old.campaign_id, vex.id
    )
    await old.db.execute(
        "UPDATE entity_aliases SET alias = 'V\u0435xy' WHERE campaign_id = $1 AND entity_id = $2",
        old.campaign_id,
        vex.id,
    )
    warned: list[str] = []

    exported = await export_campaign_file(old, on_skip=warned.append)
    copy = await loaded(memory, "Copy of look-alikes", dump_campaign_file(exported), "export.yaml")
    assert sorted(e.name for e in await copy.graph.list_entities()) == ["Vax", f"Vax #{vex.id}"]
    assert (await copy.graph.get_entity(f"Vax #{vex.id}")).aliases == ["Vexy"]
    assert warned == [
        "wrote the entity 'V\u0430x' as 'Vax' (aliases 'Vexy'): it held a letter of another script that looks like "
        "one of its own ('\u0430' U+0430 CYRILLIC SMALL LETTER A, '\u0435' U+0435 CYRILLIC SMALL LETTER IE), which a "
        "campaign file cannot",
        f"wrote the entity 'V\u0430x' as 'Vax #{vex.id}': name 'Vax' is already the name of entity #1 'Vax'",
    ]


def many_entities(n: int, prefix: str) -> str:
    lines = ["entities:"]
    lines += [f"  - {{name: {prefix} {i}, type: npc, aliases: [{prefix} alias {i}]}}" for i in range(n)]
    lines += ["relationships:"]
    lines += [f"  - {{source: {prefix} {i}, type: knows, target: {prefix} {i + 1}}}" for i in range(n - 1)]
    return "\n".join(lines) + "\n"


async def test_a_big_file_into_a_new_campaign_reads_each_name_a_few_times(memory: Memory) -> None:
    """The planner knows a campaign's size from the last ANALYZE, which never saw a new campaign's rows: each name
    check scanned every entity loaded so far, and 20k entities had not loaded after 20 minutes."""
    await loaded(memory, "Exandria", many_entities(300, "Old"), "old.yaml")
    await memory.pool.execute("ANALYZE")  # what autovacuum does to a database in use
    mem = memory.campaign((await memory.campaigns().create("Big")).id)
    async with mem.transaction() as tx:  # the load nests in it: the rows it read can be counted before commit
        report = await apply_campaign_file(tx, parse_campaign_file(many_entities(500, "New"), "big.yaml"))
        read = await tx.db.fetchval(
            "SELECT seq_tup_read + idx_tup_fetch FROM pg_stat_xact_user_tables WHERE relid = 'entities'::regclass"
        )
    assert report.entities_created == 500 and report.relationships_created == 499
    assert read < 1_000 * 500, f"{read} entity rows read: every name check scans the campaign"  # 42 million, unfixed


async def test_export_keeps_what_players_read_of_a_fact_a_secret_one_replaced(memory: Memory) -> None:
    """A secret status replaces a public one for the DM; players still read the public one. An export must keep
    it (as ``players_read``), so the copy shows both views as the campaign did, and loading it again is a no-op."""
    played = await loaded(memory, "Played", SMALL, "small.yaml")
    await played.graph.link("Eldrinax", "status", value="alive")
    await played.graph.link("Eldrinax", "status", value="a traitor", secret=True)
    await played.graph.link("Eldrinax", "allied_with", "Ironhold")

    async def views(mem: CampaignMemory) -> list[set[tuple[object, ...]]]:
        wyrm = await mem.graph.get_entity("Eldrinax")
        return [
            {(r.type, r.target_name, r.value, r.visibility) for r in await mem.graph.relationships_of(wyrm.id, **kw)}
            for kw in ({}, {"include_secret": True})
        ]

    players, dm = await views(played)
    assert ("status", None, "alive", "public") in players and ("status", None, "a traitor", "secret") in dm
    text = dump_campaign_file(await export_campaign_file(played))
    assert "value: alive\n  players_read: true" in text
    copy = await loaded(memory, "Copy", text, "export.yaml")
    assert await views(copy) == [players, dm]
    assert await current_facts(copy) == await current_facts(played)
    again = await apply_campaign_file(copy, parse_campaign_file(text, "export.yaml"))
    assert not again.changed and await views(copy) == [players, dm]
    assert dump_campaign_file(await export_campaign_file(copy)) == text


async def test_names_hidden_from_players_travel_with_an_export(memory: Memory) -> None:
    """A secret entity's name before its rename, a name merged into it (an alias players never read) and a removed
    secret entity's name stay hidden from players in the campaign an export is loaded into, as in the one it came
    from: what the players say of them there must not give them away."""
    played = await loaded(memory, "Played", SMALL, "small.yaml")
    g = played.graph
    await g.add_entity(EntityIn(name="Vaskerrin Holt", type=EntityType.npc, visibility=Visibility.secret))
    await g.update_entity("Vaskerrin Holt", new_name="The Pale Stranger")
    await g.add_entity(EntityIn(name="Grey Lady", type=EntityType.npc, visibility=Visibility.secret))
    await g.add_entity(EntityIn(name="Lady Morwen", type=EntityType.npc, visibility=Visibility.secret))
    await g.merge_entities("Grey Lady", "Lady Morwen")
    await g.add_entity(EntityIn(name="Old Sorrow", type=EntityType.npc, visibility=Visibility.secret))
    await g.remove_entity("Old Sorrow")
    said = "Vaskerrin Holt told the Grey Lady of Old Sorrow in Ironhold."
    assert (await g.player_mask())(said) == "[secret] told the [secret] of [secret] in Ironhold."

    text = dump_campaign_file(await export_campaign_file(played, CampaignHeader(name="Played")))
    assert "hidden_names:\n  - Old Sorrow" in text
    assert "hidden_names:\n  - Vaskerrin Holt" in text and "hidden_names:\n  - Grey Lady" in text
    copy = memory.campaign((await memory.campaigns().create("Copy")).id)
    await apply_campaign_file(copy, parse_campaign_file(text, "export.yaml"))
    assert (await copy.graph.player_mask())(said) == "[secret] told the [secret] of [secret] in Ironhold."
    by_name = {
        (await copy.graph.get_entity_by_id(k)).name if k else None: v
        for k, v in (await copy.graph.hidden_names()).items()
    }
    assert by_name == {None: ["Old Sorrow"], "The Pale Stranger": ["Vaskerrin Holt"], "Lady Morwen": ["Grey Lady"]}
    assert (await copy.graph.get_entity("Lady Morwen")).aliases == ["Grey Lady"]

    again = await apply_campaign_file(copy, parse_campaign_file(text, "export.yaml"))
    assert not again.changed and again.changes == []
    assert dump_campaign_file(await export_campaign_file(copy, CampaignHeader(name="Played"))) == text
    # a name hidden by a load is said as a change to what the campaign had; a public entity has none to hide
    more = (
        "entities:\n  - {name: The Pale Stranger, type: npc, hidden_names: [Holt]}\n"
        "  - {name: Ironhold, type: place, hidden_names: [Irondeep]}\n"
    )
    report = await apply_campaign_file(copy, parse_campaign_file(more, "more.yaml"))
    assert [(c.entity, c.change) for c in report.changes] == [("The Pale Stranger", "hidden from players: Holt")]
    assert (await copy.graph.player_mask())("Holt and Irondeep") == "[secret] and Irondeep"
    # "Holt" is an English word: the DM is told that players will read every "holt" as [secret]; a load hiding
    # nothing new tells nothing
    assert report.masked == ["holt"] and again.masked == []
    assert "Players will read [secret] for every “holt” said, in any sense" in report.said()
    newly = "entities:\n  - {name: The Exile, type: npc, secret: true}\n  - {name: Zyxara, type: npc, secret: true}\n"
    assert (await apply_campaign_file(copy, parse_campaign_file(newly, "exile.yaml"))).masked == ["the exile"]


async def test_a_heard_as_phrase_moves_to_an_entity_listed_before_the_one_losing_it(memory: Memory) -> None:
    """One load moving "from skin" from Frumpkin to Fenwick, written first, checks it against the file's end state:
    Frumpkin no longer holds it. The load says both changes; a phrase an entity outside the file holds stays refused."""
    mem = await loaded(
        memory,
        "Moves",
        "entities:\n  - {name: Frumpkin, type: npc, heard_as: [from skin, frump kin]}\n  - {name: Vecna, type: npc}\n"
        "  - {name: Grog, type: npc, heard_as: [grog strong]}\n",
        "a.yaml",
    )
    moved = (
        "entities:\n  - {name: Fenwick, type: npc, heard_as: [from skin]}\n"
        "  - {name: Frumpkin, type: npc, heard_as: [frump kin]}\n"
    )
    report = await apply_campaign_file(mem, parse_campaign_file(moved, "b.yaml"))
    assert (await mem.graph.get_entity("Fenwick")).heard_as == ["from skin"]
    assert (await mem.graph.get_entity("Frumpkin")).heard_as == ["frump kin"]
    assert (report.entities_created, report.entities_updated) == (1, 1)
    assert [(c.entity, c.change) for c in report.changes] == [("Frumpkin", "heard as removed: from skin")]
    # loading it again changes nothing
    again = await apply_campaign_file(mem, parse_campaign_file(moved, "b.yaml"))
    assert (again.entities_unchanged, again.changes) == (2, [])
    # Grog is not in the file: it keeps its phrase and the file may not take it
    with pytest.raises(AlreadyExistsError, match="grog strong"):
        await apply_campaign_file(
            mem, parse_campaign_file("entities:\n  - {name: Vecna, type: npc, heard_as: [grog strong]}\n", "c.yaml")
        )
    assert (await mem.graph.get_entity("Grog")).heard_as == ["grog strong"]
