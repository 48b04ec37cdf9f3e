//! The job queue in the loop: publishing every pool's jobs (with their owner and why each waits)
//! for the HTTP layer, noting in a trial's logs once why its allocation waits, and applying
//! job-queue changes (`POST /api/v1/job-queues`, `det experiment set priority|weight|max-slots`)
//! as the single writer: the scheduler's queue changes, and an experiment's stored config follows
//! (`resources.priority|weight|max_slots`) so its next trials, `det experiment describe` and a
//! restarted master keep it; a command-like task's priority is stored with the task.

use resolute_scheduler::{MAX_PRIORITY, MIN_PRIORITY};
use resolute_store::{NewLogLine, db_now};

use super::allocations::AllocationOwner;
use super::orchestrator::{LoopError, LoopResult, Orchestrator};
use super::rm::{JobQueueView, JobUpdate};
use crate::domain::TaskType;

/// Whose job it is.
#[derive(Clone, Debug, PartialEq)]
pub enum JobOwner {
    Experiment(i32),
    /// A command, notebook, shell, TensorBoard or generic task.
    Task {
        task_id: String,
        task_type: TaskType,
    },
}

/// One job of the queue as the HTTP layer shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct QueuedJob {
    pub queue: JobQueueView,
    /// `None` for a job whose owner the loop no longer tracks (ending).
    pub owner: Option<JobOwner>,
}

/// Why the loop refused a job-queue change; the message names the job and the field.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum JobQueueError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Invalid(String),
}

/// One change of `POST /api/v1/job-queues`, for one job.
#[derive(Clone, Debug)]
pub struct JobQueueChange {
    pub job_id: String,
    pub update: JobUpdate,
}

impl Orchestrator {
    /// Every pool's jobs in scheduling order with their owners.
    pub(super) fn queued_jobs(&self) -> Vec<QueuedJob> {
        self.rm
            .job_queue()
            .into_iter()
            .map(|queue| {
                let owner = queue.allocations.first().and_then(|a| self.allocations.get(a)).and_then(|a| match &a.owner {
                    AllocationOwner::Trial(trial_id) => self.trials.get(trial_id).map(|t| JobOwner::Experiment(t.experiment_id)),
                    AllocationOwner::Task(task_id) => {
                        self.commands.get(task_id).map(|c| JobOwner::Task { task_id: task_id.clone(), task_type: c.task_type })
                    }
                });
                QueuedJob { queue, owner }
            })
            .collect()
    }

    /// Writes, once per allocation, why a trial's allocation waits into the trial's logs.
    pub(super) async fn log_wait_reasons(&mut self, jobs: &[QueuedJob]) {
        let mut lines = Vec::new();
        for job in jobs {
            let Some(reason) = &job.queue.wait_reason else { continue };
            for allocation_id in &job.queue.allocations {
                let Some(AllocationOwner::Trial(trial_id)) = self.allocations.get(allocation_id).map(|a| a.owner.clone()) else {
                    continue;
                };
                if self.is_started(allocation_id) || !self.waits_logged.insert(allocation_id.clone()) {
                    continue;
                }
                let Some(trial) = self.trials.get(&trial_id) else { continue };
                lines.push(NewLogLine {
                    task_id: trial.task_id.clone(),
                    allocation_id: Some(allocation_id.clone()),
                    agent_id: None,
                    container_id: None,
                    rank_id: None,
                    timestamp: db_now(),
                    level: Some("LOG_LEVEL_INFO".to_owned()),
                    log: format!("waiting for resources in resource pool {}: {reason}\n", job.queue.pool),
                    source: Some("master".to_owned()),
                    stdtype: Some("stdout".to_owned()),
                });
            }
        }
        self.waits_logged.retain(|a| self.allocations.contains_key(a));
        if !lines.is_empty()
            && let Err(e) = self.store.insert_logs(&lines).await
        {
            tracing::warn!(error = %e, "could not store why trials wait for resources");
        }
    }

    /// Applies job-queue changes in order; the first that cannot be applied stops the rest and
    /// says why (naming the job and the field).
    pub(super) async fn change_job_queue(&mut self, changes: Vec<JobQueueChange>) -> Result<(), JobQueueError> {
        for change in changes {
            self.change_job(&change).await?;
        }
        Ok(())
    }

