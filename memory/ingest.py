"""Importing a transcript file into a campaign: read, record (correct + L1 + jobs), end the sessions."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from pathlib import Path

from pydantic import BaseModel, Field

from memory.errors import AlreadyExistsError, quoted
from memory.offgame import dm_speaker
from memory.recorder import SessionRecorder, Utterance
from memory.session_log import ListedSession
from memory.store import CampaignMemory
from memory.text import counted
from memory.transcripts import Line, Skipped, read_transcript

#: Lines of each session of an import compared with what is stored: enough to know a transcript again.
COMPARED_LINES = 100


class IngestReport(BaseModel):
    sessions: list[str] = Field(default_factory=list)
    lines: int = 0  # utterances read
    written: int = 0  # new to L1 (0 when the same file is imported again)
    corrections: int = 0
    skipped: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)  # a recording read, but not whole (cut short, damaged)
    # a session's narrator taken as the speaker who said the most, as no label ("DM", "Marcus (DM)") said who
    guessed_dm: dict[str, str] = Field(default_factory=dict)
    l1_seconds: float = 0.0  # wall time of the L1 path (correction + write + enqueue)


async def ingest_file(
    mem: CampaignMemory,
    path: str | Path,
    *,
    session_title: str | None = None,
    batch_size: int = 500,
    stage2: bool = False,
    on_skip: Callable[[str], None] | None = None,
    started_at: date | None = None,
    again: bool = False,
    on_progress: Callable[[int, int], None] | None = None,
) -> IngestReport:
    """Import ``path``; lines naming a ``session`` go to that session, the others to ``session_title``
    (default: the file's name). Sessions are created in the order they first appear and ended at the end;
    ``started_at`` is when they were played (default: now, for a new session). A transcript already stored as
    another session is refused before anything is written, unless ``again``. ``on_progress(stored, total)`` is
    called after each line handed to its session (written in batches of ``batch_size``)."""
    path = Path(path)
    report = IngestReport()
    default_title = session_title or path.stem
    total = 0
    firsts: dict[str, list[Utterance]] = {}
    if not again or on_progress is not None:
        for item in read_transcript(path):  # a first pass: a session may start on the file's last line
            if isinstance(item, Line):
                total += 1
                lines = firsts.setdefault(item.session or default_title, [])
                if len(lines) < COMPARED_LINES:
                    lines.append(item.utterance)
    async with mem.log.importing():
        if not again:
            await refuse_stored_copy(mem, path.name, firsts)
        recorders: dict[str, SessionRecorder] = {}
        words: dict[str, Counter[str]] = {}
        started = time.perf_counter()
        for item in read_transcript(path):
            if isinstance(item, Skipped):
                message = item.message(path)
                report.skipped.append(message)
                if on_skip is not None:
                    on_skip(message)
                continue
            assert isinstance(item, Line)
            title = item.session or default_title
            recorder = recorders.get(title)
            if recorder is None:
                recorder = await SessionRecorder.start(
                    mem, title, started_at=started_at, batch_size=batch_size, max_delay_s=1e9, stage2=stage2
                )
                recorders[title] = recorder
                report.sessions.append(title)
            await recorder.add(item.utterance)
            words.setdefault(title, Counter())[item.utterance.speaker] += len(item.utterance.text.split())
            report.lines += 1
            if on_progress is not None:
                on_progress(report.lines, max(total, report.lines))  # the file may have grown since
        for recorder in recorders.values():
            await recorder.end()
            report.written += recorder.written
            report.corrections += recorder.corrections
    report.l1_seconds = time.perf_counter() - started
    for title, said in words.items():
        dm, guessed = dm_speaker(said)
        if guessed and len(said) > 1:
            report.guessed_dm[title] = dm
    return report


class ImportCounts(BaseModel):
    """What the background jobs have made of an import's sessions so far (:func:`import_counts`)."""

    lines: int = 0  # in the import's sessions
    embedded: int = 0  # lines the chunk-and-embed step has passed
    extracted: int = 0  # lines the extraction step has read
    sessions: int = 0
    recapped: int = 0  # sessions with a summary
    passages: int = 0  # chunks (L2) of these sessions
    entities: int = 0  # accepted entities these sessions brought
    pending_entities: int = 0
    facts: int = 0
    pending_facts: int = 0


#: A row the summary job wrote, the session's recap event or a link to it (``memory.graph.took_part``): inferred,
#: and from no line of its own, as nothing the extraction proposes is.
_RECAPPED = "(provenance ->> 'source' = 'inferred' AND coalesce(jsonb_array_length(provenance -> 'entry_ids'), 0) = 0)"


async def import_counts(mem: CampaignMemory, session_ids: Sequence[int]) -> ImportCounts:
    """How far the background work on ``session_ids`` is, and what it has stored (entities and facts by their
    provenance's session)."""
    from memory.jobs.queue import CHUNK, EXTRACT  # pgqueuer is slow to import: only for a wait

    row = await mem.db.fetchrow(
        f"""
        WITH lines AS (
                SELECT id, session_id, seq FROM session_entries WHERE campaign_id = $1 AND session_id = ANY($2)
             ),
             reach AS (  -- the last line of each session each step has passed
                SELECT s AS session_id,
                       (SELECT last_seq FROM ingest_progress
                         WHERE campaign_id = $1 AND session_id = s AND step = $3) AS embedded,
                       (SELECT last_seq FROM ingest_progress
                         WHERE campaign_id = $1 AND session_id = s AND step = $4) AS extracted
                FROM unnest($2::bigint[]) AS s
             )
        SELECT (SELECT count(*) FROM lines) AS lines,
               -- the chunk job writes its windows first, then embeds the lines slice by slice: a line counts once
               -- its vector is written (or, too short for one, its row), not once a window holds it
               (SELECT count(*) FROM lines JOIN reach USING (session_id)
                 WHERE seq <= embedded
                    OR EXISTS (SELECT 1 FROM line_vectors v WHERE v.campaign_id = $1 AND v.entry_id = lines.id))
                 AS embedded,
               (SELECT count(*) FROM lines JOIN reach USING (session_id) WHERE seq <= extracted) AS extracted,
               (SELECT count(*) FROM sessions WHERE campaign_id = $1 AND id = ANY($2)) AS sessions,
               (SELECT count(*) FROM sessions WHERE campaign_id = $1 AND id = ANY($2) AND summary IS NOT NULL)
                 AS recapped,
               (SELECT count(*) FROM chunks WHERE campaign_id = $1 AND session_id = ANY($2)) AS passages,
               -- what was learned: not the session's recap event and its links of who took part, the summary
               -- job's (inferred from no line in particular), which a session of 30 names made "33 facts"
               (SELECT count(*) FROM entities WHERE campaign_id = $1 AND status = 'accepted'
                  AND provenance ->> 'session_id' = ANY($5::text[]) AND NOT {_RECAPPED}) AS entities,
               (SELECT count(*) FROM entities WHERE campaign_id = $1 AND status = 'pending'
                  AND provenance ->> 'session_id' = ANY($5::text[])) AS pending_entities,
               (SELECT count(*) FROM relationships WHERE campaign_id = $1 AND status = 'accepted'
                  AND provenance ->> 'session_id' = ANY($5::text[]) AND NOT {_RECAPPED}) AS facts,
               (SELECT count(*) FROM relationships WHERE campaign_id = $1 AND status = 'pending'
                  AND provenance ->> 'session_id' = ANY($5::text[])) AS pending_facts
        """,
        mem.campaign_id,
        list(session_ids),
        CHUNK,
        EXTRACT,
        [str(i) for i in session_ids],
    )
    return ImportCounts(**dict(row))


async def refuse_stored_copy(mem: CampaignMemory, what: str, firsts: Mapping[str, Sequence[Utterance]]) -> None:
    """Raise if the first lines of a session to import are stored as another session already (the same file
    imported without its ``--session`` title, or under another): a copy would double its lines, facts and recap."""
    for title, utterances in firsts.items():
        stored = await mem.log.stored_as(title, [(u.seq or 0, u.speaker, u.text) for u in utterances])
        if stored is not None:
            raise already_imported(what, stored)


def already_imported(what: str, stored: ListedSession) -> AlreadyExistsError:
    return AlreadyExistsError(
        f"{what} is already imported as session {quoted(stored.title)} ({counted(stored.lines, 'line')})",
        subject="imported transcript",
        name=stored.title,
    )
