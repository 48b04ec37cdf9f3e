//! The process runtime against real processes: environment, output capture, exits, signals,
//! startup hooks, work dirs and device selection. Waits poll with deadlines; nothing sleeps to
//! let something happen.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use resolute_agent::devices::{artificial_devices, cpu_device, parse_nvidia_smi};
use resolute_agent::workdir::extract_tar_gz;
use resolute_agent::{
    AgentConfig, Device, DeviceError, DeviceSources, DeviceType, Entrypoint, LogLine, Runtime, RuntimeError, RuntimeEvent, RuntimeOptions,
    SlotType, StdType, TaskExit, TaskSpec, TaskType, WorkDirError, detect_devices, select_devices,
};
use tokio::sync::mpsc::Receiver;

const DEADLINE: Duration = Duration::from_secs(30);

struct Harness {
    runtime: Runtime,
    events: Receiver<RuntimeEvent>,
    root: tempfile::TempDir,
    fake_python: PathBuf,
}

/// A runtime rooted in a temp dir, whose "python" is a script that prints `fake-python <args>`.
fn harness() -> Harness {
    harness_with(|_| {})
}

fn harness_with(adjust: impl FnOnce(&mut RuntimeOptions)) -> Harness {
    let root = tempfile::tempdir().unwrap();
    let bin = root.path().join("venv/bin");
    std::fs::create_dir_all(&bin).unwrap();
    let fake_python = bin.join("python3");
    std::fs::write(&fake_python, "#!/bin/sh\necho fake-python \"$@\"\n").unwrap();
    std::fs::set_permissions(&fake_python, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let config = AgentConfig {
        agent_id: Some("test-agent".into()),
        work_root: Some(root.path().join("work")),
        python: fake_python.clone(),
        ..AgentConfig::default()
    };
    let mut options = RuntimeOptions::from_config(&config).unwrap();
    adjust(&mut options);
    let (runtime, events) = Runtime::new(options);
    Harness { runtime, events, root, fake_python }
}

fn spec(task_id: &str, entrypoint: Entrypoint) -> TaskSpec {
    TaskSpec {
        task_id: task_id.into(),
        allocation_id: format!("{task_id}.alloc"),
        task_type: TaskType::Command,
        container_id: None,
        devices: vec![],
        work_dir_archive: None,
        entrypoint,
        env: BTreeMap::new(),
        python: None,
        port_env: Vec::new(),
        files: Vec::new(),
        run_as: None,
        task_dirs: Vec::new(),
    }
}

fn sh(script: &str) -> Entrypoint {
    Entrypoint::Argv(vec!["sh".into(), "-c".into(), script.into()])
}

/// Receives events until `container_id` exits; returns its lines and its exit.
async fn run_to_exit(events: &mut Receiver<RuntimeEvent>, container_id: &str) -> (Vec<LogLine>, TaskExit) {
    let mut lines = Vec::new();
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let event =
            tokio::time::timeout_at(deadline, events.recv()).await.expect("task did not exit before the deadline").expect("channel closed");
        match event {
            RuntimeEvent::Log(line) if line.container_id == container_id => lines.push(line),
            RuntimeEvent::Exited { container_id: id, exit, .. } if id == container_id => return (lines, exit),
            _ => {}
        }
    }
}

/// Receives events until every one of `container_ids` has exited; returns each one's lines and exit.
async fn run_all_to_exit(events: &mut Receiver<RuntimeEvent>, container_ids: &[&str]) -> BTreeMap<String, (Vec<LogLine>, TaskExit)> {
    let mut lines: BTreeMap<String, Vec<LogLine>> = BTreeMap::new();
    let mut done = BTreeMap::new();
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while done.len() < container_ids.len() {
        match tokio::time::timeout_at(deadline, events.recv())
            .await
            .expect("tasks did not exit before the deadline")
            .expect("channel closed")
        {
            RuntimeEvent::Log(line) => lines.entry(line.container_id.clone()).or_default().push(line),
            RuntimeEvent::Exited { container_id, exit, .. } if container_ids.contains(&container_id.as_str()) => {
                let output = lines.remove(&container_id).unwrap_or_default();
                done.insert(container_id, (output, exit));
            }
            RuntimeEvent::Exited { .. } => {}
        }
    }
    done
}

