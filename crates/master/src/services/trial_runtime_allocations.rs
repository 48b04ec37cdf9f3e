//! What a running allocation asks and tells: preemption (long poll, acknowledgement, request),
//! readiness, rendezvous and all-gather, hardware and proxy reports, and its log lines.

use std::time::Duration;

use chrono::{DateTime, NaiveDateTime, Utc};
use resolute_store::{AllocationPatch, LOG_LEVELS, NewLogLine, db_now};
use serde_json::Value;

use super::trial_runtime::TrialRuntimeService;
use super::trial_runtime_access::{Access, RuntimeCaller};
use crate::cluster::ClusterEvent;
use crate::error::{ApiError, ApiResult};

/// The longest a preemption long poll waits (the harness asks for 60 s with a 70 s HTTP timeout).
pub const MAX_PREEMPTION_WAIT: Duration = Duration::from_secs(60);

/// The longest a rendezvous waits for the rest of its gang (upstream: 10 minutes).
pub const MAX_RENDEZVOUS_WAIT: Duration = Duration::from_secs(600);

/// Port the harness's rendezvous listens on in each container (upstream's first of 1734..1765).
pub const RENDEZVOUS_PORT: u16 = 1734;

/// One shipped log line.
#[derive(Clone, Debug)]
pub struct LogLineIn {
    pub task_id: String,
    pub allocation_id: Option<String>,
    pub agent_id: Option<String>,
    pub container_id: Option<String>,
    pub rank_id: Option<i32>,
    pub timestamp: Option<String>,
    pub level: Option<String>,
    pub log: String,
    pub source: Option<String>,
    pub stdtype: Option<String>,
}

/// Where the allocation's containers meet: addresses by rank, this container's rank, slots each.
#[derive(Clone, Debug, PartialEq)]
pub struct Rendezvous {
    pub addresses: Vec<String>,
    pub rank: i32,
    pub slots: Vec<i32>,
}

impl TrialRuntimeService {
    /// Whether the allocation should checkpoint and exit, waiting up to `timeout_seconds` (capped)
    /// for the signal.
    pub async fn preemption(&self, caller: &RuntimeCaller, allocation_id: &str, timeout_seconds: i64) -> ApiResult<bool> {
        let allocation = self.allocation_for(caller, allocation_id, Access::Read).await?;
        if allocation.end_time.is_some() {
            // An ended allocation has nothing left to run.
            return Ok(true);
        }
        let wait = Duration::from_secs(u64::try_from(timeout_seconds).unwrap_or(0)).min(MAX_PREEMPTION_WAIT);
        Ok(self.cluster.wait_for_preemption(&allocation.allocation_id, wait).await)
    }

    /// The task will exit because it was preempted: exit 0 must not read as "done".
    pub async fn acknowledge_preemption(&self, caller: &RuntimeCaller, allocation_id: &str) -> ApiResult<()> {
        let allocation = self.allocation_for(caller, allocation_id, Access::Write).await?;
        self.cluster.notify(ClusterEvent::PreemptionAcknowledged { allocation_id: allocation.allocation_id });
        Ok(())
    }

    /// The task asks to be preempted gracefully (e.g. a scheduler's SIGTERM reached it first).
    pub async fn request_preemption(&self, caller: &RuntimeCaller, allocation_id: &str) -> ApiResult<()> {
        let allocation = self.allocation_for(caller, allocation_id, Access::Write).await?;
        self.cluster.notify(ClusterEvent::PreemptionRequested { allocation_id: allocation.allocation_id });
        Ok(())
    }

    /// The task's service is up (notebooks, TensorBoards); stored on the allocation.
    pub async fn mark_ready(&self, caller: &RuntimeCaller, allocation_id: &str) -> ApiResult<()> {
        let allocation = self.allocation_for(caller, allocation_id, Access::Write).await?;
        let patch = AllocationPatch { is_ready: Some(true), ..Default::default() };
        self.store.update_allocation(&allocation.allocation_id, &patch).await?;
        Ok(())
    }

