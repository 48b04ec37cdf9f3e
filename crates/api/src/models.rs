//! The model registry (`/api/v1/models*`): models and their versions, each version a registered
//! checkpoint. A `{modelName}` path segment is a model's name or, when numeric, its id.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::checkpoints::Checkpoint;
use crate::pagination::Pagination;
use crate::users::OrderBy;
use crate::wire_enum::wire_enum;

wire_enum! {
    /// `sortBy` of `GET /api/v1/models`.
    pub enum ModelSortBy {
        Unspecified = "SORT_BY_UNSPECIFIED",
        Name = "SORT_BY_NAME",
        Description = "SORT_BY_DESCRIPTION",
        CreationTime = "SORT_BY_CREATION_TIME",
        LastUpdatedTime = "SORT_BY_LAST_UPDATED_TIME",
        NumVersions = "SORT_BY_NUM_VERSIONS",
        Workspace = "SORT_BY_WORKSPACE",
    }
}

wire_enum! {
    /// `sortBy` of `GET /api/v1/models/{modelName}/versions`.
    pub enum ModelVersionSortBy {
        Unspecified = "SORT_BY_UNSPECIFIED",
        Version = "SORT_BY_VERSION",
        CreationTime = "SORT_BY_CREATION_TIME",
    }
}

/// `v1Model`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Model {
    pub id: i32,
    pub name: String,
    pub description: String,
    #[schema(value_type = Object)]
    pub metadata: Value,
    pub creation_time: DateTime<Utc>,
    pub last_updated_time: DateTime<Utc>,
    pub num_versions: i32,
    pub labels: Vec<String>,
    pub username: String,
    pub user_id: i32,
    pub workspace_id: i32,
    pub archived: bool,
    pub notes: String,
}

/// `v1ModelVersion`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelVersion {
    pub id: i32,
    pub model: Model,
    pub checkpoint: Checkpoint,
    pub version: i32,
    pub creation_time: DateTime<Utc>,
    pub last_updated_time: DateTime<Utc>,
    pub name: String,
    #[schema(value_type = Object)]
    pub metadata: Value,
    pub comment: String,
    pub username: String,
    pub user_id: i32,
    pub labels: Vec<String>,
    pub notes: String,
}

/// `POST /api/v1/models`. The SDK sends unset fields as `null`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostModelRequest {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    #[serde(default)]
    pub labels: Option<Vec<String>>,
    #[serde(default)]
    pub notes: Option<String>,
    #[serde(default, alias = "workspace_id")]
    pub workspace_id: Option<i32>,
    #[serde(default, alias = "workspace_name")]
    pub workspace_name: Option<String>,
}

/// `v1PatchModel`: only the fields present change.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PatchModel {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    #[serde(default)]
    pub labels: Option<Vec<String>>,
    #[serde(default)]
    pub notes: Option<String>,
    #[serde(default, alias = "workspace_id")]
    pub workspace_id: Option<i32>,
    #[serde(default, alias = "workspace_name")]
    pub workspace_name: Option<String>,
}

/// `POST /api/v1/models/{modelName}/versions`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostModelVersionRequest {
    /// The path's model counts; this one is accepted and ignored, as upstream.
    #[serde(default, alias = "model_name")]
    pub model_name: Option<String>,
    #[serde(alias = "checkpoint_uuid")]
    pub checkpoint_uuid: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub comment: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    #[serde(default)]
    pub labels: Option<Vec<String>>,
    #[serde(default)]
    pub notes: Option<String>,
}

/// `v1PatchModelVersion`: only the fields present change (a `checkpoint` is not changeable).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PatchModelVersion {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub comment: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    #[serde(default)]
    pub labels: Option<Vec<String>>,
    #[serde(default)]
    pub notes: Option<String>,
}

/// Query parameters of `GET /api/v1/models`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct GetModelsQuery {
    #[serde(default, alias = "sort_by", skip_serializing_if = "Option::is_none")]
    pub sort_by: Option<ModelSortBy>,
    #[serde(default, alias = "order_by", skip_serializing_if = "Option::is_none")]
    pub order_by: Option<OrderBy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<i32>,
    /// 0 or absent: all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i32>,
    /// Substring of the name (case-insensitive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Substring of the description (case-insensitive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived: Option<bool>,
    /// Models carrying all of these labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub users: Vec<String>,
    #[serde(default, alias = "user_ids", skip_serializing_if = "Vec::is_empty")]
    pub user_ids: Vec<i32>,
    #[serde(default, alias = "workspace_ids", skip_serializing_if = "Vec::is_empty")]
    pub workspace_ids: Vec<i32>,
    #[serde(default, alias = "workspace_names", skip_serializing_if = "Vec::is_empty")]
    pub workspace_names: Vec<String>,
}

/// Query parameters of `GET /api/v1/models/{modelName}/versions`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct GetModelVersionsQuery {
    #[serde(default, alias = "sort_by", skip_serializing_if = "Option::is_none")]
    pub sort_by: Option<ModelVersionSortBy>,
    #[serde(default, alias = "order_by", skip_serializing_if = "Option::is_none")]
    pub order_by: Option<OrderBy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<i32>,
    /// 0 or absent: all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GetModelsResponse {
    pub models: Vec<Model>,
    pub pagination: Pagination,
}

/// `GET`, `POST` and `PATCH` of one model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ModelResponse {
    pub model: Model,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetModelVersionsResponse {
    pub model: Model,
    pub model_versions: Vec<ModelVersion>,
    pub pagination: Pagination,
}

/// `GET`, `POST` and `PATCH` of one version.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelVersionResponse {
    pub model_version: ModelVersion,
}

/// The empty answer of delete, archive and unarchive.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ModelEmptyResponse {}
