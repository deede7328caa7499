"""Stage 1: the phonetic matcher against a small campaign."""

from __future__ import annotations

import pytest

from memory.correction import EntityName, MatchSettings, PhoneticIndex, PhoneticMatcher, Pipeline
from memory.correction.text import align_confidences, tokenize

ENTITIES = [
    EntityName(id=1, name="Vasselheim"),
    EntityName(id=2, name="Vox Machina"),
    EntityName(id=3, name="Frumpkin"),
    EntityName(id=4, name="Vex'ahlia", aliases=["Vex"]),
    EntityName(id=5, name="Tower of Whispers"),
    EntityName(id=6, name="Eldrinax"),
    EntityName(id=7, name="Westruun"),
    EntityName(id=8, name="Vecna"),
]


@pytest.fixture(scope="module")
def pipeline() -> Pipeline:
    return Pipeline(ENTITIES)


def test_multi_word_mishearing_becomes_the_name(pipeline: Pipeline) -> None:
    result = pipeline.correct_fast("We ride for vassal high mm at dawn.")
    assert result.text == "We ride for Vasselheim at dawn."
    assert result.raw_text == "We ride for vassal high mm at dawn."
    [c] = result.corrections
    assert (c.span, c.replacement, c.entity_id, c.stage) == ("vassal high mm", "Vasselheim", 1, 1)
    assert result.raw_text[c.start : c.end] == "vassal high mm"
    assert 0.7 <= c.score <= 1.0


def test_possessive_casing_and_punctuation_around_the_span_are_kept(pipeline: Pipeline) -> None:
    assert pipeline.correct_fast("Go to elder nacks's lair!").text == "Go to Eldrinax's lair!"
    assert pipeline.correct_fast('"VOX MACHINE A," he said.').text == '"Vox Machina," he said.'


def test_exact_names_and_aliases_are_left_alone(pipeline: Pipeline) -> None:
    text = "Vex and Vex'ahlia climbed the Tower of Whispers with Vox Machina."
    result = pipeline.correct_fast(text)
    assert result.text == text
    assert result.corrections == []


def test_ordinary_speech_is_not_touched(pipeline: Pipeline) -> None:
    for text in [
        "I think the vector points west, and we run.",
        "Are you able to come and see the door?",
        "We went home after the game, more than tired.",
    ]:
        assert pipeline.correct_fast(text).corrections == [], text


def test_a_common_word_is_replaced_only_when_the_recogniser_doubts_it() -> None:
    # A lower bar for doubted words than the default shows the lift on its own.
    pipeline = Pipeline([EntityName(id=1, name="Tary")], settings=MatchSettings(doubtful_word_threshold=0.75))
    text = "ask terry about it"
    sure = [(w, 0.95) for w in text.split()]
    doubted = [("ask", 0.95), ("terry", 0.3), ("about", 0.9), ("it", 0.9)]
    assert pipeline.correct_fast(text).corrections == []
    assert pipeline.correct_fast(text, sure).corrections == []
    assert pipeline.correct_fast(text, doubted).text == "ask Tary about it"


def test_a_very_common_word_is_never_replaced_even_when_doubted() -> None:
    pipeline = Pipeline([EntityName(name="Wand")], settings=MatchSettings(doubtful_word_threshold=0.7))
    assert pipeline.correct_fast("you and me", [("you", 0.9), ("and", 0.1), ("me", 0.9)]).corrections == []


def test_aliases_map_to_the_canonical_name() -> None:
    pipeline = Pipeline([EntityName(id=9, name="The Everlight", aliases=["Sarenrae"])])
    [c] = pipeline.correct_fast("we pray to saren ray tonight").corrections
    assert (c.span, c.replacement, c.entity_id) == ("saren ray", "The Everlight", 9)


def test_a_name_heard_with_other_spacing_is_respelled() -> None:
    # The issue's own example: speech recognition splits "Ironhold" into "iron hold", two common words.
    pipeline = Pipeline(
        [EntityName(id=1, name="Ironhold"), EntityName(id=2, name="Grog Strongjaw", aliases=["Strongjaw"])]
    )
    result = pipeline.correct_fast("The gates of iron hold open; strong jaw's axe is ready.")
    assert result.text == "The gates of Ironhold open; Grog Strongjaw's axe is ready."
    assert [(c.span, c.entity_id, c.score) for c in result.corrections] == [
        ("iron hold", 1, 1.0),
        ("strong jaw", 2, 1.0),
    ]
    # spelled and spaced as the name (in any case): left alone
    assert pipeline.correct_fast("ironhold and grog strongjaw").corrections == []


def test_a_name_the_transcript_already_writes_as_a_name_is_left_alone() -> None:
    pipeline = Pipeline([EntityName(name="Half-Orc"), EntityName(name="The Quadroads"), EntityName(name="Ironhold")])
    # a hyphen is a word break: "half orc" and "half-orc" are the name Half-Orc, "halforcs" is respelled
    result = pipeline.correct_fast("a half-orc, a half orc and two halforcs")
    assert [(c.span, c.replacement) for c in result.corrections] == [("halforc", "Half-Orc")]
    assert result.text.endswith("two Half-Orcs")
    # a capital on each word: the transcript's own spelling of a name ("Iron Hold"), not a mishearing
    assert pipeline.correct_fast("in the Quad Roads by Iron Hold").corrections == []
    assert pipeline.correct_fast("in the quad roads").text == "in The Quadroads"
    assert pipeline.correct_fast("IN THE QUAD ROADS").text == "IN The Quadroads"  # all capitals say nothing
    # lowercase words of the name's own do not make it written as a name
    town = Pipeline([EntityName(name="Orin Ashtown")])
    assert town.correct_fast("we met or in ashtown today").text == "we met Orin Ashtown today"
    # a word spelled as in the name need not be capitalised ("district" of "the Quadroads District")
    district = Pipeline([EntityName(name="The Quadroads", aliases=["the Quadroads District"])])
    assert district.correct_fast("we went to the Quad Roads district").corrections == []


def test_the_longest_window_wins() -> None:
    pipeline = Pipeline([EntityName(id=1, name="Nostoc Greyspine"), EntityName(id=2, name="Greyspine")])
    result = pipeline.correct_fast("we met lord nostoc grayspine today")
    assert [c.replacement for c in result.corrections] == ["Nostoc Greyspine"]


def test_ambiguous_spans_are_left_for_stage_2() -> None:
    matcher = PhoneticMatcher(PhoneticIndex.build([EntityName(name="Kethra"), EntityName(name="Kethro")]))
    result = matcher.correct("we found kethre there")  # as far from either ("kethrah" sounds like Kethra)
    assert result.corrections == []
    assert result.suspects == [(9, 15)]


