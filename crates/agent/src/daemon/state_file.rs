//! The agent's state file, `<work_root>/.resolute-agent-state.json`: every task that runs here,
//! with what a restarted agent needs to take it over ([`crate::process::Runtime::adopt`]) and
//! report it to the master as after a master restart — ids, slots, ports, the recorded process
//! (pid and start time), readiness, and how far its output has been sent. Written whole, to a
//! temporary file renamed over the old one, so a crash at any moment leaves the old or the new
//! state, never a torn one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::process::{OutputOffsets, TaskInfo};
use crate::task_files::TaskFiles;

/// The state file's name under the work root.
pub const STATE_FILE: &str = ".resolute-agent-state.json";

/// What the file holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentState {
    pub tasks: Vec<TaskRecord>,
}

/// One running task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRecord {
    pub container_id: String,
    pub task_id: String,
    pub allocation_id: String,
    pub slot_ids: Vec<u32>,
    pub ports: BTreeMap<String, u16>,
    /// The recorded process: the group leader (its exit recorder).
    pub pid: u32,
    pub start_ticks: u64,
    pub started_at_ms: u64,
    pub work_dir: PathBuf,
    /// `TaskReady` was sent (or the task has no readiness pattern).
    pub ready: bool,
    pub ready_pattern: Option<String>,
    /// Bytes of stdout and stderr whose lines have been written to the master.
    pub stdout_offset: u64,
    pub stderr_offset: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot read the agent state file {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("the agent state file {} is not valid ({source}); its tasks cannot be taken over", path.display())]
    Parse { path: PathBuf, source: serde_json::Error },
    #[error("cannot write the agent state file {}: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
}

/// Where the state file of an agent with this work root is.
pub fn state_path(work_root: &Path) -> PathBuf {
    work_root.join(STATE_FILE)
}

/// The recorded state; empty when there is no file (a first start).
pub fn load(path: &Path) -> Result<AgentState, StateError> {
    let text = match std::fs::read(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(AgentState::default()),
        Err(source) => return Err(StateError::Read { path: path.to_path_buf(), source }),
    };
    serde_json::from_slice(&text).map_err(|source| StateError::Parse { path: path.to_path_buf(), source })
}

/// Replaces the file with `state` atomically (a temporary file in the same directory, renamed);
/// with no task, removes it.
pub fn save(path: &Path, state: &AgentState) -> Result<(), StateError> {
    let error = |source| StateError::Write { path: path.to_path_buf(), source };
    if state.tasks.is_empty() {
        return match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(error(e)),
            _ => Ok(()),
        };
    }
    // Our own types always serialize.
    let text = serde_json::to_vec_pretty(state).unwrap_or_default();
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = PathBuf::from(temporary);
    std::fs::write(&temporary, text).map_err(error)?;
    std::fs::rename(&temporary, path).map_err(error)
}

impl TaskRecord {
    /// The runtime's view of the recorded task, and where its output is to be read from.
    pub fn task_info(&self, work_root: &Path) -> Result<(TaskInfo, OutputOffsets), crate::workdir::WorkDirError> {
        let info = TaskInfo {
            task_id: self.task_id.clone(),
            allocation_id: self.allocation_id.clone(),
            container_id: self.container_id.clone(),
            pid: self.pid,
            work_dir: self.work_dir.clone(),
            ports: self.ports.clone(),
            start_ticks: self.start_ticks,
            started_at: SystemTime::UNIX_EPOCH + Duration::from_millis(self.started_at_ms),
            files: TaskFiles::new(work_root, &self.container_id)?,
        };
        Ok((info, OutputOffsets { stdout: self.stdout_offset, stderr: self.stderr_offset }))
    }
}

/// Milliseconds since the epoch of `time`.
pub fn epoch_ms(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(container_id: &str) -> TaskRecord {
        TaskRecord {
            container_id: container_id.into(),
            task_id: "t1".into(),
            allocation_id: "t1.1".into(),
            slot_ids: vec![0, 1],
            ports: [("PORT".to_string(), 4242)].into(),
            pid: 1234,
            start_ticks: 99,
            started_at_ms: 1_700_000_000_123,
            work_dir: "/w/t1/t1.1".into(),
            ready: false,
            ready_pattern: Some("listening".into()),
            stdout_offset: 10,
            stderr_offset: 3,
        }
    }

    #[test]
    fn a_missing_file_is_an_empty_state_and_a_saved_one_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = state_path(dir.path());
        assert_eq!(load(&path).unwrap(), AgentState::default());
        let state = AgentState { tasks: vec![record("c1"), record("c2")] };
        save(&path, &state).unwrap();
        assert_eq!(load(&path).unwrap(), state);
        // Replaced whole, no temporary file left behind.
        let one = AgentState { tasks: vec![record("c2")] };
        save(&path, &one).unwrap();
        assert_eq!(load(&path).unwrap(), one);
        let names: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert_eq!(names, [STATE_FILE]);
        // Without tasks there is no file.
        save(&path, &AgentState::default()).unwrap();
        assert!(!path.exists());
        assert_eq!(load(&path).unwrap(), AgentState::default());
    }

    #[test]
    fn a_corrupt_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = state_path(dir.path());
        std::fs::write(&path, "{\"tasks\": [").unwrap();
        let err = load(&path).unwrap_err().to_string();
        assert!(err.contains(".resolute-agent-state.json") && err.contains("not valid"), "{err}");
    }

    #[test]
    fn a_record_gives_the_runtime_its_task_and_offsets() {
        let (info, offsets) = record("c1").task_info(Path::new("/w")).unwrap();
        assert_eq!((info.pid, info.start_ticks, info.ports["PORT"]), (1234, 99, 4242));
        assert_eq!(epoch_ms(info.started_at), 1_700_000_000_123);
        assert_eq!(info.files.dir, Path::new("/w/.resolute-tasks/c1"));
        assert_eq!(offsets, OutputOffsets { stdout: 10, stderr: 3 });
        assert!(record("../x").task_info(Path::new("/w")).is_err());
    }
}
