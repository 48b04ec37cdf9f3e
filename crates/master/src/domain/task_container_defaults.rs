//! `task_container_defaults` (master.yaml, and per resource pool): what the master merges under
//! every task's config and every experiment's `environment`, as upstream does. A pool's defaults,
//! when it has any, replace the master's whole for tasks in that pool (upstream's rule).
//!
//! `environment_variables`, `startup_hook` and `preemption_timeout` take effect (the timeout
//! becomes the experiment config's when the config sets none); `environment_variables` and `startup_hook` take effect (the hook is written into each task's
//! work dir and sourced before the task's own `startup-hook.sh`): our agent runs processes, not
//! containers, so the image, capability, mount, network and pod keys have nothing to act on. They are accepted and
//! named in one warning at start-up rather than rejected, so upstream master configs keep working.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// Upstream's keys that are accepted without effect.
const ACCEPTED_KEYS: &[&str] = &[
    "shm_size_bytes",
    "network_mode",
    "dtrain_network_interface",
    "nccl_port_range",
    "gloo_port_range",
    "cpu_pod_spec",
    "gpu_pod_spec",
    "checkpoint_gc_pod_spec",
    "image",
    "registry_auth",
    "force_pull_image",
    "add_capabilities",
    "drop_capabilities",
    "devices",
    "bind_mounts",
    "work_dir",
    "log_policies",
    "kubernetes",
    "slurm",
    "pbs",
];

const DEVICES: &[&str] = &["cpu", "cuda", "rocm"];

/// A `task_container_defaults` entry that cannot be applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefaultsError {
    /// The config path, e.g. `resource_pools[gpu].task_container_defaults.environment_variables`.
    pub field: String,
    pub message: String,
}

/// The master's and the pools' defaults, validated.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskContainerDefaults {
    /// The master's `environment_variables` in per-device form, if any.
    master: Option<Map<String, Value>>,
    /// Pools with their own `task_container_defaults`, and its variables.
    pools: BTreeMap<String, Option<Map<String, Value>>>,
    /// `startup_hook` of the master's section, and of each pool that has a section.
    master_hook: Option<String>,
    pool_hooks: BTreeMap<String, Option<String>>,
    /// `preemption_timeout` (seconds) of the master's section, and of each pool that has one.
    master_preemption_timeout: Option<u64>,
    pool_preemption_timeouts: BTreeMap<String, Option<u64>>,
}

impl TaskContainerDefaults {
    /// Reads the master's and the pools' sections; the second value lists the keys that are
    /// accepted without effect or unknown, one warning each.
    pub fn from_config(master: Option<&Value>, pools: &BTreeMap<String, Value>) -> Result<(Self, Vec<String>), DefaultsError> {
        let mut warnings = Vec::new();
        let master_hook = read_hook("task_container_defaults", master)?;
        let master_preemption_timeout = read_preemption_timeout("task_container_defaults", master)?;
        let master = read_section("task_container_defaults", master, &mut warnings)?;
        let mut by_pool = BTreeMap::new();
        let mut pool_hooks = BTreeMap::new();
        let mut pool_preemption_timeouts = BTreeMap::new();
        for (pool, section) in pools {
            let field = format!("resource_pools[{pool}].task_container_defaults");
            pool_hooks.insert(pool.clone(), read_hook(&field, Some(section))?);
            pool_preemption_timeouts.insert(pool.clone(), read_preemption_timeout(&field, Some(section))?);
            by_pool.insert(pool.clone(), read_section(&field, Some(section), &mut warnings)?);
        }
        let defaults =
            TaskContainerDefaults { master, pools: by_pool, master_hook, pool_hooks, master_preemption_timeout, pool_preemption_timeouts };
        Ok((defaults, warnings))
    }

    /// No defaults anywhere: merging changes nothing.
    pub fn is_empty(&self) -> bool {
        self.master.is_none()
            && self.pools.values().all(Option::is_none)
            && self.master_preemption_timeout.is_none()
            && self.pool_preemption_timeouts.values().all(Option::is_none)
    }

    /// The `startup_hook` a task in `pool` gets: its pool's when the pool has a section, else the
    /// master's.
    pub fn startup_hook(&self, pool: &str) -> Option<&str> {
        match self.pool_hooks.get(pool) {
            Some(of_pool) => of_pool.as_deref(),
            None => self.master_hook.as_deref(),
        }
    }

