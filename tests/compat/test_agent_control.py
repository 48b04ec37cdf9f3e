"""Agent and slot control through the upstream CLI, on agents in network namespaces
(tests/compat/netns.py): `det agent disable` moves a running trial to another agent, where it
continues from its checkpoint without counting a restart; `det agent disable --drain` lets the
work finish and takes no more; `det slot disable` keeps work off one slot; the state survives a
master restart; only admins may change it."""

import json
import re
from pathlib import Path
from typing import Dict, List

import pytest
import requests
from determined.common.api import bindings
from determined.experimental import client

from conftest import DetCli, Master
from experiments import IRIS, ExpState, create, metrics, restarts, sdk, trial_logs, wait_for, wait_state, write_config
from netns import Network

pytestmark = pytest.mark.experiments

# Iris for far longer than the test: 10 ms per batch, a checkpoint every 100 batches.
LONG = {
    "hyperparameters": {"sleep_per_batch": 0.01},
    "searcher": {"max_length": {"batches": 100_000}},
    "min_validation_period": {"batches": 100},
    "scheduling_unit": 20,
}


def agents_json(det: DetCli) -> Dict[str, dict]:
    return {a["id"]: a for a in json.loads(det.ok("agent", "list", "--json"))}


def containers_on(master: Master) -> Dict[str, List[str]]:
    """Agent id → the task ids of the containers it runs (GET /api/v1/agents)."""
    session = sdk(master)._session
    return {a.id: sorted(c.get("taskId") or c["id"] for c in (a.to_json().get("containers") or {}).values()) for a in bindings.get_GetAgents(session).agents or []}


def running_on(master: Master) -> Dict[str, int]:
    return {agent: len(tasks) for agent, tasks in containers_on(master).items() if tasks}


def admin_cli(master: Master, config: Path) -> DetCli:
    det = DetCli(master.url, config)
    det.login("admin")
    return det


def test_disable_moves_the_trial_drain_lets_it_finish_slot_disable_and_restart(
    tmp_path: Path, netns_network: Network, isolated_client_config: Path
) -> None:
    master = Master(tmp_path / "master")
    try:
        det = admin_cli(master, isolated_client_config)
        hosts = [netns_network.host("alpha"), netns_network.host("beta")]
        for h in hosts:
            h.start_agent(master, slots=2).wait_registered(master.url)

        config = write_config(IRIS / "const.yaml", tmp_path / "long.yaml", tmp_path / "checkpoints", name="agent-control", **LONG)
        d = sdk(master)
        exp = d.get_experiment(create(det, config, IRIS))
        trial = wait_for("the trial", lambda: exp.list_trials(), 60)[0]
        first = wait_for("the trial's container on an agent", lambda: list(running_on(master)), 90)
        assert len(first) == 1, first
        source = first[0]
        target = "beta" if source == "alpha" else "alpha"
        wait_for("a checkpoint of the running trial", lambda: trial.list_checkpoints(), 90)

        # Disable (no drain): the trial checkpoints, exits, and resumes on the other agent.
        out = det(*["agent", "disable", source])
        assert out.returncode == 0 and f"Disabled agent {source}." in out.stderr, out
        listed = agents_json(det)
        assert (listed[source]["enabled"], listed[source]["draining"]) == (False, False), listed[source]
        assert listed[target]["enabled"] is True
        wait_for("the preemption log line", lambda: "preempted at batch" in trial_logs(det, trial.id), 60)
        stopped_at = int(re.findall(r"preempted at batch (\d+)", trial_logs(det, trial.id))[-1])
        wait_for(
            f"the trial to resume from its batch-{stopped_at} checkpoint",
            lambda: re.search(rf"resumed from checkpoint \S+ at batch {stopped_at}\b", trial_logs(det, trial.id)),
            timeout=90,
            interval=1,
        )
        assert running_on(master) == {target: 1}, containers_on(master)
        wait_for("training metrics after the move", lambda: any(m.steps_completed > stopped_at for m in metrics(trial, "training")), 60)
        assert restarts(d, trial.id) == 0, "a move off a disabled agent is not a failure"

        # Drain the agent it runs on now: it keeps running there; the CLI lists it as in progress.
        det.ok("agent", "enable", source)
        out = det.ok("agent", "disable", "--drain", target)
        assert "Tasks still in progress on draining nodes." in out, out
        listed = agents_json(det)
        assert (listed[target]["enabled"], listed[target]["draining"]) == (False, True), listed[target]
        assert (listed[source]["enabled"], listed[source]["draining"]) == (True, False), listed[source]
        # A slot of the enabled agent is disabled: a new 1-slot trial goes to its other slot.
        assert "Disabled slot 0 of agent " + source in det.ok("slot", "disable", source, "0")
        slots = json.loads(det.ok("slot", "list", "--json"))
        enabled = {(s["agent_id"], s["slot_id"]): s["enabled"] for s in slots}
        assert enabled[(source, "0")] is False and enabled[(source, "1")] is True, slots
        config2 = write_config(IRIS / "const.yaml", tmp_path / "second.yaml", tmp_path / "checkpoints", name="second", **LONG)
        exp2 = d.get_experiment(create(det, config2, IRIS))
        wait_for("the second trial to start", lambda: running_on(master) == {source: 1, target: 1}, 90)
        session = d._session
        agent = bindings.get_GetAgent(session, agentId=source).agent
        held = {sid.rsplit("/", 1)[-1]: s.container is not None for sid, s in (agent.slots or {}).items()}
        assert held == {"0": False, "1": True}, held
        # The drained agent's trial was never preempted again.
        assert len(re.findall(r"preempted at batch", trial_logs(det, trial.id))) == 1

        # The control is stored: a restarted master shows and applies it when the agents return.
        master.restart(same_port=True)
        det = admin_cli(master, isolated_client_config)

        def reregistered():
            listed = agents_json(det)
            return len(listed) == 2 and listed

        listed = wait_for("both agents back", reregistered, 90)
        assert (listed[target]["enabled"], listed[target]["draining"]) == (False, True), listed[target]
        slots = json.loads(det.ok("slot", "list", "--json"))
        assert {(s["agent_id"], s["slot_id"]): s["enabled"] for s in slots}[(source, "0")] is False, slots

        det.ok("experiment", "kill", str(exp.id))
        det.ok("experiment", "kill", str(exp2.id))
        wait_state(exp, {ExpState.CANCELED, ExpState.COMPLETED, ExpState.ERROR}, timeout=90)
    finally:
        master.close()


