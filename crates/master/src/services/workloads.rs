//! A trial's workloads: its training and validation reports and its checkpoints in one list,
//! filtered, sorted (by batches or by a metric) and paged — all in the store's SQL, so a page
//! costs what it returns, not the trial's history — for `det trial describe` and
//! `det experiment describe`.

use resolute_store::{
    CheckpointRecord, MetricPageQuery, MetricRecord, Store, TRAINING_GROUP, VALIDATION_GROUP, WorkloadFilter, WorkloadRecord,
};

use super::ListPage;
use super::paging::{MAX_PAGE_SIZE, page_limit, page_window};
use crate::domain::CheckpointState;
use crate::error::ApiResult;

/// One workload.
#[derive(Clone, Debug, PartialEq)]
pub enum Workload {
    Training(MetricRecord),
    Validation(MetricRecord),
    Checkpoint(CheckpointRecord),
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
    /// 0 = all, up to [`MAX_PAGE_SIZE`].
    pub limit: i64,
}

impl WorkloadQuery {
    /// The store's filter, without the window.
    fn filter(&self) -> WorkloadFilter {
        let mut groups: Vec<String> = match self.kinds {
            WorkloadKinds::All => vec![TRAINING_GROUP.to_owned(), VALIDATION_GROUP.to_owned()],
            WorkloadKinds::Validations | WorkloadKinds::CheckpointsOrValidations => vec![VALIDATION_GROUP.to_owned()],
            WorkloadKinds::Checkpoints => Vec::new(),
        };
        if let Some(group) = self.group.as_deref().filter(|g| !g.is_empty()) {
            groups.retain(|g| g == group);
        }
        WorkloadFilter {
            groups,
            include_checkpoints: self.kinds != WorkloadKinds::Validations,
            skip_checkpoint_state: self.remove_deleted_checkpoints.then(|| CheckpointState::Deleted.as_str().to_owned()),
            sort_metric: self.sort_metric.clone().filter(|m| !m.is_empty() && m != "batches"),
            sort_group: if self.sort_metric_training { TRAINING_GROUP } else { VALIDATION_GROUP }.to_owned(),
            descending: self.descending,
            offset: 0,
            limit: None,
        }
    }
}

/// 404 for an unknown trial.
pub async fn trial_workloads(store: &dyn Store, trial_id: i32, q: &WorkloadQuery) -> ApiResult<ListPage<Workload>> {
    store.trial_by_id(trial_id).await?;
    let limit = page_limit(q.limit, MAX_PAGE_SIZE);
    let mut filter = q.filter();
    let total = if q.offset < 0 {
        // Negative offsets count from the end, so the total comes first.
        let total = store.trial_workloads(trial_id, &WorkloadFilter { limit: Some(0), ..filter.clone() }).await?.total;
        filter.offset = page_window(q.offset, limit, total).0;
        Some(total)
    } else {
        filter.offset = q.offset;
        None
    };
    filter.limit = Some(limit);
    let page = store.trial_workloads(trial_id, &filter).await?;
    let total = total.unwrap_or(page.total);
    let (start, _) = page_window(q.offset, limit, total);
    let items: Vec<Workload> = page
        .items
        .into_iter()
        .map(|w| match w {
            WorkloadRecord::Metric(m) if m.group == VALIDATION_GROUP => Workload::Validation(m),
            WorkloadRecord::Metric(m) => Workload::Training(m),
            WorkloadRecord::Checkpoint(c) => Workload::Checkpoint(c),
        })
        .collect();
    let end = start + items.len() as i64;
    Ok(ListPage { items, total, start, end })
}

/// Live reports at one step (a restarted run may report a step again; repeats beyond this many
/// are not looked at).
const REPORTS_AT_A_STEP: i64 = 100;

/// The trial's last live training and validation reports at exactly `steps_completed` (what a
/// checkpoint taken at that step shows), read by index: two short queries whatever the history.
pub async fn reports_at_step(
    store: &dyn Store,
    trial_id: i32,
    steps_completed: i64,
) -> ApiResult<(Option<MetricRecord>, Option<MetricRecord>)> {
    let mut out = (None, None);
    for group in [TRAINING_GROUP, VALIDATION_GROUP] {
        let query = MetricPageQuery {
            trial_id,
            group: Some(group.to_owned()),
            steps_completed: Some(steps_completed),
            after: None,
            limit: REPORTS_AT_A_STEP,
        };
        let last = store.metrics_page(&query).await?.pop();
        if group == TRAINING_GROUP { out.0 = last } else { out.1 = last }
    }
    Ok(out)
}
