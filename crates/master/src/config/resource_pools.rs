//! `resource_manager` and `resource_pools` in master.yaml: the resource pools the agent resource
//! manager runs, each with its scheduler (upstream's `priority` with optional preemption and a
//! default priority, or `fair_share`), fitting policy and aux-container cap, and the default
//! compute and aux pools. Parsed and validated here, in one place; every error names its field
//! (`resource_pools[1].scheduler.type: …`), and keys we read but do not act on are warned about.
//!
//! Without `resource_pools` there is one pool, `default`, as upstream.

use std::collections::BTreeSet;

use resolute_scheduler::{FittingPolicy, MAX_PRIORITY, MIN_PRIORITY, SchedulerConfig, SchedulingPolicy};
use serde_json::{Map, Value, json};

use super::ConfigError;

/// The pool upstream creates when `resource_pools` is not given, and the default of both
/// `default_*_resource_pool` keys.
pub const DEFAULT_POOL_NAME: &str = "default";

/// Keys of `resource_manager` (type `agent`) we act on.
const MANAGER_KEYS: &[&str] = &["type", "scheduler", "default_compute_resource_pool", "default_aux_resource_pool"];
/// Keys of a `resource_pools[]` entry we act on (`task_container_defaults` is read by
/// `domain::task_container_defaults`).
const POOL_KEYS: &[&str] =
    &["pool_name", "description", "scheduler", "max_aux_containers_per_agent", "max_cpu_containers_per_agent", "task_container_defaults"];
/// Keys of a `scheduler` section we act on.
const SCHEDULER_KEYS: &[&str] = &["type", "preemption", "default_priority", "fitting_policy"];

/// One pool's scheduling settings.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolConfig {
    pub name: String,
    pub description: String,
    /// Policy (with preemption), fitting policy and aux-container cap.
    pub scheduler: SchedulerConfig,
    /// The priority of a task whose `resources.priority` is unset (1 highest … 99).
    pub default_priority: u32,
}

/// Every configured pool and the defaults tasks without `resources.resource_pool` go to.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourcePools {
    /// In configuration order.
    pub pools: Vec<PoolConfig>,
    /// Where tasks with slots go when they name no pool.
    pub default_compute_pool: String,
    /// Where zero-slot tasks (TensorBoards, CPU commands, checkpoint GC) go when they name none.
    pub default_aux_pool: String,
}

impl Default for ResourcePools {
    /// Upstream's default: one `default` pool with the priority scheduler, no preemption.
    fn default() -> Self {
        ResourcePools {
            pools: vec![PoolConfig {
                name: DEFAULT_POOL_NAME.to_owned(),
                description: String::new(),
                scheduler: SchedulerConfig::default(),
                default_priority: resolute_scheduler::DEFAULT_PRIORITY,
            }],
            default_compute_pool: DEFAULT_POOL_NAME.to_owned(),
            default_aux_pool: DEFAULT_POOL_NAME.to_owned(),
        }
    }
}

impl ResourcePools {
    pub fn get(&self, name: &str) -> Option<&PoolConfig> {
        self.pools.iter().find(|p| p.name == name)
    }

    pub fn names(&self) -> Vec<&str> {
        self.pools.iter().map(|p| p.name.as_str()).collect()
    }

    /// The pool a task goes to: the one it names, else the default compute pool (the default aux
    /// pool for a zero-slot task).
    pub fn resolve<'a>(&'a self, named: &'a str, slots: u32) -> &'a str {
        if !named.is_empty() {
            named
        } else if slots == 0 {
            &self.default_aux_pool
        } else {
            &self.default_compute_pool
        }
    }

    /// Refuses a pool name that is not configured, naming those that are (`field` is where the
    /// name came from, e.g. `resources.resource_pool`).
    pub fn check_exists(&self, field: &str, named: &str) -> Result<(), String> {
        if named.is_empty() || self.get(named).is_some() {
            return Ok(());
        }
        Err(format!("{field}: resource pool {named:?} does not exist; the resource pools are: {}", self.names().join(", ")))
    }

    /// `resource_manager` and `resource_pools` as upstream's `det master config` shows them,
    /// defaults filled in.
    pub fn to_upstream(&self) -> (Value, Value) {
        let manager = json!({
            "type": "agent",
            "default_compute_resource_pool": self.default_compute_pool,
            "default_aux_resource_pool": self.default_aux_pool,
            "scheduler": {"type": "priority", "fitting_policy": "best"},
            "no_default_resource_pools": false,
        });
        let pools = self
            .pools
            .iter()
            .map(|p| {
                let mut scheduler = json!({
                    "type": p.scheduler.policy.name(),
                    "fitting_policy": p.scheduler.fitting_policy.to_string(),
                });
                if let SchedulingPolicy::Priority { preemption } = p.scheduler.policy {
                    scheduler["preemption"] = json!(preemption);
                    scheduler["default_priority"] = json!(p.default_priority);
                }
                json!({
                    "pool_name": p.name,
                    "description": p.description,
                    "scheduler": scheduler,
                    "max_aux_containers_per_agent": p.scheduler.max_aux_containers_per_agent,
                })
            })
            .collect();
        (manager, Value::Array(pools))
    }

