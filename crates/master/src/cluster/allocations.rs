//! Allocations, whatever their task's kind: queueing one with the resource manager, starting it
//! where the scheduler placed it, following its processes, and ending it. What a start needs and
//! what an end means is the kind's ([`AllocationOwner`]): the trial kind in `trial/`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use resolute_api::agent_protocol::{DEFAULTS_STARTUP_HOOK, TaskExitInfo, TaskFile};
use resolute_store::{AllocationPatch, NewAllocation, db_now};

use super::orchestrator::{LoopResult, Orchestrator};
use super::rm::{Assignment, ResourceRequest, RmEvent};
use crate::domain::AllocationState;

/// The task an allocation runs for, which decides what its start and end mean.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum AllocationOwner {
    Trial(i32),
    /// A command, notebook, shell, TensorBoard or generic task, by task id.
    Task(String),
}

pub(super) struct AllocationRun {
    pub owner: AllocationOwner,
    /// Processes started (0 while queued).
    pub containers: usize,
    /// The resource manager reported the processes running (not just placed and starting).
    pub running: bool,
    pub preempted: bool,
    pub acknowledged: bool,
    /// Exits seen so far: `(container id, exit code, failure)`; the allocation ends when every
    /// started process has exited.
    pub exits: Vec<(String, Option<i32>, Option<String>)>,
    /// A previous master placed it; its processes have yet to reattach (`reattach.rs`).
    pub reattaching: bool,
    /// While reattaching: the slots it was placed with, and those each re-adopted process holds;
    /// it goes on only once they add up (`rm::gang::reattached_in_full`).
    pub reattach_slots: u32,
    pub reattached_slots: Vec<u32>,
    /// Its `preemption_timeout` deadline is armed (`preemption_timeout.rs`).
    pub preemption_deadline_armed: bool,
    /// The master killed it at that deadline: its end is a preemption, not a failure.
    pub preemption_timed_out: bool,
}

impl AllocationRun {
    pub fn new(owner: AllocationOwner) -> Self {
        AllocationRun {
            owner,
            containers: 0,
            running: false,
            preempted: false,
            acknowledged: false,
            exits: Vec::new(),
            reattaching: false,
            reattach_slots: 0,
            reattached_slots: Vec::new(),
            preemption_deadline_armed: false,
            preemption_timed_out: false,
        }
    }

    /// Placed and started (not merely queued); one waiting to reattach counts as started.
    pub fn started(&self) -> bool {
        self.containers > 0 || self.reattaching
    }
}

/// How an allocation ended, for its kind to decide what that means.
#[derive(Clone, Debug)]
pub(super) struct AllocationEnd {
    pub allocation_id: String,
    pub succeeded: bool,
    /// The first failure of a process that did not exit 0.
    pub failure: Option<String>,
    pub exit_code: Option<i32>,
    /// The preemption signal was raised (pause, cancel, searcher stop, scheduler) or the task
    /// acknowledged one.
    pub preempted: bool,
}

impl Orchestrator {
    /// Records a new allocation and queues it with the resource manager.
    pub(super) async fn request_allocation(&mut self, owner: AllocationOwner, mut request: ResourceRequest) -> LoopResult<()> {
        // A task naming no pool goes to the default compute pool (aux pool for zero slots).
        request.pool = self.handle.resource_pools().resolve(&request.pool, request.slots).to_owned();
        self.store
            .create_allocation(NewAllocation {
                allocation_id: request.allocation_id.clone(),
                task_id: request.task_id.clone(),
                state: AllocationState::Queued.as_str().into(),
                slots: i32::try_from(request.slots).unwrap_or(i32::MAX),
                resource_pool: request.pool.clone(),
                agent_id: None,
                start_time: db_now(),
            })
            .await?;
        let id = request.allocation_id.clone();
        self.rm.submit(request)?;
        self.handle.signals().register(&id);
        self.allocations.insert(id, AllocationRun::new(owner));
        Ok(())
    }

