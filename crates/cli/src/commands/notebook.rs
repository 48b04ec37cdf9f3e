//! `det notebook`: start a Jupyter notebook, wait until it serves, and point at its proxied page
//! (upstream's `cli/notebook.py`).

use std::time::Duration;

use clap::Subcommand;
use resolute_api::commands::{GetNotebookResponse, LaunchNotebookRequest, LaunchNotebookResponse};
use resolute_api::tasks::GetTaskResponse;

use super::Globals;
use super::ntsc::{self, Kind, ListArgs};
use super::ntsc_launch::{LaunchArgs, open_browser, print_warnings, service_url, wait_ready};
use super::wire::connect;
use crate::client::path_segment;
use crate::error::CliError;
use crate::log_stream::{LogArgs, green};
use crate::{render, say};

#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum NotebookCommand {
    /// list notebooks
    #[command(visible_alias = "ls")]
    List(ListArgs),
    /// display notebook config
    Config {
        /// notebook ID
        notebook_id: String,
    },
    /// display notebook metadata
    Describe {
        /// notebook ID
        notebook_id: String,
        /// print as CSV
        #[arg(long)]
        csv: bool,
    },
    /// start a new notebook
    Start {
        #[command(flatten)]
        launch: LaunchArgs,
        /// don't open the notebook in a browser after startup
        #[arg(long)]
        no_browser: bool,
        /// print the merged config without launching
        #[arg(long)]
        preview: bool,
    },
    /// open an existing notebook
    Open {
        /// notebook ID
        notebook_id: String,
        /// print the address only
        #[arg(long)]
        no_browser: bool,
    },
    /// fetch notebook logs
    Logs {
        /// notebook ID
        #[arg(value_name = "NOTEBOOK_ID")]
        task_id: String,
        #[command(flatten)]
        logs: LogArgs,
    },
    /// kill a notebook
    Kill {
        /// notebook ID
        #[arg(required = true)]
        notebook_id: Vec<String>,
        /// ignore errors
        #[arg(short, long)]
        force: bool,
    },
    /// set notebook attributes
    Set {
        #[command(subcommand)]
        what: super::command::SetCommand,
    },
}

pub fn run(g: &Globals, cmd: Option<NotebookCommand>) -> Result<(), CliError> {
    let kind = Kind::Notebook;
    match cmd.unwrap_or(NotebookCommand::List(ListArgs::default())) {
        NotebookCommand::List(args) => ntsc::list(g, kind, &args),
        NotebookCommand::Config { notebook_id } => ntsc::config(g, kind, &notebook_id),
        NotebookCommand::Describe { notebook_id, csv } => ntsc::describe(g, kind, &notebook_id, csv),
        NotebookCommand::Start { launch, no_browser, preview } => start(g, &launch, no_browser, preview),
        NotebookCommand::Open { notebook_id, no_browser } => open(g, &notebook_id, no_browser),
        NotebookCommand::Logs { task_id, logs } => ntsc::logs(g, Some(kind), &task_id, false, &logs),
        NotebookCommand::Kill { notebook_id, force } => ntsc::kill(g, kind, &notebook_id, force),
        NotebookCommand::Set { what: super::command::SetCommand::Priority { id, priority } } => ntsc::set_priority(g, kind, &id, priority),
    }
}

/// `start_notebook`. With `-d` it still waits for the notebook to serve, then prints only its id,
/// so a script can use the notebook as soon as it has the id.
fn start(g: &Globals, launch: &LaunchArgs, no_browser: bool, preview: bool) -> Result<(), CliError> {
    let config = launch.build_config(&[])?;
    let client = connect(g)?;
    let files = launch.files()?;
    let req = LaunchNotebookRequest {
        config: Some(config),
        template_name: launch.template.clone(),
        files,
        preview: preview.then_some(true),
        ..Default::default()
    };
    let resp: LaunchNotebookResponse = client.post("api/v1/notebooks", &req)?;
    if preview {
        crate::output::emit_raw(&render::yaml(&resp.config));
        return Ok(());
    }
    let nb = resp.notebook;
    let id = nb.base.id.clone();
    if launch.detach {
        wait_ready(&client, "notebook", &id, Duration::from_secs(1))?;
        say!("{id}");
        return Ok(());
    }
    say!("{}", green(&format!("Launched notebook (id: {id}, name: {}).", nb.base.description)));
    print_warnings(&resp.warnings);
    wait_ready(&client, "notebook", &id, Duration::from_secs(1))?;
    say!("notebook (id: {id}) is ready.");
    let url = service_url(&g.master, &nb.service_address, &id);
    if !no_browser {
        open_browser(&url);
    }
    say!("{}", green(&format!("Jupyter Notebook is running at: {url}")));
    Ok(())
}

/// `open_notebook`: refuses an ended notebook, else opens (and prints) its page.
fn open(g: &Globals, id: &str, no_browser: bool) -> Result<(), CliError> {
    let client = connect(g)?;
    let id = ntsc::expand_id(&client, Some(Kind::Notebook), id)?;
    let task = client.get::<GetTaskResponse>(&format!("api/v1/tasks/{}", path_segment(&id)))?.task;
    if task.end_time.is_some() {
        return Err(CliError::msg("Notebook has ended"));
    }
    let nb = client.get::<GetNotebookResponse>(&format!("api/v1/notebooks/{}", path_segment(&id)))?.notebook;
    let url = service_url(&g.master, &nb.service_address, &id);
    if !no_browser {
        open_browser(&url);
    }
    say!("{url}");
    Ok(())
}
