"""Campaign files: the examples load, exports read back, and every bad file is refused with file, line and item."""

from __future__ import annotations

import itertools
import json
import unicodedata
from collections import Counter
from pathlib import Path
from textwrap import dedent

import pytest
from pydantic import ValidationError

from campaigns.build_examples import build, guess_type, looks_like_alias
from campaigns.files import (
    MAX_DEPTH,
    MAX_ENTITIES,
    CampaignFileError,
    dump_campaign_file,
    parse_campaign_file,
    read_campaign_file,
)
from campaigns.load import LoadChange, LoadReport
from campaigns.schema import CampaignFile, EntitySpec, RelationshipSpec
from memory.campaigns import MAX_NAME
from memory.models import EntityIn, EntityType, RelationshipIn, Source, Visibility
from memory.text import MAX_ALIASES, MAX_FACT_VALUE_CHARS

EXAMPLES = Path(__file__).resolve().parents[2] / "campaigns" / "examples"


def refused(text: str | bytes, filename: str = "castle.yaml", **kwargs: int) -> CampaignFileError:
    with pytest.raises(CampaignFileError) as caught:
        parse_campaign_file(text, filename, **kwargs)
    return caught.value


def yaml_text(text: str) -> str:
    return dedent(text).lstrip("\n")


# ------------------------------------------------------------------------------------------------ the examples


def test_sunken_crown_has_every_type_secrets_and_resolvable_relationships() -> None:
    campaign = read_campaign_file(EXAMPLES / "sunken_crown.yaml")

    assert campaign.campaign is not None and campaign.campaign.name == "The Sunken Crown"
    types = Counter(e.type for e in campaign.entities)
    assert set(types) == set(EntityType)
    assert 18 <= len(campaign.entities) <= 30 and len(campaign.relationships) >= 18
    assert {e.name for e in campaign.entities if e.secret} == {"Vaskerrin Holt", "The Pact of Ash and Water"}
    for rel in campaign.relationships:
        assert campaign.find_entity(rel.source) is not None, rel
        assert campaign.find_entity(rel.target) is not None, rel
    # Aliases resolve to their entity whatever the case.
    mira = campaign.find_entity("MIRA")
    assert mira is not None and mira.name == "Mira Tolvanek"


