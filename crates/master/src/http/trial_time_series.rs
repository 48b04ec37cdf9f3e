//! `GET /api/v1/trials/time-series` (upstream `CompareTrials`): each trial with its metric series,
//! read in step order as columns (`Store::metric_series`: numbers, no report bodies; kept in memory
//! while the series is unchanged) and downsampled to `maxDatapoints` by `services::downsample`
//! (ends, extremes and per-bucket extremes kept). The rows a downsampling kept are remembered by
//! `services::chart_cache` while their series is unchanged; trials are read [`CONCURRENT_TRIALS`]
//! at a time (a 500-trial comparison is otherwise 500 reads one after the other).
//!
//! `GET /api/v1/trials/time-series/columns` (ours, the web UI's charts): the same query and rows,
//! answered as columns per series without the trial records (`TrialSeriesColumns`).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use futures_util::{StreamExt, TryStreamExt, stream};
use resolute_api::error::ErrorBody;
use resolute_api::time_series::{
    ComparableTrial, CompareTrialsQuery, CompareTrialsResponse, DataPoint, DownsampledMetrics, SeriesColumns, TrialSeriesColumns,
    TrialSeriesColumnsResponse,
};
use resolute_store::{MetricSeries, SeriesColumn, TRAINING_GROUP, VALIDATION_GROUP};
use serde_json::Map;

use super::experiment_wire as wire;
use super::extract::QueryParams;
use crate::error::{ApiError, ApiResult};
use crate::services::Principal;
use crate::services::chart_cache::ChartKey;
use crate::services::downsample::keep_indices;
use crate::state::AppState;

/// Points per series when the request names no budget (the WebUI's default chart width).
const DEFAULT_MAX_DATAPOINTS: usize = 1000;
/// Trials per request at most: the response holds all their series at once.
const MAX_TRIALS: usize = 1000;
/// Trials read at once (their rows and series); answers keep the requested order.
const CONCURRENT_TRIALS: usize = 8;

/// One requested series: a group and the metric names of it to return (empty: all).
#[derive(Debug, PartialEq)]
struct Selection {
    group: String,
    names: Vec<String>,
}

/// A request's parsed parameters.
struct Request {
    selections: Vec<Selection>,
    range: (i64, i64),
    budget: usize,
}

/// One selected series of a trial and the report rows its downsampling kept.
struct Kept {
    reports: Arc<MetricSeries>,
    rows: Arc<[usize]>,
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
    let request = parse(&q)?;
    let (state, request) = (&state, &request);
    let trials = per_trial(&q.trial_ids, |id| async move {
        let view = state.experiments.trial(id).await?;
        let kept = kept_series(state, request, id).await?;
        let metrics = request.selections.iter().zip(&kept).map(|(s, k)| points(&s.group, &s.names, k)).collect();
        Ok(ComparableTrial { trial: wire::trial(view.record, view.latest_validation), metrics })
    })
    .await?;
    Ok(Json(CompareTrialsResponse { trials }))
}

