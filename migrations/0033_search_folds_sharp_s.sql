-- unaccented() (migrations/0029) now also writes "ß" as "ss" and "ħ" as "h", as memory.correction.text.normalize
-- does (casefolding, memory.text.LETTERS): a line saying "Straße" is found by "Strasse", "Ħal Far" by "Hal Far",
-- as the matcher, lookup and the players' mask already read them. Only the lines holding one of these letters
-- change their terms: they alone are indexed again (an update recomputes the generated tsv, and the triggers of
-- migrations/0018 recount its terms), not every line.
CREATE OR REPLACE FUNCTION unaccented(t text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
RETURN replace(replace(replace(replace(replace(replace(replace(replace(translate(
    regexp_replace(normalize(t, NFD), '[\u0300-\u036f]', '', 'g'),
    'ðÐøØłŁđĐıħĦ', 'dDoOlLdDihH'), 'æ', 'ae'), 'Æ', 'Ae'), 'œ', 'oe'), 'Œ', 'Oe'), 'þ', 'th'), 'Þ', 'Th'),
    'ß', 'ss'), 'ẞ', 'SS');

UPDATE session_entries SET text = text WHERE text ~ '[ßẞħĦ]';
