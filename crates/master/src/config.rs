//! Master configuration: `master.yaml` with upstream key names, then `DET_*` environment
//! variables, then command-line flags, each overriding the one before.
//!
//! Every overridable scalar is listed once in [`SETTINGS`]; its environment variable
//! (`DET_DB_HOST`) and flag (`--db-host`) are derived from its path (`db.host`), as upstream does.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use thiserror::Error;

use crate::domain::task_container_defaults::TaskContainerDefaults;

pub mod resource_pools;

pub use resource_pools::{PoolConfig, ResourcePools};

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("config file {path} is not valid YAML: {message}")]
    Syntax { path: PathBuf, message: String },
    #[error("invalid value for {origin} ({path}): {message}")]
    Override { origin: String, path: &'static str, message: String },
    #[error("invalid configuration at `{field}`: {message}")]
    Invalid { field: String, message: String },
}

/// The value type of an overridable setting, used to parse env/flag strings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettingKind {
    Text,
    Port,
    Count,
    /// `true`/`false` (also `1`/`0`, `yes`/`no`).
    Flag,
}

/// One scalar that may be set from the environment or a flag.
#[derive(Clone, Copy, Debug)]
pub struct Setting {
    pub path: &'static str,
    pub kind: SettingKind,
    pub help: &'static str,
}

impl Setting {
    /// `db.ssl_mode` → `DET_DB_SSL_MODE`.
    pub fn env_var(&self) -> String {
        format!("DET_{}", self.path.replace('.', "_").to_uppercase())
    }

    /// `db.ssl_mode` → `db-ssl-mode`.
    pub fn flag(&self) -> String {
        self.path.replace(['.', '_'], "-")
    }

    fn parse(&self, raw: &str) -> Result<Value, String> {
        match self.kind {
            SettingKind::Text => Ok(Value::String(raw.to_owned())),
            SettingKind::Port => {
                raw.trim().parse::<u16>().map(Value::from).map_err(|_| format!("expected a port number (0-65535), found {raw:?}"))
            }
            SettingKind::Count => {
                raw.trim().parse::<u32>().map(Value::from).map_err(|_| format!("expected a non-negative integer, found {raw:?}"))
            }
            SettingKind::Flag => match raw.trim().to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" => Ok(Value::Bool(true)),
                "false" | "0" | "no" => Ok(Value::Bool(false)),
                _ => Err(format!("expected true or false, found {raw:?}")),
            },
        }
    }
}

const fn setting(path: &'static str, kind: SettingKind, help: &'static str) -> Setting {
    Setting { path, kind, help }
}

