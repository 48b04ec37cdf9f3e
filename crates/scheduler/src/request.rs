//! Allocation requests: what the master submits, the state the scheduler keeps for each, and the
//! job group (priority, weight, queue position) requests are scheduled under.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::decisions::{Placement, WaitReason};
use crate::error::SchedulerError;
use crate::ids::{AgentId, AllocationId, JobId, LogicalTime, TaskId};

/// The highest priority (scheduled first).
pub const MIN_PRIORITY: u32 = 1;
/// The lowest priority.
pub const MAX_PRIORITY: u32 = 99;
/// Upstream's default priority.
pub const DEFAULT_PRIORITY: u32 = 42;
/// The default fair-share weight.
pub const DEFAULT_WEIGHT: f64 = 1.0;

/// A request for slots for one allocation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AllocationRequest {
    pub allocation_id: AllocationId,
    pub task_id: TaskId,
    pub job_id: JobId,
    /// 0 for aux tasks (tensorboards, CPU commands, GC): they take an aux container, no slot.
    pub slots: u32,
    /// 1 (highest) ..= 99 (lowest). Sets the job's priority when this is the job's first request;
    /// afterwards the job's priority changes only through `set_priority`.
    pub priority: u32,
    /// Fair-share weight, > 0. Like `priority`, it seeds the job's weight on first sight.
    pub weight: f64,
    pub preemptible: bool,
    /// Never split across agents, even if a multi-agent (gang) placement would fit.
    pub single_agent: bool,
    /// Injected by the master; orders requests within a priority.
    pub submitted_at: LogicalTime,
    pub resource_pool: String,
    /// Only agents with exactly this label take the request ("" = unlabelled agents).
    pub label: String,
    /// Agents this request must not be placed on (a trial's `exclude_node` log policy fired there).
    #[serde(default)]
    pub excluded_agents: BTreeSet<AgentId>,
    /// The most slots the job may hold at once (`resources.max_slots`), enforced by fair share
    /// (as upstream: not by the priority policy). Like `priority`, it seeds the job's on first
    /// sight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_slots: Option<u32>,
}

impl AllocationRequest {
    /// A preemptible request with the default priority and weight and no label.
    pub fn new(
        allocation_id: impl Into<AllocationId>,
        task_id: impl Into<TaskId>,
        job_id: impl Into<JobId>,
        resource_pool: impl Into<String>,
        slots: u32,
        submitted_at: LogicalTime,
    ) -> Self {
        AllocationRequest {
            allocation_id: allocation_id.into(),
            task_id: task_id.into(),
            job_id: job_id.into(),
            slots,
            priority: DEFAULT_PRIORITY,
            weight: DEFAULT_WEIGHT,
            preemptible: true,
            single_agent: false,
            submitted_at,
            resource_pool: resource_pool.into(),
            label: String::new(),
            excluded_agents: BTreeSet::new(),
            max_slots: None,
        }
    }

    pub fn with_max_slots(mut self, max_slots: Option<u32>) -> Self {
        self.max_slots = max_slots;
        self
    }

    pub fn with_priority(mut self, priority: u32) -> Self {
        self.priority = priority;
        self
    }

    pub fn with_weight(mut self, weight: f64) -> Self {
        self.weight = weight;
        self
    }

    pub fn with_preemptible(mut self, preemptible: bool) -> Self {
        self.preemptible = preemptible;
        self
    }

    pub fn with_single_agent(mut self, single_agent: bool) -> Self {
        self.single_agent = single_agent;
        self
    }

    pub fn excluding(mut self, agents: impl IntoIterator<Item = AgentId>) -> Self {
        self.excluded_agents.extend(agents);
        self
    }

    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }
}

pub(crate) fn validate_priority(priority: u32) -> Result<u32, SchedulerError> {
    if (MIN_PRIORITY..=MAX_PRIORITY).contains(&priority) { Ok(priority) } else { Err(SchedulerError::InvalidPriority(priority)) }
}

pub(crate) fn validate_weight(weight: f64) -> Result<f64, SchedulerError> {
    if weight.is_finite() && weight > 0.0 { Ok(weight) } else { Err(SchedulerError::InvalidWeight(weight)) }
}

/// Where one allocation stands.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AllocationState {
    /// Waiting for slots; `reason` is set by the latest scheduling pass.
    Queued { reason: Option<WaitReason> },
    /// Holding slots until the master releases it.
    Scheduled {
        placements: Vec<Placement>,
        /// Started below a blocked higher-priority request (job state `SCHEDULED_BACKFILLED`).
        backfilled: bool,
        assigned_at: LogicalTime,
        /// A preemption was decided; the slots stay held until `release`.
        preempting: bool,
        /// An agent it ran on was removed; what it held elsewhere stays held until `release`.
        resources_lost: bool,
    },
}

impl AllocationState {
    pub fn is_scheduled(&self) -> bool {
        matches!(self, AllocationState::Scheduled { .. })
    }
}

/// A submitted request and its state.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry {
    pub request: AllocationRequest,
    /// Submission counter: breaks ties between equal `submitted_at` in call order.
    pub seq: u64,
    pub state: AllocationState,
}

impl Entry {
    pub fn id(&self) -> &AllocationId {
        &self.request.allocation_id
    }

    pub fn is_zero_slot(&self) -> bool {
        self.request.slots == 0
    }

    pub fn is_preempting(&self) -> bool {
        matches!(self.state, AllocationState::Scheduled { preempting: true, .. })
    }

    /// Scheduled, preemptible, and neither already dying nor already being preempted.
    pub fn is_running_preemptible(&self) -> bool {
        self.request.preemptible && matches!(self.state, AllocationState::Scheduled { resources_lost: false, .. })
    }

    /// Holding slots that count towards its job's share (not on its way out).
    pub fn is_active(&self) -> bool {
        matches!(self.state, AllocationState::Scheduled { preempting: false, resources_lost: false, .. })
    }
}

/// A job: the group whose priority and weight its requests share.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct JobGroup {
    pub priority: u32,
    pub weight: f64,
    /// The first request's `submitted_at` and counter: the job's place in the queue.
    pub registered_at: LogicalTime,
    pub seq: u64,
    /// At most this many slots held by the job's allocations at once (`resources.max_slots`);
    /// fair share never offers the job more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_slots: Option<u32>,
    #[serde(skip)]
    pub members: usize,
}

impl JobGroup {
    /// Queue position among jobs of the same priority: older first.
    pub fn position(&self) -> (LogicalTime, u64) {
        (self.registered_at, self.seq)
    }
}
