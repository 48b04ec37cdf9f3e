//! `det agent run`: the agent daemon in the foreground until SIGINT/SIGTERM. Settings come from
//! `--config-file` (upstream's `agent.yaml` keys), overridden by flags, which also read upstream's
//! `DET_<FLAG>` environment variables.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::Args;
use resolute_agent::{AgentConfig, SlotType};

use crate::error::CliError;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// agent configuration file (YAML)
    #[arg(long, value_name = "FILE", env = "DET_CONFIG_FILE")]
    pub config_file: Option<PathBuf>,
    /// the master's host name or address
    #[arg(long, env = "DET_MASTER_HOST")]
    pub master_host: Option<String>,
    /// the master's port
    #[arg(long, env = "DET_MASTER_PORT")]
    pub master_port: Option<u16>,
    /// this agent's id (default: the host name)
    #[arg(long, env = "DET_AGENT_ID")]
    pub agent_id: Option<String>,
    /// the resource pool to join
    #[arg(long, env = "DET_RESOURCE_POOL")]
    pub resource_pool: Option<String>,
    /// which devices to offer as slots
    #[arg(long, env = "DET_SLOT_TYPE", value_parser = ["auto", "cuda", "gpu", "cpu", "none"])]
    pub slot_type: Option<String>,
    /// offer this many fake CPU slots instead of detecting devices
    #[arg(long, env = "DET_ARTIFICIAL_SLOTS")]
    pub artificial_slots: Option<u32>,
    /// GPU indexes or UUIDs to offer, comma separated
    #[arg(long, env = "DET_VISIBLE_GPUS")]
    pub visible_gpus: Option<String>,
    /// the Python interpreter tasks run with (a path or a command on PATH)
    #[arg(long, env = "DET_PYTHON")]
    pub python: Option<PathBuf>,
    /// where task work dirs go
    #[arg(long, env = "DET_WORK_ROOT")]
    pub work_root: Option<PathBuf>,
    /// give up after this many failed connection attempts (default and 0: never give up)
    #[arg(long, env = "DET_AGENT_RECONNECT_ATTEMPTS")]
    pub agent_reconnect_attempts: Option<u32>,
    /// fixed seconds between connection attempts (default: 1 s doubling to 30 s, with jitter)
    #[arg(long, env = "DET_AGENT_RECONNECT_BACKOFF")]
    pub agent_reconnect_backoff: Option<f64>,
    /// the cluster's agent join secret (the master's security.agent_secret)
    #[arg(long, env = "DET_SECURITY_AGENT_SECRET", hide_env_values = true)]
    pub security_agent_secret: Option<String>,
    /// a file whose trimmed contents are the agent join secret
    #[arg(long, value_name = "FILE", env = "DET_SECURITY_AGENT_SECRET_FILE")]
    pub security_agent_secret_file: Option<PathBuf>,
    /// keep task work dirs after tasks end (for debugging)
    #[arg(long, env = "DET_KEEP_WORK_DIRS")]
    pub keep_work_dirs: bool,
    /// connect to the master over TLS (wss://); tasks reach it over https://
    #[arg(long, env = "DET_SECURITY_TLS_ENABLED")]
    pub security_tls_enabled: bool,
    /// accept any certificate from the master (not recommended)
    #[arg(long, env = "DET_SECURITY_TLS_SKIP_VERIFY")]
    pub security_tls_skip_verify: bool,
    /// PEM file of the master's certificate (or its CA) to trust
    #[arg(long, value_name = "FILE", env = "DET_SECURITY_TLS_MASTER_CERT")]
    pub security_tls_master_cert: Option<PathBuf>,
    /// the name the master's certificate carries, when not master_host
    #[arg(long, env = "DET_SECURITY_TLS_MASTER_CERT_NAME")]
    pub security_tls_master_cert_name: Option<String>,
}

/// The configuration: the file, then the flags; validated.
pub fn load_config(args: &RunArgs) -> Result<AgentConfig, CliError> {
    let mut config = match &args.config_file {
        Some(path) => read_config_file(path)?,
        None => AgentConfig::default(),
    };
    let invalid = |what: String| CliError::msg(format!("invalid agent configuration: {what}"));
    if let Some(host) = &args.master_host {
        config.master_host = host.clone();
    }
    if let Some(port) = args.master_port {
        config.master_port = port;
    }
    if let Some(id) = &args.agent_id {
        config.agent_id = Some(id.clone());
    }
    if let Some(pool) = &args.resource_pool {
        config.resource_pool = pool.clone();
    }
    if let Some(slot_type) = &args.slot_type {
        config.slot_type = serde_json::from_value::<SlotType>(serde_json::Value::String(slot_type.clone()))
            .map_err(|_| invalid(format!("unknown slot type {slot_type:?}")))?;
    }
    if let Some(slots) = args.artificial_slots {
        config.artificial_slots = slots;
    }
    if let Some(gpus) = &args.visible_gpus {
        config.visible_gpus = Some(gpus.clone());
    }
    if let Some(python) = &args.python {
        config.python = python.clone();
    }
    if let Some(root) = &args.work_root {
        config.work_root = Some(root.clone());
    }
    if let Some(attempts) = args.agent_reconnect_attempts {
        config.agent_reconnect_attempts = Some(attempts);
    }
    if let Some(backoff) = args.agent_reconnect_backoff {
        config.agent_reconnect_backoff = Some(
            std::time::Duration::try_from_secs_f64(backoff)
                .map_err(|_| invalid("--agent-reconnect-backoff must be a non-negative number of seconds".to_string()))?,
        );
    }
    // A flag (or its variable) replaces whichever form of the secret the file gave.
    if let Some(secret) = &args.security_agent_secret {
        config.security.agent_secret = Some(secret.clone());
        config.security.agent_secret_file = None;
    }
    if let Some(file) = &args.security_agent_secret_file {
        config.security.agent_secret_file = Some(file.clone());
        config.security.agent_secret = None;
    }
    config.keep_work_dirs |= args.keep_work_dirs;
    let tls = &mut config.security.tls;
    tls.enabled |= args.security_tls_enabled;
    tls.skip_verify |= args.security_tls_skip_verify;
    if let Some(cert) = &args.security_tls_master_cert {
        tls.master_cert = Some(cert.clone());
    }
    if let Some(name) = &args.security_tls_master_cert_name {
        tls.master_cert_name = Some(name.clone());
    }
    config.validate().map_err(|e| invalid(e.to_string()))?;
    Ok(config)
}

