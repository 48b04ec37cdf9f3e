//! Seeding what no endpoint creates yet (trials, tasks, logs, metrics, checkpoints) through the
//! master's store, for the read-side tests.

use std::collections::BTreeMap;

use resolute_store::{NewCheckpoint, NewMetricReport, NewTask, NewTrial, SearcherMetric, TrialRecord, db_now};
use serde_json::{Map, Value, json};

use crate::harness::TestMaster;

pub async fn trial(m: &TestMaster, experiment_id: i64, n: usize) -> TrialRecord {
    let experiment_id = i32::try_from(experiment_id).unwrap();
    m.store
        .create_trial(NewTrial {
            experiment_id,
            request_id: format!("req-{n}"),
            task_id: format!("{experiment_id}.task-{n}"),
            state: "STATE_ACTIVE".to_owned(),
            hparams: json!({"n": n}),
            seed: 7,
            start_time: db_now(),
        })
        .await
        .unwrap()
}

pub async fn task(m: &TestMaster, task_id: &str, task_type: &str) {
    m.store
        .create_task(NewTask {
            task_id: task_id.to_owned(),
            task_type: task_type.to_owned(),
            start_time: db_now(),
            job_id: None,
            owner_id: None,
        })
        .await
        .unwrap();
}

/// A training and a validation report of `accuracy` at `steps`.
pub async fn metrics(m: &TestMaster, trial: &TrialRecord, steps: i64, accuracy: f64) {
    let report = |group: &str, name: &str, value: f64| {
        let mut avg = Map::new();
        avg.insert(name.into(), json!(value));
        NewMetricReport {
            trial_id: trial.id,
            trial_run_id: 1,
            group: group.to_owned(),
            steps_completed: steps,
            report_time: db_now(),
            avg_metrics: avg,
            batch_metrics: vec![json!({"loss": 1.0})],
            searcher_metric: (group == "validation").then(|| SearcherMetric { name: "accuracy".into(), smaller_is_better: false }),
        }
    };
    m.store.insert_metrics(&[report("training", "loss", 1.0 / accuracy), report("validation", "accuracy", accuracy)]).await.unwrap();
}

/// A completed checkpoint row (no files).
pub async fn checkpoint(m: &TestMaster, trial: &TrialRecord, uuid: &str, steps: i64, metric: Option<f64>, state: &str) {
    m.store
        .report_checkpoint(NewCheckpoint {
            uuid: uuid.to_owned(),
            task_id: trial.task_id.clone(),
            allocation_id: Some(format!("{}.1", trial.task_id)),
            trial_id: Some(trial.id),
            experiment_id: Some(trial.experiment_id),
            report_time: db_now(),
            state: state.to_owned(),
            resources: BTreeMap::from([("metadata.json".to_owned(), 20), ("model/".to_owned(), 0), ("model/w.bin".to_owned(), 5)]),
            metadata: json!({"steps_completed": steps}),
            steps_completed: steps,
            storage_id: None,
            searcher_metric: metric,
        })
        .await
        .unwrap();
}

/// The `result`s of a newline-delimited stream body.
pub fn stream_results(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("line {l:?}: {e}"));
            v.get("result").cloned().unwrap_or_else(|| panic!("not a result: {l}"))
        })
        .collect()
}
