//! Experiments: creation, lookup, listing and the single-column updates the master makes as an
//! experiment runs. Deleting one removes its trials (with their metrics and checkpoints) through
//! foreign-key cascades, and its trials' tasks and logs explicitly.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::AssertSqlSafe;

use super::args::{Args, Conditions, bind_args, contains_pattern, direction, escape_like};
use super::{Pool, SqlStore, expect_row, on_pool, parse_json};
use crate::error::{StoreError, StoreResult};
use crate::model_experiments::{ExperimentFilter, ExperimentPage, ExperimentPatch, ExperimentRecord, ExperimentSort, NewExperiment};
use crate::{StoredJson, config_summary_text};

/// The record's columns, `original_config` given as an expression.
macro_rules! experiment_columns {
    ($original_config:literal) => {
        concat!(
            "SELECT e.id, e.name, e.description, e.notes, e.state, e.owner_id, u.username AS owner_username, \
             e.project_id, p.workspace_id, e.config, COALESCE(e.config_summary, e.config) AS config_summary, ",
            $original_config,
            ", e.archived, e.labels, e.parent_id, e.start_time, e.end_time, e.progress, e.job_id, e.unmanaged, e.end_reason, \
             (SELECT COUNT(*) FROM trials t WHERE t.experiment_id = e.id) AS num_trials"
        )
    };
}

const EXPERIMENT_COLUMNS: &str = experiment_columns!("e.original_config");

/// A list's rows leave the submitted YAML out (as upstream's GetExperiments does): a list never
/// shows it, and it is as long as the config again.
const LIST_COLUMNS: &str = experiment_columns!("'' AS original_config");

const EXPERIMENT_JOINS: &str = "JOIN users u ON u.id = e.owner_id JOIN projects p ON p.id = e.project_id";

/// What the list counts over: every filter is on `experiments` itself, and owner_id is a foreign key.
const EXPERIMENT_FROM: &str = "FROM experiments e";

#[derive(sqlx::FromRow)]
struct ExperimentRow {
    id: i32,
    name: String,
    description: String,
    notes: String,
    state: String,
    owner_id: i32,
    owner_username: String,
    project_id: i32,
    workspace_id: i32,
    config: String,
    config_summary: String,
    original_config: String,
    archived: bool,
    labels: String,
    parent_id: Option<i32>,
    start_time: DateTime<Utc>,
    end_time: Option<DateTime<Utc>>,
    progress: Option<f64>,
    job_id: String,
    unmanaged: bool,
    end_reason: Option<String>,
    num_trials: i64,
}

impl ExperimentRow {
    fn into_record(self) -> StoreResult<ExperimentRecord> {
        let labels = serde_json::from_str(&self.labels).map_err(|e| StoreError::corrupt("labels", e))?;
        Ok(ExperimentRecord {
            id: self.id,
            name: self.name,
            description: self.description,
            notes: self.notes,
            state: self.state,
            owner_id: self.owner_id,
            owner_username: self.owner_username,
            project_id: self.project_id,
            workspace_id: self.workspace_id,
            config: StoredJson::from_text(self.config).map_err(|e| StoreError::corrupt("config", e))?,
            config_summary: StoredJson::from_text(self.config_summary).map_err(|e| StoreError::corrupt("config_summary", e))?,
            original_config: self.original_config,
            archived: self.archived,
            labels,
            parent_id: self.parent_id,
            start_time: self.start_time,
            end_time: self.end_time,
            progress: self.progress,
            job_id: self.job_id,
            unmanaged: self.unmanaged,
            end_reason: self.end_reason,
            num_trials: self.num_trials,
        })
    }
}

fn labels_text(labels: &[String]) -> String {
    Value::from(labels.to_vec()).to_string()
}

