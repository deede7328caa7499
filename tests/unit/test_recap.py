"""The offline recap: a line from each part of the session, the narrator's story before table talk, short enough
for an embed."""

from __future__ import annotations

from datetime import UTC, datetime

from memory.correction import EntityName
from memory.gazetteer import Gazetteer
from memory.jobs import extractive_summary
from memory.models import Entry, played_there, speaker_label
from memory.recap import voiced_by

ENTITIES = [
    EntityName(id=1, name="Eldrinax"),
    EntityName(id=2, name="Ironhold"),
    EntityName(id=3, name="Vaskerrin Holt", aliases=["the Pale Magister"]),
    EntityName(id=4, name="Ember Key"),
]
NAMES = {e.id: e.name for e in ENTITIES if e.id is not None}


def entry(seq: int, speaker: str, text: str) -> Entry:
    return Entry(
        id=seq, campaign_id=1, session_id=1, seq=seq, speaker=speaker, speaker_id=None, raw_text=text, text=text,
        start_s=float(seq), end_s=None, duration_s=None, ref=None, corrections=[], created_at=datetime.now(UTC),
    )  # fmt: skip


def summarise(said: list[tuple[str, str]]) -> list[str]:
    text, _ = extractive_summary(
        [entry(n, who, what) for n, (who, what) in enumerate(said, 1)], Gazetteer(ENTITIES), NAMES
    )
    return text.splitlines()


def chatter(n: int) -> list[tuple[str, str]]:
    """The table talking: nothing of the story, nothing to name."""
    lines = [
        ("Ana", "I think we should probably wait here for a bit."),
        ("Bo", "Can someone pass me the snacks please?"),
        ("Mira", "Give me a second here to find the right page of my notes."),
    ]
    return [lines[i % 3] for i in range(n)]


def test_a_long_session_is_told_from_its_beginning_middle_and_end() -> None:
    """The names crowd the first scene (the DM's summary of last week); the night's three events are spread over
    1,200 lines. Each part of the session (a sixth of it here) gives a line, so all three are told."""
    said = [("Mira", "Eldrinax, Ironhold, the Pale Magister and the Ember Key were all we spoke of last time.")] * 8
    said += chatter(300)
    said += [("Mira", "At the gates of Ironhold the guards stop you and ask your names.")]
    said += chatter(400)
    said += [("Mira", "Deep below the city the Pale Magister opens a door of bone.")]
    said += chatter(400)
    said += [("Mira", "The dragon Eldrinax wakes, and the whole mountain shakes with his roar.")]
    said += chatter(100)
    lines = summarise(said)
    assert "Mira: At the gates of Ironhold the guards stop you and ask your names." in lines
    assert "Mira: Deep below the city the Pale Magister opens a door of bone." in lines
    assert "Mira: The dragon Eldrinax wakes, and the whole mountain shakes with his roar." in lines
    assert lines[-1] == "Involved: Eldrinax, Ironhold, Vaskerrin Holt, Ember Key"
    assert len(lines) - 1 == 6  # a line a part: the story's four, and the table's talk where nothing happened


def test_the_recap_credits_the_character_the_dm_voices_by_a_marker() -> None:
    """A home DM voices a character with "(as Eldrinax) …" or "I'm Eldrinax now.": the recap said the DM said it."""
    for marker in ("(as Eldrinax)", "I'm Eldrinax now."):
        said = [*chatter(3), ("Mira", f"{marker} The Ember Key is mine, and Ironhold will burn before the dawn.")]
        said += [("Mira", "The road to Ironhold is long and cold.")] * 3
        lines = summarise(said)
        assert "Mira (as Eldrinax): The Ember Key is mine, and Ironhold will burn before the dawn." in lines, lines
    # a marker naming no one known, or a player's: as said
    said = [*chatter(3), ("Mira", "(as the guard) The Ember Key stays in Ironhold tonight, friends.")]
    assert "Mira: (as the guard) The Ember Key stays in Ironhold tonight, friends." in summarise(said)


