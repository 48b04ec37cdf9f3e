//! Generic tasks (`det task create|config|kill|pause|unpause`, upstream's `cli/task.py`): a config
//! and a context directory run as a task of their own.

use std::path::PathBuf;

use clap::Args;
use reqwest::Method;
use resolute_api::generic_tasks::{
    CreateGenericTaskRequest, CreateGenericTaskResponse, EmptyResponse, GetGenericTaskConfigResponse, KillGenericTaskRequest,
};
use serde_json::Value;

use super::Globals;
use super::ntsc;
use super::ntsc_launch::{LaunchArgs, print_warnings};
use super::wire::connect;
use crate::client::path_segment;
use crate::error::CliError;
use crate::log_stream::LogArgs;
use crate::{render, say};

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// task config file (.yaml)
    pub config_file: PathBuf,
    /// the context directory (same as -c)
    pub context_dir: Option<PathBuf>,
    /// A directory whose contents should be copied into the task container
    #[arg(short, long, conflicts_with = "context_dir")]
    pub context: Option<PathBuf>,
    /// A file or directory to copy into the task container, under its own name (repeatable)
    #[arg(short, long)]
    pub include: Vec<PathBuf>,
    /// place this task inside this project
    #[arg(long = "project_id", visible_alias = "project-id")]
    pub project_id: Option<i32>,
    /// Additional configuration arguments, as `key=value`
    #[arg(long)]
    pub config: Vec<String>,
    /// follow the logs of the task that is created
    #[arg(short, long)]
    pub follow: bool,
    /// print only the task ID, without following its logs
    #[arg(short, long, conflicts_with = "follow")]
    pub detach: bool,
    /// id of parent task to fork from
    #[arg(long)]
    pub fork: Option<String>,
    /// task id of parent task
    #[arg(short, long)]
    pub parent: Option<String>,
    /// inherits context directory from parent task (parent flag required)
    #[arg(long = "inherit_context", visible_alias = "inherit-context")]
    pub inherit_context: bool,
    /// make task unpausable
    #[arg(long = "no_pause", visible_alias = "no-pause")]
    pub no_pause: bool,
}

/// `task.create`: the config re-dumped as YAML, the context file by file.
pub fn create(g: &Globals, args: &CreateArgs) -> Result<(), CliError> {
    let launch = LaunchArgs {
        config_file: Some(args.config_file.clone()),
        context: args.context.clone().or_else(|| args.context_dir.clone()),
        include: args.include.clone(),
        config: args.config.clone(),
        ..LaunchArgs::default()
    };
    let config = launch.build_config(&[])?;
    let client = connect(g)?;
    let files = launch.files()?;
    let req = CreateGenericTaskRequest {
        config: render::yaml(&config),
        context_directory: files,
        project_id: args.project_id,
        forked_from: args.fork.clone(),
        parent_id: args.parent.clone(),
        inherit_context: Some(args.inherit_context),
        no_pause: Some(args.no_pause),
    };
    let resp: CreateGenericTaskResponse = client.post("api/v1/generic-tasks", &req)?;
    if args.detach {
        say!("{}", resp.task_id);
        return Ok(());
    }
    say!("Created task {}", resp.task_id);
    print_warnings(&resp.warnings);
    if args.follow {
        ntsc::follow_task_logs(&client, &resp.task_id, &LogArgs::follow(), false)?;
    }
    Ok(())
}

/// `task.config`: the stored config (JSON text) as YAML, or as JSON with `--json`.
pub fn config(g: &Globals, task_id: &str, json: bool) -> Result<(), CliError> {
    let client = connect(g)?;
    let resp: GetGenericTaskConfigResponse = client.get(&format!("api/v1/tasks/{}/config", path_segment(task_id)))?;
    let config: Value = serde_json::from_str(&resp.config).unwrap_or(Value::String(resp.config.clone()));
    if json || g.json {
        say!("{}", render::json(&config));
    } else {
        say!("{}", render::yaml(&config));
    }
    Ok(())
}

/// `task.kill`: `--root` kills the whole tree from its root task.
pub fn kill(g: &Globals, task_id: &str, root: bool) -> Result<(), CliError> {
    let client = connect(g)?;
    let req = KillGenericTaskRequest { task_id: task_id.to_owned(), kill_from_root: Some(root) };
    client.post::<_, EmptyResponse>(&format!("api/v1/tasks/{}/kill", path_segment(task_id)), &req)?;
    // Upstream's spelling, kept for scripts that match on it.
    say!("Sucessfully killed task: {task_id}");
    Ok(())
}

/// `task.pause` / `task.unpause`.
pub fn pause(g: &Globals, task_id: &str, pause: bool) -> Result<(), CliError> {
    let client = connect(g)?;
    let action = if pause { "pause" } else { "unpause" };
    // No body, as the bindings' `post_PauseGenericTask` sends it: the path names the task.
    client.send::<(), EmptyResponse>(Method::POST, &format!("api/v1/tasks/{}/{action}", path_segment(task_id)), None)?;
    say!("{} task: {task_id}", if pause { "Paused" } else { "Unpaused" });
    Ok(())
}
