//! Webhooks as users manage them: create (with triggers), list, delete, change the URL, send a
//! test event. Permissions as upstream's OSS master: admins manage every webhook; a workspace's
//! owner manages that workspace's webhooks; anyone sees the cluster-wide webhooks and those of
//! the workspaces they own (admins see all). Every refusal names the field and what is accepted.

use std::sync::Arc;

use resolute_api::webhooks::{CustomWebhookEventData, TriggerType, WebhookBody, WebhookMode, WebhookType};
use resolute_store::{
    LOG_LEVELS, NewWebhook, NewWebhookTrigger, Store, StoreError, TRIGGER_CUSTOM, TRIGGER_EXPERIMENT_STATE_CHANGE, TRIGGER_TASK_LOG,
    WebhookRecord,
};
use serde_json::{Value, json};
use tokio::sync::OnceCell;

use super::Principal;
use super::input_limits::{NAME_BYTES, check_text};
use super::webhook_delivery::WebhookSender;
use super::webhook_log_matcher::{LogTriggerCache, compile_pattern};
use super::webhook_payloads;
use crate::config::WebhooksConfig;
use crate::domain::experiment_state::ExperimentState;
use crate::error::{ApiError, ApiResult};

/// A URL longer than this is refused.
const MAX_URL_BYTES: usize = 2048;
/// A custom event's title and description at most.
const MAX_ALERT_TEXT_BYTES: usize = 64 * 1024;
/// Triggers per webhook at most.
const MAX_TRIGGERS: usize = 100;

#[derive(Clone)]
pub struct WebhookService {
    store: Arc<dyn Store>,
    config: WebhooksConfig,
    log_triggers: LogTriggerCache,
    /// The signing key: master.yaml's, else generated once and kept in the database.
    sender: Arc<OnceCell<WebhookSender>>,
}

impl WebhookService {
    pub fn new(store: Arc<dyn Store>, config: WebhooksConfig) -> Self {
        let log_triggers = LogTriggerCache::new(store.clone());
        WebhookService { store, config, log_triggers, sender: Default::default() }
    }

    /// The cache the log writers match lines against.
    pub fn log_triggers(&self) -> &LogTriggerCache {
        &self.log_triggers
    }

    pub fn base_url(&self) -> Option<String> {
        self.config.base_url.clone()
    }

    /// The request signer, resolving the signing key on first use.
    pub async fn sender(&self) -> ApiResult<WebhookSender> {
        let sender = self
            .sender
            .get_or_try_init(|| async {
                let key = match self.config.signing_key.as_deref().map(str::trim).filter(|k| !k.is_empty()) {
                    Some(key) => key.to_owned(),
                    None => {
                        let candidate = hex::encode(rand::random::<[u8; 32]>());
                        self.store.webhook_signing_key(&candidate).await?
                    }
                };
                Ok::<_, ApiError>(WebhookSender::new(&key))
            })
            .await?;
        Ok(sender.clone())
    }

    pub async fn create(&self, caller: &Principal, body: WebhookBody) -> ApiResult<WebhookRecord> {
        let new = validate(body)?;
        self.check_edit(caller, new.workspace_id).await?;
        let created = match self.store.create_webhook(new).await {
            Err(StoreError::NotFound { entity: "workspace", key }) => {
                return Err(ApiError::invalid(format!("workspaceId: workspace {key} does not exist")));
            }
            other => other?,
        };
        self.log_triggers.invalidate();
        Ok(created)
    }

    pub async fn list(&self, caller: &Principal) -> ApiResult<Vec<WebhookRecord>> {
        let all = self.store.list_webhooks().await?;
        if caller.user.admin {
            return Ok(all);
        }
        let owned = self.owned_workspaces(caller).await?;
        Ok(all.into_iter().filter(|w| w.workspace_id.is_none_or(|ws| owned.contains(&ws))).collect())
    }

    pub async fn delete(&self, caller: &Principal, id: i32) -> ApiResult<()> {
        let webhook = self.get(id).await?;
        self.check_edit(caller, webhook.workspace_id).await?;
        self.store.delete_webhook(id).await.map_err(|e| not_found_or(e, id))?;
        self.log_triggers.invalidate();
        Ok(())
    }

    /// Only the URL can change, as upstream.
    pub async fn patch_url(&self, caller: &Principal, id: i32, url: Option<String>) -> ApiResult<()> {
        let webhook = self.get(id).await?;
        self.check_edit(caller, webhook.workspace_id).await?;
        let url = validate_url(url.as_deref())?;
        self.store.set_webhook_url(id, &url).await.map_err(|e| not_found_or(e, id))
    }

    /// Sends upstream's test event now; an error names what the receiver did.
    pub async fn test(&self, caller: &Principal, id: i32) -> ApiResult<()> {
        let webhook = self.get(id).await?;
        self.check_edit(caller, webhook.workspace_id).await?;
        let body = if webhook.webhook_type == WebhookType::Slack.name() {
            webhook_payloads::test_slack()
        } else {
            webhook_payloads::test_default(&uuid::Uuid::new_v4().to_string(), chrono::Utc::now().timestamp())
        };
        self.sender()
            .await?
            .send_once(&webhook.url, body)
            .await
            .map_err(|e| ApiError::invalid(format!("testing webhook {id} at {}: {e}", webhook.url)))
    }