/// Receives events until a line of `container_id` satisfies `matches`, keeping everything read.
async fn wait_for_line(events: &mut Receiver<RuntimeEvent>, container_id: &str, matches: impl Fn(&str) -> bool) -> String {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        match tokio::time::timeout_at(deadline, events.recv())
            .await
            .expect("line did not arrive before the deadline")
            .expect("channel closed")
        {
            RuntimeEvent::Log(line) if line.container_id == container_id && matches(&line.log) => return line.log,
            RuntimeEvent::Exited { container_id: id, exit, .. } if id == container_id => panic!("task exited ({exit:?}) before the line"),
            _ => {}
        }
    }
}

fn stream(lines: &[LogLine], stdtype: StdType) -> Vec<String> {
    lines.iter().filter(|l| l.stdtype == stdtype).map(|l| l.log.clone()).collect()
}

fn values(lines: &[LogLine]) -> BTreeMap<String, String> {
    stream(lines, StdType::Stdout).iter().filter_map(|l| l.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// Polls until `pid` is gone (or a zombie nobody has reaped yet), failing after the deadline.
async fn assert_process_dies(pid: u32) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
        if stat.is_empty() || state == Some("Z") {
            return;
        }
        assert!(Instant::now() < deadline, "process {pid} is still alive: {stat}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// An archive entry: name, type, contents, link target.
type RawEntry<'a> = (&'a str, tar::EntryType, &'a [u8], Option<&'a str>);

/// A tar.gz with raw entry names (the `tar` builder refuses unsafe ones, which is the point here).
fn tar_gz(entries: &[RawEntry<'_>]) -> Vec<u8> {
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast()));
    for (name, kind, data, link) in entries {
        let mut header = tar::Header::new_gnu();
        header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        if let Some(link) = link {
            header.as_old_mut().linkname[..link.len()].copy_from_slice(link.as_bytes());
        }
        header.set_entry_type(*kind);
        header.set_mode(if *kind == tar::EntryType::Directory { 0o755 } else { 0o644 });
        header.set_size(data.len() as u64);
        header.set_cksum();
        builder.append(&header, *data).unwrap();
    }
    let mut gz = builder.into_inner().unwrap();
    gz.flush().unwrap();
    gz.finish().unwrap()
}

fn file(name: &'static str, data: &'static [u8]) -> RawEntry<'static> {
    (name, tar::EntryType::Regular, data, None)
}

fn cuda(id: u32) -> Device {
    Device { id, brand: "NVIDIA H100".into(), uuid: format!("GPU-{id}"), device_type: DeviceType::Cuda }
}

#[tokio::test]
async fn the_child_sees_runtime_spec_and_python_variables() {
    let mut h = harness();
    let mut task = spec(
        "env",
        sh("echo SLOTS=$DET_SLOT_IDS; echo CUDA=$CUDA_VISIBLE_DEVICES; echo AGENT=$DET_AGENT_ID; echo CONTAINER=$DET_CONTAINER_ID; \
         echo UNBUFFERED=$PYTHONUNBUFFERED; echo FOO=$FOO; echo PYTHON=$(command -v python3); echo RUN=$(python3 -V); \
         echo CWD=$(pwd); echo LEAK=${CARGO_MANIFEST_DIR:-none}"),
    );
    task.devices = vec![cuda(0), cuda(2)];
    task.env.insert("FOO".into(), "hello world".into());
    task.env.insert("DET_AGENT_ID".into(), "spoofed".into());
    let handle = h.runtime.start(task).await.unwrap();
    let (lines, exit) = run_to_exit(&mut h.events, handle.container_id()).await;
    assert!(exit.success(), "{exit:?} {lines:?}");
    let v = values(&lines);
    assert_eq!(v["SLOTS"], "[0,2]");
    assert_eq!(v["CUDA"], "0,2");
    assert_eq!(v["AGENT"], "test-agent");
    assert_eq!(v["CONTAINER"], handle.container_id());
    assert_eq!(v["UNBUFFERED"], "1");
    assert_eq!(v["FOO"], "hello world");
    assert_eq!(Path::new(&v["PYTHON"]), h.fake_python);
    assert_eq!(v["RUN"], "fake-python -V");
    assert_eq!(Path::new(&v["CWD"]), handle.info().work_dir);
    assert!(handle.info().work_dir.ends_with("work/env/env.alloc"));
    // The agent's own environment stays out (cargo sets CARGO_MANIFEST_DIR for this test).
    assert_eq!(v["LEAK"], "none");

    let mut cpu_task = spec("cpu", sh("echo SLOTS=$DET_SLOT_IDS; echo CUDA=[$CUDA_VISIBLE_DEVICES]"));
    cpu_task.devices = artificial_devices("test-agent", 2);
    let handle = h.runtime.start(cpu_task).await.unwrap();
    let (lines, _) = run_to_exit(&mut h.events, handle.container_id()).await;
    let v = values(&lines);
    assert_eq!(v["SLOTS"], "[0,1]");
    assert_eq!(v["CUDA"], "[]");
}

