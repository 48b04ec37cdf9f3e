//! [`Searcher`]: the event-driven front end the master drives from its single writer loop. It owns
//! the trial table, the seeded RNG and the chosen method, filters events the method must not see,
//! and decides when the search is over.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::adaptive::{Tournament, adaptive_brackets, async_halving_bracket};
use crate::config::{MethodConfig, SearcherConfig};
use crate::error::{SearcherError, SearcherResult};
use crate::grid::{Grid, GridSearch};
use crate::method::{Context, Ending, SearchMethod, TrialRecord, Trials};
use crate::ops::{Event, ExitReason, Operation, RequestId};
use crate::pbt::PbtSearch;
use crate::random::RandomSearch;
use crate::rng::{RngSnapshot, SearchRng};

/// Version of the snapshot layout; bump on incompatible changes.
const SNAPSHOT_FORMAT: u32 = 1;

/// A running hyperparameter search. Every call is deterministic given the configuration (seed
/// included) and the sequence of calls before it.
pub struct Searcher {
    config: SearcherConfig,
    method: Box<dyn SearchMethod>,
    rng: SearchRng,
    state: CommonState,
}

impl std::fmt::Debug for Searcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Searcher")
            .field("method", &self.config.method.name())
            .field("trials", &self.state.trials.len())
            .field("closed", &self.state.closed)
            .field("shutdown", &self.state.shutdown)
            .finish_non_exhaustive()
    }
}

#[derive(Default, Serialize, Deserialize)]
struct CommonState {
    next_request_id: u64,
    started: bool,
    trials: Trials,
    closed: usize,
    failures: usize,
    /// `Some(failure)` once `Shutdown` was emitted.
    shutdown: Option<bool>,
}

#[derive(Deserialize)]
struct Snapshot {
    format: u32,
    method: String,
    rng: RngSnapshot,
    searcher: CommonState,
    method_state: Value,
}

/// The same layout, borrowed, so taking a snapshot does not clone the trial table first.
#[derive(Serialize)]
struct SnapshotRef<'a> {
    format: u32,
    method: &'a str,
    rng: RngSnapshot,
    searcher: &'a CommonState,
    method_state: Box<serde_json::value::RawValue>,
}

/// Where a trial stands, for display.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrialState {
    /// Requested; the master has not reported it created yet.
    Requested,
    Running,
    /// The searcher sent `Stop` or `Close`; waiting for the trial to exit.
    Stopping,
    Closed,
}

/// One trial as the searcher sees it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TrialInfo {
    pub request_id: RequestId,
    pub hparams: Value,
    /// The trial whose checkpoint this one started from (PBT child, resumed ASHA promotion).
    pub parent: Option<RequestId>,
    /// Adaptive-ASHA bracket (0 = most rungs).
    pub bracket: Option<usize>,
    /// ASHA rung the trial is at or training toward; for PBT, the population's round.
    pub rung: Option<usize>,
    pub state: TrialState,
    pub exit_reason: Option<ExitReason>,
    /// Highest training progress reported with a validation, in the searcher's unit.
    pub time_progress: u64,
    pub last_metric: Option<f64>,
}

/// JSON has no infinities or NaN and metrics are snapshotted, so out-of-range values are mapped
/// to the extremes; NaN (a diverged trial) ranks worst.
fn signed_metric(metric: f64, smaller_is_better: bool) -> f64 {
    let signed = if smaller_is_better { metric } else { -metric };
    if signed.is_nan() { f64::MAX } else { signed.clamp(f64::MIN, f64::MAX) }
}

fn build_method(config: &SearcherConfig) -> SearcherResult<Box<dyn SearchMethod>> {
    config.validate()?;
    Ok(match &config.method {
        MethodConfig::Single { length } => Box::new(RandomSearch::new(1, 1, length.as_ref().map(|l| l.units))),
        MethodConfig::Random(c) => Box::new(RandomSearch::new(c.max_trials, c.max_concurrent_trials, c.length.as_ref().map(|l| l.units))),
        MethodConfig::Grid(c) => {
            Box::new(GridSearch::new(Grid::new(&config.hyperparameters)?, c.max_concurrent_trials, c.length.as_ref().map(|l| l.units)))
        }
        MethodConfig::AdaptiveAsha(c) => Box::new(Tournament::new(adaptive_brackets(c), c.variant)),
        MethodConfig::AsyncHalving(c) => Box::new(Tournament::new(vec![async_halving_bracket(c)], c.variant)),
        MethodConfig::Pbt(c) => Box::new(PbtSearch::new(c)),
    })
}

