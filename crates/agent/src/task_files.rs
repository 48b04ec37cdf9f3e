//! What a task leaves on disk outside its process, so that it outlives the agent: its `stdout`
//! and `stderr` files and the `exit` file its exit recorder writes, in
//! `<work_root>/.resolute-tasks/<container id>/` (owned by the agent, out of the task's reach when
//! it runs as another account); the `exit` file's format; and reading `/proc` to tell a process
//! that still runs from a pid reused by another one.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::events::StdType;
use crate::workdir::WorkDirError;

/// The directory, under the work root, that holds every task's files.
pub const TASKS_DIR: &str = ".resolute-tasks";

/// The files of one container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskFiles {
    pub dir: PathBuf,
}

/// How a task's main process ended, as its exit recorder wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordedExit {
    Code(i32),
    Signal(i32),
}

impl TaskFiles {
    /// The files of `container_id` under `work_root`; the id must be a single path component.
    pub fn new(work_root: &Path, container_id: &str) -> Result<TaskFiles, WorkDirError> {
        if !crate::config::is_path_component(container_id) {
            return Err(WorkDirError::InvalidId { field: "container_id", value: container_id.to_string() });
        }
        Ok(TaskFiles { dir: work_root.join(TASKS_DIR).join(container_id) })
    }

    /// Where the task's `stdtype` output goes.
    pub fn output(&self, stdtype: StdType) -> PathBuf {
        self.dir.join(match stdtype {
            StdType::Stdout => "stdout",
            StdType::Stderr => "stderr",
        })
    }

    /// Where the exit recorder writes the exit status.
    pub fn exit(&self) -> PathBuf {
        self.dir.join("exit")
    }

    /// Creates the directory (the agent's alone) and opens both output files for appending, to
    /// become the task's stdout and stderr.
    pub fn create(&self) -> io::Result<(File, File)> {
        if let Some(parent) = self.dir.parent() {
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(parent)?;
        }
        std::fs::DirBuilder::new().mode(0o700).create(&self.dir)?;
        let open = |path: PathBuf| OpenOptions::new().create(true).append(true).mode(0o600).open(path);
        Ok((open(self.output(StdType::Stdout))?, open(self.output(StdType::Stderr))?))
    }

    /// The recorded exit, if the recorder wrote one (it does not when it was killed itself).
    pub fn read_exit(&self) -> Option<RecordedExit> {
        std::fs::read_to_string(self.exit()).ok().as_deref().and_then(parse_exit)
    }

    /// Removes the directory and everything in it (a missing one is fine), and the tasks'
    /// directory once it is empty.
    pub fn remove(&self) -> io::Result<()> {
        match std::fs::remove_dir_all(&self.dir) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        if let Some(parent) = self.dir.parent() {
            // Fails while other tasks' files are there: that is fine.
            let _ = std::fs::remove_dir(parent);
        }
        Ok(())
    }
}

/// Parses the exit file: `code N` or `signal N`, with or without a trailing newline.
pub fn parse_exit(text: &str) -> Option<RecordedExit> {
    let (kind, number) = text.trim().split_once(' ')?;
    let number: i32 = number.trim().parse().ok()?;
    match kind {
        "code" => Some(RecordedExit::Code(number)),
        "signal" => Some(RecordedExit::Signal(number)),
        _ => None,
    }
}

/// The state and start time (clock ticks after boot) of a process, from `/proc/<pid>/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub state: char,
    pub start_ticks: u64,
}

/// Parses `/proc/<pid>/stat`. The command name is in parentheses and may itself contain spaces
/// and parentheses, so the fields are counted from the last `)`.
pub fn parse_stat(stat: &str) -> Option<ProcStat> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3 of the line, starttime field 22.
    let state = fields.first()?.chars().next()?;
    let start_ticks = fields.get(19)?.parse().ok()?;
    Some(ProcStat { state, start_ticks })
}

/// `pid`'s stat, `None` once no process has that pid.
pub fn proc_stat(pid: u32) -> Option<ProcStat> {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).ok().as_deref().and_then(parse_stat)
}

/// Whether the process started at `start_ticks` with this pid still runs (a zombie does not; a
/// process that reused the pid has another start time). A start time of 0 (not read at spawn)
/// checks the pid alone.
pub fn still_running(pid: u32, start_ticks: u64) -> bool {
    proc_stat(pid).is_some_and(|s| (start_ticks == 0 || s.start_ticks == start_ticks) && s.state != 'Z' && s.state != 'X')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_files_parse_and_garbage_does_not() {
        assert_eq!(parse_exit("code 7\n"), Some(RecordedExit::Code(7)));
        assert_eq!(parse_exit("signal 15"), Some(RecordedExit::Signal(15)));
        assert_eq!(parse_exit("code -1"), Some(RecordedExit::Code(-1)));
        for bad in ["", "code", "code x", "exit 3", "code 7 8"] {
            assert_eq!(parse_exit(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn stat_is_read_past_a_name_with_spaces_and_parentheses() {
        let stat = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(parse_stat(stat), Some(ProcStat { state: 'S', start_ticks: 987654 }));
        assert_eq!(parse_stat("12 (x) Z 1"), None);
        assert_eq!(parse_stat("no parenthesis"), None);
    }

    #[test]
    fn this_process_runs_and_a_wrong_start_time_does_not() {
        let me = std::process::id();
        let stat = proc_stat(me).expect("own stat");
        assert!(still_running(me, stat.start_ticks));
        assert!(!still_running(me, stat.start_ticks + 1));
    }

    #[test]
    fn container_ids_must_be_one_path_component() {
        let files = TaskFiles::new(Path::new("/w"), "c-1").unwrap();
        assert_eq!(files.output(StdType::Stderr), Path::new("/w/.resolute-tasks/c-1/stderr"));
        assert_eq!(files.exit(), Path::new("/w/.resolute-tasks/c-1/exit"));
        for bad in ["", "..", "a/b"] {
            let err = TaskFiles::new(Path::new("/w"), bad).unwrap_err().to_string();
            assert!(err.contains("container_id"), "{err}");
        }
    }
}
