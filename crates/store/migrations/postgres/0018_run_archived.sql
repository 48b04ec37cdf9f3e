-- 0.38's runs API archives a run (a trial) on its own, apart from its experiment
-- (`POST /api/v1/runs/archive`); a run list with `showArchived: false` hides both.
ALTER TABLE trials ADD COLUMN archived BOOLEAN NOT NULL DEFAULT FALSE;