impl Searcher {
    /// A fresh search; fails when the configuration cannot be searched.
    pub fn new(config: SearcherConfig) -> SearcherResult<Self> {
        let method = build_method(&config)?;
        let rng = SearchRng::new(config.experiment_seed);
        Ok(Searcher { config, method, rng, state: CommonState { next_request_id: 1, ..CommonState::default() } })
    }

    /// Resumes a search from [`Searcher::snapshot`] output; it then behaves exactly as the
    /// searcher that took the snapshot would have.
    pub fn restore(config: SearcherConfig, snapshot: &Value) -> SearcherResult<Self> {
        let mut searcher = Searcher::new(config)?;
        let snapshot = Snapshot::deserialize(snapshot)?;
        if snapshot.format != SNAPSHOT_FORMAT {
            return Err(SearcherError::SnapshotMismatch(format!(
                "snapshot format {} is not supported (expected {SNAPSHOT_FORMAT})",
                snapshot.format
            )));
        }
        let expected = searcher.config.method.name();
        if snapshot.method != expected {
            return Err(SearcherError::SnapshotMismatch(format!(
                "snapshot is of a {} search, the configuration asks for {expected}",
                snapshot.method
            )));
        }
        searcher.rng = SearchRng::restore(searcher.config.experiment_seed, &snapshot.rng)?;
        searcher.method.restore(&snapshot.method_state)?;
        searcher.state = snapshot.searcher;
        Ok(searcher)
    }

    /// Everything needed to resume, as JSON text: take it after each batch of events and store
    /// it. Written straight from the state (no `Value` tree): a 1,000-trial search's snapshot is
    /// taken once per batch, and building the tree first was a fifth of the master's CPU.
    pub fn snapshot_json(&self) -> String {
        serde_json::to_string(&SnapshotRef {
            format: SNAPSHOT_FORMAT,
            method: self.config.method.name(),
            rng: self.rng.snapshot(),
            searcher: &self.state,
            method_state: self.method.snapshot(),
        })
        .expect("searcher state serialises to JSON")
    }

    /// [`Searcher::snapshot_json`] parsed, for [`Searcher::restore`] and comparisons.
    pub fn snapshot(&self) -> Value {
        serde_json::from_str(&self.snapshot_json()).expect("a snapshot parses")
    }

    pub fn config(&self) -> &SearcherConfig {
        &self.config
    }

    /// The first trials to create. Call once per search (not again after a restore).
    pub fn initial_operations(&mut self) -> SearcherResult<Vec<Operation>> {
        if self.state.started {
            return Err(SearcherError::AlreadyStarted);
        }
        self.state.started = true;
        let ops = self.with_method(|m, ctx| m.initial_operations(ctx));
        Ok(self.finish(ops))
    }

    /// The master created the trial for a `Create`. Repeats are ignored (a restarted master may
    /// replay its last batch).
    pub fn trial_created(&mut self, request_id: RequestId) -> SearcherResult<Vec<Operation>> {
        self.record(request_id)?.created = true;
        Ok(Vec::new())
    }

    /// A validation finished; `time_progress` is the trial's training progress in the searcher's
    /// unit (`time_metric` value, or batches/records/epochs for legacy `max_length`).
    pub fn validation_completed(&mut self, request_id: RequestId, metric: f64, time_progress: u64) -> SearcherResult<Vec<Operation>> {
        let record = self.record(request_id)?;
        record.created = true;
        record.time_progress = record.time_progress.max(time_progress);
        record.last_metric = Some(metric.clamp(f64::MIN, f64::MAX)).filter(|m| !m.is_nan());
        // Trials keep validating until they notice a stop; those reports change nothing.
        if !record.is_live() {
            return Ok(Vec::new());
        }
        let signed = signed_metric(metric, self.config.smaller_is_better);
        let ops = self.with_method(|m, ctx| m.validation_completed(ctx, request_id, signed, time_progress));
        Ok(self.finish(ops))
    }

