//! The trial kind's allocations: what a trial asks the resource manager for, the process it starts
//! on each placement (see `task_env`), and what its allocation's end means (see `exit`).

use std::sync::Arc;

use base64::Engine as _;
use resolute_api::agent_protocol::StartTask;

use super::exit::{ExitFacts, TrialOutcome, decide};
use super::task_env::{TrialLaunch, trial_start_task};
use crate::auth::allocation_tokens::issue_allocation_token;
use crate::cluster::allocations::{AllocationEnd, AllocationOwner};
use crate::cluster::orchestrator::{LoopError, LoopResult, Orchestrator};
use crate::cluster::rm::{Placement, ResourceRequest};
use crate::domain::{ACTIVE_STATE_NAMES, ExperimentState, TrialState};

impl Orchestrator {
    /// Queues the trial's next run with the resource manager.
    pub(in crate::cluster) async fn request_trial_allocation(&mut self, trial_id: i32) -> LoopResult<()> {
        if self.trials.get(&trial_id).is_none_or(|t| t.allocation.is_some()) {
            return Ok(());
        }
        let Some(request) = self.trial_resource_request(trial_id) else { return Ok(()) };
        let allocation_id = request.allocation_id.clone();
        let max_slots = request.max_slots;
        let job_id = request.job_id.clone();
        self.request_allocation(AllocationOwner::Trial(trial_id), request).await?;
        if let Some(max_slots) = max_slots {
            // The job's cap lives with its queued requests: set again with each.
            let update = crate::cluster::rm::JobUpdate { max_slots: Some(Some(max_slots)), ..Default::default() };
            self.rm.update_job(&job_id, &update)?;
        }
        if let Some(t) = self.trials.get_mut(&trial_id) {
            t.allocation = Some(allocation_id);
        }
        Ok(())
    }

    /// What the trial's current run asks the resource manager for; its allocation id is
    /// `<task id>.<run id>`.
    pub(in crate::cluster) fn trial_resource_request(&self, trial_id: i32) -> Option<ResourceRequest> {
        let trial = self.trials.get(&trial_id)?;
        let exp = self.experiments.get(&trial.experiment_id)?;
        let resources = &exp.config.resources;
        Some(ResourceRequest {
            allocation_id: format!("{}.{}", trial.task_id, trial.run_id),
            task_id: trial.task_id.clone(),
            job_id: exp.job_id.clone(),
            pool: exp.resource_pool(),
            slots: exp.slots(),
            priority: resources.priority.map(u32::from),
            weight: resources.weight,
            max_slots: resources.max_slots,
            preemptible: true,
            excluded_nodes: trial.log_policy.excluded_nodes.iter().cloned().collect(),
        })
    }

    /// Forgets the trial's allocation if it is still queued. The trial moves to its next run, so
    /// a later request (an activate right after a pause) gets a fresh allocation id instead of
    /// the one the store already holds.
    pub(in crate::cluster) async fn drop_queued_trial_allocation(&mut self, trial_id: i32, allocation_id: &str) -> LoopResult<()> {
        self.drop_queued_allocation(allocation_id).await?;
        if let Some(t) = self.trials.get_mut(&trial_id) {
            t.allocation = None;
        } else {
            return Ok(());
        }
        self.next_run(trial_id, false).await
    }

    /// One harness process per placement, each with the trial's environment and a fresh token.
    pub(in crate::cluster) async fn trial_start_tasks(
        &mut self,
        trial_id: i32,
        allocation_id: &str,
        placements: &[Placement],
    ) -> LoopResult<Vec<(Placement, StartTask)>> {
        let (experiment_id, run_id, seed, task_id, hparams, warm_start, parent) = {
            let t = self.trials.get(&trial_id).ok_or_else(|| LoopError::Other("unknown trial".into()))?;
            (t.experiment_id, t.run_id, t.seed, t.task_id.clone(), t.hparams.clone(), t.warm_start.clone(), t.warm_start_parent)
        };
        // The trial starts now, unless an earlier run of it was already placed; the run resumes
        // from the trial's own checkpoint, else its warm start (`warm_start.rs`). A PBT child
        // continues its parent's training clock; a trial warm-started from `searcher.source_*`
        // starts its own at 0, as upstream's.
        let start = self.store.start_trial_run(trial_id, resolute_store::db_now()).await?;
        let (latest_checkpoint, steps_completed) = match start.latest_checkpoint_uuid {
            Some(own) => (Some(own), start.latest_checkpoint_steps.unwrap_or(0)),
            None => {
                let steps = match (&warm_start, parent.is_some()) {
                    (Some(uuid), true) => self.store.checkpoint_by_uuid(uuid).await.map(|c| c.steps_completed).unwrap_or(0),
                    _ => 0,
                };
                (warm_start, steps)
            }
        };
        let model_b64 = self.model_definition(experiment_id).await?;
        let token = issue_allocation_token(self.store.as_ref(), allocation_id).await?;
        let exp = self.experiments.get(&experiment_id).ok_or_else(|| LoopError::Other("unknown experiment".into()))?;
        let mut tasks = Vec::new();
        for placement in placements {
            let container_id = uuid::Uuid::new_v4().to_string();
            let start = trial_start_task(&TrialLaunch {
                cluster_id: &self.identity.cluster_id,
                master_id: &self.identity.master_id,
                experiment_id,
                trial_id,
                trial_run_id: run_id,
                trial_seed: seed,
                hparams: &hparams,
                config: &exp.config,
                config_json: &exp.config_json,
                task_id: &task_id,
                allocation_id,
                container_id: &container_id,
                session_token: &token,
                user: &exp.owner,
                latest_checkpoint: latest_checkpoint.as_deref(),
                steps_completed,
                slot_ids: placement.slot_ids.clone(),
                device_type: &placement.device_type,
                model_definition_b64: model_b64.as_ref().clone(),
            })
            .map_err(|e| LoopError::Other(e.to_string()))?;
            tasks.push((placement.clone(), start));
        }
        if let Some(t) = self.trials.get_mut(&trial_id) {
            t.log_policy.placed_on = placements.iter().map(|p| p.node.clone()).collect();
        }
        tracing::info!(trial = trial_id, allocation = allocation_id, "launching trial");
        Ok(tasks)
    }

