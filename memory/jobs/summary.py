"""The summary job: a session's recap and its event entity linked to who took part."""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Sequence

from memory.extraction.pipeline import by_role
from memory.extraction.schema import players
from memory.gazetteer import of_mentions
from memory.graph.took_part import link_to_recaps, took_part
from memory.jobs.context import JobContext
from memory.jobs.queue import SUMMARY, claim_progress, progress, set_progress
from memory.mentions import index_lines
from memory.models import (
    RECAP_PREFIX,
    TAKES_NO_PART,
    Entity,
    EntityIn,
    EntityType,
    Entry,
    Provenance,
    ReviewStatus,
    Source,
    Visibility,
    recap_name,
)
from memory.offgame import out_of_game
from memory.providers.llm import LLMUnavailable
from memory.recap import abstractive, extractive_summary
from memory.text import without_hidden

log = logging.getLogger(__name__)


async def summarize_session(ctx: JobContext, campaign_id: int, session_id: int) -> str:
    """Write the session's recap, unless the one it has covers every line: a session ended again, however often
    and whichever of its summary jobs runs first, gets one recap, and another only once lines were added. (The
    summary's progress is the number of lines the recap covers: a late line may come before the last.)"""
    mem = ctx.memory.campaign(campaign_id)
    outage: LLMUnavailable | None = None
    session = await mem.log.session(session_id)
    entries = await mem.log.session_entries(session_id)
    done = await progress(mem.db, mem, session_id, SUMMARY)
    if session.summary is not None and done == len(entries):
        return session.summary
    entities = [e for e in await mem.graph.list_entities(status=None) if e.status == ReviewStatus.accepted]
    names = {e.id: e.name for e in entities if e.type != EntityType.event}
    kinds = {e.id: e.type for e in entities}
    secret = {e.id for e in entities if e.visibility == Visibility.secret}
    gazetteer = of_mentions(entities)
    summary, involved = extractive_summary(
        entries, gazetteer, names, secret=secret, dm_speaker_id=session.dm_speaker_id, characters=_characters(entities)
    )
    # the mention index, for entities and aliases added after the chunk job read their lines: until now those lines
    # were found by full text (memory.mentions.said_ids), which stops looking once the session is recapped
    named = {e.id: ids for e in entries if (ids := gazetteer.mentioned_ids(e))}
    talk = out_of_game(entries, session.dm_speaker_id)  # once: it reads the whole session
    told = [e for e in entries if e.id not in talk]  # the story's lines
    if ctx.llm is not None and told:
        mask = await mem.graph.player_mask()
        public = [n for e in entities if e.id not in secret for n in [e.name, *e.aliases]]
        try:
            summary = await abstractive(ctx.llm, by_role(told, session.dm_speaker_id), summary, mask, public)
        except LLMUnavailable as exc:
            # players get the extractive summary now, and the job is retried (held, then run again with the
            # extraction held beside it): a 429 burst must not cost the session its written recap for good
            outage = exc
            log.warning("LLM recap failed (%s); the extractive summary stands until the LLM answers", exc)
    # An entity's name has no invisible characters; a title may ("🧙‍♂️ Wizard night" holds a zero-width joiner).
    title = "".join(ch for ch in session.title if not unicodedata.category(ch).startswith("C"))
    async with mem.transaction() as tx:
        await tx.graph.lock()  # before any write: see ``KnowledgeGraph.lock``
        if not await claim_progress(tx.db, tx, session_id, SUMMARY, done):  # another job wrote it meanwhile
            return (await tx.log.session(session_id)).summary or summary
        if outage is None:  # else it stays short of the lines: the next run writes the LLM's recap
            await set_progress(tx.db, tx, session_id, SUMMARY, len(entries))
        await tx.log.set_summary(session_id, summary)
        name = recap_name(title)[:200]  # an entity name's limit; titles may be file names
        if (old := f"{RECAP_PREFIX}{title}"[:200]) != name and await tx.graph.find_entity(old) is not None:
            name = old  # recapped before "Session 2" lost its doubled word: the same event, its links kept
        event, _, _ = await tx.graph.upsert_entity(
            EntityIn(
                name=name,
                type=EntityType.event,
                description=without_hidden(summary[:2000]),  # a recap is the model's text: see without_hidden
                provenance=Provenance(source=Source.inferred, confidence=1.0, session_id=session_id),
            )
        )
        for entity_id in [*involved, *_played(entities, entries)]:
            if kinds[entity_id] not in TAKES_NO_PART:
                await tx.graph.ensure_relationship(took_part(entity_id, event.id, session_id))
        await index_lines(tx.db, campaign_id, session_id, named, replace=False)
        # accepted while the recap was being written: their own look found no recap yet, and this one's list of
        # who took part was read before them
        late = {e.id for e in await tx.graph.list_entities()} - {e.id for e in entities}
        await link_to_recaps(tx.graph, late)
    if outage is not None:
        raise outage
    return summary


def _played(entities: Sequence[Entity], entries: Sequence[Entry]) -> list[int]:
    """The characters whose player (``played_by``, one name or several) speaks in the session: a character
    played at the table takes part in it, named or not. Not a player's who plays several (Grog and Fjord, both
    TRAVIS's): their voice says not which one was played, the lines naming one do (recall's "what did Grog say").
    Player characters only: an npc a player voices now and then took part when its lines name it."""
    speakers = {e.speaker.casefold() for e in entries}
    pcs = [e for e in entities if e.type == EntityType.player]
    return [ids[0] for player, ids in _characters(pcs).items() if player in speakers and len(ids) == 1]


def _characters(entities: Sequence[Entity]) -> dict[str, list[int]]:
    """The characters each player (casefolded, by ``played_by``) plays: who a recap quotes them as. Any entity whose
    ``played_by`` names them, as recall labels their lines (``memory.recall._plays_in``): a player's npc too."""
    plays: dict[str, list[int]] = {}
    for e in entities:
        for player in players(e.attributes):
            plays.setdefault(player, []).append(e.id)
    return plays
