"""Resource pools from master.yaml with the real harness on artificial slots: the upstream SDK's
`GET /api/v1/resource-pools`, an experiment naming an unknown pool refused by the upstream CLI,
priority preemption (a low-priority trial holding the only slot checkpoints through the
preemption signal, waits while a high-priority one runs, then resumes from that checkpoint with
no restart counted and its metrics continuous), and fair share by weight."""

import re
from pathlib import Path
from typing import Dict, List

import pytest
from determined.common.api import bindings

from conftest import Agent, DetCli, Master
from experiments import IRIS, ExpState, create, metrics, only_trial, restarts, sdk, trial_logs, wait_for, wait_state, write_config

pytestmark = pytest.mark.experiments

MASTER_YAML = """
resource_manager:
  default_compute_resource_pool: urgent
  default_aux_resource_pool: urgent
resource_pools:
  - pool_name: urgent
    description: priority with preemption
    scheduler: {type: priority, preemption: true, default_priority: 40}
  - pool_name: shared
    scheduler: {type: fair_share}
"""

# Long-running iris trials: 10 ms a batch, checkpointing every 100 batches, metrics every 20.
LONG = {
    "hyperparameters": {"sleep_per_batch": 0.01},
    "searcher": {"max_length": {"batches": 100_000}},
    "min_validation_period": {"batches": 100},
    "scheduling_unit": 20,
}


@pytest.fixture(scope="module")
def pools_master(tmp_path_factory: pytest.TempPathFactory):
    m = Master(tmp_path_factory.mktemp("pools-master"), config_yaml=MASTER_YAML)
    yield m
    m.close()


@pytest.fixture
def pools_det(pools_master: Master, isolated_client_config: Path) -> DetCli:
    return DetCli(pools_master.url, isolated_client_config)


def start_agent(master: Master, workdir: Path, slots: int, pool: str, agent_id: str = "") -> Agent:
    # Its own id: the previous test's agent may still wait out its reconnect window.
    agent = Agent(master, workdir, slots=slots, extra_args=["--resource-pool", pool, "--agent-id", agent_id or f"agent-{pool}"])
    agent.wait_registered(master)
    return agent


def pools_by_name(master: Master) -> Dict[str, bindings.v1ResourcePool]:
    pools = bindings.get_GetResourcePools(sdk(master)._session).resourcePools or []
    return {p.name: p for p in pools}


def test_pools_are_listed_and_unknown_pools_refused(pools_master: Master, pools_det: DetCli, tmp_path: Path) -> None:
    pools = pools_by_name(pools_master)
    assert sorted(pools) == ["shared", "urgent"]
    urgent, shared = pools["urgent"], pools["shared"]
    assert urgent.schedulerType == bindings.v1SchedulerType.PRIORITY
    assert urgent.details.priorityScheduler is not None
    assert (urgent.details.priorityScheduler.preemption, urgent.details.priorityScheduler.defaultPriority) == (True, 40)
    assert urgent.defaultComputePool and urgent.defaultAuxPool and not shared.defaultComputePool
    assert shared.schedulerType == bindings.v1SchedulerType.FAIR_SHARE
    assert urgent.type == bindings.v1ResourcePoolType.STATIC

    config = write_config(IRIS / "const.yaml", tmp_path / "tpu.yaml", tmp_path / "ckpt", resources={"resource_pool": "tpu"})
    out = pools_det.fails("experiment", "create", str(config), str(IRIS))
    assert "tpu" in out and "urgent, shared" in out, out

    # Our CLI lists them (upstream's has no listing).
    ours = pools_det.ours("resource-pool", "list")
    assert ours.returncode == 0, ours.stderr
    assert re.search(r"urgent .*priority with preemption .*priority .*True .*40", ours.stdout), ours.stdout
    assert re.search(r"shared .*fair_share", ours.stdout), ours.stdout

    # `det master config` (upstream CLI) shows the pools as configured.
    pools_det.login("admin")
    shown = pools_det.ok("master", "config", "--json")
    assert '"pool_name": "shared"' in shown and '"default_priority": 40' in shown, shown


def training_steps(trial) -> List[int]:
    return [m.steps_completed for m in metrics(trial, "training")]


