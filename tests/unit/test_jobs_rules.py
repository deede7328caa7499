"""The pure parts the jobs and the session delete build on: a deleted session's sentence, which corrections a
taken-away heard-as phrase undoes, and what counts as an outage. No database."""

from __future__ import annotations

from datetime import UTC, datetime

import asyncpg

from memory.correction import EntityName, PhoneticIndex, PhoneticMatcher
from memory.correction.edits import apply_corrections
from memory.errors import Unavailable
from memory.jobs.heard_as import restored_corrections
from memory.models import Entry
from memory.outage import is_outage, outage_said, short_reason
from memory.replies import deleted_session_said
from memory.session_delete import DeletedSession


def deleted(**changes: object) -> DeletedSession:
    counts = {
        "title": "Night 1",
        "lines": 1,
        "chunks": 0,
        "pending_entities": 0,
        "pending_facts": 0,
        "recap": False,
        "recap_links": 0,
        "jobs": 0,
        "kept_entities": 0,
        "kept_facts": 0,
    }
    return DeletedSession(**{**counts, **changes})


def test_a_deleted_session_says_what_went_and_what_stayed() -> None:
    assert deleted_session_said(deleted()) == "Deleted session 'Night 1': 1 line, 0 passages."
    said = deleted_session_said(
        deleted(
            lines=60, chunks=7, pending_entities=1, pending_facts=2, recap=True, recap_links=3, jobs=1, kept_facts=1
        )
    )
    assert said == (
        "Deleted session 'Night 1': 60 lines, 7 passages, 1 entity and 2 facts waiting for review, its recap entity "
        "with 3 links to who took part, 1 waiting background job. Kept 0 entities and 1 fact heard in it that were "
        "accepted or rejected."
    )
    kept = deleted(recap_links=2, kept_recap="Session: Night 1", kept_recap_facts=2)
    assert deleted_session_said(kept) == (
        "Deleted session 'Night 1': 1 line, 0 passages, 2 links of its recap to who took part. Kept its recap "
        "entity 'Session: Night 1': 2 facts you accepted are about it (remove it as any entity if it should go "
        "too)."
    )


def line(text: str, matcher: PhoneticMatcher) -> Entry:
    corrections = matcher.correct(text).corrections
    return Entry(
        id=1,
        campaign_id=1,
        session_id=1,
        seq=1,
        speaker="Liam",
        speaker_id=None,
        raw_text=text,
        text=apply_corrections(text, corrections),
        start_s=0.0,
        end_s=None,
        duration_s=None,
        ref=None,
        corrections=corrections,
        created_at=datetime.now(UTC),
    )


def test_a_phrase_taken_away_undoes_its_corrections_only() -> None:
    before = PhoneticMatcher(PhoneticIndex.build([EntityName(id=3, name="Frumpkin", heard_as=["from skin"])]))
    entry = line("And from skin jumps on Frumpkin.", before)
    assert apply_corrections(entry.raw_text, entry.corrections) == "And Frumpkin jumps on Frumpkin."
    now = PhoneticMatcher(PhoneticIndex.build([EntityName(id=3, name="Frumpkin")]))

    restored = restored_corrections(entry, 3, {"fromskin"}, now, any_stage=False)
    assert apply_corrections(entry.raw_text, restored) == "And from skin jumps on Frumpkin."
    # another entity's phrase, or one still heard as the name, changes nothing
    assert restored_corrections(entry, 4, {"fromskin"}, now, any_stage=False) == entry.corrections
    assert restored_corrections(entry, 3, set(), now, any_stage=False) == entry.corrections


def test_an_outage_is_found_by_what_it_wraps() -> None:
    assert is_outage(ConnectionResetError("reset"))
    assert not is_outage(ValueError("bad data"))
    try:
        try:
            raise asyncpg.exceptions.DiskFullError("could not extend file")
        except asyncpg.PostgresError as exc:
            raise RuntimeError("the job failed") from exc
    except RuntimeError as wrapped:
        assert is_outage(wrapped)
        assert short_reason(wrapped) == "DiskFullError: could not extend file"
        assert outage_said(wrapped) == ("the database's disk is full", "free some space on it, then ")

    class LLMDown(Unavailable):
        pass

    assert is_outage(LLMDown("timed out"))
    assert outage_said(LLMDown("timed out")) == ("the database stopped or cannot be reached", "")
