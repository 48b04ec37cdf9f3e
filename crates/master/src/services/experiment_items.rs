//! What an experiment holds, read-only: its trials, its checkpoints (with the training context
//! the SDK shows) and its model definition. Any user may read them.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use resolute_store::{
    CheckpointFilter, CheckpointRecord, CheckpointSort, ExperimentRecord, MetricRecord, OrderDirection, TrialFilter, TrialRecord, TrialSort,
};
use serde_json::Value;

use super::experiments::{ExperimentService, ListPage, searcher_metric};
use super::paging::{MAX_PAGE_SIZE, MAX_UNPAGED_LIST, page_limit, page_window};
use super::workloads::reports_at_step;
use crate::error::ApiResult;

/// `GET /api/v1/experiments/{id}/trials` after parsing.
#[derive(Clone, Debug, Default)]
pub struct TrialListQuery {
    /// Wire state names; empty = all.
    pub states: Vec<String>,
    pub sort: TrialSort,
    pub order: OrderDirection,
    /// Negative counts from the end.
    pub offset: i64,
    /// 0 = all.
    pub limit: i64,
}

/// `GET /api/v1/experiments/{id}/checkpoints` after parsing. `None` sort or order means the
/// request left it unspecified.
#[derive(Clone, Debug, Default)]
pub struct CheckpointListQuery {
    pub sort: Option<CheckpointSort>,
    /// A validation metric to sort by.
    pub sort_by_metric: Option<String>,
    pub order: Option<OrderDirection>,
    pub states: Vec<String>,
    pub offset: i64,
    pub limit: i64,
    /// Only this trial's (`GET /api/v1/trials/{id}/checkpoints`).
    pub trial_id: Option<i32>,
}

/// A trial with its most recent validation report, when fetched alone.
#[derive(Clone, Debug)]
pub struct TrialView {
    pub record: TrialRecord,
    pub latest_validation: Option<MetricRecord>,
}

/// A checkpoint with where it came from: its trial's hyperparameters, the experiment's config and
/// the metrics reported at its step.
#[derive(Clone, Debug)]
pub struct CheckpointView {
    pub record: CheckpointRecord,
    pub experiment_config: Option<Value>,
    pub hparams: Option<Value>,
    pub training_metrics: Option<MetricRecord>,
    pub validation_metrics: Option<MetricRecord>,
}

impl ExperimentService {
    pub async fn trials(&self, experiment_id: i32, q: TrialListQuery) -> ApiResult<ListPage<TrialRecord>> {
        // A missing experiment is a 404, not an empty list.
        self.store.experiment_by_id(experiment_id).await?;
        let mut states = q.states;
        crate::domain::widen_active_filter(&mut states);
        let mut filter = TrialFilter { experiment_id, states, sort: q.sort, order: q.order, offset: 0, limit: None };
        // Upstream's CLI reads an experiment's trials unpaged (`det experiment describe`).
        let limit = page_limit(q.limit, MAX_UNPAGED_LIST);
        let total =
            if q.offset < 0 { Some(self.store.list_trials(&TrialFilter { limit: Some(0), ..filter.clone() }).await?.total) } else { None };
        filter.offset = match total {
            Some(total) => page_window(q.offset, limit, total).0,
            None => q.offset,
        };
        filter.limit = Some(limit);
        let page = self.store.list_trials(&filter).await?;
        let (start, end) = page_window(q.offset, limit, page.total);
        Ok(ListPage { items: page.trials, total: page.total, start, end })
    }

    pub async fn trial(&self, trial_id: i32) -> ApiResult<TrialView> {
        let record = self.store.trial_by_id(trial_id).await?;
        let latest_validation = self.store.latest_validation(trial_id).await?;
        Ok(TrialView { record, latest_validation })
    }

    /// A trial's checkpoints, with the same sorting as its experiment's.
    pub async fn trial_checkpoints(&self, trial_id: i32, mut q: CheckpointListQuery) -> ApiResult<ListPage<CheckpointView>> {
        let trial = self.store.trial_by_id(trial_id).await?;
        q.trial_id = Some(trial_id);
        self.checkpoints(trial.experiment_id, q).await
    }

