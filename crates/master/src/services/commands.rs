//! Commands, notebooks, shells, TensorBoards and generic tasks as users see them: launch (config,
//! template, context upload), list, describe, kill and priority. The service stores the task and
//! notifies the loop, which runs it (`cluster/command`).

use std::sync::Arc;

use resolute_api::agent_protocol::AgentUnixUser;
use resolute_expconf::{TaskConfig, merge_under, parse_task_config};
use resolute_store::{AllocationRecord, CommandTaskFilter, CommandTaskRecord, NewCommandTask, NewLogLine, Store, StoreError, db_now};
use serde_json::{Value, json};

use super::Principal;
use super::fit_check::check_fits;
use super::model_def::{ContextFile, build_archive};
use super::{task_kinds, tensorboards};
use crate::cluster::{ClusterEvent, ClusterHandle};
use crate::domain::task_container_defaults::TaskContainerDefaults;
use crate::domain::{AllocationState, TaskType};
use crate::error::{ApiError, ApiResult};

/// A launch after parsing.
/// Task config settings only a container runtime could honour (JSON pointers).
const CONTAINER_ONLY_KEYS: &[&str] = &[
    "/bind_mounts",
    "/environment/image",
    "/environment/force_pull_image",
    "/environment/registry_auth",
    "/environment/pod_spec",
    "/environment/add_capabilities",
    "/environment/drop_capabilities",
    "/resources/devices",
    "/resources/shm_size",
];

#[derive(Clone, Debug)]
pub struct LaunchTask {
    pub kind: TaskType,
    pub config: Value,
    pub template_name: Option<String>,
    pub files: Vec<ContextFile>,
    pub workspace_id: Option<i32>,
    /// Kind-specific facts kept with the task (a TensorBoard's experiments, a shell's keys).
    pub extra: Value,
}

/// A task with its latest allocation, for rendering.
#[derive(Clone, Debug)]
pub struct CommandView {
    pub record: CommandTaskRecord,
    pub allocation: Option<AllocationRecord>,
    /// Where its containers run (from the cluster view), with their state.
    pub containers: Vec<crate::cluster::ContainerView>,
    pub state: AllocationState,
    pub resource_pool: String,
    /// The account its process runs as: its agent's, or before placement one of its pool's.
    pub agent_user: Option<AgentUnixUser>,
}

#[derive(Clone)]
pub struct CommandService {
    pub(super) store: Arc<dyn Store>,
    pub(super) cluster: ClusterHandle,
    /// The master's and pools' `task_container_defaults`, merged under every config.
    container_defaults: Arc<TaskContainerDefaults>,
    /// `security.default_task_user`: who a task runs as when its owner has no agent user.
    default_task_user: resolute_api::agent_protocol::AgentUnixUser,
}

impl CommandService {
    pub fn new(store: Arc<dyn Store>, cluster: ClusterHandle) -> Self {
        let nobody = crate::config::DefaultTaskUser::default();
        CommandService { store, cluster, container_defaults: Arc::default(), default_task_user: nobody.unix_user() }
    }

    pub fn with_default_task_user(mut self, user: &crate::config::DefaultTaskUser) -> Self {
        self.default_task_user = user.unix_user();
        self
    }

    pub fn with_container_defaults(mut self, defaults: TaskContainerDefaults) -> Self {
        self.container_defaults = Arc::new(defaults);
        self
    }

    pub async fn launch(&self, caller: &Principal, req: LaunchTask) -> ApiResult<CommandView> {
        self.launch_with_context(caller, req, None).await
    }

