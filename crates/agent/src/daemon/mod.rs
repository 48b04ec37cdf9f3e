//! The agent daemon: keeps a websocket session with the master (reconnecting when it is lost),
//! runs the tasks the master starts as local processes with the [`Runtime`], and streams their
//! output, state changes and readiness back.
//!
//! One loop owns all state. Runtime events (log lines, exits) and start results are handled even
//! while disconnected; what they produce waits in a bounded outbox until a connection takes it.
//! Tasks keep running while the master is unreachable: the agent reconnects with [`backoff`]
//! (forever, unless configured otherwise) and then reports what happened meanwhile.
//!
//! Tasks also outlive the agent process itself (a crash, `kill -9`): every running task is kept
//! in the [`state_file`], and an agent started again with the same work root takes over those it
//! finds there ([`crate::process::Runtime::adopt`]): it reports them to the master in
//! `AgentStarted` exactly as after a master restart, goes on reading their output where the
//! master's copy ends, and reports the exit of one that ended meanwhile with its recorded status.
//! A graceful stop (SIGTERM, ctrl-C) still terminates the tasks first.

mod archive_stream;
pub mod backoff;
mod connection;
pub mod log_batch;
mod persistence;
mod readiness;
pub mod state_file;
mod tasks;

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use futures_util::StreamExt;
use resolute_api::agent_protocol::{
    AgentConnectQuery, AgentDevice, AgentOptions, AgentStarted, AgentToMaster, AgentUnixUser, MasterToAgent, RunningTask, StartTask,
    TaskArchiveChunk,
};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use self::archive_stream::{PendingArchive, Progress};
use self::backoff::Backoff;
use self::connection::{ConnectError, Incoming, Outbox, Ws};
use self::log_batch::LogBatch;
use self::log_batch::Shipped;
use self::readiness::Readiness;
use self::state_file::{AgentState, TaskRecord};
use self::tasks::{StartOutcome, Stop, TaskEntry};
use crate::config::{AgentConfig, ConfigError};
use crate::devices::{Device, DeviceError, DeviceType, detect_devices};
use crate::events::{RuntimeEvent, TaskExit};
use crate::harness_shim::ShimDir;
use crate::master_tls::MasterTls;
use crate::process::{OutputOffsets, Runtime, RuntimeOptions};

/// How long connecting plus the master's first message may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long queued messages may take to reach the master when the agent stops.
const FINAL_FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// The version agents report: the upstream release whose protocol this speaks, as `det agent list` shows it.
pub const AGENT_VERSION: &str = resolute_api::DETERMINED_VERSION;

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("invalid agent configuration: {0}")]
    Config(#[from] ConfigError),
    #[error("cannot detect this agent's devices: {0}")]
    Devices(#[from] DeviceError),
    #[error("cannot create the work root {path}: {source}")]
    WorkRoot { path: std::path::PathBuf, source: std::io::Error },
    #[error(
        "cannot reach the master at {url} after {attempts} attempts (last error: {last_error}); check master_host and \
         master_port (agent_reconnect_attempts bounds the attempts)"
    )]
    Unreachable { url: String, attempts: u32, last_error: String },
    #[error(
        "lost the connection to the master at {url} and could not reconnect in {attempts} attempts (last error: {last_error}); \
         leave agent_reconnect_attempts unset to keep trying"
    )]
    ConnectionLost { url: String, attempts: u32, last_error: String },
    #[error("the master shut this agent down: {0}")]
    ShutDownByMaster(String),
    /// The master refused the connection (no or a wrong join secret, …); retrying would not help.
    #[error("the master refused this agent: {0}")]
    Refused(String),
    #[error("invalid agent configuration: {0}")]
    Tls(#[from] resolute_tls::TlsError),
}

