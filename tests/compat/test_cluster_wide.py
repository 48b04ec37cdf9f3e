"""Cluster-wide commands of the upstream 0.38.1 CLI against our master: `det master
cluster-message set/get/clear` (admin only, validation, kept across a restart), `det trial
support-bundle` (the archive holds the trial's logs, its experiment's config, the master's log),
`det resources allocations` (the allocation CSV) and the Prometheus endpoints
(`observability.enable_prometheus`)."""

import csv
import datetime
import io
import json
import tarfile
import textwrap
from pathlib import Path

import pytest
import requests

from conftest import Agent, DetCli, Master
from experiments import ExpState, create, only_trial, sdk, wait_state


def _message(det: DetCli) -> dict:
    return json.loads(det.ok("master", "cluster-message", "get", "--json"))


def test_cluster_message_set_get_clear(det: DetCli, master: Master, unique: str) -> None:
    det.login("admin", "")
    det.ok("master", "cluster-message", "set", "-m", f"maintenance {unique}", "-d", "2h")
    shown = _message(det)["clusterMessage"]
    assert shown["message"] == f"maintenance {unique}", shown
    start = datetime.datetime.fromisoformat(shown["startTime"].replace("Z", "+00:00"))
    end = datetime.datetime.fromisoformat(shown["endTime"].replace("Z", "+00:00"))
    assert round((end - start).total_seconds()) == 7200, shown
    info = json.loads(det.ok("master", "info", "--json"))
    assert info["clusterMessage"]["message"] == f"maintenance {unique}", info

    # Bad input: a non-zero exit and a message naming the field.
    assert "duration" in det.fails("master", "cluster-message", "set", "-m", "x", "-d", "5 days")
    out = det.fails("master", "cluster-message", "set", "-m", "x", "-s", "2099-02-01T00:00:00Z", "-e", "2099-01-01T00:00:00Z")
    assert "endTime" in out, out
    assert _message(det)["clusterMessage"]["message"] == f"maintenance {unique}"

    # Everyone reads it; only admins change it.
    det.ok("user", "create", f"msgreader{unique}", "--password", "Reader123")
    det.login(f"msgreader{unique}", "Reader123")
    assert _message(det)["clusterMessage"]["message"] == f"maintenance {unique}"
    assert "admin" in det.fails("master", "cluster-message", "set", "-m", "mine")
    assert "admin" in det.fails("master", "cluster-message", "clear")

    det.login("admin", "")
    det.ok("master", "cluster-message", "set", "-m", f"until cleared {unique}")
    assert "endTime" not in _message(det)["clusterMessage"] or _message(det)["clusterMessage"]["endTime"] is None
    det.ok("master", "cluster-message", "clear")
    assert _message(det) == {"clusterMessage": None}
    assert json.loads(det.ok("master", "info", "--json")).get("clusterMessage") is None


def test_cluster_message_survives_a_restart(fresh_master: Master, tmp_path: Path) -> None:
    det = DetCli(fresh_master.url, tmp_path / "det-config-restart")
    det.login("admin", "")
    det.ok("master", "cluster-message", "set", "-m", "kept across restarts", "-d", "1d")
    fresh_master.restart()
    det = DetCli(fresh_master.url, tmp_path / "det-config-restart")
    det.login("admin", "")
    assert _message(det)["clusterMessage"]["message"] == "kept across restarts"


BUNDLE_PY = textwrap.dedent(
    """
    import determined as det

    with det.core.init() as core:
        print("support-bundle marker line")
        core.train.report_training_metrics(steps_completed=1, metrics={"loss": 1.0})
    """
)


