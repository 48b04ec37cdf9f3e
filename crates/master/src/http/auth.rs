//! `/api/v1/auth/*` and `/api/v1/me`.

use axum::Json;
use axum::extract::State;
use axum::http::HeaderName;
use axum::http::header::SET_COOKIE;
use axum::response::AppendHeaders;
use resolute_api::error::ErrorBody;
use resolute_api::users::{LoginRequest, LoginResponse, UserResponse};

use super::csrf;
use super::extract::{ClientAddr, JsonBody};
use super::users::to_wire;
use crate::error::ApiResult;
use crate::services::Principal;
use crate::state::AppState;

#[utoipa::path(post, path = "/api/v1/auth/login", tag = "Authentication", request_body = LoginRequest,
    responses((status = 200, body = LoginResponse), (status = 401, description = "invalid credentials (unknown user or wrong password)", body = ErrorBody), (status = 403, description = "the user is deactivated or remote", body = ErrorBody)))]
pub async fn login(
    State(state): State<AppState>,
    ClientAddr(client): ClientAddr,
    JsonBody(req): JsonBody<LoginRequest>,
) -> ApiResult<(AppendHeaders<[(HeaderName, String); 1]>, Json<LoginResponse>)> {
    let (token, user) = state.auth.login(&req.username, &req.password, req.is_hashed, client).await?;
    let cookie = csrf::session_cookie(&token, state.serves_tls, state.config.security.token.default_lifespan_days);
    Ok((AppendHeaders([(SET_COOKIE, cookie)]), Json(LoginResponse { token, user: to_wire(user) })))
}

#[utoipa::path(post, path = "/api/v1/auth/logout", tag = "Authentication",
    responses((status = 200, description = "the session's token stops working"), (status = 401, body = ErrorBody)), security(("bearer" = [])))]
pub async fn logout(
    State(state): State<AppState>,
    principal: Principal,
) -> ApiResult<(AppendHeaders<[(HeaderName, String); 1]>, Json<serde_json::Value>)> {
    state.auth.logout(&principal).await?;
    Ok((AppendHeaders([(SET_COOKIE, csrf::cleared_session_cookie(state.serves_tls))]), Json(serde_json::json!({}))))
}

#[utoipa::path(get, path = "/api/v1/me", tag = "Users",
    responses((status = 200, body = UserResponse), (status = 401, body = ErrorBody)), security(("bearer" = [])))]
pub async fn me(principal: Principal) -> Json<UserResponse> {
    Json(UserResponse { user: to_wire(principal.user) })
}

#[utoipa::path(get, path = "/api/v1/auth/user", tag = "Authentication",
    responses((status = 200, body = UserResponse), (status = 401, body = ErrorBody)), security(("bearer" = [])))]
pub async fn current_user(principal: Principal) -> Json<UserResponse> {
    me(principal).await
}
