"""Turning points of the DM's narration as event proposals (memory.extraction.events), without a database. The lines
are CRD3's (Critical Role, CC BY-SA 4.0) or written like them."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from memory.extraction import KnownEntity, RuleExtractor
from memory.extraction.events import (
    MEANING_MARGIN,
    MEANING_THRESHOLD,
    SCENE_LINES,
    Event,
    EventKind,
    Sentence,
    events,
    meaning_sentences,
    meant_events,
    narration,
    said_whole,
    scene_arrivals,
    told_now,
)
from memory.extraction.pipeline import meaning_events, scene_moves
from memory.extraction.rules import _tag, telling_clause, telling_line
from memory.gazetteer import Gazetteer
from memory.models import EntityType, Entry
from memory.offgame import narrator
from memory.providers.embeddings import MiniLMEmbedder

KNOWN = [
    KnownEntity(id=1, name="Sylas Briarwood", type=EntityType.npc, aliases=["Sylas"]),
    KnownEntity(id=2, name="Briarwoods", type=EntityType.faction, aliases=["the Briarwoods"]),
    KnownEntity(id=3, name="Jazna", type=EntityType.npc),
    KnownEntity(id=4, name="Grog Strongjaw", type=EntityType.player, aliases=["Grog"]),
    KnownEntity(id=5, name="Alfield", type=EntityType.location),
    KnownEntity(id=6, name="Whitestone", type=EntityType.location),
    KnownEntity(id=7, name="Greyspine Quarry", type=EntityType.location, aliases=["Greyspine"]),
    KnownEntity(id=8, name="Bag of Holding", type=EntityType.item),
    KnownEntity(id=9, name="Gilmore", type=EntityType.npc),
    KnownEntity(id=10, name="Allura Vysoren", type=EntityType.npc, aliases=["Allura"]),
    KnownEntity(id=11, name="Emon", type=EntityType.location),
    KnownEntity(id=12, name="Sun Tree", type=EntityType.location),
    KnownEntity(id=13, name="Vox Machina", type=EntityType.faction),
    KnownEntity(id=14, name="Vasselheim", type=EntityType.location),
    KnownEntity(id=15, name="Tal'Dorei Council", type=EntityType.faction),
    KnownEntity(id=16, name="Thordak", type=EntityType.npc),
    KnownEntity(id=17, name="Elemental Plane of Air", type=EntityType.location),
    KnownEntity(id=18, name="Issylra", type=EntityType.location),
    KnownEntity(id=19, name="Prime Trammel", type=EntityType.item, aliases=["Prime Trammels", "trammels"]),
    KnownEntity(id=20, name="Kraghammer", type=EntityType.location),
    KnownEntity(id=22, name="Bryce Feelid", type=EntityType.npc, aliases=["Watchmaster Bryce", "Bryce"]),
    KnownEntity(id=23, name="Raishan", type=EntityType.npc),
    KnownEntity(id=24, name="Chain of Returning", type=EntityType.item),
    KnownEntity(id=25, name="Silence the Choir Bell", type=EntityType.quest),
]


def told(line: str) -> list[Event]:
    return events(*_tag(Gazetteer(KNOWN), line))


def retold(line: str) -> list[Event]:
    """The events of a line of the DM's recap at the session's opening."""
    return events(*_tag(Gazetteer(KNOWN), line), retold=True)


def names(line: str, *, recap: bool = False) -> list[tuple[str, list[str], str | None]]:
    said = retold(line) if recap else told(line)
    return [(e.name, [p.name for p in e.participants], e.place.name if e.place else None) for e in said]


def test_a_death_the_dm_tells_is_an_event_with_the_dead_and_the_killer() -> None:
    assert names('"Well, you heard the man. The Briarwoods are dead. Whitestone is free once more!"') == [
        ("Death of Briarwoods", ["Briarwoods"], None)
    ]
    assert names("Grog, without hesitation, beheads Jazna so swiftly that it stuns the crowd.") == [
        ("Death of Jazna", ["Jazna", "Grog Strongjaw"], None)
    ]
    recap = "A battle commenced, and in the process Sylas Briarwood was destroyed through a combination of Sunbeam."
    assert names(recap) == [("Death of Sylas Briarwood", ["Sylas Briarwood"], None)]
    assert names("Right now, Grog in the snow is dead.") == [("Death of Grog Strongjaw", ["Grog Strongjaw"], None)]
    assert told("Jazna is dead. Grog beheaded Jazna.")[0].kind == EventKind.death
    assert len(told("Jazna is dead. Grog beheaded Jazna.")) == 1  # one death told twice


@pytest.mark.parametrize(
    "line",
    [
        "If you kill Sylas, the ritual stops.",  # a hypothetical
        "You could kill Jazna right here.",
        "Is Sylas dead?",  # a question
        "Sylas is not dead.",  # a denial
        "Sylas dies if you close the portal.",  # the condition after it
        "Jazna wants to kill Sylas.",  # an intention
        "You're about to kill Jazna.",
        "You killed it with a 20.",  # dice talk: nothing named
        "Sylas is a dead man walking.",  # a figure of speech
        "A year ago, Sylas killed Jazna.",  # a memory
        # CRD3 C1E080: a death already known, said in passing
        "This is Raishan's lair, but even though Thordak is dead, the lair has its own dangers.",
        "Although Jazna is dead, her guards still stand watch.",
    ],
)
def test_no_death_in_hypotheticals_questions_denials_or_dice_talk(line: str) -> None:
    assert told(line) == []


def test_a_state_after_a_names_s_ending_its_clause_is_what_the_name_is() -> None:
    """ "Grog's dead." gave no death: the tag took the "'s" into the name, leaving "Grog dead". An "'s" before a
    state that ends its clause is "is"; before a noun it is a possessive, before a verb "has"."""
    for line in ("Grog's dead.", "Grog's dead!", "Grog's now dead, and the room goes quiet.", "Grog's dead now."):
        assert names(line) == [("Death of Grog Strongjaw", ["Grog Strongjaw"], None)], line
    assert names("Sylas's slain and Jazna flees.") == [("Death of Sylas Briarwood", ["Sylas Briarwood"], None)]
    for line in (
        "Sylas's dead brother stands at the door.",  # a possessive
        "Grog's dead weight pulls at the rope.",
        "Grog's killed the guard.",  # "has"
        "Grog's dead?",  # a question
        "If Grog's dead, the spell ends.",
    ):
        assert told(line) == [], line


def test_a_name_owning_what_follows_is_not_the_clauses_dead_or_object() -> None:
    """ "Grog kills Sylas's guard" told the death of Sylas: the name before "'s" and a noun owns what dies or is
    taken. What it owns may be a known item; a known place's own part is the place ("Emon's gates")."""
    for line in (
        "Grog kills Sylas's guard.",
        "Grog slays Sylas' guard.",
        "You find the corpse of Sylas's guard.",
        "You arrive at Emon's Gate.",  # another place
    ):
        assert told(line) == [], line
    assert names("Jazna's guard kills Grog.") == [("Death of Grog Strongjaw", ["Grog Strongjaw"], None)]
    assert names("Grog takes Sylas's Bag of Holding.") == [
        ("Acquisition of Bag of Holding", ["Bag of Holding", "Grog Strongjaw"], None)
    ]
    assert names("You arrive at Emon's gates.") == [("Arrival at Emon", [], "Emon")]


