"""Relations as a DM reads them: "Vex leads Vox Machina", not "Vex —leader_of→ Vox Machina"."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.models import INVERSE, SYNONYM, Relationship, ReviewStatus, fact_words, relation_words


@pytest.mark.parametrize(
    ("type_", "said"),
    [
        ("leader_of", "leads"),
        ("ruled_by", "is ruled by"),
        ("located_in", "is located in"),
        ("owned_by", "is owned by"),
        ("member_of", "is a member of"),
        ("enemy_of", "is an enemy of"),
        ("spouse_of", "is married to"),
        ("took_part_in", "took part in"),
        ("secretly_controls", "secretly controls"),  # unknown: its own words, never lost
        ("has", "has"),
    ],
)
def test_a_relation_reads_as_words(type_: str, said: str) -> None:
    assert relation_words(type_) == said


def test_both_ends_of_each_pair_read_as_words() -> None:
    """A fact may be stated from either end (leader_of, ruled_by): neither reads with an underscore."""
    for pair in [*INVERSE.items(), *SYNONYM.items()]:
        assert all("_" not in relation_words(t) for t in pair), pair


def test_a_fact_reads_from_its_source() -> None:
    assert fact_words("Vex", "leader_of", "Vox Machina") == "Vex leads Vox Machina"
    assert fact_words("Vox Machina", "ruled_by", "Vex") == "Vox Machina is ruled by Vex"
    assert fact_words("Delilah Briarwood", "secretly_controls", "Whitestone") == (
        "Delilah Briarwood secretly controls Whitestone"
    )
    # a state
    assert fact_words("Grog", "status", None, "dead") == "Grog is dead"
    assert fact_words("Brom", "occupation", None, "blacksmith") == "Brom — occupation: blacksmith"


def test_the_stored_fact_keeps_its_type_for_machines() -> None:
    now = datetime.now(UTC)
    fact = Relationship(
        id=1, campaign_id=1, source_id=1, source_name="Vex", type="leader_of", target_id=2, target_name="Vox Machina",
        value=None, attributes={}, visibility="public", status=ReviewStatus.accepted, provenance={}, valid_from=now,
        valid_to=None, superseded_by=None, created_at=now,
    )  # fmt: skip
    assert fact.in_words() == "Vex leads Vox Machina"
    assert fact.describe() == "Vex —leader_of→ Vox Machina"
    assert fact.model_dump()["type"] == "leader_of"