def test_only_admins_change_agents_unknown_ones_are_not_found_and_commands_are_killed(
    tmp_path: Path, netns_network: Network, isolated_client_config: Path
) -> None:
    master = Master(tmp_path / "master")
    try:
        host = netns_network.host("solo")
        host.start_agent(master, slots=2).wait_registered(master.url)
        det = admin_cli(master, isolated_client_config)
        det.ok("user", "create", "plain", "--password", "PlainPass1")
        out = det.fails("agent", "disable", "nosuch")
        assert "nosuch" in out and "not found" in out, out
        out = det.fails("slot", "disable", "solo", "7")
        assert "slot 7" in out and "not found" in out, out

        token = client.Determined(master=master.url, user="admin", password="")._session.token
        bad = requests.post(
            f"{master.url}/api/v1/agents/solo/slots/x/disable", headers={"Authorization": f"Bearer {token}"}, data=b""
        )
        assert bad.status_code == 400 and "slotId" in bad.text, bad.text
        bad = requests.post(
            f"{master.url}/api/v1/agents/solo/disable", headers={"Authorization": f"Bearer {token}"}, data=b'{"drain": "yes"}'
        )
        assert bad.status_code == 400 and "drain" in bad.text, bad.text

        det.login("plain", "PlainPass1")
        out = det.fails("agent", "disable", "solo")
        assert "admin" in out.lower() or "forbidden" in out.lower() or "permission" in out.lower(), out
        out = det.fails("slot", "disable", "solo", "0")
        assert "admin" in out.lower() or "forbidden" in out.lower() or "permission" in out.lower(), out
        det.login("admin")
        listed = agents_json(det)
        assert (listed["solo"]["enabled"], listed["solo"]["draining"]) == (True, False), listed
        # Enabling is idempotent and answers the agent.
        det.ok("agent", "enable", "solo")
        det.ok("slot", "enable", "solo", "0")

        # A command cannot checkpoint: disabling its agent kills it (a drain would have let it run).
        task_id = det.ok("cmd", "run", "-d", "sleep 600").strip()
        wait_for("the command to run on solo", lambda: running_on(master) == {"solo": 1}, 60)
        det.ok("agent", "disable", "solo")
        wait_for("the command to be killed", lambda: "TERMINATED" in det.ok("cmd", "describe", task_id), 60)
        assert running_on(master) == {}, containers_on(master)
        det.ok("agent", "enable", "solo")

        # Our CLI makes the same calls.
        ours = det.ours("agent", "disable", "--drain", "solo")
        assert ours.returncode == 0 and "Disabled agent solo." in ours.stderr, ours
        assert "No tasks in progress on draining nodes." in ours.stdout, ours
        assert (agents_json(det)["solo"]["enabled"], agents_json(det)["solo"]["draining"]) == (False, True)
        ours = det.ours("slot", "disable", "solo", "1")
        assert ours.returncode == 0 and "Disabled slot 1 of agent solo" in ours.stdout, ours
        enabled = {s["slot_id"]: s["enabled"] for s in json.loads(det.ok("slot", "list", "--json"))}
        assert enabled == {"0": True, "1": False}, enabled
        assert det.ours("agent", "enable", "--all").returncode == 0
        assert det.ours("slot", "enable", "solo", "1").returncode == 0
        assert (agents_json(det)["solo"]["enabled"], agents_json(det)["solo"]["draining"]) == (True, False)
        missing = det.ours("agent", "disable", "nosuch")
        assert missing.returncode != 0 and "not found" in missing.stderr, missing
    finally:
        master.close()
