-- Full-text search reads through invisible characters. A zero-width space, a direction mark or a soft hyphen
-- pasted inside a word ("Str<U+200B>ahd") split it for the index, and no search found the word. The text is kept
-- as written; only what the index and the queries read drops them (see ``searchable`` in the queries).
CREATE FUNCTION searchable(t text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
RETURN regexp_replace(t, '[\u00AD\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]', '', 'g');

ALTER TABLE session_entries DROP COLUMN tsv;
ALTER TABLE session_entries ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', searchable(text))) STORED;
CREATE INDEX session_entries_tsv ON session_entries USING gin (tsv);