def test_without_confidences_words_sounding_near_a_name_are_suspects_for_stage_2() -> None:
    matcher = PhoneticMatcher(PhoneticIndex.build([EntityName(name=n) for n in ("Yasha", "Wand", "Tary", "Eldrinax")]))
    text = "closest to me and sasha, and then terry"
    result = matcher.correct(text)
    # a phone off a name, too short or too common to be changed here: stage 2 judges them in context
    assert result.corrections == []
    assert [text[a:b] for a, b in result.suspects] == ["sasha", "terry"]
    # "and" sounds a phone off Wand too, but a function word is never a name; a name said right stays said
    assert matcher.correct("and so on").suspects == []
    assert matcher.correct("then Eldrinax a bit later").suspects == []
    # with the recogniser's confidences, doubt alone decides what stage 2 sees
    assert matcher.correct(text, [0.9] * len(tokenize(text))).suspects == []


def test_low_confidence_words_are_suspects_for_stage_2(pipeline: Pipeline) -> None:
    text = "the orb glows blue"
    result = pipeline.matcher.correct(text, [0.9, 0.2, 0.95, 0.9])
    assert [text[a:b] for a, b in result.suspects] == ["orb"]


def test_confidences_align_to_tokens_by_position() -> None:
    text = "Vex's bow, drawn"
    tokens = tokenize(text)
    assert align_confidences(text, tokens, [("Vex's", 0.4), ("bow,", 0.9), ("drawn", 0.8)]) == [0.4, 0.9, 0.8]
    assert align_confidences(text, tokens, [("nothing", 0.1), ("drawn", 0.7)]) == [None, None, 0.7]


def test_index_needs_no_database_and_handles_no_entities() -> None:
    assert Pipeline([]).correct_fast("anything at all").corrections == []
    index = PhoneticIndex.build([EntityName(name="Westruun", aliases=["West Ruun", "westruun"])])
    assert len(index) == 2  # the repeated spelling is one form


# The phrase path: several ordinary words whose joined sounds spell a name.
PHRASE_ENTITIES = [
    EntityName(id=1, name="Taliesin"),
    EntityName(id=2, name="Taryon Darrington"),
    EntityName(id=3, name="Therad"),
    EntityName(id=4, name="Morningstar"),
    EntityName(id=5, name="Totem"),
]


def test_a_phrase_that_sounds_like_a_name_becomes_the_name() -> None:
    pipeline = Pipeline(PHRASE_ENTITIES)
    assert pipeline.correct_fast("Ask tally sin about it.").text == "Ask Taliesin about it."
    result = pipeline.correct_fast("Then tar ryan during ton walks in.")
    assert result.text == "Then Taryon Darrington walks in."
    assert [c.entity_id for c in result.corrections] == [2]


def test_ordinary_phrases_of_the_same_shape_are_left_alone() -> None:
    pipeline = Pipeline(PHRASE_ENTITIES)
    for text in [
        "We take the road north.",  # a short name: "the road" / Therad is ordinary speech
        "Give it to them now.",  # function words only / Totem
        "Two mornings at the inn.",  # a real word the name extends / Morningstar
    ]:
        assert pipeline.correct_fast(text).corrections == [], text


def test_the_sound_path_can_be_switched_off() -> None:
    pipeline = Pipeline(PHRASE_ENTITIES, settings=MatchSettings(sound_min_phones=99, sound_two_edit_phones=99))
    assert pipeline.correct_fast("Ask tally sin about it.").corrections == []
    assert Pipeline(PHRASE_ENTITIES).correct_fast("Ask tally sin about it.").text == "Ask Taliesin about it."


def test_a_mishearing_around_an_exact_alias_is_restored_but_exact_mentions_are_not_extended() -> None:
    pipeline = Pipeline(
        [EntityName(id=1, name="Chroma Conclave", aliases=["Conclave"]), EntityName(id=2, name="Percy")]
    )
    assert pipeline.correct_fast("They fear the chrome a Conclave.").text == "They fear the Chroma Conclave."
    for text in ["The Conclave is coming.", "Percy is here and Percy saw it."]:
        assert pipeline.correct_fast(text).corrections == [], text


def test_a_spelling_shared_with_another_entitys_alias_goes_to_the_entity_named_so() -> None:
    pipeline = Pipeline(
        [EntityName(id=1, name="Taliesin Jaffe", aliases=["Taliesin"]), EntityName(id=2, name="Taliesin")]
    )
    [c] = pipeline.correct_fast("Ask tally sin about it.").corrections
    assert (c.replacement, c.entity_id) == ("Taliesin", 2)


def test_punctuation_inside_a_name_is_not_needed_to_match_it() -> None:
    pipeline = Pipeline([EntityName(id=1, name='Bo "The Breaker"'), EntityName(id=2, name="Half-Elf")])
    for text in ["Bo the Breaker swings.", "Two half-elves walk in."]:
        assert pipeline.correct_fast(text).corrections == [], text


def test_doubted_function_words_do_not_become_a_short_name() -> None:
    pipeline = Pipeline([EntityName(id=1, name="Wand"), EntityName(id=2, name="Nott")])
    for text in ["You and a friend.", "It is not at all."]:
        words = [(t.word, 0.3) for t in tokenize(text)]
        assert pipeline.correct_fast(text, words).corrections == [], text


def test_words_of_the_canonical_name_said_just_before_are_not_doubled() -> None:
    pipeline = Pipeline([EntityName(id=7, name="Captain Brannoch Ysgarde", aliases=["Brannoch"])])
    result = pipeline.correct_fast("The harbour master, captain bran ock, is waiting.")
    assert result.text == "The harbour master, Captain Brannoch Ysgarde, is waiting."
    assert [(c.span, c.start) for c in result.corrections] == [("captain bran ock", 20)]
    # a word that merely matches across punctuation is not taken in
    assert (
        pipeline.correct_fast("Ask the captain. Bran ock knows.").text
        == "Ask the captain. Captain Brannoch Ysgarde knows."
    )
    # nor the rest of it said just after the alias it was heard as
    pipeline = Pipeline([EntityName(id=8, name="Zyx'ara", aliases=["Zyx"])])
    assert pipeline.correct_fast("Zix ara listens to the water.").text == "Zyx'ara listens to the water."


