//! From `StartTask` to a supervised process: building the [`TaskSpec`], writing the harness shim,
//! starting it with the [`Runtime`], and the bookkeeping that keeps a task's state changes in
//! order (`Running` before `TaskReady` and `Terminated`, even when the process exits or prints
//! its ready line before its start is acknowledged, and stop requests that arrive while it is
//! still starting).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use resolute_api::agent_protocol::{AgentToMaster, StartTask, TaskEntrypoint, TaskExitInfo, TaskFile, TaskState, TaskStateChanged};

use super::readiness::Readiness;

use crate::devices::Device;
use crate::events::TaskExit;
use crate::harness_shim::ShimDir;
use crate::process::Runtime;
use crate::rendezvous::rendezvous_info;
use crate::spec::{Entrypoint, LaunchContext, TaskSpec, TaskType, environment};
use crate::task_user::{decide, hand_over_tree};
use crate::work_files::WorkFile;
use crate::workdir::task_work_dir;

/// A task the daemon has accepted and not yet reported `Terminated`.
#[derive(Debug)]
pub(crate) struct TaskEntry {
    pub allocation_id: String,
    pub shim: ShimDir,
    /// False until the runtime has started the process and `Running` has been queued.
    pub running: bool,
    /// The process exited before its start was acknowledged.
    pub pending_exit: Option<TaskExit>,
    /// A terminate or kill that arrived while the task was starting.
    pub pending_stop: Option<Stop>,
    pub readiness: Readiness,
    /// For a restarted master's re-adoption ([`AgentStarted::running_tasks`]).
    ///
    /// [`AgentStarted::running_tasks`]: resolute_api::agent_protocol::AgentStarted::running_tasks
    pub task_id: String,
    pub slot_ids: Vec<u32>,
    /// The ports chosen at start (known once running).
    pub ports: BTreeMap<String, u16>,
    /// `TaskReady` was sent, or the task has no readiness pattern.
    pub ready: bool,
    pub ready_pattern: Option<String>,
    /// How far its output has been written to the master (kept in the state file).
    pub shipped: crate::process::OutputOffsets,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    Terminate,
    Kill,
}

/// The result of starting one task: the process, or why it could not start.
#[derive(Debug)]
pub(crate) struct StartOutcome {
    pub container_id: String,
    pub result: Result<Started, String>,
}

/// A task's running process.
#[derive(Debug)]
pub(crate) struct Started {
    pub pid: u32,
    /// `port_env` name → the host port chosen.
    pub ports: BTreeMap<String, u16>,
}

/// What a start needs besides the message.
pub(crate) struct Launch {
    pub spec: TaskSpec,
    pub shim: ShimDir,
    /// `rendezvous.json` (checked against the slots assigned).
    pub rendezvous: serde_json::Value,
    /// The master's harness info files, written into the shim as given.
    pub harness_info: BTreeMap<String, serde_json::Value>,
    pub readiness: Readiness,
    /// For the task's log: it cannot run as the account the master named.
    pub warning: Option<String>,
}

