//! Wires the per-concept query modules into the [`Store`] trait.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{Pool, SqlStore};
use crate::Store;
use crate::error::StoreResult;
use crate::model::{AuthenticatedSession, NewSession, NewUser, SessionRecord, UserFilter, UserPage, UserPatch, UserRecord};

#[async_trait]
impl Store for SqlStore {
    fn backend(&self) -> &'static str {
        match self.pool {
            Pool::Sqlite(_) => "sqlite",
            Pool::Postgres(_) => "postgres",
        }
    }

    async fn cluster_id(&self) -> StoreResult<String> {
        self.cluster_id_impl().await
    }

    async fn create_user(&self, user: NewUser) -> StoreResult<UserRecord> {
        let username = user.username.clone();
        self.insert_user(user, false).await?.ok_or(crate::StoreError::Conflict { entity: "user", key: username })
    }

    async fn create_user_if_absent(&self, user: NewUser) -> StoreResult<bool> {
        Ok(self.insert_user(user, true).await?.is_some())
    }

    async fn user_by_id(&self, id: i32) -> StoreResult<UserRecord> {
        self.user_by_id_impl(id).await
    }

    async fn user_by_name(&self, username: &str) -> StoreResult<UserRecord> {
        self.user_by_name_impl(username).await
    }

    async fn list_users(&self, filter: &UserFilter) -> StoreResult<UserPage> {
        self.list_users_impl(filter).await
    }

    async fn update_user(&self, id: i32, patch: &UserPatch) -> StoreResult<UserRecord> {
        self.update_user_impl(id, patch).await
    }

    async fn record_login(&self, user_id: i32, at: DateTime<Utc>) -> StoreResult<()> {
        self.record_login_impl(user_id, at).await
    }

    async fn create_session(&self, session: NewSession) -> StoreResult<SessionRecord> {
        self.create_session_impl(session).await
    }

    async fn session_by_token_hash(&self, token_hash: &str) -> StoreResult<Option<AuthenticatedSession>> {
        self.session_by_token_hash_impl(token_hash).await
    }

    async fn delete_session(&self, id: i64) -> StoreResult<()> {
        self.delete_session_impl(id).await
    }

    async fn delete_expired_sessions(&self, now: DateTime<Utc>) -> StoreResult<u64> {
        self.delete_expired_sessions_impl(now).await
    }
}
