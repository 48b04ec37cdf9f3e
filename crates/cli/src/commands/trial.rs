//! `det trial ...`: describe (trial + workloads), logs, kill, download (`trial_download.rs`).

use clap::Subcommand;
use reqwest::Method;
use serde_json::{Value, json};

use super::Globals;
use super::wire::{connect, int, read_paginated, state, text};
use crate::client::ClientError;
use crate::error::CliError;
use crate::log_stream::{self, LogArgs};
use crate::output::{format_time, py_json, tabulate_or_csv};
use crate::table::Cell;
use crate::{render, say};

#[derive(Debug, Subcommand)]
pub enum TrialCommand {
    /// describe trial
    Describe {
        /// trial ID
        trial_id: i64,
        /// display summary of metrics
        #[arg(long)]
        metrics_summary: bool,
        /// display full metrics, such as batch metrics
        #[arg(long)]
        metrics: bool,
        /// print as CSV
        #[arg(long, conflicts_with = "json")]
        csv: bool,
        /// print as JSON
        #[arg(long)]
        json: bool,
        /// Maximum items per page of results
        #[arg(long, default_value_t = 1000)]
        limit: i64,
        /// Number of items to skip before starting page of results
        #[arg(long, default_value_t = 0)]
        offset: i64,
        /// when set to "all", fetch all available data; when "1", fetch a single page
        #[arg(long, default_value = "all", value_parser = ["1", "all"])]
        pages: String,
    },
    /// fetch trial logs
    Logs {
        /// trial ID
        trial_id: i64,
        /// print as JSON
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        logs: LogArgs,
    },
    /// forcibly terminate a trial
    Kill {
        /// trial ID
        trial_id: i64,
    },
    /// download checkpoint for trial
    Download(super::trial_download::DownloadArgs),
}

pub fn run(g: &Globals, cmd: TrialCommand) -> Result<(), CliError> {
    match cmd {
        TrialCommand::Describe { trial_id, metrics_summary, metrics, csv, json, limit, offset, pages } => {
            describe(g, trial_id, DescribeOpts { metrics_summary, metrics, csv, json: json || g.json, limit, offset, single: pages == "1" })
        }
        TrialCommand::Logs { trial_id, json, logs } => {
            let client = connect(g)?;
            let json = json || g.json;
            let streamed =
                log_stream::stream(&client, &format!("api/v1/trials/{trial_id}/logs"), &logs, |e| log_stream::print_entry(e, json));
            log_stream::print_ended("Trial", "trial", &trial_id.to_string());
            streamed
        }
        TrialCommand::Download(args) => super::trial_download::run(g, args),
        TrialCommand::Kill { trial_id } => {
            connect(g)?.send::<(), Value>(Method::POST, &format!("api/v1/trials/{trial_id}/kill"), None)?;
            say!("Killed trial {trial_id}");
            Ok(())
        }
    }
}

struct DescribeOpts {
    metrics_summary: bool,
    metrics: bool,
    csv: bool,
    json: bool,
    limit: i64,
    offset: i64,
    single: bool,
}

fn describe(g: &Globals, trial_id: i64, o: DescribeOpts) -> Result<(), CliError> {
    let client = connect(g)?;
    let mut resp: Value = client.get(&format!("api/v1/trials/{trial_id}"))?;
    let path =
        |offset: i64| format!("api/v1/trials/{trial_id}/workloads?offset={offset}&limit={}&includeBatchMetrics={}", o.limit, o.metrics);
    // A master without the workloads endpoint still gets the trial described.
    let workloads = match read_paginated(&client, path, "workloads", o.offset, o.single) {
        Err(CliError::Client(ClientError::NotFound(_))) => Vec::new(),
        other => other?,
    };
    if o.json {
        resp["workloads"] = Value::Array(workloads);
        say!("{}", render::json(&resp));
        return Ok(());
    }
    let trial = resp.get("trial").cloned().unwrap_or(Value::Null);
    let headers = ["Experiment ID", "State", "H-Params", "Summary Metrics", "Started", "Ended"];
    let row = vec![
        Cell::opt(int(&trial, "experimentId")),
        state(&trial, "state").into(),
        py_json(trial.get("hparams").unwrap_or(&Value::Null)).into(),
        py_json(trial.get("summaryMetrics").unwrap_or(&Value::Null)).into(),
        format_time(trial.get("startTime").and_then(Value::as_str)),
        format_time(trial.get("endTime").and_then(Value::as_str)),
    ];
    tabulate_or_csv(&headers, &[row], o.csv);

    let mut headers = vec!["# of Batches", "Report Time", "Checkpoint", "Checkpoint UUID", "Checkpoint Metadata", "Validation Metrics"];
    if o.metrics {
        headers.push("Workload Metrics");
    }
    let rows: Vec<Vec<Cell>> = workloads.iter().map(|w| workload_row(w, o.metrics)).collect();
    say!("");
    say!("Workloads:");
    tabulate_or_csv(&headers, &rows, o.csv);
    if o.metrics_summary {
        say!("{}", render::json(trial.get("summaryMetrics").unwrap_or(&Value::Null)));
    }
    Ok(())
}

/// `v1Metrics.to_json()`: `avgMetrics` and `batchMetrics` (null when unset).
fn metrics_json(metrics: Option<&Value>) -> String {
    let m = metrics.unwrap_or(&Value::Null);
    py_json(&json!({
        "avgMetrics": m.get("avgMetrics").cloned().unwrap_or(Value::Null),
        "batchMetrics": m.get("batchMetrics").cloned().unwrap_or(Value::Null),
    }))
}

fn workload_row(w: &Value, metrics: bool) -> Vec<Cell> {
    let present = |k: &str| w.get(k).filter(|v| !v.is_null());
    let (training, validation, checkpoint) = (present("training"), present("validation"), present("checkpoint"));
    let detail = training.or(validation).or(checkpoint).unwrap_or(&Value::Null);
    let mut row = vec![Cell::opt(int(detail, "totalBatches")), format_time(detail.get("endTime").and_then(Value::as_str))];
    match checkpoint {
        None => row.extend([Cell::Str(String::new()), Cell::Str(String::new()), Cell::Str(String::new())]),
        Some(c) => {
            let st = state(c, "state");
            let uuid = if st == "COMPLETED" || st == "DELETED" { text(c, "uuid") } else { "" };
            let metadata = py_json(c.get("metadata").unwrap_or(&Value::Null));
            row.extend([st.into(), uuid.into(), metadata.into()]);
        }
    }
    row.push(validation.map(|v| metrics_json(v.get("metrics"))).unwrap_or_default().into());
    if metrics {
        row.push(training.map(|t| metrics_json(t.get("metrics"))).unwrap_or_default().into());
    }
    row
}
