//! `GET /api/v1/experiments/{experimentId}/hyperparameter-importance` (upstream's
//! `GetHPImportance` until 0.26, brought back; answered once instead of streamed): per metric,
//! how much each hyperparameter explains of the metric's variance across the trials.

use axum::Json;
use axum::extract::{Path, State};
use resolute_api::error::ErrorBody;
use resolute_api::hp_importance::{GetHpImportanceQuery, GetHpImportanceResponse, MetricHpImportance};
use resolute_api::workloads::MetricType;

use super::experiments::parse_id;
use super::extract::QueryParams;
use crate::error::{ApiError, ApiResult};
use crate::services::Principal;
use crate::state::AppState;

#[utoipa::path(get, path = "/api/v1/experiments/{experimentId}/hyperparameter-importance", tag = "Experiments",
    params(("experimentId" = i32, Path), GetHpImportanceQuery),
    responses((status = 200, body = GetHpImportanceResponse),
        (status = 400, description = "a metricType other than training or validation", body = ErrorBody),
        (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn hp_importance(
    State(state): State<AppState>,
    _caller: Principal,
    Path(id): Path<String>,
    QueryParams(q): QueryParams<GetHpImportanceQuery>,
) -> ApiResult<Json<GetHpImportanceResponse>> {
    let id = parse_id(&id, "experimentId")?;
    let group = match q.metric_type.unwrap_or(MetricType::Unspecified) {
        MetricType::Unspecified | MetricType::Validation => "validation",
        MetricType::Training => "training",
        other => {
            return Err(ApiError::invalid(format!(
                "metricType: {other} has no hyperparameter importance; use METRIC_TYPE_TRAINING or METRIC_TYPE_VALIDATION"
            )));
        }
    };
    let only = q.metric_name.filter(|n| !n.is_empty()).map(|name| (group, name));
    let view = state.experiments.hp_importance(id, only).await?;
    let mut out = GetHpImportanceResponse::default();
    for (group, metrics) in view.metrics {
        let target = if group == "training" { &mut out.training_metrics } else { &mut out.validation_metrics };
        for (name, m) in metrics {
            target.insert(
                name,
                MetricHpImportance {
                    hp_importance: m.importance,
                    experiment_progress: view.progress,
                    error: m.error,
                    pending: m.pending,
                    in_progress: false,
                    trial_count: m.trial_count,
                },
            );
        }
    }
    Ok(Json(out))
}
