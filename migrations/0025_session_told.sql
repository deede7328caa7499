-- The lines of a session its narrator tells in the story (memory.offgame.told_lines), kept: who took part in it is
-- found from them each time an entity is accepted, merged or loaded from a campaign file, and finding them reads the
-- whole session (the DM's cues of a break or the after-show). `lines`: a digest of the session's lines and DM they
-- were found from; when those change the digest does, and they are found again (memory.graph.took_part).
CREATE TABLE session_told (
    campaign_id bigint NOT NULL,
    session_id bigint NOT NULL,
    lines text NOT NULL,
    entry_ids bigint[] NOT NULL,
    PRIMARY KEY (campaign_id, session_id),
    FOREIGN KEY (campaign_id, session_id) REFERENCES sessions (campaign_id, id) ON DELETE CASCADE
);
