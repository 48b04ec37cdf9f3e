//! The model registry's rules: models addressed by name or numeric id, unique names that cannot be
//! mistaken for ids, versions that register a completed checkpoint, and upstream OSS permissions
//! (any user creates and reads; only the owner or an admin changes or deletes).

use std::sync::Arc;

use resolute_store::{
    DEFAULT_WORKSPACE_ID, ModelFilter, ModelPatch, ModelRecord, ModelVersionFilter, ModelVersionPatch, ModelVersionRecord, NewModel,
    NewModelVersion, Store, StoreError,
};
use serde_json::Value;

use super::input_limits::{DESCRIPTION_BYTES, NAME_BYTES, NOTES_BYTES, check_config, check_labels, check_text};
use super::{CheckpointView, Principal, reports_at_step};
use crate::domain::CheckpointState;
use crate::error::{ApiError, ApiResult};
use resolute_api::error::ErrorCode;

/// What `POST /api/v1/models` asks for.
#[derive(Clone, Debug, Default)]
pub struct NewModelRequest {
    pub name: String,
    pub description: Option<String>,
    pub metadata: Option<Value>,
    pub labels: Option<Vec<String>>,
    pub notes: Option<String>,
    pub workspace_id: Option<i32>,
    pub workspace_name: Option<String>,
}

/// A model change: the store's patch plus a workspace given by name.
#[derive(Clone, Debug, Default)]
pub struct ModelChanges {
    pub patch: ModelPatch,
    pub workspace_name: Option<String>,
}

/// A version with the model it belongs to and its checkpoint, as the wire shows it.
#[derive(Clone, Debug)]
pub struct ModelVersionView {
    pub model: ModelRecord,
    pub version: ModelVersionRecord,
    pub checkpoint: CheckpointView,
}

#[derive(Clone)]
pub struct ModelService {
    store: Arc<dyn Store>,
}

impl ModelService {
    pub fn new(store: Arc<dyn Store>) -> Self {
        ModelService { store }
    }

