//! Request extractors whose failures are proper API errors (the envelope, a 4xx, a message that
//! names the problem) instead of axum's plain-text rejections.

use axum::body::Bytes;
use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequest, FromRequestParts, Request};
use axum::http::header::{AUTHORIZATION, COOKIE};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use serde::de::DeserializeOwned;

use super::csrf;
use crate::error::ApiError;
use crate::services::Principal;
use crate::state::AppState;

/// A JSON body. Accepted whatever the `Content-Type` (curl's `-d` sends form encoding, and
/// upstream's gateway does not care either); an empty body reads as `{}`.
pub struct JsonBody<T>(pub T);

/// The body size limit in force for a route, set beside its `DefaultBodyLimit` so a 413 can say
/// what the limit is.
#[derive(Clone, Copy, Debug)]
pub struct BodyLimit(pub usize);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let limit = req.extensions().get::<BodyLimit>().copied();
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            let status = rejection.status();
            let message = match limit {
                Some(BodyLimit(bytes)) if status == StatusCode::PAYLOAD_TOO_LARGE => {
                    format!("request body is larger than the limit of {} MiB", bytes / (1024 * 1024))
                }
                _ => format!("request body rejected: {}", rejection.body_text()),
            };
            ApiError::new(resolute_api::error::ErrorCode::ResourceExhausted, message).with_status(status)
        })?;
        let text: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) { b"{}" } else { &bytes };
        // Plain parsing first: tracking the path costs a third more on every request, and only
        // an invalid body needs it (parsed again to name the place).
        if let Ok(value) = serde_json::from_slice(text) {
            return Ok(JsonBody(value));
        }
        let mut de = serde_json::Deserializer::from_slice(text);
        match serde_path_to_error::deserialize(&mut de) {
            Ok(value) => Ok(JsonBody(value)),
            Err(err) => {
                let path = err.path().to_string();
                let place = if path == "." { String::new() } else { format!(" at `{path}`") };
                Err(ApiError::invalid(format!("invalid request body{place}: {}", err.inner())))
            }
        }
    }
}

/// Query parameters, with parse failures reported as 400s. Repeated keys
/// (`states=A&states=B`) fill list fields, as grpc-gateway reads them.
pub struct QueryParams<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for QueryParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or_default();
        serde_html_form::from_str(query).map(QueryParams).map_err(|e| ApiError::invalid(format!("invalid query parameters: {e}")))
    }
}

/// The peer address of the connection, when the server recorded it (`ConnectInfo`); proxies'
/// `X-Forwarded-For` is not trusted, since any client can send it.
pub struct ClientAddr(pub Option<IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for ClientAddr {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(ClientAddr(parts.extensions.get::<ConnectInfo<SocketAddr>>().map(|ConnectInfo(addr)| addr.ip())))
    }
}

/// The token of an `Authorization: Bearer <t>` header.
pub fn authorization_bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

/// The bearer token of a request: `Authorization: Bearer <t>`, else the web UI's `auth` cookie.
pub fn bearer_token(parts: &Parts) -> Option<&str> {
    authorization_bearer(&parts.headers).or_else(|| auth_cookie(&parts.headers))
}

/// The `auth` cookie's token.
pub fn auth_cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| pair.trim().strip_prefix("auth="))
        .filter(|t| !t.is_empty())
}

impl FromRequestParts<AppState> for Principal {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let token = match authorization_bearer(&parts.headers) {
            Some(token) => token,
            None => {
                let token = auth_cookie(&parts.headers).ok_or_else(|| {
                    ApiError::unauthenticated("authentication required: send Authorization: Bearer <token> (see POST /api/v1/auth/login)")
                })?;
                // A browser attaches the cookie to requests other sites make: a mutation it
                // authenticates must come from the master's own pages.
                csrf::check_cookie_request(parts, state.serves_tls)?;
                token
            }
        };
        state.auth.authenticate(token).await
    }
}
