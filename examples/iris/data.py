"""Iris data: scikit-learn's bundled copy (no download), split 120 training / 30 validation records
as the tutorial's CSV files are, and served in a reproducible batch order so a resumed trial sees
exactly the batches an uninterrupted one would have."""

from typing import Tuple

import numpy as np
from sklearn.datasets import load_iris
from sklearn.model_selection import train_test_split

SPLIT_SEED = 0
VALIDATION_RECORDS = 30


def load_splits() -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(train_x, train_y, val_x, val_y); features are raw centimetres."""
    iris = load_iris()
    train_x, val_x, train_y, val_y = train_test_split(
        iris.data,
        iris.target,
        test_size=VALIDATION_RECORDS,
        random_state=SPLIT_SEED,
        stratify=iris.target,
    )
    return train_x, train_y, val_x, val_y


class BatchSchedule:
    """Batch `i` of training is a pure function of (seed, i): epoch `i // batches_per_epoch` uses
    its own seeded permutation, so restarting from batch N needs no saved loader state."""

    def __init__(self, records: int, batch_size: int, seed: int) -> None:
        if batch_size < 1:
            raise ValueError(f"global_batch_size must be >= 1, not {batch_size}")
        self.records = records
        self.batch_size = min(batch_size, records)
        self.batches_per_epoch = records // self.batch_size
        self.seed = seed
        self._epoch = -1
        self._order = np.arange(records)

    def indices(self, batch: int) -> np.ndarray:
        epoch, within = divmod(batch, self.batches_per_epoch)
        if epoch != self._epoch:
            self._order = np.random.default_rng([self.seed, epoch]).permutation(self.records)
            self._epoch = epoch
        start = within * self.batch_size
        return self._order[start : start + self.batch_size]
