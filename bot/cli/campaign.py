"""`lorekeeper campaign …`: create, list, use, load a campaign file, import another tool's world, export, delete."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

import click

from bot.cli import cli
from bot.cli.common import (
    NONE_YET,
    CliError,
    async_command,
    campaign_memory,
    campaign_option,
    emit_json,
    json_option,
    load_progress,
    open_memory,
    other_guilds,
    say_if_command_line_only,
    settings_from,
    table,
)
from memory.campaigns import Campaigns
from memory.db import transaction
from memory.errors import MemoryError_, NotFoundError, quoted
from memory.replies import awaiting_review
from memory.store import CampaignMemory
from memory.text import counted

if TYPE_CHECKING:
    from campaigns.imports import Format

# The campaign file and import modules (YAML, the file schema, four importers) are imported by the commands that
# read or write files: `campaign list` and `use` need none of them. A test keeps this equal to theirs.
IMPORT_FORMATS = ("foundry", "roll20", "kanka", "csv")


@cli.group()
def campaign() -> None:
    """Campaigns: create, list, use, info, load, import, export, delete."""


@campaign.command("create")
@click.argument("name")
@click.option("--description", default="", help="One line about the campaign.")
@click.option("--system", default="", help="Rules system, e.g. 'D&D 5e'.")
@click.option("--use", "activate", is_flag=True, default=None, help="Make it the active campaign.")
@json_option
@click.pass_context
@async_command
async def create(ctx: click.Context, name: str, description: str, system: str, activate: bool, as_json: bool) -> None:
    """Create a campaign (the first one becomes the active one)."""
    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        created = await memory.campaigns(settings.guild_id).create(
            name, description=description, system=system, activate=activate
        )
    say_if_command_line_only(settings, created.name)
    if as_json:
        emit_json(created)
    else:
        click.echo(f"created campaign {quoted(created.name)}" + (" (active)" if created.active else ""))


@campaign.command("list")
@json_option
@click.pass_context
@async_command
async def list_(ctx: click.Context, as_json: bool) -> None:
    """List the campaigns."""
    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        campaigns = await memory.campaigns(settings.guild_id).list()
        other = "" if campaigns or as_json else await other_guilds(memory.campaigns(settings.guild_id))
    if as_json:
        emit_json(campaigns)
    elif other:
        click.echo(other)
    elif not campaigns:
        click.echo("no campaigns yet: `lorekeeper campaign create NAME`")
    else:
        table(
            [["*" if c.active else "", c.name, c.system, c.description] for c in campaigns],
            ["", "name", "system", "description"],
        )


@campaign.command("use")
@click.argument("name")
@click.pass_context
@async_command
async def use(ctx: click.Context, name: str) -> None:
    """Make NAME the active campaign (also `switch NAME`, as in Discord)."""
    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        active = await memory.campaigns(settings.guild_id).activate(name)
    click.echo(f"active campaign: {active.name}")


# what Discord calls it (/campaign switch) works here too, listed once in --help
campaign.add_command(click.Command("switch", callback=use.callback, params=use.params, help=use.help, hidden=True))


@campaign.command("info")
@click.argument("name", required=False)
@campaign_option
@json_option
@click.pass_context
@async_command
async def info(ctx: click.Context, name: str | None, campaign: str | None, as_json: bool) -> None:
    """What the campaign NAME (or -c NAME; default: the active one) holds, as /campaign info shows it to the DM."""
    if name and campaign and name != campaign:
        raise CliError(f"two campaigns named: {quoted(name)} and {quoted(campaign)}; give one")
    name = name or campaign
    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        campaigns = memory.campaigns(settings.guild_id)
        target = await campaigns.get(name) if name else await campaigns.active()
        if target is None:
            if not await campaigns.list():
                raise CliError(f"no active campaign: {await other_guilds(campaigns) or NONE_YET}")
            raise CliError("no active campaign: name one, or run `lorekeeper campaign use NAME`")
        counts = await campaigns.counts(target.id)
    if as_json:
        emit_json({**target.model_dump(mode="json"), **counts})
        return
    click.echo(f"{target.name}{' (active)' if target.active else ''}")
    rows: list[tuple[str, str | int]] = [("description", target.description), ("system", target.system)]
    rows += [
        ("entities", counts["entities"]),
        ("facts", counts["facts"]),
        ("sessions", counts["sessions"]),
        ("lines", counts["entries"]),
        ("passages", counts["chunks"]),
        ("awaiting review", awaiting_review(counts)),
    ]
    for label, value in rows:
        if value != "":
            # counts as the other commands say them ("2,532 lines"): a two-year campaign has five-digit ones
            click.echo(f"  {label + ':':<17}{f'{value:,}' if isinstance(value, int) else value}")


@campaign.command("load")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--campaign",
    "-c",
    "campaign",
    metavar="NAME",
    help="Campaign to load into (it must exist); default: the file's `campaign: name` (created if new), else the "
    "active one.",
)
@click.option("--dry-run", is_flag=True, help="Say what loading would do, and write nothing.")
@json_option
@click.pass_context
@async_command
async def load(ctx: click.Context, file: Path, campaign: str | None, dry_run: bool, as_json: bool) -> None:
    """Load a campaign YAML file: all or nothing, and loading it again changes nothing. Says what it changed of
    what the campaign had (an alias removed, an attribute replaced, a fact closed).

    The target is --campaign, else the file's own `campaign: name` (created if new), else the active one. The
    file's description and system are applied to the campaign it names, not to another one given by --campaign."""
    from campaigns.files import CampaignFileError, read_campaign_file
    from campaigns.load import apply_campaign_file
    from campaigns.schema import CampaignHeader

    settings = settings_from(ctx)
    try:
        parsed = read_campaign_file(file)
    except CampaignFileError as exc:
        raise CliError(str(exc)) from None
    header = parsed.campaign or CampaignHeader()
    async with open_memory(settings) as memory, transaction(memory.pool) as conn:
        # one transaction: a campaign created for the load is gone again when the load fails
        if dry_run:  # a load's own code, rolled back at its end: what it says cannot drift from what a load does
            undo = conn.transaction()
            await undo.start()
        campaigns = Campaigns(conn, settings.guild_id)
        name = campaign or header.name
        created = False
        if name:
            try:
                target = await campaigns.get(name)
            except NotFoundError as exc:
                if campaign:  # a typo, or meant to be made: both ways on
                    instead = f"the file's campaign {quoted(header.name)}" if header.name else "the active campaign"
                    raise CliError(
                        f"{exc}: create it with `lorekeeper campaign create {shlex.quote(campaign)}`, or leave out -c "
                        f"to load into {instead}"
                    ) from None
                target = await campaigns.create(name, description=header.description, system=header.system)
                created = True
        else:
            active = await campaigns.active()
            if active is None:
                raise CliError("no active campaign and the file names none: pass --campaign NAME")
            target = active
        mem = CampaignMemory(conn, target.id, accept_threshold=memory.accept_threshold)
        with load_progress(f"loading {file.name}") as progress:
            report = await apply_campaign_file(mem, parsed, progress=progress)
        elsewhere = bool(campaign and header.name and target.name.casefold() != header.name.casefold())
        if (header.description or header.system) and not elsewhere:
            await campaigns.update(
                target.name, description=header.description or target.description, system=header.system or target.system
            )
        if dry_run:
            await undo.rollback()
    if as_json:
        emit_json({"campaign": target.name, "dry_run": dry_run, **report.model_dump()})
    else:
        click.echo(f"{target.name}: {report.summary()}")
        if elsewhere:
            click.echo(f"(the file is for the campaign {quoted(header.name or '')}; loaded into {quoted(target.name)})")
        if said := report.said():
            click.echo(said)
        if dry_run:
            new = f"; the campaign {quoted(target.name)} would be created" if created else ""
            click.echo(f"dry run: nothing was written{new}")
        elif created and not target.active:  # the commands that follow would work on another campaign
            click.echo(
                f"created the campaign {quoted(target.name)}, not the active one: `lorekeeper campaign use` to switch"
            )
    if created and not dry_run:
        say_if_command_line_only(settings, target.name)