#[tokio::test]
async fn stdout_and_stderr_are_captured_in_order_with_partial_and_huge_lines() {
    let mut h = harness();
    let script = "printf 'o1\\no2\\n'; printf 'e1\\ne2\\n' >&2; head -c 1000000 /dev/zero | tr '\\0' x; echo; \
                  printf 'e-last' >&2; printf 'o-last'";
    let handle = h.runtime.start(spec("logs", sh(script))).await.unwrap();
    let (lines, exit) = run_to_exit(&mut h.events, handle.container_id()).await;
    assert!(exit.success());
    let stdout = stream(&lines, StdType::Stdout);
    assert_eq!(stdout.len(), 4, "{:?}", stdout.iter().map(|l| l.len()).collect::<Vec<_>>());
    assert_eq!(stdout[..2], ["o1", "o2"]);
    assert_eq!(stdout[2], "x".repeat(1_000_000));
    assert_eq!(stdout[3], "o-last");
    assert_eq!(stream(&lines, StdType::Stderr), ["e1", "e2", "e-last"]);
    let line = &lines[0];
    assert_eq!(
        (line.task_id.as_str(), line.allocation_id.as_str(), line.container_id.as_str()),
        ("logs", "logs.alloc", handle.container_id())
    );
    assert!(lines.windows(2).filter(|w| w[0].stdtype == w[1].stdtype).all(|w| w[0].timestamp <= w[1].timestamp));
}

#[tokio::test]
async fn exit_codes_signals_and_spawn_failures_are_reported() {
    let mut h = harness();
    let handle = h.runtime.start(spec("code", sh("exit 3"))).await.unwrap();
    let (_, exit) = run_to_exit(&mut h.events, handle.container_id()).await;
    assert_eq!((exit.code, exit.signal), (Some(3), None));
    assert_eq!(handle.wait().await.unwrap(), exit);
    assert!(exit.failure_message().unwrap().contains("non-zero exit code: 3"));

    let handle = h.runtime.start(spec("signal", sh("kill -KILL $$"))).await.unwrap();
    let (_, exit) = run_to_exit(&mut h.events, handle.container_id()).await;
    assert_eq!((exit.code, exit.signal), (None, Some(9)));

    let handle = h.runtime.start(spec("shell", Entrypoint::Shell("test \"$(echo ok)\" = ok".into()))).await.unwrap();
    assert!(handle.wait().await.unwrap().success());

    let err = h.runtime.start(spec("missing", Entrypoint::Argv(vec!["/nonexistent/program".into()]))).await.unwrap_err();
    assert!(matches!(err, RuntimeError::Spawn { .. }), "{err}");
    assert!(!h.root.path().join("work/missing").exists());
    let err = h.runtime.start(spec("empty", Entrypoint::Argv(vec![]))).await.unwrap_err();
    assert!(err.to_string().contains("entrypoint is empty"), "{err}");
}

#[tokio::test]
async fn startup_hook_exports_reach_the_entrypoint() {
    let mut h = harness();
    let archive = tar_gz(&[file("startup-hook.sh", b"export HOOKED=from-hook\nexport PATH=\"$PWD/tools:$PATH\"\n"), file("tools/x", b"")]);
    let mut task = spec(
        "hook",
        Entrypoint::Argv(vec!["sh".into(), "-c".into(), "echo HOOKED=$HOOKED; echo ARGS=$#:$1".into(), "zero".into(), "one arg".into()]),
    );
    task.work_dir_archive = Some(archive.clone());
    let handle = h.runtime.start(task).await.unwrap();
    let (lines, exit) = run_to_exit(&mut h.events, handle.container_id()).await;
    assert!(exit.success(), "{lines:?}");
    let v = values(&lines);
    assert_eq!(v["HOOKED"], "from-hook");
    assert_eq!(v["ARGS"], "1:one arg");

    let mut task = spec("hook-shell", Entrypoint::Shell("echo HOOKED=$HOOKED".into()));
    task.work_dir_archive = Some(archive);
    let handle = h.runtime.start(task).await.unwrap();
    let (lines, _) = run_to_exit(&mut h.events, handle.container_id()).await;
    assert_eq!(values(&lines)["HOOKED"], "from-hook");
}

