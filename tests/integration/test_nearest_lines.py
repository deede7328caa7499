"""The lines nearest a question's meaning under a filter (one session, some speakers, a player's other-character
sessions left out): the same lines whether the kept lines are few and read whole or many and found by the HNSW
walk."""

from __future__ import annotations

import math

import pytest

from memory import semantic
from memory.models import EntryIn
from memory.semantic import LineVectorIn
from memory.store import CampaignMemory


def vec(angle: float, dim: int = 384) -> list[float]:
    """A unit vector at ``angle`` radians from dimension 0 towards dimension 1: nearer dimension 0 the smaller."""
    return [math.cos(angle), math.sin(angle), *([0.0] * (dim - 2))]


@pytest.mark.parametrize("exact_scan_lines", [10_000, 0], ids=["read whole", "hnsw walk"])
async def test_filters_keep_the_nearest_of_the_kept_lines(
    campaign: CampaignMemory, monkeypatch: pytest.MonkeyPatch, exact_scan_lines: int
) -> None:
    monkeypatch.setattr(semantic, "EXACT_SCAN_LINES", exact_scan_lines)
    speakers = ["DM", "Ana", "Ben"]
    written: dict[int, list[int]] = {}
    for title in ("One", "Two"):
        session = await campaign.log.start_session(title)
        lines = await campaign.log.write_many(
            session.id,
            [EntryIn(speaker=speakers[n % 3], text=f"line {n} of {title}", start_s=float(n)) for n in range(30)],
        )
        written[session.id] = [e.id for e in lines]
    one, two = written
    angle = {i: 0.01 * n for n, i in enumerate([*written[one], *written[two]])}  # the first line of One is nearest
    await campaign.semantic.upsert_lines(
        [LineVectorIn(i, s, "x", vec(angle[i])) for s, ids in written.items() for i in ids]
    )

    def nearest_ids(hits: list[semantic.LineHit]) -> list[int]:
        return [h.entry_id for h in hits]

    everyone = await campaign.semantic.nearest_lines(vec(0.0), k=3)
    assert nearest_ids(everyone) == written[one][:3]
    of_two = await campaign.semantic.nearest_lines(vec(0.0), k=3, session_id=two)
    assert nearest_ids(of_two) == written[two][:3]
    of_ana = await campaign.semantic.nearest_lines(vec(0.0), k=3, speakers=["ANA"])
    assert nearest_ids(of_ana) == written[one][1:9:3]
    # Ana's lines of session One left out: her nearest are in Two
    elsewhere = await campaign.semantic.nearest_lines(vec(0.0), k=2, speakers=["Ana"], excluded={("ana", one)})
    assert nearest_ids(elsewhere) == written[two][1:6:3]
    both = await campaign.semantic.nearest_lines(vec(0.0), k=2, session_id=two, speakers=["ben"])
    assert nearest_ids(both) == written[two][2:6:3]
    assert await campaign.semantic.nearest_lines(vec(0.0), k=2, speakers=["Nobody"]) == []
