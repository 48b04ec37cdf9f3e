//! What the loop asks of the rest of the master without depending on it: services implement
//! [`LoopHooks`] and hand it to [`start_loop`](super::start_loop), so the loop never imports them.

use resolute_api::agent_protocol::AgentUnixUser;
use serde_json::Value;

use crate::domain::TaskType;

/// A task's service the proxy may forward to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceEndpoint {
    /// `host:port` reachable from the master.
    pub address: String,
    pub owner_id: i32,
    /// Raw TCP over the proxy's websocket (shells' sshd) rather than HTTP.
    pub tcp: bool,
    /// Open without a session (sshd checks the key itself).
    pub unauthenticated: bool,
    pub task_type: TaskType,
}

pub trait LoopHooks: Send + Sync {
    /// Applies an experiment's checkpoint retention policy, off the loop (a checkpoint GC task).
    /// `protected` are checkpoints live trials start from, which are kept whatever the policy.
    fn collect_checkpoints(&self, experiment_id: i32, config: &Value, protected: Vec<String>);
    /// A task ended and its last log line is stored: wake log followers so they finish now.
    fn task_ended(&self, task_id: &str);
    /// A task's service is ready: proxy `/proxy/{task_id}/` to it.
    fn service_ready(&self, task_id: &str, endpoint: ServiceEndpoint);
    /// The task's service is gone.
    fn service_gone(&self, task_id: &str);
    /// `task_container_defaults.startup_hook` for tasks in `pool`, if any.
    fn startup_hook(&self, pool: &str) -> Option<String>;
    /// The account tasks of a user without a linked agent user run as
    /// (`security.default_task_user`).
    fn default_task_user(&self) -> AgentUnixUser;
}
