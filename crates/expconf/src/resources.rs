//! `resources`: how many slots a trial takes, which pool it runs in, its scheduling priority and
//! weight, shared memory and devices.

use serde::Serialize;

use crate::error::WarningKind;
use crate::number::whole_as_integer;
use crate::read::{Ctx, Field, Fields, Mode, quote};

/// The `resources` section.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Resources {
    /// Slots (GPUs, or whole CPU agents) per trial; 0 runs on the auxiliary (CPU) pool.
    pub slots_per_trial: u32,
    pub max_slots: Option<u32>,
    #[serde(serialize_with = "whole_as_integer")]
    pub weight: f64,
    /// 1 (highest) to 99 (lowest); `None` until the pool's default is applied.
    pub priority: Option<u8>,
    /// Empty means "the cluster's default pool".
    pub resource_pool: String,
    pub shm_size: Option<ShmSize>,
    pub native_parallel: bool,
    pub is_single_node: Option<bool>,
    pub devices: Vec<Device>,
}

/// `shm_size` as written: bytes, or a size such as `"4G"` or `"512 MiB"`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ShmSize {
    Bytes(u64),
    Text(String),
}

impl ShmSize {
    /// The size in bytes (units are binary, as Docker reads them: `1K` = 1024).
    pub fn bytes(&self) -> u64 {
        match self {
            ShmSize::Bytes(bytes) => *bytes,
            ShmSize::Text(text) => parse_memory_size(text).unwrap_or(0),
        }
    }
}

/// A host device exposed to trial containers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Device {
    pub host_path: String,
    pub container_path: String,
    pub mode: String,
}

/// Parses `4G`, `1.5 GiB`, `512m`, `100b`, `1024` into bytes; `None` if it is not a size.
pub fn parse_memory_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    if number.is_empty() || number.matches('.').count() > 1 {
        return None;
    }
    let number: f64 = number.parse().ok()?;
    let unit = unit.strip_prefix(' ').unwrap_or(unit).to_ascii_lowercase();
    let exponent = match unit.as_str() {
        "" | "b" => 0,
        u => {
            let power = "kmgtp".find(u.chars().next()?)? + 1;
            if !matches!(&u[1..], "" | "b" | "ib") {
                return None;
            }
            power
        }
    };
    let bytes = number * 1024f64.powi(i32::try_from(exponent).ok()?);
    (bytes.is_finite() && bytes < u64::MAX as f64).then_some(bytes as u64)
}

impl Default for Resources {
    fn default() -> Self {
        Self {
            slots_per_trial: 1,
            max_slots: None,
            weight: 1.0,
            priority: None,
            resource_pool: String::new(),
            shm_size: None,
            native_parallel: false,
            is_single_node: None,
            devices: Vec::new(),
        }
    }
}

/// Reads `resources`; an absent section is all defaults.
pub(crate) fn read_resources(ctx: &mut Ctx, field: Option<Field<'_>>) -> Resources {
    let Some(field) = field else { return Resources::default() };
    let Some(mut fields) = Fields::of(ctx, &field) else { return Resources::default() };
    if let Some(slots) = fields.take("slots") {
        // Commands and notebooks use `slots`; upstream rejects it on experiments.
        if ctx.mode == Mode::Complete {
            ctx.invalid(
                &slots.path,
                crate::read::describe(slots.value),
                "experiments use resources.slots_per_trial; slots is for commands and notebooks",
            );
        } else {
            slots.uint_at_least(ctx, 0);
        }
    }
    if let Some(label) = fields.take("agent_label") {
        ctx.warn(&label.path, WarningKind::Ignored, "agent_label was removed in Determined 0.20; ignored");
    }
    let slots_per_trial = fields.u32_or(ctx, "slots_per_trial", 0, 1);
    let max_slots = fields.take("max_slots").and_then(|f| f.u32_at_least(ctx, 0));
    let weight = fields.take("weight").and_then(|f| f.number_between(ctx, 0.0, f64::MAX, "a number >= 0")).unwrap_or(1.0);
    let priority = fields.take("priority").and_then(|f| f.int_between(ctx, 1, 99)).and_then(|p| u8::try_from(p).ok());
    let resource_pool = fields.string(ctx, "resource_pool").unwrap_or_default();
    let shm_size = fields.take("shm_size").and_then(|f| read_shm_size(ctx, &f));
    let native_parallel = fields.bool_or(ctx, "native_parallel", false);
    let is_single_node = fields.take("is_single_node").and_then(|f| f.boolean(ctx));
    let devices = fields.take("devices").map(|f| f.items(ctx)).unwrap_or_default();
    let devices = devices.iter().filter_map(|f| read_device(ctx, f)).collect();
    fields.finish(ctx);
    Resources { slots_per_trial, max_slots, weight, priority, resource_pool, shm_size, native_parallel, is_single_node, devices }
}

