//! The Resolute master: configuration, the store, services and the HTTP API on one port.
//!
//! Layering (outer to inner): `http` (parse, authenticate, render) → `services` (rules and
//! permissions) → `resolute_store::Store` (persistence). `auth` holds the pure credential
//! functions both layers use.

pub mod auth;
pub mod cluster;
pub mod config;
pub mod domain;
mod error;
mod http;
pub mod master_logs;
pub mod prometheus;
pub mod services;
mod state;
mod tls_listener;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::serve::ListenerExt;
use resolute_store::{PostgresOptions, SqlStore, Store, StoreError};
use thiserror::Error;
use tokio::net::TcpListener;

pub use config::MasterConfig;
pub use error::ApiError;
pub use state::{AppState, Identity};

#[derive(Debug, Error)]
pub enum MasterError {
    #[error("cannot create data directory {path}: {source}")]
    DataDir { path: std::path::PathBuf, source: std::io::Error },
    #[error("cannot open the {backend} database: {source}")]
    Store { backend: &'static str, source: StoreError },
    #[error("cannot listen on {addr} (listen_address, port): {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    #[error("cannot serve HTTPS: {0}")]
    Tls(#[from] resolute_tls::TlsError),
    #[error("cannot create the default users: {0}")]
    Bootstrap(String),
    #[error("server error: {0}")]
    Serve(std::io::Error),
}

/// A master that has opened its store and bound its port, ready to serve.
pub struct Master {
    listener: TcpListener,
    /// `security.tls`, loaded: when set the master speaks only HTTPS.
    tls: Option<Arc<rustls::ServerConfig>>,
    state: AppState,
    store: Arc<SqlStore>,
    cluster_events: tokio::sync::mpsc::UnboundedReceiver<cluster::ClusterEvent>,
}

impl Master {
    /// Opens the store (applying migrations), creates default users, binds the port.
    pub async fn start(config: MasterConfig) -> Result<Master, MasterError> {
        // Unusable certificates fail the start before anything is opened.
        let tls = match (&config.security.tls.cert, &config.security.tls.key) {
            (Some(cert), Some(key)) => Some(resolute_tls::server_config("security.tls.cert", cert, "security.tls.key", key)?),
            _ => None,
        };
        let store = Arc::new(open_store(&config).await?);
        let (cluster, cluster_events) = cluster::ClusterHandle::new();
        let cluster = cluster.with_resource_pools(config.resource_pools.clone());
        let state = AppState::new(
            store.clone(),
            config.clone(),
            Identity {
                master_id: uuid::Uuid::new_v4().to_string(),
                cluster_id: store.cluster_id().await.map_err(|source| MasterError::Store { backend: store.backend(), source })?,
                cluster_name: config.cluster_name.clone(),
            },
            cluster,
        );
        state
            .users
            .ensure_default_users(config.security.initial_user_password.as_deref())
            .await
            .map_err(|e| MasterError::Bootstrap(e.message))?;
        if config.security.default_task_user.uid == 0 {
            tracing::warn!(
                "security.default_task_user is root: tasks of users without a linked agent user run as root on agents that run as root"
            );
        }
        let addr = config.listen_addr();
        let listener = TcpListener::bind(addr).await.map_err(|source| MasterError::Bind { addr, source })?;
        if config.agent_secret.is_none() {
            tracing::warn!(
                "no agent join secret is configured (security.agent_secret): agents are accepted only from this machine \
                 (loopback) and remote agents will be refused until one is set"
            );
        }
        Ok(Master { listener, tls, state, store, cluster_events })
    }

    /// The store this master writes, for tools and tests that seed or inspect it directly.
    pub fn store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }

    /// The cluster handle (events, preemption signals), for tests that stand in for the loop.
    pub fn cluster(&self) -> cluster::ClusterHandle {
        self.state.cluster.clone()
    }

    /// The task services proxied at `/proxy/{id}/`, for tests and tools that stand in for the
    /// loop. The loop itself reaches the same registry as `AppState::proxies`.
    pub fn proxies(&self) -> services::ProxyRegistry {
        self.state.proxies.clone()
    }

    /// Whether this master serves HTTPS (`security.tls`).
    pub fn tls(&self) -> bool {
        self.tls.is_some()
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], 0)))
    }

    /// Serves until `shutdown` resolves, then drains connections and closes the store.
    pub async fn serve(self, shutdown: impl Future<Output = ()> + Send + 'static) -> Result<(), MasterError> {
        let Master { listener, tls, state, store, cluster_events } = self;
        let hooks = Arc::new(
            services::ServiceHooks::new(
                state.store.clone(),
                state.task_logs.clone(),
                state.proxies.clone(),
                state.config.container_defaults.clone(),
            )
            .with_default_task_user(&state.config.security.default_task_user),
        );
        let cluster_loop = tokio::spawn(
            cluster::start_loop(
                state.store.clone(),
                state.cluster.clone(),
                state.identity.clone(),
                hooks,
                cluster_events,
                cluster::Timing {
                    agent_reconnect_wait: std::time::Duration::from_secs(state.config.agent_reconnect_wait.into()),
                    agent_reattach_wait: std::time::Duration::from_secs(state.config.agent_reattach_wait.into()),
                    ..Default::default()
                },
            )
            .await,
        );
        let purger = tokio::spawn(purge_sessions_periodically(state.clone()));
        let lost_trials = services::spawn_lost_trial_sweeper(state.store.clone());
        let idle_watcher = tokio::spawn(
            services::IdleWatcher::new(
                state.store.clone(),
                state.task_logs.clone(),
                state.proxies.clone(),
                state.cluster.clone(),
                vec![services::IdleRule::tensorboards(state.config.tensorboard_timeout), services::IdleRule::notebooks()],
            )
            .run(services::idle_tasks::CHECK_INTERVAL),
        );
        state.workspaces.resume_deletions().await;
        // Webhook events queued before this start (a restart) are due at once.
        let webhook_delivery = match state.webhooks.sender().await {
            Ok(sender) => Some(tokio::spawn(
                services::webhook_delivery::WebhookDelivery::new(state.store.clone(), sender, state.webhooks.base_url()).run(),
            )),
            Err(e) => {
                tracing::error!(error = %e.message, "webhook delivery is off: the signing key could not be read");
                None
            }
        };
        // The peer address decides whether an agent without the join secret may connect, and
        // feeds the per-address login throttle.
        let app = http::router(state).into_make_service_with_connect_info::<SocketAddr>();
        let result = match tls {
            Some(config) => {
                // `tap_io` (a no-op here) is how axum hands a custom listener's peer address to
                // `ConnectInfo`.
                let listener = tls_listener::TlsListener::new(listener, config).map_err(MasterError::Serve)?.tap_io(|_| {});
                axum::serve(listener, app).with_graceful_shutdown(shutdown).await.map_err(MasterError::Serve)
            }
            None => {
                // No Nagle on any connection: small responses and websocket frames (task starts,
                // kills) go out at once instead of waiting on the peer's delayed ACK.
                let listener = listener.tap_io(|tcp| {
                    if let Err(e) = tcp.set_nodelay(true) {
                        tracing::debug!(error = %e, "could not set TCP_NODELAY");
                    }
                });
                axum::serve(listener, app).with_graceful_shutdown(shutdown).await.map_err(MasterError::Serve)
            }
        };
        purger.abort();
        lost_trials.abort();
        idle_watcher.abort();
        if let Some(delivery) = webhook_delivery {
            delivery.abort();
        }
        cluster_loop.abort();
        store.close().await;
        result
    }
}

