"""The memory guard: nothing the players said is lost while PostgreSQL is away.

It sits between the live voice pipeline and :class:`SessionRecorder`. It numbers every utterance itself
(``seq``, continuing from the session's last one), so a line written, lost in a crash and written again lands
on the same L1 row: L1 writes are idempotent by (campaign, session, seq).

When a write fails with a database error, the batch and everything after it go to an append-only spool file,
``<data dir>/spool/<campaign>-<session>.jsonl``, one JSON line per utterance, fsynced after each append; the
session is *degraded* and keeps running. A background task retries with exponential backoff; once the database
answers, it replays the spool in order and removes it. A spool left by a crash is replayed when the next session
of that campaign starts (:func:`replay_leftover_spools`).

While healthy, every utterance is first appended (fsynced) to a journal, ``<data dir>/journal/<campaign>-
<session>.jsonl``, before :meth:`MemoryGuard.add` returns it: a batch waits in memory for up to ``batch_size``
lines or ``max_delay_s``, and a kill -9 in that time must lose nothing. Lines leave the journal once the
database (or the spool) holds them; a journal a crash left is replayed like a spool (idempotent by seq).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import Path

import asyncpg
from pydantic import ValidationError

from memory.models import Session
from memory.recorder import SessionRecorder, Utterance
from memory.store import CampaignMemory, Memory
from memory.voice.backoff import Backoff

log = logging.getLogger(__name__)

#: What "the database is unavailable" looks like to asyncpg: refused or vanished sockets (OSError), a
#: connection closed under us (InterfaceError), a server shutting down or starting (PostgresError classes 08,
#: 57), a timeout. InternalClientError too: a query on a pooled connection whose server's goodbye asyncpg has
#: read but whose closed socket it has not yet seen (a write due as the loop wakes after the server went away).
#: Other PostgresErrors would be bugs, but the utterance is spooled all the same — a bug must not cost the
#: players' words; the retry loop keeps the status degraded and logs the error.
DATABASE_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    TimeoutError,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
    asyncpg.PostgresError,
)

#: Replay in batches this big: one transaction each, so a spool of a long outage is not one huge transaction.
REPLAY_BATCH = 200

#: The database may be away for as long as the session lasts: retry forever, at most every 30 s.
DB_RETRY = Backoff(initial=1.0, maximum=30.0, tries=None)

#: There is no spool: none was written, or its folder could not be made (something else stands there).
NO_SPOOL = (FileNotFoundError, NotADirectoryError)

_SPOOL_NAME = re.compile(r"^(?P<campaign>\d+)-(?P<session>\d+)\.jsonl$")
#: Beside a spool: the session was asked to end while the database was away (so a restart ends it too).
_END_NAME = re.compile(r"^(?P<campaign>\d+)-(?P<session>\d+)\.end$")


class GuardState(StrEnum):
    healthy = "healthy"
    degraded = "degraded"


@dataclass(frozen=True, slots=True)
class GuardStatus:
    state: GuardState
    stored: int  # utterances of this session confirmed in L1 by this guard (replays counted once)
    spooled: int  # utterances waiting in the spool file
    last_error: str | None = None


class SpoolPending(RuntimeError):
    """The session could not be closed because the database is still away; its words wait in the spool."""

    def __init__(self, spooled: int, path: Path) -> None:
        super().__init__(
            f"the database is unavailable: {spooled} utterances are safe in {path} "
            "and will be stored (and the session closed) as soon as it is back"
        )
        self.spooled = spooled  # what players may be told: the path is the operator's


def spool_dir(data_dir: Path) -> Path:
    return data_dir / "spool"


def spool_path(data_dir: Path, campaign_id: int, session_id: int) -> Path:
    return spool_dir(data_dir) / f"{campaign_id}-{session_id}.jsonl"


def journal_dir(data_dir: Path) -> Path:
    return data_dir / "journal"


def journal_path(data_dir: Path, campaign_id: int, session_id: int) -> Path:
    return journal_dir(data_dir) / f"{campaign_id}-{session_id}.jsonl"


def end_marker_path(data_dir: Path, campaign_id: int, session_id: int) -> Path:
    return spool_dir(data_dir) / f"{campaign_id}-{session_id}.end"


class Spool:
    """An append-only JSON-lines file of utterances; every append is on disk (fsync) before it returns."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, utterances: list[Utterance]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = "".join(u.model_dump_json() + "\n" for u in utterances).encode()
        # O_APPEND + fsync per call: a crash right after returns keeps the line; a crash during the write
        # leaves at most one torn last line, which read() skips.
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            end = os.lseek(fd, 0, os.SEEK_END)
            try:
                # A full disk takes part of a write (the call says how much) and refuses the rest.
                rest = memoryview(data)
                while rest:
                    rest = rest[os.write(fd, rest) :]
                os.fsync(fd)
            except OSError:
                # The part that fitted would be a torn line that the next append, once there is room, would
                # continue: both would be unreadable. Cut it off; the caller still has the batch.
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, end)
                raise
        finally:
            os.close(fd)

    def read(self, offset: int = 0, limit: int = REPLAY_BATCH) -> tuple[list[Utterance], int]:
        """Up to ``limit`` utterances from byte ``offset``, and the offset after them."""
        out: list[Utterance] = []
        try:
            with self.path.open("rb") as f:
                f.seek(offset)
                while len(out) < limit:
                    line = f.readline()
                    if not line.endswith(b"\n"):
                        break  # end of file, or a torn last line still being (or never) finished
                    offset += len(line)
                    try:
                        out.append(Utterance.model_validate_json(line))
                    except ValidationError:
                        log.error("skipping an unreadable line in spool %s at byte %d", self.path, offset - len(line))
        except NO_SPOOL:
            pass
        return out, offset

    def __iter__(self) -> Iterator[Utterance]:
        offset = 0
        while True:
            batch, offset = self.read(offset)
            if not batch:
                return
            yield from batch

    def count(self) -> int:
        try:
            with self.path.open("rb") as f:
                return sum(1 for line in f if line.endswith(b"\n"))
        except NO_SPOOL:
            return 0

    def remove(self) -> None:
        with contextlib.suppress(*NO_SPOOL):
            self.path.unlink()

    def keep_only(self, utterances: list[Utterance]) -> None:
        """Make the file hold just ``utterances`` (none: remove it), atomically: a crash leaves the old file or
        the new one, never a part."""
        if not utterances:
            self.remove()
            return
        fresh = self.path.with_suffix(".tmp")
        fresh.unlink(missing_ok=True)
        Spool(fresh).append(utterances)
        os.replace(fresh, self.path)


