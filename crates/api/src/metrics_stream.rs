//! The experiment `metrics-stream` endpoints upstream's WebUI and bindings read (server streams:
//! one `{"result": …}` line per update): `ExpMetricNames`, `MetricBatches`, `TrialsSnapshot` and
//! `TrialsSample`.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::time_series::DataPoint;

/// `GET /api/v1/experiments/metrics-stream/metric-names`.
#[derive(Clone, Debug, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct ExpMetricNamesQuery {
    /// The experiments (repeat the key for several).
    #[serde(default)]
    pub ids: Vec<i32>,
    /// Seconds between updates while an experiment runs (0 or absent: 30).
    #[serde(default)]
    pub period_seconds: Option<i32>,
}

/// The query of the three per-experiment streams (`batches`, `trials-snapshot`, `trials-sample`).
#[derive(Clone, Debug, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct MetricStreamQuery {
    /// The metric's name.
    #[serde(default)]
    pub metric_name: Option<String>,
    /// The metric group (`training`, `validation` or a custom one).
    #[serde(default)]
    pub group: Option<String>,
    /// Legacy form of `group`: `METRIC_TYPE_TRAINING` or `METRIC_TYPE_VALIDATION`.
    #[serde(default)]
    pub metric_type: Option<String>,
    /// Seconds between updates while the experiment runs (0 or absent: 30).
    #[serde(default)]
    pub period_seconds: Option<i32>,
    /// `trials-snapshot`: the point of progress, in batches.
    #[serde(default)]
    pub batches_processed: Option<i32>,
    /// `trials-snapshot`: how far either side of `batchesProcessed` a report may be (default 10).
    #[serde(default)]
    pub batches_margin: Option<i32>,
    /// `trials-sample`: trials sampled at most (default 25).
    #[serde(default)]
    pub max_trials: Option<i32>,
    /// `trials-sample`: points per trial in the first update at most (default 1000).
    #[serde(default)]
    pub max_datapoints: Option<i32>,
    /// `trials-sample`: only reports at or after this batch.
    #[serde(default)]
    pub start_batches: Option<i32>,
    /// `trials-sample`: only reports at or before this batch.
    #[serde(default)]
    pub end_batches: Option<i32>,
}

/// `v1MetricIdentifier`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
pub struct MetricIdentifier {
    pub group: String,
    pub name: String,
}

/// `v1ExpMetricNamesResponse`: the names first seen since the previous update.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExpMetricNamesResponse {
    pub searcher_metrics: Vec<String>,
    /// Deprecated upstream; the `training` group's names.
    pub training_metrics: Vec<String>,
    /// Deprecated upstream; the `validation` group's names.
    pub validation_metrics: Vec<String>,
    pub metric_names: Vec<MetricIdentifier>,
}

/// `v1MetricBatchesResponse`: batches at which the metric was first seen since the last update.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct MetricBatchesResponse {
    pub batches: Vec<i32>,
}

/// `v1TrialsSnapshotResponseTrial`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotTrial {
    pub trial_id: i32,
    #[schema(value_type = Object)]
    pub hparams: Value,
    pub metric: f64,
    pub batches_processed: i32,
}

/// `v1TrialsSnapshotResponse`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct TrialsSnapshotResponse {
    pub trials: Vec<SnapshotTrial>,
}

/// `v1TrialsSampleResponseTrial`: the trial's points since the last update.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SampleTrial {
    pub trial_id: i32,
    #[schema(value_type = Object)]
    pub hparams: Value,
    pub data: Vec<DataPoint>,
}

/// `v1TrialsSampleResponse`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrialsSampleResponse {
    pub trials: Vec<SampleTrial>,
    /// Trials that joined the sample in this update.
    pub promoted_trials: Vec<i32>,
    /// Trials that left the sample in this update.
    pub demoted_trials: Vec<i32>,
}

macro_rules! stream_line {
    ($name:ident, $inner:ty, $doc:literal) => {
        #[doc = $doc]
        #[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
        pub struct $name {
            pub result: $inner,
        }
    };
}

stream_line!(ExpMetricNamesLine, ExpMetricNamesResponse, "One line of the metric-names stream.");
stream_line!(MetricBatchesLine, MetricBatchesResponse, "One line of the batches stream.");
stream_line!(TrialsSnapshotLine, TrialsSnapshotResponse, "One line of the trials-snapshot stream.");
stream_line!(TrialsSampleLine, TrialsSampleResponse, "One line of the trials-sample stream.");
