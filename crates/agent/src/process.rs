//! The runtime: starts tasks as local processes and supervises them.
//!
//! Each task runs in its own process group in `<work_root>/<task_id>/<allocation_id>/`, as the
//! spec's `run_as` account when it names one (the work dir is then that account's alone, see
//! [`crate::task_user`]). The group stands in for a container: signals go to the whole group, and
//! when the main process exits, whatever it left running in the group is killed, as when a
//! container's PID 1 exits. The leader is observed with `waitid(WNOWAIT)` and reaped only after
//! the group is killed, so its pid (= the group id) cannot be reused while the group is being
//! signalled.
//!
//! Nothing ties a task to the agent process: its stdout and stderr are files that the runtime
//! follows ([`crate::logs::tail`]), its group leader is the exit recorder
//! ([`crate::exit_recorder`]), which writes how the task ended to a file, and the group is not
//! the agent's. So a task outlives an agent that crashes or is killed, and a restarted agent
//! [`Runtime::adopt`]s it: it watches the recorded pid (with its start time, against pid reuse)
//! until it is gone, then kills what is left of the group and reads the recorded exit.
//!
//! [`Runtime`] is cheap to clone and meant to be driven by the master connection: `start` on
//! `StartContainer`, `signal`/`terminate`/`kill` on `SignalContainer`, events out as
//! `ContainerLog`/`ContainerStateChanged`, `remove` once the master has the exit.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{Id, WaitPidFlag, waitid};
use nix::unistd::Pid;
use tokio::sync::{mpsc, watch};

use crate::config::{AgentConfig, ConfigError};
use crate::events::{RuntimeEvent, StdType, TaskExit};
use crate::exit_recorder::ExitRecorder;
use crate::logs::{LogSource, tail};
use crate::ports::{PortError, PortReservation};
use crate::spec::{
    DEFAULT_INHERITED_ENV, LaunchContext, STARTUP_HOOKS, SpecError, TaskSpec, command_line, environment, inherited_env, resolve_python,
};
use crate::task_files::{RecordedExit, TaskFiles, proc_stat, still_running};
use crate::task_user::{HandOverError, drop_privileges, hand_over_tree, prepare_task_dirs};
use crate::workdir::{WorkDirError, prepare_work_dir, remove_harness_scratch, remove_work_dir, task_work_dir};

/// Settings of a [`Runtime`].
#[derive(Debug, Clone)]
pub struct RuntimeOptions {
    pub agent_id: String,
    pub work_root: PathBuf,
    /// Default interpreter; a task's spec may override it.
    pub python: PathBuf,
    /// Grace period of [`Runtime::terminate`] when none is given.
    pub termination_grace: Duration,
    /// Capacity of the event channel, in events (log lines and exits).
    pub event_capacity: usize,
    /// Names (or `PREFIX*`) of the agent's environment variables that tasks inherit.
    pub inherited_env: Vec<String>,
    /// How often a task adopted after a restart (not the agent's child) is checked for its exit.
    pub adopted_poll: Duration,
    /// Where the upstream harness writes per-allocation scratch (`tensorboard-<allocation>-<rank>`);
    /// it hard-codes `/tmp`. Removed with the work dir ([`Runtime::remove`]).
    pub harness_scratch_root: PathBuf,
}

