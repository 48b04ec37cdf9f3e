//! What a scheduling pass tells the master: allocations to start (with their placements),
//! allocations to preempt gracefully, and why every other request still waits.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::fit::Agents;
use crate::ids::{AgentId, AllocationId, SlotId};
use crate::state::Queued;

/// The slots an allocation takes on one agent. Zero-slot (aux) allocations get one placement
/// with no slot ids: an aux container on that agent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    pub agent_id: AgentId,
    pub slot_ids: Vec<SlotId>,
}

/// Start this allocation: one container per placement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assignment {
    pub allocation_id: AllocationId,
    pub placements: Vec<Placement>,
    /// Scheduled below a higher-priority request that could not fit (job state
    /// `SCHEDULED_BACKFILLED`); only preemptible requests are backfilled.
    pub backfilled: bool,
}

/// A request that is still queued after the pass, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Waiting {
    pub allocation_id: AllocationId,
    pub reason: WaitReason,
}

/// The outcome of one [`Scheduler::schedule`](crate::Scheduler::schedule) call.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Decisions {
    /// Already applied: the slots are held from now on.
    pub assignments: Vec<Assignment>,
    /// Newly decided graceful preemptions: the master flips each allocation's preemption signal
    /// and calls `release` once it exits. Each allocation is reported once.
    pub preemptions: Vec<AllocationId>,
    /// Every request still queued after the pass, with its reason, in queue order.
    pub waiting: Vec<Waiting>,
}

impl Decisions {
    pub fn is_empty(&self) -> bool {
        self.assignments.is_empty() && self.preemptions.is_empty()
    }
}

/// What a policy decided in one pass, before it is applied to the state. Requests are named by
/// their index ([`Queued::index`]: their place in the pool's map of requests), so applying the
/// pass walks that map once and looks nothing up by id (issue 13).
#[derive(Debug)]
pub(crate) struct PassOutcome {
    pub assignments: Vec<Assignment>,
    /// The request index of each assignment.
    pub assigned: Vec<usize>,
    /// May name allocations already being preempted; applying skips those.
    pub preemptions: Vec<AllocationId>,
    /// Each request's reason to wait (the last one given), by request index.
    pub waiting: Vec<Option<WaitReason>>,
    /// The indices of the requests that were queued when the pass began, in queue order.
    pub queued: Vec<usize>,
    /// The pool's agents with every assignment already held, from a policy that worked on the
    /// agents themselves (fair share): applying puts them back instead of holding again. `None`:
    /// the pool's agents are untouched and applying holds each assignment.
    pub agents: Option<Agents>,
}

impl PassOutcome {
    /// An empty outcome for a pass over `order` (every request of the pool, in queue order).
    pub fn new(order: &[Queued<'_>]) -> Self {
        PassOutcome {
            assignments: Vec::new(),
            assigned: Vec::new(),
            preemptions: Vec::new(),
            waiting: vec![None; order.len()],
            queued: order.iter().filter(|q| !q.entry.state.is_scheduled()).map(|q| q.index).collect(),
            agents: None,
        }
    }

    /// Starts `queued` on `placements`.
    pub fn assign(&mut self, queued: Queued<'_>, placements: Vec<Placement>, backfilled: bool) {
        self.assignments.push(Assignment { allocation_id: queued.entry.id().clone(), placements, backfilled });
        self.assigned.push(queued.index);
    }

    /// `queued` waits for `reason` (replacing any reason given before).
    pub fn wait(&mut self, queued: Queued<'_>, reason: WaitReason) {
        self.waiting[queued.index] = Some(reason);
    }
}

/// Why a request is not scheduled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WaitReason {
    /// No enabled agent in the pool carries the request's label.
    NoEligibleAgents { label: String },
    /// Every agent that could take it is one the request excludes (`exclude_node` log policy).
    AllAgentsExcluded { excluded: Vec<String> },
    /// More slots than all enabled agents together have.
    ExceedsPoolCapacity { requested: u32, capacity: u32 },
    /// A single-agent request larger than the largest agent.
    ExceedsLargestAgent { requested: u32, largest: u32 },
    /// Too big for one agent, and not a multiple of any agent size with enough such agents.
    NoGangShape { requested: u32, slots_per_agent: Vec<u32> },
    /// Every eligible agent already runs its maximum of aux containers.
    AuxCapacityFull { max_aux_containers_per_agent: u32 },
    /// The pool could take it, but not with the slots free right now.
    InsufficientFreeSlots { requested: u32, free: u32 },
    /// It would fit, but a higher-priority request is waiting and it may not be backfilled.
    BlockedByHigherPriority,
    /// Preemptions are under way to make room for it.
    AwaitingPreemption,
    /// Fair share: its job already uses (or was offered) all the slots its weight allows.
    OverFairShare { share: u32, used: u32 },
    /// Its job holds `used` slots and starting it would pass the job's `max_slots`.
    MaxSlotsReached { max_slots: u32, used: u32 },
}

impl WaitReason {
    /// True when the request cannot fit the pool as it is now whatever gets released: it waits
    /// until agents join or are enabled, and it never blocks lower-priority work.
    pub fn can_never_fit(&self) -> bool {
        matches!(
            self,
            WaitReason::NoEligibleAgents { .. }
                | WaitReason::AllAgentsExcluded { .. }
                | WaitReason::ExceedsPoolCapacity { .. }
                | WaitReason::ExceedsLargestAgent { .. }
                | WaitReason::NoGangShape { .. }
        )
    }
}

impl fmt::Display for WaitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitReason::NoEligibleAgents { label } if label.is_empty() => {
                write!(f, "can never fit: no enabled agent in the resource pool; add or enable an agent")
            }
            WaitReason::NoEligibleAgents { label } => {
                write!(f, "can never fit: no enabled agent in the resource pool has label {label:?}")
            }
            WaitReason::AllAgentsExcluded { excluded } => write!(
                f,
                "can never fit: every eligible agent is excluded for this trial by an exclude_node log policy ({}); add or enable another agent",
                excluded.join(", ")
            ),
            WaitReason::ExceedsPoolCapacity { requested, capacity } => write!(
                f,
                "can never fit: requests {requested} slots but the resource pool has {capacity} usable slots; \
                 lower the slots or add agents"
            ),
            WaitReason::ExceedsLargestAgent { requested, largest } => {
                write!(f, "can never fit: requests {requested} slots on a single agent but the largest agent has {largest}")
            }
            WaitReason::NoGangShape { requested, slots_per_agent } => write!(
                f,
                "can never fit: {requested} slots do not fit one agent, and multi-agent placement needs a multiple of \
                 the slots per agent ({slots_per_agent:?}) with enough such agents"
            ),
            WaitReason::AuxCapacityFull { max_aux_containers_per_agent } => write!(
                f,
                "every eligible agent already runs {max_aux_containers_per_agent} aux containers \
                 (max_aux_containers_per_agent)"
            ),
            WaitReason::InsufficientFreeSlots { requested, free } => {
                write!(f, "waiting for {requested} slots; {free} free on eligible agents")
            }
            WaitReason::BlockedByHigherPriority => write!(f, "waiting behind a higher-priority request"),
            WaitReason::AwaitingPreemption => write!(f, "waiting for preempted allocations to release their slots"),
            WaitReason::OverFairShare { share, used } => {
                write!(f, "its job uses {used} of the {share} slots its fair share allows")
            }
            WaitReason::MaxSlotsReached { max_slots, used } => {
                write!(f, "max_slots {max_slots} reached: its job already holds {used} slots")
            }
        }
    }
}
