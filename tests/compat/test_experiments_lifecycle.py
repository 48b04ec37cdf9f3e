"""Experiment lifecycle end to end: a failing trial restarts from its checkpoint; pause/activate,
cancel and kill of a running experiment through the upstream CLI, observed through the SDK."""

import re
import time
from pathlib import Path

import pytest

from conftest import Agent, DetCli, Master
from experiments import (
    IRIS,
    ExpState,
    create,
    metrics,
    only_trial,
    restarts,
    sdk,
    trial_logs,
    wait_for,
    wait_state,
    write_config,
)

pytestmark = pytest.mark.experiments

# A run far longer than any test: 10 ms per batch over 100,000 batches, validating and
# checkpointing every 100 batches (about a second), training metrics every 20.
LONG = {
    "name": "iris_long",
    "hyperparameters": {"sleep_per_batch": 0.01},
    "searcher": {"max_length": {"batches": 100_000}},
    "min_validation_period": {"batches": 100},
    "scheduling_unit": 20,
}


def start_long(det: DetCli, master: Master, tmp_path: Path):
    config = write_config(IRIS / "const.yaml", tmp_path / "long.yaml", tmp_path / "checkpoints", **LONG)
    exp = sdk(master).get_experiment(create(det, config, IRIS))
    trial = only_trial(exp, timeout=60)
    # Running for real: the trial has reported training metrics and saved a checkpoint.
    wait_for("training metrics of the running trial", lambda: metrics(trial, "training"), timeout=90)
    wait_for("a checkpoint of the running trial", lambda: trial.list_checkpoints(), timeout=60)
    return exp, trial


def test_crashing_trial_restarts_from_its_checkpoint(master: Master, agent: Agent, det: DetCli, tmp_path: Path) -> None:
    config = write_config(IRIS / "crash.yaml", tmp_path / "crash.yaml", tmp_path / "checkpoints")
    d = sdk(master)
    exp = d.get_experiment(create(det, config, IRIS))
    wait_state(exp, {ExpState.COMPLETED}, timeout=180)
    trial = only_trial(exp)
    trial.reload()
    assert trial.state.name == "COMPLETED"
    assert restarts(d, trial.id) == 1

    logs = trial_logs(det, trial.id)
    assert "crash_at_batch=150: simulated failure of the first run" in logs, logs[-3000:]
    saved = re.search(r"checkpoint ([0-9a-f-]{36}) at batch 100", logs)
    assert saved, logs[-3000:]
    # The second run got DET_LATEST_CHECKPOINT = the first run's batch-100 checkpoint.
    assert f"resumed from checkpoint {saved.group(1)} at batch 100" in logs, logs[-3000:]
    assert logs.count("starting from scratch") == 1, logs[-3000:]

    # Batches 110-140 were reported by both runs; the master keeps each step once.
    assert [m.steps_completed for m in metrics(trial, "training")] == list(range(10, 301, 10))
    assert [m.steps_completed for m in metrics(trial, "validation")] == [100, 200, 300]


@pytest.mark.slow
def test_pause_and_activate_resume_from_checkpoint(master: Master, agent: Agent, det: DetCli, tmp_path: Path) -> None:
    exp, trial = start_long(det, master, tmp_path)

    det.ok("experiment", "pause", str(exp.id))
    wait_state(exp, {ExpState.PAUSED}, timeout=60)
    # Paused means the trial checkpointed and exited: the preemption log line and no running trial.
    wait_for("the trial's preemption log line", lambda: "preempted at batch" in trial_logs(det, trial.id), 30)
    paused_at = int(re.findall(r"preempted at batch (\d+)", trial_logs(det, trial.id))[-1])
    latest = max(c.metadata["steps_completed"] for c in trial.list_checkpoints())
    assert latest == paused_at

    det.ok("experiment", "activate", str(exp.id))
    wait_state(exp, {ExpState.ACTIVE, ExpState.RUNNING}, timeout=30)
    wait_for(
        f"the trial to resume from its batch-{paused_at} checkpoint",
        lambda: re.search(rf"resumed from checkpoint \S+ at batch {paused_at}\b", trial_logs(det, trial.id)),
        timeout=90,
        interval=1,
    )
    wait_for(
        "training metrics after the resume",
        lambda: any(m.steps_completed > paused_at for m in metrics(trial, "training")),
        timeout=60,
    )
    det.ok("experiment", "kill", str(exp.id))
    wait_state(exp, {ExpState.CANCELED}, timeout=60)


@pytest.mark.slow
def test_cancel_checkpoints_and_stops(master: Master, agent: Agent, det: DetCli, tmp_path: Path) -> None:
    exp, trial = start_long(det, master, tmp_path)
    det.ok("experiment", "cancel", str(exp.id))
    wait_state(exp, {ExpState.CANCELED}, timeout=60)
    trial.reload()
    assert trial.state.name in ("CANCELED", "COMPLETED"), trial.state
    # Cancel lets the trial stop gracefully: it saw the preemption and saved its progress.
    logs = trial_logs(det, trial.id)
    stopped_at = int(re.findall(r"preempted at batch (\d+)", logs)[-1])
    assert max(c.metadata["steps_completed"] for c in trial.list_checkpoints()) == stopped_at


@pytest.mark.slow
def test_kill_stops_a_running_experiment(master: Master, agent: Agent, det: DetCli, tmp_path: Path) -> None:
    exp, trial = start_long(det, master, tmp_path)
    det.ok("experiment", "kill", str(exp.id))
    wait_state(exp, {ExpState.CANCELED}, timeout=30)
    trial.reload()
    assert trial.state.name == "CANCELED", trial.state
    # Nothing keeps training after a kill.
    reported = len(metrics(trial, "training"))
    time.sleep(2)  # asserting an absence: nothing to poll for
    assert len(metrics(trial, "training")) == reported
