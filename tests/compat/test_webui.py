"""The web UI end to end in headless Chromium (webui/e2e/run.mjs, playwright-core driving Debian's
/usr/bin/chromium) against a real master + agent: sign in, watch the Iris const experiment complete
without a reload, its learning curves drawn with one point per report (5 validations, 50 training
reports), a trial's hyperparameters and logs, the experiments list's filters (name, state, user,
label) and sort, the not-found, 403 and network-error views, upstream's /det/ links, activating a
paused experiment, following its trial's logs and chart live and killing it from its page, session
expiry and sign-out; the cluster page (agent, slots), JupyterLab launched from the tasks page and
opened through /proxy/ then killed, bulk actions (a per-row failure, a bulk kill of two), the
Swagger UI at /docs/rest-api/, If-None-Match answered 304 while polling, and the admin page (403
for others; a user created there signs in; deactivated, refused);
an adaptive (ASHA) search's page: trials stopped early marked in the table
and the curves, smoothing / log scale / hover, the Hyperparameters tab (every trial in the
parallel coordinates, the master's importance, scatter and heat map), a checkpoint downloaded as
a tar, the configuration and the model definition's files (file_tree, then one file), a trial's
workloads; the experiment's Logs tab (all trials interleaved with their ids, download, one picked
trial searched and filtered by level, a running experiment followed live); an unmanaged
experiment of 120 trials (more than the trials table's page) with every trial's learning curve
drawn. Screenshots of each page go to .ci-work/webui-screenshots/<backend>/.

Needs `scripts/webui.sh` (node_modules and the built UI embedded in the det binary) and Chromium;
scripts/test.sh provides both and sets RESOLUTE_REQUIRE_WEBUI=1, so there a missing piece fails
rather than skips."""

import json
import os
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest

from conftest import REPO, Agent, DetCli, Master, compat_db
from determined.common.api import bindings
from determined.experimental import client

from experiments import IRIS, create, write_config

pytestmark = pytest.mark.experiments

WEBUI = REPO / "webui"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
USER, PASSWORD = "webui-e2e", "Resolute-UI-2026"


MANY_TRIALS, MANY_POINTS = 120, 3


def seed_many_trials(admin: client.Determined, trials: int, points: int) -> int:
    """An unmanaged experiment (as upstream's core_v2 creates one) of `trials` trials, each with
    `points` training reports of `loss`; returns its id."""
    sess = admin._session
    config = "name: webui-many-trials\nsearcher: {name: single, metric: loss}\nhyperparameters: {lr: 0.1}\n"
    exp_id = bindings.post_CreateExperiment(
        sess, body=bindings.v1CreateExperimentRequest(config=config, unmanaged=True)
    ).experiment.id
    for i in range(trials):
        lr = 0.001 * (i + 1)
        trial = bindings.post_CreateTrial(
            sess, body=bindings.v1CreateTrialRequest(experimentId=exp_id, hparams={"lr": lr}, unmanaged=True)
        ).trial
        for step in range(1, points + 1):
            metrics = bindings.v1TrialMetrics(
                metrics=bindings.v1Metrics(avgMetrics={"loss": 1.0 / (step * lr * 1000)}),
                trialId=trial.id,
                trialRunId=0,
                stepsCompleted=step * 10,
            )
            bindings.post_ReportTrialMetrics(
                sess, body=bindings.v1ReportTrialMetricsRequest(group="training", metrics=metrics), metrics_trialId=trial.id
            )
    return exp_id


def missing_tools() -> str:
    node = shutil.which("node")
    if node is None:
        return "node is not installed"
    if not (WEBUI / "node_modules" / "playwright-core").is_dir():
        return "webui/node_modules is missing: run scripts/webui.sh"
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is missing: apt-get install chromium"
    return ""


@pytest.fixture(scope="module")
def tools() -> None:
    why = missing_tools()
    if why:
        if os.environ.get("RESOLUTE_REQUIRE_WEBUI") == "1":
            pytest.fail(why)
        pytest.skip(why)


def test_master_serves_the_built_ui(master: Master, tools: None) -> None:
    with urllib.request.urlopen(f"{master.url}/det/dashboard") as r:
        html = r.read().decode()
        assert r.headers["Content-Type"].startswith("text/html"), r.headers["Content-Type"]
    assert 'id="app"' in html and "/assets/" in html, (
        "the det binary serves the placeholder page: run scripts/webui.sh, then cargo build\n" + html[:400]
    )


