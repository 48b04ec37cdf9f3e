//! A trial's allocations: queueing one, launching it on the agents the scheduler chose, and what
//! its end means (see `exit`).

use std::sync::Arc;

use base64::Engine as _;
use resolute_api::agent_protocol::{MasterToAgent, TaskExitInfo};
use resolute_scheduler::{AllocationRequest, Placement};
use resolute_store::{AllocationPatch, NewAllocation, db_now};

use super::exit::{ExitFacts, TrialOutcome, decide};
use super::orchestrator::{LoopError, LoopResult, Orchestrator};
use super::runs::{AllocationRun, ContainerRun};
use super::task_env::{TrialLaunch, trial_start_task};
use crate::services::experiment_state::ExperimentState;

impl Orchestrator {
    /// Queues the trial's next run with the scheduler.
    pub(super) async fn request_allocation(&mut self, trial_id: i32) -> LoopResult<()> {
        let Some(trial) = self.trials.get(&trial_id) else { return Ok(()) };
        if trial.allocation.is_some() {
            return Ok(());
        }
        let Some(exp) = self.experiments.get(&trial.experiment_id) else { return Ok(()) };
        let allocation_id = format!("{}.{}", trial.task_id, trial.run_id);
        let pool = exp.resource_pool();
        let resources = &exp.config.resources;
        let request =
            AllocationRequest::new(allocation_id.as_str(), trial.task_id.as_str(), exp.job_id.as_str(), pool.as_str(), exp.slots(), {
                self.tick += 1;
                resolute_scheduler::LogicalTime(self.tick)
            })
            .with_priority(resources.priority.map_or(resolute_scheduler::DEFAULT_PRIORITY, u32::from))
            .with_weight(resources.weight);
        self.store
            .create_allocation(NewAllocation {
                allocation_id: allocation_id.clone(),
                task_id: trial.task_id.clone(),
                state: "STATE_QUEUED".into(),
                slots: i32::try_from(exp.slots()).unwrap_or(i32::MAX),
                resource_pool: pool.clone(),
                agent_id: None,
                start_time: db_now(),
            })
            .await?;
        self.pool(&pool).submit(request)?;
        self.handle.signals().register(&allocation_id);
        self.allocations.insert(
            allocation_id.clone(),
            AllocationRun {
                id: allocation_id.clone(),
                trial_id,
                pool,
                containers: Vec::new(),
                preempted: false,
                acknowledged: false,
                exits: Vec::new(),
            },
        );
        if let Some(t) = self.trials.get_mut(&trial_id) {
            t.allocation = Some(allocation_id);
        }
        Ok(())
    }

    /// Forgets an allocation that never started.
    pub(super) async fn drop_queued_allocation(&mut self, allocation_id: &str) -> LoopResult<()> {
        let Some(allocation) = self.allocations.remove(allocation_id) else { return Ok(()) };
        let _ = self.pool(&allocation.pool).release(&allocation_id.into());
        self.handle.signals().remove(allocation_id);
        if let Some(t) = self.trials.get_mut(&allocation.trial_id) {
            t.allocation = None;
        }
        let patch = AllocationPatch {
            state: Some("STATE_TERMINATED".into()),
            end_time: Some(db_now()),
            exit_reason: Some("canceled before it started".into()),
            ..Default::default()
        };
        self.store.update_allocation(allocation_id, &patch).await?;
        Ok(())
    }

