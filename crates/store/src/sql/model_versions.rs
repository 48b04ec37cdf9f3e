//! The model registry's versions: register a checkpoint as a model's next version (1, 2, … per
//! model), read, list, patch, delete; and which checkpoints are registered, so that GC and
//! deletions leave them alone.

use chrono::{DateTime, Utc};
use sqlx::AssertSqlSafe;

use super::args::{Args, bind_args, direction};
use super::models::{labels_text, parse_labels, reject_nul_texts};
use super::{SqlStore, expect_row, on_pool, parse_json};
use crate::db_now;
use crate::error::{StoreError, StoreResult};
use crate::model_registry::{ModelVersionFilter, ModelVersionPatch, ModelVersionRecord, ModelVersionSort, NewModelVersion};

const VERSION_SELECT: &str = "SELECT v.id, v.model_id, v.version, v.checkpoint_uuid, v.name, v.comment, v.notes, v.metadata, \
     v.labels, v.user_id, u.username, v.creation_time, v.last_updated_time \
     FROM model_versions v JOIN users u ON u.id = v.user_id";

/// The next number is `MAX + 1` in the insert itself; two concurrent registrations may pick the
/// same one, and the loser (a unique violation) tries again.
const INSERT_NEXT: &str = "INSERT INTO model_versions (model_id, version, checkpoint_uuid, name, comment, notes, metadata, labels, \
     user_id, creation_time, last_updated_time) \
     SELECT $1, COALESCE(MAX(version), 0) + 1, $2, $3, $4, $5, $6, $7, $8, $9, $9 FROM model_versions WHERE model_id = $1 \
     RETURNING version";

const INSERT_ATTEMPTS: usize = 5;

/// Uuids per `IN (...)` list: well under every backend's bind limit.
const UUIDS_PER_QUERY: usize = 1000;

#[derive(sqlx::FromRow)]
struct VersionRow {
    id: i32,
    model_id: i32,
    version: i32,
    checkpoint_uuid: String,
    name: String,
    comment: String,
    notes: String,
    metadata: String,
    labels: String,
    user_id: i32,
    username: String,
    creation_time: DateTime<Utc>,
    last_updated_time: DateTime<Utc>,
}

impl VersionRow {
    fn into_record(self) -> StoreResult<ModelVersionRecord> {
        Ok(ModelVersionRecord {
            id: self.id,
            model_id: self.model_id,
            version: self.version,
            checkpoint_uuid: self.checkpoint_uuid,
            name: self.name,
            comment: self.comment,
            notes: self.notes,
            metadata: parse_json("metadata", &self.metadata)?,
            labels: parse_labels(&self.labels)?,
            user_id: self.user_id,
            username: self.username,
            creation_time: self.creation_time,
            last_updated_time: self.last_updated_time,
        })
    }
}

impl SqlStore {
    pub(crate) async fn create_model_version_impl(&self, v: NewModelVersion) -> StoreResult<ModelVersionRecord> {
        reject_nul_texts(&[
            ("checkpoint uuid", Some(&v.checkpoint_uuid)),
            ("name", Some(&v.name)),
            ("comment", Some(&v.comment)),
            ("notes", Some(&v.notes)),
        ])?;
        let labels = labels_text(&v.labels)?;
        let metadata = v.metadata.to_string();
        let mut attempt = 0;
        let version = loop {
            attempt += 1;
            let now = db_now();
            let inserted = on_pool!(self, pool => {
                sqlx::query_scalar::<_, i32>(INSERT_NEXT)
                    .bind(v.model_id)
                    .bind(&v.checkpoint_uuid)
                    .bind(&v.name)
                    .bind(&v.comment)
                    .bind(&v.notes)
                    .bind(&metadata)
                    .bind(&labels)
                    .bind(v.user_id)
                    .bind(now)
                    .fetch_one(pool)
                    .await
            });
            match inserted {
                Ok(version) => break version,
                Err(e) => match StoreError::from_write_ref("model version", v.model_id, "checkpoint", &v.checkpoint_uuid, e) {
                    StoreError::Conflict { .. } if attempt < INSERT_ATTEMPTS => continue,
                    other => return Err(other),
                },
            }
        };
        self.model_version_impl(v.model_id, version).await
    }

    pub(crate) async fn model_version_impl(&self, model_id: i32, version: i32) -> StoreResult<ModelVersionRecord> {
        let sql = format!("{VERSION_SELECT} WHERE v.model_id = $1 AND v.version = $2");
        let found = on_pool!(self, pool => {
            sqlx::query_as::<_, VersionRow>(AssertSqlSafe(sql.as_str())).bind(model_id).bind(version).fetch_optional(pool).await?
        });
        found.ok_or_else(|| StoreError::not_found("model version", format!("{version} of model {model_id}")))?.into_record()
    }

