//! [`Scheduler`]: one resource pool's scheduler as a deterministic state machine. Every input is
//! a method call; [`Scheduler::schedule`] runs the configured policy and applies its decisions.

use serde_json::Value;

use crate::agent::{Agent, AgentSpec, Slot};
use crate::config::{SchedulerConfig, SchedulingPolicy};
use crate::decisions::{Decisions, PassOutcome, Placement, Waiting};
use crate::error::SchedulerError;
use crate::fit;
use crate::ids::{AgentId, AllocationId, JobId, LogicalTime, SlotId};
use crate::queue::{self, JobQueueEntry, PoolStats};
use crate::request::{AllocationRequest, AllocationState, Entry, JobGroup, validate_priority, validate_weight};
use crate::state::PoolState;
use crate::{fair_share, priority, snapshot};

/// The scheduler of one resource pool. It performs no I/O and reads no clock: the master calls it
/// from its single writer loop and carries out the [`Decisions`] it returns.
#[derive(Clone, Debug)]
pub struct Scheduler {
    pub(crate) state: PoolState,
}

impl Scheduler {
    pub fn new(resource_pool: impl Into<String>, config: SchedulerConfig) -> Self {
        Scheduler { state: PoolState::new(resource_pool.into(), config) }
    }

    pub fn resource_pool(&self) -> &str {
        &self.state.name
    }

    pub fn config(&self) -> &SchedulerConfig {
        &self.state.config
    }

    /// Registers a connected agent; all its slots start enabled and free.
    pub fn add_agent(&mut self, spec: AgentSpec) -> Result<(), SchedulerError> {
        self.check_pool("agent", spec.id.as_str(), &spec.resource_pool)?;
        if self.state.agents.contains_key(&spec.id) {
            return Err(SchedulerError::DuplicateAgent(spec.id));
        }
        let agent = Agent::from_spec(spec)?;
        self.state.agents.insert(agent.id.clone(), agent);
        Ok(())
    }

    /// Forgets an agent (disconnected past its reconnect window). Returns the allocations that had
    /// slots or aux containers on it: they lost those resources and the master should fail them.
    /// What they hold on other agents stays held until the master releases them.
    pub fn remove_agent(&mut self, agent_id: &AgentId) -> Result<Vec<AllocationId>, SchedulerError> {
        let agent = self.state.agents.remove(agent_id).ok_or_else(|| SchedulerError::UnknownAgent(agent_id.clone()))?;
        let lost: Vec<AllocationId> = agent.allocations().into_iter().collect();
        for allocation in &lost {
            if let Some(Entry { state: AllocationState::Scheduled { placements, resources_lost, .. }, .. }) =
                self.state.entries.get_mut(allocation)
            {
                placements.retain(|p| &p.agent_id != agent_id);
                *resources_lost = true;
            }
        }
        Ok(lost)
    }

    pub fn enable_agent(&mut self, agent_id: &AgentId) -> Result<(), SchedulerError> {
        let agent = self.agent_mut(agent_id)?;
        agent.enabled = true;
        agent.draining = false;
        Ok(())
    }

    /// Stops placing work on the agent. Returns the allocations running there, which keep their
    /// resources: the master kills them unless it is draining the agent.
    pub fn disable_agent(&mut self, agent_id: &AgentId) -> Result<Vec<AllocationId>, SchedulerError> {
        let agent = self.agent_mut(agent_id)?;
        agent.enabled = false;
        Ok(agent.allocations().into_iter().collect())
    }

    pub fn enable_slot(&mut self, agent_id: &AgentId, slot_id: SlotId) -> Result<(), SchedulerError> {
        self.change_slot_enabled(agent_id, slot_id, true)?;
        Ok(())
    }

    /// Stops placing work on the slot. Returns the allocation holding it, if any; it keeps the
    /// slot until released.
    pub fn disable_slot(&mut self, agent_id: &AgentId, slot_id: SlotId) -> Result<Option<AllocationId>, SchedulerError> {
        let slot = self.change_slot_enabled(agent_id, slot_id, false)?;
        Ok(slot.allocation.clone())
    }

    /// Queues a request. A request that cannot fit the pool is accepted and waits with a
    /// "can never fit" reason, since agents may still join.
    pub fn submit(&mut self, request: AllocationRequest) -> Result<(), SchedulerError> {
        self.check_pool("allocation", request.allocation_id.as_str(), &request.resource_pool)?;
        if self.state.entries.contains_key(&request.allocation_id) {
            return Err(SchedulerError::DuplicateAllocation(request.allocation_id));
        }
        let priority = validate_priority(request.priority)?;
        let weight = validate_weight(request.weight)?;
        let seq = self.state.next_seq;
        self.state.next_seq += 1;
        if !self.state.jobs.contains_key(&request.job_id) {
            // A job's first request gives it its place, unless a restarted master restored one.
            let (registered_at, job_seq) = match self.state.restored.remove(&request.job_id) {
                Some(place) => place,
                None => {
                    self.record_position(&request.job_id, (request.submitted_at, seq));
                    (request.submitted_at, seq)
                }
            };
            let group = JobGroup { priority, weight, registered_at, seq: job_seq, max_slots: request.max_slots, members: 0 };
            self.state.jobs.insert(request.job_id.clone(), group);
        }
        let job = self.state.jobs.get_mut(&request.job_id).expect("inserted above");
        job.members += 1;
        // The request shares its job's id text with the map's key, so a pass finds its job by the
        // text's address (`PoolState::queue`).
        let mut request = request;
        if let Some((job_id, _)) = self.state.jobs.get_key_value(&request.job_id) {
            request.job_id = job_id.clone();
        }
        let entry = Entry { request, seq, state: AllocationState::Queued { reason: None } };
        self.state.entries.insert(entry.id().clone(), entry);
        Ok(())
    }

