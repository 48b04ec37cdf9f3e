//! Authentication of the runtime endpoints: a task's allocation token
//! (`Grpc-Metadata-x-allocation-token: Bearer <token>`, as the upstream harness sends it) or a
//! user's session (`Authorization: Bearer`, or the `auth` cookie).

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use crate::error::ApiError;
use crate::services::{MetricsCaller, Principal, RuntimeCaller, authenticate_allocation_token};
use crate::state::AppState;

/// The header the upstream harness authenticates with (gRPC metadata `x-allocation-token`).
pub const ALLOCATION_TOKEN_HEADER: &str = "grpc-metadata-x-allocation-token";

fn allocation_token(parts: &Parts) -> Option<Result<&str, ApiError>> {
    let value = parts.headers.get(ALLOCATION_TOKEN_HEADER)?;
    let token = value
        .to_str()
        .ok()
        .map(str::trim)
        .map(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")).unwrap_or(v).trim())
        .filter(|t| !t.is_empty());
    Some(token.ok_or_else(|| ApiError::unauthenticated(format!("malformed {ALLOCATION_TOKEN_HEADER} header: expected Bearer <token>"))))
}

impl FromRequestParts<AppState> for RuntimeCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        match allocation_token(parts) {
            Some(token) => Ok(RuntimeCaller::Task(authenticate_allocation_token(state.store.as_ref(), token?).await?)),
            None => Ok(RuntimeCaller::User(Principal::from_request_parts(parts, state).await?)),
        }
    }
}

/// The metric-report endpoints remember a token's reporter (see `services::metric_reporters`);
/// the writer re-checks the allocation when it stores the report.
impl FromRequestParts<AppState> for MetricsCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        match allocation_token(parts) {
            Some(token) => Ok(MetricsCaller::Task(state.runtime.metric_reporter(token?).await?)),
            None => Ok(MetricsCaller::User(Principal::from_request_parts(parts, state).await?)),
        }
    }
}