def test_an_alias_ending_the_name_after_the_rest_of_it() -> None:
    pipeline = Pipeline([EntityName(id=9, name="Quelloth the Tidewarden", aliases=["Quelloth", "the Tidewarden"])])
    # the rest of the name misheard just before (uncommon words sounding like it): the whole name, once
    [c] = pipeline.correct_fast("She calls herself kell loth the tide warden.").corrections
    assert (c.span, c.replacement, c.entity_id) == ("kell loth the tide warden", "Quelloth the Tidewarden", 9)
    # said right but apart: the alias is written, not the name a second time
    assert pipeline.correct_fast("Quelloth, the tide warden, rises.").text == "Quelloth, the Tidewarden, rises."
    [c] = pipeline.correct_fast("It was Quelloth. The tide warden rises.").corrections
    assert (c.span, c.replacement, c.entity_id) == ("The tide warden", "The Tidewarden", 9)
    # otherwise the alias becomes the name; ordinary words before it are not taken in
    assert pipeline.correct_fast("I saw the tide warden.").text == "I saw Quelloth the Tidewarden."
    assert pipeline.correct_fast("It's a kettle, the tide warden.").text == "It's a kettle, Quelloth the Tidewarden."


def test_an_alias_that_is_no_part_of_the_name() -> None:
    pipeline = Pipeline([EntityName(id=6, name="Eldrinax", aliases=["The Drowned Wyrm"])])
    # the whole mention is the entity, not "the drowned Eldrinax"
    assert pipeline.correct_fast("Then the drowned worm wakes.").text == "Then Eldrinax wakes."
    # after the name, said apart or joined, the alias stays an epithet and the name is not repeated
    assert pipeline.correct_fast("Eldrinax, the drowned worm, wakes.").text == "Eldrinax, The Drowned Wyrm, wakes."
    [c] = pipeline.correct_fast("Eldrinax the drowned worm wakes.").corrections
    assert (c.span, c.replacement, c.entity_id) == ("the drowned worm", "The Drowned Wyrm", 6)
    # ... and after the name misheard and corrected just before it
    assert pipeline.correct_fast("ell drin ax, the drowned worm, wakes.").text == "Eldrinax, The Drowned Wyrm, wakes."


def test_an_alias_that_varies_the_name_takes_in_its_first_words() -> None:
    pipeline = Pipeline([EntityName(id=3, name="The Sunken Crown", aliases=["Crown of Saltmere"])])
    [c] = pipeline.correct_fast("We are looking for the crown of salt mere.").corrections
    assert (c.span, c.replacement) == ("the crown of salt mere", "The Sunken Crown")  # not "the The Sunken Crown"


def test_the_rest_of_the_name_said_after_an_alias_with_a_word_of_its_own_is_not_doubled() -> None:
    pipeline = Pipeline([EntityName(id=1, name="Assum Emring", aliases=["Seeker Assum"])])
    result = pipeline.correct_fast("They haven't seen seeker russ um em ring yet.")
    assert result.text == "They haven't seen seeker Assum Emring yet."  # not "seeker Assum Emring em ring"


def test_a_name_with_punctuation_is_said_once() -> None:
    # "Mr." is the word "mr" said: it is part of the name, not a word of the heard span to keep as said
    pipeline = Pipeline([EntityName(id=1, name="Mr. Mistoffelees")])
    result = pipeline.correct_fast("Me and mr missed ah phillies are both announced.")
    assert result.text == "Me and Mr. Mistoffelees are both announced."  # not "mr Mr. Mistoffelees"
    # an alias said after the name's first words, as for a name without punctuation
    pipeline = Pipeline([EntityName(id=2, name="Mr. Brannoch Ysgarde", aliases=["Brannoch"])])
    assert pipeline.correct_fast("Ask mr bran ock about it.").text == "Ask Mr. Brannoch Ysgarde about it."


# --- the sound path: pronunciations compared phone by phone ----------------------------------------------


SOUNDS = [
    EntityName(id=1, name="Cerulean Palace"),
    EntityName(id=2, name="Nicodranas"),
    EntityName(id=3, name="Deception"),
    EntityName(id=4, name="The Founding"),
    EntityName(id=5, name="Pass Without Trace"),
    EntityName(id=6, name="Hunter's Mark"),
    EntityName(id=7, name="Hunter Shark"),
    EntityName(id=8, name="Korren"),
    EntityName(id=9, name="Koren"),
    EntityName(id=10, name="Dragonborn"),
]


@pytest.fixture(scope="module")
def by_sound() -> Pipeline:
    return Pipeline(SOUNDS)


@pytest.mark.parametrize(
    ("heard", "meant"),
    [
        ("We met at the sir rule ian palace.", "We met at the Cerulean Palace."),  # pronounced exactly alike
        ("We sail to nick a dramas's docks.", "We sail to Nicodranas's docks."),  # one phone off a long name
    ],
)
def test_words_pronounced_like_a_name_become_the_name(by_sound: Pipeline, heard: str, meant: str) -> None:
    result = by_sound.correct_fast(heard)
    assert result.text == meant
    assert [c.stage for c in result.corrections] == [1]


@pytest.mark.parametrize(
    "text",
    [
        "A warm reception awaits.",  # an English word one sound from a name is that word
        "The pounding pain in your leg.",  # "the" shared with The Founding proves nothing about the rest
        "I cast Pass Without a Trace.",  # the name itself with a word more
        "All right, you Hunter's Mark the creature.",  # an exact name with a possessive inside
        "Ask core un about it.",  # Korren and Koren sound the same: ambiguous
        "I am a dragonborn.",  # a name said after "a"
        "She takes dragon form.",  # "dragon" spells part of Dragonborn: "form" alone is two phones off "born"
    ],
)
def test_sound_alone_does_not_rewrite_ordinary_speech(by_sound: Pipeline, text: str) -> None:
    assert by_sound.correct_fast(text).corrections == []


def test_a_doubted_or_unknown_word_may_be_a_sound_off_a_shorter_name() -> None:
    pipeline = Pipeline([EntityName(id=1, name="Cresswell"), EntityName(id=2, name="Jarett")])
    assert pipeline.correct_fast("Mister craswell came.").text == "Mister Cresswell came."  # no English word
    text = "Ask gerrit about it."  # a rare word one phone off Jarett (JH EH R AH T)
    assert pipeline.correct_fast(text).corrections == []
    doubted = [(t.word, 0.3 if t.word == "gerrit" else 0.95) for t in tokenize(text)]
    assert pipeline.correct_fast(text, doubted).text == "Ask Jarett about it."  # the recogniser doubted it
    # doubt does not make a spelling match of what sounds otherwise: "grass well" is two phones off
    text = "Mister grass well came."
    doubted = [(t.word, 0.3 if t.word in ("grass", "well") else 0.95) for t in tokenize(text)]
    assert pipeline.correct_fast(text, doubted).corrections == []
    # a name heard with a common word at its edge ("had", Zipf 6.3) is the name; with a very common one
    # ("or", 6.5), one phone off, it is that word plus its neighbour: "tent or" is not Centaur
    assert Pipeline([EntityName(id=3, name="Zadash")]).correct_fast("we ride to had ash").text == "we ride to Zadash"
    assert (
        Pipeline([EntityName(id=2, name="Centaur")]).correct_fast("Are we in the same tent or not?").corrections == []
    )


