//! What the services do for the cluster loop when it asks ([`LoopHooks`]): the loop depends on
//! this interface, never on the services themselves.

use std::sync::Arc;

use resolute_store::Store;
use serde_json::Value;

use super::TaskLogService;
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
        let store = self.store.clone();
        let config = config.clone();
        tokio::spawn(async move {
            match super::checkpoint_gc::collect_experiment_checkpoints(store.as_ref(), experiment_id, &config, &protected).await {
                Ok(report) if !report.deleted.is_empty() => {
                    tracing::info!(experiment = experiment_id, deleted = report.deleted.len(), "checkpoint GC deleted checkpoints");
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(experiment = experiment_id, error = %e, "checkpoint GC failed"),
            }
        });
    }

    fn task_ended(&self, _task_id: &str) {
        self.task_logs.notify_new_lines();
    }
}
