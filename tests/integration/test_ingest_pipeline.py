"""The ingestion pipeline on the real embedded PostgreSQL with the real MiniLM model: recorder, jobs, recall."""

from __future__ import annotations

import asyncio
import codecs
import hashlib
import json
import os
import random
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from pydantic import ValidationError

from bot.cli.recall import print_hits
from campaigns.files import read_campaign_file
from campaigns.load import apply_campaign_file
from cogs.recall import cite
from memory import jobs
from memory.chunking import windows
from memory.errors import AlreadyDecidedError, AlreadyExistsError, InvalidInputError
from memory.graph.took_part import told_in, told_rules
from memory.ingest import IngestReport, import_counts, ingest_file
from memory.models import Entity, EntityIn, EntityType, Entry, EntryIn, ReviewStatus
from memory.offgame import told_lines
from memory.providers.embeddings import MiniLMEmbedder
from memory.recall import QUERY_CHARS, named_entities, recall
from memory.recorder import CorrectionIndexCache, SessionRecorder, Utterance, Word
from memory.store import CampaignMemory, Memory
from memory.transcripts import MAX_CRD3_BYTES, Line, TranscriptError, read_transcript

EXAMPLES = Path(__file__).resolve().parents[2] / "campaigns" / "examples"
SAMPLE = EXAMPLES / "sunken_crown_session1.jsonl"


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.fixture
async def crown(campaign: CampaignMemory) -> CampaignMemory:
    await apply_campaign_file(campaign, read_campaign_file(EXAMPLES / "sunken_crown.yaml"))
    return campaign


def job_context(memory: Memory, embedder: MiniLMEmbedder) -> jobs.JobContext:
    return jobs.JobContext(memory=memory, embedder=embedder, embedding_model=MiniLMEmbedder.model_name)


async def run_jobs(memory: Memory, embedder: MiniLMEmbedder) -> jobs.JobContext:
    ctx = await jobs.run_workers(memory.pool, None, drain=True, ctx=job_context(memory, embedder))
    assert await jobs.pending_jobs(memory.pool) == 0
    assert await jobs.failed_jobs(memory.pool) == 0
    return ctx


async def queued(pool: asyncpg.Pool) -> list[str]:
    return [r[0] for r in await pool.fetch("SELECT entrypoint FROM pgqueuer ORDER BY entrypoint")]


async def test_recorder_writes_raw_and_corrected_with_its_jobs(crown: CampaignMemory, pool: asyncpg.Pool) -> None:
    rec = await SessionRecorder.start(crown, "Session 1", batch_size=10)
    await rec.add(Utterance(speaker="DM", text="The fishermen blame elder nacks.", start_s=1.0, end_s=3.0, ref="a1"))
    await rec.flush()
    (entry,) = await crown.log.session_entries(rec.session.id)
    assert entry.raw_text == "The fishermen blame elder nacks."
    assert entry.text == "The fishermen blame Eldrinax."
    assert [(c.span, c.replacement) for c in entry.corrections] == [("elder nacks", "Eldrinax")]
    assert await queued(pool) == [jobs.CHUNK, jobs.EXTRACT]


async def test_a_persons_last_name_misheard_alone_is_corrected_to_that_person(campaign: CampaignMemory) -> None:
    """A 1920s table calls an npc by the last name alone, everyday English split in two ("Whit lock" / Edgar
    Whitlock): said as a name, it is that person's, and the line names them; the same words of a shop are not."""
    whitlock = await campaign.graph.add_entity(EntityIn(name="Edgar Whitlock", type=EntityType.npc))
    await campaign.graph.add_entity(EntityIn(name="Lockwood Manor", type=EntityType.location))
    rec = await SessionRecorder.start(campaign, "Night 1", index_cache=CorrectionIndexCache())
    await rec.add_many(
        [
            Utterance(speaker="Marco", text="Whit lock. Got it. Tommy writes it in his little notebook."),
            Utterance(speaker="Jess", text="Lock wood. Like the manor."),
        ]
    )
    await rec.flush()
    said, manor = await campaign.log.session_entries(rec.session.id)
    assert said.text == "Whitlock. Got it. Tommy writes it in his little notebook."
    assert [(c.span, c.replacement, c.entity_id) for c in said.corrections] == [("Whit lock", "Whitlock", whitlock.id)]
    assert manor.corrections == []  # a place's last word is no one's last name


async def test_a_failed_write_enqueues_nothing(crown: CampaignMemory, pool: asyncpg.Pool) -> None:
    rec = await SessionRecorder.start(crown, "Session 1", batch_size=10)
    # Two utterances claiming the same position: the insert fails as a whole.
    await rec.add(Utterance(speaker="DM", text="one", seq=1))
    await rec.add(Utterance(speaker="DM", text="two", seq=1))
    with pytest.raises(asyncpg.PostgresError):
        await rec.flush()
    assert await crown.log.session_entries(rec.session.id) == []
    assert await queued(pool) == []


async def table_digest(pool: asyncpg.Pool, campaign_id: int) -> dict[str, str]:
    """A digest of every row the pipeline writes, ids and content, to prove a re-run changed nothing."""
    queries = {
        "entries": "SELECT id, seq, raw_text, text, corrections::text FROM session_entries WHERE campaign_id = $1",
        "chunks": "SELECT id, key, content_hash, entry_ids, entity_ids FROM chunks WHERE campaign_id = $1",
        "entities": "SELECT id, name, status, description FROM entities WHERE campaign_id = $1",
        "facts": "SELECT id, source_id, type, target_id, value, status FROM relationships WHERE campaign_id = $1",
        "sessions": "SELECT id, title, summary FROM sessions WHERE campaign_id = $1",
    }
    out = {}
    for name, sql in queries.items():
        rows = await pool.fetch(sql + " ORDER BY 1", campaign_id)
        out[name] = f"{len(rows)}:" + hashlib.sha256(repr([tuple(r) for r in rows]).encode()).hexdigest()[:16]
    out["cache"] = str(await pool.fetchval("SELECT count(*) FROM embedding_cache"))
    return out


async def test_sample_session_end_to_end_and_idempotent(
    crown: CampaignMemory, memory: Memory, pool: asyncpg.Pool, embedder: MiniLMEmbedder
) -> None:
    report = await ingest_file(crown, SAMPLE, session_title="Session 1")
    assert report.lines == report.written == 60 and report.skipped == []
    assert report.corrections >= 5
    await run_jobs(memory, embedder)

    session = await crown.log.session_by_title("Session 1")
    assert session is not None and session.ended_at is not None
    entries = await crown.log.session_entries(session.id)
    chunks = await crown.semantic.session_chunks(session.id)
    assert {c.key for c in chunks} == {w.key for w in windows(entries)}
    assert {i for c in chunks for i in c.entry_ids} == {e.id for e in entries}  # every line is searchable
    eldrinax = await crown.graph.get_entity("Eldrinax")
    assert any(eldrinax.id in c.entity_ids for c in chunks)
    # Real MiniLM vectors on the lines: unit length, and a paraphrase finds the right line. Windows keep their
    # lines and mentions without a vector of their own (recall reads the lines').
    norms = await pool.fetch(
        "SELECT l2_norm(embedding) AS n FROM line_vectors WHERE campaign_id = $1 AND embedding IS NOT NULL",
        crown.campaign_id,
    )
    assert len(norms) >= 40 and all(abs(r["n"] - 1.0) < 1e-2 for r in norms)
    assert await pool.fetchval("SELECT count(*) FROM chunks WHERE embedding IS NOT NULL") == 0
    (query,) = await embedder.embed(["the blacksmith who made the holy symbol"])
    (top, *_) = await crown.semantic.nearest_lines(query, k=3)
    assert "blacksmith" in (await crown.log.entries([top.entry_id]))[0].text.casefold()

    # The summary: stored with the session and as an event linked to those who took part.
    assert session.summary and "Eldrinax" in session.summary
    event = await crown.graph.get_entity("Session 1")  # not "Session: Session 1"
    assert event.type == "event" and event.description == session.summary[:2000]
    links = await crown.graph.relationships_of(event.id)
    linked = {r.source_id for r in links if r.type == "took_part_in"}
    assert eldrinax.id in linked and len(linked) >= 5

    # Extraction ran on every entry: the review queue has the offline extractor's proposals.
    assert await crown.review.count() > 0

    before = await table_digest(pool, crown.campaign_id)
    again = await ingest_file(crown, SAMPLE, session_title="Session 1")
    assert again.lines == 60 and again.written == 0
    await run_jobs(memory, embedder)
    assert await table_digest(pool, crown.campaign_id) == before


async def test_jsonl_sessions_split_in_order(crown: CampaignMemory, tmp_path: Path) -> None:
    path = tmp_path / "two.jsonl"
    lines = [{"speaker": "DM", "text": f"line {i}", "session": "Night 2" if i > 2 else "Night 1"} for i in range(5)]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    report = await ingest_file(crown, path)
    assert report.sessions == ["Night 1", "Night 2"]
    assert [s.title for s in await crown.log.sessions()] == ["Night 1", "Night 2"]