    /// [`CommandService::launch`]; `inherited_context` (an archive already stored with another
    /// task) replaces the request's files.
    pub(super) async fn launch_with_context(
        &self,
        caller: &Principal,
        req: LaunchTask,
        inherited_context: Option<Vec<u8>>,
    ) -> ApiResult<CommandView> {
        super::input_limits::check_config("config", &req.config)?;
        let task_id = uuid::Uuid::new_v4().to_string();
        let mut config = match req.config {
            Value::Null => json!({}),
            Value::Object(_) => req.config,
            other => return Err(ApiError::invalid(format!("config must be an object, found {other}"))),
        };
        if let Some(name) = req.template_name.as_deref().filter(|n| !n.is_empty()) {
            let template = match self.store.template_by_name(name).await {
                Ok(t) => t,
                Err(StoreError::NotFound { .. }) => return Err(ApiError::not_found(format!("template {name:?} not found"))),
                Err(e) => return Err(e.into()),
            };
            merge_under(&mut config, &template.config);
        }
        let default_pool = self.cluster.resource_pools().default_compute_pool.clone();
        self.container_defaults.merge_under(&mut config, &default_pool);
        let workspace_id = req.workspace_id.filter(|w| *w > 0).unwrap_or(1);
        match self.store.workspace_by_id(workspace_id, caller.user.id).await {
            Ok(w) if w.archived => {
                return Err(ApiError::invalid(format!("workspace {:?} is archived: tasks cannot be launched in it", w.name)));
            }
            Ok(_) => {}
            Err(StoreError::NotFound { .. }) => {
                return Err(ApiError::not_found(format!("workspaceId: workspace {workspace_id} not found")));
            }
            Err(e) => return Err(e.into()),
        }
        let launch = task_kinds::prepare(req.kind, &task_id, config, req.extra)?;
        let parsed = parse_kind_config(req.kind, &launch.config, &task_id)?;
        check_fits(&self.cluster.view(), self.cluster.resource_pools(), &parsed.resource_pool, parsed.slots, "the task")?;
        let files = req.files;
        let context = if let Some(archive) = inherited_context {
            archive
        } else if files.is_empty() {
            Vec::new()
        } else {
            tokio::task::spawn_blocking(move || build_archive(&files)).await.map_err(|_| ApiError::internal())??
        };
        let record = self
            .store
            .create_command_task(NewCommandTask {
                task_id: task_id.clone(),
                task_type: req.kind.as_str().to_owned(),
                job_id: uuid::Uuid::new_v4().to_string(),
                owner_id: caller.user.id,
                workspace_id,
                description: parsed.description.clone(),
                config: parsed.json.clone(),
                context,
                extra: launch.extra,
                start_time: db_now(),
            })
            .await?;
        tracing::info!(task = %task_id, kind = %req.kind, by = %caller.user.username, "task launched");
        self.warn_ignored_keys(&task_id, &parsed.json).await?;
        self.cluster.notify(ClusterEvent::TaskCreated { task_id: task_id.clone() });
        self.view(record, &parsed).await
    }

    /// A TensorBoard over the given experiments' trials or the given trials (404 naming an
    /// unknown one, 400 when neither is given); what it shows is resolved now and kept in `extra`.
    pub async fn launch_tensorboard(
        &self,
        caller: &Principal,
        mut req: LaunchTask,
        experiment_ids: &[i32],
        trial_ids: &[i32],
    ) -> ApiResult<CommandView> {
        req.kind = TaskType::Tensorboard;
        req.extra = tensorboards::resolve(self.store.as_ref(), experiment_ids, trial_ids).await?;
        self.launch(caller, req).await
    }

