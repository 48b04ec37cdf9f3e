//! What a search will do before it runs (`det preview-search`): trials per bracket and how many are
//! expected to reach each rung's length.

use std::fmt;

use serde::Serialize;

use crate::adaptive::{adaptive_brackets, async_halving_bracket};
use crate::asha::BracketParams;
use crate::config::{MethodConfig, SearcherConfig, TrainingLength};
use crate::error::ConfigError;
use crate::grid::Grid;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Plan {
    pub method: &'static str,
    /// The unit lengths are counted in (`batches`, a `time_metric`, or `units`).
    pub unit: String,
    pub brackets: Vec<BracketPlan>,
    /// Trials the search will create, not counting replacements for invalid hyperparameters.
    pub total_trials: usize,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BracketPlan {
    pub max_trials: usize,
    pub max_concurrent_trials: usize,
    /// Rungs (ASHA) or rounds (PBT), shortest first.
    pub rungs: Vec<RungPlan>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RungPlan {
    /// Training length at which the rung is reached (0 when the config gives no length).
    pub length: u64,
    /// Trials expected to train to at least this length.
    pub trials: usize,
}

fn single_rung(length: Option<&TrainingLength>, trials: usize, concurrent: usize) -> BracketPlan {
    BracketPlan {
        max_trials: trials,
        max_concurrent_trials: concurrent,
        rungs: vec![RungPlan { length: length.map_or(0, |l| l.units), trials }],
    }
}

/// ASHA keeps about `1/divisor` of a rung's trials for the next one, at least one.
fn asha_bracket(p: &BracketParams) -> BracketPlan {
    let rungs = p
        .rung_lengths
        .iter()
        .enumerate()
        .map(|(k, &length)| RungPlan { length, trials: ((p.max_trials as f64 / p.divisor.powi(k as i32)) as usize).max(1) })
        .collect();
    BracketPlan { max_trials: p.max_trials, max_concurrent_trials: p.initial_trials(), rungs }
}

/// The plan for a configuration, or why it cannot run.
pub fn preview(config: &SearcherConfig) -> Result<Plan, ConfigError> {
    config.validate()?;
    let unit_of = |l: Option<&TrainingLength>| l.map_or_else(|| "units".to_owned(), |l| l.unit_name().to_owned());
    let (unit, brackets) = match &config.method {
        MethodConfig::Single { length } => (unit_of(length.as_ref()), vec![single_rung(length.as_ref(), 1, 1)]),
        MethodConfig::Random(c) => {
            let concurrent = if c.max_concurrent_trials > 0 { c.max_concurrent_trials.min(c.max_trials) } else { c.max_trials };
            (unit_of(c.length.as_ref()), vec![single_rung(c.length.as_ref(), c.max_trials, concurrent)])
        }
        MethodConfig::Grid(c) => {
            let points = Grid::new(&config.hyperparameters)?.len() as usize;
            let concurrent = if c.max_concurrent_trials > 0 { c.max_concurrent_trials.min(points) } else { points };
            (unit_of(c.length.as_ref()), vec![single_rung(c.length.as_ref(), points, concurrent)])
        }
        MethodConfig::AdaptiveAsha(c) => (unit_of(Some(&c.length)), adaptive_brackets(c).iter().map(asha_bracket).collect()),
        MethodConfig::AsyncHalving(c) => (unit_of(Some(&c.length)), vec![asha_bracket(&async_halving_bracket(c))]),
        MethodConfig::Pbt(c) => {
            let rungs = (1..=c.num_rounds as u64)
                .map(|round| RungPlan { length: round * c.length_per_round.units, trials: c.population_size })
                .collect();
            let replaced = ((c.truncate_fraction * c.population_size as f64) as usize).min(c.population_size / 2);
            let total = c.population_size + replaced * (c.num_rounds - 1);
            let bracket = BracketPlan { max_trials: total, max_concurrent_trials: c.population_size, rungs };
            (unit_of(Some(&c.length_per_round)), vec![bracket])
        }
    };
    let total_trials = brackets.iter().map(|b| b.max_trials).sum();
    Ok(Plan { method: config.method.name(), unit, brackets, total_trials })
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Using {} search: {} trials", self.method, self.total_trials)?;
        for (i, b) in self.brackets.iter().enumerate() {
            if self.brackets.len() > 1 {
                writeln!(f, "Bracket {i}: {} trials, {} at once", b.max_trials, b.max_concurrent_trials)?;
            }
            for rung in &b.rungs {
                writeln!(f, "  {:>8} trials train to {} {}", rung.trials, rung.length, self.unit)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AdaptiveAshaConfig;

    #[test]
    fn adaptive_preview_lists_brackets_and_rungs() {
        let config = SearcherConfig {
            method: MethodConfig::AdaptiveAsha(AdaptiveAshaConfig::new(1000, TrainingLength::max_time("batches", 256))),
            hyperparameters: Default::default(),
            smaller_is_better: true,
            experiment_seed: 0,
        };
        let plan = preview(&config).unwrap();
        assert_eq!(plan.brackets.len(), 3);
        assert_eq!(plan.total_trials, 1000);
        let first = &plan.brackets[0];
        assert_eq!(first.rungs.iter().map(|r| r.length).collect::<Vec<_>>(), vec![1, 4, 16, 64, 256]);
        assert_eq!(first.rungs.iter().map(|r| r.trials).collect::<Vec<_>>(), vec![707, 176, 44, 11, 2]);
        assert!(plan.to_string().contains("train to 256 batches"));
    }
}
