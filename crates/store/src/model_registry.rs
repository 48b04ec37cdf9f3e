//! Records of the model registry: models (a unique name in a workspace, with description, notes,
//! labels and metadata) and their versions (numbered 1, 2, … per model, each a registered
//! checkpoint with its own name, comment, notes, labels and metadata).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::model::OrderDirection;

#[derive(Clone, Debug)]
pub struct NewModel {
    pub name: String,
    pub description: String,
    pub notes: String,
    /// A JSON object.
    pub metadata: Value,
    pub labels: Vec<String>,
    pub user_id: i32,
    pub workspace_id: i32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ModelRecord {
    pub id: i32,
    pub name: String,
    pub description: String,
    pub notes: String,
    pub metadata: Value,
    pub labels: Vec<String>,
    pub user_id: i32,
    pub username: String,
    pub workspace_id: i32,
    pub archived: bool,
    pub creation_time: DateTime<Utc>,
    pub last_updated_time: DateTime<Utc>,
    pub num_versions: i32,
}

/// A partial update: `None` leaves a field as it is. Any change sets `last_updated_time`.
#[derive(Clone, Debug, Default)]
pub struct ModelPatch {
    pub name: Option<String>,
    pub description: Option<String>,
    pub notes: Option<String>,
    pub metadata: Option<Value>,
    pub labels: Option<Vec<String>>,
    pub workspace_id: Option<i32>,
    pub archived: Option<bool>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ModelSort {
    #[default]
    Id,
    Name,
    Description,
    CreationTime,
    LastUpdatedTime,
    NumVersions,
    /// By workspace name.
    Workspace,
}

#[derive(Clone, Debug, Default)]
pub struct ModelFilter {
    /// Case-insensitive (ASCII) substring of the name.
    pub name_contains: Option<String>,
    /// Case-insensitive (ASCII) substring of the description.
    pub description_contains: Option<String>,
    pub id: Option<i32>,
    pub archived: Option<bool>,
    /// Models carrying every one of these labels.
    pub labels: Vec<String>,
    pub user_ids: Vec<i32>,
    pub usernames: Vec<String>,
    pub workspace_ids: Vec<i32>,
    pub workspace_names: Vec<String>,
    pub sort: ModelSort,
    pub order: OrderDirection,
    pub offset: i64,
    /// `None` = all.
    pub limit: Option<i64>,
}

#[derive(Clone, Debug)]
pub struct NewModelVersion {
    pub model_id: i32,
    pub checkpoint_uuid: String,
    pub name: String,
    pub comment: String,
    pub notes: String,
    pub metadata: Value,
    pub labels: Vec<String>,
    pub user_id: i32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ModelVersionRecord {
    pub id: i32,
    pub model_id: i32,
    pub version: i32,
    pub checkpoint_uuid: String,
    pub name: String,
    pub comment: String,
    pub notes: String,
    pub metadata: Value,
    pub labels: Vec<String>,
    pub user_id: i32,
    pub username: String,
    pub creation_time: DateTime<Utc>,
    pub last_updated_time: DateTime<Utc>,
}

#[derive(Clone, Debug, Default)]
pub struct ModelVersionPatch {
    pub name: Option<String>,
    pub comment: Option<String>,
    pub notes: Option<String>,
    pub metadata: Option<Value>,
    pub labels: Option<Vec<String>>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ModelVersionSort {
    #[default]
    Version,
    CreationTime,
}

#[derive(Clone, Debug, Default)]
pub struct ModelVersionFilter {
    pub sort: ModelVersionSort,
    pub order: OrderDirection,
    pub offset: i64,
    /// `None` = all.
    pub limit: Option<i64>,
}
