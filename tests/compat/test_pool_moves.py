"""Moving jobs between resource pools and `preemption_timeout`, with the unchanged upstream 0.38.1
CLI and the real harness on artificial slots (the pools of `test_resource_pools.py`: `urgent`,
priority with preemption, and `shared`, fair share; one 1-slot agent in each):
- `det job update JOB --resource-pool shared` on a queued experiment: it leaves the full pool,
  runs in the other one and completes while the job it waited behind still holds its slot;
- the same on a running trial (as upstream's `ChangeRP`): it checkpoints through the preemption
  signal, resumes from that checkpoint on the other pool's agent, no restart counted, its
  metrics continuous;
- a preempted trial whose code ignores the preemption signal is killed at its
  `preemption_timeout`, the allocation says so, and it resumes from its latest checkpoint later
  without counting a restart (with `max_restarts: 0`, a counted failure would end it in error)."""

import contextlib
import re
import time
from pathlib import Path
from typing import Iterator, Optional, Tuple

import pytest
from determined.common.api import bindings
from determined.experimental import client

from conftest import DetCli, Master
from experiments import IRIS, ExpState, create, only_trial, restarts, sdk, trial_logs, wait_for, wait_state, write_config
# `pools_master` and `pools_det` are that module's fixtures: this module gets a master of its own with the same pools.
from test_resource_pools import LONG, pools_det, pools_master, running_trials, start_agent, training_steps  # noqa: F401

pytestmark = [pytest.mark.experiments, pytest.mark.slow]

# Trials long enough to watch where they run: 10 ms a batch, 6 s of training.
SHORT = {
    "hyperparameters": {"sleep_per_batch": 0.01},
    "searcher": {"max_length": {"batches": 600}},
    "min_validation_period": {"batches": 100},
    "scheduling_unit": 20,
}


@contextlib.contextmanager
def one_slot_agents(master: Master, workdir: Path, test: str, *pools: str) -> Iterator[None]:
    """A 1-slot agent in each pool, with an id of this test's (`POOL-TEST`), stopped after it."""
    agents = [start_agent(master, workdir / pool, 1, pool, f"{pool}-{test}") for pool in pools]
    try:
        yield
    finally:
        for agent in agents:
            agent.stop()


def kill(det: DetCli, exp: client.Experiment) -> None:
    det.ok("experiment", "kill", str(exp.id))
    wait_state(exp, {ExpState.CANCELED}, timeout=90)


def job_id(master: Master, experiment_id: int) -> str:
    return bindings.get_GetExperiment(sdk(master)._session, experimentId=experiment_id).experiment.jobId


def stored_pool(master: Master, experiment_id: int) -> str:
    return bindings.get_GetExperiment(sdk(master)._session, experimentId=experiment_id).config["resources"]["resource_pool"]


def task_id(master: Master, trial_id: int) -> str:
    return bindings.get_GetTrial(sdk(master)._session, trialId=trial_id).trial.taskId


def running_in(master: Master, trial_id: int) -> Optional[Tuple[str, Tuple[str, ...]]]:
    """The pool and agents of the trial's live allocation (`GET /api/v1/tasks`), if it has one."""
    task = task_id(master, trial_id)
    summaries = bindings.get_GetTasks(sdk(master)._session).allocationIdToSummary or {}
    for summary in summaries.values():
        if summary.taskId == task and summary.resources:
            agents = tuple(sorted(agent for r in summary.resources for agent in (r.agentDevices or {})))
            return summary.resourcePool or "", agents
    return None


def job_list(det: DetCli, pool: str) -> str:
    return det.ok("job", "list", "--resource-pool", pool)


def test_a_queued_experiment_moved_to_another_pool_runs_there(pools_master: Master, pools_det: DetCli, tmp_path: Path) -> None:
    det, master = pools_det, pools_master
    with one_slot_agents(master, tmp_path, "queued", "urgent", "shared"):
        d = sdk(master)
        blocker_config = write_config(IRIS / "const.yaml", tmp_path / "blocker.yaml", tmp_path / "ckpt", name="blocker", **LONG)
        blocker = d.get_experiment(create(det, blocker_config, IRIS))
        wait_for("the blocker on urgent's only slot", lambda: running_trials(master, blocker.id) == 1, timeout=120, interval=1)

        moved_config = write_config(IRIS / "const.yaml", tmp_path / "moved.yaml", tmp_path / "ckpt", name="moved", **SHORT)
        moved = d.get_experiment(create(det, moved_config, IRIS))
        wait_for(
            "the experiment queued behind the blocker (upstream `det job list`)",
            lambda: re.search(rf"moved \({moved.id}\).*STATE_QUEUED", job_list(det, "urgent")),
            timeout=60,
        )
        det.ok("job", "update", job_id(master, moved.id), "--resource-pool", "shared")

        trial = only_trial(moved)
        where = wait_for("the moved trial running", lambda: running_in(master, trial.id), timeout=120, interval=0.5)
        assert where == ("shared", ("shared-queued",)), where
        assert stored_pool(master, moved.id) == "shared", "the experiment's config names its new pool"
        wait_state(moved, {ExpState.COMPLETED}, timeout=180)
        assert running_trials(master, blocker.id) == 1, "the blocker kept urgent's slot throughout"
        assert restarts(d, trial.id) == 0
        assert f"moved ({moved.id})" not in job_list(det, "urgent")
        kill(det, blocker)


