"""An unmanaged (detached) training script, as a user runs it from a laptop: the Core API v2 with
no cluster info reports into a master-side experiment. Trains 5 steps from wherever its latest
checkpoint left off, reports training and validation metrics, a checkpoint, and log lines.

Usage: train.py MASTER_URL CHECKPOINT_DIR RESULT_JSON [EXTERNAL_EXPERIMENT_ID EXTERNAL_TRIAL_ID] [--fail] [--hold]

`--fail` raises after reporting; `--hold` writes RESULT_JSON.running once started and waits (up to
2 minutes) for RESULT_JSON.release before reporting, so a test can look at the running trial.
"""

import json
import pathlib
import sys
import time

from determined.experimental import client, core_v2

STEPS_PER_RUN = 5


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    fail = "--fail" in sys.argv
    hold = "--hold" in sys.argv
    master_url, checkpoint_dir, result_path = args[:3]
    external_experiment_id = args[3] if len(args) > 3 else None
    external_trial_id = args[4] if len(args) > 4 else None

    det = client.Determined(master=master_url, user="admin", password="")
    core_v2.init(
        config=core_v2.Config(
            name="unmanaged-compat",
            hparams={"lr": 0.1, "layers": 2},
            labels=["laptop"],
            searcher={"name": "single", "metric": "val_loss", "smaller_is_better": True},
            checkpoint_storage=checkpoint_dir,
            external_experiment_id=external_experiment_id,
            external_trial_id=external_trial_id,
        ),
        client=det,
    )
    assert core_v2.info is not None and core_v2.train is not None and core_v2.checkpoint is not None
    start = 0
    latest = core_v2.info.latest_checkpoint
    if latest is not None:
        with core_v2.checkpoint.restore_path(latest) as path:
            start = json.loads((path / "state.json").read_text())["steps"]
    print(f"unmanaged script starting at step {start} (latest checkpoint {latest})", flush=True)
    info = core_v2.info.trial
    if hold:
        ids = {"experiment_id": info.experiment_id, "trial_id": info.trial_id}
        pathlib.Path(result_path + ".running").write_text(json.dumps(ids))
        deadline = time.monotonic() + 120
        while not pathlib.Path(result_path + ".release").exists() and time.monotonic() < deadline:
            time.sleep(0.1)

    steps = start
    for _ in range(STEPS_PER_RUN):
        steps += 1
        core_v2.train.report_training_metrics(steps_completed=steps, metrics={"loss": 1.0 / steps})
    core_v2.train.report_validation_metrics(steps_completed=steps, metrics={"val_loss": 0.5 / steps})
    with core_v2.checkpoint.store_path({"steps_completed": steps}) as (path, uuid):
        (pathlib.Path(path) / "state.json").write_text(json.dumps({"steps": steps}))
    print(f"unmanaged script reported step {steps}, checkpoint {uuid}", flush=True)

    pathlib.Path(result_path).write_text(
        json.dumps({"experiment_id": info.experiment_id, "trial_id": info.trial_id, "checkpoint": str(uuid), "steps": steps})
    )
    if fail:
        raise RuntimeError("the script failed on purpose")
    core_v2.close()


if __name__ == "__main__":
    main()