/// Checks the message and builds the spec and the shim location; `Err` is the failure to report.
/// `agent_uid` is this agent's effective uid, which decides whether it can run the task as
/// `run_as` ([`decide`]).
pub(crate) fn prepare(start: &StartTask, devices: &[Device], work_root: &Path, agent_uid: u32) -> Result<Launch, String> {
    let task_type: TaskType = serde_json::from_value(serde_json::Value::String(start.task_type.clone())).map_err(|_| {
        format!("unknown task_type {:?}; expected TRIAL, NOTEBOOK, SHELL, COMMAND, TENSORBOARD, CHECKPOINT_GC or GENERIC", start.task_type)
    })?;
    let mut assigned = Vec::with_capacity(start.slot_ids.len());
    for slot in &start.slot_ids {
        let device = devices.iter().find(|d| d.id == *slot).ok_or_else(|| {
            let known: Vec<String> = devices.iter().map(|d| d.id.to_string()).collect();
            format!("slot {slot} is not a slot of this agent (its slots: [{}])", known.join(", "))
        })?;
        assigned.push(device.clone());
    }
    let archive = match &start.work_dir_archive_b64 {
        Some(text) => Some(
            base64::engine::general_purpose::STANDARD
                .decode(text.trim())
                .map_err(|e| format!("the work dir archive is not valid base64: {e}"))?,
        ),
        None => None,
    };
    let files = start.files.iter().map(work_file).collect::<Result<Vec<_>, _>>()?;
    let rendezvous = rendezvous_info(start.rendezvous.as_ref(), assigned.len()).map_err(|e| e.to_string())?;
    let readiness = Readiness::watch(start.ready_pattern.as_deref())?;
    let work_dir = task_work_dir(work_root, &start.task_id, &start.allocation_id).map_err(|e| e.to_string())?;
    let shim = ShimDir::for_work_dir(&work_dir);
    let mut env = start.env.clone();
    env.insert("PYTHONPATH".to_string(), shim.python_path(start.env.get("PYTHONPATH").map(String::as_str)));
    env.extend(crate::rendezvous::socket_interface_env(start.rendezvous.as_ref(), &start.env));
    let entrypoint = match &start.entrypoint {
        TaskEntrypoint::Argv(argv) => Entrypoint::Argv(argv.clone()),
        TaskEntrypoint::Shell(command) => Entrypoint::Shell(command.clone()),
    };
    let (run_as, warning) = decide(agent_uid, start.run_as.as_ref());
    let spec = TaskSpec {
        task_id: start.task_id.clone(),
        allocation_id: start.allocation_id.clone(),
        task_type,
        container_id: Some(start.container_id.clone()),
        devices: assigned,
        work_dir_archive: archive,
        entrypoint,
        env,
        python: start.python.as_deref().filter(|p| !p.trim().is_empty()).map(PathBuf::from),
        port_env: start.port_env.clone(),
        files,
        run_as,
        task_dirs: start.task_dirs.clone(),
    };
    Ok(Launch { spec, shim, rendezvous, harness_info: start.harness_info.clone(), readiness, warning })
}

fn work_file(file: &TaskFile) -> Result<WorkFile, String> {
    let content = base64::engine::general_purpose::STANDARD
        .decode(file.content_b64.trim())
        .map_err(|e| format!("task file {:?} is not valid base64: {e}", file.path))?;
    WorkFile::new(&file.path, content, file.mode).map_err(|e| e.to_string())
}

/// The master as this agent reaches it (upstream's agent sets these globally): tasks call back
/// to the same address, unless the master already chose one.
pub(crate) fn add_master_address(env: &mut BTreeMap<String, String>, tls: &crate::master_tls::MasterTls, host: &str, port: u16) {
    let url = format!("{}://{host}:{port}", tls.scheme());
    for (name, value) in
        [("DET_MASTER", url.clone()), ("DET_MASTER_ADDR", url), ("DET_MASTER_HOST", host.to_owned()), ("DET_MASTER_PORT", port.to_string())]
    {
        env.entry(name.to_owned()).or_insert(value);
    }
}

/// Writes the harness shim and starts the process; on failure nothing is left behind.
pub(crate) async fn launch(
    runtime: Runtime,
    spec: TaskSpec,
    shim: ShimDir,
    rendezvous: serde_json::Value,
    harness_info: BTreeMap<String, serde_json::Value>,
) -> Result<Started, String> {
    let env = final_environment(&runtime, &spec)?;
    let (devices, writer, model, run_as) = (spec.devices.clone(), shim.clone(), spec.work_dir_archive.clone(), spec.run_as.clone());
    let write = move || {
        writer.write(&env, &devices, &rendezvous, &harness_info, model.as_deref()).map_err(|e| e.to_string())?;
        // The info files hold the task's session token: its account's alone.
        if let Some(account) = &run_as
            && let Err(e) = hand_over_tree(&writer.root, account)
        {
            let _ = writer.remove();
            return Err(e.to_string());
        }
        Ok(())
    };
    tokio::task::spawn_blocking(write).await.map_err(|e| format!("writing the harness info was interrupted: {e}"))??;
    match runtime.start(spec).await {
        Ok(handle) => Ok(Started { pid: handle.info().pid, ports: handle.info().ports.clone() }),
        Err(e) => {
            let _ = shim.remove();
            Err(e.to_string())
        }
    }
}