#[tokio::test]
async fn terminate_lets_a_trapping_task_exit_cleanly() {
    let mut h = harness();
    let script = "trap 'echo got-term; exit 0' TERM; sleep 1000 & echo ready; wait";
    let handle = h.runtime.start(spec("graceful", sh(script))).await.unwrap();
    wait_for_line(&mut h.events, handle.container_id(), |l| l == "ready").await;
    h.runtime.terminate(handle.container_id(), Some(Duration::from_secs(600))).unwrap();
    let (lines, exit) = run_to_exit(&mut h.events, handle.container_id()).await;
    assert_eq!((exit.code, exit.signal), (Some(0), None), "{lines:?}");
    assert_eq!(stream(&lines, StdType::Stdout), ["got-term"]);
    assert!(matches!(h.runtime.kill(handle.container_id()), Err(RuntimeError::NotRunning(_))));
}

#[tokio::test]
async fn terminate_kills_a_task_ignoring_sigterm_and_its_grandchildren() {
    let mut h = harness();
    let script = "trap '' TERM; sleep 1000 & echo grandchild $!; wait";
    let handle = h.runtime.start(spec("stubborn", sh(script))).await.unwrap();
    let line = wait_for_line(&mut h.events, handle.container_id(), |l| l.starts_with("grandchild ")).await;
    let grandchild: u32 = line["grandchild ".len()..].parse().unwrap();
    handle.terminate(Duration::from_millis(300)).unwrap();
    let (_, exit) = run_to_exit(&mut h.events, handle.container_id()).await;
    assert_eq!((exit.code, exit.signal), (None, Some(9)));
    assert_process_dies(grandchild).await;
}

#[tokio::test]
async fn kill_and_leader_exit_take_the_whole_group_down() {
    let mut h = harness();
    let handle = h.runtime.start(spec("killed", sh("sleep 1000 & echo grandchild $!; wait"))).await.unwrap();
    let line = wait_for_line(&mut h.events, handle.container_id(), |l| l.starts_with("grandchild ")).await;
    h.runtime.kill(handle.container_id()).unwrap();
    let (_, exit) = run_to_exit(&mut h.events, handle.container_id()).await;
    assert_eq!(exit.signal, Some(9));
    assert_process_dies(line["grandchild ".len()..].parse().unwrap()).await;

    // A background process still holding stdout must not keep the exit from being reported.
    let handle = h.runtime.start(spec("orphan", sh("sleep 1000 & echo grandchild $!; exit 0"))).await.unwrap();
    let (lines, exit) = run_to_exit(&mut h.events, handle.container_id()).await;
    assert!(exit.success());
    assert_process_dies(lines[0].log["grandchild ".len()..].parse().unwrap()).await;
}

#[tokio::test]
async fn a_process_that_leaves_the_group_does_not_hold_back_the_exit() {
    let mut h = harness();
    // `setsid` puts sleep in a new session, out of reach of the group kill, still holding stdout.
    let handle = h.runtime.start(spec("escaped", sh(
        "setsid sh -c 'touch in-new-session; exec sleep 1000' & while [ ! -e in-new-session ]; do sleep 0.01; done; echo escaped $!; echo done",
    ))).await.unwrap();
    let (lines, exit) = run_to_exit(&mut h.events, handle.container_id()).await;
    assert!(exit.success());
    assert_eq!(stream(&lines, StdType::Stdout).last().map(String::as_str), Some("done"));
    let pid = lines.iter().find_map(|l| l.log.strip_prefix("escaped ")).unwrap().to_string();
    std::process::Command::new("kill").args(["-KILL", &pid]).status().unwrap();
}