    /// Ends an allocation a previous master left open: its processes belonged to that master,
    /// so it is over and its token revoked.
    pub(super) async fn end_abandoned_allocation(&self, allocation_id: &str) -> LoopResult<()> {
        let patch = AllocationPatch {
            state: Some(AllocationState::Terminated.as_str().into()),
            end_time: Some(db_now()),
            exit_reason: Some("the master restarted".into()),
            ..Default::default()
        };
        self.store.update_allocation(allocation_id, &patch).await?;
        self.store.delete_allocation_sessions(allocation_id).await?;
        Ok(())
    }

    /// Whether the allocation's processes were started.
    pub(super) fn is_started(&self, allocation_id: &str) -> bool {
        self.allocations.get(allocation_id).is_some_and(AllocationRun::started)
    }

    /// Forgets an allocation that never started; returns its owner.
    pub(super) async fn drop_queued_allocation(&mut self, allocation_id: &str) -> LoopResult<Option<AllocationOwner>> {
        let Some(allocation) = self.allocations.remove(allocation_id) else { return Ok(None) };
        self.rm.release(allocation_id);
        self.handle.signals().remove(allocation_id);
        let patch = AllocationPatch {
            state: Some(AllocationState::Terminated.as_str().into()),
            end_time: Some(db_now()),
            exit_reason: Some("canceled before it started".into()),
            ..Default::default()
        };
        self.store.update_allocation(allocation_id, &patch).await?;
        Ok(Some(allocation.owner))
    }

    /// The scheduler placed the allocation: its kind builds one process per placement.
    pub(super) async fn launch(&mut self, assignment: Assignment) -> LoopResult<()> {
        let Some(owner) = self.allocations.get(&assignment.allocation_id).map(|a| a.owner.clone()) else {
            // Ended while queued; the resource manager still held it.
            self.rm.release(&assignment.allocation_id);
            return Ok(());
        };
        let allocation_id = assignment.allocation_id.as_str();
        let tasks = match &owner {
            AllocationOwner::Trial(trial_id) => self.trial_start_tasks(*trial_id, allocation_id, &assignment.placements).await?,
            AllocationOwner::Task(task_id) => self.command_start_tasks(task_id, allocation_id, &assignment.placements).await?,
        };
        let mut tasks = tasks;
        let run_as = self.task_unix_user(&owner).await?;
        for (_, task) in &mut tasks {
            task.run_as = Some(run_as.clone());
        }
        if let Some(hook) = self.hooks.startup_hook(&assignment.pool) {
            let file = TaskFile { path: DEFAULTS_STARTUP_HOOK.to_owned(), content_b64: BASE64.encode(hook), mode: 0o644 };
            for (_, task) in &mut tasks {
                task.files.push(file.clone());
            }
        }
        let first_node = assignment.placements.first().map(|p| p.node.clone());
        let count = tasks.len();
        self.rm.start(allocation_id, tasks)?;
        if let Some(a) = self.allocations.get_mut(allocation_id) {
            a.containers = count;
        }
        let patch = AllocationPatch { state: Some(AllocationState::Starting.as_str().into()), agent_id: first_node, ..Default::default() };
        self.store.update_allocation(allocation_id, &patch).await?;
        tracing::info!(allocation = allocation_id, processes = count, "launched allocation");
        Ok(())
    }

    /// The master could not start an assigned allocation: it ends as a failed run.
    pub(super) async fn launch_failed(&mut self, allocation_id: &str, failure: String) {
        self.rm.kill(allocation_id);
        let exit = TaskExitInfo { exit_code: None, signal: None, failure: Some(failure) };
        if let Some(a) = self.allocations.get_mut(allocation_id) {
            // Whatever was sent is abandoned: the allocation ends on this one exit.
            a.containers = 0;
        }
        if let Err(e) = self.container_exited(allocation_id, "", exit).await {
            tracing::error!(allocation = allocation_id, error = %e, "cleaning up a failed allocation failed");
        }
    }