/// The `DET_*` variables the task will see, as the runtime computes them (the interpreter and the
/// inherited variables do not matter for the harness info).
fn final_environment(runtime: &Runtime, spec: &TaskSpec) -> Result<BTreeMap<String, String>, String> {
    let options = runtime.options();
    let container_id = spec.container_id.clone().unwrap_or_default();
    let context =
        LaunchContext { agent_id: &options.agent_id, container_id: &container_id, python: &options.python, inherited: Vec::new() };
    environment(spec, &context).map_err(|e| e.to_string())
}

pub(crate) fn running(container_id: &str, allocation_id: &str, started: Started) -> AgentToMaster {
    AgentToMaster::TaskStateChanged(TaskStateChanged {
        container_id: container_id.to_string(),
        allocation_id: allocation_id.to_string(),
        state: TaskState::Running,
        pid: Some(started.pid),
        ports: started.ports,
        exit: None,
    })
}

pub(crate) fn ready(container_id: &str, allocation_id: &str) -> AgentToMaster {
    AgentToMaster::TaskReady { container_id: container_id.to_string(), allocation_id: allocation_id.to_string() }
}

pub(crate) fn terminated(container_id: &str, allocation_id: &str, exit: TaskExitInfo) -> AgentToMaster {
    AgentToMaster::TaskStateChanged(TaskStateChanged {
        container_id: container_id.to_string(),
        allocation_id: allocation_id.to_string(),
        state: TaskState::Terminated,
        pid: None,
        ports: BTreeMap::new(),
        exit: Some(exit),
    })
}

/// The exit of a task that never ran.
pub(crate) fn start_failure(reason: &str) -> TaskExitInfo {
    TaskExitInfo { exit_code: None, signal: None, failure: Some(format!("the task could not start: {reason}")) }
}