    pub(crate) async fn list_model_versions_impl(
        &self,
        model_id: i32,
        filter: &ModelVersionFilter,
    ) -> StoreResult<(Vec<ModelVersionRecord>, i64)> {
        let dir = direction(filter.order);
        let order = match filter.sort {
            ModelVersionSort::Version => format!("v.version {dir}"),
            ModelVersionSort::CreationTime => format!("v.creation_time {dir}, v.version {dir}"),
        };
        let mut args = Args::default();
        let model = args.push(model_id);
        let limit = args.push(filter.limit.unwrap_or(i64::MAX));
        let offset = args.push(filter.offset.max(0));
        let page_sql = format!("{VERSION_SELECT} WHERE v.model_id = {model} ORDER BY {order} LIMIT {limit} OFFSET {offset}");
        let (rows, total): (Vec<VersionRow>, i64) = on_pool!(self, pool => {
            tokio::try_join!(
                bind_args!(sqlx::query_as::<_, VersionRow>(AssertSqlSafe(page_sql.as_str())), args).fetch_all(pool),
                sqlx::query_scalar("SELECT COUNT(*) FROM model_versions WHERE model_id = $1").bind(model_id).fetch_one(pool),
            )?
        });
        let versions = rows.into_iter().map(VersionRow::into_record).collect::<StoreResult<_>>()?;
        Ok((versions, total))
    }

    pub(crate) async fn update_model_version_impl(
        &self,
        model_id: i32,
        version: i32,
        patch: &ModelVersionPatch,
    ) -> StoreResult<ModelVersionRecord> {
        reject_nul_texts(&[("name", patch.name.as_deref()), ("comment", patch.comment.as_deref()), ("notes", patch.notes.as_deref())])?;
        let mut args = Args::default();
        let mut sets = Vec::new();
        for (column, value) in [("name", &patch.name), ("comment", &patch.comment), ("notes", &patch.notes)] {
            if let Some(value) = value {
                sets.push(format!("{column} = {}", args.push(value)));
            }
        }
        if let Some(metadata) = &patch.metadata {
            sets.push(format!("metadata = {}", args.push(metadata.to_string())));
        }
        if let Some(labels) = &patch.labels {
            sets.push(format!("labels = {}", args.push(labels_text(labels)?)));
        }
        sets.push(format!("last_updated_time = {}", args.push(db_now())));
        let sql = format!(
            "UPDATE model_versions SET {} WHERE model_id = {} AND version = {}",
            sets.join(", "),
            args.push(model_id),
            args.push(version)
        );
        let done = on_pool!(self, pool => {
            bind_args!(sqlx::query(AssertSqlSafe(sql.as_str())), args).execute(pool).await?.rows_affected()
        });
        expect_row(done, "model version", format!("{version} of model {model_id}"))?;
        self.model_version_impl(model_id, version).await
    }

    pub(crate) async fn delete_model_version_impl(&self, model_id: i32, version: i32) -> StoreResult<()> {
        let done = on_pool!(self, pool => {
            sqlx::query("DELETE FROM model_versions WHERE model_id = $1 AND version = $2")
                .bind(model_id)
                .bind(version)
                .execute(pool)
                .await?
                .rows_affected()
        });
        expect_row(done, "model version", format!("{version} of model {model_id}"))
    }

    pub(crate) async fn registered_checkpoints_impl(&self, uuids: &[String]) -> StoreResult<Vec<String>> {
        let mut registered = Vec::new();
        for chunk in uuids.chunks(UUIDS_PER_QUERY) {
            let chunk: Vec<&String> = chunk.iter().filter(|u| !u.contains('\0')).collect();
            if chunk.is_empty() {
                continue;
            }
            let mut args = Args::default();
            let list = args.push_list(chunk.iter().copied());
            let sql = format!("SELECT DISTINCT checkpoint_uuid FROM model_versions WHERE checkpoint_uuid IN ({list})");
            let found: Vec<String> = on_pool!(self, pool => {
                bind_args!(sqlx::query_scalar(AssertSqlSafe(sql.as_str())), args).fetch_all(pool).await?
            });
            registered.extend(found);
        }
        registered.sort();
        registered.dedup();
        Ok(registered)
    }

    pub(crate) async fn experiment_registered_checkpoints_impl(&self, experiment_id: i32) -> StoreResult<Vec<String>> {
        let found = on_pool!(self, pool => {
            sqlx::query_scalar::<_, String>(
                "SELECT DISTINCT v.checkpoint_uuid FROM model_versions v JOIN checkpoints c ON c.uuid = v.checkpoint_uuid \
                 WHERE c.experiment_id = $1 ORDER BY v.checkpoint_uuid",
            )
            .bind(experiment_id)
            .fetch_all(pool)
            .await?
        });
        Ok(found)
    }
}
