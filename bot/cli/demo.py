"""`lorekeeper demo`: the whole pipeline, offline, on the example campaign and its sample session, each step said
in a DM's words. It works in a throw-away database that it deletes at the end, unless told to keep it."""

from __future__ import annotations

import shlex
import shutil
import sys
import tempfile
import textwrap
from importlib import resources
from pathlib import Path

import click

import memory.recall as recall_core
from bot.cli import cli
from bot.cli.common import Progress, async_command, open_memory, settings_from
from bot.cli.ingest import run_workers_showing
from campaigns.files import read_campaign_file
from campaigns.load import apply_campaign_file
from memory import jobs
from memory.errors import NotFoundError
from memory.ingest import ingest_file

QUESTIONS = ("Who is the blacksmith of Ironhold?", "How much money does Dunmore owe, and to whom?")


def _width() -> int:
    # the terminal's width, but no wider than reads well; 100 when not at a terminal (a pipe, a test)
    return max(60, min(shutil.get_terminal_size((100, 24)).columns, 110))


def say(text: str, indent: str = "", hang: str = "  ") -> None:
    """A paragraph wrapped at word boundaries (a line is never cut mid-word, a long word never broken); its
    continuation lines indented by ``hang`` more, so an item of a list reads as one."""
    click.echo(
        textwrap.fill(
            text,
            _width(),
            initial_indent=indent,
            subsequent_indent=indent + hang,
            break_long_words=False,
            break_on_hyphens=False,
        )
    )


def step(title: str, explanation: str) -> None:
    click.secho(f"\n== {title}", bold=True)
    say(explanation, hang="")
    click.echo()


def _size(path: Path) -> str:
    total = sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())
    return f"{total / 2**20:.0f} MB"


@cli.command()
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep the demo's database in DIR, to try other commands on it (default: a throw-away folder in /tmp, "
    "deleted at the end; never LOREKEEPER_DATA_DIR's).",
)
@click.pass_context
@async_command
async def demo(ctx: click.Context, data_dir: Path | None) -> None:
    """Show what Lorekeeper does, offline: load the example campaign, hear a sample session, then show the names
    corrected, what was remembered, the review queue, the recap, and two questions answered."""
    # A throw-away database unless asked for another: it must not touch real campaigns, even with the DM's own
    # LOREKEEPER_DATA_DIR exported in their shell. /tmp, not $TMPDIR: the database's socket path must stay short.
    keep = data_dir is not None
    data_dir = data_dir or Path(tempfile.mkdtemp(prefix="lorekeeper-demo-", dir="/tmp"))
    try:
        name = await _run(ctx, data_dir)
    finally:
        if not keep:
            shutil.rmtree(data_dir, ignore_errors=True)
    click.echo()
    if keep:
        # the command as it can be typed after scripts/demo: lorekeeper lives in the virtualenv, not on PATH
        command = shlex.quote(sys.argv[0]) if Path(sys.argv[0]).name == "lorekeeper" else "lorekeeper"
        say(f"The demo's database is kept in {data_dir} ({_size(data_dir)}). Try a command on it:", hang="")
        click.echo(f"  LOREKEEPER_DATA_DIR={data_dir} {command} recall 'the dragon' -c {shlex.quote(name)}")
        say(f"Delete it when you are done: rm -rf {data_dir}", hang="")
    else:
        say("The demo's throw-away database has been deleted. To keep one and try other commands on it:")
        click.echo("  lorekeeper demo --data-dir ~/lorekeeper-demo")
    say("Next: docs/guide/first-night.md goes from here to a recorded session on your own Discord server.", hang="")


