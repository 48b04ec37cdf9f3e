//! `ETag` / `If-None-Match` for the API's JSON reads: a GET answered `200` with a whole JSON body
//! carries a strong `ETag` (the body's 128-bit XXH3 hash: a cache validator, not a signature, so a
//! fast non-cryptographic hash — at ~540 KB per 200-experiment page SHA-256 was 3 % of the list's CPU), and a request whose
//! `If-None-Match` names it is answered `304 Not Modified` with no body. The web UI polls with it
//! (`webui/src/api.ts` keeps the last body per URL), so an unchanged experiment, trial list or
//! page costs the browser no download and no re-render.
//!
//! Only responses whose body size is known in advance are hashed (axum's `Json` and other
//! in-memory bodies): streams (NDJSON logs with `follow`, checkpoint downloads) pass through
//! untouched and unbuffered, and so do proxied services (`/proxy/…`). Responses that already carry an `ETag` (the web UI's files) keep
//! theirs. Clients that never send `If-None-Match` (upstream's CLI and SDK) see the same status
//! and body as before, plus one header.

use axum::body::HttpBody as _;
use axum::body::{Body, to_bytes};
use axum::extract::Request;
use axum::http::header::{CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// Larger bodies are sent as they are (hashing them would cost more than the download saves).
const MAX_HASHED_BYTES: u64 = 16 * 1024 * 1024;

pub async fn layer(req: Request, next: Next) -> Response {
    // Proxied services (`/proxy/…`) answer for themselves.
    if req.method() != Method::GET || req.uri().path().starts_with("/proxy/") {
        return next.run(req).await;
    }
    let if_none_match = req.headers().get(IF_NONE_MATCH).cloned();
    let response = next.run(req).await;
    if response.status() != StatusCode::OK || response.headers().contains_key(ETAG) || !is_json(response.headers()) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let known = body.size_hint().exact();
    if known.is_none_or(|n| n > MAX_HASHED_BYTES) {
        return Response::from_parts(parts, body);
    }
    // The size is known, so the body is in memory: collecting it cannot wait on anything.
    let Ok(bytes) = to_bytes(body, MAX_HASHED_BYTES as usize).await else {
        return crate::error::ApiError::internal().into_response();
    };
    let tag = etag_of(&bytes);
    if if_none_match.as_ref().and_then(|v| v.to_str().ok()).is_some_and(|v| matches(v, &tag)) {
        let mut not_modified = StatusCode::NOT_MODIFIED.into_response();
        if let Ok(v) = HeaderValue::from_str(&tag) {
            not_modified.headers_mut().insert(ETAG, v);
        }
        return not_modified;
    }
    if let Ok(v) = HeaderValue::from_str(&tag) {
        parts.headers.insert(ETAG, v);
    }
    Response::from_parts(parts, Body::from(bytes))
}

fn is_json(headers: &HeaderMap) -> bool {
    headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| {
        let mime = v.split(';').next().unwrap_or("").trim();
        mime.eq_ignore_ascii_case("application/json")
    })
}

/// `"<32 hex digits>"`: the body's SHA-256, truncated to 128 bits.
pub fn etag_of(body: &[u8]) -> String {
    format!("\"{:032x}\"", xxhash_rust::xxh3::xxh3_128(body))
}

/// Whether an `If-None-Match` value (a list of tags, weak or strong, or `*`) names `tag`. As
/// RFC 9110 says for `If-None-Match`, the comparison is weak: `W/"x"` matches `"x"`.
pub fn matches(if_none_match: &str, tag: &str) -> bool {
    if_none_match.split(',').map(str::trim).any(|t| t == "*" || t.strip_prefix("W/").unwrap_or(t) == tag)
}

#[cfg(test)]
mod tests {
    use super::{etag_of, matches};

    #[test]
    fn tags_follow_the_body_and_lists_match_weakly() {
        let a = etag_of(br#"{"a":1}"#);
        assert_eq!(a.len(), 34);
        assert_ne!(a, etag_of(br#"{"a":2}"#));
        assert!(matches(&a, &a));
        assert!(matches(&format!("\"other\", W/{a}"), &a));
        assert!(matches("*", &a));
        assert!(!matches("\"other\"", &a));
        assert!(!matches("", &a));
    }
}
