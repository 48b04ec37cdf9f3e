//! The service a command-like task runs, as the command service records it in the task's `extra`
//! at launch and the loop reads it back: the port variable the agent fills, the output line that
//! means "ready", files written into the work dir, and how the proxy reaches it.

use resolute_api::agent_protocol::TaskFile;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The port variable every proxied task service listens on.
pub const SERVICE_PORT_ENV: &str = "DET_SERVICE_PORT";
/// The address the agent's services bind to (where the master's proxy reaches them).
pub const SERVICE_HOST_ENV: &str = "DET_SERVICE_HOST";

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceSpec {
    /// The environment variable the agent sets to a free port for the service.
    #[serde(default)]
    pub port_env: Option<String>,
    /// A regex over the task's output; its first match marks the allocation ready.
    #[serde(default)]
    pub ready_pattern: Option<String>,
    /// `http` (notebooks, TensorBoards) or `tcp` (shells' sshd).
    #[serde(default)]
    pub proxy: Option<String>,
    /// Open through the proxy without a session (shells: sshd checks the key).
    #[serde(default)]
    pub unauthenticated: bool,
}

impl ServiceSpec {
    /// A web service (notebooks, TensorBoards) on the agent-chosen port, behind the session-checked
    /// proxy, ready once its output matches `ready_pattern`.
    pub fn http(ready_pattern: &str) -> ServiceSpec {
        ServiceSpec {
            port_env: Some(SERVICE_PORT_ENV.to_owned()),
            ready_pattern: Some(ready_pattern.to_owned()),
            proxy: Some("http".to_owned()),
            unauthenticated: false,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LaunchFile {
    pub path: String,
    pub content_b64: String,
    #[serde(default = "default_mode")]
    pub mode: u32,
}

fn default_mode() -> u32 {
    0o644
}

/// The service spec and files in a task's `extra` (absent for plain commands).
pub fn from_extra(extra: &Value) -> (ServiceSpec, Vec<TaskFile>) {
    let spec = extra.get("service").cloned().and_then(|v| serde_json::from_value(v).ok()).unwrap_or_default();
    let files: Vec<LaunchFile> = extra.get("files").cloned().and_then(|v| serde_json::from_value(v).ok()).unwrap_or_default();
    let files = files.into_iter().map(|f| TaskFile { path: f.path, content_b64: f.content_b64, mode: f.mode }).collect();
    (spec, files)
}
