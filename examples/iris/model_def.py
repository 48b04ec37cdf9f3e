"""Iris species classification on the Determined Core API (entrypoint `python3 model_def.py`).

On a cluster the hyperparameters, the training length and the reporting/validation/checkpoint
periods come from the experiment config (`det.get_cluster_info()`); off-cluster,
`python3 model_def.py [--config const.yaml] [--checkpoint-dir DIR]` reads them from the YAML and
`det.core.init()` returns a local context that stores checkpoints under DIR.

Hyperparameters: learning_rate, learning_rate_decay, layer1_dense_size, global_batch_size (as the
tutorial), plus three test switches: `crash_at_batch` (raise after that batch, unless the trial was
resumed from a checkpoint, so exactly the first run fails), `sleep_per_batch` (seconds, to make
a run long enough to pause or cancel) and `ignore_preemption` (never look at the preemption
signal, as code that does not handle it: the master kills it at `preemption_timeout`).

Metrics: training `loss`, `categorical_accuracy`; validation `val_loss`,
`val_categorical_accuracy`, plus `batches` and `epochs` (the ASHA time metric).
"""

import argparse
import logging
import pathlib
import sys
import time
from typing import Any, Dict, Optional

import numpy as np

import determined as det
from determined import core

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import data  # noqa: E402
from model import IrisModel  # noqa: E402

logger = logging.getLogger("iris")
HERE = pathlib.Path(__file__).resolve().parent