async def _run(ctx: click.Context, data_dir: Path) -> str:
    """The demo itself, in ``data_dir``; returns the campaign's name."""
    examples = Path(str(resources.files("campaigns") / "examples"))
    settings = settings_from(ctx).model_copy(update={"data_dir": data_dir, "database_url": None})
    say(f"Working in a throw-away database in {data_dir}: your own campaigns are not touched.", hang="")
    async with open_memory(settings) as memory:
        step(
            "Step 1: load the campaign file",
            "A campaign file lists the world you prepared: people, places, items, factions and the facts that link "
            "them. Lorekeeper keeps them as the campaign's world (L3, the knowledge graph), and listens for their "
            "names when you play.",
        )
        parsed = read_campaign_file(examples / "sunken_crown.yaml")
        assert parsed.campaign is not None and parsed.campaign.name
        campaigns = memory.campaigns(settings.guild_id)
        try:
            target = await campaigns.get(parsed.campaign.name)
        except NotFoundError:
            target = await campaigns.create(parsed.campaign.name, system=parsed.campaign.system)
        mem = memory.campaign(target.id)
        loaded = await apply_campaign_file(mem, parsed)
        say(
            f"Loaded {target.name!r} from campaigns/examples/sunken_crown.yaml: {loaded.entities_created} entities "
            f"and {loaded.relationships_created} facts.",
            "  ",
        )

        step(
            "Step 2: hear a session",
            "Next, a short sample session, as speech-to-text would write it down from the voice channel. Every "
            "line goes into the session log (L1: what was said, word for word, by whom and when), after the names "
            "speech-to-text got wrong are corrected against the campaign's names:",
        )
        shown = Progress()  # a slow machine takes seconds over the name tables before the first line
        report = await ingest_file(
            mem,
            examples / "sunken_crown_session1.jsonl",
            session_title="Session 1",
            on_progress=lambda done, total: shown(lambda: f"  stored {done} of {total} lines"),
        )
        session = await mem.log.session_by_title("Session 1")
        assert session is not None
        for entry in await mem.log.session_entries(session.id):
            for c in entry.corrections:
                say(f"line {(entry.ref or '').rsplit(':L', 1)[-1]:>2}: heard {c.span!r}, written {c.replacement}", "  ")
        say(f"{report.lines} lines stored in {report.l1_seconds:.1f} s; what was heard is kept beside each.", "  ")

        step(
            "Step 3: the work after the session",
            "In the background (the bot does this while you play), the log is cut into passages indexed by meaning "
            "(L2), so a question finds what was said even in other words; new entities and facts are read from what "
            "was said; and a recap is written. This takes a few seconds …",
        )
        # how far each step is, as `ingest --wait` shows it: on a slow machine the model takes a while
        await run_workers_showing(mem, [session.id], jobs.run_workers(memory.pool, settings, drain=True))
        counts = await campaigns.counts(target.id)
        say(
            f"Remembered: {counts.get('entries', 0)} lines in the session log (L1), {counts.get('chunks', 0)} "
            f"passages (L2), {counts.get('entities', 0)} entities and {counts.get('facts', 0)} facts in the world "
            "(L3: those you loaded, the session itself and who took part in it), "
            f"{counts.get('pending', 0)} waiting for your review.",
            "  ",
        )

        step(
            "Step 4: the review queue",
            "What the bot read in play but is not sure of waits for the DM, and is not part of the world until "
            "accepted. Offline (no LLM configured) every entity and fact it reads in what was said waits here:",
        )
        pending = await mem.review.pending(limit=8)
        for item in pending:
            say(f"{item.ref}: {item.describe()}", "  ")
        more = await mem.review.count() - len(pending)
        if more > 0:
            say(f"… and {more} more.", "  ")
        if pending:
            refs = " ".join(item.ref for item in pending[:2])
            click.echo()
            say(
                "In Discord you accept them with /review and its Accept button (or Edit, Reject, Same as…). "
                f"On the command line: lorekeeper review accept {refs}",
                "  ",
            )

        step(
            "Step 5: the recap",
            "When a session ends its recap is written (with an LLM configured, in its own words; offline, a line "
            "quoted from each part of the story) and shown by /recap:",
        )
        session = await mem.log.session_by_title("Session 1")  # again: the recap was written since
        assert session is not None
        for line in (session.summary or "(no recap)").splitlines():
            say(line, "  ", hang="    ")

        step(
            "Step 6: ask the memory",
            "Anyone at the table can ask with /recall. The answer cites where each passage was said; the best one "
            "is shown here:",
        )
        embedder = jobs.make_job_context(memory, settings).embedder
        for question in QUESTIONS:
            click.secho(f"  Q: {question}", bold=True)
            hits = await recall_core.recall(mem, embedder, question, limit=1)
            for hit in hits:
                say(f"From {hit.where()}:", "  ")
                for line in hit.text.splitlines():
                    say(line, "    ")
            if not hits:
                say("nothing found", "  ")
        return target.name
