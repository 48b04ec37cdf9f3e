//! Reattachment after a master restart (kill -9 included): the processes a previous master
//! started keep running on their agents, so recovery keeps each allocation that was placed open,
//! with the same allocation id, run id and token, "waiting for reattach"; when the agent registers
//! and lists its running tasks the resource manager adopts them ([`RmEvent::Reattached`]) and the
//! allocation goes on as if nothing happened. An allocation that did not come back whole within
//! `agent_reattach_wait` — none of its processes, or only some of a gang spread over several
//! agents (`rm::gang::reattached_in_full`) — falls back to the old behaviour: the processes that
//! came back are killed, it ends (token revoked), and a trial resumes from its latest checkpoint in
//! a new run, a command-like task ends.
//!
//! [`RmEvent::Reattached`]: super::rm::RmEvent::Reattached

use std::collections::BTreeMap;

use resolute_store::{AllocationPatch, AllocationRecord, db_now};

use super::allocations::{AllocationOwner, AllocationRun};
use super::orchestrator::{LoopResult, Orchestrator};
use super::rm::ResourceRequest;
use super::{ClusterEvent, Timer};
use crate::domain::{AllocationState, ExperimentState};

/// The status of a command-like task whose process did not come back.
const NOT_REATTACHED: &str = "allocation stopped: the master restarted and its agent did not come back in time";

/// Whether recovery may keep `allocation` for its processes to be re-adopted: it was placed on an
/// agent and not yet ended (queued ones are simply queued again by their kind).
pub(super) fn reattachable(allocation: &AllocationRecord) -> bool {
    let placed = [AllocationState::Pulling, AllocationState::Starting, AllocationState::Running].map(AllocationState::as_str);
    allocation.end_time.is_none() && allocation.agent_id.is_some() && placed.contains(&allocation.state.as_str())
}

impl Orchestrator {
    /// Whether reattachment is on (`agent_reattach_wait` > 0).
    pub(super) fn reattach_enabled(&self) -> bool {
        !self.timing.agent_reattach_wait.is_zero()
    }

    /// Keeps an allocation a previous master placed open, waiting for its processes.
    pub(super) fn await_reattach(&mut self, owner: AllocationOwner, request: ResourceRequest) {
        let (id, slots) = (request.allocation_id.clone(), request.slots);
        tracing::info!(allocation = %id, "waiting for the allocation's processes to reattach");
        self.rm.await_reattach(request);
        self.handle.signals().register(&id);
        let mut run = AllocationRun::new(owner);
        run.reattaching = true;
        run.reattach_slots = slots;
        self.allocations.insert(id, run);
    }

    /// After recovery: the deadline of the allocations that wait for their processes.
    pub(super) fn arm_reattach_deadline(&self) {
        let waiting = self.allocations.values().filter(|a| a.reattaching).count();
        if waiting > 0 {
            tracing::info!(allocations = waiting, wait = ?self.timing.agent_reattach_wait, "waiting for agents to reattach running tasks");
            self.handle.notify_after(self.timing.agent_reattach_wait, ClusterEvent::Timer(Timer::ReattachExpired));
        }
    }

    /// A process of an allocation the previous master placed runs on: once all of them do, the
    /// allocation goes on; until then it still waits (a gang never goes on in part).
    pub(super) async fn reattached(
        &mut self,
        allocation_id: &str,
        ports: &BTreeMap<String, String>,
        ready: bool,
        slots: u32,
    ) -> LoopResult<()> {
        let Some(a) = self.allocations.get_mut(allocation_id) else { return Ok(()) };
        a.containers += 1;
        a.running = true;
        a.reattached_slots.push(slots);
        a.reattaching = !super::rm::gang::reattached_in_full(a.reattach_slots, &a.reattached_slots);
        if a.reattaching {
            tracing::info!(allocation = %allocation_id, "part of the allocation reattached; waiting for the rest of its processes");
        }
        let owner = a.owner.clone();
        let patch = AllocationPatch { state: Some(AllocationState::Running.as_str().into()), ..Default::default() };
        self.store.update_allocation(allocation_id, &patch).await?;
        match &owner {
            AllocationOwner::Task(task_id) => {
                self.command_running(task_id, ports);
                if ready {
                    self.command_ready(task_id);
                }
                if self.commands.get(task_id).is_some_and(|c| c.killed) {
                    self.kill_allocation(allocation_id);
                }
            }
            AllocationOwner::Trial(trial_id) => {
                let experiment = self.trials.get(trial_id).map(|t| t.experiment_id);
                let killed = self.trials.get(trial_id).is_some_and(|t| t.killed)
                    || experiment.and_then(|e| self.experiments.get(&e)).is_some_and(|e| e.state == ExperimentState::StoppingKilled);
                if killed {
                    self.kill_allocation(allocation_id);
                }
            }
        }
        Ok(())
    }