    /// The scheduler placed the allocation: start one process per placement.
    pub(super) async fn launch(&mut self, allocation_id: &str, placements: &[Placement]) -> LoopResult<()> {
        let trial_id =
            self.allocations.get(allocation_id).map(|a| a.trial_id).ok_or_else(|| LoopError::Other("unknown allocation".into()))?;
        let trial_record = self.store.trial_by_id(trial_id).await?;
        let (experiment_id, run_id, seed, task_id, hparams, mut warm_start, parent) = {
            let t = self.trials.get(&trial_id).ok_or_else(|| LoopError::Other("unknown trial".into()))?;
            (t.experiment_id, t.run_id, t.seed, t.task_id.clone(), t.hparams.clone(), t.warm_start.clone(), t.warm_start_parent)
        };
        // A PBT child starts from its parent's newest checkpoint (the parent checkpoints when its
        // round ends, after the child was requested).
        if trial_record.latest_checkpoint_uuid.is_none()
            && let Some(parent) = parent
        {
            warm_start = self.store.trial_by_id(parent).await?.latest_checkpoint_uuid.or(warm_start);
            if let Some(t) = self.trials.get_mut(&trial_id) {
                t.warm_start = warm_start.clone();
            }
        }
        let latest_checkpoint = trial_record.latest_checkpoint_uuid.clone().or(warm_start);
        let steps_completed = match &latest_checkpoint {
            Some(uuid) => self.store.checkpoint_by_uuid(uuid).await.map(|c| c.steps_completed).unwrap_or(0),
            None => 0,
        };
        let model_b64 = self.model_definition(experiment_id).await?;
        let token = crate::services::issue_allocation_token(self.store.as_ref(), allocation_id).await?;
        let exp = self.experiments.get(&experiment_id).ok_or_else(|| LoopError::Other("unknown experiment".into()))?;
        let mut containers = Vec::new();
        for placement in placements {
            let agent_id = placement.agent_id.as_str().to_owned();
            let device_type = self
                .agents
                .get(&agent_id)
                .and_then(|a| placement.slot_ids.first().and_then(|s| a.devices.iter().find(|d| d.id == *s)))
                .map_or("cpu", |d| d.device_type.as_str())
                .to_owned();
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
                device_type: &device_type,
                model_definition_b64: model_b64.as_ref().clone(),
            });
            if !self.send_to_agent(&agent_id, MasterToAgent::StartTask(Box::new(start))) {
                return Err(LoopError::Other(format!("agent {agent_id} is not connected")));
            }
            containers.push(ContainerRun { agent_id, container_id, slot_ids: placement.slot_ids.clone(), running: false });
        }
        let agent_id = containers.first().map(|c| c.agent_id.clone());
        if let Some(a) = self.allocations.get_mut(allocation_id) {
            a.containers = containers;
        }
        let patch = AllocationPatch { state: Some("STATE_STARTING".into()), agent_id, ..Default::default() };
        self.store.update_allocation(allocation_id, &patch).await?;
        tracing::info!(trial = trial_id, allocation = allocation_id, "launched trial");
        Ok(())
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

    pub(super) async fn container_running(&mut self, allocation_id: &str, container_id: &str) -> LoopResult<()> {
        let Some(a) = self.allocations.get_mut(allocation_id) else { return Ok(()) };
        for c in a.containers.iter_mut().filter(|c| c.container_id == container_id) {
            c.running = true;
        }
        let patch = AllocationPatch { state: Some("STATE_RUNNING".into()), ..Default::default() };
        self.store.update_allocation(allocation_id, &patch).await?;
        Ok(())
    }

    /// The master could not start an assigned allocation: it ends as a failed run.
    pub(super) async fn container_lost(&mut self, allocation_id: &str, failure: String) {
        let containers: Vec<String> =
            self.allocations.get(allocation_id).map(|a| a.containers.iter().map(|c| c.container_id.clone()).collect()).unwrap_or_default();
        let exit = TaskExitInfo { exit_code: None, signal: None, failure: Some(failure) };
        let result = if containers.is_empty() {
            self.container_exited(allocation_id, "", exit).await
        } else {
            let mut r = Ok(());
            for c in containers {
                r = self.container_exited(allocation_id, &c, exit.clone()).await;
            }
            r
        };
        if let Err(e) = result {
            tracing::error!(allocation = allocation_id, error = %e, "cleaning up a failed allocation failed");
        }
    }

    /// A process ended; once all of the allocation's have, the allocation ends and the trial moves on.
    pub(super) async fn container_exited(&mut self, allocation_id: &str, container_id: &str, exit: TaskExitInfo) -> LoopResult<()> {
        let Some(a) = self.allocations.get_mut(allocation_id) else { return Ok(()) };
        a.exits.push((container_id.to_owned(), exit.exit_code, exit.failure.clone()));
        if a.exits.len() < a.containers.len() {
            return Ok(());
        }
        let allocation = self.allocations.remove(allocation_id).expect("present above");
        let _ = self.pool(&allocation.pool).release(&allocation_id.into());
        let preempted = allocation.preempted || self.handle.signals().is_preempted(allocation_id);
        self.handle.signals().remove(allocation_id);
        let failure = allocation.exits.iter().find_map(|(_, code, failure)| if *code == Some(0) { None } else { failure.clone() });
        let succeeded = allocation.exits.iter().all(|(_, code, _)| *code == Some(0));
        let exit_code = allocation.exits.iter().map(|(_, c, _)| *c).find(|c| *c != Some(0)).flatten().or(Some(0).filter(|_| succeeded));
        let patch = AllocationPatch {
            state: Some("STATE_TERMINATED".into()),
            end_time: Some(db_now()),
            exit_reason: failure.clone(),
            exit_code,
            ..Default::default()
        };
        self.store.update_allocation(allocation_id, &patch).await?;
        self.store.delete_allocation_sessions(allocation_id).await?;

        let trial_id = allocation.trial_id;
        let Some(trial) = self.trials.get_mut(&trial_id) else { return Ok(()) };
        trial.allocation = None;
        let experiment_id = trial.experiment_id;
        let experiment_state = self.experiments.get(&experiment_id).map_or(ExperimentState::Canceled, |e| e.state);
        let max_restarts = self.experiments.get(&experiment_id).map_or(0, |e| e.config.max_restarts);
        let facts = ExitFacts {
            succeeded,
            failure: failure.clone(),
            experiment: experiment_state,
            trial_killed: trial.killed,
            searcher_stopped: trial.searcher_stopped,
            preempted: preempted || allocation.acknowledged,
            invalid_hp: trial.invalid_hp,
            restarts: trial.restarts,
            max_restarts,
        };
        let outcome = decide(&facts);
        tracing::info!(trial = trial_id, allocation = allocation_id, ?outcome, "trial run ended");
        let ops = match outcome {
            TrialOutcome::Completed | TrialOutcome::InvalidHp => self.end_trial(trial_id, "STATE_COMPLETED").await?,
            TrialOutcome::Canceled => self.end_trial(trial_id, "STATE_CANCELED").await?,
            TrialOutcome::Errored { reason } => {
                self.store.set_trial_end_reason(trial_id, Some(&reason)).await?;
                self.end_trial(trial_id, "STATE_ERROR").await?
            }
            TrialOutcome::Paused => {
                self.next_run(trial_id, false).await?;
                self.store.update_trial_state_if(trial_id, &["STATE_ACTIVE"], "STATE_PAUSED", None).await?;
                Vec::new()
            }
            TrialOutcome::Restart { failed } => {
                if failed {
                    tracing::warn!(trial = trial_id, failure = ?failure, "trial failed; restarting from its latest checkpoint");
                }
                self.next_run(trial_id, failed).await?;
                self.request_allocation(trial_id).await?;
                Vec::new()
            }
        };
        self.apply_operations(experiment_id, ops).await
    }

    /// Moves the trial to its next run; metrics the ended run reported past the checkpoint the
    /// next one restores are archived, so they are not counted twice.
    pub(super) async fn next_run(&mut self, trial_id: i32, failed: bool) -> LoopResult<()> {
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
