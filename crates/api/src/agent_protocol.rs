//! The master ↔ agent protocol: one JSON object per websocket text frame on
//! `GET /agents?id=<agent_id>&version=<v>&resource_pool=<pool>&hostname=<host>&reconnect=<bool>`.
//!
//! Modelled on upstream's agent RM protocol (externally tagged envelopes: exactly one variant per
//! message, `{"StartTask": {…}}`), but for a process runtime rather than Docker: a task is an
//! entrypoint, an environment and a work-dir archive, not a container spec. Only our own agent
//! speaks it, so field names are ours (snake_case).
//!
//! Order of a session: the agent connects; the master sends [`MasterToAgent::MasterSetAgentOptions`];
//! the agent answers [`AgentToMaster::AgentStarted`] with its devices; from then on the master sends
//! `StartTask`/`SignalTask`/`KillTask` and the agent streams `TaskLogs` and `TaskStateChanged`. A
//! task's last log batch is always sent before its `Terminated` state change, and the batch holding
//! the line that matched a task's `ready_pattern` before its `TaskReady`.
//!
//! The upgrade request carries the cluster's join secret as `Authorization: Bearer <secret>`
//! ([`AGENT_SECRET_HEADER`]); a master refuses it with 401 and the error envelope naming the cause.
//!
//! No message may exceed [`MAX_MESSAGE_BYTES`] (the agent's frame limit): a work-dir archive is
//! never inlined but follows its `StartTask` as [`MasterToAgent::TaskArchiveChunk`]s of at most
//! [`ARCHIVE_CHUNK_BYTES`] each, in order, the last one marked `last`.
//!
//! Fields added after the first version carry `#[serde(default)]`, so either side may be older.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Query parameters of the agent websocket upgrade.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentConnectQuery {
    pub id: String,
    #[serde(default)]
    pub version: String,
    #[serde(default = "default_pool")]
    pub resource_pool: String,
    #[serde(default)]
    pub hostname: String,
    /// The agent had a session before (it reconnects after losing it).
    #[serde(default)]
    pub reconnect: bool,
    /// The agent's installation: its host and work root. An agent process started again there
    /// presents the same one and replaces its earlier session, even one the master still holds
    /// open (a Resolute addition; empty from agents that do not send it).
    #[serde(default)]
    pub instance: String,
}

/// The header of the upgrade request that carries the join secret (`Bearer <secret>`).
pub const AGENT_SECRET_HEADER: &str = "authorization";

/// The largest websocket message (and frame) either side sends or accepts: the agent's limit.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// Raw bytes of the archive per [`MasterToAgent::TaskArchiveChunk`]: 1 MiB once base64-encoded.
pub const ARCHIVE_CHUNK_BYTES: usize = 768 * 1024;

fn default_pool() -> String {
    "default".to_owned()
}

