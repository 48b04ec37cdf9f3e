//! Workspaces: create, list, describe, edit, archive, pin, delete. Any user may create one;
//! only its creator or an admin may change or delete it, only an admin may set its agent user
//! group (upstream's OSS rules). The built-in workspace 1 refuses every change.

use std::sync::Arc;

use resolute_api::users::AgentUserGroup as WireAgentUserGroup;
use resolute_api::workspaces::{GetWorkspacesQuery, PatchWorkspace, PostWorkspaceRequest, WorkspaceSortBy};
use resolute_store::{
    AgentUserGroup, Deletion, NewWorkspace, OrderDirection, ProjectFilter, Store, StoreError, WorkspaceFilter, WorkspacePatch,
    WorkspaceRecord, WorkspaceSort, db_now,
};
use serde_json::Value;

use super::Principal;
use super::input_limits::{NAME_BYTES, check_text};
use super::paging::{MAX_PAGE_SIZE, page_limit};
use super::users::validate_agent_user_group;
use crate::error::{ApiError, ApiResult};

/// Upstream's limit on workspace and project names.
pub const MAX_NAME_CHARS: usize = 80;

/// Storage types a workspace may set (as an experiment's `checkpoint_storage.type`).
const STORAGE_TYPES: [&str; 5] = ["shared_fs", "directory", "s3", "gcs", "azure"];

#[derive(Clone)]
pub struct WorkspaceService {
    store: Arc<dyn Store>,
}

/// A name a workspace or project may have; `entity` names it in the error.
pub fn validate_name(entity: &str, name: &str) -> ApiResult<()> {
    if name.trim().is_empty() {
        return Err(ApiError::invalid(format!("name: a {entity} needs a name")));
    }
    if name.trim() != name {
        return Err(ApiError::invalid(format!("name: {entity} name {name:?} must not start or end with whitespace")));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(ApiError::invalid(format!("name: {entity} names are at most {MAX_NAME_CHARS} characters")));
    }
    if name.chars().any(char::is_control) {
        return Err(ApiError::invalid(format!("name: {entity} name {name:?} must not contain control characters")));
    }
    Ok(())
}

/// `None` for absent or `{}` (no storage of its own); otherwise an object naming a known type.
fn checkpoint_storage(value: Option<Value>) -> ApiResult<Option<Value>> {
    let Some(value) = value.filter(|v| !v.is_null()) else { return Ok(None) };
    let Value::Object(map) = &value else {
        return Err(ApiError::invalid(format!("checkpointStorageConfig: must be an object, found {value}")));
    };
    if map.is_empty() {
        return Ok(None);
    }
    match map.get("type").and_then(Value::as_str) {
        Some(t) if STORAGE_TYPES.contains(&t) => Ok(Some(value)),
        Some(t) => Err(ApiError::invalid(format!(
            "checkpointStorageConfig.type: {t:?} is not a storage type (one of {})",
            STORAGE_TYPES.join(", ")
        ))),
        None => Err(ApiError::invalid("checkpointStorageConfig.type is required (shared_fs, directory, s3, gcs or azure)")),
    }
}

fn check_pools(compute: Option<&str>, aux: Option<&str>) -> ApiResult<()> {
    check_text("defaultComputePool", compute.unwrap_or_default(), NAME_BYTES)?;
    check_text("defaultAuxPool", aux.unwrap_or_default(), NAME_BYTES)
}

fn agent_user_group(caller: &Principal, group: Option<&WireAgentUserGroup>) -> ApiResult<Option<AgentUserGroup>> {
    let Some(group) = group else { return Ok(None) };
    if !caller.user.admin {
        return Err(ApiError::forbidden("agentUserGroup: only admins may set a workspace's agent user group"));
    }
    validate_agent_user_group(group, "agentUserGroup").map(Some)
}

fn not_found(id: i32) -> impl FnOnce(StoreError) -> ApiError {
    move |e| match e {
        StoreError::NotFound { entity: "workspace", .. } => ApiError::not_found(format!("workspace {id} not found")),
        other => other.into(),
    }
}