@pytest.mark.parametrize(
    ("word", "name"), [("dragon", "Dagon"), ("garrett", "Jarett"), ("battle", "Barrel"), ("damage", "Damon")]
)
def test_a_doubted_ordinary_word_a_sound_off_a_short_name_stays(word: str, name: str) -> None:
    """The recogniser doubts ordinary words now and then: one a phone off a short name is still that word,
    whether found by sound or by spelling ("dragon" / Dagon). Said exactly like the name, doubt is enough."""
    text = f"Ask {word} about it."
    doubted = [(t.word, 0.3 if t.word == word else 0.95) for t in tokenize(text)]
    assert Pipeline([EntityName(id=1, name=name)]).correct_fast(text, doubted).corrections == []
    said_alike = [("ask", 0.9), ("terry", 0.3), ("about", 0.9), ("it", 0.9)]
    assert Pipeline([EntityName(id=1, name="Tary")]).correct_fast("ask terry about it", said_alike).text == (
        "ask Tary about it"
    )


def test_words_of_their_own_are_not_heard_as_a_name() -> None:
    pipeline = Pipeline([EntityName(name=n) for n in ["Arcane Eye", "Piercing", "Balgus", "Stabling"]])
    for text in [
        "the arcane thing",  # part of a name is not a mishearing of it
        "it pierces the armor",  # one stem, two endings
        "we're stealthing ahead",  # an English word inflected, though no word list has it
        "we met Balgoos today",  # capitalised inside a sentence: the transcript's own name for someone
    ]:
        assert pipeline.correct_fast(text).corrections == [], text
    assert pipeline.correct_fast("we met balgoos today").text == "we met Balgus today"


def test_a_name_heard_with_a_sound_lost_or_added_is_not_a_word_of_its_own() -> None:
    # A word containing a name, or contained in it, is a word of its own only when English has it ("tinkered" /
    # Tinker): a recogniser's "Kysunder" is Skysunder with its first sound lost ("Thunderdark": see below).
    pipeline = Pipeline([EntityName(name=n) for n in ["Skysunder", "Sunder", "Tinker", "Entangle"]])
    heard = [("I", 0.9), ("think", 0.9), ("Kysunder", 0.3), ("is", 0.9), ("secretly", 0.9), ("working", 0.9)]
    assert pipeline.correct_fast("I think Kysunder is secretly working", heard).text.startswith("I think Skysunder")
    assert pipeline.correct_fast("I think kysunder is here").text == "I think Skysunder is here"
    for text in ["he tinkered with it", "she entangled him", "she will asunder it later today"]:
        assert pipeline.correct_fast(text, [(w, 0.3) for w in text.split()]).corrections == [], text


def test_a_long_name_may_be_heard_two_phones_or_its_vowels_off() -> None:
    pipeline = Pipeline([EntityName(name="Eldrinax"), EntityName(name="Mira Tolvanek")])
    assert pipeline.correct_fast("the old dragon, elder nacks, sleeps").text == "the old dragon, Eldrinax, sleeps"
    # eSpeak NG guesses T AA L V EY N AH K; the consonants T L V N K are what was said
    assert pipeline.correct_fast("ask mira toll van eck").text == "ask Mira Tolvanek"
    assert pipeline.correct_fast("ask mira to lend a neck").corrections == []
    # nor the h eSpeak NG sounds in an invented spelling: V IY HH AE L D R IH S for "Vhaldris"
    lake = Pipeline([EntityName(name="Lake Vhaldris")])
    assert lake.correct_fast("the waters of lake val dress rose").text == "the waters of Lake Vhaldris rose"


def test_words_with_a_names_consonants_must_spell_its_vowels_too() -> None:
    # M AE N T AH R EY / eSpeak NG's M EH N T IY AH R IY: three vowels off, the consonants alike, the letters not
    for name, said in [("Mentiri", "a flying manta ray"), ("Kattelfesh", "a cuttle fish swam by")]:
        assert Pipeline([EntityName(name=name)]).correct_fast(said).corrections == [], said
    # the letters of "toll van eck" are Tolvanek's (see above), and so are those of "lake val dress"
    pipeline = Pipeline([EntityName(name="Mentiri"), EntityName(name="Mira Tolvanek")])
    assert pipeline.correct_fast("ask mira toll van eck").text == "ask Mira Tolvanek"


def test_vowels_may_differ_but_not_consonants() -> None:
    # C AE M P EY N T UW: "came upon" has the vowels' count and all but one consonant, which is not enough
    pipeline = Pipeline([EntityName(name="Campaign 2")])
    assert pipeline.correct_fast("we came upon a cave").corrections == []


def test_a_mishearing_holding_an_exact_alias_is_corrected_whole() -> None:
    pipeline = Pipeline([EntityName(id=1, name="Grog Strongjaw", aliases=["Strongjaw"])])
    result = pipeline.correct_fast("then greg strong jaw swings")
    assert result.text == "then Grog Strongjaw swings"  # not "greg Grog Strongjaw"
    assert [c.span for c in result.corrections] == ["greg strong jaw"]
    # so does one holding another entity's name that its own name contains
    pipeline = Pipeline([EntityName(id=1, name="Kashaw Vesh", aliases=["Kashaw"]), EntityName(id=2, name="Kashaw")])
    assert pipeline.correct_fast("then cash aw vet said").text == "then Kashaw Vesh said"
    assert pipeline.correct_fast("then cash aw said").text == "then Kashaw said"
    # but a window holding one of the same name has only caught a neighbour
    pipeline = Pipeline([EntityName(id=3, name="estafania")])
    assert pipeline.correct_fast("and estaphania who was there").text == "and estafania who was there"


def test_a_name_may_be_heard_as_six_words() -> None:
    pipeline = Pipeline(
        [
            EntityName(id=1, name="Whitestone Riflemen", aliases=["Riflemen of Whitestone"]),
            EntityName(name="Whitestone"),
        ]
    )
    assert pipeline.correct_fast("the rife limb en of white stone march").text == "the Whitestone Riflemen march"


