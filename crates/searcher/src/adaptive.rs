//! Adaptive ASHA: several ASHA brackets with different numbers of rungs (more rungs = more
//! aggressive early stopping) run side by side as a "tournament"; each event goes to the bracket
//! that created the trial. `async_halving` is the one-bracket case.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::asha::{BracketParams, StoppingBracket};
use crate::asha_promotion::PromotionBracket;
use crate::config::{AdaptiveAshaConfig, AdaptiveMode, AshaVariant, AsyncHalvingConfig};
use crate::error::{SearcherError, SearcherResult};
use crate::method::{Context, SearchMethod, Trials, to_json};
use crate::ops::{ExitReason, Operation, RequestId};

/// Largest `k` with `divisor^k <= x`, counted exactly (a float logarithm can land just below an
/// exact power and lose a rung).
fn floor_log(x: u64, divisor: f64) -> usize {
    let mut k = 0;
    let mut power = divisor;
    while power <= x as f64 {
        k += 1;
        power *= divisor;
    }
    k
}

/// Rungs per bracket, most rungs first.
pub(crate) fn bracket_rungs(config: &AdaptiveAshaConfig) -> Vec<usize> {
    let mut brackets = if config.bracket_rungs.is_empty() {
        let max_rungs = config
            .max_rungs
            .min(floor_log(config.length.units, config.divisor) + 1)
            .min(floor_log(config.max_trials as u64, config.divisor) + 1);
        match config.mode {
            AdaptiveMode::Aggressive => vec![max_rungs],
            AdaptiveMode::Standard => ((max_rungs - 1) / 2 + 1..=max_rungs).collect(),
            AdaptiveMode::Conservative => (1..=max_rungs).collect(),
        }
    } else {
        config.bracket_rungs.clone()
    };
    // Brackets that stop more get the remainder of the trial budget and go first.
    brackets.sort_unstable_by(|a, b| b.cmp(a));
    brackets
}

/// Splits `max_trials` so each bracket gets roughly the same total training budget: a bracket of
/// `R` rungs spends about `R` full trainings per `divisor^(R-1)` configurations.
pub(crate) fn bracket_max_trials(max_trials: usize, divisor: f64, brackets: &[usize]) -> Vec<usize> {
    let weights: Vec<f64> = brackets.iter().map(|&r| divisor.powi(r as i32 - 1) / r as f64).collect();
    let total: f64 = weights.iter().sum();
    let mut trials: Vec<usize> = weights.iter().map(|w| ((w / total * max_trials as f64) as usize).max(1)).collect();
    let allocated: usize = trials.iter().sum();
    trials[0] += max_trials.saturating_sub(allocated);
    trials
}

/// Splits `max_concurrent_trials` evenly, the remainder to the first brackets; 0 gives every
/// bracket `max(last bracket's trials, divisor)`.
pub(crate) fn bracket_max_concurrent(max_concurrent: usize, divisor: f64, bracket_trials: &[usize]) -> Vec<usize> {
    let n = bracket_trials.len();
    if max_concurrent == 0 {
        let each = bracket_trials[n - 1].max(divisor as usize);
        return vec![each; n];
    }
    // At least one slot per bracket, or later brackets would get no cap at all.
    let max_concurrent = max_concurrent.max(n);
    (0..n).map(|i| max_concurrent / n + usize::from(i < max_concurrent % n)).collect()
}

/// The brackets an adaptive ASHA configuration expands to.
pub(crate) fn adaptive_brackets(config: &AdaptiveAshaConfig) -> Vec<BracketParams> {
    let rungs = bracket_rungs(config);
    let trials = bracket_max_trials(config.max_trials, config.divisor, &rungs);
    let concurrent = bracket_max_concurrent(config.max_concurrent_trials, config.divisor, &trials);
    rungs.iter().zip(trials).zip(concurrent).map(|((&r, t), c)| BracketParams::new(r, config.divisor, config.length.units, t, c)).collect()
}

pub(crate) fn async_halving_bracket(config: &AsyncHalvingConfig) -> BracketParams {
    BracketParams::new(config.num_rungs, config.divisor, config.length.units, config.max_trials, config.max_concurrent_trials)
}

pub(crate) struct Tournament {
    brackets: Vec<Box<dyn SearchMethod>>,
    state: TournamentState,
}

#[derive(Default, Serialize, Deserialize)]
struct TournamentState {
    trial_brackets: BTreeMap<RequestId, usize>,
}

#[derive(Deserialize)]
struct TournamentSnapshot {
    trial_brackets: BTreeMap<RequestId, usize>,
    brackets: Vec<Value>,
}

/// [`TournamentSnapshot`]'s layout, borrowed and with the brackets' states already written.
#[derive(Serialize)]
struct TournamentSnapshotRef<'a> {
    trial_brackets: &'a BTreeMap<RequestId, usize>,
    brackets: Vec<Box<serde_json::value::RawValue>>,
}

impl Tournament {
    pub(crate) fn new(brackets: Vec<BracketParams>, variant: AshaVariant) -> Self {
        let brackets = brackets
            .into_iter()
            .map(|p| -> Box<dyn SearchMethod> {
                match variant {
                    AshaVariant::Stopping => Box::new(StoppingBracket::new(p)),
                    AshaVariant::Promotion => Box::new(PromotionBracket::new(p)),
                }
            })
            .collect();
        Tournament { brackets, state: TournamentState::default() }
    }

