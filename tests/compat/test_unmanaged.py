"""Unmanaged (detached) experiments: a real Python script using the upstream Core API v2
(`core_v2.init(config=…)` outside any cluster task, so unmanaged) reports into our master with no
agent involved, and the upstream CLI and SDK read back what it reported. Re-running it with the
same external ids resumes the same experiment and trial from its checkpoint."""

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from conftest import DetCli, Master
from determined.common.api import bindings
from determined.experimental import client

SCRIPT = Path(__file__).parent / "unmanaged" / "train.py"


def run_script(master: Master, tmp_path: Path, name: str, *args: str, fail: bool = False) -> Dict[str, Any]:
    """Runs the script to the end; returns what it wrote (ids, checkpoint, steps)."""
    result = tmp_path / f"{name}.json"
    cmd = [sys.executable, str(SCRIPT), master.url, str(tmp_path / "checkpoints"), str(result), *args]
    if fail:
        cmd.append("--fail")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    print(proc.stdout, proc.stderr)
    if fail:
        assert proc.returncode != 0, "the script should have failed"
        assert "the script failed on purpose" in proc.stderr
    else:
        assert proc.returncode == 0, f"script exited {proc.returncode}:\n{proc.stderr}"
    return json.loads(result.read_text())


def admin_session(master: Master):
    return client.Determined(master=master.url, user="admin", password="")._session