def test_the_dms_next_lines_in_the_voice_are_the_characters_too() -> None:
    """ "(as Eldrinax) …" then the players answer and the DM goes on in his voice: only the marked line was his. The
    voice lasts until the DM narrates again."""
    said = [("Mira", "(as Eldrinax) Kneel."), ("Ana", "Never! Where is the key?")]
    said += [("Mira", "I have waited a thousand years for the Ember Key, and Ironhold will burn for it.")]
    said += [*chatter(3), ("Mira", "The dragon Eldrinax spreads his wings over the towers of Ironhold at dawn.")]
    lines = summarise(said)
    assert (
        "Mira (as Eldrinax): I have waited a thousand years for the Ember Key, and Ironhold will burn for it." in lines
    )
    assert "Mira: The dragon Eldrinax spreads his wings over the towers of Ironhold at dawn." in lines, lines


def test_rules_and_table_talk_are_not_the_recap() -> None:
    """Each part holds a line of rules talk naming two entities and a line of story naming one: the story is told."""
    said = []
    for n in range(5):
        said.append(("Mira", f"Eldrinax rolls a {12 + n} for initiative, so Ironhold's guards take damage first."))
        said.append(("Mira", "The bells of Ironhold ring out over the frozen lake as night falls."))
    lines = summarise(said)
    assert lines[:-1] == ["Mira: The bells of Ironhold ring out over the frozen lake as night falls."] * 5
    assert not any("initiative" in line for line in lines)


def test_the_narrators_line_is_chosen_over_a_players() -> None:
    """Who narrates is who says most (no one is called DM here): of a line of hers and a player's naming as much,
    hers is the story."""
    said = []
    for n in range(5):
        said.append(("Mira", f"The Ember Key glows in the dark hall number {'one two three four five'.split()[n]}."))
        said.append(("Ana" if n % 2 else "Bo", "I grab the Ember Key and I run for the stairs."))
    lines = summarise(said)
    assert [line.split(":")[0] for line in lines[:-1]] == ["Mira"] * 5


def test_in_a_recorded_session_the_narrator_is_the_user_who_ran_it_not_a_player_called_dm() -> None:
    """A player may call themself "DM" on Discord: the session knows its DM by user id, and her lines are the
    story, though a player's name says DM and names as much."""
    said = []
    for n in range(5):
        said.append(
            ("Mira", "u-mira", f"The Ember Key glows in the dark hall number {'one two three four five'.split()[n]}.")
        )
        said.append(("DM", "u-bo", "I grab the Ember Key and I run for the stairs."))
    entries = [entry(n, who, what).model_copy(update={"speaker_id": uid}) for n, (who, uid, what) in enumerate(said, 1)]
    text, _ = extractive_summary(entries, Gazetteer(ENTITIES), NAMES, dm_speaker_id="u-mira")
    assert [line.split(":")[0] for line in text.splitlines()[:-1]] == ["Mira"] * 5


def test_a_recap_of_long_speeches_fits_an_embed() -> None:
    """Three hours of long narration: each line quotes a few sentences at most, and the recap with its
    "Involved:" list stays within the 2,000 characters of the session's event entity."""
    speech = " ".join(
        f"The road to Ironhold winds past the {w} ruins where Eldrinax once slept for a hundred years."
        for w in ("old", "burnt", "grey", "quiet", "sunken", "broken")
    )
    lines = summarise([("Mira", speech)] * 3000)
    assert len("\n".join(lines)) <= 2000
    assert 5 <= len(lines) - 1 <= 12 + 1  # a line a part, and the last scene's
    assert all(len(line.split()) <= 26 + 1 for line in lines[:-1])  # "Mira:" and at most 25 words


def test_the_recap_quotes_no_pre_show_sponsor_read_or_rules_talk() -> None:
    """The issue's recap quoted "That will be the end of its turn. Let's see if that recharges.": rules, not story.
    Nor may it quote the pre-show's plug, however many names it holds."""
    said = [("DM", "Welcome! Tonight's sponsor Wyrmwood makes the Ember Key replica for Eldrinax fans everywhere.")]
    said += [("Bo", "Eldrinax and Ironhold merch is in the store, check the Ember Key shirt at Ironhold dot com.")] * 5
    said += [("DM", "All right. Last we left off, the party stood before the gates of Ironhold at dusk.")]
    said += chatter(200)
    said += [("DM", "That will be the end of its turn. Let's see if that recharges. Eldrinax roars at Ironhold.")]
    said += chatter(200)
    said += [("DM", "Eldrinax burns the gates of Ironhold while the Pale Magister watches from the walls.")]
    lines = summarise(said)
    text = "\n".join(lines)
    assert "sponsor" not in text and "merch" not in text and "turn" not in text and "recharges" not in text
    assert any("Eldrinax burns the gates of Ironhold" in line for line in lines)


