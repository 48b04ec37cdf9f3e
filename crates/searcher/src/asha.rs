//! One ASHA bracket with 0.38's early-stopping rule (`asha_stopping.go`): trials train
//! uninterrupted; each validation that reaches a rung's length is ranked in that rung, and the
//! trial is stopped unless it ranks in the top `max(floor(n / divisor), 1)` of the `n` metrics
//! recorded there so far. Every stop frees a slot for a new trial until `max_trials` have run.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::SearcherResult;
use crate::method::{Context, SearchMethod, Trials, to_json};
use crate::ops::{ExitReason, Operation, RequestId};

/// The rank a trial that exited early takes in its rung: behind every real metric.
pub(crate) const EXITED_METRIC: f64 = f64::MAX;

/// The shape of one bracket, fixed by the configuration.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct BracketParams {
    pub divisor: f64,
    pub max_trials: usize,
    pub max_concurrent_trials: usize,
    /// Length each rung is reached at; the last entry is the full training length.
    pub rung_lengths: Vec<u64>,
}

impl BracketParams {
    pub(crate) fn new(num_rungs: usize, divisor: f64, max_length: u64, max_trials: usize, max_concurrent_trials: usize) -> Self {
        BracketParams { divisor, max_trials, max_concurrent_trials, rung_lengths: rung_lengths(num_rungs, divisor, max_length) }
    }

    pub(crate) fn num_rungs(&self) -> usize {
        self.rung_lengths.len()
    }

    /// Trials started at once. Without a configured cap, enough for one trial to reach the top.
    pub(crate) fn initial_trials(&self) -> usize {
        if self.max_concurrent_trials > 0 {
            self.max_concurrent_trials.min(self.max_trials)
        } else {
            let enough = self.divisor.powi(self.num_rungs() as i32 - 1);
            (enough.min(self.max_trials as f64) as usize).max(1)
        }
    }

    /// How many metrics in a rung of `n` continue: the top `1/divisor`, and at least the best one.
    pub(crate) fn num_continue(&self, n: usize) -> usize {
        ((n as f64 / self.divisor) as usize).max(1)
    }
}

