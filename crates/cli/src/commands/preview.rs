//! `det preview-search CONFIG`: asks the master what a search would run and prints it as upstream
//! does: the defaulted searcher section as YAML, then one row per group of trials and how long
//! they train.

use std::path::PathBuf;

use clap::Args;
use resolute_api::preview::{PreviewHpSearchRequest, PreviewHpSearchResponse, SearchSummary};
use serde_json::Value;

use super::Globals;
use super::wire::connect;
use crate::error::CliError;
use crate::render;
use crate::table::{Cell, render as table};

#[derive(Debug, Args)]
pub struct PreviewArgs {
    /// experiment config file (.yaml)
    pub config_file: PathBuf,
}

pub fn run(g: &Globals, args: PreviewArgs) -> Result<(), CliError> {
    let path = args.config_file.display().to_string();
    let text = std::fs::read_to_string(&args.config_file).map_err(|e| CliError::msg(format!("cannot read {path}: {e}")))?;
    let config: Value = serde_norway::from_str(&text).map_err(|e| CliError::msg(format!("invalid experiment config file {path}: {e}")))?;
    if config.get("searcher").is_none() {
        return Err(CliError::msg("Missing 'searcher' config section in experiment config."));
    }
    let client = connect(g)?;
    let resp: PreviewHpSearchResponse =
        client.post("/api/v1/preview-hp-search", &PreviewHpSearchRequest { config: Some(config), seed: None })?;
    if g.json {
        render::emit(&render::json(&resp));
    } else {
        render::emit(&render_summary(&resp.summary));
    }
    Ok(())
}

/// Upstream's `_render_search_summary`: unset searcher fields are left out of the YAML.
pub fn render_summary(summary: &SearchSummary) -> String {
    let config = match &summary.config {
        Value::Object(map) => Value::Object(map.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), v.clone())).collect()),
        other => other.clone(),
    };
    let rows: Vec<Vec<Cell>> = summary
        .trials
        .iter()
        .map(|t| {
            let training = if t.unit.max_length {
                "train to completion".to_owned()
            } else {
                format!("train for {} {}", t.unit.value.unwrap_or_default(), t.unit.name.as_deref().unwrap_or_default())
            };
            vec![Cell::from(t.count), Cell::Str(training)]
        })
        .collect();
    format!("Using search configuration:\n{}\n{}", render::yaml(&config), table(&["Trials", "Training Time"], &rows))
}

#[cfg(test)]
mod tests {
    use resolute_api::preview::{SearchUnit, TrialSummary};
    use serde_json::json;

    use super::*;

    #[test]
    fn renders_config_and_one_row_per_group() {
        let summary = SearchSummary {
            config: json!({"name": "adaptive_asha", "max_trials": 4, "source_trial_id": null}),
            trials: vec![
                TrialSummary { count: 3, unit: SearchUnit { name: Some("batches".into()), value: Some(10), max_length: false } },
                TrialSummary { count: 1, unit: SearchUnit { name: None, value: None, max_length: true } },
            ],
        };
        let out = render_summary(&summary);
        assert!(out.starts_with("Using search configuration:\nmax_trials: 4\nname: adaptive_asha\n\n"), "{out}");
        assert!(!out.contains("source_trial_id"));
        assert!(out.contains("3 | train for 10 batches"), "{out}");
        assert!(out.contains("1 | train to completion"), "{out}");
    }
}
