//! An experiment's config summary: the few config fields a list row shows, kept beside the
//! config (`experiments.config_summary`) so a list need not scan each row's ~2 KB of config text.
//!
//! The summary is a projection of the config in the config's own shape — `searcher.name`,
//! `searcher.metric`, `searcher.smaller_is_better`, `resources.resource_pool` and
//! `hyperparameters` — so whatever reads those fields from the config reads the same from the
//! summary, byte for byte (each value is serialised exactly as the config's text serialises it).
//! A `searcher` or `resources` that is not an object is kept whole, so a reader that fails on the
//! config fails the same way on the summary.

use serde_json::{Map, Value};

const SEARCHER_FIELDS: [&str; 3] = ["name", "metric", "smaller_is_better"];
const RESOURCES_FIELDS: [&str; 1] = ["resource_pool"];

/// The summary's text for `config` (a config that is not an object summarises as `{}`).
pub fn config_summary_text(config: &Value) -> String {
    let mut out = Map::new();
    if let Value::Object(config) = config {
        for (section, fields) in [("searcher", &SEARCHER_FIELDS[..]), ("resources", &RESOURCES_FIELDS[..])] {
            match config.get(section) {
                None => {}
                Some(Value::Object(body)) => {
                    let kept: Map<String, Value> =
                        fields.iter().filter_map(|f| body.get(*f).map(|v| ((*f).to_owned(), v.clone()))).collect();
                    out.insert(section.to_owned(), Value::Object(kept));
                }
                Some(other) => {
                    out.insert(section.to_owned(), other.clone());
                }
            }
        }
        if let Some(hyperparameters) = config.get("hyperparameters") {
            out.insert("hyperparameters".to_owned(), hyperparameters.clone());
        }
    }
    Value::Object(out).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_the_listed_fields_in_the_configs_shape() {
        let config = json!({
            "searcher": {"name": "adaptive_asha", "metric": "val_loss", "smaller_is_better": false, "max_trials": 16},
            "resources": {"resource_pool": "gpu", "slots_per_trial": 2},
            "hyperparameters": {"lr": {"type": "log", "minval": -4, "maxval": -1, "base": 10.0}, "b": "x\"y"},
            "environment": {"image": "big"},
        });
        let text = config_summary_text(&config);
        let hp = serde_json::to_string(&config["hyperparameters"]).unwrap();
        assert!(config.to_string().contains(&hp), "the config's text holds the same bytes");
        assert!(text.contains(&format!(r#""hyperparameters":{hp}"#)), "{text}");
        let summary: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            summary,
            json!({
                "searcher": {"name": "adaptive_asha", "metric": "val_loss", "smaller_is_better": false},
                "resources": {"resource_pool": "gpu"},
                "hyperparameters": config["hyperparameters"],
            })
        );
    }

    #[test]
    fn odd_shapes_are_kept_so_readers_fail_alike() {
        assert_eq!(config_summary_text(&json!("x")), "{}");
        assert_eq!(config_summary_text(&json!({"searcher": "single"})), r#"{"searcher":"single"}"#);
        assert_eq!(config_summary_text(&json!({"resources": null, "other": 1})), r#"{"resources":null}"#);
    }
}