def test_sample_session_mishears_names_and_states_facts() -> None:
    lines = (EXAMPLES / "sunken_crown_session1.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]

    assert 50 <= len(rows) <= 70
    assert [r["ref"] for r in rows] == [f"s1:L{n}" for n in range(1, len(rows) + 1)]
    for row in rows:
        assert set(row) == {"speaker", "text", "start", "end", "ref"}
        assert row["end"] > row["start"]
    assert all(a["end"] <= b["start"] for a, b in itertools.pairwise(rows))
    speakers = Counter(r["speaker"] for r in rows)
    assert "DM" in speakers and 3 <= len(speakers) - 1 <= 4
    text = " ".join(r["text"] for r in rows).casefold()
    for misheard in ("elder nacks", "iron hold", "salt mere", "kell loth", "tide collar"):
        assert misheard in text
    assert "mira toll van eck is the blacksmith of ironhold" in text
    assert "the order of the pale hand seeks the sunken crown" in text
    # Every campaign name the session leans on is in the campaign file.
    campaign = read_campaign_file(EXAMPLES / "sunken_crown.yaml")
    for name in ("Eldrinax", "Ironhold", "Quelloth", "Khar Duzrim", "Tidecaller Horn", "Vaskerrin Holt"):
        assert campaign.find_entity(name) is not None


# ------------------------------------------------------------------------------------------------ round trip


def test_example_round_trips_through_dump() -> None:
    campaign = read_campaign_file(EXAMPLES / "sunken_crown.yaml")
    assert parse_campaign_file(dump_campaign_file(campaign), "export.yaml") == campaign


def test_an_export_writes_emoji_as_they_were_typed() -> None:
    """libyaml's emitter wrote a character beyond U+FFFF as an escape: the DM who typed "A dragon 🐉" opened the
    export to find "A dragon \\U0001F409" (and a campaign named with an emoji, in double quotes)."""
    campaign = CampaignFile.model_validate(
        {
            "campaign": {"name": "Dragons 🐉 of the Deep"},
            "entities": [
                {"name": "Eldrinax", "type": "npc", "description": "An ancient dragon 🐉", "aliases": ["🔥 Wyrm"]},
                {"name": "Zoë", "type": "npc", "attributes": {"mood": "🧙\u200d♂️ wizardly"}},
            ],
        }
    )
    text = dump_campaign_file(campaign)
    assert "\\U" not in text and "\\u" not in text
    assert "name: Dragons 🐉 of the Deep\n" in text and "description: An ancient dragon 🐉\n" in text
    assert "- 🔥 Wyrm\n" in text and "mood: 🧙\u200d♂️ wizardly\n" in text
    assert parse_campaign_file(text, "export.yaml") == campaign


def test_round_trip_keeps_values_that_yaml_would_otherwise_retype() -> None:
    campaign = CampaignFile.model_validate(
        {
            "campaign": {"name": "Tricky: a campaign", "system": "yes"},
            "entities": [
                {
                    "name": "No",  # YAML 1.1 reads a bare No as false
                    "type": "npc",
                    "aliases": ["null", "1e3", "Ærwyn's #1 fan"],
                    "description": "Line one\nline two: with a colon\n  and an indent",
                    "attributes": {"born": "1203-04-05", "hp": 12, "ac": 13.5, "alive": True, "tags": ["a", 1, None]},
                    "secret": True,
                },
                {"name": "'Quoted' & \"double\"", "type": "place"},
            ],
            "relationships": [{"source": "null", "type": "lives in", "target": "'quoted' & \"double\""}],
        }
    )
    text = dump_campaign_file(campaign, header_comment="Exported by a test\nsecond line")

    assert text.startswith("# Exported by a test\n# second line\n")
    assert parse_campaign_file(text, "export.yaml") == campaign


# ------------------------------------------------------------------------------------------------ bad files

GOOD_HEAD = """\
campaign:
  name: Castle
entities:
  - name: Ironhold
    type: place
"""


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            "  - name: Eldrinax\n    type: dragon\n",
            "castle.yaml:7: entity #2 'Eldrinax': type 'dragon' is not one of npc, location, item, faction, quest, "
            "event, concept, player",
            id="unknown-type",
        ),
        pytest.param(
            "  - name: Eldrinax\n    type: npc\n    alias: [Old Bronze]\n",
            "castle.yaml:8: entity #2 'Eldrinax': unknown field 'alias'; did you mean 'aliases'?",
            id="typo-field",
        ),
        pytest.param(
            "  - name: Eldrinax\n",
            "castle.yaml:6: entity #2 'Eldrinax': missing field 'type'",
            id="missing-field",
        ),
        pytest.param(
            "  - name: Eldrinax\n    type: npc\n    secret: 'yes'\n",
            "castle.yaml:8: entity #2 'Eldrinax': secret must be true or false, not 'yes'",
            id="secret-not-bool",
        ),
        pytest.param(
            "  - name: 1984\n    type: npc\n",
            "castle.yaml:6: entity #2 '1984': name must be text, not the number 1984 (put it in quotes",
            id="name-number",
        ),
        pytest.param(
            "  - name: Eldrinax\n    type: npc\n    aliases: Old Bronze\n",
            "castle.yaml:8: entity #2 'Eldrinax': aliases must be a list, not 'Old Bronze'",
            id="aliases-not-list",
        ),
        pytest.param(
            "  - name: Eldrinax\n    type: npc\n    attributes:\n      age: 900\n      stats: {str: 27}\n",
            "castle.yaml:10: entity #2 'Eldrinax': attributes.stats must be text, a number, true/false or empty, "
            "or a list of those, not a mapping",
            id="attribute-nested",
        ),
        pytest.param(
            "  - name: Eldrinax\n    type: npc\n    attributes: {speed: .nan}\n",
            "castle.yaml:8: entity #2 'Eldrinax': attributes.speed must be a finite number, not nan",
            id="attribute-nan",
        ),
        pytest.param(
            "  - name: Eldrinax\n    type: npc\n    type: place\n",
            "castle.yaml:8: entity #2 'Eldrinax': key 'type' appears twice (first at line 7)",
            id="duplicate-key",
        ),
        pytest.param(
            "  - name: Eldrinax\n    type: npc\n    description: !!python/object/apply:os.system [ls]\n",
            "castle.yaml:8: entity #2 'Eldrinax': unsupported YAML tag "
            "'tag:yaml.org,2002:python/object/apply:os.system'",
            id="python-tag",
        ),
        pytest.param(
            "  - <<: 5\n    name: Eldrinax\n    type: npc\n",
            "castle.yaml:6: entity #2 'Eldrinax': '<<' must merge a mapping or a list of mappings",
            id="bad-merge",
        ),
        pytest.param(
            "  - name: Eldrinax\n    type: npc\n    aliases: " + "x" * 500 + "\n",
            "castle.yaml:8: entity #2 'Eldrinax': aliases must be a list, not '" + "x" * 59 + "…'",
            id="long-value-cut",
        ),
        pytest.param(
            "  - Eldrinax\n",
            "castle.yaml:6: entity #2: expected a mapping with name and type, found 'Eldrinax'",
            id="item-not-mapping",
        ),
        pytest.param(
            "  - name: IRONHOLD\n    type: place\n",
            "castle.yaml:6: entity #2 'IRONHOLD': name 'IRONHOLD' is already the name of entity #1 'Ironhold' (line 4)",
            id="duplicate-name-any-case",
        ),
        pytest.param(
            "  - name: Iron Keep\n    type: place\n    aliases: [Fort Grim, ironhold]\n",
            "castle.yaml:8: entity #2 'Iron Keep': alias 'ironhold' is already the name of entity #1 'Ironhold' "
            "(line 4)",
            id="alias-is-other-name",
        ),
        pytest.param(
            "  - name: Eldrinax\n    type: npc\n    description: 'x'\n    attributes: {1203: born}\n",
            "castle.yaml:9: entity #2 'Eldrinax': attributes has the key 1203; names of attributes must be text",
            id="attribute-key-number",
        ),
        pytest.param(
            "  - name: Eldrinax\n    type: npc\n    attributes: {hoard: " + "9" * 5000 + "}\n",
            "castle.yaml:8: entity #2 'Eldrinax': the number '99999999999999999999'… is too long",
            id="huge-number",
        ),
        # valid YAML the database cannot keep: NUL in text, in an attribute's value or in its name
        pytest.param(
            '  - name: Eldrinax\n    type: npc\n    description: "a\\0b"\n',
            "castle.yaml:8: entity #2 'Eldrinax': description contains a NUL character (U+0000), which cannot be "
            "stored",
            id="nul-in-description",
        ),
        pytest.param(
            '  - name: Eldrinax\n    type: npc\n    attributes: {note: "a\\0b"}\n',
            "castle.yaml:8: entity #2 'Eldrinax': attributes.note contains a NUL character",
            id="nul-in-attribute",
        ),
        pytest.param(
            '  - name: Eldrinax\n    type: npc\n    attributes: {"n\\0te": b}\n',
            "castle.yaml:8: entity #2 'Eldrinax': attributes contains a NUL character",
            id="nul-in-attribute-name",
        ),
    ],
)
def test_bad_entity_names_file_line_and_item(body: str, expected: str) -> None:
    error = refused(GOOD_HEAD + body)
    assert str(error).startswith(expected), str(error)
    assert error.filename == "castle.yaml"


