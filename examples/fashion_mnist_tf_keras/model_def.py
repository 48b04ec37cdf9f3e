"""Fashion-MNIST as a TensorFlow Keras trial (`det.keras.TFKerasTrial`), the model of seed 003:
`entrypoint: model_def:FashionMNISTTrial`, hyperparameters `global_batch_size` and `dense1`,
metric `val_accuracy`. A flatten, a dense layer of `dense1` units and ten logits, trained with
Adam on the generated stand-in data of data.py (600 training, 200 validation images).

Needs TensorFlow 2.15 (Keras 2): `pip install tensorflow-cpu==2.15.1`.
"""

import tensorflow as tf

import data
from determined import keras


class FashionMNISTTrial(keras.TFKerasTrial):
    def __init__(self, context: keras.TFKerasTrialContext) -> None:
        self.context = context

    def build_model(self) -> tf.keras.Model:
        model = tf.keras.Sequential(
            [
                tf.keras.layers.Flatten(input_shape=(data.SIDE, data.SIDE)),
                tf.keras.layers.Dense(self.context.get_hparam("dense1"), activation="relu"),
                tf.keras.layers.Dense(len(data.CLASS_NAMES)),
            ]
        )
        model = self.context.wrap_model(model)
        model.compile(
            optimizer=self.context.wrap_optimizer(tf.keras.optimizers.legacy.Adam()),
            loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=[tf.keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        )
        return model

    def build_training_data_loader(self) -> keras.InputData:
        return data.load_training_data()

    def build_validation_data_loader(self) -> keras.InputData:
        return data.load_validation_data()
