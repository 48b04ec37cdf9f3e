//! What a TensorBoard shows, resolved at launch: the trials (every trial of the named experiments,
//! or the named trials), each trial's event-file directory in its experiment's checkpoint storage,
//! and — beyond upstream — for trials that wrote no event files, the metrics the master stored,
//! downsampled, so the TensorBoard still draws their curves. The result goes into the task's
//! `extra` (`experimentIds`, `trialIds`, `sources`); `task_kinds::tensorboard` turns `sources`
//! into the launcher's input file.

use std::collections::BTreeMap;
use std::path::Path;

use resolute_storage::StorageConfig;
use resolute_store::{ExperimentRecord, MetricRecord, OrderDirection, Store, StoreError, TrialFilter, TrialRecord, TrialSort};
use serde::Serialize;
use serde_json::{Value, json};

use super::experiments::searcher_metric;
use crate::error::{ApiError, ApiResult};

/// Upstream's limit: at most this many trials per TensorBoard; an experiment with more shows its
/// best ones by the searcher metric.
pub const MAX_TRIALS: usize = 100;
/// Stored metrics sent for a trial without event files: at most this many points per metric
/// (kept evenly spaced, first and last included), which also bounds the task's size.
pub const MAX_POINTS_PER_METRIC: usize = 1000;

/// Stored metrics by group and name, each a list of `[steps_completed, unix time, value]`.
pub type MetricSeries = BTreeMap<String, BTreeMap<String, Vec<(i64, f64, f64)>>>;

/// One trial as the launcher reads it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TrialSource {
    pub experiment_id: i32,
    pub trial_id: i32,
    /// Where the harness uploads its event files; `None` for storage the master cannot name a
    /// directory in (s3, gcs, azure).
    pub event_dir: Option<String>,
    /// For storage in a bucket: where the harness uploaded the event files, which the launcher
    /// syncs with the harness's own fetcher (as upstream's TensorBoard task does).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bucket_events: Option<BucketEvents>,
    /// Only for trials whose event directory held no event files (always for a bucket: the
    /// launcher uses them when the bucket holds none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics: Option<MetricSeries>,
}

/// A trial's event files in a bucket.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BucketEvents {
    /// The experiment's `checkpoint_storage`, credentials included, as upstream hands it to its
    /// TensorBoard task.
    pub storage: Value,
    /// The key prefix below which the harness uploaded them.
    pub key_prefix: String,
}

/// The trials of a launch request, as `extra` for the task.
pub async fn resolve(store: &dyn Store, experiment_ids: &[i32], trial_ids: &[i32]) -> ApiResult<Value> {
    if experiment_ids.is_empty() && trial_ids.is_empty() {
        return Err(ApiError::invalid("a TensorBoard needs experiment ids or trial ids (experimentIds or trialIds)"));
    }
    if trial_ids.len() > MAX_TRIALS {
        return Err(ApiError::invalid(format!(
            "a TensorBoard shows at most {MAX_TRIALS} trials; {} trial ids were given",
            trial_ids.len()
        )));
    }
    let cluster_id = store.cluster_id().await?;
    // Any user may read any experiment (upstream's open-source rule), so seeing them needs only
    // that they exist.
    let mut experiments: BTreeMap<i32, ExperimentRecord> = BTreeMap::new();
    let mut trials: Vec<TrialRecord> = Vec::new();
    for &id in experiment_ids {
        let experiment = experiment(store, id).await?;
        let (_, smaller_is_better) = searcher_metric(&experiment.config);
        let page = store
            .list_trials(&TrialFilter {
                experiment_id: id,
                sort: TrialSort::BestValidation,
                order: if smaller_is_better { OrderDirection::Asc } else { OrderDirection::Desc },
                limit: Some(MAX_TRIALS as i64),
                ..TrialFilter::default()
            })
            .await?;
        trials.extend(page.trials);
        experiments.insert(id, experiment);
    }
    for &id in trial_ids {
        let trial = match store.trial_by_id(id).await {
            Ok(t) => t,
            Err(StoreError::NotFound { .. }) => return Err(ApiError::not_found(format!("trial {id} not found"))),
            Err(e) => return Err(e.into()),
        };
        if let std::collections::btree_map::Entry::Vacant(slot) = experiments.entry(trial.experiment_id) {
            slot.insert(experiment(store, trial.experiment_id).await?);
        }
        trials.push(trial);
    }
    let mut seen = std::collections::HashSet::new();
    trials.retain(|t| seen.insert(t.id));
    trials.truncate(MAX_TRIALS);

    let mut sources = Vec::with_capacity(trials.len());
    for trial in &trials {
        let config = experiments.get(&trial.experiment_id).map(|e| e.config.value()).unwrap_or(&Value::Null);
        let event_dir = event_dir(config, &cluster_id, trial.experiment_id, trial.id);
        let bucket_events = bucket_events(config, &cluster_id, trial.experiment_id, trial.id);
        let metrics = if has_event_files(event_dir.as_deref()) {
            None
        } else {
            Some(metric_series(&store.metrics_for_trial(trial.id, None, false).await?, MAX_POINTS_PER_METRIC))
        };
        sources.push(TrialSource { experiment_id: trial.experiment_id, trial_id: trial.id, event_dir, bucket_events, metrics });
    }
    let experiment_ids: Vec<i32> = if experiment_ids.is_empty() { experiments.keys().copied().collect() } else { experiment_ids.to_vec() };
    let trial_ids: Vec<i32> = trials.iter().map(|t| t.id).collect();
    Ok(json!({ "experimentIds": experiment_ids, "trialIds": trial_ids, "sources": sources }))
}

