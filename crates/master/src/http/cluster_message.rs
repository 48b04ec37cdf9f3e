//! `GET/PUT/DELETE /api/v1/master/cluster_message` (`det master cluster-message get/set/clear`).

use axum::Json;
use axum::extract::State;
use resolute_api::cluster_message::{ClusterMessageChanged, GetClusterMessageResponse, SetClusterMessageRequest};
use resolute_api::error::ErrorBody;

use super::extract::JsonBody;
use crate::error::ApiResult;
use crate::services::{Principal, cluster_messages};
use crate::state::AppState;

#[utoipa::path(get, path = "/api/v1/master/cluster_message", tag = "Cluster",
    responses((status = 200, description = "the message shown now, or null", body = GetClusterMessageResponse)),
    security(("bearer" = [])))]
pub async fn get_cluster_message(State(state): State<AppState>, _caller: Principal) -> ApiResult<Json<GetClusterMessageResponse>> {
    Ok(Json(GetClusterMessageResponse { cluster_message: cluster_messages::active(&*state.store).await? }))
}

#[utoipa::path(put, path = "/api/v1/master/cluster_message", tag = "Cluster", request_body = SetClusterMessageRequest,
    responses((status = 200, body = ClusterMessageChanged),
        (status = 400, description = "a field is missing or malformed (named in the message)", body = ErrorBody),
        (status = 403, description = "not an admin", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn set_cluster_message(
    State(state): State<AppState>,
    caller: Principal,
    JsonBody(req): JsonBody<SetClusterMessageRequest>,
) -> ApiResult<Json<ClusterMessageChanged>> {
    cluster_messages::set(&*state.store, &caller, &req).await?;
    Ok(Json(ClusterMessageChanged {}))
}

#[utoipa::path(delete, path = "/api/v1/master/cluster_message", tag = "Cluster",
    responses((status = 200, body = ClusterMessageChanged), (status = 403, description = "not an admin", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn clear_cluster_message(State(state): State<AppState>, caller: Principal) -> ApiResult<Json<ClusterMessageChanged>> {
    cluster_messages::clear(&*state.store, &caller).await?;
    Ok(Json(ClusterMessageChanged {}))
}
