"""The order in which an import's card says which GM-note parts it ended."""

from __future__ import annotations

from campaigns.batches import _notes_order


def test_ended_gm_notes_are_said_by_entity_then_part() -> None:
    """Both endings (notes shorter now, notes deleted in the tool) say them alike: ``dm_notes`` first, then the
    parts by number, ``dm_notes_10`` after ``dm_notes_9``, not after ``dm_notes_1``'s neighbours in the alphabet; a
    labelled record's notes (``dm_notes_journal``) apart, after them."""
    rows = [
        {"name": "Vask", "type": "dm_notes_journal_2"},
        {"name": "Vask", "type": "dm_notes_10"},
        {"name": "Vask", "type": "dm_notes_journal"},
        {"name": "Vask", "type": "dm_notes_9"},
        {"name": "Ironhold", "type": "dm_notes_2"},
        {"name": "Vask", "type": "dm_notes"},
        {"name": "Ironhold", "type": "dm_notes"},
    ]
    assert [(r["name"], r["type"]) for r in sorted(rows, key=_notes_order)] == [
        ("Ironhold", "dm_notes"),
        ("Ironhold", "dm_notes_2"),
        ("Vask", "dm_notes"),
        ("Vask", "dm_notes_9"),
        ("Vask", "dm_notes_10"),
        ("Vask", "dm_notes_journal"),  # another record's notes, after the entity's own
        ("Vask", "dm_notes_journal_2"),
    ]
