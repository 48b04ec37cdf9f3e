//! Experiments in the loop: loading one (searcher built or restored), turning searcher operations
//! into trials, following the experiment's state (pause, activate, cancel, kill) and ending it.

use resolute_expconf::{Defaults, parse_experiment_config};
use resolute_searcher::{ExitReason, Operation, RequestId, Searcher};
use resolute_store::{ExperimentFilter, NewTask, NewTrial, TrialFilter, db_now};
use serde_json::{Map, Value};

use super::runs::{ExperimentRun, TrialRun};
use crate::cluster::orchestrator::{LoopError, LoopResult, Orchestrator};
use crate::domain::search_config::{full_length, length_unit, searcher_config, time_progress};
use crate::domain::{ACTIVE_STATE_NAMES, ExperimentState, TaskType, TrialState};

impl Orchestrator {
    /// After a master start: every unfinished experiment is loaded again; allocations the previous
    /// master ran are gone with it, so their trials run again from their latest checkpoints.
    pub(in crate::cluster) async fn recover(&mut self) -> LoopResult<()> {
        let states = [
            ExperimentState::Active,
            ExperimentState::Paused,
            ExperimentState::StoppingCompleted,
            ExperimentState::StoppingCanceled,
            ExperimentState::StoppingKilled,
            ExperimentState::StoppingError,
            ExperimentState::Queued,
            ExperimentState::Pulling,
            ExperimentState::Starting,
            ExperimentState::Running,
        ];
        let filter = ExperimentFilter { states: states.iter().map(|s| s.as_str().to_owned()).collect(), ..Default::default() };
        let page = self.store.list_experiments(&filter).await?;
        let open = self.store.list_tasks(&resolute_store::TaskFilter { open_only: true, ..Default::default() }).await?;
        for record in page.experiments {
            let prefix = format!("{}.", record.id);
            let id = record.id;
            if !record.unmanaged && !self.experiments.contains_key(&id) {
                self.load_experiment(record).await?;
            }
            for task in open.iter().filter(|t| t.task.task_id.starts_with(&prefix)) {
                // A placed allocation of a live trial waits for its processes to reattach
                // (`cluster/reattach.rs`): same run, same allocation id, same token.
                if self.keep_for_reattach(&task.task.task_id, &task.allocations).await? {
                    continue;
                }
                for allocation in task.allocations.iter().filter(|a| a.end_time.is_none()) {
                    self.end_abandoned_allocation(&allocation.allocation_id).await?;
                }
                // The trial resumes in a new run (not a restart: nothing failed), so its next
                // allocation gets a fresh id and reports from the old processes are stale.
                if task.allocations.iter().any(|a| a.end_time.is_none())
                    && let Ok(trial) = self.store.trial_by_task_id(&task.task.task_id).await
                {
                    self.next_run(trial.id, false).await?;
                }
            }
            if let Err(e) = self.experiment_changed(id).await {
                tracing::error!(experiment = id, error = %e, "cannot resume experiment after restart");
            }
        }
        Ok(())
    }

    /// The experiment was created or its state changed: bring its trials in line.
    pub(in crate::cluster) async fn experiment_changed(&mut self, id: i32) -> LoopResult<()> {
        let record = self.store.experiment_by_id(id).await?;
        // An unmanaged experiment reports from outside the cluster: nothing to schedule, ever.
        if record.unmanaged {
            return Ok(());
        }
        let state = ExperimentState::parse(&record.state).ok_or_else(|| LoopError::Other(format!("unknown state {}", record.state)))?;
        if !self.experiments.contains_key(&id) {
            if state.is_terminal() || matches!(state, ExperimentState::Deleting | ExperimentState::Deleted) {
                return Ok(());
            }
            self.load_experiment(record).await?;
        }
        let Some(exp) = self.experiments.get_mut(&id) else { return Ok(()) };
        // QUEUED/RUNNING are the loop's own bookkeeping of an active experiment.
        let state = state.intent();
        exp.state = state;
        // The API wrote the state this event is about, over whatever substate the loop last wrote
        // (a pause then an activate may both land before this read, so the loop never sees the
        // pause): the next sync writes the substate again rather than trusting its cache.
        self.display.forget_experiment(id);
        // The search starts at once, as upstream: a paused experiment (`--paused`) gets its first
        // trials too, paused, and they queue when it is activated.
        if matches!(state, ExperimentState::Active | ExperimentState::Paused) && !exp.search_started {
            exp.search_started = true;
            let ops = exp.searcher.initial_operations()?;
            self.apply_operations(id, ops).await?;
        }
        self.reconcile(id).await
    }

