//! Task-log triggers (`TRIGGER_TYPE_TASK_LOG`) matched against log lines as they are ingested.
//! The patterns are compiled once into one `RegexSet` and cached; webhook changes mark the cache
//! stale and the next batch reloads it. With no task-log trigger a batch costs one atomic load.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use regex::RegexSet;
use resolute_store::{NewLogEvent, Store, WebhookTriggerRecord};

/// A pattern longer than this is refused at create time (and never compiled).
pub const MAX_PATTERN_BYTES: usize = 4096;
/// Compiled size limit per pattern, so a pathological one cannot take the master's memory.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// The `regex` of a task-log condition, compiled, or why it cannot be.
pub fn compile_pattern(pattern: &str) -> Result<regex::Regex, String> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(format!("is {} bytes; the limit is {MAX_PATTERN_BYTES}", pattern.len()));
    }
    regex::RegexBuilder::new(pattern).size_limit(REGEX_SIZE_LIMIT).build().map_err(|e| e.to_string())
}

#[derive(Default)]
struct Compiled {
    set: Option<RegexSet>,
    /// (trigger id, webhook id), index-aligned with `set`'s patterns.
    triggers: Vec<(i32, i32)>,
}

/// One per master, shared by the webhook service (which marks it stale) and the log writers.
#[derive(Clone)]
pub struct LogTriggerCache {
    store: Arc<dyn Store>,
    compiled: Arc<RwLock<Arc<Compiled>>>,
    /// Set when webhooks changed; the next batch reloads.
    stale: Arc<AtomicBool>,
    /// Whether any task-log trigger exists (read without the lock).
    any: Arc<AtomicBool>,
}

/// One stored line to match: the task, the agent that ran it, the text.
pub struct LineRef<'a> {
    pub task_id: &'a str,
    pub node_name: &'a str,
    pub log: &'a str,
}

impl LogTriggerCache {
    pub fn new(store: Arc<dyn Store>) -> Self {
        LogTriggerCache {
            store,
            compiled: Default::default(),
            // Loaded on first use.
            stale: Arc::new(AtomicBool::new(true)),
            any: Arc::new(AtomicBool::new(true)),
        }
    }

    /// Webhooks changed: reload before matching the next batch.
    pub fn invalidate(&self) {
        self.stale.store(true, Ordering::Release);
        self.any.store(true, Ordering::Release);
    }

    async fn current(&self) -> Arc<Compiled> {
        if self.stale.swap(false, Ordering::AcqRel) {
            match self.store.task_log_triggers().await {
                Ok(triggers) => {
                    let compiled = Arc::new(compile(&triggers));
                    self.any.store(!compiled.triggers.is_empty(), Ordering::Release);
                    *self.compiled.write().unwrap_or_else(|e| e.into_inner()) = compiled;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "loading task-log webhook triggers failed; retrying with the next batch");
                    self.stale.store(true, Ordering::Release);
                }
            }
        }
        self.compiled.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The events the lines fire: at most one per (trigger, task) in this call (the store keeps
    /// it to one ever).
    pub async fn match_lines<'a>(&self, lines: impl Iterator<Item = LineRef<'a>>) -> Vec<NewLogEvent> {
        if !self.any.load(Ordering::Acquire) {
            return Vec::new();
        }
        let compiled = self.current().await;
        let Some(set) = &compiled.set else {
            return Vec::new();
        };
        let mut seen = BTreeSet::new();
        let mut events = Vec::new();
        for line in lines {
            for index in set.matches(line.log).iter() {
                let (trigger_id, webhook_id) = compiled.triggers[index];
                if seen.insert((trigger_id, line.task_id.to_owned())) {
                    events.push(NewLogEvent {
                        event_uuid: uuid::Uuid::new_v4().to_string(),
                        webhook_id,
                        trigger_id,
                        task_id: line.task_id.to_owned(),
                        node_name: line.node_name.to_owned(),
                        log_line: line.log.trim_end().to_owned(),
                    });
                }
            }
        }
        events
    }

    /// Matches, then queues what matched (after the lines were stored). Failures are logged:
    /// log ingestion never fails because of a webhook.
    pub async fn queue_matches<'a>(&self, lines: impl Iterator<Item = LineRef<'a>>) {
        let events = self.match_lines(lines).await;
        if events.is_empty() {
            return;
        }
        if let Err(e) = self.store.enqueue_log_events(&events).await {
            tracing::warn!(error = %e, events = events.len(), "queuing task-log webhook events failed");
        }
    }
}

fn compile(triggers: &[WebhookTriggerRecord]) -> Compiled {
    let mut patterns = Vec::new();
    let mut ids = Vec::new();
    for t in triggers {
        let Some(pattern) = t.condition.get("regex").and_then(|r| r.as_str()) else { continue };
        // Patterns were checked at create time; one that no longer compiles is skipped, not fatal.
        if compile_pattern(pattern).is_err() {
            tracing::warn!(trigger = t.id, "task-log webhook pattern does not compile; skipped");
            continue;
        }
        patterns.push(pattern.to_owned());
        ids.push((t.id, t.webhook_id));
    }
    if patterns.is_empty() {
        return Compiled::default();
    }
    match regex::RegexSetBuilder::new(&patterns).size_limit(REGEX_SIZE_LIMIT * patterns.len().max(1)).build() {
        Ok(set) => Compiled { set: Some(set), triggers: ids },
        Err(e) => {
            tracing::warn!(error = %e, "task-log webhook patterns do not compile together; none are matched");
            Compiled::default()
        }
    }
}