    /// Queues a custom event (`core.alert`) for the webhooks with a custom trigger that reach the
    /// experiment; the caller's right to act for the experiment (or trial) was checked. Returns
    /// how many events were queued.
    pub async fn post_custom(&self, experiment_id: i32, trial_id: Option<i32>, data: Option<CustomWebhookEventData>) -> ApiResult<u64> {
        let data = data.unwrap_or_default();
        let title = data.title.unwrap_or_default();
        let description = data.description.unwrap_or_default();
        check_text("data.title", &title, MAX_ALERT_TEXT_BYTES)?;
        check_text("data.description", &description, MAX_ALERT_TEXT_BYTES)?;
        let level = match data.level.as_deref().filter(|l| !l.is_empty() && *l != "LOG_LEVEL_UNSPECIFIED") {
            None => "LOG_LEVEL_INFO".to_owned(),
            Some(l) if LOG_LEVELS.contains(&l) => l.to_owned(),
            Some(l) => return Err(ApiError::invalid(format!("data.level must be one of {}, got {l:?}", LOG_LEVELS.join(", ")))),
        };
        let custom = super::webhook_payloads::CustomFacts { title, description, level, trial_id };
        let data = serde_json::to_value(&custom).map_err(|_| ApiError::internal())?;
        match self.store.enqueue_custom_events(experiment_id, &data).await {
            Err(StoreError::NotFound { .. }) => Err(ApiError::not_found(format!("experiment {experiment_id} not found"))),
            other => Ok(other?),
        }
    }

    async fn get(&self, id: i32) -> ApiResult<WebhookRecord> {
        self.store.webhook_by_id(id).await.map_err(|e| not_found_or(e, id))
    }

    async fn owned_workspaces(&self, caller: &Principal) -> ApiResult<Vec<i32>> {
        Ok(self.store.list_workspaces().await?.into_iter().filter(|w| w.user_id == Some(caller.user.id)).map(|w| w.id).collect())
    }

    /// Admins edit any webhook; a workspace's owner edits that workspace's.
    async fn check_edit(&self, caller: &Principal, workspace_id: Option<i32>) -> ApiResult<()> {
        if caller.user.admin {
            return Ok(());
        }
        if let Some(ws) = workspace_id
            && self.owned_workspaces(caller).await?.contains(&ws)
        {
            return Ok(());
        }
        Err(ApiError::forbidden(match workspace_id {
            None => "only admins can manage cluster-wide webhooks".to_owned(),
            Some(ws) => format!("only admins and the owner of workspace {ws} can manage its webhooks"),
        }))
    }
}

fn not_found_or(e: StoreError, id: i32) -> ApiError {
    match e {
        StoreError::NotFound { .. } => ApiError::not_found(format!("webhook {id} not found")),
        other => other.into(),
    }
}

fn validate_url(url: Option<&str>) -> ApiResult<String> {
    let url = url.map(str::trim).unwrap_or_default();
    if url.is_empty() {
        return Err(ApiError::invalid("url: a webhook needs the URL to send events to"));
    }
    check_text("url", url, MAX_URL_BYTES)?;
    let parsed = reqwest::Url::parse(url).map_err(|e| ApiError::invalid(format!("url: {url:?} is not a valid URL ({e})")))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none_or(str::is_empty) {
        return Err(ApiError::invalid(format!("url: {url:?} must be an http:// or https:// URL with a host")));
    }
    Ok(url.to_owned())
}

fn validate(body: WebhookBody) -> ApiResult<NewWebhook> {
    let name = body.name.as_deref().map(str::trim).unwrap_or_default().to_owned();
    if name.is_empty() {
        return Err(ApiError::invalid("name: a webhook needs a name"));
    }
    check_text("name", &name, NAME_BYTES)?;
    let url = validate_url(body.url.as_deref())?;
    let webhook_type = match body.webhook_type.as_deref().map(WebhookType::from_name) {
        Some(Some(t @ (WebhookType::Default | WebhookType::Slack))) => t,
        other => {
            let given = match other {
                None => "none was given".to_owned(),
                Some(_) => format!("got {:?}", body.webhook_type.unwrap_or_default()),
            };
            return Err(ApiError::invalid(format!("webhookType: must be WEBHOOK_TYPE_DEFAULT or WEBHOOK_TYPE_SLACK; {given}")));
        }
    };
    let mode = match body.mode.as_deref() {
        None => WebhookMode::Workspace,
        Some(m) => match WebhookMode::from_name(m) {
            Some(WebhookMode::Unspecified) | Some(WebhookMode::Workspace) => WebhookMode::Workspace,
            Some(WebhookMode::Specific) => WebhookMode::Specific,
            None => {
                return Err(ApiError::invalid(format!("mode: must be WEBHOOK_MODE_WORKSPACE or WEBHOOK_MODE_SPECIFIC; got {m:?}")));
            }
        },
    };
    if body.triggers.is_empty() {
        return Err(ApiError::invalid("triggers: at least one trigger required"));
    }
    if body.triggers.len() > MAX_TRIGGERS {
        return Err(ApiError::invalid(format!("triggers: at most {MAX_TRIGGERS} triggers per webhook; got {}", body.triggers.len())));
    }
    let mut triggers = Vec::with_capacity(body.triggers.len());
    for (i, t) in body.triggers.into_iter().enumerate() {
        triggers.push(validate_trigger(i, t.trigger_type.as_deref(), t.condition)?);
    }
    let workspace_id = match body.workspace_id {
        None | Some(0) => None,
        Some(id) if id < 0 => return Err(ApiError::invalid(format!("workspaceId: {id} is not a workspace id"))),
        Some(id) => Some(id),
    };
    Ok(NewWebhook { name, url, webhook_type: webhook_type.name().to_owned(), mode: mode.name().to_owned(), workspace_id, triggers })
}

