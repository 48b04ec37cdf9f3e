"""Experiment and trial states as upstream reports them, through the upstream CLI and SDK: a paused
grid search has its trials the moment `det e create --paused` returns; a running experiment and
its trial read RUNNING (what `det e wait`-style scripts poll for); `det trial kill` of the only
trial ends the experiment CANCELED."""

from pathlib import Path

import pytest

from conftest import Agent, DetCli, Master
from experiments import IRIS, ExpState, create, metrics, only_trial, sdk, wait_for, wait_state, write_config

pytestmark = pytest.mark.experiments

LONG = {
    "name": "iris_states",
    "hyperparameters": {"sleep_per_batch": 0.01},
    "searcher": {"max_length": {"batches": 100_000}},
    "min_validation_period": {"batches": 100},
    "scheduling_unit": 20,
}


def test_paused_grid_search_has_its_trials_at_once(master: Master, agent: Agent, det: DetCli, tmp_path: Path) -> None:
    config = write_config(IRIS / "grid.yaml", tmp_path / "grid.yaml", tmp_path / "checkpoints")
    exp = sdk(master).get_experiment(create(det, config, IRIS, "--paused"))
    # No polling: the trials exist when the create call has returned.
    trials = exp.list_trials()
    assert trials, "a grid search's first trials exist when it is created"
    assert {t.state.name for t in trials} == {"PAUSED"}, [t.state for t in trials]
    exp.reload()
    assert exp.state == ExpState.PAUSED
    det.ok("experiment", "kill", str(exp.id))
    wait_state(exp, {ExpState.CANCELED}, timeout=60)


@pytest.mark.slow
def test_running_then_trial_kill_cancels(master: Master, agent: Agent, det: DetCli, tmp_path: Path) -> None:
    config = write_config(IRIS / "const.yaml", tmp_path / "long.yaml", tmp_path / "checkpoints", **LONG)
    exp = sdk(master).get_experiment(create(det, config, IRIS))
    trial = only_trial(exp, timeout=5)
    wait_for("training metrics of the running trial", lambda: metrics(trial, "training"), timeout=90)
    wait_state(exp, {ExpState.RUNNING}, timeout=30)
    trial.reload()
    assert trial.state.name == "RUNNING", trial.state
    listed = det.ok("experiment", "list")
    row = next(line for line in listed.splitlines() if line.strip().startswith(str(exp.id)))
    assert "RUNNING" in row, listed
    # A running experiment still pauses like an active one.
    det.ok("experiment", "pause", str(exp.id))
    wait_state(exp, {ExpState.PAUSED}, timeout=60)
    det.ok("experiment", "activate", str(exp.id))
    wait_state(exp, {ExpState.RUNNING}, timeout=90)

    det.ok("trial", "kill", str(trial.id))
    wait_state(exp, {ExpState.CANCELED}, timeout=60, context="after killing its only trial")
    trial.reload()
    assert trial.state.name == "CANCELED", trial.state
