//! What a generic task keeps beyond a command's, in its stored `extra`: the tasks it was forked
//! from and launched by, whether it may be paused, and its pause state (`ACTIVE`,
//! `STOPPING_PAUSED`, `PAUSED`; an ended task's state comes from its exit status).

use serde_json::{Value, json};

/// `extra` keys.
pub const FORKED_FROM: &str = "forkedFrom";
pub const PARENT_ID: &str = "parentId";
pub const NO_PAUSE: &str = "noPause";
pub const PROJECT_ID: &str = "projectId";
const STATE: &str = "state";

/// Upstream's `GENERIC_TASK_STATE_*` (without the prefix).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GenericTaskState {
    Active,
    StoppingPaused,
    Paused,
    Canceled,
    Completed,
    Error,
}

impl GenericTaskState {
    /// The stored name, and upstream's without its `GENERIC_TASK_STATE_` prefix.
    pub fn as_str(self) -> &'static str {
        match self {
            GenericTaskState::Active => "ACTIVE",
            GenericTaskState::StoppingPaused => "STOPPING_PAUSED",
            GenericTaskState::Paused => "PAUSED",
            GenericTaskState::Canceled => "CANCELED",
            GenericTaskState::Completed => "COMPLETED",
            GenericTaskState::Error => "ERROR",
        }
    }

    /// A task's state: an ended one's from its exit status (`succeeded` when it exited zero,
    /// `killed` when a user killed it), an open one's as stored.
    pub fn of(extra: &Value, ended: Option<(bool, bool)>) -> GenericTaskState {
        match ended {
            Some((_, true)) => GenericTaskState::Canceled,
            Some((true, false)) => GenericTaskState::Completed,
            Some((false, false)) => GenericTaskState::Error,
            None => match extra.get(STATE).and_then(Value::as_str) {
                Some("STOPPING_PAUSED") => GenericTaskState::StoppingPaused,
                Some("PAUSED") => GenericTaskState::Paused,
                _ => GenericTaskState::Active,
            },
        }
    }
}

/// Records an open task's pause state in its `extra`.
pub fn set_state(extra: &mut Value, state: GenericTaskState) {
    if !extra.is_object() {
        *extra = json!({});
    }
    extra[STATE] = json!(state.as_str());
}

/// Upstream's rule: the task a pause names may be paused unless it set `no_pause`; its
/// descendants only when they said `no_pause: false`.
pub fn pausable(extra: &Value, is_root: bool) -> bool {
    match extra.get(NO_PAUSE).and_then(Value::as_bool) {
        Some(no_pause) => !no_pause,
        None => is_root,
    }
}

/// The task that launched this one, if any.
pub fn parent_of(extra: &Value) -> Option<&str> {
    extra.get(PARENT_ID).and_then(Value::as_str).filter(|p| !p.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_comes_from_the_exit_or_the_stored_pause() {
        let mut extra = json!({});
        assert_eq!(GenericTaskState::of(&extra, None), GenericTaskState::Active);
        set_state(&mut extra, GenericTaskState::Paused);
        assert_eq!(GenericTaskState::of(&extra, None), GenericTaskState::Paused);
        assert_eq!(GenericTaskState::of(&extra, Some((true, false))), GenericTaskState::Completed);
        assert_eq!(GenericTaskState::of(&extra, Some((false, true))), GenericTaskState::Canceled);
        assert_eq!(GenericTaskState::of(&extra, Some((false, false))), GenericTaskState::Error);
    }

    #[test]
    fn only_the_named_task_is_pausable_by_default() {
        assert!(pausable(&json!({}), true));
        assert!(!pausable(&json!({}), false));
        assert!(pausable(&json!({"noPause": false}), false));
        assert!(!pausable(&json!({"noPause": true}), true));
    }
}
