"""`lorekeeper entity …`: the campaign's world, one entity at a time."""

from __future__ import annotations

import click

from bot.cli import cli
from bot.cli.common import (
    CliError,
    async_command,
    campaign_memory,
    campaign_option,
    emit_json,
    json_option,
    open_memory,
    player_option,
    player_text_only,
    queued_said,
    settings_from,
    table,
)
from memory.errors import InvalidInputError
from memory.jobs.queue import pending_jobs
from memory.models import (
    FACTS_SHOWN,
    EntityIn,
    EntityType,
    Provenance,
    ReviewStatus,
    Source,
    Visibility,
    newest_facts,
    suggest_entity_type,
    who_took_part_line,
)
from memory.text import (
    attribute_text,
    check_attributes,
    counted,
    excerpt,
    heard_as_phrases,
    not_heard_as_phrases,
    typed_attribute,
)


class _EntityTypeParam(click.Choice):
    """The entity types, ``place`` too (read as ``location``, as older versions called it), with a did-you-mean."""

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> object:
        try:
            return EntityType(str(value)).value
        except ValueError:
            hint = f"; did you mean {meant!r}?" if (meant := suggest_entity_type(str(value))) else ""
            self.fail(f"{value!r} is not one of {', '.join(self.choices)}{hint}", param, ctx)


TYPE_CHOICE = _EntityTypeParam([t.value for t in EntityType], case_sensitive=False)


def parse_attributes(pairs: tuple[str, ...]) -> dict[str, object]:
    """`k=v` pairs, each value by :func:`typed_attribute` (as on /entity)."""
    attributes: dict[str, object] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--attr")
        attributes[key.strip()] = typed_attribute(value)
    try:
        return check_attributes(attributes)
    except InvalidInputError as exc:
        raise click.BadParameter(str(exc), param_hint="--attr") from None


@cli.group()
def entity() -> None:
    """Entities: NPCs, places, items, factions, quests, events, concepts, players."""


@entity.command("add")
@click.argument("name")
@click.argument("type", type=TYPE_CHOICE, metavar="TYPE")  # the usage line would wrap the choices mid-word
@click.option("--description", "-d", default="", help="A line or two about it.")
@click.option("--alias", "aliases", multiple=True, help="Another name (repeatable).")
@click.option("--attr", "attrs", multiple=True, metavar="KEY=VALUE", help="An attribute (repeatable).")
@click.option(
    "--heard-as",
    "heard_as",
    multiple=True,
    metavar="PHRASE",
    help="What speech-to-text writes for its name ('from skin', repeatable), as entity edit --heard-as.",
)
@click.option(
    "--not-heard-as",
    "not_heard_as",
    multiple=True,
    metavar="PHRASE",
    help="What speech-to-text writes that is never its name ('manta ray', repeatable), as entity edit does.",
)
@click.option("--secret", is_flag=True, help="DM-only: never shown to players.")
@campaign_option
@json_option
@click.pass_context
@async_command
async def add(
    ctx: click.Context,
    name: str,
    type: str,
    description: str,
    aliases: tuple[str, ...],
    attrs: tuple[str, ...],
    heard_as: tuple[str, ...],
    not_heard_as: tuple[str, ...],
    secret: bool,
    campaign: str | None,
    as_json: bool,
) -> None:
    """Add an entity NAME of TYPE: npc, location (or place), item, faction, quest, event, concept or player. A
    phrase given with --heard-as becomes the name wherever it is said, in the lines already stored too (a
    background job); one given with --not-heard-as never does."""
    from memory.replies import (  # the replies of the writes: `list` needs none
        described_said,
        heard_as_said,
        masked_said,
        newly_hidden,
        not_heard_as_said,
        spelled_like_said,
        unhidden_said,
    )

    settings = settings_from(ctx)
    phrases = heard_as_phrases(list(heard_as))  # refused as entity edit refuses it, not as a field of EntityIn
    never = not_heard_as_phrases(list(not_heard_as))
    entity_in = EntityIn(
        name=name,
        type=EntityType(type.lower()),
        description=description,
        aliases=list(aliases),
        heard_as=phrases,
        not_heard_as=never,
        attributes=parse_attributes(attrs),
        visibility=Visibility.secret if secret else Visibility.public,
        provenance=Provenance(source=Source.dm, dm_confirmed=True),
    )
    async with open_memory(settings) as memory:
        mem, _ = await campaign_memory(memory, settings, campaign)
        lines = await mem.log.count_heard(phrases) if phrases else None  # before a job corrects them
        created = await mem.add_entity(entity_in)
        unhidden = await mem.graph.unhidden_secrets(created)
        alike = [] if unhidden else await mem.graph.spelled_like(created)  # that warning says they are alike
        masked = await mem.graph.everyday_masked(newly_hidden(None, created))
        described = await mem.graph.secrets_described((None, created))
        pending = await pending_jobs(memory.pool, mem.campaign_id) if lines else 0
    if as_json:
        emit_json(created)
        return
    click.echo(f"added {created.type.value} {created.name!r} (id {created.id})")
    if said := heard_as_said(None, created, lines):
        click.echo(said)
    if said := not_heard_as_said(None, created, None):
        click.echo(said)
    if pending:  # "corrected again in the background": by a worker, which the command line is not
        click.echo(queued_said(pending))
    for said in masked_said(masked):
        click.echo(said)
    for said in [*unhidden_said(unhidden), *spelled_like_said(alike), *described_said(described)]:
        click.echo(f"warning: {said}", err=True)


