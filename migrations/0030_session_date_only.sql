-- A session given only its day (`ingest --started 2026-03-14`) says so: it is stored at noon UTC, and every place
-- a DM reads its start shows that day alone (memory.models.Session.day_only). Noon UTC was the sign before; a
-- session played from exactly noon UTC is no day alone. The sessions stored at noon UTC before are taken for days
-- given alone, as they were shown.
ALTER TABLE sessions ADD COLUMN date_only boolean NOT NULL DEFAULT false;
UPDATE sessions SET date_only = true WHERE (started_at AT TIME ZONE 'UTC')::time = '12:00';
