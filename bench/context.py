"""The hot context's latency in process, and an MCP tool call's over stdio, at campaign sizes.

    python bench/context.py [--sizes 1000,10000] [--lines 100000] [--calls 200] [--mcp-calls 100]

Runs on a throw-away embedded PostgreSQL under /tmp. For each size, a campaign of N entities (one alias each, 5% of
them secret), 2.5 facts an entity (edges and states, 5% secret, some closed into history), and ``--lines`` lines of
L1 in 50 sessions of which the last is live; a line names one or two entities among filler words, every 4 seconds.
Built with COPY: the hot context reads no embeddings. Each call asks for a random entity's context over the live
session's last 5 minutes (75 lines), in the players' view (the secret mask included) and in the DM's. Then, at the
largest size, ``lorekeeper mcp`` is started as an MCP client starts it, and the SDK's client calls its
``hot_context`` and ``entity_card`` tools over stdio.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import asyncpg
from asyncpg.connection import LoggedQuery

from memory.context import hot_context
from memory.db import EmbeddedPostgres, EmbeddingSpec, create_pool, migrate
from memory.jobs.queue import CHUNK
from memory.models import EntityType
from memory.store import CampaignMemory, Memory

ROOT = Path(__file__).resolve().parents[1]
SESSIONS = 50
LINE_EVERY_S = 4.0
FILLER = (
    "we walk down the long road toward the old gate while the rain keeps falling and someone asks about the price "
    "of bread and the rumour from the market"
).split()
#: The live session's newest lines the chunk job has not read yet: the mention index does not hold them.
UNINDEXED = 15
SYLLABLES = ["ka", "dor", "vel", "thr", "an", "is", "mar", "ok", "ze", "lu", "gorn", "ith", "bel", "ra", "sun"]
#: The schema's own types (not strings of their own, which a renamed type broke): those a campaign has many of.
TYPES = [t.value for t in EntityType if t not in (EntityType.event, EntityType.player)]


def fantasy_name(i: int) -> str:
    """A unique two-word invented name: words the filler never holds, as a campaign's names are."""
    rng = random.Random(i)
    first = "".join(rng.choice(SYLLABLES) for _ in range(3)).capitalize()
    return f"{first} {''.join(rng.choice(SYLLABLES) for _ in range(2)).capitalize()}{i}"


