"""`lorekeeper db …`: migrations and their status."""

from __future__ import annotations

import click

from bot.cli import cli
from bot.cli.common import async_command, emit_json, json_option, open_memory, settings_from
from memory.db import migrate, migration_status


@cli.group()
def db() -> None:
    """The database: migrations and status."""


@db.command("migrate")
@json_option
@click.pass_context
@async_command
async def db_migrate(ctx: click.Context, as_json: bool) -> None:
    """Apply pending migrations (also done at every start)."""
    settings = settings_from(ctx)
    async with open_memory(settings, run_migrations=False) as memory:
        applied = await migrate(memory.pool, settings.embedding)
    if as_json:
        emit_json({"applied": applied})
    else:
        click.echo("\n".join(f"applied {name}" for name in applied) or "database is up to date")


@db.command("status")
@json_option
@click.pass_context
@async_command
async def db_status(ctx: click.Context, as_json: bool) -> None:
    """Which migrations are applied and which embedding model the vectors use."""
    settings = settings_from(ctx)
    async with open_memory(settings, run_migrations=False) as memory:
        status = await migration_status(memory.pool)
    status["database"] = "DATABASE_URL" if settings.database_url else f"embedded ({settings.data_dir / 'pg'})"
    if as_json:
        emit_json(status)
        return
    click.echo(f"database:  {status['database']}")
    click.echo(f"applied:   {', '.join(status['applied']) or '-'}")  # type: ignore[arg-type]
    click.echo(f"pending:   {', '.join(status['pending']) or '-'}")  # type: ignore[arg-type]
    click.echo(f"embedding: {status['embedding_model']} ({status['embedding_dim']} dimensions)")