def test_the_recap_quotes_no_sentence_beside_rules_talk_that_tells_nothing() -> None:
    """Rules talk comes in runs: "Both of you get a brief move." is rules, and so is the sentence after it, which
    names two entities but moves their miniatures (CRD3 C1E035). The story sentence before them is quoted."""
    said = [
        (
            "Mira",
            "Both of you feel a sudden urge to strike at whatever is near you in the dark of Ironhold. Both of you "
            "get a brief move. Eldrinax, that's going to pull you this way, and the Pale Magister, it's going to "
            "pull you this way.",
        )
    ]
    said += chatter(10)
    lines = summarise(said)
    assert lines[0] == "Mira: Both of you feel a sudden urge to strike at whatever is near you in the dark of Ironhold."


def test_a_short_line_amid_rules_talk_is_not_quoted_unless_it_tells_what_happens() -> None:
    """ "With Percy and with Scanlan." answers "Do you want to sneak attack with this? ... in melee range with an
    ally." (CRD3 C1E035): it names two entities, but it is the rules talk's. A line there that tells what happens
    is the story's."""
    said = chatter(40)
    said[10:13] = [
        ("Mira", "Do you want to sneak attack with this? Because in theory, it's in melee range with an ally."),
        ("Bo", "Oh, with Eldrinax."),
        ("Mira", "With Eldrinax and with the Pale Magister."),
    ]
    assert not any("With Eldrinax" in line for line in summarise(said))
    said[12] = ("Mira", "You see Eldrinax and the Pale Magister fall.")
    assert "Mira: You see Eldrinax and the Pale Magister fall." in summarise(said)


def test_a_sentence_that_is_mostly_a_list_of_names_is_not_quoted() -> None:
    """ "So, that's Grog, Pike, Vex, Vax, and Percy." (CRD3 C1E080: a player counting who her spell reaches) names
    five entities and tells nothing: the table counting heads, not the story. A sentence whose list of names is the
    subject of what happens is still quoted."""
    said = chatter(40)
    said[10] = ("Mira", "So, that's Eldrinax, Ironhold, the Pale Magister, and the Ember Key.")
    said[20] = ("Mira", "The bells of Ironhold ring out over the frozen lake as night falls.")
    lines = summarise(said)
    assert not any("So, that's" in line for line in lines)
    assert "Mira: The bells of Ironhold ring out over the frozen lake as night falls." in lines
    said[10] = ("Mira", "Eldrinax, Ironhold and the Pale Magister all fall silent as the Ember Key begins to glow.")
    assert any("all fall silent" in line for line in summarise(said))


def test_the_dms_turn_order_is_not_quoted_whatever_its_names_are() -> None:
    """ "Okay, I've got Kes, Wren, the drowned, Oz, Ottilie, Thess." (a home table's initiative order): nicknames the
    campaign does not know, a name that is an English word and the monsters by their kind are a list of names too."""
    said = chatter(40)
    said[10] = ("Mira", "Okay, so I have Brin, Fox, the ghouls, Eldrinax, Tam.")
    said[20] = ("Mira", "The bells of Ironhold ring out over the frozen lake as night falls.")
    lines = summarise(said)
    assert not any("Brin" in line for line in lines)
    assert "Mira: The bells of Ironhold ring out over the frozen lake as night falls." in lines
    said[10] = ("Mira", "Then the cold, the dark and the silence of Ironhold close in around you.")
    assert any("the cold, the dark" in line for line in summarise(said))


def test_a_players_retelling_of_the_last_session_does_not_open_the_recap() -> None:
    """At a home table a player often recaps the last session ("Okay so last time, we …"): that session's story, not
    this one's. The recap opens with the DM's story after it."""
    said = [("Mira", "Welcome back, all. Who wants to do the recap?")]
    said += [("Bo", "Me! Okay so last time, we found the Ember Key in Ironhold and Eldrinax burned the gates.")]
    said += [("Ana", "And the Pale Magister got away with it.")]
    said += [("Mira", "Great recap. So, it's dawn, and the road to Ironhold is white with frost.")]
    said += [("Mira", f"You walk on towards Ironhold, past the mill {n}, Eldrinax circling above.") for n in range(30)]
    lines = summarise(said)
    assert not any("last time" in line or "got away" in line for line in lines)
    assert lines[0] == "Mira: So, it's dawn, and the road to Ironhold is white with frost."


