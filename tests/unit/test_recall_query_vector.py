"""A question asked again is not embedded again: recall keeps the vectors of each embedder's last questions."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from memory import recall


class CountingEmbedder:
    model_name = "counting"
    dim = 2

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.asked += texts
        return [[float(len(t)), float(len(self.asked))] for t in texts]


async def test_a_repeated_question_is_embedded_once() -> None:
    embedder = CountingEmbedder()
    first = await recall.query_vector(embedder, "who killed Delilah")
    again = await recall.query_vector(embedder, "who killed Delilah")
    other = await recall.query_vector(embedder, "what festival is coming up")
    assert again == first
    assert other != first
    assert embedder.asked == ["who killed Delilah", "what festival is coming up"]


async def test_each_embedder_keeps_its_own_vectors() -> None:
    one, two = CountingEmbedder(), CountingEmbedder()
    await recall.query_vector(one, "Keyleth")
    await recall.query_vector(two, "Keyleth")
    assert one.asked == two.asked == ["Keyleth"]


async def test_the_least_recently_asked_is_forgotten_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recall, "QUERY_VECTORS_KEPT", 2)
    embedder = CountingEmbedder()
    for text in ("a", "b", "a", "c"):  # "a" asked again, so "b" is the oldest when "c" comes
        await recall.query_vector(embedder, text)
    await recall.query_vector(embedder, "a")
    await recall.query_vector(embedder, "b")
    assert embedder.asked == ["a", "b", "c", "b"]
