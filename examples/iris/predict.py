"""Load a trained Iris model from a checkpoint directory and predict species.

    from determined.experimental import client
    path = client.get_experiment(exp_id).top_checkpoint().download()
    import predict
    predict.predict(path, [[5, 3.9, 2, 0.5], [5, 2.5, 3, 1], [6.9, 3.1, 5.4, 2.1]])  # -> [0, 1, 2]

Or from a shell: `python3 predict.py CHECKPOINT_DIR 5 3.9 2 0.5`.
"""

import pathlib
import sys
from typing import Any, List, Union

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from model import IrisModel  # noqa: E402

SPECIES = ("Iris setosa", "Iris versicolor", "Iris virginica")


def load_model(checkpoint_dir: Union[str, pathlib.Path]) -> IrisModel:
    return IrisModel.load(pathlib.Path(checkpoint_dir))


def predict(checkpoint_dir: Union[str, pathlib.Path], features: Any) -> List[int]:
    """Class index per row of raw measurements (sepal length, sepal width, petal length, petal width)."""
    return [int(c) for c in load_model(checkpoint_dir).predict(np.asarray(features, dtype=float))]


if __name__ == "__main__":
    if len(sys.argv) < 6 or (len(sys.argv) - 2) % 4:
        sys.exit("usage: predict.py CHECKPOINT_DIR SEPAL_L SEPAL_W PETAL_L PETAL_W [...more rows of 4]")
    values = np.asarray([float(v) for v in sys.argv[2:]]).reshape(-1, 4)
    for row, cls in zip(values.tolist(), predict(sys.argv[1], values)):
        print(f"{row} -> {cls} ({SPECIES[cls]})")
