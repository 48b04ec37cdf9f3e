//! The experiment `metrics-stream` endpoints (upstream's server streams `ExpMetricNames`,
//! `MetricBatches`, `TrialsSnapshot`, `TrialsSample`): newline-delimited `{"result": …}` updates.
//! The first update is sent at once; while any experiment named is not terminal, another follows
//! every `periodSeconds` (default 30) with what changed; the stream ends after the update that
//! follows the experiments becoming terminal, or when the client goes away.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::response::Response;
use resolute_api::error::ErrorBody;
use resolute_api::metrics_stream::{
    ExpMetricNamesLine, ExpMetricNamesQuery, ExpMetricNamesResponse, MetricBatchesLine, MetricBatchesResponse, MetricStreamQuery,
    SampleTrial, SnapshotTrial, TrialsSampleLine, TrialsSampleResponse, TrialsSnapshotLine, TrialsSnapshotResponse,
};
use resolute_api::time_series::DataPoint;
use resolute_store::{ExperimentRecord, MetricPageQuery, MetricRecord, OrderDirection, TrialFilter, TrialRecord, TrialSort};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::extract::QueryParams;
use super::ndjson;
use crate::domain::ExperimentState;
use crate::error::{ApiError, ApiResult};
use crate::services::Principal;
use crate::services::downsample::keep_indices;
use crate::services::metrics_stream::{NamesSent, group_of, nearest, period, summary_names};
use crate::state::AppState;

/// Experiments per metric-names request at most.
const MAX_EXPERIMENTS: usize = 1000;
const DEFAULT_MAX_TRIALS: usize = 25;
const DEFAULT_MAX_DATAPOINTS: usize = 1000;
const DEFAULT_BATCHES_MARGIN: i64 = 10;
/// Reports read per store page.
const PAGE: i64 = 10_000;

type Updates<T> = mpsc::Sender<ApiResult<Vec<T>>>;

