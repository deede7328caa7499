-- An irregular plural matches its singular: "dwarves" finds "dwarf", "elves" "elf", "wolves" "wolf". The English
-- stemmer makes "dwarv" of one and "dwarf" of the other. The index and every query read a line through
-- searchable(), which now also writes such a plural as its singular, one word for one word (a tsvector's
-- positions, and so a line's passage, stay where they were). The nouns: those whose plural the stemmer leaves
-- apart from the singular, found by inflect's singular_noun over wordfreq's English words, without a plural that
-- is also another word's form ("leaves", "lives": leave, live; "dice": die, to die).
CREATE FUNCTION singular_plurals(t text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
RETURN regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(
    regexp_replace(regexp_replace(t,
    '\m(dwar|wol|werewol|el|thie|hal|cal|shel|loa|scar|whar|hoo|shea)ves\M', '\1f', 'gi'),
    '\m(kni|wi|midwi|housewi|fishwi)ves\M', '\1fe', 'gi'),
    '\m(wo|gentle|noble|horse|watch|crafts|fisher|hench|guards|towns|trades|swords|bow|sea|free|clans|kins)?men\M',
    '\1man', 'gi'),
    '\m(m|l)ice\M', '\1ouse', 'gi'),
    '\mchildren\M', 'child', 'gi'),
    '\mfeet\M', 'foot', 'gi'),
    '\mteeth\M', 'tooth', 'gi'),
    '\mgeese\M', 'goose', 'gi'),
    '\moxen\M', 'ox', 'gi');

CREATE OR REPLACE FUNCTION searchable(t text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
RETURN singular_plurals(regexp_replace(t, '[\u00AD\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]', '', 'g'));

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