#: Entities `entity list` shows unless told: a two-year campaign's 1,600 filled 3,000 lines.
LIST_LIMIT = 50


@entity.command("list")
@click.option("--type", "type_", type=TYPE_CHOICE, help="Only this type.")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    help=f"Entities to list, by name  [default: {LIST_LIMIT}; with --json, all].",
)
@click.option("--all", "all_", is_flag=True, help="List them all.")
@campaign_option
@json_option
@click.pass_context
@async_command
async def list_(
    ctx: click.Context, type_: str | None, limit: int | None, all_: bool, campaign: str | None, as_json: bool
) -> None:
    """List the accepted entities, by name."""
    if all_ and limit is not None:
        raise click.UsageError("--limit or --all, not both")
    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        mem, name = await campaign_memory(memory, settings, campaign)
        listed = await mem.graph.list_entities(EntityType(type_.lower()) if type_ else None)
    # a script reading --json wants them whole unless it says how many
    shown = None if all_ or (as_json and limit is None) else limit or LIST_LIMIT
    entities = listed[:shown]
    if as_json:
        emit_json(entities)
    elif not entities:
        click.echo(f"no entities in {name} yet")
    else:
        table(
            [
                [
                    e.name,
                    e.type.value,
                    ", ".join(e.aliases),
                    "yes" if e.visibility == "secret" else "",
                    excerpt(" ".join(e.description.split()), [], 60),  # one row, cut between words
                ]
                for e in entities
            ],
            ["name", "type", "aliases", "secret", "description"],
            wrap={0, 2, 4},  # a long name or alias list fits the width as search's lines do, never cut
        )
        if len(listed) > len(entities):
            hint = "--limit N or --all shows them" + ("" if type_ else ", --type one kind")
            click.echo(f"… and {len(listed) - len(entities):,} more of {len(listed):,} ({hint})")