impl RuntimeOptions {
    pub fn from_config(config: &AgentConfig) -> Result<RuntimeOptions, ConfigError> {
        config.validate()?;
        Ok(RuntimeOptions {
            agent_id: config.agent_id(),
            work_root: crate::config::absolute(&config.work_root()),
            python: config.python.clone(),
            termination_grace: config.termination_grace(),
            event_capacity: 4096,
            inherited_env: DEFAULT_INHERITED_ENV.iter().map(|s| s.to_string()).collect(),
            adopted_poll: Duration::from_millis(200),
            harness_scratch_root: PathBuf::from("/tmp"),
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error(transparent)]
    WorkDir(#[from] WorkDirError),
    #[error(transparent)]
    Ports(#[from] PortError),
    #[error("container id {0:?} is empty or already in use on this agent")]
    ContainerIdInUse(String),
    #[error("cannot start {program:?}: {source}")]
    Spawn { program: String, source: std::io::Error },
    #[error("no task with container id {0} on this agent")]
    UnknownContainer(String),
    #[error("container {0} has already exited")]
    NotRunning(String),
    #[error("container {0} is still running; terminate it and wait for its exit first")]
    StillRunning(String),
    #[error("cannot signal container {container_id}: {source}")]
    Signal { container_id: String, source: nix::Error },
    #[error("the supervisor of container {0} stopped before the task exited (runtime shutting down)")]
    SupervisorGone(String),
    #[error("work dir preparation was interrupted: {0}")]
    Interrupted(String),
    #[error(transparent)]
    HandOver(#[from] HandOverError),
    #[error("cannot create the output files of container {container_id} in {}: {source}", dir.display())]
    OutputFiles { container_id: String, dir: PathBuf, source: std::io::Error },
}

/// What identifies a running task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskInfo {
    pub task_id: String,
    pub allocation_id: String,
    pub container_id: String,
    /// Pid of the main process, which is also the process group id.
    pub pid: u32,
    pub work_dir: PathBuf,
    /// The host ports chosen for the spec's `port_env`, by variable name.
    pub ports: BTreeMap<String, u16>,
    /// The main process's start time in `/proc` (clock ticks after boot): with `pid`, what tells
    /// it from a later process with the same pid.
    pub start_ticks: u64,
    pub started_at: SystemTime,
    /// Its output and exit files.
    pub files: TaskFiles,
}

/// How far a task's output files have been read and sent: where a restarted agent resumes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutputOffsets {
    pub stdout: u64,
    pub stderr: u64,
}

/// A task and how it ended, if it has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskStatus {
    pub info: TaskInfo,
    pub exit: Option<TaskExit>,
}

/// Starts and supervises task processes; clones share the same tasks.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

struct Inner {
    options: RuntimeOptions,
    events: mpsc::Sender<RuntimeEvent>,
    registry: Mutex<Registry>,
}

#[derive(Default)]
struct Registry {
    tasks: HashMap<String, Arc<Task>>,
    /// Container ids of tasks being started, so two starts cannot claim the same id.
    starting: HashSet<String>,
}

struct Task {
    info: TaskInfo,
    /// False once the main process has exited; guarded so no signal is sent after that.
    alive: Mutex<bool>,
    /// A SIGKILL was sent to the group: what ended an adopted task whose recorder, killed with
    /// it, wrote no exit.
    killed: std::sync::atomic::AtomicBool,
    exit: watch::Receiver<Option<TaskExit>>,
    tokio: tokio::runtime::Handle,
}

/// A handle on one task; cheap to clone.
#[derive(Clone)]
pub struct TaskHandle {
    task: Arc<Task>,
}

impl std::fmt::Debug for TaskHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskHandle").field("info", &self.task.info).field("exit", &self.exit()).finish()
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime").field("options", &self.inner.options).field("tasks", &lock(&self.inner.registry).tasks.len()).finish()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding these locks leaves plain data behind; keep going.
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Runtime {
    /// A runtime and the receiving end of its events: every task's log lines and exits.
    pub fn new(options: RuntimeOptions) -> (Runtime, mpsc::Receiver<RuntimeEvent>) {
        let (events, receiver) = mpsc::channel(options.event_capacity.max(1));
        (Runtime { inner: Arc::new(Inner { options, events, registry: Mutex::default() }) }, receiver)
    }

    pub fn options(&self) -> &RuntimeOptions {
        &self.inner.options
    }

    /// Prepares the work dir (archive, then files), picks the host ports of the spec's `port_env`
    /// and spawns the task with them in its environment. Returns once the process runs; its exit
    /// is reported by [`TaskHandle::wait`] and as [`RuntimeEvent::Exited`].
    pub async fn start(&self, mut spec: TaskSpec) -> Result<TaskHandle, RuntimeError> {
        let options = &self.inner.options;
        let work_dir = task_work_dir(&options.work_root, &spec.task_id, &spec.allocation_id)?;
        command_line(&spec.entrypoint, &[])?;
        let container_id = spec.container_id.clone().unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let _reservation = self.reserve(&container_id)?;

        let inherited = inherited_env(&options.inherited_env);
        let path_var = spec.env.get("PATH").or_else(|| inherited.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v)).cloned();
        let python = resolve_python(spec.python.as_deref().unwrap_or(&options.python), path_var.as_deref().map(std::ffi::OsStr::new))?;
        let context = LaunchContext { agent_id: &options.agent_id, container_id: &container_id, python: &python, inherited };
        let mut env = environment(&spec, &context)?;
        let ports = PortReservation::reserve(&spec.port_env)?;

        if let Some(account) = &spec.run_as {
            env.extend(account.login_env(&work_dir).map(|(name, value)| (name.to_string(), value)));
        }
        let archive = spec.work_dir_archive.take();
        let files = std::mem::take(&mut spec.files);
        let (dir, run_as, task_dirs) = (work_dir.clone(), spec.run_as.clone(), spec.task_dirs.clone());
        let prepare = move || -> Result<(), RuntimeError> {
            prepare_work_dir(&dir, archive.as_deref(), &files)?;
            if let Some(account) = &run_as {
                let handed = hand_over_tree(&dir, account).and_then(|()| prepare_task_dirs(&task_dirs, account));
                if let Err(e) = handed {
                    let _ = remove_work_dir(&dir);
                    return Err(e.into());
                }
            }
            Ok(())
        };
        tokio::task::spawn_blocking(prepare).await.map_err(|e| RuntimeError::Interrupted(e.to_string()))??;

        // Released only now, so that nothing else on the host takes them while the work dir is filled.
        let ports = ports.release();
        env.extend(ports.iter().map(|(name, port)| (name.clone(), port.to_string())));
        let spawned = self.spawn(&spec, &container_id, &work_dir, &env, ports);
        let (task, child, started) = match spawned {
            Ok(spawned) => spawned,
            Err(e) => {
                let _ = remove_work_dir(&work_dir);
                return Err(e);
            }
        };
        lock(&self.inner.registry).tasks.insert(container_id, task.clone());
        Ok(self.supervise(task, child, started))
    }

    fn reserve(&self, container_id: &str) -> Result<Reservation, RuntimeError> {
        let mut registry = lock(&self.inner.registry);
        if container_id.is_empty() || registry.tasks.contains_key(container_id) || !registry.starting.insert(container_id.to_string()) {
            return Err(RuntimeError::ContainerIdInUse(container_id.to_string()));
        }
        Ok(Reservation { runtime: self.clone(), container_id: container_id.to_string() })
    }

    fn spawn(
        &self,
        spec: &TaskSpec,
        container_id: &str,
        work_dir: &std::path::Path,
        env: &BTreeMap<String, String>,
        ports: BTreeMap<String, u16>,
    ) -> Result<(Arc<Task>, SpawnedChild, Instant), RuntimeError> {
        let hooks: Vec<&str> = STARTUP_HOOKS.into_iter().filter(|h| work_dir.join(h).is_file()).collect();
        let argv = command_line(&spec.entrypoint, &hooks)?;
        let Some((program, args)) = argv.split_first() else { return Err(SpecError::EmptyEntrypoint.into()) };
        let files = TaskFiles::new(&self.inner.options.work_root, container_id)?;
        let output_error = |source| RuntimeError::OutputFiles { container_id: container_id.to_string(), dir: files.dir.clone(), source };
        // Left over from a task with this container id that ended while no agent watched it.
        files.remove().map_err(output_error)?;
        let (stdout, stderr) = files.create().map_err(output_error)?;
        let recorder = ExitRecorder::new(&files.exit()).map_err(output_error)?;
        let mut command = tokio::process::Command::new(program);
        command
            .args(args)
            .env_clear()
            .envs(env)
            .current_dir(work_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::from(stdout))
            .stderr(Stdio::from(stderr))
            .process_group(0)
            .kill_on_drop(false);
        // SAFETY: the recorder's hook makes only async-signal-safe system calls and allocates nothing.
        unsafe {
            command.pre_exec(move || recorder.fork());
        }
        if let Some(account) = &spec.run_as {
            let (uid, gid) = (account.uid, account.gid);
            // SAFETY: `drop_privileges` makes only async-signal-safe system calls and allocates nothing.
            unsafe {
                command.pre_exec(move || drop_privileges(uid, gid));
            }
        }
        let started = Instant::now();
        let child = command.spawn().map_err(|source| {
            let _ = files.remove();
            RuntimeError::Spawn { program: program.clone(), source }
        })?;
        let Some(pid) = child.id() else {
            // Cannot happen before the child is waited for; treat as a failed start.
            return Err(RuntimeError::Spawn { program: program.clone(), source: std::io::Error::other("the process has no pid") });
        };
        // The child is not reaped before `watch_exit`, so its stat is there.
        let start_ticks = proc_stat(pid).map_or(0, |s| s.start_ticks);
        let (exit_sender, exit) = watch::channel(None);
        let info = TaskInfo {
            task_id: spec.task_id.clone(),
            allocation_id: spec.allocation_id.clone(),
            container_id: container_id.to_string(),
            pid,
            work_dir: work_dir.to_path_buf(),
            ports,
            start_ticks,
            started_at: SystemTime::now(),
            files,
        };
        let task =
            Arc::new(Task { info, alive: Mutex::new(true), killed: Default::default(), exit, tokio: tokio::runtime::Handle::current() });
        Ok((task, SpawnedChild { child, exit_sender }, started))
    }

    fn supervise(&self, task: Arc<Task>, spawned: SpawnedChild, started: Instant) -> TaskHandle {
        let output = self.follow(&task, OutputOffsets::default());
        tokio::spawn(watch_exit(task.clone(), spawned.child, output, spawned.exit_sender, self.inner.events.clone(), started));
        TaskHandle { task }
    }

    /// Starts following the task's output files from `offsets`.
    fn follow(&self, task: &Task, offsets: OutputOffsets) -> Output {
        let source = Arc::new(LogSource {
            task_id: task.info.task_id.clone(),
            allocation_id: task.info.allocation_id.clone(),
            container_id: task.info.container_id.clone(),
        });
        let (done, finished) = watch::channel(false);
        let readers = [(StdType::Stdout, offsets.stdout), (StdType::Stderr, offsets.stderr)]
            .into_iter()
            .map(|(stdtype, offset)| {
                let path = task.info.files.output(stdtype);
                tokio::spawn(tail(path, offset, stdtype, source.clone(), self.inner.events.clone(), finished.clone()))
            })
            .collect();
        Output { readers, done }
    }

    /// Takes over a task that an earlier agent process started and recorded (`info`), whose
    /// output was sent up to `offsets`: its output is followed from there, and its exit — now or
    /// whenever its recorded process is gone — is reported with the status its recorder wrote.
    pub fn adopt(&self, info: TaskInfo, offsets: OutputOffsets) -> Result<TaskHandle, RuntimeError> {
        let container_id = info.container_id.clone();
        let _reservation = self.reserve(&container_id)?;
        let (exit_sender, exit) = watch::channel(None);
        let task =
            Arc::new(Task { info, alive: Mutex::new(true), killed: Default::default(), exit, tokio: tokio::runtime::Handle::current() });
        let output = self.follow(&task, offsets);
        lock(&self.inner.registry).tasks.insert(container_id, task.clone());
        tokio::spawn(watch_adopted(task.clone(), output, exit_sender, self.inner.events.clone(), self.inner.options.adopted_poll));
        Ok(TaskHandle { task })
    }

    /// The task with this container id.
    pub fn task(&self, container_id: &str) -> Result<TaskHandle, RuntimeError> {
        let registry = lock(&self.inner.registry);
        let task = registry.tasks.get(container_id).ok_or_else(|| RuntimeError::UnknownContainer(container_id.to_string()))?;
        Ok(TaskHandle { task: task.clone() })
    }

    /// Every task not yet removed, running or exited.
    pub fn tasks(&self) -> Vec<TaskStatus> {
        let registry = lock(&self.inner.registry);
        registry.tasks.values().map(|t| TaskHandle { task: t.clone() }.status()).collect()
    }

    /// Sends `signal` to the task's whole process group.
    pub fn signal(&self, container_id: &str, signal: Signal) -> Result<(), RuntimeError> {
        self.task(container_id)?.signal(signal)
    }

    /// SIGTERM to the group now, SIGKILL if it has not exited after `grace` (default: the configured grace).
    pub fn terminate(&self, container_id: &str, grace: Option<Duration>) -> Result<(), RuntimeError> {
        self.task(container_id)?.terminate(grace.unwrap_or(self.inner.options.termination_grace))
    }

    /// SIGKILL to the group now.
    pub fn kill(&self, container_id: &str) -> Result<(), RuntimeError> {
        self.task(container_id)?.kill()
    }

    /// Forgets an exited task and deletes its work dir and the harness's scratch dirs.
    pub async fn remove(&self, container_id: &str) -> Result<(), RuntimeError> {
        let handle = self.task(container_id)?;
        if handle.exit().is_none() {
            return Err(RuntimeError::StillRunning(container_id.to_string()));
        }
        let dir = handle.task.info.work_dir.clone();
        let files = handle.task.info.files.clone();
        let scratch_root = self.inner.options.harness_scratch_root.clone();
        let allocation_id = handle.task.info.allocation_id.clone();
        let removal = move || {
            remove_work_dir(&dir)?;
            if let Err(e) = files.remove() {
                tracing::warn!("cannot remove the output files in {}: {e}", files.dir.display());
            }
            // Left behind, these only take space: a warning, not a failed removal.
            if let Err(e) = remove_harness_scratch(&scratch_root, &allocation_id) {
                tracing::warn!("cannot remove the harness scratch of allocation {allocation_id} in {}: {e}", scratch_root.display());
            }
            Ok::<_, WorkDirError>(())
        };
        tokio::task::spawn_blocking(removal).await.map_err(|e| RuntimeError::Interrupted(e.to_string()))??;
        lock(&self.inner.registry).tasks.remove(container_id);
        Ok(())
    }

    /// Terminates every running task with `grace` and waits for all of them to exit.
    pub async fn shutdown(&self, grace: Duration) {
        let handles: Vec<TaskHandle> = lock(&self.inner.registry).tasks.values().map(|t| TaskHandle { task: t.clone() }).collect();
        for handle in &handles {
            let _ = handle.terminate(grace);
        }
        for handle in &handles {
            let _ = handle.wait().await;
        }
    }
}

/// Releases a container id reserved by `start`, whether the start succeeded or not.
struct Reservation {
    runtime: Runtime,
    container_id: String,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        lock(&self.runtime.inner.registry).starting.remove(&self.container_id);
    }
}

