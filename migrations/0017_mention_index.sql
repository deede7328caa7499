-- The mention index: each line of the log and the entities it names (by name, alias, or a correction that named
-- it, heard-as included). "Mentioned together" was proposed as a fact for review; it is evidence of where a name
-- was said, and this is where it goes: /entity show's "mentioned in", `entity mentions`, recall, the MCP tools.
CREATE TABLE entity_mentions (
    campaign_id bigint NOT NULL,
    entity_id bigint NOT NULL,
    entry_id bigint NOT NULL,
    session_id bigint NOT NULL,
    PRIMARY KEY (campaign_id, entity_id, entry_id),
    FOREIGN KEY (campaign_id, entity_id) REFERENCES entities (campaign_id, id) ON DELETE CASCADE,
    FOREIGN KEY (campaign_id, entry_id) REFERENCES session_entries (campaign_id, id) ON DELETE CASCADE
);
-- A line's mentions are replaced when it is chunked again (its text revised).
CREATE INDEX entity_mentions_entry ON entity_mentions (campaign_id, entry_id);

-- Co-occurrence pairs waiting for review were never facts: they leave the queue (the index above holds their lines).
DELETE FROM relationships WHERE type = 'mentioned_with' AND status = 'pending';
