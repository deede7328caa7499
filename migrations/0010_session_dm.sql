-- Who ran /session start for a recorded session: the Discord user id whose lines are the DM's (the narrator's) for
-- extraction. A speaker's name is theirs to choose, "DM" too; their user id is not. Imports leave it empty: their
-- speaker names are the DM's own.
ALTER TABLE sessions ADD COLUMN dm_speaker_id text;
