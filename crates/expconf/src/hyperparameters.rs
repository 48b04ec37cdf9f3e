//! Hyperparameters: `const`, `int`, `double`, `log`, `categorical`, nested groups, and bare values
//! as shorthand for `const`. Also the size of a `grid` search over them.

use std::collections::BTreeMap;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value};

use crate::error::ConfigError;
use crate::number::whole_as_integer;
use crate::path::FieldPath;
use crate::read::{Ctx, Field, Fields};

const TYPES: &[&str] = &["const", "int", "double", "log", "categorical"];

/// The `hyperparameters` section: names (sorted, as upstream emits them) to definitions.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Hyperparameters(pub BTreeMap<String, Hyperparameter>);

/// One hyperparameter definition.
#[derive(Clone, Debug, PartialEq)]
pub enum Hyperparameter {
    Const {
        val: Value,
    },
    Int {
        minval: i64,
        maxval: i64,
        count: Option<u64>,
    },
    Double {
        minval: f64,
        maxval: f64,
        count: Option<u64>,
    },
    /// Values are `base^x` for `x` in `minval..=maxval`.
    Log {
        minval: f64,
        maxval: f64,
        base: f64,
        count: Option<u64>,
    },
    Categorical {
        vals: Vec<Value>,
    },
    /// A group of hyperparameters (a mapping without `type`).
    Nested(Hyperparameters),
}

#[derive(Serialize)]
struct Float(#[serde(serialize_with = "whole_as_integer")] f64);

impl Serialize for Hyperparameter {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if let Hyperparameter::Nested(group) = self {
            return group.serialize(serializer);
        }
        let mut map = serializer.serialize_map(None)?;
        match self {
            Hyperparameter::Const { val } => {
                map.serialize_entry("type", "const")?;
                map.serialize_entry("val", val)?;
            }
            Hyperparameter::Int { minval, maxval, count } => {
                map.serialize_entry("type", "int")?;
                map.serialize_entry("minval", minval)?;
                map.serialize_entry("maxval", maxval)?;
                map.serialize_entry("count", count)?;
            }
            Hyperparameter::Double { minval, maxval, count } => {
                map.serialize_entry("type", "double")?;
                map.serialize_entry("minval", &Float(*minval))?;
                map.serialize_entry("maxval", &Float(*maxval))?;
                map.serialize_entry("count", count)?;
            }
            Hyperparameter::Log { minval, maxval, base, count } => {
                map.serialize_entry("type", "log")?;
                map.serialize_entry("minval", &Float(*minval))?;
                map.serialize_entry("maxval", &Float(*maxval))?;
                map.serialize_entry("base", &Float(*base))?;
                map.serialize_entry("count", count)?;
            }
            Hyperparameter::Categorical { vals } => {
                map.serialize_entry("type", "categorical")?;
                map.serialize_entry("vals", vals)?;
            }
            Hyperparameter::Nested(_) => {}
        }
        map.end()
    }
}

impl Hyperparameters {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn get(&self, name: &str) -> Option<&Hyperparameter> {
        self.0.get(name)
    }

    /// How many trials a `grid` search creates: the product of each hyperparameter's axis size
    /// (const 1, categorical its values, int `min(count, maxval-minval+1)`, double/log `count`).
    /// Errors name every int/double/log hyperparameter without a `count`. Saturates at `u64::MAX`.
    pub fn grid_points(&self) -> Result<u64, Vec<ConfigError>> {
        let mut errors = Vec::new();
        let points = grid_product(self, &FieldPath::root().key("hyperparameters"), &mut errors);
        if errors.is_empty() { Ok(points) } else { Err(errors) }
    }
}

fn grid_product(group: &Hyperparameters, path: &FieldPath, errors: &mut Vec<ConfigError>) -> u64 {
    group.0.iter().fold(1u64, |product, (name, hp)| product.saturating_mul(grid_axis(hp, &path.key(name), errors)))
}

fn grid_axis(hp: &Hyperparameter, path: &FieldPath, errors: &mut Vec<ConfigError>) -> u64 {
    let mut need_count = |count: &Option<u64>| -> u64 {
        count.unwrap_or_else(|| {
            errors.push(missing_grid_count(path));
            1
        })
    };
    match hp {
        Hyperparameter::Const { .. } => 1,
        Hyperparameter::Categorical { vals } => vals.len() as u64,
        Hyperparameter::Int { minval, maxval, count } => {
            let count = need_count(count);
            let distinct = u64::try_from(i128::from(*maxval) - i128::from(*minval) + 1).unwrap_or(u64::MAX);
            count.min(distinct)
        }
        Hyperparameter::Double { count, .. } | Hyperparameter::Log { count, .. } => need_count(count),
        Hyperparameter::Nested(group) => grid_product(group, path, errors),
    }
}