class MemoryGuard:
    """Wraps a :class:`SessionRecorder`: :meth:`add` never raises for a database outage and never loses a line.

    One task feeds :meth:`add`. Live sessions want small batches: ``batch_size`` and ``max_delay_s`` bound how
    many utterances wait in process memory. A flush task owned by the guard (started with it, stopped by
    :meth:`close`) writes what has waited ``max_delay_s`` even when nobody speaks again, so the last words of a
    quiet table reach the database (or the spool) in time. Build the guard inside a running event loop.
    """

    def __init__(
        self,
        recorder: SessionRecorder,
        data_dir: Path,
        *,
        last_seq: int = 0,
        batch_size: int = 8,
        max_delay_s: float = 2.0,
        backoff: Backoff = DB_RETRY,
    ) -> None:
        self.recorder = recorder
        # The guard decides when to write; the recorder must never flush on its own inside add().
        recorder.batch_size = 1 << 62
        recorder.max_delay_s = float("inf")
        self.spool = Spool(spool_path(data_dir, recorder.mem.campaign_id, recorder.session.id))
        #: What waits in memory (and what neither the database nor the spool took), on disk: see the module doc.
        self.journal = Spool(journal_path(data_dir, recorder.mem.campaign_id, recorder.session.id))
        self._journal_failed = False
        self.end_marker = end_marker_path(data_dir, recorder.mem.campaign_id, recorder.session.id)
        self.batch_size = batch_size
        self.max_delay_s = max_delay_s
        self.backoff = backoff
        self._seq = last_seq
        self._pending: list[Utterance] = []
        self._pending_since: float | None = None
        #: Lines the database and the spool both refused (a full or read-only disk): kept until either takes them.
        self._held: list[Utterance] = []
        self._spooled = self.spool.count()
        self._stored = 0
        self._last_error: str | None = None
        self._write_lock = asyncio.Lock()
        self._healthy = asyncio.Event()
        self._retry_task: asyncio.Task[None] | None = None
        self._end_requested = False
        self._ended: Session | None = None
        self._had_ended: datetime | None = None  # when a resumed session had ended, restored if never recorded
        if self._spooled:
            self._degrade("a spool was left over")
        else:
            self._healthy.set()
        self._flush_task: asyncio.Task[None] | None = None
        if math.isfinite(max_delay_s):
            self._flush_task = asyncio.get_running_loop().create_task(
                self._flush_when_due(), name=f"guard-flush-{recorder.session.id}"
            )

    @classmethod
    async def start(
        cls,
        mem: CampaignMemory,
        title: str,
        data_dir: Path,
        *,
        dm_speaker_id: str | None = None,
        stage2: bool = False,
        **kwargs: object,
    ) -> MemoryGuard:
        """Open (or resume) the session titled ``title``, recorded by the DM ``dm_speaker_id`` (their user id); first
        replay any spool a crash left behind. ``stage2``: an LLM is configured, as for :class:`SessionRecorder`.

        Needs the database: a session cannot be created without it."""
        await replay_leftover_spools(mem, data_dir, stage2=stage2)
        recorder = await SessionRecorder.start(mem, title, batch_size=1 << 62, max_delay_s=float("inf"), stage2=stage2)
        if dm_speaker_id is not None:  # who runs it now: a session resumed by a co-DM is theirs from here
            recorder.session = await mem.log.set_dm(recorder.session.id, dm_speaker_id)
        had_ended = recorder.session.ended_at
        if had_ended is not None:  # an ended session resumed is live again: listed so, and not deleted as ended
            recorder.session = await mem.log.set_ended(recorder.session.id, None)
        last = await mem.db.fetchval(
            "SELECT coalesce(max(seq), 0) FROM session_entries WHERE campaign_id = $1 AND session_id = $2",
            mem.campaign_id,
            recorder.session.id,
        )
        guard = cls(recorder, data_dir, last_seq=int(last), **kwargs)  # type: ignore[arg-type]
        guard._had_ended = had_ended
        if guard._spooled:  # the leftover replay failed for this session: continue after its lines
            guard._seq = max(guard._seq, max((u.seq or 0) for u in guard.spool))
        return guard

    # ------------------------------------------------------------------------------------------------ status

    @property
    def session(self) -> Session:
        return self.recorder.session

    @property
    def state(self) -> GuardState:
        return GuardState.healthy if self._healthy.is_set() else GuardState.degraded

    def status(self) -> GuardStatus:
        return GuardStatus(self.state, self._stored, self._spooled + len(self._held), self._last_error)

    async def wait_healthy(self) -> None:
        """Returns once the spool has been replayed and writes go to the database again."""
        await self._healthy.wait()

    # ------------------------------------------------------------------------------------------------ writing

    async def add(self, utterance: Utterance) -> Utterance:
        """Number ``utterance`` and store it (now, in a batch, or in the spool); returns it with its seq."""
        self._seq += 1
        utterance = utterance.model_copy(update={"seq": self._seq})
        if not self._healthy.is_set():
            self._to_spool([utterance])
            return utterance
        try:
            self.journal.append([utterance])  # on disk before it is acknowledged: see the module doc
        except OSError as exc:  # the disk refuses it: it waits in memory, as ever, and is written soon
            if not self._journal_failed:
                log.error("session %s: the journal %s cannot be written (%s)", self.session.id, self.journal.path, exc)
            self._journal_failed = True
        else:
            self._journal_failed = False
        if not self._pending:
            self._pending_since = asyncio.get_running_loop().time()
        self._pending.append(utterance)
        if len(self._pending) >= self.batch_size or self._overdue():
            await self.flush()
        return utterance

    def _overdue(self) -> bool:
        since = self._pending_since
        return since is not None and asyncio.get_running_loop().time() - since >= self.max_delay_s

    async def flush(self) -> None:
        """Write what waits in memory; on a database error it goes to the spool instead."""
        async with self._write_lock:
            batch, self._pending, self._pending_since = self._pending, [], None
            if not batch:
                return
            if not self._healthy.is_set():
                self._to_spool(batch)
                return
            try:
                await self._write(batch)
            except DATABASE_ERRORS as exc:
                self._degrade(exc)
                self._to_spool(batch)
            self._trim_journal()

    def _trim_journal(self) -> None:
        """Keep in the journal only what the database and the spool do not hold yet (no await: an ``add`` cannot
        come in between)."""
        try:
            self.journal.keep_only([*self._held, *self._pending])
        except OSError as exc:  # the lines stay journaled twice at worst: a replay is idempotent by seq
            log.warning("session %s: could not trim the journal %s (%s)", self.session.id, self.journal.path, exc)

    async def _flush_when_due(self) -> None:
        """Flush what has waited ``max_delay_s`` without a later :meth:`add` to do it; ends with the session."""
        loop = asyncio.get_running_loop()
        while not self._end_requested:
            since = self._pending_since
            due = since + self.max_delay_s if since is not None else loop.time() + self.max_delay_s
            await asyncio.sleep(max(0.0, due - loop.time()))
            if not self._pending or not self._overdue():
                continue
            try:
                # shielded: close() cancelling the timer mid-write must not drop the batch it had taken
                await asyncio.shield(self.flush())
            except Exception:  # a bug, not an outage (flush spools those): log it, keep the timer alive
                log.exception("timed flush of session %s failed", self.session.id)

    async def _write(self, batch: list[Utterance]) -> None:
        await self.recorder.add_many(batch)
        await self.recorder.flush()
        self._stored += len(batch)

    def _to_spool(self, batch: list[Utterance]) -> None:
        waiting = [*self._held, *batch]  # after those held before them, in order
        try:
            self.spool.append(waiting)
        except OSError as exc:
            if not self._held:
                log.error(
                    "session %s: the spool %s cannot be written either (%s): utterances wait in memory until the "
                    "database or the disk is back (stopping the bot now would lose them)",
                    self.session.id,
                    self.spool.path,
                    exc,
                )
            self._held = waiting
            self._last_error = f"the spool cannot be written ({type(exc).__name__}: {exc})"
            return
        self._held = []
        self._spooled += len(waiting)

    # ------------------------------------------------------------------------------------------------ recovery

    def _degrade(self, reason: BaseException | str) -> None:
        self._last_error = reason if isinstance(reason, str) else f"{type(reason).__name__}: {reason}"
        if self._healthy.is_set():
            log.warning(
                "session %s degraded (%s): utterances go to %s until the database is back",
                self.session.id,
                self._last_error,
                self.spool.path,
            )
        self._healthy.clear()
        if self._retry_task is None or self._retry_task.done():
            self._retry_task = asyncio.get_running_loop().create_task(
                self._recover(), name=f"spool-replay-{self.session.id}"
            )

    async def _recover(self) -> None:
        """Retry the spool replay with backoff until it succeeds; then end the session if that was asked."""
        delays = self.backoff.delays()
        tries = 0
        while True:
            tries += 1
            try:
                await self._replay()
                if self._end_requested and self._ended is None:
                    await self._end_now()  # an empty spool replays without the database: this may fail too
                break
            except DATABASE_ERRORS as exc:
                self._last_error = f"{type(exc).__name__}: {exc}"
                wait = next(delays, self.backoff.maximum)
                log.info("database still unavailable (try %d: %s); next try in %.1f s", tries, exc, wait)
                await asyncio.sleep(wait)
        log.warning("session %s healthy again: the spool was replayed into the database", self.session.id)

    async def _replay(self) -> None:
        offset = 0
        async with self._write_lock:
            while True:
                batch, offset = self.spool.read(offset)
                if not batch:
                    if self._held:  # what the disk could not take came after the spool's lines
                        held, self._held = self._held, []
                        try:
                            await self._write(held)
                        except BaseException:
                            self._held = [*held, *self._held]
                            raise
                        continue  # lines spooled meanwhile come after them
                    # No await between this read and the removal: nothing can be appended in between.
                    self.spool.remove()
                    self._spooled = 0
                    self._last_error = None
                    self._healthy.set()
                    return
                before = self.recorder.written
                await self.recorder.add_many(batch)
                await self.recorder.flush()
                # A batch written just before the outage may be in the spool too: count only new rows.
                self._stored += self.recorder.written - before

    # ------------------------------------------------------------------------------------------------ ending

    async def end(self, *, wait_s: float = 0.0) -> Session:
        """Flush and close the session (its summary job is enqueued).

        If the database is still away after ``wait_s`` seconds, raises :class:`SpoolPending`; the background
        retry then stores the spool and closes the session by itself when the database is back."""
        await self.flush()
        self._end_requested = True
        if not self._healthy.is_set():
            if wait_s > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._healthy.wait(), wait_s)
            if not self._healthy.is_set():
                raise self._end_pending()
        try:
            return await self._end_now()
        except DATABASE_ERRORS as exc:  # gone since the last write: the retry ends the session when it is back
            self._degrade(exc)
            raise self._end_pending() from exc

    def _end_pending(self) -> SpoolPending:
        # remembered on disk: if the process stops before the database is back, the next start ends it
        try:
            self.end_marker.parent.mkdir(parents=True, exist_ok=True)
            self.end_marker.touch()
        except OSError as exc:  # the disk refuses it: this process still ends the session when the database is back
            log.warning("session %s: could not write %s (%s)", self.session.id, self.end_marker, exc)
        return SpoolPending(self._spooled + len(self._held), self.spool.path)

    async def _end_now(self) -> Session:
        async with self._write_lock:
            self._ended = await self.recorder.end()
        with contextlib.suppress(*NO_SPOOL):
            self.end_marker.unlink()
        return self._ended

    async def abandon(self) -> None:
        """The recording never began (voice could not be joined): stop, and delete the session if nothing was
        said in it, so it does not stay open in the campaign; one with words (a resumed session) stays as it was."""
        await self.close()
        if self._spooled == 0:
            with contextlib.suppress(*DATABASE_ERRORS):
                sessions = self.recorder.mem.log
                if not await sessions.discard_if_empty(self.session.id) and self._had_ended is not None:
                    await sessions.set_ended(self.session.id, self._had_ended)

    async def close(self) -> None:
        """Stop the flush timer and the retries (process shutdown): the spool stays on disk for the next start.

        Utterances still waiting in memory are flushed first (to the database, or to the spool)."""
        if self._flush_task is not None:
            self._flush_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flush_task
        if self._ended is None and self._pending:
            try:
                await self.flush()
            except Exception:
                log.exception("flushing session %s on close failed", self.session.id)
        if self._held:
            self._to_spool([])  # the disk may have room again
        self._trim_journal()
        if self._held:  # the log is the last place left for them, as lines `lorekeeper ingest` reads
            log.error(
                "session %s: %d utterances neither the database nor the disk took, as transcript lines:\n%s",
                self.session.id,
                len(self._held),
                "\n".join(
                    json.dumps({"speaker": u.speaker, "text": u.text, "start": u.start_s, "end": u.end_s, "ref": u.ref})
                    for u in self._held
                ),
            )
        if self._retry_task is not None:
            self._retry_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._retry_task


