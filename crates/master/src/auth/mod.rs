//! Credentials: password hashing and session tokens (pure functions), and allocation tokens (issued
//! by the cluster loop, checked by the runtime services, kept in the store as hashes).

pub mod agent_admission;
pub mod allocation_tokens;
pub mod password;
pub mod token;