    /// The task is waiting on something outside it; accepted (nothing is stored for it yet).
    pub async fn mark_waiting(&self, caller: &RuntimeCaller, allocation_id: &str) -> ApiResult<()> {
        self.allocation_for(caller, allocation_id, Access::Write).await?;
        Ok(())
    }

    /// Hardware a container sees (logged: not stored yet) and proxy addresses (only meaningful on
    /// Kubernetes and Slurm).
    pub async fn note_allocation_report(&self, caller: &RuntimeCaller, allocation_id: &str, what: &str, detail: &Value) -> ApiResult<()> {
        let allocation = self.allocation_for(caller, allocation_id, Access::Write).await?;
        tracing::debug!(allocation = %allocation.allocation_id, %what, %detail, "allocation report");
        Ok(())
    }

    /// Rendezvous: every container's address (rendezvous port) in rank order, the asking
    /// container's rank, and each one's slots. As upstream's, it blocks until every process of
    /// the gang has started (its agent reported it running), up to [`MAX_RENDEZVOUS_WAIT`]. A
    /// container started without a rendezvous (or an allocation not placed yet) is alone, on
    /// loopback, and is answered at once.
    pub async fn rendezvous(&self, caller: &RuntimeCaller, allocation_id: &str, resources_id: &str) -> ApiResult<Rendezvous> {
        let allocation = self.allocation_for(caller, allocation_id, Access::Read).await?;
        let mut containers = self.cluster.view().containers_of(&allocation.allocation_id);
        if containers.is_empty() && allocation.slots > 1 && allocation.end_time.is_none() {
            // A process may ask before the loop has published the processes it just started: a
            // multi-slot allocation may be a gang, so wait for them to show.
            let id = allocation.allocation_id.as_str();
            let shown = self.cluster.wait_view(MAX_RENDEZVOUS_WAIT, |view| Some(view.containers_of(id)).filter(|c| !c.is_empty())).await;
            containers = shown.unwrap_or_default();
        }
        if containers.is_empty() {
            return Ok(Rendezvous { addresses: vec![format!("127.0.0.1:{RENDEZVOUS_PORT}")], rank: 0, slots: vec![allocation.slots] });
        }
        let Some(own) = containers.iter().find(|c| c.id == resources_id) else {
            return Err(ApiError::not_found(format!("allocation {} has no resources {resources_id}", allocation.allocation_id)));
        };
        let Some(r) = &own.rendezvous else {
            return Ok(Rendezvous {
                addresses: vec![format!("127.0.0.1:{RENDEZVOUS_PORT}")],
                rank: 0,
                slots: vec![i32::try_from(own.slot_ids.len()).unwrap_or(i32::MAX)],
            });
        };
        let ranks = r.container_addrs.len();
        let id = allocation.allocation_id.as_str();
        let started = self.cluster.wait_view(MAX_RENDEZVOUS_WAIT, |view| every_rank_started(&view.containers_of(id), ranks)).await;
        match started {
            Some(true) => Ok(Rendezvous {
                addresses: r.container_addrs.iter().map(|a| format!("{a}:{RENDEZVOUS_PORT}")).collect(),
                rank: i32::try_from(r.container_rank).unwrap_or(i32::MAX),
                slots: r.container_slot_counts.iter().map(|s| i32::try_from(*s).unwrap_or(i32::MAX)).collect(),
            }),
            Some(false) => Err(ApiError::new(
                resolute_api::error::ErrorCode::FailedPrecondition,
                format!("allocation {id} ended before all {ranks} of its processes started; there is nobody to meet"),
            )),
            None => Err(ApiError::new(
                resolute_api::error::ErrorCode::DeadlineExceeded,
                format!("rendezvous of allocation {id}: not all {ranks} processes started within {} s", MAX_RENDEZVOUS_WAIT.as_secs()),
            )),
        }
    }

