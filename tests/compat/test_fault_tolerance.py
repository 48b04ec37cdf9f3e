"""Fault tolerance end to end, with the real `det agent run` and the upstream harness: a master
killed with SIGKILL mid-search comes back and reattaches the trials and commands its agents kept
running (same runs, no restart, every metric exactly once); with `agent_reattach_wait: 0` it ends
them instead; an agent cut off past `agent_reconnect_wait` loses its trial to another agent (a
new run from the checkpoint), and when it comes back its stale process is killed and its late
reports are refused (fencing by run)."""

import os
import time
from pathlib import Path
from typing import Dict, List

from determined.common.api import bindings
from determined.experimental import client

from conftest import Agent, DetCli, Master
from experiments import create, metrics, restarts, sdk, wait_for, wait_state
from test_agent_link import PID_PREFIX, WAITING_TRIAL, Relay, alive, core_experiment

ExpState = client.ExperimentState

# A Core API trial that follows its searcher operations, one training report per batch (slowly,
# so a master restart lands mid-training) and a validation at each operation's end. It appends
# "<trial id> <pid>" to PIDS_FILE when it starts, so a second process of a trial shows.
SEARCH_TRIAL = """
import os, time
import determined as det

info = det.get_cluster_info()
with open(os.environ["PIDS_FILE"], "a") as f:
    f.write(f"{info.trial.trial_id} {os.getpid()}\\n")
with det.core.init() as core:
    steps = 0
    for op in core.searcher.operations():
        while steps < op.length:
            steps += 1
            time.sleep(0.4)
            core.train.report_training_metrics(steps_completed=steps, metrics={"loss": 1.0 / steps})
            op.report_progress(steps)
        loss = 1.0 / steps + info.trial.trial_id * 1e-3
        core.train.report_validation_metrics(steps_completed=steps, metrics={"loss": loss})
        op.report_completed(loss)
"""


def search_experiment(tmp_path: Path, pids: Path) -> tuple:
    model = tmp_path / "model"
    model.mkdir()
    (model / "train.py").write_text(SEARCH_TRIAL)
    config = tmp_path / "config.yaml"
    config.write_text(
        "name: reattach\n"
        "entrypoint: python3 train.py\n"
        "searcher: {name: adaptive_asha, metric: loss, max_trials: 8, max_length: {batches: 24}, max_rungs: 2, divisor: 4}\n"
        "hyperparameters: {x: {type: double, minval: 0, maxval: 1}}\n"
        "max_restarts: 0\n"
        "resources: {slots_per_trial: 1}\n"
        f"environment:\n  environment_variables:\n    - PIDS_FILE={pids}\n"
    )
    return config, model


def trial_starts(pids: Path) -> Dict[int, List[int]]:
    starts: Dict[int, List[int]] = {}
    if pids.exists():
        for line in pids.read_text().split("\n"):
            if line.strip():
                trial_id, pid = line.split()
                starts.setdefault(int(trial_id), []).append(int(pid))
    return starts


def training_steps(d: client.Determined, trial_id: int) -> List[int]:
    return sorted(m.steps_completed for m in metrics(d.get_trial(trial_id), "training"))


def test_a_master_killed_mid_search_reattaches_every_trial(tmp_path: Path, isolated_client_config: Path) -> None:
    master = Master(tmp_path / "master", config_yaml="agent_reattach_wait: 120\n")
    det = DetCli(master.url, isolated_client_config)
    agent = Agent(master, tmp_path / "agent", slots=8)
    try:
        agent.wait_registered(master)
        pids = tmp_path / "pids"
        config, model = search_experiment(tmp_path, pids)
        d = sdk(master)
        exp = d.get_experiment(create(det, config, model))
        # Every trial is mid-training: it has reported and has batches left.
        wait_for("8 trials to report", lambda: len(trial_starts(pids)) == 8 and all(training_steps(d, t) for t in trial_starts(pids)), 240)
        running = {t: pids_[0] for t, pids_ in trial_starts(pids).items()}
        before = {t: len(training_steps(d, t)) for t in running}

        master.proc.kill()
        master.proc.wait()
        restarted = time.monotonic()
        master.restart(same_port=True)
        # The agent comes back by itself; every trial process that still runs goes on reporting.
        pending = {t for t, pid in running.items() if alive(pid)}

        def reporting_again() -> bool:
            for t in list(pending):
                if len(training_steps(d, t)) > before[t] or not alive(running[t]):
                    pending.discard(t)
            return not pending

        wait_for("every running trial to report again", reporting_again, 120, 0.1)
        print(f"reattach: all trials reporting again {time.monotonic() - restarted:.2f} s after the master restarted")
        assert wait_state(exp, {ExpState.COMPLETED}, 300) == ExpState.COMPLETED

        starts = trial_starts(pids)
        assert all(len(p) == 1 for p in starts.values()), f"a trial was started twice: {starts}"
        for trial_id in starts:
            steps = training_steps(d, trial_id)
            assert steps == list(range(1, len(steps) + 1)), f"trial {trial_id} lost or repeated a report: {steps}"
            assert restarts(d, trial_id) == 0
            runs = {m.trial_run_id for m in metrics(d.get_trial(trial_id), "training")}
            assert runs == {1}, f"trial {trial_id} moved to another run: {runs}"
        assert agent.proc.poll() is None, agent.log_tail()
        assert "reattached a running process" in master.log_path.read_text()
    finally:
        agent.stop()
        master.close()


