"""The heard-as jobs: stored lines corrected again for phrases the DM added, or restored for phrases taken away."""

from __future__ import annotations

from collections.abc import Sequence

from memory.correction import PhoneticMatcher
from memory.correction.edits import apply_corrections, merge_corrections
from memory.correction.text import spaceless
from memory.errors import NotFoundError
from memory.graph.took_part import link_to_recaps, unlink_unnamed
from memory.jobs.context import JobContext
from memory.jobs.queue import CHUNK, enqueue_session_work, last_seq, rewind_progress
from memory.models import Correction, Entry
from memory.recorder import default_index_cache
from memory.store import CampaignMemory


def never_heard(correction: Correction, never: dict[int, set[str]]) -> bool:
    """Whether ``correction`` writes an entity's name where it is never heard (``never``: each entity's phrases,
    spaces removed, as :meth:`KnowledgeGraph.not_heard_as_of` gives them): the phrase, or its plural."""
    said = spaceless(correction.span)
    phrases = never.get(correction.entity_id, set()) if correction.entity_id is not None else set()
    return said in phrases or (said.endswith("s") and said[:-1] in phrases)


async def correct_heard_as(ctx: JobContext, campaign_id: int, session_id: int) -> int:
    """The job of :func:`enqueue_recorrection`."""
    return await correct_heard_as_lines(ctx.memory.campaign(campaign_id), session_id)


async def correct_heard_as_lines(mem: CampaignMemory, session_id: int, *, slice_size: int = 500) -> int:
    """Correct again the session's stored lines where the campaign's heard-as phrases are said, as stage 1 now
    corrects a new line: each phrase becomes its entity's name (a correction there before, of stage 1 or 2, gives
    way: the DM's word is surer). The rest of each line's corrections stay (the recogniser's word confidences
    they were made with are gone), and so does the raw text. As stage 2 revises a line, the session's windows
    from it on are chunked and embedded again, and an entity the lines now name took part in the session (its
    recap, if written, read the phrase). Returns how many lines changed; running it again changes none."""
    matcher = await default_index_cache.matcher(mem)
    if not (heard := {f.spaceless for f in matcher.index.heard}):
        return 0
    ids = await mem.log.heard_in(session_id, [f.surface for f in matcher.index.heard])
    changed = 0
    named: set[int] = set()  # the entities whose phrases the lines say
    for start in range(0, len(ids), slice_size):
        async with mem.transaction() as tx:
            # locked as read: a stage-2 revision committed before this one writes must not be written over
            entries = await tx.log.entries(ids[start : start + slice_size], for_update=True)
            # The phrases as they are now, after the lock: one taken away since the job started is not written (the
            # job restoring its lines may have passed these), and one taken away after waits for the lock.
            matcher = await default_index_cache.matcher(mem)
            heard = {f.spaceless for f in matcher.index.heard}
            found = [
                [c for c in matcher.correct(e.raw_text).corrections if spaceless(c.span) in heard] for e in entries
            ]
            named.update(c.entity_id for cs in found for c in cs if c.entity_id is not None)
            revised = await _revise(
                tx,
                session_id,
                entries,
                [merge_corrections(f, e.corrections) for f, e in zip(found, entries, strict=True)],
                after=":h",
            )
        changed += revised
    if named:  # a recap written before read the phrase, not the name (done again by a retry: the raw text stays)
        async with mem.transaction() as tx:
            await link_to_recaps(tx.graph, named, sessions=[session_id])
    return changed


async def restore_heard_as(
    ctx: JobContext, campaign_id: int, session_id: int, *, entity_id: int, phrases: list[str], any_stage: bool
) -> int:
    """The job of :func:`enqueue_restoration`."""
    mem = ctx.memory.campaign(campaign_id)
    return await restore_heard_as_lines(mem, session_id, entity_id, phrases, any_stage=any_stage)


async def restore_heard_as_lines(
    mem: CampaignMemory,
    session_id: int,
    entity_id: int,
    phrases: Sequence[str],
    *,
    any_stage: bool = False,
    slice_size: int = 500,
) -> int:
    """Undo in the session's stored lines what ``phrases`` did as heard-as phrases of the entity ``entity_id``,
    which has them no longer: each stage-1 correction of such a span (spacing and punctuation aside) to the entity
    is dropped and the span judged again by the campaign's matcher as it is now (what it corrects there by sound,
    or as another entity's heard-as phrase, is corrected so again); the line's other corrections, of stage 1 or 2,
    stay, and its text is written again from the raw text. As :func:`correct_heard_as_lines`, the session's windows
    from the first line changed on are chunked and embedded again, and the entity's link to the session goes if its
    lines name it no longer, each with the lines that made it so (one transaction a slice). Returns how many lines
    changed; running it again changes none. ``any_stage``: stage 2's corrections of such a span, or of its plural,
    to the entity are dropped too (a phrase the DM says is never the name)."""

    if not (gone := {s for p in phrases if (s := spaceless(p))}):
        return 0
    async with mem.transaction() as tx:
        # after the revisions in progress: one by a writer that read the names before the DM's edit is listed too
        await tx.log.lock_revisions()
        ids = await tx.log.corrected_in(session_id, entity_id, list(phrases), any_stage=any_stage)
    changed = 0
    for start in range(0, len(ids), slice_size):
        changed += await _restore_slice(
            mem, session_id, entity_id, gone, ids[start : start + slice_size], any_stage=any_stage
        )
    return changed


