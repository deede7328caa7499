-- Which version of the rules naming who a line mentions (memory.mentions.MENTION_RULES) last read each session's
-- lines whole into the mention index: an upgrade that changes the rules bumps the constant, and the worker indexes
-- the sessions read under older ones again (memory.jobs.chunk.reindex_mentions). The sessions recorded before this
-- migration are read again once (0): the rules changed often before they had a version. A session started from now
-- on says its version (memory.session_log.SessionLog.start_session); one inserted without (a bench's) is taken as
-- read under version 1, this migration's.
ALTER TABLE sessions ADD COLUMN mention_rules integer NOT NULL DEFAULT 0;
ALTER TABLE sessions ALTER COLUMN mention_rules SET DEFAULT 1;
