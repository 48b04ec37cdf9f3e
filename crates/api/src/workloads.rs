//! A trial's workloads (`GET /api/v1/trials/{trialId}/workloads`): its training and validation
//! reports and its checkpoints, one per [`WorkloadContainer`], as `det trial describe` and
//! `det experiment describe` read them.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::checkpoints::CheckpointState;
use crate::pagination::Pagination;
use crate::trials::MetricsWorkload;
use crate::users::OrderBy;
use crate::wire_enum::wire_enum;

wire_enum! {
    /// `GetTrialWorkloadsRequestFilterOption`.
    pub enum WorkloadFilter {
        Unspecified = "FILTER_OPTION_UNSPECIFIED",
        Checkpoint = "FILTER_OPTION_CHECKPOINT",
        Validation = "FILTER_OPTION_VALIDATION",
        CheckpointOrValidation = "FILTER_OPTION_CHECKPOINT_OR_VALIDATION",
    }
}

wire_enum! {
    /// `v1MetricType`: which report a `sortKey` metric is read from.
    pub enum MetricType {
        Unspecified = "METRIC_TYPE_UNSPECIFIED",
        Training = "METRIC_TYPE_TRAINING",
        Validation = "METRIC_TYPE_VALIDATION",
        Profiling = "METRIC_TYPE_PROFILING",
    }
}

/// Query parameters of `GET /api/v1/trials/{trialId}/workloads`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct GetTrialWorkloadsQuery {
    #[serde(default, alias = "order_by")]
    pub order_by: Option<OrderBy>,
    /// Negative counts from the end.
    #[serde(default)]
    pub offset: Option<i32>,
    /// 0 or absent: all.
    #[serde(default)]
    pub limit: Option<i32>,
    /// `batches` (default) or a metric name.
    #[serde(default, alias = "sort_key")]
    pub sort_key: Option<String>,
    #[serde(default)]
    pub filter: Option<WorkloadFilter>,
    #[serde(default, alias = "include_batch_metrics")]
    pub include_batch_metrics: Option<bool>,
    #[serde(default, alias = "metric_type")]
    pub metric_type: Option<MetricType>,
    /// Only reports of this metric group (`training`, `validation`, …).
    #[serde(default)]
    pub group: Option<String>,
    #[serde(default, alias = "remove_deleted_checkpoints")]
    pub remove_deleted_checkpoints: Option<bool>,
}

/// `v1CheckpointWorkload`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointWorkload {
    pub uuid: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<DateTime<Utc>>,
    pub state: CheckpointState,
    #[serde(with = "crate::int64::map")]
    #[schema(value_type = BTreeMap<String, String>)]
    pub resources: BTreeMap<String, i64>,
    pub total_batches: i32,
    #[schema(value_type = Object)]
    pub metadata: Value,
}

/// `v1WorkloadContainer`: exactly one of its fields is set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadContainer {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub training: Option<MetricsWorkload>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<MetricsWorkload>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<CheckpointWorkload>,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct GetTrialWorkloadsResponse {
    pub workloads: Vec<WorkloadContainer>,
    pub pagination: Pagination,
}
