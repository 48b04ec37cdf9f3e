//! Logging in and out the way upstream's `authentication` module does, sharing its token cache.

use reqwest::Method;
use resolute_api::users::{LoginRequest, LoginResponse, UserResponse};
use serde_json::Value;

use crate::auth_store::TokenStore;
use crate::client::{Client, ClientError};
use crate::error::CliError;
use crate::password::salt_and_hash;
use crate::prompt;

/// The account upstream falls back to when nobody is logged in; its password starts out blank.
pub const DEFAULT_USER: &str = "determined";

/// An authenticated connection to the master.
#[derive(Debug)]
pub struct Session {
    pub client: Client,
    pub username: String,
}

/// Who to act as, and the password if it is already known. Upstream's
/// `default_load_user_password`: the `-u` flag, then `DET_USER`+`DET_PASS`, then the cache's active
/// user, then the default user with a blank password (`fallback`).
struct Identity {
    user: String,
    password: Option<String>,
    fallback: bool,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

fn resolve_identity(requested_user: Option<&str>, store: &TokenStore) -> Identity {
    let (env_user, env_pass) = (env("DET_USER"), env("DET_PASS"));
    let mut id = if let Some(user) = requested_user {
        Identity { user: user.to_owned(), password: None, fallback: false }
    } else if let (Some(user), Some(pass)) = (&env_user, &env_pass) {
        Identity { user: user.clone(), password: Some(pass.clone()), fallback: false }
    } else if let Some(user) = store.active_user() {
        Identity { user: user.to_owned(), password: None, fallback: false }
    } else {
        Identity { user: DEFAULT_USER.to_owned(), password: Some(String::new()), fallback: true }
    };
    // For scripts: DET_PASS stands in for the prompt, unless DET_USER says it is someone else's.
    if id.password.is_none() && env_user.as_deref().is_none_or(|u| u == id.user) {
        id.password = env_pass;
    }
    id
}

/// `POST /api/v1/auth/login` with the client-side hash; touches no cache.
pub fn login(master: &str, username: &str, password: &str) -> Result<LoginResponse, CliError> {
    let client = Client::new(master)?;
    let req = LoginRequest { username: username.to_owned(), password: salt_and_hash(password), is_hashed: true };
    match client.post("api/v1/auth/login", &req) {
        // The master answers 401 for unknown users and wrong passwords alike (older masters: 403
        // "invalid credentials"); any other 403 comes only after the right password and says why.
        Err(ClientError::Unauthenticated(_)) => Err(CliError::InvalidCredentials),
        Err(ClientError::Forbidden(reason)) if reason.contains("invalid credentials") => Err(CliError::InvalidCredentials),
        Err(ClientError::Forbidden(reason)) => Err(CliError::LoginRefused { user: username.to_owned(), reason }),
        other => Ok(other?),
    }
}

/// Upstream's `login_with_cache`: reuse a cached token when the master still accepts it,
/// otherwise log in and cache the new token (without changing the active user).
pub fn login_with_cache(master: &str, requested_user: Option<&str>) -> Result<Session, CliError> {
    let mut store = TokenStore::open(master)?;
    let id = resolve_identity(requested_user, &store);

    if let Some(token) = store.token(&id.user) {
        let client = Client::new(master)?.with_token(token);
        match client.get::<UserResponse>("api/v1/me") {
            Ok(_) => return Ok(Session { client, username: id.user }),
            // Expired, revoked, or its user gone: forget it and log in afresh. Anything else (a
            // master that is down or failing) is reported rather than costing the user a token.
            Err(ClientError::Unauthenticated(_) | ClientError::Forbidden(_) | ClientError::NotFound(_)) => store.drop_user(&id.user)?,
            Err(e) => return Err(e.into()),
        }
    }

    // Inside a task container the master hands out a token for its user.
    if let (Some(user), Some(token)) = (env("DET_USER"), env("DET_USER_TOKEN"))
        && requested_user.is_none_or(|r| r == user)
    {
        return Ok(Session { client: Client::new(master)?.with_token(token), username: user });
    }

    let password = match id.password {
        Some(p) => p,
        None => prompt::password(&format!("Password for user '{}': ", id.user))?,
    };
    let resp = match login(master, &id.user, &password) {
        Err(CliError::InvalidCredentials) if id.fallback => return Err(CliError::NotLoggedIn),
        other => other?,
    };
    store.set_token(&id.user, &resp.token)?;
    Ok(Session { client: Client::new(master)?.with_token(resp.token), username: id.user })
}

/// Drops the cached token of `requested_user` (or of whoever would be used by default) and asks
/// the master to revoke it. Returns who was logged out, if anyone was.
pub fn logout(master: &str, requested_user: Option<&str>) -> Result<Option<String>, CliError> {
    let mut store = TokenStore::open(master)?;
    let user = resolve_identity(requested_user, &store).user;
    let Some(token) = store.token(&user).map(str::to_owned) else {
        return Ok(None);
    };
    store.drop_user(&user)?;
    let client = Client::new(master)?.with_token(token);
    // A master that cannot be reached is worth reporting; any refusal (say, an expired token)
    // leaves us just as logged out, as upstream treats it.
    if let Err(e @ (ClientError::Unreachable { .. } | ClientError::Untrusted { .. } | ClientError::Tls(_))) =
        client.send::<(), Value>(Method::POST, "api/v1/auth/logout", None)
    {
        return Err(e.into());
    }
    Ok(Some(user))
}

/// Logs out every user with a cached token for this master.
pub fn logout_all(master: &str) -> Result<(), CliError> {
    for user in TokenStore::open(master)?.users() {
        logout(master, Some(&user))?;
    }
    Ok(())
}
