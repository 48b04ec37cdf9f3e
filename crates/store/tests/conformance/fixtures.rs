//! Builders shared by the experiment-side cases: an owner, experiments, trials and reports.

use chrono::{DateTime, TimeDelta, Utc};
use resolute_store::{
    DEFAULT_PROJECT_ID, ExperimentRecord, NewCheckpoint, NewExperiment, NewMetricReport, NewProject, NewTrial, NewWorkspace, Store,
    TrialRecord, db_now,
};
use serde_json::{Value, json};

use crate::users::new_user;

/// The id of user `name`, created on first use.
pub async fn user_id(store: &dyn Store, name: &str) -> i32 {
    store.create_user_if_absent(new_user(name)).await.unwrap();
    store.user_by_name(name).await.unwrap().id
}

pub fn new_experiment(owner_id: i32, name: &str) -> NewExperiment {
    NewExperiment {
        name: name.to_owned(),
        description: String::new(),
        notes: String::new(),
        state: "STATE_ACTIVE".to_owned(),
        owner_id,
        project_id: DEFAULT_PROJECT_ID,
        config: json!({"name": name, "searcher": {"name": "single", "metric": "loss", "smaller_is_better": true}}),
        original_config: format!("name: {name}\n"),
        model_definition: vec![0x1f, 0x8b, 0, 1, 2, 3],
        labels: Vec::new(),
        parent_id: None,
        start_time: db_now(),
        job_id: uuid::Uuid::new_v4().to_string(),
        unmanaged: false,
    }
}

/// An experiment named `name` owned by user "owner".
pub async fn experiment(store: &dyn Store, name: &str) -> ExperimentRecord {
    let owner = user_id(store, "owner").await;
    store.create_experiment(new_experiment(owner, name)).await.unwrap()
}

pub fn new_trial(experiment_id: i32, n: u32) -> NewTrial {
    NewTrial {
        experiment_id,
        request_id: format!("request-{n}"),
        task_id: format!("{experiment_id}.{}", uuid::Uuid::new_v4()),
        state: "STATE_ACTIVE".to_owned(),
        hparams: json!({"lr": 0.01 * f64::from(n), "layers": n}),
        seed: 1000 + i64::from(n),
        start_time: db_now(),
    }
}

pub async fn trial(store: &dyn Store, experiment_id: i32, n: u32) -> TrialRecord {
    store.create_trial(new_trial(experiment_id, n)).await.unwrap()
}

/// A report of `metrics` (a JSON object) at `steps`.
pub fn report(trial_id: i32, run_id: i32, group: &str, steps: i64, metrics: Value) -> NewMetricReport {
    NewMetricReport {
        trial_id,
        trial_run_id: run_id,
        group: group.to_owned(),
        steps_completed: steps,
        report_time: at(steps),
        avg_metrics: metrics.as_object().cloned().unwrap_or_default(),
        batch_metrics: Vec::new(),
        searcher_metric: None,
    }
}

/// A fixed, microsecond-precise instant `offset` seconds after an arbitrary epoch.
pub fn at(offset: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_700_000_000, 0).unwrap() + TimeDelta::seconds(offset)
}

pub fn checkpoint(trial: &TrialRecord, uuid: &str, steps: i64, metric: Option<f64>) -> NewCheckpoint {
    NewCheckpoint {
        uuid: uuid.to_owned(),
        task_id: trial.task_id.clone(),
        allocation_id: Some(format!("{}.{}", trial.task_id, trial.run_id)),
        trial_id: Some(trial.id),
        experiment_id: Some(trial.experiment_id),
        report_time: at(steps),
        state: "STATE_COMPLETED".to_owned(),
        resources: [("model.pt".to_owned(), 1000 + steps), ("code/".to_owned(), 0), ("metadata.json".to_owned(), 24)].into(),
        metadata: json!({"steps_completed": steps, "framework": "torch"}),
        steps_completed: steps,
        storage_id: Some(1),
        searcher_metric: metric,
    }
}

/// A workspace named `name` with nothing configured.
pub fn new_workspace(name: &str, user_id: i32) -> NewWorkspace {
    NewWorkspace {
        name: name.to_owned(),
        user_id,
        checkpoint_storage_config: None,
        agent_user_group: None,
        default_compute_pool: String::new(),
        default_aux_pool: String::new(),
    }
}

/// A project named `name` in `workspace_id`.
pub fn new_project(name: &str, workspace_id: i32, user_id: i32) -> NewProject {
    NewProject { name: name.to_owned(), description: String::new(), key: None, workspace_id, user_id }
}
