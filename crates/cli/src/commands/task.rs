//! `det task`: the allocation summaries of `GET /api/v1/tasks`, task log streams, and generic
//! tasks (`task_generic.rs`).

use clap::Subcommand;
use serde_json::{Map, Value};

use super::Globals;
use super::wire::{connect, int, text};
use crate::client::Client;
use crate::error::CliError;
use crate::log_stream::LogArgs;
use crate::output::{format_time, tabulate_or_csv};
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
pub fn fetch_tasks(client: &Client) -> Result<Map<String, Value>, CliError> {
    let resp: Value = client.get("api/v1/tasks")?;
    Ok(resp.get("allocationIdToSummary").and_then(Value::as_object).cloned().unwrap_or_default())
}

/// Agents a task runs on: one name, or Python's `repr` of the list (`[]` when none).
fn agent_info(t: &Value) -> String {
    let Some(resources) = t.get("resources").and_then(Value::as_array) else {
        return "unassigned".to_owned();
    };
    let agents: Vec<&String> =
        resources.iter().filter_map(|r| r.get("agentDevices").and_then(Value::as_object)).flat_map(|m| m.keys()).collect();
    match agents.as_slice() {
        [one] => (*one).clone(),
        many => format!("[{}]", many.iter().map(|a| format!("'{a}'")).collect::<Vec<_>>().join(", ")),
    }
}

/// `task.render_tasks`: sorted by registration time.
pub fn render_tasks(tasks: &Map<String, Value>, csv: bool, json: bool) {
    if json {
        say!("{}", render::json(tasks));
        return;
    }
    let headers = ["Task ID", "Allocation ID", "Name", "Slots Needed", "Registered Time", "Agent", "Priority", "Resource Pool", "Ports"];
    let mut sorted: Vec<&Value> = tasks.values().collect();
    let time_key = |t: &Value| match format_time(t.get("registeredTime").and_then(Value::as_str)) {
        Cell::Str(s) => s,
        _ => String::new(),
    };
    sorted.sort_by_key(|t| time_key(t));
    let rows: Vec<Vec<Cell>> = sorted
        .iter()
        .map(|t| {
            let priority = if text(t, "schedulerType") == "priority" { Cell::opt(int(t, "priority")) } else { "N/A".into() };
            let mut ports: Vec<i64> =
                t.get("proxyPorts").and_then(Value::as_array).into_iter().flatten().filter_map(|p| int(p, "port")).collect();
            ports.sort_unstable();
            vec![
                text(t, "taskId").into(),
                text(t, "allocationId").into(),
                text(t, "name").into(),
                Cell::opt(int(t, "slotsNeeded")),
                format_time(t.get("registeredTime").and_then(Value::as_str)),
                agent_info(t).into(),
                priority,
                text(t, "resourcePool").into(),
                ports.iter().map(i64::to_string).collect::<Vec<_>>().join(",").into(),
            ]
        })
        .collect();
    tabulate_or_csv(&headers, &rows, csv);
}
