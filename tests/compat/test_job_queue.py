"""The job queue with the unchanged upstream 0.38.1 CLI on a 1-slot agent: `det job list` shows
queued jobs in order, `det job update --priority`, `det job update-batch` and the SDK's
`aheadOf` reorder what runs next (asserted by the order the trials actually start), `det
experiment set priority|max-slots` change a live experiment, and every waiting job says why
(`waitReason` in the queue, `jobSummary` of `det experiment describe --json`'s response)."""

import json
from pathlib import Path
from typing import Dict, List

import pytest
from determined.common.api import bindings
from determined.common.api import errors as api_errors
from determined.experimental import client

from conftest import Agent, DetCli, Master
from experiments import created_id, wait_for


@pytest.fixture
def one_slot(fresh_master: Master, tmp_path: Path):
    """A master of its own with one 1-slot agent, so queue order decides what runs next."""
    a = Agent(fresh_master, tmp_path / "agent", slots=1)
    try:
        a.wait_registered(fresh_master)
        yield fresh_master
    finally:
        a.stop()


def session(master: Master):
    return client.Determined(master=master.url, user="determined", password="")._session


def queue(master: Master) -> List[Dict]:
    """`GET /api/v1/job-queues-v2` raw, so Resolute's `waitReason` is visible."""
    return [j["full"] for j in session(master).get("api/v1/job-queues-v2").json()["jobs"]]


def experiment(det: DetCli, tmp_path: Path, name: str, order_file: Path) -> int:
    """A 1-slot experiment whose only trial appends `name` to `order_file` and ends."""
    config = tmp_path / f"{name}.yaml"
    config.write_text(
        f"name: {name}\n"
        f"entrypoint: python3 -c \"print('{name}', file=open('{order_file}', 'a'))\"\n"
        "searcher: {name: single, metric: loss, max_length: {batches: 1}}\n"
        "hyperparameters: {}\nmax_restarts: 0\n"
        "resources: {slots_per_trial: 1}\n"
    )
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    return created_id(det.ok("experiment", "create", str(config), str(model)))


def job_of(master: Master, name: str) -> Dict:
    return next(j for j in queue(master) if j["name"] == name)


def names(master: Master) -> List[str]:
    return [j["name"] for j in queue(master)]


def test_priority_update_batch_and_ahead_of_decide_what_starts_next(one_slot: Master, tmp_path: Path) -> None:
    det = DetCli(one_slot.url, tmp_path / "det-config")
    det.login("determined")
    order = tmp_path / "order.txt"
    # A command holds the only slot while three experiments queue behind it.
    blocker = det.ok("cmd", "run", "-d", "sleep 600").strip()
    wait_for("the blocker to run", lambda: "RUNNING" in det.ok("cmd", "describe", blocker), timeout=60)
    ids = {name: experiment(det, tmp_path, name, order) for name in ["x", "y", "z"]}
    wait_for("three experiments queued", lambda: len(queue(one_slot)) == 4 or None, timeout=30)
    jobs = queue(one_slot)
    assert [j["type"] for j in jobs] == ["TYPE_COMMAND", "TYPE_EXPERIMENT", "TYPE_EXPERIMENT", "TYPE_EXPERIMENT"]
    assert [j["name"] for j in jobs[1:]] == ["x", "y", "z"]
    assert [j["summary"]["state"] for j in jobs] == ["STATE_SCHEDULED"] + ["STATE_QUEUED"] * 3
    assert jobs[3]["waitReason"] == "needs 1 slot; 0 of 1 free in resource pool default; 2 jobs queued ahead of it"
    # `det experiment describe --json` carries the experiment's place and reason.
    described = json.loads(det.ok("experiment", "describe", "--json", str(ids["z"])))
    assert described[0]["jobSummary"] == {"state": "STATE_QUEUED", "jobsAhead": 3}

    # `det job update Z --priority 10`, then `det job update-batch Y.priority=5`: Y, Z, X.
    det.ok("job", "update", job_of(one_slot, "z")["jobId"], "--priority", "10")
    det.ok("job", "update-batch", f"{job_of(one_slot, 'y')['jobId']}.priority=5")
    wait_for("y and z raised", lambda: names(one_slot)[:2] == ["y", "z"] or None, timeout=30)
    # The SDK's `aheadOf` (no upstream CLI flag): X ahead of Z, taking Z's priority.
    x, z = job_of(one_slot, "x")["jobId"], job_of(one_slot, "z")["jobId"]
    bindings.post_UpdateJobQueue(session(one_slot), body=bindings.v1UpdateJobQueueRequest(updates=[bindings.v1QueueControl(jobId=x, aheadOf=z)]))
    wait_for("x ahead of z", lambda: names(one_slot)[:3] == ["y", "x", "z"] or None, timeout=30)
    assert job_of(one_slot, "x")["priority"] == 10
    # The stored config follows the new priority.
    config = session(one_slot).get(f"api/v1/experiments/{ids['y']}").json()["config"]
    assert config["resources"]["priority"] == 5

    det.ok("cmd", "kill", blocker)
    sdk = client.Determined(master=one_slot.url, user="determined", password="")
    for i in ids.values():
        assert sdk.get_experiment(i).wait(interval=0.5) == client.ExperimentState.COMPLETED
    assert order.read_text().split() == ["y", "x", "z"], "trials started in queue order"


