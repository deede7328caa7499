-- At most one current (not closed, not rejected) copy of the same fact: two writers checking "does it exist?"
-- at the same moment must not both insert it. Values are hashed so a long value still fits the index.
CREATE UNIQUE INDEX relationships_one_current_copy ON relationships
    (campaign_id, source_id, type, coalesce(target_id, 0), coalesce(md5(value), ''))
    WHERE valid_to IS NULL AND status <> 'rejected';
