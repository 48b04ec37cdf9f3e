//! Where a trial starts, and where PBT members wait.
//!
//! A trial without a checkpoint of its own starts from its *warm start*: a PBT child from its
//! parent's checkpoint at the end of the round it was copied at (the first the parent stored at or
//! past that round's last validation; the child is not queued until that checkpoint exists), any
//! other trial from the config's `searcher.source_trial_id` (that trial's latest checkpoint) or
//! `searcher.source_checkpoint_uuid`. The choice is stored on the trial
//! (`warmStartCheckpointUuid`).
//!
//! Trials run to `searcher.max_length` on their own, faster than the master decides rounds, so a
//! PBT member that reports the end of a round the rest of the population has not reached is held:
//! preempted (it checkpoints and exits) and not queued again until the round is decided. A member
//! that is replaced then trains no further than its round, and a lineage trains
//! `num_rounds × length_per_round`.

use resolute_searcher::{MethodConfig, RequestId};
use resolute_store::{CheckpointFilter, CheckpointSort, OrderDirection};

use crate::cluster::orchestrator::{LoopResult, Orchestrator};
use crate::domain::{CheckpointState, ExperimentState};

impl Orchestrator {
    /// A new trial's warm start: the checkpoint, or (PBT) the parent's steps at the round's end
    /// whose checkpoint it waits for.
    pub(in crate::cluster) async fn initial_warm_start(
        &mut self,
        experiment_id: i32,
        request_id: RequestId,
        parent: Option<i32>,
    ) -> LoopResult<(Option<String>, Option<i64>)> {
        let Some(exp) = self.experiments.get(&experiment_id) else { return Ok((None, None)) };
        if let Some(parent) = parent {
            let (round_length, _) = pbt_rounds(&exp.searcher.config().method).unwrap_or((0, 0));
            let round = exp.searcher.trial(request_id).and_then(|t| t.rung).unwrap_or(1).max(1);
            let at = self
                .trials
                .get(&parent)
                .and_then(|p| p.round_steps.get(round - 1).copied())
                .unwrap_or_else(|| i64::try_from(round_length.saturating_mul(round as u64)).unwrap_or(i64::MAX));
            return Ok(match self.checkpoint_at_or_after(parent, at).await? {
                Some(uuid) => (Some(uuid), None),
                None => (None, Some(at)),
            });
        }
        let searcher = &exp.config.searcher;
        let source = match (searcher.source_trial_id, &searcher.source_checkpoint_uuid) {
            (Some(id), _) => match i32::try_from(id) {
                Ok(id) => self.store.trial_by_id(id).await.ok().and_then(|t| t.latest_checkpoint_uuid),
                Err(_) => None,
            },
            (None, Some(uuid)) if !uuid.is_empty() => Some(uuid.clone()),
            _ => None,
        };
        Ok((source, None))
    }

    /// The first completed checkpoint of `trial` at or past `steps`.
    async fn checkpoint_at_or_after(&self, trial: i32, steps: i64) -> LoopResult<Option<String>> {
        let filter = CheckpointFilter {
            trial_id: Some(trial),
            states: vec![CheckpointState::Completed.as_str().to_owned()],
            sort: CheckpointSort::BatchNumber,
            order: OrderDirection::Asc,
            ..Default::default()
        };
        let page = self.store.list_checkpoints(&filter).await?;
        Ok(page.checkpoints.into_iter().find(|c| c.steps_completed >= steps).map(|c| c.uuid))
    }

    /// The trial's warm start is known: record it and queue the trial if it may run.
    async fn warm_start_resolved(&mut self, trial_id: i32, uuid: Option<String>) -> LoopResult<()> {
        if let Some(uuid) = &uuid {
            self.store.set_trial_warm_start(trial_id, uuid).await?;
        }
        let Some(t) = self.trials.get_mut(&trial_id) else { return Ok(()) };
        t.warm_start = uuid;
        t.awaiting_checkpoint_at = None;
        let active = self.experiments.get(&t.experiment_id).is_some_and(|e| e.state == ExperimentState::Active);
        if active && t.may_run() {
            self.request_trial_allocation(trial_id).await?;
        }
        Ok(())
    }

    /// `ClusterEvent::CheckpointReported`: children waiting for this trial's checkpoint at a
    /// round's end may start.
    pub(in crate::cluster) async fn checkpoint_reported(&mut self, trial_id: i32) -> LoopResult<()> {
        for (child, at) in self.waiting_children(trial_id) {
            if let Some(uuid) = self.checkpoint_at_or_after(trial_id, at).await? {
                tracing::info!(trial = child, parent = trial_id, checkpoint = %uuid, "PBT child starts from its parent's checkpoint at the round's end");
                self.warm_start_resolved(child, Some(uuid)).await?;
            }
        }
        Ok(())
    }

