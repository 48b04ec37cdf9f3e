//! The agents `det deploy local` runs next to its master: detached `det agent run` processes, each
//! with `agent-<i>.pid` and `agent-<i>.log` in the data dir, stopped before the master; and the
//! cluster's join secret (`agent_secret` in the data dir, mode 0600), which master and agents read.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use resolute_agent::AgentConfig;

use crate::error::CliError;
use crate::local_process::{self, Paths};
use crate::say;

/// How long a new agent must stay up to count as started (bad settings end it at once).
const STARTUP_CHECK: Duration = Duration::from_millis(500);

/// An agent terminates its tasks gracefully on SIGTERM (30 s by default) before it exits.
const STOP_TIMEOUT: Duration = Duration::from_secs(45);

#[derive(Debug, Clone)]
pub struct AgentOptions {
    pub count: u32,
    pub no_gpu: bool,
    pub artificial_slots: Option<u32>,
}

/// The local cluster's join secret file: created with a fresh random secret on first use (readable
/// only by its owner), then kept, so agents started later join the same master.
pub fn ensure_agent_secret(paths: &Paths) -> Result<PathBuf, CliError> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};

    let path = paths.data_dir.join("agent_secret");
    match fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path) {
        Ok(mut file) => {
            let secret = hex::encode(rand::random::<[u8; 32]>());
            file.write_all(secret.as_bytes()).map_err(|e| io_msg(&path, e))?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            // Whatever made it, it must not be readable by others.
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).map_err(|e| io_msg(&path, e))?;
        }
        Err(e) => return Err(io_msg(&path, e)),
    }
    Ok(path)
}

/// Starts the agents that are not running yet, pointed at the master on `master_port`.
pub fn start(paths: &Paths, master_port: u16, options: &AgentOptions) -> Result<(), CliError> {
    let host_id = AgentConfig::default().agent_id();
    let secret_file = ensure_agent_secret(paths)?;
    for index in 0..options.count {
        let name = format!("agent-{index}");
        let (pid_file, log_file) = (paths.data_dir.join(format!("{name}.pid")), paths.data_dir.join(format!("{name}.log")));
        if let Some(pid) = running_agent(&pid_file) {
            say!("Agent {name} is already running (pid {pid}).");
            continue;
        }
        let agent_id = if options.count == 1 { host_id.clone() } else { format!("{host_id}-{index}") };
        let mut args = vec![
            "agent".to_owned(),
            "run".to_owned(),
            "--master-host".to_owned(),
            "127.0.0.1".to_owned(),
            "--master-port".to_owned(),
            master_port.to_string(),
            "--agent-id".to_owned(),
            agent_id.clone(),
            "--work-root".to_owned(),
            paths.data_dir.join("agent").join(&agent_id).display().to_string(),
            "--security-agent-secret-file".to_owned(),
            secret_file.display().to_string(),
        ];
        if options.no_gpu {
            args.extend(["--slot-type".to_owned(), "cpu".to_owned()]);
        }
        if let Some(slots) = options.artificial_slots {
            args.extend(["--artificial-slots".to_owned(), slots.to_string()]);
        }
        let pid = spawn(&args, &log_file)?;
        fs::write(&pid_file, format!("{pid}\n")).map_err(|e| io_msg(&pid_file, e))?;
        if !stays_up(pid) {
            let _ = fs::remove_file(&pid_file);
            return Err(CliError::msg(format!(
                "the agent {agent_id} exited during startup; last lines of {}:\n{}",
                log_file.display(),
                local_process::log_tail(&log_file, 20)
            )));
        }
        say!("Agent {agent_id} started (pid {pid}); log file: {}", log_file.display());
    }
    Ok(())
}

/// Starts `det agent run` in its own process group, so it outlives this command and is not hit
/// by the terminal's Ctrl-C.
fn spawn(args: &[String], log_file: &Path) -> Result<u32, CliError> {
    use std::os::unix::process::CommandExt;

    let exe = std::env::current_exe().map_err(|e| CliError::msg(format!("cannot find the det executable: {e}")))?;
    let log = fs::OpenOptions::new().create(true).append(true).open(log_file).map_err(|e| io_msg(log_file, e))?;
    let log_err = log.try_clone().map_err(|e| io_msg(log_file, e))?;
    let child = Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .process_group(0)
        .spawn()
        .map_err(|e| CliError::msg(format!("cannot start an agent: {e}")))?;
    Ok(child.id())
}

