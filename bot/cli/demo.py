"""`lorekeeper demo`: the whole pipeline, offline, on the example campaign and its sample session."""

from __future__ import annotations

import shlex
import sys
import tempfile
import textwrap
from importlib import resources
from pathlib import Path

import click

import memory.recall as recall_core
from bot.cli import cli
from bot.cli.common import async_command, open_memory, settings_from
from bot.cli.recall import print_hits
from campaigns.files import read_campaign_file
from campaigns.load import apply_campaign_file
from memory import jobs
from memory.errors import NotFoundError
from memory.ingest import ingest_file

QUESTIONS = ("Who is the blacksmith of Ironhold?", "How much money does Dunmore owe, and to whom?")


@cli.command()
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where the demo's database goes (default: a new folder in /tmp; never LOREKEEPER_DATA_DIR's).",
)
@click.pass_context
@async_command
async def demo(ctx: click.Context, data_dir: Path | None) -> None:
    """Load campaigns/examples/sunken_crown.yaml, ingest its sample session, and show what was remembered."""
    examples = Path(str(resources.files("campaigns") / "examples"))
    # A throw-away database unless asked for another: it must not touch real campaigns, even with the DM's own
    # LOREKEEPER_DATA_DIR exported in their shell.
    data_dir = data_dir or Path(tempfile.mkdtemp(prefix="lorekeeper-demo-", dir="/tmp"))
    settings = settings_from(ctx).model_copy(update={"data_dir": data_dir, "database_url": None})
    click.echo(f"data dir: {data_dir}")
    async with open_memory(settings) as memory:
        parsed = read_campaign_file(examples / "sunken_crown.yaml")
        assert parsed.campaign is not None and parsed.campaign.name
        campaigns = memory.campaigns(settings.guild_id)
        try:
            target = await campaigns.get(parsed.campaign.name)
        except NotFoundError:
            target = await campaigns.create(parsed.campaign.name, system=parsed.campaign.system)
        mem = memory.campaign(target.id)
        loaded = await apply_campaign_file(mem, parsed)
        click.echo(f"campaign {target.name!r}: {loaded.summary()}")

        report = await ingest_file(mem, examples / "sunken_crown_session1.jsonl", session_title="Session 1")
        click.echo(f"ingested {report.lines} utterances ({report.written} new) in {report.l1_seconds * 1000:.0f} ms")
        click.echo("running background jobs (chunk + embed, extract, summary) …")
        await jobs.run_workers(memory.pool, settings, drain=True)

        session = await mem.log.session_by_title("Session 1")
        assert session is not None
        click.secho("\n== Names corrected as they were heard", bold=True)
        for entry in await mem.log.session_entries(session.id):
            for c in entry.corrections:
                click.echo(f"  {entry.ref:>7}  {c.span!r} → {c.replacement}")

        counts = await campaigns.counts(target.id)
        click.secho("\n== Stored", bold=True)
        click.echo("  " + ", ".join(f"{v} {k}" for k, v in counts.items()))

        click.secho("\n== Waiting for the DM's review", bold=True)
        pending = await mem.review.pending(limit=8)
        for item in pending:
            click.echo(f"  {item.ref:>5}  {item.describe()[:100]}")
        more = await mem.review.count() - len(pending)
        if more > 0:
            click.echo(f"  … and {more} more (`lorekeeper review list`)")

        click.secho("\n== Recap of Session 1", bold=True)
        for line in (session.summary or "(no summary)").splitlines():
            click.echo(textwrap.fill(line, 118, initial_indent="  ", subsequent_indent="    "))

        embedder = jobs.make_job_context(memory, settings).embedder
        for question in QUESTIONS:
            click.secho(f"\n== recall: {question}", bold=True)
            print_hits(await recall_core.recall(mem, embedder, question, limit=2))
    # the command as it can be typed after scripts/demo: lorekeeper lives in the virtualenv, not on PATH
    command = shlex.quote(sys.argv[0]) if Path(sys.argv[0]).name == "lorekeeper" else "lorekeeper"
    click.echo(f"\nTry: LOREKEEPER_DATA_DIR={data_dir} {command} recall 'the dragon' -c {shlex.quote(target.name)}")