#[utoipa::path(get, path = "/api/v1/experiments/metrics-stream/metric-names", tag = "Experiments", params(ExpMetricNamesQuery),
    responses((status = 200, description = "newline-delimited updates: the names first seen since the previous one", body = ExpMetricNamesLine),
        (status = 400, description = "no ids, or a negative period", body = ErrorBody), (status = 404, description = "unknown experiment", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn metric_names(
    State(state): State<AppState>,
    _caller: Principal,
    QueryParams(q): QueryParams<ExpMetricNamesQuery>,
) -> ApiResult<Response> {
    if q.ids.is_empty() {
        return Err(ApiError::invalid("ids: give at least one experiment id"));
    }
    if q.ids.len() > MAX_EXPERIMENTS {
        return Err(ApiError::invalid(format!("ids: at most {MAX_EXPERIMENTS} experiments per request, got {}", q.ids.len())));
    }
    let period = period(q.period_seconds)?;
    let mut ids = q.ids;
    ids.sort_unstable();
    ids.dedup();
    for &id in &ids {
        experiment(&state, id).await?;
    }
    let (tx, rx) = mpsc::channel(2);
    tokio::spawn(async move {
        let mut sent = NamesSent::default();
        loop {
            let step = async {
                let done = all_terminal(&state, &ids).await?;
                let mut searcher = Vec::new();
                let mut names = Vec::new();
                for &id in &ids {
                    let exp = experiment(&state, id).await?;
                    if let Some(metric) = exp.config.pointer("/searcher/metric").and_then(Value::as_str) {
                        searcher.push(metric.to_owned());
                    }
                    for trial in trials(&state, id).await? {
                        names.extend(summary_names(&trial.summary_metrics));
                    }
                }
                Ok::<_, ApiError>((done, sent.update(searcher, names)))
            };
            let (done, update) = match step.await {
                Ok(v) => v,
                Err(e) => return send_error(&tx, e).await,
            };
            if !send(&tx, update).await || done || !wait(&tx, period).await {
                return;
            }
        }
    });
    Ok(ndjson::stream(rx, |result: ExpMetricNamesResponse| result))
}

#[utoipa::path(get, path = "/api/v1/experiments/{experimentId}/metrics-stream/batches", tag = "Experiments",
    params(("experimentId" = i32, Path), MetricStreamQuery),
    responses((status = 200, description = "newline-delimited updates: the batches at which the metric was first seen since the previous one", body = MetricBatchesLine),
        (status = 400, description = "no metric name or group, or a negative period", body = ErrorBody), (status = 404, description = "unknown experiment", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn metric_batches(
    State(state): State<AppState>,
    _caller: Principal,
    Path(experiment_id): Path<i32>,
    QueryParams(q): QueryParams<MetricStreamQuery>,
) -> ApiResult<Response> {
    let (name, group, period) = common(&q)?;
    experiment(&state, experiment_id).await?;
    let (tx, rx) = mpsc::channel(2);
    tokio::spawn(async move {
        let mut sent: BTreeSet<i64> = BTreeSet::new();
        let mut first = true;
        loop {
            let step = async {
                let done = all_terminal(&state, &[experiment_id]).await?;
                let mut new = BTreeSet::new();
                for trial in trials(&state, experiment_id).await? {
                    for r in read_group(&state, trial.id, &group, (i64::MIN, i64::MAX)).await? {
                        if r.avg_metrics.contains_key(&name) && !sent.contains(&r.steps_completed) {
                            new.insert(r.steps_completed);
                        }
                    }
                }
                Ok::<_, ApiError>((done, new))
            };
            let (done, new) = match step.await {
                Ok(v) => v,
                Err(e) => return send_error(&tx, e).await,
            };
            let update = (first || !new.is_empty()).then(|| MetricBatchesResponse { batches: new.iter().map(|b| clamp(*b)).collect() });
            sent.extend(new);
            first = false;
            if !send(&tx, update).await || done || !wait(&tx, period).await {
                return;
            }
        }
    });
    Ok(ndjson::stream(rx, |result: MetricBatchesResponse| result))
}

#[utoipa::path(get, path = "/api/v1/experiments/{experimentId}/metrics-stream/trials-snapshot", tag = "Experiments",
    params(("experimentId" = i32, Path), MetricStreamQuery),
    responses((status = 200, description = "newline-delimited updates: every trial's value nearest batchesProcessed", body = TrialsSnapshotLine),
        (status = 400, description = "no metric name, group or batchesProcessed, or a negative margin or period", body = ErrorBody),
        (status = 404, description = "unknown experiment", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn trials_snapshot(
    State(state): State<AppState>,
    _caller: Principal,
    Path(experiment_id): Path<i32>,
    QueryParams(q): QueryParams<MetricStreamQuery>,
) -> ApiResult<Response> {
    let (name, group, period) = common(&q)?;
    let target =
        i64::from(q.batches_processed.ok_or_else(|| ApiError::invalid("batchesProcessed: give the point of progress, in batches"))?);
    let margin = match q.batches_margin {
        None => DEFAULT_BATCHES_MARGIN,
        Some(m) if m < 0 => return Err(ApiError::invalid(format!("batchesMargin must not be negative, got {m}"))),
        Some(m) => i64::from(m),
    };
    experiment(&state, experiment_id).await?;
    let (tx, rx) = mpsc::channel(2);
    tokio::spawn(async move {
        loop {
            let step = async {
                let done = all_terminal(&state, &[experiment_id]).await?;
                let mut out = Vec::new();
                for trial in trials(&state, experiment_id).await? {
                    let reports = read_window(&state, trial.id, &group, target - margin, target + margin).await?;
                    if let Some((batches, metric)) = nearest(&reports, &name, target, margin) {
                        out.push(SnapshotTrial {
                            trial_id: trial.id,
                            hparams: trial.hparams.clone(),
                            metric,
                            batches_processed: clamp(batches),
                        });
                    }
                }
                Ok::<_, ApiError>((done, TrialsSnapshotResponse { trials: out }))
            };
            let (done, update) = match step.await {
                Ok(v) => v,
                Err(e) => return send_error(&tx, e).await,
            };
            if !send(&tx, Some(update)).await || done || !wait(&tx, period).await {
                return;
            }
        }
    });
    Ok(ndjson::stream(rx, |result: TrialsSnapshotResponse| result))
}

#[utoipa::path(get, path = "/api/v1/experiments/{experimentId}/metrics-stream/trials-sample", tag = "Experiments",
    params(("experimentId" = i32, Path), MetricStreamQuery),
    responses((status = 200, description = "newline-delimited updates: the sampled trials' new points, and trials that joined or left the sample", body = TrialsSampleLine),
        (status = 400, description = "no metric name or group, or a negative bound or period", body = ErrorBody),
        (status = 404, description = "unknown experiment", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn trials_sample(
    State(state): State<AppState>,
    _caller: Principal,
    Path(experiment_id): Path<i32>,
    QueryParams(q): QueryParams<MetricStreamQuery>,
) -> ApiResult<Response> {
    let (name, group, period) = common(&q)?;
    let max_trials = non_negative("maxTrials", q.max_trials, DEFAULT_MAX_TRIALS)?;
    let budget = non_negative("maxDatapoints", q.max_datapoints, DEFAULT_MAX_DATAPOINTS)?;
    let range = (q.start_batches.map_or(i64::MIN, i64::from), q.end_batches.map_or(i64::MAX, i64::from));
    let exp = experiment(&state, experiment_id).await?;
    let smaller_is_better = exp.config.pointer("/searcher/smaller_is_better").and_then(Value::as_bool).unwrap_or(true);
    let (tx, rx) = mpsc::channel(2);
    tokio::spawn(async move {
        // Sampled trials and the last batch sent for each.
        let mut sampled: BTreeMap<i32, Option<i64>> = BTreeMap::new();
        let mut first = true;
        loop {
            let step = async {
                let done = all_terminal(&state, &[experiment_id]).await?;
                let filter = TrialFilter {
                    experiment_id,
                    sort: TrialSort::BestValidation,
                    order: if smaller_is_better { OrderDirection::Asc } else { OrderDirection::Desc },
                    limit: Some(i64::try_from(max_trials).unwrap_or(i64::MAX)),
                    ..Default::default()
                };
                let chosen = state.store.list_trials(&filter).await?.trials;
                let now: BTreeSet<i32> = chosen.iter().map(|t| t.id).collect();
                let mut update = TrialsSampleResponse {
                    demoted_trials: sampled.keys().filter(|id| !now.contains(id)).copied().collect(),
                    ..Default::default()
                };
                sampled.retain(|id, _| now.contains(id));
                for trial in chosen {
                    let promoted = !sampled.contains_key(&trial.id);
                    if promoted {
                        update.promoted_trials.push(trial.id);
                    }
                    let after = sampled.get(&trial.id).copied().flatten();
                    let reports: Vec<MetricRecord> = read_group(&state, trial.id, &group, range)
                        .await?
                        .into_iter()
                        .filter(|r| r.avg_metrics.contains_key(&name) && after.is_none_or(|a| r.steps_completed > a))
                        .collect();
                    let data = points(&reports, &name, if promoted { budget } else { usize::MAX });
                    sampled.insert(trial.id, reports.last().map(|r| r.steps_completed).or(after));
                    if promoted || !data.is_empty() {
                        update.trials.push(SampleTrial { trial_id: trial.id, hparams: trial.hparams, data });
                    }
                }
                Ok::<_, ApiError>((done, update))
            };
            let (done, update) = match step.await {
                Ok(v) => v,
                Err(e) => return send_error(&tx, e).await,
            };
            let changed = !update.trials.is_empty() || !update.promoted_trials.is_empty() || !update.demoted_trials.is_empty();
            let update = (first || changed).then_some(update);
            first = false;
            if !send(&tx, update).await || done || !wait(&tx, period).await {
                return;
            }
        }
    });
    Ok(ndjson::stream(rx, |result: TrialsSampleResponse| result))
}

/// `metricName`, the group and the period every per-experiment stream needs.
fn common(q: &MetricStreamQuery) -> ApiResult<(String, String, Duration)> {
    let name = q.metric_name.clone().filter(|n| !n.is_empty()).ok_or_else(|| ApiError::invalid("metricName: give the metric's name"))?;
    let group = group_of(q.group.as_deref(), q.metric_type.as_deref())?;
    Ok((name, group, period(q.period_seconds)?))
}

fn non_negative(field: &str, value: Option<i32>, default: usize) -> ApiResult<usize> {
    match value {
        None | Some(0) => Ok(default),
        Some(n) if n < 0 => Err(ApiError::invalid(format!("{field} must not be negative, got {n}"))),
        Some(n) => Ok(usize::try_from(n).unwrap_or(default)),
    }
}

async fn experiment(state: &AppState, id: i32) -> ApiResult<ExperimentRecord> {
    state.store.experiment_by_id(id).await.map_err(|e| match e {
        resolute_store::StoreError::NotFound { .. } => ApiError::not_found(format!("experiment {id} not found")),
        other => other.into(),
    })
}

async fn trials(state: &AppState, experiment_id: i32) -> ApiResult<Vec<TrialRecord>> {
    Ok(state.store.list_trials(&TrialFilter { experiment_id, ..Default::default() }).await?.trials)
}

/// Whether every experiment has finished for good (read before an update, so the last update
/// holds everything they reported).
async fn all_terminal(state: &AppState, ids: &[i32]) -> ApiResult<bool> {
    for &id in ids {
        let exp = experiment(state, id).await?;
        if !ExperimentState::parse(&exp.state).is_some_and(ExperimentState::is_terminal) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A trial's live reports of `group` with `lo <= batches <= hi`, read from `lo` on.
async fn read_window(state: &AppState, trial_id: i32, group: &str, lo: i64, hi: i64) -> ApiResult<Vec<MetricRecord>> {
    let mut query = MetricPageQuery {
        trial_id,
        group: Some(group.to_owned()),
        steps_completed: None,
        after: Some((lo.saturating_sub(1), i64::MAX)),
        limit: PAGE,
    };
    let mut out = Vec::new();
    loop {
        let page = state.store.metrics_page(&query).await?;
        let Some(last) = page.last() else { break };
        query.after = Some((last.steps_completed, last.id));
        let more = page.len() as i64 == PAGE && last.steps_completed <= hi;
        out.extend(page.into_iter().filter(|r| !r.archived && r.steps_completed >= lo && r.steps_completed <= hi));
        if !more {
            break;
        }
    }
    Ok(out)
}

/// The reports as data points of `name`, downsampled to `budget`.
fn points(reports: &[MetricRecord], name: &str, budget: usize) -> Vec<DataPoint> {
    let column: Vec<Option<f64>> = reports.iter().map(|r| r.avg_metrics.get(name).and_then(Value::as_f64)).collect();
    keep_indices(reports.len(), &[column], budget)
        .into_iter()
        .map(|i| {
            let r = &reports[i];
            let mut values = Map::new();
            if let Some(v) = r.avg_metrics.get(name) {
                values.insert(name.to_owned(), v.clone());
            }
            DataPoint {
                batches: clamp(r.steps_completed),
                time: r.report_time.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
                epoch: r.avg_metrics.get("epoch").and_then(Value::as_f64),
                values,
            }
        })
        .collect()
}

fn clamp(batches: i64) -> i32 {
    i32::try_from(batches).unwrap_or(if batches < 0 { i32::MIN } else { i32::MAX })
}

/// Sends an update (nothing for `None`); false when the client went away.
async fn send<T>(tx: &Updates<T>, update: Option<T>) -> bool {
    match update {
        Some(u) => tx.send(Ok(vec![u])).await.is_ok(),
        None => !tx.is_closed(),
    }
}

async fn send_error<T>(tx: &Updates<T>, e: ApiError) {
    let _ = tx.send(Err(e)).await;
}

/// Waits one period; false when the client went away meanwhile.
async fn wait<T>(tx: &Updates<T>, period: Duration) -> bool {
    tokio::select! {
        () = tokio::time::sleep(period) => true,
        () = tx.closed() => false,
    }
}

/// A trial's reports of one group within `[start, end]` batches, in step order, without those a
/// restart superseded (the streams need whole reports, so they page through the store rather than
/// read the time-series columns).
async fn read_group(state: &AppState, trial_id: i32, group: &str, (start, end): (i64, i64)) -> ApiResult<Vec<MetricRecord>> {
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
