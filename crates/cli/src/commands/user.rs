//! `det user ...`: accounts, logins and passwords.

use clap::Subcommand;
use resolute_api::master::GetMasterResponse;
use resolute_api::users::{AgentUserGroup, GetUsersResponse, PatchUser, PostUserRequest, User, UserResponse};
use serde_json::Value;

use super::Globals;
use crate::auth_store::TokenStore;
use crate::client::{Client, path_segment};
use crate::error::CliError;
use crate::password::salt_and_hash;
use crate::say;
use crate::table::{self, Cell};
use crate::{prompt, render, session};

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// list users
    #[command(visible_alias = "ls")]
    List {
        /// List all active and inactive users.
        #[arg(short, long)]
        all: bool,
    },
    /// log in user
    Login {
        /// name of user to log in as
        username: Option<String>,
    },
    /// change username for user (DEPRECATED: use 'det user edit <target_user> --username ...')
    Rename {
        /// name of user whose username should be changed
        target_user: String,
        /// new username for target_user
        new_username: String,
    },
    /// change password for user
    ChangePassword {
        /// name of user to change password of
        target_user: Option<String>,
    },
    /// log out user
    Logout {
        /// log out of all cached sessions for the current master
        #[arg(short, long)]
        all: bool,
    },
    /// activate user (DEPRECATED: use 'det user edit <target_user> --active true')
    Activate {
        /// name of user to activate
        username: String,
    },
    /// deactivate user (DEPRECATED: use 'det user edit <target_user> --active false')
    Deactivate {
        /// name of user to deactivate
        username: String,
    },
    /// create user
    Create {
        /// name of new user
        username: String,
        /// give new user admin rights
        #[arg(long)]
        admin: bool,
        /// password of new user
        #[arg(long)]
        password: Option<String>,
        /// disallow using passwords, user must use the configured external IdP
        #[arg(long)]
        remote: bool,
    },
    /// print the active user
    Whoami,
    /// edit user fields
    Edit {
        /// name of user that should be edited
        target_user: String,
        /// new display name for target_user
        #[arg(long)]
        display_name: Option<String>,
        /// new username for target_user
        #[arg(long)]
        username: Option<String>,
        /// set user as remote
        #[arg(long, value_name = "(true|false)", value_parser = string_to_bool)]
        remote: Option<bool>,
        /// set user as active/inactive
        #[arg(long, value_name = "(true|false)", value_parser = string_to_bool)]
        active: Option<bool>,
        /// grant/remove user admin permissions
        #[arg(long, value_name = "(true|false)", value_parser = string_to_bool)]
        admin: Option<bool>,
    },
    /// link a user with UID/GID on agent
    LinkWithAgentUser {
        /// name of user to link with an agent user
        det_username: String,
        /// UID on the agent to run tasks as
        #[arg(long, allow_negative_numbers = true)]
        agent_uid: Option<i64>,
        /// user on the agent to run tasks as
        #[arg(long)]
        agent_user: Option<String>,
        /// GID on agent to run tasks as
        #[arg(long, allow_negative_numbers = true)]
        agent_gid: Option<i64>,
        /// group on the agent to run tasks as
        #[arg(long)]
        agent_group: Option<String>,
    },
}

/// Upstream's `util.strtobool`: the usual false words, anything else non-empty is true.
fn string_to_bool(s: &str) -> Result<bool, String> {
    let falsy = ["n", "no", "f", "false", "off", "0"];
    Ok(!s.is_empty() && !falsy.contains(&s.to_lowercase().as_str()))
}

