//! `GET /api/v1/trials/{trialId}/workloads`.

use axum::Json;
use axum::extract::{Path, State};
use resolute_api::checkpoints::CheckpointState;
use resolute_api::error::ErrorBody;
use resolute_api::trials::{Metrics, MetricsWorkload};
use resolute_api::users::OrderBy;
use resolute_api::workloads::{
    CheckpointWorkload, GetTrialWorkloadsQuery, GetTrialWorkloadsResponse, MetricType, WorkloadContainer, WorkloadFilter,
};
use resolute_store::MetricRecord;
use serde_json::Value;

use super::experiment_wire::pagination;
use super::experiments::parse_id;
use super::extract::QueryParams;
use crate::error::ApiResult;
use crate::services::{Principal, Workload, WorkloadKinds, WorkloadQuery, trial_workloads};
use crate::state::AppState;

#[utoipa::path(get, path = "/api/v1/trials/{trialId}/workloads", tag = "Trials", params(("trialId" = i32, Path), GetTrialWorkloadsQuery),
    responses((status = 200, body = GetTrialWorkloadsResponse), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn list(
    State(state): State<AppState>,
    _caller: Principal,
    Path(id): Path<String>,
    QueryParams(q): QueryParams<GetTrialWorkloadsQuery>,
) -> ApiResult<Json<GetTrialWorkloadsResponse>> {
    let (offset, limit) = (q.offset.unwrap_or(0), q.limit.unwrap_or(0));
    let query = WorkloadQuery {
        kinds: match q.filter.unwrap_or(WorkloadFilter::Unspecified) {
            WorkloadFilter::Unspecified => WorkloadKinds::All,
            WorkloadFilter::Checkpoint => WorkloadKinds::Checkpoints,
            WorkloadFilter::Validation => WorkloadKinds::Validations,
            WorkloadFilter::CheckpointOrValidation => WorkloadKinds::CheckpointsOrValidations,
        },
        sort_metric: q.sort_key,
        sort_metric_training: q.metric_type == Some(MetricType::Training),
        descending: q.order_by == Some(OrderBy::Desc),
        group: q.group,
        remove_deleted_checkpoints: q.remove_deleted_checkpoints.unwrap_or(false),
        offset: i64::from(offset),
        limit: i64::from(limit),
    };
    let page = trial_workloads(state.store.as_ref(), parse_id(&id, "trialId")?, &query).await?;
    let with_batches = q.include_batch_metrics.unwrap_or(false);
    let pagination = pagination(offset, limit, &page);
    let workloads = page.items.into_iter().map(|w| container(w, with_batches)).collect();
    Ok(Json(GetTrialWorkloadsResponse { workloads, pagination }))
}

fn int32(n: i64) -> i32 {
    i32::try_from(n).unwrap_or(if n < 0 { i32::MIN } else { i32::MAX })
}

fn metrics(m: MetricRecord, with_batches: bool) -> MetricsWorkload {
    MetricsWorkload {
        end_time: Some(m.report_time),
        total_batches: int32(m.steps_completed),
        num_inputs: 0,
        metrics: Metrics {
            avg_metrics: Value::Object(m.avg_metrics),
            batch_metrics: (with_batches && !m.batch_metrics.is_empty()).then_some(m.batch_metrics),
        },
    }
}

fn container(w: Workload, with_batches: bool) -> WorkloadContainer {
    match w {
        Workload::Training(m) => WorkloadContainer { training: Some(metrics(m, with_batches)), ..Default::default() },
        Workload::Validation(m) => WorkloadContainer { validation: Some(metrics(m, with_batches)), ..Default::default() },
        Workload::Checkpoint(c) => WorkloadContainer {
            checkpoint: Some(CheckpointWorkload {
                uuid: c.uuid,
                end_time: Some(c.report_time),
                state: CheckpointState::from_name(&c.state).unwrap_or(CheckpointState::Unspecified),
                resources: c.resources,
                total_batches: int32(c.steps_completed),
                metadata: c.metadata,
            }),
            ..Default::default()
        },
    }
}
