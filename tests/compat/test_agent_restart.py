"""An agent killed with SIGKILL and started again with the same configuration takes over the task
processes it left running: the trial goes on in the same process, run and allocation (no
restart), every metric is stored once, the lines it printed while the agent was down arrive once
each, and a command that exited while the agent was down is reported with its real exit code."""

import signal
import time
from pathlib import Path

from determined.common.api import bindings
from determined.experimental import client

from conftest import Agent, DetCli, Master
from experiments import create, metrics, only_trial, restarts, sdk, wait_for, wait_state
from test_agent_link import PID_PREFIX, alive, core_experiment

ExpState = client.ExperimentState

# Prints a numbered line before each report; from step 4 on only once GO_FILE exists, so the agent
# can be killed after step 3 and steps 4.. happen while it is down.
OUTAGE_TRIAL = """
import os, time
import determined as det

with det.core.init() as core:
    for step in range(1, 11):
        if step == 4:
            while not os.path.exists(os.environ["GO_FILE"]):
                time.sleep(0.05)
        print(f"outage-line {step}", flush=True)
        core.train.report_training_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
        if step >= 7:
            time.sleep(0.3)
"""


def test_a_restarted_agent_takes_over_its_running_trial_and_an_exited_command(tmp_path: Path, isolated_client_config: Path) -> None:
    master = Master(tmp_path / "master")
    det = DetCli(master.url, isolated_client_config)
    agent_dir, work_root = tmp_path / "agent", tmp_path / "agent" / "work"
    args = ["--agent-id", "restarting", "--work-root", str(work_root)]
    agent = Agent(master, agent_dir, slots=2, extra_args=args)
    try:
        agent.wait_registered(master)
        go, pids, command_pid, command_go = tmp_path / "go", tmp_path / "pids", tmp_path / "command.pid", tmp_path / "command.go"
        config, model = core_experiment(tmp_path, PID_PREFIX + OUTAGE_TRIAL, env=[f"GO_FILE={go}", f"PIDS_FILE={pids}"])
        d = sdk(master)
        exp = d.get_experiment(create(det, config, model))
        trial = only_trial(exp)
        det.ok("cmd", "run", "-d", f"echo $$ > {command_pid}; while [ ! -e {command_go} ]; do sleep 0.05; done; exit 7")
        wait_for("the trial's third report", lambda: len(metrics(trial, "training")) >= 3, 120)
        wait_for("the command's process", lambda: command_pid.exists() and command_pid.read_text().strip(), 60)
        first, sleeper = int(pids.read_text().split()[0]), int(command_pid.read_text())
        session = client.Determined(master=master.url, user="admin", password="")._session
        command_id = bindings.get_GetCommands(session).commands[0].id

        agent.proc.kill()
        agent.proc.wait()
        # Both tasks outlive the agent; the trial goes on (its reports go to the master directly),
        # printing lines nobody reads yet, and the command exits with 7.
        assert alive(first) and alive(sleeper)
        go.write_text("")
        command_go.write_text("")
        wait_for("the trial to report while its agent is down", lambda: len(metrics(trial, "training")) >= 6, 60, 0.1)
        wait_for("the command to exit while its agent is down", lambda: not alive(sleeper), 30, 0.05)

        restarted = time.monotonic()
        agent = Agent(master, agent_dir, slots=2, extra_args=args)

        def outage_lines_arrived() -> bool:
            return any("outage-line 6" in log for log in d.get_trial(trial.id).iter_logs())

        wait_for("the lines printed during the outage", outage_lines_arrived, 60, 0.05)
        print(f"agent restart: lines printed during the outage stored {time.monotonic() - restarted:.2f} s after the agent restarted")
        assert wait_state(exp, {ExpState.COMPLETED}, 120) == ExpState.COMPLETED

        # The same process, run and allocation; every report once.
        assert pids.read_text().split() == [str(first)], "the trial ran in a second process"
        assert restarts(d, trial.id) == 0
        steps = sorted(m.steps_completed for m in metrics(trial, "training"))
        assert steps == list(range(1, 11)), steps
        assert {m.trial_run_id for m in metrics(trial, "training")} == {1}
        task_id = bindings.get_GetTrial(session, trialId=trial.id).trial.taskId
        allocations = bindings.get_GetTask(session, taskId=task_id).task.allocations
        assert len(allocations) == 1, [a.allocationId for a in allocations]
        # Every line once: those sent before the kill are not sent again, none is lost.
        messages = [log for log in d.get_trial(trial.id).iter_logs()]
        for step in range(1, 11):
            count = sum(m.rstrip().endswith(f"outage-line {step}") for m in messages)
            assert count == 1, f"line {step} arrived {count} times:\n" + "".join(messages)

        # The command that ended while no agent watched it ended with its own exit code.
        def command_status() -> str:
            command = bindings.get_GetCommand(session, commandId=command_id).command
            return command.exitStatus or "" if command.state == bindings.taskv1State.TERMINATED else ""

        status = wait_for("the command's end", command_status, 60)
        assert "exit code 7" in status, status
        assert "agent restarting was lost" not in master.log_path.read_text()
    finally:
        agent.stop()
        master.close()


def test_an_agent_started_again_while_its_old_session_looks_open_replaces_it(tmp_path: Path, isolated_client_config: Path) -> None:
    master = Master(tmp_path / "master")
    det = DetCli(master.url, isolated_client_config)
    agent_dir = tmp_path / "agent"
    args = ["--agent-id", "frozen", "--work-root", str(agent_dir / "work")]
    old = Agent(master, agent_dir, slots=1, extra_args=args)
    new = None
    try:
        old.wait_registered(master)
        command_pid = tmp_path / "command.pid"
        det.ok("cmd", "run", "-d", f"echo $$ > {command_pid}; exec sleep 600")
        wait_for("the command's process", lambda: command_pid.exists() and command_pid.read_text().strip(), 60)
        sleeper = int(command_pid.read_text())
        session = client.Determined(master=master.url, user="admin", password="")._session
        command_id = bindings.get_GetCommands(session).commands[0].id

        # Frozen, the old agent keeps its connection open (as a hung process or a cut-off host
        # would) while a new agent process starts on the same host and work root.
        old.proc.send_signal(signal.SIGSTOP)
        new = Agent(master, agent_dir, slots=1, extra_args=args)
        wait_for("the new session", lambda: master.log_path.read_text().count("agent connected agent=frozen") >= 2, 30, 0.1)
        wait_for("the new agent to take the command over", lambda: "took over container" in new.log_path.read_text(), 30, 0.1)
        old.proc.kill()
        old.proc.wait()
        assert new.proc.poll() is None, new.log_tail()
        assert "already connected" not in new.log_path.read_text()

        # The command is the new agent's: a kill reaches its process.
        assert alive(sleeper)
        det.ok("cmd", "kill", command_id)
        wait_for("the command's process to be killed", lambda: not alive(sleeper), 30, 0.1)
        state = lambda: bindings.get_GetCommand(session, commandId=command_id).command.state  # noqa: E731
        wait_for("the command to end", lambda: state() == bindings.taskv1State.TERMINATED, 30, 0.2)
    finally:
        if old.proc.poll() is None:
            old.proc.kill()
            old.proc.wait()
        if new is not None:
            new.stop()
        master.close()
