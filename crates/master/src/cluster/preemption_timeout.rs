//! `preemption_timeout` (experiment config, or `task_container_defaults`; upstream default
//! 3600 s): a trial that is told to stop (preempted by the scheduler, paused, stopped, moved off
//! a disabled agent) and has not exited that many seconds later is killed. As upstream's
//! allocation does after its preemption deadline, the master killed it on purpose, so the kill is
//! not the trial's failure: it resumes from its latest checkpoint without counting a restart
//! (or pauses, or ends, as the reason it was preempted says).

use std::time::Duration;

use super::allocations::AllocationOwner;
use super::orchestrator::Orchestrator;
use super::{ClusterEvent, Timer};

/// Upstream's default `preemption_timeout`.
pub(super) const DEFAULT_PREEMPTION_TIMEOUT: Duration = Duration::from_secs(3600);

impl Orchestrator {
    /// Arms the allocation's preemption deadline, once, when its trial is first told to stop.
    pub(super) fn arm_preemption_timeout(&mut self, allocation_id: &str) {
        let Some(a) = self.allocations.get_mut(allocation_id) else { return };
        let AllocationOwner::Trial(trial_id) = a.owner else { return };
        if a.preemption_deadline_armed {
            return;
        }
        a.preemption_deadline_armed = true;
        let timeout = self.preemption_timeout_of(&AllocationOwner::Trial(trial_id)).map_or(DEFAULT_PREEMPTION_TIMEOUT, Duration::from_secs);
        self.handle
            .notify_after(timeout, ClusterEvent::Timer(Timer::PreemptionTimeout { allocation_id: allocation_id.to_owned(), timeout }));
    }

    /// The configured `preemption_timeout` (seconds) of the owner's experiment, if set.
    pub(super) fn preemption_timeout_of(&self, owner: &AllocationOwner) -> Option<u64> {
        let AllocationOwner::Trial(trial_id) = owner else { return None };
        let trial = self.trials.get(trial_id)?;
        self.experiments.get(&trial.experiment_id)?.config.preemption_timeout
    }

    /// The deadline passed: a trial allocation still running is killed, marked so that its
    /// end reads as the preemption it is.
    pub(super) fn preemption_timed_out(&mut self, allocation_id: &str, timeout: Duration) {
        let Some(a) = self.allocations.get_mut(allocation_id) else { return };
        if !a.preempted || a.preemption_timed_out {
            return;
        }
        a.preemption_timed_out = true;
        tracing::warn!(
            allocation = allocation_id,
            timeout_s = timeout.as_secs(),
            "the allocation did not exit within preemption_timeout of being preempted; killing it"
        );
        self.rm.kill(allocation_id);
    }
}

/// What the allocation's end records when the master killed it at the preemption deadline.
pub(super) fn timed_out_reason(timeout_s: Option<u64>) -> String {
    let timeout = timeout_s.unwrap_or(DEFAULT_PREEMPTION_TIMEOUT.as_secs());
    format!("killed: it did not checkpoint and exit within preemption_timeout ({timeout} s) of being preempted")
}
