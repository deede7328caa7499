"""Pytest fixtures for the fakes.

Import them into a test module (or a conftest) to use them. The fixtures carry explicit names, so an
alias keeps ruff's F811 quiet when a test takes the fixture as a parameter::

    from tests.fakes.fixtures import fake_openai as fake_openai_fixture  # noqa: F401
"""

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