fn read_config_file(path: &Path) -> Result<AgentConfig, CliError> {
    let text = std::fs::read_to_string(path).map_err(|e| CliError::msg(format!("cannot read the agent config {}: {e}", path.display())))?;
    if text.trim().is_empty() {
        return Ok(AgentConfig::default());
    }
    serde_norway::from_str(&text).map_err(|e| {
        let reason = e.to_string().replace('\n', " ");
        CliError::msg(format!("invalid agent configuration in {}: {reason}", path.display()))
    })
}

/// Runs the agent until SIGINT/SIGTERM, then terminates its tasks gracefully.
pub fn run(args: RunArgs) -> Result<(), CliError> {
    let config = load_config(&args)?;
    init_tracing();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::msg(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(resolute_agent::daemon::run(config, stop_signal())).map_err(|e| CliError::msg(format!("the agent stopped: {e}")))
}

/// Completes on SIGINT or SIGTERM.
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let terminate = async {
        match signal(SignalKind::terminate()) {
            Ok(mut stream) => {
                stream.recv().await;
            }
            Err(e) => {
                tracing::warn!("cannot watch for SIGTERM ({e}); stop the agent with SIGINT");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT received; stopping"),
        _ = terminate => tracing::info!("SIGTERM received; stopping"),
    }
}

/// Logs to stderr, filtered by `RUST_LOG`, else `info`.
fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // No colour codes in `det deploy local`'s agent logs.
    let ansi = std::io::stderr().is_terminal();
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi).try_init();
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: RunArgs,
    }

    fn parse(argv: &[&str]) -> RunArgs {
        Cli::try_parse_from(std::iter::once("run").chain(argv.iter().copied())).unwrap().args
    }

    #[test]
    fn flags_override_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("agent.yaml");
        std::fs::write(&file, "master_host: m.example\nmaster_port: 9000\nslot_type: cuda\nagent_reconnect_backoff: 0.5\n").unwrap();
        let config =
            load_config(&parse(&["--config-file", file.to_str().unwrap(), "--master-port", "9100", "--slot-type", "cpu"])).unwrap();
        assert_eq!((config.master_host.as_str(), config.master_port, config.slot_type), ("m.example", 9100, SlotType::Cpu));
        assert_eq!(config.agent_reconnect_backoff, Some(std::time::Duration::from_millis(500)));
        assert_eq!(config.agent_reconnect_attempts, None, "unbounded unless set");
    }

    #[test]
    fn the_join_secret_comes_from_the_file_or_a_flag() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("agent.yaml");
        std::fs::write(&file, "security:\n  agent_secret: from-yaml\n").unwrap();
        let config = load_config(&parse(&["--config-file", file.to_str().unwrap()])).unwrap();
        assert_eq!(config.security.resolve().unwrap().as_deref(), Some("from-yaml"));
        let config = load_config(&parse(&["--config-file", file.to_str().unwrap(), "--security-agent-secret", "from-flag"])).unwrap();
        assert_eq!(config.security.resolve().unwrap().as_deref(), Some("from-flag"));
        let secret_file = dir.path().join("secret");
        std::fs::write(&secret_file, "from-secret-file\n").unwrap();
        let config =
            load_config(&parse(&["--config-file", file.to_str().unwrap(), "--security-agent-secret-file", secret_file.to_str().unwrap()]))
                .unwrap();
        assert_eq!(config.security.resolve().unwrap().as_deref(), Some("from-secret-file"));
        let err = load_config(&parse(&["--security-agent-secret-file", "/no/such/secret"])).unwrap_err().to_string();
        assert!(err.contains("cannot read agent_secret_file /no/such/secret"), "{err}");
    }

    #[test]
    fn bad_configs_are_one_line_errors() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("agent.yaml");
        std::fs::write(&file, "slot_type: tpu\n").unwrap();
        let err = load_config(&parse(&["--config-file", file.to_str().unwrap()])).unwrap_err().to_string();
        assert!(err.contains("invalid agent configuration in") && err.contains("slot_type"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        let err = load_config(&parse(&["--agent-id", "a/b"])).unwrap_err().to_string();
        assert!(err.contains("agent_id \"a/b\""), "{err}");
        let missing = load_config(&parse(&["--config-file", "/no/such/agent.yaml"])).unwrap_err().to_string();
        assert!(missing.contains("cannot read the agent config /no/such/agent.yaml"), "{missing}");
    }
}
