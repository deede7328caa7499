"""`lorekeeper review …`: the facts and entities waiting for the DM."""

from __future__ import annotations

import shlex
import sys

import click

from bot.cli import cli
from bot.cli.common import (
    CliError,
    async_command,
    campaign_memory,
    campaign_option,
    emit_json,
    error_said,
    json_option,
    load_progress,
    open_memory,
    settings_from,
    table,
    wrapped,
)
from campaigns import batches
from memory.errors import AlreadyDecidedError, InvalidInputError, MemoryError_, NotFoundError
from memory.jobs.queue import lines_not_extracted
from memory.models import ReviewItem, ReviewKind, ReviewStatus, where_said
from memory.replies import describe_same_as, kept_old_name
from memory.review import parse_ref, quoted_above, said_names
from memory.store import CampaignMemory
from memory.text import counted, excerpt


@cli.group()
def review() -> None:
    """The review queue: what the bot was unsure of, oldest first."""


@review.command("list")
@click.option("--limit", default=25, type=click.IntRange(min=1), show_default=True, help="Items to list.")
@campaign_option
@json_option
@click.pass_context
@async_command
async def list_(ctx: click.Context, limit: int, campaign: str | None, as_json: bool) -> None:
    """Pending entities and facts, oldest first."""
    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        mem, name = await campaign_memory(memory, settings, campaign)
        items = await mem.review.pending(limit=limit)
        total = await mem.review.count()
        waiting = await batches.pending(mem)
        unread = await lines_not_extracted(mem.db, mem.campaign_id) if not items else 0
    if as_json:
        emit_json(
            [{"ref": b.ref, "kind": "import", **b.model_dump(mode="json", exclude={"world"})} for b in waiting]
            + [{"ref": i.ref, **i.model_dump(mode="json")} for i in items]
        )
        return
    for b in waiting:  # an import is decided whole: one card each
        click.echo(b.card(sample=3))
        click.echo(f"  `lorekeeper review accept {b.ref}` or `lorekeeper review reject {b.ref}`\n")
    if not items:
        # imported without --wait and no bot running: the queue is empty only for now
        later = (
            f" yet: {counted(unread, 'line')} still to be read for entities and facts (the bot reads them if it is "
            "running, else `lorekeeper worker --drain`)"
            if unread
            else ""
        )
        click.echo(f"nothing {'else ' * bool(waiting)}to review in {name}{later}")
        return
    rows = []
    for i, above in zip(items, quoted_above(items), strict=True):
        # an item holds its entity or else its fact (ReviewItem names no type for either)
        prov = i.entity.provenance if i.entity else i.fact.provenance  # type: ignore[union-attr]
        quoted = f"“{excerpt(i.said.text, said_names(i), SAID_CHARS)}”" if i.said else ""
        if above is not None:  # the same paragraph twice, one row after another
            quoted = f"the line quoted for {above.ref}"
        said = f"{i.said.where()}: {i.said.speaker}: {quoted}" if i.said else ""
        said = f"({i.lines} lines) {said}" if i.lines > 1 else said
        rows.append([i.ref, i.kind.value, i.describe(), f"{prov.confidence:.2f}", said, prov.review_reason or ""])
    # why a sure fact waits (its lines do not say it), a column only when one does
    why = any(row[-1] for row in rows)
    headers = ["id", "kind", "item", "confidence", "said", *(["waits because"] if why else [])]
    # wrapped, not cut: the answer may end the line
    table([row if why else row[:-1] for row in rows], headers, wrap={2, 4, 5} if why else {2, 4})
    if total > len(items):
        click.echo(f"… and {total - len(items)} more")


#: Of the line an item was read from: a narrator's paragraph of 400 words, whole, filled a screen for one item.
SAID_CHARS = 300


def _decided(item: ReviewItem) -> str:
    """The item, what accepting it closed (or that it was history at once), and the items decided with it."""
    return "; ".join(filter(None, (item.describe(), item.settled(), item.with_it())))


