//! The OpenAPI document against what the master really serves: every route and method the router
//! holds is a path of the document (and nothing else is), every enum value it publishes is one the
//! wire type reads, every int64 is a string, every `$ref` resolves and every operation declares
//! the error envelope.

use std::collections::{BTreeMap, BTreeSet};

use regex::Regex;
use serde_json::Value;
use utoipa::OpenApi;

use super::openapi::{ApiDoc, UNLISTED};

type RouteTable = BTreeMap<String, BTreeSet<String>>;

/// `{experimentId}` and `{id}` name the same segment; the router's and the document's names may differ.
fn normalize(path: &str) -> String {
    Regex::new(r"\{[^}]*\}").unwrap().replace_all(path, "{}").into_owned()
}

/// The router's own table (path → methods), read from axum's `Debug` output: the one place axum
/// lists its routes. HEAD comes with every GET and is left out.
fn served_routes() -> RouteTable {
    let full = format!("{:?}", super::routes());
    // The fallback router numbers its own routes from 0 again; only the path router's count.
    let dump = full.split("fallback_router:").next().unwrap_or_default();
    let methods_re =
        Regex::new(r#"RouteId\((\d+)\): MethodRouter\(MethodRouter \{.*?allow_header: ([A-Za-z]+(?:\(b"([A-Z,]*)"\))?) \}\)"#).unwrap();
    let paths_re = Regex::new(r#"RouteId\((\d+)\): "([^"]*)""#).unwrap();
    let methods: BTreeMap<String, BTreeSet<String>> = methods_re
        .captures_iter(dump)
        .map(|c| {
            let list = c.get(3).map_or("*", |m| m.as_str());
            let set = list.split(',').filter(|m| *m != "HEAD" && !m.is_empty()).map(|m| m.to_ascii_lowercase()).collect();
            (c[1].to_owned(), set)
        })
        .collect();
    let mut table = RouteTable::new();
    for c in paths_re.captures_iter(dump) {
        let set = methods.get(&c[1]).cloned().unwrap_or_else(|| panic!("route {} has no method router in {dump}", &c[2]));
        table.insert(c[2].to_owned(), set);
    }
    assert!(table.len() > 50, "could not read the router's table from axum's Debug output (found {table:?})");
    table
}

fn document() -> Value {
    serde_json::to_value(ApiDoc::openapi()).unwrap()
}

const METHODS: [&str; 7] = ["get", "put", "post", "delete", "options", "patch", "trace"];

fn documented_routes(doc: &Value) -> RouteTable {
    doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(path, item)| (path.clone(), METHODS.iter().filter(|m| item.get(**m).is_some()).map(|m| (*m).to_owned()).collect()))
        .collect()
}

#[test]
fn every_served_route_is_documented_and_every_documented_route_is_served() {
    let served: RouteTable = served_routes()
        .into_iter()
        .filter(|(path, _)| !UNLISTED.iter().any(|(unlisted, _)| unlisted == path))
        .map(|(path, methods)| (normalize(&path), methods))
        .collect();
    let documented: RouteTable = documented_routes(&document()).into_iter().map(|(path, methods)| (normalize(&path), methods)).collect();
    let mut problems = Vec::new();
    for (path, methods) in &served {
        match documented.get(path) {
            None => problems.push(format!("{path} ({methods:?}) is served but not in the OpenAPI document")),
            Some(doc) if doc != methods => problems.push(format!("{path}: served {methods:?}, documented {doc:?}")),
            Some(_) => {}
        }
    }
    for (path, methods) in &documented {
        if !served.contains_key(path) {
            problems.push(format!("{path} ({methods:?}) is in the OpenAPI document but not served"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn unlisted_routes_exist() {
    let served = served_routes();
    for (path, why) in UNLISTED {
        assert!(served.contains_key(*path), "UNLISTED names {path} ({why}), which the router does not serve");
    }
}

/// Every enum the API speaks, by the name its schema has in the document: its wire names (`ALL`)
/// and whether a name parses as it.
struct WireEnum {
    schema: &'static str,
    names: Vec<&'static str>,
    parses: fn(&str) -> bool,
}

macro_rules! wire_enums {
    ($($module:ident :: $ty:ident),* $(,)?) => {
        vec![$(WireEnum {
            schema: stringify!($ty),
            names: resolute_api::$module::$ty::ALL.iter().map(|v| v.name()).collect(),
            parses: |name| {
                let wire = Value::String(name.to_owned());
                serde_json::from_value::<resolute_api::$module::$ty>(wire.clone()).is_ok_and(|v| serde_json::to_value(v).ok() == Some(wire))
            },
        }),*]
    };
}

fn wire_enums() -> Vec<WireEnum> {
    wire_enums![
        checkpoints::CheckpointState,
        checkpoints::CheckpointSortBy,
        commands::ContainerState,
        commands::NtscSortBy,
        experiments::ExperimentState,
        experiments::JobState,
        experiments::LaunchWarning,
        experiments::ExperimentSortBy,
        generic_tasks::GenericTaskState,
        logs::LogLevel,
        tasks::TaskType,
        tasks::TaskState,
        tasks::DeviceType,
        templates::TemplateSortBy,
        models::ModelSortBy,
        models::ModelVersionSortBy,
        trials::TrialState,
        trials::TrialSortBy,
        users::UserSortBy,
        users::OrderBy,
        webhooks::WebhookType,
        webhooks::WebhookMode,
        webhooks::TriggerType,
        workloads::WorkloadFilter,
        workloads::MetricType,
        workspaces::WorkspaceState,
        workspaces::WorkspaceSortBy,
        projects::ProjectSortBy,
    ]
}

/// Calls `visit(location, object)` for every JSON object in `value`.
fn walk<'a>(value: &'a Value, location: &str, visit: &mut dyn FnMut(&str, &'a serde_json::Map<String, Value>)) {
    match value {
        Value::Object(map) => {
            visit(location, map);
            for (key, child) in map {
                walk(child, &format!("{location}/{key}"), visit);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                walk(child, &format!("{location}/{i}"), visit);
            }
        }
        _ => {}
    }
}

#[test]
fn every_published_enum_value_is_a_wire_name_and_every_wire_name_is_published() {
    let doc = document();
    let enums = wire_enums();
    let mut problems = Vec::new();
    let mut seen = 0;
    walk(&doc, "#", &mut |location, object| {
        let Some(values) = object.get("enum").and_then(Value::as_array) else { return };
        seen += 1;
        let values: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
        // A component schema is matched by name; an inline enum by its values.
        let schema_name = location.strip_prefix("#/components/schemas/").filter(|rest| !rest.contains('/'));
        let candidates: Vec<&WireEnum> = match schema_name {
            Some(name) => enums.iter().filter(|e| e.schema == name).collect(),
            None => enums.iter().filter(|e| values.first().is_some_and(|v| (e.parses)(v))).collect(),
        };
        let Some(wire) = candidates.first() else {
            problems.push(format!("{location}: enum {values:?} matches no wire enum of resolute_api"));
            return;
        };
        for value in &values {
            if !(wire.parses)(value) {
                problems.push(format!("{location}: {value:?} is published but {} does not read it", wire.schema));
            }
        }
        if values != wire.names {
            problems.push(format!("{location}: published {values:?}, {} speaks {:?}", wire.schema, wire.names));
        }
    });
    assert!(seen >= 10, "found only {seen} enums in the document");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Resolute's own `searcher/state` (no upstream counterpart; only our CLI reads it) sends its
/// counters as JSON numbers, and the document says so.
const NUMERIC_INT64_SCHEMAS: &[&str] = &["SearcherBracket", "SearcherRung", "SearcherTrial"];

#[test]
fn int64_fields_are_published_as_strings() {
    let doc = document();
    let mut problems = Vec::new();
    let mut strings = 0;
    walk(&doc, "#", &mut |location, object| {
        let format = object.get("format").and_then(Value::as_str);
        if !matches!(format, Some("int64" | "uint64")) {
            return;
        }
        let types: Vec<&str> = match object.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if types.contains(&"string") {
            strings += 1;
        } else if !NUMERIC_INT64_SCHEMAS.iter().any(|s| location.starts_with(&format!("#/components/schemas/{s}/"))) {
            problems.push(format!("{location}: an int64 published as {types:?}; grpc-gateway sends int64s as strings"));
        }
    });
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(strings >= 3, "expected the known int64 fields (checkpointSize, mtime, resources) as format int64 strings, found {strings}");
}

#[test]
fn every_reference_resolves() {
    let doc = document();
    let schemas = doc["components"]["schemas"].as_object().cloned().unwrap_or_default();
    let mut problems = Vec::new();
    walk(&doc, "#", &mut |location, object| {
        if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
            match reference.strip_prefix("#/components/schemas/") {
                Some(name) if schemas.contains_key(name) => {}
                _ => problems.push(format!("{location}: {reference} does not resolve")),
            }
        }
    });
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_operation_declares_the_error_envelope() {
    let doc = document();
    let mut problems = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in METHODS {
            let Some(operation) = item.get(method) else { continue };
            let error = &operation["responses"]["default"]["content"]["application/json"]["schema"]["$ref"];
            if error != "#/components/schemas/ErrorBody" {
                problems.push(format!("{method} {path}: no default ErrorBody response"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
