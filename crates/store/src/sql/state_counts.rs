//! Counts for the cluster-state metrics (`/prom/det-state-metrics`): experiments and trials by
//! state, open tasks by type — three grouped scans, read when Prometheus scrapes.

use super::{SqlStore, on_pool};
use crate::cluster_store::StateCounts;
use crate::error::StoreResult;

const EXPERIMENTS: &str = "SELECT state, COUNT(*) AS count FROM experiments GROUP BY state ORDER BY state";
const TRIALS: &str = "SELECT state, COUNT(*) AS count FROM trials GROUP BY state ORDER BY state";
const OPEN_TASKS: &str =
    "SELECT task_type AS state, COUNT(*) AS count FROM tasks WHERE end_time IS NULL GROUP BY task_type ORDER BY task_type";

impl SqlStore {
    pub(crate) async fn state_counts_impl(&self) -> StoreResult<StateCounts> {
        Ok(on_pool!(self, pool => StateCounts {
            experiments: sqlx::query_as(EXPERIMENTS).fetch_all(pool).await?,
            trials: sqlx::query_as(TRIALS).fetch_all(pool).await?,
            open_tasks: sqlx::query_as(OPEN_TASKS).fetch_all(pool).await?,
        }))
    }
}
