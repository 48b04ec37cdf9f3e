//! Searcher configuration, already parsed: the experiment-configuration crate builds these from the
//! `searcher:` section. Constructors carry upstream's defaults; `validate` rejects what cannot run.

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;
use crate::space::{self, Hyperparameters};

/// Upstream's default `max_concurrent_trials` for random, grid and ASHA.
pub const DEFAULT_MAX_CONCURRENT_TRIALS: usize = 16;
/// Upstream's default ASHA divisor (reduction factor).
pub const DEFAULT_DIVISOR: f64 = 4.0;
/// Upstream's default `max_rungs` for adaptive ASHA.
pub const DEFAULT_MAX_RUNGS: usize = 5;

/// Everything needed to build a searcher.
#[derive(Clone, Debug, PartialEq)]
pub struct SearcherConfig {
    pub method: MethodConfig,
    pub hyperparameters: Hyperparameters,
    /// The searcher metric's direction; validations report the raw metric.
    pub smaller_is_better: bool,
    /// `reproducibility.experiment_seed`: same seed and same events give the same trials.
    pub experiment_seed: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub enum MethodConfig {
    /// One trial (random search with `max_trials = 1`).
    Single {
        length: Option<TrainingLength>,
    },
    Random(RandomConfig),
    Grid(GridConfig),
    AdaptiveAsha(AdaptiveAshaConfig),
    AsyncHalving(AsyncHalvingConfig),
    Pbt(PbtConfig),
}

impl MethodConfig {
    /// The upstream `searcher.name`.
    pub fn name(&self) -> &'static str {
        match self {
            MethodConfig::Single { .. } => "single",
            MethodConfig::Random(_) => "random",
            MethodConfig::Grid(_) => "grid",
            MethodConfig::AdaptiveAsha(_) => "adaptive_asha",
            MethodConfig::AsyncHalving(_) => "async_halving",
            MethodConfig::Pbt(_) => "pbt",
        }
    }
}

/// The unit training lengths are counted in. 0.38 configs name a reported metric (`time_metric`,
/// e.g. `batches`); legacy `max_length` uses records/batches/epochs or a bare number.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LengthUnit {
    Records,
    Batches,
    Epochs,
    Unitless,
    Metric(String),
}

/// A training length in the searcher's unit. The searcher only compares numbers; the unit is for
/// display and for the caller's conversion of reported progress.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrainingLength {
    pub unit: LengthUnit,
    pub units: u64,
}

impl TrainingLength {
    /// Legacy `max_length: {batches: N}` (or records/epochs/unitless).
    pub fn max_length(unit: LengthUnit, units: u64) -> Self {
        TrainingLength { unit, units }
    }

    /// 0.38's `max_time` counted in the reported metric `time_metric`.
    pub fn max_time(time_metric: impl Into<String>, max_time: u64) -> Self {
        TrainingLength { unit: LengthUnit::Metric(time_metric.into()), units: max_time }
    }