class Lengths:
    """Training length and periods in batches, read from an experiment config."""

    def __init__(self, config: Dict[str, Any], batch_size: int, batches_per_epoch: int) -> None:
        def to_batches(length: Any, what: str) -> Optional[int]:
            # The master fills unset periods in as {batches: 0}: "never".
            if length is None or length == 0 or (isinstance(length, dict) and not any(length.values())):
                return None
            if isinstance(length, int):
                return length
            if isinstance(length, dict) and len(length) == 1:
                unit, value = next(iter(length.items()))
                value = int(value)
                if unit == "batches":
                    return value
                if unit == "epochs":
                    return value * batches_per_epoch
                if unit == "records":
                    return max(1, value // batch_size)
            raise ValueError(f"{what}: expected {{batches|epochs|records: N}}, got {length!r}")

        searcher = config.get("searcher") or {}
        max_length = to_batches(searcher.get("max_length"), "searcher.max_length")
        if max_length is None and searcher.get("time_metric") == "batches":
            max_length = to_batches(searcher.get("max_time"), "searcher.max_time")
        if not max_length:
            raise ValueError("set searcher.max_length (e.g. {batches: 500}) or max_time with time_metric: batches")
        self.max_length = max_length
        self.report = int(config.get("scheduling_unit") or 100)
        self.validate = to_batches(config.get("min_validation_period"), "min_validation_period")
        self.checkpoint = to_batches(config.get("min_checkpoint_period"), "min_checkpoint_period")


def train(
    core_context: core.Context,
    hparams: Dict[str, Any],
    config: Dict[str, Any],
    latest_checkpoint: Optional[str],
    seed: int,
) -> None:
    train_x, train_y, val_x, val_y = data.load_splits()
    schedule = data.BatchSchedule(len(train_y), int(hparams["global_batch_size"]), seed)
    lengths = Lengths(config, schedule.batch_size, schedule.batches_per_epoch)
    crash_at = int(hparams.get("crash_at_batch") or 0)
    sleep = float(hparams.get("sleep_per_batch") or 0.0)
    ignore_preemption = bool(hparams.get("ignore_preemption"))

    if latest_checkpoint is not None:
        with core_context.checkpoint.restore_path(latest_checkpoint) as path:
            model = IrisModel.load(path)
        logger.info(f"resumed from checkpoint {latest_checkpoint} at batch {model.iterations}")
    else:
        model = IrisModel(
            hidden=int(hparams["layer1_dense_size"]),
            learning_rate=float(hparams["learning_rate"]),
            learning_rate_decay=float(hparams.get("learning_rate_decay") or 0.0),
            feature_mean=train_x.mean(axis=0),
            feature_std=train_x.std(axis=0),
            seed=seed,
        )
        logger.info("starting from scratch")

    def checkpoint() -> None:
        with core_context.checkpoint.store_path({"steps_completed": model.iterations}) as (path, storage_id):
            model.save(path)
        logger.info(f"checkpoint {storage_id} at batch {model.iterations}")

    def validate() -> None:
        loss, accuracy = model.evaluate(val_x, val_y)
        core_context.train.report_validation_metrics(
            steps_completed=model.iterations,
            metrics={
                "val_loss": loss,
                "val_categorical_accuracy": accuracy,
                "batches": model.iterations,
                "epochs": model.iterations / schedule.batches_per_epoch,
            },
        )

    losses, accuracies = [], []
    checkpointed_at = model.iterations if latest_checkpoint is not None else -1
    while model.iterations < lengths.max_length:
        idx = schedule.indices(model.iterations)
        loss, accuracy = model.train_batch(train_x[idx], train_y[idx])
        losses.append(loss)
        accuracies.append(accuracy)
        if sleep:
            time.sleep(sleep)
        batches = model.iterations
        if crash_at and batches == crash_at and latest_checkpoint is None:
            raise RuntimeError(f"crash_at_batch={crash_at}: simulated failure of the first run")

        last = batches == lengths.max_length
        if batches % lengths.report == 0 or last:
            core_context.train.report_training_metrics(
                steps_completed=batches,
                metrics={"loss": float(np.mean(losses)), "categorical_accuracy": float(np.mean(accuracies))},
            )
            losses, accuracies = [], []
            core_context.train.report_progress(batches / lengths.max_length)
        if (lengths.validate and batches % lengths.validate == 0) or last:
            validate()
            checkpoint()
            checkpointed_at = batches
        elif lengths.checkpoint and batches % lengths.checkpoint == 0:
            checkpoint()
            checkpointed_at = batches

        if not ignore_preemption and core_context.preempt.should_preempt():
            # Paused, preempted, or stopped early by the searcher: save progress and exit cleanly.
            if checkpointed_at != batches:
                checkpoint()
            logger.info(f"preempted at batch {batches}; exiting")
            return

    if checkpointed_at != model.iterations:
        checkpoint()


def local_config(path: pathlib.Path) -> Dict[str, Any]:
    from ruamel import yaml

    config = yaml.YAML(typ="safe", pure=True).load(path.read_text())
    ranges = [k for k, v in (config.get("hyperparameters") or {}).items() if isinstance(v, dict)]
    if ranges:
        raise SystemExit(f"{path} searches over {', '.join(ranges)}; off-cluster runs need constant hyperparameters")
    return config


def main() -> None:
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(HERE / "const.yaml"), help="off-cluster: experiment config to read")
    parser.add_argument("--checkpoint-dir", help="off-cluster: checkpoint storage directory")
    parser.add_argument("--resume", help="off-cluster: storage id of a checkpoint to resume from")
    args = parser.parse_args()

    info = det.get_cluster_info()
    if info is not None:
        config, hparams = info.trial._config, info.trial.hparams
        latest, seed, storage = info.latest_checkpoint, info.trial.trial_seed, None
    else:
        config = local_config(pathlib.Path(args.config))
        hparams, latest, seed = config["hyperparameters"], args.resume, 0
        storage = args.checkpoint_dir

    # MANUAL TensorBoard mode: no metric writer, so the example needs neither TensorFlow nor torch
    # (a TensorBoard still draws its curves, from the metrics the master stored). The
    # `tensorboard_auto` hyperparameter opts in to the harness's event-file writer (needs torch or TF).
    mode = core.TensorboardMode.AUTO if hparams.get("tensorboard_auto") else core.TensorboardMode.MANUAL
    with det.core.init(checkpoint_storage=storage, tensorboard_mode=mode) as core_context:
        train(core_context, hparams, config, latest, seed)


if __name__ == "__main__":
    main()