    /// Sets an experiment config's `preemption_timeout` from its pool's defaults (or the
    /// master's) when the config has none.
    pub fn merge_preemption_timeout_under(&self, config: &mut Value, default_pool: &str) {
        let pool = config.pointer("/resources/resource_pool").and_then(Value::as_str).filter(|p| !p.is_empty()).unwrap_or(default_pool);
        let timeout = match self.pool_preemption_timeouts.get(pool) {
            Some(of_pool) => *of_pool,
            None => self.master_preemption_timeout,
        };
        if let (Some(timeout), Value::Object(root)) = (timeout, config)
            && root.get("preemption_timeout").is_none_or(Value::is_null)
        {
            root.insert("preemption_timeout".to_owned(), timeout.into());
        }
    }

    /// Merges the defaults of the config's pool (`resources.resource_pool`, or `default_pool`)
    /// under its `environment`: the config's own variables win, key by key.
    pub fn merge_under(&self, config: &mut Value, default_pool: &str) {
        let pool = config.pointer("/resources/resource_pool").and_then(Value::as_str).filter(|p| !p.is_empty()).unwrap_or(default_pool);
        let defaults = match self.pools.get(pool) {
            Some(of_pool) => of_pool.as_ref(),
            None => self.master.as_ref(),
        };
        let (Some(defaults), Value::Object(root)) = (defaults, config) else { return };
        let environment = root.entry("environment").or_insert_with(|| Value::Object(Map::new()));
        if environment.is_null() {
            *environment = Value::Object(Map::new());
        }
        // A malformed section is left alone for validation to report.
        let Value::Object(environment) = environment else { return };
        let merged = match environment.get("environment_variables") {
            None | Some(Value::Null) => Some(Value::Object(defaults.clone())),
            Some(mine) => merge_variables(mine, defaults),
        };
        if let Some(merged) = merged {
            environment.insert("environment_variables".to_owned(), merged);
        }
    }
}

fn read_section(field: &str, section: Option<&Value>, warnings: &mut Vec<String>) -> Result<Option<Map<String, Value>>, DefaultsError> {
    let section = match section {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(map)) => map,
        Some(other) => return Err(DefaultsError { field: field.to_owned(), message: format!("must be a mapping, found {other}") }),
    };
    let inert: Vec<&str> = section.keys().map(String::as_str).filter(|k| ACCEPTED_KEYS.contains(k)).collect();
    if !inert.is_empty() {
        warnings.push(format!(
            "{field}: {} accepted but without effect (tasks run as processes, not containers)",
            inert.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
        ));
    }
    for key in section.keys().filter(|k| {
        !["environment_variables", "startup_hook", "preemption_timeout"].contains(&k.as_str()) && !ACCEPTED_KEYS.contains(&k.as_str())
    }) {
        warnings.push(format!("unknown master config key `{field}.{key}` is ignored"));
    }
    match section.get("environment_variables") {
        None | Some(Value::Null) => Ok(None),
        Some(vars) => {
            per_device(vars).map(Some).map_err(|message| DefaultsError { field: format!("{field}.environment_variables"), message })
        }
    }
}

/// A section's `preemption_timeout`: whole seconds, 0 or more.
fn read_preemption_timeout(field: &str, section: Option<&Value>) -> Result<Option<u64>, DefaultsError> {
    match section.and_then(|s| s.get("preemption_timeout")) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value.as_u64().map(Some).ok_or_else(|| DefaultsError {
            field: format!("{field}.preemption_timeout"),
            message: format!("must be a whole number of seconds (0 or more), found {value}"),
        }),
    }
}

/// A section's `startup_hook`: shell text.
fn read_hook(field: &str, section: Option<&Value>) -> Result<Option<String>, DefaultsError> {
    match section.and_then(|s| s.get("startup_hook")) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(hook)) if hook.trim().is_empty() => Ok(None),
        Some(Value::String(hook)) => Ok(Some(hook.clone())),
        Some(other) => Err(DefaultsError { field: format!("{field}.startup_hook"), message: format!("must be shell text, found {other}") }),
    }
}

