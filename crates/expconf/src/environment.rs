//! `environment`: the container image and environment variables per device type, ports,
//! capabilities, the Kubernetes pod spec, and (our extension) the Python interpreter for trials.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::WarningKind;
use crate::read::{Ctx, Field, Fields};

/// Upstream 0.38's default images (overridable by the master's task container defaults).
pub const DEFAULT_CPU_IMAGE: &str = "determinedai/pytorch-ngc-dev:0736b6d";
pub const DEFAULT_CUDA_IMAGE: &str = "determinedai/pytorch-ngc-dev:0736b6d";
pub const DEFAULT_ROCM_IMAGE: &str = "determinedai/environments:rocm-5.6-pytorch-1.3-tf-2.10-rocm-mpich-0736b6d";

const DEVICE_KEYS: &[&str] = &["cpu", "cuda", "rocm", "gpu"];
const REGISTRY_AUTH_KEYS: &[&str] = &["username", "password", "auth", "email", "serveraddress", "identitytoken", "registrytoken"];

/// One value per device type; a single value in the config applies to all three.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PerDevice<T> {
    pub cpu: T,
    pub cuda: T,
    pub rocm: T,
}

impl<T> PerDevice<T> {
    /// The value for a device type (`cpu`, `cuda`, `rocm`); anything else is CPU.
    pub fn for_device(&self, device_type: &str) -> &T {
        match device_type {
            "cuda" | "gpu" => &self.cuda,
            "rocm" => &self.rocm,
            _ => &self.cpu,
        }
    }
}

/// The `environment` section.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Environment {
    pub image: PerDevice<String>,
    /// `KEY=VALUE` strings.
    pub environment_variables: PerDevice<Vec<String>>,
    pub ports: BTreeMap<String, u16>,
    pub force_pull_image: bool,
    pub registry_auth: Option<Value>,
    pub add_capabilities: Vec<String>,
    pub drop_capabilities: Vec<String>,
    /// Free-form Kubernetes pod spec, passed through.
    pub pod_spec: Option<Value>,
    pub proxy_ports: Vec<Value>,
    /// Resolute extension: the Python interpreter trials run with (e.g. a virtualenv's python3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
}

impl Default for Environment {
    fn default() -> Self {
        Self {
            image: PerDevice { cpu: DEFAULT_CPU_IMAGE.into(), cuda: DEFAULT_CUDA_IMAGE.into(), rocm: DEFAULT_ROCM_IMAGE.into() },
            environment_variables: PerDevice::default(),
            ports: BTreeMap::new(),
            force_pull_image: false,
            registry_auth: None,
            add_capabilities: Vec::new(),
            drop_capabilities: Vec::new(),
            pod_spec: None,
            proxy_ports: Vec::new(),
            python: None,
        }
    }
}

/// Reads `environment`; an absent section is all defaults.
pub(crate) fn read_environment(ctx: &mut Ctx, field: Option<Field<'_>>) -> Environment {
    let defaults = Environment::default();
    let Some(field) = field else { return defaults };
    let Some(mut fields) = Fields::of(ctx, &field) else { return defaults };
    let image = fields.take("image").map(|f| read_image(ctx, &f, &defaults.image)).unwrap_or(defaults.image);
    let environment_variables = fields.take("environment_variables").map(|f| read_variables(ctx, &f)).unwrap_or_default();
    let ports = fields.take("ports").map(|f| read_ports(ctx, &f)).unwrap_or_default();
    let force_pull_image = fields.bool_or(ctx, "force_pull_image", false);
    let registry_auth = fields.take("registry_auth").and_then(|f| read_registry_auth(ctx, &f));
    let add_capabilities = fields.take("add_capabilities").and_then(|f| f.string_list(ctx)).unwrap_or_default();
    let drop_capabilities = fields.take("drop_capabilities").and_then(|f| f.string_list(ctx)).unwrap_or_default();
    let pod_spec = fields.take("pod_spec").and_then(|f| f.mapping(ctx).map(|m| Value::Object(m.clone())));
    let proxy_ports = fields.take("proxy_ports").map(|f| read_proxy_ports(ctx, &f)).unwrap_or_default();
    let python = fields.take("python").and_then(|f| f.non_empty_string(ctx));
    fields.finish(ctx);
    Environment {
        image,
        environment_variables,
        ports,
        force_pull_image,
        registry_auth,
        add_capabilities,
        drop_capabilities,
        pod_spec,
        proxy_ports,
        python,
    }
}

/// Opens a `{cpu, cuda, rocm}` mapping, mapping the legacy `gpu` key onto `cuda`.
fn per_device_fields<'v>(ctx: &mut Ctx, field: &Field<'v>, map: &'v Map<String, Value>) -> Vec<(&'static str, Field<'v>)> {
    let mut fields = Fields::new(map, field.path.clone());
    let mut found = Vec::new();
    for key in DEVICE_KEYS {
        if let Some(f) = fields.take(key) {
            if *key == "gpu" {
                ctx.warn(&f.path, WarningKind::Deprecated, "gpu is the old name of cuda");
                if map.contains_key("cuda") {
                    continue;
                }
            }
            found.push((if *key == "gpu" { "cuda" } else { key }, f));
        }
    }
    fields.finish(ctx);
    found
}

fn read_image(ctx: &mut Ctx, field: &Field<'_>, defaults: &PerDevice<String>) -> PerDevice<String> {
    let mut image = defaults.clone();
    match field.value {
        Value::String(_) => {
            if let Some(name) = field.non_empty_string(ctx) {
                image = PerDevice { cpu: name.clone(), cuda: name.clone(), rocm: name };
            }
        }
        Value::Object(map) => {
            for (device, f) in per_device_fields(ctx, field, map) {
                if let Some(name) = f.non_empty_string(ctx) {
                    *slot(&mut image, device) = name;
                }
            }
        }
        other => ctx.wrong_type(&field.path, "an image name or a mapping of cpu, cuda and rocm to image names", other),
    }
    image
}

