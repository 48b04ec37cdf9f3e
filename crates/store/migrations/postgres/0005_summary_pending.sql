-- A metrics writer may leave a trial's summary columns behind its committed metrics for a
-- moment (see store/src/sql/summary_cache.rs); TRUE while it may have. Opening the store
-- re-derives such rows from the metrics table, so a crash in between loses nothing.
ALTER TABLE trials ADD COLUMN summary_pending BOOLEAN NOT NULL DEFAULT FALSE;
