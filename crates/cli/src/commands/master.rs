//! `det master info` (client) and `det master run` (the master itself, in the foreground).

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use resolute_api::master::GetMasterResponse;
use resolute_master::config::MasterConfig;
use serde_json::Value;

use super::Globals;
use crate::error::CliError;
use crate::say;
use crate::setting_flags::SettingOverrides;
use crate::{render, session};

#[derive(Debug, Subcommand)]
pub enum MasterCommand {
    /// fetch master info
    Info,
    /// run the master in the foreground until SIGINT/SIGTERM
    Run(RunArgs),
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// master configuration file (YAML)
    #[arg(long, value_name = "FILE")]
    pub config_file: Option<PathBuf>,
    #[command(flatten)]
    pub settings: SettingOverrides,
}

/// Optional fields of upstream's `v1GetMasterResponse` that its `to_json()` prints as `null` when
/// unset; our wire type leaves them out, so add them back for byte-identical output.
const UPSTREAM_OPTIONAL_FIELDS: [&str; 4] = ["branding", "clusterMessage", "externalLoginUri", "externalLogoutUri"];

/// Client commands only; `run` is dispatched separately because it needs no master URL.
pub fn info(g: &Globals) -> Result<(), CliError> {
    let s = session::login_with_cache(&g.master, g.user.as_deref())?;
    let raw: Value = s.client.get("api/v1/master")?;
    let typed: GetMasterResponse = serde_json::from_value(raw.clone())
        .map_err(|e| CliError::msg(format!("unexpected response from the master for GET /api/v1/master: {e}")))?;
    let mut out = serde_json::to_value(&typed).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut out {
        for key in UPSTREAM_OPTIONAL_FIELDS {
            map.insert(key.to_owned(), raw.get(key).cloned().unwrap_or(Value::Null));
        }
    }
    if g.json {
        say!("{}", render::json(&out));
    } else {
        // Upstream `print()`s a YAML document that already ends in a newline.
        say!("{}", render::yaml(&out));
    }
    Ok(())
}

/// Serves the master API. The tokio runtime exists only here: client commands stay blocking.
pub fn run(args: RunArgs) -> Result<(), CliError> {
    // First, before the heap grows (see `memory.rs`).
    crate::memory::disable_transparent_huge_pages();
    let config = MasterConfig::load(args.config_file.as_deref(), &args.settings.0)
        .map_err(|e| CliError::msg(format!("invalid master configuration: {e}")))?;
    init_tracing(&config.log.level);
    // The store's SQLite threads give back what they freed too when they go idle.
    resolute_store::set_thread_idle_hook(|| {
        crate::memory::collect_when_idle();
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // An idle worker gives back what it freed (see `memory.rs`).
        .on_thread_park(|| {
            crate::memory::collect_when_idle();
        })
        .build()
        .map_err(|e| CliError::msg(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(resolute_master::run(config)).map_err(|e| CliError::msg(format!("master stopped with an error: {e}")))
}

/// Logs to stderr, filtered by `RUST_LOG`, else the configured `log.level`, else `info`.
fn init_tracing(level: &str) {
    use tracing_subscriber::EnvFilter;
    let level = if level.trim().is_empty() { "info" } else { level };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level));
    // No colour codes in `det deploy local`'s master.log.
    let ansi = std::io::stderr().is_terminal();
    // The same lines also go to the ring `det master logs` reads.
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(ansi))
        .with(resolute_master::master_logs::layer())
        .try_init();
}
