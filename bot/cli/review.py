"""`lorekeeper review …`: the facts and entities waiting for the DM."""

from __future__ import annotations

import click

from bot.cli import cli
from bot.cli.common import (
    async_command,
    campaign_memory,
    campaign_option,
    emit_json,
    json_option,
    open_memory,
    settings_from,
    table,
)
from memory.models import ReviewItem
from memory.review import describe_same_as


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
    if as_json:
        emit_json([{"ref": i.ref, **i.model_dump(mode="json")} for i in items])
        return
    if not items:
        click.echo(f"nothing to review in {name}")
        return
    rows = []
    for i in items:
        prov = i.entity.provenance if i.entity else i.fact.provenance  # type: ignore[union-attr]
        said = f"{i.said.where()}: {i.said.speaker}: “{i.said.text}”" if i.said else ""
        said = said if len(said) <= 80 else said[:79] + "…"  # one line a row: the whole line is in --json
        rows.append([i.ref, i.kind.value, i.describe()[:80], f"{prov.confidence:.2f}", said])
    table(rows, ["id", "kind", "item", "confidence", "said"])
    if total > len(items):
        click.echo(f"… and {total - len(items)} more")


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
            try:
                for ref in ids:
                    done.append(item := await getattr(mem.review, verb)(ref))
                    if not as_json:
                        click.echo(f"{verb}ed {item.ref}: {item.describe()}")
            finally:
                # Each id is decided on its own, as each /review button is: those before a bad id stay decided,
                # and the DM must see that before the error.
                if as_json:
                    emit_json([{"ref": i.ref, **i.model_dump(mode="json")} for i in done])

    decide.__doc__ = f"{verb.capitalize()} review items by id (e12, f34 …)."
    return review.command(verb)(decide)


_decide("accept")
_decide("reject")


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