def test_an_overlong_name_and_too_many_aliases_are_refused_in_plain_words() -> None:
    error = refused(GOOD_HEAD + f"  - name: {'x' * 201}\n    type: npc\n    aliases: [{'y' * 201}]\n")
    first, second = (str(p) for p in error.problems)
    assert first.endswith(f": name {'x' * 40 + '…'!r} is longer than 200 characters")
    assert second.endswith(f": aliases #1 {'y' * 40 + '…'!r} is longer than 200 characters")

    aliases = ", ".join(f"Alias {i}" for i in range(MAX_ALIASES + 1))
    error = refused(GOOD_HEAD + f"  - name: Many\n    type: npc\n    aliases: [{aliases}]\n")
    assert str(error) == (
        "castle.yaml:8: entity #2 'Many': aliases 51, more than the 50 allowed: keep the names the table uses"
    )
    # the same limit where the CLI, a slash command or the store makes an entity
    with pytest.raises(ValidationError, match="51, more than the 50 allowed"):
        EntityIn(name="Many", type=EntityType.npc, aliases=[f"Alias {i}" for i in range(MAX_ALIASES + 1)])
    assert len(EntityIn(name="Many", type=EntityType.npc, aliases=aliases.split(", ")[:MAX_ALIASES]).aliases) == 50


def test_an_empty_name_and_a_bad_relationship_type_are_said_once_with_their_line() -> None:
    error = refused(GOOD_HEAD + "  - {name: ' ', type: npc, aliases: ['']}\n")
    assert [p.message for p in error.problems] == ["name must not be empty", "aliases #1 must not be empty"]

    text = "entities:\n  - {name: A, type: npc}\nrelationships:\n"
    text += "  - {source: A, type: ' ', value: x}\n"
    text += f"  - {{source: A, type: {'r' * 101}, value: x}}\n"  # the database's column holds 100
    text += '  - {source: A, type: "a\\x01b", value: x}\n'
    error = refused(text)
    assert [str(p).split(": ", 2)[2] for p in error.problems] == [
        "type must not be empty",
        "type has 101 characters; a relationship type has at most 100",
        "type contains U+0001, an invisible control character; remove it",
    ]
    assert [p.line for p in error.problems] == [4, 5, 6]


def test_alias_colliding_with_another_alias() -> None:
    text = yaml_text(
        """
        entities:
          - name: Eldrinax
            type: npc
            aliases: [The Drowned Wyrm]
          - name: Vhaltor
            type: npc
            aliases:
              - Old Bronze
              - the  drowned WYRM
        """
    )
    error = refused(text)
    assert str(error) == (
        "castle.yaml:9: entity #2 'Vhaltor': alias 'the drowned WYRM' is already an alias of entity #1 "
        "'Eldrinax' (line 2)"
    )


def test_relationship_to_unknown_entity_names_the_relationship_and_suggests() -> None:
    text = yaml_text(
        """
        entities:
          - {name: Mira Tolvanek, type: npc, aliases: [Mira]}
          - {name: Ironhold, type: place}
        relationships:
          - {source: mira, type: blacksmith of, target: IRONHOLD}
          - source: Mira
            type: lives in
            target: Ironholt
        """
    )
    error = refused(text)
    assert str(error) == (
        "castle.yaml:8: relationship #2 (Mira -[lives in]-> Ironholt): target 'Ironholt' is not the name or "
        "alias of any entity in this file; did you mean 'Ironhold'?"
    )


def test_a_relationship_of_an_entity_to_itself_is_refused_by_name_or_alias() -> None:
    """`{source: Gorrim, type: lives in, target: Gorrim}` loaded without a word: a fact no one meant."""
    text = yaml_text(
        """
        entities:
          - {name: Gorrim Ashfoot, type: npc, aliases: [Gorrim]}
        relationships:
          - {source: Gorrim Ashfoot, type: lives in, target: gorrim}
        """
    )
    assert str(refused(text)) == (
        "castle.yaml:4: relationship #1 (Gorrim Ashfoot -[lives in]-> gorrim): target 'gorrim' is 'Gorrim Ashfoot' "
        "itself: a relationship connects two entities (a state of its own is a value, e.g. value: dead)"
    )


