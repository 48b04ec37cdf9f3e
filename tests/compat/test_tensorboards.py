"""TensorBoards end to end with the upstream 0.38.1 CLI: `det tensorboard start` over finished Iris
experiments becomes ready, TensorBoard answers through `/proxy/<id>/` with the experiments'
scalars — from the event files the harness wrote, or, for trials that wrote none, from the metrics
the master stored — kill ends it, unknown experiments are refused, and `tensorboard_timeout` kills
an idle one."""

import json
import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import pytest

from conftest import Agent, DetCli, Master
from experiments import IRIS, ExpState, sdk, wait_for, wait_state, write_config

pytestmark = pytest.mark.experiments

SHORT = {"searcher": {"max_length": {"batches": 600}}, "min_validation_period": {"batches": 300}}


def request(master: Master, method: str, path: str, token: Optional[str] = None, body: Any = None) -> Tuple[int, str]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(master.url + path, data=data, method=method)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def login(master: Master, user: str = "determined") -> str:
    status, body = request(master, "POST", "/api/v1/auth/login", body={"username": user, "password": "", "isHashed": True})
    assert status == 200, body
    return json.loads(body)["token"]


def launched_id(output: str) -> str:
    match = re.search(r"Launched tensorboard \(id: ([0-9a-f-]{36})", output)
    assert match, f"no 'Launched tensorboard (id: …)' in:\n{output}"
    return match.group(1)


def start(det: DetCli, *args: str) -> str:
    """Upstream `det tensorboard start … --no-browser`, which returns once the TensorBoard is ready."""
    out = det.ok("tensorboard", "start", *args, "--no-browser", timeout=180)
    assert "Tensorboard is running at:" in out, out
    return launched_id(out)


def scalar_tags(master: Master, token: str, task_id: str) -> Dict[str, Dict[str, Any]]:
    """TensorBoard's own scalar tag listing (run → tag → …), through the master's proxy."""
    status, body = request(master, "GET", f"/proxy/{task_id}/data/plugin/scalars/tags", token)
    assert status == 200, (status, body)
    return json.loads(body)


def all_tags(master: Master, token: str, task_id: str, expected: set) -> set:
    """Polls until TensorBoard has loaded tags including `expected` (it reads logdirs in the background)."""

    def probe() -> Optional[set]:
        tags = {tag for run in scalar_tags(master, token, task_id).values() for tag in run}
        return tags if expected <= tags else None

    return wait_for(f"TensorBoard {task_id} to list {sorted(expected)}", probe, timeout=60)


def task_logs(det: DetCli, task_id: str) -> str:
    return det.ok("task", "logs", task_id, timeout=60)


def tensorboard_state(master: Master, task_id: str) -> str:
    from determined.common.api import bindings

    return str(bindings.get_GetTensorboard(sdk(master)._session, tensorboardId=task_id).tensorboard.state.value)


def finished_iris(master: Master, det: DetCli, work: Path, **changes: Any) -> Tuple[int, Path]:
    storage = work / "checkpoints"
    config = write_config(IRIS / "const.yaml", work / "const.yaml", storage, **SHORT, **changes)
    out = det.ok("experiment", "create", str(config), str(IRIS), timeout=120)
    exp_id = int(re.search(r"Created experiment (\d+)", out).group(1))
    wait_state(sdk(master).get_experiment(exp_id), {ExpState.COMPLETED}, timeout=300)
    return exp_id, storage


@pytest.fixture(scope="module")
def iris_runs(master: Master, agent: Agent, tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Tuple[int, Path]]:
    """Two finished Iris experiments: `manual` wrote no event files (the example's default),
    `auto` wrote them with the harness's writer (the `tensorboard_auto` hyperparameter)."""
    work = tmp_path_factory.mktemp("tensorboards")
    det = DetCli(master.url, work / "det-config")
    return {
        "manual": finished_iris(master, det, work / "manual"),
        "auto": finished_iris(master, det, work / "auto", hyperparameters={"tensorboard_auto": True}),
    }