/// The tailers of a task's stdout and stderr files.
struct Output {
    readers: Vec<tokio::task::JoinHandle<()>>,
    /// Set once the task's group is gone: the tailers read to the end and stop.
    done: watch::Sender<bool>,
}

impl Output {
    /// Lets the tailers send the rest of the output, and waits for them.
    async fn drain(self) {
        self.done.send_replace(true);
        for reader in self.readers {
            let _ = reader.await;
        }
    }
}

struct SpawnedChild {
    child: tokio::process::Child,
    exit_sender: watch::Sender<Option<TaskExit>>,
}

/// Waits for the main process, kills what is left of its group, drains the output, then reports.
async fn watch_exit(
    task: Arc<Task>,
    mut child: tokio::process::Child,
    output: Output,
    exit_sender: watch::Sender<Option<TaskExit>>,
    events: mpsc::Sender<RuntimeEvent>,
    started: Instant,
) {
    let pid = Pid::from_raw(task.info.pid as i32);
    let (exited, exited_received) = tokio::sync::oneshot::channel();
    // A plain thread, not `spawn_blocking`: dropping a Tokio runtime waits for blocking tasks, and
    // this one lasts as long as the task does.
    let waiter = std::thread::Builder::new().name(format!("wait-{pid}")).spawn(move || {
        wait_without_reaping(pid);
        let _ = exited.send(());
    });
    let observed = match waiter {
        Ok(_) => exited_received.await.is_ok(),
        Err(e) => {
            tracing::warn!(
                "cannot start a thread to wait for container {}: {e}; its group is killed after reaping",
                task.info.container_id
            );
            false
        }
    };
    let kill_group = || {
        let mut alive = lock(&task.alive);
        let _ = killpg(pid, Signal::SIGKILL);
        *alive = false;
    };
    if observed {
        // The leader is a zombie until reaped below, so the group id cannot name another group yet.
        kill_group();
    }
    let status = child.wait().await;
    let duration = started.elapsed();
    if !observed {
        kill_group();
    }
    let exit = match status {
        Ok(status) => TaskExit { code: status.code(), signal: status.signal(), duration },
        Err(e) => {
            tracing::warn!("cannot reap container {}: {e}", task.info.container_id);
            TaskExit { code: None, signal: None, duration }
        }
    };
    output.drain().await;
    report_exit(&task, exit, exit_sender, events).await;
}

