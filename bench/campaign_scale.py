"""A two-year campaign: how long the DM's commands take on ~100 sessions of 4,000 lines, 1,500 entities, 30,000 facts.

    python bench/campaign_scale.py                     # 10 sessions (about a minute)
    python bench/campaign_scale.py --sessions 100      # the full campaign: 400,000 lines
    python bench/campaign_scale.py --sessions 100 --data /tmp/scale --keep   # build once, then --reuse

Builds the campaign directly in an embedded PostgreSQL (COPY, no jobs): the entities of
campaigns/examples/critical_role.yaml plus generated ones up to ``--entities``; each session ``--lines`` Critical
Role turns from ../shared/data/crd3 (override with LOREKEEPER_DATA; synthetic sentences when absent, with a
warning), its passages (windows of 8 lines), a vector for each line and passage (random unit vectors: only timing
matters), the mention index and the jobs' progress as the chunk job leaves them, its recap (an event entity linked
to the entities its lines name) and facts heard in it; ``--facts`` facts in all, skewed towards the first entities
(Grog Strongjaw, Vax'ildan … have thousands), with history (closed facts), secrets, and a few hundred items waiting
for review. Then each DM command is timed through the core API, as the
bot's cog calls it (median of ``--repeat`` runs; commands that write run once, inside a transaction rolled back
afterwards, so ``--reuse`` finds the same campaign).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from campaigns.files import dump_campaign_file, parse_campaign_file
from campaigns.load import apply_campaign_file, export_campaign_file
from campaigns.schema import EntitySpec
from memory import jobs, semantic
from memory.chunking import LINE_MIN_WORDS
from memory.db import EmbeddedPostgres, EmbeddingSpec, create_pool, migrate
from memory.gazetteer import of_mentions
from memory.graph.took_part import link_to_recaps, told_in, unlink_unnamed
from memory.models import EntityType
from memory.recall import named_entities, recall
from memory.recorder import CorrectionIndexCache
from memory.store import CampaignMemory, Memory

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("LOREKEEPER_DATA", ROOT.parent / "shared" / "data")) / "crd3" / "episodes"
EXAMPLE = ROOT / "campaigns" / "examples" / "critical_role.yaml"
CAMPAIGN = "Two years"
DIM = 384
WINDOW = 8
SYLLABLES = ["el", "drin", "ax", "kor", "vash", "iron", "hold", "mir", "ath", "zen", "tal", "gor", "ul", "wyn"]
EDGES = ["knows", "ally_of", "enemy_of", "owns", "member_of", "owes", "fears"]
STATES = ["status", "mood", "carries", "title", "home", "quest_state"]
QUERIES = ["who has the Ember Key now", "what happened to Grog in the tavern", "Keyleth", "the dragon attacked"]
BUSY = ("Grog Strongjaw", "Vax'ildan")  # the characters with the most facts (the file's most mentioned)


def crd3_lines() -> list[tuple[str, str]]:
    found = []
    for path in sorted(DATA.glob("*.json")):
        for turn in json.loads(path.read_text())["TURNS"]:
            if text := " ".join(turn["UTTERANCES"]).strip():
                found.append((turn["NAMES"][0].title(), text))
    if found:
        return found
    rng = random.Random(7)
    words = "the dragon tavern sword gold castle night road king goblin spell door map ship storm".split()
    print(f"warning: no CRD3 transcripts in {DATA}: synthetic sentences instead")
    return [("Player", " ".join(rng.choices(words, k=15))) for _ in range(10_000)]


def unit_vectors(n: int, rng: np.random.Generator) -> np.ndarray:
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


async def copy_json(conn: Any, table: str, columns: list[str], records: list[tuple[Any, ...]]) -> None:
    """COPY into ``table`` through a staging table: asyncpg's binary COPY cannot write jsonb (``provenance``)."""
    await conn.execute(f"CREATE TEMP TABLE staged AS SELECT {', '.join(columns)} FROM {table} WITH NO DATA")
    await conn.execute("ALTER TABLE staged ALTER COLUMN provenance TYPE text")
    await conn.copy_records_to_table("staged", columns=columns, records=records)
    listed = ", ".join(columns)
    await conn.execute(
        f"INSERT INTO {table} ({listed}) SELECT {listed.replace('provenance', 'provenance::jsonb')} FROM staged"
    )
    await conn.execute("DROP TABLE staged")


