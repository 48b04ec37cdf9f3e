//! A trial's workloads and keyset pages of its reports, cut to a page in SQL (and the narrow
//! aggregates an experiment's describe needs instead of whole rows): the order and the
//! window are computed over narrow rows (ids, steps, times; a metric value only when sorting by
//! one), then only the page's rows are read whole and decoded.

use std::collections::HashMap;

use sqlx::AssertSqlSafe;

use super::args::{Args, bind_args};
use super::checkpoints::{CHECKPOINT_COLUMNS, CheckpointRow};
use super::metrics::{METRIC_COLUMNS, MetricRow};
use super::{Pool, SqlStore, on_pool};
use crate::error::StoreResult;
use crate::model_metrics::{MetricRecord, VALIDATION_GROUP};
use crate::model_workloads::{MetricPageQuery, WorkloadFilter, WorkloadPage, WorkloadRecord};

/// Bound ids per `IN (...)` list when reading the page's rows whole.
const IDS_PER_STATEMENT: usize = 200;

/// One row of the narrow ordered list: a metric report (by id) or a checkpoint (by uuid).
#[derive(sqlx::FromRow)]
struct Slot {
    metric_id: Option<i64>,
    uuid: Option<String>,
}

impl SqlStore {
    pub(crate) async fn experiment_trial_ids_impl(&self, experiment_id: i32) -> StoreResult<Vec<i32>> {
        const SQL: &str = "SELECT id FROM trials WHERE experiment_id = $1 ORDER BY id";
        Ok(on_pool!(self, pool => sqlx::query_scalar(SQL).bind(experiment_id).fetch_all(pool).await?))
    }

    pub(crate) async fn checkpoint_totals_impl(&self, experiment_id: i32, state: &str) -> StoreResult<(i64, i64)> {
        // SUM of BIGINT is NUMERIC on PostgreSQL: cast back for one type on both backends.
        const SQL: &str =
            "SELECT COUNT(*), CAST(COALESCE(SUM(size), 0) AS BIGINT) FROM checkpoints WHERE experiment_id = $1 AND state = $2";
        Ok(on_pool!(self, pool => sqlx::query_as(SQL).bind(experiment_id).bind(state).fetch_one(pool).await?))
    }

    pub(crate) async fn metrics_page_impl(&self, q: &MetricPageQuery) -> StoreResult<Vec<MetricRecord>> {
        if q.limit <= 0 {
            return Ok(Vec::new());
        }
        let (after_steps, after_id) = q.after.unwrap_or((i64::MIN, i64::MIN));
        let sql = format!(
            "SELECT {METRIC_COLUMNS} FROM metrics WHERE trial_id = $1 AND archived = FALSE \
             AND ($2 IS NULL OR metric_group = $2) AND ($3 IS NULL OR steps_completed = $3) \
             AND (steps_completed > $4 OR (steps_completed = $4 AND id > $5)) \
             ORDER BY steps_completed, id LIMIT $6"
        );
        let rows = on_pool!(self, pool => {
            sqlx::query_as::<_, MetricRow>(AssertSqlSafe(sql.as_str()))
                .bind(q.trial_id)
                .bind(q.group.as_deref())
                .bind(q.steps_completed)
                .bind(after_steps)
                .bind(after_id)
                .bind(q.limit)
                .fetch_all(pool)
                .await?
        });
        self.decode_metrics(rows)
    }