    /// Parses `resource_manager` and `resource_pools` from the master.yaml tree. Returns the pools
    /// and a warning for every key read but not acted on.
    pub fn from_tree(tree: &Value) -> Result<(ResourcePools, Vec<String>), ConfigError> {
        let mut warnings = Vec::new();
        let manager = match tree.get("resource_manager") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(map)) => map.clone(),
            Some(other) => return Err(invalid("resource_manager", format!("expected a mapping, found {other}"))),
        };
        match manager.get("type") {
            None | Some(Value::Null) => {}
            Some(Value::String(t)) if t == "agent" => {}
            Some(other) => {
                return Err(invalid(
                    "resource_manager.type",
                    format!("{other} is not supported: only \"agent\" (agents that join with `det agent run`) is"),
                ));
            }
        }
        warn_unread(&manager, MANAGER_KEYS, "resource_manager", &mut warnings);
        let base = match manager.get("scheduler") {
            None | Some(Value::Null) => Scheduling::default(),
            Some(section) => Scheduling::parse(section, &Scheduling::default(), "resource_manager.scheduler", &mut warnings)?,
        };

        let mut pools = Vec::new();
        match tree.get("resource_pools") {
            None | Some(Value::Null) => {}
            Some(Value::Array(entries)) => {
                let mut seen = BTreeSet::new();
                for (index, entry) in entries.iter().enumerate() {
                    let at = format!("resource_pools[{index}]");
                    let pool = parse_pool(entry, &at, &base, &mut warnings)?;
                    if !seen.insert(pool.name.clone()) {
                        return Err(invalid(
                            &format!("{at}.pool_name"),
                            format!("{:?} names another pool too; pool names are unique", pool.name),
                        ));
                    }
                    pools.push(pool);
                }
            }
            Some(other) => return Err(invalid("resource_pools", format!("expected a list of pools, found {other}"))),
        }
        if pools.is_empty() {
            pools.push(PoolConfig {
                name: DEFAULT_POOL_NAME.to_owned(),
                description: String::new(),
                scheduler: base.config(resolute_scheduler::DEFAULT_MAX_AUX_CONTAINERS_PER_AGENT),
                default_priority: base.default_priority,
            });
        }
        let names: Vec<&str> = pools.iter().map(|p| p.name.as_str()).collect();
        let default_of = |key: &str| -> Result<String, ConfigError> {
            let field = format!("resource_manager.{key}");
            let name = match manager.get(key) {
                None | Some(Value::Null) => DEFAULT_POOL_NAME.to_owned(),
                Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_owned(),
                Some(other) => return Err(invalid(&field, format!("expected a pool name, found {other}"))),
            };
            if !names.contains(&name.as_str()) {
                return Err(invalid(&field, format!("{name:?} is not a configured resource pool; the pools are: {}", names.join(", "))));
            }
            Ok(name)
        };
        let default_compute_pool = default_of("default_compute_resource_pool")?;
        let default_aux_pool = default_of("default_aux_resource_pool")?;
        Ok((ResourcePools { pools, default_compute_pool, default_aux_pool }, warnings))
    }
}

fn invalid(field: &str, message: String) -> ConfigError {
    ConfigError::Invalid { field: field.to_owned(), message }
}

fn warn_unread(map: &Map<String, Value>, read: &[&str], at: &str, warnings: &mut Vec<String>) {
    for key in map.keys().filter(|k| !read.contains(&k.as_str())) {
        warnings.push(format!("master config key `{at}.{key}` is not supported yet and is ignored"));
    }
}

/// A `scheduler` section, resolved over the one it inherits from.
#[derive(Clone, Copy, Debug)]
struct Scheduling {
    fair_share: bool,
    preemption: bool,
    default_priority: u32,
    fitting_policy: FittingPolicy,
}

impl Default for Scheduling {
    fn default() -> Self {
        Scheduling {
            fair_share: false,
            preemption: false,
            default_priority: resolute_scheduler::DEFAULT_PRIORITY,
            fitting_policy: FittingPolicy::Best,
        }
    }
}

