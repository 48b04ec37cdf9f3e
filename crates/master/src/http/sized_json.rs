//! A JSON answer serialised into a buffer sized up front. axum's `Json` starts from 128 bytes and
//! regrows (copying what it has written each time); a project's experiment page is ~540 KB, most
//! of it the rows' stored configs, whose lengths are known before serialising.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// `value` written as JSON into a buffer of `capacity` bytes (grown only if the estimate is short).
pub struct SizedJson<T> {
    pub value: T,
    pub capacity: usize,
}

impl<T: serde::Serialize> IntoResponse for SizedJson<T> {
    fn into_response(self) -> Response {
        let mut body = Vec::with_capacity(self.capacity);
        match serde_json::to_writer(&mut body, &self.value) {
            Ok(()) => ([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], body).into_response(),
            // As axum's `Json` answers a value that cannot be written.
            Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
        }
    }
}
