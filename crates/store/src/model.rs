//! Plain records the store reads and writes. No wire formats here: the master maps these to API
//! types.

use chrono::{DateTime, Utc};

#[derive(Clone, Debug, PartialEq, sqlx::FromRow)]
pub struct UserRecord {
    pub id: i32,
    pub username: String,
    pub display_name: String,
    pub admin: bool,
    pub active: bool,
    pub remote: bool,
    /// PHC string of the server-side hash; `None` = password-less (blank password).
    pub password_hash: Option<String>,
    pub modified_at: DateTime<Utc>,
    pub last_auth_at: Option<DateTime<Utc>>,
    /// The Unix account on agents this user's tasks run as (upstream's agent user group); the
    /// four columns are written together, so either all are set or none.
    pub agent_uid: Option<i32>,
    pub agent_gid: Option<i32>,
    pub agent_user: Option<String>,
    pub agent_group: Option<String>,
}

impl UserRecord {
    /// The linked agent account, when the user has one.
    pub fn agent_user_group(&self) -> Option<AgentUserGroup> {
        Some(AgentUserGroup {
            uid: self.agent_uid?,
            gid: self.agent_gid?,
            user: self.agent_user.clone()?,
            group: self.agent_group.clone()?,
        })
    }
}

/// A Unix user and primary group on the agents (`det user link-with-agent-user`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentUserGroup {
    pub uid: i32,
    pub gid: i32,
    pub user: String,
    pub group: String,
}

/// Whose workspace a task's processes run in (`Store::task_user_groups`).
#[derive(Clone, Copy, Debug)]
pub enum TaskWorkspaceOf<'a> {
    /// A trial's: its experiment's project's workspace.
    Experiment(i32),
    /// A command, notebook, shell, TensorBoard or generic task's, by task id.
    CommandTask(&'a str),
}

/// The agent user groups that decide a task's Unix account, first usable wins.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskUserGroups {
    pub workspace: Option<AgentUserGroup>,
    pub owner: Option<AgentUserGroup>,
}

#[derive(Clone, Debug)]
pub struct NewUser {
    pub username: String,
    pub display_name: String,
    pub admin: bool,
    pub active: bool,
    pub remote: bool,
    pub password_hash: Option<String>,
    pub now: DateTime<Utc>,
}

/// Fields to change; `None` leaves a field alone. `password_hash: Some(None)` clears the password.
#[derive(Clone, Debug, Default)]
pub struct UserPatch {
    pub username: Option<String>,
    pub display_name: Option<String>,
    pub admin: Option<bool>,
    pub active: Option<bool>,
    pub remote: Option<bool>,
    pub password_hash: Option<Option<String>>,
    /// Links the user to this agent account (replacing any earlier link).
    pub agent_user_group: Option<AgentUserGroup>,
    pub now: Option<DateTime<Utc>>,
    /// Sessions to end in the same transaction (a password change, a deactivation).
    pub revoke_sessions: Option<RevokeSessions>,
}

/// Which of a user's sessions an update ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RevokeSessions {
    All,
    /// All but this session id (the one that changed its own password).
    AllBut(i64),
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UserSort {
    #[default]
    Id,
    Username,
    DisplayName,
    /// Display name when set, else username.
    Name,
    Admin,
    Active,
    Remote,
    ModifiedAt,
    LastAuthAt,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OrderDirection {
    #[default]
    Asc,
    Desc,
}

#[derive(Clone, Debug, Default)]
pub struct UserFilter {
    pub active: Option<bool>,
    pub admin: Option<bool>,
    /// Case-insensitive substring of username or display name.
    pub name: Option<String>,
    pub sort: UserSort,
    pub order: OrderDirection,
    /// Rows to skip (already resolved to be non-negative).
    pub offset: i64,
    /// Rows to return; `None` = all.
    pub limit: Option<i64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct UserPage {
    pub users: Vec<UserRecord>,
    /// Matching rows before offset/limit.
    pub total: i64,
}

#[derive(Clone, Debug, PartialEq, sqlx::FromRow)]
pub struct SessionRecord {
    pub id: i64,
    pub user_id: i32,
    pub token_hash: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// A session joined with its user: what authenticating a request needs, in one query.
#[derive(Clone, Debug, PartialEq, sqlx::FromRow)]
pub struct AuthenticatedSession {
    pub session_id: i64,
    pub expires_at: DateTime<Utc>,
    #[sqlx(flatten)]
    pub user: UserRecord,
}

#[derive(Clone, Debug)]
pub struct NewSession {
    pub user_id: i32,
    pub token_hash: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}
