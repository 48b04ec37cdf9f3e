//! The contract between the [`Searcher`](crate::Searcher) front end and each search method, and
//! the shared trial table methods read and create trials through.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::error::SearcherResult;
use crate::ops::{ExitReason, Operation, RequestId};
use crate::rng::SearchRng;
use crate::sample::sample_all;
use crate::space::Hyperparameters;

/// How the searcher ended its interest in a trial.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Ending {
    Stopped,
    Closed,
}

/// What the searcher remembers about every trial it requested. Part of the snapshot.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct TrialRecord {
    pub hparams: Value,
    pub parent: Option<RequestId>,
    pub bracket: Option<usize>,
    pub created: bool,
    pub ending: Option<Ending>,
    pub exit: Option<ExitReason>,
    pub closed: bool,
    /// Highest `time_progress` any validation reported.
    pub time_progress: u64,
    /// Fraction the trial itself reported through `set_trial_progress`.
    pub progress: f64,
    /// Latest reported metric, as reported (not sign-adjusted).
    pub last_metric: Option<f64>,
}

pub(crate) type Trials = BTreeMap<RequestId, TrialRecord>;

impl TrialRecord {
    /// Whether the trial may still send validations the method should act on.
    pub(crate) fn is_live(&self) -> bool {
        !self.closed && self.ending.is_none() && self.exit.is_none()
    }

    /// The trial's share of its work done, for searches whose progress is an average over trials.
    pub(crate) fn fraction_done(&self, length: Option<u64>) -> f64 {
        // A trial that failed did not do its work: it counts for what it trained, so a search
        // whose trials all failed does not read as done.
        if self.closed && self.exit != Some(ExitReason::Errored) {
            return 1.0;
        }
        let by_length = match length {
            Some(units) if units > 0 => self.time_progress as f64 / units as f64,
            _ => 0.0,
        };
        self.progress.max(by_length).clamp(0.0, 1.0)
    }
}

/// What a method gets to act with: the seeded RNG, the space, and the trial table to create into.
pub(crate) struct Context<'a> {
    pub rng: &'a mut SearchRng,
    pub space: &'a Hyperparameters,
    pub trials: &'a mut Trials,
    pub next_id: &'a mut u64,
    /// Set by the adaptive-ASHA tournament so created trials know their bracket.
    pub bracket: Option<usize>,
}

impl Context<'_> {
    /// A new trial with freshly sampled hyperparameters.
    pub(crate) fn create_sampled(&mut self) -> (RequestId, Operation) {
        let hparams = sample_all(self.space, self.rng);
        self.create_from(hparams, None)
    }

    /// A new trial with the given hyperparameters, optionally warm-started from `parent`.
    pub(crate) fn create_from(&mut self, hparams: Value, parent: Option<RequestId>) -> (RequestId, Operation) {
        let request_id = RequestId(*self.next_id);
        *self.next_id += 1;
        let trial_seed = self.rng.trial_seed();
        self.trials.insert(
            request_id,
            TrialRecord {
                hparams: hparams.clone(),
                parent,
                bracket: self.bracket,
                created: false,
                ending: None,
                exit: None,
                closed: false,
                time_progress: 0,
                progress: 0.0,
                last_metric: None,
            },
        );
        (request_id, Operation::Create { request_id, trial_seed, hparams, checkpoint_from: parent })
    }

    pub(crate) fn hparams(&self, id: RequestId) -> Value {
        self.trials.get(&id).map(|t| t.hparams.clone()).unwrap_or(Value::Null)
    }

    pub(crate) fn is_live(&self, id: RequestId) -> bool {
        self.trials.get(&id).is_some_and(TrialRecord::is_live)
    }
}

/// One search method. Metrics arrive sign-adjusted: smaller is always better here. The front end
/// filters events the method must not see (duplicates, validations after a stop).
pub(crate) trait SearchMethod: Send + Sync {
    fn initial_operations(&mut self, ctx: &mut Context) -> Vec<Operation>;
    fn validation_completed(&mut self, ctx: &mut Context, id: RequestId, metric: f64, time_progress: u64) -> Vec<Operation>;
    fn trial_exited_early(&mut self, ctx: &mut Context, id: RequestId, reason: ExitReason) -> Vec<Operation>;
    fn trial_closed(&mut self, ctx: &mut Context, id: RequestId) -> Vec<Operation>;
    fn progress(&self, trials: &Trials) -> f64;
    /// The rung (ASHA) or round (PBT) the trial is working toward, for display.
    fn rung(&self, _id: RequestId) -> Option<usize> {
        None
    }
    /// The trial has reported the end of a round the rest of the population has not reached
    /// (PBT only): it must wait there, checkpointed, until the round is decided.
    fn ahead_of_round(&self, _id: RequestId) -> bool {
        false
    }
    /// Metrics recorded per rung, per bracket (ASHA only).
    fn rung_counts(&self) -> Vec<Vec<usize>> {
        Vec::new()
    }
    /// The method's state as JSON text, written straight from its fields: a 1,000-trial search
    /// takes one of these per batch of events, and building a `Value` tree first cost twice the
    /// serialisation itself.
    fn snapshot(&self) -> Box<RawValue>;
    fn restore(&mut self, state: &Value) -> SearcherResult<()>;
}

/// Serialises method state; our own types always serialise, so failure is a bug, not input.
pub(crate) fn to_json<T: Serialize>(state: &T) -> Box<RawValue> {
    serde_json::value::to_raw_value(state).expect("searcher state serialises to JSON")
}
