//! The ASHA benchmark's plan and its zero-overhead reference: the experiment configuration, the
//! synthetic learning curve the no-op trials report, and the ideal makespan, obtained by replaying
//! the same pure searcher (`resolute-searcher`, same configuration and seed) in a discrete-event
//! simulation where every report, stop and start takes no time.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, VecDeque};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use resolute_searcher::{
    AdaptiveAshaConfig, AdaptiveMode, HyperparameterSpace, Hyperparameters, MethodConfig, Operation, RequestId, Searcher, SearcherConfig,
    TrainingLength,
};
use serde_json::Value;

/// What the benchmark runs: one `adaptive_asha` experiment whose trials train in `batches`.
#[derive(Clone, Debug)]
pub struct AshaPlan {
    pub max_trials: usize,
    /// Artificial slots of the fake agent; also `max_concurrent_trials`.
    pub slots: u32,
    /// `max_time` in batches: the length of the top rung.
    pub max_time: u64,
    pub divisor: f64,
    pub max_rungs: usize,
    /// Simulated wall time of one batch.
    pub unit: Duration,
    pub seed: u32,
}

impl AshaPlan {
    /// The experiment configuration sent to the master (one slot per trial, no restarts).
    pub fn yaml(&self) -> String {
        format!(
            "name: asha-bench\nentrypoint: python3 train.py\n\
             searcher:\n  name: adaptive_asha\n  metric: loss\n  smaller_is_better: true\n  max_trials: {}\n  \
             max_concurrent_trials: {}\n  time_metric: batches\n  max_time: {}\n  divisor: {}\n  max_rungs: {}\n  mode: standard\n\
             hyperparameters:\n  lr: {{type: log, minval: -4, maxval: -1, base: 10}}\n  x: {{type: double, minval: 0, maxval: 1}}\n\
             reproducibility: {{experiment_seed: {}}}\nmax_restarts: 0\n",
            self.max_trials, self.slots, self.max_time, self.divisor, self.max_rungs, self.seed
        )
    }

    /// The searcher configuration the master derives from [`AshaPlan::yaml`].
    pub fn searcher_config(&self) -> SearcherConfig {
        let mut asha = AdaptiveAshaConfig::new(self.max_trials, TrainingLength::max_time("batches", self.max_time));
        asha.max_concurrent_trials = self.slots as usize;
        asha.divisor = self.divisor;
        asha.max_rungs = self.max_rungs;
        asha.mode = AdaptiveMode::Standard;
        let mut space = Hyperparameters::new();
        space.insert("lr".into(), HyperparameterSpace::Log { min: -4.0, max: -1.0, base: 10.0, count: None });
        space.insert("x".into(), HyperparameterSpace::Double { min: 0.0, max: 1.0, count: None });
        SearcherConfig {
            method: MethodConfig::AdaptiveAsha(asha),
            hyperparameters: space,
            smaller_is_better: true,
            experiment_seed: self.seed,
        }
    }

    /// Where a trial validates: every rung length of every bracket the configuration can have
    /// (`max_time / divisor^k`), ascending. A trial does not know its bracket, so it reports at all
    /// of them, as a harness validating at the rung boundaries would.
    pub fn boundaries(&self) -> Vec<u64> {
        let set: BTreeSet<u64> =
            (0..self.max_rungs.max(1)).map(|k| ((self.max_time as f64 / self.divisor.powi(k as i32)) as u64).max(1)).collect();
        set.into_iter().collect()
    }
}

/// The validation loss of a trial with `hparams` after `t` batches: a deterministic curve where a
/// larger learning rate learns faster but may end worse, so early rankings are informative but
/// not final and ASHA's stops matter.
pub fn loss(hparams: &Value, t: u64) -> Result<f64> {
    let lr = hparams.get("lr").and_then(Value::as_f64).with_context(|| format!("hyperparameters lack a number lr: {hparams}"))?;
    let x = hparams.get("x").and_then(Value::as_f64).with_context(|| format!("hyperparameters lack a number x: {hparams}"))?;
    if lr <= 0.0 {
        bail!("lr must be positive, got {lr}");
    }
    let log_lr = lr.log10();
    let final_loss = 0.05 + (x - 0.3).powi(2) + 0.05 * (log_lr + 2.5).powi(2);
    let alpha = 0.2 + 0.25 * (log_lr + 4.0);
    Ok(final_loss + (1.0 - final_loss) * (1.0 + t as f64).powf(-alpha))
}