/// Runs the agent until `shutdown` completes (then its tasks are terminated gracefully and it
/// returns `Ok`), the master shuts it down, or the master stays unreachable.
pub async fn run(config: AgentConfig, shutdown: impl Future<Output = ()>) -> Result<(), DaemonError> {
    let options = RuntimeOptions::from_config(&config)?;
    let tls = MasterTls::from_config(&config)?;
    let devices = detect_devices(&config).await?;
    std::fs::create_dir_all(&options.work_root).map_err(|source| DaemonError::WorkRoot { path: options.work_root.clone(), source })?;
    tracing::info!(
        "agent {} offers {} slot(s): {}; tasks run under {}",
        options.agent_id,
        devices.len(),
        devices.iter().map(|d| d.brand.as_str()).collect::<Vec<_>>().join(", "),
        options.work_root.display()
    );
    let secret = config.security.resolve()?;
    let state_path = state_file::state_path(&options.work_root);
    // The same host and work root: the same agent, after a restart (it takes over the tasks there).
    let instance = format!("{}:{}", hostname(), options.work_root.display());
    let (runtime, events) = Runtime::new(options);
    let (started_tx, started_rx) = mpsc::unbounded_channel();
    let mut daemon = Daemon {
        query: AgentConnectQuery {
            id: config.agent_id(),
            version: AGENT_VERSION.to_string(),
            resource_pool: config.resource_pool.clone(),
            hostname: hostname(),
            reconnect: false,
            instance,
        },
        config,
        secret,
        tls,
        devices,
        runtime,
        events,
        started_tx,
        started_rx,
        tasks: HashMap::new(),
        pending_archives: HashMap::new(),
        batch: LogBatch::default(),
        outbox: Outbox::default(),
        cleanups: JoinSet::new(),
        stopping: false,
        state_path,
        saved_state: None,
    };
    daemon.adopt_recorded();
    let mut shutdown = std::pin::pin!(shutdown);
    let result = daemon.drive(shutdown.as_mut()).await;
    if result.is_err() {
        daemon.stop_tasks(None).await;
    }
    while daemon.cleanups.join_next().await.is_some() {}
    result
}

struct Daemon {
    config: AgentConfig,
    /// The join secret presented to the master; never logged.
    secret: Option<String>,
    tls: MasterTls,
    query: AgentConnectQuery,
    devices: Vec<Device>,
    runtime: Runtime,
    events: mpsc::Receiver<RuntimeEvent>,
    started_tx: mpsc::UnboundedSender<StartOutcome>,
    started_rx: mpsc::UnboundedReceiver<StartOutcome>,
    tasks: HashMap<String, TaskEntry>,
    /// Starts whose work-dir archive is still arriving, by container id.
    pending_archives: HashMap<String, PendingArchive>,
    batch: LogBatch,
    outbox: Outbox,
    /// Work dir removals of ended tasks.
    cleanups: JoinSet<()>,
    /// Shutting down: tasks that finish starting are terminated at once.
    stopping: bool,
    /// The [`state_file`] and what was last written to it.
    state_path: std::path::PathBuf,
    saved_state: Option<AgentState>,
}

/// Something that happened on this machine.
enum Local {
    Event(RuntimeEvent),
    Started(StartOutcome),
    FlushDue,
}

enum SessionEnd {
    Shutdown,
    Lost(String),
}

impl Daemon {
    async fn drive<F: Future<Output = ()>>(&mut self, mut shutdown: Pin<&mut F>) -> Result<(), DaemonError> {
        let mut reconnect = false;
        loop {
            let Some((mut ws, options)) = self.connect_with_retries(reconnect, shutdown.as_mut()).await? else {
                self.stop_tasks(None).await;
                return Ok(());
            };
            reconnect = true;
            let started = self.agent_started(&options, connection::local_addresses(&ws));
            if let Err(e) = connection::send(&mut ws, &started).await {
                tracing::warn!("lost the connection to the master while registering: {e}; reconnecting");
                continue;
            }
            tracing::info!("connected to master {} (cluster {})", options.master_id, options.cluster_id);
            match self.session(&mut ws, shutdown.as_mut()).await? {
                SessionEnd::Shutdown => {
                    let _ = ws.close(None).await;
                    return Ok(());
                }
                SessionEnd::Lost(reason) => {
                    tracing::warn!("lost the connection to the master: {reason}; reconnecting (tasks keep running)");
                    self.fail_pending_archives("the connection to the master was lost");
                }
            }
        }
    }