/// Runs a master until SIGINT or SIGTERM.
pub async fn run(config: MasterConfig) -> Result<(), MasterError> {
    for warning in &config.warnings {
        tracing::warn!("{warning}");
    }
    let master = Master::start(config).await?;
    let scheme = if master.tls() { "https" } else { "http" };
    tracing::info!(addr = %master.local_addr(), scheme, backend = master.store.backend(), "master listening");
    master.serve(shutdown_signal()).await?;
    tracing::info!("master stopped");
    Ok(())
}

async fn open_store(config: &MasterConfig) -> Result<SqlStore, MasterError> {
    if config.uses_postgres() {
        let opts = PostgresOptions {
            host: config.db.host.clone(),
            port: config.db.port,
            user: config.db.user.clone(),
            password: config.db.password.clone(),
            database: config.db.name.clone(),
            ssl_mode: config.db.ssl_mode.clone(),
            max_connections: 16,
            ..Default::default()
        };
        SqlStore::open_postgres(&opts).await.map_err(|source| MasterError::Store { backend: "postgres", source })
    } else {
        let dir = config.data_dir();
        std::fs::create_dir_all(&dir).map_err(|source| MasterError::DataDir { path: dir.clone(), source })?;
        SqlStore::open_sqlite(&dir.join("resolute.db")).await.map_err(|source| MasterError::Store { backend: "sqlite", source })
    }
}

async fn purge_sessions_periodically(state: AppState) {
    let mut tick = tokio::time::interval(Duration::from_secs(3600));
    loop {
        tick.tick().await;
        match state.auth.purge_expired().await {
            Ok(0) => {}
            Ok(n) => tracing::debug!(sessions = n, "purged expired sessions"),
            Err(e) => tracing::warn!(error = %e.message, "purging expired sessions failed"),
        }
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}
