//! `GET /resources/allocation/allocations-csv` (`det resources allocations AFTER BEFORE`, the web
//! UI's historical usage download): the allocation usage report as CSV; and its JSON form,
//! `GET /api/v1/resources/allocation/raw` (`det resources raw --json`).

use axum::Json;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use resolute_api::error::ErrorBody;
use resolute_api::resources::{AllocationCsvQuery, AllocationRawQuery, ResourceAllocationRawResponse};

use super::extract::QueryParams;
use crate::error::ApiResult;
use crate::services::{Principal, allocation_usage};
use crate::state::AppState;

#[utoipa::path(get, path = "/resources/allocation/allocations-csv", tag = "Cluster", params(AllocationCsvQuery),
    responses((status = 200, description = "one row per allocation overlapping the window", content_type = "text/csv", body = String),
        (status = 400, description = "a timestamp is missing or malformed (named in the message)", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn allocations_csv(
    State(state): State<AppState>,
    _caller: Principal,
    QueryParams(q): QueryParams<AllocationCsvQuery>,
) -> ApiResult<impl IntoResponse> {
    let csv = allocation_usage::allocations_csv(&*state.store, &q).await?;
    Ok(([(header::CONTENT_TYPE, "text/csv; charset=utf-8")], csv))
}

#[utoipa::path(get, path = "/api/v1/resources/allocation/raw", tag = "Cluster", params(AllocationRawQuery),
    responses((status = 200, body = ResourceAllocationRawResponse),
        (status = 400, description = "a timestamp is missing or malformed (named in the message)", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn allocations_raw(
    State(state): State<AppState>,
    _caller: Principal,
    QueryParams(q): QueryParams<AllocationRawQuery>,
) -> ApiResult<Json<ResourceAllocationRawResponse>> {
    let q = AllocationCsvQuery { timestamp_after: q.timestamp_after, timestamp_before: q.timestamp_before };
    Ok(Json(ResourceAllocationRawResponse { resource_entries: allocation_usage::raw_entries(&*state.store, &q).await? }))
}
