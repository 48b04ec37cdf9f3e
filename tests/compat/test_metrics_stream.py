"""The experiment metrics-stream endpoints through the upstream 0.38.1 bindings, with a real trial:
metric names (training, validation and a custom group) that keep streaming while the experiment
runs and end when it is terminal; the batches a metric was recorded at; a snapshot of every
trial at a point of progress; a sample of the trials' series; bad input answered 400/404."""

import textwrap
import threading
from pathlib import Path
from typing import List

import pytest
import requests
from determined.common.api import bindings

from conftest import Agent, DetCli, Master
from experiments import ExpState, create, only_trial, sdk, wait_for, wait_state

pytestmark = pytest.mark.experiments

# Reports training, validation and a custom group, then waits for the test's gate file before
# reporting a metric name the stream has not seen yet.
GATED_PY = textwrap.dedent(
    """
    import os, sys, time
    import determined as det

    gate = sys.argv[1]
    with det.core.init() as core:
        for s in (10, 20, 30):
            core.train.report_training_metrics(steps_completed=s, metrics={"loss": 1.0 / s, "lr": 0.1})
        core.train.report_validation_metrics(steps_completed=20, metrics={"val_loss": 0.5, "accuracy": 0.75})
        core.train.report_metrics("inference", steps_completed=30, metrics={"latency_ms": 4.0})
        print("first metrics reported", flush=True)
        deadline = time.time() + 300
        while not os.path.exists(gate) and time.time() < deadline:
            time.sleep(0.2)
        core.train.report_validation_metrics(steps_completed=40, metrics={"val_loss": 0.25, "late_metric": 1.0})
        print("late metric reported", flush=True)
    """
)


def start(master: Master, work: Path) -> int:
    (work / "model").mkdir(parents=True)
    (work / "model" / "gated.py").write_text(GATED_PY)
    gate = work / "gate"
    (work / "exp.yaml").write_text(
        f"name: metrics-stream\nentrypoint: python3 gated.py {gate}\nmax_restarts: 0\n"
        "searcher: {name: single, metric: val_loss, max_length: 1}\n"
        f"checkpoint_storage: {{type: shared_fs, host_path: {work / 'ckpt'}}}\n"
    )
    det = DetCli(master.url, work / "det-config")
    return create(det, work / "exp.yaml", work / "model")


def names(update: bindings.v1ExpMetricNamesResponse) -> List[str]:
    return sorted(f"{m.group}.{m.name}" for m in update.metricNames or [])