fn missing_grid_count(path: &FieldPath) -> ConfigError {
    ConfigError::Missing {
        path: path.key("count").to_string(),
        hint: "the grid searcher needs a count for every int, double and log hyperparameter".to_string(),
    }
}

/// Reads the `hyperparameters` section; `grid` demands counts as the grid searcher does.
pub(crate) fn read_hyperparameters(ctx: &mut Ctx, field: Option<Field<'_>>, grid: bool) -> Hyperparameters {
    let Some(field) = field else { return Hyperparameters::default() };
    let Some(map) = field.mapping(ctx) else { return Hyperparameters::default() };
    read_group(ctx, map, &field.path, grid)
}

fn read_group(ctx: &mut Ctx, map: &Map<String, Value>, path: &FieldPath, grid: bool) -> Hyperparameters {
    let mut group = BTreeMap::new();
    for (name, value) in map {
        if let Some(hp) = read_hyperparameter(ctx, &Field::new(value, path.key(name)), grid) {
            group.insert(name.clone(), hp);
        }
    }
    Hyperparameters(group)
}

fn read_hyperparameter(ctx: &mut Ctx, field: &Field<'_>, grid: bool) -> Option<Hyperparameter> {
    match field.value {
        Value::Object(map) if map.contains_key("type") => read_typed(ctx, field, map, grid),
        Value::Object(map) => Some(Hyperparameter::Nested(read_group(ctx, map, &field.path, grid))),
        // A bare scalar or list is the value itself (const shorthand).
        other => Some(Hyperparameter::Const { val: other.clone() }),
    }
}

fn read_typed(ctx: &mut Ctx, field: &Field<'_>, map: &Map<String, Value>, grid: bool) -> Option<Hyperparameter> {
    let mut fields = Fields::new(map, field.path.clone());
    let kind = fields.take("type").and_then(|f| f.choice(ctx, TYPES));
    let hp = match kind? {
        "const" => {
            fields.take("val");
            // `val: null` is a legitimate constant, so presence (not non-null) is what counts.
            match map.get("val") {
                Some(val) => Some(Hyperparameter::Const { val: val.clone() }),
                None => {
                    ctx.missing(&field.path.key("val"), "a const hyperparameter needs val");
                    None
                }
            }
        }
        "int" => {
            let minval = fields.require(ctx, "minval", "an int hyperparameter needs minval").and_then(|f| f.integer(ctx));
            let maxval = fields.require(ctx, "maxval", "an int hyperparameter needs maxval").and_then(|f| f.integer(ctx));
            let count = read_count(ctx, &mut fields, grid);
            let (minval, maxval) = ordered(ctx, &field.path, minval, maxval)?;
            Some(Hyperparameter::Int { minval, maxval, count: count? })
        }
        "double" | "log" => {
            let minval = fields.require(ctx, "minval", "a range hyperparameter needs minval").and_then(|f| f.number(ctx));
            let maxval = fields.require(ctx, "maxval", "a range hyperparameter needs maxval").and_then(|f| f.number(ctx));
            let base = if kind == Some("log") { read_base(ctx, &mut fields) } else { Some(0.0) };
            let count = read_count(ctx, &mut fields, grid);
            let (minval, maxval) = ordered(ctx, &field.path, minval, maxval)?;
            match kind {
                Some("log") => Some(Hyperparameter::Log { minval, maxval, base: base?, count: count? }),
                _ => Some(Hyperparameter::Double { minval, maxval, count: count? }),
            }
        }
        _ => {
            let vals = fields.require(ctx, "vals", "a categorical hyperparameter needs vals").and_then(|f| f.list(ctx).map(|v| (f, v)));
            match vals {
                Some((f, vals)) if vals.is_empty() => {
                    ctx.invalid(&f.path, "an empty list", "a categorical hyperparameter needs at least one value");
                    None
                }
                Some((_, vals)) => Some(Hyperparameter::Categorical { vals: vals.clone() }),
                None => None,
            }
        }
    };
    fields.finish(ctx);
    hp
}

/// `count` (>= 1), which the grid searcher requires. Outer `None` means "invalid".
fn read_count(ctx: &mut Ctx, fields: &mut Fields<'_>, grid: bool) -> Option<Option<u64>> {
    match fields.take("count") {
        Some(f) => f.uint_at_least(ctx, 1).map(Some),
        None if grid => {
            ctx.error(missing_grid_count(fields.path()));
            None
        }
        None => Some(None),
    }
}

/// `base` of a log hyperparameter: a positive number, 10 when left out.
fn read_base(ctx: &mut Ctx, fields: &mut Fields<'_>) -> Option<f64> {
    let Some(f) = fields.take("base") else { return Some(10.0) };
    let base = f.number(ctx)?;
    if base <= 0.0 {
        ctx.out_of_range(&f.path, base, "a number > 0");
        return None;
    }
    Some(base)
}