@entity.command("show")
@click.argument("name")
@click.option("--history", is_flag=True, help="Also the facts that no longer hold, newest first.")
@click.option(
    "--limit",
    "-n",
    default=FACTS_SHOWN,
    show_default=True,
    type=click.IntRange(min=1),
    help="Current facts to list (the newest), and as many past ones with --history.",
)
@click.option("--all", "all_", is_flag=True, help="List every fact, however many.")
@player_option
@campaign_option
@json_option
@click.pass_context
@async_command
async def show(
    ctx: click.Context,
    name: str,
    history: bool,
    limit: int,
    all_: bool,
    as_player: bool,
    campaign: str | None,
    as_json: bool,
) -> None:
    """An entity with its attributes, relationships and where it was last mentioned. A busy character's facts: the
    newest up to --limit, then how many more."""
    from memory.context import reader_mask, visible_identity

    player_text_only(as_player, as_json)
    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        mem, _ = await campaign_memory(memory, settings, campaign, as_player=as_player)
        dm = not as_player  # a player finds no secret entity, reads no secret fact, and secret names masked
        mask = await reader_mask(mem, dm)
        snap, last = await visible_identity(mem, name, dm=dm, mask=mask)
        past = await mem.graph.history(snap.entity.id, include_secret=dm) if history else []
        # asked for history, the current facts say where they were heard too
        sources = {p.id: f" ({p.since()})" for p in await mem.graph.heard_where(snap.relationships)} if history else {}
    if as_json:
        shown = {**snap.model_dump(mode="json"), "last_mention": last.model_dump(mode="json") if last else None}
        emit_json(shown | ({"history": [p.model_dump(mode="json") for p in past]} if history else {}))
        return
    e = snap.entity
    marks = [e.type.value] + ["secret"] * (e.visibility == "secret") + ["waiting for review"] * (e.status == "pending")
    click.echo(f"{mask(e.name)} ({', '.join(marks)})")
    if e.aliases:
        click.echo(f"  aliases: {', '.join(e.aliases)}")
    if dm and e.heard_as:  # what the recogniser heard may hold a guess at a secret name: the DM's alone
        click.echo(f"  heard as: {', '.join(e.heard_as)}")
    if dm and e.not_heard_as:
        click.echo(f"  never heard as: {', '.join(e.not_heard_as)}")
    if e.description:  # a recap's several lines too, each under the name
        click.echo("\n".join(f"  {line}" for line in mask(e.description).splitlines()))
    for key, value in snap.attributes().items():  # one named like a current fact gives way to it
        click.echo(f"  {key}: {mask(attribute_text(value))}")
    others, sessions = snap.facts_and_sessions(clip=mask)  # as on /entity show
    others, took_part = snap.who_took_part(others)
    room = None if all_ else limit  # a character of a two-year campaign holds thousands of facts
    newest, more = newest_facts(others, room)
    kept = {r.id for r in newest}
    for r in others:  # the newest, in the card's order
        if r.id in kept:
            secret = " (secret)" * snap.hidden_from_players(r)
            click.echo(f"  - {mask(r.in_words())}{secret}{mask(sources.get(r.id, ''))}")
    if more:
        click.echo(f"  … and {counted(more, 'more fact')}: --all, or --limit")
    if took_part:
        names = [(r.source_name or "") + " (secret)" * snap.hidden_from_players(r) for r in took_part]
        click.echo(f"  - {mask(who_took_part_line(names))}")
    if sessions:
        click.echo(f"  {sessions}")
    if history:
        click.echo("  history, newest first:" if past else "  history: no fact about it has changed yet")
        for p in past[:room]:  # the last to end first
            click.echo(f"  - {mask(p.describe_past(' (secret)'))}")
        if ended := len(past) - len(past[:room]):
            click.echo(f"  … and {counted(ended, 'more past fact')}: --all, or --limit")
    if last:
        said = excerpt(mask(last.text), [e.name, *e.aliases], 100)  # masked before cut, as on the card
        click.echo(f"  last mentioned in {mask(last.where())} by {mask(last.speaker)}: {said}")


@entity.command("mentions")
@click.argument("name")
@click.option("--limit", "-n", default=20, show_default=True, type=click.IntRange(1, 500), help="Lines to show.")
@campaign_option
@json_option
@click.pass_context
@async_command
async def mentions_(ctx: click.Context, name: str, limit: int, campaign: str | None, as_json: bool) -> None:
    """Where an entity was said: the lines naming it (name, alias or heard-as; an event, the lines it was told
    in), newest first."""
    from memory.mentions import mentions

    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        mem, _ = await campaign_memory(memory, settings, campaign)
        found = await mem.graph.get_entity(name)
        said = await mentions(mem.db, mem.campaign_id, found.id, limit=limit)
        # a proposed event is told, not named, and `entity show` names the line it was drawn from: say it here too
        drawn = None
        if not said.total and found.status == ReviewStatus.pending and found.provenance.entry_ids:
            drawn = await mem.review.said(found.provenance.entry_ids)
    if as_json:
        emit_json({"entity": found.name, **said.model_dump(mode="json")})
        return
    if not said.total:
        waits = f"; it waits for review, drawn from {drawn.where()} by {drawn.speaker}" if drawn else ""
        click.echo(f"{found.name}: no line names it yet{waits}")
        return
    click.echo(f"{found.name}: named in {counted(said.total, 'line')} of {counted(len(said.sessions), 'session')}")
    for line in said.lines:
        click.echo(f"  {line.where()}, {line.speaker}: {excerpt(line.text, [found.name, *found.aliases], 160)}")
    if said.total > len(said.lines):
        click.echo(f"  … and {said.total - len(said.lines)} more (--limit)")


