//! Entry points: YAML (or a JSON tree) in, a fully defaulted [`ExperimentConfig`] plus warnings out,
//! or every error at once.

use serde_json::Value;

use crate::defaults::{Defaults, merge_under};
use crate::error::{ConfigError, Warning};
use crate::experiment::{ExperimentConfig, read_experiment};
use crate::read::{Ctx, Mode};
use crate::yaml::yaml_to_json;

/// A config that passed validation.
#[derive(Clone, Debug, PartialEq)]
pub struct Parsed {
    pub config: ExperimentConfig,
    /// Unknown, deprecated and ignored fields, each with its path.
    pub warnings: Vec<Warning>,
}

/// Parses an experiment config as the user wrote it (YAML or JSON), merges the master's defaults
/// under it, fills the schema defaults and validates everything.
pub fn parse_experiment_config(text: &str, defaults: &Defaults) -> Result<Parsed, Vec<ConfigError>> {
    let tree = yaml_to_json(text).map_err(|e| vec![e])?;
    validate_experiment_config(tree, defaults)
}

/// Like [`parse_experiment_config`] for a tree already parsed (e.g. a stored config, or one with
/// CLI overrides applied). A serialised [`ExperimentConfig`] validates back to itself.
pub fn validate_experiment_config(mut tree: Value, defaults: &Defaults) -> Result<Parsed, Vec<ConfigError>> {
    // An empty document is an empty config: report what is missing rather than "found null".
    if tree.is_null() {
        tree = Value::Object(serde_json::Map::new());
    }
    if tree.is_object() {
        merge_under(&mut tree, &defaults.master);
    }
    let mut ctx = Ctx::new(Mode::Complete);
    let config = read_experiment(&mut ctx, &tree, defaults.experiment_seed);
    match config {
        Some(config) if ctx.errors.is_empty() => Ok(Parsed { config, warnings: ctx.warnings }),
        _ if !ctx.errors.is_empty() => Err(ctx.errors),
        // Every reader reports why it produced nothing; this guards against a reader that forgot.
        _ => Err(vec![ConfigError::Invalid {
            path: "<config>".to_string(),
            found: "an incomplete config".to_string(),
            reason: "the config could not be assembled".to_string(),
        }]),
    }
}

/// Checks a config fragment (e.g. `resources: {slots_per_trial: 8}`, a template, or a snippet from
/// the docs): everything present must be well-formed, but nothing is required and no master
/// defaults apply. Returns the warnings, or every error.
pub fn check_fragment(text: &str) -> Result<Vec<Warning>, Vec<ConfigError>> {
    let tree = yaml_to_json(text).map_err(|e| vec![e])?;
    let tree = if tree.is_null() { Value::Object(serde_json::Map::new()) } else { tree };
    let mut ctx = Ctx::new(Mode::Fragment);
    read_experiment(&mut ctx, &tree, 0);
    if ctx.errors.is_empty() { Ok(ctx.warnings) } else { Err(ctx.errors) }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const MINIMAL: &str = "entrypoint: python3 train.py\nsearcher: {name: single, metric: loss}\n";

    fn storage() -> Defaults {
        Defaults::new(42).with_checkpoint_storage(json!({"type": "shared_fs", "host_path": "/tmp/ckpt"}))
    }

    #[test]
    fn minimal_config_gets_defaults() {
        let parsed = parse_experiment_config(MINIMAL, &storage()).unwrap();
        assert_eq!(parsed.config.name, "Experiment");
        assert_eq!(parsed.config.reproducibility.experiment_seed, 42);
        assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
    }

    #[test]
    fn without_master_storage_the_config_must_name_one() {
        let errors = parse_experiment_config(MINIMAL, &Defaults::new(1)).unwrap_err();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].path(), "checkpoint_storage");
    }

    #[test]
    fn non_mapping_documents_are_rejected() {
        let errors = parse_experiment_config("- a\n- b\n", &storage()).unwrap_err();
        assert_eq!(errors[0].to_string(), "<config>: expected a mapping of config fields (name, entrypoint, searcher, ...), found a list");
    }

    #[test]
    fn fragments_skip_required_fields_but_check_present_ones() {
        assert_eq!(check_fragment("resources:\n  slots_per_trial: 8\n"), Ok(vec![]));
        let errors = check_fragment("resources:\n  slots_per_trial: eight\n").unwrap_err();
        assert_eq!(errors[0].path(), "resources.slots_per_trial");
        assert_eq!(check_fragment(""), Ok(vec![]));
    }
}
