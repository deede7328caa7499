-- Indexes a two-year campaign (400,000 lines, 30,000 facts) showed missing (bench/campaign_scale.py).
--
-- The fact a closed fact was superseded by. Deleting a fact sets its superseders' superseded_by to NULL (the
-- foreign key), and a merge points the facts a folded copy had superseded at the kept one: each a scan of every
-- fact of every campaign without it (12 ms each at 30,000 facts; a merge of two busy entities did 700 of them).
CREATE INDEX relationships_superseded_by ON relationships (superseded_by) WHERE superseded_by IS NOT NULL;

-- The lines a correction made a name of: a merge moves the corrections naming the merged entity to the one it goes
-- into, which read every line of the campaign (1.2 s at 400,000). Only corrected lines are indexed.
CREATE INDEX session_entries_corrected ON session_entries USING gin (corrections jsonb_path_ops)
    WHERE corrections <> '[]'::jsonb;

-- The passages holding a line: recall cites each line full-text search finds by the earliest passage that holds it,
-- which read every passage of the campaign (0.4 s a query at 67,000 passages).
CREATE INDEX chunks_entries ON chunks USING gin (entry_ids);