def test_words_of_an_alias_the_canonical_name_lacks_stay_as_said() -> None:
    pipeline = Pipeline([EntityName(id=1, name="Nostoc Greyspine", aliases=["Lord Nostoc Greyspine"])])
    result = pipeline.correct_fast("Lord na stock grace pine bows.")
    assert result.text == "Lord Nostoc Greyspine bows."
    assert [c.span for c in result.corrections] == ["na stock grace pine"]


def test_words_shared_with_the_name_are_not_held_against_it() -> None:
    # eSpeak NG says "gorge" inside "Wuyun Gorge" a little unlike "gorge" alone; the rest is what must match
    pipeline = Pipeline([EntityName(id=1, name="Wuyun Gorge")])
    assert pipeline.correct_fast("we ride to why un gorge today").text == "we ride to Wuyun Gorge today"


def test_a_plus_sign_of_the_name_is_said() -> None:
    # "+2" is "plus two": "armor to" and "armor too" are speech, not the item
    pipeline = Pipeline([EntityName(id=1, name="Armor, +2")])
    assert pipeline.correct_fast("I have some armor to spare.").corrections == []
    assert pipeline.correct_fast("He wears armor too.").corrections == []
    assert pipeline.correct_fast("He wears armor plus two.").text == "He wears Armor, +2."


def test_two_entities_written_alike_are_not_ambiguous() -> None:
    pipeline = Pipeline([EntityName(id=1, name="K'Varn"), EntityName(id=2, name="K'varn")])  # a list made twice
    result = pipeline.correct_fast("we fought cave arne there")
    assert result.text == "we fought K'Varn there"
    assert [c.entity_id for c in result.corrections] == [1]


def test_a_name_heard_without_its_apostrophe_is_respelled() -> None:
    pipeline = Pipeline([EntityName(id=1, name="Vex'ahlia"), EntityName(id=2, name="was'")])
    assert pipeline.correct_fast("then vexahlia shot").text == "then Vex'ahlia shot"
    assert pipeline.correct_fast("that was close").corrections == []  # an English word is not a name's spelling


def test_a_name_written_without_its_accents_is_respelled_as_the_campaign_writes_it() -> None:
    pipeline = Pipeline(
        [
            EntityName(id=1, name="Dûn Kaldor"),
            EntityName(id=2, name="Zoë Ashgrove", aliases=["Zoë"]),
            EntityName(id=3, name="Vel-Ashkâr"),
            EntityName(id=4, name="Ragnarök"),
        ]
    )
    assert pipeline.correct_fast("We reach dun kaldor.").text == "We reach Dûn Kaldor."
    assert pipeline.correct_fast("Zoe's ale is good.").text == "Zoë's ale is good."  # the alias, as registered
    assert pipeline.correct_fast("Zoe Ashgrove waits").text == "Zoë Ashgrove waits"
    assert pipeline.correct_fast("The walls of Vel Ashkar rise.").text == "The walls of Vel-Ashkâr rise."
    assert pipeline.correct_fast("Two Ragnaroks").text == "Two Ragnaröks"
    # written as the campaign writes it (NFD too: the same letters), nothing to do
    assert pipeline.correct_fast("Zoë is here with Ragnarök.").corrections == []
    assert pipeline.correct_fast("Zoe\u0308 is here.").corrections == []
    assert pipeline.correct_fast("A gnome named Zoe-Ann greets you.").corrections == []  # a name of her own


def test_ordinary_english_in_lower_case_is_not_respelled_as_an_accented_name() -> None:
    # "naive" is no Naïve, "the cafe" no Café: the line writes the word, not the name, as it does "Noel"
    names = ["Naïve", "Café", "Noël", "Creéd"]
    pipeline = Pipeline([EntityName(id=n, name=name) for n, name in enumerate(names, 1)])
    for line in ("He says he's naive about it.", "We sail past the cafe.", "Merry noel to all!", "The creed holds."):
        assert pipeline.correct_fast(line).corrections == [], line
    assert pipeline.correct_fast("We meet Noel at the inn.").text == "We meet Noël at the inn."


def test_a_name_made_of_dictionary_words_is_also_said_the_dictionarys_way() -> None:
    # eSpeak NG reads "lorne" L OW R N; CMUdict, like the recogniser's "lorn", L AO R N
    pipeline = Pipeline([EntityName(id=1, name="lorne")])
    assert pipeline.correct_fast("oh i know that's lorn brandon").text == "oh i know that's lorne brandon"


def test_ordinary_words_two_phones_off_a_name_are_speech_unless_the_name_is_long() -> None:
    pipeline = Pipeline([EntityName(id=1, name="mistrusts")])  # M IH S T R AH S T S: nine phones
    assert pipeline.correct_fast("the mistress off to town").corrections == []
    # eleven: T R AA S T EH N W AH L D, heard T R AH S T EH N W ER L D
    pipeline = Pipeline([EntityName(id=1, name="Trostenwald")])
    assert pipeline.correct_fast("I came to trust en world to rest").text == "I came to Trostenwald to rest"


def test_an_article_and_a_common_word_are_judged_as_that_word() -> None:
    # A S AH M: said exactly like the alias, but a short name needs more than a common word (see "writes" / Rites)
    pipeline = Pipeline([EntityName(id=1, name="Assum Emring", aliases=["Assum"]), EntityName(id=2, name="Tooma")])
    assert pipeline.correct_fast("we paid a sum of gold").corrections == []
    assert pipeline.correct_fast("ask tomb a about it").text == "ask Tooma about it"  # no article before a noun


def test_an_alias_of_an_article_and_an_everyday_word_is_only_said_exactly() -> None:
    """A Foundry scene's navigation name ("The Harbour") is what any table says of any harbour: "the harbor" sounds
    just like it and is that phrase, doubted or not, not Port Venmark misheard ("the harbor master" stayed "Port
    Venmark master"). Said exactly it is a mention and stays; a name with more to it is still heard by sound."""
    pipeline = Pipeline(
        [
            EntityName(id=1, name="Port Venmark", aliases=["The Harbour"]),
            EntityName(id=2, name="The Drowned Stair", aliases=["Stair"]),
        ]
    )
    for text in ["The rain falls on the harbor.", "Maelis Orrin, the harbor master, waits.", "We reach the harbour."]:
        assert pipeline.correct_fast(text).corrections == [], text
        doubted = [(t.word, 0.3) for t in tokenize(text)]
        assert pipeline.correct_fast(text, doubted).corrections == [], text
    assert pipeline.correct_fast("We climb the drowned stare.").text == "We climb The Drowned Stair."


