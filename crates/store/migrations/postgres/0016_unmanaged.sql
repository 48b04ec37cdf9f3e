-- Unmanaged (detached) experiments, reported from outside the cluster by the Core API v2
-- (`core_v2.init` off-cluster): the caller's own ids for experiments and trials (re-running a
-- script with the same ids resumes them), and each unmanaged trial's last heartbeat.
ALTER TABLE experiments ADD COLUMN external_experiment_id TEXT;
CREATE UNIQUE INDEX experiments_external_experiment_id ON experiments (external_experiment_id);
ALTER TABLE trials ADD COLUMN external_trial_id TEXT;
CREATE UNIQUE INDEX trials_external_trial_id ON trials (experiment_id, external_trial_id);
ALTER TABLE trials ADD COLUMN last_activity TIMESTAMPTZ;