def test_a_death_of_a_place_or_thing_is_no_event() -> None:
    assert told("The Sun Tree is dead, a husk.") == []


def test_an_arrival_at_a_known_place_is_an_event_there() -> None:
    recap = "You continued northward for a second day, rushed on past sunset to rest in the city of Alfield."
    assert names(recap, recap=True) == [("Arrival at Alfield", [], "Alfield")]
    assert names("Grog arrives at Whitestone at dawn.") == [("Arrival at Whitestone", ["Grog Strongjaw"], "Whitestone")]
    assert names("All right, so you make your way to Emon, then you charter a ship.") == [
        ("Arrival at Emon", [], "Emon")
    ]
    recap = "As it currently stands, Vox Machina throughout its ventures found itself in the city of Vasselheim."
    assert names(recap, recap=True) == [
        ("Arrival at Vasselheim", ["Vox Machina"], "Vasselheim")  # a party takes part too
    ]


@pytest.mark.parametrize(
    "line",
    [
        # CRD3 C1E050 (places changed to known ones): "you" by number or in part, after a clause of its own
        "All right, so all of you guys head into Whitestone.",
        "You, darting in a forward way, find your way to the outskirts of Whitestone.",
        "You guys, easy enough, find your way back to Whitestone.",
        "Eventually you make your way to the central town square of Whitestone.",
        "Welcome back everyone. Tonight you arrive in Whitestone.",  # read in play at the opening (told_now)
        "You arrive at Whitestone a little before noon.",  # "before" after it: only when
        "Just before dawn you arrive at Whitestone.",  # "before" a time, ahead of it too
        "Before long you arrive at Whitestone.",
        # a time opening the sentence, with no comma after it, before its subject
        "In the morning you arrive at Whitestone.",
        "On the third day you arrive at Whitestone.",
        "After three days of travel you ride into Whitestone.",
        "A few hours later you reach Whitestone.",
        "You rest, and in the morning you ride into Whitestone.",
    ],
)
def test_an_arrival_in_play_is_the_partys(line: str) -> None:
    assert [e.name for e in told(line)] == ["Arrival at Whitestone"]


def test_a_line_of_the_opening_is_play_when_it_tells_a_turning_point_in_the_present_only() -> None:
    assert told_now("In the morning a patrol boat of the Tidewardens arrives at the abbey.")
    assert told_now("Welcome back everyone. Tonight you arrive in Greyfen.")
    # a name's word is no past tense: the line was read as a recap, the arrival the party's
    assert told_now("An elf in a grey cloak arrives at the Gilded Anchor. It is Nerith Vael.")
    assert not told_now("Arrived at last, you enter the Gilded Anchor.")  # a verb opening its sentence
    assert not told_now("Last time, Quillon Ashgrove drowned, and you arrive at the abbey.")  # the recap
    assert not told_now("You made your way back to Whitestone.")
    assert not told_now("In the city of Kraghammer.")  # a fragment of the recap: no turning point of its own


@pytest.mark.parametrize(
    "line",
    [
        # CRD3 C1E001 (places changed to known ones): an npc goes somewhere
        '"Anyway, I\'m probably going to go rest for the evening." She heads back to Whitestone.',
        "He runs back into Whitestone.",
        "They nod, and head back to Whitestone.",  # in play, "they" are the npcs around the party
        "He gives you a nod and walks back into Whitestone.",  # "you" the object, not the subject
        "It takes you two hours to find your way to Whitestone.",
        "You watch as the guards make their way to Whitestone.",  # the subject of a clause of its own
        "She remembers the night you entered Whitestone.",  # a time before "you" that is her verb's object
    ],
)
def test_no_arrival_in_play_of_a_pronoun_nor_an_object(line: str) -> None:
    assert told(line) == []


def test_a_known_npc_or_faction_the_dm_tells_arriving_is_an_arrival() -> None:
    """ "Quillon arrives at Greyskull Keep", "The Iron Ravens ride into Velmora": a turning point of the story as
    much as the party's own arrival, who arrived taking part. An npc's is named for them: the party's arrival at the
    same place is another event."""
    assert names("Gilmore arrives at Whitestone.") == [("Arrival of Gilmore at Whitestone", ["Gilmore"], "Whitestone")]
    assert names("At dawn, Sylas rides into Emon.") == [
        ("Arrival of Sylas Briarwood at Emon", ["Sylas Briarwood"], "Emon")
    ]


def test_a_factions_arrival_is_named_for_it_and_the_partys_for_the_place() -> None:
    """ "The Tidewardens arrive at the abbey" was "Arrival at The Sunken Abbey", one event with the party's own
    arrival there (a home table's second night, report ye item 9)."""
    assert names("The Tal'Dorei Council ride into Emon.") == [
        ("Arrival of Tal'Dorei Council at Emon", ["Tal'Dorei Council"], "Emon")
    ]
    assert names("Then the Briarwoods return to Whitestone.") == [
        ("Arrival of Briarwoods at Whitestone", ["Briarwoods"], "Whitestone")
    ]
    for party in ("You arrive at Whitestone.", "We arrive at Whitestone.", "The party arrives at Whitestone."):
        assert names(party) == [("Arrival at Whitestone", [], "Whitestone")], party
    assert names("Grog arrives at Whitestone.") == [("Arrival at Whitestone", ["Grog Strongjaw"], "Whitestone")]
    # the party's own name is a faction like any other: nothing tells it apart
    assert names("Vox Machina arrives at Whitestone.") == [
        ("Arrival of Vox Machina at Whitestone", ["Vox Machina"], "Whitestone")
    ]


def test_an_npc_the_dm_tells_the_party_seeing_arrive_is_an_arrival() -> None:
    """ "You see Quillon enter the Lantern and Eel" was no arrival: "you see" stood before his name, where a subject
    stands only after a clause's start or a conjunction."""
    assert names("You see Gilmore enter Whitestone.") == [
        ("Arrival of Gilmore at Whitestone", ["Gilmore"], "Whitestone")
    ]
    assert names("You watch Gilmore walk into Whitestone, smiling.") == [
        ("Arrival of Gilmore at Whitestone", ["Gilmore"], "Whitestone")
    ]
    assert names("You see Gilmore leave Whitestone.") == []
    assert names("Do you see Gilmore enter Whitestone?") == []


