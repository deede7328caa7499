"""The name rule against look-alike letters of another script ("Vаx" with a Cyrillic а is not "Vax")."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from campaigns.files import CampaignFileError, parse_campaign_file
from memory.errors import InvalidInputError
from memory.models import EntityIn, EntityType
from memory.text import clean_name, without_look_alikes


@pytest.mark.parametrize(
    ("pasted", "message"),
    [
        pytest.param(
            "Vаx",
            "'Vаx' mixes scripts: 'а' (U+0430 CYRILLIC SMALL LETTER A) looks like Latin 'a'; type it as 'Vax'",
            id="cyrillic-a-in-latin",
        ),
        pytest.param(
            "Αlpha Keep",
            "'Αlpha Keep' mixes scripts: 'Α' (U+0391 GREEK CAPITAL LETTER ALPHA) looks like Latin 'A'; type it as "
            "'Alpha Keep'",
            id="greek-alpha-in-latin",
        ),
        pytest.param(
            "Vаxоr",
            "'Vаxоr' mixes scripts: 'а' (U+0430 CYRILLIC SMALL LETTER A) looks like Latin 'a', 'о' (U+043E "
            "CYRILLIC SMALL LETTER O) looks like Latin 'o'; type it as 'Vaxor'",
            id="two-look-alikes",
        ),
        pytest.param(
            "Вaх",
            "'Вaх' mixes scripts: 'a' (U+0061 LATIN SMALL LETTER A) looks like Cyrillic 'а'; type it as 'Вах'",
            id="latin-a-in-cyrillic",
        ),
        pytest.param(
            "Ꭺbe",
            "'Ꭺbe' mixes scripts: 'Ꭺ' (U+13AA CHEROKEE LETTER GO) looks like Latin 'A'; type it as 'Abe'",
            id="cherokee-in-latin",
        ),
        pytest.param(
            "Vаx Мара",
            "'Vаx Мара' mixes scripts: 'а' (U+0430 CYRILLIC SMALL LETTER A) looks like Latin 'a'; type it as "
            "'Vax Мара'",
            id="word-by-word",
        ),
    ],
)
def test_a_look_alike_letter_of_another_script_is_refused_naming_it(pasted: str, message: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        clean_name(pasted)
    assert str(caught.value) == message
    plain = message.rsplit("type it as ", 1)[1].strip("'")
    assert without_look_alikes(pasted) == plain and clean_name(plain) == plain  # the spelling offered is taken
    # the same rule wherever an entity is made: its name and its aliases (the CLI, /entity, review Edit)
    with pytest.raises(ValidationError, match="mixes scripts"):
        EntityIn(name=pasted, type=EntityType.npc)
    with pytest.raises(ValidationError, match="mixes scripts"):
        EntityIn(name="Someone", type=EntityType.npc, aliases=["Fine", pasted])


@pytest.mark.parametrize(
    "name",
    [
        "Vax",
        "Вах",  # wholly Cyrillic: a name of its own, however Latin it looks
        "Ωmega",  # Ω looks like no Latin letter: a styled name, not a pasted one
        "Ænor",
        "Ðurin",
        "Zoë",
        "Mjølnir",
        "Łódź",
        "Þórr",
        "İstanbul",
        "Yug'Voril",
        "Tal'Dorei",
        "Vex’ahlia",
        "Half-Elf Ranger",
        "Κνωσός",
        "ハチ公",  # katakana and kanji: Japanese is written so, though ロ and 口 look alike
        "ロ之助",
        "Sir 口",
        "\U0001f9d9\u200d\u2642\ufe0f Merlin",
        # each word in its own script: a name of two languages, not a paste
        "Sergei Петров",
        "Москва Station",
        "Baba Яга",
        "Queen Мара",
        "Σeraph",  # Σ looks like no letter people type in Latin (the table's is Ʃ): styled, as "Ωmega"
    ],
)
def test_names_in_one_script_with_accents_and_punctuation_are_kept(name: str) -> None:
    assert clean_name(name) == name
    assert without_look_alikes(name) == name


def test_a_campaign_file_says_which_name_and_alias_hold_a_look_alike_and_where() -> None:
    text = (
        "entities:\n  - {name: Ironhold, type: place}\n  - {name: Vаx, type: npc}\n"
        "  - {name: Vex'ahlia, type: npc, aliases: [Vеx]}\n"
        "relationships:\n  - {source: Ironhold, type: home_of, target: Vаx}\n"
    )
    with pytest.raises(CampaignFileError) as caught:
        parse_campaign_file(text, "world.yaml")
    assert [str(p) for p in caught.value.problems] == [
        "world.yaml:3: entity #2 'Vаx': name 'Vаx' mixes scripts: 'а' (U+0430 CYRILLIC SMALL LETTER A) looks like "
        "Latin 'a'; type it as 'Vax'",
        "world.yaml:4: entity #3 \"Vex'ahlia\": aliases #1 'Vеx' mixes scripts: 'е' (U+0435 CYRILLIC SMALL LETTER "
        "IE) looks like Latin 'e'; type it as 'Vex'",
        "world.yaml:6: relationship #1 (Ironhold -[home_of]-> Vаx): target 'Vаx' mixes scripts: 'а' (U+0430 "
        "CYRILLIC SMALL LETTER A) looks like Latin 'a'; type it as 'Vax'",
    ]
