//! Generic tasks (`det task create|config|kill|pause|unpause`): a YAML config and a context run as
//! a `TASK_TYPE_GENERIC` command task through the command launch path. Kill, pause and unpause
//! act on the task and its descendants (tasks created with `parentId`), as upstream's master does;
//! the loop carries them out (`cluster/command/pause.rs`).

use std::collections::HashSet;

use resolute_api::error::ErrorCode;
use resolute_expconf::{merge_under, yaml_to_json};
use resolute_store::{CommandTaskFilter, CommandTaskRecord, StoreError};
use serde_json::{Value, json};

use super::Principal;
use super::commands::{CommandService, CommandView, LaunchTask, check_owner};
use super::model_def::ContextFile;
use crate::cluster::{ClusterEvent, EXITED_SUCCESSFULLY, KILLED};
use crate::domain::TaskType;
use crate::domain::generic_task::{self, FORKED_FROM, GenericTaskState, NO_PAUSE, PARENT_ID, PROJECT_ID, pausable};
use crate::error::{ApiError, ApiResult};

/// Upstream's default project, where a task without `projectId` goes.
const DEFAULT_PROJECT_ID: i32 = 1;

/// `POST /api/v1/generic-tasks` after parsing.
#[derive(Clone, Debug, Default)]
pub struct NewGenericTask {
    /// YAML (or JSON) text; may be empty when forking.
    pub config_text: String,
    pub files: Vec<ContextFile>,
    pub project_id: Option<i32>,
    /// A generic task whose config goes under this one's.
    pub forked_from: Option<String>,
    /// The generic task that launched this one: kill and pause reach it through its parent.
    pub parent_id: Option<String>,
    /// Run in the parent's context (when the request has no files of its own).
    pub inherit_context: bool,
    pub no_pause: Option<bool>,
}

/// What `GET /api/v1/tasks/{id}` adds for a generic task.
#[derive(Clone, Debug)]
pub struct GenericTaskInfo {
    pub config: Value,
    pub forked_from: Option<String>,
    pub parent_id: Option<String>,
    pub no_pause: Option<bool>,
    pub state: GenericTaskState,
}

impl CommandService {
    pub async fn create_generic(&self, caller: &Principal, req: NewGenericTask) -> ApiResult<CommandView> {
        super::input_limits::check_text("config", &req.config_text, super::input_limits::CONFIG_BYTES)?;
        let mut config = if req.config_text.trim().is_empty() {
            json!({})
        } else {
            yaml_to_json(&req.config_text).map_err(|e| ApiError::invalid(format!("invalid generic task config: {e}")))?
        };
        if !config.is_object() {
            return Err(ApiError::invalid(format!("invalid generic task config: the top level must be a mapping, found {config}")));
        }
        let forked_from = req.forked_from.filter(|f| !f.is_empty());
        if let Some(parent) = &forked_from {
            let mut base = self.record(TaskType::Generic, parent).await?.config;
            // A fork is a task of its own, with its own default name.
            if let Value::Object(fields) = &mut base {
                fields.remove("description");
            }
            merge_under(&mut config, &base);
        }
        let parent_id = req.parent_id.filter(|p| !p.is_empty());
        if let Some(parent) = &parent_id {
            self.record(TaskType::Generic, parent).await?;
        }
        let inherited = match (&parent_id, req.inherit_context) {
            (None, true) => return Err(ApiError::invalid("inheritContext needs parentId: the task whose context directory to use")),
            (Some(parent), true) if req.files.is_empty() => Some(self.store.command_task_context(parent).await?),
            _ => None,
        };
        let project_id = req.project_id.filter(|p| *p > 0).unwrap_or(DEFAULT_PROJECT_ID);
        let project = match self.store.project_by_id(project_id).await {
            Ok(p) => p,
            Err(StoreError::NotFound { .. }) => return Err(ApiError::not_found(format!("project {project_id} not found"))),
            Err(e) => return Err(e.into()),
        };
        if project.archived {
            return Err(ApiError::invalid(format!("project {:?} is archived: tasks cannot be added to it", project.name)));
        }
        let mut extra = json!({ PROJECT_ID: project.id });
        if let Some(f) = forked_from {
            extra[FORKED_FROM] = json!(f);
        }
        if let Some(p) = parent_id {
            extra[PARENT_ID] = json!(p);
        }
        if let Some(no_pause) = req.no_pause {
            extra[NO_PAUSE] = json!(no_pause);
        }
        let launch = LaunchTask {
            kind: TaskType::Generic,
            config,
            template_name: None,
            files: req.files,
            workspace_id: Some(project.workspace_id),
            extra,
        };
        self.launch_with_context(caller, launch, inherited).await
    }