def _decide(verb: str) -> click.Command:
    @click.argument("ids", nargs=-1, required=True)
    @campaign_option
    @json_option
    @click.pass_context
    @async_command
    async def decide(ctx: click.Context, ids: tuple[str, ...], campaign: str | None, as_json: bool) -> None:
        settings = settings_from(ctx)
        async with open_memory(settings) as memory:
            mem, _ = await campaign_memory(memory, settings, campaign)
            done: list[ReviewItem] = []
            # Each id is decided on its own, as each /review button is: one that cannot be (decided already by an
            # earlier command, or not there) is said and skipped, and the ids after it are still decided.
            skipped: list[str] = []
            try:
                for ref in ids:
                    try:
                        if ref.strip().casefold().startswith("b"):  # an import batch, whole
                            await _decide_batch(mem, verb, ref, as_json)
                            continue
                        # the DM names an entity and its facts as the list shows them: one decided with an item
                        # before it in this command is no error
                        if by := _decided_with(done, ref):
                            if not as_json:
                                kind, number = parse_ref(ref)
                                click.echo(f"{verb}ed {kind.value[0]}{number}: with {by.ref} above")
                            continue
                        done.append(item := await getattr(mem.review, verb)(ref))
                    except MemoryError_ as exc:
                        skipped.append(ref.strip())
                        click.echo(f"error: {await error_said(memory, exc)}", err=True)
                        continue
                    if not as_json:
                        click.echo(f"{verb}ed {item.ref}: {_decided(item)}")
            finally:
                if as_json:
                    emit_json([{"ref": i.ref, **i.model_dump(mode="json")} for i in done])
        if len(ids) > 1 and skipped:  # among many lines, which ids to look at again
            others = "; the others were" if len(skipped) < len(ids) else ""
            raise CliError(f"{', '.join(skipped)} not {verb}ed (said above){others}")
        if skipped:
            sys.exit(1)  # said above

    decide.__doc__ = f"{verb.capitalize()} review items by id (e12, f34 …), or a whole import batch (b3)."
    return review.command(verb)(decide)


def _decided_with(done: list[ReviewItem], ref: str) -> ReviewItem | None:
    """The item of ``done`` that ``ref`` was decided with, if any."""
    try:
        key = parse_ref(ref)
    except (InvalidInputError, NotFoundError):
        return None  # the queue says what is wrong with it
    for item in done:
        if any(parse_ref(w.split(":", 1)[0]) == key for w in item.decided_with):
            return item
    return None


async def _decide_batch(mem: CampaignMemory, verb: str, ref: str, as_json: bool) -> None:
    if verb == "accept":
        try:
            with load_progress(f"accepting {ref.strip()}") as progress:
                batch, report = await batches.accept(mem, ref, progress=progress)
        except (AlreadyDecidedError, NotFoundError):  # said in words of the batch already
            raise
        except MemoryError_ as exc:  # the campaign changed since it was staged: said of it, as /review's button does
            said = f"nothing of {ref.strip()} was imported: {exc}"
            raise type(exc)(said, subject=exc.subject, name=exc.name) from None
        said = f"accepted {batch.ref}: {report.summary()}"
        if extra := report.said():
            said += "\n" + extra
    else:
        batch = await batches.reject(mem, ref)
        said = f"rejected {batch.ref}: nothing of it was written"
    if as_json:
        emit_json({"ref": batch.ref, "status": batch.status})
    else:
        click.echo(said)


@review.command("show")
@click.argument("ref")
@campaign_option
@click.pass_context
@async_command
async def show(ctx: click.Context, ref: str, campaign: str | None) -> None:
    """Show a review item (e12, f34) or an import batch (b3): an item with what it proposes, its status and the
    lines it was read from, whole; a batch as one card: where it came from, its counts and a sample."""
    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        mem, _ = await campaign_memory(memory, settings, campaign)
        if ref.strip().casefold().startswith("b"):
            batch = await batches.get(mem, ref)
            click.echo(batch.card(sample=10))
            return
        item = await mem.review.get(ref)
        prov = item.entity.provenance if item.entity else item.fact.provenance  # type: ignore[union-attr]
        lines = await mem.log.entries(prov.entry_ids)
        played = {s.id: s for s in await mem.log.sessions()}
    status = item.entity.status if item.entity else item.fact.status  # type: ignore[union-attr]
    click.echo(f"{item.ref} ({item.kind.value}, {status.value}): {item.describe()}")
    click.echo(
        f"  confidence {prov.confidence:.2f}" + (f"; waits because {prov.review_reason}" if prov.review_reason else "")
    )
    if lines:
        click.echo(f"  said in {counted(len(lines), 'line')}:" if len(lines) > 1 else "  said in:")
    # each whole (review list shows the part naming the item): the DM decides on what was said
    for line in lines[:SHOWN_LINES]:
        s = played[line.session_id]
        said = f"{where_said(s.title, line.start_s, line.ref, s.started_at)}: {line.speaker}: “{line.text}”"
        click.echo("\n".join("    " + row for row in wrapped(said, indent=4)))
    if len(lines) > SHOWN_LINES:
        click.echo(f"    … and {counted(len(lines) - SHOWN_LINES, 'more line')}")
    if status != ReviewStatus.pending:
        return
    edit = "--name, --type, --description, --alias" if item.entity else "--type, --target, --value"
    click.echo(f"  `lorekeeper review accept {item.ref}`, `lorekeeper review reject {item.ref}`")
    click.echo(f"  `lorekeeper review edit {item.ref}` with {edit} corrects and accepts it")
    if item.entity:
        click.echo(f"  `lorekeeper review same {item.ref} ENTITY` if it is one already known under another name")