/// Every setting that `DET_*` variables and `det master run` flags can override.
pub static SETTINGS: &[Setting] = &[
    setting("port", SettingKind::Port, "HTTP port for the API and web UI (default 8080, 8443 with TLS)"),
    setting("listen_address", SettingKind::Text, "IP address the master listens on (default 0.0.0.0, every interface)"),
    setting(
        "security.tls.cert",
        SettingKind::Text,
        "PEM certificate chain (leaf first); with security.tls.key the master serves HTTPS only",
    ),
    setting("security.tls.key", SettingKind::Text, "PEM private key of security.tls.cert"),
    setting("cluster_name", SettingKind::Text, "human-readable cluster name"),
    setting("data_dir", SettingKind::Text, "directory for the SQLite database and default checkpoint storage"),
    setting("db.host", SettingKind::Text, "PostgreSQL host; when unset, embedded SQLite is used"),
    setting("db.port", SettingKind::Port, "PostgreSQL port (default 5432)"),
    setting("db.user", SettingKind::Text, "PostgreSQL user (default postgres)"),
    setting("db.password", SettingKind::Text, "PostgreSQL password"),
    setting("db.name", SettingKind::Text, "PostgreSQL database name (default determined)"),
    setting("db.ssl_mode", SettingKind::Text, "PostgreSQL sslmode: disable, prefer, require, verify-ca, verify-full"),
    setting("security.initial_user_password", SettingKind::Text, "password for the admin and determined users created on first start"),
    setting("security.agent_secret", SettingKind::Text, "the cluster join secret agents must present (unset: only loopback agents)"),
    setting("security.agent_secret_file", SettingKind::Text, "a file whose trimmed contents are the agent join secret"),
    setting("security.token.default_lifespan_days", SettingKind::Count, "login session lifetime in days (default 7)"),
    setting("security.default_task_user.uid", SettingKind::Count, "uid that tasks of users without an agent user run as (default 65534)"),
    setting("security.default_task_user.gid", SettingKind::Count, "gid that tasks of users without an agent user run as (default 65534)"),
    setting("security.default_task_user.user", SettingKind::Text, "user name of security.default_task_user.uid (default nobody)"),
    setting("security.default_task_user.group", SettingKind::Text, "group name of security.default_task_user.gid (default nogroup)"),
    setting("checkpoint_storage.type", SettingKind::Text, "default checkpoint storage type (shared_fs, directory, s3)"),
    setting("checkpoint_storage.host_path", SettingKind::Text, "shared_fs checkpoint storage host path"),
    setting("checkpoint_storage.storage_path", SettingKind::Text, "checkpoint storage sub-path"),
    setting("log.level", SettingKind::Text, "log level: trace, debug, info, warn, error"),
    setting(
        "webhooks.signing_key",
        SettingKind::Text,
        "key of webhook signatures (X-Determined-AI-Signature); generated and stored when unset",
    ),
    setting("webhooks.base_url", SettingKind::Text, "the web UI's address, for links in Slack webhook messages"),
    setting(
        "observability.enable_prometheus",
        SettingKind::Flag,
        "serve Prometheus metrics at /debug/prom/metrics and /prom/det-state-metrics",
    ),
    setting(
        "tensorboard_timeout",
        SettingKind::Count,
        "seconds without proxied traffic after which a TensorBoard is killed (default 300; 0 never)",
    ),
    setting(
        "agent_reconnect_wait",
        SettingKind::Count,
        "seconds a disconnected agent keeps its tasks and slots before they restart elsewhere (default 25)",
    ),
    setting(
        "agent_reattach_wait",
        SettingKind::Count,
        "seconds a restarted master waits for agents to reattach the tasks they still run (default 60; 0 ends them at once)",
    ),
];

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(default)]
pub struct MasterConfig {
    pub port: u16,
    /// Ours (upstream listens on every interface): the address the master binds.
    pub listen_address: String,
    pub cluster_name: String,
    /// Ours (upstream has none): where the SQLite database and default checkpoints live.
    pub data_dir: Option<PathBuf>,
    pub db: DbConfig,
    pub security: SecurityConfig,
    /// Kept as written; validated by the experiment configuration code that uses it.
    pub checkpoint_storage: Option<Value>,
    pub log: LogConfig,
    /// Seconds a TensorBoard may go without proxied traffic before it is killed; 0 never.
    pub tensorboard_timeout: u32,
    /// Seconds a disconnected agent keeps its tasks and slots (upstream's `agent_reconnect_wait`,
    /// 25 s); past it, its trials restart elsewhere from their checkpoints.
    pub agent_reconnect_wait: u32,
    /// Ours: seconds a restarted master keeps the allocations that were running open for their
    /// agents to reattach them (upstream's `agent_reattach_enabled`, as a window); 0 ends them.
    pub agent_reattach_wait: u32,
    /// Kept as written; read by `services::task_container_defaults`, which warns about the keys
    /// it cannot apply.
    pub task_container_defaults: Option<Value>,
    /// `resource_pools[].task_container_defaults` by `pool_name` (the rest of `resource_pools` is
    /// in `resource_pools`).
    #[serde(skip)]
    pub pool_task_container_defaults: BTreeMap<String, Value>,
    /// `resource_manager` and `resource_pools`: the pools, their schedulers and the default
    /// pools (`config/resource_pools.rs`).
    #[serde(skip)]
    pub resource_pools: ResourcePools,
    /// Both of the above, validated (by [`MasterConfig::from_tree`]).
    #[serde(skip)]
    pub container_defaults: TaskContainerDefaults,
    /// `webhooks`: the signing key and the UI address for links in Slack messages.
    pub webhooks: WebhooksConfig,
    /// `observability`: Prometheus metrics (off unless enabled).
    pub observability: ObservabilityConfig,
    /// Keys we read but ignore, to warn about them once the logger is up.
    #[serde(skip)]
    pub warnings: Vec<String>,
    /// `security.agent_secret(_file)`, resolved by [`MasterConfig::from_tree`].
    #[serde(skip)]
    pub agent_secret: Option<String>,
}

