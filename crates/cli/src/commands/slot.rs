//! `det slot list`: every agent's slots, with the task occupying each (from `GET /api/v1/tasks`).

use std::collections::HashMap;

use clap::Subcommand;
use serde_json::{Value, json};

use super::Globals;
use super::agent::{cell, fetch_agents, joined, local_id};
use super::task::fetch_tasks;
use super::wire::{connect, text};
use crate::error::CliError;
use crate::output::tabulate_or_csv;
use crate::table::Cell;
use crate::{render, say};

const NO_PERMISSIONS: &str = "NO PERMISSIONS";

#[derive(Debug, Subcommand)]
pub enum SlotCommand {
    /// list slots in cluster
    #[command(visible_alias = "ls")]
    List {
        /// print as CSV
        #[arg(long, conflicts_with = "json")]
        csv: bool,
        /// print as JSON
        #[arg(long)]
        json: bool,
    },
    /// enable slot on agent
    Enable {
        /// agent ID
        agent_id: String,
        /// slot ID
        slot_id: u32,
    },
    /// disable slot on agent
    Disable {
        /// agent ID
        agent_id: String,
        /// slot ID
        slot_id: u32,
    },
}

/// `det slot` alone lists slots, as upstream's `is_default` subcommand does.
pub fn run(g: &Globals, cmd: Option<SlotCommand>) -> Result<(), CliError> {
    match cmd.unwrap_or(SlotCommand::List { csv: false, json: false }) {
        SlotCommand::List { csv, json } => list(g, csv, json || g.json),
        SlotCommand::Enable { agent_id, slot_id } => super::agent_control::patch_slot(g, true, &agent_id, slot_id),
        SlotCommand::Disable { agent_id, slot_id } => super::agent_control::patch_slot(g, false, &agent_id, slot_id),
    }
}

/// The `devicev1Type` as upstream names it in this table.
fn device_type(device: Option<&Value>) -> &'static str {
    match device.map(|d| text(d, "type")) {
        Some("TYPE_CUDA") => "cuda",
        Some("TYPE_ROCM") => "rocm",
        Some("TYPE_CPU") => "cpu",
        _ => "unknown",
    }
}

/// Container id → (task name, allocation id), from the tasks' resources.
type Occupants = HashMap<String, (String, String)>;

fn task_name(occupants: &Occupants, container: Option<&Value>) -> String {
    let Some(c) = container else { return "FREE".to_owned() };
    if c.get("permissionDenied").and_then(Value::as_bool).unwrap_or(false) {
        return NO_PERMISSIONS.to_owned();
    }
    let id = text(c, "id");
    if let Some((name, _)) = occupants.get(id) {
        return name.clone();
    }
    if id.contains("determined-master-deployment") || id.contains("determined-db-deployment") {
        return format!("Determined System Task: {id}");
    }
    if id.contains("dispatcherrm-inuse-slot-placeholder") {
        return String::new();
    }
    format!("Non-Determined Task: {id}")
}

fn list(g: &Globals, csv: bool, json: bool) -> Result<(), CliError> {
    let client = connect(g)?;
    let tasks = fetch_tasks(&client)?;
    let agents = fetch_agents(&client)?;
    let mut occupants = Occupants::new();
    for t in tasks.values() {
        for r in t.resources.iter().flatten() {
            if let Some(container) = r.container_id.as_ref().filter(|c| !c.is_empty()) {
                occupants.insert(container.clone(), (t.name.clone(), t.allocation_id.clone()));
            }
        }
    }
    let mut records: Vec<Vec<(&str, Value)>> = Vec::new();
    for agent in &agents {
        let Some(slots) = agent.get("slots").and_then(Value::as_object) else { continue };
        for slot in slots.values() {
            let container = slot.get("container").filter(|c| !c.is_null());
            let device = slot.get("device").filter(|d| !d.is_null());
            let allocation = match container {
                Some(c) => occupants.get(text(c, "id")).map_or_else(|| "OCCUPIED".to_owned(), |(_, a)| a.clone()),
                None => "FREE".to_owned(),
            };
            records.push(vec![
                ("agent_id", json!(local_id(text(agent, "id")))),
                ("resource_pools", json!(joined(agent, "resourcePools"))),
                ("slot_id", json!(local_id(text(slot, "id")))),
                ("enabled", slot.get("enabled").cloned().unwrap_or(Value::Null)),
                ("draining", slot.get("draining").cloned().unwrap_or(Value::Null)),
                ("allocation_id", json!(allocation)),
                ("task_name", json!(task_name(&occupants, container))),
                ("type", json!(device_type(device))),
                ("device", device.and_then(|d| d.get("brand")).cloned().unwrap_or(Value::Null)),
            ]);
        }
    }
    if json {
        let objects: Vec<Value> =
            records.iter().map(|r| Value::Object(r.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect())).collect();
        say!("{}", render::json(&objects));
        return Ok(());
    }
    let headers = ["Agent ID", "Resource Pool", "Slot ID", "Enabled", "Draining", "Allocation ID", "Task Name", "Type", "Device"];
    let rows: Vec<Vec<Cell>> = records.iter().map(|r| r.iter().map(|(_, v)| cell(v)).collect()).collect();
    tabulate_or_csv(&headers, &rows, csv);
    Ok(())
}