    /// The trial ended abnormally; `trial_closed` follows when it is gone.
    pub fn trial_exited_early(&mut self, request_id: RequestId, reason: ExitReason) -> SearcherResult<Vec<Operation>> {
        let record = self.record(request_id)?;
        if record.closed || record.exit.is_some() {
            return Ok(Vec::new());
        }
        record.exit = Some(reason);
        // A trial failing while it stops has already given the method all it needed.
        let stopping = record.ending.is_some();
        if reason == ExitReason::Errored {
            self.state.failures += 1;
        }
        if stopping {
            return Ok(Vec::new());
        }
        let ops = self.with_method(|m, ctx| m.trial_exited_early(ctx, request_id, reason));
        Ok(self.finish(ops))
    }

    /// The trial is gone, for whatever reason. Emits `Shutdown` once every requested trial closed.
    pub fn trial_closed(&mut self, request_id: RequestId) -> SearcherResult<Vec<Operation>> {
        let record = self.record(request_id)?;
        if record.closed {
            return Ok(Vec::new());
        }
        record.closed = true;
        self.state.closed += 1;
        let ops = self.with_method(|m, ctx| m.trial_closed(ctx, request_id));
        Ok(self.finish(ops))
    }

    /// Applies one recorded [`Event`].
    pub fn apply(&mut self, event: &Event) -> SearcherResult<Vec<Operation>> {
        match *event {
            Event::TrialCreated { request_id } => self.trial_created(request_id),
            Event::ValidationCompleted { request_id, metric, time_progress } => {
                self.validation_completed(request_id, metric, time_progress)
            }
            Event::TrialExitedEarly { request_id, reason } => self.trial_exited_early(request_id, reason),
            Event::TrialClosed { request_id } => self.trial_closed(request_id),
        }
    }

    /// The trial's own progress report (0..1), used by searches that average over trials.
    pub fn set_trial_progress(&mut self, request_id: RequestId, fraction: f64) -> SearcherResult<()> {
        let record = self.record(request_id)?;
        if fraction.is_finite() {
            record.progress = fraction.clamp(0.0, 1.0);
        }
        Ok(())
    }

    /// Experiment progress in [0, 1]; 1 once the search has shut down successfully (a failed
    /// search keeps the progress its trials made).
    pub fn progress(&self) -> f64 {
        if self.state.shutdown == Some(false) {
            return 1.0;
        }
        let p = self.method.progress(&self.state.trials);
        if p.is_finite() { p.clamp(0.0, 1.0) } else { 0.0 }
    }

    /// `Some(failure)` once the search has emitted `Shutdown`.
    pub fn shutdown(&self) -> Option<bool> {
        self.state.shutdown
    }

    /// ASHA: metrics recorded in each rung, one list per bracket (most rungs first). Empty for
    /// other methods.
    /// Whether the trial ran past the end of a round the search has not decided yet (PBT): the
    /// master holds it there, so a member that is replaced trains no further than its round and
    /// its children start from the checkpoint at the round's end.
    pub fn ahead_of_round(&self, request_id: RequestId) -> bool {
        self.method.ahead_of_round(request_id)
    }

    pub fn rung_counts(&self) -> Vec<Vec<usize>> {
        self.method.rung_counts()
    }

    pub fn trial(&self, request_id: RequestId) -> Option<TrialInfo> {
        self.state.trials.get(&request_id).map(|r| self.info(request_id, r))
    }