    /// The kind's live tasks, as upstream lists them; `usernames` empty means everyone's.
    pub async fn list(&self, kind: TaskType, usernames: &[String], workspace_id: Option<i32>) -> ApiResult<Vec<CommandView>> {
        let mut owner_ids = Vec::new();
        for name in usernames {
            match self.store.user_by_name(name).await {
                Ok(u) => owner_ids.push(u.id),
                Err(StoreError::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        if !usernames.is_empty() && owner_ids.is_empty() {
            return Ok(Vec::new());
        }
        let filter = CommandTaskFilter { task_types: vec![kind.as_str().to_owned()], owner_ids, workspace_id, open_only: true };
        let mut out = Vec::new();
        for record in self.store.list_command_tasks(&filter).await? {
            let parsed = stored_config(&record);
            out.push(self.view(record, &parsed).await?);
        }
        Ok(out)
    }

    /// 404 for an unknown id or a task of another kind.
    pub async fn get(&self, kind: TaskType, task_id: &str) -> ApiResult<CommandView> {
        let record = self.record(kind, task_id).await?;
        let parsed = stored_config(&record);
        self.view(record, &parsed).await
    }

    /// The owner or an admin kills a task; killing an ended one is a no-op.
    pub async fn kill(&self, caller: &Principal, kind: TaskType, task_id: &str) -> ApiResult<CommandView> {
        let record = self.record(kind, task_id).await?;
        check_owner(caller, &record, "kill")?;
        if record.end_time.is_none() {
            self.cluster.notify(ClusterEvent::KillTask { task_id: task_id.to_owned() });
        }
        let parsed = stored_config(&record);
        self.view(record, &parsed).await
    }

    pub async fn set_priority(&self, caller: &Principal, kind: TaskType, task_id: &str, priority: i32) -> ApiResult<CommandView> {
        if !(1..=99).contains(&priority) {
            return Err(ApiError::invalid(format!("priority must be from 1 (highest) to 99, got {priority}")));
        }
        let record = self.record(kind, task_id).await?;
        check_owner(caller, &record, "change the priority of")?;
        self.store.set_command_task_priority(task_id, priority).await?;
        self.get(kind, task_id).await
    }

    /// Container-only settings (an image, bind mounts, …) have nothing to act on for a process on
    /// the agent's host: the task's log says so first, where its owner reads it (upstream's
    /// launch warnings are an enum with no room for the text).
    async fn warn_ignored_keys(&self, task_id: &str, config: &Value) -> ApiResult<()> {
        let ignored: Vec<&str> =
            CONTAINER_ONLY_KEYS.iter().copied().filter(|path| config.pointer(path).is_some_and(|v| !v.is_null())).collect();
        if ignored.is_empty() {
            return Ok(());
        }
        let names: Vec<String> = ignored.iter().map(|p| p.trim_start_matches('/').replace('/', ".")).collect();
        let line = NewLogLine {
            task_id: task_id.to_owned(),
            allocation_id: None,
            agent_id: None,
            container_id: None,
            rank_id: None,
            timestamp: db_now(),
            level: Some("LOG_LEVEL_WARNING".to_owned()),
            log: format!(
                "WARNING: {} ignored: tasks run as processes on the agent's host, not in containers (host paths are visible as they are)\n",
                names.join(", ")
            ),
            source: Some("master".to_owned()),
            stdtype: Some("stdout".to_owned()),
        };
        Ok(self.store.insert_logs(&[line]).await?)
    }

    pub(super) async fn record(&self, kind: TaskType, task_id: &str) -> ApiResult<CommandTaskRecord> {
        let not_found = || ApiError::not_found(format!("{} {task_id} not found", kind.display_name().to_lowercase()));
        match self.store.command_task_by_id(task_id).await {
            Ok(r) if r.task_type == kind.as_str() => Ok(r),
            Ok(_) | Err(StoreError::NotFound { .. }) => Err(not_found()),
            Err(e) => Err(e.into()),
        }
    }

    pub(super) async fn view(&self, record: CommandTaskRecord, config: &TaskConfig) -> ApiResult<CommandView> {
        let task = self.store.task_by_id(&record.task_id).await?;
        let allocation = task.allocations.into_iter().last();
        let state = if record.end_time.is_some() {
            AllocationState::Terminated
        } else {
            allocation.as_ref().and_then(|a| AllocationState::parse(&a.state)).unwrap_or(AllocationState::Queued)
        };
        let cluster = self.cluster.view();
        let containers = allocation.as_ref().map(|a| cluster.containers_of(&a.allocation_id)).unwrap_or_default();
        let resource_pool = self.cluster.resource_pools().resolve(&config.resource_pool, config.slots).to_owned();
        let agent_user = match containers.first() {
            Some(c) => cluster.agents.get(&c.agent_id).and_then(|a| a.unix_user.clone()),
            None => cluster.agents.values().filter(|a| a.resource_pool == resource_pool).find_map(|a| a.unix_user.clone()),
        };
        // An agent running as root runs the task as its owner's account (as the loop chose it
        // at launch, `cluster/task_user.rs`); any other agent runs it as itself.
        let agent_user = match agent_user {
            Some(agent) if agent.uid != 0 => Some(agent),
            _ => {
                let workspace = self.store.workspace_by_id(record.workspace_id, 0).await.ok().and_then(|w| w.agent_user_group);
                let link = self.store.user_by_id(record.owner_id).await?.agent_user_group();
                Some(crate::cluster::resolve_task_user(workspace, link, self.default_task_user.clone()))
            }
        };
        Ok(CommandView { record, allocation, containers, state, resource_pool, agent_user })
    }
}

pub(super) fn check_owner(caller: &Principal, record: &CommandTaskRecord, verb: &str) -> ApiResult<()> {
    if caller.user.admin || caller.user.id == record.owner_id {
        return Ok(());
    }
    Err(ApiError::forbidden(format!("only the owner of task {} or an admin may {verb} it", record.task_id)))
}

/// The kind's defaults and validation; a bad config is a 400 naming every field.
pub fn parse_kind_config(kind: TaskType, config: &Value, task_id: &str) -> ApiResult<TaskConfig> {
    let short = task_id.get(..8).unwrap_or(task_id);
    let description = format!("{} ({short})", kind.display_name());
    let default_slots = match kind {
        TaskType::Tensorboard | TaskType::CheckpointGc => 0,
        _ => 1,
    };
    let needs_entrypoint = matches!(kind, TaskType::Command | TaskType::Generic);
    parse_task_config(config, default_slots, &description, needs_entrypoint).map_err(|errors| {
        let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
        ApiError::invalid(format!("invalid {} config: {}", kind.display_name().to_lowercase(), text.join("; ")))
    })
}

/// A stored config, as the loop reads it; stored configs were validated at launch.
pub(super) fn stored_config(record: &CommandTaskRecord) -> TaskConfig {
    parse_task_config(&record.config, 0, &record.description, false).unwrap_or_else(|_| TaskConfig {
        json: record.config.clone(),
        entrypoint: None,
        description: record.description.clone(),
        slots: 0,
        resource_pool: String::new(),
        priority: None,
        weight: 1.0,
        environment_variables: Default::default(),
        python: None,
        idle_timeout_seconds: None,
    })
}
