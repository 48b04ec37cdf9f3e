//! The job queue as the API shows and changes it (`GET /api/v1/job-queues[-v2]`,
//! `POST /api/v1/job-queues`, and the `resources` of `PATCH /api/v1/experiments/{id}`): the
//! loop's published queue (`cluster/job_queue.rs`) joined with each job's owner from the store
//! (name, user, workspace, submission time), filtered, ordered and paged; changes are validated
//! here and applied by the loop, the single writer.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use resolute_api::pagination::Pagination;
use resolute_scheduler::QueueMove;
use resolute_store::Store;
use serde::Serialize;

use crate::cluster::rm::JobUpdate;
use crate::cluster::{ClusterHandle, JobOwner, JobQueueChange, JobQueueError, QueuedJob};
use crate::domain::TaskType;
use crate::error::{ApiError, ApiResult};
use crate::services::Principal;

/// Upstream's `jobv1State` values a `states` filter may name.
pub const JOB_STATES: [&str; 3] = ["STATE_QUEUED", "STATE_SCHEDULED", "STATE_SCHEDULED_BACKFILLED"];

/// `v1JobSummary`, plus why the job waits (a Resolute addition).
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobSummary {
    pub state: String,
    pub jobs_ahead: i32,
    /// Why it waits, in words (absent while it runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_reason: Option<String>,
}

/// `v1Job`, plus `waitReason` (a Resolute addition; upstream clients ignore it).
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    pub summary: JobSummary,
    #[serde(rename = "type")]
    pub job_type: String,
    pub submission_time: DateTime<Utc>,
    pub username: String,
    pub user_id: i32,
    pub resource_pool: String,
    pub is_preemptible: bool,
    pub priority: u32,
    pub weight: f64,
    pub entity_id: String,
    pub job_id: String,
    pub requested_slots: u32,
    pub allocated_slots: u32,
    pub name: String,
    pub workspace_id: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_reason: Option<String>,
}

/// What `GET /api/v1/job-queues` filters and pages by.
#[derive(Clone, Debug, Default)]
pub struct JobListQuery {
    pub resource_pool: Option<String>,
    pub states: Vec<String>,
    pub descending: bool,
    pub offset: i32,
    pub limit: i32,
}

/// One `v1QueueControl` after parsing: exactly one action.
#[derive(Clone, Debug, PartialEq)]
pub enum QueueAction {
    Priority(i64),
    Weight(f64),
    AheadOf(String),
    BehindOf(String),
    ResourcePool(String),
}

/// The queue as listed: filtered by pool and state, in queue order (or reversed), one page.
pub async fn list(store: &Arc<dyn Store>, cluster: &ClusterHandle, q: &JobListQuery) -> ApiResult<(Vec<Job>, Pagination)> {
    for state in &q.states {
        if !JOB_STATES.contains(&state.as_str()) {
            return Err(ApiError::invalid(format!("states: unknown job state {state:?}; use one of {}", JOB_STATES.join(", "))));
        }
    }
    let mut jobs: Vec<QueuedJob> = cluster
        .view()
        .jobs
        .into_iter()
        .filter(|j| q.resource_pool.as_deref().is_none_or(|p| p.is_empty() || j.queue.pool == p))
        .filter(|j| q.states.is_empty() || q.states.iter().any(|s| s == j.queue.state))
        .collect();
    if q.descending {
        jobs.reverse();
    }
    let total = i32::try_from(jobs.len()).unwrap_or(i32::MAX);
    let page = Pagination::resolve(q.offset, q.limit, total);
    let (start, end) = (usize::try_from(page.start_index).unwrap_or(0), usize::try_from(page.end_index).unwrap_or(0));
    let mut out = Vec::with_capacity(end.saturating_sub(start));
    for job in &jobs[start..end] {
        out.push(job_of(store, job).await?);
    }
    Ok((out, page))
}

/// The queue entry of one job, if it is queued or running (`jobSummary` of an experiment).
pub fn summary_of(cluster: &ClusterHandle, job_id: &str) -> Option<JobSummary> {
    cluster.view().jobs.into_iter().find(|j| j.queue.job_id == job_id).map(|j| JobSummary {
        state: j.queue.state.to_owned(),
        jobs_ahead: j.queue.jobs_ahead,
        wait_reason: j.queue.wait_reason,
    })
}

