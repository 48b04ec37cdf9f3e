//! The master's NTSC endpoints, each read through its kind's wire type (`GetCommandsResponse`,
//! `GetShellResponse`, `KillNotebookResponse`, …): list, get, kill and set priority. The rest of
//! the CLI sees [`AnyTask`], so it reads the shared fields typed and prints the object as the
//! kind's type writes it.

use reqwest::Method;
use resolute_api::commands::{
    Command, GetCommandResponse, GetCommandsResponse, GetNotebookResponse, GetNotebooksResponse, GetShellResponse, GetShellsResponse,
    GetTensorboardResponse, GetTensorboardsResponse, KillCommandResponse, KillNotebookResponse, KillShellResponse, KillTensorboardResponse,
    Notebook, NtscBase, NtscTask, SetCommandPriorityRequest, SetCommandPriorityResponse, SetNotebookPriorityRequest,
    SetNotebookPriorityResponse, SetShellPriorityRequest, SetShellPriorityResponse, SetTensorboardPriorityRequest,
    SetTensorboardPriorityResponse, Shell, Tensorboard,
};
use serde_json::Value;

use super::ntsc::Kind;
use crate::client::{Client, ClientError, path_segment};

/// A task of any of the four kinds.
#[derive(Clone, Debug, PartialEq)]
pub enum AnyTask {
    Command(Command),
    Notebook(Notebook),
    Shell(Shell),
    Tensorboard(Tensorboard),
}

impl AnyTask {
    /// The fields every kind has.
    pub fn base(&self) -> &NtscBase {
        match self {
            AnyTask::Command(t) => t.base(),
            AnyTask::Notebook(t) => t.base(),
            AnyTask::Shell(t) => t.base(),
            AnyTask::Tensorboard(t) => t.base(),
        }
    }

    /// The object as the bindings' `to_json` writes it, for `--json` and the table's cells.
    pub fn to_json(&self) -> Value {
        let written = match self {
            AnyTask::Command(t) => serde_json::to_value(t),
            AnyTask::Notebook(t) => serde_json::to_value(t),
            AnyTask::Shell(t) => serde_json::to_value(t),
            AnyTask::Tensorboard(t) => serde_json::to_value(t),
        };
        // Serialising a struct of strings, numbers and JSON values cannot fail.
        written.unwrap_or(Value::Null)
    }
}

fn collection(kind: Kind) -> String {
    format!("api/v1/{}", kind.plural())
}

fn item(kind: Kind, id: &str) -> String {
    format!("api/v1/{}/{}", kind.plural(), path_segment(id))
}

/// `GET /api/v1/{kind}`, `?users=<username>` when given.
pub fn list(client: &Client, kind: Kind, user: Option<&str>) -> Result<Vec<AnyTask>, ClientError> {
    let mut path = collection(kind);
    if let Some(user) = user {
        path.push_str(&format!("?users={}", path_segment(user)));
    }
    Ok(match kind {
        Kind::Command => client.get::<GetCommandsResponse>(&path)?.commands.into_iter().map(AnyTask::Command).collect(),
        Kind::Notebook => client.get::<GetNotebooksResponse>(&path)?.notebooks.into_iter().map(AnyTask::Notebook).collect(),
        Kind::Shell => client.get::<GetShellsResponse>(&path)?.shells.into_iter().map(AnyTask::Shell).collect(),
        Kind::Tensorboard => client.get::<GetTensorboardsResponse>(&path)?.tensorboards.into_iter().map(AnyTask::Tensorboard).collect(),
    })
}

/// `GET /api/v1/{kind}/{id}`: the task and its merged config.
pub fn get(client: &Client, kind: Kind, id: &str) -> Result<(AnyTask, Value), ClientError> {
    let path = item(kind, id);
    Ok(match kind {
        Kind::Command => client.get::<GetCommandResponse>(&path).map(|r| (AnyTask::Command(r.command), r.config))?,
        Kind::Notebook => client.get::<GetNotebookResponse>(&path).map(|r| (AnyTask::Notebook(r.notebook), r.config))?,
        Kind::Shell => client.get::<GetShellResponse>(&path).map(|r| (AnyTask::Shell(r.shell), r.config))?,
        Kind::Tensorboard => client.get::<GetTensorboardResponse>(&path).map(|r| (AnyTask::Tensorboard(r.tensorboard), r.config))?,
    })
}

/// `POST /api/v1/{kind}/{id}/kill`, without a body as the bindings send it.
pub fn kill(client: &Client, kind: Kind, id: &str) -> Result<(), ClientError> {
    let path = format!("{}/kill", item(kind, id));
    match kind {
        Kind::Command => client.send::<(), KillCommandResponse>(Method::POST, &path, None).map(drop),
        Kind::Notebook => client.send::<(), KillNotebookResponse>(Method::POST, &path, None).map(drop),
        Kind::Shell => client.send::<(), KillShellResponse>(Method::POST, &path, None).map(drop),
        Kind::Tensorboard => client.send::<(), KillTensorboardResponse>(Method::POST, &path, None).map(drop),
    }
}

/// `POST /api/v1/{kind}/{id}/set_priority` with `{"priority": n}` (the path names the task).
pub fn set_priority(client: &Client, kind: Kind, id: &str, priority: i32) -> Result<(), ClientError> {
    let path = format!("{}/set_priority", item(kind, id));
    let priority = Some(priority);
    match kind {
        Kind::Command => {
            client.post::<_, SetCommandPriorityResponse>(&path, &SetCommandPriorityRequest { command_id: None, priority }).map(drop)
        }
        Kind::Notebook => {
            client.post::<_, SetNotebookPriorityResponse>(&path, &SetNotebookPriorityRequest { notebook_id: None, priority }).map(drop)
        }
        Kind::Shell => client.post::<_, SetShellPriorityResponse>(&path, &SetShellPriorityRequest { shell_id: None, priority }).map(drop),
        Kind::Tensorboard => client
            .post::<_, SetTensorboardPriorityResponse>(&path, &SetTensorboardPriorityRequest { tensorboard_id: None, priority })
            .map(drop),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn prints_the_kinds_own_fields() {
        let base = json!({"id": "t", "description": "d", "state": "STATE_RUNNING", "startTime": "2025-03-19T10:01:02Z",
            "container": null, "displayName": "", "userId": 1, "username": "u", "resourcePool": "default", "jobId": "j",
            "workspaceId": 1});
        let mut tb = base.clone();
        tb["experimentIds"] = json!([1, 2]);
        tb["trialIds"] = json!([]);
        tb["serviceAddress"] = json!("/proxy/t/");
        let task = AnyTask::Tensorboard(serde_json::from_value(tb.clone()).unwrap());
        assert_eq!(task.base().id, "t");
        assert_eq!(task.to_json(), tb);
        let task = AnyTask::Command(serde_json::from_value(base.clone()).unwrap());
        assert_eq!(task.to_json(), base);
    }
}
