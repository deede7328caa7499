"""The embedded PostgreSQL: stopped on SIGTERM, recovers from stale pid files left by kill -9."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import resource
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import asyncpg
import pytest

from memory import db
from memory.db import (
    PG_CTL_TIMEOUT_S,
    DatabaseError,
    EmbeddedPostgres,
    EmbeddingSpec,
    default_data_dir,
    migration_files,
    open_database,
)
from tests.integration.processes import long_session, lorekeeper

ROOT = Path(__file__).resolve().parents[2]
HOLDER = """
import signal, sys, time
signal.signal(signal.SIGTERM, getattr(signal, sys.argv[2]))  # as the launcher left it
from memory.db import EmbeddedPostgres
server = EmbeddedPostgres(__import__("pathlib").Path(sys.argv[1]))
print(server.start(), flush=True)
time.sleep(120)
"""


@pytest.fixture
def data_dir() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="lk-embedded-", dir="/tmp"))
    yield d
    postmaster = d / "pg" / "postmaster.pid"
    if postmaster.exists():  # never leave a server behind, whatever the test did
        pid = int(postmaster.read_text().split()[0])
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    subprocess.run(["rm", "-rf", str(d)], check=False)


def postmaster_pid(data_dir: Path) -> int | None:
    f = data_dir / "pg" / "postmaster.pid"
    return int(f.read_text().split()[0]) if f.exists() else None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purposes
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split()[2] == "Z")


def stop_asked(pid: int) -> bool:
    """Whether a fast shutdown's SIGINT (what `pg_ctl stop` sends) waits for the stopped process ``pid``."""
    status = Path(f"/proc/{pid}/status").read_text()
    pending = int(next(line for line in status.splitlines() if line.startswith("ShdPnd:")).split()[1], 16)
    return bool(pending & 1 << (signal.SIGINT - 1))


def wait_gone(pid: int, timeout: float = 15) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.1)
    return False


def until_chunked(data_dir: Path, within_s: float = 60) -> None:
    """Until the server's first chunk is stored: a worker draining the queue is busy with its jobs."""

    async def poll() -> None:
        socket_dir = (data_dir / "pg" / "postmaster.pid").read_text().splitlines()[4]
        conn = await asyncpg.connect(f"postgresql://postgres:@/postgres?host={socket_dir}")
        deadline = time.monotonic() + within_s
        try:
            while not await conn.fetchval("SELECT count(*) > 0 FROM chunks"):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no chunk stored after {within_s} s")
                await asyncio.sleep(0.05)
        finally:
            await conn.close()

    asyncio.run(poll())


