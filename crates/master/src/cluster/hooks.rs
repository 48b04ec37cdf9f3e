//! What the loop asks of the rest of the master without depending on it: services implement
//! [`LoopHooks`] and hand it to [`start_loop`](super::start_loop), so the loop never imports them.

use serde_json::Value;

pub trait LoopHooks: Send + Sync {
    /// Applies an experiment's checkpoint retention policy, off the loop (a checkpoint GC task).
    /// `protected` are checkpoints live trials start from, which are kept whatever the policy.
    fn collect_checkpoints(&self, experiment_id: i32, config: &Value, protected: Vec<String>);
    /// A task ended and its last log line is stored: wake log followers so they finish now.
    fn task_ended(&self, task_id: &str);
}
