"""Checkpoint management through the upstream 0.38.1 SDK and CLI against a real run: listing
sorted by the searcher metric (its `smaller_is_better` as the default order) and by another
validation metric (`Experiment/Trial.list_checkpoints`, `top_checkpoint`, `select_checkpoint`),
`add_metadata`/`remove_metadata`, `remove_files(globs)` (PARTIALLY_DELETED, then DELETED),
`det trial download`, and `det experiment set gc-policy` collecting at once. The S3 cases of
`remove_files` run against a moto server (`test_checkpoints_s3.py` starts one)."""

import json
import textwrap
import warnings
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import boto3
import pytest
from determined.common.api import bindings, errors
from determined.experimental import client

from conftest import DetCli, Master
from experiments import ExpState, create, only_trial, sdk, wait_for, wait_state
from test_checkpoints_s3 import moto_endpoint  # noqa: F401 (a fixture)

pytestmark = pytest.mark.experiments

# Three checkpoints with validations at their steps: val_loss (the searcher metric, smaller is
# better) ranks 20, 30, 10; accuracy ranks 30, 20, 10 (larger is better).
REPORT_PY = textwrap.dedent(
    """
    import determined as det

    with det.core.init() as core:
        for step, loss, acc in [(10, 0.5, 0.6), (20, 0.2, 0.7), (30, 0.4, 0.9)]:
            core.train.report_validation_metrics(steps_completed=step, metrics={"val_loss": loss, "accuracy": acc})
            with core.checkpoint.store_path({"steps_completed": step}) as (path, uuid):
                (path / "model").mkdir()
                (path / "model" / "w.bin").write_bytes(b"w" * 100)
                (path / "model" / "opt.bin").write_bytes(b"o" * 50)
                (path / "notes.txt").write_text(f"step {step}")
        print("checkpoint-management reported")
    """
)


def run_experiment(master: Master, work: Path, storage: str, save: str = "save_trial_best: 10, save_trial_latest: 10") -> int:
    (work / "model").mkdir(parents=True)
    (work / "model" / "report.py").write_text(REPORT_PY)
    (work / "exp.yaml").write_text(
        "name: checkpoint-management\nentrypoint: python3 report.py\nmax_restarts: 0\n"
        "searcher: {name: single, metric: val_loss, smaller_is_better: true, max_length: 1}\n"
        f"checkpoint_storage: {{{storage}, {save}}}\n"
    )
    det = DetCli(master.url, work / "det-config")
    exp_id = create(det, work / "exp.yaml", work / "model")
    exp = sdk(master).get_experiment(exp_id)
    wait_state(exp, {ExpState.COMPLETED}, timeout=180, context="checkpoint-management experiment")
    return exp_id


@pytest.fixture(scope="module")
def shared_run(master: Master, agent: object, tmp_path_factory: pytest.TempPathFactory) -> Tuple[int, Path]:
    work = tmp_path_factory.mktemp("ckpt-mgmt")
    exp_id = run_experiment(master, work, f"type: shared_fs, host_path: {work / 'ckpts'}")
    return exp_id, work / "ckpts"


def steps(checkpoints: List[client.Checkpoint]) -> List[int]:
    return [c.metadata["steps_completed"] for c in checkpoints]


def by_step(exp: client.Experiment) -> Dict[int, client.Checkpoint]:
    return {c.metadata["steps_completed"]: c for c in exp.list_checkpoints()}


