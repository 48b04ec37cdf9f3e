//! `det trial download TRIAL_ID --best|--latest|--uuid UUID`: picks one of the trial's
//! checkpoints and downloads it as `det checkpoint download` does. The flags are upstream 0.38's;
//! the pick is what its help says: the best checkpoint (the searcher metric's best first, or
//! `--sort-by` with `--smaller-is-better`) or the most recent one, the first of them that can be
//! downloaded (COMPLETED or PARTIALLY_DELETED). (Upstream's CLI takes the *last* entry of the
//! sorted list, and refuses `--uuid`.)

use std::path::PathBuf;

use clap::Args;
use serde_json::Value;

use super::Globals;
use super::checkpoint::render_checkpoint;
use super::wire::connect;
use crate::checkpoint_download::{self, DownloadMode};
use crate::client::path_segment;
use crate::error::CliError;
use crate::say;

#[derive(Debug, Args)]
pub struct DownloadArgs {
    /// trial ID
    pub trial_id: i64,
    /// download the checkpoint with the best validation metric
    #[arg(long)]
    pub best: bool,
    /// download the most recent checkpoint
    #[arg(long)]
    pub latest: bool,
    /// download a checkpoint by specifying its UUID
    #[arg(long)]
    pub uuid: Option<String>,
    /// Desired output directory for the checkpoint
    #[arg(short, long)]
    pub output_dir: Option<PathBuf>,
    /// The name of the validation metric to sort on (only with --best; needs --smaller-is-better).
    #[arg(long)]
    pub sort_by: Option<String>,
    /// The sort order for --sort-by (true|false).
    #[arg(long, value_parser = parse_bool, value_name = "(true|false)")]
    pub smaller_is_better: Option<bool>,
    /// Only print the path to the checkpoint.
    #[arg(short, long)]
    pub quiet: bool,
    /// 'direct', 'master' or 'auto' (direct first, then through the master).
    #[arg(long, value_enum, default_value_t = DownloadMode::Auto)]
    pub mode: DownloadMode,
}

/// Upstream's `string_to_bool`.
fn parse_bool(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "true" | "t" | "yes" | "y" | "1" => Ok(true),
        "false" | "f" | "no" | "n" | "0" => Ok(false),
        _ => Err(format!("{s:?} is not true or false")),
    }
}

/// The list query selecting the checkpoint, most wanted first.
fn list_query(a: &DownloadArgs) -> String {
    if a.latest {
        return "sortByAttr=SORT_BY_BATCH_NUMBER&orderBy=ORDER_BY_DESC".to_owned();
    }
    match (&a.sort_by, a.smaller_is_better) {
        (Some(metric), Some(smaller)) => {
            format!("sortByMetric={}&orderBy={}", path_segment(metric), if smaller { "ORDER_BY_ASC" } else { "ORDER_BY_DESC" })
        }
        // The searcher metric, best first by its smaller_is_better.
        _ => "sortByAttr=SORT_BY_SEARCHER_METRIC".to_owned(),
    }
}

pub fn run(g: &Globals, a: DownloadArgs) -> Result<(), CliError> {
    if [a.latest, a.best, a.uuid.is_some()].iter().filter(|b| **b).count() != 1 {
        return Err(CliError::msg("exactly one of --latest, --best, or --uuid must be set"));
    }
    if a.sort_by.is_some() && !a.best {
        return Err(CliError::msg("--sort-by and --smaller-is-better flags can only be used with --best"));
    }
    if a.sort_by.is_some() != a.smaller_is_better.is_some() {
        return Err(CliError::msg("--sort-by and --smaller-is-better must be set together"));
    }
    let client = connect(g)?;
    let checkpoint = match &a.uuid {
        Some(uuid) => {
            let resp: Value = client.get(&format!("api/v1/checkpoints/{}", path_segment(uuid)))?;
            let checkpoint = resp.get("checkpoint").cloned().unwrap_or(Value::Null);
            let trial = checkpoint.pointer("/training/trialId").and_then(Value::as_i64);
            if trial != Some(a.trial_id) {
                return Err(CliError::msg(format!("checkpoint {uuid} is not a checkpoint of trial {}", a.trial_id)));
            }
            checkpoint
        }
        None => {
            let resp: Value = client.get(&format!("api/v1/trials/{}/checkpoints?{}", a.trial_id, list_query(&a)))?;
            let listed = resp.get("checkpoints").and_then(Value::as_array).cloned().unwrap_or_default();
            if listed.is_empty() {
                return Err(CliError::msg(format!("No checkpoints found for trial {}", a.trial_id)));
            }
            let downloadable =
                |c: &&Value| matches!(c.get("state").and_then(Value::as_str), Some("STATE_COMPLETED" | "STATE_PARTIALLY_DELETED"));
            listed.iter().find(downloadable).cloned().ok_or_else(|| CliError::msg("Download failed:  No downloadable checkpoint found"))?
        }
    };
    let path =
        checkpoint_download::download(&client, &checkpoint, a.output_dir.as_deref(), a.mode).map_err(|e| CliError::msg(e.to_string()))?;
    let path = path.display().to_string();
    if a.quiet {
        say!("{path}");
    } else {
        render_checkpoint(&checkpoint, Some(&path));
    }
    Ok(())
}