async def _restore_slice(
    mem: CampaignMemory, session_id: int, entity_id: int, gone: set[str], ids: Sequence[int], *, any_stage: bool
) -> int:
    """:func:`restore_heard_as_lines` on the lines ``ids``, in one transaction; returns how many changed."""
    async with mem.transaction() as tx:
        # The took-part link the restored lines no longer make goes with them, in this transaction: a job cut off
        # after they were written would, tried again, find them done and leave the link. So the graph's lock
        # comes first (see ``KnowledgeGraph.lock``: a merge takes it before it writes these lines).
        await tx.graph.lock()
        # locked as read: a stage-2 revision committed before this one writes must not be written over
        entries = await tx.log.entries(ids, for_update=True)
        # The DM may have changed their mind since the job was queued (a phrase given back, a "never" taken
        # back), and the heard-as job may have corrected these lines so meanwhile: what is undone, and the
        # names they are judged by again, are read now, after the lock.
        now = await _phrases_now(tx, entity_id, any_stage=any_stage)
        undone = gone & now if any_stage else gone - now
        matcher = await default_index_cache.matcher(mem)
        restored = [restored_corrections(e, entity_id, undone, matcher, any_stage=any_stage) for e in entries]
        if revised := await _revise(tx, session_id, entries, restored, after=":u"):
            # It took part in the session by its lines: if they named it only by the phrase, they name it no
            # longer. (Only here: a session the phrase changed nothing in keeps its links, whatever made them.)
            await unlink_unnamed(tx.graph, entity_id, session_id)
    return revised


def restored_corrections(
    entry: Entry, entity_id: int, undone: set[str], matcher: PhoneticMatcher, *, any_stage: bool
) -> list[Correction]:
    """``entry``'s corrections without those to ``entity_id`` of a phrase in ``undone`` (spaces removed; of stage 1
    only unless ``any_stage``), each span freed judged again by ``matcher``."""
    freed = [c for c in entry.corrections if (any_stage or c.stage == 1) and _undoes(c, entity_id, undone, any_stage)]
    if not freed:
        return entry.corrections
    again = matcher.correct(entry.raw_text).corrections
    return merge_corrections(
        [c for c in entry.corrections if c not in freed],
        [c for c in again if any(c.start < f.end and f.start < c.end for f in freed)],
    )


def _undoes(c: Correction, entity_id: int, undone: set[str], any_stage: bool) -> bool:
    # A phrase never the name is not its plural either: stage 2 refuses that too (see never_heard), and may
    # have made it the name before ("Kwellows" for "kwellow"; its span may hold the "s", stage 1's never does).
    if c.entity_id != entity_id:
        return False
    return never_heard(c, {entity_id: undone}) if any_stage else spaceless(c.span) in undone


async def _revise(
    tx: CampaignMemory,
    session_id: int,
    entries: Sequence[Entry],
    corrections: Sequence[list[Correction]],
    *,
    after: str,
) -> int:
    """Write each of the session's ``entries`` (locked) whose ``corrections`` (one list each, in order) differ from
    its own: text again from the raw text. The windows from the first line changed on are chunked and embedded
    again, queued in the same transaction (a job cut off after writing the text would, tried again, find the lines
    done and queue nothing). Returns how many lines changed."""
    revised = []
    for e, merged in zip(entries, corrections, strict=True):
        if merged != e.corrections:
            await tx.log.revise(e.id, apply_corrections(e.raw_text, merged), merged)
            revised.append(e.seq)
    if revised:  # new text, new vectors
        await rewind_progress(tx.db, tx.campaign_id, session_id, CHUNK, min(revised))
        await enqueue_session_work(tx.db, tx.campaign_id, session_id, await last_seq(tx, session_id), after=after)
    return len(revised)


async def _phrases_now(tx: CampaignMemory, entity_id: int, *, any_stage: bool) -> set[str]:
    """The entity's not-heard-as phrases (``any_stage``) or heard-as phrases as they are now, spaces removed as the
    matcher reads them; none if it was removed."""
    if any_stage:
        return (await tx.graph.not_heard_as_of([entity_id])).get(entity_id, set())
    try:
        entity = await tx.graph.get_entity_by_id(entity_id)
    except NotFoundError:
        return set()
    return {spaceless(h) for h in entity.heard_as}
