//! Kills task services nobody has used for their idle timeout: TensorBoards after
//! `tensorboard_timeout` (master.yaml) without proxied traffic, notebooks after their own
//! `idle_timeout` unused as their `notebook_idle_type` defines it (`notebook_activity`). Each kind to watch is an
//! [`IdleRule`] (its timeout, per task, and the setting to name), so notebooks' `idle_timeout`
//! can join with a rule of its own; the decision itself is [`idle_past_timeout`].
//!
//! Idle means no traffic through `/proxy/<id>/` (`ProxyRegistry::last_activity`, which starts when
//! the service is registered, i.e. ready): a task that is not ready yet is never idle.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use resolute_store::{CommandTaskFilter, CommandTaskRecord, NewLogLine, Store, db_now};

use resolute_expconf::parse_task_config;

use super::notebook_activity::{self, NotebookIdleType};
use super::{ProxyRegistry, TaskLogService};
use crate::cluster::{ClusterEvent, ClusterHandle};
use crate::domain::TaskType;

/// How often running services are checked.
pub const CHECK_INTERVAL: Duration = Duration::from_secs(2);

/// A task's idle timeout; `None` never kills it.
pub type IdleTimeout = Arc<dyn Fn(&CommandTaskRecord) -> Option<Duration> + Send + Sync>;

/// One kind of task to watch.
#[derive(Clone)]
pub struct IdleRule {
    pub kind: TaskType,
    /// The setting the kill message names (`tensorboard_timeout`).
    pub setting: &'static str,
    pub timeout: IdleTimeout,
    /// Notebooks: whether it is in use is asked of its JupyterLab (`notebook_activity`), and only
    /// the `activity` idle type counts proxied traffic.
    pub jupyter: bool,
}

impl IdleRule {
    /// TensorBoards: one timeout for all, from master.yaml; 0 s turns the rule off.
    pub fn tensorboards(timeout_s: u32) -> IdleRule {
        let timeout = (timeout_s > 0).then(|| Duration::from_secs(u64::from(timeout_s)));
        IdleRule { kind: TaskType::Tensorboard, setting: "tensorboard_timeout", timeout: Arc::new(move |_| timeout), jupyter: false }
    }

    /// Notebooks: each one's own `idle_timeout` (none: never killed), in use per its
    /// `notebook_idle_type`.
    pub fn notebooks() -> IdleRule {
        let timeout = |task: &CommandTaskRecord| {
            let config = parse_task_config(&task.config, 0, &task.description, false).ok()?;
            config.idle_timeout_seconds.filter(|s| *s > 0).map(Duration::from_secs)
        };
        IdleRule { kind: TaskType::Notebook, setting: "idle_timeout", timeout: Arc::new(timeout), jupyter: true }
    }
}

/// How long a service has been idle, if that is at least `timeout`.
pub fn idle_past_timeout(last_activity: Instant, now: Instant, timeout: Duration) -> Option<Duration> {
    let idle = now.saturating_duration_since(last_activity);
    (idle >= timeout).then_some(idle)
}

/// The kill message written into the task's logs.
pub fn idle_kill_message(description: &str, idle: Duration, setting: &str) -> String {
    format!("{description} was killed after being idle for {} s ({setting})", idle.as_secs())
}

pub struct IdleWatcher {
    store: Arc<dyn Store>,
    task_logs: TaskLogService,
    proxies: ProxyRegistry,
    cluster: ClusterHandle,
    rules: Vec<IdleRule>,
    /// Killed and not yet ended: not killed again.
    killed: HashSet<String>,
    /// Notebooks: when each was last seen in use (or first seen ready).
    in_use_at: HashMap<String, Instant>,
    client: reqwest::Client,
}

impl IdleWatcher {
    pub fn new(
        store: Arc<dyn Store>,
        task_logs: TaskLogService,
        proxies: ProxyRegistry,
        cluster: ClusterHandle,
        rules: Vec<IdleRule>,
    ) -> Self {
        IdleWatcher {
            store,
            task_logs,
            proxies,
            cluster,
            rules,
            killed: HashSet::new(),
            in_use_at: HashMap::new(),
            client: reqwest::Client::new(),
        }
    }

