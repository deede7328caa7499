"""The out-of-game talk detector: lines on their own, a session's segments, and its precision on the hand labels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory.offgame import (
    VOICE_LINES,
    Talk,
    dm_speaker,
    is_table_talk,
    line_talk,
    session_talk,
    tells_last_session,
    voice_of,
)

LABELS = Path(__file__).resolve().parents[1] / "data" / "offgame_crd3_labels.json"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("If you use the code CritRole, you'll get free shipping from Wyrmwood.", Talk.sponsor),
        ("Head over to the twitch chat if you want to be entered in the giveaway.", Talk.sponsor),
        ("17.", Talk.dice),
        ("13 for Trinket.", Talk.dice),
        ("Make a persuasion check.", Talk.dice),
        ("That will be the end of its turn. Let's see if that recharges.", Talk.dice),
        ("Wait that was a 15! Right? That was the dice I rolled? 16.", Talk.dice),
        # the DM's rules talk: the turn and its parts, checks called for, dice notation (CRD3 dev lines)
        ("All right, that ends Nott's turn. Fjord, you're up.", Talk.dice),
        ("True dragonborn challenge. That brings us to Vax.", Talk.dice),
        ("Okay, so you use your bonus dash, your movement to get there, so you move up 60.", Talk.dice),
        ("Make a persuasion check for that. It's a very persuasion based encounter.", Talk.dice),
        ("That would be the lowest. That's 2d4 plus two.", Talk.dice),
        (
            "You want to stay there or you want to move? You are in its melee range. You are in its melee range, so "
            "if you move it will get an attack of opportunity if it chooses to take it.",
            Talk.dice,
        ),
        # one die, the noun (CRD3 lines): after a determiner or what kind of die it is
        ("Plus don't forget you double the necrotic die.", Talk.dice),
        ("I'm adding my bonus die.", Talk.dice),
        ("I used Scanlan's die.", Talk.dice),
        ("That was my eight-sided die.", Talk.dice),
        ("It's one die of necrotic.", Talk.dice),
        # the turn order called (CRD3 lines); a ruling is the recap's alone (``is_table_talk``): read as dice talk,
        # a short story line beside it was taken for the exchange's continuation and left out of the recap
        ("Grog, you're on deck.", Talk.dice),
        ("Grog? Vex, you're up. And you're on deck, Vax.", Talk.dice),
        ("You are on deck of the ship as the storm hits.", None),
        ("If only that were true in real life.", Talk.banter),
        ("Yep. (laughter)", Talk.banter),
        # the story's, numbers and all
        ("Three gold.", None),
        ("That's 40 days.", None),
        ("The ogre takes 24 points of damage and collapses, dead.", None),
        ("Trinket is gaining on you. (laughter)", None),
        ("Jazna spits at your feet. She refuses to aid Whitestone and chooses death.", None),
        # the story's "die": a death, after a subject, a modal or "to" (CRD3 lines, and what a table says too)
        ("No one else die.", None),
        ("Let's die together.", None),
        ("I'm just a man who saw another man die yesterday.", None),
        ("Don't let her die.", None),
        ("We're all going to die.", None),
        ("Let the fire die down.", None),
        # the idiom: a choice made, not a die at the table, unless the line rolls one too
        ("The die is cast.", None),
        ("the die is cast", None),
        ("And so the die has been cast, Percival says.", None),
        ("The die is cast and you roll a 17.", Talk.dice),
        ("The die is a 4.", Talk.dice),
        # rules words beside a sentence that tells what happens, or words the story says too
        (
            "Eight! Yeah! All right. First and foremost, Vex, you're up with the initiative on this. You go ahead and "
            "you bring your holy arrow and you release it.",
            None,
        ),
        ("There's movement in the trees up ahead.", None),
        ("Your actions will not go unanswered, he says.", None),
        ("", None),
    ],
)
def test_a_line_on_its_own(text: str, kind: Talk | None) -> None:
    assert line_talk(text) == kind


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        # a percentile game's table (a Call of Cthulhu night): rolls called by skill, results with their outcome,
        # the sheet, ability scores in capitals, a rules question
        ("Okay, Kim, Dev, both of you make a Psychology roll on Wilmarth.", Talk.dice),
        ("Make a Sleight of Hand, or I'll let you use DEX at half.", Talk.dice),
        ("Okay. Roll initiative. Well, in Call of Cthulhu it's DEX order. Tommy, you go first, then Ruth.", Talk.dice),
        ("20 pass", Talk.dice),
        ("50 exactly", Talk.dice),
        ("88 lol", Talk.dice),  # typed laughter, which no story says
        ("73. damn", Talk.dice),  # a result by its full stop, whatever follows
        ("4. ugh", Talk.dice),
        ("Check your sheet. You started at 55.", Talk.dice),
        ("hey can I ask a rules question, if I punch somebody is that fighting maneuver or just brawl", Talk.dice),
        # the table outside the fiction: a phone call, the game's sessions, who narrates
        ("wait hold on, my phone, it's the babysitter", Talk.banter),
        ("sorry, phone again. it's my mom. I'll call her back", Talk.banter),
        ("one sec, my phone's ringing", Talk.banter),
        ("52 then. no wait 51, I lost 1 in the first session too", Talk.banter),
        ("Next session, we start at 7.", Talk.banter),
        ("I missed last session, what happened?", Talk.banter),
        ("since Doyle's dead can I at least narrate what happens to the body", Talk.banter),
        # the story: a number in a place's name, "checks" the verb, a roll of the story, a call asked back
        ("we head for Pier 9", None),
        # a phone of the story, not the speaker's own ("my phone", a bare "phone" as they break off)
        ("Hang on, the phone is ringing in the hallway.", None),
        ("Wait, the phone rings downstairs and Mrs. Pruitt answers it.", None),
        ("The babysitter screams.", None),
        ("Tommy checks his revolver", None),
        ("Far Cry 5!", None),
        ("25 total pieces.", None),
        (
            "Roll both? Yeah. As you swing down, the gnoll manages to see you up in the air and side steps as you "
            "hit the stonework.",
            None,
        ),
    ],
)
def test_other_games_table_talk_and_their_story(text: str, kind: Talk | None) -> None:
    """Not only D&D's: what a percentile game's table says between the story's lines, and story lines with a
    number or a verb the rules use too."""
    assert line_talk(text) == kind


@pytest.mark.parametrize(
    "text",
    [
        "Last session, you slew Thordak at Whitestone.",
        "In the last session, Mira gave you the Ember Key.",
        "In the first session, you met Mira at the docks.",
        # the story's "you all", "you two", "we left you": the party the narrator tells of
        "Last session, you all fled Emon with the Ember Key.",
        "Last session, you two fled Emon with the Ember Key.",
        "Last session, we left you at the gates of Emon.",
        "Last session we left off in the tunnels under Emon.",
    ],
)
def test_a_past_session_that_sets_the_time_of_what_is_told_is_the_story(text: str) -> None:
    """The DM's short recap of a session is no aside about the game: extraction reads it and the recap quotes it."""
    assert line_talk(text, narrated=True) is None
    assert not is_table_talk(text, narrated=True)
    assert session_talk([(text, True)]) == [None]


