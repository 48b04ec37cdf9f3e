//! `/api/v1/users*`.

use axum::Json;
use axum::extract::{Path, State};
use resolute_api::error::ErrorBody;
use resolute_api::pagination::Pagination;
use resolute_api::users::{
    AgentUserGroup, GetUsersQuery, GetUsersResponse, OrderBy, PatchUser, PostUserRequest, User, UserResponse, UserSortBy,
};
use resolute_store::{OrderDirection, UserRecord, UserSort};

use super::extract::{JsonBody, QueryParams};
use crate::auth::password::submitted_to_client_hash;
use crate::error::{ApiError, ApiResult};
use crate::services::paging::{MAX_UNPAGED_LIST, page_limit};
use crate::services::{NewUserRequest, Principal, UserChanges, UserListQuery};
use crate::state::AppState;

pub fn to_wire(u: UserRecord) -> User {
    let link = u.agent_user_group();
    User {
        id: u.id,
        username: u.username,
        admin: u.admin,
        active: u.active,
        agent_user_group: link.map(|g| AgentUserGroup {
            agent_uid: Some(i64::from(g.uid)),
            agent_gid: Some(i64::from(g.gid)),
            agent_user: Some(g.user),
            agent_group: Some(g.group),
        }),
        display_name: u.display_name,
        modified_at: Some(u.modified_at),
        remote: u.remote,
        last_auth_at: u.last_auth_at,
    }
}

fn parse_user_id(raw: &str) -> ApiResult<i32> {
    raw.parse().map_err(|_| ApiError::invalid(format!("userId must be an integer, found {raw:?}")))
}

#[utoipa::path(get, path = "/api/v1/users", tag = "Users", params(GetUsersQuery),
    responses((status = 200, body = GetUsersResponse), (status = 401, body = ErrorBody)), security(("bearer" = [])))]
pub async fn list(
    State(state): State<AppState>,
    _caller: Principal,
    QueryParams(q): QueryParams<GetUsersQuery>,
) -> ApiResult<Json<GetUsersResponse>> {
    let sort = match q.sort_by.unwrap_or_default() {
        UserSortBy::Unspecified => UserSort::Id,
        UserSortBy::DisplayName => UserSort::DisplayName,
        UserSortBy::UserName => UserSort::Username,
        UserSortBy::Admin => UserSort::Admin,
        UserSortBy::Active => UserSort::Active,
        UserSortBy::ModifiedTime => UserSort::ModifiedAt,
        UserSortBy::Name => UserSort::Name,
        UserSortBy::LastAuthTime => UserSort::LastAuthAt,
        UserSortBy::Remote => UserSort::Remote,
    };
    let order = match q.order_by.unwrap_or_default() {
        OrderBy::Desc => OrderDirection::Desc,
        OrderBy::Asc | OrderBy::Unspecified => OrderDirection::Asc,
    };
    let (offset, limit) = (q.offset.unwrap_or(0), q.limit.unwrap_or(0));
    let page = state
        .users
        .list(UserListQuery {
            active: q.active,
            admin: q.admin,
            name: q.name,
            sort,
            order,
            offset: i64::from(offset),
            limit: i64::from(limit),
        })
        .await?;
    let total = i32::try_from(page.total).unwrap_or(i32::MAX);
    Ok(Json(GetUsersResponse {
        users: page.users.into_iter().map(to_wire).collect(),
        // The page the service returned (at most `MAX_UNPAGED_LIST` users); the request's limit echoed.
        pagination: Pagination { limit, ..Pagination::resolve(offset, page_limit(i64::from(limit), MAX_UNPAGED_LIST) as i32, total) },
    }))
}

#[utoipa::path(post, path = "/api/v1/users", tag = "Users", request_body = PostUserRequest,
    responses((status = 200, body = UserResponse), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 409, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn create(
    State(state): State<AppState>,
    caller: Principal,
    JsonBody(req): JsonBody<PostUserRequest>,
) -> ApiResult<Json<UserResponse>> {
    let user = req.user.ok_or_else(|| ApiError::invalid("user: required (the account to create)"))?;
    let client_hash = submitted_to_client_hash(req.password.as_deref().unwrap_or(""), req.is_hashed);
    let created = state
        .users
        .create(
            &caller,
            NewUserRequest {
                username: user.username,
                display_name: user.display_name,
                admin: user.admin,
                active: user.active,
                remote: user.remote,
                client_hash,
                agent_user_group: user.agent_user_group,
            },
        )
        .await?;
    Ok(Json(UserResponse { user: to_wire(created) }))
}

#[utoipa::path(get, path = "/api/v1/users/{userId}", tag = "Users", params(("userId" = i32, Path)),
    responses((status = 200, body = UserResponse), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn get(State(state): State<AppState>, _caller: Principal, Path(id): Path<String>) -> ApiResult<Json<UserResponse>> {
    let user = state.users.get(parse_user_id(&id)?).await?;
    Ok(Json(UserResponse { user: to_wire(user) }))
}

#[utoipa::path(get, path = "/api/v1/users/{username}/by-username", tag = "Users", params(("username" = String, Path)),
    responses((status = 200, body = UserResponse), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn get_by_name(State(state): State<AppState>, _caller: Principal, Path(name): Path<String>) -> ApiResult<Json<UserResponse>> {
    let user = state.users.get_by_name(&name).await?;
    Ok(Json(UserResponse { user: to_wire(user) }))
}

#[utoipa::path(patch, path = "/api/v1/users/{userId}", tag = "Users", params(("userId" = i32, Path)), request_body = PatchUser,
    responses((status = 200, body = UserResponse), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn patch(
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
    JsonBody(req): JsonBody<PatchUser>,
) -> ApiResult<Json<UserResponse>> {
    let is_hashed = req.is_hashed.unwrap_or(false);
    let changes = UserChanges {
        username: req.username,
        display_name: req.display_name,
        admin: req.admin,
        active: req.active,
        remote: req.remote,
        client_hash: req.password.map(|p| submitted_to_client_hash(&p, is_hashed)),
        agent_user_group: req.agent_user_group,
    };
    let user = state.users.update(&caller, parse_user_id(&id)?, changes).await?;
    Ok(Json(UserResponse { user: to_wire(user) }))
}

/// The body is a bare JSON string holding the new plain-text password.
#[utoipa::path(post, path = "/api/v1/users/{userId}/password", tag = "Users", params(("userId" = i32, Path)),
    request_body(content = String, description = "the new password, as a bare JSON string"),
    responses((status = 200, body = UserResponse), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody)), security(("bearer" = [])))]
pub async fn set_password(
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
    JsonBody(password): JsonBody<String>,
) -> ApiResult<Json<UserResponse>> {
    let changes = UserChanges { client_hash: Some(submitted_to_client_hash(&password, false)), ..Default::default() };
    let user = state.users.update(&caller, parse_user_id(&id)?, changes).await?;
    Ok(Json(UserResponse { user: to_wire(user) }))
}