def test_a_command_survives_a_master_kill_and_its_proxy_is_back(tmp_path: Path, isolated_client_config: Path) -> None:
    master = Master(tmp_path / "master")
    det = DetCli(master.url, isolated_client_config)
    agent = Agent(master, tmp_path / "agent", slots=2)
    try:
        agent.wait_registered(master)
        go, pids, command_pid = tmp_path / "go", tmp_path / "pids", tmp_path / "command.pid"
        config, model = core_experiment(tmp_path, PID_PREFIX + WAITING_TRIAL, env=[f"GO_FILE={go}", f"PIDS_FILE={pids}"])
        exp = sdk(master).get_experiment(create(det, config, model))
        wait_for("the trial's process", lambda: pids.exists() and pids.read_text().split(), 120)
        det.ok("cmd", "run", "-d", f"echo $$ > {command_pid}; exec sleep 600")
        wait_for("the command's process", lambda: command_pid.exists() and command_pid.read_text().strip(), 60)
        sleeper = int(command_pid.read_text())
        first = int(pids.read_text().split()[0])

        master.proc.kill()
        master.proc.wait()
        master.restart(same_port=True)
        agent.wait_registered(master, timeout=90)
        session = client.Determined(master=master.url, user="admin", password="")._session

        def command_running() -> bool:
            cmds = bindings.get_GetCommands(session).commands or []
            return any(c.state == bindings.taskv1State.RUNNING for c in cmds)

        wait_for("the command to be RUNNING again", command_running, 60)
        assert alive(first) and alive(sleeper)
        go.write_text("")
        assert wait_state(exp, {ExpState.COMPLETED}, 120) == ExpState.COMPLETED
        assert pids.read_text().split() == [str(first)], "the trial ran in a second process"
        assert restarts(sdk(master), next(iter(exp.list_trials())).id) == 0
        # The reattached command is the master's again: a kill reaches its process.
        cmd_id = bindings.get_GetCommands(session).commands[0].id
        det.ok("cmd", "kill", cmd_id)
        wait_for("the command's process to be killed", lambda: not alive(sleeper), 60, 0.2)
    finally:
        agent.stop()
        master.close()


def test_a_lost_agent_loses_its_trial_to_another_and_its_stale_process_is_fenced(tmp_path: Path, isolated_client_config: Path) -> None:
    master = Master(tmp_path / "master", config_yaml="agent_reconnect_wait: 2\n")
    det = DetCli(master.url, isolated_client_config)
    relay = Relay(master.port)
    lost = Agent(master, tmp_path / "lost", slots=1, port=relay.port, extra_args=["--agent-id", "lost"])
    other = None
    try:
        lost.wait_registered(master)
        go, pids = tmp_path / "go", tmp_path / "pids"
        config, model = core_experiment(tmp_path, PID_PREFIX + WAITING_TRIAL, env=[f"GO_FILE={go}", f"PIDS_FILE={pids}"])
        config.write_text(config.read_text().replace("max_restarts: 0", "max_restarts: 1"))
        d = sdk(master)
        exp = d.get_experiment(create(det, config, model))
        wait_for("the first process", lambda: pids.exists() and pids.read_text().split(), 120)
        stale = int(pids.read_text().split()[0])
        trial = next(iter(exp.list_trials()))
        wait_for("its first report", lambda: metrics(trial, "training"), 60)

        other = Agent(master, tmp_path / "other", slots=1, extra_args=["--agent-id", "other"])
        relay.cut()
        # Past agent_reconnect_wait the trial runs again elsewhere, from its checkpoint, as run 2.
        wait_for("the trial's second process", lambda: len(pids.read_text().split()) >= 2, 120)
        assert alive(stale), "the cut-off agent's process should still run (it is only unreachable)"
        go.write_text("")  # both processes now try to report step 2
        assert wait_state(exp, {ExpState.COMPLETED}, 120) == ExpState.COMPLETED

        relay.restore()
        # The stale process ends: refused (its token was revoked with its allocation) it may exit
        # by itself, and if it still runs when its agent is back the master has it killed
        # ("killing a process no allocation owns"). Either way its report never lands.
        wait_for("the stale process to end", lambda: not alive(stale), 120, 0.2)
        reports = [(m.trial_run_id, m.steps_completed) for m in metrics(trial, "training")]
        assert (1, 2) not in reports, f"the stale run wrote into the trial: {reports}"
        assert (2, 2) in reports, reports
        wait_for("the lost agent to be back", lambda: master.log_path.read_text().count("agent connected agent=lost") >= 2, 120)
        assert not alive(stale)
    finally:
        lost.stop()
        if other is not None:
            other.stop()
        relay.close()
        master.close()
