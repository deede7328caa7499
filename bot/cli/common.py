"""What every CLI command shares: settings, the memory store, the campaign option, output, exit codes."""

from __future__ import annotations

import asyncio
import functools
import gc
import json
import logging
import shlex
import shutil
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Callable, Collection, Coroutine, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from typing import Any, TextIO
from urllib.parse import parse_qs, urlsplit

import click
from pydantic import BaseModel, ValidationError

from bot.settings import ConfigFileError, Settings, load_settings
from memory.campaigns import Campaigns
from memory.db import DatabaseError, open_database
from memory.errors import (
    AlreadyExistsError,
    InvalidInputError,
    MemoryError_,
    NextSteps,
    NotFoundError,
    quoted,
    validation_problems,
    with_next_step,
)
from memory.models import Campaign
from memory.store import CampaignMemory, Memory

log = logging.getLogger("lorekeeper")


class CliError(click.ClickException):
    """An error for the user: one line on stderr, exit code 1."""

    exit_code = 1

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


#: What the DM can run next after these errors (``/…`` in Discord: ``bot.checks``).
NEXT_STEPS: NextSteps = {
    (AlreadyExistsError, "entity"): "see it with `lorekeeper entity show {name}`",
    (AlreadyExistsError, "campaign"): "`lorekeeper campaign use {name}` makes it the active one",
    (AlreadyExistsError, "transcript"): "give it one with `--session TITLE`",
    (AlreadyExistsError, "imported transcript"): "`--session {name}` imports it into that session again (with "
    "`--started DATE` to correct its date); `--again` imports it as a new session anyway",
    (NotFoundError, "campaign"): "`lorekeeper campaign list` shows them",
    (NotFoundError, "review item"): "`lorekeeper review list` shows those waiting",
    (NotFoundError, "session"): "`lorekeeper session list` shows them",
    (InvalidInputError, "live session"): "a recording is stopped with /session stop, an import ends when it is "
    "done; if it was cut off (a crash, Ctrl-C), `lorekeeper session delete {name} --even-if-live` deletes it",
}


def explain(exc: Exception) -> None:
    """Say an error of ours, the database's, a config file's or the user's own file in one line and exit 1;
    re-raise anything else (a bug: its traceback is what helps)."""
    if isinstance(exc, MemoryError_):
        click.echo(f"error: {with_next_step(exc, NEXT_STEPS, shlex.quote)}", err=True)
        sys.exit(1)
    if isinstance(exc, DatabaseError | ConfigFileError):
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    if isinstance(exc, ValidationError):
        click.echo(f"error: {validation_problems(exc)}", err=True)
        sys.exit(1)
    if isinstance(exc, OSError) and exc.filename is not None:  # the user's own file, not the database
        click.echo(f"error: {exc.filename}: {exc.strerror or exc}", err=True)
        sys.exit(1)
    from memory.jobs import is_outage, outage_said, short_reason  # slow to import: only on this path
    from memory.providers.embeddings import EmbeddingConfigError

    if isinstance(exc, EmbeddingConfigError):  # found once the embedder is made: the settings looked well-formed
        click.echo(
            f"error: {exc} (check LOREKEEPER_EMBEDDING_PROVIDER, LOREKEEPER_EMBEDDING_MODEL and "
            "LOREKEEPER_EMBEDDING_DIM)",
            err=True,
        )
        sys.exit(1)
    if not is_outage(exc):
        raise exc
    away, first = outage_said(exc)
    click.echo(f"error: {away} ({short_reason(exc)}): {first}run the command again", err=True)
    sys.exit(1)


#: discord.py's loggers that at DEBUG write whole requests and events: interaction tokens (each lets whoever reads
#: it answer or edit as the bot for 15 minutes), the voice connection's token and key, and every message sent,
#: review items with their secrets included. Never below INFO, whatever -v says.
DISCORD_PAYLOAD_LOGGERS = ("discord.http", "discord.webhook", "discord.gateway")


def llm_away(error: BaseException) -> bool:
    """Whether ``error`` (or what it wraps) is the LLM not answering at all: unreachable, overloaded, too slow."""
    from memory.providers.llm import LLMUnavailable

    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in seen:
        if isinstance(current, LLMUnavailable):
            return True
        seen.append(current)
        current = current.__cause__ or current.__context__
    return False


