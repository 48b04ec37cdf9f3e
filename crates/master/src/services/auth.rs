//! Logins, sessions and resolving a bearer token to the user behind it.

use std::sync::Arc;

use chrono::TimeDelta;
use resolute_store::{NewSession, Store, StoreError, UserRecord, db_now};

use super::SessionCache;
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
}

impl AuthService {
    pub fn new(store: Arc<dyn Store>, sessions: Arc<SessionCache>, lifespan: TimeDelta) -> Self {
        AuthService { store, sessions, lifespan }
    }

    /// Checks credentials and opens a session. Unknown users and wrong passwords get the same
    /// answer, so logins cannot probe for usernames.
    pub async fn login(&self, username: &str, submitted: &str, is_hashed: bool) -> ApiResult<(String, UserRecord)> {
        let invalid = || ApiError::forbidden("invalid credentials");
        let user = match self.store.user_by_name(username).await {
            Ok(user) => user,
            Err(StoreError::NotFound { .. }) => return Err(invalid()),
            Err(e) => return Err(e.into()),
        };
        let client_hash = password::submitted_to_client_hash(submitted, is_hashed);
        if !password::verify(user.password_hash.clone(), client_hash).await {
            return Err(invalid());
        }
        if user.remote {
            return Err(ApiError::forbidden("user is managed by a remote identity provider and cannot log in with a password"));
        }
        if !user.active {
            return Err(ApiError::forbidden("user is not active"));
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
        self.sessions.insert(token_hash, principal.clone(), session.expires_at);
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