    /// 404 unless `task_id` is a generic task.
    pub async fn generic_info(&self, task_id: &str) -> ApiResult<GenericTaskInfo> {
        let record = self.record(TaskType::Generic, task_id).await?;
        let text = |key: &str| record.extra.get(key).and_then(Value::as_str).map(str::to_owned);
        Ok(GenericTaskInfo {
            forked_from: text(FORKED_FROM),
            parent_id: text(PARENT_ID),
            no_pause: record.extra.get(NO_PAUSE).and_then(Value::as_bool),
            state: generic_state(&record),
            config: record.config,
        })
    }

    /// Kills the task (or, `from_root`, the root of its tree) and its open descendants; the
    /// caller must own each of them or be an admin.
    pub async fn kill_generic(&self, caller: &Principal, task_id: &str, from_root: bool) -> ApiResult<()> {
        let record = self.record(TaskType::Generic, task_id).await?;
        let state = generic_state(&record);
        if matches!(state, GenericTaskState::Completed | GenericTaskState::Canceled) {
            return Err(precondition(format!("cannot kill task {task_id}: it has already ended ({})", state.as_str())));
        }
        let all = self.all_generic().await?;
        let root = if from_root { root_of(&all, task_id) } else { task_id.to_owned() };
        let targets: Vec<&CommandTaskRecord> = descendants(&all, &root).into_iter().filter(|t| t.end_time.is_none()).collect();
        for t in &targets {
            check_owner(caller, t, "kill")?;
        }
        for t in targets {
            self.cluster.notify(ClusterEvent::KillTask { task_id: t.task_id.clone() });
        }
        Ok(())
    }

    /// Pauses the task and those of its descendants that asked to be pausable.
    pub async fn pause_generic(&self, caller: &Principal, task_id: &str) -> ApiResult<()> {
        let record = self.record(TaskType::Generic, task_id).await?;
        check_owner(caller, &record, "pause")?;
        let state = generic_state(&record);
        if state != GenericTaskState::Active {
            return Err(precondition(format!("cannot pause task {task_id} as it is in state {}", state.as_str())));
        }
        if !pausable(&record.extra, true) {
            return Err(precondition(format!("cannot pause task {task_id}: it was created with no_pause set")));
        }
        let all = self.all_generic().await?;
        for t in descendants(&all, task_id) {
            let is_root = t.task_id == task_id;
            if generic_state(t) == GenericTaskState::Active && pausable(&t.extra, is_root) {
                self.cluster.notify(ClusterEvent::PauseTask { task_id: t.task_id.clone() });
            }
        }
        Ok(())
    }

    /// Runs a paused task, and its paused descendants, again.
    pub async fn unpause_generic(&self, caller: &Principal, task_id: &str) -> ApiResult<()> {
        let record = self.record(TaskType::Generic, task_id).await?;
        check_owner(caller, &record, "unpause")?;
        match generic_state(&record) {
            GenericTaskState::Paused => {}
            GenericTaskState::StoppingPaused => {
                return Err(precondition(format!("task {task_id} is still stopping: unpause it once it is PAUSED")));
            }
            _ => return Err(precondition(format!("cannot unpause task {task_id} as it is not in paused state"))),
        }
        let all = self.all_generic().await?;
        for t in descendants(&all, task_id) {
            if generic_state(t) == GenericTaskState::Paused {
                self.cluster.notify(ClusterEvent::UnpauseTask { task_id: t.task_id.clone() });
            }
        }
        Ok(())
    }