/// `max(floor(max_length / divisor^(R-1-r)), 1)` for each rung `r` of `R`.
pub(crate) fn rung_lengths(num_rungs: usize, divisor: f64, max_length: u64) -> Vec<u64> {
    (0..num_rungs).map(|r| ((max_length as f64 / divisor.powi((num_rungs - 1 - r) as i32)) as u64).max(1)).collect()
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct RungEntry {
    pub id: RequestId,
    pub metric: f64,
}

/// Inserts keeping the rung sorted (best first) and returns the new entry's rank: the number of
/// strictly better metrics, so a tie ranks with the earlier entries.
/// A snapshot must come from a bracket with the same number of rungs as the configuration.
pub(crate) fn check_snapshot_rungs(found: usize, expected: usize) -> SearcherResult<()> {
    if found == expected {
        return Ok(());
    }
    Err(crate::SearcherError::SnapshotMismatch(format!("snapshot bracket has {found} rungs, the configuration gives {expected}")))
}

pub(crate) fn insert_ranked(rung: &mut Vec<RungEntry>, id: RequestId, metric: f64) -> usize {
    let rank = rung.partition_point(|e| e.metric < metric);
    rung.insert(rank, RungEntry { id, metric });
    rank
}

pub(crate) struct StoppingBracket {
    params: BracketParams,
    state: StoppingState,
}

#[derive(Default, Serialize, Deserialize)]
struct StoppingState {
    rungs: Vec<Vec<RungEntry>>,
    /// The rung each trial is at or training toward.
    trial_rungs: BTreeMap<RequestId, usize>,
    invalid: usize,
    closed: usize,
}

impl StoppingBracket {
    pub(crate) fn new(params: BracketParams) -> Self {
        let rungs = vec![Vec::new(); params.num_rungs()];
        StoppingBracket { params, state: StoppingState { rungs, ..StoppingState::default() } }
    }

    fn create(&mut self, ctx: &mut Context) -> Operation {
        let (id, op) = ctx.create_sampled();
        self.state.trial_rungs.insert(id, 0);
        op
    }

    fn budget_left(&self) -> bool {
        self.state.trial_rungs.len() - self.state.invalid < self.params.max_trials
    }

    /// Records a validation in every rung it qualifies for; true when the trial should stop.
    fn should_stop(&mut self, id: RequestId, metric: f64, time_progress: u64) -> bool {
        let Some(&start) = self.state.trial_rungs.get(&id) else { return false };
        let top = self.params.num_rungs() - 1;
        // One validation can cover several rungs: the searcher does not choose when trials validate.
        for r in start..=top {
            self.state.trial_rungs.insert(id, r);
            if time_progress < self.params.rung_lengths[r] {
                return false;
            }
            let rank = insert_ranked(&mut self.state.rungs[r], id, metric);
            if r == top || rank >= self.params.num_continue(self.state.rungs[r].len()) {
                return true;
            }
        }
        false
    }
}

impl SearchMethod for StoppingBracket {
    fn initial_operations(&mut self, ctx: &mut Context) -> Vec<Operation> {
        (0..self.params.initial_trials()).map(|_| self.create(ctx)).collect()
    }

    fn validation_completed(&mut self, ctx: &mut Context, id: RequestId, metric: f64, time_progress: u64) -> Vec<Operation> {
        if !self.should_stop(id, metric, time_progress) {
            return Vec::new();
        }
        let mut ops = vec![Operation::Stop { request_id: id }];
        if self.budget_left() {
            ops.push(self.create(ctx));
        }
        ops
    }

    fn trial_exited_early(&mut self, ctx: &mut Context, id: RequestId, reason: ExitReason) -> Vec<Operation> {
        let Some(&rung) = self.state.trial_rungs.get(&id) else { return Vec::new() };
        if reason == ExitReason::InvalidHp {
            // An invalid configuration says nothing about the others: forget its metrics and
            // replace it without spending budget.
            for r in &mut self.state.rungs[..=rung] {
                r.retain(|e| e.id != id);
            }
            self.state.invalid += 1;
            return vec![self.create(ctx)];
        }
        insert_ranked(&mut self.state.rungs[rung], id, EXITED_METRIC);
        if self.budget_left() { vec![self.create(ctx)] } else { Vec::new() }
    }

    fn trial_closed(&mut self, _: &mut Context, id: RequestId) -> Vec<Operation> {
        if self.state.trial_rungs.contains_key(&id) {
            self.state.closed += 1;
        }
        Vec::new()
    }

    /// Upstream's estimate: rung-0 entries against 120% of `max_trials` until every trial has
    /// been seen there, then the share of trials finished.
    fn progress(&self, _: &Trials) -> f64 {
        let max = self.params.max_trials as f64;
        let seen = self.state.rungs[0].len();
        let estimate = seen as f64 / (1.2 * max);
        if seen >= self.params.max_trials {
            let finished = self.state.closed.saturating_sub(self.state.invalid) as f64;
            estimate.max(finished / max)
        } else {
            estimate
        }
    }

    fn rung(&self, id: RequestId) -> Option<usize> {
        self.state.trial_rungs.get(&id).copied()
    }

    fn rung_counts(&self) -> Vec<Vec<usize>> {
        vec![self.state.rungs.iter().map(Vec::len).collect()]
    }

    fn snapshot(&self) -> Box<serde_json::value::RawValue> {
        to_json(&self.state)
    }

    fn restore(&mut self, state: &Value) -> SearcherResult<()> {
        let restored = StoppingState::deserialize(state)?;
        check_snapshot_rungs(restored.rungs.len(), self.params.num_rungs())?;
        self.state = restored;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rung_lengths_divide_the_top_length() {
        assert_eq!(rung_lengths(5, 4.0, 256), vec![1, 4, 16, 64, 256]);
        assert_eq!(rung_lengths(3, 4.0, 10), vec![1, 2, 10]);
        assert_eq!(rung_lengths(1, 4.0, 7), vec![7]);
    }

    #[test]
    fn ties_rank_with_earlier_entries() {
        let mut rung = Vec::new();
        assert_eq!(insert_ranked(&mut rung, RequestId(1), 1.0), 0);
        assert_eq!(insert_ranked(&mut rung, RequestId(2), 1.0), 0);
        assert_eq!(insert_ranked(&mut rung, RequestId(3), 2.0), 2);
        assert_eq!(insert_ranked(&mut rung, RequestId(4), 0.5), 0);
    }

    #[test]
    fn default_concurrency_reaches_the_top() {
        let p = BracketParams::new(3, 4.0, 64, 100, 0);
        assert_eq!(p.initial_trials(), 16);
        assert_eq!(BracketParams::new(3, 4.0, 64, 5, 0).initial_trials(), 5);
        assert_eq!(BracketParams::new(3, 4.0, 64, 100, 8).initial_trials(), 8);
    }
}