/// Publishes the exit and sends it as the task's last event.
async fn report_exit(task: &Task, exit: TaskExit, exit_sender: watch::Sender<Option<TaskExit>>, events: mpsc::Sender<RuntimeEvent>) {
    exit_sender.send_replace(Some(exit));
    let info = &task.info;
    let event = RuntimeEvent::Exited {
        task_id: info.task_id.clone(),
        allocation_id: info.allocation_id.clone(),
        container_id: info.container_id.clone(),
        exit,
    };
    let _ = events.send(event).await;
}

/// Watches an adopted task, which is not this process's child, until its recorded process is gone;
/// then kills what is left of its group and reports the exit its recorder wrote.
async fn watch_adopted(
    task: Arc<Task>,
    output: Output,
    exit_sender: watch::Sender<Option<TaskExit>>,
    events: mpsc::Sender<RuntimeEvent>,
    poll: Duration,
) {
    let (pid, start_ticks) = (task.info.pid, task.info.start_ticks);
    while still_running(pid, start_ticks) {
        tokio::time::sleep(poll).await;
    }
    {
        let mut alive = lock(&task.alive);
        // Unless another process took the pid (then the group is long gone), the group id still
        // names the task's group, or none.
        if proc_stat(pid).is_none_or(|s| s.start_ticks == start_ticks) {
            let _ = killpg(Pid::from_raw(pid as i32), Signal::SIGKILL);
        }
        *alive = false;
    }
    let duration = SystemTime::now().duration_since(task.info.started_at).unwrap_or_default();
    let exit = match task.info.files.read_exit() {
        Some(RecordedExit::Code(code)) => TaskExit { code: Some(code), signal: None, duration },
        Some(RecordedExit::Signal(signal)) => TaskExit { code: None, signal: Some(signal), duration },
        None if task.killed.load(std::sync::atomic::Ordering::Relaxed) => {
            TaskExit { code: None, signal: Some(Signal::SIGKILL as i32), duration }
        }
        None => {
            tracing::warn!("container {} ended without a recorded exit status (its recorder was killed)", task.info.container_id);
            TaskExit { code: None, signal: None, duration }
        }
    };
    output.drain().await;
    report_exit(&task, exit, exit_sender, events).await;
}

