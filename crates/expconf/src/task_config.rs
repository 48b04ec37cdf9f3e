//! The config of a command, notebook, shell, TensorBoard or generic task (upstream's
//! `CommandConfig`): what the master needs to run one — entrypoint, slots, pool, priority,
//! environment variables, idle timeout — read from the JSON the client sent (templates and the
//! master's `task_container_defaults` already merged under it), with the defaults upstream fills,
//! and every problem reported with its field path.

use serde_json::{Map, Value, json};

use crate::error::ConfigError;

/// The process a task runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaskEntrypoint {
    /// Run with `sh -c`.
    Shell(String),
    Argv(Vec<String>),
}

/// A task config after defaults and validation.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskConfig {
    /// The whole config with defaults filled, as stored and returned to clients.
    pub json: Value,
    /// `None` when the kind supplies its own (notebooks, shells, TensorBoards).
    pub entrypoint: Option<TaskEntrypoint>,
    pub description: String,
    pub slots: u32,
    /// Empty: the cluster's default pool.
    pub resource_pool: String,
    pub priority: Option<u32>,
    pub weight: f64,
    /// `KEY=VALUE` per device type.
    pub environment_variables: crate::PerDevice<Vec<String>>,
    /// The interpreter for `python3` entrypoints (ours: `environment.python`).
    pub python: Option<String>,
    /// Seconds of inactivity after which the task is killed (`idle_timeout`), if any.
    pub idle_timeout_seconds: Option<u64>,
}

/// Reads a task config. `default_slots` is the kind's (1 for commands, notebooks and shells, 0
/// for TensorBoards); `default_description` names the task when the config does not;
/// `needs_entrypoint` for commands and generic tasks, whose entrypoint is the user's.
pub fn parse_task_config(
    config: &Value,
    default_slots: u32,
    default_description: &str,
    needs_entrypoint: bool,
) -> Result<TaskConfig, Vec<ConfigError>> {
    let mut errors = Vec::new();
    let mut json = match config {
        Value::Object(_) => config.clone(),
        Value::Null => json!({}),
        other => {
            return Err(vec![ConfigError::WrongType { path: "config".into(), expected: "an object".into(), found: kind_of(other) }]);
        }
    };
    let entrypoint = match json.get("entrypoint") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.trim().is_empty() => Some(TaskEntrypoint::Shell(s.clone())),
        Some(Value::Array(items)) if !items.is_empty() => {
            let argv: Option<Vec<String>> = items.iter().map(|v| v.as_str().map(str::to_owned)).collect();
            match argv {
                Some(argv) => Some(TaskEntrypoint::Argv(argv)),
                None => {
                    errors.push(wrong("entrypoint", "a list of strings", &json["entrypoint"]));
                    None
                }
            }
        }
        Some(other) => {
            errors.push(wrong("entrypoint", "a non-empty string or list of strings", other));
            None
        }
    };
    if needs_entrypoint && entrypoint.is_none() && errors.is_empty() {
        errors.push(ConfigError::Missing {
            path: "entrypoint".into(),
            hint: "give the command to run, e.g. `det cmd run python3 train.py`, or set entrypoint in the config file".into(),
        });
    }
    let obj = json.as_object_mut().expect("an object above");
    let description = match obj.get("description") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        None | Some(Value::Null) | Some(Value::String(_)) => default_description.to_owned(),
        Some(other) => {
            errors.push(wrong("description", "a string", other));
            default_description.to_owned()
        }
    };
    obj.insert("description".into(), Value::String(description.clone()));

    let mut resources = section(obj, "resources", &mut errors);
    let slots = match resources.get("slots") {
        None | Some(Value::Null) => default_slots,
        Some(v) => match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
            Some(n) => n,
            None => {
                errors.push(wrong("resources.slots", "a non-negative integer", v));
                default_slots
            }
        },
    };
    let resource_pool = match resources.get("resource_pool") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            errors.push(wrong("resources.resource_pool", "a string", other));
            String::new()
        }
    };
    let priority = match resources.get("priority") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64().filter(|p| (1..=99).contains(p)) {
            Some(p) => Some(p as u32),
            None => {
                errors.push(ConfigError::OutOfRange {
                    path: "resources.priority".into(),
                    found: v.to_string(),
                    allowed: "an integer from 1 (highest) to 99".into(),
                });
                None
            }
        },
    };
    let weight = match resources.get("weight") {
        None | Some(Value::Null) => 1.0,
        Some(v) => match v.as_f64().filter(|w| *w > 0.0) {
            Some(w) => w,
            None => {
                errors.push(wrong("resources.weight", "a positive number", v));
                1.0
            }
        },
    };
    resources.insert("slots".into(), json!(slots));
    obj.insert("resources".into(), Value::Object(resources));

    let environment = section(obj, "environment", &mut errors);
    let environment_variables = read_variables(environment.get("environment_variables"), &mut errors);
    let python = match environment.get("python") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(other) => {
            errors.push(wrong("environment.python", "a path to an interpreter", other));
            None
        }
    };
    obj.insert("environment".into(), Value::Object(environment));

    let idle_timeout_seconds = match obj.get("idle_timeout") {
        None | Some(Value::Null) => None,
        Some(v) => match parse_duration(v) {
            Some(secs) => Some(secs),
            None => {
                errors.push(wrong("idle_timeout", "a duration such as \"30m\", \"90s\" or \"2h\"", v));
                None
            }
        },
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(TaskConfig {
        json,
        entrypoint,
        description,
        slots,
        resource_pool,
        priority,
        weight,
        environment_variables,
        python,
        idle_timeout_seconds,
    })
}

