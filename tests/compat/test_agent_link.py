"""The link between the master and its agents, with the real `det agent run`: agents join only
with the cluster's secret, an agent outlives a master it cannot reach (its task keeps running and
finishes normally), it finds a restarted master by itself, and a model definition larger than
one websocket message reaches the agent intact."""

import hashlib
import os
import socket
import threading
from pathlib import Path
from typing import List, Optional, Tuple

from determined.experimental import client

from conftest import Agent, DetCli, Master
from experiments import create, metrics, only_trial, sdk, trial_logs, wait_for, wait_state

ExpState = client.ExperimentState

# A Core API trial: reports step 1, prints while it waits for the file `go` (named in the
# environment), then reports step 2 and exits.
WAITING_TRIAL = """
import os, sys, time
import determined as det

with det.core.init() as core:
    core.train.report_training_metrics(steps_completed=1, metrics={"loss": 1.0})
    print("before the outage", flush=True)
    i = 0
    while not os.path.exists(os.environ["GO_FILE"]):
        print(f"waiting {i}", flush=True)
        i += 1
        time.sleep(0.1)
    core.train.report_training_metrics(steps_completed=2, metrics={"loss": 0.5})
    print("after the outage", flush=True)
"""

# Records the trial process's pid in the file named by PIDS_FILE.
PID_PREFIX = """
import os
with open(os.environ["PIDS_FILE"], "a") as f:
    f.write(f"{os.getpid()}\\n")
"""

# A Core API trial that checks the big file of its model definition against the digest beside it.
CHECKSUM_TRIAL = """
import hashlib, sys
import determined as det

want = open("big.sha256").read().strip()
got = hashlib.sha256(open("big.bin", "rb").read()).hexdigest()
print(f"big.bin sha256 {got}", flush=True)
with det.core.init() as core:
    core.train.report_training_metrics(steps_completed=1, metrics={"intact": float(got == want)})
sys.exit(0 if got == want else 3)
"""