def test_relationships_resolve_by_alias_in_any_case() -> None:
    text = yaml_text(
        """
        entities:
          - {name: Mira Tolvanek, type: npc, aliases: [The Smith]}
          - {name: Ironhold, type: place}
        relationships:
          - {source: THE SMITH, type: Blacksmith  Of, target: ironhold}
        """
    )
    campaign = parse_campaign_file(text, "castle.yaml")
    rel = campaign.relationships[0]
    assert rel.type == "blacksmith_of"  # the store's rule for relationship types
    assert campaign.find_entity(rel.source).name == "Mira Tolvanek"  # type: ignore[union-attr]


def test_repeated_relationship_is_refused() -> None:
    text = yaml_text(
        """
        entities:
          - {name: Mira, type: npc, aliases: [The Smith]}
          - {name: Ironhold, type: place}
        relationships:
          - {source: Mira, type: lives in, target: Ironhold}
          - {source: the smith, type: Lives In, target: ironhold}
        """
    )
    assert str(refused(text)) == (
        "castle.yaml:6: relationship #2 (the smith -[Lives In]-> ironhold): repeats relationship #1 (line 5)"
    )


def test_attribute_facts_have_a_value_instead_of_a_target() -> None:
    text = yaml_text(
        """
        entities:
          - {name: Mira, type: npc}
        relationships:
          - {source: mira, type: occupation, value: blacksmith, secret: true}
        """
    )
    fact = parse_campaign_file(text, "castle.yaml").relationships[0]
    assert (fact.target, fact.value, fact.visibility) == (None, "blacksmith", Visibility.secret)
    wrong = text + "  - {source: Mira, type: home, target: Mira, value: forge}\n  - {source: Mira, type: home}\n"
    assert [str(p) for p in refused(wrong).problems] == [
        "castle.yaml:5: relationship #2 (Mira -[home]-> Mira): has both a target and a value; "
        "a relationship has one of them",
        "castle.yaml:6: relationship #3 (Mira -[home]-> ?): needs a target (an entity) or a value "
        "(an attribute fact, e.g. value: blacksmith)",
    ]
    repeated = text + "  - {source: Mira, type: occupation, value: blacksmith}\n"
    assert str(refused(repeated)).endswith("repeats relationship #1 (line 4)")
    # one value of a type at a time, and one place to live: a second would close the first at every load
    two = text + "  - {source: Mira, type: occupation, value: spy}\n"
    assert str(refused(two)).endswith(
        "castle.yaml:5: relationship #2 (Mira -[occupation]-> spy): Mira has one 'occupation' at a time, and "
        "relationship #1 gives another: keep one (several values of an attribute go in the entity's attributes, "
        "as a list) (line 4)"
    )
    homes = yaml_text(
        """
        entities:
          - {name: Mira, type: npc}
          - {name: Forge, type: place}
          - {name: Mill, type: place}
        relationships:
          - {source: Mira, type: lives in, target: Forge}
          - {source: Mira, type: lives in, target: Mill}
          - {source: Mira, type: knows, target: Forge}
          - {source: Mira, type: knows, target: Mill}
        """
    )
    assert [p.line for p in refused(homes).problems] == [7]


def test_a_relation_stated_from_its_other_end_is_weighed_as_the_graph_weighs_it() -> None:
    """ "Greywatch ruled_by Serah" beside "Balcor leader_of Greywatch" is two rulers of Greywatch, stated from either
    end: the load would keep one, so the file is refused naming both lines; the same holder from both ends is one
    fact, as the graph stores it once."""
    text = yaml_text(
        """
        entities:
          - {name: Greywatch, type: place}
          - {name: Serah, type: npc}
          - {name: Balcor, type: npc}
          - {name: Bow, type: item}
        relationships:
          - {source: Greywatch, type: ruled_by, target: Serah}
          - {source: Balcor, type: leader of, target: Greywatch}
        """
    )
    assert str(refused(text)) == (
        "castle.yaml:8: relationship #2 (Balcor -[leader of]-> Greywatch): Greywatch has one 'ruled_by' at a time, "
        "and relationship #1 gives another (Balcor leader_of Greywatch is Greywatch ruled_by Balcor): keep one "
        "(several values of an attribute go in the entity's attributes, as a list) (line 7)"
    )
    holders = text.replace("type: ruled_by, target: Serah", "type: ruled_by, target: Balcor")
    holders += "  - {source: Bow, type: owned_by, target: Serah}\n  - {source: Serah, type: has, target: Bow}\n"
    assert len(parse_campaign_file(holders, "castle.yaml").relationships) == 4  # each fact once, from either end
    assert [p.line for p in refused(holders + "  - {source: Balcor, type: carried, target: Bow}\n").problems] == [11]
    # "led_by" is "ruled_by" in other words
    led = text.replace("type: ruled_by, target: Serah", "type: led_by, target: Serah")
    assert [p.line for p in refused(led).problems] == [8]
    assert "gives another (Greywatch led_by Serah is Greywatch ruled_by Serah; Balcor leader_of" in str(refused(led))
    # one may lead several places, and hold several things
    many = (
        holders
        + "  - {source: Balcor, type: leader_of, target: Serah}\n  - {source: Serah, type: has, target: Balcor}\n"
    )
    assert len(parse_campaign_file(many, "castle.yaml").relationships) == 6