class BriefOutages(logging.Filter):
    """Without -v, a lost database is one line per log record, said once a minute: pgqueuer and asyncpg log a
    traceback for every connection they lose, and say the same again and again while it is away."""

    def __init__(self) -> None:
        super().__init__()
        self._said: dict[tuple[str, int, str], float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if error is not None:
            from memory.jobs import is_outage, short_reason  # slow to import: only for a record with an error

            if record.name.startswith("pgqueuer") and llm_away(error):
                # a job's try the LLM did not answer ("ERROR pgqueuer: … lk_extract/14"): it is tried again, then
                # held, and what waits on it says so naming the setting to check; -v shows each try
                return False
            if is_outage(error):
                record.msg, record.args = f"{record.getMessage()} ({short_reason(error)})", None
                record.exc_info = record.exc_text = None
        said = (record.name, record.levelno, record.getMessage())
        if record.created - self._said.get(said, float("-inf")) < 60:
            return False
        self._said[said] = record.created
        if len(self._said) > 1000:  # a bot runs for months: forget what was said long ago
            self._said = {k: t for k, t in self._said.items() if record.created - t < 60}
        return True


def settings_from(ctx: click.Context) -> Settings:
    root = ctx.find_root()
    obj = root.obj or {}
    if "settings" not in obj:
        obj["settings"] = load_settings(obj.get("config_file"))
        level = logging.WARNING - 10 * obj.get("verbose", 0)
        logging.basicConfig(level=max(level, logging.DEBUG), format="%(levelname)s %(name)s: %(message)s")
        if not obj.get("verbose"):
            for handler in logging.getLogger().handlers:
                handler.addFilter(BriefOutages())
        for name in DISCORD_PAYLOAD_LOGGERS:  # -vv is for our code: theirs would log secrets (see above)
            logging.getLogger(name).setLevel(max(level, logging.INFO))
        root.obj = obj
    return obj["settings"]


def log_progress() -> None:
    """Our own progress (start, shutdown) is worth seeing for a long-running service; discord.py's and the rest stay
    at the CLI's level (-v), so a refused token is still exactly one line."""
    lorekeeper_log = logging.getLogger("lorekeeper")
    lorekeeper_log.setLevel(min(logging.getLogger().getEffectiveLevel(), logging.INFO))


@contextmanager
def load_progress(label: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr (stdout may be JSON for a script) for a campaign file's load: the callback
    ``apply_campaign_file`` (and an import's stage and accept, which load one) calls with done and total."""
    with click.progressbar(length=0, label=label, file=sys.stderr) as bar:  # click.get_text_stream is deprecated
        last = [0]

        def progress(done: int, total: int) -> None:
            bar.length = total  # known once the load has the file
            bar.update(done - last[0])
            last[0] = done

        yield progress


class Progress:
    """How far a long step is: a line on stderr (stdout may be JSON for a script) at most every ``every`` seconds,
    the first after ``every`` seconds (a quick step says nothing): every 2 s at a terminal, every 5 s otherwise (a
    log, CI: someone reading it later still sees that a long import moved)."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        every: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        try:
            self.terminal = bool(self.stream.isatty())
            self.enabled = True
        except (AttributeError, ValueError):  # a closed or stand-in stream: nowhere to say it
            self.terminal = self.enabled = False
        self.every = every if every is not None else (2.0 if self.terminal else 5.0)
        self._last = clock()

    def __call__(self, message: Callable[[], str]) -> None:
        """Show ``message()`` if the last line shown (or the start) is ``every`` seconds old."""
        if self.enabled and self.clock() - self._last >= self.every:
            self.stream.write(message() + "\n")
            self.stream.flush()
            self.touch()

    def touch(self) -> None:
        """Something else just showed how far the step is: the next line waits ``every`` seconds from now."""
        self._last = self.clock()


def database_of(settings: Settings) -> str:
    """Which database and data dir a process uses, for its start line (a data dir other than meant is a new, empty
    database that looks like lost campaigns); never the password."""
    if not settings.database_url:
        return f"the embedded PostgreSQL in {settings.data_dir / 'pg'}"
    try:
        url = urlsplit(settings.database_url.get_secret_value())
        port = f":{url.port}" if url.port else ""
        socket = parse_qs(url.query).get("host", [])  # a unix socket's folder; the rest may hold a password
    except ValueError:
        return f"DATABASE_URL (data dir {settings.data_dir})"
    where = f"{url.scheme}://{url.username or ''}@{url.hostname or ''}{port}{url.path}"
    return f"DATABASE_URL {where}{f'?host={socket[0]}' if socket else ''} (data dir {settings.data_dir})"


@asynccontextmanager
async def open_memory(
    settings: Settings, *, run_migrations: bool = True, refuse_newer_schema: bool = True, keep_running: bool = False
) -> AsyncIterator[Memory]:
    url = settings.database_url.get_secret_value() if settings.database_url else None
    async with open_database(
        url,
        settings.data_dir,
        settings.embedding,
        run_migrations=run_migrations,
        refuse_newer_schema=refuse_newer_schema,
        keep_running=keep_running,
    ) as pool:
        memory = Memory(pool, accept_threshold=settings.accept_threshold)
        try:
            yield memory
        except NotFoundError as exc:
            if (campaign := _working_on.get()) is None:
                raise
            raise await _placed(memory, campaign, exc) from None


#: The campaign a command works on (set by :func:`campaign_memory`), for its not-found errors to name.
_working_on: ContextVar[Campaign | None] = ContextVar("working_on", default=None)
#: Whether the command shows what a player reads (``--as-player``): its not-found errors name no other campaign.
_as_player: ContextVar[bool] = ContextVar("as_player", default=False)


async def _placed(memory: Memory, campaign: Campaign, exc: NotFoundError) -> MemoryError_ | CliError:
    """``exc`` naming the campaign it looked in ("in this campaign" says nothing to a DM with the wrong one
    active), and which of the guild's other campaigns has what it was about."""
    message = str(exc).replace("in this campaign", f"in campaign {quoted(campaign.name)}", 1)
    if _as_player.get():  # "is in campaign 'RT'" would confirm a guess at a secret name, spelled exactly
        return NotFoundError(message, subject=exc.subject, name=exc.name)
    others = await memory.campaigns(campaign.guild_id).holding(exc.subject or "", exc.name or "", besides=campaign.id)
    if not others:
        return NotFoundError(message, subject=exc.subject, name=exc.name)
    what = exc.name if exc.subject == "review item" else repr(exc.name)
    if len(others) == 1:
        there = shlex.quote(others[0])
        return CliError(
            f"{message}; {what} is in campaign {quoted(others[0])}: `lorekeeper campaign use {there}` or pass "
            f"`--campaign {there}`"
        )
    listed = ", ".join(quoted(o) for o in others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
    return CliError(f"{message}; {what} is in campaigns {listed}: pass `--campaign NAME` with one of them")


async def error_said(memory: Memory, exc: MemoryError_) -> str:
    """What ending the command with ``exc`` would say after "error: ", for a command that says it and goes on (one
    of several review ids)."""
    placed: MemoryError_ | CliError = exc
    if isinstance(exc, NotFoundError) and (campaign := _working_on.get()) is not None:
        placed = await _placed(memory, campaign, exc)
    if isinstance(placed, CliError):
        return placed.format_message()
    return with_next_step(placed, NEXT_STEPS, shlex.quote)


async def campaign_memory(
    memory: Memory, settings: Settings, name: str | None, *, as_player: bool = False
) -> tuple[CampaignMemory, str]:
    """The named campaign, or the active one when no name is given; ``as_player``: the command shows what a player
    reads."""
    _as_player.set(as_player)
    campaigns = memory.campaigns(settings.guild_id)
    if name:
        campaign = await campaigns.get(name)
    else:
        active = await campaigns.active()
        if active is None:
            if not await campaigns.list():  # a first run: there is none to pass or use
                raise CliError(f"no active campaign: {await other_guilds(campaigns) or NONE_YET}")
            raise CliError("no active campaign: pass --campaign NAME or run `lorekeeper campaign use NAME`")
        campaign = active
    _working_on.set(campaign)
    return memory.campaign(campaign.id), campaign.name


#: What a DM with no campaign at all is told to do first.
NONE_YET = "there is none yet: `lorekeeper campaign create NAME` or `lorekeeper campaign load FILE` makes one"


def say_if_command_line_only(settings: Settings, name: str) -> None:
    """A campaign made under guild id 0 is the command line's own: a DM who made theirs with /campaign create and
    then loaded a file here had the world in a second campaign no server shows, and nothing said so."""
    if settings.guild_id == 0:
        click.echo(
            f"note: {quoted(name)} was made for the command line only: no Discord server sees it (set "
            "LOREKEEPER_GUILD_ID to your server's id)",
            err=True,
        )


async def other_guilds(campaigns: Campaigns) -> str:
    """When other guild ids have campaigns, what to say to an operator whose guild id may be the wrong one (how
    many, never their names); else ''."""
    count, guilds = await campaigns.elsewhere()
    if not count:
        return ""
    return (
        f"guild id {campaigns.guild_id} has no campaigns, but {count} campaign{'s' if count != 1 else ''} "
        f"{'are' if count != 1 else 'is'} stored under {guilds} other guild id{'s' if guilds != 1 else ''}: "
        "set LOREKEEPER_GUILD_ID to your Discord server's id (0: campaigns made on the command line)"
    )


def async_command(fn: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        asyncio.run(fn(*args, **kwargs))

    return wrapper


campaign_option = click.option(
    "--campaign", "-c", "campaign", metavar="NAME", help="Campaign to work on (default: the active one)."
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
player_option = click.option(
    "--as-player",
    is_flag=True,
    help="Show what a player reads in Discord: secret entities and facts left out, secret names masked "
    "(not with --json).",
)


def queued_said(pending: int) -> str:
    """That ``pending`` background jobs wait for a worker: the command line runs none, and a DM without the bot
    running saw a remedy "in the background" never happen."""
    return (
        f"{pending} background job{'s' * (pending != 1)} queued: the bot runs them if it is running, else "
        "`lorekeeper worker --drain`"
    )


def player_text_only(as_player: bool, as_json: bool) -> None:
    """--as-player previews what a player reads: text, as Discord shows it; JSON is the DM's, whole."""
    if as_player and as_json:
        raise click.UsageError("--as-player shows the text a player reads: give it without --json")


def to_jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    return value


def emit_json(value: Any) -> None:
    click.echo(json.dumps(to_jsonable(value), ensure_ascii=False, default=str))


def output_width() -> int:
    """Columns to fill: the terminal's, else $COLUMNS, else 100 (a pipe or a file)."""
    return shutil.get_terminal_size((100, 24)).columns


def wrapped(text: str, indent: int = 0, width: int | None = None) -> list[str]:
    """``text`` as lines of at most ``width`` (the output's) columns after ``indent`` spaces, broken between
    words only (a word longer than a line stays whole): the whole line is shown, never cut."""
    room = max((width or output_width()) - indent, 30)
    return textwrap.wrap(" ".join(text.split()), room, break_long_words=False, break_on_hyphens=False) or [""]


def table(rows: list[list[Any]], headers: list[str], *, wrap: Collection[int] = (), width: int | None = None) -> None:
    """A plain aligned text table (no colours: output is often piped): a cell's line breaks and tabs (a session's
    description has several lines) are single spaces. The columns numbered in ``wrap`` (the text said) are shown
    whole, wrapped between words onto the next lines to fit the output's width; the others stay on one line."""
    cells = [[str(h) for h in headers], *[[("" if c is None else " ".join(str(c).split())) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    if wrap:
        fixed = sum(w for i, w in enumerate(widths) if i not in wrap) + 2 * (len(widths) - 1)
        room = (width or output_width()) - fixed
        # the narrowest first: a column shorter than its share keeps its width and leaves the rest to the others
        for n, i in enumerate(sorted(wrap, key=lambda i: widths[i])):
            widths[i] = max(min(widths[i], max(room // (len(wrap) - n), 24)), len(cells[0][i]))
            room -= widths[i]
    for n, row in enumerate(cells):
        parts = [
            textwrap.wrap(c, widths[i], break_long_words=False, break_on_hyphens=False) or [""] if i in wrap else [c]
            for i, c in enumerate(row)
        ]
        for k in range(max(len(p) for p in parts)):
            line = [p[k] if k < len(p) else "" for p in parts]
            click.echo("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())
        if n == 0:
            click.echo("  ".join("-" * w for w in widths))


def freeze_start_up(*, tables: bool) -> None:
    """Take what start-up loaded (modules, cogs, the job context) out of the collector's way for good: it lives
    as long as the process, yet every full collection walked it, about 94,000 objects in the bot (55 ms of a
    paused event loop each time). ``tables``: load stage-1 correction's tables first, not during the first
    utterance. The gen-0 threshold stays (``correct`` raises it): here a higher one would let cyclic garbage, such
    as tracebacks holding audio frames, pile up in a process that runs for weeks."""
    if tables:
        from memory.correction.matcher import load_tables

        load_tables()
    gc.collect()  # start-up's garbage is freed, not frozen
    gc.freeze()
