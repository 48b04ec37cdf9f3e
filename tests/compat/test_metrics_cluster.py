"""Metrics and cluster-wide APIs driven by the upstream 0.38.1 CLI and SDK: trial time series
(CompareTrials) with downsampling, metric streams and summary metrics of a trial that reported out of
step order, `det trial describe --metrics-summary`, `det master config`, `det master logs`."""

import json
import textwrap
from pathlib import Path

import pytest
from determined.common.api import bindings

from conftest import Agent, DetCli, Master
from experiments import ExpState, create, metrics, only_trial, sdk, wait_state

pytestmark = pytest.mark.experiments

# Reports steps 1..300 in a scrambled order, a spike at 123 and a dip at 234, and validations
# out of order.
REPORT_PY = textwrap.dedent(
    """
    import determined as det

    def loss(s):
        return {123: 50.0, 234: -5.0}.get(s, 10.0 - s / 100.0)

    with det.core.init() as core:
        steps = sorted(range(1, 301), key=lambda s: (s * 7919) % 307)
        for s in steps:
            core.train.report_training_metrics(steps_completed=s, metrics={"loss": loss(s)})
        for s in (300, 100, 200):
            core.train.report_validation_metrics(steps_completed=s, metrics={"val_loss": s / 1000.0})
        print("metrics-compat reported")
    """
)


@pytest.fixture(scope="module")
def reported_trial(master: Master, agent: Agent, tmp_path_factory: pytest.TempPathFactory) -> int:
    work = tmp_path_factory.mktemp("metrics-compat")
    (work / "model").mkdir()
    (work / "model" / "report.py").write_text(REPORT_PY)
    (work / "exp.yaml").write_text(
        "name: metrics-compat\nentrypoint: python3 report.py\nmax_restarts: 0\n"
        "searcher: {name: single, metric: val_loss, max_length: 1}\n"
        f"checkpoint_storage: {{type: shared_fs, host_path: {work / 'ckpt'}}}\n"
    )
    det = DetCli(master.url, work / "det-config")
    exp_id = create(det, work / "exp.yaml", work / "model")
    exp = sdk(master).get_experiment(exp_id)
    wait_state(exp, {ExpState.COMPLETED}, timeout=180, context="metrics-compat experiment")
    return only_trial(exp).id


def test_compare_trials_downsamples_and_keeps_extremes(master: Master, reported_trial: int) -> None:
    d = sdk(master)
    resp = bindings.get_CompareTrials(
        d._session,
        trialIds=[reported_trial],
        maxDatapoints=20,
        metricNames=["loss"],
        metricType=bindings.v1MetricType.TRAINING,
    )
    assert [t.trial.id for t in resp.trials] == [reported_trial]
    series = resp.trials[0].metrics[0]
    assert series.group == "training" and series.type == bindings.v1MetricType.TRAINING
    batches = [p.batches for p in series.data]
    assert len(batches) <= 20 and batches == sorted(batches), batches
    for must in (1, 300, 123, 234):
        assert must in batches, f"step {must} (an end or extreme) kept: {batches}"
    full = bindings.get_CompareTrials(d._session, trialIds=[reported_trial], metricIds=["validation.val_loss"])
    assert [p.batches for p in full.trials[0].metrics[0].data] == [100, 200, 300]


def test_metric_streams_are_sorted_and_complete(master: Master, reported_trial: int) -> None:
    trial = sdk(master).get_trial(reported_trial)
    assert [m.steps_completed for m in metrics(trial, "training")] == list(range(1, 301))
    assert [m.steps_completed for m in metrics(trial, "validation")] == [100, 200, 300]
    trial.reload()
    summary = trial.summary_metrics
    assert summary["avg_metrics"]["loss"]["count"] == 300, summary
    assert (summary["avg_metrics"]["loss"]["min"], summary["avg_metrics"]["loss"]["max"]) == (-5.0, 50.0)
    assert summary["validation_metrics"]["val_loss"]["count"] == 3, summary


def test_trial_describe_metrics_summary(det: DetCli, reported_trial: int) -> None:
    out = det.ok("trial", "describe", str(reported_trial), "--metrics-summary", "--json")
    described = json.loads(out)
    assert described["trial"]["summaryMetrics"]["avg_metrics"]["loss"]["count"] == 300


def test_master_config_and_logs(det: DetCli, master: Master) -> None:
    det.login("admin", "")
    config = json.loads(det.ok("master", "config", "--json"))
    assert config["resource_manager"]["type"] == "agent"
    assert "feature_switches" in config
    out = det.ok("master", "logs", "--tail", "5")
    lines = [line for line in out.splitlines() if line.strip()]
    assert 0 < len(lines) <= 5, out
    assert all(line.split(" ", 1)[1].startswith(("[INFO]", "[WARNING]", "[ERROR]", "[DEBUG]")) for line in lines), out


def _lines(out: str) -> list:
    """The log lines the CLI printed (not its "stream ended" trailer)."""
    return [line for line in out.splitlines() if line.startswith("[")]


def test_trial_logs_fields(master: Master, reported_trial: int) -> None:
    d = sdk(master)
    first = next(iter(bindings.get_TrialLogsFields(d._session, trialId=reported_trial)))
    assert first.agentIds and first.containerIds, first.to_json()


def test_trial_logs_filters(det: DetCli, reported_trial: int) -> None:
    tid = str(reported_trial)
    everything = _lines(det.ok("trial", "logs", tid))
    assert any("metrics-compat reported" in line for line in everything), everything
    assert len(everything) >= 4, everything
    assert _lines(det.ok("trial", "logs", tid, "--head", "3")) == everything[:3]
    assert _lines(det.ok("trial", "logs", tid, "--tail", "2")) == everything[-2:]
    assert _lines(det.ok("trial", "logs", tid, "--timestamp-after", "2999-01-01T00:00:00Z")) == []
    assert _lines(det.ok("trial", "logs", tid, "--timestamp-before", "2000-01-01T00:00:00Z")) == []
    assert _lines(det.ok("trial", "logs", tid, "--timestamp-before", "2999-01-01T00:00:00Z")) == everything
    errors = _lines(det.ok("trial", "logs", tid, "--level", "ERROR"))
    assert not any("metrics-compat reported" in line for line in errors), errors
    assert _lines(det.ok("trial", "logs", tid, "--rank-id", "7")) == []
    assert _lines(det.ok("trial", "logs", tid, "--container-id", "no-such-container")) == []
    stdout_only = _lines(det.ok("trial", "logs", tid, "--stdtype", "stdout"))
    assert any("metrics-compat reported" in line for line in stdout_only), stdout_only
