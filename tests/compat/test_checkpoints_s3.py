"""Checkpoints in S3 end to end: the upstream harness uploads a real run's checkpoints to an
S3-compatible server (moto_server, pinned in requirements.txt, started here), the master's GC
deletes the objects the policy does not keep, and `det checkpoint download --mode master` and
`det checkpoint delete` work through the master."""

import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator, List

import boto3
import pytest
from ruamel import yaml as ryaml

from conftest import DetCli, Master
from experiments import IRIS, ExpState, create, only_trial, sdk, wait_for, wait_state, write_config

pytestmark = pytest.mark.experiments


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = Path(sys.executable).parent / "moto_server"
    proc = subprocess.Popen([str(server), "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "moto_server did not start within 30 s"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def data_keys(endpoint: str, bucket: str) -> List[str]:
    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="AK", aws_secret_access_key="SK", region_name="us-east-1")
    return [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", []) if o["Size"] > 0]


def test_s3_run_gc_download_and_delete(master: Master, agent: object, det: DetCli, moto_endpoint: str, tmp_path: Path) -> None:
    s3 = boto3.client("s3", endpoint_url=moto_endpoint, aws_access_key_id="AK", aws_secret_access_key="SK", region_name="us-east-1")
    s3.create_bucket(Bucket="seed3")
    config = write_config(IRIS / "const.yaml", tmp_path / "const.yaml", tmp_path / "unused", searcher={"max_length": {"batches": 3000}})
    # write_config wrote shared_fs storage; seed 003 keeps checkpoints in S3.
    loaded = ryaml.YAML(typ="safe", pure=True).load(config.read_text())
    loaded["checkpoint_storage"] = {
        "type": "s3",
        "bucket": "seed3",
        "prefix": "team/iris",
        "endpoint_url": moto_endpoint,
        "access_key": "AK",
        "secret_key": "SK",
        "save_trial_best": 1,
        "save_trial_latest": 1,
    }
    with config.open("w") as f:
        ryaml.YAML(typ="safe", pure=True).dump(loaded, f)

    exp_id = create(det, config, IRIS)
    d = sdk(master)
    exp = d.get_experiment(exp_id)
    wait_state(exp, {ExpState.COMPLETED}, timeout=240, context="(s3 checkpoint storage)")
    trial = only_trial(exp)

    # Three checkpoints (1000, 2000, 3000 batches); GC keeps the best and the latest.
    def settled():
        cps = trial.list_checkpoints()
        states = {c.uuid: c.state.name for c in cps}
        return states if len(states) == 3 and sum(s == "DELETED" for s in states.values()) >= 1 else None

    states = wait_for("checkpoint GC after the trial ended", settled, timeout=60)
    kept = [u for u, s in states.items() if s == "COMPLETED"]
    gone = [u for u, s in states.items() if s == "DELETED"]
    assert len(kept) + len(gone) == 3 and kept, states
    keys = data_keys(moto_endpoint, "seed3")
    for uuid in gone:
        assert not any(k.startswith(f"team/iris/{uuid}/") for k in keys), (uuid, keys)
    for uuid in kept:
        assert any(k.startswith(f"team/iris/{uuid}/") for k in keys), (uuid, keys)

    # Download through the master (upstream CLI), then delete with the CLI.
    uuid = kept[0]
    out = tmp_path / "dl"
    det.ok("checkpoint", "download", "--mode", "master", "-o", str(out), uuid, timeout=120)
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    in_bucket = sorted(k[len(f"team/iris/{uuid}/"):] for k in keys if k.startswith(f"team/iris/{uuid}/"))
    assert files and files == [f for f in in_bucket if f], (files, in_bucket)

    det.ok("checkpoint", "delete", "--yes", uuid)
    wait_for(
        f"checkpoint {uuid} deleted",
        lambda: d.get_checkpoint(uuid).state.name == "DELETED" or None,
        timeout=30,
    )
    assert not any(k.startswith(f"team/iris/{uuid}/") for k in data_keys(moto_endpoint, "seed3"))
