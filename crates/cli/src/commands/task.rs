//! `det task`: the allocation summaries of `GET /api/v1/tasks`, task log streams, and generic
//! tasks (`task_generic.rs`).

use std::collections::BTreeMap;

use clap::Subcommand;
use resolute_api::tasks::{AllocationSummary, GetTasksResponse};

use super::Globals;
use super::wire::connect;
use crate::client::Client;
use crate::error::CliError;
use crate::log_stream::LogArgs;
use crate::output::{format_datetime, tabulate_or_csv};
use crate::table::Cell;
use crate::{render, say};

// Parsed once per process; boxing the log flags would only complicate clap's flatten.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// list tasks in cluster
    #[command(visible_alias = "ls")]
    List {
        /// print as CSV
        #[arg(long, conflicts_with = "json")]
        csv: bool,
        /// print as JSON
        #[arg(long)]
        json: bool,
    },
    /// fetch task logs
    Logs {
        /// task ID
        task_id: String,
        /// print as JSON
        #[arg(long)]
        json: bool,
        /// allocations to show logs from (repeat for multiple values)
        #[arg(long = "allocation-id")]
        allocation_ids: Vec<String>,
        #[command(flatten)]
        logs: LogArgs,
    },
    /// create a generic task from a config and a context directory
    Create(super::task_generic::CreateArgs),
    /// display a generic task's config
    Config {
        /// task ID
        task_id: String,
        /// print as JSON
        #[arg(long)]
        json: bool,
    },
    /// kill a generic task
    Kill {
        /// task ID
        task_id: String,
        /// kill the whole tree from its root task
        #[arg(long)]
        root: bool,
    },
    /// pause a generic task
    Pause {
        /// task ID
        task_id: String,
    },
    /// unpause a generic task
    Unpause {
        /// task ID
        task_id: String,
    },
}

/// `det task` alone lists tasks, as upstream's `is_default` subcommand does.
pub fn run(g: &Globals, cmd: Option<TaskCommand>) -> Result<(), CliError> {
    match cmd.unwrap_or(TaskCommand::List { csv: false, json: false }) {
        TaskCommand::List { csv, json } => {
            let tasks = fetch_tasks(&connect(g)?)?;
            render_tasks(&tasks, csv, json || g.json);
            Ok(())
        }
        TaskCommand::Logs { task_id, json, allocation_ids, mut logs } => {
            logs.allocation_ids = allocation_ids;
            super::ntsc::logs(g, None, &task_id, json, &logs)
        }
        TaskCommand::Create(args) => super::task_generic::create(g, &args),
        TaskCommand::Config { task_id, json } => super::task_generic::config(g, &task_id, json),
        TaskCommand::Kill { task_id, root } => super::task_generic::kill(g, &task_id, root),
        TaskCommand::Pause { task_id } => super::task_generic::pause(g, &task_id, true),
        TaskCommand::Unpause { task_id } => super::task_generic::pause(g, &task_id, false),
    }
}

/// `allocationIdToSummary` of `GET /api/v1/tasks`.
pub fn fetch_tasks(client: &Client) -> Result<BTreeMap<String, AllocationSummary>, CliError> {
    Ok(client.get::<GetTasksResponse>("api/v1/tasks")?.allocation_id_to_summary)
}

/// Agents a task runs on: one name, or Python's `repr` of the list (`[]` when none).
fn agent_info(t: &AllocationSummary) -> String {
    let Some(resources) = &t.resources else {
        return "unassigned".to_owned();
    };
    let agents: Vec<&String> = resources.iter().flat_map(|r| r.agent_devices.keys()).collect();
    match agents.as_slice() {
        [one] => (*one).clone(),
        many => format!("[{}]", many.iter().map(|a| format!("'{a}'")).collect::<Vec<_>>().join(", ")),
    }
}

/// `task.render_tasks`: sorted by registration time.
pub fn render_tasks(tasks: &BTreeMap<String, AllocationSummary>, csv: bool, json: bool) {
    if json {
        say!("{}", render::json(tasks));
        return;
    }
    let headers = ["Task ID", "Allocation ID", "Name", "Slots Needed", "Registered Time", "Agent", "Priority", "Resource Pool", "Ports"];
    let registered = |t: &AllocationSummary| format_datetime(Some(&t.registered_time));
    let mut sorted: Vec<&AllocationSummary> = tasks.values().collect();
    // Upstream sorts by the printed time, so ties within a second keep the listing's order.
    sorted.sort_by_cached_key(|t| match registered(t) {
        Cell::Str(s) => s,
        _ => String::new(),
    });
    let rows: Vec<Vec<Cell>> = sorted
        .iter()
        .map(|t| {
            let priority = if t.scheduler_type == "priority" { Cell::opt(t.priority.map(i64::from)) } else { "N/A".into() };
            let mut ports: Vec<i32> = t.proxy_ports.iter().filter_map(|p| p.port).collect();
            ports.sort_unstable();
            vec![
                t.task_id.as_str().into(),
                t.allocation_id.as_str().into(),
                t.name.as_str().into(),
                Cell::Int(i64::from(t.slots_needed)),
                registered(t),
                agent_info(t).into(),
                priority,
                t.resource_pool.as_str().into(),
                ports.iter().map(i32::to_string).collect::<Vec<_>>().join(",").into(),
            ]
        })
        .collect();
    tabulate_or_csv(&headers, &rows, csv);
}