def test_every_name_of_an_arrivals_subject_list_arrives() -> None:
    """ "Thessaly and Grog arrive at Whitestone" listed only Grog as taking part: the clause was read from "and". Every
    name of the subject's list arrives, in one event: the party's when a player's character is among them."""
    assert names("Allura and Grog arrive at Whitestone.") == [
        ("Arrival at Whitestone", ["Allura Vysoren", "Grog Strongjaw"], "Whitestone")
    ]
    assert names("Gilmore, Allura, and Grog ride into Whitestone.") == [
        ("Arrival at Whitestone", ["Gilmore", "Allura Vysoren", "Grog Strongjaw"], "Whitestone")
    ]
    assert names("Sylas, Jazna and Gilmore arrive at Whitestone.") == [
        (
            "Arrival of Sylas Briarwood, Jazna and Gilmore at Whitestone",
            ["Sylas Briarwood", "Jazna", "Gilmore"],
            "Whitestone",
        )
    ]
    assert names("The Briarwoods and Gilmore arrive at Whitestone.") == [
        ("Arrival of Briarwoods and Gilmore at Whitestone", ["Briarwoods", "Gilmore"], "Whitestone")
    ]
    # a name before the subject that is no one arriving is no part of it
    assert names("In Emon, Grog arrives at Whitestone.") == [
        ("Arrival at Whitestone", ["Grog Strongjaw"], "Whitestone")
    ]
    assert told("Gilmore and Grog will arrive at Whitestone.") == []


def test_someone_arriving_unnamed_whom_the_next_sentence_names_is_their_arrival() -> None:
    """ "An elf in a grey cloak arrives at the Gilded Anchor. It is Nerith Vael." filed nothing: the arrival's subject
    was no name. The next sentence of the same line naming who it is ("It is", "She is", "It's") makes it theirs, as
    "Nerith Vael arrives at the Gilded Anchor" would be."""
    for line in (
        "An elf in a grey cloak arrives at Whitestone. It is Gilmore.",
        "A tall figure steps into Whitestone. He is Gilmore, the merchant of Emon.",
        "The doors open and someone walks into Whitestone. It's Gilmore!",
    ):
        assert names(line) == [("Arrival of Gilmore at Whitestone", ["Gilmore"], "Whitestone")], line
    # a player's character arriving so is the party's arrival, as by name
    assert names("A hooded figure walks into Whitestone. It is Grog.") == [
        ("Arrival at Whitestone", ["Grog Strongjaw"], "Whitestone")
    ]
    text, found = _tag(Gazetteer(KNOWN), "An elf arrives at Whitestone. It is Gilmore.")
    (event,) = events(text, found)  # the DM is shown the naming too
    assert event.span is not None and text[slice(*event.span)] == "An elf arrives at \ue0000\ue001. It is \ue0001\ue001"
    for line in (
        "An elf arrives at Whitestone. Is it Gilmore?",  # a question
        "An elf arrives at Whitestone. It is not Gilmore.",  # a denial
        "An elf arrives at Whitestone. It is Emon.",  # no one who arrives
        "An elf arrives at Whitestone. Gilmore waves.",  # someone else
        "An elf arrives at Whitestone, and later that day it is Gilmore.",  # no next sentence
        "If an elf arrives at Whitestone, run. It is Gilmore.",  # not told
        "A guard nods as Jazna enters. It is Gilmore.",  # no known place
    ):
        assert told(line) == [], line


@pytest.mark.parametrize(
    "line",
    [
        "You'll reach Whitestone by nightfall.",  # a future
        "Before you arrive at Whitestone, roll a perception check.",
        "Keep low until you arrive at Whitestone.",
        "Do you make your way to Whitestone?",
        "It resembles one tent you guys entered in Emon about a year or so ago.",  # a memory
        "You guys make your way to the Greyspine Manor.",  # "Greyspine" of a longer name: another place
        "Welcome to Whitestone, gentlemen.",  # "come to" inside a word
        "Gilmore arrives at the tavern.",  # no known place
    ],
)
def test_no_arrival_in_futures_questions_memories_or_other_places(line: str) -> None:
    assert told(line) == []


def test_a_named_item_changing_hands_is_an_acquisition() -> None:
    assert names("Gilmore hands you the Bag of Holding with a wink.") == [
        ("Acquisition of Bag of Holding", ["Bag of Holding", "Gilmore"], None)
    ]
    assert names("Inside the chest you find a Bag of Holding.") == [
        ("Acquisition of Bag of Holding", ["Bag of Holding"], None)
    ]
    assert told("You could take the Bag of Holding with you.") == []
    assert told("Gilmore hands you Jazna's letter.") == []  # no known item


@pytest.mark.parametrize(
    "line",
    [
        # the demo's session: a voice's instruction, with what has not happened yet after it
        "You hear a voice from the lake. It says: the horn, find the Bag of Holding before they do.",
        "Find the Bag of Holding.",  # an instruction: its verb opens the sentence
        '"Take the Bag of Holding," Gilmore says.',
        "Kill Sylas Briarwood.",
        "You grab the Bag of Holding before Gilmore can stop you.",  # a clause of its own after "before"
        "Hold the gate until Sylas dies.",
    ],
)
def test_no_turning_point_from_an_instruction_or_what_has_not_happened_yet(line: str) -> None:
    assert told(line) == []


def test_before_a_time_is_when_it_happened() -> None:
    assert names("Sylas dies before dawn.") == [("Death of Sylas Briarwood", ["Sylas Briarwood"], None)]
    assert names("Until nightfall you search, then you find the Bag of Holding.") == [
        ("Acquisition of Bag of Holding", ["Bag of Holding"], None)
    ]


def test_a_quest_from_a_known_giver_is_an_event() -> None:
    recap = "Allura Vysoren of the Tal'Dorei Council came to them requesting their aid to find a friend of hers."
    assert names(recap) == [("Quest from Allura Vysoren", ["Allura Vysoren"], None)]  # whose she is: no part
    assert told("Allura might ask you to find her friend.") == []


# the recap register ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "event"),
    [
        # an arrival: the party's past-tense verb of going, a path between, a place word before the name
        (
            "During which, Grog leapt through, if I recall, one of these portals into the Elemental Plane of Air.",
            ("Arrival at Elemental Plane of Air", ["Grog Strongjaw"], "Elemental Plane of Air"),
        ),
        (
            "You were transported via druids to the northern icy landscape of Issylra.",
            ("Arrival at Issylra", [], "Issylra"),
        ),
        (
            "You continued on your way to Kraghammer, presented your paperwork and were given entry.",
            ("Arrival at Kraghammer", [], "Kraghammer"),
        ),
        # an acquisition: a bare verb after "managed to", later in a chain of the party's verbs
        (
            "You managed to successfully defeat the guardian, craft the trammels and rest.",
            ("Acquisition of Prime Trammel", ["Prime Trammel"], None),
        ),
        # a battle with a known foe
        (
            "There you all did battle with the great colossal Thordak, The Cinder King.",
            ("Battle with Thordak", ["Thordak"], None),
        ),
        # a memory word is the recap's point, not a reason to read nothing
        ("Previously, you did battle with Thordak.", ("Battle with Thordak", ["Thordak"], None)),
    ],
)
def test_the_dms_recap_tells_turning_points_in_the_past_tense_of_the_party(
    line: str, event: tuple[str, list[str], str | None]
) -> None:
    assert names(line, recap=True) == [event]