#[tokio::test]
async fn tasks_run_concurrently_in_their_own_dirs_and_are_removed_on_request() {
    let mut h = harness();
    let mut handles = Vec::new();
    for i in 0..3 {
        let mut task = spec(&format!("task{i}"), sh("echo DIR=$(pwd); while [ ! -e go ]; do sleep 0.05; done"));
        task.container_id = Some(format!("container-{i}"));
        handles.push(h.runtime.start(task).await.unwrap());
    }
    // All three are running at once: none can exit before its `go` file exists.
    assert_eq!(h.runtime.tasks().iter().filter(|t| t.exit.is_none()).count(), 3);
    let mut dup = spec("task0-again", sh("true"));
    dup.container_id = Some("container-0".into());
    assert!(matches!(h.runtime.start(dup).await, Err(RuntimeError::ContainerIdInUse(_))));
    assert!(matches!(h.runtime.remove("container-1").await, Err(RuntimeError::StillRunning(_))));
    // The same allocation cannot start twice, and the failed start leaves the running one's dir alone.
    let again = h.runtime.start(spec("task2", sh("true"))).await.unwrap_err();
    assert!(matches!(again, RuntimeError::WorkDir(WorkDirError::AlreadyExists(_))), "{again}");
    assert!(handles[2].info().work_dir.exists());
    for handle in &handles {
        std::fs::write(handle.info().work_dir.join("go"), b"").unwrap();
    }
    let ids: Vec<&str> = handles.iter().map(|h| h.container_id()).collect();
    let results = run_all_to_exit(&mut h.events, &ids).await;
    for handle in &handles {
        let (lines, exit) = &results[handle.container_id()];
        assert!(exit.success());
        assert_eq!(Path::new(&values(lines)["DIR"]), handle.info().work_dir);
    }
    let dir = handles[1].info().work_dir.clone();
    h.runtime.remove("container-1").await.unwrap();
    assert!(!dir.exists() && !dir.parent().unwrap().exists());
    assert!(matches!(h.runtime.remove("container-1").await, Err(RuntimeError::UnknownContainer(_))));
    assert_eq!(h.runtime.tasks().len(), 2);
}

#[tokio::test]
async fn removing_a_task_removes_the_harness_scratch_of_its_allocation() {
    let scratch = tempfile::tempdir().unwrap();
    let scratch_root = scratch.path().to_path_buf();
    let mut h = harness_with(|o| o.harness_scratch_root = scratch_root);
    // What the upstream harness's TensorBoard writer does, for rank 0 of allocation `task0.alloc`.
    let script = format!("mkdir -p \"{}/tensorboard-$DET_ALLOCATION_ID-0/events\"", scratch.path().display());
    let handle = h.runtime.start(spec("task0", sh(&script))).await.unwrap();
    std::fs::create_dir(scratch.path().join("tensorboard-other.alloc-0")).unwrap();
    let (_, exit) = run_to_exit(&mut h.events, handle.container_id()).await;
    assert!(exit.success());
    let mine = scratch.path().join("tensorboard-task0.alloc-0");
    assert!(mine.join("events").is_dir());

    h.runtime.remove(handle.container_id()).await.unwrap();
    assert!(!mine.exists());
    assert!(scratch.path().join("tensorboard-other.alloc-0").is_dir());
}