def start_holder(
    data_dir: Path, sigterm: str = "SIG_DFL", env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], str]:
    """The app, launched with SIGTERM as ``sigterm`` whatever this test run inherited."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(data_dir), sigterm], stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT
    )
    assert proc.stdout is not None
    dsn = proc.stdout.readline().strip()
    assert dsn.startswith("postgresql://"), dsn
    return proc, dsn


@pytest.mark.parametrize("launched_with", ["SIG_DFL", "SIG_IGN"])
def test_sigterm_stops_the_server(data_dir: Path, launched_with: str) -> None:
    # A launcher may start the app with SIGTERM ignored (CI runners do); the app must still stop on it.
    proc, _ = start_holder(data_dir, launched_with)
    pid = postmaster_pid(data_dir)
    assert pid and alive(pid)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    assert wait_gone(pid), "the embedded PostgreSQL outlived the app that was sent SIGTERM"


async def test_start_returns_a_server_taking_connections_and_stop_one_gone(data_dir: Path) -> None:
    """Our own waits in place of `pg_ctl -w`'s: start returns once the server takes connections, stop once it has
    exited (a copy of the data dir made next is of a stopped database)."""
    server = EmbeddedPostgres(data_dir)
    for _ in range(2):  # the first start makes the database, the second starts an existing one
        conn = await asyncpg.connect(server.start())
        assert await conn.fetchval("SELECT 1") == 1
        await conn.close()
        pid = postmaster_pid(data_dir)
        assert pid and alive(pid)
        server.stop()
        assert not alive(pid) and postmaster_pid(data_dir) is None


async def test_recovers_after_the_app_was_killed(data_dir: Path) -> None:
    proc, _ = start_holder(data_dir)
    pid = postmaster_pid(data_dir)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert pid and alive(pid)  # orphaned, and its handle file still names the dead app

    server = EmbeddedPostgres(data_dir)
    dsn = server.start()
    conn = await asyncpg.connect(dsn)
    assert await conn.fetchval("SELECT 1") == 1
    await conn.close()
    server.stop()
    assert wait_gone(pid), "the stale handle of the killed app kept the server running after stop()"


async def test_recovers_after_postgres_itself_was_killed(data_dir: Path) -> None:
    server = EmbeddedPostgres(data_dir)
    server.start()
    pid = postmaster_pid(data_dir)
    assert pid
    os.kill(pid, signal.SIGKILL)
    assert wait_gone(pid)
    assert postmaster_pid(data_dir) == pid  # a stale postmaster.pid is left behind

    again = EmbeddedPostgres(data_dir)
    dsn = again.start()
    conn = await asyncpg.connect(dsn)
    assert await conn.fetchval("SELECT 1") == 1
    await conn.close()
    again.stop()


async def test_a_long_running_process_starts_its_killed_server_again(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The bot and `worker` run until stopped: a server killed under them (the OOM killer) used to stay dead, the
    workers and the voice spool waiting for it until someone restarted the bot."""
    monkeypatch.setattr(db, "KEEP_RUNNING_EVERY_S", 0.2)
    spec = EmbeddingSpec("test-model", 8)
    async with open_database(None, data_dir, spec, run_migrations=False, keep_running=True) as pool:
        assert await pool.fetchval("SELECT 1") == 1
        pid = postmaster_pid(data_dir)
        assert pid
        os.kill(pid, signal.SIGKILL)
        assert wait_gone(pid)
        deadline = time.monotonic() + 60
        while True:
            try:
                assert await pool.fetchval("SELECT 1") == 1
                break
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, asyncpg.InternalClientError):
                assert time.monotonic() < deadline, "the killed server was never started again"
                await asyncio.sleep(0.2)
        assert postmaster_pid(data_dir) not in (None, pid)
    assert postmaster_pid(data_dir) is None  # and stopped at the end as usual
    assert "starting it again" in caplog.text


