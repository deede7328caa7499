"""Shared fixtures: one embedded PostgreSQL per test run, a fresh database per test (cloned from a migrated
template, so every test starts from the real schema in ~50 ms)."""

from __future__ import annotations

import itertools
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg
import pytest

from memory.db import EmbeddedPostgres, EmbeddingSpec, create_pool, migrate
from memory.store import CampaignMemory, Memory
from tests.fakes.fixtures import fake_openai, fake_openai_thread  # noqa: F401  (fixtures for every test)

TEST_EMBEDDING = EmbeddingSpec("all-MiniLM-L6-v2", 384)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that needs the embedded PostgreSQL (its fixtures all start from ``pg_server``) is marked
    ``integration``, wherever it lives: ``pytest -m "not integration"`` is the fast lane that never starts it."""
    for item in items:
        if "pg_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.integration)


_counter = itertools.count()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[tuple[EmbeddedPostgres, str]]:
    # Under /tmp, never under /root: pgserver opens up the parents of its data dir when run as root.
    root = Path(tempfile.mkdtemp(prefix="lorekeeper-test-", dir="/tmp"))
    server = EmbeddedPostgres(root)
    dsn = server.start()
    yield server, dsn
    server.stop()
    shutil.rmtree(root, ignore_errors=True)


def _dsn_for(dsn: str, database: str) -> str:
    base, _, query = dsn.partition("?")
    return f"{base.rsplit('/', 1)[0]}/{database}" + (f"?{query}" if query else "")


@pytest.fixture(scope="session")
async def pg_template(pg_server: tuple[EmbeddedPostgres, str]) -> str:
    _, dsn = pg_server
    conn = await asyncpg.connect(dsn)
    await conn.execute("DROP DATABASE IF EXISTS lk_template")
    await conn.execute("CREATE DATABASE lk_template")
    await conn.close()
    pool = await create_pool(_dsn_for(dsn, "lk_template"))
    await migrate(pool, TEST_EMBEDDING)
    await pool.close()
    return dsn


@asynccontextmanager
async def _database(admin_dsn: str, prefix: str, template: str | None) -> AsyncIterator[str]:
    name = f"{prefix}_{next(_counter)}"
    admin = await asyncpg.connect(admin_dsn)
    try:
        await admin.execute(f"CREATE DATABASE {name}" + (f" TEMPLATE {template}" if template else ""))
    finally:
        await admin.close()
    try:
        yield _dsn_for(admin_dsn, name)
    finally:
        admin = await asyncpg.connect(admin_dsn)  # a new one: a test may have restarted the server
        try:
            await admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        finally:
            await admin.close()


@pytest.fixture
async def fresh_dsn(pg_template: str) -> AsyncIterator[str]:
    """The DSN of a new, migrated database of this test's own."""
    async with _database(pg_template, "lk_test", "lk_template") as dsn:
        yield dsn


@pytest.fixture
async def empty_dsn(pg_template: str) -> AsyncIterator[str]:
    """The DSN of a new database with no schema at all (for migration tests)."""
    async with _database(pg_template, "lk_empty", None) as dsn:
        yield dsn


@pytest.fixture
async def pool(fresh_dsn: str) -> AsyncIterator[asyncpg.Pool]:
    p = await create_pool(fresh_dsn, max_size=5)
    yield p
    await p.close()


@pytest.fixture
def memory(pool: asyncpg.Pool) -> Memory:
    return Memory(pool)


@pytest.fixture
async def campaign(memory: Memory) -> CampaignMemory:
    c = await memory.campaigns().create("Test Campaign")
    return memory.campaign(c.id)
