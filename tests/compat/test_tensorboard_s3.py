"""TensorBoard over an experiment whose checkpoint storage is S3: the upstream harness uploads its
event files under the storage's `<prefix>/<cluster_id>/tensorboard/...` keys (to the moto server
`test_checkpoints_s3.py` starts), and `det tensorboard start` shows them: the task syncs them from
the bucket with the harness's fetcher, as upstream's TensorBoard task does."""

import re
from pathlib import Path

import boto3
import pytest
from ruamel import yaml as ryaml

from conftest import Agent, DetCli, Master
from experiments import IRIS, ExpState, sdk, wait_for, wait_state, write_config
from test_checkpoints_s3 import moto_endpoint  # noqa: F401 (a fixture)
from test_tensorboards import SHORT, all_tags, login, start, task_logs, tensorboard_state

pytestmark = pytest.mark.experiments


def test_tensorboard_shows_event_files_from_s3(
    master: Master, agent: Agent, det: DetCli, moto_endpoint: str, tmp_path: Path  # noqa: F811
) -> None:
    s3 = boto3.client("s3", endpoint_url=moto_endpoint, aws_access_key_id="AK", aws_secret_access_key="SK", region_name="us-east-1")
    s3.create_bucket(Bucket="tb-events")
    config = write_config(IRIS / "const.yaml", tmp_path / "const.yaml", tmp_path / "unused", **SHORT,
                          hyperparameters={"tensorboard_auto": True})
    loaded = ryaml.YAML(typ="safe", pure=True).load(config.read_text())
    loaded["checkpoint_storage"] = {"type": "s3", "bucket": "tb-events", "prefix": "team/tb", "endpoint_url": moto_endpoint,
                                    "access_key": "AK", "secret_key": "SK"}
    with config.open("w") as f:
        ryaml.YAML(typ="safe", pure=True).dump(loaded, f)
    out = det.ok("experiment", "create", str(config), str(IRIS), timeout=120)
    exp_id = int(re.search(r"Created experiment (\d+)", out).group(1))
    wait_state(sdk(master).get_experiment(exp_id), {ExpState.COMPLETED}, timeout=300, context="(s3 tensorboard)")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="tb-events").get("Contents", [])]
    events = [k for k in keys if f"/tensorboard/experiment/{exp_id}/trial/" in k and "tfevents" in k]
    assert events and all(k.startswith("team/tb/") for k in events), keys

    task_id = start(det, str(exp_id))
    token = login(master)
    tags = all_tags(master, token, task_id, {"Determined/loss", "Determined/val_categorical_accuracy"})
    assert "Determined/val_loss" in tags, tags
    logs = task_logs(det, task_id)
    assert "synced" in logs and "bucket tb-events" in logs, logs
    assert "wrote no event files" not in logs, logs
    det.ok("tensorboard", "kill", task_id)
    wait_for("the TensorBoard to end", lambda: tensorboard_state(master, task_id) == "STATE_TERMINATED", timeout=60)
