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
    /// How many times to retry connecting to the master, at start and after a lost connection,
    /// before the agent gives up (and terminates its tasks). Unset or 0: never give up — tasks
    /// keep running while the master is unreachable, however long that lasts.
    pub agent_reconnect_attempts: Option<u32>,
    /// A fixed wait between connection attempts, in seconds (fractions allowed). Unset: 1 s,
    /// doubling up to 30 s, each wait ±20 % at random (so agents do not return in lockstep).
    #[serde(with = "seconds")]
    pub agent_reconnect_backoff: Option<Duration>,
    /// `security`: the cluster's join secret (ours), which a master with `security.agent_secret`
    /// requires, and upstream's `tls`.
    pub security: AgentSecurity,
    /// Keep task work dirs (and their harness info) after the task ended, for debugging (ours).
    pub keep_work_dirs: bool,
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

/// `security` in agent.yaml.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentSecurity {
    /// Sent as `Authorization: Bearer <secret>` on the `/agents` upgrade; never logged.
    #[serde(skip_serializing)]
    pub agent_secret: Option<String>,
    /// A file whose trimmed contents are the secret, instead of `agent_secret`.
    pub agent_secret_file: Option<PathBuf>,
    /// Upstream's `security.tls`.
    pub tls: TlsConfig,
}

impl std::fmt::Debug for AgentSecurity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentSecurity")
            .field("agent_secret", &self.agent_secret.as_ref().map(|_| "<redacted>"))
            .field("agent_secret_file", &self.agent_secret_file)
            .field("tls", &self.tls)
            .finish()
    }
}

impl AgentSecurity {
    /// The secret from `agent_secret` or `agent_secret_file`; `None` when neither is set.
    pub fn resolve(&self) -> Result<Option<String>, ConfigError> {
        match (&self.agent_secret, &self.agent_secret_file) {
            (Some(_), Some(_)) => Err(ConfigError::AgentSecret("set either agent_secret or agent_secret_file, not both".to_string())),
            (Some(secret), None) if secret.trim().is_empty() => Err(ConfigError::AgentSecret("agent_secret must not be empty".to_string())),
            (Some(secret), None) => Ok(Some(secret.trim().to_string())),
            (None, Some(path)) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| ConfigError::AgentSecret(format!("cannot read agent_secret_file {}: {e}", path.display())))?;
                match text.trim() {
                    "" => Err(ConfigError::AgentSecret(format!("agent_secret_file {} is empty", path.display()))),
                    secret => Ok(Some(secret.to_string())),
                }
            }
            (None, None) => Ok(None),
        }
    }
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
    #[error("security: {0}")]
    AgentSecret(String),
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
            agent_reconnect_attempts: None,
            agent_reconnect_backoff: None,
            security: AgentSecurity::default(),
            keep_work_dirs: false,
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
        self.security.resolve()?;
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

/// An optional [`Duration`] written as a number of seconds, as upstream's `agent_reconnect_backoff`.
mod seconds {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &Option<Duration>, serializer: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(value) => serializer.serialize_f64(value.as_secs_f64()),
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Duration>, D::Error> {
        let Some(secs) = Option::<f64>::deserialize(deserializer)? else { return Ok(None) };
        Duration::try_from_secs_f64(secs).map(Some).map_err(|_| serde::de::Error::custom("expected a non-negative number of seconds"))
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
        assert_eq!(config.agent_reconnect_backoff, Some(Duration::from_millis(250)));
        assert_eq!(config.agent_reconnect_attempts, Some(2));
        assert!(serde_json::from_str::<AgentConfig>(r#"{"agent_reconnect_backoff":-1}"#).is_err());
        // By default the agent never gives up on the master.
        assert_eq!((AgentConfig::default().agent_reconnect_attempts, AgentConfig::default().agent_reconnect_backoff), (None, None));
    }

    #[test]
    fn agent_secret_is_given_or_read_from_a_file_and_never_shown() {
        let config: AgentConfig = serde_json::from_str(r#"{"security":{"agent_secret":" s3cret "}}"#).unwrap();
        assert_eq!(config.security.resolve().unwrap().as_deref(), Some("s3cret"));
        assert!(!format!("{config:?}").contains("s3cret"));
        assert!(!serde_json::to_string(&config).unwrap().contains("s3cret"));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("secret");
        std::fs::write(&file, "from-file\n").unwrap();
        let config = AgentConfig {
            security: AgentSecurity { agent_secret: None, agent_secret_file: Some(file.clone()), ..Default::default() },
            ..Default::default()
        };
        assert_eq!(config.security.resolve().unwrap().as_deref(), Some("from-file"));
        let both = AgentSecurity { agent_secret: Some("a".into()), agent_secret_file: Some(file), ..Default::default() };
        assert!(both.resolve().unwrap_err().to_string().contains("not both"));
        let missing = AgentSecurity { agent_secret: None, agent_secret_file: Some(dir.path().join("none")), ..Default::default() };
        let err = AgentConfig { security: missing, ..Default::default() }.validate().unwrap_err().to_string();
        assert!(err.contains("cannot read agent_secret_file"), "{err}");
    }
}
