//! What the runtime reports to its driver (later the websocket client): task output lines and
//! task exits, on one channel so a task's last lines always arrive before its exit.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuntimeEvent {
    Log(LogLine),
    /// Sent once per task, after every line of its output has been sent.
    Exited {
        task_id: String,
        allocation_id: String,
        container_id: String,
        exit: TaskExit,
    },
}

/// One line of a task's stdout or stderr (upstream `RunMessage{Value,StdType}` / task log fields).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogLine {
    pub task_id: String,
    pub allocation_id: String,
    pub container_id: String,
    /// When the agent read the line.
    pub timestamp: DateTime<Utc>,
    pub stdtype: StdType,
    /// The line without its `\n`, decoded as lossy UTF-8. A last line without a newline is kept;
    /// a line longer than [`crate::logs::MAX_LINE_BYTES`] arrives in several pieces.
    pub log: String,
    /// The offset in the task's output file just past this line; `None` for a line the agent
    /// wrote itself.
    pub offset: Option<u64>,
}

/// The stream a line came from: the wire's type, so nothing converts between the two.
pub use resolute_api::agent_protocol::StdType;

/// How a task's main process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskExit {
    /// The exit code when the process exited normally.
    pub code: Option<i32>,
    /// The signal number when the process was killed by a signal.
    pub signal: Option<i32>,
    /// From spawn to exit.
    pub duration: Duration,
}

impl TaskExit {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// Upstream's wording for a `ContainerStopped` failure, `None` on success.
    pub fn failure_message(&self) -> Option<String> {
        match (self.code, self.signal) {
            (Some(0), _) => None,
            (Some(code), _) => Some(format!("container failed with non-zero exit code: {code}")),
            (None, Some(signal)) => Some(format!("container was killed by signal {signal}")),
            (None, None) => Some("container exited for an unknown reason".to_string()),
        }
    }
}
