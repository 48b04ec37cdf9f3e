//! The agent's configuration (`agent.yaml` keys, upstream names where upstream has them) and the
//! defaults that depend on the machine: the agent id (hostname) and the work root (data dir).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

/// Agent configuration. Every field has a default, so an empty document is a valid configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentConfig {
    pub master_host: String,
    pub master_port: u16,
    /// Defaults to the hostname; see [`AgentConfig::agent_id`].
    pub agent_id: Option<String>,
    pub resource_pool: String,
    pub slot_type: SlotType,
    /// When non-zero, the agent reports this many fake CPU slots instead of detecting devices.
    pub artificial_slots: u32,
    /// GPU indexes or UUIDs to expose, comma separated (`"0,2"`), as upstream; `None` means all.
    #[serde(deserialize_with = "visible_gpus_from_yaml")]
    pub visible_gpus: Option<String>,
    /// Where per-task work dirs go (ours); defaults to `<data dir>/agent/<agent_id>`.
    pub work_root: Option<PathBuf>,
    /// The interpreter trials run with (ours): a path, or a command looked up on `PATH`.
    pub python: PathBuf,
    /// How long a terminated task gets between SIGTERM and SIGKILL.
    pub termination_grace_seconds: u64,
    /// How many times to retry connecting to the master, at start and after a lost connection.
    pub agent_reconnect_attempts: u32,
    /// Wait between connection attempts, in seconds (fractions allowed).
    #[serde(with = "seconds")]
    pub agent_reconnect_backoff: Duration,
    /// Keep task work dirs (and their harness info) after the task ended, for debugging (ours).
    pub keep_work_dirs: bool,
    /// Upstream's `security` section (`tls`).
    pub security: SecurityConfig,
}

/// Upstream's agent `security` keys.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SecurityConfig {
    pub tls: TlsConfig,
}

/// `security.tls`: connect with `wss://` and verify the master's certificate against
/// `master_cert` (or the Mozilla roots), expecting `master_cert_name` when set.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct TlsConfig {
    pub enabled: bool,
    pub skip_verify: bool,
    pub master_cert: Option<PathBuf>,
    pub master_cert_name: Option<String>,
}

/// Which devices the agent offers as slots (`slot_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SlotType {
    /// CUDA GPUs when `nvidia-smi` finds any, otherwise one CPU slot.
    #[default]
    Auto,
    /// CUDA GPUs only; `gpu` is upstream's older spelling.
    #[serde(alias = "gpu")]
    Cuda,
    /// One CPU slot covering all cores.
    Cpu,
    /// No slots: the agent runs only zero-slot tasks.
    None,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("agent_id {0:?} is not usable: it must be non-empty and contain no '/', and not be '.' or '..'")]
    InvalidAgentId(String),
    #[error("master_port must be between 1 and 65535")]
    InvalidMasterPort,
    #[error("python must name an interpreter (a path or a command on PATH), not be empty")]
    EmptyPython,
    #[error("visible_gpus entry {0:?} is empty; list GPU indexes or UUIDs separated by commas, e.g. \"0,1\"")]
    InvalidVisibleGpus(String),
    #[error("security.tls.{0} is set but security.tls.enabled is false; enable TLS or remove it")]
    TlsDisabled(&'static str),
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            master_host: "localhost".to_string(),
            master_port: 8080,
            agent_id: None,
            resource_pool: "default".to_string(),
            slot_type: SlotType::Auto,
            artificial_slots: 0,
            visible_gpus: None,
            work_root: None,
            python: PathBuf::from("python3"),
            termination_grace_seconds: 30,
            agent_reconnect_attempts: 5,
            agent_reconnect_backoff: Duration::from_secs(5),
            keep_work_dirs: false,
            security: SecurityConfig::default(),
        }
    }
}

impl AgentConfig {
    /// The configured agent id, or this machine's hostname.
    pub fn agent_id(&self) -> String {
        match &self.agent_id {
            Some(id) => id.clone(),
            None => hostname(),
        }
    }

    /// The configured work root, or `<data dir>/agent/<agent_id>`.
    pub fn work_root(&self) -> PathBuf {
        match &self.work_root {
            Some(root) => root.clone(),
            None => default_data_dir().join("agent").join(self.agent_id()),
        }
    }

    pub fn termination_grace(&self) -> Duration {
        Duration::from_secs(self.termination_grace_seconds)
    }

    /// The `visible_gpus` filter as a list of indexes or UUIDs; empty means "all".
    pub fn visible_gpu_list(&self) -> Result<Vec<String>, ConfigError> {
        let Some(text) = &self.visible_gpus else { return Ok(Vec::new()) };
        text.split(',')
            .map(|entry| {
                let entry = entry.trim();
                if entry.is_empty() { Err(ConfigError::InvalidVisibleGpus(text.clone())) } else { Ok(entry.to_string()) }
            })
            .collect()
    }