/// Checks `minval < maxval`, reporting at `minval` so the path points at the first bound.
fn ordered<T: PartialOrd + ToString>(ctx: &mut Ctx, path: &FieldPath, minval: Option<T>, maxval: Option<T>) -> Option<(T, T)> {
    let (minval, maxval) = (minval?, maxval?);
    if minval >= maxval {
        ctx.invalid(&path.key("minval"), minval.to_string(), format!("minval must be less than maxval ({})", maxval.to_string()));
        return None;
    }
    Some((minval, maxval))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::read::Mode;

    fn read(value: Value, grid: bool) -> (Hyperparameters, Vec<String>) {
        let mut ctx = Ctx::new(Mode::Complete);
        let hps = read_hyperparameters(&mut ctx, Some(Field::new(&value, FieldPath::root().key("hyperparameters"))), grid);
        (hps, ctx.errors.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn reads_every_kind_and_shorthand() {
        let (hps, errors) = read(
            json!({
                "lr": {"type": "log", "minval": -5.0, "maxval": 1.0},
                "units": {"type": "int", "minval": 4, "maxval": 32, "count": 3},
                "dropout": {"type": "double", "minval": 0.2, "maxval": 0.8},
                "act": {"type": "categorical", "vals": ["relu", "tanh"]},
                "batch": 64,
                "layers": [1, 2],
                "opt": {"name": "adam", "beta": {"type": "const", "val": 0.9}}
            }),
            false,
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(hps.get("lr"), Some(&Hyperparameter::Log { minval: -5.0, maxval: 1.0, base: 10.0, count: None }));
        assert_eq!(hps.get("batch"), Some(&Hyperparameter::Const { val: json!(64) }));
        assert_eq!(hps.get("layers"), Some(&Hyperparameter::Const { val: json!([1, 2]) }));
        let Some(Hyperparameter::Nested(opt)) = hps.get("opt") else { panic!("opt is a group") };
        assert_eq!(opt.get("name"), Some(&Hyperparameter::Const { val: json!("adam") }));
    }

    #[test]
    fn serialises_to_upstream_shape() {
        let (hps, _) = read(json!({"batch": 64, "lr": {"type": "log", "minval": -4, "maxval": -1, "base": 10}}), false);
        assert_eq!(
            serde_json::to_value(&hps).unwrap(),
            json!({"batch": {"type": "const", "val": 64}, "lr": {"type": "log", "minval": -4, "maxval": -1, "base": 10, "count": null}})
        );
    }

    #[test]
    fn reports_every_problem_with_paths() {
        let (_, errors) = read(
            json!({
                "lr": {"type": "double", "minval": 1.0, "maxval": 0.1},
                "units": {"type": "int", "minval": "4", "maxval": 8},
                "act": {"type": "categorical", "vals": []},
                "mode": {"type": "choice", "vals": [1]},
                "k": {"type": "log", "minval": 1, "maxval": 2, "base": 0}
            }),
            false,
        );
        assert_eq!(
            errors,
            [
                "hyperparameters.act.vals: a categorical hyperparameter needs at least one value (found an empty list)",
                "hyperparameters.k.base: found 0, expected a number > 0",
                "hyperparameters.lr.minval: minval must be less than maxval (0.1) (found 1)",
                "hyperparameters.mode.type: found \"choice\", expected one of const, int, double, log, categorical",
                "hyperparameters.units.minval: expected an integer, found a string (\"4\")",
            ]
        );
    }

    #[test]
    fn grid_demands_counts_and_multiplies_axes() {
        let (_, errors) = read(json!({"lr": {"type": "double", "minval": 0.1, "maxval": 1.0}}), true);
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("hyperparameters.lr.count: required but missing"));

        let (hps, errors) = read(
            json!({
                "lr": {"type": "log", "minval": -4, "maxval": -1, "count": 4},
                "units": {"type": "int", "minval": 1, "maxval": 3, "count": 10},
                "act": {"type": "categorical", "vals": ["relu", "tanh"]},
                "opt": {"momentum": {"type": "double", "minval": 0, "maxval": 1, "count": 5}},
                "batch": 32
            }),
            true,
        );
        assert!(errors.is_empty(), "{errors:?}");
        // 4 (log) x 3 (int capped at its 3 distinct values) x 2 (categorical) x 5 (nested double) x 1 (const)
        assert_eq!(hps.grid_points(), Ok(120));
    }

    #[test]
    fn grid_points_names_hyperparameters_without_count() {
        let (hps, _) = read(json!({"opt": {"lr": {"type": "double", "minval": 0, "maxval": 1}}}), false);
        let errors = hps.grid_points().unwrap_err();
        assert_eq!(errors[0].path(), "hyperparameters.opt.lr.count");
    }
}
