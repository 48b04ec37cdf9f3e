//! Parsed `summary_metrics` of the trials metrics were last written for, so the batch path does
//! not parse the same JSON again on every batch. An entry is used only when the text the
//! database returns (under the trial's lock) is exactly the text it was made from: any other
//! write (an archive's recompute, another process) changes the text, and the entry is ignored.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;

/// Bounds memory; reaching it simply starts over (a cold cache is only slower).
const MAX_ENTRIES: usize = 10_000;

#[derive(Default)]
pub(crate) struct SummaryCache {
    entries: Mutex<HashMap<i32, (String, Value)>>,
}

impl SummaryCache {
    /// The parsed summary if `text` is what was cached for the trial; the entry is removed either
    /// way (the caller puts the new summary back once it is committed).
    pub(crate) fn take(&self, trial_id: i32, text: &str) -> Option<Value> {
        let mut entries = self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (cached, value) = entries.remove(&trial_id)?;
        (cached == text).then_some(value)
    }

    /// Remembers committed summaries: `text` must be `value` serialised.
    pub(crate) fn put_all(&self, summaries: impl IntoIterator<Item = (i32, String, Value)>) {
        let mut entries = self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        for (trial_id, text, value) in summaries {
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
            entries.insert(trial_id, (text, value));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_entry_is_used_only_for_its_own_text() {
        let cache = SummaryCache::default();
        let value = json!({"training": {"loss": {"count": 1}}});
        cache.put_all([(1, value.to_string(), value.clone())]);
        assert_eq!(cache.take(1, "{}"), None, "another writer changed it");
        assert_eq!(cache.take(1, &value.to_string()), None, "taken (and dropped) above");
        cache.put_all([(1, value.to_string(), value.clone())]);
        assert_eq!(cache.take(1, &value.to_string()), Some(value));
        assert_eq!(cache.take(2, "{}"), None);
    }
}