def run_job_list(master: Master, det: DetCli, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> str:
    """`det job list` of the upstream CLI. Before listing it reads GET /api/v1/resource-pools for
    the pool's scheduler type; where this master does not serve that yet (the `pools` branch
    does), the CLI runs in-process with that one read answered "priority", so the listing itself
    is still upstream's code against our GetJobsV2."""
    try:
        session(master).get("api/v1/resource-pools")
        return det.ok("job", "list")
    except api_errors.NotFoundException:
        from determined.cli import cli as upstream_cli
        from determined.cli import job as upstream_job

        monkeypatch.setattr(upstream_job.bindings, "get_GetResourcePools", lambda sess: None)
        monkeypatch.setattr(upstream_job, "check_is_priority", lambda pools, pool: True)
        capsys.readouterr()
        upstream_cli.main(["-m", master.url, "-u", "determined", "job", "list"])
        return capsys.readouterr().out


def test_det_job_list_shows_the_queue(
    one_slot: Master, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    det = DetCli(one_slot.url, tmp_path / "det-config")
    det.login("determined")
    blocker = det.ok("cmd", "run", "-d", "sleep 600").strip()
    try:
        wait_for("the blocker to run", lambda: "RUNNING" in det.ok("cmd", "describe", blocker), timeout=60)
        order = tmp_path / "order.txt"
        ids = [experiment(det, tmp_path, name, order) for name in ["first", "second"]]
        wait_for("two experiments queued", lambda: len(queue(one_slot)) == 3 or None, timeout=30)
        lines = run_job_list(one_slot, det, monkeypatch, capsys).splitlines()
        rows = [line for line in lines if "TYPE_" in line]
        assert len(rows) == 3 and "TYPE_COMMAND" in rows[0] and "STATE_SCHEDULED" in rows[0], lines
        assert f"first ({ids[0]})" in rows[1] and f"second ({ids[1]})" in rows[2], lines
        assert all("STATE_QUEUED" in r and "0/1" in r and "determined" in r and "42" in r for r in rows[1:]), lines
        assert [r.split("|")[0].strip() for r in rows] == ["0", "1", "2"], lines
        # Ours adds why each waits, and `--ahead-of`.
        ours = det.ours("job", "list")
        assert ours.returncode == 0 and "Waiting Because" in ours.stdout, ours
        assert "needs 1 slot; 0 of 1 free in resource pool default; 1 job queued ahead of it" in ours.stdout, ours.stdout
        second, first = job_of(one_slot, "second")["jobId"], job_of(one_slot, "first")["jobId"]
        moved = det.ours("job", "update", second, "--ahead-of", first)
        assert moved.returncode == 0, moved
        wait_for("second ahead of first", lambda: names(one_slot)[1:] == ["second", "first"] or None, timeout=30)
        refused = det.ours("job", "update", second, "--priority", "0")
        assert refused.returncode != 0 and "priority" in refused.stdout + refused.stderr, refused
    finally:
        det.ok("cmd", "kill", blocker)


def test_experiment_set_priority_and_max_slots(one_slot: Master, tmp_path: Path) -> None:
    det = DetCli(one_slot.url, tmp_path / "det-config")
    det.login("determined")
    blocker = det.ok("cmd", "run", "-d", "sleep 600").strip()
    try:
        wait_for("the blocker to run", lambda: "RUNNING" in det.ok("cmd", "describe", blocker), timeout=60)
        exp = experiment(det, tmp_path, "tuned", tmp_path / "order.txt")
        wait_for("the experiment queued", lambda: "tuned" in names(one_slot) or None, timeout=30)
        assert "Set `priority` of experiment" in det.ok("experiment", "set", "priority", str(exp), "3")
        assert "Set `max_slots` of experiment" in det.ok("experiment", "set", "max-slots", str(exp), "1")
        wait_for("priority 3 in the queue", lambda: job_of(one_slot, "tuned")["priority"] == 3 or None, timeout=30)
        config = session(one_slot).get(f"api/v1/experiments/{exp}").json()["config"]
        assert (config["resources"]["priority"], config["resources"]["max_slots"]) == (3, 1)
        # `none` clears the cap (the CLI sends `maxSlots: null`).
        assert "to None" in det.ok("experiment", "set", "max-slots", str(exp), "none")
        config = session(one_slot).get(f"api/v1/experiments/{exp}").json()["config"]
        assert (config["resources"]["priority"], config["resources"]["max_slots"]) == (3, None)
        out = det.fails("experiment", "set", "priority", str(exp), "0")
        assert "resources.priority" in out, out
    finally:
        det.ok("cmd", "kill", blocker)


def test_the_queue_order_survives_a_master_killed_with_sigkill(tmp_path: Path, isolated_client_config: Path) -> None:
    """Reordered jobs keep their places across `kill -9` of the master: the queue the upstream
    CLI lists after the restart is the one before it, and the trials start in that order."""
    master = Master(tmp_path / "master", config_yaml="agent_reattach_wait: 120\n")
    agent = Agent(master, tmp_path / "agent", slots=1)
    det = DetCli(master.url, isolated_client_config)
    try:
        agent.wait_registered(master)
        det.login("determined")
        order = tmp_path / "order.txt"
        blocker = det.ok("cmd", "run", "-d", "sleep 600").strip()
        wait_for("the blocker to run", lambda: "RUNNING" in det.ok("cmd", "describe", blocker), timeout=60)
        for name in ["x", "y", "z"]:
            experiment(det, tmp_path, name, order)
        wait_for("three experiments queued", lambda: len(queue(master)) == 4 or None, timeout=30)
        # y raised by priority; z moved ahead of x (same priority): y, z, x, unlike creation order.
        det.ok("job", "update-batch", f"{job_of(master, 'y')['jobId']}.priority=5")
        x, z = job_of(master, "x")["jobId"], job_of(master, "z")["jobId"]
        bindings.post_UpdateJobQueue(session(master), body=bindings.v1UpdateJobQueueRequest(updates=[bindings.v1QueueControl(jobId=z, aheadOf=x)]))
        # (The running command holds its own place among them; only the experiments are compared here.)
        wait_for("the queue reordered", lambda: [n for n in names(master) if n in {"x", "y", "z"}] == ["y", "z", "x"] or None, timeout=30)
        before = [(j["name"], j["jobId"], j["priority"]) for j in queue(master)]

        master.proc.kill()
        master.proc.wait()
        master.restart(same_port=True)
        # The agent reconnects by itself and its command is reattached, still holding the slot.
        wait_for("the blocker reattached", lambda: "RUNNING" in det.ok("cmd", "describe", blocker), timeout=120)
        wait_for("the queue back", lambda: len(queue(master)) == 4 or None, timeout=60)
        after = [(j["name"], j["jobId"], j["priority"]) for j in queue(master)]
        assert after == before, f"queue before the kill {before}, after {after}"

        det.ok("cmd", "kill", blocker)
        wait_for("all three trials ran", lambda: order.exists() and len(order.read_text().split()) == 3 or None, timeout=180)
        assert order.read_text().split() == ["y", "z", "x"], "trials started in the restored queue order"
    finally:
        agent.stop()
        master.close()
