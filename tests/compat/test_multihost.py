"""Several hosts on one machine (tests/compat/netns.py): the harness itself, and agents on other
hosts — each in its own network namespace with its own address, reaching the master over the
bridge (never loopback) with the join secret — registering with their real addresses and running
trials whose processes reach the master at the address their agent used."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from determined.common.api import bindings

from conftest import DetCli, Master
from experiments import IRIS, ExpState, create, metrics, sdk, trial_logs, wait_for, wait_state, write_config
from netns import Network, heal, partition

LISTEN = (
    "import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1);"
    " s.bind(('0.0.0.0', 7777)); s.listen(8); print('listening', flush=True)\n"
    "while True:\n c,_=s.accept(); c.sendall(b'hello from '+sys.argv[1].encode()); c.close()"
)
DIAL = (
    "import socket,sys\n"
    "try:\n c=socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2); print(c.recv(100).decode())\n"
    "except OSError as e:\n print('unreachable', e); sys.exit(3)"
)


def dial(host, ip: str, port: int) -> subprocess.CompletedProcess:
    return host.run([sys.executable, "-c", DIAL, ip, str(port)], timeout=30)


def test_hosts_have_their_own_addresses_reach_each_other_and_partition(netns_network: Network) -> None:
    net = netns_network
    a, b = net.host("a"), net.host("b")
    assert a.ip != b.ip and a.ip.endswith(".11") and b.ip.endswith(".12")
    shown = a.run(["ip", "-4", "-o", "addr", "show", "eth0"])
    assert f"inet {a.ip}/24" in shown.stdout, shown.stdout + shown.stderr

    server = a.popen([sys.executable, "-u", "-c", LISTEN, "a"], stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None and server.stdout.readline().strip() == "listening"
    # b reaches a at a's address; a's service is not on b's loopback (separate stacks).
    assert dial(b, a.ip, 7777).stdout.strip() == "hello from a"
    assert dial(b, "127.0.0.1", 7777).returncode == 3
    # The host (where a master runs) reaches the namespace, and the namespace the host's bridge side.
    assert subprocess.run([sys.executable, "-c", DIAL, a.ip, "7777"], capture_output=True, text=True).stdout.strip() == "hello from a"

    partition(a)
    assert dial(b, a.ip, 7777).returncode == 3
    heal(a)
    assert wait_for("a to be reachable again", lambda: dial(b, a.ip, 7777).stdout.strip() == "hello from a", 20)


def test_close_leaves_no_namespace_bridge_or_process(tmp_path: Path, netns_network: Network) -> None:
    net = Network(tmp_path / "own")
    host = net.host("x")
    sleeper = host.popen(["sleep", "600"])
    ns, bridge = host.netns, net.bridge
    net.close()
    net.close()  # idempotent
    assert sleeper.poll() is not None
    assert ns not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert subprocess.run(["ip", "link", "show", bridge], capture_output=True).returncode != 0
    # The fixture's network is unaffected by another network's teardown.
    assert netns_network.host("still").ip.startswith(netns_network.gateway.rsplit(".", 1)[0])


@pytest.mark.experiments
def test_agents_on_two_hosts_register_their_addresses_and_run_trials(
    tmp_path: Path, netns_network: Network, isolated_client_config: Path
) -> None:
    master = Master(tmp_path / "master")
    try:
        det = DetCli(master.url, isolated_client_config)
        net = netns_network
        hosts = [net.host("alpha"), net.host("beta")]
        agents = [h.start_agent(master, slots=1) for h in hosts]
        for agent in agents:
            agent.wait_registered(master.url)

        # Each agent is listed with the address it reached the master from, not loopback.
        session = sdk(master)._session
        listed = {a.id: a for a in bindings.get_GetAgents(session).agents or []}
        for host in hosts:
            assert listed[host.name].addresses == [host.ip], listed[host.name].to_json()
            assert len(listed[host.name].slots or {}) == 1

        # Two one-slot trials on two one-slot agents: one per agent. Each reports where it ran and which master
        # address it was given; training metrics prove its process reached the master from there.
        config = write_config(
            IRIS / "const.yaml",
            tmp_path / "two.yaml",
            tmp_path / "checkpoints",
            name="two-hosts",
            entrypoint=["sh", "-c", 'echo "placed on $DET_AGENT_ID with DET_MASTER=$DET_MASTER"; exec python3 model_def.py'],
            searcher={
                "name": "random",
                "max_trials": 2,
                "max_concurrent_trials": 2,
                "max_length": {"batches": 100},
                "metric": "val_categorical_accuracy",
                "smaller_is_better": False,
            },
            hyperparameters={"learning_rate": {"type": "double", "minval": 1e-4, "maxval": 1e-3}},
            min_validation_period={"batches": 100},
        )
        exp = sdk(master).get_experiment(create(det, config, IRIS))
        try:
            wait_state(exp, {ExpState.COMPLETED}, timeout=240)
        except AssertionError:
            for trial in exp.list_trials():
                print(f"--- trial {trial.id} logs:\n{trial_logs(det, trial.id)[-3000:]}")
            print("\n".join(f"--- agent {a.agent_id} log:\n{a.log_tail()}" for a in agents))
            raise
        placed = {}
        for trial in exp.list_trials():
            logs = trial_logs(det, trial.id)
            m = re.search(r"placed on ([\w-]+) with DET_MASTER=(https?://\S+)", logs)
            assert m, logs[-3000:]
            placed[m.group(1)] = m.group(2)
            assert metrics(trial, "training"), f"trial {trial.id} reported no metrics"
        assert placed == {h.name: net.master_url(master) for h in hosts}, placed
    finally:
        master.close()


@pytest.mark.experiments
def test_a_notebook_on_another_host_is_reached_through_the_master_proxy(
    tmp_path: Path, netns_network: Network, isolated_client_config: Path
) -> None:
    """The proxy target is the agent's own address: a notebook in a namespace listens there (not
    on the namespace's loopback, which the master cannot reach) and serves through `/proxy/<id>/`."""
    from test_notebooks import run_in_kernel, start_upstream, token

    master = Master(tmp_path / "master")
    try:
        host = netns_network.host("gamma")
        host.start_agent(master, slots=1).wait_registered(master.url)
        det = DetCli(master.url, isolated_client_config)
        det.login("determined")
        nb = start_upstream(det)
        bearer = token(master, "determined")
        status = requests.get(f"{master.url}/proxy/{nb}/api/status", headers={"Authorization": f"Bearer {bearer}"}, timeout=30)
        assert status.status_code == 200, status.text
        where = run_in_kernel(master, bearer, nb, "import os, socket; print(os.environ['DET_AGENT_ID'], os.environ['DET_MASTER'])")
        assert where.split() == ["gamma", netns_network.master_url(master)], where
        det.ok("notebook", "kill", nb)
    finally:
        master.close()