@entity.command("edit")
@click.argument("name")
@click.option("--new-name", help="Its new name (a public entity keeps the old one as an alias).")
@click.option("--type", "type_", type=TYPE_CHOICE, help="Its new type.")
@click.option("--description", "-d", help="A new description (replaces the old one).")
@click.option("--alias", "aliases", multiple=True, help="Replaces all aliases (repeatable; '--alias -' clears them).")
@click.option("--add-alias", "add_aliases", multiple=True, metavar="ALIAS", help="Adds an alias (repeatable).")
@click.option("--drop-alias", "drop_aliases", multiple=True, metavar="ALIAS", help="Takes an alias away (repeatable).")
@click.option("--attr", "attrs", multiple=True, metavar="KEY=VALUE", help="Merged into its attributes (repeatable).")
@click.option(
    "--heard-as",
    "heard_as",
    multiple=True,
    metavar="PHRASE",
    help="What speech-to-text writes for its name ('from skin'): replaces all (repeatable; '--heard-as -' clears; "
    "'+from skin' adds it, '-from skin' takes it away, keeping the others).",
)
@click.option(
    "--not-heard-as",
    "not_heard_as",
    multiple=True,
    metavar="PHRASE",
    help="What speech-to-text writes that is never its name ('manta ray'): replaces all (repeatable; '-' clears; "
    "'+manta ray' adds it, '-manta ray' takes it away, keeping the others).",
)
@click.option("--secret/--public", default=None, help="DM-only, or shown to players.")
@campaign_option
@json_option
@click.pass_context
@async_command
async def edit(
    ctx: click.Context,
    name: str,
    new_name: str | None,
    type_: str | None,
    description: str | None,
    aliases: tuple[str, ...],
    add_aliases: tuple[str, ...],
    drop_aliases: tuple[str, ...],
    attrs: tuple[str, ...],
    heard_as: tuple[str, ...],
    not_heard_as: tuple[str, ...],
    secret: bool | None,
    campaign: str | None,
    as_json: bool,
) -> None:
    """Change the entity NAME (its name or an alias), as /entity edit does. A phrase given with --heard-as becomes
    the name wherever it is said from now on, and in the lines already stored (a background job); one given with
    --not-heard-as never does, there too."""
    from memory.replies import (
        aliases_dropped,
        count_phrase_lines,
        described_said,
        edited_aliases,
        edited_phrases,
        kept_old_name,
        masked_said,
        newly_hidden,
        phrases_said,
        spelled_like_said,
        unhidden_said,
    )

    changed = new_name or type_ or description is not None or aliases or add_aliases or drop_aliases
    if not (changed or attrs or heard_as or not_heard_as) and secret is None:
        raise CliError(
            "nothing to change: give at least one of --new-name, --type, --description, --alias, --add-alias, "
            "--drop-alias, --attr, --heard-as, --not-heard-as, --secret/--public"
        )
    if aliases and (add_aliases or drop_aliases):
        raise CliError("--alias replaces all aliases: give it, or --add-alias/--drop-alias, not both")
    if "-" in aliases and len(aliases) > 1:
        raise CliError("--alias - clears the aliases: give it alone, or give only the aliases to keep")
    if "-" in heard_as and len(heard_as) > 1:
        raise CliError("--heard-as - clears the phrases: give it alone, or give only the phrases to keep")
    if "-" in not_heard_as and len(not_heard_as) > 1:
        raise CliError("--not-heard-as - clears the phrases: give it alone, or give only the phrases to keep")
    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        mem, _ = await campaign_memory(memory, settings, campaign)
        before = await mem.graph.get_entity(name)
        if add_aliases or drop_aliases:
            aliases = tuple(edited_aliases(before, add_aliases, drop_aliases)) or ("-",)
        phrases = edited_phrases(before.heard_as, heard_as)
        never = edited_phrases(before.not_heard_as, not_heard_as)
        lines = await count_phrase_lines(  # before the edit's jobs change them
            mem.log, before, phrases if heard_as else None, never if not_heard_as else None
        )
        updated = await mem.graph.update_entity(
            name,
            new_name=new_name,
            type=EntityType(type_.lower()) if type_ else None,
            description=description,
            aliases=None if not aliases else [] if aliases == ("-",) else list(aliases),
            attributes=parse_attributes(attrs) if attrs else None,
            visibility=None if secret is None else Visibility.secret if secret else Visibility.public,
            heard_as=phrases if heard_as else None,
            not_heard_as=never if not_heard_as else None,
        )
        unhidden = await mem.graph.unhidden_secrets(updated)
        alike = [] if unhidden else await mem.graph.spelled_like(updated, before)  # that warning says they are alike
        masked = await mem.graph.everyday_masked(newly_hidden(before, updated))
        described = await mem.graph.secrets_described((before, updated))
        pending = await pending_jobs(memory.pool, mem.campaign_id) if any(lines) else 0
    if as_json:
        emit_json(updated)
        return
    click.echo(f"updated {updated.type.value} {updated.name!r}")
    if kept_old_name(before, updated):
        click.echo(f"its old name {before.name!r} stays as an alias (`--alias -` clears it)")
    if dropped := aliases_dropped(before, updated):
        said = ", ".join(map(repr, dropped))
        click.echo(f"no longer its alias{'es' * (len(dropped) > 1)}: {said} (`--add-alias` gives one back)")
    for said in phrases_said(before, updated, lines):
        click.echo(said)
    if pending:  # "corrected again in the background": by a worker, which the command line is not
        click.echo(queued_said(pending))
    for said in masked_said(masked):
        click.echo(said)
    for said in [*unhidden_said(unhidden), *spelled_like_said(alike), *described_said(described)]:
        click.echo(f"warning: {said}", err=True)


