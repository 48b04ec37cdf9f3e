//! Machine- and human-readable dumps of API responses, shaped like upstream's `render.print_json`
//! (2-space indent, sorted keys) and `util.yaml_safe_dump` (block style, sorted keys).

use std::io::Write;

use serde::Serialize;
use serde_json::Value;

/// Recursively sorts object keys. Needed even though serde_json's default map is sorted: another
/// crate in the build may turn on `preserve_order`, which would leave declaration order.
pub fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// Pretty JSON with sorted keys, no trailing newline.
pub fn json<T: Serialize>(value: &T) -> String {
    let value = serde_json::to_value(value).map(sorted).unwrap_or(Value::Null);
    serde_json::to_string_pretty(&value).unwrap_or_default()
}

/// Block-style YAML with sorted keys, ending in a newline.
pub fn yaml<T: Serialize>(value: &T) -> String {
    let value = serde_json::to_value(value).map(sorted).unwrap_or(Value::Null);
    serde_norway::to_string(&value).unwrap_or_default()
}

/// Writes one line to stdout. Unlike `println!`, a closed pipe (`det user list | head -1`) is not
/// a panic: the reader has gone, so the output is simply dropped.
pub fn emit(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}

/// `println!` that survives a closed stdout; see [`emit`].
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::render::emit(&format!($($arg)*))
    };
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    // Expected text from ruamel.yaml's `YAML(typ="safe", pure=True)` with
    // `default_flow_style=False`, which is what upstream's `det master info` prints.
    #[test]
    fn yaml_matches_upstream_dump() {
        let value = json!({
            "version": "0.38.1", "masterId": "abc", "clusterName": "", "ssoProviders": [],
            "featureSwitches": ["a", "b"], "rbacEnabled": false, "n": "123", "t": "true",
            "x": null, "num": 5, "sso": [{"url": "y", "name": "x"}],
        });
        let expected = "clusterName: ''\nfeatureSwitches:\n- a\n- b\nmasterId: abc\nn: '123'\n\
                        num: 5\nrbacEnabled: false\nsso:\n- name: x\n  url: y\nssoProviders: []\n\
                        t: 'true'\nversion: 0.38.1\nx: null\n";
        assert_eq!(super::yaml(&value), expected);
    }

    #[test]
    fn json_sorts_keys() {
        let value = json!({"b": 1, "a": {"d": [], "c": true}});
        assert_eq!(super::json(&value), "{\n  \"a\": {\n    \"c\": true,\n    \"d\": []\n  },\n  \"b\": 1\n}");
    }
}