def test_the_recap_register_is_read_in_the_recap_only() -> None:
    # in play the DM's past tense is a memory ("no, you went back to the tavern"): the recap's register is not read
    assert told("You were transported via druids to the northern icy landscape of Issylra.") == []
    assert told("There you all did battle with the great colossal Thordak.") == []


@pytest.mark.parametrize(
    "line",
    [
        "If you battled Thordak, you would lose.",  # a hypothetical
        "Did you do battle with Thordak?",  # a question
        "You gathered blessings to craft the trammels.",  # a purpose, not what was done
        "You set out to defeat the guardian and craft the trammels.",  # a bare verb without "managed to"
        "Vox Machina prepared for the eventual showdown and second battle with Thordak.",  # no one fought yet
        "Raishan fought Thordak in the caverns.",  # not the party
        "You met the hunters who had fought Thordak.",  # a relative clause: someone else's verb
        "Grog took his Chain of Returning and threw it through the portal.",  # his own: no acquisition
        "You never did battle with Thordak.",  # a denial
        "You traveled to the tavern and the guards of Issylra let you in.",  # "of Issylra" is whose guards
    ],
)
def test_no_recap_event_in_hypotheticals_purposes_others_deeds_or_denials(line: str) -> None:
    assert retold(line) == []


def test_a_quest_from_someone_who_offered_to_pay_the_party() -> None:
    line = "You were immediately brought in by Watchmaster Bryce, who offered to pay you for each set of gnoll ears."
    assert names(line) == [("Quest from Bryce Feelid", ["Bryce Feelid"], None)]
    assert told("Bryce might offer to pay you for the ears.") == []


def test_a_known_quest_the_party_accepts_is_its_acceptance() -> None:
    """A home DM tells the quest taken, its giver speaking in the first person ("I need someone to ...")."""
    quest = [("Acceptance of Silence the Choir Bell", ["Silence the Choir Bell"], None)]
    assert names("Great, so you've accepted the quest to silence the Choir Bell. Gilmore shakes your hands.") == quest
    assert names("So you have a second quest: silence the Choir Bell. Mark it down.") == quest
    assert names("Grog takes on the job to silence the Choir Bell.") == [
        ("Acceptance of Silence the Choir Bell", ["Silence the Choir Bell", "Grog Strongjaw"], None)
    ]


def test_a_known_quest_the_party_completes_is_its_completion() -> None:
    done = [("Completion of Silence the Choir Bell", ["Silence the Choir Bell"], None)]
    assert names("You have completed the quest to silence the Choir Bell.") == done
    assert names("And so you finally finish the quest of silence the Choir Bell.") == done
    assert told("If you complete the quest to silence the Choir Bell, he pays.") == []
    assert told("Jazna completed the quest to silence the Choir Bell.") == []  # an npc's


@pytest.mark.parametrize(
    "line",
    [
        "If you accept the quest to silence the Choir Bell, he pays.",  # a condition
        "Have you accepted the quest to silence the Choir Bell?",  # a question
        "Jazna accepts the quest to silence the Choir Bell.",  # an npc's
        "Gilmore asks you to accept the quest to silence the Choir Bell.",  # "you" its object
        "You accepted the quest to find the Bag of Holding.",  # no known quest
    ],
)
def test_no_acceptance_of_a_quest_supposed_asked_of_others_or_unknown(line: str) -> None:
    assert [e for e in told(line) if e.name.startswith("Acceptance")] == []


def entries(*lines: tuple[str, str]) -> list[Entry]:
    now = datetime.now(UTC)
    return [
        Entry(id=100 + i, campaign_id=1, session_id=1, seq=i + 1, speaker=who, speaker_id=None, raw_text=t,
              text=t, start_s=float(i), end_s=None, duration_s=None, ref=None, corrections=[], created_at=now)
        for i, (who, t) in enumerate(lines)
    ]  # fmt: skip


async def test_the_rules_propose_the_dms_events_once_with_their_lines_and_links() -> None:
    lines = entries(
        ("MATT", "The crowd parts. Grog, without hesitation, beheads Jazna so swiftly that it stuns the crowd."),
        ("TRAVIS", "I kill Sylas. I kill him so hard."),  # a player's wish
        ("MATT", "Jazna is dead. You make your way back to Whitestone as the sun begins to set."),
    )
    result = await RuleExtractor().extract(lines, KNOWN)
    got = {e.name: (e.type, e.description, e.entry_ids) for e in result.entities}
    assert got == {
        "Death of Jazna": ("event", "a death", [100, 102]),
        "Arrival at Whitestone": ("event", "an arrival", [102]),
    }
    links = {(f.source, f.type, f.target, tuple(f.entry_ids)) for f in result.facts if f.target and "of" in f.target}
    assert links >= {
        ("Jazna", "took_part_in", "Death of Jazna", (100, 102)),
        ("Grog Strongjaw", "took_part_in", "Death of Jazna", (100,)),
    }
    assert ("Arrival at Whitestone", "located_in", "Whitestone", None) in {
        (f.source, f.type, f.target, f.value) for f in result.facts
    }
    assert not any("Sylas" in e.name for e in result.entities)


async def test_the_dm_is_who_narrates_the_session_not_who_talks_most_in_a_slice() -> None:
    # A slice where a player's monologue outweighs the DM's one line: the session's narrator decides.
    lines = entries(
        ("SAM", " ".join(["So I take out my lute and I start to play a long, long song for everyone here."] * 4)),
        ("MATT", "Jazna is dead."),
    )
    alone = await RuleExtractor().extract(lines, KNOWN)
    assert [e.name for e in alone.entities] == []
    result = await RuleExtractor().extract(lines, KNOWN, narrates=lambda e: e.speaker == "MATT")
    assert [e.name for e in result.entities] == ["Death of Jazna"]


