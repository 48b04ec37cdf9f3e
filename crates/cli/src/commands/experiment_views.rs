//! Read-only experiment views: `list`, `describe`, `list-trials`, `list-checkpoints`, with
//! upstream's columns and formatting.

use std::collections::BTreeMap;

use clap::Args;
use serde_json::Value;

use super::Globals;
use super::experiment::Pagination;
use super::wire::{connect, int, int_cell, read_paginated, state, text, value_cell};
use crate::client::{Client, ClientError, path_segment};
use crate::error::CliError;
use crate::output::{format_percent, format_time, py_float_repr, py_json, sizeof_fmt, tabulate_or_csv};
use crate::table::Cell;
use crate::{render, say, session};

#[derive(Clone, Debug, Args)]
pub struct ListArgs {
    /// show all experiments (including archived and other users')
    #[arg(short, long)]
    pub all: bool,
    /// include columns for workspace name and project name
    #[arg(long = "show_project")]
    pub show_project: bool,
    #[command(flatten)]
    pub page: Pagination,
    /// print as CSV
    #[arg(long)]
    pub csv: bool,
}

impl Default for ListArgs {
    fn default() -> Self {
        ListArgs { all: false, show_project: false, page: Pagination { limit: 200, offset: 0, pages: "all".into() }, csv: false }
    }
}

pub fn list(g: &Globals, args: &ListArgs) -> Result<(), CliError> {
    let s = session::login_with_cache(&g.master, g.user.as_deref())?;
    let mut filter = String::new();
    if !args.all {
        filter = format!("&archived=false&users={}", path_segment(&s.username));
    }
    let limit = args.page.limit;
    let path = |offset: i64| format!("api/v1/experiments?offset={offset}&limit={limit}{filter}");
    let experiments = read_paginated(&s.client, path, "experiments", args.page.offset, args.page.single())?;
    // Upstream's list has no JSON form; ours honours the global `--json` rather than ignore it.
    if g.json {
        say!("{}", render::json(&experiments));
        return Ok(());
    }
    let mut headers = vec!["ID", "Owner", "Name", "Parent ID", "State", "Progress", "Started", "Ended", "Resource Pool"];
    if args.show_project {
        headers.splice(0..0, ["Workspace", "Project"]);
    }
    if args.all {
        headers.push("Archived");
    }
    let rows: Vec<Vec<Cell>> = experiments
        .iter()
        .map(|e| {
            let mut row = vec![
                int_cell(e, "id"),
                text(e, "username").into(),
                text(e, "name").into(),
                int_cell(e, "forkedFrom"),
                state(e, "state").into(),
                format_percent(e.get("progress").and_then(Value::as_f64)),
                format_time(e.get("startTime").and_then(Value::as_str)),
                format_time(e.get("endTime").and_then(Value::as_str)),
                text(e, "resourcePool").into(),
            ];
            if args.show_project {
                row.splice(0..0, [text(e, "workspaceName").into(), text(e, "projectName").into()]);
            }
            if args.all {
                row.push(e.get("archived").and_then(Value::as_bool).unwrap_or(false).into());
            }
            row
        })
        .collect();
    tabulate_or_csv(&headers, &rows, args.csv);
    Ok(())
}

fn all_trials(client: &Client, exp_id: i64) -> Result<Vec<Value>, CliError> {
    read_paginated(client, |offset| format!("api/v1/experiments/{exp_id}/trials?offset={offset}"), "trials", 0, false)
}

/// A trial's workloads; a master without the endpoint yields none rather than failing describe.
fn all_workloads(client: &Client, trial_id: i64) -> Result<Vec<Value>, CliError> {
    let path = |offset: i64| format!("api/v1/trials/{trial_id}/workloads?offset={offset}&limit=500");
    match read_paginated(client, path, "workloads", 0, false) {
        Err(CliError::Client(ClientError::NotFound(_))) => Ok(Vec::new()),
        other => other,
    }
}

/// Why a trial ended, when the master says (not an upstream field; shown only when present).
fn end_reason(t: &Value) -> Option<String> {
    ["endReason", "exitReason", "errorMessage"].iter().map(|k| text(t, k)).find(|s| !s.is_empty()).map(str::to_owned)
}

