//! The kinds of task the master runs and the agent starts, with both spellings: the store's and
//! the REST API's (`TASK_TYPE_TRIAL`, [`TaskType::as_str`]) and `DET_TASK_TYPE`'s, which is also
//! the agent protocol's and this type's serde form (`TRIAL`, [`TaskType::env_name`]).

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TaskType {
    Trial,
    Notebook,
    Shell,
    Command,
    Tensorboard,
    CheckpointGc,
    Generic,
}

impl TaskType {
    pub const ALL: &'static [TaskType] = &[
        TaskType::Trial,
        TaskType::Notebook,
        TaskType::Shell,
        TaskType::Command,
        TaskType::Tensorboard,
        TaskType::CheckpointGc,
        TaskType::Generic,
    ];

    /// The store's and the REST API's name (`TASK_TYPE_TRIAL`).
    pub fn as_str(self) -> &'static str {
        match self {
            TaskType::Trial => "TASK_TYPE_TRIAL",
            TaskType::Notebook => "TASK_TYPE_NOTEBOOK",
            TaskType::Shell => "TASK_TYPE_SHELL",
            TaskType::Command => "TASK_TYPE_COMMAND",
            TaskType::Tensorboard => "TASK_TYPE_TENSORBOARD",
            TaskType::CheckpointGc => "TASK_TYPE_CHECKPOINT_GC",
            TaskType::Generic => "TASK_TYPE_GENERIC",
        }
    }

    pub fn parse(name: &str) -> Option<TaskType> {
        TaskType::ALL.iter().copied().find(|t| t.as_str() == name)
    }

    /// `DET_TASK_TYPE` and the agent protocol's spelling (`TRIAL`, `NOTEBOOK`, …).
    pub fn env_name(self) -> &'static str {
        self.as_str().trim_start_matches("TASK_TYPE_")
    }

    /// How logs and listings name a task of this kind (`Command`, `TensorBoard`, …).
    pub fn display_name(self) -> &'static str {
        match self {
            TaskType::Trial => "Trial",
            TaskType::Notebook => "Notebook",
            TaskType::Shell => "Shell",
            TaskType::Command => "Command",
            TaskType::Tensorboard => "TensorBoard",
            TaskType::CheckpointGc => "Checkpoint GC",
            TaskType::Generic => "Generic Task",
        }
    }
}

impl fmt::Display for TaskType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for t in TaskType::ALL {
            assert_eq!(TaskType::parse(t.as_str()), Some(*t));
        }
        assert_eq!(TaskType::CheckpointGc.env_name(), "CHECKPOINT_GC");
        assert_eq!(TaskType::Trial.env_name(), "TRIAL");
        for t in TaskType::ALL {
            assert_eq!(serde_json::to_value(t).unwrap(), t.env_name(), "serde speaks the DET_TASK_TYPE spelling");
        }
    }
}