/// `observability` in master.yaml.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct ObservabilityConfig {
    /// Serve `/debug/prom/metrics` and `/prom/det-state-metrics`.
    pub enable_prometheus: bool,
}

/// `webhooks` in master.yaml, as upstream.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct WebhooksConfig {
    /// Signs every webhook request; when unset one is generated and kept in the database.
    #[serde(skip_serializing)]
    pub signing_key: Option<String>,
    /// The web UI's base URL, for links in Slack messages.
    pub base_url: Option<String>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(default)]
pub struct DbConfig {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: String,
    pub name: String,
    pub ssl_mode: String,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct SecurityConfig {
    pub initial_user_password: Option<String>,
    pub token: TokenConfig,
    /// Ours: the Unix account on agents that the tasks of a user without a linked agent user
    /// (`det user link-with-agent-user`) run as. Unprivileged by default, never root unless
    /// configured so.
    pub default_task_user: DefaultTaskUser,
    /// The cluster join secret agents present on `/agents` (ours); never serialized or logged.
    #[serde(skip_serializing)]
    pub agent_secret: Option<String>,
    /// A file holding the join secret (trimmed), instead of `agent_secret`.
    pub agent_secret_file: Option<PathBuf>,
    pub tls: TlsConfig,
}

/// `security.default_task_user`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct DefaultTaskUser {
    pub uid: u32,
    pub gid: u32,
    pub user: String,
    pub group: String,
}

impl DefaultTaskUser {
    /// In the agent protocol's shape.
    pub fn unix_user(&self) -> resolute_api::agent_protocol::AgentUnixUser {
        resolute_api::agent_protocol::AgentUnixUser { user: self.user.clone(), uid: self.uid, group: self.group.clone(), gid: self.gid }
    }
}

impl Default for DefaultTaskUser {
    fn default() -> Self {
        DefaultTaskUser { uid: 65534, gid: 65534, user: "nobody".to_owned(), group: "nogroup".to_owned() }
    }
}

impl SecurityConfig {
    /// The join secret from `agent_secret` or `agent_secret_file`; `None` when neither is set.
    pub fn resolve_agent_secret(&self) -> Result<Option<String>, ConfigError> {
        let invalid = |field: &str, message: String| ConfigError::Invalid { field: field.to_owned(), message };
        match (&self.agent_secret, &self.agent_secret_file) {
            (Some(_), Some(_)) => {
                Err(invalid("security.agent_secret", "set either security.agent_secret or security.agent_secret_file, not both".to_owned()))
            }
            (Some(secret), None) if secret.trim().is_empty() => {
                Err(invalid("security.agent_secret", "must not be empty (remove it to accept only loopback agents)".to_owned()))
            }
            (Some(secret), None) => Ok(Some(secret.trim().to_owned())),
            (None, Some(path)) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| invalid("security.agent_secret_file", format!("cannot read {}: {e}", path.display())))?;
                let secret = text.trim();
                if secret.is_empty() {
                    return Err(invalid("security.agent_secret_file", format!("{} is empty", path.display())));
                }
                Ok(Some(secret.to_owned()))
            }
            (None, None) => Ok(None),
        }
    }
}

