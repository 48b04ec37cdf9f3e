//! The single writer loop: one task owns every in-memory run and is the only writer of trial,
//! allocation and experiment lifecycle state. Events arrive on one channel and are handled one at
//! a time; after each, the resource manager schedules and the cluster view is republished.

use std::collections::HashMap;
use std::sync::Arc;

use resolute_store::Store;
use tokio::sync::mpsc;

use super::allocations::AllocationRun;
use super::command::CommandRun;
use super::hooks::LoopHooks;
use super::rm::{AgentResourceManager, ResourceManager};
use super::trial::runs::{ExperimentRun, TrialRun};
use super::{ClusterEvent, ClusterHandle, Timer};
use crate::state::Identity;

/// Errors inside the loop are logged and the event is dropped; the loop itself never stops on one.
#[derive(Debug, thiserror::Error)]
pub(super) enum LoopError {
    #[error("store: {0}")]
    Store(#[from] resolute_store::StoreError),
    #[error("searcher: {0}")]
    Searcher(#[from] resolute_searcher::SearcherError),
    #[error("resource manager: {0}")]
    Rm(#[from] super::rm::RmError),
    #[error("{0}")]
    Other(String),
}

pub(super) type LoopResult<T> = Result<T, LoopError>;

pub struct Orchestrator {
    pub(super) store: Arc<dyn Store>,
    pub(super) handle: ClusterHandle,
    pub(super) identity: Arc<Identity>,
    pub(super) hooks: Arc<dyn LoopHooks>,
    pub(super) rm: Box<dyn ResourceManager>,
    /// Every open allocation, by id, whatever its task's kind.
    pub(super) allocations: HashMap<String, AllocationRun>,
    /// The trial kind's state.
    pub(super) experiments: HashMap<i32, ExperimentRun>,
    pub(super) trials: HashMap<i32, TrialRun>,
    /// The QUEUED/RUNNING substates last written (`trial/display_state.rs`).
    pub(super) display: super::trial::display_state::DisplayStates,
    /// The command kind's state (commands, notebooks, shells, TensorBoards, generic tasks).
    pub(super) commands: HashMap<String, CommandRun>,
    pub(super) timing: Timing,
    /// Queued trial allocations whose wait reason is already in the trial's logs (`job_queue.rs`).
    pub(super) waits_logged: std::collections::HashSet<String>,
    /// Queue order changes not stored yet (`queue_order.rs`).
    pub(super) unsaved_queue_order: super::rm::QueueOrderChanges,
}

/// Durations the loop waits for; tests shorten them.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// Between the graceful stop of a canceled trial and its kill.
    pub cancel_grace: std::time::Duration,
    /// How long a disconnected agent keeps its slots and tasks (`agent_reconnect_wait`).
    pub agent_reconnect_wait: std::time::Duration,
    /// After a master restart, how long allocations that were running wait for their agents to
    /// reattach their processes (`agent_reattach_wait`; zero: they end at once, as upstream
    /// without `agent_reattach_enabled`).
    pub agent_reattach_wait: std::time::Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            cancel_grace: std::time::Duration::from_secs(30),
            agent_reconnect_wait: std::time::Duration::from_secs(DEFAULT_AGENT_RECONNECT_WAIT_S),
            agent_reattach_wait: std::time::Duration::from_secs(DEFAULT_AGENT_REATTACH_WAIT_S),
        }
    }
}

/// The most events handled before the loop schedules and publishes: enough to take a burst of
/// reports in one pass, few enough that a long queue still sees its view refreshed.
const MAX_BATCH: usize = 256;

/// The longest a batch gathers events before the loop schedules: each event's store writes are
/// awaited one after the other, so a burst of 64 trial exits handled as one batch kept every freed
/// slot empty until the last exit was written. Past this, the waiting events go to the next batch.
/// Measured on the 1,000-trial makespan bench (bench/README.md): unbounded 13–20 % over the ideal,
/// 50 ms 10.4 %, 20 ms 7.5–8.4 %, 5–10 ms 8.5–8.9 %, 2 ms 32.7 % (the per-batch work then dominates).
const BATCH_TIME: std::time::Duration = std::time::Duration::from_millis(20);

/// `agent_reconnect_wait` when master.yaml sets none (upstream's 25 s).
pub const DEFAULT_AGENT_RECONNECT_WAIT_S: u64 = 25;
/// `agent_reattach_wait` when master.yaml sets none.
pub const DEFAULT_AGENT_REATTACH_WAIT_S: u64 = 60;

impl Orchestrator {
    pub fn new(store: Arc<dyn Store>, handle: ClusterHandle, identity: Arc<Identity>, hooks: Arc<dyn LoopHooks>, timing: Timing) -> Self {
        let rm = Box::new(AgentResourceManager::new(handle.clone(), identity.clone(), timing.agent_reconnect_wait));
        Orchestrator {
            store,
            handle,
            identity,
            hooks,
            rm,
            allocations: HashMap::new(),
            experiments: HashMap::new(),
            trials: HashMap::new(),
            display: Default::default(),
            commands: HashMap::new(),
            timing,
            waits_logged: Default::default(),
            unsaved_queue_order: Default::default(),
        }
    }

    /// Handles events until the channel closes (after `recover`). Events that are already waiting
    /// are handled as one batch (up to [`MAX_BATCH`] events or [`BATCH_TIME`]), and the batch is scheduled, stored and
    /// published once: when 64 trials report and exit at the same moment, the scheduling pass, the
    /// searchers' snapshots and the view are paid once for all of them, not once per event.
    pub async fn run(mut self, mut events: mpsc::UnboundedReceiver<ClusterEvent>) {
        self.after_event().await;
        while let Some(event) = events.recv().await {
            let started = std::time::Instant::now();
            self.handle_event(event).await;
            for _ in 1..MAX_BATCH {
                if started.elapsed() >= BATCH_TIME {
                    break;
                }
                let Ok(event) = events.try_recv() else { break };
                self.handle_event(event).await;
            }
            self.after_event().await;
        }
    }

