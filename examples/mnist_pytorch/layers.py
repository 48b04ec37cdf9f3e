"""Layers of the MNIST network."""

from torch import nn


class Flatten(nn.Module):
    def forward(self, x):  # type: ignore[no-untyped-def]
        return x.reshape(x.size(0), -1)


def conv_block(in_channels: int, out_channels: int) -> nn.Module:
    """A 3x3 valid convolution and ReLU (shrinks each side by 2)."""
    return nn.Sequential(nn.Conv2d(in_channels, out_channels, kernel_size=3), nn.ReLU())


def build_model(n_filters1: int, n_filters2: int, dropout1: float, dropout2: float, image_size: int) -> nn.Module:
    """Two convolutions, 2x2 max-pooling, and two dense layers to 10 log-probabilities."""
    pooled = (image_size - 4) // 2
    return nn.Sequential(
        conv_block(1, n_filters1),
        conv_block(n_filters1, n_filters2),
        nn.MaxPool2d(2),
        nn.Dropout(dropout1),
        Flatten(),
        nn.Linear(n_filters2 * pooled * pooled, 128),
        nn.ReLU(),
        nn.Dropout(dropout2),
        nn.Linear(128, 10),
        nn.LogSoftmax(dim=1),
    )
