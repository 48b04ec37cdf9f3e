//! The experiment state machine (upstream's Appendix B), as pure functions so the HTTP actions
//! and the coming scheduler loop apply the same rules.
//!
//! ACTIVE (or a substate: QUEUED, PULLING, STARTING, RUNNING, which the loop derives from the
//! trials' allocations and which behave exactly like ACTIVE here) ↔ PAUSED; ACTIVE/PAUSED → STOPPING_{COMPLETED,CANCELED,KILLED,ERROR} → COMPLETED /
//! CANCELED (after cancel *and* kill) / ERROR; a terminal experiment may be deleted. A stopping
//! state is only ever escalated (completed < canceled < killed, error), never downgraded.

use std::fmt;

/// An experiment's stored state; `as_str` is upstream's wire name, which is also what the store
/// keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExperimentState {
    Active,
    Paused,
    StoppingCompleted,
    StoppingCanceled,
    StoppingKilled,
    StoppingError,
    Completed,
    Canceled,
    Error,
    Deleting,
    DeleteFailed,
    Deleted,
    Queued,
    Pulling,
    Starting,
    Running,
}

/// What a user (or the scheduler) asks of an experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExperimentAction {
    Activate,
    Pause,
    Cancel,
    Kill,
}

impl ExperimentState {
    pub const ALL: &'static [ExperimentState] = &[
        ExperimentState::Active,
        ExperimentState::Paused,
        ExperimentState::StoppingCompleted,
        ExperimentState::StoppingCanceled,
        ExperimentState::StoppingKilled,
        ExperimentState::StoppingError,
        ExperimentState::Completed,
        ExperimentState::Canceled,
        ExperimentState::Error,
        ExperimentState::Deleting,
        ExperimentState::DeleteFailed,
        ExperimentState::Deleted,
        ExperimentState::Queued,
        ExperimentState::Pulling,
        ExperimentState::Starting,
        ExperimentState::Running,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ExperimentState::Active => "STATE_ACTIVE",
            ExperimentState::Paused => "STATE_PAUSED",
            ExperimentState::StoppingCompleted => "STATE_STOPPING_COMPLETED",
            ExperimentState::StoppingCanceled => "STATE_STOPPING_CANCELED",
            ExperimentState::StoppingKilled => "STATE_STOPPING_KILLED",
            ExperimentState::StoppingError => "STATE_STOPPING_ERROR",
            ExperimentState::Completed => "STATE_COMPLETED",
            ExperimentState::Canceled => "STATE_CANCELED",
            ExperimentState::Error => "STATE_ERROR",
            ExperimentState::Deleting => "STATE_DELETING",
            ExperimentState::DeleteFailed => "STATE_DELETE_FAILED",
            ExperimentState::Deleted => "STATE_DELETED",
            ExperimentState::Queued => "STATE_QUEUED",
            ExperimentState::Pulling => "STATE_PULLING",
            ExperimentState::Starting => "STATE_STARTING",
            ExperimentState::Running => "STATE_RUNNING",
        }
    }

    pub fn parse(name: &str) -> Option<ExperimentState> {
        ExperimentState::ALL.iter().copied().find(|s| s.as_str() == name)
    }

    /// `ACTIVE` or one of its substates (see `states::ACTIVE_STATE_NAMES`).
    pub fn is_active(self) -> bool {
        super::states::is_active_state_name(self.as_str())
    }

    /// The state the loop reasons with: every active substate is `ACTIVE`.
    pub fn intent(self) -> ExperimentState {
        if self.is_active() { ExperimentState::Active } else { self }
    }

    /// The stored names `self` may be found under: all active substates for an active state,
    /// else just its own (for compare-and-set updates that must not lose a race with the loop's
    /// QUEUED/RUNNING bookkeeping).
    pub fn stored_names(self) -> Vec<&'static str> {
        if self.is_active() { super::states::ACTIVE_STATE_NAMES.to_vec() } else { vec![self.as_str()] }
    }

    /// Finished for good: the only states an experiment may be archived or deleted in.
    pub fn is_terminal(self) -> bool {
        matches!(self, ExperimentState::Completed | ExperimentState::Canceled | ExperimentState::Error | ExperimentState::DeleteFailed)
    }

    pub fn is_stopping(self) -> bool {
        matches!(
            self,
            ExperimentState::StoppingCompleted
                | ExperimentState::StoppingCanceled
                | ExperimentState::StoppingKilled
                | ExperimentState::StoppingError
        )
    }

    /// How forcefully a stopping state stops; a stop request never lowers it.
    fn stop_rank(self) -> u8 {
        match self {
            ExperimentState::StoppingCompleted => 1,
            ExperimentState::StoppingCanceled => 2,
            ExperimentState::StoppingKilled | ExperimentState::StoppingError => 3,
            _ => 0,
        }
    }

    /// The state a stopping experiment ends in once no trial runs.
    pub fn settled(self) -> ExperimentState {
        match self {
            ExperimentState::StoppingCompleted => ExperimentState::Completed,
            // Kill and cancel both end in CANCELED, as upstream.
            ExperimentState::StoppingCanceled | ExperimentState::StoppingKilled => ExperimentState::Canceled,
            ExperimentState::StoppingError => ExperimentState::Error,
            other => other,
        }
    }
}

