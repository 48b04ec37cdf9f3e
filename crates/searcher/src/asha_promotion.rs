//! One ASHA bracket with the pre-0.38 promotion rule (`asha.go`). When a trial finishes rung `k`
//! and the rung then holds `n` metrics, `floor(n / divisor)` of them deserve promotion: the new
//! trial is promoted at once if it ranks among them; otherwise, if that number just grew, the best
//! not-yet-promoted trial is promoted instead.
//!
//! Trials cannot be paused in place, so "waiting at a rung" is a `Stop` (the trial checkpoints and
//! exits), and promoting a waiting trial later is a `Create` that resumes its hyperparameters from
//! its checkpoint. Each completion hands its slot to exactly one piece of work: the same trial, a
//! resumed one, or a new one while `max_trials` allows.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::asha::{BracketParams, EXITED_METRIC, check_snapshot_rungs};
use crate::error::SearcherResult;
use crate::method::{Context, SearchMethod, Trials, to_json};
use crate::ops::{ExitReason, Operation, RequestId};

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct PromotionEntry {
    id: RequestId,
    metric: f64,
    promoted: bool,
}

pub(crate) struct PromotionBracket {
    params: BracketParams,
    state: PromotionState,
}

#[derive(Default, Serialize, Deserialize)]
struct PromotionState {
    rungs: Vec<Vec<PromotionEntry>>,
    /// The rung each trial is training toward.
    trial_rungs: BTreeMap<RequestId, usize>,
    /// Trials that resume a promoted configuration; they do not spend `max_trials`.
    resumed: BTreeSet<RequestId>,
    /// Trials that exited early; promoting one counts as the worst result at the next rung.
    exited: BTreeSet<RequestId>,
    fresh: usize,
    invalid: usize,
}

impl PromotionBracket {
    pub(crate) fn new(params: BracketParams) -> Self {
        let rungs = vec![Vec::new(); params.num_rungs()];
        PromotionBracket { params, state: PromotionState { rungs, ..PromotionState::default() } }
    }

    fn create_fresh(&mut self, ctx: &mut Context) -> Operation {
        let (id, op) = ctx.create_sampled();
        self.state.trial_rungs.insert(id, 0);
        self.state.fresh += 1;
        op
    }

    /// Inserts the metric in rung `r` and returns the trial to promote from it, if any.
    fn promotion(&mut self, r: usize, id: RequestId, metric: f64) -> Option<RequestId> {
        let rung = &mut self.state.rungs[r];
        let old_num_promote = (rung.len() as f64 / self.params.divisor) as usize;
        let num_promote = ((rung.len() + 1) as f64 / self.params.divisor) as usize;
        // Behind equal metrics: an earlier trial with the same score keeps its place.
        let rank = rung.partition_point(|e| e.metric <= metric);
        let now = rank < num_promote;
        rung.insert(rank, PromotionEntry { id, metric, promoted: now });
        if now {
            return Some(id);
        }
        if num_promote != old_num_promote && !rung[old_num_promote].promoted {
            rung[old_num_promote].promoted = true;
            return Some(rung[old_num_promote].id);
        }
        None
    }

