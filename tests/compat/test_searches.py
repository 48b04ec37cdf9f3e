"""Hyperparameter searches end to end: the iris example under adaptive ASHA, grid, random and PBT
searchers, created with the upstream CLI and checked through the SDK and REST; `det
preview-search` with the upstream CLI and ours."""

import itertools
import json
import os
import subprocess
from pathlib import Path
from typing import Any, Dict, List

import pytest

from conftest import Agent, DetCli, Master, master_binary
from experiments import IRIS, MNIST, ExpState, create, sdk, trial_logs, wait_state, write_config

pytestmark = pytest.mark.experiments

STOPPED_BY_SEARCHER = "stopped early by the searcher"
# Each batch sleeps a little so that trials run side by side and the searchers have rungs and
# rounds to compare while the others are still training.
SLOW = {"sleep_per_batch": 0.005}


def rest_trials(master: Master, exp_id: int) -> List[Dict[str, Any]]:
    d = sdk(master)
    resp = d._session.get(f"api/v1/experiments/{exp_id}/trials", params={"limit": 1000})
    return resp.json()["trials"]


def our_cli(master: Master, work: Path, *args: str) -> str:
    """Runs our `det` (the binary under test) against the master; returns stdout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DET_")}
    env["DET_DEBUG_CONFIG_PATH"] = str(work / "ours")
    (work / "ours").mkdir(exist_ok=True)
    done = subprocess.run([str(master_binary()), "-m", master.url, *args], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def searcher_rows(describe: str) -> Dict[int, Dict[str, str]]:
    """The "Searcher trials:" table of our `det experiment describe`, by trial id."""
    assert "Searcher trials:" in describe, describe
    lines = describe[describe.index("Searcher trials:") :].splitlines()[1:]
    header = [h.strip() for h in lines[0].split("|")]
    rows = [dict(zip(header, (c.strip() for c in line.split("|")))) for line in lines[2:] if "|" in line]
    return {int(r["Trial ID"]): r for r in rows}


def run_search(master: Master, work: Path, example: str, timeout: float, **changes: Any) -> int:
    det = DetCli(master.url, work / "det-config")
    config = write_config(IRIS / example, work / example, work / "checkpoints", **changes)
    exp_id = create(det, config, IRIS)
    wait_state(sdk(master).get_experiment(exp_id), {ExpState.COMPLETED}, timeout=timeout, context=f"({example})")
    return exp_id


def test_adaptive_search_stops_trials_early(master: Master, agent: Agent, tmp_path: Path) -> None:
    max_length = 600
    exp_id = run_search(
        master,
        tmp_path,
        "adaptive.yaml",
        timeout=180,
        hyperparameters=SLOW,
        searcher={"max_trials": 6, "max_length": {"batches": max_length}, "mode": "aggressive"},
        min_validation_period={"batches": 50},
        scheduling_unit=50,
    )
    trials = rest_trials(master, exp_id)
    assert len(trials) == 6, [t["id"] for t in trials]
    assert all(t["state"] == "STATE_COMPLETED" for t in trials), [(t["id"], t["state"]) for t in trials]
    stopped = [t for t in trials if t.get("endReason") == STOPPED_BY_SEARCHER]
    assert stopped, f"no trial was stopped by ASHA: {[(t['id'], t['totalBatchesProcessed']) for t in trials]}"
    summary = [(t["id"], t["totalBatchesProcessed"], t.get("endReason")) for t in trials]
    assert all(t["totalBatchesProcessed"] < max_length for t in stopped), summary
    assert any(t["totalBatchesProcessed"] == max_length for t in trials), "the best trial trains to max_length"
    assert sdk(master).get_experiment(exp_id).progress in (None, 1.0)

    # Our describe shows each trial's rung and the searcher's decision.
    describe = our_cli(master, tmp_path, "experiment", "describe", str(exp_id))
    assert "Searcher: adaptive_asha (completed), 100.0% done; lengths in batches" in describe, describe
    rows = searcher_rows(describe)
    assert sorted(rows) == sorted(int(t["id"]) for t in trials), describe
    for t in trials:
        row = rows[int(t["id"])]
        expected = "stopped_early" if t in stopped else "completed"
        assert row["Decision"] == expected and row["Searcher State"] == "closed", (t["id"], describe)
        assert row["Rung"] != "" and int(row["Trained"]) <= max_length, describe
    assert "Rungs:" in describe and "Planned Trials" in describe, describe
    # The global --json gives the raw objects (the demo script reads ids from it).
    listed = json.loads(our_cli(master, tmp_path, "experiment", "list", "--json"))
    assert exp_id in [e["id"] for e in listed], listed
    best = json.loads(our_cli(master, tmp_path, "experiment", "list-checkpoints", str(exp_id), "--best", "1", "--json"))
    assert len(best) == 1 and best[0]["uuid"], best


def test_grid_search_runs_one_trial_per_point(master: Master, agent: Agent, tmp_path: Path) -> None:
    exp_id = run_search(
        master, tmp_path, "grid.yaml", timeout=180, searcher={"max_length": {"batches": 200}}, min_validation_period={"batches": 100}
    )
    trials = rest_trials(master, exp_id)
    points = sorted((t["hparams"]["learning_rate"], t["hparams"]["layer1_dense_size"]) for t in trials)
    assert points == sorted(itertools.product([1.0e-4, 1.0e-3, 1.0e-2], [8, 16])), points
    assert all(t["state"] == "STATE_COMPLETED" and t["totalBatchesProcessed"] == 200 for t in trials), trials


def test_random_search_runs_max_trials(master: Master, agent: Agent, tmp_path: Path) -> None:
    exp_id = run_search(
        master, tmp_path, "random.yaml", timeout=180, searcher={"max_length": {"batches": 200}}, min_validation_period={"batches": 100}
    )
    trials = rest_trials(master, exp_id)
    assert len(trials) == 4, [t["id"] for t in trials]
    assert all(t["state"] == "STATE_COMPLETED" for t in trials), [(t["id"], t["state"]) for t in trials]
    assert len({repr(sorted(t["hparams"].items())) for t in trials}) == 4, [t["hparams"] for t in trials]



def test_pbt_children_start_from_parent_checkpoints(master: Master, agent: Agent, tmp_path: Path) -> None:
    det = DetCli(master.url, tmp_path / "det-config")
    exp_id = run_search(master, tmp_path, "pbt.yaml", timeout=240, hyperparameters=SLOW)
    d = sdk(master)
    # Without max_length a lineage trains num_rounds x length_per_round.
    config = d._session.get(f"api/v1/experiments/{exp_id}").json()["config"]
    assert config["searcher"]["max_length"] == {"batches": 400}, config["searcher"]
    trials = sorted(rest_trials(master, exp_id), key=lambda t: int(t["id"]))
    summary = [(t["id"], t["state"], t["totalBatchesProcessed"], t.get("endReason"), t.get("warmStartCheckpointUuid")) for t in trials]
    # Three founders, then one child per earlier round (truncate_fraction 0.34 of 3 members).
    assert len(trials) == 4, summary
    assert all(t["state"] == "STATE_COMPLETED" for t in trials), summary
    founders, child = trials[:3], trials[-1]
    # The replaced member was held at the end of round 1 (trials train faster than the master
    # decides rounds): it did not run on to the end.
    replaced = [t for t in founders if t.get("endReason") == STOPPED_BY_SEARCHER]
    assert len(replaced) == 1, summary
    assert replaced[0]["totalBatchesProcessed"] < 300, summary
    # Survivors and the child train their lineage to exactly 2 x 200 batches.
    for t in [t for t in founders if t not in replaced] + [child]:
        assert t["totalBatchesProcessed"] == 400, summary
    # The child starts from its parent's checkpoint at the round's end (batch 200), and says so.
    warm = child.get("warmStartCheckpointUuid")
    assert warm, summary
    ckpt = d._session.get(f"api/v1/checkpoints/{warm}").json()["checkpoint"]
    assert ckpt["metadata"]["steps_completed"] == 200, ckpt
    parent_id = ckpt["training"]["trialId"]
    assert parent_id in [int(t["id"]) for t in founders if t not in replaced], (parent_id, summary)
    logs = trial_logs(det, int(child["id"]))
    assert f"resumed from checkpoint {warm} at batch 200" in logs, f"trial {child['id']}:\n{logs[-3000:]}"
    assert all(not t.get("warmStartCheckpointUuid") for t in founders), summary
    founders_logs = trial_logs(det, int(trials[0]["id"]))
    assert "starting from scratch" in founders_logs
    rows = searcher_rows(our_cli(master, tmp_path, "experiment", "describe", str(exp_id)))
    assert rows[int(child["id"])]["Parent Trial"] == str(parent_id), rows


def test_preview_search_with_both_clis(master: Master, det: DetCli, tmp_path: Path) -> None:
    adaptive = str(IRIS / "adaptive.yaml")
    upstream = det.ok("preview-search", adaptive)
    assert "Using search configuration:" in upstream and "train for 5000 batches" in upstream, upstream

    env = {k: v for k, v in os.environ.items() if not k.startswith("DET_")}
    env["DET_DEBUG_CONFIG_PATH"] = str(tmp_path / "ours")
    (tmp_path / "ours").mkdir()
    ours = subprocess.run(
        [str(master_binary()), "-m", master.url, "preview-search", adaptive], env=env, capture_output=True, text=True, timeout=60
    )
    assert ours.returncode == 0, ours.stderr
    # Same rows as upstream (the YAML may order or style values differently).
    table = lambda out: out[out.index("Trials |") :].split()  # noqa: E731
    assert table(ours.stdout) == table(upstream), (ours.stdout, upstream)

    bad = tmp_path / "bad.yaml"
    bad.write_text("entrypoint: python3 x.py\nsearcher: {name: random, metric: loss, max_trials: -1}\n")
    out = det.fails("preview-search", str(bad))
    assert "max_trials" in out, out


@pytest.mark.slow
def test_mnist_pytorch_adaptive_search(master: Master, agent: Agent, tmp_path: Path) -> None:
    """Seed 004's `adaptive.yaml` for the PyTorchTrial example, scaled down for CI."""
    from test_experiments import trial_python_has_torch

    if not trial_python_has_torch():
        pytest.skip("no torch in the trial Python: apt-get install --no-install-recommends python3-torch, then scripts/python-env.sh")
    det = DetCli(master.url, tmp_path / "det-config")
    config = write_config(
        MNIST / "adaptive.yaml",
        tmp_path / "adaptive.yaml",
        tmp_path / "checkpoints",
        searcher={"max_trials": 4, "max_length": {"batches": 100}, "mode": "aggressive", "max_concurrent_trials": 4},
        min_validation_period={"batches": 25},
    )
    exp_id = create(det, config, MNIST)
    wait_state(sdk(master).get_experiment(exp_id), {ExpState.COMPLETED}, timeout=300, context="(mnist adaptive)")
    trials = rest_trials(master, exp_id)
    assert len(trials) == 4, [t["id"] for t in trials]
    assert all(t["state"] == "STATE_COMPLETED" for t in trials), [(t["id"], t["state"]) for t in trials]
    assert any(t["totalBatchesProcessed"] == 100 for t in trials), [(t["id"], t["totalBatchesProcessed"]) for t in trials]
