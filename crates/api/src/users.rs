//! Users, logins and sessions (`/api/v1/auth/*`, `/api/v1/me`, `/api/v1/users*`).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::pagination::Pagination;
use crate::wire_enum::wire_enum;

/// A user account. Inputs accept the proto field names (snake_case) too.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct User {
    #[serde(default)]
    pub id: i32,
    pub username: String,
    #[serde(default)]
    pub admin: bool,
    #[serde(default = "yes")]
    pub active: bool,
    /// The Unix user and group on agents this user's tasks run as; `null` when not linked
    /// (the tasks then run as the master's `security.default_task_user`).
    #[serde(default, alias = "agent_user_group")]
    pub agent_user_group: Option<AgentUserGroup>,
    #[serde(default, alias = "display_name")]
    pub display_name: String,
    #[serde(default, alias = "modified_at")]
    pub modified_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub remote: bool,
    /// proto3 `optional`: omitted when the user never logged in.
    #[serde(default, alias = "last_auth_at", skip_serializing_if = "Option::is_none")]
    pub last_auth_at: Option<DateTime<Utc>>,
}

fn yes() -> bool {
    true
}

/// upstream `v1AgentUserGroup`: a Unix user and primary group on the agents. Every field is
/// optional on the wire (proto3); linking a user needs all four, which the master checks and
/// names the missing one. Ids are proto `int32`, read wider so an out-of-range one gets a clear
/// error instead of a parse failure.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentUserGroup {
    #[serde(default, alias = "agent_uid")]
    #[schema(value_type = Option<i32>)]
    pub agent_uid: Option<i64>,
    #[serde(default, alias = "agent_gid")]
    #[schema(value_type = Option<i32>)]
    pub agent_gid: Option<i64>,
    #[serde(default, alias = "agent_user")]
    pub agent_user: Option<String>,
    #[serde(default, alias = "agent_group")]
    pub agent_group: Option<String>,
}

/// `POST /api/v1/auth/login`. Upstream clients send `sha512(salt + password)` with
/// `isHashed: true`; plain passwords (`isHashed` absent or false) are accepted too.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoginRequest {
    pub username: String,
    #[serde(default)]
    pub password: String,
    #[serde(default, alias = "is_hashed")]
    pub is_hashed: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct LoginResponse {
    /// Opaque bearer token for `Authorization: Bearer <token>`.
    pub token: String,
    pub user: User,
}

/// `GET /api/v1/me`, `GET /api/v1/auth/user`, `GET /api/v1/users/{id}`, by-username, PATCH.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct UserResponse {
    pub user: User,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct GetUsersResponse {
    pub users: Vec<User>,
    pub pagination: Pagination,
}

/// `POST /api/v1/users`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostUserRequest {
    pub user: Option<User>,
    #[serde(default)]
    pub password: Option<String>,
    #[serde(default, alias = "is_hashed")]
    pub is_hashed: bool,
}

/// `PATCH /api/v1/users/{userId}`: every field optional; absent fields are left alone.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PatchUser {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    #[serde(default, alias = "display_name", skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    #[serde(default, alias = "is_hashed", skip_serializing_if = "Option::is_none")]
    pub is_hashed: Option<bool>,
    /// Links the user to a Unix account on the agents (admins only; all four fields).
    #[serde(default, alias = "agent_user_group", skip_serializing_if = "Option::is_none")]
    pub agent_user_group: Option<AgentUserGroup>,
}

wire_enum! {
    /// Sort keys of `GET /api/v1/users` (`sortBy`).
    pub enum UserSortBy {
        Unspecified = "SORT_BY_UNSPECIFIED",
        DisplayName = "SORT_BY_DISPLAY_NAME",
        UserName = "SORT_BY_USER_NAME",
        Admin = "SORT_BY_ADMIN",
        Active = "SORT_BY_ACTIVE",
        ModifiedTime = "SORT_BY_MODIFIED_TIME",
        Name = "SORT_BY_NAME",
        LastAuthTime = "SORT_BY_LAST_AUTH_TIME",
        Remote = "SORT_BY_REMOTE",
    }
}

// wire_enum! declares the enum, so `#[derive(Default)]` cannot be added to it.
#[allow(clippy::derivable_impls)]
impl Default for UserSortBy {
    fn default() -> Self {
        UserSortBy::Unspecified
    }
}

wire_enum! {
    /// `orderBy` of list calls.
    pub enum OrderBy {
        Unspecified = "ORDER_BY_UNSPECIFIED",
        Asc = "ORDER_BY_ASC",
        Desc = "ORDER_BY_DESC",
    }
}

#[allow(clippy::derivable_impls)]
impl Default for OrderBy {
    fn default() -> Self {
        OrderBy::Unspecified
    }
}

/// Query parameters of `GET /api/v1/users`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct GetUsersQuery {
    #[serde(default, alias = "sort_by")]
    pub sort_by: Option<UserSortBy>,
    #[serde(default, alias = "order_by")]
    pub order_by: Option<OrderBy>,
    #[serde(default)]
    pub offset: Option<i32>,
    #[serde(default)]
    pub limit: Option<i32>,
    /// Substring of the username or display name.
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub active: Option<bool>,
    #[serde(default)]
    pub admin: Option<bool>,
}
