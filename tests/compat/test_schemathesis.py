"""Schemathesis over the master's OpenAPI document (/api/v1/openapi.json) against a real master
with seeded data: an experiment whose trial reported training and validation metrics (run by a
`det agent run`), a template and a finished command. Fails on any 5xx other than a documented 501
and on any response the document does not describe (status, content type, body schema).

Runs only when RESOLUTE_SCHEMATHESIS=1 (scripts/schemathesis.sh; scripts/test.sh's schemathesis
step), on a master of its own, so the compat suite's two backend runs do not repeat it.
Knobs: RESOLUTE_SCHEMATHESIS_MAX_EXAMPLES (default 12 per operation), RESOLUTE_SCHEMATHESIS_SEED."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict

import pytest
import requests

from conftest import Agent, DetCli, Master
from experiments import TERMINAL, ExpState, sdk, wait_state

HERE = Path(__file__).parent / "schemathesis"

pytestmark = pytest.mark.skipif(
    os.environ.get("RESOLUTE_SCHEMATHESIS") != "1", reason="schemathesis runs in its own step (scripts/schemathesis.sh)"
)

TRAIN = """\
import determined as det

with det.core.init() as core:
    for step in (1, 2, 3):
        core.train.report_training_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
    core.train.report_validation_metrics(steps_completed=3, metrics={"val_loss": 0.25})
"""

CONFIG = """\
name: schemathesis-seed
entrypoint: python3 train.py
searcher:
  name: single
  metric: val_loss
  max_length:
    batches: 3
resources:
  slots_per_trial: 1
checkpoint_storage:
  type: shared_fs
  host_path: {storage}
max_restarts: 0
"""


def seed(master: Master, det: DetCli, work: Path) -> Dict[str, str]:
    """Creates the data the run's ids point at; returns them by OpenAPI parameter name."""
    model = work / "model"
    model.mkdir()
    (model / "train.py").write_text(TRAIN)
    config = work / "config.yaml"
    config.write_text(CONFIG.format(storage=work / "checkpoints"))
    det.login("admin")
    out = det.ok("experiment", "create", str(config), str(model), timeout=120)
    exp_id = int(out.split("Created experiment ")[1].split()[0])
    exp = sdk(master).get_experiment(exp_id)
    state = wait_state(exp, TERMINAL, timeout=180, context="(the seed experiment)")
    assert state == ExpState.COMPLETED, f"seed experiment ended {state}"
    trial_id = exp.list_trials()[0].id
    det.ok("template", "set", "st-template", str(write(work / "template.yaml", "description: schemathesis\n")))
    det.ok("command", "run", "true", timeout=120)
    return {"experimentId": str(exp_id), "id": str(exp_id), "trialId": str(trial_id), "templateName": "st-template"}


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_schemathesis_finds_no_server_error_and_no_schema_violation(tmp_path: Path) -> None:
    master = Master(tmp_path / "master")
    agent = Agent(master, tmp_path / "agent")
    try:
        agent.wait_registered(master)
        det = DetCli(master.url, tmp_path / "det-config")
        ids = seed(master, det, tmp_path)
        login = requests.post(f"{master.url}/api/v1/auth/login", json={"username": "admin", "password": ""}, timeout=30)
        login.raise_for_status()
        token = login.json()["token"]

        st = shutil.which("schemathesis", path=str(Path(sys.executable).parent))
        assert st, f"schemathesis is not installed next to {sys.executable} (tests/compat/requirements.txt)"
        report = tmp_path / "report"
        cmd = [
            st,
            "--config-file",
            str(HERE / "schemathesis.toml"),
            "run",
            f"{master.url}/api/v1/openapi.json",
            "--seed",
            os.environ.get("RESOLUTE_SCHEMATHESIS_SEED", "1"),
            "--max-examples",
            os.environ.get("RESOLUTE_SCHEMATHESIS_MAX_EXAMPLES", "12"),
            "--report",
            "junit",
            "--report-dir",
            str(report),
        ]
        env = dict(os.environ, RESOLUTE_ST_TOKEN=token, **{f"RESOLUTE_ST_{k.upper()}": v for k, v in ids.items()})
        print("seeded:", json.dumps(ids))
        result = subprocess.run(cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
        print(result.stdout)
        cases = [line.strip() for line in result.stdout.splitlines() if line.strip().endswith(("passed", "failure", "failures")) and "generated" in line]
        print("schemathesis summary:", cases[-1] if cases else "(no test-case line)")
        assert result.returncode == 0, f"schemathesis failed (exit {result.returncode}); see its output above; master log:\n{master.log_tail()}"
    finally:
        agent.stop()
        master.stop()
