-- Search reads a name without its accents as the name: "Dun Kaldor" finds "Dûn Kaldor", "Ragnarök" finds
-- "Ragnarok", "Aethelric" finds "Æthelric" (the matcher, lookup and recall compare names so already). The index and
-- every query read a line through searchable(), which now also drops accents (NFD, combining marks removed) and
-- writes the letters no decomposition takes apart as English writes them, as memory.correction.text.normalize
-- does; one word for one word (a tsvector's positions, and so a line's passage, stay where they were).
CREATE FUNCTION unaccented(t text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
RETURN replace(replace(replace(replace(replace(replace(translate(
    regexp_replace(normalize(t, NFD), '[\u0300-\u036f]', '', 'g'),
    'ðÐøØłŁđĐı', 'dDoOlLdDi'), 'æ', 'ae'), 'Æ', 'Ae'), 'œ', 'oe'), 'Œ', 'Oe'), 'þ', 'th'), 'Þ', 'Th');

CREATE OR REPLACE FUNCTION searchable(t text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
RETURN irregular_verbs(singular_plurals(unaccented(visible(t))));

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
