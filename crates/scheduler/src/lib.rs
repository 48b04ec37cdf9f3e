//! The resource scheduler of a Resolute resource pool, after Determined's agent resource
//! manager: `priority` (default) and `fair_share` policies, `best`/`worst` fitting, gang
//! placement of multi-agent requests, graceful preemption and the job queue view.
//!
//! A [`Scheduler`] is a deterministic state machine with no I/O, clock or async. The master owns
//! one per pool inside its single writer loop: it reports agents ([`Scheduler::add_agent`],
//! [`Scheduler::disable_slot`], ...) and requests ([`Scheduler::submit`],
//! [`Scheduler::release`]), calls [`Scheduler::schedule`] with its logical time, and carries out
//! the [`Decisions`]: start [`Assignment`]s, signal preemptions, show [`WaitReason`]s.
//!
//! Invariants: a slot is held by at most one allocation; an allocation holds its slots from the
//! pass that assigns it until `release`, also while being preempted or after an agent of it is
//! lost; the same state and inputs always give the same decisions (ordered maps, ties broken by
//! id, submission counters).

mod adopt;
mod agent;
mod config;
mod control;
mod decisions;
mod error;
mod fair_share;
mod filling;
mod fit;
mod fit_cache;
mod free_index;
mod ids;
mod job_control;
mod job_order;
mod job_reason;
mod priority;
mod queue;
mod request;
mod scheduler;
pub mod sim;
mod snapshot;
mod state;

pub use agent::{AgentSpec, SlotSpec};
pub use config::{DEFAULT_MAX_AUX_CONTAINERS_PER_AGENT, FittingPolicy, SchedulerConfig, SchedulingPolicy};
pub use control::{AgentMode, AgentStatus, Eviction};
pub use decisions::{Assignment, Decisions, Placement, WaitReason, Waiting};
pub use error::SchedulerError;
pub use ids::{AgentId, AllocationId, DeviceType, JobId, LogicalTime, SlotId, TaskId};
pub use job_control::QueueMove;
pub use job_order::{JobPosition, PositionChange, RestoredOrder, restore_order};
pub use queue::{JobQueueEntry, JobState, PoolStats};
pub use request::{AllocationRequest, AllocationState, DEFAULT_PRIORITY, DEFAULT_WEIGHT, MAX_PRIORITY, MIN_PRIORITY};
pub use scheduler::Scheduler;
