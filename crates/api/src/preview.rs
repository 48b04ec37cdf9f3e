//! `POST /api/v1/preview-hp-search`: what a hyperparameter search plans to run (`det preview-search`).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// `v1PreviewHPSearchRequest`: the experiment configuration as a JSON object (the upstream CLI sends
/// the parsed YAML), and an optional seed for the search.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct PreviewHpSearchRequest {
    #[serde(default)]
    #[schema(value_type = Object)]
    pub config: Option<Value>,
    #[serde(default)]
    pub seed: Option<u32>,
}

/// `v1PreviewHPSearchResponse`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct PreviewHpSearchResponse {
    pub summary: SearchSummary,
}

/// `v1SearchSummary`: the fully defaulted `searcher` section and the trials the search plans, grouped
/// by how long they train.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct SearchSummary {
    #[schema(value_type = Object)]
    pub config: Value,
    pub trials: Vec<TrialSummary>,
}

/// `v1TrialSummary`: `count` trials train for `unit`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TrialSummary {
    pub count: i32,
    pub unit: SearchUnit,
}

/// `v1SearchUnit`: a training length (`value` of `name`), or `maxLength` for "train to completion"
/// (the search itself sets no length).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchUnit {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<i32>,
    #[serde(default)]
    pub max_length: bool,
}
