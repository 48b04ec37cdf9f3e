//! Bookkeeping for the master that `det deploy local` runs in the background: where its files
//! live, whether it is alive, and how to stop it.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::thread::sleep;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use resolute_api::master::MasterInfo;

use crate::client::Client;
use crate::error::CliError;

const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// `$XDG_DATA_HOME/resolute` (else `~/.local/share/resolute`): database, pid file and log.
#[derive(Clone, Debug)]
pub struct Paths {
    pub data_dir: PathBuf,
    pub pid_file: PathBuf,
    pub log_file: PathBuf,
}

impl Paths {
    pub fn resolve() -> Result<Paths, CliError> {
        let base = dirs::data_dir().ok_or_else(|| CliError::msg("cannot find a data directory; set XDG_DATA_HOME"))?;
        Ok(Paths::under(base.join("resolute")))
    }

    pub fn under(data_dir: PathBuf) -> Paths {
        Paths { pid_file: data_dir.join("master.pid"), log_file: data_dir.join("master.log"), data_dir }
    }
}

pub fn write_pid_file(paths: &Paths, pid: u32) -> Result<(), CliError> {
    fs::write(&paths.pid_file, format!("{pid}\n")).map_err(|e| CliError::msg(format!("{}: {e}", paths.pid_file.display())))
}

pub fn remove_pid_file(paths: &Paths) -> Result<(), CliError> {
    match fs::remove_file(&paths.pid_file) {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(CliError::msg(format!("{}: {e}", paths.pid_file.display()))),
        _ => Ok(()),
    }
}

/// The pid from the pid file if that process is still our master; a stale file is removed.
pub fn running_pid(paths: &Paths) -> Option<u32> {
    let pid = fs::read_to_string(&paths.pid_file).ok()?.trim().parse::<u32>().ok();
    match pid {
        Some(pid) if is_alive(pid) && is_master(pid) => Some(pid),
        _ => {
            let _ = fs::remove_file(&paths.pid_file);
            None
        }
    }
}

/// Alive and not a zombie (an unreaped child of some other process counts as gone).
pub fn is_alive(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    if kill(Pid::from_raw(raw), None).is_err() {
        return false;
    }
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state letter follows the parenthesised command name.
        Ok(stat) => stat.rsplit_once(") ").is_none_or(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => true,
    }
}

/// Guards against pid reuse: the process must be a `... master run ...`. Where `/proc` is not
/// available, trust the pid file.
fn is_master(pid: u32) -> bool {
    match fs::read(format!("/proc/{pid}/cmdline")) {
        Ok(cmdline) => {
            let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
            args.windows(2).any(|w| w[0] == b"master" && w[1] == b"run")
        }
        Err(_) => true,
    }
}

/// Whether a Resolute/Determined master answers `GET /info` on this port.
pub fn answers(port: u16) -> bool {
    let Ok(client) = Client::with_timeout(&format!("http://127.0.0.1:{port}"), Duration::from_secs(2)) else {
        return false;
    };
    client.get::<MasterInfo>("info").is_ok()
}

/// SIGTERM, up to 10 s for a graceful exit, then SIGKILL.
pub fn stop(pid: u32) -> Result<(), CliError> {
    let target = Pid::from_raw(i32::try_from(pid).map_err(|_| CliError::msg(format!("invalid pid {pid}")))?);
    if let Err(e) = kill(target, Signal::SIGTERM) {
        if is_alive(pid) {
            return Err(CliError::msg(format!("cannot stop the master (pid {pid}): {e}")));
        }
        return Ok(());
    }
    if wait_for_exit(pid, STOP_TIMEOUT) {
        return Ok(());
    }
    eprintln!("The master (pid {pid}) did not exit within 10 s of SIGTERM; killing it.");
    let _ = kill(target, Signal::SIGKILL);
    if wait_for_exit(pid, Duration::from_secs(5)) { Ok(()) } else { Err(CliError::msg(format!("the master (pid {pid}) survived SIGKILL"))) }
}

fn wait_for_exit(pid: u32, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if !is_alive(pid) {
            return true;
        }
        sleep(Duration::from_millis(100));
    }
    !is_alive(pid)
}

/// The last `lines` lines of the master's log, for startup failures.
pub fn log_tail(path: &Path, lines: usize) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_live_in_the_data_dir() {
        let p = Paths::under(PathBuf::from("/d/resolute"));
        assert_eq!(p.pid_file, PathBuf::from("/d/resolute/master.pid"));
        assert_eq!(p.log_file, PathBuf::from("/d/resolute/master.log"));
    }

    #[test]
    fn own_process_is_alive_but_not_a_master() {
        assert!(is_alive(std::process::id()));
        assert!(!is_master(std::process::id()));
        assert!(!is_alive(u32::MAX));
    }

    #[test]
    fn stale_pid_files_are_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let paths = Paths::under(dir.path().to_owned());
        // Our own pid is alive but is not `det master run`, so it must not be trusted.
        write_pid_file(&paths, std::process::id()).expect("write");
        assert_eq!(running_pid(&paths), None);
        assert!(!paths.pid_file.exists());
    }

    #[test]
    fn log_tail_keeps_the_end() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("master.log");
        fs::write(&log, "a\nb\nc\n").expect("write");
        assert_eq!(log_tail(&log, 2), "b\nc");
        assert_eq!(log_tail(&dir.path().join("missing"), 2), "");
    }
}