fn validate_trigger(i: usize, trigger_type: Option<&str>, condition: Option<Value>) -> ApiResult<NewWebhookTrigger> {
    let field = |f: &str| format!("triggers[{i}].{f}");
    let condition = condition.unwrap_or(Value::Null);
    match trigger_type.map(TriggerType::from_name) {
        Some(Some(TriggerType::ExperimentStateChange)) => {
            let Some(given) = condition.get("state").and_then(Value::as_str) else {
                return Err(ApiError::invalid(format!(
                    "{}: an experiment state trigger needs a condition like {{\"state\": \"COMPLETED\"}}",
                    field("condition")
                )));
            };
            let name = given.trim().to_ascii_uppercase();
            let stored = if name.starts_with("STATE_") { name.clone() } else { format!("STATE_{name}") };
            let Some(state) = ExperimentState::parse(&stored) else {
                let known: Vec<&str> = ExperimentState::ALL.iter().map(|s| s.as_str().trim_start_matches("STATE_")).collect();
                return Err(ApiError::invalid(format!(
                    "{}: unknown experiment state {given:?}; one of {}",
                    field("condition.state"),
                    known.join(", ")
                )));
            };
            Ok(NewWebhookTrigger {
                trigger_type: TRIGGER_EXPERIMENT_STATE_CHANGE.to_owned(),
                condition: json!({"state": state.as_str().trim_start_matches("STATE_")}),
                experiment_state: Some(state.as_str().to_owned()),
            })
        }
        Some(Some(TriggerType::TaskLog)) => {
            let Some(pattern) = condition.get("regex").and_then(Value::as_str) else {
                return Err(ApiError::invalid(format!(
                    "{}: a task log trigger needs a condition like {{\"regex\": \"CUDA out of memory\"}}",
                    field("condition")
                )));
            };
            if pattern.is_empty() {
                return Err(ApiError::invalid(format!("{}: the pattern is empty and would match every line", field("condition.regex"))));
            }
            compile_pattern(pattern)
                .map_err(|e| ApiError::invalid(format!("{}: not a valid regular expression: {e}", field("condition.regex"))))?;
            Ok(NewWebhookTrigger {
                trigger_type: TRIGGER_TASK_LOG.to_owned(),
                condition: json!({"regex": pattern}),
                experiment_state: None,
            })
        }
        Some(Some(TriggerType::Custom)) => {
            let empty = match &condition {
                Value::Null => true,
                Value::Object(m) => m.is_empty(),
                _ => false,
            };
            if !empty {
                return Err(ApiError::invalid(format!(
                    "{}: a custom trigger takes no condition (it fires on every core.alert of an experiment it reaches); got {condition}",
                    field("condition")
                )));
            }
            Ok(NewWebhookTrigger { trigger_type: TRIGGER_CUSTOM.to_owned(), condition: json!({}), experiment_state: None })
        }
        Some(Some(other)) => Err(ApiError::invalid(format!(
            "{}: {} is not supported by this master; use TRIGGER_TYPE_EXPERIMENT_STATE_CHANGE, TRIGGER_TYPE_TASK_LOG or TRIGGER_TYPE_CUSTOM",
            field("triggerType"),
            other.name()
        ))),
        Some(None) => Err(ApiError::invalid(format!(
            "{}: unknown trigger type {:?}; use TRIGGER_TYPE_EXPERIMENT_STATE_CHANGE, TRIGGER_TYPE_TASK_LOG or TRIGGER_TYPE_CUSTOM",
            field("triggerType"),
            trigger_type.unwrap_or_default()
        ))),
        None => Err(ApiError::invalid(format!(
            "{}: missing; use TRIGGER_TYPE_EXPERIMENT_STATE_CHANGE, TRIGGER_TYPE_TASK_LOG or TRIGGER_TYPE_CUSTOM",
            field("triggerType")
        ))),
    }
}
