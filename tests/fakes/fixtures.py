"""Pytest fixtures for the fakes.

Import them into a test module (or a conftest) to use them. The fixtures carry explicit names, so an
alias keeps ruff's F811 quiet when a test takes the fixture as a parameter::

    from tests.fakes.fixtures import fake_openai as fake_openai_fixture  # noqa: F401
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from tests.fakes.openai_server import FakeOpenAI


@pytest_asyncio.fixture(name="fake_openai")
async def fake_openai() -> AsyncIterator[FakeOpenAI]:
    """A fresh fake OpenAI server per test (8-d embeddings; set ``embedding_dim`` to change)."""
    async with FakeOpenAI.running() as fake:
        yield fake
