//! The single writer loop: one task owns every in-memory run and is the only writer of trial,
//! allocation and experiment lifecycle state. Events arrive on one channel and are handled one at
//! a time; after each, the scheduler runs and the cluster view is republished.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use resolute_scheduler::{LogicalTime, Scheduler, SchedulerConfig};
use resolute_store::Store;
use tokio::sync::mpsc;

use super::runs::{AgentRun, AllocationRun, ExperimentRun, TrialRun};
use super::{ClusterEvent, ClusterHandle, Timer};
use crate::state::Identity;

/// Errors inside the loop are logged and the event is dropped; the loop itself never stops on one.
#[derive(Debug, thiserror::Error)]
pub(super) enum LoopError {
    #[error("store: {0}")]
    Store(#[from] resolute_store::StoreError),
    #[error("searcher: {0}")]
    Searcher(#[from] resolute_searcher::SearcherError),
    #[error("scheduler: {0}")]
    Scheduler(#[from] resolute_scheduler::SchedulerError),
    #[error("{0}")]
    Other(String),
}

pub(super) type LoopResult<T> = Result<T, LoopError>;

pub struct Orchestrator {
    pub(super) store: Arc<dyn Store>,
    pub(super) handle: ClusterHandle,
    pub(super) identity: Arc<Identity>,
    pub(super) experiments: HashMap<i32, ExperimentRun>,
    pub(super) trials: HashMap<i32, TrialRun>,
    pub(super) allocations: HashMap<String, AllocationRun>,
    pub(super) agents: BTreeMap<String, AgentRun>,
    pub(super) pools: BTreeMap<String, Scheduler>,
    /// Logical time for the scheduler: one tick per event.
    pub(super) tick: u64,
    pub(super) timing: Timing,
}

/// Durations the loop waits for; tests shorten them.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// Between the graceful stop of a canceled trial and its kill.
    pub cancel_grace: std::time::Duration,
    /// How long a disconnected agent keeps its slots and tasks.
    pub agent_reconnect_wait: std::time::Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing { cancel_grace: std::time::Duration::from_secs(30), agent_reconnect_wait: std::time::Duration::from_secs(25) }
    }
}

impl Orchestrator {
    pub fn new(store: Arc<dyn Store>, handle: ClusterHandle, identity: Arc<Identity>, timing: Timing) -> Orchestrator {
        Orchestrator {
            store,
            handle,
            identity,
            experiments: HashMap::new(),
            trials: HashMap::new(),
            allocations: HashMap::new(),
            agents: BTreeMap::new(),
            pools: BTreeMap::new(),
            tick: 0,
            timing,
        }
    }

    /// Handles events until the channel closes (after `recover`).
    pub async fn run(mut self, mut events: mpsc::UnboundedReceiver<ClusterEvent>) {
        self.after_event().await;
        while let Some(event) = events.recv().await {
            self.handle_event(event).await;
            self.after_event().await;
        }
    }

    pub(super) async fn handle_event(&mut self, event: ClusterEvent) {
        let described = format!("{event:?}");
        let result = match event {
            ClusterEvent::ExperimentChanged { experiment_id } => self.experiment_changed(experiment_id).await,
            ClusterEvent::ValidationReported { trial_id, trial_run_id, steps_completed, metrics } => {
                self.validation_reported(trial_id, trial_run_id, steps_completed, &metrics).await
            }
            ClusterEvent::ProgressReported { trial_id, progress } => self.progress_reported(trial_id, progress).await,
            ClusterEvent::EarlyExit { trial_id, reason } => self.early_exit(trial_id, &reason),
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
            ClusterEvent::AgentConnected { conn_id, query, outbox } => self.agent_connected(conn_id, query, outbox).await,
            ClusterEvent::AgentMessage { conn_id, agent_id, message } => self.agent_message(conn_id, &agent_id, message).await,
            ClusterEvent::AgentDisconnected { conn_id, agent_id } => {
                self.agent_disconnected(conn_id, &agent_id);
                Ok(())
            }
            ClusterEvent::Timer(Timer::KillIfRunning { allocation_id }) => {
                self.kill_allocation(&allocation_id);
                Ok(())
            }
            ClusterEvent::Timer(Timer::ReconnectExpired { agent_id, conn_id }) => self.reconnect_expired(&agent_id, conn_id).await,
        };
        if let Err(e) = result {
            tracing::error!(error = %e, event = %truncate(&described, 300), "handling a cluster event failed");
        }
    }

    /// Schedules what can run and republishes the view.
    pub(super) async fn after_event(&mut self) {
        if let Err(e) = self.schedule().await {
            tracing::error!(error = %e, "scheduling pass failed");
        }
        self.publish_view();
    }

    pub(super) fn pool(&mut self, name: &str) -> &mut Scheduler {
        self.pools.entry(name.to_owned()).or_insert_with(|| Scheduler::new(name.to_owned(), SchedulerConfig::default()))
    }

    pub(super) fn now(&mut self) -> LogicalTime {
        self.tick += 1;
        LogicalTime(self.tick)
    }

    async fn schedule(&mut self) -> LoopResult<()> {
        let now = self.now();
        let mut assignments = Vec::new();
        let mut preemptions = Vec::new();
        for scheduler in self.pools.values_mut() {
            let decisions = scheduler.schedule(now);
            assignments.extend(decisions.assignments);
            preemptions.extend(decisions.preemptions);
        }
        for allocation_id in preemptions {
            self.preempt_allocation(allocation_id.as_str());
        }
        for assignment in assignments {
            let id = assignment.allocation_id.as_str().to_owned();
            if let Err(e) = self.launch(&id, &assignment.placements).await {
                tracing::error!(allocation = %id, error = %e, "starting an allocation failed");
                self.container_lost(&id, format!("the master could not start it: {e}")).await;
            }
        }
        Ok(())
    }

    /// Raises the allocation's preemption signal: the harness checkpoints and exits.
    pub(super) fn preempt_allocation(&mut self, allocation_id: &str) {
        if let Some(a) = self.allocations.get_mut(allocation_id) {
            a.preempted = true;
            self.handle.signals().preempt(allocation_id);
        }
    }

    /// SIGKILL to every container of the allocation.
    pub(super) fn kill_allocation(&mut self, allocation_id: &str) {
        let Some(a) = self.allocations.get(allocation_id) else { return };
        for c in &a.containers {
            self.send_to_agent(&c.agent_id, resolute_api::agent_protocol::MasterToAgent::KillTask { container_id: c.container_id.clone() });
        }
    }

    pub(super) fn send_to_agent(&self, agent_id: &str, message: resolute_api::agent_protocol::MasterToAgent) -> bool {
        match self.agents.get(agent_id).and_then(|a| a.outbox.as_ref()) {
            Some(outbox) => outbox.send(message).is_ok(),
            None => false,
        }
    }
}

fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// Starts the loop for a master. Returns when the channel closes.
/// Recovers what a previous master left unfinished, then returns the loop to spawn. The caller
/// awaits the recovery before serving requests, so nothing created through the API can be taken
/// for a previous master's leftovers.
pub async fn start_loop(
    store: Arc<dyn Store>,
    handle: ClusterHandle,
    identity: Arc<Identity>,
    events: mpsc::UnboundedReceiver<ClusterEvent>,
) -> impl Future<Output = ()> + Send + 'static {
    let mut orchestrator = Orchestrator::new(store, handle, identity, Timing::default());
    if let Err(e) = orchestrator.recover().await {
        tracing::error!(error = %e, "recovering experiments after start failed");
    }
    orchestrator.run(events)
}
