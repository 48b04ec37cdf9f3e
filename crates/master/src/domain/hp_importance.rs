//! Hyperparameter importance (a pure function; upstream's master computed it until 0.26 and its
//! web UI drew it as bars): how much of a metric's variance across an experiment's trials each
//! hyperparameter explains on its own.
//!
//! Method: a first-order variance decomposition (fANOVA's main effects, estimated by binning).
//! For each hyperparameter the trials are grouped — a categorical (any non-numeric value) by its
//! value, a numeric one into up to [`MAX_BINS`] bins of equal trial count *by rank*, so a
//! log-uniform hyperparameter is split exactly as a linear one would be — and the importance is
//! the bias-corrected share of variance between the groups, ω² =
//! (SS_between − (k−1)·MS_within) / (SS_total + MS_within), clipped to [0, 1]. A hyperparameter
//! that does not matter scores about 0 even with few trials (plain η² would score (k−1)/(n−1)),
//! one that decides the metric scores near 1. Deterministic: no sampling, ties kept in one bin.

use std::collections::BTreeMap;

use serde_json::Value;

/// At most this many bins for a numeric hyperparameter (fewer with few trials: about √n).
pub const MAX_BINS: usize = 10;
/// Fewer trials with the metric than this: no importance (too little to tell).
pub const MIN_TRIALS: usize = 3;

/// One hyperparameter's value in one trial.
#[derive(Clone, Debug, PartialEq)]
pub enum HpValue {
    Number(f64),
    /// A categorical (string, boolean, null, list) value, by its JSON text.
    Category(String),
}

/// A trial's flattened hyperparameters and its value of the metric.
#[derive(Clone, Debug, PartialEq)]
pub struct Observation {
    pub hparams: BTreeMap<String, HpValue>,
    pub metric: f64,
}

/// A trial's `hparams` flattened as upstream names nested ones (`optimizer.lr`).
pub fn flatten_hparams(hparams: &Value) -> BTreeMap<String, HpValue> {
    let mut out = BTreeMap::new();
    flatten_into(&mut out, "", hparams);
    out
}

fn flatten_into(out: &mut BTreeMap<String, HpValue>, prefix: &str, v: &Value) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                flatten_into(out, &key, v);
            }
        }
        // A bare value is not a named hyperparameter.
        _ if prefix.is_empty() => {}
        Value::Number(n) => {
            if let Some(x) = n.as_f64().filter(|x| x.is_finite()) {
                out.insert(prefix.to_owned(), HpValue::Number(x));
            }
        }
        other => {
            out.insert(prefix.to_owned(), HpValue::Category(other.to_string()));
        }
    }
}

/// Every hyperparameter any observation has, with its importance in [0, 1]. Observations whose
/// metric is not finite are left out; a hyperparameter with one value everywhere scores 0.
/// Empty when fewer than [`MIN_TRIALS`] observations have a finite metric.
pub fn importance(observations: &[Observation]) -> BTreeMap<String, f64> {
    let usable: Vec<&Observation> = observations.iter().filter(|o| o.metric.is_finite()).collect();
    if usable.len() < MIN_TRIALS {
        return BTreeMap::new();
    }
    let names: std::collections::BTreeSet<&String> = usable.iter().flat_map(|o| o.hparams.keys()).collect();
    names
        .into_iter()
        .map(|name| {
            let pairs: Vec<(&HpValue, f64)> = usable.iter().filter_map(|o| o.hparams.get(name).map(|v| (v, o.metric))).collect();
            (name.clone(), omega_squared(&groups(&pairs)))
        })
        .collect()
}

/// The metric values grouped by the hyperparameter's value (categorical) or rank bin (numeric).
fn groups(pairs: &[(&HpValue, f64)]) -> Vec<Vec<f64>> {
    let numeric: Option<Vec<(f64, f64)>> =
        pairs.iter().map(|(v, y)| if let HpValue::Number(x) = v { Some((*x, *y)) } else { None }).collect();
    match numeric {
        Some(mut xs) => {
            xs.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
            rank_bins(&xs)
        }
        None => {
            let mut by_value: BTreeMap<String, Vec<f64>> = BTreeMap::new();
            for (v, y) in pairs {
                let key = match v {
                    HpValue::Number(x) => x.to_string(),
                    HpValue::Category(s) => s.clone(),
                };
                by_value.entry(key).or_default().push(*y);
            }
            by_value.into_values().collect()
        }
    }
}

