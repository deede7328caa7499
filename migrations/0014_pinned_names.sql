-- Entities the DM pinned: their names always go into the speech recogniser's prompt, which holds a few dozen of
-- a campaign's names (memory/voice/prompt.py).
ALTER TABLE entities ADD COLUMN pinned boolean NOT NULL DEFAULT false;
