"""`lorekeeper db …`: migrations and their status."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from bot.cli import cli
from bot.cli.common import CliError, async_command, emit_json, json_option, open_memory, settings_from
from memory.db import EmbeddedPostgres, NewerDatabaseError, megabytes, migrate, migration_status, switch_embedding
from memory.text import counted

if TYPE_CHECKING:
    from bot.settings import Settings
    from memory.jobs.context import JobContext
    from memory.store import Memory


@cli.group()
def db() -> None:
    """The database: migrations and status."""


@db.command("migrate")
@json_option
@click.pass_context
@async_command
async def db_migrate(ctx: click.Context, as_json: bool) -> None:
    """Apply pending migrations (also done at every start).

    Refused while the bot, a worker or another command uses the embedded database: a worker of the older
    version would go on with the new version's jobs by its older rules."""
    from memory.jobs.queue import stale_mentions
    from memory.mentions import MENTION_RULES

    settings = settings_from(ctx)
    async with open_memory(settings, run_migrations=False) as memory:
        if not settings.database_url and (await migration_status(memory.pool))["pending"]:
            EmbeddedPostgres(settings.data_dir).refuse_others("db migrate")
        applied = await migrate(memory.pool, settings.embedding)
        stale = await stale_mentions(memory.pool, MENTION_RULES)
    if as_json:
        emit_json({"applied": applied})
        return
    click.echo("\n".join(f"applied {name}" for name in applied) or "database is up to date")
    if stale:  # the work the upgrade leaves: a DM who sees the worker busy knows why
        click.echo(
            f"this version reads who a line names otherwise: the next worker to start (the bot's, or `lorekeeper "
            f"worker`) reads the lines of {counted(stale, 'session')} again, in the background"
        )


@db.command("status")
@json_option
@click.pass_context
@async_command
async def db_status(ctx: click.Context, as_json: bool) -> None:
    """Which migrations are applied and which embedding model the vectors use; and any a newer Lorekeeper
    applied, which every other command refuses."""
    settings = settings_from(ctx)
    async with open_memory(settings, run_migrations=False, refuse_newer_schema=False) as memory:
        status = await migration_status(memory.pool)
    status["database"] = "DATABASE_URL" if settings.database_url else f"embedded ({settings.data_dir / 'pg'})"
    if as_json:
        emit_json(status)
        return
    click.echo(f"database:  {status['database']}")
    click.echo(f"applied:   {', '.join(status['applied']) or '-'}")  # type: ignore[arg-type]
    click.echo(f"pending:   {', '.join(status['pending']) or '-'}")  # type: ignore[arg-type]
    if status["newer"]:
        click.echo(f"newer:     {', '.join(status['newer'])}")  # type: ignore[arg-type]
    if status["embedding_model"] is None:  # a new database: the first command that opens it chooses
        model, dim = settings.embedding.model, settings.embedding.dim
        click.echo(f"embedding: - (chosen when the migrations are applied: {model}, {dim} dimensions)")
    else:
        click.echo(f"embedding: {status['embedding_model']} ({status['embedding_dim']} dimensions)")
    if status["newer"]:
        click.echo(str(NewerDatabaseError(status["newer"])))  # type: ignore[arg-type]