    /// Trial `id` completed its current rung with `metric` (reached at `time_progress`, or
    /// `None` when it exited). Returns whether the freed slot got work.
    fn report(
        &mut self,
        ctx: &mut Context,
        mut id: RequestId,
        mut metric: f64,
        mut time_progress: Option<u64>,
        ops: &mut Vec<Operation>,
    ) -> bool {
        let top = self.params.num_rungs() - 1;
        loop {
            let Some(&r) = self.state.trial_rungs.get(&id) else { return false };
            if r == top {
                self.state.rungs[r].push(PromotionEntry { id, metric, promoted: false });
                if ctx.is_live(id) && !self.state.exited.contains(&id) {
                    ops.push(Operation::Close { request_id: id });
                }
                return false;
            }
            match self.promotion(r, id, metric) {
                None => {
                    if ctx.is_live(id) && !self.state.exited.contains(&id) {
                        ops.push(Operation::Stop { request_id: id });
                    }
                    return false;
                }
                Some(p) if p == id => {
                    self.state.trial_rungs.insert(id, r + 1);
                    match time_progress {
                        // It keeps training; its validation may already cover the next rung too.
                        Some(t) if t >= self.params.rung_lengths[r + 1] => continue,
                        Some(_) => return true,
                        None => metric = EXITED_METRIC,
                    }
                }
                Some(p) => {
                    if ctx.is_live(id) && !self.state.exited.contains(&id) {
                        ops.push(Operation::Stop { request_id: id });
                    }
                    self.state.trial_rungs.insert(p, r + 1);
                    if self.state.exited.contains(&p) {
                        // Upstream's rule: a promoted trial that is gone reports the worst result.
                        (id, metric, time_progress) = (p, EXITED_METRIC, None);
                        continue;
                    }
                    let hparams = ctx.hparams(p);
                    let (resumed, op) = ctx.create_from(hparams, Some(p));
                    self.state.trial_rungs.insert(resumed, r + 1);
                    self.state.resumed.insert(resumed);
                    ops.push(op);
                    return true;
                }
            }
        }
    }

    fn after_report(&mut self, ctx: &mut Context, got_work: bool, mut ops: Vec<Operation>) -> Vec<Operation> {
        if !got_work && self.state.fresh - self.state.invalid < self.params.max_trials {
            ops.push(self.create_fresh(ctx));
        }
        ops
    }

    /// Expected entries per rung if every bracket slot is used: `max(floor(T / d^k), 1)`.
    fn expected_entries(&self) -> usize {
        (0..self.params.num_rungs()).map(|k| ((self.params.max_trials as f64 / self.params.divisor.powi(k as i32)) as usize).max(1)).sum()
    }
}

impl SearchMethod for PromotionBracket {
    fn initial_operations(&mut self, ctx: &mut Context) -> Vec<Operation> {
        (0..self.params.initial_trials()).map(|_| self.create_fresh(ctx)).collect()
    }

    fn validation_completed(&mut self, ctx: &mut Context, id: RequestId, metric: f64, time_progress: u64) -> Vec<Operation> {
        let Some(&r) = self.state.trial_rungs.get(&id) else { return Vec::new() };
        if time_progress < self.params.rung_lengths[r] {
            return Vec::new();
        }
        let mut ops = Vec::new();
        let got_work = self.report(ctx, id, metric, Some(time_progress), &mut ops);
        self.after_report(ctx, got_work, ops)
    }

    fn trial_exited_early(&mut self, ctx: &mut Context, id: RequestId, reason: ExitReason) -> Vec<Operation> {
        let Some(&rung) = self.state.trial_rungs.get(&id) else { return Vec::new() };
        self.state.exited.insert(id);
        if reason == ExitReason::InvalidHp && !self.state.resumed.contains(&id) {
            for r in &mut self.state.rungs[..=rung] {
                r.retain(|e| e.id != id);
            }
            self.state.invalid += 1;
            return vec![self.create_fresh(ctx)];
        }
        let mut ops = Vec::new();
        let got_work = self.report(ctx, id, EXITED_METRIC, None, &mut ops);
        self.after_report(ctx, got_work, ops)
    }

    fn trial_closed(&mut self, _: &mut Context, _: RequestId) -> Vec<Operation> {
        Vec::new()
    }

    fn progress(&self, _: &Trials) -> f64 {
        let recorded: usize = self.state.rungs.iter().map(Vec::len).sum();
        (recorded as f64 / self.expected_entries() as f64).min(1.0)
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
        let restored = PromotionState::deserialize(state)?;
        check_snapshot_rungs(restored.rungs.len(), self.params.num_rungs())?;
        self.state = restored;
        Ok(())
    }
}