async def replay_leftover_spools(mem: CampaignMemory, data_dir: Path, *, stage2: bool = False) -> int:
    """Store the spools of this campaign that a crash (or a stop during an outage) left behind.

    Each is replayed in order into its own session (idempotent by seq) and removed. Returns the utterances
    that were new to L1. Database errors propagate: the spools stay for the next try. Their lines keep the
    recogniser's words, so with ``stage2`` they keep their doubt for the stage-2 job as if written live."""
    folder = spool_dir(data_dir)
    new = 0
    # journals first: what waited in memory came before anything spooled after it
    journals = sorted(journal_dir(data_dir).iterdir()) if journal_dir(data_dir).is_dir() else []
    for path in [*journals, *(sorted(folder.iterdir()) if folder.is_dir() else [])]:
        match = _SPOOL_NAME.match(path.name)
        if match is None or int(match["campaign"]) != mem.campaign_id:
            continue
        session = await mem.log.session(int(match["session"]))
        recorder = SessionRecorder(mem, session, batch_size=1 << 62, max_delay_s=float("inf"), stage2=stage2)
        spool = Spool(path)
        offset = 0
        while True:
            batch, offset = spool.read(offset)
            if not batch:
                break
            await recorder.add_many(batch)
            await recorder.flush()
        log.warning(
            "replayed a leftover spool of session %s (%s): %d new utterances", session.id, path, recorder.written
        )
        new += recorder.written
        spool.remove()
    return new


