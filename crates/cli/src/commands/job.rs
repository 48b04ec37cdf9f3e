//! `det job list` and `det job update`: the job queue (`GET /api/v1/job-queues-v2`, `POST
//! /api/v1/job-queues`). Ours adds what upstream's lacks: a column saying why each waiting job
//! waits, and `--ahead-of` / `--behind-of`.

use clap::{ArgGroup, Subcommand};
use serde_json::{Value, json};

use super::Globals;
use super::agent::cell;
use super::wire::{connect, text};
use crate::error::CliError;
use crate::output::tabulate_or_csv;
use crate::table::Cell;
use crate::{render, say};

#[derive(Debug, Subcommand)]
pub enum JobCommand {
    /// list jobs in scheduling order, with why each waiting job waits
    #[command(visible_alias = "ls")]
    List {
        /// only this resource pool's jobs
        #[arg(short = 'p', long)]
        resource_pool: Option<String>,
        /// print as CSV
        #[arg(long, conflicts_with = "json")]
        csv: bool,
        /// print as JSON
        #[arg(long)]
        json: bool,
    },
    /// update a job's priority, weight or place in the queue
    #[command(visible_alias = "u", group(ArgGroup::new("change").required(true).args(["priority", "weight", "ahead_of", "behind_of"])))]
    Update {
        /// the job to change
        job_id: String,
        /// the new priority (1 highest, 99 lowest)
        #[arg(short = 'p', long)]
        priority: Option<i32>,
        /// the new fair-share weight
        #[arg(short = 'w', long)]
        weight: Option<f64>,
        /// move it directly ahead of this job
        #[arg(long)]
        ahead_of: Option<String>,
        /// move it directly behind this job
        #[arg(long)]
        behind_of: Option<String>,
    },
}

/// `det job` alone lists jobs, as upstream's `is_default` subcommand does.
pub fn run(g: &Globals, cmd: Option<JobCommand>) -> Result<(), CliError> {
    match cmd.unwrap_or(JobCommand::List { resource_pool: None, csv: false, json: false }) {
        JobCommand::List { resource_pool, csv, json } => list(g, resource_pool.as_deref(), csv, json || g.json),
        JobCommand::Update { job_id, priority, weight, ahead_of, behind_of } => {
            let client = connect(g)?;
            let update = json!({"jobId": job_id, "priority": priority, "weight": weight, "aheadOf": ahead_of, "behindOf": behind_of});
            let _: Value = client.post("api/v1/job-queues", &json!({"updates": [update]}))?;
            say!("Updated job {job_id}");
            Ok(())
        }
    }
}

fn list(g: &Globals, pool: Option<&str>, csv: bool, json: bool) -> Result<(), CliError> {
    let client = connect(g)?;
    let mut jobs: Vec<Value> = Vec::new();
    let mut offset = 0;
    loop {
        let mut path = format!("api/v1/job-queues-v2?offset={offset}&limit=1000");
        if let Some(pool) = pool {
            path.push_str(&format!("&resourcePool={}", urlencoding_lite(pool)));
        }
        let page: Value = client.get(&path)?;
        let got = page["jobs"].as_array().cloned().unwrap_or_default();
        jobs.extend(got.into_iter().map(|j| j["full"].clone()));
        let end = page["pagination"]["endIndex"].as_i64().unwrap_or(0);
        let total = page["pagination"]["total"].as_i64().unwrap_or(0);
        if end >= total || end <= offset {
            break;
        }
        offset = end;
    }
    if json {
        say!("{}", render::json(&json!({"jobs": jobs})));
        return Ok(());
    }
    let headers = ["#", "ID", "Type", "Job Name", "Priority", "Submitted", "Slots (acquired/needed)", "State", "User", "Waiting Because"];
    let rows: Vec<Vec<Cell>> = jobs
        .iter()
        .map(|j| {
            let ahead = j["summary"]["jobsAhead"].as_i64().filter(|n| *n >= 0).map_or_else(|| "N/A".to_owned(), |n| n.to_string());
            let name = if text(j, "type") == "TYPE_EXPERIMENT" {
                format!("{} ({})", text(j, "name"), text(j, "entityId"))
            } else {
                text(j, "name").to_owned()
            };
            vec![
                Cell::Str(ahead),
                cell(&j["jobId"]),
                cell(&j["type"]),
                Cell::Str(name),
                cell(&j["priority"]),
                cell(&j["submissionTime"]),
                Cell::Str(format!("{}/{}", j["allocatedSlots"], j["requestedSlots"])),
                cell(&j["summary"]["state"]),
                cell(&j["username"]),
                cell(&j["waitReason"]),
            ]
        })
        .collect();
    tabulate_or_csv(&headers, &rows, csv);
    Ok(())
}

/// Percent-encodes a query value (pool names are plain, but may hold anything).
fn urlencoding_lite(value: &str) -> String {
    value
        .bytes()
        .map(|b| if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}