def test_an_article_with_no_noun_after_it_may_end_a_name() -> None:
    # V EH S T AH, one phone off V EH S R AH: "a" is too common to end a window ("tent or" / Centaur) unless it
    # has no noun to belong to
    pipeline = Pipeline([EntityName(id=1, name="Vesrah"), EntityName(id=2, name="Kara")])
    assert pipeline.correct_fast("back in vest a.").text == "back in Vesrah."
    assert pipeline.correct_fast("then vest a and the rest").text == "then Vesrah and the rest"
    assert pipeline.correct_fast("I wear a vest a lot").corrections == []
    assert pipeline.correct_fast("you carve a-- a sliver").corrections == []  # said again: a restart
    assert pipeline.correct_fast("“I grew up in vest a.”").text == "“I grew up in Vesrah.”"


def test_a_very_common_word_of_the_name_may_edge_a_window_two_phones_off() -> None:
    pipeline = Pipeline([EntityName(id=1, name="The Eldrinax")])
    assert pipeline.correct_fast("we fought the elder nacks there").text == "we fought The Eldrinax there"


def test_a_name_the_transcript_writes_is_not_swallowed_by_a_name_it_sounds_like_with_a_neighbour() -> None:
    pipeline = Pipeline([EntityName(id=1, name="Beau"), EntityName(id=2, name="Tubo")])
    assert pipeline.correct_fast("I want to talk to Beau now").corrections == []  # T UW B OW, but Beau is written


def test_a_name_may_share_a_word_the_transcript_capitalises() -> None:
    pipeline = Pipeline([EntityName(id=1, name="Ashly Burch")])
    assert pipeline.correct_fast("the young ashley Burch laughs").text == "the young Ashly Burch laughs"
    assert pipeline.correct_fast("the young Ashley Burch laughs").corrections == []  # written whole as a name


def test_spelling_is_ranked_by_the_whole_the_space_stripped_and_the_paired_words() -> None:
    from rapidfuzz.distance import JaroWinkler

    from memory.correction.matcher import _score

    form = PhoneticIndex.build([EntityName(name="Tal Dorei")]).forms[0]
    whole, stripped = JaroWinkler.similarity("tall dorey", "tal dorei"), JaroWinkler.similarity("talldorey", "taldorei")
    paired = (JaroWinkler.similarity("tall", "tal") + JaroWinkler.similarity("dorey", "dorei")) / 2
    assert paired > max(whole, stripped)
    assert _score("tall dorey", "talldorey", form) == paired


def test_the_index_finds_every_name_two_phone_edits_away() -> None:
    import random

    from rapidfuzz.distance import Levenshtein

    from memory.correction.pronounce import PHONES, arpabet_code

    index = PhoneticIndex.build([EntityName(name=n) for n in ("Trostenwald", "Thar Amphala", "Vasselheim")])
    alphabet = arpabet_code(PHONES)
    rng = random.Random(3)
    for form in index.forms:
        for _ in range(300):
            heard = list(form.phones)
            for _ in range(2):  # a substitution, insertion or deletion anywhere
                i = rng.randrange(len(heard) + 1)
                match rng.randrange(3):
                    case 0 if i < len(heard):
                        heard[i] = rng.choice(alphabet)
                    case 1:
                        heard.insert(i, rng.choice(alphabet))
                    case _ if i < len(heard):
                        del heard[i]
            said = "".join(heard)
            found = index.two_edit_candidates(said, shortest=8)
            assert (form in found) == (Levenshtein.distance(said, form.phones) <= 2), said


def test_a_doubted_name_heard_with_its_own_uncommon_word_may_be_two_phones_off_in_the_rest() -> None:
    names = ["Mollymauk Tealeaf", "Ogden Trickfoot", "Dark Ravenhold", "Sister Bramble"]
    pipeline = Pipeline([EntityName(name=n) for n in names])

    def doubted(text: str, low: set[str]) -> str:
        return pipeline.correct_fast(text, [(w, 0.3 if w in low else 0.9) for w in text.split()]).text

    # "Tealeaf" heard right vouches for "Malemauk" (Mollymauk, two phones off), as Whisper heard them
    assert doubted("we reach Malemauk Tealeaf today", {"Malemauk", "Tealeaf"}) == "we reach Mollymauk Tealeaf today"
    assert doubted("back to Adden Trickfoot now", {"Adden", "Trickfoot"}) == "back to Ogden Trickfoot now"
    # undoubted too, the rest being one word English does not know (see the Nightbloom test below)
    assert pipeline.correct_fast("we reach malemauk tealeaf today").text == "we reach Mollymauk Tealeaf today"
    # not on the strength of a common word ("dark"), nor for an ordinary word in the rest ("master")
    assert doubted("the dark ravenhall", {"the", "dark", "ravenhall"}) == "the dark ravenhall"
    assert doubted("then Master Bramble opened it", {"Master", "Bramble"}) == "then Master Bramble opened it"
    for text in ["the dark ravenhall", "then Master Bramble opened it"]:
        assert pipeline.correct_fast(text).corrections == [], text


def test_a_capital_the_recogniser_was_unsure_of_does_not_make_a_name() -> None:
    pipeline = Pipeline([EntityName(name="Underdark"), EntityName(name="Marion")])

    def heard(text: str, word: str, sure: float | None) -> str:
        words = None if sure is None else [(w, sure if w == word else 0.95) for w in text.split()]
        return pipeline.correct_fast(text, words).text

    # Whisper capitalises its guesses at invented names; at 0.51 "Thunderdark" is one of them
    text = "We finally reach Thunderdark after three days"
    assert heard(text, "Thunderdark", 0.55) == "We finally reach Underdark after three days"
    # a capital it is sure of is the transcript's own name for something
    assert heard(text, "Thunderdark", 0.9) == heard(text, "Thunderdark", None) == text
    # and so is a name the word lists have, however unsure the recogniser was
    text = "yesterday I called Marian about the rent"
    assert heard(text, "Marian", 0.6) == text


def test_a_word_of_the_name_heard_right_vouches_for_an_uncommon_word_one_phone_off_the_rest() -> None:
    pipeline = Pipeline([EntityName(name=n) for n in ("Lady Kima", "Giant Tark", "The Kima", "Giant Slayer")])
    # "coma" is one phone off "Kima", and "lady" was heard right
    assert pipeline.correct_fast("I ask if lady coma has been giving orders").text == (
        "I ask if Lady Kima has been giving orders"
    )
    # alone, "coma" is an ordinary word
    assert pipeline.correct_fast("he fell into a coma last year").corrections == []
    # a very common word in the rest is speech ("dark" is one phone off "tark"), and so is a word beside "the"
    assert pipeline.correct_fast("he is a giant dark shape").corrections == []
    assert pipeline.correct_fast("she woke from the coma today").corrections == []
    # nor does it vouch for a word a phone off a rest that is English itself: "layer" is one off "slayer"
    assert pipeline.correct_fast("there was a giant layer of ice").corrections == []


