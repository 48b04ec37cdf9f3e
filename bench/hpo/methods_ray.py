"""Ray Tune's `ASHAScheduler`, two ways.

`run_simulated`: the scheduler object itself, fed each epoch's result through its
`on_trial_add` / `on_trial_result` / `on_trial_complete` hooks by the same simulated workers the
other methods get (random sampling from a seeded numpy generator, as `tune.uniform` does). This is
the row in the table: same workers, same clock, fast enough for many seeds.

`run`: a real `Tuner` run (function trainable reporting every epoch,
`max_concurrent_trials=workers`, random sampling) on one Ray instance. Trials run for real in
Ray's worker processes, without sleeping, so their order is Ray's, not simulated time; compute is
counted in the driver as results arrive, and a stopper ends the run once the budget is spent."""

import os
import tempfile
from types import SimpleNamespace

import numpy as np

import ray
from ray import tune
from ray.tune.schedulers import ASHAScheduler, TrialScheduler
from ray.tune.search.basic_variant import BasicVariantGenerator

import synthetic


def make_trainable(max_epochs: int, function: dict):
    def trainable(config):
        x = [config[f"x{i}"] for i in range(synthetic.DIMS)]
        for epoch in range(1, max_epochs + 1):
            tune.report({"loss": synthetic.observed_loss(function["noise_seed"], function["sigma"], x, epoch), "epoch": epoch})

    return trainable


class BudgetTracker(tune.Stopper, tune.Callback):
    """Counts epochs as results reach the driver, records the best full-fidelity loss, and stops
    every trial once the budget is spent."""

    def __init__(self, budget: int, max_epochs: int):
        self.budget, self.max_epochs = budget, max_epochs
        self.compute, self.best, self.trace = 0, float("inf"), []

    def __call__(self, trial_id, result):
        if self.compute >= self.budget:
            return True
        self.compute += 1
        if result["epoch"] >= self.max_epochs:
            x = [result["config"][f"x{i}"] for i in range(synthetic.DIMS)]
            loss = float(synthetic.true_loss(x, self.max_epochs))
            if loss < self.best:
                self.best = loss
                self.trace.append((self.compute, loss))
        return False

    def stop_all(self):
        return self.compute >= self.budget


def init(workers: int):
    if not ray.is_initialized():
        os.environ.setdefault("RAY_DEDUP_LOGS", "0")
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, logging_level="ERROR")


def run(seed: int, workers: int, budget: int, max_epochs: int, divisor: int, function: dict):
    init(workers)
    tracker = BudgetTracker(budget, max_epochs)
    scheduler = ASHAScheduler(time_attr="epoch", max_t=max_epochs, grace_period=1, reduction_factor=divisor)
    space = {f"x{i}": tune.uniform(0.0, 1.0) for i in range(synthetic.DIMS)}
    with tempfile.TemporaryDirectory() as storage:
        tuner = tune.Tuner(
            tune.with_resources(make_trainable(max_epochs, function), {"cpu": 1}),
            param_space=space,
            tune_config=tune.TuneConfig(
                metric="loss",
                mode="min",
                scheduler=scheduler,
                search_alg=BasicVariantGenerator(random_state=seed),
                num_samples=budget // 2 + 100,
                max_concurrent_trials=workers,
                reuse_actors=True,
            ),
            run_config=tune.RunConfig(stop=tracker, storage_path=storage, verbose=0, log_to_file=False),
        )
        grid = tuner.fit()
        started = len(grid)
    return tracker.trace, tracker.compute, started


def run_simulated(seed: int, workers: int, budget: int, max_epochs: int, divisor: int, function: dict):
    """Returns (trace [(compute, best true loss at max_epochs)], compute, trials started)."""
    np.random.seed(seed)  # the scheduler draws brackets from numpy's global generator
    rng = np.random.default_rng(seed)
    scheduler = ASHAScheduler(time_attr="epoch", metric="loss", mode="min", max_t=max_epochs, grace_period=1, reduction_factor=divisor)
    pool = synthetic.Workers(function["noise_seed"])
    compute, best, trace = 0, float("inf"), []
    while compute < budget:
        while len(pool) < workers:
            trial = SimpleNamespace(trial_id=str(pool.started))
            scheduler.on_trial_add(None, trial)
            pool.start([float(v) for v in rng.uniform(0.0, 1.0, synthetic.DIMS)], trial)
        x, epoch, trial, number = pool.next_epoch()
        compute += 1
        result = {"epoch": epoch, "loss": synthetic.observed_loss(function["noise_seed"], function["sigma"], x, epoch)}
        action = scheduler.on_trial_result(None, trial, result)
        if epoch >= max_epochs:
            scheduler.on_trial_complete(None, trial, result)
            loss = float(synthetic.true_loss(x, max_epochs))
            if loss < best:
                best = loss
                trace.append((compute, best))
        elif action == TrialScheduler.STOP:
            scheduler.on_trial_remove(None, trial)
        else:
            pool.resume(x, epoch, trial, number)
    return trace, compute, pool.started
