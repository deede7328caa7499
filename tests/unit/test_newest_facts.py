"""Which of an entity's facts a page lists first, and how many it leaves out (a character of a two-year campaign
holds thousands)."""

from __future__ import annotations

from datetime import UTC, datetime

from memory.models import Provenance, Relationship, ReviewStatus, Visibility, newest_facts


def _fact(id: int, began: int, ended: int | None = None) -> Relationship:
    """Fact ``id``, holding from day ``began`` of March 2025 until day ``ended`` (None: it holds)."""
    day = lambda d: datetime(2025, 3, d, tzinfo=UTC)  # noqa: E731
    return Relationship(
        id=id,
        campaign_id=1,
        source_id=1,
        source_name="Grog",
        type="status",
        target_id=None,
        target_name=None,
        value=f"v{id}",
        attributes={},
        visibility=Visibility.public,
        status=ReviewStatus.accepted,
        provenance=Provenance(),
        valid_from=day(began),
        valid_to=None if ended is None else day(ended),
        superseded_by=None,
        created_at=day(began),
    )


def test_those_that_hold_come_first_then_the_newest() -> None:
    facts = [_fact(1, 1, 20), _fact(2, 2), _fact(3, 5, 9), _fact(4, 7), _fact(5, 7), _fact(6, 3, 25)]
    shown, more = newest_facts(facts, None)
    # holding: the last to begin first (a tie: the later id); ended: the last to end first
    assert [r.id for r in shown] == [5, 4, 2, 6, 1, 3] and more == 0


def test_the_limit_keeps_the_first_and_counts_the_rest() -> None:
    facts = [_fact(i, 1 + i % 28, None if i % 3 else 28) for i in range(1, 4001)]
    shown, more = newest_facts(facts, 50)
    assert len(shown) == 50 and more == 3950
    assert all(r.valid_to is None for r in shown)  # 2,667 hold: none that ended makes the page
    assert shown == newest_facts(facts, None)[0][:50]
    assert newest_facts(facts[:3], 50) == (newest_facts(facts[:3], None)[0], 0)
