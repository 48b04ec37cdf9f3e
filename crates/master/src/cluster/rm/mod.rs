//! The resource-manager seam: how the loop gets processes run without knowing where.
//!
//! The loop submits a [`ResourceRequest`] per allocation, asks for a scheduling pass, starts the
//! assigned allocations with one [`StartTask`] per [`Placement`], and signals or kills them; the
//! resource manager reports back [`RmEvent`]s (running, exited — a lost process is an exit with a
//! failure). Today's implementation is [`AgentResourceManager`] (agents over websockets, one
//! scheduler per pool); Kubernetes and Slurm are the next ones, so nothing outside this module may
//! assume agents. Its own inputs (agent connections, its timers) arrive as [`RmInput`].

mod agents;
pub(super) mod gang;
mod job_queue;
pub mod node_control;
pub(super) mod pools;

use std::collections::BTreeMap;

use resolute_api::agent_protocol::{StartTask, TaskExitInfo};

pub use agents::{AgentInput, AgentResourceManager};
pub use job_queue::{JobQueueView, JobUpdate, QueueOrderChanges};
pub use node_control::{ControlError, NodeAction, NodeCommand, NodeControlled};

use super::view::ClusterView;

/// What an allocation asks for.
#[derive(Clone, Debug)]
pub struct ResourceRequest {
    pub allocation_id: String,
    pub task_id: String,
    pub job_id: String,
    /// The pool it names; empty: the default compute pool (aux pool for zero slots).
    pub pool: String,
    /// 0 for an aux task (a command, TensorBoard or notebook with no slots).
    pub slots: u32,
    /// 1 (highest) … 99; `None`: its pool's default priority.
    pub priority: Option<u32>,
    pub weight: f64,
    /// The most slots its job may hold at once (`resources.max_slots`; fair share enforces it).
    pub max_slots: Option<u32>,
    /// Whether the scheduler may preempt it (trials checkpoint; interactive tasks cannot).
    pub preemptible: bool,
    /// Nodes it must not be placed on (a trial's `exclude_node` log policy fired there).
    pub excluded_nodes: Vec<String>,
}

/// Where one process of an allocation runs: a node (an agent, later a pod or a Slurm node) and
/// the slots it holds there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub node: String,
    pub slot_ids: Vec<u32>,
    /// `cpu`, `cuda` or `rocm`: the kind of the slots (for per-device environment variables).
    pub device_type: String,
}

/// An allocation the scheduling pass placed.
#[derive(Clone, Debug)]
pub struct Assignment {
    pub allocation_id: String,
    /// The resource pool it was placed in.
    pub pool: String,
    pub placements: Vec<Placement>,
}

/// The outcome of a scheduling pass.
#[derive(Debug, Default)]
pub struct Decisions {
    pub assignments: Vec<Assignment>,
    /// Allocations to stop gracefully so others fit.
    pub preemptions: Vec<String>,
}

/// Something the resource manager learned about an allocation's processes.
#[derive(Clone, Debug, PartialEq)]
pub enum RmEvent {
    Running {
        allocation_id: String,
        container_id: String,
        /// Where the process's ports can be reached (`host:port` by port name).
        ports: BTreeMap<String, String>,
    },
    /// The process said it is ready (its readiness pattern appeared in its output).
    Ready { allocation_id: String, container_id: String },
    /// A process that outlived a master restart was adopted again (`reattach.rs`): it runs, its
    /// ports are where they were, `ready` says whether its readiness line was already seen, and
    /// `slots` is how many slots this process holds (a gang's processes come back one by one).
    Reattached { allocation_id: String, container_id: String, ports: BTreeMap<String, String>, ready: bool, slots: u32 },
    /// The process ended, or was lost (`exit.failure` says why).
    Exited { allocation_id: String, container_id: String, exit: TaskExitInfo },
}

/// Inputs only a particular resource manager understands, routed to it by the loop.
#[derive(Debug)]
pub enum RmInput {
    Agent(AgentInput),
}

#[derive(Debug, thiserror::Error)]
pub enum RmError {
    #[error("{0}")]
    Scheduler(#[from] resolute_scheduler::SchedulerError),
    #[error("{0}")]
    Unavailable(String),
}

/// A resource manager, driven by the single writer loop (so `&mut self`, no locking).
pub trait ResourceManager: Send + Sync {
    /// Queues a request.
    fn submit(&mut self, request: ResourceRequest) -> Result<(), RmError>;
    /// Forgets an allocation, queued or ended, and frees what it held.
    fn release(&mut self, allocation_id: &str);
    /// One scheduling pass over every pool.
    fn schedule(&mut self) -> Decisions;
    /// Starts an assigned allocation's processes, one per placement (`tasks` in placement order).
    fn start(&mut self, allocation_id: &str, tasks: Vec<(Placement, StartTask)>) -> Result<(), RmError>;
    /// After a master restart: the allocation was placed by the previous master and its processes
    /// may still run; adopt them when their node reports them ([`RmEvent::Reattached`]).
    fn await_reattach(&mut self, request: ResourceRequest);
    /// The reattach window closed: processes of the allocation that show up later are orphans.
    fn give_up_reattach(&mut self, allocation_id: &str);
    /// Stops the allocation's processes at once.
    fn kill(&mut self, allocation_id: &str);
    /// Handles an input of its own and reports what it means for allocations.
    fn handle(&mut self, input: RmInput) -> Vec<RmEvent>;
    /// Applies an admin's command to a node (enable, disable or drain it, enable or disable a
    /// slot); says what to store and which allocations to send away.
    fn control(&mut self, command: &NodeCommand) -> Result<NodeControlled, ControlError>;
    /// Node controls stored by an earlier master, applied as the nodes register.
    fn restore_controls(&mut self, controls: Vec<resolute_store::AgentControlRecord>);
    /// The cluster as the HTTP layer shows it.
    fn view(&self) -> ClusterView;
    /// Every pool's jobs in scheduling order, with why each waits.
    fn job_queue(&self) -> Vec<JobQueueView>;
    /// Changes a queued or running job's priority, weight, `max_slots` or place in the queue;
    /// takes effect at the next pass.
    fn update_job(&mut self, job_id: &str, update: &JobUpdate) -> Result<(), RmError>;
    /// The job has finished (its experiment or task ended): forget its place in the queue,
    /// which it keeps between allocations until then.
    fn forget_job(&mut self, job_id: &str);
    /// After a master restart, before anything is queued: the queues' order an earlier master
    /// stored, so every job takes its old place and new ones queue behind.
    fn restore_queue_order(&mut self, positions: Vec<resolute_store::JobQueuePositionRecord>);
    /// The queues' order changes since the last call, for the loop to store.
    fn take_queue_order_changes(&mut self) -> QueueOrderChanges;
}
