//! Matching trial logs against their experiment's `log_policies` where the logs are ingested (the
//! agent's log stream and `POST /api/v1/task/logs`). Each task's policies are compiled once into
//! one `RegexSet` and cached by task id; a task without policies (every non-trial task, and most
//! trials) is cached as `None`, so its batches cost one map lookup. A match becomes a
//! `ClusterEvent::LogPolicyFired` for the loop (`cluster/trial/log_policy.rs`), sent before the
//! batch is acknowledged, so before the process's exit reaches the loop.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use regex::RegexSet;
use resolute_expconf::{LogAction, LogPolicy, compile_log_pattern};
use resolute_store::{Store, StoreError};

use crate::cluster::{ClusterEvent, ClusterHandle, FiredLogPolicy};

/// Tasks remembered at most; past this the cache starts over (entries are cheap to rebuild).
const MAX_CACHED_TASKS: usize = 10_000;
/// Compiled size limit for one task's set of patterns.
const SET_SIZE_LIMIT: usize = 8 << 20;

/// One line to match: its task, allocation and agent when known, the text.
pub struct PolicyLine<'a> {
    pub task_id: &'a str,
    pub allocation_id: Option<&'a str>,
    pub node: Option<&'a str>,
    pub log: &'a str,
}

struct TaskPolicies {
    trial_id: i32,
    set: RegexSet,
    /// Index-aligned with `set`: how the log names the policy, and what it does.
    policies: Vec<(String, LogAction)>,
}

/// One per master; cloned into every log writer.
#[derive(Clone)]
pub struct LogPolicyMatcher {
    store: Arc<dyn Store>,
    cluster: ClusterHandle,
    by_task: Arc<Mutex<HashMap<String, Option<Arc<TaskPolicies>>>>>,
}

impl LogPolicyMatcher {
    pub fn new(store: Arc<dyn Store>, cluster: ClusterHandle) -> Self {
        LogPolicyMatcher { store, cluster, by_task: Default::default() }
    }

    /// Matches the lines and tells the loop what fired (once per policy, allocation and node in
    /// this call; the loop keeps each decision once).
    pub async fn match_lines(&self, lines: &[PolicyLine<'_>]) {
        let mut fired = BTreeSet::new();
        if lines.is_empty() {
            return;
        }
        let mut current: Option<(&str, Option<Arc<TaskPolicies>>)> = None;
        for line in lines {
            let policies = match &current {
                Some((task, policies)) if *task == line.task_id => policies.clone(),
                _ => {
                    let policies = self.policies_of(line.task_id).await;
                    current = Some((line.task_id, policies.clone()));
                    policies
                }
            };
            let Some(policies) = policies else { continue };
            let matches = policies.set.matches(line.log);
            if !matches.matched_any() || echoes_config(line.log) {
                continue;
            }
            for index in matches.iter() {
                let key = (policies.trial_id, index, line.allocation_id.map(str::to_owned), line.node.map(str::to_owned));
                if !fired.insert(key) {
                    continue;
                }
                let (policy, action) = &policies.policies[index];
                self.cluster.notify(ClusterEvent::LogPolicyFired {
                    trial_id: policies.trial_id,
                    fired: FiredLogPolicy {
                        policy: policy.clone(),
                        action: *action,
                        allocation_id: line.allocation_id.map(str::to_owned),
                        node: line.node.map(str::to_owned),
                    },
                });
            }
        }
    }

    async fn policies_of(&self, task_id: &str) -> Option<Arc<TaskPolicies>> {
        if let Some(cached) = self.lock().get(task_id) {
            return cached.clone();
        }
        let loaded = match self.load(task_id).await {
            Ok(loaded) => loaded,
            Err(e) => {
                // Not cached: the next batch tries again.
                tracing::warn!(task = task_id, error = %e, "loading the trial's log policies failed");
                return None;
            }
        };
        let mut cache = self.lock();
        if cache.len() >= MAX_CACHED_TASKS {
            cache.clear();
        }
        cache.insert(task_id.to_owned(), loaded.clone());
        loaded
    }

    async fn load(&self, task_id: &str) -> Result<Option<Arc<TaskPolicies>>, StoreError> {
        let trial = match self.store.trial_by_task_id(task_id).await {
            Ok(trial) => trial,
            // Not a trial: commands, notebooks and the rest have no log policies.
            Err(StoreError::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let experiment = self.store.experiment_by_id(trial.experiment_id).await?;
        let policies: Vec<LogPolicy> = experiment
            .config
            .get("log_policies")
            .cloned()
            .and_then(|v| {
                serde_json::from_value(v)
                    .map_err(
                        |e| tracing::warn!(experiment = trial.experiment_id, error = %e, "stored log_policies unreadable; none applied"),
                    )
                    .ok()
            })
            .unwrap_or_default();
        Ok(compile(trial.id, &policies).map(Arc::new))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Option<Arc<TaskPolicies>>>> {
        self.by_task.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The harness logs the whole experiment config when a trial starts ("New trial runner … {config}"),
/// which holds every policy's pattern text: that echo must not fire the policies.
fn echoes_config(line: &str) -> bool {
    line.contains("\"log_policies\": [")
}

/// `"name" (pattern `…`)`, or just the pattern for an unnamed policy.
fn describe(policy: &LogPolicy, pattern: &str) -> String {
    match &policy.name {
        Some(name) => format!("{name:?} (pattern `{pattern}`)"),
        None => format!("(pattern `{pattern}`)"),
    }
}

/// The policies that act (a pattern and an action); `None` when there are none.
fn compile(trial_id: i32, policies: &[LogPolicy]) -> Option<TaskPolicies> {
    let mut patterns = Vec::new();
    let mut acting = Vec::new();
    for policy in policies {
        let (Some(pattern), Some(action)) = (&policy.pattern, policy.action) else { continue };
        // Checked when the experiment was created; one that no longer compiles is skipped.
        if compile_log_pattern(pattern).is_err() {
            continue;
        }
        patterns.push(pattern.clone());
        acting.push((describe(policy, pattern), action));
    }
    if patterns.is_empty() {
        return None;
    }
    match regex::RegexSetBuilder::new(&patterns).size_limit(SET_SIZE_LIMIT).build() {
        Ok(set) => Some(TaskPolicies { trial_id, set, policies: acting }),
        Err(e) => {
            tracing::warn!(trial = trial_id, error = %e, "log policy patterns do not compile together; none applied");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_policies_with_a_pattern_and_an_action_are_matched() {
        let policies = vec![
            LogPolicy { name: Some("oom".into()), pattern: Some("out of memory".into()), action: Some(LogAction::CancelRetries) },
            LogPolicy { name: Some("label only".into()), pattern: Some("x".into()), action: None },
            LogPolicy { name: None, pattern: Some("ECC".into()), action: Some(LogAction::ExcludeNode) },
        ];
        let compiled = compile(7, &policies).unwrap();
        assert_eq!(compiled.policies.len(), 2);
        assert_eq!(compiled.set.matches("CUDA out of memory").iter().collect::<Vec<_>>(), vec![0]);
        assert_eq!(compiled.policies[0].0, "\"oom\" (pattern `out of memory`)");
        assert_eq!(compiled.policies[1], ("(pattern `ECC`)".to_owned(), LogAction::ExcludeNode));
        assert!(compile(7, &policies[1..2]).is_none());
        assert!(echoes_config(r#"New trial runner in (container x) on agent a: {"log_policies": [{"pattern": "out of memory"}]}"#));
        assert!(!echoes_config("RuntimeError: CUDA out of memory"));
    }
}
