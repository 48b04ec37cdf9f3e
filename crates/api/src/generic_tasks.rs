//! Generic tasks (`POST /api/v1/generic-tasks`, `/api/v1/tasks/{taskId}/{kill,pause,unpause,
//! config}`): a config and a context directory run as a task outside any experiment.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::experiments::LaunchWarning;
use crate::files::File;
use crate::wire_enum::wire_enum;

wire_enum! {
    /// `v1GenericTaskState`.
    pub enum GenericTaskState {
        Unspecified = "GENERIC_TASK_STATE_UNSPECIFIED",
        Active = "GENERIC_TASK_STATE_ACTIVE",
        Canceled = "GENERIC_TASK_STATE_CANCELED",
        Completed = "GENERIC_TASK_STATE_COMPLETED",
        Error = "GENERIC_TASK_STATE_ERROR",
        Paused = "GENERIC_TASK_STATE_PAUSED",
        StoppingPaused = "GENERIC_TASK_STATE_STOPPING_PAUSED",
        StoppingCanceled = "GENERIC_TASK_STATE_STOPPING_CANCELED",
        StoppingCompleted = "GENERIC_TASK_STATE_STOPPING_COMPLETED",
        StoppingError = "GENERIC_TASK_STATE_STOPPING_ERROR",
    }
}

/// `POST /api/v1/generic-tasks`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateGenericTaskRequest {
    /// The task config as YAML (or JSON) text.
    #[serde(default)]
    pub config: String,
    /// The context directory, file by file.
    #[serde(default, alias = "context_directory")]
    pub context_directory: Vec<File>,
    /// 0 or absent: the default project.
    #[serde(default, alias = "project_id", skip_serializing_if = "Option::is_none")]
    pub project_id: Option<i32>,
    /// The task this one is a fork of.
    #[serde(default, alias = "forked_from", skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<String>,
    /// The task that launched this one.
    #[serde(default, alias = "parent_id", skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// Use the parent's context directory.
    #[serde(default, alias = "inherit_context", skip_serializing_if = "Option::is_none")]
    pub inherit_context: Option<bool>,
    /// The task cannot be paused.
    #[serde(default, alias = "no_pause", skip_serializing_if = "Option::is_none")]
    pub no_pause: Option<bool>,
}

/// `POST /api/v1/generic-tasks` response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateGenericTaskResponse {
    pub task_id: String,
    #[serde(default)]
    pub warnings: Vec<LaunchWarning>,
}

/// `POST /api/v1/tasks/{taskId}/kill`. The response is `{}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct KillGenericTaskRequest {
    /// Repeats the path's id.
    #[serde(default, alias = "task_id")]
    pub task_id: String,
    /// Kill the whole tree from its root task.
    #[serde(default, alias = "kill_from_root", skip_serializing_if = "Option::is_none")]
    pub kill_from_root: Option<bool>,
}

/// The `{}` answer of generic-task kill, pause and unpause.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct EmptyResponse {}

/// `GET /api/v1/tasks/{taskId}/config`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GetGenericTaskConfigResponse {
    /// The config as JSON text.
    pub config: String,
}

/// The fields `v1Task` has only for generic tasks (proto3 `optional`, omitted otherwise). Flatten it
/// into `tasks::Task` to serve them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GenericTaskFields {
    /// The config as JSON text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,
    #[serde(default, alias = "forked_from", skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<String>,
    #[serde(default, alias = "parent_id", skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    #[serde(default, alias = "task_state", skip_serializing_if = "Option::is_none")]
    pub task_state: Option<GenericTaskState>,
    #[serde(default, alias = "no_pause", skip_serializing_if = "Option::is_none")]
    pub no_pause: Option<bool>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn create_request_reads_the_cli_shape() {
        let body = json!({"config": "entrypoint: [python3, a.py]\n", "contextDirectory": [{"content": "eA==",
            "gid": 0, "mode": 420, "mtime": "1", "path": "a.py", "type": 48, "uid": 0}], "projectId": 3,
            "inheritContext": false, "noPause": true});
        let req: CreateGenericTaskRequest = serde_json::from_value(body.clone()).unwrap();
        assert_eq!(req.context_directory[0].path, "a.py");
        assert_eq!((req.project_id, req.no_pause, req.forked_from.as_deref()), (Some(3), Some(true), None));
        assert_eq!(serde_json::to_value(&req).unwrap(), body);
    }

    #[test]
    fn responses_round_trip() {
        let body = json!({"taskId": "t-1", "warnings": []});
        let resp: CreateGenericTaskResponse = serde_json::from_value(body.clone()).unwrap();
        assert_eq!(resp.task_id, "t-1");
        assert_eq!(serde_json::to_value(&resp).unwrap(), body);
        let kill: KillGenericTaskRequest = serde_json::from_value(json!({"taskId": "t-1", "killFromRoot": true})).unwrap();
        assert_eq!(kill.kill_from_root, Some(true));
        assert_eq!(serde_json::to_value(EmptyResponse {}).unwrap(), json!({}));
        let fields = GenericTaskFields { task_state: Some(GenericTaskState::Paused), ..Default::default() };
        assert_eq!(serde_json::to_value(&fields).unwrap(), json!({"taskState": "GENERIC_TASK_STATE_PAUSED"}));
    }
}
