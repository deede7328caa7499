-- What the speech recogniser writes that is never an entity's name, though stage 1 may hear it so ("manta ray" is
-- not Mentiri), as the DM taught it: stage 1 and 2 never correct such a span to that entity (another entity may
-- still be heard there). The opposite of entity_heard_as; ordinary English is what it protects. One phrase may be
-- refused to several entities.
CREATE TABLE entity_not_heard_as (
    campaign_id bigint NOT NULL,
    entity_id bigint NOT NULL,
    phrase text NOT NULL CHECK (length(phrase) BETWEEN 1 AND 200),
    FOREIGN KEY (campaign_id, entity_id) REFERENCES entities (campaign_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX entity_not_heard_as_phrase ON entity_not_heard_as (entity_id, lower(phrase));
CREATE INDEX entity_not_heard_as_campaign ON entity_not_heard_as (campaign_id);