fn stays_up(pid: u32) -> bool {
    let deadline = Instant::now() + STARTUP_CHECK;
    while Instant::now() < deadline {
        if !local_process::is_alive(pid) {
            return false;
        }
        sleep(Duration::from_millis(50));
    }
    local_process::is_alive(pid)
}

/// Stops every agent with a pid file, and removes the pid files.
pub fn stop_all(paths: &Paths) -> Result<(), CliError> {
    for pid_file in pid_files(&paths.data_dir) {
        let name = pid_file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        if let Some(pid) = running_agent(&pid_file) {
            stop(pid)?;
            say!("Stopped {name} (pid {pid}).");
        }
        match fs::remove_file(&pid_file) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io_msg(&pid_file, e)),
            _ => {}
        }
    }
    Ok(())
}

fn pid_files(data_dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(data_dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().map(|n| n.to_string_lossy()).is_some_and(|n| n.starts_with("agent-") && n.ends_with(".pid")))
        .collect();
    files.sort();
    files
}

/// The pid in `pid_file` if that process is alive and is a `det agent run`.
fn running_agent(pid_file: &Path) -> Option<u32> {
    let pid = fs::read_to_string(pid_file).ok()?.trim().parse::<u32>().ok()?;
    (local_process::is_alive(pid) && is_agent(pid)).then_some(pid)
}

/// Guards against pid reuse; where `/proc` is not available, trusts the pid file.
fn is_agent(pid: u32) -> bool {
    match fs::read(format!("/proc/{pid}/cmdline")) {
        Ok(cmdline) => cmdline.split(|b| *b == 0).collect::<Vec<_>>().windows(2).any(|w| w[0] == b"agent" && w[1] == b"run"),
        Err(_) => true,
    }
}

/// SIGTERM, time for the agent to stop its tasks, then SIGKILL.
fn stop(pid: u32) -> Result<(), CliError> {
    let target = Pid::from_raw(i32::try_from(pid).map_err(|_| CliError::msg(format!("invalid pid {pid}")))?);
    if kill(target, Signal::SIGTERM).is_err() {
        return Ok(());
    }
    let deadline = Instant::now() + STOP_TIMEOUT;
    while Instant::now() < deadline {
        if !local_process::is_alive(pid) {
            return Ok(());
        }
        sleep(Duration::from_millis(100));
    }
    eprintln!("The agent (pid {pid}) did not exit within {} s of SIGTERM; killing it.", STOP_TIMEOUT.as_secs());
    let _ = kill(target, Signal::SIGKILL);
    Ok(())
}

fn io_msg(path: &Path, e: std::io::Error) -> CliError {
    CliError::msg(format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_join_secret_is_random_private_and_kept() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::under(dir.path().to_path_buf());
        let path = ensure_agent_secret(&paths).unwrap();
        let secret = fs::read_to_string(&path).unwrap();
        assert_eq!(secret.len(), 64);
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(fs::read_to_string(ensure_agent_secret(&paths).unwrap()).unwrap(), secret, "kept across cluster-ups");
        let other = tempfile::tempdir().unwrap();
        let other = fs::read_to_string(ensure_agent_secret(&Paths::under(other.path().to_path_buf())).unwrap()).unwrap();
        assert_ne!(other, secret);
    }

    #[test]
    fn only_agent_pid_files_are_found_and_stale_ones_are_not_running() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["agent-0.pid", "agent-1.pid", "master.pid", "agent-0.log"] {
            fs::write(dir.path().join(name), format!("{}\n", std::process::id())).unwrap();
        }
        let files = pid_files(dir.path());
        assert_eq!(files, [dir.path().join("agent-0.pid"), dir.path().join("agent-1.pid")]);
        // Our own pid is alive but not `det agent run`.
        assert_eq!(running_agent(&files[0]), None);
    }
}
