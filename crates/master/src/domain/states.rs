//! Lifecycle states of trials, allocations and checkpoints, with their upstream wire names (which
//! are also what the store keeps).

use std::fmt;

/// Declares a state enum with its wire names: `as_str`, `parse`, `ALL` and `Display`.
macro_rules! wire_states {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $wire:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $wire),+ }
            }

            pub fn parse(name: &str) -> Option<$name> {
                $name::ALL.iter().copied().find(|s| s.as_str() == name)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

wire_states! {
    /// A trial's stored state (upstream `trialv1.State`, without the computed display states).
    TrialState {
        Active => "STATE_ACTIVE",
        Paused => "STATE_PAUSED",
        StoppingCompleted => "STATE_STOPPING_COMPLETED",
        StoppingCanceled => "STATE_STOPPING_CANCELED",
        StoppingKilled => "STATE_STOPPING_KILLED",
        StoppingError => "STATE_STOPPING_ERROR",
        Completed => "STATE_COMPLETED",
        Canceled => "STATE_CANCELED",
        Error => "STATE_ERROR",
        Queued => "STATE_QUEUED",
        Pulling => "STATE_PULLING",
        Starting => "STATE_STARTING",
        Running => "STATE_RUNNING",
    }
}

/// The states upstream counts as "active" for experiments and trials alike: `ACTIVE` and the
/// substates that say where the work stands (waiting for resources, starting, running). Anything
/// an active experiment or trial may do (pause, kill, be searched), these may do.
pub const ACTIVE_STATE_NAMES: [&str; 5] = ["STATE_ACTIVE", "STATE_QUEUED", "STATE_PULLING", "STATE_STARTING", "STATE_RUNNING"];

/// Whether a stored experiment or trial state name is one of [`ACTIVE_STATE_NAMES`].
pub fn is_active_state_name(name: &str) -> bool {
    ACTIVE_STATE_NAMES.contains(&name)
}

/// A state list filter with `STATE_ACTIVE` widened to every active substate, so a script asking
/// for active experiments or trials still finds the queued and running ones.
pub fn widen_active_filter(states: &mut Vec<String>) {
    if states.iter().any(|s| s == "STATE_ACTIVE") {
        for name in ACTIVE_STATE_NAMES {
            if !states.iter().any(|s| s == name) {
                states.push(name.to_owned());
            }
        }
    }
}

impl TrialState {
    /// `ACTIVE` or one of its substates (queued, pulling, starting, running).
    pub fn is_active(self) -> bool {
        is_active_state_name(self.as_str())
    }

    /// The states a trial never leaves.
    pub const TERMINAL: [TrialState; 3] = [TrialState::Completed, TrialState::Canceled, TrialState::Error];

    pub fn is_terminal(self) -> bool {
        TrialState::TERMINAL.contains(&self)
    }

    /// Whether a stored state name is terminal (unknown names are not).
    pub fn is_terminal_name(name: &str) -> bool {
        TrialState::parse(name).is_some_and(TrialState::is_terminal)
    }
}

wire_states! {
    /// An allocation's state (upstream `taskv1.State`).
    AllocationState {
        Queued => "STATE_QUEUED",
        Pulling => "STATE_PULLING",
        Starting => "STATE_STARTING",
        Running => "STATE_RUNNING",
        Terminating => "STATE_TERMINATING",
        Terminated => "STATE_TERMINATED",
        Waiting => "STATE_WAITING",
    }
}

wire_states! {
    /// A checkpoint's state (upstream `checkpointv1.State`).
    CheckpointState {
        Unspecified => "STATE_UNSPECIFIED",
        Active => "STATE_ACTIVE",
        Completed => "STATE_COMPLETED",
        Error => "STATE_ERROR",
        Deleted => "STATE_DELETED",
        PartiallyDeleted => "STATE_PARTIALLY_DELETED",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_round_trip() {
        for s in TrialState::ALL {
            assert_eq!(TrialState::parse(s.as_str()), Some(*s));
        }
        for s in AllocationState::ALL {
            assert_eq!(AllocationState::parse(s.as_str()), Some(*s));
        }
        for s in CheckpointState::ALL {
            assert_eq!(CheckpointState::parse(s.as_str()), Some(*s));
        }
        assert_eq!(TrialState::parse("STATE_NOPE"), None);
        assert!(TrialState::is_terminal_name("STATE_ERROR"));
        assert!(!TrialState::is_terminal_name("STATE_PAUSED"));
    }

    #[test]
    fn active_means_active_or_a_substate() {
        let active: Vec<_> = TrialState::ALL.iter().copied().filter(|s| s.is_active()).collect();
        assert_eq!(active, [TrialState::Active, TrialState::Queued, TrialState::Pulling, TrialState::Starting, TrialState::Running]);
        let mut filter = vec!["STATE_ACTIVE".to_owned(), "STATE_RUNNING".to_owned()];
        widen_active_filter(&mut filter);
        assert_eq!(filter, ["STATE_ACTIVE", "STATE_RUNNING", "STATE_QUEUED", "STATE_PULLING", "STATE_STARTING"]);
        let mut paused = vec!["STATE_PAUSED".to_owned()];
        widen_active_filter(&mut paused);
        assert_eq!(paused, ["STATE_PAUSED"]);
    }
}