    /// Removes a request: cancels it if queued, frees its slots if scheduled. A job with no
    /// requests left keeps its place, priority, weight and `max_slots` (between one trial's
    /// allocation and the next, say) until [`Scheduler::forget_job`].
    pub fn release(&mut self, allocation_id: &AllocationId) -> Result<(), SchedulerError> {
        let entry = self.state.entries.remove(allocation_id).ok_or_else(|| SchedulerError::UnknownAllocation(allocation_id.clone()))?;
        if let AllocationState::Scheduled { placements, .. } = &entry.state {
            fit::free(&mut self.state.agents, allocation_id, placements);
        }
        if let Some(job) = self.state.jobs.get_mut(&entry.request.job_id) {
            job.members = job.members.saturating_sub(1);
        }
        Ok(())
    }

    /// Forgets a job that has finished: its next request, if any ever comes, queues as a new
    /// job. A job that still has requests is kept. True if it was forgotten.
    pub fn forget_job(&mut self, job_id: &JobId) -> bool {
        let finished = self.state.jobs.get(job_id).is_some_and(|job| job.members == 0);
        if finished {
            self.state.jobs.remove(job_id);
        }
        // A restored job that never queued again (paused when the master restarted) ends too.
        let restored = self.state.restored.remove(job_id).is_some();
        if finished || restored {
            self.state.position_changes.push(crate::job_order::PositionChange::Forgotten(job_id.clone()));
        }
        finished || restored
    }

    /// Sets a job's priority (1 highest, 99 lowest); takes effect at the next pass.
    pub fn set_priority(&mut self, job_id: &JobId, priority: u32) -> Result<(), SchedulerError> {
        let priority = validate_priority(priority)?;
        self.job_mut(job_id)?.priority = priority;
        Ok(())
    }

    /// Sets a job's fair-share weight (> 0); takes effect at the next pass.
    pub fn set_weight(&mut self, job_id: &JobId, weight: f64) -> Result<(), SchedulerError> {
        let weight = validate_weight(weight)?;
        self.job_mut(job_id)?.weight = weight;
        Ok(())
    }

    /// Runs one scheduling pass at logical time `now` and applies it: assigned allocations hold
    /// their slots from now on and preempted ones are marked, so each decision is reported once.
    pub fn schedule(&mut self, now: LogicalTime) -> Decisions {
        let outcome = match self.state.config.policy {
            SchedulingPolicy::Priority { preemption } => priority::schedule(&self.state, preemption),
            SchedulingPolicy::FairShare { preemption } => {
                // Fair share works on the agents themselves and hands them back (no copy).
                let agents = std::mem::take(&mut self.state.agents);
                fair_share::schedule(&self.state, agents, preemption)
            }
        };
        self.apply(outcome, now)
    }

