"""L1, the session log: sessions and every utterance in them, raw and corrected, with full-text search."""

from __future__ import annotations

import contextlib
import json
import re
import unicodedata
from collections.abc import AsyncIterator, Collection, Sequence
from dataclasses import dataclass
from datetime import date, datetime

import asyncpg

from memory.db import Executor, connection, transaction
from memory.errors import AlreadyExistsError, InvalidInputError, NotFoundError, did_you_mean, quoted
from memory.mentions import MENTION_RULES
from memory.models import PERSON_TYPES, Correction, Entry, EntryHit, EntryIn, Session, start_of
from memory.offgame import DM_NAMES, dm_speaker
from memory.text import clip, session_title

_ENTRY_COLUMNS = """id, campaign_id, session_id, seq, speaker, speaker_id, raw_text, text, start_s, end_s,
                    duration_s, ref, corrections, suspects, confidences, created_at"""


@dataclass(frozen=True, slots=True)
class _Near:
    """An entity whose name holds a word asked for as someone's name, as :func:`short_names` reads it."""

    id: int
    name: str
    aliases: list[str]
    played: bool  # it has a played_by: a character whose player's lines it stands for


#: A line's raw text with its accents dropped, as :func:`memory.correction.text.name_norm` drops them from names
#: and phrases: what :func:`_saying` is matched against ("café bar" and "cafe bar" both find "The café bar owner").
_RAW_FOLDED = r"regexp_replace(normalize(raw_text, NFKD), '[\u0300-\u036f]', '', 'g')"


def _saying(phrases: Sequence[str]) -> str:
    """A regular expression (PostgreSQL's) for ``phrases`` said: whole words from the first, in a row, accents
    dropped (match it against :data:`_RAW_FOLDED`)."""
    from memory.correction.text import name_norm

    said = sorted({tuple(name_norm(p).split()) for p in phrases} - {()})
    words = "|".join(r"[[:space:]\-‐‑]*".join("['’‘]?".join(word) for word in phrase) for phrase in said)
    return rf"\m(?:{words})"


#: A quoted phrase of a web-search query, not a negated one (``-"…"``).
_QUOTED = re.compile(r'(?<![-\w])"([^"]+)"')


def _quoted_said(query: str) -> str | None:
    """A regular expression (PostgreSQL's) for any quoted phrase of a web-search ``query`` said word for word
    (case and the punctuation between words aside); None when it quotes none. English full text drops a phrase's
    stop words: "between him and Lady Briarwood" would find every "Lady Briarwood"."""
    phrases = [re.findall(r"\w+", phrase) for phrase in _QUOTED.findall(query)]
    said = "|".join(r"\W+".join(words) for words in phrases if words)
    return rf"\m(?:{said})\M" if said else None


#: How "the DM" is asked for as a speaker (`search --speaker GM`; "what did the DM say"): each session's narrator.
DM_NAMES_ASKED = frozenset(name.casefold() for name in DM_NAMES)
#: Speakers an error about a name no line was said by lists, who said most first, when none is close to it.
SPEAKERS_LISTED = 8
#: Advisory-lock key space of session appends (far from the migration lock's key).
_APPEND_LOCK = 1 << 48
#: Advisory-lock key space of a campaign's imports (:meth:`SessionLog.importing`); the graph's is ``2 << 48``.
_IMPORT_LOCK = 3 << 48
#: Advisory-lock key space of the revisions of a campaign's stored lines (:meth:`SessionLog.lock_revisions`).
_REVISE_LOCK = 4 << 48


def _in_seq_order(entries: Sequence[EntryIn], written: Sequence[Entry]) -> list[EntryIn]:
    """The inputs lined up with the rows written (sorted by seq); unsequenced ones keep their order."""
    if all(e.seq is not None for e in entries):
        return sorted(entries, key=lambda e: e.seq or 0)
    return list(entries)


def _differs(wanted: EntryIn, stored: Entry) -> bool:
    # a speaker's case is no other transcript: earlier versions wrote CRD3's "DM" as "Dm"
    return (wanted.raw_text if wanted.raw_text is not None else wanted.text) != stored.raw_text or (
        wanted.speaker.casefold() != stored.speaker.casefold()
    )


def _entry(row: asyncpg.Record) -> Entry:
    return Entry(**{k: row[k] for k in Entry.model_fields})


#: A session's line count, for queries on ``sessions s`` that return a :class:`ListedSession`.
_LINES = "(SELECT count(*) FROM session_entries l WHERE l.campaign_id = s.campaign_id AND l.session_id = s.id) AS lines"


def _clipped(said: str) -> str:
    """A line quoted in a message, its first 60 characters."""
    return quoted(clip(said, 60))


class ListedSession(Session):
    lines: int  # utterances stored