async def test_a_restart_under_way_at_exit_is_waited_for_and_stopped(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watch's restart runs in a thread that cancelling the watch does not stop: the process used to stop
    the server and exit while the thread was still starting it, leaving a server behind."""
    monkeypatch.setattr(db, "KEEP_RUNNING_EVERY_S", 0.05)
    began, finished = threading.Event(), threading.Event()
    real_start = EmbeddedPostgres.start

    def slow_start(self: EmbeddedPostgres) -> str:
        if threading.current_thread() is threading.main_thread():
            return real_start(self)
        began.set()
        time.sleep(1.0)  # the process is asked to stop meanwhile
        try:
            return real_start(self)
        finally:
            finished.set()

    monkeypatch.setattr(EmbeddedPostgres, "start", slow_start)
    async with open_database(None, data_dir, EmbeddingSpec("test-model", 8), run_migrations=False, keep_running=True):
        pid = postmaster_pid(data_dir)
        assert pid
        os.kill(pid, signal.SIGKILL)
        assert wait_gone(pid)
        assert await asyncio.to_thread(began.wait, 30)
    assert finished.wait(60)
    assert postmaster_pid(data_dir) is None


def test_default_data_dir_is_never_under_root_home() -> None:
    d = default_data_dir()
    assert not str(d).startswith("/root")
    if os.geteuid() == 0:
        assert d == Path("/var/lib/lorekeeper")


def cli(data_dir: Path, *args: str) -> subprocess.Popen[str]:
    """The CLI on the embedded server in ``data_dir``."""
    return lorekeeper(*args, env={"DATABASE_URL": None, "LOREKEEPER_DATA_DIR": str(data_dir)})


def test_processes_starting_together_on_a_fresh_data_dir_all_succeed(data_dir: Path) -> None:
    # docker-compose or systemd start `run` and `worker` together on first boot: one initdb, one CREATE EXTENSION.
    procs = [cli(data_dir, "campaign", "create", name) for name in ("A", "B", "C")]
    procs.append(cli(data_dir, "campaign", "list"))
    for proc in procs:
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
    listed = cli(data_dir, "campaign", "list")
    out, err = listed.communicate(timeout=60)
    assert listed.returncode == 0, err
    assert {line.split()[-1] for line in out.splitlines()[2:]} == {"A", "B", "C"}
    assert postmaster_pid(data_dir) is None  # the last one out stopped the server


def test_a_database_killed_under_a_command_is_one_line(data_dir: Path) -> None:
    for args in (["campaign", "create", "Long"], ["ingest", str(long_session(data_dir))]):
        done = cli(data_dir, *args)
        assert done.wait(timeout=180) == 0, done.communicate()[1]
    worker = cli(data_dir, "worker", "--drain")  # 720 lines to chunk and embed: busy for a while
    assert worker.stderr is not None and worker.stderr.readline() == "worker started\n"
    until_chunked(data_dir)  # under the jobs, not before them
    pid = postmaster_pid(data_dir)
    assert pid
    os.kill(pid, signal.SIGKILL)
    _, err = worker.communicate(timeout=120)
    assert worker.returncode == 1, err
    lines = err.splitlines()
    assert lines[-1].startswith("error: the database stopped or cannot be reached ("), err
    assert lines[-1].endswith("): run the command again"), err
    assert "Traceback" not in err and len(lines) <= 10, err  # was ~150 lines, ending in psutil.NoSuchProcess


def test_a_server_killed_while_being_stopped_is_stopped_without_a_word(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The database killed as a command ends: alive when the stop looked, dead before the wait for it was over.
    pg_ctl then said the server "does not shut down", and pgserver's page about it ended the DM's one-line error."""
    server = EmbeddedPostgres(data_dir)
    server.start()
    pid = postmaster_pid(data_dir)
    assert pid
    os.kill(pid, signal.SIGSTOP)  # alive when stop() looks, and until killed: the race, made to happen
    stopping = threading.Thread(target=server.stop)
    with caplog.at_level(logging.INFO):
        stopping.start()
        deadline = time.monotonic() + 60
        while not stop_asked(pid):
            assert time.monotonic() < deadline and stopping.is_alive(), "stop() never asked the server to stop"
            time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)
        stopping.join(timeout=120)
    assert not stopping.is_alive()
    assert wait_gone(pid)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_a_data_dir_with_a_space_starts(data_dir: Path) -> None:
    # pgserver hands the socket dir to pg_ctl unquoted; macOS's default data dir has a space in it.
    server = EmbeddedPostgres(data_dir / "Application Support")
    if os.geteuid() == 0:  # pgserver would open the socket dir to every local user: refused, with the way out
        with pytest.raises(DatabaseError, match=r"running as root.*set LOREKEEPER_DATA_DIR to a path without spaces"):
            server.start()
        return
    dsn = server.start()
    try:
        conn = await asyncpg.connect(dsn)
        assert await conn.fetchval("SELECT 1") == 1
        await conn.close()
    finally:
        server.stop()
    socket_dir = Path(dsn.partition("?host=")[2])
    assert " " not in str(socket_dir)
    os.rmdir(socket_dir)  # empty once the server has stopped


#: With ``/pg/.s.PGSQL.5432`` after it, past the 107 bytes a unix socket's path may have.
LONG_NAME = "a-long-folder-name-for-the-campaign-data-" * 2