@db.command("reembed")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
@async_command
async def db_reembed(ctx: click.Context, yes: bool) -> None:
    """Switch the semantic index to the configured embedding model and re-embed every session.

    On the same model: embed the lines of the sessions chunked before lines had vectors of their own.

    Stop the bot and every `lorekeeper worker` first: one still on the old model takes re-embed jobs and fails
    them, leaving sessions without passages (then, with the new model: `lorekeeper jobs retry --all` and
    `lorekeeper worker --drain`)."""
    # the workers (pgqueuer, numpy, the extraction pipeline: a second to import) only here: `db status` is quick
    from bot.cli.worker import drained_showing
    from memory.jobs.queue import enqueue_every_session, enqueue_sessions_without_line_vectors
    from memory.jobs.worker import run_workers

    settings = settings_from(ctx)
    async with open_memory(settings, run_migrations=False) as memory:
        status = await migration_status(memory.pool)
        if (status["embedding_model"], status["embedding_dim"]) == (settings.embedding.model, settings.embedding.dim):
            # Sessions chunked before lines were embedded one by one: their windows stay, their lines get vectors.
            sessions = await enqueue_sessions_without_line_vectors(memory.pool)
            if not sessions:
                click.echo(f"already on {settings.embedding.model}; nothing to do")
                return
            job_context = await probe_embedder(memory, settings)
            click.echo(f"embedding the lines of {sessions} sessions with {settings.embedding.model}")
            await run_workers(memory.pool, settings, drain=True, ctx=job_context)
            click.echo("done")
            return
        # The old vectors are dropped for good: first make sure the new model runs.
        job_context = await probe_embedder(memory, settings)
        if not yes:
            click.confirm(
                f"replace {status['embedding_model']} vectors with {settings.embedding.model} "
                f"({settings.embedding.dim} dimensions)? The session log is kept; chunks are rebuilt",
                abort=True,
                err=True,
            )
        dropped = await switch_embedding(memory.pool, settings.embedding)
        await migrate(memory.pool, settings.embedding)
        sessions = await enqueue_every_session(memory.pool)
        click.echo(f"dropped {dropped} chunks; re-embedding {sessions} sessions with {settings.embedding.model}")
        # the jobs done of those queued, as `worker --drain` shows them: a campaign of months re-embeds for long
        await drained_showing(memory.pool, run_workers(memory.pool, settings, drain=True, ctx=job_context))
    click.echo("done")


async def probe_embedder(memory: Memory, settings: Settings) -> JobContext:
    """The workers' context, once its embedder has embedded a text (the embedder checks the vector's size)."""
    from memory.jobs.context import make_job_context
    from memory.providers.embeddings import EmbeddingError

    try:
        context = make_job_context(memory, settings)
        await context.embedder.embed(["The party rests at the inn."])
    except (ValueError, EmbeddingError) as exc:
        raise CliError(
            f"cannot embed with {settings.embedding.model}: {exc}. Nothing was changed: check "
            "LOREKEEPER_EMBEDDING_PROVIDER, _MODEL and _DIM (and the endpoint), then run it again"
        ) from None
    return context


@db.command("upgrade")
@click.pass_context
@async_command
async def db_upgrade(ctx: click.Context) -> None:
    """Upgrade the embedded PostgreSQL data dir to this build's major version (keeps your data).

    It applies no migration: it says which are pending, for `lorekeeper db migrate`."""
    settings = settings_from(ctx)
    if settings.database_url:
        raise CliError("DATABASE_URL is set: upgrade that server with its own tools")
    server = EmbeddedPostgres(settings.data_dir)
    before, after = server.upgrade()
    if before == after:
        click.echo(f"{server.pgdata} is on PostgreSQL {after} already")
    else:
        click.echo(f"upgraded {server.pgdata} from PostgreSQL {before} to {after}")
    old = server.old_copy
    if old.exists():  # the way back to the build before; it stays until the DM deletes it
        click.echo(
            f"the database as it was before the upgrade is in {old} ({megabytes(old)}): once the bot has started "
            f"and your campaigns look right, delete it with `rm -rf {old}`"
        )
    # "upgraded" or "already": not yet the new version's database, which a DM reading the page's title may think
    async with open_memory(settings, run_migrations=False) as memory:
        pending: list[str] = (await migration_status(memory.pool))["pending"]  # type: ignore[assignment]
    if pending:
        click.echo(
            f"the database is not yet this version's: {counted(len(pending), 'migration')} to apply (`lorekeeper "
            "db status` lists them); run `lorekeeper db migrate`, with the bot and every worker stopped"
        )
