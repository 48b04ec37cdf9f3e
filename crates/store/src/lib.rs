//! Persistence for the master, behind one trait.
//!
//! [`Store`] is the only way the master touches durable state. [`SqlStore`] implements it for
//! embedded SQLite (the zero-set-up default) and for PostgreSQL: queries are written once in the
//! SQL both dialects share and run against whichever pool is configured; the schema lives in
//! per-dialect migration folders applied at start-up. `tests/conformance.rs` runs the same suite
//! against both backends.
//!
//! Invariants: no SQL text or driver error ever leaves this crate except inside
//! [`StoreError::Backend`], whose `Display` is deliberately generic; callers map it to a 500
//! without showing details to clients.

mod error;
mod model;
mod sql;

pub use error::{StoreError, StoreResult};
pub use model::{
    AuthenticatedSession, NewSession, NewUser, OrderDirection, SessionRecord, UserFilter, UserPage, UserPatch, UserRecord, UserSort,
};
pub use sql::{PostgresOptions, SqlStore};

use async_trait::async_trait;
use chrono::{DateTime, Utc};

/// Everything the master persists. Implementations must be safe to share across tasks.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Which backend this is, for logs ("sqlite" or "postgres").
    fn backend(&self) -> &'static str;

    /// The cluster's identity, created on first start and stable afterwards.
    async fn cluster_id(&self) -> StoreResult<String>;

    // ---- users ----

    /// Creates a user; `StoreError::Conflict` when the username is taken.
    async fn create_user(&self, user: NewUser) -> StoreResult<UserRecord>;
    /// Creates the user unless one with that name exists; returns whether it was created.
    async fn create_user_if_absent(&self, user: NewUser) -> StoreResult<bool>;
    async fn user_by_id(&self, id: i32) -> StoreResult<UserRecord>;
    async fn user_by_name(&self, username: &str) -> StoreResult<UserRecord>;
    async fn list_users(&self, filter: &UserFilter) -> StoreResult<UserPage>;
    /// Applies the fields set in `patch`; `Conflict` on a taken new username.
    async fn update_user(&self, id: i32, patch: &UserPatch) -> StoreResult<UserRecord>;
    async fn record_login(&self, user_id: i32, at: DateTime<Utc>) -> StoreResult<()>;

    // ---- sessions ----

    async fn create_session(&self, session: NewSession) -> StoreResult<SessionRecord>;
    /// The session with this token hash and its user, if any (expired ones included: the caller
    /// decides).
    async fn session_by_token_hash(&self, token_hash: &str) -> StoreResult<Option<AuthenticatedSession>>;
    async fn delete_session(&self, id: i64) -> StoreResult<()>;
    /// Removes sessions that expired before `now`; returns how many.
    async fn delete_expired_sessions(&self, now: DateTime<Utc>) -> StoreResult<u64>;
}

/// The current time at the precision both backends keep (microseconds), so a value written and
/// read back compares equal.
pub fn db_now() -> DateTime<Utc> {
    use chrono::{DurationRound, TimeDelta};
    let now = Utc::now();
    now.duration_trunc(TimeDelta::microseconds(1)).unwrap_or(now)
}
