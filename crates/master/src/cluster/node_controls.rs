//! The loop's side of agent control: applies an admin's command through the resource manager,
//! stores the result, sends the evicted allocations away (preemption signal for trials, kill for
//! the rest) and republishes the view before answering, so the caller reads the new state.

use super::orchestrator::Orchestrator;
use super::rm::{ControlError, NodeCommand};

impl Orchestrator {
    pub(super) async fn node_control(&mut self, command: NodeCommand) -> Result<(), ControlError> {
        let done = self.rm.control(&command)?;
        self.store.save_agent_control(done.record).await.map_err(|e| ControlError::Store(e.to_string()))?;
        for allocation_id in &done.preempt {
            tracing::info!(allocation = %allocation_id, agent = %command.node, "preempting: its agent was disabled");
            self.preempt_allocation(allocation_id);
        }
        for allocation_id in &done.kill {
            tracing::info!(allocation = %allocation_id, agent = %command.node, "killing: its agent was disabled");
            self.kill_allocation(allocation_id);
        }
        self.handle.publish(self.rm.view());
        Ok(())
    }

    /// Hands the stored agent controls to the resource manager (at start, before agents connect).
    pub(super) async fn restore_node_controls(&mut self) -> Result<(), resolute_store::StoreError> {
        let controls = self.store.agent_controls().await?;
        self.rm.restore_controls(controls);
        Ok(())
    }
}
