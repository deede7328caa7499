"""Sentences for people: what an edit of an entity's names, a merge or a session's deletion did, as the DM reads it
in a reply (the slash commands and the CLI say the same). The stores decide; this module only says what they did."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol

from memory.errors import InvalidInputError, quoted
from memory.graph.rules import removed_heard_as
from memory.models import Entity, MergeResult, Visibility
from memory.text import counted

if TYPE_CHECKING:
    from memory.session_log import SessionLog


def kept_old_name(before: Entity, after: Entity) -> bool:
    """Whether an edit renamed ``before`` and kept its old name as an alias: the DM is told, and how to clear it."""
    return before.name != after.name and before.name in after.aliases


def edited_phrases(before: Sequence[str], given: Sequence[str]) -> list[str]:
    """The heard-as or not-heard-as phrases an edit giving ``given`` leaves (the CLI's repeated option, or
    Discord's list split at commas): "-" alone, none; with a leading "+" or "-" on one of them, ``before`` with each
    "+phrase" (or plain one) added and each "-phrase" taken away, that one alone, case aside ("+elder nacks", "-from
    skin", as `session names` hints them: hints followed one after another each change their own phrase, where a
    list to replace all with undid the one before); else these, replacing all."""
    given = [g.strip() for g in given]
    if given == ["-"]:
        return []
    if not any(g.startswith(("+", "-")) for g in given):
        return list(given)
    held = {p.casefold(): p for p in before}
    for g in given:
        phrase = g[1:].strip() if g.startswith(("+", "-")) else g
        if not g.startswith("-"):
            held.setdefault(phrase.casefold(), phrase)
        elif held.pop(phrase.casefold(), None) is None:
            has = ", ".join(map(quoted, before)) or "none"
            raise InvalidInputError(f"{quoted(phrase)} is not one of its phrases (they are: {has})")
    return [p for p in held.values() if p]


def edited_aliases(entity: Entity, add: Sequence[str], drop: Sequence[str]) -> list[str]:
    """The aliases of ``entity`` with ``add`` added and ``drop`` taken away (case aside), in their order: one
    alias changed keeps the others, which replacing them all would silently lose."""
    held = {a.casefold(): a for a in entity.aliases}
    if missing := [d for d in drop if d.casefold() not in held]:
        has = ", ".join(map(quoted, entity.aliases)) or "none"
        raise InvalidInputError(
            f"{', '.join(map(quoted, missing))} is no alias of {quoted(entity.name)} (its aliases: {has})"
        )
    gone = {d.casefold() for d in drop}
    kept = [a for a in entity.aliases if a.casefold() not in gone]
    aliases: dict[str, str] = {}
    for alias in [*kept, *add]:
        aliases.setdefault(alias.casefold(), alias)  # one already held keeps its spelling
    return list(aliases.values())


def aliases_dropped(before: Entity, after: Entity) -> list[str]:
    """The aliases an edit took away (a rename's old name kept aside): lines saying one no longer name the entity,
    and the next session may propose it as someone new, so the DM is told."""
    kept = {a.casefold() for a in (after.name, *after.aliases)}
    return [a for a in before.aliases if a.casefold() not in kept]


def heard_as_said(before: Entity | None, after: Entity, lines: int | None) -> str:
    """What an edit (``before``: the entity before it; None: it was added) taught of what the recogniser writes for
    the entity's name, for the DM's reply ('' if nothing new). ``lines``: how many stored lines say it, counted
    before the edit (see ``SessionLog.count_heard``; None: not known), which a background job corrects."""
    had = {h.casefold() for h in before.heard_as} if before is not None else set()
    if not (new := [h for h in after.heard_as if h.casefold() not in had]):
        return ""
    said = f"From now on {', '.join(f'“{h}”' for h in new)} {'is' if len(new) == 1 else 'are'} written {after.name}"
    if lines is None:
        said += "; the lines already stored that say it are corrected again in the background."
    elif not lines:
        said += "; no line stored so far says it."
    else:
        one = lines == 1
        said += (
            f"; {counted(lines, 'line')} already stored {'says' if one else 'say'} it: {'it is' if one else 'they are'}"
            " corrected again in the background."
        )
    return " ".join([said, *everyday_said(new, after.name)])


def heard_as_removed_said(before: Entity, after: Entity, lines: int | None) -> str:
    """What an edit took away of what the recogniser writes for the entity's name, for the DM's reply ('' if
    nothing). ``lines``: how many stored lines hold a correction of those phrases to it (see
    ``SessionLog.count_corrected``; None: not known), which a background job restores."""
    if not (gone := removed_heard_as(before.heard_as, after.heard_as)):
        return ""
    it, is_ = ("it", "is") if len(gone) == 1 else ("they", "are")
    said = f"{', '.join(f'“{h}”' for h in gone)} {is_} no longer written {after.name}"
    if lines is None:
        return f"{said}; {it} {is_} restored in the background in the stored lines where {it} became the name."
    if not lines:
        return f"{said}; no line stored so far was corrected from {'it' if it == 'it' else 'them'}."
    return f"{said}; {it} {is_} restored in {counted(lines, 'line')} already stored, in the background."


def not_heard_as_said(before: Entity | None, after: Entity, lines: int | None) -> str:
    """What an edit (``before``: the entity before it; None: it was added) taught of what the recogniser writes that
    is never the entity's name, for the DM's reply ('' if nothing new). ``lines``: how many stored lines hold a
    correction of those phrases to it (see ``SessionLog.count_corrected``; None: not known), which a background
    job restores."""
    if not (new := removed_heard_as(after.not_heard_as, before.not_heard_as if before is not None else [])):
        return ""
    it, is_ = ("it", "is") if len(new) == 1 else ("they", "are")
    said = f"From now on {', '.join(f'“{h}”' for h in new)} {is_} never written {after.name}"
    if before is None:  # no line was corrected to it yet
        return said + "."
    if lines is None:
        return f"{said}; {it} {is_} restored in the background in the stored lines where {it} became the name."
    if not lines:
        return f"{said}; no line stored so far was corrected from {'it' if it == 'it' else 'them'}."
    return f"{said}; {it} {is_} restored in {counted(lines, 'line')} already stored, in the background."


class PhraseLines(NamedTuple):
    """How many stored lines an edit of an entity's phrases touches, counted before the edit (its jobs change them)."""

    heard: int | None  # say a heard-as phrase given (see ``SessionLog.count_heard``)
    restored: int | None  # hold a correction from a heard-as phrase taken away
    unsaid: int | None  # hold a correction from a new not-heard-as phrase


async def count_phrase_lines(
    log: SessionLog, before: Entity, heard_as: Sequence[str] | None, not_heard_as: Sequence[str] | None
) -> PhraseLines:
    """The stored lines an edit giving the entity ``before`` these heard-as and not-heard-as phrases (None: left as
    they are) will have corrected or restored, for :func:`phrases_said`."""
    names = [before.name, *before.aliases]
    gone = removed_heard_as(before.heard_as, heard_as) if heard_as is not None else []
    new_never = removed_heard_as(not_heard_as, before.not_heard_as) if not_heard_as else []  # those it lacked
    return PhraseLines(
        heard=await log.count_heard(heard_as) if heard_as else None,
        restored=await log.count_corrected(before.id, gone, names) if gone else None,
        unsaid=await log.count_corrected(before.id, new_never, names, any_stage=True) if new_never else None,
    )


def phrases_said(before: Entity, after: Entity, lines: PhraseLines) -> list[str]:
    """What an edit did to what the recogniser writes for the entity, for the DM's reply: a sentence each."""
    said = [
        heard_as_said(before, after, lines.heard),
        heard_as_removed_said(before, after, lines.restored),
        not_heard_as_said(before, after, lines.unsaid),
    ]
    return [s for s in said if s]


def everyday_said(phrases: Sequence[str], name: str) -> list[str]:
    """The warning for the DM when a heard-as phrase of ``name`` is ordinary English (see :func:`everyday`): it is
    allowed, but every time it is said it becomes the name. [] if none is."""
    from memory.correction.evidence import everyday  # wordfreq and the matcher: only when a phrase is added

    if not (common := [p for p in phrases if everyday(p)]):
        return []
    if len(common) == 1:
        return [f"“{common[0]}” is everyday English: every “{common[0]}” said from now on is written {name}."]
    return [f"{', '.join(f'“{p}”' for p in common)} are everyday English: each said from now on is written {name}."]


def newly_hidden(before: Entity | None, after: Entity) -> list[str]:
    """The name players read no more since ``before`` (None: ``after`` was just added): ``after``'s, when it is
    secret now and was not, or was named otherwise."""
    secret = after.visibility == Visibility.secret
    changed = before is None or before.visibility != Visibility.secret or before.name != after.name
    return [after.name] if secret and changed else []


def masked_said(said: Sequence[str]) -> list[str]:
    """The note for the DM when a secret name they gave is, or holds, ordinary English (see
    :func:`memory.graph.rules.everyday_masked`): players read "[secret]" wherever it is said. [] if none is."""
    if not said:
        return []
    listed = ", ".join(f"“{s}”" for s in said)
    return [f"Players will read [secret] for every {listed} said, in any sense (as it hides the secret name)."]


def described_said(found: Sequence[tuple[str, str, list[str]]]) -> list[str]:
    """The warning for the DM when what players read of a public entity says a secret name (see
    :func:`memory.graph.rules.secrets_described`): a line per entity, for the DM's eyes only. [] if none does."""
    by_entity: dict[str, list[str]] = {}
    for entity, field, names in found:
        by_entity.setdefault(entity, []).append(f"its {field} says {', '.join(f'“{n}”' for n in names)}")
    return [
        f"“{entity}” is public but {'; '.join(fields)}, a secret name: players will read [secret] there, which "
        "tells them a secret is there; reword it, or make the entity secret."
        for entity, fields in by_entity.items()
    ]


def unhidden_said(pairs: Sequence[tuple[str, str]]) -> list[str]:
    """The warning for the DM when a secret name is spelled like one players may read (see
    :func:`memory.graph.rules.unhidden_secrets`): players read it, the public name winning. [] if none is."""
    return [
        f"The secret name “{secret}” is spelled like “{public}”, which players may read: it cannot be hidden from "
        "them; give one of the two a name of its own."
        for secret, public in pairs
    ]


def spelled_like_said(pairs: Sequence[tuple[str, str]]) -> list[str]:
    """The note for the DM when a name they gave is spelled like another entity's (see
    :meth:`memory.graph.lookup.EntityLookup.spelled_like`). [] if none is."""
    return [
        f"“{name}” is spelled like “{other}” (accents, apostrophes and hyphens aside): each is found only as typed "
        "exactly; if they are one, `entity merge` them."
        for name, other in pairs
    ]


def describe_same_as(result: MergeResult) -> str:
    """The DM's answer to "Same as…": what became of the proposed entity's names and facts."""
    known, proposed = result.entity, result.merged

    done = []
    if result.aliases_added:
        kept = ", ".join(repr(a) for a in result.aliases_added)
        kept_as = "an alias" if len(result.aliases_added) == 1 else "aliases"
        done.append(f"{kept} kept as {kept_as}{result.hidden_from_players()}")
    if result.names_withheld:
        done.append(f"{proposed.name!r} was secret, so no alias of the public {known.name}; its facts are secret")
    done.append(counted(result.facts_moved, "fact") + " moved")
    if result.duplicates_dropped:
        done.append(counted(result.duplicates_dropped, "fact") + f" {known.name} already had dropped")
    if result.self_loops_dropped:  # "the old man —father_of→ Vaskerrin Holt" would be about itself
        done.append(counted(result.self_loops_dropped, "fact") + f" between {proposed.name} and {known.name} dropped")
    said = f"Same as {known.name}: {', '.join(done)}."
    dropped = result.dropped()
    return f"{said} {dropped}." if dropped else said


class DeletedCounts(Protocol):
    """What deleting a session reports (:class:`memory.session_delete.DeletedSession` is one)."""

    title: str
    lines: int
    chunks: int
    pending_entities: int
    pending_facts: int
    recap: bool
    recap_links: int
    kept_recap: str | None
    kept_recap_facts: int
    jobs: int
    kept_entities: int
    kept_facts: int


def deleted_session_said(deleted: DeletedCounts) -> str:
    """What was removed and what stayed, in a sentence or two for the DM."""
    removed = [counted(deleted.lines, "line"), counted(deleted.chunks, "passage")]
    if deleted.pending_entities or deleted.pending_facts:
        removed.append(
            f"{counted(deleted.pending_entities, 'entity', 'entities')} and {counted(deleted.pending_facts, 'fact')}"
            " waiting for review"
        )
    if deleted.recap:
        removed.append(f"its recap entity with {counted(deleted.recap_links, 'link')} to who took part")
    elif deleted.recap_links:
        removed.append(f"{counted(deleted.recap_links, 'link')} of its recap to who took part")
    if deleted.jobs:
        removed.append(counted(deleted.jobs, "waiting background job"))
    text = f"Deleted session {quoted(deleted.title)}: {', '.join(removed)}."
    if deleted.kept_entities or deleted.kept_facts:
        text += (
            f" Kept {counted(deleted.kept_entities, 'entity', 'entities')} and {counted(deleted.kept_facts, 'fact')}"
            " heard in it that were accepted or rejected."
        )
    if deleted.kept_recap:
        n = deleted.kept_recap_facts
        text += (
            f" Kept its recap entity {deleted.kept_recap!r}: {counted(n, 'fact')} you accepted"
            f" {'is' if n == 1 else 'are'} about it (remove it as any entity if it should go too)."
        )
    return text


def removed_facts_said(current: int, past: int, waiting: int) -> str:
    """The facts removing an entity deletes (see ``KnowledgeGraph.facts_touching``): "3 relationships, 1 past fact
    and 1 fact waiting for review". A count of the current ones alone hid the history and the review items lost."""
    said = [counted(current, "relationship")]
    said += [counted(past, "past fact")] * bool(past) + [f"{counted(waiting, 'fact')} waiting for review"] * bool(
        waiting
    )
    return ", ".join(said[:-1]) + " and " * (len(said) > 1) + said[-1]


def no_lines_yet(campaign: str) -> str:
    """Why a recall found nothing in a campaign that has no line at all, and how lines get there."""
    return (
        f"{quoted(campaign)} has no lines yet: import a transcript with `lorekeeper ingest FILE`, "
        "or record a session with /session start"
    )


def awaiting_review(counts: dict[str, int]) -> str:
    """The review queue's items, and the imports waiting whole beside them (`review list` shows both)."""
    imports = counts.get("pending_imports", 0)
    if not imports:
        return str(counts["pending"])
    return f"{counted(counts['pending'], 'item')} and {counted(imports, 'import')}"
