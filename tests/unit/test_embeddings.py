"""The offline MiniLM embedder on the real ONNX model, and the embedder factory."""

from __future__ import annotations

import asyncio
import itertools

import numpy as np
import pytest

from memory.providers.embeddings import MiniLMEmbedder, OpenAIEmbedder, make_embedder

slow = pytest.mark.slow

DRAGON = "The dragon attacked the village"
WYRM = "A wyrm assaulted the town"
PASTA = "I like pasta recipes"


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder(batch_size=4)


@slow
async def test_vectors_are_384_d_unit_length(minilm: MiniLMEmbedder) -> None:
    vectors = await minilm.embed([DRAGON, WYRM, "", "Vex'ahlia draws her bow."])
    assert (minilm.model_name, minilm.dim) == ("all-MiniLM-L6-v2", 384)
    assert [len(v) for v in vectors] == [384] * 4
    assert all(isinstance(x, float) for x in vectors[0])
    np.testing.assert_allclose(np.linalg.norm(np.array(vectors), axis=1), 1.0, atol=1e-5)


@slow
async def test_paraphrase_is_closer_than_unrelated_text(minilm: MiniLMEmbedder) -> None:
    dragon, wyrm, pasta = np.array(await minilm.embed([DRAGON, WYRM, PASTA]))
    assert dragon @ wyrm > 0.35
    assert dragon @ wyrm > dragon @ pasta + 0.25


@slow
async def test_batching_keeps_input_order(minilm: MiniLMEmbedder) -> None:
    # Lengths differ so the length sort reorders them internally; batch_size=4 splits them over batches.
    texts = [
        "The party rests at the inn in Kraghammer after a long day of travel through the mountains.",
        "Roll for initiative.",
        DRAGON,
        "Grog",
        PASTA,
        "Scanlan plays a song to inspire the bard college students gathered around the fire tonight.",
        WYRM,
    ]
    together = np.array(await minilm.embed(texts))
    alone = np.array([(await minilm.embed([t]))[0] for t in texts])
    # int8 activations are quantised per batch, so a text's vector moves slightly with its batch mates.
    np.testing.assert_allclose(np.sum(together * alone, axis=1), 1.0, atol=0.01)
    assert list(np.argmax(together @ alone.T, axis=1)) == list(range(len(texts)))


@slow
async def test_same_text_same_vector_within_a_call(minilm: MiniLMEmbedder) -> None:
    first, _, again = await minilm.embed([DRAGON, PASTA, DRAGON])
    np.testing.assert_allclose(first, again, atol=1e-6)


@slow
async def test_long_text_is_truncated_to_256_tokens(minilm: MiniLMEmbedder) -> None:
    tail = " and then the dragon burns Whitestone to the ground"
    text = " ".join(["the knight rides north"] * 70)  # 280 tokens: only a 256 cut makes the tail invisible
    huge = " ".join(["the knight rides north"] * 300)  # past BERT's 512 positions: must not fail
    head, with_tail, _ = np.array(await minilm.embed([text, text + tail, huge]))
    np.testing.assert_allclose(head, with_tail, atol=1e-6)


async def test_empty_input_gives_empty_output_without_loading_the_model() -> None:
    embedder = MiniLMEmbedder()
    assert await embedder.embed([]) == []
    assert embedder._session is None


@slow
async def test_event_loop_keeps_running_while_embedding(minilm: MiniLMEmbedder) -> None:
    await minilm.embed(["warm up"])
    loop = asyncio.get_running_loop()
    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            await asyncio.sleep(0.005)
            ticks.append(loop.time())

    task = asyncio.create_task(ticker())
    started = loop.time()
    await minilm.embed([" ".join([PASTA] * 30)] * 64)
    ended = loop.time()
    task.cancel()
    # A blocked loop ticks at most once, after one gap as long as the embedding; a free one keeps ticking. The
    # longest gap, not the tick count, is the measure: on a loaded machine a free loop ticks less often.
    times = [started, *ticks, ended]
    longest_gap = max(b - a for a, b in itertools.pairwise(times))
    assert len(ticks) >= 3
    assert longest_gap < (ended - started) / 2


def test_factory_builds_the_offline_default() -> None:
    embedder = make_embedder("minilm")
    assert isinstance(embedder, MiniLMEmbedder)
    assert make_embedder("MiniLM", "sentence-transformers/all-MiniLM-L6-v2", dim=384).dim == 384


def test_factory_builds_openai_compatible_embedders() -> None:
    nomic = make_embedder("openai", "nomic-embed-text", base_url="http://127.0.0.1:11434/v1")
    assert isinstance(nomic, OpenAIEmbedder)
    assert (nomic.model_name, nomic.dim) == ("nomic-embed-text", 768)
    custom = make_embedder("openai", "my-embedder", base_url="http://127.0.0.1:1/v1", api_key="k", dim=512)
    assert (custom.model_name, custom.dim) == ("my-embedder", 512)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"provider": "word2vec"}, "unknown embedding provider 'word2vec'"),
        ({"provider": "minilm", "model": "bge-small"}, "only runs all-MiniLM-L6-v2"),
        ({"provider": "minilm", "dim": 768}, "384 dimensions, not 768"),
        ({"provider": "openai", "model": "mystery", "base_url": "http://x/v1"}, "'mystery' is unknown"),
    ],
)
def test_factory_rejects_unworkable_configurations(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_embedder(**kwargs)  # type: ignore[arg-type]


def test_factory_needs_a_key_for_openai_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        make_embedder("openai")