    pub(in crate::cluster) async fn load_experiment(&mut self, record: resolute_store::ExperimentRecord) -> LoopResult<()> {
        let text = record.config.to_string();
        let config = parse_experiment_config(&text, &Defaults::new(0))
            .map_err(|errors| LoopError::Other(format!("stored config no longer validates: {errors:?}")))?
            .config;
        let search = searcher_config(&config);
        let unit = length_unit(&search);
        let full = full_length(&search);
        let snapshot = self.store.searcher_snapshot(record.id).await?;
        let fresh = snapshot.is_none();
        let searcher = match &snapshot {
            Some(s) => Searcher::restore(search, s)?,
            None => Searcher::new(search)?,
        };
        let state = ExperimentState::parse(&record.state).unwrap_or(ExperimentState::Active).intent();
        let mut exp = ExperimentRun {
            id: record.id,
            state,
            config,
            config_json: record.config.value().clone(),
            owner: record.owner_username.clone(),
            owner_id: record.owner_id,
            job_id: record.job_id.clone(),
            searcher,
            length_unit: unit,
            full_length: full,
            progress: Default::default(),
            search_over: None,
            search_started: false,
            trials: Default::default(),
            model_definition_b64: None,
            stored_progress: record.progress,
            snapshot_dirty: false,
        };
        exp.search_over = exp.searcher.shutdown();
        // Trials already in the store (a restarted master).
        let page = self.store.list_trials(&TrialFilter { experiment_id: record.id, ..Default::default() }).await?;
        for t in page.trials {
            let Ok(request_id) = t.request_id.parse::<u64>().map(RequestId) else { continue };
            exp.trials.insert(request_id, t.id);
            if TrialState::is_terminal_name(&t.state) {
                continue;
            }
            self.trials.insert(
                t.id,
                TrialRun {
                    experiment_id: t.experiment_id,
                    request_id,
                    task_id: t.task_id.clone(),
                    run_id: t.run_id,
                    restarts: u32::try_from(t.restarts).unwrap_or(0),
                    hparams: t.hparams.clone(),
                    seed: t.seed,
                    allocation: None,
                    killed: false,
                    searcher_stopped: false,
                    invalid_hp: false,
                    warm_start: t.warm_start_checkpoint_uuid.clone(),
                    warm_start_parent: None,
                    awaiting_checkpoint_at: None,
                    held_for_round: false,
                    round_steps: Vec::new(),
                    log_policy: Default::default(),
                },
            );
        }
        exp.search_started = !fresh;
        self.experiments.insert(record.id, exp);
        Ok(())
    }

    /// Carries out searcher operations; the searcher's snapshot is stored with the batch's
    /// (`flush_searchers`).
    pub(in crate::cluster) async fn apply_operations(&mut self, experiment_id: i32, ops: Vec<Operation>) -> LoopResult<()> {
        let mut queue: std::collections::VecDeque<Operation> = ops.into();
        while let Some(op) = queue.pop_front() {
            let more = match op {
                Operation::Create { request_id, trial_seed, hparams, checkpoint_from } => {
                    self.create_trial(experiment_id, request_id, trial_seed, hparams, checkpoint_from).await?
                }
                Operation::Stop { request_id } => self.searcher_stop(experiment_id, request_id, true).await?,
                // PBT closes a member at the end of its round, which the training code does not
                // know about: stop it the same way. Other searchers close trials that reached their
                // length and are finishing anyway.
                Operation::Close { request_id } if self.is_pbt(experiment_id) => {
                    self.searcher_stop(experiment_id, request_id, false).await?
                }
                Operation::Close { .. } => Vec::new(),
                Operation::Shutdown { failure } => {
                    if let Some(exp) = self.experiments.get_mut(&experiment_id) {
                        exp.search_over = Some(failure);
                    }
                    Vec::new()
                }
            };
            queue.extend(more);
        }
        self.release_held(experiment_id).await?;
        if let Some(exp) = self.experiments.get_mut(&experiment_id) {
            exp.snapshot_dirty = true;
        }
        self.maybe_finish(experiment_id).await
    }

