"""Bidi controls and C0/C1 control characters in what a DM or a file gives: refused where they reorder or hide
text (names, descriptions, values, keys), dropped from spoken text; right-to-left scripts, emoji with joiners and
combining marks are text."""

from __future__ import annotations

import re
import unicodedata

import pytest
from pydantic import ValidationError

from campaigns.files import CampaignFileError, parse_campaign_file
from memory.errors import InvalidInputError, validation_problems
from memory.extraction.schema import ProposedEntity, ProposedFact
from memory.extraction.validate import _entity, _fact
from memory.jobs import Recap
from memory.models import EntityIn, EntityType, RelationshipIn
from memory.recorder import Utterance, Word
from memory.text import check_attributes, clean_name, fact_value, hidden_character, session_title, shown_text

#: The explicit embedding, override and isolate controls, by the standard's own list.
BIDI_CONTROLS = [chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))]

#: Names and text in right-to-left scripts, with combining marks and emoji sequences: all must stay as given.
LEGITIMATE = [
    "غوريم",  # Arabic
    "גורים",  # Hebrew
    "שָׁלוֹם",  # Hebrew with niqqud (combining marks)
    "Gorrim بن سالم",  # Latin and Arabic in one name
    "\U0001f9d9\u200d\u2642\ufe0f Merlin",  # 🧙‍♂️: the joiner is part of the picture
    "\U0001f468\u200d\U0001f469\u200d\U0001f467 family",  # 👨‍👩‍👧
    "Zoë",
]


def test_the_bidi_controls_found_by_unicodedata_are_the_standards_nine() -> None:
    classes = {"LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"}  # as memory.models names them
    found = [chr(c) for c in range(0x110000) if unicodedata.bidirectional(chr(c)) in classes]
    assert found == BIDI_CONTROLS
    assert all(hidden_character(f"a{char}b") == (1, char) for char in found)


@pytest.mark.parametrize("char", BIDI_CONTROLS, ids=[f"U+{ord(c):04X}" for c in BIDI_CONTROLS])
def test_a_bidi_control_is_refused_in_every_kind_of_text_a_dm_gives(char: str) -> None:
    said = f"contains U+{ord(char):04X} {unicodedata.name(char)} at position 4, an invisible control character"
    with pytest.raises(InvalidInputError, match=re.escape(said)):
        clean_name(f"Gor{char}rim")
    with pytest.raises(ValidationError) as refused:
        EntityIn(name="Gorrim", type=EntityType.npc, description=f"A d{char}warf")
    assert validation_problems(refused.value) == f"description: {said}; remove it"
    with pytest.raises(InvalidInputError, match="^" + re.escape(f"value {said}; remove it") + "$"):
        fact_value(f"dea{char}d")
    with pytest.raises(ValidationError, match=re.escape(said)):
        RelationshipIn(source_id=1, type="status", value=f"dea{char}d")
    with pytest.raises(InvalidInputError, match="^" + re.escape("attribute 'rank' " + said)):
        check_attributes({"rank": f"Tha{char}ne"})
    with pytest.raises(InvalidInputError, match="^" + re.escape("session title " + said)):
        session_title(f"Nig{char}ht 1")


def test_the_message_names_the_field_and_the_character() -> None:
    with pytest.raises(ValidationError) as refused:
        EntityIn(name="Gor\u202erim", type=EntityType.npc)
    assert validation_problems(refused.value) == (
        "name: 'Gor\\u202erim' contains U+202E RIGHT-TO-LEFT OVERRIDE at position 4, an invisible control "
        "character; remove it"
    )
    with pytest.raises(ValidationError) as alias:
        EntityIn(name="Gorrim", type=EntityType.npc, aliases=["\u202emirroG"])
    assert validation_problems(alias.value).startswith("aliases: '\\u202emirroG' contains U+202E RIGHT-TO-LEFT")


@pytest.mark.parametrize("char", ["\x07", "\x1b", "\x7f", "\x85", "\x9b"], ids=["BEL", "ESC", "DEL", "NEL", "CSI"])
def test_c0_and_c1_controls_are_refused_in_text_and_names(char: str) -> None:
    code = f"U+{ord(char):04X}"
    with pytest.raises(
        InvalidInputError, match=re.escape(f"contains {code} at position 4, an invisible control character")
    ):
        clean_name(f"Gor{char}rim")
    with pytest.raises(
        ValueError, match="^" + re.escape(f"contains {code} at position 2, an invisible control character")
    ):
        shown_text(f"A{char} dwarf")


def test_line_breaks_and_tabs_are_text_in_a_description_not_in_a_name_or_key() -> None:
    text = "A dwarf.\n\tHe lies.\r\nOften."
    assert EntityIn(name="Gorrim", type=EntityType.npc, description=text).description == text
    assert check_attributes({"notes": "one\ntwo"}) == {"notes": "one\ntwo"}
    with pytest.raises(InvalidInputError, match=r"^'Gorrim\\nthe Bold' has a line break at position 7: a name is one"):
        clean_name("Gorrim\nthe Bold")
    assert clean_name("  Gorrim\n") == "Gorrim"  # at an edge it is trimmed, as before
    assert clean_name("Gorrim\tthe Bold") == "Gorrim the Bold"  # a tab is spacing, as before
    with pytest.raises(InvalidInputError, match=r"^attribute 'home\\ntown' contains U\+000A at position 5"):
        check_attributes({"home\ntown": "Ironhold"})
    with pytest.raises(InvalidInputError, match=r"^session title contains U\+000A"):
        session_title("Night\n1")


