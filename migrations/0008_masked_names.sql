-- Names players must not read that no secret entity bears as its name any more: what the log, the recaps and the
-- session titles said stays said. A secret entity's name before it was renamed, and the names the DM merged into a
-- secret entity ("Same as…"), while it stays secret; a removed secret entity's name for good (entity_id NULL).
-- Making the entity public releases them.
CREATE TABLE masked_names (
    campaign_id bigint NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    entity_id bigint,
    name text NOT NULL CHECK (btrim(name) <> ''),
    FOREIGN KEY (campaign_id, entity_id) REFERENCES entities (campaign_id, id) ON DELETE SET NULL (entity_id)
);
CREATE INDEX masked_names_entity ON masked_names (campaign_id, entity_id);