def test_metric_names_stream_while_running_and_end_when_terminal(master: Master, agent: Agent, tmp_path: Path) -> None:
    d = sdk(master)
    exp_id = start(master, tmp_path)
    exp = d.get_experiment(exp_id)
    trial = only_trial(exp)
    def first_reported():
        trial.reload()
        return (trial.summary_metrics or {}).get("inference")

    wait_for("the trial's first metrics", first_reported, timeout=120)

    updates: List[bindings.v1ExpMetricNamesResponse] = []
    failure: List[BaseException] = []

    def consume() -> None:
        try:
            for update in bindings.get_ExpMetricNames(d._session, ids=[exp_id], periodSeconds=1):
                updates.append(update)
        except BaseException as e:  # noqa: B036 - reported by the test thread
            failure.append(e)

    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    first = wait_for("the first update", lambda: updates[:1], timeout=30)[0]
    assert first.searcherMetrics == ["val_loss"]
    assert sorted(first.trainingMetrics or []) == ["loss", "lr"]
    assert sorted(first.validationMetrics or []) == ["accuracy", "val_loss"]
    assert names(first) == ["inference.latency_ms", "training.loss", "training.lr", "validation.accuracy", "validation.val_loss"]
    # Still running (the trial waits for the gate): the stream stays open.
    assert reader.is_alive()

    (tmp_path / "gate").touch()
    wait_state(exp, {ExpState.COMPLETED}, timeout=120)
    reader.join(timeout=30)
    assert not reader.is_alive(), "the stream did not end after the experiment completed"
    assert not failure, failure
    # Periods passed with nothing new while the trial waited: those sent no (empty) update.
    assert [names(u) for u in updates[1:]] == [["validation.late_metric"]], [names(u) for u in updates]

    # A terminal experiment: one update with everything, then the stream ends.
    (only,) = list(bindings.get_ExpMetricNames(d._session, ids=[exp_id]))
    assert "validation.late_metric" in names(only) and "training.loss" in names(only)

    # Batches the metric was recorded at, per group.
    (val,) = list(bindings.get_MetricBatches(d._session, experimentId=exp_id, metricName="val_loss", group="validation"))
    assert val.batches == [20, 40]
    (train,) = list(
        bindings.get_MetricBatches(d._session, experimentId=exp_id, metricName="loss", metricType=bindings.v1MetricType.TRAINING)
    )
    assert train.batches == [10, 20, 30]

    # Every trial's value nearest a point of progress.
    (snap,) = list(
        bindings.get_TrialsSnapshot(d._session, experimentId=exp_id, metricName="val_loss", group="validation", batchesProcessed=38, batchesMargin=5)
    )
    assert [(t.trialId, t.batchesProcessed, t.metric) for t in snap.trials] == [(trial.id, 40, 0.25)]
    (none,) = list(
        bindings.get_TrialsSnapshot(d._session, experimentId=exp_id, metricName="val_loss", group="validation", batchesProcessed=100)
    )
    assert none.trials == []

    # A sample of the trials' series.
    (sample,) = list(bindings.get_TrialsSample(d._session, experimentId=exp_id, metricName="loss", group="training", maxDatapoints=2))
    assert sample.promotedTrials == [trial.id] and sample.demotedTrials == []
    points = sample.trials[0].data
    assert [p.batches for p in points] == [10, 30] and points[0].values == {"loss": 0.1}, points
    assert sample.trials[0].hparams == {}


def test_bad_input(master: Master) -> None:
    d = sdk(master)
    base = master.url + "/api/v1/experiments"
    headers = {"Authorization": f"Bearer {d._session.token}"}

    def get(path: str, **params) -> requests.Response:
        return requests.get(base + path, params=params, headers=headers, timeout=30)

    r = get("/metrics-stream/metric-names")
    assert r.status_code == 400 and "ids" in r.json()["error"]["error"], r.text
    r = get("/metrics-stream/metric-names", ids=[987654])
    assert r.status_code == 404 and "987654" in r.json()["error"]["error"], r.text
    r = get("/metrics-stream/metric-names", ids=[1], periodSeconds=-1)
    assert r.status_code == 400 and "periodSeconds" in r.json()["error"]["error"], r.text
    r = get("/1/metrics-stream/batches", group="validation")
    assert r.status_code == 400 and "metricName" in r.json()["error"]["error"], r.text
    r = get("/1/metrics-stream/batches", metricName="loss")
    assert r.status_code == 400 and "group" in r.json()["error"]["error"], r.text
    r = get("/1/metrics-stream/batches", metricName="loss", metricType="METRIC_TYPE_BOGUS")
    assert r.status_code == 400 and "metricType" in r.json()["error"]["error"], r.text
    r = get("/1/metrics-stream/trials-snapshot", metricName="loss", group="training")
    assert r.status_code == 400 and "batchesProcessed" in r.json()["error"]["error"], r.text
    r = get("/1/metrics-stream/trials-snapshot", metricName="loss", group="training", batchesProcessed=1, batchesMargin=-2)
    assert r.status_code == 400 and "batchesMargin" in r.json()["error"]["error"], r.text
    r = get("/1/metrics-stream/trials-sample", metricName="loss", group="training", maxTrials=-1)
    assert r.status_code == 400 and "maxTrials" in r.json()["error"]["error"], r.text
    r = get("/987654/metrics-stream/trials-sample", metricName="loss", group="training")
    assert r.status_code == 404, r.text
