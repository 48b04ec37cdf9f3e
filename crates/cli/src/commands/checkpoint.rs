//! `det checkpoint describe|download`.

use std::path::PathBuf;

use clap::Subcommand;
use serde_json::Value;

use super::Globals;
use super::wire::{connect, text, value_cell};
use crate::checkpoint_download::{self, DownloadMode};
use crate::client::path_segment;
use crate::error::CliError;
use crate::output::{format_time, py_json, tabulate_or_csv};
use crate::table::Cell;
use crate::{render, say};

#[derive(Debug, Subcommand)]
pub enum CheckpointCommand {
    /// download checkpoint from persistent storage
    Download {
        /// Download a checkpoint by specifying its UUID.
        uuid: String,
        /// Desired output directory for the checkpoint.
        #[arg(short, long)]
        output_dir: Option<PathBuf>,
        /// Only print the path to the checkpoint.
        #[arg(short, long)]
        quiet: bool,
        /// Select different download modes: 'direct' to directly download from checkpoint
        /// storage; 'master' to download via the master; 'auto' to first attempt a direct
        /// download and fall back to 'master'.
        #[arg(long, value_enum, default_value_t = DownloadMode::Auto)]
        mode: DownloadMode,
    },
    /// describe checkpoint
    Describe {
        /// checkpoint uuid to describe
        uuid: String,
        /// print as JSON
        #[arg(long)]
        json: bool,
    },
}

pub fn run(g: &Globals, cmd: CheckpointCommand) -> Result<(), CliError> {
    let client = connect(g)?;
    match cmd {
        CheckpointCommand::Describe { uuid, json } => {
            let resp: Value = client.get(&format!("api/v1/checkpoints/{}", path_segment(&uuid)))?;
            if json || g.json {
                say!("{}", render::json(&resp));
            } else {
                render_checkpoint(resp.get("checkpoint").unwrap_or(&Value::Null), None);
            }
            Ok(())
        }
        CheckpointCommand::Download { uuid, output_dir, quiet, mode } => {
            let resp: Value = client.get(&format!("api/v1/checkpoints/{}", path_segment(&uuid)))?;
            let checkpoint = resp.get("checkpoint").unwrap_or(&Value::Null);
            let path = checkpoint_download::download(&client, checkpoint, output_dir.as_deref(), mode)
                .map_err(|e| CliError::msg(e.to_string()))?;
            let path = path.display().to_string();
            if quiet {
                say!("{path}");
            } else {
                render_checkpoint(checkpoint, Some(&path));
            }
            Ok(())
        }
    }
}

/// `checkpoint.render_checkpoint`: the local path (after a download), then one row.
pub fn render_checkpoint(c: &Value, path: Option<&str>) {
    if let Some(path) = path {
        say!("Local checkpoint path:");
        say!("{path} \n");
    }
    let training = c.get("training").filter(|t| !t.is_null());
    let validation = training.and_then(|t| t.get("validationMetrics")).filter(|v| !v.is_null());
    let metadata = c.get("metadata").filter(|m| !m.is_null()).cloned().unwrap_or(Value::Object(Default::default()));
    let headers = ["Experiment ID", "Trial ID", "Steps Completed", "Report Time", "Checkpoint UUID", "Validation Metrics", "Metadata"];
    let row: Vec<Cell> = vec![
        value_cell(training.and_then(|t| t.get("experimentId"))),
        value_cell(training.and_then(|t| t.get("trialId"))),
        value_cell(metadata.get("steps_completed")),
        format_time(c.get("reportTime").and_then(Value::as_str)),
        text(c, "uuid").into(),
        // The SDK keeps `validationMetrics.to_json()`, or `{}` when there are none.
        training.map(|_| py_json(&validation.map(metrics_to_json).unwrap_or(Value::Object(Default::default())))).unwrap_or_default().into(),
        py_json(&metadata).into(),
    ];
    tabulate_or_csv(&headers, &[row], false);
}

/// `v1Metrics.to_json()`: both keys, `batchMetrics` null when unset.
fn metrics_to_json(m: &Value) -> Value {
    serde_json::json!({
        "avgMetrics": m.get("avgMetrics").cloned().unwrap_or(Value::Null),
        "batchMetrics": m.get("batchMetrics").cloned().unwrap_or(Value::Null),
    })
}
