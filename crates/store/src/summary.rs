//! A trial's `summary_metrics`: for every metric group and metric, an aggregate of the reported
//! `avgMetrics` values, kept up to date on each insert so listing trials never scans `metrics`.
//!
//! Shape: `{"<group>": {"<metric>": {"count", "last", "type", "min", "max", "sum"}}}`. Numeric
//! metrics (`"type": "number"`) carry `min`, `max` and `sum`; any other value (string, boolean,
//! object, array, null) only `count`, `last` and its type. A metric whose type changes takes
//! the type of its latest value; numeric aggregates restart when it becomes numeric again.

use serde_json::{Map, Number, Value, json};

/// Folds one report of `group` into `summary` (a JSON object; anything else is replaced).
pub(crate) fn fold(summary: &mut Value, group: &str, avg_metrics: &Map<String, Value>) {
    if !summary.is_object() {
        *summary = Value::Object(Map::new());
    }
    let Value::Object(groups) = summary else { return };
    // Looked up before inserting: the keys exist after a trial's first report, and an `entry`
    // would allocate the key on every fold.
    if !groups.get(group).is_some_and(Value::is_object) {
        groups.insert(group.to_owned(), Value::Object(Map::new()));
    }
    let Some(Value::Object(metrics)) = groups.get_mut(group) else { return };
    for (name, value) in avg_metrics {
        match metrics.get_mut(name) {
            Some(entry) => {
                if !fold_number_in_place(entry, value) {
                    *entry = fold_value(entry, value);
                }
            }
            None => {
                metrics.insert(name.clone(), fold_value(&Value::Null, value));
            }
        }
    }
}

/// The common case, without allocating: a numeric value folded into a numeric aggregate.
/// Returns false (nothing changed) when `entry` or `value` is of another shape.
fn fold_number_in_place(entry: &mut Value, value: &Value) -> bool {
    let Some(x) = value.as_f64() else { return false };
    let Value::Object(fields) = entry else { return false };
    if fields.get("type").and_then(Value::as_str) != Some("number") {
        return false;
    }
    let field = |k: &str| fields.get(k).and_then(Value::as_f64);
    let (Some(count), Some(min), Some(max), Some(sum)) =
        (fields.get("count").and_then(Value::as_i64), field("min"), field("max"), field("sum"))
    else {
        return false;
    };
    let updates = [
        ("count", Value::from(count + 1)),
        ("last", value.clone()),
        ("min", number(min.min(x))),
        ("max", number(max.max(x))),
        ("sum", number(sum + x)),
    ];
    for (key, new) in updates {
        match fields.get_mut(key) {
            Some(slot) => *slot = new,
            None => {
                fields.insert(key.to_owned(), new);
            }
        }
    }
    true
}

fn fold_value(previous: &Value, value: &Value) -> Value {
    let count = previous.get("count").and_then(Value::as_i64).unwrap_or(0) + 1;
    let was_numeric = previous.get("type").and_then(Value::as_str) == Some("number");
    match value.as_f64() {
        Some(x) => {
            let (min, max, sum) = if was_numeric {
                let field = |k: &str| previous.get(k).and_then(Value::as_f64);
                (field("min").map_or(x, |m| m.min(x)), field("max").map_or(x, |m| m.max(x)), field("sum").unwrap_or(0.0) + x)
            } else {
                (x, x, x)
            };
            json!({"count": count, "last": value, "type": "number", "min": number(min), "max": number(max), "sum": number(sum)})
        }
        None => json!({"count": count, "last": value, "type": type_name(value)}),
    }
}

/// JSON has no NaN or infinity: an overflowing sum becomes `null`.
fn number(x: f64) -> Value {
    Number::from_f64(x).map_or(Value::Null, Value::Number)
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn numbers_aggregate_per_group() {
        let mut summary = json!({});
        fold(&mut summary, "training", &metrics(json!({"loss": 3, "acc": 0.5})));
        fold(&mut summary, "training", &metrics(json!({"loss": 1.5})));
        fold(&mut summary, "validation", &metrics(json!({"loss": 2})));
        fold(&mut summary, "training", &metrics(json!({"loss": 2.5})));
        assert_eq!(summary["training"]["loss"], json!({"count": 3, "last": 2.5, "type": "number", "min": 1.5, "max": 3.0, "sum": 7.0}));
        assert_eq!(summary["training"]["acc"]["count"], 1);
        assert_eq!(summary["validation"]["loss"]["last"], 2, "last keeps the reported value as is");
    }

    #[test]
    fn other_values_keep_last_and_type() {
        let mut summary = Value::Null;
        fold(&mut summary, "g", &metrics(json!({"phase": "warmup", "flag": true})));
        fold(&mut summary, "g", &metrics(json!({"phase": "main"})));
        assert_eq!(summary["g"]["phase"], json!({"count": 2, "last": "main", "type": "string"}));
        assert_eq!(summary["g"]["flag"]["type"], "boolean");
        fold(&mut summary, "g", &metrics(json!({"phase": 4})));
        assert_eq!(summary["g"]["phase"], json!({"count": 3, "last": 4, "type": "number", "min": 4.0, "max": 4.0, "sum": 4.0}));
    }

    #[test]
    fn overflowing_sum_is_null() {
        let mut summary = json!({});
        fold(&mut summary, "g", &metrics(json!({"x": f64::MAX})));
        fold(&mut summary, "g", &metrics(json!({"x": f64::MAX})));
        assert_eq!(summary["g"]["x"]["sum"], Value::Null);
        assert_eq!(summary["g"]["x"]["count"], 2);
    }
}