    /// Every trial requested so far, in request order.
    pub fn trials(&self) -> impl Iterator<Item = TrialInfo> + '_ {
        self.state.trials.iter().map(|(&id, r)| self.info(id, r))
    }

    fn info(&self, request_id: RequestId, r: &TrialRecord) -> TrialInfo {
        let state = match (r.closed, r.ending, r.created) {
            (true, _, _) => TrialState::Closed,
            (false, Some(_), _) => TrialState::Stopping,
            (false, None, true) => TrialState::Running,
            (false, None, false) => TrialState::Requested,
        };
        TrialInfo {
            request_id,
            hparams: r.hparams.clone(),
            parent: r.parent,
            bracket: r.bracket,
            rung: self.method.rung(request_id),
            state,
            exit_reason: r.exit,
            time_progress: r.time_progress,
            last_metric: r.last_metric,
        }
    }

    fn record(&mut self, request_id: RequestId) -> SearcherResult<&mut TrialRecord> {
        self.state.trials.get_mut(&request_id).ok_or(SearcherError::UnknownRequest(request_id))
    }

    fn with_method(&mut self, f: impl FnOnce(&mut dyn SearchMethod, &mut Context) -> Vec<Operation>) -> Vec<Operation> {
        let mut ctx = Context {
            rng: &mut self.rng,
            space: &self.config.hyperparameters,
            trials: &mut self.state.trials,
            next_id: &mut self.state.next_request_id,
            bracket: None,
        };
        f(self.method.as_mut(), &mut ctx)
    }

    /// Marks stopped/closed trials, drops redundant stops, and appends `Shutdown` when nothing is
    /// left to wait for.
    fn finish(&mut self, ops: Vec<Operation>) -> Vec<Operation> {
        let mut out = Vec::with_capacity(ops.len() + 1);
        for op in ops {
            let ending = match op {
                Operation::Stop { .. } => Some(Ending::Stopped),
                Operation::Close { .. } => Some(Ending::Closed),
                _ => None,
            };
            if let (Some(ending), Some(id)) = (ending, op.request_id()) {
                match self.state.trials.get_mut(&id) {
                    Some(r) if !r.closed && r.ending.is_none() => r.ending = Some(ending),
                    _ => continue,
                }
            }
            out.push(op);
        }
        // Only events from live trials produce work, so once all are closed nothing can follow.
        if self.state.shutdown.is_none() && self.state.closed == self.state.trials.len() {
            let requested = self.state.trials.len();
            let failure = requested > 0 && self.state.failures >= requested;
            self.state.shutdown = Some(failure);
            out.push(Operation::Shutdown { failure });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{AsyncHalvingConfig, RandomConfig, TrainingLength};
    use crate::space::{HyperparameterSpace, Hyperparameters};

    fn asha(smaller_is_better: bool) -> SearcherConfig {
        let mut space = Hyperparameters::new();
        space.insert("x".into(), HyperparameterSpace::Double { min: 0.0, max: 1.0, count: None });
        let mut c = AsyncHalvingConfig::new(2, 10, TrainingLength::max_time("batches", 4));
        c.max_concurrent_trials = 2;
        SearcherConfig { method: MethodConfig::AsyncHalving(c), hyperparameters: space, smaller_is_better, experiment_seed: 3 }
    }

    fn ids(ops: &[Operation]) -> Vec<RequestId> {
        ops.iter().filter_map(Operation::request_id).collect()
    }

    #[test]
    fn searcher_is_send() {
        fn assert_send<T: Send>() {}
        assert_send::<Searcher>();
    }

    #[test]
    fn unknown_and_repeated_events() {
        let mut s = Searcher::new(asha(true)).unwrap();
        let first = ids(&s.initial_operations().unwrap());
        assert_eq!(first, vec![RequestId(1), RequestId(2)]);
        assert!(matches!(s.initial_operations(), Err(SearcherError::AlreadyStarted)));
        assert!(matches!(s.trial_created(RequestId(99)), Err(SearcherError::UnknownRequest(RequestId(99)))));
        assert!(s.trial_created(RequestId(1)).unwrap().is_empty());
        assert!(s.trial_created(RequestId(1)).unwrap().is_empty(), "a replayed creation is harmless");
        assert_eq!(s.trial(RequestId(1)).unwrap().state, TrialState::Running);
        assert_eq!(s.trial(RequestId(2)).unwrap().state, TrialState::Requested);
    }

    #[test]
    fn validations_after_a_stop_change_nothing() {
        let mut s = Searcher::new(asha(true)).unwrap();
        s.initial_operations().unwrap();
        // Rung 0 is reached at 1 batch: the first metric is the best so far and continues.
        assert!(s.validation_completed(RequestId(1), 0.5, 1).unwrap().is_empty());
        let ops = s.validation_completed(RequestId(2), 0.9, 1).unwrap();
        assert_eq!(ops[0], Operation::Stop { request_id: RequestId(2) });
        assert!(matches!(ops[1], Operation::Create { request_id: RequestId(3), .. }));
        assert_eq!(s.trial(RequestId(2)).unwrap().state, TrialState::Stopping);
        assert!(s.validation_completed(RequestId(2), 0.1, 2).unwrap().is_empty());
        assert_eq!(s.rung_counts(), vec![vec![2, 0]]);
    }

    #[test]
    fn larger_is_better_and_nan_ranks_worst() {
        let mut s = Searcher::new(asha(false)).unwrap();
        s.initial_operations().unwrap();
        assert!(s.validation_completed(RequestId(1), 0.5, 1).unwrap().is_empty());
        // Larger is better, so 0.9 ranks first of 2 and continues (the top max(floor(2/4), 1) = 1 do).
        assert!(s.validation_completed(RequestId(2), 0.9, 1).unwrap().is_empty());
        let mut s = Searcher::new(asha(true)).unwrap();
        s.initial_operations().unwrap();
        assert!(s.validation_completed(RequestId(1), 0.5, 1).unwrap().is_empty());
        let ops = s.validation_completed(RequestId(2), f64::NAN, 1).unwrap();
        assert_eq!(ops[0], Operation::Stop { request_id: RequestId(2) });
        assert_eq!(s.trial(RequestId(2)).unwrap().last_metric, None);
    }

    #[test]
    fn a_failed_search_keeps_the_progress_its_trials_made() {
        let config = SearcherConfig { method: MethodConfig::Random(RandomConfig::new(2)), ..asha(true) };
        let mut s = Searcher::new(config).unwrap();
        s.initial_operations().unwrap();
        for id in [RequestId(1), RequestId(2)] {
            s.trial_created(id).unwrap();
            s.set_trial_progress(id, 0.3).unwrap();
            s.trial_exited_early(id, ExitReason::Errored).unwrap();
            s.trial_closed(id).unwrap();
        }
        assert_eq!(s.shutdown(), Some(true));
        assert!((s.progress() - 0.3).abs() < 1e-9, "an errored search is not done: {}", s.progress());

        let config = SearcherConfig { method: MethodConfig::Random(RandomConfig::new(1)), ..asha(true) };
        let mut ok = Searcher::new(config).unwrap();
        ok.initial_operations().unwrap();
        ok.trial_created(RequestId(1)).unwrap();
        ok.set_trial_progress(RequestId(1), 0.3).unwrap();
        ok.trial_closed(RequestId(1)).unwrap();
        assert_eq!((ok.shutdown(), ok.progress()), (Some(false), 1.0));
    }

    #[test]
    fn restore_checks_the_configuration() {
        let mut s = Searcher::new(asha(true)).unwrap();
        s.initial_operations().unwrap();
        let snapshot = s.snapshot();
        let other_method = SearcherConfig { method: MethodConfig::Random(RandomConfig::new(3)), ..asha(true) };
        assert!(matches!(Searcher::restore(other_method, &snapshot), Err(SearcherError::SnapshotMismatch(_))));
        let other_seed = SearcherConfig { experiment_seed: 4, ..asha(true) };
        assert!(matches!(Searcher::restore(other_seed, &snapshot), Err(SearcherError::SnapshotMismatch(_))));
        assert!(matches!(Searcher::restore(asha(true), &serde_json::json!({"format": 1})), Err(SearcherError::SnapshotFormat(_))));
        let restored = Searcher::restore(asha(true), &snapshot).unwrap();
        assert_eq!(restored.snapshot(), snapshot);
    }

    #[test]
    fn invalid_configuration_is_refused_with_the_field() {
        let mut bad = asha(true);
        if let MethodConfig::AsyncHalving(c) = &mut bad.method {
            c.divisor = 1.0;
        }
        let err = Searcher::new(bad).err().unwrap();
        assert!(err.to_string().contains("searcher.divisor"), "{err}");
    }

    #[test]
    fn an_empty_search_shuts_down_at_once() {
        let config = SearcherConfig {
            method: MethodConfig::Grid(crate::config::GridConfig::default()),
            hyperparameters: Hyperparameters::new(),
            smaller_is_better: true,
            experiment_seed: 0,
        };
        let mut s = Searcher::new(config).unwrap();
        let ops = s.initial_operations().unwrap();
        // An empty space is one point, `{}`.
        assert!(matches!(&ops[0], Operation::Create { hparams, .. } if *hparams == serde_json::json!({})));
        let ops = s.trial_closed(RequestId(1)).unwrap();
        assert_eq!(ops, vec![Operation::Shutdown { failure: false }]);
        assert_eq!(s.progress(), 1.0);
    }
}
