"""Pytest fixtures for the fakes; tests/conftest.py imports them, so every test may ask for them by name."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio

from tests.fakes.openai_server import FakeOpenAI


@pytest_asyncio.fixture(name="fake_openai")
async def fake_openai() -> AsyncIterator[FakeOpenAI]:
    """A fresh fake OpenAI server per test (8-d embeddings; set ``embedding_dim`` to change)."""
    async with FakeOpenAI.running() as fake:
        yield fake


@pytest.fixture(name="fake_openai_thread")
def fake_openai_thread() -> Iterator[FakeOpenAI]:
    """A fake OpenAI server on an event loop of its own thread, for code that blocks the test's thread while
    it calls the server (``lorekeeper correct --llm``, ``bench.correction --llm``)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    fake = FakeOpenAI()
    try:
        asyncio.run_coroutine_threadsafe(fake.start(), loop).result(10)
        yield fake
    finally:
        try:
            asyncio.run_coroutine_threadsafe(fake.stop(), loop).result(10)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
            loop.close()
