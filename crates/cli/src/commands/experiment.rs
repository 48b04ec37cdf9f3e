//! `det experiment ...`: the command tree, lifecycle actions, labels, model definition download
//! and `wait`. Listings live in `experiment_views`, creation in `experiment_create`.

use std::path::PathBuf;
use std::time::Duration;

use base64::Engine as _;
use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::{Value, json};

use super::Globals;
use super::experiment_create::{self, CreateArgs};
use super::experiment_views;
use super::wire::{connect, text, yes_or_no};
use crate::client::Client;
use crate::error::CliError;
use crate::say;

#[derive(Debug, Subcommand)]
pub enum ExperimentCommand {
    /// list experiments
    #[command(visible_alias = "ls")]
    List(experiment_views::ListArgs),
    /// describe experiment
    Describe {
        /// comma-separated list of experiment IDs to describe
        experiment_ids: String,
        /// print as CSV
        #[arg(long, conflicts_with = "json")]
        csv: bool,
        /// print as JSON
        #[arg(long)]
        json: bool,
    },
    /// download model definition
    DownloadModelDef {
        /// experiment ID
        experiment_id: i64,
        /// output directory
        #[arg(long, default_value = ".")]
        output_dir: PathBuf,
    },
    /// list trials of experiment
    #[command(visible_alias = "lt")]
    ListTrials {
        /// experiment ID
        experiment_id: i64,
        #[command(flatten)]
        page: Pagination,
        /// print as CSV
        #[arg(long)]
        csv: bool,
    },
    /// list checkpoints of experiment
    #[command(visible_alias = "lc")]
    ListCheckpoints {
        /// experiment ID
        experiment_id: i64,
        /// Return the best N checkpoints for this experiment. If this flag is used, only
        /// checkpoints with an associated validation metric will be considered.
        #[arg(long, value_name = "N")]
        best: Option<u32>,
        /// print as CSV
        #[arg(long)]
        csv: bool,
    },
    /// create experiment
    Create(CreateArgs),
    /// activate experiment, i.e., unpause a paused experiment
    #[command(visible_alias = "unpause")]
    Activate {
        /// experiment ID to activate
        experiment_id: i64,
    },
    /// cancel experiment
    Cancel {
        /// experiment ID to cancel
        experiment_id: i64,
    },
    /// pause experiment
    Pause {
        /// experiment ID to pause
        experiment_id: i64,
    },
    /// archive experiment
    Archive {
        /// experiment ID to archive
        experiment_id: i64,
    },
    /// unarchive experiment
    Unarchive {
        /// experiment ID to unarchive
        experiment_id: i64,
    },
    /// delete experiment
    Delete {
        /// delete experiment
        experiment_id: i64,
        /// automatically answer yes to prompts
        #[arg(long)]
        yes: bool,
    },
    /// kill experiment
    Kill {
        /// experiment ID
        experiment_id: i64,
    },
    /// wait for experiment to reach terminal state
    Wait {
        /// experiment ID
        experiment_id: i64,
        /// the interval (in seconds) to poll for updated state
        #[arg(long, default_value_t = 5)]
        polling_interval: u64,
    },
    /// manage experiment labels
    Label {
        #[command(subcommand)]
        command: LabelCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum LabelCommand {
    /// add label
    Add {
        /// experiment ID
        experiment_id: i64,
        /// label
        label: String,
    },
    /// remove label
    Remove {
        /// experiment ID
        experiment_id: i64,
        /// label
        label: String,
    },
}

/// Upstream's `default_pagination_args`.
#[derive(Clone, Debug, Args)]
pub struct Pagination {
    /// Maximum items per page of results
    #[arg(long, default_value_t = 200)]
    pub limit: i64,
    /// Number of items to skip before starting page of results
    #[arg(long, default_value_t = 0)]
    pub offset: i64,
    /// when set to "all", fetch all available data; when "1", fetch a single page
    #[arg(long, default_value = "all", value_parser = ["1", "all"])]
    pub pages: String,
}

impl Pagination {
    pub fn single(&self) -> bool {
        self.pages == "1"
    }
}

/// `det experiment` alone lists experiments, as upstream's `is_default` subcommand does.
pub fn run(g: &Globals, cmd: Option<ExperimentCommand>) -> Result<(), CliError> {
    use ExperimentCommand::*;
    let cmd = match cmd {
        Some(c) => c,
        None => List(experiment_views::ListArgs::default()),
    };
    match cmd {
        List(args) => experiment_views::list(g, &args),
        Describe { experiment_ids, csv, json } => experiment_views::describe(g, &experiment_ids, csv, json || g.json),
        DownloadModelDef { experiment_id, output_dir } => download_model_def(g, experiment_id, &output_dir),
        ListTrials { experiment_id, page, csv } => experiment_views::list_trials(g, experiment_id, &page, csv),
        ListCheckpoints { experiment_id, best, csv } => experiment_views::list_checkpoints(g, experiment_id, best, csv),
        Create(args) => experiment_create::create(g, &args),
        Activate { experiment_id } => action(g, experiment_id, "activate", "Activated"),
        Cancel { experiment_id } => action(g, experiment_id, "cancel", "Canceled"),
        Pause { experiment_id } => action(g, experiment_id, "pause", "Paused"),
        Archive { experiment_id } => action(g, experiment_id, "archive", "Archived"),
        Unarchive { experiment_id } => action(g, experiment_id, "unarchive", "Unarchived"),
        Kill { experiment_id } => action(g, experiment_id, "kill", "Killed"),
        Delete { experiment_id, yes } => delete(g, experiment_id, yes),
        Wait { experiment_id, polling_interval } => {
            let client = connect(g)?;
            let state = wait(&client, experiment_id, Duration::from_secs(polling_interval))?;
            if state != "STATE_COMPLETED" {
                return Err(CliError::msg(format!("experiment {experiment_id} ended in state {}", state.trim_start_matches("STATE_"))));
            }
            Ok(())
        }
        Label { command: LabelCommand::Add { experiment_id, label } } => add_label(g, experiment_id, &label),
        Label { command: LabelCommand::Remove { experiment_id, label } } => remove_label(g, experiment_id, &label),
    }
}

/// `POST /api/v1/experiments/{id}/{verb}`, then upstream's one-line report.
fn action(g: &Globals, id: i64, verb: &str, done: &str) -> Result<(), CliError> {
    connect(g)?.send::<(), Value>(Method::POST, &format!("api/v1/experiments/{id}/{verb}"), None)?;
    say!("{done} experiment {id}");
    Ok(())
}

fn delete(g: &Globals, id: i64, yes: bool) -> Result<(), CliError> {
    let question = "Deleting an experiment will result in the unrecoverable \n\
                    deletion of all associated logs, checkpoints, and other \n\
                    metadata associated with the experiment. For a recoverable \n\
                    alternative, see the 'det archive' command. Do you still \n\
                    wish to proceed?";
    if yes || yes_or_no(question) {
        connect(g)?.send::<(), Value>(Method::DELETE, &format!("api/v1/experiments/{id}"), None)?;
        say!("Deletion of experiment {id} is in progress");
    } else {
        say!("Aborting experiment deletion.");
    }
    Ok(())
}

pub fn get_experiment(client: &Client, id: i64) -> Result<Value, CliError> {
    let resp: Value = client.get(&format!("api/v1/experiments/{id}"))?;
    Ok(resp.get("experiment").cloned().unwrap_or(Value::Null))
}

/// As upstream: the experiment's editable fields are sent back with the new labels.
fn patch_labels(client: &Client, exp: &Value, labels: Vec<String>) -> Result<(), CliError> {
    let id = exp.get("id").cloned().unwrap_or(Value::Null);
    let body = json!({
        "id": id, "name": text(exp, "name"), "description": text(exp, "description"),
        "notes": text(exp, "notes"), "labels": labels,
    });
    client.patch::<_, Value>(&format!("api/v1/experiments/{id}"), &body)?;
    Ok(())
}

fn labels_of(exp: &Value) -> Vec<String> {
    exp.get("labels").and_then(Value::as_array).map(|l| l.iter().filter_map(Value::as_str).map(str::to_owned).collect()).unwrap_or_default()
}

fn add_label(g: &Globals, id: i64, label: &str) -> Result<(), CliError> {
    let client = connect(g)?;
    let exp = get_experiment(&client, id)?;
    let mut labels = labels_of(&exp);
    if !labels.iter().any(|l| l == label) {
        labels.push(label.to_owned());
        patch_labels(&client, &exp, labels)?;
    }
    say!("Added label '{label}' to experiment {id}");
    Ok(())
}

fn remove_label(g: &Globals, id: i64, label: &str) -> Result<(), CliError> {
    let client = connect(g)?;
    let exp = get_experiment(&client, id)?;
    let labels = labels_of(&exp);
    if labels.iter().any(|l| l == label) {
        patch_labels(&client, &exp, labels.into_iter().filter(|l| l != label).collect())?;
    }
    say!("Removed label '{label}' from experiment {id}");
    Ok(())
}

fn download_model_def(g: &Globals, id: i64, output_dir: &std::path::Path) -> Result<(), CliError> {
    let resp: Value = connect(g)?.get(&format!("api/v1/experiments/{id}/model_def"))?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text(&resp, "b64Tgz"))
        .map_err(|e| CliError::msg(format!("the master sent an invalid model definition: {e}")))?;
    let dst = output_dir.join(format!("experiment_{id}_model_def.tgz"));
    std::fs::write(&dst, bytes).map_err(|e| CliError::msg(format!("cannot write {}: {e}", dst.display())))?;
    Ok(())
}

/// States after which an experiment never changes again (the SDK's `TERMINAL_STATES`).
const TERMINAL: [&str; 4] = ["STATE_COMPLETED", "STATE_CANCELED", "STATE_DELETED", "STATE_ERROR"];

/// The SDK's `Experiment.wait`: polls until a terminal state, which it returns.
pub fn wait(client: &Client, id: i64, interval: Duration) -> Result<String, CliError> {
    let mut elapsed = Duration::ZERO;
    loop {
        let exp = get_experiment(client, id)?;
        let state = text(&exp, "state");
        if TERMINAL.contains(&state) {
            return Ok(state.to_owned());
        }
        if state == "STATE_PAUSED" {
            return Err(CliError::msg(format!("Experiment {id} is in paused state. Make sure the experiment is active.")));
        }
        std::thread::sleep(interval);
        elapsed += interval;
        if !elapsed.is_zero() && elapsed.as_secs().is_multiple_of(60) && elapsed.subsec_nanos() == 0 {
            let minutes = crate::output::py_float_repr(elapsed.as_secs_f64() / 60.0);
            eprintln!("Waiting for Experiment {id} to complete. Elapsed {minutes} minutes");
        }
    }
}
