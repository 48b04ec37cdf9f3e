//! The command kind: commands, notebooks, shells, TensorBoards and generic tasks — one process per
//! placement, started from the task's stored config and context (`command_env`), ended by its own
//! exit or a kill (`command_flow`). What differs between the kinds is in the config the service
//! stored (entrypoint, ports, readiness pattern); the loop treats them alike.

mod command_env;
mod command_flow;
mod pause;

pub use command_flow::{EXITED_SUCCESSFULLY, KILLED};

use resolute_api::agent_protocol::TaskFile;
use resolute_expconf::TaskConfig;

use crate::domain::task_service::ServiceSpec;

use crate::domain::TaskType;

/// What the loop keeps about a running command-like task.
pub(in crate::cluster) struct CommandRun {
    pub task_type: TaskType,
    pub config: TaskConfig,
    pub owner: String,
    pub owner_id: i32,
    /// The service it runs, if any (notebooks, TensorBoards, shells).
    pub service: ServiceSpec,
    pub files: Vec<TaskFile>,
    /// Where the service listens, once the process runs (`host:port`).
    pub service_address: Option<String>,
    /// The current allocation (queued or running).
    pub allocation: Option<String>,
    /// A user killed it.
    pub killed: bool,
    /// A user paused it (generic tasks): its exit leaves the task open, paused.
    pub pausing: bool,
    /// Its job in the scheduler's queue, forgotten when the task ends.
    pub job_id: String,
}
