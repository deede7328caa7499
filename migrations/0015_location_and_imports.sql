-- The design's entity type `location`: what older versions stored as `place` is the same thing under its new name
-- (files and commands still accept `place`).
ALTER TABLE entities DROP CONSTRAINT entities_type_check;
UPDATE entities SET type = 'location' WHERE type = 'place';
ALTER TABLE entities ADD CONSTRAINT entities_type_check
    CHECK (type IN ('npc', 'location', 'item', 'faction', 'quest', 'event', 'concept', 'player'));

-- A world imported from a virtual tabletop (Foundry VTT, Roll20, Kanka, CSV) waits here, whole, until the DM
-- accepts or rejects it: nothing of it is in the graph before. `content` is the import as a campaign file.
CREATE TABLE import_batches (
    id bigserial PRIMARY KEY,
    campaign_id bigint NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    format text NOT NULL,
    sources text[] NOT NULL,
    content jsonb NOT NULL,
    entities integer NOT NULL CHECK (entities >= 0),
    relationships integer NOT NULL CHECK (relationships >= 0),
    status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'accepted', 'rejected')),
    created_at timestamptz NOT NULL DEFAULT now(),
    decided_at timestamptz,
    UNIQUE (campaign_id, id)
);
CREATE INDEX import_batches_pending ON import_batches (campaign_id, id) WHERE status = 'pending';