/// Messages from the master.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum MasterToAgent {
    /// Sent first on every connection.
    MasterSetAgentOptions(AgentOptions),
    StartTask(Box<StartTask>),
    /// Graceful stop: SIGTERM to the task's process group, SIGKILL after the agent's grace period.
    TerminateTask {
        container_id: String,
    },
    /// Immediate SIGKILL to the task's process group.
    KillTask {
        container_id: String,
    },
    /// One piece of the work-dir archive of a `StartTask` whose `work_dir_archive_stream` is set.
    /// Chunks follow their `StartTask` in order (`seq` from 0); the one with `last` completes the
    /// archive, which the agent then checks against the announced size and extracts.
    TaskArchiveChunk(TaskArchiveChunk),
    /// The master refuses this agent (e.g. a duplicate id); the agent logs `err_msg` and exits.
    AgentShutdown {
        err_msg: String,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentOptions {
    pub master_id: String,
    pub cluster_id: String,
    pub cluster_name: String,
    /// The master's version (`DETERMINED_VERSION`).
    pub version: String,
    /// Containers (tasks) the master still believes run on this agent, for reattachment after a
    /// reconnect. The agent reports which of them it still supervises.
    #[serde(default)]
    pub tasks_to_reattach: Vec<String>,
}

/// Messages from the agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum AgentToMaster {
    AgentStarted(AgentStarted),
    TaskStateChanged(TaskStateChanged),
    /// Captured output, grouped by task in capture order.
    TaskLogs {
        batches: Vec<TaskLogBatch>,
    },
    /// A line of the task's output matched its `ready_pattern` (sent once per container, after
    /// the `TaskLogs` holding that line and after the task's `Running`).
    TaskReady {
        container_id: String,
        allocation_id: String,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentStarted {
    pub version: String,
    pub devices: Vec<AgentDevice>,
    pub resource_pool: String,
    #[serde(default)]
    pub hostname: String,
    /// The container ids still running here (whether or not in `tasks_to_reattach`: the master
    /// kills those it does not own), and those of `tasks_to_reattach` whose exit the agent has yet
    /// to report.
    #[serde(default)]
    pub tasks_reattached: Vec<String>,
    /// The IP addresses at which other hosts (the master's proxy) reach this agent's task ports:
    /// the local address of the agent's connection to the master (upstream's `addresses[]`).
    #[serde(default)]
    pub addresses: Vec<String>,
    /// The agent's own Unix account. An agent running as root runs each task as the task's
    /// `StartTask.run_as`; any other runs them all as this account (then the user a shell's ssh
    /// logs in as).
    #[serde(default)]
    pub unix_user: Option<AgentUnixUser>,
    /// Ours: what a restarted master needs to re-adopt each task still running here (it knows the
    /// allocations from its store, not the container ids): one entry per running task.
    #[serde(default)]
    pub running_tasks: Vec<RunningTask>,
}

/// A task an agent still runs when it (re)registers: enough for a master that restarted to
/// re-adopt it into its allocation (`cluster/reattach.rs`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunningTask {
    pub container_id: String,
    pub allocation_id: String,
    pub task_id: String,
    pub slot_ids: Vec<u32>,
    /// Each `port_env` name → the port chosen for it at start.
    #[serde(default)]
    pub ports: BTreeMap<String, u16>,
    /// Its readiness line was seen (or it has no readiness pattern and runs).
    #[serde(default)]
    pub ready: bool,
}

/// An agent's Unix account, in the shape of upstream's agent user group (`v1Shell.agentUserGroup`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentUnixUser {
    pub user: String,
    pub uid: u32,
    pub group: String,
    pub gid: u32,
}

/// One slot the agent offers (upstream `device.Device`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentDevice {
    /// The slot id: the device index (`/agents/<agent>/slots/<id>`).
    pub id: u32,
    /// E.g. "NVIDIA H100 80GB HBM3", or "<cpu model> x 16 cores".
    pub brand: String,
    /// GPU UUID; empty for CPU slots.
    pub uuid: String,
    /// `cpu`, `cuda` or `rocm`, as upstream's agent wire.
    #[serde(rename = "type")]
    pub device_type: String,
}

/// Where in a task's work dir the master puts `task_container_defaults.startup_hook`; the agent
/// sources it before the task's own `startup-hook.sh`.
pub const DEFAULTS_STARTUP_HOOK: &str = ".det/startup-hook-defaults.sh";

