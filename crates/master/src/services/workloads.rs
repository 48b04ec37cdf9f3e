//! A trial's workloads: its training and validation reports and its checkpoints in one list,
//! filtered, sorted (by batches or by a metric) and paged, for `det trial describe` and
//! `det experiment describe`.

use std::cmp::Ordering;

use chrono::{DateTime, Utc};
use resolute_store::{CheckpointFilter, CheckpointRecord, MetricRecord, Store, TRAINING_GROUP, VALIDATION_GROUP};

use super::ListPage;
use crate::domain::CheckpointState;
use crate::error::ApiResult;

/// One workload.
#[derive(Clone, Debug, PartialEq)]
pub enum Workload {
    Training(MetricRecord),
    Validation(MetricRecord),
    Checkpoint(CheckpointRecord),
}

impl Workload {
    fn batches(&self) -> i64 {
        match self {
            Workload::Training(m) | Workload::Validation(m) => m.steps_completed,
            Workload::Checkpoint(c) => c.steps_completed,
        }
    }

    /// Training, validation, then the checkpoint taken at the same step.
    fn kind_rank(&self) -> u8 {
        match self {
            Workload::Training(_) => 0,
            Workload::Validation(_) => 1,
            Workload::Checkpoint(_) => 2,
        }
    }

    fn time(&self) -> DateTime<Utc> {
        match self {
            Workload::Training(m) | Workload::Validation(m) => m.report_time,
            Workload::Checkpoint(c) => c.report_time,
        }
    }
}

/// Which workloads to list.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WorkloadKinds {
    #[default]
    All,
    Checkpoints,
    Validations,
    CheckpointsOrValidations,
}

/// `GET /api/v1/trials/{id}/workloads` after parsing.
#[derive(Clone, Debug, Default)]
pub struct WorkloadQuery {
    pub kinds: WorkloadKinds,
    /// A metric to sort by (`None` or `batches`: by batches).
    pub sort_metric: Option<String>,
    /// Read `sort_metric` from training reports instead of validations.
    pub sort_metric_training: bool,
    pub descending: bool,
    /// Only reports of this group (checkpoints are unaffected).
    pub group: Option<String>,
    pub remove_deleted_checkpoints: bool,
    /// Negative counts from the end.
    pub offset: i64,
    /// 0 = all.
    pub limit: i64,
}

/// 404 for an unknown trial.
pub async fn trial_workloads(store: &dyn Store, trial_id: i32, q: &WorkloadQuery) -> ApiResult<ListPage<Workload>> {
    store.trial_by_id(trial_id).await?;
    let mut items = Vec::new();
    let wants_metrics = matches!(q.kinds, WorkloadKinds::All | WorkloadKinds::Validations | WorkloadKinds::CheckpointsOrValidations);
    if wants_metrics {
        let group = q.group.as_deref().filter(|g| !g.is_empty());
        for m in store.metrics_for_trial(trial_id, group, false).await? {
            match m.group.as_str() {
                TRAINING_GROUP if q.kinds == WorkloadKinds::All => items.push(Workload::Training(m)),
                VALIDATION_GROUP => items.push(Workload::Validation(m)),
                _ => {}
            }
        }
    }
    if q.kinds != WorkloadKinds::Validations {
        let filter = CheckpointFilter { trial_id: Some(trial_id), ..CheckpointFilter::default() };
        let checkpoints = store.list_checkpoints(&filter).await?.checkpoints;
        items.extend(
            checkpoints
                .into_iter()
                .filter(|c| !(q.remove_deleted_checkpoints && CheckpointState::parse(&c.state) == Some(CheckpointState::Deleted)))
                .map(Workload::Checkpoint),
        );
    }
    sort(&mut items, q);
    let total = items.len() as i64;
    let start = if q.offset < 0 { (total + q.offset).max(0) } else { q.offset.min(total) };
    let end = if q.limit > 0 { start.saturating_add(q.limit).min(total) } else { total };
    let items = items.into_iter().skip(start as usize).take((end - start) as usize).collect();
    Ok(ListPage { items, total, start, end })
}

fn sort(items: &mut [Workload], q: &WorkloadQuery) {
    let metric = q.sort_metric.as_deref().filter(|m| !m.is_empty() && *m != "batches");
    let value = |w: &Workload| -> Option<f64> {
        let name = metric?;
        match w {
            Workload::Training(m) if q.sort_metric_training => m.avg_metrics.get(name)?.as_f64(),
            Workload::Validation(m) if !q.sort_metric_training => m.avg_metrics.get(name)?.as_f64(),
            _ => None,
        }
    };
    let tie = |a: &Workload, b: &Workload| a.kind_rank().cmp(&b.kind_rank()).then(a.time().cmp(&b.time()));
    items.sort_by(|a, b| {
        let primary = match metric {
            // Workloads without the metric go last in either direction.
            Some(_) => match (value(a), value(b)) {
                (Some(x), Some(y)) => {
                    let o = x.partial_cmp(&y).unwrap_or(Ordering::Equal);
                    if q.descending { o.reverse() } else { o }
                }
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => Ordering::Equal,
            },
            None => {
                let o = a.batches().cmp(&b.batches());
                if q.descending { o.reverse() } else { o }
            }
        };
        primary.then_with(|| a.batches().cmp(&b.batches())).then_with(|| tie(a, b))
    });
}