def test_the_dm_placing_calling_or_ruling_on_the_characters_is_not_quoted() -> None:
    """The DM's rules talk among the characters' names (CRD3 C2E010, C1E035, C1E110): the initiative order before
    its die results are asked for, a miniature placed on the map, a save called for and its outcome. A die result
    before a sentence opens the telling of what the roll did: that sentence is the story's."""
    said = chatter(40)
    said[10] = ("Mira", "Oh, that's right. We have Eldrinax and the Pale Magister. 20 to 15?")
    said[14] = ("Mira", "I have you right here between him and the Pale Magister. Right there.")
    said[18] = ("Mira", "Not you, Eldrinax, you've already made it, but I need Vaskerrin Holt to make another.")
    said[22] = ("Mira", "You shrug it off. The might of Ironhold is too strong for the Pale Magister's grasp.")
    quoted = [line for line in summarise(said) if not line.startswith("Involved: ")]
    assert not any(name in line for line in quoted for name in ("Eldrinax", "Pale Magister", "Holt"))
    said[10] = (
        "Mira",
        "Rolled a 13. Eldrinax, you look over your shoulder as the Pale Magister lunges at you. You whip around "
        "with your shield and deflect the blade across the dark air of this tunnel, harmlessly.",
    )
    assert "Mira: Eldrinax, you look over your shoulder as the Pale Magister lunges at you." in summarise(said)


def test_a_plan_if_this_then_that_is_not_quoted_as_what_happened() -> None:
    """ "If she gets near Vex, then she can get Grog, Gilmore, Percy." (CRD3 C1E080) is a player weighing a move,
    not the story. A sentence that only starts with a condition and tells what is there is still quoted."""
    said = chatter(40)
    said[10] = ("Mira", "If the Pale Magister gets near Ironhold, then he can take the Ember Key from Eldrinax.")
    said[20] = ("Mira", "The bells of Ironhold ring out over the frozen lake as night falls.")
    lines = summarise(said)
    assert not any("If the Pale Magister" in line for line in lines)
    assert "Mira: The bells of Ironhold ring out over the frozen lake as night falls." in lines
    said[10] = ("Mira", "If you look up, you see Eldrinax and the Pale Magister circling over Ironhold.")
    assert "Mira: If you look up, you see Eldrinax and the Pale Magister circling over Ironhold." in summarise(said)


def test_a_long_sentence_is_quoted_to_a_clause_end_and_by_the_names_it_shows() -> None:
    """A narrator's run-on sentence is cut where a clause ends, not mid-phrase ("and you feel this…"), and a name
    past the cut does not count for it: the shorter line naming Ironhold is the story of the part."""
    run_on = (
        "As you make your way through the streets, the townsfolk begin to gather along the road in twos and "
        "threes, and you feel this strange warmth as the shadow of Eldrinax passes over the city walls."
    )
    alone = summarise([("Mira", run_on)] * 5)
    assert (
        alone[:-1]
        == [
            "Mira: As you make your way through the streets, the townsfolk begin to gather along the road in twos and "
            "threes…"
        ]
        * 5
    )
    lines = summarise([("Mira", run_on), ("Mira", "The guards of Ironhold bar the gate.")] * 5)
    assert lines[:-1] == ["Mira: The guards of Ironhold bar the gate."] * 5


