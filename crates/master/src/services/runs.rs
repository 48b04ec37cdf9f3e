//! The runs API beyond kill/pause/resume: the run list (`POST /api/v1/runs`, upstream's
//! SearchRuns) and the bulk archive, unarchive, delete and move, each selecting runs by ids or
//! by filter within a project and answering one `{id, error}` per run, with upstream's rules and
//! messages: only terminal runs are archived or deleted; a run moves with its experiment (a run
//! never lives apart from it, so a search moves whole), or with `skipMultitrial` a search's runs
//! are skipped. Changes are the owner's or an admin's, as for experiments.

use std::collections::BTreeSet;

use resolute_api::runs::RunActionResult;
use resolute_store::{RunPage, RunQuery, RunRecord, StoreError};

use super::experiments::ExperimentService;
use super::paging::{MAX_PAGE_SIZE, page_limit};
use super::projects::check_open;
use super::run_filter::{parse_filter, parse_sort};
use crate::domain::TrialState;
use crate::domain::experiment_state::ExperimentState;
use crate::error::{ApiError, ApiResult};
use crate::services::Principal;

/// Runs one bulk request may select by filter.
const MAX_SELECTED: i64 = 10_000;

/// Which runs a bulk action names.
pub struct RunSelection<'a> {
    pub project_id: Option<i32>,
    pub ids: &'a [i32],
    pub filter: Option<&'a str>,
}

impl RunSelection<'_> {
    fn filter(&self) -> Option<&str> {
        self.filter.filter(|f| !f.trim().is_empty())
    }
}

fn ok(id: i32) -> RunActionResult {
    RunActionResult { id, error: String::new() }
}

fn err(id: i32, error: impl Into<String>) -> RunActionResult {
    RunActionResult { id, error: error.into() }
}

fn may_change(caller: &Principal, run: &RunRecord) -> bool {
    caller.user.admin || caller.user.id == run.owner_id
}

impl ExperimentService {
    async fn check_project(&self, id: i32, field: &str) -> ApiResult<resolute_store::ProjectRecord> {
        self.store.project_by_id(id).await.map_err(|e| match e {
            StoreError::NotFound { .. } => ApiError::not_found(format!("{field}: project {id} not found")),
            other => other.into(),
        })
    }

    /// `POST /api/v1/runs`: a page of runs, filtered and sorted in the database.
    pub async fn search_runs(
        &self,
        project_id: Option<i32>,
        filter: Option<&str>,
        sort: Option<&str>,
        offset: i32,
        limit: i32,
    ) -> ApiResult<(RunPage, i64)> {
        if let Some(p) = project_id.filter(|p| *p != 0) {
            self.check_project(p, "projectId").await?;
        }
        let parsed = filter.filter(|f| !f.trim().is_empty()).map(parse_filter).transpose()?;
        let sort = sort.map(parse_sort).transpose()?.unwrap_or_default();
        let offset = i64::from(offset.max(0));
        let query = RunQuery {
            project_id: project_id.filter(|p| *p != 0),
            ids: None,
            hide_archived: parsed.as_ref().is_some_and(|f| !f.show_archived),
            filter: parsed.and_then(|f| f.expr),
            sort,
            offset,
            limit: Some(page_limit(i64::from(limit), MAX_PAGE_SIZE)),
        };
        Ok((self.store.search_runs(&query).await?, offset))
    }

    /// The runs a bulk action names, and for ids one "not found" result per id it does not find.
    pub(super) async fn select_runs(&self, sel: &RunSelection<'_>) -> ApiResult<(Vec<RunRecord>, Vec<RunActionResult>)> {
        let project_id = sel.project_id.filter(|p| *p != 0);
        let mut query = RunQuery { project_id, limit: Some(MAX_SELECTED), ..Default::default() };
        match sel.filter() {
            Some(text) => {
                if !sel.ids.is_empty() {
                    return Err(ApiError::invalid("runIds: must be empty when a filter selects the runs"));
                }
                let f = parse_filter(text)?;
                query.hide_archived = !f.show_archived;
                query.filter = f.expr;
            }
            None => {
                if sel.ids.is_empty() {
                    return Err(ApiError::invalid("runIds: name at least one run, or set filter"));
                }
                if sel.ids.len() > MAX_PAGE_SIZE as usize {
                    return Err(ApiError::invalid(format!("runIds: at most {MAX_PAGE_SIZE} runs per request, found {}", sel.ids.len())));
                }
                query.ids = Some(sel.ids.to_vec());
            }
        }
        let runs = self.store.search_runs(&query).await?.runs;
        let mut missing = Vec::new();
        if sel.filter().is_none() {
            let found: BTreeSet<i32> = runs.iter().map(|r| r.trial.id).collect();
            for &id in sel.ids {
                if !found.contains(&id) {
                    missing.push(err(
                        id,
                        match project_id {
                            Some(p) => format!("Run with id '{id}' not found in project with id '{p}'"),
                            None => format!("Run with id '{id}' not found"),
                        },
                    ));
                }
            }
        }
        Ok((runs, missing))
    }

