//! `det master info` (client) and `det master run` (the master itself, in the foreground).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use resolute_api::master::GetMasterResponse;
use resolute_master::config::MasterConfig;

use super::Globals;
use crate::error::CliError;
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

/// Client commands only; `run` is dispatched separately because it needs no master URL.
pub fn info(g: &Globals) -> Result<(), CliError> {
    let s = session::login_with_cache(&g.master, g.user.as_deref())?;
    let resp: GetMasterResponse = s.client.get("api/v1/master")?;
    if g.json {
        println!("{}", render::json(&resp));
    } else {
        // Upstream `print()`s a YAML document that already ends in a newline.
        println!("{}", render::yaml(&resp));
    }
    Ok(())
}

/// Serves the master API. The tokio runtime exists only here: client commands stay blocking.
pub fn run(args: RunArgs) -> Result<(), CliError> {
    let config = MasterConfig::load(args.config_file.as_deref(), &args.settings.0)
        .map_err(|e| CliError::msg(format!("invalid master configuration: {e}")))?;
    init_tracing(&config.log.level);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::msg(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(resolute_master::run(config)).map_err(|e| CliError::msg(format!("master stopped with an error: {e}")))
}

/// Logs to stderr, filtered by `RUST_LOG`, else the configured `log.level`, else `info`.
fn init_tracing(level: &str) {
    use tracing_subscriber::EnvFilter;
    let level = if level.trim().is_empty() { "info" } else { level };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
}
