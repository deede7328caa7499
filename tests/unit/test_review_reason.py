"""A sure fact that waits because its lines do not say it: the review card says why."""

from __future__ import annotations

from datetime import UTC, datetime

from cogs.review import item_embed
from memory.models import (
    Entity,
    Mention,
    Provenance,
    Relationship,
    ReviewItem,
    ReviewKind,
    ReviewStatus,
    Source,
    Visibility,
)
from memory.review import quoted_above


def _item(reason: str | None) -> ReviewItem:
    now = datetime.now(UTC)
    fact = Relationship(
        id=4, campaign_id=1, source_id=1, source_name="Taliesin", type="killed_by", target_id=2,
        target_name="Sarenrae", value=None, attributes={}, visibility=Visibility.public, status=ReviewStatus.pending,
        provenance=Provenance(source=Source.stated, confidence=0.99, review_reason=reason), valid_from=now,
        valid_to=None, superseded_by=None, created_at=now,
    )  # fmt: skip
    return ReviewItem(kind=ReviewKind.fact, id=4, created_at=now, fact=fact)


def test_the_card_says_why_a_sure_fact_waits() -> None:
    embed = item_embed(_item("the cited line does not name Taliesin or Sarenrae"))
    fields = {f.name: f.value for f in embed.fields}
    assert fields["Confidence"] == "0.99"
    assert fields["Waits because"] == "the cited line does not name Taliesin or Sarenrae"
    assert "Waits because" not in {f.name for f in item_embed(_item(None)).fields}


def test_the_decided_card_names_the_items_decided_with_it() -> None:
    """Accepting a fact accepts its proposed event: the card said only the fact, and the event's own card then
    answered "already accepted" to a click."""
    item = _item(None)
    assert item.fact is not None
    item.fact.status = ReviewStatus.accepted
    item.decided_with = ["e2: new event 'Death of Sarenrae'"]
    fields = {f.name: f.value for f in item_embed(item).fields}
    assert fields["Accepted with it"] == "new event 'Death of Sarenrae'"  # the id is the queue's, not the DM's
    assert "Pending with it" not in {f.name for f in item_embed(_item(None)).fields}


def test_the_card_keeps_its_id_to_the_footer() -> None:
    """The title said "New fact · f4": an id the DM never types (the buttons carry it)."""
    pending = item_embed(_item(None))
    assert (pending.title, pending.footer.text) == ("New fact", "f4")
    item = _item(None)
    assert item.fact is not None
    item.fact.status = ReviewStatus.rejected
    assert item_embed(item, decided_by="Matt").footer.text == "rejected by Matt · f4"


def test_a_line_is_quoted_once_for_the_items_read_from_it() -> None:
    """An entity and the fact about it read from one paragraph: the second refers to the first's quote."""
    line = Mention(session_id=1, title="Night 8", speaker="Matt", start_s=0.0, text="…to Emon…", ref=None, entry_id=7)
    other = line.model_copy(update={"entry_id": 9})  # the same words again ("Roll initiative."): another line
    entity, fact, elsewhere = (_item(None) for _ in range(3))
    entity.fact, entity.entity = None, Entity.model_construct(name="Arrival at Emon")
    entity.kind, entity.said = ReviewKind.entity, line
    fact.said = line.model_copy(update={"told": "to Emon"})  # the clause shown is the card's own choice
    elsewhere.said = other
    assert quoted_above([entity, fact, elsewhere, _item(None)]) == [None, entity, None, None]
