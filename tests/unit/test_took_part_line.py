"""The one line of an entity's card (and of a recall naming it) that lists the sessions it took part in."""

from __future__ import annotations

from memory.models import RECAP_PREFIX, took_part_line


def test_the_sessions_are_named_by_their_titles_once_not_by_their_recap_events() -> None:
    events = [f"{RECAP_PREFIX}Night 5", f"{RECAP_PREFIX}Night 4"]
    assert took_part_line(events, 4) == "took part in 4 sessions: Night 5, Night 4 and 2 earlier"
    assert took_part_line([f"{RECAP_PREFIX}C1E035"], 1) == "took part in 1 session: C1E035"


def test_a_title_is_masked_and_clipped_as_the_reader_sees_it() -> None:
    masked = took_part_line([f"{RECAP_PREFIX}Queen Mab unmasked"], 1, lambda t: t.replace("Queen Mab", "[secret]"))
    assert masked == "took part in 1 session: [secret] unmasked"


def test_an_entity_of_no_session_has_no_line() -> None:
    assert took_part_line([], 0) == ""
