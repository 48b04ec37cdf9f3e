//! A deterministic stand-in for the master and its agents: a fixed number of workers run trials
//! against a synthetic learning curve, finishing out of order (a seeded RNG picks which running
//! trial advances next), noticing stops one step late as real trials do, and optionally failing.
//! Used by the tests and handy for trying a configuration.

use std::collections::{BTreeMap, VecDeque};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;
use thiserror::Error;

use crate::error::SearcherError;
use crate::ops::{Event, ExitReason, Operation, RequestId};
use crate::searcher::Searcher;

#[derive(Clone, Debug)]
pub struct SimulationOptions {
    /// Trials that run at once; more requested trials wait in a queue.
    pub workers: usize,
    /// Seeds the order in which trials advance and fail (not the searcher).
    pub seed: u64,
    /// Training between two validations, in the searcher's unit.
    pub validation_period: u64,
    /// Where a trial's own training loop ends (`max_time` for ASHA, `num_rounds *
    /// length_per_round` for PBT).
    pub trial_length: u64,
    /// Chance, at each step, that a trial fails (exits early as `Errored`).
    pub error_probability: f64,
    /// Chance that a trial raises `InvalidHP` before its first validation.
    pub invalid_hp_probability: f64,
    /// After this many events, replace the searcher by one restored from its snapshot (through
    /// JSON text), as a restarted master would.
    pub restart_after_events: Option<usize>,
    /// Guard against a searcher that never finishes.
    pub max_events: usize,
}