/// Everything the agent needs to run one task's process.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StartTask {
    /// The resources id of this process; the handle for signals and reports.
    pub container_id: String,
    pub task_id: String,
    pub allocation_id: String,
    /// `TRIAL`, `COMMAND`, `CHECKPOINT_GC`, … (the `DET_TASK_TYPE` values).
    pub task_type: String,
    /// Human-readable ("Trial 34 (Experiment 12)").
    #[serde(default)]
    pub description: String,
    /// The slots assigned, by device id; they must be devices this agent reported.
    pub slot_ids: Vec<u32>,
    /// A string is run with `sh -c`, a list is an argv (upstream `entrypoint`).
    pub entrypoint: TaskEntrypoint,
    /// `DET_*` variables from the master and the user's `environment_variables`. The agent adds
    /// what only it knows (agent id, container id, slot ids, CUDA_VISIBLE_DEVICES).
    pub env: BTreeMap<String, String>,
    /// A tar.gz of the work dir (the model definition), base64; extracted before start. Inside
    /// the master only: on the wire the archive is announced by `work_dir_archive_stream` and
    /// sent as [`TaskArchiveChunk`]s, so no message grows with it.
    #[serde(default)]
    pub work_dir_archive_b64: Option<String>,
    /// The archive follows as [`MasterToAgent::TaskArchiveChunk`]s; the task starts once all arrived.
    #[serde(default)]
    pub work_dir_archive_stream: Option<ArchiveStream>,
    /// Overrides the agent's interpreter for this task (the experiment's `environment.python`).
    #[serde(default)]
    pub python: Option<String>,
    /// Names of environment variables that each get a free TCP port of this host, chosen by the
    /// agent (`NAME=<port>`); reported in the `Running` change's `ports`.
    #[serde(default)]
    pub port_env: Vec<String>,
    /// A regular expression (Rust `regex` syntax) matched against each line the task prints; the
    /// first match sends `TaskReady`. An invalid pattern fails the start.
    #[serde(default)]
    pub ready_pattern: Option<String>,
    /// Files written into the work dir after the archive is extracted (an sshd host key, a
    /// Jupyter config, …).
    #[serde(default)]
    pub files: Vec<TaskFile>,
    /// Info files for the upstream harness (`determined._info`), which upstream's container
    /// entrypoint writes to `/run/determined/info/`: file name (`trial.json`) → its JSON content.
    /// The agent writes them beside the ones only it can (`cluster.json`, `rendezvous.json`,
    /// `resources.json`, which may not be named here) into the task's harness info dir.
    #[serde(default)]
    pub harness_info: BTreeMap<String, serde_json::Value>,
    /// The Unix account the task's processes run as (its owner's agent user group, else the
    /// master's `security.default_task_user`). An agent running as root switches to it and makes
    /// the task's files that account's alone; any other agent runs the task as itself and says so
    /// in the task's log. `None` (an older master): the agent's own account.
    #[serde(default)]
    pub run_as: Option<AgentUnixUser>,
    /// Directories outside the work dir the task writes into, which the agent creates before the
    /// start (e.g. the checkpoint storage root of a trial).
    #[serde(default)]
    pub task_dirs: Vec<TaskDir>,
    /// Where the processes of this allocation meet (upstream's `rendezvous.json`): every
    /// process's host address in rank order and this one's rank. `None` (an older master): the
    /// agent writes a one-process rendezvous on loopback.
    #[serde(default)]
    pub rendezvous: Option<TaskRendezvous>,
}

/// [`StartTask::rendezvous`]: the allocation's processes (one per agent it was placed on), in
/// rank order; rank 0 is the chief, whose address every other process dials.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRendezvous {
    /// Each process's host address, as the other agents reach it (never loopback unless every
    /// process runs on one host).
    pub container_addrs: Vec<String>,
    /// This process's rank: its index in `container_addrs`.
    pub container_rank: u32,
    /// The slots each process holds, in rank order.
    pub container_slot_counts: Vec<u32>,
}

/// One of [`StartTask::task_dirs`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskDir {
    /// An absolute path on the agent's host.
    pub path: String,
    /// Shared by the tasks of every user (a storage root): made world-writable with the sticky
    /// bit, as `/tmp`, so each task's entries stay its own. Otherwise the task's own: created and
    /// owned by its `run_as` account.
    #[serde(default)]
    pub shared: bool,
}

/// The announcement of a streamed work-dir archive.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchiveStream {
    /// The archive's size in bytes (decoded).
    pub bytes: u64,
    /// How many chunks follow.
    pub chunks: u32,
}

