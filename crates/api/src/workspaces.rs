//! Workspaces (`/api/v1/workspaces…`): the listing `det cmd list` reads for names, and what
//! `det workspace create/describe/edit/archive/pin/delete` send and read.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::pagination::Pagination;
use crate::users::AgentUserGroup;
use crate::users::OrderBy;
use crate::wire_enum::wire_enum;

wire_enum! {
    /// `v1WorkspaceState`: progress of a deletion.
    pub enum WorkspaceState {
        Unspecified = "WORKSPACE_STATE_UNSPECIFIED",
        Deleting = "WORKSPACE_STATE_DELETING",
        DeleteFailed = "WORKSPACE_STATE_DELETE_FAILED",
        Deleted = "WORKSPACE_STATE_DELETED",
    }
}

wire_enum! {
    /// `sortBy` of `GET /api/v1/workspaces`.
    pub enum WorkspaceSortBy {
        Unspecified = "SORT_BY_UNSPECIFIED",
        Id = "SORT_BY_ID",
        Name = "SORT_BY_NAME",
    }
}

/// `v1Workspace`. The bindings index every field up to `errorMessage` directly.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Workspace {
    pub id: i32,
    pub name: String,
    #[serde(default)]
    pub archived: bool,
    #[serde(default)]
    pub username: String,
    #[serde(default)]
    pub immutable: bool,
    #[serde(default)]
    pub num_projects: i32,
    #[serde(default)]
    pub pinned: bool,
    #[serde(default)]
    pub user_id: i32,
    #[serde(default)]
    pub num_experiments: i32,
    pub state: WorkspaceState,
    #[serde(default)]
    pub error_message: String,
    /// `null` when tasks run as the owner's own agent user.
    #[serde(default)]
    pub agent_user_group: Option<AgentUserGroup>,
    /// `null` when the cluster's storage is used.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub checkpoint_storage_config: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub default_compute_pool: String,
    #[serde(default)]
    pub default_aux_pool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_created_namespace: Option<String>,
}

/// Query parameters of `GET /api/v1/workspaces`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct GetWorkspacesQuery {
    #[serde(default, alias = "sort_by", skip_serializing_if = "Option::is_none")]
    pub sort_by: Option<WorkspaceSortBy>,
    #[serde(default, alias = "order_by", skip_serializing_if = "Option::is_none")]
    pub order_by: Option<OrderBy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub users: Vec<String>,
    #[serde(default, alias = "user_ids", skip_serializing_if = "Vec::is_empty")]
    pub user_ids: Vec<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned: Option<bool>,
    /// The exact name (upstream's `workspace_by_name` looks workspaces up by it).
    #[serde(default, alias = "name_case_sensitive", skip_serializing_if = "Option::is_none")]
    pub name_case_sensitive: Option<String>,
}

/// `GET /api/v1/workspaces`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GetWorkspacesResponse {
    pub workspaces: Vec<Workspace>,
    pub pagination: Pagination,
}

/// `POST /api/v1/workspaces`. Namespace bindings and quotas are Kubernetes/EE features: accepted
/// and ignored, as upstream's OSS master on agents does.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostWorkspaceRequest {
    pub name: String,
    #[serde(default, alias = "agent_user_group")]
    pub agent_user_group: Option<AgentUserGroup>,
    #[serde(default, alias = "checkpoint_storage_config")]
    #[schema(value_type = Option<Object>)]
    pub checkpoint_storage_config: Option<Value>,
    #[serde(default, alias = "default_compute_pool")]
    pub default_compute_pool: Option<String>,
    #[serde(default, alias = "default_aux_pool")]
    pub default_aux_pool: Option<String>,
    #[serde(default, alias = "cluster_namespace_meta")]
    #[schema(value_type = Option<Object>)]
    pub cluster_namespace_meta: Option<Value>,
    #[serde(default, alias = "cluster_quota_pairs")]
    #[schema(value_type = Option<Object>)]
    pub cluster_quota_pairs: Option<Value>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostWorkspaceResponse {
    pub workspace: Workspace,
    #[schema(value_type = Object)]
    pub namespace_bindings: Value,
}

/// `GET /api/v1/workspaces/{id}`, and the answer to `PATCH`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct WorkspaceResponse {
    pub workspace: Workspace,
}

/// `PATCH /api/v1/workspaces/{id}`: absent fields stay; `checkpointStorageConfig: {}` clears the
/// workspace's storage (`det workspace edit --checkpoint-storage-config '{}'`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PatchWorkspace {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default, alias = "agent_user_group")]
    pub agent_user_group: Option<AgentUserGroup>,
    #[serde(default, alias = "checkpoint_storage_config")]
    #[schema(value_type = Option<Object>)]
    pub checkpoint_storage_config: Option<Value>,
    #[serde(default, alias = "default_compute_pool")]
    pub default_compute_pool: Option<String>,
    #[serde(default, alias = "default_compute_resource_pool")]
    pub default_compute_resource_pool: Option<String>,
    #[serde(default, alias = "default_aux_pool")]
    pub default_aux_pool: Option<String>,
    #[serde(default, alias = "default_aux_resource_pool")]
    pub default_aux_resource_pool: Option<String>,
    #[serde(default, alias = "cluster_namespace_meta")]
    #[schema(value_type = Option<Object>)]
    pub cluster_namespace_meta: Option<Value>,
}

/// `DELETE /api/v1/workspaces/{id}` and `DELETE /api/v1/projects/{id}`: `completed: false` when
/// the deletion did not finish; the row's `state`/`errorMessage` then say why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DeleteResponse {
    pub completed: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct EmptyWorkspaceResponse {}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn workspace_round_trips_in_the_bindings_shape() {
        let body = json!({"workspaces": [{"archived": false, "errorMessage": "", "id": 1, "immutable": true,
            "name": "Uncategorized", "numExperiments": 0, "numProjects": 1, "pinned": false,
            "state": "WORKSPACE_STATE_UNSPECIFIED", "userId": 1, "username": "admin", "agentUserGroup": null,
            "checkpointStorageConfig": null, "defaultAuxPool": "", "defaultComputePool": ""}],
            "pagination": {"offset": 0, "limit": 0, "startIndex": 0, "endIndex": 1, "total": 1}});
        let resp: GetWorkspacesResponse = serde_json::from_value(body.clone()).unwrap();
        assert_eq!(resp.workspaces[0].name, "Uncategorized");
        assert_eq!(resp.workspaces[0].state, WorkspaceState::Unspecified);
        assert_eq!(serde_json::to_value(&resp).unwrap(), body);
    }
}
