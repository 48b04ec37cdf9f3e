//! `det resource-pool list` (alias `rp ls`): the master's resource pools from
//! `GET /api/v1/resource-pools` — scheduler, preemption, default priority, agents, slots and aux
//! containers, and which pools are the defaults. Upstream's CLI has no listing (only workspace
//! bindings under the same name); this one is ours.

use clap::Subcommand;
use serde_json::{Value, json};

use super::Globals;
use super::agent::cell;
use super::wire::{connect, text};
use crate::error::CliError;
use crate::output::tabulate_or_csv;
use crate::table::Cell;
use crate::{render, say};

#[derive(Debug, Subcommand)]
pub enum ResourcePoolCommand {
    /// list resource pools
    #[command(visible_alias = "ls")]
    List {
        /// print as CSV
        #[arg(long, conflicts_with = "json")]
        csv: bool,
        /// print as JSON
        #[arg(long)]
        json: bool,
    },
}

/// `det resource-pool` alone lists the pools.
pub fn run(g: &Globals, cmd: Option<ResourcePoolCommand>) -> Result<(), CliError> {
    match cmd.unwrap_or(ResourcePoolCommand::List { csv: false, json: false }) {
        ResourcePoolCommand::List { csv, json } => list(g, csv, json || g.json),
    }
}

/// `SCHEDULER_TYPE_FAIR_SHARE` → `fair_share`, as master.yaml spells it.
fn short(value: &str, prefix: &str) -> String {
    value.strip_prefix(prefix).unwrap_or(value).to_ascii_lowercase()
}

fn list(g: &Globals, csv: bool, json: bool) -> Result<(), CliError> {
    let resp: Value = connect(g)?.get("api/v1/resource-pools?limit=0")?;
    let pools = resp.get("resourcePools").and_then(Value::as_array).cloned().unwrap_or_default();
    let records: Vec<Vec<(&str, Value)>> = pools
        .iter()
        .map(|p| {
            let priority = &p["details"]["priorityScheduler"];
            let is_priority = text(p, "schedulerType") == "SCHEDULER_TYPE_PRIORITY";
            let defaults: Vec<&str> = [("compute", "defaultComputePool"), ("aux", "defaultAuxPool")]
                .into_iter()
                .filter(|(_, key)| p.get(*key).and_then(Value::as_bool) == Some(true))
                .map(|(name, _)| name)
                .collect();
            vec![
                ("name", json!(text(p, "name"))),
                ("description", json!(text(p, "description"))),
                ("scheduler", json!(short(text(p, "schedulerType"), "SCHEDULER_TYPE_"))),
                // Fair share always preempts jobs over their share.
                ("preemption", if is_priority { priority.get("preemption").cloned().unwrap_or(json!(false)) } else { json!(true) }),
                (
                    "default_priority",
                    if is_priority { priority.get("defaultPriority").cloned().unwrap_or(Value::Null) } else { Value::Null },
                ),
                ("fitting_policy", json!(short(text(p, "schedulerFittingPolicy"), "FITTING_POLICY_"))),
                ("agents", p.get("numAgents").cloned().unwrap_or(json!(0))),
                ("slots_used", p.get("slotsUsed").cloned().unwrap_or(json!(0))),
                ("slots_available", p.get("slotsAvailable").cloned().unwrap_or(json!(0))),
                ("slot_type", json!(short(text(p, "slotType"), "TYPE_"))),
                ("aux_containers_running", p.get("auxContainersRunning").cloned().unwrap_or(json!(0))),
                ("aux_container_capacity", p.get("auxContainerCapacity").cloned().unwrap_or(json!(0))),
                ("default_for", json!(defaults.join(", "))),
            ]
        })
        .collect();
    if json {
        let objects: Vec<Value> =
            records.iter().map(|r| Value::Object(r.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect())).collect();
        say!("{}", render::json(&objects));
        return Ok(());
    }
    let headers = [
        "Name",
        "Description",
        "Scheduler",
        "Preemption",
        "Default Priority",
        "Fitting Policy",
        "Agents",
        "Slots Used",
        "Slots Available",
        "Slot Type",
        "Aux Running",
        "Aux Capacity",
        "Default For",
    ];
    let rows: Vec<Vec<Cell>> = records.iter().map(|r| r.iter().map(|(_, v)| cell(v)).collect()).collect();
    tabulate_or_csv(&headers, &rows, csv);
    Ok(())
}