async def test_the_rules_read_the_register_in_the_dms_lines_of_the_recap_only() -> None:
    lines = entries(
        ("MATT", "Last we left off, you all did battle with the great colossal Thordak in his lair."),
        ("TRAVIS", "And we did battle with Raishan before that."),  # a player's line, even in the recap
        ("MATT", "There you all did battle with Thordak. Now, roll initiative against the fire giants."),  # in play
    )
    result = await RuleExtractor().extract(lines, KNOWN, retold={100, 101})
    assert {e.name: (e.type, e.description, e.entry_ids) for e in result.entities} == {
        "Battle with Thordak": ("event", "a battle", [100])
    }
    assert [(f.source, f.type, f.target, f.entry_ids) for f in result.facts] == [
        ("Thordak", "took_part_in", "Battle with Thordak", [100])
    ]


async def scene(*lines: tuple[str, str]) -> dict[str, list[str]]:
    """The events the rules find in these lines: name → who took part (from the links)."""
    result = await RuleExtractor().extract(entries(*lines), KNOWN)
    events_: dict[str, list[str]] = {e.name: [] for e in result.entities if e.type == "event"}
    for f in result.facts:
        if f.type == "took_part_in" and f.target in events_:
            events_[f.target].append(f.source)
    return {name: sorted(who) for name, who in events_.items()}


async def test_a_death_told_of_him_or_her_is_the_one_npc_the_scene_is_about() -> None:
    assert await scene(
        ("TRAVIS", "I attack Jazna with my greataxe."),
        ("MATT", "Roll for it."),
        ("TRAVIS", "21 to hit, 18 damage."),
        ("MATT", "The axe catches her across the chest and she crumples to the ground, lifeless."),
    ) == {"Death of Jazna": ["Jazna"]}
    assert await scene(
        ("MATT", "Jazna staggers back. Grog, she is bloodied and terrified."),
        ("MATT", "It doesn't matter. You killed her."),
    ) == {"Death of Jazna": ["Grog Strongjaw", "Jazna"]}
    # an "'s" before an adverb or a preposition is "is" or "has", no possessive: Jazna is who the scene is about
    assert await scene(("MATT", "Jazna's in the doorway."), ("MATT", "You kill her.")) == {"Death of Jazna": ["Jazna"]}
    # "Grog kills her": the killer is not who died
    assert await scene(
        ("MATT", "Jazna turns to run, and Grog kills her."),
    ) == {"Death of Jazna": ["Grog Strongjaw", "Jazna"]}


@pytest.mark.parametrize(
    "lines",
    [
        # two npcs in the scene: who fell is a guess
        (("TRAVIS", "I attack Jazna."), ("MATT", "Gilmore screams as she crumples to the ground, dead.")),
        # a player's hypothetical or question names no target
        (("TRAVIS", "What if I attack Jazna?"), ("MATT", "Then she falls to the ground, dead.")),
        (("TRAVIS", "If I hit Jazna, she's dead, right?"), ("MATT", "The blade swings down at last. You killed him.")),
        # the DM's own hypothetical, question or denial
        (("TRAVIS", "I attack Jazna."), ("MATT", "If you hit, she is dead.")),
        (("TRAVIS", "I attack Jazna."), ("MATT", "Is she dead? Not yet.")),
        (("TRAVIS", "I attack Jazna."), ("MATT", "She is not dead, she falls unconscious.")),
        # a player says it, not the DM
        (("MATT", "Jazna swings her blade at you and misses by an inch."), ("TRAVIS", "I killed her! She's dead!")),
        # too long ago: the scene has moved on
        (
            ("TRAVIS", "I attack Jazna."),
            ("MATT", "Roll."),
            ("TRAVIS", "Okay."),
            ("MATT", "Fine."),
            ("TRAVIS", "Sure."),
            ("MATT", "You killed him."),
        ),
        # no npc: a player or a faction is no "him"
        (("MATT", "Grog swings."), ("MATT", "He falls dead.")),
        # the npc named owns who is in the scene: "him" is the guard
        (("MATT", "Jazna's guard lunges at you, Grog."), ("MATT", "You killed him.")),
        (("MATT", "Jazna's guard lunges at you, and you cut him down."),),
    ],
)
async def test_no_death_of_him_or_her_without_one_clear_npc(lines: tuple[tuple[str, str], ...]) -> None:
    assert await scene(*lines) == {}


# in play: a clause of a turning point's verb class, the known name its subject or object ---------------------------

PLAY = [
    KnownEntity(id=30, name="Vex'ahlia", type=EntityType.player, aliases=["Vex"]),
    KnownEntity(id=31, name="Reginald", type=EntityType.npc),
    KnownEntity(id=32, name="Horace", type=EntityType.npc),
    KnownEntity(id=33, name="Marquet", type=EntityType.location),
    KnownEntity(id=34, name="Raishan", type=EntityType.npc),
    KnownEntity(id=35, name="Foramere Basin", type=EntityType.location),
]


def in_play(line: str) -> list[tuple[str, list[str], str | None]]:
    said = events(*_tag(Gazetteer([*KNOWN, *PLAY]), line))
    return [(e.name, [p.name for p in e.participants], e.place.name if e.place else None) for e in said]


@pytest.mark.parametrize(
    ("line", "event"),
    [
        # CRD3 C1E080: the dead as the subject of "has fallen" at the clause's end
        (
            "Her body going still and unfortunately not cold because of the vicinity of the flames, but Vex has "
            "fallen.",
            ("Death of Vex'ahlia", ["Vex'ahlia"], None),
        ),
        # CRD3 C1E050: a body that tells its owner is dead
        (
            "You guys watch as Vax pulls his way up out of the grass, carrying over his shoulder the lifeless body of "
            "Reginald.",
            ("Death of Reginald", ["Reginald"], None),
        ),
        (
            "You find your way into the crop lanes where the corpse of Horace recently was.",
            ("Death of Horace", ["Horace"], None),
        ),
        # a fall the clause makes a death; a dying verb in any tense
        ("Jazna crumples to the ground, lifeless.", ("Death of Jazna", ["Jazna"], None)),
        ("Sylas breathes his last.", ("Death of Sylas Briarwood", ["Sylas Briarwood"], None)),
        ("Grog slew Jazna.", ("Death of Jazna", ["Jazna", "Grog Strongjaw"], None)),
        # the dead's own verbs before the dying
        ("Jazna staggers back and dies.", ("Death of Jazna", ["Jazna"], None)),
        ("Jazna lets out a scream, then crumples and dies.", ("Death of Jazna", ["Jazna"], None)),
        # ... not another subject's: Grog dies, not Vex
        ("Vex staggers back and Grog dies.", ("Death of Grog Strongjaw", ["Grog Strongjaw"], None)),
        # a killing verb split around its victim
        ("Grog finishes Jazna off.", ("Death of Jazna", ["Jazna", "Grog Strongjaw"], None)),
        # an arrival: a place word before the name, a verb phrase in the past
        ("All right, so you make your way to the continent of Marquet.", ("Arrival at Marquet", [], "Marquet")),
        ("You finally get to the outskirts of Whitestone.", ("Arrival at Whitestone", [], "Whitestone")),
        ("You stepped into Whitestone as the bells rang.", ("Arrival at Whitestone", [], "Whitestone")),
        # CRD3 C1E050 and C1E001: a visit on the way, a way found
        (
            "You guys stop by the Foramere Basin, where you originally saw the encampment of some of the survivors.",
            ("Arrival at Foramere Basin", [], "Foramere Basin"),
        ),
        (
            "It's a completely wrong direction, so you eventually find your way to Emon.",
            ("Arrival at Emon", [], "Emon"),
        ),
        # an acquisition: the item given to the party, or found in any tense
        ("You are handed the Bag of Holding.", ("Acquisition of Bag of Holding", ["Bag of Holding"], None)),
        (
            "Gilmore presents you with the Bag of Holding.",
            ("Acquisition of Bag of Holding", ["Bag of Holding", "Gilmore"], None),
        ),
        (
            "Grog picked up the Bag of Holding.",
            ("Acquisition of Bag of Holding", ["Bag of Holding", "Grog Strongjaw"], None),
        ),
    ],
)
def test_the_dm_tells_a_turning_point_in_play_in_a_clause_of_its_kind(
    line: str, event: tuple[str, list[str], str | None]
) -> None:
    assert in_play(line) == [event]


