//! Moving a job to another resource pool (`POST /api/v1/job-queues` `resourcePool`, the upstream
//! CLI's `det job update JOB --resource-pool POOL`). As upstream's `ChangeRP`: the experiment's
//! config takes the new pool (stored, so later trials and a restarted master keep it), queued
//! trial allocations are requeued there at once, and running ones are told to stop gracefully
//! (the preemption signal: checkpoint and exit); they resume in the new pool without counting a
//! restart. Only experiments move: a command or other task is refused, as it cannot checkpoint.

use super::job_queue::JobQueueError;
use super::orchestrator::Orchestrator;

impl Orchestrator {
    /// Moves `job_id` (the job of `experiment`, if it is one) to `pool`, which the caller has
    /// checked exists.
    pub(super) async fn move_job_to_pool(&mut self, job_id: &str, experiment: Option<i32>, pool: &str) -> Result<(), JobQueueError> {
        let Some(experiment_id) = experiment else {
            if self.rm.job_queue().iter().any(|j| j.job_id == job_id) {
                return Err(JobQueueError::Invalid(format!(
                    "job {job_id} is not an experiment's: only experiments move to another resource pool (a command, notebook, shell or \
                     TensorBoard cannot checkpoint); kill it and launch it again in resource pool {pool}"
                )));
            }
            return Err(JobQueueError::NotFound(format!(
                "job {job_id} not found: it is not an active experiment's job nor queued or running"
            )));
        };
        let failed = |e: super::orchestrator::LoopError| {
            JobQueueError::Invalid(format!("job {job_id}: moving it to resource pool {pool} failed: {e}"))
        };
        self.store_experiment_pool(experiment_id, pool).await.map_err(failed)?;
        let trials: Vec<(i32, String)> = self
            .trials
            .iter()
            .filter(|(_, t)| t.experiment_id == experiment_id)
            .filter_map(|(id, t)| t.allocation.clone().map(|a| (*id, a)))
            .collect();
        for (trial_id, allocation_id) in trials {
            if self.is_started(&allocation_id) {
                tracing::info!(trial = trial_id, allocation = %allocation_id, pool, "resource pool changed; preempting the running trial");
                self.preempt_allocation(&allocation_id);
                continue;
            }
            self.drop_queued_trial_allocation(trial_id, &allocation_id).await.map_err(failed)?;
            if self.trials.get(&trial_id).is_some_and(super::trial::runs::TrialRun::may_run) {
                self.request_trial_allocation(trial_id).await.map_err(failed)?;
            }
        }
        tracing::info!(experiment = experiment_id, job = job_id, pool, "experiment moved to another resource pool");
        Ok(())
    }

    /// Records the experiment's new `resources.resource_pool` in its stored and in-memory config.
    async fn store_experiment_pool(&mut self, experiment_id: i32, pool: &str) -> super::orchestrator::LoopResult<()> {
        let Some(exp) = self.experiments.get_mut(&experiment_id) else { return Ok(()) };
        let resources = &mut exp.config_json["resources"];
        if !resources.is_object() {
            *resources = serde_json::json!({});
        }
        resources["resource_pool"] = pool.into();
        exp.config.resources.resource_pool = pool.to_owned();
        let config = exp.config_json.clone();
        self.store.set_experiment_config(experiment_id, &config).await?;
        Ok(())
    }
}
