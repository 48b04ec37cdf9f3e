//! Credentials: password hashing and session tokens. Pure functions; no store access.

pub mod password;
pub mod token;