@pytest.mark.parametrize(
    "line",
    [
        "You guys watch as the darkened wings of Vex go limp and she just plummets.",  # CRD3 C1E080: unconscious
        "You watch the energy arc across the body of Raishan, the dragon.",  # CRD3 C1E080: a body, alive
        "There is no Raishan corpse.",  # no body: no death
        "Jazna has fallen unconscious.",  # a fall, not a death
        "Jazna staggers back and the guard dies.",  # a new subject between: not Jazna's death
        "Jazna staggers back and he dies.",
        "Jazna falls to one knee, dead tired.",  # "dead" of a manner
        "Grog goes dead silent.",
        "You cut Jazna off mid-sentence.",  # the particle of no killing
        "You make your way to House Greyspine.",  # "Greyspine" of a longer name
        "Grog draws the Bag of Holding.",  # his own: drawing is no acquisition
        "You could pick up the Bag of Holding.",  # a possibility
    ],
)
def test_no_turning_point_in_play_from_falls_bodies_manners_or_longer_names(line: str) -> None:
    assert in_play(line) == []


async def test_a_dying_told_of_him_or_her_in_play_goes_to_the_scenes_npc() -> None:
    assert await scene(("TRAVIS", "I attack Jazna."), ("MATT", "She breathes her last.")) == {
        "Death of Jazna": ["Jazna"]
    }
    assert await scene(("TRAVIS", "I attack Jazna."), ("MATT", "You finish her off.")) == {"Death of Jazna": ["Jazna"]}
    assert await scene(("TRAVIS", "I attack Jazna."), ("MATT", "She has fallen unconscious.")) == {}


# the scene moving to a place, told in no particular phrasing ------------------------------------------------------

KRAGHAMMER, JAZNA, GROG = KNOWN[19], KNOWN[2], KNOWN[3]


def bursts(*named: list[KnownEntity], gap: int = 0) -> dict[int, list[str]]:
    """The scene's arrivals of lines naming ``named`` in the DM's narration, ``gap`` lines of no name between them."""
    lines: list[tuple[int, list[KnownEntity]]] = []
    for found in named:
        lines += [(len(lines) + i, []) for i in range(gap)]
        lines.append((len(lines), found))
    return {i: [p.name for p in places] for i, places in scene_arrivals(lines).items()}


