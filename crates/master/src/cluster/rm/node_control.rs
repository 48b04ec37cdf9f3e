//! Admin commands on nodes (agents): enable, disable with or without drain, and enable or disable
//! one slot — what the resource manager is asked, what it answers, and how the answer is stored.
//! The decisions themselves are the scheduler's (`resolute_scheduler::Scheduler::set_agent_mode`).

use resolute_scheduler::AgentMode;
use resolute_store::AgentControlRecord;

/// What an admin asks of a node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeAction {
    Enable,
    /// `drain`: let its work finish instead of evicting it.
    Disable {
        drain: bool,
    },
    EnableSlot(u32),
    DisableSlot(u32),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeCommand {
    pub node: String,
    pub action: NodeAction,
}

/// The outcome of a command: the node's control to store, and the allocations to send away.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeControlled {
    pub record: AgentControlRecord,
    /// Preemptible allocations: raise their preemption signal (they checkpoint and exit).
    pub preempt: Vec<String>,
    /// Others: kill them.
    pub kill: Vec<String>,
}

/// Why a command was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ControlError {
    /// No such agent is registered, or it has no such slot.
    #[error("{0}")]
    NotFound(String),
    #[error("storing the agent's control failed: {0}")]
    Store(String),
    #[error("the cluster loop is not running")]
    Unavailable,
}

pub fn mode_name(mode: AgentMode) -> &'static str {
    match mode {
        AgentMode::Enabled => "enabled",
        AgentMode::Draining => "draining",
        AgentMode::Disabled => "disabled",
    }
}

/// A stored mode; anything unknown reads as enabled (the agent takes work, as a new one would).
pub fn parse_mode(name: &str) -> AgentMode {
    match name {
        "draining" => AgentMode::Draining,
        "disabled" => AgentMode::Disabled,
        _ => AgentMode::Enabled,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_round_trip_through_their_stored_names() {
        for mode in [AgentMode::Enabled, AgentMode::Draining, AgentMode::Disabled] {
            assert_eq!(parse_mode(mode_name(mode)), mode);
        }
        assert_eq!(parse_mode("bogus"), AgentMode::Enabled);
    }
}
