"""The design's own campaign file: `location`, upper-case relationship types, symmetric alliances, did-you-mean."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from campaigns.files import CampaignFileError, dump_campaign_file, parse_campaign_file
from memory.models import (
    EntityType,
    Provenance,
    Relationship,
    ReviewStatus,
    Visibility,
    relationship_type,
    suggest_entity_type,
)

#: The example of the original design, word for word (issue 33).
DESIGN_FILE = """\
entities:
  - name: Eldrinax
    type: npc
    attributes: {personality: paranoid wizard, speaks in riddles, location: Tower of Whispers}
  - name: Ironhold
    type: location
    attributes: {description: dwarven mining city}
relationships:
  - {source: Eldrinax, target: Ironhold, type: LOCATED_AT}
"""


def refused(text: str) -> str:
    with pytest.raises(CampaignFileError) as caught:
        parse_campaign_file(text, "bad.yaml")
    return str(caught.value)


def test_the_design_file_loads_as_written() -> None:
    parsed = parse_campaign_file(DESIGN_FILE, "design.yaml")
    assert [(e.name, e.type) for e in parsed.entities] == [("Eldrinax", EntityType.npc), ("Ironhold", "location")]
    assert parsed.entities[0].attributes["personality"] == "paranoid wizard, speaks in riddles"
    assert [(r.source, r.type, r.target) for r in parsed.relationships] == [("Eldrinax", "located_at", "Ironhold")]


def test_the_design_file_exports_in_canonical_form_and_reads_back_the_same() -> None:
    parsed = parse_campaign_file(DESIGN_FILE, "design.yaml")
    written = dump_campaign_file(parsed)
    assert "type: location" in written and "located_at" in written and "LOCATED_AT" not in written
    assert parse_campaign_file(written, "again.yaml") == parsed


@pytest.mark.parametrize("spelling", ["place", "Place", "LOCATION", " location "])
def test_place_and_any_case_read_as_location(spelling: str) -> None:
    parsed = parse_campaign_file(f"entities:\n  - {{name: Ironhold, type: '{spelling}'}}\n", "old.yaml")
    assert parsed.entities[0].type is EntityType.location
    assert EntityType.place is EntityType.location and EntityType("place") is EntityType.location
    assert "place" not in [t.value for t in EntityType]  # one type, listed once


@pytest.mark.parametrize(
    ("written", "meant"),
    [("locaton", "location"), ("city", "location"), ("organisation", "faction"), ("plyer", "player"), ("pc", "player")],
)
def test_did_you_mean_by_spelling_and_synonym(written: str, meant: str) -> None:
    assert suggest_entity_type(written) == meant
    assert f"did you mean '{meant}'?" in refused(f"entities:\n  - {{name: X, type: {written}}}\n")


def test_location_is_never_taken_for_faction() -> None:
    assert suggest_entity_type("location") == "location"
    assert suggest_entity_type("locaton") != "faction"
    assert suggest_entity_type("dragon") is None


@pytest.mark.parametrize("spelling", ["LOCATED_AT", "located_at", "Located At", "located  at"])
def test_relationship_types_in_either_spelling(spelling: str) -> None:
    assert relationship_type(spelling) == "located_at"


def test_both_directions_of_an_alliance_are_one_fact_not_a_conflict() -> None:
    text = DESIGN_FILE + (
        "  - {source: Eldrinax, target: Ironhold, type: ALLIED_WITH}\n"
        "  - {source: Ironhold, target: Eldrinax, type: allied_with}\n"
    )
    assert len(parse_campaign_file(text, "both.yaml").relationships) == 3
    # a one-way type stated twice is still refused
    twice = DESIGN_FILE + "  - {source: Eldrinax, target: Ironhold, type: located_at}\n"
    assert "repeats relationship #1" in refused(twice)


def test_located_at_is_one_at_a_time() -> None:
    text = DESIGN_FILE.replace("relationships:", "  - {name: Saltmere, type: location}\nrelationships:")
    text += "  - {source: Eldrinax, target: Saltmere, type: located_at}\n"
    assert "one 'located_at' at a time" in refused(text)


def test_a_comma_in_an_unquoted_flow_value_is_part_of_it() -> None:
    text = "entities:\n  - {name: Mira, type: npc, attributes: {mood: grim, tired, quoted: 'a', b: 1}}\n"
    assert parse_campaign_file(text, "m.yaml").entities[0].attributes == {"mood": "grim, tired", "quoted": "a", "b": 1}
    # after a quoted value the words stay a key with no value, as YAML reads them
    quoted = "entities:\n  - {name: Mira, type: npc, attributes: {mood: 'grim', tired}}\n"
    assert parse_campaign_file(quoted, "q.yaml").entities[0].attributes == {"mood": "grim", "tired": None}


def _fact(source: tuple[int, str], kind: str, target: tuple[int, str]) -> Relationship:
    now = datetime.now(UTC)
    return Relationship(
        id=1,
        campaign_id=1,
        source_id=source[0],
        source_name=source[1],
        type=kind,
        target_id=target[0],
        target_name=target[1],
        value=None,
        attributes={},
        visibility=Visibility.public,
        status=ReviewStatus.accepted,
        provenance=Provenance(),
        valid_from=now,
        valid_to=None,
        superseded_by=None,
        created_at=now,
    )


def test_a_symmetric_fact_reads_from_either_end() -> None:
    allied = _fact((1, "Eldrinax"), "allied_with", (2, "Ironhold"))
    assert allied.seen_from(2).describe() == "Ironhold —allied_with→ Eldrinax"
    assert allied.seen_from(1).describe() == "Eldrinax —allied_with→ Ironhold"
    located = _fact((1, "Eldrinax"), "located_at", (2, "Ironhold"))
    assert located.seen_from(2).describe() == "Eldrinax —located_at→ Ironhold"  # one-way: as stated