/// One piece of a streamed work-dir archive.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskArchiveChunk {
    pub container_id: String,
    /// 0, 1, 2, … in the order the pieces make up the archive.
    pub seq: u32,
    /// At most [`ARCHIVE_CHUNK_BYTES`] of the archive, base64.
    pub data_b64: String,
    /// The final piece.
    pub last: bool,
}

/// Splits a base64 archive into the chunk messages that follow its `StartTask`: each piece
/// decodes on its own (a multiple of 4 characters), and there is at least one (marked `last`).
pub fn archive_chunks(container_id: &str, archive_b64: &str) -> (ArchiveStream, Vec<MasterToAgent>) {
    const CHARS: usize = ARCHIVE_CHUNK_BYTES / 3 * 4;
    let archive_b64 = archive_b64.trim();
    let pieces: Vec<&str> = if archive_b64.is_empty() {
        vec![""]
    } else {
        archive_b64.as_bytes().chunks(CHARS).map(|c| std::str::from_utf8(c).unwrap_or_default()).collect()
    };
    let padding = archive_b64.bytes().rev().take_while(|b| *b == b'=').count().min(2);
    let bytes = (archive_b64.len() / 4 * 3).saturating_sub(padding) as u64;
    let count = pieces.len();
    let messages = pieces
        .into_iter()
        .enumerate()
        .map(|(i, piece)| {
            MasterToAgent::TaskArchiveChunk(TaskArchiveChunk {
                container_id: container_id.to_owned(),
                seq: i as u32,
                data_b64: piece.to_owned(),
                last: i + 1 == count,
            })
        })
        .collect();
    (ArchiveStream { bytes, chunks: count as u32 }, messages)
}

/// One file of [`StartTask::files`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskFile {
    /// Relative to the work dir; no absolute paths, no `..`, never written through a symbolic link.
    pub path: String,
    /// The file's content, base64.
    pub content_b64: String,
    /// Permission bits (`0o600` for a private key).
    #[serde(default = "default_file_mode")]
    pub mode: u32,
}

fn default_file_mode() -> u32 {
    0o644
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TaskEntrypoint {
    Argv(Vec<String>),
    Shell(String),
}

/// Upstream container states, in order (agent wire spelling).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TaskState {
    Assigned,
    Pulling,
    Starting,
    Running,
    Terminated,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskStateChanged {
    pub container_id: String,
    pub allocation_id: String,
    pub state: TaskState,
    /// Set with `Running`: the process id, for diagnostics.
    #[serde(default)]
    pub pid: Option<u32>,
    /// Set with `Running`: each `port_env` name → the port chosen for it.
    #[serde(default)]
    pub ports: BTreeMap<String, u16>,
    /// Set with `Terminated`.
    #[serde(default)]
    pub exit: Option<TaskExitInfo>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskExitInfo {
    /// The exit code when the process exited; `None` when it was killed by a signal or never started.
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// Why the task failed, for humans ("the process exited with code 1", "the entrypoint could not
    /// start: …"); `None` on exit code 0.
    pub failure: Option<String>,
}

impl TaskExitInfo {
    pub fn succeeded(&self) -> bool {
        self.exit_code == Some(0)
    }
}

/// Consecutive lines of one task's process: what they share is sent once.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskLogBatch {
    pub container_id: String,
    pub allocation_id: String,
    pub task_id: String,
    pub lines: Vec<TaskLogLine>,
}

impl AgentToMaster {
    /// Lines a `TaskLogs` message carries (0 for other messages).
    pub fn log_lines(&self) -> usize {
        match self {
            AgentToMaster::TaskLogs { batches } => batches.iter().map(|b| b.lines.len()).sum(),
            _ => 0,
        }
    }
}

/// One line of a task's output, as the agent captured it. On the wire a JSON array, so that a
/// line costs little more than its text: `[timestamp_µs, stdtype, rank_id, level, log]`, e.g.
/// `[1732190000123456,"stdout",0,"INFO","loss=0.1\n"]`.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskLogLine {
    /// When the agent read the line (µs precision on the wire).
    pub timestamp: DateTime<Utc>,
    pub stdtype: StdType,
    /// From a `[rank=N] ` prefix, which is stripped from `log`.
    pub rank_id: Option<i32>,
    /// From a `LEVEL:` prefix (as upstream's ship_logs.py), which is stripped from `log`.
    pub level: Option<LineLevel>,
    /// The line with its trailing newline.
    pub log: String,
}