/// `security.tls`: both set, the master serves HTTPS only; neither, plain HTTP.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct TlsConfig {
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(default)]
pub struct TokenConfig {
    pub default_lifespan_days: u32,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(default)]
pub struct LogConfig {
    pub level: String,
    pub color: bool,
}

impl Default for MasterConfig {
    fn default() -> Self {
        MasterConfig {
            port: 8080,
            listen_address: "0.0.0.0".to_owned(),
            cluster_name: String::new(),
            data_dir: None,
            db: DbConfig::default(),
            security: SecurityConfig::default(),
            checkpoint_storage: None,
            log: LogConfig::default(),
            tensorboard_timeout: 300,
            agent_reconnect_wait: 25,
            agent_reattach_wait: 60,
            task_container_defaults: None,
            pool_task_container_defaults: BTreeMap::new(),
            resource_pools: ResourcePools::default(),
            container_defaults: TaskContainerDefaults::default(),
            webhooks: WebhooksConfig::default(),
            observability: ObservabilityConfig::default(),
            warnings: Vec::new(),
            agent_secret: None,
        }
    }
}

impl Default for DbConfig {
    fn default() -> Self {
        DbConfig {
            host: String::new(),
            port: 5432,
            user: "postgres".to_owned(),
            password: String::new(),
            name: "determined".to_owned(),
            ssl_mode: "disable".to_owned(),
        }
    }
}

impl Default for TokenConfig {
    fn default() -> Self {
        TokenConfig { default_lifespan_days: 7 }
    }
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig { level: "info".to_owned(), color: true }
    }
}

/// Top-level keys of upstream's master.yaml that we accept without acting on them yet.
const UPSTREAM_ONLY_KEYS: &[&str] = &[
    "additional_resource_managers",
    "telemetry",
    "enable_cors",
    "root",
    "cache",
    "logging",
    "retention_policy",
    "notebook_timeout",
    "ui_customization",
    "feature_switches",
    "reserved_ports",
    "launch_error",
    "integrations",
    "scim",
    "saml",
    "oidc",
    "det_cloud",
    "__internal",
    "config_file",
];