/// `det user` alone lists users, as upstream's `is_default` subcommand does.
pub fn run(g: &Globals, cmd: Option<UserCommand>) -> Result<(), CliError> {
    use UserCommand::*;
    match cmd.unwrap_or(List { all: false }) {
        List { all } => list(g, all),
        Login { username } => login(g, username),
        Rename { target_user, new_username } => {
            deprecated("Please use 'det user edit <target_user> --username <username>'");
            let patch = PatchUser { username: Some(new_username), ..PatchUser::default() };
            patch_by_name(g, &target_user, &patch)
        }
        ChangePassword { target_user } => change_password(g, target_user),
        Logout { all } => logout(g, all),
        Activate { username } => {
            deprecated("Please use 'det user edit <target_user> --active true'");
            patch_by_name(g, &username, &PatchUser { active: Some(true), ..PatchUser::default() })
        }
        Deactivate { username } => {
            deprecated("Please use 'det user edit <target_user> --active false'");
            patch_by_name(g, &username, &PatchUser { active: Some(false), ..PatchUser::default() })
        }
        Create { username, admin, password, remote } => create(g, username, admin, password, remote),
        Whoami => {
            let s = session::login_with_cache(&g.master, g.user.as_deref())?;
            let me: UserResponse = s.client.get("api/v1/me")?;
            say!("You are logged in as user '{}'", me.user.username);
            Ok(())
        }
        Edit { target_user, display_name, username, remote, active, admin } => {
            let patch = PatchUser { display_name, username, remote, active, admin, ..PatchUser::default() };
            edit(g, &target_user, patch)
        }
        LinkWithAgentUser { det_username, agent_uid, agent_user, agent_gid, agent_group } => {
            // Upstream's order and wording; the master checks the values.
            let missing = [
                ("agent-uid", agent_uid.is_none()),
                ("agent-user", agent_user.is_none()),
                ("agent-gid", agent_gid.is_none()),
                ("agent-group", agent_group.is_none()),
            ]
            .into_iter()
            .find(|(_, missing)| *missing);
            if let Some((flag, _)) = missing {
                return Err(CliError::msg(format!("{flag} argument required")));
            }
            let group = AgentUserGroup { agent_uid, agent_gid, agent_user, agent_group };
            patch_by_name(g, &det_username, &PatchUser { agent_user_group: Some(group), ..PatchUser::default() })
        }
    }
}

fn deprecated(message: &str) {
    eprintln!("DEPRECATED: {message}");
}

fn list(g: &Globals, all: bool) -> Result<(), CliError> {
    let s = session::login_with_cache(&g.master, g.user.as_deref())?;
    let master: GetMasterResponse = s.client.get("api/v1/master")?;
    let users = fetch_users(&s.client, !all)?;
    if g.json {
        say!("{}", render::json(&users));
        return Ok(());
    }
    // With RBAC the admin flag means nothing, so upstream drops that column.
    let show_admin = !master.rbac_enabled;
    let mut headers = vec!["User Id", "Username", "Display Name", "Admin", "Active", "Remote"];
    headers.extend(["Agent Uid", "Agent Gid", "Agent User", "Agent Group"]);
    if !show_admin {
        headers.retain(|h| *h != "Admin");
    }
    let rows: Vec<Vec<Cell>> = users
        .iter()
        .map(|u| {
            let mut row = vec![i64::from(u.id).into(), u.username.as_str().into()];
            row.push(u.display_name.as_str().into());
            if show_admin {
                row.push(u.admin.into());
            }
            row.extend([u.active.into(), u.remote.into()]);
            for key in ["agentUid", "agentGid", "agentUser", "agentGroup"] {
                row.push(agent_field(u, key));
            }
            row
        })
        .collect();
    say!("{}", table::render(&headers, &rows));
    Ok(())
}

/// One field of `agentUserGroup`, `N/A` when unset.
fn agent_field(user: &User, camel: &str) -> Cell {
    let Some(group) = &user.agent_user_group else { return Cell::Str("N/A".to_owned()) };
    let (id, name) = match camel {
        "agentUid" => (group.agent_uid, None),
        "agentGid" => (group.agent_gid, None),
        "agentUser" => (None, group.agent_user.clone()),
        _ => (None, group.agent_group.clone()),
    };
    match (id, name) {
        (Some(id), _) => Cell::Int(id),
        (_, Some(name)) => Cell::Str(name),
        _ => Cell::Str("N/A".to_owned()),
    }
}

/// Follows `pagination` until every page is read (upstream's `read_paginated`).
fn fetch_users(client: &Client, active_only: bool) -> Result<Vec<User>, CliError> {
    let mut users = Vec::new();
    let mut offset = 0;
    loop {
        let mut path = format!("api/v1/users?offset={offset}");
        if active_only {
            path.push_str("&active=true");
        }
        let page: GetUsersResponse = client.get(&path)?;
        users.extend(page.users);
        let p = page.pagination;
        // The progress check keeps a misbehaving master from looping us forever.
        if p.end_index >= p.total || p.end_index <= offset {
            return Ok(users);
        }
        offset = p.end_index;
    }
}

