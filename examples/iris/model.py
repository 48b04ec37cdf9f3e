"""The Iris classifier: a one-hidden-layer network (4 -> layer1_dense_size -> 3, softmax) in numpy.

Trained with RMSprop and Keras-style time decay (lr / (1 + decay * iterations)), as the TF Keras
example of the seed tutorial. The whole state (weights, optimizer accumulators, feature scaling) is
plain arrays, so a checkpoint is one JSON file that `IrisModel.load` reads back exactly.
"""

import json
import pathlib
from typing import Any, Dict, Tuple

import numpy as np

MODEL_FILE = "model.json"
N_FEATURES = 4
N_CLASSES = 3
RMS_RHO = 0.9
RMS_EPSILON = 1e-7


class IrisModel:
    def __init__(
        self,
        hidden: int,
        learning_rate: float,
        learning_rate_decay: float,
        feature_mean: np.ndarray,
        feature_std: np.ndarray,
        seed: int,
    ) -> None:
        rng = np.random.default_rng(seed)
        # Glorot-uniform initialisation, as Keras' Dense layers.
        self.params: Dict[str, np.ndarray] = {
            "w1": _glorot(rng, N_FEATURES, hidden),
            "b1": np.zeros(hidden),
            "w2": _glorot(rng, hidden, N_CLASSES),
            "b2": np.zeros(N_CLASSES),
        }
        self.rms = {k: np.zeros_like(v) for k, v in self.params.items()}
        self.learning_rate = float(learning_rate)
        self.learning_rate_decay = float(learning_rate_decay)
        self.iterations = 0
        self.feature_mean = np.asarray(feature_mean, dtype=float)
        self.feature_std = np.asarray(feature_std, dtype=float)

    # --- inference -------------------------------------------------------------------------------

    def predict_proba(self, features: Any) -> np.ndarray:
        """Class probabilities for raw (unscaled) measurements, shape (n, 3)."""
        x = (np.asarray(features, dtype=float).reshape(-1, N_FEATURES) - self.feature_mean) / self.feature_std
        return self._forward(x)[1]

    def predict(self, features: Any) -> np.ndarray:
        """Class indices (0 setosa, 1 versicolor, 2 virginica) for raw measurements."""
        return np.argmax(self.predict_proba(features), axis=1)

    def evaluate(self, features: np.ndarray, labels: np.ndarray) -> Tuple[float, float]:
        """(mean cross-entropy loss, accuracy) on raw measurements."""
        probs = self.predict_proba(features)
        return _cross_entropy(probs, labels), float(np.mean(np.argmax(probs, axis=1) == labels))

    # --- training --------------------------------------------------------------------------------

    def train_batch(self, features: np.ndarray, labels: np.ndarray) -> Tuple[float, float]:
        """One RMSprop step on a batch of raw measurements; returns the batch's (loss, accuracy)."""
        x = (features - self.feature_mean) / self.feature_std
        hidden, probs = self._forward(x)
        n = len(labels)
        onehot = np.eye(N_CLASSES)[labels]
        d_logits = (probs - onehot) / n
        d_hidden = (d_logits @ self.params["w2"].T) * (hidden > 0)
        grads = {
            "w2": hidden.T @ d_logits,
            "b2": d_logits.sum(axis=0),
            "w1": x.T @ d_hidden,
            "b1": d_hidden.sum(axis=0),
        }
        lr = self.learning_rate / (1.0 + self.learning_rate_decay * self.iterations)
        for name, grad in grads.items():
            self.rms[name] = RMS_RHO * self.rms[name] + (1 - RMS_RHO) * grad**2
            self.params[name] -= lr * grad / (np.sqrt(self.rms[name]) + RMS_EPSILON)
        self.iterations += 1
        return _cross_entropy(probs, labels), float(np.mean(np.argmax(probs, axis=1) == labels))

    def _forward(self, x: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        hidden = np.maximum(0.0, x @ self.params["w1"] + self.params["b1"])
        logits = hidden @ self.params["w2"] + self.params["b2"]
        logits -= logits.max(axis=1, keepdims=True)
        exp = np.exp(logits)
        return hidden, exp / exp.sum(axis=1, keepdims=True)

    # --- persistence -----------------------------------------------------------------------------

    def save(self, directory: pathlib.Path) -> None:
        state = {
            "params": {k: v.tolist() for k, v in self.params.items()},
            "rms": {k: v.tolist() for k, v in self.rms.items()},
            "learning_rate": self.learning_rate,
            "learning_rate_decay": self.learning_rate_decay,
            "iterations": self.iterations,
            "feature_mean": self.feature_mean.tolist(),
            "feature_std": self.feature_std.tolist(),
        }
        (directory / MODEL_FILE).write_text(json.dumps(state))

    @classmethod
    def load(cls, directory: pathlib.Path) -> "IrisModel":
        state = json.loads((pathlib.Path(directory) / MODEL_FILE).read_text())
        model = cls.__new__(cls)
        model.params = {k: np.asarray(v, dtype=float) for k, v in state["params"].items()}
        model.rms = {k: np.asarray(v, dtype=float) for k, v in state["rms"].items()}
        model.learning_rate = float(state["learning_rate"])
        model.learning_rate_decay = float(state["learning_rate_decay"])
        model.iterations = int(state["iterations"])
        model.feature_mean = np.asarray(state["feature_mean"], dtype=float)
        model.feature_std = np.asarray(state["feature_std"], dtype=float)
        return model


def _glorot(rng: np.random.Generator, fan_in: int, fan_out: int) -> np.ndarray:
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-limit, limit, size=(fan_in, fan_out))


def _cross_entropy(probs: np.ndarray, labels: np.ndarray) -> float:
    return float(-np.mean(np.log(probs[np.arange(len(labels)), labels] + 1e-12)))