    async fn change_job(&mut self, change: &JobQueueChange) -> Result<(), JobQueueError> {
        use JobQueueError::{Invalid, NotFound};
        let JobQueueChange { job_id, update } = change;
        if let Some(priority) = update.priority
            && !(MIN_PRIORITY..=MAX_PRIORITY).contains(&priority)
        {
            return Err(Invalid(format!(
                "priority {priority} for job {job_id} is out of range: use {MIN_PRIORITY} (highest) to {MAX_PRIORITY} (lowest)"
            )));
        }
        if let Some(weight) = update.weight
            && !(weight.is_finite() && weight > 0.0)
        {
            return Err(Invalid(format!("weight {weight} for job {job_id} is invalid: use a number greater than 0")));
        }
        if update.max_slots == Some(Some(0)) {
            return Err(Invalid(format!("max_slots 0 for job {job_id} would never let it run: use 1 or more")));
        }
        let queued = self.rm.job_queue();
        let experiment = self.experiments.values().find(|e| &e.job_id == job_id).map(|e| e.id);
        if let Some(pool) = &update.resource_pool {
            return self.move_job_to_pool(job_id, experiment, pool).await;
        }
        if experiment.is_none() && !queued.iter().any(|j| &j.job_id == job_id) {
            return Err(NotFound(format!("job {job_id} not found: it is not an active experiment's job nor queued or running")));
        }
        if let Some((_, anchor)) = &update.position
            && !queued.iter().any(|j| &j.job_id == anchor)
        {
            return Err(NotFound(format!("job {anchor} (the job to move {job_id} next to) is not queued or running")));
        }
        if let Some((_, anchor)) = &update.position
            && !queued.iter().any(|j| &j.job_id == job_id)
        {
            return Err(Invalid(format!("job {job_id} has nothing queued or running to move next to job {anchor}")));
        }
        self.rm.update_job(job_id, update).map_err(|e| Invalid(format!("job {job_id}: {e}")))?;
        // A move takes the anchor's priority: store the priority the scheduler now has.
        let priority = match update.position {
            Some(_) => self.rm.job_queue().iter().find(|j| &j.job_id == job_id).map(|j| j.priority).or(update.priority),
            None => update.priority,
        };
        if let Some(experiment_id) = experiment {
            self.store_experiment_resources(experiment_id, priority, update.weight, update.max_slots)
                .await
                .map_err(|e| Invalid(format!("job {job_id}: storing the experiment's new resources failed: {e}")))?;
        } else if let Some(priority) = priority {
            self.store_command_priority(job_id, priority)
                .await
                .map_err(|e| Invalid(format!("job {job_id}: storing the task's new priority failed: {e}")))?;
        }
        Ok(())
    }

    /// Records a command-like task's new priority (as `det command set priority` does), so its
    /// next allocation and a restarted master queue it with that priority. Weight and `max_slots`
    /// of a task live only in the scheduler, as upstream's.
    async fn store_command_priority(&mut self, job_id: &str, priority: u32) -> LoopResult<()> {
        let Some(task_id) = self.commands.iter().find(|(_, c)| c.job_id == job_id).map(|(id, _)| id.clone()) else { return Ok(()) };
        let priority = i32::try_from(priority).map_err(|_| LoopError::Other(format!("priority {priority} is out of range")))?;
        self.store.set_command_task_priority(&task_id, priority).await?;
        Ok(())
    }

    /// Records `resources` changes in the experiment's stored and in-memory config, so its next
    /// trials ask for them and a restarted master keeps them.
    async fn store_experiment_resources(
        &mut self,
        experiment_id: i32,
        priority: Option<u32>,
        weight: Option<f64>,
        max_slots: Option<Option<u32>>,
    ) -> LoopResult<()> {
        let Some(exp) = self.experiments.get_mut(&experiment_id) else { return Ok(()) };
        if priority.is_none() && weight.is_none() && max_slots.is_none() {
            return Ok(());
        }
        let resources = &mut exp.config_json["resources"];
        if !resources.is_object() {
            *resources = serde_json::json!({});
        }
        if let Some(priority) = priority {
            resources["priority"] = priority.into();
            exp.config.resources.priority = u8::try_from(priority).ok();
        }
        if let Some(weight) = weight {
            resources["weight"] = serde_json::json!(weight);
            exp.config.resources.weight = weight;
        }
        if let Some(max_slots) = max_slots {
            resources["max_slots"] = max_slots.map_or(serde_json::Value::Null, Into::into);
            exp.config.resources.max_slots = max_slots;
        }
        let config = exp.config_json.clone();
        self.store.set_experiment_config(experiment_id, &config).await?;
        Ok(())
    }
}