class SessionLog:
    def __init__(self, db: Executor, campaign_id: int) -> None:
        self.db = db
        self.campaign_id = campaign_id

    # sessions ---------------------------------------------------------------------------------------------

    async def start_session(self, title: str, *, started_at: date | None = None) -> Session:
        """A new session, started now unless ``started_at`` says when it was played (an import of an old one; a
        ``date``: that day alone, see :func:`start_of`)."""
        at, date_only = start_of(started_at) if started_at is not None else (None, False)
        try:
            row = await self.db.fetchrow(
                """
                INSERT INTO sessions (campaign_id, title, started_at, mention_rules, date_only)
                VALUES ($1, $2, coalesce($3, now()), $4, $5)
                RETURNING *
                """,
                self.campaign_id,
                session_title(title) or "Untitled session",
                at,
                MENTION_RULES,  # its lines are indexed as they come, under these rules
                date_only,
            )
        except asyncpg.UniqueViolationError:
            raise AlreadyExistsError(f"this campaign already has a session titled {quoted(title)}") from None
        return Session(**dict(row))

    async def set_mention_rules(self, session_id: int, version: int) -> None:
        """Record that the session's lines were all indexed under the name rules ``version``."""
        await self.db.execute(
            "UPDATE sessions SET mention_rules = $3 WHERE campaign_id = $1 AND id = $2",
            self.campaign_id,
            session_id,
            version,
        )

    async def set_started(self, session_id: int, started_at: date) -> Session:
        """Say when a session was played (a ``date``: that day alone): an import made before anyone said so started
        when it was imported."""
        at, date_only = start_of(started_at)
        row = await self.db.fetchrow(
            "UPDATE sessions SET started_at = $3, date_only = $4 WHERE campaign_id = $1 AND id = $2 RETURNING *",
            self.campaign_id,
            session_id,
            at,
            date_only,
        )
        if row is None:
            raise NotFoundError(f"no session {session_id} in this campaign")
        return Session(**dict(row))

    async def set_dm(self, session_id: int, speaker_id: str) -> Session:
        """Whose lines in a recorded session are the DM's (who started it): see ``Session.dm_speaker_id``."""
        row = await self.db.fetchrow(
            "UPDATE sessions SET dm_speaker_id = $3 WHERE campaign_id = $1 AND id = $2 RETURNING *",
            self.campaign_id,
            session_id,
            speaker_id,
        )
        if row is None:
            raise NotFoundError(f"no session {session_id} in this campaign")
        return Session(**dict(row))

    async def session(self, session_id: int) -> Session:
        row = await self.db.fetchrow(
            "SELECT * FROM sessions WHERE campaign_id = $1 AND id = $2", self.campaign_id, session_id
        )
        if row is None:
            raise NotFoundError(f"no session {session_id} in this campaign")
        return Session(**dict(row))

    async def session_by_title(self, title: str) -> Session | None:
        row = await self.db.fetchrow(
            "SELECT * FROM sessions WHERE campaign_id = $1 AND lower(title) = lower($2)",
            self.campaign_id,
            session_title(title),
        )
        return Session(**dict(row)) if row else None

    async def sessions(self) -> list[Session]:
        rows = await self.db.fetch(
            "SELECT * FROM sessions WHERE campaign_id = $1 ORDER BY started_at, id", self.campaign_id
        )
        return [Session(**dict(r)) for r in rows]

    async def narrators(self) -> dict[int, str]:
        """Who narrates each session with lines, by session id (:func:`memory.offgame.narrator`): the user who ran a
        recorded one, else the speaker labelled DM ("Marcus (DM)"), else who said the most words. From the words
        each speaker said in each session, which triggers keep (migration 0027): a question reads no line."""
        rows = await self.db.fetch(
            """
            SELECT w.session_id, w.speaker, bool_or(w.speaker_id = s.dm_speaker_id) AS ran, sum(w.words) AS words
            FROM session_speakers w JOIN sessions s ON s.campaign_id = w.campaign_id AND s.id = w.session_id
            WHERE w.campaign_id = $1 GROUP BY w.session_id, w.speaker
            """,
            self.campaign_id,
        )
        words: dict[int, dict[str, int]] = {}
        ran: dict[int, str] = {}
        for r in rows:
            words.setdefault(r["session_id"], {})[r["speaker"]] = int(r["words"])
            if r["ran"]:
                ran[r["session_id"]] = r["speaker"]
        return {session_id: ran.get(session_id) or dm_speaker(said)[0] for session_id, said in words.items()}

    async def speakers_called(self, name: str) -> tuple[list[str], set[tuple[str, int]]]:
        """The speakers whose lines ``name`` asks for, and the (speaker lowercased, session id) pairs of them it
        leaves out, as recall reads "what did X say": "DM", "GM" each session's narrator (their lines of the
        sessions another narrates left out: "DM" one night, "Marcus" the next); else a speaker named so; else the
        players of a public character named so; else the :class:`NotFoundError` of :meth:`check_speaker`."""
        if name.strip().casefold() in DM_NAMES_ASKED:
            narrators = await self.narrators()
            names = list(dict.fromkeys(narrators.values()))
            left = {(n.casefold(), sid) for sid, by in narrators.items() for n in names if n != by}
            if names:
                return names, left
        if await self._said_by(name):
            return [name], set()
        players = await self._players_of(name)
        if players:
            return players, set()
        await self.check_speaker(name)
        return [name], set()  # no lines yet

    async def _said_by(self, name: str) -> bool:
        return bool(
            await self.db.fetchval(
                "SELECT EXISTS (SELECT 1 FROM session_entries WHERE campaign_id = $1 AND lower(speaker) = lower($2))",
                self.campaign_id,
                name,
            )
        )

    async def longest_said(
        self,
        speakers: Sequence[str],
        session_ids: Sequence[int] | None,
        excluded: Collection[tuple[str, int]],
        limit: int,
    ) -> list[Entry]:
        """The ``limit`` longest lines ``speakers`` said (any case) in ``session_ids`` (None: any), longest first;
        none of a (speaker lowercased, session id) pair ``excluded``, none the chunk job marked as the pre-show, a
        break or the after-show."""
        rows = await self.db.fetch(
            f"""
            SELECT {_ENTRY_COLUMNS} FROM session_entries e
            WHERE e.campaign_id = $1 AND lower(e.speaker) = ANY($2::text[])
              AND ($3::bigint[] IS NULL OR e.session_id = ANY($3::bigint[]))
              AND NOT EXISTS (
                  SELECT FROM unnest($4::text[], $5::bigint[]) AS x(speaker, session_id)
                  WHERE x.session_id = e.session_id AND x.speaker = lower(e.speaker))
              AND NOT EXISTS (
                  SELECT FROM line_vectors v WHERE v.campaign_id = $1 AND v.entry_id = e.id AND v.talk IS NOT NULL)
            ORDER BY length(e.text) DESC, e.id LIMIT $6
            """,
            self.campaign_id,
            [s.lower() for s in speakers],
            None if session_ids is None else list(session_ids),
            [speaker for speaker, _ in excluded],
            [session for _, session in excluded],
            limit,
        )
        return [_entry(r) for r in rows]

    async def stored_as(self, title: str, lines: Sequence[tuple[int, str, str]]) -> ListedSession | None:
        """The session other than ``title``'s that already holds more than half of ``lines`` (seq, speaker,
        words as given): the same transcript imported again under another title. None when
        ``title``'s own session holds them too (an import resumed)."""
        if not lines:
            return None
        rows = await self.db.fetch(
            f"""
            SELECT s.*, lower(s.title) = lower($6) AS own, {_LINES}
            FROM sessions s
            JOIN session_entries e ON e.campaign_id = s.campaign_id AND e.session_id = s.id
            JOIN unnest($2::int[], $3::text[], $4::text[]) AS i(seq, speaker, raw_text)
              ON e.seq = i.seq AND lower(e.speaker) = lower(i.speaker) AND e.raw_text = i.raw_text
            WHERE s.campaign_id = $1
            GROUP BY s.id HAVING count(*) * 2 > $5
            ORDER BY count(*) DESC, s.started_at, s.id
            """,
            self.campaign_id,
            [seq for seq, _, _ in lines],
            [speaker for _, speaker, _ in lines],
            [text for _, _, text in lines],
            len(lines),
            session_title(title),
        )
        if not rows or any(r["own"] for r in rows):
            return None
        row = dict(rows[0])
        del row["own"]
        return ListedSession(**row)

    @contextlib.asynccontextmanager
    async def importing(self) -> AsyncIterator[None]:
        """The campaign's turn to import, held from the check for a stored copy to the last line written (many
        transactions): two imports of one file at once would both find it new and both write it. The second
        waits, then finds the first's lines as any later import does."""
        key = _IMPORT_LOCK + self.campaign_id
        async with connection(self.db) as conn:
            await conn.execute("SELECT pg_advisory_lock($1::bigint)", key)
            try:
                yield
            finally:
                if not conn.is_closed():  # a connection lost holds no lock
                    await conn.execute("SELECT pg_advisory_unlock($1::bigint)", key)

    async def recorded_from(self, title: str, digests: Sequence[bytes]) -> ListedSession | None:
        """The session other than ``title``'s transcribed from one of these audio files (SHA-256 of each)."""
        row = await self.db.fetchrow(
            f"""
            SELECT s.*, {_LINES}
            FROM sessions s
            WHERE s.campaign_id = $1 AND lower(s.title) <> lower($2) AND EXISTS (
                SELECT 1 FROM session_recordings r
                WHERE r.campaign_id = s.campaign_id AND r.session_id = s.id AND r.sha256 = ANY($3::bytea[])
            )
            ORDER BY s.started_at, s.id LIMIT 1
            """,
            self.campaign_id,
            session_title(title),
            list(digests),
        )
        return ListedSession(**dict(row)) if row else None

    async def recorded_in(self, title: str, digests: Sequence[bytes]) -> ListedSession | None:
        """The session titled ``title``, if it was transcribed from every one of these audio files (SHA-256 of
        each): importing them into it again has nothing to add."""
        row = await self.db.fetchrow(
            f"""
            SELECT s.*, {_LINES}
            FROM sessions s
            WHERE s.campaign_id = $1 AND lower(s.title) = lower($2) AND NOT EXISTS (
                SELECT 1 FROM unnest($3::bytea[]) AS d
                WHERE NOT EXISTS (
                    SELECT 1 FROM session_recordings r
                    WHERE r.campaign_id = s.campaign_id AND r.session_id = s.id AND r.sha256 = d
                )
            )
            """,
            self.campaign_id,
            session_title(title),
            list(digests),
        )
        return ListedSession(**dict(row)) if row else None

    async def held_from_elsewhere(self, title: str, ref_prefixes: Sequence[str]) -> ListedSession | None:
        """The session titled ``title`` if it holds lines and none of them has a ref starting with one of
        ``ref_prefixes``: its lines are of another recording or transcript, which lines of these would clash with."""
        row = await self.db.fetchrow(
            f"""
            SELECT s.*, {_LINES}
            FROM sessions s
            WHERE s.campaign_id = $1 AND lower(s.title) = lower($2)
            AND EXISTS (SELECT 1 FROM session_entries e WHERE e.campaign_id = s.campaign_id AND e.session_id = s.id)
            AND NOT EXISTS (
                SELECT 1 FROM session_entries e, unnest($3::text[]) AS p
                WHERE e.campaign_id = s.campaign_id AND e.session_id = s.id AND starts_with(e.ref, p)
            )
            """,
            self.campaign_id,
            session_title(title),
            list(ref_prefixes),
        )
        return ListedSession(**dict(row)) if row else None

    async def speaker_names(self, session_id: int) -> dict[str, str]:
        """The name each speaker id (a Discord user's) last spoke under in the session."""
        rows = await self.db.fetch(
            """
            SELECT DISTINCT ON (speaker_id) speaker_id, speaker FROM session_entries
            WHERE campaign_id = $1 AND session_id = $2 AND speaker_id IS NOT NULL
            ORDER BY speaker_id, seq DESC
            """,
            self.campaign_id,
            session_id,
        )
        return {r["speaker_id"]: r["speaker"] for r in rows}

    async def held_refs(self, session_id: int, refs: Sequence[str]) -> set[str]:
        """Which of ``refs`` the session's lines have."""
        rows = await self.db.fetch(
            "SELECT DISTINCT ref FROM session_entries WHERE campaign_id = $1 AND session_id = $2 AND ref = ANY($3)",
            self.campaign_id,
            session_id,
            list(refs),
        )
        return {r["ref"] for r in rows}

    async def add_recordings(self, session_id: int, recordings: Sequence[tuple[bytes, str]]) -> None:
        """Remember the audio files (SHA-256, file name) ``session_id`` was transcribed from."""
        await self.db.execute(
            """
            INSERT INTO session_recordings (campaign_id, session_id, sha256, name)
            SELECT $1, $2, d, n FROM unnest($3::bytea[], $4::text[]) AS i(d, n)
            ON CONFLICT DO NOTHING
            """,
            self.campaign_id,
            session_id,
            [digest for digest, _ in recordings],
            [name for _, name in recordings],
        )

    async def listed(self) -> list[ListedSession]:
        """Every session as played (oldest first), with how many lines each holds."""
        rows = await self.db.fetch(
            f"""
            SELECT s.*, {_LINES}
            FROM sessions s WHERE s.campaign_id = $1 ORDER BY s.started_at, s.id
            """,
            self.campaign_id,
        )
        return [ListedSession(**dict(r)) for r in rows]

    async def deletable(self, title: str | int, *, even_if_live: bool = False) -> ListedSession:
        """The session titled ``title`` (or with that id), locked until the transaction ends, if it may be deleted:
        one not ended may be being recorded, refused unless ``even_if_live``."""
        row = await self.db.fetchrow(
            f"""
            SELECT s.*, {_LINES}
            FROM sessions s WHERE s.campaign_id = $1 AND (s.id = $2 OR lower(s.title) = lower($3)) FOR UPDATE OF s
            """,
            self.campaign_id,
            title if isinstance(title, int) else None,
            None if isinstance(title, int) else session_title(title),
        )
        if row is None:
            if isinstance(title, int):
                raise NotFoundError(f"no session with id {title} in this campaign (deleted meanwhile?)")
            hint = did_you_mean(title, [s.title for s in await self.sessions()])
            raise NotFoundError(
                f"no session titled {quoted(title)} in this campaign{hint}", subject="session", name=title
            )
        if row["ended_at"] is None and not even_if_live:
            raise InvalidInputError(
                f"session {quoted(row['title'])} has not ended (it may be being recorded or imported right now)",
                subject="live session",
                name=row["title"],
            )
        return ListedSession(**dict(row))

    async def end_session(self, session_id: int) -> Session:
        row = await self.db.fetchrow(
            "UPDATE sessions SET ended_at = coalesce(ended_at, now()) WHERE campaign_id = $1 AND id = $2 RETURNING *",
            self.campaign_id,
            session_id,
        )
        if row is None:
            raise NotFoundError(f"no session {session_id} in this campaign")
        return Session(**dict(row))

    async def set_summary(self, session_id: int, summary: str) -> None:
        """The session's recap; it does not end the session (one resumed since its last end is live again)."""
        await self.db.execute(
            "UPDATE sessions SET summary = $3 WHERE campaign_id = $1 AND id = $2", self.campaign_id, session_id, summary
        )

    async def set_ended(self, session_id: int, ended_at: datetime | None) -> Session:
        """Say when a session ended; None: it is being recorded again (an ended session resumed)."""
        row = await self.db.fetchrow(
            "UPDATE sessions SET ended_at = $3 WHERE campaign_id = $1 AND id = $2 RETURNING *",
            self.campaign_id,
            session_id,
            ended_at,
        )
        if row is None:
            raise NotFoundError(f"no session {session_id} in this campaign")
        return Session(**dict(row))

    async def discard_if_empty(self, session_id: int) -> bool:
        """Delete a session nothing was said in (its voice channel could not be joined); whether it was."""
        status = await self.db.execute(
            """
            DELETE FROM sessions s WHERE s.campaign_id = $1 AND s.id = $2
            AND NOT EXISTS (SELECT 1 FROM session_entries e WHERE e.campaign_id = s.campaign_id AND e.session_id = s.id)
            """,
            self.campaign_id,
            session_id,
        )
        return status == "DELETE 1"

    # entries ----------------------------------------------------------------------------------------------

    async def write(self, session_id: int, entry: EntryIn) -> Entry:
        (written,) = await self.write_many(session_id, [entry])
        return written

    async def write_many(self, session_id: int, entries: Sequence[EntryIn]) -> list[Entry]:
        """Append utterances in one statement. Entries without ``seq`` follow the session's last one.

        Writing an entry whose ``(session, seq)`` holds the same words returns the stored row unchanged, so
        replaying a transcript or a spool never duplicates a line; other words at a taken ``seq`` (another file
        imported into the same session) raise :class:`AlreadyExistsError` instead of being dropped."""
        if not entries:
            return []
        async with transaction(self.db) as conn:
            if any(e.seq is None for e in entries):
                # Appends compute "after the last line" from their snapshot: one appender per session at a time,
                # or two would both take the same seq and one would lose its line.
                await conn.execute("SELECT pg_advisory_xact_lock($1::bigint)", _APPEND_LOCK + session_id)
            rows = await self._insert(conn, session_id, entries)
        written = sorted((_entry(r) for r in rows), key=lambda e: e.seq)
        clashes = [(e, w) for e, w in zip(_in_seq_order(entries, written), written, strict=True) if _differs(e, w)]
        if clashes:
            e, w = clashes[0]
            raise AlreadyExistsError(
                f"line {w.seq} of this session already says {_clipped(w.raw_text)} ({w.speaker}), not "
                f"{_clipped(e.raw_text or e.text)} ({e.speaker}): a different transcript needs a session of its own",
                subject="transcript",
            )
        return written

    async def _insert(
        self, conn: asyncpg.Connection, session_id: int, entries: Sequence[EntryIn]
    ) -> list[asyncpg.Record]:
        return await conn.fetch(
            f"""
            WITH base AS (
                SELECT coalesce(max(seq), 0) AS last FROM session_entries
                WHERE campaign_id = $1 AND session_id = $2
            ), incoming AS (
                SELECT * FROM unnest($3::int[], $4::text[], $5::text[], $6::text[], $7::text[],
                                     $8::float8[], $9::float8[], $10::text[], $11::text[], $12::text[],
                                     $13::text[])
                    WITH ORDINALITY AS t(seq, speaker, speaker_id, raw_text, text, start_s, end_s, ref,
                                         corrections, suspects, confidences, n)
            )
            INSERT INTO session_entries AS e
                (campaign_id, session_id, seq, speaker, speaker_id, raw_text, text, start_s, end_s, ref,
                 corrections, suspects, confidences)
            SELECT $1, $2, coalesce(i.seq, base.last + i.n), i.speaker, i.speaker_id, i.raw_text, i.text,
                   i.start_s, i.end_s, i.ref, i.corrections::jsonb, i.suspects::jsonb,
                   -- one array a line: unnest would flatten a real[][], so each comes as a JSON list
                   (SELECT array_agg(w.conf::real ORDER BY w.k)
                    FROM jsonb_array_elements_text(i.confidences::jsonb) WITH ORDINALITY AS w(conf, k))
            FROM incoming i, base
            ORDER BY i.n
            ON CONFLICT (campaign_id, session_id, seq) DO UPDATE SET seq = e.seq
            RETURNING {_ENTRY_COLUMNS}
            """,
            self.campaign_id,
            session_id,
            [e.seq for e in entries],
            [e.speaker for e in entries],
            [e.speaker_id for e in entries],
            [e.raw_text if e.raw_text is not None else e.text for e in entries],
            [e.text for e in entries],
            [e.start_s for e in entries],
            [e.end_s for e in entries],
            [e.ref for e in entries],
            [json.dumps([c.model_dump() for c in e.corrections]) for e in entries],
            [json.dumps(e.suspects) for e in entries],
            [json.dumps(e.confidences) if e.confidences is not None else None for e in entries],
        )

    async def revise(self, entry_id: int, text: str, corrections: Sequence[Correction]) -> None:
        """Replace an entry's corrected text (a later correction stage); the raw text never changes."""
        await self.db.execute(
            "UPDATE session_entries SET text = $3, corrections = $4 WHERE campaign_id = $1 AND id = $2",
            self.campaign_id,
            entry_id,
            text,
            [c.model_dump() for c in corrections],
        )

    async def heard_in(self, session_id: int, phrases: Sequence[str]) -> list[int]:
        """The session's lines whose raw text says one of ``phrases`` (heard-as phrases), by id: their words in a
        row, case, apostrophes, hyphens and spacing aside ("From-skin's" says "from skin"). One scan of the session
        in the database; the matcher has the last word."""
        rows = await self.db.fetch(
            f"SELECT id FROM session_entries WHERE campaign_id = $1 AND session_id = $2 AND {_RAW_FOLDED} ~* $3"
            " ORDER BY seq",
            self.campaign_id,
            session_id,
            _saying(phrases),
        )
        return [r["id"] for r in rows]

    async def count_heard(self, phrases: Sequence[str]) -> int | None:
        """How many of the campaign's lines say one of ``phrases`` as :meth:`heard_in` finds them, among those whose
        text the full-text index holds them in (a correction made there before may have changed a word): index
        lookups, not a scan of the campaign's million lines. None when a phrase is only words the index leaves out
        ("and then")."""
        if not phrases or await self.db.fetchval(
            "SELECT bool_or(numnode(phraseto_tsquery('english', searchable(p))) = 0) FROM unnest($1::text[]) p",
            list(phrases),
        ):
            return None
        queries = [f"phraseto_tsquery('english', searchable(${i}))" for i in range(3, len(phrases) + 3)]
        return await self.db.fetchval(
            f"""
            SELECT count(*) FROM session_entries
            WHERE campaign_id = $1 AND tsv @@ ({" || ".join(queries)}) AND {_RAW_FOLDED} ~* $2
            """,
            self.campaign_id,
            _saying(phrases),
            *phrases,
        )

    async def corrected_in(
        self, session_id: int, entity_id: int, phrases: Sequence[str], *, any_stage: bool = False
    ) -> list[int]:
        """The session's lines holding a stage-1 (``any_stage``: or stage-2) correction to the entity ``entity_id``
        whose raw text says one of ``phrases`` (as :meth:`heard_in` finds them), by id: where a heard-as phrase
        taken away may have been corrected. One scan of the session; the caller reads the corrections' spans."""
        rows = await self.db.fetch(
            f"""
            SELECT id FROM session_entries
            WHERE campaign_id = $1 AND session_id = $2 AND corrections @> $3::jsonb AND {_RAW_FOLDED} ~* $4
            ORDER BY seq
            """,
            self.campaign_id,
            session_id,
            [{"entity_id": entity_id} | ({} if any_stage else {"stage": 1})],
            _saying(phrases),
        )
        return [r["id"] for r in rows]

    async def count_corrected(
        self, entity_id: int, phrases: Sequence[str], names: Sequence[str], *, any_stage: bool = False
    ) -> int | None:
        """How many of the campaign's lines hold a stage-1 (``any_stage``: or stage-2) correction of one of
        ``phrases`` (spacing and punctuation aside; ``any_stage``: or of its plural, which stage 2 may have made the
        name) to the entity ``entity_id``, among those whose text the full-text index holds one of ``names`` (what
        the entity is called: the corrections wrote it) in, as :meth:`count_heard` counts: index lookups, not a
        scan. None when a name is only words the index leaves out."""
        from memory.correction.text import spaceless

        names = [n for n in names if n.strip()]
        if (
            not phrases
            or not names
            or await self.db.fetchval(
                "SELECT bool_or(numnode(phraseto_tsquery('english', searchable(n))) = 0) FROM unnest($1::text[]) n",
                names,
            )
        ):
            return None
        queries = [f"phraseto_tsquery('english', searchable(${i}))" for i in range(6, len(names) + 6)]
        return await self.db.fetchval(
            f"""
            SELECT count(*) FROM session_entries
            WHERE campaign_id = $1 AND tsv @@ ({" || ".join(queries)}) AND {_RAW_FOLDED} ~* $2
              AND EXISTS (
                  SELECT 1 FROM jsonb_array_elements(corrections) c,
                      LATERAL (SELECT regexp_replace(normalize(lower(c ->> 'span'), NFKD), '[^[:alnum:]]+', '', 'g')
                               AS said) s
                  WHERE c ->> 'entity_id' = $3::bigint::text AND (c ->> 'stage' = '1' OR $5)
                    AND (s.said = ANY($4) OR ($5 AND s.said LIKE '%s' AND left(s.said, -1) = ANY($4))))
            """,
            self.campaign_id,
            _saying(phrases),
            entity_id,
            sorted({spaceless(p) for p in phrases}),
            any_stage,
            *names,
        )

    async def lock_revisions(self) -> None:
        """Wait for the revisions of the campaign's lines in progress, and hold off new ones, until the transaction
        ends: a writer locks the lines it revises (``entries(for_update=True)``) only after this, so a job listing
        the lines to undo after taking it sees what a writer that read the names before the DM's edit wrote."""
        await self.db.execute("SELECT pg_advisory_xact_lock($1::bigint)", _REVISE_LOCK + self.campaign_id)

    async def entries(self, ids: Sequence[int], *, for_update: bool = False) -> list[Entry]:
        """The lines of ``ids``; ``for_update``: locked until the transaction ends, for a writer that revises
        what they hold now (another correction may have revised them since it last read them), after
        :meth:`lock_revisions`."""
        if for_update:
            await self.lock_revisions()
        rows = await self.db.fetch(
            f"SELECT {_ENTRY_COLUMNS} FROM session_entries WHERE campaign_id = $1 AND id = ANY($2::bigint[])"
            f" ORDER BY session_id, seq{' FOR UPDATE' if for_update else ''}",
            self.campaign_id,
            list(ids),
        )
        return [_entry(r) for r in rows]

    async def session_entries(self, session_id: int, *, after_seq: int = 0, limit: int | None = None) -> list[Entry]:
        rows = await self.db.fetch(
            f"""
            SELECT {_ENTRY_COLUMNS} FROM session_entries
            WHERE campaign_id = $1 AND session_id = $2 AND seq > $3
            ORDER BY seq LIMIT $4
            """,
            self.campaign_id,
            session_id,
            after_seq,
            limit,
        )
        return [_entry(r) for r in rows]

    async def voicing(
        self, names: Sequence[str], session_ids: Sequence[int] | None, *, reach: int, limit: int
    ) -> list[list[tuple[int, int, str, str]]]:
        """The latest ``limit`` lines (of ``session_ids``; None: any) saying one of ``names`` where a voice marker may
        be (":func:`memory.text.voiced`"), each with its speaker's lines among the ``reach`` lines after it: (entry
        id, session id, speaker, text) of each, in order (a DM voicing Mira goes on as her:
        :func:`memory.offgame.voice_of`)."""
        terms = " OR ".join(f'"{n}"' for n in dict.fromkeys(names) if n.strip() and '"' not in n)
        if not terms:
            return []
        rows = await self.db.fetch(
            r"""
            WITH marked AS (
                SELECT id, session_id, seq, speaker FROM session_entries
                WHERE campaign_id = $1 AND tsv @@ websearch_to_tsquery('english', searchable($2))
                  AND ($3::bigint[] IS NULL OR session_id = ANY($3::bigint[])) AND text ~ '[(\[][Aa][Ss]\s|I[''’]m\s'
                ORDER BY id DESC LIMIT $5
            )
            -- each marked line's next lines by the (session, seq) index: joined flat, the planner hashed every
            -- line of the campaign to find them (150,000 read for 500, 70 ms at 60 sessions)
            SELECT m.id AS marked, e.id, e.session_id, e.speaker, e.text
            FROM marked m CROSS JOIN LATERAL (
                SELECT e.id, e.session_id, e.seq, e.speaker, e.text FROM session_entries e
                WHERE e.campaign_id = $1 AND e.session_id = m.session_id AND e.seq BETWEEN m.seq AND m.seq + $4::int
                  AND e.speaker = m.speaker
                OFFSET 0  -- not pulled up into the join
            ) e
            ORDER BY m.id DESC, e.seq
            """,
            self.campaign_id,
            terms,
            None if session_ids is None else list(session_ids),
            reach,
            limit,
        )
        out: dict[int, list[tuple[int, int, str, str]]] = {}
        for r in rows:
            out.setdefault(r["marked"], []).append((r["id"], r["session_id"], r["speaker"], r["text"]))
        return list(out.values())

    async def told(self, session_ids: Sequence[int], rules: str) -> dict[int, tuple[str, set[int] | None]]:
        """Of each of these sessions that has lines: the digest of its lines and DM as they are now (and of the
        ``rules`` that read them), and the ids of the lines its narrator tells in the story kept for them
        (:meth:`keep_told`), None when none are (never found, or found from lines or rules since changed)."""
        rows = await self.db.fetch(
            """
            SELECT d.session_id, d.lines, t.entry_ids FROM (
                SELECT s.id AS session_id, md5(concat_ws(E'\\x1e', $3::text, s.dm_speaker_id, string_agg(
                    concat_ws(E'\\x1f', e.id, e.speaker, e.speaker_id, e.text), E'\\x1e' ORDER BY e.seq
                ))) AS lines
                FROM sessions s JOIN session_entries e ON e.campaign_id = s.campaign_id AND e.session_id = s.id
                WHERE s.campaign_id = $1 AND s.id = ANY($2::bigint[])
                  AND e.session_id = ANY($2::bigint[])  -- the sessions' lines by their index, not every line
                GROUP BY s.id
            ) d
            LEFT JOIN session_told t ON t.campaign_id = $1 AND t.session_id = d.session_id AND t.lines = d.lines
            """,
            self.campaign_id,
            list(session_ids),
            rules,
        )
        return {r["session_id"]: (r["lines"], None if r["entry_ids"] is None else set(r["entry_ids"])) for r in rows}

    async def keep_told(self, session_id: int, lines: str, entry_ids: Collection[int]) -> None:
        """Keep the lines the session's narrator tells in the story, found from its lines of digest ``lines``."""
        await self.db.execute(
            """
            INSERT INTO session_told (campaign_id, session_id, lines, entry_ids) VALUES ($1, $2, $3, $4)
            ON CONFLICT (campaign_id, session_id) DO UPDATE SET lines = excluded.lines, entry_ids = excluded.entry_ids
            """,
            self.campaign_id,
            session_id,
            lines,
            sorted(entry_ids),
        )

    async def entry_count(self, session_id: int) -> int:
        return await self.db.fetchval(
            "SELECT count(*) FROM session_entries WHERE campaign_id = $1 AND session_id = $2",
            self.campaign_id,
            session_id,
        )

    async def has_lines(self) -> bool:
        """Whether any session of the campaign has a line: a recall that finds nothing in none says why."""
        return bool(
            await self.db.fetchval(
                "SELECT EXISTS (SELECT 1 FROM session_entries WHERE campaign_id = $1)", self.campaign_id
            )
        )

    async def check_speaker(self, name: str) -> None:
        """Raise :class:`NotFoundError` when the campaign has lines but none said by ``name`` (any case): a name
        mistyped in who asks or who said it would otherwise find nothing, or prefer no one, without a word."""
        if await self._said_by(name):
            return
        rows = await self.db.fetch(
            """
            SELECT speaker FROM session_entries WHERE campaign_id = $1 GROUP BY speaker ORDER BY count(*) DESC, speaker
            """,
            self.campaign_id,
        )
        if not rows:  # no lines yet: what a recall or a search says then is the news
            return
        speakers = [r["speaker"] for r in rows]
        played_by = await self._players_of(name)
        listed = ", ".join(map(quoted, speakers[:SPEAKERS_LISTED])) + " …" * (len(speakers) > SPEAKERS_LISTED)
        # "Thessaly Vorn", asked for as "Thessaly"
        character = (await self.character_called(name) if played_by else None) or name
        hint = (
            f" ({character} is played by {' or '.join(map(quoted, played_by))}: give the player's name)"
            if played_by
            else did_you_mean(name, speakers) or f" (the speakers: {listed})"
        )
        raise NotFoundError(f"no line was said by {quoted(name)}{hint}", subject="speaker", name=name)

    async def _players_of(self, name: str) -> list[str]:
        """The speakers who play a public character called ``name`` (its name or an alias), as the lines name
        them."""
        # a public character asked for by its name or an alias: its player said its lines
        players = await self.db.fetch(
            """
            SELECT DISTINCT lower(btrim(p.player)) AS player FROM entities e
            CROSS JOIN LATERAL jsonb_array_elements_text(CASE jsonb_typeof(e.attributes -> 'played_by')
                WHEN 'array' THEN e.attributes -> 'played_by'
                WHEN 'string' THEN jsonb_build_array(e.attributes -> 'played_by') ELSE '[]' END) AS p(player)
            WHERE e.campaign_id = $1 AND e.status = 'accepted' AND e.visibility = 'public'
              AND (lower(e.name) = lower($2) OR e.id IN (
                SELECT entity_id FROM entity_aliases WHERE campaign_id = $1 AND lower(alias) = lower($2)))
            """,
            self.campaign_id,
            name,
        )
        if not players:
            character = await self.character_called(name)
            return await self._players_of(character) if character else []
        rows = await self.db.fetch(
            """
            SELECT speaker FROM session_entries WHERE campaign_id = $1 AND lower(speaker) = ANY($2::text[])
            GROUP BY speaker ORDER BY count(*) DESC, speaker
            """,
            self.campaign_id,
            [r["player"] for r in players],
        )
        return [r["speaker"] for r in rows]

    async def character_called(self, word: str, *, include_secret: bool = False) -> str | None:
        """The name of the accepted character (an entity with ``played_by``) ``word`` calls alone by the rule a line
        and a recall's card name someone by (:func:`memory.gazetteer.short_names`: a person's first or last name,
        that one's alone): "what did Thessaly say" asks for Thessaly Vorn's player. None for no one's, or a name of
        several words (a name or alias is read as itself)."""
        # here, not at the top: `entity list`, `search` and `campaign` load no name matching to start (a test says)
        from memory.correction.text import normalize
        from memory.gazetteer import short_names

        if not word.strip() or len(word.split()) > 1:
            return None
        rows = await self.db.fetch(  # only those whose names hold the word can be called by it, or share it
            """
            SELECT e.id, e.name, e.type, e.attributes ? 'played_by' AS played,
                   coalesce(array_agg(a.alias) FILTER (WHERE a.alias IS NOT NULL), '{}') AS aliases
            FROM entities e LEFT JOIN entity_aliases a ON a.campaign_id = e.campaign_id AND a.entity_id = e.id
            WHERE e.campaign_id = $1 AND e.status = 'accepted' AND ($3 OR e.visibility = 'public')
            GROUP BY e.id
            HAVING strpos(lower(e.name), $2) > 0 OR bool_or(strpos(lower(a.alias), $2) > 0)
            """,
            self.campaign_id,
            word.strip().casefold(),
            include_secret,
        )
        near = [_Near(r["id"], r["name"], r["aliases"], r["played"]) for r in rows]
        people = {r["id"] for r in rows if r["type"] in PERSON_TYPES}
        called = short_names(people, near).get(normalize(word.strip()))
        return called.name if called is not None and called.played else None

    async def recent(
        self, session_id: int, window_s: float, *, until_s: float | None = None, limit: int = 500
    ) -> list[Entry]:
        """The utterances of the last ``window_s`` seconds of a session (up to ``until_s``), oldest first."""
        rows = await self.db.fetch(
            f"""
            WITH stop AS (
                SELECT coalesce($3::float8, max(start_s)) AS t FROM session_entries
                WHERE campaign_id = $1 AND session_id = $2
            )
            SELECT * FROM (
                SELECT {_ENTRY_COLUMNS} FROM session_entries, stop
                WHERE campaign_id = $1 AND session_id = $2 AND start_s BETWEEN stop.t - $4 AND stop.t
                ORDER BY start_s DESC, seq DESC LIMIT $5
            ) last ORDER BY start_s, seq
            """,
            self.campaign_id,
            session_id,
            until_s,
            window_s,
            limit,
        )
        return [_entry(r) for r in rows]

    async def said_near(
        self, entity_ids: Sequence[int], speakers: Sequence[str], session_ids: Sequence[int] | None, reach: int
    ) -> list[tuple[Entry, int]]:
        """The lines of ``speakers`` (any case) within ``reach`` lines of one naming one of ``entity_ids`` (the
        mention index), each with the seq of the nearest such line, the nearest first, then in the order played."""
        rows = await self.db.fetch(
            f"""
            WITH named AS (
                SELECT DISTINCT e.session_id, e.seq FROM entity_mentions m
                JOIN session_entries e ON e.campaign_id = $1 AND e.id = m.entry_id
                WHERE m.campaign_id = $1 AND m.entity_id = ANY($2::bigint[])
                  AND ($4::bigint[] IS NULL OR m.session_id = ANY($4::bigint[]))
            )
            SELECT * FROM (
                SELECT DISTINCT ON (n.id) {", ".join(f"n.{c.strip()}" for c in _ENTRY_COLUMNS.split(","))},
                       named.seq AS named_seq, abs(n.seq - named.seq) AS gap
                FROM named JOIN session_entries n
                  ON n.campaign_id = $1 AND n.session_id = named.session_id
                 AND n.seq BETWEEN named.seq - $5 AND named.seq + $5
                WHERE lower(n.speaker) = ANY($3::text[])
                ORDER BY n.id, gap, named.seq
            ) near ORDER BY gap, session_id, seq
            """,
            self.campaign_id,
            list(entity_ids),
            [s.lower() for s in speakers],
            None if session_ids is None else list(session_ids),
            reach,
        )
        return [(_entry(r), r["named_seq"]) for r in rows]

    async def search(
        self,
        query: str,
        *,
        session_id: int | None = None,
        speakers: Sequence[str] | None = None,
        start_s: float | None = None,
        end_s: float | None = None,
        limit: int = 10,
        excluded: Collection[tuple[str, int]] = (),
    ) -> list[EntryHit]:
        """Full-text search over the corrected text (web-search syntax: "quoted phrase", -not, or); a line found
        through a quoted phrase says one of them word for word. ``speakers``: said by one of them (any case), but
        for the (speaker lowercased, session id) pairs ``excluded`` (see :meth:`speakers_called`)."""
        query = unicodedata.normalize("NFC", query)  # as the lines are stored
        rows = await self.db.fetch(
            f"""
            SELECT {_ENTRY_COLUMNS}, ts_rank_cd(tsv, q) AS score
            FROM session_entries, websearch_to_tsquery('english', searchable($2)) AS q
            WHERE campaign_id = $1 AND tsv @@ q
              AND ($3::bigint IS NULL OR session_id = $3)
              AND ($4::text[] IS NULL OR lower(speaker) = ANY($4::text[]))
              AND NOT EXISTS (
                  SELECT FROM unnest($9::text[], $10::bigint[]) AS x(speaker, session_id)
                  WHERE x.session_id = session_entries.session_id AND x.speaker = lower(session_entries.speaker))
              AND ($5::float8 IS NULL OR start_s >= $5)
              AND ($6::float8 IS NULL OR start_s <= $6)
              AND ($8::text IS NULL OR visible(text) ~* $8)
            ORDER BY score DESC, session_id, seq
            LIMIT $7
            """,
            self.campaign_id,
            query,
            session_id,
            None if speakers is None else [s.lower() for s in speakers],
            start_s,
            end_s,
            limit,
            _quoted_said(query),
            [speaker for speaker, _ in excluded],
            [session for _, session in excluded],
        )
        return [EntryHit(**{k: r[k] for k in EntryHit.model_fields}) for r in rows]

    async def said_at(self, query: str, entry_ids: Sequence[int]) -> dict[int, list[int]]:
        """Where each of these lines says a word of ``query`` as :meth:`search` reads it (stemmed): their tsvector
        positions, in order, by which ``recall_rank.passage_span`` shows a long line. A word the query says not
        to say is not in a line it found (but beside an `or`)."""
        rows = await self.db.fetch(
            """
            SELECT e.id, array_agg(p ORDER BY p) AS positions
            FROM session_entries e, unnest(e.tsv) u, unnest(u.positions) p
            WHERE e.campaign_id = $1 AND e.id = ANY($2::bigint[])
              AND u.lexeme = ANY(tsvector_to_array(to_tsvector('english', searchable($3))))
            GROUP BY e.id
            """,
            self.campaign_id,
            list(entry_ids),
            unicodedata.normalize("NFC", query),  # as search reads it
        )
        return {r["id"]: list(r["positions"]) for r in rows}

    async def saying(self, phrases: Sequence[str], session_ids: Sequence[int]) -> list[Entry]:
        """The lines of these sessions whose words may be one of ``phrases`` (full text, stemmed: more than say
        them, for a closer look), in session order. One index probe a phrase: the phrases OR'd into one query, the
        planner read every line of the campaign against all of them (a campaign file's 200 names a query, 24 s a
        query at 100 sessions, where their probes take 0.3 s)."""
        said = [p for p in dict.fromkeys(phrases) if p.strip() and '"' not in p]
        if not said or not session_ids:
            return []
        rows = await self.db.fetch(
            f"""
            SELECT DISTINCT ON (e.session_id, e.seq) e.* FROM (
                SELECT DISTINCT websearch_to_tsquery('english', searchable('"' || p || '"')) AS q
                FROM unnest($2::text[]) AS p
            ) w
            CROSS JOIN LATERAL (
                SELECT {_ENTRY_COLUMNS} FROM session_entries
                WHERE campaign_id = $1 AND session_id = ANY($3::bigint[]) AND tsv @@ w.q
            ) e
            WHERE numnode(w.q) > 0  -- a phrase of stop words only ("The") says nothing
            ORDER BY e.session_id, e.seq
            """,
            self.campaign_id,
            said,
            list(session_ids),
        )
        return [_entry(r) for r in rows]
