//! `GET /api/v1/trials/time-series` (upstream `CompareTrials`): each trial with its metric series,
//! read in step order and downsampled to `maxDatapoints` by `services::downsample` (ends, extremes
//! and per-bucket extremes kept).

use axum::Json;
use axum::extract::State;
use resolute_api::error::ErrorBody;
use resolute_api::time_series::{ComparableTrial, CompareTrialsQuery, CompareTrialsResponse, DataPoint, DownsampledMetrics};
use resolute_store::{MetricPageQuery, MetricRecord, TRAINING_GROUP, VALIDATION_GROUP};
use serde_json::Map;

use super::experiment_wire as wire;
use super::extract::QueryParams;
use crate::error::{ApiError, ApiResult};
use crate::services::Principal;
use crate::services::downsample::keep_indices;
use crate::state::AppState;

/// Points per series when the request names no budget (the WebUI's default chart width).
const DEFAULT_MAX_DATAPOINTS: usize = 1000;
/// Trials per request at most: the response holds all their series at once.
const MAX_TRIALS: usize = 1000;
/// Reports read per store page.
const PAGE: i64 = 10_000;

/// One requested series: a group and the metric names of it to return (empty: all).
#[derive(Debug, PartialEq)]
struct Selection {
    group: String,
    names: Vec<String>,
}

