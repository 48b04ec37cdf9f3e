-- A trial's live reports in step order without reading their bodies: workload pages and their
-- totals (`GET /api/v1/trials/{id}/workloads`) are ordered, cut and counted over this index, and
-- only the page's rows are read whole.
CREATE INDEX metrics_trial_live_steps ON metrics (trial_id, archived, metric_group, steps_completed, id);