#[utoipa::path(get, path = "/api/v1/trials/time-series/columns", tag = "Trials", params(CompareTrialsQuery),
    responses((status = 200, body = TrialSeriesColumnsResponse),
        (status = 400, description = "no trial ids, a bad metric id or a negative budget", body = ErrorBody),
        (status = 404, description = "unknown trial", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn series_columns(
    State(state): State<AppState>,
    _caller: Principal,
    QueryParams(q): QueryParams<CompareTrialsQuery>,
) -> ApiResult<Json<TrialSeriesColumnsResponse>> {
    let request = parse(&q)?;
    let (state, request) = (&state, &request);
    let trials = per_trial(&q.trial_ids, |id| async move {
        // An unknown trial is a 404 here too, not an empty series.
        state.store.trial_by_id(id).await?;
        let kept = kept_series(state, request, id).await?;
        Ok(TrialSeriesColumns {
            trial_id: id,
            metrics: request.selections.iter().zip(&kept).map(|(s, k)| columns(&s.group, &s.names, k)).collect(),
        })
    })
    .await?;
    Ok(Json(TrialSeriesColumnsResponse { trials }))
}

/// `answer(id)` of every requested trial, [`CONCURRENT_TRIALS`] at a time, in the requested order.
async fn per_trial<T, F, Fut>(ids: &[i32], answer: F) -> ApiResult<Vec<T>>
where
    F: Fn(i32) -> Fut,
    Fut: std::future::Future<Output = ApiResult<T>>,
{
    stream::iter(ids.iter().copied()).map(answer).buffered(CONCURRENT_TRIALS).try_collect().await
}

fn parse(q: &CompareTrialsQuery) -> ApiResult<Request> {
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
    let range = (q.start_batches.map_or(i64::MIN, i64::from), q.end_batches.map_or(i64::MAX, i64::from));
    Ok(Request { selections: selections(q)?, range, budget })
}

/// Each selected series of trial `id` with the rows kept of it (cached while the series is unchanged).
async fn kept_series(state: &AppState, request: &Request, id: i32) -> ApiResult<Vec<Kept>> {
    let mut out = Vec::with_capacity(request.selections.len());
    for selection in &request.selections {
        let reports = state.store.metric_series(id, &selection.group).await?;
        let key = ChartKey {
            trial_id: id,
            group: selection.group.clone(),
            names: selection.names.clone(),
            range: request.range,
            budget: request.budget,
        };
        let rows = state.charts.rows(key, &reports, || keep_rows(&selection.names, &reports, request.range, request.budget));
        out.push(Kept { reports, rows });
    }
    Ok(out)
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

/// The metrics of a selection: those named, or all of the group's when none is.
fn metric_names<'a>(names: &'a [String], reports: &'a MetricSeries) -> &'a [String] {
    if names.is_empty() { &reports.names } else { names }
}

/// Of the reports within `[start, end]` batches, the rows (absolute, ascending) `keep_indices`
/// keeps by the selected metrics' values.
fn keep_rows(names: &[String], reports: &MetricSeries, (start, end): (i64, i64), budget: usize) -> Vec<usize> {
    let range = reports.step_range(start, end);
    let numbers: Vec<Vec<Option<f64>>> = metric_names(names, reports)
        .iter()
        .map(|n| {
            let column = reports.column(n);
            range.clone().map(|row| column.and_then(|c| c.number(row))).collect()
        })
        .collect();
    keep_indices(range.len(), &numbers, budget).into_iter().map(|i| range.start + i).collect()
}

fn metric_type(group: &str) -> &'static str {
    match group {
        TRAINING_GROUP => "METRIC_TYPE_TRAINING",
        VALIDATION_GROUP => "METRIC_TYPE_VALIDATION",
        "profiling" => "METRIC_TYPE_PROFILING",
        _ => "METRIC_TYPE_UNSPECIFIED",
    }
}

/// One group's kept reports as upstream's data points (the selected metrics each report has).
fn points(group: &str, names: &[String], kept: &Kept) -> DownsampledMetrics {
    let reports = &kept.reports;
    let names = metric_names(names, reports);
    let columns: Vec<Option<&SeriesColumn>> = names.iter().map(|n| reports.column(n)).collect();
    let epoch = reports.column("epoch");
    let data = kept
        .rows
        .iter()
        .map(|&row| {
            let values: Map<_, _> =
                names.iter().zip(&columns).filter_map(|(n, c)| c.and_then(|c| c.value(row)).map(|v| (n.clone(), v))).collect();
            DataPoint {
                batches: i32::try_from(reports.steps[row]).unwrap_or(i32::MAX),
                time: reports.report_time(row).to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
                epoch: epoch.and_then(|c| c.number(row)),
                values,
            }
        })
        .collect();
    DownsampledMetrics { data, group: group.to_owned(), metric_type: metric_type(group).to_owned() }
}

/// One group's kept reports as columns (numbers only: a non-numeric value is null).
fn columns(group: &str, names: &[String], kept: &Kept) -> SeriesColumns {
    let (reports, rows) = (&kept.reports, &kept.rows);
    let column = |c: &SeriesColumn| rows.iter().map(|&row| c.number(row)).collect::<Vec<_>>();
    let values: BTreeMap<String, Vec<Option<f64>>> = metric_names(names, reports)
        .iter()
        .map(|n| (n.clone(), reports.column(n).map(column).unwrap_or_else(|| vec![None; rows.len()])))
        .collect();
    let epochs = reports.column("epoch").map(column).filter(|e| e.iter().any(Option::is_some));
    SeriesColumns {
        group: group.to_owned(),
        batches: rows.iter().map(|&row| i32::try_from(reports.steps[row]).unwrap_or(i32::MAX)).collect(),
        times: rows.iter().map(|&row| reports.times[row] as f64 / 1e6).collect(),
        epochs,
        values,
    }
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
