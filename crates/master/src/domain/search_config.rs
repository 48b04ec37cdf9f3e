//! From an experiment's validated configuration to what the searcher crate runs, and from a
//! validation report to the trial's progress in the searcher's unit.

use resolute_expconf::{ExperimentConfig, Hyperparameter, Hyperparameters, SearcherLength, SearcherMethod, Unit};
use resolute_searcher::{
    AdaptiveAshaConfig, AdaptiveMode, AshaVariant, AsyncHalvingConfig, GridConfig, HyperparameterSpace, LengthUnit, MethodConfig,
    PbtConfig, RandomConfig, SearcherConfig, TrainingLength,
};
use serde_json::{Map, Value};

/// The searcher configuration of an experiment.
pub fn searcher_config(config: &ExperimentConfig) -> SearcherConfig {
    let s = &config.searcher;
    let legacy_length = s.max_length.map(training_length);
    let asha_length = |time_metric: &Option<String>, max_time: Option<u64>| match (time_metric, max_time) {
        (Some(metric), Some(max_time)) => TrainingLength::max_time(metric.clone(), max_time),
        _ => legacy_length.clone().unwrap_or_else(|| TrainingLength::max_length(LengthUnit::Batches, 1)),
    };
    let method = match &s.method {
        SearcherMethod::Single => MethodConfig::Single { length: legacy_length.clone() },
        SearcherMethod::Random { max_trials, max_concurrent_trials } => MethodConfig::Random(RandomConfig {
            max_trials: to_usize(*max_trials),
            max_concurrent_trials: to_usize(*max_concurrent_trials),
            length: legacy_length.clone(),
        }),
        SearcherMethod::Grid { max_concurrent_trials } => {
            MethodConfig::Grid(GridConfig { max_concurrent_trials: to_usize(*max_concurrent_trials), length: legacy_length.clone() })
        }
        SearcherMethod::AdaptiveAsha(a) => MethodConfig::AdaptiveAsha(AdaptiveAshaConfig {
            max_trials: to_usize(a.max_trials),
            length: asha_length(&a.time_metric, a.max_time),
            mode: match a.mode {
                resolute_expconf::AshaMode::Aggressive => AdaptiveMode::Aggressive,
                resolute_expconf::AshaMode::Standard => AdaptiveMode::Standard,
                resolute_expconf::AshaMode::Conservative => AdaptiveMode::Conservative,
            },
            divisor: a.divisor,
            max_rungs: to_usize(a.max_rungs),
            bracket_rungs: a.bracket_rungs.iter().map(|r| to_usize(*r)).collect(),
            max_concurrent_trials: to_usize(a.max_concurrent_trials),
            variant: AshaVariant::Stopping,
        }),
        SearcherMethod::AsyncHalving(a) => MethodConfig::AsyncHalving(AsyncHalvingConfig {
            num_rungs: to_usize(a.num_rungs),
            max_trials: to_usize(a.max_trials),
            length: asha_length(&a.time_metric, a.max_time),
            divisor: a.divisor,
            max_concurrent_trials: to_usize(a.max_concurrent_trials),
            variant: AshaVariant::Stopping,
        }),
        SearcherMethod::Pbt(p) => MethodConfig::Pbt(PbtConfig {
            population_size: to_usize(p.population_size),
            num_rounds: to_usize(p.num_rounds),
            length_per_round: training_length(SearcherLength::Length(p.length_per_round)),
            truncate_fraction: p.replace_function.truncate_fraction,
            resample_probability: p.explore_function.resample_probability,
            perturb_factor: p.explore_function.perturb_factor,
        }),
    };
    SearcherConfig {
        method,
        hyperparameters: spaces(&config.hyperparameters),
        smaller_is_better: s.smaller_is_better,
        experiment_seed: config.reproducibility.experiment_seed,
    }
}

/// The unit the searcher counts training progress in, if it counts at all.
pub fn length_unit(config: &SearcherConfig) -> Option<LengthUnit> {
    let length = match &config.method {
        MethodConfig::Single { length } => length.clone()?,
        MethodConfig::Random(c) => c.length.clone()?,
        MethodConfig::Grid(c) => c.length.clone()?,
        MethodConfig::AdaptiveAsha(c) => c.length.clone(),
        MethodConfig::AsyncHalving(c) => c.length.clone(),
        MethodConfig::Pbt(c) => c.length_per_round.clone(),
    };
    Some(length.unit)
}

/// The length a trial trains when the searcher never cuts it short; `None` for PBT (every stop
/// ends a round early) and for searches that set no length.
pub fn full_length(config: &SearcherConfig) -> Option<u64> {
    match &config.method {
        MethodConfig::Single { length } => length.as_ref().map(|l| l.units),
        MethodConfig::Random(c) => c.length.as_ref().map(|l| l.units),
        MethodConfig::Grid(c) => c.length.as_ref().map(|l| l.units),
        MethodConfig::AdaptiveAsha(c) => Some(c.length.units),
        MethodConfig::AsyncHalving(c) => Some(c.length.units),
        MethodConfig::Pbt(_) => None,
    }
}

