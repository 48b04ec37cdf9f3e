//! Projects in a workspace: create, list, describe, edit, archive, delete, and experiments moved
//! between them (`det e move`, the bulk move). Any user may create one in a workspace that is
//! not archived; only its creator, the workspace's creator or an admin may change it. The
//! built-in project 1 refuses every change.

use std::sync::Arc;

use resolute_api::projects::{
    GetWorkspaceProjectsQuery, MoveExperimentsRequest, MoveResult, Note, PatchProject, PostProjectRequest, ProjectSortBy,
};
use resolute_store::{
    Deletion, NewProject, OrderDirection, ProjectFilter, ProjectPatch, ProjectRecord, ProjectSort, ProjectSummary, Store, StoreError,
};

use super::Principal;
use super::experiment_bulk::select_by_filters;
use super::input_limits::{DESCRIPTION_BYTES, NOTES_BYTES, check_text};
use super::paging::{MAX_PAGE_SIZE, page_limit};
use super::workspaces::{WorkspaceService, validate_name};
use crate::error::{ApiError, ApiResult};

/// Upstream's key rule: 1 to 5 letters or digits.
fn validate_key(key: &str) -> ApiResult<()> {
    if key.is_empty() || key.len() > 5 || !key.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(ApiError::invalid(format!("key: project key {key:?} must be 1 to 5 letters or digits")));
    }
    Ok(())
}

fn project_not_found(id: i32) -> impl FnOnce(StoreError) -> ApiError {
    move |e| match e {
        StoreError::NotFound { entity: "project", .. } => ApiError::not_found(format!("project {id} not found")),
        other => other.into(),
    }
}

fn write_error(e: StoreError) -> ApiError {
    match e {
        StoreError::Conflict { entity: "project", key } => ApiError::new(
            resolute_api::error::ErrorCode::AlreadyExists,
            format!("project name {key:?} is already taken in this workspace: choose another name"),
        ),
        StoreError::Conflict { key, .. } => {
            ApiError::new(resolute_api::error::ErrorCode::AlreadyExists, format!("key: project key {key:?} is already taken"))
        }
        StoreError::Precondition { reason } => ApiError::invalid(reason),
        other => other.into(),
    }
}

/// Refuses adding to an archived project or a project of an archived workspace.
pub fn check_open(project: &ProjectRecord, what: &str) -> ApiResult<()> {
    if project.workspace_archived {
        return Err(ApiError::invalid(format!(
            "workspace {:?} is archived: {what} cannot be added to its projects (unarchive it first)",
            project.workspace_name
        )));
    }
    if project.archived {
        return Err(ApiError::invalid(format!(
            "project {:?} is archived: {what} cannot be added to it (unarchive it first)",
            project.name
        )));
    }
    Ok(())
}

#[derive(Clone)]
pub struct ProjectService {
    store: Arc<dyn Store>,
    workspaces: WorkspaceService,
}

impl ProjectService {
    pub fn new(store: Arc<dyn Store>) -> Self {
        ProjectService { workspaces: WorkspaceService::new(store.clone()), store }
    }

    pub async fn list(
        &self,
        caller: &Principal,
        workspace_id: i32,
        q: &GetWorkspaceProjectsQuery,
    ) -> ApiResult<(Vec<ProjectSummary>, i64, i64)> {
        self.workspaces.get(caller, workspace_id).await?;
        let offset = i64::from(q.offset.unwrap_or(0).max(0));
        let filter = ProjectFilter {
            workspace_id,
            name: q.name.clone().filter(|n| !n.is_empty()),
            archived: q.archived,
            user_ids: q.user_ids.clone(),
            usernames: q.users.clone(),
            sort: match q.sort_by {
                Some(ProjectSortBy::Name) => ProjectSort::Name,
                Some(ProjectSortBy::Description) => ProjectSort::Description,
                Some(ProjectSortBy::LastExperimentStartTime) => ProjectSort::LastExperimentStartTime,
                // Ids follow creation order.
                _ => ProjectSort::Id,
            },
            order: match q.order_by {
                Some(resolute_api::users::OrderBy::Desc) => OrderDirection::Desc,
                _ => OrderDirection::Asc,
            },
            offset,
            limit: page_limit(i64::from(q.limit.unwrap_or(0)), MAX_PAGE_SIZE),
        };
        let (rows, total) = self.store.project_page(&filter).await?;
        Ok((rows, total, offset))
    }