@entity.command("remove")
@click.argument("name")
@campaign_option
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
@async_command
async def remove(ctx: click.Context, name: str, campaign: str | None, yes: bool) -> None:
    """Remove an entity and its relationships."""
    from memory.replies import removed_facts_said

    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        mem, _ = await campaign_memory(memory, settings, campaign)
        target = await mem.graph.get_entity(name)
        facts = removed_facts_said(*await mem.graph.facts_touching(target.id))  # as /entity remove says them
        if not yes:
            click.confirm(f"remove {target.type.value} {target.name!r} with its {facts}?", abort=True, err=True)
        await mem.graph.remove_entity(target.name)
    click.echo(f"removed {target.name!r} with {facts}")


@entity.command("pin")
@click.argument("names", nargs=-1)
@click.option("--off", is_flag=True, help="Unpin them instead.")
@click.option(
    "--prompt",
    "show_prompt",
    is_flag=True,
    help="Then show the names the prompt holds at the next session's start, in order, and those left out.",
)
@campaign_option
@click.pass_context
@async_command
async def pin(ctx: click.Context, names: tuple[str, ...], off: bool, show_prompt: bool, campaign: str | None) -> None:
    """Keep entities' names (and aliases) in the speech recogniser's prompt, which holds a few dozen of a campaign's
    names: the villain of tonight's session, a place about to be visited. Without NAMES: the pinned ones (with
    --prompt: the prompt instead)."""
    from memory.voice.prompt import ALREADY_PROMPTED, next_prompt, prompted_unpinned  # numpy, recogniser helpers

    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        mem, _ = await campaign_memory(memory, settings, campaign)
        for name in names:
            target = await mem.graph.get_entity(name)
            changed = await mem.graph.set_pinned(target, not off)
            state = "unpinned" if off else "pinned"
            click.echo(f"{state} {target.name!r}" if changed else f"{target.name!r} was {state} already")
            if not off and await prompted_unpinned(mem, target.id):
                click.echo(f"  {ALREADY_PROMPTED}")
        if show_prompt:
            kept, left = await next_prompt(mem)
            click.echo(f"the prompt at the next session's start ({len(kept)} of {len(kept) + len(left)} names fit):")
            click.echo("\n".join(f"{n:3}. {name}" for n, name in enumerate(kept, 1)) or "  (no names)")
            click.echo(f"left out ({len(left)}): {', '.join(left)}" if left else "nothing left out")
        elif not names:
            pinned = await mem.graph.pinned_entities()
            click.echo("\n".join(f"{e.name} ({e.type.value})" for e in pinned) or "nothing is pinned")