fn name_taken(name: &str) -> impl FnOnce(StoreError) -> ApiError + '_ {
    move |e| match e {
        StoreError::Conflict { .. } => ApiError::new(
            resolute_api::error::ErrorCode::AlreadyExists,
            format!("workspace name {name:?} is already taken: choose another name"),
        ),
        StoreError::Precondition { reason } => ApiError::invalid(reason),
        other => other.into(),
    }
}

impl WorkspaceService {
    pub fn new(store: Arc<dyn Store>) -> Self {
        WorkspaceService { store }
    }

    pub async fn list(&self, caller: &Principal, q: &GetWorkspacesQuery) -> ApiResult<(Vec<WorkspaceRecord>, i64, i64)> {
        let offset = i64::from(q.offset.unwrap_or(0).max(0));
        let filter = WorkspaceFilter {
            viewer_id: caller.user.id,
            name: q.name.clone().filter(|n| !n.is_empty()),
            name_case_sensitive: q.name_case_sensitive.clone().filter(|n| !n.is_empty()),
            archived: q.archived,
            pinned: q.pinned,
            user_ids: q.user_ids.clone(),
            usernames: q.users.clone(),
            sort: match q.sort_by {
                Some(WorkspaceSortBy::Name) => WorkspaceSort::Name,
                _ => WorkspaceSort::Id,
            },
            order: match q.order_by {
                Some(resolute_api::users::OrderBy::Desc) => OrderDirection::Desc,
                _ => OrderDirection::Asc,
            },
            offset,
            limit: page_limit(i64::from(q.limit.unwrap_or(0)), MAX_PAGE_SIZE),
        };
        let (rows, total) = self.store.workspace_page(&filter).await?;
        Ok((rows, total, offset))
    }

    pub async fn get(&self, caller: &Principal, id: i32) -> ApiResult<WorkspaceRecord> {
        self.store.workspace_by_id(id, caller.user.id).await.map_err(not_found(id))
    }

    pub async fn create(&self, caller: &Principal, req: PostWorkspaceRequest) -> ApiResult<WorkspaceRecord> {
        validate_name("workspace", &req.name)?;
        let group = agent_user_group(caller, req.agent_user_group.as_ref())?;
        let storage = checkpoint_storage(req.checkpoint_storage_config)?;
        check_pools(req.default_compute_pool.as_deref(), req.default_aux_pool.as_deref())?;
        let new = NewWorkspace {
            name: req.name.clone(),
            user_id: caller.user.id,
            checkpoint_storage_config: storage,
            agent_user_group: group,
            default_compute_pool: req.default_compute_pool.unwrap_or_default(),
            default_aux_pool: req.default_aux_pool.unwrap_or_default(),
        };
        let created = self.store.create_workspace(new).await.map_err(name_taken(&req.name))?;
        tracing::info!(workspace = created.id, name = %created.name, by = %caller.user.username, "created workspace");
        Ok(created)
    }

    /// The workspace, if the caller may change it: 400 for the built-in one, 403 unless creator
    /// or admin.
    async fn changeable(&self, caller: &Principal, id: i32, what: &str) -> ApiResult<WorkspaceRecord> {
        let w = self.get(caller, id).await?;
        if w.immutable {
            return Err(ApiError::invalid(format!("workspace {:?} is the built-in workspace: it cannot be {what}", w.name)));
        }
        if !caller.user.admin && w.user_id != Some(caller.user.id) {
            return Err(ApiError::forbidden(format!("only admins and its creator may change workspace {:?}", w.name)));
        }
        Ok(w)
    }

    pub async fn patch(&self, caller: &Principal, id: i32, req: PatchWorkspace) -> ApiResult<WorkspaceRecord> {
        self.changeable(caller, id, "edited").await?;
        if let Some(name) = &req.name {
            validate_name("workspace", name)?;
        }
        let group = agent_user_group(caller, req.agent_user_group.as_ref())?;
        let storage = match req.checkpoint_storage_config {
            Some(v) => Some(checkpoint_storage(Some(v))?),
            None => None,
        };
        let (compute, aux) =
            (req.default_compute_pool.or(req.default_compute_resource_pool), req.default_aux_pool.or(req.default_aux_resource_pool));
        check_pools(compute.as_deref(), aux.as_deref())?;
        let patch = WorkspacePatch {
            name: req.name.clone(),
            checkpoint_storage_config: storage,
            agent_user_group: group.map(Some),
            default_compute_pool: compute,
            default_aux_pool: aux,
        };
        let name = req.name.unwrap_or_default();
        self.store.patch_workspace(id, &patch).await.map_err(name_taken(&name))?;
        self.get(caller, id).await
    }

