//! The error envelope: `{"error":{"code":<grpc code>,"reason":"NotFound","error":"<message>"}}`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The gRPC status codes the API uses, with the HTTP status grpc-gateway maps each one to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorCode {
    InvalidArgument,
    NotFound,
    AlreadyExists,
    PermissionDenied,
    ResourceExhausted,
    FailedPrecondition,
    Unimplemented,
    Internal,
    Unavailable,
    Unauthenticated,
    /// A long wait ran out (e.g. a rendezvous whose gang never all started).
    DeadlineExceeded,
}

impl ErrorCode {
    pub fn grpc_code(self) -> i32 {
        match self {
            ErrorCode::InvalidArgument => 3,
            ErrorCode::NotFound => 5,
            ErrorCode::AlreadyExists => 6,
            ErrorCode::PermissionDenied => 7,
            ErrorCode::ResourceExhausted => 8,
            ErrorCode::FailedPrecondition => 9,
            ErrorCode::Unimplemented => 12,
            ErrorCode::Internal => 13,
            ErrorCode::Unavailable => 14,
            ErrorCode::Unauthenticated => 16,
            ErrorCode::DeadlineExceeded => 4,
        }
    }

    /// The name grpc-gateway puts in `reason`.
    pub fn reason(self) -> &'static str {
        match self {
            ErrorCode::InvalidArgument => "InvalidArgument",
            ErrorCode::NotFound => "NotFound",
            ErrorCode::AlreadyExists => "AlreadyExists",
            ErrorCode::PermissionDenied => "PermissionDenied",
            ErrorCode::ResourceExhausted => "ResourceExhausted",
            ErrorCode::FailedPrecondition => "FailedPrecondition",
            ErrorCode::Unimplemented => "Unimplemented",
            ErrorCode::Internal => "Internal",
            ErrorCode::Unavailable => "Unavailable",
            ErrorCode::Unauthenticated => "Unauthenticated",
            ErrorCode::DeadlineExceeded => "DeadlineExceeded",
        }
    }

    /// grpc-gateway's code → HTTP status table.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::InvalidArgument | ErrorCode::FailedPrecondition => 400,
            ErrorCode::Unauthenticated => 401,
            ErrorCode::PermissionDenied => 403,
            ErrorCode::NotFound => 404,
            ErrorCode::AlreadyExists => 409,
            ErrorCode::ResourceExhausted => 429,
            ErrorCode::Unimplemented => 501,
            ErrorCode::Internal => 500,
            ErrorCode::Unavailable => 503,
            ErrorCode::DeadlineExceeded => 504,
        }
    }
}

/// Body of every failed `/api/v1` call.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct ErrorDetail {
    /// The gRPC status code (5 = NotFound, 16 = Unauthenticated, ...).
    pub code: i32,
    /// The gRPC status name.
    pub reason: String,
    /// A human-readable message.
    pub error: String,
}

impl ErrorBody {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorBody { error: ErrorDetail { code: code.grpc_code(), reason: code.reason().to_owned(), error: message.into() } }
    }
}