def test_webui_end_to_end(master: Master, agent: Agent, tools: None, tmp_path: Path) -> None:
    admin = client.Determined(master=master.url, user="admin", password="")
    admin.create_user(USER, admin=False, password=PASSWORD)
    det = DetCli(master.url, tmp_path / "det-config")
    config = write_config(IRIS / "const.yaml", tmp_path / "const.yaml", tmp_path / "checkpoints")
    exp_id = create(det, config, IRIS)
    det.ok("experiment", "label", "add", str(exp_id), "webui-label")
    # A second, long experiment of the signed-in user, created paused: the UI activates it,
    # follows its trial's logs live, then kills it.
    mine = DetCli(master.url, tmp_path / "det-config-e2e")
    mine.login(USER, PASSWORD)
    long_run = {"max_length": {"batches": 1000000}}
    long_config = write_config(
        IRIS / "const.yaml", tmp_path / "long.yaml", tmp_path / "checkpoints", searcher=long_run
    )
    kill_id = create(mine, long_config, IRIS, "--paused")
    # Two more paused ones, killed together by the experiments table's bulk action.
    bulk_ids = [create(mine, long_config, IRIS, "--paused") for _ in range(2)]
    # An adaptive search (as tests/compat/test_searches.py runs it): ASHA stops some trials early.
    adaptive_trials = 6
    adaptive_config = write_config(
        IRIS / "adaptive.yaml",
        tmp_path / "adaptive.yaml",
        tmp_path / "checkpoints",
        hyperparameters={"sleep_per_batch": 0.005},
        searcher={"max_trials": adaptive_trials, "max_length": {"batches": 600}, "mode": "aggressive"},
        min_validation_period={"batches": 50},
        scheduling_unit=50,
    )
    adaptive_id = create(det, adaptive_config, IRIS)
    # More trials than the experiment page's trials table shows at once (100): the learning
    # curves must still draw every one. Seeded through the API as an unmanaged experiment.
    many_id = seed_many_trials(admin, MANY_TRIALS, MANY_POINTS)
    # One point per report: Iris const trains 5000 batches, reports training metrics every
    # scheduling_unit (100) batches and validates every 1000.
    points = {"validation.val_categorical_accuracy": 5000 // 1000, "training.loss": 5000 // 100}
    shots = REPO / ".ci-work" / "webui-screenshots" / compat_db()
    shutil.rmtree(shots, ignore_errors=True)
    env = dict(
        os.environ,
        RESOLUTE_UI_URL=master.url,
        RESOLUTE_UI_USER=USER,
        RESOLUTE_UI_PASS=PASSWORD,
        RESOLUTE_UI_EXPERIMENT=str(exp_id),
        RESOLUTE_UI_LABEL="webui-label",
        RESOLUTE_UI_KILL_EXPERIMENT=str(kill_id),
        RESOLUTE_UI_METRIC="validation.val_categorical_accuracy",
        RESOLUTE_UI_POINTS=json.dumps(points),
        RESOLUTE_UI_LOG_TEXT="New trial runner",
        RESOLUTE_UI_SCREENSHOTS=str(shots),
        RESOLUTE_UI_BULK_EXPERIMENTS=",".join(map(str, bulk_ids)),
        RESOLUTE_UI_ADMIN_USER="admin",
        RESOLUTE_UI_ADMIN_PASS="",
        RESOLUTE_UI_ADAPTIVE_EXPERIMENT=str(adaptive_id),
        RESOLUTE_UI_ADAPTIVE_TRIALS=str(adaptive_trials),
        RESOLUTE_UI_MANY_EXPERIMENT=str(many_id),
        RESOLUTE_UI_MANY_TRIALS=str(MANY_TRIALS),
        RESOLUTE_UI_MANY_POINTS=str(MANY_POINTS),
        CHROMIUM=CHROMIUM,
    )
    proc = subprocess.run(
        ["node", "e2e/run.mjs"], cwd=WEBUI, env=env, capture_output=True, text=True, timeout=420
    )
    print(proc.stdout)
    assert proc.returncode == 0, f"web UI e2e failed (screenshots in {shots}):\n{proc.stdout}\n{proc.stderr}"
    for name in [
        "01-login", "02-dashboard", "03-experiment", "04-trial", "05-experiments", "06-not-found",
        "10-adaptive", "11-hyperparameters", "12-checkpoints", "13-model-code", "14-trial-workloads",
        "15-all-trials-curves", "16-experiment-logs-live", "17-experiment-logs",
    ]:
        assert (shots / f"{name}.png").stat().st_size > 10_000, f"{name}.png is missing or blank"