    fn agent_started(&self, options: &AgentOptions, addresses: Vec<String>) -> AgentToMaster {
        // Every task still running here is reported, known to this master or not: a restarted
        // master no longer owns the old ones and tells the agent to kill them (its recovery rule).
        // A task that ended while the master was unreachable counts as still here until its exit,
        // which waits in the outbox, has been reported: otherwise the master would call it lost.
        let mut reattached: Vec<String> = self.tasks.keys().cloned().collect();
        reattached
            .extend(options.tasks_to_reattach.iter().filter(|id| !self.tasks.contains_key(*id) && self.outbox.holds_exit_of(id)).cloned());
        reattached.sort_unstable();
        let unknown: Vec<&String> = self.tasks.keys().filter(|id| !options.tasks_to_reattach.contains(*id)).collect();
        if !unknown.is_empty() {
            tracing::warn!("the master does not know these running tasks any more; it decides their fate: {unknown:?}");
        }
        AgentToMaster::AgentStarted(AgentStarted {
            version: AGENT_VERSION.to_string(),
            devices: self.devices.iter().map(wire_device).collect(),
            resource_pool: self.config.resource_pool.clone(),
            hostname: self.query.hostname.clone(),
            tasks_reattached: reattached,
            addresses,
            unix_user: unix_user(),
            running_tasks: self
                .tasks
                .iter()
                .filter(|(_, e)| e.running)
                .map(|(id, e)| RunningTask {
                    container_id: id.clone(),
                    allocation_id: e.allocation_id.clone(),
                    task_id: e.task_id.clone(),
                    slot_ids: e.slot_ids.clone(),
                    ports: e.ports.clone(),
                    ready: e.ready,
                })
                .collect(),
        })
    }

    /// Connects (retrying with [`Backoff`]), handling local events meanwhile. `None` when shutdown
    /// was requested.
    async fn connect_with_retries<F: Future<Output = ()>>(
        &mut self,
        reconnect: bool,
        mut shutdown: Pin<&mut F>,
    ) -> Result<Option<(Ws, AgentOptions)>, DaemonError> {
        self.query.reconnect = reconnect;
        let url = connection::agents_url(&self.config.master_host, self.config.master_port, self.tls.enabled(), &self.query);
        let mut backoff = Backoff::new(&self.config);
        let bound = backoff.max_attempts().map_or_else(String::new, |max| format!(" of {max}"));
        // After a lost connection the master may be restarting: give it a moment first.
        let mut wait = reconnect.then(|| backoff.wait(rand::random()));
        let secret = self.secret.clone();
        loop {
            if let Some(wait) = wait.take() {
                let sleep = tokio::time::sleep(wait);
                tokio::pin!(sleep);
                loop {
                    tokio::select! {
                        _ = &mut sleep => break,
                        _ = shutdown.as_mut() => return Ok(None),
                        local = self.next_local() => self.handle_local(local),
                    }
                }
            }
            let connecting = connection::connect(&url, self.tls.client.clone(), secret.as_deref(), HANDSHAKE_TIMEOUT);
            tokio::pin!(connecting);
            let error = loop {
                tokio::select! {
                    result = &mut connecting => match result {
                        Ok(connected) => return Ok(Some(connected)),
                        Err(ConnectError::ShutDown(message)) => return Err(self.refused(message)),
                        Err(ConnectError::Refused(message)) => {
                            tracing::error!("the master refused this agent: {message}");
                            return Err(DaemonError::Refused(message));
                        }
                        Err(e) => break e,
                    },
                    _ = shutdown.as_mut() => return Ok(None),
                    local = self.next_local() => self.handle_local(local),
                }
            };
            let attempt = backoff.attempts() + 1;
            match backoff.failed(rand::random()) {
                Some(next) => {
                    tracing::warn!("cannot connect to the master at {url} (attempt {attempt}{bound}): {error}; retrying in {next:.1?}");
                    wait = Some(next);
                }
                None => {
                    let scheme = if self.tls.enabled() { "wss" } else { "ws" };
                    let (url, attempts, last_error) =
                        (format!("{scheme}://{}:{}/agents", self.config.master_host, self.config.master_port), attempt, error.to_string());
                    return Err(if reconnect {
                        DaemonError::ConnectionLost { url, attempts, last_error }
                    } else {
                        DaemonError::Unreachable { url, attempts, last_error }
                    });
                }
            }
        }
    }

