//! Admin control of agents as stored: each agent's mode (enabled, draining, disabled) and its
//! disabled slots, read back when the master starts so the control survives restarts. A
//! supertrait of [`crate::Store`].

use async_trait::async_trait;

use crate::error::StoreResult;

/// One agent's stored control.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentControlRecord {
    pub agent_id: String,
    /// `enabled`, `draining` or `disabled`.
    pub mode: String,
    /// Slot (device) ids, ascending.
    pub disabled_slots: Vec<u32>,
    pub updated_ms: i64,
}

#[async_trait]
pub trait AgentControlStore: Send + Sync + 'static {
    /// Stores `record` in place of the agent's previous one.
    async fn save_agent_control(&self, record: AgentControlRecord) -> StoreResult<()>;
    /// Every stored control, by agent id.
    async fn agent_controls(&self) -> StoreResult<Vec<AgentControlRecord>>;
}
