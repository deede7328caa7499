-- At most one current (not closed, not rejected) copy of the same fact: two writers checking "does it exist?"
-- at the same moment must not both insert it. Values are hashed so a long value still fits the index.
--
-- A database from before this migration may hold such copies already (writers that raced, a pending fact edited
-- into one already recorded), and the index could not be built. The best copy of each is kept: accepted before
-- pending, the DM's word (DM, campaign file, confirmed) before what was heard at the table, the most confident,
-- then the oldest. The others are folded into it (their provenance, id and status under "merged"; secret if any
-- was) and deleted; facts they had superseded now point to the kept copy.
-- (Edited after release: a database that applied the one-statement version has no copies to fold.)

-- no writer may add a copy between the fold and the index
LOCK TABLE relationships IN SHARE ROW EXCLUSIVE MODE;

CREATE TEMPORARY TABLE fact_copies ON COMMIT DROP AS
SELECT id, keeper FROM (
    SELECT id, first_value(id) OVER copies AS keeper
    FROM relationships
    WHERE valid_to IS NULL AND status <> 'rejected'
    WINDOW copies AS (
        PARTITION BY campaign_id, source_id, type, target_id, value
        -- a missing key reads as the Provenance model's default (source dm, confidence 1)
        ORDER BY status = 'accepted' DESC,
                 (coalesce(provenance ->> 'source', 'dm') IN ('dm', 'campaign_file')
                  OR coalesce(provenance ->> 'dm_confirmed', 'false') = 'true') DESC,
                 coalesce(provenance ->> 'confidence', '1')::double precision DESC,
                 valid_from, id
    )
) ranked
WHERE id <> keeper;

UPDATE relationships k
SET provenance = k.provenance || jsonb_build_object('merged', folded.copies),
    visibility = CASE WHEN folded.secret THEN 'secret' ELSE k.visibility END
FROM (
    SELECT c.keeper,
           jsonb_agg(r.provenance || jsonb_build_object('id', r.id, 'status', r.status) ORDER BY r.id) AS copies,
           bool_or(r.visibility = 'secret') AS secret
    FROM fact_copies c JOIN relationships r ON r.id = c.id
    GROUP BY c.keeper
) folded
WHERE k.id = folded.keeper;

UPDATE relationships r SET superseded_by = c.keeper FROM fact_copies c WHERE r.superseded_by = c.id;

DELETE FROM relationships r USING fact_copies c WHERE r.id = c.id;

CREATE UNIQUE INDEX relationships_one_current_copy ON relationships
    (campaign_id, source_id, type, coalesce(target_id, 0), coalesce(md5(value), ''))
    WHERE valid_to IS NULL AND status <> 'rejected';