    pub(crate) fn apply(&mut self, outcome: PassOutcome, now: LogicalTime) -> Decisions {
        let PassOutcome { assignments, assigned, preemptions, mut waiting, queued, agents } = outcome;
        // The policy's agents already hold every assignment: they become the pool's.
        let held = agents.is_some();
        if let Some(agents) = agents {
            self.state.agents = agents;
        }
        // Requests are named by their index in the map of requests: one walk over the map
        // applies every assignment and files every reason, with no lookup by id (issue 13).
        let mut assignment_of: Vec<Option<usize>> = vec![None; self.state.entries.len()];
        for (n, &index) in assigned.iter().enumerate() {
            assignment_of[index] = Some(n);
        }
        let mut applied = vec![false; assignments.len()];
        // The ids of the requests that stay queued with a reason, by index.
        let mut waiting_ids: Vec<Option<AllocationId>> = vec![None; self.state.entries.len()];
        let state = &mut self.state;
        // Policies assign queued requests only.
        for (index, entry) in state.entries.values_mut().enumerate().filter(|(_, e)| !e.state.is_scheduled()) {
            let Some(n) = assignment_of[index] else {
                // Every request still queued gets this pass's reason (or none).
                let reason = waiting[index].clone();
                if reason.is_some() {
                    waiting_ids[index] = Some(entry.id().clone());
                }
                entry.state = AllocationState::Queued { reason };
                continue;
            };
            let assignment = &assignments[n];
            if held {
                debug_assert!(assignment.placements.iter().all(|p| {
                    let agent = &state.agents[&p.agent_id];
                    let on_slots = p.slot_ids.iter().all(|id| agent.slots[id].allocation.as_ref() == Some(&assignment.allocation_id));
                    on_slots && (!p.slot_ids.is_empty() || agent.aux.contains(&assignment.allocation_id))
                }));
            } else {
                debug_assert!(assignment.placements.iter().all(|p| {
                    let agent = &state.agents[&p.agent_id];
                    p.slot_ids.iter().all(|id| agent.slots[id].enabled && agent.slots[id].allocation.is_none())
                }));
                fit::hold(&mut state.agents, &assignment.allocation_id, &assignment.placements);
            }
            entry.state = AllocationState::Scheduled {
                placements: assignment.placements.clone(),
                backfilled: assignment.backfilled,
                assigned_at: now,
                preempting: false,
                resources_lost: false,
            };
            applied[n] = true;
        }
        debug_assert!(!held || applied.iter().all(|&a| a), "a policy that holds in the pool's agents assigns queued requests only");
        let mut decisions = Decisions {
            assignments: assignments.into_iter().zip(applied).filter_map(|(a, applied)| applied.then_some(a)).collect(),
            ..Decisions::default()
        };
        for allocation_id in preemptions {
            if let Some(Entry { state: AllocationState::Scheduled { preempting: preempting @ false, .. }, .. }) =
                self.state.entries.get_mut(&allocation_id)
            {
                *preempting = true;
                decisions.preemptions.push(allocation_id);
            }
        }
        // Reported in queue order.
        for index in queued {
            if let (Some(allocation_id), Some(reason)) = (waiting_ids[index].take(), waiting[index].take()) {
                decisions.waiting.push(Waiting { allocation_id, reason });
            }
        }
        decisions
    }

    pub(crate) fn agent_ref(&self, agent_id: &AgentId) -> Result<&Agent, SchedulerError> {
        self.state.agents.get(agent_id).ok_or_else(|| SchedulerError::UnknownAgent(agent_id.clone()))
    }

    /// Adds `placement` to the allocation's held resources and marks it scheduled (`adopt.rs`).
    pub(crate) fn hold_adopted(&mut self, allocation_id: &AllocationId, placement: Placement, now: LogicalTime) {
        fit::hold(&mut self.state.agents, allocation_id, std::slice::from_ref(&placement));
        let Some(entry) = self.state.entries.get_mut(allocation_id) else { return };
        match &mut entry.state {
            AllocationState::Scheduled { placements, .. } => {
                if !placements.contains(&placement) {
                    placements.push(placement);
                }
            }
            AllocationState::Queued { .. } => {
                entry.state = AllocationState::Scheduled {
                    placements: vec![placement],
                    backfilled: false,
                    assigned_at: now,
                    preempting: false,
                    resources_lost: false,
                };
            }
        }
    }

    /// Where an allocation stands, if it is known.
    pub fn allocation(&self, allocation_id: &AllocationId) -> Option<&AllocationState> {
        self.state.entries.get(allocation_id).map(|e| &e.state)
    }

    /// The request as submitted, if it is known.
    pub fn request(&self, allocation_id: &AllocationId) -> Option<&AllocationRequest> {
        self.state.entries.get(allocation_id).map(|e| &e.request)
    }

    /// Jobs in scheduling order with their state and `jobs_ahead`.
    pub fn job_queue(&self) -> Vec<JobQueueEntry> {
        queue::job_queue(&self.state)
    }

    pub fn stats(&self) -> PoolStats {
        queue::stats(&self.state)
    }

    /// The whole state as JSON: config, agents and slots, jobs, and requests in queue order.
    pub fn snapshot(&self) -> Value {
        snapshot::snapshot(&self.state)
    }

    fn check_pool(&self, what: &'static str, id: &str, pool: &str) -> Result<(), SchedulerError> {
        if pool == self.state.name {
            return Ok(());
        }
        Err(SchedulerError::WrongResourcePool { what, id: id.to_owned(), expected: self.state.name.clone(), actual: pool.to_owned() })
    }

    pub(crate) fn agent_mut(&mut self, agent_id: &AgentId) -> Result<&mut Agent, SchedulerError> {
        self.state.agents.get_mut(agent_id).ok_or_else(|| SchedulerError::UnknownAgent(agent_id.clone()))
    }

    pub(crate) fn change_slot_enabled(&mut self, agent_id: &AgentId, slot_id: SlotId, enabled: bool) -> Result<&Slot, SchedulerError> {
        self.agent_mut(agent_id)?
            .set_slot_enabled(slot_id, enabled)
            .ok_or_else(|| SchedulerError::UnknownSlot { agent: agent_id.clone(), slot: slot_id })
    }

    pub(crate) fn job_mut(&mut self, job_id: &JobId) -> Result<&mut JobGroup, SchedulerError> {
        self.state.jobs.get_mut(job_id).ok_or_else(|| SchedulerError::UnknownJob(job_id.clone()))
    }
}