    pub(super) async fn handle_event(&mut self, event: ClusterEvent) {
        let described = format!("{event:?}");
        let result = match event {
            ClusterEvent::ExperimentChanged { experiment_id } => self.experiment_changed(experiment_id).await,
            ClusterEvent::ExperimentCreated { experiment_id, done } => {
                let result = self.experiment_changed(experiment_id).await;
                // The trials' QUEUED states are written before the creator hears back.
                self.sync_display_states().await;
                let _ = done.send(());
                result
            }
            ClusterEvent::ValidationReported { trial_id, trial_run_id, steps_completed, metrics, repeated } => {
                self.validation_reported(trial_id, trial_run_id, steps_completed, &metrics, repeated).await
            }
            ClusterEvent::CheckpointReported { trial_id } => self.checkpoint_reported(trial_id).await,
            ClusterEvent::ProgressReported { trial_id, progress } => self.progress_reported(trial_id, progress).await,
            ClusterEvent::EarlyExit { trial_id, reason } => self.early_exit(trial_id, &reason),
            ClusterEvent::LogPolicyFired { trial_id, fired } => self.log_policy_fired(trial_id, fired).await,
            ClusterEvent::PreemptionAcknowledged { allocation_id } => {
                if let Some(a) = self.allocations.get_mut(&allocation_id) {
                    a.acknowledged = true;
                }
                Ok(())
            }
            ClusterEvent::PreemptionRequested { allocation_id } => {
                self.preempt_allocation(&allocation_id);
                Ok(())
            }
            ClusterEvent::KillTrial { trial_id } => self.kill_trial(trial_id).await,
            ClusterEvent::TaskCreated { task_id } => self.task_created(&task_id).await,
            ClusterEvent::KillTask { task_id } => self.kill_task(&task_id).await,
            ClusterEvent::PauseTask { task_id } => self.pause_task(&task_id).await,
            ClusterEvent::UnpauseTask { task_id } => self.unpause_task(&task_id).await,
            ClusterEvent::Rm(input) => {
                let mut result = Ok(());
                for event in self.rm.handle(input) {
                    if let Err(e) = self.rm_event(event).await {
                        result = Err(e);
                    }
                }
                result
            }
            ClusterEvent::NodeControl { command, done } => {
                let _ = done.send(self.node_control(command).await);
                Ok(())
            }
            ClusterEvent::ChangeJobQueue { changes, done } => {
                let _ = done.send(self.change_job_queue(changes).await);
                Ok(())
            }
            ClusterEvent::Timer(Timer::KillIfRunning { allocation_id }) => {
                self.kill_allocation(&allocation_id);
                Ok(())
            }
            ClusterEvent::Timer(Timer::PreemptionTimeout { allocation_id, timeout }) => {
                self.preemption_timed_out(&allocation_id, timeout);
                Ok(())
            }
            ClusterEvent::Timer(Timer::ReattachExpired) => self.reattach_expired().await,
        };
        if let Err(e) = result {
            tracing::error!(error = %e, event = %truncate(&described, 300), "handling a cluster event failed");
        }
    }

    /// Stores the searchers that moved, schedules what can run and republishes the view.
    pub(super) async fn after_event(&mut self) {
        self.flush_searchers().await;
        let decisions = self.rm.schedule();
        for allocation_id in decisions.preemptions {
            self.preempt_allocation(&allocation_id);
        }
        for assignment in decisions.assignments {
            let id = assignment.allocation_id.clone();
            if let Err(e) = self.launch(assignment).await {
                tracing::error!(allocation = %id, error = %e, "starting an allocation failed");
                self.launch_failed(&id, format!("the master could not start it: {e}")).await;
            }
        }
        self.sync_display_states().await;
        self.store_queue_order().await;
        let jobs = self.queued_jobs();
        self.log_wait_reasons(&jobs).await;
        let mut view = self.rm.view();
        view.jobs = jobs;
        self.handle.publish(view);
    }
}

fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// Recovers what a previous master left unfinished, then returns the loop to spawn. The caller
/// awaits the recovery before serving requests, so nothing created through the API can be taken
/// for a previous master's leftovers.
pub async fn start_loop(
    store: Arc<dyn Store>,
    handle: ClusterHandle,
    identity: Arc<Identity>,
    hooks: Arc<dyn LoopHooks>,
    events: mpsc::UnboundedReceiver<ClusterEvent>,
    timing: Timing,
) -> impl Future<Output = ()> + Send + 'static {
    let mut orchestrator = Orchestrator::new(store, handle, identity, hooks, timing);
    if let Err(e) = orchestrator.restore_node_controls().await {
        tracing::error!(error = %e, "reading the stored agent controls failed; every agent starts enabled");
    }
    let stored_jobs = orchestrator.restore_queue_order().await.unwrap_or_else(|e| {
        tracing::error!(error = %e, "reading the stored job queue order failed; jobs queue in recovery order");
        Vec::new()
    });
    if let Err(e) = orchestrator.recover().await {
        tracing::error!(error = %e, "recovering experiments after start failed");
    }
    if let Err(e) = orchestrator.recover_commands().await {
        tracing::error!(error = %e, "ending the previous master's tasks failed");
    }
    orchestrator.forget_ended_jobs(&stored_jobs);
    orchestrator.arm_reattach_deadline();
    orchestrator.run(events)
}