    /// Runs `f` on bracket `i` with created trials tagged with that bracket.
    fn on_bracket(
        &mut self,
        ctx: &mut Context,
        i: usize,
        f: impl FnOnce(&mut dyn SearchMethod, &mut Context) -> Vec<Operation>,
    ) -> Vec<Operation> {
        ctx.bracket = Some(i);
        let ops = f(self.brackets[i].as_mut(), ctx);
        ctx.bracket = None;
        for op in &ops {
            if let Operation::Create { request_id, .. } = op {
                self.state.trial_brackets.insert(*request_id, i);
            }
        }
        ops
    }

    fn route(
        &mut self,
        ctx: &mut Context,
        id: RequestId,
        f: impl FnOnce(&mut dyn SearchMethod, &mut Context) -> Vec<Operation>,
    ) -> Vec<Operation> {
        match self.state.trial_brackets.get(&id) {
            Some(&i) => self.on_bracket(ctx, i, f),
            None => Vec::new(),
        }
    }
}

impl SearchMethod for Tournament {
    fn initial_operations(&mut self, ctx: &mut Context) -> Vec<Operation> {
        (0..self.brackets.len()).flat_map(|i| self.on_bracket(ctx, i, |b, ctx| b.initial_operations(ctx))).collect()
    }

    fn validation_completed(&mut self, ctx: &mut Context, id: RequestId, metric: f64, time_progress: u64) -> Vec<Operation> {
        self.route(ctx, id, |b, ctx| b.validation_completed(ctx, id, metric, time_progress))
    }

    fn trial_exited_early(&mut self, ctx: &mut Context, id: RequestId, reason: ExitReason) -> Vec<Operation> {
        self.route(ctx, id, |b, ctx| b.trial_exited_early(ctx, id, reason))
    }

    fn trial_closed(&mut self, ctx: &mut Context, id: RequestId) -> Vec<Operation> {
        self.route(ctx, id, |b, ctx| b.trial_closed(ctx, id))
    }

    fn progress(&self, trials: &Trials) -> f64 {
        self.brackets.iter().map(|b| b.progress(trials)).sum::<f64>() / self.brackets.len() as f64
    }

    fn rung(&self, id: RequestId) -> Option<usize> {
        self.state.trial_brackets.get(&id).and_then(|&i| self.brackets[i].rung(id))
    }

    fn rung_counts(&self) -> Vec<Vec<usize>> {
        self.brackets.iter().flat_map(|b| b.rung_counts()).collect()
    }

    fn snapshot(&self) -> Box<serde_json::value::RawValue> {
        to_json(&TournamentSnapshotRef {
            trial_brackets: &self.state.trial_brackets,
            brackets: self.brackets.iter().map(|b| b.snapshot()).collect(),
        })
    }

    fn restore(&mut self, state: &Value) -> SearcherResult<()> {
        let snapshot = TournamentSnapshot::deserialize(state)?;
        if snapshot.brackets.len() != self.brackets.len() {
            return Err(SearcherError::SnapshotMismatch(format!(
                "snapshot has {} brackets, the configuration gives {}",
                snapshot.brackets.len(),
                self.brackets.len()
            )));
        }
        for (bracket, state) in self.brackets.iter_mut().zip(&snapshot.brackets) {
            bracket.restore(state)?;
        }
        self.state.trial_brackets = snapshot.trial_brackets;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TrainingLength;

    #[test]
    fn brackets_follow_mode_and_limits() {
        let mut c = AdaptiveAshaConfig::new(1000, TrainingLength::max_time("batches", 1000));
        assert_eq!(bracket_rungs(&c), vec![5, 4, 3]);
        c.mode = AdaptiveMode::Conservative;
        assert_eq!(bracket_rungs(&c), vec![5, 4, 3, 2, 1]);
        c.mode = AdaptiveMode::Aggressive;
        assert_eq!(bracket_rungs(&c), vec![5]);
        // max_trials 16 with divisor 4 supports only 3 rungs (4^2 = 16).
        c.max_trials = 16;
        assert_eq!(bracket_rungs(&c), vec![3]);
        // max_time 256 = 4^4 exactly: 5 rungs, not 4.
        let c = AdaptiveAshaConfig::new(10_000, TrainingLength::max_time("batches", 256));
        assert_eq!(bracket_rungs(&c), vec![5, 4, 3]);
    }

    #[test]
    fn trial_split_matches_upstream_weights() {
        // weights 4^4/5 = 51.2, 4^3/4 = 16, 4^2/3 = 5.33 (total 72.53)
        let trials = bracket_max_trials(100, 4.0, &[5, 4, 3]);
        assert_eq!(trials, vec![71, 22, 7]);
        assert_eq!(bracket_max_trials(2, 4.0, &[5, 4, 3]), vec![1, 1, 1], "every bracket gets at least one trial");
    }

    #[test]
    fn concurrency_split_matches_upstream() {
        assert_eq!(bracket_max_concurrent(16, 4.0, &[71, 22, 7]), vec![6, 5, 5]);
        assert_eq!(bracket_max_concurrent(2, 4.0, &[71, 22, 7]), vec![1, 1, 1]);
        assert_eq!(bracket_max_concurrent(0, 4.0, &[71, 22, 7]), vec![7, 7, 7]);
        assert_eq!(bracket_max_concurrent(0, 4.0, &[71, 22, 2]), vec![4, 4, 4]);
    }
}
