//! [`ApiError`]: what every handler and service returns on failure, rendered as upstream's
//! `{"error":{"code","reason","error"}}` envelope with the matching HTTP status.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use resolute_api::error::{ErrorBody, ErrorCode};
use resolute_store::StoreError;

#[derive(Debug)]
pub struct ApiError {
    pub code: ErrorCode,
    pub status: StatusCode,
    pub message: String,
    /// Seconds for a `Retry-After` header (a throttled login).
    pub retry_after_secs: Option<u64>,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        let status = StatusCode::from_u16(code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        ApiError { code, status, message: message.into(), retry_after_secs: None }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidArgument, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotFound, message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::PermissionDenied, message)
    }

    pub fn unauthenticated(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Unauthenticated, message)
    }

    pub fn unimplemented(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Unimplemented, message)
    }

    pub fn internal() -> Self {
        Self::new(ErrorCode::Internal, "internal error; see the master log")
    }

    /// 429 with a `Retry-After` of `secs` (at least one second).
    pub fn too_many_requests(message: impl Into<String>, secs: u64) -> Self {
        ApiError { retry_after_secs: Some(secs.max(1)), ..Self::new(ErrorCode::ResourceExhausted, message) }
    }

    pub fn with_status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }
}

impl From<StoreError> for ApiError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::NotFound { .. } => ApiError::not_found(err.to_string()),
            StoreError::Conflict { .. } => ApiError::new(ErrorCode::AlreadyExists, err.to_string()),
            StoreError::InvalidInput { .. } => ApiError::new(ErrorCode::InvalidArgument, err.to_string()),
            StoreError::Precondition { .. } => ApiError::new(ErrorCode::FailedPrecondition, err.to_string()),
            StoreError::Backend(_)
            | StoreError::Migration(_)
            | StoreError::Sqlite(_)
            | StoreError::Io { .. }
            | StoreError::WriterStopped => {
                // The source may hold SQL: log it, never send it.
                tracing::error!(error = ?err, "store failure");
                ApiError::internal()
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(ErrorBody::new(self.code, self.message))).into_response();
        if let Some(secs) = self.retry_after_secs {
            response.headers_mut().insert(axum::http::header::RETRY_AFTER, axum::http::HeaderValue::from(secs));
        }
        response
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
