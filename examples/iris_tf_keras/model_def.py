"""Iris species classification as a TensorFlow Keras trial (`det.keras.TFKerasTrial`), the model
of seed 001: `entrypoint: model_def:IrisTrial`, run by the upstream harness's legacy entrypoint.

A dense layer of `layer1_dense_size` units and a 3-way softmax, RMSprop with `learning_rate` and
`learning_rate_decay`, trained on the bundled CSVs (data/, 120 training and 30 validation
flowers, the layout of TensorFlow's iris_training.csv / iris_test.csv). Metrics: `loss`,
`categorical_accuracy`, and on validation `val_loss`, `val_categorical_accuracy`.

The checkpoints are TensorFlow SavedModels that `determined.keras.load_model_from_checkpoint_path`
loads back (predict.py). Needs TensorFlow 2.15 (Keras 2): `pip install tensorflow-cpu==2.15.1`.
"""

import pathlib
from typing import Tuple

import numpy as np
import tensorflow as tf

from determined import keras

DATA = pathlib.Path(__file__).resolve().parent / "data"
NUM_CLASSES = 3


def load_csv(name: str) -> Tuple[np.ndarray, np.ndarray]:
    """Features (n, 4) and one-hot labels (n, 3); the first row is TensorFlow's header."""
    raw = np.loadtxt(DATA / name, delimiter=",", skiprows=1)
    features = raw[:, :4].astype("float32")
    labels = tf.keras.utils.to_categorical(raw[:, 4].astype("int64"), num_classes=NUM_CLASSES)
    return features, labels


class IrisTrial(keras.TFKerasTrial):
    def __init__(self, context: keras.TFKerasTrialContext) -> None:
        self.context = context

    def build_model(self) -> tf.keras.Model:
        inputs = tf.keras.layers.Input(shape=(4,), name="measurements")
        hidden = tf.keras.layers.Dense(self.context.get_hparam("layer1_dense_size"), name="layer1")(inputs)
        species = tf.keras.layers.Dense(NUM_CLASSES, activation="softmax", name="species")(hidden)
        model = self.context.wrap_model(tf.keras.Model(inputs=inputs, outputs=species))
        # Keras 2's legacy optimizer keeps `decay`, the tutorial's learning_rate_decay.
        optimizer = tf.keras.optimizers.legacy.RMSprop(
            learning_rate=self.context.get_hparam("learning_rate"),
            decay=self.context.get_hparam("learning_rate_decay"),
        )
        model.compile(
            optimizer=self.context.wrap_optimizer(optimizer),
            loss=tf.keras.losses.categorical_crossentropy,
            metrics=[tf.keras.metrics.categorical_accuracy],
        )
        return model

    def build_training_data_loader(self) -> keras.InputData:
        return load_csv("iris_training.csv")

    def build_validation_data_loader(self) -> keras.InputData:
        return load_csv("iris_test.csv")
