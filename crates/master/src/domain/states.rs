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
    }
}

impl TrialState {
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
}