def test_sdk_lists_checkpoints_sorted_by_any_metric(master: Master, shared_run: Tuple[int, Path]) -> None:
    d = sdk(master)
    exp = d.get_experiment(shared_run[0])
    trial = only_trial(exp)
    OrderBy, SortBy = client.OrderBy, client.CheckpointSortBy
    # Neither given: the searcher metric, best first by its smaller_is_better.
    assert steps(exp.list_checkpoints()) == [20, 30, 10]
    assert steps(trial.list_checkpoints()) == [20, 30, 10]
    # A metric that is not the searcher's, both orders, and max_results.
    assert steps(exp.list_checkpoints(sort_by="accuracy", order_by=OrderBy.DESC)) == [30, 20, 10]
    assert steps(exp.list_checkpoints(sort_by="accuracy", order_by=OrderBy.ASC)) == [10, 20, 30]
    assert steps(exp.list_checkpoints(sort_by="accuracy", order_by=OrderBy.DESC, max_results=1)) == [30]
    assert steps(trial.list_checkpoints(sort_by="accuracy", order_by=OrderBy.DESC, max_results=2)) == [30, 20]
    assert steps(exp.list_checkpoints(sort_by=SortBy.SEARCHER_METRIC, order_by=OrderBy.DESC)) == [10, 30, 20]
    assert steps(trial.list_checkpoints(sort_by=SortBy.BATCH_NUMBER, order_by=OrderBy.DESC)) == [30, 20, 10]
    # The validation at each checkpoint's step travels with it.
    top = exp.list_checkpoints(sort_by="accuracy", order_by=OrderBy.DESC, max_results=1)[0]
    assert top.training.validation_metrics["avgMetrics"] == {"val_loss": 0.4, "accuracy": 0.9}

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        assert trial.top_checkpoint().metadata["steps_completed"] == 20
        assert trial.top_checkpoint(sort_by="accuracy", smaller_is_better=False).metadata["steps_completed"] == 30
        assert exp.top_checkpoint(sort_by="accuracy", smaller_is_better=True).metadata["steps_completed"] == 10
        assert exp.top_checkpoint().metadata["steps_completed"] == 20
        assert trial.select_checkpoint(latest=True).metadata["steps_completed"] == 30
        assert trial.select_checkpoint(best=True).metadata["steps_completed"] == 20
        assert trial.select_checkpoint(best=True, sort_by="accuracy", smaller_is_better=False).metadata["steps_completed"] == 30


def test_sdk_checkpoint_metadata(master: Master, shared_run: Tuple[int, Path]) -> None:
    d = sdk(master)
    uuid = by_step(d.get_experiment(shared_run[0]))[10].uuid
    ckpt = d.get_checkpoint(uuid)
    ckpt.add_metadata({"team": "vision", "nested": {"k": [1, 2]}})
    assert d.get_checkpoint(uuid).metadata == {"steps_completed": 10, "team": "vision", "nested": {"k": [1, 2]}}
    ckpt.add_metadata({"team": "nlp"})
    ckpt.remove_metadata(["nested", "absent"])
    assert d.get_checkpoint(uuid).metadata == {"steps_completed": 10, "team": "nlp"}
    # An unknown checkpoint is a 404 the SDK raises as NotFoundException.
    with pytest.raises(errors.NotFoundException):
        bindings.post_PostCheckpointMetadata(
            d._session,
            body=bindings.v1PostCheckpointMetadataRequest(checkpoint=None),
            checkpoint_uuid="00000000-0000-0000-0000-000000000000",
        )


def test_cli_trial_download(master: Master, det: DetCli, shared_run: Tuple[int, Path], tmp_path: Path) -> None:
    exp = sdk(master).get_experiment(shared_run[0])
    trial = only_trial(exp)
    # Upstream's `det trial download` asks for the whole sorted list and takes its *last*
    # downloadable entry (`ckpts.pop()`): against upstream's master too, `--latest` (batch
    # number, descending) gets the earliest and `--best` with smaller-is-better the largest.
    out = tmp_path / "latest"
    printed = det.ok("trial", "download", str(trial.id), "--latest", "-o", str(out), "-q").strip()
    assert Path(printed) == out
    assert (out / "notes.txt").read_text() == "step 10"
    assert (out / "model" / "w.bin").read_bytes() == b"w" * 100
    out = tmp_path / "best"
    det.ok("trial", "download", str(trial.id), "--best", "--sort-by", "accuracy", "--smaller-is-better", "true", "-o", str(out))
    assert (out / "notes.txt").read_text() == "step 30"
    out = tmp_path / "best-searcher"
    det.ok("trial", "download", str(trial.id), "--best", "-o", str(out))
    assert (out / "notes.txt").read_text() == "step 10", "the searcher's best first, so the worst is last"
    # Bad input fails cleanly.
    assert "not allowed with argument" in det.fails("trial", "download", str(trial.id), "--latest", "--best")
    det.fails("trial", "download", "999999", "--latest")