async def end_marked_sessions(mem: CampaignMemory, data_dir: Path) -> int:
    """End this campaign's sessions that were asked to end while the database was away (their spools must have
    been replayed first: a session whose spool is still there is left alone). Returns how many were ended."""
    folder = spool_dir(data_dir)
    if not folder.is_dir():
        return 0
    ended = 0
    for path in sorted(folder.iterdir()):
        match = _END_NAME.match(path.name)
        if match is None or int(match["campaign"]) != mem.campaign_id:
            continue
        session_id = int(match["session"])
        if spool_path(data_dir, mem.campaign_id, session_id).exists():
            continue
        session = await mem.log.session(session_id)
        if session.ended_at is None:
            await SessionRecorder(mem, session, batch_size=1 << 62, max_delay_s=float("inf")).end()
            log.warning("ended session %s (%s), whose end was asked while the database was away", session_id, path)
            ended += 1
        path.unlink(missing_ok=True)
    return ended


async def recover_leftover_spools(
    memory: Memory, data_dir: Path, *, stage2: bool = False, backoff: Backoff = DB_RETRY
) -> tuple[int, int]:
    """At process start: replay the leftover spools of every campaign, then end the sessions that were asked to
    end. Database errors are retried with ``backoff`` (replays are idempotent); any other error is logged for
    its campaign, whose files stay for the next start. Returns (utterances new to L1, sessions ended)."""
    delays = backoff.delays()
    tries = 0
    while True:
        tries += 1
        try:
            return await _recover_once(memory, data_dir, stage2)
        except DATABASE_ERRORS as exc:
            wait = next(delays, None)
            if wait is None:
                raise
            log.info("leftover spools: database unavailable (try %d: %s); next try in %.1f s", tries, exc, wait)
            await asyncio.sleep(wait)


async def _recover_once(memory: Memory, data_dir: Path, stage2: bool) -> tuple[int, int]:
    folder = spool_dir(data_dir)
    journals = list(journal_dir(data_dir).iterdir()) if journal_dir(data_dir).is_dir() else []
    if not folder.is_dir() and not journals:
        return 0, 0
    campaign_ids = sorted(
        {
            int(m["campaign"])
            for p in [*(folder.iterdir() if folder.is_dir() else []), *journals]
            if (m := _SPOOL_NAME.match(p.name) or _END_NAME.match(p.name))
        }
    )
    replayed = ended = 0
    for campaign_id in campaign_ids:
        mem = memory.campaign(campaign_id)
        try:
            replayed += await replay_leftover_spools(mem, data_dir, stage2=stage2)
            ended += await end_marked_sessions(mem, data_dir)
        except DATABASE_ERRORS:
            raise
        except Exception:
            log.exception("leftover spools of campaign %s could not be recovered; they stay in %s", campaign_id, folder)
    return replayed, ended