fn read_variables(ctx: &mut Ctx, field: &Field<'_>) -> PerDevice<Vec<String>> {
    let mut variables = PerDevice::default();
    match field.value {
        Value::Array(_) => {
            let list = read_variable_list(ctx, field);
            variables = PerDevice { cpu: list.clone(), cuda: list.clone(), rocm: list };
        }
        Value::Object(map) => {
            for (device, f) in per_device_fields(ctx, field, map) {
                *slot(&mut variables, device) = read_variable_list(ctx, &f);
            }
        }
        other => ctx.wrong_type(&field.path, "a list of KEY=VALUE strings or a mapping of cpu, cuda and rocm to such lists", other),
    }
    variables
}

fn read_variable_list(ctx: &mut Ctx, field: &Field<'_>) -> Vec<String> {
    let mut variables = Vec::new();
    for item in field.items(ctx) {
        let Some(variable) = item.string(ctx) else { continue };
        match variable.split_once('=') {
            Some((key, _)) if !key.is_empty() => variables.push(variable),
            _ => ctx.invalid(&item.path, crate::read::quote(&variable), "an environment variable must look like KEY=VALUE"),
        }
    }
    variables
}

fn slot<'a, T>(per_device: &'a mut PerDevice<T>, device: &str) -> &'a mut T {
    match device {
        "cpu" => &mut per_device.cpu,
        "rocm" => &mut per_device.rocm,
        _ => &mut per_device.cuda,
    }
}

fn read_ports(ctx: &mut Ctx, field: &Field<'_>) -> BTreeMap<String, u16> {
    let Some(map) = field.mapping(ctx) else { return BTreeMap::new() };
    map.iter()
        .filter_map(|(name, port)| {
            let port = Field::new(port, field.path.key(name)).int_between(ctx, 1, 65535)?;
            Some((name.clone(), u16::try_from(port).ok()?))
        })
        .collect()
}

fn read_registry_auth(ctx: &mut Ctx, field: &Field<'_>) -> Option<Value> {
    let mut fields = Fields::of(ctx, field)?;
    let mut auth = Map::new();
    for key in REGISTRY_AUTH_KEYS {
        if let Some(value) = fields.string(ctx, key) {
            auth.insert(key.to_string(), Value::String(value));
        }
    }
    fields.finish(ctx);
    Some(Value::Object(auth))
}

fn read_proxy_ports(ctx: &mut Ctx, field: &Field<'_>) -> Vec<Value> {
    let mut ports = Vec::new();
    for item in field.items(ctx) {
        let Some(mut fields) = Fields::of(ctx, &item) else { continue };
        let port = fields.require(ctx, "proxy_port", "the container port to proxy").and_then(|f| f.int_between(ctx, 1, 65535));
        for key in ["proxy_tcp", "unauthenticated"] {
            if let Some(flag) = fields.take(key) {
                flag.boolean(ctx);
            }
        }
        fields.string(ctx, "default_service_id");
        fields.finish(ctx);
        if port.is_some() {
            ports.push(item.value.clone());
        }
    }
    ports
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::path::FieldPath;
    use crate::read::Mode;

    fn read(value: Value) -> (Environment, Vec<String>, Vec<String>) {
        let mut ctx = Ctx::new(Mode::Complete);
        let environment = read_environment(&mut ctx, Some(Field::new(&value, FieldPath::root().key("environment"))));
        let warnings = ctx.warnings.iter().map(ToString::to_string).collect();
        (environment, ctx.errors.iter().map(ToString::to_string).collect(), warnings)
    }

    #[test]
    fn a_single_image_and_variable_list_apply_to_every_device() {
        let (environment, errors, _) =
            read(json!({"image": "python:3.12", "environment_variables": ["A=1"], "python": "/opt/venv/bin/python3"}));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(environment.image.rocm, "python:3.12");
        assert_eq!(environment.environment_variables.cpu, ["A=1"]);
        assert_eq!(environment.python.as_deref(), Some("/opt/venv/bin/python3"));
    }

    #[test]
    fn per_device_maps_fill_the_rest_from_defaults() {
        let (environment, errors, warnings) = read(json!({"image": {"gpu": "my/cuda"}, "environment_variables": {"cpu": ["B=2"]}}));
        assert!(errors.is_empty());
        assert_eq!(environment.image.cuda, "my/cuda");
        assert_eq!(environment.image.cpu, DEFAULT_CPU_IMAGE);
        assert_eq!(environment.environment_variables.cuda, Vec::<String>::new());
        assert_eq!(warnings, ["environment.image.gpu: gpu is the old name of cuda"]);
    }

    #[test]
    fn reports_bad_values_with_paths() {
        let (_, errors, _) = read(json!({"image": 3, "environment_variables": ["NOVALUE", 5], "ports": {"web": 70000}}));
        assert_eq!(
            errors,
            [
                "environment.image: expected an image name or a mapping of cpu, cuda and rocm to image names, found an integer (3)",
                "environment.environment_variables[0]: an environment variable must look like KEY=VALUE (found \"NOVALUE\")",
                "environment.environment_variables[1]: expected a string, found an integer (5)",
                "environment.ports.web: found 70000, expected an integer from 1 to 65535",
            ]
        );
    }

    #[test]
    fn python_is_omitted_from_json_when_unset() {
        let json = serde_json::to_value(Environment::default()).unwrap();
        assert!(json.get("python").is_none());
        assert_eq!(json["environment_variables"], json!({"cpu": [], "cuda": [], "rocm": []}));
    }
}
