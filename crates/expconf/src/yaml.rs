//! YAML text → JSON tree. YAML is a superset of JSON, so JSON configs take the same path. Merge keys
//! (`<<: *base`) are applied; scalar mapping keys become strings; anything JSON cannot hold (NaN,
//! complex keys) is an error with its path, never a panic.

use serde_json::{Map, Number, Value};
use serde_norway::Value as Yaml;

use crate::error::ConfigError;
use crate::path::FieldPath;

/// Parses one YAML (or JSON) document into a JSON tree.
pub fn yaml_to_json(text: &str) -> Result<Value, ConfigError> {
    let mut yaml: Yaml = serde_norway::from_str(text).map_err(|e| ConfigError::Syntax { message: e.to_string() })?;
    yaml.apply_merge().map_err(|e| ConfigError::Syntax { message: e.to_string() })?;
    convert(yaml, &FieldPath::root())
}

fn convert(yaml: Yaml, path: &FieldPath) -> Result<Value, ConfigError> {
    Ok(match yaml {
        Yaml::Null => Value::Null,
        Yaml::Bool(b) => Value::Bool(b),
        Yaml::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                Number::from_f64(f).map(Value::Number).ok_or_else(|| ConfigError::Invalid {
                    path: path.to_string(),
                    found: n.to_string(),
                    reason: "numbers must be finite".to_string(),
                })?
            }
        }
        Yaml::String(s) => Value::String(s),
        Yaml::Sequence(items) => {
            Value::Array(items.into_iter().enumerate().map(|(i, item)| convert(item, &path.index(i))).collect::<Result<_, _>>()?)
        }
        Yaml::Mapping(mapping) => {
            let mut map = Map::new();
            for (key, value) in mapping {
                let key = scalar_key(key, path)?;
                let value = convert(value, &path.key(&key))?;
                map.insert(key, value);
            }
            Value::Object(map)
        }
        // Custom tags (`!foo bar`) carry no meaning for a config; keep the tagged value.
        Yaml::Tagged(tagged) => convert(tagged.value, path)?,
    })
}

fn scalar_key(key: Yaml, path: &FieldPath) -> Result<String, ConfigError> {
    match key {
        Yaml::String(s) => Ok(s),
        Yaml::Bool(b) => Ok(b.to_string()),
        Yaml::Number(n) => Ok(n.to_string()),
        Yaml::Null => Ok("null".to_string()),
        Yaml::Tagged(tagged) => scalar_key(tagged.value, path),
        Yaml::Sequence(_) | Yaml::Mapping(_) => Err(ConfigError::Invalid {
            path: path.to_string(),
            found: "a list or mapping used as a key".to_string(),
            reason: "mapping keys must be plain scalars such as names".to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn converts_yaml_and_json() {
        assert_eq!(yaml_to_json("a: 1\nb: [x, 2.5]\nc: ~\n").unwrap(), json!({"a": 1, "b": ["x", 2.5], "c": null}));
        assert_eq!(yaml_to_json("{\"a\": true}").unwrap(), json!({"a": true}));
    }

    #[test]
    fn understands_yaml_number_forms_from_real_configs() {
        assert_eq!(yaml_to_json("x: 1.0e-4\ny: .0001\nz: 10.0").unwrap(), json!({"x": 0.0001, "y": 0.0001, "z": 10.0}));
    }

    #[test]
    fn applies_merge_keys_and_stringifies_scalar_keys() {
        let tree = yaml_to_json("base: &b {x: 1}\nderived:\n  <<: *b\n  y: 2\ndata:\n  1: one\n").unwrap();
        assert_eq!(tree["derived"], json!({"x": 1, "y": 2}));
        assert_eq!(tree["data"], json!({"1": "one"}));
    }

    #[test]
    fn malformed_yaml_is_an_error_not_a_panic() {
        for text in ["a: [1, 2", "a: b: c", "key: value\n  bad indent: x\n", "a: 1\na: 2\n", ":\n\t- x", "--- a\n--- b\n"] {
            let error = yaml_to_json(text).unwrap_err();
            assert!(error.to_string().starts_with("invalid YAML:"), "{text:?} gave {error}");
        }
    }

    #[test]
    fn non_finite_numbers_and_complex_keys_are_errors() {
        assert!(yaml_to_json("x: .nan").unwrap_err().to_string().contains("x: numbers must be finite"));
        assert!(yaml_to_json("? [a, b]\n: 1\n").is_err());
    }
}