impl SimulationOptions {
    pub fn new(workers: usize, trial_length: u64) -> Self {
        SimulationOptions {
            workers,
            seed: 0,
            validation_period: 1,
            trial_length,
            error_probability: 0.0,
            invalid_hp_probability: 0.0,
            restart_after_events: None,
            max_events: 10_000_000,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct SimulatedTrial {
    pub hparams: Value,
    pub parent: Option<RequestId>,
    /// Training progress the trial started from (its parent's last checkpoint).
    pub started_at: u64,
    /// Current training progress.
    pub progress: u64,
    /// `(time_progress, metric)` for every validation reported.
    pub validations: Vec<(u64, f64)>,
    pub stopped: bool,
    pub closed_by_searcher: bool,
    pub exit: Option<ExitReason>,
    pub finished: bool,
}

/// One event delivered and what the searcher answered.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub event: Event,
    pub operations: Vec<Operation>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct SimulationReport {
    pub initial: Vec<Operation>,
    pub steps: Vec<Step>,
    pub trials: BTreeMap<RequestId, SimulatedTrial>,
    /// `Some(failure)` when the searcher shut down.
    pub shutdown: Option<bool>,
    /// Most trials running at once.
    pub max_running: usize,
    /// Searcher progress after every step.
    pub progress: Vec<f64>,
}

#[derive(Debug, Error)]
pub enum SimulationError {
    #[error(transparent)]
    Searcher(#[from] SearcherError),
    #[error("the searcher left nothing to run but never shut down")]
    Stalled,
    #[error("the simulation exceeded {0} events")]
    TooManyEvents(usize),
    #[error("the snapshot did not survive JSON text: {0}")]
    SnapshotText(#[from] serde_json::Error),
}

struct Simulation<'a> {
    searcher: Searcher,
    options: &'a SimulationOptions,
    curve: &'a dyn Fn(&Value, u64) -> f64,
    rng: ChaCha8Rng,
    queue: VecDeque<RequestId>,
    running: Vec<RequestId>,
    report: SimulationReport,
}

/// Runs the search to its end. Returns the final searcher (for inspection) and what happened.
pub fn simulate(
    searcher: Searcher,
    options: &SimulationOptions,
    curve: &dyn Fn(&Value, u64) -> f64,
) -> Result<(Searcher, SimulationReport), SimulationError> {
    let mut sim = Simulation {
        searcher,
        options,
        curve,
        rng: ChaCha8Rng::seed_from_u64(options.seed),
        queue: VecDeque::new(),
        running: Vec::new(),
        report: SimulationReport::default(),
    };
    let initial = sim.searcher.initial_operations()?;
    sim.handle(&initial);
    sim.report.initial = initial;
    while sim.report.shutdown.is_none() {
        sim.start_queued()?;
        if sim.running.is_empty() {
            return Err(SimulationError::Stalled);
        }
        let i = sim.rng.random_range(0..sim.running.len());
        sim.advance(i)?;
    }
    Ok((sim.searcher, sim.report))
}

impl Simulation<'_> {
    fn handle(&mut self, ops: &[Operation]) {
        for op in ops {
            match op {
                Operation::Create { request_id, hparams, checkpoint_from, .. } => {
                    let started_at =
                        checkpoint_from.and_then(|p| self.report.trials.get(&p)).and_then(|p| p.validations.last()).map_or(0, |v| v.0);
                    self.report.trials.insert(
                        *request_id,
                        SimulatedTrial {
                            hparams: hparams.clone(),
                            parent: *checkpoint_from,
                            started_at,
                            progress: started_at,
                            validations: Vec::new(),
                            stopped: false,
                            closed_by_searcher: false,
                            exit: None,
                            finished: false,
                        },
                    );
                    self.queue.push_back(*request_id);
                }
                Operation::Stop { request_id } => {
                    if let Some(t) = self.report.trials.get_mut(request_id) {
                        t.stopped = true;
                    }
                }
                Operation::Close { request_id } => {
                    if let Some(t) = self.report.trials.get_mut(request_id) {
                        t.closed_by_searcher = true;
                    }
                }
                Operation::Shutdown { failure } => self.report.shutdown = Some(*failure),
            }
        }
    }

    fn deliver(&mut self, event: Event) -> Result<(), SimulationError> {
        let operations = self.searcher.apply(&event)?;
        self.handle(&operations);
        self.report.steps.push(Step { event, operations });
        self.report.progress.push(self.searcher.progress());
        let events = self.report.steps.len();
        if events > self.options.max_events {
            return Err(SimulationError::TooManyEvents(self.options.max_events));
        }
        if self.options.restart_after_events == Some(events) {
            let text = serde_json::to_string(&self.searcher.snapshot())?;
            let snapshot: Value = serde_json::from_str(&text)?;
            self.searcher = Searcher::restore(self.searcher.config().clone(), &snapshot)?;
        }
        Ok(())
    }

    fn start_queued(&mut self) -> Result<(), SimulationError> {
        while self.running.len() < self.options.workers {
            let Some(id) = self.queue.pop_front() else { break };
            if self.report.trials[&id].stopped {
                // Stopped before it ever ran: the master would just drop it.
                self.deliver(Event::TrialClosed { request_id: id })?;
                continue;
            }
            self.deliver(Event::TrialCreated { request_id: id })?;
            self.running.push(id);
            self.report.max_running = self.report.max_running.max(self.running.len());
        }
        Ok(())
    }

    /// One step of running trial `i`: exit if told to, maybe fail, else train and validate.
    fn advance(&mut self, i: usize) -> Result<(), SimulationError> {
        let id = self.running[i];
        let trial = &self.report.trials[&id];
        if trial.stopped {
            self.running.swap_remove(i);
            return self.deliver(Event::TrialClosed { request_id: id });
        }
        let fresh = trial.validations.is_empty();
        let roll: f64 = self.rng.random();
        let failure = if fresh && roll < self.options.invalid_hp_probability {
            Some(ExitReason::InvalidHp)
        } else if self.rng.random::<f64>() < self.options.error_probability {
            Some(ExitReason::Errored)
        } else {
            None
        };
        if let Some(reason) = failure {
            self.running.swap_remove(i);
            if let Some(t) = self.report.trials.get_mut(&id) {
                t.exit = Some(reason);
            }
            self.deliver(Event::TrialExitedEarly { request_id: id, reason })?;
            return self.deliver(Event::TrialClosed { request_id: id });
        }
        let progress = (trial.progress + self.options.validation_period).min(self.options.trial_length.max(trial.progress + 1));
        let metric = (self.curve)(&trial.hparams, progress);
        let finished = progress >= self.options.trial_length;
        if let Some(t) = self.report.trials.get_mut(&id) {
            t.progress = progress;
            t.validations.push((progress, metric));
            t.finished = finished;
        }
        self.deliver(Event::ValidationCompleted { request_id: id, metric, time_progress: progress })?;
        if finished {
            // The trial's own loop ends here, whatever the searcher said.
            if let Some(pos) = self.running.iter().position(|r| *r == id) {
                self.running.swap_remove(pos);
            }
            self.deliver(Event::TrialClosed { request_id: id })?;
        }
        Ok(())
    }
}
