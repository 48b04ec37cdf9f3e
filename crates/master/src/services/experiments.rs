//! Experiments: creating one (config validation with the master's defaults, project resolution,
//! the model definition archive), reading and listing them.
//!
//! Rules (as upstream's open-source edition): any user may read any experiment; only its owner or
//! an admin may change it (see `experiment_changes`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use resolute_expconf::{Defaults, ExperimentConfig, merge_under, parse_experiment_config};
use resolute_store::{
    BestValidation, CHECKPOINT_COMPLETED, DEFAULT_PROJECT_ID, ExperimentFilter, ExperimentRecord, ExperimentSort, NewExperiment,
    OrderDirection, ProjectRecord, Store, StoreError, TrialFilter, TrialSort, db_now,
};
use serde_json::{Value, json};

use super::fit_check::check_fits;
use super::input_limits;
use super::model_def::{ContextFile, build_archive};
use crate::cluster::ClusterHandle;
use crate::domain::experiment_state::ExperimentState;
use crate::domain::search_config::searcher_config;
use crate::domain::task_container_defaults::TaskContainerDefaults;
use crate::error::{ApiError, ApiResult};
use crate::services::Principal;
use crate::services::paging::MAX_PAGE_SIZE;

/// How long `create` waits for the loop to create an experiment's first trials.
const CREATE_TRIALS_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// GetExperiments' page size when the request gives none (`limit` 0).
const DEFAULT_PAGE_SIZE: i64 = 100;

#[derive(Clone)]
pub struct ExperimentService {
    pub(super) store: Arc<dyn Store>,
    /// The master's `checkpoint_storage`, merged under every experiment's.
    checkpoint_storage: Value,
    /// The master's and pools' `task_container_defaults`, merged under every `environment`.
    container_defaults: Arc<TaskContainerDefaults>,
    /// The loop hears of every experiment created or changed here, whatever the front end.
    pub(super) cluster: ClusterHandle,
}

/// `POST /api/v1/experiments` after parsing.
pub struct NewExperimentRequest {
    /// The YAML (or JSON) as submitted.
    pub config_text: String,
    pub files: Vec<ContextFile>,
    pub validate_only: bool,
    pub activate: bool,
    /// `None` or 0: from the config's `workspace`/`project`, else the default project.
    pub project_id: Option<i32>,
    pub parent_id: Option<i32>,
    pub template: Option<String>,
    pub unmanaged: bool,
}

/// What a create returns: the fully defaulted config, and the experiment unless it was only
/// validated.
pub struct CreatedExperiment {
    pub experiment: Option<ExperimentView>,
    pub config: Value,
    /// What the user should know about the config (ignored keys, deprecated forms, defaults
    /// they may not expect), each `path: message`; also in the master's log.
    pub config_warnings: Vec<String>,
}

/// An experiment with what its wire form needs from other tables.
#[derive(Clone, Debug)]
pub struct ExperimentView {
    pub record: ExperimentRecord,
    pub project: ProjectRecord,
    pub num_trials: i64,
    /// Filled for single reads only, as upstream.
    pub trial_ids: Vec<i32>,
    /// Completed checkpoints (count, bytes); single reads only.
    pub checkpoints: (i64, i64),
    /// The best searcher-metric validation; single reads only.
    pub best_validation: Option<BestValidation>,
    /// An unmanaged experiment's external id; single reads only.
    pub external_id: Option<String>,
    /// The config's fields a row shows, read once from the stored text.
    pub summary: ConfigSummary,
}

/// `GET /api/v1/experiments` after parsing.
#[derive(Clone, Debug, Default)]
pub struct ExperimentListQuery {
    pub archived: Option<bool>,
    pub usernames: Vec<String>,
    pub user_ids: Vec<i32>,
    /// Wire state names.
    pub states: Vec<String>,
    pub name: Option<String>,
    pub labels: Vec<String>,
    pub project_id: Option<i32>,
    pub sort: ExperimentSort,
    pub order: OrderDirection,
    pub offset: i64,
    /// 0 ⇒ 100, -1 ⇒ all, -2 ⇒ none (only the counts), as upstream.
    pub limit: i64,
}

/// A window of a list, with upstream's indices.
pub struct ListPage<T> {
    pub items: Vec<T>,
    pub total: i64,
    pub start: i64,
    pub end: i64,
}