/// What an ASHA run did, measured or simulated.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunSummary {
    pub trials: usize,
    /// Trials that ended before `max_time`.
    pub stopped_early: usize,
    /// Batches trained, summed over trials (each trial counts up to its last validation).
    pub trained_units: u64,
    /// Hyperparameters of the trials in creation order.
    pub hparams: Vec<Value>,
}

/// The zero-overhead replay of the plan.
#[derive(Clone, Debug)]
pub struct IdealRun {
    pub summary: RunSummary,
    /// In batches; multiply by the unit time for wall time.
    pub makespan_units: u64,
    pub max_running: usize,
}

struct Running {
    hparams: Value,
    started: u64,
    next: usize,
}

/// Replays the searcher with `slots` workers and no overhead: trials start the instant they are
/// created (or a slot frees), validate exactly at each boundary, and a stopped trial's slot is free
/// at the moment of the validation that stopped it. Simultaneous validations go in request order.
pub fn ideal_run(plan: &AshaPlan) -> Result<IdealRun> {
    let boundaries = plan.boundaries();
    let mut searcher = Searcher::new(plan.searcher_config())?;
    let mut running: BTreeMap<RequestId, Running> = BTreeMap::new();
    let mut events: BTreeSet<(u64, RequestId)> = BTreeSet::new();
    let mut queue: VecDeque<(RequestId, Value)> = VecDeque::new();
    let mut summary = RunSummary::default();
    let (mut now, mut makespan, mut max_running) = (0u64, 0u64, 0usize);
    let mut pending: VecDeque<Operation> = searcher.initial_operations()?.into();
    // Trials whose own loop ended (at `max_time`): they exit after their last report is handled.
    let mut exiting: Vec<RequestId> = Vec::new();
    loop {
        let mut closed = Vec::new();
        while let Some(op) = pending.pop_front() {
            match op {
                Operation::Create { request_id, hparams, .. } => {
                    summary.hparams.push(hparams.clone());
                    pending.extend(searcher.trial_created(request_id)?);
                    queue.push_back((request_id, hparams));
                }
                Operation::Stop { request_id } => {
                    if let Some(trial) = running.remove(&request_id) {
                        events.retain(|(_, id)| *id != request_id);
                        summary.end_trial(trial.trained(&boundaries), plan.max_time);
                        makespan = makespan.max(now);
                        closed.push(request_id);
                    }
                }
                // As the master: outside PBT, a close concerns a trial that is finishing anyway.
                Operation::Close { .. } | Operation::Shutdown { .. } => {}
            }
        }
        for id in exiting.drain(..) {
            if let Some(trial) = running.remove(&id) {
                events.retain(|(_, e)| *e != id);
                summary.end_trial(trial.trained(&boundaries), plan.max_time);
                makespan = makespan.max(now);
                closed.push(id);
            }
        }
        // The master hears that a stopped trial closed once its process exited: after the batch.
        for id in closed {
            pending.extend(searcher.trial_closed(id)?);
        }
        while running.len() < plan.slots as usize {
            let Some((id, hparams)) = queue.pop_front() else { break };
            events.insert((now + boundaries[0], id));
            running.insert(id, Running { hparams, started: now, next: 0 });
        }
        max_running = max_running.max(running.len());
        if !pending.is_empty() {
            continue;
        }
        let Some((time, id)) = events.pop_first() else { break };
        now = time;
        let trial = running.get_mut(&id).context("an event for a trial that is not running")?;
        let t = boundaries[trial.next];
        trial.next += 1;
        let metric = loss(&trial.hparams, t)?;
        match boundaries.get(trial.next) {
            Some(&next) => {
                events.insert((trial.started + next, id));
            }
            None => exiting.push(id),
        }
        pending.extend(searcher.validation_completed(id, metric, t)?);
    }
    if !queue.is_empty() {
        bail!("the replay ended with {} trials never started", queue.len());
    }
    Ok(IdealRun { summary, makespan_units: makespan, max_running })
}

impl Running {
    /// Batches up to the last validation.
    fn trained(&self, boundaries: &[u64]) -> u64 {
        self.next.checked_sub(1).map_or(0, |i| boundaries[i])
    }
}

impl RunSummary {
    fn end_trial(&mut self, trained: u64, max_time: u64) {
        self.trials += 1;
        self.trained_units += trained;
        if trained < max_time {
            self.stopped_early += 1;
        }
    }
}

