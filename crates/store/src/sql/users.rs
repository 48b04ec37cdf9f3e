use sqlx::AssertSqlSafe;

use super::{SqlStore, on_pool};
use crate::error::{StoreError, StoreResult};
use crate::model::{NewUser, OrderDirection, RevokeSessions, UserFilter, UserPage, UserPatch, UserRecord, UserSort};

const USER_COLUMNS: &str = "id, username, display_name, admin, active, remote, password_hash, modified_at, last_auth_at, agent_uid, agent_gid, agent_user, agent_group";

/// Shared WHERE clause of the list and count queries; `$1`..`$3` are active, admin, name pattern.
/// Names fold ASCII case only, as SQLite's `LOWER` does (PostgreSQL's under the "C" collation).
fn user_filter(sqlite: bool) -> String {
    let c = if sqlite { "" } else { r#" COLLATE "C""# };
    format!(
        "($1 IS NULL OR active = $1) AND ($2 IS NULL OR admin = $2) \
         AND ($3 IS NULL OR LOWER(username{c}) LIKE $3 OR LOWER(display_name{c}) LIKE $3)"
    )
}

impl SqlStore {
    pub(crate) async fn insert_user(&self, user: NewUser, if_absent: bool) -> StoreResult<Option<UserRecord>> {
        StoreError::reject_nul("username", &user.username)?;
        StoreError::reject_nul("display name", &user.display_name)?;
        let conflict = if if_absent { " ON CONFLICT (username) DO NOTHING" } else { "" };
        let sql = format!(
            "INSERT INTO users (username, display_name, admin, active, remote, password_hash, modified_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7){conflict} RETURNING {USER_COLUMNS}"
        );
        let result = on_pool!(self, pool => {
            sqlx::query_as::<_, UserRecord>(AssertSqlSafe(sql.as_str()))
                .bind(&user.username)
                .bind(&user.display_name)
                .bind(user.admin)
                .bind(user.active)
                .bind(user.remote)
                .bind(&user.password_hash)
                .bind(user.now)
                .fetch_optional(pool)
                .await
        });
        result.map_err(|e| StoreError::from_write("user", &user.username, e))
    }

    pub(crate) async fn user_by_id_impl(&self, id: i32) -> StoreResult<UserRecord> {
        let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE id = $1");
        let found = on_pool!(self, pool => {
            sqlx::query_as::<_, UserRecord>(AssertSqlSafe(sql.as_str())).bind(id).fetch_optional(pool).await?
        });
        found.ok_or_else(|| StoreError::not_found("user", id))
    }

    pub(crate) async fn user_by_name_impl(&self, username: &str) -> StoreResult<UserRecord> {
        super::findable("user", username)?;
        let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE username = $1");
        let found = on_pool!(self, pool => {
            sqlx::query_as::<_, UserRecord>(AssertSqlSafe(sql.as_str())).bind(username).fetch_optional(pool).await?
        });
        found.ok_or_else(|| StoreError::not_found("user", username))
    }

    pub(crate) async fn list_users_impl(&self, filter: &UserFilter) -> StoreResult<UserPage> {
        // No stored name holds a NUL (writes refuse it); binding one would fail on PostgreSQL.
        if filter.name.as_ref().is_some_and(|n| n.contains('\0')) {
            return Ok(UserPage { users: Vec::new(), total: 0 });
        }
        let pattern = filter.name.as_ref().map(|n| format!("%{}%", escape_like(&n.to_ascii_lowercase())));
        let user_filter = user_filter(matches!(self.pool, super::Pool::Sqlite(_)));
        let order = order_clause(filter.sort, filter.order);
        // LIMIT -1 would be SQLite-only; "all rows" is expressed as the largest i64 instead.
        let limit = filter.limit.unwrap_or(i64::MAX);
        // One round trip: the window count is taken before LIMIT/OFFSET, so it is the full total.
        let list_sql =
            format!("SELECT {USER_COLUMNS}, COUNT(*) OVER () AS total FROM users WHERE {user_filter} ORDER BY {order} LIMIT $4 OFFSET $5");
        let count_sql = format!("SELECT COUNT(*) FROM users WHERE {user_filter}");
        on_pool!(self, pool => {
            let rows = sqlx::query_as::<_, CountedUser>(AssertSqlSafe(list_sql.as_str()))
                .bind(filter.active)
                .bind(filter.admin)
                .bind(&pattern)
                .bind(limit)
                .bind(filter.offset)
                .fetch_all(pool)
                .await?;
            let total = match rows.first() {
                Some(row) => row.total,
                // An empty page (offset past the end, or limit 0) carries no count: ask for it.
                None => sqlx::query_scalar(AssertSqlSafe(count_sql.as_str()))
                    .bind(filter.active)
                    .bind(filter.admin)
                    .bind(&pattern)
                    .fetch_one(pool)
                    .await?,
            };
            Ok(UserPage { users: rows.into_iter().map(|r| r.user).collect(), total })
        })
    }

    pub(crate) async fn update_user_impl(&self, id: i32, patch: &UserPatch) -> StoreResult<UserRecord> {
        // COALESCE keeps a column when its parameter is NULL; the password needs a flag because
        // NULL is also a legitimate new value (blank password).
        let sql = format!(
            "UPDATE users SET \
               username = COALESCE($2, username), \
               display_name = COALESCE($3, display_name), \
               admin = COALESCE($4, admin), \
               active = COALESCE($5, active), \
               remote = COALESCE($6, remote), \
               password_hash = CASE WHEN $7 THEN $8 ELSE password_hash END, \
               modified_at = COALESCE($9, modified_at), \
               agent_uid = CASE WHEN $10 THEN $11 ELSE agent_uid END, \
               agent_gid = CASE WHEN $10 THEN $12 ELSE agent_gid END, \
               agent_user = CASE WHEN $10 THEN $13 ELSE agent_user END, \
               agent_group = CASE WHEN $10 THEN $14 ELSE agent_group END \
             WHERE id = $1 RETURNING {USER_COLUMNS}"
        );
        for (field, value) in [("username", &patch.username), ("display name", &patch.display_name)] {
            if let Some(value) = value {
                StoreError::reject_nul(field, value)?;
            }
        }
        let set_password = patch.password_hash.is_some();
        let new_hash = patch.password_hash.clone().flatten();
        let key = patch.username.clone().unwrap_or_else(|| id.to_string());
        let removes_admin = patch.admin == Some(false) || patch.active == Some(false);
        // Session ids start at 1, so -1 keeps none.
        let revoke_keeping = patch.revoke_sessions.map(|r| match r {
            RevokeSessions::All => -1_i64,
            RevokeSessions::AllBut(keep) => keep,
        });
        let sqlite = matches!(self.pool, super::Pool::Sqlite(_));
        let link = patch.agent_user_group.as_ref();
        let updated = on_pool!(self, pool => {
            // SQLite: take the write lock first, so the admin count below cannot change before
            // the update. PostgreSQL: `FOR UPDATE` on the active admins does the same.
            let mut tx = super::begin_write!(self, pool);
            if removes_admin {
                let lock = if sqlite { "" } else { " FOR UPDATE" };
                let admins_sql = format!("SELECT id FROM users WHERE admin AND active ORDER BY id{lock}");
                let admins: Vec<i32> = sqlx::query_scalar(AssertSqlSafe(admins_sql.as_str())).fetch_all(&mut *tx).await?;
                if admins == [id] {
                    return Err(StoreError::Precondition {
                        reason: "this is the last active admin: make another user an active admin first",
                    });
                }
            }
            let updated = sqlx::query_as::<_, UserRecord>(AssertSqlSafe(sql.as_str()))
                .bind(id)
                .bind(&patch.username)
                .bind(&patch.display_name)
                .bind(patch.admin)
                .bind(patch.active)
                .bind(patch.remote)
                .bind(set_password)
                .bind(&new_hash)
                .bind(patch.now)
                .bind(link.is_some())
                .bind(link.map(|g| g.uid))
                .bind(link.map(|g| g.gid))
                .bind(link.map(|g| g.user.as_str()))
                .bind(link.map(|g| g.group.as_str()))
                .fetch_optional(&mut *tx)
                .await
                .map_err(|e| StoreError::from_write("user", key, e))?;
            if let (Some(_), Some(keep)) = (&updated, revoke_keeping) {
                sqlx::query("DELETE FROM user_sessions WHERE user_id = $1 AND id <> $2").bind(id).bind(keep).execute(&mut *tx).await?;
            }
            tx.commit().await?;
            updated
        });
        updated.ok_or_else(|| StoreError::not_found("user", id))
    }

    pub(crate) async fn record_login_impl(&self, user_id: i32, at: chrono::DateTime<chrono::Utc>) -> StoreResult<()> {
        on_pool!(self, pool => {
            sqlx::query("UPDATE users SET last_auth_at = $2 WHERE id = $1")
                .bind(user_id)
                .bind(at)
                .execute(pool)
                .await?;
        });
        Ok(())
    }
}

#[derive(sqlx::FromRow)]
struct CountedUser {
    #[sqlx(flatten)]
    user: UserRecord,
    total: i64,
}

fn order_clause(sort: UserSort, order: OrderDirection) -> String {
    let column = match sort {
        UserSort::Id => "id",
        UserSort::Username => "LOWER(username)",
        UserSort::DisplayName => "LOWER(display_name)",
        UserSort::Name => "LOWER(COALESCE(NULLIF(display_name, ''), username))",
        UserSort::Admin => "admin",
        UserSort::Active => "active",
        UserSort::Remote => "remote",
        UserSort::ModifiedAt => "modified_at",
        UserSort::LastAuthAt => "last_auth_at",
    };
    let dir = match order {
        OrderDirection::Asc => "ASC",
        OrderDirection::Desc => "DESC",
    };
    // id breaks ties so pages never overlap.
    format!("{column} {dir}, id {dir}")
}

/// LIKE has no default escape character in either dialect; `%` and `_` in a name filter are
/// rare enough that dropping them is the simple, portable choice.
fn escape_like(s: &str) -> String {
    s.chars().filter(|c| *c != '%' && *c != '_').collect()
}