def http(master: Master, method: str, path: str, body: Any = None) -> Tuple[int, str]:
    token = admin_session(master).token
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request(master.url + path, data=data, method=method)
    req.add_header("Authorization", f"Bearer {token}")
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def wait_for(what: str, check, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def metric_steps(trial, group: str) -> List[int]:
    return sorted(m.steps_completed for m in trial.iter_metrics(group))


def test_unmanaged_script_reports_and_resumes(master: Master, det: DetCli, tmp_path: Path) -> None:
    det.login("admin")
    ext_exp, ext_trial = f"laptop-{uuid.uuid4().hex[:8]}", "trial-a"
    first = run_script(master, tmp_path, "first", ext_exp, ext_trial)
    exp_id, trial_id = first["experiment_id"], first["trial_id"]
    assert first["steps"] == 5

    sess = admin_session(master)
    wire = bindings.get_GetExperiment(sess, experimentId=exp_id).experiment
    assert wire.unmanaged is True
    assert wire.state == bindings.experimentv1State.COMPLETED
    assert wire.name == "unmanaged-compat" and wire.labels == ["laptop"]
    assert wire.searcherMetric == "val_loss"
    assert wire.externalExperimentId == ext_exp

    d = client.Determined(master=master.url, user="admin", password="")
    trial = d.get_trial(trial_id)
    trial.reload()
    assert trial.experiment_id == exp_id
    assert trial.hparams == {"lr": 0.1, "layers": 2}
    assert trial.state == client.TrialState.COMPLETED
    assert metric_steps(trial, "training") == [1, 2, 3, 4, 5]
    validations = list(trial.iter_metrics("validation"))
    assert [(v.steps_completed, v.metrics["val_loss"]) for v in validations] == [(5, 0.1)]
    checkpoints = d.get_experiment(exp_id).list_checkpoints()
    assert [c.uuid for c in checkpoints] == [first["checkpoint"]]

    # What the upstream CLI shows.
    listed = det.ok("experiment", "list", "--all")
    row = next(line for line in listed.splitlines() if line.strip().startswith(f"{exp_id} "))
    assert "unmanaged-compat" in row and "COMPLETED" in row
    described = det.ok("experiment", "describe", str(exp_id))
    assert "unmanaged-compat" in described and "COMPLETED" in described
    logs = det.ok("trial", "logs", str(trial_id))
    assert "unmanaged script starting at step 0" in logs
    assert f"unmanaged script reported step 5, checkpoint {first['checkpoint']}" in logs
    out = tmp_path / "download"
    det.ok("experiment", "download", str(exp_id), "-o", str(out))
    assert json.loads((out / first["checkpoint"] / "state.json").read_text()) == {"steps": 5}

    # Re-running with the same external ids resumes the same experiment and trial.
    second = run_script(master, tmp_path, "second", ext_exp, ext_trial)
    assert (second["experiment_id"], second["trial_id"]) == (exp_id, trial_id)
    assert second["steps"] == 10, "the second run should resume from the first run's checkpoint"
    trial.reload()
    assert trial.state == client.TrialState.COMPLETED
    assert metric_steps(trial, "training") == list(range(1, 11))
    assert {c.uuid for c in d.get_experiment(exp_id).list_checkpoints()} == {first["checkpoint"], second["checkpoint"]}
    assert len(bindings.get_GetExperimentTrials(sess, experimentId=exp_id).trials) == 1
    assert "unmanaged script starting at step 5" in det.ok("trial", "logs", str(trial_id))
    found = json.loads(http(master, "GET", f"/api/v1/trials/by-external-id/{ext_exp}/{ext_trial}")[1])
    assert found["trial"]["id"] == trial_id

    # A new external trial id in the same experiment is a second trial of it.
    third = run_script(master, tmp_path, "third", ext_exp, "trial-b")
    assert third["experiment_id"] == exp_id and third["trial_id"] != trial_id and third["steps"] == 5
    assert len(bindings.get_GetExperimentTrials(sess, experimentId=exp_id).trials) == 2

    # Without external ids every run is a new experiment.
    fourth = run_script(master, tmp_path, "fourth")
    assert fourth["experiment_id"] not in (exp_id,) and fourth["steps"] == 5


def test_unmanaged_states_follow_the_script(master: Master, det: DetCli, tmp_path: Path) -> None:
    det.login("admin")
    result = tmp_path / "held.json"
    cmd = [sys.executable, str(SCRIPT), master.url, str(tmp_path / "checkpoints"), str(result), f"held-{uuid.uuid4().hex[:8]}", "t", "--hold"]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        running = wait_for("the script to start", lambda: result.with_suffix(".json.running").exists(), timeout=120)
        assert running
        ids = json.loads(Path(str(result) + ".running").read_text())
        sess = admin_session(master)
        exp = bindings.get_GetExperiment(sess, experimentId=ids["experiment_id"]).experiment
        trial = bindings.get_GetTrial(sess, trialId=ids["trial_id"]).trial
        assert exp.state == bindings.experimentv1State.RUNNING and exp.unmanaged
        assert trial.state == bindings.trialv1State.RUNNING
        # Lifecycle actions do not apply to an experiment the cluster does not run.
        for action in ("pause", "activate", "kill"):
            out = det.fails("experiment", action, str(ids["experiment_id"]))
            assert "unmanaged" in out, out
        assert "unmanaged" in det.fails("trial", "kill", str(ids["trial_id"]))
        Path(str(result) + ".release").write_text("go")
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    finally:
        if proc.poll() is None:
            proc.kill()
    exp = bindings.get_GetExperiment(sess, experimentId=ids["experiment_id"]).experiment
    assert exp.state == bindings.experimentv1State.COMPLETED and exp.endTime

    # A script that raises ends its trial and experiment in ERROR.
    failed = run_script(master, tmp_path, "failed", fail=True)
    assert bindings.get_GetTrial(sess, trialId=failed["trial_id"]).trial.state == bindings.trialv1State.ERROR
    assert bindings.get_GetExperiment(sess, experimentId=failed["experiment_id"]).experiment.state == bindings.experimentv1State.ERROR
    # Finished, it can be archived like any experiment.
    det.ok("experiment", "archive", str(failed["experiment_id"]))
    assert bindings.get_GetExperiment(sess, experimentId=failed["experiment_id"]).experiment.archived


def test_unmanaged_api_bad_input(master: Master, tmp_path: Path) -> None:
    def expect(status: int, needle: str, method: str, path: str, body: Any = None) -> None:
        code, text = http(master, method, path, body)
        assert code == status and needle in text, f"{method} {path}: {code} {text}"

    config = "name: api-bad-input\nsearcher: {name: single, metric: loss}\n"
    ext = f"api-{uuid.uuid4().hex[:8]}"
    expect(400, "unmanaged", "PUT", f"/api/v1/experiments/by-external-id/{ext}", {"config": config})
    expect(400, "searcher", "PUT", f"/api/v1/experiments/by-external-id/{ext}", {"config": "searcher: 5", "unmanaged": True})
    expect(400, "parentId", "PUT", f"/api/v1/experiments/by-external-id/{ext}", {"config": config, "unmanaged": True, "parentId": 1})
    code, text = http(master, "PUT", f"/api/v1/experiments/by-external-id/{ext}", {"config": config, "unmanaged": True})
    assert code == 200, text
    exp_id = json.loads(text)["experiment"]["id"]
    assert json.loads(text)["experiment"]["unmanaged"] is True
    # The same external id is the same experiment.
    code, text = http(master, "PUT", f"/api/v1/experiments/by-external-id/{ext}", {"config": config, "unmanaged": True})
    assert code == 200 and json.loads(text)["experiment"]["id"] == exp_id

    expect(400, "externalExperimentId", "PUT", "/api/v1/experiments/by-external-id/%01x", {"config": config, "unmanaged": True})
    expect(400, "unmanaged", "GET", f"/api/v1/experiments/{exp_id}/searcher/state")
    expect(400, "unmanaged", "POST", "/api/v1/experiments/continue", {"id": exp_id})
    expect(404, "experimentId", "POST", "/api/v1/trials", {"experimentId": 999999, "unmanaged": True})
    expect(400, "unmanaged", "POST", "/api/v1/trials", {"experimentId": exp_id})
    expect(400, "hparams", "POST", "/api/v1/trials", {"experimentId": exp_id, "unmanaged": True, "hparams": [1]})
    expect(400, "externalTrialId", "PUT", "/api/v1/trials", {"createTrialRequest": {"experimentId": exp_id, "unmanaged": True}})
    expect(400, "createTrialRequest", "PUT", "/api/v1/trials", {"externalTrialId": "x"})
    expect(404, "externalTrialId", "GET", f"/api/v1/trials/by-external-id/{ext}/nope")

    code, text = http(master, "POST", "/api/v1/trials", {"experimentId": exp_id, "unmanaged": True, "hparams": {"a": 1}})
    assert code == 200, text
    trial = json.loads(text)["trial"]
    assert trial["experimentId"] == exp_id and trial["taskId"].startswith(f"{exp_id}.") and trial["hparams"] == {"a": 1}
    trial_id = trial["id"]

    expect(404, "trialId", "POST", "/api/v1/trials/999999/start", {"trialId": 999999})
    expect(400, "trialId", "POST", f"/api/v1/trials/{trial_id}/start", {"trialId": trial_id + 1})
    code, text = http(master, "POST", f"/api/v1/trials/{trial_id}/start", {"trialId": trial_id})
    assert code == 200 and json.loads(text)["trialRunId"] == 1, text
    expect(400, "already been started", "POST", f"/api/v1/trials/{trial_id}/start", {"trialId": trial_id})
    code, text = http(master, "POST", f"/api/v1/trials/{trial_id}/start", {"trialId": trial_id, "resume": True})
    assert code == 200 and json.loads(text)["trialRunId"] == 2, text

    expect(404, "trialId", "PATCH", "/api/v1/trials/999999", {"trialId": 999999})
    expect(400, "state", "PATCH", f"/api/v1/trials/{trial_id}", {"trialId": trial_id, "state": "STATE_QUEUED"})
    expect(400, "state", "PATCH", f"/api/v1/trials/{trial_id}", {"trialId": trial_id, "state": "STATE_BOGUS"})
    code, text = http(master, "PATCH", f"/api/v1/trials/{trial_id}", {"trialId": trial_id})
    assert code == 200 and json.loads(text)["trial"]["state"] == "STATE_RUNNING", text
    expect(400, "[0].rank", "POST", "/task-logs", [{"task_id": trial["taskId"], "log": "x\n", "rank": "zero"}])
    expect(404, "nope", "POST", "/task-logs", [{"task_id": "nope", "log": "x\n"}])
    code, text = http(master, "PATCH", f"/api/v1/trials/{trial_id}", {"trialId": trial_id, "state": "STATE_COMPLETED"})
    assert code == 200 and json.loads(text)["trial"]["state"] == "STATE_COMPLETED", text
    sess = admin_session(master)
    assert bindings.get_GetExperiment(sess, experimentId=exp_id).experiment.state == bindings.experimentv1State.COMPLETED


def test_unmanaged_experiment_is_never_scheduled(fresh_master: Master) -> None:
    """Nothing is allocated for an unmanaged trial, neither when it is created nor after a master
    restart (whose recovery reloads every unfinished managed experiment)."""
    master = fresh_master
    # A config the loop could run, were it ever to load it.
    config = (
        "name: never-scheduled\nentrypoint: python3 train.py\nresources: {slots_per_trial: 1}\n"
        "searcher: {name: single, metric: loss, max_length: {batches: 10}}\n"
    )
    code, text = http(master, "PUT", "/api/v1/experiments/by-external-id/never-scheduled", {"config": config, "unmanaged": True})
    assert code == 200, text
    exp_id = json.loads(text)["experiment"]["id"]
    trials = []
    for external in ("idle", "started"):
        body = {"createTrialRequest": {"experimentId": exp_id, "unmanaged": True}, "externalTrialId": external}
        code, text = http(master, "PUT", "/api/v1/trials", body)
        assert code == 200, text
        trials.append(json.loads(text)["trial"])
    code, text = http(master, "POST", f"/api/v1/trials/{trials[1]['id']}/start", {"trialId": trials[1]["id"]})
    assert code == 200, text

    def check() -> None:
        sess = admin_session(master)
        assert bindings.get_GetExperiment(sess, experimentId=exp_id).experiment.state == bindings.experimentv1State.RUNNING
        listed = bindings.get_GetExperimentTrials(sess, experimentId=exp_id).trials
        assert sorted((t.id, t.state.value) for t in listed) == [
            (trials[0]["id"], "STATE_PAUSED"),
            (trials[1]["id"], "STATE_RUNNING"),
        ], "no trial may be added or moved by a searcher"
        for trial in trials:
            code, text = http(master, "GET", f"/api/v1/tasks/{trial['taskId']}")
            assert code == 200 and json.loads(text)["task"]["allocations"] == [], text
        code, text = http(master, "GET", "/api/v1/tasks")
        summaries = json.loads(text)["allocationIdToSummary"]
        assert not any(s["taskId"].startswith(f"{exp_id}.") for s in summaries.values()), summaries

    check()
    master.restart()
    check()
