//! Unmanaged (detached) experiments: the Core API v2 run outside the cluster
//! (`core_v2.init(config=…)` with no cluster info) creates an experiment and a trial here, starts
//! the trial, heartbeats it and reports its end; metrics, checkpoints and logs go through the
//! ordinary runtime endpoints with the user's session. An unmanaged trial is a trial task with no
//! allocation: the loop never loads its experiment (nothing is scheduled), and the experiment's
//! state follows its trials (`resolute_store`'s `sql/unmanaged.rs`). The caller's external ids make
//! a re-run of the same script find the same experiment and trial. A RUNNING trial without a
//! heartbeat for [`UNMANAGED_TRIAL_TIMEOUT`] ends in ERROR, as upstream's `MarkLostTrials`.

use std::sync::Arc;
use std::time::Duration;

use resolute_api::error::ErrorCode;
use resolute_store::{NewExperiment, NewUnmanagedTrial, Store, StoreError, UnmanagedStart, db_now};
use serde_json::{Value, json};

use super::experiment_items::TrialView;
use super::experiments::{ExperimentService, ExperimentView, dedup};
use super::input_limits;
use super::model_def::build_archive;
use crate::domain::TrialState;
use crate::domain::experiment_state::ExperimentState;
use crate::error::{ApiError, ApiResult};
use crate::services::Principal;

/// How long a RUNNING unmanaged trial may go without a heartbeat (the SDK sends one a minute).
pub const UNMANAGED_TRIAL_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// How often lost trials are looked for (upstream: every 5 minutes).
const SWEEP_INTERVAL: Duration = Duration::from_secs(5 * 60);

/// Longest external id accepted.
const EXTERNAL_ID_BYTES: usize = 255;

/// The states a script may report for its trial.
const REPORTABLE: [TrialState; 5] =
    [TrialState::Running, TrialState::Completed, TrialState::Error, TrialState::Canceled, TrialState::Paused];

/// `POST /api/v1/experiments` with `unmanaged: true`, or `PUT …/by-external-id/{id}`.
pub struct UnmanagedExperimentRequest {
    pub config_text: String,
    pub project_id: Option<i32>,
    pub parent_id: Option<i32>,
    /// The caller's own id: the experiment that has it is returned (its config replaced).
    pub external_id: Option<String>,
}

/// What `POST /api/v1/trials/{id}/start` answers.
pub struct UnmanagedTrialStart {
    pub run_id: i32,
    /// On a restart (run > 1): the trial's latest completed checkpoint, to resume from.
    pub latest_checkpoint: Option<String>,
    pub steps_completed: i64,
}

fn check_external_id(field: &str, id: &str) -> ApiResult<()> {
    if id.trim().is_empty() {
        return Err(ApiError::invalid(format!("{field}: must not be empty")));
    }
    if id.chars().any(char::is_control) {
        return Err(ApiError::invalid(format!("{field}: must not contain control characters")));
    }
    input_limits::check_text(field, id, EXTERNAL_ID_BYTES)
}

/// A task id suffix from the external trial id when it is safe in a URL path, else a fresh uuid.
fn task_suffix(external: Option<&str>) -> String {
    match external {
        Some(id) if id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')) && id.len() <= 64 => id.to_owned(),
        _ => uuid::Uuid::new_v4().to_string(),
    }
}

