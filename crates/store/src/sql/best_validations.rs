//! The best searcher-metric validation of each of a page of experiments, in one query: the
//! experiments list's `bestTrialSearcherMetric` / `bestTrialId` (a single describe reads the same
//! through `list_trials` sorted by `best_validation`). Reads the listed experiments' trials that
//! have a best validation (the `trials.best_validation` column each validation keeps) and picks
//! each experiment's best in the caller's direction.

use std::collections::HashMap;

use sqlx::AssertSqlSafe;

use super::{SqlStore, on_pool};
use crate::error::StoreResult;

/// Whether smaller searcher-metric values are better, per experiment (`searcher.smaller_is_better`).
type BestDirection = (i32, bool);

/// One experiment's best trial and its value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BestTrialValue {
    pub experiment_id: i32,
    pub trial_id: i32,
    pub value: f64,
}

impl SqlStore {
    pub(crate) async fn best_validations_impl(&self, experiments: &[BestDirection]) -> StoreResult<Vec<BestTrialValue>> {
        if experiments.is_empty() {
            return Ok(Vec::new());
        }
        let placeholders: Vec<String> = (1..=experiments.len()).map(|i| format!("${i}")).collect();
        let sql = format!(
            "SELECT experiment_id, id, best_validation FROM trials \
             WHERE best_validation IS NOT NULL AND experiment_id IN ({}) ORDER BY experiment_id, id",
            placeholders.join(", ")
        );
        let rows: Vec<(i32, i32, f64)> = on_pool!(self, pool => {
            // Only numbered placeholders are formatted in; the ids are bound.
            let mut q = sqlx::query_as(AssertSqlSafe(sql.as_str()));
            for (id, _) in experiments {
                q = q.bind(*id);
            }
            q.fetch_all(pool).await?
        });
        let smaller: HashMap<i32, bool> = experiments.iter().copied().collect();
        let mut best: HashMap<i32, BestTrialValue> = HashMap::new();
        for (experiment_id, trial_id, value) in rows {
            if value.is_nan() {
                continue;
            }
            let smaller_is_better = smaller.get(&experiment_id).copied().unwrap_or(true);
            let candidate = BestTrialValue { experiment_id, trial_id, value };
            best.entry(experiment_id)
                .and_modify(|b| {
                    // Ties keep the earlier trial (rows come by ascending id).
                    if (smaller_is_better && value < b.value) || (!smaller_is_better && value > b.value) {
                        *b = candidate;
                    }
                })
                .or_insert(candidate);
        }
        let mut out: Vec<BestTrialValue> = best.into_values().collect();
        out.sort_by_key(|b| b.experiment_id);
        Ok(out)
    }
}