@pytest.mark.parametrize(
    ("text", "narrated"),
    [
        ("Last session we forgot to level up.", False),
        ("Last session we ran way over time, sorry guys.", False),
        ("last session you guys were so loud lol", False),
        ("Last session Discord crashed.", False),
        ("Last session Sam wasn't here.", False),
        ("oh my god, last session we rolled so many nat ones", False),
        ("Last session, you slew Thordak at Whitestone.", False),
        # the DM talking to the table: "we", "you guys"
        ("Last session we forgot to level up.", True),
        ("last session you guys were so loud lol", True),
    ],
)
def test_table_talk_about_a_past_session_stays_an_aside(text: str, narrated: bool) -> None:
    """A player's line on the last session, or the table's "we" and "you guys", is talk about the game."""
    assert line_talk(text, narrated=narrated) == Talk.banter
    assert is_table_talk(text, narrated=narrated)
    assert session_talk([("Okay.", not narrated), (text, narrated)])[1] == Talk.banter


def test_the_recap_quotes_no_sentence_of_rules_dice_or_the_show() -> None:
    assert is_table_talk("That will be the end of its turn.")
    assert is_table_talk("Go check out the Twitch stream.")
    assert is_table_talk("You take 14.")
    assert is_table_talk("Pike and Grog and technically Trinket, as well, are all in melee.")
    assert is_table_talk("All right, the gnolls are up first.")
    assert is_table_talk("Both of you get a brief move.")
    assert is_table_talk("I have you right here between him and Lady Briarwood.")
    assert is_table_talk("Not you, Vax, you've already made it, but I need Pike, Percy, and Scanlan to make another.")
    assert is_table_talk("Scanlan, Pike, and Vax, I need you and you because you're still in the back--")
    assert is_table_talk("You shrug it off.")
    assert not is_table_talk("Grog beheads Jazna so swiftly that it stuns the crowd.")
    assert not is_table_talk("I need you to find my daughter before the Briarwoods do.")


