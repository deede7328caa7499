"""The ``lorekeeper`` command line: one click group, one module per command family.

A command's module is imported when the command runs, not before: ``lorekeeper --help`` reads the summaries below
and imports none of them, and ``entity list`` never loads discord.py, Whisper or numpy.

Exit codes: 0 ok, 1 error, 2 usage.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import click

#: Each top-level command: the module that defines it and its one-line summary in `lorekeeper --help` (a test
#: checks this against the commands the modules register). Sections: the DM's everyday commands first.
COMMANDS: dict[str, tuple[str, str]] = {
    "campaign": ("campaign", "Campaigns: create, list, use, info, load, import, export, delete."),
    "entity": ("entity", "Entities: NPCs, places, items, factions, quests, events, concepts, players."),
    "ingest": ("ingest", "Import a transcript, or audio through speech-to-text."),
    "review": ("review", "The review queue: what the bot was unsure of, to accept or reject."),
    "recall": ("recall", "Ask the memory: what was said and known about a question."),
    "recap": ("recall", "The summary of a session, as /recap shows it."),
    "search": ("search", "Search what was said, word for word."),
    "session": ("session", "Sessions: what was recorded or imported."),
    "correct": ("correct", "Correct misheard entity names in lines from stdin."),
    "mcp": ("mcp_server", "Serve the campaign's memory to an MCP client (Claude Desktop, an IDE, an NPC voice agent)."),
    "run": ("run", "Start the Discord bot."),
    "demo": ("demo", "Try it: load an example campaign and session, and show what was remembered."),
    "db": ("db", "The database: migrations, status, re-embedding, upgrades."),
    "sync": ("run", "Register the slash commands with Discord."),
    "worker": ("worker", "Run background jobs (embedding, extraction, recaps)."),
    "jobs": ("jobs", "Background jobs that failed, and why."),
}
ADMIN = ("db", "sync", "worker", "jobs")


def first_sentence(text: str) -> str:
    """The first sentence of a command's help, whole: up to a full stop outside brackets that is not "e.g." or
    "i.e." (click's own summary stops at the first full stop, or mid-word at the terminal's width)."""
    paragraph = " ".join(text.split("\n\n", 1)[0].split())
    depth = 0
    for i, char in enumerate(paragraph):
        depth += (char in "([{") - (char in ")]}")
        ends = char == "." and depth <= 0 and (i + 1 == len(paragraph) or paragraph[i + 1] == " ")
        if ends and not paragraph[: i + 1].endswith(("e.g.", "i.e.", "etc.")):
            return paragraph[: i + 1]
    return paragraph


class WholeHelpGroup(click.Group):
    """A group whose command list shows each command's first sentence whole, wrapped (click cuts it at the
    terminal's width with "...", often mid-sentence)."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.short_help or first_sentence(command.help or "")))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class LazyGroup(WholeHelpGroup):
    """The top-level group: commands load from their module on first use; `--help` lists them from
    :data:`COMMANDS` in two sections."""

    group_class = WholeHelpGroup

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*COMMANDS, *sorted(set(self.commands) - set(COMMANDS))]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            importlib.import_module(f"bot.cli.{COMMANDS[cmd_name][0]}")
        return self.commands.get(cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] not in COMMANDS and args[0] not in self.commands:
            _register()  # an unknown name: load them all, for click's own "No such command" (or a new one)
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        everyday = [(n, s) for n, (_, s) in COMMANDS.items() if n not in ADMIN]
        admin = [(n, s) for n, (_, s) in COMMANDS.items() if n in ADMIN]
        with formatter.section("Commands"):
            formatter.write_dl(everyday)
        with formatter.section("Administration"):
            formatter.write_dl(admin)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    envvar="LOREKEEPER_CONFIG",
    help="YAML config file (env: LOREKEEPER_CONFIG).",
)
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
@click.pass_context
def cli(ctx: click.Context, config_file: str | None, verbose: int) -> None:
    """Lorekeeper: the campaign memory of a tabletop-RPG game master.

    `lorekeeper COMMAND --help` says more about each."""
    ctx.obj = {"config_file": config_file, "verbose": verbose}


def _register() -> None:
    """Import every module of this package, so every command is registered (a test or a docs generator that walks
    ``cli.commands`` wants them all; a command missing from :data:`COMMANDS` still runs, and a test says so)."""
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")


def main() -> None:
    try:
        cli.main(prog_name="lorekeeper", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(1)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:
        from bot.cli.common import explain  # the error types it knows need the memory package: only on this path

        explain(exc)