async fn experiment(store: &dyn Store, id: i32) -> ApiResult<ExperimentRecord> {
    match store.experiment_by_id(id).await {
        Ok(e) => Ok(e),
        Err(StoreError::NotFound { .. }) => Err(ApiError::not_found(format!("experiment {id} not found"))),
        Err(e) => Err(e.into()),
    }
}

/// Where a trial's event files are in its experiment's bucket, if its storage is one.
pub fn bucket_events(experiment_config: &Value, cluster_id: &str, experiment_id: i32, trial_id: i32) -> Option<BucketEvents> {
    let storage = StorageConfig::from_experiment_config(experiment_config).ok()?;
    let key_prefix = storage.tensorboard_key_prefix(cluster_id, experiment_id, trial_id).ok()??;
    Some(BucketEvents { storage: experiment_config.get("checkpoint_storage")?.clone(), key_prefix })
}

/// A trial's event-file directory in its experiment's checkpoint storage, if the storage is one
/// the master can name a directory in.
pub fn event_dir(experiment_config: &Value, cluster_id: &str, experiment_id: i32, trial_id: i32) -> Option<String> {
    let storage = StorageConfig::from_experiment_config(experiment_config).ok()?;
    storage.tensorboard_dir(cluster_id, experiment_id, trial_id).ok().map(|p| p.display().to_string())
}

/// Whether the master sees event files under `dir`. The launcher checks again where it runs.
fn has_event_files(dir: Option<&str>) -> bool {
    fn walk(dir: &Path, depth: usize) -> bool {
        let Ok(entries) = std::fs::read_dir(dir) else { return false };
        entries.flatten().any(|entry| {
            let path = entry.path();
            if path.is_dir() { depth < 8 && walk(&path, depth + 1) } else { entry.file_name().to_string_lossy().contains("tfevents") }
        })
    }
    dir.is_some_and(|d| walk(Path::new(d), 0))
}

/// Stored reports as series per group and metric (numbers only), each downsampled to `cap`.
pub fn metric_series(reports: &[MetricRecord], cap: usize) -> MetricSeries {
    let mut series = MetricSeries::new();
    let mut ordered: Vec<&MetricRecord> = reports.iter().filter(|r| !r.archived).collect();
    ordered.sort_by_key(|r| (r.steps_completed, r.id));
    for report in ordered {
        let time = report.report_time.timestamp_millis() as f64 / 1000.0;
        for (name, value) in &report.avg_metrics {
            // Booleans and strings have no curve.
            let Some(value) = value.as_f64().filter(|_| value.is_number()) else { continue };
            series.entry(report.group.clone()).or_default().entry(name.clone()).or_default().push((report.steps_completed, time, value));
        }
    }
    for metrics in series.values_mut() {
        for points in metrics.values_mut() {
            *points = downsample(std::mem::take(points), cap);
        }
    }
    series
}