    fn refused(&self, message: String) -> DaemonError {
        tracing::error!("the master shut this agent down: {message}");
        DaemonError::ShutDownByMaster(message)
    }

    async fn session<F: Future<Output = ()>>(&mut self, ws: &mut Ws, mut shutdown: Pin<&mut F>) -> Result<SessionEnd, DaemonError> {
        loop {
            let flushed = self.outbox.flush(ws).await;
            self.note_shipped();
            if let Err(e) = flushed {
                return Ok(SessionEnd::Lost(e.to_string()));
            }
            tokio::select! {
                _ = shutdown.as_mut() => {
                    self.stop_tasks(Some(ws)).await;
                    return Ok(SessionEnd::Shutdown);
                }
                frame = ws.next() => match frame {
                    None => return Ok(SessionEnd::Lost("the master closed the connection".to_string())),
                    Some(Err(e)) => return Ok(SessionEnd::Lost(e.to_string())),
                    Some(Ok(frame)) => match connection::decode(frame) {
                        Incoming::Message(message) => self.handle_master(message)?,
                        Incoming::Closed => return Ok(SessionEnd::Lost("the master closed the connection".to_string())),
                        Incoming::Other => {}
                        Incoming::Bad(e) => tracing::warn!("ignoring a message from the master that is not understood: {e}"),
                    },
                },
                local = self.next_local() => self.handle_local(local),
            }
        }
    }

    fn handle_master(&mut self, message: MasterToAgent) -> Result<(), DaemonError> {
        match message {
            MasterToAgent::StartTask(start) => self.start_task(*start),
            MasterToAgent::TaskArchiveChunk(chunk) => self.archive_chunk(chunk),
            MasterToAgent::TerminateTask { container_id } => self.stop_task(&container_id, Stop::Terminate),
            MasterToAgent::KillTask { container_id } => self.stop_task(&container_id, Stop::Kill),
            MasterToAgent::AgentShutdown { err_msg } => return Err(self.refused(err_msg)),
            MasterToAgent::MasterSetAgentOptions(_) => tracing::warn!("ignoring MasterSetAgentOptions in the middle of a session"),
        }
        Ok(())
    }

    fn start_task(&mut self, start: StartTask) {
        let container_id = start.container_id.clone();
        if self.tasks.contains_key(&container_id) || self.pending_archives.contains_key(&container_id) {
            tracing::warn!("ignoring StartTask for container {container_id}, which already runs here");
            return;
        }
        match start.work_dir_archive_stream.clone() {
            // Started once the last piece arrives.
            Some(stream) => {
                tracing::info!("container {container_id}: receiving its work dir archive ({} bytes)", stream.bytes);
                self.pending_archives.insert(container_id, PendingArchive::new(start, stream));
            }
            None => self.launch_task(start, None),
        }
    }

