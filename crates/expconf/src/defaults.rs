//! Defaults that come from outside the experiment config: the master's (and pools') settings,
//! merged *under* the user's values before validation, and the caller's experiment seed (so this
//! crate never reads a clock).

use serde_json::{Map, Value};

/// What the master contributes to every experiment config.
#[derive(Clone, Debug, PartialEq)]
pub struct Defaults {
    /// A partial experiment config (e.g. `{"checkpoint_storage": {...}, "resources": {"priority": 42}}`)
    /// whose values apply wherever the experiment leaves a field out.
    pub master: Value,
    /// Used when the config has no `reproducibility.experiment_seed`; callers derive it from the
    /// master clock or an RNG.
    pub experiment_seed: u32,
}

impl Defaults {
    /// No master-level defaults; `experiment_seed` for configs without one.
    pub fn new(experiment_seed: u32) -> Self {
        Self { master: Value::Object(Map::new()), experiment_seed }
    }

    /// Adds the master's `checkpoint_storage` (master.yaml), used field by field where the
    /// experiment's storage is silent and of the same `type`.
    pub fn with_checkpoint_storage(self, storage: Value) -> Self {
        let mut partial = Map::new();
        partial.insert("checkpoint_storage".to_string(), storage);
        self.with_master_config(Value::Object(partial))
    }

    /// Adds a partial experiment config (task container defaults, pool priority...). Values given
    /// earlier win over values given here, as the experiment's own values win over all of them.
    pub fn with_master_config(mut self, partial: Value) -> Self {
        merge_under(&mut self.master, &partial);
        self
    }
}

/// Fills every field `top` leaves out (absent or null) from `base`, recursively. Arrays are taken
/// whole, except `bind_mounts`, where `base` mounts are appended unless `top` already mounts that
/// container path. Objects naming different `type`s (checkpoint storage, hyperparameters) are
/// different things, so `top`'s wins whole.
pub fn merge_under(top: &mut Value, base: &Value) {
    let (Value::Object(top), Value::Object(base)) = (top, base) else { return };
    for (key, base_value) in base {
        match top.get_mut(key) {
            None | Some(Value::Null) => {
                top.insert(key.clone(), base_value.clone());
            }
            Some(top_value) if key == "bind_mounts" => append_bind_mounts(top_value, base_value),
            Some(top_value) if same_kind(top_value, base_value) => merge_under(top_value, base_value),
            Some(_) => {}
        }
    }
}

/// Two objects may merge unless both name a `type` and the types differ.
fn same_kind(top: &Value, base: &Value) -> bool {
    match (top.get("type"), base.get("type")) {
        (Some(a), Some(b)) if !a.is_null() && !b.is_null() => a == b,
        _ => top.is_object() && base.is_object(),
    }
}

fn append_bind_mounts(top: &mut Value, base: &Value) {
    let (Value::Array(top), Value::Array(base)) = (top, base) else { return };
    let taken: Vec<Value> = top.iter().filter_map(|m| m.get("container_path").cloned()).collect();
    for mount in base {
        if !mount.get("container_path").is_some_and(|path| taken.contains(path)) {
            top.push(mount.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn user_values_win_and_gaps_are_filled() {
        let mut config = json!({"checkpoint_storage": {"save_trial_best": 3, "host_path": null}, "resources": {"slots_per_trial": 2}});
        merge_under(
            &mut config,
            &json!({"checkpoint_storage": {"type": "shared_fs", "host_path": "/ckpt", "save_trial_best": 1}, "resources": {"priority": 42}}),
        );
        assert_eq!(
            config,
            json!({"checkpoint_storage": {"type": "shared_fs", "host_path": "/ckpt", "save_trial_best": 3},
                   "resources": {"slots_per_trial": 2, "priority": 42}})
        );
    }

    #[test]
    fn different_storage_types_do_not_mix() {
        let mut config = json!({"checkpoint_storage": {"type": "s3", "bucket": "b"}});
        merge_under(&mut config, &json!({"checkpoint_storage": {"type": "shared_fs", "host_path": "/ckpt"}}));
        assert_eq!(config, json!({"checkpoint_storage": {"type": "s3", "bucket": "b"}}));
    }

    #[test]
    fn bind_mounts_are_appended_unless_the_container_path_is_taken() {
        let mut config = json!({"bind_mounts": [{"host_path": "/a", "container_path": "/data"}]});
        merge_under(
            &mut config,
            &json!({"bind_mounts": [{"host_path": "/b", "container_path": "/data"}, {"host_path": "/c", "container_path": "/cache"}]}),
        );
        assert_eq!(
            config["bind_mounts"],
            json!([{"host_path": "/a", "container_path": "/data"}, {"host_path": "/c", "container_path": "/cache"}])
        );
    }

    #[test]
    fn builder_layers_master_settings() {
        let defaults = Defaults::new(7)
            .with_checkpoint_storage(json!({"type": "directory", "container_path": "/ckpt"}))
            .with_master_config(json!({"resources": {"priority": 42}, "checkpoint_storage": {"type": "s3"}}));
        assert_eq!(defaults.master["checkpoint_storage"]["type"], json!("directory"));
        assert_eq!(defaults.master["resources"]["priority"], json!(42));
        assert_eq!(defaults.experiment_seed, 7);
    }
}
