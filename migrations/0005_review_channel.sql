-- A new item in the review queue (an entity or a fact waiting for the DM) says so on the channel
-- 'lorekeeper_review', its campaign id as payload: the bot posts it to the DM's review channel at once
-- instead of at its next poll. PostgreSQL sends the notification when the transaction commits, and once per
-- campaign however many items the transaction filed.
CREATE FUNCTION lorekeeper_review_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('lorekeeper_review', NEW.campaign_id::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER entities_review_notify AFTER INSERT OR UPDATE OF status ON entities
    FOR EACH ROW WHEN (NEW.status = 'pending') EXECUTE FUNCTION lorekeeper_review_notify();
CREATE TRIGGER relationships_review_notify AFTER INSERT OR UPDATE OF status ON relationships
    FOR EACH ROW WHEN (NEW.status = 'pending') EXECUTE FUNCTION lorekeeper_review_notify();
