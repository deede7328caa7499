"""An import batch's reference (b3) as `review show`, `review accept` and `review reject` read it."""

from __future__ import annotations

import pytest

from campaigns.batches import batch_id
from memory.errors import InvalidInputError


def test_a_batch_is_b_and_its_number_or_the_number() -> None:
    assert batch_id("b3") == batch_id(" B3 ") == batch_id("3") == 3


def test_a_review_item_given_for_a_batch_is_called_what_it_is() -> None:
    """`review show e900` said "'e900' is not an import batch: they are b1, b2 …": the DM had copied the id of
    an item from `review list`, and read that items were batches."""
    with pytest.raises(InvalidInputError, match=r"'e900' is a review item, not an import batch \(b1, b2 …\)"):
        batch_id("e900")
    with pytest.raises(InvalidInputError, match="'F7' is a review item"):
        batch_id("F7")
    with pytest.raises(InvalidInputError, match="'x1' is not an import batch: they are b1, b2"):
        batch_id("x1")
