//! Unmanaged (detached) experiments and trials, as the Core API v2 (`core_v2.init` run outside
//! the cluster) creates, starts and reports them.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::experiments::{CreateExperimentRequest, Experiment};
use crate::trials::{Trial, TrialState};

/// `PUT /api/v1/experiments/by-external-id/{externalExperimentId}` answer (`v1PutExperimentResponse`).
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct PutExperimentResponse {
    pub experiment: Experiment,
    /// The fully defaulted configuration.
    #[schema(value_type = Object)]
    pub config: Value,
}

/// `POST /api/v1/trials` (`v1CreateTrialRequest`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct CreateTrialRequest {
    pub experiment_id: i32,
    /// The trial's hyperparameters, as the script has them.
    #[schema(value_type = Object)]
    pub hparams: Option<Value>,
    /// Must be true: only unmanaged trials are created through the API.
    pub unmanaged: bool,
}

/// `PUT /api/v1/trials` (`v1PutTrialRequest`): create, or find by the caller's own trial id.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct PutTrialRequest {
    pub create_trial_request: Option<CreateTrialRequest>,
    pub external_trial_id: Option<String>,
}

/// The trial created, found, or patched (`v1CreateTrialResponse`, `v1PutTrialResponse`,
/// `v1PatchTrialResponse`, `v1GetTrialByExternalIDResponse`).
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct UnmanagedTrialResponse {
    pub trial: Trial,
}

/// `POST /api/v1/trials/{trialId}/start` (`v1StartTrialRequest`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct StartTrialRequest {
    pub trial_id: Option<i32>,
    /// Start again an unmanaged trial that was started before (a re-run of its script).
    pub resume: bool,
}

/// `v1StartTrialResponse`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StartTrialResponse {
    pub trial_run_id: i32,
    /// The trial's latest completed checkpoint, to resume from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latest_checkpoint: Option<String>,
    /// The steps that checkpoint had completed (0 without one).
    pub steps_completed: i32,
}

/// `PATCH /api/v1/trials/{trialId}` (`v1PatchTrialRequest`): a heartbeat without `state`, else the
/// state the script reports (RUNNING, COMPLETED, ERROR, CANCELED, PAUSED).
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct PatchTrialRequest {
    pub trial_id: Option<i32>,
    pub state: Option<TrialState>,
}

/// For the OpenAPI document: the body `PUT …/by-external-id/…` takes.
pub type PutExperimentRequest = CreateExperimentRequest;

/// One line of `POST /task-logs` (upstream's fluent-style endpoint; the Core API v2 ships an
/// unmanaged trial's stdout/stderr there, with `rank` as text).
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct LegacyTaskLog {
    pub task_id: String,
    #[serde(default)]
    pub allocation_id: Option<String>,
    #[serde(default)]
    pub agent_id: Option<String>,
    #[serde(default)]
    pub container_id: Option<String>,
    #[serde(default)]
    pub rank_id: Option<i32>,
    /// The shipper's spelling of `rank_id`: a number or its decimal text.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub rank: Option<Value>,
    /// RFC 3339.
    #[serde(default)]
    pub timestamp: Option<String>,
    #[serde(default)]
    pub level: Option<String>,
    pub log: String,
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub stdtype: Option<String>,
}
