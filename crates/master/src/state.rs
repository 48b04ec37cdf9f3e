//! Shared state handed to every handler.

use std::sync::Arc;

use resolute_store::Store;

use crate::cluster::ClusterHandle;
use crate::config::MasterConfig;
use crate::services::models::ModelService;
use crate::services::{
    AuthService, CommandService, ExperimentService, ProjectService, ProxyRegistry, SessionCache, TaskLogService, TaskService,
    TemplateService, TrialRuntimeService, UserService, WebhookService, WorkspaceService,
};

/// Who this master is, as reported by `/info` and `/api/v1/master`.
#[derive(Clone, Debug)]
pub struct Identity {
    /// Random per process, as upstream.
    pub master_id: String,
    /// Stable for the database.
    pub cluster_id: String,
    pub cluster_name: String,
}

/// What every handler reaches. Cloned per request by axum's extractors, so it is one `Arc`:
/// cloning the services field by field cost ~1.7 µs of atomic counting per request.
#[derive(Clone)]
pub struct AppState(Arc<AppServices>);

impl std::ops::Deref for AppState {
    type Target = AppServices;

    fn deref(&self) -> &AppServices {
        &self.0
    }
}

pub struct AppServices {
    pub identity: Arc<Identity>,
    pub config: Arc<MasterConfig>,
    pub auth: AuthService,
    pub users: UserService,
    pub experiments: ExperimentService,
    /// Log streams; `task_logs.notify_new_lines()` wakes followers after logs are stored.
    pub task_logs: TaskLogService,
    pub tasks: TaskService,
    /// Commands, notebooks, shells, TensorBoards and generic tasks.
    pub commands: CommandService,
    pub templates: TemplateService,
    pub workspaces: WorkspaceService,
    pub projects: ProjectService,
    /// The model registry.
    pub models: ModelService,
    /// Webhooks, the task-log trigger cache the log writers match against, the request signer.
    pub webhooks: WebhookService,
    /// Trial logs matched against their experiment's `log_policies` as they are ingested.
    pub log_policies: crate::services::log_policies::LogPolicyMatcher,
    /// The single writer loop's inbox, preemption signals and cluster view.
    pub cluster: ClusterHandle,
    /// What running tasks report (metrics, checkpoints, preemption, logs).
    pub runtime: TrialRuntimeService,
    /// Task services reachable at `/proxy/{id}/`; the cluster loop registers and unregisters
    /// them, the proxy reads them on every request.
    pub proxies: ProxyRegistry,
    pub store: Arc<dyn Store>,
    /// Downsampled chart answers (`GET /api/v1/trials/time-series`), valid while their series is.
    pub charts: crate::services::chart_cache::ChartCache,
    /// The Prometheus metrics, when `observability.enable_prometheus` is on.
    pub prometheus: Option<Arc<crate::prometheus::Prometheus>>,
    /// Whether clients reach this master over TLS: the session cookie gets `Secure`, and the
    /// CSRF check takes `https` as the master's own scheme.
    pub serves_tls: bool,
}

impl AppState {
    pub fn new(store: Arc<dyn Store>, config: MasterConfig, identity: Identity, cluster: ClusterHandle) -> AppState {
        let lifespan = chrono::TimeDelta::days(i64::from(config.security.token.default_lifespan_days));
        let sessions = Arc::new(SessionCache::default());
        let experiments = ExperimentService::new(store.clone(), cluster.clone(), config.checkpoint_storage.clone(), &config.data_dir())
            .with_container_defaults(config.container_defaults.clone());
        AppState(Arc::new(AppServices {
            identity: Arc::new(identity),
            auth: AuthService::new(store.clone(), sessions.clone(), lifespan),
            users: UserService::new(store.clone(), sessions),
            experiments,
            runtime: TrialRuntimeService::new(store.clone(), cluster.clone()),
            task_logs: TaskLogService::new(store.clone()),
            tasks: TaskService::new(store.clone(), cluster.clone()),
            commands: CommandService::new(store.clone(), cluster.clone())
                .with_container_defaults(config.container_defaults.clone())
                .with_default_task_user(&config.security.default_task_user),
            templates: TemplateService::new(store.clone()),
            workspaces: WorkspaceService::new(store.clone()),
            projects: ProjectService::new(store.clone()),
            models: ModelService::new(store.clone()),
            webhooks: WebhookService::new(store.clone(), config.webhooks.clone()),
            log_policies: crate::services::log_policies::LogPolicyMatcher::new(store.clone(), cluster.clone()),
            cluster,
            proxies: ProxyRegistry::new(),
            store,
            charts: Default::default(),
            prometheus: prometheus_metrics(&config),
            serves_tls: serves_tls(&config),
            config: Arc::new(config),
        }))
    }
}

/// The metrics registry when `observability.enable_prometheus` is on.
fn prometheus_metrics(config: &MasterConfig) -> Option<Arc<crate::prometheus::Prometheus>> {
    if !config.observability.enable_prometheus {
        return None;
    }
    match crate::prometheus::Prometheus::new() {
        Ok(p) => Some(Arc::new(p)),
        Err(e) => {
            tracing::error!(error = %e, "Prometheus metrics could not be set up; serving without them");
            None
        }
    }
}

/// Whether the master's listener speaks TLS (`security.tls`): then the session cookie is `Secure`.
fn serves_tls(config: &MasterConfig) -> bool {
    config.tls_enabled()
}