def test_a_data_dir_too_long_for_a_socket_lets_no_other_local_user_in(data_dir: Path) -> None:
    """With no room for the socket in the data dir, pgserver put it in ``TMPDIR/<hash>``, a dir other users may
    enter (0755; chmod 777 as root), and the server trusts every local connection, as superuser: any account on the
    machine could read and change every campaign. Not root: a dir of this user's alone."""
    if os.geteuid() != 0:
        server = EmbeddedPostgres(data_dir / LONG_NAME)
        socket_dir = Path(parse_qs(urlsplit(server.start()).query)["host"][0])
        try:
            assert socket_dir.stat().st_uid == os.getuid() and stat.S_IMODE(socket_dir.stat().st_mode) == 0o700
        finally:
            server.stop()
        os.rmdir(socket_dir)
        return
    # pgserver would open any socket dir but the data dir to everyone: refused, with the way out
    server = EmbeddedPostgres(data_dir / LONG_NAME)
    try:
        with pytest.raises(
            DatabaseError, match=r"running as root.*too long.*set LOREKEEPER_DATA_DIR to a shorter path"
        ):
            server.start()
    finally:
        server.stop()  # not left running if it did start


def test_a_data_dir_the_server_cannot_start_in_is_one_error_saying_what_to_do(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A data dir restored from a backup: pgserver's page (a traceback and the whole server log, 360 lines at the
    command line) gave way to one line, naming the fix where it knows it."""
    server = EmbeddedPostgres(data_dir)
    server.start()
    server.stop()
    pgdata = data_dir / "pg"
    if os.geteuid() == 0:  # the server runs as pgserver: a copy made with `cp -r` belongs to root
        for path in [pgdata, *pgdata.rglob("*")]:
            os.chown(path, 0, 0)
        started = time.monotonic()
        with caplog.at_level(logging.INFO), pytest.raises(DatabaseError) as lost_owners:
            EmbeddedPostgres(data_dir).start()
        # a server that cannot even write its log is seen gone at once, not after pg_ctl's minute
        assert time.monotonic() - started < PG_CTL_TIMEOUT_S / 2
        assert str(lost_owners.value) == (
            f"the embedded PostgreSQL in {pgdata} did not start: its files do not belong to the 'pgserver' user it "
            f"runs as (a copy that lost its owners?): run `chown -R pgserver: {pgdata}` and start again"
        )
        subprocess.run(["chown", "-R", "pgserver:", str(pgdata)], check=True)
    (pgdata / "global" / "pg_control").unlink()
    with caplog.at_level(logging.INFO), pytest.raises(DatabaseError) as broken:
        EmbeddedPostgres(data_dir).start()
    assert str(broken.value) == f"the embedded PostgreSQL in {pgdata} did not start: its log ({pgdata}/log) says why"
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_a_server_that_will_not_start_is_said_to_with_its_own_reason(data_dir: Path) -> None:
    """A data dir restored with the wrong permissions: what the server wrote in its log on this start is the
    error, not only where the log is."""
    server = EmbeddedPostgres(data_dir)
    server.start()
    server.stop()
    pgdata = data_dir / "pg"
    (pgdata / "log").write_text((pgdata / "log").read_text() + "2026-01-01 00:00:00 UTC [1] FATAL:  an old failure\n")
    pgdata.chmod(0o755)
    with pytest.raises(DatabaseError) as refused:
        EmbeddedPostgres(data_dir).start()
    assert str(refused.value) == (
        f'the embedded PostgreSQL in {pgdata} did not start: data directory "{pgdata}" has invalid permissions. '
        f"Permissions should be u=rwx (0700) or u=rwx,g=rx (0750) (its log: {pgdata}/log)"
    )


def test_a_database_that_cannot_be_created_says_why_not_where_no_log_is(data_dir: Path) -> None:
    """A data dir on a disk too small for a new database: initdb fails and removes what it made, log included, so
    the error may not send the DM to read that log: it says what initdb said."""

    def small_disk() -> None:  # files may grow to 4 MB: a WAL segment (16 MB) does not fit
        resource.setrlimit(resource.RLIMIT_FSIZE, (4 << 20, resource.RLIM_INFINITY))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails instead of killing the writer

    made = subprocess.run(
        [sys.executable, "-c", "from bot.cli import main; main()", "campaign", "list"],
        env={**os.environ, "LOREKEEPER_DATA_DIR": str(data_dir), "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=small_disk,
    )
    assert made.returncode == 1, made.stderr
    assert made.stderr.startswith(
        f"error: the embedded PostgreSQL in {data_dir / 'pg'} did not start: it could not create its database ("
    ), made.stderr
    assert "File too large" in made.stderr and "its log" not in made.stderr, made.stderr
    assert len(made.stderr.splitlines()) == 1, made.stderr


async def test_a_stale_pid_now_used_by_another_process_is_left_alone(data_dir: Path) -> None:
    """After a crash and a reboot postmaster.pid may name a pid another process has since been given: it was taken
    for the running server, the connection failed and pgserver's clean-up killed that process."""
    server = EmbeddedPostgres(data_dir)
    server.start()
    pid = postmaster_pid(data_dir)
    assert pid
    os.kill(pid, signal.SIGKILL)  # the crash: postmaster.pid is left behind
    assert wait_gone(pid)
    server.stop()
    other = await asyncio.create_subprocess_exec("sleep", "600")
    try:
        pidfile = data_dir / "pg" / "postmaster.pid"
        lines = pidfile.read_text().splitlines()
        pidfile.write_text("\n".join([str(other.pid), *lines[1:]]) + "\n")  # the reboot: its pid went to `sleep`
        # and a user of the server before the reboot: its pid is taken too, but no one can be using that server
        handles = data_dir / "pg" / ".handle_pids.json"
        handles.write_text(json.dumps([other.pid]))
        os.utime(handles, (0, 0))
        async with open_database(None, data_dir, EmbeddingSpec("test-model", 8), run_migrations=False) as pool:
            assert await pool.fetchval("SELECT 1") == 1
        assert alive(other.pid), "the process that got the dead server's pid was killed"
        assert postmaster_pid(data_dir) is None  # our own server was started and stopped
    finally:
        other.kill()
        await other.wait()


