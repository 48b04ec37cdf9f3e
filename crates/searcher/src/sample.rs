//! Drawing hyperparameters from a space, and PBT's "explore" step that moves a sample to a nearby
//! one.

use serde_json::{Map, Value};

use crate::rng::SearchRng;
use crate::space::{HyperparameterSpace, Hyperparameters};

/// One full sample: a JSON object with one entry per hyperparameter (nested groups as objects).
pub(crate) fn sample_all(space: &Hyperparameters, rng: &mut SearchRng) -> Value {
    Value::Object(space.iter().map(|(name, hp)| (name.clone(), sample_one(hp, rng))).collect())
}

pub(crate) fn sample_one(hp: &HyperparameterSpace, rng: &mut SearchRng) -> Value {
    match hp {
        HyperparameterSpace::Const(v) => v.clone(),
        HyperparameterSpace::Int { min, max, .. } => Value::from(rng.int_inclusive(*min, *max)),
        HyperparameterSpace::Double { min, max, .. } => float(rng.uniform(*min, *max)),
        HyperparameterSpace::Log { min, max, base, .. } => float(base.powf(rng.uniform(*min, *max))),
        HyperparameterSpace::Categorical(vals) => vals[rng.index(vals.len())].clone(),
        HyperparameterSpace::Nested(inner) => sample_all(inner, rng),
    }
}

/// Validation keeps every bound finite, so this never yields `null`.
pub(crate) fn float(x: f64) -> Value {
    serde_json::Number::from_f64(x).map(Value::Number).unwrap_or(Value::Null)
}

/// How PBT perturbs a copied configuration.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Explore {
    pub resample_probability: f64,
    pub perturb_factor: f64,
}

/// PBT's explore step: each hyperparameter is either resampled from its prior (with probability
/// `resample_probability`) or multiplied by `1 ± perturb_factor` (fair coin) and clamped to its
/// bounds. Categorical and const values are only ever resampled.
pub(crate) fn explore(space: &Hyperparameters, old: &Value, how: Explore, rng: &mut SearchRng) -> Value {
    let empty = Map::new();
    let old = old.as_object().unwrap_or(&empty);
    let mut out = Map::new();
    for (name, hp) in space {
        let value = match (hp, old.get(name)) {
            (HyperparameterSpace::Nested(inner), Some(prev)) => explore(inner, prev, how, rng),
            (_, Some(prev)) if rng.unit() >= how.resample_probability => perturb(hp, prev, how.perturb_factor, rng),
            // Resampled, or the parent lacks the value (a space that changed under a snapshot).
            _ => sample_one(hp, rng),
        };
        out.insert(name.clone(), value);
    }
    Value::Object(out)
}

fn perturb(hp: &HyperparameterSpace, prev: &Value, factor: f64, rng: &mut SearchRng) -> Value {
    let decrease = rng.unit() < 0.5;
    let multiplier = if decrease { 1.0 - factor } else { 1.0 + factor };
    match hp {
        HyperparameterSpace::Int { min, max, .. } => match prev.as_i64() {
            // Round away from the old value so a small factor still moves small integers.
            Some(v) => {
                let scaled = v as f64 * multiplier;
                let moved = if decrease { scaled.floor() } else { scaled.ceil() };
                Value::from((moved as i64).clamp(*min, *max))
            }
            None => sample_one(hp, rng),
        },
        HyperparameterSpace::Double { min, max, .. } => match prev.as_f64() {
            Some(v) => float((v * multiplier).clamp(*min, *max)),
            None => sample_one(hp, rng),
        },
        HyperparameterSpace::Log { min, max, base, .. } => match prev.as_f64() {
            // A base below 1 reverses the bounds.
            Some(v) => {
                let (a, b) = (base.powf(*min), base.powf(*max));
                float((v * multiplier).clamp(a.min(b), a.max(b)))
            }
            None => sample_one(hp, rng),
        },
        HyperparameterSpace::Const(_) | HyperparameterSpace::Categorical(_) | HyperparameterSpace::Nested(_) => prev.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space() -> Hyperparameters {
        let mut s = Hyperparameters::new();
        s.insert("c".into(), HyperparameterSpace::Const(Value::from("x")));
        s.insert("i".into(), HyperparameterSpace::Int { min: 2, max: 5, count: None });
        s.insert("d".into(), HyperparameterSpace::Double { min: -1.0, max: 1.0, count: None });
        s.insert("l".into(), HyperparameterSpace::Log { min: -4.0, max: -1.0, base: 10.0, count: None });
        s.insert("k".into(), HyperparameterSpace::Categorical(vec![Value::from(1), Value::from("two")]));
        let mut inner = Hyperparameters::new();
        inner.insert("m".into(), HyperparameterSpace::Int { min: 0, max: 0, count: None });
        s.insert("n".into(), HyperparameterSpace::Nested(inner));
        s
    }

    #[test]
    fn samples_stay_in_bounds() {
        let mut rng = SearchRng::new(1);
        for _ in 0..500 {
            let v = sample_all(&space(), &mut rng);
            assert_eq!(v["c"], "x");
            assert!((2..=5).contains(&v["i"].as_i64().unwrap()));
            assert!((-1.0..=1.0).contains(&v["d"].as_f64().unwrap()));
            assert!((1e-4..=1e-1).contains(&v["l"].as_f64().unwrap()));
            assert!(v["k"] == 1 || v["k"] == "two");
            assert_eq!(v["n"]["m"], 0);
        }
    }

    #[test]
    fn explore_without_resampling_perturbs_and_clamps() {
        let mut rng = SearchRng::new(3);
        let how = Explore { resample_probability: 0.0, perturb_factor: 0.5 };
        let old = serde_json::json!({"c": "x", "i": 4, "d": 0.8, "l": 0.01, "k": "two", "n": {"m": 0}});
        for _ in 0..200 {
            let v = explore(&space(), &old, how, &mut rng);
            let i = v["i"].as_i64().unwrap();
            assert!(i == 2 || i == 5, "4*0.5 floors to 2, 4*1.5 ceils to 6 and clamps to 5; got {i}");
            let d = v["d"].as_f64().unwrap();
            assert!(d == 0.4 || d == 1.0, "{d}");
            let l = v["l"].as_f64().unwrap();
            assert!((l - 0.005).abs() < 1e-12 || (l - 0.015).abs() < 1e-12, "{l}");
            assert_eq!(v["k"], "two");
        }
        let mut small_base = Hyperparameters::new();
        small_base.insert("l".into(), HyperparameterSpace::Log { min: 1.0, max: 3.0, base: 0.5, count: None });
        let v = explore(&small_base, &serde_json::json!({"l": 0.25}), how, &mut rng);
        assert!((0.125..=0.5).contains(&v["l"].as_f64().unwrap()));
    }
}