/// A validation's training progress in the searcher's unit: the reported time metric when the
/// report has it (0.38's `time_metric`, or the harness's `batches`/`epochs`/`records` keys for a
/// legacy `max_length`), else the steps (batches) completed.
pub fn time_progress(unit: Option<&LengthUnit>, metrics: &Map<String, Value>, steps_completed: i64) -> u64 {
    let key = match unit {
        Some(LengthUnit::Metric(name)) => Some(name.as_str()),
        Some(LengthUnit::Batches) => Some("batches"),
        Some(LengthUnit::Epochs) => Some("epochs"),
        Some(LengthUnit::Records) => Some("records"),
        Some(LengthUnit::Unitless) | None => None,
    };
    let reported = key.and_then(|k| metrics.get(k)).and_then(Value::as_f64).filter(|v| v.is_finite() && *v >= 0.0);
    match reported {
        // Progress counts whole units; a fraction of an epoch has not reached the next one.
        Some(v) => v.floor() as u64,
        None => u64::try_from(steps_completed).unwrap_or(0),
    }
}

fn training_length(length: SearcherLength) -> TrainingLength {
    match length {
        SearcherLength::Length(l) => TrainingLength::max_length(
            match l.unit {
                Unit::Records => LengthUnit::Records,
                Unit::Batches => LengthUnit::Batches,
                Unit::Epochs => LengthUnit::Epochs,
            },
            l.units,
        ),
        SearcherLength::Units(n) => TrainingLength::max_length(LengthUnit::Unitless, n),
    }
}

fn spaces(hps: &Hyperparameters) -> resolute_searcher::Hyperparameters {
    hps.0.iter().map(|(name, hp)| (name.clone(), space(hp))).collect()
}

fn space(hp: &Hyperparameter) -> HyperparameterSpace {
    let count = |c: &Option<u64>| c.map(to_usize);
    match hp {
        Hyperparameter::Const { val } => HyperparameterSpace::Const(val.clone()),
        Hyperparameter::Int { minval, maxval, count: c } => HyperparameterSpace::Int { min: *minval, max: *maxval, count: count(c) },
        Hyperparameter::Double { minval, maxval, count: c } => HyperparameterSpace::Double { min: *minval, max: *maxval, count: count(c) },
        Hyperparameter::Log { minval, maxval, base, count: c } => {
            HyperparameterSpace::Log { min: *minval, max: *maxval, base: *base, count: count(c) }
        }
        Hyperparameter::Categorical { vals } => HyperparameterSpace::Categorical(vals.clone()),
        Hyperparameter::Nested(group) => HyperparameterSpace::Nested(spaces(group)),
    }
}

fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use resolute_expconf::{Defaults, parse_experiment_config};
    use serde_json::json;

    use super::*;

    fn parse(yaml: &str) -> ExperimentConfig {
        let yaml = format!("{yaml}checkpoint_storage: {{type: shared_fs, host_path: /tmp}}\n");
        parse_experiment_config(&yaml, &Defaults::new(7)).map(|p| p.config).unwrap()
    }

    #[test]
    fn single_with_legacy_length() {
        let c = parse(
            "entrypoint: python3 train.py\nsearcher: {name: single, metric: loss, max_length: {batches: 100}}\nhyperparameters: {lr: 0.1}\n",
        );
        let s = searcher_config(&c);
        assert_eq!(s.method, MethodConfig::Single { length: Some(TrainingLength::max_length(LengthUnit::Batches, 100)) });
        assert_eq!(s.hyperparameters.get("lr"), Some(&HyperparameterSpace::Const(json!(0.1))));
        assert!(resolute_searcher::Searcher::new(s).is_ok());
    }

    #[test]
    fn asha_with_time_metric() {
        let c = parse(
            "entrypoint: python3 train.py\nsearcher: {name: adaptive_asha, metric: acc, smaller_is_better: false, max_trials: 8, time_metric: batches, max_time: 64}\nhyperparameters: {lr: {type: log, minval: -3, maxval: -1, base: 10}}\n",
        );
        let s = searcher_config(&c);
        let MethodConfig::AdaptiveAsha(a) = &s.method else { panic!("{:?}", s.method) };
        assert_eq!(a.length, TrainingLength::max_time("batches", 64));
        assert_eq!(a.max_trials, 8);
        assert!(!s.smaller_is_better);
        assert_eq!(s.experiment_seed, c.reproducibility.experiment_seed);
        assert_eq!(full_length(&s), Some(64));
    }

    #[test]
    fn progress_prefers_the_reported_time_metric() {
        let m: Map<String, Value> = serde_json::from_value(json!({"batches": 40, "epochs": 1.5, "loss": 0.3})).unwrap();
        assert_eq!(time_progress(Some(&LengthUnit::Metric("batches".into())), &m, 99), 40);
        assert_eq!(time_progress(Some(&LengthUnit::Epochs), &m, 99), 1);
        assert_eq!(time_progress(Some(&LengthUnit::Records), &m, 99), 99);
        assert_eq!(time_progress(None, &m, 12), 12);
    }
}
