//! Identifiers and small value types: agent, allocation, task and job ids, slot ids, device
//! types and the injected logical clock.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        /// Shared text: a pass clones ids into its scratch view of every slot, so a clone is a
        /// reference count, not an allocation. Equal and ordered by text; a clone is known equal
        /// without reading it (a pass looks its own ids up by the thousand, issue 13).
        #[derive(Clone, Debug, Eq)]
        pub struct $name(Arc<str>);

        impl PartialEq for $name {
            fn eq(&self, other: &Self) -> bool {
                Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
            }
        }

        impl Ord for $name {
            fn cmp(&self, other: &Self) -> std::cmp::Ordering {
                if Arc::ptr_eq(&self.0, &other.0) { std::cmp::Ordering::Equal } else { self.0.cmp(&other.0) }
            }
        }

        impl std::hash::Hash for $name {
            fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
                self.0.hash(state)
            }
        }

        impl PartialOrd for $name {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }

        impl $name {
            pub fn new(id: impl Into<String>) -> Self {
                Self(Arc::from(id.into()))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The address of the shared text: clones of one id have the same, so a pass can
            /// key a hash of ids by it without reading the text (jobs in `PoolState::queue`,
            /// agents in `FreeIndex`). Equal ids made separately have different addresses.
            #[allow(dead_code, reason = "used for job and agent ids only")]
            pub(crate) fn shared_address(&self) -> usize {
                Arc::as_ptr(&self.0).cast::<u8>() as usize
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(id: &str) -> Self {
                Self(Arc::from(id))
            }
        }

        impl From<String> for $name {
            fn from(id: String) -> Self {
                Self(Arc::from(id))
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                String::deserialize(deserializer).map(Self::from)
            }
        }
    };
}

string_id!(
    /// An agent's configured id (upstream default: the host name).
    AgentId
);
string_id!(
    /// One allocation of a task, upstream `"<task_id>.<n>"`; the unit that is scheduled.
    AllocationId
);
string_id!(
    /// The task an allocation belongs to (a trial, a command, a notebook, ...).
    TaskId
);
string_id!(
    /// The job (an experiment or a command) an allocation belongs to. The job is the scheduling
    /// group: priority and weight are set per job, as upstream keys its groups by job id.
    JobId
);

/// A slot is one device on an agent, named by its device index (`/agents/<id>/slots/<n>`).
pub type SlotId = u32;

/// A point on the master's logical clock. The scheduler never reads a clock: the master injects
/// submission times and the time of each scheduling pass, so runs replay exactly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LogicalTime(pub u64);

impl fmt::Display for LogicalTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t{}", self.0)
    }
}

/// The kind of device behind a slot, as agents report it (`cpu`, `cuda`, `rocm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceType {
    Cpu,
    Cuda,
    Rocm,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_compare_by_text_whether_shared_or_not() {
        let words = ["job-10.1", "job-2.1", "job-10.1", "", "job-1.10"];
        let ids: Vec<AllocationId> = words.iter().map(|w| AllocationId::new(*w)).collect();
        for (a, x) in ids.iter().zip(words) {
            assert_eq!(a, &a.clone());
            assert_eq!(a.cmp(&a.clone()), std::cmp::Ordering::Equal);
            for (b, y) in ids.iter().zip(words) {
                assert_eq!(a == b, x == y, "{x} == {y}");
                assert_eq!(a.cmp(b), x.cmp(y), "{x} cmp {y}");
                assert_eq!(a.partial_cmp(b), Some(x.cmp(y)));
            }
        }
    }
}
