use chrono::{DateTime, Utc};

use sqlx::AssertSqlSafe;

use super::{SqlStore, on_pool};
use crate::error::StoreResult;
use crate::model::{AuthenticatedSession, NewSession, SessionRecord};

const SESSION_COLUMNS: &str = "id, user_id, token_hash, created_at, expires_at";

impl SqlStore {
    pub(crate) async fn create_session_impl(&self, s: NewSession) -> StoreResult<SessionRecord> {
        let sql = format!(
            "INSERT INTO user_sessions (user_id, token_hash, created_at, expires_at) \
             VALUES ($1, $2, $3, $4) RETURNING {SESSION_COLUMNS}"
        );
        let created = on_pool!(self, pool => {
            sqlx::query_as::<_, SessionRecord>(AssertSqlSafe(sql.as_str()))
                .bind(s.user_id)
                .bind(&s.token_hash)
                .bind(s.created_at)
                .bind(s.expires_at)
                .fetch_one(pool)
                .await?
        });
        Ok(created)
    }

    pub(crate) async fn session_by_token_hash_impl(&self, token_hash: &str) -> StoreResult<Option<AuthenticatedSession>> {
        // Every authenticated request runs this: one indexed join, no second round trip.
        const SQL: &str = "SELECT s.id AS session_id, s.expires_at, u.id, u.username, u.display_name, u.admin, u.active, \
             u.remote, u.password_hash, u.modified_at, u.last_auth_at, u.agent_uid, u.agent_gid, u.agent_user, u.agent_group \
             FROM user_sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = $1";
        let found = on_pool!(self, pool => {
            sqlx::query_as::<_, AuthenticatedSession>(SQL).bind(token_hash).fetch_optional(pool).await?
        });
        Ok(found)
    }

    pub(crate) async fn delete_session_impl(&self, id: i64) -> StoreResult<()> {
        on_pool!(self, pool => {
            sqlx::query("DELETE FROM user_sessions WHERE id = $1").bind(id).execute(pool).await?;
        });
        Ok(())
    }

    pub(crate) async fn delete_expired_sessions_impl(&self, now: DateTime<Utc>) -> StoreResult<u64> {
        let done = on_pool!(self, pool => {
            sqlx::query("DELETE FROM user_sessions WHERE expires_at < $1")
                .bind(now)
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(done)
    }
}
