//! Who reports metrics, remembered per allocation token so a report costs no database read: the
//! token's allocation session, its own trial and the experiment's searcher metric, all fixed for
//! the token's life. Whether the token still works (its allocation open, the report's run
//! current) is checked again in the transaction that writes the report (`metrics_writer`), so an
//! entry never lets an ended allocation's report in; the writer drops the entry when it finds
//! the session gone, and the TTL and size bound only limit memory.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use resolute_store::SearcherMetric;

use super::auth::Principal;

const TTL: Duration = Duration::from_secs(60);
/// Bounds memory; reaching it simply starts over (a cold cache is only slower).
const MAX_ENTRIES: usize = 20_000;

/// A task allowed to report metrics for its own trial.
#[derive(Debug)]
pub struct MetricReporter {
    /// Keys this entry in the cache.
    pub token_hash: String,
    pub session_id: i64,
    pub allocation_id: String,
    pub trial_id: i32,
    /// What validations of this trial are ranked by, if the experiment names a metric.
    pub searcher_metric: Option<SearcherMetric>,
}

/// The caller of the metric-report endpoints.
#[derive(Clone, Debug)]
pub enum MetricsCaller {
    /// Code inside a task, by its allocation token.
    Task(Arc<MetricReporter>),
    /// A user session.
    User(Principal),
}

#[derive(Default)]
pub struct MetricReporterCache {
    entries: RwLock<HashMap<String, (Arc<MetricReporter>, Instant)>>,
}

impl MetricReporterCache {
    pub fn get(&self, token_hash: &str) -> Option<Arc<MetricReporter>> {
        let entries = self.entries.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (reporter, cached_at) = entries.get(token_hash)?;
        (cached_at.elapsed() < TTL).then(|| reporter.clone())
    }

    pub fn insert(&self, reporter: Arc<MetricReporter>) {
        let mut entries = self.entries.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        entries.insert(reporter.token_hash.clone(), (reporter, Instant::now()));
    }

    /// Forgets a token whose allocation ended or whose session was deleted.
    pub fn remove(&self, token_hash: &str) {
        let mut entries = self.entries.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        entries.remove(token_hash);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reporter(token_hash: &str) -> Arc<MetricReporter> {
        Arc::new(MetricReporter {
            token_hash: token_hash.into(),
            session_id: 1,
            allocation_id: "1.a.1".into(),
            trial_id: 1,
            searcher_metric: None,
        })
    }

    #[test]
    fn entries_are_found_until_removed() {
        let cache = MetricReporterCache::default();
        assert!(cache.get("h").is_none());
        cache.insert(reporter("h"));
        assert_eq!(cache.get("h").map(|r| r.trial_id), Some(1));
        cache.remove("h");
        assert!(cache.get("h").is_none());
    }
}