    /// All-gather among the allocation's processes. Our allocations run one container, so only a
    /// single participant is supported: it gets its own data back.
    pub async fn all_gather(
        &self,
        caller: &RuntimeCaller,
        allocation_id: &str,
        num_peers: Option<i32>,
        data: Value,
    ) -> ApiResult<Vec<Value>> {
        let allocation = self.allocation_for(caller, allocation_id, Access::Write).await?;
        match num_peers.unwrap_or(1) {
            1 => Ok(vec![data]),
            n if n < 1 => Err(ApiError::invalid(format!("numPeers must be at least 1, got {n}"))),
            n => Err(ApiError::unimplemented(format!(
                "all_gather with {n} peers: allocation {} runs a single container; multi-peer all-gather is not supported yet",
                allocation.allocation_id
            ))),
        }
    }

    /// Stores shipped log lines in one batch. A task may ship only its own lines.
    /// Stores the lines (every task checked against the caller first) and returns them as stored.
    pub async fn post_logs(&self, caller: &RuntimeCaller, lines: Vec<LogLineIn>) -> ApiResult<Vec<NewLogLine>> {
        let mut checked_tasks: Vec<String> = Vec::new();
        let mut batch = Vec::with_capacity(lines.len());
        for (i, line) in lines.into_iter().enumerate() {
            if !checked_tasks.contains(&line.task_id) {
                self.task_for(caller, &line.task_id, Access::Write).await?;
                checked_tasks.push(line.task_id.clone());
            }
            if let (Some(own), Some(allocation_id)) = (caller.task(), &line.allocation_id)
                && !allocation_id.is_empty()
                && *allocation_id != own.allocation.allocation_id
            {
                return Err(ApiError::forbidden(format!(
                    "logs[{i}].allocation_id {allocation_id} is not the caller's allocation ({})",
                    own.allocation.allocation_id
                )));
            }
            if let Some(level) = &line.level
                && !LOG_LEVELS.contains(&level.as_str())
            {
                return Err(ApiError::invalid(format!("logs[{i}].level must be one of {}, got {level:?}", LOG_LEVELS.join(", "))));
            }
            let timestamp = match line.timestamp.as_deref().filter(|t| !t.is_empty()) {
                Some(text) => parse_timestamp(text)
                    .ok_or_else(|| ApiError::invalid(format!("logs[{i}].timestamp is not an RFC 3339 timestamp: {text:?}")))?,
                None => db_now(),
            };
            batch.push(NewLogLine {
                task_id: line.task_id,
                allocation_id: line.allocation_id.filter(|a| !a.is_empty()),
                agent_id: line.agent_id.filter(|a| !a.is_empty()),
                container_id: line.container_id.filter(|c| !c.is_empty()),
                rank_id: line.rank_id,
                timestamp,
                level: line.level,
                log: line.log,
                source: line.source,
                stdtype: line.stdtype,
            });
        }
        self.store.insert_logs(&batch).await?;
        Ok(batch)
    }
}

/// RFC 3339 with any offset; Python's offset-less `isoformat()` is read as UTC.
fn parse_timestamp(text: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.with_timezone(&Utc));
    }
    NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f").ok().map(|t| t.and_utc())
}

/// Whether a gang of `ranks` processes can meet: `Some(true)` once every one of `containers` (the
/// allocation's, as the loop last published them) is running, `Some(false)` when they are gone
/// (the allocation ended), `None` while some are still being started.
fn every_rank_started(containers: &[crate::cluster::ContainerView], ranks: usize) -> Option<bool> {
    if containers.is_empty() {
        return Some(false);
    }
    let running =
        containers.iter().filter(|c| c.rendezvous.is_some() && c.state == crate::domain::AllocationState::Running.as_str()).count();
    (running >= ranks).then_some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_from_python_parse() {
        let with_offset = parse_timestamp("2025-03-19T10:05:00.123456+00:00").unwrap();
        assert_eq!(with_offset.to_rfc3339(), "2025-03-19T10:05:00.123456+00:00");
        assert_eq!(parse_timestamp("2025-03-19T12:05:00+02:00").unwrap().to_rfc3339(), "2025-03-19T10:05:00+00:00");
        assert_eq!(parse_timestamp("2025-03-19T10:05:00.5").unwrap().to_rfc3339(), "2025-03-19T10:05:00.500+00:00");
        assert!(parse_timestamp("yesterday").is_none());
    }
}