impl fmt::Display for ExperimentState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ExperimentAction {
    pub fn verb(self) -> &'static str {
        match self {
            ExperimentAction::Activate => "activated",
            ExperimentAction::Pause => "paused",
            ExperimentAction::Cancel => "canceled",
            ExperimentAction::Kill => "killed",
        }
    }
}

/// Why an action is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IllegalTransition {
    pub from: ExperimentState,
    pub action: ExperimentAction,
}

impl fmt::Display for IllegalTransition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verb = self.action.verb();
        match self.action {
            ExperimentAction::Activate | ExperimentAction::Pause => {
                write!(f, "experiment is {}: only an active or paused experiment can be {verb}", self.from)
            }
            ExperimentAction::Cancel | ExperimentAction::Kill => write!(f, "experiment is {}: it can no longer be {verb}", self.from),
        }
    }
}

/// The state `action` moves an experiment in `from` to, before any trial has reacted (a stop
/// lands in a STOPPING state; see [`settle`]). `Ok(from)` means there is nothing to do: pausing a
/// paused experiment, or stopping one that is already stopping at least as hard or has ended,
/// succeeds without change, as upstream.
pub fn apply(from: ExperimentState, action: ExperimentAction) -> Result<ExperimentState, IllegalTransition> {
    use ExperimentState as S;
    let illegal = Err(IllegalTransition { from, action });
    match action {
        ExperimentAction::Activate | ExperimentAction::Pause => {
            let target = if action == ExperimentAction::Activate { S::Active } else { S::Paused };
            match from {
                // Activating a queued or running experiment leaves it where it is.
                s if s.is_active() && target == S::Active => Ok(s),
                s if s.is_active() || s == S::Paused => Ok(target),
                _ => illegal,
            }
        }
        ExperimentAction::Cancel | ExperimentAction::Kill => {
            let target = if action == ExperimentAction::Cancel { S::StoppingCanceled } else { S::StoppingKilled };
            match from {
                s if s.is_active() || s == S::Paused => Ok(target),
                s if s.is_stopping() => Ok(if target.stop_rank() > s.stop_rank() { target } else { s }),
                s if s.is_terminal() => Ok(s),
                _ => illegal,
            }
        }
    }
}

/// Where an experiment goes given how many of its trials still run: a stopping experiment with
/// none left reaches its terminal state; anything else stays.
pub fn settle(state: ExperimentState, running_trials: usize) -> ExperimentState {
    if state.is_stopping() && running_trials == 0 { state.settled() } else { state }
}

/// `apply` then `settle`: the state to store after `action`.
pub fn transition(from: ExperimentState, action: ExperimentAction, running_trials: usize) -> Result<ExperimentState, IllegalTransition> {
    apply(from, action).map(|s| settle(s, running_trials))
}

#[cfg(test)]
mod tests {
    use super::ExperimentAction::*;
    use super::ExperimentState::*;
    use super::*;