def test_a_value_is_a_state_as_long_as_the_dm_may_type_one() -> None:
    """One limit for a fact's value, whoever gives it: a file's longer value is refused where it is (the load is
    all or nothing, so nothing the DM wrote is lost), not stored to outgrow the reply that quotes it."""
    text = "entities:\n  - {name: Mira, type: npc}\nrelationships:\n"
    fits = text + f"  - {{source: Mira, type: status, value: {'a' * MAX_FACT_VALUE_CHARS}}}\n"
    assert parse_campaign_file(fits, "castle.yaml").relationships[0].value == "a" * MAX_FACT_VALUE_CHARS
    long = text + f"  - {{source: Mira, type: notes, value: '{'a' * (MAX_FACT_VALUE_CHARS + 1)}  '}}\n"
    (problem,) = refused(long).problems
    assert (problem.line, str(problem).split(": ", 2)[2]) == (
        4,
        "value has 501 characters; a fact's value has at most 500: give the state (dead, sleeping under "
        "Ironhold) and put longer notes in the entity's description",
    )
    with pytest.raises(
        ValidationError, match="value\n  Value error, has 501 characters"
    ):  # every other way in, the model's edge
        RelationshipIn(source_id=1, type="notes", value="a" * (MAX_FACT_VALUE_CHARS + 1))


def test_relationship_to_an_invalid_entity_reports_only_the_entity() -> None:
    # The entity exists but is broken; saying the relationship points nowhere would send the DM the wrong way.
    text = yaml_text(
        """
        entities:
          - {name: Eldrinax, type: dragon, aliases: [Old Bronze]}
        relationships:
          - {source: Old Bronze, type: guards, target: Eldrinax}
        """
    )
    error = refused(text)
    assert len(error.problems) == 1
    assert error.problems[0].line == 2 and error.problems[0].item == "entity #1 'Eldrinax'"


def test_all_problems_are_reported_in_line_order() -> None:
    text = yaml_text(
        """
        entities:
          - {name: A, type: dragon}
          - {name: B, type: npc, secret: maybe}
        relationships:
          - {source: A, type: knows, target: Nobody}
        campaign: {name: X, sytem: 5e}
        """
    )
    error = refused(text)
    assert [(p.line, p.item) for p in error.problems] == [
        (2, "entity #1 'A'"),
        (3, "entity #2 'B'"),
        (5, "relationship #1 (A -[knows]-> Nobody)"),
        (6, "campaign"),
    ]
    assert "unknown field 'sytem'; did you mean 'system'?" in error.problems[3].message
    assert str(error).count("\n") == 3


def test_yaml_syntax_error_gives_line_and_column() -> None:
    text = yaml_text(
        """
        entities:
          - name: Eldrinax
            type: npc
            aliases: [Old Bronze, The Drowned Wyrm
          - name: Ironhold
        """
    )
    error = refused(text)
    assert str(error).startswith("castle.yaml:5: file: YAML syntax error: did not find expected ',' or ']'")
    assert "(column 9)" in str(error) and "started at line 4" in str(error)


def test_a_tab_where_yaml_wants_spaces_is_named() -> None:
    # the parser says only "found character that cannot start any token"
    error = refused("entities:\n\t- {name: Eldrinax, type: npc}\n")
    assert str(error).startswith(
        "castle.yaml:2: file: YAML syntax error: found character that cannot start any token (column 1): a tab, "
        "and YAML indents with spaces only"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("- Eldrinax\n- Ironhold\n", "castle.yaml:1: top level: expected a mapping with 'entities:'"),
        ("just some text\n", "castle.yaml:1: top level: expected a mapping with 'entities:'"),
        ("entites:\n  - {name: A, type: npc}\n", "castle.yaml:1: top level: unknown section 'entites'; did you mean"),
        (
            "entities:\n  name: A\n  type: npc\n",
            "castle.yaml:2: entities: expected a list of entities, found a mapping",
        ),
        ("campaign: The Sunken Crown\n", "castle.yaml:1: campaign: expected a mapping, found 'The Sunken Crown'"),
        (
            "entities: []\n---\nentities: []\n",
            "castle.yaml:2: file: YAML syntax error: expected a single document in the stream, but found another",
        ),
        ("", "castle.yaml: file: is empty"),
        ("# only a comment\n", "castle.yaml: file: is empty"),
    ],
    ids=["list", "scalar", "unknown-section", "entities-mapping", "header-text", "two-documents", "empty", "comment"],
)
def test_wrong_top_level_shape(text: str, expected: str) -> None:
    assert str(refused(text)).startswith(expected)


def test_a_campaign_name_too_long_to_create_is_refused_with_its_line() -> None:
    text = yaml_text(f"""
        entities:
          - {{name: A, type: npc}}
        campaign:
          name: {"N" * (MAX_NAME + 50)}
    """)
    assert str(refused(text)) == (
        f"castle.yaml:4: campaign: name has {MAX_NAME + 50} characters; a campaign name is at most {MAX_NAME}: "
        "choose a shorter one"
    )
    named = parse_campaign_file(text.replace("N" * (MAX_NAME + 50), "N" * MAX_NAME), "castle.yaml")
    assert named.campaign is not None and named.campaign.name == "N" * MAX_NAME


