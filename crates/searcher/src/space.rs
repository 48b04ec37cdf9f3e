//! The hyperparameter space a searcher draws from. The experiment-configuration crate converts the
//! user's `hyperparameters:` section into this; nothing here parses YAML.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ConfigError;

/// One hyperparameter, or a group of them. Bounds are inclusive; `count` is only needed by grid
/// search (number of grid points along that axis).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HyperparameterSpace {
    Const(Value),
    Int {
        min: i64,
        max: i64,
        count: Option<usize>,
    },
    Double {
        min: f64,
        max: f64,
        count: Option<usize>,
    },
    /// Values are `base^x` with `x` uniform in `[min, max]`.
    Log {
        min: f64,
        max: f64,
        base: f64,
        count: Option<usize>,
    },
    Categorical(Vec<Value>),
    Nested(BTreeMap<String, HyperparameterSpace>),
}

/// A whole `hyperparameters:` section: names to spaces, iterated in name order so sampling is
/// reproducible.
pub type Hyperparameters = BTreeMap<String, HyperparameterSpace>;

/// `hyperparameters.a.b`, the path a user would look for in their config.
pub(crate) fn field_path(path: &[&str]) -> String {
    let mut out = String::from("hyperparameters");
    for part in path {
        out.push('.');
        out.push_str(part);
    }
    out
}

/// Checks every bound; with `grid`, also that every numeric axis has a usable `count`.
pub(crate) fn validate(space: &Hyperparameters, grid: bool) -> Result<(), ConfigError> {
    fn walk<'a>(space: &'a Hyperparameters, path: &mut Vec<&'a str>, grid: bool) -> Result<(), ConfigError> {
        for (name, hp) in space {
            path.push(name);
            check_one(hp, path, grid)?;
            if let HyperparameterSpace::Nested(inner) = hp {
                walk(inner, path, grid)?;
            }
            path.pop();
        }
        Ok(())
    }
    walk(space, &mut Vec::new(), grid)
}

fn check_one(hp: &HyperparameterSpace, path: &[&str], grid: bool) -> Result<(), ConfigError> {
    let err = |reason: String| Err(ConfigError::new(field_path(path), reason));
    let count = match hp {
        HyperparameterSpace::Const(_) | HyperparameterSpace::Nested(_) => return Ok(()),
        HyperparameterSpace::Categorical(vals) => {
            return if vals.is_empty() { err("categorical hyperparameter needs at least one value in `vals`".into()) } else { Ok(()) };
        }
        HyperparameterSpace::Int { min, max, count } => {
            if min > max {
                return err(format!("minval ({min}) must not exceed maxval ({max})"));
            }
            count
        }
        HyperparameterSpace::Double { min, max, count } => {
            if !min.is_finite() || !max.is_finite() || min > max {
                return err(format!("minval ({min}) and maxval ({max}) must be finite with minval <= maxval"));
            }
            count
        }
        HyperparameterSpace::Log { min, max, base, count } => {
            if !min.is_finite() || !max.is_finite() || min > max {
                return err(format!("minval ({min}) and maxval ({max}) must be finite with minval <= maxval"));
            }
            if !base.is_finite() || *base <= 0.0 {
                return err(format!("base ({base}) must be a positive number"));
            }
            if !base.powf(*min).is_finite() || !base.powf(*max).is_finite() {
                return err(format!("{base}^{max} is too large to represent"));
            }
            count
        }
    };
    match count {
        Some(0) => err("count must be at least 1".into()),
        None if grid => err("grid search needs `count` on every int, double and log hyperparameter".into()),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_nested_field() {
        let mut inner = Hyperparameters::new();
        inner.insert("lr".into(), HyperparameterSpace::Double { min: 1.0, max: 0.0, count: None });
        let mut space = Hyperparameters::new();
        space.insert("optimizer".into(), HyperparameterSpace::Nested(inner));
        let err = validate(&space, false).unwrap_err();
        assert_eq!(err.field, "hyperparameters.optimizer.lr");
    }

    #[test]
    fn grid_requires_counts() {
        let mut space = Hyperparameters::new();
        space.insert("layers".into(), HyperparameterSpace::Int { min: 1, max: 4, count: None });
        assert!(validate(&space, false).is_ok());
        assert!(validate(&space, true).unwrap_err().reason.contains("count"));
    }
}
