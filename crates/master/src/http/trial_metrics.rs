//! `GET /api/v1/trials/metrics/trial_metrics` (the SDK's `Trial.iter_metrics`) and the legacy
//! `…/training_metrics` and `…/validation_metrics`: streams of `{"result": {"metrics": [MetricsReport]}}`.

use axum::extract::State;
use axum::response::Response;
use resolute_api::error::ErrorBody;
use resolute_store::{MetricPageQuery, MetricRecord, TRAINING_GROUP, VALIDATION_GROUP};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::extract::QueryParams;
use super::ndjson;
use crate::error::{ApiError, ApiResult};
use crate::services::Principal;
use crate::state::AppState;

/// One line of these streams, as the document describes it (the handler builds it with `report`).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct StreamedMetrics {
    /// `{"metrics": [v1MetricsReport]}`.
    #[schema(value_type = Object)]
    result: Value,
}

/// Reports per streamed line, as upstream batches them.
const BATCH: i64 = 1000;

#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct MetricsQuery {
    /// The trials whose reports to stream (repeat the key for several).
    #[serde(default)]
    trial_ids: Vec<i32>,
    /// The metric group (`training`, `validation` or a custom one); only `trial_metrics` reads it.
    #[serde(default)]
    group: Option<String>,
}

#[utoipa::path(get, path = "/api/v1/trials/metrics/trial_metrics", tag = "Trials", params(MetricsQuery),
    responses((status = 200, description = "newline-delimited `{\"result\": {\"metrics\": [v1MetricsReport]}}`, one line per 1000 reports", body = StreamedMetrics),
        (status = 400, description = "no trial ids", body = ErrorBody), (status = 404, description = "unknown trial", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn trial_metrics(
    State(state): State<AppState>,
    _caller: Principal,
    QueryParams(q): QueryParams<MetricsQuery>,
) -> ApiResult<Response> {
    let group =
        q.group.filter(|g| !g.is_empty()).ok_or_else(|| ApiError::invalid("group: give the metric group, e.g. training or validation"))?;
    stream(state, q.trial_ids, group).await
}

#[utoipa::path(get, path = "/api/v1/trials/metrics/training_metrics", tag = "Trials", params(MetricsQuery),
    responses((status = 200, description = "newline-delimited `{\"result\": {\"metrics\": [v1MetricsReport]}}`, one line per 1000 reports", body = StreamedMetrics),
        (status = 400, description = "no trial ids", body = ErrorBody), (status = 404, description = "unknown trial", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn training_metrics(
    State(state): State<AppState>,
    _caller: Principal,
    QueryParams(q): QueryParams<MetricsQuery>,
) -> ApiResult<Response> {
    stream(state, q.trial_ids, TRAINING_GROUP.to_owned()).await
}

#[utoipa::path(get, path = "/api/v1/trials/metrics/validation_metrics", tag = "Trials", params(MetricsQuery),
    responses((status = 200, description = "newline-delimited `{\"result\": {\"metrics\": [v1MetricsReport]}}`, one line per 1000 reports", body = StreamedMetrics),
        (status = 400, description = "no trial ids", body = ErrorBody), (status = 404, description = "unknown trial", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn validation_metrics(
    State(state): State<AppState>,
    _caller: Principal,
    QueryParams(q): QueryParams<MetricsQuery>,
) -> ApiResult<Response> {
    stream(state, q.trial_ids, VALIDATION_GROUP.to_owned()).await
}

async fn stream(state: AppState, trial_ids: Vec<i32>, group: String) -> ApiResult<Response> {
    if trial_ids.is_empty() {
        return Err(ApiError::invalid("trialIds: give at least one trial id"));
    }
    // Unknown trials are a 404 before the stream starts.
    for id in &trial_ids {
        state.store.trial_by_id(*id).await?;
    }
    let (tx, rx) = mpsc::channel(2);
    tokio::spawn(async move {
        for id in trial_ids {
            // One batch in memory at a time, read by keyset: the stream costs what it sends.
            let mut query = MetricPageQuery { trial_id: id, group: Some(group.clone()), steps_completed: None, after: None, limit: BATCH };
            loop {
                let reports = match state.store.metrics_page(&query).await {
                    Ok(r) => r,
                    Err(e) => {
                        let _ = tx.send(Err(e.into())).await;
                        return;
                    }
                };
                let Some(last) = reports.last() else { break };
                query.after = Some((last.steps_completed, last.id));
                let full = reports.len() as i64 == BATCH;
                if tx.send(Ok(vec![reports])).await.is_err() {
                    return;
                }
                if !full {
                    break;
                }
            }
        }
    });
    Ok(ndjson::stream(rx, |chunk: Vec<MetricRecord>| json!({"metrics": chunk.iter().map(report).collect::<Vec<Value>>()})))
}

/// Upstream keeps validation values under `validation_metrics` and others under `avg_metrics`.
fn report(r: &MetricRecord) -> Value {
    let metrics = if r.group == VALIDATION_GROUP {
        json!({"validation_metrics": r.avg_metrics})
    } else {
        json!({"avg_metrics": r.avg_metrics, "batch_metrics": if r.batch_metrics.is_empty() { Value::Null } else { json!(r.batch_metrics) }})
    };
    json!({
        "id": r.id,
        "trialId": r.trial_id,
        "trialRunId": r.trial_run_id,
        "group": r.group,
        "totalBatches": r.steps_completed,
        "endTime": r.report_time.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        "metrics": metrics,
        "archived": r.archived,
    })
}