def test_a_long_sentence_is_quoted_whole_or_cut_at_a_clause_end() -> None:
    """A long sentence with no comma among its words 13-25 was cut after its last word within 25 that is no
    function word: mid-clause ("…rags from the Bag…", "…his face contorts into horrible…"). One of up to 45 words is
    now quoted whole; a longer one is cut at a clause end (a comma, semicolon, colon or dash), else not quoted."""
    whole = [
        "You glance over and you're more distracted by the fact that Keyleth is doing this awkward field goal thing "
        "in the door to you for no reason, and you forget what you were in the middle of doing.",
        "So yeah, as you guys are having this conversation, Grog comes over and pulls out a mottled mass of really "
        "filthy rags from the Bag of Holding, probably used in various nose-wiping circumstances.",
        "Where once Percy's face existed, it twists into this shimmering apparition of Sylas Briarwood looking down "
        "at her as his face contorts into horrible, screaming pain.",
        "You hear a sound and you look down just as the rock below splits apart and from the crack a spray of molten "
        "rock just sprays outward across the stone floor of the long hall and up the walls.",
    ]
    for sentence in whole:
        assert summarise([("Matt", sentence)] * 5) == [f"Matt: {sentence}"] * 5
    very_long = (
        "The wind picks up across the plain of Ironhold and the banners of the guard snap in the cold, and beyond "
        "the wall the fires of the camp burn low as the scouts return one by one with news of the dragon that "
        "nobody in the keep wants to hear tonight before the bells ring out across the whole of the valley below"
    )
    assert (
        summarise([("Matt", very_long + ".")] * 5)[:-1]
        == ["Matt: The wind picks up across the plain of Ironhold and the banners of the guard snap in the cold…"] * 5
    )
    no_clause = very_long.replace(", and", " and") + "."
    assert (
        summarise([("Matt", no_clause), ("Matt", "The guards of Ironhold bar the gate.")] * 5)[:-1]
        == ["Matt: The guards of Ironhold bar the gate."] * 5
    )


def test_a_quotation_the_line_ends_in_is_closed() -> None:
    """The sentences end inside the quotation, so the line would show it open: she goes, "I am the last.…"""
    said = (
        'Eldrinax rises and says, "I am the last of my kind. There were once a hundred of us circling these '
        "peaks above the lake, and we ruled from the mountains to the sea for a thousand years and more before "
        'the dwarves came."'
    )
    lines = summarise([("Mira", said)] * 5)
    assert lines[:-1] == ['Mira: Eldrinax rises and says, "I am the last of my kind."'] * 5


def test_a_sentence_naming_someone_at_the_table_is_not_the_story() -> None:
    """ "Ashley, Matt is whispering in Taliesin's ear": a player speaks of the table by the names its speakers go
    by, which are no entity's. A speaker named as an entity is (a player called Eldrinax on Discord) is not."""
    said = [
        ("Mira", "The bells ring out over the frozen lake tonight."),
        ("Bo", "Mira is whispering to the others about Eldrinax again, just so you know."),
        ("Ana", "Okay."),
    ] * 5
    assert summarise(said)[:-1] == ["Mira: The bells ring out over the frozen lake tonight."] * 5
    named = [(who.replace("Mira", "Eldrinax"), what.replace("Eldrinax", "Ironhold")) for who, what in said]
    assert summarise(named)[0].startswith("Bo: ")  # "Eldrinax" is the dragon's name too: not the table's


def test_only_who_the_narrator_names_in_the_story_takes_part() -> None:
    """A player's joke as another campaign's character ("(as Grog)"), or the players talking of one, is no
    evidence: the narrator names Eldrinax and Ironhold; the players Eldrinax once and Vaskerrin Holt three times."""
    said = [("Mira", "The dragon Eldrinax circles the tower of Ironhold.")]
    said += chatter(50)
    said += [("Ana", "I swing at Eldrinax!"), ("Bo", "(as Vaskerrin Holt) That worked way better than I thought.")]
    said += [("Ana", "Vaskerrin Holt never lied."), ("Bo", "I don't care what Vaskerrin Holt did.")]
    entries = [entry(n, who, what) for n, (who, what) in enumerate(said, 1)]
    text, involved = extractive_summary(entries, Gazetteer(ENTITIES), NAMES)
    assert involved == [1, 2]
    assert text.splitlines()[-1] == "Involved: Eldrinax, Ironhold"


def test_the_recap_quotes_no_ruling_on_a_kind_or_on_the_turn_and_no_staging() -> None:
    """The DM ruling on what a creature is under the rules, telling a player what the turn allows, or placing the
    characters speaks of the table, however many names it holds: the story's line of the same part is quoted."""
    said = chatter(40)
    said[3] = ("Mira", "The Pale Magister is undead, so Eldrinax's sleep spell does nothing to him at Ironhold.")
    said[5] = ("Mira", "The Pale Magister bows to Eldrinax.")
    said[10] = ("Mira", "Eldrinax, you can still move, you just lose your reaction to the Pale Magister.")
    said[19] = ("Mira", "We have the two of you at the gates of Ironhold. Eldrinax waits beside the Pale Magister.")
    lines = summarise(said)
    text = "\n".join(lines)
    assert "undead" not in text and "move" not in text and "two of you" not in text and "waits beside" not in text
    assert "Mira: The Pale Magister bows to Eldrinax." in lines


