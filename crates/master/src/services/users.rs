//! User accounts and who may change what.
//!
//! Rules (as upstream's open-source edition): any user may read users; only admins create users
//! or change another user's account; a non-admin may change only their own display name and
//! password. Only admins link a user to an agent user (the Unix account their tasks run as).

use std::sync::Arc;

use resolute_api::users::AgentUserGroup as WireAgentUserGroup;
use resolute_store::{
    AgentUserGroup, OrderDirection, RevokeSessions, Store, UserFilter, UserPage, UserPatch, UserRecord, UserSort, db_now,
};

use crate::auth::password;
use crate::error::{ApiError, ApiResult};
use crate::services::{Principal, SessionCache};

const MAX_USERNAME_LEN: usize = 128;
const MAX_DISPLAY_NAME_LEN: usize = 256;

#[derive(Clone)]
pub struct UserService {
    store: Arc<dyn Store>,
    sessions: Arc<SessionCache>,
}

/// A validated-on-use request to create a user.
pub struct NewUserRequest {
    pub username: String,
    pub display_name: String,
    pub admin: bool,
    pub active: bool,
    pub remote: bool,
    /// The client hash of the password (blank = no password).
    pub client_hash: String,
    /// `user.agentUserGroup`, linked right after the user is created.
    pub agent_user_group: Option<WireAgentUserGroup>,
}

/// A change to a user; the password is already normalised to its client hash.
#[derive(Default)]
pub struct UserChanges {
    pub username: Option<String>,
    pub display_name: Option<String>,
    pub admin: Option<bool>,
    pub active: Option<bool>,
    pub remote: Option<bool>,
    pub client_hash: Option<String>,
    /// `agentUserGroup`: link the user to this agent user (admins only).
    pub agent_user_group: Option<WireAgentUserGroup>,
}

impl UserService {
    pub fn new(store: Arc<dyn Store>, sessions: Arc<SessionCache>) -> Self {
        UserService { store, sessions }
    }

    /// Creates `admin` and `determined` on a fresh database; existing users are left alone.
    pub async fn ensure_default_users(&self, initial_password: Option<&str>) -> ApiResult<()> {
        let hash = password::hash_for_storage(password::client_hash(initial_password.unwrap_or(""))).await;
        for (username, admin) in [("admin", true), ("determined", false)] {
            let created = self
                .store
                .create_user_if_absent(resolute_store::NewUser {
                    username: username.to_owned(),
                    display_name: String::new(),
                    admin,
                    active: true,
                    remote: false,
                    password_hash: hash.clone(),
                    now: db_now(),
                })
                .await?;
            if created {
                tracing::info!(username, "created default user");
            }
        }
        Ok(())
    }

    pub async fn create(&self, caller: &Principal, req: NewUserRequest) -> ApiResult<UserRecord> {
        require_admin(caller, "create users")?;
        validate_username(&req.username)?;
        let display_name = clean_display_name(&req.display_name, req.admin, &req.username)?;
        if req.remote && !req.client_hash.is_empty() {
            return Err(ApiError::invalid("password: remote users cannot have a password"));
        }
        let link = req.agent_user_group.as_ref().map(|g| validate_agent_user_group(g, "user.agentUserGroup")).transpose()?;
        let password_hash = password::hash_for_storage(req.client_hash).await;
        let user = resolute_store::NewUser {
            username: req.username,
            display_name,
            admin: req.admin,
            active: req.active,
            remote: req.remote,
            password_hash,
            now: db_now(),
        };
        let created = self.store.create_user(user).await?;
        match link {
            Some(link) => {
                let patch = UserPatch { agent_user_group: Some(link), ..Default::default() };
                Ok(self.store.update_user(created.id, &patch).await?)
            }
            None => Ok(created),
        }
    }

    pub async fn get(&self, id: i32) -> ApiResult<UserRecord> {
        Ok(self.store.user_by_id(id).await?)
    }

    pub async fn get_by_name(&self, username: &str) -> ApiResult<UserRecord> {
        Ok(self.store.user_by_name(username).await?)
    }