    /// The ids a kill/pause/resume names (by filter or as given).
    pub async fn run_ids_for_action(&self, sel: &RunSelection<'_>) -> ApiResult<Vec<i32>> {
        if sel.filter().is_none() {
            return Ok(sel.ids.to_vec());
        }
        Ok(self.select_runs(sel).await?.0.iter().map(|r| r.trial.id).collect())
    }

    /// Archives or unarchives runs: only terminal ones (archiving an archived run is no error).
    pub async fn archive_runs(&self, caller: &Principal, sel: &RunSelection<'_>, archive: bool) -> ApiResult<Vec<RunActionResult>> {
        let (runs, mut results) = self.select_runs(sel).await?;
        let mut valid = Vec::new();
        for run in &runs {
            let id = run.trial.id;
            if run.archived == archive {
                results.push(ok(id));
            } else if !may_change(caller, run) {
                results.push(err(id, format!("only the owner or an admin can {} run {id}", if archive { "archive" } else { "unarchive" })));
            } else if !TrialState::is_terminal_name(&run.trial.state) {
                results.push(err(id, "Run is not in terminal state."));
            } else {
                valid.push(id);
            }
        }
        for id in self.store.set_runs_archived(&valid, archive).await? {
            results.push(ok(id));
        }
        results.sort_by_key(|r| r.id);
        Ok(results)
    }

    /// Deletes terminal runs of finished experiments, with their metrics, checkpoints and logs.
    pub async fn delete_runs(&self, caller: &Principal, sel: &RunSelection<'_>) -> ApiResult<Vec<RunActionResult>> {
        let (runs, mut results) = self.select_runs(sel).await?;
        let mut valid = Vec::new();
        for run in &runs {
            let id = run.trial.id;
            let experiment_done = ExperimentState::parse(&run.experiment_state).is_some_and(ExperimentState::is_terminal);
            if !may_change(caller, run) {
                results.push(err(id, format!("only the owner or an admin can delete run {id}")));
            } else if !TrialState::is_terminal_name(&run.trial.state) {
                results.push(err(id, "Run is not in a terminal state."));
            } else if !experiment_done {
                // The master still runs the search the run belongs to and may act on it.
                results.push(err(
                    id,
                    format!(
                        "run {id} belongs to experiment {}, which has not ended: wait for it or kill it first",
                        run.trial.experiment_id
                    ),
                ));
            } else {
                valid.push(id);
            }
        }
        let outcome = self.store.delete_runs(&valid).await?;
        for id in outcome.deleted {
            results.push(ok(id));
        }
        for id in outcome.registered {
            results.push(err(id, format!("run {id} holds a checkpoint registered as a model version: delete that version first")));
        }
        results.sort_by_key(|r| r.id);
        Ok(results)
    }

    /// Moves each run with its experiment to the destination project.
    pub async fn move_runs(
        &self,
        caller: &Principal,
        sel: &RunSelection<'_>,
        destination: i32,
        skip_multitrial: bool,
    ) -> ApiResult<Vec<RunActionResult>> {
        let source_id = sel.project_id.unwrap_or_default();
        let source = self.check_project(source_id, "sourceProjectId").await?;
        if source.archived {
            return Err(ApiError::invalid(format!("sourceProjectId: project {source_id} is archived and cannot have runs moved from it")));
        }
        let target = self.check_project(destination, "destinationProjectId").await?;
        check_open(&target, "runs")?;
        let (runs, mut results) = self.select_runs(sel).await?;
        let mut moved: BTreeSet<i32> = BTreeSet::new();
        for run in &runs {
            let id = run.trial.id;
            let experiment = run.trial.experiment_id;
            if run.archived || run.experiment_archived || run.project_archived || run.workspace_archived {
                results.push(err(id, "Run is archived."));
            } else if run.experiment_trials > 1 && skip_multitrial {
                results.push(err(id, format!("Skipping run '{id}' (part of multi-trial).")));
            } else if !may_change(caller, run) {
                results.push(err(id, format!("only the owner or an admin can move run {id} (with experiment {experiment})")));
            } else if moved.contains(&experiment) || run.project_id == destination {
                results.push(ok(id));
            } else {
                match self.store.move_experiment(experiment, destination).await {
                    Ok(()) => {
                        moved.insert(experiment);
                        tracing::info!(run = id, experiment, project = destination, by = %caller.user.username, "moved run with its experiment");
                        results.push(ok(id));
                    }
                    Err(StoreError::NotFound { .. }) => results.push(err(id, "Failed to move associated experiment")),
                    Err(e) => return Err(e.into()),
                }
            }
        }
        results.sort_by_key(|r| r.id);
        Ok(results)
    }
}