impl SqlStore {
    pub(crate) async fn create_experiment_impl(&self, e: NewExperiment) -> StoreResult<ExperimentRecord> {
        for (field, value) in [
            ("name", &e.name),
            ("description", &e.description),
            ("notes", &e.notes),
            ("state", &e.state),
            ("config", &e.original_config),
            ("job id", &e.job_id),
        ] {
            StoreError::reject_nul(field, value)?;
        }
        reject_nul_labels(&e.labels)?;
        const SQL: &str = "INSERT INTO experiments (name, description, notes, state, owner_id, project_id, config, \
             original_config, model_definition, labels, parent_id, start_time, job_id, unmanaged, config_summary) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING id";
        let inserted = on_pool!(self, pool => {
            sqlx::query_scalar::<_, i32>(SQL)
                .bind(&e.name)
                .bind(&e.description)
                .bind(&e.notes)
                .bind(&e.state)
                .bind(e.owner_id)
                .bind(e.project_id)
                .bind(e.config.to_string())
                .bind(&e.original_config)
                .bind(&e.model_definition)
                .bind(labels_text(&e.labels))
                .bind(e.parent_id)
                .bind(e.start_time)
                .bind(&e.job_id)
                .bind(e.unmanaged)
                .bind(config_summary_text(&e.config))
                .fetch_one(pool)
                .await
        });
        match inserted {
            Ok(id) => self.experiment_by_id_impl(id).await,
            Err(sqlx::Error::Database(db)) if db.is_foreign_key_violation() => Err(self.missing_experiment_parent(&e).await),
            Err(err) => Err(StoreError::from_write("experiment", &e.name, err)),
        }
    }

    /// Names the referenced row that made a create fail (only on that error path).
    async fn missing_experiment_parent(&self, e: &NewExperiment) -> StoreError {
        if let Err(err) = self.project_by_id_impl(e.project_id).await {
            return err;
        }
        if let Err(err) = self.user_by_id_impl(e.owner_id).await {
            return err;
        }
        StoreError::not_found("experiment", e.parent_id.map_or_else(String::new, |p| p.to_string()))
    }

    pub(crate) async fn experiment_by_id_impl(&self, id: i32) -> StoreResult<ExperimentRecord> {
        let sql = format!("{EXPERIMENT_COLUMNS} FROM experiments e {EXPERIMENT_JOINS} WHERE e.id = $1");
        let found = on_pool!(self, pool => {
            sqlx::query_as::<_, ExperimentRow>(AssertSqlSafe(sql.as_str())).bind(id).fetch_optional(pool).await?
        });
        found.ok_or_else(|| StoreError::not_found("experiment", id))?.into_record()
    }

    pub(crate) async fn experiment_model_definition_impl(&self, id: i32) -> StoreResult<Vec<u8>> {
        let found = on_pool!(self, pool => {
            sqlx::query_scalar::<_, Vec<u8>>("SELECT model_definition FROM experiments WHERE id = $1")
                .bind(id)
                .fetch_optional(pool)
                .await?
        });
        found.ok_or_else(|| StoreError::not_found("experiment", id))
    }