    #[test]
    fn names_round_trip() {
        for state in ExperimentState::ALL {
            assert_eq!(ExperimentState::parse(state.as_str()), Some(*state));
        }
        assert_eq!(ExperimentState::parse("STATE_RUNNING"), Some(Running));
        assert_eq!(ExperimentState::parse("STATE_NOPE"), None);
    }

    #[test]
    fn active_and_paused_toggle_idempotently() {
        assert_eq!(apply(Active, Pause), Ok(Paused));
        assert_eq!(apply(Paused, Pause), Ok(Paused));
        assert_eq!(apply(Paused, Activate), Ok(Active));
        assert_eq!(apply(Active, Activate), Ok(Active));
    }

    #[test]
    fn queued_and_running_experiments_act_as_active_ones() {
        for from in [Queued, Pulling, Starting, Running] {
            assert!(from.is_active());
            assert_eq!(from.intent(), Active);
            assert_eq!(apply(from, Pause), Ok(Paused));
            assert_eq!(apply(from, Activate), Ok(from), "activating an active experiment changes nothing");
            assert_eq!(apply(from, Cancel), Ok(StoppingCanceled));
            assert_eq!(apply(from, Kill), Ok(StoppingKilled));
            assert_eq!(from.stored_names(), ["STATE_ACTIVE", "STATE_QUEUED", "STATE_PULLING", "STATE_STARTING", "STATE_RUNNING"]);
        }
        assert!(!Paused.is_active());
        assert_eq!(Paused.intent(), Paused);
        assert_eq!(Paused.stored_names(), ["STATE_PAUSED"]);
    }

    #[test]
    fn stopping_and_terminal_experiments_cannot_resume() {
        for from in [StoppingCanceled, StoppingKilled, StoppingCompleted, Completed, Canceled, Error, Deleting, Deleted] {
            for action in [Activate, Pause] {
                let err = apply(from, action).unwrap_err();
                assert_eq!(err, IllegalTransition { from, action });
                assert!(err.to_string().contains(from.as_str()), "{err}");
            }
        }
    }

    #[test]
    fn stops_escalate_but_never_downgrade() {
        assert_eq!(apply(Active, Cancel), Ok(StoppingCanceled));
        assert_eq!(apply(Paused, Kill), Ok(StoppingKilled));
        assert_eq!(apply(StoppingCompleted, Cancel), Ok(StoppingCanceled));
        assert_eq!(apply(StoppingCanceled, Kill), Ok(StoppingKilled));
        assert_eq!(apply(StoppingKilled, Cancel), Ok(StoppingKilled));
        assert_eq!(apply(StoppingError, Cancel), Ok(StoppingError));
        assert_eq!(apply(StoppingError, Kill), Ok(StoppingError));
    }

    #[test]
    fn stopping_an_ended_experiment_is_a_no_op_but_a_deleting_one_is_refused() {
        for from in [Completed, Canceled, Error] {
            assert_eq!(apply(from, Cancel), Ok(from));
            assert_eq!(apply(from, Kill), Ok(from));
        }
        assert!(apply(Deleting, Kill).is_err());
        assert!(apply(Deleted, Cancel).is_err());
    }

    #[test]
    fn with_no_running_trials_a_stop_settles_at_once() {
        assert_eq!(transition(Active, Cancel, 0), Ok(Canceled));
        assert_eq!(transition(Paused, Kill, 0), Ok(Canceled));
        assert_eq!(transition(Active, Cancel, 2), Ok(StoppingCanceled));
        assert_eq!(settle(StoppingCompleted, 0), Completed);
        assert_eq!(settle(StoppingError, 0), Error);
        assert_eq!(settle(StoppingKilled, 1), StoppingKilled);
        assert_eq!(settle(Active, 0), Active);
    }

    #[test]
    fn terminal_states_are_the_archivable_ones() {
        let terminal: Vec<_> = ExperimentState::ALL.iter().copied().filter(|s| s.is_terminal()).collect();
        assert_eq!(terminal, [Completed, Canceled, Error, DeleteFailed]);
    }
}
