//! `det agent list` (the lead merges `det agent run` from `agent_run.rs` into [`AgentCommand`]).

use clap::Subcommand;
use serde_json::{Value, json};

use super::Globals;
use super::wire::{connect, text};
use crate::client::Client;
use crate::error::CliError;
use crate::output::{format_time, tabulate_or_csv};
use crate::table::Cell;
use crate::{render, say};

#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// list agents
    #[command(visible_alias = "ls")]
    List {
        /// print as CSV
        #[arg(long, conflicts_with = "json")]
        csv: bool,
        /// print as JSON
        #[arg(long)]
        json: bool,
    },
    /// enable agent
    Enable {
        /// agent ID
        #[arg(conflicts_with = "all")]
        agent_id: Option<String>,
        /// enable all agents
        #[arg(long)]
        all: bool,
    },
    /// disable agent
    Disable {
        /// agent ID
        #[arg(conflicts_with = "all")]
        agent_id: Option<String>,
        /// disable all agents
        #[arg(long)]
        all: bool,
        /// enter drain mode, allowing the tasks currently running on the disabled agents to finish
        #[arg(long)]
        drain: bool,
    },
    /// run an agent in the foreground until SIGINT/SIGTERM
    Run(Box<super::agent_run::RunArgs>),
}

/// `det agent` alone lists agents, as upstream's `is_default` subcommand does.
pub fn run(g: &Globals, cmd: Option<AgentCommand>) -> Result<(), CliError> {
    match cmd.unwrap_or(AgentCommand::List { csv: false, json: false }) {
        AgentCommand::List { csv, json } => list(g, csv, json || g.json),
        AgentCommand::Enable { agent_id, all } => super::agent_control::patch_agents(g, true, agent_id.as_deref(), all, false),
        AgentCommand::Disable { agent_id, all, drain } => super::agent_control::patch_agents(g, false, agent_id.as_deref(), all, drain),
        // Dispatched before a master session is needed (see main.rs).
        AgentCommand::Run(_) => Err(CliError::msg("`det agent run` cannot run as a client command")),
    }
}

/// `GET /api/v1/agents`, sorted by id.
pub fn fetch_agents(client: &Client) -> Result<Vec<Value>, CliError> {
    let resp: Value = client.get("api/v1/agents")?;
    let mut agents = resp.get("agents").and_then(Value::as_array).cloned().unwrap_or_default();
    agents.sort_by(|a, b| text(a, "id").cmp(text(b, "id")));
    Ok(agents)
}

/// Upstream's `local_id`: the last path component (`/agents/a1/slots/0` → `0`).
pub fn local_id(id: &str) -> String {
    id.rsplit('/').next().unwrap_or(id).to_owned()
}

/// `", ".join(list)`, or `""` when the list is absent.
pub fn joined(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_array).map(|l| l.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")).unwrap_or_default()
}

fn count(v: &Value, key: &str) -> Value {
    match v.get(key) {
        Some(Value::Object(m)) => json!(m.len()),
        Some(Value::Array(a)) => json!(a.len()),
        _ => json!(""),
    }
}

fn time_value(v: &Value, key: &str) -> Value {
    match format_time(v.get(key).and_then(Value::as_str)) {
        Cell::Str(s) if !s.is_empty() => Value::String(s),
        _ => Value::Null,
    }
}

/// A JSON scalar as a table cell (`null` empty, booleans as Python prints them).
pub fn cell(v: &Value) -> Cell {
    match v {
        Value::Null => Cell::Str(String::new()),
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => n.as_i64().map_or_else(|| Cell::Str(n.to_string()), Cell::Int),
        Value::String(s) => Cell::Str(s.clone()),
        other => Cell::Str(other.to_string()),
    }
}

fn list(g: &Globals, csv: bool, json: bool) -> Result<(), CliError> {
    let agents = fetch_agents(&connect(g)?)?;
    // Built like upstream's OrderedDicts so `--json` carries the same keys and types.
    let records: Vec<Vec<(&str, Value)>> = agents
        .iter()
        .map(|a| {
            vec![
                ("id", json!(local_id(text(a, "id")))),
                ("version", a.get("version").cloned().unwrap_or(Value::Null)),
                ("registered_time", time_value(a, "registeredTime")),
                ("num_slots", count(a, "slots")),
                ("num_containers", count(a, "containers")),
                ("resource_pools", json!(joined(a, "resourcePools"))),
                ("enabled", a.get("enabled").cloned().unwrap_or(Value::Null)),
                ("draining", a.get("draining").cloned().unwrap_or(Value::Null)),
                ("addresses", json!(joined(a, "addresses"))),
            ]
        })
        .collect();
    if json {
        let objects: Vec<Value> =
            records.iter().map(|r| Value::Object(r.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect())).collect();
        say!("{}", render::json(&objects));
        return Ok(());
    }
    let headers = ["Agent ID", "Version", "Registered Time", "Slots", "Containers", "Resource Pool", "Enabled", "Draining", "Addresses"];
    let rows: Vec<Vec<Cell>> = records.iter().map(|r| r.iter().map(|(_, v)| cell(v)).collect()).collect();
    tabulate_or_csv(&headers, &rows, csv);
    Ok(())
}
