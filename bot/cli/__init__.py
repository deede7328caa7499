"""The ``lorekeeper`` command line: one click group, one module per command family.

Exit codes: 0 ok, 1 error, 2 usage.
"""

from __future__ import annotations

import click

from bot.cli.common import run_cli


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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
    """Lorekeeper: the campaign memory of a tabletop-RPG game master."""
    ctx.obj = {"config_file": config_file, "verbose": verbose}


def _register() -> None:
    # Imported here so each family stays in its own module and `--help` lists them all.
    from bot.cli import (  # noqa: F401
        campaign,
        correct,
        db,
        demo,
        entity,
        ingest,
        jobs,
        mcp_server,
        recall,
        review,
        run,
        search,
        session,
        worker,
    )


def main() -> None:
    _register()
    run_cli(cli)