@pytest.mark.parametrize(
    "sentence",
    [
        # a player told what the turn allows: second person, its economy, the present, no story verb
        "Mira, you still have fifteen feet of movement left.",
        "You can still move, but only up to the door.",
        "Go ahead and move, Bo.",
        # a creature's kind or immunities as the rules read them
        "The Pale Magister is undead, so the sleep spell does nothing to him.",
        "Oozes don't have eyes, so it can't be blinded.",
        "The golem is immune to fire.",
        "It isn't a fiend.",
        # the DM staging the table
        "We have both of you at the top of the stairs.",
    ],
)
def test_a_ruling_is_table_talk(sentence: str) -> None:
    assert is_table_talk(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "You move to the window and look out over the harbour.",  # a move told, not allowed
        "The undead rise from the marsh as the bell tolls.",  # creatures of a kind, doing
        "The fiend's claws rake across his chest.",
        "It's a dragon!",  # a kind seen, not ruled on
        "You were immune to her charms once.",  # the past: the story
        "We have Ironhold to protect, she says.",  # a character's "we"
        "You don't even notice the resistance of the lock.",
    ],
)
def test_the_story_is_no_ruling(sentence: str) -> None:
    assert not is_table_talk(sentence)
    assert line_talk(sentence) is None


def test_the_last_session_told_again_at_a_sessions_start() -> None:
    assert tells_last_session("Me! Okay so last time, we met on a barge, went to the Gutted Eel.", 1)
    assert tells_last_session("I'll do it. Last time, we crossed the fen with Mira.", 17)
    assert tells_last_session("So last session, you guys faced the dragon.", 40)
    # the DM starting the show: it may tell what no line did (C1E001's backstory)
    assert not tells_last_session("Last we left off, to give you a little backstory, the party arrived.", 40)
    assert not tells_last_session("Last time, we crossed the fen with Mira.", 900)  # mid-session: a memory
    assert not tells_last_session("The last time I saw him he was alive.", 3)


def _session(*lines: tuple[str, str]) -> list[Talk | None]:
    return session_talk([(text, speaker == "DM") for speaker, text in lines])


