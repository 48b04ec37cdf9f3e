//! `det agent enable|disable [--drain] [AGENT | --all]` and `det slot enable|disable AGENT SLOT`,
//! as upstream's CLI: the same calls, messages (on stderr for agents) and drain report.

use serde_json::{Value, json};

use super::Globals;
use super::agent::{fetch_agents, local_id};
use super::wire::{connect, text};
use crate::error::CliError;
use crate::say;

/// Enables or disables the named agent, or every agent with `all`; with `drain`, reports whether
/// tasks still run on the draining agents.
pub fn patch_agents(g: &Globals, enable: bool, agent_id: Option<&str>, all: bool, drain: bool) -> Result<(), CliError> {
    let action = if enable { "enable" } else { "disable" };
    if all && agent_id.is_some() {
        return Err(CliError::msg(format!("pass an agent id or --all, not both (see `det agent {action} --help`)")));
    }
    let client = connect(g)?;
    let ids: Vec<String> = match agent_id {
        Some(id) => vec![id.to_owned()],
        None if all => fetch_agents(&client)?.iter().map(|a| local_id(text(a, "id"))).collect(),
        None => return Err(CliError::msg(format!("Please pass agent id or --all option. See `det agent {action} --help` for details."))),
    };
    let drain = drain && !enable;
    for id in &ids {
        let body = if drain { json!({"drain": true}) } else { json!({}) };
        let _: Value = client.post(&format!("api/v1/agents/{}/{action}", path_segment(id)), &body)?;
        eprintln!("{} agent {id}.", if enable { "Enabled" } else { "Disabled" });
    }
    if drain {
        let busy = fetch_agents(&client)?.iter().any(|a| {
            ids.contains(&local_id(text(a, "id"))) && a.get("containers").and_then(Value::as_object).is_some_and(|c| !c.is_empty())
        });
        say!("{}", if busy { "Tasks still in progress on draining nodes." } else { "No tasks in progress on draining nodes." });
    }
    Ok(())
}

/// Enables or disables one slot of an agent.
pub fn patch_slot(g: &Globals, enable: bool, agent_id: &str, slot_id: u32) -> Result<(), CliError> {
    let action = if enable { "enable" } else { "disable" };
    let client = connect(g)?;
    let _: Value = client.post(&format!("api/v1/agents/{}/slots/{slot_id}/{action}", path_segment(agent_id)), &json!({}))?;
    say!("{} slot {slot_id} of agent {agent_id}", if enable { "Enabled" } else { "Disabled" });
    Ok(())
}

/// An agent id as one URL path segment (upstream quotes it the same way).
fn path_segment(id: &str) -> String {
    id.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::path_segment;

    #[test]
    fn agent_ids_are_one_path_segment() {
        assert_eq!(path_segment("gpu-node_1.local"), "gpu-node_1.local");
        assert_eq!(path_segment("a b/c"), "a%20b%2Fc");
    }
}
