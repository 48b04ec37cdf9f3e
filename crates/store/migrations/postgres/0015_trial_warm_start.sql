-- The checkpoint a trial started from when it had none of its own: the searcher's
-- `source_trial_id`/`source_checkpoint_uuid`, or a PBT child's parent at the round's end
-- (upstream's `warmStartCheckpointUuid`).
ALTER TABLE trials ADD COLUMN warm_start_checkpoint_uuid TEXT;