    pub async fn checkpoints(&self, experiment_id: i32, q: CheckpointListQuery) -> ApiResult<ListPage<CheckpointView>> {
        let experiment = self.store.experiment_by_id(experiment_id).await?;
        let (metric, smaller_is_better) = searcher_metric(&experiment.config);
        let sort = match q.sort_by_metric.as_deref().filter(|m| !m.is_empty()) {
            Some(name) if Some(name) == metric => CheckpointSort::SearcherMetric,
            Some(name) => {
                let name = name.to_owned();
                return self.checkpoints_by_metric(&experiment, &name, q).await;
            }
            None => q.sort.unwrap_or(CheckpointSort::TrialId),
        };
        // Unspecified order with the searcher metric: best first, as upstream.
        let order = match (q.order, sort) {
            (Some(order), _) => order,
            (None, CheckpointSort::SearcherMetric) if !smaller_is_better => OrderDirection::Desc,
            (None, _) => OrderDirection::Asc,
        };
        let mut filter = CheckpointFilter {
            experiment_id: Some(experiment_id),
            trial_id: q.trial_id,
            states: q.states,
            sort,
            order,
            offset: 0,
            limit: None,
        };
        // Each row carries the experiment's config: pages stay at the common bound.
        let limit = page_limit(q.limit, MAX_PAGE_SIZE);
        filter.offset = if q.offset < 0 {
            let total = self.store.list_checkpoints(&CheckpointFilter { limit: Some(0), ..filter.clone() }).await?.total;
            page_window(q.offset, limit, total).0
        } else {
            q.offset
        };
        filter.limit = Some(limit);
        let page = self.store.list_checkpoints(&filter).await?;
        let (start, end) = page_window(q.offset, limit, page.total);
        let items = self.checkpoint_views(&experiment.config, page.checkpoints).await?;
        Ok(ListPage { items, total: page.total, start, end })
    }

    /// The checkpoints with their trial's hyperparameters and the reports at their step.
    async fn checkpoint_views(&self, config: &Value, records: Vec<CheckpointRecord>) -> ApiResult<Vec<CheckpointView>> {
        let mut trials: HashMap<i32, TrialRecord> = HashMap::new();
        let mut items = Vec::with_capacity(records.len());
        for record in records {
            let mut view = CheckpointView {
                experiment_config: Some(config.clone()),
                hparams: None,
                training_metrics: None,
                validation_metrics: None,
                record,
            };
            if let Some(trial_id) = view.record.trial_id {
                if let Entry::Vacant(slot) = trials.entry(trial_id) {
                    slot.insert(self.store.trial_by_id(trial_id).await?);
                }
                if let Some(trial) = trials.get(&trial_id) {
                    view.hparams = Some(trial.hparams.clone());
                }
                // The reports at the checkpoint's step only, by index, not the trial's history.
                let (training, validation) = reports_at_step(self.store.as_ref(), trial_id, view.record.steps_completed).await?;
                view.training_metrics = training;
                view.validation_metrics = validation;
            }
            items.push(view);
        }
        Ok(items)
    }

    /// `sortByMetric` naming a validation metric other than the searcher's: the checkpoints
    /// ordered by that metric of the validation at their step (ascending unless `ORDER_BY_DESC`;
    /// those without the metric last either way, then by uuid), as upstream orders by the
    /// validation joined at the checkpoint's step. Every matching checkpoint's validation is read
    /// to sort them, so this costs one lookup per checkpoint of the experiment (or trial).
    async fn checkpoints_by_metric(
        &self,
        experiment: &ExperimentRecord,
        name: &str,
        q: CheckpointListQuery,
    ) -> ApiResult<ListPage<CheckpointView>> {
        let filter = CheckpointFilter {
            experiment_id: Some(experiment.id),
            trial_id: q.trial_id,
            states: q.states,
            sort: CheckpointSort::Uuid,
            order: OrderDirection::Asc,
            offset: 0,
            limit: Some(MAX_UNPAGED_LIST),
        };
        let all = self.store.list_checkpoints(&filter).await?;
        let mut views = self.checkpoint_views(&experiment.config, all.checkpoints).await?;
        let value = |v: &CheckpointView| v.validation_metrics.as_ref().and_then(|m| m.avg_metrics.get(name)?.as_f64());
        let descending = q.order == Some(OrderDirection::Desc);
        views.sort_by(|a, b| match (value(a), value(b)) {
            (Some(x), Some(y)) => {
                let by_value = if descending { y.total_cmp(&x) } else { x.total_cmp(&y) };
                by_value.then_with(|| a.record.uuid.cmp(&b.record.uuid))
            }
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a.record.uuid.cmp(&b.record.uuid),
        });
        let total = i64::try_from(views.len()).unwrap_or(i64::MAX);
        let limit = page_limit(q.limit, MAX_PAGE_SIZE);
        let (start, end) = page_window(q.offset, limit, total);
        let items = views.into_iter().skip(usize::try_from(start).unwrap_or(0)).take(usize::try_from(end - start).unwrap_or(0)).collect();
        Ok(ListPage { items, total, start, end })
    }

    /// The stored tar.gz.
    pub async fn model_definition(&self, experiment_id: i32) -> ApiResult<Vec<u8>> {
        Ok(self.store.experiment_model_definition(experiment_id).await?)
    }
}
