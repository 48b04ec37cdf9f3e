//! The cluster: the single writer loop that turns searcher operations into trials, tasks into
//! allocations, and what the resource manager reports into state changes.
//!
//! The loop is keyed by allocation (`allocations.rs`); each allocation's owner is a task of some
//! kind — the trial kind lives in `trial/` — which supplies the start specification and decides
//! what an exit means. Where processes run is the resource manager's business (`rm/`: agents
//! today). Services reach the loop only through [`ClusterHandle`] and [`LoopHooks`].
//!
//! HTTP handlers never change trial, allocation or agent state themselves: they write what they
//! own (metrics, checkpoints, logs) to the store and [`ClusterHandle::notify`] the loop, which
//! decides. Preemption signals are the one thing handlers read directly ([`PreemptionSignals`]).

mod allocations;
mod command;
mod hooks;
mod job_pool;
mod job_queue;
mod node_controls;
mod orchestrator;
mod preemption_timeout;
mod queue_order;
mod reattach;
pub mod rm;
mod signals;
mod task_user;
mod trial;
mod view;

use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::mpsc;

pub use command::{EXITED_SUCCESSFULLY, KILLED};
pub use hooks::{LoopHooks, ServiceEndpoint};
pub use job_queue::{JobOwner, JobQueueChange, JobQueueError, QueuedJob};
pub use orchestrator::{Orchestrator, Timing, start_loop};
pub use rm::{AgentInput, RmInput};
pub use signals::PreemptionSignals;
pub use task_user::resolve_task_user;
pub use trial::log_policy::FiredLogPolicy;

/// The pool agents and experiments use when they name none and no `resource_pools` are
/// configured (with pools, [`ClusterHandle::resource_pools`] says which are the defaults).
pub const DEFAULT_POOL: &str = "default";
pub use view::{AgentView, ClusterView, ContainerView, SlotView};

/// Something the loop must react to.
#[derive(Debug)]
pub enum ClusterEvent {
    /// An experiment was created or its state changed through the API (activate, pause, cancel,
    /// kill): the loop reconciles its trials with the new state.
    ExperimentChanged { experiment_id: i32 },
    /// An experiment was stored by `POST /api/v1/experiments`: the loop creates its first trials
    /// (paused ones too) and then answers on `done`, so the create response's caller finds them.
    ExperimentCreated { experiment_id: i32, done: tokio::sync::oneshot::Sender<()> },
    /// A validation report was stored for the trial (`metrics` are its `avgMetrics`); `repeated`:
    /// it was an exact repeat of a stored one (a retry), which the searcher takes only if it has
    /// not seen that progress yet (the master that stored it may have died before telling it).
    ValidationReported { trial_id: i32, trial_run_id: i32, steps_completed: i64, metrics: Map<String, Value>, repeated: bool },
    /// A completed checkpoint was stored for the trial: a PBT child waiting for its parent's
    /// checkpoint at the round's end may start.
    CheckpointReported { trial_id: i32 },
    /// `POST /api/v1/trials/{id}/progress`: the fraction of the trial's searcher length done.
    ProgressReported { trial_id: i32, progress: f64 },
    /// `POST /api/v1/trials/{id}/early_exit` (e.g. `EXITED_REASON_INVALID_HP`).
    EarlyExit { trial_id: i32, reason: String },
    /// `POST /api/v1/allocations/{id}/signals/ack_preemption`: the task will exit because it was
    /// preempted, so exit 0 does not mean "done".
    PreemptionAcknowledged { allocation_id: String },
    /// `POST /api/v1/allocations/{id}/signals/pending_preemption`: the task asks to be preempted.
    PreemptionRequested { allocation_id: String },
    /// A trial's log line matched one of its experiment's `log_policies` (`services/log_policies.rs`);
    /// sent before the line's batch is acknowledged, so before the process's exit is handled.
    LogPolicyFired { trial_id: i32, fired: FiredLogPolicy },
    /// `POST /api/v1/trials/{id}/kill`.
    KillTrial { trial_id: i32 },
    /// A command, notebook, shell, TensorBoard or generic task was stored: queue it.
    TaskCreated { task_id: String },
    /// A user killed such a task.
    KillTask { task_id: String },
    /// A user paused a generic task: its process stops, the task stays open.
    PauseTask { task_id: String },
    /// A user unpaused a paused generic task: a new allocation is queued.
    UnpauseTask { task_id: String },
    /// `POST /api/v1/job-queues`, `det experiment set priority|weight|max-slots`: applied in
    /// order; `done` hears the first refusal (naming the job and field) or success.
    ChangeJobQueue { changes: Vec<JobQueueChange>, done: tokio::sync::oneshot::Sender<Result<(), JobQueueError>> },
    /// For the resource manager (agents connecting, reporting, leaving; its own timers).
    Rm(RmInput),
    /// An admin enabled, disabled or drained an agent, or enabled or disabled a slot; answered once
    /// stored and applied.
    NodeControl { command: rm::NodeCommand, done: tokio::sync::oneshot::Sender<Result<(), rm::ControlError>> },
    /// Timers the loop set for itself.
    Timer(Timer),
}