@pytest.mark.slow
def test_priority_preemption_checkpoints_and_resumes_without_a_restart(
    pools_master: Master, pools_det: DetCli, tmp_path: Path
) -> None:
    agent = start_agent(pools_master, tmp_path / "agent", slots=1, pool="urgent")
    try:
        d = sdk(pools_master)
        low_config = write_config(
            IRIS / "const.yaml", tmp_path / "low.yaml", tmp_path / "ckpt", name="low", resources={"priority": 50}, **LONG
        )
        low = d.get_experiment(create(pools_det, low_config, IRIS))
        victim = only_trial(low)
        wait_for("a checkpoint of the low-priority trial", lambda: victim.list_checkpoints(), timeout=120)

        high_config = write_config(
            IRIS / "const.yaml",
            tmp_path / "high.yaml",
            tmp_path / "ckpt",
            name="high",
            resources={"priority": 10},
            searcher={"max_length": {"batches": 200}},
            min_validation_period={"batches": 100},
        )
        high = d.get_experiment(create(pools_det, high_config, IRIS))
        # The low-priority trial sees the preemption signal, checkpoints and exits.
        wait_for("the low-priority trial's preemption", lambda: "preempted at batch" in trial_logs(pools_det, victim.id), 90)
        preempted_at = int(re.findall(r"preempted at batch (\d+)", trial_logs(pools_det, victim.id))[-1])
        assert max(c.metadata["steps_completed"] for c in victim.list_checkpoints()) == preempted_at
        wait_state(high, {ExpState.COMPLETED}, timeout=180)

        # Then it resumes from that checkpoint, on a new run, with no restart counted.
        wait_for(
            f"the low-priority trial to resume from its batch-{preempted_at} checkpoint",
            lambda: re.search(rf"resumed from checkpoint \S+ at batch {preempted_at}\b", trial_logs(pools_det, victim.id)),
            timeout=120,
            interval=1,
        )
        wait_for("training after the resume", lambda: max(training_steps(victim), default=0) > preempted_at + 40, timeout=90)
        assert restarts(d, victim.id) == 0
        steps = training_steps(victim)
        assert steps == list(range(20, steps[-1] + 1, 20)), f"metrics are continuous, each step once: {steps}"
        pools_det.ok("experiment", "kill", str(low.id))
        wait_state(low, {ExpState.CANCELED}, timeout=60)
    finally:
        agent.stop()


def running_trials(master: Master, experiment_id: int) -> int:
    trials = bindings.get_GetExperimentTrials(sdk(master)._session, experimentId=experiment_id).trials or []
    return sum(1 for t in trials if t.state == bindings.trialv1State.RUNNING)


@pytest.mark.slow
def test_fair_share_divides_slots_by_weight(pools_master: Master, pools_det: DetCli, tmp_path: Path) -> None:
    agent = start_agent(pools_master, tmp_path / "agent", slots=4, pool="shared")
    try:
        d = sdk(pools_master)

        def search(name: str, weight: float) -> Path:
            return write_config(
                IRIS / "const.yaml",
                tmp_path / f"{name}.yaml",
                tmp_path / "ckpt",
                name=name,
                resources={"resource_pool": "shared", "weight": weight},
                **{**LONG, "searcher": {"name": "random", "max_trials": 4, "max_concurrent_trials": 4, "max_length": {"batches": 100_000}}},
            )

        light = d.get_experiment(create(pools_det, search("light", 1), IRIS))
        # Alone, the light search takes every slot.
        wait_for("the light search on all 4 slots", lambda: running_trials(pools_master, light.id) == 4, timeout=180, interval=1)
        heavy = d.get_experiment(create(pools_det, search("heavy", 3), IRIS))
        # With a search of weight 3 beside it, the light one is preempted down to 1 slot of 4.
        wait_for(
            "slots shared 1:3 by weight",
            lambda: (running_trials(pools_master, light.id), running_trials(pools_master, heavy.id)) == (1, 3),
            timeout=240,
            interval=1,
        )
        for exp in (light, heavy):
            for trial in exp.list_trials():
                assert restarts(d, trial.id) == 0, "preempted trials are not failures"
        for exp in (light, heavy):
            pools_det.ok("experiment", "kill", str(exp.id))
        for exp in (light, heavy):
            wait_state(exp, {ExpState.CANCELED}, timeout=90)
    finally:
        agent.stop()
