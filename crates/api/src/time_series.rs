//! `GET /api/v1/trials/time-series` (upstream `CompareTrials`): trials' metric series, downsampled,
//! side by side. Used by the WebUI's comparison charts and by scripts through the bindings.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};

use crate::trials::Trial;

/// Query parameters of `GET /api/v1/trials/time-series`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct CompareTrialsQuery {
    /// The trials to compare (repeat the key for several).
    #[serde(default)]
    pub trial_ids: Vec<i32>,
    /// Points per series at most after downsampling (0 or absent: 1000).
    #[serde(default)]
    pub max_datapoints: Option<i32>,
    /// Metric names to return; with `group`/`metricType` they name metrics of that group.
    #[serde(default)]
    pub metric_names: Vec<String>,
    /// Metrics as `group.name` (e.g. `validation.accuracy`).
    #[serde(default)]
    pub metric_ids: Vec<String>,
    /// Legacy form of `group`: `METRIC_TYPE_TRAINING` or `METRIC_TYPE_VALIDATION`.
    #[serde(default)]
    pub metric_type: Option<String>,
    /// The metric group (`training`, `validation` or a custom one).
    #[serde(default)]
    pub group: Option<String>,
    /// Only reports at or after this batch.
    #[serde(default)]
    pub start_batches: Option<i32>,
    /// Only reports at or before this batch.
    #[serde(default)]
    pub end_batches: Option<i32>,
}

/// `v1DataPoint`: one report of a series.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct DataPoint {
    pub batches: i32,
    /// RFC 3339 report time.
    pub time: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<f64>,
    /// Metric name → value, for the requested metrics this report has.
    #[schema(value_type = Object)]
    pub values: Map<String, Value>,
}

/// `v1DownsampledMetrics`: one group's series of a trial.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct DownsampledMetrics {
    pub data: Vec<DataPoint>,
    pub group: String,
    /// `METRIC_TYPE_TRAINING`, `METRIC_TYPE_VALIDATION`, or `METRIC_TYPE_UNSPECIFIED` for custom groups.
    #[serde(rename = "type")]
    pub metric_type: String,
}

/// `v1ComparableTrial`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct ComparableTrial {
    pub trial: Trial,
    pub metrics: Vec<DownsampledMetrics>,
}

/// `v1CompareTrialsResponse`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct CompareTrialsResponse {
    pub trials: Vec<ComparableTrial>,
}

/// One group's downsampled series of a trial as columns (ours: `GET
/// /api/v1/trials/time-series/columns`, what the web UI draws): row `i` of every column is one
/// report. About a fifth of `DownsampledMetrics`' bytes, and no object per point to parse.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeriesColumns {
    pub group: String,
    /// Batches per report (`int32`, as upstream's `v1DataPoint.batches`).
    pub batches: Vec<i32>,
    /// Report times, seconds since the Unix epoch.
    pub times: Vec<f64>,
    /// `epoch` per report (null where a report has none); omitted when no report has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epochs: Option<Vec<Option<f64>>>,
    /// Metric name → its values (null where a report has no number for it).
    pub values: std::collections::BTreeMap<String, Vec<Option<f64>>>,
}

/// One trial's series as columns.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrialSeriesColumns {
    pub trial_id: i32,
    pub metrics: Vec<SeriesColumns>,
}

/// `GET /api/v1/trials/time-series/columns`: the trials in the requested order.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct TrialSeriesColumnsResponse {
    pub trials: Vec<TrialSeriesColumns>,
}
