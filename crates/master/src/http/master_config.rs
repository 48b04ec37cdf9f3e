//! `GET /api/v1/master/config` (`det master config`): the master's configuration as upstream's
//! `Printable()` shows it — admin only, every secret replaced by `********` — with the
//! `resource_manager` (with the default pools), `resource_pools` (each pool's scheduler, defaults
//! filled in) and `feature_switches`, the keys clients read at start-up.

use axum::Json;
use axum::extract::State;
use resolute_api::error::ErrorBody;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::services::Principal;
use crate::state::AppState;

/// What a redacted secret reads as (upstream's mask).
const MASK: &str = "********";

/// `{"config": {...}}`.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct GetMasterConfigResponse {
    /// The master configuration, secrets redacted (snake_case keys, as upstream).
    #[schema(value_type = Object)]
    config: Value,
}

#[utoipa::path(get, path = "/api/v1/master/config", tag = "Cluster",
    responses((status = 200, body = GetMasterConfigResponse), (status = 403, description = "not an admin", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn get_master_config(State(state): State<AppState>, caller: Principal) -> ApiResult<Json<GetMasterConfigResponse>> {
    if !caller.user.admin {
        return Err(ApiError::forbidden("only admins may view the master configuration"));
    }
    let mut config = serde_json::to_value(&*state.config).map_err(|_| ApiError::internal())?;
    redact(&mut config);
    if let Value::Object(map) = &mut config {
        // Upstream's agent resource manager and the pools as configured, defaults filled in.
        let (manager, pools) = state.cluster.resource_pools().to_upstream();
        map.insert("resource_manager".to_owned(), manager);
        map.insert("resource_pools".to_owned(), pools);
        map.entry("feature_switches").or_insert_with(|| json!([]));
    }
    Ok(Json(GetMasterConfigResponse { config }))
}

/// Replaces, anywhere in the tree, the string value of every key that names a secret.
pub fn redact(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if is_secret(key) && matches!(v, Value::String(s) if !s.is_empty()) {
                    *v = Value::String(MASK.to_owned());
                } else {
                    redact(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        _ => {}
    }
}

fn is_secret(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    ["password", "secret", "access_key", "private_key", "api_key", "token", "credentials", "signing_key", "sas"]
        .iter()
        .any(|word| key == *word || key.contains(word) && !key.ends_with("_file") && !key.ends_with("_path"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_anywhere_are_masked_and_the_rest_kept() {
        let mut v = json!({
            "db": {"user": "postgres", "password": "hunter2", "host": "db"},
            "security": {"initial_user_password": "p", "agent_secret_file": "/etc/secret", "token": {"default_lifespan_days": 30}},
            "checkpoint_storage": {"type": "s3", "access_key": "AKIA", "secret_key": "xyz", "bucket": "b"},
            "hooks": [{"slack_token": "t"}],
            "empty": {"password": ""},
        });
        redact(&mut v);
        assert_eq!(v["db"], json!({"user": "postgres", "password": MASK, "host": "db"}));
        assert_eq!(v["security"]["initial_user_password"], MASK);
        assert_eq!(v["security"]["agent_secret_file"], "/etc/secret", "paths to secrets are not secrets");
        assert_eq!(v["security"]["token"], json!({"default_lifespan_days": 30}));
        assert_eq!(v["checkpoint_storage"], json!({"type": "s3", "access_key": MASK, "secret_key": MASK, "bucket": "b"}));
        assert_eq!(v["hooks"][0]["slack_token"], MASK);
        assert_eq!(v["empty"]["password"], "", "an unset secret shows as unset");
    }
}
