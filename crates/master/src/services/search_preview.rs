//! `det preview-search`: the plan of a hyperparameter search, from a config validated exactly as an
//! experiment create would validate it.

use resolute_searcher::{ConfigError, Plan, preview};
use serde_json::Value;

use super::ExperimentService;
use crate::domain::search_config::searcher_config;
use crate::error::{ApiError, ApiResult};

/// A search's plan and the fully defaulted `searcher` section it was made from.
pub struct SearchPreview {
    pub searcher: Value,
    pub plan: Plan,
}

impl ExperimentService {
    /// Validates `config` (a JSON object, as the upstream CLI sends the parsed YAML) and plans its
    /// search; `seed`, when given, replaces `reproducibility.experiment_seed`.
    pub fn preview_search(&self, config: &Value, seed: Option<u32>) -> ApiResult<SearchPreview> {
        if !config.is_object() {
            return Err(ApiError::invalid("config: expected the experiment configuration as an object"));
        }
        if config.get("searcher").is_none() {
            return Err(ApiError::invalid("config.searcher: missing; add a searcher section to the experiment config"));
        }
        let mut parsed = self.validate_config(&config.to_string())?;
        if let Some(seed) = seed {
            parsed.reproducibility.experiment_seed = seed;
        }
        let searcher = parsed.to_json().get("searcher").cloned().unwrap_or(Value::Null);
        let plan = preview(&searcher_config(&parsed))
            .map_err(|e: ConfigError| ApiError::invalid(format!("invalid searcher configuration: {e}")))?;
        Ok(SearchPreview { searcher, plan })
    }
}
