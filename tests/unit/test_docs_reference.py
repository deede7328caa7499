"""The command reference of the docs site is what the commands say: a command or option added, renamed or
documented otherwise fails here until `python -m bot.reference` has rewritten docs/reference/."""

from __future__ import annotations

import re

import click

from bot import reference


def test_cli_reference_is_up_to_date() -> None:
    assert reference.CLI_PAGE.read_text(encoding="utf-8") == reference.cli_page(), (
        "docs/reference/cli.md is out of date: run `python -m bot.reference`"
    )


def test_slash_reference_is_up_to_date() -> None:
    assert reference.SLASH_PAGE.read_text(encoding="utf-8") == reference.slash_page(), (
        "docs/reference/slash.md is out of date: run `python -m bot.reference`"
    )


def test_every_cli_command_and_option_has_a_heading_and_its_help() -> None:
    from bot.cli import _register, cli

    _register()
    page = reference.cli_page()
    paths = [path for path, _ in reference.cli_commands(cli)]
    assert ("campaign", "load") in paths and ("ingest",) in paths and ("db", "migrate") in paths
    for path, command in reference.cli_commands(cli):
        heading = f"lorekeeper {' '.join(path)}"
        block = re.search(rf"^#+ {re.escape(heading)}\n\n```text\n(.*?)\n```$", page, re.M | re.S)
        assert block and block[1].startswith(f"Usage: {heading} "), f"{heading}: no heading or usage"
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                assert param.opts[-1] in block[1], f"{heading}: {param.opts} undocumented"


def test_every_slash_command_and_option_is_listed() -> None:
    page = reference.slash_page()
    for heading in ("/campaign load", "/entity link", "/session start", "/review", "/recall", "/lorekeeper setup"):
        assert re.search(rf"^### {re.escape(heading)}$", page, re.M), heading
    assert "| `file` (attachment) | yes |" in page  # an option's row: name, kind, required


def test_every_setting_is_in_the_configuration_page() -> None:
    from bot.settings import Settings

    page = (reference.ROOT / "docs" / "guide" / "configuration.md").read_text(encoding="utf-8")
    for name, field in Settings.model_fields.items():
        aliases = getattr(field.validation_alias, "choices", None) or [f"LOREKEEPER_{name.upper()}"]
        assert f"`{aliases[0]}`" in page, f"setting {name} ({aliases[0]}) is not in docs/guide/configuration.md"
