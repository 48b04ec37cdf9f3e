"""Experiments over time with the upstream 0.38.1 CLI and bindings: `det experiment continue`
(a finished single-trial experiment trains on with a longer max_length; a finished search with
nothing failed cannot be continued), warm starts from `searcher.source_trial_id`, and the bulk
experiment actions the bindings send."""

from pathlib import Path

import pytest

from conftest import Agent, DetCli, Master
from experiments import IRIS, ExpState, create, only_trial, sdk, trial_logs, wait_state, write_config
from determined.common.api import bindings

pytestmark = pytest.mark.experiments


def rest_trial(master: Master, trial_id: int) -> dict:
    return sdk(master)._session.get(f"api/v1/trials/{trial_id}").json()["trial"]


def test_continue_trains_a_finished_trial_further(master: Master, agent: Agent, tmp_path: Path) -> None:
    det = DetCli(master.url, tmp_path / "det-config")
    config = write_config(
        IRIS / "const.yaml", tmp_path / "const.yaml", tmp_path / "checkpoints",
        searcher={"max_length": {"batches": 200}}, min_validation_period={"batches": 100},
    )
    exp_id = create(det, config, IRIS)
    d = sdk(master)
    wait_state(d.get_experiment(exp_id), {ExpState.COMPLETED}, timeout=120, context="(first run)")
    trial = only_trial(d.get_experiment(exp_id))
    before = rest_trial(master, trial.id)
    assert before["totalBatchesProcessed"] == 200, before

    out = det.ok("experiment", "continue", str(exp_id), "--config", "searcher.max_length.batches=400")
    assert f"Continued experiment {exp_id}" in out, out
    wait_state(d.get_experiment(exp_id), {ExpState.COMPLETED}, timeout=120, context="(continued)")
    after = rest_trial(master, trial.id)
    assert after["state"] == "STATE_COMPLETED" and after["totalBatchesProcessed"] == 400, after
    assert after["restarts"] == 0 and after["startTime"] == before["startTime"], (before, after)
    assert after["endTime"] and after["endTime"] > before["endTime"], (before, after)
    exp = d._session.get(f"api/v1/experiments/{exp_id}").json()
    assert exp["config"]["searcher"]["max_length"] == {"batches": 400}, exp["config"]["searcher"]
    assert len(d.get_experiment(exp_id).list_trials()) == 1, "the same trial went on"
    logs = trial_logs(det, trial.id)
    assert "at batch 200" in logs and "resumed from checkpoint" in logs, logs[-3000:]

    # A finished search whose trials all completed has nothing to continue.
    search = write_config(
        IRIS / "random.yaml", tmp_path / "random.yaml", tmp_path / "checkpoints",
        searcher={"max_length": {"batches": 100}, "max_trials": 2}, min_validation_period={"batches": 100},
    )
    search_id = create(det, search, IRIS)
    wait_state(d.get_experiment(search_id), {ExpState.COMPLETED}, timeout=120, context="(search)")
    err = det.fails("experiment", "continue", str(search_id))
    assert "experiment has been completed, cannot continue this experiment" in err, err
    missing = det.fails("experiment", "continue", "999999")
    assert "999999" in missing and "not found" in missing.lower(), missing

    # Warm start: a new experiment starting from the trial's latest checkpoint (batch 400).
    warm = write_config(
        IRIS / "const.yaml", tmp_path / "warm.yaml", tmp_path / "checkpoints",
        searcher={"max_length": {"batches": 500}, "source_trial_id": trial.id}, min_validation_period={"batches": 100},
    )
    warm_id = create(det, warm, IRIS)
    wait_state(d.get_experiment(warm_id), {ExpState.COMPLETED}, timeout=120, context="(warm start)")
    warm_trial = rest_trial(master, only_trial(d.get_experiment(warm_id)).id)
    latest = rest_trial(master, trial.id)
    ckpts = d._session.get(f"api/v1/trials/{trial.id}/checkpoints").json()["checkpoints"]
    newest = max(ckpts, key=lambda c: c["metadata"]["steps_completed"])
    assert warm_trial["warmStartCheckpointUuid"] == newest["uuid"], (warm_trial, latest)
    warm_logs = trial_logs(det, warm_trial["id"])
    assert f"resumed from checkpoint {newest['uuid']}" in warm_logs and "starting from scratch" not in warm_logs, warm_logs[-3000:]
    bad = write_config(IRIS / "const.yaml", tmp_path / "bad.yaml", tmp_path / "checkpoints", searcher={"source_trial_id": 999999})
    out = det.fails("experiment", "create", str(bad), str(IRIS))
    assert "searcher.source_trial_id: trial 999999 not found" in out, out

    # Bulk actions, as the bindings send them: by ids, one result per experiment.
    resp = bindings.post_ArchiveExperiments(
        d._session, projectId=1, body=bindings.v1ArchiveExperimentsRequest(experimentIds=[exp_id, search_id, 999999], projectId=1)
    )
    results = {r.id: r.error for r in resp.results}
    assert results[exp_id] == "" and results[search_id] == "" and "999999" in results[999999], results
    assert d._session.get(f"api/v1/experiments/{exp_id}").json()["experiment"]["archived"] is True
    filters = bindings.v1BulkExperimentFilters(states=[bindings.experimentv1State.COMPLETED], archived=True, projectId=1)
    resp = bindings.post_UnarchiveExperiments(
        d._session, projectId=1, body=bindings.v1UnarchiveExperimentsRequest(experimentIds=[], projectId=1, filters=filters)
    )
    assert sorted(r.id for r in resp.results) == sorted([exp_id, search_id]) and all(r.error == "" for r in resp.results), resp.results
    archived = d._session.get(f"api/v1/experiments/{exp_id}").json()["experiment"]["archived"]
    assert archived is False

    # The runs API: a search's runs refuse pause/resume, a single-trial experiment's run pauses it.
    search_run = d.get_experiment(search_id).list_trials()[0].id
    resp = bindings.post_PauseRuns(d._session, body=bindings.v1PauseRunsRequest(runIds=[search_run], projectId=1))
    assert [(r.id, r.error) for r in resp.results] == [(search_run, f"Cannot pause/unpause run '{search_run}' (part of multi-trial).")]
    resp = bindings.post_KillRuns(d._session, body=bindings.v1KillRunsRequest(runIds=[trial.id, 999999], projectId=1))
    assert [r.error for r in resp.results] == ["", "run 999999 not found in project 1"], resp.results
