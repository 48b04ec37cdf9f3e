//! The model registry's models: create, look up by name or id, list with filters and sorts,
//! patch, delete (their versions follow by ON DELETE CASCADE).

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::AssertSqlSafe;

use super::args::{Args, Conditions, bind_args, contains_pattern, direction, escape_like};
use super::{Pool, SqlStore, expect_row, findable, on_pool, parse_json};
use crate::db_now;
use crate::error::{StoreError, StoreResult};
use crate::model_registry::{ModelFilter, ModelPatch, ModelRecord, ModelSort, NewModel};

const MODEL_SELECT: &str = "SELECT m.id, m.name, m.description, m.notes, m.metadata, m.labels, m.user_id, u.username, \
     m.workspace_id, m.archived, m.creation_time, m.last_updated_time, \
     (SELECT COUNT(*) FROM model_versions v WHERE v.model_id = m.id) AS num_versions \
     FROM models m JOIN users u ON u.id = m.user_id";

#[derive(sqlx::FromRow)]
struct ModelRow {
    id: i32,
    name: String,
    description: String,
    notes: String,
    metadata: String,
    labels: String,
    user_id: i32,
    username: String,
    workspace_id: i32,
    archived: bool,
    creation_time: DateTime<Utc>,
    last_updated_time: DateTime<Utc>,
    num_versions: i64,
}

impl ModelRow {
    fn into_record(self) -> StoreResult<ModelRecord> {
        Ok(ModelRecord {
            id: self.id,
            name: self.name,
            description: self.description,
            notes: self.notes,
            metadata: parse_json("metadata", &self.metadata)?,
            labels: parse_labels(&self.labels)?,
            user_id: self.user_id,
            username: self.username,
            workspace_id: self.workspace_id,
            archived: self.archived,
            creation_time: self.creation_time,
            last_updated_time: self.last_updated_time,
            num_versions: i32::try_from(self.num_versions).unwrap_or(i32::MAX),
        })
    }
}

pub(super) fn parse_labels(text: &str) -> StoreResult<Vec<String>> {
    serde_json::from_str(text).map_err(|e| StoreError::corrupt("labels", e))
}

/// Labels are stored as a compact JSON array, refused with a NUL like every other text so that
/// a label reads back, filters and prints the same on both backends.
pub(super) fn labels_text(labels: &[String]) -> StoreResult<String> {
    labels.iter().try_for_each(|label| StoreError::reject_nul("label", label))?;
    Ok(Value::from(labels.to_vec()).to_string())
}