def test_a_running_trial_moved_to_another_pool_checkpoints_and_resumes_there(
    pools_master: Master, pools_det: DetCli, tmp_path: Path
) -> None:
    det, master = pools_det, pools_master
    with one_slot_agents(master, tmp_path, "running", "urgent", "shared"):
        d = sdk(master)
        config = write_config(IRIS / "const.yaml", tmp_path / "mover.yaml", tmp_path / "ckpt", name="mover", **LONG)
        exp = d.get_experiment(create(det, config, IRIS))
        trial = only_trial(exp)
        wait_for("a checkpoint of the trial", lambda: trial.list_checkpoints(), timeout=120)
        assert running_in(master, trial.id) == ("urgent", ("urgent-running",))

        det.ok("job", "update", job_id(master, exp.id), "--resource-pool", "shared")
        # As upstream: the running trial is told to stop gracefully, checkpoints and exits ...
        wait_for("the trial's preemption", lambda: "preempted at batch" in trial_logs(det, trial.id), timeout=90)
        preempted_at = int(re.findall(r"preempted at batch (\d+)", trial_logs(det, trial.id))[-1])
        assert max(c.metadata["steps_completed"] for c in trial.list_checkpoints()) == preempted_at
        # ... and resumes from that checkpoint in the other pool.
        wait_for(
            f"the trial to resume from its batch-{preempted_at} checkpoint",
            lambda: re.search(rf"resumed from checkpoint \S+ at batch {preempted_at}\b", trial_logs(det, trial.id)),
            timeout=120,
            interval=1,
        )
        where = wait_for("the resumed trial running", lambda: running_in(master, trial.id), timeout=60)
        assert where == ("shared", ("shared-running",)), where
        assert stored_pool(master, exp.id) == "shared"
        wait_for("training after the resume", lambda: max(training_steps(trial), default=0) > preempted_at + 40, timeout=90)
        assert restarts(d, trial.id) == 0, "a move is not a failure"
        steps = training_steps(trial)
        assert steps == list(range(20, steps[-1] + 1, 20)), f"metrics are continuous, each step once: {steps}"
        kill(det, exp)


def test_a_trial_ignoring_preemption_is_killed_at_preemption_timeout_and_resumes(
    pools_master: Master, pools_det: DetCli, tmp_path: Path
) -> None:
    det, master = pools_det, pools_master
    with one_slot_agents(master, tmp_path, "timeout", "urgent"):
        d = sdk(master)
        stubborn_config = write_config(
            IRIS / "const.yaml",
            tmp_path / "stubborn.yaml",
            tmp_path / "ckpt",
            name="stubborn",
            resources={"priority": 50},
            preemption_timeout=8,
            max_restarts=0,
            **{**LONG, "hyperparameters": {"sleep_per_batch": 0.01, "ignore_preemption": True}},
        )
        stubborn = d.get_experiment(create(det, stubborn_config, IRIS))
        victim = only_trial(stubborn)
        wait_for("a checkpoint of the stubborn trial", lambda: victim.list_checkpoints(), timeout=120)

        high_config = write_config(
            IRIS / "const.yaml", tmp_path / "high.yaml", tmp_path / "ckpt", name="high", resources={"priority": 10}, **SHORT
        )
        high = d.get_experiment(create(det, high_config, IRIS))
        created = time.monotonic()
        high_trial = only_trial(high)
        wait_for("the high-priority trial running", lambda: running_in(master, high_trial.id), timeout=120, interval=0.25)
        waited = time.monotonic() - created
        assert waited >= 7, f"the victim held the slot until its preemption_timeout (8 s), not {waited:.1f} s"
        assert "preempted at batch" not in trial_logs(det, victim.id), "the victim never looked at the signal"

        # The first run's allocation was killed by the master at the deadline, and says so.
        def exit_reasons() -> str:
            allocations = bindings.get_GetTask(d._session, taskId=task_id(master, victim.id)).task.allocations or []
            return " | ".join(a.exitReason or "" for a in allocations)

        wait_for("the killed allocation's exit reason", lambda: "preemption_timeout (8 s)" in exit_reasons() or None, timeout=30)
        wait_state(high, {ExpState.COMPLETED}, timeout=180)

        # It resumes from its latest checkpoint, restarts untouched, and trains on.
        logs = wait_for(
            "the stubborn trial to resume",
            lambda: (lambda text: text if "resumed from checkpoint" in text else None)(trial_logs(det, victim.id)),
            timeout=120,
            interval=1,
        )
        resumed_at = int(re.findall(r"resumed from checkpoint \S+ at batch (\d+)", logs)[-1])
        assert resumed_at in {c.metadata["steps_completed"] for c in victim.list_checkpoints()}
        wait_for("training after the resume", lambda: max(training_steps(victim), default=0) > resumed_at + 40, timeout=90)
        assert restarts(d, victim.id) == 0, "a kill at the preemption deadline is not a failure"
        state = bindings.get_GetExperiment(d._session, experimentId=stubborn.id).experiment.state
        assert state in {bindings.experimentv1State.ACTIVE, bindings.experimentv1State.RUNNING}, f"still active, not in error: {state}"
        kill(det, stubborn)