async def build(pool: asyncpg.Pool, mem: CampaignMemory, entities: int, lines: int) -> list[str]:
    """The campaign's rows by COPY; returns the entity names."""
    rng = random.Random(entities)
    cid = mem.campaign_id
    names = [fantasy_name(i) for i in range(entities)]
    async with pool.acquire() as conn, conn.transaction():
        first_id = await conn.fetchval("SELECT nextval('entities_id_seq')")
        await conn.execute(f"SELECT setval('entities_id_seq', {first_id + entities})")
        ids = list(range(first_id + 1, first_id + entities + 1))
        await conn.copy_records_to_table(
            "entities",
            # jsonb has no binary COPY encoder here: attributes and provenance keep their defaults ({}: the DM's)
            columns=["id", "campaign_id", "type", "name", "description", "visibility"],
            records=[
                (
                    ids[i],
                    cid,
                    TYPES[i % len(TYPES)],
                    names[i],
                    f"{names[i]} is someone the party met on the road; " + " ".join(rng.sample(FILLER, 12)),
                    "secret" if i % 20 == 7 else "public",
                )
                for i in range(entities)
            ],
        )
        await conn.copy_records_to_table(
            "entity_aliases",
            columns=["campaign_id", "entity_id", "alias"],
            records=[(cid, ids[i], f"the {names[i].split()[0]} of {i}") for i in range(entities)],
        )
        facts: list[tuple[int, int, str, int | None, str | None, str, str | None]] = []
        for i in range(entities):
            for k in (1, 7):
                target = ids[(i + k * 13) % entities]
                secret = "secret" if (i + k) % 20 == 3 else "public"
                facts.append((cid, ids[i], "knows" if k == 1 else "allied_with", target, None, secret, None))
            facts.append((cid, ids[i], "status", None, "alive" if i % 2 else "wounded", "public", None))
        # every fourth entity's status changed once: the old one is history
        for i in range(0, entities, 4):
            facts.append((cid, ids[i], "status", None, "unknown", "public", "2020-01-01"))
        await conn.copy_records_to_table(
            "relationships",
            columns=["campaign_id", "source_id", "type", "target_id", "value", "visibility", "valid_to"],
            records=[(*f[:6], None if f[6] is None else _ts(f[6])) for f in facts],
        )
        session_ids = []
        for s in range(SESSIONS):
            live = s == SESSIONS - 1
            session_ids.append(
                await conn.fetchval(
                    "INSERT INTO sessions (campaign_id, title, started_at, ended_at) VALUES"
                    " ($1, $2, now() - make_interval(days => $3), CASE WHEN $4 THEN NULL ELSE now() END) RETURNING id",
                    cid,
                    f"Session {s + 1}",
                    SESSIONS - s,
                    live,
                )
            )
        per_session = lines // SESSIONS
        speakers = ["DM", "Pip", "Kael", "Mira"]

        def line(n: int) -> tuple[str, list[int]]:
            named = list(dict.fromkeys(rng.randrange(entities) for _ in range(rng.choice((1, 1, 2)))))
            words = rng.sample(FILLER, 14)
            at = rng.randrange(len(words))
            return " ".join([*words[:at], " and ".join(names[i] for i in named), *words[at:]]).capitalize() + ".", named

        first_line = await conn.fetchval("SELECT nextval('session_entries_id_seq')")
        await conn.execute(f"SELECT setval('session_entries_id_seq', {first_line + SESSIONS * per_session})")
        rows: list[tuple[object, ...]] = []
        said: list[tuple[int, int, int, int]] = []
        for s, sid in enumerate(session_ids):
            for n in range(per_session):
                text, named = line(n)
                entry_id = first_line + 1 + s * per_session + n
                rows.append((entry_id, cid, sid, n + 1, speakers[n % 4], text, text, n * LINE_EVERY_S, f"line {n + 1}"))
                # the chunk job has indexed every line but the live session's newest (it runs a window behind)
                if sid != session_ids[-1] or n < per_session - UNINDEXED:
                    said.extend((cid, ids[i], entry_id, sid) for i in named)
        await conn.copy_records_to_table(
            "session_entries",
            columns=["id", "campaign_id", "session_id", "seq", "speaker", "raw_text", "text", "start_s", "ref"],
            records=rows,
        )
        # consistent by construction: their foreign keys, checked row by row, took minutes at 10,000 entities
        await conn.execute("SET LOCAL session_replication_role = replica")
        await conn.copy_records_to_table(
            "entity_mentions", columns=["campaign_id", "entity_id", "entry_id", "session_id"], records=said
        )
        await conn.execute("SET LOCAL session_replication_role = origin")
        await conn.executemany(
            "INSERT INTO ingest_progress (campaign_id, session_id, step, last_seq) VALUES ($1, $2, $3, $4)",
            [(cid, sid, CHUNK, per_session - (UNINDEXED if sid == session_ids[-1] else 0)) for sid in session_ids],
        )
        # the ended sessions are recapped, as the summary job leaves them
        await conn.execute(
            "UPDATE sessions SET summary = 'The party travelled.' WHERE campaign_id = $1 AND ended_at IS NOT NULL", cid
        )
    await pool.execute("ANALYZE")
    return names


def _ts(text: str) -> object:
    from datetime import UTC, datetime

    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def percentiles(samples: list[float]) -> tuple[float, float]:
    q = statistics.quantiles(samples, n=100, method="inclusive")
    return q[49] * 1000, q[94] * 1000


class Statements:
    """Statements the pool's connections sent: the hot context's round trips, and apart the reset each connection
    gets on going back to the pool (asyncpg's, one more round trip per statement run on the pool)."""

    def __init__(self) -> None:
        self.sent = 0
        self.resets = 0

    async def watch(self, conn: asyncpg.Connection) -> None:
        conn.add_query_logger(self._log)

    def _log(self, record: LoggedQuery) -> None:
        if "RESET ALL" in record.query:
            self.resets += 1
        elif "typeinfo_tree" not in record.query and "'jit'" not in record.query:
            self.sent += 1  # not the driver's look-up of a type new to the connection, once per connection