fn read_shm_size(ctx: &mut Ctx, field: &Field<'_>) -> Option<ShmSize> {
    match field.value {
        serde_json::Value::String(text) if parse_memory_size(text).is_some() => Some(ShmSize::Text(text.clone())),
        serde_json::Value::String(text) => {
            ctx.invalid(&field.path, quote(text), "must be a memory size such as 4G, 512M or 1073741824");
            None
        }
        _ => field.uint_at_least(ctx, 0).map(ShmSize::Bytes),
    }
}

fn read_device(ctx: &mut Ctx, field: &Field<'_>) -> Option<Device> {
    let mut fields = Fields::of(ctx, field)?;
    let host_path = fields.require(ctx, "host_path", "the device on the host, e.g. /dev/infiniband").and_then(|f| f.non_empty_string(ctx));
    let container_path = fields.require(ctx, "container_path", "the device path in the container").and_then(|f| f.non_empty_string(ctx));
    let mode = fields.string(ctx, "mode").unwrap_or_else(|| "mrw".to_string());
    fields.finish(ctx);
    Some(Device { host_path: host_path?, container_path: container_path?, mode })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::path::FieldPath;

    fn read(value: Value, mode: Mode) -> (Resources, Vec<String>) {
        let mut ctx = Ctx::new(mode);
        let resources = read_resources(&mut ctx, Some(Field::new(&value, FieldPath::root().key("resources"))));
        (resources, ctx.errors.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn defaults_and_serialisation() {
        let (resources, errors) = read(json!({}), Mode::Complete);
        assert!(errors.is_empty());
        assert_eq!(
            serde_json::to_value(resources).unwrap(),
            json!({"slots_per_trial": 1, "max_slots": null, "weight": 1, "priority": null, "resource_pool": "",
                   "shm_size": null, "native_parallel": false, "is_single_node": null, "devices": []})
        );
    }

    #[test]
    fn reports_each_bad_value() {
        let (_, errors) = read(json!({"slots_per_trial": -1, "priority": 100, "shm_size": "lots", "weight": "heavy"}), Mode::Complete);
        assert_eq!(
            errors,
            [
                "resources.slots_per_trial: found -1, expected an integer >= 0",
                "resources.weight: expected a number, found a string (\"heavy\")",
                "resources.priority: found 100, expected an integer from 1 to 99",
                "resources.shm_size: must be a memory size such as 4G, 512M or 1073741824 (found \"lots\")",
            ]
        );
    }

    #[test]
    fn slots_is_for_commands_not_experiments() {
        let (_, errors) = read(json!({"slots": 0}), Mode::Complete);
        assert!(errors[0].starts_with("resources.slots: experiments use resources.slots_per_trial"));
        let (_, errors) = read(json!({"slots": 0}), Mode::Fragment);
        assert!(errors.is_empty());
    }

    #[test]
    fn memory_sizes() {
        assert_eq!(parse_memory_size("4G"), Some(4 << 30));
        assert_eq!(parse_memory_size("1.5 GiB"), Some(3 << 29));
        assert_eq!(parse_memory_size("512m"), Some(512 << 20));
        assert_eq!(parse_memory_size("100b"), Some(100));
        assert_eq!(parse_memory_size("1024"), Some(1024));
        assert_eq!(parse_memory_size("4X"), None);
        assert_eq!(parse_memory_size("G"), None);
        assert_eq!(parse_memory_size("1.2.3G"), None);
        assert_eq!(ShmSize::Text("2K".into()).bytes(), 2048);
    }
}