def test_pre_show_break_and_after_show_are_marked_by_the_dms_words() -> None:
    kinds = _session(
        ("DM", "Hello and welcome! A few announcements first."),
        ("Sam", "I'm modeling the sweater right now!"),
        ("DM", "All right. Last we left off, Vox Machina stood before the gates of Whitestone."),
        ("Liam", "I sneak towards the gate."),
        *[("DM", f"You see guard number {n} turn away.") for n in range(8)],
        ("DM", "And with that, we're going to take a quick break. Back here in a few minutes."),
        ("Laura", "You're not controlled anymore!"),
        ("DM", "Welcome back, folks!"),
        ("DM", "As you return to the undercroft, Cassandra carries Percy, arm in arm, towards the light."),
        *[("Liam", "I keep walking.")] * 10,
        ("DM", "And that's where we'll end tonight's game."),
        ("Travis", "Good shit, dude!"),
    )
    assert kinds[:3] == [Talk.pre_show, Talk.pre_show, None]  # the recap is the game's
    assert kinds[12:15] == [Talk.break_, Talk.break_, Talk.break_]
    assert kinds[15] is None and kinds[-3] is None
    assert kinds[-2:] == [Talk.after_show, Talk.after_show]


def test_the_game_said_to_end_tonight_starts_the_after_show_from_the_middle_of_a_session_on() -> None:
    """CRD3 C1E010 ends its game halfway through the recording; donations read out and a Q&A follow. A closing cue
    that names the session holds from the middle of a session on; a looser one only in its last part."""
    lines = [("DM", "You walk on along the road past the mill.")] * 100
    lines[30] = ("DM", "That's where we'll end up, at the mill by nightfall.")  # the story's: too early anyway
    lines[55] = ("DM", "And that is where we're going to leave tonight's session. (all groan)")
    lines[56:] = [("Sam", "Someone's asking how Keyleth's fight went.")] * 44
    kinds = _session(*lines)
    assert kinds[30] is None and kinds[54] is None
    assert kinds[55:] == [Talk.after_show] * 45
    early = list(lines)
    early[55], early[40] = ("DM", "You walk on."), ("DM", "We'll end this session right here, I think.")
    assert Talk.after_show not in _session(*early)  # before the middle


@pytest.mark.parametrize(
    ("announced", "back"),
    [
        ("Right, let's have a short break, the food's arrived.", "Okay, we're back. Everybody set?"),
        ("Let's do five minutes.", "All right, back in. The fog lifts off the marsh."),
        ("Okay. Bathroom break, I need to look up the ogre's stats.", "Right, back to it."),
        ("We'll take fifteen, I need more coffee.", "Let's get back into it."),
    ],
)
def test_a_home_tables_break_is_out_of_game_up_to_its_back(announced: str, back: str) -> None:
    """A home table says its breaks its own way; the lines between its break and its back are out of game."""
    lines = [("DM", "The road climbs into the hills past the old watchtower.")] * 20
    lines[8] = ("DM", announced)
    lines[9:12] = [("Ana", "my cat just knocked over the dice"), ("DM", "Ha, she wants a turn."), ("Bo", "brb")]
    lines[12] = ("DM", back)
    kinds = _session(*lines)
    assert kinds[7] is None and kinds[8:12] == [Talk.break_] * 4
    # the back line is the table's, unless it goes on with the story
    assert kinds[12] is (None if back.endswith("marsh.") else Talk.break_) and kinds[13] is None


def test_a_break_the_dm_does_not_close_ends_at_a_players_short_back() -> None:
    lines = [("DM", "The road climbs into the hills past the old watchtower.")] * 20
    lines[5] = ("DM", "Quick break, I have to feed the dog.")
    lines[6:9] = [("Ana", "Same."), ("Bo", "Anyone want a drink?"), ("Ana", "Okay back, sorry, the dog is fed too.")]
    kinds = _session(*lines)
    assert kinds[5:9] == [Talk.break_] * 4 and kinds[9] is None


@pytest.mark.parametrize(
    "told",
    [
        "The farmers are taking a break by the well when you ride in.",
        "You hear the ice break under the wagon.",
        "Tell him you'll be back in an hour, and he shrugs.",
    ],
)
def test_a_break_of_the_story_is_no_break(told: str) -> None:
    lines = [("DM", "The road climbs into the hills past the old watchtower.")] * 20
    lines[5], lines[7] = ("DM", told), ("DM", "Okay, we're back at the gate.")
    assert set(_session(*lines)) == {None}


