-- Who said how many words in each session, kept: "what did the DM say" asks each session's narrator
-- (memory.offgame.dm_speaker: the speaker labelled DM, else who said the most words; or the user who ran a recorded
-- session), which summed every line's words at each question (150,000 lines at 100 sessions). Triggers keep the
-- counts in step with session_entries in the writing transaction, as migration 0018 keeps recall_terms: any write
-- of lines (an import, a correction, a session deleted) moves them, and a question reads a few rows a session.
-- `speaker_id`: '' for a line without one (a transcript's); a recorded session's DM is found by it.
CREATE TABLE session_speakers (
    campaign_id bigint NOT NULL,
    session_id bigint NOT NULL,
    speaker text NOT NULL,
    speaker_id text NOT NULL,
    lines bigint NOT NULL,
    words bigint NOT NULL,
    PRIMARY KEY (campaign_id, session_id, speaker, speaker_id),
    FOREIGN KEY (campaign_id, session_id) REFERENCES sessions (campaign_id, id) ON DELETE CASCADE
);

-- A line's words as str.split() counts them (the narrator's rule counts so in Python too).
CREATE FUNCTION line_words(t text) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
RETURN cardinality(array_remove(string_to_array(translate(t, E'\t\n\r', '   '), ' '), ''));

-- Rows in order: two writers of one session queue on one row instead of deadlocking on two.
CREATE FUNCTION session_speakers_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO session_speakers AS s (campaign_id, session_id, speaker, speaker_id, lines, words)
    SELECT campaign_id, session_id, speaker, coalesce(speaker_id, ''), count(*), coalesce(sum(line_words(text)), 0)
    FROM new_rows GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
    ON CONFLICT (campaign_id, session_id, speaker, speaker_id)
    DO UPDATE SET lines = s.lines + EXCLUDED.lines, words = s.words + EXCLUDED.words;
    RETURN NULL;
END $$;

-- Lines gone: their counts taken away, and a speaker left with no line loses their row. Only rows there are updated:
-- a session deleted has taken its own with it (ON DELETE CASCADE), and is not written again.
CREATE FUNCTION session_speakers_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE session_speakers s SET lines = s.lines - d.lines, words = s.words - d.words
    FROM (SELECT campaign_id, session_id, speaker, coalesce(speaker_id, '') AS speaker_id, count(*) AS lines,
                 coalesce(sum(line_words(text)), 0) AS words
          FROM old_rows GROUP BY 1, 2, 3, 4) d
    WHERE s.campaign_id = d.campaign_id AND s.session_id = d.session_id AND s.speaker = d.speaker
      AND s.speaker_id = d.speaker_id;
    DELETE FROM session_speakers s USING (SELECT DISTINCT campaign_id, session_id FROM old_rows) d
    WHERE s.campaign_id = d.campaign_id AND s.session_id = d.session_id AND s.lines <= 0;
    RETURN NULL;
END $$;

-- Most updates leave speaker and text alone (a seq kept on conflict, corrections recorded): nothing to count then.
-- A line rewritten is taken away as it was and counted as it is.
CREATE FUNCTION session_speakers_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM new_rows n JOIN old_rows o USING (id)
        WHERE (n.speaker, n.speaker_id, n.text) IS DISTINCT FROM (o.speaker, o.speaker_id, o.text)
    ) THEN
        RETURN NULL;
    END IF;
    INSERT INTO session_speakers AS s (campaign_id, session_id, speaker, speaker_id, lines, words)
    SELECT campaign_id, session_id, speaker, speaker_id, sum(lines), sum(words) FROM (
        SELECT n.campaign_id, n.session_id, n.speaker, coalesce(n.speaker_id, '') AS speaker_id, 1 AS lines,
               coalesce(line_words(n.text), 0) AS words
        FROM new_rows n JOIN old_rows o USING (id)
        WHERE (n.speaker, n.speaker_id, n.text) IS DISTINCT FROM (o.speaker, o.speaker_id, o.text)
        UNION ALL
        SELECT o.campaign_id, o.session_id, o.speaker, coalesce(o.speaker_id, ''), -1, -coalesce(line_words(o.text), 0)
        FROM new_rows n JOIN old_rows o USING (id)
        WHERE (n.speaker, n.speaker_id, n.text) IS DISTINCT FROM (o.speaker, o.speaker_id, o.text)
    ) x GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
    ON CONFLICT (campaign_id, session_id, speaker, speaker_id)
    DO UPDATE SET lines = s.lines + EXCLUDED.lines, words = s.words + EXCLUDED.words;
    DELETE FROM session_speakers s USING (SELECT DISTINCT campaign_id, session_id FROM old_rows) d
    WHERE s.campaign_id = d.campaign_id AND s.session_id = d.session_id AND s.lines <= 0;
    RETURN NULL;
END $$;

CREATE TRIGGER session_speakers_inserted AFTER INSERT ON session_entries
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION session_speakers_inserted();
CREATE TRIGGER session_speakers_updated AFTER UPDATE ON session_entries
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION session_speakers_updated();
CREATE TRIGGER session_speakers_deleted AFTER DELETE ON session_entries
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION session_speakers_deleted();

-- The lines written before this migration.
INSERT INTO session_speakers (campaign_id, session_id, speaker, speaker_id, lines, words)
SELECT campaign_id, session_id, speaker, coalesce(speaker_id, ''), count(*), coalesce(sum(line_words(text)), 0)
FROM session_entries GROUP BY 1, 2, 3, 4;
