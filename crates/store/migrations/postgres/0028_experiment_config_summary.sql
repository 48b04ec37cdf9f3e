-- The few config fields a list row shows (searcher name/metric/direction, resource pool,
-- hyperparameters), in the config's own shape, written with the config (`config_summary.rs`):
-- a list reads ~100 bytes per row for them instead of scanning ~2 KB of config text. NULL for
-- rows written before this column; opening the store fills those (`backfill_config_summaries`),
-- and reads fall back to the config itself meanwhile (same shape, same answer).
ALTER TABLE experiments ADD COLUMN config_summary TEXT;