    /// The reattach window closed: allocations none of whose processes came back end, and their
    /// tasks go on as after a plain restart.
    pub(super) async fn reattach_expired(&mut self) -> LoopResult<()> {
        let lost: Vec<(String, AllocationOwner)> =
            self.allocations.iter().filter(|(_, a)| a.reattaching).map(|(id, a)| (id.clone(), a.owner.clone())).collect();
        for (allocation_id, owner) in lost {
            let partial = self.allocations.remove(&allocation_id).is_some_and(|a| a.containers > 0);
            if partial {
                // Its peers are gone: the processes that came back cannot go on alone.
                tracing::warn!(allocation = %allocation_id, "only part of the allocation reattached in time; it ends whole");
                self.rm.kill(&allocation_id);
            } else {
                tracing::warn!(allocation = %allocation_id, "no process of the allocation reattached in time; it ends");
            }
            self.rm.give_up_reattach(&allocation_id);
            self.rm.release(&allocation_id);
            self.handle.signals().remove(&allocation_id);
            let patch = AllocationPatch {
                state: Some(AllocationState::Terminated.as_str().into()),
                end_time: Some(db_now()),
                exit_reason: Some(
                    if partial {
                        "the master restarted and only some of the allocation's agents came back in time"
                    } else {
                        "the master restarted and the allocation's agent did not come back in time"
                    }
                    .into(),
                ),
                ..Default::default()
            };
            self.store.update_allocation(&allocation_id, &patch).await?;
            self.store.delete_allocation_sessions(&allocation_id).await?;
            match owner {
                AllocationOwner::Trial(trial_id) => {
                    let Some(trial) = self.trials.get_mut(&trial_id) else { continue };
                    trial.allocation = None;
                    let experiment_id = trial.experiment_id;
                    // A new run from the latest checkpoint; not a restart (nothing failed).
                    self.next_run(trial_id, false).await?;
                    self.experiment_changed(experiment_id).await?;
                }
                AllocationOwner::Task(task_id) => self.end_command(&task_id, Some(&allocation_id), NOT_REATTACHED).await?,
            }
        }
        Ok(())
    }
}

impl Orchestrator {
    /// Recovery of a trial's task: keeps its one open, placed allocation of the trial's current
    /// run waiting for reattachment. `false` when it cannot (reattach off, nothing placed, the
    /// trial ended or moved on): the caller ends the allocations as abandoned.
    pub(super) async fn keep_for_reattach(&mut self, task_id: &str, allocations: &[AllocationRecord]) -> LoopResult<bool> {
        if !self.reattach_enabled() {
            return Ok(false);
        }
        let open: Vec<&AllocationRecord> = allocations.iter().filter(|a| a.end_time.is_none()).collect();
        let [allocation] = open.as_slice() else { return Ok(false) };
        if !reattachable(allocation) {
            return Ok(false);
        }
        let Ok(trial) = self.store.trial_by_task_id(task_id).await else { return Ok(false) };
        let Some(request) = self.trial_resource_request(trial.id) else { return Ok(false) };
        if request.allocation_id != allocation.allocation_id {
            return Ok(false);
        }
        if let Some(t) = self.trials.get_mut(&trial.id) {
            t.allocation = Some(request.allocation_id.clone());
            t.log_policy.placed_on = allocation.agent_id.iter().cloned().collect();
        }
        self.await_reattach(AllocationOwner::Trial(trial.id), request);
        Ok(true)
    }
}