/// A list of `KEY=VALUE` strings (every device) or a `cpu`/`cuda`/`rocm` mapping of such lists,
/// as a mapping with all three devices.
fn per_device(vars: &Value) -> Result<Map<String, Value>, String> {
    let check = |list: &Value, at: &str| -> Result<Vec<Value>, String> {
        let items = list.as_array().ok_or_else(|| format!("{at}must be a list of KEY=VALUE strings, found {list}"))?;
        for item in items {
            match item.as_str() {
                Some(s) if s.contains('=') && !s.starts_with('=') => {}
                _ => return Err(format!("{at}{item} is not a KEY=VALUE string")),
            }
        }
        Ok(items.clone())
    };
    let mut out = Map::new();
    match vars {
        Value::Array(_) => {
            let list = check(vars, "")?;
            for device in DEVICES {
                out.insert((*device).to_owned(), Value::Array(list.clone()));
            }
        }
        Value::Object(by_device) => {
            for device in DEVICES {
                out.insert((*device).to_owned(), Value::Array(Vec::new()));
            }
            for (device, list) in by_device {
                let name = match device.as_str() {
                    "gpu" => "cuda",
                    d if DEVICES.contains(&d) => d,
                    other => return Err(format!("{other:?} is not one of cpu, cuda, rocm")),
                };
                if !list.is_null() {
                    out.insert(name.to_owned(), Value::Array(check(list, &format!("{device}: "))?));
                }
            }
        }
        other => return Err(format!("must be a list of KEY=VALUE strings or a cpu/cuda/rocm mapping of them, found {other}")),
    }
    Ok(out)
}

/// The config's variables followed by each default whose key it does not set, per device; `None`
/// when the config's value is malformed (validation reports it). Two lists stay a list.
fn merge_variables(mine: &Value, defaults: &Map<String, Value>) -> Option<Value> {
    let mine_per_device = per_device(mine).ok()?;
    let merged: Map<String, Value> = DEVICES
        .iter()
        .map(|device| {
            let own = mine_per_device.get(*device).and_then(Value::as_array).cloned().unwrap_or_default();
            let base = defaults.get(*device).and_then(Value::as_array).cloned().unwrap_or_default();
            ((*device).to_owned(), Value::Array(merge_lists(own, &base)))
        })
        .collect();
    let same_everywhere = DEVICES.windows(2).all(|w| merged.get(w[0]) == merged.get(w[1]));
    match mine {
        Value::Array(_) if same_everywhere => merged.get("cpu").cloned(),
        _ => Some(Value::Object(merged)),
    }
}

