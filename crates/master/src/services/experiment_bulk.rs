//! Bulk experiment actions: the selection (ids in the project, or a filter over it) and one
//! result per experiment, each action applied as its single-experiment form applies it (same
//! permission and state rules, same messages).

use resolute_api::experiment_bulk::{BulkExperimentFilters, ExperimentActionResult};
use resolute_store::{ExperimentFilter, Store, StoreError};

use super::experiments::ExperimentService;
use crate::domain::experiment_state::{ExperimentAction, ExperimentState};
use crate::error::{ApiError, ApiResult};
use crate::services::Principal;
use crate::services::paging::MAX_PAGE_SIZE;

/// What a bulk request does to each experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BulkAction {
    State(ExperimentAction),
    Archive(bool),
    Delete,
}

impl ExperimentService {
    pub async fn bulk(
        &self,
        caller: &Principal,
        project_id: i32,
        ids: &[i32],
        filters: Option<&BulkExperimentFilters>,
        action: BulkAction,
    ) -> ApiResult<Vec<ExperimentActionResult>> {
        let mut results = Vec::new();
        let selected: Vec<i32> = match filters {
            Some(f) => select_by_filters(self.store.as_ref(), project_id, f).await?,
            None => {
                let mut found = Vec::new();
                for &id in ids {
                    match self.store.experiment_by_id(id).await {
                        Ok(e) if project_id == 0 || e.project_id == project_id => found.push(id),
                        Ok(_) | Err(StoreError::NotFound { .. }) => {
                            results
                                .push(ExperimentActionResult { id, error: format!("experiment {id} not found in project {project_id}") });
                        }
                        Err(e) => return Err(e.into()),
                    }
                }
                found
            }
        };
        for id in selected {
            let outcome = match action {
                BulkAction::State(a) => self.act(caller, id, a).await.map(|_| ()),
                BulkAction::Archive(archived) => self.set_archived(caller, id, archived).await,
                BulkAction::Delete => self.delete(caller, id).await,
            };
            let error = match outcome {
                Ok(()) => String::new(),
                Err(e) if e.status.is_server_error() => return Err(e),
                Err(e) => e.message,
            };
            results.push(ExperimentActionResult { id, error });
        }
        results.sort_by_key(|r| r.id);
        Ok(results)
    }
}

/// The project's experiments `filters` select (at most a page's worth), as the bulk experiment
/// actions and the bulk move read them.
pub(super) async fn select_by_filters(store: &dyn Store, project_id: i32, f: &BulkExperimentFilters) -> ApiResult<Vec<i32>> {
    let mut states = Vec::new();
    for s in f.states.iter().flatten() {
        match ExperimentState::parse(s) {
            Some(state) => states.push(state.as_str().to_owned()),
            None => return Err(ApiError::invalid(format!("filters.states: unknown experiment state {s:?}"))),
        }
    }
    let project = f.project_id.filter(|p| *p != 0).unwrap_or(project_id);
    let filter = ExperimentFilter {
        archived: f.archived,
        owner_ids: f.user_ids.clone().unwrap_or_default(),
        states,
        name: f.name.clone().filter(|n| !n.is_empty()),
        labels: f.labels.clone().unwrap_or_default(),
        project_id: (project != 0).then_some(project),
        limit: Some(MAX_PAGE_SIZE),
        ..Default::default()
    };
    let excluded = f.excluded_experiment_ids.clone().unwrap_or_default();
    let description = f.description.as_deref().filter(|d| !d.is_empty());
    Ok(store
        .list_experiments(&filter)
        .await?
        .experiments
        .into_iter()
        .filter(|e| !excluded.contains(&e.id))
        .filter(|e| description.is_none_or(|d| e.description.contains(d)))
        .map(|e| e.id)
        .collect())
}