def test_our_cli_trial_download(master: Master, det: DetCli, shared_run: Tuple[int, Path], tmp_path: Path) -> None:
    exp = sdk(master).get_experiment(shared_run[0])
    trial = only_trial(exp)
    uuid_of = {c.metadata["steps_completed"]: c.uuid for c in exp.list_checkpoints()}
    det.ok("user", "login", "determined", input="\n")

    def download(*args: str) -> str:
        out = tmp_path / f"ours-{len(list(tmp_path.iterdir()))}"
        proc = det.ours("trial", "download", str(trial.id), *args, "-o", str(out), "-q")
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == str(out)
        return (out / "notes.txt").read_text()

    # Ours picks what the flags' help says: the most recent, the best.
    assert download("--latest") == "step 30"
    assert download("--best") == "step 20", "the searcher metric, val_loss, smaller is better"
    assert download("--best", "--sort-by", "accuracy", "--smaller-is-better", "false") == "step 30"
    assert download("--best", "--sort-by", "accuracy", "--smaller-is-better", "true") == "step 10"
    assert download("--uuid", uuid_of[20]) == "step 20"
    for args, message in [
        (["--latest", "--best"], "exactly one of --latest, --best, or --uuid"),
        (["--latest", "--sort-by", "accuracy", "--smaller-is-better", "true"], "only be used with --best"),
        (["--best", "--sort-by", "accuracy"], "must be set together"),
        (["--uuid", "00000000-0000-0000-0000-000000000000"], "00000000-0000-0000-0000-000000000000"),
    ]:
        proc = det.ours("trial", "download", str(trial.id), *args)
        assert proc.returncode != 0 and message in proc.stderr, (args, proc.stderr)


def test_sdk_remove_files_by_glob(master: Master, shared_run: Tuple[int, Path]) -> None:
    d = sdk(master)
    exp_id, storage = shared_run
    uuid = by_step(d.get_experiment(exp_id))[20].uuid
    ckpt = d.get_checkpoint(uuid)
    ckpt.remove_files(["model/opt*"])
    after = d.get_checkpoint(uuid)
    assert after.state == client.CheckpointState.PARTIALLY_DELETED
    assert set(after.resources) == {"model/w.bin", "notes.txt", "metadata.json"}, after.resources
    assert not (storage / uuid / "model" / "opt.bin").exists()
    assert (storage / uuid / "model" / "w.bin").exists()
    # Still downloadable, without the removed file.
    out = Path(after.download(str(storage.parent / "partial"), mode=client.DownloadMode.MASTER))
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == ["metadata.json", "model/w.bin", "notes.txt"]
    # An empty glob list only refreshes; everything matched: DELETED.
    ckpt.remove_files([])
    assert d.get_checkpoint(uuid).state == client.CheckpointState.PARTIALLY_DELETED
    ckpt.remove_files(["*"])
    gone = d.get_checkpoint(uuid)
    assert gone.state == client.CheckpointState.DELETED and not gone.resources
    assert not (storage / uuid).exists()
    # Bad input: an unknown uuid is a 404, a pattern leaving the checkpoint a 400 naming it.
    with pytest.raises(errors.NotFoundException):
        bindings.post_CheckpointsRemoveFiles(
            d._session,
            body=bindings.v1CheckpointsRemoveFilesRequest(checkpointGlobs=["*"], checkpointUuids=["00000000-0000-0000-0000-000000000000"]),
        )
    with pytest.raises(errors.APIException) as bad:
        d.get_checkpoint(by_step(d.get_experiment(exp_id))[10].uuid).remove_files(["../*"])
    assert bad.value.status_code == 400 and "checkpointGlobs[0]" in str(bad.value)