@campaign.command("export")
@campaign_option
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="File (default: stdout).")
@click.pass_context
@async_command
async def export(ctx: click.Context, campaign: str | None, output: Path | None) -> None:
    """Write the campaign's entities and relationships as a campaign YAML file (not the session log: to back up
    everything, see docs/guide/backups.md)."""
    from campaigns.files import dump_campaign_file, too_big_to_load
    from campaigns.load import export_campaign_file
    from campaigns.schema import CampaignHeader

    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        mem, name = await campaign_memory(memory, settings, campaign)
        info = await memory.campaigns(settings.guild_id).get(name)
        exported = await export_campaign_file(
            mem,
            CampaignHeader(name=info.name, description=info.description, system=info.system),
            on_skip=lambda message: click.echo(f"warning: {message}", err=True),
        )
    text = dump_campaign_file(exported)
    if output:
        # it holds the campaign's secrets: a new file is the DM's alone, as backups are (an existing one keeps its mode)
        with os.fdopen(os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8") as fh:
            fh.write(text)
        click.echo(f"wrote {len(exported.entities)} entities to {output}", err=True)
    else:
        click.echo(text, nl=False)
    if big := too_big_to_load(len(exported.entities), len(text.encode()), how="`lorekeeper campaign load`"):
        click.echo(f"warning: {big}", err=True)


@campaign.command("delete")
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
@async_command
async def delete(ctx: click.Context, name: str, yes: bool) -> None:
    """Delete a campaign and everything in it."""
    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        campaigns = memory.campaigns(settings.guild_id)
        target = await campaigns.get(name)
        counts = await campaigns.counts(target.id)
        if not yes:
            click.confirm(
                f"delete {quoted(target.name)} with {counted(counts['sessions'], 'session')}, "
                f"{counted(counts['entries'], 'log entry', 'log entries')} and "
                f"{counted(counts['entities'], 'entity', 'entities')}? This cannot be undone",
                abort=True,
                err=True,
            )
        active = await campaigns.delete(target.name)
    click.echo(f"deleted campaign {quoted(target.name)}")
    if target.active and active is not None:
        click.echo(f"active campaign: {active.name}")


@campaign.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--format",
    "format_",
    type=click.Choice(IMPORT_FORMATS),
    help="The tool the files come from (default: told from them).",
)
@click.option("--accept", is_flag=True, help="Accept the import at once (your own files), instead of for review.")
@campaign_option
@json_option
@click.pass_context
@async_command
async def import_(
    ctx: click.Context,
    files: tuple[Path, ...],
    format_: Format | None,
    accept: bool,
    campaign: str | None,
    as_json: bool,
) -> None:
    """Import a world from Foundry VTT (a world folder, its v11+ LevelDB data, .db files, document exports,
    packs/_source JSON; a folder reads the files in it), Roll20 (VTT Enhancement
    Suite characters, handouts, campaign exports), Kanka (API or export JSON) or CSV (name,type,aliases,description
    and more columns as attributes). It waits as one batch for review (`lorekeeper review list`), entities named like
    the campaign's updating them; nothing is written if a file is bad. See docs/guide/imports.md."""
    from campaigns import batches
    from campaigns.imports import MAX_IMPORT_BYTES, READABLE, ImportFileError, read_import, readable

    read: list[tuple[str, bytes]] = []
    paths = [  # a folder (a Foundry world, its data/, packs/_source/, a LevelDB folder) stands for the files under it
        found
        for path in files
        for found in (
            sorted(p for p in path.rglob("*") if p.is_file() and readable(p.name)) if path.is_dir() else [path]
        )
    ]
    if not paths:
        raise CliError(f"no {', '.join(READABLE)} files nor LevelDB folders in {', '.join(map(str, files))}")
    for path in paths:
        if path.stat().st_size > MAX_IMPORT_BYTES:
            raise CliError(
                f"{path}: {path.stat().st_size / 2**20:.1f} MB, more than the {MAX_IMPORT_BYTES // 2**20} MB an import "
                "reads: export fewer documents at a time"
            )
        read.append((str(path), path.read_bytes()))
    try:
        world = read_import(read, format_)
    except ImportFileError as exc:
        raise CliError(str(exc)) from None
    if not world.entities:
        raise CliError(
            f"nothing to import: {counted(len(world.skipped), 'record')} left out ({'; '.join(world.skipped[:3])})"
        )
    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        mem, name = await campaign_memory(memory, settings, campaign)
        try:
            label = f"{'importing' if accept else 'trying'} {counted(len(world.entities), 'entity', 'entities')}"
            with load_progress(label) as progress:
                async with mem.transaction() as tx:  # --accept: staged and accepted, or neither
                    batch = await batches.stage(tx, world, trial=not accept, progress=progress)
                    report = (await batches.accept(tx, batch.ref, progress=progress))[1] if accept else None
        except MemoryError_ as exc:
            named = str(exc).startswith(tuple(world.sources))  # the record's file and line said already
            raise CliError(f"{'' if named else ', '.join(world.sources) + ': '}{exc}; nothing was imported") from None
        if report is not None:
            batch = await batches.get(mem, batch.ref)
    if as_json:
        emit_json(
            {"campaign": name, "batch": batch.ref, "status": batch.status, "report": report and report.model_dump()}
        )
        return
    click.echo(batch.card())
    if report is not None:
        click.echo(f"accepted into {name}: {report.summary()}")
        if said := report.said():
            click.echo(said)
    else:
        click.echo(
            f"waiting for review: `lorekeeper review accept {batch.ref}` or `lorekeeper review reject {batch.ref}`"
        )
