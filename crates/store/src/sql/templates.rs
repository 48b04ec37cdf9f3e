//! Config templates: named task/experiment configs, created or replaced by name, listed by name.

use sqlx::AssertSqlSafe;

use super::args::{Args, Conditions, bind_args, contains_pattern};
use super::{SqlStore, expect_row, findable, on_pool, parse_json};
use crate::error::{StoreError, StoreResult};
use crate::model_commands::{NewTemplate, TemplateFilter, TemplateRecord};

/// Putting a name again replaces its config and workspace.
const UPSERT: &str = "INSERT INTO templates (name, config, workspace_id) VALUES ($1, $2, $3) \
     ON CONFLICT (name) DO UPDATE SET config = excluded.config, workspace_id = excluded.workspace_id \
     RETURNING name, config, workspace_id";

#[derive(sqlx::FromRow)]
struct TemplateRow {
    name: String,
    config: String,
    workspace_id: i32,
}

impl TemplateRow {
    fn into_record(self) -> StoreResult<TemplateRecord> {
        Ok(TemplateRecord { name: self.name, config: parse_json("config", &self.config)?, workspace_id: self.workspace_id })
    }
}

impl SqlStore {
    pub(crate) async fn put_template_impl(&self, t: NewTemplate) -> StoreResult<TemplateRecord> {
        StoreError::reject_nul("template name", &t.name)?;
        let config = t.config.to_string();
        let put = on_pool!(self, pool => {
            sqlx::query_as::<_, TemplateRow>(UPSERT).bind(&t.name).bind(&config).bind(t.workspace_id).fetch_one(pool).await
        });
        put.map_err(|e| StoreError::from_write_ref("template", &t.name, "workspace", t.workspace_id, e))?.into_record()
    }

    pub(crate) async fn template_by_name_impl(&self, name: &str) -> StoreResult<TemplateRecord> {
        findable("template", name)?;
        let found = on_pool!(self, pool => {
            sqlx::query_as::<_, TemplateRow>("SELECT name, config, workspace_id FROM templates WHERE name = $1")
                .bind(name)
                .fetch_optional(pool)
                .await?
        });
        found.ok_or_else(|| StoreError::not_found("template", name))?.into_record()
    }

    pub(crate) async fn list_templates_impl(&self, filter: &TemplateFilter) -> StoreResult<(Vec<TemplateRecord>, i64)> {
        let mut args = Args::default();
        let mut cond = Conditions::default();
        if let Some(needle) = &filter.name_contains {
            // No stored name holds a NUL; binding one would fail on PostgreSQL.
            if needle.contains('\0') {
                return Ok((Vec::new(), 0));
            }
            // ASCII-only case folding on both: SQLite's LOWER, and PostgreSQL's under the "C"
            // collation the column has.
            let pattern = contains_pattern(&needle.to_ascii_lowercase());
            cond.and(format!("LOWER(name) LIKE {} ESCAPE '\\'", args.push(pattern)));
        }
        cond.and_in(&mut args, "workspace_id", &filter.workspace_ids);
        let where_sql = cond.sql();
        let count_sql = format!("SELECT COUNT(*) FROM templates WHERE {where_sql}");
        let count_args = args.clone();
        let limit = args.push(if filter.limit > 0 { filter.limit } else { i64::MAX });
        let offset = args.push(filter.offset.max(0));
        let page_sql =
            format!("SELECT name, config, workspace_id FROM templates WHERE {where_sql} ORDER BY name LIMIT {limit} OFFSET {offset}");
        let (rows, total): (Vec<TemplateRow>, i64) = on_pool!(self, pool => {
            tokio::try_join!(
                bind_args!(sqlx::query_as::<_, TemplateRow>(AssertSqlSafe(page_sql.as_str())), args).fetch_all(pool),
                bind_args!(sqlx::query_scalar(AssertSqlSafe(count_sql.as_str())), count_args).fetch_one(pool),
            )?
        });
        let templates = rows.into_iter().map(TemplateRow::into_record).collect::<StoreResult<_>>()?;
        Ok((templates, total))
    }

    pub(crate) async fn delete_template_impl(&self, name: &str) -> StoreResult<()> {
        findable("template", name)?;
        let done = on_pool!(self, pool => {
            sqlx::query("DELETE FROM templates WHERE name = $1").bind(name).execute(pool).await?.rows_affected()
        });
        expect_row(done, "template", name)
    }
}