@entity.command("merge")
@click.argument("source")
@click.argument("into")
@campaign_option
@json_option
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
@async_command
async def merge(ctx: click.Context, source: str, into: str, campaign: str | None, as_json: bool, yes: bool) -> None:
    """Merge SOURCE into INTO (one NPC recorded twice): its facts, names and mentions move to INTO, then SOURCE is
    deleted. Of two facts that disagree (status dead, status alive) the newer stands and the older is history: the
    question and the reply name it."""
    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        mem, _ = await campaign_memory(memory, settings, campaign)
        s, t = await mem.graph.get_entity(source), await mem.graph.get_entity(into)
        if not yes and s.id != t.id:
            ends = (await mem.graph.merge_entities(source, into, preview=True)).history_now()
            click.confirm(
                f"merge {s.type.value} {s.name!r} into {t.type.value} {t.name!r}{f' ({ends})' if ends else ''}?",
                abort=True,
                err=True,
            )
        result = await mem.graph.merge_entities(source, into)
    if as_json:
        emit_json(result)
    else:
        click.echo(result.describe())


@entity.command("link")
@click.argument("source")
@click.argument("relation")
@click.argument("target", required=False)
@click.option("--value", help="An attribute fact instead of a TARGET: SOURCE's new state (status --value dead).")
@click.option(
    "--secret/--public", default=None, help="DM-only, or shown to players; a link made again keeps its own unless set."
)
@campaign_option
@json_option
@click.pass_context
@async_command
async def link(
    ctx: click.Context,
    source: str,
    relation: str,
    target: str | None,
    value: str | None,
    secret: bool | None,
    campaign: str | None,
    as_json: bool,
) -> None:
    """Connect SOURCE to TARGET by RELATION (e.g. Eldrinax ally_of Ironhold), as /entity link does; or, with --value
    instead of TARGET, record a change in SOURCE's state (Eldrinax status --value dead). Either closes the current
    fact it contradicts (status alive), which stays as history."""
    if target is not None and value is not None:
        raise click.UsageError("give TARGET (another entity) or --value (a state, e.g. status --value dead), not both")
    if target is None and value is None:
        raise click.UsageError("give TARGET (another entity) or --value (a state, e.g. status --value dead)")
    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        mem, _ = await campaign_memory(memory, settings, campaign)
        linked = await mem.graph.link(source, relation, target, value=value, secret=secret)
    if as_json:
        emit_json(linked)
    else:
        click.echo(linked.describe(" (secret)"))


@entity.command("unlink")
@click.argument("source")
@click.argument("relation")
@click.argument("target")
@campaign_option
@json_option
@click.pass_context
@async_command
async def unlink(
    ctx: click.Context, source: str, relation: str, target: str, campaign: str | None, as_json: bool
) -> None:
    """Undo a current fact recorded by mistake: SOURCE's RELATION to TARGET, or its attribute fact of value TARGET
    (status dead). The fact it had replaced (status alive) is current again, unless a later one contradicts it; the
    mistake counts as rejected, and history stays."""
    settings = settings_from(ctx)
    async with open_memory(settings) as memory:
        mem, _ = await campaign_memory(memory, settings, campaign)
        unlinked = await mem.graph.unlink(source, relation, target)
    if as_json:
        emit_json(unlinked)
    else:
        click.echo(unlinked.describe())