impl ExperimentService {
    /// Creates an unmanaged experiment, or with an external id already known, returns that one
    /// with the config replaced (a re-run of the same script).
    pub async fn put_unmanaged(&self, caller: &Principal, req: UnmanagedExperimentRequest) -> ApiResult<(ExperimentView, Value)> {
        if req.parent_id.is_some_and(|p| p != 0) {
            return Err(ApiError::invalid("parentId: an unmanaged experiment cannot be a fork"));
        }
        if let Some(external) = &req.external_id {
            check_external_id("externalExperimentId", external)?;
        }
        input_limits::check_text("config", &req.config_text, input_limits::CONFIG_BYTES)?;
        let project = self.resolve_project(req.project_id, &req.config_text).await?;
        let workspace = self.store.workspace_by_id(project.workspace_id, caller.user.id).await?;
        let (config, config_json) = self.unmanaged_config(&req.config_text, workspace.checkpoint_storage_config)?;
        input_limits::check_text("name", &config.name, input_limits::NAME_BYTES)?;
        input_limits::check_text("description", config.description.as_deref().unwrap_or_default(), input_limits::DESCRIPTION_BYTES)?;
        input_limits::check_labels("labels", &config.labels)?;
        for _ in 0..2 {
            if let Some(external) = &req.external_id
                && let Some((id, unmanaged)) = self.store.experiment_id_by_external_id(external).await?
            {
                if !unmanaged {
                    return Err(ApiError::invalid(format!(
                        "externalExperimentId: {external:?} names experiment {id}, which is managed by the cluster"
                    )));
                }
                self.editable(caller, id, "report into").await?;
                self.store.set_unmanaged_experiment_config(id, &config_json, &config.name).await?;
                let view = self.get(id).await?;
                return Ok((view, config_json));
            }
            let files = Vec::new();
            let model_definition = tokio::task::spawn_blocking(move || build_archive(&files)).await.map_err(|_| ApiError::internal())??;
            let record = self
                .store
                .create_experiment(NewExperiment {
                    name: config.name.clone(),
                    description: config.description.clone().unwrap_or_default(),
                    notes: String::new(),
                    // No trial has started: upstream's state for an idle unmanaged experiment.
                    state: ExperimentState::Paused.as_str().to_owned(),
                    owner_id: caller.user.id,
                    project_id: project.id,
                    config: config_json.clone(),
                    original_config: req.config_text.clone(),
                    model_definition,
                    labels: dedup(config.labels.clone()),
                    parent_id: None,
                    start_time: db_now(),
                    job_id: uuid::Uuid::new_v4().to_string(),
                    unmanaged: true,
                })
                .await?;
            if let Some(external) = &req.external_id {
                match self.store.set_experiment_external_id(record.id, external).await {
                    Ok(()) => {}
                    // Another call with the same id won the race: use its experiment.
                    Err(StoreError::Conflict { .. }) => {
                        self.store.delete_experiment(record.id).await?;
                        continue;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            tracing::info!(experiment = record.id, owner = %caller.user.username, external = ?req.external_id, "created unmanaged experiment");
            // Not announced to the loop: nothing is scheduled for an unmanaged experiment.
            let view = self.get(record.id).await?;
            return Ok((view, config_json));
        }
        Err(ApiError::new(ErrorCode::Unavailable, "externalExperimentId: the experiment kept changing; try again"))
    }

    /// The config an unmanaged experiment runs with: validated and defaulted as any experiment's,
    /// except that it needs no entrypoint and no training length (the script decides both).
    fn unmanaged_config(&self, text: &str, workspace_storage: Option<Value>) -> ApiResult<(resolute_expconf::ExperimentConfig, Value)> {
        let mut tree = resolute_expconf::yaml_to_json(text).map_err(|e| ApiError::invalid(format!("invalid experiment config: {e}")))?;
        if tree.is_null() {
            tree = json!({});
        }
        let Value::Object(map) = &mut tree else {
            return Err(ApiError::invalid("config: must be a mapping of experiment config keys"));
        };
        // The SDK sends every key it knows, unset ones as null.
        map.retain(|_, v| !v.is_null());
        let placeholder_entrypoint = !map.contains_key("entrypoint");
        if placeholder_entrypoint {
            map.insert("entrypoint".into(), json!("unmanaged"));
        }
        let searcher = map.entry("searcher").or_insert_with(|| json!({"name": "single", "metric": "unmanaged"}));
        let mut placeholder_length = false;
        if let Value::Object(s) = searcher {
            s.retain(|_, v| !v.is_null());
            if !s.contains_key("max_length") && !s.contains_key("max_time") && !s.contains_key("time_metric") {
                placeholder_length = true;
                s.insert("max_time".into(), json!(1));
                s.insert("time_metric".into(), json!("batches"));
            }
        }
        let (config, _warnings) = self.validate_config_in(&tree.to_string(), workspace_storage)?;
        let mut json = config.to_json();
        if placeholder_entrypoint && let Some(obj) = json.as_object_mut() {
            obj.insert("entrypoint".into(), Value::Null);
        }
        if placeholder_length && let Some(s) = json.get_mut("searcher").and_then(Value::as_object_mut) {
            s.remove("max_time");
            s.remove("time_metric");
        }
        Ok((config, json))
    }

    /// The unmanaged experiment a trial call names, if the caller may report into it.
    async fn unmanaged_experiment(
        &self,
        caller: &Principal,
        experiment_id: i32,
        field: &str,
    ) -> ApiResult<resolute_store::ExperimentRecord> {
        let record = match self.store.experiment_by_id(experiment_id).await {
            Ok(r) => r,
            Err(StoreError::NotFound { .. }) => return Err(ApiError::not_found(format!("{field}: experiment {experiment_id} not found"))),
            Err(e) => return Err(e.into()),
        };
        if !record.unmanaged {
            return Err(ApiError::invalid(format!(
                "{field}: experiment {experiment_id} is managed by the cluster; only unmanaged experiments take trials through this API"
            )));
        }
        self.editable(caller, experiment_id, "report into").await
    }

    /// The unmanaged trial a call names, if the caller may report into it.
    async fn unmanaged_trial(&self, caller: &Principal, trial_id: i32) -> ApiResult<resolute_store::TrialRecord> {
        let trial = match self.store.trial_by_id(trial_id).await {
            Ok(t) => t,
            Err(StoreError::NotFound { .. }) => return Err(ApiError::not_found(format!("trialId: trial {trial_id} not found"))),
            Err(e) => return Err(e.into()),
        };
        self.unmanaged_experiment(caller, trial.experiment_id, "trialId").await?;
        Ok(trial)
    }

    /// `POST /api/v1/trials` / `PUT /api/v1/trials`: a new unmanaged trial, or with an external id
    /// already used in the experiment, that trial.
    pub async fn create_unmanaged_trial(
        &self,
        caller: &Principal,
        experiment_id: i32,
        hparams: Option<Value>,
        unmanaged: bool,
        external_trial_id: Option<String>,
    ) -> ApiResult<TrialView> {
        if !unmanaged {
            return Err(ApiError::invalid("unmanaged: must be true; trials of managed experiments are created by their searcher"));
        }
        if experiment_id <= 0 {
            return Err(ApiError::invalid(format!("experimentId: must be a positive experiment id, found {experiment_id}")));
        }
        let hparams = match hparams {
            None | Some(Value::Null) => json!({}),
            Some(h @ Value::Object(_)) => h,
            Some(other) => return Err(ApiError::invalid(format!("hparams: must be a mapping, found {other}"))),
        };
        if let Some(external) = &external_trial_id {
            check_external_id("externalTrialId", external)?;
        }
        let experiment = self.unmanaged_experiment(caller, experiment_id, "experimentId").await?;
        let trial = self
            .store
            .create_unmanaged_trial(NewUnmanagedTrial {
                experiment_id,
                task_id: format!("{experiment_id}.{}", task_suffix(external_trial_id.as_deref())),
                request_id: uuid::Uuid::new_v4().to_string(),
                hparams,
                external_trial_id,
                owner_id: caller.user.id,
                job_id: Some(experiment.job_id),
                at: db_now(),
            })
            .await?;
        self.trial(trial.id).await
    }

    /// `GET /api/v1/trials/by-external-id/{externalExperimentId}/{externalTrialId}`.
    pub async fn trial_by_external_ids(&self, external_experiment_id: &str, external_trial_id: &str) -> ApiResult<TrialView> {
        let id = self.store.trial_id_by_external_ids(external_experiment_id, external_trial_id).await.map_err(|e| match e {
            StoreError::NotFound { .. } => ApiError::not_found(format!(
                "no trial with externalTrialId {external_trial_id:?} in an experiment with externalExperimentId {external_experiment_id:?}"
            )),
            other => other.into(),
        })?;
        self.trial(id).await
    }

    /// `POST /api/v1/trials/{id}/start`: a new run, RUNNING; on a restart, where to resume from.
    pub async fn start_unmanaged_trial(&self, caller: &Principal, trial_id: i32, resume: bool) -> ApiResult<UnmanagedTrialStart> {
        self.unmanaged_trial(caller, trial_id).await?;
        let run_id = match self.store.start_unmanaged_trial(trial_id, resume, db_now()).await? {
            UnmanagedStart::Started { run_id } => run_id,
            UnmanagedStart::AlreadyStarted => {
                return Err(ApiError::new(
                    ErrorCode::FailedPrecondition,
                    format!("trialId: trial {trial_id} has already been started; set resume to start it again"),
                ));
            }
        };
        let mut start = UnmanagedTrialStart { run_id, latest_checkpoint: None, steps_completed: 0 };
        if run_id > 1
            && let Some(uuid) = self.store.trial_by_id(trial_id).await?.latest_checkpoint_uuid
        {
            let checkpoint = self.store.checkpoint_by_uuid(&uuid).await?;
            start.steps_completed = checkpoint.steps_completed;
            start.latest_checkpoint = Some(uuid);
        }
        tracing::info!(trial = trial_id, run = run_id, by = %caller.user.username, "unmanaged trial started");
        Ok(start)
    }

    /// `PATCH /api/v1/trials/{id}`: a heartbeat, or the state the script reports.
    pub async fn patch_unmanaged_trial(&self, caller: &Principal, trial_id: i32, state: Option<&str>) -> ApiResult<TrialView> {
        let state = match state {
            None => None,
            Some(name) => match TrialState::parse(name).filter(|s| REPORTABLE.contains(s)) {
                Some(s) => Some(s),
                None => {
                    let expected: Vec<&str> = REPORTABLE.iter().map(|s| s.as_str()).collect();
                    return Err(ApiError::invalid(format!(
                        "state: {name} cannot be reported for an unmanaged trial; expected one of {}",
                        expected.join(", ")
                    )));
                }
            },
        };
        self.unmanaged_trial(caller, trial_id).await?;
        self.store.touch_unmanaged_trial(trial_id, state.map(TrialState::as_str), db_now()).await?;
        if let Some(state) = state {
            tracing::info!(trial = trial_id, state = %state, by = %caller.user.username, "unmanaged trial reported its state");
        }
        self.trial(trial_id).await
    }
}

/// Ends in ERROR every RUNNING unmanaged trial whose heartbeats stopped more than
/// [`UNMANAGED_TRIAL_TIMEOUT`] before `now`; their ids.
pub async fn mark_lost_trials(store: &dyn Store, now: chrono::DateTime<chrono::Utc>) -> ApiResult<Vec<i32>> {
    let timeout = chrono::Duration::from_std(UNMANAGED_TRIAL_TIMEOUT).unwrap_or(chrono::Duration::MAX);
    let lost = store.mark_lost_unmanaged_trials(now - timeout, now).await?;
    if !lost.is_empty() {
        tracing::warn!(trials = ?lost, "unmanaged trials without a heartbeat for {}s marked ERROR", UNMANAGED_TRIAL_TIMEOUT.as_secs());
    }
    Ok(lost)
}

/// Runs [`mark_lost_trials`] now and every 5 minutes.
pub fn spawn_lost_trial_sweeper(store: Arc<dyn Store>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(SWEEP_INTERVAL);
        loop {
            tick.tick().await;
            if let Err(e) = mark_lost_trials(store.as_ref(), db_now()).await {
                tracing::warn!(error = %e.message, "marking lost unmanaged trials failed");
            }
        }
    })
}
