//! Random search (and `single`, which is random search with one trial): sample, train, replace
//! each finished trial until `max_trials` have run.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::SearcherResult;
use crate::method::{Context, SearchMethod, Trials, to_json};
use crate::ops::{ExitReason, Operation, RequestId};

pub(crate) struct RandomSearch {
    max_trials: usize,
    max_concurrent_trials: usize,
    length: Option<u64>,
    state: RandomState,
}

#[derive(Default, Serialize, Deserialize)]
struct RandomState {
    /// Trials requested that count toward `max_trials` (invalid-HP trials are given back).
    counted: usize,
}

impl RandomSearch {
    pub(crate) fn new(max_trials: usize, max_concurrent_trials: usize, length: Option<u64>) -> Self {
        RandomSearch { max_trials, max_concurrent_trials, length, state: RandomState::default() }
    }
}

impl SearchMethod for RandomSearch {
    fn initial_operations(&mut self, ctx: &mut Context) -> Vec<Operation> {
        let n = if self.max_concurrent_trials > 0 { self.max_concurrent_trials.min(self.max_trials) } else { self.max_trials };
        self.state.counted += n;
        (0..n).map(|_| ctx.create_sampled().1).collect()
    }

    fn validation_completed(&mut self, _: &mut Context, _: RequestId, _: f64, _: u64) -> Vec<Operation> {
        Vec::new()
    }

    fn trial_exited_early(&mut self, _: &mut Context, _: RequestId, reason: ExitReason) -> Vec<Operation> {
        if reason == ExitReason::InvalidHp {
            // Its replacement is created when it closes, keeping the concurrency constant.
            self.state.counted = self.state.counted.saturating_sub(1);
        }
        Vec::new()
    }

    fn trial_closed(&mut self, ctx: &mut Context, _: RequestId) -> Vec<Operation> {
        if self.state.counted < self.max_trials {
            self.state.counted += 1;
            vec![ctx.create_sampled().1]
        } else {
            Vec::new()
        }
    }

    fn progress(&self, trials: &Trials) -> f64 {
        let done: f64 = trials.values().filter(|t| t.exit != Some(ExitReason::InvalidHp)).map(|t| t.fraction_done(self.length)).sum();
        done / self.max_trials as f64
    }

    fn snapshot(&self) -> Box<serde_json::value::RawValue> {
        to_json(&self.state)
    }

    fn restore(&mut self, state: &Value) -> SearcherResult<()> {
        self.state = RandomState::deserialize(state)?;
        Ok(())
    }
}