def test_cli_set_gc_policy_collects_at_once(master: Master, agent: object, det: DetCli, tmp_path: Path) -> None:
    exp_id = run_experiment(master, tmp_path, f"type: shared_fs, host_path: {tmp_path / 'ckpts'}")
    d = sdk(master)
    uuids = {step: c.uuid for step, c in by_step(d.get_experiment(exp_id)).items()}
    assert sorted(uuids) == [10, 20, 30]
    policy = ["--save-experiment-best", "0", "--save-trial-best", "1", "--save-trial-latest", "0"]
    # Without --yes the CLI previews what would go (GET /experiments/{id}/preview_gc) and asks.
    preview = det.ok("experiment", "set", "gc-policy", str(exp_id), *policy, input="n\n")
    assert "This policy will delete 2 checkpoints with validations and 0 checkpoints without validations." in preview, preview
    assert uuids[10] in preview and uuids[30] in preview and uuids[20] not in preview, preview
    assert "Aborting operations." in preview
    assert all(d.get_checkpoint(u).state == client.CheckpointState.COMPLETED for u in uuids.values())
    out = det.ok("experiment", "set", "gc-policy", str(exp_id), *policy, "--yes")
    assert f"Set GC policy of experiment {exp_id}" in out

    def settled() -> Dict[int, str]:
        # list_checkpoints() asks for COMPLETED ones only: read each.
        states = {step: d.get_checkpoint(uuid).state.name for step, uuid in uuids.items()}
        return states if list(states.values()).count("DELETED") == 2 else {}

    # Only the searcher's best (val_loss 0.2 at step 20) stays.
    assert wait_for("GC after the policy change", settled, timeout=30) == {10: "DELETED", 20: "COMPLETED", 30: "DELETED"}
    assert [c.uuid for c in d.get_experiment(exp_id).list_checkpoints()] == [uuids[20]]
    assert not (tmp_path / "ckpts" / uuids[10]).exists() and (tmp_path / "ckpts" / uuids[20]).exists()
    assert "-2" in det.fails("experiment", "set", "gc-policy", str(exp_id), "--save-experiment-best", "0", "--save-trial-best", "-2",
                             "--save-trial-latest", "0", "--yes")


def s3_keys(endpoint: str, bucket: str) -> List[str]:
    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="AK", aws_secret_access_key="SK", region_name="us-east-1")
    return sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", []) if o["Size"] > 0)


def test_sdk_remove_files_in_s3(master: Master, agent: object, moto_endpoint: str, tmp_path: Path) -> None:  # noqa: F811
    s3 = boto3.client("s3", endpoint_url=moto_endpoint, aws_access_key_id="AK", aws_secret_access_key="SK", region_name="us-east-1")
    s3.create_bucket(Bucket="rm-globs")
    storage = f'type: s3, bucket: rm-globs, prefix: runs, endpoint_url: "{moto_endpoint}", access_key: AK, secret_key: SK'
    exp_id = run_experiment(master, tmp_path, storage)
    d = sdk(master)
    ckpt = by_step(d.get_experiment(exp_id))[30]
    ckpt.remove_files(["model"])
    assert d.get_checkpoint(ckpt.uuid).state == client.CheckpointState.PARTIALLY_DELETED
    mine = [k for k in s3_keys(moto_endpoint, "rm-globs") if k.startswith(f"runs/{ckpt.uuid}/")]
    assert mine == [f"runs/{ckpt.uuid}/metadata.json", f"runs/{ckpt.uuid}/notes.txt"], mine
    ckpt.remove_files(["*.txt", "*.json"])
    assert d.get_checkpoint(ckpt.uuid).state == client.CheckpointState.DELETED
    assert not [k for k in s3_keys(moto_endpoint, "rm-globs") if k.startswith(f"runs/{ckpt.uuid}/")]
    # The other checkpoints are untouched.
    others = [c.uuid for c in d.get_experiment(exp_id).list_checkpoints() if c.uuid != ckpt.uuid]
    assert all(any(k.startswith(f"runs/{u}/model/") for k in s3_keys(moto_endpoint, "rm-globs")) for u in others)

