//! The searcher's vocabulary: request ids, the events the master feeds in and the operations it
//! gets back.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Identifies one trial request. Allocated by the searcher from a counter, so the same seed and the
/// same events always give the same ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RequestId(pub u64);

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// What the searcher asks the master to do.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Operation {
    /// Start a trial with these hyperparameters (a JSON object, possibly nested). `trial_seed`
    /// becomes the trial's `DET_TRIAL_SEED`. With `checkpoint_from`, the trial starts from that
    /// trial's latest checkpoint (PBT children, resumed ASHA promotions); its training progress
    /// continues from there.
    Create { request_id: RequestId, trial_seed: u32, hparams: Value, checkpoint_from: Option<RequestId> },
    /// Stop the trial early: the master tells it through the preemption signal, so it checkpoints
    /// and exits gracefully.
    Stop { request_id: RequestId },
    /// The trial has done everything the searcher wanted (it reached its final length); let it
    /// finish on its own, no interruption needed.
    Close { request_id: RequestId },
    /// The search is over; `failure` when every trial the search requested failed.
    Shutdown { failure: bool },
}

impl Operation {
    /// The trial this operation is about, if any.
    pub fn request_id(&self) -> Option<RequestId> {
        match self {
            Operation::Create { request_id, .. } | Operation::Stop { request_id } | Operation::Close { request_id } => Some(*request_id),
            Operation::Shutdown { .. } => None,
        }
    }
}

/// Why a trial ended before the searcher was done with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExitReason {
    /// The trial raised `InvalidHP`: its hyperparameters cannot be trained. It does not count
    /// toward `max_trials`, and budgeted searches replace it.
    InvalidHp,
    /// The trial failed after exhausting its restarts.
    Errored,
    /// A user killed or cancelled the trial.
    UserCanceled,
}

/// One input to the searcher, as a value: the simulator records these so a run can be replayed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    TrialCreated { request_id: RequestId },
    ValidationCompleted { request_id: RequestId, metric: f64, time_progress: u64 },
    TrialExitedEarly { request_id: RequestId, reason: ExitReason },
    TrialClosed { request_id: RequestId },
}