    pub(crate) async fn list_experiments_impl(&self, filter: &ExperimentFilter) -> StoreResult<ExperimentPage> {
        let mut args = Args::default();
        let mut cond = Conditions::default();
        if let Some(archived) = filter.archived {
            cond.and(format!("e.archived = {}", args.push(archived)));
        }
        cond.and_in(&mut args, "e.owner_id", &filter.owner_ids);
        cond.and_in(&mut args, "e.state", &filter.states);
        if let Some(name) = &filter.name {
            // No stored name holds a NUL (writes refuse it); binding one would fail on PostgreSQL.
            if name.contains('\0') {
                return Ok(ExperimentPage::default());
            }
            // ASCII case folding on both: SQLite's LIKE already ignores ASCII case (and only
            // ASCII's), so the column is compared as stored (a LOWER per row tripled the cost of
            // the scan); PostgreSQL's LOWER under the "C" collation.
            let pattern = contains_pattern(&name.to_ascii_lowercase());
            let column = if matches!(self.pool, Pool::Sqlite(_)) { "e.name" } else { r#"LOWER(e.name COLLATE "C")"# };
            cond.and(format!("{column} LIKE {} ESCAPE '\\'", args.push(pattern)));
        }
        for label in &filter.labels {
            // `labels` is a compact JSON array written by this module: turning `["a","b"]` into
            // `,"a","b",` makes `,"<label>",` match exactly one whole element (inside a JSON
            // string every `"` is escaped, so `,"` only starts an element).
            let pattern = format!("%,{},%", escape_like(&Value::from(label.as_str()).to_string()));
            cond.and(format!("(',' || SUBSTR(e.labels, 2, LENGTH(e.labels) - 2) || ',') LIKE {} ESCAPE '\\'", args.push(pattern)));
        }
        if let Some(project_id) = filter.project_id {
            cond.and(format!("e.project_id = {}", args.push(project_id)));
        }
        let where_sql = cond.sql();
        let count_sql = format!("SELECT COUNT(*) {EXPERIMENT_FROM} WHERE {where_sql}");
        let count_args = args.clone();
        let order = order_clause(filter.sort, direction(filter.order));
        let limit = args.push(filter.limit.unwrap_or(i64::MAX));
        let offset = args.push(filter.offset);
        // The page's ids first, then the wide columns and trial counts for those rows only: a deep
        // OFFSET would otherwise build (and on PostgreSQL count trials for) every skipped row.
        // Only the owner sort needs users (every filter is on experiments).
        let owner_join = if filter.sort == ExperimentSort::Owner { "JOIN users u ON u.id = e.owner_id" } else { "" };
        let page_ids =
            format!("SELECT e.id FROM experiments e {owner_join} WHERE {where_sql} ORDER BY {order} LIMIT {limit} OFFSET {offset}");
        let list_sql = match self.pool {
            Pool::Sqlite(_) => {
                format!("{LIST_COLUMNS} FROM ({page_ids}) page JOIN experiments e ON e.id = page.id {EXPERIMENT_JOINS} ORDER BY {order}")
            }
            // An array evaluated once, so the page's rows are read through the primary key: as a
            // join, PostgreSQL's planner hash-joins a scan of every experiment (~5x slower at 10,000).
            Pool::Postgres(_) => {
                format!("{LIST_COLUMNS} FROM experiments e {EXPERIMENT_JOINS} WHERE e.id = ANY(ARRAY({page_ids})) ORDER BY {order}")
            }
        };
        // Page and count on two connections at once: the count is a scan, the page is not.
        let (rows, total): (Vec<ExperimentRow>, i64) = on_pool!(self, pool => {
            tokio::try_join!(
                bind_args!(sqlx::query_as::<_, ExperimentRow>(AssertSqlSafe(list_sql.as_str())), args).fetch_all(pool),
                bind_args!(sqlx::query_scalar(AssertSqlSafe(count_sql.as_str())), count_args).fetch_one(pool),
            )?
        });
        let experiments = rows.into_iter().map(ExperimentRow::into_record).collect::<StoreResult<_>>()?;
        Ok(ExperimentPage { experiments, total })
    }

    pub(crate) async fn set_experiment_archived_impl(&self, id: i32, archived: bool) -> StoreResult<()> {
        let done = on_pool!(self, pool => {
            sqlx::query("UPDATE experiments SET archived = $2 WHERE id = $1").bind(id).bind(archived).execute(pool).await?.rows_affected()
        });
        expect_row(done, "experiment", id)
    }

    pub(crate) async fn set_experiment_labels_impl(&self, id: i32, labels: &[String]) -> StoreResult<()> {
        reject_nul_labels(labels)?;
        let text = labels_text(labels);
        let done = on_pool!(self, pool => {
            sqlx::query("UPDATE experiments SET labels = $2 WHERE id = $1").bind(id).bind(text).execute(pool).await?.rows_affected()
        });
        expect_row(done, "experiment", id)
    }

    pub(crate) async fn patch_experiment_impl(&self, id: i32, patch: &ExperimentPatch) -> StoreResult<ExperimentRecord> {
        for (field, value) in [("name", &patch.name), ("description", &patch.description), ("notes", &patch.notes)] {
            if let Some(value) = value {
                StoreError::reject_nul(field, value)?;
            }
        }
        let done = on_pool!(self, pool => {
            sqlx::query(
                "UPDATE experiments SET name = COALESCE($2, name), description = COALESCE($3, description), \
                 notes = COALESCE($4, notes) WHERE id = $1",
            )
            .bind(id)
            .bind(&patch.name)
            .bind(&patch.description)
            .bind(&patch.notes)
            .execute(pool)
            .await?
            .rows_affected()
        });
        expect_row(done, "experiment", id)?;
        self.experiment_by_id_impl(id).await
    }

    pub(crate) async fn save_searcher_snapshot_impl(&self, id: i32, text: &str) -> StoreResult<()> {
        let done = on_pool!(self, pool => {
            sqlx::query("UPDATE experiments SET searcher_snapshot = $2 WHERE id = $1").bind(id).bind(text).execute(pool).await?.rows_affected()
        });
        expect_row(done, "experiment", id)
    }

    pub(crate) async fn searcher_snapshot_impl(&self, id: i32) -> StoreResult<Option<Value>> {
        let found = on_pool!(self, pool => {
            sqlx::query_scalar::<_, Option<String>>("SELECT searcher_snapshot FROM experiments WHERE id = $1")
                .bind(id)
                .fetch_optional(pool)
                .await?
        });
        let text = found.ok_or_else(|| StoreError::not_found("experiment", id))?;
        text.map(|t| parse_json("searcher_snapshot", &t)).transpose()
    }

    pub(crate) async fn set_experiment_progress_impl(&self, id: i32, progress: Option<f64>) -> StoreResult<()> {
        let done = on_pool!(self, pool => {
            sqlx::query("UPDATE experiments SET progress = $2 WHERE id = $1").bind(id).bind(progress).execute(pool).await?.rows_affected()
        });
        expect_row(done, "experiment", id)
    }

    pub(crate) async fn set_experiment_end_reason_impl(&self, id: i32, reason: Option<&str>) -> StoreResult<()> {
        let done = on_pool!(self, pool => {
            sqlx::query("UPDATE experiments SET end_reason = $2 WHERE id = $1").bind(id).bind(reason).execute(pool).await?.rows_affected()
        });
        expect_row(done, "experiment", id)
    }

    pub(crate) async fn delete_experiment_impl(&self, id: i32) -> StoreResult<()> {
        const TRIAL_TASKS: &str = "SELECT task_id FROM trials WHERE experiment_id = $1";
        let delete_logs = format!("DELETE FROM task_logs WHERE task_id IN ({TRIAL_TASKS})");
        let delete_tasks = format!("DELETE FROM tasks WHERE task_id IN ({TRIAL_TASKS})");
        let done = on_pool!(self, pool => {
            let mut tx = super::begin_write!(self, pool);
            sqlx::query(AssertSqlSafe(delete_logs.as_str())).bind(id).execute(&mut *tx).await?;
            sqlx::query(AssertSqlSafe(delete_tasks.as_str())).bind(id).execute(&mut *tx).await?;
            // Trials, metrics and checkpoints follow by ON DELETE CASCADE.
            let done = sqlx::query("DELETE FROM experiments WHERE id = $1").bind(id).execute(&mut *tx).await?.rows_affected();
            tx.commit().await?;
            done
        });
        expect_row(done, "experiment", id)
    }
}

fn order_clause(sort: ExperimentSort, dir: &str) -> String {
    let (column, nullable) = match sort {
        ExperimentSort::Id => ("e.id", false),
        ExperimentSort::Name => ("LOWER(e.name)", false),
        ExperimentSort::StartTime => ("e.start_time", false),
        ExperimentSort::EndTime => ("e.end_time", true),
        ExperimentSort::State => ("e.state", false),
        ExperimentSort::Progress => ("e.progress", true),
        ExperimentSort::Owner => ("LOWER(u.username)", false),
    };
    // Explicit NULLS LAST where a column can be null: the dialects' defaults differ. Left off
    // NOT NULL columns so the planners can walk the sort indexes. id breaks ties so pages never
    // overlap.
    let nulls = if nullable { " NULLS LAST" } else { "" };
    format!("{column} {dir}{nulls}, e.id {dir}")
}

/// Labels are stored as JSON (where a NUL would be escaped), but refused like every other text
/// so that a label reads back, filters and prints the same everywhere.
fn reject_nul_labels(labels: &[String]) -> StoreResult<()> {
    labels.iter().try_for_each(|label| StoreError::reject_nul("label", label))
}