impl Serialize for TaskLogLine {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (self.timestamp.timestamp_micros(), self.stdtype, self.rank_id, self.level, &self.log).serialize(s)
    }
}

impl<'de> Deserialize<'de> for TaskLogLine {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (micros, stdtype, rank_id, level, log) = <(i64, StdType, Option<i32>, Option<LineLevel>, String)>::deserialize(d)?;
        let timestamp = DateTime::from_timestamp_micros(micros)
            .ok_or_else(|| serde::de::Error::custom(format!("log line timestamp out of range: {micros} µs")))?;
        Ok(TaskLogLine { timestamp, stdtype, rank_id, level, log })
    }
}

/// The stream a line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StdType {
    Stdout,
    Stderr,
}

impl StdType {
    pub fn as_str(self) -> &'static str {
        match self {
            StdType::Stdout => "stdout",
            StdType::Stderr => "stderr",
        }
    }
}

/// The levels a `LEVEL: ` prefix can name (upstream's ship_logs.py).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum LineLevel {
    Debug,
    Info,
    Warning,
    Error,
    Critical,
}

impl LineLevel {
    pub const ALL: [LineLevel; 5] = [LineLevel::Debug, LineLevel::Info, LineLevel::Warning, LineLevel::Error, LineLevel::Critical];

