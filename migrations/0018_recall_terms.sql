-- BM25 for recall: how many lines of a campaign hold each term (of the lines' own tsvector) and how many lines
-- and terms the campaign has. Triggers keep both in step with session_entries in the same transaction as the
-- write, so the ranker never reads an index that is stale, missing or another campaign's.
CREATE TABLE recall_terms (
    campaign_id bigint NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    term text NOT NULL,
    lines integer NOT NULL,
    PRIMARY KEY (campaign_id, term)
);
CREATE TABLE recall_corpus (
    campaign_id bigint PRIMARY KEY REFERENCES campaigns (id) ON DELETE CASCADE,
    lines bigint NOT NULL,
    terms bigint NOT NULL  -- the sum of the lines' lengths (distinct terms of each line's tsvector)
);

-- The corpus row first, terms in order: two writers of one campaign queue on one row instead of deadlocking on two.
-- A term no line holds any more keeps its row at 0 (deleting it would mean a scan per revised line).
CREATE FUNCTION recall_terms_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO recall_corpus AS c (campaign_id, lines, terms)
    SELECT campaign_id, count(*), coalesce(sum(length(tsv)), 0) FROM new_rows GROUP BY 1 ORDER BY 1
    ON CONFLICT (campaign_id) DO UPDATE SET lines = c.lines + EXCLUDED.lines, terms = c.terms + EXCLUDED.terms;
    INSERT INTO recall_terms AS t (campaign_id, term, lines)
    SELECT n.campaign_id, u, count(*) FROM new_rows n, unnest(tsvector_to_array(n.tsv)) u GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (campaign_id, term) DO UPDATE SET lines = t.lines + EXCLUDED.lines;
    RETURN NULL;
END $$;

-- Most updates leave the text alone (a seq kept on conflict, corrections recorded): nothing to count then.
CREATE FUNCTION recall_terms_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM new_rows n JOIN old_rows o USING (id) WHERE n.tsv IS DISTINCT FROM o.tsv) THEN
        RETURN NULL;
    END IF;
    INSERT INTO recall_corpus AS c (campaign_id, lines, terms)
    SELECT n.campaign_id, 0, sum(length(n.tsv) - length(o.tsv))
    FROM new_rows n JOIN old_rows o USING (id) WHERE n.tsv IS DISTINCT FROM o.tsv GROUP BY 1 ORDER BY 1
    ON CONFLICT (campaign_id) DO UPDATE SET terms = c.terms + EXCLUDED.terms;
    INSERT INTO recall_terms AS t (campaign_id, term, lines)
    SELECT campaign_id, term, sum(d) FROM (
        SELECT n.campaign_id, u AS term, 1 AS d
        FROM new_rows n JOIN old_rows o USING (id), unnest(tsvector_to_array(n.tsv)) u
        WHERE n.tsv IS DISTINCT FROM o.tsv
        UNION ALL
        SELECT o.campaign_id, u, -1
        FROM new_rows n JOIN old_rows o USING (id), unnest(tsvector_to_array(o.tsv)) u
        WHERE n.tsv IS DISTINCT FROM o.tsv
    ) x GROUP BY 1, 2 HAVING sum(d) <> 0 ORDER BY 1, 2
    ON CONFLICT (campaign_id, term) DO UPDATE SET lines = t.lines + EXCLUDED.lines;
    RETURN NULL;
END $$;

-- Only rows that remain: a campaign deleted takes its counts with it (ON DELETE CASCADE), nothing is re-created.
CREATE FUNCTION recall_terms_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE recall_corpus c SET lines = c.lines - d.lines, terms = c.terms - d.terms
    FROM (SELECT campaign_id, count(*) AS lines, coalesce(sum(length(tsv)), 0) AS terms FROM old_rows GROUP BY 1) d
    WHERE c.campaign_id = d.campaign_id;
    UPDATE recall_terms t SET lines = t.lines - d.lines
    FROM (SELECT o.campaign_id, u AS term, count(*) AS lines
          FROM old_rows o, unnest(tsvector_to_array(o.tsv)) u GROUP BY 1, 2) d
    WHERE t.campaign_id = d.campaign_id AND t.term = d.term;
    RETURN NULL;
END $$;

CREATE TRIGGER recall_terms_inserted AFTER INSERT ON session_entries
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION recall_terms_inserted();
CREATE TRIGGER recall_terms_updated AFTER UPDATE ON session_entries
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION recall_terms_updated();
CREATE TRIGGER recall_terms_deleted AFTER DELETE ON session_entries
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION recall_terms_deleted();

-- The lines written before this migration.
INSERT INTO recall_corpus (campaign_id, lines, terms)
SELECT campaign_id, count(*), sum(length(tsv)) FROM session_entries GROUP BY campaign_id;
INSERT INTO recall_terms (campaign_id, term, lines)
SELECT e.campaign_id, u, count(*) FROM session_entries e, unnest(tsvector_to_array(e.tsv)) u GROUP BY 1, 2;
