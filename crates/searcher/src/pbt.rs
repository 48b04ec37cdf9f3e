//! Population-based training. A population trains in rounds of `length_per_round`; when every
//! member has reached the end of the round, the bottom `floor(truncate_fraction * population)` are
//! stopped and replaced by children of the top ones: same checkpoint (`checkpoint_from`), explored
//! hyperparameters. After `num_rounds` rounds the survivors are closed.
//!
//! Rounds are counted on the absolute training progress the trials report, so a child warm-started
//! from its parent's checkpoint continues the parent's clock. Trials that exit early rank last.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::asha::EXITED_METRIC;
use crate::config::PbtConfig;
use crate::error::SearcherResult;
use crate::method::{Context, SearchMethod, Trials, to_json};
use crate::ops::{ExitReason, Operation, RequestId};
use crate::sample::{Explore, explore};

pub(crate) struct PbtSearch {
    population_size: usize,
    num_rounds: usize,
    length_per_round: u64,
    truncate_fraction: f64,
    explore: Explore,
    state: PbtState,
}

#[derive(Default, Serialize, Deserialize)]
struct PbtState {
    /// The round the population is in (0-based).
    round: usize,
    done: bool,
    members: BTreeMap<RequestId, Member>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Member {
    joined_round: usize,
    /// Metric per round, from `joined_round` on.
    metrics: Vec<f64>,
    exited: bool,
}

impl Member {
    fn new(joined_round: usize) -> Self {
        Member { joined_round, metrics: Vec::new(), exited: false }
    }

    fn reported_through(&self) -> usize {
        self.joined_round + self.metrics.len()
    }

    /// The member's standing in `round`, once it has one.
    fn metric(&self, round: usize) -> Option<f64> {
        if self.exited {
            return Some(EXITED_METRIC);
        }
        round.checked_sub(self.joined_round).and_then(|i| self.metrics.get(i)).copied()
    }
}

impl PbtSearch {
    pub(crate) fn new(config: &PbtConfig) -> Self {
        PbtSearch {
            population_size: config.population_size,
            num_rounds: config.num_rounds,
            length_per_round: config.length_per_round.units,
            truncate_fraction: config.truncate_fraction,
            explore: Explore { resample_probability: config.resample_probability, perturb_factor: config.perturb_factor },
            state: PbtState::default(),
        }
    }

    /// Completes every round the whole population has reported.
    fn advance(&mut self, ctx: &mut Context) -> Vec<Operation> {
        let mut ops = Vec::new();
        while !self.state.done && self.state.members.values().all(|m| m.metric(self.state.round).is_some()) {
            self.complete_round(ctx, &mut ops);
        }
        ops
    }

    fn complete_round(&mut self, ctx: &mut Context, ops: &mut Vec<Operation>) {
        let round = self.state.round;
        self.state.round += 1;
        if self.state.round >= self.num_rounds {
            self.state.done = true;
            for (&id, member) in &self.state.members {
                if !member.exited {
                    ops.push(Operation::Close { request_id: id });
                }
            }
            return;
        }
        let mut ranked: Vec<(f64, RequestId)> =
            self.state.members.iter().map(|(&id, m)| (m.metric(round).unwrap_or(EXITED_METRIC), id)).collect();
        ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        // Never more than half, so no trial is both replaced and copied.
        let replace = ((self.truncate_fraction * self.population_size as f64) as usize).min(ranked.len() / 2);
        for &(_, id) in &ranked[ranked.len() - replace..] {
            if let Some(member) = self.state.members.remove(&id)
                && !member.exited
            {
                ops.push(Operation::Stop { request_id: id });
            }
        }
        for &(_, parent) in &ranked[..replace] {
            if self.state.members.get(&parent).is_some_and(|m| m.exited) {
                continue;
            }
            let hparams = explore(ctx.space, &ctx.hparams(parent), self.explore, ctx.rng);
            let (child, op) = ctx.create_from(hparams, Some(parent));
            self.state.members.insert(child, Member::new(self.state.round));
            ops.push(op);
        }
    }
}

impl SearchMethod for PbtSearch {
    fn initial_operations(&mut self, ctx: &mut Context) -> Vec<Operation> {
        (0..self.population_size)
            .map(|_| {
                let (id, op) = ctx.create_sampled();
                self.state.members.insert(id, Member::new(0));
                op
            })
            .collect()
    }

    fn validation_completed(&mut self, ctx: &mut Context, id: RequestId, metric: f64, time_progress: u64) -> Vec<Operation> {
        let rounds_reached = ((time_progress / self.length_per_round) as usize).min(self.num_rounds);
        let Some(member) = self.state.members.get_mut(&id) else { return Vec::new() };
        if member.exited || member.reported_through() >= rounds_reached {
            return Vec::new();
        }
        // A validation past several boundaries (the trial ran ahead) stands for each of them.
        while member.reported_through() < rounds_reached {
            member.metrics.push(metric);
        }
        self.advance(ctx)
    }

    fn trial_exited_early(&mut self, ctx: &mut Context, id: RequestId, _: ExitReason) -> Vec<Operation> {
        match self.state.members.get_mut(&id) {
            Some(member) => member.exited = true,
            None => return Vec::new(),
        }
        self.advance(ctx)
    }

    fn trial_closed(&mut self, ctx: &mut Context, id: RequestId) -> Vec<Operation> {
        if self.state.done {
            return Vec::new();
        }
        // A member that ends on its own before the last round can report no more; waiting for it
        // would stall the population, so it ranks last from now on.
        match self.state.members.get_mut(&id) {
            Some(member) if !member.exited && member.reported_through() < self.num_rounds => member.exited = true,
            _ => return Vec::new(),
        }
        self.advance(ctx)
    }

    fn progress(&self, _: &Trials) -> f64 {
        if self.state.done {
            return 1.0;
        }
        let members = self.state.members.len().max(1) as f64;
        let reported = self.state.members.values().filter(|m| m.metric(self.state.round).is_some()).count() as f64;
        (self.state.round as f64 + reported / members) / self.num_rounds as f64
    }

    fn rung(&self, id: RequestId) -> Option<usize> {
        self.state.members.get(&id).map(|_| self.state.round)
    }

    fn ahead_of_round(&self, id: RequestId) -> bool {
        // A member that reported its last round is done training: nothing to wait for.
        !self.state.done
            && self
                .state
                .members
                .get(&id)
                .is_some_and(|m| !m.exited && m.reported_through() > self.state.round && m.reported_through() < self.num_rounds)
    }

    fn snapshot(&self) -> Box<serde_json::value::RawValue> {
        to_json(&self.state)
    }

    fn restore(&mut self, state: &Value) -> SearcherResult<()> {
        self.state = PbtState::deserialize(state)?;
        Ok(())
    }
}