/// `30s`, `5m`, `2h`, `1d`, or a bare number of seconds.
fn parse_duration(v: &Value) -> Option<u64> {
    if let Some(n) = v.as_u64() {
        return Some(n);
    }
    let s = v.as_str()?.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let n: u64 = digits.parse().ok()?;
    let factor = match unit.trim() {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return None,
    };
    n.checked_mul(factor)
}

fn section(obj: &mut Map<String, Value>, key: &str, errors: &mut Vec<ConfigError>) -> Map<String, Value> {
    match obj.remove(key) {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m,
        Some(other) => {
            errors.push(wrong(key, "an object", &other));
            Map::new()
        }
    }
}

/// A list of `KEY=VALUE` for every device type, or one list per device type.
fn read_variables(v: Option<&Value>, errors: &mut Vec<ConfigError>) -> crate::PerDevice<Vec<String>> {
    let mut out = crate::PerDevice::<Vec<String>>::default();
    let list = |path: &str, v: &Value, errors: &mut Vec<ConfigError>| -> Vec<String> {
        let Some(items) = v.as_array() else {
            errors.push(wrong(path, "a list of KEY=VALUE strings", v));
            return Vec::new();
        };
        let mut vars = Vec::new();
        for (i, item) in items.iter().enumerate() {
            match item.as_str() {
                Some(s) if s.contains('=') && !s.starts_with('=') => vars.push(s.to_owned()),
                _ => errors.push(ConfigError::Invalid {
                    path: format!("{path}[{i}]"),
                    found: item.to_string(),
                    reason: "an environment variable must look like KEY=VALUE".into(),
                }),
            }
        }
        vars
    };
    match v {
        None | Some(Value::Null) => {}
        Some(Value::Object(per_device)) => {
            for (device, value) in per_device {
                let path = format!("environment.environment_variables.{device}");
                let vars = list(&path, value, errors);
                match device.as_str() {
                    "cpu" => out.cpu = vars,
                    "cuda" | "gpu" => out.cuda = vars,
                    "rocm" => out.rocm = vars,
                    _ => errors.push(ConfigError::NotOneOf { path, found: device.clone(), allowed: "cpu, cuda, rocm".into() }),
                }
            }
        }
        Some(other) => {
            let vars = list("environment.environment_variables", other, errors);
            out.cpu = vars.clone();
            out.cuda = vars.clone();
            out.rocm = vars;
        }
    }
    out
}

fn wrong(path: &str, expected: &str, found: &Value) -> ConfigError {
    ConfigError::WrongType { path: path.into(), expected: expected.into(), found: kind_of(found) }
}

fn kind_of(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("{b}"),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("{s:?}"),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "an object".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_gets_upstream_defaults() {
        let c = parse_task_config(&json!({"entrypoint": ["echo", "hi"]}), 1, "Command (abc)", true).unwrap();
        assert_eq!(c.entrypoint, Some(TaskEntrypoint::Argv(vec!["echo".into(), "hi".into()])));
        assert_eq!(c.slots, 1);
        assert_eq!(c.description, "Command (abc)");
        assert_eq!(c.json["resources"]["slots"], 1);
        assert_eq!(c.json["description"], "Command (abc)");
    }

    #[test]
    fn every_problem_is_named() {
        let errors = parse_task_config(
            &json!({"entrypoint": 3, "resources": {"slots": -1, "priority": 120}, "environment": {"environment_variables": ["NOPE"]},
                    "idle_timeout": "soon"}),
            1,
            "x",
            true,
        )
        .unwrap_err();
        let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
        for path in ["entrypoint", "resources.slots", "resources.priority", "environment.environment_variables[0]", "idle_timeout"] {
            assert!(text.iter().any(|t| t.starts_with(path)), "{path} not in {text:?}");
        }
        let missing = parse_task_config(&json!({}), 1, "x", true).unwrap_err();
        assert!(missing[0].to_string().contains("entrypoint: required"), "{missing:?}");
    }

    #[test]
    fn variables_and_durations() {
        let c = parse_task_config(
            &json!({"entrypoint": "true", "environment": {"environment_variables": {"cpu": ["A=1"]}}, "idle_timeout": "30m"}),
            0,
            "x",
            false,
        )
        .unwrap();
        assert_eq!(c.environment_variables.cpu, ["A=1"]);
        assert_eq!(c.idle_timeout_seconds, Some(1800));
        assert_eq!(c.slots, 0);
    }
}