/// Deadlines the loop arms with [`ClusterHandle::notify_after`].
#[derive(Debug)]
pub enum Timer {
    /// A gracefully terminated allocation that has not exited by now is killed.
    KillIfRunning { allocation_id: String },
    /// A preempted trial allocation that has not exited by now is killed (`preemption_timeout`).
    PreemptionTimeout { allocation_id: String, timeout: Duration },
    /// After a master restart: allocations whose processes have not reattached by now end
    /// (`reattach.rs`).
    ReattachExpired,
}

/// What HTTP handlers hold: a way to notify the loop, the preemption signals, and a read-only
/// view of agents and running containers (refreshed by the loop).
#[derive(Clone)]
pub struct ClusterHandle {
    events: mpsc::UnboundedSender<ClusterEvent>,
    signals: Arc<PreemptionSignals>,
    view: Arc<RwLock<ClusterView>>,
    /// Woken whenever the loop publishes a new view ([`ClusterHandle::wait_view`]).
    published: Arc<tokio::sync::Notify>,
    /// The configured resource pools (fixed for the master's life).
    pools: Arc<crate::config::ResourcePools>,
}

impl ClusterHandle {
    /// A handle and the receiving end the loop consumes.
    pub fn new() -> (ClusterHandle, mpsc::UnboundedReceiver<ClusterEvent>) {
        let (events, receiver) = mpsc::unbounded_channel();
        let handle = ClusterHandle {
            events,
            signals: Arc::new(PreemptionSignals::default()),
            view: Arc::new(RwLock::new(ClusterView::default())),
            published: Arc::default(),
            pools: Arc::default(),
        };
        (handle, receiver)
    }

    /// The handle with master.yaml's resource pools (before anything clones it).
    pub fn with_resource_pools(mut self, pools: crate::config::ResourcePools) -> Self {
        self.pools = Arc::new(pools);
        self
    }

    /// The configured resource pools, their schedulers and the default pools.
    pub fn resource_pools(&self) -> &crate::config::ResourcePools {
        &self.pools
    }

    /// Queues an event for the loop; dropped silently once the loop has stopped (shutdown).
    pub fn notify(&self, event: ClusterEvent) {
        let _ = self.events.send(event);
    }

    /// Has the loop take in a new experiment and waits (up to `timeout`) until it has created the
    /// experiment's first trials. A loop that has stopped or is slower than `timeout` is not an
    /// error: the trials appear once it gets there.
    pub async fn experiment_created(&self, experiment_id: i32, timeout: Duration) {
        let (done, created) = tokio::sync::oneshot::channel();
        if self.events.send(ClusterEvent::ExperimentCreated { experiment_id, done }).is_ok()
            && tokio::time::timeout(timeout, created).await.is_err()
        {
            tracing::warn!(experiment = experiment_id, "the cluster loop has not created the experiment's trials yet");
        }
    }

    /// Has the loop apply an admin's agent or slot command; waits for its answer.
    pub async fn control_node(&self, command: rm::NodeCommand) -> Result<(), rm::ControlError> {
        let (done, answer) = tokio::sync::oneshot::channel();
        self.events.send(ClusterEvent::NodeControl { command, done }).map_err(|_| rm::ControlError::Unavailable)?;
        answer.await.unwrap_or(Err(rm::ControlError::Unavailable))
    }

    /// Has the loop apply job-queue changes and waits for its answer: the first refusal (naming
    /// the job and field), or an error when the loop has stopped.
    pub async fn change_job_queue(&self, changes: Vec<JobQueueChange>) -> Result<(), JobQueueError> {
        let (done, answer) = tokio::sync::oneshot::channel();
        let stopped = || JobQueueError::Invalid("the cluster loop has stopped (the master is shutting down)".to_owned());
        if self.events.send(ClusterEvent::ChangeJobQueue { changes, done }).is_err() {
            return Err(stopped());
        }
        answer.await.unwrap_or_else(|_| Err(stopped()))
    }

    /// Queues `event` after `delay` (for the loop's own deadlines).
    pub(crate) fn notify_after(&self, delay: Duration, event: ClusterEvent) {
        let events = self.events.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = events.send(event);
        });
    }

    pub fn signals(&self) -> &Arc<PreemptionSignals> {
        &self.signals
    }

    /// Waits up to `timeout` for the allocation's preemption signal.
    pub async fn wait_for_preemption(&self, allocation_id: &str, timeout: Duration) -> bool {
        self.signals.wait(allocation_id, timeout).await
    }

    /// A snapshot of the agents, their slots and the containers on them.
    pub fn view(&self) -> ClusterView {
        self.view.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Replaces the published view (the loop calls this after each change).
    pub(crate) fn publish(&self, view: ClusterView) {
        *self.view.write().unwrap_or_else(|p| p.into_inner()) = view;
        self.published.notify_waiters();
    }

    /// Long poll on the view: `check`'s first answer, tried now and after every publication, or
    /// `None` once `timeout` has passed.
    pub async fn wait_view<T>(&self, timeout: Duration, check: impl Fn(&ClusterView) -> Option<T>) -> Option<T> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // Registered before looking, so a publication in between is not missed.
            let published = self.published.notified();
            tokio::pin!(published);
            published.as_mut().enable();
            if let Some(answer) = check(&self.view.read().unwrap_or_else(|p| p.into_inner())) {
                return Some(answer);
            }
            if tokio::time::timeout_at(deadline, published).await.is_err() {
                return None;
            }
        }
    }
}