#: The lines of an item ``review show`` prints whole: an NPC named all evening was read from a hundred.
SHOWN_LINES = 5


_decide("accept")
_decide("reject")


@review.command("edit")
@click.argument("ref")
@click.option("--name", help="An entity's right name (the name heard stays an alias unless --alias is given).")
@click.option("--type", "type_", help="An entity's type (npc, location …), or a fact's relation.")
@click.option("--description", "-d", help="An entity's description (replaces the old one).")
@click.option("--alias", "aliases", multiple=True, help="An entity's aliases: replaces them all ('--alias -' clears).")
@click.option("--target", help="A fact's target: another entity (its name or an alias).")
@click.option("--value", help="A fact's value, instead of a target.")
@campaign_option
@json_option
@click.pass_context
@async_command
async def edit(
    ctx: click.Context,
    ref: str,
    name: str | None,
    type_: str | None,
    description: str | None,
    aliases: tuple[str, ...],
    target: str | None,
    value: str | None,
    campaign: str | None,
    as_json: bool,
) -> None:
    """Correct the review item REF (e12, f34 …) and accept it, as Edit in /review does: an entity's name, type,
    description and aliases, a fact's relation (--type) and its target or value."""
    kind, _ = parse_ref(ref)
    if kind == ReviewKind.entity:
        wrong = [o for o, v in (("--target", target), ("--value", value)) if v is not None]
        takes = "--name, --type, --description or --alias"
        if "-" in aliases and len(aliases) > 1:
            raise CliError("--alias - clears the aliases: give it alone, or give only the aliases to keep")
        kept = None if not aliases else [] if aliases == ("-",) else list(aliases)
        changes: dict[str, object] = {"name": name, "type": type_, "description": description, "aliases": kept}
    else:
        wrong = [o for o, v in (("--name", name), ("--description", description), ("--alias", aliases)) if v]
        takes = "--type (its relation), --target or --value"
        if target is not None and value is not None:
            raise CliError("give --target (another entity) or --value (a state, e.g. dead), not both")
        changes = {"type": type_, "target": target, "value": value}
    if wrong:
        what = "an entity" if kind == ReviewKind.entity else "a fact"
        raise CliError(f"{ref.strip()} is {what}: it takes {takes}, not {', '.join(wrong)}")
    changes = {k: v for k, v in changes.items() if v is not None}
    if not changes:
        raise CliError(f"nothing to change: give {takes}; `lorekeeper review accept {ref.strip()}` accepts it as it is")
    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        mem, _ = await campaign_memory(memory, settings, campaign)
        try:
            before = (await mem.review.get(ref)).entity
        except NotFoundError:
            before = None  # the edit says so
        item = await mem.review.edit(ref, **changes)
    if as_json:
        emit_json({"ref": item.ref, **item.model_dump(mode="json")})
        return
    click.echo(f"edited and accepted {item.ref}: {_decided(item)}")
    if before is not None and item.entity is not None and kept_old_name(before, item.entity):
        clear = f"lorekeeper entity edit {shlex.quote(item.entity.name)} --alias -"
        click.echo(f"its old name {before.name!r} stays as an alias (`{clear}` clears it)")


@review.command("same")
@click.argument("ref")
@click.argument("entity")
@campaign_option
@json_option
@click.pass_context
@async_command
async def same(ctx: click.Context, ref: str, entity: str, campaign: str | None, as_json: bool) -> None:
    """Say a proposed entity (REF, e.g. e12) is ENTITY, known under another name: it is merged into ENTITY, its
    name kept as an alias and its facts moved (those pending stay in review)."""
    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        mem, _ = await campaign_memory(memory, settings, campaign)
        result = await mem.review.same_as(ref, entity)
    if as_json:
        emit_json({"ref": f"e{result.merged.id}", **result.model_dump(mode="json")})
    else:
        click.echo(describe_same_as(result))