pub(crate) fn exit_info(exit: &TaskExit) -> TaskExitInfo {
    TaskExitInfo { exit_code: exit.code, signal: exit.signal, failure: exit.failure_message() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::DeviceType;

    fn start(slot_ids: Vec<u32>) -> StartTask {
        StartTask {
            container_id: "c1".into(),
            task_id: "t1".into(),
            allocation_id: "t1.a1".into(),
            task_type: "COMMAND".into(),
            description: String::new(),
            slot_ids,
            entrypoint: TaskEntrypoint::Shell("true".into()),
            env: [("PYTHONPATH".to_string(), "/user".to_string())].into(),
            work_dir_archive_b64: None,
            work_dir_archive_stream: None,
            python: Some(String::new()),
            port_env: vec!["PORT".into()],
            ready_pattern: None,
            files: vec![],
            harness_info: BTreeMap::new(),
            run_as: None,
            task_dirs: vec![],
            rendezvous: None,
        }
    }

    fn cpu(id: u32) -> Device {
        Device { id, brand: "cpu".into(), uuid: "x".into(), device_type: DeviceType::Cpu }
    }

    #[test]
    fn spec_takes_the_assigned_devices_and_shim_path() {
        let launch = prepare(&start(vec![1]), &[cpu(0), cpu(1)], Path::new("/root"), 0).unwrap();
        assert_eq!(launch.spec.devices, vec![cpu(1)]);
        assert_eq!(launch.spec.env["PYTHONPATH"], "/root/t1/t1.a1.harness/python:/user");
        assert_eq!(launch.spec.python, None);
        assert_eq!(launch.spec.task_type, TaskType::Command);
        assert_eq!(launch.spec.port_env, ["PORT"]);
        assert!(matches!(launch.readiness, Readiness::Unwatched));
    }

    #[test]
    fn a_gang_process_gets_the_masters_rendezvous_and_a_bad_one_fails_the_start() {
        let mut gang = start(vec![0, 1]);
        gang.rendezvous = Some(resolute_api::agent_protocol::TaskRendezvous {
            container_addrs: vec!["10.0.0.1".into(), "10.0.0.2".into()],
            container_rank: 1,
            container_slot_counts: vec![2, 2],
        });
        let launch = prepare(&gang, &[cpu(0), cpu(1)], Path::new("/root"), 0).unwrap();
        assert_eq!(launch.rendezvous["container_addrs"], serde_json::json!(["10.0.0.1", "10.0.0.2"]));
        assert_eq!(launch.rendezvous["container_rank"], 1);
        let alone = prepare(&start(vec![0]), &[cpu(0)], Path::new("/root"), 0).unwrap();
        assert_eq!(alone.rendezvous["container_addrs"], serde_json::json!(["127.0.0.1"]));
        gang.slot_ids = vec![0];
        let err = prepare(&gang, &[cpu(0), cpu(1)], Path::new("/root"), 0).err().unwrap();
        assert!(err.contains("rendezvous.container_slot_counts gives this process 2 slots, but it was assigned 1"), "{err}");
        if let Some(r) = gang.rendezvous.as_mut() {
            r.container_rank = 2;
        }
        let err = prepare(&gang, &[cpu(0), cpu(1)], Path::new("/root"), 0).err().unwrap();
        assert!(err.contains("rendezvous.container_rank 2 is not an index of container_addrs (2 addresses)"), "{err}");
    }

    #[test]
    fn master_address_fills_gaps_only() {
        let mut env: BTreeMap<String, String> = [("DET_MASTER".to_string(), "http://elsewhere:1".to_string())].into();
        add_master_address(&mut env, &crate::master_tls::MasterTls::default(), "10.0.0.2", 8080);
        assert_eq!(env["DET_MASTER"], "http://elsewhere:1");
        assert_eq!(env["DET_MASTER_HOST"], "10.0.0.2");
        assert_eq!(env["DET_MASTER_PORT"], "8080");
    }

    #[test]
    fn bad_messages_become_failures() {
        let err = prepare(&start(vec![5]), &[cpu(0)], Path::new("/root"), 0).err().unwrap();
        assert!(err.contains("slot 5 is not a slot of this agent (its slots: [0])"), "{err}");
        let mut bad = start(vec![]);
        bad.task_type = "BATCH".into();
        assert!(prepare(&bad, &[], Path::new("/r"), 0).err().unwrap().contains("unknown task_type \"BATCH\""));
        let mut bad = start(vec![]);
        bad.work_dir_archive_b64 = Some("***".into());
        assert!(prepare(&bad, &[], Path::new("/r"), 0).err().unwrap().contains("not valid base64"));
        let mut bad = start(vec![]);
        bad.allocation_id = "../x".into();
        assert!(prepare(&bad, &[], Path::new("/r"), 0).err().unwrap().contains("allocation_id"));
        let mut bad = start(vec![]);
        bad.ready_pattern = Some("[".into());
        assert!(prepare(&bad, &[], Path::new("/r"), 0).err().unwrap().contains("ready_pattern \"[\" is not a valid regular expression"));
        let file = |path: &str, content_b64: &str| TaskFile { path: path.into(), content_b64: content_b64.into(), mode: 0o600 };
        let mut bad = start(vec![]);
        bad.files = vec![file("../authorized_keys", "")];
        let err = prepare(&bad, &[], Path::new("/r"), 0).err().unwrap();
        assert!(err.contains("task file \"../authorized_keys\" is refused: its path contains '..'"), "{err}");
        bad.files = vec![file("k", "***")];
        assert!(prepare(&bad, &[], Path::new("/r"), 0).err().unwrap().contains("task file \"k\" is not valid base64"));
    }
}