async def test_poisoned_lines_are_skipped_and_named(crown: CampaignMemory, tmp_path: Path) -> None:
    good = json.dumps({"speaker": "Ana", "text": "Thess looks for tracks.", "ref": "ok1"}).encode()
    path = tmp_path / "poisoned.jsonl"
    path.write_bytes(
        b"\n".join(
            [
                good,
                b"\x00\x01\x02\xff\xfe binary \x03\x04\x05\x06\x07",
                json.dumps({"speaker": "Ben", "text": "x" * 1_100_000}).encode(),
                b'{"speaker": "Cleo", "text": "caf\xe9 au lait"}',
                b'{"speaker": "Dev" "text": nope}',
                # valid JSON the database cannot keep: a NUL escaped in a value, a start that is no number
                json.dumps({"speaker": "Ben", "text": "nul \x00 inside"}).encode(),
                json.dumps({"speaker": "Ben\x00", "text": "nul in the speaker"}).encode(),
                json.dumps({"speaker": "Ben", "text": "nul in the session", "session": "a\x00b"}).encode(),
                b'{"speaker": "Ben", "text": "no time", "start": NaN}',
                json.dumps({"speaker": "Dev", "text": "Dunmore hides.", "ref": "ok2"}).encode(),
            ]
        )
        + b"\n"
    )
    report = await ingest_file(crown, path, session_title="Poison")
    assert report.written == 2
    assert [m.split(": skipped: ")[0] for m in report.skipped] == [f"poisoned.jsonl:{n}" for n in range(2, 10)]
    assert "UTF-8" in report.skipped[2] and "bytes" in report.skipped[1] and "JSON" in report.skipped[3]
    assert report.skipped[4].endswith("invalid field: text: contains a NUL character (U+0000), which cannot be stored")
    assert "speaker: contains a NUL" in report.skipped[5] and "session title contains a NUL" in report.skipped[6]
    assert report.skipped[7].endswith("start_s: must be a finite number, not nan")
    session = await crown.log.session_by_title("Poison")
    assert session is not None
    assert [e.ref for e in await crown.log.session_entries(session.id)] == ["ok1", "ok2"]


async def test_a_jsonl_field_of_the_wrong_kind_is_refused_not_turned_into_text(
    crown: CampaignMemory, tmp_path: Path
) -> None:
    """``"word": null`` became the word "None", ``"ref": {"a": 1}`` the ref "{'a': 1}"; a confidence of 5 (an STT
    gives probabilities) was kept."""
    said = {"speaker": "Ana", "text": "Thess looks."}
    lines = [
        {**said, "ref": "ok", "speaker_id": 1234, "words": [{"word": "Thess", "probability": 0.9}, {"word": "looks"}]},
        {**said, "words": [{"word": None, "confidence": 0.5}]},
        {**said, "words": [{"word": "Thess", "confidence": 5}]},
        {**said, "words": ["Thess"]},
        {**said, "words": "Thess looks."},
        {**said, "ref": {"a": 1}},
        {**said, "speaker_id": ["x"]},
        {**said, "session": True},
        {**said, "ref": 7},
    ]
    why, entries = await ingest_jsonl(crown, tmp_path / "kinds.jsonl", lines, kept=[1, 9])
    first = next(iter(read_transcript(tmp_path / "kinds.jsonl")))
    assert isinstance(first, Line) and first.utterance.words == [
        Word(word="Thess", confidence=0.9),
        Word(word="looks", confidence=None),
    ]
    assert why == [
        "words.0.word: Input should be a valid string",
        "words.0.confidence: Input should be less than or equal to 1",
        "words.0: Input should be a valid dictionary or instance of Word",
        "words: Input should be a valid list",
        "ref: must be text or a number, not a mapping",
        "speaker_id: must be text or a number, not a list",
        "session: must be text or a number, not true (true/false)",
    ]
    assert [(e.ref, e.speaker_id) for e in entries] == [("ok", "1234"), ("7", None)]


async def ingest_jsonl(
    crown: CampaignMemory, path: Path, lines: list[dict[str, object]], kept: list[int]
) -> tuple[list[str], list[Entry]]:
    """``lines`` ingested as the .jsonl file ``path``: why each line but those ``kept`` (numbered from 1) was
    skipped, in order, and the entries stored."""
    await asyncio.to_thread(path.write_text, "".join(json.dumps(line) + "\n" for line in lines))
    report = await ingest_file(crown, path, session_title=path.stem)
    skipped = [n for n in range(1, len(lines) + 1) if n not in kept]
    assert [m.split(": skipped:")[0] for m in report.skipped] == [f"{path.name}:{n}" for n in skipped]
    session = await crown.log.session_by_title(path.stem)
    assert session is not None
    why = [m.split(": skipped: invalid field: ")[1] for m in report.skipped]
    return why, await crown.log.session_entries(session.id)


async def test_a_jsonl_number_of_the_wrong_kind_is_refused_not_made_up(crown: CampaignMemory, tmp_path: Path) -> None:
    """``"confidence": true`` was read as 1.0 (a bool is an int in Python), ``"words": {}`` as no words and
    ``"start": []`` as 0."""
    said = {"speaker": "Ana", "text": "Thess looks."}
    lines = [
        {**said, "ref": "ok", "start": 2, "end": 3.5, "words": [], "ignored": True},
        {**said, "words": [{"word": "Thess", "confidence": True}]},
        {**said, "words": [{"word": "Thess", "confidence": 0.9}, {"word": "looks", "probability": False}]},
        {**said, "words": [{"word": "Thess", "confidence": "0.9"}]},
        {**said, "words": {}},
        {**said, "words": False},
        {**said, "start": True},
        {**said, "start": []},
        {**said, "end": "soon"},
    ]
    why, entries = await ingest_jsonl(crown, tmp_path / "numbers.jsonl", lines, kept=[1])
    assert why == [
        "words.0.confidence: must be a number, not true (true/false)",
        "words.1.confidence: must be a number, not false (true/false)",
        "words.0.confidence: must be a number, not '0.9'",
        "words: Input should be a valid list",
        "words: Input should be a valid list",
        "start: must be a number, not true (true/false)",
        "start: must be a number, not a list",
        "end: must be seconds, hh:mm:ss or an ISO 8601 time, not 'soon'",
    ]
    assert [(e.ref, e.start_s, e.end_s) for e in entries] == [("ok", 2.0, 3.5)]


async def test_jsonl_times_as_exported_transcripts_write_them(crown: CampaignMemory, tmp_path: Path) -> None:
    """``hh:mm:ss`` is a time into the session; ISO 8601 times count from the file's first one (419 lines of an
    export were all skipped: "start: must be a number")."""
    said = {"speaker": "Ana", "text": "Thess looks."}
    clocks = [
        {**said, "ref": "a", "start": "00:00:05", "end": "0:07"},
        {**said, "ref": "b", "start": "1:02:03.5", "end": "01:02:04,250"},
        {**said, "ref": "c", "start": "12.5"},
    ]
    why, entries = await ingest_jsonl(crown, tmp_path / "clocks.jsonl", clocks, kept=[1, 2, 3])
    assert why == []
    assert [(e.ref, e.start_s, e.end_s) for e in entries] == [
        ("a", 5.0, 7.0),
        ("b", 3723.5, 3724.25),
        ("c", 12.5, None),
    ]
    said = {"speaker": "Ben", "text": "The bell rings."}  # other lines: not the same transcript again
    iso = [
        {**said, "ref": "a", "start": "2026-03-02T19:30:00Z", "end": "2026-03-02T19:30:04.5Z"},
        {**said, "ref": "b", "start": "2026-03-02T20:30:00+01:00"},  # the same instant as the first, zoned
        {**said, "ref": "c", "start": "2026-03-02T19:31:00Z"},
        {**said, "ref": "d", "start": "2026-03-02T19:29:00Z"},  # before the first line: refused as -60 s is
        {**said, "ref": "e", "start": "yesterday"},
    ]
    why, entries = await ingest_jsonl(crown, tmp_path / "iso.jsonl", iso, kept=[1, 2, 3])
    assert why == [
        "start_s: must not be negative (seconds from the session start), not -60.0",
        "start: must be seconds, hh:mm:ss or an ISO 8601 time, not 'yesterday'",
    ]
    assert sorted((e.ref, e.start_s, e.end_s) for e in entries) == [
        ("a", 0.0, 4.5),
        ("b", 0.0, None),
        ("c", 60.0, None),
    ]