    /// Checks what serde cannot: the agent id names a directory, the port is usable, and so on.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let id = self.agent_id();
        if !is_path_component(&id) {
            return Err(ConfigError::InvalidAgentId(id));
        }
        if self.master_port == 0 {
            return Err(ConfigError::InvalidMasterPort);
        }
        if self.python.as_os_str().is_empty() {
            return Err(ConfigError::EmptyPython);
        }
        self.visible_gpu_list()?;
        let tls = &self.security.tls;
        if !tls.enabled {
            if tls.master_cert.is_some() {
                return Err(ConfigError::TlsDisabled("master_cert"));
            }
            if tls.skip_verify {
                return Err(ConfigError::TlsDisabled("skip_verify"));
            }
        }
        Ok(())
    }
}

/// The data directory shared with the master: `$XDG_DATA_HOME/resolute` or the platform's equivalent.
pub fn default_data_dir() -> PathBuf {
    dirs::data_dir().map(|d| d.join("resolute")).unwrap_or_else(|| PathBuf::from("resolute-data"))
}

fn hostname() -> String {
    match nix::unistd::gethostname() {
        Ok(name) if !name.is_empty() => name.to_string_lossy().into_owned(),
        _ => "localhost".to_string(),
    }
}

/// True when `name` can be used as a single directory name under a root we own.
pub(crate) fn is_path_component(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains('/') && !name.contains('\0')
}

/// YAML writes `visible_gpus: 0` as a number and `visible_gpus: [0, 1]` as a list; upstream takes
/// the comma-separated string, so accept all three and store the string.
fn visible_gpus_from_yaml<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Entry {
        Index(u64),
        Text(String),
    }
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Visible {
        One(Entry),
        Many(Vec<Entry>),
    }
    let text = |entry: Entry| match entry {
        Entry::Index(i) => i.to_string(),
        Entry::Text(s) => s,
    };
    Ok(Option::<Visible>::deserialize(deserializer)?.map(|visible| match visible {
        Visible::One(entry) => text(entry),
        Visible::Many(entries) => entries.into_iter().map(text).collect::<Vec<_>>().join(","),
    }))
}

/// A [`Duration`] written as a number of seconds, as upstream's `agent_reconnect_backoff`.
mod seconds {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(value.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(deserializer)?;
        Duration::try_from_secs_f64(secs).map_err(|_| serde::de::Error::custom("expected a non-negative number of seconds"))
    }
}

/// Makes `path` absolute against the current directory without touching the file system.
pub(crate) fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_document_gives_upstream_defaults() {
        let config: AgentConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(config, AgentConfig::default());
        assert_eq!(config.resource_pool, "default");
        assert_eq!(config.termination_grace(), Duration::from_secs(30));
        assert!(!config.agent_id().is_empty());
        assert!(config.work_root().ends_with(Path::new("agent").join(config.agent_id())));
    }

    #[test]
    fn slot_type_accepts_upstream_spellings() {
        for (text, want) in
            [("auto", SlotType::Auto), ("cuda", SlotType::Cuda), ("gpu", SlotType::Cuda), ("cpu", SlotType::Cpu), ("none", SlotType::None)]
        {
            let config: AgentConfig = serde_json::from_str(&format!(r#"{{"slot_type":"{text}"}}"#)).unwrap();
            assert_eq!(config.slot_type, want);
        }
        assert!(serde_json::from_str::<AgentConfig>(r#"{"slot_type":"tpu"}"#).is_err());
    }

    #[test]
    fn visible_gpus_accepts_number_string_and_list() {
        let parse = |json: &str| serde_json::from_str::<AgentConfig>(json).unwrap().visible_gpu_list().unwrap();
        assert_eq!(parse(r#"{"visible_gpus":1}"#), ["1"]);
        assert_eq!(parse(r#"{"visible_gpus":"0, GPU-abc"}"#), ["0", "GPU-abc"]);
        assert_eq!(parse(r#"{"visible_gpus":[0,2]}"#), ["0", "2"]);
        assert!(parse(r#"{"visible_gpus":null}"#).is_empty());
        let bad: AgentConfig = serde_json::from_str(r#"{"visible_gpus":"0,,1"}"#).unwrap();
        assert!(matches!(bad.validate(), Err(ConfigError::InvalidVisibleGpus(_))));
    }

    #[test]
    fn validate_rejects_ids_that_are_not_directory_names() {
        for id in ["", ".", "..", "a/b"] {
            let config = AgentConfig { agent_id: Some(id.to_string()), ..AgentConfig::default() };
            assert_eq!(config.validate(), Err(ConfigError::InvalidAgentId(id.to_string())));
        }
        let config = AgentConfig { master_port: 0, ..AgentConfig::default() };
        assert_eq!(config.validate(), Err(ConfigError::InvalidMasterPort));
    }

    #[test]
    fn reconnect_backoff_is_seconds() {
        let config: AgentConfig = serde_json::from_str(r#"{"agent_reconnect_backoff":0.25,"agent_reconnect_attempts":2}"#).unwrap();
        assert_eq!(config.agent_reconnect_backoff, Duration::from_millis(250));
        assert_eq!(config.agent_reconnect_attempts, 2);
        assert!(serde_json::from_str::<AgentConfig>(r#"{"agent_reconnect_backoff":-1}"#).is_err());
        assert_eq!(AgentConfig::default().agent_reconnect_backoff, Duration::from_secs(5));
    }
}
