"""Words the rule extractor knows: roles people hold and what they imply, and nouns that say what a name is."""

from __future__ import annotations

from memory.models import EntityType

#: Roles that make their holder the leader of the place or group named after them ("the king of Ironhold"). The
#: two-word ones are whole phrases: "the high priest of X" leads X, "a priest of X" serves it.
RULER_ROLES = frozenset(
    """
    king queen lord lady ruler duke duchess baron baroness emperor empress chief chieftain leader mayor prince
    princess count countess master mistress head captain commander general guildmaster warden regent archmage
    grandmaster
    """.split()
) | {"high king", "high priest", "high priestess"}

#: Family roles: a relation between two people, not an occupation.
FAMILY_ROLES = {
    "son": "child_of",
    "daughter": "child_of",
    "child": "child_of",
    "heir": "child_of",
    "father": "parent_of",
    "mother": "parent_of",
    "brother": "sibling_of",
    "sister": "sibling_of",
    "twin": "sibling_of",
    "wife": "spouse_of",
    "husband": "spouse_of",
    "widow": "spouse_of",
}

OCCUPATIONS = RULER_ROLES | frozenset(
    """
    blacksmith smith innkeeper barkeep bartender merchant trader shopkeeper priest priestess cleric wizard mage
    sorcerer sorceress warlock witch bard ranger rogue thief assassin guard knight paladin healer farmer hunter
    sailor pirate noble scholar sage alchemist apothecary baker butcher tailor fisherman miner soldier mercenary
    spy druid monk necromancer champion herald steward scribe librarian jeweler jeweller armorer armourer
    fletcher tanner carpenter mason cook brewer courier guide tracker smuggler bandit cultist acolyte oracle
    seer prophet advisor adviser vizier chancellor magistrate judge sheriff marshal constable envoy ambassador
    emissary
    """.split()
)

_NOUN_TYPES: dict[EntityType, str] = {
    EntityType.npc: """
        dwarf elf half-elf human halfling gnome orc half-orc tiefling dragonborn goblin hobgoblin kobold giant
        man woman guy girl boy lady gentleman fellow stranger child kid person figure creature dragon beast
        monster knight noble soldier wizard merchant sailor old young
        """,
    EntityType.place: """
        town city village hamlet tavern inn keep castle fortress fort citadel forest wood woods mountain mountains
        river lake sea island temple shrine tower cave caves dungeon realm kingdom land port harbor harbour
        district street road valley swamp marsh desert ruins plane manor estate shop market bridge pass
        """,
    EntityType.item: """
        sword blade axe dagger bow staff wand ring amulet necklace book tome artifact artefact shield helm helmet
        armor armour gem stone crown potion scroll orb relic weapon hammer spear cloak
        """,
    EntityType.faction: """
        guild order cult clan tribe company band army church brotherhood sisterhood council house gang crew
        circle syndicate
        """,
    EntityType.event: "battle war festival ceremony siege",
    EntityType.quest: "quest mission task errand",
}
NOUN_TYPE: dict[str, EntityType] = {w: t for t, words in _NOUN_TYPES.items() for w in words.split()}
NOUN_TYPE.update(dict.fromkeys(OCCUPATIONS, EntityType.npc))