    /// Stores the snapshot and progress of every searcher that moved since the last call. A
    /// snapshot holds every trial the search made, so storing it after each operation cost
    /// O(trials) per report (a fifth of the master's CPU in a 1,000-trial search); once per batch of
    /// events it is paid once for all the batch's reports. It runs before the batch's launches and
    /// before an experiment ends, so no trial starts, and no search ends, ahead of its snapshot.
    pub(in crate::cluster) async fn flush_searchers(&mut self) {
        let dirty: Vec<i32> = self.experiments.values().filter(|e| e.snapshot_dirty).map(|e| e.id).collect();
        for experiment_id in dirty {
            if let Err(e) = self.flush_searcher(experiment_id).await {
                tracing::error!(experiment = experiment_id, error = %e, "storing the searcher's snapshot failed");
            }
        }
    }

    async fn flush_searcher(&mut self, experiment_id: i32) -> LoopResult<()> {
        let Some(exp) = self.experiments.get_mut(&experiment_id) else { return Ok(()) };
        if !exp.snapshot_dirty {
            return Ok(());
        }
        exp.snapshot_dirty = false;
        let progress = exp.progress_to_store();
        self.store.save_searcher_snapshot(experiment_id, &exp.searcher.snapshot_json()).await?;
        if let Some(progress) = progress {
            self.store.set_experiment_progress(experiment_id, Some(progress)).await?;
        }
        Ok(())
    }

    async fn create_trial(
        &mut self,
        experiment_id: i32,
        request_id: RequestId,
        trial_seed: u32,
        hparams: Value,
        checkpoint_from: Option<RequestId>,
    ) -> LoopResult<Vec<Operation>> {
        let Some(exp) = self.experiments.get(&experiment_id) else { return Ok(Vec::new()) };
        if exp.trials.contains_key(&request_id) {
            // Replayed after a restart: the trial exists.
            return Ok(Vec::new());
        }
        let warm_start_parent = checkpoint_from.and_then(|r| exp.trials.get(&r)).copied();
        let (warm_start, awaiting_checkpoint_at) = self.initial_warm_start(experiment_id, request_id, warm_start_parent).await?;
        let Some(exp) = self.experiments.get(&experiment_id) else { return Ok(Vec::new()) };
        let state = if exp.state == ExperimentState::Paused { TrialState::Paused } else { TrialState::Active };
        let task_id = format!("{experiment_id}.{}", uuid::Uuid::new_v4());
        let now = db_now();
        self.store
            .create_task(NewTask {
                task_id: task_id.clone(),
                task_type: TaskType::Trial.as_str().into(),
                start_time: now,
                job_id: Some(exp.job_id.clone()),
                owner_id: None,
            })
            .await?;
        let record = self
            .store
            .create_trial(NewTrial {
                experiment_id,
                request_id: request_id.0.to_string(),
                task_id: task_id.clone(),
                state: state.as_str().into(),
                hparams: hparams.clone(),
                seed: i64::from(trial_seed),
                start_time: now,
            })
            .await?;
        tracing::info!(experiment = experiment_id, trial = record.id, request = %request_id, "created trial");
        if let Some(uuid) = &warm_start {
            self.store.set_trial_warm_start(record.id, uuid).await?;
        }
        self.trials.insert(
            record.id,
            TrialRun {
                experiment_id,
                request_id,
                task_id,
                run_id: record.run_id,
                restarts: 0,
                hparams,
                seed: i64::from(trial_seed),
                allocation: None,
                killed: false,
                searcher_stopped: false,
                invalid_hp: false,
                warm_start,
                warm_start_parent,
                awaiting_checkpoint_at,
                held_for_round: false,
                round_steps: Vec::new(),
                log_policy: Default::default(),
            },
        );
        let exp = self.experiments.get_mut(&experiment_id).expect("checked above");
        exp.trials.insert(request_id, record.id);
        let ops = exp.searcher.trial_created(request_id)?;
        if exp.state == ExperimentState::Active && awaiting_checkpoint_at.is_none() {
            self.request_trial_allocation(record.id).await?;
        }
        Ok(ops)
    }