#[tokio::test]
async fn work_dir_archives_are_extracted_and_unsafe_ones_refused() {
    let mut h = harness();
    let archive = tar_gz(&[
        ("./", tar::EntryType::Directory, b"", None),
        ("model/", tar::EntryType::Directory, b"", None),
        file("model/train.py", b"print('hi')\n"),
        ("model/link.py", tar::EntryType::Symlink, b"", Some("train.py")),
    ]);
    let mut task = spec("extract", sh("cat model/link.py"));
    task.work_dir_archive = Some(archive);
    let handle = h.runtime.start(task).await.unwrap();
    let (lines, exit) = run_to_exit(&mut h.events, handle.container_id()).await;
    assert!(exit.success());
    assert_eq!(stream(&lines, StdType::Stdout), ["print('hi')"]);

    let escapes: [&[RawEntry<'_>]; 5] = [
        &[file("ok.txt", b"fine"), file("../evil", b"evil")],
        &[file("/tmp/resolute-evil-absolute", b"evil")],
        &[("up", tar::EntryType::Symlink, b"", Some("../.."))],
        &[("here", tar::EntryType::Symlink, b"", Some(".")), file("here/x", b"through a link")],
        &[("fifo", tar::EntryType::Fifo, b"", None)],
    ];
    for (i, entries) in escapes.iter().enumerate() {
        let mut task = spec(&format!("evil{i}"), sh("true"));
        task.work_dir_archive = Some(tar_gz(entries));
        let err = h.runtime.start(task).await.unwrap_err();
        assert!(matches!(err, RuntimeError::WorkDir(WorkDirError::UnsafeEntry { .. })), "{i}: {err}");
        // Refused whole: not even the safe entries were written, and the work dir is gone.
        assert!(!h.root.path().join(format!("work/evil{i}/evil{i}.alloc")).exists());
    }
    assert!(!h.root.path().join("work/evil0/evil").exists() && !h.root.path().join("work/evil").exists());
    assert!(!Path::new("/tmp/resolute-evil-absolute").exists());

    let dest = tempfile::tempdir().unwrap();
    assert!(matches!(extract_tar_gz(b"not a tarball", dest.path()), Err(WorkDirError::Archive(_))));
}

#[tokio::test]
async fn artificial_slots_and_cpu_slot_detection() {
    let config = AgentConfig { agent_id: Some("a1".into()), artificial_slots: 3, ..AgentConfig::default() };
    let devices = select_devices(&config, &DeviceSources::default()).unwrap();
    assert_eq!(devices.iter().map(|d| d.id).collect::<Vec<_>>(), [0, 1, 2]);
    assert!(devices.iter().all(|d| d.brand == "Artificial" && d.device_type == DeviceType::Cpu));
    assert_eq!(devices, artificial_devices("a1", 3), "slot UUIDs are stable for an agent id");
    assert_ne!(devices[0].uuid, artificial_devices("a2", 1)[0].uuid);
    assert_ne!(devices[0].uuid, devices[1].uuid);

    let cpuinfo = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n\n\
                   processor\t: 1\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n";
    assert_eq!(
        cpu_device(cpuinfo),
        Device {
            id: 0,
            brand: "Intel(R) Xeon(R) CPU @ 2.20GHz x 2 cores".into(),
            uuid: "GenuineIntel".into(),
            device_type: DeviceType::Cpu
        }
    );

    // This machine, for real.
    let local = std::fs::read_to_string("/proc/cpuinfo").unwrap();
    let cores = local.lines().filter(|l| l.starts_with("processor")).count();
    let config = AgentConfig { slot_type: SlotType::Cpu, ..AgentConfig::default() };
    let sources = DeviceSources { nvidia_smi: None, cpuinfo: local };
    let devices = select_devices(&config, &sources).unwrap();
    assert_eq!(devices.len(), 1);
    assert!(devices[0].brand.ends_with(&format!(" x {cores} cores")), "{devices:?}");
    let auto = select_devices(&AgentConfig::default(), &sources).unwrap();
    assert_eq!(auto, devices, "auto without GPUs is the CPU slot");
    let none = AgentConfig { slot_type: SlotType::None, ..AgentConfig::default() };
    assert!(select_devices(&none, &sources).unwrap().is_empty());
    // Probing the machine (nvidia-smi may or may not exist here) still gives the CPU slot.
    assert_eq!(detect_devices(&config).await.unwrap(), devices);
}

#[test]
fn nvidia_smi_output_becomes_cuda_slots() {
    let output = "0, NVIDIA H100 80GB HBM3, GPU-6e1a4e2c-54b0-1f3e-4c0b-8d6f2c5a9e11\n\
                  1, NVIDIA A100-SXM4-40GB, GPU-0f4b3e6d-1a2b-3c4d-5e6f-7a8b9c0d1e2f\n\n";
    let gpus = parse_nvidia_smi(output).unwrap();
    assert_eq!(
        gpus[0],
        Device {
            id: 0,
            brand: "NVIDIA H100 80GB HBM3".into(),
            uuid: "GPU-6e1a4e2c-54b0-1f3e-4c0b-8d6f2c5a9e11".into(),
            device_type: DeviceType::Cuda
        }
    );
    assert_eq!(gpus[1].id, 1);
    assert_eq!(parse_nvidia_smi("3, Name, With, Commas, GPU-x").unwrap()[0].brand, "Name, With, Commas");
    assert!(matches!(parse_nvidia_smi("zero, name, GPU-x"), Err(DeviceError::NvidiaSmiParse { .. })));
    assert!(matches!(parse_nvidia_smi("No devices were found"), Err(DeviceError::NvidiaSmiParse { .. })));

    let sources = DeviceSources { nvidia_smi: Some(output.into()), cpuinfo: String::new() };
    assert_eq!(select_devices(&AgentConfig::default(), &sources).unwrap(), gpus);
    let by_index = AgentConfig { visible_gpus: Some("1".into()), ..AgentConfig::default() };
    assert_eq!(select_devices(&by_index, &sources).unwrap(), [gpus[1].clone()]);
    let by_uuid = AgentConfig { visible_gpus: Some(gpus[0].uuid.clone()), slot_type: SlotType::Cuda, ..AgentConfig::default() };
    assert_eq!(select_devices(&by_uuid, &sources).unwrap(), [gpus[0].clone()]);
    let unknown = AgentConfig { visible_gpus: Some("7".into()), ..AgentConfig::default() };
    assert!(matches!(select_devices(&unknown, &sources), Err(DeviceError::UnknownVisibleGpu(_))));
    let cuda_only = AgentConfig { slot_type: SlotType::Cuda, ..AgentConfig::default() };
    assert!(matches!(select_devices(&cuda_only, &DeviceSources::default()), Err(DeviceError::NoCudaGpus { .. })));
}

/// A second runtime on the same work root, as an agent restarted after a crash.
fn restarted(h: &Harness) -> (Runtime, Receiver<RuntimeEvent>) {
    let config = AgentConfig {
        agent_id: Some("test-agent".into()),
        work_root: Some(h.root.path().join("work")),
        python: h.fake_python.clone(),
        ..AgentConfig::default()
    };
    Runtime::new(RuntimeOptions::from_config(&config).unwrap())
}

#[tokio::test]
async fn an_adopted_task_goes_on_from_the_sent_output_and_reports_its_recorded_exit() {
    let mut h = harness();
    let mut task = spec("adopted", sh("echo before; echo err >&2; while [ ! -e go ]; do sleep 0.02; done; echo after; exit 7"));
    task.container_id = Some("adopted-c".into());
    let first = h.runtime.start(task).await.unwrap();
    let before = wait_for_line(&mut h.events, "adopted-c", |l| l == "before").await;
    assert_eq!(before, "before");
    // The first agent is gone as far as this task goes: nobody reads its events any more.
    h.events.close();
    let (info, work_dir) = (first.info().clone(), first.info().work_dir.clone());
    assert_eq!(std::fs::read_to_string(info.files.output(StdType::Stdout)).unwrap(), "before\n");

    // The restarted agent takes over with stdout sent up to "before\n" and stderr not at all.
    let (runtime, mut events) = restarted(&h);
    let adopted = runtime.adopt(info, resolute_agent::OutputOffsets { stdout: 7, stderr: 0 }).unwrap();
    assert!(adopted.exit().is_none());
    std::fs::write(work_dir.join("go"), "").unwrap();
    let (lines, exit) = run_to_exit(&mut events, "adopted-c").await;
    assert_eq!(stream(&lines, StdType::Stdout), ["after"], "nothing twice, nothing lost");
    assert_eq!(stream(&lines, StdType::Stderr), ["err"]);
    assert_eq!((exit.code, exit.signal), (Some(7), None));
    runtime.remove("adopted-c").await.unwrap();
    assert!(!work_dir.exists() && !h.root.path().join("work/.resolute-tasks").exists());
}

#[tokio::test]
async fn a_task_that_ended_before_the_restart_is_reported_with_its_recorded_status() {
    let mut h = harness();
    let mut task = spec("gone", sh("echo last words; kill -TERM $$"));
    task.container_id = Some("gone-c".into());
    let info = h.runtime.start(task).await.unwrap().info().clone();
    let (_, exit) = run_to_exit(&mut h.events, "gone-c").await;
    assert_eq!(exit.signal, Some(15));
    assert_eq!(std::fs::read_to_string(info.files.exit()).unwrap(), "signal 15\n");

    let (runtime, mut events) = restarted(&h);
    runtime.adopt(info, resolute_agent::OutputOffsets::default()).unwrap();
    let (lines, exit) = run_to_exit(&mut events, "gone-c").await;
    assert_eq!(stream(&lines, StdType::Stdout), ["last words"]);
    assert_eq!((exit.code, exit.signal), (None, Some(15)));
    // Taken over already: a second adoption of the same container is refused.
    let again = runtime.adopt(runtime.task("gone-c").unwrap().info().clone(), Default::default()).unwrap_err();
    assert!(matches!(again, RuntimeError::ContainerIdInUse(_)), "{again}");
}
