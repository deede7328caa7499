-- The DM's review channel.
--
-- 1. Which review items have been posted there, one row each: a cursor over created_at cannot tell, because
--    created_at is when the filing transaction began, and a long one (an extraction waiting for its LLM) may
--    commit after items filed later were posted. Rows of decided items stay; they are small and harmless.
CREATE TABLE review_posted (
    campaign_id bigint NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    kind text NOT NULL CHECK (kind IN ('entity', 'fact')),
    item_id bigint NOT NULL,
    posted_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campaign_id, kind, item_id)
);

-- Items a campaign's old time cursor (settings.review_posted_until) had passed were posted already.
INSERT INTO review_posted (campaign_id, kind, item_id)
SELECT e.campaign_id, 'entity', e.id FROM entities e JOIN campaigns c ON c.id = e.campaign_id
WHERE e.status = 'pending' AND c.settings ? 'review_posted_until'
  AND e.created_at <= (c.settings ->> 'review_posted_until')::timestamptz
UNION ALL
SELECT r.campaign_id, 'fact', r.id FROM relationships r JOIN campaigns c ON c.id = r.campaign_id
WHERE r.status = 'pending' AND c.settings ? 'review_posted_until'
  AND r.created_at <= (c.settings ->> 'review_posted_until')::timestamptz;
UPDATE campaigns SET settings = settings - 'review_posted_until' WHERE settings ? 'review_posted_until';

-- 2. A new item in the review queue (an entity or a fact waiting for the DM) says so on the channel
--    'lorekeeper_review', its campaign id as payload: the bot posts it at once instead of at its next poll.
--    PostgreSQL sends the notification when the transaction commits, once per campaign however many items the
--    transaction filed.
CREATE FUNCTION lorekeeper_review_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('lorekeeper_review', NEW.campaign_id::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER entities_review_notify AFTER INSERT ON entities
    FOR EACH ROW WHEN (NEW.status = 'pending') EXECUTE FUNCTION lorekeeper_review_notify();
CREATE TRIGGER entities_review_renotify AFTER UPDATE OF status ON entities
    FOR EACH ROW WHEN (NEW.status = 'pending' AND OLD.status <> 'pending') EXECUTE FUNCTION lorekeeper_review_notify();
CREATE TRIGGER relationships_review_notify AFTER INSERT ON relationships
    FOR EACH ROW WHEN (NEW.status = 'pending') EXECUTE FUNCTION lorekeeper_review_notify();
CREATE TRIGGER relationships_review_renotify AFTER UPDATE OF status ON relationships
    FOR EACH ROW WHEN (NEW.status = 'pending' AND OLD.status <> 'pending') EXECUTE FUNCTION lorekeeper_review_notify();