    fn archive_chunk(&mut self, chunk: TaskArchiveChunk) {
        let container_id = chunk.container_id.clone();
        let Some(pending) = self.pending_archives.get_mut(&container_id) else {
            tracing::warn!("ignoring a work dir archive piece for container {container_id}, which is not starting here");
            return;
        };
        match pending.accept(chunk) {
            Ok(Progress::Incomplete) => {}
            Ok(Progress::Complete) => {
                if let Some(pending) = self.pending_archives.remove(&container_id) {
                    let (start, archive) = pending.into_parts();
                    self.launch_task(start, Some(archive));
                }
            }
            Err(reason) => {
                tracing::warn!("container {container_id} cannot start: {reason}");
                if let Some(pending) = self.pending_archives.remove(&container_id) {
                    self.outbox.push(tasks::terminated(&container_id, &pending.start.allocation_id, tasks::start_failure(&reason)));
                }
            }
        }
    }

    /// Fails every start still waiting for its archive (the master hears it as the task's exit).
    fn fail_pending_archives(&mut self, why: &str) {
        for (container_id, pending) in std::mem::take(&mut self.pending_archives) {
            let reason = pending.interrupted(why);
            tracing::warn!("container {container_id} cannot start: {reason}");
            self.outbox.push(tasks::terminated(&container_id, &pending.start.allocation_id, tasks::start_failure(&reason)));
        }
    }

    /// Starts a task whose archive (if any) is complete: inline in `start`, or `streamed`.
    fn launch_task(&mut self, start: StartTask, streamed: Option<Vec<u8>>) {
        let container_id = start.container_id.clone();
        let agent_uid = nix::unistd::geteuid().as_raw();
        let launch = match tasks::prepare(&start, &self.devices, &self.runtime.options().work_root, agent_uid) {
            Ok(mut launch) => {
                tasks::add_master_address(&mut launch.spec.env, &self.tls, &self.config.master_host, self.config.master_port);
                if streamed.is_some() {
                    launch.spec.work_dir_archive = streamed;
                }
                if let Ok(work_dir) = crate::workdir::task_work_dir(&self.runtime.options().work_root, &start.task_id, &start.allocation_id)
                {
                    self.tls.add_to_task(&mut launch.spec.env, &mut launch.spec.files, &work_dir);
                }
                launch
            }
            Err(reason) => {
                tracing::warn!("container {container_id} cannot start: {reason}");
                self.outbox.push(tasks::terminated(&container_id, &start.allocation_id, tasks::start_failure(&reason)));
                return;
            }
        };
        tracing::info!("starting container {container_id} of task {} ({})", start.task_id, start.description);
        let tasks::Launch { spec, shim, rendezvous, harness_info, readiness, warning } = launch;
        if let Some(warning) = warning {
            tracing::warn!("container {container_id}: {warning}");
            let line = crate::events::LogLine {
                task_id: start.task_id.clone(),
                allocation_id: start.allocation_id.clone(),
                container_id: container_id.clone(),
                timestamp: chrono::Utc::now(),
                stdtype: crate::events::StdType::Stderr,
                log: warning,
                offset: None,
            };
            if self.batch.push(line) {
                self.flush_batch();
            }
        }
        self.tasks.insert(
            container_id.clone(),
            TaskEntry {
                allocation_id: start.allocation_id,
                shim: shim.clone(),
                running: false,
                pending_exit: None,
                pending_stop: None,
                readiness,
                task_id: start.task_id,
                slot_ids: start.slot_ids,
                ports: BTreeMap::new(),
                ready: start.ready_pattern.is_none(),
                ready_pattern: start.ready_pattern,
                shipped: OutputOffsets::default(),
            },
        );
        let (runtime, started) = (self.runtime.clone(), self.started_tx.clone());
        tokio::spawn(async move {
            let result = tasks::launch(runtime, spec, shim, rendezvous, harness_info).await;
            let _ = started.send(StartOutcome { container_id, result });
        });
    }

