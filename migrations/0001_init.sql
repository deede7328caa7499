-- The three memory layers, every row scoped by campaign.
-- Child rows reference their parents through (campaign_id, id) pairs, so a row can never point into
-- another campaign: isolation holds in the schema, not only in the queries.
-- {embedding_dim} is fixed when the schema is first created (see memory/db.py).

CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE campaigns (
    id bigserial PRIMARY KEY,
    guild_id bigint NOT NULL DEFAULT 0,          -- 0: campaigns made on the command line
    name text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    description text NOT NULL DEFAULT '',
    system text NOT NULL DEFAULT '',
    active boolean NOT NULL DEFAULT false,
    settings jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX campaigns_guild_name ON campaigns (guild_id, lower(name));
CREATE UNIQUE INDEX campaigns_one_active ON campaigns (guild_id) WHERE active;

CREATE TABLE sessions (
    id bigserial PRIMARY KEY,
    campaign_id bigint NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    title text NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    ended_at timestamptz,
    summary text,
    UNIQUE (campaign_id, id)
);
CREATE UNIQUE INDEX sessions_campaign_title ON sessions (campaign_id, lower(title));

-- L1: the session log.
CREATE TABLE session_entries (
    id bigserial PRIMARY KEY,
    campaign_id bigint NOT NULL,
    session_id bigint NOT NULL,
    seq integer NOT NULL,                        -- order within the session
    speaker text NOT NULL,
    speaker_id text,
    raw_text text NOT NULL,
    text text NOT NULL,                          -- corrected
    start_s double precision NOT NULL DEFAULT 0, -- seconds from the session start
    end_s double precision,
    duration_s double precision GENERATED ALWAYS AS (end_s - start_s) STORED,
    ref text,                                    -- source reference: transcript line, audio offset …
    corrections jsonb NOT NULL DEFAULT '[]',
    created_at timestamptz NOT NULL DEFAULT now(),
    tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
    FOREIGN KEY (campaign_id, session_id) REFERENCES sessions (campaign_id, id) ON DELETE CASCADE,
    UNIQUE (campaign_id, session_id, seq),
    UNIQUE (campaign_id, id)
);
CREATE INDEX session_entries_time ON session_entries (campaign_id, session_id, start_s);
CREATE INDEX session_entries_speaker ON session_entries (campaign_id, lower(speaker));
CREATE INDEX session_entries_tsv ON session_entries USING gin (tsv);

-- L3: the knowledge graph.
CREATE TABLE entities (
    id bigserial PRIMARY KEY,
    campaign_id bigint NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    type text NOT NULL
        CHECK (type IN ('npc', 'place', 'item', 'faction', 'quest', 'event', 'concept', 'player')),
    name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    description text NOT NULL DEFAULT '',
    attributes jsonb NOT NULL DEFAULT '{}',
    visibility text NOT NULL DEFAULT 'public' CHECK (visibility IN ('public', 'secret')),
    status text NOT NULL DEFAULT 'accepted' CHECK (status IN ('accepted', 'pending', 'rejected')),
    provenance jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (campaign_id, id)
);
-- A rejected proposal keeps its row (so it is not proposed again) but not the name.
CREATE UNIQUE INDEX entities_name ON entities (campaign_id, lower(name)) WHERE status <> 'rejected';
CREATE INDEX entities_type ON entities (campaign_id, type);
CREATE INDEX entities_pending ON entities (campaign_id, created_at) WHERE status = 'pending';

CREATE TABLE entity_aliases (
    campaign_id bigint NOT NULL,
    entity_id bigint NOT NULL,
    alias text NOT NULL CHECK (length(alias) BETWEEN 1 AND 200),
    FOREIGN KEY (campaign_id, entity_id) REFERENCES entities (campaign_id, id) ON DELETE CASCADE,
    PRIMARY KEY (entity_id, alias)
);
CREATE UNIQUE INDEX entity_aliases_lookup ON entity_aliases (campaign_id, lower(alias));

CREATE TABLE relationships (
    id bigserial PRIMARY KEY,
    campaign_id bigint NOT NULL,
    source_id bigint NOT NULL,
    type text NOT NULL CHECK (length(type) BETWEEN 1 AND 100),
    target_id bigint,                            -- NULL for an attribute fact, which has a value
    value text,
    attributes jsonb NOT NULL DEFAULT '{}',
    visibility text NOT NULL DEFAULT 'public' CHECK (visibility IN ('public', 'secret')),
    status text NOT NULL DEFAULT 'accepted' CHECK (status IN ('accepted', 'pending', 'rejected')),
    provenance jsonb NOT NULL DEFAULT '{}',
    valid_from timestamptz NOT NULL DEFAULT now(),
    valid_to timestamptz,                        -- closed when a contradicting fact is accepted
    superseded_by bigint REFERENCES relationships (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (campaign_id, source_id) REFERENCES entities (campaign_id, id) ON DELETE CASCADE,
    FOREIGN KEY (campaign_id, target_id) REFERENCES entities (campaign_id, id) ON DELETE CASCADE,
    CHECK ((target_id IS NULL) <> (value IS NULL))
);
CREATE INDEX relationships_source ON relationships (campaign_id, source_id) WHERE valid_to IS NULL;
CREATE INDEX relationships_target ON relationships (campaign_id, target_id) WHERE valid_to IS NULL;
CREATE INDEX relationships_pending ON relationships (campaign_id, created_at) WHERE status = 'pending';

-- L2: the semantic index.
CREATE TABLE chunks (
    id bigserial PRIMARY KEY,
    campaign_id bigint NOT NULL,
    session_id bigint NOT NULL,
    key text NOT NULL,                           -- identity of the window; upserts replace by key
    text text NOT NULL,
    content_hash text NOT NULL,
    embedding vector({embedding_dim}) NOT NULL,
    entry_ids bigint[] NOT NULL DEFAULT '{}',
    speakers text[] NOT NULL DEFAULT '{}',
    entity_ids bigint[] NOT NULL DEFAULT '{}',
    topics text[] NOT NULL DEFAULT '{}',
    start_s double precision,
    end_s double precision,
    created_at timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (campaign_id, session_id) REFERENCES sessions (campaign_id, id) ON DELETE CASCADE,
    UNIQUE (campaign_id, key)
);
CREATE INDEX chunks_embedding ON chunks USING hnsw (embedding vector_cosine_ops);
CREATE INDEX chunks_session ON chunks (campaign_id, session_id, start_s);
CREATE INDEX chunks_entities ON chunks USING gin (entity_ids);