@pytest.fixture(scope="module")
def finished_trial(master: Master, agent: Agent, tmp_path_factory: pytest.TempPathFactory):
    work = tmp_path_factory.mktemp("cluster-wide")
    (work / "model").mkdir()
    (work / "model" / "bundle.py").write_text(BUNDLE_PY)
    (work / "exp.yaml").write_text(
        "name: support-bundle-compat\nentrypoint: python3 bundle.py\nmax_restarts: 0\n"
        "searcher: {name: single, metric: loss, max_length: 1}\n"
        f"checkpoint_storage: {{type: shared_fs, host_path: {work / 'ckpt'}}}\n"
    )
    started = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=1)
    det = DetCli(master.url, work / "det-config")
    exp_id = create(det, work / "exp.yaml", work / "model")
    exp = sdk(master).get_experiment(exp_id)
    wait_state(exp, {ExpState.COMPLETED}, timeout=180, context="support-bundle experiment")
    return exp_id, only_trial(exp).id, started


@pytest.mark.experiments
def test_trial_support_bundle(det: DetCli, finished_trial, tmp_path: Path) -> None:
    exp_id, trial_id, _ = finished_trial
    det.login("admin", "")
    out_dir = tmp_path / "bundles"
    out_dir.mkdir()
    out = det.ok("trial", "support-bundle", str(trial_id), "-o", str(out_dir))
    path = Path(out.split("bundle path:", 1)[1].strip())
    assert path.parent == out_dir and path.name.startswith(f"det-bundle-trial-{trial_id}-"), out
    with tarfile.open(path, "r:gz") as bundle:
        files = {Path(m.name).name: bundle.extractfile(m).read().decode() for m in bundle.getmembers() if m.isfile()}
    assert set(files) == {"trial_logs.txt", "master_logs.txt", "api_experiment_call.json", "api_trial_call.json"}, files
    assert "support-bundle marker line" in files["trial_logs.txt"], files["trial_logs.txt"][-2000:]
    experiment = json.loads(files["api_experiment_call.json"])
    assert experiment["experiment"]["id"] == exp_id
    assert experiment["config"]["name"] == "support-bundle-compat", experiment.get("config")
    assert json.loads(files["api_trial_call.json"])["id"] == trial_id
    assert files["master_logs.txt"].strip(), "the master's own log lines"


@pytest.mark.experiments
def test_resources_allocations_csv(det: DetCli, finished_trial) -> None:
    exp_id, trial_id, started = finished_trial
    after = started.strftime("%Y-%m-%dT%H:%M:%SZ")
    before = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    out = det.ok("resources", "allocations", after, before)
    rows = list(csv.DictReader(io.StringIO(out)))
    mine = [r for r in rows if int(r["experiment_id"]) == exp_id]
    assert len(mine) == 1, out
    row = mine[0]
    assert row["task_type"] == "TRIAL" and row["username"] == "determined" and row["slots"] == "1", row
    assert row["end_time"] and float(row["slot_hours"]) > 0, row
    assert "timestamp_before" in det.fails("resources", "allocations", after, "not-a-time")
    raw = json.loads(det.ok("resources", "raw", after, before, "--json"))
    entries = [e for e in raw["resourceEntries"] if e["experimentId"] == exp_id]
    assert len(entries) == 1 and entries[0]["kind"] == "TRIAL" and entries[0]["seconds"] > 0, raw


def test_prometheus_off_by_default(master: Master) -> None:
    assert requests.get(f"{master.url}/prom/det-state-metrics", timeout=10).status_code == 404
    assert requests.get(f"{master.url}/debug/prom/metrics", timeout=10).status_code == 404


def test_prometheus_metrics_when_enabled(tmp_path: Path) -> None:
    m = Master(tmp_path / "prom-master", config_yaml="observability:\n  enable_prometheus: true\n")
    try:
        requests.get(f"{m.url}/api/v1/master", timeout=10).raise_for_status()
        state = requests.get(f"{m.url}/prom/det-state-metrics", timeout=10)
        assert state.status_code == 200 and state.headers["content-type"].startswith("text/plain"), state.text
        assert "det_agents 0" in state.text, state.text
        latencies = requests.get(f"{m.url}/debug/prom/metrics", timeout=10).text
        assert 'det_http_request_duration_seconds_count{code="200",method="GET",route="/api/v1/master"} 1' in latencies, latencies
    finally:
        m.close()