/// At most `cap` of `points`, evenly spaced by index, keeping the first and the last.
pub fn downsample<T>(points: Vec<T>, cap: usize) -> Vec<T> {
    let n = points.len();
    if n <= cap {
        return points;
    }
    if cap <= 1 {
        return points.into_iter().last().into_iter().take(cap).collect();
    }
    let mut keep = vec![false; n];
    for i in 0..cap {
        keep[i * (n - 1) / (cap - 1)] = true;
    }
    points.into_iter().zip(keep).filter_map(|(p, k)| k.then_some(p)).collect()
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};

    use super::*;

    fn report(id: i64, group: &str, step: i64, metrics: Value) -> MetricRecord {
        MetricRecord {
            id,
            trial_id: 1,
            trial_run_id: 1,
            group: group.to_owned(),
            steps_completed: step,
            report_time: Utc.timestamp_opt(1_700_000_000 + step, 0).unwrap(),
            avg_metrics: metrics.as_object().unwrap().clone(),
            batch_metrics: Vec::new(),
            archived: false,
        }
    }

    #[test]
    fn downsampling_keeps_evenly_spaced_points_with_both_ends() {
        assert_eq!(downsample((0..5).collect(), 10), vec![0, 1, 2, 3, 4]);
        assert_eq!(downsample((0..10).collect(), 4), vec![0, 3, 6, 9]);
        let big = downsample((0..100_000).collect::<Vec<i32>>(), MAX_POINTS_PER_METRIC);
        assert_eq!(big.len(), MAX_POINTS_PER_METRIC);
        assert_eq!((big[0], *big.last().unwrap()), (0, 99_999));
        assert!(big.windows(2).all(|w| w[1] - w[0] >= 99 && w[1] - w[0] <= 101), "evenly spaced");
        assert_eq!(downsample(vec![1, 2, 3], 1), vec![3]);
        assert!(downsample(vec![1, 2, 3], 0).is_empty());
    }

    #[test]
    fn stored_metrics_become_numeric_series_by_group_in_step_order() {
        let reports = vec![
            report(2, "training", 200, json!({"loss": 0.4, "note": "x"})),
            report(1, "training", 100, json!({"loss": 0.5, "done": true})),
            report(3, "validation", 200, json!({"val_loss": 0.3})),
            MetricRecord { archived: true, ..report(4, "training", 300, json!({"loss": 9.0})) },
        ];
        let series = metric_series(&reports, 10);
        assert_eq!(series["training"]["loss"], vec![(100, 1_700_000_100.0, 0.5), (200, 1_700_000_200.0, 0.4)]);
        assert!(!series["training"].contains_key("note") && !series["training"].contains_key("done"));
        assert_eq!(series["validation"]["val_loss"], vec![(200, 1_700_000_200.0, 0.3)]);
        let capped = metric_series(&(0..50).map(|i| report(i, "training", i, json!({"loss": i}))).collect::<Vec<_>>(), 5);
        assert_eq!(capped["training"]["loss"].iter().map(|p| p.0).collect::<Vec<_>>(), vec![0, 12, 24, 36, 49]);
    }

    #[test]
    fn event_dirs_follow_the_experiments_checkpoint_storage() {
        let shared = json!({"checkpoint_storage": {"type": "shared_fs", "host_path": "/h", "storage_path": "s"}});
        assert_eq!(event_dir(&shared, "cid", 3, 9).as_deref(), Some("/h/s/cid/tensorboard/experiment/3/trial/9"));
        let s3 = json!({"checkpoint_storage": {"type": "s3", "bucket": "b", "prefix": "p", "access_key": "AK"}});
        assert_eq!(event_dir(&s3, "cid", 3, 9), None);
        let events = bucket_events(&s3, "cid", 3, 9).unwrap();
        assert_eq!(events.key_prefix, "p/cid/tensorboard/experiment/3/trial/9");
        assert_eq!(events.storage, s3["checkpoint_storage"]);
        assert_eq!(bucket_events(&shared, "cid", 3, 9), None);
        assert_eq!(event_dir(&json!({}), "cid", 3, 9), None);
    }

    #[test]
    fn event_files_are_found_below_the_trial_directory() {
        let dir = std::env::temp_dir().join(format!("resolute-tb-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(dir.join("rank_0")).unwrap();
        assert!(!has_event_files(Some(dir.to_str().unwrap())));
        std::fs::write(dir.join("rank_0/events.out.tfevents.1.host"), b"").unwrap();
        assert!(has_event_files(Some(dir.to_str().unwrap())));
        assert!(!has_event_files(None) && !has_event_files(Some("/nonexistent/resolute")));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