def test_null_sections_and_fields_mean_empty() -> None:
    text = "campaign:\nentities:\n  - name: A\n    type: npc\n    aliases:\n    description:\nrelationships:\n"
    campaign = parse_campaign_file(text, "x.yaml")
    assert campaign.campaign is None
    assert campaign.entities[0].aliases == [] and campaign.entities[0].description == ""


# ------------------------------------------------------------------------------------------------ hostile files


def test_oversized_input_is_refused_before_parsing() -> None:
    # 50 MB of text that is not even YAML: only a size check that runs first can give this message.
    huge = b"\x00{[" * (50 * 1024 * 1024 // 3)
    error = refused(huge)
    assert str(error) == f"castle.yaml: file: is {len(huge):,} bytes; the limit is 5,242,880 bytes"
    assert str(refused(huge.decode("latin-1"))).startswith("castle.yaml: file: is ")


def test_limit_counts_utf8_bytes_not_characters() -> None:
    text = "entities: []\n# " + "é" * 600 + "\n"  # 616 characters, 1,216 bytes
    assert parse_campaign_file(text, "x.yaml", max_bytes=1216).entities == []
    assert "is 1,216 bytes; the limit is 1,000 bytes" in str(refused(text, max_bytes=1000))


def test_oversized_file_on_disk_is_refused_without_reading_it(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)  # sparse: costs no disk and no memory
    with pytest.raises(CampaignFileError, match=r"huge\.yaml: file: is 52,428,800 bytes; the limit is 5,242,880"):
        read_campaign_file(path)


def test_a_file_of_more_entities_than_a_campaign_needs_is_refused_before_checking_them() -> None:
    """100,000 entities fit in 5 MB and took two minutes to load, while play waited for the campaign."""

    def listing(count: int) -> str:
        return "campaign: {name: Huge}\nentities:\n" + "".join(f"  - {{name: E{i}, type: npc}}\n" for i in range(count))

    assert MAX_ENTITIES == 20_000
    assert len(parse_campaign_file(listing(MAX_ENTITIES), "x.yaml").entities) == MAX_ENTITIES
    error = refused(listing(MAX_ENTITIES + 1) + "  - {name: E0, type: nonsense}\n")  # refused for its size alone
    assert str(error) == (
        "castle.yaml:3: entities: lists 20,002; the limit is 20,000 entities in one file, as play waits while one "
        "loads: split it into several files and load them one after another"
    )


def billion_laughs(levels: int = 9) -> str:
    lines = ['lol: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels + 1):
        refs = ", ".join([f"*l{level - 1}"] * 10)
        lines.append(f"l{level}: &l{level} [{refs}]")
    return "\n".join(lines) + "\n"


def test_billion_laughs_is_refused_without_expanding() -> None:
    # 10^9 values once expanded; the check counts the shared nodes instead of building them.
    error = refused(billion_laughs())
    assert "expands to more than 1,000,000 YAML values once aliases (*name) are expanded" in str(error)
    # The innermost level past the limit (10^6 strings plus the lists holding them) is line 6, "l5".
    assert error.line == 6


def test_bomb_hidden_in_an_entity_is_refused() -> None:
    text = yaml_text(
        """
        entities:
          - name: Eldrinax
            type: npc
            attributes: &a {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8}
            aliases: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
            description: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
        """
    )
    error = refused(text, max_nodes=500)
    assert "expands to more than 500 YAML values" in str(error)
    assert error.line == 6  # description: 10 × 10 × 8 pairs, the first node over the cap


def test_self_referencing_alias_is_refused() -> None:
    error = refused("entities: &loop\n  - name: A\n    type: npc\n    aliases: *loop\n")
    assert str(error) == "castle.yaml:4: file: an alias refers to a list or mapping that contains it"


def test_deep_nesting_is_refused_before_composing() -> None:
    # libyaml's composer recurses in C: this 200 KB file used to kill the whole process with a segfault.
    error = refused("entities: " + "[" * 100_000 + "]" * 100_000 + "\n")
    assert str(error) == f"castle.yaml:1: file: nests lists/mappings more than {MAX_DEPTH} levels deep"


def test_aliases_cannot_build_deep_trees_out_of_shallow_text() -> None:
    lines = ["a0: &a0 [x]"] + [f"a{i}: &a{i} [[[[[*a{i - 1}]]]]]" for i in range(1, 12)]
    error = refused("\n".join(lines) + "\n")
    assert f"aliases nest lists/mappings more than {MAX_DEPTH} levels deep" in str(error)


def test_merge_keys_work_and_errors_point_at_the_merging_entity() -> None:
    text = yaml_text(
        """
        entities:
          - &npc {name: Vaskerrin Holt, type: npc, attributes: {faction: Pale Hand}}
          - <<: *npc
            name: Ilse Varro
          - <<: *npc
            name: Corvin Hale
            type: plyer
        """
    )
    error = refused(text)
    assert str(error).startswith("castle.yaml:7: entity #3 'Corvin Hale': type 'plyer' is not one of")
    assert "did you mean 'player'?" in str(error)
    campaign = parse_campaign_file(text.replace("plyer", "player"), "castle.yaml")
    ilse = campaign.find_entity("Ilse Varro")
    assert ilse is not None and ilse.type == EntityType.npc and ilse.attributes == {"faction": "Pale Hand"}


# ------------------------------------------------------------------------------------------------ encodings


def test_non_utf8_bytes_are_refused_with_their_line() -> None:
    data = "entities:\n  - name: Eldrinax\n    description: café\n".encode("latin-1")
    assert str(refused(data)) == ("castle.yaml:3: file: is not valid UTF-8 (byte 0xe9 at column 21); save it as UTF-8")


def test_utf16_is_named() -> None:
    data = "entities: []\n".encode("utf-16")
    assert "is UTF-16" in str(refused(data))


def test_utf8_bom_is_accepted() -> None:
    data = "\ufeffentities:\n  - {name: Eldrinax, type: npc}\n".encode()
    assert parse_campaign_file(data, "bom.yaml").entities[0].name == "Eldrinax"


def test_lone_surrogate_in_text_is_refused() -> None:
    assert str(refused("entities:\n  - {name: Eld\ud800, type: npc}\n")).startswith(
        "castle.yaml:2: file: contains an unencodable character U+D800"
    )


def test_raw_control_character_in_file_is_refused_with_its_line() -> None:
    assert str(refused("entities:\n  - name: Eld\x07rinax\n    type: npc\n")) == (
        "castle.yaml:2: file: contains the control character U+0007, which YAML does not allow"
    )


@pytest.mark.parametrize(
    ("escaped", "code"),
    [("\\u200b", "200B"), ("\\x07", "0007"), ("\\u202e", "202E"), ("\\u00ad", "00AD")],
    ids=["zero-width-space", "bell", "right-to-left-override", "soft-hyphen"],
)
def test_invisible_characters_in_names_are_refused(escaped: str, code: str) -> None:
    text = f'entities:\n  - name: Ironhold\n    type: place\n    aliases: ["Iron{escaped}hold"]\n'
    error = refused(text)
    assert error.line == 4
    assert f"contains U+{code} " in str(error) and "at position 5, an invisible control character; remove it" in str(
        error
    )


def test_renamed_from_names_no_other_entry_and_is_renamed_once() -> None:
    kept = (
        "entities:\n  - {name: Eldrinax, type: npc}\n"
        "  - {name: Eldrinax the Bronze, type: npc, renamed_from: eldrinax}\n"
    )
    assert [str(p) for p in refused(kept).problems] == [
        "castle.yaml:3: entity #2 'Eldrinax the Bronze': renamed_from 'eldrinax' is entity #1 'Eldrinax' of this "
        "file (line 2)"
    ]
    twice = "entities:\n  - {name: A, type: npc, renamed_from: Old}\n  - {name: B, type: npc, renamed_from: old}\n"
    assert [str(p) for p in refused(twice).problems] == [
        "castle.yaml:3: entity #2 'B': renamed_from 'old' is renamed by entity #1 already (line 2)"
    ]
    own = parse_campaign_file("entities:\n  - {name: Vell, type: npc, renamed_from: vell}\n", "c.yaml")
    assert own.entities[0].renamed_from == "vell"  # its own name: harmless


def test_an_emoji_joined_with_a_zero_width_joiner_may_be_named() -> None:
    wizard = "\U0001f9d9\u200d\u2642\ufe0f Merlin"  # 🧙‍♂️: the joiner is part of the picture
    assert [
        e.name for e in parse_campaign_file(f"entities:\n  - {{name: '{wizard}', type: npc}}\n", "w.yaml").entities
    ] == [wizard]
    for hidden in (
        "Mer\u200dlin",
        "\u200d\u2642 Merlin",
        "\U0001f9d9\u200dMerlin",
        "Mira\ufe0f\u200d\U0001f9d9",
    ):  # between letters or at an edge
        error = refused(f"entities:\n  - {{name: '{hidden}', type: npc}}\n")
        assert "contains U+200D ZERO WIDTH JOINER" in str(error), hidden


def test_names_are_nfc_normalised_so_two_spellings_of_one_name_collide() -> None:
    composed = unicodedata.normalize("NFC", "Café Ærwyn")
    decomposed = unicodedata.normalize("NFD", composed)
    assert composed != decomposed
    text = f"entities:\n  - {{name: {composed}, type: place}}\n  - {{name: {decomposed}, type: place}}\n"
    error = refused(text)
    assert error.line == 3 and "is already the name of entity #1" in str(error)

    campaign = parse_campaign_file(f"entities:\n  - {{name: {decomposed}  , type: place}}\n", "x.yaml")
    assert campaign.entities[0].name == composed


# ------------------------------------------------------------------------------------------------ the models


def test_entity_spec_becomes_the_stores_input() -> None:
    spec = EntitySpec(name="  Vaskerrin   Holt ", type="NPC", aliases=["the Magister", "Vaskerrin holt"], secret=True)
    entity = spec.to_entity_in()
    assert entity.name == "Vaskerrin Holt" and entity.type == EntityType.npc
    assert entity.aliases == ["the Magister"]  # its own name is not an alias
    assert entity.visibility == Visibility.secret
    assert entity.provenance.source == Source.campaign_file and entity.provenance.dm_confirmed


def test_campaign_file_built_in_code_runs_the_same_cross_checks() -> None:
    with pytest.raises(ValidationError, match=r"relationship #1: target 'Nowhere' is not the name or alias"):
        CampaignFile(
            entities=[EntitySpec(name="Mira", type=EntityType.npc)],
            relationships=[RelationshipSpec(source="Mira", type="lives in", target="Nowhere")],
        )


# ------------------------------------------------------------------------------------------------ the CRD3 build


def test_build_merges_case_duplicates_and_drops_noisy_or_shared_aliases() -> None:
    records = [
        {"canonical": "Grog Strongjaw", "surfaces": {"Grog Strongjaw": 9, "Strongjaw": 2, "him": 1, "Grog's": 1},
         "n_episodes": 5, "mentions": 13, "oov_tokens": []},
        {"canonical": "Grog", "surfaces": {"Grog": 4}, "n_episodes": 2, "mentions": 4, "oov_tokens": []},
        {"canonical": "K'Varn", "surfaces": {"K'Varn": 3, "Beholder King": 1}, "n_episodes": 2, "mentions": 4,
         "oov_tokens": []},
        {"canonical": "K'varn", "surfaces": {"K'varn": 2}, "n_episodes": 3, "mentions": 2, "oov_tokens": []},
        {"canonical": "Sylas Briarwood", "surfaces": {"Briarwood": 2, "Lord": 5, "husband": 1}, "n_episodes": 1,
         "mentions": 8, "oov_tokens": []},
        {"canonical": "Delilah Briarwood", "surfaces": {"Briarwood": 1, "Chapter 1\n Episodes": 1},
         "n_episodes": 1, "mentions": 2, "oov_tokens": []},
    ]  # fmt: skip
    campaign = build(records).campaign

    names = [e.name for e in campaign.entities]
    assert names == ["Grog Strongjaw", "Sylas Briarwood", "K'Varn", "Grog", "Delilah Briarwood"]
    kvarn = campaign.find_entity("k'varn")
    assert kvarn is not None and kvarn.attributes == {"crd3_mentions": 6, "crd3_episodes": 3}
    assert campaign.find_entity("Grog Strongjaw").aliases == ["Strongjaw"]  # type: ignore[union-attr]
    # "Briarwood" belongs to two entities, so to neither; "Lord" and "husband" are not names.
    assert campaign.find_entity("Sylas Briarwood").aliases == []  # type: ignore[union-attr]
    assert campaign.find_entity("Beholder King") is kvarn
    assert parse_campaign_file(dump_campaign_file(campaign), "cr.yaml") == campaign


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("Boots of Haste", EntityType.item),
        ("Vorugal (episode)", EntityType.event),
        ("Vorugal (character)", EntityType.npc),
        ("Lady Kima of Vord", EntityType.npc),
        ("Dr. Dranzel's Spectacular Traveling Troupe", EntityType.concept),
        ("Whitestone Castle", EntityType.place),
        ("Chroma Conclave", EntityType.faction),
        ("Umber hulk", EntityType.concept),
        ("Pelor", EntityType.concept),  # a god: the override table says so, a name alone does not
    ],
)
def test_type_guesses_are_conservative(name: str, kind: EntityType) -> None:
    """The fallback for an entry the override table leaves out: a wrong type is worse than `concept`."""
    assert guess_type(name) == kind