#[utoipa::path(get, path = "/api/v1/trials/time-series", tag = "Trials", params(CompareTrialsQuery),
    responses((status = 200, body = CompareTrialsResponse),
        (status = 400, description = "no trial ids, a bad metric id or a negative budget", body = ErrorBody),
        (status = 404, description = "unknown trial", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn compare_trials(
    State(state): State<AppState>,
    _caller: Principal,
    QueryParams(q): QueryParams<CompareTrialsQuery>,
) -> ApiResult<Json<CompareTrialsResponse>> {
    if q.trial_ids.is_empty() {
        return Err(ApiError::invalid("trialIds: give at least one trial id"));
    }
    if q.trial_ids.len() > MAX_TRIALS {
        return Err(ApiError::invalid(format!("trialIds: at most {MAX_TRIALS} trials per request, got {}", q.trial_ids.len())));
    }
    let budget = match q.max_datapoints {
        None | Some(0) => DEFAULT_MAX_DATAPOINTS,
        Some(n) if n < 0 => return Err(ApiError::invalid(format!("maxDatapoints must not be negative, got {n}"))),
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
    };
    let selections = selections(&q)?;
    let range = (q.start_batches.map_or(i64::MIN, i64::from), q.end_batches.map_or(i64::MAX, i64::from));
    let mut trials = Vec::with_capacity(q.trial_ids.len());
    for &id in &q.trial_ids {
        let view = state.experiments.trial(id).await?;
        let mut metrics = Vec::with_capacity(selections.len());
        for selection in &selections {
            let reports = read_group(&state, id, &selection.group, range).await?;
            metrics.push(series(&selection.group, &selection.names, &reports, budget));
        }
        trials.push(ComparableTrial { trial: wire::trial(view.record, view.latest_validation), metrics });
    }
    Ok(Json(CompareTrialsResponse { trials }))
}

/// The series a request asks for: `metricIds` (`group.name`) plus `metricNames` of `group` (or
/// of `metricType`; of both training and validation when neither is given).
fn selections(q: &CompareTrialsQuery) -> ApiResult<Vec<Selection>> {
    let mut out: Vec<Selection> = Vec::new();
    let mut add = |group: &str, name: Option<&str>| {
        let index = match out.iter().position(|s| s.group == group) {
            Some(i) => i,
            None => {
                out.push(Selection { group: group.to_owned(), names: Vec::new() });
                out.len() - 1
            }
        };
        if let Some(name) = name.filter(|n| !out[index].names.iter().any(|m| m == n)) {
            out[index].names.push(name.to_owned());
        }
    };
    for id in &q.metric_ids {
        match id.split_once('.') {
            Some((group, name)) if !group.is_empty() && !name.is_empty() => add(group, Some(name)),
            _ => return Err(ApiError::invalid(format!("metricIds: {id:?} is not of the form group.metric_name"))),
        }
    }
    let group = match (q.group.as_deref().filter(|g| !g.is_empty()), q.metric_type.as_deref()) {
        (Some(g), _) => Some(g.to_owned()),
        (None, None | Some("METRIC_TYPE_UNSPECIFIED") | Some("")) => None,
        (None, Some("METRIC_TYPE_TRAINING")) => Some(TRAINING_GROUP.to_owned()),
        (None, Some("METRIC_TYPE_VALIDATION")) => Some(VALIDATION_GROUP.to_owned()),
        (None, Some("METRIC_TYPE_PROFILING")) => Some("profiling".to_owned()),
        (None, Some(other)) => {
            return Err(ApiError::invalid(format!(
                "metricType: {other:?} is not one of METRIC_TYPE_TRAINING, METRIC_TYPE_VALIDATION, METRIC_TYPE_PROFILING"
            )));
        }
    };
    let groups: Vec<String> = match group {
        Some(g) => vec![g],
        None if q.metric_ids.is_empty() || !q.metric_names.is_empty() => vec![TRAINING_GROUP.to_owned(), VALIDATION_GROUP.to_owned()],
        None => Vec::new(),
    };
    for g in &groups {
        if q.metric_names.is_empty() {
            add(g, None);
        }
        for name in &q.metric_names {
            add(g, Some(name));
        }
    }
    Ok(out)
}

/// A trial's reports of one group within `[start, end]` batches, in step order, without those a
/// restart superseded.
pub(super) async fn read_group(state: &AppState, trial_id: i32, group: &str, (start, end): (i64, i64)) -> ApiResult<Vec<MetricRecord>> {
    let mut query = MetricPageQuery { trial_id, group: Some(group.to_owned()), steps_completed: None, after: None, limit: PAGE };
    let mut out = Vec::new();
    loop {
        let page = state.store.metrics_page(&query).await?;
        let Some(last) = page.last() else { break };
        query.after = Some((last.steps_completed, last.id));
        let full = page.len() as i64 == PAGE;
        out.extend(page.into_iter().filter(|r| !r.archived && r.steps_completed >= start && r.steps_completed <= end));
        if !full {
            break;
        }
    }
    Ok(out)
}

/// One group's downsampled series: the reports `keep_indices` keeps, with the selected metrics.
fn series(group: &str, names: &[String], reports: &[MetricRecord], budget: usize) -> DownsampledMetrics {
    let names: Vec<String> = if names.is_empty() {
        let mut all: Vec<String> = reports.iter().flat_map(|r| r.avg_metrics.keys().cloned()).collect();
        all.sort();
        all.dedup();
        all
    } else {
        names.to_vec()
    };
    let columns: Vec<Vec<Option<f64>>> =
        names.iter().map(|n| reports.iter().map(|r| r.avg_metrics.get(n).and_then(|v| v.as_f64())).collect()).collect();
    let data = keep_indices(reports.len(), &columns, budget)
        .into_iter()
        .map(|i| {
            let r = &reports[i];
            let values: Map<_, _> = names.iter().filter_map(|n| r.avg_metrics.get(n).map(|v| (n.clone(), v.clone()))).collect();
            DataPoint {
                batches: i32::try_from(r.steps_completed).unwrap_or(i32::MAX),
                time: r.report_time.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
                epoch: r.avg_metrics.get("epoch").and_then(|v| v.as_f64()),
                values,
            }
        })
        .collect();
    let metric_type = match group {
        TRAINING_GROUP => "METRIC_TYPE_TRAINING",
        VALIDATION_GROUP => "METRIC_TYPE_VALIDATION",
        "profiling" => "METRIC_TYPE_PROFILING",
        _ => "METRIC_TYPE_UNSPECIFIED",
    };
    DownsampledMetrics { data, group: group.to_owned(), metric_type: metric_type.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(ids: &[&str], names: &[&str], group: Option<&str>, metric_type: Option<&str>) -> CompareTrialsQuery {
        CompareTrialsQuery {
            trial_ids: vec![1],
            metric_ids: ids.iter().map(|s| s.to_string()).collect(),
            metric_names: names.iter().map(|s| s.to_string()).collect(),
            group: group.map(str::to_owned),
            metric_type: metric_type.map(str::to_owned),
            ..Default::default()
        }
    }

    fn sel(group: &str, names: &[&str]) -> Selection {
        Selection { group: group.to_owned(), names: names.iter().map(|s| s.to_string()).collect() }
    }

    #[test]
    fn metric_ids_and_names_select_groups() {
        let s = selections(&query(&["validation.accuracy", "training.loss", "validation.loss"], &[], None, None)).unwrap();
        assert_eq!(s, vec![sel("validation", &["accuracy", "loss"]), sel("training", &["loss"])]);
        let s = selections(&query(&[], &["loss"], None, Some("METRIC_TYPE_VALIDATION"))).unwrap();
        assert_eq!(s, vec![sel("validation", &["loss"])]);
        let s = selections(&query(&[], &["loss"], Some("inference"), None)).unwrap();
        assert_eq!(s, vec![sel("inference", &["loss"])]);
        let s = selections(&query(&[], &[], None, None)).unwrap();
        assert_eq!(s, vec![sel("training", &[]), sel("validation", &[])]);
    }

    #[test]
    fn malformed_selections_name_the_field() {
        let e = selections(&query(&["accuracy"], &[], None, None)).unwrap_err();
        assert!(e.message.contains("metricIds"), "{}", e.message);
        let e = selections(&query(&[], &[], None, Some("METRIC_TYPE_BOGUS"))).unwrap_err();
        assert!(e.message.contains("metricType"), "{}", e.message);
    }
}