    /// What the resource manager reports about an allocation's processes.
    pub(super) async fn rm_event(&mut self, event: RmEvent) -> LoopResult<()> {
        match event {
            RmEvent::Running { allocation_id, ports, .. } => {
                let Some(allocation) = self.allocations.get_mut(&allocation_id) else { return Ok(()) };
                allocation.running = true;
                let owner = allocation.owner.clone();
                if let AllocationOwner::Task(task_id) = &owner {
                    self.command_running(task_id, &ports);
                }
                let patch = AllocationPatch { state: Some(AllocationState::Running.as_str().into()), ..Default::default() };
                self.store.update_allocation(&allocation_id, &patch).await?;
                Ok(())
            }
            RmEvent::Ready { allocation_id, .. } => {
                let Some(owner) = self.allocations.get(&allocation_id).map(|a| a.owner.clone()) else { return Ok(()) };
                if let AllocationOwner::Task(task_id) = &owner {
                    self.command_ready(task_id);
                }
                let patch = AllocationPatch { is_ready: Some(true), ..Default::default() };
                self.store.update_allocation(&allocation_id, &patch).await?;
                Ok(())
            }
            RmEvent::Reattached { allocation_id, ports, ready, slots, .. } => self.reattached(&allocation_id, &ports, ready, slots).await,
            RmEvent::Exited { allocation_id, container_id, exit } => self.container_exited(&allocation_id, &container_id, exit).await,
        }
    }

    /// A process ended; once all of the allocation's have, the allocation ends and its kind
    /// decides what follows.
    pub(super) async fn container_exited(&mut self, allocation_id: &str, container_id: &str, exit: TaskExitInfo) -> LoopResult<()> {
        let Some(a) = self.allocations.get_mut(allocation_id) else { return Ok(()) };
        a.exits.push((container_id.to_owned(), exit.exit_code, exit.failure.clone()));
        if a.exits.len() < a.containers {
            // A gang is one: a failed process stops the others, and the allocation ends when all
            // have exited.
            if super::rm::gang::exit_ends_gang(&exit, a.exits.len(), a.containers) {
                tracing::warn!(allocation = allocation_id, container = container_id, failure = ?exit.failure, "a process of the allocation failed; stopping the others");
                self.rm.kill(allocation_id);
            }
            return Ok(());
        }
        let Some(allocation) = self.allocations.remove(allocation_id) else { return Ok(()) };
        self.rm.release(allocation_id);
        let preempted = allocation.preempted || allocation.acknowledged || self.handle.signals().is_preempted(allocation_id);
        self.handle.signals().remove(allocation_id);
        let mut failure = allocation.exits.iter().find_map(|(_, code, failure)| if *code == Some(0) { None } else { failure.clone() });
        let mut succeeded = allocation.exits.iter().all(|(_, code, _)| *code == Some(0));
        let exit_code = allocation.exits.iter().map(|(_, c, _)| *c).find(|c| *c != Some(0)).flatten().or(Some(0).filter(|_| succeeded));
        let mut exit_reason = failure.clone();
        if allocation.preemption_timed_out && !succeeded {
            // Killed on purpose at the preemption deadline (upstream ignores the errors of an
            // allocation it killed): recorded as such, decided as a preemption.
            exit_reason = Some(super::preemption_timeout::timed_out_reason(self.preemption_timeout_of(&allocation.owner)));
            failure = None;
            succeeded = true;
        }
        let patch = AllocationPatch {
            state: Some(AllocationState::Terminated.as_str().into()),
            end_time: Some(db_now()),
            exit_reason,
            exit_code,
            ..Default::default()
        };
        self.store.update_allocation(allocation_id, &patch).await?;
        self.store.delete_allocation_sessions(allocation_id).await?;
        let end = AllocationEnd { allocation_id: allocation_id.to_owned(), succeeded, failure, exit_code, preempted };
        match allocation.owner {
            AllocationOwner::Trial(trial_id) => self.trial_allocation_ended(trial_id, end).await,
            AllocationOwner::Task(task_id) => self.command_allocation_ended(&task_id, end).await,
        }
    }

    /// Raises the allocation's preemption signal: the task checkpoints (or winds down) and exits.
    pub(super) fn preempt_allocation(&mut self, allocation_id: &str) {
        if let Some(a) = self.allocations.get_mut(allocation_id) {
            a.preempted = true;
            self.handle.signals().preempt(allocation_id);
            self.arm_preemption_timeout(allocation_id);
        }
    }

    /// Stops every process of the allocation at once.
    pub(super) fn kill_allocation(&mut self, allocation_id: &str) {
        if self.allocations.contains_key(allocation_id) {
            self.rm.kill(allocation_id);
        }
    }
}
