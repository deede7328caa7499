"""Correction stage 2: the LLM on the spans stage 1 found doubtful."""

from __future__ import annotations

from memory.correction import LLMCorrector
from memory.correction.edits import apply_corrections, merge_corrections, to_corrected_span, to_raw_offset
from memory.correction.pipeline import shift_confidences
from memory.correction.text import tokenize
from memory.jobs.context import JobContext
from memory.jobs.heard_as import never_heard
from memory.jobs.queue import CHUNK, CORRECT2, enqueue_session_work, last_seq, progress, rewind_progress, set_progress
from memory.recorder import default_index_cache


async def correct_stage2(ctx: JobContext, campaign_id: int, session_id: int, *, slice_size: int = 50) -> None:
    """Correction stage 2: the LLM looks at the spans stage 1 found doubtful; its verified substitutions
    revise the entry's text (the raw text stays). Chunking and extraction run again afterwards."""
    mem = ctx.memory.campaign(campaign_id)
    if ctx.llm is None:
        # Queued while an LLM was configured, run by a worker without one: the lines keep their stage-1
        # text, and extraction (which waits for stage 2) must not wait for ever.
        last = await last_seq(mem, session_id)
        if last > await progress(mem.db, mem, session_id, CORRECT2):
            await set_progress(mem.db, mem, session_id, CORRECT2, last)
        await enqueue_session_work(mem.db, campaign_id, session_id, last, after=":2")  # see below
        return

    corrector = LLMCorrector(ctx.llm, (await default_index_cache.matcher(mem)).index)
    while entries := await mem.log.session_entries(
        session_id, after_seq=await progress(mem.db, mem, session_id, CORRECT2), limit=slice_size
    ):
        for e in entries:
            if not e.suspects:
                continue
            stage1_text = apply_corrections(e.raw_text, e.corrections)
            shifted = [to_corrected_span(span, e.corrections) for span in e.suspects]
            # the recogniser's doubt, where the recorder kept it, moved onto the stage-1 text as inline; a line
            # tokenised otherwise when it was written (an older version) is judged as one without confidences
            kept = e.confidences if e.confidences and len(e.confidences) == len(tokenize(e.raw_text)) else None
            moved = shift_confidences(e.raw_text, stage1_text, e.corrections, kept) if kept else None
            found = await corrector.correct(stage1_text, shifted, confidences=moved, retry_later=True)
            if not found:
                continue
            more = [c.model_copy(update={"start": (at := to_raw_offset(c.start, e.corrections)),
                                         "end": at + len(c.span), "stage": 2}) for c in found]  # fmt: skip
            async with mem.transaction() as tx:  # new text, new vectors: its windows are chunked again
                # Read again, locked: the heard-as job may have corrected the line while the LLM was asked, and
                # its correction (the DM's word) stays.
                for now in await tx.log.entries([e.id], for_update=True):
                    # The names were read when the job started, maybe minutes ago: a phrase the DM said since is
                    # never the name is not made it (the job restoring such lines may have passed this one).
                    # Read after the lock: a later edit's restoration waits for it, and finds the line.
                    never = await tx.graph.not_heard_as_of({c.entity_id for c in more if c.entity_id is not None})
                    more = [c for c in more if not never_heard(c, never)]
                    merged = merge_corrections(now.corrections, more)
                    if merged != now.corrections:
                        await tx.log.revise(e.id, apply_corrections(e.raw_text, merged), merged)
                        await rewind_progress(tx.db, campaign_id, session_id, CHUNK, e.seq)
        await set_progress(mem.db, mem, session_id, CORRECT2, entries[-1].seq)
    # Extraction waited for these lines; windows with revised text need new vectors. Enqueued even when this
    # run had nothing left to do: a run that stopped between its progress and this step (a crash, a lost
    # connection) is retried, and the retry finds the lines done. A duplicate of waiting work is skipped.
    await enqueue_session_work(mem.db, campaign_id, session_id, await last_seq(mem, session_id), after=":2")