    /// The parent ended: children still waiting take its newest checkpoint (or start from scratch
    /// if it stored none), since none at the round's end will come.
    pub(in crate::cluster) async fn parent_ended(&mut self, parent: i32) -> LoopResult<()> {
        for (child, at) in self.waiting_children(parent) {
            let uuid = match self.checkpoint_at_or_after(parent, at).await? {
                Some(uuid) => Some(uuid),
                None => self.store.trial_by_id(parent).await?.latest_checkpoint_uuid,
            };
            tracing::warn!(trial = child, parent, checkpoint = ?uuid, "the parent ended without a checkpoint at the round's end; the child starts from its newest");
            self.warm_start_resolved(child, uuid).await?;
        }
        Ok(())
    }

    fn waiting_children(&self, parent: i32) -> Vec<(i32, i64)> {
        self.trials
            .iter()
            .filter(|(_, t)| t.warm_start_parent == Some(parent))
            .filter_map(|(&id, t)| t.awaiting_checkpoint_at.map(|at| (id, at)))
            .collect()
    }

    /// PBT: notes the steps at which the trial first reached each round's end.
    pub(in crate::cluster) fn record_round_steps(&mut self, trial_id: i32, progress: u64, steps_completed: i64) {
        let Some(t) = self.trials.get_mut(&trial_id) else { return };
        let Some((length, rounds)) = self.experiments.get(&t.experiment_id).and_then(|e| pbt_rounds(&e.searcher.config().method)) else {
            return;
        };
        let reached = usize::try_from(progress / length.max(1)).unwrap_or(usize::MAX).min(rounds);
        while t.round_steps.len() < reached {
            t.round_steps.push(steps_completed);
        }
    }

    /// PBT: a member that finished a round the others have not waits there (see the module doc).
    pub(in crate::cluster) async fn hold_if_ahead(&mut self, trial_id: i32) -> LoopResult<()> {
        let Some(t) = self.trials.get(&trial_id) else { return Ok(()) };
        let ahead = self.experiments.get(&t.experiment_id).is_some_and(|e| e.searcher.ahead_of_round(t.request_id));
        if !ahead || t.held_for_round || t.searcher_stopped || t.killed {
            return Ok(());
        }
        let allocation = t.allocation.clone();
        if let Some(t) = self.trials.get_mut(&trial_id) {
            t.held_for_round = true;
        }
        tracing::info!(trial = trial_id, "PBT member finished its round before the population; holding it until the round is decided");
        match allocation {
            Some(a) if self.is_started(&a) => self.preempt_allocation(&a),
            Some(a) => self.drop_queued_trial_allocation(trial_id, &a).await?,
            None => {}
        }
        Ok(())
    }

    /// PBT: members held at a round's end go on once the round is decided.
    pub(in crate::cluster) async fn release_held(&mut self, experiment_id: i32) -> LoopResult<()> {
        let Some(exp) = self.experiments.get(&experiment_id) else { return Ok(()) };
        let active = exp.state == ExperimentState::Active;
        let release: Vec<i32> = exp
            .trials
            .iter()
            .filter(|(request_id, id)| self.trials.get(id).is_some_and(|t| t.held_for_round) && !exp.searcher.ahead_of_round(**request_id))
            .map(|(_, id)| *id)
            .collect();
        for trial_id in release {
            let Some(t) = self.trials.get_mut(&trial_id) else { continue };
            t.held_for_round = false;
            if active && t.allocation.is_none() && t.may_run() && !t.searcher_stopped {
                tracing::info!(trial = trial_id, "PBT round decided; the member trains on");
                self.request_trial_allocation(trial_id).await?;
            }
        }
        Ok(())
    }
}

impl Orchestrator {
    /// Whether any trial of the experiment completed (a continued search that failed before).
    pub(in crate::cluster) async fn any_trial_completed(&self, experiment_id: i32) -> LoopResult<bool> {
        let filter = resolute_store::TrialFilter {
            experiment_id,
            states: vec![crate::domain::TrialState::Completed.as_str().to_owned()],
            limit: Some(0),
            ..Default::default()
        };
        Ok(self.store.list_trials(&filter).await?.total > 0)
    }
}

/// PBT's round length (in the searcher's unit) and number of rounds.
fn pbt_rounds(method: &MethodConfig) -> Option<(u64, usize)> {
    match method {
        MethodConfig::Pbt(c) => Some((c.length_per_round.units, c.num_rounds)),
        _ => None,
    }
}
