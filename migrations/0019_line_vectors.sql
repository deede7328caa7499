-- L2 by the line: one embedding per utterance, so recall's vector half finds the line that says it instead of
-- a 7-line window MiniLM truncates. halfvec: 2 bytes a dimension (768 bytes a line at 384), the ranking the same.
-- Every line chunked has a row; a line too short to mean anything alone ("Yeah.") has no embedding, so a
-- session chunked before this table existed is told apart (no row for its last chunked line) and filled in.
CREATE TABLE line_vectors (
    campaign_id bigint NOT NULL,
    entry_id bigint NOT NULL,
    session_id bigint NOT NULL,
    content_hash text NOT NULL,  -- of the text embedded: a line revised by stage 2 is embedded again
    embedding halfvec({embedding_dim}),
    -- the pre-show, a break or the after-show this line is in (memory.offgame's segments, from the DM's cues):
    -- the chunk job sets it, recall ranks such lines below the story
    talk text,
    PRIMARY KEY (campaign_id, entry_id),
    FOREIGN KEY (campaign_id, entry_id) REFERENCES session_entries (campaign_id, id) ON DELETE CASCADE,
    FOREIGN KEY (campaign_id, session_id) REFERENCES sessions (campaign_id, id) ON DELETE CASCADE
);
CREATE INDEX line_vectors_embedding ON line_vectors USING hnsw (embedding halfvec_cosine_ops);
CREATE INDEX line_vectors_session ON line_vectors (campaign_id, session_id);