    async fn model_definition(&mut self, experiment_id: i32) -> LoopResult<Arc<String>> {
        if let Some(cached) = self.experiments.get(&experiment_id).and_then(|e| e.model_definition_b64.clone()) {
            return Ok(cached);
        }
        let bytes = self.store.experiment_model_definition(experiment_id).await?;
        let encoded = Arc::new(base64::engine::general_purpose::STANDARD.encode(bytes));
        if let Some(e) = self.experiments.get_mut(&experiment_id) {
            e.model_definition_b64 = Some(encoded.clone());
        }
        Ok(encoded)
    }

    /// The trial's allocation ended: decide (`exit::decide`) and carry out what follows.
    pub(in crate::cluster) async fn trial_allocation_ended(&mut self, trial_id: i32, end: AllocationEnd) -> LoopResult<()> {
        let Some(trial) = self.trials.get_mut(&trial_id) else { return Ok(()) };
        trial.allocation = None;
        let experiment_id = trial.experiment_id;
        let experiment_state = self.experiments.get(&experiment_id).map_or(ExperimentState::Canceled, |e| e.state);
        let max_restarts = self.experiments.get(&experiment_id).map_or(0, |e| e.config.max_restarts);
        let facts = ExitFacts {
            succeeded: end.succeeded,
            failure: end.failure.clone(),
            experiment: experiment_state,
            trial_killed: trial.killed,
            searcher_stopped: trial.searcher_stopped,
            preempted: end.preempted,
            invalid_hp: trial.invalid_hp,
            restarts: trial.restarts,
            max_restarts,
            cancel_retries: trial.log_policy.cancel_retries.clone(),
        };
        let outcome = decide(&facts);
        tracing::info!(trial = trial_id, allocation = %end.allocation_id, ?outcome, "trial run ended");
        let ops = match outcome {
            TrialOutcome::Completed | TrialOutcome::InvalidHp => self.end_trial(trial_id, TrialState::Completed).await?,
            TrialOutcome::Canceled => self.end_trial(trial_id, TrialState::Canceled).await?,
            TrialOutcome::Errored { reason } => {
                self.store.set_trial_end_reason(trial_id, Some(&reason)).await?;
                self.end_trial(trial_id, TrialState::Error).await?
            }
            TrialOutcome::Paused => {
                self.next_run(trial_id, false).await?;
                self.set_trial_state_if(trial_id, &ACTIVE_STATE_NAMES, TrialState::Paused).await?;
                Vec::new()
            }
            TrialOutcome::Restart { failed } => {
                if failed {
                    tracing::warn!(trial = trial_id, failure = ?end.failure, "trial failed; restarting from its latest checkpoint");
                }
                self.next_run(trial_id, failed).await?;
                // A PBT member held at a round's end is queued again when the round is decided.
                if self.trials.get(&trial_id).is_some_and(super::runs::TrialRun::may_run) {
                    self.request_trial_allocation(trial_id).await?;
                }
                Vec::new()
            }
        };
        self.apply_operations(experiment_id, ops).await
    }

    /// Moves a trial to `to` in the store, if it is still in one of the states named `from`.
    pub(in crate::cluster) async fn set_trial_state_if(&mut self, trial_id: i32, from: &[&str], to: TrialState) -> LoopResult<bool> {
        // Over the substate the loop last wrote: the next sync writes it again (a pause and an
        // activate in one batch of events leave a new allocation in the same substate).
        self.display.forget_trial(trial_id);
        Ok(self.store.update_trial_state_if(trial_id, from, to.as_str(), None).await?)
    }

    /// Moves the trial to its next run; metrics the ended run reported past the checkpoint the
    /// next one restores are archived, so they are not counted twice.
    pub(in crate::cluster) async fn next_run(&mut self, trial_id: i32, failed: bool) -> LoopResult<()> {
        let record = if failed { self.store.record_trial_restart(trial_id).await? } else { self.store.advance_trial_run(trial_id).await? };
        let restored_steps = match &record.latest_checkpoint_uuid {
            Some(uuid) => self.store.checkpoint_by_uuid(uuid).await.map(|c| c.steps_completed).unwrap_or(0),
            None => 0,
        };
        self.store.archive_metrics_after(trial_id, record.run_id, restored_steps, None).await?;
        if let Some(t) = self.trials.get_mut(&trial_id) {
            t.run_id = record.run_id;
            t.restarts = u32::try_from(record.restarts).unwrap_or(0);
        }
        Ok(())
    }
}
