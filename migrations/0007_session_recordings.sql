-- The audio files a session was transcribed from, by content (SHA-256): a recording imported again under another
-- title is refused before the minutes of speech-to-text it would take, whatever its file is called now.
CREATE TABLE session_recordings (
    campaign_id bigint NOT NULL,
    session_id bigint NOT NULL,
    sha256 bytea NOT NULL,
    name text NOT NULL,
    PRIMARY KEY (campaign_id, sha256, session_id),
    FOREIGN KEY (campaign_id, session_id) REFERENCES sessions (campaign_id, id) ON DELETE CASCADE
);