impl ExperimentService {
    pub fn new(store: Arc<dyn Store>, cluster: ClusterHandle, checkpoint_storage: Option<Value>, data_dir: &Path) -> Self {
        let default_storage = json!({"type": "shared_fs", "host_path": data_dir.join("checkpoints").to_string_lossy()});
        let mut storage = checkpoint_storage.unwrap_or_else(|| default_storage.clone());
        // A master config naming shared_fs without a host_path still gets the default path.
        merge_under(&mut storage, &default_storage);
        ExperimentService { store, checkpoint_storage: storage, container_defaults: Arc::default(), cluster }
    }

    pub fn with_container_defaults(mut self, defaults: TaskContainerDefaults) -> Self {
        self.container_defaults = Arc::new(defaults);
        self
    }

    /// The submitted config with the named template merged under it, as JSON text.
    async fn apply_template(&self, config_text: &str, name: &str) -> ApiResult<String> {
        let template = match self.store.template_by_name(name).await {
            Ok(t) => t,
            Err(resolute_store::StoreError::NotFound { .. }) => return Err(ApiError::not_found(format!("template {name:?} not found"))),
            Err(e) => return Err(e.into()),
        };
        // A config that does not parse is reported by validation, with its line and column.
        let Ok(mut config) = resolute_expconf::yaml_to_json(config_text) else { return Ok(config_text.to_owned()) };
        merge_under(&mut config, &template.config);
        Ok(config.to_string())
    }

    pub async fn create(&self, caller: &Principal, req: NewExperimentRequest) -> ApiResult<CreatedExperiment> {
        if req.unmanaged {
            let (view, config) = self
                .put_unmanaged(
                    caller,
                    super::UnmanagedExperimentRequest {
                        config_text: req.config_text,
                        project_id: req.project_id,
                        parent_id: req.parent_id,
                        external_id: None,
                    },
                )
                .await?;
            return Ok(CreatedExperiment { experiment: Some(view), config, config_warnings: Vec::new() });
        }
        input_limits::check_text("config", &req.config_text, input_limits::CONFIG_BYTES)?;
        let config_text = match req.template.as_deref().filter(|t| !t.is_empty()) {
            Some(name) => self.apply_template(&req.config_text, name).await?,
            None => req.config_text.clone(),
        };
        // The project comes first: its workspace's checkpoint storage is merged under the config.
        let project = self.resolve_project(req.project_id, &config_text).await?;
        let workspace = self.store.workspace_by_id(project.workspace_id, caller.user.id).await?;
        let (config, config_warnings) = self.validate_config_in(&config_text, workspace.checkpoint_storage_config)?;
        input_limits::check_text("name", &config.name, input_limits::NAME_BYTES)?;
        input_limits::check_text("description", config.description.as_deref().unwrap_or_default(), input_limits::DESCRIPTION_BYTES)?;
        input_limits::check_labels("labels", &config.labels)?;
        // The loop builds the same searcher from the stored config: one it cannot build (a grid
        // too large, say) is refused here, with the reason, instead of sitting with no trials.
        resolute_searcher::Searcher::new(searcher_config(&config)).map_err(|e| ApiError::invalid(e.to_string()))?;
        self.check_warm_start_source(&config).await?;
        let config_json = config.to_json();
        check_fits(
            &self.cluster.view(),
            self.cluster.resource_pools(),
            &config.resources.resource_pool,
            config.resources.slots_per_trial,
            "each trial",
        )?;
        if let Some(parent) = req.parent_id.filter(|p| *p != 0) {
            self.store.experiment_by_id(parent).await?;
        }
        let files = req.files;
        let model_definition = tokio::task::spawn_blocking(move || build_archive(&files)).await.map_err(|_| ApiError::internal())??;
        if req.validate_only {
            return Ok(CreatedExperiment { experiment: None, config: config_json, config_warnings });
        }
        let state = if req.activate { ExperimentState::Active } else { ExperimentState::Paused };
        let record = self
            .store
            .create_experiment(NewExperiment {
                name: config.name.clone(),
                description: config.description.clone().unwrap_or_default(),
                notes: String::new(),
                state: state.as_str().to_owned(),
                owner_id: caller.user.id,
                project_id: project.id,
                config: config_json.clone(),
                original_config: req.config_text,
                model_definition,
                labels: dedup(config.labels.clone()),
                parent_id: req.parent_id.filter(|p| *p != 0),
                start_time: db_now(),
                job_id: uuid::Uuid::new_v4().to_string(),
                unmanaged: false,
            })
            .await?;
        tracing::info!(experiment = record.id, owner = %caller.user.username, state = %state, "created experiment");
        // As upstream, the first trials exist (queued, or paused) when the create call returns.
        self.cluster.experiment_created(record.id, CREATE_TRIALS_WAIT).await;
        let record = self.store.experiment_by_id(record.id).await?;
        let view = self.view(record).await?;
        Ok(CreatedExperiment { experiment: Some(view), config: config_json, config_warnings })
    }

