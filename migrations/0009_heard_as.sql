-- What the speech recogniser writes for an entity's name, as the DM taught it ("from skin" is Frumpkin): phrases
-- of ordinary English that no rule can tell from speech, so stage 1 replaces them only because the DM said so.
-- Not aliases: nobody calls the entity that, and players never see them.
CREATE TABLE entity_heard_as (
    campaign_id bigint NOT NULL,
    entity_id bigint NOT NULL,
    phrase text NOT NULL CHECK (length(phrase) BETWEEN 1 AND 200),
    FOREIGN KEY (campaign_id, entity_id) REFERENCES entities (campaign_id, id) ON DELETE CASCADE,
    PRIMARY KEY (entity_id, phrase)
);
CREATE UNIQUE INDEX entity_heard_as_lookup ON entity_heard_as (campaign_id, lower(phrase));