/// Text columns of the registry, checked for NUL before anything is written.
pub(super) fn reject_nul_texts(texts: &[(&'static str, Option<&str>)]) -> StoreResult<()> {
    texts.iter().try_for_each(|(field, value)| value.map_or(Ok(()), |v| StoreError::reject_nul(field, v)))
}

impl SqlStore {
    pub(crate) async fn create_model_impl(&self, m: NewModel) -> StoreResult<ModelRecord> {
        reject_nul_texts(&[("name", Some(&m.name)), ("description", Some(&m.description)), ("notes", Some(&m.notes))])?;
        let labels = labels_text(&m.labels)?;
        let now = db_now();
        let inserted = on_pool!(self, pool => {
            sqlx::query_scalar::<_, i32>(
                "INSERT INTO models (name, description, notes, metadata, labels, user_id, workspace_id, creation_time, \
                 last_updated_time) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) RETURNING id",
            )
            .bind(&m.name)
            .bind(&m.description)
            .bind(&m.notes)
            .bind(m.metadata.to_string())
            .bind(&labels)
            .bind(m.user_id)
            .bind(m.workspace_id)
            .bind(now)
            .fetch_one(pool)
            .await
        });
        let id = inserted.map_err(|e| StoreError::from_write_ref("model", &m.name, "workspace", m.workspace_id, e))?;
        self.model_by_id_impl(id).await
    }

    pub(crate) async fn model_by_name_impl(&self, name: &str) -> StoreResult<ModelRecord> {
        findable("model", name)?;
        let sql = format!("{MODEL_SELECT} WHERE m.name = $1");
        let found = on_pool!(self, pool => {
            sqlx::query_as::<_, ModelRow>(AssertSqlSafe(sql.as_str())).bind(name).fetch_optional(pool).await?
        });
        found.ok_or_else(|| StoreError::not_found("model", name))?.into_record()
    }

    pub(crate) async fn model_by_id_impl(&self, id: i32) -> StoreResult<ModelRecord> {
        let sql = format!("{MODEL_SELECT} WHERE m.id = $1");
        let found = on_pool!(self, pool => {
            sqlx::query_as::<_, ModelRow>(AssertSqlSafe(sql.as_str())).bind(id).fetch_optional(pool).await?
        });
        found.ok_or_else(|| StoreError::not_found("model", id))?.into_record()
    }

    pub(crate) async fn list_models_impl(&self, filter: &ModelFilter) -> StoreResult<(Vec<ModelRecord>, i64)> {
        let texts = [&filter.name_contains, &filter.description_contains];
        let lists = filter.labels.iter().chain(&filter.usernames).chain(&filter.workspace_names);
        // No stored text holds a NUL; binding one would fail on PostgreSQL.
        if texts.iter().any(|t| t.as_deref().is_some_and(|t| t.contains('\0'))) || lists.into_iter().any(|t| t.contains('\0')) {
            return Ok((Vec::new(), 0));
        }
        let sqlite = matches!(self.pool, Pool::Sqlite(_));
        let mut args = Args::default();
        let mut cond = Conditions::default();
        for (column, needle) in [("m.name", &filter.name_contains), ("m.description", &filter.description_contains)] {
            if let Some(needle) = needle.as_deref().filter(|n| !n.is_empty()) {
                // ASCII-only case folding on both backends.
                let folded = if sqlite { format!("LOWER({column})") } else { format!(r#"LOWER({column} COLLATE "C")"#) };
                cond.and(format!("{folded} LIKE {} ESCAPE '\\'", args.push(contains_pattern(&needle.to_ascii_lowercase()))));
            }
        }
        if let Some(id) = filter.id {
            cond.and(format!("m.id = {}", args.push(id)));
        }
        if let Some(archived) = filter.archived {
            cond.and(format!("m.archived = {}", args.push(archived)));
        }
        for label in &filter.labels {
            // `,"a","b",` holds `,"<label>",` for exactly one whole element (see experiments).
            let pattern = format!("%,{},%", escape_like(&Value::from(label.as_str()).to_string()));
            cond.and(format!("(',' || SUBSTR(m.labels, 2, LENGTH(m.labels) - 2) || ',') LIKE {} ESCAPE '\\'", args.push(pattern)));
        }
        cond.and_in(&mut args, "m.user_id", &filter.user_ids);
        cond.and_in(&mut args, "u.username", &filter.usernames);
        cond.and_in(&mut args, "m.workspace_id", &filter.workspace_ids);
        if !filter.workspace_names.is_empty() {
            let names = args.push_list(filter.workspace_names.iter());
            cond.and(format!("m.workspace_id IN (SELECT id FROM workspaces WHERE name IN ({names}))"));
        }
        let where_sql = cond.sql();
        let count_sql = format!("SELECT COUNT(*) FROM models m JOIN users u ON u.id = m.user_id WHERE {where_sql}");
        let count_args = args.clone();
        let dir = direction(filter.order);
        let order = match filter.sort {
            ModelSort::Id => format!("m.id {dir}"),
            ModelSort::Name => format!("m.name {dir}, m.id {dir}"),
            ModelSort::Description => format!("m.description {dir}, m.id {dir}"),
            ModelSort::CreationTime => format!("m.creation_time {dir}, m.id {dir}"),
            ModelSort::LastUpdatedTime => format!("m.last_updated_time {dir}, m.id {dir}"),
            ModelSort::NumVersions => format!("num_versions {dir}, m.id {dir}"),
            ModelSort::Workspace => {
                format!("(SELECT w.name FROM workspaces w WHERE w.id = m.workspace_id) {dir}, m.id {dir}")
            }
        };
        let limit = args.push(filter.limit.unwrap_or(i64::MAX));
        let offset = args.push(filter.offset.max(0));
        let page_sql = format!("{MODEL_SELECT} WHERE {where_sql} ORDER BY {order} LIMIT {limit} OFFSET {offset}");
        let (rows, total): (Vec<ModelRow>, i64) = on_pool!(self, pool => {
            tokio::try_join!(
                bind_args!(sqlx::query_as::<_, ModelRow>(AssertSqlSafe(page_sql.as_str())), args).fetch_all(pool),
                bind_args!(sqlx::query_scalar(AssertSqlSafe(count_sql.as_str())), count_args).fetch_one(pool),
            )?
        });
        let models = rows.into_iter().map(ModelRow::into_record).collect::<StoreResult<_>>()?;
        Ok((models, total))
    }

    pub(crate) async fn update_model_impl(&self, id: i32, patch: &ModelPatch) -> StoreResult<ModelRecord> {
        reject_nul_texts(&[
            ("name", patch.name.as_deref()),
            ("description", patch.description.as_deref()),
            ("notes", patch.notes.as_deref()),
        ])?;
        let mut args = Args::default();
        let mut sets = Vec::new();
        if let Some(name) = &patch.name {
            sets.push(format!("name = {}", args.push(name)));
        }
        if let Some(description) = &patch.description {
            sets.push(format!("description = {}", args.push(description)));
        }
        if let Some(notes) = &patch.notes {
            sets.push(format!("notes = {}", args.push(notes)));
        }
        if let Some(metadata) = &patch.metadata {
            sets.push(format!("metadata = {}", args.push(metadata.to_string())));
        }
        if let Some(labels) = &patch.labels {
            sets.push(format!("labels = {}", args.push(labels_text(labels)?)));
        }
        if let Some(workspace_id) = patch.workspace_id {
            sets.push(format!("workspace_id = {}", args.push(workspace_id)));
        }
        if let Some(archived) = patch.archived {
            sets.push(format!("archived = {}", args.push(archived)));
        }
        sets.push(format!("last_updated_time = {}", args.push(db_now())));
        let sql = format!("UPDATE models SET {} WHERE id = {}", sets.join(", "), args.push(id));
        let updated = on_pool!(self, pool => {
            bind_args!(sqlx::query(AssertSqlSafe(sql.as_str())), args).execute(pool).await.map(|done| done.rows_affected())
        });
        let key = patch.name.clone().unwrap_or_else(|| id.to_string());
        let workspace = patch.workspace_id.unwrap_or_default();
        let done = updated.map_err(|e| StoreError::from_write_ref("model", key, "workspace", workspace, e))?;
        expect_row(done, "model", id)?;
        self.model_by_id_impl(id).await
    }

    pub(crate) async fn delete_model_impl(&self, id: i32) -> StoreResult<()> {
        let done = on_pool!(self, pool => {
            sqlx::query("DELETE FROM models WHERE id = $1").bind(id).execute(pool).await?.rows_affected()
        });
        expect_row(done, "model", id)
    }
}