    /// `searcher.source_trial_id` / `source_checkpoint_uuid` must name a checkpoint trials can
    /// start from: a trial with a checkpoint, a completed checkpoint.
    async fn check_warm_start_source(&self, config: &ExperimentConfig) -> ApiResult<()> {
        let searcher = &config.searcher;
        if let Some(id) = searcher.source_trial_id {
            let trial = match self.store.trial_by_id(i32::try_from(id).unwrap_or(i32::MAX)).await {
                Ok(t) => t,
                Err(resolute_store::StoreError::NotFound { .. }) => {
                    return Err(ApiError::invalid(format!("searcher.source_trial_id: trial {id} not found")));
                }
                Err(e) => return Err(e.into()),
            };
            if trial.latest_checkpoint_uuid.is_none() {
                return Err(ApiError::invalid(format!("searcher.source_trial_id: trial {id} has no completed checkpoint to start from")));
            }
        } else if let Some(uuid) = searcher.source_checkpoint_uuid.as_deref().filter(|u| !u.is_empty()) {
            let found = match self.store.checkpoint_by_uuid(uuid).await {
                Ok(c) => Some(c),
                Err(resolute_store::StoreError::NotFound { .. } | resolute_store::StoreError::InvalidInput { .. }) => None,
                Err(e) => return Err(e.into()),
            };
            match found {
                None => return Err(ApiError::invalid(format!("searcher.source_checkpoint_uuid: checkpoint {uuid:?} not found"))),
                Some(c) if c.state != resolute_store::CHECKPOINT_COMPLETED => {
                    return Err(ApiError::invalid(format!(
                        "searcher.source_checkpoint_uuid: checkpoint {uuid} is {}, not COMPLETED",
                        c.state.trim_start_matches("STATE_")
                    )));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// Parses, defaults and validates; every error in one message, each with its field path.
    pub(crate) fn validate_config(&self, text: &str) -> ApiResult<ExperimentConfig> {
        self.validate_config_in(text, None).map(|(config, _)| config)
    }

    /// [`validate_config`](Self::validate_config) for an experiment in a workspace with its own
    /// checkpoint storage (merged under the experiment's, and over the master's: upstream's
    /// order), plus the warnings the user should see, as `path: message`.
    pub(crate) fn validate_config_in(&self, text: &str, workspace_storage: Option<Value>) -> ApiResult<(ExperimentConfig, Vec<String>)> {
        let with_defaults = self.with_container_defaults_text(text);
        let text = with_defaults.as_deref().unwrap_or(text);
        let seed = u32::try_from(db_now().timestamp().rem_euclid(i64::from(u32::MAX))).unwrap_or(0);
        let mut defaults = Defaults::new(seed);
        if let Some(storage) = workspace_storage {
            defaults = defaults.with_checkpoint_storage(storage);
        }
        let defaults = defaults.with_checkpoint_storage(self.checkpoint_storage.clone());
        match parse_experiment_config(text, &defaults) {
            Ok(parsed) => {
                // Continue and fork override `resources` too: every path checks the pool here.
                self.cluster
                    .resource_pools()
                    .check_exists("resources.resource_pool", &parsed.config.resources.resource_pool)
                    .map_err(|e| ApiError::invalid(format!("invalid experiment config: {e}")))?;
                let mut warnings: Vec<String> = parsed.warnings.iter().map(ToString::to_string).collect();
                warnings.extend(super::config_warnings::cluster_warnings(&parsed.config));
                for warning in &warnings {
                    tracing::warn!(experiment = %parsed.config.name, "experiment config: {warning}");
                }
                Ok((parsed.config, warnings))
            }
            Err(errors) => {
                let all: Vec<String> = errors.iter().map(ToString::to_string).collect();
                Err(ApiError::invalid(format!("invalid experiment config: {}", all.join("; "))))
            }
        }
    }

    /// The config with `task_container_defaults` merged under it, as JSON text; `None` when there
    /// are none, or when the text does not parse (validation reports that, with line and column).
    fn with_container_defaults_text(&self, text: &str) -> Option<String> {
        if self.container_defaults.is_empty() {
            return None;
        }
        let mut config = resolute_expconf::yaml_to_json(text).ok()?;
        let default_pool = self.cluster.resource_pools().default_compute_pool.clone();
        self.container_defaults.merge_under(&mut config, &default_pool);
        self.container_defaults.merge_preemption_timeout_under(&mut config, &default_pool);
        Some(config.to_string())
    }

    /// `project_id` when given, else the config's `workspace`/`project` (read from the raw text,
    /// before validation), else the default project. Refused when it or its workspace is archived.
    pub(super) async fn resolve_project(&self, project_id: Option<i32>, config_text: &str) -> ApiResult<ProjectRecord> {
        let raw = resolute_expconf::yaml_to_json(config_text).unwrap_or(Value::Null);
        let field = |key: &str| raw.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        let (workspace, project) = (field("workspace"), field("project"));
        let project = match (project_id.filter(|p| *p != 0), workspace.as_str(), project.as_str()) {
            (Some(id), _, _) => self.store.project_by_id(id).await.map_err(|e| match e {
                StoreError::NotFound { .. } => ApiError::not_found(format!("projectId: project {id} not found")),
                other => other.into(),
            })?,
            (None, "", "") => self.store.project_by_id(DEFAULT_PROJECT_ID).await?,
            (None, workspace, project) if !workspace.is_empty() && !project.is_empty() => {
                self.store.project_by_names(workspace, project).await.map_err(|e| match e {
                    StoreError::NotFound { .. } => {
                        ApiError::not_found(format!("project {project:?} in workspace {workspace:?} (from the config) does not exist"))
                    }
                    other => other.into(),
                })?
            }
            _ => return Err(ApiError::invalid("workspace and project: set both in the config, or neither")),
        };
        super::projects::check_open(&project, "experiments")?;
        Ok(project)
    }

    pub async fn get(&self, id: i32) -> ApiResult<ExperimentView> {
        let record = self.store.experiment_by_id(id).await?;
        self.view(record).await
    }

    /// The config the experiment runs with.
    pub async fn config(&self, id: i32) -> ApiResult<Value> {
        Ok(self.store.experiment_by_id(id).await?.config.into_value())
    }

    pub async fn list(&self, q: ExperimentListQuery) -> ApiResult<ListPage<ExperimentView>> {
        if q.limit < -2 {
            return Err(ApiError::invalid(format!("limit: found {}, expected -2 (counts only), -1 (all), 0 (100) or more", q.limit)));
        }
        let Some(owner_ids) = self.owner_filter(&q.usernames, &q.user_ids).await? else {
            // No user by any of those names: nothing can match.
            return Ok(ListPage { items: Vec::new(), total: 0, start: 0, end: 0 });
        };
        let mut states = q.states;
        crate::domain::widen_active_filter(&mut states);
        let mut filter = ExperimentFilter {
            archived: q.archived,
            owner_ids,
            states,
            name: q.name.filter(|n| !n.is_empty()),
            labels: q.labels,
            project_id: q.project_id.filter(|p| *p != 0),
            sort: q.sort,
            order: q.order,
            offset: q.offset.max(0),
            limit: None,
        };
        // "All" (-1) and anything longer is one page of the common bound; `pagination` says
        // where the next one starts.
        let limit = match q.limit {
            -1 => MAX_PAGE_SIZE,
            n => n.min(MAX_PAGE_SIZE),
        };
        let page_size = |start: i64, total: i64| {
            let (s, e) = experiments_window(start, limit, total);
            e - s
        };
        if q.offset < 0 {
            // Negative offsets count from the end, so the total comes first.
            let total = self.store.list_experiments(&ExperimentFilter { limit: Some(0), ..filter.clone() }).await?.total;
            filter.offset = experiments_window(q.offset, limit, total).0;
            filter.limit = Some(page_size(filter.offset, total));
        } else {
            filter.limit = match limit {
                -2 => Some(0),
                0 => Some(DEFAULT_PAGE_SIZE),
                n => Some(n),
            };
        }
        let page = self.store.list_experiments(&filter).await?;
        let (start, end) = experiments_window(q.offset, limit, page.total);
        // The page's best validations in one read, as a describe shows them.
        // Each row's summary is read once here (from the stored summary, not the config); the wire
        // form reuses it.
        let summaries: Vec<ConfigSummary> = page.experiments.iter().map(|r| ConfigSummary::of(&r.config_summary)).collect();
        let directions: Vec<(i32, bool)> = page
            .experiments
            .iter()
            .zip(&summaries)
            .filter(|(r, _)| r.num_trials > 0)
            .filter_map(|(r, summary)| match summary.searcher_metric() {
                (Some(_), smaller_is_better) => Some((r.id, smaller_is_better)),
                _ => None,
            })
            .collect();
        let mut best: HashMap<i32, BestValidation> = self
            .store
            .best_validations(&directions)
            .await?
            .into_iter()
            .map(|b| (b.experiment_id, BestValidation { trial_id: b.trial_id, steps_completed: 0, value: b.value }))
            .collect();
        let mut projects: HashMap<i32, ProjectRecord> = HashMap::new();
        let mut items = Vec::with_capacity(page.experiments.len());
        for (record, summary) in page.experiments.into_iter().zip(summaries) {
            let project = match projects.get(&record.project_id) {
                Some(p) => p.clone(),
                None => {
                    let p = self.store.project_by_id(record.project_id).await?;
                    projects.insert(p.id, p.clone());
                    p
                }
            };
            let record_id = record.id;
            items.push(ExperimentView {
                num_trials: record.num_trials,
                record,
                project,
                trial_ids: Vec::new(),
                checkpoints: (0, 0),
                best_validation: best.remove(&record_id),
                external_id: None,
                summary,
            });
        }
        Ok(ListPage { items, total: page.total, start, end })
    }

    /// Owner ids matching both filters; `None` when names were given and none exists.
    async fn owner_filter(&self, usernames: &[String], user_ids: &[i32]) -> ApiResult<Option<Vec<i32>>> {
        if usernames.is_empty() {
            return Ok(Some(user_ids.to_vec()));
        }
        let mut by_name = Vec::new();
        for name in usernames {
            match self.store.user_by_name(name).await {
                Ok(user) => by_name.push(user.id),
                Err(StoreError::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        if !user_ids.is_empty() {
            by_name.retain(|id| user_ids.contains(id));
        }
        Ok((!by_name.is_empty()).then_some(by_name))
    }

    /// The record with its project, trial ids, checkpoint totals and best validation.
    pub(super) async fn view(&self, record: ExperimentRecord) -> ApiResult<ExperimentView> {
        let project = self.store.project_by_id(record.project_id).await?;
        // Narrow reads only: a describe costs the same however long the experiment has run.
        let trial_ids = self.store.experiment_trial_ids(record.id).await?;
        let checkpoints = self.store.checkpoint_totals(record.id, CHECKPOINT_COMPLETED).await?;
        let summary = ConfigSummary::of(&record.config_summary);
        let best_validation = match summary.searcher_metric() {
            (Some(_), smaller_is_better) if !trial_ids.is_empty() => self.best_trial(record.id, smaller_is_better).await?,
            _ => None,
        };
        // Only an unmanaged experiment can have one: managed reads cost no extra query.
        let external_id = if record.unmanaged { self.store.experiment_external_id(record.id).await? } else { None };
        Ok(ExperimentView {
            num_trials: trial_ids.len() as i64,
            record,
            project,
            trial_ids,
            checkpoints,
            best_validation,
            external_id,
            summary,
        })
    }
}

impl ExperimentService {
    /// The trial with the best searcher-metric validation, from the trials' `best_validation`
    /// (kept with every validation that carries the searcher metric): one indexed row, not the
    /// experiment's validations. `steps_completed` is not known here (0).
    pub(super) async fn best_trial(&self, experiment_id: i32, smaller_is_better: bool) -> ApiResult<Option<BestValidation>> {
        let order = if smaller_is_better { OrderDirection::Asc } else { OrderDirection::Desc };
        let filter = TrialFilter { experiment_id, sort: TrialSort::BestValidation, order, limit: Some(1), ..Default::default() };
        let best = self.store.list_trials(&filter).await?.trials.into_iter().next();
        Ok(best.and_then(|t| Some(BestValidation { trial_id: t.id, steps_completed: 0, value: t.best_validation? })))
    }
}

/// The stored config's `searcher.metric` and `searcher.smaller_is_better` (default true).
/// The few fields of a stored experiment configuration that a list row shows, read from the
/// record's `config_summary` (the store's projection of the config in the config's shape; the
/// config itself reads the same) without building the document (`StoredJson::read`).
#[derive(Clone, Debug, Default, serde::Deserialize)]
pub struct ConfigSummary {
    #[serde(default)]
    pub searcher: SearcherSummary,
    #[serde(default)]
    pub resources: ResourcesSummary,
    #[serde(default)]
    pub hyperparameters: Option<Box<serde_json::value::RawValue>>,
}

#[derive(Clone, Debug, Default, serde::Deserialize)]
pub struct SearcherSummary {
    #[serde(default)]
    pub name: Option<Value>,
    #[serde(default)]
    pub metric: Option<Value>,
    #[serde(default)]
    pub smaller_is_better: Option<Value>,
}

#[derive(Clone, Debug, Default, serde::Deserialize)]
pub struct ResourcesSummary {
    #[serde(default)]
    pub resource_pool: Option<Value>,
}

impl ConfigSummary {
    /// The summary of `config` (or of its stored summary); a document of another shape
    /// summarises as empty.
    pub fn of(config: &resolute_store::StoredJson) -> Self {
        config.read().unwrap_or_default()
    }

    /// As [`searcher_metric`].
    pub fn searcher_metric(&self) -> (Option<&str>, bool) {
        let s = &self.searcher;
        (s.metric.as_ref().and_then(Value::as_str), s.smaller_is_better.as_ref().and_then(Value::as_bool).unwrap_or(true))
    }
}

pub fn searcher_metric(config: &Value) -> (Option<&str>, bool) {
    let searcher = &config["searcher"];
    (searcher["metric"].as_str(), searcher["smaller_is_better"].as_bool().unwrap_or(true))
}

/// Upstream's GetExperiments window over `total` rows: `(start, end)`. An offset past either end
/// starts at the end; a negative one counts from the end. `limit` 0 ⇒ 100, -1 ⇒ all, -2 ⇒ none.
pub fn experiments_window(offset: i64, limit: i64, total: i64) -> (i64, i64) {
    let start = if offset > total || offset < -total {
        total
    } else if offset < 0 {
        total + offset
    } else {
        offset
    };
    let end = match limit {
        -2 => start,
        -1 => total,
        0 => (start + DEFAULT_PAGE_SIZE).min(total),
        n => start.saturating_add(n.max(0)).min(total),
    };
    (start, end)
}

/// Labels without repeats, first occurrence kept.
pub fn dedup(labels: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(labels.len());
    for label in labels {
        if !out.contains(&label) {
            out.push(label);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_follows_upstream_get_experiments() {
        assert_eq!(experiments_window(0, 0, 250), (0, 100));
        assert_eq!(experiments_window(200, 0, 250), (200, 250));
        assert_eq!(experiments_window(0, -1, 250), (0, 250));
        assert_eq!(experiments_window(10, -2, 250), (10, 10));
        assert_eq!(experiments_window(5, 3, 250), (5, 8));
        assert_eq!(experiments_window(-3, 0, 10), (7, 10));
        assert_eq!(experiments_window(-30, 0, 10), (10, 10));
        assert_eq!(experiments_window(30, 5, 10), (10, 10));
    }

    #[test]
    fn dedup_keeps_first_occurrences() {
        assert_eq!(dedup(vec!["b".into(), "a".into(), "b".into()]), ["b", "a"]);
    }

    #[test]
    fn searcher_metric_reads_the_stored_config() {
        let config = json!({"searcher": {"metric": "acc", "smaller_is_better": false}});
        assert_eq!(searcher_metric(&config), (Some("acc"), false));
        assert_eq!(searcher_metric(&json!({})), (None, true));
    }
}