impl Scheduling {
    /// Upstream's scheduler union: `type` picks the policy (keeping the inherited one when
    /// absent), `preemption`/`default_priority` belong to `priority`, `fitting_policy` to both.
    fn parse(section: &Value, inherited: &Scheduling, at: &str, warnings: &mut Vec<String>) -> Result<Scheduling, ConfigError> {
        let Value::Object(map) = section else {
            return Err(invalid(at, format!("expected a mapping, found {section}")));
        };
        warn_unread(map, SCHEDULER_KEYS, at, warnings);
        let mut s = *inherited;
        if let Some(kind) = map.get("type").filter(|v| !v.is_null()) {
            let Value::String(kind) = kind else {
                return Err(invalid(&format!("{at}.type"), format!("expected \"priority\" or \"fair_share\", found {kind}")));
            };
            let policy = SchedulingPolicy::from_type(kind, false).map_err(|e| invalid(&format!("{at}.type"), e.to_string()))?;
            let fair_share = matches!(policy, SchedulingPolicy::FairShare { .. });
            if fair_share != s.fair_share {
                // A different policy does not inherit the other's settings.
                s = Scheduling { fair_share, ..Scheduling::default() };
                s.fitting_policy = inherited.fitting_policy;
            }
        }
        if let Some(v) = map.get("preemption").filter(|v| !v.is_null()) {
            let Value::Bool(preemption) = v else {
                return Err(invalid(&format!("{at}.preemption"), format!("expected true or false, found {v}")));
            };
            if s.fair_share {
                warnings.push(format!("`{at}.preemption` is ignored: the fair_share scheduler always preempts"));
            }
            s.preemption = *preemption;
        }
        if let Some(v) = map.get("default_priority").filter(|v| !v.is_null()) {
            let field = format!("{at}.default_priority");
            let priority =
                v.as_u64().and_then(|p| u32::try_from(p).ok()).filter(|p| (MIN_PRIORITY..=MAX_PRIORITY).contains(p)).ok_or_else(|| {
                    invalid(&field, format!("must be an integer from {MIN_PRIORITY} (highest) to {MAX_PRIORITY}, found {v}"))
                })?;
            if s.fair_share {
                warnings.push(format!("`{field}` is ignored: the fair_share scheduler has no priorities"));
            }
            s.default_priority = priority;
        }
        if let Some(v) = map.get("fitting_policy").filter(|v| !v.is_null()) {
            let field = format!("{at}.fitting_policy");
            let name = v.as_str().ok_or_else(|| invalid(&field, format!("expected \"best\" or \"worst\", found {v}")))?;
            s.fitting_policy = name.parse().map_err(|e: resolute_scheduler::SchedulerError| invalid(&field, e.to_string()))?;
        }
        Ok(s)
    }

    fn config(&self, max_aux_containers_per_agent: u32) -> SchedulerConfig {
        let policy = if self.fair_share {
            // Upstream's fair share always preempts jobs over their share.
            SchedulingPolicy::FairShare { preemption: true }
        } else {
            SchedulingPolicy::Priority { preemption: self.preemption }
        };
        SchedulerConfig { policy, fitting_policy: self.fitting_policy, max_aux_containers_per_agent }
    }
}

fn parse_pool(entry: &Value, at: &str, base: &Scheduling, warnings: &mut Vec<String>) -> Result<PoolConfig, ConfigError> {
    let Value::Object(map) = entry else {
        return Err(invalid(at, format!("expected a mapping with pool_name, found {entry}")));
    };
    warn_unread(map, POOL_KEYS, at, warnings);
    let name = match map.get("pool_name") {
        Some(Value::String(name)) if !name.trim().is_empty() => name.trim().to_owned(),
        None | Some(Value::Null) => return Err(invalid(&format!("{at}.pool_name"), "is required".to_owned())),
        Some(other) => return Err(invalid(&format!("{at}.pool_name"), format!("expected a non-empty name, found {other}"))),
    };
    if name.contains(['/', '\0']) || name.len() > 255 {
        return Err(invalid(&format!("{at}.pool_name"), format!("{name:?} is not a valid pool name (no '/', at most 255 bytes)")));
    }
    let description = match map.get("description") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(d)) => d.clone(),
        Some(other) => return Err(invalid(&format!("{at}.description"), format!("expected text, found {other}"))),
    };
    let scheduling = match map.get("scheduler") {
        None | Some(Value::Null) => *base,
        Some(section) => Scheduling::parse(section, base, &format!("{at}.scheduler"), warnings)?,
    };
    let mut max_aux = resolute_scheduler::DEFAULT_MAX_AUX_CONTAINERS_PER_AGENT;
    // `max_cpu_containers_per_agent` is upstream's older name of the same setting.
    for key in ["max_cpu_containers_per_agent", "max_aux_containers_per_agent"] {
        if let Some(v) = map.get(key).filter(|v| !v.is_null()) {
            max_aux = v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| invalid(&format!("{at}.{key}"), format!("expected a non-negative integer, found {v}")))?;
        }
    }
    Ok(PoolConfig { name, description, scheduler: scheduling.config(max_aux), default_priority: scheduling.default_priority })
}

#[cfg(test)]
#[path = "resource_pools_tests.rs"]
mod tests;