    pub async fn create(&self, caller: &Principal, req: NewModelRequest) -> ApiResult<ModelRecord> {
        check_name(&req.name)?;
        let description = req.description.unwrap_or_default();
        let notes = req.notes.unwrap_or_default();
        let metadata = req.metadata.filter(|m| !m.is_null()).unwrap_or_else(|| Value::Object(Default::default()));
        let labels = req.labels.unwrap_or_default();
        check_details(Some(&description), Some(&notes), Some(&metadata), Some(&labels))?;
        let workspace_id = match self.workspace(req.workspace_id, req.workspace_name.as_deref()).await? {
            Some(id) => id,
            None => DEFAULT_WORKSPACE_ID,
        };
        let new = NewModel { name: req.name.clone(), description, notes, metadata, labels, user_id: caller.user.id, workspace_id };
        match self.store.create_model(new).await {
            Ok(model) => {
                tracing::info!(model = %model.name, id = model.id, by = %caller.user.username, "created model");
                Ok(model)
            }
            Err(StoreError::Conflict { .. }) => {
                Err(ApiError::new(ErrorCode::AlreadyExists, format!("a model named {:?} already exists; choose another name", req.name)))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The model named `identifier`, or with that id when it is a number; 404 naming it.
    pub async fn get(&self, identifier: &str) -> ApiResult<ModelRecord> {
        let found = match identifier.parse::<i32>() {
            Ok(id) => self.store.model_by_id(id).await,
            Err(_) => self.store.model_by_name(identifier).await,
        };
        found.map_err(|e| match e {
            StoreError::NotFound { .. } => ApiError::not_found(format!("model {identifier:?} not found")),
            e => e.into(),
        })
    }

    pub async fn list(&self, mut filter: ModelFilter) -> ApiResult<(Vec<ModelRecord>, i64)> {
        filter.name_contains = filter.name_contains.filter(|n| !n.is_empty());
        filter.description_contains = filter.description_contains.filter(|n| !n.is_empty());
        Ok(self.store.list_models(&filter).await?)
    }

    pub async fn patch(&self, caller: &Principal, identifier: &str, changes: ModelChanges) -> ApiResult<ModelRecord> {
        let model = self.get(identifier).await?;
        owner_or_admin(caller, model.user_id, &model.username, &format!("edit model {:?}", model.name))?;
        let ModelChanges { mut patch, workspace_name } = changes;
        if let Some(name) = &patch.name {
            check_name(name)?;
        }
        check_details(patch.description.as_deref(), patch.notes.as_deref(), patch.metadata.as_ref(), patch.labels.as_deref())?;
        if patch.metadata.as_ref().is_some_and(Value::is_null) {
            patch.metadata = None;
        }
        patch.workspace_id = self.workspace(patch.workspace_id, workspace_name.as_deref()).await?;
        self.store.update_model(model.id, &patch).await.map_err(|e| match e {
            StoreError::Conflict { .. } => ApiError::new(
                ErrorCode::AlreadyExists,
                format!("a model named {:?} already exists; choose another name", patch.name.clone().unwrap_or_default()),
            ),
            e => e.into(),
        })
    }

    pub async fn set_archived(&self, caller: &Principal, identifier: &str, archived: bool) -> ApiResult<()> {
        let model = self.get(identifier).await?;
        let verb = if archived { "archive" } else { "unarchive" };
        owner_or_admin(caller, model.user_id, &model.username, &format!("{verb} model {:?}", model.name))?;
        self.store.update_model(model.id, &ModelPatch { archived: Some(archived), ..Default::default() }).await?;
        Ok(())
    }

    /// Deletes the model and its versions (their checkpoints become collectable again).
    pub async fn delete(&self, caller: &Principal, identifier: &str) -> ApiResult<()> {
        let model = self.get(identifier).await?;
        owner_or_admin(caller, model.user_id, &model.username, &format!("delete model {:?}", model.name))?;
        self.store.delete_model(model.id).await?;
        tracing::info!(model = %model.name, id = model.id, by = %caller.user.username, "deleted model");
        Ok(())
    }

    /// Registers a completed checkpoint as the model's next version.
    pub async fn register_version(&self, caller: &Principal, identifier: &str, req: NewModelVersion) -> ApiResult<ModelVersionView> {
        let model = self.get(identifier).await?;
        if model.archived {
            return Err(ApiError::new(
                ErrorCode::FailedPrecondition,
                format!("model {:?} is archived; unarchive it before registering versions", model.name),
            ));
        }
        let uuid = req.checkpoint_uuid.trim();
        if uuid.is_empty() {
            return Err(ApiError::invalid("checkpointUuid is required"));
        }
        let checkpoint = self.store.checkpoint_by_uuid(uuid).await.map_err(|e| match e {
            StoreError::NotFound { .. } => ApiError::not_found(format!("checkpoint {uuid:?} not found")),
            e => e.into(),
        })?;
        if CheckpointState::parse(&checkpoint.state) != Some(CheckpointState::Completed) {
            return Err(ApiError::new(
                ErrorCode::FailedPrecondition,
                format!("checkpoint {uuid} is {}; only a completed checkpoint can be registered", checkpoint.state),
            ));
        }
        check_text("name", &req.name, NAME_BYTES)?;
        check_text("comment", &req.comment, DESCRIPTION_BYTES)?;
        check_details(None, Some(&req.notes), Some(&req.metadata), Some(&req.labels))?;
        let new = NewModelVersion { model_id: model.id, checkpoint_uuid: uuid.to_owned(), user_id: caller.user.id, ..req };
        let version = self.store.create_model_version(new).await.map_err(|e| match e {
            StoreError::NotFound { .. } => ApiError::not_found(format!("checkpoint {uuid:?} not found")),
            e => e.into(),
        })?;
        tracing::info!(model = %model.name, version = version.version, checkpoint = %uuid, by = %caller.user.username, "registered model version");
        let model = self.store.model_by_id(model.id).await?;
        self.view(model, version).await
    }

    pub async fn version(&self, identifier: &str, number: i32) -> ApiResult<ModelVersionView> {
        let model = self.get(identifier).await?;
        let version = self.version_record(&model, number).await?;
        self.view(model, version).await
    }

    pub async fn versions(&self, identifier: &str, filter: ModelVersionFilter) -> ApiResult<(ModelRecord, Vec<ModelVersionView>, i64)> {
        let model = self.get(identifier).await?;
        let (records, total) = self.store.list_model_versions(model.id, &filter).await?;
        let mut views = Vec::with_capacity(records.len());
        for version in records {
            views.push(self.view(model.clone(), version).await?);
        }
        Ok((model, views, total))
    }

    pub async fn patch_version(
        &self,
        caller: &Principal,
        identifier: &str,
        number: i32,
        mut patch: ModelVersionPatch,
    ) -> ApiResult<ModelVersionView> {
        let model = self.get(identifier).await?;
        let version = self.version_record(&model, number).await?;
        version_owner_or_admin(caller, &model, &version, "edit")?;
        if let Some(name) = &patch.name {
            check_text("name", name, NAME_BYTES)?;
        }
        if let Some(comment) = &patch.comment {
            check_text("comment", comment, DESCRIPTION_BYTES)?;
        }
        check_details(None, patch.notes.as_deref(), patch.metadata.as_ref(), patch.labels.as_deref())?;
        if patch.metadata.as_ref().is_some_and(Value::is_null) {
            patch.metadata = None;
        }
        let version = self.store.update_model_version(model.id, number, &patch).await?;
        self.view(model, version).await
    }

    pub async fn delete_version(&self, caller: &Principal, identifier: &str, number: i32) -> ApiResult<()> {
        let model = self.get(identifier).await?;
        let version = self.version_record(&model, number).await?;
        version_owner_or_admin(caller, &model, &version, "delete")?;
        self.store.delete_model_version(model.id, number).await?;
        tracing::info!(model = %model.name, version = number, by = %caller.user.username, "deleted model version");
        Ok(())
    }

    async fn version_record(&self, model: &ModelRecord, number: i32) -> ApiResult<ModelVersionRecord> {
        self.store.model_version(model.id, number).await.map_err(|e| match e {
            StoreError::NotFound { .. } => ApiError::not_found(format!("model {:?} has no version {number}", model.name)),
            e => e.into(),
        })
    }

    /// The version with its checkpoint's training context (config, hparams, metrics at its step).
    async fn view(&self, model: ModelRecord, version: ModelVersionRecord) -> ApiResult<ModelVersionView> {
        let record = self.store.checkpoint_by_uuid(&version.checkpoint_uuid).await?;
        let mut checkpoint =
            CheckpointView { record, experiment_config: None, hparams: None, training_metrics: None, validation_metrics: None };
        if let Some(trial_id) = checkpoint.record.trial_id {
            let trial = self.store.trial_by_id(trial_id).await?;
            let experiment = self.store.experiment_by_id(trial.experiment_id).await?;
            let (training, validation) = reports_at_step(self.store.as_ref(), trial_id, checkpoint.record.steps_completed).await?;
            checkpoint.training_metrics = training;
            checkpoint.validation_metrics = validation;
            checkpoint.experiment_config = Some(experiment.config.into_value());
            checkpoint.hparams = Some(trial.hparams);
        }
        Ok(ModelVersionView { model, version, checkpoint })
    }

    /// The workspace a request names by id or by name (the name wins when both are given, as the
    /// CLI sends only one); `None` when it names none. 404 naming a missing one; an archived
    /// workspace takes no models.
    async fn workspace(&self, id: Option<i32>, name: Option<&str>) -> ApiResult<Option<i32>> {
        let name = name.filter(|n| !n.is_empty());
        let id = id.filter(|id| *id != 0);
        if name.is_none() && id.is_none() {
            return Ok(None);
        }
        let workspaces = self.store.list_workspaces().await?;
        let found = match (name, id) {
            (Some(name), _) => workspaces
                .into_iter()
                .find(|w| w.name == name)
                .ok_or_else(|| ApiError::not_found(format!("workspace {name:?} not found")))?,
            (None, Some(id)) => {
                workspaces.into_iter().find(|w| w.id == id).ok_or_else(|| ApiError::not_found(format!("workspace {id} not found")))?
            }
            (None, None) => return Ok(None),
        };
        if found.archived {
            return Err(ApiError::new(
                ErrorCode::FailedPrecondition,
                format!("workspace {:?} is archived; unarchive it or choose another workspace", found.name),
            ));
        }
        Ok(Some(found.id))
    }
}

/// A model name is unique, and must not read as an id (paths take either) or hold a `/`.
fn check_name(name: &str) -> ApiResult<()> {
    if name.trim().is_empty() {
        return Err(ApiError::invalid("name: a model needs a name"));
    }
    check_text("name", name, NAME_BYTES)?;
    if name.parse::<i64>().is_ok() {
        return Err(ApiError::invalid(format!("name: model names cannot be only numbers ({name:?} would read as an id)")));
    }
    if name.contains('/') {
        return Err(ApiError::invalid(format!("name: model names cannot contain '/' ({name:?})")));
    }
    Ok(())
}

fn check_details(description: Option<&str>, notes: Option<&str>, metadata: Option<&Value>, labels: Option<&[String]>) -> ApiResult<()> {
    if let Some(description) = description {
        check_text("description", description, DESCRIPTION_BYTES)?;
    }
    if let Some(notes) = notes {
        check_text("notes", notes, NOTES_BYTES)?;
    }
    if let Some(metadata) = metadata.filter(|m| !m.is_null()) {
        if !metadata.is_object() {
            return Err(ApiError::invalid(format!("metadata must be a JSON object, found {metadata}")));
        }
        check_config("metadata", metadata)?;
    }
    if let Some(labels) = labels {
        check_labels("labels", labels)?;
    }
    Ok(())
}

fn owner_or_admin(caller: &Principal, owner_id: i32, owner: &str, action: &str) -> ApiResult<()> {
    if caller.user.admin || caller.user.id == owner_id {
        return Ok(());
    }
    Err(ApiError::forbidden(format!("only the owner ({owner}) or an admin may {action}")))
}

/// A version may be changed by whoever registered it, the model's owner, or an admin.
fn version_owner_or_admin(caller: &Principal, model: &ModelRecord, version: &ModelVersionRecord, verb: &str) -> ApiResult<()> {
    if caller.user.admin || caller.user.id == version.user_id || caller.user.id == model.user_id {
        return Ok(());
    }
    Err(ApiError::forbidden(format!(
        "only the model's owner ({}), the version's ({}), or an admin may {verb} version {} of model {:?}",
        model.username, version.username, version.version, model.name
    )))
}