async def test_times_before_the_session_start_are_refused(crown: CampaignMemory, tmp_path: Path) -> None:
    path = tmp_path / "early.jsonl"
    lines = [
        {"speaker": "Ana", "text": "Too early.", "start": -2.5},
        {"speaker": "Ana", "text": "Ended before it began.", "start": 1.0, "end": -1},
        {"speaker": "Ben", "text": "On time.", "start": 0.0, "end": 1.5, "ref": "ok"},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    report = await ingest_file(crown, path, session_title="Early")
    assert report.skipped == [
        "early.jsonl:1: skipped: invalid field: start_s: must not be negative (seconds from the session start), "
        "not -2.5",
        "early.jsonl:2: skipped: invalid field: end_s: must not be negative (seconds from the session start), not -1.0",
    ]
    session = await crown.log.session_by_title("Early")
    assert session is not None
    assert [e.ref for e in await crown.log.session_entries(session.id)] == ["ok"]
    # the session log's own edge refuses it too
    with pytest.raises(ValidationError, match=r"start_s\n.*must not be negative"):
        await crown.log.write(session.id, EntryIn(speaker="Ana", text="Too early.", start_s=-0.1))


async def test_txt_and_crd3_formats(crown: CampaignMemory, tmp_path: Path) -> None:
    txt = tmp_path / "night.txt"
    txt.write_text("DM: You reach iron hold.\nno colon here\nAna: Thess draws her bow.\n")
    report = await ingest_file(crown, txt)
    assert report.written == 2
    assert report.skipped == ['night.txt:2: skipped: expected "Speaker: text" or "[hh:mm:ss] Speaker: text"']
    crd3 = tmp_path / "C9E001.json"
    turns = [{"NAMES": ["MATT"], "UTTERANCES": ["Welcome back.", "Roll initiative."], "NUMBER": 0}]
    turns.append({"NAMES": ["LAURA", "SAM"], "UTTERANCES": ["Yes!"], "NUMBER": 1})
    turns.append({"NAMES": "LAURA", "UTTERANCES": "Letter by letter?", "NUMBER": 2})  # text, not lists
    turns.append({"NAMES": [None], "UTTERANCES": ["Who said this?"], "NUMBER": 3})
    turns.append({"NAMES": ["SAM"], "UTTERANCES": ["nul \x00 inside"], "NUMBER": 4})
    turns.append({"NAMES": ["SAM"], "UTTERANCES": ["Which turn?"], "NUMBER": {"x": 1}})
    turns.append({"NAMES": ["DM", "McKenna"], "UTTERANCES": ["Names as written."], "NUMBER": 6})
    crd3.write_text(json.dumps({"METADATA": {}, "TURNS": turns}))
    report = await ingest_file(crown, crd3)
    assert [m.split(": skipped: ")[1] for m in report.skipped] == [
        "expected NAMES and UTTERANCES, each a list of text",
        "expected NAMES and UTTERANCES, each a list of text",
        "invalid field: text: contains a NUL character (U+0000), which cannot be stored",
        "invalid field: NUMBER: must be a whole number, not a mapping",
    ]
    session = await crown.log.session_by_title("C9E001")
    assert session is not None
    entries = await crown.log.session_entries(session.id)
    assert [(e.speaker, e.text, e.ref) for e in entries] == [
        ("Matt", "Welcome back. Roll initiative.", "turn 0"),
        ("Laura & Sam", "Yes!", "turn 1"),
        ("DM & McKenna", "Names as written.", "turn 6"),
    ]


async def test_an_srt_transcript_is_stored_a_line_per_cue_with_names_corrected(
    crown: CampaignMemory, tmp_path: Path
) -> None:
    """Subtitles (Whisper, Craig, YouTube) were refused as an unknown format; a cue is a line at its start time."""
    srt = tmp_path / "night 2.srt"
    srt.write_bytes(
        codecs.BOM_UTF8
        + (
            "1\r\n00:00:01,000 --> 00:00:03,500\r\nDM: The fishermen blame\r\n<i>elder nacks.</i>\r\n\r\n"
            "2\r\n00:00:04,000 --> 00:00:05,000\r\n\r\n"
            "3\r\n00:01:02,250 --> 00:01:04,000\r\nAna: Thess draws her bow — now.\r\n\r\n"
            "4\r\n00:01:05,000 --> 00:01:06,000\r\nWe go to iron hold.\r\n\r\n"
        ).encode()
    )
    report = await ingest_file(crown, srt)
    assert (report.written, report.skipped, report.sessions) == (3, [], ["night 2"])
    session = await crown.log.session_by_title("night 2")
    assert session is not None
    entries = await crown.log.session_entries(session.id)
    assert [(e.seq, e.speaker, e.raw_text, e.text, e.start_s, e.end_s, e.ref) for e in entries] == [
        (2, "DM", "The fishermen blame elder nacks.", "The fishermen blame Eldrinax.", 1.0, 3.5, "night 2.srt:2"),
        (10, "Ana", "Thess draws her bow — now.", "Thess draws her bow — now.", 62.25, 64.0, "night 2.srt:10"),
        (14, "Ana", "We go to iron hold.", "We go to Ironhold.", 65.0, 66.0, "night 2.srt:14"),
    ]
    assert (await ingest_file(crown, srt)).written == 0  # the same file again lands on the same lines

    garbage = tmp_path / "garbage.vtt"
    garbage.write_text("WEBVTT\n\nnot a cue\n")
    with pytest.raises(TranscriptError, match=r"^garbage\.vtt: no subtitle cues in it"):
        await ingest_file(crown, garbage, again=True)  # no first pass: refused all the same before a line is stored
    assert [s.title for s in await crown.log.sessions()] == ["night 2"]


async def test_an_srt_mended_after_a_cue_was_skipped_fills_its_place_when_imported_again(
    campaign: CampaignMemory, tmp_path: Path
) -> None:
    """The skip names the cue to mend; imported again, the mended cue fills its place as a .txt line does. Its
    lines were numbered by count, so every cue after it clashed with the stored ones and the import was refused."""
    cue = "{0}\n00:00:0{0},000 --> 00:00:0{0},500\n{1}\n\n".format
    good, after = "".join(cue(i, f"Line {i}") for i in range(1, 5)), cue(6, "Line 6") + cue(7, "Line 7")
    (srt := tmp_path / "night.srt").write_bytes(good.encode() + cue(5, "Café").encode("cp1252") + after.encode())
    assert (await ingest_file(campaign, srt)).skipped == [
        "night.srt:19: skipped: not valid UTF-8 (byte 4): cue 5 skipped"
    ]
    srt.write_text(good + cue(5, "Café") + after)
    report = await ingest_file(campaign, srt)
    assert (report.written, report.skipped) == (1, [])
    session = await campaign.log.session_by_title("night")
    assert session is not None
    assert [(e.raw_text, e.start_s) for e in await campaign.log.session_entries(session.id)] == [
        *((f"Line {i}", float(i)) for i in range(1, 5)),
        ("Café", 5.0),
        ("Line 6", 6.0),
        ("Line 7", 7.0),
    ]


async def test_a_crd3_file_imported_when_speakers_were_cased_otherwise_is_the_same_transcript(
    crown: CampaignMemory, tmp_path: Path
) -> None:
    """Earlier versions stored CRD3's "DM" as "Dm": importing the file again (into its session, or under another
    title) must still know it, not call it another transcript or import a copy."""
    crd3 = tmp_path / "C9E004.json"
    turns = [{"NAMES": ["DM"], "UTTERANCES": [f"Line {n}."], "NUMBER": n} for n in range(4)]
    crd3.write_text(json.dumps({"TURNS": turns}))
    assert (await ingest_file(crown, crd3)).written == 4
    session = await crown.log.session_by_title("C9E004")
    assert session is not None
    await crown.db.execute(  # as an earlier version wrote it
        "UPDATE session_entries SET speaker = 'Dm' WHERE campaign_id = $1 AND session_id = $2",
        crown.campaign_id,
        session.id,
    )
    assert (await ingest_file(crown, crd3)).written == 0
    with pytest.raises(AlreadyExistsError, match="already imported as session 'C9E004'"):
        await ingest_file(crown, crd3, session_title="Episode 4")


async def test_a_crd3_turn_the_database_cannot_index_is_skipped_and_the_rest_imported(
    crown: CampaignMemory, tmp_path: Path
) -> None:
    crd3 = tmp_path / "C9E002.json"
    turns = [{"NAMES": ["MATT"], "UTTERANCES": [f"Line {i}."], "NUMBER": i} for i in range(5)]
    # 1 MB of distinct words: its full-text index entry is over PostgreSQL's 1 MB tsvector limit
    rnd = random.Random(0)
    turns[1]["UTTERANCES"] = [" ".join("".join(rnd.choices("abcdefghij", k=6)) for _ in range(150_000))]
    turns[3]["NAMES"] = ["SAM" * 1000]  # longer than an index entry can hold
    crd3.write_text(json.dumps({"TURNS": turns}))
    report = await ingest_file(crown, crd3)
    assert report.skipped == [
        "C9E002.json:2: skipped: invalid field: text: is 1,049,999 bytes long, longer than 65,536",
        "C9E002.json:4: skipped: invalid field: speaker: is 3,000 characters long, longer than 200",
    ]
    session = await crown.log.session_by_title("C9E002")
    assert session is not None and session.ended_at is not None
    assert [e.ref for e in await crown.log.session_entries(session.id)] == ["turn 0", "turn 2", "turn 4"]


async def test_a_crd3_file_too_big_to_read_whole_is_refused_before_it_is_read(
    crown: CampaignMemory, tmp_path: Path
) -> None:
    """A CRD3 episode is one JSON document, read whole: 212 MB took about 1 GB of memory."""
    crd3 = tmp_path / "C9E003.json"
    crd3.write_text(json.dumps({"TURNS": []}))
    os.truncate(crd3, MAX_CRD3_BYTES + 1)  # sparse: nothing written, nothing to read
    with pytest.raises(TranscriptError) as info:
        await ingest_file(crown, crd3)
    assert str(info.value) == (
        "C9E003.json is 20,971,521 bytes; a CRD3 episode is read whole, so at most 20,971,520 (real ones are about "
        "1 MB): split its TURNS into several files, or write it as .jsonl, which is read line by line"
    )
    assert await crown.log.sessions() == []


async def test_lone_surrogates_are_refused_with_their_line_not_the_batch(crown: CampaignMemory, tmp_path: Path) -> None:
    path = tmp_path / "halves.jsonl"
    lines = [
        {"speaker": "Ana", "text": "Fine.", "ref": "ok1"},
        {"speaker": "Ana", "text": "a lone \ud800 half"},  # valid JSON: json.dumps writes it as \ud800
        {"speaker": "Ana", "text": "in a title", "session": "s\udc00x"},
        {"speaker": "Ana", "text": "Also fine.", "ref": "ok2"},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    report = await ingest_file(crown, path, session_title="Halves")
    half = (
        "which is not a character (half of a UTF-16 surrogate pair, or a byte that is not UTF-8) and cannot be stored"
    )
    assert report.skipped == [
        f"halves.jsonl:2: skipped: invalid field: text: contains U+D800 at position 8, {half}",
        f"halves.jsonl:3: skipped: invalid field: session title contains U+DC00 at position 2, {half}",
    ]
    session = await crown.log.session_by_title("Halves")
    assert session is not None
    assert [e.ref for e in await crown.log.session_entries(session.id)] == ["ok1", "ok2"]
    # a title given by the DM (--session, /session start) is refused before anything is stored
    with pytest.raises(InvalidInputError, match=r"^session title contains U\+DCFF at position 2"):
        await ingest_file(crown, path, session_title="a\udcffb")
    with pytest.raises(InvalidInputError, match=r"^session title is longer than 300 characters"):
        await ingest_file(crown, path, session_title="x" * 301)
    assert [s.title for s in await crown.log.sessions()] == ["Halves"]


TRANSCRIPT_DE = "".join(f"DM: Mätt grüßt Ironhold, Runde {i}.\nAna: Thess zieht den Bogen.\n" for i in range(5))
TRANSCRIPT_RU = "".join(
    f"Мастер: Вы входите в Железную Крепость, раунд {i}.\nАня: Тэсс натягивает лук.\n" for i in range(5)
)


@pytest.mark.parametrize(
    "data",
    [
        TRANSCRIPT_DE.encode("utf-16"),
        codecs.BOM_UTF16_BE + TRANSCRIPT_DE.encode("utf-16-be"),
        TRANSCRIPT_DE.replace("\n", "\r\n").encode("utf-32"),
    ],
    ids=["utf-16", "utf-16-be", "utf-32-crlf"],
)
async def test_a_utf16_or_utf32_transcript_with_a_byte_order_mark_is_read(
    crown: CampaignMemory, tmp_path: Path, data: bytes
) -> None:
    path = tmp_path / "wide.txt"
    path.write_bytes(data)
    report = await ingest_file(crown, path)
    assert report.written == 10 and report.skipped == []
    session = await crown.log.session_by_title("wide")
    assert session is not None
    entries = await crown.log.session_entries(session.id)
    assert [f"{e.speaker}: {e.text}\n" for e in entries] == TRANSCRIPT_DE.splitlines(keepends=True)


@pytest.mark.parametrize(
    ("data", "looks"),
    [
        (TRANSCRIPT_DE.encode("latin-1"), "Latin-1: 5 of 10 lines"),
        (TRANSCRIPT_DE.encode("cp1252"), "Latin-1: 5 of 10 lines"),
        (TRANSCRIPT_DE.encode("utf-16-le"), "UTF-16: 10 of 10 lines"),  # no byte-order mark
        (TRANSCRIPT_DE.encode("utf-16-be"), "UTF-16: 10 of 10 lines"),
        # no NUL in every other byte, as Latin text has: Cyrillic is 0x04xx
        (TRANSCRIPT_RU.encode("utf-16-le"), "UTF-16: 10 of 10 lines"),
        (TRANSCRIPT_RU.encode("utf-16-be"), "UTF-16: 10 of 10 lines"),
        ("DM: Willkommen in der Drachenhöhle.\n".encode("latin-1"), "Latin-1: 1 of 1 lines"),  # nothing to read
    ],
)
async def test_a_transcript_in_another_encoding_is_refused_whole(
    crown: CampaignMemory, tmp_path: Path, data: bytes, looks: str
) -> None:
    path = tmp_path / "other.txt"
    path.write_bytes(data)
    with pytest.raises(TranscriptError) as info:
        await ingest_file(crown, path)
    assert str(info.value) == f"other.txt is not UTF-8 text (it looks like {looks} are not UTF-8): save it as UTF-8"
    assert await crown.log.sessions() == []  # refused before anything was stored


RANDOM = random.Random(0).randbytes(50_000)  # lines of about 256 bytes: a NUL in about half of them
LONG_LINES = b"\n".join(RANDOM.replace(b"\n", b"")[i : i + 1000] for i in range(0, 49_000, 1000))  # in most


@pytest.mark.parametrize("data", [RANDOM, LONG_LINES], ids=["short-lines", "long-lines"])
async def test_a_binary_file_named_txt_is_said_to_be_no_text(
    crown: CampaignMemory, tmp_path: Path, data: bytes
) -> None:
    """Random bytes were said to look like Latin-1, or like UTF-16 when most lines held a NUL."""
    path = tmp_path / "binary.txt"
    path.write_bytes(data)
    with pytest.raises(TranscriptError) as info:
        await ingest_file(crown, path)
    assert re.fullmatch(
        r"binary\.txt is not a text file \(\d+ of \d+ lines are binary data\): give a transcript saved as UTF-8 text",
        str(info.value),
    ), info.value
    assert await crown.log.sessions() == []


async def test_a_few_broken_lines_of_a_utf8_transcript_are_skipped_one_by_one(
    crown: CampaignMemory, tmp_path: Path
) -> None:
    path = tmp_path / "mostly.txt"
    broken = [f"Ana: Caf{chr(0xE9)} {i}\n".encode("latin-1") for i in range(6)]
    path.write_bytes(TRANSCRIPT_DE.encode() * 2 + b"".join(broken))
    report = await ingest_file(crown, path)
    assert report.written == 20
    assert [m.split(": skipped: ")[1] for m in report.skipped] == ["not valid UTF-8 (byte 9)"] * 6


async def test_txt_with_a_byte_order_mark_and_start_times(crown: CampaignMemory, tmp_path: Path) -> None:
    txt = tmp_path / "stamped.txt"
    lines = [
        "[00:00:05] DM: The gates of Ironhold open.",
        "[01:02:03.5]Ana: We go in.",
        "Ben: Quietly.",
        "12:04 Ana: Now.",
    ]
    txt.write_bytes(b"\xef\xbb\xbf" + "\n".join(lines).encode())  # as Windows editors save UTF-8
    report = await ingest_file(crown, txt)
    assert report.written == 4 and report.skipped == []
    session = await crown.log.session_by_title("stamped")
    assert session is not None
    entries = await crown.log.session_entries(session.id)
    assert [(e.speaker, e.text, e.start_s) for e in entries] == [
        ("DM", "The gates of Ironhold open.", 5.0),
        ("Ana", "We go in.", 3723.5),
        ("Ben", "Quietly.", 0.0),
        ("Ana", "Now.", 724.0),
    ]
    assert [h.text for h in await crown.log.search("gates", speakers=["DM"])] == ["The gates of Ironhold open."]

    jsonl = tmp_path / "bom.jsonl"
    jsonl.write_bytes(b"\xef\xbb\xbf" + json.dumps({"speaker": "DM", "text": "Roll."}).encode() + b"\n")
    report = await ingest_file(crown, jsonl)
    assert report.written == 1 and report.skipped == []


async def test_last_mention_goes_by_when_sessions_were_played_not_imported(
    crown: CampaignMemory, tmp_path: Path
) -> None:
    newer, older = tmp_path / "newer.txt", tmp_path / "older.txt"
    newer.write_text("DM: Eldrinax stirs beneath Ironhold.\nAna: We run.\n")
    older.write_text("DM: Eldrinax sleeps.\nBen: Good.\n")
    wyrm = await crown.graph.get_entity("Eldrinax")
    await ingest_file(crown, newer, started_at=datetime(2024, 3, 9, 19, tzinfo=UTC))
    await ingest_file(crown, older)  # imported last, and without saying when it was played: it counts as now
    assert (await crown.graph.last_mention(wyrm)).title == "older"  # type: ignore[union-attr]

    await ingest_file(crown, older, started_at=datetime(2024, 3, 2, 19, tzinfo=UTC))  # corrects its date
    last = await crown.graph.last_mention(wyrm)
    assert last is not None and (last.title, last.text) == ("newer", "Eldrinax stirs beneath Ironhold.")
    sessions = await crown.log.sessions()
    assert [(s.title, s.started_at) for s in sessions] == [
        ("older", datetime(2024, 3, 2, 19, tzinfo=UTC)),
        ("newer", datetime(2024, 3, 9, 19, tzinfo=UTC)),
    ]


async def test_a_card_lists_sessions_as_played_and_places_an_untimed_line_by_its_ref(
    memory: Memory, crown: CampaignMemory, tmp_path: Path
) -> None:
    """An episode imported late, dated back with ``started_at``, is not the last one the entity took part in;
    and a line of a transcript with no times is found by its source, not "at 0:00" as every other line is."""
    ctx = jobs.JobContext(memory=memory, embedder=None, embedding_model="x")  # type: ignore[arg-type]
    for title, day in (("Newer", 9), ("Older", 2)):  # the older one imported (and summarised) last
        path = tmp_path / f"{title.lower()}.txt"
        path.write_text(f"Ana: We rest.\nDM: Eldrinax stirs beneath Ironhold on night {day}.\n")
        await ingest_file(crown, path, session_title=title, started_at=datetime(2024, 3, day, 19, tzinfo=UTC))
        session = await crown.log.session_by_title(title)
        assert session is not None
        await jobs.summarize_session(ctx, crown.campaign_id, session.id)

    _, sessions = (await crown.graph.snapshot("Eldrinax")).facts_and_sessions()
    assert sessions == "took part in 2 sessions: Newer, Older"
    last = await crown.graph.last_mention(await crown.graph.get_entity("Eldrinax"))
    # each with the date it was played, given at import
    assert last is not None and last.where() == "Newer, 2024-03-09 (newer.txt:2)"
    assert last.model_copy(update={"start_s": 3723.5}).where() == "Newer, 2024-03-09 at 1:02:03"
    assert last.model_copy(update={"start_s": 75, "ref": None}).where() == "Newer, 2024-03-09 at 1:15"


async def test_a_recap_written_after_the_session_was_resumed_leaves_it_live(
    memory: Memory, crown: CampaignMemory, tmp_path: Path
) -> None:
    """Stopped, then resumed before its recap job ran: the job writes the recap and leaves the session being
    recorded live, or `session delete` would take it for an ended one."""
    ctx = jobs.JobContext(memory=memory, embedder=None, embedding_model="x")  # type: ignore[arg-type]
    path = tmp_path / "night.txt"
    path.write_text("DM: Eldrinax stirs beneath Ironhold.\n")
    await ingest_file(crown, path, session_title="Night")
    session = await crown.log.session_by_title("Night")
    assert session is not None and session.ended_at is not None
    await crown.log.set_ended(session.id, None)  # resumed: live again
    summary = await jobs.summarize_session(ctx, crown.campaign_id, session.id)
    after = await crown.log.session(session.id)
    assert (after.summary, after.ended_at) == (summary, None)


async def test_a_secret_entity_renamed_is_still_found_where_it_was_last_mentioned(
    memory: Memory, crown: CampaignMemory, embedder: MiniLMEmbedder
) -> None:
    """A secret entity keeps no alias of its old name (players read aliases), so the log no longer holds any of
    its names: the chunks that mention it still say where it was last named."""
    sela = await crown.graph.add_entity(EntityIn(name="Sela Morn", type=EntityType.npc, visibility="secret"))
    rec = await SessionRecorder.start(crown, "Tower night")
    said = ["The rain stops.", "Sela Morn watches from the tower."] + [f"We wait {n}." for n in range(12)]
    await rec.add_many([Utterance(speaker="DM", text=t, seq=n) for n, t in enumerate(said, start=1)])
    await rec.flush()
    await jobs.chunk_session(job_context(memory, embedder), crown.campaign_id, rec.session.id)

    widow = await crown.graph.update_entity(sela.name, new_name="The Grey Widow")
    assert widow.aliases == []
    last = await crown.graph.last_mention(widow)
    assert last is not None and last.title == "Tower night" and "Sela Morn watches" in last.text
    assert "We wait 11." not in last.text  # a later window, which does not mention it
    assert await crown.graph.last_mention(await crown.graph.get_entity("Eldrinax")) is None  # never said


async def test_an_import_refused_for_its_lines_leaves_the_sessions_date_alone(
    crown: CampaignMemory, tmp_path: Path
) -> None:
    """Each week's `transcript.txt`: the second names the first's session, whose lines it does not hold. It is
    refused, and must not move the first week to the second's date (its recap and "last mentioned" go by it)."""
    week1, week2 = tmp_path / "1" / "transcript.txt", tmp_path / "2" / "transcript.txt"
    week1.parent.mkdir()
    week2.parent.mkdir()
    week1.write_text("DM: Borin finds a key.\n")
    week2.write_text("DM: The key opens the gate.\n")
    played = datetime(2024, 2, 8, 19, tzinfo=UTC)
    await ingest_file(crown, week1, started_at=played)
    with pytest.raises(AlreadyExistsError, match="line 1 of this session already says"):
        await ingest_file(crown, week2, started_at=datetime(2024, 2, 15, 19, tzinfo=UTC))
    assert [(s.title, s.started_at) for s in await crown.log.sessions()] == [("transcript", played)]


async def test_recall_merges_vector_and_fulltext_and_cites_refs(
    crown: CampaignMemory, memory: Memory, embedder: MiniLMEmbedder
) -> None:
    await ingest_file(crown, SAMPLE, session_title="Session 1")
    await run_jobs(memory, embedder)
    hits = await recall(crown, embedder, "Who is the blacksmith of Ironhold?", limit=3)
    assert hits and "blacksmith" in hits[0].text
    assert "s1:L22" in hits[0].refs and {"vector", "fulltext"} <= set(hits[0].matched)
    assert hits[0].session == "Session 1"
    only_text = await recall(crown, None, "Quelloth", limit=3, mode="fulltext")
    assert only_text and all("Quelloth" in h.text for h in only_text)


async def test_recall_of_a_pasted_wall_of_text_answers_from_its_start(crown: CampaignMemory) -> None:
    """`lorekeeper recall < notes.txt` with a 600 KB line: its full-text query nested too deep for PostgreSQL
    ("stack depth limit exceeded", a traceback). A query counts up to its first QUERY_CHARS characters."""
    await ingest_file(crown, SAMPLE, session_title="Session 1")
    wall = "Quelloth " + "lorem " * 100_000
    hits = await recall(crown, None, wall, limit=3, mode="fulltext")
    assert hits and any("Quelloth" in h.text for h in hits)
    (named,) = await named_entities(crown, wall, dm=True)
    assert named.name == "Quelloth the Tidewarden"
    assert not await named_entities(crown, "lorem " * (QUERY_CHARS // 6) + "Quelloth", dm=True)


async def test_recall_cites_a_line_of_an_untimed_transcript_by_its_turn(
    crown: CampaignMemory, memory: Memory, embedder: MiniLMEmbedder, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A CRD3 episode has no times: "at 0:00" on every hit says nothing, its turn number finds the line; the date
    it was played, given at import, says which night, as a live session's title does."""
    crd3 = tmp_path / "C1E010.json"
    turns = [
        {"NAMES": ["MATT"], "UTTERANCES": [f"The road goes on, mile {n}."], "NUMBER": n} for n in range(1090, 1098)
    ]
    turns.append({"NAMES": ["LAURA"], "UTTERANCES": ["Quelloth hides in the reeds."], "NUMBER": 1098})
    crd3.write_text(json.dumps({"METADATA": {}, "TURNS": turns}))
    await ingest_file(crown, crd3, started_at=datetime(2024, 3, 2, 19, tzinfo=UTC))
    await run_jobs(memory, embedder)
    (hit,) = await recall(crown, None, "Quelloth", limit=1, mode="fulltext")
    assert hit.refs[-1] == "turn 1098" and hit.start_s == 0
    (said,) = hit.answering()  # the line, with one of context before it (it is the session's last)
    assert said.ref == "turn 1098" and [line.ref for line in hit.lines] == ["turn 1097", "turn 1098"]
    assert cite(hit).endswith(f"— **{said.speaker}**, C1E010, 2024-03-02 (turn 1098)")
    print_hits([hit])
    assert capsys.readouterr().out.startswith("1. [C1E010, 2024-03-02 (turn 1098)] score")
    assert hit.where() == "C1E010, 2024-03-02 (turn 1098)"
    timed = hit.model_copy(update={"lines": [said.model_copy(update={"start_s": 3723.5})]})
    assert "C1E010, 2024-03-02 at 1:02:03" in cite(timed) and timed.where() == "C1E010, 2024-03-02 at 1:02:03"
    # a title that says its date (a live session's "Session 2024-03-02") says it once
    titled = hit.model_copy(update={"session": "Session 2024-03-02"})
    assert titled.where() == "Session 2024-03-02 (turn 1098)"


async def test_embedding_cache_hit_on_re_embed(pool: asyncpg.Pool, embedder: MiniLMEmbedder) -> None:
    texts = ["The lake is dropping.", "Roll for initiative.", "The lake is dropping."]
    first = jobs.EmbedStats()
    a = await jobs.embed_cached(pool, embedder, "all-MiniLM-L6-v2", texts, first)
    assert (first.computed, first.cache_hits) == (2, 1)  # the repeated text is embedded once
    second = jobs.EmbedStats()
    b = await jobs.embed_cached(pool, embedder, "all-MiniLM-L6-v2", texts, second)
    assert (second.computed, second.cache_hits) == (0, 3)
    assert a == b
    other_model = jobs.EmbedStats()
    await jobs.embed_cached(pool, embedder, "another-model", texts[:1], other_model)
    assert other_model.computed == 1  # the cache is keyed by model too


async def test_a_line_arriving_late_is_still_extracted(
    memory: Memory, crown: CampaignMemory, embedder: MiniLMEmbedder
) -> None:
    rec = await SessionRecorder.start(crown, "Late lines")
    await rec.add_many(
        [Utterance(speaker="DM", text="We begin.", seq=1), Utterance(speaker="DM", text="The end.", seq=3)]
    )
    await rec.flush()
    await run_jobs(memory, embedder)
    # line 2 was skipped as unreadable and is imported again, fixed
    await rec.add(Utterance(speaker="DM", text="Eldrinax lives in Ironhold.", seq=2))
    await rec.flush()
    await run_jobs(memory, embedder)
    assert "Eldrinax lives in Ironhold" in [i.describe() for i in await crown.review.pending(limit=100)]


class _HeldEmbedder(MiniLMEmbedder):
    """Embeds only when released: a chunk job caught in the middle of its work."""

    def __init__(self) -> None:
        super().__init__()
        self.started, self.release = asyncio.Event(), asyncio.Event()

    async def embed(self, texts: list[str]) -> list[list[float]]:
        self.started.set()
        await self.release.wait()
        return await super().embed(texts)


async def test_a_line_arriving_while_the_chunk_job_runs_is_chunked(memory: Memory, crown: CampaignMemory) -> None:
    """The new line's chunk job has the running one's dedupe key and is skipped: the running job must see it."""
    lines = {1: "The party reaches Ironhold at dusk.", 2: "A guard named Brom stops them.", 4: "Night falls."}
    rec = await SessionRecorder.start(crown, "S1")
    await rec.add_many([Utterance(speaker="DM", text=text, seq=seq) for seq, text in lines.items()])
    await rec.flush()
    embedder = _HeldEmbedder()
    ctx = jobs.JobContext(memory=memory, embedder=embedder, embedding_model="all-MiniLM-L6-v2")
    running = asyncio.create_task(jobs.chunk_session(ctx, crown.campaign_id, rec.session.id))
    await embedder.started.wait()  # it has read the session
    late = await SessionRecorder.start(crown, "S1")  # the fixed transcript, with line 3
    await late.add(Utterance(speaker="DM", text="Brom says the mine is haunted.", seq=3))
    assert await late.flush() == 1
    embedder.release.set()
    await running
    chunked = {i for c in await crown.semantic.session_chunks(rec.session.id) for i in c.entry_ids}
    assert {e.id for e in await crown.log.session_entries(rec.session.id)} == chunked


async def test_chunk_jobs_over_several_batches_make_the_chunks_of_one_pass(
    memory: Memory, crown: CampaignMemory, embedder: MiniLMEmbedder
) -> None:
    """Each job windows only what its lines can change, yet a session fed in batches (a line of it late, after
    everything around it was chunked) ends with exactly the chunks of the same lines chunked at once."""
    said = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    lines = [
        Utterance(speaker=u["speaker"], text=u["text"], start_s=u["start"], end_s=u["end"], seq=seq)
        for seq, u in enumerate(said, 1)
    ]
    ctx = job_context(memory, embedder)

    async def chunked(title: str, batches: list[list[Utterance]]) -> list[tuple[object, ...]]:
        rec = await SessionRecorder.start(crown, title)
        for batch in batches:
            await rec.add_many(batch)
            await rec.flush()
            await jobs.chunk_session(ctx, crown.campaign_id, rec.session.id)
        seqs = {e.id: e.seq for e in await crown.log.session_entries(rec.session.id)}
        return [
            (c.key.split(":")[1], c.text, [seqs[i] for i in c.entry_ids], c.speakers, c.entity_ids, c.start_s, c.end_s)
            for c in await crown.semantic.session_chunks(rec.session.id)
        ]

    late = lines[4]
    on_time = [u for u in lines if u is not late]
    batched = await chunked("Batched", [on_time[i : i + 7] for i in range(0, len(on_time), 7)] + [[late]])
    assert batched == await chunked("At once", [lines])
    assert len(batched) > 8 and any(c[4] for c in batched)


async def test_a_chunk_job_reads_only_the_lines_its_windows_need(
    memory: Memory, crown: CampaignMemory, embedder: MiniLMEmbedder, pool: asyncpg.Pool
) -> None:
    """A long session's next batch costs its chunk job a few windows, not the whole session read again: a line
    changed behind the jobs' back (stage 2 and late lines tell them) stays as it was chunked."""
    rec = await SessionRecorder.start(crown, "Long")
    await rec.add_many([Utterance(speaker="DM", text=f"Wave {n} breaks on the pier.", seq=n) for n in range(1, 41)])
    await rec.flush()
    ctx = job_context(memory, embedder)
    await jobs.chunk_session(ctx, crown.campaign_id, rec.session.id)
    await pool.execute("UPDATE session_entries SET text = 'Changed.' WHERE session_id = $1 AND seq = 1", rec.session.id)
    await rec.add(Utterance(speaker="DM", text="The tide turns.", seq=41))
    await rec.flush()
    assert await jobs.chunk_session(ctx, crown.campaign_id, rec.session.id) == 1  # the last window grew
    chunks = await crown.semantic.session_chunks(rec.session.id)
    assert chunks[0].text.startswith("DM: Wave 1 breaks") and chunks[-1].text.endswith("DM: The tide turns.")


async def test_a_session_titled_with_invisible_characters_gets_its_recap(memory: Memory, crown: CampaignMemory) -> None:
    """An emoji with a zero-width joiner is a fine title; the session's event entity leaves the joiner out."""
    rec = await SessionRecorder.start(crown, "\U0001f9d9\u200d\u2642\ufe0f Wizard night")
    await rec.add(Utterance(speaker="DM", text="The party reaches Ironhold.", seq=1))
    await rec.flush()
    await jobs.summarize_session(
        jobs.JobContext(memory=memory, embedder=None, embedding_model="x"), crown.campaign_id, rec.session.id
    )  # type: ignore[arg-type]
    event = await crown.graph.get_entity("Session: \U0001f9d9\u2642\ufe0f Wizard night")
    assert event.provenance.session_id == rec.session.id


async def test_a_session_ended_again_after_resuming_is_summarised_over_all_its_lines(
    memory: Memory, crown: CampaignMemory, pool: asyncpg.Pool, embedder: MiniLMEmbedder
) -> None:
    rec = await SessionRecorder.start(crown, "Two evenings")
    await rec.add(Utterance(speaker="DM", text="The party rides into Ironhold at dusk.", seq=1))
    await rec.end()
    # a worker has picked the first summary job and is writing it when the DM resumes the session
    await pool.execute("UPDATE pgqueuer SET status = 'picked' WHERE entrypoint = $1", jobs.SUMMARY)
    resumed = await SessionRecorder.start(crown, "Two evenings")
    await resumed.add(Utterance(speaker="DM", text="Eldrinax wakes beneath the lake and roars.", seq=2))
    await resumed.end()
    await pool.execute("DELETE FROM pgqueuer WHERE status = 'picked'")  # the first summary is done
    await run_jobs(memory, embedder)
    summary = (await crown.log.session(rec.session.id)).summary
    assert summary is not None and "Eldrinax wakes" in summary and "Ironhold at dusk" in summary


async def test_the_recap_names_no_secret_entity_mentioned_by_its_alias(memory: Memory, crown: CampaignMemory) -> None:
    """Players read the recap: "The Pale Magister" is all they know of the secret Vaskerrin Holt."""
    rec = await SessionRecorder.start(crown, "Masks")
    for seq, text in enumerate(["The Pale Magister greets you in Ironhold.", "Thorin asks the Pale Magister why."], 1):
        await rec.add(Utterance(speaker="DM", text=text, seq=seq))
    await rec.flush()
    ctx = jobs.JobContext(memory=memory, embedder=None, embedding_model="x")  # type: ignore[arg-type]
    summary = await jobs.summarize_session(ctx, crown.campaign_id, rec.session.id)
    assert "Pale Magister" in summary and "Involved: " in summary and "Ironhold" in summary.split("Involved: ")[1]
    assert "Vaskerrin" not in summary
    assert "Vaskerrin" not in (await crown.graph.get_entity("Session: Masks")).description
    # the DM still sees who took part
    holt = await crown.graph.get_entity("Vaskerrin Holt")
    took_part = await crown.graph.relationships_of(holt.id, include_secret=True)
    assert [(r.type, r.target_name) for r in took_part if r.type == "took_part_in"] == [
        ("took_part_in", "Session: Masks")
    ]


async def test_a_misheard_alias_of_a_secret_entity_is_written_as_the_alias(crown: CampaignMemory) -> None:
    """Players read the transcript: correcting "the pail magister" to the secret name behind it would tell them."""
    rec = await SessionRecorder.start(crown, "Masks")
    await rec.add(Utterance(speaker="DM", text="The pail magister smiles at you.", seq=1))
    await rec.add(Utterance(speaker="DM", text="Vaskerin Holt, he says, is his name.", seq=2))  # said: corrected
    await rec.flush()
    first, second = await crown.log.session_entries(rec.session.id)
    assert first.text == "The Pale Magister smiles at you.", first.text
    assert second.text == "Vaskerrin Holt, he says, is his name.", second.text


async def test_a_file_holding_a_stored_session_again_is_refused_before_anything_is_written(
    crown: CampaignMemory, tmp_path: Path
) -> None:
    """Its lines name two sessions; the second's lines are stored already, as a session of another title. Found
    before the first is written, not after: half an import would be left."""
    first = [{"speaker": "DM", "text": f"The tide turns {n}.", "session": "Night 2"} for n in range(3)]
    copied = [{"speaker": "Ana", "text": f"Eldrinax wakes {n}.", "session": "Night 1 again"} for n in range(3)]
    said = [{"speaker": "DM", "text": f"The bell tolls {n}."} for n in range(3)]
    old = tmp_path / "night1.jsonl"
    old.write_text("".join(json.dumps({**line, "session": "Night 1"}) + "\n" for line in [*said, *copied]))
    await ingest_file(crown, old)
    both = tmp_path / "both.jsonl"
    both.write_text("".join(json.dumps(line) + "\n" for line in [*first, *copied]))  # the same lines 4-6
    with pytest.raises(AlreadyExistsError) as refused:
        await ingest_file(crown, both)
    assert str(refused.value) == "both.jsonl is already imported as session 'Night 1' (6 lines)"
    assert (refused.value.subject, refused.value.name) == ("imported transcript", "Night 1")
    assert [s.title for s in await crown.log.sessions()] == ["Night 1"]

    report = await ingest_file(crown, both, again=True)
    assert report.sessions == ["Night 2", "Night 1 again"] and report.written == 6
    # Both titles hold the lines now: importing either again resumes it, whichever other session holds them too.
    assert (await ingest_file(crown, old)).written == 0
    assert (await ingest_file(crown, both)).written == 0


async def sessions_of(mem: CampaignMemory, name: str) -> list[str]:
    """The recaps an entity took part in, as its card lists them (secret ones too: the DM's view)."""
    entity = await mem.graph.get_entity(name)
    return [r.target_name for r in await mem.graph.relationships_of(entity.id, include_secret=True)
            if r.type == "took_part_in"]  # fmt: skip


async def test_an_entity_accepted_after_its_sessions_recap_took_part_in_it(
    memory: Memory, crown: CampaignMemory, embedder: MiniLMEmbedder, tmp_path: Path
) -> None:
    """The recap links only the entities accepted when it is written; "Corvin Ash", proposed by the session's own
    lines and accepted from the review queue after it, took part in it all the same, once, however often it is
    decided or the recap written."""
    night = tmp_path / "night.txt"
    night.write_text(
        "DM: A gaunt man named Corvin Ash waits on the docks of Ironhold.\n"
        "Ana: We ask Corvin Ash about the drowned city.\n"
        "DM: Corvin Ash only points at the lake.\n"
    )
    await ingest_file(crown, night, session_title="Night 1")
    await run_jobs(memory, embedder)
    (corvin,) = [i for i in await crown.review.pending(limit=100) if i.entity and i.entity.name == "Corvin Ash"]
    assert await sessions_of(crown, "Ironhold") == []  # a place named takes no part
    assert await sessions_of(crown, "Corvin Ash") == []  # waiting for review when the recap was written

    await crown.review.accept(corvin.ref)
    assert await sessions_of(crown, "Corvin Ash") == ["Session: Night 1"]
    with pytest.raises(AlreadyDecidedError):
        await crown.review.accept(corvin.ref)
    # the session resumed and ended again: its recap is written again, over every line
    rec = await SessionRecorder.start(crown, "Night 1")
    await rec.add(Utterance(speaker="DM", text="By dawn Corvin Ash is gone.", seq=4))
    await rec.end()
    await run_jobs(memory, embedder)
    assert "By dawn" in ((await crown.log.session(rec.session.id)).summary or "")
    assert await sessions_of(crown, "Corvin Ash") == ["Session: Night 1"]


async def test_an_entity_accepted_while_the_recap_is_written_took_part_in_it(
    memory: Memory, crown: CampaignMemory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The DM accepts "Corvin Ash" after the recap job read who is accepted, before it wrote the recap (an LLM
    recap takes seconds): neither the accept (no recap yet) nor the job's list has it, so the job links it."""
    night = tmp_path / "night.txt"
    night.write_text("DM: A gaunt man named Corvin Ash waits on the docks of Ironhold.\n")
    await ingest_file(crown, night, session_title="Night 1")
    session = await crown.log.session_by_title("Night 1")
    assert session is not None
    corvin = await crown.graph.add_entity(EntityIn(name="Corvin Ash", type=EntityType.npc, status=ReviewStatus.pending))
    read = crown.graph.list_entities

    async def then_accepted(*args: Any, **kwargs: Any) -> list[Entity]:
        found = await read(*args, **kwargs)
        if "status" in kwargs:  # the job's first read, of every status: the DM accepts right after it
            await crown.review.accept(f"e{corvin.id}")
        return found

    monkeypatch.setattr(crown.graph, "list_entities", then_accepted)
    monkeypatch.setattr(memory, "campaign", lambda campaign_id: crown)  # the job's memory is this one
    ctx = jobs.JobContext(memory=memory, embedder=None, embedding_model="x")  # type: ignore[arg-type]
    await jobs.summarize_session(ctx, crown.campaign_id, session.id)
    monkeypatch.undo()
    assert await sessions_of(crown, "Corvin Ash") == ["Session: Night 1"]


async def test_an_entity_accepted_with_a_fact_or_as_the_same_as_a_proposal_took_part_in_the_recapped_sessions(
    memory: Memory, crown: CampaignMemory, embedder: MiniLMEmbedder, tmp_path: Path
) -> None:
    """Accepting a fact accepts the proposed entities it joins, and "Same as…" gives the known entity the proposal's
    name: the recapped sessions that said those names are theirs too."""
    nessa = await crown.graph.add_entity(EntityIn(name="Nessa Vane", type=EntityType.npc))
    night = tmp_path / "night.txt"
    night.write_text(
        "DM: A hooded woman named Old Grell sells charms by the well.\n"
        "DM: Bram Oakes lives in Ironhold and mends the nets.\n"
    )
    await ingest_file(crown, night, session_title="Night 1")
    await run_jobs(memory, embedder)
    pending = await crown.review.pending(limit=100)
    (grell,) = [i for i in pending if i.entity and i.entity.name == "Old Grell"]
    (lives,) = [i for i in pending if i.fact and i.fact.source_name == "Bram Oakes" and i.fact.type == "lives_in"]
    assert await sessions_of(crown, "Nessa Vane") == []

    await crown.review.same_as(grell.ref, "Nessa Vane")
    assert await sessions_of(crown, "Nessa Vane") == ["Session: Night 1"]
    assert nessa.id == (await crown.graph.get_entity("Old Grell")).id
    await crown.review.accept(lives.ref)
    assert await sessions_of(crown, "Bram Oakes") == ["Session: Night 1"]


async def test_an_entity_a_campaign_file_adds_took_part_in_the_recapped_sessions_that_named_it(
    memory: Memory, crown: CampaignMemory, tmp_path: Path
) -> None:
    ctx = jobs.JobContext(memory=memory, embedder=None, embedding_model="x")  # type: ignore[arg-type]
    night = tmp_path / "night.txt"
    night.write_text("DM: Corvin Ash rows you across to Ironhold.\nAna: We pay him in silver.\n")
    await ingest_file(crown, night, session_title="Night 1")
    session = await crown.log.session_by_title("Night 1")
    assert session is not None
    await jobs.summarize_session(ctx, crown.campaign_id, session.id)
    more = tmp_path / "more.yaml"
    more.write_text("entities:\n  - {name: Corvin Ash, type: npc}\n  - {name: Ilse Marrow, type: npc}\n")
    await apply_campaign_file(crown, read_campaign_file(more))
    assert await sessions_of(crown, "Corvin Ash") == ["Session: Night 1"]
    assert await sessions_of(crown, "Ilse Marrow") == []
    await apply_campaign_file(crown, read_campaign_file(more))  # loaded again: nothing new
    assert await sessions_of(crown, "Corvin Ash") == ["Session: Night 1"]


async def test_who_takes_part_is_who_the_dm_names_in_the_story_whether_accepted_before_or_after_the_recap(
    memory: Memory, crown: CampaignMemory, tmp_path: Path
) -> None:
    """At recap time only those the DM names in the story take part: a player's question ("We ask Corvin Ash…") or
    the DM's rules talk does not make it so. An entity accepted from review after the recap is held to the same
    rule: before, any line naming it did."""
    ctx = jobs.JobContext(memory=memory, embedder=None, embedding_model="x")  # type: ignore[arg-type]
    await crown.graph.add_entity(EntityIn(name="Ilse Marrow", type=EntityType.npc))
    night = tmp_path / "night.txt"
    night.write_text(
        "DM: Old Tam rows you across the lake to Ironhold.\n"
        "Ana: We ask Corvin Ash and Ilse Marrow about the drowned city.\n"
        "DM: Make a persuasion check, Bram Oakes.\n"
        "DM: The water is black and still.\n"
    )
    await ingest_file(crown, night, session_title="Night 1")
    session = await crown.log.session_by_title("Night 1")
    assert session is not None
    await jobs.summarize_session(ctx, crown.campaign_id, session.id)
    assert await sessions_of(crown, "Ilse Marrow") == []  # accepted before the recap
    for name in ("Corvin Ash", "Bram Oakes", "Old Tam"):  # accepted after it
        entity = await crown.graph.add_entity(EntityIn(name=name, type=EntityType.npc, status=ReviewStatus.pending))
        await crown.review.accept(f"e{entity.id}")
    assert await sessions_of(crown, "Corvin Ash") == []
    assert await sessions_of(crown, "Bram Oakes") == []
    assert await sessions_of(crown, "Old Tam") == ["Session: Night 1"]


async def test_who_took_part_is_found_from_told_lines_kept_until_the_sessions_lines_change(
    memory: Memory, crown: CampaignMemory, tmp_path: Path
) -> None:
    """Each accept read every session's lines again for who narrates and what is out of game (seconds at 100
    sessions): a session's told lines are found once and kept, the same as found from its lines each time, and
    found again once a line is added (or changed, or the DM)."""
    ctx = jobs.JobContext(memory=memory, embedder=None, embedding_model="x")  # type: ignore[arg-type]
    night = tmp_path / "night.txt"
    night.write_text(
        "DM: Old Tam rows you across the lake to Ironhold.\n"
        "Ana: We ask Corvin Ash about the drowned city.\n"
        "DM: Make a persuasion check, Bram Oakes.\n"
        "DM: The water is black and still.\n"
    )
    await ingest_file(crown, night, session_title="Night 1")
    session = await crown.log.session_by_title("Night 1")
    assert session is not None
    await jobs.summarize_session(ctx, crown.campaign_id, session.id)

    async def as_found_each_time() -> set[int]:
        return told_lines(await crown.log.session_entries(session.id), None)

    assert (await crown.log.told([session.id], told_rules()))[session.id][1] is None  # none kept yet
    more = tmp_path / "more.yaml"
    more.write_text(
        "entities:\n" + "".join(f"  - {{name: {n}, type: npc}}\n" for n in ("Old Tam", "Corvin Ash", "Bram Oakes"))
    )
    await apply_campaign_file(crown, read_campaign_file(more))
    assert [await sessions_of(crown, n) for n in ("Old Tam", "Corvin Ash", "Bram Oakes")] == [
        ["Session: Night 1"],
        [],
        [],
    ]
    (_, kept) = (await crown.log.told([session.id], told_rules()))[session.id]
    assert kept == await as_found_each_time() and len(kept) == 2
    assert await told_in(crown.graph, [session.id]) == kept

    # A line added after: the lines kept are of the lines before, so they are found again, with it.
    await crown.log.write_many(session.id, [EntryIn(speaker="DM", text="Ilse Marrow waves from the shore.", seq=5)])
    assert (await crown.log.told([session.id], told_rules()))[session.id][1] is None
    ilse = await crown.graph.add_entity(EntityIn(name="Ilse Marrow", type=EntityType.npc, status=ReviewStatus.pending))
    await crown.review.accept(f"e{ilse.id}")
    assert await sessions_of(crown, "Ilse Marrow") == ["Session: Night 1"]
    (_, kept) = (await crown.log.told([session.id], told_rules()))[session.id]
    assert kept == await as_found_each_time() and len(kept) == 3
    # rules changed by an upgrade: what the old ones found is not kept
    assert (await crown.log.told([session.id], "other rules"))[session.id][1] is None


async def test_a_place_named_takes_no_part_and_the_import_counts_what_was_learned(
    memory: Memory, crown: CampaignMemory, tmp_path: Path
) -> None:
    """Eight sessions in, a DM read "entities 1, facts 33" after an import that taught nothing: the session's recap
    event and its links of who took part; among those, "Westruun —took_part_in→ Session: Session 2", a place the DM
    merely named. A place does not take part, whether accepted before the recap or after it."""
    ctx = jobs.JobContext(memory=memory, embedder=None, embedding_model="x")  # type: ignore[arg-type]
    night = tmp_path / "night.txt"
    night.write_text("DM: Eldrinax stirs beneath Ironhold, and the road to Greyfen is quiet.\nAna: We rest.\n")
    await ingest_file(crown, night, session_title="Night 1")
    session = await crown.log.session_by_title("Night 1")
    assert session is not None
    await jobs.summarize_session(ctx, crown.campaign_id, session.id)
    assert await sessions_of(crown, "Eldrinax") == ["Session: Night 1"]
    assert await sessions_of(crown, "Ironhold") == []
    more = tmp_path / "more.yaml"
    more.write_text("entities:\n  - {name: Greyfen, type: location}\n")
    await apply_campaign_file(crown, read_campaign_file(more))
    assert await sessions_of(crown, "Greyfen") == []
    last = await crown.graph.last_mention(await crown.graph.get_entity("Greyfen"))
    assert last is not None and last.title == "Night 1"  # its line is still found
    counts = await import_counts(crown, [session.id])
    assert (counts.entities, counts.facts) == (0, 0)  # nothing was learned: the recap is not counted


async def test_a_session_titled_session_n_names_its_recap_event_without_the_doubled_word(
    memory: Memory, crown: CampaignMemory, tmp_path: Path
) -> None:
    """ "Session: Session 2" said "session" twice; "Night 1" keeps its "Session: " before it. A session recapped
    under the old name keeps its event when recapped again."""
    ctx = jobs.JobContext(memory=memory, embedder=None, embedding_model="x")  # type: ignore[arg-type]
    for title, day in (("Night 1", 2), ("Session 2", 9), ("Session 3", 16)):
        path = tmp_path / f"{title}.txt"
        path.write_text(f"DM: Eldrinax stirs beneath Ironhold on night {day}.\n")
        await ingest_file(crown, path, session_title=title, started_at=datetime(2024, 3, day, 19, tzinfo=UTC))
    sessions = {s.title: s for s in await crown.log.sessions()}
    # recapped before: its event under the old name
    await crown.graph.add_entity(EntityIn(name="Session: Session 3", type=EntityType.event))
    for session in sessions.values():
        await jobs.summarize_session(ctx, crown.campaign_id, session.id)
    assert await sessions_of(crown, "Eldrinax") == ["Session: Night 1", "Session 2", "Session: Session 3"]
    _, took_part = (await crown.graph.snapshot("Eldrinax")).facts_and_sessions()
    assert took_part == "took part in 3 sessions: Session 3, Session 2, Night 1"
    assert (await crown.graph.get_entity("Session 2")).type == EntityType.event


async def test_the_same_transcript_imported_twice_at_once_is_written_once(
    crown: CampaignMemory, tmp_path: Path
) -> None:
    """Two `lorekeeper ingest` of one file at the same moment (the DM ran it twice, or a copy of the file): both
    found it new before either had written a line, and the campaign held it twice. The one that comes second
    waits for the first, then is refused as a later import is; another file imported meanwhile is written."""
    copy = tmp_path / "night one (copy).jsonl"
    copy.write_bytes(SAMPLE.read_bytes())
    other = tmp_path / "other.jsonl"
    other.write_text("".join(json.dumps({"speaker": "DM", "text": f"The bell tolls {n}."}) + "\n" for n in range(3)))
    results = await asyncio.gather(
        ingest_file(crown, SAMPLE, session_title="Night 1"),
        ingest_file(crown, copy),
        ingest_file(crown, other),
        return_exceptions=True,
    )
    assert not isinstance(results[2], BaseException) and results[2].written == 3
    assert sum(isinstance(r, IngestReport) for r in results[:2]) == 1, results  # not both written
    imports = [("Night 1", SAMPLE.name, results[0]), (copy.stem, copy.name, results[1])]
    [(winner, _, report)] = [i for i in imports if isinstance(i[2], IngestReport)]
    [(_, name, refused)] = [i for i in imports if not isinstance(i[2], IngestReport)]
    assert isinstance(refused, AlreadyExistsError), refused
    assert str(refused) == f"{name} is already imported as session {winner!r} ({report.written:,} lines)"
    listed = {s.title: s.lines for s in await crown.log.listed()}
    assert listed == {winner: report.written, "other": 3} and report.written > 0


async def test_a_name_an_entity_is_given_after_the_recap_that_heard_it_makes_it_one_who_took_part(
    memory: Memory, crown: CampaignMemory, tmp_path: Path
) -> None:
    """The recap links an entity by the names it had then: "the ferryman" said at the table, made Corvin Ash's alias
    by the DM's edit afterwards (or by a campaign file, or a new name), makes Corvin Ash one who took part."""
    ctx = jobs.JobContext(memory=memory, embedder=None, embedding_model="x")  # type: ignore[arg-type]
    for name in ("Corvin Ash", "Ilse Marrow", "Old Tam"):
        await crown.graph.add_entity(EntityIn(name=name, type=EntityType.npc))
    for title, line in [
        ("Night 1", "DM: The ferryman rows you across to Ironhold."),
        ("Night 2", "DM: The widow in grey pays the toll."),
        ("Night 3", "DM: Tamsin Reed keeps the lighthouse."),
    ]:
        night = tmp_path / f"{title}.txt"
        night.write_text(line + "\n")
        await ingest_file(crown, night, session_title=title)
        session = await crown.log.session_by_title(title)
        assert session is not None
        await jobs.summarize_session(ctx, crown.campaign_id, session.id)
    assert [await sessions_of(crown, n) for n in ("Corvin Ash", "Ilse Marrow", "Old Tam")] == [[], [], []]

    await crown.graph.update_entity("Corvin Ash", aliases=["the ferryman"])
    assert await sessions_of(crown, "Corvin Ash") == ["Session: Night 1"]
    await crown.graph.update_entity("Old Tam", new_name="Tamsin Reed")
    assert await sessions_of(crown, "Tamsin Reed") == ["Session: Night 3"]
    more = tmp_path / "more.yaml"
    more.write_text("entities:\n  - {name: Ilse Marrow, type: npc, aliases: [the widow in grey]}\n")
    await apply_campaign_file(crown, read_campaign_file(more))
    assert await sessions_of(crown, "Ilse Marrow") == ["Session: Night 2"]


async def test_a_new_name_links_the_sessions_that_said_it_not_again_those_its_old_name_was_unlinked_from(
    memory: Memory, crown: CampaignMemory, tmp_path: Path
) -> None:
    """A rename looks for the new name only: the sessions that said the old one were linked when it was given, and
    one the DM unlinked since (a mistake) stays unlinked. A busy entity's old name is in thousands of lines."""
    ctx = jobs.JobContext(memory=memory, embedder=None, embedding_model="x")  # type: ignore[arg-type]
    await crown.graph.add_entity(EntityIn(name="Corvin Ash", type=EntityType.npc))
    for title, line in [
        ("Night 1", "DM: Corvin Ash rows you across to Ironhold."),
        ("Night 2", "DM: The Grey Ferryman waits at the pier."),
    ]:
        night = tmp_path / f"{title}.txt"
        night.write_text(line + "\n")
        await ingest_file(crown, night, session_title=title)
        session = await crown.log.session_by_title(title)
        assert session is not None
        await jobs.summarize_session(ctx, crown.campaign_id, session.id)
    assert await sessions_of(crown, "Corvin Ash") == ["Session: Night 1"]
    await crown.graph.unlink("Corvin Ash", "took_part_in", "Session: Night 1")

    await crown.graph.update_entity("Corvin Ash", new_name="The Grey Ferryman")
    renamed = await crown.graph.get_entity("The Grey Ferryman")
    assert renamed.aliases == ["Corvin Ash"]
    assert await sessions_of(crown, "The Grey Ferryman") == ["Session: Night 2"]


async def test_in_an_untimed_transcript_the_fact_said_last_holds_whichever_the_dm_accepts_first(
    crown: CampaignMemory, tmp_path: Path
) -> None:
    """A plain-text transcript has no times: every line is "at 0:00" of its session. Two lines saying where Corvin
    lives are still said one after the other, and the later one holds, whatever order the DM accepts them in."""
    from memory.extraction import RuleExtractor, extract_into_graph

    await crown.graph.add_entity(EntityIn(name="Corvin", type=EntityType.npc))
    night = tmp_path / "night.txt"
    night.write_text("DM: Corvin lives in Ironhold.\nAna: We row across the lake.\nDM: Corvin lives in Saltmere.\n")
    await ingest_file(crown, night, session_title="Night 1")
    session = await crown.log.session_by_title("Night 1")
    assert session is not None
    entries = await crown.log.session_entries(session.id)
    assert {e.start_s for e in entries} == {0.0}
    await extract_into_graph(crown, session_id=session.id, entries=entries, extractor=RuleExtractor())
    lives = {
        i.fact.target_name: i for i in await crown.review.pending(limit=100) if i.fact and i.fact.type == "lives_in"
    }
    assert sorted(lives) == ["Ironhold", "Saltmere"]

    await crown.review.accept(lives["Saltmere"].ref)
    earlier = await crown.review.accept(lives["Ironhold"].ref)
    assert earlier.outdated_by is not None and earlier.outdated_by.target_name == "Saltmere"
    corvin = await crown.graph.get_entity("Corvin")
    current = [r.target_name for r in await crown.graph.relationships_of(corvin.id) if r.type == "lives_in"]
    assert current == ["Saltmere"]


async def test_a_line_written_decomposed_is_stored_composed_found_and_indexed(campaign: CampaignMemory) -> None:
    """macOS, some phones and recognisers write "ë" as e and ◌̈ (NFD): stored so, the line was found by no search,
    named no entity and hid no secret name, names and queries being NFC."""
    import unicodedata

    from memory.mentions import mentions

    def nfd(text: str) -> str:
        return unicodedata.normalize("NFD", text)

    sword = await campaign.graph.add_entity(EntityIn(name="Ragnarök", type=EntityType.item))
    rec = await SessionRecorder.start(campaign, "Night 1", index_cache=CorrectionIndexCache())
    said = nfd("Zoë hides the Ragnarök shard.")
    await rec.add(Utterance(speaker="DM", text=said, words=[Word(word=w, confidence=0.9) for w in said.split()]))
    await rec.flush()
    [line] = await campaign.log.session_entries(rec.session.id)
    assert line.text == line.raw_text == "Zoë hides the Ragnarök shard."
    for query in ("Ragnarök shard", nfd("Ragnarök shard")):
        assert [hit.id for hit in await campaign.log.search(query)] == [line.id], query
    assert [m.entry_id for m in (await mentions(campaign.db, campaign.campaign_id, sword.id)).lines] == [line.id]
