//! Typed errors for inputs the scheduler cannot accept. A request that is valid but does not fit
//! is not an error: it waits with a [`WaitReason`](crate::WaitReason).

use thiserror::Error;

use crate::ids::{AgentId, AllocationId, JobId, SlotId};

#[derive(Debug, Clone, PartialEq, Error)]
pub enum SchedulerError {
    #[error("unknown scheduler type {0:?}: use \"priority\" or \"fair_share\"")]
    UnknownPolicy(String),
    #[error("scheduler type {0:?} was removed upstream: use \"priority\" or \"fair_share\"")]
    RemovedPolicy(String),
    #[error("unknown fitting policy {0:?}: use \"best\" or \"worst\"")]
    UnknownFittingPolicy(String),
    #[error("agent {0} is already registered in this resource pool")]
    DuplicateAgent(AgentId),
    #[error("agent {agent} reports slot {slot} twice")]
    DuplicateSlot { agent: AgentId, slot: SlotId },
    #[error("unknown agent {0}")]
    UnknownAgent(AgentId),
    #[error("agent {agent} has no slot {slot}")]
    UnknownSlot { agent: AgentId, slot: SlotId },
    #[error("{what} {id} belongs to resource pool {actual:?}, but this scheduler runs pool {expected:?}")]
    WrongResourcePool { what: &'static str, id: String, expected: String, actual: String },
    #[error("slot {slot} of agent {agent} is held by another allocation")]
    SlotHeld { agent: AgentId, slot: SlotId },
    #[error("allocation {0} was already submitted")]
    DuplicateAllocation(AllocationId),
    #[error("unknown allocation {0}")]
    UnknownAllocation(AllocationId),
    #[error("unknown job {0}: it has no allocations in this resource pool")]
    UnknownJob(JobId),
    #[error("job {0} cannot be moved ahead of or behind itself: name another job")]
    MoveAnchorIsSelf(JobId),
    #[error("max_slots 0 would never let job {0} run: use 1 or more, or no limit")]
    InvalidMaxSlots(JobId),
    #[error("priority {0} is out of range: use 1 (highest) to 99 (lowest)")]
    InvalidPriority(u32),
    #[error("weight {0} is invalid: use a finite number greater than 0")]
    InvalidWeight(f64),
}