def test_a_names_invented_first_word_heard_right_vouches_for_a_short_last_word_one_phone_off() -> None:
    """Heard "Nerith Mael" for Nerith Vael (N EH R IH TH, M EY L for V EY L): "Nerith" said right vouches for a last
    word of three phones, and "Mael", a spelling no word list has after it, is that word misspelt, not the transcript's
    own name. An English word there stays ("Vale", "Nerith made"), and so does the last word alone."""
    pipeline = Pipeline([EntityName(id=1, name="Nerith Vael", person=True), EntityName(id=2, name="Old Dunmore")])
    assert pipeline.correct_fast("It is Nerith Mael, the envoy.").text == "It is Nerith Vael, the envoy."
    assert pipeline.correct_fast("it is nerith mael, the envoy").text == "it is Nerith Vael, the envoy"
    for text in ["It is Nerith Vale, the envoy.", "Nerith made it.", "The mael is cold.", "Old Mael nods."]:
        assert pipeline.correct_fast(text).corrections == [], text


def test_a_lazy_index_builds_its_rarely_needed_tables_on_first_use_and_corrects_as_an_eager_one() -> None:
    eager, lazy = Pipeline(ENTITIES), Pipeline(ENTITIES, lazy=True)
    tables = ("_by_code_or_deletion", "by_spaceless_length", "spaceless_lengths", "spaceless_by_length")
    assert all(t in vars(eager.matcher.index) for t in tables)
    assert not any(t in vars(lazy.matcher.index) for t in tables)
    said = [
        "We ride for vassal high mm at dawn.",
        "Go to elder nacks's lair!",
        "vex ahlia and frumkin wait at westrun",  # near codes and spelling only
        "the tower of whispers; vox machina, vexahlia",
    ]
    assert [lazy.correct_fast(s) for s in said] == [eager.correct_fast(s) for s in said]
    assert all(t in vars(lazy.matcher.index) for t in tables)  # built as the utterances needed them
    assert [c.replacement for s in said for c in lazy.correct_fast(s).corrections] == [
        "Vasselheim",
        "Eldrinax",
        "Vex'ahlia",
        "Frumpkin",
        "Westruun",
        "Vex'ahlia",
    ]


def test_a_phrase_the_dm_says_is_heard_for_a_name_becomes_the_name() -> None:
    # Ordinary English a recogniser writes for a name every time: no rule may take it for the name on its own.
    entities = [
        EntityName(id=3, name="Frumpkin", heard_as=["from skin"]),
        EntityName(id=8, name="Vecna", heard_as=["vector"]),
        EntityName(id=9, name="Ornna", heard_as=["orca"]),
        EntityName(id=10, name="Orca Bay Keep"),
    ]
    pipeline = Pipeline(entities)
    result = pipeline.correct_fast("From skin hissed at the vector, and from skin's tail went up.")
    assert result.text == "Frumpkin hissed at the Vecna, and Frumpkin's tail went up."
    assert [(c.span, c.replacement, c.entity_id, c.score) for c in result.corrections] == [
        ("From skin", "Frumpkin", 3, 1.0),
        ("vector", "Vecna", 8, 1.0),
        ("from skin", "Frumpkin", 3, 1.0),
    ]
    # spaced or hyphenated otherwise, and plural, as names are
    assert (
        pipeline.correct_fast("fromskin met from-skin and two vectors").text == "Frumpkin met Frumpkin and two Vecnas"
    )
    # never inside a word, across a comma or a full stop, nor inside a name said exactly (the longest mention wins)
    for text in ["afrom skin and vectored", "It came from. Skin it.", "Away from, skin", "We sail to Orca Bay Keep."]:
        assert pipeline.correct_fast(text).corrections == [], text
    # without the DM's word, the same speech stays as it was
    assert (
        Pipeline([e.model_copy(update={"heard_as": []}) for e in entities])
        .correct_fast("From skin hissed at the vector.")
        .corrections
        == []
    )


def test_a_heard_as_phrase_is_matched_by_its_words_only() -> None:
    # Nothing sounding or spelled like "from skin" becomes Frumpkin: the phrase is not indexed by sound.
    index = PhoneticIndex.build([EntityName(id=3, name="Fenwick", heard_as=["from skin"])])
    assert [f.canonical for f in index.forms] == ["Fenwick"]
    matcher = PhoneticMatcher(index)
    assert [c.replacement for c in matcher.correct("the from skins").corrections] == ["Fenwick"]
    assert matcher.correct("the frum skins and from skim and fromm skin").corrections == []


def test_a_phrase_the_dm_says_is_never_the_name_is_not_corrected_to_it() -> None:
    """Ordinary words a phone off a name become it ("bitter salt" / Bittersolt); once the DM says they are never
    that name, stage 1 leaves them (the name itself misheard is still corrected), and another entity they sound
    like may still be heard there."""

    def corrected(names: list[EntityName], text: str) -> list[tuple[str, str]]:
        return [(c.span, c.replacement) for c in PhoneticMatcher(PhoneticIndex.build(names)).correct(text).corrections]

    line = "A bitter salt wind blows past bitter soult."
    heard = [("bitter salt", "Bittersolt"), ("bitter soult", "Bittersolt")]
    assert corrected([EntityName(id=1, name="Bittersolt")], line) == heard
    never = EntityName(id=1, name="Bittersolt", not_heard_as=["Bitter-Salt"])  # spacing and punctuation aside
    assert corrected([never], line) == heard[1:]
    other = EntityName(id=2, name="Bittersalte")
    assert corrected([never, other], "A bitter salt wind.") == [("bitter salt", "Bittersalte")]
    # of that entity only
    assert corrected([EntityName(id=2, name="Bittersalte", not_heard_as=["bitter salt"])], "A bitter salt wind.") == []


def test_a_plural_heard_by_sound_keeps_its_s_outside_the_name() -> None:
    pipeline = Pipeline(
        [EntityName(id=1, name="Kraghammer"), EntityName(id=2, name="Hourglass"), EntityName(id=3, name="Bedroll")]
    )
    result = pipeline.correct_fast("The crash hammers held the gate; the crash hammers' hall stood.")
    assert result.text == "The Kraghammers held the gate; the Kraghammers' hall stood."
    assert [(c.span, c.replacement) for c in result.corrections] == [("crash hammer", "Kraghammer")] * 2
    # The singular reading is a second chance for a coincidence: common words only need a long name.
    for text in ["Take off our glasses.", "Two bad rolls in a row.", "This is a religious order."]:
        assert pipeline.correct_fast(text).corrections == [], text