/// Blocks until `pid` has exited, leaving it a zombie (not reaped).
fn wait_without_reaping(pid: Pid) {
    loop {
        match waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT) {
            Err(nix::errno::Errno::EINTR) => continue,
            Ok(_) | Err(_) => return,
        }
    }
}

impl TaskHandle {
    pub fn info(&self) -> &TaskInfo {
        &self.task.info
    }

    pub fn container_id(&self) -> &str {
        &self.task.info.container_id
    }

    /// How the task ended, or `None` while it runs (or its output is still being drained).
    pub fn exit(&self) -> Option<TaskExit> {
        *self.task.exit.borrow()
    }

    pub fn status(&self) -> TaskStatus {
        TaskStatus { info: self.task.info.clone(), exit: self.exit() }
    }

    /// Waits until the task has exited and all its output has been sent to the event channel.
    pub async fn wait(&self) -> Result<TaskExit, RuntimeError> {
        let mut exit = self.task.exit.clone();
        let result = exit.wait_for(Option::is_some).await.map(|e| *e);
        match result {
            Ok(Some(exit)) => Ok(exit),
            _ => Err(RuntimeError::SupervisorGone(self.task.info.container_id.clone())),
        }
    }

    /// Sends `signal` to the task's process group.
    pub fn signal(&self, signal: Signal) -> Result<(), RuntimeError> {
        let container_id = &self.task.info.container_id;
        let alive = lock(&self.task.alive);
        if !*alive {
            return Err(RuntimeError::NotRunning(container_id.clone()));
        }
        if signal == Signal::SIGKILL {
            self.task.killed.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        killpg(Pid::from_raw(self.task.info.pid as i32), signal)
            .map_err(|source| RuntimeError::Signal { container_id: container_id.clone(), source })
    }

    /// SIGTERM to the group now, SIGKILL to the group if the task has not exited after `grace`.
    pub fn terminate(&self, grace: Duration) -> Result<(), RuntimeError> {
        self.signal(Signal::SIGTERM)?;
        let handle = self.clone();
        let mut exit = self.task.exit.clone();
        self.task.tokio.spawn(async move {
            tokio::select! {
                _ = exit.wait_for(Option::is_some) => {}
                _ = tokio::time::sleep(grace) => {
                    let _ = handle.kill();
                }
            }
        });
        Ok(())
    }

    /// SIGKILL to the group now.
    pub fn kill(&self) -> Result<(), RuntimeError> {
        self.signal(Signal::SIGKILL)
    }
}