async def build(mem: CampaignMemory, args: argparse.Namespace) -> dict[str, Any]:
    """The campaign, straight into its tables; returns what the timings need (a few names and titles)."""
    rng = random.Random(7)
    nrng = np.random.default_rng(7)
    cid = mem.campaign_id
    pool = mem.db
    file = parse_campaign_file(EXAMPLE.read_text(), EXAMPLE.name)
    specs = [(s.name, s.type.value, list(s.aliases)) for s in file.entities]
    taken = {n.casefold() for name, _, aliases in specs for n in (name, *aliases)}
    while len(specs) < args.entities:
        name = "".join(rng.choices(SYLLABLES, k=rng.randint(2, 4))).title()
        if name.casefold() not in taken:
            taken.add(name.casefold())
            specs.append((name, rng.choice(["npc", "location", "item", "faction"]), []))
    specs = specs[: args.entities]
    base = datetime(2024, 1, 6, 19, tzinfo=UTC)
    async with pool.acquire() as conn:
        await copy_json(
            conn,
            "entities",
            ["campaign_id", "type", "name", "description", "provenance"],
            records=[(cid, t, n, f"{n}, as the table knows them.", '{"source": "dm"}') for n, t, _ in specs],
        )
        ids = {
            r["name"]: r["id"] for r in await conn.fetch("SELECT id, name FROM entities WHERE campaign_id = $1", cid)
        }
        await conn.copy_records_to_table(
            "entity_aliases",
            columns=["campaign_id", "entity_id", "alias"],
            records=[(cid, ids[n], a) for n, _, aliases in specs for a in aliases],
        )
        order = [ids[n] for n, _, _ in specs]  # most mentioned first
        gazetteer = of_mentions(await mem.graph.list_entities())  # the chunk job's (memory.jobs.chunk)

        # sessions, lines, passages, recaps -----------------------------------------------------------------
        source = crd3_lines()
        # built once at the end: faster than row by row
        await conn.execute("DROP INDEX chunks_embedding")
        await conn.execute("DROP INDEX line_vectors_embedding")
        sessions: list[int] = []
        named_in: dict[int, set[int]] = {}
        first_entry: dict[int, int] = {}
        for s in range(args.sessions):
            sid = await conn.fetchval(
                "INSERT INTO sessions (campaign_id, title, started_at, ended_at, summary) "
                "VALUES ($1, $2, $3::timestamptz, $3::timestamptz + interval '4 hours', $4) RETURNING id",
                cid,
                f"Session {s + 1}",
                base + timedelta(days=7 * s),
                f"Session {s + 1}: the party went on.",
            )
            sessions.append(sid)
            start = s * args.lines
            lines = [source[(start + i) % len(source)] for i in range(args.lines)]
            await conn.copy_records_to_table(
                "session_entries",
                columns=["campaign_id", "session_id", "seq", "speaker", "raw_text", "text", "start_s", "end_s", "ref"],
                records=[
                    (cid, sid, i + 1, sp, text, text, i * 3.6, i * 3.6 + 3.0, f"turn {start + i}")
                    for i, (sp, text) in enumerate(lines)
                ],
            )
            entry_ids = [
                r[0]
                for r in await conn.fetch(
                    "SELECT id FROM session_entries WHERE campaign_id = $1 AND session_id = $2 ORDER BY seq", cid, sid
                )
            ]
            first_entry[sid] = entry_ids[0]
            # the mention index, as the chunk job writes it: who each line names (``Gazetteer.mentioned_ids`` of a
            # line without corrections). Without it "where was X said" read every session's lines by full text.
            mentions = [sorted({e.id for _, _, e in gazetteer.find(text, written=True)}) for _, text in lines]
            await conn.copy_records_to_table(
                "entity_mentions",
                columns=["campaign_id", "entity_id", "entry_id", "session_id"],
                records=[(cid, e, i, sid) for i, named_ids in zip(entry_ids, mentions, strict=True) for e in named_ids],
            )
            chunks = []
            vectors = unit_vectors(len(range(0, args.lines, WINDOW - 2)), nrng)
            named: set[int] = set()
            for k, i in enumerate(range(0, args.lines, WINDOW - 2)):
                window = lines[i : i + WINDOW]
                text = "\n".join(f"{sp}: {t}" for sp, t in window)
                mentioned = sorted({e for named_ids in mentions[i : i + WINDOW] for e in named_ids})
                named.update(mentioned)
                chunks.append(
                    (
                        cid,
                        sid,
                        f"s{sid}:{i + 1}",
                        text,
                        f"h{sid}:{i}",
                        vectors[k],
                        entry_ids[i : i + WINDOW],
                        sorted({sp for sp, _ in window}),
                        mentioned,
                        i * 3.6,
                        (i + len(window)) * 3.6,
                    )
                )
            await conn.copy_records_to_table(
                "chunks",
                columns=[
                    "campaign_id",
                    "session_id",
                    "key",
                    "text",
                    "content_hash",
                    "embedding",
                    "entry_ids",
                    "speakers",
                    "entity_ids",
                    "start_s",
                    "end_s",
                ],
                records=chunks,
            )
            # each line's own vector, as the chunk job writes it (a line too short to embed alone has none):
            # recall reads these, and the windows' vectors only for a campaign chunked before lines had them
            embedded = [len(text.split()) >= LINE_MIN_WORDS for _, text in lines]
            line_vectors = iter(unit_vectors(sum(embedded), nrng))
            await conn.copy_records_to_table(
                "line_vectors",
                columns=["campaign_id", "entry_id", "session_id", "content_hash", "embedding"],
                records=[
                    (cid, entry_id, sid, f"l{entry_id}", next(line_vectors) if alone else None)
                    for entry_id, alone in zip(entry_ids, embedded, strict=True)
                ],
            )
            named_in[sid] = named
            await conn.execute(
                "INSERT INTO ingest_progress (campaign_id, session_id, step, last_seq) "
                "SELECT $1, $2, step, $3 FROM unnest($4::text[]) step",
                cid,
                sid,
                args.lines,
                [jobs.CHUNK, jobs.EXTRACT, jobs.SUMMARY],  # the jobs' own steps: the mention index reads lk_chunk's
            )
            print(f"  session {s + 1}/{args.sessions} loaded", end="\r", flush=True)
        print()
        recaps = {}
        for s, sid in enumerate(sessions):
            recaps[sid] = await conn.fetchval(
                "INSERT INTO entities (campaign_id, type, name, description, provenance) "
                "VALUES ($1, 'event', $2, $3, $4) RETURNING id",
                cid,
                f"Session: Session {s + 1}",
                f"Session {s + 1}: the party went on.",
                {"source": "inferred", "session_id": sid},
            )

        # facts ---------------------------------------------------------------------------------------------
        next_id = await conn.fetchval("SELECT coalesce(max(id), 0) + 1 FROM relationships")
        facts: list[tuple[Any, ...]] = []
        when = base

        def fact(source_id: int, type_: str, target: int | None, value: str | None, **kw: Any) -> int:
            nonlocal next_id
            facts.append(
                (
                    next_id,
                    cid,
                    source_id,
                    type_,
                    target,
                    value,
                    kw.get("visibility", "public"),
                    kw.get("status", "accepted"),
                    json.dumps(kw["provenance"]),
                    kw["valid_from"],
                    None,
                    None,
                )
            )
            next_id += 1
            return len(facts) - 1

        for sid, named in named_in.items():
            for eid in sorted(named):
                prov = {"source": "inferred", "confidence": 1.0, "session_id": sid}
                fact(eid, "took_part_in", recaps[sid], None, provenance=prov, valid_from=base)
        current: dict[tuple[int, str], int] = {}  # the open attribute fact of (entity, type): the next one closes it
        edges: set[tuple[int, str, int]] = set()
        weights = [1 / (rank + 1) ** 1.1 for rank in range(len(order))]
        while len(facts) < args.facts:
            src = rng.choices(order, weights)[0]
            sid = rng.choice(sessions) if rng.random() < 0.7 else None
            when += timedelta(minutes=17)
            prov: dict[str, Any] = {"source": "dm", "dm_confirmed": True}
            if sid is not None:
                prov = {"source": "stated", "confidence": 0.8, "session_id": sid, "entry_ids": [first_entry[sid]]}
            secret = "secret" if rng.random() < 0.05 else "public"
            if rng.random() < 0.5:
                target = rng.choices(order, weights)[0]
                type_ = rng.choice(EDGES)
                if target == src or (src, type_, target) in edges:
                    continue
                edges.add((src, type_, target))
                fact(src, type_, target, None, provenance=prov, valid_from=when, visibility=secret)
            else:
                type_ = rng.choice(STATES)
                row = fact(
                    src, type_, None, f"{type_} {len(facts)}", provenance=prov, valid_from=when, visibility=secret
                )
                if (was := current.get((src, type_))) is not None:
                    facts[was] = (*facts[was][:10], when, facts[row][0])
                current[(src, type_)] = row
        # waiting for review: facts and entities the extractor proposed from the last sessions' lines
        for k in range(args.pending):
            sid = sessions[-1 - k % min(5, len(sessions))]
            prov = {"source": "inferred", "confidence": 0.5, "session_id": sid, "entry_ids": [first_entry[sid] + k]}
            fact(rng.choice(order), "mood", None, f"pending {k}", provenance=prov, valid_from=when, status="pending")
        await copy_json(
            conn,
            "relationships",
            [
                "id",
                "campaign_id",
                "source_id",
                "type",
                "target_id",
                "value",
                "visibility",
                "status",
                "provenance",
                "valid_from",
                "valid_to",
                "superseded_by",
            ],
            records=facts,
        )
        await conn.execute("SELECT setval('relationships_id_seq', $1)", next_id)
        await copy_json(
            conn,
            "entities",
            ["campaign_id", "type", "name", "status", "provenance"],
            records=[
                (
                    cid,
                    "npc",
                    f"Proposed Stranger {k}",
                    "pending",
                    json.dumps({"source": "inferred", "confidence": 0.5, "session_id": sessions[-1]}),
                )
                for k in range(args.pending // 3)
            ],
        )
        # the job queue a campaign's worker leaves: each session's jobs logged, two held after their last try
        logged = [
            (job, status, 0, f"lk_{kind}")
            for job in range(1, len(sessions) * 12 + 1)
            for kind in ["chunk"]
            for status in ("queued", "picked", "successful")
        ]
        await conn.copy_records_to_table(
            "pgqueuer_log", columns=["job_id", "status", "priority", "entrypoint"], records=logged
        )
        for sid in sessions[:2]:
            await conn.execute(
                "INSERT INTO pgqueuer (priority, status, entrypoint, payload) VALUES (0, 'failed', 'lk_extract', $1)",
                json.dumps({"campaign_id": cid, "session_id": sid}).encode(),
            )
        await conn.execute("SET maintenance_work_mem = '512MB'")
        await conn.execute("CREATE INDEX chunks_embedding ON chunks USING hnsw (embedding vector_cosine_ops)")
        await conn.execute(
            "CREATE INDEX line_vectors_embedding ON line_vectors USING hnsw (embedding halfvec_cosine_ops)"
        )
        await conn.execute("VACUUM ANALYZE")
    return {}


async def timed(fn: Callable[[], Awaitable[object]], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


async def rolled_back(memory: Memory, cid: int, fn: Callable[[CampaignMemory], Awaitable[object]]) -> float:
    """A command that writes, timed inside a transaction that is then rolled back (the commit itself is left out)."""
    async with memory.pool.acquire() as conn:
        tr = conn.transaction()
        await tr.start()
        try:
            started = time.perf_counter()
            await fn(CampaignMemory(conn, cid))
            return (time.perf_counter() - started) * 1000
        finally:
            await tr.rollback()


async def measure(memory: Memory, cid: int, args: argparse.Namespace) -> list[tuple[str, float]]:
    mem = memory.campaign(cid)
    n = args.repeat
    rows: list[tuple[str, float]] = []
    sessions = await mem.log.sessions()
    middle = sessions[len(sessions) // 2]
    middle_lines = await mem.log.entry_count(middle.id)
    query_vectors = unit_vectors(len(QUERIES), np.random.default_rng(11))

    async def listing(dm: bool) -> None:
        await mem.graph.list_entities(include_secret=dm)
        if not dm:
            await mem.graph.player_mask()

    async def show(name: str, *, history: bool) -> None:
        snap = await mem.graph.snapshot(name, include_secret=True)
        snap.facts_and_sessions(10, str)
        await mem.graph.last_mention(snap.entity)
        if history:
            await mem.graph.history(snap.entity.id, include_secret=True)

    async def recalls() -> None:
        for query, vector in zip(QUERIES, query_vectors, strict=True):
            await recall(mem, None, query, embedding=vector.tolist())
            await named_entities(mem, query, dm=True)

    async def searches() -> None:
        for query, vector in zip(QUERIES, query_vectors, strict=True):
            await recall(mem, None, query, embedding=vector.tolist())

    async def nearest(kept: dict[str, Any], exact_scan_lines: int) -> None:
        shown, semantic.EXACT_SCAN_LINES = semantic.EXACT_SCAN_LINES, exact_scan_lines
        try:
            for vector in query_vectors:
                await mem.semantic.nearest_lines(vector.tolist(), k=20, **kept)
        finally:
            semantic.EXACT_SCAN_LINES = shown

    async def recap() -> None:
        mask = await mem.graph.player_mask()
        chosen = await mem.log.session_by_title(middle.title)
        assert chosen is not None and chosen.summary
        jobs.recap_for_players(chosen.summary, mask)

    async def review() -> None:
        await mem.review.pending(limit=25)
        await mem.review.count()

    async def first_index() -> None:
        await CorrectionIndexCache().matcher(mem)

    async def add(label: str, fn: Callable[[], Awaitable[object]], repeat: int = n) -> None:
        if not args.only or any(o.casefold() in label.casefold() for o in args.only):
            rows.append((label, await timed(fn, repeat)))

    async def add_written(label: str, fn: Callable[[CampaignMemory], Awaitable[object]], repeat: int = 1) -> None:
        if not args.only or any(o.casefold() in label.casefold() for o in args.only):
            rows.append((label, statistics.median([await rolled_back(memory, cid, fn) for _ in range(repeat)])))

    await add("entity list (DM: all, for the pages)", lambda: listing(True))
    await add("entity list (a player: public, masked)", lambda: listing(False))
    for name in BUSY:
        await add(f"entity show {name}", lambda name=name: show(name, history=False))
        await add(f"entity show {name} history", lambda name=name: show(name, history=True))
    await add(f"recall ({len(QUERIES)} queries, with named entities)", recalls)
    await add(f"recall ({len(QUERIES)} queries), the search alone", searches)
    # "the DM" is each session's narrator, found from the words each speaker said in it
    asked = f"what did the DM say about {QUERIES[-1]}"
    await add(f"recall '{asked}'", lambda: recall(mem, None, asked, embedding=query_vectors[-1].tolist()))
    for query in QUERIES:
        await add(f"named entities of '{query}'", lambda query=query: named_entities(mem, query, dm=True))
    # the vector half under a filter: always the HNSW walk (EXACT_SCAN_LINES -1) against today's choice
    said = await mem.db.fetch(
        "SELECT lower(speaker) AS who, count(*) AS n FROM session_entries WHERE campaign_id = $1 "
        "GROUP BY 1 HAVING count(*) >= 100 ORDER BY 2",
        cid,
    )
    filters: list[tuple[str, dict[str, Any]]] = [
        (f"the last session ({await mem.log.entry_count(sessions[-1].id):,} lines)", {"session_id": sessions[-1].id}),
        (f"the fewest-spoken speaker ({said[0]['n']:,} lines)", {"speakers": [said[0]["who"]]}),
        (f"the most-spoken speaker ({said[-1]['n']:,} lines)", {"speakers": [said[-1]["who"]]}),
        ("a speaker with no line", {"speakers": ["nobody at all"]}),
    ]
    for label, kept in filters:
        for way, most in (
            ("HNSW walk", -1),
            (f"read whole up to {semantic.EXACT_SCAN_LINES:,}", semantic.EXACT_SCAN_LINES),
        ):
            await add(f"vector lines, {label}: {way}", lambda kept=kept, most=most: nearest(kept, most))
    await add("search 'dragon'", lambda: mem.log.search("dragon"))
    await add("search 'Keyleth', one session", lambda: mem.log.search("Keyleth", session_id=middle.id))
    await add("review list (25) + count", review)
    await add("session list", mem.log.listed)
    await add("recap of a session (players' copy)", recap)
    await add("jobs list", lambda: jobs.held_jobs(memory.pool, cid))
    await add("correction index, first build (1,500 entities)", first_index, 1)
    await add("correction index, a new cache", first_index)

    exported: list[str] = []

    async def export() -> None:
        exported.append(dump_campaign_file(await export_campaign_file(mem, on_skip=lambda _: None)))

    await add("campaign export", export)
    if not exported:
        await export()
    text = exported[-1]
    parsed = parse_campaign_file(text, "export.yaml", max_bytes=10 * 2**20)
    await add_written(
        f"campaign load, {len(parsed.entities):,} entities, no change", lambda m: apply_campaign_file(m, parsed)
    )
    changed = parse_campaign_file(
        text.replace(f"{BUSY[0]}, as the table knows them.", "Changed.", 1), "export.yaml", max_bytes=10 * 2**20
    )
    await add_written("campaign load, one description changed", lambda m: apply_campaign_file(m, changed))
    # a file loaded again with one NPC more: its names are looked for in the sessions' lines, no other's
    npc = EntitySpec(name="Corvin Ash", type=EntityType.npc, aliases=["the ferryman"])
    added = parsed.model_copy(update={"entities": [*parsed.entities, npc]})
    await add_written("campaign load, one NPC added", lambda m: apply_campaign_file(m, added), n)
    await add_written(
        f"entity edit {BUSY[0]} --new-name", lambda m: m.graph.update_entity(BUSY[0], new_name="Grog the Mighty")
    )
    await add_written(f"entity merge {BUSY[1]} into {BUSY[0]}", lambda m: m.graph.merge_entities(BUSY[1], BUSY[0]))
    # who took part, found again from the sessions' lines: an entity accepted, a campaign file loaded after the
    # sessions (every entity), a heard-as phrase taken away (one session's lines read again); with each session's
    # told lines kept (as the first look after its recap leaves them), and with none kept yet
    busy = (await mem.graph.get_entity(BUSY[0])).id
    everyone = [e.id for e in await mem.graph.list_entities() if e.type != EntityType.event]
    took_part: list[tuple[str, Callable[[CampaignMemory], Awaitable[object]]]] = [
        (f"{BUSY[0]} accepted", lambda m: link_to_recaps(m.graph, [busy])),
        (f"a campaign file's {len(everyone):,} entities", lambda m: link_to_recaps(m.graph, everyone)),
        (f"heard-as undone, {BUSY[0]} in a session", lambda m: unlink_unnamed(m.graph, busy, middle.id)),
    ]
    if not args.only or any(
        o.casefold() in f"took part: {label}".casefold() for o in args.only for label, _ in took_part
    ):
        await told_in(mem.graph, [s.id for s in sessions])

    def none_kept(fn: Callable[[CampaignMemory], Awaitable[object]]) -> Callable[[CampaignMemory], Awaitable[object]]:
        async def run(m: CampaignMemory) -> object:
            await m.db.execute("DELETE FROM session_told")
            return await fn(m)

        return run

    for label, fn in took_part:
        await add_written(f"took part: {label}", fn, n)
        await add_written(f"took part: {label}, none kept", none_kept(fn), n)
    await add_written(f"session delete (one of {middle_lines:,} lines)", lambda m: m.delete_session(middle.title))
    return rows


async def main(args: argparse.Namespace) -> None:
    root = Path(args.data) if args.data else Path(tempfile.mkdtemp(prefix="lk-bench-scale-", dir="/tmp"))
    server = EmbeddedPostgres(root)
    dsn = server.start()
    try:
        pool = await create_pool(dsn, max_size=4)
        await migrate(pool, EmbeddingSpec("all-MiniLM-L6-v2", DIM))
        memory = Memory(pool)
        found = await pool.fetchval("SELECT id FROM campaigns WHERE name = $1", CAMPAIGN)
        if found is None or not args.reuse:
            if found is not None:
                await memory.campaigns().delete(CAMPAIGN)
            camp = await memory.campaigns().create(CAMPAIGN)
            started = time.perf_counter()
            await build(memory.campaign(camp.id), args)
            print(f"built in {time.perf_counter() - started:.0f} s")
            found = camp.id
        counts = await pool.fetchrow(
            """
            SELECT (SELECT count(*) FROM sessions WHERE campaign_id = $1) AS sessions,
                   (SELECT count(*) FROM session_entries WHERE campaign_id = $1) AS lines,
                   (SELECT count(*) FROM chunks WHERE campaign_id = $1) AS chunks,
                   (SELECT count(*) FROM entities WHERE campaign_id = $1 AND status = 'accepted') AS entities,
                   (SELECT count(*) FROM relationships WHERE campaign_id = $1) AS facts,
                   (SELECT count(*) FROM relationships WHERE campaign_id = $1 AND valid_to IS NOT NULL) AS closed,
                   pg_size_pretty(pg_database_size(current_database())) AS size
            """,
            found,
        )
        rows = await measure(memory, found, args)
        await pool.close()
    finally:
        server.stop()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    c = dict(counts)
    print(
        f"\n{c['sessions']} sessions, {c['lines']:,} lines, {c['chunks']:,} passages, {c['entities']:,} entities, "
        f"{c['facts']:,} facts ({c['closed']:,} closed); database {c['size']}; median of {args.repeat}"
    )
    print(f"| {'command':<52} | {'ms':>8} |")
    print(f"|{'-' * 54}|{'-' * 10}|")
    for label, ms in rows:
        print(f"| {label:<52} | {ms:>8,.0f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--lines", type=int, default=4000, help="lines a session")
    parser.add_argument("--entities", type=int, default=1500)
    parser.add_argument("--facts", type=int, default=30_000, help="facts in all, recap links included")
    parser.add_argument(
        "--pending", type=int, default=300, help="facts waiting for review (and a third as many entities)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command that only reads")
    parser.add_argument("--data", help="data dir of the embedded PostgreSQL (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep --data's database afterwards")
    parser.add_argument("--only", nargs="*", help="time only the commands whose label holds one of these words")
    parser.add_argument("--reuse", action="store_true", help="time the campaign already in --data, if there is one")
    asyncio.run(main(parser.parse_args()))