    /// The prefix's spelling: `INFO`.
    pub fn name(self) -> &'static str {
        match self {
            LineLevel::Debug => "DEBUG",
            LineLevel::Info => "INFO",
            LineLevel::Warning => "WARNING",
            LineLevel::Error => "ERROR",
            LineLevel::Critical => "CRITICAL",
        }
    }

    /// The REST wire name: `LOG_LEVEL_INFO`.
    pub fn wire_name(self) -> &'static str {
        match self {
            LineLevel::Debug => "LOG_LEVEL_DEBUG",
            LineLevel::Info => "LOG_LEVEL_INFO",
            LineLevel::Warning => "LOG_LEVEL_WARNING",
            LineLevel::Error => "LOG_LEVEL_ERROR",
            LineLevel::Critical => "LOG_LEVEL_CRITICAL",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_are_externally_tagged() {
        let msg = MasterToAgent::TerminateTask { container_id: "c1".into() };
        assert_eq!(serde_json::to_string(&msg).unwrap(), r#"{"TerminateTask":{"container_id":"c1"}}"#);
        let back: MasterToAgent = serde_json::from_str(r#"{"KillTask":{"container_id":"c2"}}"#).unwrap();
        assert_eq!(back, MasterToAgent::KillTask { container_id: "c2".into() });
    }

    #[test]
    fn messages_of_older_peers_still_parse() {
        let start: StartTask = serde_json::from_str(
            r#"{"container_id":"c","task_id":"t","allocation_id":"a","task_type":"COMMAND","slot_ids":[],"entrypoint":"true","env":{}}"#,
        )
        .unwrap();
        assert!(start.port_env.is_empty() && start.ready_pattern.is_none() && start.files.is_empty() && start.harness_info.is_empty());
        let change: TaskStateChanged =
            serde_json::from_str(r#"{"container_id":"c","allocation_id":"a","state":"RUNNING","pid":7}"#).unwrap();
        assert!(change.ports.is_empty());
        let started: AgentStarted = serde_json::from_str(r#"{"version":"v","devices":[],"resource_pool":"default"}"#).unwrap();
        assert!(started.addresses.is_empty());
        let file: TaskFile = serde_json::from_str(r#"{"path":"a/b","content_b64":""}"#).unwrap();
        assert_eq!(file.mode, 0o644);
        let ready = AgentToMaster::TaskReady { container_id: "c".into(), allocation_id: "a".into() };
        assert_eq!(serde_json::to_string(&ready).unwrap(), r#"{"TaskReady":{"container_id":"c","allocation_id":"a"}}"#);
    }

    #[test]
    fn archives_split_into_bounded_decodable_chunks() {
        use base64::Engine as _;
        let engine = base64::engine::general_purpose::STANDARD;
        for size in [0usize, 1, 2, 3, ARCHIVE_CHUNK_BYTES - 1, ARCHIVE_CHUNK_BYTES, 2 * ARCHIVE_CHUNK_BYTES + 5] {
            let archive: Vec<u8> = (0..size).map(|i| (i * 7 % 251) as u8).collect();
            let (stream, messages) = archive_chunks("c", &engine.encode(&archive));
            assert_eq!(stream.bytes, size as u64);
            assert_eq!(stream.chunks as usize, messages.len());
            let mut joined = Vec::new();
            for (i, message) in messages.iter().enumerate() {
                let MasterToAgent::TaskArchiveChunk(chunk) = message else { panic!("not a chunk") };
                assert_eq!((chunk.seq as usize, chunk.last), (i, i + 1 == messages.len()));
                let piece = engine.decode(&chunk.data_b64).unwrap();
                assert!(piece.len() <= ARCHIVE_CHUNK_BYTES);
                assert!(serde_json::to_string(message).unwrap().len() < 2 * 1024 * 1024);
                joined.extend(piece);
            }
            assert_eq!(joined, archive);
        }
    }

    #[test]
    fn entrypoint_is_string_or_list() {
        let shell: TaskEntrypoint = serde_json::from_str(r#""python3 train.py""#).unwrap();
        assert_eq!(shell, TaskEntrypoint::Shell("python3 train.py".into()));
        let argv: TaskEntrypoint = serde_json::from_str(r#"["python3","train.py"]"#).unwrap();
        assert_eq!(argv, TaskEntrypoint::Argv(vec!["python3".into(), "train.py".into()]));
    }

    #[test]
    fn log_lines_are_compact_arrays() {
        let line = TaskLogLine {
            timestamp: DateTime::from_timestamp_micros(1_732_190_000_123_456).unwrap(),
            stdtype: StdType::Stderr,
            rank_id: Some(2),
            level: Some(LineLevel::Warning),
            log: "careful\n".into(),
        };
        let batch = TaskLogBatch { container_id: "c".into(), allocation_id: "a".into(), task_id: "t".into(), lines: vec![line] };
        let message = AgentToMaster::TaskLogs { batches: vec![batch] };
        let text = serde_json::to_string(&message).unwrap();
        assert_eq!(
            text,
            r#"{"TaskLogs":{"batches":[{"container_id":"c","allocation_id":"a","task_id":"t","lines":[[1732190000123456,"stderr",2,"WARNING","careful\n"]]}]}}"#
        );
        assert_eq!(serde_json::from_str::<AgentToMaster>(&text).unwrap(), message);
        assert_eq!(message.log_lines(), 1);
        let bare: TaskLogLine = serde_json::from_str(r#"[0,"stdout",null,null,"x"]"#).unwrap();
        assert_eq!((bare.rank_id, bare.level, bare.log.as_str()), (None, None, "x"));
        assert!(serde_json::from_str::<TaskLogLine>(r#"[9223372036854775807,"stdout",null,null,"x"]"#).is_err());
        assert!(serde_json::from_str::<TaskLogLine>(r#"[0,"stdin",null,null,"x"]"#).is_err());
    }
}