def test_a_first_name_makes_a_character_involved_but_scores_no_line() -> None:
    """A line "Vaskerrin sneers." names Vaskerrin Holt, so he is involved (the villain dropped out of his own session's
    list); which line a part quotes is scored by names as it was tuned, first names alone aside."""
    people = Gazetteer(ENTITIES, people=[ENTITIES[2]])
    said = [("Mira", "Vaskerrin sneers at you from the old tower."), ("Mira", "The tower of Ironhold looms over you.")]
    said += chatter(8)
    entries = [entry(n, who, what) for n, (who, what) in enumerate(said, 1)]
    text, involved = extractive_summary(entries, people, NAMES)
    assert involved == [3, 2] and text.splitlines()[-1] == "Involved: Vaskerrin Holt, Ironhold"
    assert text.splitlines()[0] == "Mira: The tower of Ironhold looms over you."
    assert text.splitlines()[:-1] == extractive_summary(entries, Gazetteer(ENTITIES), NAMES)[0].splitlines()[:-1]


def test_a_voiced_line_of_a_recap_is_cited_with_its_time_as_any_other() -> None:
    """The recap the assistant reads quotes each line with its time ("[0:02] Mira: …"); a line the DM said as a
    character ("Mira (as Eldrinax): …") went without: its speaker was looked for as "Mira (as Eldrinax)"."""
    from memory.mcp_tools import cited

    said = [*chatter(1), ("Mira", "(as Eldrinax) The Ember Key is mine, and Ironhold will burn before the dawn.")]
    entries = [entry(n, who, what) for n, (who, what) in enumerate(said, 1)]
    summary = "\n".join(
        ["Ana: I think we should probably wait here for a bit.", "Mira (as Eldrinax): The Ember Key is mine, and…"]
    )
    assert cited(summary, entries).splitlines() == [
        "[0:01] Ana: I think we should probably wait here for a bit.",
        "[0:02] Mira (as Eldrinax): The Ember Key is mine, and…",
    ]


def test_the_dms_previously_on_leads_the_recap_under_its_own_lead_not_as_tonight() -> None:
    """The DM opens with the story so far ("Last we left off, …"): earlier sessions', not tonight's. A part of the
    session never quotes it as what happened; its most telling line leads the recap as "Previously: …"."""
    from memory.mcp_tools import cited

    said = [("Mira", "Welcome back, everyone, good to see you all here tonight.")]
    said += [("Mira", "Last we left off, you had taken the Ember Key from the vaults of Ironhold, and fled.")]
    said += [("Mira", "Eldrinax had burned the gates behind you as the Pale Magister watched from the walls.")]
    said += [("Mira", "So, it's dawn, and the road to the coast is white with frost.")]
    said += [("Mira", f"You walk on towards the coast, past the mill {n}, gulls circling.") for n in range(20)]
    said += chatter(200)
    lines = summarise(said)
    opening = "Last we left off, you had taken the Ember Key from the vaults of Ironhold, and fled."
    assert lines[0] == f"Previously: Mira: {opening}"
    assert not any("Ironhold" in line for line in lines[1:-1])  # the rest is tonight
    assert lines[1] == "Mira: So, it's dawn, and the road to the coast is white with frost."
    entries = [entry(n, who, what) for n, (who, what) in enumerate(said, 1)]
    assert cited(lines[0], entries) == f"[0:02] {lines[0]}"  # cited as any quoted line


def test_the_dm_running_a_fight_is_not_quoted() -> None:
    """A creature's attacks announced, who is in melee, a turn's end: what the turn holds, not what happened."""
    for move in [
        "It's going to take all three of its strikes at you, Eldrinax.",
        "They're both going to take shots at Eldrinax and the Pale Magister.",
        "The Pale Magister is coming into combat with both Eldrinax and the guards.",
        "All right, so that ends Eldrinax.",
    ]:
        said = [*chatter(3), ("Mira", move), *chatter(3)]
        said += [("Mira", "The dragon wakes, and the whole mountain shakes with his roar.")]
        assert not any(move in line for line in summarise(said)), move