pub fn describe(g: &Globals, ids: &str, csv: bool, json: bool) -> Result<(), CliError> {
    let client = connect(g)?;
    let mut responses = Vec::new();
    for id in ids.split(',') {
        let id: i64 = id.trim().parse().map_err(|_| CliError::msg(format!("invalid experiment ID '{id}'")))?;
        responses.push(client.get::<Value>(&format!("api/v1/experiments/{id}"))?);
    }
    if json {
        say!("{}", render::json(&responses));
        return Ok(());
    }
    let exps: Vec<&Value> = responses.iter().map(|r| r.get("experiment").unwrap_or(&Value::Null)).collect();
    let headers = ["Experiment ID", "State", "Progress", "Started", "Ended", "Name", "Description", "Archived", "Resource Pool", "Labels"];
    let rows: Vec<Vec<Cell>> = exps
        .iter()
        .map(|e| {
            let mut labels: Vec<&str> = e.get("labels").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
            labels.sort_unstable();
            vec![
                int_cell(e, "id"),
                state(e, "state").into(),
                format_percent(e.get("progress").and_then(Value::as_f64)),
                format_time(e.get("startTime").and_then(Value::as_str)),
                format_time(e.get("endTime").and_then(Value::as_str)),
                text(e, "name").into(),
                text(e, "description").into(),
                e.get("archived").and_then(Value::as_bool).unwrap_or(false).into(),
                text(e, "resourcePool").into(),
                labels.join(", ").into(),
            ]
        })
        .collect();
    if !csv {
        say!("Experiment:");
    }
    tabulate_or_csv(&headers, &rows, csv);

    let mut trials: Vec<(i64, Vec<Value>)> = Vec::new();
    for e in &exps {
        let id = int(e, "id").unwrap_or_default();
        trials.push((id, all_trials(&client, id)?));
    }
    let with_reason = trials.iter().flat_map(|(_, ts)| ts).any(|t| end_reason(t).is_some());
    let mut headers = vec!["Trial ID", "Experiment ID", "State", "Started", "Ended", "H-Params"];
    if with_reason {
        headers.push("End Reason");
    }
    let mut rows = Vec::new();
    for (exp_id, ts) in &trials {
        for t in ts {
            let mut row = vec![
                int_cell(t, "id"),
                Cell::Int(*exp_id),
                state(t, "state").into(),
                format_time(t.get("startTime").and_then(Value::as_str)),
                format_time(t.get("endTime").and_then(Value::as_str)),
                py_json(t.get("hparams").unwrap_or(&Value::Null)).into(),
            ];
            if with_reason {
                row.push(end_reason(t).unwrap_or_default().into());
            }
            rows.push(row);
        }
    }
    if !csv {
        say!("\nTrials:");
    }
    tabulate_or_csv(&headers, &rows, csv);

    let headers = [
        "Trial ID",
        "# of Batches",
        "State",
        "Report Time",
        "Checkpoint State",
        "Checkpoint Report Time",
        "Validation State",
        "Validation Report Time",
    ];
    let mut rows = Vec::new();
    for (_, ts) in &trials {
        for t in ts {
            let trial_id = int(t, "id").unwrap_or_default();
            rows.extend(workload_rows(trial_id, &all_workloads(&client, trial_id)?));
        }
    }
    if !csv {
        say!("\nWorkloads:");
    }
    tabulate_or_csv(&headers, &rows, csv);

    for (exp_id, _) in &trials {
        super::experiment_searcher::print_searcher_state(&client, *exp_id, csv)?;
    }
    Ok(())
}

/// Upstream condenses a trial's training, checkpoint and validation workloads at the same batch
/// count into one step-like row (without `--metrics`).
fn workload_rows(trial_id: i64, workloads: &[Value]) -> Vec<Vec<Cell>> {
    // Columns: 0 trial, 1 batches, 2 state, 3 report time, 4 ckpt state, 5 ckpt time, 6 val state, 7 val time.
    let mut rows: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    let time = |v: &Value| match format_time(v.get("endTime").and_then(Value::as_str)) {
        Cell::Str(s) => s,
        _ => String::new(),
    };
    for w in workloads {
        let present = |k: &str| w.get(k).filter(|v| !v.is_null());
        let (training, checkpoint, validation) = (present("training"), present("checkpoint"), present("validation"));
        let Some(detail) = validation.or(checkpoint).or(training) else { continue };
        let batches = int(detail, "totalBatches").unwrap_or_default();
        let ckpt_state = checkpoint.map(|c| state(c, "state")).unwrap_or_default();
        let ckpt_time = checkpoint.map(time).unwrap_or_default();
        let (val_state, val_time) = match validation {
            Some(v) => ("COMPLETED".to_owned(), time(v)),
            None => (String::new(), String::new()),
        };
        match rows.get_mut(&batches) {
            Some(row) => {
                row[3] = row[3].clone().max(time(detail));
                if !ckpt_state.is_empty() {
                    row[4] = ckpt_state;
                    row[5] = ckpt_time;
                }
                if !val_time.is_empty() {
                    row[7] = val_time;
                }
                if !val_state.is_empty() {
                    row[6] = val_state;
                }
            }
            None => {
                let first_state = if ckpt_state.is_empty() { val_state.clone() } else { ckpt_state.clone() };
                let row = vec![String::new(), String::new(), first_state, time(detail), ckpt_state, ckpt_time, val_state, val_time];
                rows.insert(batches, row);
            }
        }
    }
    rows.into_iter()
        .map(|(batches, row)| {
            let mut cells = vec![Cell::Int(trial_id), Cell::Int(batches)];
            cells.extend(row.into_iter().skip(2).map(Cell::Str));
            cells
        })
        .collect()
}

