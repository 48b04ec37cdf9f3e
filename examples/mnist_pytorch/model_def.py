"""The MNIST PyTorchTrial: model, optimizer, data loaders and the train/evaluate steps.

Trained by `train.py` (entrypoint `python3 train.py`, the det.pytorch.Trainer API); the legacy
entrypoint `model_def:MNistTrial` runs the same class through the harness.
"""

import pathlib
import sys
from typing import Any, Dict

import torch
from torch import nn

from determined import pytorch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import data  # noqa: E402
import layers  # noqa: E402


class MNistTrial(pytorch.PyTorchTrial):
    def __init__(self, context: pytorch.PyTorchTrialContext) -> None:
        self.context = context
        self.data_config = context.get_data_config()
        hparams = context.get_hparams()
        self.per_slot_batch_size = int(hparams["global_batch_size"]) // context.distributed.get_size()
        self.loss_fn = nn.NLLLoss()
        self.model = context.wrap_model(
            layers.build_model(
                n_filters1=int(hparams["n_filters1"]),
                n_filters2=int(hparams["n_filters2"]),
                dropout1=float(hparams["dropout1"]),
                dropout2=float(hparams["dropout2"]),
                image_size=data.image_size(self.data_config),
            )
        )
        self.optimizer = context.wrap_optimizer(
            torch.optim.Adadelta(self.model.parameters(), lr=float(hparams["learning_rate"]))
        )

    def build_training_data_loader(self) -> pytorch.DataLoader:
        dataset = data.get_dataset(self.data_config, train=True)
        return pytorch.DataLoader(dataset, batch_size=self.per_slot_batch_size, shuffle=True)

    def build_validation_data_loader(self) -> pytorch.DataLoader:
        dataset = data.get_dataset(self.data_config, train=False)
        return pytorch.DataLoader(dataset, batch_size=self.per_slot_batch_size)

    def train_batch(self, batch: pytorch.TorchData, epoch_idx: int, batch_idx: int) -> Dict[str, Any]:
        images, labels = batch
        loss = self.loss_fn(self.model(images), labels)
        self.context.backward(loss)
        self.context.step_optimizer(self.optimizer)
        return {"loss": loss}

    def evaluate_batch(self, batch: pytorch.TorchData, batch_idx: int) -> Dict[str, Any]:
        images, labels = batch
        output = self.model(images)
        predicted = output.argmax(dim=1)
        return {
            "validation_loss": self.loss_fn(output, labels).item(),
            "accuracy": predicted.eq(labels).float().mean().item(),
        }
