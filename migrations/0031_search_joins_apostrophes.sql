-- Search reads a name through its apostrophe: "Kalthar" finds "Kal'thar" and "Kal’thar", and back. PostgreSQL's
-- parser splits a word at an apostrophe ("kal", "thar"), so no search for the name written whole found it. As
-- migration 0029 does for accents, searchable() now also drops an apostrophe between two letters, last (after the
-- plurals and verbs read "men's" as "man's"): "don't" is "dont" in a line and in a query alike, and still matches.
-- A quoted phrase is matched against visible() text, as written. The passage's word count, token_spans in
-- memory/recall_rank.py, reads such a word as one too.
CREATE FUNCTION unapostrophed(t text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
RETURN regexp_replace(t, '([[:alnum:]])[''’ʼ](?=[[:alpha:]])', '\1', 'g');

CREATE OR REPLACE FUNCTION searchable(t text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
RETURN unapostrophed(irregular_verbs(singular_plurals(unaccented(visible(t)))));

-- The lines written before: indexed again, their terms counted again (migrations/0018 keeps them so from now on).
ALTER TABLE session_entries DROP COLUMN tsv;
ALTER TABLE session_entries ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', searchable(text))) STORED;
CREATE INDEX session_entries_tsv ON session_entries USING gin (tsv);
DELETE FROM recall_terms;
DELETE FROM recall_corpus;
INSERT INTO recall_corpus (campaign_id, lines, terms)
SELECT campaign_id, count(*), sum(length(tsv)) FROM session_entries GROUP BY campaign_id;
INSERT INTO recall_terms (campaign_id, term, lines)
SELECT e.campaign_id, u, count(*) FROM session_entries e, unnest(tsvector_to_array(e.tsv)) u GROUP BY 1, 2;
