"""`lorekeeper` imports only what a command uses: `--help` and `entity list` load no voice, Discord or vector code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("discord", "aiohttp", "faster_whisper", "ctranslate2", "av", "numpy", "onnxruntime", "wordfreq", "pgqueuer")


#: What the everyday read commands (`entity list`, `campaign list`, `search`) need none of: YAML and the campaign file
#: and import modules (only `campaign load`, `export`, `import`), and the write path's name matching.
FILES_AND_MATCHING = (
    "yaml",
    "campaigns.files",
    "campaigns.imports",
    "campaigns.load",
    "memory.gazetteer",
    "memory.correction",
)


def loaded_after(code: str, modules: tuple[str, ...] = HEAVY) -> set[str]:
    """Which of ``modules`` a fresh interpreter holds after running ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in {modules!r} if m in sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_the_command_line_and_its_help_import_nothing_heavy() -> None:
    assert loaded_after("import bot.cli") == set()
    help_run = "from bot.cli import main\ntry:\n    main()\nexcept SystemExit:\n    pass"
    assert loaded_after(f"import sys\nsys.argv = ['lorekeeper', '--help']\n{help_run}") == set()


def test_everyday_commands_do_not_load_voice_discord_or_vectors() -> None:
    for module in ("entity", "campaign", "review", "session", "search"):
        assert loaded_after(f"import bot.cli.{module}") == set(), module


def test_db_status_loads_no_worker() -> None:
    """`db status` prints four lines, but its module imported the job worker (pgqueuer, numpy, the extraction
    pipeline): 1.3 of its 1.8 s were imports. Only `db reembed` runs workers."""
    assert loaded_after("import bot.cli.db") == set()
    assert loaded_after("import bot.cli.db", ("memory.jobs.worker", "memory.extraction")) == set()


def test_reading_the_campaign_loads_no_file_formats_or_name_matching() -> None:
    for module in ("entity", "campaign", "search"):
        assert loaded_after(f"import bot.cli.{module}", FILES_AND_MATCHING) == set(), module


def test_campaign_import_offers_every_format_the_importers_read() -> None:
    from bot.cli.campaign import IMPORT_FORMATS
    from campaigns.imports import FORMATS

    assert IMPORT_FORMATS == FORMATS


def test_the_help_lists_every_command_with_a_whole_summary() -> None:
    from bot.cli import ADMIN, COMMANDS, _register, cli

    _register()
    assert set(cli.commands) == set(COMMANDS)  # a command missing from the table would be listed nowhere
    assert set(ADMIN) <= set(COMMANDS)
    assert all(summary.endswith(".") for _, summary in COMMANDS.values())
    shown = CliRunner().invoke(cli, ["--help"], terminal_width=80).output
    everyday, admin = shown.split("\nCommands:\n")[1].split("\nAdministration:\n")
    assert "  entity " in everyday and "  worker " not in everyday
    assert {line.split()[0] for line in admin.splitlines() if line.startswith("  ") and line[2] != " "} == set(ADMIN)
    assert "..." not in shown.split("Commands:")[1]


def test_a_summary_listing_a_groups_commands_lists_every_one() -> None:
    """`lorekeeper --help` said "Campaigns: create, list, use, info, load, export, delete.": no `import`."""
    from bot.cli import COMMANDS, _register, cli

    _register()
    for name, (_, summary) in COMMANDS.items():
        group = cli.commands[name]
        listed = set(summary.rstrip(".").partition(": ")[2].split(", "))
        # a list of words ("create, list, use"), not a sentence; entity's lists the kinds of entity
        if isinstance(group, click.Group) and name != "entity" and all(w.isalpha() for w in listed):
            assert listed == {n for n, c in group.commands.items() if not c.hidden}, name
            assert group.help == summary, name  # `lorekeeper campaign --help` says the same


def test_every_option_says_what_it_is_for() -> None:
    """`lorekeeper recall --help` showed `--mode [both|vector|fulltext]` and not a word of what the modes are."""
    from bot.cli import _register, cli

    def commands(group: click.Group, path: str) -> Iterator[tuple[str, click.Command]]:
        for name, command in group.commands.items():
            if isinstance(command, click.Group):
                yield from commands(command, f"{path} {name}")
            else:
                yield f"{path} {name}", command

    _register()
    unsaid = [
        f"{path} {param.opts[0]}"
        for path, command in commands(cli, "lorekeeper")
        for param in command.params
        if isinstance(param, click.Option) and not param.hidden and not param.help
    ]
    assert unsaid == []


def test_a_subcommand_summary_is_its_first_sentence_whole() -> None:
    from bot.cli import _register, cli, first_sentence

    assert first_sentence("Connect A to B (e.g. x. y) by R. More here.") == "Connect A to B (e.g. x. y) by R."
    assert first_sentence("No full stop\nat all\n\nSecond paragraph.") == "No full stop at all"
    _register()
    shown = CliRunner().invoke(cli, ["entity", "--help"], terminal_width=80).output
    assert "..." not in shown.split("Commands:")[1]
    assert "record a change in SOURCE's state (Eldrinax status --value dead)." in " ".join(shown.split())