    pub async fn list(&self, filter: UserListQuery) -> ApiResult<UserPage> {
        let mut store_filter = UserFilter {
            active: filter.active,
            admin: filter.admin,
            name: filter.name.filter(|n| !n.is_empty()),
            sort: filter.sort,
            order: filter.order,
            offset: 0,
            limit: None,
        };
        let offset = if filter.offset < 0 {
            // Negative offsets count from the end, so the total is needed first.
            let total = self.store.list_users(&UserFilter { limit: Some(0), ..store_filter.clone() }).await?.total;
            (total + filter.offset).max(0)
        } else {
            filter.offset
        };
        store_filter.offset = offset;
        // Upstream's RBAC helpers read the users unpaged.
        store_filter.limit = Some(super::paging::page_limit(filter.limit, super::paging::MAX_UNPAGED_LIST));
        Ok(self.store.list_users(&store_filter).await?)
    }

    pub async fn update(&self, caller: &Principal, id: i32, changes: UserChanges) -> ApiResult<UserRecord> {
        let is_self = caller.user.id == id;
        if changes.agent_user_group.is_some() && !caller.user.admin {
            return Err(ApiError::forbidden("only admins can link users to agent users (agentUserGroup)"));
        }
        let link = changes.agent_user_group.as_ref().map(|g| validate_agent_user_group(g, "agentUserGroup")).transpose()?;
        let admin_only = changes.username.is_some() || changes.admin.is_some() || changes.active.is_some() || changes.remote.is_some();
        if !caller.user.admin && (!is_self || admin_only) {
            return Err(ApiError::forbidden(if is_self {
                "only admins can change username, admin, active or remote"
            } else {
                "only admins can change other users"
            }));
        }
        if let Some(name) = &changes.username {
            validate_username(name)?;
        }
        let target = self.store.user_by_id(id).await?;
        let display_name = match &changes.display_name {
            Some(name) if *name != target.display_name => {
                let cleaned = clean_display_name(name, target.admin, &target.username)?;
                self.refuse_similar_display_name(&cleaned, target.id).await?;
                Some(cleaned)
            }
            _ => None,
        };
        let becomes_remote = changes.remote.unwrap_or(target.remote);
        if becomes_remote && changes.client_hash.as_deref().is_some_and(|h| !h.is_empty()) {
            return Err(ApiError::invalid("password: remote users cannot have a password"));
        }
        // A new password or a deactivation ends the user's other sessions: whoever held an old
        // token (a leaked one, a shared laptop) is out. The session that changed its own
        // password stays (upstream's CLI logs in again anyway).
        let revoke_sessions = if changes.active == Some(false) {
            Some(RevokeSessions::All)
        } else if changes.client_hash.is_some() || changes.remote == Some(true) {
            Some(if is_self { RevokeSessions::AllBut(caller.session_id) } else { RevokeSessions::All })
        } else {
            None
        };
        let password_hash = match changes.client_hash {
            Some(hash) => Some(password::hash_for_storage(hash).await),
            // Turning a user remote removes their password, as upstream does.
            None if changes.remote == Some(true) => Some(None),
            None => None,
        };
        let patch = UserPatch {
            username: changes.username,
            display_name,
            admin: changes.admin,
            active: changes.active,
            remote: changes.remote,
            password_hash,
            agent_user_group: link,
            now: Some(db_now()),
            revoke_sessions,
        };
        // The store refuses to demote or deactivate the last active admin (one transaction, so
        // two admins demoting each other at once cannot both succeed).
        let updated = self.store.update_user(id, &patch).await?;
        // Cached sessions carry the old account (e.g. still active, still admin).
        self.sessions.remove_user(id);
        Ok(updated)
    }
}

impl UserService {
    /// Upstream refuses a display name that another user already has as username or display
    /// name, ignoring case, so people cannot pass for each other in listings.
    async fn refuse_similar_display_name(&self, name: &str, target_id: i32) -> ApiResult<()> {
        if name.is_empty() {
            return Ok(());
        }
        let lower = name.to_lowercase();
        // The store's name filter is a case-insensitive substring match: a superset to check.
        let filter = UserFilter { name: Some(name.to_owned()), limit: Some(super::paging::MAX_UNPAGED_LIST), ..UserFilter::default() };
        let page = self.store.list_users(&filter).await?;
        let clash =
            page.users.iter().any(|u| u.id != target_id && (u.username.to_lowercase() == lower || u.display_name.to_lowercase() == lower));
        if clash {
            return Err(ApiError::invalid(format!(
                "displayName: can not change display name to {name}: found a similar username or display name"
            )));
        }
        Ok(())
    }
}