    pub fn unit_name(&self) -> &str {
        match &self.unit {
            LengthUnit::Records => "records",
            LengthUnit::Batches => "batches",
            LengthUnit::Epochs => "epochs",
            LengthUnit::Unitless => "units",
            LengthUnit::Metric(name) => name,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct RandomConfig {
    pub max_trials: usize,
    /// 0 means no cap beyond `max_trials`.
    pub max_concurrent_trials: usize,
    pub length: Option<TrainingLength>,
}

impl RandomConfig {
    pub fn new(max_trials: usize) -> Self {
        RandomConfig { max_trials, max_concurrent_trials: DEFAULT_MAX_CONCURRENT_TRIALS, length: None }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct GridConfig {
    /// 0 means every grid point at once.
    pub max_concurrent_trials: usize,
    pub length: Option<TrainingLength>,
}

impl Default for GridConfig {
    fn default() -> Self {
        GridConfig { max_concurrent_trials: DEFAULT_MAX_CONCURRENT_TRIALS, length: None }
    }
}

/// Which ASHA decision rule a bracket uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AshaVariant {
    /// 0.38 (`asha_stopping.go`): trials keep training and are stopped when they rank outside the
    /// top `max(floor(n/divisor), 1)` of a rung they reach.
    #[default]
    Stopping,
    /// Pre-0.38 (`asha.go`): trials pause at each rung and continue only when promoted into the
    /// top `floor((n+1)/divisor)`; a paused trial promoted later resumes from its checkpoint.
    Promotion,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdaptiveMode {
    Aggressive,
    #[default]
    Standard,
    Conservative,
}

#[derive(Clone, Debug, PartialEq)]
pub struct AdaptiveAshaConfig {
    pub max_trials: usize,
    /// `max_time` (or legacy `max_length`): the length of the top rung.
    pub length: TrainingLength,
    pub mode: AdaptiveMode,
    pub divisor: f64,
    pub max_rungs: usize,
    /// Explicit rung counts per bracket; overrides `mode` and `max_rungs` when non-empty.
    pub bracket_rungs: Vec<usize>,
    /// 0 means "derive from the bracket sizes", as upstream.
    pub max_concurrent_trials: usize,
    pub variant: AshaVariant,
}

impl AdaptiveAshaConfig {
    pub fn new(max_trials: usize, length: TrainingLength) -> Self {
        AdaptiveAshaConfig {
            max_trials,
            length,
            mode: AdaptiveMode::Standard,
            divisor: DEFAULT_DIVISOR,
            max_rungs: DEFAULT_MAX_RUNGS,
            bracket_rungs: Vec::new(),
            max_concurrent_trials: DEFAULT_MAX_CONCURRENT_TRIALS,
            variant: AshaVariant::Stopping,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct AsyncHalvingConfig {
    pub num_rungs: usize,
    pub max_trials: usize,
    pub length: TrainingLength,
    pub divisor: f64,
    /// 0 means `clamp(divisor^(num_rungs-1), 1, max_trials)`, enough for one trial to reach the top.
    pub max_concurrent_trials: usize,
    pub variant: AshaVariant,
}

impl AsyncHalvingConfig {
    pub fn new(num_rungs: usize, max_trials: usize, length: TrainingLength) -> Self {
        AsyncHalvingConfig {
            num_rungs,
            max_trials,
            length,
            divisor: DEFAULT_DIVISOR,
            max_concurrent_trials: DEFAULT_MAX_CONCURRENT_TRIALS,
            variant: AshaVariant::Stopping,
        }
    }
}

/// Population-based training (upstream removed it in 0.18; this follows its last design).
#[derive(Clone, Debug, PartialEq)]
pub struct PbtConfig {
    pub population_size: usize,
    pub num_rounds: usize,
    pub length_per_round: TrainingLength,
    /// `replace_function.truncate_fraction`: the bottom fraction replaced each round (0..=0.5).
    pub truncate_fraction: f64,
    /// `explore_function.resample_probability`.
    pub resample_probability: f64,
    /// `explore_function.perturb_factor`.
    pub perturb_factor: f64,
}

/// The most trials one search may create (`max_trials`, a PBT population, grid points): with
/// `max_concurrent_trials: 0` they are all created at once, so this bounds one step's work.
pub const MAX_TRIALS: usize = 100_000;

/// A trial count between 1 and [`MAX_TRIALS`].
fn trial_count(field: &str, value: usize) -> Result<(), ConfigError> {
    at_least_one(field, value)?;
    if value > MAX_TRIALS {
        return Err(ConfigError::new(format!("searcher.{field}"), format!("{value} trials; the limit is {MAX_TRIALS}")));
    }
    Ok(())
}

fn at_least_one(field: &str, value: usize) -> Result<(), ConfigError> {
    if value == 0 { Err(ConfigError::new(format!("searcher.{field}"), "must be at least 1 (got 0)")) } else { Ok(()) }
}

fn length_at_least_one(field: &str, length: &TrainingLength) -> Result<(), ConfigError> {
    if length.units == 0 { Err(ConfigError::new(format!("searcher.{field}"), "training length must be at least 1")) } else { Ok(()) }
}

fn divisor_ok(divisor: f64) -> Result<(), ConfigError> {
    if divisor.is_finite() && divisor > 1.0 {
        Ok(())
    } else {
        Err(ConfigError::new("searcher.divisor", format!("must be a number greater than 1 (got {divisor})")))
    }
}

fn fraction(field: &str, value: f64, max: f64) -> Result<(), ConfigError> {
    if (0.0..=max).contains(&value) {
        Ok(())
    } else {
        Err(ConfigError::new(format!("searcher.{field}"), format!("must be between 0 and {max} (got {value})")))
    }
}

impl SearcherConfig {
    /// Rejects configurations that cannot be searched, naming the field to fix.
    pub fn validate(&self) -> Result<(), ConfigError> {
        space::validate(&self.hyperparameters, matches!(self.method, MethodConfig::Grid(_)))?;
        match &self.method {
            MethodConfig::Single { .. } | MethodConfig::Grid(_) => Ok(()),
            MethodConfig::Random(c) => trial_count("max_trials", c.max_trials),
            MethodConfig::AdaptiveAsha(c) => {
                trial_count("max_trials", c.max_trials)?;
                at_least_one("max_rungs", c.max_rungs)?;
                length_at_least_one("max_time", &c.length)?;
                divisor_ok(c.divisor)?;
                if c.bracket_rungs.contains(&0) {
                    return Err(ConfigError::new("searcher.bracket_rungs", "every bracket needs at least 1 rung"));
                }
                Ok(())
            }
            MethodConfig::AsyncHalving(c) => {
                trial_count("max_trials", c.max_trials)?;
                at_least_one("num_rungs", c.num_rungs)?;
                length_at_least_one("max_time", &c.length)?;
                divisor_ok(c.divisor)
            }
            MethodConfig::Pbt(c) => {
                trial_count("population_size", c.population_size)?;
                at_least_one("num_rounds", c.num_rounds)?;
                length_at_least_one("length_per_round", &c.length_per_round)?;
                fraction("replace_function.truncate_fraction", c.truncate_fraction, 0.5)?;
                fraction("explore_function.resample_probability", c.resample_probability, 1.0)?;
                fraction("explore_function.perturb_factor", c.perturb_factor, 1.0)
            }
        }
    }
}
