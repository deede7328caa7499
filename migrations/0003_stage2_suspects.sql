-- Spans of the raw text that correction stage 1 found doubtful (low STT confidence, near-misses): the work list
-- of correction stage 2, which runs later as a job, after the word confidences themselves are gone.
ALTER TABLE session_entries ADD COLUMN suspects jsonb NOT NULL DEFAULT '[]';
