-- The recogniser's word confidences of a line stage 2 will look at, one per token of its raw text (NULL: not
-- given): the background stage-2 job trusts a rename of ordinary words more when the recogniser doubted them, as
-- the inline path does. NULL for imported transcripts and for lines without doubtful spans.
ALTER TABLE session_entries ADD COLUMN confidences real[];
