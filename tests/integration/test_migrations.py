"""Migrations: applied in order, recorded, idempotent; the embedding dimension fixed at creation."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import pytest

from memory.db import (
    DatabaseError,
    EmbeddingMismatchError,
    EmbeddingSpec,
    create_pool,
    migrate,
    migration_files,
    migration_status,
)
from memory.models import Session

ROOT = Path(__file__).resolve().parents[2]


async def test_migrations_apply_once_and_are_idempotent(empty_dsn: str) -> None:
    pool = await create_pool(empty_dsn)
    try:
        first = await migrate(pool, EmbeddingSpec("all-MiniLM-L6-v2", 384))
        assert first == [name for _, name, _ in migration_files()]
        assert await migrate(pool, EmbeddingSpec("all-MiniLM-L6-v2", 384)) == []
        status = await migration_status(pool)
        assert status["pending"] == [] and status["embedding_dim"] == 384
        dim = await pool.fetchval(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'chunks'::regclass AND attname = 'embedding'"
        )
        assert dim == 384
    finally:
        await pool.close()


async def test_dimension_chosen_at_creation(empty_dsn: str) -> None:
    pool = await create_pool(empty_dsn)
    try:
        await migrate(pool, EmbeddingSpec("text-embedding-3-small", 1536))
        dim = await pool.fetchval(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'chunks'::regclass AND attname = 'embedding'"
        )
        assert dim == 1536
    finally:
        await pool.close()


async def test_embedding_mismatch_stops_with_what_to_do(empty_dsn: str) -> None:
    pool = await create_pool(empty_dsn)
    try:
        await migrate(pool, EmbeddingSpec("all-MiniLM-L6-v2", 384))
        with pytest.raises(EmbeddingMismatchError) as err:
            await migrate(pool, EmbeddingSpec("nomic-embed-text", 768))
        message = str(err.value)
        assert "all-MiniLM-L6-v2 (384 dimensions)" in message and "nomic-embed-text (768" in message
        assert "LOREKEEPER_EMBEDDING_MODEL=all-MiniLM-L6-v2" in message and "lorekeeper db reembed" in message
        # the same name with another dimension is a mismatch too: LOREKEEPER_EMBEDDING_DIM changed, not the model
        with pytest.raises(EmbeddingMismatchError) as err:
            await migrate(pool, EmbeddingSpec("all-MiniLM-L6-v2", 768))
        message = str(err.value)
        assert "set LOREKEEPER_EMBEDDING_DIM=384 again" in message and "EMBEDDING_MODEL" not in message
    finally:
        await pool.close()


async def test_failed_migration_leaves_nothing_half_done(empty_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import memory.db as db

    good = migration_files()
    broken = (9999, "9999_broken.sql", "CREATE TABLE half_done (id int); SELECT * FROM no_such_table;")
    monkeypatch.setattr(db, "migration_files", lambda: [*good, broken])
    pool = await create_pool(empty_dsn)
    try:
        with pytest.raises(DatabaseError) as failed:
            await migrate(pool, EmbeddingSpec("all-MiniLM-L6-v2", 384))
        assert str(failed.value).startswith(
            'migration 9999_broken.sql failed (UndefinedTableError: relation "no_such_table" does not exist); '
        )
        assert await pool.fetchval("SELECT to_regclass('half_done')") is None
        assert await pool.fetchval("SELECT count(*) FROM schema_migrations WHERE version = 9999") == 0
        # the good ones before it stay applied
        assert await pool.fetchval("SELECT count(*) FROM schema_migrations") == len(good)
    finally:
        await pool.close()


BROKEN_MIGRATION = """
import memory.db
good = memory.db.migration_files()
memory.db.migration_files = lambda: [*good, (9999, "9999_broken.sql", "ALTER TABLE no_such_table ADD x int")]
from bot.cli import main
main()
"""


def test_a_failed_migration_is_one_line_naming_it(fresh_dsn: str, tmp_path: Path) -> None:
    """A migration the database refused was an asyncpg traceback that did not say which file it was."""
    env = {**os.environ, "DATABASE_URL": fresh_dsn, "LOREKEEPER_DATA_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    env.pop("LOREKEEPER_CONFIG", None)
    for command in (["db", "migrate"], ["campaign", "list"]):  # any command applies pending migrations at start
        done = subprocess.run(
            [sys.executable, "-c", BROKEN_MIGRATION, *command], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 1
        assert done.stderr == (
            'error: migration 9999_broken.sql failed (UndefinedTableError: relation "no_such_table" does not exist); '
            "nothing of it was applied: go back to the version of Lorekeeper you had (or restore your backup) and "
            "report this error\n"
        )


def test_a_database_a_newer_version_migrated_is_refused_and_db_status_says_so(fresh_dsn: str, tmp_path: Path) -> None:
    """An older build ran on a database a newer one had migrated, without a word, and wrote by its older rules
    (sessions the newer build took as current and never read again)."""

    async def newer_version_ran() -> None:
        conn = await asyncpg.connect(fresh_dsn)
        try:
            await conn.execute(
                "INSERT INTO schema_migrations (version, name) VALUES (9999, '9999_from_the_future.sql')"
            )
        finally:
            await conn.close()

    asyncio.run(newer_version_ran())
    env = {**os.environ, "DATABASE_URL": fresh_dsn, "LOREKEEPER_DATA_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    env.pop("LOREKEEPER_CONFIG", None)
    refused = (
        "error: this database was migrated by a newer version of Lorekeeper (9999_from_the_future.sql: a migration "
        "this version does not know), and this version would write to it by older rules: run the newer version "
        "again (upgrade this one), or restore the backup you made before the upgrade; nothing was changed\n"
    )
    # a command that migrates, one that does not (db migrate, reembed and sync open without migrating)
    for command in (["campaign", "list"], ["db", "migrate"], ["db", "reembed", "--yes"]):
        done = subprocess.run(
            [sys.executable, "-c", "from bot.cli import main; main()", *command],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert (done.returncode, done.stderr) == (1, refused), command
    status = subprocess.run(
        [sys.executable, "-c", "from bot.cli import main; main()", "db", "status"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert status.returncode == 0
    lines = status.stdout.splitlines()
    assert "newer:     9999_from_the_future.sql" in lines and refused.removeprefix("error: ").rstrip() in lines
    assert "pending:   -" in lines


async def test_review_channel_migration_keeps_what_the_old_cursor_had_posted(empty_dsn: str) -> None:
    pool = await create_pool(empty_dsn)
    try:
        spec = EmbeddingSpec("all-MiniLM-L6-v2", 384)
        await migrate(pool, spec)
        # back to before 0005, with a campaign whose settings hold the old time cursor
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute(
                """
                DROP TABLE review_posted;
                DROP TRIGGER entities_review_notify ON entities;
                DROP TRIGGER entities_review_renotify ON entities;
                DROP TRIGGER relationships_review_notify ON relationships;
                DROP TRIGGER relationships_review_renotify ON relationships;
                DROP FUNCTION lorekeeper_review_notify();
                DELETE FROM schema_migrations WHERE version = 5;
                """
            )
            campaign = await conn.fetchval(
                "INSERT INTO campaigns (name, settings)"
                " VALUES ('Old', jsonb_build_object('review_posted_until', $1::text)) RETURNING id",
                "2026-01-02T00:00:00+00:00",
            )
            for name, day in (("Posted", 1), ("Cursor", 2), ("Unposted", 3)):
                await conn.execute(
                    "INSERT INTO entities (campaign_id, name, type, status, created_at)"
                    " VALUES ($1, $2, 'npc', 'pending', make_timestamptz(2026, 1, $3, 0, 0, 0, 'UTC'))",
                    campaign,
                    name,
                    day,
                )
        assert [name for _, name, _ in migration_files() if name.startswith("0005")] == await migrate(pool, spec)
        posted = await pool.fetch(
            "SELECT e.name FROM review_posted p JOIN entities e ON e.id = p.item_id ORDER BY e.name"
        )
        assert [r["name"] for r in posted] == ["Cursor", "Posted"]
        assert await pool.fetchval("SELECT settings FROM campaigns WHERE id = $1", campaign) in ("{}", {})
    finally:
        await pool.close()


async def test_one_current_copy_migration_folds_the_copies_older_code_stored(
    empty_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memory.db as db

    spec = EmbeddingSpec("all-MiniLM-L6-v2", 384)
    every = migration_files()
    monkeypatch.setattr(db, "migration_files", lambda: [m for m in every if m[0] < 4])
    pool = await create_pool(empty_dsn)
    try:
        await migrate(pool, spec)
        monkeypatch.setattr(db, "migration_files", lambda: every)

        async def fact(campaign: int, value: str | None, target: int | None = None, **row: object) -> int:
            columns = {"status": "accepted", "visibility": "public", "provenance": {}, **row}
            return await pool.fetchval(
                f"""
                INSERT INTO relationships (campaign_id, source_id, type, target_id, value, {", ".join(columns)})
                VALUES ($1, (SELECT min(id) FROM entities WHERE campaign_id = $1), 'status', $2, $3,
                        {", ".join(f"${i}" for i in range(4, 4 + len(columns)))})
                RETURNING id
                """,
                campaign,
                target,
                value,
                *columns.values(),
            )

        old, other = [
            await pool.fetchval("INSERT INTO campaigns (name) VALUES ($1) RETURNING id", name) for name in "AB"
        ]
        for c in (old, other):
            await pool.execute("INSERT INTO entities (campaign_id, name, type) VALUES ($1, 'Eldrinax', 'npc')", c)
        heard = {"source": "stated", "confidence": 0.9, "session_id": 1, "entry_ids": [4]}
        # "dead": heard (accepted), heard unsure (pending), then the DM's word, secret
        dead_heard = await fact(old, "dead", provenance=heard)
        dead_unsure = await fact(old, "dead", status="pending", provenance={**heard, "confidence": 0.4})
        dead_dm = await fact(old, "dead", visibility="secret", provenance={"source": "dm"})
        # "asleep": only pending copies, the more confident one is kept
        asleep_low = await fact(old, "asleep", status="pending", provenance={**heard, "confidence": 0.3})
        asleep_high = await fact(old, "asleep", status="pending", provenance={**heard, "confidence": 0.6})
        # a long value, two equal copies: the older is kept; an older fact it had superseded follows it
        long = "bound " * 2000
        long_first, long_second = await fact(old, long), await fact(old, long)
        history = await fact(old, "alive", valid_to=datetime.now(UTC), superseded_by=long_second)
        # not copies: a rejected and a closed one, and the same fact in another campaign
        rejected = await fact(old, "dead", status="rejected")
        closed = await fact(old, "dead", valid_to=datetime.now(UTC))
        elsewhere = await fact(other, "dead")

        assert await migrate(pool, spec) == [name for v, name, _ in every if v >= 4]

        rows = {r["id"]: r for r in await pool.fetch("SELECT * FROM relationships")}
        assert set(rows) == {dead_dm, asleep_high, long_first, history, rejected, closed, elsewhere}
        kept = rows[dead_dm]
        assert kept["status"] == "accepted" and kept["visibility"] == "secret"
        assert kept["provenance"]["source"] == "dm"
        merged = kept["provenance"]["merged"]
        assert [(m["id"], m["status"]) for m in merged] == [(dead_heard, "accepted"), (dead_unsure, "pending")]
        assert merged[0]["session_id"] == 1 and merged[0]["entry_ids"] == [4]
        assert rows[asleep_high]["status"] == "pending"
        assert [m["id"] for m in rows[asleep_high]["provenance"]["merged"]] == [asleep_low]
        assert rows[history]["superseded_by"] == long_first
        assert rows[elsewhere]["provenance"] == {}
        # the index holds now: writing the fact again finds the kept copy
        with pytest.raises(asyncpg.UniqueViolationError):
            await fact(old, "dead")
    finally:
        await pool.close()


async def _old_session(pool: asyncpg.Pool, campaign_id: int) -> Session:
    """A session as the code of an older schema started it (``start_session`` writes columns of today's)."""
    row = await pool.fetchrow("INSERT INTO sessions (campaign_id, title) VALUES ($1, 'S1') RETURNING *", campaign_id)
    return Session(**dict(row))


async def test_pools_opened_together_on_a_new_database_all_open(empty_dsn: str) -> None:
    # The bot and a worker starting together both create the vector extension; one must wait for the other.
    pools = await asyncio.gather(*(create_pool(empty_dsn, max_size=1) for _ in range(6)))
    try:
        assert [await p.fetchval("SELECT $1::vector::text", [1.0, 2.0]) for p in pools] == ["[1,2]"] * 6
    finally:
        await asyncio.gather(*(p.close() for p in pools))


async def test_confidences_migration_keeps_older_lines_as_without_confidences(
    empty_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0020: a line stored before it reads as one without confidences (stage 2's strict rule); a line stored after
    keeps its word confidences, an unknown one among them included."""
    import memory.db as db
    from memory.models import EntryIn
    from memory.store import Memory

    spec = EmbeddingSpec("all-MiniLM-L6-v2", 384)
    every = migration_files()
    monkeypatch.setattr(db, "migration_files", lambda: [m for m in every if m[0] < 20])
    pool = await create_pool(empty_dsn)
    try:
        await migrate(pool, spec)
        mem = Memory(pool).campaign((await Memory(pool).campaigns().create("Old")).id)
        session = await _old_session(pool, mem.campaign_id)
        await pool.execute(
            "INSERT INTO session_entries (campaign_id, session_id, seq, speaker, raw_text, text, suspects)"
            " VALUES ($1, $2, 1, 'DM', 'the cracks game', 'the cracks game', '[[4, 10]]')",
            mem.campaign_id,
            session.id,
        )
        monkeypatch.setattr(db, "migration_files", lambda: every)
        assert await migrate(pool, spec) == [name for v, name, _ in every if v >= 20]

        await mem.log.write(
            session.id, EntryIn(speaker="DM", text="the cracks game", suspects=[(4, 10)], confidences=[0.9, None, 0.25])
        )
        old, new = await mem.log.session_entries(session.id)
        assert (old.suspects, old.confidences) == ([(4, 10)], None)
        assert new.confidences == pytest.approx([0.9, None, 0.25])
    finally:
        await pool.close()


async def test_sharp_s_migration_indexes_again_the_lines_saying_it(
    empty_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0033: "Strasse" found no line saying "Straße" (the search folded accents, not ß, as the matcher does): the
    lines saying it stored before are indexed again, their terms recounted, and those after are so too."""
    import memory.db as db
    from memory.models import EntryIn
    from memory.store import Memory

    spec = EmbeddingSpec("all-MiniLM-L6-v2", 384)
    every = migration_files()
    monkeypatch.setattr(db, "migration_files", lambda: [m for m in every if m[0] < 33])
    pool = await create_pool(empty_dsn)
    try:
        await migrate(pool, spec)
        mem = Memory(pool).campaign((await Memory(pool).campaigns().create("Old")).id)
        session = await _old_session(pool, mem.campaign_id)
        for seq, text in ((1, "We ride down the Straße of Ħal Far."), (2, "The road is long.")):
            await pool.execute(
                "INSERT INTO session_entries (campaign_id, session_id, seq, speaker, raw_text, text)"
                " VALUES ($1, $2, $3, 'DM', $4, $4)",
                mem.campaign_id,
                session.id,
                seq,
                text,
            )
        monkeypatch.setattr(db, "migration_files", lambda: every)
        assert await migrate(pool, spec) == [name for v, name, _ in every if v >= 33]

        await mem.log.write(session.id, EntryIn(speaker="DM", text="A STRASSE sign hangs at Hal Far."))
        old, _, new = await mem.log.session_entries(session.id)
        assert {e.id for e in await mem.log.search("strasse")} == {old.id, new.id}
        assert {e.id for e in await mem.log.search("Ħal Far")} == {old.id, new.id}
        terms = "SELECT term, lines FROM recall_terms WHERE campaign_id = $1 AND lines > 0 AND term ~ '^(stra|hal)'"
        assert dict(await pool.fetch(terms, mem.campaign_id)) == {"strass": 2, "hal": 2}
    finally:
        await pool.close()


async def test_events_told_migration_gives_accepted_events_their_lines(
    empty_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0022: an event accepted before events were indexed by the lines they were told in gets them; a pending one
    does not (it is not canon), nor an entity of another type."""
    import memory.db as db
    from memory.mentions import mentions
    from memory.models import EntityIn, EntityType, EntryIn, Provenance, Source
    from memory.store import Memory

    spec = EmbeddingSpec("all-MiniLM-L6-v2", 384)
    every = migration_files()
    monkeypatch.setattr(db, "migration_files", lambda: [m for m in every if m[0] < 22])
    pool = await create_pool(empty_dsn)
    try:
        await migrate(pool, spec)
        mem = Memory(pool).campaign((await Memory(pool).campaigns().create("Old")).id)
        session = await _old_session(pool, mem.campaign_id)
        line = await mem.log.write(session.id, EntryIn(speaker="DM", text="You ride into Westruun.", start_s=3.0))
        told = Provenance(source=Source.stated, confidence=0.55, session_id=session.id, entry_ids=[line.id])
        made = {
            name: await mem.graph.add_entity(EntityIn(name=name, type=kind, status=status, provenance=told))
            for name, kind, status in [
                ("Arrival at Westruun", EntityType.event, "accepted"),
                ("Battle of Westruun", EntityType.event, "pending"),
                ("Westruun Gate", EntityType.location, "accepted"),
            ]
        }
        await pool.execute("DELETE FROM entity_mentions")  # as older code left them: none for a told event
        monkeypatch.setattr(db, "migration_files", lambda: every)
        assert await migrate(pool, spec) == [name for v, name, _ in every if v >= 22]

        lines = {n: (await mentions(mem.db, mem.campaign_id, e.id)).lines for n, e in made.items()}
        assert [m.entry_id for m in lines["Arrival at Westruun"]] == [line.id]
        assert lines["Battle of Westruun"] == [] and lines["Westruun Gate"] == []
    finally:
        await pool.close()
