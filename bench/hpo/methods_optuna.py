"""Optuna with a pruner, driven by ask/tell against the simulated workers of `synthetic.Workers`:
each trial reports every epoch and asks `should_prune()`, exactly as a training loop would."""

import logging

import optuna

import synthetic

optuna.logging.set_verbosity(logging.WARNING)


def make_pruner(name: str, max_epochs: int, divisor: int):
    if name == "sha":
        return optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=divisor, min_early_stopping_rate=0)
    if name == "hyperband":
        return optuna.pruners.HyperbandPruner(min_resource=1, max_resource=max_epochs, reduction_factor=divisor)
    raise ValueError(f"unknown pruner {name}")


def make_sampler(name: str, seed: int):
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    raise ValueError(f"unknown sampler {name}")


def run(pruner: str, sampler: str, seed: int, workers: int, budget: int, max_epochs: int, divisor: int, function: dict):
    """Returns (trace [(compute, best true loss at max_epochs)], compute, trials started)."""
    study = optuna.create_study(direction="minimize", sampler=make_sampler(sampler, seed), pruner=make_pruner(pruner, max_epochs, divisor))
    pool = synthetic.Workers(function["noise_seed"])
    compute, best, trace = 0, float("inf"), []
    while compute < budget:
        while len(pool) < workers:
            trial = study.ask()
            x = [trial.suggest_float(f"x{i}", 0.0, 1.0) for i in range(synthetic.DIMS)]
            pool.start(x, trial)
        x, epoch, trial, number = pool.next_epoch()
        compute += 1
        value = synthetic.observed_loss(function["noise_seed"], function["sigma"], x, epoch)
        trial.report(value, epoch)
        if epoch >= max_epochs:
            study.tell(trial, value)
            loss = float(synthetic.true_loss(x, max_epochs))
            if loss < best:
                best = loss
                trace.append((compute, best))
        elif trial.should_prune():
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        else:
            pool.resume(x, epoch, trial, number)
    return trace, compute, pool.started