impl MasterConfig {
    /// Reads `config_file` (if any), then applies `DET_*` variables from the process
    /// environment, then `flag_overrides` (setting path, raw value).
    pub fn load(config_file: Option<&Path>, flag_overrides: &[(&'static str, String)]) -> Result<MasterConfig, ConfigError> {
        let env: Vec<(String, String)> = std::env::vars().collect();
        Self::load_with_env(config_file, &env, flag_overrides)
    }

    /// [`MasterConfig::load`] with an explicit environment, for tests.
    pub fn load_with_env(
        config_file: Option<&Path>,
        env: &[(String, String)],
        flag_overrides: &[(&'static str, String)],
    ) -> Result<MasterConfig, ConfigError> {
        let mut tree = match config_file {
            Some(path) => read_yaml(path)?,
            None => Value::Object(Map::new()),
        };
        for setting in SETTINGS {
            let var = setting.env_var();
            if let Some((_, raw)) = env.iter().find(|(k, _)| *k == var) {
                apply(&mut tree, setting, raw, &var)?;
            }
        }
        for (path, raw) in flag_overrides {
            let setting = SETTINGS
                .iter()
                .find(|s| s.path == *path)
                .ok_or_else(|| ConfigError::Invalid { field: (*path).to_owned(), message: "not an overridable setting".to_owned() })?;
            apply(&mut tree, setting, raw, &format!("--{}", setting.flag()))?;
        }
        Self::from_tree(tree)
    }

    /// Parses an already-loaded YAML/JSON tree, collecting warnings for keys we ignore.
    pub fn from_tree(mut tree: Value) -> Result<MasterConfig, ConfigError> {
        let mut warnings = Vec::new();
        let pool_defaults = pool_task_container_defaults(&tree);
        let (resource_pools, pool_warnings) = ResourcePools::from_tree(&tree)?;
        warnings.extend(pool_warnings);
        let port_given = tree.get("port").is_some_and(|p| !p.is_null());
        if let Value::Object(map) = &mut tree {
            // Read above, by `ResourcePools::from_tree`.
            map.remove("resource_manager");
            map.remove("resource_pools");
            for key in UPSTREAM_ONLY_KEYS {
                if map.remove(*key).is_some() {
                    warnings.push(format!("master config key `{key}` is not supported yet and is ignored"));
                }
            }
        }
        let mut ignored = Vec::new();
        let mut config: MasterConfig = serde_ignored::deserialize(tree, |path| ignored.push(path.to_string()))
            .map_err(|e| ConfigError::Invalid { field: "master config".to_owned(), message: e.to_string() })?;
        warnings.extend(ignored.into_iter().map(|p| format!("unknown master config key `{p}` is ignored")));
        config.pool_task_container_defaults = pool_defaults;
        config.resource_pools = resource_pools;
        let (container_defaults, defaults_warnings) =
            TaskContainerDefaults::from_config(config.task_container_defaults.as_ref(), &config.pool_task_container_defaults)
                .map_err(|e| ConfigError::Invalid { field: e.field, message: e.message })?;
        config.container_defaults = container_defaults;
        warnings.extend(defaults_warnings);
        config.warnings = warnings;
        // Upstream's default port is 8443 when TLS is configured.
        if !port_given && config.tls_enabled() {
            config.port = 8443;
        }
        config.validate()?;
        config.agent_secret = config.security.resolve_agent_secret()?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        const SSL_MODES: &[&str] = &["disable", "allow", "prefer", "require", "verify-ca", "verify-full"];
        if !SSL_MODES.contains(&self.db.ssl_mode.as_str()) {
            return Err(ConfigError::Invalid {
                field: "db.ssl_mode".to_owned(),
                message: format!("{:?} is not one of {}", self.db.ssl_mode, SSL_MODES.join(", ")),
            });
        }
        if self.uses_postgres() && self.db.name.is_empty() {
            return Err(ConfigError::Invalid { field: "db.name".to_owned(), message: "must not be empty when db.host is set".to_owned() });
        }
        if self.security.token.default_lifespan_days == 0 {
            return Err(ConfigError::Invalid {
                field: "security.token.default_lifespan_days".to_owned(),
                message: "must be at least 1".to_owned(),
            });
        }
        let task_user = &self.security.default_task_user;
        for (field, name) in [("user", &task_user.user), ("group", &task_user.group)] {
            if name.trim().is_empty() || name.contains(['\0', '/', ':']) {
                return Err(ConfigError::Invalid {
                    field: format!("security.default_task_user.{field}"),
                    message: format!("{name:?} is not a Unix {field} name"),
                });
            }
        }
        if self.listen_address.trim().parse::<std::net::IpAddr>().is_err() {
            return Err(ConfigError::Invalid {
                field: "listen_address".to_owned(),
                message: format!(
                    "{:?} is not an IP address (e.g. 0.0.0.0 for every interface, 127.0.0.1 for this host only)",
                    self.listen_address
                ),
            });
        }
        let tls = &self.security.tls;
        let empty = |p: &Option<PathBuf>| p.as_ref().is_some_and(|p| p.as_os_str().is_empty());
        for (field, path) in [("security.tls.cert", &tls.cert), ("security.tls.key", &tls.key)] {
            if empty(path) {
                return Err(ConfigError::Invalid { field: field.to_owned(), message: "must name a PEM file, not be empty".to_owned() });
            }
        }
        match (&tls.cert, &tls.key) {
            (Some(_), None) => {
                return Err(ConfigError::Invalid {
                    field: "security.tls.key".to_owned(),
                    message: "must be set when security.tls.cert is (the certificate's PEM private key)".to_owned(),
                });
            }
            (None, Some(_)) => {
                return Err(ConfigError::Invalid {
                    field: "security.tls.cert".to_owned(),
                    message: "must be set when security.tls.key is (the PEM certificate chain)".to_owned(),
                });
            }
            _ => {}
        }
        if tracing_level(&self.log.level).is_none() {
            return Err(ConfigError::Invalid {
                field: "log.level".to_owned(),
                message: format!("{:?} is not one of trace, debug, info, warn, error", self.log.level),
            });
        }
        Ok(())
    }

    /// Whether `security.tls` names a certificate and key (validated to come together).
    pub fn tls_enabled(&self) -> bool {
        self.security.tls.cert.is_some() && self.security.tls.key.is_some()
    }

    /// Where the master listens (validated by [`MasterConfig::from_tree`]).
    pub fn listen_addr(&self) -> std::net::SocketAddr {
        let ip = self.listen_address.trim().parse().unwrap_or(std::net::IpAddr::from([0, 0, 0, 0]));
        std::net::SocketAddr::new(ip, self.port)
    }

    pub fn uses_postgres(&self) -> bool {
        !self.db.host.is_empty()
    }

    /// `data_dir`, defaulting to `$XDG_DATA_HOME/resolute` (or the platform's equivalent).
    pub fn data_dir(&self) -> PathBuf {
        self.data_dir.clone().or_else(|| dirs::data_dir().map(|d| d.join("resolute"))).unwrap_or_else(|| PathBuf::from("resolute-data"))
    }
}

/// Maps upstream's log level names (which include `fatal`/`panic`) to a tracing filter.
pub fn tracing_level(level: &str) -> Option<&'static str> {
    match level.to_ascii_lowercase().as_str() {
        "trace" => Some("trace"),
        "debug" => Some("debug"),
        "info" => Some("info"),
        "warn" | "warning" => Some("warn"),
        "error" | "fatal" | "panic" => Some("error"),
        _ => None,
    }
}

/// `resource_pools[].task_container_defaults` by pool name; pools without either are skipped.
fn pool_task_container_defaults(tree: &Value) -> BTreeMap<String, Value> {
    let Some(pools) = tree.get("resource_pools").and_then(Value::as_array) else { return BTreeMap::new() };
    pools
        .iter()
        .filter_map(|pool| {
            let name = pool.get("pool_name")?.as_str()?;
            let defaults = pool.get("task_container_defaults").filter(|d| !d.is_null())?;
            Some((name.to_owned(), defaults.clone()))
        })
        .collect()
}

fn read_yaml(path: &Path) -> Result<Value, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.to_owned(), source })?;
    let value: Value = serde_norway::from_str(&text).map_err(|e| ConfigError::Syntax { path: path.to_owned(), message: e.to_string() })?;
    match value {
        Value::Null => Ok(Value::Object(Map::new())),
        Value::Object(_) => Ok(value),
        _ => Err(ConfigError::Syntax { path: path.to_owned(), message: "the top level must be a mapping".to_owned() }),
    }
}

/// Sets `setting.path` in `tree` to the parsed `raw`, creating intermediate mappings.
fn apply(tree: &mut Value, setting: &Setting, raw: &str, origin: &str) -> Result<(), ConfigError> {
    let value = setting.parse(raw).map_err(|message| ConfigError::Override { origin: origin.to_owned(), path: setting.path, message })?;
    let mut node = tree;
    let mut parts = setting.path.split('.').peekable();
    while let Some(part) = parts.next() {
        if !node.is_object() {
            *node = Value::Object(Map::new());
        }
        let Value::Object(map) = node else { unreachable!("made an object above") };
        if parts.peek().is_none() {
            map.insert(part.to_owned(), value);
            return Ok(());
        }
        node = map.entry(part.to_owned()).or_insert_with(|| Value::Object(Map::new()));
    }
    Ok(())
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