    pub async fn set_archived(&self, caller: &Principal, id: i32, archived: bool) -> ApiResult<()> {
        let what = if archived { "archived" } else { "unarchived" };
        self.changeable(caller, id, what).await?;
        self.store.set_workspace_archived(id, archived).await.map_err(not_found(id))
    }

    /// Pins are each user's own; any user who can see the workspace may pin it.
    pub async fn set_pinned(&self, caller: &Principal, id: i32, pinned: bool) -> ApiResult<()> {
        let at = pinned.then(db_now);
        self.store.set_workspace_pinned(id, caller.user.id, at).await.map_err(not_found(id))
    }

    /// `true` when deleted at once (a workspace without projects); `false` when refused (the
    /// reason left on the workspace, DELETE_FAILED) or when the deletion goes on in the
    /// background, as upstream's: the workspace shows DELETING, its projects go one by one (what
    /// `det workspace delete` polls), then it is gone. A deletion a master stop cut short goes
    /// on when the master starts (`resume_deletions`).
    pub async fn delete(&self, caller: &Principal, id: i32) -> ApiResult<bool> {
        let w = self.changeable(caller, id, "deleted").await?;
        if let Some(reason) = self.store.begin_workspace_deletion(id).await.map_err(not_found(id))? {
            tracing::warn!(workspace = id, name = %w.name, "workspace deletion refused: {reason}");
            return Ok(false);
        }
        tracing::info!(workspace = id, name = %w.name, by = %caller.user.username, projects = w.num_projects, "deleting workspace");
        if w.num_projects == 0 {
            return Ok(finish_deletion(self.store.as_ref(), id, &w.name).await);
        }
        let (store, name) = (self.store.clone(), w.name.clone());
        tokio::spawn(async move {
            finish_deletion(store.as_ref(), id, &name).await;
        });
        Ok(false)
    }

    /// Finishes, in the background, the deletions of workspaces a master stop left DELETING.
    pub async fn resume_deletions(&self) {
        let workspaces = match self.store.list_workspaces().await {
            Ok(w) => w,
            Err(e) => {
                tracing::error!("listing workspaces to resume their deletions: {e}");
                return;
            }
        };
        for w in workspaces.into_iter().filter(|w| w.state == resolute_store::WORKSPACE_STATE_DELETING) {
            tracing::info!(workspace = w.id, name = %w.name, "resuming the deletion of workspace");
            let store = self.store.clone();
            tokio::spawn(async move {
                finish_deletion(store.as_ref(), w.id, &w.name).await;
            });
        }
    }
}

/// Deletes a DELETING workspace's projects one by one, then the workspace (templates, ended
/// tasks); each step re-checks that nothing in it runs, and a refusal is recorded on the
/// workspace as DELETE_FAILED. Whether the workspace is gone.
async fn finish_deletion(store: &dyn Store, id: i32, name: &str) -> bool {
    let filter = ProjectFilter { workspace_id: id, ..Default::default() };
    match store.project_page(&filter).await {
        Ok((projects, _)) => {
            for p in projects {
                match store.delete_project(p.project.id).await {
                    Ok(Deletion::Deleted) => {}
                    // The workspace's own deletion below refuses for the same reason and records it.
                    Ok(Deletion::Refused { .. }) => break,
                    Err(e) => {
                        tracing::error!(workspace = id, project = p.project.id, "deleting a project of a deleting workspace: {e}");
                        break;
                    }
                }
            }
        }
        Err(e) => tracing::error!(workspace = id, "listing the projects of a deleting workspace: {e}"),
    }
    match store.delete_workspace(id).await {
        Ok(Deletion::Deleted) => {
            tracing::info!(workspace = id, name, "deleted workspace");
            true
        }
        Ok(Deletion::Refused { reason }) => {
            tracing::warn!(workspace = id, name, "workspace deletion failed: {reason}");
            false
        }
        Err(e) => {
            tracing::error!(workspace = id, name, "deleting workspace: {e}; it stays DELETING until deleted again");
            false
        }
    }
}