async def time_in_process(
    mem: CampaignMemory, names: list[str], calls: int, dm: bool, counted: Statements
) -> tuple[float, float, int, float, float]:
    """p50 and p95 in ms, text characters, statements and pool resets per call."""
    rng = random.Random(calls)
    public = [n for i, n in enumerate(names) if i % 20 != 7]
    await hot_context(mem, public[0], dm=dm)  # warm: the first call compiles the regex of secret names
    took: list[float] = []
    chars = 0
    sent, resets = counted.sent, counted.resets
    for _ in range(calls):
        started = time.perf_counter()
        ctx = await hot_context(mem, rng.choice(public), dm=dm, minutes=5)
        chars += len(ctx.text(800))
        took.append(time.perf_counter() - started)
    per_call = (counted.sent - sent) / calls, (counted.resets - resets) / calls
    return *percentiles(took), chars // calls, *per_call


async def time_over_stdio(dsn: str, data_dir: Path, campaign: str, names: list[str], calls: int) -> list[str]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {**os.environ, "DATABASE_URL": dsn, "LOREKEEPER_DATA_DIR": str(data_dir), "PYTHONPATH": str(ROOT)}
    env.pop("LOREKEEPER_CONFIG", None)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from bot.cli import main; main()", "mcp", "-c", campaign, "--as", "player"],
        env=env,
    )
    rng = random.Random(7)
    public = [n for i, n in enumerate(names) if i % 20 != 7]
    rows = []
    with open(data_dir / "mcp.log", "w") as errlog:  # noqa: ASYNC230  # once, before the server starts
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for tool, args in (
                ("hot_context", lambda: {"entity": rng.choice(public), "minutes": 5}),
                ("entity_card", lambda: {"name": rng.choice(public)}),
            ):
                await session.call_tool(tool, args())  # warm
                took = []
                for _ in range(calls):
                    started = time.perf_counter()
                    result = await session.call_tool(tool, args())
                    took.append(time.perf_counter() - started)
                    assert not result.is_error, result.content
                p50, p95 = percentiles(took)
                rows.append(f"| {tool} over stdio | {len(names):,} | {p50:.1f} | {p95:.1f} |")
    return rows


async def run(sizes: list[int], lines: int, calls: int, mcp_calls: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="lk-bench-context-", dir="/tmp"))
    server = EmbeddedPostgres(root / "pg")
    try:
        dsn = server.start()
        counted = Statements()
        pool = await create_pool(dsn, max_size=4, on_connect=counted.watch)
        await migrate(pool, EmbeddingSpec("all-MiniLM-L6-v2", 384))
        memory = Memory(pool)
        print("| what | entities | lines | view | p50 ms | p95 ms | text chars | statements | pool resets |")
        print("|---|---:|---:|---|---:|---:|---:|---:|---:|")
        largest: tuple[str, list[str]] | None = None
        for size in sizes:
            name = f"bench {size}"
            mem = memory.campaign((await memory.campaigns().create(name, activate=False)).id)
            started = time.perf_counter()
            names = await build(pool, mem, size, lines)
            built = time.perf_counter() - started
            for dm in (False, True):
                p50, p95, chars, sent, resets = await time_in_process(mem, names, calls, dm, counted)
                view = "DM" if dm else "player"
                print(
                    f"| hot_context in process | {size:,} | {lines:,} | {view} | {p50:.1f} | {p95:.1f} | {chars} "
                    f"| {sent:.1f} | {resets:.1f} |"
                )
            print(f"<!-- built {size:,} entities and {lines:,} lines in {built:.1f} s -->", flush=True)
            largest = (name, names)
        await pool.close()
        if mcp_calls and largest:
            print()
            print("| tool call | entities | p50 ms | p95 ms |")
            print("|---|---:|---:|---:|")
            for row in await time_over_stdio(dsn, root, largest[0], largest[1], mcp_calls):
                print(row)
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000", help="entities per campaign (comma-separated)")
    parser.add_argument("--lines", type=int, default=100_000, help="lines of L1 per campaign")
    parser.add_argument("--calls", type=int, default=200, help="hot contexts timed per size and view")
    parser.add_argument("--mcp-calls", type=int, default=100, help="MCP tool calls timed (0: none)")
    args = parser.parse_args()
    asyncio.run(run([int(s) for s in args.sizes.split(",") if s], args.lines, args.calls, args.mcp_calls))


if __name__ == "__main__":
    main()