/// `GET /api/v1/users` after parsing.
pub struct UserListQuery {
    pub active: Option<bool>,
    pub admin: Option<bool>,
    pub name: Option<String>,
    pub sort: UserSort,
    pub order: OrderDirection,
    pub offset: i64,
    pub limit: i64,
}

fn require_admin(caller: &Principal, action: &str) -> ApiResult<()> {
    if caller.user.admin { Ok(()) } else { Err(ApiError::forbidden(format!("only admins can {action}"))) }
}

/// Usernames appear in URLs (`/users/{name}/by-username`) and CLI tables: no whitespace, no
/// control characters, no slashes.
pub fn validate_username(name: &str) -> ApiResult<()> {
    let problem = if name.is_empty() {
        Some("must not be empty".to_owned())
    } else if name.chars().count() > MAX_USERNAME_LEN {
        Some(format!("must be at most {MAX_USERNAME_LEN} characters"))
    } else if name.chars().any(|c| c.is_whitespace() || c.is_control() || c == '/') {
        Some("must not contain whitespace, control characters or '/'".to_owned())
    } else {
        None
    };
    match problem {
        Some(p) => Err(ApiError::invalid(format!("username {name:?} is invalid: {p}"))),
        None => Ok(()),
    }
}

/// Upstream's display-name rules: surrounding whitespace trimmed; printable ASCII only (hidden
/// whitespace and look-alike letters could impersonate someone); only an admin may be called
/// "admin" and only `determined` "determined" (ignoring case). Empty clears the name.
fn clean_display_name(name: &str, target_admin: bool, target_username: &str) -> ApiResult<String> {
    let cleaned = name.trim();
    if cleaned.chars().count() > MAX_DISPLAY_NAME_LEN {
        return Err(ApiError::invalid(format!("displayName must be at most {MAX_DISPLAY_NAME_LEN} characters")));
    }
    if cleaned.chars().any(|c| !(c.is_ascii_graphic() || c == ' ')) {
        return Err(ApiError::invalid("displayName: display name and username cannot contain non-ASCII characters or control characters"));
    }
    let lower = cleaned.to_lowercase();
    if !target_admin && lower == "admin" {
        return Err(ApiError::invalid("displayName: non-admin user cannot be renamed 'admin'"));
    }
    if target_username != "determined" && lower == "determined" {
        return Err(ApiError::invalid("displayName: user cannot be renamed 'determined'"));
    }
    Ok(cleaned.to_owned())
}

/// Linux's longest user and group names.
const MAX_AGENT_NAME_LEN: usize = 32;

/// All four fields of an agent user group, ids in proto `int32`'s non-negative range, names
/// that can be Unix account names. `field` is the group's path in the request.
pub fn validate_agent_user_group(group: &WireAgentUserGroup, field: &str) -> ApiResult<AgentUserGroup> {
    let id = |name: &str, value: Option<i64>| -> ApiResult<i32> {
        let value = value.ok_or_else(|| ApiError::invalid(format!("{field}.{name} is required to link an agent user")))?;
        i32::try_from(value)
            .ok()
            .filter(|v| *v >= 0)
            .ok_or_else(|| ApiError::invalid(format!("{field}.{name} must be between 0 and {}, found {value}", i32::MAX)))
    };
    let name = |name: &str, value: &Option<String>| -> ApiResult<String> {
        let value = value.as_deref().ok_or_else(|| ApiError::invalid(format!("{field}.{name} is required to link an agent user")))?;
        let problem = if value.is_empty() {
            Some("must not be empty".to_owned())
        } else if value.chars().count() > MAX_AGENT_NAME_LEN {
            Some(format!("must be at most {MAX_AGENT_NAME_LEN} characters"))
        } else if value.chars().any(|c| c.is_whitespace() || c.is_control() || c == '/' || c == ':') {
            Some("must not contain whitespace, control characters, '/' or ':'".to_owned())
        } else {
            None
        };
        match problem {
            Some(p) => Err(ApiError::invalid(format!("{field}.{name} {value:?} is invalid: {p}"))),
            None => Ok(value.to_owned()),
        }
    };
    Ok(AgentUserGroup {
        uid: id("agentUid", group.agent_uid)?,
        gid: id("agentGid", group.agent_gid)?,
        user: name("agentUser", &group.agent_user)?,
        group: name("agentGroup", &group.agent_group)?,
    })
}
