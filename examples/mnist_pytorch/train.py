"""Trains MNistTrial with the det.pytorch.Trainer API, on a cluster or locally.

On a cluster (entrypoint `python3 train.py`) the hyperparameters, training length and periods come
from the experiment config. Locally, `python3 train.py [--config const.yaml] [--batches N]` reads
them from the YAML (checkpoints go to the harness's local data directory).
"""

import argparse
import logging
import pathlib
import sys
from typing import Any, Dict, Optional

import determined as det
from determined import pytorch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from model_def import MNistTrial  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent


def train_unit(length: Any, global_batch_size: int) -> Optional[pytorch.TrainUnit]:
    """An experiment-config length ({batches|epochs|records: N}) as a Trainer unit; None for an
    unset or zero period (the master fills unset periods in as {batches: 0})."""
    if length is None or length == 0 or (isinstance(length, dict) and not any(length.values())):
        return None
    if isinstance(length, int):
        return pytorch.Batch(length)
    if isinstance(length, dict) and len(length) == 1:
        unit, value = next(iter(length.items()))
        if unit == "batches":
            return pytorch.Batch(int(value))
        if unit == "epochs":
            return pytorch.Epoch(int(value))
        if unit == "records":
            return pytorch.Batch(max(1, int(value) // global_batch_size))
    raise ValueError(f"expected a length like {{batches: 100}}, got {length!r}")


def run(config: Dict[str, Any], hparams: Dict[str, Any], max_length: pytorch.TrainUnit, latest: Optional[str]) -> None:
    batch_size = int(hparams["global_batch_size"])
    with pytorch.init(hparams=hparams, exp_conf=config) as train_context:
        trainer = pytorch.Trainer(MNistTrial(train_context), train_context)
        trainer.fit(
            max_length=max_length,
            validation_period=train_unit(config.get("min_validation_period"), batch_size),
            checkpoint_period=train_unit(config.get("min_checkpoint_period"), batch_size),
            reporting_period=pytorch.Batch(int(config.get("scheduling_unit") or 100)),
            checkpoint_policy=str(config.get("checkpoint_policy") or "best"),
            latest_checkpoint=latest,
        )


def main() -> None:
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(HERE / "const.yaml"), help="local runs: experiment config to read")
    parser.add_argument("--batches", type=int, help="training length (default: the config's searcher.max_length)")
    args = parser.parse_args()

    info = det.get_cluster_info()
    if info is not None:
        config, hparams, latest = info.trial._config, info.trial.hparams, info.latest_checkpoint
    else:
        from ruamel import yaml

        config = yaml.YAML(typ="safe", pure=True).load(pathlib.Path(args.config).read_text())
        hparams, latest = config["hyperparameters"], None

    if args.batches:
        max_length = pytorch.Batch(args.batches)
    else:
        searcher = config.get("searcher") or {}
        length = searcher.get("max_length")
        if length is None and searcher.get("time_metric") in ("batches", "epochs"):
            length = {searcher["time_metric"]: searcher.get("max_time")}
        max_length = train_unit(length, int(hparams["global_batch_size"]))
        if max_length is None:
            sys.exit("set searcher.max_length in the config or pass --batches")
    run(config, hparams, max_length, latest)


if __name__ == "__main__":
    main()