    pub async fn get(&self, id: i32) -> ApiResult<ProjectSummary> {
        self.store.project_summary(id).await.map_err(project_not_found(id))
    }

    pub async fn create(&self, caller: &Principal, workspace_id: i32, req: PostProjectRequest) -> ApiResult<ProjectSummary> {
        if let Some(body_id) = req.workspace_id.filter(|w| *w != 0 && *w != workspace_id) {
            return Err(ApiError::invalid(format!("workspaceId: the body names workspace {body_id}, the path {workspace_id}")));
        }
        let workspace = self.workspaces.get(caller, workspace_id).await?;
        if workspace.archived {
            return Err(ApiError::invalid(format!("workspace {:?} is archived: projects cannot be added to it", workspace.name)));
        }
        if workspace.state == resolute_store::WORKSPACE_STATE_DELETING {
            return Err(ApiError::invalid(format!("workspace {:?} is being deleted: projects cannot be added to it", workspace.name)));
        }
        validate_name("project", &req.name)?;
        let description = req.description.unwrap_or_default();
        check_text("description", &description, DESCRIPTION_BYTES)?;
        let key = req.key.filter(|k| !k.is_empty());
        if let Some(key) = &key {
            validate_key(key)?;
        }
        let new = NewProject { name: req.name, description, key, workspace_id, user_id: caller.user.id };
        let created = self.store.create_project(new).await.map_err(write_error)?;
        tracing::info!(project = created.id, workspace = workspace_id, by = %caller.user.username, "created project");
        self.get(created.id).await
    }

    async fn changeable(&self, caller: &Principal, id: i32, what: &str) -> ApiResult<ProjectSummary> {
        let p = self.get(id).await?;
        if p.project.immutable {
            return Err(ApiError::invalid(format!("project {:?} is the built-in project: it cannot be {what}", p.project.name)));
        }
        if !caller.user.admin && p.project.user_id != Some(caller.user.id) {
            let workspace = self.workspaces.get(caller, p.project.workspace_id).await?;
            if workspace.user_id != Some(caller.user.id) {
                return Err(ApiError::forbidden(format!(
                    "only admins and the creators of the project or its workspace may change project {:?}",
                    p.project.name
                )));
            }
        }
        Ok(p)
    }

    pub async fn patch(&self, caller: &Principal, id: i32, req: PatchProject) -> ApiResult<ProjectSummary> {
        self.changeable(caller, id, "edited").await?;
        if let Some(name) = &req.name {
            validate_name("project", name)?;
        }
        if let Some(description) = &req.description {
            check_text("description", description, DESCRIPTION_BYTES)?;
        }
        if let Some(key) = &req.key {
            validate_key(key)?;
        }
        let patch = ProjectPatch { name: req.name, description: req.description, key: req.key, notes: None };
        self.store.patch_project(id, &patch).await.map_err(write_error)?;
        self.get(id).await
    }

    pub async fn set_archived(&self, caller: &Principal, id: i32, archived: bool) -> ApiResult<()> {
        let p = self.changeable(caller, id, if archived { "archived" } else { "unarchived" }).await?;
        if !archived && p.project.workspace_archived {
            return Err(ApiError::invalid(format!(
                "project {:?} is in archived workspace {:?}: unarchive the workspace first",
                p.project.name, p.project.workspace_name
            )));
        }
        self.store.set_project_archived(id, archived).await.map_err(project_not_found(id))
    }

    /// `true` when deleted; `false` when refused, the reason left on the project.
    pub async fn delete(&self, caller: &Principal, id: i32) -> ApiResult<bool> {
        let p = self.changeable(caller, id, "deleted").await?;
        match self.store.delete_project(id).await.map_err(project_not_found(id))? {
            Deletion::Deleted => {
                tracing::info!(project = id, name = %p.project.name, by = %caller.user.username, "deleted project");
                Ok(true)
            }
            Deletion::Refused { reason } => {
                tracing::warn!(project = id, name = %p.project.name, "project deletion refused: {reason}");
                Ok(false)
            }
        }
    }