/// The makespan of the measured trials' training alone: each trial's trained length, in creation
/// order, placed greedily on the first of `slots` slots to free up.
pub fn list_schedule(lengths: &[u64], slots: u32) -> u64 {
    let mut free: BinaryHeap<Reverse<u64>> = (0..slots.max(1)).map(|_| Reverse(0)).collect();
    let mut makespan = 0;
    for &length in lengths {
        let Reverse(start) = free.pop().unwrap_or(Reverse(0));
        let end = start + length;
        makespan = makespan.max(end);
        free.push(Reverse(end));
    }
    makespan
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn plan(max_trials: usize, slots: u32) -> AshaPlan {
        AshaPlan { max_trials, slots, max_time: 64, divisor: 4.0, max_rungs: 4, unit: Duration::from_millis(2), seed: 7 }
    }

    #[test]
    fn boundaries_cover_every_bracket() {
        assert_eq!(plan(100, 4).boundaries(), vec![1, 4, 16, 64]);
        let p = AshaPlan { max_time: 100, divisor: 3.0, max_rungs: 3, ..plan(10, 2) };
        assert_eq!(p.boundaries(), vec![11, 33, 100]);
    }

    #[test]
    fn the_yaml_validates_to_the_replayed_searcher_config() {
        let p = plan(1000, 16);
        // The master adds its default checkpoint storage; the parser alone needs one.
        let yaml = format!("{}checkpoint_storage: {{type: shared_fs, host_path: /tmp}}\n", p.yaml());
        let config = resolute_expconf::parse_experiment_config(&yaml, &resolute_expconf::Defaults::new(0))
            .unwrap_or_else(|e| panic!("{e:?}"))
            .config;
        assert_eq!(config.reproducibility.experiment_seed, 7);
        let resolute_expconf::SearcherMethod::AdaptiveAsha(a) = &config.searcher.method else { panic!("{:?}", config.searcher.method) };
        let MethodConfig::AdaptiveAsha(replayed) = p.searcher_config().method else { unreachable!() };
        assert_eq!(a.max_trials as usize, replayed.max_trials);
        assert_eq!(a.max_concurrent_trials as usize, replayed.max_concurrent_trials);
        assert_eq!((a.divisor, a.max_rungs as usize), (replayed.divisor, replayed.max_rungs));
        assert_eq!((a.time_metric.as_deref(), a.max_time), (Some("batches"), Some(replayed.length.units)));
        assert_eq!(a.mode, resolute_expconf::AshaMode::Standard);
        assert!(a.bracket_rungs.is_empty() && config.searcher.smaller_is_better);
    }

    #[test]
    fn the_curve_falls_and_crosses() {
        let fast = json!({"lr": 0.1, "x": 0.3});
        let slow = json!({"lr": 0.003, "x": 0.3});
        assert!(loss(&fast, 1).unwrap() < loss(&fast, 0).unwrap());
        assert!(loss(&fast, 1).unwrap() < loss(&slow, 1).unwrap(), "a large learning rate leads early");
        assert!(loss(&slow, 10_000).unwrap() < loss(&fast, 10_000).unwrap(), "and ends behind");
        assert!(loss(&json!({"lr": 0.0}), 1).is_err());
    }

    #[test]
    fn the_replay_runs_every_trial_and_stops_most_early() {
        let p = plan(200, 8);
        let ideal = ideal_run(&p).unwrap();
        assert_eq!(ideal.summary.trials, 200);
        assert_eq!(ideal.summary.hparams.len(), 200);
        assert!(ideal.summary.stopped_early > 150, "{:?}", ideal.summary.stopped_early);
        assert!(ideal.max_running <= 8);
        // No slot idles while work is left, so the makespan is at least the work spread over the slots.
        assert!(ideal.makespan_units * 8 >= ideal.summary.trained_units);
        assert!(ideal.makespan_units >= 64);
        // Deterministic: the same plan gives the same run.
        assert_eq!(ideal_run(&p).unwrap().summary, ideal.summary);
    }

    #[test]
    fn list_scheduling_fills_the_first_free_slot() {
        assert_eq!(list_schedule(&[4, 4, 4, 4], 2), 8);
        assert_eq!(list_schedule(&[10, 1, 1, 1], 2), 10);
        assert_eq!(list_schedule(&[], 3), 0);
    }
}