fn user_by_name(client: &Client, username: &str) -> Result<User, CliError> {
    let path = format!("api/v1/users/{}/by-username", path_segment(username));
    Ok(client.get::<UserResponse>(&path)?.user)
}

fn patch_user(client: &Client, id: i32, patch: &PatchUser) -> Result<(), CliError> {
    client.patch::<_, Value>(&format!("api/v1/users/{id}"), patch)?;
    Ok(())
}

fn patch_by_name(g: &Globals, username: &str, patch: &PatchUser) -> Result<(), CliError> {
    let s = session::login_with_cache(&g.master, g.user.as_deref())?;
    let user = user_by_name(&s.client, username)?;
    patch_user(&s.client, user.id, patch)
}

fn edit(g: &Globals, target_user: &str, patch: PatchUser) -> Result<(), CliError> {
    // Upstream's order of reporting.
    let changes: Vec<&str> = [
        ("Display Name", patch.display_name.is_some()),
        ("Remote", patch.remote.is_some()),
        ("Active", patch.active.is_some()),
        ("Username", patch.username.is_some()),
        ("Admin", patch.admin.is_some()),
    ]
    .into_iter()
    .filter_map(|(name, set)| set.then_some(name))
    .collect();
    if changes.is_empty() {
        return Err(CliError::msg("No field provided. Use 'det user edit -h' for usage."));
    }
    patch_by_name(g, target_user, &patch)?;
    say!("Changes made to the following fields: {}", changes.join(", "));
    Ok(())
}

fn login(g: &Globals, username: Option<String>) -> Result<(), CliError> {
    let username = match username {
        Some(u) => u,
        None => prompt::text("Username: ")?,
    };
    let password = prompt::password(&format!("Password for user '{username}': "))?;
    let resp = session::login(&g.master, &username, &password)?;
    let mut store = TokenStore::open(&g.master)?;
    store.set_token(&username, &resp.token)?;
    store.set_active(&username)?;
    Ok(())
}

fn logout(g: &Globals, all: bool) -> Result<(), CliError> {
    if all {
        session::logout_all(&g.master)?;
        TokenStore::open(&g.master)?.clear_active()?;
        return Ok(());
    }
    if let Some(user) = session::logout(&g.master, g.user.as_deref())? {
        let mut store = TokenStore::open(&g.master)?;
        if store.active_user() == Some(user.as_str()) {
            store.clear_active()?;
        }
    }
    Ok(())
}

fn create(g: &Globals, username: String, admin: bool, password: Option<String>, remote: bool) -> Result<(), CliError> {
    let s = session::login_with_cache(&g.master, g.user.as_deref())?;
    // Remote users authenticate elsewhere and get no password at all. Unlike upstream, an empty
    // password is accepted here, since local clusters run with blank passwords by default.
    let password = match (remote, password.filter(|p| !p.is_empty())) {
        (true, _) => None,
        (false, Some(p)) => Some(p),
        (false, None) => Some(prompt::new_password(&format!("Password for user '{username}': "))?),
    };
    let user = User {
        id: 0,
        username,
        admin,
        active: true,
        agent_user_group: None,
        display_name: String::new(),
        modified_at: None,
        remote,
        last_auth_at: None,
    };
    let req = PostUserRequest { user: Some(user), password: password.map(|p| salt_and_hash(&p)), is_hashed: true };
    s.client.post::<_, Value>("api/v1/users", &req)?;
    Ok(())
}

fn change_password(g: &Globals, target_user: Option<String>) -> Result<(), CliError> {
    let s = session::login_with_cache(&g.master, g.user.as_deref())?;
    let own = target_user.is_none();
    let username = target_user.or_else(|| g.user.clone()).unwrap_or_else(|| s.username.clone());
    let password = prompt::new_password(&format!("New password for user '{username}': "))?;
    let user = user_by_name(&s.client, &username)?;
    let patch = PatchUser { password: Some(salt_and_hash(&password)), is_hashed: Some(true), ..PatchUser::default() };
    patch_user(&s.client, user.id, &patch)?;
    // As upstream: after changing one's own password, log in again with it so the cached token
    // matches the new credentials and the user is made active.
    if own {
        let resp = session::login(&g.master, &username, &password)?;
        let mut store = TokenStore::open(&g.master)?;
        store.set_token(&username, &resp.token)?;
        store.set_active(&username)?;
    }
    Ok(())
}