async fn job_of(store: &Arc<dyn Store>, job: &QueuedJob) -> ApiResult<Job> {
    let q = &job.queue;
    let mut out = Job {
        summary: JobSummary { state: q.state.to_owned(), jobs_ahead: q.jobs_ahead, wait_reason: q.wait_reason.clone() },
        job_type: "TYPE_UNSPECIFIED".to_owned(),
        submission_time: resolute_store::db_now(),
        username: String::new(),
        user_id: 0,
        resource_pool: q.pool.clone(),
        is_preemptible: q.preemptible,
        priority: q.priority,
        weight: q.weight,
        entity_id: String::new(),
        job_id: q.job_id.clone(),
        requested_slots: q.requested_slots,
        allocated_slots: q.allocated_slots,
        name: String::new(),
        workspace_id: 0,
        progress: None,
        wait_reason: q.wait_reason.clone(),
    };
    match &job.owner {
        Some(JobOwner::Experiment(id)) => {
            // Deleted meanwhile: listed with what the queue knows.
            if let Ok(e) = store.experiment_by_id(*id).await {
                out.job_type = "TYPE_EXPERIMENT".to_owned();
                out.submission_time = e.start_time;
                out.username = e.owner_username;
                out.user_id = e.owner_id;
                out.entity_id = e.id.to_string();
                out.name = e.name;
                out.workspace_id = e.workspace_id;
                out.progress = Some(e.progress.unwrap_or(0.0));
            }
        }
        Some(JobOwner::Task { task_id, task_type }) => {
            out.job_type = job_type(*task_type).to_owned();
            out.entity_id = task_id.clone();
            if let Ok(t) = store.command_task_by_id(task_id).await {
                out.submission_time = t.start_time;
                out.username = t.owner_username;
                out.user_id = t.owner_id;
                out.name = t.description;
                out.workspace_id = t.workspace_id;
            }
        }
        None => {}
    }
    Ok(out)
}

fn job_type(task_type: TaskType) -> &'static str {
    match task_type {
        TaskType::Notebook => "TYPE_NOTEBOOK",
        TaskType::Shell => "TYPE_SHELL",
        TaskType::Command => "TYPE_COMMAND",
        TaskType::Tensorboard => "TYPE_TENSORBOARD",
        TaskType::CheckpointGc => "TYPE_CHECKPOINT_GC",
        TaskType::Generic => "TYPE_GENERIC",
        TaskType::Trial => "TYPE_EXPERIMENT",
    }
}

/// Applies parsed `updates` (`(jobId, action)` in request order) through the loop. `field`
/// names where each came from for errors (`updates[0]`).
/// Only the job's owner or an admin may change it (upstream's OSS rule for its experiments and
/// tasks); a job the loop does not list is left to the loop to refuse as not found.
async fn check_owner(store: &Arc<dyn Store>, caller: &Principal, job: Option<&QueuedJob>, field: &str) -> ApiResult<()> {
    if caller.user.admin {
        return Ok(());
    }
    let owner = match job.and_then(|j| j.owner.as_ref()) {
        Some(JobOwner::Experiment(id)) => store.experiment_by_id(*id).await.ok().map(|e| (e.owner_id, e.owner_username)),
        Some(JobOwner::Task { task_id, .. }) => store.command_task_by_id(task_id).await.ok().map(|t| (t.owner_id, t.owner_username)),
        None => None,
    };
    match owner {
        Some((owner_id, owner)) if owner_id != caller.user.id => Err(ApiError::forbidden(format!(
            "{field}.jobId: job {} belongs to {owner}; only its owner or an admin may change it",
            job.map_or("", |j| j.queue.job_id.as_str())
        ))),
        _ => Ok(()),
    }
}

