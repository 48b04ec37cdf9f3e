"""Log policies (`log_policies` in the experiment config) end to end with real trials: a log line
matching a `cancel_retries` policy makes the trial's failure final (ERROR, restarts 0, the log
names the policy); `exclude_node` keeps the restarted trial off the agent it failed on."""

from pathlib import Path

import pytest
from determined.common.api import bindings

from conftest import Agent, DetCli, Master
from experiments import IRIS, ExpState, create, only_trial, restarts, sdk, trial_logs, wait_for, wait_state, write_config

pytestmark = pytest.mark.experiments

# examples/iris/crash.yaml fails once at batch 150, logging this line just before.
CRASH_LINE = "simulated failure of the first run"


def test_cancel_retries_ends_the_trial_on_its_first_failure(master: Master, agent: Agent, det: DetCli, tmp_path: Path) -> None:
    config = write_config(
        IRIS / "crash.yaml",
        tmp_path / "crash.yaml",
        tmp_path / "checkpoints",
        max_restarts=3,
        log_policies=[
            {"name": "simulated crash", "pattern": CRASH_LINE, "action": {"type": "cancel_retries"}},
            # The legacy form and a policy without an action are accepted alongside.
            {"pattern": "never printed by the trial", "action": "exclude_node"},
            {"name": "label only", "pattern": "nothing"},
        ],
    )
    d = sdk(master)
    exp = d.get_experiment(create(det, config, IRIS))
    wait_state(exp, {ExpState.ERROR}, timeout=180)
    trial = only_trial(exp)
    trial.reload()
    assert trial.state.name == "ERROR"
    # max_restarts (3) was not used.
    assert restarts(d, trial.id) == 0
    logs = trial_logs(det, trial.id)
    assert CRASH_LINE in logs, logs[-3000:]
    assert 'log policy "simulated crash" (pattern `simulated failure of the first run`) matched: cancel_retries' in logs, logs[-3000:]
    assert logs.count("starting from scratch") == 1, logs[-3000:]
    # The stored config keeps every policy, in the current form.
    stored = bindings.get_GetExperiment(d._session, experimentId=exp.id).experiment.config["log_policies"]
    assert stored[1] == {"pattern": "never printed by the trial", "action": {"type": "exclude_node"}}, stored


def test_without_a_policy_the_same_trial_restarts(master: Master, agent: Agent, det: DetCli, tmp_path: Path) -> None:
    """The control: a policy whose pattern is only in the config (which the harness logs when it
    starts) changes nothing."""
    config = write_config(
        IRIS / "crash.yaml",
        tmp_path / "crash.yaml",
        tmp_path / "checkpoints",
        log_policies=[{"pattern": "this text is never logged", "action": {"type": "cancel_retries"}}],
    )
    d = sdk(master)
    exp = d.get_experiment(create(det, config, IRIS))
    wait_state(exp, {ExpState.COMPLETED}, timeout=180)
    assert restarts(d, only_trial(exp).id) == 1


def test_exclude_node_restarts_the_trial_on_another_agent(fresh_master: Master, isolated_client_config: Path, tmp_path: Path) -> None:
    det = DetCli(fresh_master.url, isolated_client_config)
    first = Agent(fresh_master, tmp_path / "agent-a", extra_args=["--agent-id", "logpolicy-a"])
    second = None
    try:
        first.wait_registered(fresh_master)
        config = write_config(
            IRIS / "crash.yaml",
            tmp_path / "crash.yaml",
            tmp_path / "checkpoints",
            log_policies=[{"name": "bad node", "pattern": CRASH_LINE, "action": {"type": "exclude_node"}}],
        )
        d = sdk(fresh_master)
        exp = d.get_experiment(create(det, config, IRIS))
        trial = only_trial(exp)
        fired = "log policy \"bad node\" (pattern `simulated failure of the first run`) matched: exclude_node, the trial's next runs will not be placed on logpolicy-a"
        wait_for("the exclude_node line in the trial's log", lambda: fired in trial_logs(det, trial.id), timeout=180)

        # The only agent is excluded: the restarted trial waits in the queue, saying why.
        def queued_restart():
            t = bindings.get_GetTrial(d._session, trialId=trial.id).trial
            return t.restarts == 1 and t.state == bindings.trialv1State.QUEUED
        wait_for("the restarted trial to wait for another agent", queued_restart, timeout=60)

        # A second agent takes it; the first stays excluded (it has free slots all along).
        second = Agent(fresh_master, tmp_path / "agent-b", extra_args=["--agent-id", "logpolicy-b"])
        wait_state(exp, {ExpState.COMPLETED}, timeout=180)
        logs = trial_logs(det, trial.id)
        assert "resumed from checkpoint" in logs, logs[-3000:]
    finally:
        first.stop()
        if second is not None:
            second.stop()
