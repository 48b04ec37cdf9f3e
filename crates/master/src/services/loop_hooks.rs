//! What the services do for the cluster loop when it asks ([`LoopHooks`]): the loop depends on
//! this interface, never on the services themselves.

use std::sync::Arc;

use resolute_store::Store;
use serde_json::Value;

use super::TaskLogService;
use super::checkpoint_gc::CheckpointGc;
use crate::cluster::LoopHooks;

pub struct ServiceHooks {
    store: Arc<dyn Store>,
    task_logs: TaskLogService,
}

impl ServiceHooks {
    pub fn new(store: Arc<dyn Store>, task_logs: TaskLogService) -> Self {
        ServiceHooks { store, task_logs }
    }
}

impl LoopHooks for ServiceHooks {
    fn collect_checkpoints(&self, experiment_id: i32, config: &Value, protected: Vec<String>) {
        CheckpointGc::new(self.store.clone()).spawn(experiment_id, config.clone(), protected);
    }

    fn task_ended(&self, _task_id: &str) {
        self.task_logs.notify_new_lines();
    }
}
