//! `GET /api/v1/experiments/{experimentId}/hyperparameter-importance`: upstream's
//! `GetHPImportanceResponse` (0.26 and earlier; its web UI drew the bars), computed by the
//! master on request instead of streamed. Resolute reads a bounded number of trials (the newest
//! are left out past it, and `trialCount` says how many were used).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::workloads::MetricType;

/// Query parameters: one metric (`metricName` with `metricType`, validation by default), or,
/// with no `metricName`, every numeric metric the trials reported.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct GetHpImportanceQuery {
    #[serde(default, alias = "metric_name")]
    pub metric_name: Option<String>,
    /// `METRIC_TYPE_VALIDATION` (default) or `METRIC_TYPE_TRAINING`.
    #[serde(default, alias = "metric_type")]
    pub metric_type: Option<MetricType>,
}

/// `v1GetHPImportanceResponse`: per metric name, its importances.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetHpImportanceResponse {
    pub training_metrics: BTreeMap<String, MetricHpImportance>,
    pub validation_metrics: BTreeMap<String, MetricHpImportance>,
}

/// `GetHPImportanceResponse.MetricHPImportance`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetricHpImportance {
    /// Flattened hyperparameter name (`optimizer.lr`) → the share of the metric's variance across
    /// trials it explains on its own, 0–1 (ω² of a one-way split by its value or rank bin).
    pub hp_importance: BTreeMap<String, f64>,
    /// The experiment's progress (0–1) when computed.
    pub experiment_progress: f64,
    /// Why no importance could be computed (e.g. too few trials reported the metric); empty when
    /// `hpImportance` is filled.
    pub error: String,
    /// True while too few trials have reported the metric and the experiment is still running.
    pub pending: bool,
    /// Always false: Resolute computes on request (upstream computed in the background).
    pub in_progress: bool,
    /// Trials whose value of the metric was used (a Resolute addition).
    pub trial_count: usize,
}