PG16 = """
import asyncio, sys
from pathlib import Path
import asyncpg
from memory.db import EmbeddedPostgres

async def main() -> None:
    server = EmbeddedPostgres(Path(sys.argv[1]))
    conn = await asyncpg.connect(server.start())
    await conn.execute(sys.argv[2])
    await conn.close()
    server.stop()

asyncio.run(main())
"""
OLD_POSTGRES = {**os.environ, "PGSERVER_POSTGRES_VERSION": "16"}  # the older major pgserver still ships


def made_by_postgres_16(data_dir: Path, sql: str) -> Path:
    """A data dir of PostgreSQL 16 (as an older build made it) with ``sql`` run in it; its pg dir."""
    subprocess.run(
        [sys.executable, "-c", PG16, str(data_dir), sql], env=OLD_POSTGRES, cwd=ROOT, check=True, timeout=120
    )
    pgdata = data_dir / "pg"
    assert (pgdata / "PG_VERSION").read_text() == "16\n"
    return pgdata


def test_db_upgrade_moves_a_postgresql_16_database_to_18(data_dir: Path) -> None:
    """As root pg_upgrade runs as the server's user, in a dir only root could write: it always failed."""
    pgdata = made_by_postgres_16(
        data_dir,
        "CREATE EXTENSION vector; CREATE TABLE kept (note text, v vector(3)); "
        "INSERT INTO kept VALUES ('the crown sank', '[1,2,3]')",
    )
    upgrade = cli(data_dir, "db", "upgrade")
    out, err = upgrade.communicate(timeout=300)
    assert upgrade.returncode == 0, err
    said, old = out.splitlines(), f"{pgdata}.old"
    assert said[0] == f"upgraded {pgdata} from PostgreSQL 16 to 18"
    assert re.fullmatch(
        rf"the database as it was before the upgrade is in {re.escape(old)} \((\d+) MB\): once the bot has "
        rf"started and your campaigns look right, delete it with `rm -rf {re.escape(old)}`",
        said[1],
    ), said
    assert int(re.search(r"\((\d+) MB", said[1])[1]) > 10  # a whole PostgreSQL data dir
    pending = len(migration_files())  # a database no Lorekeeper migrated
    assert said[2:] == [
        f"the database is not yet this version's: {pending} migrations to apply (`lorekeeper db status` lists "
        "them); run `lorekeeper db migrate`, with the bot and every worker stopped"
    ]
    assert err == ""
    assert (data_dir / "pg.old" / "PG_VERSION").read_text() == "16\n"
    again = cli(data_dir, "db", "upgrade")  # it says so again, until it is deleted
    out, _ = again.communicate(timeout=300)
    assert out.splitlines() == [f"{pgdata} is on PostgreSQL 18 already", *said[1:]]
    assert (pgdata / "PG_VERSION").read_text() == "18\n"
    assert list(data_dir.glob(".pgdata-tmp-*")) == []
    assert postmaster_pid(data_dir) is None

    async def kept() -> list[tuple[str, str]]:
        server = EmbeddedPostgres(data_dir)
        conn = await asyncpg.connect(server.start())
        try:
            return [tuple(row) for row in await conn.fetch("SELECT note, v::text FROM kept")]
        finally:
            await conn.close()
            server.stop()

    assert asyncio.run(kept()) == [("the crown sank", "[1,2,3]")]