def test_a_line_does_not_end_on_the_first_words_of_a_quotation() -> None:
    """Yennen goes, "My friends." and the favour he asks comes after: a line ending on a quotation's first words
    quotes its greeting, not what is said."""
    said = (
        'Eldrinax turns from the Pale Magister, approaches you once again and goes, "My friends. We have two weeks '
        'until the festival, something we have not celebrated in near five years."'
    )
    lines = summarise([("Mira", said)] * 5)
    assert (
        lines[:-1]
        == ['Mira: "We have two weeks until the festival, something we have not celebrated in near five years."'] * 5
    )


def test_a_players_first_person_declaration_is_not_quoted() -> None:
    """A player declaring their character's move at the table ("… and I will send out a Fire Bolt") asks for a move;
    it is not the story told."""
    said = [("Mira", "Welcome back, everyone.")] * 10
    said += [("Liam", "Eldrinax sends the Pale Magister down to the gate and I will send out a Fire Bolt as well.")]
    said += [("Mira", "Welcome back, everyone.")] * 10
    assert not any("Fire Bolt" in line for line in summarise(said))


def test_the_recap_ends_with_the_sessions_last_scene() -> None:
    """The last part's best-named line came before the cliffhanger, and the closing thanks took a share of the
    parts: the recap stopped before the session's last scene. It ends with it now."""
    said = [("Mira", "At the gates of Ironhold the guards stop you and ask your names.")]
    said += chatter(1100)
    said += [("Mira", "Eldrinax and the Pale Magister watch from the walls of Ironhold as you pass the Ember Key.")]
    said += chatter(150)
    said += [("Mira", "You slide down into the refuse heap of Ironhold, and two giant tendrils pull out of it.")]
    said += chatter(5)
    # the goodbyes after the game: no part of its last scene
    said += [("Mira", "If you have been watching that show, he has been awesome on it for a long time now.")] * 5
    lines = summarise(said)
    assert lines[-2] == "Mira: You slide down into the refuse heap of Ironhold, and two giant tendrils pull out of it."


def test_a_players_quote_names_the_character_they_play_as_recall_does() -> None:
    """The recap quoted "Liam: Caleb sends Frumpkin …" where recall showed "Liam (Caleb Widogast)": one label, by
    :func:`memory.models.speaker_label`, of the character the player plays here (of several, the one the narrator
    names); a character kept secret is never named."""
    people = [*ENTITIES, EntityName(id=5, name="Grog Strongjaw", aliases=["Grog"]), EntityName(id=6, name="Fjord")]
    names = {e.id: e.name for e in people if e.id is not None}
    said = [
        ("Mira", "Grog Strongjaw shoulders open the gate of Ironhold and the guards scatter before him."),
        ("Travis", "I grab the Ember Key from the altar of Ironhold and run."),
    ] * 3
    entries = [entry(n, who, what) for n, (who, what) in enumerate(said, 1)]
    characters = {"travis": [5, 6], "mira": []}
    text, _ = extractive_summary(entries, Gazetteer(people), names, characters=characters)
    assert "Travis (Grog Strongjaw): I grab the Ember Key from the altar of Ironhold and run." in text.splitlines()
    text, _ = extractive_summary(entries, Gazetteer(people), names, characters=characters, secret={5})
    assert "Travis: I grab the Ember Key from the altar of Ironhold and run." in text.splitlines()
    # of several, none the narrator names: which one is not known
    text, _ = extractive_summary(entries, Gazetteer(people), names, characters={"travis": [6, 4]})
    assert "Travis: I grab the Ember Key from the altar of Ironhold and run." in text.splitlines()


def test_one_label_for_a_speaker() -> None:
    assert speaker_label("Travis", "Grog Strongjaw") == "Travis (Grog Strongjaw)"
    assert speaker_label("Travis", None) == "Travis" and speaker_label("Grog", "grog") == "Grog"
    assert played_there({"liam": [1, 2], "travis": [3], "sam": [4, 5]}, {2, 4, 5}) == {"liam": 2, "travis": 3}
    assert voiced_by("Travis (Grog Strongjaw)") == voiced_by("Travis (as Grog)") == "Travis"
