//! Launching an NTSC task (upstream's `ntsc.parse_config`, `ntsc.launch_command` and
//! `wait_ntsc_ready`): the config from file, overrides, volumes and entrypoint; the context
//! upload; waiting for the task to become ready; opening its page.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use resolute_api::experiments::LaunchWarning;
use resolute_api::files::File;
use resolute_api::tasks::GetTaskResponse;
use serde_json::{Map, Value, json};

use super::experiment_create::apply_overrides;
use crate::client::{Client, path_segment};
use crate::context_upload::{MAX_CONTEXT_SIZE, read_v1_context};
use crate::error::CliError;

/// How long `start` waits for a task to become ready, as upstream (30 minutes).
const READY_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Flags every `start`/`run` takes.
#[derive(Clone, Debug, Default, Args)]
pub struct LaunchArgs {
    /// config file (.yaml)
    #[arg(long)]
    pub config_file: Option<PathBuf>,
    /// A mount specification in the form of `<host path>:<container path>`
    #[arg(short, long)]
    pub volume: Vec<String>,
    /// A directory whose contents should be copied into the task container (the directory itself
    /// does not appear there; at most 96 MB in all)
    #[arg(short, long)]
    pub context: Option<PathBuf>,
    /// A file or directory to copy into the task container, under its own name (repeatable)
    #[arg(short, long)]
    pub include: Vec<PathBuf>,
    /// Additional configuration arguments, as `key=value` (dot notation for nested keys,
    /// comma-separated lists, JSON/YAML for complex values)
    #[arg(long)]
    pub config: Vec<String>,
    /// name of template to apply to the configuration
    #[arg(long)]
    pub template: Option<String>,
    /// run in the background and print the ID
    #[arg(short, long)]
    pub detach: bool,
}

impl LaunchArgs {
    /// `ntsc.parse_config`: file, then `--config` overrides, then `-v` bind mounts, then the
    /// command line's entrypoint unless the config already has one.
    pub fn build_config(&self, entrypoint: &[String]) -> Result<Value, CliError> {
        let mut config = match &self.config_file {
            Some(path) => read_config_file(path)?,
            None => Value::Object(Map::new()),
        };
        config = apply_overrides(config, &self.config)?;
        for volume in &self.volume {
            let Some((host, container)) = volume.split_once(':') else {
                return Err(CliError::msg(format!("Could not read volume option '{volume}'\n\nExpecting: <host path>:<container path>")));
            };
            if !config["bind_mounts"].is_array() {
                config["bind_mounts"] = json!([]);
            }
            if let Some(mounts) = config["bind_mounts"].as_array_mut() {
                mounts.push(json!({"host_path": host, "container_path": container}));
            }
        }
        let has_entrypoint = match config.get("entrypoint") {
            None | Some(Value::Null) => false,
            Some(Value::String(s)) => !s.is_empty(),
            Some(Value::Array(a)) => !a.is_empty(),
            Some(_) => true,
        };
        if !has_entrypoint && !entrypoint.is_empty() {
            config["entrypoint"] = json!(entrypoint);
        }
        Ok(config)
    }

    /// The `-c` directory and `-i` includes, with `.detignore` and the size limit.
    pub fn files(&self) -> Result<Vec<File>, CliError> {
        if let Some(dir) = &self.context
            && !dir.exists()
        {
            return Err(CliError::msg(format!("Path '{}' doesn't exist", dir.display())));
        }
        let mut stdout = std::io::stdout();
        read_v1_context(self.context.as_deref(), &self.include, MAX_CONTEXT_SIZE, &mut stdout).map_err(|e| CliError::msg(e.to_string()))
    }
}

/// A YAML mapping (an empty file is an empty config).
fn read_config_file(path: &std::path::Path) -> Result<Value, CliError> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| CliError::msg(format!("cannot read config file {shown}: {e}")))?;
    let value: Option<Value> = serde_norway::from_str(&text).map_err(|e| CliError::msg(format!("invalid config file {shown}: {e}")))?;
    match value {
        None | Some(Value::Null) => Ok(Value::Object(Map::new())),
        Some(Value::Object(map)) => Ok(Value::Object(map)),
        Some(_) => Err(CliError::msg(format!("invalid config file {shown}: expected a mapping of config keys"))),
    }
}

/// `cli.print_launch_warnings`, to stderr.
pub fn print_warnings(warnings: &[LaunchWarning]) {
    for w in warnings {
        if *w == LaunchWarning::CurrentSlotsExceeded {
            eprintln!(
                "Warning: The requested job requires more slots than currently available. You may need to increase cluster resources in order for the job to run."
            );
        }
    }
}

/// `api.wait_for_task_ready`: polls `GET /api/v1/tasks/{id}` every second until the first
/// allocation reports ready; a task that ends first is an error.
pub fn wait_ready(client: &Client, kind: &str, id: &str, poll: Duration) -> Result<(), CliError> {
    let deadline = Instant::now() + READY_TIMEOUT;
    let path = format!("api/v1/tasks/{}", path_segment(id));
    loop {
        let task = client.get::<GetTaskResponse>(&path)?.task;
        if task.end_time.is_some() {
            return Err(CliError::msg(format!("Waiting stopped: {kind} (id: {id}) has been terminated.")));
        }
        if task.allocations.first().and_then(|a| a.is_ready) == Some(true) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(CliError::msg(format!("Waiting stopped: {kind} (id: {id}) was not ready within 30 minutes.")));
        }
        std::thread::sleep(poll);
    }
}

/// The page of a proxied task: its `serviceAddress`, else `/proxy/<id>/`.
pub fn service_url(master: &str, service_address: &str, id: &str) -> String {
    let path = if service_address.is_empty() { format!("/proxy/{id}/") } else { service_address.to_owned() };
    format!("{}/{}", master.trim_end_matches('/'), path.trim_start_matches('/'))
}

/// `webbrowser.open`: best effort, silent when there is no browser.
pub fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    let _ = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_layers_like_upstream() {
        let args = LaunchArgs { config: vec!["resources.slots=2".into()], volume: vec!["/data:/mnt/data".into()], ..LaunchArgs::default() };
        let config = args.build_config(&["python3".into(), "-c".into(), "print(1)".into()]).unwrap();
        assert_eq!(
            config,
            json!({"resources": {"slots": 2}, "bind_mounts": [{"host_path": "/data", "container_path": "/mnt/data"}],
                   "entrypoint": ["python3", "-c", "print(1)"]})
        );
        let args = LaunchArgs { config: vec!["entrypoint=echo hi".into()], ..LaunchArgs::default() };
        assert_eq!(args.build_config(&["ls".into()]).unwrap()["entrypoint"], "echo hi");
        let args = LaunchArgs { volume: vec!["nocolon".into()], ..LaunchArgs::default() };
        assert!(args.build_config(&[]).unwrap_err().to_string().contains("Could not read volume option 'nocolon'"));
    }

    #[test]
    fn service_urls() {
        assert_eq!(service_url("http://m:8080", "", "abc"), "http://m:8080/proxy/abc/");
        assert_eq!(service_url("http://m:8080/", "/proxy/abc/", "abc"), "http://m:8080/proxy/abc/");
    }
}