pub async fn update(
    store: &Arc<dyn Store>,
    caller: &Principal,
    cluster: &ClusterHandle,
    updates: Vec<(String, QueueAction)>,
) -> ApiResult<()> {
    let mut changes = Vec::with_capacity(updates.len());
    let view = cluster.view();
    for (index, (job_id, action)) in updates.into_iter().enumerate() {
        let field = format!("updates[{index}]");
        check_owner(store, caller, view.jobs.iter().find(|j| j.queue.job_id == job_id), &field).await?;
        let mut update = JobUpdate::default();
        match action {
            QueueAction::Priority(p) => {
                let p = u32::try_from(p)
                    .ok()
                    .filter(|p| (resolute_scheduler::MIN_PRIORITY..=resolute_scheduler::MAX_PRIORITY).contains(p))
                    .ok_or_else(|| ApiError::invalid(format!("{field}.priority: {p} is out of range; use 1 (highest) to 99 (lowest)")))?;
                update.priority = Some(p);
            }
            QueueAction::Weight(w) => {
                if !(w.is_finite() && w > 0.0) {
                    return Err(ApiError::invalid(format!("{field}.weight: {w} is invalid; use a number greater than 0")));
                }
                update.weight = Some(w);
            }
            QueueAction::AheadOf(anchor) => update.position = Some((QueueMove::AheadOf, anchor)),
            QueueAction::BehindOf(anchor) => update.position = Some((QueueMove::BehindOf, anchor)),
            QueueAction::ResourcePool(pool) => {
                if pool.trim().is_empty() {
                    return Err(ApiError::invalid(format!("{field}.resourcePool: name the resource pool to move job {job_id} to")));
                }
                cluster.resource_pools().check_exists(&format!("{field}.resourcePool"), &pool).map_err(ApiError::invalid)?;
                let current = view.jobs.iter().find(|j| j.queue.job_id == job_id).map(|j| j.queue.pool.clone());
                if current.as_deref() == Some(pool.as_str()) {
                    continue; // already there
                }
                // An experiment's trials move (`cluster/job_pool.rs`); the loop refuses other jobs.
                update.resource_pool = Some(pool);
            }
        }
        changes.push(JobQueueChange { job_id, update });
    }
    if changes.is_empty() {
        return Ok(());
    }
    cluster.change_job_queue(changes).await.map_err(|e| match e {
        JobQueueError::NotFound(m) => ApiError::not_found(m),
        JobQueueError::Invalid(m) => ApiError::invalid(m),
    })
}

/// `PATCH /api/v1/experiments/{id}` `resources` (`det experiment set priority|weight|max-slots`).
pub async fn change_experiment_resources(
    cluster: &ClusterHandle,
    job_id: &str,
    priority: Option<i32>,
    weight: Option<f64>,
    max_slots: Option<Option<i32>>,
) -> ApiResult<()> {
    let mut update = JobUpdate::default();
    if let Some(p) = priority {
        let p = u32::try_from(p)
            .ok()
            .filter(|p| (resolute_scheduler::MIN_PRIORITY..=resolute_scheduler::MAX_PRIORITY).contains(p))
            .ok_or_else(|| ApiError::invalid(format!("resources.priority: {p} is out of range; use 1 (highest) to 99 (lowest)")))?;
        update.priority = Some(p);
    }
    if let Some(w) = weight {
        if !(w.is_finite() && w > 0.0) {
            return Err(ApiError::invalid(format!("resources.weight: {w} is invalid; use a number greater than 0")));
        }
        update.weight = Some(w);
    }
    match max_slots {
        None => {}
        // `det experiment set max-slots ID none`: no cap any more.
        Some(None) => update.max_slots = Some(None),
        Some(Some(m)) => {
            let m = u32::try_from(m)
                .ok()
                .filter(|m| *m > 0)
                .ok_or_else(|| ApiError::invalid(format!("resources.maxSlots: {m} is invalid; use 1 or more, or null for no limit")))?;
            update.max_slots = Some(Some(m));
        }
    }
    if update.is_empty() {
        return Ok(());
    }
    cluster.change_job_queue(vec![JobQueueChange { job_id: job_id.to_owned(), update }]).await.map_err(|e| match e {
        JobQueueError::NotFound(_) => ApiError::new(
            resolute_api::error::ErrorCode::FailedPrecondition,
            "resources: the experiment is not active (finished or not yet started); its resources can no longer change",
        ),
        JobQueueError::Invalid(m) => ApiError::invalid(format!("resources: {m}")),
    })
}