    fn stop_task(&mut self, container_id: &str, stop: Stop) {
        if let Some(pending) = self.pending_archives.remove(container_id) {
            let reason = pending.interrupted(&format!("the master asked to {} it", if stop == Stop::Kill { "kill" } else { "terminate" }));
            self.outbox.push(tasks::terminated(container_id, &pending.start.allocation_id, tasks::start_failure(&reason)));
            return;
        }
        let Some(entry) = self.tasks.get_mut(container_id) else {
            tracing::warn!("ignoring {stop:?} for container {container_id}, which does not run here");
            return;
        };
        if !entry.running {
            entry.pending_stop = Some(stop);
            return;
        }
        let result = match stop {
            Stop::Terminate => self.runtime.terminate(container_id, None),
            Stop::Kill => self.runtime.kill(container_id),
        };
        if let Err(e) = result {
            tracing::debug!("{stop:?} of container {container_id}: {e}");
        }
    }

    async fn next_local(&mut self) -> Local {
        let deadline = self.batch.deadline();
        tokio::select! {
            Some(event) = self.events.recv() => Local::Event(event),
            Some(outcome) = self.started_rx.recv() => Local::Started(outcome),
            _ = tokio::time::sleep_until(deadline.unwrap_or_else(tokio::time::Instant::now)), if deadline.is_some() => Local::FlushDue,
            else => std::future::pending().await,
        }
    }

    fn handle_local(&mut self, local: Local) {
        match local {
            Local::Event(RuntimeEvent::Log(line)) => {
                let matched = self.tasks.get_mut(&line.container_id).is_some_and(|entry| entry.readiness.check(&line.log) && entry.running);
                let container_id = matched.then(|| line.container_id.clone());
                if self.batch.push(line) {
                    self.flush_batch();
                }
                if let Some(container_id) = container_id {
                    self.report_ready(&container_id);
                }
            }
            Local::Event(RuntimeEvent::Exited { container_id, exit, .. }) => {
                // The task's last lines go out before its exit.
                self.flush_batch();
                match self.tasks.get_mut(&container_id) {
                    Some(entry) if !entry.running => entry.pending_exit = Some(exit),
                    Some(_) => self.finish(&container_id, exit),
                    None => tracing::warn!("container {container_id} exited but was not known to the daemon"),
                }
            }
            Local::Started(outcome) => self.started(outcome),
            Local::FlushDue => self.flush_batch(),
        }
    }

    fn started(&mut self, StartOutcome { container_id, result }: StartOutcome) {
        let Some(entry) = self.tasks.get_mut(&container_id) else { return };
        match result {
            Ok(process) => {
                entry.running = true;
                entry.ports = process.ports.clone();
                let (pending_exit, pending_stop) = (entry.pending_exit.take(), entry.pending_stop.take());
                self.outbox.push(tasks::running(&container_id, &entry.allocation_id, process));
                // The ready line may have come before the start was acknowledged.
                self.report_ready(&container_id);
                if let Some(exit) = pending_exit {
                    self.flush_batch();
                    self.finish(&container_id, exit);
                } else if self.stopping {
                    self.stop_task(&container_id, Stop::Terminate);
                } else if let Some(stop) = pending_stop {
                    self.stop_task(&container_id, stop);
                }
                self.persist();
            }
            Err(reason) => {
                tracing::warn!("container {container_id} could not start: {reason}");
                if let Some(entry) = self.tasks.remove(&container_id) {
                    self.outbox.push(tasks::terminated(&container_id, &entry.allocation_id, tasks::start_failure(&reason)));
                }
            }
        }
    }

    /// Sends `TaskReady` if the task's ready line has been seen and not yet reported, after the
    /// batch that holds the line.
    fn report_ready(&mut self, container_id: &str) {
        let Some(entry) = self.tasks.get_mut(container_id) else { return };
        if !entry.readiness.take_match() {
            return;
        }
        entry.ready = true;
        let allocation_id = entry.allocation_id.clone();
        tracing::info!("container {container_id} is ready");
        self.flush_batch();
        self.outbox.push(tasks::ready(container_id, &allocation_id));
        self.persist();
    }