fn merge_lists(mut own: Vec<Value>, base: &[Value]) -> Vec<Value> {
    let key = |v: &Value| v.as_str().and_then(|s| s.split_once('=')).map(|(k, _)| k.to_owned());
    let taken: Vec<String> = own.iter().filter_map(key).collect();
    own.extend(base.iter().filter(|v| key(v).is_none_or(|k| !taken.contains(&k))).cloned());
    own
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn defaults(master: Value, pools: &[(&str, Value)]) -> TaskContainerDefaults {
        let pools = pools.iter().map(|(n, v)| ((*n).to_owned(), v.clone())).collect();
        TaskContainerDefaults::from_config(Some(&master), &pools).unwrap().0
    }

    #[test]
    fn preemption_timeout_comes_from_the_pool_or_the_master_unless_the_config_sets_one() {
        let d = defaults(json!({"preemption_timeout": 30}), &[("gpu", json!({"preemption_timeout": 5})), ("bare", json!({}))]);
        let mut plain = json!({"entrypoint": "echo"});
        d.merge_preemption_timeout_under(&mut plain, "default");
        assert_eq!(plain["preemption_timeout"], 30);
        let mut in_gpu = json!({"resources": {"resource_pool": "gpu"}});
        d.merge_preemption_timeout_under(&mut in_gpu, "default");
        assert_eq!(in_gpu["preemption_timeout"], 5);
        let mut in_bare = json!({"resources": {"resource_pool": "bare"}});
        d.merge_preemption_timeout_under(&mut in_bare, "default");
        assert!(in_bare.get("preemption_timeout").is_none(), "a pool's section replaces the master's: {in_bare}");
        let mut own = json!({"preemption_timeout": 7});
        d.merge_preemption_timeout_under(&mut own, "gpu");
        assert_eq!(own["preemption_timeout"], 7, "the config's own value wins");
        let bad = TaskContainerDefaults::from_config(Some(&json!({"preemption_timeout": "soon"})), &BTreeMap::new()).unwrap_err();
        assert_eq!(bad.field, "task_container_defaults.preemption_timeout");
        assert!(bad.message.contains("whole number of seconds"), "{}", bad.message);
    }

    #[test]
    fn variables_go_under_a_config_key_by_key() {
        let d = defaults(json!({"environment_variables": ["FOO=master", "SHARED=master"]}), &[]);
        let mut empty = json!({"entrypoint": "echo"});
        d.merge_under(&mut empty, "default");
        assert_eq!(empty["environment"]["environment_variables"]["cpu"], json!(["FOO=master", "SHARED=master"]));
        let mut mine = json!({"environment": {"environment_variables": ["SHARED=mine", "OWN=1"], "python": "py"}});
        d.merge_under(&mut mine, "default");
        assert_eq!(mine["environment"]["environment_variables"], json!(["SHARED=mine", "OWN=1", "FOO=master"]), "the config's value wins");
        assert_eq!(mine["environment"]["python"], "py");
    }

    #[test]
    fn per_device_maps_merge_per_device() {
        let d = defaults(json!({"environment_variables": {"cpu": ["C=1"], "gpu": ["G=1"]}}), &[]);
        let mut mine = json!({"environment": {"environment_variables": ["A=1"]}});
        d.merge_under(&mut mine, "default");
        assert_eq!(mine["environment"]["environment_variables"], json!({"cpu": ["A=1", "C=1"], "cuda": ["A=1", "G=1"], "rocm": ["A=1"]}));
    }

    #[test]
    fn a_pool_with_defaults_replaces_the_masters() {
        let d =
            defaults(json!({"environment_variables": ["M=1"]}), &[("gpu", json!({"environment_variables": ["P=1"]})), ("bare", json!({}))]);
        let mut in_gpu = json!({"resources": {"resource_pool": "gpu"}});
        d.merge_under(&mut in_gpu, "default");
        assert_eq!(in_gpu["environment"]["environment_variables"]["cpu"], json!(["P=1"]));
        let mut in_bare = json!({"resources": {"resource_pool": "bare"}});
        d.merge_under(&mut in_bare, "default");
        assert!(in_bare.get("environment").is_none(), "{in_bare}");
        let mut elsewhere = json!({"resources": {"resource_pool": "cpu-pool"}});
        d.merge_under(&mut elsewhere, "gpu");
        assert_eq!(elsewhere["environment"]["environment_variables"]["cpu"], json!(["M=1"]));
        let mut default_pool = json!({});
        d.merge_under(&mut default_pool, "gpu");
        assert_eq!(default_pool["environment"]["environment_variables"]["cpu"], json!(["P=1"]), "no pool named: the default pool's");
    }

    #[test]
    fn malformed_configs_are_left_for_validation() {
        let d = defaults(json!({"environment_variables": ["M=1"]}), &[]);
        let mut bad = json!({"environment": {"environment_variables": "A=1"}});
        d.merge_under(&mut bad, "default");
        assert_eq!(bad["environment"]["environment_variables"], "A=1");
        let mut not_an_object = json!({"environment": 3});
        d.merge_under(&mut not_an_object, "default");
        assert_eq!(not_an_object["environment"], 3);
    }

    #[test]
    fn bad_defaults_name_their_field_and_inert_keys_warn() {
        let err = TaskContainerDefaults::from_config(Some(&json!({"environment_variables": ["NOEQUALS"]})), &BTreeMap::new()).unwrap_err();
        assert_eq!(err.field, "task_container_defaults.environment_variables");
        assert!(err.message.contains("NOEQUALS"), "{}", err.message);
        let pools = BTreeMap::from([("p".to_owned(), json!({"environment_variables": {"tpu": []}}))]);
        let err = TaskContainerDefaults::from_config(None, &pools).unwrap_err();
        assert_eq!(err.field, "resource_pools[p].task_container_defaults.environment_variables");
        let (_, warnings) =
            TaskContainerDefaults::from_config(Some(&json!({"shm_size_bytes": 1, "image": "x", "bogus": 1})), &BTreeMap::new()).unwrap();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("`shm_size_bytes`") && warnings[0].contains("`image`"), "{warnings:?}");
        assert!(warnings[1].contains("task_container_defaults.bogus"), "{warnings:?}");
    }

    #[test]
    fn startup_hooks_come_from_the_pool_or_the_master() {
        let d = defaults(json!({"startup_hook": "export A=1"}), &[("gpu", json!({"startup_hook": "export B=2"})), ("plain", json!({}))]);
        assert_eq!(d.startup_hook("default"), Some("export A=1"));
        assert_eq!(d.startup_hook("gpu"), Some("export B=2"));
        assert_eq!(d.startup_hook("plain"), None, "a pool's section replaces the master's whole");
        let bad = TaskContainerDefaults::from_config(Some(&json!({"startup_hook": 3})), &BTreeMap::new()).unwrap_err();
        assert_eq!(bad.field, "task_container_defaults.startup_hook");
    }
}
