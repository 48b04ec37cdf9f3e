//! State changes of the entities with a lifecycle (experiments, trials): the same statements, an
//! unconditional write and a compare-and-set (of one row or many), over different tables.

use chrono::{DateTime, Utc};
use sqlx::AssertSqlSafe;

use super::args::{Args, bind_args};
use super::{SqlStore, expect_row, on_pool};
use crate::error::{StoreError, StoreResult};

/// A table whose rows carry `id`, `state` and `end_time`.
#[derive(Clone, Copy)]
pub(crate) enum Lifecycle {
    // Experiments go through `webhook_events::set_experiment_state_queuing`, which also queues
    // the webhook events of the change.
    #[allow(dead_code)]
    Experiment,
    Trial,
}

impl Lifecycle {
    fn table(self) -> &'static str {
        match self {
            Lifecycle::Experiment => "experiments",
            Lifecycle::Trial => "trials",
        }
    }

    fn entity(self) -> &'static str {
        match self {
            Lifecycle::Experiment => "experiment",
            Lifecycle::Trial => "trial",
        }
    }
}

impl SqlStore {
    pub(crate) async fn set_state(&self, of: Lifecycle, id: i32, state: &str, end_time: Option<DateTime<Utc>>) -> StoreResult<()> {
        let sql = format!("UPDATE {} SET state = $2, end_time = $3 WHERE id = $1", of.table());
        let done = on_pool!(self, pool => {
            sqlx::query(AssertSqlSafe(sql.as_str())).bind(id).bind(state).bind(end_time).execute(pool).await?.rows_affected()
        });
        expect_row(done, of.entity(), id)
    }

    /// Moves the row to `to` only if it is in one of `from`; returns whether it moved.
    pub(crate) async fn set_state_if(
        &self,
        of: Lifecycle,
        id: i32,
        from: &[&str],
        to: &str,
        end_time: Option<DateTime<Utc>>,
    ) -> StoreResult<bool> {
        let mut args = Args::default();
        args.push(id);
        args.push(to);
        args.push(end_time);
        // An empty `from` matches nothing (IN () is not SQL).
        let from_sql = if from.is_empty() { "FALSE".to_owned() } else { format!("state IN ({})", args.push_list(from.iter().copied())) };
        let sql = format!("UPDATE {} SET state = $2, end_time = $3 WHERE id = $1 AND {from_sql}", of.table());
        let done = on_pool!(self, pool => {
            bind_args!(sqlx::query(AssertSqlSafe(sql.as_str())), args).execute(pool).await?.rows_affected()
        });
        if done == 0 {
            // Tell "not in a `from` state" apart from "no such row".
            let exists_sql = format!("SELECT id FROM {} WHERE id = $1", of.table());
            let found = on_pool!(self, pool => {
                sqlx::query_scalar::<_, i32>(AssertSqlSafe(exists_sql.as_str())).bind(id).fetch_optional(pool).await?
            });
            found.ok_or_else(|| StoreError::not_found(of.entity(), id))?;
        }
        Ok(done > 0)
    }

    /// Moves every row of `ids` that is in one of `from` to `to` (end time cleared), in chunked
    /// statements rather than one per row; returns how many moved. Rows that are gone or in
    /// another state are left alone.
    pub(crate) async fn set_states_if(&self, of: Lifecycle, ids: &[i32], from: &[&str], to: &str) -> StoreResult<u64> {
        if from.is_empty() {
            return Ok(0);
        }
        let mut moved = 0;
        // Well under the bind limit, and few enough that SQLite's named lookup stays cheap.
        for chunk in ids.chunks(STATES_PER_STATEMENT) {
            let mut args = Args::default();
            args.push(to);
            let from_sql = args.push_list(from.iter().copied());
            let ids_sql = args.push_list(chunk.iter().copied());
            let sql = format!("UPDATE {} SET state = $1, end_time = NULL WHERE id IN ({ids_sql}) AND state IN ({from_sql})", of.table());
            moved += on_pool!(self, pool => {
                bind_args!(sqlx::query(AssertSqlSafe(sql.as_str())), args).execute(pool).await?.rows_affected()
            });
        }
        Ok(moved)
    }
}

/// Rows per statement of [`SqlStore::set_states_if`].
const STATES_PER_STATEMENT: usize = 150;
