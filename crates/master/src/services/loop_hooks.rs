//! What the services do for the cluster loop when it asks ([`LoopHooks`]): the loop depends on
//! this interface, never on the services themselves.

use std::sync::Arc;

use resolute_api::agent_protocol::AgentUnixUser;
use resolute_store::Store;
use serde_json::Value;

use super::TaskLogService;
use super::checkpoint_gc::CheckpointGc;
use super::proxy_registry::{ProxyKind, ProxyRegistry, ProxyTarget};
use crate::cluster::{LoopHooks, ServiceEndpoint};
use crate::domain::task_container_defaults::TaskContainerDefaults;

pub struct ServiceHooks {
    store: Arc<dyn Store>,
    task_logs: TaskLogService,
    proxies: ProxyRegistry,
    container_defaults: TaskContainerDefaults,
    default_task_user: AgentUnixUser,
}

impl ServiceHooks {
    pub fn new(
        store: Arc<dyn Store>,
        task_logs: TaskLogService,
        proxies: ProxyRegistry,
        container_defaults: TaskContainerDefaults,
    ) -> Self {
        let nobody = crate::config::DefaultTaskUser::default();
        ServiceHooks { store, task_logs, proxies, container_defaults, default_task_user: nobody.unix_user() }
    }

    /// Tasks of users without a linked agent user run as `user`.
    pub fn with_default_task_user(mut self, user: &crate::config::DefaultTaskUser) -> Self {
        self.default_task_user = user.unix_user();
        self
    }
}

impl LoopHooks for ServiceHooks {
    fn collect_checkpoints(&self, experiment_id: i32, config: &Value, protected: Vec<String>) {
        CheckpointGc::new(self.store.clone()).spawn(experiment_id, config.clone(), protected);
    }

    fn task_ended(&self, _task_id: &str) {
        self.task_logs.notify_new_lines();
    }

    fn service_ready(&self, task_id: &str, endpoint: ServiceEndpoint) {
        let target = ProxyTarget {
            address: endpoint.address,
            owner_id: endpoint.owner_id,
            kind: if endpoint.tcp { ProxyKind::Tcp } else { ProxyKind::Http },
            task_type: endpoint.task_type.env_name().to_owned(),
            unauthenticated: endpoint.unauthenticated,
        };
        self.proxies.register(task_id, target);
    }

    fn service_gone(&self, task_id: &str) {
        self.proxies.unregister(task_id);
    }

    fn startup_hook(&self, pool: &str) -> Option<String> {
        self.container_defaults.startup_hook(pool).map(str::to_owned)
    }

    fn default_task_user(&self) -> AgentUnixUser {
        self.default_task_user.clone()
    }
}