    /// Checks every `interval` until dropped.
    pub async fn run(mut self, interval: Duration) {
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            self.check().await;
        }
    }

    /// One pass over the running tasks of every rule's kind.
    pub async fn check(&mut self) {
        let mut open = HashSet::new();
        for rule in self.rules.clone() {
            let filter = CommandTaskFilter { task_types: vec![rule.kind.as_str().to_owned()], open_only: true, ..Default::default() };
            let tasks = match self.store.list_command_tasks(&filter).await {
                Ok(tasks) => tasks,
                Err(e) => {
                    tracing::warn!(error = %e, kind = %rule.kind, "idle check could not list tasks");
                    continue;
                }
            };
            let now = Instant::now();
            for task in tasks {
                open.insert(task.task_id.clone());
                if self.killed.contains(&task.task_id) {
                    continue;
                }
                let Some(timeout) = (rule.timeout)(&task) else { continue };
                let Some(mut last) = self.proxies.last_activity(&task.task_id) else { continue };
                if rule.jupyter {
                    last = self.notebook_last_in_use(&task, last, now).await;
                }
                if let Some(idle) = idle_past_timeout(last, now, timeout) {
                    self.kill(&task, idle, rule.setting).await;
                }
            }
        }
        self.killed.retain(|id| open.contains(id));
        self.in_use_at.retain(|id, _| open.contains(id));
    }

    /// When the notebook was last in use: now if its JupyterLab says so, else the last time it did
    /// (or when it was first seen ready); with the `activity` type proxied traffic counts too.
    async fn notebook_last_in_use(&mut self, task: &CommandTaskRecord, proxied: Instant, now: Instant) -> Instant {
        let kind = NotebookIdleType::from_config(&task.config);
        let address = self.proxies.lookup(&task.task_id).map(|t| t.address);
        let in_use = match address {
            Some(address) => notebook_activity::probe(&self.client, &address, &task.task_id, kind).await.unwrap_or(false),
            None => false,
        };
        let seen = self.in_use_at.entry(task.task_id.clone()).or_insert(now);
        if in_use {
            *seen = now;
        }
        if kind == NotebookIdleType::Activity { (*seen).max(proxied) } else { *seen }
    }

    async fn kill(&mut self, task: &CommandTaskRecord, idle: Duration, setting: &str) {
        let message = idle_kill_message(&task.description, idle, setting);
        tracing::info!(task = %task.task_id, "{message}");
        let allocation_id = match self.store.task_by_id(&task.task_id).await {
            Ok(t) => t.allocations.last().map(|a| a.allocation_id.clone()),
            Err(_) => None,
        };
        let line = NewLogLine {
            task_id: task.task_id.clone(),
            allocation_id,
            agent_id: None,
            container_id: None,
            rank_id: None,
            timestamp: db_now(),
            level: Some("LOG_LEVEL_INFO".to_owned()),
            log: format!("{message}\n"),
            source: Some("master".to_owned()),
            stdtype: Some("stdout".to_owned()),
        };
        // The kill matters more than its explanation: a failed write is logged, not fatal.
        match self.store.insert_logs(&[line]).await {
            Ok(()) => self.task_logs.notify_new_lines(),
            Err(e) => tracing::warn!(task = %task.task_id, error = %e, "could not store the idle kill message"),
        }
        self.cluster.notify(ClusterEvent::KillTask { task_id: task.task_id.clone() });
        self.killed.insert(task.task_id.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_is_idle_once_its_last_traffic_is_a_timeout_old() {
        let start = Instant::now();
        let timeout = Duration::from_secs(300);
        assert_eq!(idle_past_timeout(start, start + Duration::from_secs(299), timeout), None);
        assert_eq!(idle_past_timeout(start, start + timeout, timeout), Some(timeout));
        assert_eq!(idle_past_timeout(start, start + Duration::from_secs(301), timeout), Some(Duration::from_secs(301)));
        // Traffic recorded after `now` was read is not idleness.
        assert_eq!(idle_past_timeout(start + Duration::from_secs(5), start, timeout), None);
    }

    #[test]
    fn tensorboards_use_the_master_timeout_and_zero_turns_it_off() {
        let record = CommandTaskRecord {
            task_id: "t".into(),
            task_type: "TENSORBOARD".into(),
            job_id: "j".into(),
            owner_id: 1,
            owner_username: "u".into(),
            workspace_id: 1,
            description: "TensorBoard (abcd1234)".into(),
            config: serde_json::json!({}),
            extra: serde_json::json!({}),
            start_time: db_now(),
            end_time: None,
            exit_status: None,
            priority: None,
        };
        assert_eq!((IdleRule::tensorboards(300).timeout)(&record), Some(Duration::from_secs(300)));
        assert_eq!((IdleRule::tensorboards(0).timeout)(&record), None);
        assert_eq!(
            idle_kill_message(&record.description, Duration::from_millis(301_500), "tensorboard_timeout"),
            "TensorBoard (abcd1234) was killed after being idle for 301 s (tensorboard_timeout)"
        );
    }
}