def test_tensorboard_from_event_files_the_harness_wrote(
    master: Master, det: DetCli, iris_runs: Dict[str, Tuple[int, Path]]
) -> None:
    exp_id, storage = iris_runs["auto"]
    # Where the harness uploads them: <storage>/<cluster_id>/tensorboard/experiment/<exp>/trial/<trial>/.
    events = list(storage.glob(f"*/tensorboard/experiment/{exp_id}/trial/*/**/*tfevents*"))
    assert events, f"the harness wrote no event files under {storage}"
    task_id = start(det, str(exp_id))
    token = login(master)
    tags = all_tags(master, token, task_id, {"Determined/loss", "Determined/val_categorical_accuracy"})
    assert "Determined/val_loss" in tags, tags
    logs = task_logs(det, task_id)
    assert "wrote no event files" not in logs, logs
    assert task_id in det.ok("tensorboard", "list")
    det.ok("tensorboard", "kill", task_id)
    wait_for("the TensorBoard to end", lambda: tensorboard_state(master, task_id) == "STATE_TERMINATED", timeout=60)


def test_trials_without_event_files_still_get_curves_from_stored_metrics(
    master: Master, det: DetCli, iris_runs: Dict[str, Tuple[int, Path]]
) -> None:
    exp_id, storage = iris_runs["manual"]
    assert not list(storage.glob("*/tensorboard/**/*tfevents*")), "the MANUAL-mode example should write no event files"
    task_id = start(det, str(exp_id))
    token = login(master)
    all_tags(master, token, task_id, {"Determined/loss", "Determined/categorical_accuracy", "Determined/val_categorical_accuracy"})
    run = next(iter(scalar_tags(master, token, task_id)))
    status, body = request(
        master, "GET", f"/proxy/{task_id}/data/plugin/scalars/scalars?run={run}&tag=Determined/val_categorical_accuracy", token
    )
    assert status == 200, body
    steps = [point[1] for point in json.loads(body)]
    assert steps == [300, 600], steps
    assert "wrote no event files; showing its" in task_logs(det, task_id)
    # Without the owner's credentials the proxy refuses, and never reaches TensorBoard.
    assert request(master, "GET", f"/proxy/{task_id}/data/plugin/scalars/tags")[0] == 401
    det.ok("tensorboard", "kill", task_id)
    wait_for("the TensorBoard to end", lambda: tensorboard_state(master, task_id) == "STATE_TERMINATED", timeout=60)


def test_trial_ids_and_both_experiments_in_one_tensorboard(
    master: Master, det: DetCli, iris_runs: Dict[str, Tuple[int, Path]]
) -> None:
    manual, auto = iris_runs["manual"][0], iris_runs["auto"][0]
    d = sdk(master)
    trial = d.get_experiment(manual).list_trials()[0].id
    task_id = start(det, str(auto), "-t", str(trial))
    token = login(master)
    wait_for(
        "both trials as runs",
        lambda: len([r for r, tags in scalar_tags(master, token, task_id).items() if "Determined/loss" in tags]) == 2,
        timeout=60,
    )
    status, body = request(master, "GET", f"/api/v1/tensorboards/{task_id}", token)
    described = json.loads(body)["tensorboard"]
    assert described["experimentIds"] == [auto] and trial in described["trialIds"], described
    det.ok("tensorboard", "kill", task_id)


def test_unknown_experiments_and_trials_are_refused(master: Master, det: DetCli) -> None:
    out = det.fails("tensorboard", "start", "987654", "--no-browser")
    assert "experiment 987654 not found" in out, out
    out = det.fails("tensorboard", "start", "-t", "987654", "--no-browser")
    assert "trial 987654 not found" in out, out
    status, body = request(master, "POST", "/api/v1/tensorboards", login(master), {"config": {}})
    assert status == 400 and "experiment ids or trial ids" in body, body


def test_an_idle_tensorboard_is_killed_after_tensorboard_timeout(tmp_path: Path, isolated_client_config: Path) -> None:
    m = Master(tmp_path / "idle-master")
    m.env["DET_TENSORBOARD_TIMEOUT"] = "3"
    m.restart()
    a = Agent(m, tmp_path / "idle-agent")
    try:
        a.wait_registered(m)
        det = DetCli(m.url, isolated_client_config)
        config = write_config(IRIS / "const.yaml", tmp_path / "const.yaml", tmp_path / "checkpoints")
        out = det.ok("experiment", "create", "--paused", str(config), str(IRIS), timeout=120)
        exp_id = int(re.search(r"Created experiment (\d+)", out).group(1))
        task_id = start(det, str(exp_id))
        wait_for("the idle TensorBoard to be killed", lambda: tensorboard_state(m, task_id) == "STATE_TERMINATED", timeout=60)
        logs = task_logs(det, task_id)
        assert re.search(r"TensorBoard \(\w+\) was killed after being idle for \d+ s \(tensorboard_timeout\)", logs), logs
    finally:
        a.stop()
        m.close()
