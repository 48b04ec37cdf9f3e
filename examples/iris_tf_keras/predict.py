"""Seed 001's inference snippet: log in, take the experiment's best checkpoint, download it, load
it with `determined.keras.load_model_from_checkpoint_path` and classify three unlabelled flowers.

    python3 predict.py MASTER_URL EXPERIMENT_ID [USER [PASSWORD]]

Prints the probabilities and, on the last line, the predicted species indices (0 setosa,
1 versicolor, 2 virginica) as a JSON list.
"""

import json
import os
import sys

# As the seed: CPU only, and TensorFlow's logging off.
os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
os.environ["CUDA_VISIBLE_DEVICES"] = "-1"
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"

import numpy as np  # noqa: E402

from determined import keras  # noqa: E402
from determined.experimental import client  # noqa: E402


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    master, experiment_id = sys.argv[1], int(sys.argv[2])
    user = sys.argv[3] if len(sys.argv) > 3 else "determined"
    password = sys.argv[4] if len(sys.argv) > 4 else ""

    client.login(master=master, user=user, password=password)
    best_checkpoint = client.get_experiment(experiment_id).top_checkpoint()
    checkpoint_path = best_checkpoint.download()
    model = keras.load_model_from_checkpoint_path(checkpoint_path)

    x_new = np.array([[5, 3.9, 2, 0.5], [5, 2.5, 3, 1], [6.9, 3.1, 5.4, 2.1]], dtype="float32")
    prediction = model(x_new)
    print(
        "Let's predict the likelihood that the flower is the given Iris species "
        "0: Iris setosa, 1: Iris versicolor, 2: Iris virginica {}".format(prediction)
    )
    print("")
    print("the prediction of species for the 3 unlabelled examples is:")
    print(json.dumps(np.argmax(prediction, axis=1).tolist()))


if __name__ == "__main__":
    main()
