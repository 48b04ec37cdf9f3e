//! `GET /api/v1/experiments/{experimentId}/searcher/state` (a Resolute addition): where a
//! hyperparameter search stands — its brackets and rungs, and each trial's rung and decision.
//! Upstream shows none of this; `det experiment describe` prints it after the trials.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetSearcherStateResponse {
    pub experiment_id: i32,
    /// `single`, `random`, `grid`, `adaptive_asha`, `async_halving` or `pbt`.
    pub method: String,
    /// The unit rung lengths and `timeProgress` are counted in (`batches`, a time metric, …).
    pub unit: String,
    /// Fraction of the search done, 0–1.
    pub progress: f64,
    /// `running` until the searcher shuts the search down, then `completed` or `failed`.
    pub status: String,
    /// Adaptive ASHA: one per bracket, most rungs first; PBT: one whose rungs are the rounds;
    /// other methods: one with a single rung at the full length.
    pub brackets: Vec<SearcherBracket>,
    /// Every trial the searcher requested, in request order.
    pub trials: Vec<SearcherTrial>,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearcherBracket {
    pub bracket: usize,
    pub max_trials: usize,
    pub max_concurrent_trials: usize,
    pub rungs: Vec<SearcherRung>,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearcherRung {
    pub rung: usize,
    /// Training length at which a trial reaches this rung.
    pub length: u64,
    /// Trials the plan expects to reach it.
    pub planned_trials: usize,
    /// Validation metrics recorded in it so far (ASHA only; null for other methods).
    pub recorded: Option<usize>,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearcherTrial {
    pub request_id: u64,
    /// Null while the master has not created the trial yet.
    pub trial_id: Option<i32>,
    pub bracket: Option<usize>,
    /// ASHA rung (or PBT round) the trial reached or is training toward.
    pub rung: Option<usize>,
    /// `requested`, `running`, `stopping` (told to stop; checkpointing and exiting) or `closed`.
    pub state: String,
    /// What the searcher decided: `training`, `stopped_early` (ASHA stopped it before the full
    /// length), `completed` (trained the full length), `invalid_hp`, `errored`, `user_canceled`,
    /// or `requested`.
    pub decision: String,
    /// Training done, in `unit`, as reported with the trial's last validation.
    pub time_progress: u64,
    /// The searcher metric of that validation (null if none, or not a finite number).
    pub last_metric: Option<f64>,
    /// The trial whose checkpoint this one started from (PBT child, ASHA promotion).
    pub parent_trial_id: Option<i32>,
}