def test_db_upgrade_on_the_current_postgresql_says_the_migrations_still_to_apply(data_dir: Path) -> None:
    """`db upgrade` said only "… is on PostgreSQL 18 already" with seven migrations pending: a DM who read the
    Upgrading page's title and ran it thought the upgrade done."""
    made = cli(data_dir, "db", "status")  # makes the database, applies nothing
    assert made.communicate(timeout=300) and made.returncode == 0
    pgdata, pending = data_dir / "pg", len(migration_files())
    upgrade = cli(data_dir, "db", "upgrade")
    out, err = upgrade.communicate(timeout=300)
    assert (upgrade.returncode, err) == (0, "")
    assert out.splitlines() == [
        f"{pgdata} is on PostgreSQL 18 already",
        f"the database is not yet this version's: {pending} migrations to apply (`lorekeeper db status` lists "
        "them); run `lorekeeper db migrate`, with the bot and every worker stopped",
    ]
    migrate = cli(data_dir, "db", "migrate")
    assert migrate.communicate(timeout=300) and migrate.returncode == 0
    upgrade = cli(data_dir, "db", "upgrade")
    out, _ = upgrade.communicate(timeout=300)
    assert out == f"{pgdata} is on PostgreSQL 18 already\n"


def test_a_failed_db_upgrade_is_one_line_and_leaves_no_copy_behind(data_dir: Path) -> None:
    """pg_upgrade refuses a column of type regproc (its OIDs are not kept): a 40-line traceback was printed and
    the new cluster it had begun (~40 MB) was left in the data dir at each try."""
    pgdata = made_by_postgres_16(data_dir, "CREATE TABLE odd (p regproc)")
    upgrade = cli(data_dir, "db", "upgrade")
    _, err = upgrade.communicate(timeout=300)
    assert upgrade.returncode == 1
    assert err == (
        f"error: could not upgrade {pgdata} from PostgreSQL 16 to 18 (pg_upgrade failed); the database is as it "
        "was: `lorekeeper -vv db upgrade` shows why (check the free disk space: the upgrade makes a copy)\n"
    )
    assert (pgdata / "PG_VERSION").read_text() == "16\n"
    assert sorted(p.name for p in data_dir.iterdir()) == [".pg.lock", "pg"]
    assert postmaster_pid(data_dir) is None

    verbose = cli(data_dir, "-vv", "db", "upgrade")
    _, err = verbose.communicate(timeout=300)
    assert verbose.returncode == 1
    assert "reg* data types in user tables" in err  # what pg_upgrade said