    /// Moves one experiment: 404 for an unknown experiment or project, 400 into an archived one.
    pub async fn move_experiment(&self, caller: &Principal, experiment_id: i32, destination: i32) -> ApiResult<()> {
        let experiment = match self.store.experiment_by_id(experiment_id).await {
            Ok(e) => e,
            Err(StoreError::NotFound { .. }) => return Err(ApiError::not_found(format!("experiment {experiment_id} not found"))),
            Err(e) => return Err(e.into()),
        };
        if !caller.user.admin && experiment.owner_id != caller.user.id {
            return Err(ApiError::forbidden(format!("only admins and its owner may move experiment {experiment_id}")));
        }
        let target = self.store.project_by_id(destination).await.map_err(|e| match e {
            StoreError::NotFound { .. } => ApiError::not_found(format!("destinationProjectId: project {destination} not found")),
            other => other.into(),
        })?;
        check_open(&target, "experiments")?;
        if experiment.project_id == destination {
            return Ok(());
        }
        self.store.move_experiment(experiment_id, destination).await.map_err(|e| match e {
            StoreError::NotFound { entity: "experiment", .. } => ApiError::not_found(format!("experiment {experiment_id} not found")),
            other => other.into(),
        })?;
        tracing::info!(experiment = experiment_id, project = destination, by = %caller.user.username, "moved experiment");
        Ok(())
    }

    /// Replaces a project's notes: any user may, as upstream's OSS master allows; not in an
    /// archived project. Returns the project as stored.
    pub async fn set_notes(&self, _caller: &Principal, id: i32, notes: Vec<Note>) -> ApiResult<ProjectSummary> {
        let p = self.get(id).await?;
        if p.project.archived {
            return Err(ApiError::invalid(format!(
                "project {:?} is archived: its notes cannot change (unarchive it first)",
                p.project.name
            )));
        }
        let mut total = 0;
        for (i, n) in notes.iter().enumerate() {
            check_text(&format!("notes[{i}].name"), &n.name, DESCRIPTION_BYTES)?;
            total += n.name.len() + n.contents.len();
        }
        if total > NOTES_BYTES {
            return Err(ApiError::invalid(format!("notes: {total} bytes in all, more than the limit of {NOTES_BYTES}")));
        }
        let value = serde_json::to_value(&notes).map_err(|_| ApiError::internal())?;
        self.store.set_project_notes(id, &value).await.map_err(project_not_found(id))?;
        self.get(id).await
    }

    /// The bulk move: one result per experiment named by id or selected by `filters` in the
    /// source project, `error` empty on success.
    pub async fn move_experiments(&self, caller: &Principal, req: MoveExperimentsRequest) -> ApiResult<Vec<MoveResult>> {
        let ids = match &req.filters {
            Some(filters) => {
                let source = req.project_id.unwrap_or_default();
                if source != 0 {
                    self.get(source).await?;
                }
                select_by_filters(self.store.as_ref(), source, filters).await?
            }
            None => {
                if req.experiment_ids.len() > MAX_PAGE_SIZE as usize {
                    return Err(ApiError::invalid(format!(
                        "experimentIds: at most {MAX_PAGE_SIZE} experiments per move, found {}",
                        req.experiment_ids.len()
                    )));
                }
                req.experiment_ids.clone()
            }
        };
        let mut results = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(source) = req.project_id.filter(|p| *p != 0) {
                match self.store.experiment_by_id(id).await {
                    Ok(e) if e.project_id != source => {
                        results.push(MoveResult { error: format!("experiment {id} is not in project {source}"), id });
                        continue;
                    }
                    _ => {}
                }
            }
            let error = match self.move_experiment(caller, id, req.destination_project_id).await {
                Ok(()) => String::new(),
                Err(e) => e.message,
            };
            results.push(MoveResult { error, id });
        }
        Ok(results)
    }
}
