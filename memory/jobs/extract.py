"""The extraction job: a session's lines to entities and facts (L3), slice by slice."""

from __future__ import annotations

from memory.extraction import file_proposal, make_extractor, propose
from memory.extraction.pipeline import Fallbacks, SceneMoves, SessionTalk
from memory.jobs.context import JobContext
from memory.jobs.queue import CORRECT2, EXTRACT, claim_progress, progress, set_progress


async def extract_session(ctx: JobContext, campaign_id: int, session_id: int, *, slice_size: int = 200) -> None:
    """Feed the session's entries not yet extracted to the extractor; progress commits with each slice's writes.

    The extractor (maybe a slow LLM call) runs outside any transaction; the writes and the progress then commit
    together in a short one, unless the slice changed meanwhile (progress moved: another run got there first, or
    a late line rewound it; or a line arrived or was revised inside the slice): then it is read and extracted
    again.
    """
    extractor = make_extractor(ctx.llm)
    mem = ctx.memory.campaign(campaign_id)
    # a model unusable for a whole session is one warning for this run, not one a slice (13 on a long episode);
    # said even if the run stops on an error, for the slices it filed
    fallbacks, slices = Fallbacks(session_id), 0
    scenes = SceneMoves()  # the whole session's, read once for every slice while it and the entities stay as they are
    talk = SessionTalk()  # likewise, while its lines stay as they are
    try:
        while True:
            done = await progress(mem.db, mem, session_id, EXTRACT)
            # Lines waiting for correction stage 2 are extracted after it, from their corrected text: the stage-2
            # job enqueues this one again when it is through. (Its progress is read first: a line it revises after
            # this read still waits.)
            corrected_to = await progress(mem.db, mem, session_id, CORRECT2)
            entries = await mem.log.session_entries(session_id, after_seq=done, limit=slice_size)
            waiting = next((i for i, e in enumerate(entries) if e.suspects and e.seq > corrected_to), None)
            entries = entries[:waiting]
            if not entries:
                return
            proposal = await propose(
                mem,
                session_id=session_id,
                entries=entries,
                extractor=extractor,
                scenes=scenes,
                embedder=ctx.embedder,
                talk=talk,
            )
            async with mem.transaction() as tx:
                if not await claim_progress(tx.db, tx, session_id, EXTRACT, done):
                    continue
                now = await tx.log.session_entries(session_id, after_seq=done, limit=len(entries))
                if [(e.id, e.text) for e in now] != [(e.id, e.text) for e in entries]:
                    continue  # a line arrived inside the slice, or one was revised, while the extractor ran
                if proposal is not None:
                    stats = await file_proposal(tx, proposal, warn=False)
                await set_progress(tx.db, tx, session_id, EXTRACT, entries[-1].seq)
            slices += 1  # committed
            if proposal is not None and proposal.fallback is not None:
                await fallbacks.add(mem, proposal, stats)
    finally:
        fallbacks.warn(of_slices=slices)
