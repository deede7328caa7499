-- The ids a virtual tabletop gives the records an entity was imported from (a Foundry document, a Roll20
-- character, a Kanka entity), with the name the record had: a re-import finds the entity by them, renamed or not.
-- Not an attribute: players read those. Only an import's own entities have them; kind is the tool's.
CREATE TABLE entity_source_ids (
    campaign_id bigint NOT NULL,
    kind text NOT NULL CHECK (kind IN ('foundry', 'roll20', 'kanka')),
    source_id text NOT NULL CHECK (length(source_id) BETWEEN 1 AND 300),
    entity_id bigint NOT NULL,
    name text NOT NULL,
    PRIMARY KEY (campaign_id, kind, source_id),
    FOREIGN KEY (campaign_id, entity_id) REFERENCES entities (campaign_id, id) ON DELETE CASCADE
);
CREATE INDEX entity_source_ids_entity ON entity_source_ids (campaign_id, entity_id);
