//! Logins, sessions and resolving a bearer token to the user behind it.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use chrono::TimeDelta;
use resolute_store::{NewSession, Store, StoreError, UserRecord, db_now};

use super::SessionCache;
use super::login_throttle::LoginThrottle;
use crate::auth::{password, token};
use crate::error::{ApiError, ApiResult};

/// The authenticated caller of a request.
#[derive(Clone, Debug)]
pub struct Principal {
    pub user: UserRecord,
    pub session_id: i64,
}

#[derive(Clone)]
pub struct AuthService {
    store: Arc<dyn Store>,
    sessions: Arc<SessionCache>,
    lifespan: TimeDelta,
    throttle: Arc<LoginThrottle>,
}

impl AuthService {
    pub fn new(store: Arc<dyn Store>, sessions: Arc<SessionCache>, lifespan: TimeDelta) -> Self {
        AuthService { store, sessions, lifespan, throttle: Arc::new(LoginThrottle::default()) }
    }

    /// Checks credentials and opens a session. Unknown users and wrong passwords get the same
    /// answer after the same work (one Argon2 verification each), so logins cannot probe for
    /// usernames, by message or by time. `client` is the caller's address, for rate limiting
    /// (see `login_throttle`).
    ///
    /// A rejected password is 401 (`Unauthenticated`), as upstream's master answers and its SDK
    /// raises `UnauthenticatedException`. Only a caller who gave the right password learns that
    /// the account is deactivated or remote (403 with the reason), as upstream does: an unknown
    /// user is never told apart from a wrong password.
    pub async fn login(&self, username: &str, submitted: &str, is_hashed: bool, client: Option<IpAddr>) -> ApiResult<(String, UserRecord)> {
        let invalid = || ApiError::unauthenticated("invalid credentials");
        self.throttle
            .check(username, client, Instant::now())
            .map_err(|refused| ApiError::too_many_requests(refused.to_string(), refused.retry_after.as_secs()))?;
        let user = match self.store.user_by_name(username).await {
            Ok(user) => Some(user),
            Err(StoreError::NotFound { .. } | StoreError::InvalidInput { .. }) => None,
            Err(e) => return Err(e.into()),
        };
        let client_hash = password::submitted_to_client_hash(submitted, is_hashed);
        let stored = user.as_ref().and_then(|u| u.password_hash.clone());
        let matched = password::verify_login(user.is_some(), stored, client_hash).await;
        let user = match user {
            Some(user) if matched => user,
            _ => {
                self.throttle.record_failure(username, client, Instant::now());
                return Err(invalid());
            }
        };
        self.throttle.record_success(username);
        if user.remote {
            return Err(ApiError::forbidden("user is managed by a remote identity provider and cannot log in with a password"));
        }
        if !user.active {
            return Err(ApiError::forbidden("user is not active: the account has been deactivated; an admin can reactivate it"));
        }
        let (token, token_hash) = token::new_token();
        let now = db_now();
        self.store.create_session(NewSession { user_id: user.id, token_hash, created_at: now, expires_at: now + self.lifespan }).await?;
        self.store.record_login(user.id, now).await?;
        let user = UserRecord { last_auth_at: Some(now), ..user };
        Ok((token, user))
    }

    /// The principal behind a bearer token, or 401.
    pub async fn authenticate(&self, bearer: &str) -> ApiResult<Principal> {
        let token_hash = token::token_hash(bearer);
        let now = db_now();
        if let Some(principal) = self.sessions.get(&token_hash, now) {
            return Ok(principal);
        }
        let generation = self.sessions.generation();
        let session = self
            .store
            .session_by_token_hash(&token_hash)
            .await?
            .ok_or_else(|| ApiError::unauthenticated("invalid or expired session token; log in again"))?;
        if session.expires_at <= now {
            self.store.delete_session(session.session_id).await?;
            return Err(ApiError::unauthenticated("session expired; log in again"));
        }
        if !session.user.active {
            return Err(ApiError::unauthenticated("user is not active"));
        }
        let principal = Principal { user: session.user, session_id: session.session_id };
        self.sessions.insert(token_hash, principal.clone(), session.expires_at, generation);
        Ok(principal)
    }

    pub async fn logout(&self, principal: &Principal) -> ApiResult<()> {
        self.sessions.remove_session(principal.session_id);
        Ok(self.store.delete_session(principal.session_id).await?)
    }

    /// Drops expired sessions; called periodically.
    pub async fn purge_expired(&self) -> ApiResult<u64> {
        Ok(self.store.delete_expired_sessions(db_now()).await?)
    }
}