def test_a_players_retelling_of_the_last_session_is_pre_show_up_to_the_dms_next_line() -> None:
    lines = [("DM", "You walk on along the road past the mill.")] * 30
    lines[:5] = [
        ("DM", "Hi all! Who wants to catch us up?"),
        ("Ana", "Me. Okay so last time, we found the mill burned and the miller gone."),
        ("Bo", "And I stole his hat."),
        ("DM", "Nice. So. Morning comes grey over the valley."),
        ("Ana", "Last time we did that, the hat bit me."),  # the story's now: the DM has gone on
    ]
    assert _session(*lines)[:5] == [Talk.pre_show] * 3 + [None, None]
    lines[3] = ("DM", "Right. Can I see your sheet a second?")  # table talk of its own (the character sheet)
    lines[5] = ("Ana", "Okay so last time, we ate all the bread.")  # the DM has spoken since asking: the story's
    assert _session(*lines)[:6] == [Talk.pre_show] * 3 + [Talk.dice, None, None]
    lines[0] = ("DM", "Hi all! Last we left off, you stood at the burned mill.")  # the DM's recap is the game's
    lines[1] = ("Ana", "Right, and last time we found the miller gone.")  # a player adding to it too
    assert Talk.pre_show not in _session(*lines)


def test_a_players_cue_and_a_session_without_cues_mark_nothing() -> None:
    lines = [("DM", "You enter the crypt. Bones crunch under your feet.")] * 20
    lines[3] = ("Grog", "Let's take a break and drink. Last we left off I was thirsty.")
    assert set(_session(*lines)) == {None}


def test_a_cue_line_that_tells_the_story_stays_game() -> None:
    lines = [("DM", "You walk on along the road past the mill.")] * 20
    lines[8] = (
        "DM",
        "As you guys make your way towards the Ustaloch and the Dockward there, we'll go and take a break.",
    )
    lines[9] = ("Sam", "This is exciting.")
    lines[10] = ("DM", "Welcome back, everyone!")
    kinds = _session(*lines)
    assert kinds[8] is None and kinds[9:11] == [Talk.break_, Talk.break_]


def test_precise_on_the_hand_labelled_game_turns() -> None:
    """Line by line (no segment to lean on), on the 240 random game turns of three CRD3 episodes: what the detector
    flags must be out of game (bench/offgame.py measures recall with the segments)."""
    episodes = json.loads(LABELS.read_text(encoding="utf-8"))["episodes"]
    flagged = wrong = 0
    for ep in episodes.values():
        for turn in ep["sample"]:
            label, _, text = ep["turns"][str(turn)]
            if label == "unclear" or line_talk(text) is None:
                continue
            flagged += 1
            wrong += label == "in"
    assert flagged >= 20 and wrong / flagged <= 0.1


def test_precise_on_the_dms_own_turns() -> None:
    """The DM's turns drawn at random from four dev episodes, line by line: rules talk is told apart from the story
    it is told with."""
    dm = json.loads(LABELS.read_text(encoding="utf-8"))["dm_turns"]
    flagged = wrong = out = found = 0
    for name in dm["dev"]:
        for label, text in dm["episodes"][name].values():
            if label == "unclear":
                continue
            kind = line_talk(text)
            flagged += kind is not None
            wrong += kind is not None and label == "in"
            out += label != "in"
            found += kind is not None and label != "in"
    assert wrong == 0 and found / out >= 0.6


def test_only_the_lines_asked_for_are_read_one_by_one_and_the_segments_still_hold() -> None:
    lines = [("Hi all, check out the Twitch chat.", True), ("Last we left off, you were in Emon.", True)]
    lines += [("17.", False), ("You walk on.", True), ("13 for Trinket.", False)]
    assert session_talk(lines, only=[2]) == [Talk.pre_show, None, Talk.dice, None, None]
    assert session_talk(lines) == [Talk.pre_show, None, Talk.dice, None, Talk.dice]