    fn is_pbt(&self, experiment_id: i32) -> bool {
        self.experiments.get(&experiment_id).is_some_and(|e| matches!(e.searcher.config().method, resolute_searcher::MethodConfig::Pbt(_)))
    }

    /// Stops a trial gracefully for the searcher; `early` when it may be cut short of its length.
    async fn searcher_stop(&mut self, experiment_id: i32, request_id: RequestId, early: bool) -> LoopResult<Vec<Operation>> {
        let Some(trial_id) = self.experiments.get(&experiment_id).and_then(|e| e.trials.get(&request_id)).copied() else {
            return Ok(Vec::new());
        };
        // ASHA also stops the trials that reached the top rung: those finished, they were not cut short.
        let finished = self
            .experiments
            .get(&experiment_id)
            .is_some_and(|e| e.full_length.is_some_and(|full| e.progress.get(&request_id).is_some_and(|&p| p >= full)));
        let Some(trial) = self.trials.get_mut(&trial_id) else { return Ok(Vec::new()) };
        trial.searcher_stopped = true;
        if early && !finished {
            self.store.set_trial_end_reason(trial_id, Some("stopped early by the searcher")).await?;
        }
        match trial.allocation.clone() {
            Some(allocation_id) if self.is_started(&allocation_id) => {
                tracing::info!(trial = trial_id, "searcher stopped the trial; signalling it to checkpoint and exit");
                self.preempt_allocation(&allocation_id);
                Ok(Vec::new())
            }
            queued => {
                if let Some(allocation_id) = queued {
                    self.drop_queued_trial_allocation(trial_id, &allocation_id).await?;
                }
                self.end_trial(trial_id, TrialState::Completed).await
            }
        }
    }

    /// Aligns trials with the experiment's state.
    async fn reconcile(&mut self, experiment_id: i32) -> LoopResult<()> {
        let Some(exp) = self.experiments.get(&experiment_id) else { return Ok(()) };
        let state = exp.state;
        let trial_ids: Vec<i32> = exp.trials.values().copied().filter(|t| self.trials.contains_key(t)).collect();
        for trial_id in trial_ids {
            let allocation = self.trials.get(&trial_id).and_then(|t| t.allocation.clone());
            let running = allocation.as_ref().is_some_and(|a| self.is_started(a));
            match state {
                ExperimentState::Active => {
                    if allocation.is_none() {
                        self.set_trial_state_if(trial_id, &[TrialState::Paused.as_str()], TrialState::Active).await?;
                        if self.trials.get(&trial_id).is_some_and(TrialRun::may_run) {
                            self.request_trial_allocation(trial_id).await?;
                        }
                    }
                }
                ExperimentState::Paused | ExperimentState::StoppingCompleted | ExperimentState::StoppingError => {
                    if running {
                        self.preempt_allocation(allocation.as_deref().unwrap_or_default());
                    } else {
                        if let Some(a) = allocation {
                            self.drop_queued_trial_allocation(trial_id, &a).await?;
                        }
                        if state == ExperimentState::Paused {
                            self.set_trial_state_if(trial_id, &ACTIVE_STATE_NAMES, TrialState::Paused).await?;
                        } else {
                            self.end_trial(trial_id, TrialState::Canceled).await?;
                        }
                    }
                }
                ExperimentState::StoppingCanceled => {
                    if running {
                        let a = allocation.unwrap_or_default();
                        self.preempt_allocation(&a);
                        self.handle.notify_after(
                            self.timing.cancel_grace,
                            crate::cluster::ClusterEvent::Timer(crate::cluster::Timer::KillIfRunning { allocation_id: a }),
                        );
                    } else {
                        if let Some(a) = allocation {
                            self.drop_queued_trial_allocation(trial_id, &a).await?;
                        }
                        self.end_trial(trial_id, TrialState::Canceled).await?;
                    }
                }
                ExperimentState::StoppingKilled => {
                    if running {
                        self.kill_allocation(allocation.as_deref().unwrap_or_default());
                    } else {
                        if let Some(a) = allocation {
                            self.drop_queued_trial_allocation(trial_id, &a).await?;
                        }
                        self.end_trial(trial_id, TrialState::Canceled).await?;
                    }
                }
                // Settled by the API with no running trial: whatever is left did not start.
                _ => {
                    if let Some(a) = allocation {
                        if running {
                            self.kill_allocation(&a);
                            continue;
                        }
                        self.drop_queued_trial_allocation(trial_id, &a).await?;
                    }
                    self.end_trial(trial_id, TrialState::Canceled).await?;
                }
            }
        }
        self.maybe_finish(experiment_id).await
    }