class Relay:
    """A TCP relay from a loopback port to the master: the agent's only way to it. `cut()` drops
    every relayed connection and turns new ones away (counted) until `restore()`."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.is_cut = False
        self.turned_away = 0
        self.links: List[Tuple[socket.socket, socket.socket]] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                if self.is_cut:
                    self.turned_away += 1
                    conn.close()
                    continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                conn.close()
                continue
            with self.lock:
                self.links.append((conn, upstream))
            threading.Thread(target=self._pump, args=(conn, upstream), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, conn), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> None:
        with self.lock:
            self.is_cut = True
            links, self.links = self.links, []
        for pair in links:
            for s in pair:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def restore(self) -> None:
        with self.lock:
            self.is_cut = False

    def close(self) -> None:
        self.cut()
        self.listener.close()


def core_experiment(tmp_path: Path, script: str, extra_files: Optional[dict] = None, env: Optional[List[str]] = None) -> Tuple[Path, Path]:
    model = tmp_path / "model"
    model.mkdir()
    (model / "train.py").write_text(script)
    for name, content in (extra_files or {}).items():
        path = model / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    config = tmp_path / "config.yaml"
    env_lines = "".join(f"    - {e}\n" for e in (env or []))
    config.write_text(
        "name: agent-link\n"
        "entrypoint: python3 train.py\n"
        "searcher: {name: single, metric: loss, max_length: {batches: 2}}\n"
        "max_restarts: 0\n"
        "resources: {slots_per_trial: 1}\n"
        + ("environment:\n  environment_variables:\n" + env_lines if env_lines else "")
    )
    return config, model


def test_agents_without_the_join_secret_are_refused_and_exit(master: Master, tmp_path: Path) -> None:
    for name, secret, reason in [
        ("none", None, "requires the cluster's agent join secret"),
        ("wrong", "not-the-secret", "the agent join secret is wrong"),
    ]:
        rogue = Agent(master, tmp_path / name, secret=secret, extra_args=["--agent-id", f"rogue-{name}"])
        # Not transient: the agent stops at once instead of retrying.
        code = rogue.proc.wait(timeout=30)
        log = rogue.log_tail()
        assert code != 0, log
        assert "the master refused this agent" in log and reason in log, log
        assert master.agent_secret not in rogue.log_path.read_text(), "the secret is never logged"
        assert log.count("cannot connect to the master") == 0, log


def test_agent_outlives_an_unreachable_master_and_its_task_finishes(
    fresh_master: Master, isolated_client_config: Path, tmp_path: Path
) -> None:
    master = fresh_master
    det = DetCli(master.url, isolated_client_config)
    relay = Relay(master.port)
    # A fixed 0.2 s backoff: with the old fixed bound of 5 attempts the agent gave up after ~1 s.
    agent = Agent(master, tmp_path / "agent", slots=1, port=relay.port, extra_args=["--agent-reconnect-backoff", "0.2"])
    try:
        agent.wait_registered(master)
        go = tmp_path / "go"
        # The trial reaches the master directly; only the agent's link goes through the relay.
        direct = [
            f"DET_MASTER={master.url}",
            f"DET_MASTER_ADDR={master.url}",
            "DET_MASTER_HOST=127.0.0.1",
            f"DET_MASTER_PORT={master.port}",
            f"GO_FILE={go}",
        ]
        config, model = core_experiment(tmp_path, WAITING_TRIAL, env=direct)
        exp = sdk(master).get_experiment(create(det, config, model))
        trial = only_trial(exp)
        wait_for("the trial's first report", lambda: len(metrics(trial, "training")) >= 1, 120)

        relay.cut()
        # Well past the old give-up window (5 attempts), the agent is still alive and trying.
        wait_for("the agent to keep retrying", lambda: relay.turned_away >= 12 or agent.proc.poll() is not None, 60, 0.1)
        assert agent.proc.poll() is None, f"the agent gave up:\n{agent.log_tail()}"
        # The task was not killed: it finishes while the agent is cut off.
        go.write_text("")
        wait_for("the trial's second report", lambda: len(metrics(trial, "training")) >= 2, 60)
        seen = relay.turned_away
        wait_for("the agent to keep retrying", lambda: relay.turned_away >= seen + 3, 30, 0.1)
        assert agent.proc.poll() is None, agent.log_tail()

        relay.restore()
        # Back on the link, the agent reports the exit and the lines it buffered meanwhile.
        assert wait_state(exp, {ExpState.COMPLETED}, 120) == ExpState.COMPLETED
        logs = trial_logs(det, trial.id)
        for line in ("before the outage", "waiting 0", "after the outage"):
            assert line in logs, logs
        steps = sorted(m.steps_completed for m in metrics(trial, "training"))
        assert steps == [1, 2], steps
        assert agent.proc.poll() is None, agent.log_tail()
        assert "reconnecting (tasks keep running)" in agent.log_path.read_text()
    finally:
        agent.stop()
        relay.close()


def test_agent_finds_a_restarted_master_by_itself(isolated_client_config: Path, tmp_path: Path) -> None:
    # Reattachment off: the restarted master ends what the old one ran (test_fault_tolerance.py
    # has the default, where it reattaches them).
    master = Master(tmp_path / "master", config_yaml="agent_reattach_wait: 0\n")
    det = DetCli(master.url, isolated_client_config)
    agent = Agent(master, tmp_path / "agent", slots=2)
    try:
        agent.wait_registered(master)
        go, pids, command_pid = tmp_path / "go", tmp_path / "pids", tmp_path / "command.pid"
        config, model = core_experiment(
            tmp_path, PID_PREFIX + WAITING_TRIAL, env=[f"GO_FILE={go}", f"PIDS_FILE={pids}"]
        )
        exp = sdk(master).get_experiment(create(det, config, model))
        wait_for("the trial's first process", lambda: pids.exists() and pids.read_text().split(), 120)
        first = int(pids.read_text().split()[0])
        # A process that never calls the master, so only a kill ends it.
        det.ok("cmd", "run", "-d", f"echo $$ > {command_pid}; exec sleep 600")
        wait_for("the command's process", lambda: command_pid.exists() and command_pid.read_text().strip(), 60)
        sleeper = int(command_pid.read_text())

        # Killed outright, then started again on the same data and port.
        master.proc.kill()
        master.proc.wait()
        master.restart(same_port=True)
        # Nobody restarts the agent: it reconnects and registers with the new master process,
        # which owns no process of the old one: the agent is told to kill it, and the trial runs
        # again as a new run.
        agent.wait_registered(master, timeout=90)
        wait_for("the old processes to be killed", lambda: not alive(first) and not alive(sleeper), 60, 0.2)
        wait_for("the trial's second process", lambda: len(pids.read_text().split()) >= 2, 120)
        go.write_text("")
        assert wait_state(exp, {ExpState.COMPLETED}, 120) == ExpState.COMPLETED
        assert agent.proc.poll() is None, agent.log_tail()
    finally:
        agent.stop()
        master.close()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped) counts as gone.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False


def test_a_model_definition_over_the_message_limit_reaches_the_agent_intact(
    master: Master, agent: Agent, det: DetCli, tmp_path: Path
) -> None:
    # 20 MB that no compressor shrinks: the archive alone is over the agent's 16 MiB frame limit.
    big = os.urandom(20 * 1000 * 1000)
    digest = hashlib.sha256(big).hexdigest()
    config, model = core_experiment(tmp_path, CHECKSUM_TRIAL, {"big.bin": big, "big.sha256": digest + "\n"})
    exp = sdk(master).get_experiment(create(det, config, model, timeout=300))
    assert wait_state(exp, {ExpState.COMPLETED}, 300) == ExpState.COMPLETED
    trial = only_trial(exp)
    assert f"big.bin sha256 {digest}" in trial_logs(det, trial.id)
    assert [m.metrics["intact"] for m in metrics(trial, "training")] == [1.0]
    # The agent kept its connection: it is still registered and alive.
    assert agent.proc.poll() is None, agent.log_tail()