    async fn all_generic(&self) -> ApiResult<Vec<CommandTaskRecord>> {
        let filter = CommandTaskFilter { task_types: vec![TaskType::Generic.as_str().to_owned()], ..Default::default() };
        Ok(self.store.list_command_tasks(&filter).await?)
    }
}

fn precondition(message: String) -> ApiError {
    ApiError::new(ErrorCode::FailedPrecondition, message)
}

/// A generic task's state: an ended one's from its exit status, an open one's as stored.
pub fn generic_state(record: &CommandTaskRecord) -> GenericTaskState {
    let ended = record.end_time.map(|_| {
        let status = record.exit_status.as_deref().unwrap_or_default();
        (status == EXITED_SUCCESSFULLY, status.starts_with(KILLED))
    });
    GenericTaskState::of(&record.extra, ended)
}

/// The task at the top of `task_id`'s `parentId` chain.
fn root_of(all: &[CommandTaskRecord], task_id: &str) -> String {
    let mut current = task_id.to_owned();
    let mut seen = HashSet::new();
    while seen.insert(current.clone()) {
        let parent = all.iter().find(|t| t.task_id == current).and_then(|t| generic_task::parent_of(&t.extra));
        match parent {
            Some(p) => current = p.to_owned(),
            None => break,
        }
    }
    current
}

/// `root` and every task below it, root first.
fn descendants<'a>(all: &'a [CommandTaskRecord], root: &str) -> Vec<&'a CommandTaskRecord> {
    let mut out: Vec<&CommandTaskRecord> = all.iter().filter(|t| t.task_id == root).collect();
    let mut seen: HashSet<&str> = out.iter().map(|t| t.task_id.as_str()).collect();
    let mut i = 0;
    while i < out.len() {
        let parent = out[i].task_id.clone();
        for child in all.iter().filter(|t| generic_task::parent_of(&t.extra) == Some(parent.as_str())) {
            if seen.insert(child.task_id.as_str()) {
                out.push(child);
            }
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, parent: Option<&str>) -> CommandTaskRecord {
        CommandTaskRecord {
            task_id: id.to_owned(),
            task_type: TaskType::Generic.as_str().to_owned(),
            job_id: String::new(),
            owner_id: 1,
            owner_username: "u".to_owned(),
            workspace_id: 1,
            description: String::new(),
            config: json!({}),
            extra: parent.map_or_else(|| json!({}), |p| json!({ PARENT_ID: p })),
            start_time: chrono::Utc::now(),
            end_time: None,
            exit_status: None,
            priority: None,
        }
    }

    #[test]
    fn trees_follow_parent_ids() {
        let all = [task("a", None), task("b", Some("a")), task("c", Some("b")), task("d", None), task("e", Some("a"))];
        let ids = |v: Vec<&CommandTaskRecord>| v.iter().map(|t| t.task_id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(descendants(&all, "a")), ["a", "b", "e", "c"]);
        assert_eq!(ids(descendants(&all, "b")), ["b", "c"]);
        assert_eq!(root_of(&all, "c"), "a");
        assert_eq!(root_of(&all, "d"), "d");
        let cycle = [task("x", Some("y")), task("y", Some("x"))];
        assert_eq!(ids(descendants(&cycle, "x")), ["x", "y"]);
        assert!(["x", "y"].contains(&root_of(&cycle, "x").as_str()));
    }

    #[test]
    fn ended_tasks_take_their_state_from_the_exit() {
        let mut t = task("a", None);
        assert_eq!(generic_state(&t), GenericTaskState::Active);
        t.end_time = Some(chrono::Utc::now());
        t.exit_status = Some(EXITED_SUCCESSFULLY.to_owned());
        assert_eq!(generic_state(&t), GenericTaskState::Completed);
        t.exit_status = Some(format!("{KILLED} before it started"));
        assert_eq!(generic_state(&t), GenericTaskState::Canceled);
        t.exit_status = Some("allocation stopped early: exit code 3".to_owned());
        assert_eq!(generic_state(&t), GenericTaskState::Error);
    }
}