    /// Ends the experiment once nothing runs and nothing more will.
    pub(in crate::cluster) async fn maybe_finish(&mut self, experiment_id: i32) -> LoopResult<()> {
        let Some(exp) = self.experiments.get(&experiment_id) else { return Ok(()) };
        let live = exp.trials.values().any(|t| self.trials.contains_key(t));
        if live {
            return Ok(());
        }
        let target = match exp.state {
            // As upstream's searcher: a search whose every trial a user killed was canceled.
            ExperimentState::Active if exp.search_over == Some(false) && self.all_trials_canceled(experiment_id).await? => {
                ExperimentState::Canceled
            }
            ExperimentState::Active => match exp.search_over {
                Some(false) => ExperimentState::Completed,
                // A continued search whose failed trials now completed did not fail.
                Some(true) if self.any_trial_completed(experiment_id).await? => ExperimentState::Completed,
                Some(true) => ExperimentState::Error,
                None => return Ok(()),
            },
            ExperimentState::Paused => return Ok(()),
            s if s.is_stopping() => s.settled(),
            _ => exp.state,
        };
        let from = exp.state;
        self.flush_searcher(experiment_id).await?;
        let Some(exp) = self.experiments.get(&experiment_id) else { return Ok(()) };
        let config = exp.config_json.clone();
        self.rm.forget_job(&exp.job_id);
        self.experiments.remove(&experiment_id);
        if from != target {
            self.store.update_experiment_state_if(experiment_id, &from.stored_names(), target.as_str(), Some(db_now())).await?;
            if target == ExperimentState::Error {
                self.store.set_experiment_end_reason(experiment_id, Some("every trial of the search failed")).await?;
            }
            tracing::info!(experiment = experiment_id, state = %target, "experiment ended");
        }
        self.collect_checkpoints(experiment_id, &config);
        Ok(())
    }

    /// Whether the experiment has trials and every one of them ended CANCELED (killed by a user).
    async fn all_trials_canceled(&self, experiment_id: i32) -> LoopResult<bool> {
        let count = |states: Vec<String>| TrialFilter { experiment_id, states, limit: Some(0), ..Default::default() };
        let all = self.store.list_trials(&count(Vec::new())).await?.total;
        let canceled = self.store.list_trials(&count(vec![TrialState::Canceled.as_str().to_owned()])).await?.total;
        Ok(all > 0 && canceled == all)
    }

    pub(in crate::cluster) async fn validation_reported(
        &mut self,
        trial_id: i32,
        trial_run_id: i32,
        steps_completed: i64,
        metrics: &Map<String, Value>,
        repeated: bool,
    ) -> LoopResult<()> {
        let Some(trial) = self.trials.get(&trial_id) else { return Ok(()) };
        if trial.run_id != trial_run_id {
            return Ok(());
        }
        let (experiment_id, request_id) = (trial.experiment_id, trial.request_id);
        let Some(exp) = self.experiments.get_mut(&experiment_id) else { return Ok(()) };
        let metric_name = exp.config.searcher.metric.clone();
        let Some(value) = metrics.get(&metric_name).and_then(metric_value) else {
            tracing::warn!(trial = trial_id, metric = %metric_name, "validation report lacks the searcher metric; the searcher ignores it");
            return Ok(());
        };
        let progress = time_progress(exp.length_unit.as_ref(), metrics, steps_completed);
        if repeated && exp.progress.get(&request_id).is_some_and(|seen| *seen >= progress) {
            return Ok(()); // a retry of a report the searcher already took
        }
        exp.progress.insert(request_id, progress);
        let ops = exp.searcher.validation_completed(request_id, value, progress)?;
        self.record_round_steps(trial_id, progress, steps_completed);
        self.apply_operations(experiment_id, ops).await?;
        self.hold_if_ahead(trial_id).await
    }

