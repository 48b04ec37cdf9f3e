//! What a trial's `log_policies` do once a pattern matched one of its log lines (the matching
//! happens where logs are ingested, `services/log_policies.rs`): `cancel_retries` makes the trial's
//! next failure final, `exclude_node` keeps its next runs off the node the line came from. Each
//! decision is written into the trial's log once, naming the policy.

use std::collections::BTreeSet;

use resolute_expconf::LogAction;

use crate::cluster::orchestrator::{LoopResult, Orchestrator};

/// What the trial's log policies decided so far (kept for the master's lifetime).
#[derive(Clone, Debug, Default)]
pub(in crate::cluster) struct LogPolicyState {
    /// The policy (as shown to the user) that cancelled the trial's retries.
    pub cancel_retries: Option<String>,
    /// Nodes the trial's runs are no longer placed on.
    pub excluded_nodes: BTreeSet<String>,
    /// Where the current run was placed (the nodes an `exclude_node` match without a known
    /// origin excludes).
    pub placed_on: Vec<String>,
}

/// A policy that fired, as the ingestion side reports it.
#[derive(Clone, Debug)]
pub struct FiredLogPolicy {
    /// `"name" (pattern `…`)`: how the trial's log names it.
    pub policy: String,
    pub action: LogAction,
    /// The allocation whose line matched, when the line said.
    pub allocation_id: Option<String>,
    /// The agent the line came from, when known.
    pub node: Option<String>,
}

impl Orchestrator {
    pub(in crate::cluster) async fn log_policy_fired(&mut self, trial_id: i32, fired: FiredLogPolicy) -> LoopResult<()> {
        let Some(trial) = self.trials.get_mut(&trial_id) else { return Ok(()) };
        // A line of an earlier run arriving late changes nothing about the current one.
        if let (Some(line_allocation), Some(current)) = (&fired.allocation_id, &trial.allocation)
            && line_allocation != current
        {
            return Ok(());
        }
        let allocation = fired.allocation_id.clone().or_else(|| trial.allocation.clone());
        let task_id = trial.task_id.clone();
        let message = match fired.action {
            LogAction::CancelRetries => {
                if trial.log_policy.cancel_retries.is_some() {
                    return Ok(());
                }
                trial.log_policy.cancel_retries = Some(fired.policy.clone());
                format!("log policy {} matched: cancel_retries, the trial will not be restarted if it fails", fired.policy)
            }
            LogAction::ExcludeNode => {
                let nodes = match &fired.node {
                    Some(node) => vec![node.clone()],
                    None => trial.log_policy.placed_on.clone(),
                };
                let new: Vec<String> = nodes.into_iter().filter(|n| trial.log_policy.excluded_nodes.insert(n.clone())).collect();
                if new.is_empty() {
                    return Ok(());
                }
                format!("log policy {} matched: exclude_node, the trial's next runs will not be placed on {}", fired.policy, new.join(", "))
            }
        };
        tracing::info!(trial = trial_id, "{message}");
        self.master_log_line(&task_id, allocation.as_deref(), &message).await
    }
}