    pub(crate) async fn trial_workloads_impl(&self, trial_id: i32, f: &WorkloadFilter) -> StoreResult<WorkloadPage> {
        let mut args = Args::default();
        let trial = args.push(trial_id);
        let metrics_where = if f.groups.is_empty() {
            "FALSE".to_owned()
        } else {
            format!("m.trial_id = {trial} AND m.archived = FALSE AND m.metric_group IN ({})", args.push_list(f.groups.iter()))
        };
        let checkpoints_where = match (f.include_checkpoints, &f.skip_checkpoint_state) {
            (false, _) => "FALSE".to_owned(),
            (true, None) => format!("c.trial_id = {trial}"),
            (true, Some(state)) => format!("c.trial_id = {trial} AND c.state <> {}", args.push(state.as_str())),
        };
        let count_sql = format!(
            "SELECT (SELECT COUNT(*) FROM metrics m WHERE {metrics_where}) + (SELECT COUNT(*) FROM checkpoints c WHERE {checkpoints_where})"
        );
        let count_args = args.clone();
        let metric = f.sort_metric.as_deref().filter(|m| !m.is_empty());
        let value = match metric {
            None => "CAST(NULL AS DOUBLE PRECISION)".to_owned(),
            Some(name) => {
                let (group, name) = (args.push(f.sort_group.as_str()), args.push(name));
                let number = match self.pool {
                    // Only numbers sort; any key, whatever characters it holds.
                    Pool::Sqlite(_) => format!(
                        "(SELECT j.value FROM json_each(m.body, '$.avgMetrics') j WHERE j.key = {name} AND j.type IN ('integer', 'real'))"
                    ),
                    Pool::Postgres(_) => format!(
                        "CASE WHEN jsonb_typeof(m.body::jsonb -> 'avgMetrics' -> {name}) = 'number' \
                         THEN (m.body::jsonb -> 'avgMetrics' ->> {name})::DOUBLE PRECISION END"
                    ),
                };
                format!("CASE WHEN m.metric_group = {group} THEN {number} END")
            }
        };
        let dir = if f.descending { "DESC" } else { "ASC" };
        let primary = if metric.is_some() { format!("w.v {dir} NULLS LAST, w.steps") } else { format!("w.steps {dir}, w.steps") };
        let limit = args.push(f.limit.unwrap_or(i64::MAX));
        let offset = args.push(f.offset.max(0));
        let validation = args.push(VALIDATION_GROUP);
        let page_sql = format!(
            "SELECT w.metric_id, w.uuid FROM (\
               SELECT CASE WHEN m.metric_group = {validation} THEN 1 ELSE 0 END AS rank, m.id AS metric_id, \
                 CAST(NULL AS TEXT) AS uuid, m.steps_completed AS steps, m.report_time AS at, {value} AS v \
               FROM metrics m WHERE {metrics_where} \
               UNION ALL \
               SELECT 2, CAST(NULL AS BIGINT), c.uuid, c.steps_completed, c.report_time, CAST(NULL AS DOUBLE PRECISION) \
               FROM checkpoints c WHERE {checkpoints_where}\
             ) w ORDER BY {primary}, w.rank, w.at, w.metric_id, w.uuid LIMIT {limit} OFFSET {offset}"
        );
        let (slots, total): (Vec<Slot>, i64) = on_pool!(self, pool => {
            tokio::try_join!(
                bind_args!(sqlx::query_as::<_, Slot>(AssertSqlSafe(page_sql.as_str())), args).fetch_all(pool),
                bind_args!(sqlx::query_scalar(AssertSqlSafe(count_sql.as_str())), count_args).fetch_one(pool),
            )?
        });
        let items = self.whole_workloads(slots).await?;
        Ok(WorkloadPage { items, total })
    }

    /// The page's rows read whole, in the page's order.
    async fn whole_workloads(&self, slots: Vec<Slot>) -> StoreResult<Vec<WorkloadRecord>> {
        let ids: Vec<i64> = slots.iter().filter_map(|s| s.metric_id).collect();
        let uuids: Vec<String> = slots.iter().filter_map(|s| s.uuid.clone()).collect();
        let mut metrics: HashMap<i64, MetricRecord> = HashMap::new();
        let mut checkpoints = HashMap::new();
        // In statements of bounded size: a caller may ask for a long page.
        for ids in ids.chunks(IDS_PER_STATEMENT) {
            let mut args = Args::default();
            let sql = format!("SELECT {METRIC_COLUMNS} FROM metrics WHERE id IN ({})", args.push_list(ids.iter().copied()));
            let rows = on_pool!(self, pool => {
                bind_args!(sqlx::query_as::<_, MetricRow>(AssertSqlSafe(sql.as_str())), args).fetch_all(pool).await?
            });
            metrics.extend(self.decode_metrics(rows)?.into_iter().map(|m| (m.id, m)));
        }
        for uuids in uuids.chunks(IDS_PER_STATEMENT) {
            let mut args = Args::default();
            let sql = format!("SELECT {CHECKPOINT_COLUMNS} FROM checkpoints WHERE uuid IN ({})", args.push_list(uuids.iter()));
            let rows = on_pool!(self, pool => {
                bind_args!(sqlx::query_as::<_, CheckpointRow>(AssertSqlSafe(sql.as_str())), args).fetch_all(pool).await?
            });
            for row in rows {
                let c = row.into_record()?;
                checkpoints.insert(c.uuid.clone(), c);
            }
        }
        // A row deleted between the two reads (an experiment deleted meanwhile) is left out.
        let items = slots
            .into_iter()
            .filter_map(|s| match (s.metric_id, s.uuid) {
                (Some(id), _) => metrics.remove(&id).map(WorkloadRecord::Metric),
                (None, Some(uuid)) => checkpoints.remove(&uuid).map(WorkloadRecord::Checkpoint),
                (None, None) => None,
            })
            .collect();
        Ok(items)
    }
}