    pub(in crate::cluster) async fn progress_reported(&mut self, trial_id: i32, progress: f64) -> LoopResult<()> {
        let Some(trial) = self.trials.get(&trial_id) else { return Ok(()) };
        let (experiment_id, request_id) = (trial.experiment_id, trial.request_id);
        if let Some(exp) = self.experiments.get_mut(&experiment_id) {
            exp.searcher.set_trial_progress(request_id, progress.clamp(0.0, 1.0))?;
            if let Some(progress) = exp.progress_to_store() {
                self.store.set_experiment_progress(experiment_id, Some(progress)).await?;
            }
        }
        Ok(())
    }

    pub(in crate::cluster) fn early_exit(&mut self, trial_id: i32, reason: &str) -> LoopResult<()> {
        if let Some(trial) = self.trials.get_mut(&trial_id) {
            tracing::info!(trial = trial_id, reason, "trial reported an early exit");
            trial.invalid_hp = reason.contains("INVALID_HP");
        }
        Ok(())
    }

    pub(in crate::cluster) async fn kill_trial(&mut self, trial_id: i32) -> LoopResult<()> {
        let Some(trial) = self.trials.get_mut(&trial_id) else { return Ok(()) };
        trial.killed = true;
        match trial.allocation.clone() {
            Some(a) if self.is_started(&a) => self.kill_allocation(&a),
            queued => {
                if let Some(a) = queued {
                    self.drop_queued_trial_allocation(trial_id, &a).await?;
                }
                let ops = self.end_trial(trial_id, TrialState::Canceled).await?;
                let experiment_id = self.experiment_of(trial_id).unwrap_or_default();
                self.apply_operations(experiment_id, ops).await?;
            }
        }
        Ok(())
    }

    /// Records a trial's end and tells the searcher; returns the searcher's reaction.
    pub(in crate::cluster) async fn end_trial(&mut self, trial_id: i32, state: TrialState) -> LoopResult<Vec<Operation>> {
        let Some(trial) = self.trials.remove(&trial_id) else { return Ok(Vec::new()) };
        self.store.update_trial_state(trial_id, state.as_str(), Some(db_now())).await?;
        self.parent_ended(trial_id).await?;
        self.store.end_task(&trial.task_id, db_now()).await?;
        if let Some(config) = self.experiments.get(&trial.experiment_id).map(|e| e.config_json.clone()) {
            self.collect_checkpoints(trial.experiment_id, &config);
        }
        let Some(exp) = self.experiments.get_mut(&trial.experiment_id) else { return Ok(Vec::new()) };
        // The searcher hears why a trial ended early, then (always) that it closed.
        let reason = match state {
            TrialState::Completed if trial.invalid_hp => Some(ExitReason::InvalidHp),
            TrialState::Completed => None,
            TrialState::Error => Some(ExitReason::Errored),
            _ => Some(ExitReason::UserCanceled),
        };
        let mut ops = match reason {
            Some(reason) => exp.searcher.trial_exited_early(trial.request_id, reason)?,
            None => Vec::new(),
        };
        ops.extend(exp.searcher.trial_closed(trial.request_id)?);
        Ok(ops)
    }

    pub(in crate::cluster) fn experiment_of(&self, trial_id: i32) -> Option<i32> {
        self.experiments.values().find(|e| e.trials.values().any(|t| *t == trial_id)).map(|e| e.id)
    }

    /// Applies the experiment's checkpoint GC policy, off the loop. Checkpoints live trials start
    /// from (PBT warm starts) are kept.
    pub(in crate::cluster) fn collect_checkpoints(&self, experiment_id: i32, config: &Value) {
        let protected: Vec<String> =
            self.trials.values().filter(|t| t.experiment_id == experiment_id).filter_map(|t| t.warm_start.clone()).collect();
        self.hooks.collect_checkpoints(experiment_id, config, protected);
    }
}

/// Numbers, and the strings the harness sends for non-finite floats.
fn metric_value(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.as_str() {
            "NaN" => Some(f64::NAN),
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            other => other.parse().ok(),
        },
        _ => None,
    }
}
