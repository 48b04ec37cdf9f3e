//! Unauthenticated bootstrap: `GET /info` (the CLI's version probe) and `GET /api/v1/master`.

use axum::Json;
use axum::extract::State;
use resolute_api::DETERMINED_VERSION;
use resolute_api::master::{GetMasterResponse, MasterInfo, Telemetry};

use crate::error::ApiResult;
use crate::services::cluster_messages;
use crate::state::AppState;

#[utoipa::path(get, path = "/info", tag = "Cluster", responses((status = 200, body = MasterInfo)))]
pub async fn info(State(state): State<AppState>) -> Json<MasterInfo> {
    let id = &state.identity;
    Json(MasterInfo {
        version: DETERMINED_VERSION.to_owned(),
        master_id: id.master_id.clone(),
        cluster_id: id.cluster_id.clone(),
        cluster_name: id.cluster_name.clone(),
        telemetry: Telemetry::default(),
        sso_providers: None,
    })
}

#[utoipa::path(get, path = "/api/v1/master", tag = "Cluster", responses((status = 200, body = GetMasterResponse)))]
pub async fn get_master(State(state): State<AppState>) -> ApiResult<Json<GetMasterResponse>> {
    let id = &state.identity;
    Ok(Json(GetMasterResponse {
        version: DETERMINED_VERSION.to_owned(),
        master_id: id.master_id.clone(),
        cluster_id: id.cluster_id.clone(),
        cluster_name: id.cluster_name.clone(),
        telemetry_enabled: false,
        sso_providers: Vec::new(),
        rbac_enabled: false,
        product: "PRODUCT_UNSPECIFIED".to_owned(),
        feature_switches: Vec::new(),
        user_management_enabled: true,
        strict_job_queue_control: false,
        has_custom_logo: false,
        cluster_message: cluster_messages::active(&*state.store).await?,
    }))
}
