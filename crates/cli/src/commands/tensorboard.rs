//! `det tensorboard`: start a TensorBoard over experiments' or trials' metrics and point at its
//! proxied page (upstream's `cli/tensorboard.py`).

use std::time::Duration;

use clap::Subcommand;
use resolute_api::commands::{GetTensorboardResponse, LaunchTensorboardRequest, LaunchTensorboardResponse};
use resolute_api::tasks::GetTaskResponse;

use super::Globals;
use super::ntsc::{self, Kind, ListArgs};
use super::ntsc_launch::{LaunchArgs, open_browser, print_warnings, service_url, wait_ready};
use super::wire::connect;
use crate::client::path_segment;
use crate::error::CliError;
use crate::log_stream::{LogArgs, green};
use crate::say;

#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum TensorboardCommand {
    /// list TensorBoard instances
    #[command(visible_alias = "ls")]
    List(ListArgs),
    /// start new TensorBoard instance
    Start {
        /// experiment IDs to load into TensorBoard
        #[arg(required_unless_present = "trial_ids")]
        experiment_ids: Vec<i32>,
        /// trial IDs to load into TensorBoard
        #[arg(short = 't', long = "trial-ids", num_args = 1..)]
        trial_ids: Vec<i32>,
        #[command(flatten)]
        launch: LaunchArgs,
        /// don't open TensorBoard in a browser after startup
        #[arg(long)]
        no_browser: bool,
    },
    /// display TensorBoard config
    Config {
        /// TensorBoard ID
        tensorboard_id: String,
    },
    /// display TensorBoard metadata
    Describe {
        /// TensorBoard ID
        tensorboard_id: String,
        /// print as CSV
        #[arg(long)]
        csv: bool,
    },
    /// open existing TensorBoard instance
    Open {
        /// TensorBoard ID
        tensorboard_id: String,
        /// print the address only
        #[arg(long)]
        no_browser: bool,
    },
    /// fetch TensorBoard instance logs
    Logs {
        /// TensorBoard ID
        #[arg(value_name = "TENSORBOARD_ID")]
        task_id: String,
        #[command(flatten)]
        logs: LogArgs,
    },
    /// kill TensorBoard instance
    Kill {
        /// TensorBoard ID
        #[arg(required = true)]
        tensorboard_id: Vec<String>,
        /// ignore errors
        #[arg(short, long)]
        force: bool,
    },
    /// set TensorBoard attributes
    Set {
        #[command(subcommand)]
        what: super::command::SetCommand,
    },
}

pub fn run(g: &Globals, cmd: Option<TensorboardCommand>) -> Result<(), CliError> {
    let kind = Kind::Tensorboard;
    match cmd.unwrap_or(TensorboardCommand::List(ListArgs::default())) {
        TensorboardCommand::List(args) => ntsc::list(g, kind, &args),
        TensorboardCommand::Start { experiment_ids, trial_ids, launch, no_browser } => {
            start(g, experiment_ids, trial_ids, &launch, no_browser)
        }
        TensorboardCommand::Config { tensorboard_id } => ntsc::config(g, kind, &tensorboard_id),
        TensorboardCommand::Describe { tensorboard_id, csv } => ntsc::describe(g, kind, &tensorboard_id, csv),
        TensorboardCommand::Open { tensorboard_id, no_browser } => open(g, &tensorboard_id, no_browser),
        TensorboardCommand::Logs { task_id, logs } => ntsc::logs(g, Some(kind), &task_id, false, &logs),
        TensorboardCommand::Kill { tensorboard_id, force } => ntsc::kill(g, kind, &tensorboard_id, force),
        TensorboardCommand::Set { what: super::command::SetCommand::Priority { id, priority } } => {
            ntsc::set_priority(g, kind, &id, priority)
        }
    }
}

/// `start_tensorboard`; `-d` waits for readiness as `det notebook start -d` does.
fn start(g: &Globals, experiment_ids: Vec<i32>, trial_ids: Vec<i32>, launch: &LaunchArgs, no_browser: bool) -> Result<(), CliError> {
    let config = launch.build_config(&[])?;
    let client = connect(g)?;
    let files = launch.files()?;
    let req = LaunchTensorboardRequest {
        experiment_ids,
        trial_ids,
        config: Some(config),
        template_name: launch.template.clone(),
        files,
        ..Default::default()
    };
    let resp: LaunchTensorboardResponse = client.post("api/v1/tensorboards", &req)?;
    let tb = resp.tensorboard;
    let id = tb.base.id.clone();
    if launch.detach {
        wait_ready(&client, "tensorboard", &id, Duration::from_secs(1))?;
        say!("{id}");
        return Ok(());
    }
    say!("{}", green(&format!("Launched tensorboard (id: {id}, name: {}).", tb.base.description)));
    print_warnings(&resp.warnings);
    wait_ready(&client, "tensorboard", &id, Duration::from_secs(1))?;
    say!("tensorboard (id: {id}) is ready.");
    let url = service_url(&g.master, &tb.service_address, &id);
    if !no_browser {
        open_browser(&url);
    }
    say!("{}", green(&format!("Tensorboard is running at: {url}")));
    Ok(())
}

/// `open_tensorboard`: refuses an ended TensorBoard, else opens (and prints) its page.
fn open(g: &Globals, id: &str, no_browser: bool) -> Result<(), CliError> {
    let client = connect(g)?;
    let id = ntsc::expand_id(&client, Some(Kind::Tensorboard), id)?;
    let task = client.get::<GetTaskResponse>(&format!("api/v1/tasks/{}", path_segment(&id)))?.task;
    if task.end_time.is_some() {
        return Err(CliError::msg("Tensorboard has ended"));
    }
    let tb = client.get::<GetTensorboardResponse>(&format!("api/v1/tensorboards/{}", path_segment(&id)))?.tensorboard;
    let url = service_url(&g.master, &tb.service_address, &id);
    if !no_browser {
        open_browser(&url);
    }
    say!("{url}");
    Ok(())
}