@pytest.mark.parametrize(
    ("surface", "keep"),
    [("Minxie", True), ("Lady Ripley", True), ("Keep", False), ("my fellows", False), ("Lord Briarwood's", False),
     ("City: Emon", False), ("A nearby friend", False), ("Kern the Hammer", True), ("Thordak (episode)", False)],
)  # fmt: skip
def test_alias_filter(surface: str, keep: bool) -> None:
    assert looks_like_alias(surface) is keep


def test_the_changes_a_load_made_are_said_in_at_most_20_short_lines() -> None:
    """A reload of a big prep file over months of play can replace hundreds of things: the DM's reply (Discord
    holds 2,000 characters) lists the first 20, each in a line, and counts the rest."""
    changes = [LoadChange(entity=f"NPC {i}", change="alias removed: the old man") for i in range(24)]
    changes.insert(1, LoadChange(entity="NPC 0", change=f'description replaced (was "{"long " * 40}")'))
    said = LoadReport(changes=changes).said().splitlines()
    assert said[0] == "Changes to what the campaign had:" and said[-1] == "- and 5 more"
    assert said[1:3] == [
        "- NPC 0: alias removed: the old man",
        '- NPC 0: description replaced (was "' + " ".join(["long"] * 8) + "…",  # cut between words, in 80
    ]
    assert len(said) == 22 and max(map(len, said)) == 76
    assert LoadReport().said() == ""


def test_a_system_of_two_lines_or_with_a_tab_is_refused_at_its_line() -> None:
    """A campaign's system is one line where it is stored: a file whose system held a tab or a line break (a
    literal block) was read, then `campaign load` failed naming no line of it; a folded block is one line."""
    for system, code in (('"D&D 5e\\t(homebrew)"', "0009"), ("|\n    D&D 5e\n    homebrew", "000A")):
        error = refused(f"campaign:\n  name: Crown\n  system: {system}\nentities: []\n")
        assert error.line == 3 and f"system contains U+{code} at position 7, an invisible control" in str(error)
    parsed = parse_campaign_file("campaign:\n  name: Crown\n  system: >\n    D&D 5e\n", "castle.yaml")
    assert parsed.campaign is not None and parsed.campaign.system == "D&D 5e"
