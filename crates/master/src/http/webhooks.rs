//! `/api/v1/webhooks`: create, list, delete, change the URL, send a test event — the calls of the
//! upstream SDK's bindings (`post_PostWebhook`, `get_GetWebhooks`, `delete_DeleteWebhook`,
//! `patch_PatchWebhook`, `post_TestWebhook`).

use axum::Json;
use axum::extract::{Path, State};
use resolute_api::error::ErrorBody;
use resolute_api::webhooks::{
    EmptyWebhookResponse, GetWebhooksResponse, PatchWebhook, PostWebhookEventDataRequest, PostWebhookResponse, TestWebhookResponse,
    Trigger, TriggerType, Webhook, WebhookBody, WebhookMode, WebhookType,
};
use resolute_store::WebhookRecord;

use super::experiments::parse_id;
use super::extract::JsonBody;
use crate::error::{ApiError, ApiResult};
use crate::services::{Access, Principal, RuntimeCaller};
use crate::state::AppState;

fn wire(w: WebhookRecord) -> Webhook {
    Webhook {
        id: w.id,
        name: w.name,
        url: w.url,
        triggers: w
            .triggers
            .into_iter()
            .map(|t| Trigger {
                id: t.id,
                trigger_type: TriggerType::from_name(&t.trigger_type).unwrap_or(TriggerType::Unspecified),
                condition: t.condition,
                webhook_id: t.webhook_id,
            })
            .collect(),
        webhook_type: WebhookType::from_name(&w.webhook_type).unwrap_or(WebhookType::Unspecified),
        mode: WebhookMode::from_name(&w.mode).unwrap_or(WebhookMode::Unspecified),
        workspace_id: w.workspace_id,
    }
}

#[utoipa::path(post, path = "/api/v1/webhooks", tag = "Webhooks", request_body = WebhookBody,
    responses((status = 200, body = PostWebhookResponse), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn create(
    State(state): State<AppState>,
    caller: Principal,
    JsonBody(body): JsonBody<WebhookBody>,
) -> ApiResult<Json<PostWebhookResponse>> {
    Ok(Json(PostWebhookResponse { webhook: wire(state.webhooks.create(&caller, body).await?) }))
}

#[utoipa::path(get, path = "/api/v1/webhooks", tag = "Webhooks",
    responses((status = 200, body = GetWebhooksResponse)), security(("bearer" = [])))]
pub async fn list(State(state): State<AppState>, caller: Principal) -> ApiResult<Json<GetWebhooksResponse>> {
    Ok(Json(GetWebhooksResponse { webhooks: state.webhooks.list(&caller).await?.into_iter().map(wire).collect() }))
}

#[utoipa::path(delete, path = "/api/v1/webhooks/{id}", tag = "Webhooks", params(("id" = i32, Path)),
    responses((status = 200, body = EmptyWebhookResponse), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn delete(State(state): State<AppState>, caller: Principal, Path(id): Path<String>) -> ApiResult<Json<EmptyWebhookResponse>> {
    state.webhooks.delete(&caller, parse_id(&id, "id")?).await?;
    Ok(Json(EmptyWebhookResponse {}))
}

#[utoipa::path(patch, path = "/api/v1/webhooks/{id}", tag = "Webhooks", params(("id" = i32, Path)), request_body = PatchWebhook,
    responses((status = 200, body = EmptyWebhookResponse), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn patch(
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<PatchWebhook>,
) -> ApiResult<Json<EmptyWebhookResponse>> {
    state.webhooks.patch_url(&caller, parse_id(&id, "id")?, body.url).await?;
    Ok(Json(EmptyWebhookResponse {}))
}

#[utoipa::path(post, path = "/api/v1/webhooks/{id}/test", tag = "Webhooks", params(("id" = i32, Path)),
    responses((status = 200, body = TestWebhookResponse), (status = 400, description = "the receiver refused or could not be reached", body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn test(State(state): State<AppState>, caller: Principal, Path(id): Path<String>) -> ApiResult<Json<TestWebhookResponse>> {
    state.webhooks.test(&caller, parse_id(&id, "id")?).await?;
    Ok(Json(TestWebhookResponse { completed: true }))
}

#[utoipa::path(post, path = "/api/v1/webhooks/custom", tag = "Webhooks", request_body = PostWebhookEventDataRequest,
    responses((status = 200, description = "queued for every webhook with a custom trigger that reaches the experiment", body = EmptyWebhookResponse),
        (status = 400, description = "no experiment id, a trial of another experiment, a bad level", body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
/// `core.alert` (upstream `PostWebhookEventData`): a custom event for the experiment's webhooks.
pub async fn post_custom(
    State(state): State<AppState>,
    caller: RuntimeCaller,
    JsonBody(req): JsonBody<PostWebhookEventDataRequest>,
) -> ApiResult<Json<EmptyWebhookResponse>> {
    let experiment_id =
        req.experiment_id.filter(|id| *id > 0).ok_or_else(|| ApiError::invalid("experimentId: give the experiment the alert is about"))?;
    let trial_id = req.trial_id.filter(|id| *id > 0);
    match trial_id {
        Some(trial_id) => {
            let trial = state.runtime.trial_for(&caller, trial_id, Access::Write).await?;
            if trial.experiment_id != experiment_id {
                return Err(ApiError::invalid(format!(
                    "trialId: trial {trial_id} belongs to experiment {}, not {experiment_id}",
                    trial.experiment_id
                )));
            }
        }
        None => {
            state.runtime.experiment_for(&caller, experiment_id).await?;
        }
    }
    state.webhooks.post_custom(experiment_id, trial_id, req.data).await?;
    Ok(Json(EmptyWebhookResponse {}))
}