@pytest.mark.parametrize(
    "label",
    [
        *["DM", "Marcus (DM)", "DM Marcus", "Marcus [GM]", "GM - Marcus", "Dungeon Master"],
        *["Priya (Keeper)", "Keeper", "Storyteller", "MC - Priya", "Referee", "Priya (GM)"],
    ],
)
def test_a_label_naming_the_game_master_is_the_dm_however_the_table_writes_it(label: str) -> None:
    """A home table's transcript or a Discord name puts the role beside the name: the wordiest player is no DM."""
    assert dm_speaker({"Rob": 900, label: 300, "Dana": 200}) == (label, False)


@pytest.mark.parametrize("label", ["Dmitri", "Admiral Vey", "Gemma", "Ragnar the Master", "Gatekeeper", "Mc Bride"])
def test_dm_inside_a_word_or_a_master_alone_names_no_game_master(label: str) -> None:
    assert dm_speaker({"Rob": 900, label: 300}) == ("Rob", True)


def test_with_no_label_the_dm_is_who_said_the_most_and_that_is_a_guess() -> None:
    assert dm_speaker({"MATT": 5000, "SAM": 900}) == ("MATT", True)
    assert dm_speaker({}) == ("", True)


#: Night 3 of a home campaign: the DM voices Quillon by a marker, the players answer him, the DM goes on as him.
VOICED = [
    ("Marcus", "He stands up and turns around, and he's smiling."),
    ("Marcus", "I'm Quillon now. Thank you, Brother Ozzick. I could not carry the lantern down the stair myself."),
    ("Rob", "Oz says, you killed her."),
    ("Marcus", "I did not kill her. The Choir took her home. As they took my brothers."),
    ("Priya", "Wren draws her bow. Why us?"),
    ("Marcus", "\u201cThe lantern must be carried down by a faithful hand. You were cheap.\u201d"),
    ("Dana", "Thess says, you betrayed us."),
    ("Marcus", "I betrayed no one. I serve the Tidemother. The lantern was never a ward. It is a beacon."),
    ("Rob", "Can I roll religion to know about the Tidemother?"),
    ("Marcus", "Sure, religion check."),  # the DM to the table: the voice ends
    ("Marcus", "Oz has never heard that name. I think you'd know it if you had."),  # no marker since
    ("Marcus", "(as Mira) Grab the pole, you fools!"),
    ("Marcus", "Mira hauls you up. She is furious."),  # narration ends it
    ("Marcus", "I told you not to bring that light onto the water."),
    ("Marcus", "She smiles. (as Tamsin) You came for me."),  # a marker after narration: the line is narration
    ("Marcus", "I thought no one would come."),
    ("Marcus", "Okay, I think we'll wrap there."),  # the DM back to the table
]


def test_a_dm_voicing_a_character_goes_on_in_the_voice_until_they_narrate() -> None:
    """A home DM marks a voice once ("I'm Quillon now.", "(as Mira)") and goes on in it over their next lines, the
    players answering between; their narration, rules talk, "Okay…" to the table or another marker ends it."""
    voices = [
        voice_of(text, [t for who, t in reversed(VOICED[max(0, n - VOICE_LINES) : n]) if who == speaker])
        for n, (speaker, text) in enumerate(VOICED)
    ]
    held = [None, "Quillon", None, "Quillon", None, "Quillon", None, "Quillon", None, None, None, "Mira", None, None]
    assert voices == [*held, None, "Tamsin", None]
    # no further than VOICE_LINES lines of the session on
    far = [("Marcus", "(as Mira) Sit low."), *[("Rob", "I row.")] * VOICE_LINES, ("Marcus", "I said sit low.")]
    assert voice_of(far[-1][1], [t for who, t in reversed(far[-VOICE_LINES - 1 : -1]) if who == "Marcus"]) is None