def test_db_upgrade_refuses_a_server_in_use(data_dir: Path) -> None:
    """It took no lock and stopped the server under a worker of the older build still running on it."""
    pgdata = made_by_postgres_16(data_dir, "SELECT 1")
    holder, _ = start_holder(data_dir, env=OLD_POSTGRES)
    try:
        pid = postmaster_pid(data_dir)
        upgrade = cli(data_dir, "db", "upgrade")
        _, err = upgrade.communicate(timeout=300)
        assert upgrade.returncode == 1
        assert err == (
            f"error: the embedded PostgreSQL in {pgdata} is in use (process {holder.pid}): stop the bot, its "
            "workers and other lorekeeper commands, then run `lorekeeper db upgrade` again\n"
        )
        assert pid and alive(pid) and postmaster_pid(data_dir) == pid
        assert (pgdata / "PG_VERSION").read_text() == "16\n"
    finally:
        holder.send_signal(signal.SIGTERM)
        holder.wait(timeout=30)


def test_db_migrate_refuses_a_server_in_use_while_migrations_are_pending(data_dir: Path) -> None:
    """`db migrate` applied the new version's migrations under a worker of the older one still running, which then
    did the new version's jobs by its older rules, and its work was taken as current."""
    holder, _ = start_holder(data_dir)  # a worker of the older build: it holds the server, migrates nothing
    try:
        migrate = cli(data_dir, "db", "migrate")
        _, err = migrate.communicate(timeout=300)
        assert migrate.returncode == 1
        assert err == (
            f"error: the embedded PostgreSQL in {data_dir / 'pg'} is in use (process {holder.pid}): stop the bot, "
            "its workers and other lorekeeper commands, then run `lorekeeper db migrate` again\n"
        )
    finally:
        holder.send_signal(signal.SIGTERM)
        holder.wait(timeout=30)
    migrate = cli(data_dir, "db", "migrate")
    out, err = migrate.communicate(timeout=300)
    assert migrate.returncode == 0, err
    assert out.startswith("applied 0001_init.sql\n")


def test_an_old_copy_left_by_an_earlier_db_upgrade_is_named_before_the_next_one_starts(data_dir: Path) -> None:
    """`db upgrade` keeps the database as it was in pg.old, and pgserver renames the data dir there after the
    copy is made: with the copy of an earlier upgrade still there, the next one failed at the end, saying "the
    database is as it was" but leaving the whole new copy (as big as the database) in the data dir."""
    pgdata = made_by_postgres_16(data_dir, "SELECT 1")
    earlier = data_dir / "pg.old"
    earlier.mkdir()
    (earlier / "PG_VERSION").write_text("15\n")
    (earlier / "base").mkdir()
    (earlier / "base" / "1").write_bytes(b"\0" * 3_000_000)
    upgrade = cli(data_dir, "db", "upgrade")
    _, err = upgrade.communicate(timeout=300)
    assert upgrade.returncode == 1
    assert err == (
        f"error: {earlier} (3 MB) holds the database as it was before an earlier `lorekeeper db upgrade`, and "
        f"this one keeps its own copy there: delete it (`rm -rf {earlier}`), or move it away, then run "
        "`lorekeeper db upgrade` again\n"
    )
    assert sorted(p.name for p in data_dir.iterdir()) == [".pg.lock", "pg", "pg.old"]  # no copy begun
    assert (pgdata / "PG_VERSION").read_text() == "16\n"
    assert (earlier / "PG_VERSION").read_text() == "15\n"
    assert postmaster_pid(data_dir) is None


def test_a_data_dir_that_cannot_be_used_is_one_line_naming_the_variable(data_dir: Path) -> None:
    """LOREKEEPER_DATA_DIR on a file, or under one, said only the OS's "error: /srv/lk: File exists": neither the
    setting nor what to do."""
    a_file = data_dir / "lorekeeper.tgz"
    a_file.write_text("not a folder")
    cases = {a_file: "it is a file, not a folder", a_file / "data": "a part of its path is a file, not a folder"}
    if os.geteuid() != 0:  # root writes anywhere
        read_only = data_dir / "read-only"
        read_only.mkdir(mode=0o500)
        cases[read_only] = "Permission denied"
    for where, why in cases.items():
        proc = cli(where, "campaign", "list")
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 1 and out == ""
        assert err == (
            f"error: cannot use the data folder {where} (LOREKEEPER_DATA_DIR): {why}; set LOREKEEPER_DATA_DIR to a "
            "folder this user can write to\n"
        )