pub fn list_trials(g: &Globals, exp_id: i64, page: &Pagination, csv: bool) -> Result<(), CliError> {
    let client = connect(g)?;
    let limit = page.limit;
    let path = |offset: i64| format!("api/v1/experiments/{exp_id}/trials?offset={offset}&limit={limit}");
    let trials = read_paginated(&client, path, "trials", page.offset, page.single())?;
    let headers = ["Trial ID", "State", "H-Params", "Started", "Ended", "# of Batches"];
    let rows: Vec<Vec<Cell>> = trials
        .iter()
        .map(|t| {
            vec![
                int_cell(t, "id"),
                state(t, "state").into(),
                py_json(t.get("hparams").unwrap_or(&Value::Null)).into(),
                format_time(t.get("startTime").and_then(Value::as_str)),
                format_time(t.get("endTime").and_then(Value::as_str)),
                int_cell(t, "totalBatchesProcessed"),
            ]
        })
        .collect();
    tabulate_or_csv(&headers, &rows, csv);
    Ok(())
}

pub fn list_checkpoints(g: &Globals, exp_id: i64, best: Option<u32>, csv: bool) -> Result<(), CliError> {
    let client = connect(g)?;
    let sorter = if best.is_some() { "SORT_BY_SEARCHER_METRIC" } else { "SORT_BY_END_TIME" };
    let limit = best.map(|n| format!("&limit={n}")).unwrap_or_default();
    let resp: Value = client.get(&format!("api/v1/experiments/{exp_id}/checkpoints?sortByAttr={sorter}{limit}"))?;
    let checkpoints: Vec<Value> = resp.get("checkpoints").and_then(Value::as_array).cloned().unwrap_or_default();
    // As for `experiment list`: the global `--json` prints what the master sent.
    if g.json {
        say!("{}", render::json(&checkpoints));
        return Ok(());
    }
    let metric = checkpoints
        .first()
        .and_then(|c| c.pointer("/training/experimentConfig/searcher/metric"))
        .map(|m| m.as_str().map_or_else(|| m.to_string(), str::to_owned))
        .unwrap_or_default();
    let headers = ["Trial ID", "# of Batches", "State", "Validation Metric", "UUID", "Resources", "Size"];
    let rows: Vec<Vec<Cell>> = checkpoints
        .iter()
        .map(|c| {
            let training = c.get("training").unwrap_or(&Value::Null);
            let metric_value = training
                .pointer("/validationMetrics/avgMetrics")
                .and_then(|m| m.get(&metric))
                .map(|v| match v {
                    Value::Number(n) if n.is_f64() => py_float_repr(n.as_f64().unwrap_or_default()),
                    other => super::wire::py_str(other),
                })
                .unwrap_or_default();
            let resources = c.get("resources").and_then(Value::as_object);
            let names: Vec<&str> = resources.map(|r| r.keys().map(String::as_str).collect()).unwrap_or_default();
            let size: f64 = resources
                .map(|r| r.values().filter_map(|v| v.as_str().and_then(|s| s.parse::<f64>().ok()).or_else(|| v.as_f64())).sum())
                .unwrap_or(0.0);
            let mut sorted = names.clone();
            sorted.sort_unstable();
            vec![
                int_cell(training, "trialId"),
                value_cell(c.pointer("/metadata/steps_completed")),
                state(c, "state").into(),
                metric_value.into(),
                text(c, "uuid").into(),
                sorted.join("\n").into(),
                if resources.is_some() { sizeof_fmt(size) } else { String::new() }.into(),
            ]
        })
        .collect();
    tabulate_or_csv(&headers, &rows, csv);
    Ok(())
}