@pytest.mark.parametrize(
    ("first", "second", "heard"),
    [
        ("Highbearer Vord", "High Bearer Vord", "high bearer vored"),
        ("Ank\u2019Harel", "Ank'harel", "ancarel"),
        ("Aramente", "Aramenté", "aramanti"),
    ],
)
def test_two_entities_said_alike_are_no_rivals_however_spaced_or_accented(first: str, second: str, heard: str) -> None:
    # Other word breaks, apostrophes or accents say the same name: the entity listed first is named, as of two
    # written alike, not neither as ambiguous.
    pipeline = Pipeline([EntityName(id=1, name=first), EntityName(id=2, name=second)])
    [c] = pipeline.correct_fast(f"We met {heard} today.").corrections
    assert (c.span, c.replacement, c.entity_id) == (heard, first, 1)


def test_of_two_entities_written_alike_a_line_names_the_one_listed_first_every_time() -> None:
    # The forms are hashed by identity: without an order of its own the choice followed memory addresses.
    ballast = []
    for i in range(30):
        ballast.append([object() for _ in range(i * 101)])
        names = [
            EntityName(id=1, name="Tal'Dorei"),
            EntityName(id=2, name="Tal'Dorei"),
            EntityName(id=3, name="Exandria"),
        ]
        matcher = PhoneticMatcher(PhoneticIndex.build(names))
        [c] = matcher.correct("Welcome to told oh re, friends.", [0.9, 0.9, 0.3, 0.3, 0.3, 0.9]).corrections
        assert (c.replacement, c.entity_id) == ("Tal'Dorei", 1)


def test_a_noun_and_the_next_ones_article_are_not_a_name_they_sound_like() -> None:
    # As ingest corrects a line (memory/recorder.py): the campaign's names, the speakers' words.
    names = [
        EntityName(id=1, name="Gilda Shuster", aliases=["Gilda Schuster", "Gilda"]),
        EntityName(id=2, name="Zahra Hydris", aliases=["Zahra"]),
    ]
    matcher = PhoneticMatcher(PhoneticIndex.build(names))
    people = frozenset({"matt", "liam"})
    # "guild a" sounds just like the alias Gilda, but "the" makes "guild" a noun and "a" opens "a month"
    for text in ("The guild a month ago, they came.", "You will have done the guild a great service."):
        assert matcher.correct(text, None, frozenset(), people).corrections == [], text
    # a name heard as a word and an article, with no determiner before it, is still the name
    [c] = matcher.correct("We could see tsar a wander in.", None, frozenset(), people).corrections
    assert (c.span, c.entity_id) == ("tsar a", 2)


def test_a_very_common_word_at_the_edge_of_a_near_name_is_a_word_of_its_own() -> None:
    names = [EntityName(id=1, name="Wuyun Gates"), EntityName(id=2, name="Yeenoghu"), EntityName(id=3, name="Zadash")]
    matcher = PhoneticMatcher(PhoneticIndex.build(names))
    # "one gets" is a phone off Wuyun Gates, but "one" is among English's commonest words: a word next to the name
    for text in ("This one gets partway over and then falls prone.", "One gets lost, the other one--"):
        assert matcher.correct(text, None, frozenset(), frozenset({"matt"})).corrections == [], text
    # less common edge words still make the name ("who" and "had" are a little rarer than "one")
    assert [c.replacement for c in matcher.correct("they worship ye not who").corrections] == ["Yeenoghu"]
    assert [c.replacement for c in matcher.correct("we ride back to had ash tonight").corrections] == ["Zadash"]


def test_a_word_made_on_a_names_pattern_is_not_the_name() -> None:
    matcher = PhoneticMatcher(PhoneticIndex.build([EntityName(id=1, name="Frumpkin")]))
    # "grumpkins" sounds like Frumpkins but for its first consonant: a word coined after the name, left to stage 2
    result = matcher.correct("Are there any grumpkins you want us to find?", None, frozenset(), frozenset({"liam"}))
    assert result.corrections == [] and result.suspects == [(14, 23)]
    # the name heard with a sound missing inside it is still the name
    assert [c.replacement for c in matcher.correct("we pet frumkin").corrections] == ["Frumpkin"]


def test_a_parenthesised_aside_is_written_not_heard_and_never_corrected() -> None:
    # A human transcript's "(thoom)" is a sound effect; outside brackets the same word may be Tooma misheard.
    matcher = PhoneticMatcher(PhoneticIndex.build([EntityName(id=1, name="Tooma"), EntityName(id=2, name="Vecna")]))
    for text in ["(thoom) The gun itself seems warmer.", "then (thoom) the gun fires", "(as vekna) Hello."]:
        result = matcher.correct(text)
        assert (result.corrections, result.suspects) == ([], []), text
    [c] = matcher.correct("then thoom the gun fires").corrections
    assert c.replacement == "Tooma"


def test_a_name_whose_other_words_are_heard_right_is_mended_in_its_first_word() -> None:
    pipeline = Pipeline(
        [
            EntityName(id=1, name="Vorlag the Undying", aliases=["Vorlag"]),
            EntityName(id=2, name="Sylvarra Nightbloom", aliases=["Sylvarra"]),
            EntityName(id=3, name="Ren"),
            EntityName(id=4, name="Silk Road"),
        ]
    )
    # a capitalised spelling no word list has, with the rest of the name after it: the name misheard
    assert pipeline.correct_fast("the sigil of Morlag the Undying").text == "the sigil of Vorlag the Undying"
    # alone, it is the transcript's own name, and so it is before ordinary words another name ends with
    assert pipeline.correct_fast("We met Morlag today.").corrections == []
    assert pipeline.correct_fast("at the corner of Ruen Road and Dewmist").corrections == []
    # an English word there is that word
    assert pipeline.correct_fast("We should find Silver Nightbloom.").corrections == []
    # one English does not know, two phones off (S IH L V AA R R AH / S IH L V AE R AH), is the name's first word
    # misheard: the name's own uncommon word said right vouches for it
    assert pipeline.correct_fast("We should find Sylvara Nightbloom.").text == "We should find Sylvarra Nightbloom."
    assert pipeline.correct_fast("we should find sylvara nightbloom").text == "we should find Sylvarra Nightbloom"