    /// Reports the exit and removes the task's dirs (unless `keep_work_dirs`).
    fn finish(&mut self, container_id: &str, exit: TaskExit) {
        let Some(entry) = self.tasks.remove(container_id) else { return };
        tracing::info!("container {container_id} exited: {}", exit.failure_message().unwrap_or_else(|| "success".to_string()));
        self.outbox.push(tasks::terminated(container_id, &entry.allocation_id, tasks::exit_info(&exit)));
        self.persist();
        if self.config.keep_work_dirs {
            return;
        }
        let (runtime, container_id) = (self.runtime.clone(), container_id.to_string());
        self.cleanups.spawn(async move {
            if let Err(e) = entry.shim.remove() {
                tracing::warn!("cannot remove {}: {e}", entry.shim.root.display());
            }
            if let Err(e) = runtime.remove(&container_id).await {
                tracing::warn!("cannot clean up container {container_id}: {e}");
            }
        });
        while self.cleanups.try_join_next().is_some() {}
    }

    fn flush_batch(&mut self) {
        if let Some((batches, shipped)) = self.batch.take() {
            self.outbox.push_logs(AgentToMaster::TaskLogs { batches }, shipped);
        }
    }

    /// Terminates every task gracefully and waits for their exits, sending what they report when
    /// a connection is given.
    async fn stop_tasks(&mut self, ws: Option<&mut Ws>) {
        self.stopping = true;
        self.fail_pending_archives("the agent stopped");
        let running: Vec<String> = self.tasks.iter().filter(|(_, e)| e.running).map(|(id, _)| id.clone()).collect();
        if !running.is_empty() {
            tracing::info!("terminating {} task(s)", running.len());
        }
        for container_id in running {
            self.stop_task(&container_id, Stop::Terminate);
        }
        // Past the grace period the runtime kills; the margin covers output draining.
        let deadline = tokio::time::sleep(self.config.termination_grace() + Duration::from_secs(10));
        tokio::pin!(deadline);
        while !self.tasks.is_empty() {
            tokio::select! {
                _ = &mut deadline => {
                    tracing::warn!("tasks still running after the grace period: {:?}", self.tasks.keys().collect::<Vec<_>>());
                    break;
                }
                local = self.next_local() => self.handle_local(local),
            }
        }
        self.flush_batch();
        if let Some(ws) = ws
            && !self.outbox.is_empty()
            && tokio::time::timeout(FINAL_FLUSH_TIMEOUT, self.outbox.flush(ws)).await.is_err()
        {
            tracing::warn!("the master did not take the last task reports within {FINAL_FLUSH_TIMEOUT:?}");
        }
    }
}

fn wire_device(device: &Device) -> AgentDevice {
    let device_type = match device.device_type {
        DeviceType::Cpu => "cpu",
        DeviceType::Cuda => "cuda",
    };
    AgentDevice { id: device.id, brand: device.brand.clone(), uuid: device.uuid.clone(), device_type: device_type.to_string() }
}

/// The account this agent runs as (and so, unless it is root, every task it starts).
fn unix_user() -> Option<AgentUnixUser> {
    let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
    let user = nix::unistd::User::from_uid(uid).ok().flatten()?;
    let group = nix::unistd::Group::from_gid(gid).ok().flatten().map(|g| g.name).unwrap_or_else(|| gid.to_string());
    Some(AgentUnixUser { user: user.name, uid: uid.as_raw(), group, gid: gid.as_raw() })
}

fn hostname() -> String {
    nix::unistd::gethostname().ok().map(|name| name.to_string_lossy().into_owned()).filter(|n| !n.is_empty()).unwrap_or_default()
}