/// Sorted (x, y) pairs cut into about √n bins of equal size; equal x values never straddle a cut.
fn rank_bins(sorted: &[(f64, f64)]) -> Vec<Vec<f64>> {
    let n = sorted.len();
    let distinct = sorted.windows(2).filter(|w| w[0].0 != w[1].0).count() + 1;
    let bins = ((n as f64).sqrt().round() as usize).clamp(2, MAX_BINS).min(distinct);
    let mut out: Vec<Vec<f64>> = Vec::with_capacity(bins);
    let mut current: Vec<f64> = Vec::new();
    for (i, &(x, y)) in sorted.iter().enumerate() {
        current.push(y);
        let boundary = ((out.len() + 1) * n).div_ceil(bins);
        let next_differs = sorted.get(i + 1).is_some_and(|next| next.0 != x);
        if i + 1 >= boundary && next_differs {
            out.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// ω² of a one-way split; 0 when there is one group, no spread, or no degrees of freedom left.
fn omega_squared(groups: &[Vec<f64>]) -> f64 {
    let k = groups.iter().filter(|g| !g.is_empty()).count();
    let n: usize = groups.iter().map(Vec::len).sum();
    if k < 2 || n <= k {
        return 0.0;
    }
    let mean = groups.iter().flatten().sum::<f64>() / n as f64;
    let ss_total: f64 = groups.iter().flatten().map(|y| (y - mean).powi(2)).sum();
    if ss_total <= f64::EPSILON * mean.abs().max(1.0) {
        return 0.0;
    }
    let ss_between: f64 = groups
        .iter()
        .filter(|g| !g.is_empty())
        .map(|g| {
            let m = g.iter().sum::<f64>() / g.len() as f64;
            g.len() as f64 * (m - mean).powi(2)
        })
        .sum();
    let ms_within = (ss_total - ss_between).max(0.0) / (n - k) as f64;
    let w = (ss_between - (k - 1) as f64 * ms_within) / (ss_total + ms_within);
    if w.is_finite() { w.clamp(0.0, 1.0) } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A deterministic pseudo-random sequence in [0, 1) (no test depends on a seed's luck).
    fn lcg(seed: &mut u64) -> f64 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (*seed >> 11) as f64 / (1u64 << 53) as f64
    }

    fn obs(hparams: &[(&str, HpValue)], metric: f64) -> Observation {
        Observation { hparams: hparams.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect(), metric }
    }

    #[test]
    fn the_hyperparameter_that_decides_the_metric_scores_high_and_the_noise_one_low() {
        let mut seed = 7;
        let trials: Vec<Observation> = (0..60)
            .map(|_| {
                // lr log-uniform over 1e-5..1e-1; the metric depends on log10(lr) only.
                let lr = 10f64.powf(-5.0 + 4.0 * lcg(&mut seed));
                let noise_hp = lcg(&mut seed);
                let metric = (lr.log10() + 3.0).powi(2) + 0.05 * lcg(&mut seed);
                obs(&[("lr", HpValue::Number(lr)), ("dropout", HpValue::Number(noise_hp))], metric)
            })
            .collect();
        let imp = importance(&trials);
        assert!(imp["lr"] > 0.8, "{imp:?}");
        assert!(imp["dropout"] < 0.1, "{imp:?}");
    }

    #[test]
    fn a_categorical_hyperparameter_is_grouped_by_value() {
        let mut seed = 3;
        let trials: Vec<Observation> = (0..40)
            .map(|i| {
                let opt = ["adam", "sgd"][i % 2];
                let metric = if opt == "adam" { 0.2 } else { 0.8 } + 0.05 * lcg(&mut seed);
                let batch = HpValue::Number([16.0, 32.0, 64.0][i % 3]);
                obs(&[("optimizer", HpValue::Category(format!("\"{opt}\""))), ("batch", batch)], metric)
            })
            .collect();
        let imp = importance(&trials);
        assert!(imp["optimizer"] > 0.9, "{imp:?}");
        assert!(imp["batch"] < 0.1, "{imp:?}");
    }

    #[test]
    fn a_constant_hyperparameter_and_too_few_trials_score_nothing() {
        let trials = [obs(&[("a", HpValue::Number(1.0))], 0.1), obs(&[("a", HpValue::Number(1.0))], 0.9)];
        assert!(importance(&trials).is_empty(), "two trials are too few");
        let more: Vec<_> = (0..5).map(|i| obs(&[("a", HpValue::Number(1.0))], f64::from(i))).collect();
        assert_eq!(importance(&more)["a"], 0.0);
        let nan: Vec<_> = (0..5).map(|i| obs(&[("a", HpValue::Number(f64::from(i)))], f64::NAN)).collect();
        assert!(importance(&nan).is_empty(), "no finite metric");
    }

    #[test]
    fn importance_is_deterministic_and_scale_free() {
        let mut seed = 11;
        let base: Vec<(f64, f64)> = (0..30).map(|_| (lcg(&mut seed), lcg(&mut seed))).collect();
        let linear: Vec<_> = base.iter().map(|(x, y)| obs(&[("x", HpValue::Number(*x))], x + 0.3 * y)).collect();
        let logged: Vec<_> = base.iter().map(|(x, y)| obs(&[("x", HpValue::Number(10f64.powf(*x * 6.0)))], x + 0.3 * y)).collect();
        assert_eq!(importance(&linear), importance(&linear));
        assert_eq!(importance(&linear)["x"], importance(&logged)["x"], "rank bins: a log scale changes nothing");
    }

    #[test]
    fn nested_hyperparameters_are_flattened_with_dots() {
        let flat = flatten_hparams(&json!({"optimizer": {"lr": 0.1, "name": "adam"}, "layers": 3, "use_bn": true}));
        assert_eq!(flat["optimizer.lr"], HpValue::Number(0.1));
        assert_eq!(flat["optimizer.name"], HpValue::Category("\"adam\"".into()));
        assert_eq!(flat["layers"], HpValue::Number(3.0));
        assert_eq!(flat["use_bn"], HpValue::Category("true".into()));
    }

    #[test]
    fn rank_bins_keep_ties_together_and_respect_the_bin_count() {
        let sorted: Vec<(f64, f64)> = (0..100).map(|i| (f64::from(i / 10), f64::from(i))).collect();
        let bins = rank_bins(&sorted);
        assert_eq!(bins.len(), 10);
        assert!(bins.iter().all(|b| b.len() == 10), "{bins:?}");
        let few: Vec<(f64, f64)> = [1.0, 1.0, 1.0, 2.0].iter().map(|x| (*x, 0.0)).collect();
        assert_eq!(rank_bins(&few).len(), 2);
    }
}
