-- An irregular verb's forms match one another: "who died?" finds "she is dead" and "the death of", "who gave"
-- finds "given", "what did we find" finds "found". The English stemmer makes "die" of "died" and "dying" but
-- leaves "dead", "gave", "found" apart. As migration 0024 does for irregular plurals, searchable() now writes
-- such a form as its base verb, one word for one word (a tsvector's positions stay where they were); "slain" and
-- "slew" as "kill", the word a table asks with. Left out: forms that are as often another word ("left", "rose",
-- "wound", "bound", "ground", "won" of "won't", "bit", "tore", "bore").
CREATE FUNCTION irregular_verbs(t text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
RETURN coalesce((
    SELECT string_agg(coalesce(f.forms ->> lower(x.w[1]), x.w[1]), '' ORDER BY x.n)
    FROM regexp_matches(t, '(\w+|\W+)', 'g') WITH ORDINALITY AS x(w, n), (SELECT '{
    "dead":"die","death":"die","deaths":"die","slain":"kill","slew":"kill","slay":"kill","slays":"kill",
    "slayed":"kill","slaying":"kill","gave":"give","given":"give","took":"take","taken":"take","found":"find",
    "stole":"steal","stolen":"steal","fought":"fight","caught":"catch","brought":"bring","bought":"buy",
    "thought":"think","taught":"teach","sought":"seek","told":"tell","sold":"sell","spoke":"speak",
    "spoken":"speak","broke":"break","broken":"break","chose":"choose","chosen":"choose","drove":"drive",
    "driven":"drive","wrote":"write","written":"write","rode":"ride","ridden":"ride","ate":"eat","eaten":"eat",
    "fled":"flee","froze":"freeze","frozen":"freeze","hid":"hide","hidden":"hide","knew":"know","known":"know",
    "threw":"throw","thrown":"throw","grew":"grow","grown":"grow","flew":"fly","flown":"fly","drew":"draw",
    "drawn":"draw","began":"begin","begun":"begin","sang":"sing","sung":"sing","drank":"drink","drunk":"drink",
    "sank":"sink","sunk":"sink","ran":"run","came":"come","became":"become","went":"go","gone":"go","saw":"see",
    "seen":"see","met":"meet","led":"lead","held":"hold","stood":"stand","understood":"understand","sat":"sit",
    "sent":"send","spent":"spend","lost":"lose","struck":"strike","swore":"swear","sworn":"swear","wore":"wear",
    "worn":"wear","woke":"wake","woken":"wake","forgot":"forget","forgotten":"forget","forgave":"forgive",
    "forgiven":"forgive","got":"get","gotten":"get","made":"make","said":"say","paid":"pay","laid":"lay",
    "heard":"hear","overheard":"overhear","kept":"keep","slept":"sleep","felt":"feel","fell":"fall",
    "fallen":"fall","risen":"rise","shook":"shake","shaken":"shake","bitten":"bite","hung":"hang","shot":"shoot",
    "built":"build","dug":"dig","leapt":"leap","knelt":"kneel","bled":"bleed","fed":"feed","meant":"mean",
    "dealt":"deal","lit":"light","swam":"swim","swum":"swim","swung":"swing","sprang":"spring","sprung":"spring",
    "smote":"smite","smitten":"smite","forbade":"forbid","forbidden":"forbid","withdrew":"withdraw",
    "withdrawn":"withdraw","undertook":"undertake","undertaken":"undertake"
    }'::jsonb AS forms) f
), t);

-- What a quoted phrase is matched against, word for word: the text without invisible characters, as written
-- (searchable()'s base forms are for the stemmed index: '"he said"' is no "he say").
CREATE FUNCTION visible(t text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
RETURN regexp_replace(t, '[\u00AD\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]', '', 'g');

CREATE OR REPLACE FUNCTION searchable(t text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
RETURN irregular_verbs(singular_plurals(visible(t)));

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
