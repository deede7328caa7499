"""The command reference of the docs site, generated from the real commands.

`python -m bot.reference` writes docs/reference/cli.md (every `lorekeeper` command's --help, from the click group)
and docs/reference/slash.md (every slash command and option, from the cogs); `--check` says whether they are up to
date. tests/unit/test_docs_reference.py fails when either file differs from what the commands say, so a command or
option cannot go undocumented.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import click
from discord import app_commands

from bot.app import EXTENSIONS

ROOT = Path(__file__).resolve().parent.parent
CLI_PAGE = ROOT / "docs" / "reference" / "cli.md"
SLASH_PAGE = ROOT / "docs" / "reference" / "slash.md"
WIDTH = 100  # --help is wrapped at this width, whatever the terminal that regenerates the page

CLI_INTRO = """\
# Command line

Every `lorekeeper` command with its `--help`, generated from the commands themselves
(`python -m bot.reference` rewrites this page; a unit test fails when it is out of date).
The [guide](../guide/first-night.md) says when to use which.

Commands that work on one campaign take `-c NAME` / `--campaign NAME` (default: the active campaign). Those
that list or show data, and those that change something and say what they did, take `--json`.
Exit codes: 0 ok, 1 error (one line on stderr), 2 usage.

With docker-compose, run them in the `bot` container, e.g.
`docker compose exec -e LOREKEEPER_GUILD_ID=<server id> bot lorekeeper review list`
(see [Operations](../operations.md)).
"""

SLASH_INTRO = """\
# Slash commands

Every slash command and option, generated from the bot's cogs (`python -m bot.reference` rewrites this page; a unit
test fails when it is out of date). "DM only" commands are checked on the server: the DM is the role set with
`/lorekeeper setup`, or anyone with *Manage Server* until one is set. Entity names autocomplete.
"""


def cli_commands(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """Every command under ``group``, depth first in name order, as (path of names, command)."""
    ctx = click.Context(group, info_name=" ".join(("lorekeeper", *path)))
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from cli_commands(command, (*path, name))


def help_text(command: click.Command, path: tuple[str, ...]) -> str:
    """The command's --help as a terminal of WIDTH columns shows it."""
    ctx = click.Context(
        command,
        info_name=" ".join(("lorekeeper", *path)),
        max_content_width=WIDTH,
        help_option_names=["-h", "--help"],  # as the group's context_settings give every command
    )
    ctx.terminal_width = WIDTH
    return command.get_help(ctx).rstrip()


def cli_page() -> str:
    from bot.cli import _register, cli

    _register()
    parts = [CLI_INTRO, "## lorekeeper\n", "```text\n" + help_text(cli, ()) + "\n```\n"]
    for path, command in cli_commands(cli):
        parts.append(f"{'#' * min(len(path) + 1, 4)} lorekeeper {' '.join(path)}\n")
        parts.append("```text\n" + help_text(command, path) + "\n```\n")
    return "\n".join(parts)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def slash_page() -> str:
    groups: dict[str, list[app_commands.Command]] = {}
    titles: dict[str, str] = {}
    for extension in EXTENSIONS:
        module = importlib.import_module(extension)
        for value in vars(module).values():
            if not (isinstance(value, type) and value.__module__ == module.__name__):
                continue
            is_group = getattr(value, "__cog_is_app_commands_group__", False)  # a GroupCog: /campaign create …
            group = getattr(value, "__cog_group_name__", None) if is_group else None
            for command in getattr(value, "__cog_app_commands__", ()):
                if not isinstance(command, app_commands.Command):
                    continue
                key = group or command.name
                groups.setdefault(key, []).append(command)
                titles[key] = str(getattr(value, "__cog_group_description__", "") or "") if group else ""
    parts = [SLASH_INTRO]
    for key in sorted(groups):
        parts.append(f"## /{key}\n")
        if titles[key]:
            parts.append(titles[key] + "\n")
        for command in sorted(groups[key], key=lambda c: c.name):
            full = f"/{key} {command.name}" if command.name != key else f"/{key}"
            usage = " ".join([full, *(p.name if p.required else f"[{p.name}]" for p in command.parameters)])
            parts.append(f"### {full}\n")
            parts.append(f"`{usage}`: {command.description}\n")
            if command.parameters:
                rows = ["| option | required | what it is |", "|---|---|---|"]
                for p in command.parameters:
                    kind = p.type.name.replace("_", " ")
                    choices = f" (one of: {', '.join(c.name for c in p.choices)})" if p.choices else ""
                    req = "yes" if p.required else "no"
                    rows.append(f"| `{p.name}` ({kind}) | {req} | {_cell(p.description)}{_cell(choices)} |")
                parts.append("\n".join(rows) + "\n")
    return "\n".join(parts)


def main() -> None:
    """Write the pages; with ``--check``, write nothing and exit 1 naming each page that is out of date."""
    check = sys.argv[1:] == ["--check"]
    stale = []
    for page, text in ((CLI_PAGE, cli_page()), (SLASH_PAGE, slash_page())):
        if check:
            if not page.exists() or page.read_text(encoding="utf-8") != text:
                stale.append(str(page.relative_to(ROOT) if page.is_relative_to(ROOT) else page))
            continue
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(text, encoding="utf-8")
        print(f"wrote {page.relative_to(ROOT)}", file=sys.stderr)
    if stale:
        sys.exit(f"out of date: {', '.join(stale)}: run `python -m bot.reference`")


if __name__ == "__main__":
    main()