def test_a_place_the_dm_names_for_the_first_time_and_keeps_naming_is_where_the_scene_moved() -> None:
    assert bursts([KRAGHAMMER], [], [KRAGHAMMER, GROG], [KRAGHAMMER]) == {
        0: ["Kraghammer"], 2: ["Kraghammer"], 3: ["Kraghammer"]
    }  # fmt: skip
    assert bursts([KRAGHAMMER], [KRAGHAMMER], [KRAGHAMMER], gap=SCENE_LINES // 2 - 1) != {}


@pytest.mark.parametrize(
    ("named", "gap"),
    [
        (([KRAGHAMMER], [KRAGHAMMER]), 0),  # named twice: a place talked of
        (([KRAGHAMMER], [KRAGHAMMER], [KRAGHAMMER]), SCENE_LINES // 2),  # too far apart
        (([JAZNA], [JAZNA], [JAZNA]), 0),  # a person the DM keeps naming: no place
    ],
)
def test_no_scene_moved_from_a_place_named_less_often_or_further_apart_or_a_person(
    named: tuple[list[KnownEntity], ...], gap: int
) -> None:
    assert bursts(*named, gap=gap) == {}


def test_a_place_named_before_is_where_the_scene_moved_only_the_first_time() -> None:
    lines = [(0, [KRAGHAMMER]), *((i, []) for i in range(1, 2 * SCENE_LINES)), (100, [KRAGHAMMER])]
    lines += [(101, [KRAGHAMMER]), (102, [KRAGHAMMER])]
    assert scene_arrivals(lines) == {}


def test_the_dms_narration_leaves_out_the_speech_they_voice() -> None:
    assert narration('He goes, "Heading to Kraghammer yourself, now?" and walks off.') == "He goes,   and walks off."
    assert narration("Welcome to Kraghammer!") == "Welcome to Kraghammer!"
    # a home table marks a voice with "(as Name)": what follows is that character's, to the line's end
    assert narration("(as Tobin) Nobody goes to the mill since the flood.").strip() == ""
    assert narration("Tobin shrugs. [As Tobin] The mill? Gone.").strip() == "Tobin shrugs."
    assert narration("You take the coin (as you should) and go.") == "You take the coin (as you should) and go."


async def test_a_death_is_a_beings_and_told_of_the_clauses_subject() -> None:
    """ "Everyone from the abbey is dead" tells no death of the abbey: a place dies no death, and a name after a
    preposition is no clause's subject."""
    lines = entries(
        ("MATT", "(as Sylas) Everyone from Whitestone is dead."),
        ("MATT", "The captain of the Briarwoods is dead."),
        ("MATT", "The Sun Tree was killed by the frost."),
        ("MATT", "Jazna is dead."),
    )
    result = await RuleExtractor().extract(lines, KNOWN)
    assert [(f.source, f.value) for f in result.facts if f.type == "status"] == [("Jazna", "dead")]


async def test_the_rules_propose_the_scenes_arrival_with_every_line_of_its_burst() -> None:
    lines = entries(
        ("MATT", "The gate opens. Welcome to Kraghammer!"),
        ("TRAVIS", "Whoa."),
        ("MATT", "You stand in the entry thoroughfare of Kraghammer, red stone glowing around you."),
    )
    scenes = {lines[0].id: [KRAGHAMMER], lines[2].id: [KRAGHAMMER]}
    result = await RuleExtractor().extract(lines, KNOWN, scenes=scenes)
    assert [(e.name, e.type, e.entry_ids) for e in result.entities] == [
        ("Arrival at Kraghammer", "event", [lines[0].id, lines[2].id])
    ]
    assert [(f.source, f.type, f.target, f.entry_ids) for f in result.facts] == [
        ("Arrival at Kraghammer", "located_in", "Kraghammer", [lines[0].id, lines[2].id])
    ]
    # the rules' own telling of it is the same event, its people kept
    told = await RuleExtractor().extract(
        entries(("MATT", "Grog arrives at Kraghammer.")), KNOWN, scenes={100: [KRAGHAMMER]}
    )
    assert sorted((f.source, f.type) for f in told.facts) == [
        ("Arrival at Kraghammer", "located_in"), ("Grog Strongjaw", "took_part_in")
    ]  # fmt: skip


def test_a_place_inside_a_longer_name_is_not_where_the_scene_moved() -> None:
    """ "House Greyspine" is not Greyspine Quarry, however often the DM names the house."""
    said = ["The banner of House Greyspine hangs here.", "House Greyspine's guards nod.", "House Greyspine waits."]
    house = entries(*(("MATT", t) for t in said))
    assert scene_moves(house, None, Gazetteer(KNOWN)) == {}
    quarry = entries(*(("MATT", t.replace("House Greyspine", "the Greyspine")) for t in said))
    assert {i: [p.name for p in found] for i, found in scene_moves(quarry, None, Gazetteer(KNOWN)).items()} == {
        e.id: ["Greyspine Quarry"] for e in quarry
    }


def test_an_items_line_shown_is_the_one_that_tells_its_turning_point_else_the_first() -> None:
    """The scene rule cites every line naming the place: the one where the party gets there is the one to show."""
    gazetteer = Gazetteer(KNOWN)
    burst = [
        "The town up on the cliffs is Kraghammer.",
        "Smoke rises from the forges of Kraghammer.",
        "Finally, you reach the gates of Kraghammer.",
    ]
    assert telling_line(["Arrival at Kraghammer"], burst, gazetteer) == 2
    # and the clause of it that tells it, as said (the DM is shown that part of a long line)
    assert telling_clause(["Arrival at Kraghammer"], burst[2], gazetteer) == "you reach the gates of Kraghammer"
    assert telling_clause(["Arrival at Kraghammer"], burst[0], gazetteer) is None
    assert telling_line(["Grog Strongjaw", "Arrival at Kraghammer"], burst, gazetteer) == 2  # a fact's two ends
    assert telling_line(["Arrival at Kraghammer (Session 3)"], burst, gazetteer) == 2  # named for its session
    # the DM's recap tells it in its own register (CRD3 C1E001 turn 55), read when no line tells it in play
    recap = "You continued on your way to Kraghammer, presented your paperwork, were given entry into the city."
    assert telling_line(["Arrival at Kraghammer"], [*burst[:2], recap, burst[2]], gazetteer) == 3
    assert telling_line(["Arrival at Kraghammer"], [*burst[:2], recap], gazetteer) == 2
    # none tells it, or it is another event: the first
    assert telling_line(["Arrival at Kraghammer"], burst[:2], gazetteer) == 0
    assert telling_line(["Arrival at Whitestone"], burst, gazetteer) == 0
    # a death cited twice (CRD3 C1E050 turns 311 and 337: the meaning rule's line, then the clause rules')
    grog = ["Grog's still rolled on his back, eyes just dead, lifeless.", "Right now, Grog in the snow is dead."]
    assert telling_line(["Death of Grog Strongjaw"], grog, gazetteer) == 1


# Turning points read by meaning (events.meaning_sentences, events.meant_events, pipeline.meaning_events)

WHITESTONE, BAG = KNOWN[5], KNOWN[7]


def to_read(line: str) -> list[tuple[str, str, list[str]]]:
    text = narration(line)
    spans = [(a, b, x) for a, b, x in Gazetteer(KNOWN).find(text) if said_whole(text, a, b)]
    return [(s.text, s.entity.name, str(s.kind)) for s in meaning_sentences(text, spans)]


def test_the_sentences_read_by_meaning_name_one_entity_of_a_kinds_type_and_tell() -> None:
    assert to_read("They escort you guys to the bottom floor of Whitestone, and watch you enter. Roll.") == [
        ("They escort you guys to the bottom floor of Whitestone, and watch you enter.", "Whitestone", "arrival")
    ]
    assert to_read("Grog's still rolled on his back, eyes just dead.") == [
        ("Grog's still rolled on his back, eyes just dead.", "Grog Strongjaw", "death")
    ]
    # a question, a condition, a denial, an intention, a memory, the speech the DM voices: nothing is told
    for line in (
        "Is Jazna dead?", "If you enter Whitestone, the guards see you.", "Jazna does not die.",
        "You want to reach Whitestone.", "A year ago you entered Whitestone.", '"Jazna is dead," he says.',
    ):  # fmt: skip
        assert to_read(line) == [], line
    # two of a kind's type: which of them died is for the clause rules to tell
    assert to_read("Grog swings at Jazna, and the blow lands.") == []


def unit(*xs: float) -> list[float]:
    return [x / math.hypot(*xs) for x in xs]


# A fake of the embedder's space: 4 axes, one per kind's prototype and one for the near-misses, so each cosine is set
# by hand. meant_events only compares given unit vectors: the real model's part is pipeline.meaning_events' test.
PROTOS = {EventKind.death: [unit(1, 0, 0, 0)], EventKind.arrival: [unit(0, 1, 0, 0)],
          EventKind.acquisition: [unit(0, 0, 1, 0)]}  # fmt: skip
MISSES = [unit(0, 0, 0, 1)]


def meant(entity: KnownEntity, kind: EventKind, vector: list[float]) -> list[tuple[str, str | None]]:
    said = meant_events([Sentence("a line", entity, kind)], [vector], PROTOS, MISSES)
    return [(e.name, e.place.name if e.place else None) for e in said]


def test_a_sentence_near_enough_a_kinds_prototype_tells_its_turning_point() -> None:
    cos = MEANING_THRESHOLD[EventKind.arrival] + 0.02
    near = [cos, math.sqrt(1 - cos * cos)]
    assert meant(WHITESTONE, EventKind.arrival, [0, near[0], 0, near[1] / 3]) == [
        ("Arrival at Whitestone", "Whitestone")
    ]
    assert meant(JAZNA, EventKind.death, [0.9, 0, 0, 0.1]) == [("Death of Jazna", None)]
    assert meant(BAG, EventKind.acquisition, [0, 0, 0.9, 0.1]) == [("Acquisition of Bag of Holding", None)]


def test_no_turning_point_below_the_threshold_near_a_near_miss_or_near_another_kind() -> None:
    low = MEANING_THRESHOLD[EventKind.death] - 0.02
    assert meant(JAZNA, EventKind.death, [low, 0.3, 0, 0]) == []  # not near enough
    assert meant(JAZNA, EventKind.death, [0.7, 0, 0, 0.7 - MEANING_MARGIN / 2]) == []  # as near a near-miss
    assert meant(JAZNA, EventKind.death, [0, 0.95, 0, 0]) == []  # an arrival's words about a person


def test_the_cosines_read_at_once_tell_what_each_sum_of_products_told() -> None:
    """meant_events takes every cosine in one product of matrices: the same turning points as summing each pair's
    products one by one, for vectors near and far from the prototypes and the near-misses."""
    rng = random.Random(7)
    types = {EventKind.death: EntityType.npc, EventKind.arrival: EntityType.location,
             EventKind.acquisition: EntityType.item}  # fmt: skip
    sentences, vectors = [], []
    for n in range(300):
        kind = rng.choice(list(types))
        sentences.append(Sentence(f"line {n}", KnownEntity(id=100 + n, name=f"Thing {n}", type=types[kind]), kind))
        toward = [PROTOS[kind][0], *(MISSES if rng.random() < 0.5 else [])]
        vectors.append(unit(*(rng.gauss(0, 0.4) + sum(rng.random() * v[i] for v in toward) for i in range(4))))

    def cos(a: Sequence[float], b: Sequence[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    summed = {
        s.entity.name
        for s, v in zip(sentences, vectors, strict=True)
        if (score := max(cos(v, p) for p in PROTOS[s.kind])) >= MEANING_THRESHOLD[s.kind]
        and score >= max(cos(v, p) for p in MISSES) + MEANING_MARGIN
    }
    told = meant_events(sentences, vectors, PROTOS, MISSES)
    assert {e.place.name if e.place else e.participants[0].name for e in told} == summed
    assert 0 < len(summed) < len(sentences)
    assert meant_events([], [], PROTOS, MISSES) == []


class OtherModel:
    model_name, dim = "text-embedding-3-small", 4

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise AssertionError("the thresholds are MiniLM's cosines: another model is not asked")


@pytest.mark.slow
async def test_the_dms_lines_tell_turning_points_by_meaning_with_minilm() -> None:
    inn = KnownEntity(id=90, name="The Nestled Nook Inn", type=EntityType.location, aliases=["Nestled Nook Inn"])
    gazetteer = Gazetteer([*KNOWN, inn])
    lines = entries(  # CRD3 C2E002 turn 371: "they", not "you", escort: no clause rule reads it
        ("MATT", "They escort you guys to the actual inn itself, to the bottom floor of the Nestled Nook Inn, watch "
                 "you enter, and then post up right outside the main entrance to the tavern."),
        ("TRAVIS", "We arrive at Whitestone!"),  # a player's line: only the DM's are read
        ("MATT", "You continue your trek northward toward Whitestone."),  # a journey, not yet an arrival
        ("MATT", "Grog's still rolled on his back, eyes just dead, lifeless."),
        ("MATT", "So, Grog, he falls unconscious."),  # a near-miss
    )  # fmt: skip
    narrates = narrator(lines, None)
    found = await meaning_events(lines, narrates, gazetteer, MiniLMEmbedder())
    assert {i: [e.name for e in told] for i, told in found.items()} == {
        lines[0].id: ["Arrival at The Nestled Nook Inn"], lines[3].id: ["Death of Grog Strongjaw"]
    }  # fmt: skip
    assert await meaning_events(lines, narrates, gazetteer, OtherModel()) == {}


class CountingMiniLM(MiniLMEmbedder):
    """The real model, counting the texts it is asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.asked += texts
        return await super().embed(texts)


@pytest.mark.slow
async def test_a_session_read_again_embeds_only_the_dms_new_sentences() -> None:
    """The extraction job reads the whole session by meaning for each batch a live session writes: the sentences
    read before are not embedded again, and what they tell is the same."""
    gazetteer = Gazetteer(KNOWN)
    first = entries(("MATT", "Grog's still rolled on his back, eyes just dead, lifeless."))
    embedder = CountingMiniLM()
    told = await meaning_events(first, narrator(first, None), gazetteer, embedder)
    asked = len(embedder.asked)
    assert asked > 0 and [e.name for e in told[first[0].id]] == ["Death of Grog Strongjaw"]
    more = entries(
        ("MATT", "Grog's still rolled on his back, eyes just dead, lifeless."),
        ("MATT", "They escort you guys to the gates of Whitestone and watch you enter."),
    )
    again = await meaning_events(more, narrator(more, None), gazetteer, embedder)
    assert embedder.asked[asked:] == ["They escort you guys to the gates of Whitestone and watch you enter."]
    assert [e.name for e in again[more[0].id]] == ["Death of Grog Strongjaw"]


async def test_someone_told_alive_is_no_death_by_meaning() -> None:
    # MiniLM puts "alive" near "dies": these scored 0.56 and 0.61 with the deaths, over the threshold
    zoe = KnownEntity(id=91, name="Zoë Ashgrove", type=EntityType.npc, aliases=["Zoë"])
    lena = KnownEntity(id=92, name="Lena Ashgrove", type=EntityType.npc, aliases=["Lena"])
    lines = entries(("MATT", "Zoë is alive."), ("MATT", "Lena is alive."), ("MATT", "The life fades from Lena's eyes."))
    found = await meaning_events(lines, narrator(lines, None), Gazetteer([zoe, lena]), MiniLMEmbedder())
    assert {i: [e.name for e in told] for i, told in found.items()} == {lines[2].id: ["Death of Lena Ashgrove"]}


async def test_the_rules_propose_a_turning_point_told_by_meaning_once() -> None:
    lines = entries(("MATT", "They escort you to the gates of Whitestone, where Grog arrives at Whitestone."))
    meant_here = {lines[0].id: [Event(EventKind.arrival, "Arrival at Whitestone", place=WHITESTONE)]}
    result = await RuleExtractor().extract(lines, KNOWN, meant=meant_here)
    assert [(e.name, e.entry_ids) for e in result.entities] == [("Arrival at Whitestone", [lines[0].id])]
    # the rules' own telling keeps its people; the meaning adds no second event
    assert sorted((f.source, f.type, f.target) for f in result.facts) == [
        ("Arrival at Whitestone", "located_in", "Whitestone"),
        ("Grog Strongjaw", "took_part_in", "Arrival at Whitestone"),
    ]
    alone = await RuleExtractor().extract(entries(("MATT", "The doors close behind you.")), KNOWN,
                                          meant={100: meant_here[lines[0].id]})  # fmt: skip
    assert [(e.name, e.type) for e in alone.entities] == [("Arrival at Whitestone", "event")]