def test_a_line_break_pasted_from_a_word_processor_is_a_line_break_in_text_not_in_a_key() -> None:
    """Word and PowerPoint copy a line break within a paragraph as U+000B: a description pasted from one keeps the
    new line the DM sees there, rather than being refused for a character they cannot see."""
    pasted = "A dwarf.\vHe lies.\fOften."
    assert EntityIn(name="Gorrim", type=EntityType.npc, description=pasted).description == "A dwarf.\nHe lies.\nOften."
    assert fact_value("Ironhold\vby the gate") == "Ironhold\nby the gate"
    with pytest.raises(InvalidInputError, match=r"^attribute 'home\\x0btown' contains U\+000B at position 5"):
        check_attributes({"home\vtown": "Ironhold"})


@pytest.mark.parametrize("text", LEGITIMATE)
def test_right_to_left_scripts_emoji_and_combining_marks_are_accepted(text: str) -> None:
    assert clean_name(text) == unicodedata.normalize("NFC", text)
    entity = EntityIn(name=text, type=EntityType.npc, aliases=[text + " II"], description=f"{text}\n{text}")
    assert entity.name == unicodedata.normalize("NFC", text) and entity.description == f"{text}\n{text}"
    assert fact_value(text) == unicodedata.normalize("NFC", text)
    assert check_attributes({text: text}) == {text: unicodedata.normalize("NFC", text)}
    assert session_title(text) == text


def test_nfc_and_nfd_are_handled_as_before() -> None:
    decomposed = unicodedata.normalize("NFD", "Café Ærwyn")
    assert clean_name(decomposed) == unicodedata.normalize("NFC", decomposed)  # names are stored NFC
    assert EntityIn(name="x", type=EntityType.npc, description=decomposed).description == decomposed  # text as given
    # the marks that right-to-left text may need are no override: accepted in text, as names refuse every format
    assert shown_text("\u05e9\u05dc\u05d5\u05dd \u200fok") == "\u05e9\u05dc\u05d5\u05dd \u200fok"


def test_a_transcripts_line_drops_a_stray_bidi_control_instead_of_being_refused() -> None:
    line = Utterance(speaker="D\u202eM", text="The \u2067غوريم\u2069 said \u202ehi\u202c 👨\u200d👩\u200d👧")
    assert (line.speaker, line.text) == ("DM", "The غوريم said hi 👨\u200d👩\u200d👧")
    assert Word(word="\u202ehi").word == "hi"


def test_a_models_text_drops_what_the_store_refuses_a_dm() -> None:
    proposed = ProposedEntity(name="Gorrim", type="npc", description="A \u202edwarf\x07", confidence=0.9, entry_ids=[1])
    assert (kept := _entity(proposed, {1})) is not None and kept.description == "A dwarf"
    fact = ProposedFact(
        source="Gorrim", type="status", target=None, value="dea\u202ed", confidence=0.9, basis="stated", entry_ids=[1]
    )
    assert (kept_fact := _fact(fact, {1})) is not None and kept_fact.value == "dead"
    assert Recap(recap="They \u202ewon.\nThe end.").recap == "They won.\nThe end."


def test_a_campaign_file_refuses_a_hidden_character_in_any_field_at_its_line() -> None:
    head = "entities:\n  - name: Gorrim\n    type: npc\n"
    said = "an invisible control character; remove it"
    for text, expected in [
        (
            head + '    description: "A d\\u202ewarf"\n',
            f"c.yaml:4: entity #1 'Gorrim': description contains U+202E RIGHT-TO-LEFT OVERRIDE at position 4, {said}",
        ),
        (
            head + '    attributes: {"home\\ntown": x}\n',
            f"c.yaml:4: entity #1 'Gorrim': attributes key 'home\\ntown' contains U+000A at position 5, {said}",
        ),
        (
            head + '    attributes: {rank: "Th\\u2066ane"}\n',
            "c.yaml:4: entity #1 'Gorrim': attributes.rank contains U+2066 LEFT-TO-RIGHT ISOLATE at position 3, "
            + said,
        ),
        (
            head + 'relationships:\n  - {source: Gorrim, type: status, value: "dea\\u202ed"}\n',
            # the item is named with the override escaped: as given, it would reverse the rest of the message
            "c.yaml:5: relationship #1 (Gorrim -[status]-> dea\\u202ed): value contains U+202E RIGHT-TO-LEFT "
            f"OVERRIDE at position 4, {said}",
        ),
        (
            'campaign: {name: Ashes, system: "D\\x07D"}\n' + head,
            f"c.yaml:1: campaign: system contains U+0007 at position 2, {said}",
        ),
    ]:
        with pytest.raises(CampaignFileError) as refused:
            parse_campaign_file(text, "c.yaml")
        assert str(refused.value) == expected
    ok = parse_campaign_file(head + "    description: |\n      غوريم the dwarf.\n      Lies.\n", "c.yaml")
    assert ok.entities[0].description == "غوريم the dwarf.\nLies."
