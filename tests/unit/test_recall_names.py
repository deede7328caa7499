"""Which of a campaign's names a question may name is told without normalising every name for every question."""

from __future__ import annotations

import pytest

from memory import recall
from memory.correction.text import normalize


def test_the_names_are_normalised_once_not_once_a_question(monkeypatch: pytest.MonkeyPatch) -> None:
    # 1,500 names and aliases normalised for each question took 10 ms of every recall at 60 sessions
    people = [recall._Called(n, f"Quorvash Entity{n}", [f"the Quorv-{n}"]) for n in range(200)]
    assert [e.id for e in recall._worded(people, "who is Quorvash Entity7?")] == [7]
    calls: list[str] = []

    def counted(text: str) -> str:
        calls.append(text)
        return normalize(text)

    monkeypatch.setattr(recall, "normalize", counted)
    assert [e.id for e in recall._worded(people, "where is the Quorv-12?")] == [12]
    assert len(calls) < 10  # the question's words, not the 400 names
