"""OpenAIEmbedder against the local fake OpenAI server, through the real ``openai`` client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest
import pytest_asyncio

from memory import jobs
from memory.providers.embeddings import EmbeddingError, EmbeddingUnavailable, OpenAIEmbedder, make_embedder
from tests.fakes.openai_server import FakeHTTPError, FakeOpenAI

Factory = Callable[..., OpenAIEmbedder]


@pytest_asyncio.fixture
async def embedder_for() -> AsyncIterator[Factory]:
    """Builds embedders for the fake server and closes their connection pools after the test."""
    made: list[OpenAIEmbedder] = []

    def build(
        fake: FakeOpenAI, model: str = "nomic-embed-text", dim: int = 8, key: str | None = None
    ) -> OpenAIEmbedder:
        made.append(OpenAIEmbedder(fake.base_url, key or fake.api_key, model, dim))
        return made[-1]

    yield build
    for embedder in made:
        await embedder.aclose()


async def test_vectors_come_back_in_input_order(fake_openai: FakeOpenAI, embedder_for: Factory) -> None:
    texts = ["Grog swings", "Vex shoots", "Grog swings", "Pike heals"]
    vectors = await embedder_for(fake_openai).embed(texts)
    assert vectors == [FakeOpenAI.vector_for(t, 8) for t in texts]
    (request,) = fake_openai.embedding_requests
    assert request == {"model": "nomic-embed-text", "input": texts, "encoding_format": "float"}


async def test_large_inputs_are_split_into_requests_of_at_most_256(
    fake_openai: FakeOpenAI, embedder_for: Factory
) -> None:
    texts = [f"utterance {i}" for i in range(600)]
    vectors = await embedder_for(fake_openai).embed(texts)
    assert [len(r["input"]) for r in fake_openai.embedding_requests] == [256, 256, 88]
    assert vectors == [FakeOpenAI.vector_for(t, 8) for t in texts]


async def test_empty_list_sends_nothing(fake_openai: FakeOpenAI, embedder_for: Factory) -> None:
    assert await embedder_for(fake_openai).embed([]) == []
    assert fake_openai.embedding_requests == []


async def test_empty_string_is_sent_as_a_space(fake_openai: FakeOpenAI, embedder_for: Factory) -> None:
    vectors = await embedder_for(fake_openai).embed(["", "ok"])
    assert fake_openai.embedding_requests[0]["input"] == [" ", "ok"]
    assert len(vectors) == 2


async def test_v3_models_are_asked_for_the_configured_dimension(fake_openai: FakeOpenAI, embedder_for: Factory) -> None:
    vectors = await embedder_for(fake_openai, "text-embedding-3-small", dim=16).embed(["Kraghammer"])
    assert fake_openai.embedding_requests[0]["dimensions"] == 16
    assert vectors == [FakeOpenAI.vector_for("Kraghammer", 16)]


async def test_dimension_mismatch_is_an_error(fake_openai: FakeOpenAI, embedder_for: Factory) -> None:
    fake_openai.embedding_dim = 768
    with pytest.raises(EmbeddingError, match="returned 768-d vectors, configured for 1024"):
        await embedder_for(fake_openai, "mxbai-embed-large", dim=1024).embed(["Whitestone"])


async def test_http_error_becomes_embedding_error(fake_openai: FakeOpenAI, embedder_for: Factory) -> None:
    fake_openai.queue_embedding_error(FakeHTTPError(400, "model 'nope' not found"))
    with pytest.raises(EmbeddingError, match="HTTP 400: model 'nope' not found"):
        await embedder_for(fake_openai).embed(["a"])
    assert len(fake_openai.embedding_requests) == 1


async def test_an_api_key_echoed_by_the_server_is_starred_out(fake_openai: FakeOpenAI, embedder_for: Factory) -> None:
    fake_openai.queue_embedding_error(FakeHTTPError(401, f"bad key {fake_openai.api_key}"))
    with pytest.raises(EmbeddingError) as info:
        await embedder_for(fake_openai).embed(["a"])
    assert str(info.value) == "embedding request failed: HTTP 401: bad key ***"


async def test_server_errors_are_retried(fake_openai: FakeOpenAI, embedder_for: Factory) -> None:
    fake_openai.queue_embedding_error(FakeHTTPError(503), FakeHTTPError(502))
    assert await embedder_for(fake_openai).embed(["a"]) == [FakeOpenAI.vector_for("a", 8)]
    assert len(fake_openai.embedding_requests) == 3


async def test_an_endpoint_that_gives_no_answer_is_an_outage_a_job_waits_out(fake_openai: FakeOpenAI) -> None:
    """A job failing on this is run again once the endpoint is back, not held as bad data."""
    down = OpenAIEmbedder(fake_openai.base_url, fake_openai.api_key, "nomic-embed-text", 8, max_retries=0)
    refused = OpenAIEmbedder("http://127.0.0.1:9/v1", "k", "nomic-embed-text", 8, max_retries=0)
    try:
        fake_openai.queue_embedding_error(FakeHTTPError(503, "overloaded"))
        with pytest.raises(EmbeddingUnavailable, match="HTTP 503: overloaded") as overloaded:
            await down.embed(["a"])
        with pytest.raises(EmbeddingUnavailable, match="unreachable") as unreachable:
            await refused.embed(["a"])
        fake_openai.queue_embedding_error(FakeHTTPError(400, "input too long"))
        with pytest.raises(EmbeddingError, match="HTTP 400") as wrong:
            await down.embed(["a"])
    finally:
        await down.aclose()
        await refused.aclose()
    assert jobs.is_outage(overloaded.value) and jobs.is_outage(unreachable.value)
    assert not jobs.is_outage(wrong.value)  # the same request would fail again


async def test_wrong_key_becomes_embedding_error(fake_openai: FakeOpenAI, embedder_for: Factory) -> None:
    embedder = embedder_for(fake_openai, key="sk-wrong")
    with pytest.raises(EmbeddingError, match="HTTP 401"):
        await embedder.embed(["a"])


async def test_factory_embedder_talks_to_the_endpoint(fake_openai: FakeOpenAI, embedder_for: Factory) -> None:
    fake_openai.embedding_dim = 768
    embedder = make_embedder("openai", "nomic-embed-text", fake_openai.base_url, fake_openai.api_key)
    assert (embedder.model_name, embedder.dim) == ("nomic-embed-text", 768)
    assert await embedder.embed(["Scanlan"]) == [FakeOpenAI.vector_for("Scanlan", 768)]
    assert isinstance(embedder, OpenAIEmbedder)
    await embedder.aclose()
