"""Issue 14 item 11, as a new user meets them: a config without `searcher.metric` is accepted
(default `val_loss`) with a warning; config warnings (the metric default, ignored `pod_spec`,
deprecated forms) come back in the create response and our CLI prints them, while the upstream
CLI still parses the response; and the upstream harness's `core.init()` runs in a venv with
neither TensorFlow nor torch+tensorboard, its log saying why no TensorBoard files appear."""

import json
import os
import subprocess
from pathlib import Path

import pytest
import requests
from determined.common.api import authentication

from conftest import REPO, Agent, DetCli, Master
from experiments import ExpState, create, only_trial, sdk, trial_logs, wait_state

NO_METRIC = """
name: no-metric
entrypoint: python3 train.py
searcher: {name: single, max_length: {batches: 3}}
environment:
  pod_spec: {spec: {containers: [{name: determined-container}]}}
"""


def model_dir(tmp_path: Path) -> Path:
    d = tmp_path / "model"
    d.mkdir()
    (d / "train.py").write_text(TRAIN)
    return d


def test_missing_metric_defaults_to_val_loss_with_warnings(master: Master, det: DetCli, tmp_path: Path) -> None:
    config = tmp_path / "no-metric.yaml"
    config.write_text(NO_METRIC)
    model = model_dir(tmp_path)
    det.login("admin", "")
    # The upstream CLI accepts it (its bindings parse our response) and the stored config says val_loss.
    exp_id = create(det, config, model, "--paused")
    d = sdk(master)
    assert d.get_experiment(exp_id).config["searcher"]["metric"] == "val_loss"

    # The create response carries the warnings as text, upstream's enum `warnings` stays parseable.
    sess = authentication.login(master.url, "admin", "")
    body = {"config": NO_METRIC, "modelDefinition": [], "activate": False, "validateOnly": True}
    r = requests.post(f"{master.url}/api/v1/experiments", json=body, headers={"Authorization": f"Bearer {sess.token}"})
    assert r.status_code == 200, r.text
    resp = r.json()
    assert resp["warnings"] == [], resp["warnings"]
    texts = resp["configWarnings"]
    assert any(w.startswith("searcher.metric:") and "val_loss" in w for w in texts), texts
    assert any(w.startswith("environment.pod_spec:") and "ignored" in w for w in texts), texts
    assert any(w.startswith("searcher.max_length:") and "deprecated" in w for w in texts), texts

    # Our CLI prints them.
    ours = det.ours("experiment", "create", str(config), str(model), "--paused")
    assert ours.returncode == 0, ours.stderr
    assert "Warning: searcher.metric: not set; defaulting to val_loss" in ours.stderr, ours.stderr
    assert "Warning: environment.pod_spec: ignored" in ours.stderr, ours.stderr


TRAIN = """
import determined as det
from determined import core

info = det.get_cluster_info()
assert info is not None, "not on a cluster"
with core.init() as ctx:
    for step in range(1, 4):
        ctx.train.report_training_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
    ctx.train.report_validation_metrics(steps_completed=3, metrics={"val_loss": 0.25})
print("bare venv trial done")
"""


@pytest.fixture(scope="module")
def bare_python() -> str:
    """A venv with only determined==0.38.1 (scripts/bare-venv.sh), or RESOLUTE_BARE_PYTHON."""
    given = os.environ.get("RESOLUTE_BARE_PYTHON")
    if given:
        return given
    venv = REPO / ".ci-work" / "bare-venv"
    proc = subprocess.run([str(REPO / "scripts" / "bare-venv.sh"), str(venv)], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"scripts/bare-venv.sh failed:\n{proc.stderr}"
    return proc.stdout.strip().splitlines()[-1]


@pytest.mark.experiments
def test_core_init_in_a_venv_without_tensorflow_or_torch(
    master: Master, agent: Agent, det: DetCli, tmp_path: Path, bare_python: str
) -> None:
    probe = subprocess.run(
        [bare_python, "-c", "import importlib.util as u, json; print(json.dumps([bool(u.find_spec(m)) for m in ('tensorflow', 'torch', 'tensorboard')]))"],
        capture_output=True, text=True, check=True,
    )
    assert json.loads(probe.stdout) == [False, False, False], f"{bare_python} is not bare: {probe.stdout}"
    config = tmp_path / "bare.yaml"
    config.write_text(
        "name: bare-venv\nentrypoint: python3 train.py\n"
        "searcher: {name: single, metric: val_loss, max_length: {batches: 3}}\n"
        f"environment: {{python: {json.dumps(bare_python)}}}\n"
        f"checkpoint_storage: {{type: shared_fs, host_path: {json.dumps(str(tmp_path / 'ckpt'))}}}\n"
    )
    det.login("admin", "")
    exp_id = create(det, config, model_dir(tmp_path))
    d = sdk(master)
    exp = d.get_experiment(exp_id)
    trial = only_trial(exp)
    state = wait_state(exp, {ExpState.COMPLETED, ExpState.ERROR, ExpState.CANCELED}, timeout=180)
    logs = trial_logs(det, trial.id)
    assert state == ExpState.COMPLETED, logs
    assert "bare venv trial done" in logs, logs
    assert "no TensorBoard event files will be written for this trial" in logs, logs
    validations = list(d.get_trial(trial.id).iter_metrics("validation"))
    assert [v.metrics["val_loss"] for v in validations] == [0.25]
    training = list(d.get_trial(trial.id).iter_metrics("training"))
    assert [t.steps_completed for t in training] == [1, 2, 3]
